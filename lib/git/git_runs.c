/*
 * git_runs.c - what a person does with a finished run (git.h): its diff
 * between two commits, its refs (to list and delete), the branch the
 * user's checkout is on, ancestry, and a merge commit into the base branch.
 */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The tree of the commit rev names. */
static int rev_tree(git_tree **out, git_repository *repo, const char *rev)
{
	git_commit *c = NULL;
	git_oid id;
	int rc = -1;

	*out = NULL;
	if (forge_git_peel(&id, NULL, repo, rev) < 0)
		return -1;
	if (git_commit_lookup(&c, repo, &id) < 0 || git_commit_tree(out, c) < 0)
		forge_git_fail("cannot read the tree of '%s'", rev);
	else
		rc = 0;
	git_commit_free(c);
	return rc;
}

int forge_git_diff_revs(char **out_patch, jv *out_files, struct forge_git *g, const char *from,
			const char *to)
{
	git_tree *a = NULL, *b = NULL;
	git_diff *diff = NULL;
	int rc = -1;

	if (out_patch)
		*out_patch = NULL;
	if (out_files)
		*out_files = jv_invalid();
	if (rev_tree(&a, g->repo, from) < 0 || rev_tree(&b, g->repo, to) < 0)
		goto out;
	if (git_diff_tree_to_tree(&diff, g->repo, a, b, NULL) < 0) {
		forge_git_fail("cannot diff '%s' with '%s'", from, to);
		goto out;
	}
	rc = forge_git_diff_output(out_patch, out_files, diff);
out:
	git_diff_free(diff);
	git_tree_free(a);
	git_tree_free(b);
	return rc;
}

int forge_git_patch_revs(char **out, struct forge_git *g, const char *from, const char *to)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_tree *a = NULL, *b = NULL;
	git_diff *diff = NULL;
	git_buf text = GIT_BUF_INIT;
	int rc = -1;

	*out = NULL;
	opts.flags |= GIT_DIFF_SHOW_BINARY;
	if (rev_tree(&a, g->repo, from) < 0 || rev_tree(&b, g->repo, to) < 0)
		goto out;
	if (git_diff_tree_to_tree(&diff, g->repo, a, b, &opts) < 0) {
		forge_git_fail("cannot diff '%s' with '%s'", from, to);
		goto out;
	}
	if (git_diff_to_buf(&text, diff, GIT_DIFF_FORMAT_PATCH) < 0) {
		forge_git_fail("cannot format a diff");
		goto out;
	}
	*out = text.ptr ? xstrndup(text.ptr, text.size) : xstrdup("");
	rc = 0;
out:
	git_buf_dispose(&text);
	git_diff_free(diff);
	git_tree_free(a);
	git_tree_free(b);
	return rc;
}

int forge_git_run_refs(jv *out, struct forge_git *g, const char *trace)
{
	static const char *const globs[] = { "refs/heads/forge/*", "refs/forge/*" };
	char want[FORGE_GIT_RUN_NAME_SIZE];
	jv list = jv_array();

	*out = jv_invalid();
	if (trace && forge_git_run_name(want, trace) < 0) {
		jv_free(list);
		return -1;
	}
	for (size_t k = 0; k < 2; k++) {
		git_reference_iterator *it = NULL;
		const char *name;
		int e;

		if (git_reference_iterator_glob_new(&it, g->repo, globs[k]) < 0) {
			jv_free(list);
			return forge_git_fail("cannot list the refs of '%s'", g->root);
		}
		while ((e = git_reference_next_name(&name, it)) == 0) {
			/* refs/heads/forge/N or refs/forge/N/...: the run's name is
			 * the component after the prefix */
			const char *t = name + (k == 0 ? strlen("refs/heads/forge/") : strlen("refs/forge/"));
			size_t n = strcspn(t, "/");

			if (k == 0 && t[n])
				continue;      /* refs/heads/forge/a/b: not a run's */
			if (trace && (strlen(want) != n || strncmp(t, want, n) != 0))
				continue;
			list = jv_array_append(list, json_set(json_set(jv_object(), "name", jv_string_sized(t, (int)n)),
							      "ref", jv_string(name)));
		}
		git_reference_iterator_free(it);
		if (e != GIT_ITEROVER) {
			jv_free(list);
			return forge_git_fail("cannot list the refs of '%s'", g->root);
		}
	}
	*out = list;
	return 0;
}

