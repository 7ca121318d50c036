/*
 * cgram_llama: a llama.cpp sampler that constrains generation with cgram.
 *
 * This adapter is source code that the host compiles against its own
 * llama.h (struct llama_sampler_i grows between llama.cpp versions, so it
 * cannot live inside libcgram). Add cgram_llama.c to the program or use
 * adapters/llama/CMakeLists.txt (target cgram_llama), and link libcgram
 * and libllama. Programs that are not to be changed at all (llama-server,
 * llama-cli) get cgram from the drop-in built from the same source,
 * cgram_llama_dropin.c (scripts/install-llama-dropin.sh; on Windows a
 * proxy llama.dll, scripts/install-llama-dropin-windows.sh).
 *
 *   struct llama_sampler *g = cgram_llama_sampler_init(
 *       llama_model_get_vocab(model), "json_schema", schema_text, NULL);
 *   if (!g) { fprintf(stderr, "%s\n", cgram_llama_last_error()); ... }
 *   struct llama_sampler *chain =
 *       llama_sampler_chain_init(llama_sampler_chain_default_params());
 *   llama_sampler_chain_add(chain, g);        // the chain owns it now
 *   llama_sampler_chain_add(chain, llama_sampler_init_top_k(40));
 *   llama_sampler_chain_add(chain, llama_sampler_init_temp(0.7f));
 *   llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));
 *   ... llama_sampler_sample(chain, ctx, -1) in the decoding loop ...
 *   if (cgram_llama_sampler_error(g)) { ... the output is not grammatical ... }
 *
 * Behaviour:
 *   - apply masks any subset of candidates, in any order (candidates whose
 *     token is not allowed get logit -INFINITY). The mask of a state is
 *     computed once and reused until the next accept, so llama.cpp's common
 *     sampler (try one sampled candidate first, then the whole vocabulary)
 *     pays for one mask per token.
 *   - End-of-generation tokens (llama_vocab_is_eog) are allowed exactly
 *     when the output so far is complete. Special (control) tokens are
 *     never matched by grammar text.
 *   - Nothing aborts the host or throws. A grammar that does not compile
 *     is a NULL sampler with a message (cgram_llama_last_error). A token
 *     the grammar does not allow, given to accept (the host sampled without
 *     applying this sampler, or fed the prompt through it), is reported:
 *     cgram_llama_sampler_error() returns a message, a warning goes to
 *     llama.cpp's log, and from then on the sampler allows only
 *     end-of-generation tokens, so that generation stops instead of going
 *     on unconstrained. reset clears the error.
 *   - clone copies the state (cheap); reset goes back to the start.
 *   - The cgram vocabulary is built from the llama vocabulary (token
 *     pieces with llama_token_to_piece, special = CONTROL or UNKNOWN
 *     attribute, end-of-sequence = llama_vocab_is_eog) once per distinct
 *     vocabulary and cached for the life of the process (or until
 *     cgram_llama_vocab_forget / cgram_llama_vocab_cache_clear), so that
 *     every sampler on one model shares it and its per-vocabulary caches.
 *     The cache is keyed by the llama vocabulary's address and checked
 *     against a fingerprint of its content (its size, end-of-generation
 *     tokens, and the text and attributes of 256 tokens: a few
 *     microseconds); a vocabulary seen for the first time is read whole
 *     (5 ms for 262,144 tokens) and built (50-80 ms), or shares the cgram
 *     vocabulary of another model with exactly the same tokens. A host
 *     that frees a model and may load another at the same address calls
 *     cgram_llama_vocab_forget(llama_model_get_vocab(model)) first.
 *   - Grammars and triggers are compiled through one cache (cgram's
 *     cg_grammar_cache, 256 MiB by default, CGRAM_LLAMA_CACHE_MB or
 *     cgram_llama_cache_set_budget to change it): a sampler for a grammar
 *     seen before costs no compilation.
 *   - Lazy samplers (cgram_llama_sampler_init_lazy_patterns, with
 *     llama.cpp's argument list) allow every token until a trigger fires,
 *     then constrain; see cg_matcher_new_lazy in cgram.h for the details
 *     and the differences from llama.cpp. With CGRAM_LLAMA_VERBOSE set in
 *     the environment, a line is logged when a trigger fires.
 *   - Messages go to llama.cpp's log (llama_log_get), as llama.cpp's own
 *     do.
 *
 * Threads: functions may be called from any thread; one sampler is used by
 * one thread at a time (as every llama.cpp sampler).
 */
