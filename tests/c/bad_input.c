/*
 * bad_input: every function of include/cgram.h called with hostile
 * arguments, each result checked against what the header documents.
 *
 *   bad_input TOKENIZER.json      (the Llama 3 tokenizer.json)
 *
 * NULL for every pointer argument, short and oversized buffers, token ids
 * out of range, invalid UTF-8 and embedded NULs in sources, roots,
 * patterns and paths, garbage options, accept after termination, rollback
 * past the history, cg_fill_masks with NULL, duplicated and misdirected
 * entries and any thread count, lazy triggers with bad patterns, grammar
 * cache calls with NULLs, hostile tokenizer files, and the use of every
 * object after each of its errors. Part runs on a small vocabulary built
 * with cg_vocab_new, part on the real Llama 3 vocabulary.
 *
 * A case is one checked call: its return value, and for a failure the
 * code (cg_last_error_code) and a message from that function
 * (cg_last_error starts with its name); for a success, an error slot left
 * as it was (the header: successful calls do not change it). Buffers get
 * sentinels past what may be written.
 *
 * Built by scripts/sanitize.sh against an installed cgram and run plainly,
 * under valgrind and under AddressSanitizer, and by scripts/cross.sh for
 * every target it can run (Linux aarch64 under qemu-aarch64, Windows
 * x86-64 under wine). Prints "N cases passed" and exits 0, or lists every
 * failed case and exits 1. The cases and their expectations are the same
 * on every platform.
 *
 * Building it (PREFIX: an installed cgram):
 *   POSIX    cc -std=c11 -Wall -Wextra -Wpedantic -Werror -I$PREFIX/include
 *              bad_input.c -o bad_input -L$PREFIX/lib -lcgram -pthread -lm
 *   Windows  x86_64-w64-mingw32-gcc -std=c11 -Wall -Wextra -Wpedantic -Werror
 *              -I$PREFIX/include bad_input.c -o bad_input.exe
 *              $PREFIX/lib/libcgram.dll.a -static -pthread
 *            (-static puts winpthreads and libgcc into the .exe, which then
 *            needs only cgram.dll; the import library is named by its path,
 *            as -lcgram would pick the static libcgram.a under -static.)
 */
#define _GNU_SOURCE
#ifdef _WIN32
#define __USE_MINGW_ANSI_STDIO 1 /* C99 printf (%zu, %llu), not msvcrt's */
#define WIN32_LEAN_AND_MEAN
#endif
#include <cgram.h>

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Portability: the private directory of the test files, and the files in
 * it. Every path given to the library is UTF-8 (what it takes on Windows),
 * so on Windows the temporary directory comes from GetTempPathW and the
 * files are made and removed through the UTF-16 functions. DEV_NULL is a
 * device that reads as empty. */

#ifdef _WIN32
#include <direct.h>
#include <io.h>
#include <windows.h>

#define DEV_NULL "NUL"

/* A UTF-8 path as UTF-16, or an empty string if it does not fit. */
static const wchar_t *wide(const char *path, wchar_t *buf, int size)
{
    if (MultiByteToWideChar(CP_UTF8, 0, path, -1, buf, size) == 0)
        buf[0] = 0;
    return buf;
}

static FILE *create_file(const char *path)
{
    wchar_t w[600];
    return _wfopen(wide(path, w, 600), L"wb");
}

static int make_dir(const char *path)
{
    wchar_t w[600];
    return _wmkdir(wide(path, w, 600));
}

static int remove_file(const char *path)
{
    wchar_t w[600];
    return _wunlink(wide(path, w, 600));
}

static int remove_dir(const char *path)
{
    wchar_t w[600];
    return _wrmdir(wide(path, w, 600));
}

/* %TEMP%\cgram-bad-input-PID-N, made here (mkdtemp's part), in UTF-8. */
static int make_temp_dir(char *dir, size_t size)
{
    wchar_t w[MAX_PATH + 1];
    char base[3 * MAX_PATH + 1];
    DWORD n = GetTempPathW(MAX_PATH + 1, w);
    if (n == 0 || n > MAX_PATH ||
        WideCharToMultiByte(CP_UTF8, 0, w, -1, base, (int)sizeof base, NULL, NULL) == 0) {
        errno = ENOENT;
        return -1;
    }
    for (unsigned i = 0; i < 1000; i++) {
        /* GetTempPathW ends with a backslash. */
        int len = snprintf(dir, size, "%scgram-bad-input-%lu-%u", base,
                           (unsigned long)GetCurrentProcessId(), i);
        if (len < 0 || (size_t)len >= size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        if (make_dir(dir) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}
#else
#include <sys/stat.h>
#include <unistd.h>

#define DEV_NULL "/dev/null"

static FILE *create_file(const char *path) { return fopen(path, "wb"); }
static int make_dir(const char *path) { return mkdir(path, 0700); }
static int remove_file(const char *path) { return unlink(path); }
static int remove_dir(const char *path) { return rmdir(path); }

/* $TMPDIR/cgram-bad-input-XXXXXX (or under /tmp). */
static int make_temp_dir(char *dir, size_t size)
{
    const char *base = getenv("TMPDIR");
    int len = snprintf(dir, size, "%s/cgram-bad-input-XXXXXX", base && *base ? base : "/tmp");
    if (len < 0 || (size_t)len >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(dir) != NULL ? 0 : -1;
}
#endif

/* ------------------------------------------------------------------------
 * Counting and checking. */

static int n_cases;
static int n_failed;
static const char *section = "";

static void failed(int line, const char *fmt, ...)
{
    va_list ap;
    n_failed++;
    fprintf(stderr, "FAIL [%s] bad_input.c:%d: ", section, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n    cg_last_error_code() = %d, cg_last_error() = \"%s\"\n",
            cg_last_error_code(), cg_last_error());
}

/* One case: `cond` must hold. */
#define CASE(cond, ...)                                                                       \
    do {                                                                                      \
        n_cases++;                                                                            \
        if (!(cond))                                                                          \
            failed(__LINE__, __VA_ARGS__);                                                    \
    } while (0)

/* A check inside a case (setup that must work), not counted. */
#define MUST(cond, ...)                                                                       \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            failed(__LINE__, __VA_ARGS__);                                                    \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* Puts a known error in this thread's slot, from a function other than
 * `func`, so that a later check sees whether `func` replaced it. */
static const char *poisoned_by;
static void poison(const char *func)
{
    if (strcmp(func, "cg_vocab_size") != 0) {
        cg_vocab_size(NULL);
        poisoned_by = "cg_vocab_size: vocab is NULL";
    } else {
        cg_mask_words(NULL);
        poisoned_by = "cg_mask_words: grammar is NULL";
    }
}

/* The error slot still holds the poison: nothing failed since. */
static int untouched(void)
{
    return cg_last_error_code() == CG_ERR_INVALID_ARGUMENT &&
           strcmp(cg_last_error(), poisoned_by) == 0;
}

/* The last failure was `code` in `func`: "func: <non-empty message>". */
static int error_is(const char *func, int code)
{
    const char *msg = cg_last_error();
    size_t n = strlen(func);
    return msg != NULL && cg_last_error_code() == code && strncmp(msg, func, n) == 0 &&
           msg[n] == ':' && msg[n + 1] == ' ' && msg[n + 2] != '\0';
}

/* The last failure came from `func`, with one of the documented codes. */
static int error_in(const char *func, const int *codes, int n_codes)
{
    for (int i = 0; i < n_codes; i++)
        if (error_is(func, codes[i]))
            return 1;
    return 0;
}

/* An int call that must fail with `code` from `func`. */
#define ERR(func, code, call)                                                                 \
    do {                                                                                      \
        poison(func);                                                                         \
        int rc_ = (call);                                                                     \
        CASE(rc_ == (code) && error_is(func, code), "%s returned %d, want %d", #call, rc_,     \
             (int)(code));                                                                    \
    } while (0)

/* An int call that must succeed with `want` and leave the error slot. */
#define OKV(want, call)                                                                       \
    do {                                                                                      \
        poison("");                                                                           \
        int rc_ = (call);                                                                     \
        CASE(rc_ == (want) && untouched(), "%s returned %d, want %d", #call, rc_,             \
             (int)(want));                                                                    \
    } while (0)
#define OK(call) OKV(CG_OK, call)

/* A pointer call that must fail: NULL, `code` from `func`. */
#define NUL(func, code, call)                                                                 \
    do {                                                                                      \
        poison(func);                                                                         \
        const void *p_ = (const void *)(call);                                                \
        CASE(p_ == NULL && error_is(func, code), "%s returned %p, want NULL with %d", #call,   \
             p_, (int)(code));                                                                \
    } while (0)

/* A void call that is a no-op reported in the error slot. */
#define VOID_ERR(func, call)                                                                  \
    do {                                                                                      \
        poison(func);                                                                         \
        call;                                                                                 \
        CASE(error_is(func, CG_ERR_INVALID_ARGUMENT), "%s did not report its error", #call);  \
    } while (0)

/* A void call that must do nothing visible (freeing NULL). */
#define VOID_QUIET(call)                                                                      \
    do {                                                                                      \
        poison("");                                                                           \
        call;                                                                                 \
        CASE(untouched(), "%s changed the error slot", #call);                                \
    } while (0)

static int has(const uint32_t *mask, int32_t t)
{
    return (mask[t / 32] >> (t % 32)) & 1;
}

static size_t popcount(const uint32_t *mask, size_t n_words)
{
    size_t n = 0;
    for (size_t i = 0; i < n_words; i++)
        n += (size_t)__builtin_popcount(mask[i]);
    return n;
}

/* With BAD_INPUT_VERBOSE set: what a case that allows several outcomes
 * got, for the record. */
static int verbose;
static void note(const char *what, const void *result)
{
    if (verbose)
        printf("  [%s] %s: %s\n", section, what, result ? "accepted" : cg_last_error());
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    MUST(p != NULL, "out of memory");
    return p;
}

#define SENTINEL 0xA5A5A5A5u

/* ------------------------------------------------------------------------
 * The small vocabulary. */

enum {
    T_A, T_B, T_AB, T_C, T_EOS, T_BOS, T_EMPTY, T_C3, T_A9, T_E_ACUTE, T_NUL, T_FF,
    T_LBRACE, T_RBRACE, T_QUOTE, T_COLON, T_SPACE, T_0, T_1, T_2, T_3, T_LBRACKET,
    T_RBRACKET, T_COMMA, T_TRUE, T_FALSE, T_NULL, T_MINUS, T_DOT, T_E, T_X, T_Y, T_Z,
    N_TINY /* 33: two mask words, 31 padding bits */
};

static const struct {
    const char *bytes;
    uint32_t len;
    uint32_t flags;
} tiny_tokens[N_TINY] = {
    {"a", 1, 0}, {"b", 1, 0}, {"ab", 2, 0}, {"c", 1, 0},
    {"</s>", 4, CG_TOKEN_SPECIAL}, {"<s>", 3, CG_TOKEN_SPECIAL}, {"", 0, 0},
    {"\xc3", 1, 0}, {"\xa9", 1, 0}, {"\xc3\xa9", 2, 0}, {"\0", 1, 0}, {"\xff", 1, 0},
    {"{", 1, 0}, {"}", 1, 0}, {"\"", 1, 0}, {":", 1, 0}, {" ", 1, 0},
    {"0", 1, 0}, {"1", 1, 0}, {"2", 1, 0}, {"3", 1, 0}, {"[", 1, 0}, {"]", 1, 0},
    {",", 1, 0}, {"true", 4, 0}, {"false", 5, 0}, {"null", 4, 0}, {"-", 1, 0},
    {".", 1, 0}, {"e", 1, 0}, {"x", 1, 0}, {"y", 1, 0}, {"z", 1, 0},
};

static const uint8_t *tiny_ptrs[N_TINY];
static uint32_t tiny_lens[N_TINY];
static uint32_t tiny_flags[N_TINY];
static const int32_t tiny_eos[1] = {T_EOS};

static cg_vocab *tiny_vocab(void)
{
    for (int i = 0; i < N_TINY; i++) {
        tiny_ptrs[i] = (const uint8_t *)tiny_tokens[i].bytes;
        tiny_lens[i] = tiny_tokens[i].len;
        tiny_flags[i] = tiny_tokens[i].flags;
    }
    cg_vocab *v = cg_vocab_new(N_TINY, tiny_ptrs, tiny_lens, tiny_flags, tiny_eos, 1);
    MUST(v != NULL, "cg_vocab_new(tiny) failed");
    return v;
}

static cg_compile_options options(uint32_t kind)
{
    cg_compile_options o;
    cg_compile_options_init(&o);
    o.kind = kind;
    return o;
}

static cg_grammar *compile_ok(const cg_vocab *v, uint32_t kind, const char *src)
{
    cg_compile_options o = options(kind);
    cg_grammar *g = cg_compile(v, src, strlen(src), &o);
    MUST(g != NULL, "cannot compile %s", src);
    return g;
}

static cg_matcher *matcher_ok(const cg_grammar *g)
{
    cg_matcher *m = cg_matcher_new(g);
    MUST(m != NULL, "cg_matcher_new failed");
    return m;
}

/* ------------------------------------------------------------------------
 * The library and the error slot. */

static void *fresh_thread(void *arg)
{
    int *ok = arg;
    /* A thread that never failed has "" and CG_OK. */
    *ok = cg_last_error() != NULL && cg_last_error()[0] == '\0' && cg_last_error_code() == CG_OK;
    /* Its own failure stays its own. */
    cg_accept(NULL, 0);
    *ok = *ok && error_is("cg_accept", CG_ERR_INVALID_ARGUMENT);
    return NULL;
}

static void test_library(void)
{
    section = "library";
    verbose = getenv("BAD_INPUT_VERBOSE") != NULL;
    const char *v = cg_version();
    CASE(v != NULL && v[0] >= '0' && v[0] <= '9' && strchr(v, '.') != NULL, "cg_version: %s",
         v ? v : "(null)");
    CASE(v != NULL && strcmp(v, CGRAM_VERSION) == 0, "cg_version %s, the header's %s",
         v ? v : "(null)", CGRAM_VERSION);
    CASE(cg_version_number() == CGRAM_VERSION_NUMBER, "cg_version_number %u, the header's %u",
         (unsigned)cg_version_number(), (unsigned)CGRAM_VERSION_NUMBER);
    CASE(CGRAM_VERSION_NUMBER ==
             CGRAM_VERSION_MAJOR * 1000000 + CGRAM_VERSION_MINOR * 1000 + CGRAM_VERSION_PATCH,
         "CGRAM_VERSION_NUMBER is not made of the parts");
    CASE(cg_last_error() != NULL, "cg_last_error is NULL");
    int ok = 0;
    pthread_t th;
    cg_rollback(NULL, 1); /* this thread's slot: not the new thread's */
    MUST(pthread_create(&th, NULL, fresh_thread, &ok) == 0, "pthread_create");
    pthread_join(th, NULL);
    CASE(ok, "a new thread's error slot is not empty, or not its own");
    CASE(error_is("cg_rollback", CG_ERR_INVALID_ARGUMENT), "another thread changed the slot");
}

/* ------------------------------------------------------------------------
 * Vocabularies. */

static void test_vocab_new(void)
{
    section = "cg_vocab_new";
    const char *F = "cg_vocab_new";
    cg_vocab *v = tiny_vocab();
    cg_vocab_free(v);

    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(0, tiny_ptrs, tiny_lens, NULL, NULL, 0));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(0, NULL, NULL, NULL, NULL, 0));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(N_TINY, NULL, tiny_lens, NULL, NULL, 0));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(N_TINY, tiny_ptrs, NULL, NULL, NULL, 0));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(N_TINY, tiny_ptrs, tiny_lens, NULL, NULL, 1));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(N_TINY, NULL, NULL, NULL, NULL, 1));
    /* EOS ids out of range. */
    const int32_t bad_eos[] = {-1, N_TINY, INT32_MAX, INT32_MIN};
    for (int i = 0; i < 4; i++)
        NUL(F, CG_ERR_INVALID_ARGUMENT,
            cg_vocab_new(N_TINY, tiny_ptrs, tiny_lens, tiny_flags, &bad_eos[i], 1));
    /* A NULL token with bytes; an unknown flag bit. */
    const uint8_t *ptrs[3] = {(const uint8_t *)"x", NULL, (const uint8_t *)"y"};
    uint32_t lens[3] = {1, 2, 1};
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(3, ptrs, lens, NULL, NULL, 0));
    lens[1] = 0; /* NULL with length 0 is an empty token */
    cg_vocab *v3 = cg_vocab_new(3, ptrs, lens, NULL, NULL, 0);
    CASE(v3 != NULL && cg_vocab_size(v3) == 3, "a NULL empty token is refused");
    size_t len = 99;
    CASE(v3 && cg_vocab_token_bytes(v3, 1, &len) != NULL && len == 0,
         "an empty token has no non-NULL pointer");
    cg_vocab_free(v3);
    uint32_t flags[3] = {0, 2, 0};
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(3, ptrs, lens, flags, NULL, 0));
    flags[1] = 0x80000000u;
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_new(3, ptrs, lens, flags, NULL, 0));
    /* Limits: too many tokens (refused before the arrays are read). */
    NUL(F, CG_ERR_LIMIT, cg_vocab_new(16777217u, ptrs, lens, NULL, NULL, 0));
    NUL(F, CG_ERR_LIMIT, cg_vocab_new(UINT32_MAX, ptrs, lens, NULL, NULL, 0));
    /* A token longer than 65536 bytes; exactly 65536 is fine. */
    uint8_t *big = xmalloc(65537);
    memset(big, 'z', 65537);
    const uint8_t *bp[1] = {big};
    uint32_t bl[1] = {65537};
    NUL(F, CG_ERR_LIMIT, cg_vocab_new(1, bp, bl, NULL, NULL, 0));
    bl[0] = 65536;
    poison("");
    cg_vocab *vb = cg_vocab_new(1, bp, bl, NULL, NULL, 0);
    CASE(vb != NULL && untouched(), "a 65536-byte token is refused");
    cg_vocab_free(vb);
    free(big);
    /* Bytes are bytes: invalid UTF-8, NULs, duplicates, an empty EOS. */
    const uint8_t *odd[4] = {(const uint8_t *)"\xff\xfe", (const uint8_t *)"a\0b",
                             (const uint8_t *)"a\0b", (const uint8_t *)""};
    uint32_t odd_lens[4] = {2, 3, 3, 0};
    const int32_t odd_eos[3] = {3, 0, 3};
    poison("");
    cg_vocab *vo = cg_vocab_new(4, odd, odd_lens, NULL, odd_eos, 3);
    CASE(vo != NULL && untouched(), "odd token bytes are refused");
    if (vo) {
        const uint8_t *p = cg_vocab_token_bytes(vo, 1, &len);
        CASE(p != NULL && len == 3 && memcmp(p, "a\0b", 3) == 0, "a NUL inside a token is lost");
        int32_t eos[4] = {-5, -5, -5, -5};
        int n = cg_vocab_eos_tokens(vo, eos, 4);
        /* In increasing order; the duplicate given once or twice. */
        CASE(n >= 2 && n <= 3 && eos[0] == 0 && eos[1] == 3 && eos[n] == -5 &&
                 (n == 2 || eos[2] == 3),
             "EOS list [3, 0, 3] came back as %d ids: %d %d %d", n, eos[0], eos[1], eos[2]);
        cg_vocab_free(vo);
    }
}

