/*
 * tools.c - the tool registry, validation, execution, and the tools that
 * are not plain file access: edit_file, apply_patch, run_command, git_diff,
 * git_status, finish, ask_human.  See tools.h.
 */
#include "agent/tools.h"
#include "agent/agent.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "git/git.h"
#include "core/json.h"
#include "llm/llm.h"
#include "agent/patch.h"
#include "os/sandbox.h"
#include "data/schema.h"
#include "core/tmpdir.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EDIT_FILE_MAX (16u << 20)
#define DIFF_CAP (256u << 10)
#define STATUS_CAP (256u << 10) /* git_status's text, as git_diff's */

/* ================================================================ results */

static void result_init(struct tool_result *r)
{
	memset(r, 0, sizeof(*r));
	r->data = jv_object();
}

/* ================================================================ sanitise */

static bool key_is_secret(const char *k)
{
	static const char *const words[] = { "key", "token", "secret", "password", "passwd", "auth", NULL };
	char low[128];
	size_t n = strlen(k);

	if (n >= sizeof(low))
		n = sizeof(low) - 1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)k[i]);
	low[n] = '\0';
	for (size_t i = 0; words[i]; i++)
		if (strstr(low, words[i]))
			return true;
	return false;
}

static jv sanitize_string(const char *s)
{
	char *c = llm_redact(xstrdup(s));
	size_t len = strlen(c);
	jv r;

	if (len > 200) {
		size_t cut = 200, chars = 0;
		struct buf b = BUF_INIT;
		while (cut && ((unsigned char)c[cut] & 0xc0) == 0x80)
			cut--;
		for (size_t i = cut; i < len; i++)
			chars += ((unsigned char)c[i] & 0xc0) != 0x80;
		buf_add(&b, c, cut);
		buf_addf(&b, "\xe2\x80\xa6[+%zu chars]", chars);
		r = jv_string_sized(b.buf, (int)b.len);
		buf_release(&b);
	} else {
		r = jv_string(c);
	}
	free(c);
	return r;
}

jv tool_input_sanitize(jv input)
{
	switch (jv_get_kind(input)) {
	case JV_KIND_STRING:
		return sanitize_string(jv_string_value(input));
	case JV_KIND_ARRAY: {
		jv out = jv_array();
		jv_array_foreach(input, i, v) {
			out = jv_array_append(out, tool_input_sanitize(v));
			jv_free(v);
		}
		return out;
	}
	case JV_KIND_OBJECT: {
		jv out = jv_object();
		jv_object_foreach(input, k, v) {
			const char *ks = jv_string_value(k);
			if (key_is_secret(ks) && jv_get_kind(v) != JV_KIND_NULL)
				out = jv_object_set(out, jv_copy(k), jv_string("[REDACTED]"));
			else
				out = jv_object_set(out, jv_copy(k), tool_input_sanitize(v));
			jv_free(k);
			jv_free(v);
		}
		return out;
	}
	default:
		return jv_copy(input);
	}
}

/* ================================================================ edit_file */

