/* prompt.c - a yes/no question on a terminal; see prompt.h. */
#include "app/prompt.h"
#include "app/term.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/ids.h"
#include "deploy/deploy.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096     /* an answer or a note; the rest of a longer line is dropped */

static volatile sig_atomic_t caught;   /* the signal that arrived during the prompt, or 0 */

static void on_signal(int sig)
{
	caught = sig;
}

/* The caller's signal setup, put back by release(). */
struct saved {
	sigset_t mask;              /* the caller's mask */
	sigset_t wait;              /* the mask while waiting: the signals open */
	struct sigaction old[3];
	bool set[3];
};

/* (SIGHUP: the terminal closed, as a person's Ctrl-C) */
static const int signals[3] = { SIGINT, SIGTERM, SIGHUP };

/* Block the signals and catch them with our handler (no SA_RESTART);
 * they are let through only inside ppoll(), so none is lost between the
 * check of `caught` and the wait. */
static void catch_signals(struct saved *sv)
{
	sigset_t block;
	struct sigaction sa;

	sigemptyset(&block);
	for (int i = 0; i < 3; i++)
		sigaddset(&block, signals[i]);
	pthread_sigmask(SIG_BLOCK, &block, &sv->mask);
	sv->wait = sv->mask;
	for (int i = 0; i < 3; i++)
		sigdelset(&sv->wait, signals[i]);
	caught = 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++) {
		sv->set[i] = sigaction(signals[i], NULL, &sv->old[i]) == 0 &&
			     sv->old[i].sa_handler != SIG_IGN &&
			     sigaction(signals[i], &sa, NULL) == 0;
	}
}

static void release_signals(struct saved *sv)
{
	for (int i = 0; i < 3; i++)
		if (sv->set[i])
			sigaction(signals[i], &sv->old[i], NULL);
	pthread_sigmask(SIG_SETMASK, &sv->mask, NULL);
}

static void tty_write(int fd, const char *s)
{
	term_write(fd, s, s ? strlen(s) : 0);
}

static int open_tty(const char *path)
{
	int fd;

	if (path)
		return open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && isatty(STDIN_FILENO)) {
		const char *name = ttyname(STDIN_FILENO);
		if (name)
			fd = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	}
	return fd;
}

enum read_result { LINE_READ, LINE_EOF, LINE_INTERRUPTED, LINE_TIMEOUT, LINE_SETTLED };

/* A prompt in progress: the terminal, the caller's signal set-up, the line. */
struct session {
	int fd;
	struct saved sv;
	struct buf line;
	int64_t deadline;           /* monotonic ms; 0: no limit */
	const struct prompt_watch *watch;   /* NULL: none */
	int64_t next_watch;         /* monotonic ms of the next watch->settled() */
};

/* How long ppoll may wait: until the deadline or the next look at the
 * watch, whichever comes first; -1: no limit. */
static int64_t wait_ms(const struct session *s, int64_t now)
{
	int64_t w = s->deadline > 0 ? s->deadline - now : -1;

	if (s->watch && (w < 0 || s->next_watch - now < w))
		w = s->next_watch - now;
	return w < 0 ? 0 : w;
}

/*
 * Read one line into s->line (without its newline), a byte at a time so
 * that nothing after it is taken from the terminal.  A last line without a
 * newline before the end of input counts as a line.  While nothing is
 * typed, s->watch is asked every every_ms (LINE_SETTLED when it says so).
 */
static enum read_result read_line(struct session *s)
{
	buf_reset(&s->line);
	for (;;) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		struct timespec ts, *tsp = NULL;
		int64_t now = monotonic_ms();
		char c;

		if (caught)
			return LINE_INTERRUPTED;
		if (s->deadline > 0 && now >= s->deadline)
			return LINE_TIMEOUT;
		if (s->deadline > 0 || s->watch) {
			int64_t left = wait_ms(s, now);
			ts.tv_sec = (time_t)(left / 1000);
			ts.tv_nsec = (long)(left % 1000) * 1000000L;
			tsp = &ts;
		}
		int n = ppoll(&p, 1, tsp, &s->sv.wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return LINE_EOF;
		if (n == 0) {	/* the deadline is checked above */
			if (s->watch && monotonic_ms() >= s->next_watch) {
				if (s->watch->settled(s->watch->arg))
					return LINE_SETTLED;
				s->next_watch = monotonic_ms() + s->watch->every_ms;
			}
			continue;
		}
		ssize_t r = read(s->fd, &c, 1);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)	/* Ctrl-D, or the terminal hung up (EIO) */
			return s->line.len ? LINE_READ : LINE_EOF;
		if (c == '\n')
			return LINE_READ;
		if (s->line.len < LINE_MAX_BYTES)
			buf_addch(&s->line, c);
	}
}

