/*
 * cgram_llama: a llama.cpp sampler (struct llama_sampler_i) backed by cgram.
 * See cgram_llama.h. Compiled by the host against its own llama.h.
 */
#include "cgram_llama.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
typedef SRWLOCK cgram_llama_lock;
#define CGRAM_LLAMA_LOCK_INIT SRWLOCK_INIT
static void lock_take(cgram_llama_lock *l) { AcquireSRWLockExclusive(l); }
static void lock_give(cgram_llama_lock *l) { ReleaseSRWLockExclusive(l); }
#else
#include <pthread.h>
typedef pthread_mutex_t cgram_llama_lock;
#define CGRAM_LLAMA_LOCK_INIT PTHREAD_MUTEX_INITIALIZER
static void lock_take(cgram_llama_lock *l) { pthread_mutex_lock(l); }
static void lock_give(cgram_llama_lock *l) { pthread_mutex_unlock(l); }
#endif

#if defined(_MSC_VER)
#define CGRAM_LLAMA_TLS __declspec(thread)
#else
#define CGRAM_LLAMA_TLS _Thread_local
#endif

/* ------------------------------------------------------------------------ */
/* errors */

static CGRAM_LLAMA_TLS char last_error[1024];

static void set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

const char *cgram_llama_last_error(void) { return last_error; }

/* ------------------------------------------------------------------------ */
/* the vocabulary */

void cgram_llama_vocab_arrays_free(cgram_llama_vocab_arrays *a)
{
    if (!a)
        return;
    free((void *)a->token_bytes);
    free(a->token_lens);
    free(a->token_flags);
    free(a->eog_tokens);
    free(a->storage);
    memset(a, 0, sizeof *a);
}

int cgram_llama_vocab_arrays_build(const struct llama_vocab *vocab, cgram_llama_vocab_arrays *out)
{
    if (!out) {
        set_error("cgram_llama_vocab_arrays_build: out is NULL");
        return -1;
    }
    memset(out, 0, sizeof *out);
    if (!vocab) {
        set_error("cgram_llama_vocab_arrays_build: vocab is NULL");
        return -1;
    }
    int32_t n = llama_vocab_n_tokens(vocab);
    if (n <= 0) {
        set_error("cgram_llama_vocab_arrays_build: the vocabulary has %d tokens", (int)n);
        return -1;
    }
    size_t cap = (size_t)n * 8 + 256, used = 0;
    char piece[256];
    out->n_tokens = (uint32_t)n;
    out->token_bytes = calloc((size_t)n, sizeof *out->token_bytes);
    out->token_lens = calloc((size_t)n, sizeof *out->token_lens);
    out->token_flags = calloc((size_t)n, sizeof *out->token_flags);
    out->eog_tokens = calloc(16, sizeof *out->eog_tokens);
    out->storage = malloc(cap);
    size_t eog_cap = 16;
    size_t *offsets = calloc((size_t)n, sizeof *offsets);
    if (!out->token_bytes || !out->token_lens || !out->token_flags || !out->eog_tokens ||
        !out->storage || !offsets)
        goto oom;

    for (int32_t t = 0; t < n; t++) {
        /* special = true: control tokens are rendered as their text, as
         * cgram's vocabularies keep it (they never match grammar text). */
        int32_t len = llama_token_to_piece(vocab, t, piece, (int32_t)sizeof piece, 0, true);
        char *big = NULL;
        if (len < 0) {
            int32_t need = -len;
            big = malloc((size_t)need);
            if (!big)
                goto oom;
            len = llama_token_to_piece(vocab, t, big, need, 0, true);
            if (len != need) {
                free(big);
                set_error("cgram_llama_vocab_arrays_build: llama_token_to_piece(%d) changed size",
                          (int)t);
                cgram_llama_vocab_arrays_free(out);
                free(offsets);
                return -1;
            }
        }
        if (used + (size_t)len > cap) {
            size_t bigger = cap * 2 > used + (size_t)len ? cap * 2 : used + (size_t)len;
            uint8_t *s = realloc(out->storage, bigger);
            if (!s) {
                free(big);
                goto oom;
            }
            out->storage = s;
            cap = bigger;
        }
        if (len > 0)
            memcpy(out->storage + used, big ? big : piece, (size_t)len);
        free(big);
        offsets[t] = used;
        out->token_lens[t] = (uint32_t)len;
        used += (size_t)len;

        enum llama_token_attr attr = llama_vocab_get_attr(vocab, t);
        if (attr & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN))
            out->token_flags[t] = CG_TOKEN_SPECIAL;
        if (llama_vocab_is_eog(vocab, t)) {
            if (out->n_eog == eog_cap) {
                int32_t *e = realloc(out->eog_tokens, eog_cap * 2 * sizeof *e);
                if (!e)
                    goto oom;
                out->eog_tokens = e;
                eog_cap *= 2;
            }
            out->eog_tokens[out->n_eog++] = t;
        }
    }
    /* Pointers only now: storage may have moved while growing. */
    for (int32_t t = 0; t < n; t++)
        out->token_bytes[t] = out->storage + offsets[t];
    free(offsets);
    return 0;

