/*
 * cgram_llama_demo: llama.cpp generating with the cgram sampler in its
 * sampler chain, on CPU, and a same-run comparison with llama.cpp's own
 * grammar sampler.
 *
 *   cgram_llama_demo generate MODEL.gguf --kind gbnf|json_schema|regex|json
 *        --grammar FILE --prompt TEXT|@FILE [--root R] [--max-tokens N]
 *        [--seed S] [--temp T] [--top-k K] [--eog-bias B] [--max-ws W]
 *        [--threads N] [--out FILE]
 *
 *     Sampler chain: [logit bias B on the end-of-generation tokens],
 *     cgram, top-k, temperature, dist(seed) (greedy when T is 0), run by
 *     llama_sampler_sample. The output (without the end-of-generation
 *     token) goes to FILE. Then it is verified: the sampler reported no
 *     error, generation ended with an end-of-generation token, and a fresh
 *     cgram matcher re-reading the text (cg_accept_bytes) is accepting.
 *     Exit status 0 only then. --threads: llama.cpp's threads (default 1:
 *     on a machine shared with other work, two threads that wait for each
 *     other at every step make decoding erratic, up to ten times slower).
 *
 *   cgram_llama_demo compare MODEL.gguf --grammar FILE.gbnf --prompt TEXT|@FILE
 *        [--root R] [--max-tokens N] [--rounds R] [--threads N] [--label L]
 *        [--json FILE]
 *
 *     Greedy generation under the same GBNF with llama.cpp's grammar
 *     sampler (llama_sampler_init_grammar) and with cgram's, in this one
 *     process, on the same model and prompt:
 *       1. once, untimed: llama.cpp's sampler picks the tokens and a cgram
 *          sampler follows along; at every step both are applied to all
 *          n_vocab candidates and the masks compared token by token.
 *          Differences where llama.cpp is known to deviate (it admits
 *          control tokens by their text and bytes that are never valid
 *          UTF-8, and never admits a token whose text starts with a NUL
 *          byte) are counted apart; any other difference is a failure.
 *       2. R timed rounds (default 3), each running four configurations:
 *          cgram and llama.cpp, each "grammar first" (applied to all
 *          n_vocab candidates at every step, as llama.cpp's grammar_first
 *          and any chain with the grammar in front do) and "check first"
 *          (as llama.cpp's common sampler: the best unconstrained candidate
 *          is checked alone, and only if the grammar rejects it is the
 *          grammar applied to the whole vocabulary).
 *     Reports end-to-end tokens per second (sampler creation + prompt +
 *     generation; medians over the rounds) and the time of every
 *     full-vocabulary apply. Every run must produce the same text. cgram's
 *     vocabulary of the model is built once before the runs (the adapter
 *     caches it per process), and reported. Exit status 0 when the masks
 *     agree and the texts are equal.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "cgram_llama.h"
#include "demo_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *prog = "cgram_llama_demo";

static void die(const char *msg)
{
    fprintf(stderr, "%s: %s\n", prog, msg);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s\n", prog, path);
        exit(2);
    }
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    while ((n += fread(buf + n, 1, cap - n, f)) == cap) {
        cap *= 2;
        char *bigger = realloc(buf, cap + 1);
        if (!bigger)
            die("out of memory");
        buf = bigger;
    }
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* "@file" reads the file; anything else is the text itself. */
static char *text_arg(const char *arg)
{
    if (arg[0] == '@')
        return read_file(arg + 1, NULL);
    size_t n = strlen(arg);
    char *s = xmalloc(n + 1);
    memcpy(s, arg, n + 1);
    return s;
}

static void print_escaped(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c == '\\')
            fputs("\\\\", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}


/* ------------------------------------------------------------------------ */
struct host {
    struct llama_model *model;
    struct llama_context *ctx;
    const struct llama_vocab *vocab;
    int32_t n_vocab;
};

