/*
 * llm_internal.h - what the files of the llm module share (llm.c,
 * llm_anthropic.c, llm_openai.c, llm_replay.c, llm_stream.c ...).  Not for
 * other modules: use llm.h.
 */
#ifndef FORGE_LLM_INTERNAL_H
#define FORGE_LLM_INTERNAL_H

#include "core/buf.h"
#include "llm/llm.h"

/* A request ready for the wire.  headers hold the key: never log them. */
struct llm_wire {
	char *url;
	char *headers[8];              /* "Name: value", NULL-terminated */
	char *body;
	size_t body_len;
};
void llm_wire_release(struct llm_wire *w);

/* A provider error decoded from a non-2xx body. */
struct llm_fault {
	enum llm_error kind;
	char *type;                    /* provider's error type/code, may be NULL */
	char *message;                 /* provider's message, may be NULL */
};
void llm_fault_release(struct llm_fault *f);

/* Assembles a streamed answer, whatever the provider. */
struct llm_stream_block {
	long index;                    /* provider's block/tool-call index */
	bool is_tool;
	char *id, *name;
	struct buf args;               /* tool input JSON text */
	bool args_from_start;          /* args came whole with the block's start (Anthropic
	                                  content_block_start): a delta replaces them */
};
struct llm_stream {
	struct llm_response *resp;     /* filled as events arrive */
	struct buf text;
	struct buf reasoning;          /* reasoning_content deltas (OpenAI-compatible) */
	bool reasoning_seen;
	struct llm_stream_block *blocks;
	size_t nblocks;
	bool done;                     /* message_stop / [DONE] seen */
	bool finished;                 /* a finish_reason / stop_reason seen: a clean end of
	                                  the body completes it */
	bool failed;                   /* a mid-stream error event */
	bool text_open;                /* text came since the last llm_stream_text_end() */
	struct llm_fault fault;
	void (*on_text)(void *payload, const char *text, size_t len);
	void *payload;
};
void llm_stream_init(struct llm_stream *s, struct llm_response *resp);
void llm_stream_release(struct llm_stream *s);
/* Append text (shown through on_text).  -1 with a message when the
 * answer's text would pass the stream's cap (64 MiB): an answer is never
 * kept cut. */
int llm_stream_text(struct llm_stream *s, const char *text, size_t len);
/* Append to one of the stream's buffers (a tool's args, the reasoning):
 * -1 with a message past the cap. */
int llm_stream_add(struct buf *b, const char *text, size_t len);
/* The text so far is a whole block (it ended, a tool call starts, or the
 * answer ended): on_text(payload, "", 0) once, when text came since. */
void llm_stream_text_end(struct llm_stream *s);
/* The block at index (the latest one when several share it), created
 * when there is none and create is set; else NULL. */
struct llm_stream_block *llm_stream_block(struct llm_stream *s, long index, bool create);
/* A new block at index, after every other (one more call at an index in use). */
struct llm_stream_block *llm_stream_block_add(struct llm_stream *s, long index);
/* Move the text and tool calls into resp (parsing each tool's JSON). */
int llm_stream_finish(struct llm_stream *s);

/*
 * A part of a request body a conversation sends again every turn (the
 * tools with their JSON schemas, the system prompt), kept serialised: an
 * agent's ~12 KB of tool schemas were dumped anew with every call (the
 * five calls of a forge-implement session: 2.9M of its 33.4M
 * instructions in build()).  The text is reused while the part is made
 * from the same jv (jv_identical: the part holds a reference, so a jv
 * changed since is a new one, never one at the same address) with the
 * same variant and str (what else shapes it: the tool choice, the prompt
 * cache marks, the system prompt's text); else made again.  A zeroed
 * part is empty.
 */
struct llm_part {
	jv src;                        /* owned while text is set */
	unsigned variant;
	char *str;                     /* may be NULL */
	char *text;                    /* members of an object, without braces */
	size_t len;
};
/*
 * The conversation's turns a client sent last, kept serialised (Anthropic:
 * llm_anthropic.c): an agent's next request is the same messages (the
 * same jv, jv_identical) and a few more, and dumping them all every turn
 * made a session of N turns serialise O(N^2) bytes.  A point where the
 * conversion of the messages into turns starts afresh (no tool results
 * pending: messages [0, at) made `turns` turns, whose texts, comma-joined,
 * end at text.buf + len) lets the next request reuse every turn before
 * it while its messages up to there are the very ones.  Only turns no
 * prompt cache mark was on are kept.  A zeroed struct is empty.
 */
