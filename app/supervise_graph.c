/*
 * supervise_graph.c - the pipeline every run follows, run by the supervisor
 * (issue 16, seed 004 §2); see supervise_int.h.  A plain `forge run` runs
 * the default pipeline (pipelines/default.json) through it.
 *
 * A node starts as soon as it is ready (graph_ready: its needs done or
 * skipped), at most `jobs` at a time, each in a thread of its own that runs
 * its process (proc_run) with the state as it was when it started;
 * everything they stream goes through sup->lock, so the store, its batch
 * and stdout have one writer.  The main thread holds the lock except while
 * it waits for a node to end.  When a node ends its state is merged into
 * the run's (graph_merge_states, three ways: what the node changed since it
 * started beside what the nodes that ended meanwhile changed, costs added
 * up), its status set, and it is decided at once: retried, bounced back
 * (graph_rerun), handed to a human, or the end of the run; the nodes that
 * became ready start while slower ones keep running.  Phase nodes keep
 * pipeline_decide()'s rules (the test bounce only with a confident fix, …)
 * with the bounce's when and max from the pipeline (the configuration's
 * bounces.* when the file gives none); the graph says where a bounce goes.
 * A run that ends (fails, pauses) while nodes still run starts none after:
 * it waits for them and records how they ended, for a resume to decide.
 *
 * The state records every node's status (state.nodes: {id: status}) and
 * its runs (state.node_runs: {id: {attempt, retries, status[, gated]}}: a
 * phase's ok result is gated before the next nodes start, every one that
 * ended since, whichever merged last); each change
 * of status is a node.status event.  The state is checkpointed once per
 * step, just before nodes start (a phase gets the checkpoint of the one
 * before it), when a node did not end ok, and at the end.
 */
#include "app/supervise_int.h"
#include "app/phase.h"
#include "data/stream.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/jqexpr.h"
#include "core/json.h"
#include "core/secret.h"
#include "data/config.h"
#include "llm/llm.h"
#include "engine/gates.h"
#include "engine/graph.h"
#include "os/proc.h"
#include "store/db.h"
#include "store/store.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

struct job;

struct gx {
	struct sup *s;
	const struct graph *g;
	enum node_status *st;
	char **why;                 /* why node i is pending again (malloc'd), or NULL */
	struct job **busy;          /* the job running node i, or NULL */
	size_t nactive;             /* jobs running */
	jv runs;                    /* {id: {attempt, retries, status}} */
	int jobs;
	const char *last_node;      /* the last node that ended (reflection, checkpoint labels) */
	bool dirty;                 /* the state changed since its last checkpoint */
	bool reflect_due;           /* a node ended since the last reflection */
	pthread_cond_t ended;       /* a job finished (with sup->lock) */
	bool **dropped;             /* dropped[i][k]: node i's args[k] is not passed
				     * (refused_args), or NULL: every arg is */
};

struct job {
	struct gx *x;
	size_t node;
	char *input;                /* the state it started from, a line (owned) */
	size_t input_len;
	char *cwd;                  /* the run's worktree (owned), or NULL */
	jv base;                    /* the state it started from (owned) */
	jv returned;                /* the state it wrote, or jv_null() */
	int exit_code;
	int rc;                     /* proc_run's */
	long long ms;
	bool finished;              /* its process ended (with sup->lock) */
	bool threaded;              /* th was started */
	bool stale;                 /* a bounce sent its node back while it ran: its result is dropped */
	pthread_t th;
	struct buf overlap;         /* ids of the nodes that ended while it ran, for a merge's message */
	size_t first_overlap;       /* the first of them in the pipeline's order */
	char outcome[32];           /* its status, "crashed", "interrupted" */
	double spent_usd;           /* what its llm.called events cost: counted when */
	double spent_tokens;        /* it ends without a state to say so */
	int64_t run_deadline_ms;    /* the run's time limit as it started (sup.run_deadline_ms) */
	double money_usd;           /* a phase: what it may spend (PHASE_RUN_MONEY_ENV), held
	                               from the run's money while it runs; else -1 */
};

/* An llm.called event's cost, added to j's (lock held). */
static void count_call(struct job *j, const char *type, size_t type_len, bool has_usd, double usd,
		       bool has_tokens, double tokens)
{
	if (type_len != 10 || memcmp(type, "llm.called", 10) != 0)
		return;
	sup_today_spent(j->x->s);
	if (has_usd && isfinite(usd))
		j->spent_usd += usd;
	if (has_tokens)
		j->spent_tokens += tokens;
}

/* ---- node statuses ----------------------------------------------------- */

static const char *label(const struct graph_node *nd)
{
	return nd->phase ? nd->phase : nd->id;
}

static jv run_of(struct gx *x, size_t i)
{
	jv r = json_get(x->runs, x->g->nodes[i].id);

	return jv_get_kind(r) == JV_KIND_OBJECT ? r : (jv_free(r), jv_object());
}

static void set_run(struct gx *x, size_t i, const char *key, jv val)
{
	x->runs = json_set(x->runs, x->g->nodes[i].id, json_set(run_of(x, i), key, val));
}

/* state.nodes and state.node_runs as the executor has them. */
static void write_nodes(struct gx *x)
{
	jv nodes = jv_object();

	for (size_t i = 0; i < x->g->n; i++)
		nodes = json_set(nodes, x->g->nodes[i].id, jv_string(node_status_name(x->st[i])));
	x->s->state = json_set(json_set(x->s->state, "nodes", nodes), "node_runs", jv_copy(x->runs));
}

/* Node i goes to `to` (a node.status event), for `reason`. */
static void set_status(struct gx *x, size_t i, enum node_status to, const char *reason)
{
	enum node_status from = x->st[i];
	jv run = run_of(x, i);

	if (from == to)
		return (void)jv_free(run);
	x->st[i] = to;
	x->dirty = true;
	write_nodes(x);
	sup_emit(x->s, "node.status", json_set(json_set(json_set(json_set(json_set(jv_object(),
		"node", jv_string(x->g->nodes[i].id)), "status", jv_string(node_status_name(to))),
		"from", jv_string(node_status_name(from))), "attempt", jv_number(json_get_num(run, "attempt", 0))),
		"reason", jv_string(reason)));
	jv_free(run);
}

/* Node i is pending again (why: copied, for the event when it starts); a
 * run of it still going on is dropped when it ends. */
static void again(struct gx *x, size_t i, const char *why)
{
	if (x->busy[i])
		x->busy[i]->stale = true;
	free(x->why[i]);
	x->why[i] = xstrdup(why);
	set_status(x, i, NODE_PENDING, why);
}

/*
 * A checkpoint of the phase loop (before every run followed a pipeline; it
 * has no state.nodes): the phase it names ended with the state's status,
 * and every node before it is done.  Ok: done; failed: it runs again; any
 * other status (rejected, escalated, tripped, …) leaves it blocked, to be
 * decided again as the loop would have.
 */
static void read_phase_loop(struct gx *x)
{
	const char *phase = json_get_str(x->s->state, "phase");
	const char *status = json_get_str(x->s->state, "status");
	size_t before[x->g->n ? x->g->n : 1];
	size_t at = x->g->n;

	for (size_t i = 0; phase && i < x->g->n && at == x->g->n; i++)
		if (x->g->nodes[i].phase && strcmp(x->g->nodes[i].phase, phase) == 0)
			at = i;
	if (at == x->g->n)
		return;         /* "init": nothing ran */
	size_t n = graph_path_to_root(x->g, at, before);
	for (size_t k = 0; k < n; k++)
		x->st[before[k]] = NODE_DONE;
	if (!status || strcmp(status, "ok") == 0) {
		x->st[at] = NODE_DONE;
	} else if (strcmp(status, "failed") == 0) {
		x->st[at] = NODE_FAILED;
	} else {
		x->st[at] = NODE_BLOCKED;
		set_run(x, at, "status", jv_string(status));
	}
}

/*
 * The statuses a state records.  A node found running (the supervisor
 * stopped while it ran) or failed runs again; a blocked one is decided
 * again (sup_graph_run).
 */
static void read_nodes(struct gx *x)
{
	jv nodes = json_get(x->s->state, "nodes");
	jv runs = json_get(x->s->state, "node_runs");
	bool legacy = jv_get_kind(nodes) != JV_KIND_OBJECT;

	x->runs = jv_get_kind(runs) == JV_KIND_OBJECT ? runs : (jv_free(runs), jv_object());
	for (size_t i = 0; i < x->g->n; i++) {
		enum node_status st = node_status_of(json_get_str(nodes, x->g->nodes[i].id));

		x->st[i] = st == NODE_NSTATUS ? NODE_PENDING : st;
	}
	jv_free(nodes);
	if (legacy)
		read_phase_loop(x);
	write_nodes(x);
	for (size_t i = 0; i < x->g->n; i++) {
		if (x->st[i] == NODE_RUNNING)
			again(x, i, "it was running when the run stopped: it runs again");
		else if (x->st[i] == NODE_FAILED) {
			sup_progress(x->s, "  %s failed last time: running it again", x->g->nodes[i].id);
			again(x, i, "it failed last time: it runs again");
		}
	}
}

/* ---- the end of a run ---------------------------------------------------- */

static int interrupted_end(struct sup *s)
{
	if (sup_lease_lost())
		return sup_lease_lost_end(s);
	if (sup_cancelled(s))
		return sup_stop_cancelled(s);
	sup_say("interrupted; resume with `forge resume %s`\n", s->trace);
	/* (the state machine too: resumed runs read paused>implementing
	 * without an implementing>paused before it) */
	sup_transition(s, PL_PAUSED, "interrupted");
	store_run_update(s->o->store, s->trace, "paused", s->running, "interrupted");
	/* (the shape of sup_end_run's: status, reason, cost -- before: the
	 * reason alone, so a reader of a run's end found no cost there) */
	sup_emit(s, "run.paused",
		 json_set(json_set(json_set(jv_object(), "status", jv_string("paused")), "reason",
				   jv_string("interrupted")), "cost", json_get(s->state, "cost")));
	return FORGE_EXIT_INTERRUPTED;
}

