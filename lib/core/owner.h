/*
 * owner.h - whose Forge's own files are, and what to say when another
 * user's stand in the way.
 *
 * `sudo forge run` in a user's own repository is let through: git counts a
 * repository of the user sudo was run by (SUDO_UID) as root's too
 * (git.c owned_here).  What Forge then made stayed root's: .forge/ (0700),
 * its database, the memory's vectors, the cache below a HOME sudo kept, and
 * the user could run no forge command in their own repository afterwards.
 *
 * owner_follow() gives a file or directory Forge made for itself to that
 * user (SUDO_UID, SUDO_GID) when the directory it was made in is theirs:
 * .forge/ in their repository, what it holds once .forge/ is theirs, the
 * cache directories below their HOME.  Nothing else changes: without root,
 * without SUDO_UID, in root's or a third user's directory (/tmp, /root), a
 * file stays as it was made.  What git writes in .git (objects, refs, a
 * run's worktree) stays root's, as with `sudo git commit`.
 *
 * owner_explain() says which directory or file on the way to a path this
 * user may not enter, read or write, whose it is, and what gives it back.
 */
#ifndef FORGE_OWNER_H
#define FORGE_OWNER_H

#include <stdbool.h>

struct buf;

/*
 * Give what Forge has just made at path to the user sudo was run by, when
 * this process is root, SUDO_UID names a user other than root and the
 * directory path is in belongs to that user.  Only what is root's is
 * given, never through a symbolic link, and never a file with more than
 * one name (a hard link to a file elsewhere).  fd: the file, open (a
 * descriptor fchown(2) accepts), or -1 to open path here.  Best effort: a
 * failure leaves the file root's, as before.
 */
void owner_follow(int fd, const char *path);

/*
 * When this user cannot get to path for want of permission: appends to b
 * which directory on the way cannot be entered, else which file cannot be
 * read (or written, with write), else which directory a new file cannot be
 * made in (with write) -- whose it is, its mode, and the command that
 * gives it back ("sudo chown -R USER 'PATH'" when another user's, made by
 * sudo as a rule; "chmod u+rwX 'PATH'" when this user's own; that it is
 * on a read-only file system when it is, where neither helps) -- and
 * returns true.  false (b unchanged) when nothing on the way stands out.
 */
bool owner_explain(struct buf *b, const char *path, bool write);

/*
 * forge_error() of fmt's text, ": ", strerror(err), and for EACCES and
 * EPERM what owner_explain() finds on the way to path.  Returns -1; errno
 * is err.
 */
int owner_error(int err, const char *path, bool write, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
