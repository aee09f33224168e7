/*
 * llm_part.c - request bodies written in parts, the parts a conversation
 * sends every turn kept serialised (llm_internal.h: struct llm_part).
 *
 * A body is written member by member, as json_dumps() would write the
 * whole object: compact JSON has no context, so an object's text is its
 * members' texts joined by commas, in the order they were set.
 */
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "llm/llm_internal.h"

static void part_release(struct llm_part *p)
{
	if (p->text)
		jv_free(p->src);
	free(p->str);
	free(p->text);
	memset(p, 0, sizeof(*p));
}

void llm_parts_release(struct llm_parts *ps)
{
	if (!ps)
		return;
	part_release(&ps->system);
	part_release(&ps->tools);
	if (ps->turns.held)
		jv_free(ps->turns.msgs);
	buf_release(&ps->turns.text);
	free(ps->turns.marks);
	memset(&ps->turns, 0, sizeof(ps->turns));
}

/* Append members (the text of an object without its braces, len bytes). */
static void add_text(struct buf *b, const char *members, size_t len)
{
	if (!len)
		return;
	if (b->len && b->buf[b->len - 1] != '{')
		buf_addch(b, ',');
	buf_add(b, members, len);
}

void llm_members_add(struct buf *b, jv obj)
{
	size_t len;
	char *text = json_dumps(obj, false);

	len = strlen(text);
	if (len >= 2)
		add_text(b, text + 1, len - 2);
	free(text);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool holds(const struct llm_part *p, jv src, unsigned variant, const char *str)
{
	return p->text && p->variant == variant && same_str(p->str, str) &&
	       jv_identical(jv_copy(p->src), jv_copy(src));
}

void llm_part_add(struct buf *b, struct llm_part *p, jv src, unsigned variant, const char *str,
		  llm_part_fn make)
{
	struct llm_part tmp = { 0 };
	char *text;
	size_t len;

	if (!p)
		p = &tmp;
	if (!holds(p, src, variant, str)) {
		part_release(p);
		text = json_dumps(make(jv_copy(src), str, variant), false);
		len = strlen(text);
		/* the members, without the braces */
		memmove(text, text + 1, len);
		p->len = len >= 2 ? len - 2 : 0;
		text[p->len] = '\0';
		p->text = text;
		p->src = jv_copy(src);
		p->variant = variant;
		p->str = str ? xstrdup(str) : NULL;
	}
	add_text(b, p->text, p->len);
	part_release(&tmp);
}
