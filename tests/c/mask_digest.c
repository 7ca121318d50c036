/*
 * mask_digest: one 64-bit digest per grammar of a fixed corpus, over every
 * mask of a walk through a known text, to prove that masks are
 * bit-identical on every platform cgram is built for.
 *
 *   mask_digest TOKENIZER.json MANIFEST
 *
 * TOKENIZER.json is the Llama 3 tokenizer.json, MANIFEST is
 * tests/data/mask-digest/cases.txt (its README describes the format; file
 * names in it are relative to its directory). The same program, built
 * natively, with mingw-w64 (run under wine) and for aarch64 (run under
 * qemu-user), must print the same bytes; the scripts that build and run it
 * diff the outputs.
 *
 * Each case compiles a grammar (GBNF, JSON Schema, regex or any JSON, with
 * the options its flags give) and walks a text through it as
 * c-examples/walk.c does: at each step the mask is filled, the longest
 * allowed token that spells the next bytes of the text is accepted; at the
 * end the final mask is taken, the matcher must be accepting or not as the
 * manifest says, and an accepting one takes EOS. The digest of a case is a
 * 64-bit FNV-1a over, at each step, the mask words (as little-endian
 * bytes), the tokens cg_forced_tokens gives, cg_is_accepting and the token
 * chosen; then the final mask, cg_is_accepting and cg_is_terminated. Other
 * modes, chosen by the manifest:
 *   lazy=FILE  a lazy matcher (cg_triggers_new, cg_matcher_new_lazy) with
 *              the triggers of FILE; cg_is_triggered goes into the digest
 *              at each step, and the trigger must have fired by the end.
 *   bytes=N    the text is first fed N bytes at a time by cg_accept_bytes
 *              (each chunk's mask into the digest), all rolled back with
 *              cg_rollback (the mask must be the initial one again), then
 *              walked by tokens, with every third token accepted, rolled
 *              back (same mask as before it) and accepted again, and EOS
 *              rolled back at the end.
 *   batch      the walks of earlier cases run again in lock step, every
 *              round's masks filled both by cg_fill_masks on two threads
 *              and one by one by cg_fill_mask: the two must be equal, and
 *              each walk's digest must be the one its own case printed.
 *
 * Output: one line per case, "NAME STEPS DIGEST ACCEPTING" (STEPS the
 * tokens accepted before EOS, DIGEST 16 hex digits, ACCEPTING 1 or 0),
 * then "total DIGEST" over all the lines. Nothing printed depends on the
 * platform: no addresses, times or thread counts, and no '\r' on Windows.
 *
 * With MASK_DIGEST_TRACE set in the environment, every step also goes to
 * stderr with the digest of its mask alone, to find the first step at which
 * two platforms part.
 *
 * Exit status: 0 when every case compiled and walked as the manifest
 * expects; 1 when one did not (the case's line then says FAILED and
 * stderr says why); 2 for bad arguments, an unreadable manifest or
 * tokenizer.
 */
/* MinGW: a C99 printf rather than msvcrt's (only %s, %u, %lu and %d are
 * used, but this keeps them standard). */
#define __USE_MINGW_ANSI_STDIO 1

#include <cgram.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#endif

/* ------------------------------------------------------------------------
 * Small utilities. */

