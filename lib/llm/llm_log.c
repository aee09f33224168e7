/*
 * llm_log.c - the llm_calls table (schemas/sql/002-llm-calls.sql).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm_internal.h"
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

/* Whether rec's tools (borrowed) are those m holds, logged in st. */
static bool tools_logged(const struct llm_log_memo *m, const struct store *st, jv tools)
{
	return m && m->tools_held && m->tools_store == st && jv_identical(jv_copy(tools), jv_copy(m->tools));
}

/* rec's request, its tools replaced by where they were logged when they are
 * the very object m holds (m NULL: none).  *fresh: it has tools m could
 * keep once its row is written (tools_keep).  New jv. */
static jv request_to_log(bool *fresh, const struct store *st, const struct llm_call_log *rec)
{
	jv tools = json_get(rec->request, "tools");
	jv req = jv_copy(rec->request);

	*fresh = false;
	if (jv_get_kind(tools) != JV_KIND_ARRAY || jv_array_length(jv_copy(tools)) == 0) {
		jv_free(tools);
		return req;
	}
	if (tools_logged(rec->memo, st, tools))
		req = json_set(req, "tools", json_set(jv_object(), "as_in", jv_copy(rec->memo->tools_where)));
	else
		*fresh = rec->memo && rec->trace_id && rec->phase;
	jv_free(tools);
	return req;
}

/* rec's row, just written to st, is where its tools are, for the memo's
 * later requests: only once it is there, or they would name no row. */
static void tools_keep(const struct store *st, const struct llm_call_log *rec)
{
	struct llm_log_memo *m = rec->memo;

	if (m->tools_held)
		jv_free(m->tools), jv_free(m->tools_where);
	m->tools = json_get(rec->request, "tools");
	m->tools_where = json_set(json_set(json_set(json_set(jv_object(), "trace_id",
		jv_string(rec->trace_id)), "phase", jv_string(rec->phase)),
		"attempt", jv_number(rec->attempt)), "call", jv_number(rec->call));
	m->tools_store = st;
	m->tools_held = true;
}

void llm_log_memo_release(struct llm_log_memo *m)
{
	if (!m)
		return;
	if (m->held)
		jv_free(m->msgs);
	if (m->system_text)
		jv_free(m->system);
	free(m->ends);
	buf_release(&m->text);
	free(m->system_text);
	if (m->tools_held)
		jv_free(m->tools), jv_free(m->tools_where);
	memset(m, 0, sizeof(*m));
}

/* How many leading messages of msgs (borrowed) are those m holds. */
static size_t msgs_same(const struct llm_log_memo *m, jv msgs, size_t n)
{
	size_t k = 0;

	if (!m->held)
		return 0;
	while (k < n && k < m->kept &&
	       jv_identical(jv_array_get(jv_copy(msgs), (int)k), jv_array_get(jv_copy(m->msgs), (int)k)))
		k++;
	return k;
}

/* Append msgs (an array, consumed) to b as json_dumps() writes it, from
 * the texts m kept of the messages logged last; m keeps msgs' now. */
static void add_messages(struct buf *b, struct llm_log_memo *m, jv msgs)
{
	size_t n = (size_t)jv_array_length(jv_copy(msgs)), k = msgs_same(m, msgs, n);

	if (m->text.buf)
		buf_truncate(&m->text, k ? m->ends[k - 1] : 0);
	if (n > m->cap) {
		m->cap = n * 2;
		m->ends = xrealloc(m->ends, m->cap * sizeof(*m->ends));
	}
	for (; k < n; k++) {
		char *text = json_dumps(jv_array_get(jv_copy(msgs), (int)k), false);

		if (k)
			buf_addch(&m->text, ',');
		buf_adds(&m->text, text);
		m->ends[k] = m->text.len;
		free(text);
	}
	if (m->held)
		jv_free(m->msgs);
	m->msgs = msgs;
	m->held = true;
	m->kept = n;
	buf_addch(b, '[');
	buf_add(b, m->text.buf ? m->text.buf : "", m->text.len);
	buf_addch(b, ']');
}

/* Append sys (a string, consumed) to b as json_dumps() writes it; m keeps
 * its text. */
static void add_system(struct buf *b, struct llm_log_memo *m, jv sys)
{
	if (!m->system_text || !json_equal(sys, m->system)) {
		if (m->system_text)
			jv_free(m->system);
		free(m->system_text);
		m->system = jv_copy(sys);
		m->system_text = json_dumps(jv_copy(sys), false);
	}
	buf_adds(b, m->system_text);
	jv_free(sys);
}

/* v (consumed), the value of member key of a request, appended to b as
 * json_dumps() writes it; the messages and the system prompt from m. */
static void add_member(struct buf *b, struct llm_log_memo *m, const char *key, jv v)
{
	char *text;

	if (!strcmp(key, "messages") && jv_get_kind(v) == JV_KIND_ARRAY) {
		add_messages(b, m, v);
	} else if (!strcmp(key, "system") && jv_get_kind(v) == JV_KIND_STRING) {
		add_system(b, m, v);
	} else {
		text = json_dumps(v, false);
		buf_adds(b, text);
		free(text);
	}
}

/* req (an object, borrowed) as json_dumps() writes it, its messages and
 * system prompt from m (NULL: a memo of this call only), secrets
 * scrubbed.  malloc'd. */
static char *request_text(struct llm_log_memo *m, jv req)
{
	struct llm_log_memo once = { 0 };
	struct buf b = BUF_INIT;

	if (!m)
		m = &once;
	buf_addch(&b, '{');
	jv_object_foreach(req, k, v) {
		char *key = json_dumps(jv_copy(k), false);

		if (b.len > 1)
			buf_addch(&b, ',');
		buf_adds(&b, key);
		buf_addch(&b, ':');
		free(key);
		add_member(&b, m, jv_string_value(k), v);
		jv_free(k);
	}
	buf_addch(&b, '}');
	llm_log_memo_release(&once);
	return llm_redact(buf_detach(&b, NULL));
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
	bool fresh = false;

	if (!st)
		return 0;
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	timestamp_now(ts);
	jv logged = request_to_log(&fresh, st, rec);
	req = jv_get_kind(logged) == JV_KIND_OBJECT ? request_text(rec->memo, logged) : scrubbed(logged);
	jv_free(logged);
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
	if (rc == 0 && fresh)
		tools_keep(st, rec);
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
