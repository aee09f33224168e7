/*
 * stream.h - the JSON-lines stream between forge programs (DESIGN.md §2).
 *
 * Reading.  stream_read() reads a whole input: each line is parsed on its
 * own (so one bad line cannot poison the rest), events and records of
 * unknown kinds are forwarded unchanged (their original bytes) as they are
 * read, and the last state record is kept as the program's input.  A bare
 * {"task": …} object, or input that is not JSON lines at all (plain text),
 * becomes the task; a program may claim non-JSON input first with a raw
 * hook (forge-review takes a unified diff).  The first line with content
 * decides (stream_looks_like_json): JSON lines when it looks like JSON
 * text, anything else raw text ("[bug] parser crashes" is a task) - but
 * text with stream records (JSON objects with a "kind") on later lines is
 * bad input: something wrote into a stream, and taking it all as one task
 * would lose the records.  A first line that looks like JSON and is not is
 * malformed JSON, its message hinting at --task for a text read so.
 *
 * Bad input - malformed JSON, a truncated last line, a line over the size
 * limit (a line of a text too), a text for raw_hook over STREAM_RAW_MAX, invalid UTF-8, a record that fails its schema, a state of a newer
 * protocol version - stops reading: stream_read() returns -1 with the line
 * number and reason, and cli_reject() (app/cli.h) then reports it the one way every
 * program must (one line on stderr, an input.rejected event on stdout) and
 * returns exit status 2.  Everything read before the bad line has already
 * been forwarded.
 *
 * Writing.  struct stream_out writes one record per line and flushes it.
 * Errors are sticky like stdio's: after a failed write (EPIPE when the
 * reader went away) further writes do nothing, `failed` is set, and
 * cli_out_status() (app/cli.h) says what to exit with.
 */
#ifndef FORGE_STREAM_H
#define FORGE_STREAM_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/ids.h"
#include "core/jsonscan.h"

#define STREAM_MAX_LINE_DEFAULT (16u << 20)

/* The most bytes of text that is not JSON lines (a diff) read for a
 * raw_hook, whatever its lines (each is still held to max_line): the text
 * is held whole, and what is made of it is several times its size.
 * Without a raw_hook text is a task, and max_line bounds it. */
#define STREAM_RAW_MAX (64u << 20)

/* The longest task description (bytes) a program takes, however it comes:
 * forge run TASK, --task, {"task": …} or plain text on stdin. */
#define STREAM_TASK_MAX (64u << 10)

/*
 * Check a task description given by a person: not blank, at most
 * STREAM_TASK_MAX bytes, valid UTF-8, no NUL.  0, or -1 with a message
 * ("the task is empty", …).
 */
int stream_task_check(const char *text, size_t len);

/*
 * Whether line (len bytes, no newline) looks like the start of JSON text,
 * so that an input beginning with it is read as JSON lines: after white
 * space, '{' followed (after white space) by '"' or '}', or '[' followed by
 * the start of a JSON value ('"', '{', '[', ']', '-', a digit, or true,
 * false or null as whole words); also '{' or '[' alone (a record printed
 * over several lines).  Anything else - "[bug] …", "{fix} …", "fix it" - is
 * plain text.  The one test every program reading a stream uses.
 */
bool stream_looks_like_json(const char *line, size_t len);

struct stream_options {
	size_t max_line;        /* bytes; 0 = STREAM_MAX_LINE_DEFAULT */
	bool forward_states;    /* pass state records through too (forge-events store) */
	bool validate;          /* check events and states against their schemas */
	/*
	 * Offered the whole input when it is not JSON lines.  Returns 1 when it
	 * took the input (stream_input.raw is set), 0 to decline (the text
	 * becomes the task), -1 with forge_error() to reject it as bad input.
	 */
	int (*raw_hook)(const char *text, size_t len, void *payload);
	/* What the text raw_hook takes is ("a diff"), and what to do instead
	 * when it is over STREAM_RAW_MAX ("review the commit with --commit
	 * SHA"): both said in the message.  May be NULL. */
	const char *raw_what;
	const char *raw_hint;
	/*
	 * Called for each event (after it is forwarded) with the record
	 * (borrowed) and its original line; a non-zero return stops reading and
	 * is passed back from stream_read (forge-events store persists here).
	 */
	int (*on_record)(jv rec, const char *line, size_t len, void *payload);
	/*
	 * When set, called instead of on_record for an event whose line was
	 * read without libjq (core/jsonscan.h: strict JSON, and its schema
	 * surely holds), with its fields (pointing into line).  An event the
	 * scan cannot judge still goes through libjq and to on_record.
	 */
	int (*on_event)(const struct json_event *ev, const char *line, size_t len, void *payload);
	/* Called when no input is ready, just before waiting for more. */
	void (*on_idle)(void *payload);
	void *payload;
};

