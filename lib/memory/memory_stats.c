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

/* One number from a query on st (NAN when NULL or no row). */
static int scalar(double *out, struct store *st, const char *sql)
{
	struct db_stmt *s;
	int rc = 0;

	*out = NAN;
	if (db_prepare(&s, st, sql) < 0)
		return forge_error_prefix("cannot compute '%.60s'", sql);
	int step = db_step(s);

	if (step == DB_ROW && !db_col_null(s, 0))
		*out = db_col_double(s, 0);
	else if (step != DB_ROW && step != DB_DONE)
		rc = store_fail(st, "cannot compute '%.60s'", sql);
	db_finalize(s);
	return rc;
}

static jv num_or_null(double v)
{
	return isnan(v) ? jv_null() : jv_number(round(v * 1e6) / 1e6);
}

static int pairs_obj(jv *out, struct store *st, const char *sql)
{
	struct db_stmt *s;
	int step;

	*out = jv_object();
	if (db_prepare(&s, st, sql) < 0)
		return forge_error_prefix("cannot compute statistics");
	while ((step = db_step(s)) == DB_ROW)
		*out = json_set(*out, db_col_text(s, 0),
				jv_number(db_col_double(s, 1)));
	step = step == DB_DONE ? 0 : store_fail(st, "cannot compute statistics");
	db_finalize(s);
	return step;
}

int memory_stats(jv *out, struct memory *m)
{
	struct store *db = m->st;
	double total, active, avg, pats, rels, pages, psize;
	jv by_type = jv_null(), hist = jv_null(), tags = jv_array();
	struct db_stmt *s = NULL;
	int rc = -1;

	*out = jv_null();
	if (vindex_sync(m, NULL) < 0)
		return -1;
	if (scalar(&total, db, "SELECT count(*) FROM memories") < 0 ||
	    scalar(&active, db, "SELECT count(*) FROM memories WHERE archived_at IS NULL") < 0 ||
	    scalar(&avg, db, "SELECT avg(confidence) FROM memories WHERE archived_at IS NULL") < 0 ||
	    scalar(&pats, db, "SELECT count(*) FROM patterns") < 0 ||
	    scalar(&rels, db, "SELECT count(*) FROM memory_relationships") < 0 ||
	    scalar(&pages, db, m->pg ? "SELECT pg_database_size(current_database())" :
		   "PRAGMA page_count") < 0 ||
	    scalar(&psize, db, m->pg ? "SELECT 1" : "PRAGMA page_size") < 0 ||
	    pairs_obj(&by_type, db, "SELECT type, count(*) FROM memories WHERE archived_at IS NULL "
		      "GROUP BY type ORDER BY type") < 0 ||
	    pairs_obj(&hist, db, m->pg ? "SELECT to_char(b / 10.0, 'FM0.0') || '-' || "
		      "to_char(b / 10.0 + 0.1, 'FM0.0'), count(*) FROM (SELECT least(9, CAST(floor("
		      "confidence * 10) AS INTEGER)) AS b FROM memories WHERE archived_at IS NULL) x "
		      "GROUP BY b ORDER BY b" :
		      "SELECT printf('%.1f-%.1f', b / 10.0, b / 10.0 + 0.1), count(*) FROM "
		      "(SELECT min(9, CAST(confidence * 10 AS INTEGER)) AS b FROM memories WHERE "
		      "archived_at IS NULL) GROUP BY b ORDER BY b") < 0)
		goto out;
	if (db_prepare(&s, db, m->pg ? "SELECT j.value, count(*) AS n FROM memories, "
		       "jsonb_array_elements_text(memories.tags::jsonb) j (value) WHERE archived_at IS NULL "
		       "GROUP BY j.value ORDER BY n DESC, j.value COLLATE \"C\" LIMIT 10" :
		       "SELECT j.value, count(*) AS n FROM memories, json_each(memories.tags) j "
		       "WHERE archived_at IS NULL GROUP BY j.value ORDER BY n DESC, j.value LIMIT 10") < 0) {
		mem_fail(m, "cannot count tags");
		goto out;
	}
	while (db_step(s) == DB_ROW) {
		jv t = jv_object();

		t = json_set(t, "tag", jv_string(db_col_text(s, 0)));
		t = json_set(t, "count", jv_number((int)db_col_int64(s, 1)));
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
	if (m->pg) {
		/* pgvector: detected, not required; without it (or with the
		 * local embedder) the vectors are ranked in this process */
		bool pgv = mem_pgvector(m);

		o = json_set(o, "pgvector", jv_bool(pgv));
		o = json_set(o, "vector_ranking", jv_string(pgv && m->embed_provider ? "pgvector" : "client"));
	}
	by_type = hist = tags = jv_null();
	*out = o;
	rc = 0;
out:
	db_finalize(s);
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
	const char *value_pg;   /* PostgreSQL's, when value is not */
};

static const struct metric metrics[] = {
	{ "avg_iterations_per_phase",
	  "SELECT avg(c) FROM (SELECT count(*) AS c FROM events WHERE type = 'agent.iteration' "
	  "GROUP BY trace_id, phase) x",
	  "SELECT count(*) FROM (SELECT 1 FROM events WHERE type = 'agent.iteration' GROUP BY trace_id, phase) x",
	  "agent.iteration events per (run, phase); trending down = agents getting smarter" },
	{ "tool_success_rate",
	  "SELECT avg(CASE WHEN type = 'tool.failed' OR json_extract(payload, '$.ok') = 0 THEN 0.0 "
	  "ELSE 1.0 END) FROM events WHERE type IN ('tool.executed', 'tool.failed')",
	  "SELECT count(*) FROM events WHERE type IN ('tool.executed', 'tool.failed')",
	  "tool.executed (payload.ok) and tool.failed events",
	  "SELECT avg(CASE WHEN type = 'tool.failed' OR payload::jsonb ->> 'ok' IN ('false', '0') "
	  "THEN 0.0 ELSE 1.0 END) FROM events WHERE type IN ('tool.executed', 'tool.failed')" },
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
	  "gate decisions that rejected or edited",
	  "SELECT avg(CASE WHEN type = 'gate.rejected' OR payload::jsonb ->> 'edited' IN ('true', '1') "
	  "THEN 1.0 ELSE 0.0 END) FROM events WHERE type IN ('gate.approved', 'gate.rejected')" },
	{ "time_to_human_response_s",
	  "SELECT round(avg((julianday(d.ts) - julianday(r.ts)) * 86400), 3) FROM events r JOIN events d ON "
	  "d.trace_id = r.trace_id AND d.type IN ('gate.approved', 'gate.rejected') AND "
	  "json_extract(d.payload, '$.id') = json_extract(r.payload, '$.id') "
	  "WHERE r.type = 'gate.requested'",
	  "SELECT count(*) FROM events WHERE type IN ('gate.approved', 'gate.rejected')",
	  "gate.requested to gate.approved/rejected of the same gate (payload.id)",
	  "SELECT round(CAST(avg(extract(epoch FROM CAST(d.ts AS timestamptz) - CAST(r.ts AS timestamptz))) "
	  "AS numeric), 3) "
	  "FROM events r JOIN events d ON d.trace_id = r.trace_id AND d.type IN ('gate.approved', "
	  "'gate.rejected') AND d.payload::jsonb ->> 'id' = r.payload::jsonb ->> 'id' "
	  "WHERE r.type = 'gate.requested'" },
	/* (a run's spend as store_run_get has it: what llm_calls holds for a
	 * killed run whose totals were not written yet) */
	{ "cost_per_run_usd", "SELECT avg(" STORE_RUN_USD_SQL_LITE ") FROM runs", "SELECT count(*) FROM runs",
	  "runs.total_cost_usd, or its llm_calls when more",
	  "SELECT avg(" STORE_RUN_USD_SQL_PG ") FROM runs" },
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
	  "runs reviewed without a review bounce",
	  "SELECT avg(CASE WHEN NOT EXISTS (SELECT 1 FROM events b WHERE b.trace_id = t.trace_id AND "
	  "b.type = 'loop.phase_bounce' AND b.payload::jsonb ->> 'from' = 'review') THEN 1.0 "
	  "ELSE 0.0 END) FROM (SELECT DISTINCT trace_id FROM events WHERE phase = 'review') t" },
};

