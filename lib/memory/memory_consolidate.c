/*
 * memory_consolidate.c - merge, promote, decay, archive, resolve conflicts
 * (seed 002 section 10; memory.h).
 *
 * Every step reads what it will change first and then changes it in short
 * BEGIN IMMEDIATE transactions (a few thousand rows each), re-checking each
 * row inside the transaction, so other processes keep reading and writing
 * meanwhile and a second run finds nothing left to do (decay is counted in
 * whole weeks from decayed_through, so it is never applied twice).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "store/store.h"

#define BATCH_ROWS 20000
#define BATCH_PAIRS 500

struct report {
	long merged, promoted, updated, decayed, archived, conflicts, skipped;
	jv errors;
};

static void note_error(struct report *r, const char *step)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s: %s", step, forge_last_error());
	r->errors = jv_array_append(r->errors, jv_string(b.buf));
	buf_release(&b);
}

/* ---- pairs of ids from a query ---------------------------------------- */

struct pairs {
	char (*a)[ULID_LEN + 1], (*b)[ULID_LEN + 1];
	size_t n, cap;
};

static int load_pairs(struct pairs *p, struct memory *m, const char *sql)
{
	struct db_stmt *s;
	int step, rc = 0;

	if (mem_prepare(&s, m, sql) < 0)
		return -1;
	while ((step = db_step(s)) == DB_ROW) {
		if (p->n == p->cap) {
			p->cap = p->cap * 2 + 64;
			p->a = xrealloc(p->a, p->cap * sizeof *p->a);
			p->b = xrealloc(p->b, p->cap * sizeof *p->b);
		}
		snprintf(p->a[p->n], sizeof p->a[0], "%s", db_col_text(s, 0));
		snprintf(p->b[p->n], sizeof p->b[0], "%s", db_col_text(s, 1));
		p->n++;
	}
	if (step != DB_DONE)
		rc = mem_fail(m, "cannot read memory relationships");
	db_finalize(s);
	return rc;
}

static void pairs_release(struct pairs *p)
{
	free(p->a);
	free(p->b);
}

struct row {
	double conf;
	int64_t created, last, access, freq;
	char *tags, *content, *context;
	bool active;
};

#define ROW_SQL "SELECT confidence, created_at, last_accessed, access_count, frequency, tags, " \
		"archived_at, content, context FROM memories WHERE id = ?"

static int read_row(struct row *r, struct db_stmt *s, const char *id)
{
	db_reset(s);
	db_bind_text(s, 1, id);
	memset(r, 0, sizeof *r);
	if (db_step(s) != DB_ROW)
		return 0;
	r->conf = db_col_double(s, 0);
	r->created = db_col_int64(s, 1);
	r->last = db_col_int64(s, 2);
	r->access = db_col_int64(s, 3);
	r->freq = db_col_null(s, 4) ? 1 : db_col_int64(s, 4);
	r->tags = xstrdup(db_col_text(s, 5));
	r->active = db_col_null(s, 6);
	r->content = xstrdup(db_col_text(s, 7));
	r->context = xstrdup(db_col_text(s, 8));
	return 1;
}

static void row_release(struct row *r)
{
	free(r->tags);
	free(r->content);
	free(r->context);
}

/* ---- 1. merge -------------------------------------------------------- */

static int merge_pair(struct memory *m, struct db_stmt *get, struct db_stmt *upd, const char *a,
		      const char *b, long *merged)
{
	struct row ra, rb;
	struct buf text = BUF_INIT;
	char hash[33];
	int rc = 0;

	read_row(&ra, get, a);
	read_row(&rb, get, b);
	db_reset(get);
	/* a near twin that says another number or word is another fact */
	if (ra.active && rb.active && mem_same_fact(ra.content, rb.content)) {
		/* keep the more confident one, on a tie the newer (a restatement
		 * or correction: the older was used longer, so its access count
		 * is no sign it is better) */
		bool keep_a = ra.conf != rb.conf ? ra.conf > rb.conf : ra.created > rb.created;
		const char *keep = keep_a ? a : b, *drop = keep_a ? b : a;
		struct row *k = keep_a ? &ra : &rb, *d = keep_a ? &rb : &ra;
		jv tk = json_parse(k->tags, strlen(k->tags)), td = json_parse(d->tags, strlen(d->tags));
		char *tags = NULL;

		jv_array_foreach(td, i, t) {
			bool seen = false;

			jv_array_foreach(tk, j, x) {
				seen = seen || jv_equal(jv_copy(x), jv_copy(t));
				jv_free(x);
				(void)j;
			}
			tk = seen ? tk : jv_array_append(tk, jv_copy(t));
			jv_free(t);
			(void)i;
		}
		jv_free(td);
		tags = json_dumps(tk, false);
		/* the hash is of content, context and tags (store_fields()): with
		 * the tags it gained, or an exact copy of the merged memory is not
		 * found as one (memory_io.c link_copies()) */
		mem_embed_text(&text, k->content, k->context, tags);
		mem_hash_hex(hash, text.buf, text.len);
		db_reset(upd);
		db_bind_text(upd, 1, tags);
		db_bind_double(upd, 2, memory_clamp(k->conf + 0.05));
		db_bind_int64(upd, 3, d->access);
		db_bind_int64(upd, 4, k->freq + d->freq);
		db_bind_int64(upd, 5, d->last > k->last ? d->last : k->last);
		db_bind_int64(upd, 6, memory_now(m));
		db_bind_text(upd, 7, hash);
		db_bind_text(upd, 8, keep);
		free(tags);
		if (db_step(upd) != DB_DONE) {
			rc = mem_fail(m, "cannot merge memory '%s'", drop);
		} else {
			struct buf why = BUF_INIT;

			buf_addf(&why, "merged into %s", keep);
			rc = memory_archive(m, drop, why.buf);
			if (rc == 0)
				rc = memory_relate(m, keep, drop, "replaces", -1);
			if (rc == 0)
				rc = mem_signal_log(m, keep, "merged", 0.05, drop);
			buf_release(&why);
			(*merged)++;
		}
		db_reset(upd);
	}
	row_release(&ra);
	row_release(&rb);
	buf_release(&text);
	return rc;
}

