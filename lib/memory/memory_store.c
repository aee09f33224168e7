/*
 * memory_store.c - store / get / update of memories and the import of one
 * memory (memory.h): fields validated, embedded, related, inserted.
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "store/store.h"

/* ---- store ------------------------------------------------------------ */

/* Validated fields of a memory in JSON form; pointers borrow `src`. */
struct fields {
	jv src;
	const char *id, *type, *content, *context, *source, *trigger;
	char *tags, *episode, *steps;
	double confidence;
	int64_t created_at, updated_at, last_accessed, archived_at, decayed_through;
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

/* Whether src's string at key (borrowed) holds a NUL: json_get_str()
 * gives the C string, cut there ("a\\u0000b" would be stored as "a"). */
static bool json_has_nul(jv src, const char *key)
{
	jv v = json_get(src, key);
	bool nul = jv_get_kind(v) == JV_KIND_STRING &&
		   strlen(jv_string_value(v)) != (size_t)jv_string_length_bytes(jv_copy(v));

	jv_free(v);
	return nul;
}

static int fields_parse(struct fields *f, struct memory *m, jv src, bool keep_ids)
{
	enum memory_type t;
	double d;
	int64_t now = memory_now(m);

	memset(f, 0, sizeof *f);
	/* every way in (store, import, update) comes here: a known key in what
	 * a monitor, a model or a person wrote is never stored (README "Keys"),
	 * nor a URL's password or a secret of a form the review's scanner
	 * knows (core/secret_forms.h), which a memory is recalled into prompts
	 * with */
	f->src = src = secret_hidden_jv(src);
	if (jv_get_kind(src) != JV_KIND_OBJECT)
		return forge_error("a memory must be a JSON object");
	f->type = json_get_str(src, "type");
	if (!f->type)
		return forge_error("'type' is missing (episodic, semantic or procedural)");
	if (memory_type_parse(&t, f->type) < 0)
		return -1;
	f->content = json_get_str(src, "content");
	if (json_has_nul(src, "content"))
		return forge_error("'content' holds a NUL character (\\u0000): a memory is text");
	if (!f->content || !*f->content)
		return forge_error("'content' is missing or empty");
	/* (a blank memory is no lesson: recalled, it is an empty line) */
	if (!f->content[strspn(f->content, " \t\n\v\f\r")])
		return forge_error("'content' is only white space");
	/* (the same on both stores: PostgreSQL's full-text index holds at
	 * most 1 MB a row and its b-tree entries ~2.7 KB, SQLite no limit) */
	if (strlen(f->content) > MEMORY_CONTENT_MAX)
		return forge_error("'content' is %zu bytes, more than a memory holds (%u): a memory is a "
				   "lesson, not a document", strlen(f->content), MEMORY_CONTENT_MAX);
	if (opt_str(&f->context, src, "context") < 0 || opt_str(&f->source, src, "source") < 0 ||
	    opt_str(&f->trigger, src, "trigger") < 0 ||
	    opt_str(&f->archived_reason, src, "archived_reason") < 0 ||
	    opt_str(&f->pattern_id, src, "pattern_id") < 0)
		return -1;
	if (f->source && strlen(f->source) > MEMORY_SOURCE_MAX)
		return forge_error("'source' is %zu bytes, more than %u (a trace id, \"human\", a URL)",
				   strlen(f->source), MEMORY_SOURCE_MAX);
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
	    opt_time(&f->archived_at, src, "archived_at", 0) < 0 ||
	    opt_time(&f->decayed_through, src, "decayed_through", 0) < 0)
		return -1;
	if (opt_num(&d, src, "access_count", 0, 1e15, 0) < 0)
		return -1;
	f->access_count = (long)d;
	return 0;
}

