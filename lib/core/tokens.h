/*
 * tokens.h - a deterministic estimate of how many LLM tokens a text costs.
 *
 * Forge budgets context in tokens without a tokenizer: no model's
 * vocabulary is shipped, and providers differ.  The estimate walks the
 * bytes once and adds, per run of characters of one class:
 *
 *   ASCII letters        ceil(n / 4)    (English averages ~4 chars/token)
 *   ASCII digits         ceil(n / 3)    (numbers split into ~3-digit groups)
 *   ASCII punctuation    ceil(n / 2)    ("->", "\":\"" often merge)
 *   spaces and tabs      ceil((n - 1) / 4)  (one space joins the next word)
 *   newlines / CR        ceil(n / 2)
 *   other control bytes  1 each
 *   non-ASCII            1 per 2-byte UTF-8 sequence, 2 per 3- or 4-byte
 *                        sequence (CJK, emoji), 1 per stray byte
 *
 * Its error against a real tokenizer is unknown and differs per model; it
 * leans high for prose and code but may be low for unusual text, so callers
 * keep a safety margin in their budgets (the agent gives the context
 * builder a budget well below the model's window).
 *
 * Two properties the context builder relies on, kept by construction:
 *   monotone     a prefix never costs more than the whole text
 *   deterministic the same bytes always cost the same
 * The empty text costs 0.
 */
#ifndef FORGE_TOKENS_H
#define FORGE_TOKENS_H

#include <jv.h>
#include <stddef.h>

/* The estimated tokens of s[0..len); s may contain NUL bytes. */
size_t tokens_estimate(const char *s, size_t len);

/* The same for a NUL-terminated string; 0 for NULL. */
size_t tokens_estimate_str(const char *s);

/* The estimated tokens of v's compact JSON text (a string costs its quoted,
 * escaped form).  Borrows v. */
size_t tokens_estimate_jv(jv v);

/* The estimated tokens of a string value's text (unquoted); of any other
 * value, its JSON text.  Borrows v. */
size_t tokens_estimate_text(jv v);

#endif
