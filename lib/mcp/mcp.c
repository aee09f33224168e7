/*
 * mcp.c - the MCP stdio client: a child process, one poll() loop that reads
 * its stdout into lines and its stderr into a bounded tail, and JSON-RPC
 * requests that wait for their answer.  See mcp.h.
 */
#include "mcp/mcp.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/jsonscan.h"
#include "os/spawn.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *const mcp_protocol_versions[] = { MCP_PROTOCOL_VERSION, "2025-03-26", "2024-11-05", NULL };

#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_MAX_LINE (8u << 20)
#define DEFAULT_STDERR_CAP (64u << 10)
#define MAX_PAGES 1000
/* libjq 1.6 reads JSON nested at most this deep (json_nesting's count: an
 * array 1, an object 2).  A message deeper than that is taken apart
 * TAKE_APART levels down (the message, its result, the tools array, a
 * tool) and its parts read one by one: what is still too deep there fails
 * alone -- the answer it is in, or that one tool of a listing -- and the
 * server stays usable. */
#define JQ_MAX_NESTING 256
#define TAKE_APART 4

struct mcp_client {
	char *name;
	pid_t pid;
	int in_fd, out_fd, err_fd;     /* -1 once closed */
	struct buf line;               /* stdout read but not yet a whole line */
	struct buf unsent;             /* messages for stdin from unsent_off on: the */
	size_t unsent_off;             /* rest of one a timeout cut, then those after it */
	struct buf err;                /* stderr: at most 2 * err_cap, trimmed to the tail */
	size_t err_dropped;            /* stderr bytes trimmed off the front */
	char *err_view;                /* mcp_stderr()'s string */
	size_t max_line, err_cap;
	long timeout_ms, grace_ms;
	long next_id;
	bool dead;
	char death[512];
	int status;                    /* exit status once reaped; -1 before */
	bool tools_stale;              /* list_changed came since the last listing */
	char tools_cut[200];           /* why the last listing stopped early, or "" */
	jv tools;                      /* the last listing, or null */
	jv batch;                      /* the rest of a JSON-RPC batch, not handled yet */
	bool deep;                     /* the last message was too deep to read whole: */
	jv holes;                      /* the paths of its parts left out (null there) */
	jv unreadable;                 /* the last listing's tools too deep to read: [{name, reason}] */
	char *protocol, *instructions;
	jv server_info;
};

/* ---- process ------------------------------------------------------------- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Start the server with pipes to its stdio.  0 or -1 with a message. */
static int spawn(struct mcp_client *c, const struct mcp_opts *o)
{
	/* contain: a server is often a launcher (npx, uvx, sh -c) whose
	 * children do the work; they must not outlive Forge killed by SIGKILL */
	struct spawn_opts so = { .argv = o->argv, .envp = o->envp, .cwd = o->cwd, .contain = true };
	struct spawned sp;

	if (proc_spawn(&sp, &so) < 0)
		return forge_error_prefix("%s", c->name);
	c->pid = sp.pid;
	c->in_fd = sp.in_fd;
	c->out_fd = sp.out_fd;
	c->err_fd = sp.err_fd;
	return 0;
}

/* Reap the child if it has exited (wait: block up to ms), and end what it
 * left (os/spawn.h, CONTAIN).  True once reaped. */
static bool reap(struct mcp_client *c, long ms)
{
	int st;

	if (!c->pid)
		return true;
	if (!proc_spawn_reap(c->pid, &st, ms))
		return false;
	if (st != -1)
		c->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	c->pid = 0;
	return true;
}

/* ---- reading ------------------------------------------------------------- */

static void add_stderr(struct mcp_client *c, const char *p, size_t n)
{
	buf_add(&c->err, p, n);
	if (c->err.len > 2 * c->err_cap) {
		size_t drop = c->err.len - c->err_cap;
		memmove(c->err.buf, c->err.buf + drop, c->err.len - drop);
		buf_truncate(&c->err, c->err.len - drop);
		c->err_dropped += drop;
	}
}

/* Mark the server dead (first reason wins).  Returns MCP_EDEAD. */
static int die(struct mcp_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(struct mcp_client *c, const char *fmt, ...)
{
	if (!c->dead) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->death, sizeof c->death, fmt, ap);
		va_end(ap);
		c->dead = true;
	}
	const char *tail = mcp_stderr(c);
	size_t tn = strlen(tail);
	while (tn && tail[tn - 1] == '\n')
		tn--;
	if (tn > 2000)
		tail += tn - 2000, tn = 2000;
	forge_error("MCP server '%s' %s%s%.*s", c->name, c->death, tn ? "; its stderr: " : "", (int)tn, tail);
	return MCP_EDEAD;
}

/* Why stdout ended: the exit status when it has one by now. */
static int died_eof(struct mcp_client *c)
{
	if (reap(c, 500)) {
		if (c->status > 128)
			return die(c, "was killed by signal %d (%s)", c->status - 128, strsignal(c->status - 128));
		return die(c, "exited with status %d", c->status);
	}
	return die(c, "closed its stdout");
}

/*
 * Wait up to the deadline (monotonic ms; 0 = do not wait) for output and
 * read what is there.  Returns 0, MCP_ETIMEOUT when the deadline passed
 * with nothing read, or MCP_EDEAD when stdout ended or a line is too long.
 * With want_write, also returns 0 as soon as the server's stdin takes data.
 */
/* What the server said on stderr as it went: what is there, or comes
 * within LAST_WORDS_MS.  Not until stderr's end: a process the server
 * left behind (a wrapper's helper) may hold it open for ever, and a read
 * to its end then never returned. */
