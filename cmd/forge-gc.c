/*
 * forge-gc - remove the worktrees, branches and refs of runs that are over
 * and will not be merged or resumed: cancelled, failed and merged ones, and
 * completed ones that made no change (nothing to merge).  A failed run that
 * `forge resume` continues (runview_resumable) is kept, saying so, unless
 * --resumable.
 *
 *   forge gc [--dry-run] [--resumable]        (also `forge clean`)
 */
#include "app/cli.h"
#include "app/delegate.h"
#include "app/runclean.h"
#include "app/runview.h"
#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/tmpdir.h"
#include "git/git.h"
#include "review/toolcache.h"
#include "store/live.h"
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { OPT_DRY_RUN = 256, OPT_RESUMABLE };

static const struct cli_option options[] = {
	{ "dry-run", 'n', NULL, "only say what would be removed", OPT_DRY_RUN },
	{ "resumable", 0, NULL, "also remove failed runs that forge resume would continue (their work goes)",
	  OPT_RESUMABLE },
	{ NULL, 0, NULL, NULL, 0 }
};

struct gc_opts {
	bool dry_run;
	bool resumable;		/* --resumable */
};

static const struct cli_spec spec = {
	.name = "forge-gc",
	.synopsis = "[--dry-run] [--resumable]",
	.description = "Remove what cancelled, failed and merged runs, and completed runs that made no\n"
		       "change, left in the repository: their worktrees (in\n"
		       "$FORGE_WORKTREES or ${XDG_STATE_HOME:-~/.local/state}/forge/worktrees, a\n"
		       "directory per checkout; an older Forge's in .forge/worktrees)\n"
		       "(uncommitted changes too; a no-change run with some, or with an interrupted\n"
		       "attempt's work on refs/forge/TRACE/saved/N its branch lacks, is kept), their branches\n"
		       "forge/TRACE and their refs under refs/forge/TRACE/.  Runs that are running,\n"
		       "paused, interrupted or completed with a change not merged (`forge merge`) are left alone,\n"
		       "and so is anything of a trace the database does not know.  A failed run that\n"
		       "`forge resume` continues (its provider failed, a breaker tripped: what its next\n"
		       "line says) is kept with a line saying so, unless --resumable: once its branch is\n"
		       "gone and git has pruned its commits, it cannot be resumed.  Each thing removed is\n"
		       "printed.  The runs' records, events and checkpoints stay in the database.\n"
		       "Also removes the reviews' kept linter and scanner runs (review.tool_cache)\n"
		       "that were not used for 30 days, and the live text (forge tui) of model calls\n"
		       "whose process is gone (on another host: not written for a day), and the\n"
		       "temporary directories (TMPDIR/forge-*) of Forge processes that were killed\n"
		       "with SIGKILL, and the git registrations of the sub-agents' worktrees that were\n"
		       "among them (or whose directory is gone otherwise).  A directory of runs'\n"
		       "worktrees whose checkout is gone (its root file names it) is named, not removed.\n"
		       "`forge clean` is the same command.",
	.options = options,
	.extra_help = "Exit status: 0 done (or nothing to do), 5 git or the database failed.",
};

/*
 * {run's name in git: its trace id} for every run of the database.  Git
 * knows a run by its name (forge_git_run_name), which is the trace id
 * itself unless the id has characters a ref cannot hold ("JIRA-12.1").
 */
static jv names_of_runs(struct store *st)
{
	jv runs = jv_null(), names = jv_object();
	char name[FORGE_GIT_RUN_NAME_SIZE];

	if (store_runs_list(&runs, st, 0) == 0 && jv_get_kind(runs) == JV_KIND_ARRAY) {
		jv_array_foreach(runs, i, r) {
			const char *trace = json_get_str(r, "trace_id");
			if (trace && forge_git_run_name(name, trace) == 0)
				names = json_set(names, name, jv_string(trace));
			jv_free(r);
		}
	}
	jv_free(runs);
	return names;
}

/* The traces with a worktree or a ref, each once, sorted; a name no run of
 * the database has stays as it is (no run: nothing is collected). */