oom:
    free(offsets);
    cgram_llama_vocab_arrays_free(out);
    set_error("cgram_llama_vocab_arrays_build: out of memory");
    return -1;
}

static cg_vocab *vocab_from_arrays(const cgram_llama_vocab_arrays *a)
{
    cg_vocab *v = cg_vocab_new(a->n_tokens, a->token_bytes, a->token_lens, a->token_flags,
                               a->eog_tokens, a->n_eog);
    if (!v)
        set_error("cg_vocab_new: %s", cg_last_error());
    return v;
}

cg_vocab *cgram_llama_vocab_new(const struct llama_vocab *vocab)
{
    cgram_llama_vocab_arrays a;
    if (cgram_llama_vocab_arrays_build(vocab, &a) != 0)
        return NULL;
    cg_vocab *v = vocab_from_arrays(&a);
    cgram_llama_vocab_arrays_free(&a);
    return v;
}

/* Total bytes of all tokens. */
static size_t arrays_storage_len(const cgram_llama_vocab_arrays *a)
{
    size_t n = 0;
    for (uint32_t t = 0; t < a->n_tokens; t++)
        n += a->token_lens[t];
    return n;
}

/* Whether two vocabularies are given exactly the same to cg_vocab_new. */
static int same_arrays(const cgram_llama_vocab_arrays *x, const cgram_llama_vocab_arrays *y)
{
    size_t n = x->n_tokens;
    return x->n_tokens == y->n_tokens && x->n_eog == y->n_eog &&
           memcmp(x->token_lens, y->token_lens, n * sizeof *x->token_lens) == 0 &&
           memcmp(x->token_flags, y->token_flags, n * sizeof *x->token_flags) == 0 &&
           memcmp(x->eog_tokens, y->eog_tokens, x->n_eog * sizeof *x->eog_tokens) == 0 &&
           memcmp(x->storage, y->storage, arrays_storage_len(x)) == 0;
}

/* Whether the llama vocabulary gives exactly these arrays: the cache hit
 * test, reading the vocabulary without copying it. */
static int vocab_matches(const struct llama_vocab *vocab, const cgram_llama_vocab_arrays *a)
{
    if (llama_vocab_n_tokens(vocab) != (int32_t)a->n_tokens)
        return 0;
    char piece[256];
    uint32_t next_eog = 0;
    for (uint32_t t = 0; t < a->n_tokens; t++) {
        uint32_t len = a->token_lens[t];
        int32_t got = llama_token_to_piece(vocab, (llama_token)t, piece, (int32_t)sizeof piece, 0, true);
        if (got < 0) { /* longer than the buffer */
            if ((uint32_t)-got != len)
                return 0;
            char *big = malloc(len);
            int same = big && llama_token_to_piece(vocab, (llama_token)t, big, (int32_t)len, 0, true) ==
                                  (int32_t)len &&
                       memcmp(big, a->token_bytes[t], len) == 0;
            free(big);
            if (!same)
                return 0;
        } else if ((uint32_t)got != len || (len && memcmp(piece, a->token_bytes[t], len) != 0)) {
            return 0;
        }
        uint32_t flags = (llama_vocab_get_attr(vocab, (llama_token)t) &
                          (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN))
                             ? CG_TOKEN_SPECIAL
                             : 0;
        if (flags != a->token_flags[t])
            return 0;
        int eog = next_eog < a->n_eog && a->eog_tokens[next_eog] == (int32_t)t;
        if ((llama_vocab_is_eog(vocab, (llama_token)t) != 0) != eog)
            return 0;
        next_eog += (uint32_t)eog;
    }
    return next_eog == a->n_eog;
}

