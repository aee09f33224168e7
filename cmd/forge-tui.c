/*
 * forge-tui - `forge tui`: the runs of the store on a full-screen terminal
 * interface (app/tui.h), watched live: runs started elsewhere appear and
 * move, pending gates are answered in place.
 */
#include "app/cli.h"
#include "app/tui.h"
#include "core/forge.h"
#include "core/json.h"
#include "data/config.h"
#include "store/store.h"

#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct cli_spec spec = {
	.name = "forge-tui",
	.synopsis = "[--repo DIR] [--db PATH] [--config PATH]",
	.description = "A full-screen terminal interface on the runs of the database: the list of runs\n"
		       "(status, phase, cost, age, a waiting gate), a live view of one run (its nodes,\n"
		       "phase timeline, the model's replies and tool calls, findings, tests, cost\n"
		       "against budget), pending gates answered in place, a command palette that runs\n"
		       "the forge commands and a model picker that writes each phase's provider and\n"
		       "model (llm.phases.PHASE.{provider,model}) to the project's .forge/config.json.\n"
		       "It reads the store again every second, so runs started elsewhere (another\n"
		       "terminal, CI on the same database) appear and move.  NO_COLOR turns colours off.",
	.extra_help = "Keys:\n"
		      "  Up/Down j/k   choose a run; PgUp/PgDn scroll the run view\n"
		      "  Enter         open the selected run; Esc or Left goes back\n"
		      "  g             the run's pending gate: y approve, n reject, e approve with a note\n"
		      "  : or Ctrl-P   commands: run, resume, cancel, show, merge, gc\n"
		      "  m             the model of each phase\n"
		      "  q or Ctrl-C   quit (the terminal is restored)\n"
		      "Exit status: 0 on quit, 130 when ended by a signal (SIGINT, SIGTERM, SIGHUP) or\n"
		      "when the terminal went away, 2 when stdin or stdout is not a terminal, 5 when the\n"
		      "database cannot be read.\n",
};

static void draw(struct tui *t)
{
	erase();
	if (tui_too_small())
		return;
	if (t->screen == TUI_RUN)
		tui_run_draw(t);
	else
		tui_list_draw(t);
	refresh();
}

/* A read of the store failed: said until one succeeds (or a key). */
static void load_failed(struct tui *t)
{
	tui_say(t, "%s", forge_last_error());
	t->msg_load = true;
}

/* The file SQLite opened for the store ("" for none: PostgreSQL, an
 * in-memory database); borrowed from the connection. */
static const char *db_file(const struct tui *t)
{
	sqlite3 *db = store_db(t->ses->store);
	const char *f = db ? sqlite3_db_filename(db, "main") : NULL;

	return f ? f : "";
}

/* Remember which file the store has open (its device and inode now). */
static void db_remember(struct tui *t)
{
	struct stat sb;

	t->db_file = *db_file(t) && stat(db_file(t), &sb) == 0;
	if (t->db_file) {
		t->db_dev = sb.st_dev;
		t->db_ino = sb.st_ino;
	}
}

/*
 * Whether the store's file is still the one at its path: removed (rm
 * .forge/forge.db*, a gc) or replaced, it stays readable through the open
 * connection, and its old runs would be shown as the store's.  Not: said
 * on the screen (a read failure's message, said again on each tick), and
 * false -- but a new database at the path is opened instead (true).
 */
static bool db_current(struct tui *t)
{
	const char *path = store_path(t->ses->store);
	struct stat sb;
	struct store *st;

	if (!t->db_file)
		return true;
	/* (what happened first, the path last: a long path is what the
	 * screen's width cuts) */
	if (stat(db_file(t), &sb) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			tui_say(t, "database gone, the runs shown are from before: %s", path);
		else
			tui_say(t, "database not checked (%s), the runs shown may be old: %s", strerror(errno),
				path);
		t->msg_load = true;
		return false;
	}
	if (sb.st_dev == t->db_dev && sb.st_ino == t->db_ino)
		return true;
	/* a new database there (also one made after this one was removed) */
	if (store_open(&st, t->ses->db) < 0) {
		tui_say(t, "database replaced, the new one not opened, the runs shown are from before: %s: %s",
			path, forge_last_error());
		t->msg_load = true;
		return false;
	}
	store_free(t->ses->store);
	t->ses->store = st;
	if (t->ses->cfg)
		store_set_lease_ttl(st, config_get_num(t->ses->cfg, "supervisor.lease_ttl_s"));
	db_remember(t);
	/* the old one's runs are not in it: the list from its top */
	jv_free(t->runs);
	t->runs = jv_array();
	t->sel = t->top = 0;
	t->screen = TUI_LIST;
	tui_say(t, "database replaced, the runs shown are the new one's: %s", store_path(st));
	return true;
}

