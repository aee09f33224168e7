/*
 * procself.c - the signal and capability masks of /proc/self/status.  See
 * procself.h.
 */
#include "os/procself.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

enum { M_KEY, M_VALUE, M_SKIP };

static const struct {
	const char *key;
	unsigned bit;
} lines[] = {
	{ "SigIgn", PROCSELF_SIG_IGN }, { "SigCgt", PROCSELF_SIG_CGT }, { "CapBnd", PROCSELF_CAP_BND },
};

static void line_start(struct procself_parser *p)
{
	p->klen = 0;
	p->mode = M_KEY;
}

void procself_parser_init(struct procself_parser *p, struct procself *out, unsigned want)
{
	memset(p, 0, sizeof *p);
	p->out = out;
	p->want = want;
	line_start(p);
}

/* The wanted line whose key p->key is, or 0. */
static unsigned key_bit(const struct procself_parser *p)
{
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
		if ((p->want & lines[i].bit) && strcmp(p->key, lines[i].key) == 0)
			return lines[i].bit;
	return 0;
}

static void store(struct procself_parser *p)
{
	unsigned bit = key_bit(p);

	/* (the kernel writes 16 digits: anything else is not its line) */
	if (p->digits != 16)
		return;
	if (bit == PROCSELF_SIG_IGN)
		p->out->sig_ign = p->val;
	else if (bit == PROCSELF_SIG_CGT)
		p->out->sig_cgt = p->val;
	else
		p->out->cap_bnd = p->val;
	p->found |= bit;
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void feed_key(struct procself_parser *p, char c)
{
	if (c == ':') {
		p->key[p->klen] = '\0';
		p->mode = key_bit(p) ? M_VALUE : M_SKIP;
		p->val = 0;
		p->digits = 0;
	} else if (p->klen < (int)sizeof p->key - 1) {
		p->key[p->klen++] = c;
	} else {
		p->mode = M_SKIP;
	}
}

static void feed_value(struct procself_parser *p, char c)
{
	int d = hex(c);

	if ((c == '\t' || c == ' ') && p->digits == 0)
		return;
	if (d < 0 || p->digits >= 16) {
		p->mode = M_SKIP;
		return;
	}
	p->val = p->val << 4 | (uint64_t)d;
	p->digits++;
}

bool procself_parser_feed(struct procself_parser *p, const char *s, size_t n)
{
	for (size_t i = 0; i < n && p->found != p->want; i++) {
		if (s[i] == '\n') {
			if (p->mode == M_VALUE)
				store(p);
			line_start(p);
		} else if (p->mode == M_KEY) {
			feed_key(p, s[i]);
		} else if (p->mode == M_VALUE) {
			feed_value(p, s[i]);
		}
	}
	return p->found == p->want;
}

int procself_read_child(struct procself *out, unsigned want)
{
	/* the lines come ~1 KiB in: one read mostly (a bigger buffer would
	 * take another page of the child's stack) */
	char buf[1536];
	struct procself_parser p;
	bool done = false;
	ssize_t n = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC), e = 0;

	if (fd < 0)
		return -errno;
	procself_parser_init(&p, out, want);
	while (!done && ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
		if (n > 0)
			done = procself_parser_feed(&p, buf, (size_t)n);
	if (n < 0)
		e = errno;
	close(fd);
	if (done)
		return 0;
	return e ? -e : -ENOENT;
}
