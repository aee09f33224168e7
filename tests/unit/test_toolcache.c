/* test_toolcache.c - SHA-256 against FIPS 180-4's examples, and the tool
 * cache (lib/review/toolcache.h): a key changes with the command, the tool
 * binary and every byte, name and file of the directory; a kept run comes
 * back as it was; damaged entries and unkeyable directories are misses. */
#include "core/buf.h"
#include "core/sha256.h"
#include "review/toolcache.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char top[256], tool[300], dir[300];

static void hex_of(char out[65], const char *s, size_t n, size_t chunk)
{
	struct sha256 h;

	sha256_init(&h);
	for (size_t i = 0; i < n; i += chunk)
		sha256_update(&h, s + i, n - i < chunk ? n - i : chunk);
	sha256_hex(out, &h);
}

static void test_sha256_vectors(void)
{
	char hex[65];
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char *million = malloc(1000000);

	hex_of(hex, "", 0, 1);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of(hex, "abc", 3, 1);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	for (size_t chunk = 1; chunk <= 64; chunk *= 4) {   /* across block edges */
		hex_of(hex, two, strlen(two), chunk);
		CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	}
	memset(million, 'a', 1000000);
	hex_of(hex, million, 1000000, 1000);
	free(million);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void key_of(char key[65], const char *const *argv)
{
	CHECK(toolcache_key(key, argv, dir) == 0);
	CHECK(strlen(key) == 64);
}

static void test_key_covers_every_input(void)
{
	const char *argv[] = { tool, "--flag", "a.c", NULL };
	const char *other[] = { tool, "--flag", "b.c", NULL };
	char base[65], k[65], path[400];

	key_of(base, argv);
	key_of(k, argv);
	CHECK_STR(k, base);                              /* stable */
	key_of(k, other);
	CHECK(strcmp(k, base) != 0);                     /* the command */
	snprintf(path, sizeof path, "%s/a.c", dir);
	write_file(path, "int a;\n/* changed */\n");
	key_of(k, argv);
	CHECK(strcmp(k, base) != 0);                     /* a byte */
	write_file(path, "int a;\n");
	key_of(k, argv);
	CHECK_STR(k, base);
	snprintf(path, sizeof path, "%s/sub/new.h", dir);
	write_file(path, "");
	key_of(k, argv);
	CHECK(strcmp(k, base) != 0);                     /* a file more, even empty */
	CHECK(unlink(path) == 0);
	key_of(k, argv);
	CHECK_STR(k, base);
	snprintf(path, sizeof path, "%s/sub/x.c", dir);  /* a file renamed */
	char moved[400];
	snprintf(moved, sizeof moved, "%s/sub/y.c", dir);
	CHECK(rename(path, moved) == 0);
	key_of(k, argv);
	CHECK(strcmp(k, base) != 0);
	CHECK(rename(moved, path) == 0);
	write_file(tool, "#!/bin/sh\necho upgraded\n");  /* the tool binary */
	key_of(k, argv);
	CHECK(strcmp(k, base) != 0);
}

static void test_unkeyable(void)
{
	const char *argv[] = { tool, NULL }, *missing[] = { "/nonexistent/tool", NULL };
	char k[65], link[400];

	CHECK(toolcache_key(k, missing, dir) == -1);
	snprintf(link, sizeof link, "%s/escape", dir);
	CHECK(symlink("/etc/passwd", link) == 0);        /* not a file: no key */
	CHECK(toolcache_key(k, argv, dir) == -1);
	CHECK(unlink(link) == 0);
	CHECK(toolcache_key(k, argv, "/nonexistent/dir") == -1);
}

static void test_put_get(void)
{
	const char *argv[] = { tool, "x", NULL };
	char key[65], path[600];
	struct buf out = BUF_INIT;
	int code = -1;

	key_of(key, argv);
	CHECK(!toolcache_get(key, "/run/a", &code, &out));
	toolcache_put(key, "/run/a", 3, "line 1\nline 2 \0binary", 21);
	CHECK(toolcache_get(key, "/run/b", &code, &out));
	CHECK(code == 3);
	CHECK(out.len == 21 && memcmp(out.buf, "line 1\nline 2 \0binary", 21) == 0);
	buf_release(&out);
	/* the run's directory in the output is the new run's directory */
	buf_init(&out, 0);
	const char *printed = "/tmp/review-1/a.c:3: x\n/tmp/review-1/b.c:4: y\n";
	toolcache_put(key, "/tmp/review-1", 1, printed, strlen(printed));
	CHECK(toolcache_get(key, "/tmp/other-22", &code, &out));
	CHECK(code == 1);
	CHECK_STR(out.buf, "/tmp/other-22/a.c:3: x\n/tmp/other-22/b.c:4: y\n");
	buf_release(&out);
	/* an output holding the marker is not kept (the last one stays) */
	buf_init(&out, 0);
	toolcache_put(key, "/d", 0, "a\0forge-tool-dir\0b", 19);
	CHECK(toolcache_get(key, "/tmp/x", &code, &out));
	CHECK(code == 1);
	buf_release(&out);
	/* a damaged entry is a miss, never a wrong result */
	snprintf(path, sizeof path, "%s/cache/forge/tools/%.2s/%s", top, key, key + 2);
	write_file(path, "forge-toolcache 2\nnot a number\n");
	buf_init(&out, 0);
	CHECK(!toolcache_get(key, "/d", &code, &out));
	write_file(path, "something else\n0\n");
	CHECK(!toolcache_get(key, "/d", &code, &out));
	CHECK(out.len == 0);
	buf_release(&out);
}

static void test_prune(void)
{
	const char *argv[] = { tool, "old", NULL }, *argv2[] = { tool, "new", NULL };
	char old[65], young[65], path[600];
	struct timespec ages[2] = { { 1000000000, 0 }, { 1000000000, 0 } };   /* 2001 */
	size_t n, bytes;
	struct buf out = BUF_INIT;
	int code;

	key_of(old, argv);
	key_of(young, argv2);
	toolcache_put(old, "/d", 0, "old output", 10);
	toolcache_put(young, "/d", 0, "new", 3);
	snprintf(path, sizeof path, "%s/cache/forge/tools/%.2s/%s", top, old, old + 2);
	CHECK(utimensat(AT_FDCWD, path, ages, 0) == 0);
	CHECK(toolcache_prune(&n, &bytes, 30 * 86400L, true) == 0);
	CHECK(n >= 1 && bytes >= 10);                    /* test_put_get's entry may count too */
	CHECK(toolcache_get(old, "/d", &code, &out));    /* a dry run removes nothing... */
	buf_release(&out);
	CHECK(utimensat(AT_FDCWD, path, ages, 0) == 0);  /* (and a get makes it young) */
	CHECK(toolcache_prune(&n, &bytes, 30 * 86400L, false) == 0);
	CHECK(n == 1 && bytes == strlen("forge-toolcache 2\n0\n") + 10);
	buf_init(&out, 0);
	CHECK(!toolcache_get(old, "/d", &code, &out));
	CHECK(toolcache_get(young, "/d", &code, &out));
	buf_release(&out);
}

int main(void)
{
	char cmd[2048];

	snprintf(top, sizeof top, "%s/toolcache-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(top))
		return 1;
	snprintf(tool, sizeof tool, "%s/tool", top);
	snprintf(dir, sizeof dir, "%s/work", top);
	snprintf(cmd, sizeof cmd, "mkdir -p '%s/sub' && printf 'int a;\\n' >'%s/a.c' && echo x >'%s/sub/x.c' && "
		 "printf '#!/bin/sh\\n' >'%s' && chmod +x '%s'", dir, dir, dir, tool, tool);
	if (system(cmd) != 0)
		return 1;
	snprintf(cmd, sizeof cmd, "%s/cache", top);
	setenv("XDG_CACHE_HOME", cmd, 1);
	RUN(test_sha256_vectors);
	RUN(test_key_covers_every_input);
	RUN(test_unkeyable);
	RUN(test_put_get);
	RUN(test_prune);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	(void)!system(cmd);
	return unit_done();
}
