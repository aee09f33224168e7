/* stream.c - JSON-lines reading and writing; see stream.h. */
#include "data/stream.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "core/resource.h"
#include "data/schema.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ---------------------------------------------------------- */

/*
 * A line reader that never holds more than `max` bytes of one line: a
 * line is found too long as soon as it passes the limit, and the rest is
 * not read, so a hostile input can exhaust neither memory nor time.
 */
struct line_reader {
	int fd;
	char chunk[1 << 16];
	size_t pos, len;
	bool eof, error;
	bool whole;                 /* the error is the whole input's, on no one line */
	const struct stream_options *opt;
	struct stream_out *fwd;     /* flushed when input pauses */
};

enum line_status { LINE_OK, LINE_LAST_NO_NEWLINE, LINE_TOO_LONG, LINE_EOF, LINE_READ_ERROR };

/*
 * read(2), not fread: a pipe delivers records as they are written, and
 * fread would wait for a whole buffer.  Before blocking, on_idle lets the
 * caller finish work (commit a batch) so nothing waits on a quiet writer.
 */
static bool fill(struct line_reader *r)
{
	ssize_t n;

	if (r->eof || r->error)
		return false;
	if (r->opt->on_idle || r->fwd) {
		struct pollfd p = { .fd = r->fd, .events = POLLIN };
		if (poll(&p, 1, 0) == 0) {
			if (r->fwd)
				stream_flush(r->fwd);
			if (r->opt->on_idle)
				r->opt->on_idle(r->opt->payload);
		}
	}
	r->pos = 0;
	do
		n = read(r->fd, r->chunk, sizeof r->chunk);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		r->error = true;
	r->len = n > 0 ? (size_t)n : 0;
	if (n == 0)
		r->eof = true;
	return n > 0;
}

static enum line_status read_line(struct line_reader *r, struct buf *line, size_t max)
{
	bool too_long = false, any = false, newline = false;

	buf_reset(line);
	for (;;) {
		if (r->pos == r->len && !fill(r))
			break;
		any = true;
		char *start = r->chunk + r->pos;
		size_t avail = r->len - r->pos;
		char *nl = memchr(start, '\n', avail);
		size_t n = nl ? (size_t)(nl - start) : avail;

		/* (max + 1: a CRLF line's CR is not part of the record).  Said
		 * at once, not at the newline: a line that never ends (stdin
		 * from /dev/zero) would be read for ever. */
		if (line->len + n > max + 1)
			return LINE_TOO_LONG;
		buf_add(line, start, n);
		r->pos += n + (nl ? 1 : 0);
		if (nl) {
			newline = true;
			break;
		}
	}
	if (!too_long && line->len > max && line->buf[line->len - 1] != '\r')
		too_long = true;
	if (newline)
		return too_long ? LINE_TOO_LONG : LINE_OK;
	if (r->error)
		return LINE_READ_ERROR;
	if (!any)
		return LINE_EOF;
	return too_long ? LINE_TOO_LONG : LINE_LAST_NO_NEWLINE;
}

void stream_input_init(struct stream_input *in)
{
	memset(in, 0, sizeof *in);
	in->state = jv_null();
	in->task = jv_null();
	in->raw = jv_null();
}

void stream_input_release(struct stream_input *in)
{
	jv_free(in->state);
	jv_free(in->task);
	jv_free(in->raw);
	stream_input_init(in);
}

static bool is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return false;
	return true;
}

/* Whether a state's "v" (borrowed) names a protocol version newer than
 * this one: a whole number above it.  Any other value (1.5, "1", 0) is no
 * version at all, for the schema to refuse: "upgrade forge" would be the
 * wrong advice. */
static bool version_newer(jv v)
{
	double x = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : 0;

	return x > FORGE_PROTOCOL_VERSION && isfinite(x) && x == floor(x);
}

static void remember_trace(struct stream_input *in, jv rec)
{
	const char *t = json_get_str(rec, "trace_id");

	if (t && *t)
		snprintf(in->trace_id, sizeof in->trace_id, "%s", t);
}

int stream_task_check(const char *text, size_t len)
{
	if (is_blank(text, len))
		return forge_error("the task is empty: say what to do");
	if (len > STREAM_TASK_MAX)
		return forge_error("the task is %zu bytes, more than the limit of %u bytes", len,
				   STREAM_TASK_MAX);
	if (memchr(text, '\0', len))
		return forge_error("the task holds a NUL character");
	if (!json_utf8_valid(text, len))
		return forge_error("the task is not valid UTF-8");
	return 0;
}

