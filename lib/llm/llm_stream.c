/*
 * llm_stream.c - assembling a streamed answer (text and tool-call deltas)
 * into an llm_response, whatever the provider.
 */
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "llm/llm_internal.h"


#define STREAM_MAX (64u << 20)

void llm_stream_init(struct llm_stream *s, struct llm_response *resp)
{
	memset(s, 0, sizeof(*s));
	s->resp = resp;
	buf_init(&s->text, STREAM_MAX);
	buf_init(&s->reasoning, STREAM_MAX);
}

void llm_stream_release(struct llm_stream *s)
{
	if (!s)
		return;
	buf_release(&s->text);
	buf_release(&s->reasoning);
	for (size_t i = 0; i < s->nblocks; i++) {
		free(s->blocks[i].id);
		free(s->blocks[i].name);
		buf_release(&s->blocks[i].args);
	}
	free(s->blocks);
	s->blocks = NULL;
	s->nblocks = 0;
	llm_fault_release(&s->fault);
}

int llm_stream_add(struct buf *b, const char *text, size_t len)
{
	if (buf_add(b, text, len) < 0)
		return forge_error("the streamed answer is larger than %u MiB", STREAM_MAX >> 20);
	return 0;
}

int llm_stream_text(struct llm_stream *s, const char *text, size_t len)
{
	if (!len)
		return 0;
	if (llm_stream_add(&s->text, text, len) < 0)
		return -1;
	s->text_open = true;
	if (s->on_text)
		s->on_text(s->payload, text, len);
	return 0;
}

void llm_stream_text_end(struct llm_stream *s)
{
	if (!s->text_open)
		return;
	s->text_open = false;
	if (s->on_text)
		s->on_text(s->payload, "", 0);
}

struct llm_stream_block *llm_stream_block(struct llm_stream *s, long index, bool create)
{
	for (size_t i = s->nblocks; i > 0; i--)
		if (s->blocks[i - 1].index == index)
			return &s->blocks[i - 1];
	return create ? llm_stream_block_add(s, index) : NULL;
}

struct llm_stream_block *llm_stream_block_add(struct llm_stream *s, long index)
{
	struct llm_stream_block *b;

	s->blocks = xrealloc(s->blocks, (s->nblocks + 1) * sizeof(*s->blocks));
	b = &s->blocks[s->nblocks++];
	memset(b, 0, sizeof(*b));
	b->index = index;
	buf_init(&b->args, STREAM_MAX);
	return b;
}

int llm_stream_finish(struct llm_stream *s)
{
	struct llm_response *r = s->resp;

	llm_stream_text_end(s);
	free(r->text);
	r->text = buf_detach(&s->text, NULL);
	if (s->reasoning_seen) {
		free(r->reasoning);
		r->reasoning = buf_detach(&s->reasoning, NULL);
	}
	for (size_t i = 0; i < s->nblocks; i++) {
		struct llm_stream_block *b = &s->blocks[i];
		jv input;

		if (!b->is_tool)
			continue;
		if (llm_parse_input(&input, b->args.buf, b->args.len) < 0)
			llm_response_add_bad_call(r, b->id, b->name);	/* the model hears why */
		else
			llm_response_add_call(r, b->id, b->name, input);
	}
	return 0;
}
