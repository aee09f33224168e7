/*
 * snapshot.c - state = snapshot + the state.updated events after it
 * (snapshot.h).
 */
#include "engine/snapshot.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

jv state_patch(jv from, jv to)
{
	jv set = jv_object(), unset = jv_array();
	bool from_obj = jv_get_kind(from) == JV_KIND_OBJECT;

	if (jv_get_kind(to) == JV_KIND_OBJECT) {
		jv_object_foreach(to, key, val) {
			jv old = from_obj ? jv_object_get(jv_copy(from), jv_copy(key)) : jv_invalid();
			bool same = jv_is_valid(old) && jv_equal(old, jv_copy(val));

			if (!same)
				set = jv_object_set(set, jv_copy(key), jv_copy(val));
			jv_free(key);
			jv_free(val);
		}
	}
	if (from_obj) {
		jv_object_foreach(from, key, val) {
			bool kept = jv_get_kind(to) == JV_KIND_OBJECT && jv_object_has(jv_copy(to), jv_copy(key));

			if (!kept)
				unset = jv_array_append(unset, jv_copy(key));
			jv_free(key);
			jv_free(val);
		}
	}
	return json_set(json_set(jv_object(), "set", set), "unset", unset);
}

jv state_patch_apply(jv state, jv patch)
{
	jv set = json_get(patch, "set"), unset = json_get(patch, "unset");

	if (jv_get_kind(state) != JV_KIND_OBJECT) {
		jv_free(state);
		state = jv_object();
	}
	if (jv_get_kind(unset) == JV_KIND_ARRAY) {
		jv_array_foreach(unset, i, key) {
			if (jv_get_kind(key) == JV_KIND_STRING)
				state = jv_object_delete(state, key);
			else
				jv_free(key);
			(void)i;
		}
	}
	if (jv_get_kind(set) == JV_KIND_OBJECT) {
		jv_object_foreach(set, key, val)
			state = jv_object_set(state, key, val);
	}
	jv_free(set);
	jv_free(unset);
	return state;
}

struct rebuild {
	jv state;
	const char *after;      /* apply the patches after the event naming it; NULL = all */
	bool applying;
	long applied;
};

static int apply_event(const char *line, size_t len, void *payload)
{
	struct rebuild *r = payload;
	jv ev, body;
	const char *cp;

	/* Cheap filter first: most of a run's events are not state updates. */
	if (!memmem(line, len, "\"state.updated\"", 15))
		return 0;
	ev = json_parse(line, len);
	if (!jv_is_valid(ev) || strcmp(json_get_str(ev, "type") ? json_get_str(ev, "type") : "", "state.updated")) {
		jv_free(ev);
		return 0;
	}
	body = json_get(ev, "payload");
	cp = json_get_str(body, "checkpoint");
	if (r->applying) {
		r->state = state_patch_apply(r->state, body);
		r->applied++;
	} else if (cp && r->after && strcmp(cp, r->after) == 0) {
		r->applying = true;     /* the snapshot holds this one already */
	}
	jv_free(body);
	jv_free(ev);
	return 0;
}

int state_rebuild(jv *out, jv *how, struct store *st, const char *trace, const char *from)
{
	struct rebuild r = { .state = jv_null() };
	jv cp = jv_null(), cps = jv_null();
	char *cp_id = NULL;
	int rc = 0;

	*out = jv_null();
	if (how)
		*how = jv_null();
	if (from) {
		if (store_checkpoint_load(&cp, st, from) < 0)
			return -1;
		if (jv_get_kind(cp) != JV_KIND_OBJECT || strcmp(json_get_str(cp, "trace_id"), trace)) {
			jv_free(cp);
			forge_error("no checkpoint '%s' in run %s", from, trace);
			return 1;
		}
	} else {
		if (store_checkpoint_list(&cps, st, trace) < 0)
			return -1;
		int n = jv_array_length(jv_copy(cps));

		if (n > 0) {
			jv last = jv_array_get(jv_copy(cps), n - 1);

			rc = store_checkpoint_load(&cp, st, json_get_str(last, "id"));
			jv_free(last);
		}
		jv_free(cps);
		if (rc < 0)
			return -1;
	}
	if (jv_get_kind(cp) == JV_KIND_OBJECT) {
		cp_id = xstrdup(json_get_str(cp, "id"));
		r.state = json_get(cp, "state");
		r.after = cp_id;
	} else {
		r.state = jv_object();
		r.applying = true;      /* no snapshot: every patch, from {} */
	}
	rc = store_events_foreach(st, trace, apply_event, &r);
	if (rc < 0) {
		jv_free(r.state);
		jv_free(cp);
		free(cp_id);
		return -1;
	}
	if (!cp_id && r.applied == 0) {
		jv_free(r.state);
		jv_free(cp);
		return 1;
	}
	if (how) {
		*how = json_set(jv_object(), "checkpoint", json_str_or_null(cp_id));
		*how = json_set(*how, "phase", json_get(cp, "phase"));
		*how = json_set(*how, "events_applied", jv_number((double)r.applied));
	}
	*out = r.state;
	jv_free(cp);
	free(cp_id);
	return 0;
}
