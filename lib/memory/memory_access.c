/*
 * memory_access.c - the accesses of recall recorded beside the database
 * (SQLite): "<db>.accesses".
 *
 * A recall counts each memory it returns (access_count, last_accessed).
 * Written to the database, that made every search a write transaction: a
 * WAL created, frames synced, the checkpoint of the last connection synced
 * again -- four fdatasync calls and ~1.5 ms of CPU for a count, in a
 * command that only reads.  So recall appends a line "ID MS" for each
 * memory it returned to this file, and the next write transaction on the
 * memories (mem_begin) folds the file into their rows; readers add what
 * the file holds to what the rows say (mem_row_json, recall's recency), so
 * the counts shown are the same as before.  The exceptions: SQL over the
 * rows alone (`forge metrics`' learning_application_rate) sees the
 * accesses once folded, and an access folded into a transaction that is
 * then rolled back is lost -- they are counts of use, not data.
 *
 * Appenders hold flock(LOCK_SH) while they write (one write(2) of less
 * than PIPE_BUF with O_APPEND); the fold holds LOCK_EX while it reads and
 * empties the file, so no line is read twice or lost between the read and
 * the truncation.  A file past ACCESS_FILE_MAX is folded by the recall
 * that finds it so (a store only searched, never written, stays bounded).
 * PostgreSQL, a store without a file of its own (":memory:", read-only)
 * and a directory where the file cannot be made write the rows directly.
 */
#include "memory/memory_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/forge.h"
#include "core/owner.h"

#define ACCESS_FILE_MAX (64u << 10)
/* one write(2) of a recall's lines: below PIPE_BUF, appended whole */
#define ACCESS_WRITE_MAX 4000u
#define ACCESS_ID_MAX 64

struct access {
	char id[ACCESS_ID_MAX + 1];
	long count;
	int64_t last;
};

struct mem_access {
	struct access *a;       /* sorted by id, one entry an id */
	size_t n, cap;
	bool known;             /* a and the stamp below describe the file */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

void mem_access_free(struct mem_access *acc)
{
	if (!acc)
		return;
	free(acc->a);
	free(acc);
}

static int access_cmp(const void *a, const void *b)
{
	return strcmp(((const struct access *)a)->id, ((const struct access *)b)->id);
}

static const struct access *access_find(const struct mem_access *acc, const char *id)
{
	struct access key = { .count = 0 };
	size_t n = strlen(id);

	if (!acc || !acc->n || n > ACCESS_ID_MAX)
		return NULL;
	memcpy(key.id, id, n + 1);
	return bsearch(&key, acc->a, acc->n, sizeof *acc->a, access_cmp);
}

/* The lines of text[0..len) into acc (emptied first): whole lines "ID MS"
 * only; an id a line repeats adds up. */
static void access_parse(struct mem_access *acc, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	size_t w = 0;

	acc->n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;
		char *num_end;
		long long ms;

		if (!nl)
			break;          /* a line still being written */
		sp = memchr(p, ' ', (size_t)(nl - p));
		if (sp && sp > p && sp - p <= ACCESS_ID_MAX) {
			errno = 0;
			ms = strtoll(sp + 1, &num_end, 10);
			if (num_end == nl && !errno && ms >= 0) {
				if (acc->n == acc->cap) {
					acc->cap = acc->cap * 2 + 32;
					acc->a = xrealloc(acc->a, acc->cap * sizeof *acc->a);
				}
				struct access *e = &acc->a[acc->n++];

				memcpy(e->id, p, (size_t)(sp - p));
				e->id[sp - p] = '\0';
				e->count = 1;
				e->last = ms;
			}
		}
		p = nl + 1;
	}
	if (!acc->n)
		return;
	qsort(acc->a, acc->n, sizeof *acc->a, access_cmp);
	for (size_t i = 1; i < acc->n; i++) {
		if (strcmp(acc->a[i].id, acc->a[w].id) == 0) {
			acc->a[w].count += acc->a[i].count;
			if (acc->a[i].last > acc->a[w].last)
				acc->a[w].last = acc->a[i].last;
		} else {
			acc->a[++w] = acc->a[i];
		}
	}
	acc->n = w + 1;
}

static int read_fd(struct buf *out, int fd, const char *path)
{
	char chunk[8192];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return forge_error("cannot read '%s': %s", path, strerror(errno));
		if (n == 0)
			return 0;
		buf_add(out, chunk, (size_t)n);
	}
}

static bool same_stamp(const struct mem_access *acc, const struct stat *sb)
{
	return acc->known && acc->dev == sb->st_dev && acc->ino == sb->st_ino &&
	       acc->size == sb->st_size && acc->mtime.tv_sec == sb->st_mtim.tv_sec &&
	       acc->mtime.tv_nsec == sb->st_mtim.tv_nsec;
}

static void set_stamp(struct mem_access *acc, const struct stat *sb)
{
	acc->known = true;
	acc->dev = sb->st_dev;
	acc->ino = sb->st_ino;
	acc->size = sb->st_size;
	acc->mtime = sb->st_mtim;
}

