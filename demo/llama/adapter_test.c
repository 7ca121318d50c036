/*
 * adapter_test: the behaviour of the cgram llama.cpp sampler
 * (adapters/llama) as llama.cpp drives it, on a vocab-only GGUF (no model
 * weights needed: a sampler only needs the vocabulary).
 *
 *   adapter_test VOCAB.gguf
 *
 * Prints "N passed, N failed"; exit status 0 when nothing failed.
 */
#include "cgram_llama.h"
#include "demo_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_passed, n_failed;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    if (ok)
        n_passed++;
    else
        n_failed++;
}

static const struct llama_vocab *vocab;
static int32_t n_vocab;
static llama_token_data *cand;

/* All n_vocab candidates, in id order, logit 0. */
static llama_token_data_array full(void)
{
    for (int32_t t = 0; t < n_vocab; t++)
        cand[t] = (llama_token_data){t, 0.0f, 0.0f};
    return (llama_token_data_array){cand, (size_t)n_vocab, -1, false};
}

static int allowed_in(const llama_token_data_array *a, llama_token t)
{
    for (size_t i = 0; i < a->size; i++)
        if (a->data[i].id == t)
            return a->data[i].logit != -INFINITY;
    return -1;
}

/* Whether the sampler allows token t, asked with one candidate. */
static int allows(struct llama_sampler *s, llama_token t)
{
    llama_token_data one = {t, 1.0f, 0.0f};
    llama_token_data_array a = {&one, 1, -1, false};
    llama_sampler_apply(s, &a);
    return one.logit != -INFINITY;
}

static int n_allowed(struct llama_sampler *s)
{
    llama_token_data_array a = full();
    llama_sampler_apply(s, &a);
    int n = 0;
    for (int32_t t = 0; t < n_vocab; t++)
        n += cand[t].logit != -INFINITY;
    return n;
}

/* The single token llama.cpp makes of text (or -1). */
static llama_token one_token(const char *text)
{
    llama_token t[4];
    int n = llama_tokenize(vocab, text, (int32_t)strlen(text), t, 4, false, false);
    return n == 1 ? t[0] : -1;
}

static llama_token first_eog(void)
{
    for (int32_t t = 0; t < n_vocab; t++)
        if (llama_vocab_is_eog(vocab, t))
            return t;
    return -1;
}

/* Feeds text through the sampler token by token as llama.cpp tokenizes
 * it: 1 when every token is allowed and end-of-generation is allowed at
 * the end. The sampler is reset afterwards. */
static int feeds(struct llama_sampler *s, const char *text)
{
    llama_token t[512];
    int n = llama_tokenize(vocab, text, (int32_t)strlen(text), t, 512, false, false);
    int ok = n > 0;
    for (int i = 0; ok && i < n; i++) {
        ok = allows(s, t[i]);
        if (ok)
            llama_sampler_accept(s, t[i]);
    }
    ok = ok && allows(s, first_eog());
    llama_sampler_reset(s);
    return ok;
}