/* The cache: one entry per distinct vocabulary, keyed by its full content
 * (a llama_vocab pointer could be reused by another model after a free),
 * so a lookup costs one pass over the vocabulary (vocab_matches): about
 * 4 ms for 262,144 tokens, where building the cgram vocabulary (its token
 * trie) takes 50-80 ms. */
struct cache_entry {
    cgram_llama_vocab_arrays arrays; /* what it was built from */
    cg_vocab *vocab;                 /* the cache's reference */
    struct cache_entry *next;
};

static cgram_llama_lock cache_lock = CGRAM_LLAMA_LOCK_INIT;
static struct cache_entry *cache_head;

/* The cached vocabulary for these arrays, made if new; takes ownership of
 * *a (freed, or kept by the new entry). Borrowed result: valid while the
 * cache holds it, so callers compile a grammar (which keeps its own
 * reference) before releasing the lock. Called with cache_lock held. */
static cg_vocab *cache_get(cgram_llama_vocab_arrays *a)
{
    for (struct cache_entry *e = cache_head; e; e = e->next)
        if (same_arrays(&e->arrays, a)) {
            cgram_llama_vocab_arrays_free(a);
            return e->vocab;
        }
    struct cache_entry *e = malloc(sizeof *e);
    if (!e) {
        cgram_llama_vocab_arrays_free(a);
        set_error("cgram_llama: out of memory");
        return NULL;
    }
    e->vocab = vocab_from_arrays(a);
    if (!e->vocab) {
        cgram_llama_vocab_arrays_free(a);
        free(e);
        return NULL;
    }
    e->arrays = *a;
    memset(a, 0, sizeof *a);
    e->next = cache_head;
    cache_head = e;
    return e->vocab;
}

void cgram_llama_vocab_cache_clear(void)
{
    lock_take(&cache_lock);
    struct cache_entry *e = cache_head;
    cache_head = NULL;
    lock_give(&cache_lock);
    while (e) {
        struct cache_entry *next = e->next;
        cg_vocab_free(e->vocab);
        cgram_llama_vocab_arrays_free(&e->arrays);
        free(e);
        e = next;
    }
}

/* ------------------------------------------------------------------------ */
/* the sampler */

struct cgram_llama_ctx {
    cg_matcher *matcher; /* keeps its grammar (and vocabulary) alive */
    uint32_t n_vocab;
    size_t n_words;
    uint32_t *mask;     /* the allowed tokens of the current state ... */
    int mask_valid;     /* ... when this is set */
    int32_t *eog;       /* end-of-generation ids, for the failed state */
    uint32_t n_eog;
    int failed;         /* sticky until reset */
    char *error;        /* the first failure's message (NULL if out of memory) */
};

static struct llama_sampler_i cgram_llama_iface;

static const char *cgram_llama_name(const struct llama_sampler *smpl)
{
    (void)smpl;
    return "cgram";
}

/* After a failure only end-of-generation tokens stay allowed: the mask
 * becomes exactly them and is not recomputed until reset. */
static void fail(struct cgram_llama_ctx *c, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!c->failed) {
        c->failed = 1;
        size_t n = strlen(buf) + 1;
        c->error = malloc(n);
        if (c->error)
            memcpy(c->error, buf, n);
        fprintf(stderr, "cgram_llama: %s; only end-of-generation tokens are allowed from now on\n",
                buf);
    }
    memset(c->mask, 0, c->n_words * sizeof *c->mask);
    for (uint32_t i = 0; i < c->n_eog; i++) {
        uint32_t t = (uint32_t)c->eog[i];
        c->mask[t / 32] |= 1u << (t % 32);
    }
    c->mask_valid = 1;
}

static void cgram_llama_accept(struct llama_sampler *smpl, llama_token token)
{
    struct cgram_llama_ctx *c = smpl->ctx;
    if (c->failed)
        return; /* already failed: the mask allows end of generation only */
    int rc = cg_accept(c->matcher, token);
    if (rc != CG_OK) {
        fail(c, "token %d was accepted but the grammar does not allow it here (%s)", (int)token,
             cg_last_error());
        return;
    }
    c->mask_valid = 0;
}