static jv task_from_text(const char *s, size_t n)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
		s++;
		n--;
	}
	/* a file written on Windows: its lines end in \r\n, the task's in \n */
	struct buf d = BUF_INIT;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '\r' && i + 1 < n && s[i + 1] == '\n'))
			buf_addch(&d, s[i]);
	jv task = json_set(jv_object(), "description", jv_string_sized(d.buf ? d.buf : "", (int)d.len));
	buf_release(&d);
	return task;
}

/* -1 with "WHOSE'task.PATH' holds a NUL character (\u0000)WHY" when a
 * string of the task (borrowed) holds one. */
static int task_nul_refused(jv task, const char *whose, const char *why)
{
	char *where = NULL;
	int rc = 0;

	if (json_find_nul(&where, task) < 0) {
		rc = forge_error("%s'task%s%s' holds a NUL character (\\u0000)%s", whose, *where ? "." : "",
				 where, why);
		free(where);
	}
	return rc;
}

/* {"task": "text"} or {"task": {"description": …}} → a task object. */
static int task_from_bare(jv *out, jv rec)
{
	jv t = json_get(rec, "task");
	int rc = 0;

	if (task_nul_refused(t, "", "; a task cannot") < 0) {
		jv_free(t);
		return -1;
	}
	if (jv_get_kind(t) == JV_KIND_STRING && jv_string_length_bytes(jv_copy(t)) > 0) {
		if (stream_task_check(jv_string_value(t), (size_t)jv_string_length_bytes(jv_copy(t))) < 0) {
			jv_free(t);
			return -1;
		}
		*out = json_set(jv_object(), "description", t);
		return 0;
	}
	if (jv_get_kind(t) == JV_KIND_OBJECT && json_get_str(t, "description") &&
	    *json_get_str(t, "description")) {
		*out = t;
		return 0;
	}
	rc = forge_error("'task' must be a non-empty string or an object with a 'description'");
	jv_free(t);
	return rc;
}

/*
 * ---- events: the schema's checks written out ---------------------------
 *
 * Every event of a stream is validated, and the generic validator costs more
 * than parsing the line.  event_surely_valid() checks what
 * schemas/event.schema.json asks, in one pass over the keys: true only when
 * the validator would accept the record too (it is stricter where that is
 * simpler: an integer below 2^53); false leaves the verdict and the message
 * to the validator.  It was written for one version of the schema: when the
 * embedded schema's text differs (its hash), it is not used.
 */
#define EVENT_SCHEMA_FNV 0xd129ccd7b3499fc0ULL

/* Whether every byte of s[0..n) is one of those of a 256-entry table. */
static bool all_in(const char *s, size_t n, const bool *table)
{
	for (size_t i = 0; i < n; i++)
		if (!table[(unsigned char)s[i]])
			return false;
	return true;
}

/* The characters of a ULID (Crockford's base 32) and of a trace id. */
static bool ulid_chars[256], trace_chars[256];

static void char_tables(void)
{
	static bool done;

	if (done)
		return;
	for (const char *c = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"; *c; c++)
		ulid_chars[(unsigned char)*c] = true;
	for (const char *c = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"; *c; c++)
		trace_chars[(unsigned char)*c] = true;
	done = true;
}

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

static bool digits_in(const char *s, int lo, int hi)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return false;
	int v = (s[0] - '0') * 10 + (s[1] - '0');
	return v >= lo && v <= hi;
}

/* ^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)\.[0-9]{3}Z$ */
static bool timestamp_shape(const char *s, size_t n)
{
	return n == 24 && digits_in(s, 0, 99) && digits_in(s + 2, 0, 99) && s[4] == '-' && digits_in(s + 5, 1, 12) && s[7] == '-' &&
	       digits_in(s + 8, 1, 31) && s[10] == 'T' && digits_in(s + 11, 0, 23) && s[13] == ':' &&
	       digits_in(s + 14, 0, 59) && s[16] == ':' && digits_in(s + 17, 0, 60) && s[19] == '.' &&
	       digits_in(s + 20, 0, 99) && s[22] >= '0' && s[22] <= '9' && s[23] == 'Z';
}

/* ^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$, at most 128 characters */
static bool type_shape(const char *s, size_t n)
{
	size_t dots = 0;

	if (n == 0 || n > 128 || s[0] < 'a' || s[0] > 'z')
		return false;
	for (size_t i = 1; i < n; i++) {
		if (s[i] == '.') {
			if (s[i - 1] == '.' || i == n - 1)
				return false;
			dots++;
		} else if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) {
			return false;
		}
	}
	return dots > 0;
}

/* Code points of valid UTF-8 text. */
static size_t code_points(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xC0) != 0x80;
	return c;
}