static void host_open(struct host *h, const char *path, int threads)
{
    llama_log_set(demo_quiet_log, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    h->model = llama_model_load_from_file(path, mp);
    if (!h->model) {
        fprintf(stderr, "%s: cannot load the model %s\n", prog, path);
        exit(2);
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = 512;
    cp.n_threads = threads > 0 ? threads : 1;
    cp.n_threads_batch = cp.n_threads;
    cp.no_perf = true;
    h->ctx = llama_init_from_model(h->model, cp);
    if (!h->ctx)
        die("cannot create the llama context");
    h->vocab = llama_model_get_vocab(h->model);
    h->n_vocab = llama_vocab_n_tokens(h->vocab);
}

static void host_close(struct host *h)
{
    llama_free(h->ctx);
    llama_model_free(h->model);
    llama_backend_free();
}

/* Clears the KV cache and evaluates the prompt (with BOS). */
static void eval_prompt(struct host *h, const char *prompt, int32_t *n_prompt)
{
    llama_memory_clear(llama_get_memory(h->ctx), true);
    int32_t len = (int32_t)strlen(prompt);
    int32_t n = -llama_tokenize(h->vocab, prompt, len, NULL, 0, true, false);
    if (n <= 0)
        die("cannot tokenize the prompt");
    llama_token *toks = xmalloc((size_t)n * sizeof *toks);
    if (llama_tokenize(h->vocab, prompt, len, toks, n, true, false) != n)
        die("cannot tokenize the prompt");
    if (llama_decode(h->ctx, llama_batch_get_one(toks, n)) != 0)
        die("llama_decode failed on the prompt");
    free(toks);
    *n_prompt = n;
}

static void eval_token(struct host *h, llama_token t)
{
    if (llama_decode(h->ctx, llama_batch_get_one(&t, 1)) != 0)
        die("llama_decode failed");
}

struct text {
    char *s;
    size_t len, cap;
};

static void text_add_token(struct host *h, struct text *out, llama_token t)
{
    char buf[256];
    int32_t n = llama_token_to_piece(h->vocab, t, buf, (int32_t)sizeof buf, 0, true);
    if (n < 0)
        die("a token piece longer than 256 bytes");
    if (out->len + (size_t)n + 1 > out->cap) {
        out->cap = (out->len + (size_t)n + 1) * 2;
        out->s = realloc(out->s, out->cap);
        if (!out->s)
            die("out of memory");
    }
    memcpy(out->s + out->len, buf, (size_t)n);
    out->len += (size_t)n;
    out->s[out->len] = 0;
}

/* A fresh cgram matcher re-reads the text: 1 when it is a complete
 * sentence of the grammar. */
static int verify_text(struct host *h, const char *source, size_t source_len,
                       const cg_compile_options *opts, const struct text *out, char *why,
                       size_t why_len)
{
    cg_vocab *v = cgram_llama_vocab_new(h->vocab);
    if (!v) {
        snprintf(why, why_len, "%s", cgram_llama_last_error());
        return 0;
    }
    cg_grammar *g = cg_compile(v, source, source_len, opts);
    cg_vocab_free(v);
    if (!g) {
        snprintf(why, why_len, "cg_compile: %s", cg_last_error());
        return 0;
    }
    cg_matcher *m = cg_matcher_new(g);
    cg_free(g);
    int ok = 0;
    if (!m)
        snprintf(why, why_len, "cg_matcher_new: %s", cg_last_error());
    else if (cg_accept_bytes(m, (const uint8_t *)out->s, out->len) != CG_OK)
        snprintf(why, why_len, "cg_accept_bytes: %s", cg_last_error());
    else if (cg_is_accepting(m) != 1)
        snprintf(why, why_len, "the text is an incomplete sentence of the grammar");
    else
        ok = 1;
    cg_matcher_free(m);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* options */

struct opts {
    const char *model, *kind, *grammar, *prompt, *root, *out, *label, *json;
    int max_tokens, top_k, max_ws, rounds, threads;
    unsigned seed;
    float temp, eog_bias;
};

static void usage(void)
{
    fprintf(stderr,
            "usage: %s generate MODEL.gguf --kind KIND --grammar FILE --prompt TEXT|@FILE\n"
            "           [--root R] [--max-tokens N] [--seed S] [--temp T] [--top-k K]\n"
            "           [--eog-bias B] [--max-ws W] [--threads N] [--out FILE]\n"
            "       %s compare MODEL.gguf --grammar FILE.gbnf --prompt TEXT|@FILE\n"
            "           [--root R] [--max-tokens N] [--rounds R] [--threads N] [--label L]\n"
            "           [--json FILE]\n",
            prog, prog);
    exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = "gbnf";
    o->max_tokens = 256;
    o->top_k = 40;
    o->temp = 0.7f;
    o->seed = 1;
    o->label = "";
    if (argc < 3)
        usage();
    o->model = argv[2];
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--kind"))
            o->kind = v;
        else if (!strcmp(a, "--grammar"))
            o->grammar = v;
        else if (!strcmp(a, "--prompt"))
            o->prompt = v;
        else if (!strcmp(a, "--root"))
            o->root = v;
        else if (!strcmp(a, "--out"))
            o->out = v;
        else if (!strcmp(a, "--label"))
            o->label = v;
        else if (!strcmp(a, "--json"))
            o->json = v;
        else if (!strcmp(a, "--max-tokens"))
            o->max_tokens = atoi(v);
        else if (!strcmp(a, "--top-k"))
            o->top_k = atoi(v);
        else if (!strcmp(a, "--threads"))
            o->threads = atoi(v);
        else if (!strcmp(a, "--rounds"))
            o->rounds = atoi(v);
        else if (!strcmp(a, "--max-ws"))
            o->max_ws = atoi(v);
        else if (!strcmp(a, "--seed"))
            o->seed = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--temp"))
            o->temp = strtof(v, NULL);
        else if (!strcmp(a, "--eog-bias"))
            o->eog_bias = strtof(v, NULL);
        else
            usage();
    }
    if (!o->grammar || !o->prompt)
        usage();
}

static uint32_t kind_of(const char *kind)
{
    if (!strcmp(kind, "gbnf"))
        return CG_KIND_GBNF;
    if (!strcmp(kind, "json_schema"))
        return CG_KIND_JSON_SCHEMA;
    if (!strcmp(kind, "regex"))
        return CG_KIND_REGEX;
    if (!strcmp(kind, "json"))
        return CG_KIND_ANY_JSON;
    die("--kind is gbnf, json_schema, regex or json");
    return 0;
}

/* ------------------------------------------------------------------------ */
/* generate */

static int cmd_generate(const struct opts *o)
{
    size_t source_len = 0;
    char *source = read_file(o->grammar, &source_len);
    char *prompt = text_arg(o->prompt);
    struct host h;
    double t_load = now_s();
    host_open(&h, o->model, o->threads);
    t_load = now_s() - t_load;

    cg_compile_options copts;
    cg_compile_options_init(&copts);
    copts.kind = kind_of(o->kind);
    copts.root = o->root;
    copts.json_max_whitespace = (uint32_t)o->max_ws;

    double t0 = now_s();
    struct llama_sampler *g = cgram_llama_sampler_init_opts(h.vocab, source, source_len, &copts);
    double t_init = now_s() - t0;
    if (!g) {
        fprintf(stderr, "%s: cgram_llama_sampler_init failed: %s\n", prog, cgram_llama_last_error());
        return 1;
    }

    struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    if (o->eog_bias != 0) {
        llama_logit_bias bias[64];
        int32_t nb = 0;
        for (int32_t t = 0; t < h.n_vocab && nb < 64; t++)
            if (llama_vocab_is_eog(h.vocab, t))
                bias[nb++] = (llama_logit_bias){t, o->eog_bias};
        llama_sampler_chain_add(chain, llama_sampler_init_logit_bias(h.n_vocab, nb, bias));
    }
    llama_sampler_chain_add(chain, g); /* the chain owns it; g stays valid */
    if (o->temp <= 0) {
        llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    } else {
        llama_sampler_chain_add(chain, llama_sampler_init_top_k(o->top_k));
        llama_sampler_chain_add(chain, llama_sampler_init_temp(o->temp));
        llama_sampler_chain_add(chain, llama_sampler_init_dist(o->seed));
    }

    int32_t n_prompt = 0;
    double t_prompt = now_s();
    eval_prompt(&h, prompt, &n_prompt);
    t_prompt = now_s() - t_prompt;

    struct text out = {0};
    int n_gen = 0, ended = 0;
    double t_gen = now_s();
    while (n_gen < o->max_tokens) {
        llama_token t = llama_sampler_sample(chain, h.ctx, -1); /* apply + accept */
        n_gen++;
        if (llama_vocab_is_eog(h.vocab, t)) {
            ended = 1;
            break;
        }
        text_add_token(&h, &out, t);
        eval_token(&h, t);
    }
    t_gen = now_s() - t_gen;

    const char *err = cgram_llama_sampler_error(g);
    char why[1200] = "";
    int verified = !err && ended && verify_text(&h, source, source_len, &copts, &out, why, sizeof why);
    if (err)
        snprintf(why, sizeof why, "the sampler reported: %s", err);
    else if (!ended)
        snprintf(why, sizeof why, "no end-of-generation token within %d tokens", o->max_tokens);

    printf("output (%d tokens): ", n_gen);
    print_escaped(stdout, out.s ? out.s : "", out.len);
    printf("\n");
    printf("model load %.0f ms, sampler init %.1f ms, prompt %d tokens %.0f ms, "
           "generation %d tokens in %.0f ms (%.1f tokens/s)\n",
           t_load * 1e3, t_init * 1e3, (int)n_prompt, t_prompt * 1e3, n_gen, t_gen * 1e3,
           n_gen / (t_gen > 0 ? t_gen : 1));
    printf("verified by cgram (fresh matcher, cg_accept_bytes + cg_is_accepting): %s%s%s\n",
           verified ? "yes" : "NO", verified ? "" : ": ", verified ? "" : why);

    if (o->out) {
        FILE *f = fopen(o->out, "wb");
        if (!f || fwrite(out.s ? out.s : "", 1, out.len, f) != out.len || fclose(f) != 0)
            die("cannot write the output file");
    }
    llama_sampler_free(chain);
    host_close(&h);
    free(out.s);
    free(source);
    free(prompt);
    return verified ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* compare */

enum { SAMPLER_CGRAM = 0, SAMPLER_LLAMA = 1 };
enum { STYLE_GRAMMAR_FIRST = 0, STYLE_CHECK_FIRST = 1 };

struct run {
    int sampler, style;
    struct text out;
    int n_gen, ended;
    double t_init, t_total;   /* end to end: init + prompt + generation */
    double *full_us;          /* time of each full-vocabulary apply */
    int n_full;
    double single_us_sum;     /* one-candidate applies (check first) */
    int n_single;
    double accept_us_sum;
    double sampler_ms;        /* creation + every apply + every accept */
    /* mask agreement (llama grammar-first run only) */
    long steps_compared, steps_equal, known_only, mismatch_tokens;
    long special_tokens, invalid_utf8_tokens, nul_tokens;
    int shown_diffs;
};

static llama_token argmax(const llama_token_data_array *a)
{
    size_t best = 0;
    for (size_t i = 1; i < a->size; i++)
        if (a->data[i].logit > a->data[best].logit)
            best = i;
    return a->data[best].id;
}

static void fill_candidates(struct host *h, llama_token_data *cand, llama_token_data_array *arr)
{
    const float *logits = llama_get_logits_ith(h->ctx, -1);
    for (int32_t t = 0; t < h->n_vocab; t++)
        cand[t] = (llama_token_data){t, logits[t], 0.0f};
    *arr = (llama_token_data_array){cand, (size_t)h->n_vocab, -1, false};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n ? s / n : 0;
}

/* One greedy generation. With check (llama.cpp, grammar first), a cgram
 * sampler follows along and the two full-vocabulary masks are compared at
 * every step (not timed: it costs the run a copy and a second apply). */
static void do_run(struct host *h, const struct opts *o, const char *gbnf, const char *prompt,
                   struct run *r, int check)
{
    llama_token_data *cand = xmalloc((size_t)h->n_vocab * sizeof *cand);
    llama_token_data *copy = xmalloc((size_t)h->n_vocab * sizeof *copy);
    r->full_us = xmalloc((size_t)(o->max_tokens + 1) * sizeof *r->full_us);
    const char *root = o->root ? o->root : "root";
    check = check && r->sampler == SAMPLER_LLAMA && r->style == STYLE_GRAMMAR_FIRST;

    double t_start = now_s();
    struct llama_sampler *g = r->sampler == SAMPLER_CGRAM
                                  ? cgram_llama_sampler_init(h->vocab, "gbnf", gbnf, root)
                                  : llama_sampler_init_grammar(h->vocab, gbnf, root);
    r->t_init = now_s() - t_start;
    if (!g) {
        fprintf(stderr, "%s: sampler creation failed: %s\n", prog,
                r->sampler == SAMPLER_CGRAM ? cgram_llama_last_error() : "(llama.cpp)");
        exit(1);
    }
    /* The reference for the mask check: a cgram sampler following llama's. */
    struct llama_sampler *ref = check ? cgram_llama_sampler_init(h->vocab, "gbnf", gbnf, root) : NULL;
    if (check && !ref)
        die(cgram_llama_last_error());

    int32_t n_prompt;
    eval_prompt(h, prompt, &n_prompt);
    while (r->n_gen < o->max_tokens) {
        llama_token_data_array arr;
        fill_candidates(h, cand, &arr);
        llama_token t;
        if (r->style == STYLE_GRAMMAR_FIRST) {
            if (check)
                memcpy(copy, cand, (size_t)h->n_vocab * sizeof *copy);
            double a = now_s();
            llama_sampler_apply(g, &arr);
            r->full_us[r->n_full++] = (now_s() - a) * 1e6;
            t = argmax(&arr);
            if (check) {
                llama_token_data_array carr = {copy, (size_t)h->n_vocab, -1, false};
                llama_sampler_apply(ref, &carr);
                long diff = 0, special = 0, invalid_utf8 = 0, nul = 0;
                for (int32_t i = 0; i < h->n_vocab; i++) {
                    int l = cand[i].logit != -INFINITY, c = copy[i].logit != -INFINITY;
                    if (l == c)
                        continue;
                    if (l && !c && (llama_vocab_get_attr(h->vocab, i) &
                                    (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN))) {
                        special++;
                        continue;
                    }
                    char piece[256];
                    int32_t pl = llama_token_to_piece(h->vocab, i, piece, sizeof piece, 0, true);
                    if (l && !c && pl > 0 && !demo_utf8_prefix((const unsigned char *)piece, (size_t)pl)) {
                        invalid_utf8++;
                        continue;
                    }
                    if (!l && c && pl > 0 && piece[0] == 0) {
                        nul++;
                        continue;
                    }
                    if (diff++ == 0 && r->shown_diffs < 12) {
                        r->shown_diffs++;
                        fprintf(stderr, "  mask difference at step %d after \"", r->n_gen);
                        print_escaped(stderr, r->out.s ? r->out.s : "", r->out.len);
                        fprintf(stderr, "\": token %d \"", (int)i);
                        print_escaped(stderr, piece, pl > 0 ? (size_t)pl : 0);
                        fprintf(stderr, "\" allowed by %s only\n", l ? "llama.cpp" : "cgram");
                    }
                }
                r->steps_compared++;
                if (!diff && !special && !invalid_utf8 && !nul)
                    r->steps_equal++;
                else if (!diff)
                    r->known_only++;
                r->special_tokens += special;
                r->invalid_utf8_tokens += invalid_utf8;
                r->nul_tokens += nul;
                r->mismatch_tokens += diff;
            }
        } else {
            llama_token best = argmax(&arr);
            llama_token_data one = {best, 1.0f, 0.0f};
            llama_token_data_array single = {&one, 1, -1, false};
            double a = now_s();
            llama_sampler_apply(g, &single);
            r->single_us_sum += (now_s() - a) * 1e6;
            r->n_single++;
            if (one.logit != -INFINITY) {
                t = best;
            } else {
                a = now_s();
                llama_sampler_apply(g, &arr);
                r->full_us[r->n_full++] = (now_s() - a) * 1e6;
                t = argmax(&arr);
            }
        }
        r->n_gen++;
        int is_eog = llama_vocab_is_eog(h->vocab, t);
        /* llama.cpp's grammar aborts the process when given an EOG token
         * its grammar cannot end on; a greedy pick under the mask is always
         * allowed, so accept is safe here. */
        double a = now_s();
        llama_sampler_accept(g, t);
        r->accept_us_sum += (now_s() - a) * 1e6;
        if (ref)
            llama_sampler_accept(ref, t);
        if (is_eog) {
            r->ended = 1;
            break;
        }
        text_add_token(h, &r->out, t);
        eval_token(h, t);
    }
    r->t_total = now_s() - t_start;
    r->sampler_ms = r->t_init * 1e3 + (r->single_us_sum + r->accept_us_sum) / 1e3;
    for (int i = 0; i < r->n_full; i++)
        r->sampler_ms += r->full_us[i] / 1e3;
    if (r->sampler == SAMPLER_CGRAM && cgram_llama_sampler_error(g)) {
        fprintf(stderr, "%s: the cgram sampler reported: %s\n", prog, cgram_llama_sampler_error(g));
        exit(1);
    }
    llama_sampler_free(g);
    llama_sampler_free(ref);
    free(cand);
    free(copy);
}

static double median(double *v, int n) { return pct(v, n, 0.5); }

static const char *run_name(int sampler, int style)
{
    if (sampler == SAMPLER_CGRAM)
        return style == STYLE_GRAMMAR_FIRST ? "cgram grammar-first" : "cgram check-first";
    return style == STYLE_GRAMMAR_FIRST ? "llama.cpp grammar-first" : "llama.cpp check-first";
}

static int cmd_compare(const struct opts *o)
{
    char *gbnf = read_file(o->grammar, NULL);
    char *prompt = text_arg(o->prompt);
    struct host h;
    host_open(&h, o->model, o->threads);
    const char *root = o->root ? o->root : "root";
    int rounds = o->rounds > 0 ? o->rounds : 3;

    /* One-time work per model, outside the timed runs: page the weights in
     * (a first decode), and build cgram's vocabulary of the model, which
     * the adapter caches for every later sampler (as llama.cpp builds its
     * own token caches when it loads the model). */
    int32_t n_prompt;
    eval_prompt(&h, prompt, &n_prompt);
    double t_vocab = now_s();
    struct llama_sampler *warm = cgram_llama_sampler_init(h.vocab, "gbnf", gbnf, root);
    t_vocab = now_s() - t_vocab;
    if (!warm) {
        fprintf(stderr, "%s: cgram_llama_sampler_init failed: %s\n", prog, cgram_llama_last_error());
        return 1;
    }
    llama_sampler_free(warm);

    /* The mask check: llama.cpp grammar first, cgram following along. */
    struct run chk;
    memset(&chk, 0, sizeof chk);
    chk.sampler = SAMPLER_LLAMA;
    chk.style = STYLE_GRAMMAR_FIRST;
    do_run(&h, o, gbnf, prompt, &chk, 1);

    /* Timed rounds, the four configurations interleaved in each so that
     * machine noise hits them alike. */
    enum { N_CFG = 4 };
    const int cfg[N_CFG][2] = {{SAMPLER_CGRAM, STYLE_GRAMMAR_FIRST},
                               {SAMPLER_LLAMA, STYLE_GRAMMAR_FIRST},
                               {SAMPLER_CGRAM, STYLE_CHECK_FIRST},
                               {SAMPLER_LLAMA, STYLE_CHECK_FIRST}};
    double *tps[N_CFG], *init_ms[N_CFG], *full[N_CFG];
    int n_full[N_CFG] = {0}, full_per_run[N_CFG] = {0};
    double single_sum[N_CFG] = {0}, accept_sum[N_CFG] = {0};
    double *smp_ms[N_CFG];
    long n_single[N_CFG] = {0}, n_tokens_all[N_CFG] = {0};
    int same = 1;
    for (int c = 0; c < N_CFG; c++) {
        tps[c] = xmalloc((size_t)rounds * sizeof *tps[c]);
        init_ms[c] = xmalloc((size_t)rounds * sizeof *init_ms[c]);
        smp_ms[c] = xmalloc((size_t)rounds * sizeof *smp_ms[c]);
        full[c] = xmalloc((size_t)rounds * (size_t)(o->max_tokens + 1) * sizeof *full[c]);
    }
    for (int k = 0; k < rounds; k++) {
        for (int c = 0; c < N_CFG; c++) {
            struct run r;
            memset(&r, 0, sizeof r);
            r.sampler = cfg[c][0];
            r.style = cfg[c][1];
            do_run(&h, o, gbnf, prompt, &r, 0);
            tps[c][k] = r.n_gen / r.t_total;
            init_ms[c][k] = r.t_init * 1e3;
            memcpy(full[c] + n_full[c], r.full_us, (size_t)r.n_full * sizeof *r.full_us);
            n_full[c] += r.n_full;
            full_per_run[c] = r.n_full;
            single_sum[c] += r.single_us_sum;
            n_single[c] += r.n_single;
            accept_sum[c] += r.accept_us_sum;
            smp_ms[c][k] = r.sampler_ms;
            n_tokens_all[c] += r.n_gen;
            if (r.out.len != chk.out.len || r.n_gen != chk.n_gen ||
                (r.out.len && memcmp(r.out.s, chk.out.s, r.out.len) != 0))
                same = 0;
            fprintf(stderr, "  round %d, %s: %d tokens in %.2f s\n", k + 1,
                    run_name(r.sampler, r.style), r.n_gen, r.t_total);
            free(r.out.s);
            free(r.full_us);
        }
    }
    int masks_ok = chk.mismatch_tokens == 0;

    double mean_full[N_CFG], p50_full[N_CFG], max_full[N_CFG], med_tps[N_CFG], med_init[N_CFG];
    double med_smp[N_CFG];
    for (int c = 0; c < N_CFG; c++) {
        mean_full[c] = mean(full[c], n_full[c]);
        p50_full[c] = pct(full[c], n_full[c], 0.5);
        max_full[c] = pct(full[c], n_full[c], 1.0);
        med_tps[c] = median(tps[c], rounds);
        med_init[c] = median(init_ms[c], rounds);
        med_smp[c] = median(smp_ms[c], rounds);
    }

    printf("%s: %d tokens generated (greedy), %s\n", o->label, chk.n_gen,
           chk.ended ? "ended with end-of-generation" : "stopped at the token limit");
    printf("  output: ");
    print_escaped(stdout, chk.out.s ? chk.out.s : "", chk.out.len);
    printf("\n");
    printf("  same text from every run: %s\n", same ? "yes" : "NO");
    printf("  full-vocabulary masks compared at %ld steps: %ld identical, %ld differ only by "
           "llama.cpp's known deviations (summed over steps: %ld control tokens it admits by "
           "their text, %ld tokens it admits that are never valid UTF-8, %ld tokens starting "
           "with a NUL byte it never admits), %ld other differing tokens\n",
           chk.steps_compared, chk.steps_equal, chk.known_only, chk.special_tokens,
           chk.invalid_utf8_tokens, chk.nul_tokens, chk.mismatch_tokens);
    printf("  full mask (apply to all %d candidates), us: cgram mean %.1f p50 %.1f max %.1f | "
           "llama.cpp mean %.1f p50 %.1f max %.1f | speedup mean %.0fx p50 %.0fx\n",
           h.n_vocab, mean_full[0], p50_full[0], max_full[0], mean_full[1], p50_full[1],
           max_full[1], mean_full[1] / mean_full[0], p50_full[1] / p50_full[0]);
    printf("  sampler init, ms (median): cgram %.2f | llama.cpp %.2f; cgram's vocabulary of the "
           "model, built once: %.0f ms\n",
           med_init[0], med_init[1], t_vocab * 1e3);
    printf("  end to end, tokens/s (median of %d): grammar first: cgram %.2f | llama.cpp %.2f; "
           "check first: cgram %.2f (%d full masks) | llama.cpp %.2f (%d full masks)\n",
           rounds, med_tps[0], med_tps[1], med_tps[2], full_per_run[2], med_tps[3],
           full_per_run[3]);

    printf("  sampler time per generation (creation + applies + accepts), ms (median): grammar "
           "first: cgram %.1f | llama.cpp %.1f; check first: cgram %.1f | llama.cpp %.1f\n",
           med_smp[0], med_smp[1], med_smp[2], med_smp[3]);

    if (o->json) {
        FILE *f = fopen(o->json, "ab");
        if (!f)
            die("cannot open the --json file");
        fprintf(f,
                "{\"label\":\"%s\",\"n_vocab\":%d,\"tokens\":%d,\"ended\":%d,\"rounds\":%d,"
                "\"same_text\":%d,\"steps_compared\":%ld,\"steps_equal\":%ld,\"known_only\":%ld,"
                "\"special_tokens\":%ld,\"invalid_utf8_tokens\":%ld,\"nul_tokens\":%ld,"
                "\"mismatch_tokens\":%ld,"
                "\"cgram_full_mean_us\":%.2f,\"cgram_full_p50_us\":%.2f,\"cgram_full_max_us\":%.2f,"
                "\"llama_full_mean_us\":%.2f,\"llama_full_p50_us\":%.2f,\"llama_full_max_us\":%.2f,"
                "\"cgram_vocab_ms\":%.1f,\"cgram_init_ms\":%.3f,\"llama_init_ms\":%.3f,"
                "\"cgram_gf_tps\":%.3f,\"llama_gf_tps\":%.3f,\"cgram_cf_tps\":%.3f,"
                "\"llama_cf_tps\":%.3f,\"cgram_cf_full\":%d,\"llama_cf_full\":%d,"
                "\"cgram_cf_single_mean_us\":%.2f,\"llama_cf_single_mean_us\":%.2f,"
                "\"cgram_accept_mean_us\":%.2f,\"llama_accept_mean_us\":%.2f,"
                "\"cgram_gf_sampler_ms\":%.2f,\"llama_gf_sampler_ms\":%.2f,"
                "\"cgram_cf_sampler_ms\":%.2f,\"llama_cf_sampler_ms\":%.2f}\n",
                o->label, h.n_vocab, chk.n_gen, chk.ended, rounds, same, chk.steps_compared,
                chk.steps_equal, chk.known_only, chk.special_tokens, chk.invalid_utf8_tokens,
                chk.nul_tokens, chk.mismatch_tokens, mean_full[0], p50_full[0], max_full[0], mean_full[1],
                p50_full[1], max_full[1], t_vocab * 1e3, med_init[0], med_init[1], med_tps[0],
                med_tps[1], med_tps[2], med_tps[3], full_per_run[2], full_per_run[3],
                n_single[2] ? single_sum[2] / n_single[2] : 0,
                n_single[3] ? single_sum[3] / n_single[3] : 0,
                n_tokens_all[0] ? accept_sum[0] / n_tokens_all[0] : 0,
                n_tokens_all[1] ? accept_sum[1] / n_tokens_all[1] : 0, med_smp[0], med_smp[1],
                med_smp[2], med_smp[3]);
        fclose(f);
    }

    for (int c = 0; c < N_CFG; c++) {
        free(tps[c]);
        free(init_ms[c]);
        free(smp_ms[c]);
        free(full[c]);
    }
    free(chk.out.s);
    free(chk.full_us);
    host_close(&h);
    free(gbnf);
    free(prompt);
    return same && masks_ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    struct opts o;
    if (!strcmp(argv[1], "generate")) {
        parse(argc, argv, &o);
        return cmd_generate(&o);
    }
    if (!strcmp(argv[1], "compare")) {
        parse(argc, argv, &o);
        return cmd_compare(&o);
    }
    usage();
    return 2;
}
