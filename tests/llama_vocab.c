/*
 * llama_vocab_test: the cgram vocabulary that the llama.cpp adapter builds
 * from a llama.cpp vocabulary (adapters/llama: cgram_llama_vocab_new)
 * against the one cgram loads from the matching tokenizer.json.
 *
 *   llama_vocab_test VOCAB.gguf TOKENIZER.json   compare token by token
 *   llama_vocab_test VOCAB.gguf                  sanity checks only
 *
 * VOCAB.gguf is loaded vocab-only (llama.cpp's models/ggml-vocab-*.gguf).
 * With a tokenizer.json, checked:
 *   - the same number of tokens;
 *   - every token's bytes (cg_vocab_token_bytes) equal;
 *   - the end-of-sequence ids equal (llama.cpp's end-of-generation set);
 *   - the special flags: cgram does not expose them, so they are compared
 *     through what they do: special tokens never match text. Under a
 *     grammar that accepts any text, a token is allowed at the start
 *     exactly when it is end-of-sequence, or not special with bytes that
 *     begin valid UTF-8. Both vocabularies' masks must be equal, and the
 *     adapter's flags must predict its mask exactly.
 * Always checked: cgram's own reading of VOCAB.gguf (cg_vocab_from_gguf)
 * equals the adapter's vocabulary as above (bytes, end-of-sequence ids,
 * special flags through the masks); the vocabulary compiles llama.cpp's json.gbnf shape of
 * grammar, and a sample text tokenized by llama.cpp (llama_tokenize) is
 * accepted token by token by a cgram matcher, its bytes spelling the text.
 *
 * Prints "N passed, N failed" and exits 0 when nothing failed.
 */
#include "cgram_llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int n_passed, n_failed;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    if (ok)
        n_passed++;
    else
        n_failed++;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR)
        fputs(text, stderr);
}

static void show_bytes(const uint8_t *b, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n && i < 40; i++) {
        if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '"' && b[i] != '\\')
            putchar(b[i]);
        else
            printf("\\x%02x", b[i]);
    }
    printf(n > 40 ? "...\"" : "\"");
}

/* Whether b[0..n) is valid UTF-8 except that it may end inside a character. */
static int utf8_prefix(const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = b[i];
        size_t len;
        uint32_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c < 0x80)
            len = 1;
        else if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0;
            if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            if (c == 0xF4)
                hi = 0x8F;
        } else
            return 0;
        for (size_t k = 1; k < len; k++) {
            if (i + k >= n)
                return 1; /* ends inside the character */
            uint8_t d = b[i + k];
            if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF))
                return 0;
        }
        i += len;
    }
    return 1;
}

static const char *ANY_TEXT = "root ::= [\\x00-\\U0010FFFF]*";

static uint32_t *start_mask(cg_vocab *v, const char *gbnf, size_t *n_words)
{
    cg_grammar *g = cg_compile(v, gbnf, strlen(gbnf), NULL);
    if (!g) {
        printf("cg_compile: %s\n", cg_last_error());
        return NULL;
    }
    cg_matcher *m = cg_matcher_new(g);
    *n_words = cg_mask_words(g);
    uint32_t *mask = calloc(*n_words, sizeof *mask);
    int rc = m && mask ? cg_fill_mask(m, mask, *n_words) : -1;
    cg_matcher_free(m);
    cg_free(g);
    if (rc != CG_OK) {
        free(mask);
        return NULL;
    }
    return mask;
}

static int bit(const uint32_t *mask, uint32_t t) { return (mask[t / 32] >> (t % 32)) & 1; }

/* The adapter's vocabulary `va` (from the arrays `a`) against `vt`, which
 * cgram read from a file of kind `other` ("tokenizer.json", "GGUF"). */
