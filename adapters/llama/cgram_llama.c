/*
 * cgram_llama: a llama.cpp sampler (struct llama_sampler_i) backed by cgram.
 * See cgram_llama.h. Compiled by the host against its own llama.h.
 */
/* MinGW: the C99 printf of MinGW-w64 (%zu and the other size modifiers),
 * which cgram_llama_log's format attribute (gnu_printf there, as in
 * llama.cpp) promises; msvcrt.dll's own vsnprintf does not know them all.
 * Before the first header, which brings <stdio.h>. */
#if defined(__MINGW32__) && !defined(__USE_MINGW_ANSI_STDIO)
#define __USE_MINGW_ANSI_STDIO 1
#endif
/* The drop-in looks functions up in the process (dlsym, RTLD_DEFAULT). */
#if defined(CGRAM_LLAMA_RUNTIME_LOOKUP) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "cgram_llama.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(CGRAM_LLAMA_RUNTIME_LOOKUP)
#include <dlfcn.h>
#endif

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
/* errors and the log */

static CGRAM_LLAMA_TLS char last_error[1024];
static CGRAM_LLAMA_TLS int last_error_code;
static CGRAM_LLAMA_TLS int last_error_in_triggers;

static void set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    last_error_code = CG_ERR_INVALID_ARGUMENT;
    last_error_in_triggers = 0;
}

/* The message of a failed cgram call while making a sampler, with its
 * code. */
static void set_cgram_error(int in_triggers)
{
    set_error("cgram_llama_sampler_init: %s", cg_last_error());
    last_error_code = cg_last_error_code();
    last_error_in_triggers = in_triggers;
}

const char *cgram_llama_last_error(void) { return last_error; }

int cgram_llama_last_error_code(void) { return last_error_code; }

int cgram_llama_last_error_in_triggers(void) { return last_error_in_triggers; }

#if defined(CGRAM_LLAMA_RUNTIME_LOOKUP)
/* The drop-in calls whichever libllama the program loaded, found at run
 * time. llama_log_get came with llama.cpp of mid-2025 (llama-cpp-python
 * 0.3.17); without it, lines go to stderr, where llama.cpp's default
 * logger writes them too. */
static void log_get(ggml_log_callback *cb, void **user)
{
    typedef void (*log_get_fn)(ggml_log_callback *, void **);
    void *found = dlsym(RTLD_DEFAULT, "llama_log_get");
    log_get_fn fn = NULL;
    memcpy(&fn, &found, sizeof fn);
    if (fn)
        fn(cb, user);
}
#else
#define log_get llama_log_get
#endif

void cgram_llama_log(enum ggml_log_level level, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n') {
        line[len] = '\n';
        line[len + 1] = '\0';
    }
    ggml_log_callback cb = NULL;
    void *user = NULL;
    log_get(&cb, &user);
    if (cb)
        cb(level, line, user);
    else
        fputs(line, stderr);
}

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

/* CG_TOKEN_SPECIAL for the tokens cgram keeps out of grammar text. */
static uint32_t token_flags(const struct llama_vocab *vocab, llama_token t, uint32_t vocab_flags)
{
    if (vocab_flags & CGRAM_LLAMA_SPECIAL_AS_TEXT)
        return 0;
    enum llama_token_attr attr = llama_vocab_get_attr(vocab, t);
    return (attr & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN)) ? CG_TOKEN_SPECIAL : 0;
}

static int arrays_build(const struct llama_vocab *vocab, uint32_t vocab_flags,
                        cgram_llama_vocab_arrays *out)
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
         * cgram's vocabularies keep it. */
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

        out->token_flags[t] = token_flags(vocab, t, vocab_flags);
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

int cgram_llama_vocab_arrays_build(const struct llama_vocab *vocab, cgram_llama_vocab_arrays *out)
{
    return arrays_build(vocab, 0, out);
}

static cg_vocab *vocab_from_arrays(const cgram_llama_vocab_arrays *a)
{
    cg_vocab *v = cg_vocab_new(a->n_tokens, a->token_bytes, a->token_lens, a->token_flags,
                               a->eog_tokens, a->n_eog);
    if (!v)
        set_error("cg_vocab_new: %s", cg_last_error());
    return v;
}

