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
 * With unix_sockets: a call refused when its first argument is a value.
 * socket(AF_UNIX, ...) -- connect's address is behind a pointer a filter
 * cannot read, but a socket to connect with must be made first; a
 * socketpair is connected already and stays allowed.  i386 also makes
 * sockets through socketcall(SYS_SOCKET, args), whose domain is behind a
 * pointer: every socket made that way is refused (its glibc calls
 * socket(2) directly since Linux 4.3).  0, 0 ends a list.
 */
struct arg_rule {
	uint32_t nr, arg0;
};
static const struct arg_rule native_unix[] = { { SYS_socket, AF_UNIX }, { 0, 0 } };
#ifdef COMPAT_ARCH
static const struct arg_rule compat_unix[] = { { 359, AF_UNIX }, { 102, 1 /* SYS_SOCKET */ }, { 0, 0 } };
#endif
#define MAX_ARG_RULES 2
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
#define DENY BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* The low 32 bits of the first argument (an int; little-endian ABIs). */
#define LOAD_ARG0 BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]))
/* LOAD_ARCH, then per ABI: a test of the arch, LOAD_NR, AND, a test per
 * call, three per argument rule, ALLOW, DENY; then ALLOW for an ABI not
 * known */
#define MAX_INSNS (2 + 2 * (4 + NREFUSED + 3 * MAX_ARG_RULES + 2))

/*
 * One ABI's block at f (with A holding the arch): when the arch is not
 * `arch`, on past the block; else the call's number (masked) against each
 * of nr (0s skipped), EPERM on a match, then against each rule of args
 * (may be NULL): EPERM when its first argument is the rule's.  The
 * instructions written.
 */
static size_t abi_block(struct sock_filter *f, uint32_t arch, const uint32_t *nr, uint32_t mask,
			const struct arg_rule *args)
{
	size_t k = 0, tests = 0, rules = 0;

	for (size_t i = 0; i < NREFUSED; i++)
		tests += nr[i] != 0;
	while (args && args[rules].nr)
		rules++;
	/* the block after this jump: LOAD_NR, AND, the tests, the rules, ALLOW, DENY */
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0,
					      (uint8_t)(tests + 3 * rules + 4));
	f[k++] = (struct sock_filter)LOAD_NR;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask);
	for (size_t i = 0, left = tests; i < NREFUSED; i++) {
		if (!nr[i])
			continue;
		left--;
		/* past the tests left, the rules and the ALLOW, to the DENY */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr[i],
						      (uint8_t)(left + 3 * rules + 1), 0);
	}
	for (size_t i = 0; i < rules; i++) {
		uint8_t after = (uint8_t)(3 * (rules - i - 1));

		/* not this call: on to the next rule; this call: its argument
		 * decides (A no longer holds the number: no rule after) */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, args[i].nr, 0, 2);
		f[k++] = (struct sock_filter)LOAD_ARG0;
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, args[i].arg0,
						      (uint8_t)(after + 1), (uint8_t)after);
	}
	f[k++] = (struct sock_filter)ALLOW;
	f[k++] = (struct sock_filter)DENY;
	return k;
}
#endif

int seccomp_deny_child(bool unix_sockets)
{
#ifdef NATIVE_ARCH
	struct sock_filter filter[MAX_INSNS];
	size_t n = 0;

	filter[n++] = (struct sock_filter)LOAD_ARCH;
#ifdef X32_BIT
	/* x32's numbers are x86-64's with X32_BIT set */
	n += abi_block(filter + n, NATIVE_ARCH, native_nr, ~X32_BIT, unix_sockets ? native_unix : NULL);
#else
	n += abi_block(filter + n, NATIVE_ARCH, native_nr, 0xffffffffu, unix_sockets ? native_unix : NULL);
#endif
#ifdef COMPAT_ARCH
	n += abi_block(filter + n, COMPAT_ARCH, compat_nr, 0xffffffffu, unix_sockets ? compat_unix : NULL);
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
	(void)unix_sockets;
	return -ENOSYS;
#endif
}