static void fatal(const char *fmt, ...)
{
    va_list ap;
    fputs("mask_digest: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        fatal("out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* The whole file, binary (no newline translation on Windows), with a NUL
 * after its `*len` bytes; NULL when it cannot be read. */
static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *buf = xmalloc(cap);
    for (;;) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        cap *= 2;
        unsigned char *grown = realloc(buf, cap);
        if (!grown)
            fatal("out of memory");
        buf = grown;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* 16 lowercase hex digits, by hand: printf's 64-bit conversions differ
 * between C libraries (msvcrt's I64x). */
static void hex64(uint64_t v, char out[17])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--) {
        out[i] = digits[v & 15];
        v >>= 4;
    }
    out[16] = '\0';
}

/* MASK_DIGEST_TRACE set (to anything): every step on stderr. */
static int trace;

/* ------------------------------------------------------------------------
 * FNV-1a, 64-bit. Every value is fed as explicit little-endian bytes, never
 * as raw memory, so the digest does not depend on the host's byte order. */

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t fnv_u32(uint64_t h, uint32_t v)
{
    unsigned char b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return fnv_bytes(h, b, 4);
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return fnv_bytes(h, b, 8);
}

static uint64_t fnv_mask(uint64_t h, const uint32_t *mask, size_t n_words)
{
    for (size_t w = 0; w < n_words; w++)
        h = fnv_u32(h, mask[w]);
    return h;
}

/* ------------------------------------------------------------------------
 * The vocabulary, indexed to find the tokens that spell a prefix of a text
 * without scanning all 128k tokens at every step: tokens of two bytes or
 * more are bucketed by their first two bytes, in increasing id order. */

static cg_vocab *vocab;
static uint32_t n_vocab;
static size_t n_words;
static const uint8_t **tok_bytes;
static size_t *tok_len;
static uint32_t *bucket_start; /* 65537 entries into bucket_ids */
static int32_t *bucket_ids;
static int32_t *single_ids; /* one-byte tokens, by their byte */
static size_t *single_start; /* 257 entries into single_ids */
static int32_t eos_token;

static void load_vocab(const char *path)
{
    vocab = cg_vocab_from_tokenizer_json(path);
    if (!vocab)
        fatal("cg_vocab_from_tokenizer_json(%s) failed: %s", path, cg_last_error());
    n_vocab = cg_vocab_size(vocab);
    n_words = ((size_t)n_vocab + 31) / 32;
    tok_bytes = xmalloc(n_vocab * sizeof *tok_bytes);
    tok_len = xmalloc(n_vocab * sizeof *tok_len);
    bucket_start = xmalloc(65537 * sizeof *bucket_start);
    single_start = xmalloc(257 * sizeof *single_start);
    memset(bucket_start, 0, 65537 * sizeof *bucket_start);
    memset(single_start, 0, 257 * sizeof *single_start);
    size_t n_single = 0;
    for (uint32_t t = 0; t < n_vocab; t++) {
        tok_bytes[t] = cg_vocab_token_bytes(vocab, (int32_t)t, &tok_len[t]);
        if (!tok_bytes[t])
            fatal("cg_vocab_token_bytes(%u) failed: %s", t, cg_last_error());
        if (tok_len[t] >= 2)
            bucket_start[((unsigned)tok_bytes[t][0] << 8 | tok_bytes[t][1]) + 1]++;
        else if (tok_len[t] == 1) {
            single_start[tok_bytes[t][0] + 1]++;
            n_single++;
        }
    }
    for (size_t k = 0; k < 65536; k++)
        bucket_start[k + 1] += bucket_start[k];
    for (size_t k = 0; k < 256; k++)
        single_start[k + 1] += single_start[k];
    bucket_ids = xmalloc(bucket_start[65536] * sizeof *bucket_ids);
    single_ids = xmalloc(n_single * sizeof *single_ids);
    uint32_t *fill = xmalloc(65536 * sizeof *fill);
    size_t sfill[256];
    memcpy(fill, bucket_start, 65536 * sizeof *fill);
    memcpy(sfill, single_start, sizeof sfill);
    for (uint32_t t = 0; t < n_vocab; t++) {
        if (tok_len[t] >= 2)
            bucket_ids[fill[(unsigned)tok_bytes[t][0] << 8 | tok_bytes[t][1]]++] = (int32_t)t;
        else if (tok_len[t] == 1)
            single_ids[sfill[tok_bytes[t][0]]++] = (int32_t)t;
    }
    free(fill);

    int n_eos = cg_vocab_eos_tokens(vocab, NULL, 0);
    if (n_eos <= 0)
        fatal("the tokenizer has no end-of-sequence token");
    int32_t *eos = xmalloc((size_t)n_eos * sizeof *eos);
    cg_vocab_eos_tokens(vocab, eos, (size_t)n_eos);
    eos_token = eos[0]; /* the lowest */
    free(eos);
}

static int allowed(const uint32_t *mask, int32_t token)
{
    return (mask[(uint32_t)token / 32] >> ((uint32_t)token % 32)) & 1u;
}

/* The longest token allowed by `mask` whose bytes are a prefix of `text`
 * (the lowest id among equally long ones), or -1. */
static int32_t longest_prefix_token(const uint32_t *mask, const unsigned char *text, size_t rem,
                                    size_t *len)
{
    int32_t best = -1;
    size_t best_len = 0;
    if (rem >= 2) {
        unsigned key = (unsigned)text[0] << 8 | text[1];
        for (uint32_t i = bucket_start[key]; i < bucket_start[key + 1]; i++) {
            int32_t t = bucket_ids[i];
            size_t n = tok_len[t];
            if (n > best_len && n <= rem && allowed(mask, t) && memcmp(tok_bytes[t], text, n) == 0) {
                best = t;
                best_len = n;
            }
        }
    }
    if (best < 0 && rem >= 1) {
        for (size_t i = single_start[text[0]]; i < single_start[text[0] + 1]; i++) {
            if (allowed(mask, single_ids[i])) {
                best = single_ids[i];
                best_len = 1;
                break;
            }
        }
    }
    *len = best_len;
    return best;
}

/* ------------------------------------------------------------------------
 * The manifest. */

enum expect { EXPECT_ACCEPT, EXPECT_PREFIX };

struct case_def {
    char *name;
    int batch;             /* kind "batch" */
    uint32_t kind;         /* CG_KIND_* */
    uint32_t flags;        /* CG_JSON_* / CG_GBNF_* */
    uint32_t indent;       /* indent=N */
    uint32_t max_ws;       /* max_ws=N */
    char *root;            /* root=NAME */
    char *triggers;        /* lazy=FILE, resolved */
    size_t bytes_chunk;    /* bytes=N */
    char *grammar;         /* resolved path; batch: the case names */
    char *text;            /* resolved path */
    enum expect expect;
    int line;
    /* Filled when the case has run. */
    int ran_ok;
    uint64_t digest;
};

static char *manifest_dir; /* with its trailing separator, or "" */

static const char *manifest_path; /* for messages */

/* A file name of the manifest: relative to its directory, unless absolute
 * ("/x", "\\x", "C:..."). */
static char *resolve(const char *name)
{
    int absolute = name[0] == '/' || name[0] == '\\' ||
                   (((name[0] | 0x20) >= 'a' && (name[0] | 0x20) <= 'z') && name[1] == ':');
    size_t a = absolute ? 0 : strlen(manifest_dir), b = strlen(name);
    char *p = xmalloc(a + b + 1);
    memcpy(p, manifest_dir, a);
    memcpy(p + a, name, b + 1);
    return p;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*end != '\0' || v > max)
        return 0;
    *out = v;
    return 1;
}

