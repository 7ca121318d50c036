/*
 * lazy_compare: cgram's lazy samplers against llama.cpp's own
 * (llama_sampler_init_grammar_lazy_patterns, std::regex triggers) in the
 * same process, on a vocab-only GGUF: the same trigger lists, grammars and
 * token streams; at every step the full-vocabulary masks of both.
 *
 *   lazy_compare VOCAB.gguf     (ggml-vocab-llama-bpe.gguf: Llama 3)
 *
 * For each case it checks that the trigger fires at the same token (llama.cpp
 * allows every token until then), that from then on the masks agree up to
 * llama.cpp's known deviations (tokens that are never valid UTF-8, which
 * llama.cpp admits; tokens starting with a NUL byte, which it never
 * admits), and that before it cgram allows everything llama.cpp does but
 * the tokens that would fire a trigger into text the grammar refuses (where
 * llama.cpp's accept throws: a deliberate difference; each such token is
 * checked to be rejected by cgram's own cg_accept, on a clone of its
 * matcher). cgram's samplers here
 * match control tokens by their text, as llama.cpp's do
 * (CGRAM_LLAMA_SPECIAL_AS_TEXT, the drop-in's setting).
 *
 * Prints one line per case; exit status 0 when every case agreed.
 */
#include "cgram_llama.h"
#include "demo_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct llama_vocab *vocab;
static int32_t n_vocab;
static llama_token_data *cand_l, *cand_c;

struct lazy_case {
    const char *name;
    const char *grammar;
    const char *patterns[3];
    const char *token_texts[2]; /* trigger tokens, by their text */
    const char *text;           /* the output, tokenized with specials parsed */
};

static const struct lazy_case cases[] = {
    {"a word split over tokens",
     "root ::= \"<tool_call>\" [ \\n]* \"{\\\"name\\\": \\\"\" [a-z_]+ \"\\\"}\" [ \\n]* \"</tool_call>\"",
     {"<tool_call>"}, {NULL},
     "Let me look that up.<tool_call>\n{\"name\": \"get_weather\"}\n</tool_call>"},
    {"a token that completes the trigger and runs on",
     "root ::= \"<tool_call>\" [ \\n]* \"{\\\"name\\\": \\\"\" [a-z_]+ \"\\\"}\" [ \\n]* \"</tool_call>\"",
     {"<tool_call>"}, {NULL},
     "Sure.<tool_call>\n{\"name\": \"f\"}</tool_call>"},
    {"the grammar starts inside a token",
     "root ::= \"{\\\"type\\\": \\\"function\\\", \\\"name\\\": \\\"\" [a-z]+ \"\\\"}\"",
     {"\\{\"type\": \"function\","}, {NULL},
     "Calling: {\"type\": \"function\", \"name\": \"abc\"}"},
    {"a pattern whose first group starts the grammar",
     "root ::= \"<tool_call>\" [^<]* \"</tool_call>\"",
     {"[\\s\\S]*?(<tool_call>|\\[TOOL\\])[\\s\\S]*"}, {NULL},
     "First [TOO, then <tool_call>{\"a\": 1}</tool_call>"},
    {"a group after literal text",
     "root ::= \" to=functions.\" [a-z_]+",
     {"<\\|start\\|>assistant(\\s+to)"}, {NULL},
     "<|start|>assistant to=functions.get_weather"},
    {"a pattern matched against the whole output",
     "root ::= \" to\" [=a-z.]*",
     {"^\\s+to$"}, {NULL},
     " to=functions.search"},
    {"a negative lookahead",
     "root ::= \"a\" [ a-z]*",
     {"a(?!ll)"}, {NULL},
     "all is a test"},
    {"two patterns firing on one token: the first listed wins",
     "root ::= \"cond\" [a-z ]*",
     {"cond", "Sec"}, {NULL},
     "Words: Second and more"},
    {"a word boundary",
     "root ::= \"call\" [ a-z]*",
     {"\\bcall\\b"}, {NULL},
     "recall this: call now"},
    {"an empty group is skipped for the next",
     "root ::= \"<f>\" [a-z]*",
     {"(x*)(<f>)"}, {NULL},
     "a <f>go"},
    {"a lazy quantifier inside the group",
     "root ::= \"<a\" [^>]* \">\" [ a-z]*",
     {"(<a.*?>)"}, {NULL},
     "pre <a href> x"},
    {"escaped brackets around the group",
     "root ::= \"TOOL]\" [ a-z]*",
     {"\\[(TOOL)\\]"}, {NULL},
     "go [TOOL] run"},
    {"a dot does not match a newline",
     "root ::= \"a-b\" [ a-z]*",
     {"a.b"}, {NULL},
     "a\nb a-b go"},
    {"digits and a count",
     "root ::= [0-9]{2} \": go\"",
     {"\\d{2}:"}, {NULL},
     "at 12: go"},
    {"a repeated group captures its last iteration",
     "root ::= \"ab y\"",
     {"(ab){2}"}, {NULL},
     "x abab y"},
    {"a multi-byte character",
     "root ::= \"\u2192 there\"",
     {"\u2192"}, {NULL},
     "go \u2192 there"},
    {"a trigger token",
     "root ::= \"<|start_header_id|>\" [a-z]+ \"<|end_header_id|>\"",
     {NULL}, {"<|start_header_id|>"},
     "Intro text.<|start_header_id|>assistant<|end_header_id|>"},
};