static void tool_edit_file(struct tool_result *out, const struct tool_ctx *ctx,
			   const struct sandbox_root *root, jv input)
{
	/* a name list_files showed quoted ("caf\351.txt") is that file's */
	char *path = buf_path_unquoted(json_get_str(input, "path"));
	const char *old = json_get_str(input, "old"), *new = json_get_str(input, "new");
	bool all = json_get_bool(input, "replace_all", false);
	struct buf content = BUF_INIT, bytes = BUF_INIT;
	struct sandbox_txn *t = NULL;
	enum patch_fuzz fz;
	char *result = NULL, *clean = NULL, *shown = NULL;
	bool latin1;
	int count, rc;

	(void)ctx;
	if ((rc = sandbox_path_clean(&clean, path, false)) == 0)
		shown = buf_path_quoted(clean);
	if (rc < 0 ||
	    (rc = sandbox_read_file(&content, root, clean, EDIT_FILE_MAX)) < 0) {
		tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "edit_file: %s%s", forge_last_error(),
			  rc == SANDBOX_ENOENT ? " (use write_file to create a file)" : "");
		goto out;
	}
	if (memchr(content.buf, '\0', content.len)) {
		tool_fail(out, TOOL_ERR_INPUT, jv_object(), "edit_file: '%s' is a binary file", shown);
		goto out;
	}
	if (!strcmp(old, new)) {
		tool_fail(out, TOOL_ERR_INPUT, jv_object(), "edit_file: `old` and `new` are the same; nothing to do");
		goto out;
	}
	/* A file that is not UTF-8 is matched as read_file shows it (Latin-1
	 * read as UTF-8) and written back in its own bytes (see patch.h). */
	latin1 = patch_is_latin1(content.buf, content.len);
	if (latin1) {
		if (patch_latin1_encode(&bytes, old, strlen(old), shown, "`old`") < 0 ||
		    patch_latin1_encode(&bytes, new, strlen(new), shown, "`new`") < 0) {
			tool_fail(out, TOOL_ERR_INPUT, jv_object(), "edit_file: %s", forge_last_error());
			goto out;
		}
		buf_reset(&bytes);
		patch_latin1_decode(&bytes, content.buf, content.len);
		buf_reset(&content);
		buf_add(&content, bytes.buf, bytes.len);
		buf_reset(&bytes);
	}
	if (patch_edit(&result, &fz, &count, content.buf, shown, old, new, all) < 0) {
		tool_fail(out, TOOL_ERR_INPUT, jv_object(), "edit_file: %s", forge_last_error());
		goto out;
	}
	if (latin1 && patch_latin1_encode(&bytes, result, strlen(result), shown, "the result") < 0) {
		tool_fail(out, TOOL_ERR_INTERNAL, jv_object(), "edit_file: %s", forge_last_error());
		goto out;
	}
	t = sandbox_txn_new(root);
	if (latin1)
		sandbox_txn_write(t, clean, bytes.buf, bytes.len);
	else
		sandbox_txn_write(t, clean, result, strlen(result));
	if ((rc = sandbox_txn_commit(t)) < 0) {
		tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "edit_file: %s", forge_last_error());
		goto out;
	}
	{
		struct buf text = BUF_INIT;
		jv d = json_set(jv_object(), "path", json_path(clean));
		d = json_set(d, "action", jv_string("modify"));
		d = json_set(d, "replacements", jv_number(count));
		d = json_set(d, "match", jv_string(patch_fuzz_name(fz)));
		if (latin1)
			d = json_set(d, "encoding", jv_string("latin1"));
		buf_addf(&text, "Edited %s: %d replacement%s", shown, count, count == 1 ? "" : "s");
		if (fz != PATCH_EXACT)
			buf_addf(&text, " (`old` matched %s; check the result)", patch_fuzz_name(fz));
		buf_addch(&text, '.');
		if (latin1)
			buf_adds(&text, " The file is not UTF-8: it was written in Latin-1, its own encoding.");
		tool_ok(out, buf_detach(&text, NULL), d);
	}
out:
	sandbox_txn_free(t);
	buf_release(&content);
	buf_release(&bytes);
	free(result);
	free(clean);
	free(shown);
	free(path);
}

/* ================================================================ apply_patch */

static void tool_apply_patch(struct tool_result *out, const struct tool_ctx *ctx,
			     const struct sandbox_root *root, jv input)
{
	char *summary = NULL;
	jv files;
	int rc;

	(void)ctx;
	rc = patch_apply(&summary, &files, root, json_get_str(input, "patch"));
	if (rc < 0) {
		tool_fail(out, rc == SANDBOX_EDENIED ? TOOL_ERR_DENIED : TOOL_ERR_INPUT, jv_object(),
			  "apply_patch: %s", forge_last_error());
		jv_free(files);
		return;
	}
	tool_ok(out, summary, json_set(jv_object(), "files", files));
}

/* ================================================================ run_command */