static int traces_in_repo(jv *out, struct forge_git *g, struct store *st)
{
	jv wts, refs, set = jv_object(), names;

	*out = jv_null();
	if (forge_git_worktree_list(&wts, g, NULL) < 0)
		return -1;
	if (forge_git_run_refs(&refs, g, NULL) < 0) {
		jv_free(wts);
		return -1;
	}
	names = names_of_runs(st);
	jv all = jv_array_concat(wts, refs);
	jv_array_foreach(all, i, w) {
		const char *name = json_get_str(w, "name"), *trace = json_get_str(names, name);
		set = json_set(set, trace ? trace : name, jv_true());
		jv_free(w);
	}
	*out = jv_keys(set);
	jv_free(all);
	jv_free(names);
	return 0;
}

/* Whether the run's newest checkpoint says it changed nothing (its branch
 * is at its base, or base..branch changes no file: changes.files empty). */
static bool no_change_recorded(struct store *st, const char *trace)
{
	jv cp = jv_null();
	bool none = false;

	if (store_checkpoint_latest(&cp, st, trace) == 0 && jv_get_kind(cp) == JV_KIND_OBJECT) {
		jv files = json_get_path(cp, "changes.files");
		none = jv_get_kind(files) == JV_KIND_ARRAY && jv_array_length(jv_copy(files)) == 0;
		jv_free(files);
	}
	jv_free(cp);
	return none;
}

/* Why trace may go by its run ("cancelled", "failed", "merged", "no change":
 * completed, not merged, its checkpoint says its branch holds no change --
 * no_change_now() then looks at git), or NULL;
 * also the second look once its lease is held (a resume may have changed
 * it since). */
static const char *collectable_held(struct store *st, const char *trace)
{
	jv run = jv_null(), merged = jv_null();
	const char *why = NULL;

	if (store_run_get(&run, st, trace) == 0 && jv_get_kind(run) == JV_KIND_OBJECT) {
		enum run_status s = run_status_of(json_get_str(run, "status"));
		store_event_last(&merged, st, trace, "run.merged");
		if (s == RUN_CANCELLED)
			why = "cancelled";
		else if (s == RUN_FAILED && !runview_mergeable(st, trace))
			why = "failed";	/* (not one whose merge deploy was refused) */
		else if (jv_get_kind(merged) == JV_KIND_OBJECT)
			why = "merged";
		else if (s == RUN_COMPLETED && no_change_recorded(st, trace))
			why = "no change";
	}
	jv_free(run);
	jv_free(merged);
	return why;
}

/* Why trace may go (collectable_held), or NULL: not while a
 * live process holds its lease. */
static const char *collectable(struct store *st, const char *trace)
{
	jv lease = jv_null();
	bool alive = store_lease_get(&lease, st, trace) < 0 || json_get_bool(lease, "alive", false);

	jv_free(lease);
	return alive ? NULL : collectable_held(st, trace);
}

/* 1 (said on stdout) when trace's run is cancelled but the live holder of
 * its lease keeps it (its supervisor has not stopped yet, or is on a host
 * that is gone, until its lease runs out): when it can go; 0 when not
 * (before: "nothing to remove", the run never named).  (A failed run a
 * resume holds is not going: nothing said.) */
static int lease_kept(struct store *st, const char *trace)
{
	jv lease = jv_null();
	const char *why;
	char when[32];
	int said = 0;

	if (store_lease_get(&lease, st, trace) == 0 && json_get_bool(lease, "alive", false) &&
	    (why = collectable_held(st, trace)) != NULL && strcmp(why, "cancelled") == 0) {
		printf("run %s (%s): kept: pid %.0f on %s holds it still", trace, why, json_get_num(lease, "pid", 0),
		       json_get_str(lease, "host") ? json_get_str(lease, "host") : "?");
		if (runview_lease_until(when, sizeof when, lease))
			printf("; forge gc removes it once that stops, or after %s if its host is gone", when);
		printf("\n");
		said = 1;
	}
	jv_free(lease);
	return said;
}

