/* reflect_run.c - run reflection, Loop 3; see reflect_run.h. */
#include "app/reflect_run.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/resource.h"
#include "data/config.h"
#include "data/schema.h"
#include "engine/gates.h"
#include "engine/pipeline.h"
#include "llm/llm.h"
#include "memory/memory.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

#define DIGEST_MAX 12000        /* bytes of digest the model reads */
#define EVIDENCE_MAX 5          /* findings or failures shown per bounce */
#define TOOL_ERRORS_MAX 8       /* the newest failed tool calls shown */
#define TEXT_MAX 240            /* bytes of one message in the digest */
#define TOOL_NAME "record_run_learnings"

static const struct trigger {
	const char *label, *id, *question;
} triggers[] = {
	{ "2+ bounces", "bounces", "Why are fixes not sticking?" },
	{ ">50% of budget", "budget", "Are we being inefficient?" },
	{ ">10% tool error rate", "tool_errors", "What is going wrong?" },
	{ "human override", "human_override", "What did we get wrong?" },
};
#define NTRIGGERS (sizeof triggers / sizeof triggers[0])

static const struct trigger *trigger_of(const char *label)
{
	for (size_t i = 0; label && i < NTRIGGERS; i++)
		if (strcmp(triggers[i].label, label) == 0)
			return &triggers[i];
	return NULL;
}

const char *reflect_trigger_id(const char *label)
{
	const struct trigger *t = trigger_of(label);

	return t ? t->id : NULL;
}

/* ---- the triggers ------------------------------------------------------ */

/* An escalation gate (a phase said no, or bounces ran out) that a human
 * approved.  Borrows rows. */
static bool human_passed_a_no(jv rows)
{
	bool yes = false;

	jv_array_foreach(rows, i, g) {
		const char *name = json_get_str(g, "gate"), *by = json_get_str(g, "decided_by");
		const char *status = json_get_str(g, "status");
		yes = yes || (name && strncmp(name, "escalation_", 11) == 0 && by && strcmp(by, "human") == 0 &&
			      status && gate_status_of(status) == GATE_APPROVED);
		jv_free(g);
		(void)i;
	}
	return yes;
}

int reflect_facts_read(struct reflect_facts *f, struct store *st, const char *trace)
{
	jv rows;

	memset(f, 0, sizeof *f);
	/* every call of the run: "" sorts before every timestamp */
	if (store_tool_outcomes(&f->tool_calls, &f->tool_failed, st, trace, "", jv_null()) < 0)
		return -1;
	if (gate_list(&rows, st, trace, false) < 0)
		return -1;
	if (jv_get_kind(rows) == JV_KIND_ARRAY)
		f->human_override = human_passed_a_no(rows);
	jv_free(rows);
	return 0;
}

jv reflect_triggers(jv state, const struct reflect_facts *f)
{
	jv out = jv_array(), cost = json_get(state, "cost"), budget = json_get(state, "budget");
	double usd = json_get_num(cost, "usd", 0), limit = json_get_num(budget, "usd", 0);

	if (pipeline_bounces(state, "review") + pipeline_bounces(state, "test") >= 2)
		out = jv_array_append(out, jv_string(triggers[0].label));
	if (limit > 0 && usd > 0.5 * limit)
		out = jv_array_append(out, jv_string(triggers[1].label));
	if (f->tool_calls >= REFLECT_MIN_TOOL_CALLS && f->tool_failed * 10 > f->tool_calls)
		out = jv_array_append(out, jv_string(triggers[2].label));
	if (f->human_override)
		out = jv_array_append(out, jv_string(triggers[3].label));
	jv_free(cost);
	jv_free(budget);
	return out;
}

