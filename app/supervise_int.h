/*
 * supervise_int.h - what the supervisor's files share (app/supervise.c: a
 * run's start, resume, gates, breakers, record and end; app/supervise_graph.c:
 * the executor of the pipeline every run follows): the run's working record
 * and the steps both take.
 * Not for other callers: supervise.h is the interface.
 *
 * Threads: while the graph executor runs nodes at the same time, every
 * function here is called with sup->lock held (the run's store connection,
 * its batch and stdout have one writer at a time).
 */
#ifndef FORGE_SUPERVISE_INT_H
#define FORGE_SUPERVISE_INT_H

#include "app/supervise.h"
#include "core/ids.h"
#include "core/jsonscan.h"
#include "data/stream.h"
#include "engine/pipeline.h"
#include "store/db.h"

#include <jv.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct graph;

struct sup {
	const struct supervise_opts *o;
	struct stream_out out;      /* the supervisor's own events (stdout with --json) */
	char trace[128 + 1];        /* (a trace id has at most 128 characters) */
	jv state;                   /* the current state (owned) */
	const char *running;        /* the phase being run */
	enum pipeline_state pl;
	long pending;               /* writes in the open batch (transaction) */
	int64_t began_ms;           /* when this process took the run up (run or resume) */
	jv phases_ok;               /* {phase: timestamp}: when each phase last ended ok; its
	                               tool calls before are not the error-rate breaker's */
	bool unsynced;              /* a checkpoint is committed, not yet synced */
	bool unpushed;              /* a checkpoint's branch not yet pushed (git.push_remote) */
	bool deploy_approved;       /* a human approved the production deploy */
	char *deploy_dir;           /* a resume: the private directory of deploy_config, or NULL */
	char *deploy_config;        /* a resume: the --config file the deploy phase gets, holding
	                               the run's recorded deploy settings (supervise.c), or NULL */
	char *deploy_strategy;      /* a resume: the run's recorded deploy.strategy, or NULL */
	jv approval;                /* who passed the last gate: {by, gate, id, note} */
	bool ended;                 /* the run completed or failed (not paused) */
	bool lease_lost_said;       /* sup_lease_lost_end() said so */
	bool end_said;              /* a line on stderr already said how the run ended */
	char store_error[512];      /* the first write to the database that failed, or "" */
	bool kept;                  /* a checkpoint of the run is committed (one to resume from) */
	bool cp_batched;            /* a checkpoint is in the open batch, not yet committed */
	char holder[ULID_LEN + 1];  /* the run's lease, "" when not held */
	struct heartbeat *beat;     /* renews the lease (supervise.c), or NULL */
	int tools_run;              /* progress: tool calls of the running phase */
	jv phase_cost;              /* {"plan": usd, …} summed over bounces */
	jv saved;                   /* the state last checkpointed, or null */
	struct db_stmt *run_row;    /* the run's status and start (run_now), or NULL */
	int level;                  /* the automation level (set_level) */
	char level_from[600];       /* where it came from, for run.started / run.resumed */
	const struct graph *graph;  /* the pipeline the run follows (borrowed) */
	int64_t run_deadline_ms;    /* wall-clock ms when safety.time_s.total runs out, as
	                               sup_breaker last saw it (time paused aside); 0: unknown */
	double today_usd;           /* today's model calls, as sup_breaker last summed them, */
	int64_t today_at_ms;        /* at this monotonic_ms() (0: none to reuse; see sup_money_left) */
	pthread_mutex_t lock;       /* held around everything above while nodes run at once */
};

/* GATE_ERROR: a gate's condition could not be evaluated (no one said no) */
enum gate_outcome { GATE_PASS, GATE_STOP, GATE_WAIT, GATE_ERROR };

/* True once SIGINT or SIGTERM arrived (supervise_interrupt). */
bool sup_interrupted(void);
/* True once the heartbeat found the run's lease taken over by another
 * process (its phases were sent SIGTERM then).  From then on nothing this
 * process writes is committed (sup_commit_batch rolls back), the run's end
 * is not recorded, and sup_lease_lost_end() says so and gives exit 4. */
bool sup_lease_lost(void);
int sup_lease_lost_end(struct sup *s);

