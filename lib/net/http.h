/*
 * http.h - the HTTP transport of the LLM client: one reused libcurl easy
 * handle, timeouts and stall detection, bounded bodies, and the retry
 * policy of the official Anthropic/OpenAI SDKs.
 *
 * Retry policy (llm-wire.md §5):
 *   - retried: connection errors and timeouts; status 408, 409, 429 and
 *     every status >= 500 (529 included) -- unless the server says
 *     `x-should-retry: false`; `x-should-retry: true` makes any status
 *     retryable.  A request's `no_retry` hook may veto (an OpenAI 429
 *     "insufficient_quota" will never succeed).
 *   - delay: `retry-after-ms` (milliseconds) or `retry-after` (seconds, or
 *     an HTTP date) when it lies in (0, max_retry_after]; otherwise
 *     min(initial * 2^n, max_delay) * (1 - 0.25 * rand) for the n-th retry
 *     (n = 0, 1, …): 0.5 s, 1 s, 2 s, 4 s, 8 s, 8 s … less up to 25 % jitter.
 *   - a server that asks for longer than max_retry_after is not retried at
 *     all (as the OpenAI Python SDK does past its 120 s): an early retry
 *     would only fail again.  The response says so in retry_after_refused.
 *   - a streamed body is never retried once a byte of it reached the sink,
 *     nor a request with a body whose 2xx answer began (out->began).
 * Sleeping, randomness and the clock are injectable, so the policy is
 * tested without waiting.
 *
 * Every request runs on the client's single handle (keep-alive);
 * CURLOPT_NOSIGNAL is set, so a program using this module ignores SIGPIPE
 * itself (c-style.md §2 rule 6).  curl_global_init() is called on first use;
 * with libcurl linked in (FORGE_CURL_STATIC) its TLS library is initialised
 * (and OpenSSL loaded) by the first request that may use TLS: an https://
 * URL, or any URL while a *_proxy variable is set.  When that fails,
 * http_send() fails with a message and out->status 0, out->error set.
 */
#ifndef FORGE_HTTP_H
#define FORGE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "core/buf.h"

struct http_header {
	char *name;       /* lowercased */
	char *value;      /* trimmed */
};

struct http_response {
	long status;                  /* 0 when no response arrived */
	struct buf body;              /* the body unless it went to a sink; capped */
	struct http_header *headers;  /* of the last attempt */
	size_t nheaders;
	int transport_error;          /* CURLcode of the last attempt (0 = none) */
	bool timed_out;               /* the last attempt timed out or stalled */
	char error[256];              /* transport error text, "" when none */
	int retries;                  /* retries made */
	double duration_ms;           /* all attempts and waits */
	bool streamed;                /* body bytes went to the sink */
	size_t too_large;             /* > 0: the body passed this cap (max_body) and
	                                 was not read: the server was reached */
	double retry_after_refused;   /* > 0: the server asked to wait this many
	                                 seconds, more than max_retry_after: not retried */
	bool interrupted;             /* ended by http_interrupt() (status 0, not retried) */
	bool sent;                    /* interrupted or past_deadline: the request with a body
	                                 had reached the server whole (its body all uploaded),
	                                 which may answer it, and bill it, all the same */
	bool began;                   /* a 2xx answer to a request with a body began (its
	                                 status line came) and then broke off: the server
	                                 received and answered it -- a model's provider bills
	                                 it -- so it is not retried here (its caller may ask
	                                 again, and count the attempt) */
	bool past_deadline;           /* ended (or not sent, or not retried) because the
	                                 request's deadline_ms came (status 0, timed_out) */
};

void http_response_init(struct http_response *r);
void http_response_release(struct http_response *r);   /* NULL-safe; reusable after init */
/* The header's value (name in lowercase), borrowed from r, or NULL. */
const char *http_header_get(const struct http_response *r, const char *name);

#define HTTP_SINK_DONE 1