struct llm_turn_mark {
	size_t at, turns, len;
};
struct llm_turns {
	bool held;                     /* msgs is set (owned) */
	jv msgs;                       /* the messages (normalised) sent last */
	struct buf text;               /* the kept turns' texts, comma-joined */
	struct llm_turn_mark *marks;   /* restart points, `at` ascending */
	size_t nmarks, cap;
};
/* The parts a client keeps for its provider's build(). */
struct llm_parts {
	struct llm_part system, tools;
	struct llm_turns turns;
};
void llm_parts_release(struct llm_parts *ps);   /* NULL-safe; ps reusable, empty */
/* make(src, str, variant): the object whose members are the part.
 * Consumes src. */
typedef jv (*llm_part_fn)(jv src, const char *str, unsigned variant);
/* Append p's members to b (an object's text being written: a comma first
 * unless b ends with '{'), made by make() when src (borrowed), variant or
 * str differ from what p holds.  p NULL: made, not kept. */
void llm_part_add(struct buf *b, struct llm_part *p, jv src, unsigned variant, const char *str,
		  llm_part_fn make);
/* Append obj's members to b as llm_part_add() does.  Consumes obj. */
void llm_members_add(struct buf *b, jv obj);

/*
 * What llm_log_call() keeps of the last request a client logged, to write
 * the next one's row: an agent's next request is the same conversation
 * (the same jv messages) and a few messages more, with the same system
 * prompt, and dumping them whole every turn cost the log as much as the
 * wire.  The memo holds the messages' array, so a message identical
 * (jv_identical) to one of them is the very one, unchanged.  A zeroed memo
 * is empty.  Only the client's thread uses it: libjq's reference counts
 * are not atomic, so no jv of it is shared with another client's.
 *
 * It keeps the tools too: an agent sends the same tools (the same jv) with
 * every call, about 12 KB of schemas that were 80% of each row, and a
 * request whose tools are that very object is logged with {"as_in":
 * {trace_id, phase, attempt, call}} in their place, the row that has them.
 *
 * And the row whose messages (rebuilt: llm_log_request()) are those msgs
 * holds: a request whose messages begin with all of them is logged with
 * {"as_in": that row, "then": [the messages after them]}, so a session of
 * N turns writes O(N) bytes of messages, not O(N^2).  Set only once the
 * row is written; a row refused, or one no trace names, clears it.
 *
 * And the row that has the system prompt system holds whole (about 3 KB,
 * the same every call): a request whose system prompt equals it is logged
 * with {"as_in": that row} in its place.  Likewise set only once that row
 * is written.
 */
struct llm_log_memo {
	bool held;                     /* msgs is set (owned) */
	jv msgs;
	size_t kept, cap;
	size_t *ends;                  /* message i's text ends at text.buf + ends[i] */
	struct buf text;               /* the messages' texts, comma-joined, unscrubbed */
	jv system;                     /* owned while system_text is set */
	char *system_text;
	bool tools_held;               /* tools and tools_where are set (owned) */
	jv tools;                      /* the tools of the last row logged with them */
	jv tools_where;                /* that row: {trace_id, phase, attempt, call} */
	const struct store *tools_store;   /* the database it is in */
	bool msgs_where_held;          /* msgs_where is set (owned) */
	jv msgs_where;                 /* the row whose messages are msgs: {trace_id, phase, attempt, call} */
	const struct store *msgs_store;    /* the database it is in */
	int msgs_depth;                /* as_in rows from it to one with its messages whole */
	bool system_where_held;        /* system_where is set (owned) */
	jv system_where;               /* the row with system whole: {trace_id, phase, attempt, call} */
	const struct store *system_store;  /* the database it is in */
};
void llm_log_memo_release(struct llm_log_memo *m);   /* NULL-safe; m reusable, empty */

struct llm_provider {
	const char *name;
	const char *default_model;
	const char *default_base_url;
	const char *key_env;
	const char *base_url_env;
	/* Build the wire request for req.  flags: provider flags (below).
	 * parts: the client's, reused from its last build (NULL: none). */
	int (*build)(struct llm_wire *out, struct llm_parts *parts, const char *base_url,
		     const char *key, const char *model, const struct llm_request *req,
		     unsigned flags);
	/* Parse a complete 2xx body. */
	int (*parse)(struct llm_response *out, const char *body, size_t len);
	/* One SSE event; 0 to continue, -1 on an unparseable event. */
	int (*event)(struct llm_stream *s, const char *event, const char *data, size_t len);
	/* Decode an error body (body may be empty or not JSON). */
	void (*fault)(struct llm_fault *out, long status, const char *body, size_t len);
};
#define LLM_OPENAI_MAX_TOKENS 1u   /* send max_tokens, not max_completion_tokens */
#define LLM_PROMPT_CACHE 2u        /* mark a request's prefix for the prompt cache when
				      it asks (llm_request.cache_prefix; Anthropic) */