cg_vocab *cgram_llama_vocab_new_ext(const struct llama_vocab *vocab, uint32_t flags)
{
    cgram_llama_vocab_arrays a;
    if (arrays_build(vocab, flags, &a) != 0)
        return NULL;
    cg_vocab *v = vocab_from_arrays(&a);
    cgram_llama_vocab_arrays_free(&a);
    return v;
}

cg_vocab *cgram_llama_vocab_new(const struct llama_vocab *vocab)
{
    return cgram_llama_vocab_new_ext(vocab, 0);
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

/* A fingerprint of a llama vocabulary that costs a few microseconds (it is
 * taken for every sampler, so that it dominated a cache hit at 1,024
 * tokens): its size, its end-of-generation tokens, and the text and
 * attributes of 256 tokens (the first and last 64, where special and added
 * tokens live, and an even spread between). Together with the
 * vocabulary's address it tells a cached vocabulary from another model's
 * loaded where a freed one was (a host that frees models calls
 * cgram_llama_vocab_forget; the drop-in does it in llama_model_free). */
static uint64_t fingerprint(const struct llama_vocab *vocab)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 1099511628211ull)
    int32_t n = llama_vocab_n_tokens(vocab);
    MIX(n);
    for (int32_t k = 0; k < 256 && n > 0; k++) {
        int32_t t = k < 64 ? k : k < 128 ? n - 1 - (k - 64) : (int32_t)((int64_t)(k - 128) * n / 128);
        if (t < 0 || t >= n)
            continue;
        const char *text = llama_vocab_get_text(vocab, t);
        for (const char *p = text ? text : ""; *p; p++)
            MIX((unsigned char)*p);
        MIX(llama_vocab_get_attr(vocab, t));
        MIX(llama_vocab_is_eog(vocab, t));
    }
    MIX(llama_vocab_eos(vocab));
    MIX(llama_vocab_eot(vocab));
#undef MIX
    return h;
}

/* The cache: one entry per (llama vocabulary, flags). A lookup by address
 * checks the fingerprint (microseconds); a new address reads the whole
 * vocabulary (milliseconds) and shares the cgram vocabulary of an entry
 * with the same content, so that two models of one tokenizer share it and
 * its per-vocabulary caches. */
struct cache_entry {
    const struct llama_vocab *llama; /* NULL once forgotten */
    uint64_t print;
    uint32_t flags;
    cgram_llama_vocab_arrays arrays; /* what it was built from */
    cg_vocab *vocab;                 /* the cache's reference */
    struct cache_entry *next;
};

static cgram_llama_lock cache_lock = CGRAM_LLAMA_LOCK_INIT;
static struct cache_entry *cache_head;
static cg_grammar_cache *grammar_cache;
static size_t grammar_cache_budget; /* 0: CGRAM_LLAMA_CACHE_MB or the default */

/* The grammar cache, made on first use. Called with cache_lock held. */
static cg_grammar_cache *grammars(void)
{
    if (!grammar_cache) {
        size_t budget = grammar_cache_budget;
        const char *mb = getenv("CGRAM_LLAMA_CACHE_MB");
        if (!budget && mb && *mb)
            budget = (size_t)strtoull(mb, NULL, 10) << 20;
        grammar_cache = cg_grammar_cache_new(budget);
    }
    return grammar_cache;
}

/* The cached cgram vocabulary of a llama vocabulary, made if new.
 * Borrowed result: valid while the cache holds it (callers take a
 * reference of their own with cg_vocab_clone before releasing cache_lock).
 * Called with cache_lock held. */
