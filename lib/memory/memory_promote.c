/*
 * memory_promote.c - promote clusters of 3+ similar episodes to semantic
 * patterns with one structured LLM call each (seed 002 section 5).
 *
 * Clusters are the connected components of the related/similar edges
 * (cosine > 0.7) between active episodic memories.  A cluster whose episodes
 * already fed a pattern updates that pattern (frequency, success rate,
 * last_seen) without a model call; a cluster of 3+ new episodes asks the
 * model for {type, trigger, pattern, resolution} through the forced tool
 * "record_pattern", stores the pattern and a semantic memory carrying it
 * (confidence 0.5, LLM-extracted), and marks the episodes (pattern_id), so
 * a second consolidation does not promote them again.
 */
#include "memory/memory_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "data/schema.h"
#include "llm/llm.h"

struct ep {
	char id[ULID_LEN + 1];
	char *content, *pattern;
	bool success;
	int parent;
};

static int find(struct ep *e, int i)
{
	while (e[i].parent != i) {
		e[i].parent = e[e[i].parent].parent;
		i = e[i].parent;
	}
	return i;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct ep *)a)->id, ((const struct ep *)b)->id);
}

static int index_of(struct ep *e, size_t n, const char *id)
{
	struct ep key = { .parent = 0 };

	if (!n)
		return -1;
	snprintf(key.id, sizeof key.id, "%s", id);
	struct ep *f = bsearch(&key, e, n, sizeof *e, by_id);

	return f ? (int)(f - e) : -1;
}

static int load_episodes(struct ep **out, size_t *n, struct memory *m)
{
	struct db_stmt *s;
	size_t cap = 0;
	int step, rc = 0;

	*out = NULL;
	*n = 0;
	/* (json_extract gives a JSON true as 1) */
	if (mem_prepare(&s, m, m->pg ? "SELECT id, content, pattern_id, "
			"CASE WHEN episode::jsonb #>> '{outcome,success}' IN ('true', '1') THEN 1 ELSE 0 END "
			"FROM memories "
			"WHERE type = 'episodic' AND archived_at IS NULL AND id IN (SELECT memory_a_id "
			"FROM memory_relationships WHERE relationship IN ('related', 'similar') UNION "
			"SELECT memory_b_id FROM memory_relationships WHERE relationship IN "
			"('related', 'similar')) ORDER BY id" : "SELECT id, content, pattern_id, "
			"coalesce(json_extract(episode, '$.outcome.success'), 0) FROM memories "
			"WHERE type = 'episodic' AND archived_at IS NULL AND id IN (SELECT memory_a_id "
			"FROM memory_relationships WHERE relationship IN ('related', 'similar') UNION "
			"SELECT memory_b_id FROM memory_relationships WHERE relationship IN "
			"('related', 'similar')) ORDER BY id") < 0)
		return -1;
	while ((step = db_step(s)) == DB_ROW) {
		if (*n == cap) {
			cap = cap * 2 + 32;
			*out = xrealloc(*out, cap * sizeof **out);
		}
		struct ep *e = &(*out)[*n];

		snprintf(e->id, sizeof e->id, "%s", db_col_text(s, 0));
		e->content = xstrdup(db_col_text(s, 1));
		e->pattern = db_col_null(s, 2) ? NULL :
			     xstrdup(db_col_text(s, 2));
		e->success = (int)db_col_int64(s, 3) != 0;
		e->parent = (int)*n;
		(*n)++;
	}
	if (step != DB_DONE)
		rc = mem_fail(m, "cannot read episodes");
	db_finalize(s);
	return rc;
}

static int join_edges(struct ep *e, size_t n, struct memory *m)
{
	struct db_stmt *s;
	int step, rc = 0;

	if (mem_prepare(&s, m, "SELECT memory_a_id, memory_b_id FROM memory_relationships WHERE "
			"relationship IN ('related', 'similar')") < 0)
		return -1;
	while ((step = db_step(s)) == DB_ROW) {
		int a = index_of(e, n, db_col_text(s, 0));
		int b = index_of(e, n, db_col_text(s, 1));

		if (a >= 0 && b >= 0)
			e[find(e, a)].parent = find(e, b);
	}
	if (step != DB_DONE)
		rc = mem_fail(m, "cannot read memory relationships");
	db_finalize(s);
	return rc;
}

/* record_pattern, its input schema schemas/tools/record_pattern.json */
static jv pattern_tool(void)
{
	return JV_ARRAY(schema_tool_spec("record_pattern"));
}

/* One request holds at most PROMPT_EPISODES episodes of a cluster and
 * PROMPT_BYTES of their text (~8K tokens), each episode cut to its share:
 * a cluster grows transitively and an episode may hold a 200 KB log, and a
 * request over the model's context was refused, then sent again by every
 * consolidation.  A pattern is what the episodes share: a sample says it. */
