/*
 * lazy_bench: the cost of a token while a lazy grammar awaits its trigger,
 * as the output grows, for llama.cpp's own lazy sampler and cgram's, on a
 * vocab-only GGUF (no model needed: only the samplers run).
 *
 *   lazy_bench VOCAB.gguf [TOKENS]
 *
 * Both samplers get llama.cpp's word trigger "<tool_call>" (as the server
 * passes it: an escaped pattern) and a small grammar; then the same free
 * text, token after token (TOKENS of them, default 16,000), as
 * llama.cpp's common sampler drives them: apply on the sampled token
 * alone, then accept. Prints the mean time per token over windows of the
 * output, so that a cost growing with the output's length shows. The
 * trigger never fires.
 */
#include "cgram_llama.h"
#include "demo_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs n tokens of ids (cycled) through s; fills per-window microseconds. */
static void run(struct llama_sampler *s, const llama_token *ids, int n_ids, int n, int window,
                double *us)
{
    for (int k = 0; k < n; k++) {
        llama_token t = ids[k % n_ids];
        double a = now();
        llama_token_data one = {t, 1.0f, 0.0f};
        llama_token_data_array arr = {&one, 1, -1, false};
        llama_sampler_apply(s, &arr);
        llama_sampler_accept(s, t);
        us[k / window] += (now() - a) * 1e6;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: lazy_bench VOCAB.gguf [TOKENS]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 16000;
    const int window = n / 8 > 0 ? n / 8 : 1;
    struct llama_model *model = demo_load_vocab_only(argv[1]);
    if (!model)
        return 2;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const char *text = "The weather in Paris is mild in spring, with rain in the "
                       "afternoon and clear skies at night; a tool could tell more. ";
    llama_token ids[256];
    int n_ids = llama_tokenize(vocab, text, (int32_t)strlen(text), ids, 256, false, false);
    const char *grammar = "root ::= \"<tool_call>\" [^<]* \"</tool_call>\"";
    const char *patterns[] = {"<tool_call>"};
    struct llama_sampler *l =
        llama_sampler_init_grammar_lazy_patterns(vocab, grammar, "root", patterns, 1, NULL, 0);
    struct llama_sampler *g =
        cgram_llama_sampler_init_lazy_patterns(vocab, grammar, NULL, patterns, 1, NULL, 0);
    if (!l || !g || n_ids <= 0) {
        fprintf(stderr, "lazy_bench: cannot make the samplers (%s)\n", cgram_llama_last_error());
        return 1;
    }
    double *ul = calloc((size_t)(n / window + 1), sizeof *ul);
    double *ug = calloc((size_t)(n / window + 1), sizeof *ug);
    run(l, ids, n_ids, n, window, ul);
    run(g, ids, n_ids, n, window, ug);
    printf("| output so far (tokens) | llama.cpp us/token | cgram us/token |\n|---|---|---|\n");
    for (int w = 0; w < n / window; w++)
        printf("| %d..%d | %.2f | %.2f |\n", w * window, (w + 1) * window, ul[w] / window,
               ug[w] / window);
    llama_sampler_free(l);
    llama_sampler_free(g);
    free(ul);
    free(ug);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
