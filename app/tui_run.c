/*
 * tui_run.c - the run view of `forge tui` (tui.h): the selected run as
 * runview_load() (runview.h) reads it, with the newest checkpoint's nodes
 * and budget and the model's replies (llm_log_replies()), as lines.
 */
#include "app/tui.h"

#include "app/cli.h"
#include "app/runview.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/money.h"
#include "llm/llm.h"
#include "store/live.h"
#include "store/store.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPLIES = 40 };   /* the model's newest replies shown */
enum { LIVE_LINES = 8 }; /* the last lines of a call in flight shown */

__attribute__((format(printf, 3, 4)))
static void line(jv *lines, enum tui_attr a, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	/* one screen line per text line */
	for (char *p = b.buf, *nl; p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		*lines = jv_array_append(*lines, JV_ARRAY(jv_number(a), jv_string(p)));
	}
	buf_release(&b);
}

/* v (consumed) when it is an array, else an empty one: a record's list may
 * be null or absent (a failed model call's tool_calls, a tests result
 * without failures, a review without findings), and jv_array_foreach
 * asserts on anything but an array. */
static jv array_or_empty(jv v)
{
	if (jv_get_kind(v) == JV_KIND_ARRAY)
		return v;
	jv_free(v);
	return jv_array();
}

static const char *str_or(jv v, const char *key, const char *dflt)
{
	return json_get_str(v, key) ? json_get_str(v, key) : dflt;
}

/* run, status at phase, cost against the budget, nodes, pending gates. */
static void summary(jv *l, jv view, jv cp)
{
	jv run = json_get(view, "run"), nodes = json_get(cp, "nodes"), gates = array_or_empty(json_get(view, "gates"));
	jv bu = json_get_path(cp, "budget.usd");
	double budget = jv_get_kind(bu) == JV_KIND_NUMBER ? jv_number_value(bu) : -1;
	struct buf b = BUF_INIT;

	line(l, TUI_HEAD, "run      %s", str_or(view, "trace_id", "?"));
	line(l, TUI_PLAIN, "task     %s", str_or(run, "task", ""));
	line(l, TUI_PLAIN, "status   %s%s%s", str_or(view, "status", "?"), json_get_str(run, "current_phase") ? " at " : "",
	     str_or(run, "current_phase", ""));
	if (budget >= 0)
		buf_addf(&b, " of $%.2f budget", budget);
	char usd[MONEY_LEN];

	line(l, TUI_PLAIN, "cost     $%s%s (%.0f tokens)", money_fmt(usd, sizeof usd, json_get_num(run, "total_cost_usd", 0)),
	     b.buf,
	     json_get_num(run, "total_tokens", 0));
	if (json_get_str(run, "error") && *json_get_str(run, "error"))
		line(l, TUI_PLAIN, "reason   %s", json_get_str(run, "error"));
	buf_reset(&b);
	if (jv_get_kind(nodes) == JV_KIND_OBJECT) {
		jv_object_foreach(nodes, id, st) {
			buf_addf(&b, "%s%s %s", b.len ? "  " : "", jv_string_value(id),
				 jv_get_kind(st) == JV_KIND_STRING ? jv_string_value(st) : "?");
			jv_free(id);
			jv_free(st);
		}
		line(l, TUI_PLAIN, "nodes    %s", b.buf);
	}
	jv_array_foreach(gates, i, g) {
		bool pending = !strcmp(str_or(g, "status", ""), "pending");
		line(l, pending ? TUI_WARN : TUI_DIM, "gate     %s %s%s: %s", str_or(g, "gate", "?"), str_or(g, "status", "?"),
		     pending ? " (g answers it)" : "", str_or(g, "prompt", ""));
		jv_free(g);
	}
	buf_release(&b);
	jv_free(bu);
	jv_free(run);
	jv_free(nodes);
	jv_free(gates);
}