int forge_git_ref_delete(struct forge_git *g, const char *name)
{
	git_reference *ref = NULL;
	int e = git_reference_lookup(&ref, g->repo, name);

	if (e == GIT_ENOTFOUND)
		return FORGE_GIT_NOTHING;
	if (e == 0 && strncmp(name, "refs/heads/", 11) == 0 && git_branch_is_checked_out(ref) == 1) {
		git_reference_free(ref);
		return forge_error("cannot delete '%s': it is checked out", name);
	}
	if (e == 0)
		e = git_reference_delete(ref);
	git_reference_free(ref);
	if (e < 0)
		return forge_git_fail("cannot delete '%s'", name);
	return 0;
}

int forge_git_head_branch(char **out, struct forge_git *g)
{
	git_reference *head = NULL;
	const char *target;
	int rc = -1;

	*out = NULL;
	if (git_reference_lookup(&head, g->repo, "HEAD") < 0)
		return forge_git_fail("cannot read HEAD of '%s'", forge_git_checkout(g));
	target = git_reference_symbolic_target(head);
	if (target && strncmp(target, "refs/heads/", 11) == 0) {
		*out = xstrdup(target + 11);
		rc = 0;
	} else {
		rc = forge_error("'%s' is not on a branch (detached HEAD)", forge_git_checkout(g));
	}
	git_reference_free(head);
	return rc;
}

/* The walk of forge_git_descendant_of() when libgit2's failed: parents
 * breadth first from commit, a missing one a root; at most WALK_MAX (a
 * shallow clone's history is short). */
#define WALK_MAX 10000

static int walk_to(git_repository *repo, const git_oid *commit, const git_oid *ancestor)
{
	git_oid *queue = xcalloc(WALK_MAX, sizeof *queue);
	size_t head = 0, tail = 0;
	int found = 0;

	git_oid_cpy(&queue[tail++], commit);
	while (head < tail && !found) {
		git_commit *c = NULL;

		if (git_commit_lookup(&c, repo, &queue[head++]) < 0)
			continue;       /* beyond a shallow clone's history */
		for (unsigned i = 0; i < git_commit_parentcount(c) && !found; i++) {
			const git_oid *p = git_commit_parent_id(c, i);
			bool seen = false;

			if (git_oid_equal(p, ancestor)) {
				found = 1;
				break;
			}
			for (size_t k = 0; k < tail && !seen; k++)
				seen = git_oid_equal(&queue[k], p);
			if (!seen && tail < WALK_MAX)
				git_oid_cpy(&queue[tail++], p);
		}
		git_commit_free(c);
	}
	free(queue);
	return found;
}

int forge_git_descendant_of(git_repository *repo, const git_oid *commit, const git_oid *ancestor)
{
	/* (libgit2's own walk is not tried there: it fails, and leaks on the
	 * way out) */
	if (git_repository_is_shallow(repo) == 1)
		return walk_to(repo, commit, ancestor);
	return git_graph_descendant_of(repo, commit, ancestor);
}

int forge_git_contains(bool *out, struct forge_git *g, const char *rev, const char *ancestor)
{
	git_oid a, b;
	int e;

	*out = false;
	if (forge_git_peel(&a, NULL, g->repo, rev) < 0 || forge_git_peel(&b, NULL, g->repo, ancestor) < 0)
		return -1;
	if (git_oid_equal(&a, &b)) {
		*out = true;
		return 0;
	}
	e = forge_git_descendant_of(g->repo, &a, &b);
	if (e < 0)
		return forge_git_fail("cannot compare '%s' with '%s'", rev, ancestor);
	*out = e == 1;
	return 0;
}

