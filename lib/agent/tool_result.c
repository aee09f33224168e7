/*
 * tool_result.c - a tool's result: success, failure with a kind, the JSON
 * form events and the model see, and NUL-safe text.  Below both tools.c
 * (the registry and the non-file tools) and tool_files.c (the file tools),
 * which use it and not each other's helpers.  See tools.h.
 */
#include "agent/tools.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "os/sandbox.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *tool_kind_name(enum tool_kind k)
{
	static const char *const names[] = {
		"ok", "input", "failed", "denied", "internal", "ask", "finish", "ask_human",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}


void tool_ok(struct tool_result *out, char *output, jv data)
{
	jv_free(out->data);
	free(out->output);
	out->ok = true;
	out->kind = TOOL_OK;
	out->output = output;
	out->data = data;
}

void tool_fail(struct tool_result *out, enum tool_kind kind, jv data, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	jv_free(out->data);
	free(out->error);
	out->ok = false;
	out->kind = kind;
	out->data = data;
	out->error = buf_detach(&b, NULL);
}

enum tool_kind tool_kind_of_sandbox(int code)
{
	switch (code) {
	case SANDBOX_EDENIED: return TOOL_ERR_DENIED;
	case SANDBOX_ENOENT:
	case SANDBOX_EINVAL: return TOOL_ERR_INPUT;
	}
	return TOOL_ERR_INTERNAL;
}

void tool_result_release(struct tool_result *r)
{
	if (!r)
		return;
	free(r->output);
	free(r->error);
	jv_free(r->data);
	r->output = r->error = NULL;
	r->data = jv_null();
}

jv tool_result_json(const struct tool_result *r)
{
	jv j = json_set(jv_object(), "ok", jv_bool(r->ok));
	j = json_set(j, "kind", jv_string(tool_kind_name(r->kind)));
	j = json_set(j, "retryable", jv_bool(r->retryable));
	if (r->error) {
		char *e = llm_redact(xstrdup(r->error));
		size_t l = strlen(e);
		if (l > 2000)
			e[2000] = '\0';
		j = json_set(j, "error", jv_string(e));
		free(e);
	}
	j = json_set(j, "output_bytes", jv_number(r->output ? (double)strlen(r->output) : 0));
	j = json_set(j, "data", jv_copy(r->data));
	return j;
}

void tool_text_add(struct buf *b, const char *s, size_t n)
{
	const char *end = s + n, *nul;
	/* (the escapes may not make the text longer than the bytes were by
	 * more than this: the caller's cap bounds what the model reads) */
	size_t room = b->len + n + 256;

	while ((nul = memchr(s, '\0', (size_t)(end - s))) != NULL) {
		const char *run = nul;

		while (run < end && !*run)
			run++;
		if (b->len + (size_t)(nul - s) + 32 > room) {
			buf_addf(b, "[... %zu more bytes of binary output not shown]", (size_t)(end - s));
			return;
		}
		buf_add(b, s, (size_t)(nul - s));
		buf_adds(b, "\\u0000");
		if (run - nul > 1)
			buf_addf(b, "[x%zu]", (size_t)(run - nul));
		s = run;
	}
	buf_add(b, s, (size_t)(end - s));
}
