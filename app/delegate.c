/* delegate.c - the delegate tool's process side; see delegate.h. */
#include "app/delegate.h"
#include "app/cli.h"
#include "app/phase.h"
#include "app/term.h"
#include "app/toolset.h"
#include "agent/tools.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/secret.h"
#include "core/tmpdir.h"
#include "data/config.h"
#include "data/schema.h"
#include "data/stream.h"
#include "git/diff.h"
#include "git/git.h"
#include "os/proc.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

#define TASK_SHOWN 200          /* characters of the sub-task in events */
#define STDERR_KEPT 4000        /* bytes of a sub-agent's stderr kept for a crash report */
#define OUTPUT_MAX (64u << 10)  /* bytes of its output handed to the model */
#define CHILD_LINE_MAX (16u << 20)  /* the longest line of its stdout read (an event, its result) */

static struct {
	char *span;
	int depth;
	bool child;             /* delegate_self() was called: a sub-agent */
	bool may_delegate;
	char *call_phase;
	int started;            /* sub-agents started by this process's agent */
} self;

void delegate_self(const char *span, int depth, bool may_delegate, const char *call_phase)
{
	free(self.span);
	free(self.call_phase);
	self.span = span ? xstrdup(span) : NULL;
	self.call_phase = call_phase ? xstrdup(call_phase) : NULL;
	self.depth = depth;
	self.may_delegate = may_delegate;
	self.child = true;
}

bool delegate_is_sub(void)
{
	return self.child;
}

const char *delegate_self_span(void)
{
	return self.span;
}

/* ---- the child worktree's place ------------------------------------------ */

#define SUB_TMP "forge-sub"             /* its temporary directory's prefix (core/tmpdir.h) */
#define SUB_WORKTREE "worktree"         /* the child worktree in it */

char *delegate_worktree_in(const char *tmp)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s/" SUB_WORKTREE, tmp);
	return buf_detach(&b, NULL);
}

bool delegate_worktree_path(const char *path)
{
	static const char tail[] = "/" SUB_WORKTREE, prefix[] = SUB_TMP "-";
	size_t n = strlen(path), t = sizeof tail - 1, p = sizeof prefix - 1;

	if (n < t || strcmp(path + n - t, tail) != 0)
		return false;
	n -= t;                                 /* path[0..n): .../forge-sub-XXXXXX */
	size_t start = n;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (start == 0 || n - start != p + 6 || strncmp(path + start, prefix, p) != 0)
		return false;
	for (size_t i = start + p; i < n; i++)
		if (!isalnum((unsigned char)path[i]))
			return false;
	return true;
}

/* ---- git, as the git command does it --------------------------------- */

/* This environment without its GIT_* variables (GIT_DIR, GIT_INDEX_FILE,
 * GIT_DIFF_OPTS, GIT_CONFIG_PARAMETERS, ...): the scripts below name the
 * repository and every file themselves, as libgit2 does for the rest of
 * Forge.  Without the keys either, and with forge_git_guard's settings for
 * every git of a script: the repositories are worktrees whose files a
 * model wrote (a hook there would run as the user, with the keys).  The
 * strings are environ's but *owned (the settings): free it and the array. */
static char **git_env(char **owned)
{
	size_t n = 0, k = 0;

	while (environ[n])
		n++;
	char **env = xcalloc(n + 2, sizeof *env);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "GIT_", 4) != 0)
			env[k++] = environ[i];
	*owned = forge_git_guard_env();
	env[k++] = *owned;
	env[k] = NULL;
	llm_scrub_env(env);
	return env;
}

/* Run `sh -c script sh ARGS...` in no particular directory, in git_env();
 * stdout into *out (may be NULL), git's complaint into the
 * error message. */