/* commit and its ancestors breadth first, a missing one (beyond a shallow
 * clone's history) left out, at most WALK_MAX into queue; how many. */
static size_t walk_all(git_oid *queue, git_repository *repo, const git_oid *commit)
{
	size_t head = 0, tail = 0;

	git_oid_cpy(&queue[tail++], commit);
	while (head < tail) {
		git_commit *c = NULL;

		if (git_commit_lookup(&c, repo, &queue[head++]) < 0)
			continue;
		for (unsigned i = 0; i < git_commit_parentcount(c) && tail < WALK_MAX; i++) {
			const git_oid *p = git_commit_parent_id(c, i);
			bool seen = false;

			for (size_t k = 0; k < tail && !seen; k++)
				seen = git_oid_equal(&queue[k], p);
			if (!seen)
				git_oid_cpy(&queue[tail++], p);
		}
		git_commit_free(c);
	}
	return tail;
}

/* Whether the clone holds commit id: the walks list the parents at the
 * cut too, which a depth-1 clone of two branches has in common, and which
 * no diff or merge can start from. */
static bool commit_here(git_repository *repo, const git_oid *id)
{
	git_commit *c = NULL;
	bool here = git_commit_lookup(&c, repo, id) == 0;

	git_commit_free(c);
	return here;
}

int forge_git_shallow_merge_base(git_oid *out, git_repository *repo, const git_oid *a, const git_oid *b)
{
	git_oid *from_a = xcalloc(WALK_MAX, sizeof *from_a), *from_b = xcalloc(WALK_MAX, sizeof *from_b);
	size_t na = walk_all(from_a, repo, a), nb = walk_all(from_b, repo, b);
	int rc = -1;

	for (size_t i = 0; i < nb && rc < 0; i++)
		for (size_t k = 0; k < na && rc < 0; k++)
			if (git_oid_equal(&from_b[i], &from_a[k]) && commit_here(repo, &from_b[i])) {
				git_oid_cpy(out, &from_b[i]);
				rc = 0;
			}
	free(from_a);
	free(from_b);
	if (rc < 0)
		forge_error("the two sides have no common commit in the history of this shallow clone: "
			    "fetch more of it (git fetch --unshallow)");
	return rc;
}

/* merge_commits of libgit2, in a shallow clone too (its own merge base
 * walk fails there with "object not found"). */
static int merge_commits(git_index **out, git_repository *repo, git_commit *ours, git_commit *theirs)
{
	git_commit *base = NULL;
	git_tree *t_base = NULL, *t_ours = NULL, *t_theirs = NULL;
	git_oid id;
	int rc = -1;

	if (git_repository_is_shallow(repo) != 1) {
		if (git_merge_commits(out, repo, ours, theirs, NULL) < 0)
			return forge_git_fail("cannot merge");
		return 0;
	}
	if (forge_git_shallow_merge_base(&id, repo, git_commit_id(ours), git_commit_id(theirs)) < 0)
		return -1;
	if (git_commit_lookup(&base, repo, &id) < 0 || git_commit_tree(&t_base, base) < 0 ||
	    git_commit_tree(&t_ours, ours) < 0 || git_commit_tree(&t_theirs, theirs) < 0 ||
	    git_merge_trees(out, repo, t_base, t_ours, t_theirs, NULL) < 0)
		forge_git_fail("cannot merge");
	else
		rc = 0;
	git_tree_free(t_base);
	git_tree_free(t_ours);
	git_tree_free(t_theirs);
	git_commit_free(base);
	return rc;
}

/* The tree of merging theirs into ours (both commits); FORGE_GIT_CONFLICT
 * naming the first conflicted paths when they do not merge cleanly. */
