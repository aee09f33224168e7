/*
 * secret_forms.c - secrets known by their look (see secret_forms.h).  The
 * provider patterns are in the spirit of gitleaks' default config.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/buf.h"
#include "core/forge.h"
#include "core/secret_forms.h"

#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <string.h>

#define REDACTED "[REDACTED]"

const struct secret_form secret_forms[SECRET_NFORMS] = {
	{ "secret/private-key", "private key block",
	  "(-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)", 0, false },
	{ "secret/aws-access-key-id", "AWS access key id",
	  "\\b((?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16})\\b", 3.0, false },
	{ "secret/aws-secret-access-key", "AWS secret access key",
	  "(?i)aws.{0,20}?(?:secret|private).{0,20}?[\"'\\s:=]{1,5}([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
	  3.5, true },
	/* 20+ characters, not GitHub's 36: what memory hid before the list was one */
	{ "secret/github-token", "GitHub token",
	  "\\b(gh[pousr]_[A-Za-z0-9]{20,255})\\b", 3.0, false },
	{ "secret/github-fine-grained-pat", "GitHub fine-grained personal access token",
	  "\\b(github_pat_[A-Za-z0-9_]{20,255})\\b", 3.0, false },
	{ "secret/slack-token", "Slack token",
	  "\\b(xox[abposr]-[A-Za-z0-9-]{10,250})", 3.0, false },
	{ "secret/slack-webhook", "Slack webhook URL",
	  "(hooks\\.slack\\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,120})", 0, false },
	{ "secret/stripe-live-key", "Stripe live key",
	  "\\b((?:sk|rk)_live_[A-Za-z0-9]{20,250})\\b", 3.0, false },
	{ "secret/google-api-key", "Google API key",
	  "\\b(AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])", 3.0, false },
	{ "secret/anthropic-api-key", "Anthropic API key",
	  "\\b(sk-ant-[A-Za-z0-9_-]{20,250})", 3.0, false },
	{ "secret/openai-api-key", "OpenAI API key",
	  "\\b(sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,250})", 3.5, false },
	{ "secret/generic-assignment", "hard-coded credential",
	  "(?i)(?:^|[^A-Za-z0-9])[A-Za-z0-9_.-]{0,40}?(?:api[_.-]?key|apikey|secret|passw(?:or)?d|passwd|pwd|"
	  "token|auth[_.-]?key|access[_.-]?key|private[_.-]?key|credentials?)[A-Za-z0-9_.-]{0,20}"
	  "[\"']?\\s*(?::=|=>|=|:)\\s*[\"'`]([^\\s\"'`;,()]{8,200})[\"'`]",
	  3.5, true },
	{ "secret/generic-assignment", "hard-coded credential",
	  "(?i)(?:^|[^A-Za-z0-9])(?:export\\s+)?[A-Za-z0-9_]{0,40}?(?:API_?KEY|SECRET|PASSWORD|PASSWD|TOKEN|"
	  "ACCESS_?KEY)[A-Za-z0-9_]{0,20}=([^\\s\"'`;$]{12,200})(?:\\s|$)",
	  3.5, true },
};

double secret_entropy(const char *s, size_t n)
{
	size_t counts[256] = { 0 };
	double h = 0;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		counts[(unsigned char)s[i]]++;
	for (int c = 0; c < 256; c++) {
		if (!counts[c])
			continue;
		double p = (double)counts[c] / (double)n;
		h -= p * log2(p);
	}
	return h;
}

/* Compiled once per process: redaction runs over every string of a memory,
 * and a pattern's compiled code is safe to share between threads. */
static pcre2_code *compiled[SECRET_NFORMS];
static bool compiled_ok;
static pthread_once_t compile_once = PTHREAD_ONCE_INIT;

static void compile_forms(void)
{
	int err;
	PCRE2_SIZE off;

	compiled_ok = true;
	for (size_t i = 0; i < SECRET_NFORMS; i++) {
		/* PCRE2_MATCH_INVALID_UTF: text that is not UTF-8 is still
		 * searched, its invalid bytes matching nothing */
		compiled[i] = pcre2_compile((PCRE2_SPTR)secret_forms[i].pattern, PCRE2_ZERO_TERMINATED,
					    PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &err, &off, NULL);
		if (!compiled[i])
			compiled_ok = false;
	}
}

/* b (the text so far, b->len bytes) with form f's secrets as REDACTED;
 * true when one was. */
static bool hide_form(struct buf *b, size_t f, pcre2_match_data *md)
{
	struct buf out = BUF_INIT;
	size_t start = 0, copied = 0;
	bool changed = false;

	while (start <= b->len &&
	       pcre2_match(compiled[f], (PCRE2_SPTR)b->buf, b->len, start, 0, md, NULL) > 1) {
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		size_t so = ov[2], eo = ov[3];

		start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
		if (so == PCRE2_UNSET || so < copied ||
		    (secret_forms[f].contextual &&
		     secret_entropy(b->buf + so, eo - so) < secret_forms[f].min_entropy))
			continue;
		buf_add(&out, b->buf + copied, so - copied);
		buf_adds(&out, REDACTED);
		copied = eo;
		changed = true;
	}
	if (changed) {
		buf_add(&out, b->buf + copied, b->len - copied);
		buf_release(b);
		*b = out;
	} else {
		buf_release(&out);
	}
	return changed;
}

char *secret_forms_hidden(const char *s, size_t n, size_t *out_len)
{
	struct buf b = BUF_INIT;
	pcre2_match_data *md;
	bool changed = false;

	pthread_once(&compile_once, compile_forms);
	if (!compiled_ok || !s)
		return NULL;
	md = pcre2_match_data_create(8, NULL);
	buf_add(&b, s, n);
	for (size_t f = 0; f < SECRET_NFORMS; f++)
		changed |= hide_form(&b, f, md);
	pcre2_match_data_free(md);
	if (!changed) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, out_len);
}
