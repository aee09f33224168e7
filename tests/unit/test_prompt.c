/*
 * test_prompt.c - the terminal prompt of the human gates (app/prompt.h),
 * driven through a pseudo-terminal.  Nothing here depends on timing: the
 * answer is typed into the pty before the prompt reads it (typeahead is
 * part of the contract), the prompt's output is read back after it
 * returned up to a marker written behind it, and a signal is sent only
 * after the prompt's question has been read from the pty.
 */
#include "core/forge.h"
#include "app/prompt.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define MARK "@@prompt-test-end@@"
#define SAFETY_MS 30000         /* only a broken prompt ever waits this long */

struct pty {
	int master, slave;
	char path[128];
};

static int pty_open(struct pty *p)
{
	const char *name;

	p->slave = -1;
	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->master < 0 || grantpt(p->master) < 0 || unlockpt(p->master) < 0 ||
	    !(name = ptsname(p->master)))
		return -1;
	snprintf(p->path, sizeof p->path, "%s", name);
	/* Held open so the terminal keeps its settings and output between calls. */
	p->slave = open(p->path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	/* No echo: what the terminal shows is then only what the prompt wrote
	 * (an echo comes whenever the kernel processes the typed input, so it
	 * could land anywhere in the prompt's output). */
	struct termios t;
	if (p->slave < 0 || tcgetattr(p->slave, &t) < 0)
		return -1;
	t.c_lflag &= ~(tcflag_t)ECHO;
	return tcsetattr(p->slave, TCSANOW, &t);
}

static void pty_close(struct pty *p)
{
	if (p->slave >= 0)
		close(p->slave);
	if (p->master >= 0)
		close(p->master);
}

static bool type_ahead(struct pty *p, const char *typed)
{
	return write(p->master, typed, strlen(typed)) == (ssize_t)strlen(typed);
}

/* Read the terminal's output into out until `until` appears (or the output
 * ends); the text before it stays in out. */
static bool read_until(char *out, size_t cap, int master, const char *until)
{
	size_t len = 0;

	out[0] = '\0';
	for (;;) {
		struct pollfd pf = { .fd = master, .events = POLLIN };
		char *hit = strstr(out, until);
		if (hit) {
			*hit = '\0';
			return true;
		}
		if (len + 1 >= cap || poll(&pf, 1, SAFETY_MS) <= 0)
			return false;
		ssize_t n = read(master, out + len, cap - 1 - len);
		if (n <= 0)
			return false;
		len += (size_t)n;
		out[len] = '\0';
	}
}

/* Everything the prompt wrote (and the terminal echoed) so far. */
static bool shown(char *out, size_t cap, struct pty *p)
{
	return write(p->slave, MARK, strlen(MARK)) == (ssize_t)strlen(MARK) &&
	       read_until(out, cap, p->master, MARK);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

static enum prompt_answer ask(char **note, struct pty *p, const char *typed, bool with_note, long timeout_ms)
{
	struct prompt_opts o = {
		.tty = p->path, .text = "forge: a summary line", .question = "Ship it?",
		.note = with_note, .timeout_ms = timeout_ms,
	};

	if (typed && !type_ahead(p, typed))
		return (enum prompt_answer)-1;
	return prompt_ask(note, &o);
}

/* [?] explains the keys, [v] shows the full text in $PAGER (or on the
 * terminal when the pager cannot run); both ask again. */
static void test_view_and_help(void)
{
	struct pty p;
	char out[8192], *note;
	struct prompt_opts o = {
		.question = "Ship it?", .note = true, .full = "THE WHOLE PLAN\nits second line\n",
	};

	CHECK(pty_open(&p) == 0);
	o.tty = p.path;
	setenv("PAGER", "cat", 1);
	CHECK(type_ahead(&p, "?\nv\ny\n"));
	CHECK_INT(prompt_ask(&note, &o), PROMPT_APPROVE);
	CHECK(note == NULL);
	CHECK(shown(out, sizeof out, &p));
	CHECK_INT(count(out, "Ship it? [y]es / [n]o / [e]dit note / [v]iew full / [?]: "), 3);
	CHECK(strstr(out, "  ?, help   this help") != NULL);
	CHECK(strstr(out, "THE WHOLE PLAN") != NULL);
	CHECK(strstr(out, "its second line") != NULL);
	/* a pager that cannot run: the text goes to the terminal */
	setenv("PAGER", "exit 127", 1);
	CHECK(type_ahead(&p, "view\nn\n"));
	CHECK_INT(prompt_ask(&note, &o), PROMPT_REJECT);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "its second line") != NULL);
	unsetenv("PAGER");
	pty_close(&p);
}

