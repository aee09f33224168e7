/*
 * test_memory_cli.c - what the memory programs' session opens
 * (app/memory_cli.c): the database read through a mapping, written and
 * read-only alike, and searched the same way.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "core/forge.h"
#include "core/json.h"
#include "memory/memory.h"
#include "store/store.h"
#include "unit.h"

static char tmp[256];

static long long mmap_size(struct store *st)
{
	sqlite3_stmt *s = NULL;
	long long n = -1;

	if (sqlite3_prepare_v2(store_db(st), "PRAGMA mmap_size", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}

/* Both opens map the file; a memory stored through one is found through
 * the other. */
static void test_open_maps_the_database(void)
{
	struct cli_common common;
	struct memory_cli c;
	struct memory_query q;
	char id[ULID_LEN + 1];
	int status = 0;
	jv o = jv_object(), out;

	memset(&common, 0, sizeof common);
	CHECK_MSG(memory_cli_open(&status, &c, &common) == 0, "%s", forge_last_error());
	CHECK(mmap_size(c.st) >= 1 << 20);
	o = json_set(o, "type", jv_string("semantic"));
	o = json_set(o, "content", jv_string("migrations run with make migrate-up"));
	CHECK_MSG(memory_store(id, c.m, o) == 0, "%s", forge_last_error());
	memory_cli_close(&c);

	CHECK_MSG(memory_cli_open_readonly(&status, &c, &common) == 0, "%s", forge_last_error());
	CHECK(mmap_size(c.st) >= 1 << 20);
	memory_query_init(&q, "migrate");
	q.no_touch = true;
	CHECK_MSG(memory_recall(&out, c.m, &q) == 0, "%s", forge_last_error());
	CHECK_INT(jv_array_length(jv_copy(out)), 1);
	jv r = jv_array_get(jv_copy(out), 0), mem = json_get(r, "memory");
	CHECK_STR(json_get_str(mem, "id"), id);
	jv_free(mem);
	jv_free(r);
	jv_free(out);
	memory_cli_close(&c);
}

int main(void)
{
	const char *base = getenv("TMPDIR");
	char path[512];

	snprintf(tmp, sizeof tmp, "%s/forge-test-memory-cli.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmp) || chdir(tmp) != 0)
		return 1;
	/* no repository, no configuration but the built-in one, a database of its own */
	snprintf(path, sizeof path, "%s/forge.db", tmp);
	setenv("FORGE_DB", path, 1);
	setenv("HOME", tmp, 1);
	setenv("XDG_CONFIG_HOME", tmp, 1);
	setenv("XDG_CACHE_HOME", tmp, 1);
	RUN(test_open_maps_the_database);
	int rc = unit_done();
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
