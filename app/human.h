/*
 * human.h - the text a person reads beside the JSON lines: the review's
 * findings and decision, the tests' failures and counts, a plan.
 *
 * One line a thing: a finding is `file:line: severity: message [rule]`, a
 * failing test `file:line: FAIL name (classification)` followed by the first
 * lines of its output, indented, so editors, terminals and CI logs link
 * them as they link a compiler's messages.  Text from linters, test output
 * and models is printed with its control characters (escape sequences
 * included) replaced by spaces, so it cannot drive the terminal.
 *
 * Colour (SGR escapes) only when human_colour() says so for the stream:
 * a terminal, NO_COLOR not set (or set to the empty string, as
 * https://no-color.org says) and TERM not "dumb".  Never when piped.
 *
 * jv arguments are borrowed; nothing here exits.
 */
#ifndef FORGE_HUMAN_H
#define FORGE_HUMAN_H

#include <jv.h>
#include <stdbool.h>
#include <stdio.h>

/* Whether text for a person on f may be coloured (see above). */
bool human_colour(FILE *f);

/* The findings (the review's "findings" array), one line each; a finding
 * without a file is `prog: severity: message`, without a line `file:
 * severity: message`. */
void human_findings(FILE *f, const char *prog, jv findings, bool colour);

/* The one-line decision: `prog: decision: text` (the decision coloured). */
void human_decision(FILE *f, const char *prog, const char *decision, const char *text, bool colour);

/*
 * The tests part of a state: each failing test (and flaky one, without its
 * output) with up to HUMAN_TEST_LINES first lines of its message and output
 * (of the output's last lines, after a "[… N lines before]" line, for a
 * failure of the whole command: its exit status, timeout, unnamed failures),
 * then the counts: `prog: 3 passed, 1 failed, 0 skipped, 0 flaky (command)`.
 * Nothing when tests is not an object or records that nothing ran (not_run).
 */
#define HUMAN_TEST_LINES 5
void human_tests(FILE *f, const char *prog, jv tests, bool colour);

/*
 * A validation that did not pass (forge-implement's changes.validation:
 * {command, exit_status, output, steps}): `prog: not validated: `CMD`
 * exited with status N` (timed out, could not run; or the output's
 * reason when there was no command), then up to HUMAN_TEST_LINES last
 * lines of its output, as human_tests() shows a whole command's failure.
 * Nothing when validation is not an object.
 */
void human_validation(FILE *f, const char *prog, jv validation, bool colour);

/* A plan (the state's "plan"): summary, risk with its score and reasons,
 * estimate, and the tasks with their files and dependencies.  Lines start
 * with a 10-column label ("plan      …"), like the run's summary. */
void human_plan(FILE *f, jv plan, bool colour);

#endif
