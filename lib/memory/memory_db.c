/*
 * memory_db.c - the bottom of lib/memory/: the confidence rules, the memory
 * types, and the helpers every memory*.c file shares (statements,
 * transactions, errors, times, hashes, tags, signals, rows as JSON).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/forge.h"
#include "core/ids.h"
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

int mem_cached(struct db_stmt **out, struct memory *m, enum mem_stmt which, const char *sql)
{
	if (m->stmt[which]) {
		db_reset(m->stmt[which]);   /* (the bindings too) */
		*out = m->stmt[which];
		return 0;
	}
	if (mem_prepare(out, m, sql) < 0)
		return -1;
	m->stmt[which] = *out;
	return 0;
}

int mem_prepare(struct db_stmt **out, struct memory *m, const char *sql)
{
	/* db_prepare names the failure (store_fail) */
	return db_prepare(out, m->st, sql);
}

int mem_begin(struct memory *m)
{
	if (store_begin(m->st) < 0)
		return -1;
	/* PostgreSQL: memory writers one at a time, as BEGIN IMMEDIATE makes
	 * them on SQLite (a content hash looked up then inserted, the
	 * thesaurus and associations rebuilt), the lock held to the end of
	 * the transaction */
	if (m->pg && store_exec(m->st, "SELECT pg_advisory_xact_lock(4242001)") < 0) {
		store_rollback(m->st);
		return -1;
	}
	if (mem_access_fold(m) < 0) {
		store_rollback(m->st);
		return -1;
	}
	return 0;
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
		double x = jv_number_value(v);
		if (!(x >= 0 && x <= (double)TIMESTAMP_MAX_MS) || x != floor(x))
			return forge_error("%.17g is not a time: milliseconds since 1970 up to the year 9999, "
					   "or an ISO-8601 string", x);
		*out = (int64_t)x;
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
	/* timegm() rolls a 13th month or a 99th hour into another date: a time
	 * must come back as it was written */
	struct tm given = tm;   /* (timegm() normalises its argument) */
	time_t t = timegm(&tm);
	if (t < 0 || given.tm_year != tm.tm_year || given.tm_mon != tm.tm_mon || given.tm_mday != tm.tm_mday ||
	    given.tm_hour != tm.tm_hour || given.tm_min != tm.tm_min || given.tm_sec != tm.tm_sec)
		return forge_error("'%s' is not a time (a field is out of range, or before 1970)",
				   jv_string_value(v));
	*out = (int64_t)t * 1000 + ms;
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

/* 8 bytes of s as a little-endian word (the same stamp on every machine). */
static uint64_t le64(const unsigned char *s)
{
	uint64_t w;

	memcpy(&w, s, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

void mem_stamp_hex(char out[33], const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	uint64_t a = 0x9e3779b97f4a7c15ULL ^ len, b = 0xc2b2ae3d27d4eb4fULL + len;
	unsigned char tail[8] = { 0 };
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w = le64(p + i);

		a = (a ^ w) * 0x100000001b3ULL;
		a ^= a >> 29;
		b = (b + w) * 0x9e3779b97f4a7c15ULL;
		b ^= b >> 31;
	}
	memcpy(tail, p + i, len - i);
	a = mix64(a ^ le64(tail));
	b = mix64(b + le64(tail) + a);
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
		/* (a NUL character: PostgreSQL's jsonb, which the tag filter
		 * reads them as, cannot hold one; a tag of a word is no loss) */
		if (strlen(jv_string_value(t)) != (size_t)jv_string_length_bytes(jv_copy(t))) {
			rc = forge_error("'tags' item %d holds a NUL character (\\u0000)", i);
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
	struct db_stmt *s;
	int rc = 0;

	if (mem_prepare(&s, m, "INSERT INTO memory_signals (ts, memory_id, kind, delta, note) "
			"VALUES (?, ?, ?, ?, ?)") < 0)
		return -1;
	db_bind_int64(s, 1, memory_now(m));
	db_bind_text(s, 2, id);
	db_bind_text(s, 3, kind);
	if (isnan(delta))
		db_bind_null(s, 4);
	else
		db_bind_double(s, 4, delta);
	db_bind_text(s, 5, note);
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot record a memory signal");
	db_finalize(s);
	return rc;
}

int mem_seq_of(int64_t *seq, struct memory *m, const char *id)
{
	struct db_stmt *s;
	int rc = MEMORY_NOT_FOUND, step;

	if (mem_cached(&s, m, MS_SEQ, "SELECT seq FROM memories WHERE id = ?") < 0)
		return -1;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step == DB_ROW) {
		*seq = db_col_int64(s, 0);
		rc = 0;
	} else if (step != DB_DONE) {
		rc = mem_fail(m, "cannot read memory '%s'", id);
	}
	db_reset(s);
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

jv mem_row_json(const struct memory *m, struct db_stmt *s, int c)
{
	int64_t last = db_col_int64(s, c + 9), pending_last;
	long count = (long)db_col_int64(s, c + 10), pending;
	jv o = jv_object();

	if (mem_access_pending(m, db_col_text(s, c + 0), &pending, &pending_last)) {
		count += pending;
		last = pending_last > last ? pending_last : last;
	}

	o = jv_object_set(o, jv_string("id"), db_col_str(s, c + 0));
	o = jv_object_set(o, jv_string("type"), db_col_str(s, c + 1));
	o = jv_object_set(o, jv_string("content"), db_col_str(s, c + 2));
	o = jv_object_set(o, jv_string("context"), db_col_str(s, c + 3));
	jv tags = db_col_json(s, c + 4);
	o = jv_object_set(o, jv_string("tags"), jv_get_kind(tags) == JV_KIND_ARRAY ? tags :
			  (jv_free(tags), jv_array()));
	o = jv_object_set(o, jv_string("confidence"), jv_number(db_col_double(s, c + 5)));
	o = put_opt(o, "source", db_col_str(s, c + 6));
	o = jv_object_set(o, jv_string("created_at"), mem_time_json(db_col_int64(s, c + 7)));
	o = jv_object_set(o, jv_string("updated_at"), mem_time_json(db_col_int64(s, c + 8)));
	o = jv_object_set(o, jv_string("last_accessed"), mem_time_json(last));
	o = jv_object_set(o, jv_string("access_count"), jv_number((double)count));
	o = put_opt(o, "episode", db_col_json(s, c + 11));
	if (!db_col_null(s, c + 12))
		o = jv_object_set(o, jv_string("frequency"), jv_number((double)db_col_int64(s, c + 12)));
	if (!db_col_null(s, c + 13))
		o = jv_object_set(o, jv_string("success_rate"), jv_number(db_col_double(s, c + 13)));
	o = put_opt(o, "trigger", db_col_str(s, c + 14));
	o = put_opt(o, "steps", db_col_json(s, c + 15));
	o = put_opt(o, "pattern_id", db_col_str(s, c + 16));
	if (!db_col_null(s, c + 17))
		o = jv_object_set(o, jv_string("archived_at"), mem_time_json(db_col_int64(s, c + 17)));
	o = put_opt(o, "archived_reason", db_col_str(s, c + 18));
	/* what decay has counted already: an export carries it, so that an
	 * import does not decay the same weeks again */
	if (!db_col_null(s, c + 20))
		o = jv_object_set(o, jv_string("decayed_through"), mem_time_json(db_col_int64(s, c + 20)));
	return o;
}

bool mem_pgvector(struct memory *m)
{
	struct db_stmt *s = NULL;

	if (!m->pg)
		return false;
	if (m->pgvector < 0) {
		m->pgvector = 0;
		if (db_prepare(&s, m->st, "SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == 0 &&
		    db_step(s) == DB_ROW)
			m->pgvector = db_col_int64(s, 0) > 0;
		db_finalize(s);
	}
	return m->pgvector > 0;
}