static void test_vocab_accessors(cg_vocab *v)
{
    section = "vocab accessors";
    size_t len = 77;
    OKV(N_TINY, (int)cg_vocab_size(v));
    poison("cg_vocab_token_bytes");
    CASE(cg_vocab_size(NULL) == 0 && error_is("cg_vocab_size", CG_ERR_INVALID_ARGUMENT),
         "cg_vocab_size(NULL)");
    NUL("cg_vocab_token_bytes", CG_ERR_INVALID_ARGUMENT, cg_vocab_token_bytes(NULL, 0, &len));
    CASE(len == 0, "*len not zeroed for a NULL vocab");
    NUL("cg_vocab_token_bytes", CG_ERR_INVALID_ARGUMENT, cg_vocab_token_bytes(v, 0, NULL));
    const int32_t bad[] = {-1, N_TINY, N_TINY + 1, INT32_MAX, INT32_MIN};
    for (int i = 0; i < 5; i++) {
        len = 77;
        NUL("cg_vocab_token_bytes", CG_ERR_INVALID_ARGUMENT, cg_vocab_token_bytes(v, bad[i], &len));
        CASE(len == 0, "*len not zeroed for token %d", bad[i]);
    }
    poison("");
    const uint8_t *p = cg_vocab_token_bytes(v, T_NUL, &len);
    CASE(p != NULL && len == 1 && p[0] == 0 && untouched(), "the NUL token");
    p = cg_vocab_token_bytes(v, T_EMPTY, &len);
    CASE(p != NULL && len == 0, "the empty token");
    p = cg_vocab_token_bytes(v, T_EOS, &len);
    CASE(p != NULL && len == 4 && memcmp(p, "</s>", 4) == 0, "a special token's text");

    /* cg_vocab_eos_tokens: count with no buffer, short buffer, NULLs. */
    const char *F = "cg_vocab_eos_tokens";
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_eos_tokens(NULL, NULL, 0));
    int32_t out[3] = {-9, -9, -9};
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_eos_tokens(NULL, out, 3));
    OKV(1, cg_vocab_eos_tokens(v, NULL, 0));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_eos_tokens(v, NULL, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_eos_tokens(v, NULL, SIZE_MAX));
    OKV(1, cg_vocab_eos_tokens(v, out, 3));
    CASE(out[0] == T_EOS && out[1] == -9, "EOS written wrong or past the count");
    OKV(1, cg_vocab_eos_tokens(v, out, SIZE_MAX)); /* writes only the count */

    /* cg_vocab_clone. */
    NUL("cg_vocab_clone", CG_ERR_INVALID_ARGUMENT, cg_vocab_clone(NULL));
    poison("");
    cg_vocab *c = cg_vocab_clone(v);
    CASE(c != NULL && cg_vocab_size(c) == N_TINY && untouched(), "cg_vocab_clone");
    /* While the clone lives, the EOS list cannot change. */
    ERR("cg_vocab_set_eos", CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(v, tiny_eos, 1));
    cg_vocab_free(c);

    /* cg_vocab_set_cache_budget, cg_vocab_cache_bytes. */
    ERR("cg_vocab_set_cache_budget", CG_ERR_INVALID_ARGUMENT,
        cg_vocab_set_cache_budget(NULL, 1));
    poison("cg_vocab_cache_bytes");
    CASE(cg_vocab_cache_bytes(NULL) == 0 &&
             error_is("cg_vocab_cache_bytes", CG_ERR_INVALID_ARGUMENT),
         "cg_vocab_cache_bytes(NULL)");
    OKV(CG_OK, cg_vocab_set_cache_budget(v, 0));
    poison("");
    CASE(cg_vocab_cache_bytes(v) == 0 && untouched(), "a budget of 0 keeps nothing");
    OKV(CG_OK, cg_vocab_set_cache_budget(v, SIZE_MAX));

    /* Free NULL: nothing, not even an error. */
    VOID_QUIET(cg_vocab_free(NULL));
    VOID_QUIET(cg_free(NULL));
    VOID_QUIET(cg_matcher_free(NULL));
    VOID_QUIET(cg_triggers_free(NULL));
    VOID_QUIET(cg_grammar_cache_free(NULL));
}

static void test_vocab_set_eos(void)
{
    section = "cg_vocab_set_eos";
    const char *F = "cg_vocab_set_eos";
    cg_vocab *v = tiny_vocab();
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(NULL, tiny_eos, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(NULL, NULL, 0));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(v, NULL, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(v, NULL, SIZE_MAX));
    /* A length whose byte size overflows is refused before any read. */
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(v, tiny_eos, SIZE_MAX));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(v, tiny_eos, SIZE_MAX / 2));
    const int32_t bad[] = {T_C, -1, N_TINY, INT32_MAX, INT32_MIN};
    for (int i = 1; i < 5; i++) {
        int32_t two[2] = {T_C, bad[i]};
        ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(v, two, 2));
    }
    /* Nothing changed by the failures. */
    int32_t out[2] = {-9, -9};
    OKV(1, cg_vocab_eos_tokens(v, out, 2));
    CASE(out[0] == T_EOS, "a failed cg_vocab_set_eos changed the list");
    /* An empty list, then two, then back. */
    OK(cg_vocab_set_eos(v, NULL, 0));
    OKV(0, cg_vocab_eos_tokens(v, NULL, 0));
    const int32_t two[2] = {T_Z, T_C};
    OK(cg_vocab_set_eos(v, two, 2));
    OKV(2, cg_vocab_eos_tokens(v, out, 2));
    CASE(out[0] == T_C && out[1] == T_Z, "EOS not in increasing order: %d %d", out[0], out[1]);
    /* Not while a grammar (or its matcher) lives; again once freed. */
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, "root ::= \"a\"");
    cg_matcher *m = matcher_ok(g);
    cg_free(g);
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_set_eos(v, tiny_eos, 1));
    cg_matcher_free(m);
    OK(cg_vocab_set_eos(v, tiny_eos, 1));
    cg_vocab_free(v);
}

/* Hostile tokenizer files, in a private directory (the tokenizer_config.json
 * and generation_config.json next to a file are read with it). */
static char tmpdir[256];
static char written[64][512];
static int n_written;

/* Writes `data` to tmpdir/`name` (`name` may be "sub/file": the
 * subdirectory is made) and returns the path. */