/* The line without surrounding blanks (in place). */
static char *trim(char *s)
{
	size_t len;

	while (isspace((unsigned char)*s))
		s++;
	len = strlen(s);
	while (len && isspace((unsigned char)s[len - 1]))
		s[--len] = '\0';
	return s;
}

static bool is_word(const char *s, const char *one, const char *word)
{
	return strcasecmp(s, one) == 0 || strcasecmp(s, word) == 0;
}

static enum prompt_answer from_read(enum read_result r)
{
	return r == LINE_INTERRUPTED ? PROMPT_INTERRUPTED : r == LINE_TIMEOUT ? PROMPT_TIMEOUT
	     : r == LINE_SETTLED ? PROMPT_SETTLED : PROMPT_EOF;
}

/*
 * [v]iew: text through $PAGER (default less, run by sh -c as git does) on
 * the terminal fd; written straight to the terminal when the pager cannot
 * be run (exit 127).  SIGPIPE is ignored meanwhile: a pager may quit before
 * it has read everything.
 */
static void show_full(int fd, const char *text, const struct saved *sv)
{
	const char *pager = getenv("PAGER");
	struct sigaction ign = { .sa_handler = SIG_IGN }, old, old_int, old_quit;
	int p[2], st = 0;
	pid_t pid;

	if (!pager || !*pager)
		pager = "less";
	if (pipe2(p, O_CLOEXEC) < 0)
		goto direct;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		goto direct;
	}
	if (pid == 0) {
		if (dup2(p[0], STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		pthread_sigmask(SIG_SETMASK, &sv->mask, NULL);
		/* the person's pager as from a shell: what forge ignores (a
		 * write to a closed pipe, past a file-size limit) would be
		 * ignored by it too, across the exec */
		signal(SIGPIPE, SIG_DFL);
		signal(SIGXFSZ, SIG_DFL);
		setenv("LESS", "FRX", 0);       /* as git: quit when it fits, keep colours */
		execl("/bin/sh", "sh", "-c", pager, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old);
	/* Ctrl-C in the pager is the pager's (less stops a search with it);
	 * the run goes on, and the gate asks again when it quits */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	tty_write(p[1], text);
	close(p[1]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGPIPE, &old, NULL);
	/* (blocked while the prompt waits, a Ctrl-C stays pending through
	 * SIG_IGN: taken here, so it does not reach the prompt afterwards) */
	sigset_t pagers;
	struct timespec now = { 0, 0 };

	sigemptyset(&pagers);
	sigaddset(&pagers, SIGINT);
	sigaddset(&pagers, SIGQUIT);
	while (sigtimedwait(&pagers, NULL, &now) > 0)
		;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 127))
		return;
direct:
	tty_write(fd, text);
	if (*text && text[strlen(text) - 1] != '\n')
		tty_write(fd, "\n");
}

static const char help_text[] =
	"  y, yes    approve: the run goes on\n"
	"  n, no     reject: the run stops here\n"
	"  e, edit   type a note, then approve; the note is kept with the decision\n"
	"            and remembered for later runs\n"
	"  v, view   everything about the decision (the whole plan, diff, findings)\n"
	"            in $PAGER (less)\n"
	"  ?, help   this help\n"
	"  Ctrl-D    decide later: the run pauses (exit 4) with the gate pending;\n"
	"            `forge gate approve|reject ID` then `forge resume TRACE`\n";

/*
 * Open the terminal o->tty names, catch SIGINT and SIGTERM and print o->text
 * on a line of its own: the set-up prompt_ask and prompt_line share.  -1
 * when there is no terminal (nothing to end); else session_end() ends it.
 */
static int session_begin(struct session *s, const struct prompt_opts *o)
{
	s->deadline = o->timeout_ms > 0 ? monotonic_ms() + o->timeout_ms : 0;
	s->watch = o->watch && o->watch->settled && o->watch->every_ms > 0 ? o->watch : NULL;
	s->next_watch = s->watch ? monotonic_ms() + s->watch->every_ms : 0;
	s->fd = open_tty(o->tty);
	if (s->fd < 0)
		return -1;
	buf_init(&s->line, 0);
	catch_signals(&s->sv);
	if (o->text && *o->text) {
		tty_write(s->fd, o->text);
		if (o->text[strlen(o->text) - 1] != '\n')
			tty_write(s->fd, "\n");
	}
	return 0;
}

