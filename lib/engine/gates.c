/* gates.c - human gates; see gates.h. */
#include "engine/gates.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/jqexpr.h"
#include "core/json.h"
#include "store/store.h"
#include "store/db.h"

#include <stdio.h>
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

/* ---- the automation ladder ------------------------------------------- */

static const struct ladder_point points[] = {
	{ "phase_result", "a phase's result goes on to the next phase", false },
	{ "review_changes", "a review that requests changes goes back to implement", false },
	{ "test_failures", "failing tests with a confident fix go back to implement", false },
	{ "approved_review", "an approved review goes on to the tests", true },
	{ "staging_deploy", "a deploy to staging (any environment but production)", false },
	{ "production_deploy", "a production deploy", false },
	{ "security_findings", "a review with a critical security finding", false },
	{ "architecture_approval", "a high or critical-risk plan goes on to implement", false },
	{ NULL, NULL, false },
};

static const char *const risks[] = { "low", "medium", "high", "critical" };

const struct ladder_point *ladder_points(void)
{
	return points;
}

bool ladder_is_point(const char *name)
{
	for (const struct ladder_point *p = points; name && p->key; p++)
		if (strcmp(p->key, name) == 0)
			return true;
	return false;
}

static const char *const rule_names[] = { [LADDER_AUTO] = "auto", [LADDER_ASK] = "ask", [LADDER_HUMAN] = "human" };

const char *ladder_rule_name(enum ladder_rule r)
{
	return (unsigned)r <= LADDER_HUMAN ? rule_names[r] : "human";
}

static bool known_risk(const char *risk)
{
	for (size_t i = 0; risk && i < sizeof risks / sizeof *risks; i++)
		if (strcmp(risk, risks[i]) == 0)
			return true;
	return false;
}

enum ladder_rule ladder_rule(const struct config *cfg, int level, const char *point, const char *risk)
{
	char path[128];
	const char *v;

	if (!cfg || !ladder_is_point(point) || level < 0 || level > 4)
		return LADDER_HUMAN;
	snprintf(path, sizeof path, "safety.ladder.%d.%s", level, point);
	jv at = config_get(cfg, path);
	bool by_risk = jv_get_kind(at) == JV_KIND_OBJECT;
	jv_free(at);
	if (by_risk)
		snprintf(path, sizeof path, "safety.ladder.%d.%s.%s", level, point, known_risk(risk) ? risk : "critical");
	v = config_get_str(cfg, path);
	for (int r = LADDER_AUTO; v && r <= LADDER_HUMAN; r++)
		if (strcmp(v, rule_names[r]) == 0)
			return (enum ladder_rule)r;
	return LADDER_HUMAN;
}

const char *ladder_level_name(const struct config *cfg, int level)
{
	char path[64];

	if (!cfg || level < 0 || level > 4)
		return NULL;
	snprintf(path, sizeof path, "safety.ladder.%d.name", level);
	return config_get_str(cfg, path);
}

/* A gate of the ladder: {id, ladder, phase, prompt, timeout_s}.  A human
 * has a day to answer, as for the escalations. */
static jv ladder_gate(const char *id, const char *point, const char *phase, const char *prompt)
{
	jv g = json_set(json_set(jv_object(), "id", jv_string(id)), "ladder", jv_string(point));

	g = json_set(json_set(g, "phase", jv_string(phase)), "prompt", jv_string(prompt));
	return json_set(g, "timeout_s", jv_number(86400));
}

/* "base", or "base_N" for the Nth attempt. */
static void attempt_id(char *out, size_t n, const char *base, int attempt)
{
	if (attempt > 1)
		snprintf(out, n, "%s_%d", base, attempt);
	else
		snprintf(out, n, "%s", base);
}