static const struct sandbox_policy *default_policy(void)
{
	static struct sandbox_policy *p;
	if (!p && sandbox_policy_new(&p, jv_null()) < 0)
		return NULL;
	return p;
}

/*
 * Whether a command's output says it failed writing in the repository's
 * git directory, which the sandbox keeps read-only (the index, objects,
 * refs: git mv, git rm, git add, git commit, git stash): a line naming a
 * path in a .git directory with "Read-only file system" (EROFS, under a
 * mount view) or "Permission denied" (EACCES, Landlock alone).  Before,
 * the model got git's bare "Unable to create '…/.git/worktrees/T/
 * index.lock': Read-only file system" and nothing said what to do
 * instead (hunt68 #5).
 */
static bool git_dir_refused(const char *text)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		const char *git = memmem(line, n, ".git/", 5);

		if (git && (memmem(line, n, "Read-only file system", 21) || memmem(line, n, "Permission denied", 17)))
			return true;
		line = end ? end + 1 : NULL;
	}
	return false;
}

#define GIT_DIR_HINT "[the repository's .git is read-only in the sandbox: git commands that write to it " \
	"(git mv, git rm, git add, git commit, git stash, git checkout) cannot run here. Use plain mv and " \
	"rm (or apply_patch's *** Delete File and *** Move to:); Forge stages the worktree's changes itself]"

