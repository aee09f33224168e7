/*
 * llm.h - one request/response model for every LLM provider.
 *
 * Providers: "anthropic" (Messages API), "openai" (Chat Completions, and any
 * compatible server by base URL: Ollama, llama.cpp, vLLM, OpenRouter) and
 * "replay" (answers from a cassette file, see CASSETTES below).  A client is
 * made once per process (it keeps one libcurl handle, so connections stay
 * open) and serves any number of calls.
 *
 * THE NORMALISED FORM (also the cassette format and `forge llm --json`)
 * -------------------------------------------------------------------
 * Messages are a jv array; each message is one of
 *   {"role":"user","content":"text"}
 *   {"role":"assistant","content":"text","tool_calls":[{"id","name","input":{…}}],
 *    "reasoning":"…"}
 *       (content may be "" or absent when there are tool calls; reasoning
 *        only when the answer carried one: an OpenAI-compatible server's
 *        reasoning_content (DeepSeek's thinking mode), sent back with its
 *        turn because such a server refuses a tool-call turn without it)
 *   {"role":"tool","tool_call_id":"…","content":"text","is_error":false}
 *       (one message per tool result; consecutive ones form one Anthropic
 *        user turn, OpenAI gets one "tool" message each)
 * A call's id is the provider's; one that came without an id, or with the id
 * of an earlier call of the same answer, gets "call_forge_TURN_N" (TURN: 1 +
 * the request's assistant messages; N: the call's place, from 1).
 * Tools are a jv array of {"name","description","input_schema":{JSON Schema}}.
 * A response is
 *   {"text":"…","tool_calls":[{"id","name","input":{…}}],"stop_reason":"end_turn",
 *    "reasoning":"…" (only when the answer carried one),
 *    "usage":{"input_tokens","output_tokens","cache_read_tokens","cache_write_tokens"},
 *    "cost_usd":0.0123|null,"model":"…","request_id":"…","duration_ms":812,"retries":0,
 *    "rate_limit":{…}|null}
 * usage.input_tokens counts the UNCACHED input only (Anthropic's meaning;
 * for OpenAI it is prompt_tokens - cached_tokens and cache_read_tokens is
 * cached_tokens), so cost = Σ tokens × price for every provider.
 * rate_limit is what the provider's rate-limit headers said on the answer
 * (Anthropic anthropic-ratelimit-*, OpenAI x-ratelimit-*), normalised:
 *   {"requests_limit","requests_remaining","tokens_limit","tokens_remaining",
 *    "requests_reset","tokens_reset","reset"}
 * each key only when the provider sent it; *_reset are seconds from the
 * answer until that limit is restored, reset the larger of the two (when
 * every limit is back).  null when no such header came (replay, Ollama).
 * Stop reasons: end_turn, tool_use, max_tokens, stop_sequence, refusal,
 * pause_turn, error, model_context_window_exceeded (OpenAI: stop→end_turn,
 * tool_calls→tool_use, length→max_tokens, content_filter→refusal; an
 * OpenAI-compatible server says a full window with a 400 error,
 * context_length_exceeded, which is LLM_ERR_CONTEXT, or with "length").
 *
 * ERRORS
 * ------
 * Every function returns 0 or -1 after forge_error().  llm_call() also
 * classifies the failure (llm_client_error()): what retrying cannot fix
 * (a rejected key, an unknown model, a context-length overflow, a bad
 * request) is reported at once; transient failures (connection errors,
 * timeouts, 408, 409, 429, >= 500, 529 included) are retried like the
 * official SDKs do (http.h) before being reported.  Messages never contain
 * an API key: every key the client loads is registered with
 * llm_secret_add() and scrubbed from error text and logged JSON.
 *
 * CASSETTES (provider "replay"; the schema is schemas/cassette.schema.json)
 * --------------------------------------------------------------------
 * A cassette is JSON lines (what --record writes, one entry per line), or
 * one JSON document: an array of entries or {"mode":…, "entries":[…]}.
 * An entry:
 *   {"phase":"plan","attempt":1,"call":1,
 *    "request":{ normalised request, optional },
 *    "response":{ normalised response: text, tool_calls, stop_reason, usage }}
 * or {"error":{"kind":"rate_limit","message":"…"}} instead of "response" to
 * replay a failure.  phase/attempt/call are optional.  The replay provider
 * serves call k (1, 2, … counted within this process) of (phase, attempt)
 * with the first entry whose phase and attempt match (an absent field
 * matches anything) and whose call is k; when no entry names call k, with
 * the k-th matching entry in file order.  Phase and attempt come from
 * llm_options (phase: $FORGE_PHASE when unset, "-fast" appended for the
 * fast model; attempt: $FORGE_ATTEMPT when set), so each process of a
 * pipeline finds its own answers, also implement's on every bounce.
 * Modes: "sequential" (default for hand-written cassettes: the request is
 * not checked) and "strict" (the entry's request must equal this request;
 * a mismatch names the first differing field, e.g.
 * "request.messages[2].content").  --record FILE ($FORGE_RECORD) wraps a
 * real provider and appends one line per exchange, request included.
 *
 * KEYS
 * ----
 * ANTHROPIC_API_KEY / OPENAI_API_KEY, or the file named by
 * FORGE_ANTHROPIC_KEY_FILE / FORGE_OPENAI_KEY_FILE.  A compatible server on
 * a loopback base URL needs no key.  llm_secret_env_names lists every
 * variable a child process must not inherit; llm_scrub_env() removes them.
 */