static int sh_run(struct buf *out, const char *script, const char *const *args, const char *input)
{
	const char *argv[16] = { "/bin/sh", "-c", script, "sh" };
	struct proc_opts o = PROC_OPTS_INIT;
	struct proc_result r;
	char *guard = NULL;
	char **env = git_env(&guard);
	size_t n = 4;
	int rc = 0;

	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	o.argv = argv;
	o.envp = env;
	o.input = input;
	o.input_len = input ? strlen(input) : 0;
	o.timeout_ms = 300000;
	if (proc_run(&r, &o) < 0) {
		rc = -1;
	} else if (r.exit_code != 0) {
		while (r.err.len && r.err.buf[r.err.len - 1] == '\n')
			buf_truncate(&r.err, r.err.len - 1);
		rc = forge_error("%s", r.err.len ? r.err.buf : "git failed");
	} else if (out) {
		buf_add(out, r.out.buf, r.out.len);
	}
	proc_result_release(&r);
	free(env);
	free(guard);
	return rc;
}

/* The files of root as they are now, committed on no branch, checked out
 * (detached) in dir; *base gets the commit.  A temporary index, so root's
 * own index is left as it was. */
static int child_worktree(char **base, const char *root, const char *dir)
{
	static const char script[] =
		"set -e; cd \"$1\"; idx=$(mktemp); trap 'rm -f \"$idx\"' EXIT; "
		"cp \"$(git rev-parse --git-path index)\" \"$idx\" 2>/dev/null || rm -f \"$idx\"; "
		"GIT_INDEX_FILE=$idx git add -A; tree=$(GIT_INDEX_FILE=$idx git write-tree); "
		"if head=$(git rev-parse -q --verify HEAD^{commit}); then p=\"-p $head\"; else p=; fi; "
		"c=$(git -c user.name=Forge -c user.email=forge@localhost commit-tree $p -m 'forge: sub-agent base' \"$tree\"); "
		"git worktree add -q --detach \"$2\" \"$c\" >&2; printf %s \"$c\"";
	const char *args[] = { root, dir, NULL };
	struct buf b = BUF_INIT;

	*base = NULL;
	if (sh_run(&b, script, args, NULL) < 0) {
		buf_release(&b);
		return forge_error_prefix("cannot make the sub-agent's worktree");
	}
	*base = buf_detach(&b, NULL);
	return 0;
}

static void child_worktree_remove(const char *root, const char *dir)
{
	const char *args[] = { root, dir, NULL };

	sh_run(NULL, "git -C \"$1\" worktree remove --force \"$2\" || git -C \"$1\" worktree prune", args, NULL);
}

/* What changed in root since commit base: everything staged as `git add
 * -A` stages it, as `git diff --binary` prints it ("" when nothing).
 * *out malloc'd; -1 with a message when git fails.
 * The plumbing diff-index, not `git diff`: the user's settings for
 * diffs they read (diff.noprefix, diff.mnemonicPrefix, diff.relative,
 * color.diff, diff.external, textconv) must not shape a patch that
 * apply_diff() reads back; the prefixes are spelled out all the same. */
static int delegate_diff(char **out, const char *root, const char *base)
{
	static const char script[] =
		"set -e; cd \"$1\"; git add -A; "
		"git diff-index --cached -p --binary --no-color --no-ext-diff --no-textconv "
		"--src-prefix=a/ --dst-prefix=b/ \"$2\" --";
	const char *args[] = { root, base, NULL };
	struct buf b = BUF_INIT;

	*out = NULL;
	if (sh_run(&b, script, args, NULL) < 0) {
		buf_release(&b);
		return forge_error_prefix("the sub-agent's diff");
	}
	buf_addch(&b, '\0');
	*out = buf_detach(&b, NULL);
	return 0;
}

/* Apply diff to root's files (not its index) as it was made: a/ b/
 * prefixes, whitespace as written and matched exactly whatever apply.whitespace
 * and apply.ignoreWhitespace say; -1 with
 * git's reason when it does not apply cleanly, and then nothing is
 * changed. */