/* Whether label is in the array reflection.KEY of state. */
static bool reflection_lists(jv state, const char *key, const char *label)
{
	jv r = json_get(state, "reflection"), fired = json_get(r, key);
	bool yes = false;

	if (jv_get_kind(fired) == JV_KIND_ARRAY) {
		jv_array_foreach(fired, i, l) {
			yes = yes || (jv_get_kind(l) == JV_KIND_STRING && strcmp(jv_string_value(l), label) == 0);
			jv_free(l);
			(void)i;
		}
	}
	jv_free(fired);
	jv_free(r);
	return yes;
}

bool reflect_fired(jv state, const char *label)
{
	return reflection_lists(state, "fired", label);
}

/* ---- the digest ---------------------------------------------------------- */

/* s cut to TEXT_MAX bytes on a character boundary, newlines as spaces. */
static void add_text(struct buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0, cut = n > TEXT_MAX ? TEXT_MAX : n;

	while (cut < n && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
		cut--;
	for (size_t i = 0; i < cut; i++)
		buf_addch(b, s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i]);
	if (cut < n)
		buf_adds(b, "…");
}

/* "rule file" of a finding or "test file" of a failure: what makes the
 * same problem the same across bounces. */
static jv evidence_key(jv e)
{
	const char *what = json_get_str(e, "rule") ? json_get_str(e, "rule") : json_get_str(e, "test");
	const char *file = json_get_str(e, "file");

	return jv_string_fmt("%s %s", what ? what : (json_get_str(e, "message") ? json_get_str(e, "message") : "?"),
			     file ? file : "");
}

static bool seen_before(jv seen, jv key)
{
	bool yes = false;

	jv_array_foreach(seen, i, k) {
		yes = yes || strcmp(jv_string_value(k), jv_string_value(key)) == 0;
		jv_free(k);
		(void)i;
	}
	return yes;
}

/* One finding or failure of a bounce's evidence. */
static void add_evidence(struct buf *b, jv e, bool again)
{
	const char *file = json_get_str(e, "file"), *msg = json_get_str(e, "message");
	const char *rule = json_get_str(e, "rule"), *test = json_get_str(e, "test");
	const char *fix = json_get_str(e, "suggested_fix"), *cause = json_get_str(e, "root_cause");
	double line = json_get_num(e, "line", -1);

	buf_addf(b, "   - %s", file ? file : "(no file)");
	if (file && line > 0)
		buf_addf(b, ":%.0f", line);
	if (json_get_str(e, "severity"))
		buf_addf(b, " %s", json_get_str(e, "severity"));
	if (rule || test)
		buf_addf(b, " [%s]", rule ? rule : test);
	buf_adds(b, ": ");
	add_text(b, msg && *msg ? msg : "failed");
	if (cause && *cause) {
		buf_adds(b, "; root cause: ");
		add_text(b, cause);
	}
	if (fix && *fix) {
		buf_adds(b, "; suggested fix: ");
		add_text(b, fix);
	}
	buf_adds(b, again ? " (AGAIN: it sent implement back before)\n" : "\n");
}

/* A loop.phase_bounce payload; *seen collects the evidence keys. */
static void add_bounce(struct buf *b, jv p, int n, jv *seen)
{
	const char *from = json_get_str(p, "from");
	jv ev = json_get(p, json_has(p, "findings") ? "findings" : "failures");
	jv keys = jv_array();

	buf_addf(b, "%d. %s sent implement back (%s bounce %.0f): ", n, from ? from : "?", from ? from : "?",
		 json_get_num(p, "n", n));
	add_text(b, json_get_str(p, "reason") ? json_get_str(p, "reason") : "(no reason)");
	buf_addch(b, '\n');
	if (jv_get_kind(ev) == JV_KIND_ARRAY) {
		jv_array_foreach(ev, i, e) {
			jv key = evidence_key(e);
			if (i < EVIDENCE_MAX)
				add_evidence(b, e, seen_before(*seen, key));
			keys = jv_array_append(keys, key);
			jv_free(e);
		}
	}
	*seen = jv_array_concat(*seen, keys);
	jv_free(ev);
}