static bool count_shape(jv v)
{
	double d = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : -1;

	return d >= 0 && d < 9007199254740992.0 && d == (double)(int64_t)d;
}

static bool cost_shape(jv cost)
{
	bool ok = jv_get_kind(cost) == JV_KIND_OBJECT;

	if (!ok)
		return false;
	jv_object_foreach(cost, k, v) {
		const char *name = jv_string_value(k);
		if (strcmp(name, "tokens") == 0)
			ok = ok && count_shape(v);
		else if (strcmp(name, "usd") == 0)
			ok = ok && (jv_get_kind(v) == JV_KIND_NULL ||
				    (jv_get_kind(v) == JV_KIND_NUMBER && jv_number_value(v) >= 0));
		jv_free(k);
		jv_free(v);
	}
	return ok;
}

/* Whether the embedded event schema is the one event_surely_valid() knows. */
static bool event_schema_known(void)
{
	static int known = -1;

	if (known < 0) {
		const struct resource *r = resource_find("event.schema.json");
		uint64_t h = 0xcbf29ce484222325ULL;
		for (size_t i = 0; r && i < r->len; i++)
			h = (h ^ (unsigned char)r->data[i]) * 0x100000001b3ULL;
		known = r && h == EVENT_SCHEMA_FNV;
	}
	return known;
}

enum { EV_KIND = 1, EV_ID = 2, EV_TRACE = 4, EV_TS = 8, EV_SOURCE = 16, EV_TYPE = 32, EV_PAYLOAD = 64,
       EV_REQUIRED = 127 };

/* Whether member name: v of an event surely passes; *seen notes the
 * required ones. */
