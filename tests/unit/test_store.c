/* test_store.c - unit tests of lib/store (SQLite: migrations, events, runs,
 * checkpoints, concurrency). */
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "core/resource.h"
#include "store/store.h"
#include "os/proc.h"
#include "core/ids.h"
#include "unit.h"

#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <unistd.h>

static char tmpdir[256];

/* A path inside this run's temporary directory; the last four stay valid. */
static const char *tmp_path(const char *name)
{
	static char paths[4][512];
	static unsigned next;
	char *path = paths[next++ % 4];

	snprintf(path, sizeof paths[0], "%s/%s", tmpdir, name);
	return path;
}

/* One integer from a query, or -1. */
static long long query_int(struct store *st, const char *sql)
{
	sqlite3_stmt *s = NULL;
	long long v = -1;

	if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* One text from a query, malloc'd, or NULL. */
static char *query_text(struct store *st, const char *sql)
{
	sqlite3_stmt *s = NULL;
	char *v = NULL;

	if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		v = xstrdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return v;
}

#define SCHEMA_OBJECTS "SELECT group_concat(type || ' ' || name, ', ') FROM" \
	" (SELECT type, name FROM sqlite_master ORDER BY type, name)"

static jv parse(const char *text)
{
	return json_parse(text, strlen(text));
}

/* An event record as a stream line would carry it. */
static jv make_event(const char *id, const char *trace, const char *ts, const char *type)
{
	jv ev = jv_object();

	ev = json_set(ev, "kind", jv_string("event"));
	ev = json_set(ev, "id", jv_string(id));
	ev = json_set(ev, "trace_id", jv_string(trace));
	ev = json_set(ev, "ts", jv_string(ts));
	ev = json_set(ev, "source", jv_string("test_store"));
	ev = json_set(ev, "phase", jv_string("review"));
	ev = json_set(ev, "type", jv_string(type));
	return json_set(ev, "payload", jv_object());
}

/* Store ev (serialised) and free it; returns store_event_put's result. */
static int put(struct store *st, jv ev, bool *inserted)
{
	int rc = store_event_put(st, ev, NULL, 0, inserted);

	jv_free(ev);
	return rc;
}

/* Collects the lines store_events_foreach gives, joined by '\n'. */
struct lines {
	char text[4096];
	size_t len;
	int count;
	int stop_after;   /* 0: never stop */
};

static int collect(const char *line, size_t len, void *payload)
{
	struct lines *l = payload;

	if (l->len + len + 2 > sizeof l->text)
		return -1;
	memcpy(l->text + l->len, line, len);
	l->len += len;
	l->text[l->len++] = '\n';
	l->text[l->len] = '\0';
	l->count++;
	return l->stop_after && l->count == l->stop_after ? 7 : 0;
}

static void test_migrations_create_schema(void)
{
	struct store *st = NULL;
	const char *path = tmp_path("new/sub/forge.db");
	struct stat sb;

	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK(store_schema_version_known() >= 1);
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	CHECK_INT(query_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
			    " AND name IN ('runs', 'event_log', 'checkpoints')"), 3);
	CHECK_INT(query_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'events'"), 1);
	CHECK_INT(query_int(st, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"
			    " AND tbl_name IN ('events', 'event_log')"), 5);
	CHECK_INT(query_int(st, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"), 1);
	CHECK_INT(query_int(st, "PRAGMA foreign_keys"), 1);
	CHECK_INT(query_int(st, "PRAGMA page_size"), 8192);
	CHECK_INT(query_int(st, "PRAGMA wal_autocheckpoint"), 4096);	/* 32 MiB */
	CHECK_INT(query_int(st, "PRAGMA busy_timeout"), 10000);
	store_free(st);
	CHECK(stat(tmp_path("new/sub"), &sb) == 0);
	CHECK_INT(sb.st_mode & 0777, 0700);
	CHECK(stat(path, &sb) == 0);
	CHECK_INT(sb.st_mode & 0777, 0600);
}

static void test_reopen_is_noop(void)
{
	struct store *st = NULL;
	const char *path = tmp_path("reopen.db");

	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK(put(st, make_event("E1", "T1", "2026-01-01T00:00:00.000Z", "x"), NULL) == 0);
	store_free(st);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 1);
	store_free(st);
}

/* A database left at schema 1 by an older forge gets the later migrations. */
static void test_incremental_migration(void)
{
	const char *path = tmp_path("old.db");
	const struct resource *first = resource_find("sql/001-core.sql");
	struct store *st = NULL, *fresh = NULL;
	sqlite3 *db = NULL;

	CHECK(first);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, first->data, NULL, NULL, NULL) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA user_version = 1;"
			   "INSERT INTO runs (id, task, started_at, updated_at)"
			   " VALUES ('T1', 'old', 'x', 'x')", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	CHECK_INT(query_int(st, "SELECT count(*) FROM runs WHERE task = 'old'"), 1);
	/* same schema objects as a database made from scratch */
	CHECK(store_open(&fresh, ":memory:") == 0);
	char *want = query_text(fresh, SCHEMA_OBJECTS), *got = query_text(st, SCHEMA_OBJECTS);
	store_free(fresh);
	store_free(st);
	CHECK_STR(got, want);
	free(want);
	free(got);
}

static void test_newer_database_refused(void)
{
	struct store *st = NULL;
	const char *path = tmp_path("newer.db");
	char want[1024];

	CHECK(store_open(&st, path) == 0);
	CHECK(store_exec(st, "PRAGMA user_version = 99") == 0);
	store_free(st);
	st = NULL;
	CHECK(store_open(&st, path) == -1);
	CHECK(st == NULL);
	snprintf(want, sizeof want, "database '%s' was written by a newer forge (schema 99, this "
		 "program knows %d); upgrade forge or use another --db", path,
		 store_schema_version_known());
	CHECK_STR(forge_last_error(), want);
}

static void test_garbage_file_refused(void)
{
	struct store *st = NULL;
	const char *path = tmp_path("garbage.db");
	FILE *f = fopen(path, "w");

	CHECK(f);
	for (int i = 0; i < 200; i++)
		fputs("this is not a database at all\n", f);
	fclose(f);
	CHECK(store_open(&st, path) == -1);
	CHECK(st == NULL);
	CHECK_MSG(strstr(forge_last_error(), "file is not a database"), "%s", forge_last_error());
	CHECK_MSG(strstr(forge_last_error(), path), "%s", forge_last_error());
}

static void test_unopenable_path(void)
{
	struct store *st = NULL;
	const char *path = tmp_path("afile/forge.db");
	FILE *f = fopen(tmp_path("afile"), "w");

	CHECK(f);
	fclose(f);
	CHECK(store_open(&st, path) == -1);
	CHECK_MSG(strstr(forge_last_error(), path), "%s", forge_last_error());
}

/* store_open_readonly: reads, refuses writes, leaves the file alone; a
 * missing file reads as empty and is not made, an older schema is
 * migrated, a newer one refused. */
static void test_open_readonly(void)
{
	const char *path = tmp_path("ro.db"), *odd = tmp_path("ro ?#%.db");
	struct store *st = NULL;
	struct stat before, after;

	CHECK(store_open(&st, path) == 0);
	CHECK(put(st, make_event("E1", "T1", "2026-01-01T00:00:00.000Z", "x"), NULL) == 0);
	CHECK(!store_readonly(st));
	store_free(st);
	st = NULL;
	CHECK(stat(path, &before) == 0);
	CHECK_MSG(store_open_readonly(&st, path) == 0, "%s", forge_last_error());
	CHECK(store_readonly(st));
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 1);
	CHECK(put(st, make_event("E2", "T1", "2026-01-01T00:00:00.001Z", "x"), NULL) < 0);
	CHECK_MSG(strstr(forge_last_error(), "readonly"), "%s", forge_last_error());
	store_free(st);
	st = NULL;
	CHECK(stat(path, &after) == 0);
	CHECK(before.st_mtime == after.st_mtime && before.st_size == after.st_size);
	/* missing: an empty database, read-only, named as the file; neither the
	 * file nor its directory is made */
	const char *gone = tmp_path("no-such-dir/ro.db");
	CHECK(store_file_absent(gone));
	CHECK_MSG(store_open_readonly(&st, gone) == 0, "%s", forge_last_error());
	CHECK(store_absent(st) && store_readonly(st));
	CHECK_STR(store_path(st), gone);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 0);
	CHECK(put(st, make_event("E3", "T1", "2026-01-01T00:00:00.002Z", "x"), NULL) < 0);
	store_free(st);
	st = NULL;
	CHECK(access(tmp_path("no-such-dir"), F_OK) != 0 && errno == ENOENT);
	CHECK(!store_file_absent(path) && !store_file_absent(":memory:") &&
	      !store_file_absent("postgresql://u@h/db") && !store_file_absent(""));
	/* a path with characters a URI means something by */
	CHECK(store_open(&st, odd) == 0);
	store_free(st);
	st = NULL;
	CHECK_MSG(store_open_readonly(&st, odd) == 0, "%s", forge_last_error());
	CHECK(store_readonly(st) && !store_absent(st));
	store_free(st);
	st = NULL;
	/* an older schema is migrated (opened writable) */
	CHECK(store_open(&st, path) == 0);
	CHECK(store_exec(st, "PRAGMA user_version = 1") == 0);
	store_free(st);
	st = NULL;
	CHECK(store_open_readonly(&st, path) == -1 || !store_readonly(st));
	store_free(st);
	st = NULL;
	/* a newer one refused */
	CHECK(store_open(&st, tmp_path("ro-new.db")) == 0);
	CHECK(store_exec(st, "PRAGMA user_version = 99") == 0);
	store_free(st);
	st = NULL;
	CHECK(store_open_readonly(&st, tmp_path("ro-new.db")) == -1);
	CHECK_MSG(strstr(forge_last_error(), "written by a newer forge"), "%s", forge_last_error());
}

static void test_event_put_idempotent(void)
{
	struct store *st = NULL;
	bool inserted = false;

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(put(st, make_event("E1", "T1", "2026-01-01T00:00:00.000Z", "x"), &inserted) == 0);
	CHECK(inserted);
	CHECK(put(st, make_event("E1", "T1", "2026-01-01T00:00:00.000Z", "y"), &inserted) == 0);
	CHECK(!inserted);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 1);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE type = 'x'"), 1);
	store_free(st);
}

static void test_event_fields_extracted(void)
{
	struct store *st = NULL;
	jv ev = make_event("E1", "T1", "2026-01-01T00:00:00.000Z", "llm.call");
	jv cost = json_set(json_set(jv_object(), "tokens", jv_number(1234)), "usd", jv_number(0.0042));

	ev = json_set(ev, "cost", cost);
	ev = json_set(ev, "duration_ms", jv_number(812));
	ev = json_set(ev, "payload", json_set(jv_object(), "a", jv_number(1)));
	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(put(st, ev, NULL) == 0);
	CHECK_INT(query_int(st, "SELECT tokens FROM events"), 1234);
	CHECK_INT(query_int(st, "SELECT duration_ms FROM events"), 812);
	CHECK_INT(query_int(st, "SELECT cost_usd = 0.0042 FROM events"), 1);
	CHECK_INT(query_int(st, "SELECT payload = '{\"a\":1}' AND source = 'test_store'"
			    " AND phase = 'review' FROM events"), 1);
	/* optional fields absent: NULL columns */
	CHECK(put(st, make_event("E2", "T1", "2026-01-01T00:00:00.000Z", "x"), NULL) == 0);
	CHECK_INT(query_int(st, "SELECT tokens IS NULL AND cost_usd IS NULL AND duration_ms IS NULL"
			    " FROM events WHERE id = 'E2'"), 1);
	CHECK(put(st, json_set(make_event("E3", "T1", "2026-01-01T00:00:00.000Z", "x"), "payload",
			       jv_null()), NULL) == 0);
	CHECK_INT(query_int(st, "SELECT payload IS NULL FROM events WHERE id = 'E3'"), 1);
	/* the stored line must be JSON: it is what replays give back */
	jv e4 = make_event("E4", "T1", "2026-01-01T00:00:00.000Z", "x");
	int rc = store_event_put(st, e4, "{not json", 9, NULL);
	jv_free(e4);
	CHECK(rc == -1);
	CHECK_MSG(strstr(forge_last_error(), "cannot store event 'E4'"), "%s", forge_last_error());
	store_free(st);
}

/* Store a line as read: the record parsed from it, and the line itself. */
static int put_line(struct store *st, const char *line)
{
	jv ev = jv_parse(line);
	int rc = store_event_put(st, ev, line, strlen(line), NULL);

	jv_free(ev);
	return rc;
}

/* The line is kept as written when SQLite reads it as libjq does; the
 * view's columns come from it. */