static void tool_run_command(struct tool_result *out, const struct tool_ctx *ctx,
			     const struct sandbox_root *root, jv input)
{
	const struct sandbox_policy *p = ctx->policy ? ctx->policy : default_policy();
	const char *command = json_get_str(input, "command");
	const char *workdir = json_get_str(input, "workdir");
	double want_s = json_get_num(input, "timeout_s", 0);
	struct sandbox_cmd cmd = { 0 };
	struct proc_result r;
	struct buf cwd = BUF_INIT, text = BUF_INIT;
	char *own_tmp = NULL, *clean = NULL;
	const char *rule = NULL;
	jv unconfined = jv_null(), d;
	bool ran = false;

	memset(&r, 0, sizeof(r));
	if (!p) {
		tool_fail(out, TOOL_ERR_INTERNAL, jv_object(), "run_command: %s", forge_last_error());
		return;
	}
	switch (sandbox_check_command(p, command, &rule)) {
	case SANDBOX_DENY:
		tool_fail(out, TOOL_ERR_DENIED,
			  json_set(json_set(jv_object(), "command", jv_string(command)), "rule", jv_string(rule)),
			  "run_command: refused by the sandbox policy: the command matches the deny rule '%s'; do it another way",
			  rule);
		return;
	case SANDBOX_ASK:
		if (!ctx->approved) {
			tool_fail(out, TOOL_ASK,
				  json_set(json_set(jv_object(), "command", jv_string(command)), "rule", jv_string(rule)),
				  "run_command: needs a human's approval (the command matches the ask rule '%s')", rule);
			return;
		}
		break;
	case SANDBOX_ALLOW:
		break;
	}
	if (workdir) {
		struct stat st;
		/* (a directory named as list_files shows a name that is not UTF-8) */
		char *raw = buf_path_unquoted(workdir);
		int rc = sandbox_path_clean(&clean, raw, true);

		free(raw);
		if (rc == 0)
			rc = sandbox_stat(&st, root, clean);
		if (rc == 0 && !S_ISDIR(st.st_mode))
			rc = sandbox_fail(SANDBOX_EINVAL, "'%s': not a directory", workdir);
		if (rc < 0) {
			tool_fail(out, tool_kind_of_sandbox(rc), jv_object(), "run_command: workdir %s",
				  forge_last_error());
			goto out;
		}
	}
	buf_addf(&cwd, "%s%s%s", *root->path ? root->path : "/", clean && *clean ? "/" : "",
		 clean ? clean : "");
	if (!ctx->tmp_dir && tmpdir_make(&own_tmp, "forge-cmd") < 0) {
		tool_fail(out, TOOL_ERR_INTERNAL, jv_object(), "run_command: %s", forge_last_error());
		out->retryable = true;
		goto out;
	}
	cmd.command = command;
	cmd.root = root->path;
	cmd.cwd = cwd.buf;
	cmd.tmp = ctx->tmp_dir ? ctx->tmp_dir : own_tmp;
	cmd.base_env = ctx->env;
	cmd.timeout_ms = p->timeout_ms;
	if (want_s > 0 && want_s * 1000 < (double)p->timeout_ms)
		cmd.timeout_ms = (long)(want_s * 1000);
	/* the phase's time runs out first: the command ends with it (before:
	 * it ran its whole timeout past the limit) */
	if (ctx->deadline_ms > 0) {
		long long left = ctx->deadline_ms - monotonic_ms();

		if (left < 1) {
			tool_fail(out, TOOL_ERR_FAILED, jv_object(),
				  "run_command: not run: the phase's time limit is reached");
			goto out;
		}
		if (cmd.timeout_ms <= 0 || left < cmd.timeout_ms)
			cmd.timeout_ms = (long)left;
	}
	if (sandbox_run(&r, &unconfined, p, &cmd) < 0) {
		const char *msg = forge_last_error();
		bool required = strstr(msg, "required") || strstr(msg, "refusing");
		tool_fail(out, required ? TOOL_ERR_DENIED : TOOL_ERR_INTERNAL, jv_object(), "run_command: %s",
			  msg);
		out->retryable = !required && (strstr(msg, "fork") || strstr(msg, "pipe"));
		goto out;
	}
	ran = true;
	tool_text_add(&text, r.out.buf, r.out.len);
	if (text.len && text.buf[text.len - 1] != '\n')
		buf_addch(&text, '\n');
	if (r.timed_out)
		buf_addf(&text, "[timed out after %.0f s; the command and its children were killed]",
			 (double)cmd.timeout_ms / 1000);
	else if (r.term_signal)
		buf_addf(&text, "[killed by signal %d (%s)]", r.term_signal, strsignal(r.term_signal));
	else
		buf_addf(&text, "[exit status %d]", r.exit_code);
	d = json_set(jv_object(), "command", jv_string(command));
	d = json_set(d, "exit_code", jv_number(r.exit_code));
	if (r.term_signal)
		d = json_set(d, "signal", jv_number(r.term_signal));
	d = json_set(d, "timed_out", jv_bool(r.timed_out));
	d = json_set(d, "duration_ms", jv_number((double)r.duration_ms));
	d = json_set(d, "output_bytes", jv_number((double)r.out_bytes));
	d = json_set(d, "truncated", jv_bool(r.out_bytes > r.out.len));
	if (jv_get_kind(unconfined) == JV_KIND_ARRAY)
		d = json_set(d, "unconfined", jv_copy(unconfined));
	if (r.exit_code == 0 && !r.timed_out) {
		tool_ok(out, buf_detach(&text, NULL), d);
	} else {
		if (!r.timed_out && git_dir_refused(text.buf)) {
			buf_addf(&text, "\n%s", GIT_DIR_HINT);
			d = json_set(d, "git_read_only", jv_true());
		}
		tool_fail(out, TOOL_ERR_FAILED, d, "%s", text.buf);
	}
out:
	(void)ran;
	tmpdir_remove(own_tmp);
	proc_result_release(&r);
	buf_release(&cwd);
	buf_release(&text);
	jv_free(unconfined);
	free(clean);
}

/* ================================================================ git */

/* The run's worktree that root is, or NULL with a message. */
static struct forge_git_worktree *open_run_worktree(struct forge_git **g, const char *root)
{
	struct forge_git_worktree *wt = NULL;
	const char *base = strrchr(root, '/');

