/* test_procself.c - the masks of /proc/self/status (lib/os/procself.h):
 * read whole from pieces of any size, refused when a line is missing or
 * is not the kernel's, and what the kernel says of this very process. */
#include "os/procself.h"
#include "unit.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

static const char status[] =
	"Name:\tforge-implement\nUmask:\t0022\nState:\tR (running)\n"
	"Groups:\t0 4 24 27 30 46 100 118 1000 1001 1002 1003 1004\n"
	"SigQ:\t0/31291\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"
	"SigBlk:\t0000000000000000\nSigIgn:\t8000000201001000\nSigCgt:\t0000000000004002\n"
	"CapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n"
	"CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\n";

/* The masks of text fed in pieces of `piece` bytes; whether all were read. */
static bool parse(struct procself *ps, const char *text, size_t piece, unsigned want)
{
	struct procself_parser p;
	size_t n = strlen(text);
	bool done = false;

	memset(ps, 0, sizeof *ps);
	procself_parser_init(&p, ps, want);
	for (size_t at = 0; at < n; at += piece)
		done = procself_parser_feed(&p, text + at, at + piece < n ? piece : n - at);
	return done;
}

static void test_pieces(void)
{
	const unsigned all = PROCSELF_SIG_IGN | PROCSELF_SIG_CGT | PROCSELF_CAP_BND;
	struct procself ps;

	for (size_t piece = 1; piece <= sizeof status; piece++) {
		CHECK(parse(&ps, status, piece, all));
		CHECK(ps.sig_ign == 0x8000000201001000ULL);
		CHECK(ps.sig_cgt == 0x4002);
		CHECK(ps.cap_bnd == 0x1ffffffffffULL);
	}
	/* only what was asked for */
	CHECK(parse(&ps, status, 64, PROCSELF_CAP_BND));
	CHECK(ps.cap_bnd == 0x1ffffffffffULL && ps.sig_ign == 0 && ps.sig_cgt == 0);
}

static void test_refused(void)
{
	struct procself ps;

	/* a line missing, cut short, or not 16 hex digits: not read */
	CHECK(!parse(&ps, "SigIgn:\t0000000000000000\n", 5, PROCSELF_SIG_IGN | PROCSELF_SIG_CGT));
	CHECK(!parse(&ps, "CapBnd:\t000001ffffffffff", 5, PROCSELF_CAP_BND));
	CHECK(!parse(&ps, "CapBnd:\t1ff\n", 5, PROCSELF_CAP_BND));
	CHECK(!parse(&ps, "CapBnd:\t000001ffffffffff0\n", 5, PROCSELF_CAP_BND));
	CHECK(!parse(&ps, "CapBnd:\t000001fffffffffX\n", 5, PROCSELF_CAP_BND));
	CHECK(!parse(&ps, "CapBnd:\t000001FFFFFFFFFF\n", 5, PROCSELF_CAP_BND));
	/* another key that begins or ends alike */
	CHECK(!parse(&ps, "XCapBnd:\t000001ffffffffff\nCapBndX:\t000001ffffffffff\n", 3, PROCSELF_CAP_BND));
	/* a line that is not it does not count, the next one does */
	CHECK(parse(&ps, "CapBnd:\t1ff\nCapBnd:\t00000000000001ff\n", 7, PROCSELF_CAP_BND));
	CHECK(ps.cap_bnd == 0x1ff);
}

static void on_signal(int sig)
{
	(void)sig;
}

/* This process: the signals it ignores and catches (bits above 32
 * included), and the bounding set prctl() reports one by one. */
static void test_self(void)
{
	const int ign = SIGRTMIN + 4, cgt = SIGRTMAX - 1;
	struct sigaction sa, old_ign, old_cgt, old_usr;
	struct procself ps;
	uint64_t bnd = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(ign, &sa, &old_ign);
	sigaction(SIGUSR1, &sa, &old_usr);
	sa.sa_handler = on_signal;
	sigaction(cgt, &sa, &old_cgt);
	CHECK_INT(procself_read_child(&ps, PROCSELF_SIG_IGN | PROCSELF_SIG_CGT | PROCSELF_CAP_BND), 0);
	sigaction(ign, &old_ign, NULL);
	sigaction(SIGUSR1, &old_usr, NULL);
	sigaction(cgt, &old_cgt, NULL);
	CHECK(ps.sig_ign >> (ign - 1) & 1);
	CHECK(ps.sig_ign >> (SIGUSR1 - 1) & 1);
	CHECK(!(ps.sig_ign >> (cgt - 1) & 1));
	CHECK(ps.sig_cgt >> (cgt - 1) & 1);
	CHECK(!(ps.sig_cgt >> (ign - 1) & 1));
	for (int c = 0, r; c < 64 && (r = prctl(PR_CAPBSET_READ, c, 0, 0, 0)) >= 0; c++)
		bnd |= (uint64_t)(r == 1) << c;
	CHECK(ps.cap_bnd == bnd);
}

int main(void)
{
	RUN(test_pieces);
	RUN(test_refused);
	RUN(test_self);
	return unit_done();
}
