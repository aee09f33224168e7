/*
 * git_internal.h - what lib/git*.c share; not part of the contract (git.h).
 */
#ifndef FORGE_GIT_INTERNAL_H
#define FORGE_GIT_INTERNAL_H

#include "git/git.h"

#include <git2.h>
#include <stdbool.h>

struct forge_git {
	git_repository *repo;   /* the main repository, opened on its working tree */
	char *root;             /* the main working tree, no trailing slash */
};

struct forge_git_worktree {
	git_repository *repo;   /* opened on the worktree */
	char *trace;
	char *path;             /* <root>/.forge/worktrees/TRACE */
	char *branch;           /* forge/TRACE */
	char *base;             /* the base commit's SHA */
	bool reopened;
};

#define FORGE_GIT_EMPTY_BASE_MESSAGE "forge: empty base commit\n"

/* forge_error() with ": <libgit2's last message>" appended when there is
 * one; returns -1. */
int forge_git_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A malloc'd 40-hex copy of id. */
char *forge_git_hex(const git_oid *id);

/* The commit `rev` names in repo.  *out_unborn (may be NULL) is set when
 * rev is "HEAD" or the branch of an unborn HEAD, and then *out is zeroed
 * and 0 is returned. */
int forge_git_peel(git_oid *out, bool *out_unborn, git_repository *repo, const char *rev);

/* The fixed signature "Forge <forge@localhost>", now. */
int forge_git_signature(git_signature **out);

/* A malloc'd "a/b". */
char *forge_git_path(const char *a, const char *b);

/* *out_patch (the unified patch) and *out_files (forge_git_diff()'s file
 * list) of diff; either may be NULL.  On failure *out_files is invalid. */
int forge_git_diff_output(char **out_patch, jv *out_files, git_diff *diff);

/* Push the full refspecs specs[0..n-1] ("+refs/a:refs/b") to `remote` in
 * one connection; messages name `what`.  See forge_git_push(). */
int forge_git_push_refspecs(struct forge_git *g, const char *remote, const char *const *specs, size_t n,
			    const char *what);

#endif
