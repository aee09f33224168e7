/*
 * lazylib.h - a shared library loaded on first use (dlopen) instead of at
 * the program's start.
 *
 * libgit2 and libcurl bring ~40 libraries with them (TLS, Kerberos, LDAP,
 * SSH, ...) whose loading and relocation cost every program several ms
 * before main(), also for `--version`.  Their functions are defined in
 * lib/git/git2_lazy.c and lib/net/curl_lazy.c as thin wrappers that look up
 * the real one here on their first call, so a program loads them when it
 * first uses a repository or makes an HTTP request.  The library is opened
 * RTLD_NOW | RTLD_GLOBAL once per process and never closed.
 *
 * A library that cannot be loaded or a function it does not have ends the
 * process (exit 5, one line on stderr), as the dynamic loader would have at
 * start: the build linked against it, so the installation is broken.
 */
#ifndef FORGE_LAZYLIB_H
#define FORGE_LAZYLIB_H

struct lazylib {
	const char *soname;
	void *handle;           /* once loaded */
};

#define LAZYLIB_INIT(soname) { (soname), NULL }

/* The address of `name` in lib, loading lib on the first call. */
void *lazylib_sym(struct lazylib *lib, const char *name);

/* Whether lib was loaded in this process (for tests and benches). */
int lazylib_loaded(const struct lazylib *lib);

#endif
