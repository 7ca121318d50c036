/*
 * The cgram drop-in for unmodified llama.cpp programs (libcgram-llama.so).
 *
 * llama.cpp built with shared libraries (its default) has its programs and
 * libllama-common.so call the grammar entry points of libllama.so through
 * the dynamic symbol table. This library defines the same entry points:
 *
 *   llama_sampler_init_grammar
 *   llama_sampler_init_grammar_lazy           (trigger words; deprecated)
 *   llama_sampler_init_grammar_lazy_patterns  (tool calls)
 *
 * so that, loaded before libllama (LD_PRELOAD, or the cgram-llama launcher
 * that sets it; on macOS DYLD_INSERT_LIBRARIES, through the interpose
 * section at the end of this file), every grammar sampler a program
 * creates is a cgram sampler:
 * llama-server's "grammar", "json_schema" and response_format requests
 * (converted to GBNF by llama.cpp as usual), its tool-call grammars with
 * their triggers, llama-cli's --grammar and --json-schema.
 *
 * Behaviour:
 *   - The first grammar of the process logs (through llama.cpp's log, at
 *     warning level so that llama-server shows it by default) a line
 *     "cgram <version>: llama.cpp grammar samplers run on cgram".
 *   - A grammar llama.cpp would refuse (a GBNF syntax error) is refused the
 *     way llama.cpp refuses it: NULL and an error line naming the reason.
 *   - A grammar or a trigger pattern cgram cannot take but llama.cpp may (a
 *     limit, a backreference, a pattern our std::regex reading refuses) is
 *     handed to llama.cpp's own sampler, with a warning line: installing
 *     cgram never makes a working request fail.
 *   - An empty grammar is llama.cpp's business (a sampler that does
 *     nothing).
 *   - Control tokens match grammar text by their text, as llama.cpp's own
 *     sampler matches them (tool-call grammars spell tokens such as
 *     <|tool_call> as text); CGRAM_LLAMA_SPECIAL=strict keeps them out of
 *     text, as cgram does by default.
 *   - llama_model_free is wrapped too: it drops the model's cached cgram
 *     vocabulary and grammars before llama.cpp frees the model.
 *
 * Environment:
 *   CGRAM_LLAMA=off         llama.cpp's own samplers (nothing else changes)
 *   CGRAM_LLAMA_CACHE_MB=N  the grammar cache's budget (default 256)
 *   CGRAM_LLAMA_STATS=1     log, when a sampler is freed, the time spent in
 *                           it: creation, every apply and accept, in wall
 *                           time and in the thread's CPU time (for
 *                           llama.cpp's own samplers too: the benchmark)
 *   CGRAM_LLAMA_VERBOSE=1   log each sampler created and each trigger that
 *                           fires
 *   (Those lines are at info level: llama-server shows them with
 *   --log-verbosity 4.)
 *   CGRAM_LLAMA_DUMP=DIR    write each grammar a program creates to
 *                           DIR/grammar-N.gbnf, with its triggers (one per
 *                           line, "pattern:", "word:" or "token:") in
 *                           DIR/grammar-N.triggers: for benchmarks and bug
 *                           reports
 *   CGRAM_LLAMA_SPECIAL=strict  see above
 *
 * Requirements: a llama.cpp built with shared libraries. One binary serves
 * several versions: the sampler interface only grows at its end, cgram's
 * sampler sets the six members every version has and leaves the rest
 * absent (NULL, with spare room after them), and functions older versions
 * lack are looked up before they are called (llama_log_get: cgram_llama.c
 * with CGRAM_LLAMA_RUNTIME_LOOKUP). The drop-in does not link libllama: it
 * calls the one the program loaded. At the first grammar it checks, and
 * stays off with one line saying why (on stderr or in the log) when a check
 * fails:
 *   1. this libllama has every function it calls and every entry point it
 *      replaces (by name: another version may lack one);
 *   2. this libllama drives the sampler interface as cgram lays it out
 *      (check_interface: a probe sampler through llama_sampler_name,
 *      _accept, _apply, _reset, _clone and _free, each of which must reach
 *      its own member with the probe's context).
 * What it relies on beyond these checks is written down in
 * cgram_llama_abi.h (the token data layout, the signatures).
 * scripts/llama-matrix.sh runs it under the llama.cpp of several
 * llama-cpp-python releases, and under a stand-in libllama with another
 * interface layout (tests/c/fake_llama.c), where it must stay off.
 *
 * Windows has no preload. There this file is built into a proxy DLL that
 * takes the place of llama.cpp's own llama.dll
 * (scripts/install-llama-dropin-windows.sh): the original is renamed
 * (CGRAM_LLAMA_ORIGINAL_DLL, "llama-cgram-original.dll"), the proxy
 * exports every function the original exports, as forwarders to it,
 * except the entry points above, which it defines here. The proxy is
 * linked against an import library of the original, so the adapter's
 * calls to llama.cpp (cgram_llama.c) go to the original; the functions it
 * replaces are found in the original with GetProcAddress. Everything
 * else (the checks, the environment, the log lines) is as on Linux.
 */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "cgram_llama.h"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The few system services the drop-in uses, for each system: running a
 * function once, finding llama.cpp's functions, and the clocks of
 * CGRAM_LLAMA_STATS. On Unix these expand to exactly the calls the
 * drop-in has always made (pthread_once, dlsym). */