/* Each phase's cost and the timeline (runview_load()'s). */
static void timeline(jv *l, jv view)
{
	jv pc = array_or_empty(json_get(view, "phase_cost")), tl = array_or_empty(json_get(view, "timeline"));
	char when[32], usd[MONEY_LEN];

	line(l, TUI_HEAD, "phases");
	jv_array_foreach(pc, i, p) {
		line(l, TUI_PLAIN, "  %-10s $%s  %.0f calls  %.0f tokens", str_or(p, "phase", "?"),
		     money_fmt(usd, sizeof usd, json_get_num(p, "usd", 0)),
		     json_get_num(p, "calls", 0), json_get_num(p, "tokens", 0));
		jv_free(p);
	}
	line(l, TUI_HEAD, "timeline");
	jv_array_foreach(tl, i, e) {
		const char *type = str_or(e, "type", "");
		runview_local_time(when, sizeof when, json_get_str(e, "ts"), false);
		line(l, strstr(type, "failed") || strstr(type, "tripped") ? TUI_BAD : TUI_PLAIN, "  %s %-9s %s", when,
		     str_or(e, "phase", ""), str_or(e, "text", ""));
		jv_free(e);
	}
	jv_free(pc);
	jv_free(tl);
}

/* text, each of its lines indented under its reply's heading. */
static void indented(jv *l, const char *text)
{
	char *copy = xstrdup(text);

	for (char *p = copy, *nl; p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		line(l, TUI_PLAIN, "    %s", p);
	}
	free(copy);
}

/* The model's text and the tools it called, reply by reply. */
static void replies(jv *l, jv list)
{
	char when[32];

	line(l, TUI_HEAD, "model");
	jv_array_foreach(list, i, r) {
		jv calls = array_or_empty(json_get(r, "tool_calls"));
		runview_local_time(when, sizeof when, json_get_str(r, "ts"), false);
		line(l, TUI_DIM, "  %s %-9s %s", when, str_or(r, "phase", ""), str_or(r, "model", ""));
		if (json_get_str(r, "text") && *json_get_str(r, "text"))
			indented(l, json_get_str(r, "text"));
		if (json_get_str(r, "error"))
			line(l, TUI_BAD, "  error: %s", json_get_str(r, "error"));
		jv_array_foreach(calls, k, c) {
			char *input = json_dumps(json_get(c, "input"), false);
			line(l, TUI_OK, "  -> %s %.200s", str_or(c, "name", "?"), input);
			free(input);
			jv_free(c);
		}
		jv_free(calls);
		jv_free(r);
	}
}

/* The heading of call c in flight: "model now (PHASE, MODEL)"; a
 * sub-agent's (its span set) as "model now (PHASE › sub-agent SPAN8, MODEL)",
 * PHASE without the "-sub" its calls count under and SPAN8 the span's last 8
 * characters as forge status shows them, so two sub-agents of one phase
 * streaming at once are told apart. */
static void live_heading(jv *l, jv c)
{
	const char *phase = str_or(c, "phase", "?"), *span = json_get_str(c, "span");
	size_t n = strlen(phase), sn = span ? strlen(span) : 0;

	if (!span) {
		line(l, TUI_HEAD, "model now (%s, %s)", phase, str_or(c, "model", "?"));
		return;
	}
	while (n > 4 && !strncmp(phase + n - 4, "-sub", 4))
		n -= 4;
	line(l, TUI_HEAD, "model now (%.*s › sub-agent %s, %s)", (int)n, phase, sn > 8 ? span + sn - 8 : span,
	     str_or(c, "model", "?"));
}

/* The model's text of each call in flight (its process alive), its last
 * LIVE_LINES lines as it streams; how many were shown. */
static int live_calls(jv *l, jv list)
{
	int shown = 0;

	jv_array_foreach(list, i, c) {
		const char *text = str_or(c, "text", "");
		if (!json_get_bool(c, "alive", false)) {
			jv_free(c);
			continue;   /* its process died in the call */
		}
		live_heading(l, c);
		/* the start of the last LIVE_LINES lines */
		const char *from = text + strlen(text);
		for (int n = 0; from > text && n <= LIVE_LINES;)
			if (*--from == '\n' && ++n > LIVE_LINES)
				from++;
		indented(l, *from ? from : "...");
		shown++;
		jv_free(c);
	}
	return shown;
}

