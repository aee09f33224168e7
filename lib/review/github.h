/*
 * github.h - forge-review on a GitHub pull request (GitHub REST API v3
 * over lib/net/http.h): where the repository and API are, the pull
 * request's base and head, and the review posted back as one PR review.
 *
 * The token is held in memory for the Authorization header only: it is
 * registered for redaction (core/secret.h) and never written to an event,
 * an error message or a child's environment (GITHUB_TOKEN and GH_TOKEN are
 * in llm_secret_env_names).
 *
 * Rate limits: a 403 or 429 answer with `retry-after` (seconds), or with
 * `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (epoch seconds), is
 * waited out and the request sent again (at most 5 waits a request); a 429
 * without either waits 60 s (GitHub's advice for secondary limits).  A
 * wait longer than max_wait_s is not made: the request fails with a
 * message saying how long GitHub asked to wait.
 *
 * Server errors: a 5xx answer is sent again up to 3 times (lib/net/http.h's
 * backoff: 0.5 s, 1 s, 2 s less jitter, or the answer's `retry-after` when
 * it is at most max_wait_s; a longer one is not waited for); the message
 * of the last names the method, the URL, the status and the attempts.  A
 * request that got no answer at all is not sent again.
 *
 * Ownership: jv arguments follow json.h (consumed unless "borrows");
 * strings returned through char ** are malloc'd.  Functions return 0, or
 * -1 after forge_error().  Nothing here prints.
 */
#ifndef FORGE_GITHUB_H
#define FORGE_GITHUB_H

#include <jv.h>
#include <stdbool.h>

#include "net/http.h"

struct diff;

struct github {
	char *api;                      /* API root without a trailing '/' */
	char *repo;                     /* "owner/name" */
	char *auth;                     /* "Authorization: Bearer …" (secret) */
	double max_wait_s;              /* longest rate-limit wait made */
	int waits;                      /* rate-limit waits made so far */
	int requests;                   /* requests sent (each attempt) */
	long status;                    /* the last answer's HTTP status (0: none arrived) */
	bool rate_limited;              /* the last github_call() gave up on a rate limit */
	struct http_client http;
	/* Sleeping, injectable for tests (NULL: nanosleep). */
	void (*sleep_fn)(void *payload, double seconds);
	void *sleep_payload;
};

/* "owner/name" from a remote URL: https://HOST/owner/name(.git),
 * ssh://[user@]HOST[:port]/owner/name(.git), user@HOST:owner/name(.git).
 * -1 with a message when url has none of these forms. */
int github_repo_from_url(char **out, const char *url);

/* Set gh up (api NULL: https://api.github.com).  token is copied. */
int github_open(struct github *gh, const char *api, const char *repo, const char *token,
		double max_wait_s);
void github_close(struct github *gh);

/*
 * One request: METHOD api/PATH (path begins with '/'; an absolute
 * http(s) URL is taken as it is), body (consumed; jv_invalid() for none)
 * sent as JSON.  *out: the parsed answer (null for an empty one).
 * *next (may be NULL): the Link header's rel="next" URL, or NULL.
 */
int github_call(jv *out, char **next, struct github *gh, const char *method, const char *path,
		jv body);

/* GET every page of a list (per_page=100, following Link rel="next"). */
int github_list(jv *out, struct github *gh, const char *path);

/* What a review posts: the pull request, its head commit, the findings
 * (review.h form, borrowed), the diff base...head (borrowed), the event
 * (COMMENT, REQUEST_CHANGES or APPROVE) and the summary text. */
struct github_review {
	int pr;
	const char *commit;
	jv findings;
	const struct diff *diff;
	const char *event;
	const char *summary;
	bool dry_run;                   /* plan only: no write request is sent */
};

/*
 * Post the review, or update Forge's earlier one.  Forge's comments carry
 * "<!-- forge:fp=FINGERPRINT -->", its summary "<!-- forge:summary -->".
 * A finding on a line of the diff's hunks is an inline comment (path,
 * line, side RIGHT; a fixable finding's fix as a ```suggestion block);
 * others are listed in the summary.  An existing comment with the same
 * fingerprint is kept (same text) or edited; one whose finding is gone gets
 * one reply "resolved" (marked "<!-- forge:resolved=FP -->").  A new
 * review is posted when there are new comments, when there is no earlier
 * summary, or when the event changed; else the summary's body is updated.
 * A new review GitHub refuses with 422 while it has new inline comments is
 * posted once more with them listed in the summary instead ("posted" 0,
 * "inline_refused": GitHub's error).  When the event is not REQUEST_CHANGES, each of Forge's earlier summary
 * reviews whose state is CHANGES_REQUESTED is dismissed (PUT .../dismissals,
 * a message naming rv->commit): a COMMENT from the same account would not
 * lift it.  A dismissal GitHub refuses with 403 or 422 (no permission to
 * dismiss, branch protection; not a rate limit) does not fail the publish:
 * it is listed in "dismiss_failed" for the caller to warn about.
 * *report: {"posted","updated","kept","resolved","outside","review_id",
 * "event","dismissed":[ID...],"dismiss_failed":[{"review_id","status",
 * "error"}],"requests":[{"method","path","body"}]} (the write requests,
 * made or, with dry_run, planned).
 */
int github_review_publish(jv *report, struct github *gh, const struct github_review *rv);

/* The body of one inline comment for finding f (borrowed).  malloc'd. */
char *github_comment_body(jv f);

#endif