/* Flags: "-" or a comma-separated list (see the corpus README). */
static void parse_flags(struct case_def *c, char *s, const char *where)
{
    if (strcmp(s, "-") == 0)
        return;
    for (char *item = s; item;) {
        char *next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        char *value = strchr(item, '=');
        if (value)
            *value++ = '\0';
        unsigned long v;
        if (strcmp(item, "compact") == 0 && !value)
            c->flags |= CG_JSON_COMPACT;
        else if (strcmp(item, "no_extra") == 0 && !value)
            c->flags |= CG_JSON_NO_EXTRA_PROPERTIES;
        else if (strcmp(item, "left_rec") == 0 && !value)
            c->flags |= CG_GBNF_ALLOW_LEFT_RECURSION;
        else if (strcmp(item, "ordered") == 0 && !value)
            c->flags |= CG_JSON_ORDERED_PROPERTIES;
        else if (strcmp(item, "strict_int") == 0 && !value)
            c->flags |= CG_JSON_STRICT_INTEGERS;
        else if (strcmp(item, "lenient") == 0 && !value)
            c->flags |= CG_JSON_LENIENT;
        else if (strcmp(item, "indent") == 0 && value && parse_uint(value, 16, &v))
            c->indent = (uint32_t)v;
        else if (strcmp(item, "max_ws") == 0 && value && parse_uint(value, 1000000, &v))
            c->max_ws = (uint32_t)v;
        else if (strcmp(item, "root") == 0 && value && *value)
            c->root = xstrdup(value);
        else if (strcmp(item, "lazy") == 0 && value && *value)
            c->triggers = resolve(value);
        else if (strcmp(item, "bytes") == 0 && value && parse_uint(value, 1000000, &v) && v > 0)
            c->bytes_chunk = v;
        else
            fatal("%s: unknown or malformed flag \"%s%s%s\"", where, item, value ? "=" : "",
                  value ? value : "");
        item = next;
    }
}