/* 1 (said on stdout) when a merged run's branch has commits made since the
 * merge -- in neither the merged commit nor the branch it went into: they
 * would be dropped with it, so the run stays (as git branch -d refuses);
 * 0 when not (or no branch). */
static int merged_since(struct store *st, struct forge_git *g, const char *trace)
{
	jv merged = jv_null(), p;
	struct buf branch = BUF_INIT;
	const char *commit, *into;
	bool in_commit = false, in_into = false;
	char name[FORGE_GIT_RUN_NAME_SIZE], *tip = NULL;
	int rc = 0;

	if (forge_git_run_name(name, trace) < 0)
		return 0;
	buf_addf(&branch, "refs/heads/forge/%s", name);
	store_event_last(&merged, st, trace, "run.merged");
	p = json_get(merged, "payload");
	commit = json_get_str(p, "commit");
	into = json_get_str(p, "branch");
	if (forge_git_resolve(&tip, g, branch.buf) == 0 &&
	    !(commit && *commit && forge_git_contains(&in_commit, g, commit, tip) == 0 && in_commit) &&
	    !(into && forge_git_contains(&in_into, g, into, tip) == 0 && in_into)) {
		printf("run %s (merged): kept: forge/%s has commits made since it was merged into %s "
		       "(git log %s..forge/%s); merge them or delete the branch (git branch -D forge/%s), "
		       "then forge gc\n", trace, name, into ? into : "its base branch", into ? into : "main",
		       name, name);
		rc = 1;
	}
	free(tip);
	buf_release(&branch);
	jv_free(p);
	jv_free(merged);
	return rc;
}

/* Whether a no-change run's saved refs hold work its branch lacks
 * (runview_saved: an interrupted attempt's edits a resume reset away; the
 * attempt after it may not have done them again), said on stdout: gc
 * keeps the run, as it keeps uncommitted changes, until the person lets
 * the refs go (before: "no change", and the refs went without a word). */
static bool saved_kept(struct store *st, struct forge_git *g, const char *trace)
{
	jv saved;
	int n;

	/* (git that cannot read a saved ref is no proof it holds nothing:
	 * kept, as changed_since() keeps a run whose diff fails) */
	if (runview_saved_list(&saved, st, g, trace) < 0) {
		char *why = xstrdup(forge_last_error()), name[FORGE_GIT_RUN_NAME_SIZE];

		printf("run %s (completed): kept: cannot tell whether its saved refs (refs/forge/%s/saved/) "
		       "hold work its branch lacks: %s\n", trace, forge_git_run_name(name, trace) == 0 ? name : trace,
		       why);
		free(why);
		jv_free(saved);
		return true;
	}
	n = jv_array_length(jv_copy(saved));
	if (n > 0) {
		printf("run %s (completed): kept: work saved from an interrupted attempt is not on its branch: ", trace);
		jv_array_foreach(saved, i, e) {
			struct buf line = BUF_INIT;

			runview_saved_text(&line, e);
			printf("%s%s", i ? "; " : "", line.buf);
			buf_release(&line);
			jv_free(e);
		}
		printf("; once you have what you need of it, let it go (git update-ref -d REF) and forge gc "
		       "removes the run\n");
	}
	jv_free(saved);
	return n > 0;
}

/*
 * 1 (said on stdout) when a completed run recorded as having made no change
 * has one in git now -- its branch changes a file against its base (a
 * commit made on forge/TRACE since), or its worktree holds uncommitted
 * changes, or its saved refs work its branch lacks (saved_kept) -- so it
 * stays: it has something to merge or look at, and gc never drops a
 * change; 0 when it holds none.
 */
