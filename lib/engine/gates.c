/* gates.c - human gates; see gates.h. */
#include "engine/gates.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/jqexpr.h"
#include "core/json.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static bool phase_matches(const char *gate_phase, const char *done, const char *next)
{
	if (!gate_phase)
		return false;
	if (strcmp(gate_phase, "*") == 0)
		return true;
	return (done && strcmp(gate_phase, done) == 0) || (next && strcmp(gate_phase, next) == 0);
}

int gates_fired(jv *out, const struct config *cfg, jv state, const char *done, const char *next)
{
	jv gates = config_get(cfg, "gates");
	jv fired = jv_array();
	int rc = 0;

	*out = jv_null();
	if (jv_get_kind(gates) != JV_KIND_ARRAY) {
		jv_free(gates);
		*out = fired;
		return 0;
	}
	jv_array_foreach(gates, i, g) {
		const char *cond = json_get_str(g, "condition");
		bool holds = false;
		if (rc == 0 && cond && phase_matches(json_get_str(g, "phase"), done, next)) {
			if (jqexpr_test(&holds, cond, state) < 0)
				rc = forge_error_prefix("gate '%s'", json_get_str(g, "id"));
			else if (holds)
				fired = jv_array_append(fired, jv_copy(g));
		}
		jv_free(g);
	}
	jv_free(gates);
	if (rc < 0) {
		jv_free(fired);
		return -1;
	}
	*out = fired;
	return 0;
}

enum gate_auto gate_auto_decision(jv gate, int automation_level, bool auto_approve_flag)
{
	const char *id = json_get_str(gate, "id");
	jv level = json_get(gate, "auto_approve_level");
	enum gate_auto d = GATE_ASK;

	if (id && strcmp(id, "production_deploy") == 0)
		d = GATE_ASK;
	else if (auto_approve_flag)
		d = GATE_AUTO_FLAG;
	else if (jv_get_kind(level) == JV_KIND_NUMBER && automation_level >= jv_number_value(level))
		d = GATE_AUTO_LEVEL;
	jv_free(level);
	return d;
}

/* ---- the gates table -------------------------------------------------- */

static const char columns[] =
	"id, trace_id, gate, phase, prompt, status, decided_by, note, requested_at, expires_at, decided_at";

static jv row_json(sqlite3_stmt *s)
{
	static const char *const names[] = {
		"id", "trace_id", "gate", "phase", "prompt", "status", "decided_by", "note",
		"requested_at", "expires_at", "decided_at",
	};
	jv o = jv_object();

	for (int i = 0; i < 11; i++) {
		const char *v = (const char *)sqlite3_column_text(s, i);
		o = json_set(o, names[i], json_str_or_null(v));
	}
	return o;
}

