/*
 * memory_episode.c - episodes from events, procedures and their outcomes,
 * gate edits, and patterns (seed 002 sections 4-6; memory.h).
 */
#include "memory/memory_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/forge.h"
#include "core/json.h"
#include "core/money.h"
#include "data/project.h"

/* ---- episodes ------------------------------------------------------- */

static jv tags_add(jv tags, const char *t)
{
	if (!t || !*t)
		return tags;
	jv_array_foreach(tags, i, x) {
		bool same = strcmp(jv_string_value(x), t) == 0;

		jv_free(x);
		(void)i;
		if (same)
			return tags;
	}
	return jv_array_append(tags, jv_string(t));
}

static bool has_prefix(const char *s, const char *p)
{
	return s && strncmp(s, p, strlen(p)) == 0;
}

static bool contains(const char *s, const char *p)
{
	return s && strstr(s, p);
}

static int64_t event_ms(jv ev)
{
	int64_t ms = 0;
	jv ts = json_get(ev, "ts");

	if (mem_time_parse(&ms, ts) < 0)
		ms = 0;
	jv_free(ts);
	return ms;
}

/*
 * The index of the event that ended the run: its last run.completed or
 * run.paused, else (a phase's events) the last event.  Not simply the last:
 * a checkpoint (state.updated) is written after run.completed, and a run
 * a human rejected at a gate was remembered as "failed: no reason given".
 */
static int end_index(jv events)
{
	int n = jv_array_length(jv_copy(events)), end = n - 1;

	for (int i = n - 1; i >= 0; i--) {
		jv e = jv_array_get(jv_copy(events), i);
		const char *t = json_get_str(e, "type");
		bool ends = t && (strcmp(t, "run.completed") == 0 || strcmp(t, "run.paused") == 0);

		jv_free(e);
		if (ends) {
			end = i;
			break;
		}
	}
	return end;
}

/*
 * seed 002 section 4: input {task, phase}, actions (tool events), outcome
 * (success when the run's end, end_index, completed/succeeded/passed; the
 * error message otherwise), duration (first to last ts), cost (sum), bounces
 * (loop.phase_bounce events).
 */
static jv episode_of(jv events, jv *tags)
{
	int n = jv_array_length(jv_copy(events));
	jv first = jv_array_get(jv_copy(events), 0), last = jv_array_get(jv_copy(events), n - 1);
	jv end = jv_array_get(jv_copy(events), end_index(events));
	jv actions = jv_array(), payload = json_get(first, "payload");
	double tokens = 0, usd = 0;
	int bounces = 0;
	const char *phase = json_get_str(first, "phase");
	char *task = json_get_str(payload, "task") ? xstrdup(json_get_str(payload, "task")) : NULL;

	jv_array_foreach(events, i, ev) {
		const char *type = json_get_str(ev, "type");
		jv cost = json_get(ev, "cost");

		tokens += json_get_num(cost, "tokens", 0);
		usd += json_get_num(cost, "usd", 0);
		jv_free(cost);
		if (!task) {
			jv p = json_get(ev, "payload");

			if (json_get_str(p, "task"))
				task = xstrdup(json_get_str(p, "task"));
			jv_free(p);
		}
		if (type && strcmp(type, "loop.phase_bounce") == 0)
			bounces++;
		if (has_prefix(type, "tool.")) {
			jv p = json_get(ev, "payload"), a = jv_object();
			const char *tool = json_get_str(p, "tool");

			a = json_set(a, "type", jv_string(type));
			a = json_set(a, "tool", json_str_or_null(tool));
			a = json_set(a, "ok", jv_bool(json_get_bool(p, "ok", strcmp(type, "tool.failed") != 0)));
			a = json_set(a, "duration_ms", json_get(ev, "duration_ms"));
			actions = jv_array_append(actions, a);
			*tags = tags_add(*tags, tool);
			jv_free(p);
		}
		jv_free(ev);
		(void)i;
	}
	const char *lt = json_get_str(end, "type");
	jv lp = json_get(end, "payload");
	jv err = json_get(lp, "error");
	const char *emsg = jv_get_kind(err) == JV_KIND_STRING ? jv_string_value(err) :
			   json_get_str(err, "message");
	const char *status = json_get_str(lp, "status");

	if (!emsg)
		emsg = json_get_str(lp, "reason");     /* (run.completed's, run.paused's) */
	bool success = (contains(lt, "completed") || contains(lt, "success") || contains(lt, "passed")) &&
		       !(status && strcmp(status, "ok") != 0 && strcmp(status, "completed") != 0);
	jv outcome = jv_object(), in = jv_object(), ep = jv_object();

	outcome = json_set(outcome, "success", jv_bool(success));
	outcome = json_set(outcome, "last_event", json_str_or_null(lt));
	if (!success)
		outcome = json_set(outcome, "error", json_str_or_null(emsg ? emsg : status));
	/* events outside any phase (run.started …) are a whole run's */
	in = json_set(in, "task", json_str_or_null(task));
	in = json_set(in, "phase", jv_string(phase ? phase : "run"));
	ep = json_set(ep, "input", in);
	ep = json_set(ep, "actions", actions);
	ep = json_set(ep, "outcome", outcome);
	int64_t d = event_ms(last) - event_ms(first);

	ep = json_set(ep, "duration_ms", jv_number((double)(d > 0 ? d : 0)));
	jv cost = jv_object();

	cost = json_set(cost, "tokens", jv_number(tokens));
	cost = json_set(cost, "usd", jv_number(usd));
	ep = json_set(ep, "cost", cost);
	ep = json_set(ep, "bounces", jv_number(bounces));
	*tags = tags_add(*tags, phase ? phase : "run");
	*tags = tags_add(*tags, success ? "success" : "failure");
	if (!success && emsg) {
		if (strstr(emsg, "timeout") || strstr(emsg, "timed out"))
			*tags = tags_add(*tags, "timeout");
		if (strstr(emsg, "rate limit") || strstr(emsg, "rate_limit"))
			*tags = tags_add(*tags, "rate-limit");
		if (strstr(emsg, "auth"))
			*tags = tags_add(*tags, "auth-error");
	}
	jv_free(err);
	jv_free(lp);
	jv_free(payload);
	jv_free(first);
	jv_free(last);
	jv_free(end);
	free(task);
	return ep;
}

