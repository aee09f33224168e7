/*
 * lang.c - language profiles, the test-name convention, running a compiled
 * project's tests and static tools for real (lang.h).
 */
#include "compile/lang.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/sha256.h"
#include "data/config.h"
#include "os/sandbox.h"
#include "testrun/junit.h"
#include "testrun/tap.h"
#include "testrun/testrun.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUTPUT_TAIL 4000          /* bytes of a command's output kept in a document */
#define OUTPUT_CAP (1u << 20)     /* bytes of a command's output read */
#define MESSAGE_MAX 400           /* bytes of a failure message kept per test */
#define FINDINGS_MAX 200          /* findings kept per tool */
#define DIGEST_MAX_BYTES (64u << 20)  /* a larger file has no digest (null) */

/* ---- profiles ------------------------------------------------------------- */

void compile_lang_free(struct compile_lang *l)
{
	if (!l)
		return;
	free(l->name);
	free(l->framework);
	free(l->test_command);
	free(l->layout);
	free(l->test_name);
	for (char **f = l->build_files; f && *f; f++)
		free(*f);
	free(l->build_files);
	for (size_t i = 0; i < l->ntools; i++) {
		free(l->tools[i].name);
		free(l->tools[i].command);
		free(l->tools[i].severity);
	}
	free(l->tools);
	free(l);
}

/* profile.key as a new string; -1 with a message when it is not a non-empty string. */
static int need_str(char **out, jv profile, const char *lang, const char *key)
{
	const char *s = json_get_str(profile, key);

	if (!s || !*s)
		return forge_error("compile.languages.%s.%s: expected a non-empty string", lang, key);
	*out = xstrdup(s);
	return 0;
}

static int load_tools(struct compile_lang *l, jv tools)
{
	if (jv_get_kind(tools) == JV_KIND_NULL)
		return 0;
	if (jv_get_kind(tools) != JV_KIND_ARRAY)
		return forge_error("compile.languages.%s.static_tools: expected an array", l->name);
	int n = jv_array_length(jv_copy(tools));
	l->tools = xcalloc((size_t)n + 1, sizeof *l->tools);
	for (int i = 0; i < n; i++) {
		jv t = jv_array_get(jv_copy(tools), i);
		const char *name = json_get_str(t, "name"), *cmd = json_get_str(t, "command");
		const char *sev = json_get_str(t, "severity");
		if (!name || !cmd) {
			jv_free(t);
			return forge_error("compile.languages.%s.static_tools[%d]: needs a name and a command",
					   l->name, i);
		}
		struct compile_tool *ct = &l->tools[l->ntools++];
		ct->name = xstrdup(name);
		ct->command = xstrdup(cmd);
		ct->severity = xstrdup(sev ? sev : "warning");
		jv_free(t);
	}
	return 0;
}

/* One build_files entry as text: its alternatives joined by " or ". */
static void build_file_text(struct buf *b, const char *entry)
{
	for (const char *p = entry; *p; p++) {
		if (*p == '|')
			buf_adds(b, " or ");
		else
			buf_addch(b, *p);
	}
}

void compile_lang_build_files_text(struct buf *b, const struct compile_lang *l)
{
	for (char **f = l->build_files; f && *f; f++) {
		if (f != l->build_files)
			buf_adds(b, ", ");
		build_file_text(b, *f);
	}
}

/* Whether one of entry's alternatives is a file or directory under dir. */
static bool build_file_present(const char *dir, const char *entry)
{
	struct buf path = BUF_INIT;
	bool found = false;

	for (const char *p = entry; !found && *p;) {
		size_t n = strcspn(p, "|");

		buf_reset(&path);
		buf_addf(&path, "%s/%.*s", dir, (int)n, p);
		found = n > 0 && access(path.buf, F_OK) == 0;
		p += n + (p[n] == '|');
	}
	buf_release(&path);
	return found;
}

jv compile_lang_missing_build_files(const struct compile_lang *l, const char *dir)
{
	jv missing = jv_array();

	for (char **f = l->build_files; f && *f; f++) {
		if (build_file_present(dir, *f))
			continue;
		struct buf b = BUF_INIT;
		build_file_text(&b, *f);
		missing = jv_array_append(missing, jv_string(b.buf));
		buf_release(&b);
	}
	return missing;
}