static const char *write_file(const char *name, const void *data, size_t len)
{
    MUST(n_written < 64, "too many files");
    const char *slash = strchr(name, '/');
    if (slash) {
        char *dir = written[n_written];
        snprintf(dir, sizeof written[0], "%s/%.*s", tmpdir, (int)(slash - name), name);
        if (make_dir(dir) == 0)
            n_written++; /* removed after its files */
        else
            MUST(errno == EEXIST, "mkdir %s", dir);
    }
    char *path = written[n_written++];
    snprintf(path, sizeof written[0], "%s/%s", tmpdir, name);
    FILE *f = create_file(path);
    MUST(f != NULL, "cannot write %s", path);
    if (len)
        MUST(fwrite(data, 1, len, f) == len, "cannot write %s", path);
    fclose(f);
    return path;
}

static void remove_files(void)
{
    /* Files and directories, latest first. */
    for (int i = n_written - 1; i >= 0; i--)
        if (remove_file(written[i]) != 0 && remove_dir(written[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "bad_input: could not remove %s: %s\n", written[i], strerror(errno));
    if (remove_dir(tmpdir) != 0)
        fprintf(stderr, "bad_input: could not remove %s: %s\n", tmpdir, strerror(errno));
}

#define BYTE_LEVEL "\"decoder\": {\"type\": \"ByteLevel\"}"
#define BPE(vocab) "{\"model\": {\"type\": \"BPE\", \"vocab\": " vocab ", \"merges\": []}"

static void test_vocab_files(void)
{
    section = "cg_vocab_from_tokenizer_json";
    const char *F = "cg_vocab_from_tokenizer_json";
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_from_tokenizer_json(NULL));
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json(""));
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json("/nonexistent/tokenizer.json"));
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json("/")); /* on Windows: the drive's root */
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json(tmpdir));
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json("/nonexistent/\xff\xfe/\xc3"));
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json(DEV_NULL));

    /* Each file with the code the header gives for it: CG_ERR_IO for a
     * file that is not a (consistent) tokenizer, CG_ERR_UNSUPPORTED for a
     * tokenizer cgram cannot read, CG_ERR_LIMIT past 16777216 tokens. */
    static const struct {
        const char *name;
        const char *text;
        int code;
    } files[] = {
        {"empty.json", "", CG_ERR_IO},
        {"null.json", "null", CG_ERR_IO},
        {"object.json", "{}", CG_ERR_IO},
        {"text.json", "not json at all", CG_ERR_IO},
        {"binary.json", "\x7f\x45\x4c\x46\x02\x01\x01\x01\xff\xfe", CG_ERR_IO},
        {"bad_utf8.json", BPE("{\"\xff\": 0}") "}", CG_ERR_IO},
        {"unclosed.json", BPE("{\"a\": 0"), CG_ERR_IO},
        {"model_list.json", "{\"model\": [1, 2, 3]}", CG_ERR_IO},
        {"vocab_string.json", BPE("\"abc\"") "}", CG_ERR_IO},
        {"negative_id.json", BPE("{\"a\": -1}") "}", CG_ERR_IO},
        {"float_id.json", BPE("{\"a\": 0.5}") "}", CG_ERR_IO},
        {"duplicate_id.json", BPE("{\"a\": 0, \"b\": 0}") ", " BYTE_LEVEL "}", CG_ERR_IO},
        {"no_content.json", BPE("{\"a\": 0}") ", \"added_tokens\": [{\"id\": 1}]}", CG_ERR_IO},
        {"no_tokens.json", BPE("{}") ", " BYTE_LEVEL "}", CG_ERR_IO},
        {"tekken.json", "{\"vocab\": [], \"config\": {}, \"special_tokens\": []}", CG_ERR_IO},
        {"no_decoder.json", BPE("{\"a\": 0}") "}", CG_ERR_UNSUPPORTED},
        {"wordpiece.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}",
         CG_ERR_UNSUPPORTED},
        /* Ids past the limit: refused before any allocation of that size. */
        {"huge_id.json", BPE("{\"a\": 0, \"b\": 4294967295}") ", " BYTE_LEVEL "}", CG_ERR_LIMIT},
        {"huge_added.json",
         BPE("{\"a\": 0}") ", \"added_tokens\": [{\"id\": 16777216, \"content\": \"<x>\", "
                           "\"special\": true}], " BYTE_LEVEL "}",
         CG_ERR_LIMIT},
        {"huge_tekken.json",
         "{\"vocab\": [{\"rank\": 0, \"token_bytes\": \"YQ==\"}], \"config\": "
         "{\"default_vocab_size\": 20000000, \"default_num_special_tokens\": 1000}, "
         "\"special_tokens\": []}",
         CG_ERR_LIMIT},
        /* Side files naming an EOS that is not there, or not JSON. */
        {"eos_name/tokenizer_config.json", "{\"eos_token\": \"<nope>\"}", 0},
        {"eos_name/tokenizer.json", BPE("{\"a\": 0}") ", " BYTE_LEVEL "}", CG_ERR_IO},
        {"eos_id/generation_config.json", "{\"eos_token_id\": [5]}", 0},
        {"eos_id/tokenizer.json", BPE("{\"a\": 0}") ", " BYTE_LEVEL "}", CG_ERR_IO},
        {"eos_neg/generation_config.json", "{\"eos_token_id\": -1}", 0},
        {"eos_neg/tokenizer.json", BPE("{\"a\": 0}") ", " BYTE_LEVEL "}", CG_ERR_IO},
        {"side_garbage/tokenizer_config.json", "{not json", 0},
        {"side_garbage/tokenizer.json", BPE("{\"a\": 0}") ", " BYTE_LEVEL "}", CG_ERR_IO},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *p = write_file(files[i].name, files[i].text, strlen(files[i].text));
        if (files[i].code == 0)
            continue; /* a side file */
        NUL(F, files[i].code, cg_vocab_from_tokenizer_json(p));
    }
    /* Deeply nested JSON: a refusal, not a stack overflow. */
    size_t depth = 200000;
    char *deep = xmalloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json(write_file("deep.json", deep, 2 * depth)));
    memset(deep, ' ', 2 * depth);
    memcpy(deep, "{\"model\": ", 10);
    for (size_t i = 0; i < depth / 8; i++)
        memcpy(deep + 10 + 5 * i, "{\"a\":", 5);
    NUL(F, CG_ERR_IO, cg_vocab_from_tokenizer_json(write_file("deep_model.json", deep, 2 * depth)));
    free(deep);

    /* A small valid file; a NUL ends the path where C says it does. */
    const char *mini = BPE("{\"a\": 0, \"b\": 1, \"\\u0120\": 2, \"a\\u0000b\": 3}") ", \"added_tokens\": "
                       "[{\"id\": 4, \"content\": \"</s>\", \"special\": true}], " BYTE_LEVEL "}";
    const char *path = write_file("mini.json", mini, strlen(mini));
    char with_nul[600];
    size_t n = strlen(path);
    memcpy(with_nul, path, n);
    memcpy(with_nul + n, "\0.junk", 7);
    poison("");
    cg_vocab *v = cg_vocab_from_tokenizer_json(with_nul);
    CASE(v != NULL && untouched() && cg_vocab_size(v) == 5, "a small tokenizer.json");
    if (v) {
        size_t len = 0;
        const uint8_t *b = cg_vocab_token_bytes(v, 2, &len);
        CASE(b && len == 1 && b[0] == ' ', "byte-level \\u0120 is not a space");
        b = cg_vocab_token_bytes(v, 3, &len);
        CASE(b && len == 3 && memcmp(b, "a\0b", 3) == 0, "a NUL inside a token is lost");
        int32_t eos = -1;
        OKV(1, cg_vocab_eos_tokens(v, &eos, 1));
        CASE(eos == 4, "the EOS of a small tokenizer.json: %d", eos);
    }
    cg_vocab_free(v);
}

/* A GGUF file under construction (little-endian, version 3). */
struct gguf {
    unsigned char b[4096];
    size_t n;
};

static void gguf_raw(struct gguf *g, const void *p, size_t len)
{
    MUST(g->n + len <= sizeof g->b, "GGUF test file too large");
    memcpy(g->b + g->n, p, len);
    g->n += len;
}

static void gguf_u32(struct gguf *g, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    gguf_raw(g, x, 4);
}

static void gguf_u64(struct gguf *g, uint64_t v)
{
    gguf_u32(g, (uint32_t)v);
    gguf_u32(g, (uint32_t)(v >> 32));
}

static void gguf_str(struct gguf *g, const char *s)
{
    gguf_u64(g, strlen(s));
    gguf_raw(g, s, strlen(s));
}

/* The header of a file of `keys` keys. */
static void gguf_start(struct gguf *g, uint32_t version, uint64_t keys)
{
    g->n = 0;
    gguf_raw(g, "GGUF", 4);
    gguf_u32(g, version);
    gguf_u64(g, 0);
    gguf_u64(g, keys);
}

/* A string key; an array of `n` strings; an array of `n` int32. */
static void gguf_key_str(struct gguf *g, const char *key, const char *value)
{
    gguf_str(g, key);
    gguf_u32(g, 8);
    gguf_str(g, value);
}

static void gguf_key_strs(struct gguf *g, const char *key, const char *const *items, size_t n)
{
    gguf_str(g, key);
    gguf_u32(g, 9);
    gguf_u32(g, 8);
    gguf_u64(g, n);
    for (size_t i = 0; i < n; i++)
        gguf_str(g, items[i]);
}

static void gguf_key_i32s(struct gguf *g, const char *key, const int32_t *items, size_t n)
{
    gguf_str(g, key);
    gguf_u32(g, 9);
    gguf_u32(g, 5);
    gguf_u64(g, n);
    for (size_t i = 0; i < n; i++)
        gguf_u32(g, (uint32_t)items[i]);
}

static void test_gguf_files(void)
{
    section = "cg_vocab_from_gguf";
    const char *F = "cg_vocab_from_gguf";
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_vocab_from_gguf(NULL));
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf(""));
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf("/nonexistent/model.gguf"));
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf(tmpdir));
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf(DEV_NULL));

    static const char *const tokens[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81hi", "<0x0A>", "a"};
    static const int32_t types[] = {2, 3, 3, 1, 6, 1};
    struct gguf g;
    /* Not GGUF, or a version not read. */
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf(write_file("text.gguf", "hello world", 11)));
    gguf_start(&g, 1, 0);
    NUL(F, CG_ERR_UNSUPPORTED, cg_vocab_from_gguf(write_file("v1.gguf", g.b, g.n)));
    gguf_start(&g, 0x03000000, 0); /* big-endian */
    NUL(F, CG_ERR_UNSUPPORTED, cg_vocab_from_gguf(write_file("big_endian.gguf", g.b, g.n)));
    /* No tokenizer; another tokenizer model; counts past the file. */
    gguf_start(&g, 3, 1);
    gguf_key_str(&g, "general.architecture", "llama");
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf(write_file("no_tokenizer.gguf", g.b, g.n)));
    gguf_start(&g, 3, 2);
    gguf_key_str(&g, "tokenizer.ggml.model", "rwkv");
    gguf_key_strs(&g, "tokenizer.ggml.tokens", tokens, 6);
    NUL(F, CG_ERR_UNSUPPORTED, cg_vocab_from_gguf(write_file("rwkv.gguf", g.b, g.n)));
    gguf_start(&g, 3, 2);
    gguf_key_str(&g, "tokenizer.ggml.model", "llama");
    /* The tokens' count: after the key (length, name), its type, the
     * elements' type. */
    size_t count_at = g.n + 8 + strlen("tokenizer.ggml.tokens") + 4 + 4;
    gguf_key_strs(&g, "tokenizer.ggml.tokens", tokens, 6);
    uint64_t huge = (uint64_t)1 << 60;
    for (int k = 0; k < 8; k++)
        g.b[count_at + (size_t)k] = (unsigned char)(huge >> (8 * k));
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf(write_file("huge_count.gguf", g.b, g.n)));
    gguf_start(&g, 3, 0xFFFFFFFFFFFFull);
    NUL(F, CG_ERR_IO, cg_vocab_from_gguf(write_file("huge_keys.gguf", g.b, g.n)));

    /* A small SentencePiece vocabulary, and every truncation of it. */
    gguf_start(&g, 3, 3);
    gguf_key_str(&g, "tokenizer.ggml.model", "llama");
    gguf_key_strs(&g, "tokenizer.ggml.tokens", tokens, 6);
    gguf_key_i32s(&g, "tokenizer.ggml.token_type", types, 6);
    const size_t cuts[] = {0, 4, 8, 23, 24, 60, g.n / 2, g.n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        NUL(F, CG_ERR_IO, cg_vocab_from_gguf(write_file("cut.gguf", g.b, cuts[i])));
    poison("");
    cg_vocab *v = cg_vocab_from_gguf(write_file("small.gguf", g.b, g.n));
    CASE(v != NULL && untouched() && cg_vocab_size(v) == 6, "a small GGUF vocabulary");
    if (v) {
        size_t len = 0;
        const uint8_t *b = cg_vocab_token_bytes(v, 3, &len);
        CASE(b && len == 3 && memcmp(b, " hi", 3) == 0, "SentencePiece's \xe2\x96\x81 is a space");
        b = cg_vocab_token_bytes(v, 4, &len);
        CASE(b && len == 1 && b[0] == '\n', "a byte token is its byte");
        int32_t eos = -1;
        OKV(1, cg_vocab_eos_tokens(v, &eos, 1));
        CASE(eos == 2, "the default end of sequence of a SentencePiece file: %d", eos);
    }
    cg_vocab_free(v);
}

