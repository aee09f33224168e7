/*
 * memory_production.c - the production loop (seed 000 section 10.6, Loop
 * 5): anomalies and production errors, and rollbacks, remembered against
 * the run that shipped the code (memory.h, "PRODUCTION").
 */
#include "memory/memory_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/schema.h"
#include "store/store.h"

#define PRODUCTION_SCHEMA "production.schema.json"
#define STACK_LINES 6           /* of a stack trace, in the memory's text */

/* The seed's interface names (camelCase) and the stream's (snake_case). */
static const char *const renames[][2] = {
	{ "deploymentId", "deployment_id" }, { "traceId", "trace_id" },
	{ "firstSeen", "first_seen" }, { "affectedUsers", "affected_users" },
	{ "relatedCommit", "related_commit" }, { "detectedAt", "detected_at" },
};

jv production_normalise(jv rec)
{
	if (jv_get_kind(rec) != JV_KIND_OBJECT)
		return rec;
	for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++) {
		if (!json_has(rec, renames[i][0]) || json_has(rec, renames[i][1]))
			continue;
		jv v = json_get(rec, renames[i][0]);

		rec = jv_object_delete(rec, jv_string(renames[i][0]));
		rec = json_set(rec, renames[i][1], v);
	}
	if (!json_has(rec, "kind")) {
		if (json_has(rec, "metric"))
			rec = json_set(rec, "kind", jv_string("anomaly"));
		else if (json_has(rec, "stack"))
			rec = json_set(rec, "kind", jv_string("error"));
	}
	return rec;
}

int production_check(jv rec)
{
	const char *kind;

	if (jv_get_kind(rec) != JV_KIND_OBJECT)
		return forge_error("expected a JSON object, got %s", jv_kind_name(jv_get_kind(rec)));
	kind = json_get_str(rec, "kind");
	if (!kind)
		return forge_error(".kind: missing: say \"anomaly\" (metric, baseline, current) or "
				   "\"error\" (stack, frequency)");
	if (strcmp(kind, "anomaly") && strcmp(kind, "error"))
		return forge_error(".kind: \"%s\" is not \"anomaly\" or \"error\"", kind);
	if (strcmp(kind, "anomaly") == 0 && !json_has(rec, "deployment_id") && !json_has(rec, "trace_id"))
		return forge_error(".deployment_id: missing: an anomaly names the deploy it follows, by "
				   "deployment_id (a run's trace id or the deployed commit) or trace_id");
	return schema_validate_def(PRODUCTION_SCHEMA, kind, rec);
}

static bool is_hex_ref(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!isxdigit((unsigned char)s[n]))
			return false;
	return n >= 7 && n <= 64;
}

/* The newest run whose changes or deployment name a commit starting with
 * prefix (hex, lowercased here), or NULL. */
static int run_of_commit(char **trace, struct store *st, const char *prefix)
{
	static const char sql[] =
		"SELECT trace_id FROM checkpoints"
		" WHERE substr(json_extract(state, '$.deployment.commit'), 1, ?2) = ?1"
		"    OR substr(json_extract(state, '$.changes.commit'), 1, ?2) = ?1"
		" ORDER BY ts DESC, id DESC LIMIT 1";
	static const char sql_pg[] =
		"SELECT trace_id FROM checkpoints"
		" WHERE substr(replace(state, '\\u0000', '\\ufffd')::jsonb #>> '{deployment,commit}', 1, "
		"CAST(?2 AS INTEGER)) = ?1"
		"    OR substr(replace(state, '\\u0000', '\\ufffd')::jsonb #>> '{changes,commit}', 1, "
		"CAST(?2 AS INTEGER)) = ?1"
		" ORDER BY ts DESC, id DESC LIMIT 1";
	struct db_stmt *s = NULL;
	char lower[65];
	size_t n = strlen(prefix);
	int rc;

	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)tolower((unsigned char)prefix[i]);
	if (db_prepare(&s, st, store_backend(st) == DB_POSTGRES ? sql_pg : sql) < 0)
		return -1;
	db_bind_textn(s, 1, lower, n);
	db_bind_int64(s, 2, (int)n);
	rc = db_step(s);
	if (rc == DB_ROW)
		*trace = xstrdup(db_col_text(s, 0));
	else if (rc != DB_DONE)
		rc = store_fail(st, "finding the run of commit %s", prefix);
	db_finalize(s);
	return rc == DB_ROW || rc == DB_DONE ? 0 : -1;
}