/* ---- what a whole run did: phases, bounces, their evidence and fixes ---- */

/*
 * The caps of the parts of a bounce's evidence and fix in a memory's text:
 * a test's name, a rule, a file, a root cause or a fix may be as long as
 * what wrote it (a 280 KB root cause made the lesson and the episode larger
 * than a memory holds, MEMORY_CONTENT_MAX, and the run remembered nothing).
 */
#define CUT_NAME 200            /* a test's name, a rule, a file */
#define CUT_MESSAGE 240         /* a finding's or a failure's message */
#define CUT_ROOT_CAUSE 600
#define CUT_FIX 400
#define CUT_REASON 600          /* why the run ended */
#define CUT_NOTE 1000           /* a human's note at a gate: what the human taught */
/* the whole text, a last guard (the task alone may be 64 KB, STREAM_TASK_MAX;
 * room is left for the redaction of secrets, which may lengthen it) */
#define CUT_CONTENT (MEMORY_CONTENT_MAX - 4096)

#define CUT_MARK "…"

/* The length of s[0..n) cut to at most max bytes, on the start of a UTF-8
 * character (a cut inside one is stored as U+FFFD). */
static size_t cut_len(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	n = max;
	while (n && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Append s, at most max bytes of it, "…" after it when it was cut; with
 * trim, without the blanks and full stops it ends with (the sentence goes
 * on after it). */
static void add_cut(struct buf *b, const char *s, size_t max, bool trim)
{
	size_t n = strlen(s), k;

	while (trim && n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '.'))
		n--;
	k = cut_len(s, n, max);
	buf_add(b, s, k);
	if (k < n)
		buf_adds(b, CUT_MARK);
}

/* b's text cut to CUT_CONTENT bytes: a memory is always stored. */
static void cut_content(struct buf *b)
{
	if (b->len <= CUT_CONTENT)
		return;
	buf_truncate(b, cut_len(b->buf, b->len, CUT_CONTENT - (sizeof CUT_MARK - 1)));
	buf_adds(b, CUT_MARK);
}

/* "rule in file:line: message" of a review finding, or "test: message
 * (root cause: …)" of a test failure, each part cut (add_cut). */
static void evidence_text(struct buf *b, jv e)
{
	const char *rule = json_get_str(e, "rule"), *test = json_get_str(e, "test");
	const char *file = json_get_str(e, "file"), *msg = json_get_str(e, "message");
	const char *cause = json_get_str(e, "root_cause");
	double line = json_get_num(e, "line", 0);

	if (rule || !test) {
		add_cut(b, rule ? rule : "a finding", CUT_NAME, false);
		if (file) {
			buf_adds(b, " in ");
			add_cut(b, file, CUT_NAME, false);
		}
	} else {
		buf_adds(b, "test \"");
		add_cut(b, test, CUT_NAME, false);
		buf_addch(b, '"');
		if (file) {
			buf_adds(b, " (");
			add_cut(b, file, CUT_NAME, false);
			buf_addch(b, ')');
		}
	}
	if (file && line > 0)
		buf_addf(b, ":%.0f", line);
	if (msg && *msg) {
		buf_adds(b, ": ");
		add_cut(b, msg, CUT_MESSAGE, true);
	}
	if (cause) {
		buf_adds(b, " (root cause: ");
		add_cut(b, cause, CUT_ROOT_CAUSE, false);
		buf_addch(b, ')');
	}
}

struct run_scan {
	char *task;             /* malloc'd, or NULL */
	struct buf phases;      /* "plan → implement → …" */
	jv bounces;             /* [{from,n,reason,evidence,attempt,fix,fix_attempt,after}] */
	jv langs;               /* languages of the files involved */
	jv rules;               /* rules of the findings that bounced a phase */
	char *end_status;       /* the run's end's (end_index) payload status (run.completed:
				 * completed, failed; run.paused: paused), malloc'd, or NULL */
	char *end_reason;       /* malloc'd, or NULL */
	jv end_gate;            /* the human's gate.rejected that ended the run, with a note:
				 * {gate, note}, or null */
};

/* v if it is an array, else (freed) an empty one */
static jv as_array(jv v)
{
	if (jv_get_kind(v) == JV_KIND_ARRAY)
		return v;
	jv_free(v);
	return jv_array();
}

static jv event_at(jv events, int i)
{
	return jv_array_get(jv_copy(events), i);
}

static bool event_is(jv ev, const char *type, const char *phase)
{
	const char *t = json_get_str(ev, "type"), *p = json_get_str(ev, "phase");

	return t && strcmp(t, type) == 0 && (!phase || (p && strcmp(p, phase) == 0));
}

static void note_lang(struct run_scan *r, const char *path)
{
	const char *lang = path ? project_language(path) : NULL;

	if (lang)
		r->langs = tags_add(r->langs, lang);
}

/* The languages of the paths in files (consumed; not an array: none). */
static void note_langs(struct run_scan *r, jv files)
{
	files = as_array(files);
	jv_array_foreach(files, k, f) {
		note_lang(r, jv_get_kind(f) == JV_KIND_STRING ? jv_string_value(f) : NULL);
		jv_free(f);
		(void)k;
	}
	jv_free(files);
}

/* The evidence of the bounce at index at: the event's own findings/failures
 * (the supervisor puts them there), else the findings detected since the
 * bouncing phase started. */
static jv bounce_evidence(struct run_scan *r, jv events, int at, jv payload, const char *from)
{
	jv ev = json_get(payload, "findings");

	if (jv_get_kind(ev) != JV_KIND_ARRAY) {
		jv_free(ev);
		ev = json_get(payload, "failures");
	}
	if (jv_get_kind(ev) != JV_KIND_ARRAY) {
		jv_free(ev);
		ev = jv_array();
		for (int i = at - 1; i >= 0; i--) {
			jv e = event_at(events, i);
			bool start = event_is(e, "phase.started", from);

			if (event_is(e, "finding.detected", NULL))
				ev = jv_array_append(ev, json_get(e, "payload"));
			jv_free(e);
			if (start)
				break;
		}
	}
	jv_array_foreach(ev, i, e) {
		note_lang(r, json_get_str(e, "file"));
		if (json_get_str(e, "rule"))
			r->rules = tags_add(r->rules, json_get_str(e, "rule"));
		jv_free(e);
		(void)i;
	}
	return ev;
}

/* What came of the bounce at index at: the fix (the next implement's
 * summary, else its reason) and whether the bouncing phase then passed. */
static jv bounce_outcome(struct run_scan *r, jv events, int at, jv b, const char *from)
{
	int n = jv_array_length(jv_copy(events)), attempt = 0;
	bool fixed = false;

	for (int i = 0; i < at; i++) {
		jv e = event_at(events, i);

		attempt += event_is(e, "phase.started", "implement");
		jv_free(e);
	}
	b = json_set(b, "attempt", jv_number(attempt));
	for (int i = at + 1; i < n; i++) {
		jv e = event_at(events, i), p = json_get(e, "payload");

		if (!fixed && event_is(e, "implement.summary", NULL) && json_get_str(p, "summary")) {
			b = json_set(b, "fix", json_get(p, "summary"));
			b = json_set(b, "fix_attempt", jv_number(json_get_num(p, "attempt", attempt + 1)));
			note_langs(r, json_get(p, "files"));
			fixed = true;
		} else if (!fixed && event_is(e, "phase.completed", "implement")) {
			b = json_set(b, "fix", json_str_or_null(json_get_str(p, "reason")));
			b = json_set(b, "fix_attempt", jv_number(attempt + 1));
			fixed = true;
		} else if (fixed && event_is(e, "phase.completed", from)) {
			const char *st = json_get_str(p, "status");

			b = json_set(b, "after", json_str_or_null(st));
			jv_free(p);
			jv_free(e);
			break;
		}
		jv_free(p);
		jv_free(e);
	}
	return b;
}

static void run_scan(struct run_scan *r, jv events)
{
	int n = jv_array_length(jv_copy(events)), end = end_index(events);
	jv rejected = jv_null();   /* a human's rejection with a note since the last run.completed */

	memset(r, 0, sizeof *r);
	r->end_gate = jv_null();
	r->bounces = jv_array();
	r->langs = jv_array();
	r->rules = jv_array();
	for (int i = 0; i < n; i++) {
		jv e = event_at(events, i), p = json_get(e, "payload");
		const char *type = json_get_str(e, "type"), *phase = json_get_str(e, "phase");

		if (!r->task && json_get_str(p, "task"))
			r->task = xstrdup(json_get_str(p, "task"));
		if (type && strcmp(type, "phase.started") == 0 && phase)
			buf_addf(&r->phases, "%s%s", r->phases.len ? " → " : "", phase);
		if (type && strcmp(type, "implement.summary") == 0) {
			note_langs(r, json_get(p, "files"));
		}
		if (type && strcmp(type, "loop.phase_bounce") == 0) {
			const char *from = json_get_str(p, "from") ? json_get_str(p, "from") : "review";
			jv b = jv_object();

			b = json_set(b, "from", jv_string(from));
			b = json_set(b, "n", jv_number(json_get_num(p, "n", 1)));
			b = json_set(b, "reason", json_str_or_null(json_get_str(p, "reason")));
			b = json_set(b, "evidence", bounce_evidence(r, events, i, p, from));
			r->bounces = jv_array_append(r->bounces, bounce_outcome(r, events, i, b, from));
		}
		if (type && strcmp(type, "gate.rejected") == 0 && json_get_str(p, "note") &&
		    *json_get_str(p, "note")) {
			jv_free(rejected);
			rejected = json_set(json_set(jv_object(), "gate", json_get(p, "gate")), "note",
					    json_get(p, "note"));
		}
		if (type && strcmp(type, "run.completed") == 0) {
			jv_free(r->end_gate);
			r->end_gate = rejected;     /* (a rejection stops the run: this end) */
			rejected = jv_null();
		}
		if (i == end) {
			jv err = json_get(p, "error");
			const char *why = jv_get_kind(err) == JV_KIND_STRING ? jv_string_value(err) :
					  json_get_str(p, "reason");

			r->end_reason = why ? xstrdup(why) : NULL;
			if (json_get_str(p, "status"))
				r->end_status = xstrdup(json_get_str(p, "status"));
			else if (type && strcmp(type, "run.paused") == 0)
				r->end_status = xstrdup("paused");
			jv_free(err);
		}
		jv_free(p);
		jv_free(e);
	}
	jv_free(rejected);
	if (r->end_status && strcmp(r->end_status, "failed") != 0) {
		jv_free(r->end_gate);       /* (resumed since, to another end) */
		r->end_gate = jv_null();
	}
}

static void run_scan_release(struct run_scan *r)
{
	free(r->task);
	free(r->end_reason);
	free(r->end_status);
	buf_release(&r->phases);
	jv_free(r->bounces);
	jv_free(r->langs);
	jv_free(r->rules);
	jv_free(r->end_gate);
}

/* "review sent attempt 1 back: EVIDENCE; fixed in attempt 2: FIX; then the
 * review passed" */
static void bounce_text(struct buf *b, jv bounce)
{
	const char *from = json_get_str(bounce, "from"), *fix = json_get_str(bounce, "fix");
	const char *after = json_get_str(bounce, "after");
	jv ev = json_get(bounce, "evidence");
	int ne = jv_get_kind(ev) == JV_KIND_ARRAY ? jv_array_length(jv_copy(ev)) : 0;

	buf_addf(b, "%s sent implement attempt %.0f back", from, json_get_num(bounce, "attempt", 1));
	if (ne == 0 && json_get_str(bounce, "reason")) {
		buf_adds(b, " (");
		add_cut(b, json_get_str(bounce, "reason"), CUT_REASON, false);
		buf_addch(b, ')');
	}
	for (int i = 0; i < ne && i < 3; i++) {
		jv e = jv_array_get(jv_copy(ev), i);

		buf_adds(b, i ? "; " : ": ");
		evidence_text(b, e);
		jv_free(e);
	}
	if (ne > 3)
		buf_addf(b, "; and %d more", ne - 3);
	if (fix) {
		buf_addf(b, ". Fixed in attempt %.0f: ", json_get_num(bounce, "fix_attempt", 2));
		add_cut(b, fix, CUT_FIX, true);
	}
	if (after)
		buf_addf(b, ". Then %s %s", strcmp(from, "test") == 0 ? "the tests" : "the review",
			 strcmp(after, "ok") == 0 ? "passed" : "still said no");
	jv_free(ev);
}

static const char *lang_name(const char *lang)
{
	static const char *const names[][2] = {
		{ "c", "C" }, { "cpp", "C++" }, { "python", "Python" }, { "javascript", "JavaScript" },
		{ "typescript", "TypeScript" }, { "go", "Go" }, { "rust", "Rust" }, { "shell", "shell" },
		{ "java", "Java" }, { "ruby", "Ruby" },
	};

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(lang, names[i][0]) == 0)
			return names[i][1];
	return lang;
}

