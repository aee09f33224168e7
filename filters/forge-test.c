/*
 * forge-test - the test phase (DESIGN.md §3): run the project's tests,
 * read what they say, rerun failures once to tell flaky from real, and ask
 * the model for the root cause and a fix of each real failure.
 *
 *   state (review approved) | forge-test [--force] [--junit FILE] | …
 *   forge-test --repo DIR                  (alone, on a repository or worktree)
 *
 * Where: the state's task.worktree when present, else the repository (or
 * linked worktree) containing --repo DIR or the current directory.
 * What: --command, else tools.test_command, else detected (project.h; a
 * detected `go test ./...` runs as `go test -json ./...`).  The command
 * runs as a whole under a time limit (tools.test_timeout_s, else
 * safety.time_s.test) in the sandbox of run_command (sandbox_job.h: the
 * scrubbed environment, writes confined to the worktree and a temp dir,
 * the network cut as sandbox.network says), since it runs the branch's
 * code; its messages untranslated (LC_MESSAGES=C.UTF-8, no LANGUAGE, the
 * rest of the locale the user's), since an environment failure is told
 * by what the system says ("No space left on device").
 * Results: a fresh JUnit report (tools.test_report or the usual places),
 * else the output (testrun.h), else the exit status alone (format
 * "exit_code", parsed false, a test.unparsed event).  No command, or one
 * that ran no test (0 counted, or all skipped, none failing): tests.not_run and a warning
 * that nothing was tested, exit 0.
 */
#include "core/buf.h"
#include "data/config.h"
#include "git/git.h"
#include "engine/pipeline.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/tmpdir.h"
#include "testrun/junit.h"
#include "testrun/tap.h"
#include "llm/llm.h"
#include "app/human.h"
#include "app/phase.h"
#include "os/proc.h"
#include "data/project.h"
#include "data/schema.h"
#include "os/sandbox.h"
#include "os/sandbox_job.h"
#include "testrun/testrun.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


enum { OPT_FORCE = 256, OPT_JUNIT, OPT_COMMAND };

#define OUT_CAP (8u << 20)          /* output kept from the test command */
#define FAILURE_OUTPUT_MAX 8000     /* per failure in the state (its tail) */
#define FAILURE_MESSAGE_MAX 4000    /* per failure in the state (its head) */
#define FAILURES_LISTED 200         /* failures in the state; the rest are counted */
#define PROMPT_OUTPUT_MAX 4000      /* per failure in the prompt */
#define RERUN_BATCHES_MAX 8         /* reruns by name of one run's failures */
#define EVENT_NAMES_MAX 1000        /* test names listed in one test.rerun event */
#define PROMPT_MAX (120u << 10)
#define SOURCE_READ_MAX (1u << 20)  /* bytes read of a failure's source file */
/* tests.not_run, the run's summary and the warning when nothing ran */
#define NOT_RUN "no test command (set tools.test_command)"
/* … and when the command ran, and no test with it (ctest's "No tests were
 * found!!!", pytest's "no tests ran"): before, "1 passed" or "0 passed"
 * and no warning, a run shown as tested */
#define NONE_RAN "the test command ran no test (add tests, or set tools.test_command)"
/* … and when every test it ran was skipped (pytest's "3 skipped", a
 * missing dependency's skip markers): no test passed, so none says the
 * change works */
#define ALL_SKIPPED "every test the command ran was skipped (see why they skip, or set tools.test_command)"

struct analysis {
	char *root_cause, *fix;
	double confidence;
};

struct tst {
	bool force;
	const char *junit_out;
	const char *command_opt;
	char *dir;
	char *command;
	const char *source;
	long timeout_ms;
	struct testrun run;
	struct analysis *an;        /* parallel to run.cases */
	bool parsed;
	int exit_code;
	bool timed_out;
	long duration_ms;
	char *report;               /* the JUnit report read, or NULL */
	jv rerun;                   /* {command, by_name, exit_code, duration_ms} or null */
	jv reports;                 /* the JUnit reports read (an array), or null */
	char guard_msg[768];
	struct sandbox_policy *policy;  /* the test command's sandbox */
	char *tmp;                      /* its HOME and TMPDIR, shared by the rerun */
	bool warned_unconfined;
	bool warned_unread;             /* report_unread said (once: the rerun reads them again) */
	const char *not_run;            /* NOT_RUN, NONE_RAN or NULL: why nothing was tested */
	char *analysis_error;           /* why the analysis call failed (the phase fails), or NULL */
	bool in_run;                    /* dir is the state's task.worktree: a run's */
	jv untracked;                   /* its untracked files before the test command (cleaned) */
};

/* ---- where and what ---------------------------------------------------------- */