#define LAST_WORDS_MS 200
static void last_words(struct mcp_client *c)
{
	long long until = monotonic_ms() + LAST_WORDS_MS;
	char chunk[65536];

	while (c->err_fd >= 0) {
		long long left = until - monotonic_ms();
		struct pollfd pf = { .fd = c->err_fd, .events = POLLIN };

		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return;
		ssize_t n = read(c->err_fd, chunk, sizeof chunk);
		if (n > 0)
			add_stderr(c, chunk, (size_t)n);
		else if (n == 0 || errno != EINTR)
			close_fd(&c->err_fd);
	}
}

static int pump(struct mcp_client *c, long long deadline, bool want_write)
{
	struct pollfd pf[3];
	int nf = 0, io = -1, ie = -1, iw = -1;
	char chunk[65536];
	long long now = monotonic_ms();
	int wait = deadline <= now ? 0 : (int)(deadline - now > INT_MAX ? INT_MAX : deadline - now);

	if (c->out_fd >= 0)
		io = nf, pf[nf++] = (struct pollfd){ .fd = c->out_fd, .events = POLLIN };
	if (c->err_fd >= 0)
		ie = nf, pf[nf++] = (struct pollfd){ .fd = c->err_fd, .events = POLLIN };
	if (want_write && c->in_fd >= 0)
		iw = nf, pf[nf++] = (struct pollfd){ .fd = c->in_fd, .events = POLLOUT };
	if (io < 0)
		return died_eof(c);
	int r = poll(pf, (nfds_t)nf, wait);
	if (r < 0)
		return errno == EINTR ? 0 : die(c, "cannot be read: poll: %s", strerror(errno));
	if (r == 0)
		return MCP_ETIMEOUT;
	if (ie >= 0 && (pf[ie].revents & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = read(c->err_fd, chunk, sizeof chunk);
		if (n > 0)
			add_stderr(c, chunk, (size_t)n);
		else if (n == 0 || errno != EINTR)
			close_fd(&c->err_fd);
	}
	if (pf[io].revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = read(c->out_fd, chunk, sizeof chunk);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
			close_fd(&c->out_fd);
			last_words(c);
			return died_eof(c);
		}
		if (n > 0 && buf_add(&c->line, chunk, (size_t)n) < 0)
			return die(c, "wrote a message longer than %zu bytes", c->max_line);
		if (!memchr(c->line.buf, '\n', c->line.len) && c->line.len > c->max_line)
			return die(c, "wrote a message longer than %zu bytes", c->max_line);
	}
	(void)iw;
	return 0;
}

/* A batch's messages (an array of objects; JSON-RPC 2.0, which MCP
 * 2025-03-26 requires a client to take) to hand out one by one: the first
 * in *msg.  False for anything else (an empty array among them). */
static bool take_batch(struct mcp_client *c, jv v, jv *msg)
{
	bool ok = jv_get_kind(v) == JV_KIND_ARRAY && jv_array_length(jv_copy(v)) > 0;

	if (jv_get_kind(v) == JV_KIND_ARRAY) {
		jv_array_foreach(v, i, m) {
			ok = ok && jv_get_kind(m) == JV_KIND_OBJECT;
			jv_free(m);
			(void)i;
		}
	}
	if (!ok) {
		jv_free(v);
		return false;
	}
	*msg = jv_array_get(jv_copy(v), 0);
	jv_free(c->batch);
	c->batch = jv_array_slice(v, 1, jv_array_length(jv_copy(v)));
	return true;
}

/* The members or elements of a container's text, as json_skim_*() find them. */
struct part {
	const char *key, *value;       /* key: NULL for an element; as written, without quotes */
	size_t key_len, value_len;
};

struct parts {
	struct part *v;
	size_t n;
};

static void add_part(struct parts *ps, const char *key, size_t key_len, const char *value, size_t value_len)
{
	ps->v = xrealloc(ps->v, (ps->n + 1) * sizeof *ps->v);
	ps->v[ps->n++] = (struct part){ key, value, key_len, value_len };
}

static void on_member(const char *key, size_t key_len, const char *value, size_t value_len, void *payload)
{
	add_part(payload, key, key_len, value, value_len);
}

static void on_element(const char *value, size_t value_len, void *payload)
{
	add_part(payload, NULL, 0, value, value_len);
}

/*
 * text read as far as libjq can: whole when it can, else (levels > 0) an
 * object or array made of its parts read the same way, levels - 1 down.
 * A part still too deep for libjq is null, its path (path, consumed, plus
 * its key or index) appended to *holes; a part that is not JSON sets *bad.
 */
static jv read_apart(const char *text, size_t len, int levels, jv path, jv *holes, bool *bad)
{
	jv v = json_parse(text, len);

	if (jv_is_valid(v)) {
		jv_free(path);
		return v;
	}
	jv_free(v);
	char *copy = xstrndup(text, len);    /* (the skimmers want a NUL after it) */
	struct parts ps = { NULL, 0 };
	bool object = false, array = false;

	if (levels > 0) {
		object = json_skim_members(copy, len, on_member, &ps) == 0;
		if (!object) {
			free(ps.v);
			ps = (struct parts){ NULL, 0 };
			array = json_skim_elements(copy, len, on_element, &ps) == 0;
		}
	}
	if (object || array) {
		v = object ? jv_object() : jv_array();
		for (size_t i = 0; i < ps.n && !*bad; i++) {
			jv key = jv_null();
			if (object) {
				/* the key as JSON reads it (escapes and all): its quotes are around it */
				key = json_parse(ps.v[i].key - 1, ps.v[i].key_len + 2);
				if (jv_get_kind(key) != JV_KIND_STRING) {
					jv_free(key);
					*bad = true;
					break;
				}
			}
			jv at = jv_array_append(jv_copy(path), object ? jv_copy(key) : jv_number((double)i));
			jv part = read_apart(ps.v[i].value, ps.v[i].value_len, levels - 1, at, holes, bad);
			v = object ? jv_object_set(v, key, part) : jv_array_append(v, part);
		}
		jv_free(path);
	} else if (json_nesting(text, len) > JQ_MAX_NESTING) {
		*holes = jv_array_append(*holes, path);
		v = jv_null();
	} else {
		jv_free(path);
		*bad = true;
		v = jv_null();
	}
	free(ps.v);
	free(copy);
	return v;
}

