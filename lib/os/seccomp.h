/*
 * seccomp.h - the system calls a sandboxed command is refused.
 *
 * Landlock and the namespaces confine files, processes, the network and
 * IPC; the kernel's keyrings are none of those.  A command shares the
 * session keyring of the person running Forge -- where pam links their
 * user keyring, kerberos keeps tickets, `keyctl add` tokens -- and could
 * read or change it.  A seccomp filter answers keyctl, add_key and
 * request_key with EPERM (as Docker's default profile does), and with
 * them the calls that are kernel attack surface rather than anything a
 * build or a test suite needs: io_uring (whose operations a filter on the
 * ordinary calls would not see), userfaultfd, bpf, perf_event_open, and
 * loading kernels or modules (a root command without namespaces keeps its
 * capabilities).  x86-64 (x32 too), i386 and AArch64 are known; elsewhere
 * nothing is filtered (seccomp_deny_child() says so).
 *
 * A network namespace cuts the inet families only: vsock (a VM's way to
 * its host and the host's agents: one address space for the machine),
 * AF_PACKET, Bluetooth, CAN, TIPC, XDP, AF_ALG ... are not in it, and
 * each is kernel attack surface a build does not need.  With the network
 * cut the filter lets socket() and socketpair() make sockets of four
 * families only: AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (which `ip`
 * and getaddrinfo use in the command's namespace); every other family is
 * answered with EAFNOSUPPORT, as by a kernel without it.  i386's
 * socketcall() has the family behind a pointer a filter cannot read: with
 * the network cut its SYS_SOCKET and SYS_SOCKETPAIR are refused (EPERM)
 * whatever the family (an i386 glibc built for kernels before 4.3 makes
 * every socket that way).
 *
 * Without a mount namespace nothing hides the host's unix sockets, and
 * neither Landlock (which does not control connect) nor a network
 * namespace (which scopes abstract sockets only) keeps a command from
 * connecting to a pathname one: the D-Bus session bus (systemd-run --user
 * starts a process outside every wall), ssh-agent, docker.sock.  Asked
 * to, the filter refuses making a unix socket (socket(AF_UNIX, ...)) with
 * EPERM; socketpair() still works.
 */
#ifndef FORGE_SECCOMP_H
#define FORGE_SECCOMP_H

#include <stdbool.h>

/* The names of the refused calls, NULL-terminated (static). */
const char *const *seccomp_refused(void);

/* Whether this architecture has the filter. */
bool seccomp_known(void);

/* What the filter does to sockets. */
enum seccomp_net {
	SECCOMP_NET_OPEN,        /* every family */
	SECCOMP_NET_CUT,         /* unix, inet, inet6 and netlink only */
	SECCOMP_NET_CUT_NO_UNIX, /* those, without socket(AF_UNIX) */
};

/* In a child before exec (async-signal-safe): no_new_privs, then the
 * filter, refusing sockets as net says.  0, or -errno (ENOSYS when the
 * architecture is not known). */
int seccomp_deny_child(enum seccomp_net net);

#endif
