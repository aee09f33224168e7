/*
 * tui_screen.c - the terminal of `forge tui` (tui.h): curses started and
 * restored, colours, the size check, lines drawn and read.
 */
#include "app/cli.h"
#include "app/term.h"
#include "app/tui.h"

#include "core/buf.h"
#include "core/forge.h"

#include <curses.h>
#include <term.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

volatile sig_atomic_t tui_stop;

static bool started;

/* For a crash (abort, a fault): the terminal's modes before curses, and
 * what endwin() would write (attributes off, the cursor shown, keypad
 * mode off, the alternate screen left), made before it can be needed. */
static struct termios cooked;
static bool have_cooked;
static char undo[256];
static size_t undo_len;

static void on_signal(int sig)
{
	tui_stop = sig;
}

/* A crash: the terminal back as it was (async-signal-safe calls only),
 * then the signal again with its default action (SA_RESETHAND). */
static void on_crash(int sig)
{
	if (started) {
		if (have_cooked)
			tcsetattr(STDIN_FILENO, TCSANOW, &cooked);
		ssize_t w = write(STDOUT_FILENO, undo, undo_len);
		(void)w;   /* nothing more to do about it: the process ends */
	}
	raise(sig);
}

static void undo_add(const char *cap)
{
	size_t n = cap && cap != (char *)-1 ? strlen(cap) : 0;

	if (n && undo_len + n < sizeof undo) {
		memcpy(undo + undo_len, cap, n);
		undo_len += n;
	}
}

static void crash_handlers(void)
{
	struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_RESETHAND };
	int sigs[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };

	undo_add(exit_attribute_mode);
	undo_add(cursor_normal);
	undo_add(keypad_local);
	undo_add(exit_ca_mode);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaction(sigs[i], &sa, NULL);
}

/* The colour pairs, by enum tui_attr (0: the terminal's own). */
static void colours(void)
{
	start_color();
	use_default_colors();
	init_pair(TUI_HEAD, COLOR_CYAN, -1);
	init_pair(TUI_DIM, COLOR_BLUE, -1);
	init_pair(TUI_OK, COLOR_GREEN, -1);
	init_pair(TUI_BAD, COLOR_RED, -1);
	init_pair(TUI_WARN, COLOR_YELLOW, -1);
	init_pair(TUI_SELECTED, COLOR_BLACK, COLOR_CYAN);
}

int tui_screen_open(struct tui *t)
{
	const char *no_color = getenv("NO_COLOR");

	have_cooked = tcgetattr(STDIN_FILENO, &cooked) == 0;
	if (!newterm(NULL, stdout, stdin))
		return forge_error("cannot use the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
	/* a terminal that cannot move the cursor (TERM=dumb): curses draws
	 * the first and last lines there and nothing between */
	if (!cursor_address) {
		endwin();
		return forge_error("the terminal cannot move its cursor (TERM=%s): forge tui needs one that "
				   "can; forge status and forge history show the same", getenv("TERM"));
	}
	started = true;
	raw();          /* Ctrl-C is a key: the loop ends and restores the terminal */
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);   /* Esc goes back at once, not after a second */
	timeout(1000);  /* the store is read again on each tick */
	t->color = !(no_color && *no_color) && has_colors();
	if (t->color)
		colours();
	tui_screen_open_signals();
	crash_handlers();
	return 0;
}

void tui_screen_open_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void tui_screen_close(void)
{
	if (!started)
		return;
	started = false;
	endwin();
}

bool tui_too_small(void)
{
	char text[128];

	if (COLS >= TUI_MIN_COLS && LINES >= TUI_MIN_ROWS)
		return false;
	erase();
	snprintf(text, sizeof text, "terminal too small (%dx%d): forge tui needs %dx%d", COLS, LINES,
		 TUI_MIN_COLS, TUI_MIN_ROWS);
	mvaddnstr(0, 0, text, COLS);
	if (LINES > 1)
		mvaddnstr(1, 0, "q quits", COLS);
	refresh();
	return true;
}

static attr_t attr_of(const struct tui *t, enum tui_attr a)
{
	if (a == TUI_SELECTED)
		return t->color ? COLOR_PAIR(TUI_SELECTED) : A_REVERSE;
	if (a == TUI_HEAD)
		return A_BOLD | (t->color ? COLOR_PAIR(TUI_HEAD) : 0);
	if (!t->color)
		return a == TUI_BAD ? A_BOLD : A_NORMAL;
	return a == TUI_PLAIN ? A_NORMAL : COLOR_PAIR(a);
}