#ifndef CGRAM_LLAMA_H
#define CGRAM_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include <cgram.h>
/* CGRAM_LLAMA_OWN_ABI: cgram's declaration of the part of llama.h it uses
 * (cgram_llama_abi.h), for builds without llama.cpp's headers. */
#if defined(CGRAM_LLAMA_OWN_ABI)
#include "cgram_llama_abi.h"
#else
#include <llama.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* cgram_llama_sampler_init, JSON kinds: the longest run of whitespace. */
#define CGRAM_LLAMA_JSON_MAX_WHITESPACE 32

/*
 * A sampler constraining the output to a grammar.
 *
 * kind: "gbnf" (llama.cpp's GBNF), "json_schema" (a JSON Schema's text),
 *       "regex" (the whole output matches it), "json" (any JSON value;
 *       grammar_or_schema is ignored and may be NULL). NULL means "gbnf".
 * grammar_or_schema: NUL-terminated UTF-8 text.
 * root: the GBNF start rule; NULL means "root".
 *
 * For "json_schema" and "json", a run of whitespace between JSON tokens is
 * at most CGRAM_LLAMA_JSON_MAX_WHITESPACE characters (llama.cpp's schema
 * converter bounds it too: small models otherwise loop on newlines); other
 * settings go through cgram_llama_sampler_init_opts.
 *
 * Returns a new sampler (free it with llama_sampler_free, or let the chain
 * that owns it free it), or NULL with cgram_llama_last_error() saying why.
 */
struct llama_sampler *cgram_llama_sampler_init(const struct llama_vocab *vocab, const char *kind,
                                               const char *grammar_or_schema, const char *root);

/*
 * The same with all of cgram's compile options (initialise them with
 * cg_compile_options_init, then set kind, root, flags such as
 * CG_JSON_COMPACT, json_max_whitespace, limits). source is source_len
 * bytes, not necessarily NUL-terminated. NULL options: GBNF, root "root".
 *
 * The JSON options users ask for (see cgram.h for each):
 *   - CG_JSON_ORDERED_PROPERTIES: properties in the schema's listed order,
 *     as llama.cpp's json-schema-to-grammar converter writes them;
 *   - fixed formatting: json_indent, json_item_separator,
 *     json_key_separator (exactly the layout Python's json.dumps writes;
 *     the output is reproducible and cannot loop on whitespace);
 *   - CG_JSON_STRICT_INTEGERS: integer fields as plain integers;
 *   - CG_JSON_LENIENT: keywords no automaton can enforce are left out
 *     instead of refusing the schema; cgram_llama_sampler_grammar and
 *     cg_grammar_dropped tell which.
 *
 *   cg_compile_options o;
 *   cg_compile_options_init(&o);
 *   o.kind = CG_KIND_JSON_SCHEMA;
 *   o.flags = CG_JSON_ORDERED_PROPERTIES | CG_JSON_STRICT_INTEGERS | CG_JSON_LENIENT;
 *   o.json_indent = 2;
 *   struct llama_sampler *g =
 *       cgram_llama_sampler_init_opts(vocab, schema, strlen(schema), &o);
 *   const cg_grammar *gr = cgram_llama_sampler_grammar(g);
 *   for (int i = 0; i < cg_grammar_dropped_count(gr); i++) {
 *       const char *ptr;
 *       const char *kw = cg_grammar_dropped(gr, (size_t)i, &ptr, NULL);
 *       fprintf(stderr, "not enforced: %s at '%s'\n", kw, ptr);
 *   }
 */
struct llama_sampler *cgram_llama_sampler_init_opts(const struct llama_vocab *vocab,
                                                    const char *source, size_t source_len,
                                                    const cg_compile_options *options);

/*
 * The same for a cgram vocabulary the host made itself, once per model
 * (cgram_llama_vocab_new): creating a sampler then only compiles the
 * grammar, without reading the llama vocabulary again. vocab must be the
 * model's vocabulary as cgram_llama_vocab_new builds it; the grammar keeps
 * its own reference, so the host may free vocab whenever it likes.
 */
