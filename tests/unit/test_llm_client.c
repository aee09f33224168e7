/* test_llm_client.c - retry policy, secrets, pricing, cassettes, llm_calls,
 * TLS loaded by the first https:// request. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/forge.h"
#include "net/http.h"
#include "core/json.h"
#include "core/resource.h"
#include "llm/llm_internal.h"
#include "store/store.h"
#include "unit.h"

static void set_hdr(struct http_response *r, const char *name, const char *value)
{
	r->headers = xrealloc(r->headers, (r->nheaders + 1) * sizeof(*r->headers));
	r->headers[r->nheaders].name = xstrdup(name);
	r->headers[r->nheaders].value = xstrdup(value);
	r->nheaders++;
}

static double fixed_rand(void *p) { (void)p; return 0.0; }
static double max_rand(void *p) { (void)p; return 0.999999; }
static time_t fixed_now(void *p) { (void)p; return 1696004797; }

static struct http_retry policy(void)
{
	struct http_retry p = { 3, 0.5, 8.0, 60.0, NULL, fixed_rand, fixed_now, NULL };
	return p;
}

/* The Anthropic SDK's test vectors (llm-wire.md §5.1). */
static void test_retry_delay_vectors(void)
{
	struct http_retry p = policy();
	struct http_response r;
	static const struct { const char *v; double want; } cases[] = {
		{ "20", 20 }, { "0", 0.5 }, { "-10", 0.5 }, { "60", 60 }, { "61", 0.5 },
		{ "Fri, 29 Sep 2023 16:26:17 GMT", 0.5 },        /* in the past */
		{ "Fri, 29 Sep 2023 16:26:57 GMT", 20 },         /* now + 20 s */
		{ "inf", 0.5 }, { "nan", 0.5 }, { "soon", 0.5 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		http_response_init(&r);
		set_hdr(&r, "retry-after", cases[i].v);
		double d = http_retry_delay(&p, 0, &r);
		http_response_release(&r);
		CHECK_MSG(fabs(d - cases[i].want) < 1e-9, "retry-after %s gave %g", cases[i].v, d);
	}
	http_response_init(&r);
	set_hdr(&r, "retry-after-ms", "1500");
	set_hdr(&r, "retry-after", "9");
	CHECK(fabs(http_retry_delay(&p, 0, &r) - 1.5) < 1e-9);
	http_response_release(&r);
	CHECK(fabs(http_retry_delay(&p, 0, NULL) - 0.5) < 1e-9);
	CHECK(fabs(http_retry_delay(&p, 1, NULL) - 1.0) < 1e-9);
	CHECK(fabs(http_retry_delay(&p, 2, NULL) - 2.0) < 1e-9);
	CHECK(fabs(http_retry_delay(&p, 5000, NULL) - 8.0) < 1e-9);
	p.rand_fn = max_rand;
	double j = http_retry_delay(&p, 0, NULL);
	CHECK(j > 0.375 - 1e-6 && j < 0.5);
}

static void test_should_retry(void)
{
	static const struct { long status; const char *hdr; bool want; } cases[] = {
		{ 408, NULL, true }, { 409, NULL, true }, { 429, NULL, true }, { 500, NULL, true },
		{ 502, NULL, true }, { 529, NULL, true }, { 400, NULL, false }, { 401, NULL, false },
		{ 404, NULL, false }, { 413, NULL, false }, { 429, "false", false }, { 400, "true", true },
	};
	struct http_response r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		http_response_init(&r);
		r.status = cases[i].status;
		if (cases[i].hdr)
			set_hdr(&r, "x-should-retry", cases[i].hdr);
		bool got = http_should_retry(&r);
		http_response_release(&r);
		CHECK_MSG(got == cases[i].want, "status %ld", cases[i].status);
	}
	http_response_init(&r);
	r.transport_error = 7;   /* CURLE_COULDNT_CONNECT */
	CHECK(http_should_retry(&r));
	http_response_release(&r);
}

struct sleeps { int n; double total; };
static void fake_sleep(void *p, double s)
{
	struct sleeps *z = p;
	z->n++;
	z->total += s;
}

/* A closed loopback port: connection errors are retried max_retries times. */
static void test_connection_refused_retries(void)
{
	struct llm_options o;
	struct llm_client *c;
	struct llm_request req;
	struct llm_response r;
	struct sleeps z = { 0, 0 };

	setenv("ANTHROPIC_API_KEY", "sk-ant-CANARY-0123456789abcdef", 1);
	llm_options_init(&o);
	o.provider = "anthropic";
	o.base_url = "http://127.0.0.1:9";
	o.max_retries = 3;
	o.sleep_fn = fake_sleep;
	o.rand_fn = fixed_rand;
	o.test_payload = &z;
	CHECK_INT(llm_client_new(&c, &o), 0);
	llm_request_init(&req);
	req.messages = jv_array_append(jv_array(), llm_msg_user("hi"));
	int rc = llm_call(&r, c, &req);
	CHECK_INT(rc, -1);
	CHECK_INT(llm_client_error(c), LLM_ERR_NETWORK);
	CHECK_INT(z.n, 3);
	CHECK(fabs(z.total - 3.5) < 1e-9);          /* 0.5 + 1 + 2 */
	CHECK(strstr(forge_last_error(), "gave up after 3 retries") != NULL);
	CHECK(strstr(forge_last_error(), "CANARY") == NULL);
	llm_response_release(&r);
	llm_request_release(&req);
	llm_client_free(c);
	unsetenv("ANTHROPIC_API_KEY");
}