/* Insert the row (inside the caller's transaction). */
static int insert_row(struct memory *m, const struct fields *f, const char *id, const char *hash)
{
	struct db_stmt *s;
	int rc = 0;

	if (mem_cached(&s, m, MS_INSERT, "INSERT INTO memories (id, type, content, context, tags, confidence, "
			"source, content_hash, created_at, updated_at, last_accessed, access_count, "
			"episode, frequency, success_rate, trigger_text, steps, pattern_id, archived_at, "
			"archived_reason, decayed_through) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") < 0)
		return -1;
	db_bind_text(s, 1, id);
	db_bind_text(s, 2, f->type);
	db_bind_text(s, 3, f->content);
	db_bind_text(s, 4, f->context ? f->context : "");
	db_bind_text(s, 5, f->tags);
	db_bind_double(s, 6, f->confidence);
	db_bind_text(s, 7, f->source);
	db_bind_text(s, 8, hash);
	db_bind_int64(s, 9, f->created_at);
	db_bind_int64(s, 10, f->updated_at);
	db_bind_int64(s, 11, f->last_accessed);
	db_bind_int64(s, 12, f->access_count);
	db_bind_text(s, 13, f->episode);
	if (f->frequency >= 0)
		db_bind_int64(s, 14, f->frequency);
	if (f->success_rate >= 0)
		db_bind_double(s, 15, f->success_rate);
	db_bind_text(s, 16, f->trigger);
	db_bind_text(s, 17, f->steps);
	db_bind_text(s, 18, f->pattern_id);
	if (f->archived_at)
		db_bind_int64(s, 19, f->archived_at);
	db_bind_text(s, 20, f->archived_reason);
	if (f->decayed_through)
		db_bind_int64(s, 21, f->decayed_through);
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot store memory '%s'", id);
	db_reset(s);
	return rc;
}

