/*
 * review_secrets.c - layer 2, built in: secrets on added lines (the forms
 * of core/secret_forms.h, which memory hides too: provider rules in the
 * spirit of gitleaks' default config, a generic assignment rule gated by
 * Shannon entropy; here with a placeholder allowlist) and a small set
 * of insecure-pattern rules per language.  See review.h.
 *
 * A line that says "forge:allow", "gitleaks:allow" or "pragma: allowlist
 * secret" is not reported.  Messages never contain the secret: only its
 * first four characters.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "review/review.h"
#include "core/buf.h"
#include "git/diff.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret_forms.h"
#include "data/project.h"
#include "os/sandbox.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The review's weight of each of core's secret forms (core/secret_forms.h),
 * in their order; review_secrets() checks that the ids agree. */
static const struct rule {
	const char *id;
	const char *severity;
	double confidence;
} secret_rules[SECRET_NFORMS] = {
	{ "secret/private-key", "critical", 0.99 },
	{ "secret/aws-access-key-id", "critical", 0.95 },
	{ "secret/aws-secret-access-key", "critical", 0.9 },
	{ "secret/github-token", "critical", 0.95 },
	{ "secret/github-fine-grained-pat", "critical", 0.95 },
	{ "secret/slack-token", "critical", 0.9 },
	{ "secret/slack-webhook", "critical", 0.9 },
	{ "secret/stripe-live-key", "critical", 0.95 },
	{ "secret/google-api-key", "critical", 0.9 },
	{ "secret/anthropic-api-key", "critical", 0.95 },
	{ "secret/openai-api-key", "critical", 0.85 },
	{ "secret/generic-assignment", "error", 0.7 },
	{ "secret/generic-assignment", "error", 0.6 },
};

/* Insecure patterns: lang NULL = any file. */
struct pattern_rule {
	const char *id;
	const char *lang;               /* project_language() name, "c" covers cpp too */
	const char *pattern;
	const char *severity;
	const char *message;
};

static const struct pattern_rule insecure_rules[] = {
	{ "insecure/c-gets", "c", "\\bgets\\s*\\(", "error",
	  "gets cannot bound its input (CWE-242); use fgets" },
	{ "insecure/c-strcpy", "c", "\\b(?:strcpy|strcat|wcscpy|wcscat)\\s*\\(", "warning",
	  "unbounded string copy (CWE-120); use snprintf() or a length-checked copy" },
	{ "insecure/c-sprintf", "c", "\\bv?sprintf\\s*\\(", "warning",
	  "sprintf does not bound its output (CWE-120); use snprintf" },
	{ "insecure/c-system", "c", "\\b(?:system|popen)\\s*\\(\\s*(?!\")", "error",
	  "shell command built from a non-constant string (CWE-78); use execve() with an argument vector" },
	{ "insecure/c-format", "c", "\\b(?:printf|syslog)\\s*\\(\\s*[A-Za-z_][A-Za-z0-9_>.-]*\\s*\\)", "error",
	  "format string is not a constant (CWE-134)" },
	{ "insecure/c-format", "c", "\\bf?printf\\s*\\(\\s*(?:stderr|stdout|[a-z_]+)\\s*,\\s*[A-Za-z_][A-Za-z0-9_>.-]*\\s*\\)",
	  "error", "format string is not a constant (CWE-134)" },
	{ "insecure/c-scanf-s", "c", "\\bscanf\\s*\\(\\s*\"[^\"]*%s", "warning",
	  "scanf(\"%s\") cannot bound its input (CWE-120); give a field width" },
	{ "insecure/c-tmpfile", "c", "\\b(?:mktemp|tmpnam|tempnam)\\s*\\(", "warning",
	  "predictable temporary file name (CWE-377); use mkstemp()" },
	{ "insecure/py-eval", "python", "(?<![\\w.])(?:eval|exec)\\s*\\(", "warning",
	  "eval/exec of dynamic code (CWE-95)" },
	{ "insecure/py-shell", "python", "\\bsubprocess\\.\\w+\\(.*shell\\s*=\\s*True", "error",
	  "subprocess with shell=True (CWE-78)" },
	{ "insecure/py-os-system", "python", "\\bos\\.(?:system|popen)\\s*\\(", "warning",
	  "os.system/os.popen runs a shell (CWE-78)" },
	{ "insecure/py-pickle", "python", "\\b(?:pickle|cPickle|marshal)\\.loads?\\s*\\(", "warning",
	  "unpickling untrusted data runs code (CWE-502)" },
	{ "insecure/py-yaml-load", "python", "\\byaml\\.load\\s*\\((?!.*Loader)", "warning",
	  "yaml.load without a safe Loader (CWE-502); use yaml.safe_load" },
	{ "insecure/tls-verify-off", NULL, "\\bverify\\s*=\\s*False\\b|CURLOPT_SSL_VERIFYPEER\\s*,\\s*0|"
	  "rejectUnauthorized\\s*:\\s*false|InsecureSkipVerify\\s*:\\s*true", "error",
	  "TLS certificate verification turned off (CWE-295)" },
	{ "insecure/sh-curl-pipe", "shell", "\\b(?:curl|wget)\\b[^|#]*\\|\\s*(?:sudo\\s+)?(?:ba|z|da)?sh\\b", "error",
	  "downloaded script piped into a shell (CWE-494)" },
	{ "insecure/sh-chmod-777", NULL, "\\bchmod\\s+(?:-R\\s+)?0?777\\b", "warning",
	  "world-writable permissions (CWE-732)" },
	{ "insecure/js-eval", "javascript", "(?<![\\w.])eval\\s*\\(|new\\s+Function\\s*\\(", "warning",
	  "eval of dynamic code (CWE-95)" },
	{ "insecure/js-inner-html", "javascript", "\\.innerHTML\\s*=(?!=)", "warning",
	  "assigning innerHTML can inject markup (CWE-79)" },
};