/* Whether a library whose file name contains name is mapped into this process. */
static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

/* With libcurl linked in, OpenSSL is loaded and initialised by the first
 * request that may use TLS, not by curl_global_init(): a plain http://
 * request (to a closed port) leaves it out, an https:// one brings it in
 * before connecting (the port is closed too: the error is the connection's). */
static void test_tls_loaded_by_https(void)
{
	static const char *const proxies[] = { "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
					       "all_proxy", "ALL_PROXY" };
	struct http_client c;
	struct http_request req = { "GET", "http://127.0.0.1:9/", NULL, NULL, 0, NULL, NULL, NULL, NULL, 0 };
	struct http_response r;

#ifndef FORGE_CURL_STATIC
	SKIP("libcurl is loaded whole (CURL_STATIC=)");
#endif
	if (mapped("") < 0)
		SKIP("no /proc/self/maps");
	for (size_t i = 0; i < sizeof(proxies) / sizeof(*proxies); i++)
		unsetenv(proxies[i]);
	CHECK_INT(http_client_init(&c), 0);
	c.retry.max_retries = 0;
	CHECK_INT(http_send(&r, &c, &req), -1);
	CHECK_INT(r.status, 0);
	http_response_release(&r);
	CHECK_INT(mapped("libssl.so"), 0);
	req.url = "https://127.0.0.1:9/";
	CHECK_INT(http_send(&r, &c, &req), -1);
	CHECK_INT(r.status, 0);
	CHECK_INT(r.transport_error, 7);   /* CURLE_COULDNT_CONNECT */
	http_response_release(&r);
	CHECK_INT(mapped("libssl.so"), 1);
	http_client_release(&c);
}

static void test_missing_key_message(void)
{
	struct llm_options o;
	struct llm_client *c;

	unsetenv("ANTHROPIC_API_KEY");
	unsetenv("FORGE_ANTHROPIC_KEY_FILE");
	llm_options_init(&o);
	o.provider = "anthropic";
	CHECK_INT(llm_client_new(&c, &o), -1);
	CHECK(strstr(forge_last_error(), "ANTHROPIC_API_KEY is not set") != NULL);
	o.provider = "openai";
	o.base_url = "http://127.0.0.1:11434/v1";   /* a local server needs no key */
	unsetenv("OPENAI_API_KEY");
	CHECK_INT(llm_client_new(&c, &o), 0);
	CHECK_STR(llm_client_model(c), "gpt-4o-mini");
	llm_client_free(c);
	o.provider = "gemini";
	CHECK_INT(llm_client_new(&c, &o), -1);
}

static void test_secrets(void)
{
	char *env[] = { "PATH=/bin", "ANTHROPIC_API_KEY=x", "HOME=/h", "OPENAI_API_KEY=y",
			"ANTHROPIC_API_KEYS=keep", NULL };
	char text[] = "bad key sk-CANARY-secret-value-42 and again sk-CANARY-secret-value-42!";
	char path[] = "/tmp/forge-key-XXXXXX";
	char *key;
	int fd;

	CHECK_INT(llm_scrub_env(env), 2);
	CHECK_STR(env[1], "HOME=/h");
	CHECK_STR(env[2], "ANTHROPIC_API_KEYS=keep");
	CHECK(env[3] == NULL);
	llm_secret_add("sk-CANARY-secret-value-42");
	llm_secret_add("short");
	CHECK_STR(llm_redact(text), "bad key [REDACTED] and again [REDACTED]!");

	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, "  sk-from-file-0123456789\n", 26) == 26);
	close(fd);
	unsetenv("OPENAI_API_KEY");
	setenv("FORGE_OPENAI_KEY_FILE", path, 1);
	CHECK_INT(llm_key_load(&key, "openai"), 0);
	CHECK_STR(key, "sk-from-file-0123456789");
	char msg[] = "echo sk-from-file-0123456789";
	CHECK_STR(llm_redact(msg), "echo [REDACTED]");
	free(key);
	unlink(path);
	CHECK_INT(llm_key_load(&key, "openai"), -1);
	unsetenv("FORGE_OPENAI_KEY_FILE");
}

static void test_pricing(void)
{
	struct llm_price p;
	struct llm_usage u = { 1000000, 1000000, 1000000, 1000000 };

	CHECK_INT(llm_price_find(&p, jv_null(), "claude-haiku-4-5-20251001"), 0);
	CHECK(fabs(llm_price_cost(&p, &u) - (1 + 5 + 0.1 + 1.25)) < 1e-9);
	CHECK_INT(llm_price_find(&p, jv_null(), "gpt-4o-2024-08-06"), 0);
	CHECK(fabs(p.input - 2.5) < 1e-9);
	CHECK_INT(llm_price_find(&p, jv_null(), "llama3.2"), -1);
	const char *ov = "{\"llama3.2\":{\"input\":0,\"output\":0}}";
	jv o = json_parse(ov, strlen(ov));
	CHECK_INT(llm_price_find(&p, o, "llama3.2"), 0);
	jv_free(o);
}

/* Every model of the built-in table, found a model at a time (the table
 * is skimmed, not parsed whole), has the price a whole parse gives it. */