#if defined(_WIN32)
/* The proxy defines llama.cpp's entry points itself and exports them
 * through its .def file; llama.h must not declare them dllimport (it does
 * with LLAMA_SHARED alone, except under MinGW), or the definitions below
 * would clash with that. */
#if defined(LLAMA_SHARED) && !defined(LLAMA_BUILD) && !defined(__MINGW32__)
#error "build the Windows drop-in without LLAMA_SHARED (or with LLAMA_BUILD too): it defines llama.dll's entry points"
#endif
/* The original llama.dll, renamed beside the proxy. The proxy imports
 * from it (its import library), so the loader has loaded it before any of
 * this runs. */
#if !defined(CGRAM_LLAMA_ORIGINAL_DLL)
#define CGRAM_LLAMA_ORIGINAL_DLL "llama-cgram-original.dll"
#endif

#define dropin_once INIT_ONCE
#define DROPIN_ONCE_INIT INIT_ONCE_STATIC_INIT

struct once_call {
    void (*fn)(void);
};

static BOOL CALLBACK once_callback(PINIT_ONCE once, PVOID param, PVOID *context)
{
    (void)once;
    (void)context;
    ((const struct once_call *)param)->fn();
    return TRUE;
}

static void run_once(dropin_once *flag, void (*fn)(void))
{
    struct once_call call = {fn};
    InitOnceExecuteOnce(flag, once_callback, &call, NULL);
}

/* A function of the original llama.dll, or NULL. Through void (*)(void),
 * the generic function pointer type, so that casting it to the real type
 * draws no warning. */
static void (*original_function(const char *name))(void)
{
    HMODULE original = GetModuleHandleA(CGRAM_LLAMA_ORIGINAL_DLL);
    return original ? (void (*)(void))GetProcAddress(original, name) : NULL;
}

/* The replaced entry points come from the original llama.dll, and so do
 * the functions the proxy calls (the import library names that DLL). */
#define FIND_NEXT(type, name) ((type)original_function(name))
#define FIND_DEFAULT(name) original_function(name)
#else
#define dropin_once pthread_once_t
#define DROPIN_ONCE_INIT PTHREAD_ONCE_INIT
#define run_once pthread_once
/* The definitions that come after the drop-in's (libllama's), and any
 * definition in the process. FIND_NEXT is only ever the right-hand side of
 * an assignment (hence no parentheses around it: the expansion is the
 * drop-in's code as it was before Windows). */
#define FIND_NEXT(type, name) (type)dlsym(RTLD_NEXT, name)
#define FIND_DEFAULT(name) dlsym(RTLD_DEFAULT, name)
#endif

typedef struct llama_sampler *(*init_grammar_fn)(const struct llama_vocab *, const char *,
                                                 const char *);