static void cgram_llama_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p)
{
    struct cgram_llama_ctx *c = smpl->ctx;
    if (!c->mask_valid) {
        int rc = cg_fill_mask(c->matcher, c->mask, c->n_words);
        if (rc != CG_OK)
            fail(c, "cg_fill_mask failed: %s", cg_last_error());
        else
            c->mask_valid = 1;
    }
    const uint32_t *mask = c->mask;
    const uint32_t n = c->n_vocab;
    llama_token_data *d = cur_p->data;
    const size_t size = cur_p->size;
    size_t masked = 0;
    for (size_t i = 0; i < size; i++) {
        uint32_t t = (uint32_t)d[i].id;
        if (t >= n || !((mask[t >> 5] >> (t & 31)) & 1u)) {
            d[i].logit = -INFINITY;
            masked++;
        }
    }
    /* Sorted by logit no more (llama.cpp's samplers re-sort when told). */
    if (masked)
        cur_p->sorted = false;
}

static void cgram_llama_reset(struct llama_sampler *smpl)
{
    struct cgram_llama_ctx *c = smpl->ctx;
    cg_reset(c->matcher);
    free(c->error);
    c->error = NULL;
    c->failed = 0;
    c->mask_valid = 0;
}

static void ctx_free(struct cgram_llama_ctx *c)
{
    if (!c)
        return;
    cg_matcher_free(c->matcher);
    free(c->mask);
    free(c->eog);
    free(c->error);
    free(c);
}

static struct cgram_llama_ctx *ctx_alloc(uint32_t n_vocab, size_t n_words, uint32_t n_eog)
{
    struct cgram_llama_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n_vocab = n_vocab;
    c->n_words = n_words;
    c->n_eog = n_eog;
    c->mask = calloc(n_words ? n_words : 1, sizeof *c->mask);
    c->eog = calloc(n_eog ? n_eog : 1, sizeof *c->eog);
    if (!c->mask || !c->eog) {
        ctx_free(c);
        return NULL;
    }
    return c;
}

static struct llama_sampler *cgram_llama_clone(const struct llama_sampler *smpl)
{
    const struct cgram_llama_ctx *c = smpl->ctx;
    struct cgram_llama_ctx *k = ctx_alloc(c->n_vocab, c->n_words, c->n_eog);
    if (!k) {
        set_error("cgram_llama: out of memory");
        return NULL;
    }
    k->matcher = cg_matcher_clone(c->matcher);
    if (!k->matcher) {
        set_error("cg_matcher_clone: %s", cg_last_error());
        ctx_free(k);
        return NULL;
    }
    memcpy(k->mask, c->mask, c->n_words * sizeof *c->mask);
    memcpy(k->eog, c->eog, c->n_eog * sizeof *c->eog);
    k->mask_valid = c->mask_valid;
    k->failed = c->failed;
    if (c->error) {
        size_t n = strlen(c->error) + 1;
        k->error = malloc(n);
        if (k->error)
            memcpy(k->error, c->error, n);
    }
    struct llama_sampler *s = llama_sampler_init(&cgram_llama_iface, k);
    if (!s)
        ctx_free(k);
    return s;
}

static void cgram_llama_free(struct llama_sampler *smpl)
{
    ctx_free(smpl->ctx);
    smpl->ctx = NULL;
}

/* Designated initialisers: the members llama.cpp adds later (backend
 * sampling, ...) are left NULL, which every version treats as absent. */
static struct llama_sampler_i cgram_llama_iface = {
    .name = cgram_llama_name,
    .accept = cgram_llama_accept,
    .apply = cgram_llama_apply,
    .reset = cgram_llama_reset,
    .clone = cgram_llama_clone,
    .free = cgram_llama_free,
};

int cgram_llama_sampler_is_cgram(const struct llama_sampler *smpl)
{
    return smpl && smpl->iface == &cgram_llama_iface;
}

const char *cgram_llama_sampler_error(const struct llama_sampler *smpl)
{
    if (!cgram_llama_sampler_is_cgram(smpl) || !smpl->ctx)
        return NULL;
    const struct cgram_llama_ctx *c = smpl->ctx;
    if (!c->failed)
        return NULL;
    return c->error ? c->error : "the sampler failed (out of memory for the message)";
}

cg_matcher *cgram_llama_sampler_matcher(struct llama_sampler *smpl)
{
    if (!cgram_llama_sampler_is_cgram(smpl) || !smpl->ctx)
        return NULL;
    return ((struct cgram_llama_ctx *)smpl->ctx)->matcher;
}