static bool event_member_ok(unsigned *seen, const char *name, jv v)
{
	jv_kind kind = jv_get_kind(v);
	const char *str = kind == JV_KIND_STRING ? jv_string_value(v) : NULL;
	size_t n = str ? (size_t)jv_string_length_bytes(jv_copy(v)) : 0;

	if (strcmp(name, "kind") == 0) {
		*seen |= EV_KIND;
		return str && n == 5 && strcmp(str, "event") == 0;
	}
	if (strcmp(name, "id") == 0) {
		*seen |= EV_ID;
		return str && n == 26 && all_of(str, n, "0123456789ABCDEFGHJKMNPQRSTVWXYZ");
	}
	if (strcmp(name, "trace_id") == 0) {
		*seen |= EV_TRACE;
		return str && n >= 1 && n <= 128 &&
		       all_of(str, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-");
	}
	if (strcmp(name, "ts") == 0) {
		*seen |= EV_TS;
		return str && timestamp_shape(str, n);
	}
	if (strcmp(name, "source") == 0) {
		*seen |= EV_SOURCE;
		return str && !memchr(str, '\0', n) && code_points(str, n) >= 1 && code_points(str, n) <= 128;
	}
	if (strcmp(name, "phase") == 0)
		return str || kind == JV_KIND_NULL;
	if (strcmp(name, "type") == 0) {
		*seen |= EV_TYPE;
		return str && type_shape(str, n);
	}
	if (strcmp(name, "payload") == 0) {
		*seen |= EV_PAYLOAD;
		return kind == JV_KIND_OBJECT;
	}
	if (strcmp(name, "cost") == 0)
		return cost_shape(v);
	if (strcmp(name, "duration_ms") == 0)
		return count_shape(v);
	if (strcmp(name, "span") == 0)
		return str && n == 26 && all_of(str, n, "0123456789ABCDEFGHJKMNPQRSTVWXYZ");
	if (strcmp(name, "parent_span") == 0)
		return kind == JV_KIND_NULL || (str && n == 26 && all_of(str, n, "0123456789ABCDEFGHJKMNPQRSTVWXYZ"));
	return true;	/* other members are open */
}

bool stream_event_surely_valid(jv rec)
{
	unsigned seen = 0;
	bool ok = event_schema_known() && jv_get_kind(rec) == JV_KIND_OBJECT;

	if (!ok)
		return false;
	jv_object_foreach(rec, k, v) {
		ok = ok && event_member_ok(&seen, jv_string_value(k), v);
		jv_free(k);
		jv_free(v);
	}
	return ok && seen == EV_REQUIRED;
}

/* Code points 1..128, no NUL: what the schema asks of "source". */
static bool source_shape(const char *s, size_t n)
{
	size_t c = code_points(s, n);

	return !memchr(s, '\0', n) && c >= 1 && c <= 128;
}

bool stream_event_scan_surely_valid(const struct json_event *ev)
{
	char_tables();
	return event_schema_known() && ev->kind && ev->kind_len == 5 && memcmp(ev->kind, "event", 5) == 0 &&
	       ev->id && ev->id_len == 26 && all_in(ev->id, 26, ulid_chars) &&
	       ev->trace_id && ev->trace_id_len >= 1 && ev->trace_id_len <= 128 &&
	       all_in(ev->trace_id, ev->trace_id_len, trace_chars) &&
	       ev->ts && timestamp_shape(ev->ts, ev->ts_len) &&
	       ev->source && source_shape(ev->source, ev->source_len) &&
	       (ev->phase_kind == JSON_SCAN_INVALID || ev->phase_kind == JSON_SCAN_STRING ||
		ev->phase_kind == JSON_SCAN_NULL) &&
	       ev->type && type_shape(ev->type, ev->type_len) &&
	       ev->payload && ev->payload_object &&
	       (ev->span_kind == JSON_SCAN_INVALID ||
		(ev->span_kind == JSON_SCAN_STRING && ev->span_len == 26 && all_in(ev->span, 26, ulid_chars))) &&
	       (ev->parent_span_kind == JSON_SCAN_INVALID || ev->parent_span_kind == JSON_SCAN_NULL ||
		(ev->parent_span_kind == JSON_SCAN_STRING && ev->parent_span_len == 26 &&
		 all_in(ev->parent_span, 26, ulid_chars))) &&
	       /* json_event_scan() read tokens and duration_ms as plain integers */
	       (!ev->has_usd || isnan(ev->usd) || ev->usd >= 0);
}

static int check_schema(const char *name, jv rec, bool validate)
{
	if (!validate)
		return 0;
	if (strcmp(name, "event.schema.json") == 0 && stream_event_surely_valid(rec))
		return 0;
	const struct schema *s = schema_get(name);
	if (!s)
		return -1;
	return schema_validate(s, rec);
}

/*
 * An event line read without libjq: forward it and hand it to on_event;
 * *rc is the outcome.  False when the scan cannot judge the line (then
 * take_record() parses it).
 */
static bool take_scanned_event(int *rc, struct stream_input *in, const char *line, size_t len,
			       struct stream_out *fwd, const struct stream_options *opt)
{
	struct json_event ev;

	*rc = 0;
	if (opt->on_record && !opt->on_event)
		return false;	/* the caller wants the jv */
	if (!json_event_scan(&ev, line, len) || !ev.kind || ev.kind_len != 5 ||
	    memcmp(ev.kind, "event", 5) != 0 || (opt->validate && !stream_event_scan_surely_valid(&ev)))
		return false;
	if (ev.trace_id && ev.trace_id_len > 0) {
		size_t n = ev.trace_id_len < sizeof in->trace_id ? ev.trace_id_len : sizeof in->trace_id - 1;
		memcpy(in->trace_id, ev.trace_id, n);
		in->trace_id[n] = '\0';
	}
	if (fwd && stream_write_raw(fwd, line, len) < 0) {
		*rc = STREAM_OUTPUT_FAILED;
		return true;
	}
	in->forwarded++;
	in->events++;
	if (opt->on_event)
		*rc = opt->on_event(&ev, line, len, opt->payload);
	return true;
}

/* White space JSON allows between tokens (a line holds no '\n'). */
static size_t skip_ws(const char *s, size_t i, size_t len)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	return i;
}

/* Whether s[i..len) starts with the literal word w: not followed by a
 * letter, digit or '_' ("[null]" is JSON, "[nullable] …" is not). */
static bool word_at(const char *s, size_t i, size_t len, const char *w)
{
	size_t n = strlen(w);

	if (len - i < n || memcmp(s + i, w, n) != 0)
		return false;
	return i + n == len || !(isalnum((unsigned char)s[i + n]) || s[i + n] == '_');
}

bool stream_looks_like_json(const char *line, size_t len)
{
	size_t i = skip_ws(line, 0, len);

	if (i == len || (line[i] != '{' && line[i] != '['))
		return false;
	char open = line[i];
	i = skip_ws(line, i + 1, len);
	/* "{" or "[" alone: a record over several lines (`jq .`), said so */
	if (i == len)
		return true;
	if (open == '{')
		return line[i] == '"' || line[i] == '}';
	return (line[i] && strchr("\"{[]-", line[i])) || isdigit((unsigned char)line[i]) ||
	       word_at(line, i, len, "true") || word_at(line, i, len, "false") ||
	       word_at(line, i, len, "null");
}

/* Said with a malformed first line that starts with '[' or '{': a task
 * description may be one that only looks like JSON enough to be read so. */