/* ------------------------------------------------------------------------
 * Compiling. */

static void test_compile(cg_vocab *v)
{
    section = "cg_compile";
    const char *F = "cg_compile";
    const char *src = "root ::= \"a\" \"b\"?";
    size_t n = strlen(src);
    cg_compile_options o = options(CG_KIND_GBNF);

    /* The macro passes the header's size; the function of the same name
     * (for programs built before it) writes the first fields only. */
    VOID_ERR("cg_compile_options_init_size", cg_compile_options_init(NULL));
    VOID_ERR("cg_compile_options_init", (cg_compile_options_init)(NULL));
    {
        const size_t bad_sizes[] = {0, 1, 8, 15, 4097, SIZE_MAX};
        for (int i = 0; i < 6; i++) {
            unsigned char buf[64];
            memset(buf, 0xEE, sizeof buf);
            VOID_ERR("cg_compile_options_init_size",
                     cg_compile_options_init_size((cg_compile_options *)(void *)buf,
                                                  bad_sizes[i]));
            int untouched_buf = 1;
            for (size_t k = 0; k < sizeof buf; k++)
                untouched_buf &= buf[k] == 0xEE;
            CASE(untouched_buf, "cg_compile_options_init_size(%zu) wrote", bad_sizes[i]);
        }
        VOID_ERR("cg_compile_options_init_size",
                 cg_compile_options_init_size(NULL, sizeof(cg_compile_options)));
    }
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(NULL, src, n, &o));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(NULL, NULL, 0, NULL));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, NULL, n, &o));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, NULL, 1, NULL));
    /* Lengths no buffer can have are refused before anything is read. */
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, src, SIZE_MAX, &o));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, src, (SIZE_MAX >> 1) + 1, &o));
    /* An empty GBNF source has no root rule; an empty any-JSON is fine. */
    NUL(F, CG_ERR_PARSE, cg_compile(v, NULL, 0, NULL));
    NUL(F, CG_ERR_PARSE, cg_compile(v, "", 0, &o));
    cg_compile_options aj = options(CG_KIND_ANY_JSON);
    poison("");
    cg_grammar *g = cg_compile(v, NULL, 0, &aj);
    CASE(g != NULL && untouched(), "any JSON from a NULL, empty source");
    cg_free(g);
    /* NULL options are the defaults. */
    poison("");
    g = cg_compile(v, src, n, NULL);
    CASE(g != NULL && untouched(), "NULL options");
    cg_free(g);

    /* Invalid UTF-8, for every kind: the byte offset is in the message. */
    static const struct {
        const char *s;
        size_t len;
    } bad_utf8[] = {
        {"root ::= \"\xff\"", 13},        /* invalid byte */
        {"root ::= \"\xc3\"", 13},        /* truncated inside */
        {"root ::= \"a\" \xc3", 14},      /* truncated at the end */
        {"root ::= \"\xc0\xaf\"", 14},    /* overlong '/' */
        {"root ::= \"\xed\xa0\x80\"", 15}, /* a surrogate */
        {"root ::= \"\xf4\x90\x80\x80\"", 16}, /* past U+10FFFF */
    };
    const uint32_t kinds[] = {CG_KIND_GBNF, CG_KIND_JSON_SCHEMA, CG_KIND_REGEX, CG_KIND_ANY_JSON};
    for (int k = 0; k < 4; k++) {
        cg_compile_options ok = options(kinds[k]);
        for (size_t i = 0; i < sizeof bad_utf8 / sizeof bad_utf8[0]; i++) {
            NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, bad_utf8[i].s, bad_utf8[i].len, &ok));
            CASE(strstr(cg_last_error(), "UTF-8") && strstr(cg_last_error(), "offset"),
                 "the UTF-8 error does not say where");
        }
    }

    /* Embedded NULs: part of the source, never a terminator. */
    const char nul_tail[] = "root ::= \"a\"\0 garbage";
    NUL(F, CG_ERR_PARSE, cg_compile(v, nul_tail, sizeof nul_tail - 1, &o));
    poison("");
    g = cg_compile(v, nul_tail, strlen(nul_tail), &o); /* the same text up to the NUL */
    CASE(g != NULL && untouched(), "the text before the NUL does not compile");
    cg_free(g);
    const char nul_literal[] = "root ::= \"a\0b\"";
    {
        /* A raw NUL inside a literal: a grammar for "a\0b" or a parse
         * error, nothing else. */
        poison(F);
        cg_grammar *gn = cg_compile(v, nul_literal, sizeof nul_literal - 1, &o);
        CASE(gn != NULL ? untouched() : error_is(F, CG_ERR_PARSE), "a NUL inside a literal");
        note("a NUL inside a GBNF literal", gn);
        if (gn) {
            cg_matcher *m = matcher_ok(gn);
            uint32_t mask[2];
            OK(cg_fill_mask(m, mask, 2));
            OK(cg_accept(m, T_A));
            OK(cg_fill_mask(m, mask, 2));
            CASE(has(mask, T_NUL) && popcount(mask, 2) == 1, "after \"a\": only the NUL token");
            cg_matcher_free(m);
            cg_free(gn);
        }
    }
    cg_compile_options js = options(CG_KIND_JSON_SCHEMA);
    const char schema_nul[] = "{\"type\": \"string\"}\0{";
    NUL(F, CG_ERR_PARSE, cg_compile(v, schema_nul, sizeof schema_nul - 1, &js));
    const char schema_nul_str[] = "{\"const\": \"a\0b\"}";
    NUL(F, CG_ERR_PARSE, cg_compile(v, schema_nul_str, sizeof schema_nul_str - 1, &js));
    cg_compile_options re = options(CG_KIND_REGEX);
    const char regex_nul[] = "a\0b";
    {
        poison(F);
        cg_grammar *gr = cg_compile(v, regex_nul, 3, &re);
        CASE(gr != NULL ? untouched() : error_is(F, CG_ERR_PARSE), "a NUL inside a regex");
        note("a NUL inside a regex", gr);
        cg_free(gr);
    }

    /* Garbage options. */
    const uint32_t sizes[] = {0, 1, 4, 8, 15};
    for (int i = 0; i < 5; i++) {
        cg_compile_options bad = options(CG_KIND_GBNF);
        bad.struct_size = sizes[i];
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, src, n, &bad));
    }
    {
        /* Exactly the fields that never move: the rest are defaults. */
        cg_compile_options old = options(CG_KIND_GBNF);
        old.struct_size = 16;
        old.flags = 0xFFFFFFFFu; /* not read: past the caller's struct */
        poison("");
        g = cg_compile(v, src, n, &old);
        CASE(g != NULL && untouched(), "a 16-byte options struct");
        cg_free(g);
        /* The header's struct: nothing past it is written. */
        unsigned char buf[512 + 16];
        memset(buf, 0xEE, sizeof buf);
        cg_compile_options_init((cg_compile_options *)(void *)buf);
        CASE(buf[sizeof(cg_compile_options)] == 0xEE, "cg_compile_options_init wrote past the struct");
        /* A newer caller's larger struct: the defaults, then zeros, and
         * nothing past its size. */
        memset(buf, 0xEE, sizeof buf);
        cg_compile_options_init_size((cg_compile_options *)(void *)buf, 512);
        int zeros = 1;
        for (size_t k = sizeof(cg_compile_options); k < 512; k++)
            zeros &= buf[k] == 0;
        CASE(zeros && buf[512] == 0xEE, "a 512-byte options struct: not zeros up to its end");
        poison("");
        g = cg_compile(v, src, n, (cg_compile_options *)(void *)buf);
        CASE(g != NULL && untouched(), "a 512-byte options struct");
        cg_free(g);
        /* A field this library does not know, set: refused, not ignored. */
        buf[500] = 1;
        NUL(F, CG_ERR_UNSUPPORTED, cg_compile(v, src, n, (cg_compile_options *)(void *)buf));
        /* A size no struct has: refused before reading that far. */
        uint32_t huge = 1u << 20;
        memcpy(buf, &huge, 4);
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, src, n, (cg_compile_options *)(void *)buf));
    }
    const uint32_t bad_kinds[] = {4, 5, 255, 0x80000000u, UINT32_MAX};
    for (int i = 0; i < 5; i++) {
        cg_compile_options bad = options(bad_kinds[i]);
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, src, n, &bad));
    }
    const uint32_t bad_flags[] = {64, 128, 0x100, 0x80000000u, UINT32_MAX};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 5; i++) {
            cg_compile_options bad = options(kinds[k]);
            bad.flags = bad_flags[i];
            NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, "{}", 2, &bad));
        }
    /* A flag of another kind is an error, not ignored. */
    const struct {
        uint32_t kind, flags;
    } wrong[] = {
        {CG_KIND_GBNF, CG_JSON_COMPACT},
        {CG_KIND_GBNF, CG_JSON_NO_EXTRA_PROPERTIES},
        {CG_KIND_REGEX, CG_JSON_COMPACT},
        {CG_KIND_REGEX, CG_GBNF_ALLOW_LEFT_RECURSION},
        {CG_KIND_JSON_SCHEMA, CG_GBNF_ALLOW_LEFT_RECURSION},
        {CG_KIND_ANY_JSON, CG_GBNF_ALLOW_LEFT_RECURSION},
        {CG_KIND_ANY_JSON, CG_JSON_NO_EXTRA_PROPERTIES},
        {CG_KIND_ANY_JSON, CG_JSON_ORDERED_PROPERTIES},
        {CG_KIND_ANY_JSON, CG_JSON_STRICT_INTEGERS},
        {CG_KIND_ANY_JSON, CG_JSON_LENIENT},
        {CG_KIND_GBNF, CG_JSON_LENIENT},
        {CG_KIND_REGEX, CG_JSON_STRICT_INTEGERS},
        {CG_KIND_GBNF, CG_JSON_ORDERED_PROPERTIES},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        cg_compile_options bad = options(wrong[i].kind);
        bad.flags = wrong[i].flags;
        const char *s = wrong[i].kind == CG_KIND_GBNF ? src : wrong[i].kind == CG_KIND_REGEX ? "a" : "{}";
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, s, strlen(s), &bad));
    }
    /* Roots: invalid UTF-8, a NUL, a missing rule, an empty name. */
    const char *bad_roots[] = {"\xff", "r\xc3", "\xed\xa0\x80", "\xc0\x80"};
    for (int i = 0; i < 4; i++) {
        cg_compile_options bad = options(CG_KIND_GBNF);
        bad.root = bad_roots[i];
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, src, n, &bad));
    }
    {
        cg_compile_options r = options(CG_KIND_GBNF);
        r.root = "root\0ignored";
        poison("");
        g = cg_compile(v, src, n, &r);
        CASE(g != NULL && untouched(), "a root with a NUL: \"root\"");
        cg_free(g);
        static const int codes[] = {CG_ERR_PARSE, CG_ERR_INVALID_ARGUMENT};
        const char *missing[] = {"nope", "", " root", "root "};
        for (int i = 0; i < 4; i++) {
            r.root = missing[i];
            poison(F);
            g = cg_compile(v, src, n, &r);
            CASE(g == NULL && error_in(F, codes, 2), "start rule \"%s\" does not exist", missing[i]);
            note(missing[i], g);
            cg_free(g);
        }
        /* A root on a kind that has none is ignored. */
        cg_compile_options rj = options(CG_KIND_ANY_JSON);
        rj.root = "\xff";
        poison(F);
        g = cg_compile(v, NULL, 0, &rj);
        CASE(g != NULL || error_is(F, CG_ERR_INVALID_ARGUMENT), "root on any-JSON");
        note("an invalid root on any-JSON", g);
        cg_free(g);
    }

    /* Parse errors, and grammars that cannot match anything. */
    const char *parse_errors[] = {
        "root ::= (", "root ::= \"a", "root ::= [a-", "root ::= undefined",
        "root ::= \"a\" | | (", "::= \"a\"", "root ::= \"\\q\"", "root ::= <[4294967296]>",
        "root ::= \"a\"{2,1}", "root ::= \"a\"{99999999999999999999}",
    };
    for (size_t i = 0; i < sizeof parse_errors / sizeof parse_errors[0]; i++) {
        static const int codes[] = {CG_ERR_PARSE, CG_ERR_LIMIT};
        poison(F);
        g = cg_compile(v, parse_errors[i], strlen(parse_errors[i]), NULL);
        CASE(g == NULL && error_in(F, codes, 2), "%s", parse_errors[i]);
        note(parse_errors[i], g);
        cg_free(g);
    }
    const char *empty_languages[] = {"root ::= <[33]>", "root ::= <[2147483647]>",
                                     "root ::= <[4294967295]>", "root ::= <[4]>",
                                     "root ::= \"a\" <[100000]>"};
    for (int i = 0; i < 5; i++)
        NUL(F, CG_ERR_INVALID_ARGUMENT,
            cg_compile(v, empty_languages[i], strlen(empty_languages[i]), NULL));
    const char *bad_schemas[] = {"", "{", "[1,", "{\"type\": }", "nul", "{\"a\": 1}}",
                                 "\"\\ud800\"", "{\"type\": \"string\"} x"};
    for (int i = 0; i < 8; i++)
        NUL(F, CG_ERR_PARSE, cg_compile(v, bad_schemas[i], strlen(bad_schemas[i]), &js));
    const char *bad_regexes[] = {"(", ")", "[z-a]", "a{2,1}", "\\", "*a", "(?<n"};
    for (int i = 0; i < 7; i++)
        NUL(F, CG_ERR_PARSE, cg_compile(v, bad_regexes[i], strlen(bad_regexes[i]), &re));

    /* Deep nesting: an error, never a stack overflow. */
    size_t depth = 100000;
    char *deep = xmalloc(4 * depth + 32);
    {
        static const int codes[] = {CG_ERR_LIMIT, CG_ERR_PARSE};
        char *p = deep + sprintf(deep, "root ::= ");
        memset(p, '(', depth);
        p += depth;
        *p++ = '"';
        *p++ = 'a';
        *p++ = '"';
        memset(p, ')', depth);
        p += depth;
        poison(F);
        g = cg_compile(v, deep, (size_t)(p - deep), NULL);
        CASE(g == NULL && error_in(F, codes, 2), "GBNF nested %zu deep", depth);
        note("GBNF nested 100000 deep", g);
        cg_free(g);
        /* Within the regex size limit (100000 bytes), so that the nesting
         * is what is refused; then past it. */
        size_t rd = 40000;
        memset(deep, '(', rd);
        deep[rd] = 'a';
        memset(deep + rd + 1, ')', rd);
        poison(F);
        g = cg_compile(v, deep, 2 * rd + 1, &re);
        CASE(g == NULL && error_in(F, codes, 2), "a regex nested %zu deep", rd);
        note("a regex nested 40000 deep", g);
        memset(deep, '(', depth);
        deep[depth] = 'a';
        memset(deep + depth + 1, ')', depth);
        poison(F);
        g = cg_compile(v, deep, 2 * depth + 1, &re);
        CASE(g == NULL && error_in(F, codes, 2), "a regex nested %zu deep", depth);
        note("a regex nested 100000 deep", g);
        cg_free(g);
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        poison(F);
        g = cg_compile(v, deep, 2 * depth, &js);
        CASE(g == NULL && error_in(F, codes, 2), "a JSON text nested %zu deep", depth);
        note("a schema text nested 100000 deep", g);
        cg_free(g);
        p = deep;
        for (size_t i = 0; i < 2000; i++)
            p += sprintf(p, "{\"items\": ");
        p += sprintf(p, "{}");
        for (size_t i = 0; i < 2000; i++)
            *p++ = '}';
        poison(F);
        g = cg_compile(v, deep, (size_t)(p - deep), &js);
        CASE(g == NULL && error_in(F, codes, 2), "a schema nested 2000 deep");
        note("a schema nested 2000 deep", g);
        cg_free(g);
    }
    free(deep);

    /* Limits. */
    {
        cg_compile_options lim = options(CG_KIND_JSON_SCHEMA);
        lim.max_states = 1;
        const char *s = "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\"}}}";
        NUL(F, CG_ERR_LIMIT, cg_compile(v, s, strlen(s), &lim));
        lim.max_states = 0; /* no limit */
        poison("");
        g = cg_compile(v, s, strlen(s), &lim);
        CASE(g != NULL && untouched(), "max_states = 0 is no limit");
        cg_free(g);
    }

    /* The vocabulary still works after all these failures. */
    poison("");
    g = cg_compile(v, src, n, &o);
    CASE(g != NULL && untouched(), "the vocabulary is broken after errors");
    cg_free(g);
}

