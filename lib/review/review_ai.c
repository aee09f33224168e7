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
	if (f->symlink)
		buf_adds(b, " (a symbolic link: its line is the path it points to)");
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

/*
 * The prompt's parts other than the diff each get at most a share of
 * max_prompt_tokens, so that what the linters found, the task, the
 * dismissed findings and the list of files not shown never crowd out the
 * diff or push the request past the window (before, only the diff was
 * fitted: 3000 linter findings made a 1.1 MB request for a 200K window,
 * and the review failed, hunt58 #2).  1/SHARE_x of the budget each.
 */
#define SHARE_FINDINGS 4
#define SHARE_TASK 8
#define SHARE_DISMISSED 8
#define SHARE_NOT_SHOWN 16
/* The fixed text of the message (headings, the closing instruction). */
#define FIXED_TOKENS 200
/* What a finding's message may take when the findings are summarised. */
#define SUMMARY_MSG_BYTES 300
/* Names shown in each count of a summary (tools, files). */
#define SUMMARY_TOP 10

/* The longest prefix of s[0..len) that costs at most max tokens, ending
 * on a UTF-8 character boundary (tokens_estimate is monotone on prefixes). */
static size_t fit_prefix(const char *s, size_t len, long max)
{
	size_t lo = 0, hi = len;

	if (max <= 0)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;

		if ((long)tokens_estimate(s, mid) <= max)
			lo = mid;
		else
			hi = mid - 1;
	}
	while (lo > 0 && lo < len && ((unsigned char)s[lo] & 0xC0) == 0x80)
		lo--;
	return lo;
}

static int severity_rank(const char *s)
{
	static const char *const order[] = { "info", "warning", "error", "critical" };

	for (int i = 3; s && i >= 0; i--)
		if (!strcmp(s, order[i]))
			return i;
	return 0;
}

/* One finding as the prompt lists it: "- file:line [rule] message"; the
 * message cut past max_msg bytes when max_msg > 0. */
static void finding_line(struct buf *b, jv f, size_t max_msg)
{
	const char *msg = json_get_str(f, "message") ? json_get_str(f, "message") : "";
	size_t n = strlen(msg);

	/* (a name holding a newline quoted, as git does) */
	buf_adds(b, "- ");
	buf_add_path_quoted(b, json_get_str(f, "file") ? json_get_str(f, "file") : "?");
	buf_addf(b, ":%d [%s] ", (int)json_get_num(f, "line", 0),
		 json_get_str(f, "rule") ? json_get_str(f, "rule") : "");
	if (max_msg > 0 && n > max_msg) {
		n = max_msg;
		while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80)
			n--;
		buf_add(b, msg, n);
		buf_adds(b, " […]\n");
	} else {
		buf_addf(b, "%s\n", msg);
	}
}

struct tally {
	const char *name;               /* borrowed from the findings */
	size_t len;
	int n;
};