#ifndef FORGE_LLM_H
#define FORGE_LLM_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/secret.h"

struct store;

enum llm_stop {
	LLM_STOP_END_TURN,
	LLM_STOP_TOOL_USE,
	LLM_STOP_MAX_TOKENS,
	LLM_STOP_STOP_SEQUENCE,
	LLM_STOP_REFUSAL,
	LLM_STOP_PAUSE_TURN,
	LLM_STOP_ERROR,
	LLM_STOP_CONTEXT_WINDOW,       /* the request and the answer filled the model's
	                                  context window: the answer is cut, and a larger
	                                  max_tokens cannot help (Anthropic's
	                                  model_context_window_exceeded) */
};

enum llm_tool_choice {
	LLM_TOOL_AUTO,      /* the model decides (default) */
	LLM_TOOL_ANY,       /* must call some tool */
	LLM_TOOL_FORCED,    /* must call llm_request.tool_name (structured answers) */
	LLM_TOOL_NONE,      /* must not call a tool */
};

/* Why a call failed, for callers that react (the agent loop compresses its
 * context on LLM_ERR_CONTEXT). */
enum llm_error {
	LLM_OK = 0,
	LLM_ERR_CONFIG,        /* no key, unknown provider, bad base URL (a 404 that
				  does not name the model), bad cassette */
	LLM_ERR_AUTH,          /* 401: key rejected; 403: not allowed this model or resource */
	LLM_ERR_MODEL,         /* unknown model (a 404 naming it / model_not_found) */
	LLM_ERR_CONTEXT,       /* prompt longer than the model's context window; 413: request too large */
	LLM_ERR_BAD_REQUEST,   /* other 4xx the server will always refuse */
	LLM_ERR_QUOTA,         /* out of credit / spend cap: retrying will not help */
	LLM_ERR_RATE_LIMIT,    /* 429 after every retry */
	LLM_ERR_OVERLOADED,    /* 529 / overloaded_error after every retry */
	LLM_ERR_SERVER,        /* other >= 500 after every retry */
	LLM_ERR_NETWORK,       /* connection failed after every retry */
	LLM_ERR_TIMEOUT,       /* timed out or stalled after every retry */
	LLM_ERR_PROTOCOL,      /* the answer could not be understood */
	LLM_ERR_REPLAY,        /* cassette exhausted or request mismatch */
	LLM_ERR_INTERRUPTED,   /* llm_interrupt() (Ctrl-C) came while the call ran */
};

