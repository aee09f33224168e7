/*
 * llm_log.c - the llm_calls table (schemas/sql/002-llm-calls.sql).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "store/store.h"
#include "store/db.h"
#include "core/ids.h"

/* Compact JSON with secrets scrubbed, or NULL for null.  Borrows v. */
static char *scrubbed(jv v)
{
	if (jv_get_kind(v) == JV_KIND_NULL || jv_get_kind(v) == JV_KIND_INVALID)
		return NULL;
	return llm_redact(json_dumps(jv_copy(v), false));
}

int llm_log_call(struct store *st, const struct llm_call_log *rec)
{
	static const char sql[] =
		"INSERT INTO llm_calls (ts, trace_id, phase, attempt, call, provider, model, request,"
		" response, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
		" cost_usd, duration_ms, retries, error)"
		" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)";
	struct db_stmt *s = NULL;
	char ts[TIMESTAMP_LEN + 1], *req = NULL, *resp = NULL, *err = NULL;
	const struct llm_usage zero = { 0 }, *u = rec->usage ? rec->usage : &zero;
	int rc = -1;

	if (!st)
		return 0;
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	timestamp_now(ts);
	req = scrubbed(rec->request);
	resp = scrubbed(rec->response);
	err = rec->error ? llm_redact(xstrdup(rec->error)) : NULL;
	db_bind_text(s, 1, ts);
	db_bind_text(s, 2, rec->trace_id);
	db_bind_text(s, 3, rec->phase);
	db_bind_int64(s, 4, rec->attempt);
	db_bind_int64(s, 5, rec->call);
	db_bind_text(s, 6, rec->provider ? rec->provider : "?");
	db_bind_text(s, 7, rec->model);
	db_bind_text(s, 8, req);
	db_bind_text(s, 9, resp);
	db_bind_int64(s, 10, u->input_tokens);
	db_bind_int64(s, 11, u->output_tokens);
	db_bind_int64(s, 12, u->cache_read_tokens);
	db_bind_int64(s, 13, u->cache_write_tokens);
	if (rec->cost_known)
		db_bind_double(s, 14, rec->cost_usd);
	else
		db_bind_null(s, 14);
	db_bind_double(s, 15, rec->duration_ms);
	db_bind_int64(s, 16, rec->retries);
	db_bind_text(s, 17, err);
	rc = db_step_done(st, s, "cannot log the model call");
	s = NULL;
out:
	db_finalize(s);
	free(req);
	free(resp);
	free(err);
	return rc;
}

int llm_log_replies(jv *out, struct store *st, const char *trace_id, int limit)
{
	/* the newest `limit`, given back oldest first */
	static const char lite[] =
		"SELECT * FROM (SELECT id, ts, phase, model, json_extract(response, '$.text'),"
		" json_extract(response, '$.tool_calls'), cost_usd, error FROM llm_calls"
		" WHERE trace_id = ?1 ORDER BY id DESC LIMIT ?2) AS r ORDER BY id";
	static const char pg[] =
		"SELECT * FROM (SELECT id, ts, phase, model, CAST(response AS json) ->> 'text',"
		" CAST(response AS json) -> 'tool_calls', cost_usd, error FROM llm_calls"
		" WHERE trace_id = ?1 ORDER BY id DESC LIMIT ?2) AS r ORDER BY id";
	static const char *const cols[] = { "id", "ts", "phase", "model", "text", "tool_calls", "cost_usd", "error" };
	struct db_stmt *s = NULL;
	int rc;

	*out = jv_null();
	if (db_prepare(&s, st, store_backend(st) == DB_POSTGRES ? pg : lite) < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_int64(s, 2, limit > 0 ? limit : DB_LIMIT_ALL);
	jv list = jv_array();
	while ((rc = db_step(s)) == DB_ROW) {
		jv r = jv_object();
		for (int i = 0; i < 8; i++)
			r = json_set(r, cols[i], i == 5 ? db_col_json(s, i) :
				     i == 0 || i == 6 ? db_col_num(s, i) : db_col_str(s, i));
		list = jv_array_append(list, r);
	}
	if (rc != DB_DONE) {
		jv_free(list);
		rc = store_fail(st, "reading the model's replies");
		db_finalize(s);
		return rc;
	}
	db_finalize(s);
	*out = list;
	return 0;
}
