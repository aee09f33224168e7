/*
 * stage_interview.c - the first stage of `forge compile` (app/stage.h): the
 * model interviews the person who wants the product with an `ask` tool
 * ({question}) and finishes with the IntentDocument.
 *
 * Each question is answered, in this order, by:
 *   the terminal   when there is one: run by forge-supervisor, when the
 *                  supervisor has one ($FORGE_INTERACTIVE=1, its stdin and
 *                  stderr are terminals); run alone, when stderr is one.
 *                  The question is asked on /dev/tty (the state is on stdin);
 *   the answers    compile.answers (forge compile --answers FILE), in order;
 *   nobody         "(no answer: decide and say what you assumed)".
 * Every question and its answer is an event, compile.question {question,
 * answer, source: "terminal"|"answers"|"none"}.
 *
 * The intent's language is compile.language when `forge compile` was told
 * one (--lang); else the interview's becomes compile.language.
 */
#include "app/prompt.h"
#include "app/stage.h"
#include "app/stage_int.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NO_ANSWER "(no answer: decide and say what you assumed)"
#define QUESTION_MAX 2000

struct interview {
	struct phase *ph;
	jv answers;             /* compile.answers, or jv_null() */
	int next;               /* the next of answers to give */
	bool terminal;          /* ask on the terminal */
};

static jv ask_tool(void)
{
	jv q = json_set(json_set(json_set(jv_object(), "type", jv_string("string")), "minLength", jv_number(1)),
			"maxLength", jv_number(QUESTION_MAX));
	jv schema = json_set(json_set(jv_object(), "type", jv_string("object")), "additionalProperties", jv_false());
	schema = json_set(schema, "required", JV_ARRAY(jv_string("question")));
	schema = json_set(schema, "properties", json_set(jv_object(), "question", q));
	jv t = json_set(jv_object(), "name", jv_string("ask"));
	t = json_set(t, "description", jv_string("Ask the person who wants the product one question, in plain "
						 "words, and get their answer. One question a call; ask only "
						 "what changes the product."));
	return JV_ARRAY(json_set(t, "input_schema", schema));
}

/* Whether a person at a terminal answers (see the head of the file). */
static bool have_terminal(void)
{
	const char *sup = getenv("FORGE_SUPERVISOR_PID");

	if (sup && *sup) {
		const char *i = getenv("FORGE_INTERACTIVE");
		return i && strcmp(i, "1") == 0;
	}
	return isatty(STDERR_FILENO);
}

/* The answer to question: *source says where it came from.  malloc'd. */
static char *answer(struct interview *x, const char *question, const char **source)
{
	if (x->terminal) {
		char *line = NULL;
		struct prompt_opts o = { .text = "forge compile asks:", .question = question };
		enum prompt_answer a = prompt_line(&line, &o);
		if (a == PROMPT_APPROVE && line && *line) {
			*source = "terminal";
			return line;
		}
		free(line);
		if (a == PROMPT_INTERRUPTED)
			x->ph->interrupted = true;
		x->terminal = false;   /* Ctrl-D or no terminal: not asked again */
	}
	if (jv_get_kind(x->answers) == JV_KIND_ARRAY && x->next < jv_array_length(jv_copy(x->answers))) {
		jv a = jv_array_get(jv_copy(x->answers), x->next++);
		char *text = xstrdup(jv_get_kind(a) == JV_KIND_STRING ? jv_string_value(a) : "");
		jv_free(a);
		*source = "answers";
		return text;
	}
	*source = "none";
	return xstrdup(NO_ANSWER);
}

static int exec_ask(struct agent_tool_outcome *out, const char *name, jv input, void *payload)
{
	struct interview *x = payload;
	const char *question = json_get_str(input, "question"), *source = NULL;

	memset(out, 0, sizeof *out);
	out->event = jv_null();
	if (strcmp(name, "ask") != 0) {
		struct buf b = BUF_INIT;
		buf_addf(&b, "there is no tool '%s' in the interview: ask with `ask`, end with finish", name);
		out->text = buf_detach(&b, NULL);
		return 0;
	}
	if (!question || !*question || strlen(question) > QUESTION_MAX) {
		out->text = xstrdup("ask wants {\"question\": \"…\"}: one question, at most 2000 characters");
		return 0;
	}
	char *text = answer(x, question, &source);
	if (x->ph->interrupted) {
		/* Ctrl-C at the question: the loop ends (exit 130 after the state) */
		free(text);
		return forge_error("interrupted at the question");
	}
	phase_emit(x->ph, "compile.question", json_set(json_set(json_set(jv_object(), "question", jv_string(question)),
								 "answer", jv_string(text)), "source", jv_string(source)));
	out->ok = true;
	out->text = text;
	out->event = json_set(jv_object(), "source", jv_string(source));
	return 0;
}