static int apply_diff(const char *root, const char *diff)
{
	static const char check[] = "cd \"$1\" && git apply -p1 --whitespace=nowarn --no-ignore-whitespace --binary --check -";
	static const char apply[] = "cd \"$1\" && git apply -p1 --whitespace=nowarn --no-ignore-whitespace --binary -";
	const char *args[] = { root, NULL };

	if (sh_run(NULL, check, args, diff) < 0)
		return -1;
	return sh_run(NULL, apply, args, diff);
}

/* ---- a sub-agent's run ------------------------------------------------- */

struct child {
	struct delegate *d;
	const char *span;
	jv result;                      /* its subagent_result record, or null */
	double event_usd;               /* what its llm.called events say it spent */
	long event_tokens;
	bool event_unpriced;
	int cut;                        /* lines of its stdout over the limit of a line, dropped */
};

/* A line of the sub-agent's stdout: an event is forwarded into this
 * program's stream under its span; the result is kept. */
static void on_child_line(void *payload, const char *line, size_t len, int cut)
{
	struct child *c = payload;
	jv rec = cut ? jv_invalid() : json_parse(line, len);
	const char *kind = json_get_str(rec, "kind");

	/* (what such a line held is lost: counted, and said when it was
	 * the result -- crash_reason()) */
	c->cut += cut != 0;

	if (!kind) {
		jv_free(rec);
		return;
	}
	if (strcmp(kind, "subagent_result") == 0) {
		jv_free(c->result);
		c->result = rec;
		return;
	}
	if (strcmp(kind, "event") != 0) {
		jv_free(rec);
		return;
	}
	if (!json_has(rec, "span")) {
		rec = json_set(rec, "span", jv_string(c->span));
		rec = json_set(rec, "parent_span", json_str_or_null(self.span));
	}
	const char *type = json_get_str(rec, "type");
	if (type && strcmp(type, "llm.called") == 0) {
		jv cost = json_get(rec, "cost");
		jv usd = json_get(cost, "usd");
		if (jv_get_kind(usd) == JV_KIND_NUMBER)
			c->event_usd += jv_number_value(usd);
		else
			c->event_unpriced = true;
		c->event_tokens += (long)json_get_num(cost, "tokens", 0);
		jv_free(usd);
		jv_free(cost);
	}
	stream_write(&c->d->ph->out, rec);
}

/* The environment of the sub-agent: this one's, with FORGE_ATTEMPT set to
 * its number (the cassette attempt of its calls).  *owned is what to free. */
static char **child_env(char **owned, int number)
{
	size_t n = 0, k = 0;

	while (environ[n])
		n++;
	char **env = xcalloc(n + 2, sizeof *env);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "FORGE_ATTEMPT=", 14) != 0)
			env[k++] = environ[i];
	*owned = xmalloc(32);
	snprintf(*owned, 32, "FORGE_ATTEMPT=%d", number);
	env[k++] = *owned;
	env[k] = NULL;
	return env;
}

/* forge-agent runs (spawn): a Ctrl-C is passed on to it, delegate_interrupt */
static volatile sig_atomic_t sub_running;

bool delegate_interrupt(int sig)
{
	/* (none started yet: there is nothing of its to record; a child just
	 * started and not yet catching signals dies of it) */
	if (!sub_running || proc_running_count() == 0)
		return false;
	proc_kill_running(sig == SIGINT ? SIGINT : SIGTERM);
	return true;
}

