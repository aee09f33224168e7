/*
 * http.c - libcurl transport and the SDKs' retry policy (see http.h).
 */
#include "net/http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/forge.h"

_Static_assert(CURL_ERROR_SIZE <= 256, "errbuf too small");

#define HTTP_MAX_BODY (64u << 20)

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

int http_client_init(struct http_client *c)
{
	memset(c, 0, sizeof(*c));
	c->plain_fd = -1;
	c->timeout_ms = 600000;
	c->connect_timeout_ms = 10000;
	c->stall_ms = 60000;
	c->retry.max_retries = 2;
	c->retry.initial_delay = 0.5;
	c->retry.max_delay = 8.0;
	c->retry.max_retry_after = 60.0;
	return 0;
}

/* libcurl (loaded, initialised) and the client's handle, on first use. */
static int curl_ready(struct http_client *c)
{
	static int global_done;

	if (c->curl)
		return 0;
	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return forge_error("cannot initialise libcurl");
		global_done = 1;
	}
	c->curl = curl_easy_init();
	if (!c->curl)
		return forge_error("cannot create a libcurl handle");
	return 0;
}

static void plain_close(struct http_client *c)
{
	if (c->plain_fd >= 0)
		close(c->plain_fd);
	c->plain_fd = -1;
	free(c->plain_peer);
	c->plain_peer = NULL;
}

void http_client_release(struct http_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
	plain_close(c);
}

/* ---- one attempt ------------------------------------------------------- */

struct transfer {
	struct http_response *resp;
	const struct http_request *req;
	CURL *h;
	size_t max;
	int sink_failed;
	long stall_ms;                /* give up after this long without a byte */
	curl_off_t seen;              /* bytes moved so far (both ways) */
	double last_ms;               /* when seen last changed */
	bool stalled;
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

/* One header line (its CRLF included or not) into r. */
static void add_header(struct http_response *r, const char *data, size_t n)
{
	size_t klen;
	const char *colon, *v, *end = data + n;

	colon = memchr(data, ':', n);
	if (!colon)
		return;
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
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *payload)
{
	struct transfer *t = payload;
	size_t n = size * nmemb;

	if (n >= 5 && !memcmp(data, "HTTP/", 5))   /* a new response (after 1xx or redirects) */
		headers_clear(t->resp);
	else
		add_header(t->resp, data, n);
	return n;
}

/* A piece of the body of a response with this status: to the sink (2xx) or
 * into the body; -1 when the sink failed or the body is too large. */
static int deliver(struct transfer *t, long status, const char *data, size_t n)
{
	if (t->req->sink && status >= 200 && status < 300) {
		t->resp->streamed = true;
		if (t->req->sink(t->req->sink_payload, data, n) != 0) {
			t->sink_failed = 1;
			return -1;
		}
		return 0;
	}
	if (t->resp->body.len + n > t->max)
		return -1;
	buf_add(&t->resp->body, data, n);
	return 0;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *payload)
{
	struct transfer *t = payload;
	size_t n = size * nmemb;
	long status = 0;

	curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &status);
	return deliver(t, status, data, n) < 0 ? 0 : n;   /* 0: CURLE_WRITE_ERROR */
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
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
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
	if (req->method && !strcmp(req->method, "GET")) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(req->body ? req->body_len : 0));
	}
}

static CURLcode plain_perform(struct http_client *c, const struct http_request *req,
			      struct transfer *t);
static bool plain_usable(const char *url);

