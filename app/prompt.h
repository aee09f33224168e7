/*
 * prompt.h - asking a human a yes/no question on a terminal: the one
 * prompt behind every human gate (forge-supervisor's gates, forge-deploy's
 * production gate).
 *
 * The question is line-oriented: the answer is a line, and a line typed
 * before the prompt appeared answers it (typeahead is never flushed, and
 * nothing after the answer's line is read).  "y"/"yes" approves, "n"/"no"
 * rejects, and with a note offered "e"/"edit" asks for a note line and
 * approves, "?"/"help" explains the keys and "v"/"view" shows the full text
 * in a pager, both then asking again; case and surrounding blanks do not
 * matter.  Anything else -
 * Enter alone, a typo - is not an answer: the question is asked again.
 *
 * End of input (Ctrl-D) and a signal (Ctrl-C's SIGINT, or SIGTERM) are not
 * answers either: they are reported so the caller can leave the decision
 * pending (exit 4 or 130) for `forge gate approve|reject` and a resume.
 * For the duration of the prompt SIGINT and SIGTERM are caught by the
 * prompt itself (without SA_RESTART, race-free with ppoll), so the read is
 * interrupted whatever handler the caller installed; the caller's handlers
 * and signal mask are restored before prompt_ask() returns, and a signal the
 * caller ignores (SIG_IGN) stays ignored.
 *
 * The prompt writes only to the terminal it asks on, never exits, and keeps
 * no state between calls (not thread-safe: one prompt at a time).
 */
#ifndef FORGE_PROMPT_H
#define FORGE_PROMPT_H

#include <stdbool.h>

enum prompt_answer {
	PROMPT_APPROVE,             /* y, yes */
	PROMPT_REJECT,              /* n, no */
	PROMPT_APPROVE_WITH_NOTE,   /* e, edit, then a note line (*note is set) */
	PROMPT_EOF,                 /* the input ended (Ctrl-D) before an answer */
	PROMPT_INTERRUPTED,         /* SIGINT or SIGTERM arrived during the prompt */
	PROMPT_TIMEOUT,             /* no answer within timeout_ms */
	PROMPT_NO_TTY,              /* no terminal to ask on */
	PROMPT_SETTLED,             /* o->watch said it was decided elsewhere */
};

/*
 * A question that can be settled elsewhere while it is asked (a gate decided
 * with `forge gate`, in `forge tui`, or expired): settled(arg) is asked
 * every every_ms while the prompt waits for input (not while the pager
 * runs), and true ends the prompt with PROMPT_SETTLED.  Input that is there
 * is read first: a line typed ahead is still an answer.
 */
struct prompt_watch {
	bool (*settled)(void *arg);
	void *arg;
	long every_ms;              /* > 0 */
};

struct prompt_opts {
	/* The terminal to ask on.  NULL: the controlling terminal (/dev/tty),
	 * or, without one, the terminal stdin is. */
	const char *tty;
	const char *text;           /* printed once before the question (may be NULL) */
	const char *question;       /* "Approve production deployment." */
	bool note;                  /* a gate's prompt: offer [e]dit (a note line,
				     * then approve) and [?] (help) */
	/* With note: offer [v]iew, which shows this text in $PAGER (default
	 * less; on the terminal when the pager cannot run), then asks again.
	 * NULL: no [v]. */
	const char *full;
	long timeout_ms;            /* for the whole prompt; <= 0: no limit */
	const struct prompt_watch *watch;   /* NULL: nothing settles it but an answer */
};

/*
 * Ask o->question on the terminal and wait for an answer.  *note receives
 * the note (caller frees) for PROMPT_APPROVE_WITH_NOTE, else NULL; an empty
 * note line approves without a note (PROMPT_APPROVE).
 */
enum prompt_answer prompt_ask(char **note, const struct prompt_opts *o);

/*
 * A free-text question (forge compile's interview): print o->text (may be
 * NULL) and o->question, then read one line.  PROMPT_APPROVE with *out the
 * line without surrounding blanks (malloc'd; may be empty: the human
 * chose not to answer), or PROMPT_EOF, PROMPT_INTERRUPTED, PROMPT_TIMEOUT,
 * PROMPT_SETTLED or PROMPT_NO_TTY with *out NULL.  o->note and o->full are not used.
 */
enum prompt_answer prompt_line(char **out, const struct prompt_opts *o);

/* "approve", "reject", "approve_with_note", "eof", "interrupted",
 * "timeout", "no_tty", "settled". */
const char *prompt_answer_name(enum prompt_answer a);

struct deploy_gate;   /* deploy/deploy.h */

/*
 * A deploy's gate (deploy_gate_for()) asked on the terminal at tty_path
 * (NULL: the controlling terminal, which works when stdin is a pipe):
 * print summary (may be NULL) and the gate's prompt with "[y/n]", and wait
 * up to gate->timeout_s (0 or absurd: no limit) for "y" or "n" (anything
 * else asks again).  PROMPT_EOF, PROMPT_TIMEOUT and PROMPT_NO_TTY leave the
 * gate waiting; PROMPT_INTERRUPTED is Ctrl-C.
 */
enum prompt_answer deploy_gate_ask(const struct deploy_gate *gate, const char *summary,
				   const char *tty_path);

#endif