/* "rate_limit", "context_length", … (stable names used in cassettes). */
const char *llm_error_name(enum llm_error e);
const char *llm_stop_name(enum llm_stop s);
/* -1 when name is unknown. */
int llm_stop_parse(enum llm_stop *out, const char *name);

struct llm_request {
	const char *system;            /* may be NULL */
	jv messages;                   /* normalised array; borrowed by llm_call */
	jv tools;                      /* array or jv_null(); borrowed */
	enum llm_tool_choice tool_choice;
	const char *tool_name;         /* for LLM_TOOL_FORCED */
	int max_tokens;                /* 0 = 4096 */
	double temperature;            /* < 0 = provider default; a model that refuses
	                                  one (llm_price.no_temperature, or a 400 naming
	                                  temperature) is sent none whatever this says */
	jv stop;                       /* array of strings or jv_null(); borrowed */
	bool stream;                   /* use SSE (progress, stall detection) */
	/* Streaming progress: called with each text fragment as it arrives
	 * (borrowed for the call), and with len 0 when the text so far is a
	 * whole block: the text block ended, a tool call starts or the answer
	 * ended (once a block, only after text).  May be NULL. */
	void (*on_text)(void *payload, const char *text, size_t len);
	void *payload;
	/* When > 0, a monotonic_ms() time by which the call ends, retries,
	 * their waits and a stream included (a caller's time limit: bytes that
	 * keep coming do not hold it open); it then fails LLM_ERR_TIMEOUT. */
	long long deadline_ms;
	/* on_text only shows progress: the caller uses the answer llm_call
	 * returns, never what on_text was given (the agent's live view), so
	 * a stream that fails mid-way with a transient fault is asked again
	 * whole even after text went to on_text, which then gets the new
	 * answer's text from its start (after an end of block, len 0). */
	bool progress_only;
	/* The caller sends this request's prefix again -- the same system
	 * prompt and tools, the conversation so far -- in its next call (an
	 * agent's loop): a provider with an explicit prompt cache (Anthropic)
	 * is asked to keep it, unless llm.prompt_cache is false
	 * (llm_options.no_prompt_cache).  Writing the cache costs more than
	 * input (1.25x), reading it a tenth: a one-off call leaves it false.
	 * Not part of the normalised request (cassettes, strict replay). */
	bool cache_prefix;
};

/* Zero a request: auto tool choice, default temperature, no stop
 * sequences; messages/tools are jv_null(). */
void llm_request_init(struct llm_request *req);
/* Free the jv members (messages, tools, stop).  NULL-safe. */
void llm_request_release(struct llm_request *req);
/* The request in normalised JSON (what strict replay compares):
 * {"system","messages","tools","tool_choice","max_tokens","temperature","stop"},
 * absent fields omitted.  Borrows req. */
jv llm_request_to_json(const struct llm_request *req);

/* Builders for messages (each returns a new object). */
jv llm_msg_user(const char *text);
jv llm_msg_tool_result(const char *tool_call_id, const char *content, bool is_error);
struct llm_response;
/* The assistant turn of a response, to append to the conversation. */
jv llm_msg_assistant(const struct llm_response *resp);

struct llm_tool_call {
	char *id;
	char *name;
	jv input;                      /* always an object */
	char *input_error;             /* the model's arguments were not a JSON object: why
					 * (malloc'd; input is then {}), for the agent to send
					 * back as the tool's error; NULL when they were */
};

struct llm_usage {
	long input_tokens;             /* uncached input */
	long output_tokens;
	long cache_read_tokens;
	long cache_write_tokens;
	/* The answer carried no usage figures, or impossible ones (negative,
	 * over LLM_USAGE_MAX): the figures above are estimated from the sizes
	 * of the request and the answer (tokens_estimate), so that a cost and
	 * its limits still hold.  Never for a cassette's answer. */
	bool estimated;
};