static int merge_similar(struct memory *m, struct report *r)
{
	struct pairs p = { 0 };
	struct db_stmt *get = NULL, *upd = NULL;
	int rc = -1;

	if (load_pairs(&p, m, "SELECT r.memory_a_id, r.memory_b_id FROM memory_relationships r "
		       "JOIN memories a ON a.id = r.memory_a_id JOIN memories b ON b.id = r.memory_b_id "
		       "WHERE r.relationship = 'similar' AND r.similarity > 0.9 "
		       "AND a.archived_at IS NULL AND b.archived_at IS NULL AND a.type = b.type "
		       "AND a.type <> 'episodic' AND NOT EXISTS (SELECT 1 FROM memory_relationships c "
		       "WHERE c.relationship = 'contradicts' AND ((c.memory_a_id = r.memory_a_id AND "
		       "c.memory_b_id = r.memory_b_id) OR (c.memory_a_id = r.memory_b_id AND "
		       "c.memory_b_id = r.memory_a_id))) ORDER BY r.created_at, r.id") < 0)
		goto out;
	if (mem_prepare(&get, m, ROW_SQL) < 0 ||
	    mem_prepare(&upd, m, "UPDATE memories SET tags = ?, confidence = ?, access_count = "
			"access_count + ?, frequency = ?, last_accessed = ?, updated_at = ?, "
			"content_hash = ? WHERE id = ?") < 0)
		goto out;
	for (size_t i = 0; i < p.n; i += BATCH_PAIRS) {
		if (mem_begin(m) < 0)
			goto out;
		for (size_t j = i; j < p.n && j < i + BATCH_PAIRS; j++) {
			if (merge_pair(m, get, upd, p.a[j], p.b[j], &r->merged) < 0) {
				mem_rollback(m);
				goto out;
			}
		}
		if (mem_commit(m) < 0)
			goto out;
	}
	rc = 0;
out:
	db_finalize(get);
	db_finalize(upd);
	pairs_release(&p);
	return rc;
}

/* ---- 3-5. decay, archive: one statement per range of rows -------------- */

static int ranged(long *changed, struct memory *m, const char *sql, int64_t now)
{
	struct db_stmt *s = NULL, *mx = NULL;
	int64_t max = 0;
	int rc = -1;

	if (mem_prepare(&mx, m, "SELECT coalesce(max(seq), 0) FROM memories") < 0 ||
	    db_step(mx) != DB_ROW)
		goto out;
	max = db_col_int64(mx, 0);
	/* the read ends here: with it open, BEGIN IMMEDIATE below would not
	 * wait for another writer (SQLite cannot wait while this connection
	 * holds a read that an earlier write may have outdated) -- it failed
	 * at once with "database is locked" */
	db_reset(mx);
	if (mem_prepare(&s, m, sql) < 0)
		goto out;
	for (int64_t lo = 0; lo < max; lo += BATCH_ROWS) {
		if (mem_begin(m) < 0)
			goto out;
		db_reset(s);
		db_bind_int64(s, 1, now);
		db_bind_int64(s, 2, lo);
		db_bind_int64(s, 3, lo + BATCH_ROWS);
		if (db_step(s) != DB_DONE) {
			mem_fail(m, "cannot consolidate memories");
			mem_rollback(m);
			goto out;
		}
		*changed += db_changes(s);
		db_reset(s);
		if (mem_commit(m) < 0)
			goto out;
	}
	rc = 0;
out:
	db_finalize(s);
	db_finalize(mx);
	return rc;
}

