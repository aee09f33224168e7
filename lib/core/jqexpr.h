/*
 * jqexpr.h - jq expressions from the configuration (gate conditions, bounce
 * conditions), compiled with libjq and run over the pipeline state.
 *
 * An expression is true when its FIRST output is neither false nor null
 * (jq's own truthiness); an expression with no output, or one that raises an
 * error, is false and the error is reported.  Compilation errors name the
 * expression and libjq's message.
 *
 * Compiling with libjq 1.6 is the costly part (about 20 ms: it compiles jq's
 * builtins each time), so two things keep it rare:
 *   - expressions of a small subset of jq (the shape of the built-in gate and
 *     bounce conditions: paths `.a.b`, literals, `length`, `== != < <= > >=`,
 *     `*`, `and`, `or`, parentheses, `|`, and `[P[]? | select(C)]`) are
 *     evaluated in C, with the same results as libjq; whenever libjq would
 *     raise an error (e.g. indexing a number), or the expression has any
 *     other form, libjq evaluates it instead, so messages stay libjq's;
 *   - a program libjq compiled is kept for the life of the process (one
 *     compile per distinct expression), reset for each new input.
 */
#ifndef FORGE_JQEXPR_H
#define FORGE_JQEXPR_H

#include <jv.h>
#include <stdbool.h>

/* Check that expr compiles.  0, or -1 with libjq's message.  An expression
 * nested more than 200 levels deep (parentheses, brackets) or of more than
 * 10,000 terms is refused, here and when evaluated (the C evaluator
 * recurses).  Messages show at most the first 200 bytes of an expression. */
int jqexpr_check(const char *expr);

/*
 * Evaluate expr over input (borrowed).  0 with *out set, or -1 with a
 * message when expr does not compile or raises an error.
 */
int jqexpr_test(bool *out, const char *expr, jv input);

/* The first output of expr over input (borrowed), or -1 with a message. */
int jqexpr_first(jv *out, const char *expr, jv input);

/*
 * libjq evaluates in a child process (its jq_next() cannot be stopped and
 * a condition may never end): it is killed, and the evaluation fails with
 * a message, past timeout_ms (0: JQEXPR_DEFAULT_MS) or once stop (may be
 * NULL), asked every 100 ms, returns true - the caller then sees its own
 * reason to stop (a signal).  Expressions of the C subset end by
 * themselves and are not bounded.
 */
#define JQEXPR_DEFAULT_MS 10000u
void jqexpr_set_bounds(unsigned timeout_ms, bool (*stop)(void));

/* How many programs this process compiled with libjq (tests, benches). */
unsigned long jqexpr_compiles(void);

/* Evaluate the subset above in C (true, the default) or always with libjq
 * (false): tests compare the two. */
void jqexpr_set_native(bool on);

/*
 * The first output of expr over input (borrowed) by the C evaluator alone:
 * 0 with *out set, or 1 (*out invalid) where it leaves expr to libjq (not
 * in the subset, or libjq would raise an error) - what jqexpr_first() then
 * does is libjq mode's own path.  Tests compare the 0 cases with libjq
 * mode without compiling a libjq program for each of the others.
 */
int jqexpr_native_first(jv *out, const char *expr, jv input);

#endif
