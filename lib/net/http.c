/*
 * http.c - libcurl transport and the SDKs' retry policy (see http.h).
 */
#include "net/http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/forge.h"

_Static_assert(CURL_ERROR_SIZE <= 256, "errbuf too small");

#define HTTP_MAX_BODY (64u << 20)

/* http_interrupt(): set from a signal handler, read by every transfer */
static volatile sig_atomic_t interrupt_flag;

void http_interrupt(void)
{
	interrupt_flag = 1;
}

bool http_interrupted(void)
{
	return interrupt_flag != 0;
}

void http_response_init(struct http_response *r)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->body, HTTP_MAX_BODY);
}

static void headers_clear(struct http_response *r)
{
	for (size_t i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->headers);
	r->headers = NULL;
	r->nheaders = 0;
}

void http_response_release(struct http_response *r)
{
	if (!r)
		return;
	headers_clear(r);
	buf_release(&r->body);
}

const char *http_header_get(const struct http_response *r, const char *name)
{
	for (size_t i = r->nheaders; i-- > 0;)
		if (!strcmp(r->headers[i].name, name))
			return r->headers[i].value;
	return NULL;
}

#ifdef FORGE_CURL_STATIC
/* libcurl is linked in (CURL_STATIC=1, see the Makefile).  This pulls from
 * the archive the files that define what libcurl.a calls and loads only on
 * first use: OpenSSL, libssh2, GSS-API, libidn2, libpsl, librtmp, OpenLDAP. */
extern const int forge_curl_libs_lazy, forge_ssh2_lazy, forge_gss_lazy;
__attribute__((used)) static const int *const lazy_linked[] = { &forge_curl_libs_lazy, &forge_ssh2_lazy,
								 &forge_gss_lazy };

/* curl_global_init() initialises the TLS library (OPENSSL_init_ssl: loading
 * libssl and libcrypto, reading openssl.cnf) even for a program that only
 * ever speaks http:// to a local server.  The linker sends that call
 * here (-Wl,--wrap=Curl_ssl_init); the real one is made by tls_prepare()
 * before the first request that may use TLS, as it would have been before
 * any request. */
int __real_Curl_ssl_init(void);
int __wrap_Curl_ssl_init(void);

int __wrap_Curl_ssl_init(void)
{
	return 1;
}

static int tls_ok;

static void tls_init(void)
{
	tls_ok = __real_Curl_ssl_init();
}

/* Whether a request to url may use TLS: anything but http:// without a
 * proxy (an https:// proxy speaks TLS for an http:// URL too; the variables
 * are libcurl's). */
static bool may_use_tls(const char *url)
{
	static const char *const proxies[] = { "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
					       "all_proxy", "ALL_PROXY" };

	if (strncasecmp(url, "http://", 7) != 0)
		return true;
	for (size_t i = 0; i < sizeof(proxies) / sizeof(*proxies); i++) {
		const char *v = getenv(proxies[i]);

		if (v && *v)
			return true;
	}
	return false;
}

static int tls_prepare(const char *url)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (!may_use_tls(url))
		return 0;
	pthread_once(&once, tls_init);
	return tls_ok ? 0 : forge_error("cannot initialise TLS for '%s'", url);
}
#else
static int tls_prepare(const char *url)
{
	(void)url;
	return 0;
}
#endif

int http_client_init(struct http_client *c)
{
	static int global_done;

	memset(c, 0, sizeof(*c));
	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return forge_error("cannot initialise libcurl");
		global_done = 1;
	}
	c->curl = curl_easy_init();
	if (!c->curl)
		return forge_error("cannot create a libcurl handle");
	c->timeout_ms = 600000;
	c->connect_timeout_ms = 10000;
	c->stall_ms = 60000;
	c->retry.max_retries = 2;
	c->retry.initial_delay = 0.5;
	c->retry.max_delay = 8.0;
	c->retry.max_retry_after = 60.0;
	return 0;
}

void http_client_release(struct http_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
}

/* ---- one attempt ------------------------------------------------------- */