/* A sampler for a grammar compiled from v. */
static struct llama_sampler *sampler_new(const cg_vocab *v, const char *source, size_t source_len,
                                         const cg_compile_options *options)
{
    cg_grammar *grammar = cg_compile(v, source, source_len, options);
    if (!grammar) {
        set_error("cgram_llama_sampler_init: %s", cg_last_error());
        return NULL;
    }
    int n_eog = cg_vocab_eos_tokens(v, NULL, 0);
    struct cgram_llama_ctx *c =
        n_eog >= 0 ? ctx_alloc(cg_vocab_size(v), cg_mask_words(grammar), (uint32_t)n_eog) : NULL;
    if (n_eog < 0) {
        set_error("cg_vocab_eos_tokens: %s", cg_last_error());
    } else if (!c) {
        set_error("cgram_llama: out of memory");
    } else if (cg_vocab_eos_tokens(v, c->eog, (size_t)n_eog) != n_eog) {
        set_error("cg_vocab_eos_tokens: %s", cg_last_error());
        ctx_free(c);
        c = NULL;
    } else if (!(c->matcher = cg_matcher_new(grammar))) {
        set_error("cg_matcher_new: %s", cg_last_error());
        ctx_free(c);
        c = NULL;
    }
    cg_free(grammar); /* the matcher holds it */
    if (!c)
        return NULL;
    struct llama_sampler *s = llama_sampler_init(&cgram_llama_iface, c);
    if (!s) {
        set_error("llama_sampler_init failed");
        ctx_free(c);
    }
    return s;
}

struct llama_sampler *cgram_llama_sampler_init_vocab(const cg_vocab *vocab, const char *source,
                                                     size_t source_len,
                                                     const cg_compile_options *options)
{
    if (!vocab) {
        set_error("cgram_llama_sampler_init_vocab: vocab is NULL");
        return NULL;
    }
    return sampler_new(vocab, source, source_len, options);
}

struct llama_sampler *cgram_llama_sampler_init_opts(const struct llama_vocab *vocab,
                                                    const char *source, size_t source_len,
                                                    const cg_compile_options *options)
{
    if (!vocab) {
        set_error("cgram_llama_sampler_init: vocab is NULL");
        return NULL;
    }
    struct llama_sampler *s = NULL;
    cg_vocab *v = NULL;
    lock_take(&cache_lock);
    for (struct cache_entry *e = cache_head; e && !v; e = e->next)
        if (vocab_matches(vocab, &e->arrays))
            v = e->vocab;
    if (!v) {
        cgram_llama_vocab_arrays a;
        if (cgram_llama_vocab_arrays_build(vocab, &a) == 0)
            v = cache_get(&a); /* takes a */
    }
    if (v)
        s = sampler_new(v, source, source_len, options);
    lock_give(&cache_lock);
    return s;
}

struct llama_sampler *cgram_llama_sampler_init(const struct llama_vocab *vocab, const char *kind,
                                               const char *grammar_or_schema, const char *root)
{
    cg_compile_options opts;
    cg_compile_options_init(&opts);
    if (!kind || strcmp(kind, "gbnf") == 0)
        opts.kind = CG_KIND_GBNF;
    else if (strcmp(kind, "json_schema") == 0 || strcmp(kind, "json-schema") == 0)
        opts.kind = CG_KIND_JSON_SCHEMA;
    else if (strcmp(kind, "regex") == 0)
        opts.kind = CG_KIND_REGEX;
    else if (strcmp(kind, "json") == 0)
        opts.kind = CG_KIND_ANY_JSON;
    else {
        set_error("cgram_llama_sampler_init: unknown kind \"%s\" (gbnf, json_schema, regex, json)",
                  kind);
        return NULL;
    }
    if (!grammar_or_schema && opts.kind != CG_KIND_ANY_JSON) {
        set_error("cgram_llama_sampler_init: the grammar text is NULL");
        return NULL;
    }
    opts.root = root;
    /* Bounded whitespace, as llama.cpp's schema converter writes it: small
     * models otherwise loop on newlines. */
    if (opts.kind == CG_KIND_JSON_SCHEMA || opts.kind == CG_KIND_ANY_JSON)
        opts.json_max_whitespace = CGRAM_LLAMA_JSON_MAX_WHITESPACE;
    const char *src = grammar_or_schema ? grammar_or_schema : "";
    return cgram_llama_sampler_init_opts(vocab, src, strlen(src), &opts);
}