static void test_no_tty(void)
{
	char *note = (char *)"x";
	struct prompt_opts o = { .tty = "/nonexistent/tty", .question = "Ship it?" };

	CHECK_INT(prompt_ask(&note, &o), PROMPT_NO_TTY);
	CHECK(note == NULL);
	CHECK_STR(prompt_answer_name(PROMPT_NO_TTY), "no_tty");
	CHECK_STR(prompt_answer_name(PROMPT_APPROVE_WITH_NOTE), "approve_with_note");
}

static void test_yes_no(void)
{
	struct pty p;
	char out[8192], *note;

	CHECK(pty_open(&p) == 0);
	CHECK_INT(ask(&note, &p, "y\n", false, 0), PROMPT_APPROVE);
	CHECK(note == NULL);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "forge: a summary line") != NULL);
	CHECK(strstr(out, "Ship it? [y/n] ") != NULL);
	CHECK_INT(ask(&note, &p, "  YES \n", false, 0), PROMPT_APPROVE);
	CHECK_INT(ask(&note, &p, "n\n", false, 0), PROMPT_REJECT);
	CHECK_INT(ask(&note, &p, "No\n", false, 0), PROMPT_REJECT);
	pty_close(&p);
}

/* Enter alone and a typo are not answers: the question comes again. */
static void test_reasks(void)
{
	struct pty p;
	char out[8192], *note;

	CHECK(pty_open(&p) == 0);
	CHECK(shown(out, sizeof out, &p));
	CHECK_INT(ask(&note, &p, "\nyse\nyes\n", false, 0), PROMPT_APPROVE);
	CHECK(shown(out, sizeof out, &p));
	CHECK_INT(count(out, "Ship it? [y/n]"), 3);
	CHECK_INT(count(out, "please answer y (yes) or n (no)"), 2);
	/* without a note offered, e is a typo too */
	CHECK_INT(ask(&note, &p, "e\nn\n", false, 0), PROMPT_REJECT);
	CHECK(shown(out, sizeof out, &p));
	CHECK_INT(count(out, "please answer"), 1);
	pty_close(&p);
}

static void test_note(void)
{
	struct pty p;
	char out[8192], *note;

	CHECK(pty_open(&p) == 0);
	CHECK_INT(ask(&note, &p, "e\n  keep the usage line in sync  \n", true, 0), PROMPT_APPROVE_WITH_NOTE);
	CHECK_STR(note, "keep the usage line in sync");
	free(note);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "Ship it? [y]es / [n]o / [e]dit note / [?]: ") != NULL);
	CHECK(strstr(out, "  note: ") != NULL);
	/* an empty note approves without one */
	CHECK_INT(ask(&note, &p, "E\n\n", true, 0), PROMPT_APPROVE);
	CHECK(note == NULL);
	CHECK_INT(ask(&note, &p, "edit\nok\n", true, 0), PROMPT_APPROVE_WITH_NOTE);
	CHECK_STR(note, "ok");
	free(note);
	pty_close(&p);
}

