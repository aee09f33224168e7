/*
 * testrun.h - what a test run said: the results of one test command, read
 * from its output (TAP 13/14, JUnit XML, or the summary lines of pytest,
 * go test, cargo test, node --test, ctest and bats), plus the helpers
 * forge-test needs around them: the rerun-by-name command, environment
 * failure signatures and coverage reports.
 *
 * Parsers are bounded and total: any input (truncated, binary, hostile)
 * gives a result or "not this format", never a crash, and never more than
 * TESTRUN_MAX_CASES cases or TESTRUN_MAX_FIELD bytes in one field (longer
 * text is cut and marked "[…]").
 *
 * Counting.  total = passed + failed + skipped.  A test with subtests
 * (TAP subtest, go t.Run) counts once per leaf; the parent only counts when
 * it failed without a failing subtest (a hook failed).  When a runner
 * prints its own totals (node's "# tests N" trailer, pytest's summary line,
 * cargo's "test result:", ctest's "N tests failed out of M") those are the
 * counts, and the cases are what the output names.  Skipped includes TAP
 * TODO that failed, pytest xfail; a JUnit <error> or pytest ERROR is a
 * failure with `error` set.  flaky counts tests that failed and then
 * passed (forge-test's rerun, JUnit flakyFailure); they are also in passed.
 *
 * Ownership: a struct testrun owns its cases and their strings
 * (testrun_release frees them); every `const char *` argument is borrowed
 * and copied when kept.
 */
#ifndef FORGE_TESTRUN_H
#define FORGE_TESTRUN_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define TESTRUN_MAX_CASES 100000
#define TESTRUN_MAX_FIELD 16384
#define TESTRUN_MAX_NAME 1024

enum tc_status { TC_PASS, TC_FAIL, TC_SKIP };

struct testcase {
	char *name;        /* as the runner names it; never NULL */
	char *suite;       /* classname, package, file; NULL when unknown */
	char *file;        /* source file of the failure; NULL when unknown */
	long line;         /* its line; 0 when unknown */
	char *message;     /* the short reason; NULL when none */
	char *output;      /* diagnostics / captured output; NULL when none */
	enum tc_status status;
	bool error;        /* an error (crash, setup) rather than a failed assertion */
	bool flaky;        /* failed, then passed */
	bool synthetic;    /* not a test: the whole command (exit status, timeout, bail out) */
	double time_ms;    /* < 0 when unknown */
	const char *classification; /* "real", "flaky", "environment" (static), or NULL */
};

struct testrun {
	char format[16];   /* "tap", "junit", "pytest", "go", "cargo", "ctest", "node", "bats"; "" none */
	long total, passed, failed, skipped, flaky;
	struct testcase *cases;
	size_t ncases, alloc;
	bool truncated;    /* more cases than TESTRUN_MAX_CASES */
	long dropped[3];   /* the cases refused then, by enum tc_status: counted
			    * by testrun_count, only their names are lost */
	char note[256];    /* what the parser noticed ("plan 1..5 but 3 tests ran"), or "" */
};

void testrun_init(struct testrun *r);
void testrun_release(struct testrun *r);   /* r reusable after testrun_init */

/* Add a case named name[0..len) (cut to TESTRUN_MAX_NAME; empty becomes
 * "(unnamed)").  Returns the case (borrowed from r; valid until the next
 * add), or NULL when r is full: r->truncated is then set and the case
 * counted in r->dropped[st] (a caller that learns its status later moves
 * it there).  Counts are not touched: see testrun_count(). */
struct testcase *testrun_add(struct testrun *r, const char *name, size_t len, enum tc_status st);

/* Add a case standing for the whole command (synthetic set): its exit
 * status, a timeout, the failures not named.  Added even when r is full
 * (the cap bounds memory; there are a few of these), never NULL.  Counts
 * are not touched. */
struct testcase *testrun_add_whole(struct testrun *r, const char *name, enum tc_status st);

/* Add a synthetic failure (the whole command: its exit status, a timeout,
 * a bail out) and count it as failed (total and failed grow by one).
 * message and output may be NULL.  Added even when r is full; never
 * NULL. */
struct testcase *testrun_add_synthetic(struct testrun *r, const char *name, const char *message,
				       const char *output);

/* Set a string field of a case to s[0..len) (bounded; replaces the old). */
void testcase_set(char **field, const char *s, size_t len);
/* Append s[0..len) and a newline to a string field (bounded). */
void testcase_append(char **field, const char *s, size_t len);

/* Recount total/passed/failed/skipped/flaky from the cases (synthetic
 * failures count as failed) and r->dropped. */
void testrun_count(struct testrun *r);

/* Make each case's file relative to root (an absolute directory: the
 * repository the tests ran in) when it is an absolute path inside it, as
 * pytest, bats and go name them (node --test's TAP location, a JUnit
 * file attribute are absolute); a path outside root stays as it is. */
void testrun_relative_files(struct testrun *r, const char *root);
/* The first case named name, or NULL.  Borrowed. */
struct testcase *testrun_find(const struct testrun *r, const char *name);

/*
 * The case of r that is c (of another run): the same name, and the same
 * suite and file where both say one.  Names are not unique (the same test
 * name in two files or classes, a TAP point printed twice), so:
 * TC_ABSENT when none fits; TC_FOUND with *found the one that fits, or the
 * first failing one when several do (then c cannot be told passing);
 * TC_AMBIGUOUS when several fit and none failed (which is c is unknown).
 * *found is borrowed from r.
 */
