/*
 * runview.c - one run as a person looks at it afterwards (runview.h).
 */
#include "app/runview.h"
#include "app/term.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/money.h"
#include "core/ids.h"
#include "data/config.h"
#include "engine/gates.h"
#include "git/git.h"
#include "llm/llm.h"
#include "store/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int runview_resolve(char **out, struct store *st, const char *prog, const char *typed)
{
	int rc = store_resolve_trace(out, st, typed);

	if (rc == 0)
		return FORGE_EXIT_OK;
	/* (a command typed in a repository nothing was recorded in: where the
	 * run's database is, said; before: only "no run matches") */
	if (rc > 0 && store_absent(st))
		fprintf(stderr, "%s: %s: the database it was looked for in does not exist (nothing has been "
			"recorded there); cd to the repository the run was made in (or use --repo DIR), or "
			"name its database with --db PATH or FORGE_DB\n", prog, forge_last_error());
	else
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
	return rc < 0 ? FORGE_EXIT_DEPENDENCY : FORGE_EXIT_USAGE;
}

void runview_refs(char **branch, char **base, struct store *st, const char *trace)
{
	jv cp = jv_null(), task;
	struct buf b = BUF_INIT;
	char name[FORGE_GIT_RUN_NAME_SIZE];

	store_checkpoint_latest(&cp, st, trace);
	task = json_get(cp, "task");
	if (json_get_str(task, "branch"))
		buf_adds(&b, json_get_str(task, "branch"));
	else if (forge_git_run_name(name, trace) == 0)
		buf_addf(&b, "forge/%s", name);
	else
		buf_addf(&b, "forge/%s", trace);	/* (not a trace id: a branch by that name, if any) */
	*branch = buf_detach(&b, NULL);
	*base = json_get_str(task, "base_commit") ? xstrdup(json_get_str(task, "base_commit")) : NULL;
	jv_free(task);
	jv_free(cp);
}

int runview_saved_list(jv *out, struct store *st, struct forge_git *g, const char *trace)
{
	char *branch = NULL, *base = NULL, *tip = NULL;
	struct buf ref = BUF_INIT;
	int rc = 0;

	*out = jv_array();
	if (g) {
		runview_refs(&branch, &base, st, trace);
		buf_addf(&ref, "refs/heads/%s", branch);
		if (forge_git_resolve(&tip, g, ref.buf) < 0 && base)
			tip = xstrdup(base);
		if (tip) {
			jv_free(*out);
			if ((rc = forge_git_run_saved(out, g, trace, tip)) < 0)
				*out = jv_array();
		}
	}
	free(tip);
	free(branch);
	free(base);
	buf_release(&ref);
	return rc;
}

jv runview_saved(struct store *st, struct forge_git *g, const char *trace)
{
	jv list;

	runview_saved_list(&list, st, g, trace);
	return list;
}

void runview_saved_text(struct buf *out, jv saved)
{
	jv files = json_get(saved, "files");
	long add = 0, del = 0;
	int n = jv_get_kind(files) == JV_KIND_ARRAY ? jv_array_length(jv_copy(files)) : 0;
	struct buf names = BUF_INIT;

	for (int i = 0; i < n; i++) {
		jv f = jv_array_get(jv_copy(files), i);

		add += (long)json_get_num(f, "additions", 0);
		del += (long)json_get_num(f, "deletions", 0);
		if (i < 3) {
			buf_adds(&names, i ? ", " : "");
			json_path_add_shown(&names, json_get_str(f, "path"));
		}
		jv_free(f);
	}
	buf_addf(out, "%s (%d file%s, +%ld -%ld: %s%s): git diff %.12s %s shows it", json_get_str(saved, "ref"), n,
		 n == 1 ? "" : "s", add, del, names.buf, n > 3 ? ", …" : "", json_get_str(saved, "from"),
		 json_get_str(saved, "ref"));
	buf_release(&names);
	jv_free(files);
}

bool runview_mergeable(struct store *st, const char *trace)
{
	jv run = jv_null(), cp = jv_null(), d;
	bool yes = false;

	store_run_get(&run, st, trace);
	enum run_status s = run_status_of(json_get_str(run, "status"));
	if (s == RUN_COMPLETED) {
		yes = true;
	} else if (s == RUN_FAILED && store_checkpoint_latest(&cp, st, trace) == 0) {
		/* a refused landing is not a failed change: the rejection is the
		 * deploy's own "no" (a git failure is "failed") */
		d = json_get(cp, "deployment");
		yes = json_get_str(cp, "phase") && strcmp(json_get_str(cp, "phase"), "deploy") == 0 &&
		      json_get_str(cp, "status") && strcmp(json_get_str(cp, "status"), "rejected") == 0 &&
		      json_get_str(d, "strategy") && strcmp(json_get_str(d, "strategy"), "merge") == 0;
		jv_free(d);
	}
	jv_free(run);
	jv_free(cp);
	return yes;
}

bool runview_pipeline(struct store *st, const char *trace)
{
	jv run = jv_null();
	bool yes = store_run_get(&run, st, trace) == 0 && jv_get_kind(run) != JV_KIND_OBJECT;

	jv_free(run);
	return yes;
}

void runview_not_a_run(struct buf *out, const char *trace)
{
	buf_addf(out, "%s is not a forge run: phases run by hand (a shell pipeline) made that trace; "
		 "forge show %s says what is left of it", trace, trace);
}

jv runview_pipeline_place(struct forge_git *g, const char *trace)
{
	char name[FORGE_GIT_RUN_NAME_SIZE];
	char *sha = NULL;
	jv place = jv_object(), wts = jv_null(), wt;
	struct buf branch = BUF_INIT;

	if (!g || forge_git_run_name(name, trace) < 0)
		goto out;
	buf_addf(&branch, "forge/%s", name);
	if (forge_git_resolve(&sha, g, branch.buf) == 0)
		place = json_set(place, "branch", jv_string(branch.buf));
	free(sha);
	buf_reset(&branch);
	buf_addf(&branch, "refs/forge/%s/base", name);
	if (forge_git_resolve(&sha, g, branch.buf) == 0)
		place = json_set(place, "kept_ref", jv_string(branch.buf));
	if (forge_git_worktree_list(&wts, g, trace) == 0 && jv_array_length(jv_copy(wts)) > 0) {
		wt = jv_array_get(jv_copy(wts), 0);
		if (json_get_str(wt, "path"))
			place = json_set(place, "worktree", json_get(wt, "path"));
		jv_free(wt);
	}
out:
	jv_free(wts);
	free(sha);
	buf_release(&branch);
	return place;
}