/* The JSON options through cgram_llama_sampler_init_opts. */
static void json_options(void)
{
    const char *schema = "{\"type\": \"object\", \"properties\": {"
                         "\"b\": {\"type\": \"integer\"},"
                         "\"a\": {\"type\": \"array\", \"uniqueItems\": true,"
                         " \"items\": {\"type\": \"string\"}}},"
                         " \"required\": [\"b\", \"a\"]}";
    cg_compile_options o;
    cg_compile_options_init(&o);
    o.kind = CG_KIND_JSON_SCHEMA;
    o.flags = CG_JSON_ORDERED_PROPERTIES | CG_JSON_STRICT_INTEGERS;
    o.json_indent = 2;
    struct llama_sampler *js = cgram_llama_sampler_init_opts(vocab, schema, strlen(schema), &o);
    check(!js && cgram_llama_last_error_code() == CG_ERR_UNSUPPORTED,
          "uniqueItems on open items: refused without CG_JSON_LENIENT");
    o.flags |= CG_JSON_LENIENT;
    js = cgram_llama_sampler_init_opts(vocab, schema, strlen(schema), &o);
    check(js != NULL, "the JSON options: ordered, strict integers, lenient, indent 2");
    if (!js)
        return;
    check(feeds(js, "{\n  \"b\": 1,\n  \"a\": [\n    \"x\",\n    \"x\"\n  ]\n}"),
          "json.dumps(indent=2) output in the listed order is allowed");
    check(!feeds(js, "{\n  \"a\": [],\n  \"b\": 1\n}"), "properties out of order are not");
    check(!feeds(js, "{\n  \"b\": 1.0,\n  \"a\": []\n}"), "an integer written 1.0 is not");
    check(!feeds(js, "{\"b\": 1, \"a\": []}"), "another layout is not");
    const cg_grammar *gr = cgram_llama_sampler_grammar(js);
    const char *ptr = NULL;
    const char *kw = gr ? cg_grammar_dropped(gr, 0, &ptr, NULL) : NULL;
    check(gr && cg_grammar_dropped_count(gr) == 1 && kw && strcmp(kw, "uniqueItems") == 0 &&
              strcmp(ptr, "/properties/a") == 0,
          "the grammar reports uniqueItems at /properties/a left out");
    struct llama_sampler *jc = llama_sampler_clone(js);
    check(jc && cgram_llama_sampler_grammar(jc) && cg_grammar_dropped_count(cgram_llama_sampler_grammar(jc)) == 1,
          "a clone has the grammar too");
    llama_sampler_free(js);
    check(jc && feeds(jc, "{\n  \"b\": -3,\n  \"a\": []\n}"), "and outlives the original");
    llama_sampler_free(jc);
    check(cgram_llama_sampler_grammar(NULL) == NULL, "no grammar for NULL");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: adapter_test VOCAB.gguf\n");
        return 2;
    }
    struct llama_model *model = demo_load_vocab_only(argv[1]);
    if (!model)
        return 2;
    vocab = llama_model_get_vocab(model);
    n_vocab = llama_vocab_n_tokens(vocab);
    cand = malloc((size_t)n_vocab * sizeof *cand);
    llama_token yes = one_token("yes"), no = one_token("no"), y = one_token("y");
    llama_token es = one_token("es"), eog = first_eog(), x = one_token("x");
    if (yes < 0 || no < 0 || y < 0 || es < 0 || eog < 0 || x < 0 || !cand) {
        fprintf(stderr, "adapter_test: this vocabulary lacks the tokens the test needs\n");
        return 2;
    }

    /* Creation errors: NULL and a message, never an unconstrained sampler. */
    struct llama_sampler *bad = cgram_llama_sampler_init(vocab, "gbnf", "root ::= (", NULL);
    check(!bad && strstr(cgram_llama_last_error(), "cgram_llama_sampler_init") != NULL,
          "a GBNF that does not parse: NULL with a message");
    printf("      (%s)\n", cgram_llama_last_error());
    check(!cgram_llama_sampler_init(vocab, "yaml", "x", NULL), "an unknown kind: NULL");
    check(!cgram_llama_sampler_init(vocab, "gbnf", "root ::= \"a\"", "start"),
          "a start rule that does not exist: NULL");
    check(!cgram_llama_sampler_init(NULL, "gbnf", "root ::= \"a\"", NULL), "no vocabulary: NULL");
    check(!cgram_llama_sampler_init(vocab, "json_schema", "{\"type\": 12}", NULL),
          "a JSON Schema that is not one: NULL");

    const char *g = "root ::= (\"yes\" | \"no\") | \"[\" [a-z]+ \"]\"";
    struct llama_sampler *s = cgram_llama_sampler_init(vocab, "gbnf", g, NULL);
    check(s != NULL, "a GBNF sampler");
    if (!s)
        return 1;
    check(cgram_llama_sampler_is_cgram(s) && strcmp(llama_sampler_name(s), "cgram") == 0,
          "it is a cgram sampler named \"cgram\"");
    check(cgram_llama_sampler_matcher(s) != NULL, "it has a matcher");

    /* apply on the whole vocabulary, on subsets in any order, on one. */
    llama_token_data_array a = full();
    llama_sampler_apply(s, &a);
    check(allowed_in(&a, yes) == 1 && allowed_in(&a, no) == 1 && allowed_in(&a, y) == 1 &&
              allowed_in(&a, x) == 0 && allowed_in(&a, eog) == 0,
          "full vocabulary: yes, no, y allowed; x and end-of-generation not");
    int n_full = n_allowed(s);
    llama_token_data sub[4] = {{x, 3.0f, 0}, {eog, 2.0f, 0}, {no, 1.0f, 0}, {yes, 0.5f, 0}};
    llama_token_data_array sa = {sub, 4, -1, true};
    llama_sampler_apply(s, &sa);
    check(sub[0].logit == -INFINITY && sub[1].logit == -INFINITY && sub[2].logit == 1.0f &&
              sub[3].logit == 0.5f && sub[2].id == no && !sa.sorted,
          "a subset in another order: masked in place, logits kept, no longer marked sorted");
    check(allows(s, yes) && !allows(s, x), "one candidate at a time (the check-first path)");
    llama_token_data odd[2] = {{n_vocab + 5, 1.0f, 0}, {-3, 1.0f, 0}};
    llama_token_data_array oa = {odd, 2, -1, false};
    llama_sampler_apply(s, &oa);
    check(odd[0].logit == -INFINITY && odd[1].logit == -INFINITY, "ids out of range: masked");

    /* accept, clone, reset. */
    llama_sampler_accept(s, y);
    check(cgram_llama_sampler_error(s) == NULL && allows(s, es) && !allows(s, no) &&
              !allows(s, eog),
          "after \"y\": \"es\" allowed, \"no\" and end-of-generation not");
    struct llama_sampler *c = llama_sampler_clone(s);
    check(c != NULL && cgram_llama_sampler_is_cgram(c), "clone");
    llama_sampler_accept(s, es);
    check(allows(s, eog) && !allows(s, es), "after \"yes\": only end-of-generation");
    check(cg_is_accepting(cgram_llama_sampler_matcher(s)) == 1, "the matcher is accepting");
    check(c && allows(c, es) && !allows(c, eog), "the clone did not move");
    llama_sampler_accept(s, eog);
    check(cgram_llama_sampler_error(s) == NULL &&
              cg_is_terminated(cgram_llama_sampler_matcher(s)) == 1,
          "end-of-generation accepted: terminated, no error");
    llama_sampler_reset(s);
    check(n_allowed(s) == n_full && cgram_llama_sampler_error(s) == NULL,
          "reset: back at the start");

    /* A token the grammar cannot take: reported, then only end of generation. */
    printf("      (a line from cgram_llama on stderr is expected here)\n");
    fflush(stdout);
    llama_sampler_accept(s, x);
    const char *err = cgram_llama_sampler_error(s);
    check(err != NULL && strstr(err, "does not allow") != NULL,
          "accepting a token the grammar refuses is reported");
    if (err)
        printf("      (%s)\n", err);
    int only_eog = 1;
    a = full();
    llama_sampler_apply(s, &a);
    for (int32_t t = 0; t < n_vocab; t++)
        if ((cand[t].logit != -INFINITY) != (llama_vocab_is_eog(vocab, t) != 0))
            only_eog = 0;
    check(only_eog, "after that, exactly the end-of-generation tokens are allowed");
    llama_sampler_accept(s, yes);
    check(cgram_llama_sampler_error(s) == err, "the first error stays");
    llama_sampler_reset(s);
    check(cgram_llama_sampler_error(s) == NULL && n_allowed(s) == n_full, "reset clears it");

    /* Ending early: end-of-generation is refused while incomplete, and
     * accepting it anyway (a host that did not apply the sampler) is
     * reported, not an abort. */
    check(!allows(s, eog), "end-of-generation refused at the start");
    fflush(stdout);
    llama_sampler_accept(s, eog);
    check(cgram_llama_sampler_error(s) != NULL, "accepting it anyway is reported");
    llama_sampler_reset(s);

    /* In a chain: llama_sampler_sample-style apply + accept, and a clone of
     * the chain. */
    struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, s);
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    a = full();
    cand[no].logit = 5.0f;
    cand[x].logit = 9.0f;
    llama_sampler_apply(chain, &a);
    llama_token picked = a.data[a.selected].id;
    check(picked == no, "in a chain with greedy: the best allowed token is picked (\"no\", not \"x\")");
    llama_sampler_accept(chain, picked);
    struct llama_sampler *chain2 = llama_sampler_clone(chain);
    check(chain2 != NULL && allows(s, eog), "after \"no\": end-of-generation allowed; chain cloned");
    llama_sampler_free(chain2);

    /* A JSON Schema and any JSON. */
    struct llama_sampler *js = cgram_llama_sampler_init(
        vocab, "json_schema", "{\"type\": \"object\", \"properties\": {\"a\": {\"enum\": [1, 2]}}}", NULL);
    check(js != NULL && allows(js, one_token("{")) && !allows(js, one_token("[")),
          "json_schema: an object may start, an array not");
    struct llama_sampler *anyj = cgram_llama_sampler_init(vocab, "json", NULL, NULL);
    check(anyj != NULL && allows(anyj, one_token("[")) && !allows(anyj, x),
          "json: any JSON value (\"[\" yes, \"x\" no)");
    struct llama_sampler *re = cgram_llama_sampler_init(vocab, "regex", "[0-9]{2}-x", NULL);
    check(re != NULL && allows(re, one_token("12")) && !allows(re, y), "regex");
    llama_sampler_free(js);
    llama_sampler_free(anyj);
    llama_sampler_free(re);
    json_options();

    /* Lazy samplers with llama.cpp's argument lists. */
    const char *lg = "root ::= \"[\" [a-z]+ \"]\"";
    const char *bad_pattern[] = {"(unclosed"};
    struct llama_sampler *lb =
        cgram_llama_sampler_init_lazy_patterns(vocab, lg, NULL, bad_pattern, 1, NULL, 0);
    check(!lb && cgram_llama_last_error_in_triggers() &&
              cgram_llama_last_error_code() == CG_ERR_PARSE,
          "a trigger pattern that does not parse: NULL, a parse error in the triggers");
    printf("      (%s)\n", cgram_llama_last_error());
    lb = cgram_llama_sampler_init_lazy_patterns(vocab, "root ::= (", NULL, NULL, 0, NULL, 0);
    check(!lb && !cgram_llama_last_error_in_triggers() &&
              cgram_llama_last_error_code() == CG_ERR_PARSE,
          "a lazy grammar that does not parse: NULL, a parse error in the grammar");
    const char *words[] = {"[", "never"};
    struct llama_sampler *lw =
        cgram_llama_sampler_init_lazy(vocab, lg, NULL, words, 2, NULL, 0);
    check(lw != NULL && n_allowed(lw) > n_vocab / 2 && allows(lw, x),
          "a lazy sampler with trigger words: free before the trigger");
    if (lw) {
        llama_sampler_accept(lw, x);
        llama_sampler_accept(lw, one_token("["));
        check(cg_is_triggered(cgram_llama_sampler_matcher(lw), NULL, NULL) == 1 &&
                  allows(lw, y) && !allows(lw, one_token("[")) && !allows(lw, eog),
              "then the word fires and the grammar constrains");
        llama_sampler_reset(lw);
        check(cg_is_triggered(cgram_llama_sampler_matcher(lw), NULL, NULL) == 0 && allows(lw, x),
              "reset: awaiting again");
    }
    llama_sampler_free(lw);
    cg_grammar_cache_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    check(cgram_llama_cache_stats(&st) == CG_OK && st.hits > 0 && st.entries > 0,
          "the grammar cache answered repeated grammars");
    printf("      (%llu hits, %llu misses, %llu entries, %llu bytes)\n",
           (unsigned long long)st.hits, (unsigned long long)st.misses,
           (unsigned long long)st.entries, (unsigned long long)st.bytes);

    /* A host-made vocabulary, and the cache cleared under live samplers. */
    cg_vocab *cv = cgram_llama_vocab_new(vocab);
    struct llama_sampler *hv = cv ? cgram_llama_sampler_init_vocab(cv, g, strlen(g), NULL) : NULL;
    cg_vocab_free(cv);
    check(hv != NULL && n_allowed(hv) == n_full, "cgram_llama_sampler_init_vocab");
    cgram_llama_vocab_cache_clear();
    check(n_allowed(chain) >= 0 && allows(s, eog), "samplers live on after the cache is cleared");
    struct llama_sampler *again = cgram_llama_sampler_init(vocab, "gbnf", g, NULL);
    check(again != NULL && n_allowed(again) == n_full, "and new ones are made afresh");
    llama_sampler_free(again);
    llama_sampler_free(hv);

    llama_sampler_free(chain); /* frees s */
    llama_sampler_free(c);
    cgram_llama_vocab_cache_clear();
    free(cand);
    llama_model_free(model);
    llama_backend_free();
    printf("%d passed, %d failed\n", n_passed, n_failed);
    return n_failed ? 1 : 0;
}
