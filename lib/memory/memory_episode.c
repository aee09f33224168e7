/*
 * memory_episode.c - episodes from events, procedures and their outcomes,
 * gate edits, and patterns (seed 002 sections 4-6; memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"

/* ---- episodes ------------------------------------------------------- */

static jv tags_add(jv tags, const char *t)
{
	if (!t || !*t)
		return tags;
	jv_array_foreach(tags, i, x) {
		bool same = strcmp(jv_string_value(x), t) == 0;

		jv_free(x);
		(void)i;
		if (same)
			return tags;
	}
	return jv_array_append(tags, jv_string(t));
}

static bool has_prefix(const char *s, const char *p)
{
	return s && strncmp(s, p, strlen(p)) == 0;
}

static bool contains(const char *s, const char *p)
{
	return s && strstr(s, p);
}

static int64_t event_ms(jv ev)
{
	int64_t ms = 0;
	jv ts = json_get(ev, "ts");

	if (mem_time_parse(&ms, ts) < 0)
		ms = 0;
	jv_free(ts);
	return ms;
}

/*
 * seed 002 section 4: input {task, phase}, actions (tool events), outcome
 * (success when the last event completed/succeeded/passed; the error message
 * otherwise), duration (first to last ts), cost (sum), bounces
 * (loop.phase_bounce events).
 */
static jv episode_of(jv events, jv *tags)
{
	int n = jv_array_length(jv_copy(events));
	jv first = jv_array_get(jv_copy(events), 0), last = jv_array_get(jv_copy(events), n - 1);
	jv actions = jv_array(), payload = json_get(first, "payload");
	double tokens = 0, usd = 0;
	int bounces = 0;
	const char *phase = json_get_str(first, "phase");
	char *task = json_get_str(payload, "task") ? xstrdup(json_get_str(payload, "task")) : NULL;

	jv_array_foreach(events, i, ev) {
		const char *type = json_get_str(ev, "type");
		jv cost = json_get(ev, "cost");

		tokens += json_get_num(cost, "tokens", 0);
		usd += json_get_num(cost, "usd", 0);
		jv_free(cost);
		if (!task) {
			jv p = json_get(ev, "payload");

			if (json_get_str(p, "task"))
				task = xstrdup(json_get_str(p, "task"));
			jv_free(p);
		}
		if (type && strcmp(type, "loop.phase_bounce") == 0)
			bounces++;
		if (has_prefix(type, "tool.")) {
			jv p = json_get(ev, "payload"), a = jv_object();
			const char *tool = json_get_str(p, "tool");

			a = json_set(a, "type", jv_string(type));
			a = json_set(a, "tool", json_str_or_null(tool));
			a = json_set(a, "ok", jv_bool(json_get_bool(p, "ok", strcmp(type, "tool.failed") != 0)));
			a = json_set(a, "duration_ms", json_get(ev, "duration_ms"));
			actions = jv_array_append(actions, a);
			*tags = tags_add(*tags, tool);
			jv_free(p);
		}
		jv_free(ev);
		(void)i;
	}
	const char *lt = json_get_str(last, "type");
	jv lp = json_get(last, "payload");
	jv err = json_get(lp, "error");
	const char *emsg = jv_get_kind(err) == JV_KIND_STRING ? jv_string_value(err) :
			   json_get_str(err, "message");
	const char *status = json_get_str(lp, "status");
	bool success = (contains(lt, "completed") || contains(lt, "success") || contains(lt, "passed")) &&
		       !(status && strcmp(status, "ok") != 0 && strcmp(status, "completed") != 0);
	jv outcome = jv_object(), in = jv_object(), ep = jv_object();

	outcome = json_set(outcome, "success", jv_bool(success));
	outcome = json_set(outcome, "last_event", json_str_or_null(lt));
	if (!success)
		outcome = json_set(outcome, "error", json_str_or_null(emsg ? emsg : status));
	in = json_set(in, "task", jv_string(task ? task : "unknown"));
	in = json_set(in, "phase", jv_string(phase ? phase : "unknown"));
	ep = json_set(ep, "input", in);
	ep = json_set(ep, "actions", actions);
	ep = json_set(ep, "outcome", outcome);
	int64_t d = event_ms(last) - event_ms(first);

	ep = json_set(ep, "duration_ms", jv_number((double)(d > 0 ? d : 0)));
	jv cost = jv_object();

	cost = json_set(cost, "tokens", jv_number(tokens));
	cost = json_set(cost, "usd", jv_number(usd));
	ep = json_set(ep, "cost", cost);
	ep = json_set(ep, "bounces", jv_number(bounces));
	*tags = tags_add(*tags, phase ? phase : "unknown");
	*tags = tags_add(*tags, success ? "success" : "failure");
	if (!success && emsg) {
		if (strstr(emsg, "timeout") || strstr(emsg, "timed out"))
			*tags = tags_add(*tags, "timeout");
		if (strstr(emsg, "rate limit") || strstr(emsg, "rate_limit"))
			*tags = tags_add(*tags, "rate-limit");
		if (strstr(emsg, "auth"))
			*tags = tags_add(*tags, "auth-error");
	}
	jv_free(err);
	jv_free(lp);
	jv_free(payload);
	jv_free(first);
	jv_free(last);
	free(task);
	return ep;
}