/* How long a stream may go on after its sink said it is complete before it
 * is cut (libcurl asks on_progress about once a second when nothing comes). */
#define HTTP_DONE_GRACE_MS 200

struct transfer {
	struct http_response *resp;
	const struct http_request *req;
	CURL *h;
	size_t max;
	int sink_failed;
	bool sink_done;               /* the sink said the body is complete */
	double done_ms;               /* when it did */
	bool done_cut;                /* ended by on_progress after sink_done */
	bool answered;                /* a status line came */
	long stall_ms;                /* give up after this long without a byte */
	curl_off_t seen;              /* bytes moved so far (both ways) */
	double last_ms;               /* when seen last changed */
	bool stalled;
	bool interrupted;             /* ended by http_interrupt() */
	bool past_deadline;           /* ended by req->deadline_ms */
};

static double now_ms(void);

/* Stall detection: libcurl calls this often while bytes move and about once
 * a second when none do, so a stall is noticed within a second of stall_ms
 * (CURLOPT_LOW_SPEED_TIME averages over a window and takes 5 s longer). */
static int on_progress(void *payload, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct transfer *t = payload;
	double now = now_ms();

	(void)dltotal;
	(void)ultotal;
	if (interrupt_flag) {
		t->interrupted = true;
		return 1;
	}
	/* The body is complete (the sink said so): the end of the response
	 * (HTTP/1.1's last chunk, HTTP/2's end of stream) follows at once from
	 * a server that keeps the connection for the next request, which
	 * libcurl then reuses -- no new TCP and TLS handshake a turn.  One that
	 * keeps the stream open instead is cut here, within a second. */
	if (t->sink_done) {
		if (now - t->done_ms >= HTTP_DONE_GRACE_MS) {
			t->done_cut = true;
			return 1;
		}
		return 0;
	}
	/* (the caller's deadline bounds a stream too: bytes that keep
	 * coming, a proxy's keep-alive pings, never end it otherwise) */
	if (t->req->deadline_ms > 0 && now >= (double)t->req->deadline_ms) {
		t->past_deadline = true;
		return 1;
	}
	/* Not streamed: a server sends nothing, not even its headers, until
	 * the answer is whole -- which takes as long as the answer does
	 * (the total timeout bounds it).  A body that stops after them stalls. */
	if (!t->req->sink && !t->answered)
		return 0;
	if (dlnow + ulnow != t->seen || t->last_ms == 0) {
		t->seen = dlnow + ulnow;
		t->last_ms = now;
		return 0;
	}
	if (now - t->last_ms >= (double)t->stall_ms) {
		t->stalled = true;
		return 1;
	}
	return 0;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *payload)
{
	struct transfer *t = payload;
	struct http_response *r = t->resp;
	size_t n = size * nmemb, klen;
	const char *colon, *v, *end = data + n;

	if (n >= 5 && !memcmp(data, "HTTP/", 5)) {   /* a new response (after 1xx or redirects) */
		if (!t->answered) {
			t->answered = true;
			t->last_ms = now_ms();   /* the stall watch starts here */
		}
		headers_clear(r);
		return n;
	}
	colon = memchr(data, ':', n);
	if (!colon)
		return n;
	klen = (size_t)(colon - data);
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && isspace((unsigned char)end[-1]))
		end--;
	r->headers = xrealloc(r->headers, (r->nheaders + 1) * sizeof(*r->headers));
	r->headers[r->nheaders].name = xstrndup(data, klen);
	for (char *p = r->headers[r->nheaders].name; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	r->headers[r->nheaders].value = xstrndup(v, (size_t)(end - v));
	r->nheaders++;
	return n;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *payload)
{
	struct transfer *t = payload;
	size_t n = size * nmemb;
	long status = 0;

	curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
	if (t->req->sink && status >= 200 && status < 300) {
		t->resp->streamed = true;
		if (t->sink_done)
			return n;       /* (after the end the sink saw: not its) */
		int rc = t->req->sink(t->req->sink_payload, data, n);
		if (rc == HTTP_SINK_DONE) {
			/* read on to the response's end (on_progress) */
			t->sink_done = true;
			t->done_ms = now_ms();
			return n;
		}
		if (rc != 0)
			t->sink_failed = 1;
		return rc == 0 ? n : 0;
	}
	if (t->resp->body.len + n > t->max)
		return 0;   /* CURLE_WRITE_ERROR: body too large */
	buf_add(&t->resp->body, data, n);
	return n;
}