/* " (C, shell)" or "" */
static void langs_text(struct buf *b, jv langs)
{
	jv_array_foreach(langs, i, l) {
		buf_addf(b, "%s%s", i ? ", " : " (", lang_name(jv_string_value(l)));
		jv_free(l);
	}
	if (jv_array_length(jv_copy(langs)) > 0)
		buf_addch(b, ')');
}

/* Tags "lang:c" … and the findings' rules. */
static jv scan_tags(jv tags, const struct run_scan *r)
{
	char t[64];

	jv_array_foreach(r->langs, i, l) {
		snprintf(t, sizeof t, "lang:%s", jv_string_value(l));
		tags = tags_add(tags, t);
		jv_free(l);
		(void)i;
	}
	jv_array_foreach(r->rules, i, x) {
		tags = tags_add(tags, jv_string_value(x));
		jv_free(x);
		(void)i;
	}
	return tags;
}

/* The content of a whole run's episode. */
static void run_text(struct buf *b, const struct run_scan *r, jv ep)
{
	jv out = json_get(ep, "outcome"), acts = json_get(ep, "actions"), tools = jv_array();
	int nb = jv_array_length(jv_copy(r->bounces)), na = jv_array_length(jv_copy(acts));

	buf_addf(b, "Run of \"%s\"", r->task ? r->task : "(no task)");
	langs_text(b, r->langs);
	if (r->phases.len)
		buf_addf(b, ": %s", r->phases.buf);
	if (json_get_bool(out, "success", false)) {
		buf_adds(b, "; completed");
	} else {
		const char *why = r->end_reason ? r->end_reason : json_get_str(out, "error");

		buf_addf(b, "; %s: ", r->end_status ? r->end_status : "failed");
		add_cut(b, why ? why : "no reason given", CUT_REASON, false);
	}
	/* what the human who said no taught: the gate's note */
	if (json_get_str(r->end_gate, "note")) {
		buf_addf(b, " (gate %s, the human's note: \"", json_get_str(r->end_gate, "gate") ?
			 json_get_str(r->end_gate, "gate") : "?");
		add_cut(b, json_get_str(r->end_gate, "note"), CUT_NOTE, false);
		buf_adds(b, "\")");
	}
	buf_addf(b, " after %d bounce%s", nb, nb == 1 ? "" : "s");
	jv_array_foreach(r->bounces, i, bn) {
		buf_adds(b, i ? ". Then " : ". ");
		bounce_text(b, bn);
		jv_free(bn);
	}
	jv_array_foreach(acts, i, a) {
		tools = tags_add(tools, json_get_str(a, "tool"));
		jv_free(a);
		(void)i;
	}
	buf_addf(b, ". %d tool call%s", na, na == 1 ? "" : "s");
	jv_array_foreach(tools, i, t) {
		buf_addf(b, "%s%s", i ? ", " : " (", jv_string_value(t));
		jv_free(t);
	}
	if (jv_array_length(jv_copy(tools)) > 0)
		buf_addch(b, ')');
	jv_free(tools);
	jv_free(acts);
	jv_free(out);
}