static int merged_tree(git_oid *out, git_repository *repo, git_commit *ours, git_commit *theirs)
{
	git_index *index = NULL;
	int rc = -1;

	if (merge_commits(&index, repo, ours, theirs) < 0)
		goto out;
	if (git_index_has_conflicts(index)) {
		git_index_conflict_iterator *it = NULL;
		const git_index_entry *anc, *o, *t;
		struct buf paths = BUF_INIT;
		int n = 0;

		if (git_index_conflict_iterator_new(&it, index) == 0) {
			while (n < 5 && git_index_conflict_next(&anc, &o, &t, it) == 0) {
				const git_index_entry *e = o ? o : t ? t : anc;
				buf_addf(&paths, "%s%s", n++ ? ", " : "", e ? e->path : "?");
			}
			git_index_conflict_iterator_free(it);
		}
		forge_error("the changes conflict in %s", paths.len ? paths.buf : "some files");
		buf_release(&paths);
		rc = FORGE_GIT_CONFLICT;
		goto out;
	}
	if (git_index_write_tree_to(out, index, repo) < 0) {
		forge_git_fail("cannot write the merged tree");
		goto out;
	}
	rc = 0;
out:
	git_index_free(index);
	return rc;
}

/* The person's signature as git makes it: GIT_<who>_NAME and _EMAIL
 * (who: AUTHOR, COMMITTER) first, each, else user.name/user.email, else
 * Forge's when neither gives both. */
static int user_signature(git_signature **out, git_repository *repo, const char *who)
{
	git_signature *conf = NULL;
	char var[32];
	const char *name, *email;
	int rc;

	snprintf(var, sizeof var, "GIT_%s_NAME", who);
	name = getenv(var);
	snprintf(var, sizeof var, "GIT_%s_EMAIL", who);
	email = getenv(var);
	if (git_signature_default(&conf, repo) == 0) {
		name = name && *name ? name : conf->name;
		email = email && *email ? email : conf->email;
	}
	if (name && *name && email && *email)
		rc = git_signature_now(out, name, email) < 0 ? forge_git_signature(out) : 0;
	else
		rc = forge_git_signature(out);
	git_signature_free(conf);
	return rc;
}

int forge_git_commit_by_git(char **out, struct forge_git *g)
{
	static const char *const hooks[] = { "pre-merge-commit", "prepare-commit-msg", "commit-msg" };
	git_config *cfg = NULL;
	git_buf dir = { 0 };
	struct buf hooks_dir = BUF_INIT, path = BUF_INIT;
	struct stat st;
	int sign = 0;

	*out = NULL;
	if (git_repository_config_snapshot(&cfg, g->repo) < 0)
		return forge_git_fail("cannot read the configuration of '%s'", forge_git_checkout(g));
	if (git_config_get_bool(&sign, cfg, "commit.gpgsign") == 0 && sign) {
		*out = xstrdup("commit.gpgsign is set");
		goto out;
	}
	/* git's hooks: core.hooksPath (relative: to the working tree), else
	 * the common directory's hooks/; an executable file is one */
	if (git_config_get_path(&dir, cfg, "core.hooksPath") == 0 && dir.ptr && *dir.ptr) {
		if (dir.ptr[0] != '/')
			buf_addf(&hooks_dir, "%s/", forge_git_checkout(g));
		buf_adds(&hooks_dir, dir.ptr);
	} else {
		buf_addf(&hooks_dir, "%s/hooks", git_repository_commondir(g->repo));
	}
	for (size_t i = 0; i < sizeof hooks / sizeof *hooks && !*out; i++) {
		buf_reset(&path);
		buf_addf(&path, "%s/%s", hooks_dir.buf, hooks[i]);
		if (stat(path.buf, &st) == 0 && S_ISREG(st.st_mode) && access(path.buf, X_OK) == 0) {
			struct buf what = BUF_INIT;

			buf_addf(&what, "the %s hook '%s' would run", hooks[i], path.buf);
			*out = buf_detach(&what, NULL);
		}
	}
out:
	git_error_clear();      /* a setting not there is no error */
	git_buf_dispose(&dir);
	git_config_free(cfg);
	buf_release(&hooks_dir);
	buf_release(&path);
	return 0;
}