static cg_vocab *vocab_lookup(const struct llama_vocab *vocab, uint32_t flags)
{
    uint64_t print = fingerprint(vocab);
    for (struct cache_entry *e = cache_head; e; e = e->next)
        if (e->llama == vocab && e->flags == flags && e->print == print)
            return e->vocab;
    cgram_llama_vocab_arrays a;
    if (arrays_build(vocab, flags, &a) != 0)
        return NULL;
    struct cache_entry *e = calloc(1, sizeof *e);
    if (!e) {
        cgram_llama_vocab_arrays_free(&a);
        set_error("cgram_llama: out of memory");
        return NULL;
    }
    /* Another model of the same tokenizer: share its vocabulary. */
    for (struct cache_entry *o = cache_head; o && !e->vocab; o = o->next)
        if (o->flags == flags && same_arrays(&o->arrays, &a))
            e->vocab = cg_vocab_clone(o->vocab);
    if (!e->vocab)
        e->vocab = vocab_from_arrays(&a);
    if (!e->vocab) {
        cgram_llama_vocab_arrays_free(&a);
        free(e);
        return NULL;
    }
    e->llama = vocab;
    e->print = print;
    e->flags = flags;
    e->arrays = a;
    e->next = cache_head;
    cache_head = e;
    return e->vocab;
}

static void entry_free(struct cache_entry *e)
{
    if (grammar_cache)
        cg_grammar_cache_forget_vocab(grammar_cache, e->vocab);
    cg_vocab_free(e->vocab);
    cgram_llama_vocab_arrays_free(&e->arrays);
    free(e);
}

void cgram_llama_vocab_forget(const struct llama_vocab *vocab)
{
    lock_take(&cache_lock);
    struct cache_entry **p = &cache_head;
    while (*p) {
        struct cache_entry *e = *p;
        if (e->llama == vocab) {
            *p = e->next;
            entry_free(e);
        } else {
            p = &e->next;
        }
    }
    lock_give(&cache_lock);
}

size_t cgram_llama_vocab_cache_count(void)
{
    size_t n = 0;
    lock_take(&cache_lock);
    for (const struct cache_entry *e = cache_head; e; e = e->next)
        n++;
    lock_give(&cache_lock);
    return n;
}

void cgram_llama_vocab_cache_clear(void)
{
    lock_take(&cache_lock);
    struct cache_entry *e = cache_head;
    cache_head = NULL;
    while (e) {
        struct cache_entry *next = e->next;
        entry_free(e);
        e = next;
    }
    if (grammar_cache)
        cg_grammar_cache_clear(grammar_cache);
    lock_give(&cache_lock);
}

void cgram_llama_cache_set_budget(size_t bytes)
{
    lock_take(&cache_lock);
    grammar_cache_budget = bytes;
    if (grammar_cache)
        cg_grammar_cache_set_budget(grammar_cache, bytes);
    lock_give(&cache_lock);
}

int cgram_llama_cache_stats(cg_grammar_cache_stats *stats)
{
    lock_take(&cache_lock);
    cg_grammar_cache *c = grammars();
    int rc = c ? cg_grammar_cache_get_stats(c, stats) : CG_ERR_INTERNAL;
    lock_give(&cache_lock);
    if (rc != CG_OK)
        set_error("cgram_llama_cache_stats: %s", cg_last_error());
    return rc;
}

/* ------------------------------------------------------------------------ */
/* the sampler */

struct cgram_llama_ctx {
    cg_grammar *grammar; /* for cgram_llama_sampler_grammar */
    cg_matcher *matcher; /* keeps its grammar (and vocabulary) alive */
    uint32_t n_vocab;
    size_t n_words;
    uint32_t *mask;     /* the allowed tokens of the current state ... */
    int mask_valid;     /* ... when this is set */
    int32_t *eog;       /* end-of-generation ids, for the failed state */
    uint32_t n_eog;
    int failed;         /* sticky until reset */
    char *error;        /* the first failure's message (NULL if out of memory) */
    int lazy;           /* made with triggers ... */
    int triggered;      /* ... and one fired (logged once) */
};

/* The interface, with room after it: a newer llama.cpp that reads members
 * this header does not know finds them NULL (absent), never garbage. */