/* ---- from the events ------------------------------------------------- */

struct walk {
	jv phase_cost;      /* {"plan": {"usd","tokens","calls"}, ...} */
	jv order;           /* phase names in the order first seen */
	jv timeline;
	jv subagents;       /* [{span, ...}] in the order started */
};

/* ---- sub-agents (app/delegate.h) --------------------------------------- */

/* subagent.started adds one; subagent.completed fills in how it ended. */
static void add_subagent(jv *list, const char *type, const char *phase, jv ev, jv p)
{
	const char *span = json_get_str(p, "span");
	static const char *const ended[] = { "status", "reason", "summary", "cost_usd", "tokens", "iterations",
					     "duration_ms", "applied", "conflict", "files" };

	if (!span)
		return;
	if (!strcmp(type, "subagent.started")) {
		jv a = json_set(jv_object(), "span", jv_string(span));
		a = json_set(a, "parent_span", json_get(p, "parent_span"));
		a = json_set(a, "phase", jv_string(phase));
		static const char *const begun[] = { "depth", "number", "task", "mode", "tools", "budget_usd" };
		for (size_t i = 0; i < sizeof begun / sizeof *begun; i++)
			a = json_set(a, begun[i], json_get(p, begun[i]));
		a = json_set(a, "started_at", json_get(ev, "ts"));
		*list = jv_array_append(*list, json_set(a, "status", jv_string("running")));
		return;
	}
	jv_array_foreach(*list, i, a) {
		const char *s = json_get_str(a, "span");
		if (s && !strcmp(s, span)) {
			for (size_t k = 0; k < sizeof ended / sizeof *ended; k++)
				if (json_has(p, ended[k]))
					a = json_set(a, ended[k], json_get(p, ended[k]));
			*list = jv_array_set(*list, i, jv_copy(a));
		}
		jv_free(a);
	}
}

static int on_subagent_event(const char *line, size_t len, void *payload)
{
	jv *list = payload;
	jv ev;

	if (!memmem(line, len, "\"subagent.", 10))
		return 0;
	ev = jv_parse_sized(line, (int)len);
	const char *type = json_get_str(ev, "type");
	if (type && !strncmp(type, "subagent.", 9)) {
		jv p = json_get(ev, "payload");
		add_subagent(list, type, json_get_str(ev, "phase") ? json_get_str(ev, "phase") : "run", ev, p);
		jv_free(p);
	}
	jv_free(ev);
	return 0;
}

int runview_subagents(jv *out, struct store *st, const char *trace)
{
	*out = jv_array();
	if (store_events_foreach(st, trace, on_subagent_event, out) < 0) {
		jv_free(*out);
		*out = jv_null();
		return -1;
	}
	return 0;
}

/* The last 8 characters of a's span: a ULID's random part (its first ones
 * are the time, the same as the run's trace id). */
static const char *span_tail(jv a)
{
	const char *span = json_get_str(a, "span");
	size_t n = span ? strlen(span) : 0;

	return n > 8 ? span + n - 8 : span ? span : "?";
}

/* The sub-agents whose parent is `parent` (NULL: the phase's agent) in
 * `phase`, and theirs below them. */
static void tree_level(struct buf *out, jv list, const char *phase, const char *parent, int depth)
{
	jv_array_foreach(list, i, a) {
		const char *ps = json_get_str(a, "parent_span"), *ph = json_get_str(a, "phase");
		bool mine = ph && !strcmp(ph, phase) && (parent ? ps && !strcmp(ps, parent) : !ps);
		if (mine) {
			char usd[MONEY_LEN];
			struct buf row = BUF_INIT;

			buf_addf(&row, "  %*s└ %-8s $%s  %-5s %.8s  %s", 2 * depth, "",
				 json_get_str(a, "status") ? json_get_str(a, "status") : "?",
				 money_fmt(usd, sizeof usd, json_get_num(a, "cost_usd", 0)),
				 json_get_str(a, "mode") ? json_get_str(a, "mode") : "?", span_tail(a),
				 json_get_str(a, "task") ? json_get_str(a, "task") : "");
			/* the task is the model's words: one line, without its
			 * escape sequences (before: an OSC set the terminal's
			 * title, a newline broke the tree) */
			term_clean_line(row.buf, row.len);
			buf_add(out, row.buf, row.len);
			buf_addch(out, '\n');
			buf_release(&row);
			tree_level(out, list, phase, json_get_str(a, "span"), depth + 1);
		}
		jv_free(a);
	}
}

void runview_subagent_tree(struct buf *out, jv list)
{
	jv phases = jv_array();

	jv_array_foreach(list, i, a) {
		const char *ph = json_get_str(a, "phase");
		bool seen = false;
		jv_array_foreach(phases, k, p) {
			seen = seen || (ph && !strcmp(jv_string_value(p), ph));
			jv_free(p);
		}
		if (ph && !seen)
			phases = jv_array_append(phases, jv_string(ph));
		jv_free(a);
	}
	jv_array_foreach(phases, i, p) {
		size_t from = out->len;

		buf_addf(out, "  %s", jv_string_value(p));
		term_clean_line(out->buf + from, out->len - from);
		buf_addch(out, '\n');
		tree_level(out, list, jv_string_value(p), NULL, 1);
		jv_free(p);
	}
	jv_free(phases);
}

/* Onto phase's cost, cost's usd and tokens (borrowed) in calls calls. */
static void add_phase_cost(struct walk *w, const char *phase, jv cost, double calls)
{
	jv pc = json_get(w->phase_cost, phase);

	if (jv_get_kind(pc) != JV_KIND_OBJECT) {
		jv_free(pc);
		pc = jv_object();
		w->order = jv_array_append(w->order, jv_string(phase));
	}
	pc = json_set(pc, "usd", jv_number(json_get_num(pc, "usd", 0) + json_get_num(cost, "usd", 0)));
	pc = json_set(pc, "tokens", jv_number(json_get_num(pc, "tokens", 0) + json_get_num(cost, "tokens", 0)));
	pc = json_set(pc, "calls", jv_number(json_get_num(pc, "calls", 0) + calls));
	w->phase_cost = json_set(w->phase_cost, phase, pc);
}

