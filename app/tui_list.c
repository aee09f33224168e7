/*
 * tui_list.c - the run list of `forge tui` (tui.h): every run of the store,
 * newest first, with its status, phase, cost, age and whether a gate waits.
 */
#include "app/tui.h"

#include "app/cli.h"
#include "app/runview.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/money.h"
#include "engine/gates.h"
#include "store/store.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long ago iso ("2026-11-28T07:29:54.209Z") was: "12s", "5m", "3h", "2d". */
static void age(char *out, size_t n, const char *iso)
{
	struct tm tm = { 0 };
	const char *end = iso ? strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	long s;

	if (!end) {
		snprintf(out, n, "-");
		return;
	}
	s = (long)difftime(time(NULL), timegm(&tm));
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(out, n, "%lds", s);
	else if (s < 3600)
		snprintf(out, n, "%ldm", s / 60);
	else if (s < 86400)
		snprintf(out, n, "%ldh", s / 3600);
	else
		snprintf(out, n, "%ldd", s / 86400);
}

/* The id of each trace's newest pending gate, by trace id, of gates
 * (borrowed, newest first): a hash, so matching the runs is linear in
 * runs and gates (thousands may wait, read again every second). */
static jv gate_by_trace(jv gates)
{
	jv by = jv_object();

	jv_array_foreach(gates, k, g) {
		const char *tr = json_get_str(g, "trace_id");
		if (tr && !json_has(by, tr))
			by = json_set(by, tr, json_get(g, "id"));
		jv_free(g);
	}
	return by;
}

/* Each run of runs (consumed) with the status forge status shows
 * (runview_shown(): "interrupted" when its process is gone) and
 * "pending_gate": the id of its newest pending gate (by, borrowed:
 * gate_by_trace()), or null. */
static jv with_gates(struct store *st, jv runs, jv by)
{
	jv out = jv_array();

	jv_array_foreach(runs, i, r) {
		const char *tr = json_get_str(r, "trace_id");
		jv gate = tr && json_has(by, tr) ? json_get(by, tr) : jv_null();
		out = jv_array_append(out, json_set(runview_shown(st, r), "pending_gate", gate));
	}
	jv_free(runs);
	return out;
}

/* runs (consumed) with, after them, the older runs a pending gate of
 * gates (borrowed, newest first) waits in, and run keep (or NULL): the
 * list shows the newest TUI_RUNS_SHOWN, and neither a run waiting for an
 * answer nor the selected one must fall off its end (then the selection
 * would be on another run).  The runs listed are a hash: linear in runs
 * and gates. */
static jv with_waiting(struct store *st, jv runs, jv gates, const char *keep)
{
	jv listed = jv_object();

	jv_array_foreach(runs, i, r) {
		if (json_get_str(r, "trace_id"))
			listed = json_set(listed, json_get_str(r, "trace_id"), jv_true());
		jv_free(r);
	}
	jv_array_foreach(gates, k, g) {
		const char *tr = json_get_str(g, "trace_id");
		jv run = jv_null();

		if (tr && !json_has(listed, tr) && store_run_get(&run, st, tr) == 0 && jv_get_kind(run) == JV_KIND_OBJECT) {
			listed = json_set(listed, tr, jv_true());
			runs = jv_array_append(runs, run);
		} else {
			jv_free(run);
		}
		jv_free(g);
	}
	jv run = jv_null();
	if (keep && !json_has(listed, keep) && store_run_get(&run, st, keep) == 0 && jv_get_kind(run) == JV_KIND_OBJECT)
		runs = jv_array_append(runs, run);
	else
		jv_free(run);
	jv_free(listed);
	return runs;
}

int tui_list_load(struct tui *t)
{
	jv runs, gates;
	char *keep = tui_list_selected(t) ? xstrdup(tui_list_selected(t)) : NULL;

	if (store_runs_list(&runs, t->ses->store, TUI_RUNS_SHOWN) < 0 ||
	    store_runs_count(&t->runs_total, t->ses->store) < 0) {
		free(keep);
		return -1;
	}
	if (gate_list(&gates, t->ses->store, NULL, true) < 0) {
		jv_free(runs);
		free(keep);
		return -1;
	}
	jv by = gate_by_trace(gates);
	runs = with_waiting(t->ses->store, runs, gates, keep);
	jv_free(t->runs);
	t->runs = with_gates(t->ses->store, runs, by);
	jv_free(by);
	jv_free(gates);
	/* the selection stays on its run when new runs come in above it */
	bool kept = false;
	jv_array_foreach(t->runs, i, r) {
		if (keep && !strcmp(json_get_str(r, "trace_id"), keep)) {
			t->sel = i;
			kept = true;
		}
		jv_free(r);
	}
	/* it is gone from the store: the row selected now is another run's */
	if (keep && !kept)
		tui_say(t, "run %s is no longer in the store", keep);
	free(keep);
	tui_list_move(t, 0);
	return 0;
}