int compile_lang_from_json(struct compile_lang **out, const char *name, jv profile)
{
	struct compile_lang *l = xcalloc(1, sizeof *l);
	const char *output = json_get_str(profile, "output");
	jv files = json_get(profile, "build_files"), tools = json_get(profile, "static_tools");
	int rc = -1;

	l->name = xstrdup(name);
	if (jv_get_kind(profile) != JV_KIND_OBJECT) {
		forge_error("compile.languages.%s: expected an object", name);
		goto out;
	}
	if (need_str(&l->framework, profile, name, "framework") < 0 ||
	    need_str(&l->test_command, profile, name, "test_command") < 0 ||
	    need_str(&l->layout, profile, name, "layout") < 0 ||
	    need_str(&l->test_name, profile, name, "test_name") < 0)
		goto out;
	if (!output || (strcmp(output, "tap") != 0 && strcmp(output, "junit") != 0)) {
		forge_error("compile.languages.%s.output: expected \"tap\" or \"junit\"", name);
		goto out;
	}
	l->junit = strcmp(output, "junit") == 0;
	l->timeout_ms = (long)(json_get_num(profile, "timeout_s", 0) * 1000);
	if (l->junit && !strstr(l->test_command, "{junit}")) {
		forge_error("compile.languages.%s.test_command: output junit needs {junit} in the command", name);
		goto out;
	}
	int n = jv_get_kind(files) == JV_KIND_ARRAY ? jv_array_length(jv_copy(files)) : 0;
	l->build_files = xcalloc((size_t)n + 1, sizeof *l->build_files);
	for (int i = 0, k = 0; i < n; i++) {
		jv f = jv_array_get(jv_copy(files), i);
		if (jv_get_kind(f) == JV_KIND_STRING)
			l->build_files[k++] = xstrdup(jv_string_value(f));
		jv_free(f);
	}
	rc = load_tools(l, tools);
out:
	jv_free(files);
	jv_free(tools);
	if (rc < 0) {
		compile_lang_free(l);
		return -1;
	}
	*out = l;
	return 0;
}

int compile_lang_load(struct compile_lang **out, const struct config *cfg, const char *name)
{
	jv langs = config_get(cfg, "compile.languages");
	jv profile = json_get(langs, name ? name : "");
	int rc;

	if (jv_get_kind(profile) == JV_KIND_NULL) {
		struct buf known = BUF_INIT;
		if (jv_get_kind(langs) == JV_KIND_OBJECT)
			jv_object_foreach(langs, k, v) {
				buf_addf(&known, "%s%s", known.len ? ", " : "", jv_string_value(k));
				jv_free(k);
				jv_free(v);
			}
		rc = forge_error("no profile for the language '%s' (compile.languages has: %s)",
				 name ? name : "", known.len ? known.buf : "none");
		buf_release(&known);
	} else {
		rc = compile_lang_from_json(out, name, profile);
	}
	jv_free(profile);
	jv_free(langs);
	return rc;
}

/* ---- the test-name convention ------------------------------------------ */

int compile_rule_of(char *out, size_t size, const char *name)
{
	for (const char *p = name; p && *p; p++) {
		if (*p != 'r' && *p != 'R')
			continue;
		if (p > name && isalnum((unsigned char)p[-1]))
			continue;
		size_t n = 0;
		while (isdigit((unsigned char)p[1 + n]))
			n++;
		if (n == 0 || isalnum((unsigned char)p[1 + n]) || n + 2 > size)
			continue;
		out[0] = 'R';
		memcpy(out + 1, p + 1, n);
		out[n + 1] = '\0';
		return 0;
	}
	return -1;
}

/* ---- reading runs ------------------------------------------------------- */

static const char *status_name(enum tc_status s)
{
	return s == TC_PASS ? "passed" : s == TC_FAIL ? "failed" : "skipped";
}