/* The SQL twin of memory_decay(): whole weeks since max(last_accessed,
 * decayed_through).  (PostgreSQL: greatest(), and round() of a numeric.) */
#define FROM "max(last_accessed, coalesce(decayed_through, 0))"
#define WEEKS "((?1 - " FROM ") / 604800000)"
static const char decay_sql[] =
	"UPDATE memories SET confidence = round(max(0, confidence - 0.05 * " WEEKS "), 6), "
	"decayed_through = " FROM " + " WEEKS " * 604800000 "
	"WHERE seq > ?2 AND seq <= ?3 AND archived_at IS NULL AND ?1 - " FROM " >= 604800000";
#undef FROM
#undef WEEKS
#define FROM "greatest(last_accessed, coalesce(decayed_through, 0))"
#define WEEKS "((CAST(?1 AS BIGINT) - " FROM ") / 604800000)"
static const char decay_sql_pg[] =
	"UPDATE memories SET confidence = round(CAST(greatest(0, confidence - 0.05 * " WEEKS
	") AS NUMERIC), 6), decayed_through = " FROM " + " WEEKS " * 604800000 "
	"WHERE seq > ?2 AND seq <= ?3 AND archived_at IS NULL AND ?1 - " FROM " >= 604800000";
#undef FROM
#undef WEEKS

static const char archive_sql[] =
	"UPDATE memories SET archived_at = ?1, archived_reason = CASE WHEN confidence < 0.2 "
	"THEN 'confidence below 0.2' ELSE 'not accessed for 90 days' END "
	"WHERE seq > ?2 AND seq <= ?3 AND archived_at IS NULL AND "
	"(confidence < 0.2 OR ?1 - last_accessed > 7776000000)";

/* ---- 5. conflicts ------------------------------------------------------ */

static int resolve_conflicts(struct memory *m, struct report *r)
{
	struct pairs p = { 0 };
	struct db_stmt *get = NULL;
	int rc = -1;

	if (load_pairs(&p, m, "SELECT r.memory_a_id, r.memory_b_id FROM memory_relationships r "
		       "JOIN memories a ON a.id = r.memory_a_id JOIN memories b ON b.id = r.memory_b_id "
		       "WHERE r.relationship = 'contradicts' AND a.archived_at IS NULL AND "
		       "b.archived_at IS NULL ORDER BY r.created_at, r.id") < 0 ||
	    mem_prepare(&get, m, ROW_SQL) < 0)
		goto out;
	for (size_t i = 0; i < p.n; i++) {
		struct row ra, rb;
		int erc = 0;

		if (mem_begin(m) < 0)
			goto out;
		read_row(&ra, get, p.a[i]);
		read_row(&rb, get, p.b[i]);
		db_reset(get);
		if (ra.active && rb.active) {
			/* keep the highest confidence; on a tie the newer one */
			bool keep_a = ra.conf != rb.conf ? ra.conf > rb.conf : ra.created > rb.created;
			struct buf why = BUF_INIT;

			buf_addf(&why, "conflicts with %s", keep_a ? p.a[i] : p.b[i]);
			erc = memory_archive(m, keep_a ? p.b[i] : p.a[i], why.buf);
			buf_release(&why);
			r->conflicts++;
		}
		row_release(&ra);
		row_release(&rb);
		if (erc < 0) {
			mem_rollback(m);
			goto out;
		}
		if (mem_commit(m) < 0)
			goto out;
	}
	rc = 0;
out:
	db_finalize(get);
	pairs_release(&p);
	return rc;
}

int mem_promote(struct memory *m, struct llm_client *llm, long *promoted, long *updated,
		long *skipped, jv *errors);

int memory_consolidate(jv *report, struct memory *m, struct llm_client *llm)
{
	struct report r = { .errors = jv_array() };
	int64_t t0 = monotonic_ms(), now = memory_now(m);
	long before = 0;

	*report = jv_null();
	if (merge_similar(m, &r) < 0)
		note_error(&r, "merge");
	if (mem_promote(m, llm, &r.promoted, &r.updated, &r.skipped, &r.errors) < 0)
		note_error(&r, "promote");
	if (ranged(&r.decayed, m, m->pg ? decay_sql_pg : decay_sql, now) < 0)
		note_error(&r, "decay");
	if (ranged(&r.archived, m, archive_sql, now) < 0)
		note_error(&r, "archive");
	if (resolve_conflicts(m, &r) < 0)
		note_error(&r, "conflicts");
	(void)before;
	/* compact the vector file when rows left the active set */
	if ((r.merged || r.archived || r.conflicts) &&
	    store_exec(m->st, "UPDATE memory_meta SET vec_gen = vec_gen + 1 WHERE k = 1") < 0)
		note_error(&r, "vector file");
	/* the word associations recall expands paraphrases with, learnt anew
	 * from what is left */
	if (mem_assoc_build(m) < 0)
		note_error(&r, "associations");
	jv o = jv_object();

	o = json_set(o, "merged", jv_number((double)r.merged));
	o = json_set(o, "promoted", jv_number((double)r.promoted));
	o = json_set(o, "patterns_updated", jv_number((double)r.updated));
	o = json_set(o, "decayed", jv_number((double)r.decayed));
	o = json_set(o, "archived", jv_number((double)r.archived));
	o = json_set(o, "conflicts", jv_number((double)r.conflicts));
	o = json_set(o, "skipped_promotions", jv_number((double)r.skipped));
	o = json_set(o, "errors", r.errors);
	o = json_set(o, "duration_ms", jv_number((double)(monotonic_ms() - t0)));
	*report = o;
	return jv_array_length(json_get(o, "errors")) ? -1 : 0;
}