double review_entropy(const char *s, size_t n)
{
	return secret_entropy(s, n);
}

bool review_placeholder(const char *s, size_t n)
{
	static const char *const words[] = {
		"example", "changeme", "change_me", "change-me", "xxx", "placeholder", "your_", "your-",
		"yourkey", "redacted", "dummy", "fake", "test", "sample", "<", ">", "${", "{{", "%s",
		"****", "...", "\xe2\x80\xa6", "foobar", "lorem", "insert", "replace",
	};
	char *low = xstrndup(s, n);
	bool hit = false, same = true;

	for (size_t i = 0; i < n; i++) {
		low[i] = (char)tolower((unsigned char)low[i]);
		if (low[i] != low[0])
			same = false;
	}
	if (n == 0 || same || low[0] == '$' || low[0] == '%')
		hit = true;
	for (size_t i = 0; !hit && i < sizeof words / sizeof words[0]; i++)
		hit = strstr(low, words[i]) != NULL;
	if (!hit && (strcmp(low, "null") == 0 || strcmp(low, "none") == 0 || strcmp(low, "true") == 0 ||
		     strcmp(low, "false") == 0))
		hit = true;
	free(low);
	return hit;
}

static pcre2_code *compile(const char *pattern)
{
	int err;
	PCRE2_SIZE off;

	/* PCRE2_MATCH_INVALID_UTF: a line that is not UTF-8 (a Latin-1
	 * comment) is still searched, its invalid bytes matching nothing;
	 * without it pcre2_match() refused the whole line, which was read as
	 * "no secret here" */
	return pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
			     &err, &off, NULL);
}

static bool suppressed(const char *text)
{
	return strstr(text, "forge:allow") || strstr(text, "gitleaks:allow") ||
	       strstr(text, "pragma: allowlist secret");
}

static bool comment_line(const char *text, const char *lang)
{
	while (*text == ' ' || *text == '\t')
		text++;
	if (strcmp(lang, "python") == 0 || strcmp(lang, "shell") == 0)
		return *text == '#';
	return (text[0] == '/' && (text[1] == '/' || text[1] == '*')) || (text[0] == '*' && text[1] != '=');
}

/* The first secret on the line: its form and secret span, or NULL. */
static const struct secret_form *find_secret(pcre2_code **codes, pcre2_match_data *md, const char *text,
				      size_t *so, size_t *eo)
{
	size_t len = strlen(text);

	for (size_t r = 0; r < SECRET_NFORMS; r++) {
		PCRE2_SIZE start = 0;

		if (!codes[r])
			continue;
		while (start <= len && pcre2_match(codes[r], (PCRE2_SPTR)text, len, start, 0, md, NULL) > 1) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
			size_t s = ov[2], e = ov[3];

			start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
			if (review_placeholder(text + s, e - s))
				continue;
			if (secret_forms[r].min_entropy > 0 &&
			    secret_entropy(text + s, e - s) < secret_forms[r].min_entropy)
				continue;
			*so = s;
			*eo = e;
			return &secret_forms[r];
		}
	}
	return NULL;
}