struct cgram_llama_iface_padded {
    struct llama_sampler_i iface;
    void *reserved[16];
};
static struct cgram_llama_iface_padded cgram_llama_iface;

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
        cgram_llama_log(GGML_LOG_LEVEL_WARN,
                        "cgram: %s; only end-of-generation tokens are allowed from now on", buf);
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
    if (c->lazy && !c->triggered) {
        int32_t index = -1;
        size_t start = 0;
        if (cg_is_triggered(c->matcher, &index, &start) == 1) {
            c->triggered = 1;
            if (getenv("CGRAM_LLAMA_VERBOSE"))
                cgram_llama_log(GGML_LOG_LEVEL_INFO,
                                "cgram: lazy grammar triggered by trigger %d (token %d); the "
                                "grammar starts at byte %zu of the output",
                                (int)index, (int)token, start);
        }
    }
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
    c->triggered = 0;
}

static void ctx_free(struct cgram_llama_ctx *c)
{
    if (!c)
        return;
    cg_matcher_free(c->matcher);
    cg_free(c->grammar);
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
    k->grammar = cg_grammar_clone(c->grammar);
    if (!k->grammar) {
        set_error("cg_grammar_clone: %s", cg_last_error());
        ctx_free(k);
        return NULL;
    }
    memcpy(k->mask, c->mask, c->n_words * sizeof *c->mask);
    memcpy(k->eog, c->eog, c->n_eog * sizeof *c->eog);
    k->mask_valid = c->mask_valid;
    k->failed = c->failed;
    k->lazy = c->lazy;
    k->triggered = c->triggered;
    if (c->error) {
        size_t n = strlen(c->error) + 1;
        k->error = malloc(n);
        if (k->error)
            memcpy(k->error, c->error, n);
    }
    struct llama_sampler *s = llama_sampler_init(&cgram_llama_iface.iface, k);
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
static struct cgram_llama_iface_padded cgram_llama_iface = {
    .iface =
        {
            .name = cgram_llama_name,
            .accept = cgram_llama_accept,
            .apply = cgram_llama_apply,
            .reset = cgram_llama_reset,
            .clone = cgram_llama_clone,
            .free = cgram_llama_free,
        },
};

int cgram_llama_sampler_is_cgram(const struct llama_sampler *smpl)
{
    return smpl && smpl->iface == &cgram_llama_iface.iface;
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

const cg_grammar *cgram_llama_sampler_grammar(const struct llama_sampler *smpl)
{
    if (!cgram_llama_sampler_is_cgram(smpl) || !smpl->ctx)
        return NULL;
    return ((const struct cgram_llama_ctx *)smpl->ctx)->grammar;
}

/* A sampler for a matcher of v's grammar (takes the grammar and the
 * matcher). */
static struct llama_sampler *sampler_new(const cg_vocab *v, cg_grammar *grammar,
                                         cg_matcher *matcher, size_t n_words, int lazy)
{
    int n_eog = cg_vocab_eos_tokens(v, NULL, 0);
    struct cgram_llama_ctx *c =
        n_eog >= 0 ? ctx_alloc(cg_vocab_size(v), n_words, (uint32_t)n_eog) : NULL;
    if (n_eog < 0) {
        set_error("cg_vocab_eos_tokens: %s", cg_last_error());
    } else if (!c) {
        set_error("cgram_llama: out of memory");
    } else if (cg_vocab_eos_tokens(v, c->eog, (size_t)n_eog) != n_eog) {
        set_error("cg_vocab_eos_tokens: %s", cg_last_error());
        ctx_free(c);
        c = NULL;
    }
    if (!c) {
        cg_matcher_free(matcher);
        cg_free(grammar);
        return NULL;
    }
    c->grammar = grammar;
    c->matcher = matcher;
    c->lazy = lazy;
    struct llama_sampler *s = llama_sampler_init(&cgram_llama_iface.iface, c);
    if (!s) {
        set_error("llama_sampler_init failed");
        ctx_free(c);
    }
    return s;
}

/* A sampler for a grammar compiled from v through cache (or directly when
 * it is NULL), lazy when lazy is set. */
static struct llama_sampler *sampler_compile(const cg_vocab *v, cg_grammar_cache *cache,
                                             const char *source, size_t source_len,
                                             const cg_compile_options *options,
                                             const cg_trigger *triggers, size_t n_triggers,
                                             int lazy)
{
    cg_grammar *grammar = cache ? cg_grammar_cache_compile(cache, v, source, source_len, options)
                                : cg_compile(v, source, source_len, options);
    if (!grammar) {
        set_cgram_error(0);
        return NULL;
    }
    cg_matcher *m = NULL;
    if (lazy) {
        cg_triggers *t = cache ? cg_grammar_cache_triggers(cache, v, triggers, n_triggers)
                               : cg_triggers_new(v, triggers, n_triggers);
        if (!t) {
            set_cgram_error(1);
            cg_free(grammar);
            return NULL;
        }
        m = cg_matcher_new_lazy(grammar, t);
        cg_triggers_free(t); /* the matcher holds them */
    } else {
        m = cg_matcher_new(grammar);
    }
    size_t n_words = cg_mask_words(grammar);
    if (!m) {
        set_cgram_error(0);
        cg_free(grammar);
        return NULL;
    }
    return sampler_new(v, grammar, m, n_words, lazy);
}

struct llama_sampler *cgram_llama_sampler_init_ext(const struct llama_vocab *vocab,
                                                   const char *source, size_t source_len,
                                                   const cg_compile_options *options,
                                                   const cg_trigger *triggers, size_t n_triggers,
                                                   uint32_t flags)
{
    if (!vocab) {
        set_error("cgram_llama_sampler_init: vocab is NULL");
        return NULL;
    }
    if (flags & ~(uint32_t)(CGRAM_LLAMA_LAZY | CGRAM_LLAMA_SPECIAL_AS_TEXT)) {
        set_error("cgram_llama_sampler_init_ext: unknown flags %#x", (unsigned)flags);
        return NULL;
    }
    int lazy = (flags & CGRAM_LLAMA_LAZY) || n_triggers > 0;
    /* The lock covers the lookup only: compiling (which may take long for
     * a new grammar) runs on a reference of our own, so that other
     * threads make their samplers meanwhile. */
    lock_take(&cache_lock);
    cg_vocab *v = vocab_lookup(vocab, flags & CGRAM_LLAMA_SPECIAL_AS_TEXT);
    cg_vocab *own = v ? cg_vocab_clone(v) : NULL;
    cg_grammar_cache *cache = grammars();
    lock_give(&cache_lock);
    if (!own) {
        if (v)
            set_error("cgram_llama_sampler_init: %s", cg_last_error());
        return NULL;
    }
    struct llama_sampler *s =
        sampler_compile(own, cache, source, source_len, options, triggers, n_triggers, lazy);
    cg_vocab_free(own); /* the sampler's grammar holds the vocabulary */
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
    cg_grammar *grammar = cg_compile(vocab, source, source_len, options);
    if (!grammar) {
        set_error("cgram_llama_sampler_init: %s", cg_last_error());
        return NULL;
    }
    cg_matcher *m = cg_matcher_new(grammar);
    size_t n_words = cg_mask_words(grammar);
    if (!m) {
        set_error("cg_matcher_new: %s", cg_last_error());
        cg_free(grammar);
        return NULL;
    }
    return sampler_new(vocab, grammar, m, n_words, 0);
}

struct llama_sampler *cgram_llama_sampler_init_opts(const struct llama_vocab *vocab,
                                                    const char *source, size_t source_len,
                                                    const cg_compile_options *options)
{
    return cgram_llama_sampler_init_ext(vocab, source, source_len, options, NULL, 0, 0);
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

/* ------------------------------------------------------------------------ */
/* lazy samplers with llama.cpp's argument lists */

/* The triggers of llama.cpp's lazy samplers: the patterns (or, with words,
 * llama.cpp's one pattern made of them), then the tokens. */
static struct llama_sampler *lazy_gbnf(const struct llama_vocab *vocab, const char *grammar_str,
                                       const char *grammar_root, const char **texts,
                                       size_t n_texts, int words, const llama_token *tokens,
                                       size_t n_tokens, uint32_t flags)
{
    if (!grammar_str) {
        set_error("cgram_llama_sampler_init_lazy: the grammar text is NULL");
        return NULL;
    }
    if ((n_texts && !texts) || (n_tokens && !tokens)) {
        set_error("cgram_llama_sampler_init_lazy: a trigger list is NULL");
        return NULL;
    }
    char *joined = NULL;
    size_t n_patterns = n_texts;
    if (words && n_texts > 0) {
        /* llama.cpp's llama_sampler_init_grammar_lazy: one pattern,
         * "[\s\S]*?(" the escaped words joined by "|" ")[\s\S]*". */
        size_t len = 32;
        for (size_t i = 0; i < n_texts; i++) {
            if (!texts[i]) {
                set_error("cgram_llama_sampler_init_lazy: trigger word %zu is NULL", i);
                return NULL;
            }
            len += 2 * strlen(texts[i]) + 1;
        }
        joined = malloc(len);
        if (!joined) {
            set_error("cgram_llama: out of memory");
            return NULL;
        }
        char *p = joined;
        p += sprintf(p, "[\\s\\S]*?(");
        for (size_t i = 0; i < n_texts; i++) {
            if (i > 0)
                *p++ = '|';
            for (const char *w = texts[i]; *w; w++) {
                if (strchr(".^$|()*+?[]{}\\", *w))
                    *p++ = '\\';
                *p++ = *w;
            }
        }
        strcpy(p, ")[\\s\\S]*");
        n_patterns = 1;
    }
    size_t n = n_patterns + n_tokens;
    cg_trigger *list = calloc(n ? n : 1, sizeof *list);
    if (!list) {
        free(joined);
        set_error("cgram_llama: out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n_patterns; i++) {
        list[i].kind = CG_TRIGGER_PATTERN;
        list[i].text = joined ? joined : texts[i];
    }
    for (size_t i = 0; i < n_tokens; i++) {
        list[n_patterns + i].kind = CG_TRIGGER_TOKEN;
        list[n_patterns + i].token = tokens[i];
    }
    cg_compile_options opts;
    cg_compile_options_init(&opts);
    opts.root = grammar_root;
    struct llama_sampler *s = cgram_llama_sampler_init_ext(
        vocab, grammar_str, strlen(grammar_str), &opts, list, n, flags | CGRAM_LLAMA_LAZY);
    free(list);
    free(joined);
    return s;
}

struct llama_sampler *cgram_llama_sampler_init_lazy_patterns(
    const struct llama_vocab *vocab, const char *grammar_str, const char *grammar_root,
    const char **trigger_patterns, size_t num_trigger_patterns, const llama_token *trigger_tokens,
    size_t num_trigger_tokens)
{
    return lazy_gbnf(vocab, grammar_str, grammar_root, trigger_patterns, num_trigger_patterns, 0,
                     trigger_tokens, num_trigger_tokens, 0);
}

struct llama_sampler *cgram_llama_sampler_init_lazy(const struct llama_vocab *vocab,
                                                    const char *grammar_str,
                                                    const char *grammar_root,
                                                    const char **trigger_words,
                                                    size_t num_trigger_words,
                                                    const llama_token *trigger_tokens,
                                                    size_t num_trigger_tokens)
{
    return lazy_gbnf(vocab, grammar_str, grammar_root, trigger_words, num_trigger_words, 1,
                     trigger_tokens, num_trigger_tokens, 0);
}

struct llama_sampler *cgram_llama_sampler_init_lazy_ext(
    const struct llama_vocab *vocab, const char *grammar_str, const char *grammar_root,
    const char **trigger_texts, size_t num_trigger_texts, int texts_are_words,
    const llama_token *trigger_tokens, size_t num_trigger_tokens, uint32_t flags)
{
    return lazy_gbnf(vocab, grammar_str, grammar_root, trigger_texts, num_trigger_texts,
                     texts_are_words, trigger_tokens, num_trigger_tokens, flags);
}