/*
 * A memory an earlier end of the run trace_id stored (its source; archived
 * ones too) of type whose episode `is` says is the one sought (key, what
 * it compares; borrowed): its id in id, "" when there is none.  A failed
 * run resumed to a new end is reflected on again, and its episode and the
 * lessons of its bounces are those it has already.
 */
static int run_memory(char id[ULID_LEN + 1], struct memory *m, const char *trace_id, const char *type,
		      bool (*is)(jv episode, jv key), jv key)
{
	struct db_stmt *s;
	int step, rc = 0;

	id[0] = '\0';
	if (!trace_id)
		return 0;
	if (mem_prepare(&s, m, "SELECT id, episode FROM memories WHERE source = ? AND type = ? ORDER BY seq") < 0)
		return -1;
	db_bind_text(s, 1, trace_id);
	db_bind_text(s, 2, type);
	while ((step = db_step(s)) == DB_ROW) {
		const char *text = db_col_text(s, 1);
		jv ep = text ? json_parse(text, strlen(text)) : jv_null();
		bool found = is(ep, key);

		jv_free(ep);
		if (found) {
			snprintf(id, ULID_LEN + 1, "%s", db_col_text(s, 0));
			break;
		}
	}
	if (step != DB_ROW && step != DB_DONE)
		rc = mem_fail(m, "cannot read the memories of run '%s'", trace_id);
	db_finalize(s);
	return rc;
}