/*
 * The next message as a JSON object in *msg: the rest of a batch first,
 * else the next whole line of stdout (a batch there is read message by
 * message): 1, or 0 when no whole line is buffered, or MCP_EDEAD for a
 * line that is neither a JSON object nor a batch of them.  Blank lines are
 * skipped.  A message nested deeper than libjq reads is read apart
 * (read_apart): c->deep, and c->holes says which parts of it are null.
 */
static int next_message(struct mcp_client *c, jv *msg)
{
	c->deep = false;
	if (jv_array_length(jv_copy(c->holes)) > 0) {
		jv_free(c->holes);
		c->holes = jv_array();
	}
	if (jv_array_length(jv_copy(c->batch)) > 0) {
		*msg = jv_array_get(jv_copy(c->batch), 0);
		c->batch = jv_array_slice(c->batch, 1, jv_array_length(jv_copy(c->batch)));
		return 1;
	}
	for (;;) {
		char *nl = memchr(c->line.buf, '\n', c->line.len);
		if (!nl)
			return 0;
		size_t n = (size_t)(nl - c->line.buf);
		if (n > c->max_line)
			return die(c, "wrote a message longer than %zu bytes", c->max_line);
		size_t len = n;
		if (len && c->line.buf[len - 1] == '\r')
			len--;
		bool blank = strspn(c->line.buf, " \t\r") >= len;
		jv v = blank ? jv_null() : json_parse(c->line.buf, len);
		bool deep = !blank && !jv_is_valid(v) && json_nesting(c->line.buf, len) > JQ_MAX_NESTING;
		bool bad = false;
		if (deep) {
			jv_free(v);
			v = read_apart(c->line.buf, len, TAKE_APART, jv_array(), &c->holes, &bad);
		}
		char head[120];
		snprintf(head, sizeof head, "%.*s", (int)(len < 100 ? len : 100), c->line.buf);
		memmove(c->line.buf, nl + 1, c->line.len - n - 1);
		buf_truncate(&c->line, c->line.len - n - 1);
		if (blank)
			continue;
		if (jv_get_kind(v) == JV_KIND_OBJECT && !bad) {
			c->deep = deep;
			*msg = v;
			return 1;
		}
		if (deep && !bad && jv_get_kind(v) == JV_KIND_ARRAY) {
			jv_free(v);
			return die(c, "wrote a JSON-RPC batch nested deeper than the %d levels Forge reads "
				   "(an array counts 1, an object 2): '%s…'", JQ_MAX_NESTING, head);
		}
		if (!deep && take_batch(c, v, msg))
			return 1;
		if (deep)
			jv_free(v);
		return die(c, "wrote something that is not a JSON-RPC message on stdout: '%s%s'", head,
			   len > 100 ? "…" : "");
	}
}

/* ---- writing ------------------------------------------------------------- */

/* Write c->unsent to the server's stdin, reading its output meanwhile (it
 * may not read before it has written).  0, MCP_ETIMEOUT with the rest
 * still in c->unsent, or MCP_EDEAD. */
static int send_all(struct mcp_client *c, long long deadline)
{
	sigset_t set, saved, pend;
	struct timespec zero = { 0, 0 };
	int rc = 0;

	if (c->in_fd < 0)
		return die(c, "has its stdin closed");
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigpending(&pend);
	bool was_pending = sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &saved);
	while (c->unsent_off < c->unsent.len && rc == 0) {
		ssize_t w = write(c->in_fd, c->unsent.buf + c->unsent_off, c->unsent.len - c->unsent_off);
		if (w > 0) {
			c->unsent_off += (size_t)w;
		} else if (w < 0 && errno == EPIPE) {
			if (!was_pending)
				sigtimedwait(&set, NULL, &zero);
			close_fd(&c->in_fd);
			rc = died_eof(c);
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			rc = pump(c, deadline, true);
		} else {
			rc = die(c, "cannot be written to: %s", strerror(errno));
		}
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (c->unsent_off == c->unsent.len) {
		buf_reset(&c->unsent);
		c->unsent_off = 0;
	}
	return rc;
}

/* Send msg (consumed), one line, after what a timeout left unsent: the
 * stdio transport is one whole message a line, so a message cut by the
 * deadline is finished before the next, never followed by another.  At
 * the deadline (MCP_ETIMEOUT) a droppable message none of which is
 * written yet is dropped, any other kept to go first next time.
 * *started (may be NULL): some of it went. */
static int send_msg(struct mcp_client *c, jv msg, long long deadline, bool droppable, bool *started)
{
	size_t at = c->unsent.len;

	msg = json_set(msg, "jsonrpc", jv_string("2.0"));
	char *s = json_dumps(msg, false);
	buf_adds(&c->unsent, s);
	buf_addch(&c->unsent, '\n');
	free(s);
	int rc = send_all(c, deadline);
	bool went = rc == 0 || c->unsent_off > at;
	if (rc == MCP_ETIMEOUT && droppable && !went)
		buf_truncate(&c->unsent, at);
	if (started)
		*started = went;
	return rc;
}