static void add_cost(struct walk *w, const char *phase, jv ev)
{
	jv cost = json_get(ev, "cost");

	if (jv_get_kind(cost) == JV_KIND_OBJECT)
		add_phase_cost(w, phase, cost, 1);
	jv_free(cost);
}

/* A resume's run.cost_recovered (payload p): the calls the model-call log
 * held without their llm.called event, to the phases whose they were
 * (app/supervise.c): the run's total counts them, so its phases do. */
static void add_recovered(struct walk *w, jv p)
{
	jv phases = json_get(p, "phases");

	if (jv_get_kind(phases) == JV_KIND_OBJECT) {
		jv_object_foreach(phases, k, v) {
			add_phase_cost(w, jv_string_value(k), v, json_get_num(v, "calls", 0));
			jv_free(k);
			jv_free(v);
		}
	}
	jv_free(phases);
}

static const char *str_or(jv v, const char *key, const char *dflt)
{
	const char *s = json_get_str(v, key);
	return s ? s : dflt;
}

/* The line of the timeline for ev (type, payload p), or false to leave it out. */
static bool describe(struct buf *t, const char *type, const char *phase, jv ev, jv p)
{
	if (!strcmp(type, "run.started"))
		buf_addf(t, "run started: %s", str_or(p, "task", ""));
	else if (!strcmp(type, "phase.started"))
		buf_addf(t, "%s started", phase);
	else if (!strcmp(type, "phase.completed"))
		buf_addf(t, "%s %s in %.0f ms: %s", phase, str_or(p, "status", "?"),
			 json_get_num(p, "duration_ms", 0), str_or(p, "reason", ""));
	else if (!strcmp(type, "llm.called")) {
		jv cost = json_get(ev, "cost");
		double cached = json_get_num(p, "cache_read_tokens", 0), written = json_get_num(p, "cache_write_tokens", 0);
		char usd[MONEY_LEN];

		buf_addf(t, "model %s: %.0f in + %.0f out", str_or(p, "model", "?"),
			 json_get_num(p, "input_tokens", 0), json_get_num(p, "output_tokens", 0));
		/* (the cache's tokens are in the price: shown, so it adds up) */
		if (cached > 0)
			buf_addf(t, " + %.0f cache read", cached);
		if (written > 0)
			buf_addf(t, " + %.0f cache write", written);
		buf_addf(t, " tokens, $%s", money_fmt(usd, sizeof usd, json_get_num(cost, "usd", 0)));
		jv_free(cost);
	}
	else if (!strncmp(type, "gate.", 5))
		buf_addf(t, "gate %s %s%s%s", str_or(p, "gate", "?"), type + 5,
			 json_get_str(p, "by") ? " by " : "", str_or(p, "by", ""));
	else if (!strcmp(type, "loop.phase_bounce"))
		buf_addf(t, "bounce %s -> %s: %s", str_or(p, "from", "?"), str_or(p, "to", "?"),
			 str_or(p, "reason", ""));
	else if (!strcmp(type, "breaker.tripped"))
		buf_addf(t, "breaker %s tripped: %s", str_or(p, "breaker", "?"), str_or(p, "reason", ""));
	else if (!strcmp(type, "run.completed") || !strcmp(type, "run.paused") ||
		 !strcmp(type, "run.cancelled") || !strcmp(type, "run.failed"))
		/* (run.completed ends a run that failed too: its status says which) */
		buf_addf(t, "run %s%s%s", !strcmp(type, "run.completed") && json_get_str(p, "status")
			 ? json_get_str(p, "status") : type + 4,
			 json_get_str(p, "reason") ? ": " : "", str_or(p, "reason", ""));
	else if (!strcmp(type, "run.merged"))
		buf_addf(t, "merged into %s at %.12s", str_or(p, "branch", "?"), str_or(p, "commit", "?"));
	else if (!strcmp(type, "run.merge_conflict"))
		buf_addf(t, "merge into %s refused: %s", str_or(p, "branch", "?"), str_or(p, "reason", "?"));
	else
		return false;
	return true;
}

static int on_event(const char *line, size_t len, void *payload)
{
	struct walk *w = payload;
	jv ev = jv_parse_sized(line, (int)len), p;
	const char *type, *phase;
	struct buf text = BUF_INIT;

	if (jv_get_kind(ev) != JV_KIND_OBJECT) {
		jv_free(ev);
		return 0;
	}
	type = str_or(ev, "type", "");
	phase = str_or(ev, "phase", "run");
	p = json_get(ev, "payload");
	add_cost(w, phase, ev);
	if (!strcmp(type, "run.cost_recovered"))
		add_recovered(w, p);
	if (!strncmp(type, "subagent.", 9))
		add_subagent(&w->subagents, type, phase, ev, p);
	if (describe(&text, type, phase, ev, p)) {
		jv e = json_set(jv_object(), "ts", json_get(ev, "ts"));
		e = json_set(e, "phase", jv_string(phase));
		e = json_set(e, "type", jv_string(type));
		w->timeline = jv_array_append(w->timeline, json_set(e, "text", jv_string(text.buf)));
	}
	buf_release(&text);
	jv_free(p);
	jv_free(ev);
	return 0;
}

static jv phase_cost_list(struct walk *w)
{
	jv list = jv_array();

	jv_array_foreach(w->order, i, name) {
		jv pc = json_get(w->phase_cost, jv_string_value(name));
		list = jv_array_append(list, json_set(pc, "phase", jv_copy(name)));
		jv_free(name);
	}
	return list;
}

/* ---- the diff -------------------------------------------------------- */

static jv diff_of(struct store *st, struct forge_git *g, const char *trace, jv state, bool with_patch)
{
	char *branch = NULL, *base = NULL, *patch = NULL, *head = NULL;
	jv files = jv_invalid(), d = jv_null(), ch = json_get(state, "changes");

	runview_refs(&branch, &base, st, trace);
	/* no checkpoint (a trace of phases run by hand): the base ref that
	 * forge-implement kept, refs/forge/NAME/base */
	char name[FORGE_GIT_RUN_NAME_SIZE];
	if (g && !base && forge_git_run_name(name, trace) == 0) {
		struct buf ref = BUF_INIT;

		buf_addf(&ref, "refs/forge/%s/base", name);
		if (forge_git_resolve(&base, g, ref.buf) < 0)
			base = NULL;
		buf_release(&ref);
	}
	if (g && base && forge_git_resolve(&head, g, branch) == 0 &&
	    forge_git_diff_revs(with_patch ? &patch : NULL, &files, g, base, head) == 0) {
		d = json_set(json_set(jv_object(), "from", jv_string("git")), "base", jv_string(base));
		d = json_set(json_set(d, "head", jv_string(head)), "files", files);
		if (with_patch)
			d = json_set(d, "patch", jv_string(patch));
	} else if (json_get_str(ch, "commit")) {
		d = json_set(json_set(jv_object(), "from", jv_string("checkpoint")), "base", json_get(ch, "base_commit"));
		d = json_set(json_set(d, "head", json_get(ch, "commit")), "files", json_get(ch, "files"));
		if (with_patch)
			d = json_set(d, "patch", json_get_str(ch, "diff") ? json_get(ch, "diff") : jv_string(""));
	}
	jv_free(ch);
	free(branch);
	free(base);
	free(patch);
	free(head);
	return d;
}