/* Ctrl-D is no answer: EOF, at the question and at the note. */
static void test_eof(void)
{
	struct pty p;
	char *note;

	CHECK(pty_open(&p) == 0);
	CHECK_INT(ask(&note, &p, "\x04", false, 0), PROMPT_EOF);
	CHECK_INT(ask(&note, &p, "\n\x04", true, 0), PROMPT_EOF);
	CHECK_INT(ask(&note, &p, "e\n\x04", true, 0), PROMPT_EOF);
	CHECK(note == NULL);
	/* a last line ended by Ctrl-D instead of Enter still counts */
	CHECK_INT(ask(&note, &p, "y\x04\x04", false, 0), PROMPT_APPROVE);
	pty_close(&p);
}

/* Lines typed ahead stay on the terminal: each prompt takes one. */
static void test_typeahead_kept(void)
{
	struct pty p;
	char *note;

	CHECK(pty_open(&p) == 0);
	CHECK(type_ahead(&p, "y\nn\ne\nthe note\n"));
	CHECK_INT(ask(&note, &p, NULL, true, 0), PROMPT_APPROVE);
	CHECK_INT(ask(&note, &p, NULL, true, 0), PROMPT_REJECT);
	CHECK_INT(ask(&note, &p, NULL, true, 0), PROMPT_APPROVE_WITH_NOTE);
	CHECK_STR(note, "the note");
	free(note);
	pty_close(&p);
}

static void test_timeout(void)
{
	struct pty p;
	char out[8192], *note;

	CHECK(pty_open(&p) == 0);
	CHECK_INT(ask(&note, &p, NULL, false, 50), PROMPT_TIMEOUT);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "no answer in time") != NULL);
	/* an answer typed ahead is taken before the time runs out */
	CHECK_INT(ask(&note, &p, "n\n", false, 50), PROMPT_REJECT);
	pty_close(&p);
}

/* The watch: says "settled" at its third look. */
static int looks;

static bool settled_third(void *arg)
{
	(void)arg;
	return ++looks >= 3;
}

/* A question settled elsewhere while nothing is typed (a gate decided with
 * forge gate): the watch is asked until it says so, and the prompt ends
 * with PROMPT_SETTLED on a fresh line; a line typed ahead is still read
 * first, the watch not asked. */
static void test_watch(void)
{
	struct pty p;
	struct prompt_watch w = { settled_third, NULL, 1 };
	struct prompt_opts o = { .question = "approve?", .note = true, .watch = &w };
	char out[8192], *note;

	CHECK(pty_open(&p) == 0);
	o.tty = p.path;
	looks = 0;
	CHECK_INT(prompt_ask(&note, &o), PROMPT_SETTLED);
	CHECK_INT(looks, 3);
	CHECK(note == NULL);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "approve?") != NULL);
	CHECK_STR(prompt_answer_name(PROMPT_SETTLED), "settled");
	looks = 0;
	CHECK(type_ahead(&p, "n\n"));
	CHECK_INT(prompt_ask(&note, &o), PROMPT_REJECT);
	CHECK_INT(looks, 0);
	/* and with a timeout too: the watch ends it first */
	o.timeout_ms = SAFETY_MS;
	CHECK_INT(prompt_ask(&note, &o), PROMPT_SETTLED);
	pty_close(&p);
}

/* prompt_line shares prompt_ask's session: the text, then the question and
 * a "> " line; the answer trimmed; a timeout ends on the same note. */
static void test_line(void)
{
	struct pty p;
	struct prompt_opts o = { .text = "forge: an interview", .question = "Which database?" };
	char out[8192], *line;

	CHECK(pty_open(&p) == 0);
	o.tty = p.path;
	CHECK(type_ahead(&p, "  SQLite  \n"));
	CHECK_INT(prompt_line(&line, &o), PROMPT_APPROVE);
	CHECK_STR(line, "SQLite");
	free(line);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "forge: an interview") != NULL);
	CHECK(strstr(out, "Which database?") != NULL);
	CHECK(strstr(out, "> ") != NULL);
	o.timeout_ms = 50;
	CHECK_INT(prompt_line(&line, &o), PROMPT_TIMEOUT);
	CHECK(line == NULL);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "no answer in time") != NULL);
	pty_close(&p);
	o.tty = "/nonexistent/tty";
	CHECK_INT(prompt_line(&line, &o), PROMPT_NO_TTY);
	CHECK(line == NULL);
}