/* Start forge-agent with doc and wait for it. */
static int spawn(struct proc_result *r, struct child *c, jv doc, int number)
{
	const char *argv[32];
	char *dir = cli_self_dir(), *program, *owned = NULL;
	struct buf path = BUF_INIT;
	struct proc_opts o = PROC_OPTS_INIT;
	char *input = json_dumps(jv_copy(doc), false);
	int n = 0, rc;

	buf_addf(&path, "%s/forge-agent", dir ? dir : ".");
	program = buf_detach(&path, NULL);
	argv[n++] = program;
	n += cli_common_argv(argv + n, (int)(sizeof argv / sizeof *argv) - n, &c->d->ph->common, true);
	char **env = child_env(&owned, number);
	o.argv = argv;
	o.envp = env;
	o.input = input;
	o.input_len = strlen(input);
	o.on_stdout = on_child_line;
	o.payload = c;
	o.out_cap = STDERR_KEPT;
	o.max_line = CHILD_LINE_MAX;
	/* its own time breaker ends it first; this is for one that hangs */
	if (json_has(doc, "time_s"))
		o.timeout_ms = (long)(json_get_num(doc, "time_s", 0) * 1000) + 30000;
	sub_running = 1;
	rc = proc_run(r, &o);
	sub_running = 0;
	free(env);
	free(owned);
	free(input);
	jv_free(doc);
	free(program);
	free(dir);
	return rc;
}

/* The sub-task's text for events: its first TASK_SHOWN characters. */
static jv task_shown(const char *task)
{
	size_t n = strlen(task), cut = n > TASK_SHOWN ? TASK_SHOWN : n;

	while (cut < n && cut && ((unsigned char)task[cut] & 0xc0) == 0x80)
		cut--;
	return cut < n ? jv_string_fmt("%.*s…", (int)cut, task) : jv_string(task);
}


/* A refusal: a tool error for the model, nothing started. */
static int refuse(struct agent_tool_outcome *out, const char *why)
{
	out->ok = false;
	out->text = xstrdup(why);
	out->event = json_set(json_set(jv_object(), "kind", jv_string("denied")), "data", jv_object());
	return 0;
}

struct run {
	char *span_parent;
	char span[ULID_LEN + 1];
	bool write;
	jv tools;
	double budget;
	char *root, *tmp, *child_root, *base;
	int number;
};

static jv task_doc(struct delegate *d, struct run *u, jv input)
{
	struct phase *ph = d->ph;
	char *call = delegate_call_phase(self.call_phase ? self.call_phase : ph->spec->name);
	jv doc = json_set(jv_object(), "task", json_get(input, "task"));

	doc = json_set(doc, "tools", jv_copy(u->tools));
	doc = json_set(doc, "mode", jv_string(u->write ? "write" : "read"));
	doc = json_set(doc, "root", jv_string(u->child_root ? u->child_root : u->root));
	doc = json_set(doc, "budget_usd", u->budget < 0 ? jv_null() : jv_number(u->budget));
	if (json_has(input, "max_iterations"))
		doc = json_set(doc, "max_iterations", json_get(input, "max_iterations"));
	if (d->deadline_ms) {
		long long left = d->deadline_ms - monotonic_ms();
		doc = json_set(doc, "time_s", jv_number(left > 1000 ? (double)(left / 1000) : 1));
	}
	doc = json_set(doc, "span", jv_string(u->span));
	doc = json_set(doc, "phase", jv_string(ph->out.phase ? ph->out.phase : ph->spec->name));
	doc = json_set(doc, "call_phase", jv_string(call));
	doc = json_set(doc, "number", jv_number(u->number));
	jv parent = json_set(jv_object(), "trace_id", jv_string(ph->out.trace_id));
	parent = json_set(parent, "span", json_str_or_null(self.span));
	parent = json_set(parent, "depth", jv_number(self.depth));
	free(call);
	return json_set(doc, "parent", parent);
}

/* A requested tool this agent has not got because its phase's policy
 * denies it or asks a human for it (delegate_hook left it out): -1 with
 * the refusal naming the rule, so the model need not guess. */