static void test_pricing_table(void)
{
	const struct resource *r = resource_find("pricing.json");
	jv models, whole;
	int n = 0;

	CHECK(r != NULL);
	whole = json_parse(r->data, r->len);
	models = json_get(whole, "models");
	CHECK(jv_get_kind(models) == JV_KIND_OBJECT);
	jv_object_foreach(models, k, e) {
		struct llm_price p;

		if (jv_get_kind(e) == JV_KIND_OBJECT && json_has(e, "input") && json_has(e, "output")) {
			CHECK_INT(llm_price_find(&p, jv_null(), jv_string_value(k)), 0);
			CHECK(p.input == json_get_num(e, "input", -1));
			CHECK(p.output == json_get_num(e, "output", -1));
			CHECK(p.cache_read == json_get_num(e, "cache_read", p.input));
			CHECK(p.cache_write == json_get_num(e, "cache_write", p.input));
			CHECK_INT((int)p.context_window, (int)json_get_num(e, "context_window", 0));
			CHECK_INT(p.no_temperature, !json_get_bool(e, "temperature", true));
			n++;
		}
		jv_free(k);
		jv_free(e);
	}
	CHECK(n > 5);
	/* asked again (kept), and a name that is a key of no model */
	struct llm_price p;
	CHECK_INT(llm_price_find(&p, jv_null(), "claude-haiku-4-5"), 0);
	CHECK_INT(llm_price_find(&p, jv_null(), "models"), -1);
	CHECK_INT(llm_price_find(&p, jv_null(), "$comment"), -1);
	jv_free(models);
	jv_free(whole);
}

static void warn_count(void *p, const char *msg)
{
	(void)msg;
	(*(int *)p)++;
}

static struct llm_client *replay_client(const char *cassette, const char *phase, int attempt,
					int *warnings)
{
	struct llm_options o;
	struct llm_client *c = NULL;

	llm_options_init(&o);
	o.provider = "replay";
	o.cassette = cassette;
	o.phase = phase;
	o.attempt = attempt;
	o.model = "claude-sonnet-4-5";
	o.warn = warn_count;
	o.warn_payload = warnings;
	if (llm_client_new(&c, &o) < 0)
		printf("# %s\n", forge_last_error());
	return c;
}

static int ask(struct llm_response *r, struct llm_client *c, const char *system, const char *prompt)
{
	struct llm_request req;
	int rc;

	llm_request_init(&req);
	req.system = system;
	req.messages = jv_array_append(jv_array(), llm_msg_user(prompt));
	rc = llm_call(r, c, &req);
	llm_request_release(&req);
	return rc;
}

static void test_replay_across_processes(void)
{
	const char *path = "tests/fixtures/llm/cassette_pipeline.jsonl";
	struct llm_response r;
	int w = 0;
	struct llm_client *c = replay_client(path, "implement", 1, &w);

	CHECK(c);
	CHECK_INT(ask(&r, c, NULL, "x"), 0);
	CHECK_STR(r.text, "first call of attempt 1");
	llm_response_release(&r);
	CHECK_INT(ask(&r, c, NULL, "x"), 0);
	CHECK_STR(r.text, "second call of attempt 1");
	llm_response_release(&r);
	CHECK_INT(ask(&r, c, NULL, "x"), -1);
	CHECK_INT(llm_client_error(c), LLM_ERR_REPLAY);
	CHECK(strstr(forge_last_error(), "no answer for call 3 of phase implement attempt 1") != NULL);
	/* whose it is to mend, in the words every phase uses: the cassette's */
	char *why = llm_client_failure(c);
	CHECK(strncmp(why, "the cassette does not match this run's requests: replay: ", 57) == 0);
	CHECK(strstr(why, "no answer for call 3 of phase implement attempt 1") != NULL);
	free(why);
	llm_response_release(&r);
	llm_client_free(c);

	c = replay_client(path, "implement", 2, &w);    /* the bounce: a new process */
	CHECK_INT(ask(&r, c, NULL, "x"), 0);
	CHECK_STR(r.text, "attempt 2 answer");
	CHECK_INT(r.stop, LLM_STOP_MAX_TOKENS);
	llm_response_release(&r);
	llm_client_free(c);

	c = replay_client(path, "plan", 0, &w);
	CHECK_INT(ask(&r, c, NULL, "x"), 0);
	CHECK_INT(r.ncalls, 1);
	CHECK_STR(json_get_str(r.calls[0].input, "summary"), "add --version");
	CHECK_INT(r.stop, LLM_STOP_TOOL_USE);
	CHECK(r.cost_known);
	CHECK(fabs(r.cost_usd - (100 * 3 + 20 * 15) / 1e6) < 1e-12);
	llm_response_release(&r);
	llm_client_free(c);

	c = replay_client(path, "review", 0, &w);
	CHECK_INT(ask(&r, c, NULL, "x"), -1);
	CHECK_INT(llm_client_error(c), LLM_ERR_RATE_LIMIT);
	CHECK(strstr(forge_last_error(), "recorded rate limit") != NULL);
	why = llm_client_failure(c);     /* (a retry may mend it: not "refused") */
	/* (the provider refused, no longer "the model could not be reached";
	 * a cassette has no status or attempts to say) */
	CHECK_MSG(strncmp(why, "the provider refused: rate limited: ", 36) == 0, "%s", why);
	free(why);
	llm_response_release(&r);
	llm_client_free(c);
	CHECK_INT(w, 0);
}