#define TEXT_AS_JSON_HINT " (plain text starting with [ or { is read as JSON: use --task TEXT or {\"task\": …})"

/* One JSON line: forward it, keep it, or fail.  first: the input's first
 * line with content (a malformed one gets TEXT_AS_JSON_HINT, unless it
 * ends open: a record printed over several lines, said so). */
static int take_record(struct stream_input *in, const char *line, size_t len, bool first,
		       struct stream_out *fwd, const struct stream_options *opt)
{
	int rc;

	if (take_scanned_event(&rc, in, line, len, fwd, opt))
		return rc;
	jv rec = json_parse(line, len);

	if (!jv_is_valid(rec)) {
		char *m = json_invalid_msg(rec);
		size_t end = len;

		while (end > 0 && strchr(" \t\r", line[end - 1]))
			end--;
		/* "{" alone, or a line that ends open: `jq .` output, a record
		 * over several lines */
		bool open = end > 0 && strchr("{[,:", line[end - 1]);
		rc = forge_error("malformed JSON: %s%s", m,
				 open ? " (each record must be on one line: pretty-printed JSON? use jq -c)"
				 : first ? TEXT_AS_JSON_HINT : "");
		free(m);
		return rc;
	}
	if (jv_get_kind(rec) != JV_KIND_OBJECT) {
		rc = forge_error("expected a JSON object, got %s", jv_kind_name(jv_get_kind(rec)));
		goto out;
	}
	remember_trace(in, rec);
	const char *kind = json_get_str(rec, "kind");
	if (!kind) {
		if (!json_has(rec, "task")) {
			rc = forge_error("record has no \"kind\"; expected an event, a state, or {\"task\": …}");
			goto out;
		}
		jv task;
		if (task_from_bare(&task, rec) < 0) {
			rc = -1;
			goto out;
		}
		jv_free(in->task);
		in->task = task;
		goto out;
	}
	if (strcmp(kind, "state") == 0) {
		jv v = json_get(rec, "v");
		if (version_newer(v)) {
			rc = forge_error("state of protocol version %g; this forge speaks version %d: upgrade forge",
					 jv_number_value(v), FORGE_PROTOCOL_VERSION);
			jv_free(v);
			goto out;
		}
		jv_free(v);
		if (check_schema("state.schema.json", rec, opt->validate) < 0) {
			rc = forge_error_prefix("state does not match its schema");
			goto out;
		}
		/* The task's strings become paths, refs and branch names. */
		jv task = json_get(rec, "task");
		if (task_nul_refused(task, "state's ", "") < 0) {
			rc = -1;
			jv_free(task);
			goto out;
		}
		jv_free(task);
		if (opt->forward_states && fwd) {
			if (stream_write_raw(fwd, line, len) < 0) {
				rc = STREAM_OUTPUT_FAILED;
				goto out;
			}
			in->forwarded++;
		}
		jv_free(in->state);
		in->state = jv_copy(rec);
		goto out;
	}
	if (strcmp(kind, "event") == 0 && check_schema("event.schema.json", rec, opt->validate) < 0) {
		rc = forge_error_prefix("event does not match its schema");
		goto out;
	}
	/* Events and unknown kinds pass through byte for byte. */
	if (fwd && stream_write_raw(fwd, line, len) < 0) {
		rc = STREAM_OUTPUT_FAILED;
		goto out;
	}
	in->forwarded++;
	if (strcmp(kind, "event") == 0) {
		in->events++;
	} else if (!in->others++) {
		snprintf(in->other_kind, sizeof in->other_kind, "%s", kind);
		in->other_line = in->lines;
	}
	if (opt->on_record && strcmp(kind, "event") == 0)
		rc = opt->on_record(rec, line, len, opt->payload);
out:
	jv_free(rec);
	return rc;
}

/* The number (from 1) of the first line of text after its first that is a
 * stream record, a JSON object with a "kind"; 0 when none is. */
static unsigned long record_in_text(const char *text, size_t len)
{
	const char *p = memchr(text, '\n', len), *end = text + len;
	unsigned long n = 1;

	while (p && p < end) {
		const char *line = p + 1, *eol = memchr(line, '\n', (size_t)(end - line));
		size_t ll = (size_t)((eol ? eol : end) - line);

		n++;
		if (ll > 0 && line[0] == '{') {
			jv rec = jv_parse_sized(line, (int)ll);
			bool found = jv_get_kind(rec) == JV_KIND_OBJECT && json_get_str(rec, "kind");

			jv_free(rec);
			if (found)
				return n;
		}
		p = eol;
	}
	return 0;
}

/* Text over its limit: for a hook, the limit of the whole text (its lines
 * may all be short); else the task's bound. */
