/*
 * stage_spec.c - the spec stages of `forge compile` (app/stage.h): change,
 * flows, contracts, rules and schema (the interview is app/stage_interview.c).
 *
 * Each stage is a phase whose document is the model's `finish` input,
 * checked against schemas/compile/KEY.schema.json (a document that does
 * not match goes back to the model with the error, as a plan does); the
 * prompt gives the documents of the stages before it.  In edit mode
 * (compile.mode "edit") the state already holds the project's documents:
 * a stage that runs again is asked to update its own, and the rules stage
 * applies the delta (lib/compile/delta.h) without a model call.
 */
#include "app/stage.h"
#include "app/stage_int.h"
#include "app/stage_work.h"
#include "compile/delta.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/resource.h"
#include "engine/gates.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

/* ---- shared by the spec stages -------------------------------------------- */

bool stage_edit_mode(struct phase *ph)
{
	jv c = json_get(ph->state, "compile");
	const char *mode = json_get_str(c, "mode");
	bool edit = mode && strcmp(mode, "edit") == 0;

	jv_free(c);
	return edit;
}

/* env with `name`: the state's document `kind` as JSON after a heading. */
static jv add_doc(jv env, struct phase *ph, const char *name, const char *kind, const char *heading)
{
	jv doc = json_get(ph->state, kind);

	if (jv_get_kind(doc) == JV_KIND_OBJECT) {
		char *text = json_dumps(doc, false);
		struct buf b = BUF_INIT;
		buf_addf(&b, "%s\n\n%s\n", heading, text);
		env = json_set(env, name, jv_string(b.buf));
		buf_release(&b);
		free(text);
	} else {
		jv_free(doc);
	}
	return env;
}

/* What `forge compile` was asked: the idea, the language, an edit's request. */
static jv compile_part(jv env, struct phase *ph)
{
	jv c = json_get(ph->state, "compile");
	struct buf b = BUF_INIT;
	const char *idea = json_get_str(c, "idea"), *lang = json_get_str(c, "language");
	const char *request = json_get_str(c, "request");

	buf_addf(&b, "The product: %s\n", idea ? idea : "(see the documents)");
	if (lang)
		buf_addf(&b, "Language: %s\n", lang);
	if (stage_edit_mode(ph) && request)
		buf_addf(&b, "\nThis is an edit of a compiled project. The change asked for:\n%s\n", request);
	env = json_set(env, "compile", jv_string(b.buf));
	buf_release(&b);
	jv_free(c);
	return env;
}

/* The environment of a stage: the request, then the earlier documents
 * (kinds, NULL-terminated), then in edit mode the stage's own current
 * document and the delta, to update rather than redo. */
static jv stage_env(struct phase *ph, const char *const *kinds, const char *own)
{
	jv env = compile_part(jv_object(), ph);

	for (size_t i = 0; kinds[i]; i++) {
		char heading[160];
		snprintf(heading, sizeof heading, "## The %s document (an earlier stage's)", kinds[i]);
		env = add_doc(env, ph, kinds[i], kinds[i], heading);
	}
	if (own && stage_edit_mode(ph)) {
		env = add_doc(env, ph, "delta", "delta", "## The delta of this edit (rules preserved, changed, new, removed)");
		env = add_doc(env, ph, "current", own, "## The current document of this stage: update it for the edit; "
						       "keep what still holds and its ids");
	}
	return env;
}

/* No tools but finish (and ask_human, which every phase has). */
static int exec_none(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	(void)input;
	(void)payload;
	memset(out, 0, sizeof *out);
	struct buf b = BUF_INIT;
	buf_addf(&b, "there is no tool '%s' in this stage: give the document as the input of finish", name);
	out->text = buf_detach(&b, NULL);
	out->event = json_set(jv_object(), "kind", jv_string("denied"));
	return 0;
}