/* The failed tool calls, the newest TOOL_ERRORS_MAX. */
static void add_tool_errors(struct buf *b, jv events, long total)
{
	int failed = 0, shown = 0;

	jv_array_foreach(events, i, e) {
		const char *type = json_get_str(e, "type");
		failed += type && strcmp(type, "tool.failed") == 0;
		jv_free(e);
		(void)i;
	}
	if (!failed)
		return;
	buf_addf(b, "\nFailed tool calls: %d of %ld", failed, total);
	if (failed > TOOL_ERRORS_MAX)
		buf_addf(b, " (the last %d)", TOOL_ERRORS_MAX);
	buf_adds(b, ":\n");
	jv_array_foreach(events, i, e) {
		const char *type = json_get_str(e, "type"), *src = json_get_str(e, "source");
		if (type && strcmp(type, "tool.failed") == 0 && shown++ >= failed - TOOL_ERRORS_MAX) {
			jv p = json_get(e, "payload");
			buf_addf(b, "- %s %s: ", src ? src : "?", json_get_str(p, "tool") ? json_get_str(p, "tool") : "tool");
			add_text(b, json_get_str(p, "error") ? json_get_str(p, "error") : "failed");
			buf_addch(b, '\n');
			jv_free(p);
		}
		jv_free(e);
		(void)i;
	}
}

/* What humans decided at gates, and the overrides. */
static void add_humans(struct buf *b, jv events)
{
	bool any = false;

	jv_array_foreach(events, i, e) {
		const char *type = json_get_str(e, "type");
		jv p = json_get(e, "payload");
		const char *by = json_get_str(p, "by");
		bool decided = type && (strcmp(type, "gate.approved") == 0 || strcmp(type, "gate.rejected") == 0) &&
			       by && strcmp(by, "human") == 0;
		bool override = type && strcmp(type, "human.override") == 0;

		if ((decided || override) && !any) {
			buf_adds(b, "\nHuman decisions:\n");
			any = true;
		}
		if (decided) {
			buf_addf(b, "- gate %s %s by a human", json_get_str(p, "gate") ? json_get_str(p, "gate") : "?",
				 strcmp(type, "gate.approved") == 0 ? "approved" : "rejected");
			if (json_get_str(p, "note")) {
				buf_adds(b, ", note: ");
				add_text(b, json_get_str(p, "note"));
			}
			buf_addch(b, '\n');
		} else if (override) {
			buf_addf(b, "- the run went on past %s's \"no\": ", json_get_str(p, "phase") ? json_get_str(p, "phase") : "?");
			add_text(b, json_get_str(p, "reason"));
			buf_addch(b, '\n');
		}
		jv_free(p);
		jv_free(e);
		(void)i;
	}
}

/* The phases run, in order, and the count of tool calls. */
static long add_phases(struct buf *b, jv events)
{
	long tools = 0;
	int n = 0;

	buf_adds(b, "Phases run: ");
	jv_array_foreach(events, i, e) {
		const char *type = json_get_str(e, "type");
		if (type && strcmp(type, "phase.exited") == 0) {
			jv p = json_get(e, "payload");
			buf_addf(b, "%s%s", n++ ? " → " : "", json_get_str(p, "phase") ? json_get_str(p, "phase") : "?");
			jv_free(p);
		}
		tools += type && (strcmp(type, "tool.executed") == 0 || strcmp(type, "tool.failed") == 0);
		jv_free(e);
		(void)i;
	}
	buf_adds(b, n ? "\n" : "(none yet)\n");
	return tools;
}