static bool is_dir(const char *p)
{
	struct stat st;
	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The top of the working tree containing start (its ".git" dir or file). */
static char *worktree_top(const char *start)
{
	char *p = realpath(start, NULL);
	struct buf probe = BUF_INIT;

	while (p) {
		struct stat st;
		buf_reset(&probe);
		buf_addf(&probe, "%s/.git", p);
		if (stat(probe.buf, &st) == 0)
			break;
		char *slash = strrchr(p, '/');
		if (!slash || slash == p) {
			free(p);
			p = NULL;
			break;
		}
		*slash = '\0';
	}
	buf_release(&probe);
	return p;
}

static char *work_dir(struct phase *ph, bool *in_run)
{
	jv task = json_get(ph->state, "task");
	const char *wt = json_get_str(task, "worktree");
	char *dir = NULL;

	if (wt && is_dir(wt))
		dir = realpath(wt, NULL);
	*in_run = dir != NULL;
	jv_free(task);
	if (!dir)
		dir = worktree_top(ph->common.repo ? ph->common.repo : ".");
	if (!dir && ph->repo)
		dir = xstrdup(ph->repo);
	if (!dir)
		dir = realpath(ph->common.repo ? ph->common.repo : ".", NULL);
	return dir;
}

/* Run the test command in dir under the sandbox (sandbox_job.h): the
 * code it runs comes from the worktree.  Untranslated: the environment
 * signatures (testrun_env_signature) are the system's English messages;
 * under de_DE.UTF-8 a full disk was a real failure, sent back to implement
 * for the model to fix. */
static int run(struct phase *ph, struct proc_result *res, const char *command, const char *dir,
	       long timeout_ms)
{
	struct tst *t = ph->payload;
	struct sandbox_job job = {
		.policy = t->policy,
		.command = command,
		.root = dir,
		.tmp = t->tmp,
		.timeout_ms = timeout_ms,
		.output_cap = OUT_CAP,
		.cut_count = tap_failing_line,
		.untranslated = true,
	};
	jv unconfined;
	int rc = sandbox_job_run(res, &unconfined, &job);

	if (jv_get_kind(unconfined) == JV_KIND_ARRAY && !t->warned_unconfined) {
		t->warned_unconfined = true;
		phase_emit(ph, "sandbox.unconfined", json_set(json_set(jv_object(), "command", jv_string(command)),
							       "missing", unconfined));
	} else {
		jv_free(unconfined);
	}
	return rc;
}

/* Append the report at path to xml (up to its cap): 0, or -1 with a
 * message (forge_error) when it could not be read whole.  A report beneath
 * dir is read as the file tools read: the tests that wrote it may be the
 * model's code, and a symlink they left among the reports to a file
 * outside is not followed out by this unconfined process.  One elsewhere
 * (an absolute tools.test_report) is the user's to name. */
static int read_report(struct buf *xml, const char *dir, const char *path)
{
	size_t n = strlen(dir), room = xml->max - xml->len;
	char chunk[65536];
	size_t got;
	int rc = 0;

	if (!strncmp(path, dir, n) && path[n] == '/') {
		struct sandbox_root *root = NULL;
		struct buf one = BUF_INIT;

		if (sandbox_root_open(&root, dir) < 0 || sandbox_read_file(&one, root, path + n + 1, room) < 0)
			rc = -1;
		else
			buf_add(xml, one.buf ? one.buf : "", one.len);
		sandbox_root_free(root);
		buf_release(&one);
		return rc;
	}
	/* a regular file only: opening a FIFO would wait for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	FILE *f = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;

	if (!f) {
		rc = forge_error("'%s': %s", path, fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (buf_add(xml, chunk, got) < 0) {
			rc = forge_error("'%s': too large (limit %zu bytes)", path, room);
			break;
		}
	fclose(f);
	return rc;
}

/* Said when a report the run wrote could not be read (too large, not
 * readable, not JUnit XML; once a run: the rerun reads them again), where
 * its results come from instead: the other reports, or the test
 * command's output, which may say less (before: silently). */
static void report_unread(struct phase *ph, struct tst *t, const char *report, const char *why,
			  bool from_output)
{
	if (t->warned_unread)
		return;
	t->warned_unread = true;
	phase_say(ph, "warning: the test report %s could not be read (%s): the results come from %s", report, why,
		  from_output ? "the test command's output" : "the other reports");
	phase_emit(ph, "test.report_unread", json_set(json_set(json_set(jv_object(), "report", jv_string(report)),
							       "error", jv_string(why)),
						      "results_from", jv_string(from_output ? "output" : "reports")));
}

/* Read the results of a run: the JUnit reports it wrote (not in `before`,
 * the reports' stamps before it ran; consumed), all of them as one, else
 * its output.  1 parsed, 0 not; *report_out the first report used, and
 * *reports_out (may be NULL) all of them (an array). */
static int read_results(struct testrun *out, char **report_out, jv *reports_out, struct phase *ph,
			struct tst *t, const struct proc_result *res, jv before)
{
	jv reports = testrun_find_junit(t->dir, config_get_str(ph->cfg, "tools.test_report"), before,
					t->junit_out);
	int n = jv_array_length(jv_copy(reports));
	struct buf xml = BUF_INIT;

	*report_out = NULL;
	testrun_init(out);
	buf_init(&xml, 64u << 20);
	int unread = 0;         /* reports that could not be read whole */

	jv_array_foreach(reports, i, path) {
		if (read_report(&xml, t->dir, jv_string_value(path)) < 0 && unread++ == 0)
			report_unread(ph, t, jv_string_value(path), forge_last_error(), n == 1);
		buf_addch(&xml, '\n');   /* (the next document starts on a line of its own) */
		jv_free(path);
	}
	if (n > unread && junit_parse(out, xml.buf, xml.len) == 1) {
		jv first = jv_array_get(jv_copy(reports), 0);
		testrun_relative_files(out, t->dir);
		*report_out = xstrdup(jv_string_value(first));
		jv_free(first);
		if (reports_out)
			*reports_out = reports;
		else
			jv_free(reports);
		buf_release(&xml);
		return 1;
	}
	if (n > unread) {
		/* (what junit_parse said) */
		jv first = jv_array_get(jv_copy(reports), 0);

		report_unread(ph, t, jv_string_value(first), forge_last_error(), true);
		jv_free(first);
		testrun_release(out);
		testrun_init(out);
	}
	jv_free(reports);
	buf_release(&xml);
	int rc = testrun_parse(out, res->out.buf, res->out.len);
	/* (before: a "not ok" in the cut middle of output over OUT_CAP was
	 * lost, and a producer that exits 0 passed, hunt26) */
	if (rc == 1)
		tap_cut_failures(out, res->out_cut_counted);
	/* (node --test's TAP says where a test failed by its absolute path:
	 * the repository's name for it, as pytest's and the README's) */
	if (rc == 1)
		testrun_relative_files(out, t->dir);
	return rc;
}

/* The last `max` bytes of s, on a UTF-8 boundary. */
static const char *tail(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return s;
	s += n - max;
	while ((*s & 0xC0) == 0x80)
		s++;
	return s;
}

/* The last max bytes of s[0..*len) (from a UTF-8 character's start), a
 * NUL byte in it kept: *len becomes the tail's length. */
static const char *tail_n(const char *s, size_t *len, size_t max)
{
	const char *end = s + *len;

	if (*len > max) {
		s = end - max;
		while (s < end && (*s & 0xC0) == 0x80)
			s++;
	}
	*len = (size_t)(end - s);
	return s;
}

/* The message of a test command that failed with no output Forge reads:
 * its exit status, and for 126/127 (the shell's "cannot execute", "not
 * found") the output's last line, which names what is missing (before:
 * "exited with status 127" alone in the summary and forge show, the
 * "go: not found" only in the failure's output).  Into msg (n bytes). */
static void not_found_msg(char *msg, size_t n, int code, const char *out, size_t len)
{
	size_t end = len, start;

	snprintf(msg, n, "the test command exited with status %d", code);
	if (code != 126 && code != 127)
		return;
	while (end > 0 && (out[end - 1] == '\n' || out[end - 1] == '\r' || out[end - 1] == ' '))
		end--;
	start = end;
	while (start > 0 && out[start - 1] != '\n')
		start--;
	if (end == start)
		return;
	size_t used = strlen(msg), room = n - used;
	int w = snprintf(msg + used, room, " (%s: ", code == 127 ? "a command was not found" : "a command could not be run");
	if (w < 0 || (size_t)w + 2 >= room)
		return;
	used += (size_t)w;
	size_t take = end - start;
	if (take > n - used - 2)
		take = n - used - 2;
	/* (not cut inside a UTF-8 character; control characters shown as spaces) */
	while (take > 0 && take < end - start && (out[start + take] & 0xC0) == 0x80)
		take--;
	for (size_t k = 0; k < take; k++) {
		unsigned char c = (unsigned char)out[start + k];
		msg[used++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	msg[used++] = ')';
	msg[used] = '\0';
}

/* "make: " or "make[1]: " starts p[0..len). */
static bool make_line(const char *p, size_t len)
{
	size_t i = 0;

	while (i < len && p[i] != ':' && p[i] != '[' && p[i] != ' ')
		i++;
	if (i < 4 || memcmp(p + i - 4, "make", 4) != 0)
		return false;
	while (i < len && p[i] != ':' && p[i] != ' ')
		i++;
	return i + 1 < len && p[i] == ':' && p[i + 1] == ' ';
}

/* The line of out that names a program missing (the shell's "sh: 1: go:
 * not found", bash's "… command not found", "… Permission denied" for
 * 126, Rust's "(os error 2)", make's "make: go: No such file or
 * directory" for a recipe it ran without a shell): the last such line,
 * else the last line that is not empty, into line (n bytes, control
 * characters as spaces); and the program's name ("go", "./run-tests") into
 * name, or "" when the line does not give one. */
static void missing_line(char *line, size_t n, char *name, size_t nn, const char *out)
{
	static const char *const ends[] = { ": command not found", ": not found", ": Permission denied",
					    ": Is a directory", ": cannot execute binary file",
					    ": No such file or directory" /* make's alone */ };
	const size_t make_only = 5;
	const char *best = NULL, *last = NULL;
	size_t best_len = 0, last_len = 0;

	line[0] = name[0] = '\0';
	for (const char *p = out ? out : ""; *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' '))
			len--;
		if (len > 0) {
			last = p;
			last_len = len;
			for (size_t k = 0; k < sizeof ends / sizeof *ends; k++) {
				size_t el = strlen(ends[k]);
				if (len > el && memcmp(p + len - el, ends[k], el) == 0 &&
				    (k != make_only || make_line(p, len))) {
					best = p;
					best_len = len;
					break;
				}
			}
			if (len >= 12 && memmem(p, len, "(os error 2)", 12)) {
				best = p;
				best_len = len;
			}
		}
		p = e ? e + 1 : p + strlen(p);
	}
	if (!best) {
		best = last;
		best_len = last_len;
	}
	if (!best)
		return;
	size_t take = best_len < n - 1 ? best_len : n - 1;
	while (take > 0 && take < best_len && (best[take] & 0xC0) == 0x80)
		take--;
	for (size_t k = 0; k < take; k++) {
		unsigned char c = (unsigned char)best[k];
		line[k] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	line[take] = '\0';
	/* the word before the shell's ending: "sh: 1: go: not found" → go */
	for (size_t k = 0; k < sizeof ends / sizeof *ends; k++) {
		size_t el = strlen(ends[k]), len = strlen(line);
		if (len <= el || strcmp(line + len - el, ends[k]) != 0 || (k == make_only && !make_line(line, len)))
			continue;
		size_t end = len - el, start = end;
		while (start > 0 && !(start >= 2 && line[start - 2] == ':' && line[start - 1] == ' '))
			start--;
		if (end > start && end - start < nn && !memchr(line + start, ' ', end - start)) {
			memcpy(name, line + start, end - start);
			name[end - start] = '\0';
		}
		break;
	}
}

/* ---- classification ------------------------------------------------------------ */

static bool failing(const struct testcase *c)
{
	return c->status == TC_FAIL;
}

static const char *env_signature(const struct testcase *c, const struct tst *t, const struct proc_result *res)
{
	const char *sig = NULL;
	/* the runner's own failure (the whole command, a collection or setup
	 * error), not a test's assertion or traceback */
	bool whole = c->synthetic || c->error;

	if (c->output)
		sig = testrun_env_signature(c->output, strlen(c->output), whole);
	if (!sig && c->message)
		sig = testrun_env_signature(c->message, strlen(c->message), whole);
	if (!sig && c->synthetic && res) {
		if (t->exit_code == 127 || t->exit_code == 126)
			sig = "command not found";
		else
			sig = testrun_env_signature(res->out.buf, res->out.len, true);
	}
	return sig;
}

/* list with name appended, while it holds fewer than EVENT_NAMES_MAX;
 * *more counts the names left out. */
static jv list_name(jv list, long *more, const char *name)
{
	if (jv_array_length(jv_copy(list)) >= EVENT_NAMES_MAX) {
		(*more)++;
		return list;
	}
	return jv_array_append(list, jv_string(name));
}

/* Rerun the failing cases idx[0..n) with by_name (NULL: the whole
 * command) and mark the ones that pass as flaky: batch of batches. */
static void rerun_batch(struct phase *ph, struct tst *t, const char *by_name, const size_t *idx, size_t n,
			int batch, int batches)
{
	const char *cmd = by_name ? by_name : t->command;
	struct proc_result res;
	jv before = testrun_junit_snapshot(t->dir, config_get_str(ph->cfg, "tools.test_report"));
	struct testrun again;
	char *report = NULL;

	int rc = run(ph, &res, cmd, t->dir, t->timeout_ms);
	bool parsed = rc == 0 && read_results(&again, &report, NULL, ph, t, &res, jv_copy(before)) == 1;
	jv_free(before);
	if (!parsed && rc == 0)
		testrun_release(&again);
	if (rc != 0)
		testrun_init(&again);
	bool clean = rc == 0 && res.exit_code == 0 && !res.timed_out && again.failed == 0;
	jv flaky = jv_array(), still = jv_array();
	long flaky_more = 0, still_more = 0;

	for (size_t k = 0; k < n; k++) {
		struct testcase *c = &t->run.cases[idx[k]];
		const struct testcase *a = NULL;
		enum tc_match m = parsed && !c->synthetic ? testrun_match(&again, c, &a) : TC_ABSENT;
		/* A rerun by name that ran no test at all says nothing of this
		 * one: a name the runner's filter does not select (cargo's
		 * "x - should panic", a ctest name with a space) exits 0 with
		 * "0 passed", and was counted a pass: a real failure, flaky. */
		bool ran_none = by_name && (!parsed || again.total - again.skipped <= 0);
		/* Matched by identity, not by bare name: the passing test of the
		 * same name in another file is not this one (before: the first of
		 * that name was taken, a failure called flaky).  Several that fit,
		 * none failing: which is this one is unknown, so it stays real. */
		bool passed = m == TC_FOUND ? a->status == TC_PASS : m == TC_ABSENT && clean && !ran_none;
		if (passed) {
			c->status = TC_PASS;
			c->flaky = true;
			c->classification = "flaky";
			t->run.failed--;
			t->run.passed++;
			t->run.flaky++;
			flaky = list_name(flaky, &flaky_more, c->name);
		} else {
			still = list_name(still, &still_more, c->name);
		}
	}
	jv ev = jv_object();
	ev = json_set(ev, "command", jv_string(cmd));
	ev = json_set(ev, "by_name", jv_bool(by_name != NULL));
	ev = json_set(ev, "exit_code", rc == 0 ? jv_number(res.exit_code) : jv_null());
	ev = json_set(ev, "duration_ms", jv_number((double)res.duration_ms));
	if (batches > 1)
		ev = json_set(ev, "batches", jv_number(batches));
	if (batch == 0) {
		jv_free(t->rerun);
		t->rerun = jv_copy(ev);
	} else {
		/* the state's one rerun: the first batch's command, the time of
		 * all, and a batch that did not start or failed shows */
		double ms = json_get_num(t->rerun, "duration_ms", 0) + (double)res.duration_ms;
		t->rerun = json_set(t->rerun, "duration_ms", jv_number(ms));
		if (json_get_num(t->rerun, "exit_code", -1) == 0)
			t->rerun = json_set(t->rerun, "exit_code", rc == 0 ? jv_number(res.exit_code) : jv_null());
	}
	if (batches > 1)
		ev = json_set(ev, "batch", jv_number(batch + 1));
	ev = json_set(ev, "flaky", flaky);
	ev = json_set(ev, "still_failing", still);
	/* the names past EVENT_NAMES_MAX are counted: a list of 100000
	 * names of 1 KiB is over the stream's line limit */
	if (flaky_more)
		ev = json_set(ev, "flaky_not_listed", jv_number((double)flaky_more));
	if (still_more)
		ev = json_set(ev, "still_failing_not_listed", jv_number((double)still_more));
	if (rc != 0) {
		/* (before: said nowhere but in this event's exit_code null, and
		 * every failure stayed "real" as if rerun) */
		ev = json_set(ev, "error", jv_string(forge_last_error()));
		phase_say(ph, "the rerun of %zu failing test%s could not start (%s): they count as failing", n,
			  n == 1 ? "" : "s", forge_last_error());
	}
	phase_emit(ph, "test.rerun", ev);
	testrun_release(&again);
	free(report);
	proc_result_release(&res);
}

/* Rerun the failures once; mark the ones that pass as flaky.  By name
 * where the runner selects by name, in batches of what fits one command
 * (testrun_rerun_command); all of them with the whole command otherwise,
 * or when they need more than RERUN_BATCHES_MAX batches. */
static void rerun_failures(struct phase *ph, struct tst *t)
{
	const char **names = xcalloc(t->run.ncases + 1, sizeof *names);
	size_t *idx = xcalloc(t->run.ncases + 1, sizeof *idx);
	char *cmds[RERUN_BATCHES_MAX];
	size_t from[RERUN_BATCHES_MAX + 1];
	size_t n = 0, done = 0;
	int batches = 0;
	bool all_named = true;

	for (size_t i = 0; i < t->run.ncases; i++) {
		const struct testcase *c = &t->run.cases[i];
		if (!failing(c))
			continue;
		if (c->synthetic)
			all_named = false;
		idx[n] = i;
		names[n++] = c->name;
	}
	while (all_named && done < n && batches < RERUN_BATCHES_MAX) {
		size_t taken = 0;
		char *cmd = testrun_rerun_command(&taken, t->command, names + done, n - done);
		if (!cmd)
			break;
		from[batches] = done;
		cmds[batches++] = cmd;
		done += taken;
	}
	if (done < n) {
		/* not all of them by name: the whole command reruns them all */
		for (int b = 0; b < batches; b++)
			free(cmds[b]);
		if (all_named && batches > 0)
			phase_progress(ph, "%zu failing tests are too many to rerun by name: rerunning the whole command",
				       n);
		batches = 1;
		cmds[0] = NULL;
		from[0] = 0;
	}
	from[batches] = n;
	phase_progress(ph, "rerunning %zu failing test%s%s", n, n == 1 ? "" : "s",
		       batches > 1 ? " in batches (one command cannot name them all)" : "");
	for (int b = 0; b < batches; b++) {
		rerun_batch(ph, t, cmds[b], idx + from[b], from[b + 1] - from[b], b, batches);
		free(cmds[b]);
	}
	free(idx);
	free(names);
}

static void classify(struct tst *t, const struct proc_result *res)
{
	for (size_t i = 0; i < t->run.ncases; i++) {
		struct testcase *c = &t->run.cases[i];
		/* a report's own flaky ones (<flakyFailure>: failed, passed on its rerun) */
		if (c->flaky && !c->classification)
			c->classification = "flaky";
		if (!failing(c))
			continue;
		c->classification = t->timed_out && c->synthetic ? "environment"
				  : env_signature(c, t, res) ? "environment" : "real";
	}
}

/* ---- analysis by the model --------------------------------------------------------- */

/* report_failure_analysis, its input schema schemas/tools/report_failure_analysis.json */
static jv analysis_tool(void)
{
	return JV_ARRAY(schema_tool_spec("report_failure_analysis"));
}

/* Lines around `line` of file (relative to dir, or absolute inside dir).
 * Opened as the file tools read (sandbox_open_read: a regular file, no
 * symlink out of dir): the tests that named it are the branch's code, and
 * a FIFO they left there blocked this unconfined process for ever in its
 * open; at most SOURCE_READ_MAX bytes are read. */
static void add_source(struct buf *b, const char *dir, const char *file, long line)
{
	struct sandbox_root *root = NULL;
	size_t dl = strlen(dir), got = 0;
	const char *rel = file;
	struct stat st;
	int fd = -1;
	FILE *f = NULL;

	if (!file || line <= 0)
		return;
	if (file[0] == '/' && (strncmp(file, dir, dl) != 0 || file[dl] != '/'))
		return;
	if (file[0] == '/')
		rel = file + dl + 1;
	if (sandbox_root_open(&root, dir) < 0 || sandbox_open_read(&fd, &st, root, rel) < 0 ||
	    !(f = fdopen(fd, "r")))
		goto out;
	fd = -1;
	char ln[512];
	long no = 0;
	buf_addf(b, "source %s around line %ld:\n```\n", file, line);
	while (got < SOURCE_READ_MAX && fgets(ln, sizeof ln, f) && no < line + 8) {
		size_t l = strlen(ln);
		bool whole = l && ln[l - 1] == '\n';
		got += l;
		if (whole)
			no++;
		if (no >= line - 8 && no <= line + 8)
			buf_addf(b, "%s%5ld  %s%s", no == line ? ">" : " ", no, ln, whole ? "" : "\n");
		while (!whole && got < SOURCE_READ_MAX && fgets(ln, sizeof ln, f)) {
			l = strlen(ln);
			got += l;
			whole = l && ln[l - 1] == '\n';
		}
		if (!whole)
			no++;
	}
	buf_adds(b, "```\n");
out:
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	sandbox_root_free(root);
}

static char *analysis_prompt(struct phase *ph, struct tst *t)
{
	struct buf b = BUF_INIT;
	jv task = json_get(ph->state, "task");
	const char *desc = json_get_str(task, "description");
	int k = 0;

	buf_addf(&b, "Task: %s\nTest command: %s\n\nFailing tests:\n", desc ? desc : "(none)", t->command);
	for (size_t i = 0; i < t->run.ncases && b.len < PROMPT_MAX; i++) {
		const struct testcase *c = &t->run.cases[i];
		if (!failing(c) || strcmp(c->classification, "real") != 0)
			continue;
		buf_addf(&b, "\n### %d. %s\n", ++k, c->name);
		if (c->file && c->line > 0)
			buf_addf(&b, "file: %s:%ld\n", c->file, c->line);
		else if (c->file)
			buf_addf(&b, "file: %s\n", c->file);
		if (c->message)
			buf_addf(&b, "message: %s\n", c->message);
		if (c->output)
			buf_addf(&b, "output:\n```\n%s\n```\n", tail(c->output, PROMPT_OUTPUT_MAX));
		add_source(&b, t->dir, c->file, c->line);
	}
	jv changes = json_get(ph->state, "changes");
	const char *diff = json_get_str(changes, "diff");
	if (diff && *diff)
		buf_addf(&b, "\nThe change under test:\n```diff\n%.20000s\n```\n", diff);
	jv_free(changes);
	jv_free(task);
	return buf_detach(&b, NULL);
}

static void analyse(struct phase *ph, struct tst *t)
{
	size_t real = 0;
	struct llm_client *llm = NULL;
	struct llm_request req;
	struct llm_response resp;
	char *sys = NULL, *prompt = NULL;

	for (size_t i = 0; i < t->run.ncases; i++)
		real += failing(&t->run.cases[i]) && strcmp(t->run.cases[i].classification, "real") == 0;
	if (real == 0 || phase_money_spent(NULL, ph, "test.analysis_skipped", "the failure analysis"))
		return;
	if (phase_llm(&llm, ph, true) < 0) {
		phase_emit(ph, "test.analysis_skipped",
			   json_set(json_set(jv_object(), "reason", jv_string("no model configured")), "error",
				    jv_string(forge_last_error())));
		return;
	}
	if (phase_system_prompt(&sys, ph, NULL, "test") < 0)
		sys = xstrdup("Find the root cause of each failing test and suggest a fix.");
	prompt = analysis_prompt(ph, t);
	llm_request_init(&req);
	req.system = sys;
	req.messages = jv_array_append(jv_array(), llm_msg_user(prompt));
	req.tools = analysis_tool();
	req.tool_choice = LLM_TOOL_FORCED;
	req.tool_name = "report_failure_analysis";
	req.max_tokens = (int)config_get_num(ph->cfg, "llm.max_tokens");
	req.temperature = config_get_num(ph->cfg, "llm.temperature");
	phase_progress(ph, "analysing %zu failure%s with %s", real, real == 1 ? "" : "s", llm_client_model(llm));
	int rc = llm_call(&resp, llm, &req);
	/* (a call that broke off after its usage arrived was billed for it) */
	if (rc == 0 || resp.usage_seen) {
		ph->tokens += llm_usage_tokens(&resp.usage);
		if (resp.cost_known)
			ph->cost_usd += resp.cost_usd;
		else
			ph->cost_known = false;
		phase_llm_called(ph, llm, &resp);
	}
	if (rc < 0) {
		/* A dependency's failure, as in every other phase: the phase
		 * fails (exit 5) and a resume runs it again.  (Before: the
		 * failures kept confidence 0, read as "none fixable", a gate
		 * that --auto-approve passed, and a run "completed" with its
		 * failing tests deployed, hunt68 #1.) */
		t->analysis_error = llm_client_failure(llm);
		phase_emit(ph, "test.analysis_failed", json_set(jv_object(), "error", jv_string(forge_last_error())));
		goto out;
	}
	jv list = resp.ncalls > 0 ? json_get(resp.calls[0].input, "analyses") : jv_null();
	int matched = 0;
	if (jv_get_kind(list) == JV_KIND_ARRAY) {
		jv_array_foreach(list, k, item) {
			const char *name = json_get_str(item, "test");
			for (size_t i = 0; name && i < t->run.ncases; i++) {
				struct testcase *c = &t->run.cases[i];
				if (!failing(c) || strcmp(c->name, name) != 0 || strcmp(c->classification, "real") != 0 ||
				    t->an[i].root_cause)
					continue;
				const char *rcause = json_get_str(item, "root_cause");
				const char *fix = json_get_str(item, "suggested_fix");
				double conf = json_get_num(item, "confidence", 0);
				t->an[i].root_cause = xstrdup(rcause ? rcause : "");
				t->an[i].fix = xstrdup(fix ? fix : "");
				t->an[i].confidence = conf < 0 ? 0 : conf > 1 ? 1 : conf;
				matched++;
			}
			jv_free(item);
		}
	}
	jv_free(list);
	jv ev = json_set(json_set(jv_object(), "failures", jv_number((double)real)), "analysed", jv_number(matched));
	ev = json_set(ev, "model", json_str_or_null(llm_client_model(llm)));
	/* (the cost is on the call's llm.called: summed once) */
	stream_emit_full(&ph->out, "test.analyzed", ev, jv_null(), (long long)resp.duration_ms);
out:
	llm_response_release(&resp);
	llm_request_release(&req);
	free(prompt);
	free(sys);
	llm_client_free(llm);
}

/* ---- the result ----------------------------------------------------------------------- */

/* The first `max` bytes of s (to a UTF-8 character's start) and "[…]",
 * in *scratch (freed by the caller), or s when it is not longer. */
static const char *head(char **scratch, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return s;
	while (n > 0 && max > 0 && (s[max] & 0xC0) == 0x80)
		max--;
	free(*scratch);
	*scratch = xmalloc(max + sizeof "[…]");
	memcpy(*scratch, s, max);
	memcpy(*scratch + max, "[…]", sizeof "[…]");
	return *scratch;
}

static jv failure_json(const struct testcase *c, const struct analysis *a)
{
	jv f = jv_object();
	char *cut = NULL;

	f = json_set(f, "test", jv_string(c->name));
	f = json_set(f, "file", json_str_or_null(c->file));
	f = json_set(f, "line", c->line > 0 ? jv_number((double)c->line) : jv_null());
	f = json_set(f, "message", jv_string(c->message ? head(&cut, c->message, FAILURE_MESSAGE_MAX) : ""));
	f = json_set(f, "output", jv_string(c->output ? tail(c->output, FAILURE_OUTPUT_MAX) : ""));
	f = json_set(f, "classification", jv_string(c->classification ? c->classification : "real"));
	f = json_set(f, "root_cause", json_str_or_null(a->root_cause));
	f = json_set(f, "suggested_fix", json_str_or_null(a->fix));
	f = json_set(f, "confidence", jv_number(a->confidence));
	free(cut);
	return f;
}

static jv tests_json(struct tst *t, jv coverage)
{
	jv s = jv_object(), f = jv_array();

	s = json_set(s, "total", jv_number((double)t->run.total));
	s = json_set(s, "passed", jv_number((double)t->run.passed));
	s = json_set(s, "failed", jv_number((double)t->run.failed));
	s = json_set(s, "skipped", jv_number((double)t->run.skipped));
	s = json_set(s, "flaky", jv_number((double)t->run.flaky));
	/* Up to FAILURES_LISTED, past it the failing ones first, then the flaky: the
	 * state is one line, under the stream's limit (16 MiB) that every
	 * next filter holds it to; 2500 failures of 8 KiB were 20 MB, refused
	 * by forge-deploy and lost to the supervisor, a failing test phase
	 * made a failed run.  The rest are counted. */
	long listed = 0, more_failing = 0, more_flaky = 0, all = 0;
	for (size_t i = 0; i < t->run.ncases; i++)
		all += failing(&t->run.cases[i]) || t->run.cases[i].flaky;
	/* (within the cap, in the order they ran) */
	bool split = all > FAILURES_LISTED;
	for (int pass = 0; pass < (split ? 2 : 1); pass++) {
		for (size_t i = 0; i < t->run.ncases; i++) {
			const struct testcase *c = &t->run.cases[i];
			bool want = pass == 1 ? !failing(c) && c->flaky : failing(c) || (!split && c->flaky);
			if (!want)
				continue;
			if (listed < FAILURES_LISTED) {
				f = jv_array_append(f, failure_json(c, &t->an[i]));
				listed++;
			} else {
				*(pass == 0 ? &more_failing : &more_flaky) += 1;
			}
		}
	}
	jv o = jv_object();
	if (t->command)
		o = json_set(o, "command", jv_string(t->command));
	o = json_set(o, "format", jv_string(t->parsed ? t->run.format : t->command ? "exit_code" : "none"));
	o = json_set(o, "parsed", jv_bool(t->parsed));
	o = json_set(o, "summary", s);
	o = json_set(o, "duration_ms", jv_number((double)t->duration_ms));
	if (t->command) {
		o = json_set(o, "exit_code", jv_number(t->exit_code));
		o = json_set(o, "timed_out", jv_bool(t->timed_out));
	}
	o = json_set(o, "failures", f);
	o = json_set(o, "coverage", coverage);
	o = json_set(o, "rerun", jv_copy(t->rerun));
	o = json_set(o, "report", json_str_or_null(t->report));
	if (jv_get_kind(t->reports) == JV_KIND_ARRAY && jv_array_length(jv_copy(t->reports)) > 1)
		o = json_set(o, "reports", jv_copy(t->reports));
	struct buf note = BUF_INIT;
	buf_adds(&note, t->run.note);
	if (t->run.truncated) {
		/* the cases past the cap are counted in the summary, not listed */
		long dropped = t->run.dropped[TC_PASS] + t->run.dropped[TC_FAIL] + t->run.dropped[TC_SKIP];
		buf_addf(&note, "%sonly the first %d test cases are kept: %ld more counted (%ld failing)",
			 note.len ? "; " : "", TESTRUN_MAX_CASES, dropped, t->run.dropped[TC_FAIL]);
		o = json_set(o, "truncated", jv_true());
	}
	if (more_failing + more_flaky > 0) {
		const char *where = t->report ? t->report : t->junit_out;
		buf_addf(&note, "%sonly the first %d failures are listed: %ld more counted in the summary "
			 "(%ld failing, %ld flaky); all of them are in %s%s", note.len ? "; " : "", FAILURES_LISTED,
			 more_failing + more_flaky, more_failing, more_flaky, where ? where : "the test command's output",
			 where ? "" : " (run it to see them)");
		o = json_set(o, "failures_omitted", jv_number((double)(more_failing + more_flaky)));
	}
	if (note.len)
		o = json_set(o, "note", jv_string(note.buf));
	buf_release(&note);
	if (t->not_run)
		o = json_set(o, "not_run", jv_string(t->not_run));
	return o;
}

static void write_junit(struct phase *ph, struct tst *t)
{
	FILE *f = fopen(t->junit_out, "w");
	int rc = f ? junit_write(f, &t->run, t->command ? t->command : "forge-test",
				 (double)t->duration_ms / 1000) : -1;
	int err = errno;

	if (f && fclose(f) != 0 && rc == 0) {
		rc = -1;
		err = errno;
	}
	if (rc < 0) {
		fprintf(stderr, "forge-test: cannot write '%s': %s\n", t->junit_out, strerror(err));
		phase_emit(ph, "test.junit_failed", json_set(json_set(jv_object(), "file", jv_string(t->junit_out)),
							     "error", jv_string(strerror(err))));
		return;
	}
	phase_emit(ph, "test.junit_written", json_set(jv_object(), "file", jv_string(t->junit_out)));
}

/* ---- the phase ---------------------------------------------------------------------------- */

static const char *guard(struct phase *ph)
{
	struct tst *t = ph->payload;

	char why[512];

	/* forced, or run alone on a repository; a task alone has nothing approved */
	if (t->force || phase_alone(ph))
		return NULL;
	jv review = json_get(ph->state, "review");
	const char *decision = json_get_str(review, "decision");
	if (phase_input_unfinished(ph, why, sizeof why) || phase_part_stale(ph, review, "review", why, sizeof why))
		snprintf(t->guard_msg, sizeof t->guard_msg, "%s: nothing approved to test; run forge-review "
			 "(and what comes before it) again, or --force", why);
	else if (!decision)
		snprintf(t->guard_msg, sizeof t->guard_msg,
			 "the changes have not been reviewed: run forge-review first, or --force");
	else if (strcmp(decision, "approve") != 0 && !json_has(review, "approved_by"))
		snprintf(t->guard_msg, sizeof t->guard_msg,
			 "the review did not approve the changes (decision '%s'); use --force to test anyway", decision);
	else
		t->guard_msg[0] = '\0';
	jv_free(review);
	return t->guard_msg[0] ? t->guard_msg : NULL;
}

/* The reason of a run that made no change (changes.empty) says what was
 * tested: the commit it started from, not a change of its. */
static const char *tested_base(struct phase *ph, const char *status)
{
	size_t n = strlen(ph->reason);

	if (jv_get_kind(ph->in.state) == JV_KIND_OBJECT && pipeline_changes_empty(ph->state))
		snprintf(ph->reason + n, sizeof ph->reason - n, " (the run made no change: its base commit was tested)");
	return status;
}

static const char *finish(struct phase *ph, struct tst *t, jv coverage)
{
	if (t->junit_out)
		write_junit(ph, t);
	jv result = tests_json(t, coverage);
	/* the commit tested (pinned, pins_commit), so that forge-deploy can
	 * tell these tests from an earlier implement's */
	jv commit = json_get_path(ph->state, "changes.commit");
	if (jv_get_kind(ph->in.state) == JV_KIND_OBJECT && jv_get_kind(commit) == JV_KIND_STRING)
		result = json_set(result, "commit", commit);
	else
		jv_free(commit);
	phase_set(ph, "tests", result);
	if (t->not_run && ph->common.verbosity >= 0)
		phase_say(ph, "warning: nothing was tested: %s", t->not_run);   /* (the command's words) */
	if (ph->report) {
		jv tests = json_get(ph->state, "tests");
		human_tests(stderr, ph->spec->program, tests, human_colour(stderr));
		jv_free(tests);
	}
	long real = 0, env = 0;
	for (size_t i = 0; i < t->run.ncases; i++) {
		const struct testcase *c = &t->run.cases[i];
		if (failing(c) && c->classification && strcmp(c->classification, "environment") == 0)
			env++;
		else if (failing(c))
			real++;
	}
	if (t->run.failed > 0 || real + env > 0) {
		phase_reason(ph, "%ld of %ld test%s failed (%ld real, %ld environment)%s", t->run.failed, t->run.total,
			     t->run.total == 1 ? "" : "s", real, env, t->run.flaky ? "; flaky ones passed on rerun" : "");
		return tested_base(ph, "rejected");
	}
	if (!t->command)
		return "ok";
	if (t->not_run)
		return tested_base(ph, "ok");
	if (t->run.flaky)
		phase_reason(ph, "%ld test%s passed (%ld flaky: failed, then passed on rerun)", t->run.passed,
			     t->run.passed == 1 ? "" : "s", t->run.flaky);
	else
		phase_reason(ph, "%ld test%s passed", t->run.passed, t->run.passed == 1 ? "" : "s");
	return tested_base(ph, "ok");
}

/*
 * The test command could not run at all: every failure is the whole
 * command's (synthetic: no test named), classified environment, for a
 * program not found or not runnable -- exit status 127 or 126, or the
 * shell's, make's or Rust's words for it in the output (make running a
 * missing go: exit 2, "sh: 1: go: not found" through the shell, "make: go:
 * No such file or directory" without one) -- and it did not time out.  Then
 * nothing was tested and nothing a bounce or a person's yes can fix: the
 * phase fails (exit 5, a dependency of the phase missing), and once the
 * program is installed a resume runs the tests again (before: a gate
 * whose yes deployed untested code and whose no ended the run).  The
 * reason says what is missing and how to go on.
 */
static bool could_not_run(struct phase *ph, const struct tst *t)
{
	const struct testcase *w = NULL;
	long env = 0;
	char line[300], name[128];

	if (t->timed_out)
		return false;
	for (size_t i = 0; i < t->run.ncases; i++) {
		const struct testcase *c = &t->run.cases[i];
		if (!failing(c))
			continue;
		if (!c->synthetic || !c->classification || strcmp(c->classification, "environment") != 0)
			return false;
		w = c;
		env++;
	}
	if (!w || env != t->run.failed)
		return false;
	const char *sig = t->exit_code == 127 || t->exit_code == 126 ? "command not found"
			: w->output ? testrun_env_signature(w->output, strlen(w->output), true) : NULL;
	if (!sig || (strcmp(sig, "command not found") != 0 && strcmp(sig, "missing program") != 0))
		return false;
	missing_line(line, sizeof line, name, sizeof name, w->output);

	const char *trace = json_get_str(ph->state, "trace_id");
	const char *sup = getenv("FORGE_SUPERVISOR_PID");
	char then[160];
	if (trace && sup && *sup)
		snprintf(then, sizeof then, "`forge resume %s`", trace);
	else
		snprintf(then, sizeof then, "run %s again", ph->spec->program);
	bool not_found = t->exit_code != 126;
	/* (126: there but not runnable, a script without its x bit as often
	 * as a missing interpreter) */
	const char *how = not_found ? "was not found" : "could not be run";
	const char *fix = not_found ? "install it" : "make it executable (chmod +x) or install what it needs";

	if (name[0])
		phase_reason(ph, "the tests could not run: '%s' %s (%s): %s, then %s", name, how, line, fix, then);
	else if (line[0])
		phase_reason(ph, "the tests could not run: a command %s (%s): %s, then %s", how, line, fix, then);
	else
		phase_reason(ph, "the tests could not run: the test command exited with status %d (a command %s): "
			     "%s, then %s", t->exit_code, how, fix, then);
	jv ev = json_set(jv_object(), "exit_code", jv_number(t->exit_code));
	ev = json_set(ev, "missing", name[0] ? jv_string(name) : jv_null());
	ev = json_set(ev, "line", line[0] ? jv_string(line) : jv_null());
	phase_emit(ph, "test.could_not_run", ev);
	return true;
}

/*
 * What the test command and its reruns left untracked in the run's
 * worktree (__pycache__, a built binary, the reports, once read) is
 * removed, as implement's validation removes what its commands make
 * (forge_git_clean_new()): the branch's tests do not change the branch,
 * and a later forge-implement (a bounce, a resume) does not take the
 * files for work a stopped phase left (before: "the run's worktree had
 * changes its state does not have", and a saved ref of .pyc files,
 * hunt68 #2).  A file there before the tests ran -- the model's, which
 * forge-implement committed -- stays.  Not in a checkout of the person's
 * (forge-test run alone there), where the tests leave what they leave.
 */
static void clean_run(struct phase *ph, struct tst *t)
{
	jv removed;

	if (jv_get_kind(t->untracked) != JV_KIND_OBJECT)
		return;
	removed = phase_command_after(ph, t->dir, t->untracked, "the tests");
	t->untracked = jv_null();
	if (jv_array_length(jv_copy(removed)) > 0)
		phase_emit(ph, "test.cleaned", json_set(jv_object(), "removed", removed));
	else
		jv_free(removed);
}

/*
 * What a command Forge ran in the run's worktree left there when the
 * process that ran it died before it cleaned up (a forge-test or
 * forge-implement killed, interrupted, its supervisor gone: the note of
 * forge_git_command_before() is still there) is removed before the tests
 * run again: it would otherwise count as there before them, and be taken
 * for the model's work by the next forge-implement.  forge resume does
 * this already; this is for a state run again by hand.
 */
static void recover_run(struct phase *ph, struct tst *t)
{
	if (phase_command_recover(ph, t->dir) < 0)
		phase_say(ph, "warning: what a stopped command left in the worktree was not removed: %s",
			  forge_last_error());
}

static const char *run_phase(struct phase *ph)
{
	struct tst *t = ph->payload;
	struct proc_result res;
	jv coverage = jv_null();

	t->dir = work_dir(ph, &t->in_run);
	if (!t->dir) {
		phase_reason(ph, "cannot find the directory to test: %s", strerror(errno));
		return "failed";
	}
	if (t->command_opt) {
		t->command = xstrdup(t->command_opt);
		t->source = "option";
	} else if (config_get_str(ph->cfg, "tools.test_command")) {
		t->command = xstrdup(config_get_str(ph->cfg, "tools.test_command"));
		t->source = "config";
	} else {
		t->command = project_command(t->dir, ph->cfg, "test");
		t->source = "detected";
		if (t->command && strcmp(t->command, "go test ./...") == 0) {
			free(t->command);
			t->command = xstrdup("go test -json ./...");
		}
	}
	if (!t->command) {
		t->not_run = NOT_RUN;
		phase_emit(ph, "test.no_command",
			   json_set(json_set(jv_object(), "dir", jv_string(t->dir)), "reason",
				    jv_string("no test command configured (tools.test_command) or detected")));
		phase_reason(ph, "no tests: no test command is configured (tools.test_command) or detected in '%s'",
			     t->dir);
		return finish(ph, t, coverage);
	}
	double timeout_s = config_get_num(ph->cfg, "tools.test_timeout_s");
	if (timeout_s <= 0)
		timeout_s = config_get_num(ph->cfg, "safety.time_s.test");
	t->timeout_ms = (long)(timeout_s * 1000);

	jv ev = jv_object();
	ev = json_set(ev, "command", jv_string(t->command));
	ev = json_set(ev, "source", jv_string(t->source));
	ev = json_set(ev, "dir", jv_string(t->dir));
	ev = json_set(ev, "timeout_s", jv_number(timeout_s));
	phase_emit(ph, "test.started", ev);
	phase_leave_if_output_gone(ph);	/* (no run whose results none can read) */
	phase_progress(ph, "running %s", t->command);

	time_t since = time(NULL);
	if (sandbox_policy_from_config(&t->policy, ph->cfg) < 0) {
		phase_reason(ph, "bad sandbox configuration: %s", forge_last_error());
		return "failed";
	}
	if (tmpdir_make(&t->tmp, "forge-test") < 0) {
		phase_reason(ph, "%s", forge_last_error());
		return "failed";
	}
	if (t->in_run)
		recover_run(ph, t);
	jv before = testrun_junit_snapshot(t->dir, config_get_str(ph->cfg, "tools.test_report"));
	if (t->in_run)
		t->untracked = phase_command_before(ph, t->dir);
	if (run(ph, &res, t->command, t->dir, t->timeout_ms) < 0) {
		phase_reason(ph, "cannot run the test command: %s", forge_last_error());
		proc_result_release(&res);
		jv_free(before);
		return "failed";
	}
	t->exit_code = res.exit_code;
	t->timed_out = res.timed_out;
	t->duration_ms = res.duration_ms;
	ev = jv_object();
	ev = json_set(ev, "exit_code", jv_number(res.exit_code));
	ev = json_set(ev, "timed_out", jv_bool(res.timed_out));
	ev = json_set(ev, "output_bytes", jv_number((double)res.out_bytes));
	stream_emit_full(&ph->out, "test.ran", ev, jv_null(), res.duration_ms);

	t->parsed = read_results(&t->run, &t->report, &t->reports, ph, t, &res, before) == 1;
	if (t->parsed) {
		ev = jv_object();
		ev = json_set(ev, "format", jv_string(t->run.format));
		ev = json_set(ev, "report", json_str_or_null(t->report));
		ev = json_set(ev, "total", jv_number((double)t->run.total));
		ev = json_set(ev, "passed", jv_number((double)t->run.passed));
		ev = json_set(ev, "failed", jv_number((double)t->run.failed));
		ev = json_set(ev, "skipped", jv_number((double)t->run.skipped));
		if (t->run.note[0])
			ev = json_set(ev, "note", jv_string(t->run.note));
		phase_emit(ph, "test.parsed", ev);
	} else {
		testrun_init(&t->run);
		phase_emit(ph, "test.unparsed",
			   json_set(json_set(jv_object(), "reason",
					     jv_string("no known test output (TAP, JUnit, pytest, go test, cargo test, "
						       "node --test, ctest, bats): the exit status decides")),
				    "exit_code", jv_number(res.exit_code)));
	}

	/* what the output does not say */
	long named = 0;
	for (size_t i = 0; i < t->run.ncases; i++)
		named += failing(&t->run.cases[i]);
	/* the output's tail by its length: a NUL byte in it is shown
	 * (testcase_set), not the end of it */
	size_t tail_len = res.out.len;
	const char *out_tail = tail_n(res.out.buf ? res.out.buf : "", &tail_len, FAILURE_OUTPUT_MAX);
	char msg[256];
	if (res.timed_out) {
		snprintf(msg, sizeof msg, "the test command did not finish within %.0f s (timeout)", timeout_s);
		struct testcase *c = testrun_add_synthetic(&t->run, "timeout", msg, NULL);
		testcase_set(&c->output, out_tail, tail_len);
	} else if (!t->parsed) {
		if (res.exit_code != 0) {
			not_found_msg(msg, sizeof msg, res.exit_code, out_tail, tail_len);
			struct testcase *c = testrun_add_synthetic(&t->run, t->command, msg, NULL);
			testcase_set(&c->output, out_tail, tail_len);
		} else {
			testrun_add_whole(&t->run, t->command, TC_PASS);
			t->run.total++;
			t->run.passed++;
		}
	} else if (t->run.failed > named && (named == 0 || t->run.truncated)) {
		/* counted, not named: the output said how many, or the cases
		 * were past the cap (already counted as failed) */
		long unnamed = t->run.failed - named;
		snprintf(msg, sizeof msg, "%ld failing test%s not named in the output%s", unnamed,
			 unnamed == 1 ? "" : "s", named ? " (past the limit of test cases kept)" : "");
		struct testcase *c = testrun_add_whole(&t->run, "unnamed failures", TC_FAIL);
		testcase_set(&c->message, msg, strlen(msg));
		testcase_set(&c->output, out_tail, tail_len);
	} else if (named == 0 && res.exit_code != 0 &&
		   !(strcmp(t->run.format, "pytest") == 0 && res.exit_code == 5)) {
		snprintf(msg, sizeof msg, "the test command exited with status %d though no test failed",
			 res.exit_code);
		struct testcase *c = testrun_add_synthetic(&t->run, "exit status", msg, NULL);
		testcase_set(&c->output, out_tail, tail_len);
	}
	/* the command ran, and no test with it: nothing was tested, as
	 * without a command (a failing exit status is a failure above, so
	 * there is nothing here to rerun or analyse) */
	bool skipped_all = t->run.total > 0 && t->run.skipped == t->run.total;
	bool none = (t->run.total == 0 || skipped_all) && !res.timed_out;
	for (size_t i = 0; none && i < t->run.ncases; i++)
		none = !failing(&t->run.cases[i]);
	if (none) {
		t->not_run = skipped_all ? ALL_SKIPPED : NONE_RAN;
		jv what = json_set(json_set(jv_object(), "format", jv_string(t->parsed ? t->run.format : "exit_code")),
				   "exit_code", jv_number(res.exit_code));

		if (skipped_all)
			what = json_set(what, "skipped", jv_number((double)t->run.skipped));
		phase_emit(ph, "test.none_ran", what);
		phase_reason(ph, skipped_all ? "no tests: every test was skipped (%s)" : "no tests: the test command ran none (%s)",
			     t->parsed ? t->run.format : "exit_code");
	}
	t->an = xcalloc(t->run.ncases + 1, sizeof *t->an);

	classify(t, &res);
	bool any = false;
	for (size_t i = 0; i < t->run.ncases; i++)
		any |= failing(&t->run.cases[i]);
	if (any && !res.timed_out) {
		phase_leave_if_output_gone(ph);
		rerun_failures(ph, t);
	}
	for (size_t i = 0; i < t->run.ncases; i++) {
		const struct testcase *c = &t->run.cases[i];
		if (failing(c) || c->flaky)
			phase_emit(ph, "test.failure",
				   json_set(json_set(jv_object(), "test", jv_string(c->name)), "classification",
					    jv_string(c->classification)));
	}
	analyse(ph, t);
	testrun_coverage(&coverage, t->dir, since);
	if (jv_get_kind(coverage) == JV_KIND_OBJECT)
		phase_emit(ph, "test.coverage", jv_copy(coverage));
	proc_result_release(&res);
	clean_run(ph, t);
	const char *status = finish(ph, t, coverage);
	if (could_not_run(ph, t))
		return "failed";
	if (t->analysis_error) {
		/* the tests ran (the state says how), the analysis that decides
		 * what a bounce can fix did not: failed, to resume */
		char counts[sizeof ph->reason];
		snprintf(counts, sizeof counts, "%s", ph->reason);
		phase_reason(ph, "the analysis of the failing tests failed: %s; %s, none known to be unfixable: "
			     "run the phase again once the model answers", t->analysis_error, counts);
		return "failed";
	}
	return status;
}

static int on_option(struct phase *ph, int id, const char *arg)
{
	struct tst *t = ph->payload;

	switch (id) {
	case OPT_FORCE: t->force = true; return 0;
	case OPT_JUNIT: t->junit_out = arg; return 0;
	case OPT_COMMAND:
		if (!*arg)
			return forge_error("--command needs a command");
		t->command_opt = arg;
		return 0;
	}
	return forge_error("unknown option");
}

int main(int argc, char **argv)
{
	static const struct cli_option options[] = {
		{ "force", 0, NULL, "test even when the changes were not approved by review", OPT_FORCE },
		{ "junit", 0, "FILE", "also write the results as JUnit XML to FILE", OPT_JUNIT },
		{ "command", 0, "CMD", "the test command (instead of tools.test_command or detection)", OPT_COMMAND },
		{ NULL, 0, NULL, NULL, 0 },
	};
	static const struct phase_spec spec = {
		.name = "test",
		.program = "forge-test",
		.synopsis = "[OPTIONS] < STATE\n[OPTIONS] --no-input [--repo DIR]",
		.description =
			"Run the project's tests (tools.test_command, else detected) in the sandbox of run_command "
			"(sandbox.*: writes confined to the worktree, network cut, environment scrubbed; "
			"sandbox.env passes variables; messages untranslated, the rest of the locale yours), "
			"read their results (TAP, "
			"JUnit XML, pytest, go test, cargo test, node --test, ctest, bats), rerun failures once "
			"to tell flaky from real, and ask the model for the root cause and a fix of each real "
			"failure. Needs a state whose review approved the changes (or review.approved_by, a gate's "
			"override, or --force); with --no-input "
			"(or a terminal on stdin) it tests the repository or worktree it is run in, and an "
			"empty stdin is bad input.  Run alone (not by forge-supervisor) and without -q it "
			"also prints each failing test on stderr (`file:line: FAIL name (classification)` "
			"and the first lines of its output), then the counts; with no test command, or one that "
			"ran no test, it says that nothing was tested.",
		.extra_help = "Exit status: 0 all tests passed (flaky ones allowed), 1 tests failed or the guard "
			      "did not hold,\n2 bad input, 4 another process holds the run (its lease), 5 the tests "
			      "could not be run\n(the sandbox, git, the database, a program the test command needs "
			      "not found or not runnable)\nor the model failed to "
			      "analyse their failures\n(the provider, after retries), 130 interrupted.\n",
		.options = options,
		.on_option = on_option,
		.model_options = true,
		.runs_alone = true,
		.needs_repo = true,
		.guard = guard,
		.lease = true,
		.pins_commit = true,
		.run = run_phase,
	};
	struct tst t = { .rerun = JSON_NULL, .reports = JSON_NULL, .untracked = JSON_NULL };

	int status = phase_main(&spec, argc, argv, &t);
	for (size_t i = 0; t.an && i < t.run.ncases; i++) {
		free(t.an[i].root_cause);
		free(t.an[i].fix);
	}
	free(t.an);
	free(t.analysis_error);
	jv_free(t.untracked);
	testrun_release(&t.run);
	jv_free(t.rerun);
	jv_free(t.reports);
	free(t.report);
	free(t.command);
	free(t.dir);
	sandbox_policy_free(t.policy);
	tmpdir_remove(t.tmp);
	return status;
}
