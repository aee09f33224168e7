/*
 * schema_text.c - walking a schema's JSON text in place, for the compiler
 * (schema_compile.c): the members of one object and the items of one array,
 * without building a jv of the document.
 *
 * The text is checked once (json_scan_depth: strict JSON, nested at most
 * SCHEMA_TEXT_MAX_DEPTH deep) and indexed once: for
 * every '{' and '[' the offset past its partner, so stepping over a nested
 * subschema costs nothing however large it is.
 */
#include "data/schema_internal.h"
#include "core/forge.h"
#include "core/jsonscan.h"

#include <stdlib.h>
#include <string.h>

static size_t skip_ws(const struct schema_text *t, size_t p)
{
	while (p < t->len && (t->text[p] == ' ' || t->text[p] == '\n' || t->text[p] == '\r' ||
			      t->text[p] == '\t'))
		p++;
	return p;
}

/* Whether text nests deeper than max in json_scan's count, read loosely
 * (brackets in strings skipped, pairs not matched): only to say why
 * json_scan refused it. */
static bool nests_deeper(const char *text, size_t len, int max)
{
	int depth = 0;

	for (size_t p = 0; p < len; p++) {
		char ch = text[p];

		if (ch == '"') {
			for (p++; p < len && text[p] != '"'; p++)
				p += text[p] == '\\';
		} else if (ch == '{' || ch == '[') {
			depth += ch == '{' ? 2 : 1;
			if (depth > max)
				return true;
		} else if (ch == '}' || ch == ']') {
			depth -= ch == '}' ? 2 : 1;
		}
	}
	return false;
}

int schema_text_index(struct schema_text *t, const char *text, size_t len)
{
	uint32_t open[SCHEMA_TEXT_MAX_DEPTH + 1];
	size_t depth = 0;
	bool esc;

	if (len >= UINT32_MAX)
		return forge_error("a schema must be one JSON text");
	if (json_scan_depth(text, len, SCHEMA_TEXT_MAX_DEPTH) == JSON_SCAN_INVALID)
		return nests_deeper(text, len, SCHEMA_TEXT_MAX_DEPTH) ?
		       forge_error("#: schema nested deeper than %d (an object counts 2, an array 1)",
				   SCHEMA_TEXT_MAX_DEPTH) :
		       forge_error("a schema must be one JSON text");
	t->text = text;
	t->len = len;
	t->close = xmalloc((len ? len : 1) * sizeof *t->close);
	/* json_scan accepted it: strings are well formed, brackets balance and
	 * nest at most SCHEMA_TEXT_MAX_DEPTH deep. */
	for (size_t p = 0; p < len; p++) {
		char ch = text[p];

		if (ch == '"')
			p = (size_t)(json_scan_string(text + p, text + len, &esc) - text) - 1;
		else if (ch == '{' || ch == '[')
			open[depth++] = (uint32_t)p;
		else if (ch == '}' || ch == ']')
			t->close[open[--depth]] = (uint32_t)(p + 1);
	}
	return 0;
}

void schema_text_release(struct schema_text *t)
{
	free(t->close);
	t->close = NULL;
}

size_t schema_text_start(const struct schema_text *t)
{
	return skip_ws(t, 0);
}

/* Past the value that starts at p. */
static size_t value_end(const struct schema_text *t, size_t p)
{
	const char *s = t->text;
	bool esc;

	switch (s[p]) {
	case '{':
	case '[':
		return t->close[p];
	case '"':
		return (size_t)(json_scan_string(s + p, s + t->len, &esc) - s);
	default:
		while (p < t->len && !strchr(",}] \t\r\n", s[p]))
			p++;
		return p;
	}
}

void schema_text_iter(struct text_iter *it, const struct schema_text *t, size_t container)
{
	it->t = t;
	it->p = container + 1;
	it->end = t->close[container] - 1;
	it->object = t->text[container] == '{';
}

bool schema_text_next(struct text_iter *it, struct buf *key, size_t *off, size_t *len)
{
	const struct schema_text *t = it->t;
	size_t p = skip_ws(t, it->p);
	bool esc;

	if (t->text[p] == ',')
		p = skip_ws(t, p + 1);
	if (p >= it->end)
		return false;
	if (it->object) {
		const char *q = json_scan_string(t->text + p, t->text + t->len, &esc);
		size_t body = p + 1, blen = (size_t)(q - t->text) - 1 - body;

		if (key) {
			buf_reset(key);
			if (esc)
				json_scan_unescape(key, t->text + body, blen);
			else
				buf_add(key, t->text + body, blen);
		}
		p = skip_ws(t, (size_t)(q - t->text));
		p = skip_ws(t, p + 1);    /* past ':' */
	}
	*off = p;
	it->p = value_end(t, p);
	*len = it->p - p;
	return true;
}

size_t schema_text_count(const struct schema_text *t, size_t container)
{
	struct text_iter it;
	size_t n = 0, off, len;

	schema_text_iter(&it, t, container);
	while (schema_text_next(&it, NULL, &off, &len))
		n++;
	return n;
}