static int insert_edges(struct memory *m, const char *id, jv related)
{
	int rc = 0;

	jv_array_foreach(related, i, r) {
		const char *other = json_get_str(r, "id");
		double sim = json_get_num(r, "similarity", -1);
		bool self = other && strcmp(other, id) == 0;   /* (a rewritten memory finds itself) */

		if (rc == 0 && !self)
			rc = memory_relate(m, id, other, json_get_str(r, "kind"), sim);
		if (rc == 0 && !self && json_get_bool(r, "contradicts", false))
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

int mem_store_once(char id_out[ULID_LEN + 1], bool *stored, struct memory *m, jv mem)
{
	struct fields f;
	struct buf text = BUF_INIT;
	struct db_stmt *s = NULL;
	char hash[33];
	int step, rc = fields_parse(&f, m, mem, false);

	*stored = false;
	if (rc == 0 && f.source) {
		/* the hash store_fields() gives the row: content, context, tags */
		mem_embed_text(&text, f.content, f.context, f.tags);
		mem_hash_hex(hash, text.buf, text.len);
		rc = mem_prepare(&s, m, "SELECT id FROM memories WHERE source = ? AND type = ? AND "
				 "content_hash = ? ORDER BY seq LIMIT 1");
	}
	if (s) {
		db_bind_text(s, 1, f.source);
		db_bind_text(s, 2, f.type);
		db_bind_text(s, 3, hash);
		step = db_step(s);
		if (step == DB_ROW && id_out)
			snprintf(id_out, ULID_LEN + 1, "%s", db_col_text(s, 0));
		if (step != DB_ROW && step != DB_DONE)
			rc = mem_fail(m, "cannot read memories of '%s'", f.source);
		db_finalize(s);
		if (step == DB_ROW)
			goto out;       /* kept: the same memory is there */
	}
	if (rc == 0 && (rc = store_fields(id_out, m, &f, true, false)) == 0)
		*stored = true;
out:
	buf_release(&text);
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
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_null();
	mem_access_refresh(m);
	if (mem_cached(&s, m, MS_GET, "SELECT " MEM_COLS " FROM memories WHERE id = ?") < 0)
		return -1;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step == DB_ROW)
		*out = mem_row_json(m, s, 0);
	else if (step != DB_DONE)
		rc = mem_fail(m, "cannot read memory '%s'", id);
	db_reset(s);
	return rc;
}

static const char *const updatable[] = {
	"content", "context", "tags", "confidence", "source", "episode", "frequency",
	"success_rate", "trigger", "steps", NULL
};

/* old_hash: the content_hash stored for id ("" when none). */
static int content_hash_of(char old_hash[33], struct memory *m, const char *id)
{
	struct db_stmt *s;
	int step;

	old_hash[0] = '\0';
	if (mem_prepare(&s, m, "SELECT content_hash FROM memories WHERE id = ?") < 0)
		return -1;
	db_bind_text(s, 1, id);
	step = db_step(s);
	if (step == DB_ROW && db_col_text(s, 0))
		snprintf(old_hash, 33, "%s", db_col_text(s, 0));
	db_finalize(s);
	return step == DB_ROW || step == DB_DONE ? 0 : mem_fail(m, "cannot read memory '%s'", id);
}

/*
 * The text of id changed: the edges found by similarity (related, similar,
 * contradicts, with a similarity) were found for the old text, in either
 * direction.  Find them again for the new text, after the update is
 * committed: the vector file is rebuilt from what is committed, and a
 * rollback must not leave it stamped with a generation the database never
 * kept.  Edges given without a similarity (extends, replaces, a copy's)
 * are the record of what was done, and stay.
 */
static int relink(struct memory *m, const char *id, const struct buf *text, const char *content)
{
	jv related = jv_invalid();
	const char *t = text->buf;
	size_t len = text->len, dim = 0;
	float *vec = NULL;
	struct db_stmt *s = NULL;
	int rc = -1;

	if (mem_embed_many(&vec, &dim, m, &t, &len, 1) < 0 ||
	    mem_find_related(&related, m, vec, dim, content) < 0 || mem_begin(m) < 0)
		goto out;
	if (mem_prepare(&s, m, "DELETE FROM memory_relationships WHERE (memory_a_id = ?1 OR "
			"memory_b_id = ?1) AND relationship IN ('related', 'similar', 'contradicts') "
			"AND similarity IS NOT NULL") < 0) {
		mem_rollback(m);
		goto out;
	}
	db_bind_text(s, 1, id);
	if (db_step(s) != DB_DONE) {
		mem_fail(m, "cannot relink memory '%s'", id);
		mem_rollback(m);
		goto out;
	}
	if (insert_edges(m, id, related) < 0) {
		related = jv_invalid();
		mem_rollback(m);
		goto out;
	}
	related = jv_invalid();
	rc = mem_commit(m);
out:
	db_finalize(s);
	jv_free(related);
	free(vec);
	return rc;
}

int memory_update(struct memory *m, const char *id, jv changes)
{
	struct fields f = { .src = jv_null() };
	struct buf text = BUF_INIT;
	char hash[33], old_hash[33];
	struct db_stmt *s = NULL;
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
	if (fields_parse(&f, m, merged, true) < 0 || content_hash_of(old_hash, m, id) < 0)
		goto out;
	mem_embed_text(&text, f.content, f.context, f.tags);
	mem_hash_hex(hash, text.buf, text.len);
	if (mem_prepare(&s, m, "UPDATE memories SET content = ?, context = ?, tags = ?, "
			"confidence = ?, source = ?, episode = ?, frequency = ?, success_rate = ?, "
			"trigger_text = ?, steps = ?, content_hash = ?, updated_at = ? WHERE id = ?") < 0)
		goto out;
	db_bind_text(s, 1, f.content);
	db_bind_text(s, 2, f.context ? f.context : "");
	db_bind_text(s, 3, f.tags);
	db_bind_double(s, 4, f.confidence);
	db_bind_text(s, 5, f.source);
	db_bind_text(s, 6, f.episode);
	if (f.frequency >= 0)
		db_bind_int64(s, 7, f.frequency);
	if (f.success_rate >= 0)
		db_bind_double(s, 8, f.success_rate);
	db_bind_text(s, 9, f.trigger);
	db_bind_text(s, 10, f.steps);
	db_bind_text(s, 11, hash);
	db_bind_int64(s, 12, memory_now(m));
	db_bind_text(s, 13, id);
	if (db_step(s) != DB_DONE) {
		mem_fail(m, "cannot update memory '%s'", id);
		goto out;
	}
	rc = db_changes(s) ? 0 : MEMORY_NOT_FOUND;
	if (rc == 0 && strcmp(old_hash, hash) != 0)
		rc = relink(m, id, &text, f.content);
out:
	db_finalize(s);
	buf_release(&text);
	fields_release(&f);
	jv_free(cur);
	jv_free(changes);
	return rc;
}