static void test_event_payload_from_line(void)
{
	struct store *st = NULL;

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(put_line(st, "{ \"kind\":\"event\", \"id\":\"P1\",\"trace_id\":\"T\",\"ts\":\"2026-01-01T00:00:00.000Z\","
			   "\"type\":\"a.b\", \"payload\" : {\"s\": \"x}\\\"]\", \"n\": [1, {\"k\": null}]} , \"duration_ms\":-1.5e0 }") == 0);
	/* the view's payload: the compact text SQLite gives */
	CHECK_INT(query_int(st, "SELECT payload = '{\"s\":\"x}\\\"]\",\"n\":[1,{\"k\":null}]}' FROM events WHERE id = 'P1'"), 1);
	CHECK_INT(query_int(st, "SELECT json_extract(payload, '$.n[1].k') IS NULL AND json_extract(payload, '$.s') = 'x}\"]' "
			    "FROM events WHERE id = 'P1'"), 1);
	CHECK(put_line(st, "{\"id\":\"P2\",\"trace_id\":\"T\",\"ts\":\"t\",\"type\":\"a.b\",\"payload\":null}") == 0);
	CHECK(put_line(st, "{\"id\":\"P3\",\"trace_id\":\"T\",\"ts\":\"t\",\"type\":\"a.b\"}") == 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE id IN ('P2', 'P3') AND payload IS NULL"), 2);
	/* duplicate keys: the last one, as jq keeps it */
	CHECK(put_line(st, "{\"id\":\"P4\",\"trace_id\":\"T\",\"ts\":\"t\",\"type\":\"a.b\",\"payload\":{\"v\":1},"
			   "\"payload\":{\"v\":2}}") == 0);
	CHECK_INT(query_int(st, "SELECT json_extract(payload, '$.v') FROM events WHERE id = 'P4'"), 2);
	/* a key written with an escape: SQLite parses the line */
	CHECK(put_line(st, "{\"id\":\"P5\",\"trace_id\":\"T\",\"ts\":\"t\",\"type\":\"a.b\",\"p\\u0061yload\":{\"v\":5}}") == 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE id = 'P5'"), 1);
	/* text that is not a JSON object is refused */
	jv ev = make_event("P6", "T", "t", "a.b");
	CHECK(store_event_put(st, ev, "{\"id\":\"P6\",\"x\":tru}", 20, NULL) == -1);
	CHECK(store_event_put(st, ev, "{\"id\":\"P6\"} x", 13, NULL) == -1);
	jv_free(ev);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE id = 'P6'"), 0);
	store_free(st);
}

/*
 * A line libjq takes but SQLite would read otherwise, or not at all, is
 * kept as libjq writes it: the view's columns then say what the record
 * says.
 */
static void test_event_line_kept_as_libjq_reads_it(void)
{
	struct store *st = NULL;
	struct lines got = { .len = 0 };

	CHECK(store_open(&st, ":memory:") == 0);
	/* 01 and nan: libjq 1.6 takes them, RFC 8259 and SQLite do not */
	CHECK(put_line(st, "{\"id\":\"N1\",\"trace_id\":\"TN\",\"ts\":\"t1\",\"type\":\"a.b\","
			   "\"payload\":{\"n\":01,\"x\":nan}}") == 0);
	/* a key twice: libjq keeps the last, SQLite would read the first */
	CHECK(put_line(st, "{\"id\":\"N2\",\"trace_id\":\"TN\",\"ts\":\"t2\",\"type\":\"a.b\","
			   "\"phase\":\"plan\",\"phase\":\"test\"}") == 0);
	/* a key written with an escape */
	CHECK(put_line(st, "{\"id\":\"N3\",\"trace_id\":\"TN\",\"ts\":\"t3\",\"type\":\"a.b\","
			   "\"ph\\u0061se\":\"deploy\"}") == 0);
	/* a value written with an escape, a plain line: kept as written */
	CHECK(put_line(st, "{\"id\":\"N4\",\"trace_id\":\"TN\",\"ts\":\"t4\",\"type\":\"a.b\","
			   " \"source\":\"sr\\u0063\"}") == 0);
	CHECK_INT(query_int(st, "SELECT json_extract(payload, '$.n') = 1 AND json_extract(payload, '$.x') IS NULL"
			    " FROM events WHERE id = 'N1'"), 1);
	CHECK_INT(query_int(st, "SELECT phase = 'test' FROM events WHERE id = 'N2'"), 1);
	CHECK_INT(query_int(st, "SELECT phase = 'deploy' FROM events WHERE id = 'N3'"), 1);
	CHECK_INT(query_int(st, "SELECT source = 'src' FROM events WHERE id = 'N4'"), 1);
	CHECK_INT(store_events_foreach(st, "TN", collect, &got), 0);
	CHECK_INT(got.count, 4);
	CHECK_MSG(strstr(got.text, "{\"id\":\"N1\",\"trace_id\":\"TN\",\"ts\":\"t1\",\"type\":\"a.b\","
			 "\"payload\":{\"n\":1,\"x\":null}}\n"), "%s", got.text);
	CHECK_MSG(strstr(got.text, "\"phase\":\"test\"}\n"), "%s", got.text);
	CHECK_MSG(strstr(got.text, " \"source\":\"sr\\u0063\"}\n"), "%s", got.text);
	store_free(st);
}

/* store_event_put_scanned: the fields a stream read without libjq. */
static void test_event_put_scanned(void)
{
	const char *line = "{\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAAA\",\"trace_id\":\"TS\","
			   "\"ts\":\"2026-01-01T00:00:00.000Z\",\"source\":\"s\",\"phase\":null,\"type\":\"x.y\","
			   "\"payload\":{\"k\":[1,2]},\"cost\":{\"tokens\":7,\"usd\":0.5},\"duration_ms\":9}";
	struct store *st = NULL;
	struct json_event ev;
	bool inserted = false;

	CHECK(json_event_scan(&ev, line, strlen(line)));
	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_event_put_scanned(st, &ev, line, strlen(line), &inserted) == 0);
	CHECK(inserted);
	CHECK(store_event_put_scanned(st, &ev, line, strlen(line), &inserted) == 0);
	CHECK(!inserted);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE trace_id = 'TS' AND type = 'x.y'"
			    " AND ts = '2026-01-01T00:00:00.000Z' AND source = 's' AND phase IS NULL"
			    " AND payload = '{\"k\":[1,2]}' AND tokens = 7 AND cost_usd = 0.5 AND duration_ms = 9"), 1);
	char *rec = query_text(st, "SELECT record FROM events");
	CHECK_STR(rec, line);
	free(rec);
	/* without an id: refused, as store_event_put refuses it */
	ev.id = NULL;
	CHECK(store_event_put_scanned(st, &ev, line, strlen(line), NULL) == -1);
	CHECK_MSG(strstr(forge_last_error(), "'id' is missing"), "%s", forge_last_error());
	store_free(st);
}