typedef struct llama_sampler *(*init_lazy_fn)(const struct llama_vocab *, const char *,
                                              const char *, const char **, size_t,
                                              const llama_token *, size_t);
typedef void (*model_free_fn)(struct llama_model *);

static struct {
    init_grammar_fn grammar;
    init_lazy_fn lazy_words;
    init_lazy_fn lazy_patterns;
    model_free_fn model_free;
    int enabled;
    int stats;
    int verbose;
    uint32_t flags; /* CGRAM_LLAMA_SPECIAL_AS_TEXT unless strict */
    const char *dump; /* CGRAM_LLAMA_DUMP: a directory */
    int broken;       /* libllama lacks functions the drop-in calls */
    int interface_unknown; /* its sampler interface failed check_interface */
} dropin;

static dropin_once setup_once = DROPIN_ONCE_INIT;
static dropin_once announce_once = DROPIN_ONCE_INIT;

static int env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "off") != 0;
}

/* The libllama functions the drop-in calls (it does not link libllama:
 * they are found in the program's, at run time). */
static const char *const needed[] = {
    "llama_model_get_vocab", "llama_sampler_accept", "llama_sampler_apply",
    "llama_sampler_clone",   "llama_sampler_free",   "llama_sampler_init",
    "llama_sampler_name",    "llama_sampler_reset",  "llama_token_to_piece",
    "llama_vocab_eos",       "llama_vocab_eot",      "llama_vocab_get_attr",
    "llama_vocab_get_text",  "llama_vocab_is_eog",   "llama_vocab_n_tokens",
};

/* ------------------------------------------------------------------------ */
/* the interface check */

/* The sampler interface is checked at run time, before cgram's samplers are
 * handed to llama.cpp: a probe sampler whose six members each record
 * which was called is driven through libllama's own llama_sampler_name,
 * _accept, _apply, _reset, _clone and _free. A libllama that reads the
 * interface or struct llama_sampler another way (a member inserted before
 * the six, another order, the context elsewhere) calls the wrong member or
 * passes another context, and the drop-in stays off. Every probe member has
 * the same shape, taking and returning pointers (what every C calling
 * convention llama.cpp runs on passes in the same registers as the real
 * members' arguments and results), so that whichever member libllama calls
 * returns something harmless: the check itself cannot crash the program.
 * Which slots were called is in a static (setup runs once). */
#define PROBE_NAME "cgram-interface-probe"

static struct {
    int slot;         /* the member last called: 0..5, -1 none */
    int foreign_ctx;  /* a member got a sampler whose ctx is not the probe's */
    int sampler_ctx;  /* what the probe's samplers point at */
} probe;

static const char *const probe_slot_names[6] = {"name", "accept", "apply",
                                                "reset", "clone", "free"};

static void *probe_member(int slot, void *smpl)
{
    probe.slot = slot;
    if (!smpl || ((struct llama_sampler *)smpl)->ctx != &probe.sampler_ctx)
        probe.foreign_ctx = 1;
    return NULL;
}

static void *probe_name(void *smpl, void *unused)
{
    (void)unused;
    probe_member(0, smpl);
    return (void *)PROBE_NAME;
}
static void *probe_accept(void *smpl, void *unused)
{
    (void)unused;
    return probe_member(1, smpl);
}
static void *probe_apply(void *smpl, void *unused)
{
    (void)unused;
    return probe_member(2, smpl);
}
static void *probe_reset(void *smpl, void *unused)
{
    (void)unused;
    return probe_member(3, smpl);
}
static void *probe_clone(void *smpl, void *unused);
static void *probe_free(void *smpl, void *unused)
{
    (void)unused;
    return probe_member(5, smpl);
}

/* Members stored through the generic function pointer type and read back
 * as each member's type by libllama: that the call matches is the point. */
typedef void *(*probe_fn)(void *, void *);
static struct {
    struct llama_sampler_i iface;
    void *reserved[16];
} probe_iface;

static void *probe_clone(void *smpl, void *unused)
{
    (void)unused;
    probe_member(4, smpl);
    if (probe.slot != 4 || probe.foreign_ctx)
        return NULL;
    return llama_sampler_init(&probe_iface.iface, &probe.sampler_ctx);
}