jv runview_removed(struct forge_git *g, jv task)
{
	const char *branch = json_get_str(task, "branch"), *wt = json_get_str(task, "worktree");
	struct buf ref = BUF_INIT;
	struct stat sb;
	char *tip = NULL;
	bool branch_gone = false;

	if (g && branch && *branch) {
		buf_addf(&ref, "refs/heads/%s", branch);
		branch_gone = forge_git_resolve(&tip, g, ref.buf) < 0;
	}
	free(tip);
	buf_release(&ref);
	return json_set(json_set(jv_object(), "branch", jv_bool(branch_gone)), "worktree",
			jv_bool(wt && *wt && (stat(wt, &sb) < 0 || !S_ISDIR(sb.st_mode))));
}

/* ---- the whole view -------------------------------------------------- */

jv runview_shown(struct store *st, jv run)
{
	enum run_status s = run_status_of(json_get_str(run, "status"));
	jv lease;

	if (s != RUN_RUNNING && s != RUN_PENDING)
		return run;
	/* no lease at all (null) is as dead as a dead holder's */
	if (store_lease_get(&lease, st, json_get_str(run, "trace_id")) == 0 && !json_get_bool(lease, "alive", false))
		run = json_set(run, "status", jv_string("interrupted"));
	jv_free(lease);
	return run;
}

/* Whether key (borrowed, a string) names money: "usd" or "..._usd". */
static bool money_key(jv key)
{
	const char *k = jv_string_value(key);
	size_t n = strlen(k);

	return strcmp(k, "usd") == 0 || (n > 4 && strcmp(k + n - 4, "_usd") == 0);
}

/* See runview.h. */
jv runview_money(jv v)
{
	if (jv_get_kind(v) == JV_KIND_ARRAY) {
		jv out = jv_array();

		jv_array_foreach(v, i, e) {
			out = jv_array_append(out, runview_money(e));
			(void)i;
		}
		jv_free(v);
		return out;
	}
	if (jv_get_kind(v) != JV_KIND_OBJECT)
		return v;
	jv out = jv_object();

	jv_object_foreach(v, k, e) {
		if (jv_get_kind(e) == JV_KIND_NUMBER && money_key(k))
			e = (jv_free(e), jv_number(money_round(jv_number_value(e))));
		else
			e = runview_money(e);
		out = jv_object_set(out, k, e);
	}
	jv_free(v);
	return out;
}

/*
 * What the run has spent: its checkpoint's cost (consumed), or the run row's
 * totals (borrowed; what llm_calls holds, store_run_get) where they are
 * more: the calls a killed run made after its last checkpoint are in the
 * log, not in any state (before: forge show's total was less than its own
 * per-phase figures until forge resume counted them).
 */
static jv spent(jv cost, jv run)
{
	double usd = json_get_num(run, "total_cost_usd", 0), tokens = json_get_num(run, "total_tokens", 0);

	if (jv_get_kind(cost) != JV_KIND_OBJECT) {
		if (usd <= 0 && tokens <= 0)
			return cost;
		cost = (jv_free(cost), jv_object());
	}
	if (usd > json_get_num(cost, "usd", 0))
		cost = json_set(cost, "usd", jv_number(usd));
	if (tokens > json_get_num(cost, "tokens", 0))
		cost = json_set(cost, "tokens", jv_number(tokens));
	return cost;
}

int runview_load(jv *out, struct store *st, struct forge_git *g, const char *trace, bool with_patch)
{
	jv run = jv_null(), cp = jv_null(), merged = jv_null(), gates = jv_null(), v;
	struct walk w = { jv_object(), jv_array(), jv_array(), jv_array() };
	static const char *const from_state[] = { "task", "plan", "review", "tests", "deployment", "bounces", "cost" };
	int rc = -1;

	*out = jv_null();
	if (store_run_get(&run, st, trace) < 0 || store_checkpoint_latest(&cp, st, trace) < 0 ||
	    store_event_last(&merged, st, trace, "run.merged") < 0 || gate_list(&gates, st, trace, false) < 0 ||
	    store_events_foreach(st, trace, on_event, &w) < 0)
		goto out;
	if (jv_get_kind(run) == JV_KIND_OBJECT)
		run = runview_shown(st, json_set(run, "config", jv_null()));
	v = json_set(jv_object(), "trace_id", jv_string(trace));
	v = json_set(v, "run", jv_copy(run));
	/* (no run row: a trace of phases run by hand, a shell pipeline,
	 * whose branch and worktree only git knows) */
	bool pipeline = jv_get_kind(run) != JV_KIND_OBJECT;
	v = json_set(v, "status", jv_get_kind(merged) == JV_KIND_OBJECT ? jv_string("merged") :
		     json_get_str(run, "status") ? json_get(run, "status") :
		     jv_string(pipeline ? "pipeline" : "unknown"));
	v = json_set(v, "pipeline", jv_bool(pipeline));
	v = json_set(v, "merged", json_get(merged, "payload"));
	for (size_t i = 0; i < sizeof from_state / sizeof *from_state; i++)
		v = json_set(v, from_state[i], json_get(cp, from_state[i]));
	if (pipeline && jv_get_kind(cp) != JV_KIND_OBJECT)
		v = json_set(v, "task", runview_pipeline_place(g, trace));
	v = json_set(v, "cost", spent(json_get(cp, "cost"), run));
	v = json_set(v, "diff", diff_of(st, g, trace, cp, with_patch));
	jv task = json_get(v, "task"), started = jv_null();
	v = json_set(v, "removed", runview_removed(g, task));
	v = json_set(v, "saved", runview_saved(st, g, trace));
	jv_free(task);
	store_event_last(&started, st, trace, "run.started");
	jv dry = json_get_path(started, "payload.dry_run");
	v = json_set(v, "dry_run", jv_bool(jv_get_kind(dry) == JV_KIND_TRUE));
	jv_free(dry);
	jv_free(started);
	v = json_set(v, "phase_cost", phase_cost_list(&w));
	v = json_set(v, "timeline", jv_copy(w.timeline));
	v = json_set(v, "subagents", jv_copy(w.subagents));
	/* (money rounded as it is printed: a sum without its float noise) */
	*out = runview_money(json_set(v, "gates", jv_copy(gates)));
	rc = 0;
out:
	jv_free(run);
	jv_free(cp);
	jv_free(merged);
	jv_free(gates);
	jv_free(w.phase_cost);
	jv_free(w.order);
	jv_free(w.timeline);
	jv_free(w.subagents);
	return rc;
}