/* One attempt: fills r (status 0 on a transport failure). */
static void attempt(struct http_response *r, struct http_client *c, const struct http_request *req)
{
	struct transfer t = { r, req, NULL, req->max_body ? req->max_body : HTTP_MAX_BODY, 0,
			      c->stall_ms > 0 ? c->stall_ms : 60000, 0, 0, false };
	struct curl_slist *hdrs;
	CURLcode rc;

	headers_clear(r);
	buf_reset(&r->body);
	r->status = 0;
	r->error[0] = '\0';
	r->timed_out = false;
	c->errbuf[0] = '\0';
	if (plain_usable(req->url)) {
		rc = plain_perform(c, req, &t);
	} else if (curl_ready(c) < 0) {
		snprintf(r->error, sizeof(r->error), "%s", forge_last_error());
		r->transport_error = CURLE_FAILED_INIT;
		return;
	} else {
		t.h = c->curl;
		hdrs = make_headers(req);
		setup(c, req, &t, hdrs);
		rc = curl_easy_perform(c->curl);
		curl_slist_free_all(hdrs);
		if (rc == CURLE_OK)
			curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
	}
	r->transport_error = (int)rc;
	if (rc == CURLE_OK)
		return;
	if (t.stalled) {
		rc = CURLE_OPERATION_TIMEDOUT;   /* retried like a timeout */
		r->transport_error = (int)rc;
	}
	r->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
	if (t.sink_failed)
		snprintf(r->error, sizeof(r->error), "%s",
			 *forge_last_error() ? forge_last_error() : "stream aborted");
	else if (rc == CURLE_WRITE_ERROR)
		snprintf(r->error, sizeof(r->error), "response body larger than %zu bytes", t.max);
	else if (t.stalled)
		snprintf(r->error, sizeof(r->error), "stalled: no data for %ld ms", c->stall_ms);
	else
		snprintf(r->error, sizeof(r->error), "%s", c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
	/* a transfer that was cut after headers is still a failure, not a status */
	r->status = 0;
}

/* ---- plain http:// without libcurl ------------------------------------ */

/*
 * An http:// URL (a local model server, the mock) is served here over one
 * kept-alive socket: HTTP/1.1, a Content-Length, chunked or close-delimited
 * body, no compression, no redirects (the curl path follows none either).
 * libcurl -- and the ~30 libraries it loads: TLS, HTTP/2, LDAP, Kerberos... --
 * is loaded only for https:// or when a proxy variable asks for a proxy.
 * Errors are reported with the CURLcode libcurl would have given, so the
 * retry policy is the same on both paths.
 */

struct url_parts {
	char *host;     /* without brackets */
	char *port;
	char *hostport; /* for Host: and the connection's identity */
	char *target;   /* path and query, "/" at least */
};

static void url_parts_release(struct url_parts *u)
{
	free(u->host);
	free(u->port);
	free(u->hostport);
	free(u->target);
}

/* Split an http:// URL; -1 when it is not one this path serves. */
static int url_split(struct url_parts *u, const char *url)
{
	const char *a, *end, *h, *he, *p = NULL;

	memset(u, 0, sizeof(*u));
	if (strncasecmp(url, "http://", 7))
		return -1;
	a = url + 7;
	end = a + strcspn(a, "/?#");
	if (end == a || memchr(a, '@', (size_t)(end - a)))
		return -1;   /* no host, or credentials in the URL: libcurl's */
	if (*a == '[') {
		h = a + 1;
		he = memchr(h, ']', (size_t)(end - h));
		if (!he)
			return -1;
		if (he + 1 < end) {
			if (he[1] != ':')
				return -1;
			p = he + 2;
		}
	} else {
		h = a;
		he = memchr(a, ':', (size_t)(end - a));
		if (he)
			p = he + 1;
		else
			he = end;
	}
	if (he == h || (p && (p == end || strspn(p, "0123456789") != (size_t)(end - p))))
		return -1;
	u->host = xstrndup(h, (size_t)(he - h));
	u->port = p ? xstrndup(p, (size_t)(end - p)) : xstrdup("80");
	u->hostport = xstrndup(a, (size_t)(end - a));
	if (*end == '/' || *end == '?') {
		size_t n = strcspn(end, "#");

		u->target = *end == '?' ? NULL : xstrndup(end, n);
		if (!u->target) {
			struct buf t = BUF_INIT;

			buf_addch(&t, '/');
			buf_add(&t, end, n);
			u->target = buf_detach(&t, NULL);
		}
	} else {
		u->target = xstrdup("/");
	}
	return 0;
}

static bool env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

static bool plain_usable(const char *url)
{
	struct url_parts u;
	bool ok;

	/* libcurl honours these for http:// (no_proxy aside): let it */
	if (env_set("http_proxy") || env_set("all_proxy") || env_set("ALL_PROXY"))
		return false;
	ok = url_split(&u, url) == 0;
	url_parts_release(&u);
	return ok;
}

/* Milliseconds left before deadline (at least 0). */
static int ms_left(double deadline)
{
	double left = deadline - now_ms();

	return left <= 0 ? 0 : left > 1e9 ? 1000000000 : (int)left;
}

static CURLcode plain_connect(struct http_client *c, const struct url_parts *u, double deadline)
{
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	int rc, err = 0;
	bool timed_out = false;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(u->host, u->port, &hints, &res);
	if (rc != 0) {
		snprintf(c->errbuf, sizeof(c->errbuf), "Could not resolve host: %s", u->host);
		return CURLE_COULDNT_RESOLVE_HOST;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		struct pollfd pfd;
		socklen_t len = sizeof(err);
		int one = 1;

		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			if (errno != EINPROGRESS) {
				err = errno;
				close(fd);
				continue;
			}
			pfd.fd = fd;
			pfd.events = POLLOUT;
			int wait = ms_left(deadline);

			if (c->connect_timeout_ms > 0 && c->connect_timeout_ms < wait)
				wait = (int)c->connect_timeout_ms;
			while ((rc = poll(&pfd, 1, wait)) < 0 && errno == EINTR)
				;
			if (rc == 0) {
				timed_out = true;
				close(fd);
				continue;
			}
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
				close(fd);
				continue;
			}
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->plain_fd = fd;
		c->plain_peer = xstrdup(u->hostport);
		freeaddrinfo(res);
		return CURLE_OK;
	}
	freeaddrinfo(res);
	if (timed_out && !err) {
		snprintf(c->errbuf, sizeof(c->errbuf), "Connection timed out after %ld milliseconds",
			 c->connect_timeout_ms);
		return CURLE_OPERATION_TIMEDOUT;
	}
	snprintf(c->errbuf, sizeof(c->errbuf), "Failed to connect to %s port %s: %s", u->host,
		 u->port, strerror(err ? err : ECONNREFUSED));
	return CURLE_COULDNT_CONNECT;
}

