/*
 * llm.c - the LLM client: configuration, dispatch to a provider or a
 * cassette, streaming, error classification, cost and logging (llm.h).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/ids.h"
#include "core/forge.h"
#include "net/http.h"
#include "core/json.h"
#include "core/secret.h"
#include "core/tokens.h"
#include "llm/llm_internal.h"
#include "net/sse.h"

struct llm_client {
	const struct llm_provider *p;      /* NULL for replay */
	char *provider, *model, *base_url, *key;
	char model_key[96], model_why[160];   /* llm_options': the setting that chose
					         model, and where it came from */
	char *shown_url;                   /* base_url without its userinfo's password */
	char *shown_call_url;              /* the last call's URL, so shown */
	struct http_client http;
	unsigned flags;                    /* LLM_OPENAI_* */
	bool max_field_switched;           /* the other output-limit field was tried */
	struct llm_cassette *cassette;
	char *record, *phase, *trace_id;
	int attempt, calls;
	jv pricing;
	struct store *store;
	enum llm_error last;
	struct buf warned;                 /* "\nmodel\n" per warned model */
	void (*warn)(void *payload, const char *msg);
	void *warn_payload;
	void (*before_call)(void *payload);
	void *before_call_payload;
	void (*on_retry)(void *payload, const struct llm_retry *r);
	void *on_retry_payload;
	int max_retries;                   /* llm.max_retries (http.retry's changes in a call) */
	long last_status;                  /* the last failed call's HTTP status (0: none, or
					      not an HTTP error: a stream's error event) */
	int last_attempts;                 /* its attempts (0: unknown, a cassette's) */
	bool no_temperature;               /* the model refuses a temperature: send none */
	bool cut_short;                    /* the last call's answer had begun, or its
					      request had been sent whole, when
					      llm_interrupt() or the caller's deadline
					      ended it: it is billed */
	long cut_tokens;                   /* what had arrived of an answer the deadline
					      cut (tokens, estimated): its message */
	bool restartable;                  /* the last attempt's stream began, then failed
					      transiently: llm_call may ask again whole */
	int retried;                       /* retries the call made before this attempt */
	bool window_asked;                 /* llm_context_window() asked the server */
	long server_window;                /* what it said; 0 = nothing */
	size_t sent_bytes;                 /* the last request body's size */
	struct llm_parts parts;            /* the body's parts sent every turn, serialised */
	struct llm_log_memo log_memo;      /* what the log kept of the last request */
};