static int withheld(struct delegate *d, jv requested)
{
	int rc = 0;

	if (jv_get_kind(requested) != JV_KIND_ARRAY)
		return 0;
	jv_array_foreach(requested, i, v) {
		const char *name = jv_get_kind(v) == JV_KIND_STRING ? jv_string_value(v) : NULL, *rule = NULL;
		enum tool_permission p = name && rc == 0
			? toolset_permission(d->ph->cfg, phase_policy_name(d->ph), name, true, &rule) : TOOL_ALLOW;
		if (p == TOOL_DENY)
			rc = forge_error("delegate: refused: the sub-agent cannot have '%s': this agent may not "
					 "use it (%s)", name, rule);
		else if (p == TOOL_ASK_FIRST)
			rc = forge_error("delegate: refused: the sub-agent cannot have '%s': it needs a human's "
					 "approval (%s); call it yourself", name, rule);
		jv_free(v);
		(void)i;
	}
	return rc;
}

/* Check the call and prepare the run; 0, or -1 with the refusal in forge_error(). */
static int prepare(struct delegate *d, struct run *u, jv input)
{
	const struct schema *s = schema_get("tools/delegate.json");
	const char *mode = json_get_str(input, "mode");
	jv requested = json_get(input, "tools");
	int rc;

	if (!s || schema_validate(s, input) < 0)
		return forge_error_prefix("delegate: invalid input");
	if (delegate_may_start(&d->lim, self.depth, self.started) < 0)
		return -1;
	if (!d->offered)
		return forge_error("delegate: refused: this sub-agent was not given delegate by the agent that "
				   "started it; do the sub-task yourself");
	u->write = mode && strcmp(mode, "write") == 0;
	rc = withheld(d, requested);
	if (rc == 0)
		rc = delegate_tools(&u->tools, requested, d->tools, u->write,
				    delegate_may_nest(&d->lim, self.depth + 1));
	jv_free(requested);
	if (rc < 0)
		return -1;
	double remaining = -1;
	if (d->limit_usd >= 0)
		remaining = d->limit_usd > d->live->cost_usd ? d->limit_usd - d->live->cost_usd : 0;
	u->budget = delegate_budget(json_get_num(input, "budget_share", 0), d->lim.budget_share_max, remaining);
	if (remaining == 0)
		return forge_error("delegate: refused: this agent has no budget left to share");
	if (!(u->root = phase_workdir(d->ph)))
		return forge_error("delegate: refused: this agent has no directory to work in");
	ulid_new(u->span);
	if (u->write) {
		if (tmpdir_make(&u->tmp, SUB_TMP) < 0)
			return forge_error_prefix("delegate");
		u->child_root = delegate_worktree_in(u->tmp);
		if (child_worktree(&u->base, u->root, u->child_root) < 0)
			return forge_error_prefix("delegate");
	}
	u->number = ++self.started;
	return 0;
}

static void run_release(struct run *u)
{
	if (u->base)
		child_worktree_remove(u->root, u->child_root);
	tmpdir_remove(u->tmp);
	jv_free(u->tools);
	free(u->root);
	free(u->child_root);
	free(u->base);
}

/* What the sub-agent's process did, when it wrote no result: why. */
static char *crash_reason(const struct proc_result *r, bool started, int cut)
{
	struct buf b = BUF_INIT;

	if (started && cut && !r->timed_out && !r->term_signal && r->exit_code != FORGE_EXIT_INTERRUPTED)
		buf_addf(&b, "the sub-agent's result was lost: %d line%s of its output %s over %zu MiB, the "
			 "most a line may hold, and could not be read (exit status %d)", cut, cut == 1 ? "" : "s",
			 cut == 1 ? "was" : "were", (size_t)CHILD_LINE_MAX >> 20, r->exit_code);
	else if (!started)
		buf_addf(&b, "the sub-agent could not be started: %s", forge_last_error());
	else if (r->timed_out)
		buf_addf(&b, "the sub-agent did not end in time (the delegating agent's time limit) and was killed");
	else if (r->term_signal)
		buf_addf(&b, "the sub-agent crashed: killed by signal %d (%s)", r->term_signal,
			 strsignal(r->term_signal));
	else if (r->exit_code == FORGE_EXIT_INTERRUPTED)
		buf_addf(&b, "the sub-agent was interrupted (SIGINT or SIGTERM)");
	else
		buf_addf(&b, "the sub-agent crashed: it ended with exit status %d and no result", r->exit_code);
	if (started && r->err.len) {
		size_t from = r->err.len > 600 ? r->err.len - 600 : 0;
		buf_addf(&b, "; its last words: %.*s", (int)(r->err.len - from), r->err.buf + from);
		while (b.len && b.buf[b.len - 1] == '\n')
			buf_truncate(&b, b.len - 1);
	}
	return buf_detach(&b, NULL);
}

