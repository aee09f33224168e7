/*
 * live.h - the model's text while a call streams (table live_text,
 * schemas/sql/011-live-text.sql and 013-live-span.sql,
 * schemas/pg/002-live-text.sql and 006-live-span.sql on PostgreSQL): written by the process that makes the
 * call, read by forge tui, which so shows the text as it comes for runs
 * started in any process on the database.  Never events: the finished
 * reply is in llm_calls.
 *
 * A writer (struct store_live) keeps the call's text so far in memory and
 * replaces the row's text at most every STORE_LIVE_INTERVAL_MS (the first
 * text at once), so a call costs a few UPDATEs a second however fast the
 * tokens come.  A write that fails (a busy or read-only database) turns the
 * writer off for the rest of the call, silently: showing the text is never
 * worth failing the call.  Nothing here prints.
 */
#ifndef FORGE_STORE_LIVE_H
#define FORGE_STORE_LIVE_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/ids.h"

struct store;

enum { STORE_LIVE_INTERVAL_MS = 100 };

struct store_live {
	struct store *st;               /* borrowed; NULL: off */
	char call[ULID_LEN + 1];        /* the row's id, "" between calls */
	struct buf text;                /* the call's text so far */
	size_t written;                 /* text.len at the last write */
	int64_t last_ms;                /* monotonic_ms() of the last write */
	int writes;                     /* UPDATEs made (for measurements) */
	int64_t (*clock_ms)(void);      /* NULL: monotonic_ms(); a test's own clock */
};

/* A writer on st (borrowed; NULL makes it do nothing). */
void store_live_init(struct store_live *w, struct store *st);
/* End a call still open (its row deleted) and free the text. */
void store_live_release(struct store_live *w);

/* A call starts: a new row for trace (phase, model and span may be NULL;
 * span: the sub-agent's span whose call it is, NULL for a phase's own
 * agent), with this process's pid and host.  A call still open is ended
 * first.  Strings are borrowed. */
void store_live_begin(struct store_live *w, const char *trace, const char *phase, const char *model,
		      const char *span);
/* Text arrived (len bytes, borrowed): kept, and written when the interval
 * has passed since the last write. */
void store_live_add(struct store_live *w, const char *text, size_t len);
/* The text so far is a whole block (the model's text block ended, a tool
 * call follows): written now if some of it is not yet, whatever the interval,
 * so the row holds the whole text of a finished block. */
void store_live_flush(struct store_live *w);
/* The call ended (either way): its row deleted. */
void store_live_end(struct store_live *w);

/* Another host's row not written for this long: its writer is taken for
 * gone (its process cannot be asked). */
enum { STORE_LIVE_STALE_MS = 86400 * 1000 };

/*
 * The live calls of trace, oldest first: [{"call_id","phase","model","span",
 * "pid","host","text","started_at","updated_at","alive"}] (span null for
 * a phase's own agent), alive false when the writer is gone as forge gc
 * judges it: on this host its process no longer runs
 * (store_lease_alive()); another host's row was not written for
 * STORE_LIVE_STALE_MS.  *out is the caller's.
 * 0, or -1 with forge_error() (the database).
 */
int store_live_list(jv *out, struct store *st, const char *trace);

/*
 * Rows whose writer is gone (forge gc): on this host, its process no longer
 * runs (store_lease_alive()); on another host, whose liveness cannot be told,
 * the row was not written for stale_ms.  Deleted unless dry_run; *removed
 * says how many (would be).  0, or -1 with forge_error() (the database).
 */
int store_live_prune(size_t *removed, struct store *st, int64_t stale_ms, bool dry_run);

#endif
