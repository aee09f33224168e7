/* test_mcp.c - the MCP stdio client against tests/helpers/mcp_server.py:
 * the lifecycle, version negotiation, pagination, list_changed, calls with
 * text and structured content, errors, timeouts with cancellation, crashes,
 * garbage, oversized lines, stderr, shutdown. */
#include "unit.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "mcp/mcp.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char server[4096], logfile[4096];
static char *env[] = { "PATH=/usr/bin:/bin", "MCP_TEST_VAR=visible", NULL };

/* Open the scripted server with extra arguments (NULL-terminated). */
static int open_server_init(struct mcp_client **c, long timeout_ms, long init_ms, const char *const *extra)
{
	const char *argv[16] = { server, "--log", logfile };
	size_t n = 3;
	struct mcp_opts o = MCP_OPTS_INIT;

	for (size_t i = 0; extra && extra[i] && n < 15; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	unlink(logfile);
	o.name = "scripted";
	o.argv = argv;
	o.envp = env;
	o.timeout_ms = timeout_ms;
	o.init_timeout_ms = init_ms;
	o.max_line = 65536;
	o.kill_grace_ms = 5000;
	return mcp_open(c, &o);
}

/* The same with 20 s for initialize, so a slow start is never a timeout. */
static int open_server(struct mcp_client **c, long timeout_ms, const char *const *extra)
{
	return open_server_init(c, timeout_ms, 20000, extra);
}

/* The methods the server received, space-separated. */
static char *received(void)
{
	struct buf text = BUF_INIT, out = BUF_INIT;

	buf_read_file(&text, logfile);
	for (char *line = text.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		jv m = json_parse(line, nl ? (size_t)(nl - line) : strlen(line));
		const char *method = json_get_str(m, "method");
		buf_addf(&out, "%s%s", out.len ? " " : "", method ? method : "(answer)");
		jv_free(m);
	}
	buf_release(&text);
	return buf_detach(&out, NULL);
}

static void test_lifecycle_and_pages(void)
{
	struct mcp_client *c;
	jv tools;

	CHECK_MSG(open_server(&c, 20000, NULL) == 0, "%s", forge_last_error());
	CHECK_STR(mcp_protocol(c), "2025-06-18");
	CHECK_STR(json_get_str(mcp_server_info(c), "name"), "scripted");
	CHECK_STR(mcp_instructions(c), "A scripted server for tests.");
	CHECK(mcp_tools(&tools, c) == 0);
	CHECK_INT(jv_array_length(jv_copy(tools)), 11);    /* 6 pages of 2 */
	jv last = jv_array_get(jv_copy(tools), 10);
	CHECK_STR(json_get_str(last, "name"), "ping_me");
	CHECK(mcp_tools_cut(c) == NULL);
	jv_free(last);
	jv_free(tools);
	int status;
	mcp_close_status(c, &status);
	CHECK_INT(status, 0);     /* it left when its stdin closed */
	char *got = received();
	CHECK_STR(got, "initialize notifications/initialized tools/list tools/list tools/list tools/list "
		       "tools/list tools/list");
	free(got);
	jv first;
	struct buf text = BUF_INIT;
	buf_read_file(&text, logfile);
	first = json_parse(text.buf, strcspn(text.buf, "\n"));
	buf_release(&text);
	jv p = json_get(first, "params");
	CHECK_STR(json_get_str(p, "protocolVersion"), MCP_PROTOCOL_VERSION);
	jv ci = json_get(p, "clientInfo");
	CHECK_STR(json_get_str(ci, "name"), "forge");
	jv_free(ci);
	jv_free(p);
	jv_free(first);
}

/* The number of tools/list requests the server got. */
static int lists_received(void)
{
	char *got = received();
	int n = 0;

	for (const char *p = got; (p = strstr(p, "tools/list")); p++)
		n++;
	free(got);
	return n;
}

/* A pager that goes round stops at the first cursor it gave before, one
 * that never ends at 1000 pages: the tools so far, and a word that the
 * list is cut (before: 1000 pages of repeats, silently). */
static void test_pager_cut(void)
{
	const char *loop[] = { "--pager", "loop", NULL }, *endless[] = { "--pager", "endless", NULL };
	struct mcp_client *c;
	jv tools;

	CHECK(open_server(&c, 20000, loop) == 0);
	CHECK(mcp_tools(&tools, c) == 0);
	CHECK_INT(jv_array_length(tools), 11);
	CHECK_STR(mcp_tools_cut(c), "tools/list gave the nextCursor '2' a second time (after 6 pages)");
	mcp_close(c);
	CHECK_INT(lists_received(), 6);
	CHECK(open_server(&c, 20000, endless) == 0);
	CHECK(mcp_tools(&tools, c) == 0);
	CHECK_INT(jv_array_length(tools), 11);
	CHECK_STR(mcp_tools_cut(c), "tools/list has more than 1000 pages");
	mcp_close(c);
	CHECK_INT(lists_received(), 1000);
}

static void test_versions(void)
{
	struct mcp_client *c;
	const char *old[] = { "--protocol", "2024-11-05", NULL };
	const char *unknown[] = { "--protocol", "1999-01-01", NULL };

	CHECK_MSG(open_server(&c, 20000, old) == 0, "%s", forge_last_error());
	CHECK_STR(mcp_protocol(c), "2024-11-05");
	mcp_close(c);
	CHECK_INT(open_server(&c, 20000, unknown), MCP_EFAIL);
	CHECK(c == NULL);
	CHECK_MSG(strstr(forge_last_error(), "speaks protocol version '1999-01-01', which Forge does not support"),
		  "%s", forge_last_error());
}

static void test_calls(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;

	CHECK(open_server(&c, 20000, NULL) == 0);
	jv a = json_parse("{\"text\":\"hello\"}", 16);
	CHECK(mcp_call(&r, c, "echo", a) == 0);
	jv_free(a);
	CHECK_STR(r.text, "hello");
	CHECK(!r.is_error);
	mcp_call_result_release(&r);

	a = json_parse("{\"a\":2,\"b\":3}", 13);
	CHECK(mcp_call(&r, c, "add", a) == 0);
	jv_free(a);
	CHECK_INT(json_get_num(r.structured, "sum", 0), 5);
	CHECK_STR(r.text, "{\"sum\": 5}");
	mcp_call_result_release(&r);

	CHECK(mcp_call(&r, c, "fail", jv_null()) == 0);
	CHECK(r.is_error);
	CHECK_STR(r.text, "the tool failed on purpose");
	mcp_call_result_release(&r);

	CHECK_INT(mcp_call(&r, c, "rpc_error", jv_null()), MCP_ERPC);
	CHECK_MSG(strstr(forge_last_error(), "tools/call failed: the server refuses (JSON-RPC error -32000): {\"why\":\"asked to\"}"),
		  "%s", forge_last_error());
	mcp_call_result_release(&r);
	CHECK(mcp_alive(c));

	/* the server's ping is answered while we wait */
	CHECK(mcp_call(&r, c, "ping_me", jv_null()) == 0);
	CHECK_STR(r.text, "pong: {}");
	mcp_call_result_release(&r);

	a = json_parse("{\"name\":\"MCP_TEST_VAR\"}", 23);
	CHECK(mcp_call(&r, c, "env", a) == 0);
	jv_free(a);
	CHECK_STR(r.text, "visible");
	mcp_call_result_release(&r);
	mcp_close(c);
}

static void test_list_changed(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;
	jv tools;

	CHECK(open_server(&c, 20000, NULL) == 0);
	CHECK(mcp_tools(&tools, c) == 0);
	CHECK_INT(jv_array_length(tools), 11);
	CHECK(mcp_call(&r, c, "change", jv_null()) == 0);
	mcp_call_result_release(&r);
	CHECK(mcp_tools(&tools, c) == 0);
	CHECK_INT(jv_array_length(tools), 12);
	/* listed again once only */
	CHECK(mcp_tools(&tools, c) == 0);
	jv_free(tools);
	mcp_close(c);
	char *got = received();
	CHECK_MSG(strstr(got, "tools/call tools/list tools/list tools/list tools/list tools/list tools/list") &&
		  !strstr(got, "tools/list tools/list tools/list tools/list tools/list tools/list tools/list"),
		  "%s", got);
	free(got);
}

static void test_timeout_cancels(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;

	CHECK(open_server(&c, 20000, NULL) == 0);
	mcp_set_timeout(c, 300);
	CHECK_INT(mcp_call(&r, c, "hang", jv_null()), MCP_ETIMEOUT);
	CHECK_MSG(strstr(forge_last_error(), "MCP server 'scripted': tools/call: no answer within 0.3 s; cancelled"),
		  "%s", forge_last_error());
	mcp_call_result_release(&r);
	/* still usable */
	mcp_set_timeout(c, 20000);
	jv a = json_parse("{\"text\":\"after\"}", 16);
	CHECK(mcp_call(&r, c, "echo", a) == 0);
	jv_free(a);
	CHECK_STR(r.text, "after");
	mcp_call_result_release(&r);
	mcp_close(c);
	char *got = received();
	CHECK_MSG(strstr(got, "tools/call notifications/cancelled tools/call"), "%s", got);
	free(got);
	struct buf text = BUF_INIT;
	buf_read_file(&text, logfile);
	CHECK(strstr(text.buf, "\"method\": \"notifications/cancelled\", \"params\": {\"requestId\": 2"));
	buf_release(&text);
}

/* mcp_call() with arguments it borrows, freed here. */
static int call_freeing(struct mcp_call_result *r, struct mcp_client *c, const char *name, jv args)
{
	int rc = mcp_call(r, c, name, args);

	jv_free(args);
	return rc;
}

/* A request the deadline cuts while the server reads nothing is finished
 * before anything else is written (before: the cancellation, then the next
 * call, went on the same line and the server died on that line); one that
 * could not start is not sent at all, and not cancelled. */
static void test_cut_request_is_finished(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;
	char gate[4200];
	struct buf big = BUF_INIT;

	snprintf(gate, sizeof gate, "%s.gate", logfile);
	unlink(gate);
	CHECK(open_server(&c, 20000, NULL) == 0);
	mcp_set_timeout(c, 300);
	CHECK_INT(call_freeing(&r, c, "block", json_set(jv_object(), "until", jv_string(gate))), MCP_ETIMEOUT);
	mcp_call_result_release(&r);
	/* 2 MiB: more than a pipe holds, so the server, blocked, takes a part */
	buf_adds(&big, "{\"text\":\"");
	for (int i = 0; i < 2048; i++)
		buf_addf(&big, "%01024d", 0);
	buf_adds(&big, "\"}");
	CHECK_INT(call_freeing(&r, c, "len", json_parse(big.buf, big.len)), MCP_ETIMEOUT);
	CHECK_MSG(strstr(forge_last_error(), "tools/call: no answer within 0.3 s; cancelled"), "%s", forge_last_error());
	mcp_call_result_release(&r);
	/* the pipe is full: this one cannot start */
	CHECK_INT(call_freeing(&r, c, "echo", json_parse("{\"text\":\"lost\"}", 15)), MCP_ETIMEOUT);
	CHECK_MSG(strstr(forge_last_error(), "tools/call: not sent: the server read nothing within 0.3 s"), "%s",
		  forge_last_error());
	mcp_call_result_release(&r);
	CHECK(mcp_alive(c));
	FILE *f = fopen(gate, "w");
	CHECK(f && fclose(f) == 0);
	mcp_set_timeout(c, 20000);
	CHECK_MSG(call_freeing(&r, c, "echo", json_parse("{\"text\":\"after\"}", 16)) == 0, "%s", forge_last_error());
	CHECK_STR(r.text, "after");
	mcp_call_result_release(&r);
	mcp_close(c);
	char *got = received();
	CHECK_MSG(strstr(got, "notifications/initialized tools/call notifications/cancelled tools/call notifications/cancelled tools/call") &&
		  !strstr(got, "(answer)"), "%s", got);
	free(got);
	struct buf text = BUF_INIT;
	buf_read_file(&text, logfile);
	CHECK(!strstr(text.buf, "lost"));
	buf_release(&text);
	buf_release(&big);
	unlink(gate);
}

static void test_crash_mid_call(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;

	CHECK(open_server(&c, 20000, NULL) == 0);
	CHECK_INT(mcp_call(&r, c, "crash", jv_null()), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "MCP server 'scripted' exited with status 3; its stderr: "
					     "mcp_server.py: crashing as asked"), "%s", forge_last_error());
	CHECK(!mcp_alive(c));
	CHECK_STR(mcp_death(c), "exited with status 3");
	/* later calls fail at once */
	CHECK_INT(mcp_call(&r, c, "echo", jv_null()), MCP_EDEAD);
	mcp_close(c);
}