/* The reading side of one response. */
struct plain_in {
	struct http_client *c;
	struct transfer *t;
	double deadline;
	char buf[16384];
	size_t off, len;
	size_t received;        /* bytes read from the socket */
	bool eof;
};

/* Wait for and read more bytes: 0, or a CURLcode (timeout, stall, error). */
static CURLcode plain_fill(struct plain_in *in)
{
	struct pollfd pfd = { in->c->plain_fd, POLLIN, 0 };
	ssize_t n;
	int rc;

	if (in->off == in->len)
		in->off = in->len = 0;
	else if (in->off > 0) {
		memmove(in->buf, in->buf + in->off, in->len - in->off);
		in->len -= in->off;
		in->off = 0;
	}
	for (;;) {
		int wait = ms_left(in->deadline);
		bool stall_first = in->t->stall_ms < wait;

		if (stall_first)
			wait = (int)in->t->stall_ms;
		while ((rc = poll(&pfd, 1, wait)) < 0 && errno == EINTR)
			;
		if (rc == 0) {
			if (stall_first)
				in->t->stalled = true;
			else
				snprintf(in->c->errbuf, sizeof(in->c->errbuf),
					 "Operation timed out after %ld milliseconds with %zu bytes received",
					 in->c->timeout_ms, in->received);
			return CURLE_OPERATION_TIMEDOUT;
		}
		n = recv(in->c->plain_fd, in->buf + in->len, sizeof(in->buf) - in->len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			snprintf(in->c->errbuf, sizeof(in->c->errbuf), "Recv failure: %s", strerror(errno));
			return CURLE_RECV_ERROR;
		}
		if (n == 0)
			in->eof = true;
		in->len += (size_t)n;
		in->received += (size_t)n;
		return CURLE_OK;
	}
}

