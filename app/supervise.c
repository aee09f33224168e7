/* supervise.c - the pipeline supervisor's engine; see supervise.h. */
#include "app/supervise.h"
#include "app/cli.h"
#include "app/heartbeat.h"
#include "app/supervise_int.h"
#include "app/runshare.h"
#include "app/human.h"
#include "app/phase.h"
#include "app/runview.h"
#include "core/buf.h"
#include "core/money.h"
#include "data/config.h"
#include "core/forge.h"
#include "engine/gates.h"
#include "engine/graph.h"
#include "engine/snapshot.h"
#include "git/git.h"
#include "core/ids.h"
#include "core/json.h"
#include "llm/llm.h"
#include "memory/memory.h"
#include "engine/pipeline.h"
#include "os/proc.h"
#include "app/prompt.h"
#include "app/gateview.h"
#include "app/reflect_run.h"
#include "app/term.h"
#include "core/secret.h"
#include "core/tmpdir.h"
#include "store/db.h"
#include "store/store.h"
#include "data/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH_MAX 500           /* events per transaction at most */

static volatile sig_atomic_t interrupted;
/* set by the heartbeat's thread: another process took the run's lease */
static volatile sig_atomic_t lease_lost;

bool sup_interrupted(void)
{
	return interrupted != 0;
}

bool sup_lease_lost(void)
{
	return lease_lost != 0;
}

/* (the heartbeat's thread) The run is another process's now: its phases
 * are stopped, and nothing more of this one is recorded. */
static void on_lease_lost(void *arg)
{
	(void)arg;
	lease_lost = 1;
	proc_kill_running(SIGTERM);
}

int sup_lease_lost_end(struct sup *s)
{
	if (!s->lease_lost_said)
		sup_say("run %s is being worked on by another process, which took its lease "
				"over; this one stopped its phase and recorded nothing more (forge status %s)\n",
			s->trace, s->trace);
	s->lease_lost_said = true;
	s->ended = false;
	return FORGE_EXIT_HUMAN;
}

void supervise_interrupt(int sig)
{
	interrupted = 1;
	/* a reflection's model call (Loop 3) under way ends at once, recorded
	 * as interrupted with what arrived, and none is made after it (before:
	 * the Ctrl-C waited for its whole answer, and the next phase started) */
	llm_interrupt();
	proc_kill_running(sig == SIGINT ? SIGINT : SIGTERM);
}

/* ---- events ------------------------------------------------------------- */

/*
 * What the supervisor writes goes into one batch, a write transaction: the
 * events a phase streams (committed whenever its output pauses), then, from
 * the phase's exit to the next phase's start, its last events, phase.exited,
 * the checkpoint, the run's cost and status, the gates and transitions: one
 * commit instead of one per row.  The batch is committed (commit_batch)
 * before a phase starts (it writes to the database too), before a human is
 * asked, before memory is written (its own transactions) and at the end.
 */
/* The reason of a run that stopped before its first checkpoint was kept. */
#define SUP_UNKEPT "the database could not be written before the run's first checkpoint"
/* ... and of one whose process stopped before it (resume_unkept): killed
 * (kill -9, the machine down), or a stop_unkept that could not mark it. */
#define SUP_UNKEPT_GONE "the run's process stopped before its first checkpoint was kept (killed, or the " \
	"database could not be written)"

/* A write of the run's record failed (forge_last_error() says why): the
 * first one is kept, and the run stops before its next step (a disk that
 * filled up: before, the run went on to exit 0 "completed" with nothing
 * recorded after that point, a deploy included). */
static void store_failed(struct sup *s)
{
	/* (a commit found the run's lease another's: the fence, store.h;
	 * whatever the heartbeat saw yet, the run is that process's) */
	if (store_lease_fenced(s->o->store)) {
		if (!lease_lost)
			on_lease_lost(NULL);
		return;
	}
	if (!s->store_error[0])
		snprintf(s->store_error, sizeof s->store_error, "%s", forge_last_error());
}

/*
 * The run stops before its first checkpoint was kept: nothing of it can be
 * resumed (before: "forge resume T when the database can be written again",
 * and that resume found no checkpoint, exit 5, the run "interrupted" for
 * good, left alone by forge gc).  No phase has run (start_nodes), so there
 * is nothing to reflect on: the run is marked failed, with no run.completed,
 * when the database takes that much, so gc removes what it left.
 */
static int stop_unkept(struct sup *s)
{
	if (sup_cancelled(s))
		return sup_stop_cancelled(s);
	sup_commit_batch(s);    /* (the mark alone: whether it was written) */
	bool marked = store_run_update(s->o->store, s->trace, "failed", NULL, SUP_UNKEPT) == 0;

	sup_say("the run cannot be recorded: %s; it stops before its first checkpoint was kept, "
		"so it cannot be resumed: start the task again with `forge run` once the database can be "
		"written", s->store_error);
	if (marked)
		fprintf(stderr, " (run %s is marked failed: `forge gc` removes what it left)\n", s->trace);
	else
		fprintf(stderr, ", and drop this run with `forge cancel %s`\n", s->trace);
	return FORGE_EXIT_DEPENDENCY;
}

int sup_store_stop(struct sup *s)
{
	if (lease_lost)
		return sup_lease_lost_end(s);
	if (!s->store_error[0])
		return -1;
	if (!s->kept)
		return stop_unkept(s);
	sup_say("the run cannot be recorded: %s; it stops here (forge resume %s when the "
		"database can be written again)\n", s->store_error, s->trace);
	return sup_end_run(s, "paused", "the database could not be written", FORGE_EXIT_DEPENDENCY);
}

static void batch_open(struct sup *s)
{
	if (!s->pending && store_begin(s->o->store) < 0) {
		store_failed(s);
		return;
	}
	s->pending++;
}

void sup_commit_batch(struct sup *s)
{
	/* (the lease is another's: what this process wrote since its last
	 * commit is not the run's) */
	if (s->pending && lease_lost) {
		store_rollback(s->o->store);
		s->pending = 0;
		s->cp_batched = false;
		return;
	}
	if (s->pending) {
		if (store_commit(s->o->store) < 0)
			store_failed(s);
		else if (s->cp_batched)
			s->kept = true;
		s->pending = 0;
		s->cp_batched = false;
	}
}

/*
 * With git.push_remote set, the run's branch goes to that remote after each
 * checkpoint is on disk, so `forge resume` can carry the run on in another
 * clone (runshare.h).  Outside any transaction: a push may take a while.  A
 * push that fails is a warning and an event; the run goes on.
 */
static void push_run(struct sup *s)
{
	const char *remote = config_get_str(s->o->cfg, "git.push_remote");
	jv ev;

	if (!s->unpushed || lease_lost)
		return;
	s->unpushed = false;
	if (runshare_push(&ev, s->o->repo, remote, s->trace) == 0) {
		sup_emit(s, "run.pushed", ev);
		sup_commit_batch(s);    /* nothing held while a human may be asked next */
		return;
	}
	if (!s->o->quiet)
		sup_say("warning: cannot push the run's branch to '%s': %s; the run goes on\n",
			json_get_str(ev, "remote"), json_get_str(ev, "error"));
	sup_emit(s, "run.push_failed", ev);
	sup_commit_batch(s);
}

/*
 * Sync the write-ahead log, where the committed checkpoint is (the store
 * commits with synchronous = NORMAL, which syncs only at the log's own
 * checkpoints): `forge resume` starts from it after a power loss too.  Done
 * when the next phase has started and before it gets its input (on_started),
 * so the sync overlaps the phase's start-up yet nothing acts on a state that
 * is not on disk; or before a human is asked, and at the end.
 */
static void sync_log(struct sup *s)
{
	if (!s->unsynced)
		return;
	s->unsynced = false;
	sup_commit_batch(s);
	if (store_sync_log(s->o->store) < 0)     /* a no-op on PostgreSQL: each commit is durable */
		sup_say("warning: cannot sync the database '%s' to disk: the last checkpoint "
				"may not survive a power loss\n", store_path(s->o->store));
}

void sup_sync_checkpoint(struct sup *s)
{
	sync_log(s);
	push_run(s);
}

/* Everything written so far committed and synced. */
void sup_settle(struct sup *s)
{
	sup_commit_batch(s);
	sup_sync_checkpoint(s);
}

void sup_persist(struct sup *s, jv ev, const char *line, size_t len)
{
	batch_open(s);
	if (store_event_put(s->o->store, ev, line, len, NULL) < 0)
		store_failed(s);
	if (s->pending >= BATCH_MAX)
		sup_commit_batch(s);
}

void sup_persist_scanned(struct sup *s, const struct json_event *ev, const char *line, size_t len)
{
	batch_open(s);
	if (store_event_put_scanned(s->o->store, ev, line, len, NULL) < 0)
		store_failed(s);
	if (s->pending >= BATCH_MAX)
		sup_commit_batch(s);
}

/* Persist one of the supervisor's own events (consumed) in the batch. */
void sup_emit_event(struct sup *s, jv ev)
{
	char *line = json_dumps(jv_copy(ev), false);

	sup_persist(s, ev, line, strlen(line));
	if (s->o->json)
		stream_write_raw(&s->out, line, strlen(line));
	free(line);
	jv_free(ev);
}

void sup_emit(struct sup *s, const char *type, jv payload)
{
	sup_emit_event(s, stream_event_new(&s->out, type, payload));
}