/* The client names its caller for the cassette: a phase's fast model is
 * "PHASE-fast"; a set $FORGE_ATTEMPT wins over the phase's own count. */
static void test_replay_identity(void)
{
	char path[] = "/tmp/forge-cassette-XXXXXX";
	int fd = mkstemp(path), w = 0;
	const char *text = "{\"phase\":\"implement-fast\",\"response\":{\"text\":\"fast\"}}\n"
			   "{\"phase\":\"implement\",\"attempt\":1,\"response\":{\"text\":\"one\"}}\n"
			   "{\"phase\":\"implement\",\"attempt\":2,\"response\":{\"text\":\"two\"}}\n";
	struct llm_options o;
	struct llm_client *c = NULL;
	struct llm_response r;

	CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	llm_options_init(&o);
	o.provider = "replay";
	o.cassette = path;
	o.phase = "implement";
	o.fast = true;
	o.attempt = 1;
	o.warn = warn_count;
	o.warn_payload = &w;
	CHECK_INT(llm_client_new(&c, &o), 0);
	CHECK_INT(ask(&r, c, NULL, "x"), 0);
	CHECK_STR(r.text, "fast");
	llm_response_release(&r);
	llm_client_free(c);

	o.fast = false;
	setenv("FORGE_ATTEMPT", "2", 1);
	CHECK_INT(llm_client_new(&c, &o), 0);
	CHECK_INT(ask(&r, c, NULL, "x"), 0);
	CHECK_STR(r.text, "two");
	llm_response_release(&r);
	llm_client_free(c);
	unsetenv("FORGE_ATTEMPT");
	CHECK_INT(llm_client_new(&c, &o), 0);
	CHECK_INT(ask(&r, c, NULL, "x"), 0);
	CHECK_STR(r.text, "one");
	llm_response_release(&r);
	llm_client_free(c);
	unlink(path);
}

static void test_replay_strict(void)
{
	struct llm_response r;
	int w = 0;
	struct llm_client *c = replay_client("tests/fixtures/llm/cassette_strict.json", NULL, 0, &w);

	CHECK(c);
	CHECK_INT(ask(&r, c, "be brief", "hello"), 0);
	CHECK_STR(r.text, "hi");
	llm_response_release(&r);
	llm_client_free(c);
	c = replay_client("tests/fixtures/llm/cassette_strict.json", NULL, 0, &w);
	CHECK_INT(ask(&r, c, "be brief", "hullo"), -1);
	CHECK(strstr(forge_last_error(), "at request.messages[0].content") != NULL);
	llm_response_release(&r);
	llm_client_free(c);
}