void tui_put(const struct tui *t, int y, int x, int w, enum tui_attr a, const char *text)
{
	attr_t at = attr_of(t, a);

	if (y < 0 || y >= LINES || x >= COLS || w <= 0)
		return;
	if (x + w > COLS)
		w = COLS - x;
	/* what a model, a repository or a config wrote: a control character
	 * (\r, \b, \t, an escape) would move the cursor over the row's other
	 * columns; and cut by display width, a wide character taking two */
	size_t len = strcspn(text, "\n");
	char *line = xstrndup(text, len);
	term_clean_line(line, len);
	attron(at);
	mvhline(y, x, ' ', w);
	mvaddnstr(y, x, line, (int)term_cut(line, len, (size_t)w));
	attroff(at);
	free(line);
}

int tui_footer_rows(const struct tui *t, const char *keys)
{
	int n = (int)strlen(t->msg);

	return n && COLS - n - 1 <= (int)strlen(keys) + 1 ? 2 : 1;
}

void tui_footer(const struct tui *t, const char *keys)
{
	int n = (int)strlen(t->msg);

	tui_put(t, LINES - 1, 0, COLS, TUI_SELECTED, keys);
	if (tui_footer_rows(t, keys) == 2)
		tui_put(t, LINES - 2, 0, COLS, TUI_WARN, t->msg);
	else if (n)
		tui_put(t, LINES - 1, COLS - n - 1, n + 1, TUI_SELECTED, t->msg);
}

/* Drop every "REPO/" from msg: the status line is one screen line, and a
 * file named by its absolute path was cut before its name. */
static void relative_to_repo(char *msg, const char *repo)
{
	size_t rlen = repo ? strlen(repo) : 0;
	char *at = msg;

	if (rlen < 2)
		return;
	while ((at = strstr(at, repo)) != NULL) {
		if (at[rlen] != '/') {
			at += rlen;
			continue;
		}
		memmove(at, at + rlen + 1, strlen(at + rlen + 1) + 1);
	}
}

void tui_say(struct tui *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof t->msg, fmt, ap);
	va_end(ap);
	t->msg_load = false;
	relative_to_repo(t->msg, t->ses ? t->ses->repo : NULL);
}

int tui_getch(void)
{
	int c = getch();
	struct pollfd in = { .fd = STDIN_FILENO, .events = POLLIN };

	/* ERR is the timeout's tick, or a terminal that is gone (a hangup
	 * without SIGHUP: each read ends at once): then it is the end, not a
	 * tick that would come again at once, for ever */
	if (c == ERR && poll(&in, 1, 0) > 0 && (in.revents & (POLLHUP | POLLERR | POLLNVAL)))
		tui_stop = SIGHUP;
	return c;
}

char *tui_read_line(const struct tui *t, const char *prompt)
{
	struct buf b = BUF_INIT;
	int plen = (int)strlen(prompt);
	bool cancelled = false;

	curs_set(1);
	timeout(-1);
	for (;;) {
		int start = b.len + plen + 1 > (size_t)COLS ? (int)b.len + plen + 1 - COLS : 0;
		tui_put(t, LINES - 1, 0, COLS, TUI_PLAIN, prompt);
		tui_put(t, LINES - 1, plen, COLS - plen, TUI_PLAIN, b.buf + start);
		move(LINES - 1, plen + (int)b.len - start < COLS ? plen + (int)b.len - start : COLS - 1);
		refresh();
		int c = tui_getch();
		if (c == 27 || c == 3 || tui_stop) {
			cancelled = true;
			break;
		}
		if (c == '\n' || c == '\r' || c == KEY_ENTER)
			break;
		if ((c == KEY_BACKSPACE || c == 127 || c == 8) && b.len > 0) {
			do
				b.len--;
			while (b.len > 0 && (b.buf[b.len] & 0xC0) == 0x80);
			b.buf[b.len] = '\0';
		} else if (c >= 32 && c < 256 && c != 127) {
			buf_addch(&b, (char)c);
		}
	}
	/* a pasted text's lines after the first are not keys: they would
	 * move the list and answer the next gate nobody looked at */
	flushinp();
	curs_set(0);
	timeout(1000);
	if (cancelled) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}
