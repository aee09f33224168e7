/*
 * money.h - a cost in USD as every view prints it.
 *
 * A run's cost is a sum of its calls' costs, added up in different orders
 * in different places (the supervisor's state, the llm_calls log in SQL,
 * the llm.called events): 0.01725 may come out as 0.017249999… in one and
 * 0.0172500…01 in another.  Printed with "%.4f" those differed ($0.0172 in
 * the end-of-run summary, $0.0173 in forge status).  Here the amount is
 * first rounded to nano-dollars (far above a sum's float error, below any
 * price's step: prices are USD per million tokens), then half away from
 * zero to the digits shown, so both print $0.0173.
 */
#ifndef FORGE_MONEY_H
#define FORGE_MONEY_H

#include <stddef.h>

/* Room for any money_fmt text, its NUL included. */
#define MONEY_LEN 32

/* usd with 4 decimals and no "$" ("0.0173", "-1.5000"), as described
 * above, in out (n >= MONEY_LEN bytes for any value); a value that is not
 * finite as "%.4f" prints it.  Returns out. */
char *money_fmt(char *out, size_t n, double usd);

/* usd rounded to nano-dollars, the step money_fmt first rounds to: what a
 * view writes as JSON, so a sum is 0.3, not 0.30000000000000004 (a value
 * that is not finite, or beyond about 9e9 USD, as it is). */
double money_round(double usd);

#endif