/* Merge a write-mode sub-agent's diff into this agent's files.  Sets
 * applied/conflict in *done. */
static void merge_back(jv *done, struct run *u, const char *diff)
{
	if (!diff || !*diff) {
		*done = json_set(*done, "applied", jv_false());
		return;
	}
	if (apply_diff(u->root, diff) == 0) {
		*done = json_set(*done, "applied", jv_true());
		return;
	}
	*done = json_set(*done, "applied", jv_false());
	*done = json_set(*done, "conflict", jv_string(forge_last_error()));
}

/* The files a diff touches, as git's own diff reader would name them
 * (git/diff.h: quoted names, spaces, renames by both names). */
static jv diff_files(const char *diff)
{
	jv files = jv_array();
	struct diff *d = NULL;

	if (!diff || diff_parse(&d, diff, strlen(diff)) < 0)
		return files;
	for (size_t i = 0; i < d->nfiles; i++) {
		const struct diff_file *f = &d->files[i];

		if (f->renamed && f->old_path)
			files = jv_array_append(files, jv_string(f->old_path));
		files = jv_array_append(files, jv_string(f->path));
	}
	diff_free(d);
	return files;
}

/* The tool's text for the model: the result as JSON, its output capped. */
static char *result_text(jv done, jv result, const char *diff)
{
	jv shown = json_set(jv_copy(done), "summary", json_get(result, "summary"));
	const char *output = json_get_str(result, "output");

	if (output && strlen(output) > OUTPUT_MAX)
		shown = json_set(shown, "output", jv_string_fmt("%.*s\n[… %zu more bytes]", (int)OUTPUT_MAX,
								output, strlen(output) - OUTPUT_MAX));
	else
		shown = json_set(shown, "output", json_get(result, "output"));
	/* a diff that did not apply comes back for the agent to use by hand */
	if (json_has(done, "conflict") && diff && *diff)
		shown = json_set(shown, "diff", strlen(diff) > OUTPUT_MAX
				 ? jv_string_fmt("%.*s\n[… %zu more bytes]", (int)OUTPUT_MAX, diff, strlen(diff) - OUTPUT_MAX)
				 : jv_string(diff));
	return json_dumps(shown, false);
}

/* How the sub-agent ended, added to done (consumed, returned): its
 * result's status and what came of its diff, or why it has none; its
 * spend into out. */
static jv how_it_ended(struct agent_tool_outcome *out, char **diff, struct run *u, const struct child *c,
		       const struct proc_result *r, bool ran, jv done)
{
	jv res = c->result;
	const char *status = json_get_str(res, "status");

	*diff = NULL;
	if (!status) {
		char *why = crash_reason(r, ran, c->cut);
		out->cost_usd = c->event_usd;
		out->tokens = c->event_tokens;
		out->cost_unknown = c->event_unpriced;
		done = json_set(json_set(done, "status", jv_string("crashed")), "reason", jv_string(why));
		free(why);
		return done;
	}
	jv cost = json_get(res, "cost");
	out->cost_usd = json_get_num(cost, "usd", 0);
	out->tokens = (long)json_get_num(cost, "tokens", 0);
	out->cost_unknown = !json_get_bool(cost, "known", true);
	jv_free(cost);
	done = json_set(done, "status", jv_string(status));
	if (json_get_str(res, "reason"))
		done = json_set(done, "reason", json_get(res, "reason"));
	done = json_set(done, "iterations", json_get(res, "iterations"));
	if (!u->write)
		return done;
	/* Its work is in the worktree this agent made for it: read from
	 * there, not carried on its stdout (before: a diff over the 16 MiB
	 * of a line was dropped with the result, and a helper that had
	 * finished was said to have crashed). */
	if (delegate_diff(diff, u->child_root, u->base) < 0) {
		done = json_set(done, "applied", jv_false());
		return json_set(done, "conflict", jv_string(forge_last_error()));
	}
	done = json_set(done, "files", diff_files(*diff));
	if (strcmp(status, "ok") == 0)
		merge_back(&done, u, *diff);
	else
		done = json_set(done, "applied", jv_false());
	return done;
}

