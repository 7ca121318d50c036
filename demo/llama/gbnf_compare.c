/*
 * gbnf_compare: cgram against llama.cpp itself on GBNF grammars made to
 * stress a grammar engine, in the same process with the same vocabulary:
 *
 *   - automata that explode when determinized: [ab]* "a" [ab]{n};
 *   - groups nested thousands deep (below the ~18,700 where llama.cpp's
 *     recursive parser overflows an 8 MiB stack);
 *   - huge literals (1 MB), thousands of rules;
 *   - random grammars mixing all of it, and a few invalid ones.
 *
 * For every grammar, the verdict: llama_sampler_init_grammar returns NULL
 * exactly when cg_compile fails. For every grammar both accept, string
 * verdicts: random strings, strings grown along cgram's masks and their
 * mutations are fed to both (llama.cpp: the text's Llama 3 tokens one by
 * one through its grammar sampler, then whether it allows end of
 * generation; cgram: cg_accept_bytes and cg_is_accepting), and the two
 * must agree. Nothing is hard-coded: each side decides for itself.
 *
 *   gbnf_compare ggml-vocab-llama-bpe.gguf [seed]
 *
 * Exit status 0 when everything agreed; every disagreement is printed.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cgram.h>
#include <llama.h>

#include "cgram_llama.h"
#include "demo_util.h"

static const struct llama_vocab *vocab;
static cg_vocab *cvocab;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static int failures, grammars, both_accept, strings_checked, strings_accepted;

static void silent_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)level;
    (void)text;
    (void)user;
}

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* A growable string. */
struct buf {
    char *p;
    size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            abort();
        if (b->p && (size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        b->cap = (b->cap + (size_t)k + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
        b->p[b->n] = 0;
    }
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* llama.cpp's verdict on a text: its tokens through the grammar sampler,
 * then end of generation. */
static int llama_accepts(struct llama_sampler *smpl, const char *text, size_t len)
{
    llama_sampler_reset(smpl);
    int cap = (int)len + 16;
    llama_token *toks = malloc(sizeof *toks * (size_t)cap);
    int n = llama_tokenize(vocab, text, (int32_t)len, toks, cap, false, false);
    if (n < 0) {
        fprintf(stderr, "llama_tokenize failed\n");
        exit(2);
    }
    int ok = 1;
    for (int i = 0; i <= n && ok; i++) {
        llama_token t = i < n ? toks[i] : llama_vocab_eos(vocab);
        llama_token_data d = {t, 0.0f, 0.0f};
        llama_token_data_array arr = {&d, 1, -1, false};
        llama_sampler_apply(smpl, &arr);
        if (isinf(d.logit) && d.logit < 0)
            ok = 0;
        else if (i < n)
            llama_sampler_accept(smpl, t);
    }
    free(toks);
    return ok;
}

static int cgram_accepts(cg_grammar *g, const char *text, size_t len)
{
    cg_matcher *m = cg_matcher_new(g);
    int ok = cg_accept_bytes(m, (const uint8_t *)text, len) == CG_OK && cg_is_accepting(m);
    cg_matcher_free(m);
    return ok;
}

static void check_string(const char *name, struct llama_sampler *smpl, cg_grammar *g,
                         const char *text, size_t len)
{
    int l = llama_accepts(smpl, text, len), c = cgram_accepts(g, text, len);
    strings_checked++;
    strings_accepted += l;
    if (l != c) {
        failures++;
        fprintf(stderr, "DIFFERENT string verdict on %s: llama.cpp %s, cgram %s: \"%.*s\"%s\n",
                name, l ? "accepts" : "rejects", c ? "accepts" : "rejects",
                (int)(len > 200 ? 200 : len), text, len > 200 ? "..." : "");
    }
}

/* A string grown along cgram's masks: single-byte tokens from `alphabet`
 * that the mask allows, stopping at random once the text is complete. */
static size_t grow(cg_grammar *g, const char *alphabet, char *out, size_t cap)
{
    cg_matcher *m = cg_matcher_new(g);
    size_t words = cg_mask_words(g), n = 0;
    uint32_t *mask = calloc(words, 4);
    size_t na = strlen(alphabet);
    while (n + 1 < cap) {
        if (cg_is_accepting(m) && below(8) == 0)
            break;
        if (cg_fill_mask(m, mask, words) != CG_OK)
            break;
        char allowed[128];
        size_t k = 0;
        for (size_t i = 0; i < na; i++) {
            llama_token t;
            if (llama_tokenize(vocab, alphabet + i, 1, &t, 1, false, false) != 1)
                continue;
            if (mask[t / 32] >> (t % 32) & 1)
                allowed[k++] = alphabet[i];
        }
        if (k == 0)
            break;
        char c = allowed[below(k)];
        if (cg_accept_bytes(m, (const uint8_t *)&c, 1) != CG_OK)
            break;
        out[n++] = c;
    }
    out[n] = 0;
    free(mask);
    cg_matcher_free(m);
    return n;
}

/* Compares the verdicts on a grammar and, when both accept it, on
 * strings over `alphabet`; `extra` strings are checked too. */
static void compare(const char *name, const char *grammar, const char *alphabet,
                    const char *const *extra, int n_extra, int walks)
{
    grammars++;
    double t0 = now_ms();
    struct llama_sampler *smpl = llama_sampler_init_grammar(vocab, grammar, "root");
    double t1 = now_ms();
    cg_compile_options o;
    cg_compile_options_init(&o);
    o.kind = CG_KIND_GBNF;
    cg_grammar *g = cg_compile(cvocab, grammar, strlen(grammar), &o);
    double t2 = now_ms();
    printf("%-28s llama.cpp %-8s %8.1f ms   cgram %-8s %8.1f ms", name,
           smpl ? "accepts" : "refuses", t1 - t0, g ? "accepts" : "refuses", t2 - t1);
    if (!g)
        printf("  (%s)", cg_last_error());
    printf("\n");
    fflush(stdout);
    if (!smpl != !g) {
        failures++;
        fprintf(stderr, "DIFFERENT grammar verdict on %s\n", name);
    }
    if (smpl && g) {
        both_accept++;
        for (int i = 0; i < n_extra; i++)
            check_string(name, smpl, g, extra[i], strlen(extra[i]));
        size_t na = strlen(alphabet);
        char text[256];
        for (int w = 0; w < walks; w++) {
            size_t n;
            if (w % 2 == 0) {
                n = grow(g, alphabet, text, sizeof text);
                check_string(name, smpl, g, text, n);
                if (n > 0) { /* one character changed, dropped or added */
                    size_t at = below(n);
                    switch (below(3)) {
                    case 0: text[at] = alphabet[below(na)]; break;
                    case 1: memmove(text + at, text + at + 1, n - at); n--; break;
                    default: if (n + 1 < sizeof text) { text[n++] = alphabet[below(na)]; text[n] = 0; }
                    }
                }
            } else {
                n = below(40);
                for (size_t i = 0; i < n; i++)
                    text[i] = alphabet[below(na)];
                text[n] = 0;
            }
            check_string(name, smpl, g, text, n);
        }
    }
    if (smpl)
        llama_sampler_free(smpl);
    cg_free(g);
}

/* A random expression over a, b, c: literals, classes, groups,
 * alternations, repetitions and references to rules `first..n_rules-1`
 * (never an earlier one, so no left recursion unless `recursive`). */
static void random_expr(struct buf *b, int depth, int first, int n_rules, int recursive)
{
    int items = 1 + (int)below(3);
    for (int i = 0; i < items; i++) {
        if (i)
            put(b, " ");
        switch (depth > 4 ? below(3) : below(7)) {
        case 0: {
            static const char *lits[] = {"a", "b", "ab", "ba", "c", "abc", "aa"};
            put(b, "\"%s\"", lits[below(7)]);
            break;
        }
        case 1: {
            static const char *cls[] = {"[ab]", "[a-c]", "[^c]", "[b]", "[ac]"};
            put(b, "%s", cls[below(5)]);
            break;
        }
        case 2:
            if (first < n_rules)
                put(b, "r%d", first + (int)below((size_t)(n_rules - first)));
            else
                put(b, "\"c\"");
            break;
        case 3:
        case 4:
            put(b, "(");
            random_expr(b, depth + 1, first, n_rules, recursive);
            while (below(2) == 0) {
                put(b, " | ");
                random_expr(b, depth + 1, first, n_rules, recursive);
            }
            put(b, ")");
            break;
        case 5:
            if (recursive) {
                put(b, "\"(\" root? \")\"");
                break;
            }
            /* fallthrough */
        default:
            /* Small counts: llama.cpp's stacks multiply on these when
             * repeated (exponential time on its side, not a verdict). */
            put(b, "([ab]* \"a\" [ab]{%d})", 2 + (int)below(4));
            continue;
        }
        switch (below(8)) {
        case 0: put(b, "*"); break;
        case 1: put(b, "+"); break;
        case 2: put(b, "?"); break;
        case 3: put(b, "{%d,%d}", (int)below(3), 2 + (int)below(4)); break;
        default: break;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gbnf_compare ggml-vocab-llama-bpe.gguf [seed]\n");
        return 2;
    }
    if (argc > 2)
        rng_state = strtoull(argv[2], NULL, 10) * 2654435761u + 1;
    struct llama_model *model = demo_load_vocab_only(argv[1]);
    if (!model)
        return 2;
    /* Silent: a refused grammar is an expected outcome here, and
     * llama.cpp logs every one in full. */
    llama_log_set(silent_log, NULL);
    vocab = llama_model_get_vocab(model);
    cvocab = cgram_llama_vocab_new(vocab);
    if (!cvocab) {
        fprintf(stderr, "cgram_llama_vocab_new: %s\n", cgram_llama_last_error());
        return 2;
    }
    double start = now_ms();
    struct buf b = {0};
    char name[64];

    /* Automata that explode when determinized (2^(n+1) DFA states). */
    int counts[] = {12, 20, 40, 100};
    for (int i = 0; i < 4; i++) {
        b.n = 0;
        put(&b, "root ::= [ab]* \"a\" [ab]{%d}", counts[i]);
        snprintf(name, sizeof name, "[ab]*a[ab]{%d}", counts[i]);
        compare(name, b.p, "ab", NULL, 0, 40);
    }
    compare("exploding, repeated", "root ::= (\"x\" ([ab]* \"a\" [ab]{21})+ \"y\")* \"z\"",
            "abxyz", NULL, 0, 40);
    compare("exploding, in a rule",
            "root ::= big (\",\" big)*\nbig ::= [a-c]* \"b\" [a-c]{24} [0-9]+", "abc,01", NULL, 0,
            30);

    /* Groups nested deep. */
    int depths[] = {257, 1000, 5000, 15000};
    for (int i = 0; i < 4; i++) {
        b.n = 0;
        put(&b, "root ::= ");
        for (int k = 0; k < depths[i]; k++)
            put(&b, "(\"a\" | ");
        put(&b, "\"b\" root?");
        for (int k = 0; k < depths[i]; k++)
            put(&b, ")");
        snprintf(name, sizeof name, "nested %d, alternatives", depths[i]);
        compare(name, b.p, "ab", NULL, 0, 20);
        b.n = 0;
        put(&b, "root ::= ");
        for (int k = 0; k < depths[i] / 2; k++)
            put(&b, "(\"a\" (\"b\" | ");
        put(&b, "\"c\"+");
        for (int k = 0; k < depths[i] / 2; k++)
            put(&b, "))");
        snprintf(name, sizeof name, "nested %d, sequences", depths[i]);
        compare(name, b.p, "abc", NULL, 0, 20);
    }

    /* Huge literals: 1 MB (the verdict), 100 KB (strings too). */
    size_t sizes[] = {1000000, 100000};
    for (int i = 0; i < 2; i++) {
        size_t n = sizes[i];
        char *lit = malloc(n + 1);
        for (size_t k = 0; k < n; k++)
            lit[k] = "abcdefghijklmnopqrstuvwxyz ,."[below(29)];
        lit[n] = 0;
        b.n = 0;
        put(&b, "root ::= \"%s\" [0-9]", lit);
        char *good = malloc(n + 2), *bad = malloc(n + 2);
        memcpy(good, lit, n);
        good[n] = '7';
        good[n + 1] = 0;
        memcpy(bad, good, n + 2);
        bad[n / 2] = bad[n / 2] == 'a' ? 'b' : 'a';
        const char *extra[] = {good, bad, lit};
        snprintf(name, sizeof name, "literal of %zu bytes", n);
        compare(name, b.p, "abc7", extra, i == 0 ? 0 : 3, 0);
        free(lit);
        free(good);
        free(bad);
    }

    /* Many rules: a chain of 20,000 and a choice among 1,000. */
    b.n = 0;
    put(&b, "root ::= r0\n");
    for (int k = 0; k < 20000; k++)
        put(&b, "r%d ::= [ab] r%d | \"c\"\n", k, k + 1);
    put(&b, "r20000 ::= \"d\"\n");
    compare("20,000 chained rules", b.p, "abcd", NULL, 0, 20);
    b.n = 0;
    /* (The rules first: llama.cpp counts the names a repeated group
     * mentions for the first time against its repetition limit.) */
    for (int k = 0; k < 1000; k++)
        put(&b, "r%d ::= \"%c%c\" [ab]{%d}\n", k, 'a' + k % 3, 'a' + k / 3 % 3, k % 4);
    put(&b, "root ::= (");
    for (int k = 0; k < 1000; k++)
        put(&b, "%sr%d", k ? " | " : "", k);
    put(&b, ")+\n");
    /* (No strings: llama.cpp's stacks multiply on this choice, seconds per string.) */
    compare("choice of 1,000 rules", b.p, "abc", NULL, 0, 0);

    /* Random mixtures. */
    for (int i = 0; i < 40; i++) {
        int n_rules = (int)below(5);
        b.n = 0;
        put(&b, "root ::= ");
        random_expr(&b, 0, 0, n_rules, i % 3 == 0);
        put(&b, "\n");
        for (int r = 0; r < n_rules; r++) {
            put(&b, "r%d ::= ", r);
            random_expr(&b, 1, r + 1, n_rules, 0);
            put(&b, "\n");
        }
        snprintf(name, sizeof name, "random %d", i);
        compare(name, b.p, "abc()", NULL, 0, 12);
    }

    /* Invalid grammars: both must refuse. */
    compare("left recursion", "root ::= root \"a\" | \"b\"", "ab", NULL, 0, 4);
    compare("undefined rule", "root ::= \"a\" nothere", "a", NULL, 0, 4);
    compare("{,3}", "root ::= \"a\"{,3}", "a", NULL, 0, 4);
    compare("repetition over 2000", "root ::= \"a\"{2001}", "a", NULL, 0, 4);

    printf("\n%d grammars (%d accepted by both), %d strings (%d accepted by llama.cpp), "
           "%d disagreements, %.1f s\n",
           grammars, both_accept, strings_checked, strings_accepted, failures,
           (now_ms() - start) / 1e3);
    free(b.p);
    cg_vocab_free(cvocab);
    llama_model_free(model);
    llama_backend_free();
    return failures ? 1 : 0;
}