/* Splits `line` in place at tabs into at most `max` fields. */
static int split_tabs(char *line, char **fields, int max)
{
    int n = 0;
    for (char *p = line;;) {
        if (n == max)
            return max + 1;
        fields[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            return n;
        *tab = '\0';
        p = tab + 1;
    }
}

static struct case_def *cases;
static int n_cases;

static struct case_def *find_case(const char *name, int before)
{
    for (int i = 0; i < before; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    return NULL;
}

static void load_manifest(const char *path)
{
    manifest_path = path;
    /* The directory part, for either separator (the Windows build gets
     * both kinds of path). */
    const char *slash = strrchr(path, '/'), *bslash = strrchr(path, '\\');
    if (bslash && (!slash || bslash > slash))
        slash = bslash;
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    manifest_dir = xmalloc(dir_len + 1);
    memcpy(manifest_dir, path, dir_len);
    manifest_dir[dir_len] = '\0';

    size_t len;
    char *text = (char *)read_file(path, &len);
    if (!text)
        fatal("cannot read the manifest %s", path);
    if (memchr(text, '\0', len))
        fatal("%s: NUL byte in the manifest", path);
    int cap = 64;
    cases = xmalloc((size_t)cap * sizeof *cases);
    int line_no = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        line_no++;
        /* A checkout that turned LF into CRLF still parses. */
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        if (n == 0 || line[0] == '#') {
            line = nl;
            continue;
        }
        char where[128];
        snprintf(where, sizeof where, "%.100s:%d", path, line_no);
        char *f[7];
        if (split_tabs(line, f, 7) != 6)
            fatal("%s: want 6 tab-separated fields: name kind flags grammar text expect", where);
        if (n_cases == cap) {
            cap *= 2;
            struct case_def *grown = realloc(cases, (size_t)cap * sizeof *cases);
            if (!grown)
                fatal("out of memory");
            cases = grown;
        }
        struct case_def *c = &cases[n_cases];
        memset(c, 0, sizeof *c);
        c->line = line_no;
        if (!*f[0] || strchr(f[0], ' ') || strcmp(f[0], "total") == 0)
            fatal("%s: bad case name \"%s\"", where, f[0]);
        if (find_case(f[0], n_cases))
            fatal("%s: case \"%s\" named twice", where, f[0]);
        c->name = xstrdup(f[0]);
        if (strcmp(f[1], "gbnf") == 0)
            c->kind = CG_KIND_GBNF;
        else if (strcmp(f[1], "json_schema") == 0)
            c->kind = CG_KIND_JSON_SCHEMA;
        else if (strcmp(f[1], "regex") == 0)
            c->kind = CG_KIND_REGEX;
        else if (strcmp(f[1], "any_json") == 0)
            c->kind = CG_KIND_ANY_JSON;
        else if (strcmp(f[1], "batch") == 0)
            c->batch = 1;
        else
            fatal("%s: unknown kind \"%s\"", where, f[1]);
        parse_flags(c, f[2], where);
        if (strcmp(f[5], "accept") == 0)
            c->expect = EXPECT_ACCEPT;
        else if (strcmp(f[5], "prefix") == 0)
            c->expect = EXPECT_PREFIX;
        else
            fatal("%s: expect is \"accept\" or \"prefix\", not \"%s\"", where, f[5]);
        if (c->batch) {
            /* The walks of earlier plain or lazy cases, by name. */
            if (strcmp(f[2], "-") != 0 || strcmp(f[4], "-") != 0 || c->expect != EXPECT_ACCEPT)
                fatal("%s: a batch case has flags \"-\", text \"-\" and expects \"accept\"", where);
            c->grammar = xstrdup(f[3]);
            char *names = xstrdup(f[3]);
            int count = 0;
            for (char *p = strtok(names, ","); p; p = strtok(NULL, ",")) {
                struct case_def *d = find_case(p, n_cases);
                if (!d || d->batch || d->bytes_chunk)
                    fatal("%s: \"%s\" is not an earlier case without bytes= or batch", where, p);
                count++;
            }
            if (count < 2)
                fatal("%s: a batch needs at least two cases", where);
            free(names);
        } else {
            if (c->kind == CG_KIND_ANY_JSON && strcmp(f[3], "-") == 0)
                c->grammar = NULL;
            else
                c->grammar = resolve(f[3]);
            c->text = resolve(f[4]);
        }
        n_cases++;
        line = nl;
    }
    free(text);
    if (n_cases == 0)
        fatal("%s: no cases", path);
}

/* ------------------------------------------------------------------------
 * One walk: a matcher following a text. */

struct walk {
    const struct case_def *c;
    cg_grammar *grammar;
    cg_triggers *triggers;
    cg_matcher *m;
    unsigned char *text;
    size_t len, pos;
    unsigned long steps;
    uint64_t h;
    int rollback_checks; /* bytes mode: undo and redo every third token */
    int finished, failed, accepting;
    uint32_t *scratch;   /* a second mask */
};

static const char *in_batch; /* the batch case running, for messages */

static void walk_fail(struct walk *w, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "mask_digest: case %s (%s:%d)%s%s: ", w->c->name, manifest_path, w->c->line,
            in_batch ? " in batch " : "", in_batch ? in_batch : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    w->failed = 1;
    w->finished = 1;
}

static void walk_fail_cgram(struct walk *w, const char *call)
{
    walk_fail(w, "%s failed at step %lu: %s", call, w->steps, cg_last_error());
}

/* Triggers file: lines "word<TAB>TEXT", "pattern<TAB>TEXT" or
 * "token<TAB>ID"; '#' starts a comment line. */
static cg_triggers *load_triggers(struct walk *w, const char *path)
{
    size_t len;
    char *text = (char *)read_file(path, &len);
    if (!text) {
        walk_fail(w, "cannot read %s", path);
        return NULL;
    }
    cg_trigger list[16];
    size_t n = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        size_t k = strlen(line);
        if (k > 0 && line[k - 1] == '\r')
            line[k - 1] = '\0';
        if (line[0] && line[0] != '#') {
            char *tab = strchr(line, '\t');
            unsigned long v;
            if (!tab || n == 16) {
                walk_fail(w, "%s: want \"word|pattern|token<TAB>TEXT\" lines (16 at most)", path);
                free(text);
                return NULL;
            }
            *tab = '\0';
            memset(&list[n], 0, sizeof list[n]);
            list[n].text = tab + 1;
            if (strcmp(line, "word") == 0)
                list[n].kind = CG_TRIGGER_WORD;
            else if (strcmp(line, "pattern") == 0)
                list[n].kind = CG_TRIGGER_PATTERN;
            else if (strcmp(line, "token") == 0 && parse_uint(tab + 1, INT32_MAX, &v)) {
                list[n].kind = CG_TRIGGER_TOKEN;
                list[n].token = (int32_t)v;
            } else {
                walk_fail(w, "%s: unknown trigger kind \"%s\"", path, line);
                free(text);
                return NULL;
            }
            n++;
        }
        line = nl;
    }
    cg_triggers *t = cg_triggers_new(vocab, list, n);
    if (!t)
        walk_fail_cgram(w, "cg_triggers_new");
    free(text); /* the strings are only read during the call */
    return t;
}