/* A notification: never dropped (a cancellation must follow the rest of
 * the request it cancels). */
static int notify(struct mcp_client *c, const char *method, jv params, long long deadline)
{
	jv m = json_set(jv_object(), "method", jv_string(method));
	if (jv_get_kind(params) != JV_KIND_NULL)
		m = json_set(m, "params", params);
	else
		jv_free(params);
	return send_msg(c, m, deadline, false, NULL);
}

/* ---- requests ------------------------------------------------------------ */

/* A message that is not the answer we wait for: a request of the server's,
 * a notification, or a late answer (dropped). */
static int handle_other(struct mcp_client *c, jv msg, long long deadline)
{
	const char *method = json_get_str(msg, "method");
	jv id = json_get(msg, "id");
	int rc = 0;

	if (method && jv_get_kind(id) != JV_KIND_NULL && jv_get_kind(id) != JV_KIND_INVALID) {
		jv reply = json_set(jv_object(), "id", jv_copy(id));
		if (!strcmp(method, "ping"))
			reply = json_set(reply, "result", jv_object());
		else
			reply = json_set(reply, "error", json_set(json_set(jv_object(), "code", jv_number(-32601)),
								  "message", jv_string_fmt("method not found: %s", method)));
		rc = send_msg(c, reply, deadline, true, NULL);
	} else if (method && !strcmp(method, "notifications/tools/list_changed")) {
		c->tools_stale = true;
	}
	jv_free(id);
	jv_free(msg);
	return rc;
}

static bool same_id(jv id, long want)
{
	return jv_get_kind(id) == JV_KIND_NUMBER && jv_number_value(id) == (double)want;
}

/* A value a server sent, for a message: its JSON, cut at max bytes. */
static char *shown_json(jv v, size_t max)
{
	char *d = json_dumps(v, false);
	size_t n = strlen(d);

	if (n > max) {
		while (max && ((unsigned char)d[max] & 0xc0) == 0x80)
			max--;
		d[max] = '\0';
		char *cut = xmalloc(max + 4);
		memcpy(cut, d, max);
		memcpy(cut + max, "\xe2\x80\xa6", 4);
		free(d);
		d = cut;
	}
	return d;
}

/* The JSON-RPC error of an answer as a message; MCP_ERPC.  A code that is
 * no number, a message that is no string are said as such (before: "JSON-RPC
 * error 0", "no message"). */
static int rpc_error(struct mcp_client *c, const char *method, jv err, const char *note)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "MCP server '%s': %s failed: ", c->name, method);
	if (jv_get_kind(err) != JV_KIND_OBJECT) {
		char *e = shown_json(jv_copy(err), 300);
		buf_addf(&b, "an error that is not a JSON-RPC error object: %s", e);
		free(e);
	} else {
		jv m = json_get(err, "message"), code = json_get(err, "code"), data = json_get(err, "data");

		if (jv_get_kind(m) == JV_KIND_STRING) {
			buf_adds(&b, jv_string_value(m));
		} else if (!json_has(err, "message")) {
			buf_adds(&b, "no message");
		} else {
			char *t = shown_json(jv_copy(m), 300);
			buf_addf(&b, "a message that is not a string: %s", t);
			free(t);
		}
		if (jv_get_kind(code) == JV_KIND_NUMBER) {
			buf_addf(&b, " (JSON-RPC error %.0f)", jv_number_value(code));
		} else if (!json_has(err, "code")) {
			buf_adds(&b, " (a JSON-RPC error without a code)");
		} else {
			char *t = shown_json(jv_copy(code), 60);
			buf_addf(&b, " (a JSON-RPC error whose code %s is not a number)", t);
			free(t);
		}
		if (jv_get_kind(data) != JV_KIND_NULL) {
			char *d = json_dumps(jv_copy(data), false);
			buf_addf(&b, ": %.300s", d);
			free(d);
		}
		jv_free(m);
		jv_free(code);
		jv_free(data);
	}
	if (note)
		buf_addf(&b, "%s", note);
	forge_error("%s", b.buf);
	buf_release(&b);
	return MCP_ERPC;
}

/* A path of a message (["result", "tools", 3, "inputSchema"]) as
 * result.tools[3].inputSchema, into b. */
static void add_path(struct buf *b, jv path)
{
	jv_array_foreach(path, i, k) {
		if (jv_get_kind(k) == JV_KIND_NUMBER)
			buf_addf(b, "[%.0f]", jv_number_value(k));
		else if (jv_get_kind(k) == JV_KIND_STRING)
			buf_addf(b, "%s%.80s", i ? "." : "", jv_string_value(k));
		jv_free(k);
	}
}

/*
 * An answer without a method whose id cannot be one of our requests' (ours
 * are numbers): a protocol error, said at once (before: dropped, and the
 * request waited for its whole time limit, then said "no answer").  A
 * number is not: a late answer to a request that timed out, dropped.  Nor
 * null with an error: the server could not read a request (the caller
 * takes it as the answer).
 */
static bool foreign_answer(jv msg)
{
	jv id = json_get(msg, "id");
	jv_kind k = json_has(msg, "id") ? jv_get_kind(id) : JV_KIND_INVALID;
	bool answer = !json_has(msg, "method") && (json_has(msg, "result") || json_has(msg, "error"));
	bool foreign = answer && k != JV_KIND_NUMBER && !(k == JV_KIND_NULL && json_has(msg, "error"));

	jv_free(id);
	return foreign;
}