#define PROMPT_EPISODES 12
#define PROMPT_BYTES 32000

/* The length of s cut to at most max bytes, on a UTF-8 character's start. */
static int cut_len(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max) {
		n = max;
		while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	return (int)n;
}

/* Ask the model; *out = the tool input {type, trigger, pattern, resolution}. */
static int ask_model(jv *out, struct llm_client *llm, struct ep *e, const int *members, int k)
{
	struct llm_request req;
	struct llm_response resp;
	struct buf p = BUF_INIT;
	int sent = k < PROMPT_EPISODES ? k : PROMPT_EPISODES, rc = -1;
	size_t share = PROMPT_BYTES / (size_t)(sent > 0 ? sent : 1);

	*out = jv_null();
	buf_addf(&p, "You are analyzing %d similar execution episodes to extract a reusable pattern.\n\n"
		 "Episodes:\n", sent);
	for (int i = 0; i < sent; i++) {
		const char *c = e[members[i]].content;
		int n = cut_len(c, share);

		buf_addf(&p, "%d. %.*s%s\n", i + 1, n, c, c[n] ? " [...]" : "");
	}
	buf_adds(&p, "\nCall record_pattern with the pattern: type (success, failure or approach), "
		 "trigger (\"When ...\"), pattern (\"We observe ...\"), resolution (\"Do ...\").");
	llm_request_init(&req);
	req.system = "You are a pattern extraction assistant. Extract actionable patterns from "
		     "execution traces.";
	req.messages = JV_ARRAY(llm_msg_user(p.buf));
	req.tools = pattern_tool();
	req.tool_choice = LLM_TOOL_FORCED;
	req.tool_name = "record_pattern";
	req.max_tokens = 1024;
	req.temperature = 0.3;
	if (llm_call(&resp, llm, &req) < 0)
		goto out;
	for (size_t i = 0; i < resp.ncalls; i++) {
		if (strcmp(resp.calls[i].name, "record_pattern") == 0) {
			*out = jv_copy(resp.calls[i].input);
			break;
		}
	}
	const char *type = json_get_str(*out, "type");

	if (!type || (strcmp(type, "success") && strcmp(type, "failure") && strcmp(type, "approach")) ||
	    !json_get_str(*out, "trigger") || !json_get_str(*out, "pattern")) {
		forge_error("the model did not call record_pattern with type, trigger and pattern");
		goto out;
	}
	rc = 0;
out:
	if (rc < 0) {
		jv_free(*out);
		*out = jv_null();
	}
	llm_response_release(&resp);
	llm_request_release(&req);
	buf_release(&p);
	return rc;
}

static int mark(struct memory *m, const char *episode, const char *pattern)
{
	struct db_stmt *s;

	if (mem_prepare(&s, m, "UPDATE memories SET pattern_id = ? WHERE id = ?") < 0)
		return -1;
	db_bind_text(s, 1, pattern);
	db_bind_text(s, 2, episode);
	return db_step_done(m->st, s, "cannot mark episode '%s'", episode);
}

