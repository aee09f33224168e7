/*
 * memory.c - the memory handle, the confidence rules, and store / get /
 * update / adjust / archive / delete of memories (memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

static const char *const type_names[] = { "episodic", "semantic", "procedural" };

const char *memory_type_name(enum memory_type t)
{
	return t >= 0 && t <= MEMORY_PROCEDURAL ? type_names[t] : NULL;
}

int memory_type_parse(enum memory_type *out, const char *name)
{
	for (int i = 0; i <= MEMORY_PROCEDURAL; i++) {
		if (name && strcmp(name, type_names[i]) == 0) {
			*out = (enum memory_type)i;
			return 0;
		}
	}
	return forge_error("unknown memory type '%s': use episodic, semantic or procedural",
			   name ? name : "");
}

/* ---- the rules ------------------------------------------------------- */

double memory_initial_confidence(const char *source)
{
	if (source && strcmp(source, "human") == 0)
		return MEMORY_CONF_HUMAN;
	if (source && strcmp(source, "production") == 0)
		return MEMORY_CONF_PRODUCTION;
	return MEMORY_CONF_LLM;
}

double memory_clamp(double c)
{
	if (!(c > 0))
		return 0;
	if (c > 1)
		return 1;
	return round(c * 1e6) / 1e6;
}

double memory_recency(int64_t last, int64_t now)
{
	if (now <= last)
		return 1;
	double days = (double)(now - last) / (double)MEMORY_DAY_MS;

	return pow(0.5, days / MEMORY_HALF_LIFE_DAYS);
}

double memory_relevance(double sim, double rec, double conf)
{
	return 0.5 * sim + 0.2 * rec + 0.3 * conf;
}

double memory_decay(int64_t *through, double conf, int64_t last, int64_t decayed, int64_t now)
{
	int64_t from = last > decayed ? last : decayed;

	*through = decayed;
	if (now - from < MEMORY_WEEK_MS)
		return conf;
	int64_t weeks = (now - from) / MEMORY_WEEK_MS;

	*through = from + weeks * MEMORY_WEEK_MS;
	return memory_clamp(conf - MEMORY_DECAY_WEEKLY * (double)weeks);
}

bool memory_should_archive(double conf, int64_t last, int64_t now)
{
	return conf < MEMORY_ARCHIVE_BELOW || now - last > MEMORY_STALE_DAYS * MEMORY_DAY_MS;
}

/* ---- handle ---------------------------------------------------------- */

void memory_options_init(struct memory_options *opt)
{
	memset(opt, 0, sizeof *opt);
	opt->lexical_weight = -1;
}

void memory_options_from_config(struct memory_options *opt, const struct config *cfg)
{
	memory_options_init(opt);
	opt->embed_provider = config_get_str(cfg, "llm.embeddings.provider");
	opt->embed_model = config_get_str(cfg, "llm.embeddings.model");
	opt->embed_base_url = config_get_str(cfg, "llm.embeddings.base_url");
	opt->dim = (int)config_get_num(cfg, "memory.embedding_dim");
	opt->lexical_weight = config_get_num(cfg, "memory.lexical_weight");
}

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