static void walk_open(struct walk *w, const struct case_def *c)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    w->h = FNV_OFFSET;
    w->scratch = xmalloc(n_words * sizeof *w->scratch);
    w->text = read_file(c->text, &w->len);
    if (!w->text) {
        walk_fail(w, "cannot read %s", c->text);
        return;
    }
    size_t src_len = 0;
    unsigned char *src = NULL;
    if (c->grammar) {
        src = read_file(c->grammar, &src_len);
        if (!src) {
            walk_fail(w, "cannot read %s", c->grammar);
            return;
        }
    }
    cg_compile_options o;
    cg_compile_options_init(&o);
    o.kind = c->kind;
    o.flags = c->flags;
    o.root = c->root;
    o.json_indent = c->indent;
    o.json_max_whitespace = c->max_ws;
    /* No time limit: a slow emulator must not fail a compile that the
     * native build passes (the step limit, counted in steps, stays). */
    o.max_compile_ms = 0;
    w->grammar = cg_compile(vocab, src ? (const char *)src : "", src_len, &o);
    free(src);
    if (!w->grammar) {
        walk_fail_cgram(w, "cg_compile");
        return;
    }
    if (cg_mask_words(w->grammar) != n_words) {
        walk_fail(w, "cg_mask_words is %lu, not %lu", (unsigned long)cg_mask_words(w->grammar),
                  (unsigned long)n_words);
        return;
    }
    if (c->triggers) {
        w->triggers = load_triggers(w, c->triggers);
        if (!w->triggers)
            return;
        w->m = cg_matcher_new_lazy(w->grammar, w->triggers);
    } else {
        w->m = cg_matcher_new(w->grammar);
    }
    if (!w->m)
        walk_fail_cgram(w, c->triggers ? "cg_matcher_new_lazy" : "cg_matcher_new");
}

static void walk_close(struct walk *w)
{
    cg_matcher_free(w->m);
    cg_triggers_free(w->triggers);
    cg_free(w->grammar);
    free(w->text);
    free(w->scratch);
}

/* What the matcher says besides its mask: whether it is accepting and, for
 * a lazy one, whether (and by which trigger, where) it fired. */
static int hash_state(struct walk *w)
{
    int acc = cg_is_accepting(w->m);
    if (acc < 0) {
        walk_fail_cgram(w, "cg_is_accepting");
        return -1;
    }
    w->h = fnv_u32(w->h, (uint32_t)acc);
    if (w->c->triggers) {
        int32_t index = -2;
        size_t start = 0;
        int fired = cg_is_triggered(w->m, &index, &start);
        if (fired < 0) {
            walk_fail_cgram(w, "cg_is_triggered");
            return -1;
        }
        w->h = fnv_u32(w->h, (uint32_t)fired);
        if (fired) {
            w->h = fnv_u32(w->h, (uint32_t)index);
            w->h = fnv_u64(w->h, (uint64_t)start);
        }
    }
    return acc;
}