/*
 * Where the symbolic link at `path` (relative to the repository's root)
 * leads when its target is `target`: 0 inside the repository's files, 1
 * outside it (an absolute target, or one whose ".." climbs above the
 * root), 2 into its .git.  Links the target passes through are not
 * followed (they are not in the diff).
 */
static int link_escapes(const char *path, const char *target)
{
	size_t depth = 0;
	bool in_git = false;    /* the first component of where it leads is .git */

	if (target[0] == '/')
		return 1;
	/* the link's own directory first, then the target, one component at a time */
	for (int pass = 0; pass < 2; pass++) {
		const char *p = pass == 0 ? path : target;
		const char *last = pass == 0 ? strrchr(path, '/') : NULL;
		const char *stop = pass == 0 ? (last ? last : path) : target + strlen(target);

		while (p < stop) {
			size_t n = strcspn(p, "/");

			if (p + n > stop)
				n = (size_t)(stop - p);
			if (n == 2 && p[0] == '.' && p[1] == '.') {
				if (depth == 0)
					return 1;
				if (--depth == 0)
					in_git = false;
			} else if (n > 0 && !(n == 1 && p[0] == '.')) {
				if (depth++ == 0)
					in_git = n == 4 && strncasecmp(p, ".git", 4) == 0;
			}
			p += n;
			while (p < stop && *p == '/')
				p++;
		}
	}
	return in_git ? 2 : 0;
}

/* A committed symbolic link that leads outside the repository (DESIGN §5:
 * no symlink escapes): merged, it points the person's tools -- a build,
 * an editor, Forge's own -- at files elsewhere.  Its target is its one
 * added line. */
static void symlink_finding(jv *out, const struct diff_file *f, struct buf *msg)
{
	const char *target = f->symlink && !f->deleted ? diff_added_line(f, 1) : NULL;
	int where = target && *target ? link_escapes(f->path, target) : 0;

	if (!where)
		return;
	buf_reset(msg);
	if (where == 2)
		buf_addf(msg, "the symbolic link '%s' leads into the repository's .git ('%s')", f->path, target);
	else if (target[0] == '/')
		buf_addf(msg, "the symbolic link '%s' leads outside the repository, to the absolute path '%s'",
			 f->path, target);
	else
		buf_addf(msg, "the symbolic link '%s' leads outside the repository ('%s' climbs above its root)",
			 f->path, target);
	buf_adds(msg, "; merged, whatever follows it (a build, an editor, a tool) reads or writes there: link to "
		      "a file inside the repository, or commit a file instead");
	*out = jv_array_append(*out, review_finding("security", "error", "security", "forge/symlink-outside",
						    f->path, 1, msg->buf));
}