char *reflect_digest(jv state, jv events, const char *trigger)
{
	struct buf b;
	const struct trigger *t = trigger_of(trigger);
	jv task = json_get(state, "task"), cost = json_get(state, "cost"), budget = json_get(state, "budget");
	jv seen = jv_array();
	int nb = 0;

	/* borrowed: an owned reference to walk, or an empty one */
	events = jv_get_kind(events) == JV_KIND_ARRAY ? jv_copy(events) : jv_array();
	buf_init(&b, DIGEST_MAX);
	buf_addf(&b, "Trigger: %s. %s\n", trigger, t ? t->question : "");
	buf_adds(&b, "Task: ");
	add_text(&b, json_get_str(task, "description"));
	buf_addch(&b, '\n');
	long tools = add_phases(&b, events);
	buf_addf(&b, "Cost so far: $%.4f", json_get_num(cost, "usd", 0));
	if (json_get_num(budget, "usd", 0) > 0)
		buf_addf(&b, " of a $%.2f budget (%.0f%%)", json_get_num(budget, "usd", 0),
			 100 * json_get_num(cost, "usd", 0) / json_get_num(budget, "usd", 0));
	buf_addf(&b, ", %.0f tokens\n", json_get_num(cost, "tokens", 0));
	jv_array_foreach(events, i, e) {
		const char *type = json_get_str(e, "type");
		if (type && strcmp(type, "loop.phase_bounce") == 0) {
			jv p = json_get(e, "payload");
			if (!nb)
				buf_adds(&b, "\nBounces back to implement:\n");
			add_bounce(&b, p, ++nb, &seen);
			jv_free(p);
		}
		jv_free(e);
		(void)i;
	}
	add_tool_errors(&b, events, tools);
	add_humans(&b, events);
	jv_free(events);
	jv_free(seen);
	jv_free(task);
	jv_free(cost);
	jv_free(budget);
	return buf_detach(&b, NULL);
}

/* ---- the state ------------------------------------------------------------ */

/* The last n items of arr (consumed). */
static jv last_items(jv arr, int n)
{
	int len = jv_array_length(jv_copy(arr));

	return len > n ? jv_array_slice(arr, len - n, len) : arr;
}

jv reflect_record(jv state, const char *trigger, jv learnings, bool called, double usd, double tokens)
{
	jv r = json_get(state, "reflection"), cost = json_get(state, "cost"), budget = json_get(state, "budget");

	if (jv_get_kind(r) != JV_KIND_OBJECT) {
		jv_free(r);
		r = jv_object();
	}
	jv fired = json_get(r, "fired"), kept = json_get(r, "learnings");
	if (jv_get_kind(fired) != JV_KIND_ARRAY)
		fired = (jv_free(fired), jv_array());
	if (jv_get_kind(kept) != JV_KIND_ARRAY)
		kept = (jv_free(kept), jv_array());
	if (jv_get_kind(learnings) == JV_KIND_ARRAY) {
		jv_array_foreach(learnings, i, l) {
			kept = jv_array_append(kept, json_set(l, "trigger", jv_string(trigger ? trigger : "")));
			(void)i;
		}
	}
	jv_free(learnings);
	r = json_set(r, "fired", trigger ? jv_array_append(fired, jv_string(trigger)) : fired);
	r = json_set(r, "learnings", last_items(kept, REFLECT_STATE_LEARNINGS));
	r = json_set(r, "calls", jv_number(json_get_num(r, "calls", 0) + (called ? 1 : 0)));
	r = json_set(r, "cost_usd", jv_number(json_get_num(r, "cost_usd", 0) + usd));
	state = json_set(state, "reflection", r);
	if (usd > 0 || tokens > 0) {
		if (jv_get_kind(cost) != JV_KIND_OBJECT)
			cost = (jv_free(cost), jv_object());
		cost = json_set(cost, "usd", jv_number(json_get_num(cost, "usd", 0) + usd));
		cost = json_set(cost, "tokens", jv_number(json_get_num(cost, "tokens", 0) + tokens));
		state = json_set(state, "cost", jv_copy(cost));
		if (json_has(budget, "remaining_usd"))
			state = json_set(state, "budget", json_set(jv_copy(budget), "remaining_usd",
				jv_number(json_get_num(budget, "remaining_usd", 0) - usd)));
	}
	jv_free(cost);
	jv_free(budget);
	return state;
}