static void test_start_failures(void)
{
	struct mcp_client *c;
	const char *crash[] = { "--on-init", "crash", NULL };
	const char *garbage[] = { "--on-init", "garbage", NULL };
	const char *huge[] = { "--on-init", "huge", NULL };
	const char *hang[] = { "--on-init", "hang", NULL };

	CHECK_INT(open_server(&c, 20000, crash), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "exited with status 1; its stderr: mcp_server.py: cannot start: no configuration"),
		  "%s", forge_last_error());
	CHECK_INT(open_server(&c, 20000, garbage), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "wrote something that is not a JSON-RPC message on stdout: 'Starting server... done!'"),
		  "%s", forge_last_error());
	CHECK_INT(open_server(&c, 20000, huge), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "wrote a message longer than 65536 bytes"), "%s", forge_last_error());
	CHECK_INT(open_server_init(&c, 20000, 300, hang), MCP_ETIMEOUT);
	CHECK_MSG(strstr(forge_last_error(), "MCP server 'scripted': initialize: no answer within 0.3 s") &&
		  !strstr(forge_last_error(), "cancelled"), "%s", forge_last_error());
	/* MCP: "The initialize request MUST NOT be cancelled by clients"
	 * (before: notifications/cancelled for it, then the server stopped) */
	char *got = received();
	CHECK_STR(got, "initialize");
	free(got);

	const char *argv[] = { "no-such-mcp-server-here", NULL };
	struct mcp_opts o = MCP_OPTS_INIT;
	o.name = "x";
	o.argv = argv;
	CHECK_INT(mcp_open(&c, &o), MCP_EFAIL);
	CHECK_STR(forge_last_error(), "x: command 'no-such-mcp-server-here' not found in PATH");
}