static volatile sig_atomic_t caller_saw;

static void caller_handler(int sig)
{
	caller_saw = sig;
}

/* A SIGINT pending when the prompt starts interrupts it; the caller's
 * handler and mask are back afterwards, and the signal was taken. */
static void test_interrupted_pending(void)
{
	struct sigaction sa = { .sa_handler = caller_handler }, now;
	sigset_t block, old, pending;
	struct pty p;
	char *note;

	CHECK(pty_open(&p) == 0);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGINT, &sa, NULL) == 0);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	CHECK(sigprocmask(SIG_BLOCK, &block, &old) == 0);
	caller_saw = 0;
	raise(SIGINT);
	enum prompt_answer a = ask(&note, &p, NULL, false, 0);
	sigpending(&pending);
	bool still_blocked = sigprocmask(SIG_SETMASK, &old, &block) == 0 && sigismember(&block, SIGINT);
	sigaction(SIGINT, NULL, &now);
	signal(SIGINT, SIG_DFL);
	pty_close(&p);
	CHECK_INT(a, PROMPT_INTERRUPTED);
	CHECK(!sigismember(&pending, SIGINT));
	CHECK(still_blocked);
	CHECK(now.sa_handler == caller_handler && (now.sa_flags & SA_RESTART));
	CHECK_INT(caller_saw, 0);
}

/* A SIGINT the caller ignores stays ignored: the prompt goes on. */
static void test_ignored_signal(void)
{
	struct pty p;
	char *note;
	sigset_t block, old;

	CHECK(pty_open(&p) == 0);
	signal(SIGINT, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	raise(SIGINT);	/* discarded: ignored */
	enum prompt_answer a = ask(&note, &p, "y\n", false, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	struct sigaction now;
	sigaction(SIGINT, NULL, &now);
	signal(SIGINT, SIG_DFL);
	pty_close(&p);
	CHECK_INT(a, PROMPT_APPROVE);
	CHECK(now.sa_handler == SIG_IGN);
}

/*
 * Ctrl-C typed at the prompt, for real: a child process with the pty as its
 * controlling terminal asks on /dev/tty (the default) with a handler of its
 * own installed (as forge-supervisor has); the test waits until the question
 * is on the terminal, then types Ctrl-C (or sends SIGTERM).  The child exits
 * with the answer, +100 when its own handler ran.
 */
static int ctrl_c_child(bool term)
{
	struct pty p = { .master = -1 };
	char out[8192];
	int status;
	pid_t pid;

	if (pty_open(&p) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = caller_handler };
		char *note;
		struct prompt_opts o = { .question = "Ship it?", .note = true };

		sigemptyset(&sa.sa_mask);
		if (setsid() < 0 || ioctl(p.slave, TIOCSCTTY, 0) < 0)
			_exit(98);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		enum prompt_answer a = prompt_ask(&note, &o);
		_exit((int)a + (caller_saw ? 100 : 0));
	}
	if (pid < 0 || !read_until(out, sizeof out, p.master, "[e]dit note / [?]: ")) {
		pty_close(&p);
		return -1;
	}
	if (term)
		kill(pid, SIGTERM);
	else if (write(p.master, "\x03", 1) != 1)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	pty_close(&p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_ctrl_c(void)
{
	CHECK_INT(ctrl_c_child(false), PROMPT_INTERRUPTED);
	CHECK_INT(ctrl_c_child(true), PROMPT_INTERRUPTED);
}

int main(void)
{
	RUN(test_no_tty);
	RUN(test_yes_no);
	RUN(test_reasks);
	RUN(test_note);
	RUN(test_view_and_help);
	RUN(test_eof);
	RUN(test_typeahead_kept);
	RUN(test_timeout);
	RUN(test_watch);
	RUN(test_line);
	RUN(test_interrupted_pending);
	RUN(test_ignored_signal);
	RUN(test_ctrl_c);
	return unit_done();
}