static llama_token_data_array full(llama_token_data *cand)
{
    for (int32_t t = 0; t < n_vocab; t++)
        cand[t] = (llama_token_data){t, 0.0f, 0.0f};
    return (llama_token_data_array){cand, (size_t)n_vocab, -1, false};
}

static llama_token token_of(const char *text)
{
    llama_token t[4];
    int n = llama_tokenize(vocab, text, (int32_t)strlen(text), t, 4, false, true);
    return n == 1 ? t[0] : -1;
}

/* Runs one case; returns 1 when both engines agreed. */
static int run(const struct lazy_case *c)
{
    const char *patterns[3];
    size_t n_patterns = 0;
    for (int i = 0; i < 3 && c->patterns[i]; i++)
        patterns[n_patterns++] = c->patterns[i];
    llama_token tokens[2];
    size_t n_tokens = 0;
    for (int i = 0; i < 2 && c->token_texts[i]; i++) {
        tokens[n_tokens] = token_of(c->token_texts[i]);
        if (tokens[n_tokens] < 0) {
            printf("FAIL: %s: \"%s\" is not one token\n", c->name, c->token_texts[i]);
            return 0;
        }
        n_tokens++;
    }
    struct llama_sampler *l = llama_sampler_init_grammar_lazy_patterns(
        vocab, c->grammar, "root", patterns, n_patterns, tokens, n_tokens);
    struct llama_sampler *g = cgram_llama_sampler_init_lazy_ext(
        vocab, c->grammar, "root", patterns, n_patterns, 0, tokens, n_tokens,
        CGRAM_LLAMA_SPECIAL_AS_TEXT);
    if (!l || !g) {
        printf("FAIL: %s: sampler creation (llama.cpp %p, cgram %p: %s)\n", c->name, (void *)l,
               (void *)g, cgram_llama_last_error());
        return 0;
    }
    llama_token ids[256];
    int n = llama_tokenize(vocab, c->text, (int32_t)strlen(c->text), ids, 256, false, true);
    int ok = n > 0;
    int fired_l = -1, fired_c = -1;
    long refused_only_by_cgram = 0, known = 0, diffs = 0;
    for (int k = 0; k < n && ok; k++) {
        llama_token_data_array al = full(cand_l), ac = full(cand_c);
        llama_sampler_apply(l, &al);
        llama_sampler_apply(g, &ac);
        int32_t n_allowed_l = 0;
        for (int32_t t = 0; t < n_vocab; t++)
            n_allowed_l += cand_l[t].logit != -INFINITY;
        int awaiting_l = n_allowed_l == n_vocab;
        int awaiting_c = cg_is_triggered(cgram_llama_sampler_matcher(g), NULL, NULL) == 0;
        if (awaiting_l != awaiting_c) {
            printf("FAIL: %s: before token %d llama.cpp is %s, cgram %s\n", c->name, k,
                   awaiting_l ? "awaiting" : "triggered", awaiting_c ? "awaiting" : "triggered");
            ok = 0;
            break;
        }
        if (!awaiting_l && fired_l < 0)
            fired_l = k;
        if (!awaiting_c && fired_c < 0)
            fired_c = k;
        for (int32_t t = 0; t < n_vocab; t++) {
            int a = cand_l[t].logit != -INFINITY, b = cand_c[t].logit != -INFINITY;
            if (a == b)
                continue;
            char piece[256];
            int32_t pl = llama_token_to_piece(vocab, t, piece, sizeof piece, 0, true);
            if (awaiting_l && a && !b) {
                cg_matcher *probe = cg_matcher_clone(cgram_llama_sampler_matcher(g));
                int rc = cg_accept(probe, t);
                cg_matcher_free(probe);
                if (rc == CG_ERR_TOKEN_REJECTED) {
                    refused_only_by_cgram++;
                    continue;
                }
            }
            if (a && !b && pl > 0 && !demo_utf8_prefix((const unsigned char *)piece, (size_t)pl)) {
                known++;
                continue;
            }
            if (!a && b && pl > 0 && piece[0] == 0) {
                known++;
                continue;
            }
            if (diffs++ < 5)
                printf("      step %d: token %d \"%.*s\" allowed by %s only\n", k, (int)t,
                       pl > 0 ? (int)pl : 0, piece, a ? "llama.cpp" : "cgram");
        }
        if (cand_l[ids[k]].logit == -INFINITY || cand_c[ids[k]].logit == -INFINITY) {
            printf("FAIL: %s: token %d (%d) refused (llama.cpp %d, cgram %d)\n", c->name, k,
                   (int)ids[k], cand_l[ids[k]].logit != -INFINITY,
                   cand_c[ids[k]].logit != -INFINITY);
            ok = 0;
            break;
        }
        llama_sampler_accept(l, ids[k]);
        llama_sampler_accept(g, ids[k]);
        if (cgram_llama_sampler_error(g)) {
            printf("FAIL: %s: %s\n", c->name, cgram_llama_sampler_error(g));
            ok = 0;
        }
    }
    if (ok && diffs) {
        printf("FAIL: %s: %ld tokens differ\n", c->name, diffs);
        ok = 0;
    }
    if (ok && fired_l < 0) {
        printf("FAIL: %s: the trigger never fired\n", c->name);
        ok = 0;
    }
    if (ok)
        printf("ok  : %s: fires at token %d of %d in both; masks agree (%ld refused by cgram "
               "only before the trigger, %ld known llama.cpp deviations)\n",
               c->name, fired_l, n, refused_only_by_cgram, known);
    llama_sampler_free(l);
    llama_sampler_free(g);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: lazy_compare VOCAB.gguf\n");
        return 2;
    }
    struct llama_model *model = demo_load_vocab_only(argv[1]);
    if (!model)
        return 2;
    vocab = llama_model_get_vocab(model);
    n_vocab = llama_vocab_n_tokens(vocab);
    cand_l = malloc((size_t)n_vocab * sizeof *cand_l);
    cand_c = malloc((size_t)n_vocab * sizeof *cand_c);
    if (!cand_l || !cand_c)
        return 2;
    int failed = 0;
    size_t n_cases = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n_cases; i++)
        failed += !run(&cases[i]);
    printf("%zu passed, %d failed\n", n_cases - (size_t)failed, failed);
    free(cand_l);
    free(cand_c);
    llama_model_free(model);
    llama_backend_free();
    return failed ? 1 : 0;
}