/* The review's findings and the tests' results, from the view. */
static void findings_tests(jv *l, jv view)
{
	jv review = json_get(view, "review"), tests = json_get(view, "tests");
	/* (a file's name holding a newline quoted, as git shows it: one line) */
	jv found = term_quote_paths(array_or_empty(json_get(review, "findings")));
	jv sum = json_get(tests, "summary"), failures = array_or_empty(json_get(tests, "failures"));

	if (jv_get_kind(review) == JV_KIND_OBJECT) {
		line(l, TUI_HEAD, "findings (review: %s)", str_or(review, "decision", "?"));
		jv_array_foreach(found, i, f) {
			const char *sev = str_or(f, "severity", "?");
			line(l, !strcmp(sev, "error") || !strcmp(sev, "critical") ? TUI_BAD : TUI_PLAIN, "  %s:%.0f: %s: %s",
			     str_or(f, "file", "-"), json_get_num(f, "line", 0), sev, str_or(f, "message", ""));
			jv_free(f);
		}
	}
	if (jv_get_kind(sum) == JV_KIND_OBJECT) {
		line(l, TUI_HEAD, "tests");
		line(l, json_get_num(sum, "failed", 0) > 0 ? TUI_BAD : TUI_OK, "  %.0f passed, %.0f failed of %.0f",
		     json_get_num(sum, "passed", 0), json_get_num(sum, "failed", 0), json_get_num(sum, "total", 0));
		jv_array_foreach(failures, i, f) {
			line(l, TUI_BAD, "  %s: %s", str_or(f, "name", "?"), str_or(f, "message", ""));
			jv_free(f);
		}
	}
	jv_free(review);
	jv_free(found);
	jv_free(tests);
	jv_free(sum);
	jv_free(failures);
}

int tui_run_load(struct tui *t)
{
	jv view = jv_null(), cp = jv_null(), list = jv_null(), live = jv_null(), l = jv_array();
	int rc = -1;

	if (!t->trace)
		return 0;
	if (runview_load(&view, t->ses->store, NULL, t->trace, false) < 0 ||
	    store_checkpoint_latest(&cp, t->ses->store, t->trace) < 0 ||
	    llm_log_replies(&list, t->ses->store, t->trace, REPLIES) < 0 ||
	    store_live_list(&live, t->ses->store, t->trace) < 0)
		goto out;
	summary(&l, view, cp);
	/* under the summary: in sight without scrolling */
	t->live = live_calls(&l, live) > 0;
	timeline(&l, view);
	findings_tests(&l, view);
	replies(&l, list);
	jv_free(t->lines);
	t->lines = l;
	l = jv_null();
	rc = 0;
out:
	jv_free(l);
	jv_free(view);
	jv_free(cp);
	jv_free(list);
	jv_free(live);
	return rc;
}

/* The run view's keys, on its footer. */
static const char run_keys[] = " q quit  Esc back  g gate  : commands  arrows/PgUp/PgDn scroll";

void tui_run_scroll(struct tui *t, int delta)
{
	int n = jv_get_kind(t->lines) == JV_KIND_ARRAY ? jv_array_length(jv_copy(t->lines)) : 0;
	int rows = LINES - tui_footer_rows(t, run_keys);

	t->scroll += delta;
	if (t->scroll > n - rows)
		t->scroll = n - rows;
	if (t->scroll < 0)
		t->scroll = 0;
}

void tui_run_draw(struct tui *t)
{
	int n = jv_get_kind(t->lines) == JV_KIND_ARRAY ? jv_array_length(jv_copy(t->lines)) : 0;

	for (int i = t->scroll, y = 0; i < n && y < LINES - tui_footer_rows(t, run_keys); i++, y++) {
		jv e = jv_array_get(jv_copy(t->lines), i);
		jv a = jv_array_get(jv_copy(e), 0), s = jv_array_get(jv_copy(e), 1);
		tui_put(t, y, 0, COLS, (enum tui_attr)jv_number_value(a), jv_string_value(s));
		jv_free(a);
		jv_free(s);
		jv_free(e);
	}
	tui_footer(t, run_keys);
}
