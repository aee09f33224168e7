/*
 * buf.h - a growable byte buffer with a hard size limit (git's strbuf with
 * curl's dynbuf "toobig").
 *
 * Invariants: `buf` is never NULL and always NUL-terminated, so a fresh
 * buffer is already a valid empty C string; `len` excludes the NUL.  When an
 * append would make the buffer longer than `max` (0 = unlimited) the append
 * fails with -1 and the buffer is left as it was.
 */
#ifndef FORGE_BUF_H
#define FORGE_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct buf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t max;
};

#define BUF_INIT { buf_slop, 0, 0, 0 }
extern char buf_slop[1];

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);           /* frees contents; b reusable after buf_init */
void buf_reset(struct buf *b);             /* len = 0, keeps the allocation */
/* Cut the contents to len bytes (no-op when already shorter). */
void buf_truncate(struct buf *b, size_t len);
int buf_add(struct buf *b, const void *data, size_t n);
int buf_adds(struct buf *b, const char *s);
int buf_addch(struct buf *b, char c);
/* Append s as one POSIX shell word: in single quotes, a quote in it as '\\''. */
int buf_add_shell_quoted(struct buf *b, const char *s);
/*
 * Append a file's name as git shows one (core.quotePath's C style), so
 * that one name always reads as one, on one line, in a list a person or a
 * model reads: as it is, unless it holds a control character (C0, DEL, or
 * C1 as UTF-8 encodes it: C2 80..9F), '"', '\\' or a byte that is not
 * UTF-8 (a Latin-1 name: caf\xe9.txt); then in double quotes, with \a \b
 * \t \n \v \f \r \" \\ and every other such byte as \ooo (octal): "a\nb",
 * "caf\351.txt".  Nothing is lost, so buf_path_unquoted() gives the name
 * back.  buf_path_needs_quotes() says whether it would quote.
 */
int buf_add_path_quoted(struct buf *b, const char *path);
bool buf_path_needs_quotes(const char *path);
/*
 * The length of the control character at s[0..left): 1 for C0 or DEL, 2
 * for C1 as UTF-8 encodes it (C2 80..9F), 0 for anything else -- what may
 * not reach a terminal as it is (an escape sequence moves the cursor, sets
 * the title, hides lines).  The one test of buf_add_path_quoted(),
 * buf_add_visible() and app/term.h's term_clean().
 */
size_t buf_control_at(const char *s, size_t left);
/*
 * Append s[0..n) as `less` shows it: every control character but newline
 * and tab visible, C0 and DEL in caret notation (ESC ^[, CR ^M, NUL ^@,
 * DEL ^?), C1 as <U+009B>; every other byte as it is.  For text a model
 * or a repository wrote, shown whole on a terminal (forge diff).
 */
int buf_add_visible(struct buf *b, const char *s, size_t n);
/* buf_add_path_quoted() as a new string (free(3) it). */
char *buf_path_quoted(const char *path);
/*
 * The name a quoted one stands for (a new string; NULL for NULL): when
 * shown is a whole name as buf_add_path_quoted() quotes one -- '"', the
 * escapes above (\000 is none: no name holds a NUL), '"' and nothing more --
 * the bytes it stands for, else shown as it is.  So a path that starts with
 * '"' is read as a quoted name (a file whose name starts with '"' is shown
 * quoted, "\"x\"", which reads back as it), and every other path as it is.
 */
char *buf_path_unquoted(const char *shown);
int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vaddf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/*
 * Append the whole file at path (up to b->max, if set).  -1 with a message
 * naming the file when it cannot be opened or read, or is too large; errno
 * is left as open/read set it (ENOENT for a missing file).
 */
int buf_read_file(struct buf *b, const char *path);
/*
 * Open path for reading when it is a regular file, not through a symbolic
 * link at its end (O_NOFOLLOW) and without waiting (O_NONBLOCK): a FIFO or a
 * device left where a file was expected -- by a command in a run's worktree
 * -- is refused, never waited on.  The fd (O_CLOEXEC; the caller closes it),
 * or -1 with a message naming the file; errno ENOENT when it is absent,
 * ELOOP for a symbolic link (the message says it is one), EINVAL for what
 * is not a regular file.
 */
int buf_open_regular(const char *path);
/*
 * buf_read_file for a file Forge reads itself out of a place a command may
 * have written (a worktree, a command's temporary directory): opened with
 * buf_open_regular, and at most max bytes (> 0; a larger file is an error,
 * errno EFBIG, b left as it was).
 */
int buf_read_regular(struct buf *b, const char *path, size_t max);

/*
 * Replace the file at path with data[0..len): written to a new file beside
 * it (synced, with the old file's mode, else 0644 less the umask), then
 * renamed over it, so a reader sees the old file or the new one, never a
 * part; root keeps the old file's owner too.  A symbolic link at path stays: the file it leads to is the one
 * replaced.  0, or -1 with a message naming the file; the new file is
 * removed on failure.
 */
int buf_replace_file(const char *path, const char *data, size_t len);

/* Hand the string to the caller (free(3) it); b is reset to empty. */
char *buf_detach(struct buf *b, size_t *len_out);

#endif
