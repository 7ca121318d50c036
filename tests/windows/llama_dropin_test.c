/*
 * llama_dropin_test: cgram's Windows drop-in (the proxy llama.dll of
 * scripts/install-llama-dropin-windows.sh) as an unmodified llama.cpp
 * program meets it. Built like any llama.cpp program: against llama.h
 * (LLAMA_SHARED: dllimport) and llama.cpp's own import library, so that
 * it imports from "llama.dll" by name and knows nothing of cgram; run
 * from the folder where the proxy took llama.dll's place.
 *
 *   llama_dropin_test VOCAB.gguf          cgram serves the grammars
 *   llama_dropin_test VOCAB.gguf --off    run with CGRAM_LLAMA=off: llama.cpp's own
 *   llama_dropin_test VOCAB.gguf --plain  llama.cpp's own llama.dll (no proxy)
 *
 * VOCAB.gguf: llama.cpp's models/ggml-vocab-llama-bpe.gguf (vocabulary
 * only, no weights). Checks:
 *   - a function the proxy forwards (llama_model_load_from_file) works and
 *     its import was bound to the original DLL, while the grammar entry
 *     points are the proxy's own;
 *   - llama_sampler_init_grammar, _lazy_patterns and the deprecated _lazy
 *     give cgram samplers (their name, cgram_llama_sampler_is_cgram found
 *     through the proxy's exports) and llama.cpp's log says
 *     "cgram <version>: llama.cpp grammar samplers run on cgram";
 *   - their masks and accept: a GBNF grammar token by token to its end
 *     (end of generation allowed only then), a lazy grammar before and
 *     after its trigger, a grammar llama.cpp refuses (NULL);
 *   - the drop-in's log line formats %zu (CGRAM_LLAMA_VERBOSE);
 *   - llama_model_free (wrapped by the proxy).
 * With --off and --plain the same masks come from llama.cpp's own sampler.
 * Prints "N passed, N failed"; exit status 0 when nothing failed.
 */
#include <windows.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llama.h>

static int n_passed, n_failed;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    if (ok)
        n_passed++;
    else
        n_failed++;
}

/* llama.cpp's log, kept (the drop-in speaks through it) and shown. */
static char log_text[1 << 16];
static size_t log_len;

static void log_cb(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    size_t n = strlen(text);
    if (log_len + n < sizeof log_text) {
        memcpy(log_text + log_len, text, n + 1);
        log_len += n;
    }
    if (level != GGML_LOG_LEVEL_DEBUG && strstr(text, "cgram"))
        fprintf(stderr, "[llama.cpp log] %s", text);
}

static const struct llama_vocab *vocab;
static int32_t n_vocab;
static llama_token_data *cand;

/* llama_sampler_apply over the whole vocabulary; allowed[t] = 1 when
 * token t keeps a finite logit. Returns how many do. */
static int32_t mask(struct llama_sampler *s, unsigned char *allowed)
{
    for (int32_t t = 0; t < n_vocab; t++)
        cand[t] = (llama_token_data){t, 0.0f, 0.0f};
    llama_token_data_array a = {cand, (size_t)n_vocab, -1, false};
    llama_sampler_apply(s, &a);
    int32_t n = 0;
    for (size_t i = 0; i < a.size; i++) {
        int ok = isfinite(a.data[i].logit);
        allowed[a.data[i].id] = (unsigned char)ok;
        n += ok;
    }
    return n;
}

/* The tokens of text (no BOS, no special parsing). */
static int tokenize(const char *text, llama_token *out, int max)
{
    return llama_tokenize(vocab, text, (int32_t)strlen(text), out, max, false, false);
}

/* The single token of text, or -1. */
static llama_token one_token(const char *text)
{
    llama_token t[8];
    return tokenize(text, t, 8) == 1 ? t[0] : -1;
}

/* The module (DLL) an address is in, as its file name without the folder. */
static const char *module_of(uintptr_t address, char *buf, DWORD size)
{
    HMODULE m = NULL;
    if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                                GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCSTR)address, &m) ||
        !GetModuleFileNameA(m, buf, size))
        return "?";
    const char *slash = strrchr(buf, '\\');
    return slash ? slash + 1 : buf;
}

typedef int (*is_cgram_fn)(const struct llama_sampler *);

/* The program's import address table slots (the import library names
 * them __imp_<function>, for MinGW and MSVC alike): what the loader bound
 * each import to. &function itself may be a jump stub in this program
 * (MinGW's llama.h declares no dllimport). */
