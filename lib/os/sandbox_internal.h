/*
 * sandbox_internal.h - what the files of the sandbox share (sandbox.c,
 * sandbox_exec.c, sandbox_deps.c).  Not for other modules: use sandbox.h.
 */
#ifndef FORGE_OS_SANDBOX_INTERNAL_H
#define FORGE_OS_SANDBOX_INTERNAL_H

/*
 * The value of name in env (NAME=VALUE strings, NULL-terminated; env may be
 * NULL), borrowed from env, or NULL when it has no such entry.  The whole
 * name matches, never a prefix of another ("PATH" does not find
 * "PATHX=..."); of two entries the first, as getenv(3) takes it.
 */
const char *sandbox_env_value(char *const *env, const char *name);

/* How many seconds a toolchain home must have stayed unchanged before the
 * guard keeps its verdict for the next commands (sandbox_exec.c: 3).  A
 * variable for the unit tests only, which cannot make a directory old. */
extern int sandbox_home_settled_sec;

#endif
