/*
 * sse.h - an incremental parser for Server-Sent Events (text/event-stream),
 * as the WHATWG spec frames them and as LLM providers send them.
 *
 * Feed it bytes in whatever pieces the network delivers (a UTF-8 character
 * or a line may be split anywhere); it calls back once per complete event,
 * that is when a blank line ends a block that had at least one `data:`
 * field.  Lines may end in "\n", "\r\n" or "\r".  Comment lines (starting
 * with ':', e.g. OpenRouter's ": OPENROUTER PROCESSING") are skipped;
 * `id:` and `retry:` are ignored; several `data:` lines are joined with
 * '\n'; one space after the colon is removed.
 *
 * The callback gets the event name ("message" when the block had no
 * `event:` line) and the data, both NUL-terminated and borrowed for the
 * call.  It returns 0 to go on or non-zero to stop: sse_feed() then returns
 * that value at once.
 */
#ifndef FORGE_SSE_H
#define FORGE_SSE_H

#include <stddef.h>
#include "core/buf.h"

typedef int (*sse_event_fn)(void *payload, const char *event, const char *data, size_t len);

struct sse_parser {
	struct buf line;     /* the line being read */
	struct buf event;    /* the current block's event name */
	struct buf data;     /* the current block's data */
	int have_data;       /* a data field was seen in this block */
	int last_cr;         /* the previous byte was '\r' (a "\r\n" pair) */
	sse_event_fn fn;
	void *payload;
	size_t events;       /* events dispatched so far */
};

/* Set up; `max` caps the size of one line and of one event's data (0 =
 * unlimited), so a hostile stream cannot grow memory without bound. */
void sse_init(struct sse_parser *p, size_t max, sse_event_fn fn, void *payload);
void sse_release(struct sse_parser *p);

/* Parse len bytes.  0, the callback's non-zero value, or -1 with a message
 * when a line or event exceeds `max`. */
int sse_feed(struct sse_parser *p, const char *data, size_t len);

/* End of stream: an unterminated last line is processed and an event still
 * pending (no blank line after it) is dispatched, as servers that close
 * the connection right after the last `data:` line expect. */
int sse_finish(struct sse_parser *p);

#endif