/* One step, given the matcher's current mask: into the digest with the
 * forced tokens and the state, then either the next token of the text or,
 * at its end, the final checks. */
static void walk_step(struct walk *w, const uint32_t *mask)
{
    w->h = fnv_mask(w->h, mask, n_words);
    int32_t forced[64];
    int n_forced = cg_forced_tokens(w->m, forced, 64);
    if (n_forced < 0 || n_forced > 64) {
        walk_fail_cgram(w, "cg_forced_tokens");
        return;
    }
    w->h = fnv_u32(w->h, (uint32_t)n_forced);
    for (int i = 0; i < n_forced; i++) {
        if (forced[i] < 0 || (uint32_t)forced[i] >= n_vocab) {
            walk_fail(w, "cg_forced_tokens gave token %d at step %lu", forced[i], w->steps);
            return;
        }
        w->h = fnv_u32(w->h, (uint32_t)forced[i]);
    }
    int acc = hash_state(w);
    if (acc < 0)
        return;

    if (w->pos < w->len) {
        size_t n;
        int32_t t = longest_prefix_token(mask, w->text + w->pos, w->len - w->pos, &n);
        if (t < 0) {
            walk_fail(w, "no allowed token spells the text at step %lu, byte %lu", w->steps,
                      (unsigned long)w->pos);
            return;
        }
        /* Forced text is what any continuation starts with: the text
         * must agree with it as far as both go. */
        size_t off = 0;
        for (int i = 0; i < n_forced && w->pos + off < w->len; i++) {
            int32_t f = forced[i];
            size_t k = tok_len[f] < w->len - w->pos - off ? tok_len[f] : w->len - w->pos - off;
            if (memcmp(tok_bytes[f], w->text + w->pos + off, k) != 0) {
                walk_fail(w, "forced token %d does not spell the text at step %lu", f, w->steps);
                return;
            }
            off += tok_len[f];
        }
        w->h = fnv_u32(w->h, (uint32_t)t);
        if (trace) {
            char hex[17];
            hex64(fnv_mask(FNV_OFFSET, mask, n_words), hex);
            fprintf(stderr, "%s step %lu: mask %s, %d forced, accepting %d, token %d (%lu bytes)\n",
                    w->c->name, w->steps, hex, n_forced, acc, t, (unsigned long)n);
        }
        if (cg_accept(w->m, t) != CG_OK) {
            walk_fail_cgram(w, "cg_accept");
            return;
        }
        if (w->rollback_checks && w->steps % 3 == 2) {
            /* Speculative decoding's undo: the matcher must be back where
             * it was, to the bit. */
            if (cg_rollback(w->m, 1) != CG_OK) {
                walk_fail_cgram(w, "cg_rollback");
                return;
            }
            if (cg_fill_mask(w->m, w->scratch, n_words) != CG_OK) {
                walk_fail_cgram(w, "cg_fill_mask");
                return;
            }
            if (memcmp(w->scratch, mask, n_words * sizeof *mask) != 0) {
                walk_fail(w, "the mask after cg_rollback differs at step %lu", w->steps);
                return;
            }
            if (cg_accept(w->m, t) != CG_OK) {
                walk_fail_cgram(w, "cg_accept");
                return;
            }
        }
        w->pos += n;
        w->steps++;
        return;
    }

    /* The text is walked: the final mask is in the digest. */
    w->finished = 1;
    w->accepting = acc;
    if (trace) {
        char hex[17];
        int32_t index = -2;
        size_t start = 0;
        int fired = cg_is_triggered(w->m, &index, &start);
        hex64(fnv_mask(FNV_OFFSET, mask, n_words), hex);
        fprintf(stderr, "%s end: mask %s, %d forced, accepting %d, triggered %d (index %d, byte %lu)\n",
                w->c->name, hex, n_forced, acc, fired, index, (unsigned long)start);
    }
    if (acc != (w->c->expect == EXPECT_ACCEPT)) {
        walk_fail(w, "the walked text %s", acc ? "is accepted, expected a prefix"
                                               : "is only a prefix, expected accepted");
        return;
    }
    if (w->c->triggers) {
        if (cg_is_triggered(w->m, NULL, NULL) != 1) {
            walk_fail(w, "the lazy matcher never fired");
            return;
        }
    }
    if (allowed(mask, eos_token) != acc) {
        walk_fail(w, "EOS is %sallowed while the matcher is %saccepting", acc ? "not " : "",
                  acc ? "" : "not ");
        return;
    }
    if (acc) {
        if (cg_accept(w->m, eos_token) != CG_OK) {
            walk_fail_cgram(w, "cg_accept(EOS)");
            return;
        }
        int term = cg_is_terminated(w->m);
        if (term != 1) {
            walk_fail(w, "not terminated after EOS");
            return;
        }
        if (w->rollback_checks) {
            /* Rolling back EOS un-terminates. */
            if (cg_rollback(w->m, 1) != CG_OK) {
                walk_fail_cgram(w, "cg_rollback(EOS)");
                return;
            }
            if (cg_is_terminated(w->m) != 0 || cg_is_accepting(w->m) != 1) {
                walk_fail(w, "EOS rolled back, but the matcher is not back to accepting");
                return;
            }
        }
        w->h = fnv_u32(w->h, (uint32_t)term);
    } else {
        w->h = fnv_u32(w->h, 0);
    }
}