/* Make the merge commit of theirs into the tip of branch_ref: *out its id. */
static int make_merge_commit(git_oid *out, struct forge_git *g, const git_oid *tip, const git_oid *theirs,
			     const char *message)
{
	git_commit *c_ours = NULL, *c_theirs = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL, *committer = NULL;
	git_oid tree_id;
	int e, rc = -1;

	if (git_commit_lookup(&c_ours, g->repo, tip) < 0 || git_commit_lookup(&c_theirs, g->repo, theirs) < 0) {
		forge_git_fail("cannot read the commits to merge");
		goto out;
	}
	e = forge_git_descendant_of(g->repo, theirs, tip);
	if (e < 0) {
		forge_git_fail("cannot compare the commits to merge");
		goto out;
	}
	if (e == 1)
		git_oid_cpy(&tree_id, git_commit_tree_id(c_theirs));   /* theirs has all of ours */
	else if ((rc = merged_tree(&tree_id, g->repo, c_ours, c_theirs)) != 0)
		goto out;
	rc = -1;
	if (git_tree_lookup(&tree, g->repo, &tree_id) < 0 || user_signature(&sig, g->repo, "AUTHOR") < 0 ||
	    user_signature(&committer, g->repo, "COMMITTER") < 0) {
		forge_git_fail("cannot prepare the merge commit");
		goto out;
	}
	const git_commit *parents[2] = { c_ours, c_theirs };
	if (git_commit_create(out, g->repo, NULL, sig, committer, NULL, message, tree, 2, parents) < 0) {
		forge_git_fail("cannot write the merge commit");
		goto out;
	}
	rc = 0;
out:
	git_signature_free(sig);
	git_signature_free(committer);
	git_tree_free(tree);
	git_commit_free(c_ours);
	git_commit_free(c_theirs);
	return rc;
}

static int merge_commit(char **out, struct forge_git *g, const char *base_branch, const char *rev,
			const char *message);

int forge_git_merge_commit(char **out, struct forge_git *g, const char *base_branch, const char *rev,
			   const char *message)
{
	int rc;

	if (out)
		*out = NULL;
	if (forge_git_merge_lock(g) < 0)
		return -1;
	rc = merge_commit(out, g, base_branch, rev, message);
	forge_git_merge_unlock(g);
	return rc;
}

/* forge_git_merge_commit(), its lock held. */
static int merge_commit(char **out, struct forge_git *g, const char *base_branch, const char *rev,
			const char *message)
{
	git_reference *ref = NULL, *moved = NULL;
	git_commit *commit = NULL;
	char what[300];
	struct buf name = BUF_INIT;
	git_oid theirs, merge;
	char *head = NULL, *by_git = NULL;
	int e, rc = -1;

	if (out)
		*out = NULL;
	buf_addf(&name, "refs/heads/%s", base_branch);
	if (forge_git_head_branch(&head, g) < 0)
		goto out;
	if (strcmp(head, base_branch) != 0) {
		forge_error("'%s' is not checked out in '%s' (it is on '%s')", base_branch, forge_git_checkout(g), head);
		goto out;
	}
	if (forge_git_peel(&theirs, NULL, g->repo, rev) < 0)
		goto out;
	if (git_reference_lookup(&ref, g->repo, name.buf) < 0) {
		forge_git_fail("no branch '%s' to merge into", base_branch);
		goto out;
	}
	const git_oid *tip = git_reference_target(ref);
	e = git_oid_equal(tip, &theirs) ? 1 : forge_git_descendant_of(g->repo, tip, &theirs);
	if (e != 0) {
		if (e < 0)
			forge_git_fail("cannot compare '%s' with '%s'", rev, base_branch);
		else
			rc = FORGE_GIT_NOTHING;      /* already in the branch */
		goto out;
	}
	e = forge_git_checkout_dirty(g);
	if (e != 0) {
		if (e > 0) {
			forge_error("cannot merge into '%s': '%s' has uncommitted changes to tracked "
				    "files; commit or stash them first", base_branch, forge_git_checkout(g));
			rc = FORGE_GIT_BLOCKED;
		}
		goto out;
	}
	/* a commit git would sign, or run hooks on: not made unsigned,
	 * unchecked, on the person's branch */
	if (forge_git_commit_by_git(&by_git, g) < 0)
		goto out;
	if (by_git) {
		forge_error("cannot make the merge commit on '%s': %s, and Forge makes commits without "
			    "(unsigned, no hooks); nothing changed -- merge with git instead: git merge --no-ff %s",
			    base_branch, by_git, rev);
		rc = FORGE_GIT_BLOCKED;
		goto out;
	}
	if ((rc = make_merge_commit(&merge, g, tip, &theirs, message)) != 0)
		goto out;
	rc = -1;
	if (git_commit_lookup(&commit, g->repo, &merge) < 0) {
		forge_git_fail("cannot read the merge commit");
		goto out;
	}
	snprintf(what, sizeof what, "cannot merge into '%s'", base_branch);
	if ((e = forge_git_checkout_commit(g, commit, what)) != 0) {
		rc = e;
		goto out;
	}
	if ((e = git_reference_set_target(&moved, ref, &merge, "forge: merge")) < 0) {
		if (e != GIT_EMODIFIED) {
			forge_git_fail("cannot move branch '%s'", base_branch);
			goto out;
		}
		/* moved since it was read (a git command): the checkout goes
		 * back, as forge_git_merge_ff() puts it back */
		if (forge_git_put_back(g, tip, &merge, base_branch) < 0)
			goto out;
		forge_error("cannot merge into '%s': it moved while '%s' was updated for it (a git command "
			    "moved it); nothing changed: merge again", base_branch, forge_git_checkout(g));
		rc = FORGE_GIT_MOVED;
		goto out;
	}
	if (out)
		*out = forge_git_hex(&merge);
	rc = 0;
out:
	git_reference_free(moved);
	git_reference_free(ref);
	git_commit_free(commit);
	buf_release(&name);
	free(head);
	free(by_git);
	return rc;
}

