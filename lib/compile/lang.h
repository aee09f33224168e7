/*
 * lang.h - the language profiles of `forge compile` (app/stage.h): how a
 * compiled project of one language is laid out, how its tests run and are
 * read, and which static tools review it.  A profile is the config object
 * compile.languages.<name> (schemas/config.defaults.json ships "c" and
 * "python"; a project adds one in its .forge/config.json):
 *
 *   framework     "tap", "pytest": the test_suite document's framework
 *   test_command  run by /bin/sh in the project's directory; "{junit}"
 *                 stands for a report path outside the project and
 *                 "{tmp}" for the run's temp dir
 *   output        "tap" (the command's output is TAP) or "junit" (the
 *                 report at {junit} is JUnit XML)
 *   layout        where sources, tests and build files go (for the model)
 *   test_name     how a test names its rule (for the model)
 *   timeout_s     the test command's and each tool's time limit
 *   build_files   the build files the integrate stage must leave; an entry
 *                 "a|b" is alternatives, one of which must be there
 *                 ("pyproject.toml|requirements.txt")
 *   static_tools  [{name, command, severity}]: run by the review stage in
 *                 the project's directory ({tmp} as above); severity is
 *                 what a finding of the tool is when its line does not
 *                 say "error:" or "warning:" itself
 *
 * THE TEST-NAME CONVENTION.  A test names the rule it checks with the rule
 * id as a word of its name: `test_r1_stores_the_item` (pytest),
 * `ok 1 - r1: stores the item` (TAP).  compile_rule_of() finds it: the
 * first "r" or "R" followed by digits that starts a word (the start, or
 * after a character that is not a letter or a digit) and ends one.
 *
 * Ownership: a struct compile_lang owns its strings; jv arguments are
 * borrowed unless a function says it consumes them.  Functions return 0,
 * or -1 after forge_error().  Nothing here prints.
 */
#ifndef FORGE_COMPILE_LANG_H
#define FORGE_COMPILE_LANG_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

struct config;
struct sandbox_policy;
struct testrun;

struct compile_tool {
	char *name;
	char *command;
	char *severity;         /* "error", "warning" or "info" */
};

struct compile_lang {
	char *name;             /* "python" */
	char *framework;
	char *test_command;
	bool junit;             /* output "junit" (else "tap") */
	long timeout_ms;        /* timeout_s; 0 = the sandbox policy's */
	char *layout;
	char *test_name;
	char **build_files;     /* NULL-terminated; "a|b": either */
	struct compile_tool *tools;
	size_t ntools;
};

/* The profile `name` from the config's compile.languages.  -1 with a
 * message naming the language (and the languages there are) when it has
 * none, or naming the key that is wrong. */
int compile_lang_load(struct compile_lang **out, const struct config *cfg, const char *name);

/* The profile from its config object (borrowed). */
int compile_lang_from_json(struct compile_lang **out, const char *name, jv profile);

void compile_lang_free(struct compile_lang *l);

struct buf;

/* The profile's build files as the model is told them, appended to b:
 * "Makefile", "pyproject.toml or requirements.txt", joined by ", ". */
void compile_lang_build_files_text(struct buf *b, const struct compile_lang *l);

/* The profile's build files that are not in dir: each entry none of whose
 * alternatives exists there, as compile_lang_build_files_text() says it.
 * A new array of strings (empty when all are there). */
jv compile_lang_missing_build_files(const struct compile_lang *l, const char *dir);

/* The rule id a test name carries, upper-cased ("R1"), into out; 0, or -1
 * (no message) when the name carries none. */
int compile_rule_of(char *out, size_t size, const char *name);

/*
 * The per-test results of a run as the documents hold them:
 * [{test, rule (or null), status: "passed"|"failed"|"skipped", file?,
 * message?}], one for every case r names, synthetic failures (the whole
 * command failed) included with rule null.  A new array.
 */
jv compile_results(const struct testrun *r);

/*
 * Read a test run: the output (TAP, when the profile says tap) or the JUnit
 * report text (junit).  Returns 1 with *out filled, 0 when nothing could be
 * read (*out empty).  *out is initialised here.
 */
int compile_parse_run(struct testrun *out, const struct compile_lang *l, const char *output,
		      size_t output_len, const char *report, size_t report_len);

/*
 * The command with "{junit}" and "{tmp}" replaced.  malloc'd.
 */
char *compile_expand(const char *command, const char *junit, const char *tmp);

/*
 * Run the profile's tests for real in dir (a directory; the sandbox's
 * root) under the policy's confinement, with tmp as the temp dir and the
 * profile's time limit.  *out is
 *   {command, exit_status, timed_out, duration_ms, output (its tail),
 *    format, passed, failed, skipped, results (compile_results())}
 * also when the command ran and failed; when nothing could be read from
 * it the results hold one synthetic failure saying so.  -1 only when the
 * command could not be started.
 */
int compile_run_tests(jv *out, const struct compile_lang *l, const char *dir,
		      const struct sandbox_policy *p, const char *tmp);

/*
 * Parse a static tool's output into findings [{tool, severity, file, line,
 * message}]: every line "FILE:LINE[:COL]: [error|warning|note|style…:] MSG"
 * (gcc; cppcheck with --template='{file}:{line}:{column}: {severity}:
 * {message}', which keeps its severities; pyflakes); "note:" lines are
 * left out.
 * When the tool failed (exit_status != 0) and no line was read, one finding
 * with the tool's severity and the head of its output.  A new array.
 */
jv compile_tool_findings(const struct compile_tool *t, const char *output, int exit_status);

/*
 * Run every static tool of the profile in dir (as compile_run_tests()):
 * *tools gets [{name, command, exit_status, findings: N, missing?}] and
 * *findings every finding.  A tool that is not installed (exit 127) is
 * listed with missing true and no finding.  -1 when a tool could not be
 * started at all.
 */
int compile_run_tools(jv *tools, jv *findings, const struct compile_lang *l, const char *dir,
		      const struct sandbox_policy *p, const char *tmp);

/* SHA-256 hex of each file (paths relative to dir) as {path: hex}; a file
 * that cannot be read maps to null.  Borrows paths. */
jv compile_digests(const char *dir, jv paths);

#endif