/* bytes=N: the text fed by cg_accept_bytes, N bytes at a time (chunks cut
 * through tokens and UTF-8 characters alike), then rolled back. */
static void bytes_phase(struct walk *w, uint32_t *mask)
{
    size_t chunk = w->c->bytes_chunk;
    uint32_t *initial = xmalloc(n_words * sizeof *initial);
    if (cg_fill_mask(w->m, initial, n_words) != CG_OK) {
        walk_fail_cgram(w, "cg_fill_mask");
        free(initial);
        return;
    }
    uint32_t n_chunks = 0;
    for (size_t pos = 0; pos < w->len; pos += chunk) {
        size_t n = w->len - pos < chunk ? w->len - pos : chunk;
        if (cg_accept_bytes(w->m, w->text + pos, n) != CG_OK) {
            walk_fail(w, "cg_accept_bytes failed at byte %lu: %s", (unsigned long)pos,
                      cg_last_error());
            free(initial);
            return;
        }
        n_chunks++;
        if (cg_fill_mask(w->m, mask, n_words) != CG_OK) {
            walk_fail_cgram(w, "cg_fill_mask");
            free(initial);
            return;
        }
        w->h = fnv_u32(w->h, (uint32_t)n);
        w->h = fnv_mask(w->h, mask, n_words);
        if (hash_state(w) < 0) {
            free(initial);
            return;
        }
    }
    int acc = cg_is_accepting(w->m);
    if (acc != (w->c->expect == EXPECT_ACCEPT)) {
        walk_fail(w, "cg_accept_bytes: the text %s", acc ? "is accepted, expected a prefix"
                                                         : "is not accepted");
        free(initial);
        return;
    }
    /* One cg_rollback step per cg_accept_bytes call, all at once. */
    if (cg_rollback(w->m, n_chunks + 1) != CG_ERR_INVALID_ARGUMENT) {
        walk_fail(w, "cg_rollback past the history did not fail");
        free(initial);
        return;
    }
    if (cg_rollback(w->m, n_chunks) != CG_OK) {
        walk_fail_cgram(w, "cg_rollback");
        free(initial);
        return;
    }
    if (cg_fill_mask(w->m, mask, n_words) != CG_OK) {
        walk_fail_cgram(w, "cg_fill_mask");
        free(initial);
        return;
    }
    if (memcmp(mask, initial, n_words * sizeof *mask) != 0)
        walk_fail(w, "the mask after rolling back every cg_accept_bytes is not the initial one");
    w->h = fnv_u32(w->h, n_chunks);
    free(initial);
}

/* ------------------------------------------------------------------------
 * Cases. */

static uint32_t *mask;

static void run_single(struct case_def *c, unsigned long *steps, int *accepting)
{
    struct walk w;
    walk_open(&w, c);
    if (!w.failed && c->bytes_chunk) {
        w.rollback_checks = 1;
        bytes_phase(&w, mask);
    }
    while (!w.finished) {
        if (cg_fill_mask(w.m, mask, n_words) != CG_OK) {
            walk_fail_cgram(&w, "cg_fill_mask");
            break;
        }
        walk_step(&w, mask);
    }
    c->ran_ok = !w.failed;
    c->digest = w.h;
    *steps = w.steps;
    *accepting = w.accepting;
    walk_close(&w);
}

/* The walks of several cases in lock step; masks from cg_fill_masks (two
 * threads) and from cg_fill_mask must be the same. Which of the two runs
 * first alternates, so that each meets a matcher whose caches are cold. */