/* One line (CRLF or LF, not included) into line; CURLE_GOT_NOTHING or
 * CURLE_RECV_ERROR when the connection ends first. */
static CURLcode plain_line(struct plain_in *in, struct buf *line)
{
	buf_reset(line);
	for (;;) {
		char *nl = memchr(in->buf + in->off, '\n', in->len - in->off);
		size_t n;
		CURLcode rc;

		if (nl) {
			n = (size_t)(nl - (in->buf + in->off));
			buf_add(line, in->buf + in->off, n);
			in->off += n + 1;
			if (line->len && line->buf[line->len - 1] == '\r')
				buf_truncate(line, line->len - 1);
			return CURLE_OK;
		}
		if (line->len > 65536) {
			snprintf(in->c->errbuf, sizeof(in->c->errbuf), "header line too long");
			return CURLE_RECV_ERROR;
		}
		buf_add(line, in->buf + in->off, in->len - in->off);
		in->off = in->len;
		if (in->eof) {
			snprintf(in->c->errbuf, sizeof(in->c->errbuf), in->received ?
				 "connection closed in the middle of a response" : "Empty reply from server");
			return in->received ? CURLE_RECV_ERROR : CURLE_GOT_NOTHING;
		}
		if ((rc = plain_fill(in)) != CURLE_OK)
			return rc;
	}
}

/* Up to want bytes of body (SIZE_MAX: until the connection closes) to the
 * transfer. */
static CURLcode plain_body(struct plain_in *in, long status, size_t want, bool to_eof)
{
	while (want > 0) {
		size_t n = in->len - in->off;
		CURLcode rc;

		if (n == 0) {
			if (in->eof) {
				if (to_eof)
					return CURLE_OK;
				snprintf(in->c->errbuf, sizeof(in->c->errbuf),
					 "transfer closed with %zu bytes remaining to read", want);
				return CURLE_PARTIAL_FILE;
			}
			if ((rc = plain_fill(in)) != CURLE_OK)
				return rc;
			continue;
		}
		if (n > want)
			n = want;
		if (deliver(in->t, status, in->buf + in->off, n) < 0)
			return CURLE_WRITE_ERROR;
		in->off += n;
		if (!to_eof)
			want -= n;
	}
	return CURLE_OK;
}

static CURLcode plain_chunked(struct plain_in *in, long status, struct buf *line)
{
	for (;;) {
		unsigned long long size;
		char *end;
		CURLcode rc;

		if ((rc = plain_line(in, line)) != CURLE_OK)
			return rc == CURLE_GOT_NOTHING ? CURLE_RECV_ERROR : rc;
		errno = 0;
		size = strtoull(line->buf, &end, 16);
		if (end == line->buf || errno || (*end && *end != ';' && *end != ' ' && *end != '\t')) {
			snprintf(in->c->errbuf, sizeof(in->c->errbuf), "bad chunk size '%.40s'", line->buf);
			return CURLE_RECV_ERROR;
		}
		if (size == 0)
			break;
		if ((rc = plain_body(in, status, (size_t)size, false)) != CURLE_OK)
			return rc;
		if ((rc = plain_line(in, line)) != CURLE_OK)   /* the chunk's CRLF */
			return rc == CURLE_GOT_NOTHING ? CURLE_RECV_ERROR : rc;
	}
	do {    /* trailers, up to the empty line */
		CURLcode rc = plain_line(in, line);

		if (rc != CURLE_OK)
			return rc == CURLE_GOT_NOTHING ? CURLE_RECV_ERROR : rc;
	} while (line->len > 0);
	return CURLE_OK;
}