static void test_garbage_mid_call(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;

	CHECK(open_server(&c, 20000, NULL) == 0);
	CHECK_INT(mcp_call(&r, c, "garbage", jv_null()), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "'this is not json'"), "%s", forge_last_error());
	mcp_close(c);
}

static void test_big_line_and_stderr(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;
	const char *say[] = { "--stderr", "hello from stderr", NULL };

	CHECK(open_server(&c, 20000, say) == 0);
	jv a = json_parse("{\"bytes\":60000}", 15);
	CHECK(mcp_call(&r, c, "big", a) == 0);
	jv_free(a);
	CHECK_INT(strlen(r.text), 60000);
	mcp_call_result_release(&r);
	a = json_parse("{\"bytes\":70000}", 15);
	CHECK_INT(mcp_call(&r, c, "big", a), MCP_EDEAD);    /* over max_line: an error, not a crash */
	jv_free(a);
	CHECK_STR(mcp_stderr(c), "hello from stderr\n");
	mcp_close(c);
}

/* call name with the arguments of the JSON text args. */
static int call_text(struct mcp_call_result *r, struct mcp_client *c, const char *name, const char *args)
{
	return call_freeing(r, c, name, json_parse(args, strlen(args)));
}

/* A JSON-RPC error whose code is no number, or whose message is no string,
 * is said as such (before: "JSON-RPC error 0", "no message"). */