const char *stage_run_doc(struct phase *ph, const char *kind, jv env, jv tools, agent_exec_fn exec,
			  void *payload, jv *out_doc)
{
	struct agent_config cfg = { 0 };
	struct agent_result res;
	char *system = NULL, *prompt = NULL, name[128];
	char *root = phase_repo(ph);
	const char *status = "failed";

	*out_doc = jv_null();
	agent_result_init(&res);
	if (phase_system_prompt(&system, ph, root, ph->spec->name) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		jv_free(env);
		jv_free(tools);
		goto out;
	}
	phase_perceive(&prompt, ph, env);
	snprintf(name, sizeof name, "compile/%s.schema.json", kind);
	cfg.system_prompt = system;
	cfg.tools = jv_get_kind(tools) == JV_KIND_ARRAY ? tools : (jv_free(tools), jv_array());
	if (stage_doc_schema(&cfg.result_schema, ph, kind, NULL) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		jv_free(cfg.tools);
		goto out;
	}
	cfg.result_schema_name = name;
	status = phase_run_agent(&res, ph, &cfg, prompt, exec ? exec : exec_none, payload);
	if (state_status_of(status) == STATE_OK)
		*out_doc = jv_copy(res.result);
out:
	agent_result_release(&res);
	free(system);
	free(prompt);
	free(root);
	return status;
}

/* The guard of a stage that needs documents (NULL-terminated) in the state. */
static const char *need_docs(struct phase *ph, const char *const *kinds)
{
	static char why[200];

	for (size_t i = 0; kinds[i]; i++) {
		jv d = json_get(ph->state, kinds[i]);
		bool have = jv_get_kind(d) == JV_KIND_OBJECT;
		jv_free(d);
		if (!have) {
			snprintf(why, sizeof why, "the state has no %s document (an earlier stage makes it)", kinds[i]);
			return why;
		}
	}
	return NULL;
}

/* A document stage with the earlier documents `kinds` in its prompt. */
static const char *doc_stage(struct phase *ph, const char *kind, const char *const *kinds, const char *what)
{
	jv doc;
	const char *status = stage_run_doc(ph, kind, stage_env(ph, kinds, kind), jv_array(), NULL, NULL, &doc);

	if (state_status_of(status) != STATE_OK) {
		jv_free(doc);
		return status;
	}
	jv list = json_get(doc, what);
	int n = jv_get_kind(list) == JV_KIND_ARRAY ? jv_array_length(list) : (jv_free(list), 0);
	phase_reason(ph, "%s: %d %s", kind, n, what);
	phase_progress(ph, "%s", ph->reason);
	phase_set(ph, kind, doc);
	return "ok";
}

/* ---- flows, contracts ----------------------------------------------------- */

static const char *const flows_needs[] = { "intent", NULL };
static const char *const contracts_needs[] = { "intent", "flows", NULL };

static const char *flows_guard(struct phase *ph)
{
	return need_docs(ph, flows_needs);
}

static const char *flows_run(struct phase *ph)
{
	return doc_stage(ph, "flows", flows_needs, "flows");
}

static const char *contracts_guard(struct phase *ph)
{
	return need_docs(ph, contracts_needs);
}

static const char *contracts_run(struct phase *ph)
{
	return doc_stage(ph, "contracts", contracts_needs, "contracts");
}

/* ---- rules ---------------------------------------------------------------- */

static const char *const rules_needs[] = { "intent", "flows", "contracts", NULL };

static const char *rules_guard(struct phase *ph)
{
	if (stage_edit_mode(ph)) {
		static const char *const edit_needs[] = { "rules", "delta", NULL };
		return need_docs(ph, edit_needs);
	}
	return need_docs(ph, rules_needs);
}

/* Edit mode: the delta applied to the project's rules, no model call. */
static const char *rules_from_delta(struct phase *ph)
{
	jv rules = json_get(ph->state, "rules"), delta = json_get(ph->state, "delta"), out, done;
	const char *status = "failed";

	if (delta_apply(&out, &done, rules, delta) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		goto out;
	}
	int n = jv_array_length(json_get(out, "rules"));
	phase_emit(ph, "compile.rules_applied", json_set(json_set(jv_object(), "rules", jv_number(n)), "delta",
							   jv_copy(done)));
	phase_reason(ph, "rules: the delta applied, %d rule%s", n, n == 1 ? "" : "s");
	phase_set(ph, "rules", out);
	jv_free(done);
	status = "ok";
out:
	jv_free(rules);
	jv_free(delta);
	return status;
}