static int raw_too_long(struct line_reader *r, const struct stream_options *opt, size_t limit)
{
	r->whole = true;
	if (!opt->raw_hook)
		return forge_error("the text on stdin is longer than %zu bytes (stream.max_line_bytes): a task "
				   "is at most %u bytes", limit, STREAM_TASK_MAX);
	return forge_error("the text on stdin is longer than the limit of %zu bytes (%zu MiB) for %s on "
			   "stdin%s%s", limit, limit >> 20, opt->raw_what ? opt->raw_what : "text",
			   opt->raw_hint ? ": " : "", opt->raw_hint ? opt->raw_hint : "");
}

/* Whether a line of len bytes (without its newline) is over max, as
 * read_line() judges a record: a CRLF line's CR is not counted. */
static bool line_over(const char *line, size_t len, size_t max)
{
	return len > max + 1 || (len == max + 1 && line[len - 1] != '\r');
}

/* Input that is not JSON lines: offer it to the hook, else it is the task. */
static int take_raw(struct stream_input *in, struct line_reader *r, struct buf *text,
		    const struct stream_options *opt, size_t max)
{
	/* A text a hook takes (a diff) is bounded as a whole, not as one line:
	 * a diff of many short lines used to be refused past max_line. */
	size_t limit = opt->raw_hook && STREAM_RAW_MAX > max ? STREAM_RAW_MAX : max;
	size_t start = text->len;       /* where the line being read begins */
	unsigned long n = in->lines;    /* the lines before it */
	bool over = false;

	/* text already holds the first line; the rest follows as it is. */
	text->max = limit;
	do {
		size_t from = text->len;

		if (r->pos < r->len && buf_add(text, r->chunk + r->pos, r->len - r->pos) < 0)
			return raw_too_long(r, opt, limit);
		r->pos = r->len;
		/* each line is still held to max_line, as a record is */
		const char *end = text->buf + text->len;
		for (const char *p = text->buf + from; !over && (p = memchr(p, '\n', (size_t)(end - p))); p++) {
			over = line_over(text->buf + start, (size_t)(p - text->buf) - start, max);
			if (!over) {
				start = (size_t)(p - text->buf) + 1;
				n++;
			}
		}
		/* (the line being read: said at once, as read_line() does) */
		over = over || text->len - start > max + 1;
	} while (!over && fill(r));
	if (over || line_over(text->buf + start, text->len - start, max)) {
		in->lines = n + 1;
		return forge_error("a line of the text is longer than the limit of %zu bytes "
				   "(stream.max_line_bytes)", max);
	}
	if (r->error)
		return forge_error("cannot read the input: %s", strerror(errno));
	unsigned long rec = record_in_text(text->buf, text->len);
	if (rec)
		return forge_error("not a JSON record, but stream records follow (the first on line %lu): every "
				   "line of a stream must be one; did a command write text into it? Remove this "
				   "line, or pipe a task's text alone", in->lines + rec - 1);
	/* A bad byte or a NUL: name the line it is on (text starts at line in->lines).
	 * A text the hook takes (a diff) may hold bytes that are not UTF-8:
	 * the files it changes may be Latin-1. */
	size_t bad = json_utf8_invalid_at(text->buf, text->len);
	const char *nul = memchr(text->buf, '\0', text->len);
	if (!nul && opt->raw_hook) {
		int took = opt->raw_hook(text->buf, text->len, opt->payload);
		if (took < 0)
			return -1;
		if (took > 0) {
			/* (in JSON, a byte that is not UTF-8 is U+FFFD) */
			in->raw = jv_string_sized(text->buf, (int)text->len);
			return 0;
		}
	}
	if (nul || bad < text->len) {
		const char *at = nul ? nul : text->buf + bad;

		for (const char *p = text->buf; p < at; p++)
			in->lines += *p == '\n';
		return nul ? forge_error("NUL byte in the text input: a task or a diff cannot hold one")
			   : forge_error("invalid UTF-8");
	}
	/* the limit is the task's, as --task and {"task": …} count it: not
	 * the line end echo adds, nor a CR of each CRLF */
	jv task = task_from_text(text->buf, text->len);
	size_t len = (size_t)jv_string_length_bytes(json_get(task, "description"));
	if (len > STREAM_TASK_MAX) {
		jv_free(task);
		return forge_error("the task is %zu bytes, more than the limit of %u bytes", len,
				   STREAM_TASK_MAX);
	}
	in->task = task;
	in->text_line = in->lines;
	return 0;
}