/* Run migrations 1..n of this program on db, as an older forge would have. */
static int migrate_to(sqlite3 *db, int n)
{
	int done = 0;

	for (const struct resource *r = resource_all(); r->name && done < n; r++) {
		if (strncmp(r->name, "sql/", 4) != 0 || strlen(r->name) < 12)
			continue;
		if (sqlite3_exec(db, r->data, NULL, NULL, NULL) != SQLITE_OK)
			return -1;
		done++;
	}
	char pragma[64];
	snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", n);
	return sqlite3_exec(db, pragma, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/*
 * A database of schema 13 opens: llm_calls and checkpoints keep every row
 * and their indexes, and no longer parse the JSON they are given (the
 * writers make it; 014-json-unchecked.sql says why).
 */
static void test_json_checks_dropped(void)
{
	const char *path = tmp_path("v13.db");
	struct store *st = NULL;
	sqlite3 *db = NULL;

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(migrate_to(db, 13) == 0);
	CHECK(sqlite3_exec(db,
		"INSERT INTO llm_calls (id, ts, trace_id, phase, provider, model, request, response,"
		" input_tokens, cost_usd) VALUES"
		" (7, '2026-01-01T00:00:01.000Z', 'T13', 'plan', 'anthropic', 'm', '{\"a\":1}', NULL, 12, 0.5),"
		" (9, '2026-01-01T00:00:02.000Z', 'T13', 'implement', 'openai', 'n', NULL, '{\"b\":[2]}', 3, NULL);"
		"INSERT INTO checkpoints (id, trace_id, phase, status, ts, state) VALUES"
		" ('C1', 'T13', 'plan', 'ok', '2026-01-01T00:00:03.000Z', '{\"kind\":\"state\"}');"
		"INSERT INTO llm_calls (ts, provider, request) VALUES ('t', 'p', 'not json');",
		NULL, NULL, NULL) == SQLITE_CONSTRAINT);    /* schema 13 still checks */
	sqlite3_close(db);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	CHECK_INT(query_int(st, "SELECT count(*) FROM llm_calls"), 2);
	CHECK_INT(query_int(st, "SELECT count(*) FROM llm_calls WHERE id = 7 AND trace_id = 'T13'"
			    " AND phase = 'plan' AND request = '{\"a\":1}' AND response IS NULL"
			    " AND input_tokens = 12 AND cost_usd = 0.5"), 1);
	CHECK_INT(query_int(st, "SELECT count(*) FROM llm_calls WHERE id = 9 AND response = '{\"b\":[2]}'"), 1);
	CHECK_INT(query_int(st, "SELECT count(*) FROM checkpoints WHERE id = 'C1' AND state = '{\"kind\":\"state\"}'"), 1);
	CHECK_INT(query_int(st, "SELECT count(*) FROM sqlite_schema WHERE name IN"
			    " ('llm_calls_trace', 'checkpoints_trace_seq') AND type = 'index'"), 2);
	CHECK_INT(query_int(st, "SELECT count(*) FROM sqlite_schema WHERE sql LIKE '%json_valid%'"
			    " AND name IN ('llm_calls', 'checkpoints')"), 0);
	CHECK(store_exec(st, "INSERT INTO llm_calls (ts, provider, request) VALUES ('t', 'p', '{}')") == 0);
	CHECK_INT(query_int(st, "SELECT max(id) FROM llm_calls"), 10);
	store_free(st);
}

/*
 * A database of schema 8 (events in one table with their columns copied
 * out) opens: its events move to event_log, keep their bytes, and read
 * the same through the view; a record SQLite cannot read is rebuilt.
 */
static void test_events_table_upgraded(void)
{
	const char *path = tmp_path("v8.db");
	struct store *st = NULL;
	struct lines got = { .len = 0 };
	sqlite3 *db = NULL;

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(migrate_to(db, 8) == 0);
	CHECK(sqlite3_exec(db,
		"INSERT INTO events (id, trace_id, ts, source, phase, type, payload, tokens, cost_usd,"
		" duration_ms, record) VALUES"
		" ('E1', 'T8', '2026-01-01T00:00:01.000Z', 's', 'plan', 'a.b', '{\"v\": 1}', 5, 0.25, 3,"
		"  '{\"id\":\"E1\",\"trace_id\":\"T8\",\"ts\":\"2026-01-01T00:00:01.000Z\",\"source\":\"s\","
		"\"phase\":\"plan\",\"type\":\"a.b\",\"payload\": {\"v\": 1},\"cost\":{\"tokens\":5,\"usd\":0.25},"
		"\"duration_ms\":3}'),"
		" ('E0', 'T8', '2026-01-01T00:00:00.000Z', 's', NULL, 'a.c', NULL, NULL, NULL, NULL,"
		"  '{\"id\":\"E0\",\"trace_id\":\"T8\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"source\":\"s\",\"type\":\"a.c\"}'),"
		" ('E2', 'T8', '2026-01-01T00:00:02.000Z', 's', NULL, 'a.d', '{\"n\":01}', NULL, NULL, NULL,"
		"  '{\"id\":\"E2\",\"payload\":{\"n\":01}}')", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 3);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE id = 'E1' AND source = 's' AND phase = 'plan'"
			    " AND json_extract(payload, '$.v') = 1 AND tokens = 5 AND cost_usd = 0.25"
			    " AND duration_ms = 3"), 1);
	CHECK_INT(query_int(st, "SELECT json_extract(record, '$.unreadable_record') = '{\"id\":\"E2\","
			    "\"payload\":{\"n\":01}}' AND type = 'a.d' FROM events WHERE id = 'E2'"), 1);
	/* replay: in order, byte for byte */
	CHECK_INT(store_events_foreach(st, "T8", collect, &got), 0);
	CHECK_INT(got.count, 3);
	CHECK_MSG(strncmp(got.text, "{\"id\":\"E0\",", 11) == 0, "%s", got.text);
	CHECK_MSG(strstr(got.text, "\"payload\": {\"v\": 1},"), "%s", got.text);
	/* still idempotent by id, still append-only */
	CHECK(put(st, make_event("E1", "T8", "2026-01-01T00:00:09.000Z", "x.y"), NULL) == 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 3);
	CHECK(store_exec(st, "DELETE FROM event_log") == -1);
	/* SQL may persist through the view, by id */
	CHECK(store_exec(st, "INSERT INTO events (id, trace_id, ts, type, record) VALUES ('E9', 'T8',"
			 " '2026-01-01T00:00:09.000Z', 'a.e', '{\"id\":\"E9\",\"payload\":{\"w\":9}}'),"
			 " ('E1', 'T8', 'x', 'x', '{}')") == 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 4);
	CHECK_INT(query_int(st, "SELECT json_extract(payload, '$.w') FROM events WHERE id = 'E9'"), 9);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE id = 'E1' AND type = 'a.b'"), 1);
	store_free(st);
}

/*
 * A database of schema 16 (a trace's events and checkpoints read by ts,
 * then id) opens: each row keeps its bytes, a trace's history reads as it
 * did (its rows numbered in that order, whatever order they were inserted
 * in), and what is stored from then on comes after it whatever its ts.
 * The view, its triggers and the append-only rule are as they were.
 */
static void test_history_order_upgraded(void)
{
	const char *path = tmp_path("v16.db");
	struct store *st = NULL;
	struct lines got = { .len = 0 };
	sqlite3 *db = NULL;
	jv state = parse("{\"phase\":\"test\"}"), cp = jv_null();

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(migrate_to(db, 16) == 0);
	CHECK(sqlite3_exec(db,
		"INSERT INTO event_log (id, trace_id, ts, type, record) VALUES"
		" ('E2', 'T16', '2026-01-01T00:00:02.000Z', 'b', '{\"id\":\"E2\"}'),"
		" ('E1', 'T16', '2026-01-01T00:00:01.000Z', 'a', '{\"id\":\"E1\"}'),"
		" ('E3', 'T16', '2026-01-01T00:00:02.000Z', 'c', '{\"id\":\"E3\"}'),"
		" ('F1', 'U16', '2025-01-01T00:00:00.000Z', 'a', '{\"id\":\"F1\"}');"
		"INSERT INTO checkpoints (id, trace_id, phase, status, ts, state) VALUES"
		" ('C2', 'T16', 'implement', 'ok', '2026-01-01T00:00:02.000Z', '{\"phase\":\"implement\"}'),"
		" ('C1', 'T16', 'plan', 'ok', '2026-01-01T00:00:01.000Z', '{\"phase\":\"plan\"}')",
		NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	CHECK_INT(store_events_foreach(st, "T16", collect, &got), 0);
	CHECK_STR(got.text, "{\"id\":\"E1\"}\n{\"id\":\"E2\"}\n{\"id\":\"E3\"}\n");
	CHECK(store_checkpoint_latest(&cp, st, "T16") == 0);
	CHECK_STR(json_get_str(cp, "phase"), "implement");
	jv_free(cp);
	/* stored from now on: after them, its ts an hour before */
	CHECK(put(st, make_event("E0", "T16", "2025-12-31T23:00:00.000Z", "d"), NULL) == 0);
	got.len = 0;
	got.count = 0;
	CHECK_INT(store_events_foreach(st, "T16", collect, &got), 0);
	CHECK_INT(got.count, 4);
	CHECK_MSG(strstr(got.text, "{\"id\":\"E3\"}\n{\"kind\":\"event\",\"id\":\"E0\""), "%s", got.text);
	CHECK(store_exec(st, "INSERT INTO checkpoints (id, trace_id, phase, status, ts, state) VALUES"
			 " ('C0', 'T16', 'review', 'ok', '2025-12-31T23:00:00.000Z', '{\"phase\":\"review\"}')") == 0);
	CHECK(store_checkpoint_latest(&cp, st, "T16") == 0);
	CHECK_STR(json_get_str(cp, "phase"), "review");
	jv_free(cp);
	CHECK(store_checkpoint_save(st, "T16", NULL, state, NULL) == 0);
	CHECK(store_checkpoint_latest(&cp, st, "T16") == 0);
	CHECK_STR(json_get_str(cp, "phase"), "test");
	jv_free(cp);
	/* the same view, triggers and indexes as a new database's */
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE trace_id = 'U16' AND type = 'a'"), 1);
	CHECK(store_exec(st, "DELETE FROM event_log") == -1);
	CHECK(store_exec(st, "UPDATE events SET type = 'x'") == -1);
	CHECK(store_exec(st, "INSERT INTO events (id, trace_id, ts, type, record) VALUES"
			 " ('E9', 'T16', 't', 'e', '{\"id\":\"E9\"}'), ('E1', 'T16', 't', 'x', '{}')") == 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM event_log WHERE trace_id = 'T16'"), 5);
	CHECK_INT(query_int(st, "SELECT seq = (SELECT max(seq) FROM event_log) FROM event_log WHERE id = 'E9'"), 1);
	char *objects = query_text(st, SCHEMA_OBJECTS);
	struct store *fresh = NULL;
	CHECK(store_open(&fresh, ":memory:") == 0);
	char *want = query_text(fresh, SCHEMA_OBJECTS);
	CHECK_STR(objects, want);
	free(objects);
	free(want);
	store_free(fresh);
	jv_free(state);
	store_free(st);
}

/*
 * 019-events-trace-index: a database of 018 (events indexed on (trace_id,
 * seq)) migrates with its events intact, a trace's still read in the order
 * they were written (not by ts or id), by the new index, with no sort.
 */
static void test_events_trace_index_upgraded(void)
{
	const char *path = tmp_path("v18.db");
	struct store *st = NULL;
	struct lines got = { .len = 0 };
	sqlite3 *db = NULL;

	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(migrate_to(db, 18) == 0);
	CHECK(sqlite3_exec(db,
		"INSERT INTO event_log (id, trace_id, ts, type, record) VALUES"
		" ('E2', 'T18', '2026-01-01T00:00:02.000Z', 'b', '{\"id\":\"E2\"}'),"
		" ('F1', 'U18', '2025-01-01T00:00:00.000Z', 'a', '{\"id\":\"F1\"}'),"
		" ('E3', 'T18', '2026-01-01T00:00:00.000Z', 'c', '{\"id\":\"E3\"}'),"
		" ('E1', 'T18', '2026-01-01T00:00:01.000Z', 'a', '{\"id\":\"E1\"}')",
		NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	CHECK_INT(query_int(st, "SELECT count(*) FROM sqlite_master WHERE name = 'event_log_trace_seq'"), 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM event_log"), 4);
	CHECK_INT(store_events_foreach(st, "T18", collect, &got), 0);
	CHECK_STR(got.text, "{\"id\":\"E2\"}\n{\"id\":\"E3\"}\n{\"id\":\"E1\"}\n");
	/* one stored now goes after them */
	CHECK(put(st, make_event("E0", "T18", "2025-12-31T23:00:00.000Z", "d"), NULL) == 0);
	got.len = 0;
	got.count = 0;
	CHECK_INT(store_events_foreach(st, "T18", collect, &got), 0);
	CHECK_INT(got.count, 4);
	CHECK_MSG(strstr(got.text, "{\"id\":\"E1\"}\n{\"kind\":\"event\",\"id\":\"E0\""), "%s", got.text);
	/* a trace in order and its newest: the index, no sort */
	sqlite3_stmt *s = NULL;
	const char *const reads[] = {
		"EXPLAIN QUERY PLAN SELECT record FROM event_log WHERE trace_id = 'T18' ORDER BY seq",
		"EXPLAIN QUERY PLAN SELECT ts FROM event_log WHERE trace_id = 'T18' ORDER BY seq DESC LIMIT 1",
	};
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
		struct buf b = BUF_INIT;

		CHECK(sqlite3_prepare_v2(store_db(st), reads[i], -1, &s, NULL) == SQLITE_OK);
		buf_adds(&b, "plan:");
		while (sqlite3_step(s) == SQLITE_ROW) {
			buf_adds(&b, (const char *)sqlite3_column_text(s, 3));
			buf_addch(&b, ';');
		}
		sqlite3_finalize(s);
		CHECK_MSG(strstr(b.buf, "USING INDEX event_log_trace (trace_id=?)") && !strstr(b.buf, "TEMP B-TREE"),
			  "%s", b.buf);
		buf_release(&b);
	}
	/* the same schema as a new database's */
	char *objects = query_text(st, SCHEMA_OBJECTS);
	struct store *fresh = NULL;
	CHECK(store_open(&fresh, ":memory:") == 0);
	char *want = query_text(fresh, SCHEMA_OBJECTS);
	CHECK_STR(objects, want);
	free(objects);
	free(want);
	store_free(fresh);
	store_free(st);
}

/*
 * Events put inside a transaction wait in store's queue and go in 64 at a
 * time: whatever reads the database in that transaction sees all of them
 * (through the store and through store_db()'s handle), a duplicate id in
 * the same batch is still a no-op, a rollback drops the queued ones with
 * the rest, and a commit stores them.
 */
static void test_events_queued_in_transaction(void)
{
	struct store *st = NULL;
	char id[32], ts[32];
	sqlite3_stmt *s;

	CHECK(store_open(&st, tmp_path("queue.db")) == 0);
	/* the queue's inserts run with secure_delete off (store_queue_flush);
	 * what runs after them on the connection has the setting it had */
	long long secure = query_int(st, "PRAGMA secure_delete");
	CHECK(secure == 0 || secure == 1);
	for (int round = 0; round < 2; round++) {
		CHECK(store_begin(st) == 0);
		for (int i = 0; i < 150; i++) {
			/* every tenth event repeats the one before it */
			int k = i % 10 == 9 ? i - 1 : i;
			snprintf(id, sizeof id, "E%04d", k);
			snprintf(ts, sizeof ts, "2026-01-01T00:00:%02d.%03dZ", k / 1000, k % 1000);
			CHECK(put(st, make_event(id, "TQ", ts, "q"), NULL) == 0);
		}
		/* the last 150 - 128 are still queued: a read flushes them */
		CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE trace_id = 'TQ'"), 135);
		CHECK_INT(query_int(st, "PRAGMA secure_delete"), secure);
		CHECK(put(st, make_event("E9999", "TQ", "2026-01-01T00:00:59.000Z", "q"), NULL) == 0);
		CHECK(sqlite3_prepare_v2(store_db(st), "SELECT count(*) FROM event_log", -1, &s, NULL) == SQLITE_OK);
		CHECK(sqlite3_step(s) == SQLITE_ROW);
		CHECK_INT(sqlite3_column_int(s, 0), 136);
		sqlite3_finalize(s);
		CHECK(put(st, make_event("E9998", "TQ", "2026-01-01T00:00:58.000Z", "q"), NULL) == 0);
		if (round == 0) {
			CHECK(store_rollback(st) == 0);
			CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 0);
		} else {
			CHECK(store_commit(st) == 0);
		}
	}
	/* 136 of the first round (the last one queued went with the rollback), 137 */
	CHECK_INT(store_events_added(st), 273);
	store_free(st);
	CHECK(store_open(&st, tmp_path("queue.db")) == 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 137);
	CHECK_INT(query_int(st, "SELECT count(DISTINCT id) FROM events"), 137);
	CHECK_INT(query_int(st, "SELECT id = 'E9999' FROM event_log ORDER BY ts DESC LIMIT 1"), 1);
	store_free(st);
}

/*
 * A commit finds fewer than 64 events queued and inserts them 2^k at a
 * time (32 + 16 + ...): every size from 1 to 130 events in a transaction,
 * each with an id stored before (in an earlier transaction) and one
 * repeated within the queue, stores each new event once, in its columns.
 */
static void test_events_queued_every_count(void)
{
	struct store *st = NULL;
	char id[32], ts[32];
	long added = 0, want = 0;

	CHECK(store_open(&st, tmp_path("queue-count.db")) == 0);
	for (int n = 1, next = 0; n <= 130; n++) {
		CHECK(store_begin(st) == 0);
		for (int i = 0; i < n; i++) {
			/* the first repeats the last event stored; every seventh the one before it */
			int k = i == 0 && next > 0 ? next - 1 : i % 7 == 6 ? next - 1 : next++;
			snprintf(id, sizeof id, "E%06d", k);
			snprintf(ts, sizeof ts, "2026-01-01T%02d:%02d:%02d.000Z", k / 3600, k / 60 % 60, k % 60);
			CHECK(put(st, make_event(id, "TC", ts, "q.count"), NULL) == 0);
		}
		CHECK(store_commit(st) == 0);
		want = next;
		added = store_events_added(st);
		CHECK_MSG(added == want, "%d in a transaction: %ld stored, want %ld", n, added, want);
	}
	CHECK_INT(query_int(st, "SELECT count(*) FROM event_log"), (int)want);
	CHECK_INT(query_int(st, "SELECT count(DISTINCT id) FROM event_log"), (int)want);
	CHECK_INT(query_int(st, "SELECT count(*) FROM event_log WHERE trace_id = 'TC' AND type = 'q.count'"
			    " AND ts = printf('2026-01-01T%02d:%02d:%02d.000Z', CAST(substr(id, 2) AS INTEGER) / 3600,"
			    " CAST(substr(id, 2) AS INTEGER) / 60 % 60, CAST(substr(id, 2) AS INTEGER) % 60)"
			    " AND record ->> '$.id' = id"), (int)want);
	store_free(st);
}

static void test_event_missing_field_refused(void)
{
	struct store *st = NULL;
	jv ev = json_set(make_event("E1", "T1", "2026-01-01T00:00:00.000Z", "x"), "ts", jv_number(3));

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(put(st, ev, NULL) == -1);
	CHECK_MSG(strstr(forge_last_error(), "'ts' is missing or not a string"), "%s",
		  forge_last_error());
	CHECK(put(st, jv_array(), NULL) == -1);
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 0);
	store_free(st);
}

static void test_event_record_byte_identical(void)
{
	/* Odd spacing, key order, escapes and a number jq would reformat. */
	static const char raw[] =
		"{ \"kind\" :\"event\",\"type\":\"x\", \"id\":\"E1\",\"trace_id\":\"T1\","
		"\"ts\":\"2026-01-01T00:00:00.000Z\",  \"payload\":{\"s\":\"caf\\u00e9 \\ud83d\\ude00\","
		"\"n\":1.50,\"e\":1E3}}";
	struct store *st = NULL;
	struct lines got = { .len = 0 };
	jv ev = json_parse(raw, strlen(raw));

	CHECK(jv_is_valid(ev));
	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_event_put(st, ev, raw, strlen(raw), NULL) == 0);
	jv_free(ev);
	/* without raw: the compact serialisation */
	CHECK(put(st, make_event("E2", "T1", "2026-01-01T00:00:00.001Z", "y"), NULL) == 0);
	CHECK_INT(store_events_foreach(st, "T1", collect, &got), 0);
	CHECK_INT(got.count, 2);
	CHECK(got.len == strlen(raw) + 1 + strlen(got.text + strlen(raw) + 1));
	CHECK(memcmp(got.text, raw, strlen(raw)) == 0);
	CHECK_STR(got.text + strlen(raw) + 1,
		  "{\"kind\":\"event\",\"id\":\"E2\",\"trace_id\":\"T1\",\"ts\":\"2026-01-01T00:00:00.001Z\","
		  "\"source\":\"test_store\",\"phase\":\"review\",\"type\":\"y\",\"payload\":{}}\n");
	store_free(st);
}

/* A trace's events in the order they were stored, alone or queued in a
 * batch, never by ts or id (a clock stepped back, another machine's clock:
 * before, what was written before the step came last). */
static void test_events_in_stored_order(void)
{
	struct store *st = NULL;
	struct lines got = { .len = 0 };
	static const char *const order[][2] = {   /* inserted in this order */
		{ "C", "2026-01-01T00:00:02.000Z" },
		{ "B", "2026-01-01T00:00:01.000Z" },
		{ "A", "2026-01-01T00:00:02.000Z" },
		{ "D", "2026-01-01T00:00:00.500Z" },
	};

	CHECK(store_open(&st, ":memory:") == 0);
	for (size_t i = 0; i < 2; i++)
		CHECK(put(st, make_event(order[i][0], "T1", order[i][1], "x"), NULL) == 0);
	CHECK(store_begin(st) == 0);
	for (size_t i = 2; i < 4; i++)
		CHECK(put(st, make_event(order[i][0], "T1", order[i][1], "x"), NULL) == 0);
	CHECK(put(st, make_event("C", "T1", "2027-01-01T00:00:00.000Z", "x"), NULL) == 0);  /* again: stays first */
	CHECK(store_commit(st) == 0);
	CHECK(put(st, make_event("Z", "T2", "2025-01-01T00:00:00.000Z", "x"), NULL) == 0);
	CHECK_INT(store_events_foreach(st, "T1", collect, &got), 0);
	CHECK_INT(got.count, 4);
	const char *d = strstr(got.text, "\"D\""), *b = strstr(got.text, "\"B\""),
		   *a = strstr(got.text, "\"A\""), *c = strstr(got.text, "\"C\"");
	CHECK(d && b && a && c);
	CHECK_MSG(c < b && b < a && a < d, "%s", got.text);
	CHECK(!strstr(got.text, "\"Z\""));
	/* a non-zero return stops the walk and is returned */
	struct lines two = { .stop_after = 2 };
	CHECK_INT(store_events_foreach(st, "T1", collect, &two), 7);
	CHECK_INT(two.count, 2);
	/* and the statement is reusable afterwards */
	struct lines again = { .len = 0 };
	CHECK_INT(store_events_foreach(st, "T1", collect, &again), 0);
	CHECK_INT(again.count, 4);
	store_free(st);
}

static void test_events_append_only(void)
{
	struct store *st = NULL;

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(put(st, make_event("E1", "T1", "2026-01-01T00:00:00.000Z", "x"), NULL) == 0);
	/* through the view events and in its table */
	CHECK(store_exec(st, "UPDATE events SET type = 'y'") == -1);
	CHECK_MSG(strstr(forge_last_error(), "append-only: UPDATE refused"), "%s", forge_last_error());
	CHECK(store_exec(st, "DELETE FROM events") == -1);
	CHECK_MSG(strstr(forge_last_error(), "append-only: DELETE refused"), "%s", forge_last_error());
	CHECK(store_exec(st, "UPDATE event_log SET type = 'y'") == -1);
	CHECK_MSG(strstr(forge_last_error(), "append-only: UPDATE refused"), "%s", forge_last_error());
	CHECK(store_exec(st, "DELETE FROM event_log") == -1);
	CHECK_MSG(strstr(forge_last_error(), "append-only: DELETE refused"), "%s", forge_last_error());
	CHECK_INT(query_int(st, "SELECT count(*) FROM events WHERE type = 'x'"), 1);
	store_free(st);
}

static void test_batch_commit_and_rollback(void)
{
	struct store *st = NULL;
	char id[32];

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_begin(st) == 0);
	CHECK(store_begin(st) == -1);   /* no nesting */
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof id, "B%03d", i);
		CHECK(put(st, make_event(id, "T1", "2026-01-01T00:00:00.000Z", "x"), NULL) == 0);
	}
	CHECK(store_commit(st) == 0);
	CHECK(store_begin(st) == 0);
	CHECK(put(st, make_event("R1", "T1", "2026-01-01T00:00:00.000Z", "x"), NULL) == 0);
	CHECK(store_rollback(st) == 0);
	CHECK(store_rollback(st) == 0);  /* nothing open: no-op */
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 100);
	store_free(st);
}

