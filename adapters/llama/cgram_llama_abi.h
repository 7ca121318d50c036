/*
 * The part of llama.cpp's C interface the cgram adapter relies on,
 * declared by cgram, for builds that have no llama.h at hand: the Python
 * package compiles cgram_llama.c with CGRAM_LLAMA_OWN_ABI so that one
 * binary serves whichever libllama llama-cpp-python loaded.
 *
 * Every declaration here has had this meaning and layout in every llama.cpp
 * since the vocabulary API (llama_vocab_*, January 2025); the drop-in and
 * the adapter built against the host's own llama.h rely on exactly the same
 * facts, and scripts/llama-matrix.sh checks them on several versions:
 *
 *   - struct llama_sampler is { const struct llama_sampler_i *iface;
 *     void *ctx; }, made by llama_sampler_init and freed by libllama's
 *     llama_sampler_free (which calls iface->free first);
 *   - struct llama_sampler_i starts with name, accept, apply, reset, clone,
 *     free, in that order; later versions append members (backend
 *     sampling, copy_state), which cgram leaves NULL (absent) with spare
 *     room after the six it sets;
 *   - llama_token_data is { int32 id; float logit; float p; } and
 *     llama_token_data_array { data; size; int64 selected; bool sorted; };
 *   - the token attribute bits UNKNOWN (1 << 0) and CONTROL (1 << 3), and
 *     ggml's log levels;
 *   - the signatures of the functions declared below.
 *
 * A llama.cpp that changed one of these would be another ABI: the adapter
 * is not to be used with it. Nothing in this file is a definition.
 */
#ifndef CGRAM_LLAMA_ABI_H
#define CGRAM_LLAMA_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t llama_token;

struct llama_vocab;
struct llama_model;

enum llama_token_attr {
    LLAMA_TOKEN_ATTR_UNKNOWN = 1 << 0,
    LLAMA_TOKEN_ATTR_CONTROL = 1 << 3,
};

typedef struct llama_token_data {
    llama_token id;
    float logit;
    float p;
} llama_token_data;

typedef struct llama_token_data_array {
    llama_token_data *data;
    size_t size;
    int64_t selected;
    bool sorted;
} llama_token_data_array;

typedef void *llama_sampler_context_t;

struct llama_sampler;

/* The six members every version has; the adapter pads the rest. */
struct llama_sampler_i {
    const char *(*name)(const struct llama_sampler *smpl);
    void (*accept)(struct llama_sampler *smpl, llama_token token);
    void (*apply)(struct llama_sampler *smpl, llama_token_data_array *cur_p);
    void (*reset)(struct llama_sampler *smpl);
    struct llama_sampler *(*clone)(const struct llama_sampler *smpl);
    void (*free)(struct llama_sampler *smpl);
};

struct llama_sampler {
    const struct llama_sampler_i *iface;
    llama_sampler_context_t ctx;
};

enum ggml_log_level {
    GGML_LOG_LEVEL_NONE = 0,
    GGML_LOG_LEVEL_DEBUG = 1,
    GGML_LOG_LEVEL_INFO = 2,
    GGML_LOG_LEVEL_WARN = 3,
    GGML_LOG_LEVEL_ERROR = 4,
    GGML_LOG_LEVEL_CONT = 5,
};

typedef void (*ggml_log_callback)(enum ggml_log_level level, const char *text, void *user_data);

int32_t llama_vocab_n_tokens(const struct llama_vocab *vocab);
const char *llama_vocab_get_text(const struct llama_vocab *vocab, llama_token token);
enum llama_token_attr llama_vocab_get_attr(const struct llama_vocab *vocab, llama_token token);
bool llama_vocab_is_eog(const struct llama_vocab *vocab, llama_token token);
llama_token llama_vocab_eos(const struct llama_vocab *vocab);
llama_token llama_vocab_eot(const struct llama_vocab *vocab);
int32_t llama_token_to_piece(const struct llama_vocab *vocab, llama_token token, char *buf,
                             int32_t length, int32_t lstrip, bool special);
struct llama_sampler *llama_sampler_init(struct llama_sampler_i *iface, llama_sampler_context_t ctx);
/* Looked up at run time (CGRAM_LLAMA_RUNTIME_LOOKUP): mid-2025 and later. */
void llama_log_get(ggml_log_callback *log_callback, void **user_data);

#ifdef __cplusplus
}
#endif

#endif