int memory_open(struct memory **out, struct store *st, const struct memory_options *opt)
{
	struct memory_options dflt;
	struct memory *m;
	struct buf b = BUF_INIT;

	*out = NULL;
	if (!opt) {
		memory_options_init(&dflt);
		opt = &dflt;
	}
	if (opt->dim && (opt->dim < 64 || opt->dim > 2048 || opt->dim % 16))
		return forge_error("memory embedding size %d: use a multiple of 16 from 64 to 2048",
				   opt->dim);
	if (opt->embed_provider && *opt->embed_provider && strcmp(opt->embed_provider, "openai") &&
	    strcmp(opt->embed_provider, "ollama"))
		return forge_error("unknown embedding provider '%s': use openai, ollama or none",
				   opt->embed_provider);
	m = xcalloc(1, sizeof *m);
	m->st = st;
	m->db = store_db(st);
	m->now = opt->now;
	m->now_payload = opt->now_payload;
	m->embed_provider = dup_or_null(opt->embed_provider);
	m->embed_model = dup_or_null(opt->embed_model);
	m->embed_base_url = dup_or_null(opt->embed_base_url);
	m->dim = opt->dim ? opt->dim : 256;
	m->lexw = opt->lexical_weight >= 0 && opt->lexical_weight <= 1 ? opt->lexical_weight : 0.4;
	if (m->embed_provider)
		buf_addf(&b, "%s:%s", m->embed_provider, m->embed_model ? m->embed_model : "default");
	else
		buf_addf(&b, "local-fh1:%d", m->dim);
	m->embedder_id = buf_detach(&b, NULL);
	if (opt->vector_path) {
		m->vec_path = dup_or_null(opt->vector_path);
	} else if (strcmp(store_path(st), ":memory:") != 0 && *store_path(st) && !store_readonly(st)) {
		/* (A read-only store keeps its vectors in memory: the file and its
		 * lock may not be writable where the database is.) */
		buf_addf(&b, "%s.vectors", store_path(st));
		m->vec_path = buf_detach(&b, NULL);
	}
	*out = m;
	return 0;
}

void memory_free(struct memory *m)
{
	if (!m)
		return;
	vindex_free(m->idx);
	for (int i = 0; i < MS_COUNT; i++)
		sqlite3_finalize(m->stmt[i]);
	free(m->embed_provider);
	free(m->embed_model);
	free(m->embed_base_url);
	free(m->embedder_id);
	free(m->vec_path);
	free(m);
}

struct store *memory_store_of(struct memory *m)
{
	return m->st;
}

int64_t memory_now(struct memory *m)
{
	return m->now ? m->now(m->now_payload) : now_ms();
}

/* ---- small helpers shared by memory*.c ------------------------------ */

int mem_fail(struct memory *m, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	store_fail(m->st, "%s", b.buf);
	buf_release(&b);
	return -1;
}

int mem_cached(sqlite3_stmt **out, struct memory *m, enum mem_stmt which, const char *sql)
{
	if (m->stmt[which]) {
		sqlite3_reset(m->stmt[which]);
		sqlite3_clear_bindings(m->stmt[which]);
		*out = m->stmt[which];
		return 0;
	}
	if (mem_prepare(out, m, sql) < 0)
		return -1;
	m->stmt[which] = *out;
	return 0;
}

int mem_prepare(sqlite3_stmt **out, struct memory *m, const char *sql)
{
	if (sqlite3_prepare_v2(m->db, sql, -1, out, NULL) != SQLITE_OK) {
		*out = NULL;
		return mem_fail(m, "cannot prepare a memory query");
	}
	return 0;
}

int mem_begin(struct memory *m)
{
	return store_begin(m->st);
}

int mem_commit(struct memory *m)
{
	return store_commit(m->st);
}

void mem_rollback(struct memory *m)
{
	store_rollback(m->st);
}

jv mem_time_json(int64_t ms)
{
	char ts[TIMESTAMP_LEN + 1];

	timestamp_format(ts, ms);
	return jv_string(ts);
}

int mem_time_parse(int64_t *out, jv v)
{
	if (jv_get_kind(v) == JV_KIND_NUMBER) {
		*out = (int64_t)jv_number_value(v);
		return 0;
	}
	if (jv_get_kind(v) != JV_KIND_STRING)
		return forge_error("a time must be an ISO-8601 string");
	const char *s = jv_string_value(v);
	struct tm tm = { 0 };
	int ms = 0, n = 0;

	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return forge_error("'%s' is not an ISO-8601 time (2026-11-21T21:30:00.123Z)", s);
	s += n;
	if (*s == '.') {
		int digits = 0;

		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			if (digits < 3)
				ms = ms * 10 + (*s - '0');
		}
		for (; digits < 3; digits++)
			ms *= 10;
	}
	if (strcmp(s, "Z") != 0)
		return forge_error("'%s' is not an ISO-8601 UTC time ending in Z", jv_string_value(v));
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*out = (int64_t)timegm(&tm) * 1000 + ms;
	return 0;
}