void llm_options_init(struct llm_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->max_retries = -1;
	opt->pricing = jv_null();
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static const char *first(const char *a, const char *b)
{
	return a && *a ? a : b;
}

/* ---- configuration ----------------------------------------------------- */

static int pick_provider(const char **out, const struct llm_options *opt)
{
	const char *p = first(opt->provider, env("FORGE_PROVIDER"));

	if (!p && first(opt->cassette, env("FORGE_CASSETTE")))
		p = "replay";
	if (!p && (env("ANTHROPIC_API_KEY") || env("FORGE_ANTHROPIC_KEY_FILE")))
		p = "anthropic";
	if (!p && (env("OPENAI_API_KEY") || env("FORGE_OPENAI_KEY_FILE") || env("OPENAI_BASE_URL")))
		p = "openai";
	if (!p)
		return forge_error("no model provider configured: set ANTHROPIC_API_KEY or "
				   "OPENAI_API_KEY, or pass --provider");
	if (strcmp(p, "anthropic") && strcmp(p, "openai") && strcmp(p, "replay"))
		return forge_error("unknown provider '%s' (anthropic, openai, replay)", p);
	*out = p;
	return 0;
}

/* What a failed attempt that is retried was, in words (static). */
static const char *retry_reason(long status, bool timed_out)
{
	switch (status) {
	case 0:   return timed_out ? "timed out" : "connection failed";
	case 408: return "request timed out";
	case 409: return "conflict";
	case 429: return "rate limited";
	case 503: return "provider unavailable";
	case 529: return "provider overloaded";
	default:  return status >= 500 ? "provider error" : "refused";
	}
}

/* Tell the client's caller that attempt (2, 3, …) comes after seconds. */
static void say_retry(struct llm_client *c, int attempt, long status, bool timed_out, const char *why,
		      double seconds)
{
	struct llm_retry r = { attempt, c->max_retries + 1, status, seconds,
			       why ? why : retry_reason(status, timed_out) };

	if (c->on_retry)
		c->on_retry(c->on_retry_payload, &r);
}

/* http_retry's on_wait: an HTTP retry of the call (after c->retried
 * restarts of it). */
static void retry_waits(void *payload, const struct http_response *r, int retry, double seconds)
{
	struct llm_client *c = payload;

	say_retry(c, c->retried + retry + 1, r->status, r->timed_out, NULL, seconds);
}

static void setup_http(struct llm_client *c, const struct llm_options *opt)
{
	struct http_client *h = &c->http;

	/* (the programs' settings come from the configuration: llm.*, and
	 * FORGE_LLM_MAX_RETRIES as its environment layer) */
	h->timeout_ms = opt->timeout_ms > 0 ? opt->timeout_ms : 600000;
	h->connect_timeout_ms = opt->connect_timeout_ms > 0 ? opt->connect_timeout_ms : 10000;
	h->stall_ms = opt->stall_ms > 0 ? opt->stall_ms : 60000;
	h->retry.max_retries = opt->max_retries >= 0 ? opt->max_retries : 2;
	h->retry.max_retry_after = opt->max_retry_after > 0 ? opt->max_retry_after : 60.0;
	h->retry.sleep_fn = opt->sleep_fn;
	h->retry.rand_fn = opt->rand_fn;
	h->retry.payload = opt->test_payload;
	h->retry.on_wait = retry_waits;
	h->retry.on_wait_payload = c;
	c->max_retries = h->retry.max_retries;
	c->on_retry = opt->on_retry;
	c->on_retry_payload = opt->on_retry_payload;
}

/* The variable naming a file with provider's key. */
static const char *key_file_var(const char *provider)
{
	return !strcmp(provider, "anthropic") ? "FORGE_ANTHROPIC_KEY_FILE" : "FORGE_OPENAI_KEY_FILE";
}

/* Which setting chose c->model, and where it came from (opt's, else
 * FORGE_MODEL or the provider's default): what an error about the model
 * names for the user to change. */
static void model_source(struct llm_client *c, const struct llm_options *opt)
{
	snprintf(c->model_key, sizeof c->model_key, "%s", opt->model_key[0] ? opt->model_key : "llm.model");
	if (opt->model && opt->model_why[0])
		snprintf(c->model_why, sizeof c->model_why, "%s", opt->model_why);
	else if (!opt->model && env("FORGE_MODEL"))
		snprintf(c->model_why, sizeof c->model_why, "FORGE_MODEL");
	else if (!opt->model)
		snprintf(c->model_why, sizeof c->model_why, "the default model of %s", c->provider);
}

/* The setting that gives another model, into b: its key, then `then`. */
static void model_tip(struct buf *b, const struct llm_client *c, const char *then)
{
	bool global = !strcmp(c->model_key, "llm.model");

	buf_addf(b, "%s%s%s", c->model_key, global ? " (--model, FORGE_MODEL)" : "", then);
	if (!strncmp(c->model_key, "llm.phases.", 11))
		buf_adds(b, " (--model does not change a phase's own model)");
}

static int setup_provider(struct llm_client *c, const struct llm_options *opt)
{
	const char *url;

	c->p = !strcmp(c->provider, "anthropic") ? &llm_anthropic : &llm_openai;
	/* (FORGE_BASE_URL is llm.base_url, which llm_choose() gives only to
	 * the provider named with it) */
	url = first(opt->base_url, first(env(c->p->base_url_env), c->p->default_base_url));
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return forge_error("base URL '%s' must start with http:// or https://", url);
	c->base_url = xstrdup(url);
	c->flags = c->p == &llm_openai ? llm_openai_flags(url) : 0;
	/* (OpenAI caches a long prefix by itself: cached_tokens) */
	if (c->p == &llm_anthropic && !opt->no_prompt_cache)
		c->flags |= LLM_PROMPT_CACHE;
	c->shown_url = secret_url_shown(url);
	c->model = xstrdup(first(opt->model, first(env("FORGE_MODEL"), c->p->default_model)));
	model_source(c, opt);
	if (llm_key_load(&c->key, c->provider) < 0)
		return -1;
	/* a compatible server elsewhere (Ollama, llama.cpp) may need no key */
	if (!c->key && (!strcmp(c->provider, "anthropic") || !strcmp(url, c->p->default_base_url)))
		return forge_error("%s is not set (or put the key in a file named by %s)",
				   c->p->key_env, key_file_var(c->provider));
	if (http_client_init(&c->http) < 0)
		return -1;
	setup_http(c, opt);
	return 0;
}

static int setup_replay(struct llm_client *c, const struct llm_options *opt)
{
	const char *path = first(opt->cassette, env("FORGE_CASSETTE"));

	if (!path)
		return forge_error("the replay provider needs a cassette: pass --cassette FILE");
	c->model = xstrdup(first(opt->model, first(env("FORGE_MODEL"), "replay")));
	if (c->record && !strcmp(c->record, path))
		return forge_error("cannot record into the cassette being replayed ('%s'): "
				   "unset FORGE_RECORD or drop --record", path);
	return llm_cassette_open(&c->cassette, path, first(opt->cassette_mode, env("FORGE_CASSETTE_MODE")));
}

int llm_client_new(struct llm_client **out, struct llm_options *opt)
{
	struct llm_client *c = xcalloc(1, sizeof(*c));
	const char *provider = NULL;

	*out = NULL;
	c->pricing = opt->pricing;
	opt->pricing = jv_null();
	buf_init(&c->warned, 0);
	c->warn = opt->warn;
	c->warn_payload = opt->warn_payload;
	c->before_call = opt->before_call;
	c->before_call_payload = opt->before_call_payload;
	c->store = opt->store;
	c->trace_id = llm_strdup_or_null(opt->trace_id);
	c->phase = llm_replay_phase(opt);
	c->record = llm_strdup_or_null(first(opt->record, env("FORGE_RECORD")));
	c->attempt = llm_replay_attempt(opt);
	if (pick_provider(&provider, opt) < 0)
		goto fail;
	c->provider = xstrdup(provider);
	if ((!strcmp(provider, "replay") ? setup_replay(c, opt) : setup_provider(c, opt)) < 0)
		goto fail;
	struct llm_price price;
	c->no_temperature = llm_price_find(&price, c->pricing, c->model) == 0 && price.no_temperature;
	*out = c;
	return 0;
fail:
	llm_client_free(c);
	return -1;
}

void llm_client_free(struct llm_client *c)
{
	if (!c)
		return;
	if (c->p)
		http_client_release(&c->http);
	llm_cassette_free(c->cassette);
	free(c->provider);
	free(c->model);
	free(c->base_url);
	free(c->shown_url);
	free(c->shown_call_url);
	free(c->key);
	free(c->record);
	free(c->phase);
	free(c->trace_id);
	jv_free(c->pricing);
	buf_release(&c->warned);
	llm_parts_release(&c->parts);
	llm_log_memo_release(&c->log_memo);
	free(c);
}

const char *llm_client_provider(const struct llm_client *c)
{
	return c->provider;
}

const char *llm_client_model(const struct llm_client *c)
{
	return c->model;
}

jv llm_called_payload(const struct llm_client *c, const struct llm_response *resp)
{
	jv p = jv_object();

	p = json_set(p, "provider", json_str_or_null(llm_client_provider(c)));
	p = json_set(p, "model", json_str_or_null(resp->model ? resp->model : llm_client_model(c)));
	p = json_set(p, "stop_reason", jv_string(llm_stop_name(resp->stop)));
	p = json_set(p, "input_tokens", jv_number((double)resp->usage.input_tokens));
	p = json_set(p, "output_tokens", jv_number((double)resp->usage.output_tokens));
	p = json_set(p, "cache_read_tokens", jv_number((double)resp->usage.cache_read_tokens));
	p = json_set(p, "cache_write_tokens", jv_number((double)resp->usage.cache_write_tokens));
	if (resp->usage.estimated)
		p = json_set(p, "usage_estimated", jv_true());
	if (resp->error != LLM_OK)
		p = json_set(p, "error", jv_string(llm_error_name(resp->error)));
	p = json_set(p, "tool_calls", jv_number((double)resp->ncalls));
	p = json_set(p, "retries", jv_number(resp->retries));
	return json_set(p, "request_id", json_str_or_null(resp->request_id));
}

jv llm_called_cost(const struct llm_response *resp)
{
	jv cost = json_set(jv_object(), "tokens", jv_number((double)llm_usage_tokens(&resp->usage)));

	return json_set(cost, "usd", resp->cost_known ? jv_number(resp->cost_usd) : jv_null());
}

int llm_client_require_price(const struct llm_client *c)
{
	struct llm_price p;

	if (!c->p || llm_price_find(&p, c->pricing, c->model) == 0)
		return 0;
	/* (the key is the model's alone: setting llm.pricing whole would drop
	 * the prices set before; quoted, a name may hold dots) */
	bool dotted = strchr(c->model, '.') != NULL;
	return forge_error("no price known for model '%s', so the cost limits (budget.usd, --budget, "
			   "safety.cost.*) cannot hold: add its price under llm.pricing in USD per million "
			   "tokens, e.g. forge config set --global 'llm.pricing.%s%s%s' '{\"input\":0,\"output\":0}' "
			   "for a free local model", c->model, dotted ? "\"" : "", c->model, dotted ? "\"" : "");
}

enum llm_error llm_client_error(const struct llm_client *c)
{
	return c->last;
}

bool llm_says_passing(const char *text)
{
	return text && (strstr(text, LLM_SAYS_RATE_LIMITED) || strstr(text, LLM_SAYS_OVERLOADED) ||
			strstr(text, LLM_SAYS_FAILED));
}

char *llm_client_failure(const struct llm_client *c)
{
	struct buf b = BUF_INIT;

	switch (llm_client_error(c)) {
	case LLM_ERR_AUTH: case LLM_ERR_MODEL: case LLM_ERR_CONFIG: case LLM_ERR_CONTEXT:
	case LLM_ERR_BAD_REQUEST:
		buf_addf(&b, LLM_SAYS_REFUSED ": %s (fix that first: the same request would be refused "
			 "again)", forge_last_error());
		break;
	case LLM_ERR_QUOTA:     /* (before: a spend cap's 429 "could not be reached") */
		buf_addf(&b, LLM_SAYS_UNPAID ": %s", forge_last_error());
		break;
	case LLM_ERR_PROTOCOL:
		buf_addf(&b, "the model's answer could not be understood: %s", forge_last_error());
		break;
	/* (before: "the model could not be reached", though it answered) */
	case LLM_ERR_RATE_LIMIT: case LLM_ERR_OVERLOADED: case LLM_ERR_SERVER: {
		enum llm_error kind = llm_client_error(c);
		char code[32] = "", tries[48] = "";

		if (c->last_status)
			snprintf(code, sizeof code, " (%ld)", c->last_status);
		if (c->last_attempts)
			snprintf(tries, sizeof tries, " after %d attempt%s", c->last_attempts,
				 c->last_attempts == 1 ? "" : "s");
		buf_addf(&b, "%s%s%s: %s", kind == LLM_ERR_RATE_LIMIT ? LLM_SAYS_RATE_LIMITED
			 : kind == LLM_ERR_OVERLOADED ? LLM_SAYS_OVERLOADED : LLM_SAYS_FAILED, code, tries,
			 forge_last_error());
		break;
	}
	case LLM_ERR_REPLAY:   /* no provider was asked: the cassette is what did not fit */
		buf_addf(&b, "the cassette does not match this run's requests: %s (record it again "
			 "for the run as it is now)", forge_last_error());
		break;
	default:
		buf_addf(&b, "the model could not be reached: %s", forge_last_error());
		break;
	}
	return buf_detach(&b, NULL);
}

/* model calls whose provider_call() runs (threads may call at once); a
 * lock-free atomic is async-signal-safe to read */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the count of calls must be lock-free");
static atomic_int calls_running;

bool llm_interrupt(void)
{
	http_interrupt();
	return atomic_load(&calls_running) > 0;
}

bool llm_interrupted(void)
{
	return http_interrupted();
}

/* ---- one provider call ------------------------------------------------- */

struct streaming {
	const struct llm_provider *p;
	struct llm_stream s;
	struct sse_parser sse;
	bool incomplete;	/* an event stream that ended before the answer did */
};

static int on_sse(void *payload, const char *event, const char *data, size_t len)
{
	struct streaming *st = payload;

	return st->p->event(&st->s, event, data, len) < 0 ? -1 : 0;
}

/* The stream's bytes; once its end is seen ([DONE], message_stop) the
 * transfer ends there: a server or proxy that then keeps the connection
 * open, or drops it, does not fail a whole answer. */
static int on_bytes(void *payload, const char *data, size_t len)
{
	struct streaming *st = payload;

	if (sse_feed(&st->sse, data, len) < 0)
		return -1;
	return st->s.done ? HTTP_SINK_DONE : 0;
}

static bool veto_retry(void *payload, const struct http_response *r)
{
	const struct llm_provider *p = payload;
	struct llm_fault f;
	bool quota;

	if (!r->status)
		return false;
	p->fault(&f, r->status, r->body.buf, r->body.len);
	quota = f.kind == LLM_ERR_QUOTA;
	llm_fault_release(&f);
	return quota;
}

static const char *hint(enum llm_error kind)
{
	switch (kind) {
	case LLM_ERR_AUTH: return "check the key";
	case LLM_ERR_CONFIG: return "check the base URL (--base-url, FORGE_BASE_URL or llm.base_url; "
				    "an OpenAI-compatible server's ends in /v1)";
	case LLM_ERR_CONTEXT: return "shorten the prompt";
	case LLM_ERR_QUOTA: return "the account's quota or credit is exhausted: add credit or raise its "
				   "spending limit (asking again will not help until then)";
	default: return NULL;
	}
}

/* A 400 about a setting's value (the fallbacks took the unsupported
 * ones): which setting to change. */
static const char *setting_hint(enum llm_error kind, const struct llm_fault *f)
{
	if (kind != LLM_ERR_BAD_REQUEST || !f || !f->message)
		return NULL;
	if (strstr(f->message, "max_tokens") || strstr(f->message, "max_completion_tokens"))
		return "lower llm.max_tokens (--max-tokens)";
	if (strstr(f->message, "temperature"))
		return "check llm.temperature (--temperature)";
	return NULL;
}

/*
 * Two refusals that are not what their kind usually means say what they
 * are, into b, with their tip: a 403 (permission_error: the key is good
 * but may not use this model or resource; LLM_ERR_AUTH, as a rejected key
 * it is not asked again) and a 413 (request_too_large: the body is larger
 * than the provider, or a proxy before it, takes -- Anthropic's 32 MB,
 * said at times as an HTML page; LLM_ERR_CONTEXT, for the agent to shrink
 * its working memory as for a full window).  false for any other failure.
 */
static bool say_refusal(struct buf *b, const char **tip, const struct llm_client *c,
			enum llm_error kind, const struct http_response *r, const struct llm_fault *f)
{
	const char *type = f ? f->type : NULL;
	long status = r ? r->status : 0;

	if (kind == LLM_ERR_AUTH && (status == 403 || (type && !strcmp(type, "permission_error")))) {
		buf_addf(b, "the key (%s) is not allowed to use model '%s' or what the request asks for",
			 c->p ? c->p->key_env : "the API key", c->model);
		*tip = "check what the key's account, workspace or project may use, or set";
		return true;
	}
	if (kind == LLM_ERR_CONTEXT && (status == 413 || (type && !strcmp(type, "request_too_large")))) {
		buf_addf(b, "the request is larger than the provider accepts (%zu bytes)", c->sent_bytes);
		*tip = "shorten the prompt";
		return true;
	}
	return false;
}

static jv rate_limit_of(const struct http_response *r);

/*
 * A 429 that every retry met, without a retry-after: when the limit that
 * is spent comes back, as the rate-limit headers say (Anthropic's
 * anthropic-ratelimit-*-reset, RFC 3339; OpenAI's x-ratelimit-reset-*,
 * "6m0s"), into b: "; the rate limit resets in 6 min (at 14:31:05)".
 * The limit whose remaining is 0, else the later of the two.  Nothing when
 * no header says; "resets now" when the time it says is now or past.
 */
static void say_reset(struct buf *b, const struct http_response *r)
{
	jv rl = rate_limit_of(r);
	double s = -1;

	if (jv_get_kind(rl) == JV_KIND_OBJECT) {
		if (json_get_num(rl, "requests_remaining", 1) == 0 && json_has(rl, "requests_reset"))
			s = json_get_num(rl, "requests_reset", -1);
		else if (json_get_num(rl, "tokens_remaining", 1) == 0 && json_has(rl, "tokens_reset"))
			s = json_get_num(rl, "tokens_reset", -1);
		else
			s = json_get_num(rl, "reset", -1);
	}
	jv_free(rl);
	if (s < 0)
		return;
	/* (a reset time now or already past, the provider's clock or its
	 * limit behind: before, "resets in 0 s (at" the present second ")") */
	if (ceil(s) <= 0) {
		buf_adds(b, "; the rate limit resets now");
		return;
	}
	time_t at = time(NULL) + (time_t)ceil(s);
	struct tm tm;
	char clock[16] = "";

	if (localtime_r(&at, &tm))
		strftime(clock, sizeof clock, "%H:%M:%S", &tm);
	if (s < 120)
		buf_addf(b, "; the rate limit resets in %.0f s", ceil(s));
	else
		buf_addf(b, "; the rate limit resets in %.0f min", ceil(s / 60));
	if (*clock)
		buf_addf(b, " (at %s)", clock);
}

/* The final error message; redacted. */
static int report(struct llm_client *c, enum llm_error kind, const struct http_response *r,
		  const struct llm_fault *f)
{
	struct buf b = BUF_INIT;
	const char *tip = NULL;
	char give_key[160];
	/* (a server that wants a key when none was sent -- a compatible one
	 * on loopback -- rejected none: it needs one given) */
	bool keyless = kind == LLM_ERR_AUTH && !c->key && c->p;

	c->last = kind;
	c->last_status = r && r->status >= 400 ? r->status : 0;
	c->last_attempts = (r ? r->retries : 0) + c->retried + 1;
	if (keyless)
		snprintf(give_key, sizeof give_key, "set %s (or put the key in a file named by %s)",
			 c->p->key_env, key_file_var(c->provider));
	buf_addf(&b, "%s: ", c->provider);
	if (say_refusal(&b, &tip, c, kind, r, f)) {
		/* (a 403, a 413: said) */
	} else if (kind == LLM_ERR_INTERRUPTED)
		buf_adds(&b, "interrupted");
	else if (keyless)
		buf_addf(&b, "the server at %s wants an API key, and none was sent (%s is not set)",
			 c->shown_url, c->p->key_env);
	else if (kind == LLM_ERR_AUTH)
		buf_addf(&b, "the API key was rejected (%s)", c->p->key_env);
	else if (kind == LLM_ERR_MODEL)
		buf_addf(&b, "unknown model '%s'%s%s", c->model, c->model_why[0] ? ", chosen by " : "",
			 c->model_why);
	else if (kind == LLM_ERR_CONTEXT)
		buf_addf(&b, "the prompt does not fit the context window of '%s'", c->model);
	else if (r && r->streamed && f)   /* an error event in an answer under way (HTTP 200) */
		buf_addf(&b, "the stream ended with an error%s%s", f->type ? ": " : "", f->type ? f->type : "");
	else if (r && r->status)   /* (a wrong URL's, kind config, names it) */
		buf_addf(&b, "HTTP %ld%s%s%s%s", r->status, f && f->type ? " " : "", f && f->type ? f->type : "",
			 kind == LLM_ERR_CONFIG && c->shown_call_url ? " from " : "",
			 kind == LLM_ERR_CONFIG && c->shown_call_url ? c->shown_call_url : "");
	else if (r && r->too_large)   /* reached: its answer was too long to read */
		buf_addf(&b, "the response body from %s is larger than %zu bytes", c->shown_url, r->too_large);
	else if (r && r->past_deadline && r->streamed)   /* its answer had begun */
		buf_addf(&b, "the answer from %s was cut off by the time limit left to the call, "
			 "after %ld tokens and %.1f s", c->shown_url, c->cut_tokens, r->duration_ms / 1000);
	else if (r && r->past_deadline)   /* the caller's time limit, not the provider */
		buf_addf(&b, "no answer from %s within the time left to the call", c->shown_url);
	else if (r && (r->streamed || r->began))   /* reached: the answer stopped coming */
		buf_addf(&b, "the answer from %s broke off: %s", c->shown_url, r->error);
	else if (r)
		buf_addf(&b, "%s %s: %s", r->timed_out ? "no answer from" : "cannot reach", c->shown_url,
			 r->error);
	else
		buf_adds(&b, llm_error_name(kind));
	if (f && f->message)
		buf_addf(&b, ": %s", f->message);
	int retries = (r ? r->retries : 0) + c->retried;
	if (retries)
		buf_addf(&b, " (gave up after %d %s)", retries, retries == 1 ? "retry" : "retries");
	if (r && r->retry_after_refused > 0)
		buf_addf(&b, "; the provider asked to retry after %.0f s, more than llm.retry_max_delay_s=%.0f; "
			 "try later or raise it", ceil(r->retry_after_refused), c->http.retry.max_retry_after);
	else if (r && kind == LLM_ERR_RATE_LIMIT && r->status == 429 && http_retry_after(r, time(NULL)) < 0)
		say_reset(&b, r);
	else if (tip && kind == LLM_ERR_AUTH) {   /* (a 403: the model may be the cause) */
		buf_addf(&b, "; %s ", tip);
		model_tip(&b, c, " to another model");
	} else if (tip)
		buf_addf(&b, "; %s", tip);
	else if (keyless)
		buf_addf(&b, "; %s", give_key);
	else if (kind == LLM_ERR_MODEL) {
		buf_adds(&b, "; set ");
		model_tip(&b, c, " to a model the provider serves");
	} else if (hint(kind))
		buf_addf(&b, "; %s", hint(kind));
	else if (setting_hint(kind, f))
		buf_addf(&b, "; %s", setting_hint(kind, f));
	llm_redact(b.buf);
	forge_error("%s", b.buf);
	buf_release(&b);
	return -1;
}

static int finish_stream(struct llm_client *c, struct streaming *st, const struct http_response *r)
{
	if (sse_finish(&st->sse) < 0 && !st->s.failed)
		return (c->last = LLM_ERR_PROTOCOL, forge_error_prefix("%s stream", c->provider));
	if (st->s.failed)
		return report(c, st->s.fault.kind, r, &st->s.fault);
	/* (an OpenAI-compatible server that leaves out [DONE] -- older
	 * llama.cpp, TGI -- ends a whole answer with finish_reason and the
	 * end of the body, which is all the official SDK reads; an Anthropic
	 * one without message_stop, with message_delta's stop_reason) */
	if (!st->s.done && !st->s.finished) {
		const char *ct = http_header_get(r, "content-type");
		c->last = LLM_ERR_PROTOCOL;
		if (ct && !llm_is_event_stream(ct))
			return forge_error("%s: a stream was asked for but the server answered with "
					   "'%s', not text/event-stream", c->provider, ct);
		st->incomplete = true;
		int retries = r->retries + c->retried;
		if (retries)
			return forge_error("%s: the stream ended before the answer was complete "
					   "(gave up after %d %s)", c->provider, retries,
					   retries == 1 ? "retry" : "retries");
		return forge_error("%s: the stream ended before the answer was complete", c->provider);
	}
	if (llm_stream_finish(&st->s) < 0) {
		c->last = LLM_ERR_PROTOCOL;
		return -1;
	}
	return 0;
}

/* A phrase in an error message that says a parameter is not supported at
 * all, not that its value is wrong (OpenAI "Unsupported parameter: ...",
 * "Unsupported value: 'temperature' does not support 0 with this model",
 * Azure's "Unrecognized request argument supplied: ..."). */
static bool unsupported_words(const char *s)
{
	/* ("deprecated", "not allowed": how a provider may word a model that
	 * takes no temperature at all; a range error says neither) */
	static const char *const words[] = { "unsupported", "not supported", "does not support",
					     "unrecognized request argument", "unknown parameter",
					     "deprecated", "not allowed" };

	for (size_t i = 0; s && i < sizeof(words) / sizeof(*words); i++)
		if (strcasestr(s, words[i]))
			return true;
	return false;
}

/*
 * Whether a 400 says the request's parameter name is unsupported, the one
 * case where sending it otherwise (or not at all) can help: a value out of
 * range ("expected a value <= 12288", "temperature: range: 0..1", "is too
 * large") is the user's to fix and is reported as it is.  The error's param
 * (OpenAI, vLLM) must be name; without one its message must name it.
 */
static bool says_unsupported(const struct http_response *r, const char *name)
{
	jv j, e;
	const char *param, *code, *msg;
	bool yes;

	if (r->status != 400 || !r->body.buf)
		return false;
	j = json_parse(r->body.buf, r->body.len);
	e = jv_get_kind(j) == JV_KIND_OBJECT ? json_get(j, "error") : jv_null();
	if (jv_get_kind(e) != JV_KIND_OBJECT && jv_get_kind(e) != JV_KIND_STRING &&
	    jv_get_kind(j) == JV_KIND_OBJECT) {   /* vLLM's flat error */
		jv_free(e);
		e = jv_copy(j);
	}
	if (jv_get_kind(e) == JV_KIND_OBJECT) {
		param = json_get_str(e, "param");
		code = json_get_str(e, "code");
		msg = json_get_str(e, "message");
	} else {
		param = code = NULL;
		msg = jv_get_kind(e) == JV_KIND_STRING ? jv_string_value(e) : r->body.buf;
	}
	yes = (param ? !strcmp(param, name) : msg && strstr(msg, name)) &&
	      ((code && strcasestr(code, "unsupported")) || unsupported_words(msg));
	jv_free(e);
	jv_free(j);
	return yes;
}

/* A server that does not take the output limit's field (an older server
 * max_completion_tokens; an OpenAI reasoning model behind another URL
 * max_tokens): the request again with the other, and the client's later
 * calls too; once, so that two refusals do not loop. */
static bool wants_other_max_field(struct llm_client *c, const struct http_response *r)
{
	const char *sent = c->flags & LLM_OPENAI_MAX_TOKENS ? "max_tokens" : "max_completion_tokens";

	if (c->p != &llm_openai || c->max_field_switched || !says_unsupported(r, sent))
		return false;
	c->flags ^= LLM_OPENAI_MAX_TOKENS;
	c->max_field_switched = true;
	return true;
}

static void warn_once(struct llm_client *c, const char *what, const char *model, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A model that refuses a sampling temperature and is not known to (a 400
 * saying it is unsupported): the request again without one, and the
 * client's later calls too, said once so that the user knows the setting
 * is not used. */
static bool refuses_temperature(struct llm_client *c, struct llm_request *req, const struct http_response *r)
{
	if (req->temperature < 0 || !says_unsupported(r, "temperature"))
		return false;
	warn_once(c, "temperature", c->model, "model '%s' does not support a temperature: "
		  "llm.temperature (%g) is not sent to it", c->model, req->temperature);
	c->no_temperature = true;
	req->temperature = -1;
	return true;
}

static void take_request_id(struct llm_response *out, const struct http_response *r)
{
	const char *id = http_header_get(r, "request-id");

	if (!id)
		id = http_header_get(r, "x-request-id");
	if (id) {
		free(out->request_id);
		out->request_id = xstrdup(id);
	}
}

/* ---- rate-limit headers ------------------------------------------------ */

/* An RFC 3339 UTC time ("2026-11-21T21:30:04Z", fraction allowed) as
 * seconds from now; -1 when unparseable. */
static double until_rfc3339(const char *v, time_t now)
{
	struct tm tm;
	int y, mo, d, h, mi, n = 0;
	double sec;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(v, "%4d-%2d-%2dT%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
	    (v[n] != 'Z' && v[n] != 'z') || v[n + 1] || sec < 0 || sec >= 61)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	return difftime(t, now) + sec;
}

/* An OpenAI duration ("6m0s", "1s", "20ms", "1h2m3.5s") in seconds; -1
 * when unparseable. */
static double go_duration(const char *v)
{
	double total = 0;
	const char *p = v;

	if (!*p)
		return -1;
	while (*p) {
		char *end;
		errno = 0;
		double x = strtod(p, &end);
		if (end == p || errno || !isfinite(x) || x < 0)
			return -1;
		p = end;
		if (!strncmp(p, "ms", 2)) {
			total += x / 1000.0;
			p += 2;
		} else if (*p == 'h' || *p == 'm' || *p == 's') {
			total += x * (*p == 'h' ? 3600.0 : *p == 'm' ? 60.0 : 1.0);
			p++;
		} else {
			return -1;
		}
	}
	return total;
}

static jv rl_count(jv rl, const char *key, const char *value)
{
	long n;

	if (value && forge_parse_long(&n, value, 0, 1000000000000L) == 0)
		rl = json_set(rl, key, jv_number((double)n));
	return rl;
}

static jv rl_reset(jv rl, const char *key, double s)
{
	return s < 0 ? rl : json_set(rl, key, jv_number(round(s * 1000.0) / 1000.0));
}

/* The normalised rate_limit object of llm.h, or jv_null(). */
static jv rate_limit_of(const struct http_response *r)
{
	bool anth = http_header_get(r, "anthropic-ratelimit-requests-limit") ||
		    http_header_get(r, "anthropic-ratelimit-tokens-limit");
	const char *rq_lim, *rq_rem, *tk_lim, *tk_rem, *rq_rst, *tk_rst;
	double rq_s, tk_s;
	time_t now = time(NULL);
	jv rl = jv_object();

	if (anth) {
		rq_lim = http_header_get(r, "anthropic-ratelimit-requests-limit");
		rq_rem = http_header_get(r, "anthropic-ratelimit-requests-remaining");
		tk_lim = http_header_get(r, "anthropic-ratelimit-tokens-limit");
		tk_rem = http_header_get(r, "anthropic-ratelimit-tokens-remaining");
		rq_rst = http_header_get(r, "anthropic-ratelimit-requests-reset");
		tk_rst = http_header_get(r, "anthropic-ratelimit-tokens-reset");
		rq_s = rq_rst ? until_rfc3339(rq_rst, now) : -1;
		tk_s = tk_rst ? until_rfc3339(tk_rst, now) : -1;
	} else {
		rq_lim = http_header_get(r, "x-ratelimit-limit-requests");
		rq_rem = http_header_get(r, "x-ratelimit-remaining-requests");
		tk_lim = http_header_get(r, "x-ratelimit-limit-tokens");
		tk_rem = http_header_get(r, "x-ratelimit-remaining-tokens");
		rq_rst = http_header_get(r, "x-ratelimit-reset-requests");
		tk_rst = http_header_get(r, "x-ratelimit-reset-tokens");
		rq_s = rq_rst ? go_duration(rq_rst) : -1;
		tk_s = tk_rst ? go_duration(tk_rst) : -1;
	}
	if (rq_s != -1 && rq_s < 0)
		rq_s = 0;   /* a reset time already past */
	if (tk_s != -1 && tk_s < 0)
		tk_s = 0;
	rl = rl_count(rl, "requests_limit", rq_lim);
	rl = rl_count(rl, "requests_remaining", rq_rem);
	rl = rl_count(rl, "tokens_limit", tk_lim);
	rl = rl_count(rl, "tokens_remaining", tk_rem);
	rl = rl_reset(rl, "requests_reset", rq_s);
	rl = rl_reset(rl, "tokens_reset", tk_s);
	rl = rl_reset(rl, "reset", rq_s > tk_s ? rq_s : tk_s);
	if (jv_object_length(jv_copy(rl)) == 0) {
		jv_free(rl);
		return jv_null();
	}
	return rl;
}

bool llm_is_event_stream(const char *content_type)
{
	static const char mt[] = "text/event-stream";
	size_t n = sizeof(mt) - 1;

	if (!content_type)
		return false;
	while (*content_type == ' ' || *content_type == '\t')
		content_type++;
	if (strncasecmp(content_type, mt, n))
		return false;
	content_type += n;
	while (*content_type == ' ' || *content_type == '\t')
		content_type++;
	return !*content_type || *content_type == ';';
}

/*
 * Whether an answer that began (streaming, or a 2xx not streamed whose
 * body broke off: http.c leaves that to us, r->began) and then failed may
 * be asked again whole: an error event saying the provider is overloaded,
 * busy or failed (not one that says the request is wrong, or the key), the
 * connection cut or stalled (a transport error http.c would retry before
 * the answer began), or the body ended before the answer did -- unless
 * part of its text went to an on_text that shows it as the answer
 * (forge-llm --stream prints it).
 */
static bool restartable(const struct llm_request *req, const struct streaming *st,
			const struct http_response *r)
{
	if (!(r->streamed || r->began) || r->interrupted || r->past_deadline || llm_interrupted())
		return false;
	if (req->on_text && !req->progress_only && st->s.text.len)
		return false;
	/* (a body that ends cleanly mid-answer: a proxy or load balancer that
	 * ended the response, as a cut connection is) */
	if (st->incomplete)
		return true;
	if (st->s.failed) {
		switch (st->s.fault.kind) {
		case LLM_ERR_OVERLOADED: case LLM_ERR_SERVER: case LLM_ERR_RATE_LIMIT:
		case LLM_ERR_TIMEOUT: case LLM_ERR_NETWORK:
			return true;
		default:
			return false;
		}
	}
	return r->status == 0 && http_should_retry(r);
}

static long output_estimate(const struct llm_response *out);

/* req: what is sent (its temperature dropped when the model refuses one). */
/*
 * A refusal that names a tool by its place in the request -- Anthropic's
 * "tools.4.custom.input_schema: JSON schema is invalid", OpenAI's
 * "Invalid 'tools[4].function.parameters'" -- names it by name too (an MCP
 * tool's SERVER__TOOL says its server): " (tools.4 is the tool 's__bad')"
 * after f's message.  The providers keep the order of req's tools.
 */
static void name_the_tool(struct llm_fault *f, jv tools)
{
	size_t n = jv_get_kind(tools) == JV_KIND_ARRAY ? (size_t)jv_array_length(jv_copy(tools)) : 0;

	if (!f->message || !n)
		return;
	for (const char *at = strstr(f->message, "tools"); at; at = strstr(at + 5, "tools")) {
		const char *d = at + 5;
		bool bracket = *d == '[';

		if ((*d == '.' || bracket) && d[1] >= '0' && d[1] <= '9') {
			char *end;
			unsigned long i = strtoul(d + 1, &end, 10);
			if (i < n && (!bracket || *end == ']')) {
				jv t = jv_array_get(jv_copy(tools), (int)i);
				const char *name = json_get_str(t, "name");
				if (name) {
					struct buf b = BUF_INIT;
					buf_addf(&b, "%s (tools%s%lu%s is the tool '%s')", f->message, bracket ? "[" : ".", i,
						 bracket ? "]" : "", name);
					free(f->message);
					f->message = buf_detach(&b, NULL);
				}
				jv_free(t);
				return;
			}
		}
	}
}

static int provider_call(struct llm_response *out, struct llm_client *c, struct llm_request *req)
{
	struct llm_wire w;
	struct http_response r;
	struct streaming st;
	int rc;

	memset(&st, 0, sizeof(st));
	st.p = c->p;
	c->restartable = false;
again:
	c->p->build(&w, &c->parts, c->base_url, c->key, c->model, req, c->flags);
	c->sent_bytes = w.body_len;
	free(c->shown_call_url);
	c->shown_call_url = secret_url_shown(w.url);
	struct http_request hr = { "POST", w.url, (const char *const *)w.headers, w.body, w.body_len,
				   NULL, NULL, veto_retry, (void *)c->p, 0, req->deadline_ms };
	if (req->stream) {
		llm_stream_init(&st.s, out);
		st.s.on_text = req->on_text;
		st.s.payload = req->payload;
		sse_init(&st.sse, 16u << 20, on_sse, &st);
		hr.sink = on_bytes;
		hr.sink_payload = &st;
	}
	rc = http_send(&r, &c->http, &hr);
	out->retries += r.retries;
	out->duration_ms += r.duration_ms;
	if (rc == 0) {
		take_request_id(out, &r);
		jv_free(out->rate_limit);
		out->rate_limit = rate_limit_of(&r);
		if (req->stream) {
			if ((rc = finish_stream(c, &st, &r)) < 0)
				c->restartable = (st.s.failed || st.incomplete) &&
						 restartable(req, &st, &r);
		} else if ((rc = c->p->parse(out, r.body.buf, r.body.len)) < 0) {
			c->last = LLM_ERR_PROTOCOL;
		}
	} else if (wants_other_max_field(c, &r) || refuses_temperature(c, req, &r)) {
		llm_wire_release(&w);
		http_response_release(&r);
		if (req->stream) {
			sse_release(&st.sse);
			llm_stream_release(&st.s);
		}
		goto again;
	} else if (r.status) {
		struct llm_fault f;
		c->p->fault(&f, r.status, r.body.buf, r.body.len);
		name_the_tool(&f, req->tools);
		rc = report(c, f.kind, &r, &f);
		llm_fault_release(&f);
	} else if (r.interrupted) {
		/* what arrived of the answer is the caller's to bill (llm_call);
		 * so is a request sent whole whose answer had not begun (one not
		 * streamed, as the run reflection's): the provider answers it,
		 * and bills it, all the same (before: priced at 0) */
		c->cut_short = r.streamed || r.sent;
		if (r.streamed) {
			llm_stream_finish(&st.s);
			out->stop = LLM_STOP_ERROR;	/* it did not end */
		}
		rc = report(c, LLM_ERR_INTERRUPTED, &r, NULL);
	} else if (r.past_deadline && (r.streamed || r.sent || r.began)) {
		/* the caller's time limit (a phase's safety.time_s) cut it once
		 * sent: billed as a Ctrl-C's is (before: priced at 0) */
		c->cut_short = true;
		if (r.streamed) {
			llm_stream_finish(&st.s);
			out->stop = LLM_STOP_ERROR;	/* it did not end */
		}
		c->cut_tokens = output_estimate(out);
		rc = report(c, LLM_ERR_TIMEOUT, &r, NULL);
	} else if (r.streamed && st.s.failed) {
		c->restartable = restartable(req, &st, &r);
		rc = report(c, st.s.fault.kind, &r, &st.s.fault);
	} else {
		c->restartable = restartable(req, &st, &r);
		rc = report(c, r.timed_out ? LLM_ERR_TIMEOUT : LLM_ERR_NETWORK, &r, NULL);
	}
	if (c->restartable)
		llm_stream_text_end(&st.s);	/* on_text: the text so far is a block */
	if (req->stream) {
		sse_release(&st.sse);
		llm_stream_release(&st.s);
	}
	llm_wire_release(&w);
	http_response_release(&r);
	return rc;
}

/* ---- cost, recording, logging ----------------------------------------- */

/* Say fmt once a client for what and model (the key). */
static void warn_once(struct llm_client *c, const char *what, const char *model, const char *fmt, ...)
{
	struct buf key = BUF_INIT;

	buf_addf(&key, "\n%s:%s\n", what, model);
	if (!strstr(c->warned.buf ? c->warned.buf : "", key.buf)) {
		buf_adds(&c->warned, key.buf);
		if (c->warn) {
			struct buf msg = BUF_INIT;
			va_list ap;

			va_start(ap, fmt);
			buf_vaddf(&msg, fmt, ap);
			va_end(ap);
			c->warn(c->warn_payload, msg.buf);
			buf_release(&msg);
		}
	}
	buf_release(&key);
}

static void price(struct llm_client *c, struct llm_response *out)
{
	struct llm_price p;
	const char *model = out->model ? out->model : c->model;

	if (llm_price_find(&p, c->pricing, model) == 0 ||
	    (model != c->model && llm_price_find(&p, c->pricing, c->model) == 0)) {
		out->cost_known = true;
		out->cost_usd = llm_price_cost(&p, &out->usage);
		return;
	}
	out->cost_known = false;
	if (!c->p && !out->model && !strcmp(c->model, "replay"))
		return;   /* a cassette without a model: nothing to price, nothing to warn about */
	warn_once(c, "price", model, "no price known for model '%s': its cost is reported as null "
		  "(add it under llm.pricing in the config)", model);
}

static void log_call(struct llm_client *c, jv reqj, const struct llm_response *out, int rc)
{
	struct llm_call_log rec = { 0 };
	jv resp = rc == 0 ? llm_response_to_json(out) : jv_null();
	char *err = rc == 0 ? NULL : xstrdup(forge_last_error());

	rec.trace_id = c->trace_id;
	rec.phase = c->phase;
	rec.provider = c->provider;
	rec.model = out->model ? out->model : c->model;
	rec.attempt = c->attempt;
	rec.call = c->calls;
	rec.request = reqj;
	rec.response = resp;
	rec.usage = &out->usage;
	rec.cost_known = out->cost_known;
	rec.cost_usd = out->cost_usd;
	rec.duration_ms = out->duration_ms;
	rec.retries = out->retries;
	rec.error = err;
	rec.memo = &c->log_memo;
	if (llm_log_call(c->store, &rec) < 0 && c->warn)
		c->warn(c->warn_payload, forge_last_error());
	if (err)
		forge_error("%s", err);   /* the call's error stays the last one */
	free(err);
	jv_free(resp);
}

/* An answer without believable usage figures (llm_usage.estimated): its
 * tokens from the sizes of the request (as normalised: what was sent,
 * near enough) and of the answer, said once per client and model. */
static long output_estimate(const struct llm_response *out)
{
	long output = (long)tokens_estimate_str(out->text);

	for (size_t i = 0; i < out->ncalls; i++)
		output += (long)tokens_estimate_jv(out->calls[i].input) + 8;
	return output;
}

/* A request's input tokens estimated from its size (reqj, borrowed) into
 * u: as cache writes when req asked c's provider to cache its prefix,
 * the most its input can cost (1.25x the input price), so that a cost
 * limit is not passed by an estimate too low; else as input. */
static void input_estimate(struct llm_usage *u, const struct llm_client *c,
			   const struct llm_request *req, jv reqj)
{
	long n = (long)tokens_estimate_jv(reqj);

	if (req->cache_prefix && (c->flags & LLM_PROMPT_CACHE))
		u->cache_write_tokens = n;
	else
		u->input_tokens = n;
}

static void estimate_usage(struct llm_client *c, struct llm_response *out,
			   const struct llm_request *req, jv reqj)
{
	const char *model = out->model ? out->model : c->model;

	memset(&out->usage, 0, sizeof out->usage);
	input_estimate(&out->usage, c, req, reqj);
	out->usage.output_tokens = output_estimate(out);
	out->usage.estimated = true;
	warn_once(c, out->usage_bad ? "usage-bad" : "usage-none", model, "the answers of model '%s' "
		  "carry %s usage figures: their tokens, and so their cost, are estimated from the sizes "
		  "of the request and the answer", model,
		  out->usage_bad ? "impossible (negative or huge)" : "no");
}

/*
 * An answer llm_interrupt() (Ctrl-C) or the caller's deadline (a phase's
 * time limit) cut off once it had begun, or once its request had been
 * sent whole: the provider bills the request's input
 * and what it generated, so the call is billed (usage_seen) for the
 * figures it sent -- Anthropic's input in message_start -- and, where it
 * sent none yet (OpenAI's usage comes last; an answer not streamed sends
 * nothing before its end) or fewer than what arrived (output so far), the
 * sizes' estimate.
 */
static void bill_cut_answer(struct llm_response *out, const struct llm_client *c,
			    const struct llm_request *req, jv reqj)
{
	long output = output_estimate(out);

	if (!out->usage_seen || out->usage_bad) {
		memset(&out->usage, 0, sizeof out->usage);
		input_estimate(&out->usage, c, req, reqj);
		out->usage.estimated = true;
	}
	if (output > out->usage.output_tokens) {
		out->usage.output_tokens = output;
		out->usage.estimated = true;
	}
	out->usage_seen = true;
	out->usage_bad = false;
}

/* Add an attempt's usage figures to a sum (b to a). */
static void usage_add(struct llm_usage *a, const struct llm_usage *b)
{
	a->input_tokens += b->input_tokens;
	a->output_tokens += b->output_tokens;
	a->cache_read_tokens += b->cache_read_tokens;
	a->cache_write_tokens += b->cache_write_tokens;
	a->estimated = a->estimated || b->estimated;
}

static double clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/*
 * provider_call(), and again whole while its stream fails transiently
 * (c->restartable), within llm.max_retries in all: each attempt's HTTP
 * retries and each asking again count, and wait as HTTP retries do.  What
 * the provider said a lost attempt used (Anthropic's message_start; where
 * it said nothing yet, as OpenAI's stream until its end, the sizes'
 * estimate) was spent: *lost sums it (*lost_seen), for llm_call to bill.
 */
static int call_retrying(struct llm_response *out, struct llm_usage *lost, bool *lost_seen,
			 struct llm_client *c, struct llm_request *req)
{
	int max = c->http.retry.max_retries;
	int rc;

	c->retried = 0;
	for (;;) {
		rc = provider_call(out, c, req);
		if (rc == 0 || !c->restartable || out->retries >= max || llm_interrupted())
			break;
		if (out->usage_seen && !out->usage_bad) {
			usage_add(lost, &out->usage);
		} else {
			/* the answer had begun, so the provider bills the attempt;
			 * OpenAI's usage comes last: estimated from the sizes, as a
			 * cut answer's is (before: billed nothing) */
			struct llm_usage guess = { .estimated = true };
			jv reqj = llm_request_to_json(req);

			input_estimate(&guess, c, req, reqj);
			guess.output_tokens = output_estimate(out);
			jv_free(reqj);
			usage_add(lost, &guess);
		}
		*lost_seen = true;
		int retries = out->retries;
		double start = clock_ms(), ms = out->duration_ms;
		double wait = http_retry_delay(&c->http.retry, retries, NULL);
		/* (no asking again that could not begin before the caller's deadline) */
		if (req->deadline_ms > 0 && (double)monotonic_ms() + wait * 1000 >= (double)req->deadline_ms)
			break;
		say_retry(c, retries + 2, 0, false, "the answer broke off", wait);
		http_retry_sleep(&c->http.retry, wait);
		llm_response_release(out);
		llm_response_init(out);
		out->retries = c->retried = retries + 1;
		out->duration_ms = ms + (clock_ms() - start);
		c->http.retry.max_retries = max - c->retried;
	}
	c->http.retry.max_retries = max;
	c->retried = 0;
	return rc;
}

int llm_call(struct llm_response *out, struct llm_client *c, const struct llm_request *req)
{
	struct llm_request sent = *req;
	struct llm_usage lost = { 0 };
	bool lost_seen = false, whole = false;
	jv reqj;
	int rc;

	llm_response_init(out);
	if (c->before_call)	/* (nothing of the call has begun: it may end the process) */
		c->before_call(c->before_call_payload);
	c->last = LLM_OK;
	c->last_status = 0;
	c->last_attempts = 0;
	c->cut_short = false;
	c->calls++;
	if (jv_get_kind(req->messages) != JV_KIND_ARRAY) {
		c->last = LLM_ERR_CONFIG;
		return forge_error("the request has no messages");
	}
	if (c->no_temperature)
		sent.temperature = -1;
	req = &sent;
	reqj = llm_request_to_json(req);
	if (c->cassette) {
		enum llm_error kind = LLM_OK;
		rc = llm_cassette_answer(out, &kind, c->cassette, c->phase, c->attempt, c->calls, reqj);
		c->last = rc < 0 ? kind : LLM_OK;
		if (rc == 0 && req->stream && req->on_text && *out->text) {
			req->on_text(req->payload, out->text, strlen(out->text));
			req->on_text(req->payload, "", 0);	/* the whole text at once */
		}
	} else {
		double temperature = sent.temperature;
		atomic_fetch_add(&calls_running, 1);
		rc = call_retrying(out, &lost, &lost_seen, c, &sent);
		/* (an Anthropic tool_use without an id is as malformed as an
		 * OpenAI call without one: both get one of forge's, rather
		 * than fail the phase over a token only the results need) */
		if (rc == 0)
			llm_response_name_calls(out, req->messages);
		/* (a signal after this finds no call under way: the phase
		 * leaves at once, as it does between calls) */
		atomic_fetch_sub(&calls_running, 1);
		if (sent.temperature != temperature) {   /* sent again without it */
			jv_free(reqj);
			reqj = llm_request_to_json(&sent);
		}
		if (rc == 0 && (!out->usage_seen || out->usage_bad))
			estimate_usage(c, out, req, reqj);
		/* Ctrl-C during the call: its caller stops, whole answer or not */
		if (rc == 0 && llm_interrupted()) {
			whole = true;	/* (its stop reason is the answer's) */
			c->last = LLM_ERR_INTERRUPTED;
			c->cut_short = true;
			rc = forge_error("%s: interrupted", c->provider);
		}
		if (rc < 0 && c->cut_short)
			bill_cut_answer(out, c, req, reqj);
		/* (an attempt asked again was spent: its figures are the call's too) */
		if (lost_seen && rc < 0 && (!out->usage_seen || out->usage_bad)) {
			memset(&out->usage, 0, sizeof out->usage);
			out->usage_seen = true;
			out->usage_bad = false;
		}
		if (lost_seen)
			usage_add(&out->usage, &lost);
	}
	/* (a call that failed after its usage arrived was billed for it) */
	if (rc == 0 || (!c->cassette && out->usage_seen && !out->usage_bad))
		price(c, out);
	if (rc == 0 && c->record && llm_cassette_record(c->record, c->phase, c->attempt, c->calls,
			jv_copy(reqj), llm_response_to_json(out)) < 0 && c->warn)
		c->warn(c->warn_payload, forge_last_error());
	/* A call that failed did not end as an answer does: its stop reason
	 * is "error" (before: a call timed out or interrupted before its
	 * answer began said "end_turn"), unless the whole answer had come. */
	if (rc < 0) {
		out->error = c->last;
		if (!whole)
			out->stop = LLM_STOP_ERROR;
	}
	log_call(c, reqj, out, rc);
	jv_free(reqj);
	return rc;
}

/* ---- the context window ------------------------------------------------ */

/* A GET or POST to url with the client's key; the parsed JSON body or null. */
static jv ask_server(struct llm_client *c, const char *method, const char *url, const char *body)
{
	struct http_client hc;
	struct http_response r;
	struct buf auth = BUF_INIT;
	const char *headers[3] = { "content-type: application/json", NULL, NULL };
	jv out = jv_null();

	if (c->key) {
		buf_addf(&auth, "authorization: Bearer %s", c->key);
		headers[1] = auth.buf;
	}
	if (http_client_init(&hc) < 0) {
		buf_release(&auth);
		return out;
	}
	hc.timeout_ms = 2000;
	hc.connect_timeout_ms = 1000;
	hc.retry.max_retries = 0;
	struct http_request req = { method, url, headers, body, body ? strlen(body) : 0,
				    NULL, NULL, NULL, NULL, 1u << 20 };
	if (http_send(&r, &hc, &req) == 0)
		out = json_parse(r.body.buf, r.body.len);
	if (!jv_is_valid(out)) {
		jv_free(out);
		out = jv_null();
	}
	http_response_release(&r);
	http_client_release(&hc);
	buf_release(&auth);
	return out;
}

/* The model's entry in an OpenAI-style model list: max_model_len (vLLM),
 * context_length or context_window; 0 when absent. */
static long listed_window(jv list, const char *model)
{
	static const char *const keys[] = { "max_model_len", "context_length", "context_window" };
	jv data = json_get(list, "data");
	long n = 0;

	if (jv_get_kind(data) == JV_KIND_ARRAY) {
		jv_array_foreach(data, i, m) {
			const char *id = json_get_str(m, "id");

			for (size_t k = 0; !n && id && strcmp(id, model) == 0 && k < 3; k++)
				n = (long)json_get_num(m, keys[k], 0);
			jv_free(m);
			(void)i;
		}
	}
	jv_free(data);
	return n > 0 ? n : 0;
}

/* num_ctx in Ollama's /api/show "parameters" ("num_ctx  8192\n…"); 0 when absent. */
static long ollama_num_ctx(jv show)
{
	const char *params = json_get_str(show, "parameters");
	const char *p = params ? strstr(params, "num_ctx") : NULL;
	long n = 0;

	if (!p)
		return 0;
	p += strlen("num_ctx");
	while (*p == ' ' || *p == '\t')
		p++;
	while (*p >= '0' && *p <= '9' && n < 100000000)
		n = n * 10 + (*p++ - '0');
	return n;
}

static long server_window(struct llm_client *c)
{
	char *url = llm_url(c->base_url, "/models");
	jv list = ask_server(c, "GET", url, NULL);
	long n = listed_window(list, c->model);

	jv_free(list);
	free(url);
	if (n)
		return n;
	/* Ollama serves the OpenAI API under /v1 and its own beside it. */
	size_t len = strlen(c->base_url);
	while (len && c->base_url[len - 1] == '/')
		len--;
	if (len < 3 || strncmp(c->base_url + len - 3, "/v1", 3))
		return 0;
	char *root = xstrndup(c->base_url, len - 3);
	char *show_url = llm_url(root, "/api/show");
	char *body = json_dumps(json_set(jv_object(), "model", jv_string(c->model)), false);
	jv show = ask_server(c, "POST", show_url, body);

	n = ollama_num_ctx(show);
	jv_free(show);
	free(body);
	free(show_url);
	free(root);
	return n;
}

long llm_context_window(const char **source, struct llm_client *c, long fallback)
{
	struct llm_price p;

	*source = "table";
	if (c->model && llm_price_find(&p, c->pricing, c->model) == 0 && p.context_window > 0)
		return p.context_window;
	if (c->p == &llm_openai && c->model && c->base_url && strcmp(c->base_url, c->p->default_base_url)) {
		if (!c->window_asked) {
			c->window_asked = true;
			c->server_window = server_window(c);
		}
		if (c->server_window > 0) {
			*source = "server";
			return c->server_window;
		}
	}
	*source = "config";
	return fallback;
}