struct stream_input {
	jv state;               /* the last state record, or jv_null() */
	jv task;                /* {"description": …} from {"task": …} or plain text, or jv_null() */
	jv raw;                 /* the input taken by raw_hook, as a string, or jv_null() */
	unsigned long lines;    /* lines read */
	unsigned long forwarded;/* records forwarded */
	unsigned long events;   /* events among them */
	unsigned long others;   /* records of other kinds among them (not event, not state) */
	char other_kind[32 + 1];/* the first of those: its kind (cut to 32 bytes), */
	unsigned long other_line;/* and its line */
	bool empty;             /* the input had nothing but white space */
	unsigned long text_line;/* the line the task's plain text starts on (0: no text) */
	/* trace of the last record seen, "" when none (a trace id has at
	 * most 128 characters: state.schema.json) */
	char trace_id[128 + 1];
	unsigned long error_line; /* after a failure: the line at fault (0: none) */
};

/* Zero in, with jv_null() members. */
void stream_input_init(struct stream_input *in);
void stream_input_release(struct stream_input *in);

struct stream_out;

/* stream_read() stopped because writing to fwd failed (see fwd->failed). */
#define STREAM_OUTPUT_FAILED (-2)

/*
 * Read `from` to the end (with read(2) on its descriptor: `from` must not
 * have been read through stdio before), forwarding to `fwd` (may be NULL).
 * Forwarded lines are flushed together whenever no more input is waiting
 * (before blocking on a read, and at the end), not one by one: a record is
 * never held while this program waits for its writer.  Returns 0, -1
 * for bad input (message from forge_last_error(), in->error_line set),
 * STREAM_OUTPUT_FAILED, or the non-zero value an on_record callback
 * returned.
 */
int stream_read(struct stream_input *in, FILE *from, struct stream_out *fwd,
		const struct stream_options *opt);

struct stream_out {
	FILE *f;
	const char *source;     /* program name: "forge-review" */
	const char *phase;      /* "review", or NULL */
	char trace_id[128 + 1];   /* (a trace id has at most 128 characters) */
	bool failed;
	int err;                /* errno of the failed write */
	bool hold;              /* stream_read() forwarding: flush when input pauses */
};

/* Set up writing to f.  Also ignores SIGPIPE so a closed reader shows up as
 * EPIPE on write instead of killing the process mid-transaction. */
void stream_out_init(struct stream_out *out, FILE *f, const char *source, const char *phase);
void stream_out_set_trace(struct stream_out *out, const char *trace_id);

/* Write one record as a line and flush.  Consumes rec.  -1 once failed. */
int stream_write(struct stream_out *out, jv rec);

/*
 * Write a state record after checking it against state.schema.json, so a
 * program never hands the next phase a state it would refuse.  Consumes
 * state.  -1 with the schema error (nothing written) when it does not
 * match: a bug in the program, not bad input.
 */
int stream_write_state(struct stream_out *out, jv state);

/*
 * Whether state (borrowed) is one a reader takes: of this protocol version
 * or older, matching state.schema.json.  0, or -1 with why (the version,
 * or the JSON path of the first error).
 */
int stream_state_check(jv state);

/*
 * A run's first state: phase "init", status ok, trace_id, task (consumed)
 * as given, no bounces, nothing spent, and a budget of budget_usd with all
 * of it remaining.  The one shape a run starts from, whether a phase run
 * alone starts it (a task on stdin) or the supervisor does.
 */
jv stream_state_initial(const char *trace_id, jv task, double budget_usd);

/*
 * Whether event record rec (borrowed) surely matches event.schema.json: the
 * schema's checks written out, for the hot path of stream_read().  False
 * when it does not, or when this cannot tell (then the schema validator
 * decides).  Exposed for tests.
 */
bool stream_event_surely_valid(jv rec);

/* The same for an event read by json_event_scan(). */
bool stream_event_scan_surely_valid(const struct json_event *ev);

/* Write what is buffered; 0, or -1 (out->failed set). */
int stream_flush(struct stream_out *out);

/* Write an original line unchanged (len bytes, without its newline). */
int stream_write_raw(struct stream_out *out, const char *line, size_t len);

/*
 * A new event record {"kind":"event","id","trace_id","ts","source","phase",
 * "type","payload"}.  Consumes payload (jv_null() → {}).
 */
jv stream_event_new(const struct stream_out *out, const char *type, jv payload);

/* Make and write an event.  Consumes payload. */
int stream_emit(struct stream_out *out, const char *type, jv payload);

/* Like stream_emit with the optional cost {"tokens","usd"} (consumed; null
 * to omit) and duration (negative to omit). */
int stream_emit_full(struct stream_out *out, const char *type, jv payload, jv cost,
		     long long duration_ms);


/*
 * A phase's status, as the state it writes carries it ("status"): the one
 * list of them.  Code branches on the enum; the strings are the stream's.
 */
enum state_status {
	STATE_OK,         /* "ok": the phase did its work */
	STATE_REJECTED,   /* "rejected": it said no (exit 1) */
	STATE_ESCALATED,  /* "escalated": a human must decide (exit 4) */
	STATE_TRIPPED,    /* "tripped": a circuit breaker stopped it (exit 3) */
	STATE_FAILED,     /* "failed": it could not do its work (exit 5) */
	STATE_SKIPPED,    /* "skipped": its guard did not hold (exit 1) */
	STATE_UNKNOWN     /* any other string, or none */
};

/* "ok", "rejected", …; "unknown" for STATE_UNKNOWN.  Static. */
const char *state_status_name(enum state_status s);
/* The status name names; STATE_UNKNOWN for NULL or another string. */
enum state_status state_status_of(const char *name);

#endif