struct llama_sampler *cgram_llama_sampler_init_vocab(const cg_vocab *vocab, const char *source,
                                                     size_t source_len,
                                                     const cg_compile_options *options);

/*
 * The message of the last failed cgram_llama_* call on this thread (never
 * NULL; "" when none failed). Valid until the next failing call on this
 * thread.
 */
const char *cgram_llama_last_error(void);

/*
 * The CG_ERR_* code of that failure (CG_ERR_PARSE for a grammar llama.cpp
 * would refuse too, CG_ERR_LIMIT or CG_ERR_UNSUPPORTED for one cgram
 * cannot take, ...), and whether it was in the triggers of a lazy sampler
 * (1) rather than in the grammar (0).
 */
int cgram_llama_last_error_code(void);
int cgram_llama_last_error_in_triggers(void);

/*
 * NULL while the sampler is fine; otherwise what went wrong first (a token
 * the grammar does not allow was accepted, a mask could not be computed).
 * Valid until the sampler is reset or freed. NULL for a sampler that is
 * not a cgram sampler.
 */
const char *cgram_llama_sampler_error(const struct llama_sampler *smpl);

/* 1 when smpl was made by cgram_llama_sampler_init*, 0 otherwise. */
int cgram_llama_sampler_is_cgram(const struct llama_sampler *smpl);

/*
 * The sampler's cgram matcher (owned by the sampler), for
 * cg_is_accepting, cg_is_terminated, cg_forced_tokens; NULL for a sampler
 * that is not a cgram sampler. Do not advance it directly: use the
 * sampler's accept (llama_sampler_accept) so that the cached mask stays
 * right.
 */
cg_matcher *cgram_llama_sampler_matcher(struct llama_sampler *smpl);

/*
 * The sampler's compiled grammar (owned by the sampler; valid while it
 * lives), for cg_grammar_dropped_count / cg_grammar_dropped (the keywords
 * a CG_JSON_LENIENT compile left out) and cg_mask_words; NULL for a
 * sampler that is not a cgram sampler.
 */
const cg_grammar *cgram_llama_sampler_grammar(const struct llama_sampler *smpl);

/*
 * Lazy samplers, as llama.cpp's llama_sampler_init_grammar_lazy_patterns
 * and (deprecated there) llama_sampler_init_grammar_lazy take them: a GBNF
 * grammar, its start rule (NULL: "root"), trigger patterns (std::regex
 * ECMAScript; the grammar starts at the first non-empty capturing group)
 * or trigger words (llama.cpp turns them into one pattern,
 * [\s\S]*?(word1|word2...)[\s\S]*, and so does this), and trigger tokens.
 * Every token is allowed until a trigger fires; from then on the output is
 * constrained (cg_matcher_new_lazy in cgram.h has the details). NULL on
 * error with cgram_llama_last_error() saying why: a bad grammar or a bad
 * pattern is an error, never an unconstrained sampler.
 */
struct llama_sampler *cgram_llama_sampler_init_lazy_patterns(
    const struct llama_vocab *vocab, const char *grammar_str, const char *grammar_root,
    const char **trigger_patterns, size_t num_trigger_patterns, const llama_token *trigger_tokens,
    size_t num_trigger_tokens);

struct llama_sampler *cgram_llama_sampler_init_lazy(const struct llama_vocab *vocab,
                                                    const char *grammar_str,
                                                    const char *grammar_root,
                                                    const char **trigger_words,
                                                    size_t num_trigger_words,
                                                    const llama_token *trigger_tokens,
                                                    size_t num_trigger_tokens);

/* cgram_llama_sampler_init_ext flags: lazy even without triggers (a lazy
 * grammar with no trigger never constrains, as in llama.cpp). */
#define CGRAM_LLAMA_LAZY 1u
/* cgram_llama_sampler_init_ext / cgram_llama_vocab_new_ext flags: control
 * tokens match grammar text by their text, as llama.cpp's own grammar
 * sampler matches them (by default they never match text, only a token
 * reference such as <[id]> or <|name|> in the grammar). The drop-in uses
 * it, so that it accepts what llama.cpp accepts. */
#define CGRAM_LLAMA_SPECIAL_AS_TEXT 2u

/*
 * The general constructor: source and options as cg_compile takes them
 * (NULL options: GBNF, root "root"), n_triggers triggers as
 * cg_triggers_new takes them (a lazy sampler when there are any, or with
 * CGRAM_LLAMA_LAZY), flags CGRAM_LLAMA_*.
 */
