/*
 * old_header: a program built against an older cgram.h, run against the
 * library of today (docs/ABI.md). Compiled twice by scripts/test.sh and
 * scripts/cross.sh, never against include/cgram.h:
 *
 *   -I tests/abi/first   the header of the first cg_compile_options (seven
 *                        fields, struct_size to max_states: 40 bytes)
 *   -I tests/abi/0.1.0   the header of 0.1.0 (twelve fields, 80 bytes), the
 *                        last before cg_compile_options_init took a size
 *
 *   old_header TOKENIZER.json
 *
 * Such a program calls the exported cg_compile_options_init with no size,
 * on a struct of its header's size. It must get the defaults, and nothing
 * may be written past its struct: a canary follows it (AddressSanitizer in
 * the host cannot see writes made inside an uninstrumented library). Then
 * the fields it sets must be read (kind, flags, max_states), its compiles
 * must work and its masks be right, and a versioned struct it fills itself
 * (cg_grammar_cache_stats) must be filled within its size.
 *
 * Prints "old_header: N checks passed" and exits 0, or lists what failed
 * and exits 1.
 */
#include <cgram.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_checks, n_failed;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        n_checks++;                                                                           \
        if (!(cond)) {                                                                        \
            n_failed++;                                                                       \
            fprintf(stderr, "old_header:%d: ", __LINE__);                                     \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fprintf(stderr, " (cg_last_error: %s)\n", cg_last_error());                       \
        }                                                                                     \
    } while (0)

#define CANARY 0xA5

/* The options with a canary after them, as a caller's stack frame has
 * other variables after a struct. */
struct framed {
    cg_compile_options options;
    unsigned char canary[256];
};

static int canary_intact(const struct framed *f)
{
    for (size_t i = 0; i < sizeof f->canary; i++)
        if (f->canary[i] != CANARY)
            return 0;
    return 1;
}

static void init(struct framed *f)
{
    memset(f, CANARY, sizeof *f);
    cg_compile_options_init(&f->options); /* the function: no size passed */
}

/* Walks `text` through the grammar as walk.c does (the longest allowed
 * token that is a prefix of what is left); 1 if it is accepted whole. */
static int walks(const cg_vocab *vocab, const cg_grammar *g, const char *text)
{
    size_t n_words = cg_mask_words(g);
    uint32_t n_vocab = cg_vocab_size(vocab);
    uint32_t *mask = malloc(n_words * sizeof *mask);
    cg_matcher *m = cg_matcher_new(g);
    size_t pos = 0, len = strlen(text);
    int ok = mask != NULL && m != NULL;
    while (ok && pos < len) {
        ok = cg_fill_mask(m, mask, n_words) == CG_OK;
        int32_t best = -1;
        size_t best_len = 0;
        for (uint32_t t = 0; ok && t < n_vocab; t++) {
            if (!((mask[t / 32] >> (t % 32)) & 1))
                continue;
            size_t tl = 0;
            const uint8_t *tb = cg_vocab_token_bytes(vocab, (int32_t)t, &tl);
            if (tb && tl > best_len && tl <= len - pos && memcmp(tb, text + pos, tl) == 0) {
                best = (int32_t)t;
                best_len = tl;
            }
        }
        ok = ok && best >= 0 && cg_accept(m, best) == CG_OK;
        pos += best_len;
    }
    ok = ok && cg_is_accepting(m) == 1;
    cg_matcher_free(m);
    free(mask);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: old_header TOKENIZER.json\n");
        return 2;
    }
    cg_vocab *vocab = cg_vocab_from_tokenizer_json(argv[1]);
    if (!vocab) {
        fprintf(stderr, "old_header: %s\n", cg_last_error());
        return 1;
    }

    /* Defaults, nothing written past the struct. */
    struct framed f;
    init(&f);
    CHECK(canary_intact(&f), "cg_compile_options_init wrote past a %zu-byte struct",
          sizeof f.options);
    CHECK(f.options.struct_size >= 16 && f.options.struct_size <= sizeof f.options,
          "struct_size %u for a %zu-byte struct", (unsigned)f.options.struct_size,
          sizeof f.options);
    CHECK(f.options.kind == CG_KIND_GBNF && f.options.root == NULL && f.options.flags == 0 &&
              f.options.json_max_whitespace == 0 && f.options.max_compile_ms == 10000 &&
              f.options.max_states == 1000000,
          "not the defaults");
    /* The same on the heap, at exactly the header's size (valgrind sees
     * a write past it there). */
    cg_compile_options *heap = malloc(sizeof *heap);
    cg_compile_options_init(heap);
    CHECK(heap->kind == CG_KIND_GBNF && heap->max_states == 1000000, "heap: not the defaults");

    /* A compile with the defaults. */
    const char *gbnf = "root ::= \"yes\" | \"no\"";
    cg_grammar *g = cg_compile(vocab, gbnf, strlen(gbnf), heap);
    CHECK(g != NULL, "GBNF with the defaults");
    CHECK(g && walks(vocab, g, "yes") && !walks(vocab, g, "yess"), "GBNF masks");
    cg_free(g);
    free(heap);

    /* The fields it knows are read: kind, flags (compact JSON: no
     * whitespace), max_states. */
    const char *schema = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}},"
                         " \"required\": [\"n\"]}";
    init(&f);
    f.options.kind = CG_KIND_JSON_SCHEMA;
    f.options.flags = CG_JSON_COMPACT;
    g = cg_compile(vocab, schema, strlen(schema), &f.options);
    CHECK(g != NULL, "a JSON Schema, compact");
    CHECK(g && walks(vocab, g, "{\"n\":42}"), "compact JSON refused");
    CHECK(g && !walks(vocab, g, "{\"n\": 42}"), "CG_JSON_COMPACT ignored: whitespace allowed");
    CHECK(g && !walks(vocab, g, "{\"n\":\"x\"}"), "the schema ignored");
    cg_free(g);
    CHECK(canary_intact(&f), "cg_compile wrote past the options");
    f.options.flags = 0;
    f.options.max_states = 5;
    g = cg_compile(vocab, schema, strlen(schema), &f.options);
    CHECK(g == NULL && cg_last_error_code() == CG_ERR_LIMIT, "max_states 5 not read");
    cg_free(g);

    /* A versioned struct the program fills itself: written within it. */
    cg_grammar_cache *cache = cg_grammar_cache_new(0);
    struct {
        cg_grammar_cache_stats stats;
        unsigned char canary[64];
    } s;
    memset(&s, CANARY, sizeof s);
    s.stats.struct_size = sizeof s.stats;
    init(&f);
    g = cg_grammar_cache_compile(cache, vocab, gbnf, strlen(gbnf), &f.options);
    CHECK(g != NULL, "a compile through the grammar cache");
    cg_free(g);
    CHECK(cg_grammar_cache_get_stats(cache, &s.stats) == CG_OK && s.stats.misses == 1,
          "cache stats");
    int intact = 1;
    for (size_t i = 0; i < sizeof s.canary; i++)
        intact &= s.canary[i] == CANARY;
    CHECK(intact, "cg_grammar_cache_get_stats wrote past the struct");
    cg_grammar_cache_free(cache);
    cg_vocab_free(vocab);

    if (n_failed) {
        fprintf(stderr, "old_header: %d of %d checks failed\n", n_failed, n_checks);
        return 1;
    }
    printf("old_header: %d checks passed (%zu-byte options, struct_size %u)\n", n_checks,
           sizeof f.options, (unsigned)f.options.struct_size);
    return 0;
}