/* A call's tokens, the one figure every cost record carries: all four
 * kinds (what its cost prices). */
long llm_usage_tokens(const struct llm_usage *u);

/* More tokens than one call can use (the largest windows hold ~2M): a
 * figure past it is not believed. */
#define LLM_USAGE_MAX 100000000L

struct llm_response {
	char *text;                    /* never NULL ("" when none) */
	struct llm_tool_call *calls;
	size_t ncalls;
	enum llm_stop stop;            /* LLM_STOP_ERROR when the call failed (error), unless
	                                  its whole answer had come (then the answer's) */
	char *stop_detail;             /* refusal explanation, matched stop sequence; may be NULL */
	char *reasoning;               /* the answer's reasoning_content; NULL when none came */
	struct llm_usage usage;
	bool usage_seen;               /* (providers) the answer carried usage figures */
	bool usage_bad;                /* (providers) one of them was impossible */
	bool input_seen;               /* (providers) they named the input tokens */
	bool cost_known;
	double cost_usd;               /* valid when cost_known */
	char *model;                   /* as the server named it; may be NULL */
	char *request_id;              /* provider request id; may be NULL */
	double duration_ms;
	int retries;
	jv rate_limit;                 /* object (see top) or jv_null(); owned */
	enum llm_error error;          /* (llm_call) why it failed; LLM_OK on success */
};

void llm_response_init(struct llm_response *r);
void llm_response_release(struct llm_response *r);   /* NULL-safe; r reusable after init */
/* The normalised JSON form (see top).  Borrows r. */
jv llm_response_to_json(const struct llm_response *r);
/* Read the normalised form (cassettes).  Consumes j.  Missing fields take
 * defaults (stop_reason: tool_use when there are tool calls, else end_turn). */
int llm_response_from_json(struct llm_response *out, jv j);

/* A failed attempt of a call that is about to be made again (llm_options'
 * on_retry): what failed, and how long the wait before the next attempt. */
struct llm_retry {
	int attempt;                   /* the attempt about to be made: 2, 3, … */
	int max_attempts;              /* llm.max_retries + 1 */
	long status;                   /* the failed attempt's HTTP status; 0: no answer
	                                  (a connection failure, a timeout, a stream
	                                  that broke off) */
	double wait_s;                 /* the wait before the attempt */
	const char *reason;            /* what failed, in words: "rate limited",
	                                  "provider overloaded", … (static) */
};

