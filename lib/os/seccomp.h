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
 * Without a mount namespace nothing hides the host's unix sockets, and
 * neither Landlock (which does not control connect) nor a network
 * namespace (which scopes abstract sockets only) keeps a command from
 * connecting to a pathname one: the D-Bus session bus (systemd-run --user
 * starts a process outside every wall), ssh-agent, docker.sock.  Asked
 * to, the filter refuses making a unix socket (socket(AF_UNIX, ...));
 * socketpair() still works.
 */
#ifndef FORGE_SECCOMP_H
#define FORGE_SECCOMP_H

#include <stdbool.h>

/* The names of the refused calls, NULL-terminated (static). */
const char *const *seccomp_refused(void);

/* Whether this architecture has the filter. */
bool seccomp_known(void);

/* In a child before exec (async-signal-safe): no_new_privs, then the
 * filter; with unix_sockets also socket(AF_UNIX, ...) is refused.  0, or
 * -errno (ENOSYS when the architecture is not known). */
int seccomp_deny_child(bool unix_sockets);

#endif