static int fail(struct gx *x, size_t i, const char *what, int code)
{
	char why[700];

	snprintf(why, sizeof why, "node '%s' %s", x->g->nodes[i].id, what);
	return sup_end_run(x->s, "failed", why, code);
}

/* A node failed on a dependency (git, a full disk, TMPDIR, the provider):
 * the run ends failed, and a resume runs the node again once the cause is
 * fixed -- said on stderr, as for an interrupted node (before: "✗ failed",
 * exit 5, and no word that the run could go on).  With -q the phase's own
 * "failed: …" line is not printed, so this line says why (reason, the
 * run's; a leading "NODE failed: " left out), as a breaker's line does
 * (before: -q said the node failed and never why).  Returns code. */
static int said_resumable(struct gx *x, size_t i, int code, const char *reason)
{
	const char *id = x->g->nodes[i].id;
	char lead[200];
	struct buf why = BUF_INIT;

	if (code != FORGE_EXIT_DEPENDENCY)
		return code;
	if (x->s->o->quiet && reason && *reason) {
		snprintf(lead, sizeof lead, "%s failed: ", x->g->nodes[i].phase ? x->g->nodes[i].phase : id);
		if (strncmp(reason, lead, strlen(lead)) == 0 && reason[strlen(lead)])
			reason += strlen(lead);
		else {
			snprintf(lead, sizeof lead, "node '%s' failed", id);
			if (strcmp(reason, lead) == 0)
				reason = NULL;
		}
		if (reason) {
			buf_addf(&why, ": %s", reason);
			term_clean_line(why.buf, why.len);
		}
	}
	/* (a provider rate limited or overloaded: nothing of the user's to
	 * fix, its trouble passes) */
	sup_say("node '%s' failed%s; %s `forge resume %s` runs it again\n", id, why.len ? why.buf : "",
		llm_says_passing(reason) ? "the provider's trouble passes: wait a while, then"
					 : "once what failed is fixed,", x->s->trace);
	buf_release(&why);
	return code;
}

/* ---- deciding after a node ---------------------------------------------- */

/* Retried when its policy covers `flag` and retries are left. */
static bool retry(struct gx *x, size_t i, unsigned flag, const char *outcome)
{
	const struct graph_node *nd = &x->g->nodes[i];
	jv run = run_of(x, i);
	int used = (int)json_get_num(run, "retries", 0);
	char why[200];

	jv_free(run);
	if (!(nd->retry_on & flag) || used >= nd->retry_max)
		return false;
	set_run(x, i, "retries", jv_number(used + 1));
	snprintf(why, sizeof why, "retry %d of %d: it ended %s", used + 1, nd->retry_max, outcome);
	sup_progress(x->s, "  ↻ %s: %s", nd->id, why);
	again(x, i, why);
	return true;
}

/*
 * Whether a phase node that escalated without a result (stagnation, a tool
 * that needs approval) has had the re-runs that a yes given in advance
 * (--auto-approve) may give it, bounces.rerun_max, as a bounce has its
 * bounces.*_max: then a person decides, and the gate says why (why, from
 * reason).  A loop.rerun_limit event when the flag would have passed it
 * (before: each re-run escalated again and the flag passed it again, until
 * the budget was spent).
 */
static bool reruns_spent(struct gx *x, size_t i, int reruns, const char *reason, char *why, size_t n)
{
	const struct graph_node *nd = &x->g->nodes[i];
	int max = (int)config_get_num(x->s->o->cfg, "bounces.rerun_max");

	if (reruns < max)
		return false;
	snprintf(why, n, "%.400s (again, after %d re-run%s without a person's answer; bounces.rerun_max is %d)",
		 reason, reruns, reruns == 1 ? "" : "s", max);
	if (x->s->o->auto_approve) {
		sup_say("%s escalated again after the %d re-run%s --auto-approve may give it "
				"(bounces.rerun_max %d): a person decides now\n", label(nd), reruns,
			reruns == 1 ? "" : "s", max);
		sup_emit(x->s, "loop.rerun_limit", json_set(json_set(json_set(json_set(jv_object(),
			"node", jv_string(nd->id)), "phase", jv_string(nd->phase)), "reruns", jv_number(reruns)),
			"max", jv_number(max)));
	}
	return true;
}

/*
 * Whether the state holds phase result `key` as an approval could take it:
 * present and not an empty one.  (forge-implement writes `changes` with
 * `empty` when it escalated having changed nothing, stagnation say: before,
 * that counted as a result, the approval skipped implement, and review,
 * test and deploy ran on nothing -- "completed (no change)", exit 0.)
 */
static bool has_result(jv state, const char *key)
{
	jv r = json_get(state, key);
	bool has = jv_get_kind(r) == JV_KIND_OBJECT && !json_get_bool(r, "empty", false);

	jv_free(r);
	return has;
}

/*
 * The approval's note for the phase that runs again without a result
 * (state.answers, `rerun`: its prompt says why it stopped and what the
 * person said; before, the note reached only the run's reflection).
 */
static void note_for_rerun(struct sup *s, const char *phase, const char *reason)
{
	const char *note = json_get_str(s->approval, "note"), *by = json_get_str(s->approval, "by");
	jv answers;

	if (!note || !*note)
		return;
	answers = json_get(s->state, "answers");
	if (jv_get_kind(answers) != JV_KIND_ARRAY) {
		jv_free(answers);
		answers = jv_array();
	}
	jv a = json_set(json_set(json_set(jv_object(), "phase", jv_string(phase)), "question",
				 jv_string(reason)), "answer", jv_string(note));
	a = json_set(json_set(a, "by", json_str_or_null(by)), "rerun", jv_true());
	s->state = json_set(s->state, "answers", jv_array_append(answers, a));
}

/* A human decides on node i.  Approved, a program node is done: the human's
 * yes stands over its no (running it again could only ask again); a phase
 * node is done with its result and runs again without one (has_result; at
 * most bounces.rerun_max times on a yes given in advance: reruns_spent),
 * with the approval's note in its prompt; a question its agent asked waits
 * for a person's answer; a deploy runs again with the approval (--approve),
 * as after production_deploy. */
static int human(struct gx *x, size_t i, const char *reason)
{
	const struct graph_node *nd = &x->g->nodes[i];
	jv run = run_of(x, i);
	int attempt = (int)json_get_num(run, "attempt", 1), reruns = (int)json_get_num(run, "reruns", 0);
	jv q = json_get(x->s->state, "question");
	const char *asker = json_get_str(q, "phase"), *text = json_get_str(q, "text");
	bool asked = nd->phase && asker && text && strcmp(asker, nd->phase) == 0;
	bool deploy = nd->phase && strcmp(nd->phase, "deploy") == 0;
	bool rerun = nd->phase && !asked && !deploy && !has_result(x->s->state, nd->result_key);
	char why[700] = "";
	bool in_person = rerun && reruns_spent(x, i, reruns, reason, why, sizeof why);

	jv_free(run);
	enum gate_outcome h = sup_ask_human(x->s, label(nd), nd->result_key, in_person ? why : reason, attempt,
					    asked ? text : NULL, in_person);

	if (h == GATE_WAIT) {
		jv_free(q);
		return sup_gate_paused(x->s, in_person ? why : reason);
	}
	if (h == GATE_STOP) {
		jv_free(q);
		return sup_end_run(x->s, "failed", "a human said no", FORGE_EXIT_REJECTED);
	}
	/* The phase asked a question (ask_human): it runs again with the
	 * human's answer, the approval's note (before: approving moved on to
	 * the next phase, the answer unused and the work not done). */
	if (asked) {
		jv answers = json_get(x->s->state, "answers");
		const char *note = json_get_str(x->s->approval, "note"), *by = json_get_str(x->s->approval, "by");
		jv a = json_set(json_set(json_set(json_set(jv_object(), "phase", jv_string(asker)),
			"question", jv_string(text)), "answer", json_str_or_null(note)), "by", json_str_or_null(by));

		if (jv_get_kind(answers) != JV_KIND_ARRAY) {
			jv_free(answers);
			answers = jv_array();
		}
		x->s->state = json_set(jv_object_delete(x->s->state, jv_string("question")), "answers",
				       jv_array_append(answers, a));
		jv_free(q);
		again(x, i, "a human answered its question: it runs again");
		return -1;
	}
	jv_free(q);
	/* (forge-deploy asked for the gate and deployed nothing: before, the
	 * approval marked the node done, the run completed, nothing deployed) */
	if (deploy) {
		x->s->deploy_approved = true;
		again(x, i, "a human approved the deploy: it runs again with the approval");
	} else if (rerun) {
		const char *by = json_get_str(x->s->approval, "by");

		/* (a person's yes is theirs to repeat: only one given in
		 * advance counts) */
		if (by && (strcmp(by, "flag") == 0 || strcmp(by, "automation_level") == 0))
			set_run(x, i, "reruns", jv_number(reruns + 1));
		note_for_rerun(x->s, nd->phase, reason);
		again(x, i, "a human approved: it runs again");
	} else {
		set_status(x, i, NODE_DONE, "a human approved it");
	}
	return -1;
}

