/*
 * tap.h - the Test Anything Protocol, versions 13 and 14 (and the plain
 * TAP of older producers such as bats --tap), read into a struct testrun.
 *
 * Understood: the version line, plans (leading or trailing, "1..0" with a
 * reason), test points with or without numbers and descriptions, the SKIP
 * and TODO directives (case-insensitive, "\#" escapes), YAML diagnostic
 * blocks ("---" … "..." indented under a test point: message/error,
 * location/at/file/line are read), "#" diagnostics after a test point
 * (bats' "(in test file F, line N)"), "Bail out!", subtests (TAP 14: a
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

#include <stddef.h>

struct testrun;

/* 1 when text holds TAP (a plan or version line and a test point or
 * "1..0", or numbered/dashed test points without a plan) with *out filled (format "tap" or "node"); 0 when not TAP.
 * *out must be initialised (testrun_init). */
int tap_parse(struct testrun *out, const char *text, size_t len);

#endif
