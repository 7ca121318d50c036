/*
 * The drop-in's run-time check of llama.cpp's sampler interface, against
 * tests/c/fake_llama.c: with the drop-in preloaded, a grammar sampler made
 * through llama_sampler_init_grammar is cgram's when the libllama reads the
 * interface as cgram writes it, and llama.cpp's own (the fake's marker),
 * with one log line saying why, when it does not.
 *
 *   LD_PRELOAD=libcgram-llama.so ./dropin_interface_check known|shifted
 *
 * Declares the few functions it calls itself: the fake is not llama.cpp's
 * ABI in the "shifted" build, and this program only passes pointers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct llama_sampler;
struct llama_model;
struct llama_vocab;
typedef void (*log_callback)(int level, const char *text, void *user);
void llama_log_set(log_callback cb, void *user);
const struct llama_vocab *llama_model_get_vocab(const struct llama_model *m);
struct llama_sampler *llama_sampler_init_grammar(const struct llama_vocab *v, const char *str,
                                                 const char *root);
const char *llama_sampler_name(const struct llama_sampler *s);
void llama_sampler_free(struct llama_sampler *s);

static char logged[8192];

static void capture(int level, const char *text, void *user)
{
    (void)level;
    (void)user;
    strncat(logged, text, sizeof logged - strlen(logged) - 1);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "known") != 0 && strcmp(argv[1], "shifted") != 0)) {
        fprintf(stderr, "usage: dropin_interface_check known|shifted\n");
        return 2;
    }
    int known = strcmp(argv[1], "known") == 0;
    llama_log_set(capture, NULL);
    static struct {
        int unused;
    } model_storage;
    const struct llama_vocab *vocab = llama_model_get_vocab((struct llama_model *)&model_storage);
    struct llama_sampler *s = llama_sampler_init_grammar(vocab, "root ::= \"a\"+", "root");
    if (!s) {
        fprintf(stderr, "FAIL: no sampler; log:\n%s", logged);
        return 1;
    }
    const char *name = llama_sampler_name(s);
    const char *want = known ? "cgram" : "fake-llama-grammar";
    int ok = strcmp(name, want) == 0;
    const char *line = "sampler interface is not the one cgram knows";
    int said = strstr(logged, line) != NULL;
    ok = ok && (known ? !said : said);
    printf("%s: %s sampler \"%s\" (want \"%s\"); log:\n%s", ok ? "ok" : "FAIL", argv[1], name,
           want, logged);
    llama_sampler_free(s);
    return ok ? 0 : 1;
}