/* Leave the terminal on a fresh line when the prompt ended without one, put
 * the caller's signal set-up back and close the terminal. */
static enum prompt_answer session_end(struct session *s, enum prompt_answer answer)
{
	if (answer == PROMPT_EOF || answer == PROMPT_INTERRUPTED || answer == PROMPT_SETTLED)
		tty_write(s->fd, "\n");
	else if (answer == PROMPT_TIMEOUT)
		tty_write(s->fd, "\n  (no answer in time)\n");
	release_signals(&s->sv);
	buf_release(&s->line);
	close(s->fd);
	return answer;
}

/* One line of input as an answer: PROMPT_APPROVE with *out the trimmed line,
 * else what ended the read, with *out untouched. */
static enum prompt_answer session_read(struct session *s, char **out)
{
	enum read_result r = read_line(s);

	if (r != LINE_READ)
		return from_read(r);
	*out = trim(s->line.buf);
	return PROMPT_APPROVE;
}

enum prompt_answer prompt_ask(char **note, const struct prompt_opts *o)
{
	const char *choices = !o->note ? " [y/n] "
			    : o->full ? " [y]es / [n]o / [e]dit note / [v]iew full / [?]: "
				      : " [y]es / [n]o / [e]dit note / [?]: ";
	const char *again = o->note ? "  please answer y, n, e, v or ? (help)\n"
				    : "  please answer y (yes) or n (no)\n";
	enum prompt_answer answer;
	struct buf ask;
	struct session s;
	char *a;

	*note = NULL;
	if (session_begin(&s, o) < 0)
		return PROMPT_NO_TTY;
	buf_init(&ask, 0);
	buf_adds(&ask, o->question);
	buf_adds(&ask, choices);
	for (;;) {
		tty_write(s.fd, ask.buf);	/* one write: an echo does not split it */
		if ((answer = session_read(&s, &a)) != PROMPT_APPROVE)
			break;
		if (is_word(a, "y", "yes"))
			break;
		if (is_word(a, "n", "no")) {
			answer = PROMPT_REJECT;
			break;
		}
		if (o->note && o->full && is_word(a, "v", "view")) {
			show_full(s.fd, o->full, &s.sv);
			continue;
		}
		if (o->note && is_word(a, "?", "help")) {
			tty_write(s.fd, help_text);
			continue;
		}
		if (o->note && is_word(a, "e", "edit")) {
			tty_write(s.fd, "  note: ");
			if ((answer = session_read(&s, &a)) != PROMPT_APPROVE)
				break;
			if (*a) {
				*note = xstrdup(a);
				answer = PROMPT_APPROVE_WITH_NOTE;
			}
			break;
		}
		tty_write(s.fd, again);
	}
	buf_release(&ask);
	return session_end(&s, answer);
}

enum prompt_answer prompt_line(char **out, const struct prompt_opts *o)
{
	enum prompt_answer answer;
	struct session s;
	char *a;

	*out = NULL;
	if (session_begin(&s, o) < 0)
		return PROMPT_NO_TTY;
	tty_write(s.fd, o->question);
	tty_write(s.fd, "\n> ");
	answer = session_read(&s, &a);
	if (answer == PROMPT_APPROVE)
		*out = xstrdup(a);
	return session_end(&s, answer);
}

const char *prompt_answer_name(enum prompt_answer a)
{
	switch (a) {
	case PROMPT_APPROVE: return "approve";
	case PROMPT_REJECT: return "reject";
	case PROMPT_APPROVE_WITH_NOTE: return "approve_with_note";
	case PROMPT_EOF: return "eof";
	case PROMPT_INTERRUPTED: return "interrupted";
	case PROMPT_TIMEOUT: return "timeout";
	case PROMPT_NO_TTY: return "no_tty";
	case PROMPT_SETTLED: return "settled";
	}
	return "unknown";
}

enum prompt_answer deploy_gate_ask(const struct deploy_gate *gate, const char *summary,
				   const char *tty_path)
{
	char *note;
	struct prompt_opts o = { .tty = tty_path, .text = summary, .question = gate->prompt };
	enum prompt_answer a;

	/* no limit when the timeout is 0 or absurd */
	o.timeout_ms = gate->timeout_s > 0 && gate->timeout_s < 1e9 ? (long)(gate->timeout_s * 1000) : 0;
	a = prompt_ask(&note, &o);

	free(note);	/* no note is offered: always NULL */
	return a;
}