	*g = NULL;
	if (forge_git_open(g, root) < 0)
		return NULL;
	base = base ? base + 1 : root;
	/* (the directory is named by the run's name, forge_git_run_name,
	 * which opens the same worktree as the trace it was made for) */
	if (!forge_git_is_run_worktree(*g, root) || !forge_git_run_name_valid(base)) {
		forge_error("'%s' is not a run's worktree (%s/TRACE); git tools work in a run", root,
			    forge_git_runs_dir(*g));
	} else if (forge_git_worktree_open(&wt, *g, base, NULL) < 0) {
		wt = NULL;
	}
	return wt;
}

static void tool_git_status(struct tool_result *out, const struct tool_ctx *ctx,
			    const struct sandbox_root *root, jv input)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = open_run_worktree(&g, root->path);
	struct buf text = BUF_INIT, entry = BUF_INIT;
	jv st = jv_null(), shown = jv_array(), d;
	size_t n = 0, nshown = 0;

	(void)ctx;
	(void)input;
	if (!wt || forge_git_status(&st, wt) < 0) {
		tool_fail(out, TOOL_ERR_INTERNAL, jv_object(), "git_status: %s", forge_last_error());
		goto out;
	}
	buf_addf(&text, "On branch %s\n", forge_git_worktree_branch(wt));
	/* Capped as the other tools are: 150,000 new files made a 1.7 MB
	 * answer (some 420k tokens, over the model's window), sent whole in
	 * every request after it; the data holds the entries shown. */
	jv_array_foreach(st, i, e) {
		const char *s = json_get_str(e, "status"), *p = json_get_str(e, "path");
		const char *code = !strcmp(s, "added") ? "A " : !strcmp(s, "modified") ? "M " :
				   !strcmp(s, "deleted") ? "D " : !strcmp(s, "renamed") ? "R " :
				   !strcmp(s, "untracked") ? "??" : "T ";
		/* (as git status: a name holding a newline quoted; one that is
		 * not UTF-8 is so already, json_path()) */
		n++;
		buf_reset(&entry);
		buf_addf(&entry, "%s ", code);
		if (json_get_str(e, "old_path")) {
			json_path_add_shown(&entry, json_get_str(e, "old_path"));
			buf_adds(&entry, " -> ");
		}
		json_path_add_shown(&entry, p);
		buf_addch(&entry, '\n');
		if (nshown == n - 1 && text.len + entry.len <= STATUS_CAP) {
			buf_add(&text, entry.buf, entry.len);
			shown = jv_array_append(shown, jv_copy(e));
			nshown++;
		}
		(void)i;
		jv_free(e);
	}
	if (n == 0)
		buf_adds(&text, "nothing changed\n");
	if (nshown < n)
		buf_addf(&text, "[\xe2\x80\xa6 %zu more changed files not shown (%zu in all); git_diff with paths "
			 "shows single files, run_command `git status --short -- DIR` one directory \xe2\x80\xa6]\n",
			 n - nshown, n);
	text.buf[--text.len] = '\0';
	d = json_set(jv_object(), "files", shown);
	shown = jv_null();
	d = json_set(d, "count", jv_number((double)n));
	d = json_set(d, "truncated", jv_bool(nshown < n));
	tool_ok(out, buf_detach(&text, NULL), d);
out:
	jv_free(st);
	jv_free(shown);
	buf_release(&text);
	buf_release(&entry);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* Keep only the file sections of a patch whose path is one of paths. */
static char *filter_patch(const char *patch, jv paths /* borrows */)
{
	struct buf b = BUF_INIT;
	const char *p = patch;
	bool keep = false;

	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p + 1) : strlen(p);
		if (!strncmp(p, "diff --git a/", 13)) {
			keep = false;
			jv_array_foreach(paths, i, v) {
				const char *want = jv_string_value(v);
				size_t wl = strlen(want);
				const char *a = p + 13;
				if (!strncmp(a, want, wl) && (a[wl] == ' ' || a[wl] == '/'))
					keep = true;
				(void)i;
				jv_free(v);
			}
		}
		if (keep)
			buf_add(&b, p, len);
		p += len;
	}
	return buf_detach(&b, NULL);
}