static void probe_iface_init(void)
{
    probe_fn fns[6] = {probe_name, probe_accept, probe_apply, probe_reset, probe_clone, probe_free};
    /* The six members in their order, each a function pointer. */
    memcpy(&probe_iface.iface, fns, sizeof fns);
}

/* NULL when libllama drives the interface as cgram's samplers expect, else
 * what went otherwise. On a mismatch the probe sampler is left allocated
 * (a few bytes, once): freeing it would go through the interface that
 * just proved foreign. */
static const char *check_interface(void)
{
    static char why[160];
    probe_iface_init();
    probe.slot = -1;
    probe.foreign_ctx = 0;
    struct llama_sampler *s = llama_sampler_init(&probe_iface.iface, &probe.sampler_ctx);
    if (!s || s->ctx != &probe.sampler_ctx)
        return "llama_sampler_init does not keep the context where cgram reads it";
#define EXPECT(slot_index, function, call)                                                    \
    do {                                                                                       \
        probe.slot = -1;                                                                       \
        call;                                                                                  \
        if (probe.slot != (slot_index) || probe.foreign_ctx) {                                 \
            snprintf(why, sizeof why, "%s reached the member %s%s", function,                  \
                     probe.slot < 0 ? "(none)" : probe_slot_names[probe.slot],                 \
                     probe.foreign_ctx ? " with another sampler" : "");                        \
            return why;                                                                        \
        }                                                                                      \
    } while (0)
    const char *name = NULL;
    EXPECT(0, "llama_sampler_name", name = llama_sampler_name(s));
    if (!name || strcmp(name, PROBE_NAME) != 0)
        return "llama_sampler_name does not return the member's name";
    EXPECT(1, "llama_sampler_accept", llama_sampler_accept(s, 7));
    llama_token_data data[2] = {{1, 0.0f, 0.0f}, {2, 0.0f, 0.0f}};
    llama_token_data_array cur = {data, 2, -1, false};
    EXPECT(2, "llama_sampler_apply", llama_sampler_apply(s, &cur));
    EXPECT(3, "llama_sampler_reset", llama_sampler_reset(s));
    struct llama_sampler *copy = NULL;
    EXPECT(4, "llama_sampler_clone", copy = llama_sampler_clone(s));
    if (!copy)
        return "llama_sampler_clone does not return the member's sampler";
    EXPECT(5, "llama_sampler_free", llama_sampler_free(copy));
    EXPECT(5, "llama_sampler_free", llama_sampler_free(s));
#undef EXPECT
    return NULL;
}

static void setup(void)
{
    /* A libllama without one of them (another version) would make the
     * first call to it abort the program: stay off instead, and say so on
     * stderr (llama.cpp's log may be what is missing). */
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        if (!FIND_DEFAULT(needed[i])) {
            fprintf(stderr,
                    "cgram: the libllama of this program has no %s (another llama.cpp version "
                    "than the drop-in was built for?): cgram is off\n",
                    needed[i]);
            dropin.enabled = 0;
            dropin.grammar = FIND_NEXT(init_grammar_fn, "llama_sampler_init_grammar");
            dropin.lazy_words = FIND_NEXT(init_lazy_fn, "llama_sampler_init_grammar_lazy");
            dropin.lazy_patterns =
                FIND_NEXT(init_lazy_fn, "llama_sampler_init_grammar_lazy_patterns");
            dropin.model_free = FIND_NEXT(model_free_fn, "llama_model_free");
            dropin.broken = 1;
            return;
        }
    }
    dropin.grammar = FIND_NEXT(init_grammar_fn, "llama_sampler_init_grammar");
    dropin.lazy_words = FIND_NEXT(init_lazy_fn, "llama_sampler_init_grammar_lazy");
    dropin.lazy_patterns = FIND_NEXT(init_lazy_fn, "llama_sampler_init_grammar_lazy_patterns");
    dropin.model_free = FIND_NEXT(model_free_fn, "llama_model_free");
    const char *mode = getenv("CGRAM_LLAMA");
    dropin.enabled = !(mode && (strcmp(mode, "off") == 0 || strcmp(mode, "0") == 0));
    dropin.stats = env_on("CGRAM_LLAMA_STATS");
    dropin.verbose = env_on("CGRAM_LLAMA_VERBOSE");
    dropin.dump = getenv("CGRAM_LLAMA_DUMP");
    if (dropin.dump && !*dropin.dump)
        dropin.dump = NULL;
    const char *special = getenv("CGRAM_LLAMA_SPECIAL");
    dropin.flags = special && strcmp(special, "strict") == 0 ? 0 : CGRAM_LLAMA_SPECIAL_AS_TEXT;
    if (!dropin.grammar || !dropin.lazy_words || !dropin.lazy_patterns || !dropin.model_free) {
        dropin.enabled = 0;
        cgram_llama_log(GGML_LOG_LEVEL_WARN,
                        "cgram: this libllama lacks the grammar sampler entry points cgram "
                        "replaces (llama_sampler_init_grammar*, llama_model_free): cgram is off");
        return;
    }
    const char *why = dropin.enabled ? check_interface() : NULL;
    if (why) {
        dropin.enabled = 0;
        dropin.interface_unknown = 1;
        cgram_llama_log(GGML_LOG_LEVEL_WARN,
                        "cgram: this libllama's sampler interface is not the one cgram knows "
                        "(%s): cgram is off, llama.cpp's own grammar samplers run",
                        why);
    }
}