/* ------------------------------------------------------------------------
 * Matchers on the small vocabulary. */

/* The JSON options: fixed formatting fields, lenient reports. */
static void test_json_options(cg_vocab *v)
{
    section = "JSON options";
    const char *F = "cg_compile";
    /* Separators that are not the punctuation with JSON whitespace, an
     * indent out of range, invalid UTF-8: errors, never a crash. */
    const char *bad_items[] = {";", ",,", " , x", "", "\xff", ",\xc3", "\v,", ",                 "};
    for (size_t i = 0; i < sizeof bad_items / sizeof bad_items[0]; i++) {
        cg_compile_options o = options(CG_KIND_JSON_SCHEMA);
        o.json_item_separator = bad_items[i];
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, "{}", 2, &o));
        o = options(CG_KIND_ANY_JSON);
        o.json_key_separator = bad_items[i];
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, NULL, 0, &o));
    }
    const uint32_t bad_indents[] = {17, 1000, 0x80000000u, UINT32_MAX};
    for (int i = 0; i < 4; i++) {
        cg_compile_options o = options(CG_KIND_JSON_SCHEMA);
        o.json_indent = bad_indents[i];
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, "{}", 2, &o));
    }
    /* Fixed formatting excludes compact and a whitespace bound, and does
     * not apply to GBNF or regex. */
    {
        cg_compile_options o = options(CG_KIND_JSON_SCHEMA);
        o.json_indent = 2;
        o.flags = CG_JSON_COMPACT;
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, "{}", 2, &o));
        o.flags = 0;
        o.json_max_whitespace = 3;
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, "{}", 2, &o));
        o = options(CG_KIND_GBNF);
        o.json_key_separator = ":";
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, "root ::= \"a\"", 12, &o));
        o = options(CG_KIND_REGEX);
        o.json_indent = 1;
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_compile(v, "a", 1, &o));
    }
    /* Good ones compile; an old struct_size ignores garbage past it. */
    {
        cg_compile_options o = options(CG_KIND_ANY_JSON);
        o.json_indent = 16;
        o.json_item_separator = "\t,\r";
        o.json_key_separator = " : ";
        poison("");
        cg_grammar *g = cg_compile(v, NULL, 0, &o);
        CASE(g != NULL && untouched(), "indent 16 with odd separators: %s", cg_last_error());
        cg_free(g);
        o.json_item_separator = "garbage";
        o.struct_size = (uint32_t)offsetof(cg_compile_options, json_indent);
        poison("");
        g = cg_compile(v, NULL, 0, &o);
        CASE(g != NULL && untouched(), "an old struct_size: the new fields are not read");
        cg_free(g);
    }
    /* Lenient reports. */
    NUL("cg_grammar_dropped", CG_ERR_INVALID_ARGUMENT, cg_grammar_dropped(NULL, 0, NULL, NULL));
    ERR("cg_grammar_dropped_count", CG_ERR_INVALID_ARGUMENT, cg_grammar_dropped_count(NULL));
    NUL("cg_grammar_clone", CG_ERR_INVALID_ARGUMENT, cg_grammar_clone(NULL));
    {
        const char *schema = "{\"type\": \"array\", \"uniqueItems\": true, \"items\": "
                             "{\"type\": \"string\", \"format\": \"regex\"}}";
        cg_compile_options o = options(CG_KIND_JSON_SCHEMA);
        NUL(F, CG_ERR_UNSUPPORTED, cg_compile(v, schema, strlen(schema), &o));
        o.flags = CG_JSON_LENIENT;
        cg_grammar *g = cg_compile(v, schema, strlen(schema), &o);
        MUST(g != NULL, "lenient: %s", cg_last_error());
        OKV(2, cg_grammar_dropped_count(g));
        cg_grammar *g2 = cg_grammar_clone(g);
        MUST(g2 != NULL, "cg_grammar_clone");
        cg_free(g);
        const char *ptr = NULL, *why = NULL;
        poison("");
        const char *kw0 = cg_grammar_dropped(g2, 0, &ptr, &why);
        CASE(kw0 && strcmp(kw0, "format") == 0 && strcmp(ptr, "/items") == 0 && why && *why &&
                 untouched(),
             "the first keyword left out: format at /items");
        const char *kw1 = cg_grammar_dropped(g2, 1, NULL, NULL);
        CASE(kw1 && strcmp(kw1, "uniqueItems") == 0, "then uniqueItems");
        const size_t bad_index[] = {2, 3, SIZE_MAX};
        for (int i = 0; i < 3; i++) {
            ptr = "sentinel";
            NUL("cg_grammar_dropped", CG_ERR_INVALID_ARGUMENT,
                cg_grammar_dropped(g2, bad_index[i], &ptr, NULL));
            CASE(strcmp(ptr, "sentinel") == 0, "an index out of range wrote *pointer");
        }
        cg_free(g2);
        g = compile_ok(v, CG_KIND_GBNF, "root ::= \"a\"");
        OKV(0, cg_grammar_dropped_count(g));
        cg_free(g);
    }
}

static void test_matcher_nulls(void)
{
    section = "NULL matchers";
    uint32_t mask[2] = {SENTINEL, SENTINEL};
    int32_t out[2];
    NUL("cg_matcher_new", CG_ERR_INVALID_ARGUMENT, cg_matcher_new(NULL));
    NUL("cg_matcher_clone", CG_ERR_INVALID_ARGUMENT, cg_matcher_clone(NULL));
    poison("cg_grammar_vocab_size");
    CASE(cg_grammar_vocab_size(NULL) == 0 &&
             error_is("cg_grammar_vocab_size", CG_ERR_INVALID_ARGUMENT),
         "cg_grammar_vocab_size(NULL)");
    poison("cg_mask_words");
    CASE(cg_mask_words(NULL) == 0 && error_is("cg_mask_words", CG_ERR_INVALID_ARGUMENT),
         "cg_mask_words(NULL)");
    ERR("cg_fill_mask", CG_ERR_INVALID_ARGUMENT, cg_fill_mask(NULL, mask, 2));
    ERR("cg_fill_mask", CG_ERR_INVALID_ARGUMENT, cg_fill_mask(NULL, NULL, 0));
    CASE(mask[0] == SENTINEL && mask[1] == SENTINEL, "a NULL matcher wrote the mask");
    ERR("cg_accept", CG_ERR_INVALID_ARGUMENT, cg_accept(NULL, 0));
    ERR("cg_accept", CG_ERR_INVALID_ARGUMENT, cg_accept(NULL, -1));
    ERR("cg_accept_bytes", CG_ERR_INVALID_ARGUMENT, cg_accept_bytes(NULL, (const uint8_t *)"a", 1));
    ERR("cg_accept_bytes", CG_ERR_INVALID_ARGUMENT, cg_accept_bytes(NULL, NULL, 0));
    ERR("cg_rollback", CG_ERR_INVALID_ARGUMENT, cg_rollback(NULL, 0));
    ERR("cg_rollback", CG_ERR_INVALID_ARGUMENT, cg_rollback(NULL, 1));
    ERR("cg_is_accepting", CG_ERR_INVALID_ARGUMENT, cg_is_accepting(NULL));
    ERR("cg_is_terminated", CG_ERR_INVALID_ARGUMENT, cg_is_terminated(NULL));
    ERR("cg_is_triggered", CG_ERR_INVALID_ARGUMENT, cg_is_triggered(NULL, NULL, NULL));
    ERR("cg_forced_tokens", CG_ERR_INVALID_ARGUMENT, cg_forced_tokens(NULL, out, 2));
    ERR("cg_forced_tokens", CG_ERR_INVALID_ARGUMENT, cg_forced_tokens(NULL, NULL, 0));
    VOID_ERR("cg_reset", cg_reset(NULL));
    NUL("cg_matcher_new_lazy", CG_ERR_INVALID_ARGUMENT, cg_matcher_new_lazy(NULL, NULL));
}

/* root ::= "ab" | "a" "c" "b"? : finite; after "ab" nothing can follow. */
static const char *G_FINITE = "root ::= \"ab\" | \"a\" \"c\" \"b\"?";