static int foreign_id(struct mcp_client *c, const char *method, long want, jv msg)
{
	jv id = json_get(msg, "id");
	char mine[32];
	int rc;

	snprintf(mine, sizeof mine, "%ld", want);
	if (jv_get_kind(id) == JV_KIND_STRING && !strcmp(jv_string_value(id), mine)) {
		rc = die(c, "answered %s with the id \"%ld\", a string, where the request's id is the number %ld "
			 "(JSON-RPC: an answer has the request's id, of the same type)", method, want, want);
	} else if (!json_has(msg, "id")) {
		rc = die(c, "sent an answer without an id while Forge waited for its answer to %s (id %ld)",
			 method, want);
	} else {
		char *shown = shown_json(jv_copy(id), 60);
		rc = die(c, "sent an answer with the id %s, which no request of Forge's has (their ids are numbers; "
			 "%s's is %ld)", shown, method, want);
		free(shown);
	}
	jv_free(id);
	return rc;
}

/*
 * Send method with params (consumed) and wait for its answer: 0 with its
 * result in *result, or a negative code with a message.  holes: NULL, and
 * an answer too deep to read whole fails (MCP_ERPC); else the answer is
 * taken with the parts that were too deep as null, their paths in *holes
 * (a new array; tools/list, which leaves out the tools they are in).
 */
static int request_timed(jv *result, struct mcp_client *c, const char *method, jv params, long timeout_ms,
			 jv *holes)
{
	long long deadline = monotonic_ms() + timeout_ms;
	long id = ++c->next_id;
	bool sent = false;
	int rc;

	*result = jv_null();
	if (holes)
		*holes = jv_array();
	if (c->dead) {
		jv_free(params);
		return die(c, "%s", c->death);
	}
	jv m = json_set(json_set(jv_object(), "id", jv_number((double)id)), "method", jv_string(method));
	if (jv_get_kind(params) != JV_KIND_NULL)
		m = json_set(m, "params", params);
	else
		jv_free(params);
	if ((rc = send_msg(c, m, deadline, true, &sent)) < 0)
		goto timeout;
	for (;;) {
		jv msg;
		while ((rc = next_message(c, &msg)) == 1) {
			jv got = json_get(msg, "id");
			bool mine = same_id(got, id) && !json_has(msg, "method");
			/* an error with the id null: the server could not read the
			 * request (ours: one at a time is under way) */
			bool unread = json_has(msg, "id") && jv_get_kind(got) == JV_KIND_NULL &&
				      !json_has(msg, "method") && json_has(msg, "error");
			jv_free(got);
			if (!mine && !unread && foreign_answer(msg)) {
				rc = foreign_id(c, method, id, msg);
				jv_free(msg);
				return rc;
			}
			if (!mine && !unread) {
				if ((rc = handle_other(c, msg, deadline)) < 0)
					goto timeout;
				continue;
			}
			if (c->deep && !holes) {
				struct buf where = BUF_INIT;
				jv first = jv_array_length(jv_copy(c->holes)) > 0 ? jv_array_get(jv_copy(c->holes), 0)
										: jv_null();
				if (jv_get_kind(first) == JV_KIND_ARRAY) {
					buf_adds(&where, " (at ");
					add_path(&where, first);
					buf_addch(&where, ')');
				}
				forge_error("MCP server '%s': %s: its answer nests deeper than the %d levels Forge reads "
					    "(an array counts 1, an object 2)%s; the server stays usable", c->name, method,
					    JQ_MAX_NESTING, where.len ? where.buf : "");
				jv_free(first);
				buf_release(&where);
				rc = MCP_ERPC;
			} else if (json_has(msg, "error")) {
				jv err = json_get(msg, "error");
				rc = rpc_error(c, method, err, unread ? " (an answer with the id null: the server could not "
						"read the request)" : NULL);
				jv_free(err);
			} else {
				*result = json_get(msg, "result");
				rc = 0;
				/* every MCP result is an object: null, a string or no
				 * result at all said nothing (before: an empty answer, exit 0) */
				if (jv_get_kind(*result) != JV_KIND_OBJECT) {
					jv_free(*result);
					*result = jv_null();
					forge_error("MCP server '%s': %s answered without a result object",
						    c->name, method);
					rc = MCP_ERPC;
				} else if (holes && c->deep) {
					jv_free(*holes);
					*holes = jv_copy(c->holes);
				}
			}
			jv_free(msg);
			return rc;
		}
		if (rc < 0)
			return rc;
		if ((rc = pump(c, deadline, false)) < 0)
			break;
	}
timeout:
	if (rc == MCP_ETIMEOUT && !sent) {
		forge_error("MCP server '%s': %s: not sent: the server read nothing within %.3g s",
			    c->name, method, (double)timeout_ms / 1000);
	} else if (rc == MCP_ETIMEOUT && !strcmp(method, "initialize")) {
		/* not cancelled: "The initialize request MUST NOT be cancelled
		 * by clients" (MCP 2025-06-18, cancellation); the server is
		 * stopped instead */
		forge_error("MCP server '%s': %s: no answer within %.3g s", c->name, method,
			    (double)timeout_ms / 1000);
	} else if (rc == MCP_ETIMEOUT) {
		/* cancel it (after its rest when it went in part); its late
		 * answer will not match a request we wait for */
		char why[96];
		snprintf(why, sizeof why, "no answer within %.3g s", (double)timeout_ms / 1000);
		jv p = json_set(json_set(jv_object(), "requestId", jv_number((double)id)), "reason", jv_string(why));
		notify(c, "notifications/cancelled", p, monotonic_ms() + 1000);
		forge_error("MCP server '%s': %s: %s; cancelled", c->name, method, why);
	}
	return rc;
}

