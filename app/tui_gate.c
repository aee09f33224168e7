/*
 * tui_gate.c - a pending gate answered in `forge tui` (tui.h): what the
 * gate needs to be decided (gateview_full(): the plan, the diff, the
 * findings, ...), and the decision made as `forge gate approve|reject`
 * makes it (gatedecide_human()).
 */
#include "app/tui.h"

#include "app/cli.h"
#include "app/gatedecide.h"
#include "app/gateview.h"
#include "core/forge.h"
#include "core/json.h"
#include "engine/gates.h"
#include "store/store.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lines of text (borrowed, changed: '\n' become '\0'), *n how many;
 * malloc'd array. */
static char **split(char *text, int *n)
{
	int cap = 16;
	char **v = xcalloc((size_t)cap, sizeof *v);

	*n = 0;
	for (char *p = text, *nl; p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (*n == cap) {
			cap *= 2;
			v = xrealloc(v, (size_t)cap * sizeof *v);
		}
		v[(*n)++] = p;
	}
	return v;
}

/* Show the gate's text until a decision key: 'y', 'n', 'e', or 27 (back). */
static int show(struct tui *t, jv gate, char **v, int n)
{
	int top = 0;
	bool shown = false;
	char head[512];

	snprintf(head, sizeof head, "gate %s (%s) of run %s", json_get_str(gate, "gate"), json_get_str(gate, "id"),
		 json_get_str(gate, "trace_id"));
	for (;;) {
		int rows = LINES - 2;
		erase();
		tui_put(t, 0, 0, COLS, TUI_HEAD, head);
		for (int i = top, y = 1; i < n && y <= rows - 1; i++, y++)
			tui_put(t, y, 0, COLS, TUI_PLAIN, v[i]);
		tui_put(t, LINES - 2, 0, COLS, TUI_WARN, json_get_str(gate, "prompt") ? json_get_str(gate, "prompt") : "");
		tui_footer(t, " y approve  n reject (a note)  e approve with a note  Esc back  arrows scroll");
		refresh();
		/* a decision is a key pressed after the dialog was seen, not
		 * one typed (or pasted) ahead */
		if (!shown)
			flushinp();
		shown = true;
		int c = tui_getch();
		if (tui_stop || c == 3)
			return 27;
		if (c == 'y' || c == 'n' || c == 'e' || c == 27 || c == 'q')
			return c == 'q' ? 27 : c;
		if ((c == KEY_DOWN || c == 'j' || c == KEY_NPAGE) && top < n - 1)
			top += c == KEY_NPAGE ? rows - 2 : 1;
		if ((c == KEY_UP || c == 'k' || c == KEY_PPAGE) && top > 0)
			top -= c == KEY_PPAGE ? rows - 2 : 1;
		if (top >= n)
			top = n - 1;
		if (top < 0)
			top = 0;
		if (c == KEY_RESIZE)
			continue;
	}
}

static void decide(struct tui *t, jv gate, int key)
{
	char *note = NULL;
	const char *id = json_get_str(gate, "id");

	if (key == 'n' || key == 'e') {
		note = tui_read_line(t, key == 'n' ? "why rejected (Enter: no note, Esc: back): " :
						     "note (Enter approves, Esc: back): ");
		if (!note) {
			tui_say(t, "gate %s left waiting", id);
			return;
		}
	}
	if (gatedecide_human(NULL, t->ses->store, t->ses->cfg, "forge-tui", id, key != 'n', note) < 0) {
		tui_say(t, "%s", forge_last_error());
	} else {
		char *next = gatedecide_next(t->ses->store, gate, key != 'n');
		tui_say(t, "%s %s; %s", key == 'n' ? "rejected" : "approved", id, next);
		free(next);
	}
	free(note);
}

void tui_gate_dialog(struct tui *t, const char *trace)
{
	jv gates = jv_null(), gate, state = jv_null();
	int n = 0;

	if (!trace || gate_list(&gates, t->ses->store, trace, true) < 0 || jv_get_kind(gates) != JV_KIND_ARRAY ||
	    jv_array_length(jv_copy(gates)) == 0) {
		tui_say(t, "no gate is waiting%s%s", trace ? " in run " : "", trace ? trace : "");
		jv_free(gates);
		return;
	}
	gate = jv_array_get(jv_copy(gates), 0);
	store_checkpoint_latest(&state, t->ses->store, trace);
	/* the renderers take the gate as configured: its name is its id */
	jv as_fired = json_set(json_set(jv_object(), "id", json_get(gate, "gate")), "prompt", json_get(gate, "prompt"));
	char *text = gateview_full(as_fired, state, t->ses->cfg);
	char **v = split(text, &n);
	int key = show(t, gate, v, n);

	if (key != 27)
		decide(t, gate, key);
	free(v);
	free(text);
	jv_free(as_fired);
	jv_free(state);
	jv_free(gate);
	jv_free(gates);
}