/* A whole run's episode (input.phase "run"). */
static bool is_run_episode(jv ep, jv key)
{
	jv in = json_get(ep, "input");
	const char *phase = json_get_str(in, "phase");
	bool yes = phase && strcmp(phase, "run") == 0;

	(void)key;
	jv_free(in);
	return yes;
}

/* The lesson of the bounce key: the same phase sent the same implement
 * attempt back, its n-th time. */
static bool is_bounce_lesson(jv ep, jv key)
{
	jv b = json_get(ep, "bounce");
	const char *from = json_get_str(b, "from"), *want = json_get_str(key, "from");
	bool yes = from && want && strcmp(from, want) == 0 &&
		   json_get_num(b, "n", -1) == json_get_num(key, "n", -2) &&
		   json_get_num(b, "attempt", -1) == json_get_num(key, "attempt", -2);

	jv_free(b);
	return yes;
}

/* mem (consumed) as the run's memory id already is: its text, tags and
 * episode (its confidence is the higher of the two: signals may have
 * raised it; a lesson now fixed starts higher). */
static int run_memory_update(struct memory *m, const char *id, jv mem)
{
	jv cur, ch = jv_object();
	int rc = memory_get(&cur, m, id);

	if (rc == 0 && jv_get_kind(cur) == JV_KIND_NULL)
		rc = MEMORY_NOT_FOUND;  /* (deleted since run_memory found it) */
	if (rc == 0) {
		double now = json_get_num(cur, "confidence", 0), want = json_get_num(mem, "confidence", 0);

		ch = json_set(ch, "content", json_get(mem, "content"));
		ch = json_set(ch, "context", json_get(mem, "context"));
		ch = json_set(ch, "tags", json_get(mem, "tags"));
		ch = json_set(ch, "episode", json_get(mem, "episode"));
		ch = json_set(ch, "confidence", jv_number(want > now ? want : now));
		rc = memory_update(m, id, ch);
		ch = jv_null();
	}
	jv_free(cur);
	jv_free(ch);
	jv_free(mem);
	return rc == 0 ? 0 : rc == MEMORY_NOT_FOUND ? forge_error("memory '%s' is gone", id) : -1;
}