static void tool_git_diff(struct tool_result *out, const struct tool_ctx *ctx,
			  const struct sandbox_root *root, jv input)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = open_run_worktree(&g, root->path);
	const char *base = json_get_str(input, "base");
	jv paths = json_get(input, "paths"), files = jv_null();
	char *patch = NULL;

	(void)ctx;
	if (!wt || forge_git_diff(&patch, &files, wt, base) < 0) {
		tool_fail(out, base ? TOOL_ERR_INPUT : TOOL_ERR_INTERNAL, jv_object(), "git_diff: %s",
			  forge_last_error());
		goto out;
	}
	if (json_is(paths, JV_KIND_ARRAY)) {
		char *f = filter_patch(patch, paths);
		free(patch);
		patch = f;
	}
	if (strlen(patch) > DIFF_CAP) {
		struct buf b = BUF_INIT;
		buf_add(&b, patch, DIFF_CAP);
		buf_addf(&b, "\n[\xe2\x80\xa6 %zu more bytes of diff not shown; pass paths to see single files \xe2\x80\xa6]",
			 strlen(patch) - DIFF_CAP);
		free(patch);
		patch = buf_detach(&b, NULL);
	}
	if (!*patch) {
		free(patch);
		patch = xstrdup("no changes");
	}
	tool_ok(out, patch, json_set(jv_object(), "files", files));
	patch = NULL;
	files = jv_null();
out:
	free(patch);
	jv_free(files);
	jv_free(paths);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* ================================================================ finish, ask_human */

static void tool_finish(struct tool_result *out, const struct tool_ctx *ctx,
			const struct sandbox_root *root, jv input)
{
	(void)ctx;
	(void)root;
	tool_ok(out, xstrdup("Result accepted."), jv_copy(input));
	out->kind = TOOL_FINISH;
}

static void tool_ask_human(struct tool_result *out, const struct tool_ctx *ctx,
			   const struct sandbox_root *root, jv input)
{
	(void)ctx;
	(void)root;
	tool_ok(out, xstrdup("Waiting for a human."), jv_copy(input));
	out->kind = TOOL_ASK_HUMAN;
}

/* ================================================================ registry */

static const struct tool registry[] = {
	{ "read_file", "tools/read_file.json", false, tool_read_file },
	{ "list_files", "tools/list_files.json", false, tool_list_files },
	{ "grep", "tools/grep.json", false, tool_grep },
	{ "write_file", "tools/write_file.json", true, tool_write_file },
	{ "edit_file", "tools/edit_file.json", true, tool_edit_file },
	{ "apply_patch", "tools/apply_patch.json", true, tool_apply_patch },
	{ "run_command", "tools/run_command.json", true, tool_run_command },
	{ "git_diff", "tools/git_diff.json", false, tool_git_diff },
	{ "git_status", "tools/git_status.json", false, tool_git_status },
	{ "finish", "tools/finish.json", false, tool_finish },
	{ "ask_human", "tools/ask_human.json", false, tool_ask_human },
};

#define NTOOLS (sizeof(registry) / sizeof(registry[0]))

const struct tool *tools_find(const char *name)
{
	for (size_t i = 0; name && i < NTOOLS; i++)
		if (!strcmp(registry[i].name, name))
			return &registry[i];
	return NULL;
}

const struct tool *tools_all(size_t *n)
{
	*n = NTOOLS;
	return registry;
}

jv tool_spec(const struct tool *t, jv schema_override)
{
	jv desc, s = schema_tool_input(&desc, t->schema);

	if (!jv_is_valid(s)) {
		jv_free(s);
		s = jv_object();
	}
	if (jv_get_kind(desc) != JV_KIND_STRING) {
		jv_free(desc);
		desc = jv_string(t->name);
	}
	if (jv_get_kind(schema_override) != JV_KIND_NULL) {
		jv_free(s);
		s = schema_override;
	} else {
		jv_free(schema_override);
	}
	jv spec = json_set(jv_object(), "name", jv_string(t->name));

	spec = json_set(spec, "description", desc);
	return json_set(spec, "input_schema", s);
}