int review_secrets(jv *out, const struct diff *d)
{
	const size_t nsec = SECRET_NFORMS;
	const size_t npat = sizeof insecure_rules / sizeof insecure_rules[0];
	pcre2_code *sec[SECRET_NFORMS] = { 0 };
	pcre2_code *pat[sizeof insecure_rules / sizeof insecure_rules[0]] = { 0 };
	pcre2_match_data *md = pcre2_match_data_create(8, NULL);
	struct buf msg = BUF_INIT;
	int rc = -1;

	*out = jv_array();
	for (size_t r = 0; r < nsec; r++) {
		if (strcmp(secret_rules[r].id, secret_forms[r].id) != 0) {
			forge_error("secret rule %zu is '%s' here but '%s' in core's secret forms", r,
				    secret_rules[r].id, secret_forms[r].id);
			goto out;
		}
		if (!(sec[r] = compile(secret_forms[r].pattern))) {
			forge_error("secret rule '%s' does not compile", secret_forms[r].id);
			goto out;
		}
	}
	for (size_t r = 0; r < npat; r++)
		if (!(pat[r] = compile(insecure_rules[r].pattern))) {
			forge_error("insecure-pattern rule '%s' does not compile", insecure_rules[r].id);
			goto out;
		}
	/* A file a cut left out is named: the change still touches .forge. */
	for (size_t i = 0; i < d->nomitted; i++) {
		if (!sandbox_path_is_forge(d->omitted[i].path))
			continue;
		buf_reset(&msg);
		buf_addf(&msg, "the change touches Forge's own configuration (%s), in a part of the diff "
			 "that was cut: on the branch it would govern the next runs (sandbox, test command, "
			 "gates); a human must check it", d->omitted[i].path);
		*out = jv_array_append(*out, review_finding("security", "critical", "security",
							    "forge/config-changed", d->omitted[i].path, 0, msg.buf));
	}
	for (size_t i = 0; i < d->nfiles; i++) {
		const struct diff_file *f = &d->files[i];
		const char *lang = project_language(f->path);

		if (sandbox_path_is_forge(f->path) || (f->old_path && sandbox_path_is_forge(f->old_path))) {
			/* The file tools refuse .forge; a command may still have written it. */
			buf_reset(&msg);
			buf_addf(&msg, "the change %s Forge's own configuration (%s): on the branch it would "
				 "govern the next runs (sandbox, test command, gates); a human must check it",
				 f->deleted ? "deletes" : f->created ? "adds to" : "changes", f->path);
			*out = jv_array_append(*out, review_finding("security", "critical", "security",
								    "forge/config-changed", f->path, 0, msg.buf));
		}
		symlink_finding(out, f, &msg);
		if (f->symlink)
			continue;       /* (its line is a path, not code or a secret) */
		if (lang && strcmp(lang, "cpp") == 0)
			lang = "c";
		for (size_t j = 0; j < f->nhunks; j++) {
			for (size_t k = 0; k < f->hunks[j].nlines; k++) {
				const struct diff_line *l = &f->hunks[j].lines[k];
				size_t so, eo;

				if (l->kind != '+' || suppressed(l->text))
					continue;
				const struct secret_form *sf = find_secret(sec, md, l->text, &so, &eo);
				if (sf) {
					const struct rule *r = &secret_rules[sf - secret_forms];


					buf_reset(&msg);
					buf_addf(&msg, "possible %s committed (%.4s…, %zu characters); remove it, "
						 "rotate it, and load it from the environment or a secret store",
						 sf->what, l->text + so, eo - so);
					jv fi = review_finding("security", r->severity, "security", r->id, f->path,
							       l->new_line, msg.buf);
					*out = jv_array_append(*out, json_set(fi, "confidence", jv_number(r->confidence)));
				}
				for (size_t p = 0; p < npat; p++) {
					const struct pattern_rule *pr = &insecure_rules[p];

					if (pr->lang && (!lang || strcmp(pr->lang, lang) != 0))
						continue;
					if (lang && comment_line(l->text, lang))
						continue;
					if (pcre2_match(pat[p], (PCRE2_SPTR)l->text, strlen(l->text), 0, 0, md, NULL) < 0)
						continue;
					jv fi = review_finding("security", pr->severity, "security", pr->id, f->path,
							       l->new_line, pr->message);
					*out = jv_array_append(*out, json_set(fi, "confidence", jv_number(0.8)));
				}
			}
		}
		/* a secret one patch of a series added and a later one removed
		 * is not in the result, but in the commits that carry it */
		for (size_t k = 0; k < f->ndropped; k++) {
			const char *text = f->dropped[k].text;
			size_t so, eo;
			const struct secret_form *sf = suppressed(text) ? NULL : find_secret(sec, md, text, &so, &eo);

			if (!sf)
				continue;
			buf_reset(&msg);
			buf_addf(&msg, "possible %s committed (%.4s…, %zu characters) by one part of the diff and "
				 "removed by a later one: the commits in between still hold it; rotate it, and "
				 "rewrite those commits before they are pushed", sf->what, text + so, eo - so);
			jv fi = review_finding("security", secret_rules[sf - secret_forms].severity, "security",
					       secret_rules[sf - secret_forms].id, f->path, 0, msg.buf);
			*out = jv_array_append(*out, json_set(fi, "confidence",
							      jv_number(secret_rules[sf - secret_forms].confidence)));
		}
	}
	rc = 0;
out:
	for (size_t r = 0; r < nsec; r++)
		pcre2_code_free(sec[r]);
	for (size_t r = 0; r < npat; r++)
		pcre2_code_free(pat[r]);
	pcre2_match_data_free(md);
	buf_release(&msg);
	if (rc < 0) {
		jv_free(*out);
		*out = jv_null();
	}
	return rc;
}
