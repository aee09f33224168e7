/*
 * github.c - the GitHub REST calls of forge-review --pr (github.h).
 */
#include "review/github.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "git/diff.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WAITS 5
/* Retries of a 5xx answer (lib/net/http.h's backoff, or its retry-after):
 * GitHub's 502/503/504 are mostly a moment's trouble of its front end. */
#define SERVER_ERROR_RETRIES 3
/* The markers of Forge's summary review and of one a newer review replaced
 * (that may still request changes: dismiss_blocking() looks for both). */
#define SUMMARY "<!-- forge:summary -->"
#define SUPERSEDED "<!-- forge:superseded -->"

static char *dup_range(const char *s, size_t n)
{
	return xstrndup(s, n);
}

int github_repo_from_url(char **out, const char *url)
{
	const char *p = url, *path = NULL;
	size_t n;

	*out = NULL;
	if (!url)
		return forge_error("no remote URL to take the repository from");
	if (!strncmp(p, "https://", 8) || !strncmp(p, "http://", 7) || !strncmp(p, "ssh://", 6) ||
	    !strncmp(p, "git://", 6)) {
		p = strstr(p, "://") + 3;
		path = strchr(p, '/');
	} else {
		const char *colon = strchr(p, ':'), *slash = strchr(p, '/');
		if (colon && (!slash || colon < slash))
			path = colon;	/* scp-like user@host:owner/name */
	}
	if (!path)
		return forge_error("cannot tell the GitHub repository from the remote URL '%s' "
				   "(set GITHUB_REPOSITORY=owner/name)", url);
	path++;
	n = strlen(path);
	while (n && path[n - 1] == '/')
		n--;
	if (n > 4 && !strncmp(path + n - 4, ".git", 4))
		n -= 4;
	const char *slash = memchr(path, '/', n);
	if (!slash || slash == path || slash + 1 == path + n || memchr(slash + 1, '/', (size_t)(path + n - slash - 1)))
		return forge_error("cannot tell the GitHub repository from the remote URL '%s' "
				   "(set GITHUB_REPOSITORY=owner/name)", url);
	*out = dup_range(path, n);
	return 0;
}

int github_open(struct github *gh, const char *api, const char *repo, const char *token,
		double max_wait_s)
{
	struct buf b = BUF_INIT;
	size_t n;

	memset(gh, 0, sizeof *gh);
	if (!repo || !strchr(repo, '/') || strchr(repo, '/') == repo || strchr(strchr(repo, '/') + 1, '/') ||
	    !strchr(repo, '/')[1])
		return forge_error("'%s' is not a GitHub repository (owner/name)", repo ? repo : "");
	if (!token || !*token)
		return forge_error("no GitHub token");
	if (http_client_init(&gh->http) < 0)
		return -1;
	/* rate limits are waited out here (github_call); the transport
	 * retries 5xx answers only (server_error_only) */
	gh->http.retry.max_retries = SERVER_ERROR_RETRIES;
	if (max_wait_s > 0)
		gh->http.retry.max_retry_after = max_wait_s;
	gh->http.timeout_ms = 120000;
	api = api && *api ? api : "https://api.github.com";
	n = strlen(api);
	while (n && api[n - 1] == '/')
		n--;
	gh->api = dup_range(api, n);
	gh->repo = xstrdup(repo);
	llm_secret_add(token);
	buf_addf(&b, "Authorization: Bearer %s", token);
	gh->auth = buf_detach(&b, NULL);
	gh->max_wait_s = max_wait_s;
	return 0;
}

void github_close(struct github *gh)
{
	if (gh->auth)
		memset(gh->auth, 0, strlen(gh->auth));
	free(gh->auth);
	free(gh->api);
	free(gh->repo);
	http_client_release(&gh->http);
	memset(gh, 0, sizeof *gh);
}