jv tool_specs(const char *const *names)
{
	jv out = jv_array();

	if (!names) {
		for (size_t i = 0; i < NTOOLS; i++)
			if (strcmp(registry[i].name, "finish") && strcmp(registry[i].name, "ask_human"))
				out = jv_array_append(out, tool_spec(&registry[i], jv_null()));
		return out;
	}
	for (size_t i = 0; names[i]; i++) {
		const struct tool *t = tools_find(names[i]);
		if (!t) {
			jv_free(out);
			forge_error("no tool called '%s'", names[i]);
			return jv_invalid_with_msg(jv_string(forge_last_error()));
		}
		out = jv_array_append(out, tool_spec(t, jv_null()));
	}
	return out;
}

int tool_validate(const struct tool *t, jv input)
{
	const struct schema *s = schema_get(t->schema);

	if (!s)
		return forge_error_prefix("%s: no schema", t->name);
	if (jv_get_kind(input) != JV_KIND_OBJECT)
		return forge_error("%s: invalid input: the input must be a JSON object", t->name);
	if (schema_validate_all(NULL, s, input) < 0)
		return forge_error_prefix("%s: invalid input", t->name);
	return 0;
}

/* The paths a file tool's result says it wrote (not those it deleted). */
static jv written_paths(jv data /* borrowed */)
{
	jv files = json_get(data, "files"), paths = jv_array();
	const char *one = json_get_str(data, "path");

	if (one)
		paths = jv_array_append(paths, jv_string(one));
	if (jv_get_kind(files) == JV_KIND_ARRAY) {
		jv_array_foreach(files, i, f) {
			const char *path = json_get_str(f, "path"), *action = json_get_str(f, "action");

			if (path && !(action && !strcmp(action, "delete")))
				paths = jv_array_append(paths, jv_string(path));
			jv_free(f);
		}
	}
	jv_free(files);
	return paths;
}

/*
 * A file the model wrote where git ignores it is not part of the change:
 * the commit takes what git tracks or would add.  Say so in the result,
 * or the work is dropped without a word ("nothing to commit") while the
 * run reports success.
 */
static void note_ignored(struct tool_result *out, jv ignored)
{
	struct buf text = BUF_INIT;

	if (jv_array_length(jv_copy(ignored)) == 0) {
		jv_free(ignored);
		return;
	}
	buf_adds(&text, out->output ? out->output : "ok");
	buf_adds(&text, "\nNote: git ignores ");
	jv_array_foreach(ignored, i, p) {
		buf_addf(&text, "%s%s", i ? ", " : "", jv_string_value(p));
		jv_free(p);
	}
	buf_adds(&text, " (.gitignore), so it is not part of the change and will not be committed. "
		      "If it belongs in the change, write it elsewhere or change .gitignore; if it is "
		      "generated, change what generates it.");
	free(out->output);
	out->output = buf_detach(&text, NULL);
	out->data = json_set(out->data, "ignored", ignored);
}

/*
 * Likewise a file written inside a submodule (below a gitlink: another
 * repository, whose directory is empty in the run's worktree): the
 * commit never takes it.  Say so in the result.
 */
static void note_submodules(struct tool_result *out, jv inside)
{
	struct buf text = BUF_INIT;

	if (jv_array_length(jv_copy(inside)) == 0) {
		jv_free(inside);
		return;
	}
	buf_adds(&text, out->output ? out->output : "ok");
	buf_adds(&text, "\nNote: ");
	jv_array_foreach(inside, i, e) {
		buf_addf(&text, "%s%s (in the submodule %s)", i ? ", " : "", json_get_str(e, "path"),
			 json_get_str(e, "submodule"));
		jv_free(e);
	}
	buf_adds(&text, ": a submodule is another git repository, not checked out in this worktree, so "
		      "what is written inside it is not part of the change and will not be committed. "
		      "Change the submodule's own repository instead, or leave it out of this change.");
	free(out->output);
	out->output = buf_detach(&text, NULL);
	out->data = json_set(out->data, "in_submodule", inside);
}

