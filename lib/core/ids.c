/* ids.c - ULIDs (monotonic within a process) and ISO-8601 timestamps. */
#include "core/ids.h"

#include <assert.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* The last id's time and random part, and the process that made it: a
 * forked child inherits them and must not continue its parent's sequence. */
static int64_t last_ms = -1;
static uint8_t last_rand[10];
static pid_t last_pid;

/* Random bytes fetched ahead, a few ids' worth at a time (one getrandom()
 * for 25 ids, not one each: a phase makes an id for every event); the
 * process that fetched them, so that a forked child takes none of its
 * parent's (pid: the caller's, from getpid()). */
static uint8_t pool[250];
static size_t pool_left;
static pid_t pool_pid;

static void fill_random(uint8_t *p, size_t n, pid_t pid)
{
	if (pid != pool_pid || pool_left < n) {
		uint8_t *q = pool;
		size_t want = sizeof pool;

		while (want > 0) {
			ssize_t got = getrandom(q, want, 0);

			if (got <= 0)
				continue;	/* EINTR; getrandom never fails otherwise once seeded */
			q += got;
			want -= (size_t)got;
		}
		pool_left = sizeof pool;
		pool_pid = pid;
	}
	memcpy(p, pool + sizeof pool - pool_left, n);
	/* (taken bytes are not kept: no id can share them with another) */
	memset(pool + sizeof pool - pool_left, 0, n);
	pool_left -= n;
}

/* Add one to the 80-bit big-endian random part; false on overflow. */
static bool increment_random(uint8_t r[10])
{
	for (int i = 9; i >= 0; i--)
		if (++r[i] != 0)
			return true;
	return false;
}

void ulid_new(char out[ULID_LEN + 1])
{
	int64_t ms = now_ms();
	uint8_t bytes[16];
	pid_t pid = getpid();

	if (pid != last_pid) {
		last_pid = pid;
		if (ms <= last_ms)
			ms = last_ms + 1;   /* keep above the parent's ids */
		fill_random(last_rand, sizeof last_rand, pid);
	} else if (ms <= last_ms) {
		/* Same (or an earlier, after a clock step) millisecond: stay monotonic. */
		ms = last_ms;
		if (!increment_random(last_rand)) {
			ms = ++last_ms;
			fill_random(last_rand, sizeof last_rand, pid);
		}
	} else {
		fill_random(last_rand, sizeof last_rand, pid);
	}
	last_ms = ms;

	for (int i = 5; i >= 0; i--) {
		bytes[i] = (uint8_t)(ms & 0xFF);
		ms >>= 8;
	}
	memcpy(bytes + 6, last_rand, sizeof last_rand);

	/* 128 bits as 26 base32 digits: the first digit carries the top 3 bits. */
	unsigned __int128 v = 0;
	for (int i = 0; i < 16; i++)
		v = (v << 8) | bytes[i];
	for (int i = ULID_LEN - 1; i >= 0; i--) {
		out[i] = crockford[(unsigned)(v & 31)];
		v >>= 5;
	}
	out[ULID_LEN] = '\0';
}

int64_t ulid_ms(const char *ulid)
{
	int64_t ms = 0;

	for (int i = 0; i < 10; i++)
		ms = ms << 5 | (int64_t)(strchr(crockford, ulid[i]) - crockford);
	return ms;
}

bool ulid_valid(const char *s)
{
	if (!s || strlen(s) != ULID_LEN || s[0] > '7')
		return false;
	for (int i = 0; i < ULID_LEN; i++)
		if (!strchr(crockford, s[i]) || s[i] == '\0')
			return false;
	return true;
}

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void timestamp_format(char out[TIMESTAMP_LEN + 1], int64_t ms)
{
	struct tm tm;
	size_t n;

	/* a time out of range (a database written by hand, an older import)
	 * is shown at the nearest end rather than ending the process */
	if (ms < 0)
		ms = 0;
	if (ms > TIMESTAMP_MAX_MS)
		ms = TIMESTAMP_MAX_MS;
	time_t secs = (time_t)(ms / 1000);
	gmtime_r(&secs, &tm);
	n = strftime(out, TIMESTAMP_LEN + 1, "%Y-%m-%dT%H:%M:%S", &tm);
	/* Four-digit years only: 19 characters, then ".mmmZ". */
	assert(n == 19);
	int frac = (int)(ms % 1000);
	out[19] = '.';
	out[20] = (char)('0' + frac / 100);
	out[21] = (char)('0' + frac / 10 % 10);
	out[22] = (char)('0' + frac % 10);
	out[23] = 'Z';
	out[24] = '\0';
}

void timestamp_now(char out[TIMESTAMP_LEN + 1])
{
	timestamp_format(out, now_ms());
}

int timestamp_parse(int64_t *out, const char *s)
{
	struct tm tm;
	const char *rest;
	int ms = 0;

	if (!s)
		return -1;
	memset(&tm, 0, sizeof tm);
	rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return -1;
	if (*rest == '.') {
		int digits = 0;
		for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*rest - '0');
		while (digits > 0 && digits < 3) {
			ms *= 10;
			digits++;
		}
	}
	if (*rest != 'Z' || rest[1] != '\0')
		return -1;
	*out = (int64_t)timegm(&tm) * 1000 + ms;
	return 0;
}