/* Back to the bounce's node with every node after it (rec consumed). */
static int bounce(struct gx *x, size_t i, jv rec, const char *reason)
{
	const struct graph_node *nd = &x->g->nodes[i];
	size_t list[x->g->n ? x->g->n : 1];
	char why[700];

	rec = json_set(rec, "to", jv_string(nd->bounce.to_id));
	enum gate_outcome h = sup_pass_bounce(x->s, rec);
	if (h != GATE_PASS) {
		jv_free(rec);
		return sup_bounce_stopped(x->s, h);
	}
	sup_progress(x->s, "  ↩ back to %s: %s", nd->bounce.to_id, reason);
	sup_add_bounce(x->s, rec);
	snprintf(why, sizeof why, "bounce from %s: %.600s", nd->id, reason);
	size_t n = graph_rerun(x->g, nd->bounce.to, list);
	for (size_t k = 0; k < n; k++)
		again(x, list[k], why);
	return -1;
}

/* Whether node i may bounce again: it has a bounce, and the state records
 * fewer bounces from `from` than its bound. */
static bool bounce_left(struct gx *x, size_t i, const char *from)
{
	const struct graph_node *nd = &x->g->nodes[i];

	return nd->has_bounce && pipeline_bounces(x->s->state, from) < nd->bounce.max;
}

static int decide_rejected(struct gx *x, size_t i, const char *outcome);
static int stop_or_end(struct gx *x);

/* d's reason ("plan failed") with the phase's own (its phase.completed
 * event's: "plan model: ANTHROPIC_API_KEY is not set", the key refused):
 * what forge status, show and history then say of the run (before: "plan
 * failed" alone, the cause only in the phase's output). */
static void with_phase_reason(struct sup *s, struct pipeline_decision *d, const char *phase)
{
	jv ev = jv_null(), p;
	const char *why;

	sup_commit_batch(s);      /* (the phase's events: in the log) */
	if (store_event_last(&ev, s->o->store, s->trace, "phase.completed") < 0) {
		jv_free(ev);
		return;
	}
	p = json_get(ev, "payload");
	why = json_get_str(p, "reason");
	/* (another node's, when nodes run at once: not this phase's words) */
	if (!json_get_str(ev, "phase") || strcmp(json_get_str(ev, "phase"), phase) != 0)
		why = NULL;
	if (why && *why && !strstr(d->reason, why)) {
		size_t n = strlen(d->reason);

		if (n + 2 < sizeof d->reason) {
			memcpy(d->reason + n, ": ", 3);
			snprintf(d->reason + n + 2, sizeof d->reason - n - 2, "%s", why);
		}
	}
	jv_free(p);
	jv_free(ev);
}

/*
 * A built-in phase: pipeline_decide()'s rules, with the bounce's when and
 * max the pipeline gives (graph.h: the file's, else the configuration's
 * bounces.*); the graph says where a bounce goes.  A phase other than
 * review and test that says no takes its bounce as a program's does.
 */
static int decide_phase(struct gx *x, size_t i, const char *outcome)
{
	const struct graph_node *nd = &x->g->nodes[i];
	struct pipeline_decision d;
	int code = -1;

	struct pipeline_bounce_rule rule = { .when = nd->has_bounce ? nd->bounce.when : NULL,
					     .max = nd->has_bounce ? nd->bounce.max : -1 };

	if (nd->has_bounce && strcmp(outcome, "rejected") == 0 && strcmp(nd->phase, "review") != 0 &&
	    strcmp(nd->phase, "test") != 0)
		return decide_rejected(x, i, outcome);
	if (pipeline_decide_with(&d, x->s->o->cfg, x->s->state, nd->phase, outcome, &rule) < 0) {
		sup_say("%s\n", forge_last_error());
		return sup_end_run(x->s, "failed", forge_last_error(), FORGE_EXIT_USAGE);
	}
	if (d.action == PL_ACT_FAILED || d.action == PL_ACT_TRIPPED || d.action == PL_ACT_HUMAN ||
	    d.action == PL_ACT_REJECTED)
		with_phase_reason(x->s, &d, nd->phase);
	switch (d.action) {
	case PL_ACT_NEXT:
	case PL_ACT_DONE:
		set_status(x, i, NODE_DONE, "it ended ok");
		break;
	case PL_ACT_BOUNCE:
		if (bounce_left(x, i, nd->phase)) {
			code = bounce(x, i, d.bounce, d.reason);
			d.bounce = jv_null();
		} else if (!retry(x, i, GRAPH_RETRY_REJECTED, outcome)) {
			code = human(x, i, nd->has_bounce ? "it said no and its bounces ran out"
							  : "it said no and the pipeline has no bounce for it");
		}
		break;
	case PL_ACT_HUMAN:
		code = human(x, i, d.reason);
		break;
	case PL_ACT_REJECTED:
		if (!retry(x, i, GRAPH_RETRY_REJECTED, outcome))
			code = sup_end_run(x->s, "failed", d.reason, FORGE_EXIT_REJECTED);
		break;
	case PL_ACT_TRIPPED:
		code = sup_end_run(x->s, "failed", d.reason, FORGE_EXIT_TRIPPED);
		break;
	case PL_ACT_FAILED:
		if (!retry(x, i, GRAPH_RETRY_FAILED, outcome))
			code = said_resumable(x, i, sup_end_run(x->s, "failed", d.reason, FORGE_EXIT_DEPENDENCY), d.reason);
		break;
	}
	jv_free(d.bounce);
	return code;
}

/* A program: ok, skipped, rejected (bounce, retry, a human or the end), escalated, tripped, failed. */
static int decide_program(struct gx *x, size_t i, const char *outcome)
{
	if (strcmp(outcome, "ok") == 0) {
		set_status(x, i, NODE_DONE, "it ended ok");
		return -1;
	}
	if (strcmp(outcome, "skipped") == 0) {
		set_status(x, i, NODE_SKIPPED, "it said it had nothing to do");
		return -1;
	}
	if (strcmp(outcome, "escalated") == 0)
		return human(x, i, "it asked for a human");
	if (strcmp(outcome, "tripped") == 0)
		return fail(x, i, "tripped a breaker", FORGE_EXIT_TRIPPED);
	if (strcmp(outcome, "rejected") != 0)
		return retry(x, i, GRAPH_RETRY_FAILED, outcome) ? -1
								  : said_resumable(x, i, fail(x, i, "failed", FORGE_EXIT_DEPENDENCY), NULL);
	return decide_rejected(x, i, outcome);
}

/* A node said no: its bounce while its when holds and bounces are left, a
 * retry, past the bound a human; a no its bounce does not cover ends the run. */
static int decide_rejected(struct gx *x, size_t i, const char *outcome)
{
	const struct graph_node *nd = &x->g->nodes[i];
	bool holds = true;
	/* a user's jq may take its time (bounded: jqexpr_set_bounds): the
	 * database is not held meanwhile (before: "database is locked" for
	 * every other forge process while a condition ran) */
	if (nd->has_bounce && nd->bounce.when)
		sup_commit_batch(x->s);
	if (nd->has_bounce && nd->bounce.when && jqexpr_test(&holds, nd->bounce.when, x->s->state) < 0) {
		if (sup_interrupted())
			return stop_or_end(x);  /* a signal cut its condition short */
		sup_say("node '%s': bounce when: %s\n", nd->id, forge_last_error());
		return fail(x, i, "has a bounce condition that does not evaluate", FORGE_EXIT_USAGE);
	}
	if (holds && bounce_left(x, i, nd->id)) {
		jv rec = json_set(json_set(jv_object(), "from", jv_string(nd->id)), "n",
				  jv_number(pipeline_bounces(x->s->state, nd->id) + 1));
		char reason[300];

		snprintf(reason, sizeof reason, "node '%s' said no", nd->id);
		return bounce(x, i, json_set(rec, "reason", jv_string(reason)), reason);
	}
	if (retry(x, i, GRAPH_RETRY_REJECTED, outcome))
		return -1;
	if (nd->has_bounce && holds)
		return human(x, i, "it said no and its bounces ran out");
	return fail(x, i, "said no", FORGE_EXIT_REJECTED);
}

static int decide(struct gx *x, size_t i, const char *outcome)
{
	if (x->g->nodes[i].phase)
		return decide_phase(x, i, outcome);
	return decide_program(x, i, outcome);
}

/*
 * Phase `phase` ended ok: its tool calls so far are no longer the run's
 * error-rate breaker's (sup_breaker).  Unless a node of the same phase
 * still runs (two reviews at once): their events name the same phase, and
 * the one still running must count with its errors.
 */
static void phase_ended_ok(struct gx *x, const char *phase)
{
	char now[TIMESTAMP_LEN + 1];

	for (size_t i = 0; i < x->g->n; i++)
		if (x->busy[i] && x->g->nodes[i].phase && strcmp(x->g->nodes[i].phase, phase) == 0)
			return;
	timestamp_now(now);
	x->s->phases_ok = json_set(x->s->phases_ok, phase, jv_string(now));
}

/* ---- running a node ------------------------------------------------------ */