static jv interview_env(struct phase *ph)
{
	jv c = json_get(ph->state, "compile");
	const char *idea = json_get_str(c, "idea"), *lang = json_get_str(c, "language");
	struct buf b = BUF_INIT;

	buf_addf(&b, "The idea: %s\n", idea ? idea : "");
	if (lang)
		buf_addf(&b, "The language is decided: %s (the intent's language must be it).\n", lang);
	else
		buf_addf(&b, "The language is not decided: one the intent's schema offers, from what the person "
			     "says (%s when nothing points to another).\n",
			 json_get_str(c, "language_default") ? json_get_str(c, "language_default") : "python");
	jv env = json_set(jv_object(), "idea", jv_string(b.buf));
	buf_release(&b);
	jv_free(c);
	return env;
}

static const char *interview_guard(struct phase *ph)
{
	jv c = json_get(ph->state, "compile");
	bool ok = json_get_str(c, "idea") && *json_get_str(c, "idea");

	jv_free(c);
	return ok ? NULL : "the state has no idea to compile (compile.idea)";
}

/* The intent's language and compile.language agree: the one forge compile
 * was told wins, else the interview's is the project's. */
static jv settle_language(struct phase *ph, jv intent)
{
	jv c = json_get(ph->state, "compile");
	const char *told = json_get_str(c, "language"), *said = json_get_str(intent, "language");

	if (told && (!said || strcmp(told, said) != 0)) {
		phase_emit(ph, "compile.language", json_set(json_set(jv_object(), "language", jv_string(told)),
							    "interview_said", json_str_or_null(said)));
		intent = json_set(intent, "language", jv_string(told));
	} else if (!told && said) {
		phase_set(ph, "compile", json_set(jv_copy(c), "language", jv_string(said)));
	}
	jv_free(c);
	return intent;
}

static const char *interview_run(struct phase *ph)
{
	jv c = json_get(ph->state, "compile");
	struct interview x = { .ph = ph, .answers = json_get(c, "answers"), .terminal = have_terminal() };
	jv intent;

	jv_free(c);
	const char *status = stage_run_doc(ph, "intent", interview_env(ph), ask_tool(), exec_ask, &x, &intent);
	jv_free(x.answers);
	if (state_status_of(status) != STATE_OK) {
		jv_free(intent);
		return status;
	}
	intent = settle_language(ph, intent);
	jv ents = json_get(intent, "entities"), acts = json_get(intent, "actions");
	phase_reason(ph, "intent: %s, %d entities, %d actions (%s)", json_get_str(intent, "product"),
		     jv_array_length(ents), jv_array_length(acts), json_get_str(intent, "language"));
	phase_progress(ph, "%s", ph->reason);
	phase_set(ph, "intent", intent);
	return "ok";
}

const struct phase_spec stage_interview = {
	.name = "interview", .program = "forge-stage interview", .synopsis = "[OPTIONS] < STATE",
	.description = "The first stage of forge compile: the model interviews the person who wants the "
		       "product (compile.idea), one question at a time, and writes the IntentDocument: "
		       "user types, entities and fields, relationships, actions, failure rules, screens. "
		       "Questions are answered on the terminal when there is one, else from compile.answers "
		       "in order, else the model is told to decide and say what it assumed; each is a "
		       "compile.question event. Output: the state with `intent`.",
	.extra_help = "Exit status: 0 done, 1 skipped (no compile.idea), 2 bad input, 3 breaker, 4 human "
		      "needed, 5 model or database failed, 130 interrupted at a question.\n"
		      "\nExample:\n  forge-stage interview --cassette spec.jsonl < state.json\n",
	.needs_input = true, .model_options = true, .guard = interview_guard, .run = interview_run,
};
