/* phase.c - the shared skeleton of the phase filters; see phase.h. */
#include "app/phase.h"
#include "app/heartbeat.h"
#include "app/runshare.h"
#include "app/cli.h"
#include "app/delegate.h"
#include "app/term.h"
#include "app/toolset.h"
#include "core/buf.h"
#include "data/config.h"
#include "data/project.h"
#include "git/git.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "agent/context.h"
#include "llm/llm.h"
#include "mcp/mcp.h"
#include "memory/memory.h"
#include "os/proc.h"
#include "os/sandbox.h"
#include "os/spawn.h"
#include "agent/skills.h"
#include "core/owner.h"
#include "store/live.h"
#include "store/store.h"
#include "core/tmpdir.h"

#include <limits.h>
#include <math.h>
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <unistd.h>

enum { OPT_TASK = 1100, OPT_NO_INPUT };
enum { LEASE_RELEASE_WAIT_MS = 5000 };  /* how long a stopped phase waits for its lease's release */

static const char *program_name = "forge";
/* the heartbeat of the lease this phase took (take_lease), for leave */
static struct heartbeat *volatile signal_beat;

/* What leave() says after the program's name: made beforehand
 * (phase_note_left; a signal handler formats nothing), in one buffer while
 * the other is read, the pointer moved once it is whole. */
#define LEFT_NOTE_SIZE 2048
static char left_notes[2][LEFT_NOTE_SIZE];
static const char *volatile left_note = ": interrupted; the last checkpoint stands\n";

static void leave(int sig)
{
	const char *msg = left_note;

	/* Only async-signal-safe calls here: stop the commands a tool or the
	 * phase started (their process groups) and its MCP servers (theirs,
	 * SIGKILL after a grace: one must not keep working in the worktree),
	 * release the run's lease this phase took (its heartbeat's thread does,
	 * so that a retry, on another runner too, is not refused), remove the
	 * temporary directories, then say so and leave. */
	proc_kill_running(sig == SIGINT ? SIGINT : SIGTERM);
	proc_spawn_kill_all(MCP_KILL_GRACE_MS);
	heartbeat_release_signal_safe(signal_beat, LEASE_RELEASE_WAIT_MS);
	tmpdir_remove_all_signal_safe();
	if (write(STDERR_FILENO, program_name, strlen(program_name)) < 0 ||
	    write(STDERR_FILENO, msg, strlen(msg)) < 0) {
		/* nothing more to do */
	}
	_exit(FORGE_EXIT_INTERRUPTED);
}

static pid_t supervisor_of(void);

/* Whether the state's trace is a run the database knows (forge run's): a
 * phase filter run by hand on a state of its own (a shell pipeline) has
 * none.  1 yes, 0 no, -1 cannot tell.  The phase's database when it is
 * open (take_lease opened it for a state), else, when may_open, the file
 * read-only (one is never made for this); else 0. */
static int state_is_run(struct phase *ph, bool may_open)
{
	const char *trace = json_get_str(ph->state, "trace_id");
	struct store *st = ph->store, *mine = NULL;
	char *path = NULL;
	jv run = jv_null();
	int yes;

	if (!trace || (!st && !may_open))
		return 0;
	if (!st) {
		if (store_resolve_path(&path, ph->common.db, ph->repo) < 0 || store_open_readonly(&mine, path) < 0) {
			free(path);
			return -1;
		}
		free(path);
		st = mine;
	}
	yes = store_run_get_brief(&run, st, trace) < 0 ? -1 : jv_get_kind(run) == JV_KIND_OBJECT;
	jv_free(run);
	store_free(mine);
	return yes;
}

void phase_note_left(struct phase *ph)
{
	static int next;
	jv task = json_get(ph->state, "task");
	const char *wt = json_get_str(task, "worktree"), *branch = json_get_str(task, "branch");
	struct buf b = BUF_INIT;

	/* a run's: its supervisor, or forge resume, goes on from its last
	 * checkpoint (the words a supervisor's phases have always said) */
	bool made = wt && branch && !strncmp(branch, "forge/", 6);
	/* (the file is opened only to decide whether to offer the removal) */
	int run = supervisor_of() ? 1 : state_is_run(ph, made);

	if (run == 1) {
		jv_free(task);
		left_note = ": interrupted; the last checkpoint stands\n";
		return;
	}
	buf_adds(&b, ": interrupted (no state written; phases run by hand are no run: no checkpoint, nothing "
		 "for forge resume)");
	/* (a run the database could not be asked about may be one forge
	 * resume goes on with: no command that removes its work is offered) */
	if (run == 0 && made) {
		/* what forge-implement made, and the README's way to remove it
		 * (forge gc leaves a trace of phases run by hand alone) */
		buf_addf(&b, ". Left: the worktree %s and the branch %s; remove them with `git worktree remove "
			 "--force ", wt, branch);
		buf_add_shell_quoted(&b, wt);
		/* (quoted when it holds more than a ref's plain characters: a
		 * hand-made state's branch may hold what a shell reads) */
		bool plain = strspn(branch, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-") ==
			     strlen(branch);
		struct buf ref = BUF_INIT;

		buf_addf(&ref, "refs/forge/%s/base", branch + 6);
		buf_adds(&b, " && git branch -D ");
		plain ? buf_adds(&b, branch) : buf_add_shell_quoted(&b, branch);
		buf_adds(&b, " && git update-ref -d ");
		plain ? buf_adds(&b, ref.buf) : buf_add_shell_quoted(&b, ref.buf);
		buf_addch(&b, '`');
		buf_release(&ref);
	}
	buf_addch(&b, '\n');
	if (b.len < LEFT_NOTE_SIZE) {
		memcpy(left_notes[next], b.buf, b.len + 1);
		left_note = left_notes[next];
		next ^= 1;
	}
	buf_release(&b);
	jv_free(task);
}

void phase_leave_if_interrupted(void)
{
	cli_leave_if_interrupted();	/* (after the call's llm.called) */
}

/* Stop renewing the lease this phase took, and release it. */
static void release_lease(struct phase *ph)
{
	signal_beat = NULL;
	heartbeat_stop(ph->beat);
	ph->beat = NULL;
	if (ph->lease[0])
		store_lease_release(ph->store, json_get_str(ph->state, "trace_id") ? json_get_str(ph->state, "trace_id")
				    : json_get_str(ph->in.state, "trace_id"), ph->lease);
	ph->lease[0] = '\0';
}

static void call_display_end(void);

void phase_leave_if_output_gone(struct phase *ph)
{
	if (!ph->out.failed)
		return;
	int err = ph->out.err;

	/* as leave() for a signal: what runs is stopped, the lease released
	 * (exit(3) removes the temporary directories); a model call about to
	 * start has its spinner and live text taken down */
	call_display_end();
	proc_kill_running(SIGTERM);
	proc_spawn_kill_all(MCP_KILL_GRACE_MS);
	release_lease(ph);
	if (err != EPIPE)
		fprintf(stderr, "%s: cannot write to standard output: %s; stopped with nothing more done "
			"(no state written)\n", ph->spec->program, strerror(err));
	exit(err == EPIPE ? FORGE_EXIT_PIPE : FORGE_EXIT_DEPENDENCY);
}

/* (llm_options.before_call of the phase's model clients) */
static void output_gone_before_call(void *payload)
{
	phase_leave_if_output_gone(payload);
}

/* FORGE_SUPERVISOR_PID: the supervisor that runs this phase; 0 alone. */
static pid_t supervisor_of(void)
{
	const char *pid = getenv("FORGE_SUPERVISOR_PID");
	long want;

	return pid && forge_parse_long(&want, pid, 1, 1L << 30) == 0 ? (pid_t)want : 0;
}

/*
 * Under forge-supervisor a phase must not outlive it: an orphan would keep
 * working in the run's worktree while `forge resume` starts the phase again.
 */
static void die_with_supervisor(pid_t supervisor)
{
	if (!supervisor)
		return;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != supervisor)
		raise(SIGTERM);	/* it is gone already */
}

/*
 * A model call being answered -- the phase's, or a sub-agent's it waits
 * for (delegate_interrupt) -- is stopped instead (at once), and the phase
 * leaves as soon as the call is recorded: its llm_calls row and llm.called
 * event, priced with what arrived: the provider bills a cancelled stream's
 * input (before: it was recorded nowhere, and a run stopped and resumed
 * again and again spent past its cost limits).  A second signal does not
 * wait -- but the supervisor's, which passes on the Ctrl-C its group (this
 * phase too) got from the terminal, is the same one.
 */
static void catch_signals(void)
{
	pid_t supervisor = supervisor_of();

	cli_catch_model_interrupts(leave, delegate_interrupt, supervisor);
	/* (SIGXFSZ is ignored already: cli_parse) */
	die_with_supervisor(supervisor);
}

void phase_emit(struct phase *ph, const char *type, jv payload)
{
	stream_emit(&ph->out, type, payload);
}

void phase_llm_called(struct phase *ph, const struct llm_client *c, const struct llm_response *resp)
{
	stream_emit_full(&ph->out, "llm.called", llm_called_payload(c, resp), llm_called_cost(resp),
			 (long long)resp->duration_ms);
	phase_leave_if_interrupted();
}

void phase_reason(struct phase *ph, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ph->reason, sizeof ph->reason, fmt, ap);
	va_end(ap);
	llm_redact(ph->reason);     /* also shown on stderr: never a key */
}

/* One line on stderr after the program's name, its control characters
 * cleaned: the whole line's when whole_line (term_clean_line), else all
 * but its line breaks (term_clean). */
