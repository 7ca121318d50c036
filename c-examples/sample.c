/*
 * sample: constrained sampling from random logits, as an LLM host does it.
 *
 *   sample TOKENIZER.json GRAMMAR.gbnf [--n N] [--max-tokens M] [--seed S]
 *          [--eos-bias B] [--root ROOT] [--out PREFIX]
 *
 * For each of N outputs: at every step draw random logits for the whole
 * vocabulary (a fixed seed makes runs repeatable), mask them with
 * cg_fill_mask, sample from the softmax of what is left, cg_accept the
 * token, until EOS or M tokens. EOS gets B added to its logit when it is
 * allowed (a model that likes to stop), so that outputs end.
 *
 * Every output is verified: a fresh matcher re-reads its bytes with
 * cg_accept_bytes and must be accepting exactly when the output ended with
 * EOS. Complete outputs are written to PREFIX-<i>.txt when --out is given.
 *
 * Exit status: 0 when every output verified, 1 otherwise.
 */
#include <cgram.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die_cgram(const char *call)
{
    fprintf(stderr, "sample: %s failed: %s\n", call, cg_last_error());
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "sample: out of memory\n");
        exit(1);
    }
    return p;
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "sample: cannot open %s\n", path);
        exit(1);
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = xmalloc(cap);
    while ((n += fread(buf + n, 1, cap - n, f)) == cap) {
        cap *= 2;
        unsigned char *bigger = realloc(buf, cap);
        if (!bigger) {
            fprintf(stderr, "sample: out of memory\n");
            exit(1);
        }
        buf = bigger;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void print_escaped(FILE *out, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c == '\\')
            fputs("\\\\", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

/* splitmix64: a small, good, portable generator. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double rng_uniform(void)
{
    return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static double rng_normal(void)
{
    return sqrt(-2.0 * log(rng_uniform())) * cos(6.283185307179586 * rng_uniform());
}

struct buffer {
    unsigned char *data;
    size_t len, cap;
};

static void buffer_append(struct buffer *b, const uint8_t *bytes, size_t n)
{
    if (b->len + n > b->cap) {
        while (b->len + n > b->cap)
            b->cap = b->cap ? b->cap * 2 : 256;
        unsigned char *bigger = realloc(b->data, b->cap);
        if (!bigger) {
            fprintf(stderr, "sample: out of memory\n");
            exit(1);
        }
        b->data = bigger;
    }
    if (n)
        memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

static int is_eos(int32_t t, const int32_t *eos, int n_eos)
{
    for (int i = 0; i < n_eos; i++)
        if (eos[i] == t)
            return 1;
    return 0;
}

static long parse_long(const char *flag, const char *value)
{
    char *end;
    long v = value ? strtol(value, &end, 10) : 0;
    if (!value || *end || v < 0) {
        fprintf(stderr, "sample: %s needs a non-negative integer\n", flag);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr,
                "usage: %s TOKENIZER.json GRAMMAR.gbnf [--n N] [--max-tokens M] [--seed S]\n"
                "       [--eos-bias B] [--root ROOT] [--out PREFIX]\n",
                argv[0]);
        return 2;
    }
    long n_outputs = 5, max_tokens = 64, seed = 42;
    double eos_bias = 4.0;
    const char *root = NULL, *out_prefix = NULL;
    /* Options come in pairs: the name, then its value. */
    for (int i = 3; i < argc; i += 2) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--n"))
            n_outputs = parse_long(argv[i], value);
        else if (!strcmp(argv[i], "--max-tokens"))
            max_tokens = parse_long(argv[i], value);
        else if (!strcmp(argv[i], "--seed"))
            seed = parse_long(argv[i], value);
        else if (!strcmp(argv[i], "--eos-bias"))
            eos_bias = (double)parse_long(argv[i], value);
        else if (!strcmp(argv[i], "--root") && value)
            root = value;
        else if (!strcmp(argv[i], "--out") && value)
            out_prefix = value;
        else {
            fprintf(stderr, "sample: unknown or incomplete option %s\n", argv[i]);
            return 2;
        }
    }
    rng_state = (uint64_t)seed;

    size_t grammar_len;
    unsigned char *grammar_src = read_file(argv[2], &grammar_len);
    cg_vocab *vocab = cg_vocab_from_tokenizer_json(argv[1]);
    if (!vocab)
        die_cgram("cg_vocab_from_tokenizer_json");
    uint32_t n_vocab = cg_vocab_size(vocab);
    int n_eos = cg_vocab_eos_tokens(vocab, NULL, 0);
    if (n_eos <= 0) {
        fprintf(stderr, "sample: the tokenizer has no end-of-sequence token\n");
        return 1;
    }
    int32_t *eos = xmalloc((size_t)n_eos * sizeof *eos);
    cg_vocab_eos_tokens(vocab, eos, (size_t)n_eos);

    cg_compile_options opts;
    cg_compile_options_init(&opts);
    opts.kind = CG_KIND_GBNF;
    opts.root = root;
    cg_grammar *grammar = cg_compile(vocab, (const char *)grammar_src, grammar_len, &opts);
    if (!grammar)
        die_cgram("cg_compile");

    size_t n_words = cg_mask_words(grammar);
    uint32_t *mask = xmalloc(n_words * sizeof *mask);
    double *logits = xmalloc((size_t)n_vocab * sizeof *logits);
    int32_t *candidates = xmalloc((size_t)n_vocab * sizeof *candidates);
    cg_matcher *m = cg_matcher_new(grammar);
    if (!m)
        die_cgram("cg_matcher_new");

    printf("vocabulary: %u tokens; grammar: %s; seed %ld\n", n_vocab, argv[2], seed);
    int failures = 0, complete = 0;
    for (long out = 0; out < n_outputs; out++) {
        struct buffer text = {0};
        cg_reset(m);
        long n_tokens = 0;
        int ended = 0;
        while (n_tokens < max_tokens) {
            if (cg_fill_mask(m, mask, n_words) != CG_OK)
                die_cgram("cg_fill_mask");
            /* Random logits, masked: only allowed tokens are candidates. */
            size_t n_cand = 0;
            double max_logit = -INFINITY;
            for (uint32_t t = 0; t < n_vocab; t++) {
                double l = rng_normal() * 2.0;
                if (!((mask[t / 32] >> (t % 32)) & 1u))
                    continue;
                if (is_eos((int32_t)t, eos, n_eos))
                    l += eos_bias;
                logits[n_cand] = l;
                candidates[n_cand++] = (int32_t)t;
                if (l > max_logit)
                    max_logit = l;
            }
            if (n_cand == 0) {
                if (cg_is_terminated(m) == 1)
                    break;
                fprintf(stderr, "sample: output %ld: no token allowed but not terminated\n", out);
                return 1;
            }
            /* Sample from the softmax of the candidates. */
            double sum = 0;
            for (size_t i = 0; i < n_cand; i++)
                sum += (logits[i] = exp(logits[i] - max_logit));
            double r = rng_uniform() * sum;
            size_t pick = 0;
            while (pick + 1 < n_cand && (r -= logits[pick]) > 0)
                pick++;
            int32_t token = candidates[pick];
            if (cg_accept(m, token) != CG_OK)
                die_cgram("cg_accept");
            n_tokens++;
            if (is_eos(token, eos, n_eos)) {
                ended = 1;
                break;
            }
            size_t len;
            const uint8_t *bytes = cg_vocab_token_bytes(vocab, token, &len);
            if (!bytes)
                die_cgram("cg_vocab_token_bytes");
            buffer_append(&text, bytes, len);
        }

        /* Verify: a fresh matcher re-reads the text. */
        cg_matcher *check = cg_matcher_new(grammar);
        if (!check)
            die_cgram("cg_matcher_new");
        int rc = cg_accept_bytes(check, text.data, text.len);
        int accepting = rc == CG_OK ? cg_is_accepting(check) : 0;
        const char *verdict;
        if (rc != CG_OK) {
            verdict = "FAILED: re-reading the text is rejected";
            fprintf(stderr, "sample: output %ld: cg_accept_bytes: %s\n", out, cg_last_error());
        } else if (ended && accepting != 1) {
            verdict = "FAILED: ended with EOS but the text is not complete";
        } else if (!ended && accepting == 1 && n_tokens < max_tokens) {
            verdict = "FAILED: stopped without EOS";
        } else {
            verdict = ended ? "ok, complete" : "ok, prefix (length limit)";
        }
        cg_matcher_free(check);
        int bad = !strncmp(verdict, "FAILED", 6);
        failures += bad;
        printf("output %ld: %ld tokens, %s: \"", out, n_tokens, verdict);
        print_escaped(stdout, text.data, text.len);
        printf("\"\n");

        if (ended && !bad) {
            complete++;
            if (out_prefix) {
                char path[4096];
                snprintf(path, sizeof path, "%s-%ld.txt", out_prefix, out);
                FILE *f = fopen(path, "wb");
                if (!f || fwrite(text.data, 1, text.len, f) != text.len || fclose(f) != 0) {
                    fprintf(stderr, "sample: cannot write %s\n", path);
                    return 1;
                }
            }
        }
        free(text.data);
    }
    printf("%d of %ld outputs complete, %d failed verification\n", complete, n_outputs, failures);

    cg_matcher_free(m);
    free(candidates);
    free(logits);
    free(mask);
    free(eos);
    cg_free(grammar);
    cg_vocab_free(vocab);
    free(grammar_src);
    return failures ? 1 : 0;
}