static void compare_vocabs(const cgram_llama_vocab_arrays *a, cg_vocab *va, cg_vocab *vt,
                           const char *other)
{
    uint32_t n = cg_vocab_size(va), nt = cg_vocab_size(vt);
    char what[256];
    snprintf(what, sizeof what, "%s: same number of tokens (llama.cpp %u, %s %u)", other, n,
             other, nt);
    check(n == nt, what);

    uint32_t n_common = n < nt ? n : nt, bad = 0;
    for (uint32_t t = 0; t < n_common; t++) {
        size_t la = 0, lt = 0;
        const uint8_t *ba = cg_vocab_token_bytes(va, (int32_t)t, &la);
        const uint8_t *bt = cg_vocab_token_bytes(vt, (int32_t)t, &lt);
        if (la != lt || (la && memcmp(ba, bt, la) != 0)) {
            if (bad++ < 10) {
                printf("  token %u: llama.cpp ", t);
                show_bytes(ba, la);
                printf(", %s ", other);
                show_bytes(bt, lt);
                printf("\n");
            }
        }
    }
    snprintf(what, sizeof what, "%s: the bytes of all %u tokens are equal (%u differ)", other,
             n_common, bad);
    check(bad == 0, what);

    int32_t ea[64], et[64];
    int na = cg_vocab_eos_tokens(va, ea, 64), nte = cg_vocab_eos_tokens(vt, et, 64);
    printf("  end of sequence: llama.cpp (is_eog)");
    for (int i = 0; i < na && i < 64; i++)
        printf(" %d", ea[i]);
    printf("; %s", other);
    for (int i = 0; i < nte && i < 64; i++)
        printf(" %d", et[i]);
    printf("\n");
    check(na == nte && na >= 0 && na <= 64 && memcmp(ea, et, (size_t)na * sizeof *ea) == 0,
          "the end-of-sequence tokens are equal");

    uint32_t n_special = 0;
    for (uint32_t t = 0; t < a->n_tokens; t++)
        n_special += (a->token_flags[t] & CG_TOKEN_SPECIAL) != 0;
    size_t wa = 0, wt = 0;
    uint32_t *ma = start_mask(va, ANY_TEXT, &wa), *mt = start_mask(vt, ANY_TEXT, &wt);
    if (!ma || !mt || wa != wt) {
        check(0, "masks of the any-text grammar");
    } else {
        uint32_t differ = 0, mispredicted = 0, allowed = 0;
        for (uint32_t t = 0; t < n_common; t++) {
            int x = bit(ma, t), y = bit(mt, t);
            allowed += x;
            if (x != y && differ++ < 10) {
                size_t l = 0;
                const uint8_t *b = cg_vocab_token_bytes(va, (int32_t)t, &l);
                printf("  token %u ", t);
                show_bytes(b, l);
                printf(": allowed as text by %s only\n", x ? "llama.cpp" : other);
            }
            int eos = 0;
            for (uint32_t i = 0; i < a->n_eog; i++)
                eos |= a->eog_tokens[i] == (int32_t)t;
            int predicted = eos || (!(a->token_flags[t] & CG_TOKEN_SPECIAL) && a->token_lens[t] > 0 &&
                                    utf8_prefix(a->token_bytes[t], a->token_lens[t]));
            if (predicted != x && mispredicted++ < 10)
                printf("  token %u: the adapter's flag predicts %d, its mask says %d\n", t,
                       predicted, x);
        }
        snprintf(what, sizeof what,
                 "%s: special flags agree: any-text masks equal (%u tokens allowed, %u differ; "
                 "%u tokens flagged special by the adapter)",
                 other, allowed, differ, n_special);
        check(differ == 0, what);
        check(mispredicted == 0, "the adapter's special flags and its vocabulary agree");
    }
    free(ma);
    free(mt);
}

static void compare_with_tokenizer_json(const cgram_llama_vocab_arrays *a, cg_vocab *va,
                                        const char *tokenizer)
{
    cg_vocab *vt = cg_vocab_from_tokenizer_json(tokenizer);
    if (!vt) {
        printf("cg_vocab_from_tokenizer_json: %s\n", cg_last_error());
        check(0, "load tokenizer.json");
        return;
    }
    compare_vocabs(a, va, vt, "tokenizer.json");
    cg_vocab_free(vt);
}

static double now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC); /* C11: wall clock, enough for a report */
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* cgram's own reading of the GGUF file (cg_vocab_from_gguf) against the
 * vocabulary the adapter builds from the model llama.cpp loaded. */
static void compare_with_gguf(const cgram_llama_vocab_arrays *a, cg_vocab *va, const char *gguf)
{
    double start = now_ms();
    cg_vocab *vg = cg_vocab_from_gguf(gguf);
    double ms = now_ms() - start;
    if (!vg) {
        printf("cg_vocab_from_gguf: %s\n", cg_last_error());
        check(0, "cg_vocab_from_gguf reads the file");
        return;
    }
    printf("  cg_vocab_from_gguf: %u tokens in %.1f ms\n", cg_vocab_size(vg), ms);
    compare_vocabs(a, va, vg, "GGUF");
    cg_vocab_free(vg);
}

