/*
 * review_ai.c - layer 3: one structured model call over the numbered diff
 * (forced tool "report_findings"), with the other layers' findings and the
 * dismissed-finding memories in the prompt.  See review.h.
 */
#include "review/review.h"
#include "core/buf.h"
#include "core/tokens.h"
#include "git/diff.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "data/schema.h"

#include <stdlib.h>
#include <string.h>

static bool secret_on(jv findings, const char *file, int line)
{
	bool hit = false;

	if (jv_get_kind(findings) != JV_KIND_ARRAY)
		return false;
	jv_array_foreach(findings, i, f) {
		(void)i;
		const char *rule = json_get_str(f, "rule"), *ff = json_get_str(f, "file");

		if (rule && strncmp(rule, "secret/", 7) == 0 && ff && strcmp(ff, file) == 0 &&
		    (int)json_get_num(f, "line", 0) == line)
			hit = true;
		jv_free(f);
	}
	return hit;
}

/* Whether a line opens or closes a PEM private key ("-----BEGIN RSA
 * PRIVATE KEY-----", "-----END PRIVATE KEY-----"). */
static bool key_edge(const char *text, const char *edge)
{
	const char *at = strstr(text, edge);

	return at && strstr(at, "PRIVATE KEY-----") != NULL;
}

/* One file as review_ai_render shows it, appended to b.  Added lines with
 * a secret finding are redacted, and every line of a private key block,
 * whatever its side: the secret rule marks its BEGIN line only, and the
 * key's body went to the model. */
static void render_file(struct buf *b, const struct diff_file *f, jv findings)
{
	bool in_key = false;

	buf_addf(b, "## File: %s", f->path);
	if (f->created)
		buf_adds(b, " (new file)");
	else if (f->deleted)
		buf_adds(b, " (deleted)");
	else if (f->renamed)
		buf_addf(b, " (renamed from %s)", f->old_path);
	buf_addch(b, '\n');
	if (f->binary)
		buf_adds(b, "(binary file)\n");
	for (size_t j = 0; j < f->nhunks; j++) {
		const struct diff_hunk *h = &f->hunks[j];

		buf_addf(b, "@@ -%d,%d +%d,%d @@%s%s\n", h->old_start, h->old_count, h->new_start,
			 h->new_count, *h->section ? " " : "", h->section);
		for (size_t k = 0; k < h->nlines; k++) {
			const struct diff_line *l = &h->lines[k];
			const char *text = l->text;

			if (key_edge(text, "-----BEGIN "))
				in_key = true;
			if (in_key || (l->kind == '+' && secret_on(findings, f->path, l->new_line)))
				text = "[redacted: possible secret]";
			if (in_key && key_edge(l->text, "-----END "))
				in_key = false;
			if (l->kind == '-')
				buf_addf(b, "%6s - %s\n", "", text);
			else
				buf_addf(b, "%6d %c %s\n", l->new_line, l->kind, text);
		}
	}
	buf_addch(b, '\n');
}

/* review_ai_render(); *lines (may be NULL) gets the lines of code it
 * shows (0: only headers, of binary files and renames, or none). */
static char *render(size_t *lines, const struct diff *d, jv findings, long max_tokens, jv *not_shown)
{
	struct buf b = BUF_INIT, one = BUF_INIT;
	long used = 0;

	if (lines)
		*lines = 0;

	if (not_shown)
		*not_shown = jv_array();
	for (size_t i = 0; i < d->nfiles; i++) {
		long cost;

		buf_reset(&one);
		render_file(&one, &d->files[i], findings);
		cost = (long)tokens_estimate(one.buf, one.len);
		if (max_tokens > 0 && used + cost > max_tokens) {
			if (not_shown)
				*not_shown = jv_array_append(*not_shown, jv_string(d->files[i].path));
			continue;
		}
		buf_add(&b, one.buf, one.len);
		used += cost;
		for (size_t j = 0; lines && j < d->files[i].nhunks; j++)
			*lines += d->files[i].hunks[j].nlines;
	}
	buf_release(&one);
	return buf_detach(&b, NULL);
}

char *review_ai_render(const struct diff *d, jv findings, long max_tokens, jv *not_shown)
{
	return render(NULL, d, findings, max_tokens, not_shown);
}

