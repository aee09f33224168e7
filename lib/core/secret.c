/*
 * llm_secret.c - API keys: loading them, keeping them out of text and out
 * of child environments.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/secret.h"
#include "core/secret_forms.h"
#include "core/json.h"

#define REDACTED "[REDACTED]"
#define MIN_SECRET 10   /* >= strlen(REDACTED): redaction never grows text */

const char *const llm_secret_env_names[] = {
	"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN",
	"OPENROUTER_API_KEY", "FORGE_EMBED_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", NULL,
};

static char **secrets;
static size_t nsecrets;

static int read_key_file(char **out, const char *path);
static bool is_secret_var(const char *entry);

void llm_secret_add(const char *secret)
{
	if (!secret || strlen(secret) < MIN_SECRET)
		return;
	for (size_t i = 0; i < nsecrets; i++)
		if (!strcmp(secrets[i], secret))
			return;
	secrets = xrealloc(secrets, (nsecrets + 1) * sizeof(*secrets));
	secrets[nsecrets++] = xstrdup(secret);
}

static void redact_one(char *s, const char *secret)
{
	size_t slen = strlen(secret), rlen = strlen(REDACTED);
	char *p;

	while ((p = strstr(s, secret))) {
		memcpy(p, REDACTED, rlen);
		memmove(p + rlen, p + slen, strlen(p + slen) + 1);
	}
}

char *llm_redact(char *s)
{
	if (!s)
		return s;
	for (size_t i = 0; i < nsecrets; i++)
		redact_one(s, secrets[i]);
	return s;
}

bool llm_secret_in(const char *s, size_t n)
{
	for (size_t i = 0; s && i < nsecrets; i++)
		if (memmem(s, n, secrets[i], strlen(secrets[i])))
			return true;
	return false;
}

char *llm_redact_mem(const char *s, size_t n, size_t *out_len)
{
	struct buf b = BUF_INIT;

	buf_add(&b, s ? s : "", s ? n : 0);
	for (size_t i = 0; i < nsecrets; i++) {
		size_t slen = strlen(secrets[i]), rlen = strlen(REDACTED);
		size_t at = 0;
		char *p;

		while (at < b.len && (p = memmem(b.buf + at, b.len - at, secrets[i], slen))) {
			size_t off = (size_t)(p - b.buf);
			memcpy(p, REDACTED, rlen);
			memmove(p + rlen, p + slen, b.len - off - slen);
			b.len -= slen - rlen;
			at = off + rlen;
		}
		b.buf[b.len] = '\0';
	}
	return buf_detach(&b, out_len);
}

static jv redact_string(jv v, void *unused)
{
	const char *s = jv_string_value(v);
	size_t n = (size_t)jv_string_length_bytes(jv_copy(v)), len;
	char *r;

	(void)unused;
	if (!llm_secret_in(s, n))
		return v;
	r = llm_redact_mem(s, n, &len);
	jv_free(v);
	v = jv_string_sized(r, (int)len);
	free(r);
	return v;
}

jv llm_redact_jv(jv v)
{
	return json_map_strings(v, redact_string, NULL);
}

/* The userinfo of the URL whose "://" is at s[0..n): its start and the
 * '@' that ends it, when it holds a ':' (a password); else false. */
static bool url_password(const char *s, size_t n, const char **pass, const char **at)
{
	const char *user = s + 3, *end = s + n;
	size_t len = 0;

	while (user + len < end && !strchr("/?#@\"' \t\r\n<>", user[len]))
		len++;
	if (user + len >= end || user[len] != '@')
		return false;
	const char *colon = memchr(user, ':', len);

	if (!colon)
		return false;
	*pass = colon + 1;
	*at = user + len;
	return true;
}

char *secret_url_shown(const char *url)
{
	const char *scheme = url ? strstr(url, "://") : NULL, *pass, *at;
	struct buf b = BUF_INIT;

	if (!url)
		return NULL;
	if (scheme && url_password(scheme, strlen(scheme), &pass, &at)) {
		char *secret = xstrndup(pass, (size_t)(at - pass));

		llm_secret_add(secret);
		free(secret);
		buf_add(&b, url, (size_t)(pass - url));
		buf_adds(&b, "***");
		buf_adds(&b, at);
		return buf_detach(&b, NULL);
	}
	buf_adds(&b, url);
	return buf_detach(&b, NULL);
}

void secret_url_passwords_add(const char *s, size_t n)
{
	const char *end = s + n, *p = s, *pass, *at;

	while (p + 3 <= end && (p = memmem(p, (size_t)(end - p), "://", 3))) {
		if (url_password(p, (size_t)(end - p), &pass, &at)) {
			char *secret = xstrndup(pass, (size_t)(at - pass));

			llm_secret_add(secret);
			free(secret);
		}
		p += 3;
	}
}

static jv add_url_passwords(jv v, void *unused)
{
	(void)unused;
	secret_url_passwords_add(jv_string_value(v), (size_t)jv_string_length_bytes(jv_copy(v)));
	return v;
}

void secret_url_passwords_add_jv(jv v)
{
	jv_free(json_map_strings(jv_copy(v), add_url_passwords, NULL));
}

/*
 * A string with each span next() finds replaced by `with`; the string itself
 * when there is none.  next(s, end, &cur, &from, &to) looks from cur on: true
 * with [from, to) and cur moved past what it looked at, false at the end.
 * Consumes v.
 */
typedef bool span_finder(const char *s, const char *end, const char **cur, const char **from,
			 const char **to);