static void test_fill_mask(cg_vocab *v)
{
    section = "cg_fill_mask";
    const char *F = "cg_fill_mask";
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, G_FINITE);
    OKV(N_TINY, (int)cg_grammar_vocab_size(g));
    OKV(2, (int)cg_mask_words(g));
    cg_matcher *m = matcher_ok(g);
    uint32_t mask[8];
    for (int i = 0; i < 8; i++)
        mask[i] = SENTINEL;
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_mask(m, NULL, 2));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_mask(m, NULL, 0));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_mask(m, mask, 0));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_mask(m, mask, 1));
    /* A short mask: never written past its length. */
    CASE(mask[1] == SENTINEL, "a too short mask was written past its end");
    /* Exact, larger, and absurdly large (only 2 words are written). */
    OK(cg_fill_mask(m, mask, 2));
    CASE(has(mask, T_A) && has(mask, T_AB) && popcount(mask, 2) == 2 && mask[2] == SENTINEL,
         "the first mask of %s", G_FINITE);
    CASE((mask[1] >> (N_TINY - 32)) == 0, "bits past the vocabulary are set");
    OK(cg_fill_mask(m, mask, 8));
    CASE(mask[2] == SENTINEL && mask[7] == SENTINEL, "a larger mask was written past 2 words");
    OK(cg_fill_mask(m, mask, SIZE_MAX));
    CASE(mask[2] == SENTINEL, "n_words = SIZE_MAX wrote past 2 words");
    /* The matcher still works after the errors. */
    OK(cg_accept(m, T_AB));
    OKV(1, cg_is_terminated(m));
    OKV(1, cg_is_accepting(m));
    OK(cg_fill_mask(m, mask, 2));
    CASE(has(mask, T_EOS) && popcount(mask, 2) == 1, "after \"ab\": only EOS");
    cg_matcher_free(m);
    cg_free(g);
}

static void test_accept(cg_vocab *v)
{
    section = "cg_accept";
    const char *F = "cg_accept";
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, G_FINITE);
    cg_matcher *m = matcher_ok(g);
    cg_free(g); /* the matcher keeps it alive */
    uint32_t before[2], after[2];
    OK(cg_fill_mask(m, before, 2));
    const int32_t out_of_range[] = {-1, -32, INT32_MIN, N_TINY, N_TINY + 31, 64, INT32_MAX};
    for (int i = 0; i < 7; i++)
        ERR(F, CG_ERR_INVALID_ARGUMENT, cg_accept(m, out_of_range[i]));
    /* Refused: text the grammar does not allow, a special token it does
     * not name, EOS before the end, the empty token. */
    const int32_t refused[] = {T_B, T_C, T_BOS, T_EOS, T_NUL, T_FF, T_C3, T_EMPTY};
    for (int i = 0; i < 8; i++)
        ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept(m, refused[i]));
    OK(cg_fill_mask(m, after, 2));
    CASE(memcmp(before, after, sizeof before) == 0, "a refused token changed the matcher");
    OKV(0, cg_is_accepting(m));
    OKV(0, cg_is_terminated(m));
    /* "a" "c": accepting, "b" may follow. */
    OK(cg_accept(m, T_A));
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept(m, T_EOS));
    OK(cg_accept(m, T_C));
    OKV(1, cg_is_accepting(m));
    OKV(0, cg_is_terminated(m));
    /* Accept EOS: terminated; every token after it is refused. */
    OK(cg_accept(m, T_EOS));
    OKV(1, cg_is_terminated(m));
    OKV(0, cg_is_accepting(m));
    const int32_t later[] = {T_B, T_EOS, T_A};
    for (int i = 0; i < 3; i++)
        ERR(F, CG_ERR_TERMINATED, cg_accept(m, later[i]));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_accept(m, N_TINY));
    ERR("cg_accept_bytes", CG_ERR_TERMINATED, cg_accept_bytes(m, (const uint8_t *)"b", 1));
    OK(cg_fill_mask(m, after, 2));
    CASE(after[0] == 0 && after[1] == 0, "a terminated matcher allows tokens");
    OKV(0, cg_forced_tokens(m, NULL, 0));
    /* Roll EOS back: "b" is allowed again. */
    OK(cg_rollback(m, 1));
    OKV(0, cg_is_terminated(m));
    OK(cg_accept(m, T_B));
    OKV(1, cg_is_terminated(m)); /* nothing can follow "acb" */
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept(m, T_A));
    OK(cg_accept(m, T_EOS));
    /* Reset: back at the start, history gone. */
    cg_reset(m);
    OKV(0, cg_is_terminated(m));
    ERR("cg_rollback", CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 1));
    OK(cg_fill_mask(m, after, 2));
    CASE(memcmp(before, after, sizeof before) == 0, "cg_reset did not go back to the start");
    cg_matcher_free(m);
}

static void test_accept_bytes(cg_vocab *v)
{
    section = "cg_accept_bytes";
    const char *F = "cg_accept_bytes";
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, "root ::= \"a\" (\"\xc3\xa9\" | \"x\")+");
    cg_matcher *m = matcher_ok(g);
    uint32_t before[2], after[2];
    OK(cg_fill_mask(m, before, 2));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_accept_bytes(m, NULL, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_accept_bytes(m, NULL, SIZE_MAX));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_accept_bytes(m, (const uint8_t *)"a", SIZE_MAX));
    OK(cg_accept_bytes(m, NULL, 0));
    OK(cg_accept_bytes(m, (const uint8_t *)"", 0));
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"b", 1));
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"\xff", 1));
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"\0", 1));
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"a\0", 2));
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"ax\xff", 3));
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"</s>", 4));
    OK(cg_fill_mask(m, after, 2));
    CASE(memcmp(before, after, sizeof before) == 0, "refused bytes changed the matcher");
    /* Half a character, then the other half. */
    OK(cg_accept_bytes(m, (const uint8_t *)"a\xc3", 2));
    OKV(0, cg_is_accepting(m));
    OK(cg_fill_mask(m, after, 2));
    CASE(has(after, T_A9) && !has(after, T_X) && !has(after, T_E_ACUTE),
         "after half of \"é\": only its second byte");
    ERR(F, CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"\xc3", 1));
    ERR("cg_accept", CG_ERR_TOKEN_REJECTED, cg_accept(m, T_X));
    OK(cg_accept(m, T_A9));
    OKV(1, cg_is_accepting(m));
    OK(cg_accept_bytes(m, (const uint8_t *)"x\xc3\xa9x", 4));
    OK(cg_accept(m, T_EOS));
    ERR(F, CG_ERR_TERMINATED, cg_accept_bytes(m, (const uint8_t *)"x", 1));
    cg_matcher_free(m);
    cg_free(g);
}

static void test_rollback(cg_vocab *v)
{
    section = "cg_rollback";
    const char *F = "cg_rollback";
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, "root ::= [abc]+");
    cg_matcher *m = matcher_ok(g);
    uint32_t m0[2], m1[2], cur[2];
    OK(cg_rollback(m, 0));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, UINT32_MAX));
    OK(cg_fill_mask(m, m0, 2));
    OK(cg_accept(m, T_A));
    OK(cg_fill_mask(m, m1, 2));
    OK(cg_accept(m, T_B));
    OK(cg_accept(m, T_AB));
    OK(cg_rollback(m, 0));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 4));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 0x80000000u));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, UINT32_MAX));
    /* The failures left all three tokens: two back is after "a". */
    OK(cg_rollback(m, 2));
    OK(cg_fill_mask(m, cur, 2));
    CASE(memcmp(cur, m1, sizeof cur) == 0, "rollback 2 is not the mask after \"a\"");
    OK(cg_rollback(m, 1));
    OK(cg_fill_mask(m, cur, 2));
    CASE(memcmp(cur, m0, sizeof cur) == 0, "rollback to the start is not the first mask");
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 1));
    /* Refused tokens are not history. */
    ERR("cg_accept", CG_ERR_TOKEN_REJECTED, cg_accept(m, T_X));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 1));
    /* A long history, rolled back in one go. */
    for (int i = 0; i < 1000; i++)
        MUST(cg_accept(m, i % 2 ? T_C : T_A) == CG_OK, "accept %d", i);
    OK(cg_accept(m, T_EOS));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 1002));
    OK(cg_rollback(m, 1001));
    OK(cg_fill_mask(m, cur, 2));
    CASE(memcmp(cur, m0, sizeof cur) == 0, "rollback of 1001 is not the start");
    /* After a reset, only what came after it. */
    OK(cg_accept(m, T_A));
    cg_reset(m);
    OK(cg_accept(m, T_B));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 2));
    OK(cg_rollback(m, 1));
    cg_matcher_free(m);
    cg_free(g);
}

static void test_forced(cg_vocab *v)
{
    section = "cg_forced_tokens";
    const char *F = "cg_forced_tokens";
    /* "c" and "x" are spelt by one token each: both forced. */
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, "root ::= \"cx\" [abyz]");
    cg_matcher *m = matcher_ok(g);
    int32_t out[8];
    for (int i = 0; i < 8; i++)
        out[i] = -7;
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_forced_tokens(m, NULL, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_forced_tokens(m, NULL, SIZE_MAX));
    OKV(0, cg_forced_tokens(m, NULL, 0));
    OKV(0, cg_forced_tokens(m, out, 0));
    CASE(out[0] == -7, "cap 0 wrote a token");
    OKV(1, cg_forced_tokens(m, out, 1));
    CASE(out[0] == T_C && out[1] == -7, "cap 1 wrote %d, %d", out[0], out[1]);
    poison("");
    int n = cg_forced_tokens(m, out, 8);
    CASE(n == 2 && untouched() && out[0] == T_C && out[1] == T_X && out[2] == -7,
         "\"cx\" is forced: %d tokens", n);
    /* The forced tokens are accepted, then nothing is forced. */
    for (int i = 0; i < n && i < 2; i++)
        OK(cg_accept(m, out[i]));
    OKV(0, cg_forced_tokens(m, out, 8));
    cg_matcher_free(m);
    cg_free(g);
}

static void test_clone_and_ownership(cg_vocab *shared)
{
    section = "clone and ownership";
    cg_vocab *v = cg_vocab_clone(shared);
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, "root ::= \"a\"+ \"b\"");
    cg_matcher *m = matcher_ok(g);
    OK(cg_accept(m, T_A));
    cg_matcher *c = cg_matcher_clone(m);
    CASE(c != NULL, "cg_matcher_clone");
    /* Free everything but the matchers: they keep what they need. */
    cg_free(g);
    cg_vocab_free(v);
    OK(cg_accept(c, T_B));
    OKV(1, cg_is_accepting(c));
    OKV(0, cg_is_accepting(m));
    uint32_t mask[2];
    OK(cg_fill_mask(m, mask, 2));
    CASE(has(mask, T_A) && has(mask, T_B) && !has(mask, T_EOS), "the original moved with its clone");
    cg_matcher *cc = cg_matcher_clone(c);
    cg_matcher_free(c);
    OK(cg_accept(cc, T_EOS));
    OKV(1, cg_is_terminated(cc));
    cg_matcher_free(cc);
    cg_matcher_free(m);
}

static void test_fill_masks(cg_vocab *v)
{
    section = "cg_fill_masks";
    const char *F = "cg_fill_masks";
    cg_grammar *g1 = compile_ok(v, CG_KIND_GBNF, G_FINITE);
    cg_grammar *g2 = compile_ok(v, CG_KIND_ANY_JSON, "");
    enum { N = 6 };
    cg_matcher *ms[N];
    for (int i = 0; i < N; i++)
        ms[i] = matcher_ok(i % 2 ? g2 : g1);
    OK(cg_accept(ms[2], T_A));
    OK(cg_accept(ms[3], T_LBRACE));
    OK(cg_accept(ms[4], T_AB));
    OK(cg_accept(ms[4], T_EOS)); /* terminated: an all-zero mask */
    uint32_t want[N][2];
    for (int i = 0; i < N; i++)
        OK(cg_fill_mask(ms[i], want[i], 2));
    enum { W = 3 };
    uint32_t masks[N * W];
    const uint32_t threads[] = {0, 1, 2, 3, N, N + 1, 1000, UINT32_MAX};
    for (int t = 0; t < 8; t++) {
        for (int i = 0; i < N * W; i++)
            masks[i] = SENTINEL;
        OK(cg_fill_masks(ms, N, masks, W, threads[t]));
        int same = 1;
        for (int i = 0; i < N; i++)
            same = same && masks[i * W] == want[i][0] && masks[i * W + 1] == want[i][1] &&
                   masks[i * W + 2] == SENTINEL;
        CASE(same, "%u threads: the batch differs from cg_fill_mask", threads[t]);
    }
    /* Nothing to do. */
    OK(cg_fill_masks(NULL, 0, NULL, 0, 0));
    OK(cg_fill_masks(ms, 0, NULL, 0, 4));
    OK(cg_fill_masks(NULL, 0, masks, W, UINT32_MAX));
    /* NULL arrays and entries, duplicates, short and overflowing sizes. */
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(NULL, N, masks, W, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, NULL, W, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, masks, 0, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, masks, 1, 2));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, masks, SIZE_MAX, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, masks, SIZE_MAX / 4, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, SIZE_MAX, masks, W, 1));
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, SIZE_MAX / 2, masks, W, 0));
    cg_matcher *with_null[N];
    memcpy(with_null, ms, sizeof ms);
    with_null[N - 1] = NULL;
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(with_null, N, masks, W, 2));
    with_null[0] = NULL;
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(with_null, N, masks, W, 0));
    cg_matcher *dup[N];
    memcpy(dup, ms, sizeof ms);
    dup[5] = dup[0];
    for (int i = 0; i < N * W; i++)
        masks[i] = SENTINEL;
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(dup, N, masks, W, 2));
    CASE(masks[0] == SENTINEL, "a refused batch wrote masks");
    CASE(strstr(cg_last_error(), "matchers[0]") && strstr(cg_last_error(), "matchers[5]"),
         "the duplicate is not named");
    cg_matcher *all_same[4] = {ms[1], ms[1], ms[1], ms[1]};
    ERR(F, CG_ERR_INVALID_ARGUMENT, cg_fill_masks(all_same, 4, masks, W, 4));
    /* The matchers are fine after the refusals. */
    OK(cg_fill_masks(ms, N, masks, W, 2));
    for (int i = 0; i < N; i++)
        cg_matcher_free(ms[i]);
    cg_free(g1);
    cg_free(g2);
}

