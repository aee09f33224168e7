/*
 * unit.h - a minimal TAP test harness for Forge's C unit tests.
 *
 *	static void test_something(void)
 *	{
 *		CHECK(1 + 1 == 2);
 *		CHECK_STR(got, "expected");
 *	}
 *	int main(void)
 *	{
 *		RUN(test_something);
 *		return unit_done();
 *	}
 *
 * Each RUN prints "ok N - name" or "not ok N - name" followed by "# " lines
 * saying which check failed and where.  A failed CHECK ends that test.
 */
#ifndef FORGE_UNIT_H
#define FORGE_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_count, unit_failed, unit_current_failed;

#define CHECK(cond) do { \
	if (!(cond)) { \
		printf("#   %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		unit_current_failed = 1; \
		return; \
	} \
} while (0)

#define CHECK_MSG(cond, ...) do { \
	if (!(cond)) { \
		printf("#   %s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		unit_current_failed = 1; \
		return; \
	} \
} while (0)

#define CHECK_STR(got, want) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!g_ || !w_ || strcmp(g_, w_) != 0) { \
		printf("#   %s:%d: %s\n#     got:  %s\n#     want: %s\n", __FILE__, __LINE__, \
		       #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
		unit_current_failed = 1; \
		return; \
	} \
} while (0)

#define CHECK_INT(got, want) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (g_ != w_) { \
		printf("#   %s:%d: %s is %lld, want %lld\n", __FILE__, __LINE__, #got, g_, w_); \
		unit_current_failed = 1; \
		return; \
	} \
} while (0)

#define RUN(fn) unit_run(#fn, fn)

static inline void unit_run(const char *name, void (*fn)(void))
{
	unit_current_failed = 0;
	fflush(stdout);
	fn();
	unit_count++;
	if (unit_current_failed)
		unit_failed++;
	printf("%s %d - %s\n", unit_current_failed ? "not ok" : "ok", unit_count, name);
	fflush(stdout);
}

static inline int unit_done(void)
{
	printf("1..%d\n", unit_count);
	return unit_failed ? 1 : 0;
}

#endif