/* Options of a client.  Strings are borrowed for the client's lifetime. */
struct llm_options {
	const char *provider;          /* NULL: $FORGE_PROVIDER, else "anthropic" with
	                                  ANTHROPIC_API_KEY, "openai" with OPENAI_API_KEY
	                                  or OPENAI_BASE_URL, else an error */
	const char *model;             /* NULL: $FORGE_MODEL, else the provider default */
	char model_key[96];            /* the setting that chose model, which the
	                                  errors about it name ("llm.phases.plan.model",
	                                  "llm.fast_model"; "" = llm.model) */
	char model_why[160];           /* where model came from (llm_choice's why);
	                                  "" = unsaid */
	const char *base_url;          /* NULL: ANTHROPIC_BASE_URL / OPENAI_BASE_URL, default
	                                  (FORGE_BASE_URL is llm.base_url: llm_choose) */
	const char *cassette;          /* replay: the file; NULL: $FORGE_CASSETTE */
	const char *cassette_mode;     /* "strict" or "sequential"; NULL: the file's, else sequential */
	const char *record;            /* append exchanges here; NULL: $FORGE_RECORD */
	const char *phase;             /* NULL: $FORGE_PHASE */
	bool fast;                     /* the phase's fast model: its calls count as
	                                  phase "PHASE-fast" (cassettes, records, the log) */
	int attempt;                   /* the phase's run (1, 2 on a bounce …); a set
	                                  $FORGE_ATTEMPT wins (tests pin it); 0: 1 */
	int max_retries;               /* < 0: 2 (the SDKs' default) */
	long timeout_ms;               /* whole request when not streamed; 0: 600000 */
	long connect_timeout_ms;       /* 0: 10000 */
	long stall_ms;                 /* no byte for this long = stalled; 0: 60000 */
	double max_retry_after;        /* honour retry-after up to this many seconds; 0: 60 */
	bool no_prompt_cache;          /* llm.prompt_cache false: no request asks the
	                                  provider's prompt cache (llm_request.cache_prefix) */
	jv pricing;                    /* overrides: {"model":{"input",…}}; jv_null() (consumed) */
	struct store *store;           /* llm_calls rows go here; NULL = no logging */
	const char *trace_id;          /* for llm_calls; may be NULL */
	/* Non-fatal notes (an unknown model's price); NULL = dropped. */
	void (*warn)(void *payload, const char *msg);
	void *warn_payload;
	/* Called as each llm_call() of the client begins, before anything is
	 * sent (or a cassette answers): the caller's step boundary.  It may
	 * end the process -- nothing of the call has begun, nothing is
	 * recorded -- as a phase whose output can no longer be written does
	 * (app/phase.h: phase_leave_if_output_gone).  NULL = none. */
	void (*before_call)(void *payload);
	void *before_call_payload;
	/* Called as a failed attempt's retry begins its wait (up to
	 * llm.retry_max_delay_s): the caller's to show; r borrowed for the
	 * call.  NULL = none. */
	void (*on_retry)(void *payload, const struct llm_retry *r);
	void *on_retry_payload;
	/* Tests: replace sleeping between retries (seconds) and randomness. */
	void (*sleep_fn)(void *payload, double seconds);
	double (*rand_fn)(void *payload);   /* uniform [0,1) */
	void *test_payload;
};

/* Zero options: everything from the environment and defaults. */
void llm_options_init(struct llm_options *opt);

struct config;

/*
 * The provider and models a program or phase uses: THE resolution, shared
 * by the phases, forge memory, forge llm, forge config --explain and forge
 * doctor.  cfg already holds the environment's FORGE_* variables and the
 * command line's model options as layers (config.h).
 *
 * provider    llm.phases.PHASE.provider; else llm.provider when a layer
 *             above the built-in defaults set it; else "replay" when a
 *             cassette is set; else the first of ANTHROPIC_API_KEY,
 *             FORGE_ANTHROPIC_KEY_FILE (anthropic), OPENAI_API_KEY,
 *             FORGE_OPENAI_KEY_FILE, OPENAI_BASE_URL (openai) that is set;
 *             else NULL (no provider: llm_client_new() says what to set).
 * model       llm.phases.PHASE.model; else llm.model when set above the
 *             defaults (and the phase did not switch to another provider);
 *             else the provider's default: the built-in llm.model for
 *             anthropic and replay, gpt-4o-mini for openai.
 * fast_model  llm.phases.PHASE.model; else llm.fast_model when set above
 *             the defaults (and the phase did not switch provider); else
 *             the built-in llm.fast_model when the model is the built-in
 *             default model (anthropic, replay); else the model itself -
 *             so --model M makes M the fast model too, and a model of
 *             another provider (Ollama's qwen2.5-coder) is never paired
 *             with claude-haiku.
 * base_url    llm.phases.PHASE.base_url; else llm.base_url unless the phase
 *             switched provider (NULL: the provider's variable or default).
 *             A base URL goes only to the provider named with it: it is
 *             not used (NULL) when the provider was only inferred from
 *             which key is set (no layer names llm.provider; a phase's
 *             own base URL goes with the phase's own provider) --
 *             base_url_unused, which the programs that call a model say
 *             once -- nor when the layer that sets it names another
 *             llm.provider than the one in effect.
 * *_why       where each came from, for people ("OPENAI_API_KEY is set",
 *             "llm.model (flags: command line)"); base_url_why also why a
 *             configured one is not used, and how to name its provider.
 * phase may be NULL (no per-phase overrides).  Strings are borrowed from
 * cfg or static.
 */