static void test_triggers(cg_vocab *v)
{
    section = "triggers";
    const char *F = "cg_triggers_new";
    cg_trigger t[2];
    memset(t, 0, sizeof t);
    t[0].kind = CG_TRIGGER_WORD;
    t[0].text = "ab";
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(NULL, t, 1));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(v, NULL, 1));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(v, t, SIZE_MAX));
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(v, t, SIZE_MAX / 8));
    /* No triggers at all: a lazy matcher that never fires. */
    poison("");
    cg_triggers *none = cg_triggers_new(v, NULL, 0);
    CASE(none != NULL && untouched(), "an empty trigger list");
    /* Texts: NULL, invalid UTF-8, an empty word; kinds; tokens. */
    const uint32_t kinds[] = {CG_TRIGGER_PATTERN, CG_TRIGGER_WORD};
    const char *bad_texts[] = {NULL, "\xff", "a\xc3", "\xed\xa0\x80"};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4; i++) {
            t[0].kind = kinds[k];
            t[0].text = bad_texts[i];
            NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(v, t, 1));
        }
    t[0].kind = CG_TRIGGER_WORD;
    t[0].text = "";
    NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(v, t, 1));
    const uint32_t bad_kinds[] = {3, 4, 0x80000000u, UINT32_MAX};
    for (int i = 0; i < 4; i++) {
        t[0].kind = bad_kinds[i];
        t[0].text = "ab";
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(v, t, 1));
    }
    const int32_t bad_tokens[] = {-1, N_TINY, INT32_MAX, INT32_MIN};
    for (int i = 0; i < 4; i++) {
        t[0].kind = CG_TRIGGER_TOKEN;
        t[0].text = NULL; /* ignored for a token */
        t[0].token = bad_tokens[i];
        NUL(F, CG_ERR_INVALID_ARGUMENT, cg_triggers_new(v, t, 1));
    }
    /* A good first trigger does not hide a bad second one. */
    t[0].kind = CG_TRIGGER_TOKEN;
    t[0].token = T_C;
    t[1].kind = CG_TRIGGER_PATTERN;
    t[1].text = "(";
    NUL(F, CG_ERR_PARSE, cg_triggers_new(v, t, 2));
    /* Bad patterns, as std::regex refuses them. */
    const struct {
        const char *p;
        int code;
    } pats[] = {
        {"(", CG_ERR_PARSE},        {")", CG_ERR_PARSE},       {"[z-a]", CG_ERR_PARSE},
        {"a{2,1}", CG_ERR_PARSE},   {"\\", CG_ERR_PARSE},      {"*", CG_ERR_PARSE},
        {"(?<=a)b", CG_ERR_PARSE},  {"(?<!a)b", CG_ERR_PARSE}, {"(?<n>a)", CG_ERR_PARSE},
        {"\\x4", CG_ERR_PARSE},     {"(a)\\1", CG_ERR_UNSUPPORTED},
        {"a{100000}", CG_ERR_LIMIT},
    };
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
        t[0].kind = CG_TRIGGER_PATTERN;
        t[0].text = pats[i].p;
        NUL(F, pats[i].code, cg_triggers_new(v, t, 1));
    }
    /* Valid but hostile patterns compile (or hit a limit) quickly. */
    const char *hostile[] = {"(a*)*b", "(a|a)*c", "(.*)*x", "((((((a*)*)*)*)*)*)", "", "^$",
                             "[^]", "(?=a)", "a{0,1000}"};
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        static const int codes[] = {CG_ERR_LIMIT, CG_ERR_PARSE, CG_ERR_UNSUPPORTED};
        t[0].kind = CG_TRIGGER_PATTERN;
        t[0].text = hostile[i];
        poison(F);
        cg_triggers *tr = cg_triggers_new(v, t, 1);
        CASE(tr != NULL ? untouched() : error_in(F, codes, 3), "pattern \"%s\"", hostile[i]);
        note(hostile[i], tr);
        if (tr) {
            /* Drive a lazy matcher a little. */
            cg_grammar *g = compile_ok(v, CG_KIND_GBNF, "root ::= [a-c]*");
            cg_matcher *m = cg_matcher_new_lazy(g, tr);
            CASE(m != NULL, "lazy matcher for \"%s\"", hostile[i]);
            uint32_t mask[2];
            for (int s = 0; m && s < 20; s++) {
                MUST(cg_fill_mask(m, mask, 2) == CG_OK, "fill");
                int32_t tok = has(mask, T_A) ? T_A : has(mask, T_C) ? T_C : T_EOS;
                if (cg_accept(m, tok) != CG_OK || tok == T_EOS)
                    break;
            }
            cg_matcher_free(m);
            cg_free(g);
            cg_triggers_free(tr);
        }
    }
    /* cg_matcher_new_lazy. */
    const char *FL = "cg_matcher_new_lazy";
    cg_grammar *g = compile_ok(v, CG_KIND_GBNF, "root ::= \"c\" [ab]*");
    NUL(FL, CG_ERR_INVALID_ARGUMENT, cg_matcher_new_lazy(g, NULL));
    NUL(FL, CG_ERR_INVALID_ARGUMENT, cg_matcher_new_lazy(NULL, none));
    /* Triggers of another vocabulary (same tokens, another object). */
    cg_vocab *other = tiny_vocab();
    t[0].kind = CG_TRIGGER_TOKEN;
    t[0].token = T_C;
    cg_triggers *foreign = cg_triggers_new(other, t, 1);
    MUST(foreign != NULL, "triggers of the other vocabulary");
    NUL(FL, CG_ERR_INVALID_ARGUMENT, cg_matcher_new_lazy(g, foreign));
    cg_triggers_free(foreign);
    cg_vocab_free(other);
    /* Triggers through a clone of the vocabulary are the same vocabulary. */
    cg_vocab *clone = cg_vocab_clone(v);
    cg_triggers *tc = cg_triggers_new(clone, t, 1);
    cg_vocab_free(clone);
    poison("");
    cg_matcher *m = cg_matcher_new_lazy(g, tc);
    CASE(m != NULL && untouched(), "triggers of a vocabulary clone");
    cg_triggers_free(tc);
    /* Awaiting: cg_is_triggered 0; the trigger token fires it. */
    int32_t index = 99;
    size_t start = 99;
    OKV(0, cg_is_triggered(m, &index, &start));
    CASE(index == 99 && start == 99, "cg_is_triggered wrote while awaiting");
    OK(cg_accept(m, T_A));
    OK(cg_accept(m, T_C));
    OKV(1, cg_is_triggered(m, &index, &start));
    CASE(index == 0, "trigger index %d", index);
    OKV(1, cg_is_triggered(m, NULL, NULL));
    ERR("cg_accept", CG_ERR_TOKEN_REJECTED, cg_accept(m, T_C));
    OK(cg_accept(m, T_B));
    OK(cg_rollback(m, 2)); /* back before the trigger token */
    OKV(0, cg_is_triggered(m, NULL, NULL));
    ERR("cg_rollback", CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 2));
    OK(cg_accept(m, T_EOS)); /* EOS before the trigger ends the sequence */
    OKV(1, cg_is_terminated(m));
    ERR("cg_accept", CG_ERR_TERMINATED, cg_accept(m, T_C));
    cg_reset(m);
    OKV(0, cg_is_triggered(m, NULL, NULL));
    cg_matcher_free(m);
    /* A lazy matcher with no triggers never fires. */
    m = cg_matcher_new_lazy(g, none);
    CASE(m != NULL, "a lazy matcher with no triggers");
    for (int i = 0; m && i < 10; i++)
        OK(cg_accept(m, i % 2 ? T_C : T_X));
    OKV(0, cg_is_triggered(m, NULL, NULL));
    cg_matcher_free(m);
    /* An eager matcher: triggered, index -1, start 0. */
    m = matcher_ok(g);
    index = 5;
    start = 5;
    OKV(1, cg_is_triggered(m, &index, &start));
    CASE(index == -1 && start == 0, "an eager matcher's trigger: %d at %zu", index, start);
    cg_matcher_free(m);
    cg_triggers_free(none);
    cg_free(g);
}

