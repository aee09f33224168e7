/*
 * memory_stats.c - memory statistics and the feedback-loop metrics of seed
 * 000 section 10.7 computed from the database (memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

/* One number from a query on db (NAN when NULL or no row). */
static int scalar(double *out, sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int rc = 0;

	*out = NAN;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return forge_error("cannot compute '%.60s': %s", sql, sqlite3_errmsg(db));
	int step = sqlite3_step(s);

	if (step == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		*out = sqlite3_column_double(s, 0);
	else if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = forge_error("cannot compute '%.60s': %s", sql, sqlite3_errmsg(db));
	sqlite3_finalize(s);
	return rc;
}

static jv num_or_null(double v)
{
	return isnan(v) ? jv_null() : jv_number(round(v * 1e6) / 1e6);
}

static int pairs_obj(jv *out, sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int step;

	*out = jv_object();
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return forge_error("cannot compute statistics: %s", sqlite3_errmsg(db));
	while ((step = sqlite3_step(s)) == SQLITE_ROW)
		*out = json_set(*out, (const char *)sqlite3_column_text(s, 0),
				jv_number(sqlite3_column_double(s, 1)));
	sqlite3_finalize(s);
	return step == SQLITE_DONE ? 0 : forge_error("cannot compute statistics: %s", sqlite3_errmsg(db));
}

int memory_stats(jv *out, struct memory *m)
{
	sqlite3 *db = m->db;
	double total, active, avg, pats, rels, pages, psize;
	jv by_type = jv_null(), hist = jv_null(), tags = jv_array();
	sqlite3_stmt *s = NULL;
	int rc = -1;

	*out = jv_null();
	if (vindex_sync(m, NULL) < 0)
		return -1;
	if (scalar(&total, db, "SELECT count(*) FROM memories") < 0 ||
	    scalar(&active, db, "SELECT count(*) FROM memories WHERE archived_at IS NULL") < 0 ||
	    scalar(&avg, db, "SELECT avg(confidence) FROM memories WHERE archived_at IS NULL") < 0 ||
	    scalar(&pats, db, "SELECT count(*) FROM patterns") < 0 ||
	    scalar(&rels, db, "SELECT count(*) FROM memory_relationships") < 0 ||
	    scalar(&pages, db, "PRAGMA page_count") < 0 || scalar(&psize, db, "PRAGMA page_size") < 0 ||
	    pairs_obj(&by_type, db, "SELECT type, count(*) FROM memories WHERE archived_at IS NULL "
		      "GROUP BY type ORDER BY type") < 0 ||
	    pairs_obj(&hist, db, "SELECT printf('%.1f-%.1f', b / 10.0, b / 10.0 + 0.1), count(*) FROM "
		      "(SELECT min(9, CAST(confidence * 10 AS INTEGER)) AS b FROM memories WHERE "
		      "archived_at IS NULL) GROUP BY b ORDER BY b") < 0)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT j.value, count(*) AS n FROM memories, json_each(memories.tags) j "
			       "WHERE archived_at IS NULL GROUP BY j.value ORDER BY n DESC, j.value LIMIT 10",
			       -1, &s, NULL) != SQLITE_OK) {
		mem_fail(m, "cannot count tags");
		goto out;
	}
	while (sqlite3_step(s) == SQLITE_ROW) {
		jv t = jv_object();

		t = json_set(t, "tag", jv_string((const char *)sqlite3_column_text(s, 0)));
		t = json_set(t, "count", jv_number(sqlite3_column_int(s, 1)));
		tags = jv_array_append(tags, t);
	}
	jv o = jv_object();

	o = json_set(o, "total", jv_number(total));
	o = json_set(o, "active", jv_number(active));
	o = json_set(o, "archived", jv_number(total - active));
	o = json_set(o, "by_type", by_type);
	o = json_set(o, "average_confidence", num_or_null(avg));
	o = json_set(o, "confidence_histogram", hist);
	o = json_set(o, "top_tags", tags);
	o = json_set(o, "patterns", jv_number(pats));
	o = json_set(o, "relationships", jv_number(rels));
	o = json_set(o, "database_bytes", jv_number(pages * psize));
	o = json_set(o, "embedder", jv_string(m->embedder_id));
	o = json_set(o, "vector_file", vindex_info(m));
	by_type = hist = tags = jv_null();
	*out = o;
	rc = 0;