int memory_record_episode(char id_out[ULID_LEN + 1], bool *updated, struct memory *m, const char *trace_id,
			  jv events)
{
	struct buf b = BUF_INIT;
	jv tags = jv_array(), ep, mem;
	int rc;

	if (jv_get_kind(events) != JV_KIND_ARRAY || jv_array_length(jv_copy(events)) == 0) {
		jv_free(events);
		return forge_error("an episode needs at least one event");
	}
	ep = episode_of(events, &tags);
	jv in = json_get(ep, "input"), out = json_get(ep, "outcome"), acts = json_get(ep, "actions");
	int na = jv_array_length(jv_copy(acts));
	const char *phase = json_get_str(in, "phase"), *task = json_get_str(in, "task");
	bool whole_run = strcmp(phase, "run") == 0;
	struct run_scan r;

	run_scan(&r, events);
	jv_free(events);
	if (strcmp(phase, "run") == 0) {
		run_text(&b, &r, ep);
		tags = scan_tags(tags, &r);
		ep = json_set(ep, "phases", jv_string(r.phases.buf ? r.phases.buf : ""));
		ep = json_set(ep, "bounce_details", jv_copy(r.bounces));
	} else {
		buf_addf(&b, "%s phase for \"%s\": ", phase, task ? task : "(no task)");
	}
	if (strcmp(phase, "run") == 0) {
		/* run_text said it all */
	} else if (na == 0) {
		buf_adds(&b, "no actions");
	} else if (na <= 5) {
		jv_array_foreach(acts, i, a) {
			const char *tool = json_get_str(a, "tool");

			buf_addf(&b, "%s%s(%s)", i ? " -> " : "", json_get_str(a, "type"), tool ? tool : "N/A");
			jv_free(a);
		}
	} else {
		buf_addf(&b, "%d actions", na);
	}
	if (strcmp(phase, "run") == 0)
		;
	else if (json_get_bool(out, "success", false))
		buf_adds(&b, " -> succeeded");
	else
		buf_addf(&b, " -> failed: %s", json_get_str(out, "error") ? json_get_str(out, "error") : "no error message");
	jv cost = json_get(ep, "cost");
	char usd[MONEY_LEN];

	buf_addf(&b, ". Duration: %.0fs, Cost: $%s", json_get_num(ep, "duration_ms", 0) / 1000,
		 money_fmt(usd, sizeof usd, json_get_num(cost, "usd", 0)));
	cut_content(&b);
	mem = jv_object();
	mem = json_set(mem, "type", jv_string("episodic"));
	mem = json_set(mem, "content", jv_string(b.buf));
	buf_reset(&b);
	if (strcmp(phase, "run") == 0)
		buf_addf(&b, "forge run: %s", task ? task : "(no task)");
	else
		buf_addf(&b, "%s phase: %s", phase, task ? task : "(no task)");
	langs_text(&b, r.langs);
	run_scan_release(&r);
	mem = json_set(mem, "context", jv_string(b.buf));
	mem = json_set(mem, "confidence", jv_number(MEMORY_CONF_LLM));
	mem = json_set(mem, "source", json_str_or_null(trace_id));
	mem = json_set(mem, "tags", tags);
	mem = json_set(mem, "episode", ep);
	jv_free(cost);
	jv_free(in);
	jv_free(out);
	jv_free(acts);
	/* one episode a run: an earlier end's is rewritten for this one */
	char had[ULID_LEN + 1] = "";
	bool stored = false;

	if (updated)
		*updated = false;
	if (whole_run && (rc = run_memory(had, m, trace_id, "episodic", is_run_episode, jv_null())) < 0) {
		jv_free(mem);
	} else if (had[0]) {
		if ((rc = run_memory_update(m, had, mem)) == 0 && id_out)
			memcpy(id_out, had, sizeof had);
		if (updated)
			*updated = rc == 0;
	} else {
		rc = mem_store_once(id_out, &stored, m, mem);
		if (updated)
			*updated = rc == 0 && !stored;
	}
	buf_release(&b);
	return rc;
}

/* ---- lessons: what bounced a run back to implement, and what fixed it ---- */

#define LESSON_CONF_FIXED 0.7   /* the phase that said no then passed */

static jv lesson_of(const struct run_scan *r, jv bounce, const char *trace_id)
{
	struct buf b = BUF_INIT;
	struct run_scan one = { .langs = jv_array(), .rules = jv_array() };
	const char *from = json_get_str(bounce, "from"), *after = json_get_str(bounce, "after");
	bool fixed = after && strcmp(after, "ok") == 0;
	jv ev = as_array(json_get(bounce, "evidence")), tags = jv_array(), mem = jv_object(), ep = jv_object();

	/* the languages and rules of this bounce's own evidence, else the run's */
	jv_array_foreach(ev, i, e) {
		note_lang(&one, json_get_str(e, "file"));
		if (json_get_str(e, "rule"))
			one.rules = tags_add(one.rules, json_get_str(e, "rule"));
		if (json_get_str(e, "category"))
			tags = tags_add(tags, json_get_str(e, "category"));
		jv_free(e);
		(void)i;
	}
	if (jv_array_length(jv_copy(one.langs)) == 0) {
		jv_free(one.langs);
		one.langs = jv_copy(r->langs);
	}
	buf_adds(&b, "Lesson for implement");
	langs_text(&b, one.langs);
	buf_addf(&b, " from the run \"%s\": ", r->task ? r->task : "(no task)");
	bounce_text(&b, bounce);
	buf_addf(&b, ". Outcome: %s", fixed ? "fixed" : "not fixed");
	if (r->end_status)
		buf_addf(&b, "; the run %s", r->end_status);
	buf_addch(&b, '.');
	cut_content(&b);
	mem = json_set(mem, "type", jv_string("semantic"));
	mem = json_set(mem, "content", jv_string(b.buf));
	buf_reset(&b);
	buf_addf(&b, "implement phase: %s (a %s %s", r->task ? r->task : "(no task)", from,
		 strcmp(from, "test") == 0 ? "failure" : "finding");
	jv_array_foreach(one.langs, i, l) {
		buf_addf(&b, "%s%s", i ? ", " : " in ", lang_name(jv_string_value(l)));
		jv_free(l);
	}
	buf_addch(&b, ')');
	mem = json_set(mem, "context", jv_string(b.buf));
	tags = tags_add(tags_add(tags_add(tags, "lesson"), "implement"), from);
	tags = tags_add(scan_tags(tags, &one), fixed ? "fixed" : "unresolved");
	mem = json_set(mem, "tags", tags);
	mem = json_set(mem, "confidence", jv_number(fixed ? LESSON_CONF_FIXED : MEMORY_CONF_LLM));
	mem = json_set(mem, "source", json_str_or_null(trace_id));
	ep = json_set(ep, "input", json_set(json_set(jv_object(), "task", json_str_or_null(r->task)),
					    "phase", jv_string("implement")));
	ep = json_set(ep, "bounce", jv_copy(bounce));
	ep = json_set(ep, "outcome", json_set(jv_object(), "success", jv_bool(fixed)));
	mem = json_set(mem, "episode", ep);
	jv_free(ev);
	jv_free(one.langs);
	jv_free(one.rules);
	buf_release(&b);
	return mem;
}

