/*
 * demo_util.h: small helpers shared by the programs of demo/llama (header
 * only, static inline functions).
 */
#ifndef CGRAM_DEMO_UTIL_H
#define CGRAM_DEMO_UTIL_H

#include <stdio.h>

#include <llama.h>

/* A llama.cpp log callback that shows errors only. */
static inline void demo_quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR)
        fputs(text, stderr);
}

/* A model with its vocabulary only (a vocab-only GGUF, or any GGUF without
 * loading weights), llama.cpp's log quiet; NULL with a message on stderr. */
static inline struct llama_model *demo_load_vocab_only(const char *path)
{
    llama_log_set(demo_quiet_log, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model)
        fprintf(stderr, "cannot load %s\n", path);
    return model;
}

/* Whether b[0..n) is valid UTF-8 except that it may end inside a character. */
static inline int demo_utf8_prefix(const unsigned char *b, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = b[i], lo = 0x80, hi = 0xBF;
        size_t len;
        if (c < 0x80)
            len = 1;
        else if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            lo = c == 0xE0 ? 0xA0 : lo;
            hi = c == 0xED ? 0x9F : hi;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            lo = c == 0xF0 ? 0x90 : lo;
            hi = c == 0xF4 ? 0x8F : hi;
        } else
            return 0;
        for (size_t k = 1; k < len; k++) {
            if (i + k >= n)
                return 1;
            unsigned d = b[i + k];
            if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF))
                return 0;
        }
        i += len;
    }
    return 1;
}

#endif /* CGRAM_DEMO_UTIL_H */
