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

size_t buf_control_at(const char *s, size_t left)
{
	const unsigned char *u = (const unsigned char *)s;

	if (!left)
		return 0;
	if (u[0] < 0x20 || u[0] == 0x7f)
		return 1;
	return left >= 2 && u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f ? 2 : 0;
}

/* buf_control_at() in a NUL-terminated string (past a byte that is not
 * NUL, the next one is there to read). */
static size_t control_at(const unsigned char *s)
{
	return buf_control_at((const char *)s, *s ? 2 : 1);
}

int buf_add_visible(struct buf *b, const char *s, size_t n)
{
	size_t start = b->len, from = 0;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; ) {
		size_t k = buf_control_at(s + i, n - i);
		unsigned char c = (unsigned char)s[i];

		if (!k || c == '\n' || c == '\t') {
			i += k ? k : 1;
			continue;
		}
		rc = buf_add(b, s + from, i - from);
		if (rc == 0 && k == 2)
			rc = buf_addf(b, "<U+%04X>", (unsigned char)s[i + 1]);
		else if (rc == 0)
			rc = buf_addf(b, "^%c", c == 0x7f ? '?' : c + 0x40);
		i += k;
		from = i;
	}
	if (rc == 0)
		rc = buf_add(b, s + from, n - from);
	if (rc < 0)
		buf_truncate(b, start);
	return rc;
}

/* The length of the well-formed UTF-8 character at s (1 for ASCII), or 0
 * when the byte at s starts none (a Latin-1 byte in a name, say).  As
 * json_utf8_seq() (no overlongs, no surrogates), which is not used here:
 * it would bring json.c, and libm, into every program that quotes a name. */
static size_t utf8_char_at(const unsigned char *s, const unsigned char *end)
{
	size_t n = *s < 0x80 ? 0 : *s >= 0xc2 && *s <= 0xdf ? 1 : *s >= 0xe0 && *s <= 0xef ? 2 :
		   *s >= 0xf0 && *s <= 0xf4 ? 3 : SIZE_MAX;
	uint32_t cp = *s & (n == 1 ? 0x1f : n == 2 ? 0x0f : 0x07);

	if (n == SIZE_MAX || (size_t)(end - s) <= n)
		return n ? 0 : 1;
	for (size_t i = 1; i <= n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n + 1;
}

bool buf_path_needs_quotes(const char *path)
{
	const unsigned char *end = (const unsigned char *)path + strlen(path);

	for (const unsigned char *s = (const unsigned char *)path; *s; ) {
		size_t n = utf8_char_at(s, end);
		if (*s == '"' || *s == '\\' || control_at(s) || !n)
			return true;
		s += n;
	}
	return false;
}

int buf_add_path_quoted(struct buf *b, const char *path)
{
	size_t start = b->len;
	int rc;

	if (!buf_path_needs_quotes(path))
		return buf_adds(b, path);
	rc = buf_addch(b, '"');
	for (const unsigned char *s = (const unsigned char *)path, *end = s + strlen(path);
	     *s && rc == 0; ) {
		size_t n = control_at(s);

		if (*s == '"' || *s == '\\') {
			rc = buf_addf(b, "\\%c", *s);
		} else if (n == 1 && *s >= '\a' && *s <= '\r') {
			rc = buf_addf(b, "\\%c", "abtnvfr"[*s - '\a']);
		} else if (n == 0 && !(n = utf8_char_at(s, end))) {
			rc = buf_addf(b, "\\%03o", *s);   /* a byte that is not UTF-8 */
		} else if (!control_at(s)) {
			rc = buf_add(b, s, n);   /* a character, as it is */
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

char *buf_path_unquoted(const char *shown)
{
	static const char esc[] = "abtnvfr\"\\", val[] = "\a\b\t\n\v\f\r\"\\";
	struct buf b = BUF_INIT;
	const char *s = shown;

	if (!shown)
		return NULL;
	if (*s++ != '"')
		return xstrdup(shown);
	while (*s && *s != '"') {
		const char *e;

		if (*s != '\\') {
			buf_addch(&b, *s++);
		} else if (s[1] && (e = strchr(esc, s[1]))) {
			buf_addch(&b, val[e - esc]);
			s += 2;
		} else if (s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
			   s[3] <= '7' && (s[1] != '0' || s[2] != '0' || s[3] != '0')) {
			buf_addch(&b, (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0')));
			s += 4;
		} else {
			break;   /* not an escape the quoting writes: a name as it is */
		}
	}
	if (*s != '"' || s[1]) {
		buf_release(&b);
		return xstrdup(shown);
	}
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
		/* O_NOFOLLOW's ELOOP: a link, which is not "too many levels" of them */
		if (err == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			forge_error("cannot open '%s': it is a symbolic link (not followed)", path);
		else
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