static void test_odd_rpc_errors(void)
{
	struct mcp_client *c;
	struct mcp_call_result r;

	CHECK(open_server(&c, 20000, NULL) == 0);
	CHECK_INT(call_text(&r, c, "rpc_error", "{\"code\":\"E_AUTH\",\"message\":\"token expired\"}"), MCP_ERPC);
	CHECK_STR(forge_last_error(), "MCP server 'scripted': tools/call failed: token expired "
				      "(a JSON-RPC error whose code \"E_AUTH\" is not a number)");
	mcp_call_result_release(&r);
	CHECK_INT(call_text(&r, c, "rpc_error", "{\"code\":-32001,\"message\":{\"a\":1}}"), MCP_ERPC);
	CHECK_STR(forge_last_error(), "MCP server 'scripted': tools/call failed: a message that is not a string: "
				      "{\"a\":1} (JSON-RPC error -32001)");
	mcp_call_result_release(&r);
	CHECK_INT(call_text(&r, c, "rpc_error", "{\"code\":null}"), MCP_ERPC);
	CHECK_STR(forge_last_error(), "MCP server 'scripted': tools/call failed: no message "
				      "(a JSON-RPC error whose code null is not a number)");
	mcp_call_result_release(&r);
	CHECK(mcp_alive(c));
	mcp_close(c);
}

/* An answer whose id cannot be the request's is a protocol error said at
 * once; an error with the id null fails the request at once, the server
 * usable (before: both dropped, and the request waited for its whole time
 * limit, then said "no answer"). */
