/*
 * llm_replay.c - cassettes: the replay provider and --record (the format is
 * in llm.h and schemas/cassette.schema.json).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm_internal.h"

struct llm_cassette {
	jv entries;          /* array of entry objects */
	bool strict;
	char *path;
};

static jv parse_lines(const char *text, size_t len, const char *path)
{
	jv out = jv_array();
	size_t lineno = 0;

	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		const char *s = p;

		lineno++;
		while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		if (s < e && *s != '#') {
			jv v = json_parse(s, (size_t)(e - s));
			if (jv_get_kind(v) != JV_KIND_OBJECT) {
				char *msg = jv_is_valid(v) ? xstrdup("not an object") : json_invalid_msg(jv_copy(v));
				forge_error("cassette '%s' line %zu: %s", path, lineno, msg);
				free(msg);
				jv_free(v);
				jv_free(out);
				return jv_invalid();
			}
			out = jv_array_append(out, v);
		}
		p = nl ? nl + 1 : end;
	}
	return out;
}

static int load(struct llm_cassette *c, const char *path, const char **file_mode, jv *doc)
{
	struct buf b = BUF_INIT;

	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return forge_error_prefix("cassette");
	}
	*doc = json_parse(b.buf, b.len);
	if (jv_get_kind(*doc) == JV_KIND_ARRAY) {
		c->entries = jv_copy(*doc);
	} else if (jv_get_kind(*doc) == JV_KIND_OBJECT && json_has(*doc, "entries")) {
		c->entries = json_get(*doc, "entries");
		*file_mode = json_get_str(*doc, "mode");
	} else {
		c->entries = parse_lines(b.buf, b.len, path);
	}
	buf_release(&b);
	if (jv_get_kind(c->entries) != JV_KIND_ARRAY) {
		if (jv_get_kind(c->entries) != JV_KIND_INVALID)
			forge_error("cassette '%s': \"entries\" must be an array", path);
		return -1;
	}
	return 0;
}