enum tc_match { TC_ABSENT, TC_FOUND, TC_AMBIGUOUS };
enum tc_match testrun_match(const struct testrun *r, const struct testcase *c, const struct testcase **found);

/*
 * Parse a test command's output (stdout and stderr merged).  ANSI colour
 * sequences are ignored.  Formats are tried from the most specific: go
 * test -json, cargo test, pytest, TAP, ctest, node's spec reporter, go
 * test -v, bats' pretty formatter.  Returns 1 with *out filled (format
 * set), or 0 when no known format was found (*out empty).  *out is
 * initialised here.
 */
int testrun_parse(struct testrun *out, const char *text, size_t len);

/* The summary-line parsers one by one (testrun_summary.c): 1 found, 0 not.
 * text is taken as it is (no ANSI stripping); *out must be initialised. */
int testrun_parse_gojson(struct testrun *out, const char *text, size_t len);
int testrun_parse_gotest(struct testrun *out, const char *text, size_t len);
int testrun_parse_cargo(struct testrun *out, const char *text, size_t len);
int testrun_parse_pytest(struct testrun *out, const char *text, size_t len);
int testrun_parse_ctest(struct testrun *out, const char *text, size_t len);
int testrun_parse_node_spec(struct testrun *out, const char *text, size_t len);
int testrun_parse_bats_pretty(struct testrun *out, const char *text, size_t len);

/* Remove ANSI escape sequences (CSI, OSC) from s[0..*len) in place. */
void testrun_strip_ansi(char *s, size_t *len);

/*
 * The runner a shell command line invokes, from its words: "bats",
 * "pytest", "go", "cargo", "ctest", "node", or NULL (make, npm, a script:
 * unknown).
 */
const char *testrun_runner(const char *command);

/*
 * A command that reruns only the named tests, for runners that can select
 * by name: bats -f REGEX, pytest NODEIDS, go test -run REGEX (top-level
 * names), cargo test -- --exact NAMES, ctest -R REGEX.  It names the first
 * *taken of names[0..n) (at least one): as many as keep the command within
 * TESTRUN_RERUN_MAX bytes (it is one argument of `sh -c`, and Linux
 * refuses one over 128 KiB); a caller reruns the rest with the next call.
 * malloc'd, or NULL (*taken 0) when the runner cannot, or the first name
 * does not fit (then rerun the whole command).
 */
#define TESTRUN_RERUN_MAX (64u << 10)
char *testrun_rerun_command(size_t *taken, const char *command, const char *const *names, size_t n);

/*
 * Does text look like an environment failure rather than a test's own:
 * a command not found, a missing module or library, a refused connection,
 * a full disk or disk quota, a read-only file system, a limit on open
 * files, processes or file size?  Only where the shell, the loader or the
 * OS says so, in English (forge-test runs its command with messages
 * untranslated: sandbox_env_untranslated), in the shape they give it (a
 * line "sh: 1: x: not found", "[Errno 111] Connection refused", "… (os
 * error 28)", make's "make: x: No such file or directory" for a recipe's
 * program it ran itself and "make: *** [Makefile:2: test] Error 127"), not
 * text anywhere in a test's output.  whole: text is the
 * runner's own failure (the whole command's output, a collection or setup
 * error), where a missing module, package or header counts too.
 * Returns a short description of the signature found, or NULL.  Static
 * storage.
 */
const char *testrun_env_signature(const char *text, size_t len, bool whole);

/* Line coverage percent of an lcov tracefile (LH/LF summed over records,
 * else DA lines).  0, or -1 when it holds no line data. */
int testrun_lcov_percent(double *out, const char *text, size_t len);
/* Line coverage percent of a Cobertura report (<coverage line-rate> or
 * lines-covered/lines-valid).  0, or -1 when not one. */
int testrun_cobertura_percent(double *out, const char *xml, size_t len);

/*
 * Look in dir for a coverage report written at or after `since` (lcov.info,
 * coverage/lcov.info, coverage.lcov, cobertura.xml, coverage.xml,
 * coverage/cobertura-coverage.xml, …) and read it: *out is
 * {"line": percent, "format": "lcov"|"cobertura", "file": relative path},
 * or jv_null() when there is none.  Always 0.
 */
int testrun_coverage(jv *out, const char *dir, time_t since);

/*
 * JUnit XML reports: `configured` (a path or a glob, relative to dir; may
 * be NULL) first, then the usual places (junit.xml, report.xml,
 * test-results.xml, build/junit.xml, test-results/ *.xml,
 * target/surefire-reports/TEST-*.xml, …).  A report is this run's when it
 * is not in the snapshot taken before the run or has changed since (time
 * to the nanosecond, size, inode: a report of the same second before is
 * not taken, on a file system of coarse times either).
 *
 * testrun_junit_snapshot(): every candidate's stamp now (an object).
 * testrun_find_junit(): the fresh files of the first place that has any,
 * sorted by name -- all of them: Surefire and Gradle write a file a test
 * class -- as an array of path strings (empty: none); `exclude` (may be
 * NULL) is never one (forge-test's own --junit output).  Consumes before.
 */
jv testrun_junit_snapshot(const char *dir, const char *configured);
jv testrun_find_junit(const char *dir, const char *configured, jv before, const char *exclude);

#endif
