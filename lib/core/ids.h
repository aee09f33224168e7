/*
 * ids.h - ULIDs and timestamps.
 *
 * A ULID is 26 characters of Crockford base32: 48 bits of milliseconds since
 * the epoch, then 80 random bits from getrandom(2).  Ids made by one process
 * within the same millisecond increase (the random part is incremented), so
 * ids sort in creation order; across processes they are unique with
 * overwhelming probability and sort by millisecond.  A forked child draws
 * new random bits rather than continuing its parent's sequence.  This is
 * the only ULID generator and clock of Forge: the store and every other
 * module take their ids and timestamps from here.
 */
#ifndef FORGE_IDS_H
#define FORGE_IDS_H

#include <stdbool.h>
#include <stdint.h>

#define ULID_LEN 26
#define TIMESTAMP_LEN 24   /* 2026-11-21T21:30:00.123Z */
/* The times a timestamp can write: 1970-01-01T00:00:00.000Z to
 * 9999-12-31T23:59:59.999Z, in milliseconds since the epoch. */
#define TIMESTAMP_MAX_MS 253402300799999LL

/* Write a new ULID and its NUL into out[ULID_LEN + 1]. */
void ulid_new(char out[ULID_LEN + 1]);

/* The milliseconds since the epoch encoded in a well-formed ULID (the time
 * part: it may be a little ahead of now_ms() for ids made in a burst). */
int64_t ulid_ms(const char *ulid);

/* True when s is a well-formed ULID (26 Crockford base32 characters). */
bool ulid_valid(const char *s);

/* Milliseconds since the epoch (CLOCK_REALTIME). */
int64_t now_ms(void);

/* Milliseconds of a monotonic clock, for durations. */
int64_t monotonic_ms(void);

/* ISO-8601 UTC with milliseconds, "2026-11-21T21:30:00.123Z", into
 * out[TIMESTAMP_LEN + 1]; ms outside 0..TIMESTAMP_MAX_MS is taken as the
 * nearest end of that range. */
void timestamp_format(char out[TIMESTAMP_LEN + 1], int64_t ms);
void timestamp_now(char out[TIMESTAMP_LEN + 1]);

/* Milliseconds since the epoch of a timestamp written by timestamp_format
 * ("2026-11-21T21:30:00.123Z"; the fraction may be absent).  -1 when s is
 * NULL or not of that form. */
int timestamp_parse(int64_t *out, const char *s);

#endif