const char *tui_list_selected(const struct tui *t)
{
	if (jv_get_kind(t->runs) != JV_KIND_ARRAY || t->sel < 0 || t->sel >= jv_array_length(jv_copy(t->runs)))
		return NULL;
	/* the array holds the object: the string stays while t->runs does */
	jv r = jv_array_get(jv_copy(t->runs), t->sel);
	const char *trace = json_get_str(r, "trace_id");
	jv_free(r);
	return trace;
}

/* The list's keys, on its footer. */
static const char list_keys[] = " q quit  Enter open  g gate  : commands  m models";

void tui_list_move(struct tui *t, int delta)
{
	int n = jv_get_kind(t->runs) == JV_KIND_ARRAY ? jv_array_length(jv_copy(t->runs)) : 0;
	/* below the two head rows, above the footer and its message */
	int rows = LINES - 2 - tui_footer_rows(t, list_keys);

	t->sel += delta;
	if (t->sel >= n)
		t->sel = n - 1;
	if (t->sel < 0)
		t->sel = 0;
	if (t->sel < t->top)
		t->top = t->sel;
	if (rows > 0 && t->sel >= t->top + rows)
		t->top = t->sel - rows + 1;
}

static enum tui_attr status_attr(const char *status, bool gate)
{
	enum run_status s = run_status_of(status);

	if (gate || !strcmp(status, "interrupted"))
		return TUI_WARN;   /* waits for a person: a gate, forge resume */
	if (s == RUN_COMPLETED)
		return TUI_OK;
	if (s == RUN_FAILED || s == RUN_CANCELLED)
		return TUI_BAD;
	return TUI_PLAIN;
}

static void draw_row(const struct tui *t, int y, jv r, bool selected)
{
	char line[1024], when[32], usd[MONEY_LEN];
	bool gate = json_get_str(r, "pending_gate") != NULL;
	const char *status = json_get_str(r, "status") ? json_get_str(r, "status") : "?";

	age(when, sizeof when, json_get_str(r, "started_at"));
	snprintf(line, sizeof line, "%-26s  %-11s %-4s %-10s %9s  %4s  %s", json_get_str(r, "trace_id"), status,
		 gate ? "gate" : "", json_get_str(r, "current_phase") ? json_get_str(r, "current_phase") : "-",
		 money_fmt(usd, sizeof usd, json_get_num(r, "total_cost_usd", 0)), when, json_get_str(r, "task") ? json_get_str(r, "task") : "");
	tui_put(t, y, 0, COLS, selected ? TUI_SELECTED : status_attr(status, gate), line);
}

void tui_list_draw(struct tui *t)
{
	char head[256];
	int n = jv_get_kind(t->runs) == JV_KIND_ARRAY ? jv_array_length(jv_copy(t->runs)) : 0;

	if (t->runs_total > n)
		snprintf(head, sizeof head, "forge tui: %d of %ld runs (the newest, and those at a gate) in %s",
			 n, t->runs_total, store_path(t->ses->store));
	else
		snprintf(head, sizeof head, "forge tui: %d run%s in %s", n, n == 1 ? "" : "s",
			 store_path(t->ses->store));
	tui_put(t, 0, 0, COLS, TUI_HEAD, head);
	tui_put(t, 1, 0, COLS, TUI_DIM, "TRACE                       STATUS           PHASE           COST   AGE  TASK");
	if (n == 0)
		tui_put(t, 2, 0, COLS, TUI_PLAIN, "no runs yet: : opens the palette, run starts one");
	/* a message on a row of its own: the selection stays above it */
	tui_list_move(t, 0);
	for (int i = t->top, y = 2; i < n && y < LINES - tui_footer_rows(t, list_keys); i++, y++) {
		jv r = jv_array_get(jv_copy(t->runs), i);
		draw_row(t, y, r, i == t->sel);
		jv_free(r);
	}
	tui_footer(t, list_keys);
}