/* ---- a firing -------------------------------------------------------------- */

/* One firing's outcome, for reflect_record and the events. */
struct firing {
	const char *trigger;
	jv learnings;           /* [{"id","type","content","context"}] */
	jv ids;                 /* the stored memories' ids */
	bool called;
	bool stopped;           /* skipped or cut short by the run's stop: fires again on resume */
	double usd, tokens;
	char model[128];
};

static void emit(const struct reflect_ctx *c, const char *type, jv payload)
{
	c->emit(c->emit_payload, type, payload);
}

static jv base_payload(const struct reflect_ctx *c, const char *trigger)
{
	return json_set(json_set(jv_object(), "trigger", jv_string(trigger)), "phase", jv_string(c->phase));
}

static int collect(const char *line, size_t len, void *payload)
{
	jv *events = payload;

	*events = jv_array_append(*events, json_parse(line, len));
	return 0;
}

/* The forced tool: its input schema from the file, as every tool's goes
 * (schema_tool_input: no $schema, $id, title, $comment, nor the
 * description, which is the agents' record_learnings'). */
static jv record_tool(void)
{
	jv desc, schema = schema_tool_input(&desc, "tools/record_learnings.json");
	jv tool = json_set(jv_object(), "name", jv_string(TOOL_NAME));

	jv_free(desc);
	if (jv_get_kind(schema) != JV_KIND_OBJECT) {
		jv_free(schema);
		schema = json_set(jv_object(), "type", jv_string("object"));
	}
	tool = json_set(tool, "description", jv_string("Record what this pipeline run should remember: "
						       "learnings for its next attempts and for similar tasks."));
	return json_set(tool, "input_schema", schema);
}

/* The model's answer for the digest: 0 with *resp filled (owned by the
 * caller either way), -1 with a message. */
static int ask_model(struct llm_response *resp, const struct reflect_ctx *c, struct firing *fr,
		     const char *digest, int attempt)
{
	struct llm_options opt;
	struct llm_client *llm = NULL;
	struct llm_request req;
	const struct resource *prompt = resource_find("prompts/reflect_run.md");
	int rc;

	llm_response_init(resp);
	llm_options_init(&opt);
	llm_options_for(&opt, c->cfg, "reflect", true);
	opt.phase = "reflect";
	opt.fast = true;
	opt.attempt = attempt;
	opt.store = c->store;
	opt.trace_id = c->trace;
	if (llm_client_new(&llm, &opt) < 0)
		return forge_error_prefix("the fast model");
	if (llm_client_require_price(llm) < 0) {	/* (its cost would count as 0 against the budget) */
		llm_client_free(llm);
		return forge_error_prefix("the fast model");
	}
	snprintf(fr->model, sizeof fr->model, "%s", llm_client_model(llm) ? llm_client_model(llm) : "");
	llm_request_init(&req);
	req.system = prompt ? prompt->data : "";
	req.messages = jv_array_append(jv_array(), llm_msg_user(digest));
	req.tools = jv_array_append(jv_array(), record_tool());
	req.tool_choice = LLM_TOOL_FORCED;
	req.tool_name = TOOL_NAME;
	req.max_tokens = 2048;
	req.temperature = llm_temperature(c->cfg, "reflect");
	llm_response_release(resp);     /* llm_call initialises it again */
	rc = llm_call(resp, llm, &req);
	fr->called = true;
	/* the call's cost counts (reflect_once) when it was billed: then it
	 * has its llm.called, as every paid call (before: none, and the cost
	 * of each phase did not add up to the run's total) */
	if (rc == 0 || resp->cost_known)
		c->called(c->emit_payload, llm_called_payload(llm, resp), llm_called_cost(resp),
			  (long long)resp->duration_ms);
	llm_request_release(&req);
	llm_client_free(llm);
	return rc;
}