static int changed_since(struct store *st, struct forge_git *g, const char *trace)
{
	char *branch = NULL, *base = NULL, *tip = NULL, name[FORGE_GIT_RUN_NAME_SIZE];
	jv files = jv_null(), wts = jv_null(), status = jv_null();
	struct forge_git_worktree *wt = NULL;
	const char *what = NULL;
	char *path = NULL;

	runview_refs(&branch, &base, st, trace);
	if (forge_git_resolve(&tip, g, branch) == 0 &&
	    (!base || forge_git_diff_revs(NULL, &files, g, base, tip) < 0 ||
	     jv_get_kind(files) != JV_KIND_ARRAY || jv_array_length(jv_copy(files)) > 0))
		what = "its branch has a change against its base";
	/* (only a worktree that is there is opened: opening makes a missing one) */
	if (forge_git_run_name(name, trace) == 0 && forge_git_worktree_list(&wts, g, trace) == 0 &&
	    jv_get_kind(wts) == JV_KIND_ARRAY && jv_array_length(jv_copy(wts)) > 0) {
		jv w = jv_array_get(jv_copy(wts), 0);

		if (json_get_bool(w, "valid", false))
			path = xstrdup(json_get_str(w, "path") ? json_get_str(w, "path") : "");
		if (!what && json_get_bool(w, "valid", false) &&
		    (forge_git_worktree_open(&wt, g, trace, NULL) < 0 || forge_git_status(&status, wt) < 0 ||
		     jv_array_length(jv_copy(status)) > 0))
			what = "its worktree has uncommitted changes";
		jv_free(w);
	}
	if (what && path)
		printf("run %s (completed): kept: %s (forge diff %s, git -C '%s' status)\n", trace, what, trace,
		       path);
	else if (what)
		printf("run %s (completed): kept: %s (forge diff %s)\n", trace, what, trace);
	else
		what = saved_kept(st, g, trace) ? "saved" : NULL;
	forge_git_worktree_free(wt);
	jv_free(status);
	jv_free(wts);
	jv_free(files);
	free(tip);
	free(branch);
	free(base);
	free(path);
	return what != NULL;
}

static size_t pruned;   /* tool cache entries removed (or that would be) */

/* The tool cache's old entries; a line saying how many when there are any. */
static int prune_tool_cache(bool dry_run)
{
	size_t bytes;

	if (toolcache_prune(&pruned, &bytes, TOOLCACHE_KEEP_DAYS * 86400L, dry_run) < 0) {
		fprintf(stderr, "forge-gc: %s\n", forge_last_error());
		return -1;
	}
	if (pruned)
		printf("tool cache: %s %zu entr%s unused for %d days (%zu KiB)\n",
		       dry_run ? "would remove" : "removed", pruned, pruned == 1 ? "y" : "ies",
		       TOOLCACHE_KEEP_DAYS, (bytes + 1023) / 1024);
	return 0;
}

static size_t dead_live;   /* live_text rows removed (or that would be) */

/* The live text left by calls whose process died; a line saying how many. */
static int prune_live_text(struct store *st, bool dry_run)
{
	if (store_live_prune(&dead_live, st, STORE_LIVE_STALE_MS, dry_run) < 0) {
		fprintf(stderr, "forge-gc: %s\n", forge_last_error());
		return -1;
	}
	if (dead_live)
		printf("live text: %s %zu row%s of calls whose process is gone\n",
		       dry_run ? "would remove" : "removed", dead_live, dead_live == 1 ? "" : "s");
	return 0;
}

static int dead_tmp;   /* temporary directories of killed processes */
static jv sub_worktrees = JSON_NULL;  /* [[worktree, repository]] of the sub-agents' among them */

/* A repository as it is shown, from its common git directory: the
 * directory of its .git (malloc'd). */
static char *repo_shown(const char *common)
{
	size_t n = strlen(common);

	if (n > 5 && strcmp(common + n - 5, "/.git") == 0)
		n -= 5;
	return xstrndup(common, n);
}

static int tmp_left;   /* of those, how many could not be removed */
static jv tmp_sub = JSON_NULL; /* [worktree, repository] of the one being removed, or null */