/* The first line of s, at most MESSAGE_MAX bytes, as a string. */
static jv short_message(const char *s)
{
	size_t n = strcspn(s, "\n");

	if (n > MESSAGE_MAX) {
		n = MESSAGE_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	return jv_string_sized(s, (int)n);
}

jv compile_results(const struct testrun *r)
{
	jv out = jv_array();

	for (size_t i = 0; i < r->ncases; i++) {
		const struct testcase *c = &r->cases[i];
		char rule[32];
		jv one = json_set(jv_object(), "test", jv_string(c->name));

		one = json_set(one, "rule", !c->synthetic && compile_rule_of(rule, sizeof rule, c->name) == 0
				    ? jv_string(rule) : jv_null());
		one = json_set(one, "status", jv_string(status_name(c->status)));
		if (c->file)
			one = json_set(one, "file", jv_string(c->file));
		else if (c->suite)
			one = json_set(one, "suite", jv_string(c->suite));
		if (c->status == TC_FAIL && (c->message || c->output))
			one = json_set(one, "message", short_message(c->message ? c->message : c->output));
		out = jv_array_append(out, one);
	}
	return out;
}

int compile_parse_run(struct testrun *out, const struct compile_lang *l, const char *output,
		      size_t output_len, const char *report, size_t report_len)
{
	testrun_init(out);
	if (l->junit) {
		if (!report || report_len == 0)
			return 0;
		int rc = junit_parse(out, report, report_len);
		if (rc != 1) {
			testrun_release(out);
			testrun_init(out);
		}
		return rc == 1;
	}
	char *text = xmalloc(output_len + 1);
	size_t len = output_len;
	memcpy(text, output, output_len);
	text[len] = '\0';
	testrun_strip_ansi(text, &len);
	int rc = tap_parse(out, text, len);
	free(text);
	if (rc != 1) {
		testrun_release(out);
		testrun_init(out);
	}
	return rc == 1;
}

char *compile_expand(const char *command, const char *junit, const char *tmp)
{
	struct buf b = BUF_INIT;

	for (const char *p = command; *p;) {
		if (strncmp(p, "{junit}", 7) == 0) {
			buf_adds(&b, junit ? junit : "");
			p += 7;
		} else if (strncmp(p, "{tmp}", 5) == 0) {
			buf_adds(&b, tmp ? tmp : "");
			p += 5;
		} else {
			buf_addch(&b, *p++);
		}
	}
	return buf_detach(&b, NULL);
}

/* The last max bytes of text (from a line start when one is near). */
static jv tail(const char *text, size_t len, size_t max)
{
	if (len <= max)
		return jv_string_sized(text, (int)len);
	const char *start = text + (len - max);
	const char *nl = memchr(start, '\n', max / 2);
	if (nl)
		start = nl + 1;
	while (start < text + len && ((unsigned char)*start & 0xC0) == 0x80)
		start++;
	return jv_string_sized(start, (int)(len - (size_t)(start - text)));
}

/* Run command in dir; -1 when it could not start. */
static int run_in(struct proc_result *r, const char *command, const char *dir,
		  const struct sandbox_policy *p, const char *tmp, long timeout_ms)
{
	struct sandbox_cmd cmd = { .command = command, .root = dir, .tmp = tmp, .timeout_ms = timeout_ms };

	return sandbox_run(r, NULL, p, &cmd);
}

int compile_run_tests(jv *out, const struct compile_lang *l, const char *dir,
		      const struct sandbox_policy *p, const char *tmp)
{
	struct buf junit = BUF_INIT, report = BUF_INIT;
	struct proc_result r;
	struct testrun tr;
	int rc = -1;

	buf_addf(&junit, "%s/junit.xml", tmp);
	unlink(junit.buf);
	char *command = compile_expand(l->test_command, junit.buf, tmp);
	if (run_in(&r, command, dir, p, tmp, l->timeout_ms) < 0)
		goto out;
	if (l->junit && buf_read_regular(&report, junit.buf, JUNIT_MAX_BYTES) < 0)
		buf_reset(&report);
	int parsed = compile_parse_run(&tr, l, r.out.buf ? r.out.buf : "", r.out.len, report.buf, report.len);
	if (!parsed || (r.exit_code != 0 && tr.failed == 0)) {
		char msg[160];
		snprintf(msg, sizeof msg, "%s (exit status %d%s)",
			 parsed ? "the test command failed although no test did" : "no test results could be read",
			 r.exit_code, r.timed_out ? ", timed out" : "");
		testrun_add_synthetic(&tr, "(the test command)", msg, NULL);
	}
	testrun_count(&tr);
	jv o = json_set(jv_object(), "command", jv_string(l->test_command));
	o = json_set(o, "exit_status", jv_number(r.exit_code));
	o = json_set(o, "timed_out", jv_bool(r.timed_out));
	o = json_set(o, "duration_ms", jv_number((double)r.duration_ms));
	o = json_set(o, "output", tail(r.out.buf ? r.out.buf : "", r.out.len, OUTPUT_TAIL));
	o = json_set(o, "format", jv_string(tr.format[0] ? tr.format : "none"));
	o = json_set(o, "passed", jv_number((double)tr.passed));
	o = json_set(o, "failed", jv_number((double)tr.failed));
	o = json_set(o, "skipped", jv_number((double)tr.skipped));
	*out = json_set(o, "results", compile_results(&tr));
	testrun_release(&tr);
	proc_result_release(&r);
	rc = 0;
out:
	unlink(junit.buf);
	free(command);
	buf_release(&junit);
	buf_release(&report);
	return rc;
}

/* ---- static tools ------------------------------------------------------- */

/* A severity word at s ("error:", "warning:", …): its name, or NULL. */
static const char *severity_at(const char *s, size_t *skip)
{
	static const struct { const char *word, *severity; } words[] = {
		{ "fatal error:", "error" }, { "error:", "error" }, { "warning:", "warning" },
		{ "style:", "info" }, { "performance:", "info" }, { "portability:", "warning" },
		{ "information:", "info" }, { "note:", "note" },
	};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
		size_t n = strlen(words[i].word);
		if (strncmp(s, words[i].word, n) == 0) {
			*skip = n;
			return words[i].severity;
		}
	}
	return NULL;
}