int memory_metrics(jv *out, struct store *st)
{
	struct store *db = st;
	bool pg = store_backend(st) == DB_POSTGRES;
	jv o = jv_object();

	*out = jv_null();
	for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
		double v, n;

		const char *value = pg && metrics[i].value_pg ? metrics[i].value_pg : metrics[i].value;

		if (scalar(&v, db, value) < 0 || scalar(&n, db, metrics[i].n) < 0) {
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
	struct db_stmt *s;
	jv weeks = jv_array();

	/* (PostgreSQL: strftime's %W, the week of the year from its first Monday) */
	/* (an output column's name takes no COLLATE in PostgreSQL's ORDER BY:
	 * the weeks are a subquery's rows) */
	if (db_prepare(&s, db, pg ? "SELECT * FROM (SELECT to_char(t, 'YYYY') || '-W' || lpad(CAST((CAST(extract(doy "
		       "FROM t) AS INTEGER) + 6 - (CAST(extract(dow FROM t) AS INTEGER) + 6) % 7) / 7 AS TEXT), "
		       "2, '0') AS w, avg(CASE WHEN status = 'completed' THEN 1.0 ELSE 0.0 END), count(*), "
		       "avg(usd) FROM (SELECT CAST(started_at AS timestamptz) AT TIME ZONE 'UTC' "
		       "AS t, status, " STORE_RUN_USD_SQL_PG " AS usd FROM runs WHERE status IN ('completed', 'failed', "
		       "'cancelled')) r GROUP BY 1) weeks ORDER BY w COLLATE \"C\"" :
		       "SELECT strftime('%Y-W%W', started_at) AS w, avg(CASE WHEN status = "
		       "'completed' THEN 1.0 ELSE 0.0 END), count(*), avg(" STORE_RUN_USD_SQL_LITE ") FROM runs "
		       "WHERE status IN ('completed', 'failed', 'cancelled') GROUP BY w ORDER BY w") == 0) {
		int step;

		while ((step = db_step(s)) == DB_ROW) {
			jv w = jv_object();

			w = json_set(w, "week", jv_string(db_col_text(s, 0)));
			w = json_set(w, "success_rate", num_or_null(db_col_double(s, 1)));
			w = json_set(w, "runs", jv_number((int)db_col_int64(s, 2)));
			w = json_set(w, "cost_per_run_usd", num_or_null(db_col_double(s, 3)));
			weeks = jv_array_append(weeks, w);
		}
		db_finalize(s);
		if (step != DB_DONE) {
			jv_free(weeks);
			jv_free(o);
			return forge_error_prefix("the success rate by week");
		}
	} else {
		jv_free(weeks);
		jv_free(o);
		return -1;
	}
	o = json_set(o, "by_week", weeks);
	*out = o;
	return 0;
}
