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

char *review_ai_render(const struct diff *d, jv findings, long max_tokens, jv *not_shown)
{
	struct buf b = BUF_INIT, one = BUF_INIT;
	long used = 0;

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
	}
	buf_release(&one);
	return buf_detach(&b, NULL);
}

static jv tool_definition(void)
{
	static const char schema[] =
		"{\"type\":\"object\",\"required\":[\"findings\"],\"properties\":{"
		"\"findings\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
		"\"required\":[\"file\",\"line\",\"severity\",\"category\",\"message\"],\"properties\":{"
		"\"file\":{\"type\":\"string\",\"description\":\"the path as in the diff's '## File:' line\"},"
		"\"line\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"the new-file line number shown in the diff\"},"
		"\"severity\":{\"enum\":[\"info\",\"warning\",\"error\",\"critical\"]},"
		"\"category\":{\"enum\":[\"style\",\"security\",\"correctness\",\"performance\"]},"
		"\"rule\":{\"type\":\"string\",\"description\":\"a short kebab-case name for the kind of problem\"},"
		"\"message\":{\"type\":\"string\",\"minLength\":1},"
		"\"confidence\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1},"
		"\"fixable\":{\"type\":\"boolean\"},"
		"\"fix\":{\"type\":\"string\",\"description\":\"the corrected line(s), when simple\"}}}},"
		"\"summary\":{\"type\":\"string\"}}}";
	jv t = jv_object();

	t = json_set(t, "name", jv_string("report_findings"));
	t = json_set(t, "description", jv_string("Report the problems found on the added lines of the diff "
						 "(an empty list when there are none)."));
	return JV_ARRAY(json_set(t, "input_schema", json_parse(schema, sizeof schema - 1)));
}

static char *user_message(const struct diff *d, const struct review_ai_input *in, jv *not_shown)
{
	struct buf b = BUF_INIT;
	char *diff = review_ai_render(d, in->findings, in->max_diff_tokens, not_shown);

	if (in->task && *in->task)
		buf_addf(&b, "Task the change was made for: %s\n\n", in->task);
	if (jv_get_kind(in->findings) == JV_KIND_ARRAY && jv_array_length(jv_copy(in->findings)) > 0) {
		buf_adds(&b, "Already reported by the linters and the security scan (do not repeat these):\n");
		jv_array_foreach(in->findings, i, f) {
			(void)i;
			buf_addf(&b, "- %s:%d [%s] %s\n", json_get_str(f, "file") ? json_get_str(f, "file") : "?",
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

int review_ai(jv *out, struct review_ai_result *res, struct llm_client *llm,
	      const struct diff *d, const struct review_ai_input *in)
{
	static const char *const severities[] = { "info", "warning", "error", "critical", NULL };
	static const char *const categories[] = { "style", "security", "correctness", "performance", NULL };
	struct llm_request req;
	struct llm_response resp;
	struct buf rule = BUF_INIT;
	char *msg;
	int rc = -1;

	*out = jv_array();
	memset(res, 0, sizeof *res);
	msg = user_message(d, in, &res->not_shown);
	res->cost_known = true;
	llm_request_init(&req);
	req.system = in->system;
	req.messages = JV_ARRAY(llm_msg_user(msg));
	req.tools = tool_definition();
	req.tool_choice = LLM_TOOL_FORCED;
	req.tool_name = "report_findings";
	req.max_tokens = in->max_tokens > 0 ? in->max_tokens : 4096;
	req.temperature = 0;
	if (llm_call(&resp, llm, &req) < 0)
		goto out;
	res->cost_known = resp.cost_known;
	res->cost_usd = resp.cost_known ? resp.cost_usd : 0;
	res->tokens = resp.usage.input_tokens + resp.usage.output_tokens + resp.usage.cache_read_tokens +
		      resp.usage.cache_write_tokens;
	for (size_t c = 0; c < resp.ncalls; c++) {
		if (strcmp(resp.calls[c].name, "report_findings") != 0)
			continue;
		jv list = json_get(resp.calls[c].input, "findings");
		if (jv_get_kind(list) == JV_KIND_ARRAY) {
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
		}
		jv_free(list);
		break;
	}
	rc = 0;
out:
	llm_response_release(&resp);
	llm_request_release(&req);
	buf_release(&rule);
	free(msg);
	if (rc < 0) {
		jv_free(*out);
		*out = jv_null();
	}
	return rc;
}