void sup_say(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void sup_progress(struct sup *s, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	if (!s->o->progress)
		return;
	term_status_clear();
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	/* (what it names -- a task, a gate's reason -- may hold control
	 * characters: a progress line is one line, without them) */
	term_clean_line(b.buf, b.len);
	fprintf(stderr, "%s\n", b.len ? b.buf : "");
	buf_release(&b);
}

void sup_transition(struct sup *s, enum pipeline_state to, const char *reason)
{
	if (s->pl == to)
		return;
	sup_emit(s, "pipeline.state_changed", json_set(json_set(json_set(jv_object(),
		"from", jv_string(pipeline_state_name(s->pl))), "to", jv_string(pipeline_state_name(to))),
		"reason", jv_string(reason)));
	s->pl = to;
}

/* ---- the run's record ---------------------------------------------------- */

/* The state as the run's checkpoint, in the batch (synced before the next
 * phase gets it: sync_checkpoint), and the state.updated event that says
 * what changed since the last one (engine/snapshot.h), so the events alone
 * rebuild the state. */
void sup_checkpoint(struct sup *s, const char *phase)
{
	jv cost = json_get(s->state, "cost");
	char *id = NULL;

	batch_open(s);
	if (store_checkpoint_save(s->o->store, s->trace, phase, s->state, &id) == 0) {
		jv patch = state_patch(s->saved, s->state);
		jv ev = json_set(json_set(jv_object(), "checkpoint", jv_string(id)), "phase", jv_string(phase));

		ev = json_set(json_set(ev, "set", json_get(patch, "set")), "unset", json_get(patch, "unset"));
		jv_free(patch);
		/* (the event's phase is the checkpoint's, as its payload says;
		 * null for the run's first one, "init", as for the run's events) */
		ev = stream_event_new(&s->out, "state.updated", ev);
		if (strcmp(phase, "init") != 0)
			ev = json_set(ev, "phase", jv_string(phase));
		sup_emit_event(s, ev);
		jv_free(s->saved);
		s->saved = jv_copy(s->state);
		/* kept once committed (outside a batch that could not begin: now) */
		if (s->pending)
			s->cp_batched = true;
		else
			s->kept = true;
	} else {
		store_failed(s);
	}
	free(id);
	s->unsynced = true;
	s->unpushed = !s->o->dry_run && config_get_str(s->o->cfg, "git.push_remote") &&
		      *config_get_str(s->o->cfg, "git.push_remote");
	if (store_run_set_cost(s->o->store, s->trace, (int64_t)json_get_num(cost, "tokens", 0),
			       json_get_num(cost, "usd", 0)) < 0)
		store_failed(s);
	jv_free(cost);
}

/*
 * The run's status and start time as the database has them now (another
 * process may have cancelled it).  Only these two columns: the run's row
 * also holds its whole configuration, which store_run_get() parses.
 * Returns 0, 1 when the run has no row, -1 with a message.
 */
static int run_now(struct sup *s, enum run_status *status, int64_t *started)
{
	int rc = -1;

	*status = RUN_UNKNOWN;
	if (!s->run_row && db_prepare(&s->run_row, s->o->store,
				      "SELECT status, started_at FROM runs WHERE id = ?1") < 0)
		return -1;
	db_bind_text(s->run_row, 1, s->trace);
	int step = db_step(s->run_row);
	if (step == DB_ROW) {
		*status = run_status_of(db_col_text(s->run_row, 0));
		const char *at = db_col_text(s->run_row, 1);
		rc = at && timestamp_parse(started, at) == 0 ? 0 : 1;
	} else if (step == DB_DONE) {
		rc = 1;
	} else {
		store_fail(s->o->store, "cannot read run '%s'", s->trace);
	}
	db_reset(s->run_row);
	return rc;
}

/* Whether `forge cancel` cancelled the run (it also signals us). */
bool sup_cancelled(struct sup *s)
{
	enum run_status st;
	int64_t started;

	return run_now(s, &st, &started) >= 0 && st == RUN_CANCELLED;
}

/* The run was cancelled: stop where it is; its status stays cancelled. */
int sup_stop_cancelled(struct sup *s)
{
	s->ended = true;
	sup_say("run %s was cancelled\n", s->trace);
	return FORGE_EXIT_INTERRUPTED;
}

int sup_end_run(struct sup *s, const char *run_status, const char *error, int code)
{
	if (lease_lost)
		return sup_lease_lost_end(s);
	if (sup_cancelled(s))
		return sup_stop_cancelled(s);
	enum run_status rs = run_status_of(run_status);
	enum pipeline_state to = rs == RUN_COMPLETED ? PL_COMPLETED : rs == RUN_PAUSED ? PL_PAUSED : PL_FAILED;

	sup_transition(s, to, error ? error : run_status);
	s->ended = to != PL_PAUSED;
	/* "" clears the reason an earlier pause left (NULL would keep it). */
	store_run_update(s->o->store, s->trace, run_status, s->running, error ? error : "");
	jv cost = json_get(s->state, "cost");
	sup_emit(s, rs == RUN_PAUSED ? "run.paused" : "run.completed",
	     json_set(json_set(json_set(jv_object(), "status", jv_string(run_status)),
			       "reason", json_str_or_null(error)), "cost", cost));
	return code;
}

/* ---- run-level breakers ------------------------------------------------ */

/* Tool error rate of the run over the configured window, from its events;
 * -1 when it cannot be read. */
static double error_rate(struct sup *s, long *calls)
{
	char since[TIMESTAMP_LEN + 1];
	long failed = 0;
	double window = config_get_num(s->o->cfg, "safety.error_rate.window_s");

	int64_t from = now_ms() - (int64_t)(window * 1000);

	/* (the calls of an attempt before this resume are not this one's: a
	 * resume after the breaker tripped tripped again at once; nor are
	 * those of a phase that has since ended ok: it got past its errors,
	 * and a stop before the next phase left a resume that went on with
	 * nothing changed.  Only that phase's: a node running beside it, or
	 * one that failed, still counts with its errors -- before, every
	 * call made before the last ok end was left out) */
	if (from < s->began_ms)
		from = s->began_ms;
	timestamp_format(since, from);
	if (store_tool_outcomes(calls, &failed, s->o->store, s->trace, since, jv_copy(s->phases_ok)) < 0)
		return -1;
	return *calls ? (double)failed / (double)*calls : 0;
}

/* How long the breaker check's sum of today's calls stands for the money
 * the phases it lets start may spend (a gate that asks a person waits
 * longer: the sum is read again then). */
#define TODAY_REUSE_MS 1000

/* See supervise_int.h. */
void sup_today_spent(struct sup *s)
{
	s->today_at_ms = 0;
}

/* See supervise_int.h. */
double sup_money_left(struct sup *s)
{
	jv cost = json_get(s->state, "cost"), budget = json_get(s->state, "budget");
	double usd = json_get_num(cost, "usd", 0);
	double left = config_get_num(s->o->cfg, "safety.cost.per_run") - usd;
	double today;

	if (json_has(budget, "remaining_usd"))
		left = fmin(left, json_get_num(budget, "remaining_usd", 0));
	if (json_has(budget, "usd"))
		left = fmin(left, json_get_num(budget, "usd", 0) - usd);
	jv_free(cost);
	jv_free(budget);
	/* The day's sum the breaker check just read (start_ready() checks the
	 * breakers, then start_nodes() shares the money): not read again,
	 * ~10K instructions a call of the day, every run's (1.6M a resume on
	 * the bench's day).  Only within TODAY_REUSE_MS of that read, and not
	 * after a model call this run recorded since (sup_today_spent()). */
	if (s->today_at_ms && monotonic_ms() - s->today_at_ms <= TODAY_REUSE_MS)
		today = s->today_usd;
	else if (store_cost_today(&today, s->o->store) < 0)
		return 0;
	s->today_at_ms = 0;
	left = fmin(left, config_get_num(s->o->cfg, "safety.cost.per_day") - today);
	return fmax(0, left);
}

/* The run-level breaker that trips, or NULL; *why receives the reason. */
const char *sup_breaker(struct sup *s, char *why, size_t n)
{
	jv cost = json_get(s->state, "cost");
	double usd = json_get_num(cost, "usd", 0);
	double per_run = config_get_num(s->o->cfg, "safety.cost.per_run");
	double per_day = config_get_num(s->o->cfg, "safety.cost.per_day");
	double total_s = config_get_num(s->o->cfg, "safety.time_s.total");
	long calls;

	jv_free(cost);
	if (usd >= per_run) {
		snprintf(why, n, "the run has cost $%.4f (limit per run $%g)", usd, per_run);
		return "cost_per_run";
	}
	/* The run's own budget (--budget, budget.usd): spent, nothing more
	 * starts (a phase's agent stops itself at what remains of it). */
	jv budget = json_get(s->state, "budget");
	double allowed = json_get_num(budget, "usd", -1);
	jv_free(budget);
	if (allowed >= 0 && usd >= allowed) {
		snprintf(why, n, "the run has cost $%.4f, its budget is $%g (forge resume --budget USD "
			 "gives it more)", usd, allowed);
		return "budget";
	}
	/* A breaker that cannot read what it guards trips (fails closed).
	 * (this run's calls are in the log: its events are stored as they
	 * come, in this connection's transaction) */
	double today;
	s->today_at_ms = 0;
	if (store_cost_today(&today, s->o->store) < 0) {
		snprintf(why, n, "cannot read today's cost: %s", forge_last_error());
		return "cost_per_day";
	}
	s->today_usd = today;
	s->today_at_ms = monotonic_ms();
	if (today >= per_day) {
		snprintf(why, n, "today's model calls have cost $%.4f (limit per day $%g)", today, per_day);
		return "cost_per_day";
	}
	enum run_status status;
	int64_t started;
	if (run_now(s, &status, &started) == 0) {
		/* time paused (at a gate, interrupted) is not the run's: a plan
		 * approved the next morning tripped every resume */
		int64_t paused = 0, now = now_ms();
		if ((double)(now - started) / 1000 >= total_s) {
			sup_commit_batch(s);    /* (this resume's run.resumed: in the log) */
			(void)store_paused_ms(&paused, s->o->store, s->trace, now);
		}
		double elapsed = (double)(now - started - paused) / 1000;
		/* the phases it starts stop there, a call in flight too (phase.c) */
		s->run_deadline_ms = now + (int64_t)(total_s * 1000 - elapsed * 1000);
		if (elapsed >= 0 && elapsed >= total_s) {
			snprintf(why, n, "the run has taken %.0f s, time paused aside (limit %.0f s)", elapsed,
				 total_s);
			return "time";
		}
	}
	double rate = error_rate(s, &calls);
	double critical = config_get_num(s->o->cfg, "safety.error_rate.critical");
	if (rate < 0) {
		snprintf(why, n, "cannot read the tool error rate: %s", forge_last_error());
		return "error_rate";
	}
	if (calls >= 4 && rate >= critical) {
		snprintf(why, n, "tool error rate %.0f%% over %ld calls (limit %.0f%%)", rate * 100, calls,
			 critical * 100);
		return "error_rate";
	}
	return NULL;
}

/* ---- gates -------------------------------------------------------------- */

/* How often the terminal's question looks at its gate row. */
#define GATE_WATCH_MS 1000

struct gate_watch {
	struct store *store;
	const char *id;             /* the gate row's */
};

/* prompt_watch's settled(): the gate row is decided (forge gate, forge
 * tui) or past its expiry.  A failed read (the database busy a moment)
 * keeps the question up: the next look tries again. */
static bool gate_settled(void *arg)
{
	const struct gate_watch *w = arg;
	jv row;

	if (gate_get(&row, w->store, w->id) < 0)
		return false;
	const char *status = json_get_str(row, "status");
	bool settled = status && (gate_status_of(status) != GATE_PENDING || gate_past_expiry(row));

	jv_free(row);
	return settled;
}

/* Ask on the terminal, showing what is decided (app/gateview.h), until
 * answered or until gate row `id` is decided elsewhere or expires
 * (PROMPT_SETTLED); *note may receive a note. */
static enum prompt_answer ask_terminal(struct sup *s, jv gate, const char *id, char **note)
{
	struct gate_watch w = { s->o->store, id };
	struct prompt_watch pw = { gate_settled, &w, GATE_WATCH_MS };

	term_status_clear();
	return gateview_ask(gate, s->state, s->o->cfg, note, &pw);
}

static void remember_edit(struct sup *s, const char *gate, const char *note)
{
	struct memory_options mo;
	struct memory *m;
	char id[ULID_LEN + 1];

	sup_commit_batch(s);     /* memory writes in its own transactions */
	memory_options_init(&mo);
	memory_options_from_config(&mo, s->o->cfg);
	if (memory_open(&m, s->o->store, &mo) < 0)
		return;
	if (memory_record_gate_edit(id, m, gate, note, s->trace) == 0)
		sup_emit(s, "memory.stored", json_set(json_set(jv_object(), "id", jv_string(id)), "source",
						   jv_string("gate_edit")));
	memory_free(m);
}

/* Remember who passed gate `name` (row `id`) for sup_ask_human(). */
static void set_approval(struct sup *s, const char *name, const char *id, const char *by, const char *note)
{
	jv a = json_set(json_set(jv_object(), "by", jv_string(by ? by : "human")), "gate", jv_string(name));

	a = json_set(a, "gate_id", jv_string(id));
	if (note && *note)
		a = json_set(a, "note", jv_string(note));
	jv_free(s->approval);
	s->approval = a;
}

/*
 * What a gate row (borrowed) already decided says for the run: GATE_PASS
 * (approved: the approval recorded in the state), GATE_STOP (rejected or
 * expired: said), or -1 when it is pending or there is none.
 */
static int gate_decided(struct sup *s, const char *name, jv row)
{
	const char *status = json_get_str(row, "status");

	if (gate_status_of(status) == GATE_APPROVED) {
		if (strcmp(name, "production_deploy") == 0)
			s->deploy_approved = true;
		set_approval(s, name, json_get_str(row, "id"), json_get_str(row, "decided_by"),
			     json_get_str(row, "note"));
		return GATE_PASS;
	}
	bool expired = gate_status_of(status) == GATE_EXPIRED || (status && gate_past_expiry(row));

	if (!status || (gate_status_of(status) == GATE_PENDING && !expired))
		return -1;
	if (expired)
		status = "expired";
	/* expired: no one said no, and the person is told how to go on
	 * (before: "a gate was rejected", nothing on stderr) */
	if (expired)
		sup_say("gate %s (%s) expired without a decision (its timeout_s): it counts "
			"as rejected and the run stops\n", name, json_get_str(row, "id"));
	else if (json_get_str(row, "decided_by"))
		sup_say("gate %s (%s) was rejected by %s%s%s: the run stops\n", name,
			json_get_str(row, "id"), json_get_str(row, "decided_by"),
			json_get_str(row, "note") ? ": " : "", json_get_str(row, "note") ? json_get_str(row, "note") : "");
	sup_emit(s, "gate.rejected", json_set(json_set(jv_object(), "gate", jv_string(name)),
					  "status", jv_string(status)));
	return GATE_STOP;
}

/*
 * Gate row `id` was settled while it was asked here (decided with forge
 * gate or forge tui, or expired): answered, the answer typed here that
 * gate_decide() refused (r); else the prompt saw it (r GATE_REFUSED).  What
 * the row holds is what the run does; r -1 (the database failed), or the
 * row that cannot be read: pending, and the run stops as at any write the
 * database refused (sup_store_stop: exit 5; before: exit 4, "waiting for a
 * human", for the person who had just answered).
 */
static enum gate_outcome decided_elsewhere(struct sup *s, const char *name, const char *id, int r,
					   bool answered)
{
	jv row;
	int out;

	if (r != GATE_REFUSED || gate_get(&row, s->o->store, id) < 0) {
		sup_say("the answer to gate %s could not be recorded: %s; it stays pending "
			"(forge resume %s asks again)\n", name, forge_last_error(), s->trace);
		store_failed(s);
		return GATE_WAIT;
	}
	const char *status = json_get_str(row, "status");
	bool expired = gate_status_of(status) == GATE_EXPIRED || gate_past_expiry(row);
	const char *how = expired ? "expired (its timeout_s)" : "was decided elsewhere (forge gate, forge tui)";

	if (answered)
		sup_say("the answer typed here is not recorded: gate %s %s while it was "
			"asked; that decision stands\n", name, how);
	else
		sup_say("gate %s %s while it was asked here; that decision stands\n", name, how);
	out = gate_decided(s, name, row);
	if (out == GATE_PASS)   /* (a rejection or an expiry gate_decided() says) */
		sup_say("gate %s (%s) was approved by %s%s%s: the run goes on\n", name, id,
			json_get_str(row, "decided_by") ? json_get_str(row, "decided_by") : "a human",
			json_get_str(row, "note") ? ": " : "", json_get_str(row, "note") ? json_get_str(row, "note") : "");
	jv_free(row);
	return out < 0 ? GATE_WAIT : (enum gate_outcome)out;
}

/* One fired gate: decided before, passed unasked, asked, or waiting. */
enum gate_outcome sup_pass_gate(struct sup *s, jv gate, const char *phase)
{
	const char *name = json_get_str(gate, "id");
	char id[ULID_LEN + 1];
	jv row;

	/* (a gate that cannot be read or asked is no one's no: the run stops
	 * as at any failed write, sup_gate_paused) */
	if (gate_latest(&row, s->o->store, s->trace, name) < 0) {
		store_failed(s);
		return GATE_WAIT;
	}
	const char *status = json_get_str(row, "status");
	int decided = gate_decided(s, name, row);

	if (decided >= 0) {
		jv_free(row);
		return (enum gate_outcome)decided;
	}
	if (status)
		snprintf(id, sizeof id, "%s", json_get_str(row, "id"));
	jv_free(row);

	enum gate_auto how = gate_auto_decision(s->o->cfg, gate, s->level, s->o->auto_approve);
	if (!status) {
		if (gate_request(id, s->o->store, s->trace, gate, phase) < 0) {
			store_failed(s);
			return GATE_WAIT;
		}
		sup_emit(s, "gate.requested", json_set(json_set(json_set(jv_object(), "gate", jv_string(name)),
			"id", jv_string(id)), "prompt", json_get(gate, "prompt")));
	}
	if (how != GATE_ASK) {
		const char *by = how == GATE_AUTO_FLAG ? "flag" : "automation_level";
		gate_decide(s->o->store, id, true, by, NULL);
		set_approval(s, name, id, by, NULL);
		sup_emit(s, "gate.approved", json_set(json_set(json_set(jv_object(), "gate", jv_string(name)),
			"id", jv_string(id)), "by", jv_string(by)));
		sup_progress(s, "  gate %s approved (%s)", name, how == GATE_AUTO_FLAG ? "--auto-approve" : "automation level");
		return GATE_PASS;
	}
	/* Ctrl-D, Ctrl-C or no terminal decide nothing: the gate stays pending. */
	enum prompt_answer ans = PROMPT_NO_TTY;
	if (s->o->interactive && !interrupted) {
		char *note = NULL;
		sup_settle(s);      /* nothing held (the database's lock) while a human thinks */
		/* no one is asked about a state that is not on disk: the run
		 * stops (sup_gate_paused → sup_store_stop) */
		if (s->store_error[0] || lease_lost)
			return GATE_WAIT;
		ans = ask_terminal(s, gate, id, &note);
		if (ans == PROMPT_SETTLED)
			return decided_elsewhere(s, name, id, GATE_REFUSED, false);
		if (ans == PROMPT_APPROVE || ans == PROMPT_APPROVE_WITH_NOTE || ans == PROMPT_REJECT) {
			bool yes = ans != PROMPT_REJECT;
			int r = gate_decide(s->o->store, id, yes, "human", note);

			/* Decided elsewhere while the question was on the screen
			 * (forge gate, forge tui), or expired: that decision stands
			 * (before: the answer here passed a gate rejected there). */
			if (r < 0) {
				free(note);
				return decided_elsewhere(s, name, id, r, true);
			}
			sup_emit(s, yes ? "gate.approved" : "gate.rejected",
			     json_set(json_set(json_set(json_set(jv_object(), "gate", jv_string(name)), "id",
				jv_string(id)), "by", jv_string("human")), "note", json_str_or_null(note)));
			if (yes && note && *note)
				remember_edit(s, name, note);
			if (yes && strcmp(name, "production_deploy") == 0)
				s->deploy_approved = true;
			if (yes)
				set_approval(s, name, id, "human", note);
			free(note);
			return yes ? GATE_PASS : GATE_STOP;
		}
		free(note);
	}
	if (ans == PROMPT_INTERRUPTED || interrupted) {
		interrupted = 1;
		sup_say("interrupted at gate %s; it stays pending: `forge resume %s` asks again, "
				"or decide with `forge gate approve|reject %s` first\n", name, s->trace, id);
		return GATE_WAIT;
	}
	sup_say("gate %s is waiting for a human: %s\n", name, json_get_str(gate, "prompt"));
	if (json_get_str(gate, "question"))
		fprintf(stderr, "  the agent asked a question, which only a person answers%s: answer with "
				"`forge gate approve %s --note ANSWER`, then `forge resume %s`\n",
			s->o->auto_approve ? " (--auto-approve does not)" : "", id, s->trace);
	else
		fprintf(stderr, "  approve with `forge gate approve %s [--note TEXT]`, then `forge resume %s`\n", id,
			s->trace);
	return GATE_WAIT;
}

/* A gate left the run waiting: paused for a human (exit 4), or by Ctrl-C
 * at its prompt (exit 130); either way `forge resume` continues.  A gate
 * the database failed on stops the run with exit 5 (sup_store_stop). */
int sup_gate_paused(struct sup *s, const char *reason)
{
	int code;

	/* (the gate could not be read or its answer written: the database's
	 * failure, not a human's wait) */
	if ((code = sup_store_stop(s)) >= 0)
		return code;
	if (interrupted)
		return sup_end_run(s, "paused", "interrupted", FORGE_EXIT_INTERRUPTED);
	return sup_end_run(s, "paused", reason, FORGE_EXIT_HUMAN);
}

/* A bounce back to implement (d->bounce, borrowed): by itself where the
 * ladder says so, else through its gate (approved: the bounce happens). */
enum gate_outcome sup_pass_bounce(struct sup *s, jv bounce)
{
	jv gate = gate_for_bounce(s->o->cfg, s->level, bounce);
	enum gate_outcome r = GATE_PASS;

	if (jv_get_kind(gate) == JV_KIND_OBJECT)
		r = sup_pass_gate(s, gate, json_get_str(gate, "phase"));
	jv_free(gate);
	return r;
}

/* The run stops at a bounce's gate: paused (exit 4 or 130) or rejected. */
int sup_bounce_stopped(struct sup *s, enum gate_outcome h)
{
	if (h == GATE_WAIT)
		return sup_gate_paused(s, "waiting for a human: back to implement?");
	return sup_end_run(s, "failed", "a human said no", FORGE_EXIT_REJECTED);
}

/* ---- running a phase ----------------------------------------------------- */

/* A model call's retry (an llm.retry event's payload, borrowed), as the
 * run's view shows it: "implement: provider overloaded (529), retrying in
 * 4 s (attempt 2 of 3)". */
static void show_retry(const char *phase, jv p)
{
	struct buf line = BUF_INIT;

	phase_retry_text(&line, p);
	fprintf(stderr, "    %s%s%s\n", phase ? phase : "", phase ? ": " : "", line.buf);
	buf_release(&line);
}

/* The progress line of an event of type (its payload borrowed) from phase
 * (NULL: unsaid). */
static void show(struct sup *s, const char *phase, const char *type, jv payload)
{
	if (!type || !s->o->progress)
		return;
	term_status_clear();
	if (strcmp(type, "llm.retry") == 0) {
		show_retry(phase, payload);
	} else if (strcmp(type, "tool.executed") == 0 || strcmp(type, "tool.failed") == 0) {
		s->tools_run++;
		fprintf(stderr, "    %s %s\n", strcmp(type, "tool.failed") == 0 ? "✗" : "·",
			json_get_str(payload, "tool") ? json_get_str(payload, "tool") : "tool");
	} else if (strcmp(type, "gate.requested") == 0 || strcmp(type, "breaker.tripped") == 0 ||
		   strcmp(type, "agent.escalated") == 0) {
		fprintf(stderr, "    %s\n", type);
	}
}

void sup_show_event(struct sup *s, jv ev)
{
	jv payload = json_get(ev, "payload");

	show(s, json_get_str(ev, "phase"), json_get_str(ev, "type"), payload);
	jv_free(payload);
}

void sup_show_scanned(struct sup *s, const struct json_event *ev)
{
	char type[64];

	if (!s->o->progress || !ev->type || ev->type_len >= sizeof type)
		return;
	memcpy(type, ev->type, ev->type_len);
	type[ev->type_len] = '\0';
	/* only a tool's line and a retry's say more than the type: their
	 * payloads alone are parsed */
	bool said = strncmp(type, "tool.", 5) == 0 || strcmp(type, "llm.retry") == 0;
	jv payload = said && ev->payload ? json_parse(ev->payload, ev->payload_len) : jv_null();
	char phase[64] = "";

	if (ev->phase && ev->phase_kind == JSON_SCAN_STRING && ev->phase_len < sizeof phase) {
		memcpy(phase, ev->phase, ev->phase_len);
		phase[ev->phase_len] = '\0';
	}
	show(s, *phase ? phase : NULL, type, payload);
	jv_free(payload);
}

/* Loop 3 (app/reflect_run.h): the triggers are checked after every phase
 * result and at the end; a firing changes the state (what fired, what was
 * learned, its cost), which is checkpointed so a resume does not fire it
 * again and the next implement gets the learnings. */
static void reflect_emit(void *payload, const char *type, jv event_payload)
{
	sup_emit(payload, type, event_payload);
	/* committed at once: the next learning's memory is stored in its own
	 * transaction, which an open batch would refuse */
	sup_commit_batch(payload);
}

/* The llm.called of a reflection's call (reflect_ctx.called): phase
 * "reflect", as its llm_calls row, so that the cost of each phase in forge
 * show, forge report and the resume's summary adds up to the total. */
static void reflect_called(void *payload, jv event_payload, jv cost, long long duration_ms)
{
	struct sup *s = payload;
	jv ev = stream_event_new(&s->out, "llm.called", event_payload);

	ev = json_set(json_set(ev, "phase", jv_string("reflect")), "cost", cost);
	sup_emit_event(s, json_set(ev, "duration_ms", jv_number((double)duration_ms)));
	sup_today_spent(s);
	sup_commit_batch(s);
}

/* Why the run is being stopped (reflect_ctx.stopping): a cancelled run's
 * status says so (forge cancel, which signals us too), a signal that it
 * was interrupted; NULL when it goes on. */
static const char *reflect_stopping(void *payload)
{
	struct sup *s = payload;

	if (sup_cancelled(s))
		return "cancelled";
	return sup_interrupted() ? "interrupted" : NULL;
}

void sup_reflect_now(struct sup *s, const char *at, bool end)
{
	struct reflect_ctx c = { .cfg = s->o->cfg, .store = s->o->store, .trace = s->trace,
				 .phase = end ? "end" : at, .emit = reflect_emit, .called = reflect_called, .emit_payload = s,
				 .stopping = reflect_stopping };
	jv cost = json_get(s->state, "cost");
	double before = json_get_num(cost, "usd", 0);

	jv_free(cost);
	sup_commit_batch(s);     /* memory and the model's log write in their own transactions */
	/* a state not on disk is acted on by no model call: the run stops
	 * (sup_store_stop), and what a call cost could not be recorded */
	if (s->store_error[0] || lease_lost)
		return;
	if (reflect_run_check(&s->state, &c, end) == 0)
		return;
	cost = json_get(s->state, "cost");
	s->phase_cost = json_set(s->phase_cost, "reflect", jv_number(json_get_num(s->phase_cost, "reflect", 0) +
								    json_get_num(cost, "usd", 0) - before));
	jv_free(cost);
	jv fired = json_get_path(s->state, "reflection.fired");
	struct buf names = BUF_INIT;
	jv_array_foreach(fired, i, f) {
		buf_addf(&names, "%s%s", i ? ", " : "", jv_string_value(f));
		jv_free(f);
	}
	sup_progress(s, "  ✎ reflected on the run (Loop 3); triggers fired so far: %s", names.buf);
	buf_release(&names);
	jv_free(fired);
	sup_checkpoint(s, at);
}

/* ---- bounces and humans -------------------------------------------------- */

/* A run that starts at implement (`--phases implement,…`) has no plan phase
 * to write one, and forge-implement's guard needs a plan: the task itself
 * becomes a one-task plan.  Its risk was not assessed, so it is "medium"
 * (gates for high risk do not pass it silently, nor does low-risk auto
 * approval). */
jv sup_plan_from_task(const char *task_text)
{
	jv item = json_set(json_set(json_set(jv_object(), "id", jv_string("t1")), "title", jv_string(task_text)),
			   "description", jv_string(task_text));
	jv risk = json_set(json_set(jv_object(), "level", jv_string("medium")), "reasons",
			   JV_ARRAY(jv_string("no plan phase ran: the risk was not assessed")));
	return json_set(json_set(json_set(jv_object(), "summary", jv_string(task_text)), "tasks", JV_ARRAY(item)),
			"risk", risk);
}

/* The bounce's event with what sent it back: the review's blocking findings
 * (else all, at most 5) or the failing tests (at most 5), for the run's
 * memories (memory_record_lessons). */
static jv bounce_evidence(struct sup *s, jv ev)
{
	const char *from = json_get_str(ev, "from");
	bool review = from && strcmp(from, "review") == 0;

	if (!review && (!from || strcmp(from, "test") != 0))
		return ev;      /* a program's bounce: its own state says why */
	jv part = json_get(s->state, review ? "review" : "tests");
	jv all = json_get(part, review ? "findings" : "failures"), pick = jv_array();

	if (jv_get_kind(all) != JV_KIND_ARRAY) {
		jv_free(all);
		all = jv_array();
	}

	for (int pass = review ? 0 : 1; pass < 2 && jv_array_length(jv_copy(pick)) == 0; pass++) {
		jv_array_foreach(all, i, f) {
			const char *sev = json_get_str(f, "severity");
			bool blocking = sev && (strcmp(sev, "error") == 0 || strcmp(sev, "critical") == 0);

			if ((pass == 1 || blocking) && jv_array_length(jv_copy(pick)) < 5) {
				jv one = jv_object();
				static const char *const keys[] = { "rule", "severity", "category", "file", "line",
								    "message", "test", "root_cause", "suggested_fix" };
				for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
					if (json_has(f, keys[k]))
						one = json_set(one, keys[k], json_get(f, keys[k]));
				pick = jv_array_append(pick, one);
			}
			jv_free(f);
			(void)i;
		}
	}
	jv_free(part);
	jv_free(all);
	return json_set(ev, review ? "findings" : "failures", pick);
}

void sup_add_bounce(struct sup *s, jv bounce)
{
	jv bounces = json_get(s->state, "bounces");

	if (jv_get_kind(bounces) != JV_KIND_ARRAY) {
		jv_free(bounces);
		bounces = jv_array();
	}
	sup_emit(s, "loop.phase_bounce", bounce_evidence(s, jv_copy(bounce)));
	s->state = json_set(s->state, "bounces", jv_array_append(bounces, bounce));
}

/* A human decides after `phase` said it needs one (or bounces ran out). */
enum gate_outcome sup_ask_human(struct sup *s, const char *phase, const char *result_key, const char *reason,
				int attempt, const char *question, bool in_person)
{
	jv gate = jv_object();
	char id[160];

	/* The attempt in the id: a node that asks again after it ran again
	 * (a bounce, a retry) asks about a new result (before: the first
	 * approval passed every later escalation of the node unasked). */
	if (attempt > 1)
		snprintf(id, sizeof id, "escalation_%.100s_%d", phase, attempt);
	else
		snprintf(id, sizeof id, "escalation_%.100s", phase);
	gate = json_set(gate, "id", jv_string(id));
	/* A deploy that asks a human is run again with --approve once one
	 * says yes: a human's in person, as production_deploy (--auto-approve
	 * would otherwise deploy what forge-deploy refused to deploy alone). */
	if (strcmp(phase, "deploy") == 0)
		gate = json_set(gate, "ladder", jv_string("production_deploy"));
	gate = json_set(gate, "prompt", jv_string(reason));
	gate = json_set(gate, "timeout_s", jv_number(86400));
	/* (before: --auto-approve passed a question with no answer, the phase
	 * ran again and asked again, until the budget was spent) */
	if (question || in_person)
		gate = json_set(gate, "in_person", jv_true());
	if (question)
		gate = json_set(gate, "question", jv_string(question));
	enum gate_outcome r = sup_pass_gate(s, gate, phase);
	jv_free(gate);
	if (r != GATE_PASS)
		return r;
	sup_emit(s, "human.override", json_set(json_set(jv_object(), "phase", jv_string(phase)),
					   "reason", jv_string(reason)));
	/* The override is part of the state, so the guards of the phases after
	 * this one (forge-test, forge-deploy) accept it, in this process or
	 * after `forge resume`. */
	const char *key = result_key;
	jv part = json_get(s->state, key);
	if (jv_get_kind(part) == JV_KIND_OBJECT && jv_get_kind(s->approval) == JV_KIND_OBJECT) {
		s->state = json_set(s->state, key, json_set(part, "approved_by", jv_copy(s->approval)));
		sup_checkpoint(s, phase);
	} else {
		jv_free(part);
	}
	return r;
}

/* ---- after the run: Loop 3 ----------------------------------------------- */

static int collect(const char *line, size_t len, void *payload)
{
	jv *events = payload;

	*events = jv_array_append(*events, json_parse(line, len));
	return 0;
}

/* The steps of the reflection on an ended run (reflect_on_run). */
enum {
	REFLECT_EPISODE = 1,    /* the run's episode (memory.stored or .updated, source run_episode) */
	REFLECT_LESSONS = 2,    /* a lesson per bounce (memory.stored or .updated, source run_lesson) */
	REFLECT_LOOP3 = 4,      /* Loop 3's end, the last step (run.reflection {triggers, fired}) */
	REFLECT_ALL = 7,
};

/* A memory of the run (source: run_episode, run_lesson) that could not be
 * recorded: said on stderr and in a memory.failed event {source, error},
 * not left out in silence; the run's outcome stands. */
static void memory_failed(struct sup *s, const char *source)
{
	const char *err = forge_last_error();

	if (!s->o->quiet)
		sup_say("warning: the run's %s could not be stored in memory: %s\n",
			strcmp(source, "run_episode") == 0 ? "episode" : "lessons", err && *err ? err : "unknown error");
	sup_emit(s, "memory.failed", json_set(json_set(jv_object(), "source", jv_string(source)), "error",
					      jv_string(err && *err ? err : "unknown error")));
}

/*
 * The steps todo of the reflection on the run's ending, from the run's
 * events: all of them, or (upto >= 0, a late reflection: late_reflection)
 * from its first upto events, those through the run.completed that ended
 * it, so the episode's outcome is that event and not what came after.
 * Returns -1 when the store has no memory (a PostgreSQL store, say):
 * nothing to record.
 */
static int reflect_on_run(struct sup *s, unsigned todo, int upto)
{
	struct memory_options mo;
	struct memory *m;
	jv events = jv_array();
	char id[ULID_LEN + 1];
	char at[32];

	sup_commit_batch(s);     /* memory writes in its own transactions */
	memory_options_init(&mo);
	memory_options_from_config(&mo, s->o->cfg);
	if (memory_open(&m, s->o->store, &mo) < 0) {
		jv_free(events);     /* no memory (a PostgreSQL store, say): nothing to record */
		return -1;
	}
	store_events_foreach(s->o->store, s->trace, collect, &events);
	if (upto >= 0 && upto < jv_array_length(jv_copy(events)))
		events = jv_array_slice(events, 0, upto);
	/* (a failed run resumed to a new end: its episode and the lessons an
	 * earlier end stored are rewritten, memory.updated, not stored again) */
	bool again = false;
	int rc = (todo & REFLECT_EPISODE) ? memory_record_episode(id, &again, m, s->trace, jv_copy(events)) : 1;

	if (rc == 0)
		sup_emit(s, again ? "memory.updated" : "memory.stored", json_set(json_set(jv_object(), "id",
			 jv_string(id)), "source", jv_string("run_episode")));
	else if (rc < 0)
		memory_failed(s, "run_episode");
	/* What each bounce taught: recalled into the next similar task's prompt. */
	jv lessons = jv_invalid(), updated = jv_invalid();  /* (memory_record_lessons sets them) */
	sup_commit_batch(s);
	rc = (todo & REFLECT_LESSONS) ? memory_record_lessons(&lessons, &updated, m, s->trace, jv_copy(events)) : -2;
	if (rc == -1)
		memory_failed(s, "run_lesson");
	if (rc >= 0) {
		jv_array_foreach(lessons, i, lid) {
			sup_emit(s, "memory.stored", json_set(json_set(jv_object(), "id", lid), "source",
							   jv_string("run_lesson")));
			(void)i;
		}
		jv_array_foreach(updated, i, lid) {
			sup_emit(s, "memory.updated", json_set(json_set(jv_object(), "id", lid), "source",
							    jv_string("run_lesson")));
			(void)i;
		}
	}
	jv_free(lessons);
	jv_free(updated);
	jv_free(events);
	memory_free(m);
	/* Seed 000 §10.4: runs worth learning from. */
	snprintf(at, sizeof at, "%s", json_get_str(s->state, "phase") ? json_get_str(s->state, "phase") : "init");
	if (todo & REFLECT_LOOP3)
		sup_reflect_now(s, at, true);
	return 0;
}

/* ---- the summary a person reads -------------------------------------- */

/*
 * What the summary's first line says the run is: its recorded status where
 * that says more than the exit code (before: a phase killed by a signal,
 * exit 5, read "failed" of a paused run that forge resume continues; a run
 * forge cancel stopped, exit 130, read "interrupted"), else what the code
 * means.  Into out (n bytes).
 */
static void summary_outcome(char *out, size_t n, struct sup *s, int code)
{
	static const char *const outcome[] = {
		[FORGE_EXIT_OK] = "completed", [FORGE_EXIT_REJECTED] = "rejected",
		[FORGE_EXIT_USAGE] = "stopped (bad input)", [FORGE_EXIT_TRIPPED] = "stopped by a breaker",
		[FORGE_EXIT_HUMAN] = "waiting for a human", [FORGE_EXIT_DEPENDENCY] = "failed",
	};
	jv run = jv_null();
	enum run_status rs = RUN_UNKNOWN;
	const char *why = NULL;

	/* (the row as this process left it: a lease another process took
	 * over makes the row that one's, and the code says what this one did) */
	if (!sup_lease_lost() && store_run_get_brief(&run, s->o->store, s->trace) == 0 &&
	    jv_get_kind(run) == JV_KIND_OBJECT) {
		rs = run_status_of(json_get_str(run, "status"));
		why = json_get_str(run, "error");
	}
	if (rs == RUN_CANCELLED) {
		snprintf(out, n, "cancelled");
	} else if (rs == RUN_PAUSED && code != FORGE_EXIT_HUMAN) {
		/* (its "next" line says how to resume it) */
		if (!why || !*why || strcmp(why, "interrupted") == 0)
			why = "interrupted (Ctrl-C, SIGTERM or SIGHUP)";
		snprintf(out, n, "paused (resumable): %s", why);
	} else {
		snprintf(out, n, "%s", code >= 0 && code <= 5 ? outcome[code] : "interrupted");
	}
	jv_free(run);
}

/* The summary's line for each saved ref whose work the run's branch lacks
 * (runview_saved: an interrupted attempt's, reset away by a resume): the
 * next attempt may not have done it again, and a "no change" run would
 * hide it (before: one stderr line of the resume said it). */
static void summary_saved(struct sup *s, struct forge_git *g)
{
	jv saved = runview_saved(s->o->store, g, s->trace);

	jv_array_foreach(saved, i, e) {
		struct buf line = BUF_INIT;

		runview_saved_text(&line, e);
		term_clean_line(line.buf, line.len);
		printf("  saved     work saved from an interrupted attempt, not on the branch: %s\n", line.buf);
		buf_release(&line);
		jv_free(e);
		(void)i;
	}
	jv_free(saved);
}

static void summary(struct sup *s, int code)
{
	/* (the task, the files' names and the test command may hold escape
	 * sequences: printed without them, term_safe; a file's name holding
	 * one, or a newline, quoted as git shows it) */
	jv shown = term_safe(term_quote_paths(jv_copy(s->state)));
	jv task = json_get(shown, "task"), ch = json_get(shown, "changes"),
	   rv = json_get(shown, "review"), ts = json_get(shown, "tests"),
	   dp = json_get(shown, "deployment"), cost = json_get(shown, "cost");
	char outcome[600];
	struct forge_git *g = NULL;

	summary_outcome(outcome, sizeof outcome, s, code);
	/* a run whose branch holds no change (changes.empty): nothing to
	 * diff, deploy or merge, and said so (before: "0 files", "healthy") */
	bool none = pipeline_changes_empty(s->state);

	printf("\nRun %s %s%s%s\n", s->trace, outcome,
	       none && code == FORGE_EXIT_OK ? " (no change)" : "",
	       s->o->dry_run ? " (dry run: no worktree or branch was made)" : "");
	printf("  task      %s\n", json_get_str(task, "description"));
	jv files = json_get(ch, "files");
	if (none) {
		printf("  changes   none: the run made no change\n");
	} else if (jv_get_kind(files) == JV_KIND_ARRAY) {
		long add = 0, del = 0;
		struct buf names = BUF_INIT;
		jv_array_foreach(files, i, f) {
			add += (long)json_get_num(f, "additions", 0);
			del += (long)json_get_num(f, "deletions", 0);
			if (i < 5)
				buf_addf(&names, "%s%s", i ? ", " : "", json_get_str(f, "path"));
			jv_free(f);
		}
		printf("  changes   %d file%s (+%ld -%ld): %s\n", jv_array_length(jv_copy(files)),
		       jv_array_length(jv_copy(files)) == 1 ? "" : "s", add, del, names.buf);
		buf_release(&names);
	}
	jv_free(files);
	if (!s->o->dry_run && forge_git_open(&g, s->o->repo) < 0) {
		forge_git_free(g);      /* (the summary goes on without git) */
		g = NULL;
	}
	summary_saved(s, g);
	if (json_get_str(task, "branch"))
		printf("  branch    %s%s%.12s\n", json_get_str(task, "branch"),
		       json_get_str(ch, "commit") ? " at " : "", json_get_str(ch, "commit") ? json_get_str(ch, "commit") : "");
	if (json_get_str(rv, "decision")) {
		jv findings = json_get(rv, "findings"), approval = json_get(rv, "approved_by");
		const char *by = json_get_str(approval, "by");
		printf("  review    %s (%d finding%s)%s%s%s\n", json_get_str(rv, "decision"),
		       jv_get_kind(findings) == JV_KIND_ARRAY ? jv_array_length(jv_copy(findings)) : 0,
		       jv_get_kind(findings) == JV_KIND_ARRAY && jv_array_length(jv_copy(findings)) == 1 ? "" : "s",
		       by ? ", approved by " : "", by ? by : "", by ? " at a gate" : "");
		jv_free(approval);
		jv_free(findings);
	}
	jv sum = json_get(ts, "summary");
	if (json_get_str(ts, "not_run"))
		printf("  tests     none run: %s\n", json_get_str(ts, "not_run"));
	else if (jv_get_kind(sum) == JV_KIND_OBJECT)
		printf("  tests     %.0f passed, %.0f failed, %.0f skipped, %.0f flaky (%s)\n",
		       json_get_num(sum, "passed", 0), json_get_num(sum, "failed", 0), json_get_num(sum, "skipped", 0),
		       json_get_num(sum, "flaky", 0), json_get_str(ts, "command") ? json_get_str(ts, "command") : "?");
	jv_free(sum);
	bool skipped = json_get_str(dp, "status") && !strcmp(json_get_str(dp, "status"), "skipped") &&
		       json_get_str(dp, "reason");
	if (json_get_str(dp, "status"))
		printf("  deploy    %s (%s)%s%s\n", json_get_str(dp, "status"),
		       json_get_str(dp, "strategy") ? json_get_str(dp, "strategy") : "?", skipped ? ": " : "",
		       skipped ? json_get_str(dp, "reason") : "");
	struct buf per = BUF_INIT;
	char usd[MONEY_LEN];
	/* (rounded as forge show and forge status round: money.h) */
	jv_object_foreach(s->phase_cost, k, v) {
		buf_addf(&per, "%s $%s · ", jv_string_value(k), money_fmt(usd, sizeof usd, jv_number_value(v)));
		jv_free(k);
		jv_free(v);
	}
	printf("  cost      %stotal $%s (%.0f tokens)\n", per.buf, money_fmt(usd, sizeof usd, json_get_num(cost, "usd", 0)),
	       json_get_num(cost, "tokens", 0));
	buf_release(&per);
	printf("  events    forge events replay %s\n", s->trace);
	struct buf next = BUF_INIT, why = BUF_INIT;      /* what the person does now (runview.h) */
	runview_next(&next, &why, s->o->store, g, s->o->cfg, s->trace);
	if (next.len)
		printf("  next      %s\n", next.buf);
	if (why.len)    /* (not on the next line: that one is pasted) */
		printf("  why       %s\n", why.buf);
	buf_release(&next);
	buf_release(&why);
	forge_git_free(g);
	jv_free(task);
	jv_free(ch);
	jv_free(rv);
	jv_free(ts);
	jv_free(dp);
	jv_free(cost);
	jv_free(shown);
}

/* line (consumed), then the command that goes on from here between
 * before and after and why it does (runview_next), cleaned of escape
 * sequences, on one line of stderr. */
static void say_with_next(struct sup *s, struct buf *line, const char *before, const char *after)
{
	struct buf next = BUF_INIT, why = BUF_INIT;

	runview_next(&next, &why, s->o->store, NULL, s->o->cfg, s->trace);
	if (next.len)
		buf_addf(line, "%s%s%s", before, next.buf, after);
	if (why.len)
		buf_addf(line, " (%s)", why.buf);
	term_clean_line(line->buf, line->len);
	fprintf(stderr, "%s\n", line->buf);
	buf_release(line);
	buf_release(&next);
	buf_release(&why);
}

/*
 * A run a breaker stopped (exit 3): one line on stderr, in every mode (-q
 * and --json too), as a failed node and a gate that waits have theirs --
 * the run, which breaker (of which phase) and why, and the command that
 * continues it with what it means, the summary's next and why lines
 * (runview_next).  Before: with -q nothing at all was said, with --json
 * only the phase's own "tripped" line, and neither named the way on.  The
 * breaker is the run's newest breaker.tripped event when the run's reason
 * is its reason (a node that tripped without one: the run's reason alone).
 */
static void said_tripped(struct sup *s)
{
	jv run = jv_null(), trip = jv_null(), p;
	struct buf line = BUF_INIT;

	store_run_get_brief(&run, s->o->store, s->trace);
	store_event_last(&trip, s->o->store, s->trace, "breaker.tripped");
	p = json_get(trip, "payload");
	const char *error = json_get_str(run, "error"), *reason = json_get_str(p, "reason");
	const char *breaker = json_get_str(p, "breaker"), *phase = json_get_str(trip, "phase");

	buf_addf(&line, "%s: run %s stopped: ", program_invocation_short_name, s->trace);
	if (breaker && reason && *reason && (!error || strstr(error, reason)))
		buf_addf(&line, "breaker %s tripped%s%s: %s", breaker, phase ? " in " : "", phase ? phase : "", reason);
	else
		buf_addf(&line, "a breaker tripped: %s", error && *error ? error : "no reason recorded");
	say_with_next(s, &line, "; `", "` continues it");
	jv_free(p);
	jv_free(trip);
	jv_free(run);
}

/*
 * A run that ended rejected (exit 1: a deploy rolled back, a node that
 * said no, a human's no) with -q: one line on stderr, as a failed node's
 * and a breaker's stop have theirs -- the run, that it was rejected, why
 * (the run's reason, as forge show says it) and what to do now
 * (runview_next).  Before: -q said nothing at all, exit 1 alone.  Not said
 * when a line already said how it ended (said_deploy_ended).
 */
static void said_rejected(struct sup *s)
{
	jv run = jv_null();
	struct buf line = BUF_INIT;

	if (s->end_said || sup_lease_lost())
		return;
	store_run_get_brief(&run, s->o->store, s->trace);
	const char *error = json_get_str(run, "error");

	buf_addf(&line, "%s: run %s was rejected: %s", program_invocation_short_name, s->trace, error && *error ? error : "no reason recorded");
	say_with_next(s, &line, "; next: `", "`");
	jv_free(run);
}

/* ---- run and resume ------------------------------------------------------ */

static void sup_init(struct sup *s, const struct supervise_opts *o, const char *trace)
{
	char pid[32];

	/* The phases stop when the supervisor dies (phase.c). */
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	setenv("FORGE_SUPERVISOR_PID", pid, 1);
	if (o->interactive)
		setenv("FORGE_INTERACTIVE", "1", 1);
	else
		unsetenv("FORGE_INTERACTIVE");
	memset(s, 0, sizeof *s);
	s->o = o;
	s->began_ms = now_ms();
	s->state = jv_null();
	s->approval = jv_null();
	s->phase_cost = jv_object();
	s->phases_ok = jv_object();
	s->saved = jv_null();
	s->pl = PL_IDLE;
	snprintf(s->trace, sizeof s->trace, "%s", trace);
	pthread_mutex_init(&s->lock, NULL);
	stream_out_init(&s->out, stdout, "forge-supervisor", NULL);
	stream_out_set_trace(&s->out, trace);
}

/*
 * The run's automation level: --level, else run_level (the level a resumed
 * run started with; < 0: none), else the configuration's; s->level_from
 * says which.  The phases read it from FORGE_AUTOMATION_LEVEL.
 */
static void set_level(struct sup *s, int run_level)
{
	const char *layer = NULL, *source = NULL;
	char num[16];

	if (s->o->level_given) {
		s->level = s->o->level;
		snprintf(s->level_from, sizeof s->level_from, "--level");
	} else if (run_level >= 0 && run_level <= 4) {
		s->level = run_level;
		snprintf(s->level_from, sizeof s->level_from, "the run");
	} else {
		s->level = (int)config_get_num(s->o->cfg, "safety.automation_level");
		if (config_leaf_layer(s->o->cfg, "safety.automation_level", &layer, &source) == 0)
			snprintf(s->level_from, sizeof s->level_from, "%s: %s", layer, source);
		else
			snprintf(s->level_from, sizeof s->level_from, "config");
	}
	snprintf(num, sizeof num, "%d", s->level);
	setenv("FORGE_AUTOMATION_LEVEL", num, 1);
}

/* See supervise.h. */
int supervise_run_level(struct store *st, const char *trace, jv run)
{
	jv last = jv_null(), conf = json_get(run, "config"), safety = json_get(conf, "safety");
	int level = (int)json_get_num(safety, "automation_level", -1);

	if (store_event_last(&last, st, trace, "run.resumed") == 0 && jv_get_kind(last) == JV_KIND_OBJECT) {
		jv payload = json_get(last, "payload");
		level = (int)json_get_num(payload, "automation_level", level);
		jv_free(payload);
	}
	jv_free(last);
	jv_free(safety);
	jv_free(conf);
	return level;
}

/*
 * What of a run's recorded configuration (runs.config) decides what its
 * deploy does: the deploy section whole, and the commands and URL of a
 * command deploy (forge-deploy).
 */
static const char *const deploy_tools[] = { "build_command", "deploy_command", "rollback_command", "health_url" };

/* " KEY (the run: A; here: B)" onto b when a and b differ.  Borrows both. */
static void note_differs(struct buf *b, const char *section, const char *key, jv rec, jv cur)
{
	char *was, *now;

	if (jv_equal(jv_copy(rec), jv_copy(cur)))
		return;
	was = json_dumps(jv_copy(rec), true);
	now = json_dumps(jv_copy(cur), true);
	term_clean_line(was, strlen(was));
	term_clean_line(now, strlen(now));
	buf_addf(b, "%s %s.%s (the run: %.80s; here: %.80s)", b->len ? "," : "", section, key, was, now);
	free(was);
	free(now);
}

/* The --config file the resume was given (in o->phase_args), or NULL. */
static const char *given_config(const struct supervise_opts *o)
{
	for (const char *const *a = o->phase_args; a && a[0] && a[1]; a++)
		if (strcmp(a[0], "--config") == 0)
			return a[1];
	return NULL;
}

/*
 * A resume deploys as the run was started: its gate was approved for that
 * deploy.  forge run --config prod.json (strategy merge, environment
 * production) paused at the production gate and resumed as its hint says,
 * without --config, deployed with the defaults (strategy branch: main never
 * merged, a command deploy's command never run) and said it succeeded.  So
 * the deploy phase of a resume gets a --config file of its own: the one the
 * resume was given (if any) with the run's recorded deploy settings over
 * it, and --strategy (over FORGE_DEPLOY_STRATEGY).  The recorded ones win
 * (as the run's level does over the configured one, set_level); where this
 * resume's configuration differs, stderr says so while the deploy is still
 * to come (s->state has no deployment yet).  conf: the run's recorded
 * configuration (borrowed); own: the configuration this resume goes on
 * under, which stderr compares it with.  0, or -1 with a message.
 */
static int keep_deploy_settings(struct sup *s, jv conf, const struct config *own)
{
	jv rec = json_get(conf, "deploy"), tools = json_get(conf, "tools");
	jv over = jv_object(), base = jv_object(), deployment = json_get(s->state, "deployment");
	struct buf differs = BUF_INIT, path = BUF_INIT;
	const char *file = given_config(s->o), *strategy;
	FILE *f = NULL;
	bool deploys = false, kept;
	int rc = 0, fd, wrote, closed;

	for (size_t i = 0; s->graph && i < s->graph->n; i++)
		deploys = deploys || (s->graph->nodes[i].phase && strcmp(s->graph->nodes[i].phase, "deploy") == 0);
	/* (no deploy in the pipeline, or no recorded deploy settings: nothing to keep) */
	if (!deploys || jv_get_kind(rec) != JV_KIND_OBJECT)
		goto out;
	/* The configuration the phases get already has them (the run's layer,
	 * or the same --config again): no file of them to write, no
	 * --strategy over it (and nothing below differs to be said). */
	kept = jv_equal(jv_copy(rec), config_get(s->o->cfg, "deploy"));
	for (size_t i = 0; kept && jv_get_kind(tools) == JV_KIND_OBJECT &&
			   i < sizeof deploy_tools / sizeof *deploy_tools; i++) {
		if (!json_has(tools, deploy_tools[i]))
			continue;
		buf_addf(&path, "tools.%s", deploy_tools[i]);
		kept = jv_equal(json_get(tools, deploy_tools[i]), config_get(s->o->cfg, path.buf));
		buf_release(&path);
	}
	jv_object_foreach(rec, k, v) {
		buf_addf(&path, "deploy.%s", jv_string_value(k));
		jv cur = config_get(own, path.buf);
		note_differs(&differs, "deploy", jv_string_value(k), v, cur);
		jv_free(cur);
		buf_release(&path);
		jv_free(k);
		jv_free(v);
	}
	over = json_set(over, "deploy", jv_copy(rec));
	for (size_t i = 0; jv_get_kind(tools) == JV_KIND_OBJECT && i < sizeof deploy_tools / sizeof *deploy_tools;
	     i++) {
		jv v = json_get(tools, deploy_tools[i]);

		if (json_has(tools, deploy_tools[i])) {
			buf_addf(&path, "tools.%s", deploy_tools[i]);
			jv cur = config_get(own, path.buf);
			note_differs(&differs, "tools", deploy_tools[i], v, cur);
			jv_free(cur);
			buf_release(&path);
			over = jv_setpath(over, JV_ARRAY(jv_string("tools"), jv_string(deploy_tools[i])), jv_copy(v));
		}
		jv_free(v);
	}
	if (kept)
		goto said;
	if (file) {
		jv_free(base);
		base = json_parse_file(file);
		if (jv_get_kind(base) != JV_KIND_OBJECT) {
			jv_free(base);
			base = jv_object();     /* (the supervisor read it already: it cannot be bad here) */
		}
	}
	if (tmpdir_make(&s->deploy_dir, "forge-deploy") < 0) {
		rc = -1;
		goto out;
	}
	buf_addf(&path, "%s/config.json", s->deploy_dir);
	fd = open(path.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = forge_error("cannot write the run's deploy settings to %s: %s", path.buf, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	wrote = json_write_line(f, jv_object_merge_recursive(base, jv_copy(over)), true);
	base = jv_null();
	closed = fclose(f);
	f = NULL;
	if (wrote < 0 || closed != 0) {
		rc = forge_error("cannot write the run's deploy settings to %s: %s", path.buf, strerror(errno));
		goto out;
	}
	s->deploy_config = xstrdup(path.buf);
	strategy = json_get_str(rec, "strategy");
	s->deploy_strategy = strategy ? xstrdup(strategy) : NULL;
said:
	/* (said while the deploy is still to come: not once it has a deployment) */
	if (differs.len && jv_get_kind(deployment) != JV_KIND_OBJECT)
		sup_say("run %s deploys with the settings it was started with, not this resume's "
				"configuration:%s (a resume finishes the run whose deploy was approved; to deploy "
				"otherwise, start a new run)\n", s->trace, differs.buf);
out:
	if (f)
		fclose(f);
	jv_free(base);
	jv_free(over);
	jv_free(rec);
	jv_free(tools);
	jv_free(deployment);
	buf_release(&differs);
	buf_release(&path);
	return rc;
}

/* {"automation_level", "level_from"} for run.started and run.resumed. */
static jv level_payload(struct sup *s, jv payload)
{
	payload = json_set(payload, "automation_level", jv_number(s->level));
	return json_set(payload, "level_from", jv_string(s->level_from));
}

static void sup_release(struct sup *s)
{
	push_run(s);
	sup_commit_batch(s);
	heartbeat_stop(s->beat);
	s->beat = NULL;
	if (s->holder[0]) {
		store_fence(s->o->store, NULL, NULL);
		store_lease_release(s->o->store, s->trace, s->holder);
		unsetenv("FORGE_LEASE");
	}
	/*
	 * Where the run stands (its status, its last checkpoint) is on disk: the
	 * log copied into the database now, which syncs the log first, then the
	 * database (the copy the store's close makes as the last connection,
	 * which then has nothing left to do); when others' reads keep part of
	 * it in the log, the log is synced.  One sync fewer than syncing the
	 * log and then letting the close copy it.
	 */
	s->unsynced = true;
	if (store_checkpoint_log(s->o->store))
		s->unsynced = false;
	sup_sync_checkpoint(s);
	jv_free(s->state);
	jv_free(s->approval);
	jv_free(s->phase_cost);
	jv_free(s->phases_ok);
	jv_free(s->saved);
	free(s->deploy_config);
	free(s->deploy_strategy);
	tmpdir_remove(s->deploy_dir);
	db_finalize(s->run_row);
	pthread_mutex_destroy(&s->lock);
}

/* "last renewed at T" or "never renewed", for messages. */
static const char *renewal_words(jv lease, char *buf, size_t n)
{
	const char *at = json_get_str(lease, "renewed_at");

	if (!at)
		return "never renewed";
	snprintf(buf, n, "last renewed at %s", at);
	return buf;
}

/* Exit 4 and why: a living process holds the run's lease (held, borrowed). */
static int lease_refused(struct sup *s, jv held)
{
	const char *prog = json_get_str(held, "program");
	char when[128];

	if (store_lease_local(held) && s->o->steal)
		sup_say("run %s is held by a live process of this host: %s, pid %.0f, since %s; "
				"--steal takes only another host's lease; wait for it or stop it with "
				"`forge cancel %s`\n", s->trace, prog ? prog : "a forge program",
			json_get_num(held, "pid", 0), json_get_str(held, "acquired_at"), s->trace);
	else if (store_lease_local(held))
		sup_say("run %s is already running: %s, pid %.0f on %s, since %s; wait for it "
				"or stop it with `forge cancel %s`\n", s->trace, prog ? prog : "a forge program",
			json_get_num(held, "pid", 0), json_get_str(held, "host"), json_get_str(held, "acquired_at"),
			s->trace);
	else
		sup_say("run %s is already running: %s, pid %.0f on %s, since %s, %s; wait for it, "
				"stop it with `forge cancel %s`, or, when that machine is gone, take it with "
				"`forge resume --steal %s` (`forge resume` takes it once this host has seen no "
				"renewal of it for supervisor.lease_ttl_s, %gs)\n", s->trace,
			prog ? prog : "a forge program", json_get_num(held, "pid", 0), json_get_str(held, "host"),
			json_get_str(held, "acquired_at"), renewal_words(held, when, sizeof when), s->trace, s->trace,
			config_get_num(s->o->cfg, "supervisor.lease_ttl_s"));
	return FORGE_EXIT_HUMAN;
}

/* The lease taken from another (held, borrowed): said and recorded. */
static void lease_taken(struct sup *s, jv held)
{
	char when[128];
	jv who = jv_object();

	who = json_set(who, "holder", json_get(held, "holder"));
	who = json_set(who, "host", json_get(held, "host"));
	who = json_set(who, "pid", json_get(held, "pid"));
	who = json_set(who, "since", json_get(held, "acquired_at"));
	who = json_set(who, "renewed_at", json_get(held, "renewed_at"));
	if (json_get_bool(held, "alive", false)) {
		/* always said, -q too: a person took a live lease */
		sup_say("took run %s's lease from %s (holder %s), pid %.0f on %s, %s\n", s->trace,
			json_get_str(held, "program") ? json_get_str(held, "program") : "a forge program",
			json_get_str(held, "holder"), json_get_num(held, "pid", 0), json_get_str(held, "host"),
			renewal_words(held, when, sizeof when));
		sup_emit(s, "run.lease_stolen", who);
		return;
	}
	if (store_lease_local(held))
		sup_progress(s, "%s: run %s was left by pid %.0f, which is gone: taking it over",
			     program_invocation_short_name, s->trace,
			     json_get_num(held, "pid", 0));
	else
		sup_progress(s, "%s: run %s was left by pid %.0f on %s, %s: taking it over",
			     program_invocation_short_name, s->trace,
			     json_get_num(held, "pid", 0), json_get_str(held, "host"),
			     renewal_words(held, when, sizeof when));
	sup_emit(s, "run.lease_taken_over", who);
}

/*
 * Take the run's lease: one process at a time works on a run.  The phases
 * get it as FORGE_LEASE, so they do not refuse their own supervisor; the
 * heartbeat renews it until sup_release.  Returns 0, or the exit status: 4
 * when a living process holds it (a human decides: wait for it, or `forge
 * cancel` it, or --steal it from a machine that is gone), 2 when the
 * renewal and TTL settings do not fit, 5 on a database error.
 */
/* Whether the lease settings fit: 0, or 2 saying why (before anything of
 * a run is made). */
static int check_lease_settings(const struct config *cfg)
{
	double every = config_get_num(cfg, "supervisor.lease_renew_s");
	double ttl = config_get_num(cfg, "supervisor.lease_ttl_s");

	if (!(every > 0) || !(ttl > 2 * every)) {
		sup_say("supervisor.lease_ttl_s (%g) must be more than twice "
				"supervisor.lease_renew_s (%g), which must be more than 0\n", ttl, every);
		return FORGE_EXIT_USAGE;
	}
	return 0;
}

static int take_lease(struct sup *s)
{
	char holder[ULID_LEN + 1];
	double ttl = config_get_num(s->o->cfg, "supervisor.lease_ttl_s");
	jv held;

	if (check_lease_settings(s->o->cfg))
		return FORGE_EXIT_USAGE;
	store_set_lease_ttl(s->o->store, ttl);
	ulid_new(holder);
	sup_commit_batch(s);        /* the lease is its own transaction */
	int r = store_lease_take_steal(&held, s->o->store, s->trace, holder, "forge-supervisor", s->o->steal);
	if (r < 0) {
		sup_say("%s\n", forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	if (r == STORE_LEASE_HELD) {
		int code = lease_refused(s, held);

		jv_free(held);
		return code;
	}
	snprintf(s->holder, sizeof s->holder, "%s", holder);
	/* every transaction of the run checks from now on that the lease is
	 * still this process's (a takeover while it slept: nothing more of it
	 * is written, whichever thread wakes first) */
	store_fence(s->o->store, s->trace, holder);
	setenv("FORGE_LEASE", holder, 1);
	if (r == STORE_LEASE_STOLEN)
		lease_taken(s, held);
	jv_free(held);
	heartbeat_start(&s->beat, s->o->db_path, s->trace, s->holder,
			config_get_num(s->o->cfg, "supervisor.lease_renew_s"), "forge", s->o->quiet,
			on_lease_lost, NULL);
	return 0;
}

/* A run started from HEAD remembers the branch HEAD was on, so `forge merge`
 * knows where the run goes even after the user switched branches; a detached
 * HEAD records none. */
static void record_base_branch(jv *task, struct forge_git *g)
{
	const char *base = json_get_str(*task, "base_ref");
	char *branch = NULL;

	if (base && strcmp(base, "HEAD") != 0)
		return;
	if (forge_git_head_branch(&branch, g) == 0)
		*task = json_set(*task, "base_branch", jv_string(branch));
	free(branch);
}

/* The run works from its base commit: changes to tracked files in the
 * checkout are not in it.  One line on stderr (unless -q) and an event. */
static void warn_dirty(struct sup *s, struct forge_git *g, const char *base)
{
	if (forge_git_checkout_dirty(g) != 1)
		return;
	if (!s->o->quiet)
		sup_say("warning: the checkout has uncommitted changes to tracked files; the run "
				"starts from %s and will not see them (commit or stash them first)\n", base);
	sup_emit(s, "run.checkout_dirty", json_set(jv_object(), "base_ref", jv_string(base)));
}

/* What git would have done in the worktree and libgit2 does not (submodules,
 * filter drivers such as git-lfs): a line each on stderr (unless -q) and
 * one event, before any model is asked. */
static void warn_limits(struct sup *s, struct forge_git_worktree *wt)
{
	jv notes;

	if (forge_git_worktree_reopened(wt))
		return;	/* said when the run started */
	forge_git_worktree_limits(&notes, wt);
	if (jv_array_length(jv_copy(notes)) == 0) {
		jv_free(notes);
		return;
	}
	jv_array_foreach(notes, i, n) {
		if (!s->o->quiet)
			sup_say("warning: %s\n", jv_string_value(n));
		jv_free(n);
	}
	sup_emit(s, "run.worktree_limits", json_set(jv_object(), "notes", notes));
}

/* The run's worktree on its branch: created now, so every phase shares it.
 * 0, or forge_git_worktree_open()'s failure (FORGE_GIT_SETUP, -1). */
static int make_worktree(struct sup *s, jv *task)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	const char *base = json_get_str(*task, "base_ref");
	int rc = -1;

	if (forge_git_open(&g, s->o->checkout) < 0 || strcmp(forge_git_root(g), s->o->repo) != 0) {
		/* (elsewhere with --repo: the repository is what counts) */
		forge_git_free(g);
		g = NULL;
		if (forge_git_open(&g, s->o->repo) < 0)
			goto out;
	}
	warn_dirty(s, g, base);
	if ((rc = forge_git_worktree_open(&wt, g, s->trace, base)) < 0)
		goto out;
	*task = json_set(*task, "worktree", jv_string(forge_git_worktree_path(wt)));
	*task = json_set(*task, "branch", jv_string(forge_git_worktree_branch(wt)));
	*task = json_set(*task, "base_commit", jv_string(forge_git_worktree_base(wt)));
	record_base_branch(task, g);
	warn_limits(s, wt);
	rc = 0;
out:
	forge_git_worktree_free(wt);
	forge_git_free(g);
	return rc;
}

/*
 * Consolidation that runs by itself (seed 002 section 10): after an ended
 * run, when memory.consolidate_interval_s has passed since the last one or
 * memory.consolidate_new_memories were added since, `forge-memory
 * consolidate --trigger WHY` starts detached (its own session, stdio on
 * /dev/null) and the run ends without waiting for it.  It records what it did
 * (forge memory stats shows it).
 */
static void consolidate_if_due(struct sup *s)
{
	struct memory_options mo;
	struct memory *m = NULL;
	char why[256], prog[4096];
	int due;

	sup_commit_batch(s);     /* memory reads and writes in its own transactions */
	memory_options_init(&mo);
	memory_options_from_config(&mo, s->o->cfg);
	if (memory_open(&m, s->o->store, &mo) < 0)
		return;
	due = memory_consolidation_due(why, sizeof why, m,
				       (int64_t)(config_get_num(s->o->cfg, "memory.consolidate_interval_s") * 1000),
				       (long)config_get_num(s->o->cfg, "memory.consolidate_new_memories"));
	memory_free(m);
	if (due <= 0 || (size_t)snprintf(prog, sizeof prog, "%s/forge-memory", s->o->bindir) >= sizeof prog)
		return;
	const char *argv[40] = { "forge-memory", "consolidate", "--json", "--trigger", why };
	int n = 5;

	if (s->o->db_path && !db_is_postgres(s->o->db_path)) {   /* (FORGE_DB: run_job) */
		argv[n++] = "--db";
		argv[n++] = s->o->db_path;
	}
	for (int i = 0; s->o->phase_args && s->o->phase_args[i] && n < 38; i++)
		argv[n++] = s->o->phase_args[i];
	argv[n] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* A grandchild in a session of its own: nothing waits for it,
		 * and a Ctrl-C at the terminal does not reach it. */
		int devnull = open("/dev/null", O_RDWR);

		if (setsid() < 0 || devnull < 0 || fork() != 0)
			_exit(0);
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	if (pid > 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		sup_emit(s, "memory.consolidation_started", json_set(jv_object(), "reason", jv_string(why)));
	}
}

/*
 * The state --json prints last (consumed), its status saying how the run
 * ended (DESIGN.md section 2: a consumer reads the final state alone).  A
 * stop the supervisor made itself -- a run-level breaker, a gate that
 * waits, a human's no, a failed write -- leaves the last phase's state, ok
 * as it ended (before: `forge run --json` stopped by a breaker, exit 3,
 * ended with the plan's checkpoint, "status":"ok").  Not the checkpoint:
 * a resume goes on from the phase's own.  An interrupt (130) has no status
 * of its own: the state stays as it was.
 */
static jv final_state(jv state, int code)
{
	const char *now = json_get_str(state, "status"), *to = NULL;

	switch (code) {
	case FORGE_EXIT_REJECTED:
		if (!now || (strcmp(now, "rejected") != 0 && strcmp(now, "skipped") != 0))
			to = "rejected";
		break;
	case FORGE_EXIT_USAGE:
	case FORGE_EXIT_DEPENDENCY:
		to = "failed";
		break;
	case FORGE_EXIT_TRIPPED:
		to = "tripped";
		break;
	case FORGE_EXIT_HUMAN:
		to = "escalated";
		break;
	default:
		break;
	}
	if (to && jv_get_kind(state) == JV_KIND_OBJECT)
		state = json_set(state, "status", jv_string(to));
	return state;
}

/* The end of a run or a resume: reflect on an ended run, print the state
 * (--json) or the summary, release s; returns code.  A dry run (s->o, see
 * dry_opts) prints its plan: readable, or with --json the plan's JSON alone
 * (nothing when the plan phase did not pass). */
static int sup_finish(struct sup *s, const struct supervise_opts *o, int code)
{
	jv plan = s->o->dry_run && code == FORGE_EXIT_OK ? json_get(s->state, "plan") : jv_null();

	if (s->ended) {
		reflect_on_run(s, REFLECT_ALL, -1);
		consolidate_if_due(s);
		if (sup_interrupted())
			code = FORGE_EXIT_INTERRUPTED;     /* (its reflection was cut short) */
	}
	if (code == FORGE_EXIT_TRIPPED)
		said_tripped(s);
	else if (code == FORGE_EXIT_REJECTED && s->o->quiet)
		said_rejected(s);
	if (s->o->dry_run && o->json) {
		if (jv_get_kind(plan) == JV_KIND_OBJECT)
			json_write_line(stdout, jv_copy(plan), false);
	} else if (o->json) {
		stream_write(&s->out, final_state(jv_copy(s->state), code));
	} else {
		human_plan(stdout, plan, human_colour(stdout));
		if (o->progress)
			summary(s, code);
	}
	jv_free(plan);
	sup_release(s);
	return code;
}

/*
 * A dry run runs the plan phase alone, on the checkout as it is (no
 * worktree or branch is made), and writes only its plan on stdout: the
 * events and the state stay in the database (json off in the copy the run
 * works with; sup_finish() reads the caller's).
 */
static struct supervise_opts dry_opts(const struct supervise_opts *o)
{
	static const char *const plan_only[] = { "plan", NULL };
	struct supervise_opts d = *o;

	d.dry_run = true;
	d.json = false;
	d.phases = plan_only;
	return d;
}

/* Whether the run was started as a dry run: its run.started event
 * (borrowed; null when there is none) says so. */
static bool started_dry(jv started)
{
	jv payload = json_get(started, "payload");
	bool dry = json_get_bool(payload, "dry_run", false);

	jv_free(payload);
	return dry;
}

void supervise_graph_errors(const struct graph *g)
{
	for (size_t i = 0; i < g->nerrors; i++) {
		if (g->errors[i].node)
			fprintf(stderr, "%s: node '%s': %s\n", g->source, g->errors[i].node, g->errors[i].message);
		else
			fprintf(stderr, "%s: %s\n", g->source, g->errors[i].message);
	}
}

/*
 * The pipeline a graph run recorded in its run.started (started, borrowed;
 * null when there is none), loaded again (the programs found as they are
 * now): *out NULL for a run that recorded none (the phase loop's before
 * every run was a pipeline's).  0, or exit 2 with the pipeline's errors
 * listed.
 */
static int recorded_graph(struct graph **out, const struct supervise_opts *o, const char *trace, jv started)
{
	int rc = 0;

	*out = NULL;
	if (jv_get_kind(started) != JV_KIND_OBJECT)
		return 0;
	jv payload = json_get(started, "payload"), p = json_get(payload, "pipeline");
	if (jv_get_kind(p) == JV_KIND_OBJECT) {
		struct graph_env env = { .cfg = o->cfg, .bindir = o->bindir };

		int grc = graph_from_json(out, json_get(p, "doc"), json_get_str(p, "source"),
					  json_get_str(p, "path"), &env);

		/* (a run before "project" was recorded: its file's place says) */
		(*out)->project = json_get_bool(p, "project", false) ||
				  (json_get_str(p, "path") && strstr(json_get_str(p, "path"), "/.forge/pipelines/"));
		if (grc < 0) {
			sup_say("run %s's pipeline cannot run now:\n", trace);
			supervise_graph_errors(*out);
			graph_free(*out);
			*out = NULL;
			rc = FORGE_EXIT_USAGE;
		}
	}
	jv_free(p);
	jv_free(payload);
	return rc;
}

/* Into *out (an array), what node `id` of byid ({id: node}) needs among
 * the kept nodes: its own needs that are kept, and for each that is not,
 * what that one needs, as far back as it goes (depth bounds a cycle, which
 * validation reports). */
static jv kept_needs(jv out, jv byid, jv kept, const char *id, int depth)
{
	jv node = json_get(byid, id), needs = json_get(node, "needs");

	if (jv_get_kind(needs) == JV_KIND_ARRAY && depth > 0) {
		jv_array_foreach(needs, k, need) {
			const char *nid = jv_get_kind(need) == JV_KIND_STRING ? jv_string_value(need) : "";
			bool seen = false;

			jv_array_foreach(out, m, have) {
				seen = seen || (jv_get_kind(have) == JV_KIND_STRING && strcmp(jv_string_value(have), nid) == 0);
				jv_free(have);
				(void)m;
			}
			if (json_has(kept, nid) && !seen)
				out = jv_array_append(out, jv_copy(need));
			else if (!json_has(kept, nid))
				out = kept_needs(out, byid, kept, nid, depth - 1);
			jv_free(need);
			(void)k;
		}
	}
	jv_free(needs);
	jv_free(node);
	return out;
}

/*
 * `--phases LIST` (and a dry run's plan alone) on a pipeline document
 * (consumed): only its nodes of those phases, each needing what it needed
 * among them (directly, or through the nodes left out); a bounce to a node
 * left out is gone.  New reference.
 */
static jv only_phases(jv doc, const char *const *phases)
{
	jv nodes = json_get(doc, "nodes"), byid = jv_object(), kept = jv_object(), out = jv_array();

	jv_array_foreach(nodes, i, nd) {
		const char *id = json_get_str(nd, "id"), *phase = json_get_str(nd, "phase");
		bool want = false;

		for (const char *const *p = phases; phase && *p && !want; p++)
			want = strcmp(*p, phase) == 0;
		if (id && want)
			kept = json_set(kept, id, jv_true());
		if (id)
			byid = json_set(byid, id, jv_copy(nd));
		jv_free(nd);
		(void)i;
	}
	jv_array_foreach(nodes, i, nd) {
		const char *id = json_get_str(nd, "id");
		jv bounce = json_get(nd, "bounce");

		if (!id || !json_has(kept, id)) {
			jv_free(bounce);
			jv_free(nd);
			continue;
		}
		jv needs = kept_needs(jv_array(), byid, kept, id, jv_array_length(jv_copy(nodes)));
		nd = jv_array_length(jv_copy(needs)) ? json_set(nd, "needs", needs)
						      : (jv_free(needs), jv_object_delete(nd, jv_string("needs")));
		if (jv_get_kind(bounce) == JV_KIND_OBJECT && !json_has(kept, json_get_str(bounce, "to") ?
								 json_get_str(bounce, "to") : ""))
			nd = jv_object_delete(nd, jv_string("bounce"));
		jv_free(bounce);
		out = jv_array_append(out, nd);
		(void)i;
	}
	jv_free(nodes);
	jv_free(byid);
	jv_free(kept);
	return json_set(doc, "nodes", out);
}

/*
 * The pipeline a run follows without --pipeline: the default one (the
 * project's .forge/pipelines/default.json, else the built-in), with only
 * the phases o->phases asks for.  0, or exit 2 with its errors listed.
 */
static int default_graph(struct graph **out, const struct supervise_opts *o)
{
	struct graph_env env = { .cfg = o->cfg, .bindir = o->bindir };
	int rc = graph_load(out, "default", o->repo, &env);

	if (rc == 0 && o->phases) {
		struct graph *all = *out;

		rc = graph_from_json(out, only_phases(jv_copy(all->doc), o->phases), all->source, all->path, &env);
		(*out)->project = all->project;
		graph_free(all);
	}
	if (rc < 0) {
		supervise_graph_errors(*out);
		sup_say("the default pipeline has %zu error%s: nothing was started\n", (*out)->nerrors,
			(*out)->nerrors == 1 ? "" : "s");
		graph_free(*out);
		*out = NULL;
		return FORGE_EXIT_USAGE;
	}
	return 0;
}

/* Whether a node of g runs the built-in phase. */
static bool graph_has_phase(const struct graph *g, const char *phase)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->nodes[i].phase && strcmp(g->nodes[i].phase, phase) == 0)
			return true;
	return false;
}

/* How many nodes may run at once: --jobs, else pipeline.jobs, at least 1. */
static int jobs_of(const struct supervise_opts *o)
{
	int jobs = o->jobs > 0 ? o->jobs : (int)config_get_num(o->cfg, "pipeline.jobs");

	return jobs > 0 ? jobs : 1;
}

/* What run.started records of a graph run's pipeline: enough to load it
 * again as it was ({"name","source","path","doc","project"}). */
static jv pipeline_record(const struct graph *g)
{
	jv p = json_set(json_set(jv_object(), "name", json_str_or_null(g->name)), "source", jv_string(g->source));

	/* absolute: forge resume from another directory resolves the same programs */
	char *abs = g->path && g->path[0] != '/' ? realpath(g->path, NULL) : NULL;

	p = json_set(json_set(p, "path", json_str_or_null(abs ? abs : g->path)), "doc", jv_copy(g->doc));
	free(abs);
	return json_set(p, "project", jv_bool(g->project));
}

/*
 * Every phase the run will run that needs a model (plan, implement) can
 * make its client: a provider and its key are set (llm_client_new sends
 * nothing; a base URL that does not answer is found by the first call),
 * and the model has a price, without which the budget could not hold.
 * Checked before anything is made.  0, or exit 2 with what to set.
 */
static int check_models(const struct supervise_opts *o)
{
	static const char *const need[] = { "plan", "implement" };

	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
		struct llm_options opt;
		struct llm_client *c = NULL;

		if (!graph_has_phase(o->graph, need[i]))
			continue;
		cli_say_base_url_unused(o->cfg, need[i], o->quiet);
		llm_options_init(&opt);
		llm_options_for(&opt, o->cfg, need[i], false);
		int rc = llm_client_new(&c, &opt);
		bool made = rc == 0;
		if (made)
			rc = llm_client_require_price(c);
		llm_client_free(c);
		if (rc < 0) {
			sup_say("the %s phase %s: %s; nothing was started\n", need[i],
				made ? "cannot use its model" : "has no model", forge_last_error());
			return FORGE_EXIT_USAGE;
		}
	}
	return 0;
}

/* A base that names no commit (forge_last_error() says why): exit 2 with
 * the branch the checkout is on, a base that would do. */
static int bad_base(const struct supervise_opts *o, struct forge_git *g, const char *base)
{
	char why[512], hint[480] = "";
	char *branch = NULL;

	snprintf(why, sizeof why, "%s", forge_last_error());
	if (forge_git_head_branch(&branch, g) == 0 && strcmp(branch, base) != 0)
		snprintf(hint, sizeof hint, "; the checkout is on branch '%.200s' (--base %.200s, or no --base: "
			 "the checkout's HEAD)", branch, branch);
	sup_say("%s%s%s names no commit in %s: %s%s; nothing was started\n",
		o->base_ref ? "--base '" : "", base, o->base_ref ? "'" : "", o->repo, why, hint);
	free(branch);
	return FORGE_EXIT_USAGE;
}

/*
 * The run's base can be worked from: it names a commit, or the unborn
 * HEAD of a repository with no commits yet (before: a --base that named
 * nothing was found by make_worktree(), after the run's row was made:
 * exit 5 and a failed run in forge history; a dry run ignored it); and a
 * repository with no commits yet whose checkout holds files would give the
 * run an empty worktree, and every phase would work on nothing
 * (forge_git_base_check), or a repository whose path is so long that a
 * file of base would not fit in the run's worktree cannot have one
 * (forge_git_base_check), nor one with a branch named "forge" where the
 * run's forge/TRACE would go (forge_git_base_check), nor one in a format
 * libgit2 cannot open (forge_git_open's FORGE_GIT_SETUP; before, these
 * two were exit 5 and a failed run in forge history).  Checked before
 * anything is made, like
 * check_models; a dry run plans on the checkout itself and needs no
 * commit, but the --base it was given must name one.  0, or exit 2 saying
 * what to do.
 */
static int check_base(const struct supervise_opts *o, const char *base, const char *trace)
{
	struct forge_git *g = NULL;
	int rc = 0, e = forge_git_open(&g, o->repo);

	/* one the person must change (another user's, a format libgit2
	 * cannot open) is said now, before the run is recorded; any other
	 * that cannot be opened is make_worktree()'s to report */
	if (e < -1) {
		sup_say("%s; nothing was started\n", forge_last_error());
		return FORGE_EXIT_USAGE;
	}
	if (e < 0)
		return 0;
	if (forge_git_base_resolves(g, base) < 0) {
		rc = bad_base(o, g, base);
	} else if (!o->dry_run && forge_git_base_check(g, base, trace) > 0) {
		sup_say("%s; nothing was started\n", forge_last_error());
		rc = FORGE_EXIT_USAGE;
	}
	forge_git_free(g);
	return rc;
}

/*
 * What the person gave for this run of the configuration: the --config
 * file's layer with the flags' over it (run.started's config_layer), which
 * a resume goes on under (resume_config).  URL passwords as "***"; keys
 * never live in the configuration.  New reference.
 */
static jv run_layer(const struct config *cfg)
{
	jv layer = config_layer_value(cfg, "file"), flags = config_layer_value(cfg, "flags");

	if (jv_get_kind(layer) != JV_KIND_OBJECT) {
		jv_free(layer);
		layer = jv_object();
	}
	if (jv_get_kind(flags) == JV_KIND_OBJECT)
		layer = jv_object_merge_recursive(layer, flags);
	else
		jv_free(flags);
	return secret_url_passwords_hidden_jv(layer);
}

/*
 * A merge deploy fast-forwards the branch the run starts from (the
 * checkout's, recorded as task.base_branch): a run started without --base
 * on a detached HEAD has none, and its deploy failed at the end, every
 * phase before it paid for (hunt70 #3).  Checked before anything is made,
 * as check_base, when a deploy node merges by the configuration (one that
 * names its own --strategy decides for itself); the checkout is the one
 * make_worktree() records the branch of.  0, or exit 2 saying what to do.
 */
static int check_merge_branch(const struct supervise_opts *o, const char *base)
{
	const char *strategy = config_get_str(o->cfg, "deploy.strategy");
	struct forge_git *g = NULL;
	char *branch = NULL;
	bool merges = false;
	int rc = 0;

	if (o->dry_run || strcmp(base, "HEAD") != 0 || !strategy || strcmp(strategy, "merge") != 0)
		return 0;
	for (size_t i = 0; i < o->graph->n; i++) {
		const struct graph_node *nd = &o->graph->nodes[i];
		bool own = false;

		if (!nd->phase || strcmp(nd->phase, "deploy") != 0)
			continue;
		for (size_t a = 0; a < nd->nargs; a++)
			own = own || strncmp(nd->args[a], "--strategy", 10) == 0;
		merges = merges || !own;
	}
	if (!merges)
		return 0;
	if (forge_git_open(&g, o->checkout) < 0 || strcmp(forge_git_root(g), o->repo) != 0) {
		forge_git_free(g);
		g = NULL;
		if (forge_git_open(&g, o->repo) < 0)
			return 0;	/* (make_worktree's to report) */
	}
	if (forge_git_head_branch(&branch, g) < 0) {
		sup_say("deploy.strategy is merge, which fast-forwards the branch the run starts "
				"from, but %s; switch to that branch (git switch BRANCH) or name it with --base "
				"BRANCH; nothing was started\n", forge_last_error());
		rc = FORGE_EXIT_USAGE;
	}
	free(branch);
	forge_git_free(g);
	return rc;
}

/* A new run of o->graph (caller: the options as given, for sup_finish). */
static int start_run(const struct supervise_opts *o, const struct supervise_opts *caller, const char *task_text)
{
	struct sup s;
	char trace[ULID_LEN + 1];
	double budget = o->budget_usd >= 0 ? o->budget_usd : config_get_num(o->cfg, "budget.usd");
	const char *base = o->base_ref ? o->base_ref : "HEAD";
	const char *env = config_get_str(o->cfg, "deploy.environment");
	int code = check_lease_settings(o->cfg);   /* (before: after the run's row, left "interrupted") */
	if (!code)
		code = check_models(o);
	ulid_new(trace);
	if (!code)
		code = check_base(o, base, trace);
	if (!code)
		code = check_merge_branch(o, base);
	if (code)
		return code;
	sup_init(&s, o, trace);
	set_level(&s, -1);
	jv task = json_set(json_set(json_set(jv_object(), "description", jv_string(task_text)),
				    "repo", jv_string(o->repo)), "base_ref", jv_string(base));
	if (env)
		task = json_set(task, "environment", jv_string(env));
	/* The run's row first: a run that cannot be recorded leaves nothing
	 * behind (no worktree, no branch). */
	jv conf = jv_setpath(config_effective(o->cfg), JV_ARRAY(jv_string("safety"), jv_string("automation_level")),
			     jv_number(s.level));
	if (store_run_create(o->store, trace, task_text, o->repo, conf) < 0) {
		sup_say("%s\n", forge_last_error());
		jv_free(task);
		sup_release(&s);
		return FORGE_EXIT_DEPENDENCY;
	}
	code = take_lease(&s);
	int made = code == 0 && !o->dry_run ? make_worktree(&s, &task) : 0;
	if (made < 0) {
		char why[1024];
		snprintf(why, sizeof why, "cannot make the run's worktree: %s", forge_last_error());
		sup_say("%s\n", why);
		store_run_update(o->store, trace, "failed", NULL, why);
		/* (the repository as the person set it up: theirs to change) */
		code = made == FORGE_GIT_SETUP ? FORGE_EXIT_USAGE : FORGE_EXIT_DEPENDENCY;
	}
	if (code) {
		jv_free(task);
		sup_release(&s);
		return code;
	}
	s.state = stream_state_initial(trace, task, budget);
	if (jv_get_kind(o->initial) == JV_KIND_OBJECT)
		s.state = jv_object_merge(jv_copy(o->initial), s.state);
	sup_progress(&s, "%s: run %s: %s", program_invocation_short_name, trace, task_text);
	sup_progress(&s, "  automation level %d (%s)", s.level, s.level_from);
	jv started = json_set(json_set(jv_object(), "task", jv_string(task_text)), "dry_run", jv_bool(o->dry_run));
	s.graph = o->graph;
	started = json_set(started, "pipeline", pipeline_record(o->graph));
	started = json_set(started, "config_layer", run_layer(o->cfg));
	sup_emit(&s, "run.started", level_payload(&s, started));
	/* what the repository's configuration may not set and did (said on
	 * stderr when the configuration loaded: app/cli.c) */
	jv ignored = config_ignored(o->cfg);
	if (jv_array_length(jv_copy(ignored)) > 0)
		sup_emit(&s, "run.config_ignored", json_set(json_set(jv_object(), "ignored", ignored), "setting",
							    jv_string("trust_project")));
	else
		jv_free(ignored);
	if (!graph_has_phase(o->graph, "plan") && graph_has_phase(o->graph, "implement")) {
		jv plan = sup_plan_from_task(task_text);
		sup_emit(&s, "plan.from_task", json_set(jv_object(), "plan", jv_copy(plan)));
		s.state = json_set(s.state, "plan", plan);
	}
	/* The first checkpoint ("init") is the executor's, as the first nodes start. */
	code = sup_graph_run(&s, jobs_of(o));
	return sup_finish(&s, caller, code);
}

int supervise_run(const struct supervise_opts *o, const char *task_text)
{
	/* A dry run's copy: sup_finish() gets the caller's, for its --json. */
	struct supervise_opts mine = o->dry_run ? dry_opts(o) : *o;
	struct graph *own = NULL;
	int code = 0;

	if (!mine.graph && (code = default_graph(&own, &mine)) != 0)
		return code;
	if (own)
		mine.graph = own;
	code = start_run(&mine, o, task_text);
	graph_free(own);
	return code;
}

/*
 * `forge resume` in another repository than the run's: another clone (with
 * git.push_remote set, the run's branch is fetched from there when this one
 * lacks it), or the run's repository moved or copied elsewhere (the branch
 * is here).  The state is pointed at this repository's worktree
 * (runshare.h).  Returns 0, or exit 5 when the branch is nowhere to be had.
 */
static int adopt_clone(struct sup *s)
{
	const char *remote = config_get_str(s->o->cfg, "git.push_remote");
	jv task = json_get(s->state, "task"), ev;
	const char *repo = json_get_str(task, "repo");
	char *shown = NULL;
	int rc = 0;

	if (!json_get_str(task, "branch"))
		goto out;
	if (remote && !*remote)
		remote = NULL;
	if (remote) {
		shown = forge_git_url_display(remote);
		/* a clone left behind (the run went on elsewhere, A -> B -> A) catches up first */
		rc = runshare_catch_up(&ev, s->o->repo, remote, s->trace);
		if (rc == 2) {
			sup_say("%s\n", forge_last_error());
			rc = FORGE_EXIT_DEPENDENCY;
			goto out;
		}
		if (rc < 0 && !s->o->quiet)
			sup_say("warning: the run's branch on '%s' cannot be compared with this clone's: %s\n",
				shown, forge_last_error());
		if (rc == 0 && jv_get_kind(ev) == JV_KIND_OBJECT)
			sup_emit(s, "run.caught_up", ev);
		else
			jv_free(ev);
		rc = 0;
	}
	/* The run's own repository: its worktree, or (without a remote) one made
	 * again there by the resume.  Another place -- a clone, or the repository
	 * moved or copied -- takes the run over. */
	if (repo && strcmp(repo, s->o->repo) == 0 && (!remote || runshare_is_dir(json_get_str(task, "worktree"))))
		goto out;
	rc = runshare_adopt(&s->state, &ev, s->o->repo, remote);
	if (rc == 0) {
		sup_emit(s, "run.adopted", ev);
		goto out;
	}
	if (rc > 0 && remote)
		forge_error("the run's branch %s is neither in %s nor on the remote '%s' (git.push_remote)",
			    json_get_str(task, "branch"), s->o->repo, shown);
	else if (rc > 0)
		forge_error("the run's repository was '%s' and its branch %s is not in %s: resume it there, "
			    "or set git.push_remote to fetch it", repo ? repo : "?", json_get_str(task, "branch"),
			    s->o->repo);
	sup_say("%s\n", forge_last_error());
	rc = FORGE_EXIT_DEPENDENCY;
out:
	free(shown);
	jv_free(task);
	return rc;
}

/* A failed save of the worktree (recover_worktree): what failed, and what
 * to do -- a stale lock of a saved ref (one older than this resume's
 * lease, leased_ms) is named.  Nothing ran, so the run stays resumable. */
static int recover_failed(struct sup *s, struct forge_git *g, int64_t leased_ms)
{
	char *lock = NULL;
	char *why = xstrdup(forge_last_error());

	if (g && forge_git_saved_lock(&lock, g, s->trace, leased_ms) < 0)
		lock = NULL;
	sup_say("cannot save the run's worktree before its phase runs again: %s; the worktree was "
			"left as it is and nothing was resumed\n", why);
	if (lock)
		sup_say("'%s' is a stale lock (older than this resume, which holds the run): a process "
				"stopped while it saved left it; remove it, then `forge resume %s`\n", lock, s->trace);
	else
		sup_say("fix that (free some space if the disk is full), then `forge resume %s`\n",
			s->trace);
	free(lock);
	free(why);
	return FORGE_EXIT_DEPENDENCY;
}

/*
 * The commit of the run's last checkpoint is not in the repository: its
 * branch and refs were removed (forge gc --resumable, git branch -D, git
 * update-ref -d) and git pruned what they held since (git gc).  Nothing can
 * bring the run back, so it is marked failed with a reason saying so (its
 * next line then says to run the task again, and forge gc removes what is
 * left of it), and stderr says so.  FORGE_EXIT_DEPENDENCY.  (Before: a
 * restore of the branch that could not be made, then "cannot resolve" from
 * the worktree's save and "free some space if the disk is full", at every
 * resume.)
 */
static int work_gone(struct sup *s, const char *commit)
{
	char why[300];

	snprintf(why, sizeof why, RUNVIEW_WORK_GONE ": the commit %.12s of its last checkpoint is no longer in the "
		 "repository (its branch was removed, then pruned by git)", commit);
	if (store_run_update(s->o->store, s->trace, "failed", NULL, why) < 0)
		sup_say("warning: %s\n", forge_last_error());
	sup_say("run %s cannot be resumed: the commit %.12s of its last checkpoint is no longer in "
			"the repository: the run's branch and refs were removed (forge gc --resumable, git branch "
			"-D) and git has pruned what they held since, so the run's work is gone; start the task "
			"again with `forge run` (forge gc removes what is left of this one)\n", s->trace, commit);
	return FORGE_EXIT_DEPENDENCY;
}

/* After a crash, bring the worktree back to the checkpoint's commit.  0,
 * or FORGE_EXIT_DEPENDENCY with a message when the worktree's changes
 * could not be read or saved: the phase must not run again on them (they
 * would be committed into the run). */
static int recover_worktree(struct sup *s, int64_t leased_ms)
{
	jv task = json_get(s->state, "task"), changes = json_get(s->state, "changes");
	const char *commit = json_get_str(changes, "commit");
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *saved = NULL;
	int code = 0;

	if (!commit)
		commit = json_get_str(task, "base_commit");
	if (commit && json_get_str(task, "worktree") && forge_git_open(&g, s->o->repo) == 0) {
		/* its work pruned: nothing to go on from (the checkpoint's
		 * commit is read first, before anything of the run is made again) */
		if (forge_git_has_object(g, commit) == 0) {
			code = work_gone(s, commit);   /* (commit: borrowed from changes or task) */
			forge_git_free(g);
			jv_free(task);
			jv_free(changes);
			return code;
		}
		/* a process killed while it committed left git's locks: every
		 * later commit failed on them, after the model was paid again */
		int n = forge_git_clear_run_locks(g, s->trace);

		if (n > 0)
			sup_emit(s, "worktree.locks_removed", json_set(jv_object(), "count", jv_number(n)));
	}
	/* A branch a person deleted (the worktree too, or not) comes back at
	 * the checkpoint's commit: the run goes on from what it had, and the
	 * worktree made anew is not taken for their changes. */
	char name[FORGE_GIT_RUN_NAME_SIZE];
	if (commit && json_get_str(task, "worktree") && g && forge_git_run_name(name, s->trace) == 0 &&
	    forge_git_run_branch_restore(g, s->trace, commit, json_get_str(task, "base_commit")) == 1) {
		sup_emit(s, "worktree.branch_restored", json_set(json_set(jv_object(), "branch",
			 jv_string_fmt("forge/%s", name)), "commit", jv_string(commit)));
		if (!s->o->quiet)
			sup_say("the run's branch forge/%s was gone: made again at its last "
					"checkpoint's commit %.12s\n", name, commit);
	}
	if (commit && json_get_str(task, "worktree") && g &&
	    forge_git_worktree_open(&wt, g, s->trace, json_get_str(task, "base_ref")) == 0) {
		char *head = NULL;
		jv status = jv_null(), cleaned;
		char *kept_in = NULL;

		forge_git_worktree_head(&head, wt);
		/* what a command Forge ran there (forge-test's tests,
		 * forge-implement's validation, forge-review's lint command,
		 * forge-deploy's commands: app/phase.h) left when the phase died
		 * before it cleaned up is no work to keep (before: kept on a
		 * saved ref as the run's, a test report among the model's
		 * files) */
		int cr = forge_git_command_recover(&cleaned, &kept_in, forge_git_worktree_path(wt));

		if (jv_array_length(jv_copy(cleaned)) > 0)
			sup_emit(s, "worktree.cleaned", json_set(json_set(jv_object(), "removed", jv_copy(cleaned)),
								 "kept_in", json_str_or_null(kept_in)));
		/* (moved, not deleted: a file a person added there looks the same) */
		if (!s->o->quiet && kept_in)
			sup_say("%d file(s) a stopped command left in the run's worktree (tests, "
					"validation, a lint or deploy command) moved to %s (not the run's work)\n",
				jv_array_length(jv_copy(cleaned)), kept_in);
		jv_free(cleaned);
		free(kept_in);
		/* (a status that cannot be read is not a clean worktree, and a
		 * save that failed is not one to go on from: before, the phase
		 * ran again on whatever was there and committed it) */
		if (cr < 0 || forge_git_status(&status, wt) < 0) {
			code = recover_failed(s, g, leased_ms);
		} else if (jv_array_length(jv_copy(status)) > 0 || (head && strcmp(head, commit) != 0)) {
			int r = forge_git_save_and_reset(&saved, wt, commit);

			if (r < 0) {
				code = recover_failed(s, g, leased_ms);
			} else if (r == 0) {
				sup_emit(s, "worktree.recovered", json_set(json_set(jv_object(), "saved_ref",
					 json_str_or_null(saved)), "reset_to", jv_string(commit)));
				/* a person's edit or commit there is not lost: say where it is */
				if (!s->o->quiet && saved)
					sup_say("the run's worktree had changes its last checkpoint does "
							"not have: kept on %s; the run goes on from %.12s (git diff %.12s "
							"%s shows them)\n", saved, commit, commit, saved);
			}
		}
		free(head);
		jv_free(status);
	}
	free(saved);
	forge_git_worktree_free(wt);
	forge_git_free(g);
	jv_free(task);
	jv_free(changes);
	return code;
}

void sup_add_spend(struct sup *s, double usd, double tokens)
{
	jv cost = json_get(s->state, "cost");
	jv budget = json_get(s->state, "budget");

	if (jv_get_kind(cost) != JV_KIND_OBJECT)
		cost = (jv_free(cost), jv_object());
	double total = json_get_num(cost, "usd", 0) + usd;
	cost = json_set(cost, "usd", jv_number(total));
	cost = json_set(cost, "tokens", jv_number(json_get_num(cost, "tokens", 0) + tokens));
	s->state = json_set(s->state, "cost", cost);
	/* what is left is the limit less all that was spent, as a phase's
	 * account() has it (before: the checkpoint's remaining_usd stayed, and
	 * the re-run phase spent past the run's budget) */
	if (jv_get_kind(budget) == JV_KIND_OBJECT && json_has(budget, "usd"))
		budget = json_set(budget, "remaining_usd", jv_number(json_get_num(budget, "usd", 0) - total));
	else if (jv_get_kind(budget) == JV_KIND_OBJECT && json_has(budget, "remaining_usd"))
		budget = json_set(budget, "remaining_usd",
				  jv_number(json_get_num(budget, "remaining_usd", 0) - usd));
	else
		budget = (jv_free(budget), jv_null());
	if (jv_get_kind(budget) != JV_KIND_NULL)
		s->state = json_set(s->state, "budget", budget);
}

/* The phases that ended before (phase.completed events: ev.phase), in the
 * order they did, onto *order ({phase: 0}, the first time each). */
static int line_phase_done(const char *line, size_t len, void *payload)
{
	jv *order = payload, ev = json_parse(line, len);
	const char *phase = json_get_str(ev, "phase");

	if (phase && json_get_str(ev, "type") && !strcmp(json_get_str(ev, "type"), "phase.completed") &&
	    !json_has(*order, phase))
		*order = json_set(*order, phase, jv_number(0));
	jv_free(ev);
	return 0;
}

/*
 * The model calls made after the run's last checkpoint (a supervisor
 * killed with its phase: kill -9, SIGHUP to the group, a machine that went
 * down) into the state's cost, so the budget breakers read what was spent
 * (before: they dropped out of the run's cost at each such resume), and
 * what llm_calls holds beyond that.
 */
/* The phases' recovered calls of trace's earlier resumes (their
 * run.cost_recovered "phases"), onto *sum ({phase: {usd, tokens, calls}}). */
static int line_recovered(const char *line, size_t len, void *payload)
{
	jv *sum = payload, ev = json_parse(line, len), p = json_get(ev, "payload"), phases;

	if (!json_get_str(ev, "type") || strcmp(json_get_str(ev, "type"), "run.cost_recovered") != 0) {
		jv_free(p);
		jv_free(ev);
		return 0;
	}
	phases = json_get(p, "phases");
	if (jv_get_kind(phases) == JV_KIND_OBJECT) {
		jv_object_foreach(phases, k, v) {
			jv had = json_get(*sum, jv_string_value(k));

			if (jv_get_kind(had) != JV_KIND_OBJECT) {
				jv_free(had);
				had = jv_object();
			}
			for (size_t i = 0; i < 3; i++) {
				const char *f = i == 0 ? "usd" : i == 1 ? "tokens" : "calls";

				had = json_set(had, f, jv_number(json_get_num(had, f, 0) + json_get_num(v, f, 0)));
			}
			*sum = json_set(*sum, jv_string_value(k), had);
			jv_free(k);
			jv_free(v);
		}
	}
	jv_free(phases);
	jv_free(p);
	jv_free(ev);
	return 0;
}

/*
 * Whose the calls are that the model-call log holds without their
 * llm.called event (logged: what they cost, recovered into the run's
 * cost): the phase of each, less what earlier resumes recovered of it, at
 * most logged in all.  Before, forge show's and report's phases left them
 * out and did not add up to the run's total.  {phase: {usd, tokens,
 * calls}}; empty when the log cannot be read.
 */
static jv unevented_phases(struct sup *s, double logged)
{
	jv now = jv_null(), before = jv_object(), out = jv_object();

	if (store_unevented_by_phase(&now, s->o->store, s->trace) < 0 ||
	    store_events_foreach_type(s->o->store, s->trace, "run.cost_recovered", line_recovered, &before) < 0) {
		jv_free(now);
		jv_free(before);
		return out;
	}
	jv_object_foreach(now, k, v) {
		jv had = json_get(before, jv_string_value(k));
		double usd = fmin(json_get_num(v, "usd", 0) - json_get_num(had, "usd", 0), logged);
		double tokens = json_get_num(v, "tokens", 0) - json_get_num(had, "tokens", 0);
		double calls = json_get_num(v, "calls", 0) - json_get_num(had, "calls", 0);

		if (usd > 1e-9) {
			logged -= usd;
			out = json_set(out, jv_string_value(k),
				       json_set(json_set(json_set(jv_object(), "usd", jv_number(usd)), "tokens",
						jv_number(fmax(tokens, 0))), "calls", jv_number(fmax(calls, 0))));
		}
		jv_free(had);
		jv_free(k);
		jv_free(v);
	}
	jv_free(now);
	jv_free(before);
	return out;
}

static void count_unrecorded_spend(struct sup *s)
{
	double usd = 0, tokens = 0;
	long calls = 0;
	jv run = jv_null(), cost = json_get(s->state, "cost");

	if (store_spent_since_checkpoint(&usd, &tokens, &calls, s->o->store, s->trace) < 0 ||
	    store_run_get_brief(&run, s->o->store, s->trace) < 0) {
		sup_say("warning: %s; the run's cost may leave out its last calls\n", forge_last_error());
		jv_free(cost);
		return;
	}
	/* a call llm_calls logged whose llm.called event was lost (a full
	 * disk) is paid too: the run's totals count the log's (store_run_get;
	 * before: the resume recovered one call fewer than was paid for) */
	double logged = json_get_num(run, "total_cost_usd", 0) - json_get_num(cost, "usd", 0) - usd;
	double logged_tokens = json_get_num(run, "total_tokens", 0) - json_get_num(cost, "tokens", 0) - tokens;

	jv_free(run);
	jv_free(cost);
	if (logged > 1e-9)
		usd += logged;
	if (logged_tokens > 0)
		tokens += logged_tokens;
	if (calls == 0 && logged <= 1e-9)
		return;
	sup_add_spend(s, usd, tokens);
	jv payload = json_set(json_set(json_set(jv_object(), "calls", jv_number((double)calls)), "usd", jv_number(usd)),
			      "tokens", jv_number(tokens));
	if (logged > 1e-9)
		payload = json_set(payload, "phases", unevented_phases(s, logged));
	sup_emit(s, "run.cost_recovered", payload);
	if (logged > 1e-9)
		sup_progress(s, "  %ld model call%s after the last checkpoint and calls logged without their event "
			     "cost $%.4f: counted in the run's cost", calls, calls == 1 ? "" : "s", usd);
	else
		sup_progress(s, "  %ld model call%s after the last checkpoint cost $%.4f: counted in the run's cost",
			     calls, calls == 1 ? "" : "s", usd);
}

/* state with its budget set to usd, what remains of it counted again
 * (forge resume --budget).  Consumes state. */
static jv with_budget(jv state, double usd)
{
	jv cost = json_get(state, "cost");
	double spent = json_get_num(cost, "usd", 0);

	jv_free(cost);
	return json_set(state, "budget", json_set(json_set(jv_object(), "usd", jv_number(usd)),
						   "remaining_usd", jv_number(usd - spent)));
}

/*
 * What of the reflection on a run's ending (reflect_on_run) its events do
 * not hold: the steps whose events are missing after its last run.completed
 * (*upto: the number of events through that one); none once Loop 3's end is
 * there (the last step), nor for a run that never ended.  A run whose
 * supervisor died between the two (kill -9) has its ending and not this.
 */
/* A memory's event of reflect_on_run: a memory stored, or one an earlier
 * end of the run stored rewritten for this one. */
static bool stored_or_updated(const char *type)
{
	return strcmp(type, "memory.stored") == 0 || strcmp(type, "memory.updated") == 0;
}

static unsigned reflection_missing(int *upto, struct store *st, const char *trace)
{
	jv events = jv_array();
	int end = -1;
	unsigned todo = 0;

	*upto = 0;
	if (store_events_foreach(st, trace, collect, &events) < 0) {
		jv_free(events);        /* unreadable: rather nothing than twice */
		return 0;
	}
	jv_array_foreach(events, i, ev) {
		const char *type = json_get_str(ev, "type");
		jv p = json_get(ev, "payload");
		const char *source = json_get_str(p, "source");

		if (!type) {
			/* (none) */
		} else if (strcmp(type, "run.completed") == 0) {
			end = i;
			todo = REFLECT_ALL;
		} else if (strcmp(type, "run.reflection") == 0 && json_has(p, "triggers")) {
			todo = 0;
		} else if (!stored_or_updated(type)) {
			/* (none) */
		} else if (source && strcmp(source, "run_episode") == 0) {
			todo &= ~(unsigned)REFLECT_EPISODE;
		} else if (source && strcmp(source, "run_lesson") == 0) {
			todo &= ~(unsigned)REFLECT_LESSONS;
		}
		jv_free(p);
		jv_free(ev);
	}
	jv_free(events);
	*upto = end + 1;
	return todo;
}

/*
 * `forge resume` of an ended run (status completed or cancelled, which do
 * not run again) whose reflection is missing (reflection_missing): the
 * steps missing are done now, once, under the run's lease, and stderr says
 * so (before: "already completed", and the run's episode and lessons were
 * never stored).  Returns 0, or take_lease's exit status.
 */
static int late_reflection(const struct supervise_opts *o, const char *trace)
{
	struct supervise_opts quiet = *o;
	struct sup s;
	int upto, code;
	unsigned todo = reflection_missing(&upto, o->store, trace);

	if (!todo)
		return 0;
	quiet.json = false;     /* stdout stays as for an ended run: empty */
	sup_init(&s, &quiet, trace);
	if (store_checkpoint_latest(&s.state, o->store, trace) < 0 || jv_get_kind(s.state) != JV_KIND_OBJECT) {
		jv_free(s.state);
		s.state = jv_object();
	}
	s.saved = jv_copy(s.state);
	code = take_lease(&s);
	/* again under the lease: another resume may have done it meanwhile */
	if (code == 0 && (todo = reflection_missing(&upto, o->store, trace)) != 0 &&
	    reflect_on_run(&s, todo, upto) == 0) {
		sup_say("run %s ended without its reflection (its supervisor died first): "
				"reflected on it now\n", trace);
		consolidate_if_due(&s);
	}
	sup_release(&s);
	return code;
}

/*
 * `forge resume` of a run with no checkpoint: it stopped before its first
 * one was kept (stop_unkept; a worktree that could not be made), so none
 * of its work was, and no phase ran.  Under its lease (a run that is
 * starting has none yet either), the run is marked failed when it is not
 * ended -- history shows why, forge gc removes what it left -- and the
 * message says what to do: start the task again.  Exit 5 (before: "has no
 * checkpoint to resume from", the run left "interrupted" for good).
 */
static int resume_unkept(const struct supervise_opts *o, const char *trace)
{
	struct supervise_opts quiet = *o;
	struct sup s;
	jv run = jv_null(), cp = jv_null();
	int code;

	quiet.json = false;
	sup_init(&s, &quiet, trace);
	code = take_lease(&s);
	if (code == 0 && (store_run_get(&run, o->store, trace) < 0 || store_checkpoint_latest(&cp, o->store, trace) < 0)) {
		sup_say("%s\n", forge_last_error());
		code = FORGE_EXIT_DEPENDENCY;
	}
	if (code == 0 && jv_get_kind(cp) == JV_KIND_OBJECT) {
		/* (kept meanwhile, by the process whose lease this was) */
		sup_say("run %s has a checkpoint now: `forge resume %s` again\n", trace, trace);
		code = FORGE_EXIT_DEPENDENCY;
	} else if (code == 0) {
		const char *status = json_get_str(run, "status"), *error = json_get_str(run, "error");
		bool ended = run_status_terminal(run_status_of(status));

		/* (a run not ended was not stopped by stop_unkept, which marks
		 * it, unless that mark failed too: its process was killed, most
		 * often -- before, "the database could not be written" was
		 * recorded and shown whatever happened) */
		if (!ended && store_run_update(o->store, trace, "failed", NULL, SUP_UNKEPT_GONE) < 0) {
			sup_say("%s\n", forge_last_error());
			code = FORGE_EXIT_DEPENDENCY;
		} else if (!ended) {
			sup_say("run %s has no checkpoint to resume from: %s, so there is nothing to "
					"resume; start the task again with `forge run` (it is marked failed: `forge gc` "
					"removes what it left)\n", trace, SUP_UNKEPT_GONE);
			code = FORGE_EXIT_DEPENDENCY;
		} else {
			sup_say("run %s has no checkpoint to resume from: it stopped before its first "
					"one was kept (%s), so none of its work was; start the task again with `forge run`"
					" (it is marked failed: `forge gc` removes what it left)\n", trace,
				error && *error ? error : SUP_UNKEPT);
			code = FORGE_EXIT_DEPENDENCY;
		}
	}
	jv_free(run);
	jv_free(cp);
	sup_release(&s);
	return code;
}

/*
 * A run whose deploy said no (a production deploy rolled back, say) ended
 * failed; resuming it decides that deploy again on the same outcome and
 * ends it again, exit 1.  before: the checkpoint's deployment when the
 * resume began (borrowed).  When nothing changed it, stderr says what
 * happened and what to do (before: only "resuming run … after deploy
 * (rejected)", and exit 1).
 */
static void said_deploy_ended(struct sup *s, jv before, int code)
{
	jv now = json_get(s->state, "deployment");
	const char *how = json_get_str(before, "status"), *env = json_get_str(before, "environment");
	const char *reason = json_get_str(before, "reason");
	char *why = xstrdup(reason && *reason ? reason : "no reason recorded");

	if (code == FORGE_EXIT_REJECTED && jv_get_kind(before) == JV_KIND_OBJECT &&
	    jv_equal(jv_copy(before), jv_copy(now))) {
		term_clean_line(why, strlen(why));
		sup_say("run %s had already ended: its deploy%s%s %s (%s), and a resume does not "
				"deploy it again. ", s->trace, env ? " to " : "", env ? env : "",
			how && strcmp(how, "rolled_back") == 0 ? "was rolled back" : "was refused", why);
		/* A merge deploy that refused to land the change (the checkout
		 * in the way, the base moved on) left reviewed, tested work
		 * that forge merge lands, as the summary's next line says
		 * (as runview_mergeable: before is the checkpoint's of a
		 * rejected deploy; before: "start the task again", a whole new
		 * run for what one command does) */
		const char *strategy = json_get_str(before, "strategy");

		if (strategy && strcmp(strategy, "merge") == 0)
			fprintf(stderr, "Its change passed review and tests: `forge merge %s%s` lands it%s\n",
				json_get_bool(before, "diverged", false) ? "--no-ff " : "", s->trace,
				json_get_bool(before, "diverged", false) ? "" : " once the cause is fixed");
		else
			fprintf(stderr, "See what happened with `forge show %s`; fix the cause, then start the task "
					"again with `forge run`\n", s->trace);
		s->end_said = true;
	}
	free(why);
	jv_free(now);
}

/* A resume's configuration (resume_config). */
struct resume_conf {
	struct config *cfg;     /* the run's layer under the resume's; NULL: the resume's own */
	char *dir;              /* the private directory of file, or NULL */
	char *file;             /* the --config file the phases get, or NULL */
	const char **args;      /* the phases' arguments with it, or NULL */
	struct buf differs;     /* " KEY (the run: A; here: B)" for each key that differs */
	size_t ndiffers;
	jv layer;               /* what run.resumed records: the layer it goes on under (owned) */
};

/* Whether v (borrowed) holds what was hidden when it was recorded (a URL's
 * password as "***", a key as "[REDACTED]"): not a value to go on with. */
static bool hidden_value(jv v)
{
	char *text = json_dumps(jv_copy(v), false);
	bool hidden = strstr(text, "[REDACTED]") || strstr(text, ":***@");

	free(text);
	return hidden;
}

/*
 * The recorded layer (consumed) without what cannot be taken from a
 * record: hidden values (the resume's own configuration has them), and
 * trust_project and mcp.trust_project -- what lets the repository's
 * configuration loosen the person's limits is decided by the person's
 * layers now (user, a --config given to the resume, environment), never by
 * a record in a database that may be the repository's own
 * (.forge/forge.db).
 */
static jv usable_layer(jv v, const char *parent)
{
	jv out = jv_object();

	jv_object_foreach(v, k, e) {
		const char *key = jv_string_value(k);

		if (!strcmp(key, "trust_project") && (!parent || !strcmp(parent, "mcp")))
			jv_free(e);
		else if (jv_get_kind(e) == JV_KIND_OBJECT)
			out = jv_object_set(out, jv_copy(k), usable_layer(e, parent ? "" : key));
		else if (hidden_value(e))
			jv_free(e);
		else
			out = jv_object_set(out, jv_copy(k), e);
		jv_free(k);
	}
	jv_free(v);
	return out;
}

/* Whether the dotted path is left out of the comparison: the level
 * (set_level says where it came from) and the deploy settings
 * (keep_deploy_settings names those). */
static bool compared_elsewhere(const char *path)
{
	if (!strcmp(path, "safety.automation_level") || !strcmp(path, "deploy") || !strncmp(path, "deploy.", 7))
		return true;
	for (size_t i = 0; i < sizeof deploy_tools / sizeof *deploy_tools; i++)
		if (!strncmp(path, "tools.", 6) && !strcmp(path + 6, deploy_tools[i]))
			return true;
	return false;
}

/* Onto rc->differs, each leaf where was (the run's recorded configuration)
 * and now (this resume's) differ, under path.  Borrows both. */
static void config_differs(struct resume_conf *rc, jv was, jv now, const char *path)
{
	if (jv_get_kind(was) == JV_KIND_OBJECT && jv_get_kind(now) == JV_KIND_OBJECT) {
		/* (a section the same in both has no leaf that differs: the
		 * usual case, and the whole walk cost 1.7M instructions) */
		if (jv_equal(jv_copy(was), jv_copy(now)))
			return;
		jv keys = jv_keys(jv_object_merge(jv_copy(was), jv_copy(now)));

		jv_array_foreach(keys, i, k) {
			struct buf sub = BUF_INIT;
			jv a = json_get(was, jv_string_value(k)), b = json_get(now, jv_string_value(k));

			buf_addf(&sub, "%s%s%s", path, *path ? "." : "", jv_string_value(k));
			config_differs(rc, a, b, sub.buf);
			buf_release(&sub);
			jv_free(a);
			jv_free(b);
			jv_free(k);
		}
		jv_free(keys);
		return;
	}
	if (compared_elsewhere(path) || jv_equal(jv_copy(was), jv_copy(now)) || hidden_value(was) ||
	    hidden_value(now))
		return;
	if (rc->ndiffers++ < 12) {
		char *a = json_dumps(jv_copy(was), true), *b = json_dumps(jv_copy(now), true);

		term_clean_line(a, strlen(a));
		term_clean_line(b, strlen(b));
		buf_addf(&rc->differs, "%s %s (the run: %.80s; here: %.80s)", rc->differs.len ? "," : "", path, a,
			 b);
		free(a);
		free(b);
	}
}

static void resume_conf_release(struct resume_conf *rc)
{
	config_free(rc->cfg);
	free(rc->args);
	free(rc->file);
	tmpdir_remove(rc->dir);
	buf_release(&rc->differs);
	jv_free(rc->layer);
}

/* The run's recorded layer (borrowed), this resume's --config layer over
 * it, written to a private file for the phases' --config, and the
 * configuration it makes with this repository's layers, the environment
 * and this resume's flags.  0, or an exit status said on stderr. */
static int resume_layered(struct resume_conf *rc, const struct supervise_opts *o, const char *trace,
			  jv layer)
{
	jv mine = config_layer_value(o->cfg, "file");
	struct buf path = BUF_INIT;
	FILE *f = NULL;
	int code = 0, fd, wrote, closed;
	size_t n = 0;

	layer = jv_object_merge_recursive(jv_copy(layer), jv_get_kind(mine) == JV_KIND_OBJECT ? mine : jv_object());
	if (jv_get_kind(mine) != JV_KIND_OBJECT)
		jv_free(mine);
	if (tmpdir_make(&rc->dir, "forge-resume") < 0)
		goto unwritten;
	buf_addf(&path, "%s/config.json", rc->dir);
	fd = open(path.buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		forge_error("cannot write %s: %s", path.buf, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto unwritten;
	}
	wrote = json_write_line(f, layer, true);
	layer = jv_null();
	closed = fclose(f);
	if (wrote < 0 || closed != 0) {
		forge_error("cannot write %s: %s", path.buf, strerror(errno));
		goto unwritten;
	}
	rc->file = xstrdup(path.buf);
	struct config_sources src = { .repo = o->repo, .file = rc->file, .flags = config_layer_value(o->cfg, "flags") };
	if (config_load(&rc->cfg, &src) < 0) {
		sup_say("run %s's configuration (the --config and flags it was started with, this "
				"resume's over them) is not valid: %s; nothing was resumed\n", trace, forge_last_error());
		code = FORGE_EXIT_USAGE;
		goto out;
	}
	/* the phases' arguments, with this file as their --config */
	for (const char *const *a = o->phase_args; a && *a; a++)
		n++;
	rc->args = xcalloc(n + 3, sizeof *rc->args);
	n = 0;
	for (const char *const *a = o->phase_args; a && *a; a++) {
		rc->args[n++] = *a;
		if (!strcmp(*a, "--config") && a[1])
			rc->args[n++] = (++a, rc->file);
	}
	if (!given_config(o)) {
		rc->args[n++] = "--config";
		rc->args[n++] = rc->file;
	}
	goto out;
unwritten:
	sup_say("cannot keep run %s's configuration for its phases: %s; nothing was resumed\n",
		trace, forge_last_error());
	code = FORGE_EXIT_DEPENDENCY;
out:
	jv_free(layer);
	buf_release(&path);
	return code;
}

/*
 * Whether the resume's own --config layer is the run's recorded layer
 * (borrowed) as it is: the same --config again (and no flags recorded).
 * Then the recorded layer under it changes nothing, and the phases take the
 * resume's own --config: no private copy is written (a directory and a
 * file made and removed in $TMPDIR, each a new inode: ~0.3 ms apiece on an
 * ext4 /tmp that many files come and go in).
 */
static bool given_as_recorded(const struct supervise_opts *o, jv layer)
{
	jv mine = config_layer_value(o->cfg, "file");

	if (jv_get_kind(mine) != JV_KIND_OBJECT) {
		jv_free(mine);
		mine = jv_object();
	}
	return jv_equal(jv_copy(layer), mine);
}

/*
 * A resume goes on under the configuration the run was started with: a
 * run started with --config tight.json (safety.cost.per_run 0.015) tripped
 * its breaker, and the `forge resume TRACE` its summary advised finished it
 * under the default $50 without a word; its gates and review settings went
 * too.  So forge run records the person's layers given for the run (the
 * --config file and the flags, run.started's config_layer), and a resume
 * puts them between the repository's layer and its own --config (which,
 * with the environment and its flags, goes over them): the repository's
 * layer is checked against the person's as ever (config.h), and what
 * trusts it is never taken from the record (usable_layer).  rc->differs
 * names each key of the configuration that differs from the one recorded
 * in the run's row.  The layer a resume goes on under is recorded in its
 * run.resumed (rc->layer), and a later resume starts from it
 * (runview_config_layer): before, a limit raised by one resume's --config
 * was gone at the next plain resume.  A run recorded before config_layer:
 * the resume's configuration alone.  0, or an exit status said on stderr.
 */
static int resume_config(struct resume_conf *rc, const struct supervise_opts *o, const char *trace, jv run)
{
	jv layer;
	int code = 0;

	memset(rc, 0, sizeof *rc);
	rc->layer = run_layer(o->cfg);
	layer = runview_config_layer(o->store, trace);
	if (jv_get_kind(layer) != JV_KIND_OBJECT) {
		jv_free(layer);
		goto out;
	}
	layer = usable_layer(layer, NULL);
	if (config_layer_check(layer, "the recorded --config and flags") < 0) {
		/* (a Forge whose schema has changed since: the resume's own) */
		if (!o->quiet)
			sup_say("warning: run %s goes on under this resume's configuration alone: %s\n",
				trace, forge_last_error());
	} else if (!given_as_recorded(o, layer) && (code = resume_layered(rc, o, trace, layer)) != 0) {
		jv_free(layer);
		goto out;
	} else {
		/* (recorded, so a later plain resume keeps a raise made here) */
		rc->layer = jv_object_merge_recursive(jv_copy(layer), rc->layer);
	}
	jv_free(layer);
	/* (what differs is said only without -q: a quiet resume does not
	 * build the whole configuration to compare it, 1.5M instructions) */
	if (!o->quiet && jv_get_kind(run) == JV_KIND_OBJECT) {
		jv was = json_get(run, "config"), now = config_effective(rc->cfg ? rc->cfg : o->cfg);

		if (jv_get_kind(was) == JV_KIND_OBJECT)
			config_differs(rc, was, now, "");
		jv_free(was);
		jv_free(now);
	}
out:
	return code;
}

/* supervise_resume under the run's configuration (rc: its differences);
 * run: its row, null when there is none or it could not be read; started:
 * its run.started event, or null (both borrowed). */
static int resume_run(const struct supervise_opts *o, const struct supervise_opts *caller, const char *trace,
		      const struct resume_conf *rc, jv run, jv started)
{
	struct sup s;
	struct supervise_opts dry;
	jv cp;
	int code;

	if (jv_get_kind(run) != JV_KIND_OBJECT) {
		struct buf msg = BUF_INIT;

		if (runview_pipeline(o->store, trace))
			runview_not_a_run(&msg, trace);
		else
			buf_addf(&msg, "no run '%s'", trace);
		sup_say("%s\n", msg.buf);
		buf_release(&msg);
		return FORGE_EXIT_USAGE;
	}
	/* A failed run continues too: a dependency may be back, a bug fixed. */
	const char *status = json_get_str(run, "status");
	if (run_status_of(status) == RUN_COMPLETED || run_status_of(status) == RUN_CANCELLED) {
		sup_say("run %s is already %s\n", trace, status);
		code = run_status_of(status) == RUN_COMPLETED ? FORGE_EXIT_OK : FORGE_EXIT_REJECTED;
		int late = late_reflection(o, trace);

		return late ? late : code;
	}
	int run_level = supervise_run_level(o->store, trace, run);
	jv run_conf = json_get(run, "config");
	/* A run not paused was killed (kill -9, a machine that went down):
	 * the time since its last event is not running time, for the time
	 * breaker (store_paused_ms) -- measured now, before this resume's own
	 * events (before: killed longer than safety.time_s.total, it tripped
	 * at every resume). */
	int64_t last_ms = -1, dead_ms = 0, resumed_ms = now_ms();

	if (run_status_of(status) != RUN_PAUSED && store_last_event_ms(&last_ms, o->store, trace) == 0 &&
	    last_ms > 0 && resumed_ms > last_ms)
		dead_ms = resumed_ms - last_ms;
	if (store_checkpoint_latest(&cp, o->store, trace) < 0) {
		sup_say("%s\n", forge_last_error());
		jv_free(run_conf);
		return FORGE_EXIT_DEPENDENCY;
	}
	if (jv_get_kind(cp) != JV_KIND_OBJECT) {
		jv_free(cp);
		jv_free(run_conf);
		return resume_unkept(o, trace);
	}
	/* A dry run stays one: it has no worktree for the phases after plan. */
	if (started_dry(started)) {
		dry = dry_opts(o);
		o = &dry;
	}
	/* The pipeline it recorded; a run of the phase loop before it (no
	 * pipeline recorded) followed the default one. */
	struct graph *graph = NULL;
	if ((code = recorded_graph(&graph, o, trace, started)) != 0 ||
	    (!graph && (code = default_graph(&graph, o)) != 0)) {
		jv_free(cp);
		jv_free(run_conf);
		return code;
	}
	sup_init(&s, o, trace);
	s.graph = graph;
	set_level(&s, run_level);
	s.state = o->budget_usd >= 0 ? with_budget(cp, o->budget_usd) : cp;
	/* (compared with what this resume goes on under: the run's layer with
	 * its own over it -- before: with its own alone, so a plain resume of a
	 * run started with --config prod.json said "here: staging", a default
	 * that was not in force) */
	if (keep_deploy_settings(&s, run_conf, o->cfg) < 0) {
		sup_say("%s; nothing was resumed\n", forge_last_error());
		jv_free(run_conf);
		sup_release(&s);
		graph_free(graph);
		return FORGE_EXIT_DEPENDENCY;
	}
	jv_free(run_conf);
	if (rc->differs.len && !o->quiet)
		sup_say("run %s goes on under the --config and flags it was started with (this "
				"resume's over them); the configuration differs from the run's in%s%s\n", trace,
			rc->differs.buf, rc->ndiffers > 12 ? ", and more (forge config --explain)" : "");
	s.saved = jv_copy(s.state);
	s.kept = true;
	s.pl = PL_PAUSED;
	/* Before the worktree is touched: another process may be working in it. */
	code = take_lease(&s);
	int64_t leased_ms = now_ms();
	if (code) {
		sup_release(&s);
		graph_free(graph);
		return code;
	}
	jv resumed = dead_ms > 0 ? json_set(jv_object(), "dead_ms", jv_number((double)dead_ms)) : jv_object();
	sup_emit(&s, "run.resumed", level_payload(&s, json_set(resumed, "config_layer", jv_copy(rc->layer))));
	count_unrecorded_spend(&s);
	/* the summary's cost by phase: the attempts before this resume too
	 * (before: the phases run since the resume alone, not adding up to
	 * the total) */
	jv by_phase;
	jv recovered = jv_object();
	if (store_cost_by_phase(&by_phase, o->store, trace) == 0 &&
	    store_events_foreach_type(o->store, trace, "run.cost_recovered", line_recovered, &recovered) == 0) {
		/* (with the calls a resume recovered without their events) */
		jv_object_foreach(recovered, k, v) {
			by_phase = json_set(by_phase, jv_string_value(k),
					    jv_number(json_get_num(by_phase, jv_string_value(k), 0) +
						      json_get_num(v, "usd", 0)));
			jv_free(k);
			jv_free(v);
		}
		/* every phase that ran before, in its order, a phase that
		 * called no model too (before: review and test run before a
		 * pause were missing from the resumed run's cost line) */
		jv order = jv_object();
		if (store_events_foreach_type(o->store, trace, "phase.completed", line_phase_done, &order) < 0) {
			jv_free(order);
			order = jv_object();
		}
		jv_object_foreach(by_phase, k, v) {
			order = json_set(order, jv_string_value(k), v);
			jv_free(k);
		}
		jv_free(by_phase);
		jv_free(s.phase_cost);
		s.phase_cost = order;
	} else {
		jv_free(by_phase);
	}
	jv_free(recovered);
	if (!o->dry_run && (code = adopt_clone(&s)) != 0) {
		sup_release(&s);
		graph_free(graph);
		return code;
	}
	if ((code = recover_worktree(&s, leased_ms)) != 0) {
		sup_release(&s);
		graph_free(graph);
		return code;
	}
	const char *phase = json_get_str(s.state, "phase");
	const char *st = json_get_str(s.state, "status");
	sup_progress(&s, "%s: resuming run %s after %s (%s), automation level %d (%s)",
		     program_invocation_short_name, trace, phase, st, s.level,
		 s.level_from);
	jv deployment = phase && st && strcmp(phase, "deploy") == 0 && strcmp(st, "rejected") == 0
				? json_get(s.state, "deployment") : jv_null();
	code = sup_graph_run(&s, jobs_of(o));
	said_deploy_ended(&s, deployment, code);
	jv_free(deployment);
	code = sup_finish(&s, caller, code);
	graph_free(graph);
	return code;
}

int supervise_resume(const struct supervise_opts *o, const char *trace)
{
	struct resume_conf rc;
	struct supervise_opts mine = *o;
	jv run, started;
	int code;

	/* The run's row and its run.started, read once for what follows
	 * (before: the row twice, the event by started_dry and
	 * recorded_graph each; the row's recorded configuration is the most
	 * of it, a parse of ~1M instructions each time).  A read that fails
	 * is as none, as it was. */
	if (store_run_get(&run, o->store, trace) < 0) {
		jv_free(run);
		run = jv_null();
	}
	if (store_event_last(&started, o->store, trace, "run.started") < 0) {
		jv_free(started);
		started = jv_null();
	}
	code = resume_config(&rc, o, trace, run);
	if (code == 0) {
		if (rc.cfg) {
			mine.cfg = rc.cfg;
			mine.phase_args = rc.args;
		}
		code = resume_run(&mine, o, trace, &rc, run, started);
	}
	resume_conf_release(&rc);
	jv_free(run);
	jv_free(started);
	return code;
}