static void say_clean(struct phase *ph, bool whole_line, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

static void say_clean(struct phase *ph, bool whole_line, const char *fmt, va_list ap)
{
	struct buf line = BUF_INIT;

	buf_vaddf(&line, fmt, ap);
	if (whole_line)
		term_clean_line(line.buf, line.len);
	else
		term_clean(line.buf, line.len);
	term_status_clear();
	fprintf(stderr, "%s: %s\n", ph->spec->program, line.buf);
	buf_release(&line);
}

void phase_say(struct phase *ph, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_clean(ph, false, fmt, ap);
	va_end(ap);
}

int phase_command_recover(struct phase *ph, const char *dir)
{
	jv removed;
	char *kept_in = NULL;
	int rc = forge_git_command_recover(&removed, &kept_in, dir);

	if (jv_array_length(jv_copy(removed)) > 0)
		phase_emit(ph, "worktree.cleaned", json_set(json_set(jv_object(), "removed", removed),
							    "kept_in", json_str_or_null(kept_in)));
	else
		jv_free(removed);
	free(kept_in);
	return rc;
}

jv phase_command_before(struct phase *ph, const char *dir)
{
	jv before;

	/* (not listed: nothing is removed then; not noted: only a cleanup
	 * this process does not live to do is lost) */
	if (forge_git_command_before(&before, dir) < 0 && jv_get_kind(before) == JV_KIND_OBJECT)
		phase_say(ph, "warning: %s", forge_last_error());
	return before;
}

jv phase_command_after(struct phase *ph, const char *dir, jv before, const char *what)
{
	jv removed;

	if (jv_get_kind(before) != JV_KIND_OBJECT) {
		jv_free(before);
		return jv_array();
	}
	if (forge_git_command_after(&removed, dir, before) < 0)
		phase_say(ph, "warning: what %s left in the worktree was not removed: %s", what,
			  forge_last_error());
	return removed;
}

/* The line is cleaned as a whole (term_clean_line): what it quotes -- a
 * sub-agent's task, a tool's name -- is the model's text, and an escape
 * sequence in it would be played by the terminal. */
void phase_progress(struct phase *ph, const char *fmt, ...)
{
	va_list ap;

	if (!ph->progress)
		return;
	va_start(ap, fmt);
	say_clean(ph, true, fmt, ap);
	va_end(ap);
}

void phase_set(struct phase *ph, const char *key, jv v)
{
	ph->state = json_set(ph->state, key, v);
}

char *phase_repo(struct phase *ph)
{
	if (ph->common.repo && ph->repo)
		return xstrdup(ph->repo);
	jv task = json_get(ph->state, "task");
	const char *task_repo = json_get_str(task, "repo");
	char *root = task_repo ? xstrdup(task_repo) : ph->repo ? xstrdup(ph->repo) : NULL;

	jv_free(task);
	return root;
}

char *phase_workdir(struct phase *ph)
{
	jv wt = json_get_path(ph->state, "task.worktree");
	char *root = jv_get_kind(wt) == JV_KIND_STRING ? xstrdup(jv_string_value(wt)) : phase_repo(ph);

	jv_free(wt);
	return root;
}

struct store *phase_store(struct phase *ph)
{
	char *path = NULL;

	if (ph->store)
		return ph->store;
	if (store_resolve_path(&path, ph->common.db, ph->repo) == 0)
		store_open(&ph->store, path);
	free(path);
	return ph->store;
}

int phase_store_needed(struct store **out, struct phase *ph)
{
	char *path = NULL;

	*out = NULL;
	if (store_resolve_path(&path, ph->common.db, ph->repo) < 0)
		return 0;
	free(path);
	*out = phase_store(ph);
	if (!*out)
		return -1;
	if (store_readonly(*out)) {
		/* opened for reading only (a read-only checkout, another user's
		 * file): what the phase must keep would be lost after its work */
		struct buf b = BUF_INIT;

		buf_addf(&b, "database '%s' can only be read here", store_path(*out));
		size_t at = b.len;
		buf_adds(&b, " (");
		if (owner_explain(&b, store_path(*out), true))
			buf_addch(&b, ')');
		else
			buf_truncate(&b, at);
		buf_adds(&b, "; " STORE_ELSEWHERE_HINT);
		forge_error("%s", b.buf);
		buf_release(&b);
		*out = NULL;
		return -1;
	}
	return 0;
}

int phase_previous_runs(const struct phase *ph)
{
	jv bounces = json_get(ph->state, "bounces");
	const char *name = ph->spec->name;
	bool every = strcmp(name, "implement") == 0 || strcmp(name, "review") == 0;
	int runs = 0;

	/*
	 * Every bounce runs implement again, and review after it; test runs
	 * again only after a bounce of its own.  Plan and deploy run once.
	 */
	if (jv_get_kind(bounces) == JV_KIND_ARRAY) {
		jv_array_foreach(bounces, i, b) {
			const char *from = json_get_str(b, "from");
			if (every || (from && strcmp(from, name) == 0 && strcmp(name, "test") == 0))
				runs++;
			jv_free(b);
		}
	}
	jv_free(bounces);
	return runs;
}

/* ---- the state ---------------------------------------------------------- */

/* A run a filter starts itself: no worktree and no branch yet.  task.branch
 * is the run's branch once there is one (forge-implement's worktree makes
 * and records it): naming forge/TRACE before would name a branch that a
 * pipeline without forge-implement never makes. */
static jv new_state(struct phase *ph, jv task)
{
	char trace[ULID_LEN + 1];
	double budget = config_get_num(ph->cfg, "budget.usd");

	ulid_new(trace);
	if (ph->repo && !json_has(task, "repo"))
		task = json_set(task, "repo", jv_string(ph->repo));
	if (!json_has(task, "base_ref"))
		task = json_set(task, "base_ref", jv_string("HEAD"));
	return stream_state_initial(trace, task, budget);
}

/* Add this phase's spend to the state's totals and remaining budget. */
static void account(struct phase *ph)
{
	jv cost = json_get(ph->state, "cost");
	jv budget = json_get(ph->state, "budget");
	double usd = json_get_num(cost, "usd", 0) + ph->cost_usd;
	double tokens = json_get_num(cost, "tokens", 0) + (double)ph->tokens;

	cost = json_set(json_set(jv_get_kind(cost) == JV_KIND_OBJECT ? cost : (jv_free(cost), jv_object()),
				 "tokens", jv_number(tokens)), "usd", jv_number(usd));
	phase_set(ph, "cost", cost);
	if (jv_get_kind(budget) == JV_KIND_OBJECT && json_has(budget, "usd")) {
		double remaining = json_get_num(budget, "usd", 0) - usd;
		budget = json_set(budget, "remaining_usd", jv_number(remaining));
		phase_set(ph, "budget", budget);
	} else {
		jv_free(budget);
	}
	ph->cost_usd = 0;
	ph->tokens = 0;
}

/* ---- perceive ------------------------------------------------------------ */

static struct memory *open_memory(struct phase *ph)
{
	struct memory_options opt;
	struct memory *m = NULL;
	struct store *st = phase_store(ph);

	if (!st)
		return NULL;
	memory_options_init(&opt);
	memory_options_from_config(&opt, ph->cfg);
	if (memory_open(&m, st, &opt) < 0)
		return NULL;
	return m;
}

/* The languages of the run's worktree (else the repository): {"c":12,…},
 * {} when unknown. */
static jv project_languages(struct phase *ph)
{
	jv task = json_get(ph->state, "task"), desc, langs;
	const char *root = json_get_str(task, "worktree") ? json_get_str(task, "worktree") : ph->repo;

	if (!root || project_describe(&desc, root, ph->cfg) < 0) {
		jv_free(task);
		return jv_object();
	}
	langs = json_get(desc, "languages");
	jv_free(desc);
	jv_free(task);
	return jv_get_kind(langs) == JV_KIND_OBJECT ? langs : (jv_free(langs), jv_object());
}

/*
 * Whether a recalled memory belongs in this phase's prompt: a memory tagged
 * with languages (lang:c, lang:python …) only when the project has one of
 * them, and only a memory whose similarity to the task (the recall's
 * "similarity", 0..1) reaches memory.min_similarity: recall ranks what is
 * there, this keeps out what is merely there.  *why: which rule said no.
 */
static bool admit(const char **why, jv mem, jv hit, jv langs, double min_sim)
{
	jv tags = json_get(mem, "tags");
	bool tagged = false, match = false;

	/* (a project with no language known -- no source files yet -- has none
	 * of them: another language's lessons would mislead a new project) */
	if (jv_get_kind(tags) == JV_KIND_ARRAY) {
		jv_array_foreach(tags, i, t) {
			const char *s = jv_get_kind(t) == JV_KIND_STRING ? jv_string_value(t) : "";

			if (strncmp(s, "lang:", 5) == 0) {
				tagged = true;
				match = match || json_has(langs, s + 5);
			}
			jv_free(t);
			(void)i;
		}
	}
	jv_free(tags);
	if (tagged && !match) {
		*why = "language";
		return false;
	}
	if (json_get_num(hit, "similarity", 1) < min_sim) {
		*why = "similarity";
		return false;
	}
	return true;
}

/* Whether mem is the first of its type and content among those admitted
 * (*seen: their keys); a later copy is withheld as a "duplicate". */
static bool first_copy(const char **why, jv *seen, jv mem)
{
	const char *type = json_get_str(mem, "type"), *content = json_get_str(mem, "content");
	struct buf key = BUF_INIT;
	bool first;

	if (!content)
		return true;
	buf_addf(&key, "%s\n%s", type ? type : "", content);
	first = !json_has(*seen, key.buf);
	if (first)
		*seen = json_set(*seen, key.buf, jv_true());
	else
		*why = "duplicate";
	buf_release(&key);
	return first;
}

/* Recalled memories as the context builder wants them. */
static jv recall(struct phase *ph, const char *task)
{
	struct memory *m = open_memory(ph);
	struct memory_query q;
	jv found = jv_null(), out = jv_array(), langs, withheld = jv_object(), seen = jv_object();
	double min_sim = config_get_num(ph->cfg, "memory.min_similarity");
	int limit, kept = 0;

	if (!m) {
		phase_emit(ph, "memory.unavailable", json_set(jv_object(), "error", jv_string(forge_last_error())));
		jv_free(withheld);
		return out;
	}
	memory_query_init(&q, task);
	/* asked for twice the limit: copies of one lesson (every run that
	 * learnt it stored one) are withheld and must not take the places of
	 * other memories */
	limit = (int)config_get_num(ph->cfg, "memory.recall_limit");
	q.filter.limit = limit > 0 && limit <= 1000 ? 2 * limit : limit;
	if (memory_recall(&found, m, &q) < 0) {
		phase_emit(ph, "memory.unavailable", json_set(jv_object(), "error", jv_string(forge_last_error())));
		found = jv_array();
	}
	langs = jv_array_length(jv_copy(found)) > 0 ? project_languages(ph) : jv_object();
	jv_array_foreach(found, i, hit) {
		jv mem = json_get(hit, "memory");
		const char *why = NULL;

		if (limit > 0 && kept >= limit) {
			jv_free(mem);
			jv_free(hit);
			continue;
		}
		if (!admit(&why, mem, hit, langs, isnan(min_sim) ? 0 : min_sim) ||
		    !first_copy(&why, &seen, mem)) {
			withheld = json_set(withheld, why, jv_number(json_get_num(withheld, why, 0) + 1));
			jv_free(mem);
			jv_free(hit);
			continue;
		}
		kept++;
		jv item = jv_object();
		item = json_set(item, "id", json_get(mem, "id"));
		item = json_set(item, "type", json_get(mem, "type"));
		item = json_set(item, "content", json_get(mem, "content"));
		item = json_set(item, "context", json_get(mem, "context"));
		item = json_set(item, "confidence", json_get(mem, "confidence"));
		item = json_set(item, "relevance", json_get(hit, "relevance"));
		out = jv_array_append(out, item);
		jv_free(mem);
		jv_free(hit);
	}
	jv_free(found);
	jv_free(langs);
	jv_free(seen);
	memory_free(m);
	if (jv_array_length(jv_copy(out)) > 0)
		phase_emit(ph, "memory.recalled", json_set(jv_object(), "count",
			   jv_number(jv_array_length(jv_copy(out)))));
	/* recalled but kept out of the prompt, by rule: {"language":2,"similarity":1} */
	if (jv_object_length(jv_copy(withheld)) > 0)
		phase_emit(ph, "memory.withheld", withheld);
	else
		jv_free(withheld);
	return out;
}

static char *matching_skills(struct phase *ph, const char *task)
{
	struct skill_set *set = NULL;
	jv matched;
	char *text = NULL;

	if (skills_load(&set, ph->repo, NULL) < 0) {
		phase_emit(ph, "skills.unavailable", json_set(jv_object(), "error",
			   jv_string(forge_last_error())));
		return NULL;
	}
	/* skills_match() returns how many matched, not 0 for success */
	if (skills_match(&matched, set, ph->spec->name, task, 3) > 0) {
		jv names = jv_array();

		text = skills_render(matched);
		jv_array_foreach(matched, i, s) {
			names = jv_array_append(names, json_get(s, "name"));
			jv_free(s);
		}
		phase_emit(ph, "skills.matched", json_set(jv_object(), "skills", names));
	}
	jv_free(matched);
	skills_free(set);
	return text;
}

int phase_perceive(char **out, struct phase *ph, jv environment)
{
	jv task = json_get(ph->state, "task");
	const char *desc = json_get_str(task, "description");
	size_t budget = (size_t)config_get_num(ph->cfg, "memory.context_tokens");
	struct context_input in = { .budget = budget };
	jv fitted;

	if (jv_get_kind(environment) != JV_KIND_OBJECT) {
		jv_free(environment);
		environment = jv_object();
	}
	/* The parts' order is their priority: the task, the skills that match
	 * it, then what the phase gave. */
	jv head = json_set(jv_object(), "task", json_has(environment, "task")
			   ? json_get(environment, "task") : jv_string(desc ? desc : ""));
	char *skills = matching_skills(ph, desc ? desc : "");
	if (skills)
		head = json_set(head, "skills", jv_string(skills));
	free(skills);
	environment = jv_object_merge(head, environment);
	in.memories = recall(ph, desc ? desc : "");
	in.environment = environment;
	in.conversation = jv_null();
	context_shares_from_config(&in.shares, ph->cfg);
	context_build(&fitted, &in);
	context_render(out, fitted, budget);
	jv report = json_get(fitted, "report");
	phase_emit(ph, "context.built", report);
	jv_free(fitted);
	jv_free(in.memories);
	jv_free(in.environment);
	jv_free(task);
	return 0;
}

/* The paths the run touches or plans to: the plan's tasks' files and the
 * changes' files.  A new array. */
static jv touched_files(struct phase *ph)
{
	jv out = jv_array();
	jv tasks = jv_getpath(jv_copy(ph->state), JV_ARRAY(jv_string("plan"), jv_string("tasks")));
	jv changes = jv_getpath(jv_copy(ph->state), JV_ARRAY(jv_string("changes"), jv_string("files")));

	if (jv_get_kind(tasks) == JV_KIND_ARRAY) {
		jv_array_foreach(tasks, i, t) {
			jv files = json_get(t, "files");

			if (jv_get_kind(files) == JV_KIND_ARRAY)
				out = jv_array_concat(out, jv_copy(files));
			jv_free(files);
			jv_free(t);
		}
	}
	if (jv_get_kind(changes) == JV_KIND_ARRAY) {
		jv_array_foreach(changes, i, c) {
			out = jv_array_append(out, json_get(c, "path"));
			jv_free(c);
		}
	}
	jv_free(tasks);
	jv_free(changes);
	return out;
}

int phase_system_prompt(char **out, struct phase *ph, const char *root, const char *prompt)
{
	enum agent_prompt_how how;
	char *base = NULL, *text = NULL;
	jv report, touched;

	*out = NULL;
	root = root ? root : ph->repo;
	if (agent_prompt_load_how(&base, &how, root, prompt) < 0)
		return -1;
	if (how != AGENT_PROMPT_BUILTIN) {
		jv e = json_set(jv_object(), "prompt", jv_string(prompt));
		e = json_set(e, "path", jv_string_fmt(".forge/prompts/%s.md", prompt));
		phase_emit(ph, "prompt.overlay", json_set(e, "mode", jv_string(how == AGENT_PROMPT_REPLACED
									     ? "replaced" : "appended")));
	}
	touched = touched_files(ph);
	context_instructions(&text, &report, root, touched,
			     (size_t)config_get_num(ph->cfg, "context.instructions_tokens"));
	jv_free(touched);
	if (jv_array_length(json_get(report, "files")) + jv_array_length(json_get(report, "skipped")) > 0)
		phase_emit(ph, "context.instructions", report);
	else
		jv_free(report);
	if (!*text) {
		*out = base;
		free(text);
		return 0;
	}
	struct buf b = BUF_INIT;

	buf_adds(&b, base);
	buf_adds(&b, "\n\n");
	buf_adds(&b, text);
	*out = buf_detach(&b, NULL);
	free(base);
	free(text);
	return 0;
}

/* Reflection learnings go to memory (agent.h: env->remember). */
static int remember(void *payload, jv learning)
{
	struct phase *ph = payload;
	struct memory *m = open_memory(ph);
	char id[ULID_LEN + 1];
	int rc;

	if (!m) {
		jv_free(learning);
		return -1;
	}
	rc = memory_store(id, m, learning);
	if (rc == 0)
		phase_emit(ph, "memory.stored", json_set(jv_object(), "id", jv_string(id)));
	memory_free(m);
	return rc;
}

/* ---- models and the agent ---------------------------------------------- */

/* A warning (a model's client, an MCP server's failure with its stderr)
 * without control characters: what a server wrote must not drive the
 * terminal (term.h: term_clean). */
static void warn_once(void *payload, const char *msg)
{
	struct phase *ph = payload;
	char *shown = xstrdup(msg);

	term_clean(shown, strlen(shown));
	fprintf(stderr, "%s: warning: %s\n", ph->spec->program, shown);
	free(shown);
}

/* See phase.h. */
void phase_retry_text(struct buf *b, jv payload)
{
	const char *reason = json_get_str(payload, "reason");
	double status = json_get_num(payload, "status", 0), wait = json_get_num(payload, "wait_s", 0);

	buf_adds(b, reason ? reason : "the call failed");
	if (status > 0)
		buf_addf(b, " (%.0f)", status);
	buf_addf(b, ", retrying in %.*f s (attempt %.0f of %.0f)", wait < 10 && wait != floor(wait) ? 1 : 0, wait,
		 json_get_num(payload, "attempt", 0), json_get_num(payload, "max_attempts", 0));
}

/* A model call waits to be made again (llm_options' on_retry): an
 * llm.retry event, which the supervisor's view shows (before: the run sat
 * silent through waits of up to llm.retry_max_delay_s a retry), and, run
 * by hand (not with -q), the same line on stderr: the events go to stdout,
 * and a person at the terminal saw nothing through the wait. */
static void retry_event(void *payload, const struct llm_retry *r)
{
	struct phase *ph = payload;
	jv p = json_set(json_set(jv_object(), "attempt", jv_number(r->attempt)), "max_attempts",
			jv_number(r->max_attempts));

	p = json_set(json_set(p, "status", jv_number((double)r->status)), "wait_s", jv_number(r->wait_s));
	p = json_set(p, "reason", jv_string(r->reason));
	if (ph->report) {
		struct buf line = BUF_INIT;

		phase_retry_text(&line, p);
		term_status_clear();
		fprintf(stderr, "%s: %s\n", ph->spec->program, line.buf);
		buf_release(&line);
	}
	phase_emit(ph, "llm.retry", p);
}

int phase_llm(struct llm_client **out, struct phase *ph, bool fast)
{
	struct llm_options opt;
	const char *name = ph->spec->name;

	cli_say_base_url_unused(ph->cfg, name, ph->common.verbosity < 0);
	llm_options_init(&opt);
	llm_options_for(&opt, ph->cfg, name, fast);
	opt.phase = name;
	opt.fast = fast;
	opt.attempt = phase_previous_runs(ph) + 1;
	opt.store = phase_store(ph);
	opt.trace_id = ph->out.trace_id;
	opt.warn = warn_once;
	opt.warn_payload = ph;
	opt.on_retry = retry_event;
	opt.on_retry_payload = ph;
	/* no model call once nothing the phase does can be delivered */
	opt.before_call = output_gone_before_call;
	opt.before_call_payload = ph;
	if (llm_client_new(out, &opt) < 0)
		return forge_error_prefix("%s model", fast ? "fast" : name);
	/* A call without a price costs null: the phase's and the run's
	 * limits (the defaults too) could not hold, so none is made. */
	if (llm_client_require_price(*out) < 0) {
		llm_client_free(*out);
		*out = NULL;
		return forge_error_prefix("%s model", fast ? "fast" : name);
	}
	return 0;
}

/* What a model call's progress goes to: the spinner (app/term.h: on a
 * terminal, or relayed to forge-supervisor; not under -q) and the store's
 * live text (store/live.h, agent.live_text: forge tui shows it, wherever
 * the run was started).  One phase a process: one of each. */
static bool agent_spinner;
static struct store_live agent_live;
static struct llm_client *agent_llm, *agent_fast;

static void agent_call(void *payload, bool start)
{
	struct phase *ph = payload;
	char label[160];

	if (start)
		store_live_begin(&agent_live, ph->out.trace_id, ph->spec->name, llm_client_model(agent_llm),
				 delegate_self_span());
	else
		store_live_end(&agent_live);
	if (!agent_spinner)
		return;
	if (!start) {
		term_spinner_stop();
		return;
	}
	snprintf(label, sizeof label, "%s: model", ph->spec->program);
	term_spinner_start(label);
}

/* The spinner and the live text of a model call, ended (nothing when
 * none is shown). */
static void call_display_end(void)
{
	store_live_end(&agent_live);
	if (agent_spinner)
		term_spinner_stop();
}

static void agent_text(void *payload, const char *text, size_t len)
{
	(void)payload;
	if (!len) {	/* a text block is whole: the row gets all of it now */
		store_live_flush(&agent_live);
		return;
	}
	store_live_add(&agent_live, text, len);
	if (agent_spinner)
		term_spinner_text(text, len);
}

/* -v: a tool call's arguments and the head of its result (3 lines, 300
 * bytes), redacted like everything shown (llm.h). */
static void agent_tool(void *payload, const char *tool, jv input, bool ok, const char *result)
{
	struct phase *ph = payload;
	bool color = term_color(STDERR_FILENO);
	char *args = json_dumps(jv_copy(input), false);
	struct buf head = BUF_INIT;
	const char *r = result ? result : "";
	size_t cut = 0;

	if (ph->common.verbosity <= 0) {
		free(args);
		return;
	}
	for (int lines = 0; cut < 300 && r[cut] && lines < 3; cut++)
		if (r[cut] == '\n')
			lines++;
	buf_add(&head, r, cut);
	while (head.len && head.buf[head.len - 1] == '\n')
		buf_truncate(&head, head.len - 1);
	llm_redact(args);
	llm_redact(head.buf);
	term_clean(head.buf, head.len);      /* (a command's output: its escapes not replayed) */
	term_status_clear();
	fprintf(stderr, "%s: %s%s%s %s\n", ph->spec->program, term_sgr(color, ok ? TERM_CYAN : TERM_RED), tool,
		term_sgr(color, TERM_RESET), args);
	for (char *line = head.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		fprintf(stderr, "    %s→ %.*s%s%s\n", term_sgr(color, TERM_DIM), nl ? (int)(nl - line) : (int)strlen(line),
			line, r[cut] ? (nl ? "" : " …") : "", term_sgr(color, TERM_RESET));
	}
	free(args);
	buf_release(&head);
}

/* -v: a tool call cut at the output limit (tool.cut), one line as a call
 * that ran has: nothing ran, and the model is told to make smaller calls. */
static void agent_cut(void *payload, const char *tool, int max_tokens)
{
	struct phase *ph = payload;
	bool color = term_color(STDERR_FILENO);
	char *name = xstrdup(tool ? tool : "tool");

	term_clean_line(name, strlen(name));    /* (the model's word: not checked, the call was cut) */
	term_status_clear();
	fprintf(stderr, "%s: %s%s%s cut at the output limit of %d tokens: nothing ran\n", ph->spec->program,
		term_sgr(color, TERM_YELLOW), name, term_sgr(color, TERM_RESET), max_tokens);
	free(name);
}

static void agent_progress(void *payload, int iteration, const char *tool, double cost)
{
	struct phase *ph = payload;

	if (tool)
		phase_progress(ph, "iteration %d · %s · $%.4f", iteration, tool, cost);
	else
		phase_progress(ph, "iteration %d · thinking · $%.4f", iteration, cost);
}

/* section.PHASE, else section.default, else 0 (a section without a
 * default sets no limit for a phase it does not name). */
/* safety.cost.per_phase.PHASE; -1 when it is not set (a phase the
 * schema does not list), 0: the phase may spend nothing. */
static double phase_cost_cap(struct phase *ph)
{
	char key[128];

	snprintf(key, sizeof key, "safety.cost.per_phase.%s", ph->spec->name);
	return config_has(ph->cfg, key) ? fmax(0, config_get_num(ph->cfg, key)) : -1;
}

/* The run's remaining budget as the phase started (the state's
 * budget.remaining_usd, an overspent one 0), and under the supervisor no
 * more than its allowance for this node (PHASE_RUN_MONEY_ENV: its share of
 * what the budget, safety.cost.per_run and per_day leave with the nodes
 * running beside it; before, each parallel node had the whole budget and
 * per_run was only checked between phases); -1 when none applies. */
static double phase_budget_left(const char **source, struct phase *ph)
{
	jv budget = json_get(ph->state, "budget");
	double left = json_has(budget, "remaining_usd") ? fmax(0, json_get_num(budget, "remaining_usd", 0)) : -1;
	const char *given = getenv(PHASE_RUN_MONEY_ENV);
	char *end = NULL;

	jv_free(budget);
	if (source)
		*source = "what the run's budget (--budget) leaves";
	if (given && *given) {
		double allowed = strtod(given, &end);

		/* (a value that does not read is ignored: it can only lower the limit) */
		if (end && !*end && isfinite(allowed) && (left < 0 || fmax(0, allowed) < left)) {
			left = fmax(0, allowed);
			if (source)
				*source = "this phase's share of what the run's budget, safety.cost.per_run "
					  "and safety.cost.per_day leave";
		}
	}
	return left;
}

double phase_money_left(struct phase *ph)
{
	double cap = phase_cost_cap(ph), budget = phase_budget_left(NULL, ph);
	double limit = cap >= 0 && (budget < 0 || cap < budget) ? cap : budget;

	return limit < 0 ? -1 : fmax(0, limit - ph->cost_usd);
}

bool phase_money_spent(jv *out, struct phase *ph, const char *event, const char *what)
{
	char why[256];

	if (phase_money_left(ph) != 0)
		return false;
	snprintf(why, sizeof why, "budget spent: the run's remaining budget or safety.cost.per_phase.%s "
		 "leaves nothing", ph->spec->name);
	jv e = json_set(jv_object(), "reason", jv_string(why));
	if (out) {
		jv_free(*out);
		*out = jv_copy(e);
	}
	phase_emit(ph, event, e);
	if (ph->common.verbosity >= 0)
		fprintf(stderr, "%s: %s skipped: %s\n", ph->spec->program, what, why);
	return true;
}

static double config_phase_num(struct phase *ph, const char *section)
{
	char key[128];

	snprintf(key, sizeof key, "%s.%s", section, ph->spec->name);
	if (config_has(ph->cfg, key))
		return config_get_num(ph->cfg, key);
	snprintf(key, sizeof key, "%s.default", section);
	return config_has(ph->cfg, key) ? config_get_num(ph->cfg, key) : 0;
}

static const char *status_of(enum agent_outcome o)
{
	switch (o) {
	case AGENT_DONE: return state_status_name(STATE_OK);
	case AGENT_ESCALATED: return state_status_name(STATE_ESCALATED);
	case AGENT_TRIPPED: return state_status_name(STATE_TRIPPED);
	case AGENT_FAILED: return state_status_name(STATE_FAILED);
	}
	return state_status_name(STATE_FAILED);
}

/* The working memory's size: the model's context window (llm.h:
 * llm_context_window), else llm.phases.PHASE.context_window or
 * llm.context_window.  Said once per process in a context.window event. */
size_t phase_context_window(struct phase *ph, struct llm_client *llm)
{
	static bool said;
	char key[128];
	const char *source;

	snprintf(key, sizeof key, "llm.phases.%s.context_window", ph->spec->name);
	long fallback = (long)config_get_num(ph->cfg, config_has(ph->cfg, key) ? key : "llm.context_window");
	long window = llm_context_window(&source, llm, fallback);

	if (!said) {
		said = true;
		phase_emit(ph, "context.window", json_set(json_set(json_set(jv_object(),
			"tokens", jv_number((double)window)), "source", jv_string(source)),
			"model", json_str_or_null(llm_client_model(llm))));
	}
	return (size_t)window;
}

/* The agent's model clients, made by the first phase_run_agent() and kept
 * until phase_main() ends, so a phase that runs the loop more than once
 * (forge-implement's TDD runs) goes on counting cassette calls within the
 * process instead of replaying call 1 again. */
static bool agent_fast_tried;

/* The phase's MCP servers (app/toolset.h), started by the first
 * phase_run_agent() in the run's worktree and stopped when the phase's
 * work ends, so the loop's later runs reuse them. */
static struct toolset *agent_tools;
static bool agent_tools_tried;

const char *phase_policy_name(const struct phase *ph)
{
	return ph->out.phase ? ph->out.phase : ph->spec->name;
}

/* A sub-agent's toolset starts no server: its tools are the built-in ones
 * it was given, under its phase's policy. */
static struct toolset *phase_toolset(struct phase *ph)
{
	if (!agent_tools_tried) {
		char *root = phase_workdir(ph);
		struct toolset_opts o = {
			.phase = phase_policy_name(ph), .cfg = ph->cfg, .root = root, .out = &ph->out,
			.warn = warn_once, .warn_payload = ph, .builtin_only = delegate_is_sub(),
		};
		agent_tools_tried = true;
		if (toolset_open(&agent_tools, &o) < 0)
			agent_tools = NULL;
		free(root);
	}
	return agent_tools;
}

static void phase_toolset_close(void)
{
	toolset_close(agent_tools);
	agent_tools = NULL;
	agent_tools_tried = false;
}

/* The questions this phase asked a human earlier in the run, with their
 * answers (state.answers, made by the supervisor), for its prompt; and the
 * notes a human gave approving a run of it again after it stopped without
 * a result (an answer with `rerun`: its question is why it stopped). */
static void answers_text(struct buf *b, struct phase *ph)
{
	jv answers = json_get(ph->state, "answers");
	struct buf notes = BUF_INIT;
	int n = 0;

	if (jv_get_kind(answers) == JV_KIND_ARRAY) {
		jv_array_foreach(answers, i, a) {
			const char *p = json_get_str(a, "phase"), *q = json_get_str(a, "question");
			const char *ans = json_get_str(a, "answer");
			if (!p || !q || strcmp(p, ph->spec->name) != 0) {
				jv_free(a);
				continue;
			}
			if (json_get_bool(a, "rerun", false)) {
				if (ans)
					buf_addf(&notes, "\n\n# A human's note\n\nAn earlier attempt of yours in "
						 "this run stopped without a result (%s). A human approved running "
						 "you again, and said:\n\n%s\n\nFollow it; do not repeat what "
						 "made that attempt stop.\n", q, ans);
			} else {
				if (!n++)
					buf_adds(b, "\n\n# Your questions and a human's answers\n\n"
						    "Earlier in this run you stopped to ask a human. Go on from "
						    "their answer; do not ask the same again.\n");
				buf_addf(b, "\n- You asked: %s\n  The human answered: %s\n", q,
					 ans && *ans ? ans : "(no answer: they approved going on; use your best judgement)");
			}
			jv_free(a);
			(void)i;
		}
	}
	if (notes.len)
		buf_add(b, notes.buf, notes.len);
	buf_release(&notes);
	jv_free(answers);
}

/* The agent's executor, run only while the phase's output can be written
 * (phase_leave_if_output_gone): no tool edits, runs or asks anything for
 * a phase whose result cannot be delivered. */
struct output_exec {
	struct phase *ph;
	agent_exec_fn exec;
	void *payload;
};

static int exec_while_output(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct output_exec *x = payload;

	phase_leave_if_output_gone(x->ph);
	return x->exec(out, name, input, x->payload);
}

const char *phase_run_agent(struct agent_result *out, struct phase *ph, struct agent_config *cfg,
			    const char *prompt, agent_exec_fn exec, void *exec_payload)
{
	agent_result_init(out);
	cfg->phase = ph->spec->name;
	if (!cfg->max_iterations)
		cfg->max_iterations = (int)config_phase_num(ph, "safety.iterations");
	cfg->max_cost_usd = phase_cost_cap(ph);
	/* (-1: no budget; an overspent one leaves nothing, not no limit) */
	cfg->budget_remaining_usd = phase_budget_left(&cfg->budget_source, ph);
	if (!cfg->max_time_ms)
		cfg->max_time_ms = (long long)(config_phase_num(ph, "safety.time_s") * 1000);
	/* the run's own limit, as the supervisor saw it (a call it ended
	 * would otherwise run on until the phase's) */
	const char *rd = getenv(PHASE_RUN_DEADLINE_ENV);
	char *end = NULL;
	long long run_deadline = rd && *rd ? strtoll(rd, &end, 10) : 0;
	if (run_deadline > 0 && end && !*end) {
		long long left = run_deadline - (long long)now_ms();
		cfg->run_time_left_ms = left > 0 ? left : 1;
	}
	/* the limits are the phase's: what its earlier runs of the loop spent counts */
	cfg->spent_usd = ph->cost_usd;
	cfg->spent_iterations = ph->agent_iterations;
	cfg->spent_ms = ph->agent_ms;
	cfg->stagnation_threshold = (int)config_get_num(ph->cfg, "safety.stagnation_threshold");
	cfg->error_rate_warning = config_get_num(ph->cfg, "safety.error_rate.warning");
	cfg->error_rate_critical = config_get_num(ph->cfg, "safety.error_rate.critical");
	cfg->error_window_ms = (long long)(config_get_num(ph->cfg, "safety.error_rate.window_s") * 1000);
	cfg->max_tokens = (int)config_get_num(ph->cfg, "llm.max_tokens");
	cfg->temperature = llm_temperature(ph->cfg, ph->spec->name);

	if (!agent_llm && phase_llm(&agent_llm, ph, false) < 0) {
		jv_free(cfg->tools);
		jv_free(cfg->result_schema);
		cfg->tools = cfg->result_schema = jv_null();
		out->outcome = AGENT_FAILED;
		out->reason = xstrdup(forge_last_error());
		phase_reason(ph, "%s", out->reason);
		/* (no key, an unknown provider: the configuration's to mend,
		 * exit 2, as forge run says it -- not a dependency that failed) */
		return "bad_input";
	}
	if (!cfg->context_tokens)
		cfg->context_tokens = phase_context_window(ph, agent_llm);
	if (!agent_fast_tried && phase_llm(&agent_fast, ph, true) < 0)
		agent_fast = NULL;	/* compression then falls back to a mechanical summary */
	agent_fast_tried = true;

	struct delegate dg;	/* the delegate tool, when sub-agents are on (app/delegate.h) */
	delegate_hook(&dg, ph, cfg, out, &exec, &exec_payload);
	/* every phase's tools pass one policy, and MCP tools join them here */
	struct toolset_exec tools = { phase_toolset(ph), exec, exec_payload };
	if (tools.ts)
		cfg->tools = toolset_specs(tools.ts, cfg->tools);
	agent_spinner = ph->common.verbosity >= 0 && term_status_enabled();
	/* a call streams for either: the live text needs a trace to file it under */
	bool live = config_get_bool(ph->cfg, "agent.live_text") && ph->out.trace_id[0] && phase_store(ph) &&
		    !store_readonly(phase_store(ph));
	bool status = agent_spinner || live;
	store_live_init(&agent_live, live ? phase_store(ph) : NULL);
	struct output_exec guarded = { ph, tools.ts ? toolset_exec_fn : exec,
				       tools.ts ? (void *)&tools : exec_payload };
	struct agent_env env = {
		.llm = agent_llm, .fast = agent_fast, .out = &ph->out,
		.exec = exec_while_output, .exec_payload = &guarded,
		.progress = ph->progress ? agent_progress : NULL, .progress_payload = ph,
		.on_call = status ? agent_call : NULL, .on_text = status ? agent_text : NULL,
		.on_tool = ph->common.verbosity > 0 ? agent_tool : NULL,
		.on_cut = ph->common.verbosity > 0 ? agent_cut : NULL,
		.remember = remember, .remember_payload = ph,
	};
	cfg->reflect = config_get_bool(ph->cfg, "memory.reflect");
	struct buf asked = BUF_INIT;
	buf_adds(&asked, prompt);
	answers_text(&asked, ph);
	agent_run(out, cfg, &env, asked.buf);
	buf_release(&asked);
	/* the question, in the state: the supervisor asks a human and runs
	 * the phase again with the answer (state.answers) */
	if (out->outcome == AGENT_ESCALATED && out->question)
		ph->state = json_set(ph->state, "question", json_set(json_set(jv_object(),
			"phase", jv_string(ph->spec->name)), "text", jv_string(out->question)));
	store_live_release(&agent_live);
	delegate_unhook(&dg);
	phase_leave_if_interrupted();	/* its last call was (llm.called) */
	ph->cost_usd += out->cost_usd;
	ph->tokens += out->tokens;
	ph->agent_iterations += out->iterations;
	ph->agent_ms += out->duration_ms;
	if (!out->cost_known)
		ph->cost_known = false;
	if (out->reason)
		phase_reason(ph, "%s", out->reason);
	return status_of(out->outcome);
}

/* ---- main --------------------------------------------------------------- */

static int on_option(int id, const char *arg, void *payload)
{
	struct phase *ph = payload;

	if (id == OPT_TASK) {
		if (stream_task_check(arg, strlen(arg)) < 0) {
			char why[256];
			snprintf(why, sizeof why, "%s", forge_last_error());
			return forge_error("--task: %s", why);
		}
		ph->task_text = xstrdup(arg);
		return 0;
	}
	if (id == OPT_NO_INPUT) {
		ph->no_input = true;
		return 0;
	}
	if (!ph->spec->on_option)
		return forge_error("unhandled option");
	return ph->spec->on_option(ph, id, arg);
}

static struct cli_option *merge_options(const struct phase_spec *spec)
{
	static const struct cli_option task = { "task", 0, "TEXT", "the task, instead of stdin", OPT_TASK };
	static const struct cli_option no_input = {
		"no-input", 0, NULL, "work on the repository alone: do not read stdin",
		OPT_NO_INPUT,
	};
	size_t n = 0, k = 0;

	while (spec->options && spec->options[n].name)
		n++;
	struct cli_option *all = xcalloc(n + 3, sizeof *all);
	all[k++] = task;
	if (spec->runs_alone)
		all[k++] = no_input;
	for (size_t i = 0; i < n; i++)
		all[k++] = spec->options[i];
	return all;
}

/* Read the input; returns 0, or an exit status. */
/* Bytes waiting on standard input now (a pipe's, or what is left of a
 * file); 0 when none can be seen yet, or for a terminal. */
static long stdin_waiting(void)
{
	struct stat st;
	int n = 0;

	if (fstat(STDIN_FILENO, &st) < 0)
		return 0;
	if (S_ISREG(st.st_mode)) {
		off_t at = lseek(STDIN_FILENO, 0, SEEK_CUR);
		return at >= 0 && st.st_size > at ? (long)(st.st_size - at) : 0;
	}
	if ((S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) && ioctl(STDIN_FILENO, FIONREAD, &n) == 0)
		return n;
	return 0;
}

/*
 * Input with no state and no task: what it held instead.  Events alone (a
 * stream cut before its state, say), or records of kinds no program reads
 * (forwarded all the same): the one that looks like a state but for its
 * kind's case ("State") is named, line and all -- "only events" said of a
 * stream with no event in it sent the person looking for the wrong thing.
 */
static int no_state(struct phase *ph)
{
	const char *what = ph->spec->needs_input
		? "pipe a phase's whole output (its last line is the state), or what this phase reads alone "
		  "(see --help)"
		: "pipe a phase's whole output (its last line is the state); to work on the repository "
		  "alone, pass --no-input";
	char why[512];

	if (ph->in.others && strcasecmp(ph->in.other_kind, "state") == 0) {
		ph->in.error_line = ph->in.other_line;
		snprintf(why, sizeof why, "no state in the input: this record's kind is \"%s\", which is not "
			 "\"state\" (kinds are lower case; a record of another kind is passed on unread)",
			 ph->in.other_kind);
		return cli_reject(&ph->out, &ph->in, why);
	}
	if (ph->in.others && !ph->in.events) {
		snprintf(why, sizeof why, "no state in the input, only %lu record%s of other kinds (the first "
			 "on line %lu, of kind \"%s\"), which are passed on unread: %s", ph->in.others,
			 ph->in.others == 1 ? "" : "s", ph->in.other_line, ph->in.other_kind, what);
		return cli_reject(&ph->out, &ph->in, why);
	}
	snprintf(why, sizeof why, "no state in the input, only events: %s", what);
	return cli_reject(&ph->out, &ph->in, why);
}

static int take_input(struct phase *ph)
{
	struct stream_options opt = {
		.validate = true,
		.raw_hook = ph->spec->raw_hook,
		.raw_what = ph->spec->raw_what,
		.raw_hint = ph->spec->raw_hint,
		.payload = ph->payload,
		.max_line = (size_t)config_get_num(ph->cfg, "stream.max_line_bytes"),
	};

	if (ph->task_text) {
		/* --task is instead of stdin: what was piped there is not read,
		 * and is said so (before: its events dropped without a word) */
		long waiting = stdin_waiting();
		if (waiting > 0 && ph->common.verbosity >= 0)
			fprintf(stderr, "%s: warning: --task given: standard input is not read (%ld bytes there); "
				"pipe {\"task\": …} instead to pass its records on\n", ph->spec->program, waiting);
		ph->in.task = json_set(jv_object(), "description", jv_string(ph->task_text));
		return 0;
	}
	if (ph->no_input) {
		if (!ph->spec->needs_input)
			return 0;
		return cli_reject(&ph->out, NULL, ph->spec->no_input ? ph->spec->no_input :
				     "--no-input: there is nothing to work on without an input here (see --help)");
	}
	if (isatty(STDIN_FILENO)) {
		if (!ph->spec->needs_input && ph->spec->runs_alone)
			return 0;
		return cli_reject(&ph->out, NULL, ph->spec->tty_input ? ph->spec->tty_input :
				     "no input: pipe a state, {\"task\": …} or a task description, or use --task");
	}
	int rc = stream_read(&ph->in, stdin, &ph->out, &opt);
	if (rc == STREAM_OUTPUT_FAILED)
		return FORGE_EXIT_DEPENDENCY;	/* (phase_main's cli_out_status says it, once) */
	if (rc != 0)
		return cli_reject(&ph->out, &ph->in, forge_last_error());
	if (ph->in.empty && ph->spec->needs_input)
		return cli_reject(&ph->out, &ph->in, ph->spec->empty_input ? ph->spec->empty_input :
				     "empty input: expected a state, {\"task\": …} or a task description (or --task)");
	if (ph->in.empty)
		return cli_reject(&ph->out, &ph->in,
				     "empty input: expected a state on stdin; to work on the repository alone, pass --no-input");
	/* Text where a state was expected ("404: Not Found" from a failed
	 * download, a note): no task for a phase that works on the repository,
	 * which it would then test or deploy as it is. */
	if (ph->in.text_line && ph->spec->runs_alone && !ph->spec->needs_input) {
		ph->in.error_line = ph->in.text_line;
		return cli_reject(&ph->out, &ph->in,
				  "plain text, not a JSON record: expected a state on stdin (a phase's output); "
				  "to work on the repository alone, pass --no-input");
	}
	/* Events alone (a stream cut before its state, say): nothing says what
	 * to work on, and making up a task would work on the wrong thing. */
	if (jv_get_kind(ph->in.state) != JV_KIND_OBJECT && jv_get_kind(ph->in.task) != JV_KIND_OBJECT &&
	    jv_get_kind(ph->in.raw) != JV_KIND_STRING)
		return no_state(ph);
	return 0;
}

/*
 * A phase that needs a repository and has none to work on (phase_spec
 * needs_repo): the exit status of its refusal, or 0.  None is: no --repo,
 * no repository containing the current directory, and no task.repo of the
 * input that is here (a state from a repository since moved or deleted).
 * Said as `forge run` says it, with the directory and what to do.
 */
static int no_repo(struct phase *ph)
{
	char cwd[PATH_MAX];

	if (!ph->spec->needs_repo || jv_get_kind(ph->in.raw) == JV_KIND_STRING || ph->repo)
		return 0;
	jv task = json_get(ph->state, "task");
	const char *task_repo = json_get_str(task, "repo");
	struct buf b = BUF_INIT;
	int rc = 0;

	if (!getcwd(cwd, sizeof cwd))
		snprintf(cwd, sizeof cwd, ".");
	if (!task_repo)
		buf_addf(&b, "'.' is not in a git repository (%s): %s works on one; run it inside one, or "
			 "pass --repo DIR", cwd, ph->spec->program);
	else if (!runshare_is_dir(task_repo))
		buf_addf(&b, "the input state's repository '%s' is not here, and '.' is not in a git "
			 "repository (%s): run %s inside a clone of it, or pass --repo DIR", task_repo, cwd,
			 ph->spec->program);
	if (b.len)
		rc = cli_reject(&ph->out, NULL, b.buf);
	buf_release(&b);
	jv_free(task);
	return rc;
}

static int exit_code(const char *status)
{
	switch (state_status_of(status)) {
	case STATE_OK: return FORGE_EXIT_OK;
	case STATE_REJECTED: return FORGE_EXIT_REJECTED;
	case STATE_SKIPPED: return FORGE_EXIT_REJECTED;
	case STATE_TRIPPED: return FORGE_EXIT_TRIPPED;
	case STATE_ESCALATED: return FORGE_EXIT_HUMAN;
	case STATE_FAILED: return FORGE_EXIT_DEPENDENCY;
	case STATE_UNKNOWN: return FORGE_EXIT_DEPENDENCY;
	}
	return FORGE_EXIT_DEPENDENCY;
}

/*
 * A phase that works in the run's worktree holds the trace's lease while it
 * runs (spec->lease); under forge-supervisor the supervisor's ($FORGE_LEASE)
 * is used as it is.  Returns 0, or the exit status: 4 when another living
 * process holds it.  Without a database there is nothing to coordinate on.
 */
static int take_lease(struct phase *ph)
{
	const char *trace = json_get_str(ph->state, "trace_id");
	const char *parent = getenv("FORGE_LEASE");
	struct store *st;
	char holder[ULID_LEN + 1];
	jv held;

	if (!ph->spec->lease || jv_get_kind(ph->in.state) != JV_KIND_OBJECT || !trace)
		return 0;
	/* Started by its supervisor itself (its parent is the process
	 * $FORGE_SUPERVISOR_PID names): the lease is the one it holds, and
	 * checked in the transaction that committed this phase's start
	 * (store_fence), so the database is not opened for it here -- a
	 * parse of its whole schema (~1.9M instructions) before the phase's
	 * first event.  Anything else with $FORGE_LEASE (a phase a command
	 * of a phase started, a shell that inherited it) reads the lease. */
	if (parent && *parent && supervisor_of() && getppid() == supervisor_of())
		return 0;
	if (!(st = phase_store(ph)))
		return 0;
	if (parent && *parent && store_lease_get(&held, st, trace) == 0) {
		bool ours = json_get_str(held, "holder") && strcmp(json_get_str(held, "holder"), parent) == 0;
		jv_free(held);
		if (ours)
			return 0;
	}
	double every = config_get_num(ph->cfg, "supervisor.lease_renew_s");
	double ttl = config_get_num(ph->cfg, "supervisor.lease_ttl_s");

	if (!(every > 0) || !(ttl > 2 * every)) {
		fprintf(stderr, "%s: supervisor.lease_ttl_s (%g) must be more than twice "
				"supervisor.lease_renew_s (%g), which must be more than 0\n", ph->spec->program, ttl,
			every);
		return FORGE_EXIT_USAGE;
	}
	store_set_lease_ttl(st, ttl);
	ulid_new(holder);
	int r = store_lease_take(&held, st, trace, holder, ph->spec->program);
	if (r == STORE_LEASE_HELD) {
		const char *prog = json_get_str(held, "program");
		char hint[256];

		/* forge cancel finds runs (a supervisor's); a phase job has none */
		if (prog && strcmp(prog, "forge-supervisor") == 0)
			snprintf(hint, sizeof hint, "wait for it or stop it with `forge cancel %s`", trace);
		else
			snprintf(hint, sizeof hint, "wait for it or stop it (cancel its job); a lease whose process "
				 "is gone is taken over: on its host at once, on another once this host has seen no "
				 "renewal of it for supervisor.lease_ttl_s (%gs)", ttl);
		fprintf(stderr, "%s: trace %s is already being worked on: %s, pid %.0f on %s, since %s; %s\n",
			ph->spec->program, trace, prog ? prog : "a forge program", json_get_num(held, "pid", 0),
			json_get_str(held, "host"), json_get_str(held, "acquired_at"), hint);
		jv_free(held);
		return FORGE_EXIT_HUMAN;
	}
	jv_free(held);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", ph->spec->program, forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	snprintf(ph->lease, sizeof ph->lease, "%s", holder);
	/* renewed like a supervisor's, so that another machine (a CI job's
	 * retry) takes over the lease of a job that was killed */
	char *db = NULL;

	if (store_resolve_path(&db, ph->common.db, ph->repo) == 0)
		heartbeat_start(&ph->beat, db, trace, holder, every, ph->spec->program, ph->common.verbosity < 0,
				NULL, NULL);
	signal_beat = ph->beat;
	free(db);
	return 0;
}

/* Whether two paths name the same directory (NULL or missing: false). */
static bool same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	return a && b && realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/*
 * Whether the run's branch in repo went on past the commit the state
 * names (a commit made in the worktree since): a phase that works on that
 * commit's files (spec->pins_commit) must not take the later ones for it.
 * False when there is nothing to compare.
 */
static bool branch_moved(const char *repo, const char *branch, const char *commit)
{
	struct forge_git *g = NULL;
	char *tip = NULL, *want = NULL;
	bool moved = false;

	if (commit && forge_git_open(&g, repo) == 0 && forge_git_resolve(&tip, g, branch) == 0 &&
	    forge_git_resolve(&want, g, commit) == 0)
		moved = strcmp(tip, want) != 0;
	free(tip);
	free(want);
	forge_git_free(g);
	return moved;
}

/*
 * Whether the repository at repo holds any of the run: its branch, the
 * commit the state names or the run's base commit -- a clone of the run's
 * repository, not an unrelated one.  True when the state names none of them
 * (nothing to tell by) or repo cannot be opened (the adoption says why).
 */
static bool holds_run(const char *repo, const char *branch, jv task, jv changes)
{
	const char *revs[] = { branch, json_get_str(changes, "commit"), json_get_str(changes, "base_commit"),
			       json_get_str(task, "base_commit") };
	struct forge_git *g = NULL;
	bool named = false, held = false;

	if (forge_git_open(&g, repo) < 0)
		return true;
	for (size_t i = 0; i < sizeof revs / sizeof *revs && !held; i++) {
		char *sha = NULL;

		if (!revs[i])
			continue;
		named = true;
		held = forge_git_resolve(&sha, g, revs[i]) == 0;
		free(sha);
	}
	forge_git_free(g);
	return held || !named;
}

/*
 * The run's worktree, where the phase works on the commit its state names
 * (README "Runs on several machines"), is made (again) in this clone when:
 * the state comes from another clone (a CI job's artifact, another
 * machine; with git.push_remote the run's branch is fetched from there
 * when this repository lacks it); its worktree is gone (forge gc, `git
 * worktree remove`, a runner's cleanup: the branch, or the commit, must be
 * here without a remote); or, for spec->pins_commit, the branch went on
 * past that commit (it is put back at it, the later commits kept).  The
 * state's task is pointed at the worktree (runshare.h).  A branch that is
 * nowhere is fine before the run's first commit (the first forge-implement
 * makes it), an error after: never another tree instead (a phase that can
 * work from the state's text, spec->state_text, goes on with a warning
 * when no remote is set).  Returns 0, -1, or -2 when --repo names a
 * repository that holds nothing of the run, whose worktree is here, and no
 * remote could bring it (bad input: another repository's state; before,
 * that repository's worktree was worked on and reported as --repo's).
 */
static int adopt_run(struct phase *ph)
{
	const char *remote = config_get_str(ph->cfg, "git.push_remote");
	jv task = json_get(ph->state, "task"), changes = json_get(ph->state, "changes"), ev;
	const char *task_repo = json_get_str(task, "repo"), *branch = json_get_str(task, "branch");
	const char *root = ph->common.repo || !runshare_is_dir(task_repo) ? ph->repo : task_repo;
	/* --repo names this job's clone: the state's worktree in another clone
	 * on this runner (a kept workspace of an earlier job) is not ours */
	bool other_clone = ph->common.repo && !same_dir(task_repo, ph->repo);
	const char *worktree = json_get_str(task, "worktree");
	bool there = runshare_worktree_there(worktree);
	/* the worktree as the messages below name it: a state may name none */
	char gone[PATH_MAX + 64];
	int rc = 0;

	if (worktree)
		snprintf(gone, sizeof gone, "the run's worktree %s is gone", worktree);
	else
		snprintf(gone, sizeof gone, "the input state names no worktree for the run");

	if (remote && !*remote)
		remote = NULL;
	if (jv_get_kind(ph->in.state) != JV_KIND_OBJECT || !root)
		goto out;
	if (!branch) {
		/* no run branch yet (a plan's state, a review's of a diff): nothing
		 * to adopt, but a repository not here (an earlier CI job's clone)
		 * is this one, as for a branch not made yet below */
		if (!runshare_is_dir(task_repo))
			ph->state = json_set(ph->state, "task", json_set(jv_copy(task), "repo", jv_string(root)));
		goto out;
	}
	/* --repo names another repository than the state's, whose run's
	 * worktree is here, and nothing could fetch the run into it: a clone
	 * of the run's repository may use that worktree (below), an unrelated
	 * one is not the run's at all -- its worktree would be worked on and
	 * reported as --repo's.  (With the worktree gone, the adoption below
	 * fails or works from the state's text, and says so.) */
	if (there && other_clone && !remote && !holds_run(ph->repo, branch, task, changes)) {
		forge_error("the input state's run (branch %s) is of the repository %s, and --repo %s is neither "
			    "that repository nor a clone of it (it holds neither the run's branch nor its commits): "
			    "nothing run; drop --repo (or give --repo %s) to work on that run, or pipe the state of a "
			    "run of %s", branch, task_repo ? task_repo : "named in the state", ph->repo,
			    task_repo ? task_repo : "REPO", ph->repo);
		rc = -2;
		goto out;
	}
	/* without a remote, another clone's worktree on this machine is used as it is */
	if (there && (!other_clone || !remote) &&
	    !(ph->spec->pins_commit && branch_moved(root, branch, json_get_str(changes, "commit"))))
		goto out;
	rc = runshare_adopt(&ph->state, &ev, root, remote);
	if (rc == 0) {
		if (json_get_str(ev, "branch_tip") && ph->common.verbosity >= 0)
			phase_say(ph, "warning: the run's branch %s is at %.12s, past the commit the state names "
				  "(changes.commit %.12s): working on that one, not on the later commits", branch,
				  json_get_str(ev, "branch_tip"), json_get_str(ev, "commit"));
		phase_emit(ph, "run.adopted", ev);
	} else if (!json_get_str(changes, "commit")) {
		/* nothing committed yet (nor fetched: the remote may be out of
		 * reach): the first implement makes the branch here */
		if (!runshare_is_dir(task_repo))
			ph->state = json_set(ph->state, "task", json_set(jv_copy(task), "repo", jv_string(root)));
		rc = 0;
	} else if (rc > 0 && remote) {
		char *shown = forge_git_url_display(remote);

		forge_error("the run's branch %s is neither in %s nor on the remote '%s' (git.push_remote)",
			    branch, root, shown);
		free(shown);
		rc = -1;
	} else if (rc > 0 && ph->spec->state_text) {
		/* the phase works from the state's text: it says what it could
		 * not see (never the checkout's files instead) */
		if (ph->common.verbosity >= 0)
			phase_say(ph, "warning: %s, and neither its branch %s nor the commit the state names "
				  "(changes.commit %.12s) is in %s: working from the state's text alone (set "
				  "git.push_remote to fetch the branch from where it was pushed)", gone, branch,
				  json_get_str(changes, "commit"), root);
		jv_free(ev);
		ev = json_set(jv_object(), "worktree", json_get(task, "worktree"));
		ev = json_set(ev, "branch", jv_string(branch));
		ev = json_set(ev, "commit", json_get(changes, "commit"));
		phase_emit(ph, "run.worktree_gone", json_set(ev, "repo", jv_string(root)));
		rc = 0;
	} else if (rc > 0 && other_clone && !holds_run(ph->repo, branch, task, changes)) {
		/* as with the worktree here (above): another repository's state */
		forge_error("%s (branch %s), which is of the repository %s, and --repo %s is neither that "
			    "repository nor a clone of it (it holds neither the run's branch nor its commits): "
			    "nothing run; drop --repo (or give --repo %s) to work on that run, or pipe the "
			    "state of a run of %s", gone, branch, task_repo ? task_repo : "named in the state",
			    ph->repo, task_repo ? task_repo : "REPO", ph->repo);
		rc = -2;
	} else if (rc > 0) {
		forge_error("%s, and neither its branch %s nor the commit the state names (changes.commit "
			    "%.12s) is in %s: nothing run (set git.push_remote to fetch the branch from where "
			    "it was pushed)", gone, branch, json_get_str(changes, "commit"), root);
		rc = -1;
	}
out:
	jv_free(task);
	jv_free(changes);
	return rc;
}

/* What the commands in the run's worktree borrow of the checkout's
 * installed dependencies (os/sandbox.h), said once per phase:
 * sandbox.dependencies {worktree, lent: [{dir, from}]}. */
static void deps_note(struct phase *ph)
{
	jv wt = json_get_path(ph->state, "task.worktree");

	if (jv_get_kind(wt) == JV_KIND_STRING && runshare_is_dir(jv_string_value(wt))) {
		jv lent = sandbox_deps_lent(jv_string_value(wt));

		if (jv_array_length(jv_copy(lent)) > 0)
			phase_emit(ph, "sandbox.dependencies",
				   json_set(json_set(jv_object(), "worktree", jv_copy(wt)), "lent", lent));
		else
			jv_free(lent);
	}
	jv_free(wt);
}

/* The phase itself, between the input and the final state. */
static const char *run_phase(struct phase *ph)
{
	int adopted = adopt_run(ph);

	if (adopted < 0) {
		phase_reason(ph, "%s", forge_last_error());
		return adopted == -2 ? "bad_input" : "failed";
	}
	const char *why = ph->spec->guard ? ph->spec->guard(ph) : NULL;

	if (why) {
		phase_reason(ph, "%s", why);
		phase_emit(ph, "phase.skipped", json_set(jv_object(), "reason", jv_string(why)));
		return "skipped";
	}
	deps_note(ph);
	return ph->spec->run(ph);
}

bool phase_alone(const struct phase *ph)
{
	return jv_get_kind(ph->in.state) != JV_KIND_OBJECT && jv_get_kind(ph->in.task) != JV_KIND_OBJECT;
}

const char *phase_input_unfinished(const struct phase *ph, char *buf, size_t n)
{
	const char *phase = json_get_str(ph->in.state, "phase");
	const char *status = json_get_str(ph->in.state, "status");
	enum state_status st = state_status_of(status);
	bool judged_by_result = false;

	if (jv_get_kind(ph->in.state) != JV_KIND_OBJECT || st == STATE_OK)
		return NULL;
	/* This phase's own run that failed (a remote out of reach, a provider
	 * down): its input passed this guard then, and what it is about to
	 * redo is its own; the parts it reads are checked by the guards as
	 * ever (before: a failed deploy, review or test was skipped at every
	 * resume and retry, the run a dead end).  A skipped one is not: it
	 * never looked at its input. */
	if (st == STATE_FAILED && phase && strcmp(phase, ph->spec->name) == 0)
		return NULL;
	if (st == STATE_REJECTED || st == STATE_ESCALATED) {
		/* a review's decision, a test count, a deploy's outcome say
		 * it; a gate a human passed is in the result (approved_by) */
		const char *key = phase && strcmp(phase, "implement") == 0 ? "changes" : phase;
		jv part = key ? json_get(ph->in.state, key) : jv_null();

		judged_by_result = (phase && (strcmp(phase, "review") == 0 || strcmp(phase, "test") == 0 ||
					      strcmp(phase, "deploy") == 0)) ||
				   json_has(part, "approved_by");
		jv_free(part);
	}
	if (judged_by_result)
		return NULL;
	snprintf(buf, n, "the input state's %s phase ended '%s' (its phase.completed event says why)",
		 phase ? phase : "last", status ? status : "unknown");
	return buf;
}

const char *phase_part_stale(const struct phase *ph, jv part, const char *what, char *buf, size_t n)
{
	jv changes = json_get(ph->state, "changes");
	const char *made = json_get_str(changes, "commit");
	const char *seen = json_get_str(part, "commit");

	if (made && seen && strcmp(made, seen) != 0)
		snprintf(buf, n, "the %s is of commit %.12s, but the changes are now commit %.12s "
			 "(implemented again after it)", what, seen, made);
	else
		buf = NULL;
	jv_free(changes);
	return buf;
}

int phase_main(const struct phase_spec *spec, int argc, char **argv, void *payload)
{
	struct phase ph = { .spec = spec, .payload = payload, .state = JSON_NULL, .cost_known = true };
	struct cli_option *options = merge_options(spec);
	struct cli_spec cs = {
		.name = spec->program, .synopsis = spec->synopsis, .description = spec->description,
		.options = options, .flags = spec->model_options ? CLI_MODEL_OPTIONS : CLI_MODEL_OPTIONS_UNUSED,
		.extra_help = spec->extra_help,
	};
	int status;

	program_name = spec->program;
	int first = cli_parse(&ph.common, &cs, argc, argv, on_option, &ph);
	/* A phase's input is stdin or --task (DESIGN.md §2): an operand is
	 * refused, not dropped (before: `echo other | forge-plan "add x"`
	 * planned "other", and `forge-test --no-input FILE` ran every test). */
	if (first < argc)
		cli_usage_error(&cs, "unexpected operand '%s': %s takes no operand; give the task with --task "
				"TEXT, or pipe a state, {\"task\": …} or a task description on stdin%s",
				argv[first], spec->program,
				spec->runs_alone ? ", or pass --no-input to work on the repository alone" : "");
	/* (until its input is read: a filter waiting for it alone has written
	 * nothing, and left nothing) */
	if (!supervisor_of())
		left_note = ": interrupted (no state written)\n";
	catch_signals();
	stream_out_init(&ph.out, stdout, spec->program, spec->name);
	stream_input_init(&ph.in);
	ph.progress = isatty(STDERR_FILENO) && ph.common.verbosity >= 0;
	ph.report = ph.common.verbosity >= 0 && !(getenv("FORGE_SUPERVISOR_PID") && *getenv("FORGE_SUPERVISOR_PID"));
	struct session ses;
	status = session_open(&ses, &ph.common, SESSION_CONFIG, jv_null());
	if (status) {
		fprintf(stderr, "%s: %s\n", spec->program, forge_last_error());
		goto out;
	}
	ph.repo = ses.repo;   /* the store is opened when first needed (phase_store) */
	ph.cfg = ses.cfg;
	status = take_input(&ph);
	if (status)
		goto out;

	ph.state = jv_get_kind(ph.in.state) == JV_KIND_OBJECT
		? jv_copy(ph.in.state)
		: new_state(&ph, jv_get_kind(ph.in.task) == JV_KIND_OBJECT
				 ? jv_copy(ph.in.task)
				 : json_set(jv_object(), "description",
					    jv_string_fmt(jv_get_kind(ph.in.raw) == JV_KIND_STRING
							  ? "%s of the diff on stdin" : "%s on the repository",
							  spec->program)));
	stream_out_set_trace(&ph.out, json_get_str(ph.state, "trace_id"));
	status = no_repo(&ph);
	if (!status)
		status = take_lease(&ph);
	if (status)
		goto out;
	phase_note_left(&ph);
	ph.start_ms = monotonic_ms();
	jv task = json_get(ph.state, "task");
	const char *desc = json_get_str(task, "description");
	phase_emit(&ph, "phase.started", json_set(jv_object(), "task", jv_string(desc ? desc : "")));
	jv_free(task);

	phase_leave_if_output_gone(&ph);	/* (its reader gone already: no work) */
	const char *st = run_phase(&ph);
	phase_leave_if_interrupted();	/* no state: the last checkpoint stands */
	phase_toolset_close();
	if (strcmp(st, "bad_input") == 0) {
		status = cli_reject(&ph.out, NULL, ph.reason[0] ? ph.reason : "bad input");
		goto out;
	}
	account(&ph);
	long long ms = monotonic_ms() - ph.start_ms;
	jv done = json_set(json_set(jv_object(), "status", jv_string(st)), "duration_ms", jv_number((double)ms));
	if (ph.reason[0])
		done = json_set(done, "reason", jv_string(ph.reason));
	phase_emit(&ph, "phase.completed", done);
	ph.state = json_set(ph.state, "phase", jv_string(spec->name));
	ph.state = json_set(ph.state, "status", jv_string(st));
	if (stream_write_state(&ph.out, ph.state) < 0) {
		if (!ph.out.failed)	/* a failed output is said once, by cli_out_status */
			fprintf(stderr, "%s: %s\n", spec->program, forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else {
		status = ph.interrupted ? FORGE_EXIT_INTERRUPTED : exit_code(st);
		if (status && ph.reason[0] && ph.common.verbosity >= 0 && !ph.reported)
			phase_say(&ph, "%s: %s", st, ph.reason);   /* (a remote's, a command's words) */
	}
	ph.state = jv_null();
out:
	release_lease(&ph);
	llm_client_free(agent_fast);
	llm_client_free(agent_llm);
	agent_fast = agent_llm = NULL;
	agent_fast_tried = false;
	phase_toolset_close();
	jv_free(ph.state);
	stream_input_release(&ph.in);
	store_free(ph.store);
	config_free(ph.cfg);
	free(ph.repo);
	free(ph.task_text);
	free(options);
	return cli_finish(spec->program, cli_out_status(&ph.out, status));
}