static void test_checkpoints_round_trip(void)
{
	struct store *st = NULL;
	char *id1 = NULL, *id2 = NULL;
	jv s1 = parse("{\"kind\":\"state\",\"v\":1,\"trace_id\":\"T1\",\"phase\":\"plan\","
			   "\"status\":\"ok\",\"plan\":{\"summary\":\"d\\u00e9j\\u00e0\",\"n\":[1,2.5]}}");
	jv s2 = parse("{\"kind\":\"state\",\"v\":1,\"trace_id\":\"T1\",\"phase\":\"review\","
			   "\"status\":\"rejected\"}");
	jv got = jv_invalid(), list = jv_invalid();

	CHECK(jv_is_valid(s1) && jv_is_valid(s2));
	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_checkpoint_latest(&got, st, "T1") == 0);
	CHECK(jv_get_kind(got) == JV_KIND_NULL);
	CHECK(store_checkpoint_save(st, "T1", NULL, s1, &id1) == 0);
	CHECK(store_checkpoint_save(st, "T1", "review", s2, &id2) == 0);
	CHECK(id1 && id2 && strlen(id1) == 26 && strlen(id2) == 26);
	CHECK(strspn(id1, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") == 26);
	CHECK(strcmp(id1, id2) < 0);

	CHECK(store_checkpoint_latest(&got, st, "T1") == 0);
	CHECK(json_equal(got, s2));
	jv_free(got);

	CHECK(store_checkpoint_load(&got, st, id1) == 0);
	CHECK_STR(json_get_str(got, "id"), id1);
	CHECK_STR(json_get_str(got, "trace_id"), "T1");
	CHECK_STR(json_get_str(got, "phase"), "plan");
	CHECK_STR(json_get_str(got, "status"), "ok");
	CHECK(json_get_str(got, "ts") && strlen(json_get_str(got, "ts")) == 24);
	jv state = json_get(got, "state");
	CHECK(json_equal(state, s1));
	jv_free(state);
	jv_free(got);

	CHECK(store_checkpoint_load(&got, st, "nope") == 0);
	CHECK(jv_get_kind(got) == JV_KIND_NULL);

	CHECK(store_checkpoint_list(&list, st, "T1") == 0);
	CHECK_INT(jv_array_length(jv_copy(list)), 2);
	jv first = jv_array_get(jv_copy(list), 0), second = jv_array_get(jv_copy(list), 1);
	CHECK_STR(json_get_str(first, "id"), id1);
	CHECK_STR(json_get_str(second, "phase"), "review");
	CHECK(!json_has(first, "state"));
	jv_free(first);
	jv_free(second);
	jv_free(list);
	free(id1);
	free(id2);
	jv_free(s1);
	jv_free(s2);
	store_free(st);
}

static void test_checkpoint_ids_increase(void)
{
	struct store *st = NULL;
	char *prev = NULL, *id = NULL;
	jv state = parse("{\"phase\":\"plan\"}");

	CHECK(store_open(&st, ":memory:") == 0);
	for (int i = 0; i < 500; i++) {
		CHECK(store_checkpoint_save(st, "T1", NULL, state, &id) == 0);
		CHECK_MSG(!prev || strcmp(prev, id) < 0, "%s !< %s", prev, id);
		free(prev);
		prev = id;
	}
	free(prev);
	jv_free(state);
	store_free(st);
}

/* A checkpoint written after the clock went back is the newest: resume
 * takes the one saved last, and its ts stays its own time (before: moved
 * after the trace's newest, as "newest" was by ts). */
static void test_checkpoint_after_clock_back(void)
{
	struct store *st = NULL;
	jv state = parse("{\"phase\":\"review\"}"), got;
	char *id = NULL, ts[TIMESTAMP_LEN + 1];

	CHECK(store_open(&st, ":memory:") == 0);
	/* a checkpoint stamped an hour ahead of this clock */
	CHECK(store_exec(st, "INSERT INTO checkpoints (id, trace_id, phase, status, ts, state) VALUES "
		       "('01JAHEAD0000000000000000000', 'T1', 'plan', 'ok', '2099-01-01T00:00:00.000Z', "
		       "'{\"phase\":\"plan\"}')") == 0);
	CHECK(store_checkpoint_save(st, "T1", NULL, state, &id) == 0);
	CHECK(store_checkpoint_latest(&got, st, "T1") == 0);
	CHECK_STR(json_get_str(got, "phase"), "review");
	jv_free(got);
	CHECK(store_checkpoint_load(&got, st, id) == 0);
	timestamp_format(ts, ulid_ms(id));
	CHECK_STR(json_get_str(got, "ts"), ts);
	jv_free(got);
	free(id);
	jv_free(state);
	store_free(st);
}

/* Checkpoint ids come from ids.c: the checkpoint's ts is its id's time,
 * and a forked child does not repeat the ids its parent makes next. */
static void test_checkpoint_ids_from_ids_c(void)
{
	struct store *st = NULL;
	char *id = NULL, mine[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	jv state = parse("{\"phase\":\"plan\"}"), got = jv_invalid();
	int pipefd[2];

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_checkpoint_save(st, "T1", NULL, state, &id) == 0);
	CHECK(id && ulid_valid(id));
	CHECK(store_checkpoint_load(&got, st, id) == 0);
	timestamp_format(ts, ulid_ms(id));
	CHECK_STR(json_get_str(got, "ts"), ts);
	jv_free(got);

	/* Parent and child each make their next ids at once: none in common. */
	CHECK(pipe(pipefd) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char child[ULID_LEN + 1];

		close(pipefd[0]);
		for (int i = 0; i < 50; i++) {
			ulid_new(child);
			if (write(pipefd[1], child, ULID_LEN) != ULID_LEN)
				_exit(1);
		}
		_exit(0);
	}
	close(pipefd[1]);
	char theirs[50][ULID_LEN + 1], ours[50][ULID_LEN + 1];
	for (int i = 0; i < 50; i++)
		ulid_new(ours[i]);
	for (int i = 0; i < 50; i++) {
		CHECK(read(pipefd[0], theirs[i], ULID_LEN) == ULID_LEN);
		theirs[i][ULID_LEN] = '\0';
	}
	close(pipefd[0]);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int i = 0; i < 50; i++)
		for (int j = 0; j < 50; j++)
			CHECK_MSG(strcmp(ours[i], theirs[j]) != 0, "child repeated %s", ours[i]);
	ulid_new(mine);
	CHECK(strcmp(id, mine) < 0);
	free(id);
	jv_free(state);
	store_free(st);
}

