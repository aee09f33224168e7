/*
 * secret_forms.h - secrets known by their look: the one list of them.
 *
 * The review's secret scanner (review/review_secrets.c) reports what these
 * forms find on a change's added lines; every text Forge keeps for later
 * prompts (memories: core/secret.h secret_tokens_hidden_jv) has what they
 * find replaced by "[REDACTED]".  A form added here is therefore both found
 * in a diff and hidden in memory; neither list can grow alone.
 */
#ifndef FORGE_SECRET_FORMS_H
#define FORGE_SECRET_FORMS_H

#include <stdbool.h>
#include <stddef.h>

struct secret_form {
	const char *id;         /* the review's rule id: "secret/openai-api-key" */
	const char *what;       /* for messages: "OpenAI API key" */
	const char *pattern;    /* PCRE2 (UTF), one line at a time; group 1 is the secret */
	double min_entropy;     /* of group 1 (bits per character) for the review to report it; 0 = none */
	bool contextual;        /* known by the words around it (an assignment), not by its
				 * own look: redaction applies min_entropy too */
};

/* Private key blocks, AWS key ids and secret keys, GitHub, Slack, Stripe,
 * Google, Anthropic and OpenAI keys, then hard-coded credential
 * assignments, in the order the review tries them (the first that reports
 * a line wins: sk-ant- before sk-). */
enum { SECRET_NFORMS = 13 };
extern const struct secret_form secret_forms[SECRET_NFORMS];

/* Shannon entropy of s[0..n) in bits per character. */
double secret_entropy(const char *s, size_t n);

/*
 * A copy of s[0..n) with every secret the forms find as "[REDACTED]": the
 * provider forms whatever their entropy (a text is not a diff to be
 * reviewed, where a low-entropy value is more likely a placeholder), the
 * contextual ones above their min_entropy.  Forms are applied in order.
 * NULL (and *out_len untouched) when none is found, else a malloc'd
 * NUL-terminated buffer and its length in *out_len (may be NULL).  Also
 * NULL when the forms could not be compiled (never with these constant
 * patterns; test_secret checks every form).
 */
char *secret_forms_hidden(const char *s, size_t n, size_t *out_len);

#endif