/* The N of each of run `name`'s saved refs, ascending, into *out (n of
 * them; malloc'd, NULL when none). */
static int saved_numbers(unsigned **out, size_t *n, git_repository *repo, const char *name)
{
	git_reference_iterator *it = NULL;
	struct buf glob = BUF_INIT;
	const char *ref;
	size_t cap = 0;
	int e;

	*out = NULL;
	*n = 0;
	buf_addf(&glob, "refs/forge/%s/saved/*", name);
	e = git_reference_iterator_glob_new(&it, repo, glob.buf);
	while (e == 0 && (e = git_reference_next_name(&ref, it)) == 0) {
		const char *num = ref + glob.len - 1;
		char *end;
		unsigned long v = strtoul(num, &end, 10);

		if (end == num || *end || v == 0 || v > UINT_MAX)
			continue;	/* not one forge_git_save_and_reset() writes */
		if (*n == cap) {
			cap = cap ? 2 * cap : 4;
			*out = xrealloc(*out, cap * sizeof **out);
		}
		(*out)[(*n)++] = (unsigned)v;
	}
	git_reference_iterator_free(it);
	buf_release(&glob);
	if (e != GIT_ITEROVER) {
		free(*out);
		*out = NULL;
		*n = 0;
		return forge_git_fail("cannot list the saved refs of run '%s'", name);
	}
	for (size_t i = 1; i < *n; i++)	/* (a handful: insertion) */
		for (size_t k = i; k > 0 && (*out)[k - 1] > (*out)[k]; k--) {
			unsigned t = (*out)[k];
			(*out)[k] = (*out)[k - 1];
			(*out)[k - 1] = t;
		}
	return 0;
}

/* Whether tree `at` holds every file of diff as the diff's new side has
 * it (a deleted file: absent). */
static bool diff_held(git_diff *diff, git_tree *at)
{
	size_t n = git_diff_num_deltas(diff);

	for (size_t i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		git_tree_entry *e = NULL;
		bool deleted = d->status == GIT_DELTA_DELETED;
		int r = git_tree_entry_bypath(&e, at, deleted ? d->old_file.path : d->new_file.path);
		bool held = deleted ? r == GIT_ENOTFOUND
				    : r == 0 && git_oid_equal(git_tree_entry_id(e), &d->new_file.id);

		git_tree_entry_free(e);
		if (!held)
			return false;
	}
	return true;
}