static void test_runs(void)
{
	struct store *st = NULL;
	jv run = jv_invalid();

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_run_get(&run, st, "T1") == 0);
	CHECK(jv_get_kind(run) == JV_KIND_NULL);
	CHECK(store_run_create(st, "T1", "add --version", "/repo",
			       parse("{\"budget\":50}")) == 0);
	CHECK(store_run_create(st, "T1", "again", NULL, jv_null()) == -1);
	CHECK_MSG(strstr(forge_last_error(), "run 'T1' already exists"), "%s", forge_last_error());

	CHECK(store_run_get(&run, st, "T1") == 0);
	CHECK_STR(json_get_str(run, "trace_id"), "T1");
	CHECK_STR(json_get_str(run, "task"), "add --version");
	CHECK_STR(json_get_str(run, "repo"), "/repo");
	CHECK_STR(json_get_str(run, "status"), "pending");
	jv config = json_get(run, "config");
	CHECK(json_get_num(config, "budget", 0) == 50);
	jv_free(config);
	CHECK(json_get_str(run, "completed_at") == NULL);
	jv_free(run);

	CHECK(store_run_update(st, "T1", "running", "plan", NULL) == 0);
	CHECK(store_run_update(st, "T1", NULL, "review", NULL) == 0);
	CHECK(store_run_set_cost(st, "T1", 1500, 0.25) == 0);
	CHECK(store_run_get(&run, st, "T1") == 0);
	CHECK_STR(json_get_str(run, "status"), "running");
	CHECK_STR(json_get_str(run, "current_phase"), "review");
	CHECK(json_get_num(run, "total_tokens", 0) == 1500);
	CHECK(json_get_num(run, "total_cost_usd", 0) == 0.25);
	jv_free(run);

	CHECK(store_run_update(st, "T1", "failed", NULL, "git failed") == 0);
	CHECK(store_run_get(&run, st, "T1") == 0);
	CHECK_STR(json_get_str(run, "status"), "failed");
	CHECK_STR(json_get_str(run, "error"), "git failed");
	CHECK(json_get_str(run, "completed_at") != NULL);
	jv_free(run);
	/* the same row without its configuration */
	jv whole = jv_null();
	CHECK(store_run_get(&whole, st, "T1") == 0);
	CHECK(store_run_get_brief(&run, st, "T1") == 0);
	CHECK(json_has(run, "config"));
	config = json_get(run, "config");
	CHECK(jv_get_kind(config) == JV_KIND_NULL);
	jv_free(config);
	CHECK(jv_equal(json_set(jv_copy(whole), "config", jv_null()), jv_copy(run)));
	jv_free(whole);
	jv_free(run);
	CHECK(store_run_get_brief(&run, st, "T2") == 0);
	CHECK(jv_get_kind(run) == JV_KIND_NULL);

	CHECK(store_run_update(st, "T1", "bogus", NULL, NULL) == -1);
	CHECK_MSG(strstr(forge_last_error(), "invalid run status 'bogus'"), "%s", forge_last_error());
	CHECK(store_run_update(st, "T9", "running", NULL, NULL) == -1);
	CHECK_MSG(strstr(forge_last_error(), "no run 'T9'"), "%s", forge_last_error());
	/* the CHECK constraint holds for writers that bypass the API */
	CHECK(store_exec(st, "UPDATE runs SET status = 'weird'") == -1);
	store_free(st);
}

static void test_traces(void)
{
	struct store *st = NULL;
	jv list = jv_invalid();

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_traces(&list, st, 0) == 0);
	CHECK_INT(jv_array_length(list), 0);
	CHECK(put(st, make_event("A1", "TA", "2026-01-01T00:00:01.000Z", "x"), NULL) == 0);
	CHECK(put(st, make_event("A2", "TA", "2026-01-01T00:00:05.000Z", "x"), NULL) == 0);
	CHECK(put(st, make_event("A3", "TA", "2026-01-01T00:00:03.000Z", "x"), NULL) == 0);
	CHECK(put(st, make_event("B1", "TB", "2026-01-02T00:00:00.000Z", "x"), NULL) == 0);
	CHECK(store_run_create(st, "TA", "task a", NULL, jv_null()) == 0);
	CHECK(store_run_create(st, "TC", "task c", NULL, jv_null()) == 0);  /* no events */

	CHECK(store_traces(&list, st, 0) == 0);
	CHECK_INT(jv_array_length(jv_copy(list)), 3);
	jv c = jv_array_get(jv_copy(list), 0), b = jv_array_get(jv_copy(list), 1),
	   a = jv_array_get(jv_copy(list), 2);
	CHECK_STR(json_get_str(c, "trace_id"), "TC");   /* created now: newest */
	CHECK(json_get_num(c, "events", -1) == 0);
	CHECK_STR(json_get_str(c, "status"), "pending");
	CHECK_STR(json_get_str(b, "trace_id"), "TB");
	CHECK(json_get_str(b, "task") == NULL);
	CHECK_STR(json_get_str(a, "trace_id"), "TA");
	CHECK(json_get_num(a, "events", -1) == 3);
	CHECK_STR(json_get_str(a, "first_ts"), "2026-01-01T00:00:01.000Z");
	CHECK_STR(json_get_str(a, "last_ts"), "2026-01-01T00:00:05.000Z");
	CHECK_STR(json_get_str(a, "task"), "task a");
	jv_free(a);
	jv_free(b);
	jv_free(c);
	jv_free(list);

	CHECK(store_traces(&list, st, 1) == 0);
	CHECK_INT(jv_array_length(list), 1);
	store_free(st);
}

/* Child of the concurrency test: 2000 events in batches of 100. */
static int concurrent_child(const char *path, int child)
{
	struct store *st = NULL;
	char id[64], ts[32];
	int rc = 1;

	if (store_open(&st, path) < 0)
		goto out;
	for (int batch = 0; batch < 20; batch++) {
		if (store_begin(st) < 0)
			goto out;
		for (int i = 0; i < 100; i++) {
			int n = batch * 100 + i;

			snprintf(id, sizeof id, "C%d-%05d", child, n);
			snprintf(ts, sizeof ts, "2026-01-01T00:00:%02d.%03dZ", n / 1000, n % 1000);
			if (put(st, make_event(id, "TCONC", ts, "x"), NULL) < 0)
				goto out;
		}
		if (store_commit(st) < 0)
			goto out;
	}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "child %d: %s\n", child, forge_last_error());
	store_free(st);
	return rc;
}

/* The size of the file at path in bytes, or -1. */
static long long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Bytes the process's threads but this one have written (their wchar in
 * /proc/self/task/TID/io), or -1 when that is unreadable. */