static CURLcode plain_send(struct http_client *c, const struct buf *head, const char *body,
			   size_t body_len, double deadline)
{
	const char *parts[2] = { head->buf, body };
	size_t lens[2] = { head->len, body_len };

	for (int i = 0; i < 2; i++) {
		size_t off = 0;

		while (off < lens[i]) {
			ssize_t n = send(c->plain_fd, parts[i] + off, lens[i] - off, MSG_NOSIGNAL);
			struct pollfd pfd = { c->plain_fd, POLLOUT, 0 };

			if (n >= 0) {
				off += (size_t)n;
				continue;
			}
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				snprintf(c->errbuf, sizeof(c->errbuf), "Send failure: %s", strerror(errno));
				return CURLE_SEND_ERROR;
			}
			if (poll(&pfd, 1, ms_left(deadline)) == 0) {
				snprintf(c->errbuf, sizeof(c->errbuf),
					 "Operation timed out after %ld milliseconds with 0 bytes received",
					 c->timeout_ms);
				return CURLE_OPERATION_TIMEDOUT;
			}
		}
	}
	return CURLE_OK;
}

/* The request's head: request line, Host, User-Agent, the caller's headers
 * ("Name:" with no value drops a header, as with libcurl), Content-Length. */
static void plain_head(struct buf *h, const struct http_request *req, const struct url_parts *u,
		       bool get)
{
	bool type = false, agent = false, accept = false;

	buf_addf(h, "%s %s HTTP/1.1\r\nHost: %s\r\n", get ? "GET" : req->method ? req->method : "POST",
		 u->target, u->hostport);
	for (const char *const *p = req->headers; p && *p; p++) {
		const char *colon = strchr(*p, ':');
		size_t klen = colon ? (size_t)(colon - *p) : strlen(*p);

		if (!colon || !colon[1 + strspn(colon + 1, " \t")])
			continue;
		type |= klen == 12 && !strncasecmp(*p, "content-type", 12);
		agent |= klen == 10 && !strncasecmp(*p, "user-agent", 10);
		accept |= klen == 6 && !strncasecmp(*p, "accept", 6);
		if ((klen == 14 && !strncasecmp(*p, "content-length", 14)) ||
		    (klen == 4 && !strncasecmp(*p, "host", 4)))
			continue;
		buf_addf(h, "%s\r\n", *p);
	}
	if (!agent)
		buf_adds(h, "User-Agent: forge/" FORGE_VERSION "\r\n");
	if (!accept)
		buf_adds(h, "Accept: */*\r\n");
	if (!get) {
		if (!type)
			buf_adds(h, "Content-Type: application/x-www-form-urlencoded\r\n");
		buf_addf(h, "Content-Length: %zu\r\n", req->body ? req->body_len : 0);
	}
	buf_adds(h, "\r\n");
}

/* Status line and headers of one response into r; *status its code. */
static CURLcode plain_headers(struct plain_in *in, struct buf *line, long *status, int *minor)
{
	struct http_response *r = in->t->resp;
	CURLcode rc;

	for (;;) {
		int major = 0, code = 0, n = 0;

		headers_clear(r);
		if ((rc = plain_line(in, line)) != CURLE_OK)
			return rc;
		if (sscanf(line->buf, "HTTP/%d.%d %3d%n", &major, minor, &code, &n) < 3 || major != 1 ||
		    code < 100 || code > 999) {
			snprintf(in->c->errbuf, sizeof(in->c->errbuf), "Unsupported HTTP response '%.60s'",
				 line->buf);
			return CURLE_UNSUPPORTED_PROTOCOL;
		}
		for (;;) {
			if ((rc = plain_line(in, line)) != CURLE_OK)
				return rc == CURLE_GOT_NOTHING ? CURLE_RECV_ERROR : rc;
			if (line->len == 0)
				break;
			add_header(r, line->buf, line->len);
		}
		if (code >= 200 || code == 101) {
			*status = code;
			return CURLE_OK;
		}
		/* 1xx: another head follows */
	}
}

static bool has_token(const char *v, const char *token)
{
	size_t n = strlen(token);

	for (const char *p = v; p && *p; p += strcspn(p, ",")) {
		p += strspn(p, ", \t");
		if (!strncasecmp(p, token, n) && (!p[n] || p[n] == ',' || p[n] == ' ' || p[n] == '\t'))
			return true;
	}
	return false;
}

/* One request and response over c's socket (connecting it when it is not
 * to this host); a reused connection the server closed meanwhile is
 * reconnected and the request sent again once. */