/* report_findings, its input schema schemas/tools/report_findings.json:
 * what the tool declares, and what an answer is checked against before
 * its findings are taken. */
static jv tool_definition(void)
{
	return JV_ARRAY(schema_tool_spec("report_findings"));
}

static char *user_message(size_t *lines, const struct diff *d, const struct review_ai_input *in,
			  jv *not_shown)
{
	struct buf b = BUF_INIT;
	char *diff = render(lines, d, in->findings, in->max_diff_tokens, not_shown);

	if (in->task && *in->task)
		buf_addf(&b, "Task the change was made for: %s\n\n", in->task);
	if (jv_get_kind(in->findings) == JV_KIND_ARRAY && jv_array_length(jv_copy(in->findings)) > 0) {
		buf_adds(&b, "Already reported by the linters and the security scan (do not repeat these):\n");
		jv_array_foreach(in->findings, i, f) {
			(void)i;
			/* (a name holding a newline quoted, as git does) */
			buf_adds(&b, "- ");
			buf_add_path_quoted(&b, json_get_str(f, "file") ? json_get_str(f, "file") : "?");
			buf_addf(&b, ":%d [%s] %s\n",
				 (int)json_get_num(f, "line", 0), json_get_str(f, "rule") ? json_get_str(f, "rule") : "",
				 json_get_str(f, "message") ? json_get_str(f, "message") : "");
			jv_free(f);
		}
		buf_addch(&b, '\n');
	}
	if (jv_get_kind(in->dismissed) == JV_KIND_ARRAY && jv_array_length(jv_copy(in->dismissed)) > 0) {
		buf_adds(&b, "Findings that humans dismissed as false positives before "
			     "(do not raise them, or anything like them, again):\n");
		jv_array_foreach(in->dismissed, i, m) {
			(void)i;
			if (jv_get_kind(m) == JV_KIND_STRING)
				buf_addf(&b, "- %s\n", jv_string_value(m));
			jv_free(m);
		}
		buf_addch(&b, '\n');
	}
	buf_adds(&b, "The diff (new-file line numbers on added '+' and context lines):\n\n");
	buf_adds(&b, diff);
	if (jv_array_length(jv_copy(*not_shown)) > 0) {
		buf_adds(&b, "Not shown here, too large for this review (report nothing on them):");
		jv_array_foreach(*not_shown, i, p) {
			buf_addf(&b, "%s %s", i ? "," : "", jv_string_value(p));
			jv_free(p);
		}
		buf_adds(&b, "\n\n");
	}
	buf_adds(&b, "Call report_findings once with every real problem on the added lines.\n");
	free(diff);
	return buf_detach(&b, NULL);
}

static const char *one_of(const char *v, const char *const *allowed, const char *dflt)
{
	for (size_t i = 0; v && allowed[i]; i++)
		if (strcmp(v, allowed[i]) == 0)
			return v;
	return dflt;
}

/* f with its key (a string) in lower case: "Error" is the enum's "error". */
static jv lower_key(jv f, const char *key)
{
	const char *v = json_get_str(f, key);
	char low[32];
	size_t n;

	if (!v || (n = strlen(v)) >= sizeof low)
		return f;
	for (size_t i = 0; i <= n; i++)
		low[i] = v[i] >= 'A' && v[i] <= 'Z' ? (char)(v[i] - 'A' + 'a') : v[i];
	return json_set(f, key, jv_string(low));
}

/* What an answer must be: one report_findings call whose input, its
 * severities and categories in lower case, matches schemas/tools/report_findings.json.
 * 0 with *input (owned) that input; -1 with why (an unusable answer: cut,
 * refused, no call, input of another shape) and *call the call to answer
 * with the error (NULL when there is none). */