static long long other_threads_wchar(void)
{
	char self[32], path[300], line[128];
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long long total = 0;

	if (!d)
		return -1;
	snprintf(self, sizeof self, "%ld", (long)gettid());
	while ((e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/io", e->d_name);
		if (!(f = fopen(path, "r"))) {
			total = -1;
			break;
		}
		while (fgets(line, sizeof line, f))
			if (strncmp(line, "wchar: ", 7) == 0)
				total += strtoll(line + 7, NULL, 10);
		fclose(f);
	}
	closedir(d);
	return total;
}

/* Store n events (ids from *next on) in one transaction. */
static int put_batch(struct store *st, int n, int *next)
{
	char id[32], ts[32];

	if (store_begin(st) < 0)
		return -1;
	for (int i = 0; i < n; i++, (*next)++) {
		snprintf(id, sizeof id, "01JDB3BG%018d", *next);
		snprintf(ts, sizeof ts, "2026-01-01T00:%02d:%02d.%03dZ", *next / 60000 % 60,
			 *next / 1000 % 60, *next % 1000);
		if (put(st, make_event(id, "TBG", ts, "tool.executed"), NULL) < 0) {
			store_rollback(st);
			return -1;
		}
	}
	return store_commit(st);
}

/*
 * store_checkpoint_in_background: the WAL reaches the database through the
 * thread while the writer does nothing (the database file grows, written
 * by another thread than the writer), the log
 * stays bounded while events stream in (it restarts: without that it
 * grows with every commit), and every event is there after store_free.
 */
static void test_checkpoints_in_background(void)
{
	const char *path = tmp_path("bg.db");
	char wal[600];
	struct store *st = NULL;
	enum { SIZE = 32, BATCH = 100 };   /* frames of the autocheckpoint (the PRAGMA's); events a commit */
	/* a log bounded by 3 sizes and the commit that went past them, in
	 * frames of 8 KiB pages (and their 24-byte headers) */
	const long long bound = (3 * SIZE + 64) * (8192 + 24) + 32;
	long long db0, biggest = 0;
	int next = 0;

	snprintf(wal, sizeof wal, "%s-wal", path);
	CHECK(store_open(&st, path) == 0);
	CHECK(sqlite3_exec(store_db(st), "PRAGMA wal_autocheckpoint = 32", NULL, NULL, NULL) ==
	      SQLITE_OK);
	/* (the migrations' pages copied: an empty log to start from) */
	CHECK(sqlite3_exec(store_db(st), "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) == SQLITE_OK);
	CHECK(store_checkpoint_in_background(st) == 0);
	db0 = file_size(path);
	/* up to one autocheckpoint size and a little: the thread is woken */
	while (file_size(wal) < (SIZE + 8) * 8216LL)
		CHECK(put_batch(st, BATCH, &next) == 0);
	CHECK(file_size(wal) < 3 * SIZE * 8216LL);
	/* it copies while the writer waits (polled: no time is assumed) */
	for (int i = 0; i < 20000 && file_size(path) <= db0; i++)
		usleep(1000);
	CHECK_MSG(file_size(path) > db0, "the database file stayed at %lld bytes", db0);
	/* (and another thread than the writer wrote it) */
	CHECK_MSG(other_threads_wchar() > 0, "no other thread wrote: %lld", other_threads_wchar());
	/* a stream of commits: the log restarts and stays bounded */
	for (int b = 0; b < 60; b++) {
		CHECK(put_batch(st, BATCH, &next) == 0);
		if (file_size(wal) > biggest)
			biggest = file_size(wal);
	}
	CHECK_MSG(biggest <= bound, "the log reached %lld bytes (bound %lld)", biggest, bound);
	store_free(st);
	CHECK(store_open(&st, path) == 0);
	CHECK_INT(query_int(st, "SELECT count(*) FROM event_log WHERE trace_id = 'TBG'"), next);
	CHECK_INT(query_int(st, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"), 1);
	/* nothing to do for a database in memory */
	store_free(st);
	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_checkpoint_in_background(st) == 0);
	store_free(st);
}

/* Child of test_two_writers_bound_the_log: waits for the go (a byte on
 * fd), then writes `batches` batches of 50 events with checkpoints in the
 * background; its ids start at child * 10,000,000. */
static int bounded_writer(const char *path, int child, int go, int batches)
{
	struct store *st = NULL;
	int next = child * 10000000, rc = 1;
	char byte;

	if (store_open(&st, path) < 0 ||
	    sqlite3_exec(store_db(st), "PRAGMA wal_autocheckpoint = 32", NULL, NULL, NULL) != SQLITE_OK ||
	    store_checkpoint_in_background(st) < 0 || read(go, &byte, 1) != 1)
		goto out;
	for (int b = 0; b < batches; b++)
		if (put_batch(st, 50, &next) < 0)
			goto out;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "writer %d: %s\n", child, forge_last_error());
	store_free(st);
	return rc;
}

/*
 * Two processes streaming events into one database, each checkpointing in
 * the background: the log stays bounded.  Each one's copies are PASSIVE,
 * and the other's transactions always hold frames not yet copied, so the
 * log never restarts of its own (hunt42 saw it reach ~600 MB); past 8
 * autocheckpoint sizes a commit restarts it, waiting for the other writer.
 */
static void test_two_writers_bound_the_log(void)
{
	const char *path = tmp_path("two/forge.db");
	char wal[600];
	struct store *st = NULL;
	enum { SIZE = 32, BATCHES = 1000 };
	/* 8 sizes, each writer's commit that went past them, twice that for a
	 * loaded machine where a RESTART waits past its second, in 8 KiB frames
	 * (and their 24-byte headers); unbounded, it was 50-70 MB */
	const long long bound = 2 * (8 * SIZE + 2 * 64) * (8192 + 24) + 32;
	int go[2], failures = 0;
	pid_t pids[2];

	snprintf(wal, sizeof wal, "%s-wal", path);
	/* (open till the end: the last connection to close removes the log) */
	CHECK(store_open(&st, path) == 0);
	CHECK(pipe(go) == 0);
	fflush(stdout);
	fflush(stderr);
	for (int c = 0; c < 2; c++) {
		pids[c] = fork();
		CHECK(pids[c] >= 0);
		if (pids[c] == 0) {
			close(go[1]);
			exit(bounded_writer(path, c + 1, go[0], BATCHES));
		}
	}
	close(go[0]);
	CHECK(write(go[1], "gg", 2) == 2);
	close(go[1]);
	for (int c = 0; c < 2; c++) {
		int status;

		CHECK(waitpid(pids[c], &status, 0) == pids[c]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failures++;
	}
	CHECK_INT(failures, 0);
	/* (a log is never made shorter: its size is the largest it was) */
	CHECK_MSG(file_size(wal) > 0 && file_size(wal) <= bound, "the log reached %lld bytes (bound %lld)",
		  file_size(wal), bound);
	CHECK_INT(query_int(st, "SELECT count(*) FROM event_log WHERE trace_id = 'TBG'"), 2 * BATCHES * 50);
	store_free(st);
}

static void test_concurrent_writers(void)
{
	const char *path = tmp_path("concurrent/forge.db");
	struct store *st = NULL;
	pid_t pids[4];
	int failures = 0;

	fflush(stdout);
	fflush(stderr);
	for (int c = 0; c < 4; c++) {
		pids[c] = fork();
		CHECK(pids[c] >= 0);
		if (pids[c] == 0)
			exit(concurrent_child(path, c));   /* exit, so LSan checks the child */
	}
	for (int c = 0; c < 4; c++) {
		int status;

		CHECK(waitpid(pids[c], &status, 0) == pids[c]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failures++;
	}
	CHECK_INT(failures, 0);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	CHECK_INT(query_int(st, "SELECT count(*) FROM events"), 8000);
	CHECK_INT(query_int(st, "SELECT count(DISTINCT id) FROM events WHERE trace_id = 'TCONC'"), 8000);
	CHECK_INT(store_schema_version(st), store_schema_version_known());
	store_free(st);
}

static void test_resolve_path(void)
{
	char *p = NULL;

	setenv("FORGE_DB", "/env/forge.db", 1);
	CHECK(store_resolve_path(&p, "/flag.db", "/repo") == 0);
	CHECK_STR(p, "/flag.db");
	free(p);
	CHECK(store_resolve_path(&p, NULL, "/repo") == 0);
	CHECK_STR(p, "/env/forge.db");
	free(p);
	CHECK(store_resolve_path(&p, NULL, NULL) == 0);
	CHECK_STR(p, "/env/forge.db");
	free(p);
	setenv("FORGE_DB", "", 1);   /* empty counts as unset */
	CHECK(store_resolve_path(&p, NULL, "/repo/") == 0);
	CHECK_STR(p, "/repo/.forge/forge.db");
	free(p);
	unsetenv("FORGE_DB");
	CHECK(store_resolve_path(&p, NULL, "/repo") == 0);
	CHECK_STR(p, "/repo/.forge/forge.db");
	free(p);
	p = NULL;
	CHECK(store_resolve_path(&p, NULL, NULL) == -1);
	CHECK(p == NULL);
	CHECK_MSG(strstr(forge_last_error(), "--db"), "%s", forge_last_error());
}



/* A cancelled run stays cancelled whatever its live process writes after. */
static void test_run_cancel_sticks(void)
{
	struct store *st = NULL;
	jv run;

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_run_create(st, "T1", "task", NULL, jv_null()) == 0);
	CHECK(store_run_update(st, "T1", "running", "plan", NULL) == 0);
	CHECK(store_run_update(st, "T1", "cancelled", NULL, "cancelled by a human") == 0);
	CHECK(store_run_update(st, "T1", "completed", "deploy", "") == 0);
	CHECK(store_run_get(&run, st, "T1") == 0);
	CHECK_STR(json_get_str(run, "status"), "cancelled");
	CHECK_STR(json_get_str(run, "error"), "cancelled by a human");
	CHECK_STR(json_get_str(run, "current_phase"), "deploy");
	CHECK(json_get_str(run, "completed_at") != NULL);
	jv_free(run);
	store_free(st);
}

/* A pid that was a process and is gone now. */
static long dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return (long)pid;
}

static void test_leases(void)
{
	struct store *st = NULL;
	jv held, lease;
	char host[256] = "", sql[512];

	gethostname(host, sizeof host - 1);
	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_lease_get(&lease, st, "T1") == 0);
	CHECK(jv_get_kind(lease) == JV_KIND_NULL);
	CHECK_INT(store_lease_take(&held, st, "T1", "H1", "forge-supervisor"), STORE_LEASE_TAKEN);
	CHECK(jv_get_kind(held) == JV_KIND_NULL);
	/* again by its holder: nothing changes */
	CHECK_INT(store_lease_take(&held, st, "T1", "H1", "forge-test"), STORE_LEASE_TAKEN);
	CHECK(store_lease_get(&lease, st, "T1") == 0);
	CHECK_STR(json_get_str(lease, "holder"), "H1");
	CHECK_STR(json_get_str(lease, "program"), "forge-supervisor");
	CHECK_STR(json_get_str(lease, "host"), host);
	CHECK(json_get_num(lease, "pid", 0) == (double)getpid());
	CHECK(json_get_bool(lease, "alive", false));
	jv_free(lease);
	/* a living holder (this process): refused, with who holds it */
	CHECK_INT(store_lease_take(&held, st, "T1", "H2", "forge-supervisor"), STORE_LEASE_HELD);
	CHECK_STR(json_get_str(held, "holder"), "H1");
	CHECK(json_get_num(held, "pid", 0) == (double)getpid());
	jv_free(held);
	/* another trace is free; releasing someone else's lease does nothing */
	CHECK_INT(store_lease_take(&held, st, "T2", "H2", NULL), STORE_LEASE_TAKEN);
	CHECK(store_lease_release(st, "T1", "H2") == 0);
	CHECK_INT(store_lease_take(&held, st, "T1", "H3", NULL), STORE_LEASE_HELD);
	jv_free(held);
	CHECK(store_lease_release(st, "T1", "H1") == 0);
	CHECK(store_lease_get(&lease, st, "T1") == 0);
	CHECK(jv_get_kind(lease) == JV_KIND_NULL);

	/* a dead holder's lease is taken over */
	long dead = dead_pid();
	snprintf(sql, sizeof sql, "INSERT INTO leases (trace_id, holder, pid, host, program, acquired_at) VALUES ('T3', 'GONE', %ld, '%s', 'forge-supervisor', "
		 "'2026-01-01T00:00:00.000Z')", dead, host);
	CHECK(store_exec(st, sql) == 0);
	CHECK(store_lease_get(&lease, st, "T3") == 0);
	CHECK(!json_get_bool(lease, "alive", true));
	jv_free(lease);
	CHECK_INT(store_lease_take(&held, st, "T3", "H4", "forge-supervisor"), STORE_LEASE_STOLEN);
	CHECK(json_get_num(held, "pid", 0) == (double)dead);
	CHECK_STR(json_get_str(held, "holder"), "GONE");
	jv_free(held);
	CHECK(store_lease_get(&lease, st, "T3") == 0);
	CHECK_STR(json_get_str(lease, "holder"), "H4");
	jv_free(lease);
	/* on another host, taken within the TTL and not yet renewed: its pid
	 * cannot tell, so it is held */
	char now[TIMESTAMP_LEN + 1];

	timestamp_now(now);
	snprintf(sql, sizeof sql, "INSERT INTO leases (trace_id, holder, pid, host, program, acquired_at) VALUES ('T4', 'FAR', %ld, 'elsewhere.example', NULL, "
		 "'%s')", dead, now);
	CHECK(store_exec(st, sql) == 0);
	CHECK_INT(store_lease_take(&held, st, "T4", "H5", NULL), STORE_LEASE_HELD);
	jv_free(held);
	/* --steal takes it; it says it was alive */
	CHECK_INT(store_lease_take_steal(&held, st, "T4", "H5", "forge-supervisor", true), STORE_LEASE_STOLEN);
	CHECK_STR(json_get_str(held, "holder"), "FAR");
	CHECK(json_get_bool(held, "alive", false));
	jv_free(held);
	/* but never a live holder of this host */
	CHECK_INT(store_lease_take(&held, st, "T6", "H7", NULL), STORE_LEASE_TAKEN);
	CHECK_INT(store_lease_take_steal(&held, st, "T6", "H8", NULL, true), STORE_LEASE_HELD);
	CHECK_STR(json_get_str(held, "holder"), "H7");
	jv_free(held);
	/* another host's lease whose renewed_at (its holder's clock) is long
	 * past by this clock: alive while this host has not seen it unchanged
	 * for the TTL (its clock may be behind: before, taken over at once) */
	char renewed[TIMESTAMP_LEN + 1];

	/* (30 minutes ago: within the clocks' slack, STORE_LEASE_CLOCK_SLACK_S) */
	timestamp_format(renewed, now_ms() - 30 * 60 * 1000);
	snprintf(sql, sizeof sql, "INSERT INTO leases (trace_id, holder, pid, host, program, acquired_at, renewed_at)"
		 " VALUES ('T7', 'OLD', 1, 'elsewhere.example', NULL, '%s', '%s')", renewed, renewed);
	CHECK(store_exec(st, sql) == 0);
	CHECK_INT(store_lease_take(&held, st, "T7", "H9", "forge-supervisor"), STORE_LEASE_HELD);
	CHECK(json_get_str(held, "seen_at") != NULL);
	jv_free(held);
	/* this host saw it so long ago (the sighting was kept, refused as it
	 * was): unchanged since, so dead, taken over */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM lease_sightings WHERE trace_id = 'T7' AND observer = '%s'"
		 " AND holder = 'OLD' AND renewals = 0", host);
	CHECK_INT(query_int(st, sql), 1);
	CHECK(store_exec(st, "UPDATE lease_sightings SET seen_at = '2026-01-01T00:00:00.000Z'") == 0);
	/* renewed since that sighting (its count moved): seen anew, alive */
	CHECK(store_exec(st, "UPDATE leases SET renewals = 1 WHERE trace_id = 'T7'") == 0);
	CHECK_INT(store_lease_take(&held, st, "T7", "H9", "forge-supervisor"), STORE_LEASE_HELD);
	jv_free(held);
	CHECK(store_exec(st, "UPDATE lease_sightings SET seen_at = '2026-01-01T00:00:00.000Z'") == 0);
	CHECK_INT(store_lease_take(&held, st, "T7", "H9", "forge-supervisor"), STORE_LEASE_STOLEN);
	CHECK(!json_get_bool(held, "alive", true));
	CHECK_STR(json_get_str(held, "renewed_at"), renewed);
	jv_free(held);
	/* the new holder's lease is not renewed until it renews it; what was
	 * seen of the old one is gone with it */
	CHECK(store_lease_get(&lease, st, "T7") == 0);
	CHECK(json_get_str(lease, "holder") && !json_get_str(lease, "renewed_at"));
	CHECK(json_get_num(lease, "renewals", -1) == 0);
	jv_free(lease);
	CHECK_INT(query_int(st, "SELECT count(*) FROM lease_sightings WHERE trace_id = 'T7'"), 0);
	/* (another holder: changes nothing, and says the lease is not its own) */
	CHECK(store_lease_renew(st, "T7", "NOT-HOLDER") == STORE_LEASE_LOST);
	CHECK(store_lease_get(&lease, st, "T7") == 0);
	CHECK(json_get_str(lease, "holder") && !json_get_str(lease, "renewed_at"));
	jv_free(lease);
	CHECK(store_lease_renew(st, "T7", "H9") == 0);
	CHECK(store_lease_get(&lease, st, "T7") == 0);
	CHECK(json_get_str(lease, "renewed_at") != NULL);
	CHECK(json_get_num(lease, "renewals", 0) == 1);
	jv_free(lease);
	/* inside an open transaction it cannot be taken atomically: an error */
	CHECK(store_begin(st) == 0);
	CHECK_INT(store_lease_take(&held, st, "T5", "H6", NULL), -1);
	CHECK(store_rollback(st) == 0);
	store_free(st);
}

/* Another host's lease lives until this host has seen it unchanged for
 * the TTL (seen_at, this host's clock), on an injected clock; the
 * holder's renewed_at (its own clock) does not count. */
static void test_lease_ttl(void)
{
	char host[256] = "";
	int64_t at;

	gethostname(host, sizeof host - 1);
	CHECK(timestamp_parse(&at, "2026-01-01T00:00:00.000Z") == 0);
	jv far = json_set(json_set(json_set(jv_object(), "host", jv_string("elsewhere.example")), "pid", jv_number(1)),
			  "seen_at", jv_string("2026-01-01T00:00:00.000Z"));
	CHECK(store_lease_alive_at(far, 120, at));
	CHECK(store_lease_alive_at(far, 120, at + 119999));
	CHECK(!store_lease_alive_at(far, 120, at + 120000));
	CHECK(store_lease_alive_at(far, 600, at + 120000));
	CHECK(!store_lease_alive_at(far, 0, at + (int64_t)(STORE_LEASE_TTL_S * 1000)));  /* 0: the default */
	/* renewed 5 minutes "before" by a clock behind this one's, or 5
	 * minutes "after": neither decides (before: dead, resp. alive) */
	far = json_set(far, "renewed_at", jv_string("2025-12-31T23:55:00.000Z"));
	CHECK(store_lease_alive_at(far, 120, at + 119999));
	far = json_set(far, "renewed_at", jv_string("2026-01-01T00:05:00.000Z"));
	CHECK(!store_lease_alive_at(far, 120, at + 120000));
	/* not seen yet from here: one look cannot tell a clock behind by less
	 * than an hour, it lives; older than the TTL plus that slack by this
	 * clock: dead at once (its machine went down yesterday) */
	jv never = json_set(json_set(jv_copy(far), "seen_at", jv_null()), "acquired_at",
			    jv_string("2026-01-01T00:00:00.000Z"));
	never = json_set(never, "renewed_at", jv_null());
	int64_t slack = (int64_t)((120 + STORE_LEASE_CLOCK_SLACK_S) * 1000);
	CHECK(store_lease_alive_at(never, 120, at + slack));
	CHECK(!store_lease_alive_at(never, 120, at + slack + 1));
	CHECK(!store_lease_alive_at(never, 120, at + 86400000));
	never = json_set(never, "renewed_at", jv_string("2026-01-01T01:00:00.000Z"));   /* (renewed_at decides) */
	CHECK(store_lease_alive_at(never, 120, at + slack + 1));
	/* seen unchanged for less than the TTL, but renewed that long ago */
	never = json_set(never, "seen_at", jv_string("2026-01-02T00:00:00.000Z"));
	CHECK(!store_lease_alive_at(never, 120, at + 86400000));
	/* this host: the pid tells, whatever the clock */
	jv here = json_set(json_set(jv_copy(far), "host", jv_string(host)), "pid", jv_number((double)getpid()));
	CHECK(store_lease_alive_at(here, 120, at + 86400000));
	here = json_set(here, "pid", jv_number((double)dead_pid()));
	CHECK(!store_lease_alive_at(here, 120, at));
	CHECK(store_lease_local(here) && !store_lease_local(far));
	jv_free(far);
	jv_free(never);
	jv_free(here);
}

/* A child that waits for a signal; its pid. */
static pid_t waiting_child(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

/* This host's lease belongs to the process that took it, by its start
 * identity, not to whatever process has its pid now: a pid reused after
 * the holder's kill -9 is not the holder, for liveness and for forge
 * cancel's signal.  A lease without the identity (older) needs the
 * program's exact name. */
static void test_lease_holder_identity(void)
{
	char host[256] = "", me[PROC_START_ID_LEN], other[PROC_START_ID_LEN];
	struct store *st = NULL;
	jv held, lease;
	int status;

	gethostname(host, sizeof host - 1);
	CHECK(proc_start_id(me, getpid()));
	CHECK(strchr(me, '/') != NULL && strspn(strchr(me, '/') + 1, "0123456789") > 0);
	CHECK(!proc_start_id(other, (pid_t)dead_pid()));
	/* taking a lease records the taker's identity */
	CHECK(store_open(&st, ":memory:") == 0);
	CHECK_INT(store_lease_take(&held, st, "T1", "H1", "forge-supervisor"), STORE_LEASE_TAKEN);
	CHECK(store_lease_get(&lease, st, "T1") == 0);
	CHECK_STR(json_get_str(lease, "pid_start"), me);
	CHECK(json_get_bool(lease, "alive", false));
	jv_free(lease);
	/* the same pid with another identity (reused since): dead, taken over */
	CHECK(store_exec(st, "UPDATE leases SET pid_start = 'another-boot/1'") == 0);
	CHECK(store_lease_get(&lease, st, "T1") == 0);
	CHECK(!json_get_bool(lease, "alive", true));
	jv_free(lease);
	CHECK_INT(store_lease_take(&held, st, "T1", "H2", "forge-supervisor"), STORE_LEASE_STOLEN);
	CHECK_STR(json_get_str(held, "holder"), "H1");
	jv_free(held);
	store_free(st);

	/* no identity (a lease of before): its pid runs the program, by the
	 * exact name, as the kernel cuts it (this process is named
	 * forge-supervisor: main) */
	jv old = json_set(json_set(jv_object(), "host", jv_string(host)), "pid", jv_number((double)getpid()));
	old = json_set(old, "program", jv_string("/somewhere/forge-supervisor"));
	CHECK(store_lease_alive_at(old, 120, 0));
	/* a name one is a prefix of (before: alive, so any `forge ...` command
	 * that got a dead supervisor's pid kept its run "running") */
	old = json_set(old, "program", jv_string("forge"));
	CHECK(!store_lease_alive_at(old, 120, 0));
	old = json_set(old, "program", jv_string("forge-super"));
	CHECK(!store_lease_alive_at(old, 120, 0));
	old = json_set(old, "program", jv_null());                     /* none recorded: its pid */
	CHECK(store_lease_alive_at(old, 120, 0));
	jv_free(old);

	/* the signal reaches the holder only: a process that has the pid but
	 * not the identity is left alone */
	pid_t child = waiting_child();
	char id[PROC_START_ID_LEN];

	CHECK(child > 0 && proc_start_id(id, child));
	jv l = json_set(json_set(jv_object(), "host", jv_string(host)), "pid", jv_number((double)child));
	l = json_set(json_set(l, "program", jv_string("forge-supervisor")), "pid_start", jv_string("another-boot/1"));
	CHECK(!store_lease_alive_at(l, 120, 0));
	CHECK_INT(store_lease_signal(l, SIGTERM), -1);
	CHECK_INT(waitpid(child, &status, WNOHANG), 0);                /* still there */
	l = json_set(l, "host", jv_string("elsewhere.example"));        /* another host's: never */
	l = json_set(l, "pid_start", jv_string(id));
	CHECK_INT(store_lease_signal(l, SIGTERM), -1);
	CHECK_INT(waitpid(child, &status, WNOHANG), 0);
	l = json_set(l, "host", jv_string(host));
	CHECK(store_lease_alive_at(l, 120, 0));
	CHECK_INT(store_lease_signal(l, SIGTERM), 0);
	CHECK_INT(waitpid(child, &status, 0), child);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	/* and once it is gone, nothing */
	CHECK_INT(store_lease_signal(l, SIGTERM), -1);
	jv_free(l);

	/* a holder killed but not reaped (a zombie: a container's PID 1 that
	 * reaps no orphans) is gone, though its pid and identity still
	 * answer (before: alive, its run "already running" for ever) */
	siginfo_t info;

	child = waiting_child();
	CHECK(child > 0 && proc_start_id(id, child));
	l = json_set(json_set(jv_object(), "host", jv_string(host)), "pid", jv_number((double)child));
	l = json_set(json_set(l, "program", jv_string("forge-supervisor")), "pid_start", jv_string(id));
	CHECK(store_lease_alive_at(l, 120, 0) && !proc_exited(child));
	CHECK_INT(kill(child, SIGKILL), 0);
	/* (waits for its end, leaving it unreaped) */
	CHECK_INT(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT), 0);
	CHECK(proc_exited(child));
	CHECK(!store_lease_alive_at(l, 120, 0));
	CHECK_INT(waitpid(child, &status, 0), child);
	CHECK(!proc_exited(child) && !store_lease_alive_at(l, 120, 0));
	jv_free(l);
}

/* Four processes take one lease at once: exactly one gets it.  Each holds
 * on (alive) until all have tried. */
static void test_lease_race(void)
{
	const char *path = tmp_path("lease/forge.db");
	struct store *st = NULL;
	int results[2], release[2], taken = 0, refused = 0;
	pid_t pids[4];

	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	store_free(st);
	CHECK(pipe(results) == 0 && pipe(release) == 0);
	fflush(stdout);
	fflush(stderr);
	for (int c = 0; c < 4; c++) {
		pids[c] = fork();
		CHECK(pids[c] >= 0);
		if (pids[c] == 0) {
			struct store *cs = NULL;
			char holder[16], r = 'e', b;
			jv held = jv_null();
			close(results[0]);
			close(release[1]);
			snprintf(holder, sizeof holder, "C%d", c);
			if (store_open(&cs, path) == 0) {
				int rc = store_lease_take(&held, cs, "TRACE", holder, "forge-supervisor");
				r = rc == STORE_LEASE_TAKEN ? 't' : rc == STORE_LEASE_HELD ? 'h' : 'e';
			}
			jv_free(held);
			if (write(results[1], &r, 1) != 1 || read(release[0], &b, 1) < 0)
				r = 'e';
			store_free(cs);
			exit(r == 'e');
		}
	}
	close(results[1]);
	close(release[0]);
	for (int c = 0; c < 4; c++) {
		char r = 0;
		CHECK(read(results[0], &r, 1) == 1);
		taken += r == 't';
		refused += r == 'h';
	}
	close(release[1]);	/* now they may go */
	for (int c = 0; c < 4; c++)
		CHECK(waitpid(pids[c], NULL, 0) == pids[c]);
	close(results[0]);
	CHECK_INT(taken, 1);
	CHECK_INT(refused, 3);
}

#define BREAKER_EVENT "{\"kind\":\"event\",\"id\":\"E%d\",\"trace_id\":\"T1\"," \
	"\"ts\":\"2026-11-21T10:00:0%d.000Z\",\"type\":\"%s\",\"payload\":{}}"

static void test_breaker_reads(void)
{
	struct store *st = NULL;
	double usd = -1;
	long calls = -1, failed = -1;
	char line[256];

	CHECK(store_open(&st, ":memory:") == 0);
	/* the day's spending is its model calls' (every run's), by when they
	 * were made: not the runs started that day (hunt19 #8) */
	CHECK(store_run_create(st, "T1", "a", NULL, jv_null()) == 0);
	CHECK(store_run_set_cost(st, "T1", 10, 100) == 0);
	for (int i = 0; i < 4; i++) {
		static const char *const at[] = { "2026-11-20T23:59:59.999Z", "2026-11-21T00:00:00.000Z",
						  "2026-11-21T23:59:59.999Z", "2026-11-22T00:00:00.000Z" };
		snprintf(line, sizeof line, "{\"kind\":\"event\",\"id\":\"C%d\",\"trace_id\":\"T%d\","
			 "\"ts\":\"%s\",\"type\":\"llm.called\",\"payload\":{},\"cost\":{\"usd\":%d}}",
			 i, 1 + i % 2, at[i], 1 << i);
		jv e = parse(line);
		CHECK(store_event_put(st, e, NULL, 0, NULL) == 0);
		jv_free(e);
	}
	CHECK(store_cost_between(&usd, st, "2026-11-21T00:00:00.000Z", "2026-11-22T00:00:00.000Z") == 0);
	CHECK(usd == 6);
	CHECK(store_cost_between(&usd, st, "2026-11-23T00:00:00.000Z", "2026-11-24T00:00:00.000Z") == 0);
	CHECK(usd == 0);
	/* found by the model calls' own index in time order, not by reading
	 * every llm.called event ever stored (020-llm-called-by-time) */
	sqlite3_stmt *plan = NULL;
	struct buf how = BUF_INIT;
	CHECK(sqlite3_prepare_v2(store_db(st), "EXPLAIN QUERY PLAN SELECT record FROM event_log"
				 " WHERE type = 'llm.called' AND ts >= ?1 AND ts < ?2", -1, &plan, NULL) == SQLITE_OK);
	while (sqlite3_step(plan) == SQLITE_ROW)
		buf_adds(&how, (const char *)sqlite3_column_text(plan, 3));
	sqlite3_finalize(plan);
	CHECK_MSG(strstr(how.buf, "USING INDEX event_log_llm_called_ts (type=? AND ts>? AND ts<?)"), "%s", how.buf);
	buf_release(&how);
	for (int i = 0; i < 5; i++) {
		snprintf(line, sizeof line, BREAKER_EVENT, i, i, i < 2 ? "tool.failed" : i < 4 ? "tool.executed" : "llm.called");
		jv e = parse(line);
		CHECK(store_event_put(st, e, NULL, 0, NULL) == 0);
		jv_free(e);
	}
	CHECK(store_tool_outcomes(&calls, &failed, st, "T1", "2026-11-21T10:00:00.000Z", jv_null()) == 0);
	CHECK_INT(calls, 4);
	CHECK_INT(failed, 2);
	CHECK(store_tool_outcomes(&calls, &failed, st, "T1", "2026-11-21T10:00:01.000Z", jv_null()) == 0);
	CHECK_INT(calls, 3);
	CHECK_INT(failed, 1);
	/* the calls of a phase that ended ok, up to its end, left out; those
	 * of another phase (a node beside it) and its own after, kept */
	static const struct { const char *phase, *type; int s; } phased[] = {
		{ "\"plan\"", "tool.failed", 2 }, { "\"plan\"", "tool.failed", 3 },
		{ "\"review\"", "tool.failed", 3 }, { "\"review\"", "tool.executed", 4 },
		{ "\"plan\"", "tool.failed", 6 }, { "null", "tool.failed", 2 },
	};
	for (size_t i = 0; i < sizeof phased / sizeof *phased; i++) {
		snprintf(line, sizeof line, "{\"kind\":\"event\",\"id\":\"P%zu\",\"trace_id\":\"T2\","
			 "\"ts\":\"2026-11-21T10:00:0%d.000Z\",\"phase\":%s,\"type\":\"%s\",\"payload\":{}}",
			 i, phased[i].s, phased[i].phase, phased[i].type);
		jv e = parse(line);
		CHECK(store_event_put(st, e, NULL, 0, NULL) == 0);
		jv_free(e);
	}
	CHECK(store_tool_outcomes(&calls, &failed, st, "T2", "", jv_null()) == 0);
	CHECK_INT(calls, 6);
	CHECK_INT(failed, 5);
	CHECK(store_tool_outcomes(&calls, &failed, st, "T2", "",
				  json_set(jv_object(), "plan", jv_string("2026-11-21T10:00:05.000Z"))) == 0);
	CHECK_INT(calls, 4);
	CHECK_INT(failed, 3);
	CHECK(store_tool_outcomes(&calls, &failed, st, "T2", "2026-11-21T10:00:03.000Z",
				  json_set(json_set(jv_object(), "plan", jv_string("2026-11-21T10:00:05.000Z")),
					   "review", jv_string("2026-11-21T10:00:04.000Z"))) == 0);
	CHECK_INT(calls, 2);
	CHECK_INT(failed, 1);
	/* the trace's own events are read, not the tool events of every run
	 * the database holds: its statement steps as much with 300 more of
	 * those (before: event_log_type, ~10 steps each) */
	sqlite3_stmt *q = NULL;
	while ((q = sqlite3_next_stmt(store_db(st), q)) && !(strstr(sqlite3_sql(q), "'tool.executed'") && strstr(sqlite3_sql(q), "COUNT(*)")))
		;
	CHECK(q != NULL);
	int steps = q ? sqlite3_stmt_status(q, SQLITE_STMTSTATUS_VM_STEP, 1) : 0;
	CHECK(store_begin(st) == 0);
	for (int i = 0; i < 300; i++) {
		snprintf(line, sizeof line, "{\"kind\":\"event\",\"id\":\"O%d\",\"trace_id\":\"OTHER%d\","
			 "\"ts\":\"2026-11-21T10:00:09.000Z\",\"type\":\"tool.executed\",\"payload\":{}}", i, i % 7);
		jv e = parse(line);
		CHECK(store_event_put(st, e, NULL, 0, NULL) == 0);
		jv_free(e);
	}
	CHECK(store_commit(st) == 0);
	CHECK(store_tool_outcomes(&calls, &failed, st, "T1", "2026-11-21T10:00:01.000Z", jv_null()) == 0);
	CHECK_INT(calls, 3);
	q = NULL;
	while ((q = sqlite3_next_stmt(store_db(st), q)) && !(strstr(sqlite3_sql(q), "'tool.executed'") && strstr(sqlite3_sql(q), "COUNT(*)")))
		;
	CHECK(q != NULL);
	CHECK_MSG(q && sqlite3_stmt_status(q, SQLITE_STMTSTATUS_VM_STEP, 0) <= steps + 20, "%d steps, %d before",
		  q ? sqlite3_stmt_status(q, SQLITE_STMTSTATUS_VM_STEP, 0) : -1, steps);
	/* what cannot be read is an error, never a zero that would pass a breaker */
	CHECK(store_exec(st, "DROP VIEW events; ALTER TABLE event_log RENAME TO event_log_gone") == 0);
	CHECK(store_cost_between(&usd, st, "2026-11-21T00:00:00.000Z", "2026-11-22T00:00:00.000Z") == -1);
	CHECK_MSG(strstr(forge_last_error(), "cannot sum the cost"), "%s", forge_last_error());
	CHECK(store_tool_outcomes(&calls, &failed, st, "T1", "2026-11-21T10:00:00.000Z", jv_null()) == -1);
	CHECK_MSG(strstr(forge_last_error(), "cannot count the tool calls"), "%s", forge_last_error());
	store_free(st);
}

/* A database that cannot grow says the disk is full. */
static void test_disk_full_message(void)
{
	struct store *st = NULL;
	/* more than the pages 009-events-lean freed (the table of 001) hold */
	static char big[200000];

	CHECK_MSG(store_open(&st, tmp_path("full.db")) == 0, "%s", forge_last_error());
	CHECK(store_exec(st, "PRAGMA journal_mode = DELETE") == 0);
	long long pages = query_int(st, "PRAGMA page_count");
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", pages);
	CHECK(store_exec(st, sql) == 0);
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK(store_run_create(st, "T1", big, NULL, jv_null()) == -1);
	CHECK_MSG(strstr(forge_last_error(), "cannot create run 'T1': the disk is full"), "%s", forge_last_error());
	store_free(st);
}

/*
 * What the spending readers take of llm.called records (store_cost_between,
 * store_cost_by_phase, store_spent_since_checkpoint) is what libjq reads in
 * them, whether the scanner reads a record or leaves it to libjq: a cost
 * written with a key twice (libjq keeps the last), with an escape, a usd
 * that is null or a string, tokens that are not a plain integer, a phase
 * written with an escape or null, no cost at all.
 */
#define CALL_LINE(id, rest) "{\"kind\":\"event\",\"id\":\"" id "\",\"trace_id\":\"TC\"," \
	"\"ts\":\"2026-11-21T10:00:00.000Z\",\"source\":\"s\",\"type\":\"llm.called\",\"payload\":{}," rest "}"

static void test_model_call_reads(void)
{
	static const char *const lines[] = {
		CALL_LINE("C1", "\"phase\":\"plan\",\"cost\":{\"usd\":0.5,\"tokens\":100}"),
		CALL_LINE("C2", "\"phase\":\"plan\",\"cost\":{\"usd\":null,\"tokens\":10}"),
		CALL_LINE("C3", "\"phase\":\"review\",\"cost\":{\"usd\":\"0.25\",\"tokens\":1.5}"),
		CALL_LINE("C4", "\"phase\":\"review\",\"cost\":{\"usd\":9,\"usd\":0.125}"),
		CALL_LINE("C5", "\"phase\":\"test\",\"cost\":{\"u\\u0073d\":0.0625,\"tokens\":-4}"),
		CALL_LINE("C6", "\"phase\":\"te\\u0073t\",\"cost\":{\"usd\":1,\"tokens\":7}"),
		CALL_LINE("C7", "\"phase\":\"plan\""),
		CALL_LINE("C8", "\"phase\":null,\"cost\":{\"usd\":2,\"tokens\":3}"),
	};
	struct store *st = NULL;
	double usd = -1, tokens = -1;
	long calls = -1;
	jv by = jv_null();

	CHECK(store_open(&st, ":memory:") == 0);
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
		CHECK_MSG(put_line(st, lines[i]) == 0, "%s", lines[i]);
	CHECK(store_cost_between(&usd, st, "2026-11-21T00:00:00.000Z", "2026-11-22T00:00:00.000Z") == 0);
	CHECK_MSG(usd == 0.5 + 0.125 + 0.0625 + 1 + 2, "%.17g", usd);
	CHECK(store_cost_by_phase(&by, st, "TC") == 0);
	CHECK(json_get_num(by, "plan", -1) == 0.5);
	CHECK(json_get_num(by, "review", -1) == 0.125);
	CHECK(json_get_num(by, "test", -1) == 0.0625 + 1);
	CHECK_INT(jv_object_length(jv_copy(by)), 3);
	jv_free(by);
	CHECK(store_spent_since_checkpoint(&usd, &tokens, &calls, st, "TC") == 0);
	CHECK_MSG(usd == 0.5 + 0.125 + 0.0625 + 1 + 2, "%.17g", usd);
	CHECK_MSG(tokens == 100 + 10 + 1.5 - 4 + 7 + 3, "%.17g", tokens);
	CHECK_INT(calls, 8);
	store_free(st);
}

/* store_events_foreach_type: the events of one type, in stored order. */
static void test_events_of_one_type(void)
{
	struct store *st = NULL;
	struct lines got = { .len = 0 };

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(put(st, make_event("E1", "TT", "2026-01-01T00:00:02.000Z", "run.cost_recovered"), NULL) == 0);
	CHECK(put(st, make_event("E2", "TT", "2026-01-01T00:00:01.000Z", "phase.started"), NULL) == 0);
	CHECK(put(st, make_event("E3", "TT", "2026-01-01T00:00:00.000Z", "run.cost_recovered"), NULL) == 0);
	CHECK(put(st, make_event("E4", "TU", "2026-01-01T00:00:00.000Z", "run.cost_recovered"), NULL) == 0);
	CHECK_INT(store_events_foreach_type(st, "TT", "run.cost_recovered", collect, &got), 0);
	CHECK_INT(got.count, 2);
	CHECK_MSG(strstr(got.text, "\"id\":\"E1\"") && strstr(got.text, "\"id\":\"E3\"") &&
		  strstr(got.text, "\"id\":\"E1\"") < strstr(got.text, "\"id\":\"E3\""), "%s", got.text);
	CHECK(strstr(got.text, "E2") == NULL && strstr(got.text, "E4") == NULL);
	got = (struct lines){ .stop_after = 1 };
	CHECK_INT(store_events_foreach_type(st, "TT", "run.cost_recovered", collect, &got), 7);
	got = (struct lines){ .len = 0 };
	CHECK_INT(store_events_foreach_type(st, "TT", "run.merged", collect, &got), 0);
	CHECK_INT(got.count, 0);
	store_free(st);
}

/* Run statuses round-trip through their names; three are terminal. */
/* store_resolve_trace: a unique prefix, a whole id over its longer
 * neighbours, lower case, traces known only by their events, ambiguity,
 * nothing, and characters a trace id never has (GLOB's among them). */
static void test_resolve_trace(void)
{
	struct store *st = NULL;
	char *id = NULL;
	jv ev = jv_null();

	CHECK(store_open(&st, ":memory:") == 0);
	CHECK(store_run_create(st, "01ABCDEF", "one", NULL, jv_null()) == 0);
	CHECK(store_run_create(st, "01ABCDEFGH", "two", NULL, jv_null()) == 0);
	CHECK(store_run_create(st, "01XYZ", "three", NULL, jv_null()) == 0);
	CHECK(put(st, make_event("E1", "EVONLY-1", "2026-01-01T00:00:00.000Z", "x"), NULL) == 0);
	CHECK(put(st, make_event("E2", "01XYZ", "2026-01-01T00:00:00.000Z", "run.merged"), NULL) == 0);
	CHECK(put(st, make_event("E3", "01XYZ", "2026-01-01T00:00:01.000Z", "run.merged"), NULL) == 0);

	CHECK_INT(store_resolve_trace(&id, st, "01X"), 0);
	CHECK_STR(id, "01XYZ");
	free(id);
	CHECK_INT(store_resolve_trace(&id, st, "01xy"), 0);       /* upper case tried */
	CHECK_STR(id, "01XYZ");
	free(id);
	CHECK_INT(store_resolve_trace(&id, st, "01ABCDEF"), 0);   /* whole id wins */
	CHECK_STR(id, "01ABCDEF");
	free(id);
	CHECK_INT(store_resolve_trace(&id, st, "EVONLY"), 0);     /* events only */
	CHECK_STR(id, "EVONLY-1");
	free(id);
	CHECK_INT(store_resolve_trace(&id, st, "EVONLY-1"), 0);   /* a whole id of events only */
	CHECK_STR(id, "EVONLY-1");
	free(id);
	CHECK_INT(store_resolve_trace(&id, st, "01ABC"), STORE_TRACE_AMBIGUOUS);
	CHECK(id == NULL);
	CHECK(strstr(forge_last_error(), "'01ABC' matches 2 runs") != NULL);
	CHECK(strstr(forge_last_error(), "\n  01ABCDEF\n  01ABCDEFGH") != NULL);
	CHECK_INT(store_resolve_trace(&id, st, "01"), STORE_TRACE_AMBIGUOUS);
	CHECK(strstr(forge_last_error(), "matches 3 runs") != NULL);
	CHECK_INT(store_resolve_trace(&id, st, "02"), STORE_TRACE_NONE);
	CHECK_STR(forge_last_error(), "no run matches '02'");
	CHECK_INT(store_resolve_trace(&id, st, "01*"), STORE_TRACE_NONE);
	CHECK_INT(store_resolve_trace(&id, st, "[0]1"), STORE_TRACE_NONE);
	CHECK_INT(store_resolve_trace(&id, st, ""), STORE_TRACE_NONE);
	CHECK(id == NULL);

	/* store_event_last: the newest of a type, null when none */
	CHECK(store_event_last(&ev, st, "01XYZ", "run.merged") == 0);
	CHECK_STR(json_get_str(ev, "id"), "E3");
	jv_free(ev);
	CHECK(store_event_last(&ev, st, "01XYZ", "run.completed") == 0);
	CHECK(jv_get_kind(ev) == JV_KIND_NULL);
	store_free(st);
}

static void test_run_status(void)
{
	static const char *const names[] = { "pending", "running", "paused", "completed", "failed", "cancelled" };

	for (int i = 0; i < 6; i++) {
		CHECK_INT(run_status_of(names[i]), i);
		CHECK_STR(run_status_name((enum run_status)i), names[i]);
		CHECK(run_status_terminal((enum run_status)i) == (i >= RUN_COMPLETED));
	}
	CHECK_INT(run_status_of("done"), RUN_UNKNOWN);
	CHECK_INT(run_status_of(NULL), RUN_UNKNOWN);
}

int main(void)
{
	/* the leases taken here name forge-supervisor: the process is one, as
	 * a live holder's name is checked against its lease's program */
	prctl(PR_SET_NAME, "forge-supervisor", 0, 0, 0);
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof tmpdir, "%s/test_store.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	unsetenv("FORGE_DB");
	RUN(test_migrations_create_schema);
	RUN(test_reopen_is_noop);
	RUN(test_incremental_migration);
	RUN(test_newer_database_refused);
	RUN(test_garbage_file_refused);
	RUN(test_unopenable_path);
	RUN(test_open_readonly);
	RUN(test_event_put_idempotent);
	RUN(test_event_fields_extracted);
	RUN(test_event_payload_from_line);
	RUN(test_event_line_kept_as_libjq_reads_it);
	RUN(test_event_put_scanned);
	RUN(test_events_table_upgraded);
	RUN(test_history_order_upgraded);
	RUN(test_events_trace_index_upgraded);
	RUN(test_json_checks_dropped);
	RUN(test_events_queued_in_transaction);
	RUN(test_events_queued_every_count);
	RUN(test_event_missing_field_refused);
	RUN(test_event_record_byte_identical);
	RUN(test_events_in_stored_order);
	RUN(test_events_append_only);
	RUN(test_batch_commit_and_rollback);
	RUN(test_checkpoints_round_trip);
	RUN(test_checkpoint_ids_increase);
	RUN(test_checkpoint_after_clock_back);
	RUN(test_checkpoint_ids_from_ids_c);
	RUN(test_runs);
	RUN(test_traces);
	RUN(test_concurrent_writers);
	RUN(test_checkpoints_in_background);
	RUN(test_two_writers_bound_the_log);
	RUN(test_resolve_path);
	RUN(test_run_cancel_sticks);
	RUN(test_leases);
	RUN(test_lease_ttl);
	RUN(test_lease_holder_identity);
	RUN(test_lease_race);
	RUN(test_breaker_reads);
	RUN(test_model_call_reads);
	RUN(test_events_of_one_type);
	RUN(test_disk_full_message);
	RUN(test_run_status);
	RUN(test_resolve_trace);
	unit_rmtree(tmpdir);
	return unit_done();
}