/* ---- what to do next ------------------------------------------------- */

/* Whether the checkpoint's run has spent its own budget (budget.usd,
 * --budget): then nothing more starts until it is given more. */
static bool budget_spent(jv cp /* borrowed */)
{
	jv budget = json_get(cp, "budget"), cost = json_get(cp, "cost");
	double allowed = json_get_num(budget, "usd", -1);
	bool spent = allowed >= 0 && json_get_num(cost, "usd", 0) >= allowed;

	jv_free(budget);
	jv_free(cost);
	return spent;
}

/* x rounded up to two significant digits (0.0341 -> 0.035): a value a
 * person reads and types as it is. */
static double round_up_2sig(double x)
{
	if (!(x > 0) || !isfinite(x))
		return x;
	double unit = pow(10, floor(log10(x)) - 1);

	return ceil(x / unit - 1e-9) * unit;
}

/*
 * The limit whose breaker ended the run: its configuration key into key
 * (n bytes) and what the breaker measured against it into *spent (money or
 * seconds; 0 when not said; for safety.cost.per_day what the model calls of
 * every run cost today, read from st now); false when the run did not end at a limit a
 * higher value lets go on (no breaker, the run's own --budget, the error
 * rate: a resume starts its window afresh).  trip is the run's newest
 * breaker.tripped event, cp its checkpoint, cfg the configuration (NULL:
 * unknown; all borrowed); the event counts only when the run's reason is
 * its reason (a breaker a resume got past says nothing now).
 */
static bool tripped_limit(char *key, size_t n, double *spent, struct store *st, jv run, jv trip, jv cp,
			  const struct config *cfg)
{
	double today;
	jv p = json_get(trip, "payload");
	const char *error = json_get_str(run, "error"), *reason = json_get_str(p, "reason");
	const char *breaker = json_get_str(p, "breaker"), *phase = json_get_str(trip, "phase");
	bool found = false;

	*spent = 0;
	if (!error || !reason || !*reason || !breaker || !strstr(error, reason))
		goto out;
	if (!phase) {		/* a run-level breaker (app/supervise.c sup_breaker) */
		const char *k = !strcmp(breaker, "cost_per_run") ? "safety.cost.per_run" :
				!strcmp(breaker, "cost_per_day") ? "safety.cost.per_day" :
				!strcmp(breaker, "time") ? "safety.time_s.total" : NULL;
		if (k) {
			snprintf(key, n, "%s", k);
			*spent = json_get_num(run, "total_cost_usd", 0);
			/* per_day is what every run's calls cost today, as the
			 * breaker reads it now (before: this run's alone, and the
			 * limit so raised tripped at once again, hunt68 #3b) */
			if (!strcmp(k, "safety.cost.per_day") && store_cost_today(&today, st) == 0)
				*spent = fmax(*spent, today);
			found = true;
		}
		goto out;
	}
	/* a phase's own (lib/agent/agent.c: its reason names the key) */
	if (!strcmp(breaker, "cost")) {
		snprintf(key, n, "safety.cost.per_phase.%s", phase);
		*spent = json_get_num(p, "cost_usd", 0);
		found = strstr(reason, key) != NULL;
		/* its share of what the run may spend (app/phase.c): the run's
		 * limit, unless the run's own budget is the lower (then
		 * budget_spent() or --budget is the way) */
		jv budget = json_get(cp, "budget");
		bool by_budget = json_has(budget, "usd") &&
				 (!cfg || json_get_num(budget, "usd", 0) < config_get_num(cfg, "safety.cost.per_run"));

		jv_free(budget);
		if (!found && !by_budget && strstr(reason, "safety.cost.per_run")) {
			snprintf(key, n, "safety.cost.per_run");
			*spent = json_get_num(run, "total_cost_usd", 0);
			found = true;
			/* of the run's and the day's limits, the one with less
			 * left (before: per_run always, whose raise left the
			 * day's limit where it was: the same trip again) */
			if (cfg && strstr(reason, "safety.cost.per_day") && store_cost_today(&today, st) == 0 &&
			    config_get_num(cfg, "safety.cost.per_day") - today <
				    config_get_num(cfg, "safety.cost.per_run") - *spent) {
				snprintf(key, n, "safety.cost.per_day");
				*spent = today;
			}
		}
	} else if (!strcmp(breaker, "time")) {
		if (strstr(reason, "safety.time_s.total"))
			snprintf(key, n, "safety.time_s.total");
		else
			snprintf(key, n, "safety.time_s.%s", phase);
		found = true;
	}
out:
	jv_free(p);
	return found;
}

/* {"a":{"b":VALUE}} for the dotted key "a.b", as text into b (VALUE as
 * printed: jq 1.6 would print 0.035 as 0.035000000000000003). */
static void nested_for(struct buf *b, const char *key, const char *value)
{
	int depth = 0;

	for (const char *p = key; *p; depth++) {
		size_t n = strcspn(p, ".");

		buf_addf(b, "{\"%.*s\":", (int)n, p);
		p += n + (p[n] == '.');
	}
	buf_adds(b, value);
	while (depth-- > 0)
		buf_addch(b, '}');
}

/*
 * "forge config set [--global] KEY VALUE && forge resume TRACE" for the
 * limit key that stopped the run: the value raised (twice the limit, and
 * past what was spent), in the file a raise holds in -- the repository's
 * when it set the limit, else the user's (a repository may not raise a
 * limit above the user's or the built-in one, config.h).  A limit the
 * run's own --config set (recorded, a JSON object: runview_config_layer,
 * which a resume layers over both files) is raised by a resume's --config
 * instead: a file written by the advice itself.
 */
