/*
 * jqexpr.h - jq expressions from the configuration (gate conditions, bounce
 * conditions), compiled with libjq and run over the pipeline state.
 *
 * An expression is true when its FIRST output is neither false nor null
 * (jq's own truthiness); an expression with no output, or one that raises an
 * error, is false and the error is reported.  Compilation errors name the
 * expression and libjq's message.
 */
#ifndef FORGE_JQEXPR_H
#define FORGE_JQEXPR_H

#include <jv.h>
#include <stdbool.h>

/* Check that expr compiles.  0, or -1 with libjq's message. */
int jqexpr_check(const char *expr);

/*
 * Evaluate expr over input (borrowed).  0 with *out set, or -1 with a
 * message when expr does not compile or raises an error.
 */
int jqexpr_test(bool *out, const char *expr, jv input);

/* The first output of expr over input (borrowed), or -1 with a message. */
int jqexpr_first(jv *out, const char *expr, jv input);

#endif