static void test_cache(cg_vocab *v)
{
    section = "grammar cache";
    const char *src = "root ::= [ab]+";
    size_t n = strlen(src);
    cg_grammar_cache *cache = cg_grammar_cache_new(0);
    CASE(cache != NULL, "cg_grammar_cache_new(0)");
    cg_grammar_cache *huge = cg_grammar_cache_new(SIZE_MAX);
    CASE(huge != NULL, "cg_grammar_cache_new(SIZE_MAX)");
    cg_grammar_cache_free(huge);

    const char *FC = "cg_grammar_cache_compile";
    cg_compile_options o = options(CG_KIND_GBNF);
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(NULL, v, src, n, &o));
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, NULL, src, n, &o));
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, v, NULL, n, &o));
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, v, src, SIZE_MAX, &o));
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, v, "root ::= \"\xff\"", 13, &o));
    NUL(FC, CG_ERR_PARSE, cg_grammar_cache_compile(cache, v, "root ::= (", 10, &o));
    cg_compile_options bad = o;
    bad.struct_size = 3;
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, v, src, n, &bad));
    bad = o;
    bad.kind = 77;
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, v, src, n, &bad));
    bad = o;
    bad.root = "\xff";
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, v, src, n, &bad));
    /* A source that compiled once, then the same bytes with a bad root. */
    poison("");
    cg_grammar *g1 = cg_grammar_cache_compile(cache, v, src, n, NULL);
    cg_grammar *g2 = cg_grammar_cache_compile(cache, v, src, n, &o);
    CASE(g1 != NULL && g2 != NULL && untouched(), "cache compile");
    NUL(FC, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_compile(cache, v, src, n, &bad));
    cg_free(g1);
    cg_free(g2);

    const char *FS = "cg_grammar_cache_get_stats";
    cg_grammar_cache_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    ERR(FS, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_get_stats(NULL, &s));
    ERR(FS, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_get_stats(cache, NULL));
    ERR(FS, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_get_stats(NULL, NULL));
    s.struct_size = 0;
    ERR(FS, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_get_stats(cache, &s));
    s.struct_size = 3;
    ERR(FS, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_get_stats(cache, &s));
    s.struct_size = sizeof s;
    OK(cg_grammar_cache_get_stats(cache, &s));
    CASE(s.entries == 1 && s.hits == 1 && s.misses >= 1 && s.budget == 256u << 20,
         "stats: %llu entries, %llu hits, %llu misses", (unsigned long long)s.entries,
         (unsigned long long)s.hits, (unsigned long long)s.misses);
    /* Smaller and larger structs: only the fields that fit are written. */
    unsigned char buf[256];
    memset(buf, 0xEE, sizeof buf);
    uint32_t size = 12; /* struct_size and half of `hits`: nothing fits */
    memcpy(buf, &size, 4);
    OK(cg_grammar_cache_get_stats(cache, (cg_grammar_cache_stats *)(void *)buf));
    CASE(buf[4] == 0xEE && buf[8] == 0xEE && buf[15] == 0xEE, "a 12-byte struct was written past");
    /* A newer header's larger struct: the fields this library does not
     * know read 0, nothing past its size is written. */
    size = sizeof buf - 16;
    memcpy(buf, &size, 4);
    OK(cg_grammar_cache_get_stats(cache, (cg_grammar_cache_stats *)(void *)buf));
    int zeros = 1;
    for (size_t k = sizeof(cg_grammar_cache_stats); k < size; k++)
        zeros &= buf[k] == 0;
    CASE(zeros, "a larger struct: the unknown fields are not 0");
    CASE(buf[size] == 0xEE, "a larger struct was written past its size");
    size = 4097;
    memcpy(buf, &size, 4);
    memset(buf + 4, 0xEE, sizeof buf - 4);
    ERR(FS, CG_ERR_INVALID_ARGUMENT,
        cg_grammar_cache_get_stats(cache, (cg_grammar_cache_stats *)(void *)buf));
    CASE(buf[8] == 0xEE, "a 4097-byte struct was written");

    const char *FT = "cg_grammar_cache_triggers";
    cg_trigger t;
    memset(&t, 0, sizeof t);
    t.kind = CG_TRIGGER_WORD;
    t.text = "ab";
    NUL(FT, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_triggers(NULL, v, &t, 1));
    NUL(FT, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_triggers(cache, NULL, &t, 1));
    NUL(FT, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_triggers(cache, v, NULL, 1));
    NUL(FT, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_triggers(cache, v, &t, SIZE_MAX));
    t.text = NULL;
    NUL(FT, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_triggers(cache, v, &t, 1));
    t.kind = CG_TRIGGER_PATTERN;
    t.text = "(?<=x)";
    NUL(FT, CG_ERR_PARSE, cg_grammar_cache_triggers(cache, v, &t, 1));
    t.kind = CG_TRIGGER_TOKEN;
    t.token = N_TINY;
    NUL(FT, CG_ERR_INVALID_ARGUMENT, cg_grammar_cache_triggers(cache, v, &t, 1));
    t.token = T_C;
    poison("");
    cg_triggers *tr = cg_grammar_cache_triggers(cache, v, &t, 1);
    CASE(tr != NULL && untouched(), "cached triggers");
    cg_triggers_free(tr);

    VOID_ERR("cg_grammar_cache_set_budget", cg_grammar_cache_set_budget(NULL, 1));
    VOID_ERR("cg_grammar_cache_forget_vocab", cg_grammar_cache_forget_vocab(NULL, v));
    VOID_ERR("cg_grammar_cache_forget_vocab", cg_grammar_cache_forget_vocab(cache, NULL));
    VOID_ERR("cg_grammar_cache_forget_vocab", cg_grammar_cache_forget_vocab(NULL, NULL));
    poison("cg_grammar_cache_clear");
    cg_grammar_cache_clear(NULL); /* "NULL is a no-op" */
    CASE(untouched() || error_is("cg_grammar_cache_clear", CG_ERR_INVALID_ARGUMENT),
         "cg_grammar_cache_clear(NULL)");
    /* Budgets: 1 byte keeps nothing, SIZE_MAX everything, 0 the default. */
    g1 = cg_grammar_cache_compile(cache, v, src, n, NULL);
    poison("");
    cg_grammar_cache_set_budget(cache, 1);
    s.struct_size = sizeof s;
    OK(cg_grammar_cache_get_stats(cache, &s));
    CASE(s.entries == 0 && s.bytes == 0 && s.budget == 1 && untouched(), "a 1-byte budget");
    cg_grammar_cache_set_budget(cache, SIZE_MAX);
    OK(cg_grammar_cache_get_stats(cache, &s));
    CASE(s.budget == (uint64_t)SIZE_MAX, "budget SIZE_MAX");
    cg_grammar_cache_set_budget(cache, 0);
    OK(cg_grammar_cache_get_stats(cache, &s));
    CASE(s.budget == 256u << 20, "budget 0 is the default");
    /* The grammar handed out outlives the cache. */
    g2 = cg_grammar_cache_compile(cache, v, src, n, NULL);
    cg_grammar_cache_forget_vocab(cache, v);
    cg_grammar_cache_clear(cache);
    cg_grammar_cache_free(cache);
    cg_matcher *m = matcher_ok(g1);
    OK(cg_accept(m, T_AB));
    cg_matcher_free(m);
    cg_free(g1);
    cg_free(g2);
}

/* ------------------------------------------------------------------------
 * The real Llama 3 vocabulary. */

static void test_llama3(const char *tokenizer)
{
    section = "llama3";
    cg_vocab *v = cg_vocab_from_tokenizer_json(tokenizer);
    MUST(v != NULL, "cannot load %s: %s", tokenizer, cg_last_error());
    const int32_t n = (int32_t)cg_vocab_size(v);
    MUST(n == 128256, "not the Llama 3 tokenizer: %d tokens", n);
    int n_eos = cg_vocab_eos_tokens(v, NULL, 0);
    MUST(n_eos >= 1, "no EOS");
    int32_t eos = -1;
    cg_vocab_eos_tokens(v, &eos, 1);

    cg_grammar *any = compile_ok(v, CG_KIND_ANY_JSON, "");
    cg_grammar *schema = compile_ok(v, CG_KIND_JSON_SCHEMA,
                                    "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": "
                                    "\"integer\"}}, \"required\": [\"n\"]}");
    const size_t W = cg_mask_words(any);
    OKV(4008, (int)W);
    uint32_t *mask = xmalloc((W + 1) * sizeof *mask);
    uint32_t *mask2 = xmalloc((W + 1) * sizeof *mask2);
    cg_matcher *m = matcher_ok(schema);
    mask[W - 1] = SENTINEL;
    ERR("cg_fill_mask", CG_ERR_INVALID_ARGUMENT, cg_fill_mask(m, mask, W - 1));
    ERR("cg_fill_mask", CG_ERR_INVALID_ARGUMENT, cg_fill_mask(m, mask, 32));
    CASE(mask[W - 1] == SENTINEL, "a short mask was written at its end");
    mask[W] = SENTINEL;
    OK(cg_fill_mask(m, mask, W + 1));
    CASE(mask[W] == SENTINEL, "a longer mask was written past the vocabulary");
    /* Ids out of range, special tokens, EOS too early. */
    const int32_t bad[] = {n, n + 1, 200000, INT32_MAX, -1, INT32_MIN};
    for (int i = 0; i < 6; i++)
        ERR("cg_accept", CG_ERR_INVALID_ARGUMENT, cg_accept(m, bad[i]));
    const int32_t refused[] = {128000, 128255, eos, 0 /* "!" */};
    for (int i = 0; i < 4; i++)
        ERR("cg_accept", CG_ERR_TOKEN_REJECTED, cg_accept(m, refused[i]));
    OK(cg_fill_mask(m, mask2, W));
    CASE(memcmp(mask, mask2, W * sizeof *mask) == 0, "refused tokens changed the mask");
    OK(cg_accept_bytes(m, (const uint8_t *)"{\"n\": 4", 7));
    ERR("cg_accept_bytes", CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"2\xff", 2));
    ERR("cg_accept_bytes", CG_ERR_TOKEN_REJECTED, cg_accept_bytes(m, (const uint8_t *)"2\0}", 3));
    OK(cg_accept_bytes(m, (const uint8_t *)"2}", 2));
    OKV(1, cg_is_accepting(m));
    OK(cg_accept(m, eos));
    ERR("cg_accept", CG_ERR_TERMINATED, cg_accept(m, eos));
    ERR("cg_accept", CG_ERR_TERMINATED, cg_accept(m, 90));
    ERR("cg_accept", CG_ERR_INVALID_ARGUMENT, cg_accept(m, n));
    ERR("cg_rollback", CG_ERR_INVALID_ARGUMENT, cg_rollback(m, 4));
    cg_matcher_free(m);

    /* A batch over two grammars: eager, lazy, terminated; thread counts
     * from 0 to UINT32_MAX all give the single masks. */
    cg_trigger t[3];
    memset(t, 0, sizeof t);
    t[0].kind = CG_TRIGGER_WORD;
    t[0].text = "<tool_call>";
    t[1].kind = CG_TRIGGER_PATTERN;
    t[1].text = "(?:^|\n)```json\\s*(\\{)";
    t[2].kind = CG_TRIGGER_TOKEN;
    t[2].token = 128010;
    cg_triggers *tr = cg_triggers_new(v, t, 3);
    CASE(tr != NULL, "Llama 3 triggers");
    enum { N = 12 };
    cg_matcher *ms[N];
    for (int i = 0; i < N; i++) {
        cg_grammar *g = i % 3 == 0 ? any : schema;
        ms[i] = tr && i % 4 == 1 ? cg_matcher_new_lazy(g, tr) : cg_matcher_new(g);
        MUST(ms[i] != NULL, "matcher %d", i);
        for (int k = 0; k < i % 5; k++)
            cg_accept_bytes(ms[i], (const uint8_t *)"{\"n\": 1", 1 + (size_t)k);
    }
    cg_accept_bytes(ms[3], (const uint8_t *)"true", 4);
    cg_accept(ms[3], eos);
    uint32_t *masks = xmalloc(N * W * sizeof *masks);
    uint32_t *want = xmalloc(N * W * sizeof *want);
    for (int i = 0; i < N; i++)
        MUST(cg_fill_mask(ms[i], want + i * W, W) == CG_OK, "fill %d", i);
    const uint32_t threads[] = {0, 1, 2, 5, N, 64, UINT32_MAX};
    for (int k = 0; k < 7; k++) {
        memset(masks, 0x5A, N * W * sizeof *masks);
        OK(cg_fill_masks(ms, N, masks, W, threads[k]));
        CASE(memcmp(masks, want, N * W * sizeof *masks) == 0, "batch with %u threads differs",
             threads[k]);
    }
    ERR("cg_fill_masks", CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, masks, W - 1, 0));
    cg_matcher *last = ms[N - 1];
    ms[N - 1] = ms[0];
    ERR("cg_fill_masks", CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, masks, W, 0));
    ms[N - 1] = NULL;
    ERR("cg_fill_masks", CG_ERR_INVALID_ARGUMENT, cg_fill_masks(ms, N, masks, W, 0));
    ms[N - 1] = last;
    for (int i = 0; i < N; i++)
        cg_matcher_free(ms[i]);

    /* A grammar with token references out of range; with an EOS branch. */
    const char *refs[] = {"root ::= \"a\" | <[128256]>", "root ::= \"a\" | <[4294967295]>",
                          "root ::= \"a\" | <[-1]>"};
    for (int i = 0; i < 3; i++) {
        static const int codes[] = {CG_ERR_PARSE};
        poison("cg_compile");
        cg_grammar *g = cg_compile(v, refs[i], strlen(refs[i]), NULL);
        CASE(g != NULL ? untouched() : error_in("cg_compile", codes, 1), "%s", refs[i]);
        note(refs[i], g);
        if (g) {
            m = matcher_ok(g);
            OK(cg_fill_mask(m, mask, W));
            CASE(popcount(mask, W) >= 1 && !has(mask, 128255), "%s: mask", refs[i]);
            ERR("cg_accept", CG_ERR_INVALID_ARGUMENT, cg_accept(m, 128256));
            cg_matcher_free(m);
            cg_free(g);
        }
    }

    /* The compile-time limit, on a grammar that takes longer than 1 ms. */
    cg_compile_options lim = options(CG_KIND_JSON_SCHEMA);
    lim.max_compile_ms = 1;
    char *big = xmalloc(64 * 1024);
    char *p = big + sprintf(big, "{\"enum\": [");
    for (int i = 0; i < 2000; i++)
        p += sprintf(p, "%s\"value number %d\"", i ? ", " : "", i * 7919);
    p += sprintf(p, "]}");
    NUL("cg_compile", CG_ERR_LIMIT, cg_compile(v, big, (size_t)(p - big), &lim));
    CASE(strstr(cg_last_error(), "1 ms") || strstr(cg_last_error(), "max_compile_ms") ||
             strstr(cg_last_error(), "time"),
         "the limit is not named");
    free(big);

    cg_triggers_free(tr);
    free(masks);
    free(want);
    free(mask);
    free(mask2);
    cg_free(any);
    cg_free(schema);
    cg_vocab_free(v);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TOKENIZER.json (the Llama 3 tokenizer)\n", argv[0]);
        return 2;
    }
    MUST(make_temp_dir(tmpdir, sizeof tmpdir) == 0, "cannot make a temporary directory: %s",
         strerror(errno));

    test_library();
    test_vocab_new();
    cg_vocab *v = tiny_vocab();
    test_vocab_accessors(v);
    test_vocab_set_eos();
    test_vocab_files();
    test_gguf_files();
    test_compile(v);
    test_json_options(v);
    test_matcher_nulls();
    test_fill_mask(v);
    test_accept(v);
    test_accept_bytes(v);
    test_rollback(v);
    test_forced(v);
    test_clone_and_ownership(v);
    test_fill_masks(v);
    test_triggers(v);
    test_cache(v);
    cg_vocab_free(v);
    test_llama3(argv[1]);

    remove_files();

    /* Flushed now: a leak checker may end the process without flushing. */
    if (n_failed) {
        printf("%d of %d cases FAILED\n", n_failed, n_cases);
        fflush(stdout);
        return 1;
    }
    printf("%d cases passed\n", n_cases);
    fflush(stdout);
    return 0;
}
