/* toolcache.c - linters' and scanners' runs kept by input (review/toolcache.h). */
#include "review/toolcache.h"
#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "core/owner.h"
#include "core/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "forge-toolcache 2\n"
/* Stands for the run's directory in a kept output (NULs: no text has it). */
#define DIR_MARK "\0forge-tool-dir\0"
#define DIR_MARK_LEN (sizeof DIR_MARK - 1)
#define INPUT_MAX_BYTES ((off_t)64 << 20)
#define MAX_DEPTH 32

struct walk {
	char **paths;                   /* relative to the top */
	size_t n, cap;
	off_t bytes;
};

/* Add the relative paths of the files under top/rel to w; -1 on anything
 * but files and directories, or too much. */
static int collect(struct walk *w, const char *top, const char *rel, int depth)
{
	struct buf path = BUF_INIT;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	buf_addf(&path, "%s%s%s", top, *rel ? "/" : "", rel);
	if (depth > MAX_DEPTH || !(d = opendir(path.buf))) {
		buf_release(&path);
		return -1;
	}
	while (rc == 0 && (e = readdir(d))) {
		struct buf sub = BUF_INIT;
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		buf_addf(&sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			rc = -1;
		else if (S_ISDIR(st.st_mode))
			rc = collect(w, top, sub.buf, depth + 1);
		else if (!S_ISREG(st.st_mode) || (w->bytes += st.st_size) > INPUT_MAX_BYTES)
			rc = -1;
		else {
			if (w->n == w->cap)
				w->paths = xrealloc(w->paths, (w->cap = w->cap ? 2 * w->cap : 16) * sizeof *w->paths);
			w->paths[w->n++] = buf_detach(&sub, NULL);
			continue;
		}
		buf_release(&sub);
	}
	closedir(d);
	buf_release(&path);
	return rc;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A length-prefixed field, so that no two inputs hash the same bytes. */
static void field(struct sha256 *h, const void *p, size_t n)
{
	char len[24];
	int k = snprintf(len, sizeof len, "%zu:", n);

	sha256_update(h, len, (size_t)k);
	sha256_update(h, p, n);
}

static int hash_file(struct sha256 *h, const char *top, const char *rel)
{
	struct buf path = BUF_INIT, content = BUF_INIT;
	int rc;

	buf_addf(&path, "%s/%s", top, rel);
	rc = buf_read_file(&content, path.buf);
	if (rc == 0) {
		field(h, rel, strlen(rel));
		field(h, content.buf, content.len);
	}
	buf_release(&content);
	buf_release(&path);
	return rc;
}

int toolcache_key(char key[65], const char *const *argv, const char *dir)
{
	struct walk w = { 0 };
	struct sha256 h;
	struct stat st;
	char id[160];
	int rc = -1;

	if (!argv[0] || stat(argv[0], &st) < 0)
		return -1;
	sha256_init(&h);
	field(&h, MAGIC, strlen(MAGIC));
	for (size_t i = 0; argv[i]; i++)
		field(&h, argv[i], strlen(argv[i]));
	snprintf(id, sizeof id, "%ju %ju %jd %jd.%09ld", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
		 (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	field(&h, id, strlen(id));
	if (collect(&w, dir, "", 0) < 0)
		goto out;
	qsort(w.paths, w.n, sizeof *w.paths, cmp_path);
	for (size_t i = 0; i < w.n; i++)
		if (hash_file(&h, dir, w.paths[i]) < 0)
			goto out;
	sha256_hex(key, &h);
	rc = 0;
out:
	for (size_t i = 0; i < w.n; i++)
		free(w.paths[i]);
	free(w.paths);
	return rc;
}

static char *entry_path(const char *key)
{
	struct buf name = BUF_INIT;
	char *path;

	buf_addf(&name, TOOLCACHE_DIR "/%.2s/%s", key, key + 2);
	path = cache_path(name.buf);
	buf_release(&name);
	return path;
}

/* Append s (n bytes) to out with every `from` replaced by `to`. */
static void replace_all(struct buf *out, const char *s, size_t n, const char *from, size_t from_len,
			const char *to, size_t to_len)
{
	const char *end = s + n, *hit;

	while (from_len && (hit = memmem(s, (size_t)(end - s), from, from_len))) {
		buf_add(out, s, (size_t)(hit - s));
		buf_add(out, to, to_len);
		s = hit + from_len;
	}
	buf_add(out, s, (size_t)(end - s));
}

bool toolcache_get(const char *key, const char *dir, int *exit_code, struct buf *out)
{
	char *path = entry_path(key), *end;
	struct buf b = BUF_INIT;
	bool hit = false;

	if (path && buf_read_file(&b, path) == 0 && b.len > strlen(MAGIC) &&
	    !memcmp(b.buf, MAGIC, strlen(MAGIC))) {
		const char *p = b.buf + strlen(MAGIC);
		long code = strtol(p, &end, 10);

		if (end != p && *end == '\n' && code >= 0 && code < 256) {
			*exit_code = (int)code;
			end++;
			replace_all(out, end, b.len - (size_t)(end - b.buf), DIR_MARK, DIR_MARK_LEN,
				    dir, strlen(dir));
			(void)utimensat(AT_FDCWD, path, NULL, 0);   /* used: kept by forge gc */
			hit = true;
		}
	}
	buf_release(&b);
	free(path);
	return hit;
}

void toolcache_put(const char *key, const char *dir, int exit_code, const char *out, size_t len)
{
	char *path = entry_path(key);
	struct buf tmp = BUF_INIT, kept = BUF_INIT;
	FILE *f;

	/* an output holding the marker itself could not be told apart */
	if (!path || memmem(out, len, DIR_MARK, DIR_MARK_LEN) || cache_mkdirs(path) < 0)
		goto out;
	replace_all(&kept, out, len, dir, strlen(dir), DIR_MARK, DIR_MARK_LEN);
	buf_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if ((f = fopen(tmp.buf, "we"))) {
		owner_follow(fileno(f), tmp.buf);
		bool ok = fprintf(f, MAGIC "%d\n", exit_code) > 0 &&
			  fwrite(kept.buf, 1, kept.len, f) == kept.len;

		if (fclose(f) != 0 || !ok || rename(tmp.buf, path) != 0)
			unlink(tmp.buf);
	}
out:
	buf_release(&kept);
	buf_release(&tmp);
	free(path);
}

/* Prune the entries of one fan-out directory dir. */
static void prune_dir(size_t *count, size_t *bytes, const char *dir, time_t before, bool dry_run)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_mtime >= before)
			continue;
		if (dry_run || unlinkat(dirfd(d), e->d_name, 0) == 0) {
			(*count)++;
			*bytes += (size_t)st.st_size;
		}
	}
	closedir(d);
	if (!dry_run)
		(void)rmdir(dir);       /* when it is empty now */
}

int toolcache_prune(size_t *count, size_t *bytes, long max_age_s, bool dry_run)
{
	char *top = cache_path(TOOLCACHE_DIR);
	time_t before = time(NULL) - max_age_s;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	*count = 0;
	*bytes = 0;
	if (!top)
		return 0;
	if (!(d = opendir(top))) {
		if (errno != ENOENT)
			rc = forge_error("tool cache '%s': %s", top, strerror(errno));
		free(top);
		return rc;
	}
	while ((e = readdir(d))) {
		struct buf sub = BUF_INIT;

		if (strlen(e->d_name) != 2 || e->d_name[0] == '.')
			continue;
		buf_addf(&sub, "%s/%s", top, e->d_name);
		prune_dir(count, bytes, sub.buf, before, dry_run);
		buf_release(&sub);
	}
	closedir(d);
	free(top);
	return rc;
}