static jv replace_spans(jv v, span_finder *next, const char *with)
{
	const char *s = jv_string_value(v), *end, *cur, *p, *from, *to;
	size_t n = (size_t)jv_string_length_bytes(jv_copy(v));
	struct buf b = BUF_INIT;
	bool changed = false;

	end = s + n;
	cur = p = s;
	while (next(s, end, &cur, &from, &to)) {
		buf_add(&b, p, (size_t)(from - p));
		buf_adds(&b, with);
		p = to;
		changed = true;
	}
	if (!changed) {
		buf_release(&b);
		return v;
	}
	buf_add(&b, p, (size_t)(end - p));
	jv_free(v);
	v = jv_string_sized(b.buf, (int)b.len);
	buf_release(&b);
	return v;
}

/* span_finder: the password of the next URL with one */
static bool next_url_password(const char *s, const char *end, const char **cur, const char **from,
			      const char **to)
{
	(void)s;
	for (const char *q = *cur; q + 3 <= end && (q = memmem(q, (size_t)(end - q), "://", 3)); q += 3) {
		if (url_password(q, (size_t)(end - q), from, to)) {
			*cur = q + 3;
			return true;
		}
	}
	return false;
}

static jv hide_url_passwords(jv v, void *unused)
{
	(void)unused;
	return replace_spans(v, next_url_password, "***");
}

jv secret_url_passwords_hidden_jv(jv v)
{
	return json_map_strings(v, hide_url_passwords, NULL);
}

/* json_map_strings() callback: the string with what the secret forms find
 * hidden (secret_forms.h) */
static jv hide_tokens(jv v, void *unused)
{
	size_t n = (size_t)jv_string_length_bytes(jv_copy(v)), len;
	char *r = secret_forms_hidden(jv_string_value(v), n, &len);

	(void)unused;
	if (!r)
		return v;
	jv_free(v);
	v = jv_string_sized(r, (int)len);
	free(r);
	return v;
}

jv secret_tokens_hidden_jv(jv v)
{
	return json_map_strings(v, hide_tokens, NULL);
}

jv secret_hidden_jv(jv v)
{
	return secret_tokens_hidden_jv(secret_url_passwords_hidden_jv(llm_redact_jv(v)));
}

static void add_key_file(const char *var)
{
	const char *path = getenv(var);
	char *key = NULL;

	if (!path || !*path)
		return;
	if (read_key_file(&key, path) == 0)
		llm_secret_add(key);
	free(key);
}

void llm_secret_load_env(void)
{
	for (const char *const *n = llm_secret_env_names; *n; n++)
		llm_secret_add(getenv(*n));
	add_key_file("FORGE_ANTHROPIC_KEY_FILE");
	add_key_file("FORGE_OPENAI_KEY_FILE");
}

void llm_secret_protect(void)
{
	static bool done;
	extern char **environ;

	if (done)
		return;
	done = true;
	/* A second wall behind the scrubbed environment of commands: a
	 * process without CAP_SYS_PTRACE cannot read our /proc/PID/environ
	 * or /proc/PID/mem. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	llm_secret_load_env();
	for (size_t i = 0; environ && environ[i]; i++) {
		if (!is_secret_var(environ[i]))
			continue;
		char *entry = environ[i], *eq = strchr(entry, '=');
		environ[i] = xstrdup(entry);
		memset(eq + 1, 0, strlen(eq + 1));
	}
}

static bool is_secret_var(const char *entry)
{
	for (const char *const *n = llm_secret_env_names; *n; n++) {
		size_t len = strlen(*n);
		if (!strncmp(entry, *n, len) && entry[len] == '=')
			return true;
	}
	return false;
}

int llm_scrub_env(char **envp)
{
	int removed = 0;
	size_t w = 0;

	if (!envp)
		return 0;
	for (size_t r = 0; envp[r]; r++) {
		if (is_secret_var(envp[r]))
			removed++;
		else
			envp[w++] = envp[r];
	}
	envp[w] = NULL;
	return removed;
}

char **llm_environ_scrubbed(void)
{
	extern char **environ;
	size_t n = 0;

	while (environ && environ[n])
		n++;
	char **env = xcalloc(n + 1, sizeof *env);
	if (n)
		memcpy(env, environ, n * sizeof *env);
	llm_scrub_env(env);
	return env;
}

static int read_key_file(char **out, const char *path)
{
	struct buf b;

	buf_init(&b, 64 * 1024);
	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return forge_error("cannot read the key file '%s'", path);
	}
	char *s = b.buf, *e;
	while (*s && isspace((unsigned char)*s))
		s++;
	for (e = s; *e && *e != '\n' && *e != '\r'; e++)
		;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	*out = e > s ? xstrndup(s, (size_t)(e - s)) : NULL;
	buf_release(&b);
	if (!*out)
		return forge_error("the key file '%s' is empty", path);
	return 0;
}

int llm_key_load(char **out, const char *provider)
{
	const char *env = NULL, *file = NULL, *v;

	*out = NULL;
	if (!strcmp(provider, "anthropic")) {
		env = "ANTHROPIC_API_KEY";
		file = "FORGE_ANTHROPIC_KEY_FILE";
	} else if (!strcmp(provider, "openai")) {
		env = "OPENAI_API_KEY";
		file = "FORGE_OPENAI_KEY_FILE";
	} else {
		return 0;
	}
	if ((v = getenv(env)) && *v)
		*out = xstrdup(v);
	else if ((v = getenv(file)) && *v && read_key_file(out, v) < 0)
		return -1;
	llm_secret_add(*out);
	return 0;
}