static const char *rules_run(struct phase *ph)
{
	if (stage_edit_mode(ph))
		return rules_from_delta(ph);
	return doc_stage(ph, "rules", rules_needs, "rules");
}

/* ---- schema --------------------------------------------------------------- */

static const char *const schema_needs[] = { "intent", "contracts", "rules", NULL };

static const char *schema_guard(struct phase *ph)
{
	return need_docs(ph, schema_needs);
}

/*
 * Gate 1 (the rule set's approval) is the gate before this node
 * (pipelines/compile.json: architecture_approval_schema); when it was
 * approved the rules say when and by whom.
 */
static void note_approval(struct phase *ph)
{
	const char *trace = json_get_str(ph->state, "trace_id");
	struct store *st = getenv("FORGE_SUPERVISOR_PID") ? phase_store(ph) : NULL;
	jv row = jv_null();

	if (!st || !trace || gate_latest(&row, st, trace, "architecture_approval_schema") < 0 ||
	    jv_get_kind(row) != JV_KIND_OBJECT || !json_get_str(row, "status") ||
	    strcmp(json_get_str(row, "status"), "approved") != 0) {
		jv_free(row);
		return;
	}
	jv rules = json_get(ph->state, "rules");
	if (json_get_str(row, "decided_at"))
		rules = json_set(rules, "approved_at", json_get(row, "decided_at"));
	rules = json_set(rules, "approved_by", jv_string(json_get_str(row, "decided_by") ? json_get_str(row, "decided_by")
												: "human"));
	phase_set(ph, "rules", rules);
	jv_free(row);
}

/* The delta names stage in its rerun list. */
static bool rerun_has(struct phase *ph, const char *stage)
{
	jv rerun = json_get_path(ph->state, "delta.rerun");
	bool has = false;

	if (jv_get_kind(rerun) == JV_KIND_ARRAY)
		jv_array_foreach(rerun, i, r) {
			has = has || (jv_get_kind(r) == JV_KIND_STRING && strcmp(jv_string_value(r), stage) == 0);
			jv_free(r);
		}
	jv_free(rerun);
	return has;
}

/*
 * The node runs in edit mode too, so gate 1 before it always asks about
 * the changed rules; the database is designed again only when the delta
 * says so, else the project's schema is kept as it is.
 */
static const char *schema_run(struct phase *ph)
{
	note_approval(ph);
	if (stage_edit_mode(ph) && !rerun_has(ph, "schema") && stage_has(ph, "db_schema")) {
		phase_reason(ph, "kept: the change names no entity or field the schema lacks");
		return "ok";
	}
	return doc_stage(ph, "db_schema", schema_needs, "tables");
}

/* ---- change (edit mode) --------------------------------------------------- */

static const char *const change_needs[] = { "intent", "rules", NULL };

static const char *change_guard(struct phase *ph)
{
	if (!stage_edit_mode(ph))
		return "not an edit (compile.mode is not \"edit\")";
	jv c = json_get(ph->state, "compile");
	bool asked = json_get_str(c, "request") != NULL;
	jv_free(c);
	if (!asked)
		return "the edit has no request (compile.request)";
	return need_docs(ph, change_needs);
}

static const char *change_run(struct phase *ph)
{
	static const char *const kinds[] = { "intent", "flows", "contracts", "rules", "db_schema", NULL };
	jv doc, done = jv_null(), rerun = jv_null(), why = jv_null();
	jv rules = json_get(ph->state, "rules"), applied = jv_null();
	const char *status = stage_run_doc(ph, "delta", stage_env(ph, kinds, NULL), jv_array(), NULL, NULL, &doc);

	if (state_status_of(status) != STATE_OK)
		goto out;
	jv c = json_get(ph->state, "compile");
	doc = json_set(doc, "request", json_get(c, "request"));
	jv_free(c);
	/* the ids it names must be the project's: else the edit cannot be applied */
	if (delta_apply(&applied, &done, rules, doc) < 0) {
		phase_reason(ph, "%s", forge_last_error());
		status = "failed";
		goto out;
	}
	jv contracts = json_get(ph->state, "contracts"), schema = json_get(ph->state, "db_schema");
	delta_affected(&rerun, &why, done, contracts, schema);
	jv_free(contracts);
	jv_free(schema);
	done = json_set(done, "rerun", jv_copy(rerun));
	phase_emit(ph, "compile.delta", json_set(json_set(jv_object(), "rerun", jv_copy(rerun)), "why", jv_copy(why)));
	phase_reason(ph, "delta: %d changed, %d new, %d removed; rerun %d stage%s",
		     jv_array_length(json_get(done, "change")), jv_array_length(json_get(done, "new")),
		     jv_array_length(json_get(done, "remove")), jv_array_length(jv_copy(rerun)),
		     jv_array_length(jv_copy(rerun)) == 1 ? "" : "s");
	phase_set(ph, "delta", done);
	done = jv_null();
	status = "ok";
out:
	jv_free(doc);
	jv_free(done);
	jv_free(rerun);
	jv_free(why);
	jv_free(rules);
	jv_free(applied);
	return status;
}