out:
	sqlite3_finalize(s);
	jv_free(by_type);
	jv_free(hist);
	jv_free(tags);
	return rc;
}

/* ---- metrics ----------------------------------------------------------- */

struct metric {
	const char *name;
	const char *value;      /* SQL giving the value (NULL when no data) */
	const char *n;          /* SQL giving the basis (count) */
	const char *note;
};

static const struct metric metrics[] = {
	{ "avg_iterations_per_phase",
	  "SELECT avg(c) FROM (SELECT count(*) AS c FROM events WHERE type = 'agent.iteration' "
	  "GROUP BY trace_id, phase)",
	  "SELECT count(*) FROM (SELECT 1 FROM events WHERE type = 'agent.iteration' GROUP BY trace_id, phase)",
	  "agent.iteration events per (run, phase); trending down = agents getting smarter" },
	{ "tool_success_rate",
	  "SELECT avg(CASE WHEN type = 'tool.failed' OR json_extract(payload, '$.ok') = 0 THEN 0.0 "
	  "ELSE 1.0 END) FROM events WHERE type IN ('tool.executed', 'tool.failed')",
	  "SELECT count(*) FROM events WHERE type IN ('tool.executed', 'tool.failed')",
	  "tool.executed (payload.ok) and tool.failed events" },
	{ "avg_bounces_per_run",
	  "SELECT CAST((SELECT count(*) FROM events WHERE type = 'loop.phase_bounce') AS REAL) / "
	  "nullif((SELECT count(*) FROM runs), 0)",
	  "SELECT count(*) FROM runs", "loop.phase_bounce events per run" },
	{ "bounce_resolution_rate",
	  "SELECT avg(CASE WHEN r.status = 'completed' THEN 1.0 ELSE 0.0 END) FROM runs r WHERE "
	  "r.status IN ('completed', 'failed', 'cancelled') AND EXISTS (SELECT 1 FROM events e WHERE "
	  "e.trace_id = r.id AND e.type = 'loop.phase_bounce')",
	  "SELECT count(*) FROM runs r WHERE r.status IN ('completed', 'failed', 'cancelled') AND "
	  "EXISTS (SELECT 1 FROM events e WHERE e.trace_id = r.id AND e.type = 'loop.phase_bounce')",
	  "finished runs with a bounce that completed" },
	{ "learnings_per_run",
	  "SELECT CAST((SELECT count(*) FROM memories WHERE source IN (SELECT id FROM runs)) AS REAL) / "
	  "nullif((SELECT count(*) FROM runs), 0)",
	  "SELECT count(*) FROM runs", "memories whose source is a run's trace id, per run" },
	{ "learning_application_rate",
	  "SELECT CAST((SELECT count(*) FROM memory_signals WHERE kind = 'applied') AS REAL) / "
	  "nullif((SELECT sum(access_count) FROM memories), 0)",
	  "SELECT coalesce(sum(access_count), 0) FROM memories",
	  "applied signals per recalled memory" },
	{ "memory_precision",
	  "SELECT avg(CASE WHEN kind IN ('applied', 'confirmed') THEN 1.0 ELSE 0.0 END) FROM "
	  "memory_signals WHERE kind IN ('applied', 'confirmed', 'dismissed', 'failed')",
	  "SELECT count(*) FROM memory_signals WHERE kind IN ('applied', 'confirmed', 'dismissed', 'failed')",
	  "share of judged memories that were applied or confirmed rather than dismissed or failed" },
	{ "finding_dismissal_rate",
	  "SELECT avg(dismissed) FROM findings", "SELECT count(*) FROM findings",
	  "dismissed findings / findings; trending down = fewer false positives" },
	{ "human_override_rate",
	  "SELECT avg(CASE WHEN type = 'gate.rejected' OR json_extract(payload, '$.edited') = 1 "
	  "THEN 1.0 ELSE 0.0 END) FROM events WHERE type IN ('gate.approved', 'gate.rejected')",
	  "SELECT count(*) FROM events WHERE type IN ('gate.approved', 'gate.rejected')",
	  "gate decisions that rejected or edited" },
	{ "time_to_human_response_s",
	  "SELECT avg((julianday(d.ts) - julianday(r.ts)) * 86400) FROM events r JOIN events d ON "
	  "d.trace_id = r.trace_id AND d.type IN ('gate.approved', 'gate.rejected') AND "
	  "json_extract(d.payload, '$.gate_id') = json_extract(r.payload, '$.gate_id') "
	  "WHERE r.type = 'gate.requested'",
	  "SELECT count(*) FROM events WHERE type IN ('gate.approved', 'gate.rejected')",
	  "gate.requested to gate.approved/rejected, by gate_id" },
	{ "cost_per_run_usd", "SELECT avg(total_cost_usd) FROM runs", "SELECT count(*) FROM runs",
	  "runs.total_cost_usd" },
	{ "success_rate",
	  "SELECT avg(CASE WHEN status = 'completed' THEN 1.0 ELSE 0.0 END) FROM runs WHERE "
	  "status IN ('completed', 'failed', 'cancelled')",
	  "SELECT count(*) FROM runs WHERE status IN ('completed', 'failed', 'cancelled')",
	  "completed / finished runs" },
	{ "first_pass_approval_rate",
	  "SELECT avg(CASE WHEN NOT EXISTS (SELECT 1 FROM events b WHERE b.trace_id = t.trace_id AND "
	  "b.type = 'loop.phase_bounce' AND json_extract(b.payload, '$.from') = 'review') THEN 1.0 "
	  "ELSE 0.0 END) FROM (SELECT DISTINCT trace_id FROM events WHERE phase = 'review') t",
	  "SELECT count(DISTINCT trace_id) FROM events WHERE phase = 'review'",
	  "runs reviewed without a review bounce" },
};

