/*
 * llm_secret.c - API keys: loading them, keeping them out of text and out
 * of child environments.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "forge.h"
#include "llm.h"

#define REDACTED "[REDACTED]"
#define MIN_SECRET 10   /* >= strlen(REDACTED): redaction never grows text */

const char *const llm_secret_env_names[] = {
	"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN",
	"OPENROUTER_API_KEY", "FORGE_EMBED_API_KEY", NULL,
};

static char **secrets;
static size_t nsecrets;

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
