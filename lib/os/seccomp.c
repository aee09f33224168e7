/* seccomp.c - the system calls a sandboxed command is refused; see seccomp.h. */
#include "os/seccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The numbers of keyctl, add_key and request_key in each ABI. */
#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define NR_KEYCTL 250
#define NR_ADD_KEY 248
#define NR_REQUEST_KEY 249
#define COMPAT_ARCH AUDIT_ARCH_I386
#define COMPAT_KEYCTL 288
#define COMPAT_ADD_KEY 286
#define COMPAT_REQUEST_KEY 287
#define X32_BIT 0x40000000u
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define NR_KEYCTL 219
#define NR_ADD_KEY 217
#define NR_REQUEST_KEY 218
#endif

bool seccomp_known(void)
{
#ifdef NATIVE_ARCH
	return true;
#else
	return false;
#endif
}

#define LOAD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define DENY BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

int seccomp_deny_child(void)
{
#ifdef NATIVE_ARCH
	static struct sock_filter filter[] = {
		LOAD_ARCH,
#ifdef COMPAT_ARCH
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COMPAT_ARCH, 8, 0),
#else
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 12),
#endif
		LOAD_NR,
#ifdef X32_BIT
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~X32_BIT),   /* x32's numbers are x86-64's */
#else
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xffffffffu),
#endif
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_KEYCTL, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_ADD_KEY, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_REQUEST_KEY, 1, 0),
		ALLOW,
		DENY,
		ALLOW,           /* (unreached) */
		/* the compat ABI (offset 10) */
		LOAD_NR,
#ifdef COMPAT_ARCH
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COMPAT_KEYCTL, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COMPAT_ADD_KEY, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, COMPAT_REQUEST_KEY, 1, 0),
#else
		ALLOW, ALLOW, ALLOW,
#endif
		ALLOW,
		DENY,
	};
	struct sock_fprog prog = { .len = sizeof filter / sizeof *filter, .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}
