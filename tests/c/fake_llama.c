/*
 * A stand-in libllama for the drop-in's interface check
 * (tests/c/dropin_interface_check.c, run by scripts/llama-matrix.sh): the
 * functions the drop-in calls, a three-token vocabulary ("a", "b" and an
 * end-of-generation control token), and llama.cpp's grammar entry points,
 * which return a marker sampler named "fake-llama-grammar" (llama.cpp's own
 * sampler, as far as the test can tell).
 *
 * Built twice: as is, its sampler interface is llama.cpp's (the six members
 * name, accept, apply, reset, clone, free first); with -DFAKE_SHIFTED it
 * has one member more in front of them, as a llama.cpp that changed the
 * interface would, and reads every member one slot further than cgram
 * wrote it. It is another ABI on purpose, so it declares its own types
 * rather than include llama.h.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t llama_token;
struct llama_vocab {
    int unused;
};
struct llama_model {
    struct llama_vocab vocab;
};
typedef struct {
    llama_token id;
    float logit;
    float p;
} llama_token_data;
typedef struct {
    llama_token_data *data;
    size_t size;
    int64_t selected;
    bool sorted;
} llama_token_data_array;
struct llama_sampler;
typedef void (*member_fn)(void);
struct llama_sampler_i {
#ifdef FAKE_SHIFTED
    member_fn first; /* the member this "version" put in front */
#endif
    const char *(*name)(const struct llama_sampler *);
    void (*accept)(struct llama_sampler *, llama_token);
    void (*apply)(struct llama_sampler *, llama_token_data_array *);
    void (*reset)(struct llama_sampler *);
    struct llama_sampler *(*clone)(const struct llama_sampler *);
    void (*free)(struct llama_sampler *);
};
struct llama_sampler {
    const struct llama_sampler_i *iface;
    void *ctx;
};
typedef void (*log_callback)(int level, const char *text, void *user);

static log_callback log_cb;
static void *log_user;

void llama_log_set(log_callback cb, void *user)
{
    log_cb = cb;
    log_user = user;
}

void llama_log_get(log_callback *cb, void **user)
{
    *cb = log_cb;
    *user = log_user;
}

static const char *const texts[3] = {"a", "b", "<eog>"};

int32_t llama_vocab_n_tokens(const struct llama_vocab *v)
{
    (void)v;
    return 3;
}
const char *llama_vocab_get_text(const struct llama_vocab *v, llama_token t)
{
    (void)v;
    return t >= 0 && t < 3 ? texts[t] : "";
}
int llama_vocab_get_attr(const struct llama_vocab *v, llama_token t)
{
    (void)v;
    return t == 2 ? 1 << 3 /* CONTROL */ : 1 << 2 /* NORMAL */;
}
bool llama_vocab_is_eog(const struct llama_vocab *v, llama_token t)
{
    (void)v;
    return t == 2;
}
llama_token llama_vocab_eos(const struct llama_vocab *v)
{
    (void)v;
    return 2;
}
llama_token llama_vocab_eot(const struct llama_vocab *v)
{
    (void)v;
    return -1;
}
int32_t llama_token_to_piece(const struct llama_vocab *v, llama_token t, char *buf, int32_t len,
                             int32_t lstrip, bool special)
{
    (void)lstrip;
    (void)special;
    const char *s = llama_vocab_get_text(v, t);
    int32_t n = (int32_t)strlen(s);
    if (n > len)
        return -n;
    memcpy(buf, s, (size_t)n);
    return n;
}
const struct llama_vocab *llama_model_get_vocab(const struct llama_model *m)
{
    return &m->vocab;
}

struct llama_sampler *llama_sampler_init(const struct llama_sampler_i *iface, void *ctx)
{
    struct llama_sampler *s = malloc(sizeof *s);
    if (s) {
        s->iface = iface;
        s->ctx = ctx;
    }
    return s;
}
const char *llama_sampler_name(const struct llama_sampler *s)
{
    return s->iface->name(s);
}
void llama_sampler_accept(struct llama_sampler *s, llama_token t)
{
    if (s->iface->accept)
        s->iface->accept(s, t);
}
void llama_sampler_apply(struct llama_sampler *s, llama_token_data_array *cur)
{
    s->iface->apply(s, cur);
}
void llama_sampler_reset(struct llama_sampler *s)
{
    if (s->iface->reset)
        s->iface->reset(s);
}
struct llama_sampler *llama_sampler_clone(const struct llama_sampler *s)
{
    return s->iface->clone ? s->iface->clone(s) : NULL;
}
void llama_sampler_free(struct llama_sampler *s)
{
    if (!s)
        return;
    if (s->iface->free)
        s->iface->free(s);
    free(s);
}

/* llama.cpp's own grammar sampler, as far as the test can tell. */
static const char *own_name(const struct llama_sampler *s)
{
    (void)s;
    return "fake-llama-grammar";
}
static void own_apply(struct llama_sampler *s, llama_token_data_array *cur)
{
    (void)s;
    (void)cur;
}
static struct llama_sampler_i own_iface = {
#ifdef FAKE_SHIFTED
    NULL,
#endif
    own_name, NULL, own_apply, NULL, NULL, NULL};

struct llama_sampler *llama_sampler_init_grammar(const struct llama_vocab *v, const char *str,
                                                 const char *root)
{
    (void)v;
    (void)str;
    (void)root;
    return llama_sampler_init(&own_iface, NULL);
}
struct llama_sampler *llama_sampler_init_grammar_lazy(const struct llama_vocab *v,
                                                      const char *str, const char *root,
                                                      const char **words, size_t n_words,
                                                      const llama_token *tokens, size_t n_tokens)
{
    (void)words;
    (void)n_words;
    (void)tokens;
    (void)n_tokens;
    return llama_sampler_init_grammar(v, str, root);
}
struct llama_sampler *llama_sampler_init_grammar_lazy_patterns(
    const struct llama_vocab *v, const char *str, const char *root, const char **patterns,
    size_t n_patterns, const llama_token *tokens, size_t n_tokens)
{
    return llama_sampler_init_grammar_lazy(v, str, root, patterns, n_patterns, tokens, n_tokens);
}
void llama_model_free(struct llama_model *m)
{
    (void)m;
}
