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
 * A test that cannot run here (no Landlock, say) ends with
 * SKIP("no Landlock on this kernel") and prints "ok N - name # SKIP reason",
 * which scripts/check counts as skipped.
 */
#ifndef FORGE_UNIT_H
#define FORGE_UNIT_H

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int unit_count, unit_failed, unit_current_failed;
static char unit_skip_reason[256];

/* SKIP(fmt, ...): end this test as skipped, saying why. */
#define SKIP(...) do { \
	unit_skip(__VA_ARGS__); \
	return; \
} while (0)

static inline void __attribute__((format(printf, 1, 2))) unit_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(unit_skip_reason, sizeof(unit_skip_reason), fmt, ap);
	va_end(ap);
	if (!unit_skip_reason[0])
		snprintf(unit_skip_reason, sizeof(unit_skip_reason), "skipped");
}

static inline int unit_rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* Remove the directory tree at path, a test's temporary directory (what a
 * program under test left in it included: a .cache, say). */
static inline void unit_rmtree(const char *path)
{
	nftw(path, unit_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

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
	unit_skip_reason[0] = '\0';
	fflush(stdout);
	fn();
	unit_count++;
	if (unit_current_failed)
		unit_failed++;
	if (unit_skip_reason[0] && !unit_current_failed)
		printf("ok %d - %s # SKIP %s\n", unit_count, name, unit_skip_reason);
	else
		printf("%s %d - %s\n", unit_current_failed ? "not ok" : "ok", unit_count, name);
	fflush(stdout);
}

static inline int unit_done(void)
{
	printf("1..%d\n", unit_count);
	return unit_failed ? 1 : 0;
}

#endif