/* Whether dir holds OpenSSL's hashed names of certificates ("5ad8a5d6.0"). */
static bool has_hashed_certs(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		const char *n = e->d_name;
		size_t i = 0;

		while (i < 8 && isxdigit((unsigned char)n[i]))
			i++;
		found = i == 8 && n[8] == '.' && isdigit((unsigned char)n[9]);
	}
	closedir(d);
	return found;
}

/* The trust anchors of an https request: libcurl's directory of
 * certificates instead of its bundle when the directory is there and
 * hashed (Debian's /etc/ssl/certs, kept with the bundle by
 * update-ca-certificates).  With the bundle OpenSSL parses every one of
 * its ~150 certificates before the first handshake of a process (~236M
 * instructions); with the directory it reads the ones the server's chain
 * names.  The same certificates are trusted.  The directory is libcurl's
 * built-in default, the same for every handle: looked at once. */
static void set_trust(CURL *h)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int hashed = -1;     /* not looked at yet */
	char *dir = NULL;
	int use_dir;

	if (curl_easy_getinfo(h, CURLINFO_CAPATH, &dir) != CURLE_OK || !dir)
		return;
	pthread_mutex_lock(&lock);
	if (hashed < 0)
		hashed = has_hashed_certs(dir);
	use_dir = hashed;
	pthread_mutex_unlock(&lock);
	if (use_dir)
		curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
}

static struct curl_slist *make_headers(const struct http_request *req)
{
	struct curl_slist *list = NULL;

	for (const char *const *h = req->headers; h && *h; h++)
		list = curl_slist_append(list, *h);
	list = curl_slist_append(list, "Expect:");   /* no 100-continue round trip */
	return list;
}

static void setup(struct http_client *c, const struct http_request *req, struct transfer *t,
		  struct curl_slist *hdrs)
{
	CURL *h = c->curl;

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, req->url);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	/* A stream takes as long as its answer does: while bytes keep coming
	 * only the stall watch (on_progress) ends it, never a total. */
	long total = req->sink ? 0L : c->timeout_ms;
	/* (on_progress ends it at the deadline itself, so that its caller's
	 * clock finds it past; this only backs that up) */
	if (req->deadline_ms > 0) {
		double left = (double)req->deadline_ms - now_ms() + 1000;
		long ms = left < 1 ? 1L : (long)left;

		if (total == 0 || ms < total)
			total = ms;
	}
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "forge/" FORGE_VERSION);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
	if (!strncasecmp(req->url, "https://", 8))
		set_trust(h);
	if (req->method && !strcmp(req->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(req->body ? req->body_len : 0));
		/* PUT, PATCH, DELETE: a body sent as POST sends it, under this verb */
		if (req->method && strcmp(req->method, "POST") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	}
}