static void test_wrong_ids(void)
{
	const char *string_id[] = { "--on-init", "string-id", NULL };
	struct mcp_client *c;
	struct mcp_call_result r;

	CHECK_INT(open_server(&c, 20000, string_id), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "MCP server 'scripted' answered initialize with the id \"1\", a string, "
					     "where the request's id is the number 1"), "%s", forge_last_error());
	CHECK(open_server(&c, 20000, NULL) == 0);
	CHECK_INT(call_text(&r, c, "wrong_id", "{\"as\":\"null\"}"), MCP_ERPC);
	CHECK_STR(forge_last_error(), "MCP server 'scripted': tools/call failed: Parse error (JSON-RPC error -32700) "
				      "(an answer with the id null: the server could not read the request)");
	mcp_call_result_release(&r);
	CHECK(mcp_alive(c));
	CHECK_INT(call_text(&r, c, "wrong_id", "{\"as\":\"object\"}"), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "MCP server 'scripted' sent an answer with the id {\"n\":3}, which no "
					     "request of Forge's has (their ids are numbers; tools/call's is 3)"),
		  "%s", forge_last_error());
	mcp_call_result_release(&r);
	CHECK(!mcp_alive(c));
	mcp_close(c);
	CHECK(open_server(&c, 20000, NULL) == 0);
	CHECK_INT(call_text(&r, c, "wrong_id", "{\"as\":\"string\"}"), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "answered tools/call with the id \"2\", a string, where the request's id "
					     "is the number 2"), "%s", forge_last_error());
	mcp_call_result_release(&r);
	mcp_close(c);
	CHECK(open_server(&c, 20000, NULL) == 0);
	CHECK_INT(call_text(&r, c, "wrong_id", "{\"as\":\"none\"}"), MCP_EDEAD);
	CHECK_MSG(strstr(forge_last_error(), "sent an answer without an id while Forge waited for its answer to "
					     "tools/call (id 2)"), "%s", forge_last_error());
	mcp_call_result_release(&r);
	mcp_close(c);
}

/* A JSON text nested n levels deep ({"not": ...} n times): 2n in libjq's count. */
static char *deep_schema(int n)
{
	struct buf b = BUF_INIT;

	for (int i = 0; i < n; i++)
		buf_adds(&b, "{\"not\":");
	buf_adds(&b, "{}");
	for (int i = 0; i < n; i++)
		buf_addch(&b, '}');
	return buf_detach(&b, NULL);
}

/* An answer nested deeper than libjq reads fails alone, and a tool listed
 * that deep is left out alone; the server stays usable (before: "wrote
 * something that is not a JSON-RPC message", and it was dead). */
static void test_deep_answers(void)
{
	char extra[4200];
	struct mcp_client *c;
	struct mcp_call_result r;
	jv tools;

	snprintf(extra, sizeof extra, "%s.deep.json", logfile);
	char *schema = deep_schema(200);
	FILE *f = fopen(extra, "w");
	CHECK(f != NULL);
	fprintf(f, "[{\"name\":\"deep\",\"description\":\"A deep schema.\",\"inputSchema\":%s},"
		   "{\"name\":\"after\",\"inputSchema\":{\"type\":\"object\"}}]", schema);
	fclose(f);
	free(schema);
	const char *args[] = { "--extra-tools", extra, "--page-size", "20", NULL };
	CHECK_MSG(open_server(&c, 20000, args) == 0, "%s", forge_last_error());
	CHECK_MSG(mcp_tools(&tools, c) == 0, "%s", forge_last_error());
	CHECK_INT(jv_array_length(jv_copy(tools)), 12);     /* 11 and "after" */
	jv last = jv_array_get(jv_copy(tools), 11);
	CHECK_STR(json_get_str(last, "name"), "after");
	jv_free(last);
	jv_free(tools);
	jv un = jv_array_get(jv_copy(mcp_tools_unreadable(c)), 0);
	CHECK_INT(jv_array_length(jv_copy(mcp_tools_unreadable(c))), 1);
	CHECK_STR(json_get_str(un, "name"), "deep");
	CHECK_STR(json_get_str(un, "reason"), "its definition nests deeper than the 256 levels Forge reads "
					      "(an array counts 1, an object 2) at inputSchema");
	jv_free(un);
	CHECK_INT(call_text(&r, c, "deep", "{\"levels\":300}"), MCP_ERPC);
	CHECK_STR(forge_last_error(), "MCP server 'scripted': tools/call: its answer nests deeper than the 256 levels "
				      "Forge reads (an array counts 1, an object 2) (at result.structuredContent.a[0]); "
				      "the server stays usable");
	mcp_call_result_release(&r);
	CHECK(mcp_alive(c));
	CHECK_MSG(call_text(&r, c, "deep", "{\"levels\":250}") == 0, "%s", forge_last_error());
	CHECK_STR(r.text, "deep");
	mcp_call_result_release(&r);
	CHECK_MSG(call_text(&r, c, "deep", "{\"levels\":30000}") == MCP_ERPC, "%s", forge_last_error());
	mcp_call_result_release(&r);
	CHECK_MSG(call_text(&r, c, "echo", "{\"text\":\"still here\"}") == 0, "%s", forge_last_error());
	CHECK_STR(r.text, "still here");
	mcp_call_result_release(&r);
	mcp_close(c);
	unlink(extra);
}

