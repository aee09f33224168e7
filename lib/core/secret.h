/*
 * secret.h - API keys: loading them, keeping them out of text (redaction)
 * and out of child environments.  Below every layer that writes text
 * somewhere (the stream, the store, logs, diffs) and every layer that starts
 * processes (os/sandbox), so none of them needs the LLM layer for it.  The
 * names keep their llm_ prefix (the keys are the LLM providers').
 */
#ifndef FORGE_SECRET_H
#define FORGE_SECRET_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

/* Secrets.  Names of the variables that hold keys (NULL-terminated). */
extern const char *const llm_secret_env_names[];
/* Remove those variables from a NULL-terminated environment array in place
 * (the strings are not freed; they belong to the caller).  Returns how many
 * were removed. */
int llm_scrub_env(char **envp);
/* The process's environment (environ) without those variables, for a
 * child that needs the rest (a git credential helper, ssh-keygen): a
 * malloc'd NULL-terminated array of environ's strings, which it borrows
 * (free the array alone, before the environment changes). */
char **llm_environ_scrubbed(void);
/* Remember a secret (copied) so llm_redact() hides it.  Empty/short
 * strings (< 8 bytes) are ignored. */
void llm_secret_add(const char *secret);
/* Replace every known secret in s (in place; same length or shorter) with
 * "[REDACTED]"-like text.  Returns s. */
char *llm_redact(char *s);
/*
 * Keys Forge knows of, for redaction by value (DESIGN.md §5 llm: keys never
 * logged).  llm_secret_load_env() registers the values of every variable of
 * llm_secret_env_names and the contents of FORGE_ANTHROPIC_KEY_FILE and
 * FORGE_OPENAI_KEY_FILE (an unreadable file is skipped here; llm_key_load()
 * reports it).  llm_secret_protect(), called once early in every program
 * (cli_parse() does it), makes the process non-dumpable
 * (prctl(PR_SET_DUMPABLE, 0)), registers those keys, and overwrites their
 * values in the process's initial environment block -- what
 * /proc/PID/environ shows -- with NUL bytes, after moving each such entry
 * to the heap: getenv() and the environment children inherit (environ)
 * still hold the key, /proc/PID/environ no longer does.  Idempotent.
 */
void llm_secret_load_env(void);
void llm_secret_protect(void);
/* True when s[0..n) contains a registered secret. */
bool llm_secret_in(const char *s, size_t n);
/* A redacted copy of s[0..n) (may hold NUL bytes), NUL-terminated, its
 * length in *out_len (may be NULL); every registered secret becomes
 * "[REDACTED]".  Always a new malloc'd buffer. */
char *llm_redact_mem(const char *s, size_t n, size_t *out_len);
/* v (consumed) with every string in it, object keys included, redacted. */
jv llm_redact_jv(jv v);
/*
 * Passwords in URLs ("scheme://user:password@host/..."): a proxy's or a git
 * remote's basic auth.  secret_url_shown() returns a malloc'd copy of url
 * with the password as "***" (NULL for NULL) and registers the password
 * (llm_secret_add), so that every redaction hides it too.
 * secret_url_passwords_add() registers the password of every such URL in
 * the n bytes at s (the configuration's strings: a password is a secret
 * before the URL is ever shown, e.g. in the run's stored configuration).
 */
char *secret_url_shown(const char *url);
void secret_url_passwords_add(const char *s, size_t n);
/* v (borrowed): secret_url_passwords_add() over each of its strings. */
void secret_url_passwords_add_jv(jv v);
/* v (consumed) with the password of every URL in its strings as "***",
 * however short it is (llm_secret_add() keeps only long secrets). */
jv secret_url_passwords_hidden_jv(jv v);
/* v (consumed) with every secret of a known form in its strings as
 * "[REDACTED]", whether or not this process knows it: the forms the
 * review's secret scanner reports (core/secret_forms.h: private key blocks,
 * AWS, GitHub, Slack, Stripe, Google, Anthropic and OpenAI keys, hard-coded
 * credential assignments). */
jv secret_tokens_hidden_jv(jv v);
/* v (consumed) with all of the above hidden: registered keys
 * (llm_redact_jv), URL passwords as "***" and secrets of a known form.
 * What a memory is stored with, and what a recalled memory is put into a
 * prompt with (one stored before a form was known is hidden then). */
jv secret_hidden_jv(jv v);
/* Read a provider's key: env var, else the key file.  *out malloc'd, or
 * NULL when none is configured (not an error).  -1 when the key file is
 * unreadable. */
int llm_key_load(char **out, const char *provider);

#endif