static int run_exists(bool *yes, struct store *st, const char *trace)
{
	jv run;

	if (store_run_get(&run, st, trace) < 0)
		return -1;
	*yes = jv_get_kind(run) == JV_KIND_OBJECT;
	jv_free(run);
	return 0;
}

/* A trace id or commit given as ref: the run it names, if any. */
static int run_of_ref(char **trace, struct store *st, const char *ref)
{
	bool known = false;

	if (!ref || *trace)
		return 0;
	if (run_exists(&known, st, ref) < 0)
		return -1;
	if (known) {
		*trace = xstrdup(ref);
		return 0;
	}
	return is_hex_ref(ref) ? run_of_commit(trace, st, ref) : 0;
}

int production_find_run(char **trace, struct store *st, jv rec)
{
	*trace = NULL;
	if (run_of_ref(trace, st, json_get_str(rec, "trace_id")) < 0 ||
	    run_of_ref(trace, st, json_get_str(rec, "deployment_id")) < 0 ||
	    run_of_ref(trace, st, json_get_str(rec, "related_commit")) < 0) {
		free(*trace);
		*trace = NULL;
		return -1;
	}
	return 0;
}

/* ---- the memory -------------------------------------------------------- */

struct run_facts {
	jv task;        /* string or null */
	jv commit;      /* string or null */
	jv files;       /* array of paths */
};

/* What the run that shipped the code was about: its task, commit and the
 * files it changed (its newest checkpoint). */
static void run_facts(struct run_facts *f, struct store *st, const char *trace)
{
	jv run = jv_null(), state = jv_null();

	f->task = jv_null();
	f->commit = jv_null();
	f->files = jv_array();
	if (!trace)
		return;
	if (store_run_get(&run, st, trace) == 0 && json_get_str(run, "task"))
		f->task = json_get(run, "task");
	if (store_checkpoint_latest(&state, st, trace) == 0 && jv_get_kind(state) == JV_KIND_OBJECT) {
		jv dep = json_get_path(state, "deployment.commit");
		jv chg = json_get_path(state, "changes.commit");
		jv files = json_get_path(state, "changes.files");

		f->commit = jv_get_kind(dep) == JV_KIND_STRING ? (jv_free(chg), dep)
				: (jv_free(dep), jv_get_kind(chg) == JV_KIND_STRING ? chg : (jv_free(chg), jv_null()));
		if (jv_get_kind(files) == JV_KIND_ARRAY) {
			jv_array_foreach(files, i, fc) {
				const char *p = json_get_str(fc, "path");

				if (p && jv_array_length(jv_copy(f->files)) < 20)
					f->files = jv_array_append(f->files, jv_string(p));
				jv_free(fc);
				(void)i;
			}
		}
		jv_free(files);
	}
	jv_free(run);
	jv_free(state);
}

static void run_facts_release(struct run_facts *f)
{
	jv_free(f->task);
	jv_free(f->commit);
	jv_free(f->files);
}

static void add_files(struct buf *b, jv files)
{
	int n = jv_array_length(jv_copy(files));

	if (n == 0)
		return;
	buf_adds(b, "; files: ");
	jv_array_foreach(files, i, p) {
		buf_addf(b, "%s%s", i ? ", " : "", jv_string_value(p));
		jv_free(p);
	}
}

/* "after the deploy of run T (task: "…"; commit abc1234; files: a, b)". */
static void add_origin(struct buf *b, const char *trace, const struct run_facts *f, const char *commit)
{
	if (!trace) {
		if (commit)
			buf_addf(b, " after commit %.12s", commit);
		else
			buf_adds(b, " after a deploy no Forge run made");
		return;
	}
	buf_addf(b, " after the deploy of run %s (", trace);
	if (jv_get_kind(f->task) == JV_KIND_STRING)
		buf_addf(b, "task: \"%.300s\"; ", jv_string_value(f->task));
	if (jv_get_kind(f->commit) == JV_KIND_STRING)
		commit = jv_string_value(f->commit);   /* the run's own: whole, not the prefix given */
	buf_addf(b, "commit %.12s", commit ? commit : "unknown");
	add_files(b, f->files);
	buf_addch(b, ')');
}

/* The first lines of a stack trace, on one line. */
static void add_stack(struct buf *b, const char *stack)
{
	int lines = 0;

	for (const char *p = stack; *p && lines < STACK_LINES; lines++) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		if (n)
			buf_addf(b, "%s%.*s", lines ? " | " : "", (int)(n > 300 ? 300 : n), p);
		p = nl ? nl + 1 : p + n;
	}
}