/* (called before the removal, then with how it went: core/tmpdir.h) */
static void say_tmpdir(const char *path, int err, void *payload)
{
	bool dry_run = *(bool *)payload;

	if (err == TMPDIR_FOUND) {
		/* a write-mode sub-agent's: its worktree is registered in
		 * the repository it worked on (forget_worktrees); read while
		 * its .git file is there */
		char *wt = delegate_worktree_in(path), *common = NULL;

		jv_free(tmp_sub);
		tmp_sub = jv_null();
		if (delegate_worktree_path(wt) && forge_git_worktree_common(&common, wt) == 1) {
			char *repo = repo_shown(common);

			tmp_sub = jv_array_append(jv_array_append(jv_array(), jv_string(wt)), jv_string(repo));
			free(repo);
		}
		free(common);
		free(wt);
		if (!dry_run)
			return;
	}
	if (err > 0) {
		/* (before: "removed", the directory still there) */
		fprintf(stderr, "forge-gc: temporary directory %s: cannot remove it (its process was killed): %s\n",
			path, strerror(err));
		tmp_left++;
	} else {
		printf("temporary directory %s: %s (its process was killed)\n", path,
		       dry_run ? "would remove" : "removed");
		if (jv_get_kind(tmp_sub) == JV_KIND_ARRAY) {
			if (jv_get_kind(sub_worktrees) != JV_KIND_ARRAY)
				sub_worktrees = jv_array();
			sub_worktrees = jv_array_append(sub_worktrees, jv_copy(tmp_sub));
		}
	}
	jv_free(tmp_sub);
	tmp_sub = jv_null();
}

/* What processes killed with SIGKILL left in TMPDIR (core/tmpdir.h). */
static int sweep_tmpdirs(bool dry_run)
{
	tmp_left = 0;
	dead_tmp = tmpdir_sweep(dry_run, say_tmpdir, &dry_run);
	if (dead_tmp < 0) {
		fprintf(stderr, "forge-gc: %s\n", forge_last_error());
		dead_tmp = 0;
		return -1;
	}
	return tmp_left ? -1 : 0;
}

static int forgot;   /* registrations of sub-agents' worktrees forgotten (or that would be) */

static void say_forgot(jv *said, const char *path, const char *repo, bool dry_run)
{
	if (json_has(*said, path))
		return;
	*said = json_set(*said, path, jv_true());
	printf("sub-agent worktree %s: %s %s (its directory is gone)\n", path,
	       dry_run ? "would be unregistered from" : "unregistered from", repo);
	forgot++;
}

/*
 * The git registrations a write-mode sub-agent's worktree left when its
 * process was killed (app/delegate.h): git listed it "prunable" for ever
 * after the sweep removed its directory.  Forgotten in this repository
 * and in those of the sub-agents' worktrees the sweep removed; only those
 * worktrees, whose directory is gone (a person's own are left alone, as
 * `git worktree prune` would not).  A repository that cannot be opened
 * is a warning.
 */
static void forget_worktrees(const char *root, bool dry_run)
{
	jv repos = jv_array_append(jv_array(), jv_string(root)), said = jv_object();

	if (jv_get_kind(sub_worktrees) == JV_KIND_ARRAY) {
		jv_array_foreach(sub_worktrees, i, pair) {
			jv repo = jv_array_get(jv_copy(pair), 1);
			bool known = false;

			jv_array_foreach(repos, k, r) {
				known = known || jv_equal(jv_copy(r), jv_copy(repo));
				jv_free(r);
			}
			/* (in a dry run its directory is there still) */
			if (dry_run) {
				jv path = jv_array_get(jv_copy(pair), 0);
				say_forgot(&said, jv_string_value(path), jv_string_value(repo), true);
				jv_free(path);
			}
			repos = known ? repos : jv_array_append(repos, jv_copy(repo));
			jv_free(repo);
			jv_free(pair);
		}
	}
	jv_array_foreach(repos, i, repo) {
		jv gone;

		if (forge_git_worktrees_prune(&gone, jv_string_value(repo), delegate_worktree_path, dry_run) < 0) {
			fprintf(stderr, "forge-gc: warning: %s\n", forge_last_error());
		} else {
			jv_array_foreach(gone, k, path) {
				say_forgot(&said, jv_string_value(path), jv_string_value(repo), dry_run);
				jv_free(path);
			}
		}
		jv_free(gone);
		jv_free(repo);
	}
	jv_free(repos);
	jv_free(said);
	jv_free(sub_worktrees);
	sub_worktrees = jv_null();
}