/* Whether line[0..len) is one whole JSON value. */
static bool line_is_json(const char *line, size_t len)
{
	jv v = json_parse(line, len);
	bool yes = jv_is_valid(v);

	jv_free(v);
	return yes;
}

int stream_read(struct stream_input *in, FILE *from, struct stream_out *fwd,
		const struct stream_options *opt)
{
	static const struct stream_options defaults;
	struct line_reader *r = xcalloc(1, sizeof *r);
	size_t max = opt && opt->max_line ? opt->max_line : STREAM_MAX_LINE_DEFAULT;
	struct buf line = BUF_INIT;
	bool seen_content = false;
	int rc = 0;

	if (!opt)
		opt = &defaults;
	r->fd = fileno(from);
	r->opt = opt;
	bool held = fwd && fwd->hold;
	if (fwd) {
		r->fwd = fwd;
		fwd->hold = true;
	}
	for (;;) {
		enum line_status st = read_line(r, &line, max);

		if (st == LINE_EOF)
			break;
		in->lines++;
		if (st == LINE_READ_ERROR) {
			rc = forge_error("cannot read the input: %s", strerror(errno));
			break;
		}
		if (st == LINE_TOO_LONG) {
			rc = forge_error("record is longer than the limit of %zu bytes (stream.max_line_bytes)", max);
			break;
		}
		/* A byte order mark some editors put first: not part of the records. */
		if (in->lines == 1 && line.len >= 3 && memcmp(line.buf, "\xEF\xBB\xBF", 3) == 0) {
			memmove(line.buf, line.buf + 3, line.len - 3);
			buf_truncate(&line, line.len - 3);
		}
		if (is_blank(line.buf, line.len))
			continue;
		bool first = !seen_content;
		if (first) {
			seen_content = true;
			/* The first line decides, once: JSON lines, or text (a task, a
			 * diff) - "[bug] parser crashes" is a task, '{"kind":"st' a
			 * record cut short.  (A later line is a record or bad input.) */
			if (!stream_looks_like_json(line.buf, line.len)) {
				/* Raw text keeps its newlines: put this one back. */
				if (st == LINE_OK)
					buf_addch(&line, '\n');
				rc = take_raw(in, r, &line, opt, max);
				break;
			}
		}
		const char *nul = memchr(line.buf, '\0', line.len);
		if (nul) {
			rc = forge_error("NUL byte at column %zu: JSON text cannot hold one (a string writes it \\u0000)",
					 (size_t)(nul - line.buf) + 1);
			break;
		}
		rc = take_record(in, line.buf, line.len, first, fwd, opt);
		/* A last line without its newline is cut short only when it is
		 * not whole JSON: a complete record refused for what it holds
		 * (printf '%s', an editor's file without a final newline) is
		 * told its own reason alone (before: "truncated last line" in
		 * front of a schema error, a wrong kind, an empty task). */
		if (rc == -1 && st == LINE_LAST_NO_NEWLINE && !line_is_json(line.buf, line.len))
			rc = forge_error_prefix("truncated last line (no newline at the end of the input)");
		if (rc != 0)
			break;
	}
	if (fwd) {
		fwd->hold = held;
		if (stream_flush(fwd) < 0 && rc == 0)
			rc = STREAM_OUTPUT_FAILED;
	}
	if (rc == -1 && !r->whole)
		in->error_line = in->lines;
	in->empty = !seen_content && rc == 0;
	buf_release(&line);
	free(r);
	return rc;
}

/* ---- writing ---------------------------------------------------------- */

void stream_out_init(struct stream_out *out, FILE *f, const char *source, const char *phase)
{
	memset(out, 0, sizeof *out);
	out->f = f;
	out->source = source;
	out->phase = phase;
	signal(SIGPIPE, SIG_IGN);
}

void stream_out_set_trace(struct stream_out *out, const char *trace_id)
{
	snprintf(out->trace_id, sizeof out->trace_id, "%s", trace_id ? trace_id : "");
}

static int note_failure(struct stream_out *out)
{
	if (!out->failed) {
		out->failed = true;
		out->err = errno ? errno : EIO;
	}
	return -1;
}

int stream_flush(struct stream_out *out)
{
	if (out->failed)
		return -1;
	errno = 0;
	if (fflush(out->f) == EOF)
		return note_failure(out);
	return 0;
}

/* Flush a written line, unless stream_read() holds the lines it forwards. */
static int flush_line(struct stream_out *out)
{
	return out->hold ? 0 : fflush(out->f);
}