int memory_record_episode(char id_out[ULID_LEN + 1], struct memory *m, const char *trace_id,
			  jv events)
{
	struct buf b = BUF_INIT;
	jv tags = jv_array(), ep, mem;
	int rc;

	if (jv_get_kind(events) != JV_KIND_ARRAY || jv_array_length(jv_copy(events)) == 0) {
		jv_free(events);
		return forge_error("an episode needs at least one event");
	}
	ep = episode_of(events, &tags);
	jv_free(events);
	jv in = json_get(ep, "input"), out = json_get(ep, "outcome"), acts = json_get(ep, "actions");
	int na = jv_array_length(jv_copy(acts));
	const char *phase = json_get_str(in, "phase"), *task = json_get_str(in, "task");

	buf_addf(&b, "%s phase for \"%s\": ", phase, task);
	if (na == 0) {
		buf_adds(&b, "no actions");
	} else if (na <= 5) {
		jv_array_foreach(acts, i, a) {
			const char *tool = json_get_str(a, "tool");

			buf_addf(&b, "%s%s(%s)", i ? " -> " : "", json_get_str(a, "type"), tool ? tool : "N/A");
			jv_free(a);
		}
	} else {
		buf_addf(&b, "%d actions", na);
	}
	if (json_get_bool(out, "success", false))
		buf_adds(&b, " -> succeeded");
	else
		buf_addf(&b, " -> failed: %s", json_get_str(out, "error") ? json_get_str(out, "error") : "unknown error");
	jv cost = json_get(ep, "cost");

	buf_addf(&b, ". Duration: %.0fs, Cost: $%.4f", json_get_num(ep, "duration_ms", 0) / 1000,
		 json_get_num(cost, "usd", 0));
	mem = jv_object();
	mem = json_set(mem, "type", jv_string("episodic"));
	mem = json_set(mem, "content", jv_string(b.buf));
	buf_reset(&b);
	buf_addf(&b, "%s phase: %s", phase, task);
	mem = json_set(mem, "context", jv_string(b.buf));
	mem = json_set(mem, "confidence", jv_number(MEMORY_CONF_LLM));
	mem = json_set(mem, "source", json_str_or_null(trace_id));
	mem = json_set(mem, "tags", tags);
	mem = json_set(mem, "episode", ep);
	jv_free(cost);
	jv_free(in);
	jv_free(out);
	jv_free(acts);
	rc = memory_store(id_out, m, mem);
	buf_release(&b);
	return rc;
}