/* One line "FILE:LINE[:COL]:? MSG" as a finding, or jv_null(). */
static jv line_finding(const struct compile_tool *t, const char *line, size_t len)
{
	char *s = xstrndup(line, len);
	char *colon = strchr(s, ':');
	jv f = jv_null();

	if (!colon || colon == s || !isdigit((unsigned char)colon[1]))
		goto out;
	char *end;
	errno = 0;
	long lineno = strtol(colon + 1, &end, 10);
	if (errno || (*end != ':' && *end != ' '))
		goto out;
	if (*end == ':' && isdigit((unsigned char)end[1]))
		strtol(end + 1, &end, 10);      /* the column */
	while (*end == ':' || *end == ' ')
		end++;
	size_t skip = 0;
	const char *sev = severity_at(end, &skip);
	if (sev && strcmp(sev, "note") == 0)
		goto out;
	const char *msg = end + skip;
	while (*msg == ' ')
		msg++;
	*colon = '\0';
	const char *file = strncmp(s, "./", 2) == 0 ? s + 2 : s;
	f = json_set(jv_object(), "tool", jv_string(t->name));
	f = json_set(f, "severity", jv_string(sev ? sev : t->severity));
	f = json_set(f, "file", jv_string(file));
	f = json_set(f, "line", jv_number((double)lineno));
	f = json_set(f, "message", short_message(msg));
out:
	free(s);
	return f;
}

jv compile_tool_findings(const struct compile_tool *t, const char *output, int exit_status)
{
	jv out = jv_array();
	int n = 0;

	for (const char *p = output ? output : ""; *p && n < FINDINGS_MAX;) {
		size_t len = strcspn(p, "\n");
		jv f = line_finding(t, p, len);
		if (jv_get_kind(f) == JV_KIND_OBJECT) {
			out = jv_array_append(out, f);
			n++;
		} else {
			jv_free(f);
		}
		p += len + (p[len] == '\n');
	}
	if (n == 0 && exit_status != 0) {
		jv f = json_set(jv_object(), "tool", jv_string(t->name));
		f = json_set(f, "severity", jv_string(t->severity));
		char head[MESSAGE_MAX + 64];
		snprintf(head, sizeof head, "%s exited %d: %.*s", t->name, exit_status, MESSAGE_MAX,
			 output && *output ? output : "(no output)");
		out = jv_array_append(out, json_set(f, "message", jv_string(head)));
	}
	return out;
}

int compile_run_tools(jv *tools, jv *findings, const struct compile_lang *l, const char *dir,
		      const struct sandbox_policy *p, const char *tmp)
{
	*tools = jv_array();
	*findings = jv_array();
	for (size_t i = 0; i < l->ntools; i++) {
		const struct compile_tool *t = &l->tools[i];
		struct proc_result r;
		char *command = compile_expand(t->command, NULL, tmp);
		int rc = run_in(&r, command, dir, p, tmp, l->timeout_ms);
		if (rc < 0) {
			free(command);
			return -1;
		}
		jv one = json_set(json_set(jv_object(), "name", jv_string(t->name)), "command", jv_string(t->command));
		one = json_set(one, "exit_status", jv_number(r.exit_code));
		free(command);
		if (r.exit_code == 127) {
			one = json_set(json_set(one, "missing", jv_bool(true)), "findings", jv_number(0));
		} else {
			jv found = compile_tool_findings(t, r.out.buf, r.exit_code);
			one = json_set(one, "findings", jv_number(jv_array_length(jv_copy(found))));
			*findings = jv_array_concat(*findings, found);
		}
		*tools = jv_array_append(*tools, one);
		proc_result_release(&r);
	}
	return 0;
}

/* ---- digests ------------------------------------------------------------ */

jv compile_digests(const char *dir, jv paths)
{
	jv out = jv_object();

	if (jv_get_kind(paths) != JV_KIND_ARRAY)
		return out;
	jv_array_foreach(paths, i, p) {
		if (jv_get_kind(p) == JV_KIND_STRING) {
			struct buf path = BUF_INIT, data = BUF_INIT;
			buf_addf(&path, "%s/%s", dir, jv_string_value(p));
			/* (files a command may have replaced: regular ones only) */
			if (buf_read_regular(&data, path.buf, DIGEST_MAX_BYTES) == 0) {
				struct sha256 h;
				char hex[65];
				sha256_init(&h);
				sha256_update(&h, data.buf ? data.buf : "", data.len);
				sha256_hex(hex, &h);
				out = json_set(out, jv_string_value(p), jv_string(hex));
			} else {
				out = json_set(out, jv_string_value(p), jv_null());
			}
			buf_release(&path);
			buf_release(&data);
		}
		jv_free(p);
	}
	return out;
}