int mcp_request(jv *result, struct mcp_client *c, const char *method, jv params)
{
	return request_timed(result, c, method, params, c->timeout_ms, NULL);
}

/* ---- lifecycle ----------------------------------------------------------- */

static bool supported(const char *v)
{
	for (size_t i = 0; v && mcp_protocol_versions[i]; i++)
		if (!strcmp(v, mcp_protocol_versions[i]))
			return true;
	return false;
}

static int initialize(struct mcp_client *c, const struct mcp_opts *o)
{
	jv info = json_set(json_set(jv_object(), "name", jv_string("forge")), "version",
			   jv_string(o->client_version ? o->client_version : "0"));
	jv params = json_set(jv_object(), "protocolVersion", jv_string(MCP_PROTOCOL_VERSION));
	params = json_set(params, "capabilities", jv_object());
	params = json_set(params, "clientInfo", info);
	jv res;
	int rc = request_timed(&res, c, "initialize", params, o->init_timeout_ms ? o->init_timeout_ms : c->timeout_ms,
			       NULL);

	if (rc < 0)
		return rc;
	const char *v = json_get_str(res, "protocolVersion");
	if (!supported(v)) {
		forge_error("MCP server '%s' speaks protocol version '%s', which Forge does not support "
			    "(Forge asked for %s and accepts %s, %s, %s)", c->name, v ? v : "(none)",
			    MCP_PROTOCOL_VERSION, mcp_protocol_versions[0], mcp_protocol_versions[1],
			    mcp_protocol_versions[2]);
		jv_free(res);
		return MCP_EFAIL;
	}
	c->protocol = xstrdup(v);
	c->server_info = json_get(res, "serverInfo");
	if (jv_get_kind(c->server_info) == JV_KIND_INVALID)
		c->server_info = jv_null();
	if (json_get_str(res, "instructions"))
		c->instructions = xstrdup(json_get_str(res, "instructions"));
	jv_free(res);
	return notify(c, "notifications/initialized", jv_null(), monotonic_ms() + c->timeout_ms);
}