static void raise_limit(struct buf *cmd, struct buf *why, const struct config *cfg, jv recorded,
			const char *key, double spent, const char *trace)
{
	const char *layer = NULL, *source = NULL;
	jv mine = json_get_path(recorded, key);
	bool by_run = jv_get_kind(mine) == JV_KIND_NUMBER;
	double limit = by_run ? jv_number_value(mine) : cfg ? config_get_num(cfg, key) : 0;
	double to = 2 * limit + spent;
	bool project = !by_run && cfg && config_leaf_layer(cfg, key, &layer, &source) == 0 && layer &&
		       !strcmp(layer, "project");
	char value[64];

	jv_free(mine);
	if (!(to > 0))
		to = 2 * spent;
	snprintf(value, sizeof value, "%g", round_up_2sig(to));
	if (by_run) {
		struct buf text = BUF_INIT;

		nested_for(&text, key, value);
		buf_addf(cmd, "echo '%s' >\"${TMPDIR:-/tmp}/forge-raise.json\" && "
			 "forge resume --config \"${TMPDIR:-/tmp}/forge-raise.json\" %s", text.buf, trace);
		buf_release(&text);
	} else {
		buf_addf(cmd, "forge config set %s%s %s && forge resume %s", project ? "" : "--global ", key, value,
			 trace);
	}
	buf_addf(why, "the limit %s (%g%s) stopped the run", key, limit, by_run ? ", from the run's --config" : "");
	if (!strcmp(key, "safety.cost.per_day"))
		buf_addf(why, " (the model calls of every run have cost $%.4f today)", spent);
	buf_addf(why, ": a resume as it is stops there again; raise it (to %s here, or what you choose) first", value);
}

/* Whether something of the run is left for forge gc: a worktree or a
 * ref of it in the repository (as forge gc finds them; g NULL: it cannot
 * be told, so yes). */
static bool left_to_remove(struct forge_git *g, const char *trace)
{
	jv wts = jv_null(), refs = jv_null();
	bool left = !g || forge_git_worktree_list(&wts, g, trace) < 0 || forge_git_run_refs(&refs, g, trace) < 0 ||
		    jv_array_length(jv_copy(wts)) > 0 || jv_array_length(jv_copy(refs)) > 0;

	jv_free(wts);
	jv_free(refs);
	return left;
}

/* runview_next() of a no-change run whose saved refs hold work its branch
 * lacks (runview_saved): the first one's diff, and why; false when none. */
static bool saved_next(struct buf *out, struct buf *why, struct store *st, struct forge_git *g,
		       const char *trace)
{
	jv saved = runview_saved(st, g, trace);
	int n = jv_array_length(jv_copy(saved));

	if (n > 0) {
		jv first = jv_array_get(jv_copy(saved), 0);

		buf_addf(out, "git diff %.12s %s", json_get_str(first, "from"), json_get_str(first, "ref"));
		buf_adds(why, "the run made no change, but work saved from an interrupted attempt is kept on ");
		jv_array_foreach(saved, i, e) {
			buf_adds(why, i ? "; " : "");
			runview_saved_text(why, e);
			jv_free(e);
		}
		buf_addf(why, ". forge gc keeps the run while %s there (git update-ref -d REF lets it go)",
			 n == 1 ? "it is" : "they are");
		jv_free(first);
	}
	jv_free(saved);
	return n > 0;
}

bool runview_lease_until(char *out, size_t n, jv lease)
{
	const char *at = json_get_str(lease, "seen_at");
	int64_t ms;

	/* (a holder of this host lives until it stops: no time; one of
	 * another host not seen yet has its TTL from the first look) */
	if (!json_get_bool(lease, "alive", false) || store_lease_local(lease) || !at ||
	    timestamp_parse(&ms, at) < 0)
		return false;
	time_t t = (time_t)(ms / 1000 + (int64_t)STORE_LEASE_TTL_S + 1);
	struct tm local;

	localtime_r(&t, &local);
	strftime(out, n, "%H:%M:%S", &local);
	return true;
}

