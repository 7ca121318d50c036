/* minimal.c: llama.cpp generating JSON for a JSON Schema with cgram.
 * Usage: minimal MODEL.gguf. Exit status 0 when the output is complete. */
#include <stdio.h>
#include <string.h>

#include "cgram_llama.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: minimal MODEL.gguf\n");
        return 2;
    }
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model)
        return 1;
    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = 512;
    struct llama_context *ctx = llama_init_from_model(model, cparams);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    const char *schema = "{\"type\": \"object\", \"properties\": {"
                         "\"city\": {\"type\": \"string\", \"maxLength\": 20},"
                         "\"population\": {\"type\": \"integer\", \"minimum\": 0}},"
                         "\"required\": [\"city\", \"population\"], \"additionalProperties\": false}";
    struct llama_sampler *grammar = cgram_llama_sampler_init(vocab, "json_schema", schema, NULL);
    if (!grammar) {
        fprintf(stderr, "cgram: %s\n", cgram_llama_last_error());
        return 1;
    }
    struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, grammar); /* first in the chain: masks, then the rest samples */
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());

    const char *prompt = "The largest city of Japan and its population, as JSON: ";
    llama_token tokens[64];
    int n = llama_tokenize(vocab, prompt, (int)strlen(prompt), tokens, 64, true, false);
    struct llama_batch batch = llama_batch_get_one(tokens, n);
    int complete = 0;
    for (int i = 0; i < 100 && llama_decode(ctx, batch) == 0; i++) {
        llama_token t = llama_sampler_sample(chain, ctx, -1); /* apply + accept */
        if (llama_vocab_is_eog(vocab, t)) {                   /* allowed only when complete */
            complete = 1;
            break;
        }
        char piece[128];
        int len = llama_token_to_piece(vocab, t, piece, sizeof piece, 0, true);
        printf("%.*s", len, piece);
        tokens[0] = t;
        batch = llama_batch_get_one(tokens, 1);
    }
    printf("\n");
    const char *error = cgram_llama_sampler_error(grammar); /* NULL unless something went wrong */
    if (error)
        fprintf(stderr, "cgram: %s\n", error);

    llama_sampler_free(chain); /* frees the cgram sampler too */
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return complete && !error ? 0 : 1;
}