/* ---- procedures ------------------------------------------------------ */

int memory_learn_procedure(char id_out[ULID_LEN + 1], struct memory *m, const char *trigger,
			   jv steps, const char *context, jv tags)
{
	struct buf b = BUF_INIT;
	jv mem;
	int rc;

	if (!trigger || !*trigger || jv_get_kind(steps) != JV_KIND_ARRAY) {
		jv_free(steps);
		jv_free(tags);
		return forge_error("a procedure needs a trigger and an array of steps");
	}
	buf_addf(&b, "When %s:", trigger);
	jv_array_foreach(steps, i, st) {
		const char *d = jv_get_kind(st) == JV_KIND_STRING ? jv_string_value(st) :
				json_get_str(st, "description");
		const char *tool = jv_get_kind(st) == JV_KIND_OBJECT ? json_get_str(st, "tool") : NULL;
		double order = jv_get_kind(st) == JV_KIND_OBJECT ? json_get_num(st, "order", i + 1) : i + 1;

		buf_addf(&b, "\n%.0f. %s", order, d ? d : "");
		if (tool)
			buf_addf(&b, " (using %s)", tool);
		jv_free(st);
	}
	mem = jv_object();
	mem = json_set(mem, "type", jv_string("procedural"));
	mem = json_set(mem, "content", jv_string(b.buf));
	mem = json_set(mem, "context", jv_string(context ? context : trigger));
	mem = json_set(mem, "trigger", jv_string(trigger));
	mem = json_set(mem, "steps", steps);
	mem = json_set(mem, "tags", jv_get_kind(tags) == JV_KIND_ARRAY ? tags : (jv_free(tags), jv_array()));
	mem = json_set(mem, "confidence", jv_number(MEMORY_CONF_LLM));
	mem = json_set(mem, "success_rate", jv_number(1));
	mem = json_set(mem, "frequency", jv_number(0));
	rc = memory_store(id_out, m, mem);
	buf_release(&b);
	return rc;
}

int memory_record_outcome(struct memory *m, const char *id, bool success)
{
	jv mem, ch;
	int rc;

	if ((rc = memory_get(&mem, m, id)) < 0)
		return -1;
	if (jv_get_kind(mem) == JV_KIND_NULL)
		return MEMORY_NOT_FOUND;
	double n = json_get_num(mem, "frequency", 0), rate = json_get_num(mem, "success_rate", 0);
	/* the running mean over every recorded application */
	double next = (rate * n + (success ? 1 : 0)) / (n + 1);

	jv_free(mem);
	ch = jv_object();
	ch = json_set(ch, "frequency", jv_number(n + 1));
	ch = json_set(ch, "success_rate", jv_number(round(next * 1e6) / 1e6));
	rc = memory_update(m, id, ch);
	if (rc)
		return rc;
	return memory_adjust(NULL, m, id, success ? MEMORY_DELTA_APPLIED : MEMORY_DELTA_DISMISSED,
			     success ? "applied" : "failed", NULL);
}

int memory_record_gate_edit(char id_out[ULID_LEN + 1], struct memory *m, const char *gate_id,
			    const char *edits, const char *trace_id)
{
	struct buf b = BUF_INIT;
	jv mem = jv_object();
	int rc;

	if (!gate_id || !*gate_id || !edits || !*edits) {
		jv_free(mem);
		return forge_error("a gate edit needs the gate id and the edits");
	}
	buf_addf(&b, "Human approved gate %s but made edits: %s", gate_id, edits);
	mem = json_set(mem, "type", jv_string("procedural"));
	mem = json_set(mem, "content", jv_string(b.buf));
	buf_reset(&b);
	buf_addf(&b, "gate %s", gate_id);
	mem = json_set(mem, "context", jv_string(b.buf));
	mem = json_set(mem, "trigger", jv_string(b.buf));
	mem = json_set(mem, "confidence", jv_number(MEMORY_CONF_HUMAN));
	mem = json_set(mem, "source", jv_string("human"));
	mem = json_set(mem, "tags", JV_ARRAY(jv_string("gate"), jv_string(gate_id), jv_string("human-edit")));
	if (trace_id) {
		jv ep = jv_object();

		ep = json_set(ep, "trace_id", jv_string(trace_id));
		ep = json_set(ep, "gate_id", jv_string(gate_id));
		mem = json_set(mem, "steps", JV_ARRAY(ep));
	}
	rc = memory_store(id_out, m, mem);
	buf_release(&b);
	return rc;
}

