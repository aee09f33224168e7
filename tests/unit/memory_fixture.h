/*
 * memory_fixture.h - the unit tests of lib/memory open one memory store at a
 * time, on a database file or ":memory:", with an injected clock that starts
 * at T0 and moves only when a test sets clock_ms.  Included once per test
 * program (the state is static).
 */
#ifndef FORGE_TEST_MEMORY_FIXTURE_H
#define FORGE_TEST_MEMORY_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/forge.h"
#include "core/json.h"
#include "memory/memory.h"
#include "store/store.h"

#define DAY MEMORY_DAY_MS
#define T0 1767225600000LL     /* 2026-01-01 */

static int64_t clock_ms = T0;
static struct store *st;
static struct memory *m;

static int64_t fake_now(void *p)
{
	(void)p;
	return clock_ms;
}

/* Open st and m on path with the clock at T0; a failure ends the test program. */
static void open_mem(const char *path)
{
	struct memory_options o;

	memory_options_init(&o);
	o.now = fake_now;
	clock_ms = T0;
	if (store_open(&st, path) < 0 || memory_open(&m, st, &o) < 0) {
		printf("# open: %s\n", forge_last_error());
		exit(1);
	}
}

static void close_mem(void)
{
	memory_free(m);
	store_free(st);
	m = NULL;
	st = NULL;
}

/* Memory id's confidence, -1 when there is none. */
static inline double conf_of(const char *id)
{
	jv mem;
	double c = -1;

	if (memory_get(&mem, m, id) == 0)
		c = json_get_num(mem, "confidence", -1);
	jv_free(mem);
	return c;
}

/* Whether memory id is archived. */
static inline bool archived(const char *id)
{
	jv mem;
	bool a = false;

	if (memory_get(&mem, m, id) == 0)
		a = json_has(mem, "archived_at");
	jv_free(mem);
	return a;
}

#endif