static void run_batch(struct case_def *c, unsigned long *steps, int *accepting)
{
    char *names = xstrdup(c->grammar);
    int n = 0;
    for (char *p = names; *p; p++)
        n += *p == ',';
    n++;
    struct walk *ws = xmalloc((size_t)n * sizeof *ws);
    const struct case_def **defs = xmalloc((size_t)n * sizeof *defs);
    int k = 0;
    for (char *p = strtok(names, ","); p; p = strtok(NULL, ","))
        defs[k++] = find_case(p, n_cases);
    free(names);

    in_batch = c->name;
    int ok = 1;
    for (int i = 0; i < n; i++) {
        walk_open(&ws[i], defs[i]);
        ok &= !ws[i].failed;
    }
    cg_matcher **active = xmalloc((size_t)n * sizeof *active);
    int *index = xmalloc((size_t)n * sizeof *index);
    uint32_t *batch = xmalloc((size_t)n * n_words * sizeof *batch);
    uint64_t h = FNV_OFFSET;
    unsigned long round = 0;
    while (ok) {
        int n_active = 0;
        for (int i = 0; i < n; i++) {
            if (!ws[i].finished) {
                index[n_active] = i;
                active[n_active++] = ws[i].m;
            }
        }
        if (n_active == 0)
            break;
        int singles_first = round % 2 == 1;
        for (int pass = 0; pass < 2 && ok; pass++) {
            if ((pass == 0) == singles_first) {
                for (int j = 0; j < n_active; j++) {
                    if (cg_fill_mask(active[j], ws[index[j]].scratch, n_words) != CG_OK) {
                        walk_fail_cgram(&ws[index[j]], "cg_fill_mask");
                        ok = 0;
                    }
                }
            } else if (cg_fill_masks(active, (size_t)n_active, batch, n_words, 2) != CG_OK) {
                fprintf(stderr, "mask_digest: case %s (%s:%d): cg_fill_masks failed in round %lu: "
                        "%s\n", c->name, manifest_path, c->line, round, cg_last_error());
                ok = 0;
            }
        }
        for (int j = 0; j < n_active && ok; j++) {
            struct walk *w = &ws[index[j]];
            const uint32_t *bm = batch + (size_t)j * n_words;
            if (memcmp(bm, w->scratch, n_words * sizeof *bm) != 0) {
                walk_fail(w, "cg_fill_masks and cg_fill_mask differ at step %lu", w->steps);
                ok = 0;
                break;
            }
            h = fnv_u32(h, (uint32_t)index[j]);
            h = fnv_mask(h, bm, n_words);
            walk_step(w, bm);
            ok &= !w->failed;
        }
        round++;
    }
    *steps = 0;
    *accepting = 1;
    for (int i = 0; i < n && ok; i++) {
        /* The same walk as the case's own: the same digest. */
        if (ws[i].h != defs[i]->digest || !defs[i]->ran_ok) {
            fprintf(stderr, "mask_digest: case %s (%s:%d): the walk of %s gives another digest "
                    "in the batch than alone\n", c->name, manifest_path, c->line, defs[i]->name);
            ok = 0;
        }
        h = fnv_u64(h, ws[i].h);
        *steps += ws[i].steps;
        *accepting &= ws[i].accepting;
    }
    in_batch = NULL;
    for (int i = 0; i < n; i++)
        walk_close(&ws[i]);
    free(ws);
    free(defs);
    free(active);
    free(index);
    free(batch);
    c->ran_ok = ok;
    c->digest = h;
}

int main(int argc, char **argv)
{
#ifdef _WIN32
    /* "\n", not "\r\n": the output is compared byte for byte. */
    _setmode(_fileno(stdout), _O_BINARY);
#endif
    if (argc != 3) {
        fprintf(stderr, "usage: mask_digest TOKENIZER.json MANIFEST\n");
        return 2;
    }
    trace = getenv("MASK_DIGEST_TRACE") != NULL;
    load_manifest(argv[2]);
    load_vocab(argv[1]);
    mask = xmalloc(n_words * sizeof *mask);

    uint64_t total = FNV_OFFSET;
    int n_failed = 0;
    for (int i = 0; i < n_cases; i++) {
        struct case_def *c = &cases[i];
        unsigned long steps;
        int accepting;
        if (c->batch)
            run_batch(c, &steps, &accepting);
        else
            run_single(c, &steps, &accepting);
        char line[512];
        if (c->ran_ok) {
            char hex[17];
            hex64(c->digest, hex);
            snprintf(line, sizeof line, "%s %lu %s %d\n", c->name, steps, hex, accepting);
        } else {
            snprintf(line, sizeof line, "%s FAILED\n", c->name);
            n_failed++;
        }
        fputs(line, stdout);
        fflush(stdout);
        total = fnv_bytes(total, line, strlen(line));
    }
    char hex[17];
    hex64(total, hex);
    printf("total %s\n", hex);
    if (n_failed) {
        fprintf(stderr, "mask_digest: %d of %d cases failed\n", n_failed, n_cases);
        return 1;
    }
    return 0;
}