int gate_request(char id_out[ULID_LEN + 1], struct store *st, const char *trace_id, jv gate,
		 const char *phase)
{
	char now[TIMESTAMP_LEN + 1], expires[TIMESTAMP_LEN + 1];
	double timeout_s = json_get_num(gate, "timeout_s", 0);
	sqlite3_stmt *s;

	ulid_new(id_out);
	timestamp_now(now);
	timestamp_format(expires, now_ms() + (int64_t)(timeout_s * 1000));
	if (store_prepare(&s, st, "INSERT INTO gates (id, trace_id, gate, phase, prompt, requested_at, expires_at) "
			    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)") < 0)
		return -1;
	store_bind_text(s, 1, id_out);
	store_bind_text(s, 2, trace_id);
	store_bind_text(s, 3, json_get_str(gate, "id") ? json_get_str(gate, "id") : "gate");
	store_bind_text(s, 4, phase ? phase : "*");
	store_bind_text(s, 5, json_get_str(gate, "prompt") ? json_get_str(gate, "prompt") : "");
	store_bind_text(s, 6, now);
	if (timeout_s > 0)
		store_bind_text(s, 7, expires);
	return store_step_done(st, s, "gates: cannot write");
}

int gate_get(jv *out, struct store *st, const char *id)
{
	char sql[256];
	sqlite3_stmt *s;

	*out = jv_null();
	snprintf(sql, sizeof sql, "SELECT %s FROM gates WHERE id = ?1", columns);
	if (store_prepare(&s, st, sql) < 0)
		return -1;
	store_bind_text(s, 1, id);
	if (sqlite3_step(s) == SQLITE_ROW)
		*out = row_json(s);
	sqlite3_finalize(s);
	return 0;
}

int gate_decide(struct store *st, const char *id, bool approve, const char *by, const char *note)
{
	char now[TIMESTAMP_LEN + 1];
	jv row;
	sqlite3_stmt *s;

	if (gate_get(&row, st, id) < 0)
		return -1;
	if (jv_get_kind(row) == JV_KIND_NULL)
		return forge_error("no gate '%s'", id);
	const char *status = json_get_str(row, "status");
	if (gate_status_of(status) != GATE_PENDING) {
		int rc = forge_error("gate '%s' is already %s", id, status);
		jv_free(row);
		return rc;
	}
	jv_free(row);
	timestamp_now(now);
	if (store_prepare(&s, st, "UPDATE gates SET status = ?2, decided_by = ?3, note = ?4, decided_at = ?5 "
			    "WHERE id = ?1 AND status = 'pending'") < 0)
		return -1;
	store_bind_text(s, 1, id);
	sqlite3_bind_text(s, 2, gate_status_name(approve ? GATE_APPROVED : GATE_REJECTED), -1, SQLITE_STATIC);
	store_bind_text(s, 3, by ? by : "human");
	if (note)
		store_bind_text(s, 4, note);
	store_bind_text(s, 5, now);
	return store_step_done(st, s, "gates: cannot write");
}

/* Mark pending gates past their expiry as expired. */
static int expire(struct store *st)
{
	char now[TIMESTAMP_LEN + 1];
	sqlite3_stmt *s;

	timestamp_now(now);
	if (store_prepare(&s, st, "UPDATE gates SET status = 'expired', decided_by = 'timeout', decided_at = ?1 "
			    "WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at < ?1") < 0)
		return -1;
	store_bind_text(s, 1, now);
	return store_step_done(st, s, "gates: cannot write");
}

int gate_latest(jv *out, struct store *st, const char *trace_id, const char *gate)
{
	char sql[256];
	sqlite3_stmt *s;

	*out = jv_null();
	if (expire(st) < 0)
		return -1;
	snprintf(sql, sizeof sql, "SELECT %s FROM gates WHERE trace_id = ?1 AND gate = ?2 "
		 "ORDER BY requested_at DESC, id DESC LIMIT 1", columns);
	if (store_prepare(&s, st, sql) < 0)
		return -1;
	store_bind_text(s, 1, trace_id);
	store_bind_text(s, 2, gate);
	if (sqlite3_step(s) == SQLITE_ROW)
		*out = row_json(s);
	sqlite3_finalize(s);
	return 0;
}

int gate_list(jv *out, struct store *st, const char *trace_id, bool pending_only)
{
	char sql[384];
	sqlite3_stmt *s;
	int rc;

	*out = jv_array();
	/* A read-only database cannot record expiries: list what it holds. */
	if (!store_readonly(st) && expire(st) < 0)
		return -1;
	snprintf(sql, sizeof sql, "SELECT %s FROM gates WHERE (?1 IS NULL OR trace_id = ?1) %s "
		 "ORDER BY requested_at DESC, id DESC", columns, pending_only ? "AND status = 'pending'" : "");
	if (store_prepare(&s, st, sql) < 0)
		return -1;
	if (trace_id)
		store_bind_text(s, 1, trace_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		*out = jv_array_append(*out, row_json(s));
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return forge_error("gates: %s", sqlite3_errmsg(store_db(st)));
	return 0;
}

static const char *const gate_status_names[] = {
	[GATE_PENDING] = "pending", [GATE_APPROVED] = "approved", [GATE_REJECTED] = "rejected",
	[GATE_EXPIRED] = "expired", [GATE_UNKNOWN] = "unknown",
};

const char *gate_status_name(enum gate_status s)
{
	return (unsigned)s <= GATE_UNKNOWN ? gate_status_names[s] : "unknown";
}

enum gate_status gate_status_of(const char *name)
{
	for (int s = GATE_PENDING; name && s < GATE_UNKNOWN; s++)
		if (strcmp(name, gate_status_names[s]) == 0)
			return (enum gate_status)s;
	return GATE_UNKNOWN;
}
