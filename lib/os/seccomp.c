/* seccomp.c - the system calls a sandboxed command is refused; see seccomp.h. */
#include "os/seccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * The refused calls, by name (seccomp_refused) and by number in each ABI
 * the kernel may be entered through.  The native numbers come from
 * <sys/syscall.h>; i386's (the compat ABI of x86-64) are written out, from
 * the kernel's syscall_32.tbl (asm/unistd_32.h defines the same __NR_
 * names as the native header): 0 where i386 has no such call.
 */
#define REFUSED(X)                                                  \
	X(keyctl, 288)                                              \
	X(add_key, 286)                                             \
	X(request_key, 287)                                         \
	X(io_uring_setup, 425)                                      \
	X(io_uring_enter, 426)                                      \
	X(io_uring_register, 427)                                   \
	X(userfaultfd, 374)                                         \
	X(bpf, 357)                                                 \
	X(perf_event_open, 336)                                     \
	X(kexec_load, 283)                                          \
	X(kexec_file_load, 0)                                       \
	X(init_module, 128)                                         \
	X(finit_module, 350)                                        \
	X(delete_module, 129)

#define NAME(name, i386) #name,
static const char *const refused_names[] = { REFUSED(NAME) NULL };

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define COMPAT_ARCH AUDIT_ARCH_I386
#define X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef NATIVE_ARCH
#define NATIVE_NR(name, i386) SYS_##name,
static const uint32_t native_nr[] = { REFUSED(NATIVE_NR) };
#define NREFUSED (sizeof native_nr / sizeof *native_nr)
#ifdef COMPAT_ARCH
#define COMPAT_NR(name, i386) i386,
static const uint32_t compat_nr[] = { REFUSED(COMPAT_NR) };
#endif

/*
 * With the network cut, the calls that make a socket, by number (0: the
 * ABI has none).  socket() and socketpair() carry the family in their
 * first argument; i386 also makes sockets through socketcall(call, args),
 * whose family is behind a pointer a filter cannot read: with the network
 * cut its SYS_SOCKET and SYS_SOCKETPAIR are refused whatever the family.
 */
struct socket_nrs {
	uint32_t socket, socketpair, socketcall;
};
static const struct socket_nrs native_sockets = { SYS_socket, SYS_socketpair, 0 };
#ifdef COMPAT_ARCH
static const struct socket_nrs compat_sockets = { 359, 360, 102 };
#endif
#define SOCKETCALL_SOCKET 1
#define SOCKETCALL_SOCKETPAIR 8

/* The families a command makes sockets of with the network cut (see
 * seccomp.h); socket(AF_UNIX) refused under SECCOMP_NET_CUT_NO_UNIX. */
static const uint32_t allowed_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
#define NFAMILIES (sizeof allowed_families / sizeof *allowed_families)
#endif

const char *const *seccomp_refused(void)
{
	return refused_names;
}

bool seccomp_known(void)
{
#ifdef NATIVE_ARCH
	return true;
#else
	return false;
#endif
}

#ifdef NATIVE_ARCH
#define LOAD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define RET_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* The low 32 bits of the first argument (an int; little-endian ABIs). */
#define LOAD_ARG0 BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]))
/* Two ABI blocks of at most 3 + NREFUSED + 3 + 1 + 4 + 7 + 6 + 3, the
 * first LOAD_ARCH and the last ALLOW, with room to spare. */
#define MAX_INSNS (2 + 2 * (NREFUSED + 40))

/* Where a jump of an ABI's block goes: the next instruction, past the
 * block, or one of the returns at its end. */
enum target { T_NEXT, T_END, T_ALLOW, T_EPERM, T_SOCKET, T_PAIR, T_SOCKETCALL, NTARGETS };

/* A block being written: jumps name targets, resolved by block_end(). */
struct block {
	struct sock_filter *f;
	size_t n, max;
	uint8_t jt[MAX_INSNS], jf[MAX_INSNS]; /* enum target of each jump */
	size_t at[NTARGETS];
	bool overflow;
};

static void emit(struct block *b, struct sock_filter insn, enum target jt, enum target jf)
{
	if (b->n >= b->max) {
		b->overflow = true;
		return;
	}
	b->jt[b->n] = (uint8_t)jt;
	b->jf[b->n] = (uint8_t)jf;
	b->f[b->n++] = insn;
}

static void stmt(struct block *b, struct sock_filter insn)
{
	emit(b, insn, T_NEXT, T_NEXT);
}

/* if A == k go to jt, else to jf */
static void jeq(struct block *b, uint32_t k, enum target jt, enum target jf)
{
	emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0), jt, jf);
}

static void label(struct block *b, enum target t)
{
	b->at[t] = b->n;
}

