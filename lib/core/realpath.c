/* realpath.c - realpath() resolved by the kernel: see realpath.h.  This file
 * holds nothing else: a program linked without the --wrap (a fuzzer) never
 * pulls it from the archive, so never needs __real_realpath. */
#include "core/realpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kernel's name of the file at `path` into out[PATH_MAX]; false when
 * glibc must answer instead (see realpath.h for when). */
static bool kernel_name(char out[PATH_MAX], const char *path)
{
	static const char deleted[] = " (deleted)";
	char link[32];
	int fd = path ? open(path, O_PATH | O_CLOEXEC) : -1;

	if (fd < 0)
		return false;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, out, PATH_MAX);
	close(fd);
	if (n <= 0 || n >= PATH_MAX || out[0] != '/')
		return false;
	out[n] = '\0';
	size_t d = sizeof deleted - 1;
	return !((size_t)n >= d && memcmp(out + n - d, deleted, d) == 0);
}

char *__wrap_realpath(const char *path, char *resolved)
{
	char name[PATH_MAX];
	int saved = errno;

	if (kernel_name(name, path)) {
		char *out = resolved ? memcpy(resolved, name, strlen(name) + 1) : strdup(name);
		if (out) {
			errno = saved;
			return out;
		}
	}
	errno = saved;
	return __real_realpath(path, resolved);
}

char *__wrap___realpath_chk(const char *path, char *resolved, size_t resolvedlen)
{
	if (resolvedlen < PATH_MAX)
		return __real___realpath_chk(path, resolved, resolvedlen);
	return __wrap_realpath(path, resolved);
}