static int tally_by_name(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int tally_by_count(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;

	return x->n != y->n ? (x->n < y->n) - (x->n > y->n) : tally_by_name(a, b);
}

/* t[0..n) (one entry a finding) to its distinct names with their counts,
 * the most frequent first; the number of distinct names. */
static size_t tally(struct tally *t, size_t n)
{
	size_t k = 0;

	qsort(t, n, sizeof *t, tally_by_name);
	for (size_t i = 0; i < n; i++) {
		if (k && !tally_by_name(&t[k - 1], &t[i])) {
			t[k - 1].n++;
		} else {
			t[k] = t[i];
			t[k++].n = 1;
		}
	}
	qsort(t, k, sizeof *t, tally_by_count);
	return k;
}

static void tally_line(struct buf *b, const char *label, const struct tally *t, size_t k, bool paths)
{
	buf_addf(b, "- %s:", label);
	for (size_t i = 0; i < k && i < SUMMARY_TOP; i++) {
		buf_adds(b, i ? ", " : " ");
		if (paths)
			buf_add_path_quoted(b, t[i].name);
		else
			buf_add(b, t[i].name, t[i].len);
		buf_addf(b, " %d", t[i].n);
	}
	if (k > SUMMARY_TOP)
		buf_addf(b, " (and %zu other%s)", k - SUMMARY_TOP, k - SUMMARY_TOP == 1 ? "" : "s");
	buf_addch(b, '\n');
}

static const char findings_heading[] =
	"Already reported by the linters and the security scan (do not repeat these):\n";

/*
 * The other layers' findings, appended to b: every one when they fit in
 * max tokens (or max is 0); else counted (by tool, severity, file) and the
 * most severe listed while they fit, saying how many were not listed.
 * *left_out: the findings not listed one by one.
 */
static void findings_section(struct buf *b, int *left_out, jv findings, long max)
{
	int n = jv_get_kind(findings) == JV_KIND_ARRAY ? jv_array_length(jv_copy(findings)) : 0;
	struct buf all = BUF_INIT, line = BUF_INIT;
	struct tally *tools = NULL, *sevs = NULL, *files = NULL;
	int *order = NULL;
	int listed = 0;

	*left_out = 0;
	if (n == 0)
		return;
	buf_adds(&all, findings_heading);
	jv_array_foreach(findings, i, f) {
		(void)i;
		finding_line(&all, f, 0);
		jv_free(f);
	}
	buf_addch(&all, '\n');
	if (max <= 0 || (long)tokens_estimate(all.buf, all.len) <= max) {
		buf_add(b, all.buf, all.len);
		goto out;
	}
	/* too many: counted, and the most severe listed */
	tools = xcalloc((size_t)n, sizeof *tools);
	sevs = xcalloc((size_t)n, sizeof *sevs);
	files = xcalloc((size_t)n, sizeof *files);
	order = xcalloc((size_t)n, sizeof *order);
	size_t k = 0;
	for (int rank = 3; rank >= 0; rank--) {
		jv_array_foreach(findings, i, f) {
			const char *sev = json_get_str(f, "severity");

			if (severity_rank(sev) == rank)
				order[k++] = i;
			jv_free(f);
		}
	}
	jv_array_foreach(findings, i, f) {
		const char *rule = json_get_str(f, "rule"), *file = json_get_str(f, "file");
		const char *sev = json_get_str(f, "severity");

		rule = rule && *rule ? rule : "?";
		tools[i] = (struct tally){ rule, strcspn(rule, "/"), 0 };
		sev = sev ? sev : "?";
		sevs[i] = (struct tally){ sev, strlen(sev), 0 };
		file = file ? file : "(no file)";
		files[i] = (struct tally){ file, strlen(file), 0 };
		jv_free(f);     /* (the strings stay held by findings) */
	}
	size_t nt = tally(tools, (size_t)n), ns = tally(sevs, (size_t)n), nf = tally(files, (size_t)n);
	struct buf head = BUF_INIT;

	buf_addf(&head, "Already reported by the linters and the security scan (do not repeat these): "
		 "%d findings, too many to list here. Counted:\n", n);
	tally_line(&head, "by tool", tools, nt, false);
	tally_line(&head, "by severity", sevs, ns, false);
	tally_line(&head, "files with the most", files, nf, true);
	buf_adds(&head, "The most severe of them:\n");
	long used = (long)tokens_estimate(head.buf, head.len) + 60;   /* (and the closing line) */
	buf_add(b, head.buf, head.len);
	buf_release(&head);
	for (size_t j = 0; j < k; j++) {
		jv f = jv_array_get(jv_copy(findings), order[j]);
		long cost;

		buf_reset(&line);
		finding_line(&line, f, SUMMARY_MSG_BYTES);
		jv_free(f);
		cost = (long)tokens_estimate(line.buf, line.len);
		if (used + cost > max)
			break;
		buf_add(b, line.buf, line.len);
		used += cost;
		listed++;
	}
	*left_out = n - listed;
	buf_addf(b, "(%d more finding%s not listed one by one: they are in the counts above; do not "
		 "repeat them either)\n\n", *left_out, *left_out == 1 ? " is" : "s are");
out:
	free(tools);
	free(sevs);
	free(files);
	free(order);
	buf_release(&all);
	buf_release(&line);
}

/* The task, cut to max tokens (0: whole) with a note saying so. */
static void task_section(struct buf *b, const char *task, long max)
{
	size_t len = strlen(task), n = max > 0 ? fit_prefix(task, len, max - 40) : len;

	buf_adds(b, "Task the change was made for: ");
	buf_add(b, task, n);
	if (n < len)
		buf_addf(b, " [… the task is cut here: %zu more bytes …]", len - n);
	buf_adds(b, "\n\n");
}

/* The dismissed-finding memories while they fit in max tokens (0: all). */
static void dismissed_section(struct buf *b, jv dismissed, long max)
{
	struct buf one = BUF_INIT;
	long used = 0;
	int left = 0;

	if (jv_get_kind(dismissed) != JV_KIND_ARRAY || jv_array_length(jv_copy(dismissed)) == 0)
		return;
	buf_adds(b, "Findings that humans dismissed as false positives before "
		     "(do not raise them, or anything like them, again):\n");
	jv_array_foreach(dismissed, i, m) {
		(void)i;
		if (jv_get_kind(m) == JV_KIND_STRING) {
			buf_reset(&one);
			buf_addf(&one, "- %s\n", jv_string_value(m));
			long cost = (long)tokens_estimate(one.buf, one.len);
			if (max > 0 && (left || used + cost > max)) {
				left++;
			} else {
				buf_add(b, one.buf, one.len);
				used += cost;
			}
		}
		jv_free(m);
	}
	if (left)
		buf_addf(b, "(%d more not listed, for room)\n", left);
	buf_addch(b, '\n');
	buf_release(&one);
}

/* The files not shown, named while they fit in max tokens (0: all). */
static void not_shown_section(struct buf *b, jv not_shown, long max)
{
	int n = jv_array_length(jv_copy(not_shown)), named = 0;
	long used = 0;

	if (n == 0)
		return;
	buf_adds(b, "Not shown here, too large for this review (report nothing on them):");
	jv_array_foreach(not_shown, i, p) {
		const char *path = jv_string_value(p);
		long cost = (long)tokens_estimate_str(path) + 1;

		if (max > 0 && used + cost > max - 30) {
			jv_free(p);
			break;
		}
		buf_addf(b, "%s %s", i ? "," : "", path);
		used += cost;
		named++;
		jv_free(p);
	}
	if (named < n)
		buf_addf(b, "%s and %d more file%s", named ? "," : "", n - named, n - named == 1 ? "" : "s");
	buf_adds(b, "\n\n");
}

static char *user_message(size_t *lines, struct review_ai_result *res, const struct diff *d,
			  const struct review_ai_input *in)
{
	struct buf b = BUF_INIT;
	long budget = in->max_prompt_tokens, diff_max = in->max_diff_tokens;
	char *diff;

	if (in->task && *in->task)
		task_section(&b, in->task, budget > 0 ? budget / SHARE_TASK : 0);
	findings_section(&b, &res->findings_left_out, in->findings, budget > 0 ? budget / SHARE_FINDINGS : 0);
	dismissed_section(&b, in->dismissed, budget > 0 ? budget / SHARE_DISMISSED : 0);
	if (budget > 0) {
		/* the diff: what the rest leaves, the list of files not shown
		 * kept room for; at least 1000 tokens (a window that small
		 * holds little anyway) */
		long rest = budget - (long)tokens_estimate(b.buf, b.len) - FIXED_TOKENS - budget / SHARE_NOT_SHOWN;

		if (rest < 1000)
			rest = 1000;
		if (diff_max <= 0 || rest < diff_max)
			diff_max = rest;
	}
	res->diff_tokens = diff_max > 0 ? diff_max : 0;
	diff = render(lines, d, in->findings, diff_max, &res->not_shown);
	buf_adds(&b, "The diff (new-file line numbers on added '+' and context lines):\n\n");
	buf_adds(&b, diff);
	not_shown_section(&b, res->not_shown, budget > 0 ? budget / SHARE_NOT_SHOWN : 0);
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
	msg = user_message(&lines, res, d, in);
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