/* 1 (said on stdout) when a failed run would go but `forge resume`
 * continues it (runview_resumable): kept unless --resumable -- once its
 * branch is gone and git has pruned its commits, its work cannot come back
 * (before: gc removed it without a word, hunt68 #3c); 0 when not. */
static int resumable_kept(struct store *st, const char *trace, const char *why, const struct gc_opts *o)
{
	struct buf next = BUF_INIT;
	int kept = 0;

	if (!o->resumable && strcmp(why, "failed") == 0 && runview_resumable(&next, st, trace)) {
		printf("run %s (failed): kept: it can be resumed (%s); forge gc --resumable removes it, and its "
		       "work with it\n", trace, next.buf);
		kept = 1;
	}
	buf_release(&next);
	return kept;
}

/* A line on stdout for the run's worktree that stays when it holds what
 * stopped commands left there (git.h, forge_git_command_leftovers): they
 * go only with the worktree, and a file of the person's may be among them
 * (before: nothing said where they were). */
static void leftovers_said(struct forge_git *g, const char *trace)
{
	jv wts;

	if (forge_git_worktree_list(&wts, g, trace) < 0)
		return;
	jv_array_foreach(wts, i, w) {
		const char *path = json_get_str(w, "path");
		char *left = NULL;

		if (path && json_get_bool(w, "valid", false) && forge_git_command_leftovers(&left, path) == 0 && left)
			printf("run %s: its worktree %s keeps what stopped commands left there in %s (removed with "
			       "the worktree)\n", trace, path, left);
		free(left);
		jv_free(w);
	}
	jv_free(wts);
}

static int orphans;     /* runs dirs whose checkout is gone */

/*
 * The directories of runs' worktrees (worktrees_base()/KEY) whose root
 * file names a checkout that is not there any more: named with how to
 * remove them, not removed -- a checkout on a disk not mounted now, or
 * moved and not opened by Forge since, would lose its runs' uncommitted
 * work (a moved one's next `forge status TRACE` names its new place).
 */
static void orphans_said(void)
{
	char *base = worktrees_base();
	DIR *d = base ? opendir(base) : NULL;
	struct dirent *e;

	while (d && (e = readdir(d))) {
		struct buf file = BUF_INIT, root = BUF_INIT;
		struct stat st;
		size_t n = strlen(e->d_name);

		if (n > 17 && e->d_name[n - 17] == '-' && strspn(e->d_name + n - 16, "0123456789abcdef") == 16) {
			buf_addf(&file, "%s/%s/root", base, e->d_name);
			if (buf_read_file(&root, file.buf) == 0) {
				while (root.len > 0 && root.buf[root.len - 1] == '\n')
					root.buf[--root.len] = '\0';
				if (root.len > 1 && root.buf[0] == '/' && stat(root.buf, &st) < 0 && errno == ENOENT) {
					printf("runs' worktrees of a checkout that is gone (%s): %s/%s (rm -rf it when "
					       "nothing in it is wanted)\n", root.buf, base, e->d_name);
					orphans++;
				}
			}
		}
		buf_release(&file);
		buf_release(&root);
	}
	if (d)
		closedir(d);
	free(base);
}