/* The answer's learnings, checked against the tool's schema: an array, or
 * jv_invalid() with a message. */
static jv checked_learnings(const struct llm_response *resp)
{
	const struct schema *s = schema_get("tools/record_learnings.json");

	if (resp->ncalls != 1 || !resp->calls[0].name || strcmp(resp->calls[0].name, TOOL_NAME) != 0) {
		forge_error("the model did not call %s", TOOL_NAME);
		return jv_invalid();
	}
	if (!s || schema_validate(s, resp->calls[0].input) < 0) {
		forge_error_prefix("the answer does not match tools/record_learnings.json");
		return jv_invalid();
	}
	return json_get(resp->calls[0].input, "learnings");
}

/* One learning (borrowed) as a memory of this run's reflection. */
static jv learning_memory(jv l, const struct reflect_ctx *c, const char *trigger)
{
	double claimed = json_get_num(l, "confidence", MEMORY_CONF_LLM);
	jv tags = json_get(l, "tags"), mem = jv_object();

	if (jv_get_kind(tags) != JV_KIND_ARRAY)
		tags = (jv_free(tags), jv_array());
	tags = jv_array_append(tags, jv_string("run_reflection"));
	tags = jv_array_append(tags, jv_string_fmt("trigger:%s", reflect_trigger_id(trigger)));
	mem = json_set(mem, "type", json_get(l, "type"));
	mem = json_set(mem, "content", json_get(l, "content"));
	mem = json_set(mem, "context", json_get(l, "context"));
	mem = json_set(mem, "tags", tags);
	/* seed 002 §9: what a model says it learned starts at 0.5 at most */
	mem = json_set(mem, "confidence", jv_number(claimed < MEMORY_CONF_LLM ? claimed : MEMORY_CONF_LLM));
	mem = json_set(mem, "source", jv_string("run_reflection"));
	return json_set(mem, "episode", json_set(json_set(json_set(jv_object(), "trace_id", jv_string(c->trace)),
							  "trigger", jv_string(trigger)), "phase", jv_string(c->phase)));
}

/* Store each learning (consumed); fills fr->ids and fr->learnings. */
static void store_learnings(struct firing *fr, const struct reflect_ctx *c, jv learnings)
{
	struct memory_options mo;
	struct memory *m = NULL;
	char id[ULID_LEN + 1];

	memory_options_init(&mo);
	memory_options_from_config(&mo, c->cfg);
	if (memory_open(&m, c->store, &mo) < 0) {
		emit(c, "run.reflection_failed", json_set(base_payload(c, fr->trigger), "error",
							  jv_string(forge_last_error())));
		jv_free(learnings);
		return;
	}
	jv_array_foreach(learnings, i, l) {
		if (memory_store(id, m, learning_memory(l, c, fr->trigger)) == 0) {
			fr->ids = jv_array_append(fr->ids, jv_string(id));
			fr->learnings = jv_array_append(fr->learnings, json_set(json_set(json_set(json_set(
				jv_object(), "id", jv_string(id)), "type", json_get(l, "type")),
				"content", json_get(l, "content")), "context", json_get(l, "context")));
			emit(c, "memory.stored", json_set(json_set(json_set(jv_object(), "id", jv_string(id)),
				"source", jv_string("run_reflection")), "trigger", jv_string(fr->trigger)));
		} else {
			emit(c, "run.reflection_failed", json_set(base_payload(c, fr->trigger), "error",
								  jv_string(forge_last_error())));
		}
		jv_free(l);
		(void)i;
	}
	jv_free(learnings);
	memory_free(m);
}

/* Why no more may be spent on the run, or NULL: its budget is spent (an
 * overspent budget leaves nothing), or its cost reached safety.cost.per_run
 * -- the breakers that end the run, which a reflection must not overrun. */