/* One attempt: fills r (status 0 on a transport failure). */
static void attempt(struct http_response *r, struct http_client *c, const struct http_request *req)
{
	struct transfer t = { .resp = r, .req = req, .h = c->curl,
			      .max = req->max_body ? req->max_body : HTTP_MAX_BODY,
			      .stall_ms = c->stall_ms > 0 ? c->stall_ms : 60000 };
	struct curl_slist *hdrs = make_headers(req);
	CURLcode rc;

	headers_clear(r);
	buf_reset(&r->body);
	r->status = 0;
	r->error[0] = '\0';
	r->timed_out = false;
	r->past_deadline = false;
	r->began = false;
	r->too_large = 0;
	c->errbuf[0] = '\0';
	setup(c, req, &t, hdrs);
	r->sent = false;
	if (interrupt_flag)
		t.interrupted = true;   /* not sent */
	else if (req->deadline_ms > 0 && now_ms() >= (double)req->deadline_ms)
		t.past_deadline = true;   /* not sent either */
	bool attempted = !t.interrupted && !t.past_deadline;
	rc = !attempted ? CURLE_ABORTED_BY_CALLBACK : curl_easy_perform(c->curl);
	curl_slist_free_all(hdrs);
	if (t.sink_done && t.done_cut && rc == CURLE_ABORTED_BY_CALLBACK)
		rc = CURLE_OK;   /* ended by us: the body was complete */
	r->transport_error = (int)rc;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
		return;
	}
	r->interrupted = t.interrupted;
	/* (CURLOPT_TIMEOUT_MS, set to the deadline, may end it first) */
	if (req->deadline_ms > 0 && (t.past_deadline || (rc == CURLE_OPERATION_TIMEDOUT &&
							  now_ms() >= (double)req->deadline_ms)))
		t.past_deadline = true;
	r->past_deadline = t.past_deadline;
	if ((t.interrupted || t.past_deadline) && attempted && req->body_len > 0) {
		curl_off_t up = 0;

		/* (a model's request cut off after it was sent is answered and
		 * billed all the same: its caller counts it, llm_call) */
		r->sent = curl_easy_getinfo(c->curl, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK &&
			  up >= (curl_off_t)req->body_len;
	}
	if (t.answered && attempted && req->body_len > 0) {
		long status = 0;

		/* (a model's answer cut in its body was generated, and billed,
		 * whole: asked again here, the attempt would be counted nowhere) */
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
		r->began = status >= 200 && status < 300;
	}
	if (t.stalled || t.past_deadline) {
		rc = CURLE_OPERATION_TIMEDOUT;   /* retried like a timeout */
		r->transport_error = (int)rc;
	}
	r->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
	if (t.sink_failed)
		snprintf(r->error, sizeof(r->error), "%s",
			 *forge_last_error() ? forge_last_error() : "stream aborted");
	else if (rc == CURLE_WRITE_ERROR) {
		snprintf(r->error, sizeof(r->error), "response body larger than %zu bytes", t.max);
		r->too_large = t.max;
	}
	else if (t.past_deadline)
		snprintf(r->error, sizeof(r->error), "the caller's time limit came first");
	else if (t.stalled)
		snprintf(r->error, sizeof(r->error), "stalled: no data for %ld ms", c->stall_ms);
	else if (t.interrupted)
		snprintf(r->error, sizeof(r->error), "interrupted");
	else
		snprintf(r->error, sizeof(r->error), "%s", c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
	/* a transfer that was cut after headers is still a failure, not a status */
	r->status = 0;
}

/* ---- the policy -------------------------------------------------------- */

static bool transport_retryable(const struct http_response *r)
{
	switch (r->transport_error) {
	case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT: case CURLE_SEND_ERROR: case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE: case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM: case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

bool http_should_retry(const struct http_response *r)
{
	const char *sr;

	if (r->status == 0)
		return transport_retryable(r);
	sr = http_header_get(r, "x-should-retry");
	if (sr && !strcmp(sr, "true"))
		return true;
	if (sr && !strcmp(sr, "false"))
		return false;
	return r->status == 408 || r->status == 409 || r->status == 429 || r->status >= 500;
}

double http_retry_after(const struct http_response *r, time_t now)
{
	const char *v = http_header_get(r, "retry-after-ms");
	double d;
	char *end;

	if (v) {
		errno = 0;
		d = strtod(v, &end);
		if (end != v && !*end && !errno && isfinite(d))
			return d / 1000.0;
	}
	v = http_header_get(r, "retry-after");
	if (!v)
		return -1;
	errno = 0;
	d = strtod(v, &end);
	if (end != v && !*end && !errno && isfinite(d))
		return d;
	time_t when = curl_getdate(v, NULL);
	if (when == (time_t)-1)
		return -1;
	return difftime(when, now);
}

static double policy_rand(const struct http_retry *p)
{
	return p->rand_fn ? p->rand_fn(p->payload) : (double)random() / ((double)RAND_MAX + 1.0);
}

double http_retry_delay(const struct http_retry *p, int n, const struct http_response *r)
{
	time_t now = p->now_fn ? p->now_fn(p->payload) : time(NULL);
	double ra = r ? http_retry_after(r, now) : -1;
	double d;

	if (ra > 0 && ra <= p->max_retry_after)
		return ra;
	d = p->initial_delay * pow(2.0, n > 1000 ? 1000 : n);
	if (d > p->max_delay)
		d = p->max_delay;
	d *= 1.0 - 0.25 * policy_rand(p);
	return d < 0 ? 0 : d;
}

static void do_sleep(const struct http_retry *p, double s)
{
	struct timespec ts;

	if (p->sleep_fn) {
		p->sleep_fn(p->payload, s);
		return;
	}
	/* In slices of at most 0.1 s, each ended early by http_interrupt():
	 * Ctrl-C while a provider's retry-after (up to a minute) runs out must
	 * not wait for it, and the signal may have reached another thread. */
	while (s > 0 && !interrupt_flag) {
		double slice = s < 0.1 ? s : 0.1;

		ts.tv_sec = (time_t)slice;
		ts.tv_nsec = (long)((slice - (double)ts.tv_sec) * 1e9);
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !interrupt_flag)
			;
		s -= slice;
	}
}

void http_retry_sleep(const struct http_retry *p, double seconds)
{
	do_sleep(p, seconds);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static bool may_retry(const struct http_request *req, const struct http_response *r)
{
	if (r->streamed || r->began || r->interrupted || interrupt_flag || r->past_deadline)
		return false;
	if (!http_should_retry(r))
		return false;
	return !(req->no_retry && req->no_retry(req->no_retry_payload, r));
}

int http_send(struct http_response *out, struct http_client *c, const struct http_request *req)
{
	double start = now_ms();

	http_response_init(out);
	if (tls_prepare(req->url) < 0) {
		snprintf(out->error, sizeof(out->error), "%s", forge_last_error());
		return -1;
	}
	for (int n = 0;; n++) {
		attempt(out, c, req);
		if (out->status >= 200 && out->status < 300)
			break;
		if (n >= c->retry.max_retries || !may_retry(req, out))
			break;
		if (out->status) {
			double ra = http_retry_after(out, c->retry.now_fn ? c->retry.now_fn(c->retry.payload)
								  : time(NULL));
			if (ra > c->retry.max_retry_after) {
				out->retry_after_refused = ra;
				break;
			}
		}
		double wait = http_retry_delay(&c->retry, n, out->status ? out : NULL);
		/* a retry that could not begin before the deadline is not made:
		 * the wait runs out with the caller's time (which then says so) */
		if (req->deadline_ms > 0 && now_ms() + wait * 1000 >= (double)req->deadline_ms) {
			double left = ((double)req->deadline_ms - now_ms()) / 1000;

			if (left > 0)
				do_sleep(&c->retry, left);
			out->past_deadline = true;
			break;
		}
		if (c->retry.on_wait)
			c->retry.on_wait(c->retry.on_wait_payload, out, out->retries + 1, wait);
		do_sleep(&c->retry, wait);
		out->retries++;
	}
	out->duration_ms = now_ms() - start;
	if (out->status >= 200 && out->status < 300)
		return 0;
	if (out->status)
		return forge_error("HTTP %ld from '%s'", out->status, req->url);
	return forge_error("cannot reach '%s': %s", req->url, out->error);
}

char *http_library_version(void)
{
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
	struct buf b = BUF_INIT;

	if (!cv || !cv->version)
		return NULL;
	buf_adds(&b, cv->version);
	if (cv->ssl_version)
		buf_addf(&b, " (%s)", cv->ssl_version);
	return buf_detach(&b, NULL);
}