struct llama_sampler *cgram_llama_sampler_init_ext(const struct llama_vocab *vocab,
                                                   const char *source, size_t source_len,
                                                   const cg_compile_options *options,
                                                   const cg_trigger *triggers, size_t n_triggers,
                                                   uint32_t flags);

/* The lazy constructors with flags: trigger_texts are words when
 * texts_are_words is set, patterns otherwise. */
struct llama_sampler *cgram_llama_sampler_init_lazy_ext(
    const struct llama_vocab *vocab, const char *grammar_str, const char *grammar_root,
    const char **trigger_texts, size_t num_trigger_texts, int texts_are_words,
    const llama_token *trigger_tokens, size_t num_trigger_tokens, uint32_t flags);

/*
 * The cgram vocabulary of a llama vocabulary, built afresh (not cached):
 * for every token id, the bytes llama_token_to_piece gives with special
 * rendering on, CG_TOKEN_SPECIAL for CONTROL and UNKNOWN tokens, and the
 * llama_vocab_is_eog tokens as end-of-sequence. The caller frees it with
 * cg_vocab_free. NULL on error (cgram_llama_last_error).
 */
cg_vocab *cgram_llama_vocab_new(const struct llama_vocab *vocab);

/* The same with flags (CGRAM_LLAMA_SPECIAL_AS_TEXT). */
cg_vocab *cgram_llama_vocab_new_ext(const struct llama_vocab *vocab, uint32_t flags);

/*
 * The raw arrays cgram_llama_vocab_new builds the vocabulary from, for
 * tests and tools: n_tokens entries each of bytes (pointers into one
 * buffer), lengths and flags, plus the end-of-generation ids.
 */
typedef struct cgram_llama_vocab_arrays {
    uint32_t n_tokens;
    const uint8_t **token_bytes;
    uint32_t *token_lens;
    uint32_t *token_flags;
    int32_t *eog_tokens;
    uint32_t n_eog;
    uint8_t *storage; /* every token's bytes, back to back */
} cgram_llama_vocab_arrays;

/* Fills *out (0 on success, -1 with cgram_llama_last_error on failure). */
int cgram_llama_vocab_arrays_build(const struct llama_vocab *vocab, cgram_llama_vocab_arrays *out);
void cgram_llama_vocab_arrays_free(cgram_llama_vocab_arrays *arrays);

/*
 * Drops the cached cgram vocabulary of a llama vocabulary, and the cached
 * grammars compiled for it (samplers alive keep theirs). Call it before
 * freeing the model: another model loaded later at the same address then
 * gets a vocabulary of its own. Thread-safe.
 */
void cgram_llama_vocab_forget(const struct llama_vocab *vocab);

/*
 * Drops every cached vocabulary and grammar (samplers and grammars alive
 * keep theirs). Thread-safe.
 */
void cgram_llama_vocab_cache_clear(void);

/* How many llama vocabularies have a cached cgram vocabulary now (one per
 * model address seen and not forgotten): for hosts' diagnostics and tests. */
size_t cgram_llama_vocab_cache_count(void);

/*
 * The budget of the grammar cache in bytes (0: CGRAM_LLAMA_CACHE_MB from
 * the environment, else cgram's default of 256 MiB). Thread-safe.
 */
void cgram_llama_cache_set_budget(size_t bytes);

/*
 * The grammar cache's counters (hits, misses, evictions, entries, bytes,
 * budget): set stats->struct_size = sizeof *stats first. CG_OK or a
 * CG_ERR_* code. Thread-safe.
 */
int cgram_llama_cache_stats(cg_grammar_cache_stats *stats);

/*
 * A line in llama.cpp's log (llama_log_get's callback; stderr when there
 * is none), for the adapter's own messages. printf-style; a newline is
 * added when missing.
 */
void cgram_llama_log(enum ggml_log_level level, const char *fmt, ...)
#if defined(__MINGW32__) && !defined(__clang__)
    /* MinGW gcc reads "printf" as msvcrt's dialect, without %zu; the
     * adapter formats with MinGW-w64's C99 printf, as llama.cpp's own
     * format attributes say there. */
    __attribute__((format(gnu_printf, 2, 3)))
#elif defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif /* CGRAM_LLAMA_H */