/* mcp_close_all: every server's stdin closed before any gets SIGTERM,
 * then one more grace for them all (before: one after another, the next
 * one's stdin closed only once the last was killed).  The order of what
 * the servers saw, not the time it took. */
static void test_close_all_at_once(void)
{
	struct mcp_client *cs[3];
	int status[3];
	const char *tags[] = { "a", "b", "c" };

	unlink(logfile);
	for (int i = 0; i < 3; i++) {
		const char *argv[] = { server, "--log", logfile, "--stubborn", "yes", "--tag", tags[i], NULL };
		struct mcp_opts o = MCP_OPTS_INIT;
		o.name = tags[i];
		o.argv = argv;
		o.envp = env;
		o.kill_grace_ms = 1500;
		CHECK_MSG(mcp_open(&cs[i], &o) == 0, "%s", forge_last_error());
	}
	mcp_close_all(cs, 3, status);
	struct buf text = BUF_INIT, order = BUF_INIT;
	buf_read_file(&text, logfile);
	for (char *line = text.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		jv m = json_parse(line, nl ? (size_t)(nl - line) : strlen(line));
		if (json_get_str(m, "event"))
			buf_addf(&order, "%s%s", order.len ? " " : "", json_get_str(m, "event"));
		jv_free(m);
	}
	CHECK_STR(order.buf, "eof eof eof sigterm sigterm sigterm");
	for (int i = 0; i < 3; i++) {
		CHECK_INT(status[i], 128 + SIGKILL);
		CHECK(cs[i] == NULL);
	}
	buf_release(&text);
	buf_release(&order);
}

static void test_close_kills_a_server_that_stays(void)
{
	const char *argv[] = { "/bin/sh", "-c",
		"trap '' TERM; read line; echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-03-26\"}}'; "
		"while :; do sleep 1; done", NULL };
	struct mcp_opts o = MCP_OPTS_INIT;
	struct mcp_client *c;
	int status;

	o.name = "stubborn";
	o.argv = argv;
	o.kill_grace_ms = 200;
	CHECK_MSG(mcp_open(&c, &o) == 0, "%s", forge_last_error());
	CHECK_STR(mcp_protocol(c), "2025-03-26");
	mcp_close_status(c, &status);
	CHECK_INT(status, 128 + SIGKILL);
}

int main(void)
{
	const char *root = getenv("FORGE_ROOT");
	const char *tmp = getenv("TMPDIR");

	snprintf(server, sizeof server, "%s/tests/helpers/mcp_server.py", root && *root ? root : ".");
	snprintf(logfile, sizeof logfile, "%s/test_mcp.%d.log", tmp && *tmp ? tmp : "/tmp", (int)getpid());
	RUN(test_lifecycle_and_pages);
	RUN(test_pager_cut);
	RUN(test_versions);
	RUN(test_calls);
	RUN(test_list_changed);
	RUN(test_timeout_cancels);
	RUN(test_cut_request_is_finished);
	RUN(test_crash_mid_call);
	RUN(test_start_failures);
	RUN(test_garbage_mid_call);
	RUN(test_big_line_and_stderr);
	RUN(test_close_kills_a_server_that_stays);
	RUN(test_odd_rpc_errors);
	RUN(test_wrong_ids);
	RUN(test_deep_answers);
	RUN(test_close_all_at_once);
	unlink(logfile);
	return unit_done();
}