static void job_stdout(void *payload, const char *line, size_t len, int cut)
{
	struct job *j = payload;
	struct sup *s = j->x->s;

	struct json_event scanned;

	pthread_mutex_lock(&s->lock);
	/* Most lines are events the supervisor only stores, shows and passes
	 * on: read in place, no jv made (the line's parse was 9% of its
	 * instructions). */
	if (!cut && json_event_scan(&scanned, line, len) && scanned.kind && scanned.kind_len == 5 &&
	    memcmp(scanned.kind, "event", 5) == 0) {
		sup_persist_scanned(s, &scanned, line, len);
		sup_show_scanned(s, &scanned);
		if (scanned.type)
			count_call(j, scanned.type, scanned.type_len, scanned.has_usd, scanned.usd,
				   scanned.has_tokens, (double)scanned.tokens);
		if (s->o->json)
			stream_write_raw(&s->out, line, len);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	jv rec = cut ? jv_invalid() : json_parse(line, len);
	const char *kind = jv_get_kind(rec) == JV_KIND_OBJECT ? json_get_str(rec, "kind") : NULL;

	if (cut) {
		/* a record, maybe, but past the line limit: say that, not "not
		 * a record" (a node whose state is lost this way then ends
		 * "without a state", and this is why) */
		sup_say("node '%s' wrote a line longer than the limit of %u bytes (ignored)\n",
			j->x->g->nodes[j->node].id, STREAM_MAX_LINE_DEFAULT);
	} else if (jv_get_kind(rec) != JV_KIND_OBJECT) {
		sup_say("node '%s' wrote a line that is not a record (ignored)\n",
			j->x->g->nodes[j->node].id);
	} else if (kind && strcmp(kind, "event") == 0) {
		const char *type = json_get_str(rec, "type");
		jv cost = json_get(rec, "cost");

		sup_persist(s, rec, line, len);
		sup_show_event(s, rec);
		if (type)
			count_call(j, type, strlen(type), json_has(cost, "usd"), json_get_num(cost, "usd", 0),
				   json_has(cost, "tokens"), json_get_num(cost, "tokens", 0));
		jv_free(cost);
		if (s->o->json)
			stream_write_raw(&s->out, line, len);
	} else if (kind && strcmp(kind, "state") == 0) {
		jv_free(j->returned);
		j->returned = jv_copy(rec);
	} else if (s->o->json) {
		stream_write_raw(&s->out, line, len);
	}
	jv_free(rec);
	pthread_mutex_unlock(&s->lock);
}

/* A line a phase wrote to stderr, relayed: without its control characters
 * (term_clean), as everything else Forge prints of a phase's or a model's
 * text -- a phase names the model's files there (forge-review's "... was
 * not linted"), and a name's escape sequences must not drive the person's
 * terminal (before: relayed as they were, hunt27 #4). */
static void job_stderr(void *payload, const char *line, size_t len, int cut)
{
	struct job *j = payload;
	struct sup *s = j->x->s;
	size_t mark = strlen(TERM_RELAY_MARK);
	const char *id = j->x->g->nodes[j->node].id;
	bool status = len >= mark && memcmp(line, TERM_RELAY_MARK, mark) == 0;
	char *shown = status ? xstrndup(line + mark, len - mark) : xstrndup(line, len);
	size_t n = strlen(shown);     /* (up to a NUL in the line) */

	(void)cut;
	term_clean(shown, n);
	pthread_mutex_lock(&s->lock);
	if (status) {
		char text[1024];

		snprintf(text, sizeof text, "  [%s] %s", id, shown);
		term_status(n ? text : NULL);
	} else {
		term_status_clear();
		fprintf(stderr, "  [%s] %s\n", id, shown);
	}
	pthread_mutex_unlock(&s->lock);
	free(shown);
}

static void job_idle(void *payload)
{
	struct sup *s = ((struct job *)payload)->x->s;

	pthread_mutex_lock(&s->lock);
	sup_commit_batch(s);
	pthread_mutex_unlock(&s->lock);
}

static void job_started(void *payload)
{
	struct sup *s = ((struct job *)payload)->x->s;

	pthread_mutex_lock(&s->lock);
	sup_sync_checkpoint(s);
	pthread_mutex_unlock(&s->lock);
}

/* Whether environment entry e sets variable name. */
static bool env_sets(const char *e, const char *name)
{
	size_t len = strlen(name);

	return !strncmp(e, name, len) && e[len] == '=';
}

/*
 * A phase's environment: the supervisor's, with the run's time limit as a
 * wall-clock deadline (PHASE_RUN_DEADLINE_ENV), which its model calls and
 * commands end at (before: only checked between phases, a call in flight
 * ran on), and what it may spend (PHASE_RUN_MONEY_ENV; money_usd < 0:
 * none).  NULL (the supervisor's own) when there is neither.  One block,
 * for free().
 */
static char **phase_environ(int64_t deadline_ms, double money_usd)
{
	extern char **environ;
	size_t n = 0, size = 0, k = 0;
	char vars[2][64];
	int nvars = 0;

	if (deadline_ms > 0)
		snprintf(vars[nvars++], sizeof vars[0], "%s=%lld", PHASE_RUN_DEADLINE_ENV, (long long)deadline_ms);
	if (money_usd >= 0)
		snprintf(vars[nvars++], sizeof vars[0], "%s=%.17g", PHASE_RUN_MONEY_ENV, money_usd);
	if (!nvars)
		return NULL;
	for (; environ[n]; n++)
		size += strlen(environ[n]) + 1;
	for (int v = 0; v < nvars; v++)
		size += strlen(vars[v]) + 1;
	char **env = xmalloc((n + 3) * sizeof *env + size);
	char *p = (char *)(env + n + 3);

	/* (one the person's environment set is not this run's: left out) */
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(environ[i]) + 1;

		if (env_sets(environ[i], PHASE_RUN_DEADLINE_ENV) || env_sets(environ[i], PHASE_RUN_MONEY_ENV))
			continue;
		memcpy(p, environ[i], len);
		env[k++] = p;
		p += len;
	}
	for (int v = 0; v < nvars; v++) {
		memcpy(p, vars[v], strlen(vars[v]) + 1);
		env[k++] = p;
		p += strlen(vars[v]) + 1;
	}
	env[k] = NULL;
	return env;
}

/* Whether this process's group is the foreground of its controlling
 * terminal (a person at it may be asked). */
static bool terminal_foreground(void)
{
	int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	bool fg = fd >= 0 && tcgetpgrp(fd) == getpgrp();

	if (fd >= 0)
		close(fd);
	return fg;
}

/*
 * Run node j->node to its end: a phase is forge-PHASE beside the
 * supervisor, a program its path from the run's worktree; both get the
 * common options (--repo, --db, the phases' own) and then the node's args.
 */
static void run_job(struct job *j)
{
	const struct graph_node *nd = &j->x->g->nodes[j->node];
	const struct supervise_opts *o = j->x->s->o;
	const char **argv = xcalloc(16 + nd->nargs + 64, sizeof *argv);
	char program[4096];
	size_t argc = 0;

	if (nd->phase)
		snprintf(program, sizeof program, "%s/forge-%s", o->bindir, nd->phase);
	else
		snprintf(program, sizeof program, "%s", nd->path);
	argv[argc++] = program;
	argv[argc++] = "--repo";
	argv[argc++] = o->repo;
	/* (a PostgreSQL URI may hold a password: the phases take it from
	 * FORGE_DB, which supervise_db_env() set, not from a command line any
	 * user can read in ps) */
	if (o->db_path && !db_is_postgres(o->db_path)) {
		argv[argc++] = "--db";
		argv[argc++] = o->db_path;
	}
	for (const char *const *a = o->phase_args; a && *a && argc < 60; a++)
		argv[argc++] = *a;
	/* A resume deploys as the run was started (supervise.c,
	 * keep_deploy_settings): after the common --config, so that it wins;
	 * --strategy over FORGE_DEPLOY_STRATEGY; the node's own args still last. */
	if (nd->phase && strcmp(nd->phase, "deploy") == 0 && j->x->s->deploy_config) {
		argv[argc++] = "--config";
		argv[argc++] = j->x->s->deploy_config;
		if (j->x->s->deploy_strategy) {
			argv[argc++] = "--strategy";
			argv[argc++] = j->x->s->deploy_strategy;
		}
	}
	for (size_t k = 0; k < nd->nargs; k++)
		if (!(j->x->dropped && j->x->dropped[j->node] && j->x->dropped[j->node][k]))
			argv[argc++] = nd->args[k];
	if (nd->phase && strcmp(nd->phase, "deploy") == 0 && j->x->s->deploy_approved)
		argv[argc++] = "--approve";
	argv[argc] = NULL;

	struct proc_opts po = PROC_OPTS_INIT;
	struct proc_result pr;
	/* A program runs from the run's worktree, whose files a model wrote
	 * (a script there is the model's copy): never with the keys. */
	char **env = nd->phase ? phase_environ(j->run_deadline_ms, j->money_usd) : llm_environ_scrubbed();
	po.argv = argv;
	po.envp = env;
	po.cwd = nd->phase ? NULL : j->cwd;
	po.input = j->input;
	po.input_len = j->input_len;
	/* A phase stays in forge's group (it stops itself on a signal and
	 * writes its checkpoint); a program leads its own, which a signal to
	 * forge reaches whole (proc_kill_running), SIGKILL after the grace: nothing
	 * it started outlives the run's pause.  Not while forge is the
	 * terminal's foreground: a program there may ask the person (forge
	 * compile's interview), and one in a group of its own would be stopped
	 * by SIGTTIN when it reads; the terminal's Ctrl-C reaches the whole
	 * foreground group anyway. */
	po.keep_pgrp = nd->phase != NULL || terminal_foreground();
	po.on_stdout = job_stdout;
	po.on_stderr = job_stderr;
	po.on_idle = job_idle;
	po.on_started = job_started;
	po.payload = j;
	long long t0 = monotonic_ms();
	j->rc = proc_run(&pr, &po);
	j->ms = monotonic_ms() - t0;
	j->exit_code = pr.exit_code;
	if (j->rc < 0) {
		pthread_mutex_lock(&j->x->s->lock);
		sup_say("node '%s': %s\n", nd->id, forge_last_error());
		pthread_mutex_unlock(&j->x->s->lock);
	}
	proc_result_release(&pr);
	free(env);
	free(argv);
}