static uint64_t fnv1a(const char *s, size_t len, uint64_t h)
{
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

void mem_hash_hex(char out[33], const char *s, size_t len)
{
	uint64_t a = fnv1a(s, len, 0xcbf29ce484222325ULL);
	uint64_t b = fnv1a(s, len, 0x84222325cbf29ce4ULL ^ len);

	snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

void mem_embed_text(struct buf *out, const char *content, const char *context, const char *tags)
{
	buf_reset(out);
	buf_adds(out, content ? content : "");
	buf_addch(out, '\n');
	buf_adds(out, context ? context : "");
	buf_addch(out, '\n');
	buf_adds(out, tags ? tags : "[]");
}

int mem_tags_text(char **out, jv tags)
{
	*out = NULL;
	if (jv_get_kind(tags) == JV_KIND_NULL || jv_get_kind(tags) == JV_KIND_INVALID) {
		*out = xstrdup("[]");
		return 0;
	}
	if (jv_get_kind(tags) != JV_KIND_ARRAY)
		return forge_error("'tags' must be an array of strings");
	jv clean = jv_array();
	int rc = 0;

	jv_array_foreach(tags, i, t) {
		if (jv_get_kind(t) != JV_KIND_STRING || !*jv_string_value(t)) {
			rc = forge_error("'tags' must be an array of non-empty strings (item %d)", i);
			jv_free(t);
			continue;
		}
		bool seen = false;

		jv_array_foreach(clean, j, c) {
			seen = seen || strcmp(jv_string_value(c), jv_string_value(t)) == 0;
			jv_free(c);
			(void)j;
		}
		clean = seen ? (jv_free(t), clean) : jv_array_append(clean, t);
	}
	if (rc == 0)
		*out = json_dumps(clean, false);
	else
		jv_free(clean);
	return rc;
}

int mem_signal_log(struct memory *m, const char *id, const char *kind, double delta, const char *note)
{
	sqlite3_stmt *s;
	int rc = 0;

	if (mem_prepare(&s, m, "INSERT INTO memory_signals (ts, memory_id, kind, delta, note) "
			"VALUES (?, ?, ?, ?, ?)") < 0)
		return -1;
	sqlite3_bind_int64(s, 1, memory_now(m));
	store_bind_text(s, 2, id);
	store_bind_text(s, 3, kind);
	if (isnan(delta))
		sqlite3_bind_null(s, 4);
	else
		sqlite3_bind_double(s, 4, delta);
	store_bind_text(s, 5, note);
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = mem_fail(m, "cannot record a memory signal");
	sqlite3_finalize(s);
	return rc;
}

int mem_seq_of(int64_t *seq, struct memory *m, const char *id)
{
	sqlite3_stmt *s;
	int rc = MEMORY_NOT_FOUND, step;

	if (mem_cached(&s, m, MS_SEQ, "SELECT seq FROM memories WHERE id = ?") < 0)
		return -1;
	store_bind_text(s, 1, id);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW) {
		*seq = sqlite3_column_int64(s, 0);
		rc = 0;
	} else if (step != SQLITE_DONE) {
		rc = mem_fail(m, "cannot read memory '%s'", id);
	}
	sqlite3_reset(s);
	return rc;
}

/* ---- row <-> JSON ----------------------------------------------------- */

static jv put_opt(jv obj, const char *key, jv val)
{
	if (jv_get_kind(val) == JV_KIND_NULL) {
		jv_free(val);
		return obj;
	}
	return jv_object_set(obj, jv_string(key), val);
}

jv mem_row_json(sqlite3_stmt *s, int c)
{
	jv o = jv_object();

	o = jv_object_set(o, jv_string("id"), store_col_str(s, c + 0));
	o = jv_object_set(o, jv_string("type"), store_col_str(s, c + 1));
	o = jv_object_set(o, jv_string("content"), store_col_str(s, c + 2));
	o = jv_object_set(o, jv_string("context"), store_col_str(s, c + 3));
	jv tags = store_col_json(s, c + 4);
	o = jv_object_set(o, jv_string("tags"), jv_get_kind(tags) == JV_KIND_ARRAY ? tags :
			  (jv_free(tags), jv_array()));
	o = jv_object_set(o, jv_string("confidence"), jv_number(sqlite3_column_double(s, c + 5)));
	o = put_opt(o, "source", store_col_str(s, c + 6));
	o = jv_object_set(o, jv_string("created_at"), mem_time_json(sqlite3_column_int64(s, c + 7)));
	o = jv_object_set(o, jv_string("updated_at"), mem_time_json(sqlite3_column_int64(s, c + 8)));
	o = jv_object_set(o, jv_string("last_accessed"), mem_time_json(sqlite3_column_int64(s, c + 9)));
	o = jv_object_set(o, jv_string("access_count"), jv_number((double)sqlite3_column_int64(s, c + 10)));
	o = put_opt(o, "episode", store_col_json(s, c + 11));
	if (sqlite3_column_type(s, c + 12) != SQLITE_NULL)
		o = jv_object_set(o, jv_string("frequency"), jv_number((double)sqlite3_column_int64(s, c + 12)));
	if (sqlite3_column_type(s, c + 13) != SQLITE_NULL)
		o = jv_object_set(o, jv_string("success_rate"), jv_number(sqlite3_column_double(s, c + 13)));
	o = put_opt(o, "trigger", store_col_str(s, c + 14));
	o = put_opt(o, "steps", store_col_json(s, c + 15));
	o = put_opt(o, "pattern_id", store_col_str(s, c + 16));
	if (sqlite3_column_type(s, c + 17) != SQLITE_NULL)
		o = jv_object_set(o, jv_string("archived_at"), mem_time_json(sqlite3_column_int64(s, c + 17)));
	o = put_opt(o, "archived_reason", store_col_str(s, c + 18));
	return o;
}

/* ---- store ------------------------------------------------------------ */

/* Validated fields of a memory in JSON form; pointers borrow `src`. */
struct fields {
	jv src;
	const char *id, *type, *content, *context, *source, *trigger;
	char *tags, *episode, *steps;
	double confidence;
	int64_t created_at, updated_at, last_accessed, archived_at;
	long access_count, frequency;
	double success_rate;
	const char *archived_reason, *pattern_id;
};

static void fields_release(struct fields *f)
{
	free(f->tags);
	free(f->episode);
	free(f->steps);
	jv_free(f->src);
}

static int opt_str(const char **out, jv src, const char *key)
{
	jv v = json_get(src, key);
	int kind = jv_get_kind(v);

	jv_free(v);
	*out = json_get_str(src, key);
	if (kind != JV_KIND_NULL && !*out)
		return forge_error("'%s' must be a string", key);
	return 0;
}

static int opt_time(int64_t *out, jv src, const char *key, int64_t dflt)
{
	jv v = json_get(src, key);
	int rc = 0;

	*out = dflt;
	if (jv_get_kind(v) != JV_KIND_NULL && mem_time_parse(out, v) < 0)
		rc = forge_error_prefix("'%s'", key);
	jv_free(v);
	return rc;
}

static int opt_json(char **out, jv src, const char *key, jv_kind kind)
{
	jv v = json_get(src, key);

	*out = NULL;
	if (jv_get_kind(v) == JV_KIND_NULL) {
		jv_free(v);
		return 0;
	}
	if (jv_get_kind(v) != kind) {
		jv_free(v);
		return forge_error("'%s' must be an %s", key, kind == JV_KIND_ARRAY ? "array" : "object");
	}
	*out = json_dumps(v, false);
	return 0;
}

static int opt_num(double *out, jv src, const char *key, double lo, double hi, double dflt)
{
	jv v = json_get(src, key);
	int kind = jv_get_kind(v);

	*out = kind == JV_KIND_NUMBER ? jv_number_value(v) : dflt;
	jv_free(v);
	if (kind != JV_KIND_NULL && kind != JV_KIND_NUMBER)
		return forge_error("'%s' must be a number", key);
	if (kind == JV_KIND_NUMBER && !(*out >= lo && *out <= hi))
		return forge_error("'%s' must be from %g to %g", key, lo, hi);
	return 0;
}

static int fields_parse(struct fields *f, struct memory *m, jv src, bool keep_ids)
{
	enum memory_type t;
	double d;
	int64_t now = memory_now(m);

	memset(f, 0, sizeof *f);
	f->src = src;
	if (jv_get_kind(src) != JV_KIND_OBJECT)
		return forge_error("a memory must be a JSON object");
	f->type = json_get_str(src, "type");
	if (!f->type)
		return forge_error("'type' is missing (episodic, semantic or procedural)");
	if (memory_type_parse(&t, f->type) < 0)
		return -1;
	f->content = json_get_str(src, "content");
	if (!f->content || !*f->content)
		return forge_error("'content' is missing or empty");
	if (opt_str(&f->context, src, "context") < 0 || opt_str(&f->source, src, "source") < 0 ||
	    opt_str(&f->trigger, src, "trigger") < 0 ||
	    opt_str(&f->archived_reason, src, "archived_reason") < 0 ||
	    opt_str(&f->pattern_id, src, "pattern_id") < 0)
		return -1;
	if (opt_num(&f->confidence, src, "confidence", 0, 1, memory_initial_confidence(f->source)) < 0)
		return -1;
	f->confidence = memory_clamp(f->confidence);
	jv tags = json_get(src, "tags");
	int rc = mem_tags_text(&f->tags, tags);

	jv_free(tags);
	if (rc < 0 || opt_json(&f->episode, src, "episode", JV_KIND_OBJECT) < 0 ||
	    opt_json(&f->steps, src, "steps", JV_KIND_ARRAY) < 0)
		return -1;
	if (opt_num(&d, src, "frequency", 0, 1e12, -1) < 0 ||
	    opt_num(&f->success_rate, src, "success_rate", 0, 1, -1) < 0)
		return -1;
	f->frequency = (long)d;
	if (!keep_ids) {
		f->created_at = f->updated_at = f->last_accessed = now;
		f->id = NULL;
		return 0;
	}
	f->id = json_get_str(src, "id");
	if (f->id && !ulid_valid(f->id))
		return forge_error("'id' is not a ULID: '%s'", f->id);
	if (opt_time(&f->created_at, src, "created_at", now) < 0 ||
	    opt_time(&f->updated_at, src, "updated_at", f->created_at) < 0 ||
	    opt_time(&f->last_accessed, src, "last_accessed", f->created_at) < 0 ||
	    opt_time(&f->archived_at, src, "archived_at", 0) < 0)
		return -1;
	if (opt_num(&d, src, "access_count", 0, 1e15, 0) < 0)
		return -1;
	f->access_count = (long)d;
	return 0;
}

/* Insert the row (inside the caller's transaction). */
static int insert_row(struct memory *m, const struct fields *f, const char *id, const char *hash)
{
	sqlite3_stmt *s;
	int rc = 0;

	if (mem_cached(&s, m, MS_INSERT, "INSERT INTO memories (id, type, content, context, tags, confidence, "
			"source, content_hash, created_at, updated_at, last_accessed, access_count, "
			"episode, frequency, success_rate, trigger_text, steps, pattern_id, archived_at, "
			"archived_reason) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") < 0)
		return -1;
	store_bind_text(s, 1, id);
	store_bind_text(s, 2, f->type);
	store_bind_text(s, 3, f->content);
	store_bind_text(s, 4, f->context ? f->context : "");
	store_bind_text(s, 5, f->tags);
	sqlite3_bind_double(s, 6, f->confidence);
	store_bind_text(s, 7, f->source);
	store_bind_text(s, 8, hash);
	sqlite3_bind_int64(s, 9, f->created_at);
	sqlite3_bind_int64(s, 10, f->updated_at);
	sqlite3_bind_int64(s, 11, f->last_accessed);
	sqlite3_bind_int64(s, 12, f->access_count);
	store_bind_text(s, 13, f->episode);
	if (f->frequency >= 0)
		sqlite3_bind_int64(s, 14, f->frequency);
	if (f->success_rate >= 0)
		sqlite3_bind_double(s, 15, f->success_rate);
	store_bind_text(s, 16, f->trigger);
	store_bind_text(s, 17, f->steps);
	store_bind_text(s, 18, f->pattern_id);
	if (f->archived_at)
		sqlite3_bind_int64(s, 19, f->archived_at);
	store_bind_text(s, 20, f->archived_reason);
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = mem_fail(m, "cannot store memory '%s'", id);
	sqlite3_reset(s);
	return rc;
}

static int insert_edges(struct memory *m, const char *id, jv related)
{
	int rc = 0;

	jv_array_foreach(related, i, r) {
		const char *other = json_get_str(r, "id");
		double sim = json_get_num(r, "similarity", -1);

		if (rc == 0)
			rc = memory_relate(m, id, other, json_get_str(r, "kind"), sim);
		if (rc == 0 && json_get_bool(r, "contradicts", false))
			rc = memory_relate(m, id, other, "contradicts", sim);
		jv_free(r);
		(void)i;
	}
	jv_free(related);
	return rc;
}

/* Store one parsed memory: embed, find relationships, insert. */
static int store_fields(char id_out[ULID_LEN + 1], struct memory *m, struct fields *f,
			bool link, bool in_txn)
{
	char id[ULID_LEN + 1], hash[33];
	struct buf text = BUF_INIT;
	jv related = jv_array();
	float *vec = NULL;
	size_t dim = 0;
	int rc = -1;

	if (f->id)
		snprintf(id, sizeof id, "%s", f->id);
	else
		ulid_new(id);
	mem_embed_text(&text, f->content, f->context, f->tags);
	mem_hash_hex(hash, text.buf, text.len);
	if (link) {
		const char *t = text.buf;

		jv_free(related);
		related = jv_invalid();
		if (mem_embed_many(&vec, &dim, m, &t, &text.len, 1) < 0 ||
		    mem_find_related(&related, m, vec, dim, f->content) < 0)
			goto out;
	}
	if (!in_txn && mem_begin(m) < 0)
		goto out;
	if (insert_row(m, f, id, hash) < 0 || insert_edges(m, id, jv_copy(related)) < 0) {
		if (!in_txn)
			mem_rollback(m);
		goto out;
	}
	if (!in_txn && mem_commit(m) < 0)
		goto out;
	if (id_out)
		memcpy(id_out, id, sizeof id);
	rc = 0;
out:
	jv_free(related);
	free(vec);
	buf_release(&text);
	return rc;
}

int memory_store(char id_out[ULID_LEN + 1], struct memory *m, jv mem)
{
	struct fields f;
	int rc = fields_parse(&f, m, mem, false);

	if (rc == 0)
		rc = store_fields(id_out, m, &f, true, false);
	fields_release(&f);
	return rc;
}

/* For memory_import (memory_io.c): parse and validate only. */
int mem_import_check(struct memory *m, jv mem);
int mem_import_check(struct memory *m, jv mem)
{
	struct fields f;
	int rc = fields_parse(&f, m, mem, true);

	fields_release(&f);
	return rc;
}

/* For memory_import: store inside the caller's transaction, keeping ids and
 * times; link when asked. */
int mem_import_one(char id_out[ULID_LEN + 1], struct memory *m, jv mem, bool link);
int mem_import_one(char id_out[ULID_LEN + 1], struct memory *m, jv mem, bool link)
{
	struct fields f;
	int rc = fields_parse(&f, m, mem, true);

	if (rc == 0)
		rc = store_fields(id_out, m, &f, link, true);
	fields_release(&f);
	return rc;
}

int memory_get(jv *out, struct memory *m, const char *id)
{
	sqlite3_stmt *s;
	int step, rc = 0;

	*out = jv_null();
	if (mem_cached(&s, m, MS_GET, "SELECT " MEM_COLS " FROM memories WHERE id = ?") < 0)
		return -1;
	store_bind_text(s, 1, id);
	step = sqlite3_step(s);
	if (step == SQLITE_ROW)
		*out = mem_row_json(s, 0);
	else if (step != SQLITE_DONE)
		rc = mem_fail(m, "cannot read memory '%s'", id);
	sqlite3_reset(s);
	return rc;
}

static const char *const updatable[] = {
	"content", "context", "tags", "confidence", "source", "episode", "frequency",
	"success_rate", "trigger", "steps", NULL
};

int memory_update(struct memory *m, const char *id, jv changes)
{
	struct fields f = { .src = jv_null() };
	struct buf text = BUF_INIT;
	char hash[33];
	sqlite3_stmt *s = NULL;
	jv cur = jv_null();
	int rc = -1;

	if (jv_get_kind(changes) != JV_KIND_OBJECT) {
		forge_error("changes to a memory must be a JSON object");
		goto out;
	}
	jv keys = jv_keys(jv_copy(changes));
	jv_array_foreach(keys, i, k) {
		bool ok = false;

		for (int j = 0; updatable[j]; j++)
			ok = ok || strcmp(updatable[j], jv_string_value(k)) == 0;
		if (!ok && rc == -1 && i >= 0) {
			forge_error("'%s' cannot be changed (only content, context, tags, confidence, "
				    "source, episode, frequency, success_rate, trigger, steps)",
				    jv_string_value(k));
			rc = -2;
		}
		jv_free(k);
	}
	jv_free(keys);
	if (rc == -2) {
		rc = -1;
		goto out;
	}
	if (memory_get(&cur, m, id) < 0)
		goto out;
	if (jv_get_kind(cur) == JV_KIND_NULL) {
		rc = MEMORY_NOT_FOUND;
		goto out;
	}
	jv merged = jv_object_merge(jv_copy(cur), jv_copy(changes));
	if (fields_parse(&f, m, merged, true) < 0)
		goto out;
	mem_embed_text(&text, f.content, f.context, f.tags);
	mem_hash_hex(hash, text.buf, text.len);
	if (mem_prepare(&s, m, "UPDATE memories SET content = ?, context = ?, tags = ?, "
			"confidence = ?, source = ?, episode = ?, frequency = ?, success_rate = ?, "
			"trigger_text = ?, steps = ?, content_hash = ?, updated_at = ? WHERE id = ?") < 0)
		goto out;
	store_bind_text(s, 1, f.content);
	store_bind_text(s, 2, f.context ? f.context : "");
	store_bind_text(s, 3, f.tags);
	sqlite3_bind_double(s, 4, f.confidence);
	store_bind_text(s, 5, f.source);
	store_bind_text(s, 6, f.episode);
	if (f.frequency >= 0)
		sqlite3_bind_int64(s, 7, f.frequency);
	if (f.success_rate >= 0)
		sqlite3_bind_double(s, 8, f.success_rate);
	store_bind_text(s, 9, f.trigger);
	store_bind_text(s, 10, f.steps);
	store_bind_text(s, 11, hash);
	sqlite3_bind_int64(s, 12, memory_now(m));
	store_bind_text(s, 13, id);
	if (sqlite3_step(s) != SQLITE_DONE) {
		mem_fail(m, "cannot update memory '%s'", id);
		goto out;
	}
	rc = sqlite3_changes(m->db) ? 0 : MEMORY_NOT_FOUND;
out:
	sqlite3_finalize(s);
	buf_release(&text);
	fields_release(&f);
	jv_free(cur);
	jv_free(changes);
	return rc;
}