static void do_sleep(struct github *gh, double s)
{
	if (gh->sleep_fn) {
		gh->sleep_fn(gh->sleep_payload, s);
		return;
	}
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* The transport's retry sleeps through gh->sleep_fn when a test set it. */
static void retry_sleep(void *payload, double s)
{
	do_sleep(payload, s);
}

/* The transport's retry veto: only a 5xx is sent again by http_send();
 * a rate limit (403, 429) is github_call()'s to wait out, and a request
 * that got no answer is not sent twice (a write may have been made). */
static bool server_error_only(void *payload, const struct http_response *r)
{
	(void)payload;
	return r->status < 500;
}

/* Seconds GitHub asks to wait before trying again; -1 when r is not a rate
 * limit answer. */
static double rate_limit_wait(const struct http_response *r)
{
	const char *ra = http_header_get(r, "retry-after");
	const char *rem = http_header_get(r, "x-ratelimit-remaining");
	const char *reset = http_header_get(r, "x-ratelimit-reset");

	if (r->status != 403 && r->status != 429)
		return -1;
	if (ra && isdigit((unsigned char)*ra))
		return strtod(ra, NULL);
	if (rem && !strcmp(rem, "0") && reset && isdigit((unsigned char)*reset)) {
		double w = strtod(reset, NULL) - (double)time(NULL);
		return w < 1 ? 1 : w;
	}
	return r->status == 429 ? 60 : -1;
}

/* The rel="next" URL of a Link header, malloc'd, or NULL. */
static char *link_next(const char *link)
{
	const char *p = link;

	while (p && (p = strchr(p, '<'))) {
		const char *e = strchr(p, '>');
		if (!e)
			break;
		const char *semi = e + 1, *comma = strchr(semi, ',');
		const char *rel = strstr(semi, "rel=\"next\"");
		if (rel && (!comma || rel < comma))
			return dup_range(p + 1, (size_t)(e - p - 1));
		p = comma;
	}
	return NULL;
}

/* GitHub's reasons for a 422 (the answer's "errors": strings, or objects
 * with message, else resource/field/code) after ": ", "; "-joined: the
 * "message" alone is "Unprocessable Entity" (hunt37 #6).  Borrows body. */
static void add_errors(struct buf *why, jv body)
{
	jv errs = json_get(body, "errors");
	const char *sep = ": ";

	if (jv_get_kind(errs) == JV_KIND_ARRAY) {
		jv_array_foreach(errs, i, e) {
			(void)i;
			if (jv_get_kind(e) == JV_KIND_STRING) {
				buf_addf(why, "%s%s", sep, jv_string_value(e));
			} else if (json_get_str(e, "message")) {
				buf_addf(why, "%s%s", sep, json_get_str(e, "message"));
			} else if (jv_get_kind(e) == JV_KIND_OBJECT) {
				const char *res = json_get_str(e, "resource"), *field = json_get_str(e, "field");
				const char *code = json_get_str(e, "code");
				buf_addf(why, "%s%s%s%s%s%s", sep, res ? res : "", res && field ? "." : "",
					 field ? field : "", res || field ? " " : "", code ? code : "invalid");
			} else {
				jv_free(e);
				continue;
			}
			sep = "; ";
			jv_free(e);
		}
	}
	jv_free(errs);
}

/* A failed request's message: the method, the path (the whole URL for a
 * 5xx: which server failed), the status and GitHub's reasons; for a 5xx
 * also how many attempts were made, or why it was not retried. */
static int http_fail(const struct github *gh, const char *method, const char *path, const char *url,
		     const struct http_response *r)
{
	jv body = json_parse(r->body.buf ? r->body.buf : "", r->body.len);
	const char *msg = jv_is_valid(body) ? json_get_str(body, "message") : NULL;
	struct buf why = BUF_INIT, tries = BUF_INIT;
	char *text, *shown = NULL;
	int rc;

	if (r->status >= 500) {
		shown = secret_url_shown(url);
		path = shown;
		if (r->retry_after_refused > 0)
			buf_addf(&tries, " (not retried: GitHub asked to wait %.0f s, more than "
				 "review.github.max_wait_s (%.0f s))", r->retry_after_refused, gh->max_wait_s);
		else
			buf_addf(&tries, " (%d attempt%s)", r->retries + 1, r->retries ? "s" : "");
	}
	if (r->status == 0)
		rc = forge_error("GitHub %s %s: %s", method, path, r->error[0] ? r->error : "no answer");
	else {
		buf_adds(&why, msg ? msg : r->body.buf ? r->body.buf : "");
		if (msg)
			add_errors(&why, body);
		text = llm_redact(buf_detach(&why, NULL));
		if (strlen(text) > 600)
			text[600] = '\0';
		rc = forge_error("GitHub %s %s: HTTP %ld%s%s%s", method, path, r->status, *text ? ": " : "", text,
				 tries.len ? tries.buf : "");
		free(text);
	}
	buf_release(&tries);
	free(shown);
	jv_free(body);
	return rc;
}

int github_call(jv *out, char **next, struct github *gh, const char *method, const char *path,
		jv body)
{
	struct buf url = BUF_INIT;
	struct http_response r;
	char *text = NULL;
	const char *headers[] = { gh->auth, "Accept: application/vnd.github+json",
				  "X-GitHub-Api-Version: 2022-11-28", "User-Agent: forge-review",
				  "Content-Type: application/json", NULL };
	struct http_request req = { .method = method, .headers = headers, .no_retry = server_error_only };
	int rc = -1, waits = 0;

	*out = jv_null();
	if (next)
		*next = NULL;
	http_response_init(&r);
	if (!strncmp(path, "http://", 7) || !strncmp(path, "https://", 8))
		buf_adds(&url, path);
	else
		buf_addf(&url, "%s%s", gh->api, path);
	req.url = url.buf;
	if (jv_is_valid(body)) {
		text = json_dumps(body, false);
		req.body = text;
		req.body_len = strlen(text);
	} else {
		jv_free(body);
	}
	gh->rate_limited = false;
	gh->http.retry.sleep_fn = gh->sleep_fn ? retry_sleep : NULL;
	gh->http.retry.payload = gh;
	for (;;) {
		http_response_release(&r);
		int sent = http_send(&r, &gh->http, &req);
		gh->requests += 1 + r.retries;
		gh->status = r.status;
		if (sent == 0)
			break;
		double w = rate_limit_wait(&r);
		if (w < 0) {
			http_fail(gh, method, path, url.buf, &r);
			goto out;
		}
		if (w > gh->max_wait_s || waits >= MAX_WAITS) {
			gh->rate_limited = true;
			forge_error("GitHub rate limit on %s %s: asked to wait %.0f s, more than "
				    "review.github.max_wait_s (%.0f s)%s", method, path, w, gh->max_wait_s,
				    waits >= MAX_WAITS ? " or too often" : "");
			goto out;
		}
		waits++;
		gh->waits++;
		do_sleep(gh, w);
	}
	if (r.body.len) {
		jv v = json_parse(r.body.buf, r.body.len);
		if (!jv_is_valid(v)) {
			jv_free(v);
			forge_error("GitHub %s %s: the answer is not JSON", method, path);
			goto out;
		}
		*out = v;
	}
	if (next && http_header_get(&r, "link"))
		*next = link_next(http_header_get(&r, "link"));
	rc = 0;
out:
	http_response_release(&r);
	buf_release(&url);
	free(text);
	return rc;
}

int github_list(jv *out, struct github *gh, const char *path)
{
	struct buf first = BUF_INIT;
	char *url, *next = NULL;
	int pages = 0, rc = -1;

	*out = jv_array();
	buf_addf(&first, "%s%cper_page=100", path, strchr(path, '?') ? '&' : '?');
	url = buf_detach(&first, NULL);
	while (url && pages++ < 100) {
		jv page;
		if (github_call(&page, &next, gh, "GET", url, jv_invalid()) < 0)
			goto out;
		if (jv_get_kind(page) != JV_KIND_ARRAY) {
			jv_free(page);
			forge_error("GitHub GET %s: not a list", path);
			goto out;
		}
		jv_array_foreach(page, i, x) {
			(void)i;
			*out = jv_array_append(*out, x);
		}
		jv_free(page);
		free(url);
		url = next;
		next = NULL;
	}
	rc = 0;
out:
	free(url);
	free(next);
	return rc;
}

/* ---- the review ---------------------------------------------------------- */

/* The fingerprint a Forge marker in body names (malloc'd), or NULL. */
static char *marker_fp(const char *body, const char *kind)
{
	char tag[32];
	const char *p, *e;

	if (!body)
		return NULL;
	snprintf(tag, sizeof tag, "<!-- forge:%s=", kind);
	p = strstr(body, tag);
	if (!p)
		return NULL;
	p += strlen(tag);
	e = strstr(p, " -->");
	return e ? dup_range(p, (size_t)(e - p)) : NULL;
}

char *github_comment_body(jv f)
{
	struct buf b = BUF_INIT;
	const char *fix = json_get_str(f, "fix"), *rule = json_get_str(f, "rule");

	buf_addf(&b, "**%s** %s", json_get_str(f, "severity") ? json_get_str(f, "severity") : "info",
		 json_get_str(f, "message") ? json_get_str(f, "message") : "");
	if (rule)
		buf_addf(&b, " `[%s]`", rule);
	if (fix && *fix && json_get_bool(f, "fixable", false)) {
		size_t n = strlen(fix);
		buf_addf(&b, "\n\n```suggestion\n%s%s```", fix, fix[n - 1] == '\n' ? "" : "\n");
	}
	buf_addf(&b, "\n\n<!-- forge:fp=%s -->", json_get_str(f, "fingerprint") ? json_get_str(f, "fingerprint") : "");
	return buf_detach(&b, NULL);
}

static bool inline_place(const struct diff *d, jv f)
{
	const char *file = json_get_str(f, "file");
	int line = (int)json_get_num(f, "line", 0);
	const struct diff_file *df = file && d ? diff_find(d, file) : NULL;

	return df && line > 0 && diff_new_line(df, line) != NULL;
}

struct publish {
	struct github *gh;
	const struct github_review *rv;
	jv report;
	jv requests;
	struct buf outside;             /* findings not on a diff line, for the summary */
};

static void count(struct publish *p, const char *key)
{
	p->report = json_set(p->report, key, jv_number(json_get_num(p->report, key, 0) + 1));
}

/* A write request: sent, or only recorded with dry_run.  *out (may be
 * NULL) gets the answer (null when not sent). */
static int write_req(jv *out, struct publish *p, const char *method, const char *path, jv body)
{
	jv rec = json_set(json_set(jv_object(), "method", jv_string(method)), "path", jv_string(path));
	jv ans = jv_null();
	int rc = 0;

	p->requests = jv_array_append(p->requests, json_set(rec, "body", jv_copy(body)));
	if (p->rv->dry_run)
		jv_free(body);
	else
		rc = github_call(&ans, NULL, p->gh, method, path, body);
	if (out)
		*out = ans;
	else
		jv_free(ans);
	return rc;
}

/* Whether comment c (borrowed; fingerprint cfp) has Forge's "Resolved"
 * reply among old (borrowed): its thread is closed, and a finding that
 * comes back gets a new comment instead of being "kept" under the reply
 * that says it is gone (hunt37 #2). */
static bool resolved(jv old, jv c, const char *cfp)
{
	double id = json_get_num(c, "id", 0);
	bool found = false;

	jv_array_foreach(old, k, r) {
		(void)k;
		if (!found && json_get_num(r, "in_reply_to_id", -1) == id) {
			char *rfp = marker_fp(json_get_str(r, "body"), "resolved");
			found = rfp && !strcmp(rfp, cfp);
			free(rfp);
		}
		jv_free(r);
	}
	return found;
}

/* Edit, keep or resolve Forge's earlier comments; *fresh gets the findings
 * that need a new comment. */
static int sync_comments(jv *fresh, struct publish *p, jv findings)
{
	struct buf path = BUF_INIT;
	jv old = jv_null();
	int rc = -1;
	/* two findings of one rule on equal lines of a file share a fingerprint:
	 * each earlier comment answers for one finding only */
	jv used = jv_object();

	*fresh = jv_array();
	buf_addf(&path, "/repos/%s/pulls/%d/comments", p->gh->repo, p->rv->pr);
	if (github_list(&old, p->gh, path.buf) < 0)
		goto out;
	jv_array_foreach(findings, i, f) {
		(void)i;
		char *body = github_comment_body(f);
		const char *fp = json_get_str(f, "fingerprint");
		bool found = false;
		jv_array_foreach(old, j, c) {
			(void)j;
			char *cfp = marker_fp(json_get_str(c, "body"), "fp");
			char cid[32];
			snprintf(cid, sizeof cid, "%.0f", json_get_num(c, "id", 0));
			if (!found && cfp && fp && !strcmp(cfp, fp) && !json_has(used, cid) &&
			    !resolved(old, c, cfp)) {
				found = true;
				used = json_set(used, cid, jv_true());
				if (!strcmp(json_get_str(c, "body") ? json_get_str(c, "body") : "", body)) {
					count(p, "kept");
				} else {
					struct buf e = BUF_INIT;
					buf_addf(&e, "/repos/%s/pulls/comments/%.0f", p->gh->repo,
						 json_get_num(c, "id", 0));
					int w = write_req(NULL, p, "PATCH", e.buf,
							  json_set(jv_object(), "body", jv_string(body)));
					buf_release(&e);
					if (w < 0) {
						free(cfp);
						free(body);
						jv_free(c);
						jv_free(f);
						goto out;
					}
					count(p, "updated");
				}
			}
			free(cfp);
			jv_free(c);
		}
		if (!found)
			*fresh = jv_array_append(*fresh, jv_copy(f));
		free(body);
		jv_free(f);
	}
	/* the comments no finding matched (its finding is gone, or one of two
	 * that shared its fingerprint is): one reply each, unless resolved */
	jv_array_foreach(old, j, c) {
		(void)j;
		char *cfp = marker_fp(json_get_str(c, "body"), "fp");
		char cid[32];

		snprintf(cid, sizeof cid, "%.0f", json_get_num(c, "id", 0));
		if (cfp && !json_has(used, cid) && !resolved(old, c, cfp)) {
			struct buf e = BUF_INIT, b = BUF_INIT;
			buf_addf(&e, "/repos/%s/pulls/%d/comments/%.0f/replies", p->gh->repo, p->rv->pr,
				 json_get_num(c, "id", 0));
			buf_addf(&b, "Resolved: Forge no longer finds this.\n\n<!-- forge:resolved=%s -->", cfp);
			int w = write_req(NULL, p, "POST", e.buf, json_set(jv_object(), "body", jv_string(b.buf)));
			buf_release(&e);
			buf_release(&b);
			if (w < 0) {
				free(cfp);
				jv_free(c);
				goto out;
			}
			count(p, "resolved");
		}
		free(cfp);
		jv_free(c);
	}
	rc = 0;
out:
	jv_free(old);
	jv_free(used);
	buf_release(&path);
	return rc;
}

static const char *state_of(const char *event)
{
	return !strcmp(event, "APPROVE") ? "APPROVED" : !strcmp(event, "REQUEST_CHANGES") ? "CHANGES_REQUESTED" :
	       "COMMENTED";
}

/* Forge's newest summary review among the pull request's reviews, or
 * null; *blocking: the ids of Forge's reviews (summaries and superseded
 * ones) whose state is CHANGES_REQUESTED. */
static int find_summary(jv *out, jv *blocking, struct publish *p)
{
	struct buf path = BUF_INIT;
	jv all;
	int rc;

	*out = jv_null();
	*blocking = jv_array();
	buf_addf(&path, "/repos/%s/pulls/%d/reviews", p->gh->repo, p->rv->pr);
	rc = github_list(&all, p->gh, path.buf);
	if (rc == 0) {
		jv_array_foreach(all, i, r) {
			(void)i;
			const char *b = json_get_str(r, "body"), *state = json_get_str(r, "state");
			bool ours = b && (strstr(b, SUMMARY) || strstr(b, SUPERSEDED));
			if (ours && state && !strcmp(state, "CHANGES_REQUESTED"))
				*blocking = jv_array_append(*blocking, json_get(r, "id"));
			if (b && strstr(b, SUMMARY)) {
				jv_free(*out);
				*out = r;
			} else {
				jv_free(r);
			}
		}
	}
	jv_free(all);
	buf_release(&path);
	return rc;
}

/*
 * Dismiss each review of ids (borrowed): this run no longer requests
 * changes.  403 and 422 (not a rate limit) are listed in
 * report.dismiss_failed and leave the publish going; any other failure is
 * -1.
 */
static int dismiss_blocking(struct publish *p, jv ids)
{
	struct buf path = BUF_INIT, msg = BUF_INIT;
	jv dismissed = jv_array(), failed = jv_array();
	int rc = 0;

	buf_addf(&msg, "Resolved by %s: Forge's review of that commit no longer requests changes.", p->rv->commit);
	jv_array_foreach(ids, i, id) {
		(void)i;
		buf_reset(&path);
		buf_addf(&path, "/repos/%s/pulls/%d/reviews/%.0f/dismissals", p->gh->repo, p->rv->pr,
			 jv_number_value(id));
		jv body = json_set(json_set(jv_object(), "message", jv_string(msg.buf)), "event", jv_string("DISMISS"));
		if (write_req(NULL, p, "PUT", path.buf, body) == 0) {
			dismissed = jv_array_append(dismissed, id);
			continue;
		}
		if (p->gh->rate_limited || (p->gh->status != 403 && p->gh->status != 422)) {
			jv_free(id);
			rc = -1;
			break;
		}
		jv f = json_set(jv_object(), "review_id", id);
		f = json_set(f, "status", jv_number((double)p->gh->status));
		failed = jv_array_append(failed, json_set(f, "error", jv_string(forge_last_error())));
	}
	p->report = json_set(p->report, "dismissed", dismissed);
	p->report = json_set(p->report, "dismiss_failed", failed);
	buf_release(&path);
	buf_release(&msg);
	return rc;
}

/* A finding listed in the summary instead of inline (borrowed). */
static void add_outside(struct publish *p, jv f)
{
	const char *file = json_get_str(f, "file");

	buf_addf(&p->outside, "- **%s** %s%s%s%s (%s)\n", json_get_str(f, "severity"),
		 file ? "`" : "", file ? file : "", file ? "`: " : "", json_get_str(f, "message"),
		 json_get_str(f, "rule") ? json_get_str(f, "rule") : "");
	count(p, "outside");
}

static char *summary_body(struct publish *p)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "### Forge review\n\n%s\n", p->rv->summary ? p->rv->summary : "");
	if (p->outside.len)
		buf_addf(&b, "\nFindings outside the diff's lines:\n\n%s", p->outside.buf);
	buf_adds(&b, "\n" SUMMARY);
	return buf_detach(&b, NULL);
}