static void *job_thread(void *arg)
{
	struct job *j = arg;
	struct sup *s = j->x->s;

	run_job(j);
	pthread_mutex_lock(&s->lock);
	j->finished = true;
	pthread_cond_signal(&j->x->ended);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* A program node's state is another program's word (Forge's own phases
 * check what they write): one a reader refuses -- a newer protocol, not
 * the state's shape, another run's -- is no state.  True when it is taken. */
static bool node_state_taken(struct job *j)
{
	const struct graph_node *nd = &j->x->g->nodes[j->node];
	const char *trace = json_get_str(j->returned, "trace_id");
	char why[600];

	if (nd->phase || jv_get_kind(j->returned) != JV_KIND_OBJECT)
		return true;
	if (stream_state_check(j->returned) < 0)
		snprintf(why, sizeof why, "%s", forge_last_error());
	else if (!trace || strcmp(trace, j->x->s->trace) != 0)
		snprintf(why, sizeof why, "its trace_id is %s%s%s, not this run's %s", trace ? "'" : "",
			 trace ? trace : "missing", trace ? "'" : "", j->x->s->trace);
	else
		return true;
	sup_say("node '%s' wrote a state that cannot be taken: %s\n", nd->id, why);
	jv_free(j->returned);
	j->returned = jv_null();
	return false;
}

/* The node's outcome: its state's status, or how its process ended. */
static void outcome_of(struct job *j)
{
	if (!node_state_taken(j)) {
		snprintf(j->outcome, sizeof j->outcome, "failed");
		return;
	}
	const char *st = json_get_str(j->returned, "status");

	if (j->rc == 0 && jv_get_kind(j->returned) == JV_KIND_OBJECT) {
		snprintf(j->outcome, sizeof j->outcome, "%s", st ? st : "failed");
		return;
	}
	const struct graph_node *nd = &j->x->g->nodes[j->node];

	if (j->rc == 0 && nd->phase)
		sup_say("forge-%s exited with status %d without a state\n", nd->phase, j->exit_code);
	else if (j->rc == 0)
		sup_say("node '%s' exited with status %d without a state\n", nd->id, j->exit_code);
	/* Killed by a signal: it never finished; the run pauses and a resume runs it again. */
	snprintf(j->outcome, sizeof j->outcome, "%s", sup_interrupted() ? "interrupted" :
		 j->rc == 0 && j->exit_code == FORGE_EXIT_INTERRUPTED ? "stopped" :
		 j->rc == 0 && j->exit_code > 128 ? "crashed" : "failed");
}

/* The status a node's end shows before it is decided. */
static enum node_status status_after(const char *outcome)
{
	if (strcmp(outcome, "ok") == 0)
		return NODE_DONE;
	if (strcmp(outcome, "rejected") == 0 || strcmp(outcome, "escalated") == 0)
		return NODE_BLOCKED;
	if (strcmp(outcome, "crashed") == 0 || strcmp(outcome, "interrupted") == 0 ||
	    strcmp(outcome, "stopped") == 0)
		return NODE_RUNNING;
	return NODE_FAILED;
}

/* ---- gates and the loop -------------------------------------------------- */

/* The gates before node i: the configured ones, the ladder's (phases), its own. */
static void flush(struct gx *x);

/*
 * The phase nodes whose ok result no gate has looked at yet, in the
 * pipeline's order (n of them in out): every one that ended since the last
 * nodes started, not only the last (before, with --jobs 2 the review that
 * ended before the tests was never gated: only state.phase was).  A state
 * from before node_runs' gated knows only its last phase, state.phase.
 */
static size_t results_to_gate(struct gx *x, size_t *out)
{
	const char *phase = json_get_str(x->s->state, "phase"), *status = json_get_str(x->s->state, "status");
	size_t n = 0;

	for (size_t i = 0; i < x->g->n; i++) {
		const struct graph_node *nd = &x->g->nodes[i];
		jv run = run_of(x, i), gated = json_get(run, "gated");
		const char *st = json_get_str(run, "status");
		bool due = jv_get_kind(gated) == JV_KIND_FALSE ? st && strcmp(st, "ok") == 0
			   : jv_get_kind(gated) != JV_KIND_TRUE && phase && strcmp(phase, label(nd)) == 0 &&
			     status && strcmp(status, "ok") == 0;

		if (nd->phase && x->st[i] == NODE_DONE && due)
			out[n++] = i;
		jv_free(gated);
		jv_free(run);
	}
	return n;
}

/* The gates of every result results_to_gate() gives were passed. */
static void results_gated(struct gx *x)
{
	size_t ended[x->g->n ? x->g->n : 1];
	size_t n = results_to_gate(x, ended);

	for (size_t k = 0; k < n; k++)
		set_run(x, ended[k], "gated", jv_true());
	if (n) {
		write_nodes(x);
		x->dirty = true;
	}
}

/* more's gates (consumed) not in fired (by id) appended to it. */
static jv append_new(jv fired, jv more)
{
	jv_array_foreach(more, k, g) {
		bool seen = false;

		jv_array_foreach(fired, m, f) {
			const char *a = json_get_str(f, "id"), *b = json_get_str(g, "id");
			seen = seen || (a && b && strcmp(a, b) == 0);
			jv_free(f);
			(void)m;
		}
		if (seen)
			jv_free(g);
		else
			fired = jv_array_append(fired, g);
		(void)k;
	}
	jv_free(more);
	return fired;
}

/* The configured and the ladder's gates before node nd, for the results
 * ended[0..n) (none: the start), appended to *fired; -1 when a condition
 * does not evaluate. */
static int step_gates(struct gx *x, const struct graph_node *nd, const size_t *ended, size_t n, jv *fired)
{
	struct sup *s = x->s;
	size_t steps = n ? n : 1;

	sup_commit_batch(s);            /* (not held while the gates' jq runs) */
	for (size_t k = 0; k < steps; k++) {
		jv more;

		if (gates_fired(&more, s->o->cfg, s->state, n ? label(&x->g->nodes[ended[k]]) : NULL, label(nd)) < 0) {
			sup_say("%s\n", forge_last_error());
			return -1;
		}
		*fired = append_new(*fired, more);
	}
	bool others = jv_array_length(jv_copy(*fired)) > 0;
	for (size_t k = 0; nd->phase && k < steps; k++)
		*fired = append_new(*fired, gates_ladder(jv_array(), s->o->cfg, s->level, s->state,
							 n ? label(&x->g->nodes[ended[k]]) : NULL, nd->phase, others));
	return 0;
}

/*
 * Node i's own gate: LADDER_NODE, LADDER_NODE_N before its Nth run (a run
 * again is a new question, as the ladder's own gates); it shows what the
 * nodes it needs made (their result keys: the rules before compile's
 * schema, not a plan view of a run with no plan).
 */
static jv own_gate(struct gx *x, size_t i)
{
	const struct graph_node *nd = &x->g->nodes[i];
	char base[300], id[320], prompt[400];
	jv run = run_of(x, i), shows = jv_array();
	int attempt = (int)json_get_num(run, "attempt", 0) + 1;

	jv_free(run);
	snprintf(base, sizeof base, "%s_%s", nd->gate.ladder, nd->id);
	if (attempt > 1)
		snprintf(id, sizeof id, "%s_%d", base, attempt);
	else
		snprintf(id, sizeof id, "%s", base);
	snprintf(prompt, sizeof prompt, "node '%s' is about to run (%s)", nd->id, nd->gate.ladder);
	for (size_t k = 0; k < nd->nneeds; k++)
		if (x->g->nodes[nd->needs[k]].result_key)
			shows = jv_array_append(shows, jv_string(x->g->nodes[nd->needs[k]].result_key));
	jv g = json_set(json_set(json_set(jv_object(), "id", jv_string(id)), "ladder", jv_string(nd->gate.ladder)),
			"phase", jv_string(nd->id));
	g = json_set(json_set(g, "prompt", jv_string(nd->gate.prompt ? nd->gate.prompt : prompt)), "shows", shows);
	return json_set(g, "timeout_s", jv_number(86400));
}

static enum gate_outcome node_gates(struct gx *x, size_t i)
{
	struct sup *s = x->s;
	const struct graph_node *nd = &x->g->nodes[i];
	enum gate_outcome r = GATE_PASS;
	jv fired = jv_array();
	size_t ended[x->g->n ? x->g->n : 1];

	if (step_gates(x, nd, ended, results_to_gate(x, ended), &fired) < 0) {
		jv_free(fired);
		return GATE_ERROR;
	}
	bool holds = true;
	if (nd->has_gate && nd->gate.when)
		sup_commit_batch(s);    /* (not held while a user's jq runs) */
	if (nd->has_gate && nd->gate.when && jqexpr_test(&holds, nd->gate.when, s->state) < 0) {
		sup_say("node '%s': gate when: %s\n", nd->id, forge_last_error());
		jv_free(fired);
		return GATE_ERROR;
	}
	if (nd->has_gate && holds)
		fired = jv_array_append(fired, own_gate(x, i));
	/* The state the last node left, checkpointed before a human may be
	 * asked (a crash or a closed terminal at the prompt lost it: the
	 * phase ran, and was paid, again on resume, and the approval then
	 * passed a plan no one saw). */
	if (jv_array_length(jv_copy(fired)) > 0)
		flush(x);
	if (s->store_error[0]) {        /* no one asked: the run stops (sup_store_stop) */
		jv_free(fired);
		return GATE_PASS;
	}
	jv_array_foreach(fired, k, gate) {
		if (r == GATE_PASS)
			r = sup_pass_gate(s, gate, label(nd));
		jv_free(gate);
		(void)k;
	}
	jv_free(fired);
	return r;
}

/* Ready nodes whose `when` does not hold are skipped.  1 when one was, 0 when
 * none was, -1 when a condition did not evaluate (the run ended: *code). */
static int skip_ready(struct gx *x, const size_t *ready, size_t n, int *code)
{
	int skipped = 0;

	for (size_t k = 0; k < n; k++) {
		const struct graph_node *nd = &x->g->nodes[ready[k]];
		bool holds;
		char why[600];

		if (!nd->when)
			continue;
		sup_commit_batch(x->s);     /* (not held while a user's jq runs) */
		if (jqexpr_test(&holds, nd->when, x->s->state) < 0) {
			if (sup_interrupted())
				return 1;   /* the run pauses: schedule() looks again */
			sup_say("node '%s': when: %s\n", nd->id, forge_last_error());
			*code = fail(x, ready[k], "has a when that does not evaluate", FORGE_EXIT_USAGE);
			return -1;
		}
		if (holds)
			continue;
		snprintf(why, sizeof why, "its when does not hold: %.500s", nd->when);
		set_status(x, ready[k], NODE_SKIPPED, why);
		sup_progress(x->s, "  – %s skipped: %s", nd->id, why);
		skipped = 1;
	}
	return skipped;
}

/* The state as a checkpoint when it changed, labelled with the node that
 * ended last (its result), else the phase the state names, else "init". */
static void flush(struct gx *x)
{
	const char *phase = json_get_str(x->s->state, "phase");

	if (!x->dirty)
		return;
	x->dirty = false;
	sup_checkpoint(x->s, x->last_node ? x->last_node : phase ? phase : "init");
}

/* ---- a node's end ----------------------------------------------------------- */

/*
 * A node's returned state with the supervisor's own keys as the node
 * started with them (bounces, nodes, node_runs: a node cannot drop or reset
 * them, so a bounce's max holds), and an accumulator it left out or lowered
 * (cost.usd) as it was: what a node spends is never negative.  Takes ret.
 */
static jv own_keys(jv ret, jv base)
{
	static const char *const own[] = { "bounces", "nodes", "node_runs" };
	static const char *const spent[] = { "cost", "budget", "usage" };

	if (jv_get_kind(ret) != JV_KIND_OBJECT)
		return ret;
	for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
		ret = json_has(base, own[k]) ? json_set(ret, own[k], json_get(base, own[k]))
					     : jv_object_delete(ret, jv_string(own[k]));
	for (size_t k = 0; k < sizeof spent / sizeof spent[0]; k++)
		if (!json_has(ret, spent[k]) && json_has(base, spent[k]))
			ret = json_set(ret, spent[k], json_get(base, spent[k]));
	jv before = json_get(base, "cost"), after = json_get(ret, "cost");
	double was = json_get_num(before, "usd", 0);

	if (jv_get_kind(after) == JV_KIND_OBJECT && json_get_num(after, "usd", 0) < was)
		ret = json_set(ret, "cost", json_set(jv_copy(after), "usd", jv_number(was)));
	jv_free(before);
	jv_free(after);
	return ret;
}

/* The run's state with job j's result merged in (conflict: why it cannot
 * be, the state unchanged): what j changed since it started beside what
 * changed meanwhile (the nodes that ended, the supervisor's own records).
 * A stale job's result is dropped but for what it cost. */
static void merge_result(struct gx *x, struct job *j, char *conflict, size_t len)
{
	struct sup *s = x->s;
	jv ret = own_keys(jv_copy(j->returned), j->base), merged;

	if (j->stale && jv_get_kind(ret) == JV_KIND_OBJECT) {
		static const char *const spent[] = { "cost", "budget", "usage" };
		jv only = jv_copy(j->base);

		for (size_t k = 0; k < sizeof spent / sizeof spent[0]; k++)
			if (json_has(ret, spent[k]))
				only = json_set(only, spent[k], json_get(ret, spent[k]));
		jv_free(ret);
		/* what the run's state says, not what the dropped node started from */
		only = json_set(only, "phase", json_get(s->state, "phase"));
		ret = json_set(only, "status", json_get(s->state, "status"));
	}
	/* A conflict's message names the nodes in the pipeline's order, whichever ended first. */
	bool first = j->overlap.len && j->first_overlap > j->node;
	jv both[2] = { first ? ret : s->state, first ? s->state : ret };
	const char *other = j->overlap.len ? j->overlap.buf : "the supervisor", *id = x->g->nodes[j->node].id;
	const char *names[2] = { first ? id : other, first ? other : id };

	if (graph_merge_states(&merged, j->base, both, names, 2, conflict, len) == 0) {
		jv_free(s->state);
		s->state = merged;
		if (first && jv_get_kind(ret) == JV_KIND_OBJECT) {  /* phase and status: the node's */
			s->state = json_set(s->state, "phase", json_get(ret, "phase"));
			s->state = json_set(s->state, "status", json_get(ret, "status"));
		}
	}
	jv_free(ret);
}

/* Node j ended (lock held): its result merged, its status, and the nodes
 * still running told who ended (their merges' messages). */
static void record_end(struct gx *x, struct job *j, char *conflict, size_t len)
{
	struct sup *s = x->s;
	const struct graph_node *nd = &x->g->nodes[j->node];

	outcome_of(j);
	if (j->rc == 0) {
		jv ev = stream_event_new(&s->out, "phase.exited", json_set(json_set(json_set(jv_object(),
			"phase", jv_string(label(nd))), "node", jv_string(nd->id)), "exit_code", jv_number(j->exit_code)));
		/* (about the node's phase: its phase too, as its own events) */
		ev = json_set(ev, "phase", jv_string(label(nd)));
		sup_emit_event(s, json_set(ev, "duration_ms", jv_number((double)j->ms)));
	}
	if (jv_get_kind(j->returned) == JV_KIND_OBJECT) {
		jv before = json_get(j->base, "cost"), after = json_get(j->returned, "cost");
		/* a state without cost (a program's) spent nothing; never less */
		double spent = jv_get_kind(after) == JV_KIND_OBJECT
			? json_get_num(after, "usd", 0) - json_get_num(before, "usd", 0) : 0;

		if (spent < 0)
			spent = 0;

		s->phase_cost = json_set(s->phase_cost, nd->id, jv_number(json_get_num(s->phase_cost, nd->id, 0) + spent));
		jv_free(before);
		jv_free(after);
	} else if (j->spent_usd > 0 || j->spent_tokens > 0) {
		/* Interrupted or killed, it wrote no state: what its calls cost
		 * still counts (the budget breakers read the run's cost). */
		sup_add_spend(s, j->spent_usd, j->spent_tokens);
		s->phase_cost = json_set(s->phase_cost, nd->id,
					 jv_number(json_get_num(s->phase_cost, nd->id, 0) + j->spent_usd));
	}
	merge_result(x, j, conflict, len);
	for (size_t i = 0; i < x->g->n; i++) {
		struct job *o = x->busy[i];

		if (!o || o == j)
			continue;
		if (!o->overlap.len || j->node < o->first_overlap)
			o->first_overlap = j->node;
		buf_addf(&o->overlap, "%s%s", o->overlap.len ? ", " : "", nd->id);
	}
	x->busy[j->node] = NULL;
	x->nactive--;
	x->dirty = true;
	x->last_node = nd->id;
	x->reflect_due = true;
	write_nodes(x);
	if (j->stale) {
		sup_progress(s, "  – %s ended %s: dropped, a bounce sent it back", nd->id, j->outcome);
		return;
	}
	set_run(x, j->node, "status", jv_string(j->outcome));
	if (nd->phase && strcmp(j->outcome, "ok") == 0)
		phase_ended_ok(x, nd->phase);
	/* A phase's result is a gate's to look at before the next nodes start (results_to_gate). */
	if (nd->phase)
		set_run(x, j->node, "gated", jv_bool(strcmp(j->outcome, "ok") != 0));
	char ended[64];
	snprintf(ended, sizeof ended, "it ended %s", j->outcome);
	set_status(x, j->node, status_after(j->outcome), ended);
	jv cost = json_get(s->state, "cost");
	bool color = term_color(STDERR_FILENO), ok = strcmp(j->outcome, "ok") == 0;
	bool skipped = strcmp(j->outcome, "skipped") == 0;
	/* A phase's line (✓ ok); a program's names its node.  Skipped is
	 * `–`, as forge status's legend has it (README). */
	sup_progress(s, "  %s%s%s %s%s%s  (%.1f s, %d tool calls, run cost $%.4f)",
		     term_sgr(color, ok ? TERM_GREEN : skipped ? TERM_DIM : TERM_RED), ok ? "✓" : skipped ? "–" : "✗",
		     term_sgr(color, TERM_RESET),
		     nd->phase ? "" : nd->id, nd->phase ? "" : " ", j->outcome, (double)j->ms / 1000, s->tools_run,
		     json_get_num(cost, "usd", 0));
	jv_free(cost);
}

static void job_free(struct job *j)
{
	free(j->input);
	free(j->cwd);
	jv_free(j->base);
	jv_free(j->returned);
	buf_release(&j->overlap);
	free(j);
}

/*
 * Job j ended (lock held; its thread joined): recorded, and decided at once
 * unless the run has ended already (code >= 0: it only records, a resume
 * decides).  A result that is not ok is checkpointed before it is decided.
 * Returns code, or the run's end.
 */
static int job_done(struct gx *x, struct job *j, int code)
{
	struct sup *s = x->s;
	size_t i = j->node;
	char conflict[600] = "";
	bool stale = j->stale;

	record_end(x, j, conflict, sizeof conflict);
	char outcome[32];
	snprintf(outcome, sizeof outcome, "%s", j->outcome);
	job_free(j);
	if (stale)
		return code;
	/* (stopped because the run is another's: nothing to decide here) */
	if (sup_lease_lost())
		return code >= 0 ? code : x->nactive ? -1 : sup_lease_lost_end(s);
	if (strcmp(outcome, "ok") != 0 || conflict[0])
		flush(x);
	if (code >= 0)
		return code;
	if (conflict[0]) {
		sup_say("%s\n", conflict);
		return sup_end_run(s, "failed", conflict, FORGE_EXIT_DEPENDENCY);
	}
	if (strcmp(outcome, "interrupted") == 0 || sup_interrupted())
		return -1;      /* the run pauses once every node has stopped */
	/* Killed, or (stopped) sent SIGINT or SIGTERM alone and stopped
	 * itself with exit 130: an interruption, as of the run (before:
	 * "crashed", exit 5).  The run pauses; a resume runs the node again. */
	bool stopped = strcmp(outcome, "stopped") == 0;
	if (stopped || strcmp(outcome, "crashed") == 0) {
		char why[400];

		snprintf(why, sizeof why, "node '%s' was %s; resume runs it again", x->g->nodes[i].id,
			 stopped ? "interrupted" : "killed by a signal");
		/* (killed too -- the OOM killer's SIGKILL: the run is paused
		 * and resumable as well; before, only "✗ crashed" was said) */
		sup_say("%s (forge resume %s)\n", why, s->trace);
		return sup_end_run(s, "paused", why, stopped ? FORGE_EXIT_INTERRUPTED : FORGE_EXIT_DEPENDENCY);
	}
	/* A node a bounce sent back is pending again: nothing to decide. */
	if (x->st[i] != NODE_PENDING && strcmp(outcome, "ok") != 0)
		return decide(x, i, outcome);
	return -1;
}

/* ---- starting nodes ------------------------------------------------------- */

/* Node i starts in a thread of its own (lock held), from the state as it
 * is; alone (the only node running, and no other ready), in this one. */
static void launch(struct gx *x, size_t i, bool alone, double money_usd)
{
	struct sup *s = x->s;
	struct job *j = xcalloc(1, sizeof *j);
	jv task = json_get(s->state, "task");
	const char *wt = json_get_str(task, "worktree");
	char *line = json_dumps(jv_copy(s->state), false);
	size_t len = strlen(line);

	j->x = x;
	j->node = i;
	j->input = xrealloc(line, len + 2);
	memcpy(j->input + len, "\n", 2);
	j->input_len = len + 1;
	j->cwd = wt ? xstrdup(wt) : NULL;
	j->base = jv_copy(s->state);
	j->returned = jv_null();
	j->run_deadline_ms = s->run_deadline_ms;
	j->money_usd = x->g->nodes[i].phase ? money_usd : -1;
	j->overlap = (struct buf)BUF_INIT;
	jv_free(task);
	x->busy[i] = j;
	x->nactive++;
	j->threaded = !alone && pthread_create(&j->th, NULL, job_thread, j) == 0;
	if (!j->threaded) {
		/* It runs here (its output takes the lock): alone, nothing else
		 * can start before it ends; or no thread could be made. */
		pthread_mutex_unlock(&s->lock);
		run_job(j);
		pthread_mutex_lock(&s->lock);
		j->finished = true;
	}
}

/* Start ready[0..take) of all_ready (lock held): running, the state
 * checkpointed, then their processes.  False when that checkpoint could
 * not be committed (s->store_error, or the lease lost): none started. */
static bool start_nodes(struct gx *x, const size_t *ready, size_t take, size_t all_ready)
{
	struct sup *s = x->s;
	struct buf ids = BUF_INIT, others = BUF_INIT;
	size_t before = x->nactive;

	for (size_t i = 0; i < x->g->n; i++)
		if (x->busy[i])
			buf_addf(&others, "%s%s", others.len ? ", " : "", x->g->nodes[i].id);
	for (size_t k = 0; k < take; k++) {
		size_t i = ready[k];
		jv run = run_of(x, i);
		int attempt = (int)json_get_num(run, "attempt", 0) + 1;

		jv_free(run);
		set_run(x, i, "attempt", jv_number(attempt));
		set_status(x, i, NODE_RUNNING, x->why[i] ? x->why[i] : "its needs are done");
		free(x->why[i]);
		x->why[i] = NULL;
		buf_addf(&ids, "%s%s", k ? ", " : "", x->g->nodes[i].id);
	}
	/* A phase alone moves the run's state machine (planning, implementing,
	 * …); nodes at the same time have their statuses. */
	if (take == 1 && !before && x->g->nodes[ready[0]].phase)
		sup_transition(s, pipeline_state_of(x->g->nodes[ready[0]].phase), ids.buf);
	flush(x);
	store_run_update(s->o->store, s->trace, "running", x->g->nodes[ready[0]].id, NULL);
	s->running = x->g->nodes[ready[0]].id;
	s->tools_run = 0;
	sup_commit_batch(s);        /* the phases write to the database too */
	/* A phase acts on no state that is not in the database: it is what a
	 * resume starts from (before: a failed commit of the "init" checkpoint
	 * was only noted, and the plan phase ran, and was paid, unrecorded). */
	if (s->store_error[0] || sup_lease_lost()) {
		buf_release(&ids);
		buf_release(&others);
		return false;
	}
	sup_progress(s, "▶ %s%s%s%s%s", ids.buf, take > 1 ? " (at the same time)" : "", before ? " (while " : "",
		     others.len ? others.buf : "", before ? (before == 1 ? " runs)" : " run)") : "");
	/* One status line on the terminal: relayed only when one node runs.
	 * The environment changes only while no thread runs a process. */
	if (!before) {
		if (take == 1 && s->o->progress && isatty(STDERR_FILENO))
			setenv(TERM_RELAY_ENV, "1", 1);
		else
			unsetenv(TERM_RELAY_ENV);
	}
	/* The phases that start share what the run's money limits leave
	 * after what the running ones hold (their shares, until they end and
	 * their cost is in the state): together they spend no more than the
	 * run may, each at most one model call past its share (before: each
	 * had the whole budget, and two nodes spent it twice). */
	double pool = sup_money_left(s);
	size_t phases = 0;
	for (size_t i = 0; i < x->g->n; i++)
		if (x->busy[i] && x->busy[i]->money_usd > 0)
			pool -= x->busy[i]->money_usd;
	for (size_t k = 0; k < take; k++)
		phases += x->g->nodes[ready[k]].phase != NULL;
	double share = phases ? fmax(0, pool) / (double)phases : 0;
	/* Only one ready and none running: none can start before it ends. */
	for (size_t k = 0; k < take; k++)
		launch(x, ready[k], take == 1 && !before && all_ready == 1, share);
	buf_release(&ids);
	buf_release(&others);
	return true;
}

/* The run's end before anything more starts: interrupted, cancelled,
 * complete.  -1 when it goes on. */
static int stop_or_end(struct gx *x)
{
	struct sup *s = x->s;

	if (sup_interrupted() || sup_lease_lost()) {
		flush(x);
		return x->nactive ? -1 : interrupted_end(s);
	}
	if (x->nactive)
		return -1;
	if (sup_cancelled(s)) {
		flush(x);
		return sup_stop_cancelled(s);
	}
	if (graph_is_complete(x->g, x->st)) {
		flush(x);
		return sup_end_run(s, "completed", NULL, FORGE_EXIT_OK);
	}
	return -1;
}

/*
 * Start what is ready, as much as --jobs leaves room for, after the
 * reflection, the breakers and the gates (lock held).  -1: go on (*started
 * says whether anything did), else the exit status.
 */
static int start_ready(struct gx *x, bool *started)
{
	struct sup *s = x->s;
	size_t ready[x->g->n ? x->g->n : 1], n = 0, all;
	char why[512];
	int code = -1;

	*started = false;
	if ((code = sup_store_stop(s)) >= 0)
		return code;
	if ((code = stop_or_end(x)) >= 0 || sup_interrupted())
		return code;
	all = graph_ready(x->g, x->st, ready);
	for (size_t k = 0; k < all; k++)
		if (!x->busy[ready[k]])     /* a node sent back while it runs waits for its end */
			ready[n++] = ready[k];
	int sk = skip_ready(x, ready, n, &code);
	if (sk != 0) {
		*started = sk > 0;          /* something changed: look again */
		return sk < 0 ? code : -1;
	}
	if (n == 0 && !x->nactive) {
		flush(x);
		return sup_end_run(s, "failed", "no node can run: a node it needs did not end ok", FORGE_EXIT_DEPENDENCY);
	}
	size_t room = x->nactive < (size_t)x->jobs ? (size_t)x->jobs - x->nactive : 0;
	size_t take = n < room ? n : room;
	if (take == 0)
		return -1;
	if (x->reflect_due && x->last_node) {
		x->reflect_due = false;
		sup_reflect_now(s, x->last_node, false);
		/* a Ctrl-C that cut its call short: nothing more starts */
		if (sup_interrupted())
			return stop_or_end(x);
	}
	const char *tripped = sup_breaker(s, why, sizeof why);
	if (tripped) {
		sup_emit(s, "breaker.tripped", json_set(json_set(jv_object(), "breaker", jv_string(tripped)),
							 "reason", jv_string(why)));
		x->dirty = true;
		flush(x);
		/* (stderr says so as the run ends, with the way on: sup_finish) */
		return sup_end_run(s, "failed", why, FORGE_EXIT_TRIPPED);
	}
	for (size_t k = 0; k < take; k++) {
		enum gate_outcome g = node_gates(x, ready[k]);

		if (g != GATE_PASS)
			flush(x);
		if (g == GATE_STOP)
			return sup_end_run(s, "failed", "a gate was rejected", FORGE_EXIT_REJECTED);
		/* (as a node's own when that does not evaluate: the pipeline's
		 * or the configuration's mistake, exit 2; before: exit 1, "a gate
		 * was rejected", though no one was asked) */
		if (g == GATE_ERROR && sup_interrupted())
			return stop_or_end(x);  /* a signal cut its condition short */
		if (g == GATE_ERROR)
			return fail(x, ready[k], "has a gate condition that does not evaluate", FORGE_EXIT_USAGE);
		if (g == GATE_WAIT)
			return sup_gate_paused(s, "waiting for a human at a gate");
	}
	results_gated(x);
	if ((code = sup_store_stop(s)) >= 0)
		return code;
	if (!start_nodes(x, ready, take, n))
		return sup_store_stop(s);
	*started = true;
	return -1;
}

/* Wait (lock held) until a running job has finished; it is taken off, its thread joined. */
static struct job *next_finished(struct gx *x)
{
	for (;;) {
		for (size_t i = 0; i < x->g->n; i++) {
			struct job *j = x->busy[i];

			if (j && j->finished) {
				if (j->threaded)
					pthread_join(j->th, NULL);
				return j;
			}
		}
		/* Nothing held while waiting: a node's thread commits only when
		 * its node writes, and a phase that writes to the database itself
		 * (its model call's log) would wait on the lock of what this
		 * thread recorded -- the end of the node before -- and that node
		 * writes nothing until it gets it (before: 10 s, then the row was
		 * lost; the lease could not be renewed either). */
		sup_commit_batch(x->s);
		pthread_cond_wait(&x->ended, &x->s->lock);
	}
}

/* Until the run ends and no node runs any more.  Returns the exit status. */
static int schedule(struct gx *x)
{
	struct sup *s = x->s;
	int code = -1;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		bool started = false;

		if (code < 0)
			code = start_ready(x, &started);
		if (started)
			continue;
		if (!x->nactive) {
			if (code >= 0)
				break;
			code = stop_or_end(x);
			if (code >= 0)
				break;
			continue;       /* cannot happen: with nothing running, start_ready starts or ends */
		}
		code = job_done(x, next_finished(x), code);
	}
	flush(x);
	sup_commit_batch(s);
	if (sup_lease_lost())
		code = sup_lease_lost_end(s);
	/* the end itself not recorded: not a success */
	if (code == FORGE_EXIT_OK && s->store_error[0]) {
		sup_say("the run's end cannot be recorded: %s\n", s->store_error);
		code = FORGE_EXIT_DEPENDENCY;
	}
	pthread_mutex_unlock(&s->lock);
	return code;
}