struct llm_choice {
	const char *provider, *model, *fast_model, *base_url, *cassette;
	char provider_why[160], model_why[160], fast_why[160], base_url_why[480];
	/* the setting to change for another model, fast model: "llm.model",
	 * "llm.fast_model" or "llm.phases.PHASE.model" */
	char model_key[96], fast_key[96];
	bool base_url_unused;          /* set, not used: the provider was only inferred */
};
void llm_choose(struct llm_choice *out, const struct config *cfg, const char *phase);

/*
 * Fill opt from the configuration (strings borrowed from cfg, which must
 * outlive the client): provider, model (the fast model when `fast`),
 * base_url and cassette from llm_choose(cfg, phase); timeouts, retries,
 * pricing, prompt_cache from llm.*.
 */
void llm_options_for(struct llm_options *opt, const struct config *cfg, const char *phase, bool fast);
/* The temperature phase's calls send: llm.phases.PHASE.temperature when
 * set, else llm.temperature (schemas/config.defaults.json); < 0 when it is
 * null (none is sent: the provider's default).  phase may be NULL. */
double llm_temperature(const struct config *cfg, const char *phase);
/* llm_options_for(opt, cfg, NULL, false). */
void llm_options_from_config(struct llm_options *opt, const struct config *cfg);

struct llm_client;

/* Resolve provider, model, base URL and key; nothing is sent yet.
 * Consumes opt->pricing.  Fails with LLM_ERR_CONFIG-type messages that say
 * what to do ("ANTHROPIC_API_KEY is not set"). */
int llm_client_new(struct llm_client **out, struct llm_options *opt);
void llm_client_free(struct llm_client *c);   /* NULL-safe */

const char *llm_client_provider(const struct llm_client *c);
const char *llm_client_model(const struct llm_client *c);
/* What an llm.called event says of resp, a call on c: its payload (the
 * provider, the model that answered, else the one asked, stop reason,
 * token counts, retries, request id; "error": llm_error_name() for a call
 * that failed but was billed, e.g. "interrupted") and its cost
 * {"tokens","usd"} (usd null when unknown).  Every paid call has one such
 * event: a run's cost, its cost after a crash and its phases' costs are
 * summed from them.
 * Borrow c and resp; new references. */
jv llm_called_payload(const struct llm_client *c, const struct llm_response *resp);
jv llm_called_cost(const struct llm_response *resp);
/* Whether what c's calls cost can be known: 0 when its model has a price
 * (llm.pricing, else schemas/pricing.json) or c spends nothing (the
 * replay provider's cassette); else -1 with a message saying how to give
 * it one.  A cost limit cannot hold over a model without a price: its
 * calls' cost is null. */
int llm_client_require_price(const struct llm_client *c);
/* The classification of the last failed call (LLM_OK after a success). */
enum llm_error llm_client_error(const struct llm_client *c);

/* How llm_client_failure() begins for the failures a retry cannot mend:
 * a program that reads a run's stored error back (forge status's next
 * step) tells them apart by these words. */
#define LLM_SAYS_REFUSED  "the provider refused the request"
#define LLM_SAYS_UNPAID   "the provider's account cannot pay for the request"
/* … and for those that pass with time (the provider answered, rate
 * limited, overloaded or failing, after every retry): the status and the
 * attempts follow, "the provider is overloaded (529) after 3 attempts". */
#define LLM_SAYS_RATE_LIMITED "the provider refused: rate limited"
#define LLM_SAYS_OVERLOADED   "the provider is overloaded"
#define LLM_SAYS_FAILED       "the provider failed"
/* Whether text (a run's or a phase's stored error; NULL: false) holds one
 * of those that pass with time: waiting, then resuming, is the way on. */
bool llm_says_passing(const char *text);