static void test_record_then_replay_and_log(void)
{
	char dir[] = "/tmp/forge-llm-XXXXXX";
	char cas[256], db[256];
	struct llm_options o;
	struct llm_client *c;
	struct llm_response r;
	struct store *st = NULL;
	int w = 0;

	CHECK(mkdtemp(dir));
	snprintf(cas, sizeof(cas), "%s/rec.jsonl", dir);
	snprintf(db, sizeof(db), "%s/forge.db", dir);
	CHECK_INT(store_open(&st, db), 0);
	/* record from a replayed "provider" (stands in for a real one) */
	llm_options_init(&o);
	o.provider = "replay";
	o.cassette = "tests/fixtures/llm/cassette_pipeline.jsonl";
	o.phase = "implement";
	o.attempt = 1;
	o.model = "local-model";
	o.record = cas;
	o.store = st;
	o.trace_id = "T1";
	o.warn = warn_count;
	o.warn_payload = &w;
	CHECK_INT(llm_client_new(&c, &o), 0);
	CHECK_INT(ask(&r, c, "sys", "one"), 0);
	CHECK(!r.cost_known);
	llm_response_release(&r);
	CHECK_INT(ask(&r, c, "sys", "two"), 0);
	llm_response_release(&r);
	CHECK_INT(w, 1);                  /* one warning for the unpriced model */
	llm_client_free(c);

	sqlite3_stmt *s;
	CHECK(sqlite3_prepare_v2(store_db(st), "SELECT count(*), sum(cost_usd IS NULL),"
		" min(phase), max(call) FROM llm_calls WHERE trace_id = 'T1'", -1, &s, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(s) == SQLITE_ROW);
	int n = sqlite3_column_int(s, 0), nulls = sqlite3_column_int(s, 1), maxcall = sqlite3_column_int(s, 3);
	sqlite3_finalize(s);
	store_free(st);
	CHECK_INT(n, 2);
	CHECK_INT(nulls, 2);
	CHECK_INT(maxcall, 2);

	/* the recording replays strictly */
	llm_options_init(&o);
	o.provider = "replay";
	o.cassette = cas;
	o.cassette_mode = "strict";
	o.phase = "implement";
	o.attempt = 1;
	CHECK_INT(llm_client_new(&c, &o), 0);
	CHECK_INT(ask(&r, c, "sys", "one"), 0);
	CHECK_STR(r.text, "first call of attempt 1");
	llm_response_release(&r);
	CHECK_INT(ask(&r, c, "sys", "TWO"), -1);
	CHECK(strstr(forge_last_error(), "request.messages[0].content") != NULL);
	llm_response_release(&r);
	llm_client_free(c);
	unlink(cas);
	unlink(db);
	char wal[300];
	snprintf(wal, sizeof(wal), "%s-wal", db); unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", db); unlink(wal);
	rmdir(dir);
}

/* The request column of the newest llm_calls row (malloc'd). */
static char *logged_request(struct store *st)
{
	sqlite3_stmt *s;
	char *text = NULL;

	if (sqlite3_prepare_v2(store_db(st), "SELECT request FROM llm_calls ORDER BY id DESC LIMIT 1",
			       -1, &s, NULL) != SQLITE_OK)
		return NULL;
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		text = xstrdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return text;
}

/* The id of the newest llm_calls row (0: none). */
static int64_t logged_id(struct store *st)
{
	sqlite3_stmt *s;
	int64_t id = 0;

	if (sqlite3_prepare_v2(store_db(st), "SELECT max(id) FROM llm_calls", -1, &s, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(s) == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
}

/* Whether the newest row's request, read back whole (llm_log_request()),
 * is want (a request's text, borrowed). */
static bool reads_back(struct store *st, const char *want)
{
	jv got, w = json_parse(want, strlen(want));
	bool same = llm_log_request(&got, st, logged_id(st)) == 0 && jv_equal(got, jv_copy(w));

	jv_free(w);
	return same;
}

/* Whether text (a request's) holds its messages as {"as_in": call 1 of p on
 * trace T, "then": [n messages]}. */
static bool messages_as_in(const char *text, int n)
{
	jv req = json_parse(text, strlen(text)), msgs = json_get(req, "messages");
	jv where = json_get(msgs, "as_in"), then = json_get(msgs, "then");
	bool yes = jv_get_kind(then) == JV_KIND_ARRAY && jv_array_length(jv_copy(then)) == n &&
		   jv_object_length(jv_copy(msgs)) == 2 && json_get_str(where, "trace_id") &&
		   !strcmp(json_get_str(where, "trace_id"), "T") && !strcmp(json_get_str(where, "phase"), "p") &&
		   json_get_num(where, "attempt", 0) == 1 && json_get_num(where, "call", 0) == 1;

	jv_free(req);
	jv_free(msgs);
	jv_free(where);
	jv_free(then);
	return yes;
}

/* {"as_in": where phase's call `call` of trace T logged its tools}. */
static jv as_in(const char *phase, int call)
{
	return json_set(jv_object(), "as_in", json_set(json_set(json_set(json_set(jv_object(),
		"trace_id", jv_string("T")), "phase", jv_string(phase)), "attempt", jv_number(1)),
		"call", jv_number(call)));
}

/* Whether member key of the requests' texts a and b is the same. */
static bool same_member(const char *a, const char *b, const char *key)
{
	jv ra = json_parse(a, strlen(a)), rb = json_parse(b, strlen(b));
	bool same = jv_equal(json_get(ra, key), json_get(rb, key));

	jv_free(ra);
	jv_free(rb);
	return same;
}

/* How logs_as() wants a request's system prompt: whole, or named (as in
 * the row before: call 1 of phase p on trace T). */
enum { SYS_WHOLE, SYS_NAMED };

/* Log req (consumed) as call 1 of phase p on trace T; whether its row holds
 * it as it always has -- json_dumps() of it, secrets scrubbed, its system
 * prompt as_in the row before when sys is SYS_NAMED -- or, with then >= 0,
 * its messages as those of the row before and `then` new ones, the row
 * read back whole being the request whole. */
static bool logs_as(struct store *st, struct llm_log_memo *memo, jv req, int then, int sys)
{
	struct llm_call_log rec = { .trace_id = "T", .phase = "p", .provider = "replay", .model = "m",
				    .attempt = 1, .call = 1, .memo = memo };
	char *want = llm_redact(json_dumps(jv_copy(req), false)), *got = NULL;
	char *want_row = sys == SYS_NAMED ? json_dumps(json_set(jv_copy(req), "system", as_in("p", 1)), false) :
		xstrdup(want);
	bool same;

	want_row = llm_redact(want_row);
	rec.request = req;
	rec.response = jv_null();
	same = llm_log_call(st, &rec) == 0 && (got = logged_request(st)) && !strstr(got, "sk-test-LOGGED-KEY") &&
	       (then < 0 ? !strcmp(got, want_row) : messages_as_in(got, then) && same_member(got, want_row, "system")) &&
	       reads_back(st, want);
	free(got);
	free(want);
	free(want_row);
	jv_free(req);
	return same;
}

static bool logs_as_dumped(struct store *st, struct llm_log_memo *memo, jv req, int sys)
{
	return logs_as(st, memo, req, -1, sys);
}

static jv with_messages(jv msgs)
{
	return json_set(json_set(json_set(jv_object(), "system", jv_string("sys")), "messages", msgs),
			"max_tokens", jv_number(4096));
}

static int log_msgs(struct store *st, struct llm_log_memo *memo, const char *trace, int call, jv msgs);

/* The newest row's request.system.as_in.call: 0 when its system prompt is
 * whole (a string), -1 when it is neither. */
static int system_named(struct store *st)
{
	char *text = logged_request(st);
	jv req = text ? json_parse(text, strlen(text)) : jv_null(), sys = json_get(req, "system");
	jv where = json_get(sys, "as_in");
	int call = jv_get_kind(sys) == JV_KIND_STRING ? 0 : (int)json_get_num(where, "call", -1);

	free(text);
	jv_free(req);
	jv_free(sys);
	jv_free(where);
	return call;
}

/* The log keeps the text of the messages a client logged last and writes only
 * the new ones (an agent's next request is the same conversation and a
 * few more), and names the row with the system prompt when it is the one
 * logged last (before: ~3 KB of it again in every row): the row is what
 * dumping the request whole gave, with a key in a message or the prompt
 * scrubbed, as the conversation grows, is cut, or changes in place, and as
 * the prompt changes; read back, every request is the one sent. */
static void test_log_keeps_messages_text(void)
{
	struct store *st = NULL;
	struct llm_log_memo memo = { 0 };
	jv msgs = jv_array_append(jv_array(), llm_msg_user("key sk-test-LOGGED-KEY here"));

	llm_secret_add("sk-test-LOGGED-KEY");
	CHECK_INT(store_open(&st, ":memory:"), 0);
	CHECK(logs_as_dumped(st, &memo, with_messages(jv_copy(msgs)), SYS_WHOLE));
	msgs = jv_array_append(msgs, llm_msg_tool_result("c1", "out \"q\" \xc3\xa9", false));
	CHECK(logs_as(st, &memo, with_messages(jv_copy(msgs)), 1, SYS_NAMED));
	CHECK(logs_as(st, &memo, with_messages(jv_copy(msgs)), 0, SYS_NAMED));
	/* the first message changed (a compressed working memory): whole */
	msgs = jv_array_set(msgs, 0, llm_msg_user("changed"));
	CHECK(logs_as_dumped(st, &memo, with_messages(jv_copy(msgs)), SYS_NAMED));
	msgs = jv_array_append(msgs, llm_msg_user("third"));
	CHECK(logs_as(st, &memo, with_messages(jv_copy(msgs)), 1, SYS_NAMED));
	msgs = jv_array_set(msgs, 1, llm_msg_user("second, changed"));
	CHECK(logs_as_dumped(st, &memo, with_messages(jv_copy(msgs)), SYS_NAMED));
	CHECK(logs_as_dumped(st, &memo, with_messages(jv_array_append(jv_array(), llm_msg_user("short"))), SYS_NAMED));
	CHECK(logs_as_dumped(st, &memo, with_messages(jv_array()), SYS_NAMED));
	/* another prompt: whole, then named; a key in it scrubbed */
	CHECK(logs_as_dumped(st, &memo, json_set(with_messages(jv_copy(msgs)), "system", jv_string("other \"sys\"")),
			     SYS_WHOLE));
	CHECK(logs_as(st, &memo, json_set(with_messages(jv_copy(msgs)), "system", jv_string("other \"sys\"")), 0,
		      SYS_NAMED));
	CHECK(logs_as(st, &memo, json_set(with_messages(jv_copy(msgs)), "system", jv_string("sk-test-LOGGED-KEY")), 0,
		      SYS_WHOLE));
	CHECK(logs_as(st, &memo, json_set(with_messages(jv_copy(msgs)), "system", jv_string("sk-test-LOGGED-KEY")), 0,
		      SYS_NAMED));
	CHECK(logs_as(st, &memo, with_messages(jv_copy(msgs)), 0, SYS_WHOLE));
	/* a prompt that is no string is written whole; a request without one changes nothing */
	CHECK(logs_as(st, &memo, json_set(with_messages(jv_copy(msgs)), "system", jv_array()), 0, SYS_WHOLE));
	CHECK(logs_as_dumped(st, &memo, json_set(jv_object(), "messages", jv_string("not an array")), SYS_WHOLE));
	CHECK(logs_as_dumped(st, NULL, with_messages(jv_copy(msgs)), SYS_WHOLE));
	/* a key in a new message: scrubbed in "then" too */
	msgs = jv_array_append(msgs, llm_msg_user("fourth sk-test-LOGGED-KEY"));
	CHECK(logs_as(st, &memo, with_messages(jv_copy(msgs)), 1, SYS_NAMED));
	/* a row refused: the prompt it would have had whole is named by none
	 * (calls 100 on: each row its own call, as a client's are) */
	CHECK(sqlite3_exec(store_db(st), "CREATE TRIGGER no100 BEFORE INSERT ON llm_calls WHEN NEW.call = 100"
			   " BEGIN SELECT RAISE(ABORT, 'refused'); END", NULL, NULL, NULL) == SQLITE_OK);
	struct llm_call_log rec = { .trace_id = "T", .phase = "p", .provider = "replay", .model = "m",
				    .attempt = 1, .call = 100, .memo = &memo };
	rec.request = json_set(with_messages(jv_copy(msgs)), "system", jv_string("new"));
	rec.response = jv_null();
	CHECK_INT(llm_log_call(st, &rec), -1);
	jv_free(rec.request);
	CHECK_INT(log_msgs(st, &memo, "T", 101, jv_copy(msgs)), 0);
	CHECK(system_named(st) == 0);
	CHECK_INT(log_msgs(st, &memo, "T", 102, jv_copy(msgs)), 0);
	CHECK(system_named(st) == 101);
	/* a row named that is gone: said, not a request without its prompt */
	CHECK(sqlite3_exec(store_db(st), "DELETE FROM llm_calls WHERE call = 101", NULL, NULL, NULL) == SQLITE_OK);
	jv got;
	CHECK_INT(llm_log_request(&got, st, logged_id(st)), -1);
	CHECK(jv_get_kind(got) == JV_KIND_NULL);
	CHECK(strstr(forge_last_error(), "its system prompt is as in trace T's p call 101 (attempt 1), which is not"
		     " in llm_calls (removed?)") != NULL);
	jv_free(msgs);
	llm_log_memo_release(&memo);
	llm_log_memo_release(&memo);
	llm_log_memo_release(NULL);
	store_free(st);
}

/* Log a request with tools (consumed) for memo as call `call` of phase on
 * trace T; whether that went and its row is the request with want_tools
 * (consumed) in their place, as json_dumps() writes it. */
static bool logs_tools_as(struct store *st, struct llm_log_memo *memo, const char *phase, int call,
			  jv tools, jv want_tools)
{
	struct llm_call_log rec = { .trace_id = "T", .phase = phase, .provider = "replay", .model = "m",
				    .attempt = 1, .call = call, .memo = memo };
	jv req = json_set(json_set(jv_object(), "messages", jv_array_append(jv_array(), llm_msg_user("hi"))),
			  "tools", tools);
	char *want = json_dumps(json_set(jv_copy(req), "tools", want_tools), false), *got = NULL;
	bool same;

	rec.request = req;
	rec.response = jv_null();
	same = llm_log_call(st, &rec) == 0 && (got = logged_request(st)) && !strcmp(got, want);
	free(got);
	free(want);
	jv_free(req);
	return same;
}

static jv parsed(const char *text)
{
	return json_parse(text, strlen(text));
}

#define READ_FILE "[{\"name\":\"read_file\",\"input_schema\":{\"type\":\"object\"}}]"

/*
 * Each client's tools are written with its first call and named by its
 * later ones, whatever another client logs in between (before: one cache
 * for the process, holding a jv of whichever client logged last -- a jv
 * another thread's client shares, libjq's counts not being atomic -- so
 * two clients alternating wrote their tools whole every time); tools that
 * are another object, or a row in another database, are written whole;
 * and a row that could not be written is never named.
 */
static void test_log_tools_per_client(void)
{
	struct store *st = NULL, *other = NULL;
	struct llm_log_memo a = { 0 }, b = { 0 };
	jv ta = parsed(READ_FILE);
	jv tb = parsed("[{\"name\":\"grep\",\"input_schema\":{\"type\":\"object\"}}]");
	jv tc = parsed(READ_FILE);

	CHECK_INT(store_open(&st, ":memory:"), 0);
	CHECK_INT(store_open(&other, ":memory:"), 0);
	CHECK(logs_tools_as(st, &a, "a", 1, jv_copy(ta), jv_copy(ta)));
	CHECK(logs_tools_as(st, &b, "b", 1, jv_copy(tb), jv_copy(tb)));
	CHECK(logs_tools_as(st, &a, "a", 2, jv_copy(ta), as_in("a", 1)));
	CHECK(logs_tools_as(st, &b, "b", 2, jv_copy(tb), as_in("b", 1)));
	CHECK(logs_tools_as(st, &a, "a", 3, jv_copy(ta), as_in("a", 1)));
	/* the same tools, another object: written, then named */
	CHECK(logs_tools_as(st, &a, "a", 4, jv_copy(tc), jv_copy(tc)));
	CHECK(logs_tools_as(st, &a, "a", 5, jv_copy(tc), as_in("a", 4)));
	/* another database; no memo */
	CHECK(logs_tools_as(other, &a, "a", 6, jv_copy(tc), jv_copy(tc)));
	CHECK(logs_tools_as(st, NULL, "a", 7, jv_copy(ta), jv_copy(ta)));
	CHECK(logs_tools_as(st, NULL, "a", 8, jv_copy(ta), jv_copy(ta)));
	/* a row refused: the next names none of it */
	CHECK(sqlite3_exec(store_db(st), "CREATE TRIGGER no9 BEFORE INSERT ON llm_calls WHEN NEW.call = 9"
			   " BEGIN SELECT RAISE(ABORT, 'refused'); END", NULL, NULL, NULL) == SQLITE_OK);
	CHECK(!logs_tools_as(st, &b, "b", 9, jv_copy(ta), jv_copy(ta)));
	CHECK(logs_tools_as(st, &b, "b", 10, jv_copy(ta), jv_copy(ta)));
	CHECK(logs_tools_as(st, &b, "b", 11, jv_copy(ta), as_in("b", 10)));
	jv_free(ta);
	jv_free(tb);
	jv_free(tc);
	llm_log_memo_release(&a);
	llm_log_memo_release(&b);
	store_free(st);
	store_free(other);
}

/* Log msgs (consumed) as call `call` of phase p on trace (NULL: none) for
 * memo; 0, or -1 when the row was refused. */
static int log_msgs(struct store *st, struct llm_log_memo *memo, const char *trace, int call, jv msgs)
{
	struct llm_call_log rec = { .trace_id = trace, .phase = "p", .provider = "replay", .model = "m",
				    .attempt = 1, .call = call, .memo = memo };
	int rc;

	rec.request = with_messages(msgs);
	rec.response = jv_null();
	rc = llm_log_call(st, &rec);
	jv_free(rec.request);
	return rc;
}

/* The newest row's request.messages.as_in.call: 0 when its messages are
 * whole. */
static int named_call(struct store *st)
{
	char *text = logged_request(st);
	jv req = text ? json_parse(text, strlen(text)) : jv_null(), where = json_get_path(req, "messages.as_in");
	int call = (int)json_get_num(where, "call", 0);

	free(text);
	jv_free(req);
	jv_free(where);
	return call;
}

/*
 * A conversation's later calls name the row before (as_in) and hold the new
 * messages (before: the whole conversation in every row, O(N^2) bytes for N
 * turns); the row named is one written -- not a refused one, not one of
 * another database, not one without a trace -- and a chain is never longer
 * than LLM_LOG_CHAIN_MAX; read back, a request is what was sent, and a
 * chain with a row removed says which.
 */
static void test_log_messages_as_in(void)
{
	struct store *st = NULL, *other = NULL;
	struct llm_log_memo memo = { 0 };
	jv msgs = jv_array_append(jv_array(), llm_msg_user("task")), got;
	int call = 0;

	CHECK_INT(store_open(&st, ":memory:"), 0);
	CHECK_INT(store_open(&other, ":memory:"), 0);
	CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), 0);
	CHECK_INT(named_call(st), 0);
	for (int i = 0; i < 5; i++) {
		msgs = jv_array_append(msgs, llm_msg_tool_result("c", "a result", false));
		CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), 0);
		CHECK_INT(named_call(st), call - 1);
	}
	CHECK_INT(llm_log_request(&got, st, logged_id(st)), 0);
	CHECK(jv_equal(json_get(got, "messages"), jv_copy(msgs)));
	jv_free(got);
	/* a row refused: the next names none, it holds the messages whole */
	CHECK(sqlite3_exec(store_db(st), "CREATE TRIGGER no7 BEFORE INSERT ON llm_calls WHEN NEW.call = 7"
			   " BEGIN SELECT RAISE(ABORT, 'refused'); END", NULL, NULL, NULL) == SQLITE_OK);
	msgs = jv_array_append(msgs, llm_msg_user("more"));
	CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), -1);
	msgs = jv_array_append(msgs, llm_msg_user("more"));
	CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), 0);
	CHECK_INT(named_call(st), 0);
	/* another database: whole there, and whole back here */
	msgs = jv_array_append(msgs, llm_msg_user("more"));
	CHECK_INT(log_msgs(other, &memo, "T", ++call, jv_copy(msgs)), 0);
	CHECK_INT(named_call(other), 0);
	msgs = jv_array_append(msgs, llm_msg_user("more"));
	CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), 0);
	CHECK_INT(named_call(st), 0);
	/* no trace: a row nothing names; the next is whole */
	msgs = jv_array_append(msgs, llm_msg_user("more"));
	CHECK_INT(log_msgs(st, &memo, NULL, ++call, jv_copy(msgs)), 0);
	CHECK_INT(named_call(st), 0);
	msgs = jv_array_append(msgs, llm_msg_user("more"));
	CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), 0);
	CHECK_INT(named_call(st), 0);
	/* the chain ends at LLM_LOG_CHAIN_MAX rows: the next is whole again */
	int start = call;
	for (int i = 0; i < LLM_LOG_CHAIN_MAX; i++) {
		msgs = jv_array_append(msgs, llm_msg_user("turn"));
		CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), 0);
	}
	CHECK_INT(named_call(st), call - 1);
	CHECK_INT(llm_log_request(&got, st, logged_id(st)), 0);
	CHECK(jv_equal(json_get(got, "messages"), jv_copy(msgs)));
	jv_free(got);
	msgs = jv_array_append(msgs, llm_msg_user("turn"));
	CHECK_INT(log_msgs(st, &memo, "T", ++call, jv_copy(msgs)), 0);
	CHECK_INT(named_call(st), 0);
	/* a row of the chain removed: said, nothing read back */
	char sql[160];
	snprintf(sql, sizeof sql, "DELETE FROM llm_calls WHERE call = %d", start + 3);
	CHECK(sqlite3_exec(store_db(st), sql, NULL, NULL, NULL) == SQLITE_OK);
	CHECK_INT(llm_log_request(&got, st, logged_id(st) - 1), -1);
	CHECK(jv_get_kind(got) == JV_KIND_NULL);
	CHECK(strstr(forge_last_error(), "its messages are as in trace T's p call ") &&
	      strstr(forge_last_error(), "which is not in llm_calls (removed?)"));
	CHECK_INT(llm_log_request(&got, st, 999999), 1);
	jv_free(msgs);
	llm_log_memo_release(&memo);
	store_free(st);
	store_free(other);
}

static void test_json_diff(void)
{
	jv a = json_parse("{\"a\":[1,{\"b\":2}],\"c\":1}", 23);
	jv b = json_parse("{\"a\":[1,{\"b\":3}],\"c\":1}", 23);
	char *d = llm_json_diff(a, b, "request");

	CHECK_STR(d, "request.a[1].b");
	free(d);
	d = llm_json_diff(a, a, "request");
	CHECK_STR(d, "");
	free(d);
	jv_free(a);
	jv_free(b);
}

int main(void)
{
	RUN(test_retry_delay_vectors);
	RUN(test_should_retry);
	RUN(test_connection_refused_retries);
	RUN(test_tls_loaded_by_https);
	RUN(test_missing_key_message);
	RUN(test_secrets);
	RUN(test_pricing);
	RUN(test_pricing_table);
	RUN(test_replay_across_processes);
	RUN(test_replay_identity);
	RUN(test_replay_strict);
	RUN(test_record_then_replay_and_log);
	RUN(test_log_keeps_messages_text);
	RUN(test_log_tools_per_client);
	RUN(test_log_messages_as_in);
	RUN(test_json_diff);
	return unit_done();
}