/* Anthropic takes at most 4 cache_control breakpoints in a request. */
#define LLM_CACHE_BREAKPOINTS_MAX 4
/* The flags a client of the OpenAI wire starts with for base_url: the
 * output limit as max_completion_tokens to api.openai.com (its reasoning
 * models refuse max_tokens), as max_tokens to every other server (Ollama,
 * vLLM, llama.cpp, OpenRouter read it; Ollama ignores the newer name). */
unsigned llm_openai_flags(const char *base_url);

extern const struct llm_provider llm_anthropic;
extern const struct llm_provider llm_openai;

/* Helpers shared by the providers. */
void llm_response_add_call(struct llm_response *r, const char *id, const char *name, jv input);
/* Give each call of r that came without an id, or with the id of an
 * earlier call of r, one of its own, "call_forge_TURN_N" (TURN: the answer's
 * turn, 1 + the assistant messages in messages; N: the call's place, from
 * 1), so that each tool result names the one call it answers, in the
 * assistant message sent back, the tool results and the events alike.
 * Some OpenAI-compatible servers (local ones, proxies) send calls without
 * an id or repeat one; the APIs refuse results they cannot match.  A
 * server's ids are kept otherwise.  Borrows messages (the request's). */
void llm_response_name_calls(struct llm_response *r, jv messages);
/* A call whose arguments did not parse (llm_parse_input failed: its message
 * is taken as input_error), kept so that the model hears why. */
void llm_response_add_bad_call(struct llm_response *r, const char *id, const char *name);
int llm_error_parse(enum llm_error *out, const char *name);   /* -1 when unknown */
enum llm_error llm_fault_from_status(long status);
char *llm_strdup_or_null(const char *s);
/* Usage figure key of u (an answer's usage object) into *out when it is
 * there: a number in [0, LLM_USAGE_MAX] sets r->usage_seen, anything else
 * r->usage_bad (and leaves *out).  Borrows u. */
void llm_usage_take(long *out, struct llm_response *r, jv u, const char *key);
/* A jv string's value or NULL when v is not a string.  Borrows v. */
const char *llm_jstr(jv v);
/* Build "Name: value" (malloc'd). */
char *llm_header(const char *name, const char *value);
/* Join base URL and path, without doubling a slash, nor the path's first
 * part when the base ends with it ("…/v1" + "/v1/messages"). */
char *llm_url(const char *base, const char *path);
/* True when a Content-Type names text/event-stream, whatever its parameters
 * or case ("text/event-stream; charset=utf-8" included). */
bool llm_is_event_stream(const char *content_type);
/* Parse a tool input JSON text into an object ({} for "" ); -1 on bad JSON. */
int llm_parse_input(jv *out, const char *text, size_t len);

/* Cassettes (llm_replay.c). */
struct llm_cassette;
/* Who is calling, as cassettes, records and the log name it: the phase
 * (opt->phase or $FORGE_PHASE; "NAME-fast" for the fast model; malloc'd,
 * NULL when none) and its attempt ($FORGE_ATTEMPT when set, else
 * opt->attempt, else 1). */
char *llm_replay_phase(const struct llm_options *opt);
int llm_replay_attempt(const struct llm_options *opt);
int llm_cassette_open(struct llm_cassette **out, const char *path, const char *mode);
void llm_cassette_free(struct llm_cassette *c);
/* Answer call k of (phase, attempt).  On a replayed error entry returns -1
 * with *kind set. */
int llm_cassette_answer(struct llm_response *out, enum llm_error *kind, struct llm_cassette *c,
			const char *phase, int attempt, int k, jv request);
/* Append one exchange as a JSON line (consumes request and response). */
int llm_cassette_record(const char *path, const char *phase, int attempt, int k,
			jv request, jv response);
/* The path of the first difference between a and b ("" when equal), prefixed with
 * prefix; malloc'd.  Borrows both. */
char *llm_json_diff(jv a, jv b, const char *prefix);

#endif
