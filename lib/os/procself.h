/*
 * procself.h - what /proc/self/status says of the calling process: the
 * signals it ignores (SigIgn) or catches (SigCgt), and its capability
 * bounding set (CapBnd).  For a child between clone and exec, which asks
 * the kernel once instead of once a signal or a capability (~1.5 us a
 * system call on a paravirtualised machine; ~60 of them a command).
 *
 * procself_read_child() makes raw system calls only (open, read, close),
 * allocates nothing and writes nothing but its own stack and *out: it may
 * run in a child that shares the caller's memory (os/clonevm.h).  A caller
 * falls back to asking the kernel one by one when it fails (no /proc, a
 * /proc it may not read, a line missing): the answer is only ever used to
 * skip calls that would change nothing.
 */
#ifndef FORGE_OS_PROCSELF_H
#define FORGE_OS_PROCSELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { PROCSELF_SIG_IGN = 1, PROCSELF_SIG_CGT = 2, PROCSELF_CAP_BND = 4 };

/* Bit n - 1 stands for signal n, bit n for capability n (the kernel's
 * own layout). */
struct procself {
	uint64_t sig_ign, sig_cgt, cap_bnd;
};

/* A parser fed the text in pieces of any size. */
struct procself_parser {
	struct procself *out;
	unsigned want, found;
	char key[8];
	int klen, mode, digits;
	uint64_t val;
};

void procself_parser_init(struct procself_parser *p, struct procself *out, unsigned want);
/* Feed the next n bytes; true once every wanted line has been read whole. */
bool procself_parser_feed(struct procself_parser *p, const char *s, size_t n);

/*
 * The lines of `want` (PROCSELF_* or'ed) of /proc/self/status into *out
 * (the others left alone).  0, or -errno: -ENOENT when one of them is not
 * there or is not 16 hex digits.
 */
int procself_read_child(struct procself *out, unsigned want);

#endif
