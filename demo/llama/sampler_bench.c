/*
 * sampler_bench: what creating a grammar sampler costs the drop-in, in a
 * fresh process, split into its parts, for a grammar file (a tool-call
 * grammar dumped by llama-server with CGRAM_LLAMA_DUMP, say):
 *
 *   sampler_bench MODEL_OR_VOCAB.gguf GRAMMAR.gbnf [TRIGGER_PATTERN] [REPEAT]
 *
 * 1. the cgram vocabulary built from the llama one (once per process;
 *    measured with a one-rule grammar);
 * 2. the first sampler for the grammar: its compilation (every lexeme the
 *    vocabulary has not seen yet is built here);
 * 3. the same sampler again, REPEAT times (default 200): a grammar-cache
 *    hit, what a repeated llama-server request costs (median and max);
 * 4. llama.cpp's own sampler for the same grammar (its parse), median.
 *
 * With a trigger pattern the samplers are lazy, as llama-server makes
 * them for tool_choice "auto". Wall-clock times on one thread; this is a
 * benchmark, run by hand (BENCHMARKS.md), not a test.
 */
#include "cgram_llama.h"
#include "demo_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct llama_sampler *(*make_fn)(const struct llama_vocab *, const char *, const char *);

static const char *pattern; /* NULL: an eager sampler */

static struct llama_sampler *make_cgram(const struct llama_vocab *v, const char *g, const char *r)
{
    if (!pattern)
        return cgram_llama_sampler_init(v, "gbnf", g, r);
    return cgram_llama_sampler_init_lazy_patterns(v, g, r, &pattern, 1, NULL, 0);
}

static struct llama_sampler *make_llama(const struct llama_vocab *v, const char *g, const char *r)
{
    if (!pattern)
        return llama_sampler_init_grammar(v, g, r);
    return llama_sampler_init_grammar_lazy_patterns(v, g, r, &pattern, 1, NULL, 0);
}

/* Creates and frees a sampler; its creation time in ms, or -1. */
static double time_one(make_fn make, const struct llama_vocab *v, const char *g)
{
    double t0 = now_ms();
    struct llama_sampler *s = make(v, g, "root");
    double t = now_ms() - t0;
    if (!s) {
        fprintf(stderr, "sampler_bench: no sampler: %s\n", cgram_llama_last_error());
        return -1;
    }
    llama_sampler_free(s);
    return t;
}

/* Median and max of repeat creations. */
static int time_many(make_fn make, const struct llama_vocab *v, const char *g, int repeat,
                     double *median, double *max)
{
    double *t = malloc(sizeof *t * (size_t)repeat);
    if (!t)
        return -1;
    for (int i = 0; i < repeat; i++)
        if ((t[i] = time_one(make, v, g)) < 0) {
            free(t);
            return -1;
        }
    qsort(t, (size_t)repeat, sizeof *t, cmp_double);
    *median = t[repeat / 2];
    *max = t[repeat - 1];
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: sampler_bench MODEL_OR_VOCAB.gguf GRAMMAR.gbnf "
                        "[TRIGGER_PATTERN] [REPEAT]\n");
        return 2;
    }
    pattern = argc > 3 && argv[3][0] ? argv[3] : NULL;
    int repeat = argc > 4 ? atoi(argv[4]) : 200;
    if (repeat < 1)
        repeat = 1;
    char *grammar = read_file(argv[2]);
    if (!grammar) {
        fprintf(stderr, "sampler_bench: cannot read %s\n", argv[2]);
        return 2;
    }
    struct llama_model *model = demo_load_vocab_only(argv[1]);
    if (!model)
        return 2;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    double vocab_ms = time_one(make_cgram, vocab, "root ::= \"a\"");
    double first_ms = time_one(make_cgram, vocab, grammar);
    double hit_median, hit_max, llama_median, llama_max;
    if (vocab_ms < 0 || first_ms < 0 ||
        time_many(make_cgram, vocab, grammar, repeat, &hit_median, &hit_max) != 0 ||
        time_many(make_llama, vocab, grammar, repeat < 20 ? repeat : 20, &llama_median,
                  &llama_max) != 0)
        return 1;
    cg_grammar_cache_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    cgram_llama_cache_stats(&stats);
    printf("grammar: %s (%zu bytes%s%s)\n", argv[2], strlen(grammar), pattern ? ", lazy on " : "",
           pattern ? pattern : "");
    printf("vocabulary (%d tokens) built: %.2f ms\n", llama_vocab_n_tokens(vocab), vocab_ms);
    printf("first cgram sampler (compile): %.2f ms\n", first_ms);
    printf("cgram sampler, cache hit: median %.1f us, max %.1f us (%d)\n", hit_median * 1e3,
           hit_max * 1e3, repeat);
    printf("llama.cpp sampler (parse): median %.2f ms, max %.2f ms\n", llama_median, llama_max);
    printf("cache: %llu hits, %llu misses, %llu bytes\n", (unsigned long long)stats.hits,
           (unsigned long long)stats.misses, (unsigned long long)stats.bytes);
    free(grammar);
    llama_model_free(model);
    return 0;
}
