/*
 * tap.h - the Test Anything Protocol, versions 13 and 14 (and the plain
 * TAP of older producers such as bats --tap), read into a struct testrun.
 *
 * Understood: the version line, plans (leading or trailing, "1..0" with a
 * reason), test points with or without numbers and descriptions, the SKIP
 * and TODO directives (case-insensitive, "\#" escapes), YAML diagnostic
 * blocks ("---" … "..." indented under a test point: message/error,
 * location/at/file/line are read), "#" diagnostics after a test point
 * (bats' "(in test file F, line N)", Test::More's and C libtap's "at F line N."),
 * "Bail out!", subtests (TAP 14: a
 * nested document indented four spaces per level, "# Subtest: NAME"), and
 * several documents one after another (a make check running several TAP
 * programs), and plan-less TAP whose test points carry a number or " - "
 * (a hand-written check script).  Non-TAP lines are ignored.  Node's trailer comments
 * ("# tests 8", "# pass 3", …) give the counts when present (format
 * "node"), as node counts a test with subtests as a test too.
 *
 * A test that did not run (fewer test points than planned, no plan after
 * a version line, a bail out) becomes a synthetic failure (testrun.h).
 */
#ifndef FORGE_TAP_H
#define FORGE_TAP_H

#include <stdbool.h>
#include <stddef.h>

struct testrun;

/* 1 when text holds TAP (a plan or version line and a test point or
 * "1..0", or numbered/dashed test points without a plan) with *out filled (format "tap" or "node"); 0 when not TAP.
 * *out must be initialised (testrun_init). */
int tap_parse(struct testrun *out, const char *text, size_t len);

/* True when line (without its newline) is a failing test point of the top
 * level: "not ok" without a SKIP or TODO directive.  For proc_opts.cut_count
 * (os/proc.h): output too long to keep has its middle cut, failures too. */
bool tap_failing_line(const char *line, size_t len);

/* n (tap_failing_line) failing test points were in the middle cut out of
 * the output *out was read from: when *out is TAP, a synthetic failure
 * says so (the run did not pass), and its note too; counts recounted. */
void tap_cut_failures(struct testrun *out, size_t n);

#endif