/*
 * What a repository's own pipeline (graph->project) may not pass a phase
 * through a node's args unless the person's configuration trusts the
 * project: what a human decides (forge-deploy --force, --approve), the
 * person's own places (--config, a layer that counts as theirs and could
 * trust the project; --db; --repo), and, as for the same keys of the
 * repository's configuration (config_project_widens), an endpoint that
 * is not theirs or a deploy that goes further or past the production gate.
 */
static const struct {
	const char *name;
	bool takes_value;
	const char *key;            /* refused only when its value loosens this key; NULL: always */
} refused_opts[] = {
	{ "force", false, NULL },
	{ "approve", false, NULL },
	{ "config", true, NULL },
	{ "db", true, NULL },
	{ "repo", true, NULL },
	{ "base-url", true, "llm.base_url" },
	{ "strategy", true, "deploy.strategy" },
	{ "environment", true, "deploy.environment" },
	{ "remote", true, "deploy.remote" },
};

/* The entry of refused_opts that long option arg ("--NAME" or
 * "--NAME=V") names, as getopt_long reads it (a unique prefix names its
 * option); -1 for none.  *ambiguous: a prefix of several (getopt refuses
 * it anyway; refused here whatever its value). */
static int refused_opt(const char *arg, bool *ambiguous)
{
	size_t len = strcspn(arg + 2, "=");
	int found = -1, n = 0;

	*ambiguous = false;
	if (strncmp(arg, "--", 2) != 0 || len == 0)
		return -1;
	for (size_t i = 0; i < sizeof refused_opts / sizeof *refused_opts; i++) {
		const char *name = refused_opts[i].name;

		if (strncmp(name, arg + 2, len) != 0)
			continue;
		if (strlen(name) == len)
			return (int)i;
		found = (int)i;
		n++;
	}
	*ambiguous = n > 1;
	return found;
}