/* The gate for the result of `done` (ok) before `next`, or jv_null(). */
static jv result_gate(const struct config *cfg, int level, jv state, const char *done, const char *next)
{
	char id[64], base[48], prompt[256];
	jv bounces = json_get(state, "bounces"), review = json_get(state, "review"), risk = json_get(review, "risk");
	int attempt = 1 + (jv_get_kind(bounces) == JV_KIND_ARRAY ? jv_array_length(jv_copy(bounces)) : 0);
	bool is_review = strcmp(done, "review") == 0;
	const char *level_of_risk = json_get_str(risk, "level");
	jv g = jv_null();

	if (!known_risk(level_of_risk))
		level_of_risk = "medium";       /* not assessed: not low */
	if (strcmp(done, "plan") == 0)
		attempt = 1;
	enum ladder_rule rule = is_review ? ladder_rule(cfg, level, "approved_review", level_of_risk)
					  : ladder_rule(cfg, level, "phase_result", NULL);
	if (rule != LADDER_AUTO) {
		if (is_review)
			snprintf(base, sizeof base, "review_approved");
		else
			snprintf(base, sizeof base, "%s_result", done);
		attempt_id(id, sizeof id, base, attempt);
		if (is_review)
			snprintf(prompt, sizeof prompt, "The review approved the changes (risk %s): approve to go on to %s.",
				 level_of_risk, next);
		else
			snprintf(prompt, sizeof prompt, "%s finished: look at its result, then approve to go on to %s.",
				 done, next);
		g = ladder_gate(id, is_review ? "approved_review" : "phase_result", done, prompt);
		if (is_review)
			g = json_set(g, "risk", jv_string(level_of_risk));
	}
	jv_free(bounces);
	jv_free(review);
	jv_free(risk);
	return g;
}

jv gates_ladder(jv fired, const struct config *cfg, int level, jv state, const char *done,
		const char *next, bool others)
{
	jv task = json_get(state, "task");
	const char *env = json_get_str(task, "environment");
	bool asked = others;

	if (next && strcmp(next, "deploy") == 0 && !(env && strcmp(env, "production") == 0) &&
	    ladder_rule(cfg, level, "staging_deploy", NULL) != LADDER_AUTO) {
		char prompt[256];
		snprintf(prompt, sizeof prompt, "Approve deploying to %s.", env ? env : "staging");
		fired = jv_array_append(fired, ladder_gate("staging_deploy", "staging_deploy", "deploy", prompt));
		asked = true;
	}
	if (!asked && done && next) {
		jv g = result_gate(cfg, level, state, done, next);
		if (jv_get_kind(g) == JV_KIND_OBJECT)
			fired = jv_array_append(fired, g);
		else
			jv_free(g);
	}
	jv_free(task);
	return fired;
}

jv gate_for_bounce(const struct config *cfg, int level, jv bounce)
{
	const char *from = json_get_str(bounce, "from"), *to = json_get_str(bounce, "to");
	bool review = from && strcmp(from, "review") == 0, test = from && strcmp(from, "test") == 0;
	const char *point = review ? "review_changes" : "test_failures";
	const char *reason = json_get_str(bounce, "reason");
	char id[160], base[128], prompt[768];

	if (ladder_rule(cfg, level, point, NULL) == LADDER_AUTO)
		return jv_null();
	/* The node in the id, but for the phases the ladder point is named
	 * after: another node's bounce is another decision (before, an
	 * approval of lint's bounce passed check's, both test_failures). */
	if (review || test || !from)
		snprintf(base, sizeof base, "%s", point);
	else
		snprintf(base, sizeof base, "%s_%.100s", point, from);
	attempt_id(id, sizeof id, base, (int)json_get_num(bounce, "n", 1));
	if (review || test)
		snprintf(prompt, sizeof prompt, "%s: %s. Approve to send %s back to implement (the AI's proposal); "
			 "reject to end the run.", review ? "The review requests changes" : "Tests failed",
			 reason ? reason : "see the run's events", review ? "its findings" : "the failures");
	else
		snprintf(prompt, sizeof prompt, "%s. Approve to go back to %s (its bounce); reject to end the run.",
			 reason ? reason : "a node said no", to ? to : "the node its bounce names");
	return ladder_gate(id, point, review ? "review" : test || !from ? "test" : from, prompt);
}