void runview_next(struct buf *out, struct buf *why, struct store *st, struct forge_git *g,
		  const struct config *cfg, const char *trace)
{
	jv run = jv_null(), cp = jv_null(), merged = jv_null(), gates = jv_null(), rejected = jv_null();
	jv trip = jv_null(), lease = jv_null(), conflict = jv_null();
	char key[128], when[32];
	double spent = 0;

	store_run_get(&run, st, trace);
	store_checkpoint_latest(&cp, st, trace);
	store_event_last(&merged, st, trace, "run.merged");
	store_event_last(&rejected, st, trace, "gate.rejected");
	store_event_last(&trip, st, trace, "breaker.tripped");
	store_event_last(&conflict, st, trace, "run.merge_conflict");
	gate_list(&gates, st, trace, true);
	enum run_status s = run_status_of(json_get_str(run, "status"));
	jv commit = json_get_path(cp, "changes.commit");
	jv files = json_get_path(cp, "changes.files");
	jv dstatus = json_get_path(cp, "deployment.status");
	const char *task = json_get_str(run, "task");
	/* a run that changed nothing has nothing to diff or merge */
	bool changed = jv_get_kind(commit) == JV_KIND_STRING &&
		       (jv_get_kind(files) != JV_KIND_ARRAY || jv_array_length(jv_copy(files)) > 0);
	bool deploy_ended = jv_get_kind(dstatus) == JV_KIND_STRING &&
			    (!strcmp(jv_string_value(dstatus), "rolled_back") ||
			     !strcmp(jv_string_value(dstatus), "degraded"));

	/* (a next line is a command only, so that it can be pasted; what it
	 * needs said goes to why) */
	if (jv_get_kind(run) != JV_KIND_OBJECT) {
		/* a trace of phases run by hand: git has its branch, forge
		 * resume, merge and gc nothing (before: forge resume TRACE,
		 * which said "no run") */
		jv place = runview_pipeline_place(g, trace);
		const char *branch = json_get_str(place, "branch"), *wt = json_get_str(place, "worktree");
		const char *base = json_get_str(place, "kept_ref");

		if (branch)
			buf_addf(out, "forge diff %s && git merge %s", trace, branch);
		buf_adds(why, "a trace of phases run by hand (a shell pipeline), not a forge run: forge resume, "
			 "merge and gc do not take it");
		if (branch)
			buf_adds(why, "; git merges its branch into the checked-out one");
		if (branch || wt || base) {
			buf_adds(why, "; to remove it: ");
			if (wt) {
				buf_adds(why, "git worktree remove --force ");
				buf_add_shell_quoted(why, wt);
			}
			if (branch)
				buf_addf(why, "%sgit branch -D %s", wt ? " && " : "", branch);
			if (base)
				buf_addf(why, "%sgit update-ref -d %s", wt || branch ? " && " : "", base);
		}
		jv_free(place);
	} else if (jv_get_kind(gates) == JV_KIND_ARRAY && jv_array_length(jv_copy(gates)) > 0 && s != RUN_CANCELLED) {
		jv g0 = jv_array_get(jv_copy(gates), 0), q = json_get_path(cp, "question.text");
		const char *name = json_get_str(g0, "gate");
		/* (the question is the state's while its escalation waits) */
		bool asked = jv_get_kind(q) == JV_KIND_STRING && name && !strncmp(name, "escalation_", 11);

		jv_free(q);
		if (asked) {
			/* the agent asked: approving without a note answers nothing */
			buf_addf(out, "forge gate approve %s --note ANSWER && forge resume %s", json_get_str(g0, "id"),
				 trace);
			buf_adds(why, "the agent asked a question (forge gate list shows it): put your answer, "
				 "quoted, for ANSWER");
		} else {
			buf_addf(out, "forge gate approve %s && forge resume %s", json_get_str(g0, "id"), trace);
		}
		jv_free(g0);
	} else if (s == RUN_CANCELLED || jv_get_kind(merged) == JV_KIND_OBJECT) {
		if (!left_to_remove(g, trace)) {
			buf_addf(why, "nothing is left to do: the run is %s and its worktree and branch are removed",
				 s == RUN_CANCELLED ? "cancelled" : "merged");
		} else {
			buf_adds(out, "forge gc");
			/* a holder that is still there keeps them from gc */
			if (store_lease_get(&lease, st, trace) == 0 && runview_lease_until(when, sizeof when, lease))
				buf_addf(why, "pid %.0f on %s still holds the run: forge gc removes its worktree "
					 "and branch once that stops, or after %s if its host is gone",
					 json_get_num(lease, "pid", 0),
					 json_get_str(lease, "host") ? json_get_str(lease, "host") : "?", when);
		}
	} else if ((s == RUN_COMPLETED || s == RUN_FAILED) && jv_get_kind(conflict) == JV_KIND_OBJECT &&
		   runview_mergeable(st, trace)) {
		/* forge merge --no-ff found the changes in conflict: it would
		 * only refuse again; git merges it and the person resolves it
		 * (before: forge merge again, which conflicted again) */
		jv p = json_get(conflict, "payload");
		const char *branch = json_get_str(p, "branch"), *run_branch = json_get_str(p, "run_branch");

		buf_addf(out, "git merge %s", run_branch ? run_branch : "forge/TRACE");
		buf_addf(why, "forge merge refused it (%s with '%s'): on '%s', run that, resolve the conflicts "
			 "and git commit; then forge merge %s records the run as merged",
			 json_get_str(p, "reason") ? json_get_str(p, "reason") : "the changes conflict",
			 branch ? branch : "?", branch ? branch : "?", trace);
		jv_free(p);
	} else if (s == RUN_COMPLETED) {
		if (changed) {
			buf_addf(out, "forge diff %s && forge merge %s", trace, trace);
		} else if (jv_get_kind(commit) == JV_KIND_STRING) {
			/* no change: nothing to merge, and gc removes its
			 * worktree and branch (before: nothing ever did) --
			 * unless an interrupted attempt's work is kept on a saved
			 * ref, which gc keeps (before: "no change", and gc
			 * deleted it without a word) */
			if (saved_next(out, why, st, g, trace)) {
				;
			} else if (left_to_remove(g, trace)) {
				buf_adds(out, "forge gc");
				buf_adds(why, "the run made no change: nothing to merge; forge gc removes its worktree "
					 "and branch");
			} else {
				buf_adds(why, "nothing is left to do: the run made no change");
			}
		} else {	/* (a dry run: no worktree or branch) */
			buf_addf(out, "forge show %s", trace);
		}
	} else if (s == RUN_FAILED && json_get_str(run, "error") &&
		   !strncmp(json_get_str(run, "error"), RUNVIEW_WORK_GONE, strlen(RUNVIEW_WORK_GONE))) {
		/* a resume found its checkpoint's commit pruned (supervise.c
		 * work_gone): nothing is left to go on from */
		buf_adds(out, "forge run ");
		buf_add_shell_quoted(out, task ? task : "TASK");
		buf_adds(why, "the run's work is gone (its branch was removed, then pruned by git), so it cannot be "
			 "resumed: run the task again (forge gc removes what is left of this one)");
	} else if (s == RUN_FAILED && jv_get_kind(rejected) == JV_KIND_OBJECT) {
		/* a rejected gate ends its run for good: resume would only say
		 * so again */
		buf_adds(out, "forge run ");
		buf_add_shell_quoted(out, task ? task : "TASK");
		buf_adds(why, "a rejected gate ended this run: run the task again (forge gc removes this one's "
			 "worktree)");
	} else if (s == RUN_FAILED && runview_mergeable(st, trace)) {
		/* its merge deploy refused to land it: a resume refuses again.
		 * The base moved past a fast-forward: forge merge --no-ff lands
		 * it (README); the checkout was in the way: a plain forge merge
		 * does once it is cleared (before: --no-ff for both, a needless
		 * merge commit) */
		jv diverged = json_get_path(cp, "deployment.diverged");

		if (jv_get_kind(diverged) == JV_KIND_TRUE) {
			buf_addf(out, "forge merge --no-ff %s", trace);
		} else {
			buf_addf(out, "forge merge %s", trace);
			buf_adds(why, "once the checkout is clear: see the deploy's reason");
		}
		jv_free(diverged);
	} else if (s == RUN_FAILED && deploy_ended) {
		/* a resume does not deploy again (supervise.c said_deploy_ended):
		 * the task runs again once the cause is fixed */
		buf_adds(out, "forge run ");
		buf_add_shell_quoted(out, task ? task : "TASK");
		buf_addf(why, "its deploy was %s and a resume does not deploy again: fix the cause "
			 "(forge show %s), then run the task again", jv_string_value(dstatus), trace);
	} else if (s == RUN_FAILED && json_get_str(run, "error") &&
		   strstr(json_get_str(run, "error"), "that does not evaluate")) {
		/* a when, gate or bounce condition failed on the state: the run
		 * keeps its pipeline (a resume fails the same way), so the task
		 * runs again with the file fixed (supervise_graph.c fail) */
		jv started = jv_null(), p;
		const char *file;

		store_event_last(&started, st, trace, "run.started");
		p = json_get_path(started, "payload.pipeline");
		file = json_get_str(p, "path") ? json_get_str(p, "path") : json_get_str(p, "source");
		buf_adds(out, "forge run --pipeline ");
		buf_add_shell_quoted(out, file ? file : "FILE");
		buf_addch(out, ' ');
		buf_add_shell_quoted(out, task ? task : "TASK");
		buf_adds(why, "the run keeps the pipeline it started with, so a resume stops on the same "
			 "condition: fix it in the file, then run the task again (forge gc removes this one's "
			 "worktree)");
		jv_free(p);
		jv_free(started);
	} else if (s == RUN_FAILED && json_get_str(run, "error") &&
		   strstr(json_get_str(run, "error"), LLM_SAYS_REFUSED)) {
		/* a key, a model, a prompt the provider refuses: a resume as
		 * it is would be refused the same way (agent.c); a server that
		 * wants a key when none was sent (llm.c) was refused none */
		buf_addf(out, "forge resume %s", trace);
		if (strstr(json_get_str(run, "error"), "wants an API key, and none was sent"))
			buf_adds(why, "first give the server the API key it wants (the reason above says how)");
		else
			buf_adds(why, "first fix what the provider refused (the reason above: the key, the model "
				 "or the request)");
	} else if (s == RUN_FAILED && llm_says_passing(json_get_str(run, "error"))) {
		/* rate limited, overloaded or failing after every retry (llm.c):
		 * nothing of the user's to fix */
		buf_addf(out, "forge resume %s", trace);
		buf_adds(why, "the provider's trouble passes (the reason above): wait a while first");
	} else if (s == RUN_FAILED && json_get_str(run, "error") &&
		   strstr(json_get_str(run, "error"), LLM_SAYS_UNPAID)) {
		/* out of quota or credit (agent.c): every request is refused
		 * until the account is topped up */
		buf_addf(out, "forge resume %s", trace);
		buf_adds(why, "first add credit to the provider's account or raise its spending limit (the "
			 "reason above)");
	} else if (budget_spent(cp)) {
		/* a resume trips the budget breaker at once */
		buf_addf(out, "forge resume --budget USD %s", trace);
		buf_adds(why, "the run's budget is spent: USD is its new budget");
	} else if (s == RUN_FAILED && tripped_limit(key, sizeof key, &spent, st, run, trip, cp, cfg)) {
		/* a resume as it is trips the same limit again, a phase's
		 * paid from its start again (before: forge resume, a loop) */
		jv recorded = runview_config_layer(st, trace);

		raise_limit(out, why, cfg, recorded, key, spent, trace);
		jv_free(recorded);
	} else {
		buf_addf(out, "forge resume %s", trace);
	}
	jv_free(lease);
	jv_free(trip);
	jv_free(conflict);
	jv_free(dstatus);
	jv_free(rejected);
	jv_free(commit);
	jv_free(files);
	jv_free(run);
	jv_free(cp);
	jv_free(merged);
	jv_free(gates);
}