static int usable_answer(jv *input, const struct llm_tool_call **call, struct buf *why,
			 const struct llm_response *resp)
{
	const struct schema *schema;
	const struct llm_tool_call *c = NULL;

	*input = jv_invalid();
	*call = NULL;
	for (size_t i = 0; i < resp->ncalls && !c; i++)
		if (strcmp(resp->calls[i].name, "report_findings") == 0)
			c = &resp->calls[i];
	if (resp->stop == LLM_STOP_REFUSAL && !c) {
		buf_addf(why, "the model refused: %s", resp->stop_detail && *resp->stop_detail ?
			 resp->stop_detail : *resp->text ? resp->text : "(no reason given)");
		return -1;
	}
	if (!c) {
		buf_adds(why, "the model answered without calling report_findings");
		return -1;
	}
	*call = c;
	if (c->input_error) {
		buf_addf(why, "report_findings' arguments: %s", c->input_error);
		return -1;
	}
	if (!(schema = schema_get("tools/report_findings.json")))
		return -1;
	jv in = jv_copy(c->input), list = json_get(in, "findings");

	if (jv_get_kind(list) == JV_KIND_ARRAY) {
		jv norm = jv_array();

		jv_array_foreach(list, i, f) {
			(void)i;
			if (jv_get_kind(f) == JV_KIND_OBJECT)
				f = lower_key(lower_key(f, "severity"), "category");
			norm = jv_array_append(norm, f);
		}
		in = json_set(in, "findings", norm);
	}
	jv_free(list);
	if (schema_validate(schema, in) < 0) {
		buf_addf(why, "report_findings' input does not match its schema: %s", forge_last_error());
		jv_free(in);
		return -1;
	}
	*input = in;
	return 0;
}

/* usable_answer, and an answer cut at max_tokens said so: whatever is
 * wrong with it, the cut is why. */
static int usable(jv *input, const struct llm_tool_call **call, struct buf *why,
		  const struct llm_response *resp, int max_tokens)
{
	int rc = usable_answer(input, call, why, resp);

	if (rc < 0 && why->len && resp->stop == LLM_STOP_MAX_TOKENS) {
		buf_reset(why);
		buf_addf(why, "the answer was cut at llm.max_tokens (%d) before report_findings was whole; "
			 "raise llm.max_tokens or review a smaller change", max_tokens);
	} else if (rc < 0 && why->len && resp->stop == LLM_STOP_CONTEXT_WINDOW) {
		buf_reset(why);
		buf_adds(why, "the diff and the answer filled the model's context window before "
			 "report_findings was whole; review a smaller change or use a model with a "
			 "larger context window");
	}
	return rc;
}

/* The findings of a usable input that lie on the diff's hunks, appended to
 * *out (layer "ai"); the others counted in res->dropped. */
static void take_findings(jv *out, struct review_ai_result *res, const struct diff *d, jv input)
{
	static const char *const severities[] = { "info", "warning", "error", "critical", NULL };
	static const char *const categories[] = { "style", "security", "correctness", "performance", NULL };
	struct buf rule = BUF_INIT;
	jv list = json_get(input, "findings");

	jv_array_foreach(list, i, f) {
		(void)i;
		const char *file = json_get_str(f, "file"), *text = json_get_str(f, "message");
		int line = (int)json_get_num(f, "line", 0);
		const struct diff_file *df = diff_find(d, file);

		if (!df || !text || !*text || !diff_in_hunk(df, line)) {
			res->dropped++;
			jv_free(f);
			continue;
		}
		const char *cat = one_of(json_get_str(f, "category"), categories, "correctness");
		buf_reset(&rule);
		buf_addf(&rule, "ai/%s", json_get_str(f, "rule") && *json_get_str(f, "rule")
			 ? json_get_str(f, "rule") : cat);
		jv fi = review_finding("ai", one_of(json_get_str(f, "severity"), severities, "warning"),
				       cat, rule.buf, df->path, line, text);
		double conf = json_get_num(f, "confidence", 0.7);
		fi = json_set(fi, "confidence", jv_number(conf < 0 ? 0 : conf > 1 ? 1 : conf));
		fi = json_set(fi, "fixable", jv_bool(json_get_bool(f, "fixable", false)));
		if (json_get_str(f, "fix"))
			fi = json_set(fi, "fix", jv_string(json_get_str(f, "fix")));
		*out = jv_array_append(*out, fi);
		jv_free(f);
	}
	jv_free(list);
	buf_release(&rule);
}

/* The conversation once more with the unusable answer and what was wrong
 * with it, for the model to answer again. */