struct http_request {
	const char *method;           /* "GET", "POST", or another verb with a body
	                                 (PUT, PATCH: sent as POST is, under that verb) */
	const char *url;
	const char *const *headers;   /* "Name: value", NULL-terminated; may be NULL */
	const char *body;             /* may be NULL */
	size_t body_len;
	/* When set, the body of a 2xx response goes here as it arrives instead
	 * of into r->body; a negative return aborts the transfer (a failure),
	 * HTTP_SINK_DONE ends it as a success: the body is complete, and what
	 * the server sends after it is not given to the sink (it is read to
	 * the response's end, so that the connection serves the next request,
	 * or cut within a second when the server keeps it open).  Such a request is watched
	 * for stalls (stall_ms without a byte) from the start, and by nothing
	 * else (no timeout_ms: a long answer that keeps coming is whole); one without a
	 * sink only once its response began: a response that is not streamed
	 * sends nothing, not its headers either, until it is whole. */
	int (*sink)(void *payload, const char *data, size_t len);
	void *sink_payload;
	/* Optional veto: true = do not retry this (retryable-looking) response. */
	bool (*no_retry)(void *payload, const struct http_response *r);
	void *no_retry_payload;
	size_t max_body;              /* 0 = 64 MiB */
	/* When > 0, a monotonic_ms() time by which the whole send ends,
	 * attempts and waits between them: a stream too, however its bytes
	 * keep coming (a caller's time limit; out->past_deadline). */
	long long deadline_ms;
};

struct http_retry {
	int max_retries;              /* retries after the first attempt */
	double initial_delay;         /* 0.5 s */
	double max_delay;             /* 8 s */
	double max_retry_after;       /* honour server delays up to this (60 s) */
	void (*sleep_fn)(void *payload, double seconds);   /* NULL: nanosleep */
	double (*rand_fn)(void *payload);                  /* NULL: random() in [0,1) */
	time_t (*now_fn)(void *payload);                   /* NULL: time() */
	void *payload;
	/* Called as a retry's wait begins (NULL: none): r is the attempt that
	 * failed (its status 0 when no answer came), retry the retry about to
	 * be made (1, 2, …), seconds the wait before it.  For the caller to
	 * say so: the wait is up to max_retry_after long. */
	void (*on_wait)(void *payload, const struct http_response *r, int retry, double seconds);
	void *on_wait_payload;
};

struct http_client {
	void *curl;                   /* CURL * */
	char errbuf[256];              /* CURL_ERROR_SIZE; lives as long as the handle */
	long timeout_ms;              /* whole request (600000); not for one with a sink (a
	                                 stream), which only stall_ms ends */
	long connect_timeout_ms;      /* 10000 */
	long stall_ms;                /* abort when no byte moved for this long (60000); noticed
	                                 within about a second */
	struct http_retry retry;
};

/* Defaults as documented above; allocates the curl handle. */
int http_client_init(struct http_client *c);
void http_client_release(struct http_client *c);

/*
 * Send req, retrying per the policy.  *out is initialised here (release it
 * also on failure).  Returns 0 when the final response is 2xx; -1 with a
 * message otherwise -- out->status and out->body then tell an HTTP error
 * (status != 0) from a transport failure (status 0).
 */
int http_send(struct http_response *out, struct http_client *c, const struct http_request *req);

/*
 * Ctrl-C: every transfer of the process ends at once, and none starts
 * after it (for the process's life): one under way within a moment (its
 * progress callback sees the flag; the signal itself wakes libcurl's
 * poll), with out->interrupted set and what its sink was given kept; one
 * not begun is not sent.  Async-signal-safe: for a signal handler.
 */
void http_interrupt(void);
/* Whether http_interrupt() was called. */
bool http_interrupted(void);

/* libcurl's version with its TLS library's ("8.5.0 (OpenSSL/3.0.13)"),
 * malloc'd; NULL when libcurl cannot tell. */
char *http_library_version(void);

/* The policy's pieces, exported for tests.  transport_failed: no HTTP
 * response arrived (r->status is 0). */
bool http_should_retry(const struct http_response *r);
/* Server-requested delay in seconds, or -1 when none is usable. */
double http_retry_after(const struct http_response *r, time_t now);
/* Delay before retry number n (0-based) after response r. */
double http_retry_delay(const struct http_retry *p, int n, const struct http_response *r);
/* Wait seconds as a retry does: p's sleep_fn, else in slices that
 * http_interrupt() ends early (for a caller that asks again itself: a
 * stream that failed once its body had begun, llm_call). */
void http_retry_sleep(const struct http_retry *p, double seconds);

#endif
