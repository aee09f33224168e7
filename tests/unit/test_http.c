/* test_http.c - the plain http:// transport of net/http.c (no libcurl)
 * against a scripted server in a child process: bodies by Content-Length,
 * chunks and connection close, a kept-alive connection reused and, closed
 * by the server meanwhile, reconnected; 1xx heads; the body limit; headers
 * sent; and a proxy variable handing the request to libcurl. */
#include "unit.h"

#include "core/forge.h"
#include "net/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t server_pid;
static char base[64];

static void put(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);

		if (w <= 0)
			_exit(1);
		s += w;
		n -= (size_t)w;
	}
}

static void puts_fd(int fd, const char *s)
{
	put(fd, s, strlen(s));
}

/* Reads one request (head and Content-Length body) into req; 0 at EOF. */
static size_t read_request(int fd, char *req, size_t cap)
{
	size_t len = 0, body = 0;
	char *end = NULL;

	while (!end || len < (size_t)(end + 4 - req) + body) {
		ssize_t n = read(fd, req + len, cap - 1 - len);

		if (n <= 0)
			return 0;
		len += (size_t)n;
		req[len] = '\0';
		if (!end && (end = strstr(req, "\r\n\r\n"))) {
			char *cl = strcasestr(req, "content-length:");

			body = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
		}
	}
	return len;
}

/* The server: each request's path says how to answer; bodies name the
 * connection (accepted so far) and the request on it. */
static void serve(int lfd)
{
	static char req[65536];
	int conns = 0;

	for (;;) {
		int fd = accept(lfd, NULL, NULL), nreq = 0;

		if (fd < 0)
			_exit(1);
		conns++;
		while (read_request(fd, req, sizeof(req))) {
			char body[600], head[800], path[256] = "";
			bool close_after = false;

			nreq++;
			sscanf(req, "%*s %255s", path);
			snprintf(body, sizeof(body), "conn=%d req=%d", conns, nreq);
			if (!strcmp(path, "/chunked")) {
				snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
					 "5\r\nconn=\r\n%zx;ext=1\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n",
					 strlen(body) - 5, body + 5);
				puts_fd(fd, head);
				continue;
			}
			if (!strcmp(path, "/eof")) {
				puts_fd(fd, "HTTP/1.0 200 OK\r\n\r\n");
				puts_fd(fd, body);
				break;
			}
			if (!strcmp(path, "/continue"))
				puts_fd(fd, "HTTP/1.1 100 Continue\r\n\r\n");
			if (!strcmp(path, "/big"))
				snprintf(body, sizeof(body), "%0100d", 0);
			if (!strcmp(path, "/echo") || !strncmp(path, "http://", 7))
				snprintf(body, sizeof(body), "%.*s", (int)(strstr(req, "\r\n\r\n") - req), req);
			close_after = !strcmp(path, "/close-after");
			snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Length: %zu\r\n\r\n",
				 !strcmp(path, "/missing") ? "404 Not Found" : "200 OK", strlen(body));
			puts_fd(fd, head);
			puts_fd(fd, body);
			if (close_after)
				break;
		}
		close(fd);
	}
}

static void start_server(void)
{
	struct sockaddr_in a = { 0 };
	socklen_t len = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 8) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &len) < 0) {
		perror("test_http: server socket");
		exit(1);
	}
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", ntohs(a.sin_port));
	server_pid = fork();
	if (server_pid == 0)
		serve(lfd);
	close(lfd);
}

/* GET base+path on c; the body (or "ERR: message") into out. */
static long get(struct http_client *c, const char *path, char *out, size_t cap)
{
	char url[128];
	struct http_request req = { .method = "GET", .url = url };
	struct http_response r;
	long status;

	snprintf(url, sizeof(url), "%s%s", base, path);
	if (http_send(&r, c, &req) < 0 && !r.status)
		snprintf(out, cap, "ERR: %s", r.error);
	else
		snprintf(out, cap, "%s", r.body.buf);
	status = r.status;
	http_response_release(&r);
	return status;
}

static void test_content_length_and_keep_alive(void)
{
	struct http_client c;
	char got[1024];

	http_client_init(&c);
	CHECK_INT(get(&c, "/cl", got, sizeof got), 200);
	CHECK_STR(got, "conn=1 req=1");
	CHECK_INT(get(&c, "/cl", got, sizeof got), 200);
	CHECK_STR(got, "conn=1 req=2");           /* the same connection */
	CHECK(c.curl == NULL);                     /* libcurl never loaded */
	http_client_release(&c);
}