static void sanity(const struct llama_vocab *lv, cg_vocab *va)
{
    static const char *json =
        "root ::= object\n"
        "value ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
        "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
        "array ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
        "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\bfnrt] | \"u\" "
        "[0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
        "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)? ws\n"
        "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";
    size_t w = 0;
    uint32_t *m = start_mask(va, json, &w);
    uint32_t allowed = 0;
    for (size_t i = 0; m && i < w; i++)
        for (uint32_t x = m[i]; x; x &= x - 1)
            allowed++;
    char what[256];
    snprintf(what, sizeof what, "a JSON grammar compiles; %u tokens may start the output", allowed);
    check(m && allowed > 0, what);
    free(m);

    if (llama_vocab_type(lv) == LLAMA_VOCAB_TYPE_WPM) {
        /* WordPiece (BERT embedding models): continuation pieces (`##s`)
         * do not spell the text they tokenize, in llama.cpp either. */
        printf("  WordPiece vocabulary: the sample-text walk does not apply\n");
        return;
    }
    const char *text = "{\"name\": \"Zoë\", \"city\": \"東京\", \"n\": [1, 2.5e3], \"ok\": true}";
    int32_t len = (int32_t)strlen(text);
    int32_t nt = -llama_tokenize(lv, text, len, NULL, 0, false, false);
    llama_token *toks = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *toks);
    int ok = nt > 0 && toks && llama_tokenize(lv, text, len, toks, nt, false, false) == nt;
    cg_grammar *g = ok ? cg_compile(va, ANY_TEXT, strlen(ANY_TEXT), NULL) : NULL;
    cg_matcher *mt = g ? cg_matcher_new(g) : NULL;
    size_t cap = 4 * (size_t)len + 64, got = 0;
    uint8_t *spelled = malloc(cap);
    for (int32_t i = 0; ok && mt && i < nt; i++) {
        size_t l = 0;
        const uint8_t *b = cg_vocab_token_bytes(va, toks[i], &l);
        if (cg_accept(mt, toks[i]) != CG_OK || !b || got + l > cap) {
            printf("  token %d (id %d) rejected: %s\n", (int)i, (int)toks[i], cg_last_error());
            ok = 0;
            break;
        }
        memcpy(spelled + got, b, l);
        got += l;
    }
    /* SentencePiece vocabularies spell a leading space (the dummy prefix). */
    int spells = ok && got >= (size_t)len && memcmp(spelled + got - len, text, (size_t)len) == 0 &&
                 (got == (size_t)len || (got == (size_t)len + 1 && spelled[0] == ' '));
    snprintf(what, sizeof what,
             "a sample text tokenized by llama.cpp (%d tokens) walks through a cgram matcher and "
             "spells the text",
             (int)nt);
    check(ok && mt && spells, what);
    cg_matcher_free(mt);
    cg_free(g);
    free(spelled);
    free(toks);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: llama_vocab_test VOCAB.gguf [TOKENIZER.json]\n");
        return 2;
    }
    llama_log_set(quiet_log, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "llama_vocab_test: cannot load %s\n", argv[1]);
        return 2;
    }
    const struct llama_vocab *lv = llama_model_get_vocab(model);
    printf("%s: %d tokens\n", argv[1], (int)llama_vocab_n_tokens(lv));

    cgram_llama_vocab_arrays a;
    check(cgram_llama_vocab_arrays_build(lv, &a) == 0, "the adapter reads the llama vocabulary");
    cg_vocab *va = cgram_llama_vocab_new(lv);
    if (!va)
        printf("  %s\n", cgram_llama_last_error());
    check(va != NULL, "the adapter builds a cgram vocabulary (cgram_llama_vocab_new)");
    if (va) {
        sanity(lv, va);
        compare_with_gguf(&a, va, argv[1]);
        if (argc == 3)
            compare_with_tokenizer_json(&a, va, argv[2]);
    }
    cg_vocab_free(va);
    cgram_llama_vocab_arrays_free(&a);
    llama_model_free(model);
    llama_backend_free();
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