/* subagent.started (common's fields and what it was given), and a line on
 * a terminal.  Consumes common. */
static void announce(struct phase *ph, const struct run *u, jv input, jv common)
{
	jv started = json_set(common, "number", jv_number(u->number));

	started = json_set(started, "task", task_shown(json_get_str(input, "task")));
	started = json_set(started, "mode", jv_string(u->write ? "write" : "read"));
	started = json_set(started, "tools", jv_copy(u->tools));
	started = json_set(started, "budget_usd", u->budget < 0 ? jv_null() : jv_number(u->budget));
	phase_emit(ph, "subagent.started", started);
	const char *task = json_get_str(input, "task");
	size_t shown = task ? term_cut(task, strlen(task), 60) : 0;   /* no character split */

	phase_progress(ph, "%*s↳ sub-agent %d (%s): %.*s", 2 * self.depth, "", u->number,
		       u->write ? "write" : "read", (int)shown, task ? task : "");
}

static int run_delegate(struct agent_tool_outcome *out, struct delegate *d, jv input)
{
	struct phase *ph = d->ph;
	struct run u = { .tools = jv_null() };
	struct child c = { .d = d, .result = jv_null() };
	struct proc_result r;
	long long t0 = monotonic_ms();

	if (prepare(d, &u, input) < 0) {
		char *why = xstrdup(forge_last_error());
		refuse(out, why);
		free(why);
		run_release(&u);
		return 0;
	}
	c.span = u.span;
	jv common = json_set(json_set(jv_object(), "span", jv_string(u.span)), "parent_span",
			     json_str_or_null(self.span));
	common = json_set(common, "depth", jv_number(self.depth + 1));
	announce(ph, &u, input, jv_copy(common));

	bool ran = spawn(&r, &c, task_doc(d, &u, input), u.number) == 0;
	char *diff;
	jv res = c.result, done = how_it_ended(out, &diff, &u, &c, &r, ran, jv_copy(common));
	const char *status = json_get_str(res, "status");

	done = json_set(done, "cost_usd", jv_number(out->cost_usd));
	done = json_set(done, "tokens", jv_number((double)out->tokens));
	done = json_set(done, "duration_ms", jv_number((double)(monotonic_ms() - t0)));
	out->ok = status && strcmp(status, "ok") == 0 && !json_has(done, "conflict");
	out->text = result_text(done, res, diff);
	free(diff);
	out->event = json_set(json_set(jv_object(), "kind", jv_string(out->ok ? "ok" : "failed")),
			      "data", jv_copy(done));
	/* a write that did not apply is said, not shown as a plain "ok" */
	phase_progress(ph, "%*s↳ sub-agent %d %s%s · $%.4f", 2 * self.depth, "", u.number,
		       json_get_str(done, "status"),
		       json_has(done, "conflict") ? ", its changes did not apply (conflict)" : "", out->cost_usd);
	phase_emit(ph, "subagent.completed", json_set(done, "summary", json_get_str(res, "summary")
			   ? json_get(res, "summary") : jv_null()));
	jv_free(res);
	jv_free(common);
	proc_result_release(&r);
	run_release(&u);
	/* a Ctrl-C passed on to it (delegate_interrupt): its calls are
	 * recorded, and this program ends as for its own */
	phase_leave_if_interrupted();
	return 0;
}