/* The lesson of bounce bn (borrowed): stored, or (the run's earlier end
 * stored it) rewritten; its id into *ids or *updated. */
static int record_lesson(jv *ids, jv *updated, struct memory *m, const char *trace_id,
			 const struct run_scan *r, jv bn)
{
	char id[ULID_LEN + 1], had[ULID_LEN + 1];
	bool stored = false;
	int rc = run_memory(had, m, trace_id, "semantic", is_bounce_lesson, bn);

	if (rc < 0)
		return -1;
	if (had[0]) {
		if (run_memory_update(m, had, lesson_of(r, bn, trace_id)) < 0)
			return -1;
		*updated = jv_array_append(*updated, jv_string(had));
		return 0;
	}
	if (mem_store_once(id, &stored, m, lesson_of(r, bn, trace_id)) < 0)
		return -1;
	if (stored)
		*ids = jv_array_append(*ids, jv_string(id));
	else
		*updated = jv_array_append(*updated, jv_string(id));
	return 0;
}

int memory_record_lessons(jv *ids, jv *updated, struct memory *m, const char *trace_id, jv events)
{
	struct run_scan r;
	jv again = jv_array();
	int rc = 0;

	*ids = jv_array();
	if (jv_get_kind(events) != JV_KIND_ARRAY) {
		jv_free(events);
		if (updated)
			*updated = again;
		else
			jv_free(again);
		return forge_error("lessons need an array of events");
	}
	run_scan(&r, events);
	jv_array_foreach(r.bounces, i, bn) {
		if (rc == 0 && record_lesson(ids, &again, m, trace_id, &r, bn) < 0)
			rc = -1;
		jv_free(bn);
		(void)i;
	}
	if (updated)
		*updated = again;
	else
		jv_free(again);
	jv_free(events);
	run_scan_release(&r);
	return rc < 0 ? -1 : jv_array_length(jv_copy(*ids));
}

/* ---- procedures ------------------------------------------------------ */

int memory_learn_procedure(char id_out[ULID_LEN + 1], struct memory *m, const char *trigger,
			   jv steps, const char *context, jv tags)
{
	struct buf b = BUF_INIT;
	jv mem;
	int rc;

	if (!trigger || !*trigger || jv_get_kind(steps) != JV_KIND_ARRAY) {
		jv_free(steps);
		jv_free(tags);
		return forge_error("a procedure needs a trigger and an array of steps");
	}
	buf_addf(&b, "When %s:", trigger);
	jv_array_foreach(steps, i, st) {
		const char *d = jv_get_kind(st) == JV_KIND_STRING ? jv_string_value(st) :
				json_get_str(st, "description");
		const char *tool = jv_get_kind(st) == JV_KIND_OBJECT ? json_get_str(st, "tool") : NULL;
		double order = jv_get_kind(st) == JV_KIND_OBJECT ? json_get_num(st, "order", i + 1) : i + 1;

		buf_addf(&b, "\n%.0f. %s", order, d ? d : "");
		if (tool)
			buf_addf(&b, " (using %s)", tool);
		jv_free(st);
	}
	mem = jv_object();
	mem = json_set(mem, "type", jv_string("procedural"));
	mem = json_set(mem, "content", jv_string(b.buf));
	mem = json_set(mem, "context", jv_string(context ? context : trigger));
	mem = json_set(mem, "trigger", jv_string(trigger));
	mem = json_set(mem, "steps", steps);
	mem = json_set(mem, "tags", jv_get_kind(tags) == JV_KIND_ARRAY ? tags : (jv_free(tags), jv_array()));
	mem = json_set(mem, "confidence", jv_number(MEMORY_CONF_LLM));
	mem = json_set(mem, "success_rate", jv_number(1));
	mem = json_set(mem, "frequency", jv_number(0));
	rc = memory_store(id_out, m, mem);
	buf_release(&b);
	return rc;
}

int memory_record_outcome(struct memory *m, const char *id, bool success)
{
	jv mem, ch;
	int rc;

	if ((rc = memory_get(&mem, m, id)) < 0)
		return -1;
	if (jv_get_kind(mem) == JV_KIND_NULL)
		return MEMORY_NOT_FOUND;
	double n = json_get_num(mem, "frequency", 0), rate = json_get_num(mem, "success_rate", 0);
	/* the running mean over every recorded application */
	double next = (rate * n + (success ? 1 : 0)) / (n + 1);

	jv_free(mem);
	ch = jv_object();
	ch = json_set(ch, "frequency", jv_number(n + 1));
	ch = json_set(ch, "success_rate", jv_number(round(next * 1e6) / 1e6));
	rc = memory_update(m, id, ch);
	if (rc)
		return rc;
	return memory_adjust(NULL, m, id, success ? MEMORY_DELTA_APPLIED : MEMORY_DELTA_DISMISSED,
			     success ? "applied" : "failed", NULL);
}

