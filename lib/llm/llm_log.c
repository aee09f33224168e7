/*
 * llm_log.c - the llm_calls table (schemas/sql/002-llm-calls.sql).
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "store/store.h"
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
	sqlite3_stmt *s = NULL;
	char ts[TIMESTAMP_LEN + 1], *req = NULL, *resp = NULL, *err = NULL;
	const struct llm_usage zero = { 0 }, *u = rec->usage ? rec->usage : &zero;
	int rc = -1;

	if (!st)
		return 0;
	if (store_prepare(&s, st, sql) < 0)
		goto out;
	timestamp_now(ts);
	req = scrubbed(rec->request);
	resp = scrubbed(rec->response);
	err = rec->error ? llm_redact(xstrdup(rec->error)) : NULL;
	store_bind_text(s, 1, ts);
	store_bind_text(s, 2, rec->trace_id);
	store_bind_text(s, 3, rec->phase);
	sqlite3_bind_int(s, 4, rec->attempt);
	sqlite3_bind_int(s, 5, rec->call);
	store_bind_text(s, 6, rec->provider ? rec->provider : "?");
	store_bind_text(s, 7, rec->model);
	store_bind_text(s, 8, req);
	store_bind_text(s, 9, resp);
	sqlite3_bind_int64(s, 10, u->input_tokens);
	sqlite3_bind_int64(s, 11, u->output_tokens);
	sqlite3_bind_int64(s, 12, u->cache_read_tokens);
	sqlite3_bind_int64(s, 13, u->cache_write_tokens);
	if (rec->cost_known)
		sqlite3_bind_double(s, 14, rec->cost_usd);
	else
		sqlite3_bind_null(s, 14);
	sqlite3_bind_double(s, 15, rec->duration_ms);
	sqlite3_bind_int(s, 16, rec->retries);
	store_bind_text(s, 17, err);
	rc = store_step_done(st, s, "cannot log the model call");
	s = NULL;
out:
	sqlite3_finalize(s);
	free(req);
	free(resp);
	free(err);
	return rc;
}

int llm_log_replies(jv *out, struct store *st, const char *trace_id, int limit)
{
	/* the newest `limit`, given back oldest first */
	static const char sql[] =
		"SELECT * FROM (SELECT id, ts, phase, model, json_extract(response, '$.text'),"
		" json_extract(response, '$.tool_calls'), cost_usd, error FROM llm_calls"
		" WHERE trace_id = ?1 ORDER BY id DESC LIMIT ?2) ORDER BY id";
	static const char *const cols[] = { "id", "ts", "phase", "model", "text", "tool_calls", "cost_usd", "error" };
	sqlite3_stmt *s = NULL;
	int rc;

	*out = jv_null();
	if (store_prepare(&s, st, sql) < 0)
		return -1;
	store_bind_text(s, 1, trace_id);
	sqlite3_bind_int(s, 2, limit > 0 ? limit : -1);
	jv list = jv_array();
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		jv r = jv_object();
		for (int i = 0; i < 8; i++)
			r = json_set(r, cols[i], i == 5 ? store_col_json(s, i) :
				     i == 0 || i == 6 ? store_col_num(s, i) : store_col_str(s, i));
		list = jv_array_append(list, r);
	}
	if (rc != SQLITE_DONE) {
		jv_free(list);
		rc = store_fail(st, "reading the model's replies");
		sqlite3_finalize(s);
		return rc;
	}
	sqlite3_finalize(s);
	*out = list;
	return 0;
}