static int delegate_exec(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct delegate *d = payload;

	if (strcmp(name, "delegate") != 0)
		return d->exec(out, name, input, d->exec_payload);
	memset(out, 0, sizeof *out);
	out->event = jv_null();
	return run_delegate(out, d, input);
}

/* ---- the hook ------------------------------------------------------------ */

static bool phase_listed(struct phase *ph)
{
	jv phases = config_get(ph->cfg, "agent.subagents.phases");
	bool listed = false;

	jv_array_foreach(phases, i, v) {
		if (jv_get_kind(v) == JV_KIND_STRING && strcmp(jv_string_value(v), ph->spec->name) == 0)
			listed = true;
		jv_free(v);
	}
	jv_free(phases);
	return listed;
}

/* The names of this agent's tools (borrowed) that its phase's policy
 * allows outright: a denied tool is one it lacks, and an ask tool needs a
 * human this agent must ask itself (toolset.h) -- a helper gets neither. */
static jv tool_names(struct phase *ph, jv tools)
{
	jv names = jv_array();

	jv_array_foreach(tools, i, t) {
		const char *name = json_get_str(t, "name");
		if (name && toolset_permission(ph->cfg, phase_policy_name(ph), name, true, NULL) == TOOL_ALLOW)
			names = jv_array_append(names, jv_string(name));
		jv_free(t);
	}
	return names;
}

void delegate_hook(struct delegate *d, struct phase *ph, struct agent_config *cfg,
		   const struct agent_result *live, agent_exec_fn *exec, void **payload)
{
	memset(d, 0, sizeof *d);
	d->tools = jv_null();
	if (!config_get_bool(ph->cfg, "agent.subagents.enabled") || !(self.child || phase_listed(ph)) ||
	    jv_get_kind(cfg->tools) != JV_KIND_ARRAY)
		return;
	d->lim.max_depth = (int)config_get_num(ph->cfg, "agent.subagents.max_depth");
	d->lim.max_count = (int)config_get_num(ph->cfg, "agent.subagents.max_count");
	d->lim.budget_share_max = config_get_num(ph->cfg, "agent.subagents.budget_share_max");
	d->ph = ph;
	d->exec = *exec;
	d->exec_payload = *payload;
	d->live = live;
	/* what this run of the loop may spend: the lower limit less what the
	 * phase's earlier runs spent (d->live counts this run's) */
	d->limit_usd = cfg->max_cost_usd >= 0 ? cfg->max_cost_usd : -1;
	if (cfg->budget_remaining_usd >= 0 && (d->limit_usd < 0 || cfg->budget_remaining_usd < d->limit_usd))
		d->limit_usd = cfg->budget_remaining_usd;
	if (d->limit_usd >= 0)
		d->limit_usd = fmax(0, d->limit_usd - cfg->spent_usd);
	d->deadline_ms = cfg->max_time_ms > 0 ? monotonic_ms() + cfg->max_time_ms - cfg->spent_ms : 0;
	d->tools = tool_names(ph, cfg->tools);
	/* A sub-agent below the deepest level, or one not given delegate, is
	 * not offered it; a call is still answered, with the reason. */
	d->offered = delegate_may_nest(&d->lim, self.depth) && (!self.child || self.may_delegate);
	if (d->offered) {
		cfg->tools = jv_array_append(cfg->tools, tool_spec(&(struct tool){ "delegate", "tools/delegate.json",
									     false, NULL }, jv_null()));
		d->tools = jv_array_append(d->tools, jv_string("delegate"));
	}
	*exec = delegate_exec;
	*payload = d;
}

void delegate_unhook(struct delegate *d)
{
	jv_free(d->tools);
	d->tools = jv_null();
}
