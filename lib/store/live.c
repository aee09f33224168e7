/*
 * live.c - the live_text table (live.h).
 */
#include "store/live.h"

#include "core/forge.h"
#include "core/json.h"
#include "store/db.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

void store_live_init(struct store_live *w, struct store *st)
{
	memset(w, 0, sizeof *w);
	w->st = st;
	w->text = (struct buf)BUF_INIT;
}

static int64_t clock_of(const struct store_live *w)
{
	return w->clock_ms ? w->clock_ms() : monotonic_ms();
}

/* Replace the row's text with the text so far; a failure turns w off. */
static void flush(struct store_live *w)
{
	struct db_stmt *s;
	char now[TIMESTAMP_LEN + 1];

	timestamp_now(now);
	if (db_prepare(&s, w->st, "UPDATE live_text SET text = ?1, updated_at = ?2 WHERE call_id = ?3") < 0) {
		w->st = NULL;
		return;
	}
	db_bind_textn(s, 1, w->text.buf ? w->text.buf : "", w->text.len);
	db_bind_text(s, 2, now);
	db_bind_text(s, 3, w->call);
	if (db_step_done(w->st, s, "cannot write the live text") < 0)
		w->st = NULL;
	w->written = w->text.len;
	w->last_ms = clock_of(w);
	w->writes++;
}

/* This host's name, as the rows' host column holds it. */
static void self_host(char *host, size_t n)
{
	if (gethostname(host, n - 1) < 0)
		snprintf(host, n, "%s", "localhost");
	host[n - 1] = '\0';
}

void store_live_begin(struct store_live *w, const char *trace, const char *phase, const char *model,
		      const char *span)
{
	struct db_stmt *s;
	char now[TIMESTAMP_LEN + 1], host[256];

	store_live_end(w);
	if (!w->st || !trace || !*trace)
		return;
	ulid_new(w->call);
	timestamp_now(now);
	self_host(host, sizeof host);
	if (db_prepare(&s, w->st, "INSERT INTO live_text (call_id, trace_id, phase, model, pid, host,"
			  " started_at, updated_at, span_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)") < 0) {
		w->st = NULL;
		w->call[0] = '\0';
		return;
	}
	db_bind_text(s, 1, w->call);
	db_bind_text(s, 2, trace);
	db_bind_text(s, 3, phase);
	db_bind_text(s, 4, model);
	db_bind_int64(s, 5, (int64_t)getpid());
	db_bind_text(s, 6, host);
	db_bind_text(s, 7, now);
	db_bind_text(s, 8, span);
	if (db_step_done(w->st, s, "cannot start the live text") < 0) {
		w->st = NULL;
		w->call[0] = '\0';
	}
	w->last_ms = INT64_MIN / 2;	/* the first text is written at once */
}

void store_live_add(struct store_live *w, const char *text, size_t len)
{
	if (!w->st || !w->call[0] || !len)
		return;
	buf_add(&w->text, text, len);
	if (clock_of(w) - w->last_ms >= STORE_LIVE_INTERVAL_MS)
		flush(w);
}

void store_live_flush(struct store_live *w)
{
	if (w->st && w->call[0] && w->text.len > w->written)
		flush(w);
}

void store_live_end(struct store_live *w)
{
	struct db_stmt *s;

	if (w->st && w->call[0] && db_prepare(&s, w->st, "DELETE FROM live_text WHERE call_id = ?1") == 0) {
		db_bind_text(s, 1, w->call);
		if (db_step_done(w->st, s, "cannot end the live text") < 0)
			w->st = NULL;
	}
	w->call[0] = '\0';
	buf_reset(&w->text);
	w->written = 0;
}

void store_live_release(struct store_live *w)
{
	store_live_end(w);
	buf_release(&w->text);
}

/* Whether row {pid, host, updated_at} was left by a writer that is gone. */
static bool writer_gone(jv row, const char *here, int64_t now, int64_t stale_ms)
{
	const char *h = json_get_str(row, "host");
	int64_t at;

	if (h && !strcmp(h, here))
		return !store_lease_alive(row);
	return timestamp_parse(&at, json_get_str(row, "updated_at")) < 0 || now - at >= stale_ms;
}

int store_live_list(jv *out, struct store *st, const char *trace)
{
	struct db_stmt *s;
	char host[256];
	int step;
	int64_t now = now_ms();

	*out = jv_array();
	self_host(host, sizeof host);
	if (db_prepare(&s, st, "SELECT call_id, phase, model, span_id, pid, host, text, started_at, updated_at"
			  " FROM live_text WHERE trace_id = ?1 ORDER BY started_at, call_id") < 0)
		return -1;
	db_bind_text(s, 1, trace);
	while ((step = db_step(s)) == DB_ROW) {
		static const char *const cols[] = { "call_id", "phase", "model", "span", "pid", "host", "text",
						    "started_at", "updated_at" };
		jv o = jv_object();
		for (int i = 0; i < 9; i++)
			o = json_set(o, cols[i], i == 4 ? db_col_num(s, i) : db_col_str(s, i));
		bool alive = !writer_gone(o, host, now, STORE_LIVE_STALE_MS);
		*out = jv_array_append(*out, json_set(o, "alive", jv_bool(alive)));
	}
	if (step != DB_DONE) {
		store_fail(st, "cannot read the live text of trace '%s'", trace);
		db_finalize(s);
		jv_free(*out);
		*out = jv_null();
		return -1;
	}
	db_finalize(s);
	return 0;
}

/* Delete the row of call. */
static int delete_call(struct store *st, const char *call)
{
	struct db_stmt *s;

	if (db_prepare(&s, st, "DELETE FROM live_text WHERE call_id = ?1") < 0)
		return -1;
	db_bind_text(s, 1, call);
	return db_step_done(st, s, "cannot remove the live text of call '%s'", call);
}

int store_live_prune(size_t *removed, struct store *st, int64_t stale_ms, bool dry_run)
{
	struct db_stmt *s;
	char host[256];
	jv gone = jv_array();
	int step, rc = 0;
	int64_t now = now_ms();

	*removed = 0;
	self_host(host, sizeof host);
	if (db_prepare(&s, st, "SELECT call_id, pid, host, updated_at FROM live_text ORDER BY call_id") < 0) {
		jv_free(gone);
		return -1;
	}
	while ((step = db_step(s)) == DB_ROW) {
		jv row = json_set(json_set(json_set(jv_object(), "pid", db_col_num(s, 1)), "host", db_col_str(s, 2)),
				  "updated_at", db_col_str(s, 3));
		if (writer_gone(row, host, now, stale_ms))
			gone = jv_array_append(gone, db_col_str(s, 0));
		jv_free(row);
	}
	if (step != DB_DONE)
		rc = store_fail(st, "cannot read the live text");
	db_finalize(s);
	/* deleted after the SELECT is done: a statement open on the table is not written under */
	jv_array_foreach(gone, i, c) {
		if (rc == 0 && (dry_run || delete_call(st, jv_string_value(c)) == 0))
			(*removed)++;
		else
			rc = -1;
		jv_free(c);
	}
	jv_free(gone);
	return rc;
}