bool runview_resumable(struct buf *command, struct store *st, const char *trace)
{
	struct buf next = BUF_INIT, why = BUF_INIT;
	jv run = jv_null(), cp = jv_null();
	bool yes = false;

	/* (a run that stopped before its first checkpoint has nothing to go
	 * on from: supervise.c resume_unkept) */
	if (store_run_get_brief(&run, st, trace) == 0 && run_status_of(json_get_str(run, "status")) == RUN_FAILED &&
	    store_checkpoint_latest(&cp, st, trace) == 0 && jv_get_kind(cp) == JV_KIND_OBJECT) {
		runview_next(&next, &why, st, NULL, NULL, trace);
		yes = strstr(next.buf, "forge resume ") != NULL;
	}
	if (yes && command)
		buf_add(command, next.buf, next.len);
	buf_release(&next);
	buf_release(&why);
	jv_free(run);
	jv_free(cp);
	return yes;
}

jv runview_config_layer(struct store *st, const char *trace)
{
	static const char *const from[] = { "run.resumed", "run.started" };
	jv layer = jv_null();

	for (size_t i = 0; i < 2 && jv_get_kind(layer) != JV_KIND_OBJECT; i++) {
		jv ev = jv_null();

		jv_free(layer);
		store_event_last(&ev, st, trace, from[i]);
		layer = json_get_path(ev, "payload.config_layer");
		jv_free(ev);
	}
	if (jv_get_kind(layer) != JV_KIND_OBJECT) {
		jv_free(layer);
		layer = jv_null();
	}
	return layer;
}

void runview_local_time(char *out, size_t n, const char *iso, bool with_date)
{
	struct tm tm = { 0 }, local;
	const char *end = iso ? strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	time_t t;

	if (!end || (*end != '.' && *end != 'Z')) {
		snprintf(out, n, "%s", iso ? iso : "-");
		return;
	}
	t = timegm(&tm);
	localtime_r(&t, &local);
	strftime(out, n, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &local);
}

int runview_open(struct runview_open *v, const struct cli_common *common, const char *prog,
		 const char *typed, bool with_patch)
{
	int status;

	*v = (struct runview_open){ .view = jv_null() };
	status = session_open(&v->ses, common, SESSION_CONFIG | SESSION_STORE | SESSION_READONLY, jv_null());
	if (status) {
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
		return status;
	}
	status = runview_resolve(&v->trace, v->ses.store, prog, typed);
	if (status)
		return status;
	if (v->ses.repo && forge_git_open(&v->g, v->ses.repo) < 0)
		v->g = NULL;    /* the diff then comes from the checkpoint */
	jv_free(v->view);
	if (runview_load(&v->view, v->ses.store, v->g, v->trace, with_patch) < 0) {
		v->view = jv_null();
		fprintf(stderr, "%s: %s\n", prog, forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	return 0;
}

void runview_close(struct runview_open *v)
{
	jv_free(v->view);
	forge_git_free(v->g);
	free(v->trace);
	session_close(&v->ses);
}