enum gate_auto gate_auto_decision(const struct config *cfg, jv gate, int automation_level,
				  bool auto_approve_flag)
{
	const char *id = json_get_str(gate, "id");
	const char *point = json_get_str(gate, "ladder");
	enum ladder_rule rule;

	/* (a question an agent asked: a yes given in advance is no answer) */
	if (json_get_bool(gate, "in_person", false))
		return GATE_ASK;
	if (!point && ladder_is_point(id))
		point = id;
	if (point) {
		rule = ladder_rule(cfg, automation_level, point, json_get_str(gate, "risk"));
	} else {
		jv level = json_get(gate, "auto_approve_level");
		rule = jv_get_kind(level) == JV_KIND_NUMBER && automation_level >= jv_number_value(level)
		       ? LADDER_AUTO : LADDER_ASK;
		jv_free(level);
	}
	if (rule == LADDER_HUMAN)
		return GATE_ASK;
	if (auto_approve_flag)
		return GATE_AUTO_FLAG;
	return rule == LADDER_AUTO ? GATE_AUTO_LEVEL : GATE_ASK;
}

/* ---- the gates table -------------------------------------------------- */

static const char columns[] =
	"id, trace_id, gate, phase, prompt, status, decided_by, note, requested_at, expires_at, decided_at";

static jv row_json(struct db_stmt *s)
{
	static const char *const names[] = {
		"id", "trace_id", "gate", "phase", "prompt", "status", "decided_by", "note",
		"requested_at", "expires_at", "decided_at",
	};
	jv o = jv_object();

	for (int i = 0; i < 11; i++) {
		const char *v = db_col_text(s, i);
		o = json_set(o, names[i], json_str_or_null(v));
	}
	return o;
}