int stream_write_raw(struct stream_out *out, const char *line, size_t len)
{
	if (out->failed)
		return -1;
	errno = 0;
	if (llm_secret_in(line, len)) {
		/* A key that reached a record is redacted by value (llm.h). */
		size_t n;
		char *clean = llm_redact_mem(line, len, &n);
		bool bad = fwrite(clean, 1, n, out->f) != n;
		free(clean);
		if (bad || putc('\n', out->f) == EOF || flush_line(out) == EOF)
			return note_failure(out);
		return 0;
	}
	if (fwrite(line, 1, len, out->f) != len || putc('\n', out->f) == EOF || flush_line(out) == EOF)
		return note_failure(out);
	return 0;
}

int stream_write(struct stream_out *out, jv rec)
{
	if (out->failed) {
		jv_free(rec);
		return -1;
	}
	char *text = json_dumps(rec, false);
	int rc = stream_write_raw(out, text, strlen(text));

	free(text);
	return rc;
}

int stream_state_check(jv state)
{
	jv v = json_get(state, "v");
	bool newer = version_newer(v);
	double version = newer ? jv_number_value(v) : 0;

	jv_free(v);
	if (newer)
		return forge_error("a state of protocol version %g; this forge speaks version %d", version,
				   FORGE_PROTOCOL_VERSION);
	if (check_schema("state.schema.json", state, true) < 0)
		return forge_error_prefix("the state does not match its schema");
	return 0;
}

jv stream_state_initial(const char *trace_id, jv task, double budget_usd)
{
	jv s = jv_object(), zero = json_set(json_set(jv_object(), "tokens", jv_number(0)), "usd", jv_number(0));

	s = json_set(s, "kind", jv_string("state"));
	s = json_set(s, "v", jv_number(FORGE_PROTOCOL_VERSION));
	s = json_set(s, "trace_id", jv_string(trace_id));
	s = json_set(s, "phase", jv_string("init"));
	s = json_set(s, "status", jv_string("ok"));
	s = json_set(s, "task", task);
	s = json_set(s, "bounces", jv_array());
	s = json_set(s, "cost", zero);
	return json_set(s, "budget", json_set(json_set(jv_object(), "usd", jv_number(budget_usd)),
					      "remaining_usd", jv_number(budget_usd)));
}

int stream_write_state(struct stream_out *out, jv state)
{
	if (check_schema("state.schema.json", state, true) < 0) {
		jv_free(state);
		return forge_error_prefix("refusing to write a state that does not match its schema");
	}
	return stream_write(out, state);
}

jv stream_event_new(const struct stream_out *out, const char *type, jv payload)
{
	char id[ULID_LEN + 1], ts[TIMESTAMP_LEN + 1];
	jv ev = jv_object();

	ulid_new(id);
	timestamp_now(ts);
	if (jv_get_kind(payload) == JV_KIND_NULL) {
		jv_free(payload);
		payload = jv_object();
	}
	ev = json_set(ev, "kind", jv_string("event"));
	ev = json_set(ev, "id", jv_string(id));
	ev = json_set(ev, "trace_id", jv_string(out->trace_id));
	ev = json_set(ev, "ts", jv_string(ts));
	ev = json_set(ev, "source", jv_string(out->source));
	ev = json_set(ev, "phase", json_str_or_null(out->phase));
	ev = json_set(ev, "type", jv_string(type));
	return json_set(ev, "payload", payload);
}

int stream_emit_full(struct stream_out *out, const char *type, jv payload, jv cost,
		     long long duration_ms)
{
	jv ev = stream_event_new(out, type, payload);

	if (jv_get_kind(cost) != JV_KIND_NULL)
		ev = json_set(ev, "cost", cost);
	else
		jv_free(cost);
	if (duration_ms >= 0)
		ev = json_set(ev, "duration_ms", jv_number((double)duration_ms));
	return stream_write(out, ev);
}

int stream_emit(struct stream_out *out, const char *type, jv payload)
{
	return stream_emit_full(out, type, payload, jv_null(), -1);
}

static const char *const state_status_names[] = {
	[STATE_OK] = "ok", [STATE_REJECTED] = "rejected", [STATE_ESCALATED] = "escalated",
	[STATE_TRIPPED] = "tripped", [STATE_FAILED] = "failed", [STATE_SKIPPED] = "skipped",
	[STATE_UNKNOWN] = "unknown",
};

const char *state_status_name(enum state_status s)
{
	return (unsigned)s <= STATE_UNKNOWN ? state_status_names[s] : "unknown";
}

enum state_status state_status_of(const char *name)
{
	for (int s = STATE_OK; name && s < STATE_UNKNOWN; s++)
		if (strcmp(name, state_status_names[s]) == 0)
			return (enum state_status)s;
	return STATE_UNKNOWN;
}
