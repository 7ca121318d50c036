/*
 * walk: follows a text through a grammar one token at a time.
 *
 *   walk TOKENIZER.json GRAMMAR.gbnf TEXT [ROOT]
 *
 * TEXT is the text itself, or @FILE to read it from a file. C has no
 * tokenizer, so the text is tokenized on the way: at each step, among the
 * tokens the grammar allows (the mask), the longest one whose bytes are a
 * prefix of the remaining text is taken. Since masks are exact, a text of
 * the language always has such a token; if none fits, the text is not in
 * the language and walk fails. At the end the matcher must be accepting,
 * with EOS in the mask.
 *
 * Exit status: 0 when the whole text was walked and accepted, 1 otherwise.
 */
#include <cgram.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die_cgram(const char *call)
{
    fprintf(stderr, "walk: %s failed: %s\n", call, cg_last_error());
    exit(1);
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "walk: cannot open %s\n", path);
        exit(1);
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "walk: out of memory\n");
            exit(1);
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    if (ferror(f)) {
        fprintf(stderr, "walk: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Prints bytes as a C string literal body (escapes, \xHH for the rest). */
static void print_escaped(FILE *out, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

static size_t count_bits(const uint32_t *mask, size_t n_words)
{
    size_t n = 0;
    for (size_t w = 0; w < n_words; w++)
        for (uint32_t x = mask[w]; x; x &= x - 1)
            n++;
    return n;
}

static int allowed(const uint32_t *mask, int32_t token)
{
    return (mask[(uint32_t)token / 32] >> ((uint32_t)token % 32)) & 1u;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s TOKENIZER.json GRAMMAR.gbnf TEXT|@FILE [ROOT]\n", argv[0]);
        return 2;
    }
    const char *root = argc == 5 ? argv[4] : NULL;

    size_t text_len;
    unsigned char *text;
    if (argv[3][0] == '@') {
        text = read_file(argv[3] + 1, &text_len);
    } else {
        text_len = strlen(argv[3]);
        text = malloc(text_len + 1);
        if (!text)
            return 1;
        memcpy(text, argv[3], text_len + 1);
    }
    size_t grammar_len;
    unsigned char *grammar_src = read_file(argv[2], &grammar_len);

    cg_vocab *vocab = cg_vocab_from_tokenizer_json(argv[1]);
    if (!vocab)
        die_cgram("cg_vocab_from_tokenizer_json");
    uint32_t n_vocab = cg_vocab_size(vocab);

    cg_compile_options opts;
    cg_compile_options_init(&opts);
    opts.kind = CG_KIND_GBNF;
    opts.root = root;
    cg_grammar *grammar = cg_compile(vocab, (const char *)grammar_src, grammar_len, &opts);
    if (!grammar)
        die_cgram("cg_compile");
    cg_matcher *m = cg_matcher_new(grammar);
    if (!m)
        die_cgram("cg_matcher_new");

    int n_eos = cg_vocab_eos_tokens(vocab, NULL, 0);
    if (n_eos <= 0) {
        fprintf(stderr, "walk: the tokenizer has no end-of-sequence token\n");
        return 1;
    }
    int32_t *eos = malloc((size_t)n_eos * sizeof *eos);
    size_t n_words = cg_mask_words(grammar);
    uint32_t *mask = malloc(n_words * sizeof *mask);
    if (!eos || !mask)
        return 1;
    cg_vocab_eos_tokens(vocab, eos, (size_t)n_eos);

    printf("vocabulary: %u tokens; grammar: %s; text: %zu bytes\n", n_vocab, argv[2], text_len);
    size_t pos = 0;
    int step = 0;
    while (pos < text_len) {
        if (cg_fill_mask(m, mask, n_words) != CG_OK)
            die_cgram("cg_fill_mask");
        size_t n_allowed = count_bits(mask, n_words);

        /* The longest allowed token that spells the next bytes. */
        int32_t best = -1;
        size_t best_len = 0;
        for (size_t w = 0; w < n_words; w++) {
            for (uint32_t x = mask[w]; x; x &= x - 1) {
                uint32_t bit = 0;
                while (!((x >> bit) & 1u))
                    bit++;
                int32_t t = (int32_t)(w * 32 + bit);
                size_t len;
                const uint8_t *bytes = cg_vocab_token_bytes(vocab, t, &len);
                if (!bytes)
                    die_cgram("cg_vocab_token_bytes");
                if (len > best_len && len <= text_len - pos && memcmp(bytes, text + pos, len) == 0) {
                    best = t;
                    best_len = len;
                }
            }
        }
        if (best < 0) {
            fprintf(stderr,
                    "walk: FAILED at step %d, byte %zu: none of the %zu allowed tokens is a prefix "
                    "of the remaining text \"",
                    step, pos, n_allowed);
            print_escaped(stderr, text + pos, text_len - pos > 40 ? 40 : text_len - pos);
            fprintf(stderr, "%s\"\n", text_len - pos > 40 ? "..." : "");
            return 1;
        }
        printf("step %4d: %7zu allowed, token %7d \"", step, n_allowed, best);
        print_escaped(stdout, text + pos, best_len);
        printf("\"\n");
        if (cg_accept(m, best) != CG_OK)
            die_cgram("cg_accept");
        pos += best_len;
        step++;
    }

    /* The whole text is walked: it must be a complete sentence. */
    if (cg_fill_mask(m, mask, n_words) != CG_OK)
        die_cgram("cg_fill_mask");
    int accepting = cg_is_accepting(m);
    if (accepting < 0)
        die_cgram("cg_is_accepting");
    int eos_allowed = 0;
    for (int i = 0; i < n_eos; i++)
        eos_allowed |= allowed(mask, eos[i]);
    printf("end: %zu tokens allowed, accepting: %s, EOS allowed: %s\n", count_bits(mask, n_words),
           accepting ? "yes" : "no", eos_allowed ? "yes" : "no");
    if (!accepting) {
        fprintf(stderr, "walk: FAILED: the text is only a prefix of the language\n");
        return 1;
    }
    if (!eos_allowed) {
        fprintf(stderr, "walk: FAILED: the matcher is accepting but EOS is not in the mask\n");
        return 1;
    }
    if (cg_accept(m, eos[0]) != CG_OK)
        die_cgram("cg_accept(EOS)");
    if (cg_is_terminated(m) != 1) {
        fprintf(stderr, "walk: FAILED: the matcher is not terminated after EOS\n");
        return 1;
    }
    printf("OK: %d tokens, accepted\n", step);

    free(mask);
    free(eos);
    cg_matcher_free(m);
    cg_free(grammar);
    cg_vocab_free(vocab);
    free(grammar_src);
    free(text);
    return 0;
}