static jv describe(const char *kind, jv rec, const char *trace, const struct run_facts *f)
{
	struct buf b;
	const char *env = json_get_str(rec, "environment");
	const char *svc = json_get_str(rec, "service");
	const char *msg = json_get_str(rec, "message");

	buf_init(&b, 0);
	if (strcmp(kind, "anomaly") == 0) {
		buf_addf(&b, "Production anomaly: %s went from %g to %g", json_get_str(rec, "metric"),
			 json_get_num(rec, "baseline", 0), json_get_num(rec, "current", 0));
		if (env || svc)
			buf_addf(&b, " in %s%s%s", svc ? svc : "", svc && env ? " " : "", env ? env : "");
		add_origin(&b, trace, f, trace ? NULL : json_get_str(rec, "deployment_id"));
	} else if (strcmp(kind, "error") == 0) {
		buf_adds(&b, "Production error");
		add_origin(&b, trace, f, json_get_str(rec, "related_commit"));
		buf_addf(&b, ", seen %.0f times", json_get_num(rec, "frequency", 0));
		if (json_has(rec, "affected_users"))
			buf_addf(&b, " by %.0f users", json_get_num(rec, "affected_users", 0));
		if (json_get_str(rec, "first_seen"))
			buf_addf(&b, " since %s", json_get_str(rec, "first_seen"));
		buf_adds(&b, ": ");
		add_stack(&b, json_get_str(rec, "stack"));
	} else {
		buf_addf(&b, "A deploy to %s was %s", env ? env : "production",
			 strcmp(json_get_str(rec, "status") ? json_get_str(rec, "status") : "", "degraded") == 0
				 ? "left degraded: its rollback failed" : "rolled back");
		add_origin(&b, trace, f, json_get_str(rec, "commit"));
		if (json_get_str(rec, "reason"))
			buf_addf(&b, ": %s", json_get_str(rec, "reason"));
	}
	if (msg && *msg)
		buf_addf(&b, ". %s", msg);
	buf_adds(&b, ". The next change to this code must not bring it back.");
	jv text = jv_string(b.buf);
	buf_release(&b);
	return text;
}

int memory_record_production(char id_out[ULID_LEN + 1], struct memory *m, jv rec, const char *trace)
{
	struct run_facts f;
	const char *kind = json_get_str(rec, "kind");
	jv mem, tags, episode;
	int rc;

	if (!kind) {
		jv_free(rec);
		return forge_error("a production record needs a kind");
	}
	run_facts(&f, memory_store_of(m), trace);
	jv given = json_get(rec, "files");   /* a rollback's own: the state's changed files */

	if (jv_array_length(jv_copy(f.files)) == 0 && jv_get_kind(given) == JV_KIND_ARRAY) {
		jv_array_foreach(given, i, p) {
			if (jv_get_kind(p) == JV_KIND_STRING && i < 20)
				f.files = jv_array_append(f.files, p);
			else
				jv_free(p);
		}
	}
	jv_free(given);
	if (jv_get_kind(f.task) != JV_KIND_STRING && json_get_str(rec, "task"))
		f.task = (jv_free(f.task), json_get(rec, "task"));
	tags = JV_ARRAY(jv_string("production"), jv_string(kind));
	jv_array_foreach(f.files, i, p) {
		tags = jv_array_append(tags, p);
		(void)i;
	}
	episode = json_set(json_set(jv_object(), "trace_id", json_str_or_null(trace)), "record", jv_copy(rec));
	if (jv_get_kind(f.commit) == JV_KIND_STRING)
		episode = json_set(episode, "commit", jv_copy(f.commit));
	mem = json_set(jv_object(), "type", jv_string("episodic"));
	mem = json_set(mem, "content", describe(kind, rec, trace, &f));
	mem = json_set(mem, "context", jv_string_fmt("production feedback: %s%s%s", kind,
						     jv_get_kind(f.task) == JV_KIND_STRING ? " after " : "",
						     jv_get_kind(f.task) == JV_KIND_STRING ? jv_string_value(f.task) : ""));
	mem = json_set(mem, "tags", tags);
	mem = json_set(mem, "source", jv_string("production"));
	mem = json_set(mem, "confidence", jv_number(MEMORY_CONF_PRODUCTION));
	mem = json_set(mem, "episode", episode);
	rc = memory_store(id_out, m, mem);
	run_facts_release(&f);
	jv_free(rec);
	return rc;
}
