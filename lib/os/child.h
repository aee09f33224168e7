/*
 * child.h - run a phase filter under the supervisor: its stdin fed from
 * memory, its stdout and stderr read line by line as they arrive.
 *
 * Unlike proc.h (a command run to completion with its output captured),
 * this streams: every line is handed to a callback as soon as it is
 * complete, so events are persisted and shown while the phase runs.  One
 * poll() loop writes stdin (non-blocking) and reads both outputs, so no
 * amount of input or output can deadlock the two processes (c-style.md §4).
 *
 * The child stays in the caller's process group (Ctrl-C on a terminal
 * reaches both); child_forward_signal() passes a SIGTERM on.  Pipes are
 * O_CLOEXEC; the child gets fds 0-2 only and SIGPIPE at its default.
 */
#ifndef FORGE_CHILD_H
#define FORGE_CHILD_H

#include <stddef.h>

struct child_opts {
	const char *const *argv;        /* argv[0] is a path; required */
	char *const *envp;              /* NULL = the caller's environment */
	const char *input;              /* written to stdin, which is then closed */
	size_t input_len;
	size_t max_line;                /* longer lines are cut here (and flagged); 0 = 16 MiB */
	/* A complete line (without its newline; NUL-terminated for convenience;
	 * `cut` when it was longer than max_line).  Borrowed for the call. */
	void (*on_stdout)(void *payload, const char *line, size_t len, int cut);
	void (*on_stderr)(void *payload, const char *line, size_t len, int cut);
	/* Called when neither output has data ready (a moment to commit). */
	void (*on_idle)(void *payload);
	void *payload;
};

/*
 * Run the child to its end.  *status is its exit status, or 128 + the
 * signal that killed it.  Returns 0, or -1 with a message when it could not
 * be started (the message names argv[0]).
 */
int child_run(int *status, const struct child_opts *opts);

/* Send sig to the child child_run() is running, if any (async-signal-safe). */
void child_forward_signal(int sig);

#endif