int gate_request(char id_out[ULID_LEN + 1], struct store *st, const char *trace_id, jv gate,
		 const char *phase)
{
	char now[TIMESTAMP_LEN + 1], expires[TIMESTAMP_LEN + 1];
	double timeout_s = json_get_num(gate, "timeout_s", 0);
	struct db_stmt *s;

	ulid_new(id_out);
	timestamp_now(now);
	timestamp_format(expires, now_ms() + (int64_t)(timeout_s * 1000));
	if (db_prepare(&s, st, "INSERT INTO gates (id, trace_id, gate, phase, prompt, requested_at, expires_at) "
			    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)") < 0)
		return -1;
	db_bind_text(s, 1, id_out);
	db_bind_text(s, 2, trace_id);
	db_bind_text(s, 3, json_get_str(gate, "id") ? json_get_str(gate, "id") : "gate");
	db_bind_text(s, 4, phase ? phase : "*");
	db_bind_text(s, 5, json_get_str(gate, "prompt") ? json_get_str(gate, "prompt") : "");
	db_bind_text(s, 6, now);
	if (timeout_s > 0)
		db_bind_text(s, 7, expires);
	return db_step_done(st, s, "gates: cannot write");
}

int gate_get(jv *out, struct store *st, const char *id)
{
	char sql[256];
	struct db_stmt *s;

	*out = jv_null();
	snprintf(sql, sizeof sql, "SELECT %s FROM gates WHERE id = ?1", columns);
	if (db_prepare(&s, st, sql) < 0)
		return -1;
	db_bind_text(s, 1, id);
	int step = db_step(s);

	if (step == DB_ROW)
		*out = row_json(s);
	db_finalize(s);
	return step == DB_ROW || step == DB_DONE ? 0 : store_fail(st, "gates: cannot read gate '%s'", id);
}

/* Whether a gate row (borrowed) is pending past its expiry at now: it
 * counts as expired whether or not expire() has recorded it yet. */
static bool past_expiry(jv row, const char *now)
{
	const char *exp = json_get_str(row, "expires_at");

	return gate_status_of(json_get_str(row, "status")) == GATE_PENDING && exp && strcmp(exp, now) < 0;
}

bool gate_past_expiry(jv row)
{
	char now[TIMESTAMP_LEN + 1];

	timestamp_now(now);
	return past_expiry(row, now);
}

int gate_decide(struct store *st, const char *id, bool approve, const char *by, const char *note)
{
	char now[TIMESTAMP_LEN + 1];
	jv row;
	struct db_stmt *s;

	if (gate_get(&row, st, id) < 0)
		return -1;
	if (jv_get_kind(row) == JV_KIND_NULL) {
		forge_error("no gate '%s'", id);
		return GATE_REFUSED;
	}
	const char *status = json_get_str(row, "status"), *exp = json_get_str(row, "expires_at");
	timestamp_now(now);
	/* past its timeout a gate counts as rejected, whether or not a
	 * supervisor has recorded it yet (before: approving it then worked,
	 * and after the record did not) */
	if (gate_status_of(status) == GATE_EXPIRED || past_expiry(row, now)) {
		forge_error("gate '%s' expired at %s without a decision (its timeout_s): it counts as "
			    "rejected; a new run asks again", id, exp ? exp : "?");
		jv_free(row);
		return GATE_REFUSED;
	}
	if (gate_status_of(status) != GATE_PENDING) {
		forge_error("gate '%s' is already %s", id, status);
		jv_free(row);
		return GATE_REFUSED;
	}
	jv_free(row);
	if (db_prepare(&s, st, "UPDATE gates SET status = ?2, decided_by = ?3, note = ?4, decided_at = ?5 "
			    "WHERE id = ?1 AND status = 'pending'") < 0)
		return -1;
	db_bind_text(s, 1, id);
	db_bind_text(s, 2, gate_status_name(approve ? GATE_APPROVED : GATE_REJECTED));
	db_bind_text(s, 3, by ? by : "human");
	if (note)
		db_bind_text(s, 4, note);
	db_bind_text(s, 5, now);
	/* Decided from another machine since gate_get(): its decision stands. */
	if (db_step(s) != DB_DONE) {
		db_finalize(s);
		return store_fail(st, "gates: cannot write");
	}
	long changed = db_changes(s);

	db_finalize(s);
	if (!changed) {
		forge_error("gate '%s' is already decided", id);
		return GATE_REFUSED;
	}
	return 0;
}

/* Mark pending gates past their expiry as expired. */
static int expire(struct store *st)
{
	char now[TIMESTAMP_LEN + 1];
	struct db_stmt *s;

	timestamp_now(now);
	if (db_prepare(&s, st, "UPDATE gates SET status = 'expired', decided_by = 'timeout', decided_at = ?1 "
			    "WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at < ?1") < 0)
		return -1;
	db_bind_text(s, 1, now);
	return db_step_done(st, s, "gates: cannot write");
}

int gate_latest(jv *out, struct store *st, const char *trace_id, const char *gate)
{
	char sql[256];
	struct db_stmt *s;

	*out = jv_null();
	if (expire(st) < 0)
		return -1;
	snprintf(sql, sizeof sql, "SELECT %s FROM gates WHERE trace_id = ?1 AND gate = ?2 "
		 "ORDER BY requested_at DESC, id DESC LIMIT 1", columns);
	if (db_prepare(&s, st, sql) < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, gate);
	if (db_step(s) == DB_ROW)
		*out = row_json(s);
	db_finalize(s);
	return 0;
}

int gate_list(jv *out, struct store *st, const char *trace_id, bool pending_only)
{
	char sql[384];
	struct db_stmt *s;
	int rc;

	*out = jv_array();
	/* A read-only database cannot record expiries: list what it holds. */
	if (!store_readonly(st) && expire(st) < 0)
		return -1;
	snprintf(sql, sizeof sql, "SELECT %s FROM gates WHERE (CAST(?1 AS TEXT) IS NULL OR trace_id = ?1) %s "
		 "ORDER BY requested_at DESC, id DESC", columns, pending_only ? "AND status = 'pending'" : "");
	if (db_prepare(&s, st, sql) < 0)
		return -1;
	if (trace_id)
		db_bind_text(s, 1, trace_id);
	char now[TIMESTAMP_LEN + 1];
	timestamp_now(now);
	while ((rc = db_step(s)) == DB_ROW) {
		jv row = row_json(s);

		/* past its expiry, as expire() records it (a read-only store
		 * cannot: it said "pending" after the timeout) */
		if (past_expiry(row, now)) {
			if (pending_only) {
				jv_free(row);
				continue;
			}
			row = json_set(json_set(row, "status", jv_string("expired")), "decided_by", jv_string("timeout"));
		}
		*out = jv_array_append(*out, row);
	}
	db_finalize(s);
	if (rc != DB_DONE)
		return store_fail(st, "gates: cannot read");
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