int github_review_publish(jv *report, struct github *gh, const struct github_review *rv)
{
	struct publish p = { gh, rv, jv_object(), jv_array(), BUF_INIT };
	jv placed = jv_array(), fresh = jv_null(), prev = jv_null(), blocking = jv_null(), comments = jv_array();
	char *body = NULL;
	int rc = -1;

	*report = jv_null();
	static const char *const keys[] = { "posted", "updated", "kept", "resolved", "outside" };
	for (size_t i = 0; i < 5; i++)
		p.report = json_set(p.report, keys[i], jv_number(0));
	p.report = json_set(json_set(p.report, "dismissed", jv_array()), "dismiss_failed", jv_array());
	jv_array_foreach(rv->findings, i, f) {
		(void)i;
		if (inline_place(rv->diff, f)) {
			placed = jv_array_append(placed, f);
			continue;
		}
		add_outside(&p, f);
		jv_free(f);
	}
	if (sync_comments(&fresh, &p, placed) < 0 || find_summary(&prev, &blocking, &p) < 0)
		goto out;
	jv_array_foreach(fresh, i, f) {
		(void)i;
		char *cb = github_comment_body(f);
		jv c = json_set(jv_object(), "path", jv_string(json_get_str(f, "file")));
		c = json_set(c, "line", jv_number(json_get_num(f, "line", 1)));
		c = json_set(c, "side", jv_string("RIGHT"));
		comments = jv_array_append(comments, json_set(c, "body", jv_string(cb)));
		free(cb);
		count(&p, "posted");
		jv_free(f);
	}
	body = summary_body(&p);
	const char *pstate = json_get_str(prev, "state");
	bool new_review = jv_array_length(jv_copy(comments)) > 0 || !pstate ||
			  strcmp(pstate, state_of(rv->event)) != 0;
	struct buf path = BUF_INIT;
	jv ans = jv_null();
	if (new_review) {
		jv req = json_set(jv_object(), "commit_id", jv_string(rv->commit));
		req = json_set(req, "body", jv_string(body));
		req = json_set(req, "event", jv_string(rv->event));
		req = json_set(req, "comments", jv_copy(comments));
		buf_addf(&path, "/repos/%s/pulls/%d/reviews", gh->repo, rv->pr);
		rc = write_req(&ans, &p, "POST", path.buf, jv_copy(req));
		if (rc < 0 && gh->status == 422 && !gh->rate_limited && jv_array_length(jv_copy(comments)) > 0) {
			/* GitHub could not place a new comment (a line its diff
			 * does not show) and refused the whole review: the new
			 * ones go to the summary instead of losing every one */
			p.report = json_set(p.report, "inline_refused", jv_string(forge_last_error()));
			jv_array_foreach(fresh, i, f) {
				(void)i;
				add_outside(&p, f);
				jv_free(f);
			}
			p.report = json_set(p.report, "posted", jv_number(0));
			free(body);
			body = summary_body(&p);
			req = json_set(json_set(req, "body", jv_string(body)), "comments", jv_array());
			jv_free(ans);
			rc = write_req(&ans, &p, "POST", path.buf, jv_copy(req));
		}
		jv_free(req);
		if (rc == 0 && pstate) {
			/* the earlier summary says where the current one is (the
			 * new review's id, in ans, is what this run reports) */
			buf_reset(&path);
			buf_addf(&path, "/repos/%s/pulls/%d/reviews/%.0f", gh->repo, rv->pr, json_get_num(prev, "id", 0));
			jv old = json_set(jv_object(), "body", jv_string("Superseded by a newer Forge review.\n\n" SUPERSEDED));
			if (write_req(NULL, &p, "PUT", path.buf, old) < 0)
				rc = -1;
		}
	} else {
		buf_addf(&path, "/repos/%s/pulls/%d/reviews/%.0f", gh->repo, rv->pr, json_get_num(prev, "id", 0));
		rc = write_req(&ans, &p, "PUT", path.buf, json_set(jv_object(), "body", jv_string(body)));
		p.report = json_set(p.report, "review_id", json_get(prev, "id"));
	}
	if (json_has(ans, "id"))
		p.report = json_set(p.report, "review_id", json_get(ans, "id"));
	jv_free(ans);
	buf_release(&path);
	if (rc < 0)
		goto out;
	if (strcmp(rv->event, "REQUEST_CHANGES") != 0 && dismiss_blocking(&p, blocking) < 0) {
		rc = -1;
		goto out;
	}
	p.report = json_set(p.report, "event", jv_string(rv->event));
	p.report = json_set(p.report, "new_review", jv_bool(new_review));
	*report = json_set(jv_copy(p.report), "requests", jv_copy(p.requests));
	rc = 0;
out:
	free(body);
	jv_free(placed);
	jv_free(fresh);
	jv_free(prev);
	jv_free(blocking);
	jv_free(comments);
	jv_free(p.report);
	jv_free(p.requests);
	buf_release(&p.outside);
	return rc;
}