int llm_cassette_open(struct llm_cassette **out, const char *path, const char *mode)
{
	struct llm_cassette *c = xcalloc(1, sizeof(*c));
	const char *file_mode = NULL;
	jv doc = jv_null();
	int rc;

	*out = NULL;
	c->entries = jv_null();
	c->path = xstrdup(path);
	rc = load(c, path, &file_mode, &doc);
	mode = mode ? mode : file_mode;
	if (rc == 0 && mode && strcmp(mode, "strict") && strcmp(mode, "sequential"))
		rc = forge_error("cassette mode '%s' is neither strict nor sequential", mode);
	c->strict = mode && !strcmp(mode, "strict");
	jv_free(doc);
	if (rc < 0) {
		llm_cassette_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

char *llm_replay_phase(const struct llm_options *opt)
{
	const char *name = opt->phase && *opt->phase ? opt->phase : getenv("FORGE_PHASE");
	struct buf b = BUF_INIT;

	if (!name || !*name)
		return NULL;
	buf_adds(&b, name);
	if (opt->fast && opt->phase && *opt->phase)
		buf_adds(&b, "-fast");
	return buf_detach(&b, NULL);
}

int llm_replay_attempt(const struct llm_options *opt)
{
	const char *env = getenv("FORGE_ATTEMPT");
	long a;

	if (env && *env)	/* tests pin the attempt of every process */
		return forge_parse_long(&a, env, 1, 1000000) < 0 ? 1 : (int)a;
	return opt->attempt > 0 ? opt->attempt : 1;
}

void llm_cassette_free(struct llm_cassette *c)
{
	if (!c)
		return;
	jv_free(c->entries);
	free(c->path);
	free(c);
}

/* True when entry's field is absent or equals want (want NULL/0 matches all). */
static bool match_str(jv e, const char *key, const char *want)
{
	const char *v = json_get_str(e, key);

	return !v || !want || !strcmp(v, want);
}

static bool match_num(jv e, const char *key, int want)
{
	double v = json_get_num(e, key, -1);

	return v < 0 || v == want;
}

/* Index of the entry for call k, or -1. */
static int select_entry(jv entries, const char *phase, int attempt, int k)
{
	int nth = 0, by_order = -1, by_call = -1;

	jv_array_foreach(entries, i, e) {
		if (match_str(e, "phase", phase) && match_num(e, "attempt", attempt)) {
			if (by_call < 0 && json_get_num(e, "call", -1) == k)
				by_call = i;
			if (++nth == k && by_order < 0)
				by_order = i;
		}
		jv_free(e);
	}
	return by_call >= 0 ? by_call : by_order;
}

static int replay_error(enum llm_error *kind, jv err, int i)
{
	const char *name = json_get_str(err, "kind");
	const char *msg = json_get_str(err, "message");

	if (!name || llm_error_parse(kind, name) < 0)
		*kind = LLM_ERR_SERVER;
	return forge_error("replay: %s (cassette entry %d)", msg ? msg : llm_error_name(*kind), i + 1);
}

static int check_request(jv e, jv request, int i)
{
	jv want = json_get(e, "request");
	char *diff;
	int rc = 0;

	if (jv_get_kind(want) != JV_KIND_OBJECT) {
		jv_free(want);
		return forge_error("replay: cassette entry %d has no request to compare (strict mode)", i + 1);
	}
	/* only the fields the entry states are compared (hand-written entries) */
	jv got = jv_object();
	jv keys = jv_keys_unsorted(jv_copy(want));
	jv_array_foreach(keys, j, k) {
		if (json_has(request, jv_string_value(k)))
			got = json_set(got, jv_string_value(k), json_get(request, jv_string_value(k)));
		jv_free(k);
	}
	jv_free(keys);
	diff = llm_json_diff(want, got, "request");
	jv_free(got);
	if (*diff)
		rc = forge_error("replay: the request differs from cassette entry %d at %s", i + 1, diff);
	free(diff);
	jv_free(want);
	return rc;
}

int llm_cassette_answer(struct llm_response *out, enum llm_error *kind, struct llm_cassette *c,
			const char *phase, int attempt, int k, jv request)
{
	int i = select_entry(c->entries, phase, attempt, k);
	jv e, resp, err;
	int rc;

	*kind = LLM_ERR_REPLAY;
	if (i < 0)
		return forge_error("replay: cassette '%s' has no answer for call %d of phase %s attempt %d",
				   c->path, k, phase ? phase : "(any)", attempt);
	e = jv_array_get(jv_copy(c->entries), i);
	if (c->strict && check_request(e, request, i) < 0) {
		jv_free(e);
		return -1;
	}
	err = json_get(e, "error");
	resp = json_get(e, "response");
	if (jv_get_kind(err) == JV_KIND_OBJECT) {
		rc = replay_error(kind, err, i);
		jv_free(resp);
	} else {
		llm_response_release(out);
		rc = llm_response_from_json(out, resp);
		if (rc < 0)
			forge_error_prefix("replay: cassette entry %d", i + 1);
	}
	jv_free(err);
	jv_free(e);
	return rc;
}

int llm_cassette_record(const char *path, const char *phase, int attempt, int k,
			jv request, jv response)
{
	jv e = jv_object();
	FILE *f;
	char *line;
	int rc = 0;

	if (phase)
		e = json_set(e, "phase", jv_string(phase));
	e = json_set(e, "attempt", jv_number(attempt));
	e = json_set(e, "call", jv_number(k));
	e = json_set(e, "request", request);
	e = json_set(e, "response", response);
	line = llm_redact(json_dumps(e, false));
	f = fopen(path, "a");
	if (!f || fprintf(f, "%s\n", line) < 0)
		rc = forge_error("cannot append to the cassette '%s'", path);
	if (f && fclose(f) != 0 && rc == 0)
		rc = forge_error("cannot write the cassette '%s'", path);
	free(line);
	return rc;
}

/* ---- first difference between two JSON values ------------------------- */

static int diff_at(struct buf *path, jv a, jv b);

static int diff_object(struct buf *path, jv a, jv b)
{
	size_t len = path->len;
	int found = 0;

	jv keys = jv_keys_unsorted(jv_copy(a));
	jv_array_foreach(keys, i, k) {
		if (!found) {
			jv av = json_get(a, jv_string_value(k)), bv = json_get(b, jv_string_value(k));
			buf_addf(path, ".%s", jv_string_value(k));
			if (!json_has(b, jv_string_value(k)) || diff_at(path, av, bv))
				found = 1;
			else
				path->buf[path->len = len] = '\0';
			jv_free(av);
			jv_free(bv);
		}
		jv_free(k);
	}
	jv_free(keys);
	if (found)
		return 1;
	keys = jv_keys_unsorted(jv_copy(b));
	jv_array_foreach(keys, i, k) {
		if (!found && !json_has(a, jv_string_value(k))) {
			buf_addf(path, ".%s", jv_string_value(k));
			found = 1;
		}
		jv_free(k);
	}
	jv_free(keys);
	return found;
}

static int diff_array(struct buf *path, jv a, jv b)
{
	int na = jv_array_length(jv_copy(a)), nb = jv_array_length(jv_copy(b));
	size_t len = path->len;

	for (int i = 0; i < na && i < nb; i++) {
		jv av = jv_array_get(jv_copy(a), i), bv = jv_array_get(jv_copy(b), i);
		buf_addf(path, "[%d]", i);
		int d = diff_at(path, av, bv);
		jv_free(av);
		jv_free(bv);
		if (d)
			return 1;
		path->buf[path->len = len] = '\0';
	}
	if (na != nb) {
		buf_addf(path, "[%d]", na < nb ? na : nb);
		return 1;
	}
	return 0;
}

/* 1 when a and b differ (path extended to the place); borrows both. */
static int diff_at(struct buf *path, jv a, jv b)
{
	if (jv_get_kind(a) != jv_get_kind(b))
		return 1;
	if (jv_get_kind(a) == JV_KIND_OBJECT)
		return diff_object(path, a, b);
	if (jv_get_kind(a) == JV_KIND_ARRAY)
		return diff_array(path, a, b);
	return !json_equal(a, b);
}

char *llm_json_diff(jv a, jv b, const char *prefix)
{
	struct buf path = BUF_INIT;

	buf_adds(&path, prefix);
	if (!diff_at(&path, a, b))
		buf_reset(&path);
	return buf_detach(&path, NULL);
}