static CURLcode plain_perform(struct http_client *c, const struct http_request *req,
			      struct transfer *t)
{
	struct url_parts u;
	struct buf head = BUF_INIT, line = BUF_INIT;
	struct plain_in *in = xcalloc(1, sizeof(*in));
	bool get = req->method && !strcmp(req->method, "GET"), keep = false, reused;
	double deadline = now_ms() + (double)(c->timeout_ms > 0 ? c->timeout_ms : 600000);
	long status = 0;
	int minor = 1;
	CURLcode rc;

	url_split(&u, req->url);
	plain_head(&head, req, &u, get);
	in->c = c;
	in->t = t;
	in->deadline = deadline;
	for (int tries = 0;; tries++) {
		if (c->plain_fd >= 0 && strcmp(c->plain_peer, u.hostport))
			plain_close(c);
		reused = c->plain_fd >= 0;
		if (!reused && (rc = plain_connect(c, &u, deadline)) != CURLE_OK)
			goto out;
		in->off = in->len = in->received = 0;
		in->eof = false;
		rc = plain_send(c, &head, req->body, get ? 0 : req->body ? req->body_len : 0, deadline);
		if (rc == CURLE_OK)
			rc = plain_headers(in, &line, &status, &minor);
		if (rc == CURLE_OK || !reused || tries > 0 || in->received > 0 ||
		    (rc != CURLE_SEND_ERROR && rc != CURLE_GOT_NOTHING && rc != CURLE_RECV_ERROR))
			break;
		plain_close(c);   /* the server had closed the kept-alive connection */
		c->errbuf[0] = '\0';
	}
	if (rc != CURLE_OK)
		goto out;
	t->resp->status = status;
	{
		const char *te = http_header_get(t->resp, "transfer-encoding");
		const char *cl = http_header_get(t->resp, "content-length");
		const char *conn = http_header_get(t->resp, "connection");
		bool nobody = get ? false : !strcmp(req->method ? req->method : "POST", "HEAD");

		keep = minor >= 1 ? !(conn && has_token(conn, "close")) : conn && has_token(conn, "keep-alive");
		if (nobody || status == 204 || status == 304 || (status >= 100 && status < 200)) {
			rc = CURLE_OK;
		} else if (te && has_token(te, "chunked")) {
			rc = plain_chunked(in, status, &line);
		} else if (cl) {
			char *end;
			unsigned long long n;

			errno = 0;
			n = strtoull(cl, &end, 10);
			if (end == cl || *end || errno) {
				snprintf(c->errbuf, sizeof(c->errbuf), "bad Content-Length '%.40s'", cl);
				rc = CURLE_RECV_ERROR;
			} else if (n > t->max && !(t->req->sink && status >= 200 && status < 300)) {
				rc = CURLE_WRITE_ERROR;
			} else {
				rc = plain_body(in, status, (size_t)n, false);
			}
		} else {
			keep = false;
			rc = plain_body(in, status, SIZE_MAX, true);
		}
	}
	if (rc == CURLE_OK && in->off != in->len)
		keep = false;   /* bytes past the response: do not trust the connection */
out:
	if (rc != CURLE_OK || !keep)
		plain_close(c);
	if (rc != CURLE_OK)
		t->resp->status = 0;
	url_parts_release(&u);
	buf_release(&head);
	buf_release(&line);
	free(in);
	return rc;
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
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static bool may_retry(const struct http_request *req, const struct http_response *r)
{
	if (r->streamed)
		return false;
	if (!http_should_retry(r))
		return false;
	return !(req->no_retry && req->no_retry(req->no_retry_payload, r));
}

int http_send(struct http_response *out, struct http_client *c, const struct http_request *req)
{
	double start = now_ms();

	http_response_init(out);
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
		do_sleep(&c->retry, http_retry_delay(&c->retry, n, out->status ? out : NULL));
		out->retries++;
	}
	out->duration_ms = now_ms() - start;
	if (out->status >= 200 && out->status < 300)
		return 0;
	if (out->status)
		return forge_error("HTTP %ld from '%s'", out->status, req->url);
	return forge_error("cannot reach '%s': %s", req->url, out->error);
}