/*
 * Why c's last call failed, in words that say whose it is to mend: a
 * provider that answered and refused the request (a key, a model, a prompt
 * it will never take) is not one that could not be reached, nor is an
 * unpaid account, nor a cassette with no answer for this run's request.
 * Holds forge_last_error(), the call's own message, after those words
 * (LLM_SAYS_*).  Returns it, malloc'd (the caller frees it).
 */
char *llm_client_failure(const struct llm_client *c);

/*
 * One model call.  *out is initialised here and owned by the caller
 * (llm_response_release) also on failure.  Borrows req.  Retries transient
 * failures, llm.max_retries in all (out->retries), with the same backoff:
 * an HTTP error or a connection failure before the answer began, and a
 * stream that began and then failed transiently -- an error event saying
 * overloaded or a server error (not one that says the request is wrong),
 * the connection cut or stalled -- asked again whole, since a partial
 * answer is never used; but not once part of its answer was passed to
 * on_text, unless req->progress_only.  When the client has a store, one
 * llm_calls row is written per call (success or failure).  A call that
 * failed after the provider said its usage (a stream cut after
 * message_start, an error event mid-stream) is billed for it: out->usage,
 * cost_known and cost_usd hold its price (usage_seen), for the caller to
 * count; so is such an attempt that was asked again: its figures are
 * added to the call's.  So is a call that
 * llm_interrupt() stopped once its answer had begun, or once its request
 * had been sent whole (out->error LLM_ERR_INTERRUPTED): the provider bills
 * a cancelled stream's input, and what it generated, and answers a request
 * not streamed all the same; figures it had not sent (OpenAI's come last;
 * an answer not streamed sends none before its end; the output so far)
 * are estimated from the request and what arrived (usage.estimated).  A call during which llm_interrupt() came fails so
 * even when its answer was whole: its caller stops.
 */
int llm_call(struct llm_response *out, struct llm_client *c, const struct llm_request *req);

/*
 * Ctrl-C, from a signal handler (async-signal-safe): every model call of
 * the process under way ends at once as LLM_ERR_INTERRUPTED, billed for
 * what arrived (llm_call), and none is sent after it.  Returns whether a
 * call was under way (its provider being asked): then the handler may
 * return, and end the process once that call is recorded; else there is
 * nothing to record.
 */
bool llm_interrupt(void);
/* Whether llm_interrupt() was called. */
bool llm_interrupted(void);

/*
 * The context window of c's model in tokens, and where it came from
 * (*source, static: "table", "server" or "config"):
 *   table   llm.pricing (the client's pricing overrides) or schemas/pricing.json
 *           has the model with a context_window;
 *   server  an OpenAI-compatible server other than api.openai.com reports
 *           it: GET {base}/models, the model's max_model_len (vLLM) or
 *           context_length/context_window; else Ollama's POST {root}/api/show
 *           (root = base without /v1), num_ctx in its "parameters" — asked
 *           once per client, 2 s at most, no retries, failures ignored;
 *   config  otherwise `fallback` (llm.context_window).
 */
long llm_context_window(const char **source, struct llm_client *c, long fallback);

/* Embeddings.  provider "openai" (POST {base}/embeddings) or "ollama"
 * (POST {base}/api/embed, base without /v1).  *out is n × dim floats,
 * row-major, malloc'd (free(3) it). */
struct llm_embed_options {
	const char *provider;
	const char *base_url;          /* NULL: OPENAI_BASE_URL / https://api.openai.com/v1,
	                                  or http://127.0.0.1:11434 for ollama */
	const char *model;
	int max_retries;               /* < 0: 2 */
	long timeout_ms;               /* 0: 60000 */
};
int llm_embed(float **out, size_t *dim, const struct llm_embed_options *opt,
	      const char *const *texts, size_t n);