/* Read the store again: the list, and the run on the run view. */
static void reload(struct tui *t)
{
	if (!db_current(t))
		return;
	if (tui_list_load(t) < 0 || (t->screen == TUI_RUN && tui_run_load(t) < 0)) {
		load_failed(t);
	} else if (t->msg_load) {
		t->msg[0] = '\0';
		t->msg_load = false;
	}
}

static void open_run(struct tui *t)
{
	const char *trace = tui_list_selected(t);

	if (!trace)
		return;
	free(t->trace);
	t->trace = xstrdup(trace);
	t->screen = TUI_RUN;
	t->scroll = 0;
	if (tui_run_load(t) < 0)
		load_failed(t);
}

/* One key; false to quit. */
static bool on_key(struct tui *t, int c)
{
	bool run = t->screen == TUI_RUN;

	/* a message says what the last key did: the next one ends it (a
	 * tick or a resize does not) */
	if (c != ERR && c != KEY_RESIZE) {
		t->msg[0] = '\0';
		t->msg_load = false;
	}
	switch (c) {
	case 'q': case 3: return false;
	case KEY_UP: case 'k': run ? tui_run_scroll(t, -1) : tui_list_move(t, -1); break;
	case KEY_DOWN: case 'j': run ? tui_run_scroll(t, 1) : tui_list_move(t, 1); break;
	case KEY_PPAGE: run ? tui_run_scroll(t, -(LINES - 2)) : tui_list_move(t, -(LINES - 3)); break;
	case KEY_NPAGE: run ? tui_run_scroll(t, LINES - 2) : tui_list_move(t, LINES - 3); break;
	case KEY_HOME: run ? tui_run_scroll(t, -1000000) : tui_list_move(t, -1000000); break;
	case KEY_END: case 'G': run ? tui_run_scroll(t, 1000000) : tui_list_move(t, 1000000); break;
	case '\n': case '\r': case KEY_ENTER: case KEY_RIGHT:
		if (!run)
			open_run(t);
		break;
	case 27: case KEY_LEFT: case 'h': case KEY_BACKSPACE: t->screen = TUI_LIST; break;
	case 'g':
		tui_gate_dialog(t, run ? t->trace : tui_list_selected(t));
		reload(t);
		break;
	case ':': case 16:  /* Ctrl-P */
		tui_palette(t);
		reload(t);
		break;
	case 'm':
		tui_models(t);
		break;
	case ERR:           /* a tick: read the store again */
	case 'r':
		reload(t);
		break;
	}
	return true;
}

static int loop(struct tui *t)
{
	reload(t);
	while (!tui_stop) {
		draw(t);
		/* a model call in flight on the run view: its text as it streams */
		timeout(t->screen == TUI_RUN && t->live ? 150 : 1000);
		int c = tui_getch();
		if (tui_stop || !on_key(t, c))
			break;
	}
	/* q and the Ctrl-C key quit; a signal (or the terminal gone) interrupts */
	return tui_stop ? FORGE_EXIT_INTERRUPTED : FORGE_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct session ses;
	struct tui t = { .ses = &ses, .common = &common, .runs = JSON_NULL, .lines = JSON_NULL };
	int first = cli_parse(&common, &spec, argc, argv, NULL, NULL), status;

	if (first < argc)
		cli_usage_error(&spec, "no operands expected");
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "forge-tui: stdin and stdout must be a terminal\n");
		return FORGE_EXIT_USAGE;
	}
	/* read-write: a gate answered here is written to the store */
	status = session_open(&ses, &common, SESSION_CONFIG | SESSION_STORE, jv_null());
	if (status) {
		fprintf(stderr, "forge-tui: %s\n", forge_last_error());
		return status;
	}
	db_remember(&t);
	setlocale(LC_ALL, "");    /* curses draws UTF-8 task texts whole */
	char *dir = cli_self_dir();
	t.bindir = dir ? dir : ".";
	if (tui_screen_open(&t) < 0) {
		fprintf(stderr, "forge-tui: %s\n", forge_last_error());
		status = FORGE_EXIT_USAGE;
	} else {
		status = loop(&t);
		tui_screen_close();
	}
	jv_free(t.runs);
	jv_free(t.lines);
	free(t.trace);
	free(dir);
	session_close(&ses);
	return status;
}