int memory_metrics(jv *out, struct store *st)
{
	sqlite3 *db = store_db(st);
	jv o = jv_object();

	*out = jv_null();
	for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
		double v, n;

		if (scalar(&v, db, metrics[i].value) < 0 || scalar(&n, db, metrics[i].n) < 0) {
			jv_free(o);
			return forge_error_prefix("metric '%s'", metrics[i].name);
		}
		jv e = jv_object();

		e = json_set(e, "value", isnan(n) || n == 0 ? jv_null() : num_or_null(v));
		e = json_set(e, "n", jv_number(isnan(n) ? 0 : n));
		e = json_set(e, "note", jv_string(metrics[i].note));
		o = json_set(o, metrics[i].name, e);
	}
	/* success rate over time: completed / finished runs per ISO week */
	sqlite3_stmt *s;
	jv weeks = jv_array();

	if (sqlite3_prepare_v2(db, "SELECT strftime('%Y-W%W', started_at) AS w, avg(CASE WHEN status = "
			       "'completed' THEN 1.0 ELSE 0.0 END), count(*), avg(total_cost_usd) FROM runs "
			       "WHERE status IN ('completed', 'failed', 'cancelled') GROUP BY w ORDER BY w",
			       -1, &s, NULL) == SQLITE_OK) {
		while (sqlite3_step(s) == SQLITE_ROW) {
			jv w = jv_object();

			w = json_set(w, "week", jv_string((const char *)sqlite3_column_text(s, 0)));
			w = json_set(w, "success_rate", num_or_null(sqlite3_column_double(s, 1)));
			w = json_set(w, "runs", jv_number(sqlite3_column_int(s, 2)));
			w = json_set(w, "cost_per_run_usd", num_or_null(sqlite3_column_double(s, 3)));
			weeks = jv_array_append(weeks, w);
		}
		sqlite3_finalize(s);
	}
	o = json_set(o, "by_week", weeks);
	*out = o;
	return 0;
}
