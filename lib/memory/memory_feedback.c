/*
 * memory_feedback.c - findings and the human feedback on them (seed 000
 * section 10.5; memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/findings.h"
#include "store/store.h"

static int store_event(struct memory *m, jv finding, const char *reason)
{
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	const char *trace = json_get_str(finding, "trace_id");
	jv ev = jv_object(), p = jv_object();

	if (!trace) {
		jv_free(ev);
		jv_free(p);
		return 0;
	}
	ulid_new(id);
	timestamp_format(ts, memory_now(m));
	p = json_set(p, "finding_id", json_get(finding, "id"));
	p = json_set(p, "reason", json_str_or_null(reason));
	ev = json_set(ev, "kind", jv_string("event"));
	ev = json_set(ev, "id", jv_string(id));
	ev = json_set(ev, "trace_id", jv_string(trace));
	ev = json_set(ev, "ts", jv_string(ts));
	ev = json_set(ev, "source", jv_string("forge-findings"));
	ev = json_set(ev, "phase", json_get(finding, "phase"));
	ev = json_set(ev, "type", jv_string("feedback.human_dismissed"));
	ev = json_set(ev, "payload", p);
	int rc = store_event_put(m->st, ev, NULL, 0, NULL);

	jv_free(ev);
	return rc;
}

int memory_dismiss_finding(jv *out, struct memory *m, const char *finding_id, const char *reason)
{
	struct buf q = BUF_INIT, b = BUF_INIT;
	struct memory_query mq;
	char mid[ULID_LEN + 1] = "", ts[TIMESTAMP_LEN + 1];
	jv f = jv_null(), hits = jv_null(), lowered = jv_array();
	int rc = -1, marked;
	const char *dismissal = "dismissal";

	*out = jv_null();
	if (findings_get(&f, m->st, finding_id) < 0)
		goto out;
	if (jv_get_kind(f) == JV_KIND_NULL) {
		rc = MEMORY_NOT_FOUND;
		goto out;
	}
	timestamp_format(ts, memory_now(m));
	marked = findings_dismiss(m->st, finding_id, "human", reason, ts);
	if (marked < 0)
		goto out;
	if (marked == 0) {
		const char *cat = json_get_str(f, "category"), *file = json_get_str(f, "file");
		const char *rule = json_get_str(f, "rule"), *msg = json_get_str(f, "message");

		/* the semantic memories that produced it: lower them (not dismissals) */
		buf_addf(&q, "review finding: %s %s %s in %s", cat, rule ? rule : "", msg, file ? file : "");
		memory_query_init(&mq, q.buf);
		mq.filter.type = MEMORY_SEMANTIC;
		mq.filter.limit = 5;
		mq.no_touch = true;
		if (memory_recall(&hits, m, &mq) < 0)
			goto out;
		jv_array_foreach(hits, i, h) {
			jv mem = json_get(h, "memory"), tags = json_get(mem, "tags");
			bool is_dismissal = false;

			jv_array_foreach(tags, j, t) {
				is_dismissal = is_dismissal || strcmp(jv_string_value(t), dismissal) == 0;
				jv_free(t);
				(void)j;
			}
			double before = json_get_num(mem, "confidence", 0), after = before;

			if (!is_dismissal && json_get_num(h, "similarity", 0) >= 0.3 && rc == -1) {
				if (memory_adjust(&after, m, json_get_str(mem, "id"), MEMORY_DELTA_DISMISSED,
						  "dismissed", finding_id) != 0) {
					rc = -2;
				} else {
					jv l = jv_object();

					l = json_set(l, "id", json_get(mem, "id"));
					l = json_set(l, "before", jv_number(before));
					l = json_set(l, "after", jv_number(after));
					lowered = jv_array_append(lowered, l);
				}
			}
			jv_free(tags);
			jv_free(mem);
			jv_free(h);
			(void)i;
		}
		if (rc == -2) {
			rc = -1;
			goto out;
		}
		/* learn from the dismissal */
		jv dm = jv_object();

		buf_addf(&b, "Finding \"%s\"%s%s%s was dismissed by a human. %s", msg, rule ? " (rule " : "",
			 rule ? rule : "", rule ? ")" : "", reason && *reason ? reason : "No reason given.");
		dm = json_set(dm, "type", jv_string("semantic"));
		dm = json_set(dm, "content", jv_string(b.buf));
		buf_reset(&b);
		buf_addf(&b, "reviewing %s issues in %s", cat, file ? file : "the repository");
		dm = json_set(dm, "context", jv_string(b.buf));
		dm = json_set(dm, "confidence", jv_number(MEMORY_CONF_HUMAN));
		dm = json_set(dm, "source", jv_string("human"));
		jv tags = JV_ARRAY(jv_string(dismissal), jv_string(cat));

		if (rule)
			tags = jv_array_append(tags, jv_string(rule));
		if (json_get_str(f, "layer"))
			tags = jv_array_append(tags, jv_string(json_get_str(f, "layer")));
		dm = json_set(dm, "tags", tags);
		if (memory_store(mid, m, dm) < 0 || store_event(m, f, reason) < 0)
			goto out;
		jv_free(f);
		if (findings_get(&f, m->st, finding_id) < 0)
			goto out;
	}
	jv o = jv_object();

	o = json_set(o, "finding", f);
	f = jv_null();
	o = json_set(o, "memory_id", *mid ? jv_string(mid) : jv_null());
	o = json_set(o, "lowered", lowered);
	lowered = jv_null();
	o = json_set(o, "already_dismissed", jv_bool(marked == FINDINGS_ALREADY_DISMISSED));
	*out = o;
	rc = 0;
out:
	jv_free(f);
	jv_free(hits);
	jv_free(lowered);
	buf_release(&q);
	buf_release(&b);
	return rc;
}