/* One saved ref's entry for forge_git_run_saved(), or null when tip
 * holds its change (or it changes nothing). */
static int saved_entry(jv *out, struct forge_git *g, const char *ref, const char *tip)
{
	git_tree *from_tree = NULL, *ref_tree = NULL, *tip_tree = NULL;
	git_diff *diff = NULL;
	char *from = NULL;
	jv files = jv_invalid();
	int rc = -1;

	*out = jv_null();
	/* measured from where it left the branch's history (the commit it
	 * was saved on, for uncommitted changes), not from tip: the branch
	 * may have moved on since, and that is not the saved work */
	if (forge_git_merge_base(&from, g, ref, tip) < 0) {
		from = xstrdup(tip);	/* (no common history: all of it) */
	}
	if (rev_tree(&from_tree, g->repo, from) < 0 || rev_tree(&ref_tree, g->repo, ref) < 0 ||
	    rev_tree(&tip_tree, g->repo, tip) < 0)
		goto out;
	if (git_diff_tree_to_tree(&diff, g->repo, from_tree, ref_tree, NULL) < 0) {
		forge_git_fail("cannot diff '%s' with '%s'", from, ref);
		goto out;
	}
	rc = 0;
	if (git_diff_num_deltas(diff) == 0 || diff_held(diff, tip_tree))
		goto out;
	if ((rc = forge_git_diff_output(NULL, &files, diff)) == 0)
		*out = json_set(json_set(json_set(jv_object(), "ref", jv_string(ref)), "from", jv_string(from)),
				"files", jv_copy(files));
out:
	jv_free(files);
	git_diff_free(diff);
	git_tree_free(from_tree);
	git_tree_free(ref_tree);
	git_tree_free(tip_tree);
	free(from);
	return rc;
}

/*
 * Whether saved ref `ref` names an object the repository has: 0 when it
 * does, else -1 with a message.  Asked before the ref is resolved as a
 * revision: libgit2 1.5's git_revparse_single() of a ref to a missing
 * object (a damaged or partial clone) leaks what it read of the ref, which
 * LeakSanitizer fails the program for; the ref's file and the object
 * database are read here without it.
 */
static int saved_present(struct forge_git *g, const char *ref)
{
	git_odb *odb = NULL;
	git_oid id;
	char hex[GIT_OID_HEXSZ + 1];
	int rc = -1;

	if (git_reference_name_to_id(&id, g->repo, ref) < 0)
		return forge_git_fail("cannot resolve '%s'", ref);
	if (git_repository_odb(&odb, g->repo) < 0)
		return forge_git_fail("cannot open the object database");
	if (git_odb_exists(odb, &id))
		rc = 0;
	else
		forge_error("cannot resolve '%s': it names %s, an object the repository does not have", ref,
			    git_oid_tostr(hex, sizeof hex, &id));
	git_odb_free(odb);
	return rc;
}

int forge_git_run_saved(jv *out, struct forge_git *g, const char *trace, const char *tip)
{
	char name[FORGE_GIT_RUN_NAME_SIZE];
	struct buf ref = BUF_INIT;
	unsigned *nums = NULL;
	size_t n = 0;
	jv list = jv_array();
	int rc = -1;

	*out = jv_invalid();
	if (forge_git_run_name(name, trace) < 0 || saved_numbers(&nums, &n, g->repo, name) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		jv e;

		buf_reset(&ref);
		buf_addf(&ref, "refs/forge/%s/saved/%u", name, nums[i]);
		if (saved_present(g, ref.buf) < 0 || saved_entry(&e, g, ref.buf, tip) < 0)
			goto out;
		if (jv_get_kind(e) == JV_KIND_OBJECT)
			list = jv_array_append(list, e);
		else
			jv_free(e);
	}
	*out = jv_copy(list);
	rc = 0;
out:
	jv_free(list);
	buf_release(&ref);
	free(nums);
	return rc;
}