/* Pricing (schemas/pricing.json, USD per million tokens). */
struct llm_price {
	double input, output, cache_read, cache_write;
	long context_window;           /* tokens a request may hold; 0 = not in the table */
	bool no_temperature;           /* "temperature": false: the model refuses one (400) */
};
/* Find model's price: the override object (borrowed, may be jv_null()),
 * then the built-in table; a dated id ("claude-haiku-4-5-20251001",
 * "gpt-4o-2024-08-06") falls back to its undated name.  -1 (no message)
 * when unknown: the caller reports cost null, never a guess. */
int llm_price_find(struct llm_price *out, jv overrides, const char *model);
double llm_price_cost(const struct llm_price *p, const struct llm_usage *u);

/* Secrets (llm_secret_*, llm_redact*, llm_scrub_env, llm_key_load): core/secret.h. */

/* Write one llm_calls row (schemas/sql/002-llm-calls.sql).  st NULL = no-op.
 * request/response are the normalised JSON (borrowed; secrets scrubbed
 * before writing); response may be jv_null() for a failed call. */
struct llm_call_log {
	const char *trace_id, *phase, *provider, *model;
	int attempt, call;
	jv request, response;          /* borrowed */
	const struct llm_usage *usage; /* may be NULL */
	bool cost_known;
	double cost_usd, duration_ms;
	int retries;
	const char *error;             /* NULL on success */
	/* The texts of the request the caller logged last, reused for the
	 * parts of this one that are the same, and the tools it logged last,
	 * named rather than written again (llm_internal.h; a client's own,
	 * used by its thread only); NULL: none, every part written whole. */
	struct llm_log_memo *memo;
};
int llm_log_call(struct store *st, const struct llm_call_log *rec);

/*
 * A row's request.system, request.tools or request.messages may name
 * another row instead of holding its value: {"as_in": {trace_id, phase,
 * attempt, call}} (the system prompt or tools that row has; for messages,
 * with "then": [the messages that followed], its messages and those).  The row named is the newest with
 * those four values logged before the one naming it.  A chain of such rows
 * is at most LLM_LOG_CHAIN_MAX long: llm_log_call() writes the messages
 * whole again when it would be longer.
 */
enum { LLM_LOG_CHAIN_MAX = 1000 };

/*
 * The request of llm_calls row `id` whole, as the call sent it: its system
 * prompt, tools and messages that name another row (as_in, above) replaced by what that
 * row has, itself rebuilt, through at most LLM_LOG_CHAIN_MAX rows.
 * Secrets stay "[REDACTED]" as they were written.  *out is the caller's
 * (jv_null() unless 0).  0; 1 (no message) when no row has that id or it
 * has no request; -1 with forge_error() when a row it names is not there
 * (removed from the database: "… names trace T's PHASE call C (attempt A),
 * which is not in llm_calls"), the chain is longer, a request is not JSON,
 * or the database failed.
 */
int llm_log_request(jv *out, struct store *st, int64_t id);

/*
 * Trace's n-th logged model call (1 = its first, in the order they were
 * logged), its request whole (llm_log_request()): {"id", "ts", "phase",
 * "attempt", "call", "provider", "model", "request", "response",
 * "input_tokens", "output_tokens", "cache_read_tokens",
 * "cache_write_tokens", "cost_usd", "duration_ms", "retries", "error"}.
 * *out is the caller's (jv_null() unless 0).  0; 1 (no message) when the
 * trace has fewer than n calls, *count then how many it has; -1 with
 * forge_error() as llm_log_request().
 */
int llm_log_call_get(jv *out, long *count, struct store *st, const char *trace_id, long n);

/*
 * The model's replies in trace's llm_calls rows, the newest `limit` (<= 0:
 * all) oldest first: [{"id","ts","phase","model","text" (null when none),
 * "tool_calls" ([{"id","name","input"}] or null),"cost_usd","error"}].
 * *out is the caller's.  0, or -1 with forge_error() (the database).
 */
int llm_log_replies(jv *out, struct store *st, const char *trace_id, int limit);

#endif