static int store_pattern(struct memory *m, jv p, struct ep *e, const int *mem, int k)
{
	char pid[ULID_LEN + 1], mid[ULID_LEN + 1];
	struct buf b = BUF_INIT;
	struct db_stmt *s = NULL;
	int ok = 0, rc = -1;
	const char *res = json_get_str(p, "resolution");

	for (int i = 0; i < k; i++)
		ok += e[mem[i]].success;
	double rate = (double)ok / k;

	ulid_new(pid);
	buf_addf(&b, "%s: %s.%s%s", json_get_str(p, "trigger"), json_get_str(p, "pattern"),
		 res ? " " : "", res ? res : "");
	jv sm = jv_object();

	sm = json_set(sm, "type", jv_string("semantic"));
	sm = json_set(sm, "content", jv_string(b.buf));
	sm = json_set(sm, "context", jv_string(json_get_str(p, "trigger")));
	sm = json_set(sm, "trigger", jv_string(json_get_str(p, "trigger")));
	sm = json_set(sm, "tags", JV_ARRAY(jv_string("pattern"), jv_string(json_get_str(p, "type"))));
	sm = json_set(sm, "confidence", jv_number(MEMORY_CONF_LLM));
	sm = json_set(sm, "source", jv_string("consolidation"));
	sm = json_set(sm, "frequency", jv_number(k));
	sm = json_set(sm, "success_rate", jv_number(rate));
	sm = json_set(sm, "pattern_id", jv_string(pid));
	if (memory_store(mid, m, sm) < 0)
		goto out;
	if (mem_begin(m) < 0)
		goto out;
	if (mem_prepare(&s, m, "INSERT INTO patterns (id, type, trigger_text, pattern, resolution, "
			"frequency, success_rate, confidence, last_seen, created_at, memory_id) "
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)") < 0)
		goto fail;
	db_bind_text(s, 1, pid);
	db_bind_text(s, 2, json_get_str(p, "type"));
	db_bind_text(s, 3, json_get_str(p, "trigger"));
	db_bind_text(s, 4, json_get_str(p, "pattern"));
	db_bind_text(s, 5, res);
	db_bind_int64(s, 6, k);
	db_bind_double(s, 7, rate);
	db_bind_double(s, 8, MEMORY_CONF_LLM);
	db_bind_int64(s, 9, memory_now(m));
	db_bind_int64(s, 10, memory_now(m));
	db_bind_text(s, 11, mid);
	if (db_step(s) != DB_DONE) {
		mem_fail(m, "cannot store a pattern");
		goto fail;
	}
	for (int i = 0; i < k; i++) {
		if (mark(m, e[mem[i]].id, pid) < 0 || memory_relate(m, mid, e[mem[i]].id, "extends", -1) < 0)
			goto fail;
	}
	if (mem_commit(m) < 0)
		goto out;
	rc = 0;
	goto out;
fail:
	mem_rollback(m);
out:
	db_finalize(s);
	buf_release(&b);
	return rc;
}

/* Episodes that joined a cluster whose others already fed pattern pid. */
static int extend_pattern(struct memory *m, const char *pid, struct ep *e, const int *mem, int k)
{
	struct db_stmt *s = NULL;
	int rc = -1, ok = 0;

	for (int i = 0; i < k; i++)
		ok += e[mem[i]].success;
	if (mem_begin(m) < 0)
		return -1;
	if (mem_prepare(&s, m, "UPDATE patterns SET success_rate = (coalesce(success_rate, 0.0) * "
			"frequency + ?1) / (frequency + ?2), frequency = frequency + ?2, last_seen = ?3 "
			"WHERE id = ?4") < 0)
		goto out;
	db_bind_int64(s, 1, ok);
	db_bind_int64(s, 2, k);
	db_bind_int64(s, 3, memory_now(m));
	db_bind_text(s, 4, pid);
	if (db_step(s) != DB_DONE) {
		mem_fail(m, "cannot update pattern '%s'", pid);
		goto out;
	}
	for (int i = 0; i < k; i++) {
		if (mark(m, e[mem[i]].id, pid) < 0)
			goto out;
	}
	rc = 0;
out:
	db_finalize(s);
	if (rc == 0)
		return mem_commit(m);
	mem_rollback(m);
	return -1;
}

struct grp {
	int root, i;
};

static int by_root(const void *a, const void *b)
{
	const struct grp *x = a, *y = b;

	return x->root != y->root ? (x->root > y->root) - (x->root < y->root) : (x->i > y->i) - (x->i < y->i);
}

int mem_promote(struct memory *m, struct llm_client *llm, long *promoted, long *updated,
		long *skipped, jv *errors);
int mem_promote(struct memory *m, struct llm_client *llm, long *promoted, long *updated,
		long *skipped, jv *errors)
{
	struct ep *e = NULL;
	struct grp *order = NULL;
	size_t n = 0;
	int *fresh = NULL, rc = -1;

	if (load_episodes(&e, &n, m) < 0 || join_edges(e, n, m) < 0)
		goto out;
	fresh = xcalloc(n + 1, sizeof *fresh);
	order = xcalloc(n + 1, sizeof *order);
	for (size_t i = 0; i < n; i++) {
		order[i].root = find(e, (int)i);
		order[i].i = (int)i;
	}
	qsort(order, n, sizeof *order, by_root);
	for (size_t g = 0; g < n;) {
		const char *pid = NULL;
		int k = 0, total = 0;
		size_t end = g;

		while (end < n && order[end].root == order[g].root)
			end++;
		for (size_t j = g; j < end; j++) {
			int i = order[j].i;

			total++;
			if (e[i].pattern)
				pid = pid ? pid : e[i].pattern;
			else
				fresh[k++] = i;
		}
		g = end;
		if (total < MEMORY_PROMOTE_MIN || k == 0)
			continue;
		if (pid) {
			if (extend_pattern(m, pid, e, fresh, k) < 0)
				goto out;
			(*updated)++;
			continue;
		}
		if (!llm) {
			(*skipped)++;
			continue;
		}
		jv p;

		if (ask_model(&p, llm, e, fresh, k) < 0 || store_pattern(m, p, e, fresh, k) < 0) {
			struct buf b = BUF_INIT;

			buf_addf(&b, "promote: %s", forge_last_error());
			*errors = jv_array_append(*errors, jv_string(b.buf));
			buf_release(&b);
			(*skipped)++;
		} else {
			(*promoted)++;
		}
		jv_free(p);
	}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++) {
		free(e[i].content);
		free(e[i].pattern);
	}
	free(e);
	free(fresh);
	free(order);
	return rc;
}