static int gc(struct store *st, struct forge_git *g, const struct gc_opts *o)
{
	bool dry_run = o->dry_run;
	jv traces;
	int runs = 0, things = 0, kept = 0, rc = FORGE_EXIT_OK;

	if (traces_in_repo(&traces, g, st) < 0) {
		fprintf(stderr, "forge-gc: %s\n", forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	jv_array_foreach(traces, i, t) {
		const char *trace = jv_string_value(t), *why = collectable(st, trace);
		char holder[ULID_LEN + 1];
		jv held = jv_null();
		bool leased = false, removing = false;
		int n = 0;

		/* The run's lease while its things go: a `forge resume` of a
		 * failed run that starts now waits, or is waited for (before:
		 * gc removed the worktree and branch of a run resuming) */
		if (why && rc == FORGE_EXIT_OK && !dry_run) {
			ulid_new(holder);
			int r = store_lease_take(&held, st, trace, holder, "forge-gc");

			jv_free(held);
			held = jv_null();
			if (r == STORE_LEASE_HELD || r < 0 || !(why = collectable_held(st, trace))) {
				if (r == STORE_LEASE_TAKEN)
					store_lease_release(st, trace, holder);
				why = NULL;
			}
			leased = why != NULL;
		}
		if (!why && rc == FORGE_EXIT_OK && lease_kept(st, trace)) {
			kept++;
		} else if (why && rc == FORGE_EXIT_OK && strcmp(why, "merged") == 0 && merged_since(st, g, trace)) {
			kept++;
		} else if (why && rc == FORGE_EXIT_OK && strcmp(why, "no change") == 0 && changed_since(st, g, trace)) {
			kept++;
		} else if (why && rc == FORGE_EXIT_OK && resumable_kept(st, trace, why, o)) {
			kept++;
		} else if (why && rc == FORGE_EXIT_OK) {
			printf("run %s (%s):\n", trace, why);
			int r = runclean(g, trace, RUNCLEAN_ALL, dry_run, stdout, &n);
			if (r < 0) {
				fprintf(stderr, "forge-gc: run %s: %s\n", trace, forge_last_error());
				rc = FORGE_EXIT_DEPENDENCY;
			}
			/* a run the person is using (runclean.h) counts only for
			 * what went */
			runs += n > 0;
			kept += r == 1;
			things += n;
			removing = r == 0;
		}
		if (!removing)
			leftovers_said(g, trace);
		if (leased)
			store_lease_release(st, trace, holder);
		jv_free(held);
		jv_free(t);
	}
	jv_free(traces);
	if (runs)
		printf("%s %d thing%s of %d run%s\n", dry_run ? "would remove" : "removed", things,
		       things == 1 ? "" : "s", runs, runs == 1 ? "" : "s");
	if (prune_tool_cache(dry_run) < 0 && rc == FORGE_EXIT_OK)
		rc = FORGE_EXIT_DEPENDENCY;
	if (prune_live_text(st, dry_run) < 0 && rc == FORGE_EXIT_OK)
		rc = FORGE_EXIT_DEPENDENCY;
	if (sweep_tmpdirs(dry_run) < 0 && rc == FORGE_EXIT_OK)
		rc = FORGE_EXIT_DEPENDENCY;
	forget_worktrees(forge_git_root(g), dry_run);
	orphans_said();
	if (!runs && !kept && !pruned && !dead_live && !dead_tmp && !forgot && !orphans && rc == FORGE_EXIT_OK)
		printf("nothing to remove\n");
	return rc;
}

static int on_option(int id, const char *arg, void *payload)
{
	struct gc_opts *o = payload;

	(void)arg;
	if (id == OPT_DRY_RUN) {
		o->dry_run = true;
		return 0;
	}
	if (id == OPT_RESUMABLE) {
		o->resumable = true;
		return 0;
	}
	return forge_error("unhandled option");
}

int main(int argc, char **argv)
{
	struct cli_common common;
	struct gc_opts o = { 0 };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &o);
	struct session ses;
	struct forge_git *g = NULL;
	int status;

	if (first != argc)
		cli_usage_error(&spec, "no operand is taken ('%s')", argv[first]);
	/* (a repository nothing was recorded in: nothing of Forge's to
	 * remove, and no database made to find that out) */
	status = session_open(&ses, &common, SESSION_CONFIG | SESSION_STORE |
			      SESSION_NEED_REPO | SESSION_READ_IF_ABSENT, jv_null());
	if (status) {
		fprintf(stderr, "forge-gc: %s\n", forge_last_error());
		return cli_finish("forge-gc", status);
	}
	if (forge_git_open(&g, ses.repo) < 0) {
		fprintf(stderr, "forge-gc: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else {
		status = gc(ses.store, g, &o);
	}
	forge_git_free(g);
	session_close(&ses);
	return cli_finish("forge-gc", status);
}