void tool_execute(struct tool_result *out, const struct tool *t, const struct tool_ctx *ctx,
		  jv input)
{
	struct sandbox_root *root = NULL;

	result_init(out);
	if (tool_validate(t, input) < 0) {
		tool_fail(out, TOOL_ERR_INPUT, jv_object(), "%s; fix the input to match the tool's schema",
			  forge_last_error());
		return;
	}
	/* A path or command with a NUL in it would be cut short as a C string
	 * ("a\u0000b" would name "a"): refuse it rather than act on part of it. */
	char *where = NULL;
	if (json_find_nul(&where, input) < 0) {
		tool_fail(out, TOOL_ERR_INPUT, jv_object(),
			  "%s: '%s' holds a NUL character (\\u0000); paths, commands and texts cannot",
			  t->name, *where ? where : "input");
		free(where);
		return;
	}
	if (strcmp(t->name, "finish") && strcmp(t->name, "ask_human")) {
		if (!ctx || !ctx->root) {
			tool_fail(out, TOOL_ERR_INTERNAL, jv_object(), "%s: no worktree to work in", t->name);
			return;
		}
		if (sandbox_root_open(&root, ctx->root) < 0) {
			tool_fail(out, TOOL_ERR_INTERNAL, jv_object(), "%s: %s", t->name, forge_last_error());
			return;
		}
	}
	t->run(out, ctx, root, input);
	if (out->ok && (!strcmp(t->name, "write_file") || !strcmp(t->name, "edit_file") ||
			!strcmp(t->name, "apply_patch"))) {
		jv paths = written_paths(out->data), ignored, inside;

		/* (one opening of the repository for both notes) */
		forge_git_written_paths(&ignored, &inside, ctx->root, paths);
		jv_free(paths);
		note_ignored(out, ignored);
		note_submodules(out, inside);
	}
	sandbox_root_free(root);
}

void tools_run(struct tool_result *out, const char *name, const struct tool_ctx *ctx, jv input)
{
	const struct tool *t = tools_find(name);

	if (!t) {
		struct buf names = BUF_INIT;
		result_init(out);
		for (size_t i = 0; i < NTOOLS; i++)
			buf_addf(&names, "%s%s", i ? ", " : "", registry[i].name);
		tool_fail(out, TOOL_ERR_INPUT, jv_object(), "no tool called '%s'; the tools are: %s",
			  name ? name : "", names.buf);
		buf_release(&names);
		return;
	}
	tool_execute(out, t, ctx, input);
}

int tools_agent_exec(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct tool_result r;
	struct tool_ctx ctx = *(const struct tool_ctx *)payload;
	jv ev;

	/* (the agent's time left bounds a command: its deadline, in) */
	if (out->deadline_ms > 0 && (ctx.deadline_ms <= 0 || out->deadline_ms < ctx.deadline_ms))
		ctx.deadline_ms = out->deadline_ms;
	/* (a share of the model's window: read_file cuts at a line and
	 * says where to read on; the agent cuts any other text) */
	if (out->max_text_bytes > 0 &&
	    out->max_text_bytes < (ctx.read_cap ? ctx.read_cap : TOOL_READ_CAP_DEFAULT))
		ctx.read_cap = out->max_text_bytes;
	memset(out, 0, sizeof(*out));
	tools_run(&r, name, &ctx, input);
	out->ok = r.ok;
	out->retryable = r.retryable;
	out->text = xstrdup(r.ok ? (r.output ? r.output : "ok") : (r.error ? r.error : "failed"));
	if (r.kind == TOOL_ASK)
		out->gate = xstrdup(r.error ? r.error : "approval needed");
	ev = json_set(jv_object(), "kind", jv_string(tool_kind_name(r.kind)));
	ev = json_set(ev, "output_bytes", jv_number((double)strlen(out->text)));
	ev = json_set(ev, "data", tool_input_sanitize(r.data));
	out->event = ev;
	tool_result_release(&r);
	return 0;
}