void mem_access_refresh(struct memory *m)
{
	struct mem_access *acc;
	struct buf text = BUF_INIT;
	struct stat sb;
	int fd;

	if (!m->acc_path)
		return;
	if (!m->acc)
		m->acc = xcalloc(1, sizeof *m->acc);
	acc = m->acc;
	fd = open(m->acc_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		acc->n = 0;          /* none recorded (or unreadable: the rows alone) */
		acc->known = false;
		return;
	}
	if (fstat(fd, &sb) == 0 && same_stamp(acc, &sb)) {
		close(fd);
		return;
	}
	/* (counts missing from a read that fails are only not shown yet) */
	if (read_fd(&text, fd, m->acc_path) == 0) {
		access_parse(acc, text.buf ? text.buf : "", text.len);
		set_stamp(acc, &sb);
	}
	close(fd);
	buf_release(&text);
}

bool mem_access_pending(const struct memory *m, const char *id, long *count, int64_t *last)
{
	const struct access *e = id ? access_find(m->acc, id) : NULL;

	if (!e)
		return false;
	*count = e->count;
	*last = e->last;
	return true;
}

/* Lock fd (flock op), retrying after signals. */
static int lock_fd(int fd, int op, const char *path)
{
	while (flock(fd, op) < 0) {
		if (errno != EINTR)
			return forge_error("cannot lock '%s': %s", path, strerror(errno));
	}
	return 0;
}

static int write_whole(int fd, const char *p, size_t len, const char *path)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return forge_error("cannot write '%s': %s", path, n < 0 ? strerror(errno) : "short write");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mem_access_record(struct memory *m, const char *const *ids, size_t n, int64_t now)
{
	struct buf lines = BUF_INIT;
	struct stat sb;
	int fd, rc = 0;

	if (!m->acc_path || !n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!ids[i] || !*ids[i] || strlen(ids[i]) > ACCESS_ID_MAX || strpbrk(ids[i], " \n"))
			goto direct;
		buf_addf(&lines, "%s %" PRId64 "\n", ids[i], now);
	}
	if (lines.len > ACCESS_WRITE_MAX)
		goto direct;
	fd = open(m->acc_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto direct;         /* a directory this user may not write: the rows */
	owner_follow(fd, m->acc_path);
	if (lock_fd(fd, LOCK_SH, m->acc_path) < 0 || fstat(fd, &sb) < 0 ||
	    (size_t)sb.st_size + lines.len > ACCESS_FILE_MAX) {
		close(fd);
		goto direct;         /* (folded by the write transaction that follows) */
	}
	rc = write_whole(fd, lines.buf, lines.len, m->acc_path);
	if (close(fd) < 0 && rc == 0)
		rc = forge_error("cannot write '%s': %s", m->acc_path, strerror(errno));
	buf_release(&lines);
	return rc < 0 ? -1 : 1;
direct:
	buf_release(&lines);
	return 0;
}

int mem_access_fold(struct memory *m)
{
	struct mem_access acc = { 0 };
	struct buf text = BUF_INIT;
	struct db_stmt *s = NULL;
	struct stat sb;
	int fd, rc = 0;

	assert(db_in_transaction(m->st));
	if (!m->acc_path || stat(m->acc_path, &sb) < 0 || sb.st_size == 0)
		return 0;
	fd = open(m->acc_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;            /* another user's file: it folds it */
	if (lock_fd(fd, LOCK_EX, m->acc_path) < 0 || read_fd(&text, fd, m->acc_path) < 0) {
		rc = -1;
		goto out;
	}
	if (!text.len)
		goto out;
	if (ftruncate(fd, 0) < 0) {
		rc = forge_error("cannot empty '%s': %s", m->acc_path, strerror(errno));
		goto out;
	}
	access_parse(&acc, text.buf, text.len);
	if (acc.n && db_prepare(&s, m->st, "UPDATE memories SET access_count = access_count + ?1, "
				"last_accessed = max(last_accessed, ?2) WHERE id = ?3") < 0)
		rc = -1;
	for (size_t i = 0; i < acc.n && rc == 0; i++) {
		db_reset(s);
		db_bind_int64(s, 1, acc.a[i].count);
		db_bind_int64(s, 2, acc.a[i].last);
		db_bind_text(s, 3, acc.a[i].id);
		if (db_step(s) != DB_DONE)
			rc = forge_error("cannot record the accesses of '%s'", m->acc_path);
	}
	/* not folded: the lines go back for the next transaction */
	if (rc < 0 && lseek(fd, 0, SEEK_SET) == 0)
		(void)write_whole(fd, text.buf, text.len, m->acc_path);
	/* what this process had read of the file is in the rows now */
	if (rc == 0 && m->acc) {
		m->acc->n = 0;
		m->acc->known = false;
	}
out:
	db_finalize(s);
	close(fd);
	free(acc.a);
	buf_release(&text);
	return rc;
}