/* At warning level: programs such as llama-server hide library info lines
 * unless asked (--log-verbosity 4), and this one should show. */
static void announce(void)
{
    if (dropin.enabled)
        cgram_llama_log(GGML_LOG_LEVEL_WARN,
                        "cgram %s: llama.cpp grammar samplers run on cgram (CGRAM_LLAMA=off "
                        "turns it off)",
                        cg_version());
    else if (!dropin.interface_unknown)
        cgram_llama_log(GGML_LOG_LEVEL_WARN,
                        "cgram %s: loaded but off (CGRAM_LLAMA=off): llama.cpp's own grammar "
                        "samplers",
                        cg_version());
}

#if defined(_WIN32)
static int64_t now_ns(void)
{
    LARGE_INTEGER count, freq;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&freq);
    /* Seconds and the rest apart: count * 1e9 would overflow after days. */
    int64_t s = count.QuadPart / freq.QuadPart, rest = count.QuadPart % freq.QuadPart;
    return s * 1000000000 + rest * 1000000000 / freq.QuadPart;
}

/* The calling thread's CPU time (kernel and user, in 100 ns units).
 * Windows counts it in scheduler ticks (about 15.6 ms), so that the CPU
 * columns of CGRAM_LLAMA_STATS are coarse there (a sum over many calls
 * still says where the time goes); the wall-time ones are exact. */
static int64_t cpu_ns(void)
{
    FILETIME created, exited, kernel, user;
    if (!GetThreadTimes(GetCurrentThread(), &created, &exited, &kernel, &user))
        return 0;
    uint64_t k = ((uint64_t)kernel.dwHighDateTime << 32) | kernel.dwLowDateTime;
    uint64_t u = ((uint64_t)user.dwHighDateTime << 32) | user.dwLowDateTime;
    return (int64_t)(k + u) * 100;
}
#else
static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The calling thread's CPU time: what the engine itself costs, without the
 * time the thread waits for a core (llama.cpp's compute threads may still
 * spin on it between decodes). */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
#endif

/* ------------------------------------------------------------------------ */
/* the timing wrapper (CGRAM_LLAMA_STATS) */

struct timed {
    struct llama_sampler *inner;
    const char *engine; /* "cgram" or "llama.cpp" */
    int64_t init_ns, apply_ns, accept_ns;          /* wall time */
    int64_t init_cpu, apply_cpu, accept_cpu;       /* the thread's CPU time */
    int64_t first_apply_cpu;                       /* of the first apply */
    long apply_n, accept_n;
    int clone;
};

/* Padded as the cgram sampler's interface (see cgram_llama.c). */
struct timed_iface_padded {
    struct llama_sampler_i iface;
    void *reserved[16];
};
static struct timed_iface_padded timed_iface;

