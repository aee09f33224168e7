/*
 * term.h - what Forge draws on a terminal: colour, and the one status line
 * (the spinner of a running model call) at the bottom of stderr.
 *
 * Colour: term_color(fd) is true when fd is a terminal, NO_COLOR is unset
 * or empty and TERM is set, not empty and not "dumb" (a terminal of
 * unknown kind may show an escape sequence as it is); every coloured
 * string in app/ comes from term_sgr(), which gives "" when colour is off,
 * so a piped or NO_COLOR output has no escape sequence at all.
 *
 * The status line: term_status() draws one line on stderr ("\r", the text
 * cut to the terminal's width, erase to the end of the line), replaced by
 * the next call and erased by term_status_clear(), which everything else
 * that writes to stderr calls first; none on a terminal whose TERM is
 * "dumb", unset or empty.  When stderr is not a terminal but
 * FORGE_STATUS_RELAY is set (forge-supervisor sets it for its phases when
 * its own stderr is a terminal: their stderr comes to it through a pipe),
 * the line is written as a record for the relay instead:
 * TERM_RELAY_MARK, the text, "\n" (an empty text erases); the supervisor
 * draws it with term_status().  Otherwise nothing is written.
 *
 * The spinner: term_spinner_start() begins a status line that a thread
 * redraws every 200 ms (elapsed time, tokens streamed so far, the last line
 * of the streamed text); term_spinner_text() adds streamed text;
 * term_spinner_stop() erases it.  One spinner at a time, in one process;
 * the functions are thread-safe with respect to the spinner's thread.
 * Nothing here exits; write errors are ignored (a status line is not worth
 * failing a run).
 */
#ifndef FORGE_TERM_H
#define FORGE_TERM_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

#define TERM_RELAY_MARK "\001forge-status\t"
#define TERM_RELAY_ENV "FORGE_STATUS_RELAY"

enum term_style { TERM_RESET, TERM_BOLD, TERM_DIM, TERM_RED, TERM_GREEN, TERM_YELLOW, TERM_CYAN };

/* Whether to colour what goes to fd (see above). */
bool term_color(int fd);

/* Write all len bytes of s to fd, again after EINTR and short writes;
 * gives up silently on an error (what a terminal did not take is not worth
 * failing for). */
void term_write(int fd, const char *s, size_t len);
/* The escape sequence for style, or "" when on is false (static). */
const char *term_sgr(bool on, enum term_style style);
/* The terminal's width in columns (fd's, else 80). */
int term_width(int fd);
/* The columns s[0..len) takes on a terminal: 2 for an East Asian wide
 * character or an emoji, 0 for a combining mark, else 1 (a byte of no
 * valid UTF-8 character too).  The width of any text Forge lines up. */
size_t term_columns(const char *s, size_t len);
/* The spaces that pad s to width columns (term_columns; 0 when it is as
 * wide or wider): printf's "%-Ns" pads by bytes, so a table of names
 * prints "%s%*s" with term_pad(name, N), "". */
int term_pad(const char *s, size_t width);
/* The length in bytes of s's longest start no wider than cols columns
 * (term_columns); a UTF-8 character is never split. */
size_t term_cut(const char *s, size_t len, size_t cols);

/* v (consumed) with every string in it, object keys too, safe to print on
 * a terminal: each control character -- C0 but newline and tab, DEL, and
 * C1 as UTF-8 encodes it (C2 80..9F) -- a space.  For what a model, a
 * repository or a command wrote (a task's title, a file's name, a test's
 * output) before it is shown: an escape sequence in it could move the
 * cursor over what the person reads at a gate, or set their clipboard. */
jv term_safe(jv v);
/* v (consumed) with the file names in it quoted as git quotes one when it
 * holds a control character, '"' or '\\' (buf_add_path_quoted(): "a\nb"):
 * the strings under the keys "path", "old_path" and "file" of every object
 * and the strings of an array under "files".  Before term_safe() (which
 * would make a newline in a name a space, and keep it as two names in a
 * list), so that a listed name shows as one, on one line, as git shows it.
 * A string that starts with '"' is a name json_path() quoted already (one
 * that is not UTF-8): shown as it is, not quoted twice. */
jv term_quote_paths(jv v);
/* The same in s[0..n), in place. */
void term_clean(char *s, size_t n);
/* term_clean(), newlines and tabs spaces too: text shown on one line (a
 * table's row, the status line). */
void term_clean_line(char *s, size_t n);

/* Whether a status line would be drawn or relayed (see above). */
bool term_status_enabled(void);
/* Draw (or relay) text as the status line, replacing the last one; NULL
 * or "" erases it. */
void term_status(const char *text);
/* Erase the status line when one is drawn (cheap otherwise). */
void term_status_clear(void);

/* Start the spinner with a label ("forge-plan: thinking"); nothing when
 * term_status_enabled() is false.  label is copied. */
void term_spinner_start(const char *label);
/* Streamed text (borrowed) for the spinner; ignored when none runs. */
void term_spinner_text(const char *text, size_t len);
/* Stop the spinner and erase its line. */
void term_spinner_stop(void);

#endif