/* ---- when consolidation runs ------------------------------------------- */

#define CONSOLIDATION_TRACE "memory"

static int last_record(const char *line, size_t len, void *payload)
{
	jv *last = payload;

	if (!memmem(line, len, "\"memory.consolidated\"", 21))
		return 0;
	jv ev = json_parse(line, len);

	if (jv_is_valid(ev) && json_get_str(ev, "type") && strcmp(json_get_str(ev, "type"), "memory.consolidated") == 0) {
		jv_free(*last);
		*last = json_set(json_get(ev, "payload"), "at", json_get(ev, "ts"));
	}
	jv_free(ev);
	return 0;
}

int memory_consolidation_last(jv *out, struct memory *m)
{
	*out = jv_null();
	if (store_events_foreach(m->st, CONSOLIDATION_TRACE, last_record, out) < 0) {
		jv_free(*out);
		*out = jv_null();
		return -1;
	}
	return 0;
}

int memory_consolidation_record(struct memory *m, jv report, const char *trigger, const char *source)
{
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	long total = 0;
	struct db_stmt *s = NULL;

	if (mem_prepare(&s, m, "SELECT count(*) FROM memories") == 0 && db_step(s) == DB_ROW)
		total = db_col_int64(s, 0);
	db_finalize(s);
	ulid_new(id);
	timestamp_format(ts, memory_now(m));
	report = json_set(report, "trigger", jv_string(trigger ? trigger : "manual"));
	report = json_set(report, "memories", jv_number((double)total));
	jv ev = json_set(jv_object(), "kind", jv_string("event"));
	ev = json_set(ev, "id", jv_string(id));
	ev = json_set(ev, "trace_id", jv_string(CONSOLIDATION_TRACE));
	ev = json_set(ev, "ts", jv_string(ts));
	ev = json_set(ev, "source", jv_string(source ? source : "forge-memory"));
	ev = json_set(ev, "phase", jv_null());
	ev = json_set(ev, "type", jv_string("memory.consolidated"));
	ev = json_set(ev, "payload", report);
	int rc = store_event_put(m->st, ev, NULL, 0, NULL);

	jv_free(ev);
	return rc;
}

int memory_consolidation_due(char *why, size_t n, struct memory *m, int64_t interval_ms, long new_memories)
{
	jv last;
	int64_t since = 0, now = memory_now(m);
	long grown = 0, total = 0;
	struct db_stmt *s = NULL;
	int rc = 0;

	*why = '\0';
	if (memory_consolidation_last(&last, m) < 0)
		return -1;
	if (jv_get_kind(last) == JV_KIND_OBJECT) {
		jv at = json_get(last, "at");

		if (mem_time_parse(&since, at) < 0)
			since = 0;
		jv_free(at);
	}
	/* never consolidated: the interval counts from the oldest memory */
	if (mem_prepare(&s, m, "SELECT count(*), min(created_at), "
			"sum(CASE WHEN created_at > ?1 THEN 1 ELSE 0 END) FROM memories") < 0) {
		jv_free(last);
		return -1;
	}
	db_bind_int64(s, 1, since);
	if (db_step(s) == DB_ROW) {
		total = db_col_int64(s, 0);
		if (!since)
			since = db_col_int64(s, 1);
		grown = db_col_int64(s, 2);
	}
	db_finalize(s);
	if (grown > 0 && new_memories > 0 && grown >= new_memories) {
		snprintf(why, n, "%ld new memories since the last consolidation (memory.consolidate_new_memories %ld)",
			 grown, new_memories);
		rc = 1;
	} else if (grown > 0 && total > 0 && interval_ms > 0 && now - since >= interval_ms) {
		snprintf(why, n, "%.1f h since the last consolidation (memory.consolidate_interval_s %lld)",
			 (double)(now - since) / 3600000.0, (long long)(interval_ms / 1000));
		rc = 1;
	}
	jv_free(last);
	return rc;
}