/* Whether node nd runs a forge program (a phase, or a program named forge*),
 * whose options refused_opts are. */
static bool runs_forge(const struct graph_node *nd)
{
	const char *base = nd->path ? strrchr(nd->path, '/') : NULL;

	base = base ? base + 1 : nd->path;
	return nd->phase || (base && strncmp(base, "forge", 5) == 0);
}

/* Into x->dropped, the args of the project pipeline's nodes that are not
 * passed (refused_opts), each said on stderr (not with -q) and recorded in
 * a run.pipeline_ignored event {"ignored": [{"node", "arg", "source"}],
 * "setting": "trust_project"}, as the repository's configuration values
 * are (app/cli.c, run.config_ignored).  Nothing for another pipeline or
 * under trust_project. */
static void refuse_args(struct gx *x)
{
	const struct supervise_opts *o = x->s->o;
	jv ignored;

	struct buf said = BUF_INIT;

	if (!x->g->project || config_get_bool(o->cfg, "trust_project"))
		return;
	ignored = jv_array();
	for (size_t i = 0; i < x->g->n; i++) {
		const struct graph_node *nd = &x->g->nodes[i];

		for (size_t k = 0; runs_forge(nd) && k < nd->nargs && strcmp(nd->args[k], "--") != 0; k++) {
			bool ambiguous, refuse;
			int e = refused_opt(nd->args[k], &ambiguous);

			if (e < 0)
				continue;
			const char *eq = strchr(nd->args[k], '=');
			bool next = refused_opts[e].takes_value && !eq && k + 1 < nd->nargs;
			const char *value = eq ? eq + 1 : next ? nd->args[k + 1] : NULL;

			refuse = ambiguous || !refused_opts[e].key || !value;
			if (!refuse) {
				jv v = jv_string(value);

				refuse = config_project_widens(o->cfg, refused_opts[e].key, v);
				jv_free(v);
			}
			if (!refuse) {
				k += next;
				continue;
			}
			if (!x->dropped)
				x->dropped = xcalloc(x->g->n, sizeof *x->dropped);
			if (!x->dropped[i])
				x->dropped[i] = xcalloc(nd->nargs, sizeof **x->dropped);
			x->dropped[i][k] = true;
			x->dropped[i][k + next] = true;
			buf_addf(&said, "%s%s%s%s (node '%s')", said.len ? ", " : "", nd->args[k], next ? " " : "",
				 next ? value : "", nd->id);
			ignored = jv_array_append(ignored, json_set(json_set(json_set(jv_object(),
				"node", jv_string(nd->id)), "arg", jv_string(nd->args[k])), "source",
				jv_string(x->g->source)));
			k += next;
		}
	}
	if (said.len && !o->quiet)
		sup_say("warning: ignoring %s of %s: a repository's pipeline may not pass a phase "
			"what a human decides (--force, --approve), nor your configuration, database or "
			"repository, nor loosen your endpoint or deploy settings; to let it, set "
			"\"trust_project\": true in your own configuration (forge config set --global "
			"trust_project true, or a --config file)\n", said.buf, x->g->source);
	buf_release(&said);
	if (jv_array_length(jv_copy(ignored)) > 0)
		sup_emit(x->s, "run.pipeline_ignored", json_set(json_set(jv_object(), "ignored", ignored),
								  "setting", jv_string("trust_project")));
	else
		jv_free(ignored);
}