/* The batch (one write transaction) and the checkpoint's sync. */
void sup_commit_batch(struct sup *s);
void sup_sync_checkpoint(struct sup *s);
void sup_settle(struct sup *s);
/* Persist an event (borrowed; its line as given) in the batch. */
void sup_persist(struct sup *s, jv ev, const char *line, size_t len);
/* The same for an event line json_event_scan() read (no jv made). */
void sup_persist_scanned(struct sup *s, const struct json_event *ev, const char *line, size_t len);
/* One of the supervisor's own events: the whole event / type and payload (consumed). */
void sup_emit_event(struct sup *s, jv ev);
void sup_emit(struct sup *s, const char *type, jv payload);
void sup_progress(struct sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line of the supervisor's own on stderr (fmt ends it with \n),
 * begun with the program's name as cli_parse() set it --
 * program_invocation_short_name: "forge run", "forge resume",
 * "forge-supervisor" -- as the library's messages begin (before: "forge:"
 * whatever ran it). */
void sup_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A move of the run's state machine (planning, …, completed), as pipeline.state_changed;
 * the pipeline decides the order, so it is not checked against pipeline.h's table. */
void sup_transition(struct sup *s, enum pipeline_state to, const char *reason);
/* The state as the run's checkpoint, labelled `phase` (a phase or a node). */
void sup_checkpoint(struct sup *s, const char *phase);
bool sup_cancelled(struct sup *s);
int sup_stop_cancelled(struct sup *s);
/* The run ends with run_status ("completed", "failed", "paused"); returns code. */
int sup_end_run(struct sup *s, const char *run_status, const char *error, int code);
/* The run-level breaker that trips, or NULL; *why receives the reason. */
const char *sup_breaker(struct sup *s, char *why, size_t n);
/* What the run's money limits leave (at least 0): the budget's remaining
 * USD, safety.cost.per_run less the run's cost, safety.cost.per_day less
 * today's; the nodes that start get shares of it (PHASE_RUN_MONEY_ENV).
 * A per_day that cannot be read leaves nothing (fails closed).  Today's
 * sum is the one sup_breaker() read just before (within a second, no model
 * call recorded since), else read again. */
double sup_money_left(struct sup *s);
/* A model call was recorded (a phase's llm.called, a reflection's): today's
 * sum sup_breaker() read is out of date. */
void sup_today_spent(struct sup *s);
/* When a write of the run's record failed (s->store_error): the run
 * paused there, exit 5 (what went unrecorded must not look done); else -1.
 * One that failed before any checkpoint was kept (!s->kept) has nothing to
 * resume from: it is marked failed, and the message says to start it again. */
int sup_store_stop(struct sup *s);
/* One fired gate (borrowed), for phase (or node) `phase`. */
enum gate_outcome sup_pass_gate(struct sup *s, jv gate, const char *phase);
int sup_gate_paused(struct sup *s, const char *reason);
/* A bounce's gate (bounce borrowed: {"from","to","n","reason"}). */
enum gate_outcome sup_pass_bounce(struct sup *s, jv bounce);
int sup_bounce_stopped(struct sup *s, enum gate_outcome h);
/* Progress lines for a phase's event (borrowed). */
void sup_show_event(struct sup *s, jv ev);
void sup_show_scanned(struct sup *s, const struct json_event *ev);
/* usd and tokens spent outside a phase's state (a killed attempt's calls)
 * into state.cost, and budget.remaining_usd lowered to match. */
void sup_add_spend(struct sup *s, double usd, double tokens);
/* Record a bounce (consumed) in state.bounces and as loop.phase_bounce. */
void sup_add_bounce(struct sup *s, jv bounce);
/* A human decides after `phase` (a phase or a node) said it needs one, on
 * its `attempt`th run (the gate escalation_PHASE, escalation_PHASE_N from
 * the second: each new result is a new question; a deploy's is a human's
 * in person, as production_deploy); an approval goes into the state's
 * result_key part (when it is an object).  question: what the phase's
 * agent asked (ask_human), or NULL; a question, or in_person, is a gate
 * only a person passes (--auto-approve and the level do not: a yes given
 * in advance answers nothing), and its wait says how to answer. */
enum gate_outcome sup_ask_human(struct sup *s, const char *phase, const char *result_key, const char *reason,
				int attempt, const char *question, bool in_person);
/* Loop 3's triggers after `at`, or at the end. */
void sup_reflect_now(struct sup *s, const char *at, bool end);
/* A one-task plan made of the task itself (no plan phase runs).  New reference. */
jv sup_plan_from_task(const char *task_text);

/*
 * Run the pipeline s->graph from the state in s->state (a new run: no
 * state.nodes yet; a resume: the checkpoint's, where a node found running
 * or failed runs again) until it completes, fails, pauses or is
 * interrupted.  jobs: how many nodes may run at once (>= 1).  Returns the
 * exit status (DESIGN.md §2).  app/supervise_graph.c.
 */
int sup_graph_run(struct sup *s, int jobs);

#endif