/* ---- the specs ------------------------------------------------------------ */

#define STAGE_HELP "Exit status: 0 done, 1 skipped (the state lacks what the stage needs), 2 bad input, " \
		   "3 breaker, 4 human needed, 5 model or database failed.\n"

const struct phase_spec stage_change = {
	.name = "change", .program = "forge-stage change", .synopsis = "[OPTIONS] < STATE",
	.description = "Edit mode of forge compile: from the request (compile.request) and the project's "
		       "documents, the DeltaRuleSet: the rules preserved, changed, new and removed, and "
		       "`rerun`, the stages that must run again (the rules always; schema when a rule names "
		       "an entity or field the database lacks; flows and contracts when it names a contract "
		       "that does not exist; tests, code, integrate and review when any rule changed). "
		       "Output: the state with `delta`.",
	.extra_help = STAGE_HELP "\nExample:\n  forge-stage change < state.json\n",
	.needs_input = true, .model_options = true, .guard = change_guard, .run = change_run,
};

const struct phase_spec stage_flows = {
	.name = "flows", .program = "forge-stage flows", .synopsis = "[OPTIONS] < STATE",
	.description = "The UserFlowTree of forge compile from the intent: every path a user takes "
		       "(trigger, steps, conditions, outcome, the flows that may follow). Output: the "
		       "state with `flows`.",
	.extra_help = STAGE_HELP "\nExample:\n  forge-stage flows < state.json\n",
	.needs_input = true, .model_options = true, .guard = flows_guard, .run = flows_run,
};

const struct phase_spec stage_contracts = {
	.name = "contracts", .program = "forge-stage contracts", .synopsis = "[OPTIONS] < STATE",
	.description = "The APIContracts of forge compile from the intent and the flows: one contract "
		       "per action (method, path, request, response, entities read and written, errors). "
		       "Output: the state with `contracts`.",
	.extra_help = STAGE_HELP "\nExample:\n  forge-stage contracts < state.json\n",
	.needs_input = true, .model_options = true, .guard = contracts_guard, .run = contracts_run,
};

const struct phase_spec stage_rules = {
	.name = "rules", .program = "forge-stage rules", .synopsis = "[OPTIONS] < STATE",
	.description = "The RuleSet of forge compile: the business rules as IF/THEN, R1, R2, …, each "
		       "naming its contract and entity; every rule becomes a test. In edit mode the "
		       "delta is applied to the project's rules instead (ids kept, new ones numbered on), "
		       "without a model call. Output: the state with `rules`.",
	.extra_help = STAGE_HELP "\nExample:\n  forge-stage rules < state.json\n",
	.needs_input = true, .model_options = true, .guard = rules_guard, .run = rules_run,
};

const struct phase_spec stage_schema = {
	.name = "schema", .program = "forge-stage schema", .synopsis = "[OPTIONS] < STATE",
	.description = "The DatabaseSchema of forge compile from the intent, contracts and rules: "
		       "tables, columns, indexes and the SQL that makes them. Output: the state with "
		       "`db_schema` (and the rules' approval by gate 1, when a run approved them).",
	.extra_help = STAGE_HELP "\nExample:\n  forge-stage schema < state.json\n",
	.needs_input = true, .model_options = true, .guard = schema_guard, .run = schema_run,
};