/* ---- patterns ------------------------------------------------------- */

int memory_patterns(jv *out, struct memory *m, int limit)
{
	sqlite3_stmt *s;
	int step, rc = 0;

	*out = jv_array();
	if (mem_prepare(&s, m, "SELECT id, type, trigger_text, pattern, resolution, frequency, "
			"success_rate, confidence, last_seen, memory_id FROM patterns "
			"ORDER BY confidence DESC, frequency DESC, id LIMIT ?") < 0)
		return -1;
	sqlite3_bind_int(s, 1, limit > 0 ? limit : -1);
	while ((step = sqlite3_step(s)) == SQLITE_ROW) {
		jv p = jv_object();

		p = json_set(p, "id", jv_string((const char *)sqlite3_column_text(s, 0)));
		p = json_set(p, "type", jv_string((const char *)sqlite3_column_text(s, 1)));
		p = json_set(p, "trigger", jv_string((const char *)sqlite3_column_text(s, 2)));
		p = json_set(p, "pattern", jv_string((const char *)sqlite3_column_text(s, 3)));
		p = json_set(p, "resolution", json_str_or_null((const char *)sqlite3_column_text(s, 4)));
		p = json_set(p, "frequency", jv_number(sqlite3_column_int(s, 5)));
		p = json_set(p, "success_rate", sqlite3_column_type(s, 6) == SQLITE_NULL ? jv_null() :
			     jv_number(sqlite3_column_double(s, 6)));
		p = json_set(p, "confidence", jv_number(sqlite3_column_double(s, 7)));
		p = json_set(p, "last_seen", mem_time_json(sqlite3_column_int64(s, 8)));
		p = json_set(p, "memory_id", json_str_or_null((const char *)sqlite3_column_text(s, 9)));
		*out = jv_array_append(*out, p);
	}
	if (step != SQLITE_DONE)
		rc = mem_fail(m, "cannot list patterns");
	sqlite3_finalize(s);
	return rc;
}

int memory_pattern_update(struct memory *m, const char *id, bool applied, int success)
{
	sqlite3_stmt *s;
	double delta = 0;
	int rc = 0;

	if (applied && success == 1)
		delta = MEMORY_DELTA_APPLIED;
	else if (applied && success == 0)
		delta = MEMORY_DELTA_DISMISSED;
	/* success_rate: the running mean over frequency uses; unchanged when unknown */
	if (mem_prepare(&s, m, "UPDATE patterns SET "
			"success_rate = CASE WHEN ?1 < 0 THEN success_rate ELSE "
			"(coalesce(success_rate, 0) * frequency + ?1) / (frequency + 1) END, "
			"frequency = frequency + 1, "
			"confidence = round(max(0, min(1, confidence + ?2)), 6), last_seen = ?3 "
			"WHERE id = ?4") < 0)
		return -1;
	sqlite3_bind_int(s, 1, success);
	sqlite3_bind_double(s, 2, delta);
	sqlite3_bind_int64(s, 3, memory_now(m));
	store_bind_text(s, 4, id);
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = mem_fail(m, "cannot update pattern '%s'", id);
	else if (!sqlite3_changes(m->db))
		rc = MEMORY_NOT_FOUND;
	sqlite3_finalize(s);
	return rc;
}