int mcp_open(struct mcp_client **out, const struct mcp_opts *o)
{
	struct mcp_client *c = xcalloc(1, sizeof *c);
	int rc;

	*out = NULL;
	c->name = xstrdup(o->name ? o->name : "mcp");
	c->in_fd = c->out_fd = c->err_fd = -1;
	c->status = -1;
	c->max_line = o->max_line ? o->max_line : DEFAULT_MAX_LINE;
	c->err_cap = o->stderr_cap ? o->stderr_cap : DEFAULT_STDERR_CAP;
	c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	c->grace_ms = o->kill_grace_ms > 0 ? o->kill_grace_ms : MCP_KILL_GRACE_MS;
	c->tools = jv_null();
	c->batch = jv_array();
	c->holes = jv_array();
	c->unreadable = jv_array();
	c->server_info = jv_null();
	buf_init(&c->line, c->max_line + 65536 + 1);
	buf_init(&c->err, 0);
	buf_init(&c->unsent, 0);
	if (!o->argv || !o->argv[0] || !*o->argv[0]) {
		rc = forge_error("MCP server '%s': no command", c->name);
		goto fail;
	}
	if ((rc = spawn(c, o)) < 0)
		goto fail;
	if ((rc = initialize(c, o)) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	{
		char why[2048];
		snprintf(why, sizeof why, "%s", forge_last_error());
		mcp_close(c);
		forge_error("%s", why);
	}
	return rc;
}

/* The index of the tool a hole of a tools/list answer is in
 * (["result", "tools", I, ...]), or -1. */
static int hole_tool(jv path)
{
	jv a = jv_array_get(jv_copy(path), 0), b = jv_array_get(jv_copy(path), 1), i = jv_array_get(jv_copy(path), 2);
	int at = jv_get_kind(a) == JV_KIND_STRING && !strcmp(jv_string_value(a), "result") &&
		 jv_get_kind(b) == JV_KIND_STRING && !strcmp(jv_string_value(b), "tools") &&
		 jv_get_kind(i) == JV_KIND_NUMBER ? (int)jv_number_value(i) : -1;

	jv_free(a);
	jv_free(b);
	jv_free(i);
	return at;
}

/* Why the tool at index i of a tools/list answer is left out, when one
 * of holes is in it: its definition too deep to read.  NULL when none. */
static char *hole_in_tool(jv holes, int i)
{
	char *why = NULL;

	jv_array_foreach(holes, k, path) {
		if (!why && hole_tool(path) == i) {
			struct buf b = BUF_INIT;
			jv rest = jv_array_slice(jv_copy(path), 3, jv_array_length(jv_copy(path)));
			buf_addf(&b, "its definition nests deeper than the %d levels Forge reads "
				 "(an array counts 1, an object 2) at ", JQ_MAX_NESTING);
			add_path(&b, rest);
			jv_free(rest);
			why = buf_detach(&b, NULL);
		}
		jv_free(path);
		(void)k;
	}
	return why;
}

/* One tools/list page after cursor (NULL: the first).  A tool too deep to
 * read is left out, and noted in c->unreadable. */
static int list_page(jv *tools, char **next, struct mcp_client *c, const char *cursor)
{
	jv res, holes;
	jv params = cursor ? json_set(jv_object(), "cursor", jv_string(cursor)) : jv_null();
	int rc = request_timed(&res, c, "tools/list", params, c->timeout_ms, &holes);

	*next = NULL;
	if (rc < 0) {
		jv_free(holes);
		return rc;
	}
	jv page = json_get(res, "tools");
	if (jv_get_kind(page) != JV_KIND_ARRAY) {
		jv_free(page);
		jv_free(res);
		jv_free(holes);
		forge_error("MCP server '%s': tools/list answered without a tools array", c->name);
		return MCP_ERPC;
	}
	jv_array_foreach(page, i, t) {
		char *why = hole_in_tool(holes, i);
		if (why) {
			c->unreadable = jv_array_append(c->unreadable, json_set(json_set(jv_object(), "name",
				json_str_or_null(json_get_str(t, "name"))), "reason", jv_string(why)));
			free(why);
			jv_free(t);
		} else if (json_get_str(t, "name")) {
			*tools = jv_array_append(*tools, t);
		} else {
			jv_free(t);
		}
	}
	jv_free(holes);
	if (json_get_str(res, "nextCursor") && *json_get_str(res, "nextCursor"))
		*next = xstrdup(json_get_str(res, "nextCursor"));
	jv_free(page);
	jv_free(res);
	return 0;
}

int mcp_tools(jv *out, struct mcp_client *c)
{
	*out = jv_null();
	if (jv_get_kind(c->tools) == JV_KIND_ARRAY && !c->tools_stale) {
		*out = jv_copy(c->tools);
		return 0;
	}
	jv tools = jv_array(), seen = jv_object();
	char *cursor = NULL, *next;
	int rc, pages = 1;

	c->tools_stale = false;
	c->tools_cut[0] = '\0';
	jv_free(c->unreadable);
	c->unreadable = jv_array();
	/* a pager that goes round (A, B, A) or never ends: the pages so far,
	 * and why there are no more (mcp_tools_cut()) */
	while ((rc = list_page(&tools, &next, c, cursor)) == 0 && next) {
		free(cursor);
		cursor = next;
		if (json_has(seen, cursor)) {
			snprintf(c->tools_cut, sizeof c->tools_cut,
				 "tools/list gave the nextCursor '%.60s' a second time (after %d pages)", cursor, pages);
			break;
		}
		if (pages == MAX_PAGES) {
			snprintf(c->tools_cut, sizeof c->tools_cut, "tools/list has more than %d pages",
				 MAX_PAGES);
			break;
		}
		seen = json_set(seen, cursor, jv_true());
		pages++;
	}
	free(cursor);
	jv_free(seen);
	if (rc < 0) {
		jv_free(tools);
		return rc;
	}
	jv_free(c->tools);
	c->tools = tools;
	*out = jv_copy(tools);
	return 0;
}

/* The content array as text for a model. */
/* item's string field key into b, whole: a NUL in it as the six characters
 * \u0000, as run_command's output shows one (a C string ends there, and
 * the rest went missing without a word).  False when it is no string. */
static bool add_text(struct buf *b, jv item, const char *key)
{
	jv s = json_get(item, key);
	bool ok = jv_get_kind(s) == JV_KIND_STRING;

	if (ok) {
		const char *p = jv_string_value(s), *end = p + jv_string_length_bytes(jv_copy(s)), *nul;
		while ((nul = memchr(p, '\0', (size_t)(end - p))) != NULL) {
			buf_add(b, p, (size_t)(nul - p));
			buf_adds(b, "\\u0000");
			p = nul + 1;
		}
		buf_add(b, p, (size_t)(end - p));
	}
	jv_free(s);
	return ok;
}

static char *content_text(jv content, jv structured)
{
	struct buf b = BUF_INIT;
	bool texts = false;

	if (jv_get_kind(content) == JV_KIND_ARRAY) {
		jv_array_foreach(content, i, item) {
			const char *type = json_get_str(item, "type");
			const char *mime = json_get_str(item, "mimeType");
			if (b.len)
				buf_addch(&b, '\n');
			if (type && !strcmp(type, "text") && json_get_str(item, "text")) {
				add_text(&b, item, "text");
				texts = true;
			} else if (type && (!strcmp(type, "image") || !strcmp(type, "audio"))) {
				const char *data = json_get_str(item, "data");
				buf_addf(&b, "[%s: %s, %zu bytes of base64]", type, mime ? mime : "?",
					 data ? strlen(data) : 0);
			} else if (type && !strcmp(type, "resource")) {
				jv r = json_get(item, "resource");
				const char *uri = json_get_str(r, "uri");
				if (json_get_str(r, "text")) {
					buf_addf(&b, "[resource %s]\n", uri ? uri : "");
					add_text(&b, r, "text");
				} else
					buf_addf(&b, "[resource %s (binary)]", uri ? uri : "");
				jv_free(r);
			} else if (type && !strcmp(type, "resource_link")) {
				buf_addf(&b, "[resource link %s]", json_get_str(item, "uri") ? json_get_str(item, "uri") : "");
			} else {
				buf_addf(&b, "[%s content]", type ? type : "unknown");
			}
			jv_free(item);
			(void)i;
		}
	}
	if (!texts && jv_get_kind(structured) == JV_KIND_OBJECT) {
		char *s = json_dumps(jv_copy(structured), false);
		if (b.len)
			buf_addch(&b, '\n');
		buf_adds(&b, s);
		free(s);
	}
	return buf_detach(&b, NULL);
}

int mcp_call(struct mcp_call_result *out, struct mcp_client *c, const char *name, jv arguments)
{
	long long t0 = monotonic_ms();
	jv res, tools;
	int rc;

	memset(out, 0, sizeof *out);
	out->content = jv_null();
	out->structured = jv_null();
	if (c->tools_stale) {
		if ((rc = mcp_tools(&tools, c)) < 0)
			return rc;
		jv_free(tools);
	}
	jv params = json_set(jv_object(), "name", jv_string(name));
	params = json_set(params, "arguments",
			  jv_get_kind(arguments) == JV_KIND_OBJECT ? jv_copy(arguments) : jv_object());
	if ((rc = mcp_request(&res, c, "tools/call", params)) < 0)
		return rc;
	out->is_error = json_get_bool(res, "isError", false);
	out->content = json_get(res, "content");
	out->structured = json_get(res, "structuredContent");
	if (jv_get_kind(out->structured) == JV_KIND_INVALID)
		out->structured = jv_null();
	if (jv_get_kind(out->content) == JV_KIND_INVALID)
		out->content = jv_null();
	out->text = content_text(out->content, out->structured);
	out->duration_ms = monotonic_ms() - t0;
	jv_free(res);
	return 0;
}

void mcp_call_result_release(struct mcp_call_result *r)
{
	if (!r)
		return;
	free(r->text);
	jv_free(r->content);
	jv_free(r->structured);
	memset(r, 0, sizeof *r);
	r->content = r->structured = jv_null();
}

const char *mcp_protocol(const struct mcp_client *c)
{
	return c->protocol;
}

jv mcp_server_info(const struct mcp_client *c)
{
	return c->server_info;
}

const char *mcp_instructions(const struct mcp_client *c)
{
	return c->instructions;
}

const char *mcp_tools_cut(const struct mcp_client *c)
{
	return c->tools_cut[0] ? c->tools_cut : NULL;
}

jv mcp_tools_unreadable(const struct mcp_client *c)
{
	return c->unreadable;
}

void mcp_set_timeout(struct mcp_client *c, long ms)
{
	if (ms > 0)
		c->timeout_ms = ms;
}

bool mcp_alive(const struct mcp_client *c)
{
	return !c->dead;
}

const char *mcp_death(const struct mcp_client *c)
{
	return c->dead ? c->death : "";
}

int mcp_pid(const struct mcp_client *c)
{
	return (int)c->pid;
}

const char *mcp_stderr(struct mcp_client *c)
{
	char chunk[65536];
	ssize_t n;

	/* whatever is there now, without waiting */
	while (c->err_fd >= 0) {
		struct pollfd pf = { .fd = c->err_fd, .events = POLLIN };
		if (poll(&pf, 1, 0) <= 0)
			break;
		n = read(c->err_fd, chunk, sizeof chunk);
		if (n <= 0) {
			close_fd(&c->err_fd);
			break;
		}
		add_stderr(c, chunk, (size_t)n);
	}
	struct buf b = BUF_INIT;
	size_t skip = c->err.len > c->err_cap ? c->err.len - c->err_cap : 0;
	if (skip + c->err_dropped)
		buf_addf(&b, "[… %zu bytes omitted …]\n", skip + c->err_dropped);
	buf_add(&b, c->err.buf + skip, c->err.len - skip);
	free(c->err_view);
	c->err_view = buf_detach(&b, NULL);
	return c->err_view;
}

/* Reap every client of cs that is still running, within ms of start
 * (monotonic), all at once: one wait for them all. */
static void reap_all(struct mcp_client **cs, size_t n, long long start, bool grace)
{
	for (size_t i = 0; i < n; i++) {
		struct mcp_client *c = cs[i];
		if (!c || !c->pid)
			continue;
		long long left = start + (grace ? c->grace_ms : 10000) - monotonic_ms();
		reap(c, left > 0 ? (long)left : 0);
	}
}

static void signal_all(struct mcp_client **cs, size_t n, int sig)
{
	for (size_t i = 0; i < n; i++)
		if (cs[i] && cs[i]->pid)
			proc_spawn_signal(cs[i]->pid, sig);
}

void mcp_close_all(struct mcp_client **cs, size_t n, int *status)
{
	for (size_t i = 0; i < n; i++) {
		if (status)
			status[i] = -1;
		if (cs[i])
			close_fd(&cs[i]->in_fd);
	}
	/* one grace for them all, then SIGTERM to every one left and one
	 * more grace, then SIGKILL (before: both graces one server after
	 * another, 4 s each for servers that stay) */
	reap_all(cs, n, monotonic_ms(), true);
	signal_all(cs, n, SIGTERM);
	reap_all(cs, n, monotonic_ms(), true);
	signal_all(cs, n, SIGKILL);
	reap_all(cs, n, monotonic_ms(), false);
	for (size_t i = 0; i < n; i++) {
		struct mcp_client *c = cs[i];
		if (!c)
			continue;
		if (status)
			status[i] = c->status;
		close_fd(&c->out_fd);
		close_fd(&c->err_fd);
		buf_release(&c->line);
		buf_release(&c->unsent);
		buf_release(&c->err);
		jv_free(c->tools);
		jv_free(c->batch);
		jv_free(c->holes);
		jv_free(c->unreadable);
		jv_free(c->server_info);
		free(c->err_view);
		free(c->protocol);
		free(c->instructions);
		free(c->name);
		free(c);
		cs[i] = NULL;
	}
}

void mcp_close_status(struct mcp_client *c, int *status)
{
	int st = -1;

	if (c)
		mcp_close_all(&c, 1, &st);
	if (status)
		*status = st;
}

void mcp_close(struct mcp_client *c)
{
	mcp_close_status(c, NULL);
}