static const char *timed_name(const struct llama_sampler *smpl)
{
    const struct timed *t = smpl->ctx;
    return llama_sampler_name(t->inner);
}

static void timed_accept(struct llama_sampler *smpl, llama_token token)
{
    struct timed *t = smpl->ctx;
    int64_t t0 = now_ns(), c0 = cpu_ns();
    llama_sampler_accept(t->inner, token);
    t->accept_cpu += cpu_ns() - c0;
    t->accept_ns += now_ns() - t0;
    t->accept_n++;
}

static void timed_apply(struct llama_sampler *smpl, llama_token_data_array *cur_p)
{
    struct timed *t = smpl->ctx;
    int64_t t0 = now_ns(), c0 = cpu_ns();
    llama_sampler_apply(t->inner, cur_p);
    int64_t spent = cpu_ns() - c0;
    if (t->apply_n == 0)
        t->first_apply_cpu = spent;
    t->apply_cpu += spent;
    t->apply_ns += now_ns() - t0;
    t->apply_n++;
}

static void timed_reset(struct llama_sampler *smpl)
{
    struct timed *t = smpl->ctx;
    llama_sampler_reset(t->inner);
}

static struct llama_sampler *timed_wrap(struct llama_sampler *inner, const char *engine,
                                        int64_t init_ns, int64_t init_cpu, int clone);

static struct llama_sampler *timed_clone(const struct llama_sampler *smpl)
{
    const struct timed *t = smpl->ctx;
    struct llama_sampler *inner = llama_sampler_clone(t->inner);
    return inner ? timed_wrap(inner, t->engine, 0, 0, 1) : NULL;
}

static void timed_free(struct llama_sampler *smpl)
{
    struct timed *t = smpl->ctx;
    if (!t)
        return;
    int triggered = -1;
    cg_matcher *m = cgram_llama_sampler_matcher(t->inner);
    if (m)
        triggered = cg_is_triggered(m, NULL, NULL);
    cgram_llama_log(GGML_LOG_LEVEL_INFO,
                    "cgram-stats: engine=%s clone=%d init_us=%.1f apply_n=%ld apply_us=%.1f "
                    "accept_n=%ld accept_us=%.1f triggered=%d cpu: init_us=%.1f apply_us=%.1f "
                    "accept_us=%.1f first_apply_us=%.1f",
                    t->engine, t->clone, t->init_ns / 1e3, t->apply_n, t->apply_ns / 1e3,
                    t->accept_n, t->accept_ns / 1e3, triggered, t->init_cpu / 1e3,
                    t->apply_cpu / 1e3, t->accept_cpu / 1e3, t->first_apply_cpu / 1e3);
    llama_sampler_free(t->inner);
    free(t);
    smpl->ctx = NULL;
}

static struct timed_iface_padded timed_iface = {
    .iface =
        {
            .name = timed_name,
            .accept = timed_accept,
            .apply = timed_apply,
            .reset = timed_reset,
            .clone = timed_clone,
            .free = timed_free,
        },
};

static struct llama_sampler *timed_wrap(struct llama_sampler *inner, const char *engine,
                                        int64_t init_ns, int64_t init_cpu, int clone)
{
    struct timed *t = calloc(1, sizeof *t);
    if (!t) {
        llama_sampler_free(inner);
        return NULL;
    }
    t->inner = inner;
    t->engine = engine;
    t->init_ns = init_ns;
    t->init_cpu = init_cpu;
    t->clone = clone;
    return llama_sampler_init(&timed_iface.iface, t);
}

/* ------------------------------------------------------------------------ */
/* the entry points */

enum kind { PLAIN, LAZY_WORDS, LAZY_PATTERNS };

/* llama.cpp's own sampler. It may throw (a trigger pattern std::regex
 * rejects): nothing of ours is held here, so the exception goes through
 * to llama.cpp's caller as it would without cgram. */
