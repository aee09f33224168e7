/*
 * fuzz_jsonscan.c - libFuzzer target: the strict JSON scanner
 * (lib/core/jsonscan.c) against libjq.  Whatever json_scan() takes,
 * json_parse() must take too, as the same kind of value; whatever
 * json_event_scan() reads, its fields must be what libjq reads.  A
 * disagreement aborts.  The input is one line of a stream.
 */
#include "core/json.h"
#include "core/jsonscan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const jv_kind kinds[] = {
	[JSON_SCAN_NULL] = JV_KIND_NULL, [JSON_SCAN_FALSE] = JV_KIND_FALSE, [JSON_SCAN_TRUE] = JV_KIND_TRUE,
	[JSON_SCAN_NUMBER] = JV_KIND_NUMBER, [JSON_SCAN_STRING] = JV_KIND_STRING,
	[JSON_SCAN_ARRAY] = JV_KIND_ARRAY, [JSON_SCAN_OBJECT] = JV_KIND_OBJECT,
};

/* The field key of v is the n bytes at s (s NULL: not a string there). */
static void same_str(jv v, const char *key, const char *s, size_t n)
{
	const char *want = json_get_str(v, key);

	if (!s ? want != NULL : (!want || strlen(want) != n || memcmp(want, s, n) != 0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	enum json_scan_kind kind = json_scan(text, size, NULL, NULL);
	struct json_event ev;

	if (kind == JSON_SCAN_INVALID && !json_event_scan(&ev, text, size))
		return 0;
	if (kind == JSON_SCAN_INVALID || memchr(text, '\0', size))
		abort();	/* the event scan took what the scan refuses */
	jv v = json_parse(text, size);
	if (!jv_is_valid(v) || jv_get_kind(v) != kinds[kind])
		abort();
	if (kind == JSON_SCAN_OBJECT && json_event_scan(&ev, text, size)) {
		same_str(v, "kind", ev.kind, ev.kind_len);
		same_str(v, "id", ev.id, ev.id_len);
		same_str(v, "trace_id", ev.trace_id, ev.trace_id_len);
		same_str(v, "ts", ev.ts, ev.ts_len);
		same_str(v, "source", ev.source, ev.source_len);
		same_str(v, "type", ev.type, ev.type_len);
		jv d = json_get(v, "duration_ms");
		if (ev.has_duration != json_has(v, "duration_ms") ||
		    (ev.has_duration && jv_number_value(d) != (double)ev.duration_ms))
			abort();
		jv_free(d);
		jv cost = json_get(v, "cost");
		jv tokens = json_get(cost, "tokens"), usd = json_get(cost, "usd");
		if ((ev.has_tokens && jv_number_value(tokens) != (double)ev.tokens) ||
		    (ev.has_usd && !isnan(ev.usd) && jv_number_value(usd) != ev.usd))
			abort();
		jv_free(tokens);
		jv_free(usd);
		jv_free(cost);
	}
	jv_free(v);
	return 0;
}