int sup_graph_run(struct sup *s, int jobs)
{
	struct gx x = { .s = s, .g = s->graph, .jobs = jobs > 0 ? jobs : 1 };
	int code = -1;

	/* A new run's state is not checkpointed yet; a resume's is its last
	 * checkpoint until something changed it (the calls it recovered,
	 * --budget, a clone adopted): only then is it kept again (before: a
	 * second row of the same whole state, and a state.updated that set
	 * nothing, before the first node started). */
	x.dirty = !jv_equal(jv_copy(s->saved), jv_copy(s->state));
	/* a condition that does not end fails its node; one a signal cuts
	 * short pauses the run */
	jqexpr_set_bounds(0, sup_interrupted);

	x.st = xcalloc(x.g->n ? x.g->n : 1, sizeof *x.st);
	x.why = xcalloc(x.g->n ? x.g->n : 1, sizeof *x.why);
	x.busy = xcalloc(x.g->n ? x.g->n : 1, sizeof *x.busy);
	pthread_cond_init(&x.ended, NULL);
	refuse_args(&x);
	read_nodes(&x);
	/* A resume reflects first on what ended last, as after any node's end. */
	int last = graph_index(x.g, json_get_str(s->state, "phase") ? json_get_str(s->state, "phase") : "");
	if (last >= 0) {
		x.last_node = x.g->nodes[last].id;
		x.reflect_due = true;
	}
	/* A node left blocked (a human was asked) is decided again on its last outcome. */
	for (size_t i = 0; i < x.g->n && code < 0; i++) {
		if (x.st[i] != NODE_BLOCKED)
			continue;
		jv run = run_of(&x, i);
		char outcome[32];

		snprintf(outcome, sizeof outcome, "%s", json_get_str(run, "status") ? json_get_str(run, "status")
										  : "rejected");
		jv_free(run);
		code = decide(&x, i, outcome);
	}
	if (code < 0)
		code = schedule(&x);
	else
		flush(&x);
	for (size_t i = 0; i < x.g->n; i++)
		free(x.why[i]);
	free(x.why);
	free(x.busy);
	free(x.st);
	for (size_t i = 0; x.dropped && i < x.g->n; i++)
		free(x.dropped[i]);
	free(x.dropped);
	jv_free(x.runs);
	pthread_cond_destroy(&x.ended);
	return code;
}