static struct llama_sampler *original(enum kind kind, const struct llama_vocab *vocab,
                                      const char *str, const char *root, const char **texts,
                                      size_t n_texts, const llama_token *tokens,
                                      size_t n_tokens)
{
    /* A pointer is NULL only when libllama lacks the function, and then
     * its program does not call it either. */
    switch (kind) {
    case PLAIN:
        return dropin.grammar ? dropin.grammar(vocab, str, root) : NULL;
    case LAZY_WORDS:
        return dropin.lazy_words
                   ? dropin.lazy_words(vocab, str, root, texts, n_texts, tokens, n_tokens)
                   : NULL;
    case LAZY_PATTERNS:
        return dropin.lazy_patterns
                   ? dropin.lazy_patterns(vocab, str, root, texts, n_texts, tokens, n_tokens)
                   : NULL;
    }
    return NULL;
}

/* CGRAM_LLAMA_DUMP: the grammar and its triggers, as files. */
static void dump(enum kind kind, const char *str, const char **texts, size_t n_texts,
                 const llama_token *tokens, size_t n_tokens)
{
#if defined(_WIN32)
    static volatile LONG counter;
    unsigned n = (unsigned)InterlockedIncrement(&counter) - 1;
#else
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static unsigned counter;
    pthread_mutex_lock(&lock);
    unsigned n = counter++;
    pthread_mutex_unlock(&lock);
#endif
    char path[4096];
    snprintf(path, sizeof path, "%s/grammar-%04u.gbnf", dropin.dump, n);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fputs(str, f);
    fclose(f);
    if (kind == PLAIN)
        return;
    snprintf(path, sizeof path, "%s/grammar-%04u.triggers", dropin.dump, n);
    f = fopen(path, "wb");
    if (!f)
        return;
    for (size_t i = 0; i < n_texts; i++)
        fprintf(f, "%s:%s\n", kind == LAZY_WORDS ? "word" : "pattern", texts[i] ? texts[i] : "");
    for (size_t i = 0; i < n_tokens; i++)
        fprintf(f, "token:%d\n", (int)tokens[i]);
    fclose(f);
}

static struct llama_sampler *create(enum kind kind, const struct llama_vocab *vocab,
                                    const char *str, const char *root, const char **texts,
                                    size_t n_texts, const llama_token *tokens, size_t n_tokens)
{
    run_once(&setup_once, setup);
    int64_t t0 = now_ns(), c0 = cpu_ns();
    const char *engine = "llama.cpp";
    struct llama_sampler *s = NULL;
    int use_cgram = dropin.enabled && vocab && str && str[0] != '\0';
    if (str && str[0] != '\0' && !dropin.broken) {
        run_once(&announce_once, announce);
        if (dropin.dump)
            dump(kind, str, texts, n_texts, tokens, n_tokens);
    }
    if (use_cgram) {
        if (kind == PLAIN) {
            cg_compile_options opts;
            cg_compile_options_init(&opts);
            opts.root = root;
            s = cgram_llama_sampler_init_ext(vocab, str, strlen(str), &opts, NULL, 0,
                                             dropin.flags);
        } else {
            s = cgram_llama_sampler_init_lazy_ext(vocab, str, root, texts, n_texts,
                                                  kind == LAZY_WORDS, tokens, n_tokens,
                                                  dropin.flags);
        }
        if (s) {
            engine = "cgram";
            if (dropin.verbose)
                cgram_llama_log(GGML_LOG_LEVEL_INFO,
                                "cgram: %s grammar sampler (%zu bytes of GBNF, %zu trigger "
                                "patterns/words, %zu trigger tokens) in %.2f ms",
                                kind == PLAIN ? "a" : "a lazy", strlen(str), n_texts, n_tokens,
                                (now_ns() - t0) / 1e6);
        } else {
            int code = cgram_llama_last_error_code();
            int in_triggers = cgram_llama_last_error_in_triggers();
            if (!in_triggers && (code == CG_ERR_PARSE || code == CG_ERR_INVALID_ARGUMENT)) {
                /* llama.cpp refuses this grammar too: its failure path. */
                cgram_llama_log(GGML_LOG_LEVEL_ERROR, "cgram: failed to parse grammar: %s",
                                cgram_llama_last_error());
                return NULL;
            }
            if (in_triggers)
                cgram_llama_log(GGML_LOG_LEVEL_WARN,
                                "cgram: %s; llama.cpp's own sampler gets this lazy grammar (it "
                                "refuses such a trigger too, or reads it its own way)",
                                cgram_llama_last_error());
            else
                cgram_llama_log(GGML_LOG_LEVEL_WARN,
                                "cgram: %s; this grammar goes to llama.cpp's own sampler instead",
                                cgram_llama_last_error());
        }
    }
    if (!s) {
        s = original(kind, vocab, str, root, texts, n_texts, tokens, n_tokens);
        if (!s)
            return NULL;
    }
    if (dropin.stats && !dropin.broken)
        s = timed_wrap(s, engine, now_ns() - t0, cpu_ns() - c0, 0);
    return s;
}

