/*
 * gatedecide.c - a human's decision on a pending gate (gatedecide.h).
 */
#include "app/gatedecide.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/stream.h"
#include "engine/gates.h"
#include "memory/memory.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

static void remember(struct store *st, const struct config *cfg, jv gate, const char *note)
{
	struct memory_options mo;
	struct memory *m;
	char id[ULID_LEN + 1];

	memory_options_init(&mo);
	memory_options_from_config(&mo, cfg);
	if (memory_open(&m, st, &mo) == 0) {
		memory_record_gate_edit(id, m, json_get_str(gate, "gate"), note, json_get_str(gate, "trace_id"));
		memory_free(m);
	}
}

int gatedecide_human(jv *out, struct store *st, const struct config *cfg, const char *source,
		     const char *id, bool approve, const char *note)
{
	jv gate;

	if (out)
		*out = jv_null();
	/* the row, the event and the memory would each hold it differently
	 * (raw bytes, U+FFFD): one check for forge gate and forge tui */
	if (note && !json_utf8_valid(note, strlen(note))) {
		forge_error("the note is not valid UTF-8 (a terminal in another encoding?); nothing was decided");
		return GATE_REFUSED;
	}
	if (gate_get(&gate, st, id) < 0)
		return -1;
	if (jv_get_kind(gate) != JV_KIND_OBJECT) {
		jv_free(gate);
		forge_error("no gate '%s' (see `forge gate list`)", id);
		return GATE_REFUSED;
	}
	int rc = gate_decide(st, id, approve, "human", note);

	if (rc < 0) {
		jv_free(gate);
		return rc;
	}
	/* The decision is an event of the run, like everything else; the
	 * stream is only the event's maker here: nothing is written to it. */
	struct stream_out so;
	stream_out_init(&so, stdout, source, NULL);
	stream_out_set_trace(&so, json_get_str(gate, "trace_id"));
	jv p = json_set(json_set(jv_object(), "gate", json_get(gate, "gate")), "id", jv_string(id));
	p = json_set(json_set(p, "by", jv_string("human")), "note", json_str_or_null(note));
	jv ev = stream_event_new(&so, approve ? "gate.approved" : "gate.rejected", p);
	store_event_put(st, ev, NULL, 0, NULL);
	jv_free(ev);
	if (approve && note && *note)
		remember(st, cfg, gate, note);
	if (out)
		*out = gate;
	else
		jv_free(gate);
	return 0;
}

char *gatedecide_next(struct store *st, jv gate, bool approve)
{
	const char *trace = json_get_str(gate, "trace_id");
	struct buf b;
	jv lease = jv_null();

	buf_init(&b, 0);
	/* (the run at its prompt sees the row within a second: a resume now
	 * would be refused, the run being live) */
	if (trace && store_lease_get(&lease, st, trace) == 0 && json_get_bool(lease, "alive", false))
		buf_addf(&b, "run %s, waiting on it (pid %.0f on %s), %s by itself", trace,
			 json_get_num(lease, "pid", 0), json_get_str(lease, "host") ? json_get_str(lease, "host") : "?",
			 approve ? "goes on" : "stops");
	else if (approve)
		buf_addf(&b, "continue with: forge resume %s", trace ? trace : "TRACE");
	else    /* a rejection ends the run: resume only records that */
		buf_addf(&b, "this ends run %s (forge resume %s records the end; forge run the task again to "
			 "start anew)", trace ? trace : "?", trace ? trace : "TRACE");
	jv_free(lease);
	return buf_detach(&b, NULL);
}