static const char *run_money_spent(char *why, size_t n, jv state, const struct reflect_ctx *c)
{
	jv budget = json_get(state, "budget"), cost = json_get(state, "cost");
	double usd = json_get_num(cost, "usd", 0), left = json_get_num(budget, "remaining_usd", 1);
	const char *r = NULL;

	if (json_has(budget, "remaining_usd") && left <= 0)
		r = (snprintf(why, n, "budget spent (the run's budget of $%.4f: $%.4f spent)",
			      json_get_num(budget, "usd", 0), usd), why);
	else if (config_has(c->cfg, "safety.cost.per_run") && usd >= config_get_num(c->cfg, "safety.cost.per_run"))
		r = (snprintf(why, n, "budget spent (safety.cost.per_run $%.2f: $%.4f spent)",
			      config_get_num(c->cfg, "safety.cost.per_run"), usd), why);
	jv_free(budget);
	jv_free(cost);
	return r;
}

/* Why this firing makes no call, or NULL. */
static const char *skip_reason(char *why, size_t n, jv state, const struct reflect_ctx *c)
{
	jv r = json_get(state, "reflection");
	double spent = json_get_num(r, "cost_usd", 0);
	double budget = config_has(c->cfg, "reflect.budget") ? config_get_num(c->cfg, "reflect.budget")
							       : REFLECT_DEFAULT_BUDGET;

	jv_free(r);
	if (!config_get_bool(c->cfg, "memory.reflect"))
		return snprintf(why, n, "memory.reflect is off"), why;
	if (spent >= budget)
		return snprintf(why, n, "the reflection budget is spent ($%.4f of reflect.budget $%.2f)", spent,
				budget), why;
	return run_money_spent(why, n, state, c);
}

/* Why the run's stop skips a firing ("the run was cancelled (forge
 * cancel)"), or NULL when the run is not being stopped. */
static const char *stop_reason(char *why, size_t n, const struct reflect_ctx *c)
{
	const char *stop = c->stopping ? c->stopping(c->emit_payload) : NULL;

	if (!stop)
		return NULL;
	snprintf(why, n, "the run was %s (%s)", stop,
		 strcmp(stop, "cancelled") == 0 ? "forge cancel" : "Ctrl-C or SIGTERM");
	return why;
}

/* A call the run's stop cut off: the firing is skipped, not failed (the
 * reflection did nothing wrong), with what the call cost. */
static void cut_short(struct firing *fr, const struct reflect_ctx *c, const struct llm_response *resp)
{
	char why[200];
	struct buf reason = BUF_INIT;

	buf_adds(&reason, stop_reason(why, sizeof why, c) ? why : "the run was interrupted (Ctrl-C or SIGTERM)");
	buf_adds(&reason, ": its call was cut short");
	jv p = json_set(base_payload(c, fr->trigger), "reason", jv_string(reason.buf));
	p = json_set(json_set(p, "cost", jv_number(fr->usd)), "model", jv_string(fr->model));
	p = json_set(p, "cut_short", jv_true());
	if (resp->usage.estimated)
		p = json_set(p, "usage_estimated", jv_true());
	emit(c, "run.reflection_skipped", p);
	buf_release(&reason);
	fr->stopped = true;
}

