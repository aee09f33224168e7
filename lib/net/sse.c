/*
 * sse.c - Server-Sent Events framing (see sse.h).
 */
#include "net/sse.h"

#include <string.h>

#include "core/forge.h"

void sse_init(struct sse_parser *p, size_t max, sse_event_fn fn, void *payload)
{
	buf_init(&p->line, max);
	buf_init(&p->event, max);
	buf_init(&p->data, max);
	p->have_data = 0;
	p->last_cr = 0;
	p->fn = fn;
	p->payload = payload;
	p->events = 0;
}

void sse_release(struct sse_parser *p)
{
	if (!p)
		return;
	buf_release(&p->line);
	buf_release(&p->event);
	buf_release(&p->data);
}

static int dispatch(struct sse_parser *p)
{
	int rc = 0;

	if (p->have_data) {
		p->events++;
		rc = p->fn(p->payload, p->event.len ? p->event.buf : "message",
			   p->data.buf, p->data.len);
	}
	buf_reset(&p->event);
	buf_reset(&p->data);
	p->have_data = 0;
	return rc;
}

static int field(struct sse_parser *p, const char *name, size_t nlen, const char *val, size_t vlen)
{
	if (nlen == 4 && !memcmp(name, "data", 4)) {
		if (p->have_data && buf_addch(&p->data, '\n') < 0)
			return forge_error("server-sent event too large");
		if (buf_add(&p->data, val, vlen) < 0)
			return forge_error("server-sent event too large");
		p->have_data = 1;
	} else if (nlen == 5 && !memcmp(name, "event", 5)) {
		buf_reset(&p->event);
		if (buf_add(&p->event, val, vlen) < 0)
			return forge_error("server-sent event name too long");
	}
	return 0;   /* id, retry and unknown fields are ignored */
}

static int line(struct sse_parser *p, const char *s, size_t len)
{
	const char *colon;
	const char *val = s + len;
	size_t nlen = len;

	if (len == 0)
		return dispatch(p);
	if (s[0] == ':')
		return 0;
	colon = memchr(s, ':', len);
	if (colon) {
		nlen = (size_t)(colon - s);
		val = colon + 1;
		if (val < s + len && *val == ' ')
			val++;
	}
	return field(p, s, nlen, val, (size_t)(s + len - val));
}

static int end_line(struct sse_parser *p)
{
	int rc = line(p, p->line.buf, p->line.len);

	buf_reset(&p->line);
	return rc;
}

int sse_feed(struct sse_parser *p, const char *data, size_t len)
{
	size_t i = 0;

	while (i < len) {
		char c = data[i];
		int rc;

		if (c == '\n' && p->last_cr) {
			p->last_cr = 0;
			i++;
			continue;
		}
		p->last_cr = (c == '\r');
		if (c == '\n' || c == '\r') {
			if ((rc = end_line(p)) != 0)
				return rc;
			i++;
			continue;
		}
		/* copy the run up to the next line end in one go */
		size_t j = i;
		while (j < len && data[j] != '\n' && data[j] != '\r')
			j++;
		if (buf_add(&p->line, data + i, j - i) < 0)
			return forge_error("server-sent event line too long");
		i = j;
	}
	return 0;
}

int sse_finish(struct sse_parser *p)
{
	int rc;

	if (p->line.len && (rc = end_line(p)) != 0)
		return rc;
	return dispatch(p);
}