/* Every jump's offset from its target; false when one does not fit. */
static bool block_end(struct block *b)
{
	b->at[T_END] = b->n;
	if (b->overflow)
		return false;
	for (size_t i = 0; i < b->n; i++) {
		if (BPF_CLASS(b->f[i].code) != BPF_JMP)
			continue;
		uint8_t *off[2] = { &b->f[i].jt, &b->f[i].jf };
		uint8_t to[2] = { b->jt[i], b->jf[i] };

		for (int j = 0; j < 2; j++) {
			size_t d = to[j] == T_NEXT ? 0 : b->at[to[j]] - (i + 1);

			if (to[j] != T_NEXT && (b->at[to[j]] <= i || d > 255))
				return false;
			*off[j] = (uint8_t)d;
		}
	}
	return true;
}

/* With A holding a socket's family: ALLOW when it is one of the allowed
 * (AF_UNIX refused with EPERM when no_unix), else EAFNOSUPPORT. */
static void family_test(struct block *b, bool no_unix)
{
	stmt(b, (struct sock_filter)LOAD_ARG0);
	if (no_unix)
		jeq(b, AF_UNIX, T_EPERM, T_NEXT);
	for (size_t i = 0; i < NFAMILIES; i++)
		jeq(b, allowed_families[i], T_ALLOW, T_NEXT);
	stmt(b, (struct sock_filter)RET_ERRNO(EAFNOSUPPORT));
}

/*
 * One ABI's block at f (at most max instructions; A holding the arch):
 * when the arch is not `arch`, on past the block; else the call's number
 * (masked) against each of nr (0s skipped), EPERM on a match; with the
 * network cut (sk not NULL) the calls that make a socket are let through
 * only for the allowed families.  The instructions written, 0 when they
 * do not fit.
 */
static size_t abi_block(struct sock_filter *f, size_t max, uint32_t arch, const uint32_t *nr, uint32_t mask,
			const struct socket_nrs *sk, bool no_unix)
{
	struct block b = { .f = f, .max = max < MAX_INSNS ? max : MAX_INSNS };

	jeq(&b, arch, T_NEXT, T_END);
	stmt(&b, (struct sock_filter)LOAD_NR);
	stmt(&b, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask));
	for (size_t i = 0; i < NREFUSED; i++)
		if (nr[i])
			jeq(&b, nr[i], T_EPERM, T_NEXT);
	if (sk) {
		jeq(&b, sk->socket, T_SOCKET, T_NEXT);
		jeq(&b, sk->socketpair, T_PAIR, T_NEXT);
		if (sk->socketcall)
			jeq(&b, sk->socketcall, T_SOCKETCALL, T_NEXT);
	}
	stmt(&b, (struct sock_filter)ALLOW);
	if (sk) {
		if (sk->socketcall) {
			label(&b, T_SOCKETCALL);
			stmt(&b, (struct sock_filter)LOAD_ARG0);
			jeq(&b, SOCKETCALL_SOCKET, T_EPERM, T_NEXT);
			jeq(&b, SOCKETCALL_SOCKETPAIR, T_EPERM, T_NEXT);
			stmt(&b, (struct sock_filter)ALLOW);
		}
		label(&b, T_SOCKET);
		family_test(&b, no_unix);
		/* a socketpair is connected already: AF_UNIX's too */
		label(&b, T_PAIR);
		family_test(&b, false);
	}
	label(&b, T_ALLOW);
	stmt(&b, (struct sock_filter)ALLOW);
	label(&b, T_EPERM);
	stmt(&b, (struct sock_filter)RET_ERRNO(EPERM));
	return block_end(&b) ? b.n : 0;
}
#endif

int seccomp_deny_child(enum seccomp_net net)
{
#ifdef NATIVE_ARCH
	struct sock_filter filter[MAX_INSNS];
	size_t n = 0, k;
	bool no_unix = net == SECCOMP_NET_CUT_NO_UNIX;
	uint32_t native_mask = 0xffffffffu;

	filter[n++] = (struct sock_filter)LOAD_ARCH;
#ifdef X32_BIT
	/* x32's numbers are x86-64's with X32_BIT set */
	native_mask = ~X32_BIT;
#endif
	k = abi_block(filter + n, MAX_INSNS - 1 - n, NATIVE_ARCH, native_nr, native_mask,
		      net != SECCOMP_NET_OPEN ? &native_sockets : NULL, no_unix);
	if (!k)
		return -E2BIG;
	n += k;
#ifdef COMPAT_ARCH
	k = abi_block(filter + n, MAX_INSNS - 1 - n, COMPAT_ARCH, compat_nr, 0xffffffffu,
		      net != SECCOMP_NET_OPEN ? &compat_sockets : NULL, no_unix);
	if (!k)
		return -E2BIG;
	n += k;
#endif
	filter[n++] = (struct sock_filter)ALLOW;
	struct sock_fprog prog = { .len = (unsigned short)n, .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
#else
	(void)net;
	return -ENOSYS;
#endif
}