/* The entry points. On ELF systems the drop-in defines llama.cpp's own
 * names: loaded first (LD_PRELOAD), its definitions are the ones every
 * other library binds to. macOS binds each call to the library it was
 * linked against (two-level namespace), so a definition in an inserted
 * library changes nothing; dyld replaces a function only when the inserted
 * library lists it in its __DATA,__interpose section, as a pair of the
 * replacement and the function it replaces. There the entry points get
 * names of their own and are listed at the end of this file. On Windows
 * the proxy llama.dll defines llama.cpp's names and exports them (its
 * .def file), in place of forwarders to the original. */
#if defined(__APPLE__)
#define ENTRY(name) cgram_dropin_##name
#else
#define ENTRY(name) name
#endif

struct llama_sampler *ENTRY(llama_sampler_init_grammar)(const struct llama_vocab *vocab,
                                                        const char *grammar_str,
                                                        const char *grammar_root)
{
    return create(PLAIN, vocab, grammar_str, grammar_root, NULL, 0, NULL, 0);
}

struct llama_sampler *ENTRY(llama_sampler_init_grammar_lazy)(
    const struct llama_vocab *vocab, const char *grammar_str, const char *grammar_root,
    const char **trigger_words, size_t num_trigger_words, const llama_token *trigger_tokens,
    size_t num_trigger_tokens)
{
    return create(LAZY_WORDS, vocab, grammar_str, grammar_root, trigger_words, num_trigger_words,
                  trigger_tokens, num_trigger_tokens);
}

struct llama_sampler *ENTRY(llama_sampler_init_grammar_lazy_patterns)(
    const struct llama_vocab *vocab, const char *grammar_str, const char *grammar_root,
    const char **trigger_patterns, size_t num_trigger_patterns, const llama_token *trigger_tokens,
    size_t num_trigger_tokens)
{
    return create(LAZY_PATTERNS, vocab, grammar_str, grammar_root, trigger_patterns,
                  num_trigger_patterns, trigger_tokens, num_trigger_tokens);
}

void ENTRY(llama_model_free)(struct llama_model *model)
{
    run_once(&setup_once, setup);
    if (model && !dropin.broken)
        cgram_llama_vocab_forget(llama_model_get_vocab(model));
    if (dropin.model_free)
        dropin.model_free(model);
}

#if defined(__APPLE__)
/* dyld's interpose tuples: every other image's calls to the second go to
 * the first (the drop-in's own calls, and dlsym(RTLD_NEXT), still reach
 * libllama's). The replaced functions are resolved at load time
 * (-undefined dynamic_lookup): the drop-in does not link libllama. */
#define INTERPOSE(name)                                                                       \
    __attribute__((used)) static const struct {                                               \
        const void *replacement;                                                              \
        const void *replaced;                                                                 \
    } interpose_##name __attribute__((section("__DATA,__interpose"))) = {                     \
        (const void *)&cgram_dropin_##name, (const void *)&name}
/* The deprecated word-trigger entry point is replaced like the others. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
INTERPOSE(llama_sampler_init_grammar);
INTERPOSE(llama_sampler_init_grammar_lazy);
INTERPOSE(llama_sampler_init_grammar_lazy_patterns);
INTERPOSE(llama_model_free);
#pragma clang diagnostic pop
#endif