static void test_chunked_and_1xx(void)
{
	struct http_client c;
	char got[1024];

	http_client_init(&c);
	CHECK_INT(get(&c, "/chunked", got, sizeof got), 200);
	CHECK_STR(got, "conn=2 req=1");
	CHECK_INT(get(&c, "/continue", got, sizeof got), 200);
	CHECK_STR(got, "conn=2 req=2");           /* kept alive after chunks */
	CHECK_INT(get(&c, "/missing", got, sizeof got), 404);
	CHECK_STR(got, "conn=2 req=3");           /* an error status keeps its body */
	http_client_release(&c);
}

static void test_server_closes(void)
{
	struct http_client c;
	char got[1024];

	http_client_init(&c);
	c.retry.max_retries = 0;                   /* a reconnection is not a retry */
	CHECK_INT(get(&c, "/close-after", got, sizeof got), 200);
	CHECK_STR(got, "conn=3 req=1");
	CHECK_INT(get(&c, "/cl", got, sizeof got), 200);
	CHECK_STR(got, "conn=4 req=1");           /* reconnected, sent again */
	CHECK_INT(get(&c, "/eof", got, sizeof got), 200);
	CHECK_STR(got, "conn=4 req=2");           /* a body up to the close */
	CHECK(c.plain_fd < 0);
	CHECK_INT(get(&c, "/cl", got, sizeof got), 200);
	CHECK_STR(got, "conn=5 req=1");
	http_client_release(&c);
}

static void test_body_limit(void)
{
	struct http_client c;
	struct http_request req = { .method = "GET", .max_body = 99 };
	struct http_response r;
	char url[128];

	snprintf(url, sizeof(url), "%s/big", base);
	req.url = url;
	http_client_init(&c);
	c.retry.max_retries = 0;
	CHECK(http_send(&r, &c, &req) < 0);
	CHECK_INT(r.status, 0);
	CHECK_STR(r.error, "response body larger than 99 bytes");
	http_response_release(&r);
	req.max_body = 100;
	CHECK(http_send(&r, &c, &req) == 0);
	CHECK_INT((long)r.body.len, 100);
	http_response_release(&r);
	http_client_release(&c);
}

static void test_headers_sent(void)
{
	static const char *const hdrs[] = { "content-type: application/json", "x-api-key: k",
					    "Expect:", NULL };
	struct http_client c;
	struct http_request req = { .method = "POST", .headers = hdrs, .body = "{}", .body_len = 2 };
	struct http_response r;
	char url[128];

	snprintf(url, sizeof(url), "%s/echo", base);
	req.url = url;
	http_client_init(&c);
	CHECK(http_send(&r, &c, &req) == 0);
	CHECK_MSG(!strncmp(r.body.buf, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1:", 37), "%s", r.body.buf);
	CHECK(strstr(r.body.buf, "\r\ncontent-type: application/json\r\n"));
	CHECK(strstr(r.body.buf, "\r\nx-api-key: k\r\n"));
	CHECK(strstr(r.body.buf, "\r\nContent-Length: 2"));
	CHECK(strstr(r.body.buf, "\r\nUser-Agent: forge/"));
	CHECK(!strcasestr(r.body.buf, "expect"));  /* "Name:" drops the header */
	CHECK(!strstr(r.body.buf, "x-www-form-urlencoded"));
	http_response_release(&r);
	http_client_release(&c);
}

static void test_unreachable(void)
{
	struct http_client c;
	char got[1024], *saved = xstrdup(base);

	http_client_init(&c);
	c.retry.max_retries = 0;
	snprintf(base, sizeof(base), "http://127.0.0.1:1");
	CHECK_INT(get(&c, "/", got, sizeof got), 0);
	snprintf(base, sizeof(base), "%s", saved);
	free(saved);
	CHECK_MSG(!strncmp(got, "ERR: Failed to connect to 127.0.0.1 port 1", 42), "%s", got);
	http_client_release(&c);
}

static void test_proxy_goes_through_libcurl(void)
{
	struct http_client c;
	struct http_request req = { .method = "GET", .url = "http://forge.invalid/x" };
	struct http_response r;

	setenv("http_proxy", base, 1);
	http_client_init(&c);
	CHECK(http_send(&r, &c, &req) == 0);
	unsetenv("http_proxy");
	CHECK(c.curl != NULL);
	CHECK_MSG(!strncmp(r.body.buf, "GET http://forge.invalid/x HTTP/1.1\r\n", 37), "%s", r.body.buf);
	http_response_release(&r);
	http_client_release(&c);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	unsetenv("http_proxy");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	start_server();
	RUN(test_content_length_and_keep_alive);
	RUN(test_chunked_and_1xx);
	RUN(test_server_closes);
	RUN(test_body_limit);
	RUN(test_headers_sent);
	RUN(test_unreachable);
	RUN(test_proxy_goes_through_libcurl);
	kill(server_pid, SIGTERM);
	waitpid(server_pid, NULL, 0);
	return unit_done();
}