/* The call and what it taught; every outcome is an event. */
static void reflect_once(struct firing *fr, jv state, const struct reflect_ctx *c)
{
	struct llm_response resp;
	jv events = jv_array(), r = json_get(state, "reflection");
	int attempt = (int)json_get_num(r, "calls", 0) + 1;

	jv_free(r);
	store_events_foreach(c->store, c->trace, collect, &events);
	char *digest = reflect_digest(state, events, fr->trigger);
	jv_free(events);
	int rc = ask_model(&resp, c, fr, digest, attempt);
	free(digest);
	/* a call that failed is counted when it was billed: one cut off
	 * after its request was sent (llm_call; before: cost 0, and the run's
	 * budget understated it) */
	if (rc == 0 || resp.cost_known) {
		fr->usd = resp.cost_known ? resp.cost_usd : 0;
		fr->tokens = (double)llm_usage_tokens(&resp.usage);
	}
	jv learnings = rc == 0 ? checked_learnings(&resp) : jv_invalid();
	if (rc < 0 && resp.error == LLM_ERR_INTERRUPTED) {
		jv_free(learnings);
		cut_short(fr, c, &resp);
	} else if (!jv_is_valid(learnings)) {
		jv_free(learnings);
		emit(c, "run.reflection_failed", json_set(json_set(base_payload(c, fr->trigger), "error",
			jv_string(forge_last_error())), "cost", jv_number(fr->usd)));
	} else {
		store_learnings(fr, c, learnings);
		emit(c, "run.reflection", json_set(json_set(json_set(base_payload(c, fr->trigger), "learnings",
			jv_copy(fr->ids)), "cost", jv_number(fr->usd)), "model", jv_string(fr->model)));
	}
	llm_response_release(&resp);
}

static void fire(jv *state, const struct reflect_ctx *c, const char *trigger)
{
	struct firing fr = { .trigger = trigger, .learnings = jv_array(), .ids = jv_array() };
	char why[256];
	/* a run being stopped makes no more calls (one would fail at once as
	 * interrupted: before, a run.reflection_failed of a cancelled run) */
	const char *skip = stop_reason(why, sizeof why, c);

	fr.stopped = skip != NULL;
	if (!skip)
		skip = skip_reason(why, sizeof why, *state, c);

	if (skip)
		emit(c, "run.reflection_skipped", json_set(base_payload(c, trigger), "reason", jv_string(skip)));
	else
		reflect_once(&fr, *state, c);
	/* A firing the run's stop kept from its answer is not counted as
	 * fired: the trigger still holds when `forge resume` goes on, and the
	 * run's lesson is learnt then (before: it was lost with the Ctrl-C).
	 * What its call cost is counted either way. */
	*state = reflect_record(*state, fr.stopped ? NULL : trigger, fr.learnings, fr.called, fr.usd, fr.tokens);
	if (fr.stopped && !reflection_lists(*state, "cut_off", trigger)) {
		jv r = json_get(*state, "reflection"), cut = json_get(r, "cut_off");

		if (jv_get_kind(cut) != JV_KIND_ARRAY)
			cut = (jv_free(cut), jv_array());
		*state = json_set(*state, "reflection", json_set(r, "cut_off", jv_array_append(cut, jv_string(trigger))));
	}
	jv_free(fr.ids);
}

int reflect_run_check(jv *state, const struct reflect_ctx *c, bool end)
{
	struct reflect_facts f;
	int fired = 0;

	if (reflect_facts_read(&f, c->store, c->trace) < 0) {
		emit(c, "run.reflection_failed", json_set(json_set(jv_object(), "phase", jv_string(c->phase)),
							  "error", jv_string(forge_last_error())));
		memset(&f, 0, sizeof f);
	}
	jv holding = reflect_triggers(*state, &f);
	char why[256];
	bool stopping = stop_reason(why, sizeof why, c) != NULL;

	jv_array_foreach(holding, i, t) {
		/* (one cut off is skipped once while the run stops, fired on resume) */
		if (!reflect_fired(*state, jv_string_value(t)) &&
		    !(stopping && reflection_lists(*state, "cut_off", jv_string_value(t)))) {
			fire(state, c, jv_string_value(t));
			fired++;
		}
		jv_free(t);
		(void)i;
	}
	if (end) {
		jv r = json_get(*state, "reflection"), all = json_get(r, "fired");
		emit(c, "run.reflection", json_set(json_set(jv_object(), "triggers", jv_copy(holding)), "fired",
						   jv_get_kind(all) == JV_KIND_ARRAY ? all : (jv_free(all), jv_array())));
		jv_free(r);
	}
	jv_free(holding);
	return fired;
}
