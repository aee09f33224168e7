/*
 * tui.h - `forge tui`, the full-screen terminal interface (cmd/forge-tui.c)
 * on ncurses, split by concern:
 *   tui_screen.c  the terminal: start and restore it, colours (none under
 *                 NO_COLOR), the size check, drawing a line, reading a line;
 *   tui_list.c    the run list, read from the store;
 *   tui_run.c     the selected run: nodes, phase timeline, the model's
 *                 text of a call in flight (store/live.h: as it streams,
 *                 from whichever process makes the call), its replies and
 *                 tool calls, findings, tests, cost and budget;
 *   tui_gate.c    a pending gate answered in place (gatedecide.h);
 *   tui_palette.c the command palette: the existing commands, run as
 *                 processes on the terminal;
 *   tui_models.c  the model picker: llm.phases.PHASE.{provider,model}
 *                 written to the project's .forge/config.json.
 * Everything is read again from the store on each tick, so runs started
 * elsewhere (another terminal, CI on the same database) appear and move.
 * Nothing here holds ncurses state but the screen itself (stdscr).
 */
#ifndef FORGE_TUI_H
#define FORGE_TUI_H

#include <jv.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct session;
struct cli_common;

/* What a drawn line means, for its colour (or attribute under NO_COLOR). */
enum tui_attr { TUI_PLAIN, TUI_HEAD, TUI_DIM, TUI_OK, TUI_BAD, TUI_WARN, TUI_SELECTED };

enum tui_screen { TUI_LIST, TUI_RUN };

/* The smallest terminal the screens fit: 65 columns hold a run's row of the
 * list up to its cost (trace, status "interrupted", gate, phase, cost). */
enum { TUI_MIN_COLS = 65, TUI_MIN_ROWS = 12 };

/* The newest runs the list loads (and the older ones a gate waits in):
 * it is read again every second or so. */
#define TUI_RUNS_SHOWN 500

struct tui {
	struct session *ses;    /* borrowed: config, repository, store */
	const struct cli_common *common;   /* borrowed: the command line (--config) */
	const char *bindir;     /* borrowed: where the forge programs are */
	bool color;
	enum tui_screen screen;
	jv runs;                /* store_runs_list(), each with "pending_gate" (an id or null) */
	long runs_total;        /* the runs of the store: more than runs when it is cut */
	int sel, top;           /* the selected run's index, the first row shown */
	char *trace;            /* the selected run (the run view), malloc'd */
	jv lines;               /* the run view: [[attr, text], ...] */
	int scroll;             /* the run view's first line shown */
	bool live;              /* the run view shows a model call in flight: poll faster */
	char msg[512];          /* the status line: the last thing done or failed, until the next key */
	bool msg_load;          /* msg is a failed read of the store: gone when one succeeds */
	/* The SQLite file the store has open, as it was at its open: a file
	 * removed or replaced at its path stays readable through the open
	 * connection, which would show its old runs for ever (forge-tui.c
	 * checks on each read; false: not a file, PostgreSQL) */
	bool db_file;
	dev_t db_dev;
	ino_t db_ino;
};

/* Set by the handler of SIGINT, SIGTERM and SIGHUP (and by tui_getch() when
 * the terminal is gone): the loop ends, the terminal is restored, forge tui
 * exits 130. */
extern volatile sig_atomic_t tui_stop;

/* ---- tui_screen.c ----------------------------------------------------- */

/* Start curses on the terminal (raw keys, no echo, keypad, a 1 s read
 * timeout for polling) with colours unless NO_COLOR is set and not empty,
 * and the signal handlers.  -1 with forge_error() when the terminal cannot
 * be used. */
int tui_screen_open(struct tui *t);
/* The handlers of SIGINT, SIGTERM, SIGHUP again (after a command ran). */
void tui_screen_open_signals(void);
/* Restore the terminal (endwin); safe to call twice. */
void tui_screen_close(void);
/* getch(); when the terminal is gone (its input hung up, no SIGHUP came)
 * it also sets tui_stop to SIGHUP: every loop ends as on the signal. */
int tui_getch(void);
/* Whether the terminal is too small; then it has said so on the screen. */
bool tui_too_small(void);
/* text's first line at row y from column x, at most w columns by display
 * width (term_cut: a wide character takes two, none is split; the rest of
 * the w columns cleared), its control characters drawn as spaces
 * (term_clean_line: none moves the cursor). */
void tui_put(const struct tui *t, int y, int x, int w, enum tui_attr a, const char *text);
/* The bottom line: keys (left) and the message of t (right); a message
 * with no room there takes the row above. */
void tui_footer(const struct tui *t, const char *keys);
/* The rows tui_footer(t, keys) takes at the bottom: 1, or 2 with the
 * message's own row (the rows above it are the screen's). */
int tui_footer_rows(const struct tui *t, const char *keys);
/* Ask for one line at the bottom after prompt; NULL when Esc or Ctrl-C
 * cancelled it, else malloc'd (may be empty). */
char *tui_read_line(const struct tui *t, const char *prompt);
/* Set t->msg (not a read error: msg_load false). */
void tui_say(struct tui *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- tui_list.c ------------------------------------------------------- */

/* Read the runs again (the selection follows its run).  -1 with
 * forge_error() on a database error. */
int tui_list_load(struct tui *t);
void tui_list_draw(struct tui *t);
/* The selected run's trace id, borrowed from t->runs, or NULL. */
const char *tui_list_selected(const struct tui *t);
/* Move the selection by delta rows. */
void tui_list_move(struct tui *t, int delta);

/* ---- tui_run.c -------------------------------------------------------- */

/* Read run t->trace again into t->lines; t->live says whether a model
 * call of it is in flight. */
int tui_run_load(struct tui *t);
void tui_run_draw(struct tui *t);
void tui_run_scroll(struct tui *t, int delta);

/* ---- tui_gate.c ------------------------------------------------------- */

/* The gate dialog for run trace's newest pending gate: what it needs (the
 * gate's full view: plan, diff, findings, ...), then y approve, n reject
 * with a note, e approve with a note, Esc back.  Says what happened in
 * t->msg (also that there is no pending gate). */
void tui_gate_dialog(struct tui *t, const char *trace);

/* ---- tui_palette.c ---------------------------------------------------- */

/* The command palette: run (asks for the task), resume, cancel, show,
 * merge, gc, each run as `forge CMD [TRACE]` on the terminal. */
void tui_palette(struct tui *t);

/* ---- tui_models.c ----------------------------------------------------- */

/* The model picker: a phase, a provider, a model, written as
 * llm.phases.PHASE.{provider,model} to the project's configuration. */
void tui_models(struct tui *t);

#endif