static void ask_again(struct llm_request *req, const struct llm_response *resp,
		      const struct llm_tool_call *call, const char *why)
{
	struct buf text = BUF_INIT;

	buf_addf(&text, "That answer cannot be used: %s.  Call report_findings again, once, with input "
		 "that matches its schema (severity one of info, warning, error, critical; line an "
		 "integer).", why);
	req->messages = jv_array_append(req->messages, llm_msg_assistant(resp));
	/* Every tool call of the answer is answered (both providers refuse a
	 * conversation with one left open): the one judged, or all of them
	 * when none was (another tool's name), with why; any other, as not
	 * taken. */
	for (size_t i = 0; i < resp->ncalls; i++) {
		const struct llm_tool_call *c = &resp->calls[i];
		bool judged = !call || c == call;

		req->messages = jv_array_append(req->messages, llm_msg_tool_result(c->id,
			judged ? text.buf : "Not taken: only one report_findings call is read.", true));
	}
	if (!resp->ncalls)
		req->messages = jv_array_append(req->messages, llm_msg_user(text.buf));
	buf_release(&text);
}

/* Attempts at a usable answer: the first, and one more told what was wrong
 * with it (not after a cut or a refusal, which would come again). */
#define REVIEW_AI_ATTEMPTS 2

int review_ai(jv *out, struct review_ai_result *res, struct llm_client *llm,
	      const struct diff *d, const struct review_ai_input *in)
{
	struct llm_request req;
	struct llm_response resp;
	struct buf why = BUF_INIT;
	char *msg;
	size_t lines;
	int rc = -1;

	*out = jv_array();
	llm_response_init(&resp);
	llm_request_init(&req);
	memset(res, 0, sizeof *res);
	msg = user_message(&lines, d, in, &res->not_shown);
	res->cost_known = true;
	if (lines == 0) {
		/* No line of code in the prompt (every file too large for the
		 * window, or binary files and renames alone): a paid call that
		 * cannot find anything is not made. */
		res->skipped = true;
		rc = 0;
		goto out;
	}
	req.system = in->system;
	req.messages = JV_ARRAY(llm_msg_user(msg));
	req.tools = tool_definition();
	req.tool_choice = LLM_TOOL_FORCED;
	req.tool_name = "report_findings";
	req.max_tokens = in->max_tokens > 0 ? in->max_tokens : 4096;
	req.temperature = in->temperature;
	for (int attempt = 1;; attempt++) {
		const struct llm_tool_call *call;
		jv input;

		llm_response_release(&resp);
		int called = llm_call(&resp, llm, &req);
		/* (a call that broke off after its usage arrived was billed for it) */
		if (called == 0 || resp.usage_seen) {
			if (!resp.cost_known)
				res->cost_known = false;
			res->cost_usd += resp.cost_known ? resp.cost_usd : 0;
			res->tokens += llm_usage_tokens(&resp.usage);
			if (in->on_call)
				in->on_call(in->on_call_arg, &resp);
		}
		if (called < 0)
			goto out;
		buf_reset(&why);
		if (usable(&input, &call, &why, &resp, req.max_tokens) == 0) {
			take_findings(out, res, d, input);
			jv_free(input);
			res->attempts = attempt;
			break;
		}
		if (!why.len)
			goto out;        /* (an error of ours, already said) */
		if (attempt == REVIEW_AI_ATTEMPTS || resp.stop == LLM_STOP_MAX_TOKENS ||
		    resp.stop == LLM_STOP_CONTEXT_WINDOW || resp.stop == LLM_STOP_REFUSAL) {
			forge_error("the model gave no usable review%s: %s",
				    attempt > 1 ? " when asked again" : "", why.buf);
			/* The provider answered: a refusal, or no report_findings
			 * at all, is the model's decision, which a human settles
			 * (as plan and implement escalate it), not a dependency
			 * that failed.  A cut or a full window is a limit. */
			res->human = !call && resp.stop != LLM_STOP_MAX_TOKENS &&
				     resp.stop != LLM_STOP_CONTEXT_WINDOW;
			goto out;
		}
		ask_again(&req, &resp, call, why.buf);
	}
	rc = 0;
out:
	llm_response_release(&resp);
	llm_request_release(&req);
	buf_release(&why);
	free(msg);
	if (rc < 0) {
		jv_free(*out);
		*out = jv_null();
	}
	return rc;
}
