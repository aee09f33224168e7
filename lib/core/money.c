/*
 * money.c - a cost in USD as the views print it (rules in money.h).
 */
#include "core/money.h"

#include <math.h>
#include <stdio.h>

char *money_fmt(char *out, size_t n, double usd)
{
	/* (beyond about 9e9 USD nano-dollars would not fit an exact integer
	 * of a double: then as printf rounds it) */
	if (!isfinite(usd) || fabs(usd) >= 9e9) {
		snprintf(out, n, "%.4f", usd);
		return out;
	}
	long long nano = llround(fabs(usd) * 1e9);
	long long tenth_mills = (nano + 50000) / 100000;     /* (units of 0.0001 USD, half away from zero) */

	snprintf(out, n, "%s%lld.%04lld", usd < 0 && tenth_mills > 0 ? "-" : "", tenth_mills / 10000,
		 tenth_mills % 10000);
	return out;
}

double money_round(double usd)
{
	if (!isfinite(usd) || fabs(usd) >= 9e9)
		return usd;
	return (double)llround(usd * 1e9) / 1e9;
}
