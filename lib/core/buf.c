/* buf.c - growable, bounded byte buffer. */
#include "core/buf.h"
#include "core/forge.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char buf_slop[1];

void buf_init(struct buf *b, size_t max)
{
	b->buf = buf_slop;
	b->len = 0;
	b->alloc = 0;
	b->max = max;
}

void buf_release(struct buf *b)
{
	if (b->alloc)
		free(b->buf);
	buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->alloc)
		b->buf[0] = '\0';
}

void buf_truncate(struct buf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		b->buf[len] = '\0';
	}
}

static int buf_grow(struct buf *b, size_t extra)
{
	size_t want;

	if (extra > SIZE_MAX - b->len - 1)
		return forge_error("buffer size overflow");
	want = b->len + extra;
	if (b->max && want > b->max)
		return forge_error("longer than the limit of %zu bytes", b->max);
	if (want + 1 <= b->alloc)
		return 0;
	size_t n = b->alloc ? b->alloc : 64;
	while (n < want + 1)
		n = n < SIZE_MAX / 2 ? n * 2 : want + 1;
	if (b->alloc) {
		b->buf = xrealloc(b->buf, n);
	} else {
		b->buf = xmalloc(n);
		b->buf[0] = '\0';
	}
	b->alloc = n;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t n)
{
	if (buf_grow(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->buf + b->len, data, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addch(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

int buf_add_shell_quoted(struct buf *b, const char *s)
{
	int rc = buf_addch(b, '\'');

	for (; *s && rc == 0; s++)
		rc = *s == '\'' ? buf_adds(b, "'\\''") : buf_addch(b, *s);
	return rc == 0 ? buf_addch(b, '\'') : rc;
}

/* The length of the control character at s (1, 2 for C1 in UTF-8), or 0. */
static size_t control_at(const unsigned char *s)
{
	if (*s < 0x20 || *s == 0x7f)
		return 1;
	return s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f ? 2 : 0;
}

bool buf_path_needs_quotes(const char *path)
{
	for (const unsigned char *s = (const unsigned char *)path; *s; s++)
		if (*s == '"' || *s == '\\' || control_at(s))
			return true;
	return false;
}

int buf_add_path_quoted(struct buf *b, const char *path)
{
	size_t start = b->len;
	int rc;

	if (!buf_path_needs_quotes(path))
		return buf_adds(b, path);
	rc = buf_addch(b, '"');
	for (const unsigned char *s = (const unsigned char *)path; *s && rc == 0; ) {
		size_t n = control_at(s);

		if (*s == '"' || *s == '\\') {
			rc = buf_addf(b, "\\%c", *s);
		} else if (n == 1 && *s >= '\a' && *s <= '\r') {
			rc = buf_addf(b, "\\%c", "abtnvfr"[*s - '\a']);
		} else if (n == 0) {
			rc = buf_addch(b, (char)*s);
		} else {
			for (size_t i = 0; i < n && rc == 0; i++)
				rc = buf_addf(b, "\\%03o", s[i]);
		}
		s += n ? n : 1;
	}
	if (rc == 0)
		rc = buf_addch(b, '"');
	if (rc < 0)
		buf_truncate(b, start);
	return rc;
}

char *buf_path_quoted(const char *path)
{
	struct buf b = BUF_INIT;

	buf_add_path_quoted(&b, path);
	return buf_detach(&b, NULL);
}

int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return forge_error("bad format string");
	if (buf_grow(b, (size_t)n) < 0)
		return -1;
	vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vaddf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int buf_read_file(struct buf *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	char chunk[65536];
	size_t n;
	int rc = 0;

	if (!f)
		return forge_error("cannot open '%s': %s", path, strerror(errno));
	while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (buf_add(b, chunk, n) < 0)
			rc = forge_error("'%s' is larger than %zu bytes", path, b->max);
	if (rc == 0 && ferror(f))
		rc = forge_error("cannot read '%s': %s", path, strerror(errno));
	fclose(f);
	return rc;
}

int buf_open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC), err;
	struct stat st;

	if (fd < 0) {
		err = errno;
		forge_error("cannot open '%s': %s", path, strerror(err));
	} else if (fstat(fd, &st) < 0) {
		err = errno;
		forge_error("cannot read '%s': %s", path, strerror(err));
	} else if (!S_ISREG(st.st_mode)) {
		err = EINVAL;
		forge_error("cannot read '%s': not a regular file", path);
	} else {
		return fd;
	}
	if (fd >= 0)
		close(fd);
	errno = err;
	return -1;
}

int buf_read_regular(struct buf *b, const char *path, size_t max)
{
	size_t start = b->len;
	char chunk[65536];
	int fd = buf_open_regular(path), rc = 0;

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = forge_error("cannot read '%s': %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (b->len - start + (size_t)n > max || buf_add(b, chunk, (size_t)n) < 0) {
			rc = forge_error("'%s' is larger than %zu bytes", path, max);
			errno = EFBIG;
			break;
		}
	}
	close(fd);
	if (rc < 0)
		buf_truncate(b, start);
	return rc;
}

char *buf_detach(struct buf *b, size_t *len_out)
{
	char *s;

	if (len_out)
		*len_out = b->len;
	s = b->alloc ? b->buf : xstrdup("");
	buf_init(b, b->max);
	return s;
}

/* The file a replacement of path goes to: path, or what the symbolic links
 * at path lead to (a dotfiles repository's file, say), resolved one at a
 * time so that one to a file not made yet resolves too.  Malloc'd. */
static char *link_target(const char *path)
{
	char *cur = xstrdup(path);

	for (int hops = 0; hops < 40; hops++) {
		char target[PATH_MAX];
		ssize_t n = readlink(cur, target, sizeof target - 1);

		if (n < 0)
			break;
		target[n] = '\0';
		struct buf next = BUF_INIT;
		const char *slash = strrchr(cur, '/');
		if (target[0] != '/' && slash)
			buf_add(&next, cur, (size_t)(slash - cur + 1));
		buf_adds(&next, target);
		free(cur);
		cur = buf_detach(&next, NULL);
	}
	return cur;
}

int buf_replace_file(const char *path, const char *data, size_t len)
{
	struct buf tmp = BUF_INIT;
	char *real = link_target(path);
	struct stat st;
	bool had = stat(real, &st) == 0;
	mode_t mode = had ? st.st_mode & 07777 : 0644;
	size_t off = 0;
	int fd, rc = 0;

	buf_addf(&tmp, "%s.tmp.%ld", real, (long)getpid());
	fd = open(tmp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		rc = forge_error("cannot create '%s': %s", tmp.buf, strerror(errno));
		goto out;
	}
	(void)fchmod(fd, mode);   /* the file's own mode, not the umask's */
	/* and its owner, for root: `sudo forge config set` left the user a
	 * configuration of root's they could no longer change */
	if (had && geteuid() == 0 && (st.st_uid != 0 || st.st_gid != 0) &&
	    fchown(fd, st.st_uid, st.st_gid) < 0) {
		/* best effort: root's, as a new file would be */
	}
	while (rc == 0 && off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = forge_error("cannot write '%s': %s", tmp.buf, n < 0 ? strerror(errno) : "short write");
		else
			off += (size_t)n;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = forge_error("cannot write '%s': %s", tmp.buf, strerror(errno));
	if (close(fd) < 0 && rc == 0)
		rc = forge_error("cannot write '%s': %s", tmp.buf, strerror(errno));
	if (rc == 0 && rename(tmp.buf, real) < 0)
		rc = forge_error("cannot replace '%s': %s", real, strerror(errno));
	if (rc < 0)
		unlink(tmp.buf);
out:
	buf_release(&tmp);
	free(real);
	return rc;
}