extern uintptr_t __imp_llama_model_load_from_file;
extern uintptr_t __imp_llama_sampler_init_grammar;

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: llama_dropin_test VOCAB.gguf [--off | --plain]\n");
        return 2;
    }
    int off = argc == 3 && strcmp(argv[2], "--off") == 0;
    int plain = argc == 3 && strcmp(argv[2], "--plain") == 0;
    if (argc == 3 && !off && !plain) {
        fprintf(stderr, "usage: llama_dropin_test VOCAB.gguf [--off | --plain]\n");
        return 2;
    }
    int want_cgram = !off && !plain;
    /* Read by the drop-in at the first grammar; the process's environment
     * (one msvcrt for the program and the proxy). */
    _putenv(off ? "CGRAM_LLAMA=off" : "CGRAM_LLAMA=");
    _putenv("CGRAM_LLAMA_VERBOSE=1");
    const char *expect_engine = want_cgram ? "cgram" : "grammar"; /* llama.cpp's own */

    llama_log_set(log_cb, NULL);
    llama_backend_init();

    /* Forwarded functions: the imports were bound to the original DLL. */
    char buf[MAX_PATH];
    char load_module[MAX_PATH], grammar_module[MAX_PATH];
    snprintf(load_module, sizeof load_module, "%s",
             module_of(__imp_llama_model_load_from_file, buf, sizeof buf));
    snprintf(grammar_module, sizeof grammar_module, "%s",
             module_of(__imp_llama_sampler_init_grammar, buf, sizeof buf));
    printf("llama_model_load_from_file is in %s, llama_sampler_init_grammar in %s\n", load_module,
           grammar_module);
    if (plain) {
        check(_stricmp(load_module, grammar_module) == 0,
              "without the proxy both are llama.cpp's own DLL");
    } else {
        check(_stricmp(load_module, "llama-cgram-original.dll") == 0,
              "a forwarded export is bound to llama-cgram-original.dll");
        check(_stricmp(grammar_module, "llama.dll") == 0 ||
                  _stricmp(grammar_module, "libllama.dll") == 0,
              "llama_sampler_init_grammar is the proxy's own");
    }
    HMODULE grammar_dll = NULL;
    GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                           GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                       (LPCSTR)__imp_llama_sampler_init_grammar, &grammar_dll);
    is_cgram_fn is_cgram = grammar_dll ? (is_cgram_fn)(void (*)(void))GetProcAddress(
                                             grammar_dll, "cgram_llama_sampler_is_cgram")
                                       : NULL;
    check(plain ? is_cgram == NULL : is_cgram != NULL,
          plain ? "llama.cpp's DLL has no cgram_llama_sampler_is_cgram"
                : "the proxy exports cgram_llama_sampler_is_cgram");

    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    check(model != NULL, "llama_model_load_from_file (forwarded) loads the vocab-only GGUF");
    if (!model) {
        printf("%d passed, %d failed\n", n_passed, n_failed);
        return 1;
    }
    vocab = llama_model_get_vocab(model);
    n_vocab = llama_vocab_n_tokens(vocab);
    check(n_vocab == 128256, "llama_vocab_n_tokens (forwarded): 128,256 tokens (Llama 3)");
    cand = calloc((size_t)n_vocab, sizeof *cand);
    unsigned char *allowed = calloc((size_t)n_vocab, 1);
    if (!cand || !allowed)
        return 1;
    llama_token eos = llama_vocab_eos(vocab);
    llama_token brace = one_token("{"), close = one_token("}"), hello = one_token("hello");
    check(brace >= 0 && close >= 0 && hello >= 0, "'{', '}' and 'hello' are single tokens");

    /* A plain grammar, token by token to its end. */
    const char *gbnf = "root ::= \"{\" [a-z]+ \"}\"";
    struct llama_sampler *g = llama_sampler_init_grammar(vocab, gbnf, "root");
    check(g != NULL, "llama_sampler_init_grammar gives a sampler");
    if (!g)
        return 1;
    check(strcmp(llama_sampler_name(g), expect_engine) == 0,
          want_cgram ? "it is named cgram" : "it is llama.cpp's (named grammar)");
    if (is_cgram)
        check(is_cgram(g) == want_cgram, want_cgram ? "cgram_llama_sampler_is_cgram says 1"
                                                    : "cgram_llama_sampler_is_cgram says 0");
    int32_t n = mask(g, allowed);
    printf("    %d tokens allowed at the start\n", (int)n);
    check(n > 0 && n < n_vocab / 10, "the first mask allows a few tokens");
    check(allowed[brace] && !allowed[hello] && !allowed[close] && !allowed[eos],
          "'{' allowed; 'hello', '}' and end of generation not");
    llama_token toks[32];
    int nt = tokenize("{abcxyz}", toks, 32);
    int each_allowed = nt > 1;
    for (int i = 0; i < nt; i++) {
        mask(g, allowed);
        each_allowed &= allowed[toks[i]];
        llama_sampler_accept(g, toks[i]);
    }
    check(each_allowed, "each token of {abcxyz} is allowed when its turn comes");
    n = mask(g, allowed);
    check(allowed[eos] && !allowed[brace] && !allowed[hello],
          "after {abcxyz}: end of generation only");
    printf("    %d tokens allowed at the end\n", (int)n);
    llama_sampler_reset(g);
    mask(g, allowed);
    check(allowed[brace] && !allowed[eos], "reset: back to the start");
    struct llama_sampler *k = llama_sampler_clone(g);
    check(k && strcmp(llama_sampler_name(k), expect_engine) == 0, "clone");
    llama_sampler_free(k);
    llama_sampler_free(g);

    /* A lazy grammar: free text until the trigger pattern. */
    const char *lazy = "root ::= \"<tool>{\" [a-z]+ \"}\"";
    const char *patterns[] = {"[\\s\\S]*?(<tool>)[\\s\\S]*"};
    struct llama_sampler *z =
        llama_sampler_init_grammar_lazy_patterns(vocab, lazy, "root", patterns, 1, NULL, 0);
    check(z != NULL && strcmp(llama_sampler_name(z), expect_engine) == 0,
          "llama_sampler_init_grammar_lazy_patterns gives a sampler of the same engine");
    if (z) {
        if (is_cgram)
            check(is_cgram(z) == want_cgram, "a lazy one too");
        n = mask(z, allowed);
        check(allowed[hello] && allowed[brace] && allowed[eos] && n > n_vocab / 2,
              "before the trigger: free text");
        nt = tokenize("Hi <tool>", toks, 32);
        for (int i = 0; i < nt; i++)
            llama_sampler_accept(z, toks[i]);
        n = mask(z, allowed);
        printf("    %d tokens allowed after the trigger\n", (int)n);
        check(allowed[brace] && !allowed[hello] && !allowed[eos],
              "after 'Hi <tool>': the grammar, '{' next");
        llama_sampler_free(z);
    }

    /* The deprecated trigger-word entry point, replaced as well. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    const char *words[] = {"<tool>"};
    struct llama_sampler *w =
        llama_sampler_init_grammar_lazy(vocab, lazy, "root", words, 1, NULL, 0);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    check(w != NULL && strcmp(llama_sampler_name(w), expect_engine) == 0,
          "llama_sampler_init_grammar_lazy (trigger words)");
    llama_sampler_free(w);

    /* A grammar llama.cpp refuses: refused the same way. */
    struct llama_sampler *bad = llama_sampler_init_grammar(vocab, "root ::= \"a", "root");
    check(bad == NULL, "a grammar with a syntax error gives NULL");
    llama_sampler_free(bad);

    /* What the log says. */
    char announce[64];
    if (want_cgram) {
        check(strstr(log_text, ": llama.cpp grammar samplers run on cgram") != NULL,
              "the log says \"cgram <version>: llama.cpp grammar samplers run on cgram\"");
        snprintf(announce, sizeof announce, "(%u bytes of GBNF,", (unsigned)strlen(gbnf));
        check(strstr(log_text, announce) != NULL,
              "the verbose line formats %zu (the grammar's length)");
        check(strstr(log_text, "cgram: failed to parse grammar") != NULL,
              "the refused grammar is logged as llama.cpp logs it");
    } else if (off) {
        check(strstr(log_text, "loaded but off (CGRAM_LLAMA=off)") != NULL,
              "the log says cgram is loaded but off");
    } else {
        check(strstr(log_text, "run on cgram") == NULL && strstr(log_text, "loaded but off") == NULL,
              "nothing of cgram in the log");
    }

    llama_model_free(model);
    check(1, "llama_model_free (wrapped by the proxy) returns");
    llama_backend_free();
    free(cand);
    free(allowed);
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed == 0 ? 0 : 1;
}
