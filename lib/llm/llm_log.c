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

/* Whether sys (borrowed) is the system prompt m holds, logged whole in
 * st by the row m->system_where names. */
static bool system_logged(const struct llm_log_memo *m, const struct store *st, jv sys)
{
	return m && m->system_where_held && m->system_store == st && m->system_text &&
	       jv_get_kind(sys) == JV_KIND_STRING && json_equal(sys, m->system);
}

/* rec's request, its tools replaced by where they were logged when they are
 * the very object m holds (m NULL: none), its system prompt likewise when
 * it is the one m holds.  *fresh: it has tools m could keep once its row
 * is written (tools_keep).  *sys_whole: its system prompt (a string) is
 * written whole, for m to keep where (system_keep).  New jv. */
static jv request_to_log(bool *fresh, bool *sys_whole, const struct store *st, const struct llm_call_log *rec)
{
	jv tools = json_get(rec->request, "tools"), sys = json_get(rec->request, "system");
	jv req = jv_copy(rec->request);

	*fresh = false;
	*sys_whole = false;
	if (system_logged(rec->memo, st, sys))
		req = json_set(req, "system", json_set(jv_object(), "as_in", jv_copy(rec->memo->system_where)));
	else
		*sys_whole = rec->memo && jv_get_kind(sys) == JV_KIND_STRING;
	jv_free(sys);
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

/* {trace_id, phase, attempt, call} of rec's row (rec has a trace and a
 * phase).  New jv. */
static jv row_where(const struct llm_call_log *rec)
{
	return json_set(json_set(json_set(json_set(jv_object(), "trace_id",
		jv_string(rec->trace_id)), "phase", jv_string(rec->phase)),
		"attempt", jv_number(rec->attempt)), "call", jv_number(rec->call));
}

/* rec's row, just written to st, is where its tools are, for the memo's
 * later requests: only once it is there, or they would name no row. */
static void tools_keep(const struct store *st, const struct llm_call_log *rec)
{
	struct llm_log_memo *m = rec->memo;

	if (m->tools_held)
		jv_free(m->tools), jv_free(m->tools_where);
	m->tools = json_get(rec->request, "tools");
	m->tools_where = row_where(rec);
	m->tools_store = st;
	m->tools_held = true;
}

/* After rec's row was logged (written: ok) with its system prompt whole
 * (add_system() made it the one m holds): that row is where it is, when
 * it was written and a trace names it; else no row is. */
static void system_keep(const struct store *st, const struct llm_call_log *rec, bool ok)
{
	struct llm_log_memo *m = rec->memo;

	if (m->system_where_held)
		jv_free(m->system_where);
	m->system_where_held = ok && rec->trace_id && rec->phase;
	m->system_where = m->system_where_held ? row_where(rec) : jv_null();
	m->system_store = st;
}

/* After rec's row was logged (written: ok) with messages (chained: as_in
 * the row m names): that row is where the messages m now holds are, when
 * it was written and a trace names it; else no row is. */
static void msgs_keep(const struct store *st, const struct llm_call_log *rec, bool ok, bool chained)
{
	struct llm_log_memo *m = rec->memo;
	int depth = chained ? m->msgs_depth + 1 : 0;

	if (m->msgs_where_held)
		jv_free(m->msgs_where);
	m->msgs_where_held = ok && rec->trace_id && rec->phase;
	m->msgs_where = m->msgs_where_held ? row_where(rec) : jv_null();
	m->msgs_store = st;
	m->msgs_depth = depth;
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
	if (m->msgs_where_held)
		jv_free(m->msgs_where);
	if (m->system_where_held)
		jv_free(m->system_where);
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

/*
 * Whether rec's messages may be logged as the messages of the row rec's
 * memo names and those after them: the first `same` of them are the
 * memo's (msgs_same()), all of the memo's, that row is in st and of rec's
 * trace, and its chain of as_in rows stays within LLM_LOG_CHAIN_MAX.
 */
static bool msgs_chain(const struct store *st, const struct llm_call_log *rec, size_t same)
{
	const struct llm_log_memo *m = rec->memo;
	const char *trace;

	if (!m || !m->held || !m->msgs_where_held || m->msgs_store != st || m->kept == 0 ||
	    m->msgs_depth >= LLM_LOG_CHAIN_MAX || same != m->kept)
		return false;
	trace = json_get_str(m->msgs_where, "trace_id");
	return rec->trace_id && rec->phase && trace && strcmp(trace, rec->trace_id) == 0;
}

/* How a request is written: the memo (never NULL here), where its messages
 * are as_in (an object; else written whole), and how many of its leading
 * messages are the memo's (msgs_same(), for messages that are an array). */
struct req_log {
	struct llm_log_memo *m;
	jv where;                      /* borrowed */
	size_t same;
};

/* Append msgs (an array, consumed) to b as json_dumps() writes it, from
 * the texts m kept of the messages logged last (the first `same` of msgs
 * are those: msgs_same()); m keeps msgs' now.  where (borrowed) an
 * object: {"as_in": where, "then": [the messages after those m held]}
 * instead (msgs_chain() said so). */
static void add_messages(struct buf *b, struct llm_log_memo *m, jv msgs, size_t same, jv where)
{
	size_t n = (size_t)jv_array_length(jv_copy(msgs)), k = same, from = m->kept;

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
	if (jv_get_kind(where) == JV_KIND_OBJECT) {
		/* (message `from` begins after the comma that ends message from - 1) */
		size_t start = n > from ? m->ends[from - 1] + 1 : m->text.len;
		char *w = json_dumps(jv_copy(where), false);

		buf_adds(b, "{\"as_in\":");
		buf_adds(b, w);
		buf_adds(b, ",\"then\":[");
		buf_add(b, m->text.buf + start, m->text.len - start);
		buf_adds(b, "]}");
		free(w);
		return;
	}
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
 * json_dumps() writes it; the messages and the system prompt from r->m,
 * the messages as_in r->where when it is an object (add_messages()). */
static void add_member(struct buf *b, const struct req_log *r, const char *key, jv v)
{
	char *text;

	if (!strcmp(key, "messages") && jv_get_kind(v) == JV_KIND_ARRAY) {
		add_messages(b, r->m, v, r->same, r->where);
	} else if (!strcmp(key, "system") && jv_get_kind(v) == JV_KIND_STRING) {
		add_system(b, r->m, v);
	} else {
		text = json_dumps(v, false);
		buf_adds(b, text);
		free(text);
	}
}

/* req (an object, borrowed) as json_dumps() writes it, its messages and
 * system prompt from r->m (NULL: a memo of this call only), its messages
 * as_in r->where when that is an object, secrets scrubbed.  malloc'd. */
static char *request_text(const struct req_log *r, jv req)
{
	struct llm_log_memo once = { 0 };
	struct req_log own = { .m = &once, .where = jv_null(), .same = 0 };
	struct buf b = BUF_INIT;

	if (!r->m)
		r = &own;
	buf_addch(&b, '{');
	jv_object_foreach(req, k, v) {
		char *key = json_dumps(jv_copy(k), false);

		if (b.len > 1)
			buf_addch(&b, ',');
		buf_adds(&b, key);
		buf_addch(&b, ':');
		free(key);
		add_member(&b, r, jv_string_value(k), v);
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
	bool fresh = false, sys_whole = false, with_msgs = false, chained = false;

	if (!st)
		return 0;
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	timestamp_now(ts);
	jv logged = request_to_log(&fresh, &sys_whole, st, rec);
	if (jv_get_kind(logged) == JV_KIND_OBJECT) {
		jv msgs = json_get(logged, "messages");
		struct req_log r = { .m = rec->memo, .where = jv_null(), .same = 0 };

		with_msgs = rec->memo && jv_get_kind(msgs) == JV_KIND_ARRAY;
		if (with_msgs) {
			r.same = msgs_same(rec->memo, msgs, (size_t)jv_array_length(jv_copy(msgs)));
			chained = msgs_chain(st, rec, r.same);
			if (chained)
				r.where = rec->memo->msgs_where;
		}
		jv_free(msgs);
		req = request_text(&r, logged);
	} else {
		sys_whole = false;   /* (not written through the memo) */
		req = scrubbed(logged);
	}
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
	if (with_msgs)
		msgs_keep(st, rec, rc == 0, chained);
	if (sys_whole)
		system_keep(st, rec, rc == 0);
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

/* ---- a request read back whole ----------------------------------------- */

/* Column i of s (a request) parsed into *req, null when SQL NULL.  0, or
 * -1 with forge_error() when it is not JSON (row id's). */
static int request_col(jv *req, struct db_stmt *s, int i, int64_t id)
{
	const char *text = db_col_text(s, i);

	*req = text ? json_parse(text, db_col_bytes(s, i)) : jv_null();
	if (jv_is_valid(*req))
		return 0;
	jv_free(*req);
	*req = jv_null();
	return forge_error("the request of model call %lld (llm_calls row) is not JSON", (long long)id);
}

/* The row id's request (null: it has none).  0; 1 no such row; -1 with
 * forge_error(). */
static int row_request(jv *req, struct store *st, int64_t id)
{
	struct db_stmt *s = NULL;
	int step, rc = -1;

	*req = jv_null();
	if (db_prepare(&s, st, "SELECT request FROM llm_calls WHERE id = ?1") < 0)
		return -1;
	db_bind_int64(s, 1, id);
	step = db_step(s);
	if (step == DB_ROW)
		rc = request_col(req, s, 0, id);
	else if (step == DB_DONE)
		rc = 1;
	else
		store_fail(st, "cannot read model call %lld", (long long)id);
	db_finalize(s);
	return rc;
}

/* The newest row before row `before` that where (borrowed: {trace_id,
 * phase, attempt, call}) names: *id and *req its.  0; 1 none; -1 with
 * forge_error(). */
static int row_named(int64_t *id, jv *req, struct store *st, jv where, int64_t before)
{
	static const char sql[] = "SELECT id, request FROM llm_calls WHERE trace_id = ?1 AND phase = ?2"
				  " AND attempt = ?3 AND call = ?4 AND id < ?5 ORDER BY id DESC LIMIT 1";
	struct db_stmt *s = NULL;
	int step, rc = -1;

	*req = jv_null();
	if (db_prepare(&s, st, sql) < 0)
		return -1;
	db_bind_text(s, 1, json_get_str(where, "trace_id"));
	db_bind_text(s, 2, json_get_str(where, "phase"));
	db_bind_int64(s, 3, (int64_t)json_get_num(where, "attempt", -1));
	db_bind_int64(s, 4, (int64_t)json_get_num(where, "call", -1));
	db_bind_int64(s, 5, before);
	step = db_step(s);
	if (step == DB_ROW) {
		*id = db_col_int64(s, 0);
		rc = request_col(req, s, 1, *id);
	} else if (step == DB_DONE) {
		rc = 1;
	} else {
		store_fail(st, "cannot read the model call that model call %lld names", (long long)before);
	}
	db_finalize(s);
	return rc;
}

/* Whether member key of req (borrowed) names another row's (as_in). */
static bool names_row(jv req, const char *key)
{
	jv v = json_get(req, key), where = json_get(v, "as_in");
	bool yes = jv_get_kind(where) == JV_KIND_OBJECT;

	jv_free(v);
	jv_free(where);
	return yes;
}

/*
 * Member key of the request req (borrowed) of row id, whole: what the rows
 * its as_in chain names have, each one's "then" after it; of kind `kind`
 * (an array, or with no "then" in the chain a string too).  *out new jv.
 * 0, or -1 with forge_error() (asked: the row the caller asked for).
 */
static int member_whole(jv *out, struct store *st, int64_t asked, int64_t id, jv req, const char *key,
			jv_kind kind)
{
	jv v = json_get(req, key), thens = jv_array(), named;
	int hops = 0, rc = -1;
	bool one = kind == JV_KIND_STRING;   /* "its system prompt is", "its tools are" */
	const char *what = one ? "system prompt" : key;

	*out = jv_null();
	while (jv_get_kind(v) == JV_KIND_OBJECT && json_has(v, "as_in")) {
		jv where = json_get(v, "as_in");
		int got;

		if (jv_get_kind(where) != JV_KIND_OBJECT || ++hops > LLM_LOG_CHAIN_MAX) {
			if (hops > LLM_LOG_CHAIN_MAX)
				forge_error("cannot rebuild the request of model call %lld: its %s name%s a chain of"
					    " more than %d rows", (long long)asked, what, one ? "s" : "", LLM_LOG_CHAIN_MAX);
			else
				forge_error("cannot rebuild the request of model call %lld: its %s name%s no row"
					    " (model call %lld's as_in is no object)", (long long)asked, what, one ? "s" : "",
					    (long long)id);
			jv_free(where);
			goto out;
		}
		thens = jv_array_append(thens, json_get(v, "then"));
		got = row_named(&id, &named, st, where, id);
		if (got > 0)
			forge_error("cannot rebuild the request of model call %lld: its %s %s as in trace %s's %s call %.0f"
				    " (attempt %.0f), which is not in llm_calls (removed?)", (long long)asked, what,
				    one ? "is" : "are",
				    json_get_str(where, "trace_id") ? json_get_str(where, "trace_id") : "?",
				    json_get_str(where, "phase") ? json_get_str(where, "phase") : "?",
				    json_get_num(where, "call", -1), json_get_num(where, "attempt", -1));
		jv_free(where);
		if (got != 0)
			goto out;
		jv_free(v);
		v = json_get(named, key);
		jv_free(named);
	}
	for (int i = jv_array_length(jv_copy(thens)) - 1; i >= 0; i--) {
		jv then = jv_array_get(jv_copy(thens), i);

		if (jv_get_kind(then) == JV_KIND_ARRAY && jv_get_kind(v) == JV_KIND_ARRAY) {
			v = jv_array_concat(v, then);
		} else if (jv_get_kind(then) != JV_KIND_NULL || jv_get_kind(v) != kind) {
			jv_free(then);
			forge_error("cannot rebuild the request of model call %lld: the %s of a row it names "
				    "%s (model call %lld's)", (long long)asked, what,
				    one ? "is no string" : "are no array", (long long)id);
			goto out;
		} else {
			jv_free(then);
		}
	}
	*out = v;
	v = jv_null();
	rc = 0;
out:
	jv_free(v);
	jv_free(thens);
	return rc;
}

int llm_log_request(jv *out, struct store *st, int64_t id)
{
	static const struct {
		const char *key;
		jv_kind kind;
	} keys[] = { { "system", JV_KIND_STRING }, { "tools", JV_KIND_ARRAY }, { "messages", JV_KIND_ARRAY } };
	jv req;
	int rc = row_request(&req, st, id);

	*out = jv_null();
	if (rc == 0 && jv_get_kind(req) == JV_KIND_NULL)
		rc = 1;
	for (size_t i = 0; rc == 0 && i < sizeof(keys) / sizeof(*keys); i++) {
		jv whole;

		if (!names_row(req, keys[i].key))
			continue;
		rc = member_whole(&whole, st, id, id, req, keys[i].key, keys[i].kind);
		if (rc == 0)
			req = json_set(req, keys[i].key, whole);
	}
	if (rc == 0)
		*out = req;
	else
		jv_free(req);
	return rc;
}

int llm_log_call_get(jv *out, long *count, struct store *st, const char *trace_id, long n)
{
	static const char sql[] =
		"SELECT id, ts, phase, attempt, call, provider, model, response, input_tokens, output_tokens,"
		" cache_read_tokens, cache_write_tokens, cost_usd, duration_ms, retries, error FROM llm_calls"
		" WHERE trace_id = ?1 ORDER BY id LIMIT 1 OFFSET ?2";
	static const char *const cols[] = { "id", "ts", "phase", "attempt", "call", "provider", "model",
		"response", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
		"cost_usd", "duration_ms", "retries", "error" };
	struct db_stmt *s = NULL;
	jv row = jv_object(), req;
	int64_t id = 0;
	int step, rc = -1;

	*out = jv_null();
	*count = 0;
	if (n < 1)
		goto count;
	if (db_prepare(&s, st, sql) < 0)
		goto out;
	db_bind_text(s, 1, trace_id);
	db_bind_int64(s, 2, n - 1);
	step = db_step(s);
	if (step == DB_ROW) {
		id = db_col_int64(s, 0);
		for (int i = 0; i < (int)(sizeof(cols) / sizeof(*cols)); i++) {
			/* (ts, phase, provider, model, error: text; response: JSON) */
			bool text = i == 1 || i == 2 || i == 5 || i == 6 || i == 15;

			if (i == 7)	/* the request first, in its place */
				row = json_set(row, "request", jv_null());
			row = json_set(row, cols[i], i == 7 ? db_col_json(s, i) : text ? db_col_str(s, i) : db_col_num(s, i));
		}
	}
	db_finalize(s);
	s = NULL;
	if (step == DB_ROW) {
		rc = llm_log_request(&req, st, id);
		if (rc >= 0) {
			*out = json_set(row, "request", rc == 0 ? req : jv_null());
			row = jv_null();
			rc = 0;
		}
		goto out;
	}
	if (step != DB_DONE) {
		store_fail(st, "cannot read the model calls of trace '%s'", trace_id);
		goto out;
	}
count:
	if (db_prepare(&s, st, "SELECT count(*) FROM llm_calls WHERE trace_id = ?1") < 0)
		goto out;
	db_bind_text(s, 1, trace_id);
	if (db_step(s) == DB_ROW) {
		*count = (long)db_col_int64(s, 0);
		rc = 1;
	} else {
		store_fail(st, "cannot count the model calls of trace '%s'", trace_id);
	}
out:
	db_finalize(s);
	jv_free(row);
	return rc;
}