int memory_record_gate_edit(char id_out[ULID_LEN + 1], struct memory *m, const char *gate_id,
			    const char *edits, const char *trace_id)
{
	struct buf b = BUF_INIT;
	jv mem = jv_object();
	int rc;

	if (!gate_id || !*gate_id || !edits || !*edits) {
		jv_free(mem);
		return forge_error("a gate edit needs the gate id and the edits");
	}
	buf_addf(&b, "Human approved gate %s but made edits: %s", gate_id, edits);
	mem = json_set(mem, "type", jv_string("procedural"));
	mem = json_set(mem, "content", jv_string(b.buf));
	buf_reset(&b);
	buf_addf(&b, "gate %s", gate_id);
	mem = json_set(mem, "context", jv_string(b.buf));
	mem = json_set(mem, "trigger", jv_string(b.buf));
	mem = json_set(mem, "confidence", jv_number(MEMORY_CONF_HUMAN));
	mem = json_set(mem, "source", jv_string("human"));
	mem = json_set(mem, "tags", JV_ARRAY(jv_string("gate"), jv_string(gate_id), jv_string("human-edit")));
	if (trace_id) {
		jv ep = jv_object();

		ep = json_set(ep, "trace_id", jv_string(trace_id));
		ep = json_set(ep, "gate_id", jv_string(gate_id));
		mem = json_set(mem, "steps", JV_ARRAY(ep));
	}
	rc = memory_store(id_out, m, mem);
	buf_release(&b);
	return rc;
}

/* ---- patterns ------------------------------------------------------- */

int memory_patterns(jv *out, struct memory *m, int limit)
{
	struct db_stmt *s;
	int step, rc = 0;

	*out = jv_array();
	if (mem_prepare(&s, m, "SELECT id, type, trigger_text, pattern, resolution, frequency, "
			"success_rate, confidence, last_seen, memory_id FROM patterns "
			"ORDER BY confidence DESC, frequency DESC, id LIMIT ?") < 0)
		return -1;
	db_bind_int64(s, 1, limit > 0 ? limit : -1);
	while ((step = db_step(s)) == DB_ROW) {
		jv p = jv_object();

		p = json_set(p, "id", jv_string(db_col_text(s, 0)));
		p = json_set(p, "type", jv_string(db_col_text(s, 1)));
		p = json_set(p, "trigger", jv_string(db_col_text(s, 2)));
		p = json_set(p, "pattern", jv_string(db_col_text(s, 3)));
		p = json_set(p, "resolution", json_str_or_null(db_col_text(s, 4)));
		p = json_set(p, "frequency", jv_number((int)db_col_int64(s, 5)));
		p = json_set(p, "success_rate", db_col_null(s, 6) ? jv_null() :
			     jv_number(db_col_double(s, 6)));
		p = json_set(p, "confidence", jv_number(db_col_double(s, 7)));
		p = json_set(p, "last_seen", mem_time_json(db_col_int64(s, 8)));
		p = json_set(p, "memory_id", json_str_or_null(db_col_text(s, 9)));
		*out = jv_array_append(*out, p);
	}
	if (step != DB_DONE)
		rc = mem_fail(m, "cannot list patterns");
	db_finalize(s);
	return rc;
}

int memory_pattern_update(struct memory *m, const char *id, bool applied, int success)
{
	struct db_stmt *s;
	double delta = 0;
	int rc = 0;

	if (applied && success == 1)
		delta = MEMORY_DELTA_APPLIED;
	else if (applied && success == 0)
		delta = MEMORY_DELTA_DISMISSED;
	/* success_rate: the running mean over frequency uses; unchanged when unknown
	 * (0.0: a pattern without one must not divide as integers on SQLite) */
	/* (PostgreSQL: greatest/least, round() of a numeric) */
	if (mem_prepare(&s, m, m->pg ? "UPDATE patterns SET "
			"success_rate = CASE WHEN ?1 < 0 THEN success_rate ELSE "
			"(coalesce(success_rate, 0.0) * frequency + ?1) / (frequency + 1) END, "
			"frequency = frequency + 1, confidence = round(CAST(greatest(0, least(1, "
			"confidence + CAST(?2 AS DOUBLE PRECISION))) AS NUMERIC), 6), last_seen = ?3 "
			"WHERE id = ?4" : "UPDATE patterns SET "
			"success_rate = CASE WHEN ?1 < 0 THEN success_rate ELSE "
			"(coalesce(success_rate, 0.0) * frequency + ?1) / (frequency + 1) END, "
			"frequency = frequency + 1, "
			"confidence = round(max(0, min(1, confidence + ?2)), 6), last_seen = ?3 "
			"WHERE id = ?4") < 0)
		return -1;
	db_bind_int64(s, 1, success);
	db_bind_double(s, 2, delta);
	db_bind_int64(s, 3, memory_now(m));
	db_bind_text(s, 4, id);
	if (db_step(s) != DB_DONE)
		rc = mem_fail(m, "cannot update pattern '%s'", id);
	else if (!db_changes(s))
		rc = MEMORY_NOT_FOUND;
	db_finalize(s);
	return rc;
}
