/*
 * reaper.h - nothing a command starts outlives it, without namespaces.
 *
 * In a PID namespace the kernel ends every process of the command when its
 * PID 1 exits (nsview.h).  Where there is none (user namespaces refused, as
 * Ubuntu's AppArmor does for unprivileged users, or sandbox.namespaces off)
 * a process the command detaches from its group (setsid, a double fork)
 * would be reparented to init and keep running after the command -- still
 * able to write the worktree after review and tests have passed it.
 *
 * A process that calls reaper_become() is a child subreaper (Linux 3.4,
 * PR_SET_CHILD_SUBREAPER): every orphan among its descendants becomes its
 * child instead of init's.  When the command has exited, reaper_end_children()
 * sends SIGKILL to each of its children and reaps them, and again for the
 * orphans their deaths hand over, until it has none.
 *
 * Both make raw system calls only and allocate nothing, so they may run in
 * a child between fork and exec of a multi-threaded program.  The children
 * are read from /proc/thread-self/children (CONFIG_PROC_CHILDREN), else
 * found by their parent pid in /proc/PID/stat.
 */
#ifndef FORGE_REAPER_H
#define FORGE_REAPER_H

#include <sys/types.h>

/* Adopt this process's orphaned descendants: 0, or -errno. */
int reaper_become(void);

/* Reap children (the command and the orphans adopted) until `cmd` exits:
 * its wait status, or 0 when it cannot be had (no child is left). */
int reaper_wait_for(pid_t cmd);

/* Kill and reap every child, and the orphans that passes on, until none is
 * left: how many were killed, or -errno when /proc cannot be read (then
 * only the children that had already exited are reaped). */
int reaper_end_children(void);

#endif
