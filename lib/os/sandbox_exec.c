/*
 * sandbox_exec.c - the walls of a sandboxed command: which paths it may
 * read (the Landlock read allow-list) and the file-system view of its
 * mount namespace.  See sandbox_walls_build() in sandbox.h.
 */
#include "os/sandbox.h"
#include "os/sandbox_internal.h"
#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "os/nsview.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What every build needs to read (and execute). */
static const char *const system_paths[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", NULL,
};

/* Never readable: files under /etc that hold secrets. */
static const char *const etc_secrets[] = {
	"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssl/private",
	"/etc/security/opasswd", "/etc/ssh/ssh_host_*_key", NULL,
};

/* Directories of /etc that hold a secret: entered entry by entry. */
static const char *const etc_mixed[] = { "/etc", "/etc/ssh", "/etc/ssl", "/etc/security", NULL };

/* Dot-directories of a home that are never read through a PATH entry. */
static const char *const private_dots[] = {
	".ssh", ".gnupg", ".aws", ".docker", ".kube", ".config", ".password-store", ".azure",
	".gcloud", ".netrc", ".git-credentials", ".forge", NULL,
};

/*
 * What a toolchain's home holds that is a secret, by the home's name and
 * the path beneath it: crates.io's token, and what ~/.local (the home of
 * ~/.local/bin) keeps besides programs: keyrings and wallets, shell
 * histories (fish, zsh, atuin's database) and ~/.local/state.
 */
static const struct { const char *home, *path; } home_secrets[] = {
	{ ".cargo", "credentials" },  { ".cargo", "credentials.toml" },
	{ ".local", "share/keyrings" }, { ".local", "share/kwalletd" },
	{ ".local", "share/fish" },    { ".local", "share/zsh" },
	{ ".local", "share/atuin" },   { ".local", "state" },
	{ NULL, NULL },
};

/* Whether path is dir or beneath it. */
static bool beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

struct list {
	char **v;
	size_t n, cap;
};

static bool list_has(const struct list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return true;
	return false;
}

static void list_add(struct list *l, const char *s)
{
	if (list_has(l, s))
		return;
	if (l->n + 1 >= l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->v = xrealloc(l->v, l->cap * sizeof(char *));
	}
	l->v[l->n++] = xstrdup(s);
	l->v[l->n] = NULL;
}

static bool is_secret(const char *path)
{
	for (size_t i = 0; etc_secrets[i]; i++)
		if (!fnmatch(etc_secrets[i], path, FNM_PATHNAME))
			return true;
	return false;
}

static bool is_mixed(const char *path)
{
	for (size_t i = 0; etc_mixed[i]; i++)
		if (!strcmp(etc_mixed[i], path))
			return true;
	return false;
}

/* A file of /etc that is a symlink out of the system paths (resolv.conf ->
 * /run/systemd/resolve/stub-resolv.conf): its target file is readable too. */
static void add_link_target(struct list *readable, const char *path)
{
	char *real = realpath(path, NULL);
	struct stat st;
	bool system = false;

	if (!real)
		return;
	system = !strncmp(real, "/etc/", 5) || !strncmp(real, "/proc/", 6);
	for (size_t i = 0; system_paths[i] && !system; i++) {
		size_t n = strlen(system_paths[i]);
		system = !strncmp(real, system_paths[i], n) && real[n] == '/';
	}
	if (!system && stat(real, &st) == 0 && S_ISREG(st.st_mode) && !is_secret(real))
		list_add(readable, real);
	free(real);
}

/* The targets of /etc's symlinks out of the system paths. */
static void add_link_targets(struct list *readable)
{
	DIR *d = opendir("/etc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		if (e->d_type != DT_LNK ||
		    snprintf(path, sizeof(path), "/etc/%s", e->d_name) >= (int)sizeof(path))
			continue;
		add_link_target(readable, path);
	}
	closedir(d);
}

/* Add every entry of dir to readable (NULL: only find the secrets), except
 * secrets (to hidden). */
static void add_dir_except(struct list *readable, struct list *hidden, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (is_secret(path)) {
			list_add(hidden, path);
		} else if (is_mixed(path)) {
			add_dir_except(readable, hidden, path);
		} else if (readable) {
			list_add(readable, path);
			if (e->d_type == DT_LNK)
				add_link_target(readable, path);
		}
	}
	closedir(d);
}

/*
 * /etc as the view covers it: its secrets (hidden) and the files its links
 * point to out of the system paths (readable).  Worked out again only when
 * /etc or a directory of it that holds a secret (etc_mixed) changed: their
 * device, inode, modification and change times (an entry added, removed or
 * renamed changes them).  A command cannot change them (/etc is read-only
 * to it); reading /etc entry by entry, each name matched against the
 * secrets, and resolving its links cost ~0.5M instructions and ~150 system
 * calls a command.  What a link's target became later is decided at the
 * mount, as ever (a target gone is left out of the view).
 */
#define ETC_MIXED (sizeof etc_mixed / sizeof *etc_mixed - 1)

struct etc_stamp {
	bool present;
	dev_t dev;
	ino_t ino;
	struct timespec mtime, ctime;
};

static struct {
	bool valid;
	struct etc_stamp stamp[ETC_MIXED];
	struct list hidden, links;
} etc_memo;
static pthread_mutex_t etc_lock = PTHREAD_MUTEX_INITIALIZER;

static void etc_stamps(struct etc_stamp *out)
{
	struct stat st;

	memset(out, 0, ETC_MIXED * sizeof *out);
	for (size_t i = 0; i < ETC_MIXED; i++)
		if (lstat(etc_mixed[i], &st) == 0)
			out[i] = (struct etc_stamp){ true, st.st_dev, st.st_ino, st.st_mtim, st.st_ctim };
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool same_stamps(const struct etc_stamp *a, const struct etc_stamp *b)
{
	for (size_t i = 0; i < ETC_MIXED; i++)
		if (a[i].present != b[i].present || a[i].dev != b[i].dev || a[i].ino != b[i].ino ||
		    !same_time(a[i].mtime, b[i].mtime) || !same_time(a[i].ctime, b[i].ctime))
			return false;
	return true;
}

static void list_release(struct list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static void add_etc_view(struct list *readable, struct list *hidden)
{
	struct etc_stamp now[ETC_MIXED];

	/* (stamped before the reading: a change during it reads again next time) */
	etc_stamps(now);
	pthread_mutex_lock(&etc_lock);
	if (!etc_memo.valid || !same_stamps(now, etc_memo.stamp)) {
		list_release(&etc_memo.hidden);
		list_release(&etc_memo.links);
		add_dir_except(NULL, &etc_memo.hidden, "/etc");
		add_link_targets(&etc_memo.links);
		memcpy(etc_memo.stamp, now, sizeof now);
		etc_memo.valid = true;
	}
	for (size_t i = 0; i < etc_memo.hidden.n; i++)
		list_add(hidden, etc_memo.hidden.v[i]);
	list_add(readable, "/etc");
	for (size_t i = 0; i < etc_memo.links.n; i++)
		list_add(readable, etc_memo.links.v[i]);
	pthread_mutex_unlock(&etc_lock);
}

/* The first line of path (a small file, not followed through a symlink),
 * without its newline, into line; false when there is none. */
static bool first_line(char *line, size_t size, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (n = read(fd, line, size - 1)) <= 0) {
		close(fd);
		return false;
	}
	close(fd);
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	return true;
}

/* path as a real path (malloc'd), or NULL. */
static char *real_of(const char *base, const char *path)
{
	struct buf b = BUF_INIT;
	char *real;

	if (path[0] == '/')
		buf_adds(&b, path);
	else
		buf_addf(&b, "%s/%s", base, path);
	real = realpath(b.buf, NULL);
	buf_release(&b);
	return real;
}

/* Whether the git directory gitdir's config sets core.worktree to root
 * (what git writes for a submodule's checkout). */
static bool core_worktree_is(const char *gitdir, const char *root)
{
	struct buf path = BUF_INIT;
	char line[PATH_MAX + 64], *real_root = realpath(root, NULL), *real;
	bool core = false, found = false;
	FILE *f;

	buf_addf(&path, "%s/config", gitdir);
	f = real_root ? fopen(path.buf, "re") : NULL;
	while (f && !found && fgets(line, sizeof line, f)) {
		char *p = line + strspn(line, " \t"), *v;

		p[strcspn(p, "\r\n")] = '\0';
		if (*p == '[') {
			core = !strncasecmp(p, "[core]", 6);
		} else if (core && !strncasecmp(p, "worktree", 8) && (v = strchr(p, '='))) {
			v += 1 + strspn(v + 1, " \t");
			real = real_of(gitdir, v);
			found = real && !strcmp(real, real_root);
			free(real);
		}
	}
	if (f)
		fclose(f);
	free(real_root);
	buf_release(&path);
	return found;
}

/*
 * The main repository's .git a linked worktree's ".git" file points to,
 * added to readable.  That file lies in the worktree, which commands may
 * write (without a mount view it is not covered): what it says is believed
 * only when git's own records agree -- the directory it names is
 * <common>/worktrees/<name> and its "gitdir" file names this worktree's
 * .git back.  "gitdir: /" (the whole host readable) or the git directory
 * of another repository is not.  Returns the common directory (malloc'd)
 * when it added one, else NULL.
 */
static char *add_git_common(struct list *readable, const char *root)
{
	struct buf path = BUF_INIT;
	char line[PATH_MAX + 16];
	char *gitdir = NULL, *common = NULL, *back = NULL, *dotgit = NULL, *found = NULL;
	size_t n;

	buf_addf(&path, "%s/.git", root);
	if (!first_line(line, sizeof line, path.buf) || strncmp(line, "gitdir: ", 8) ||
	    !(dotgit = realpath(path.buf, NULL)) || !(gitdir = real_of(root, line + 8)))
		goto out;
	buf_reset(&path);
	buf_addf(&path, "%s/commondir", gitdir);
	common = first_line(line, sizeof line, path.buf) ? real_of(gitdir, line) : NULL;
	if (!common) {
		/* a submodule's checkout: its git directory names it back */
		if (core_worktree_is(gitdir, root))
			list_add(readable, gitdir);
		goto out;
	}
	buf_reset(&path);
	buf_addf(&path, "%s/gitdir", gitdir);
	back = first_line(line, sizeof line, path.buf) ? real_of(gitdir, line) : NULL;
	if (!common || !back || strcmp(back, dotgit) != 0)
		goto out;
	n = strlen(common);
	if (strncmp(gitdir, common, n) != 0 || strncmp(gitdir + n, "/worktrees/", 11) != 0 ||
	    !gitdir[n + 11] || strchr(gitdir + n + 11, '/'))
		goto out;
	list_add(readable, common);
	list_add(readable, gitdir);
	found = common;
	common = NULL;
out:
	free(gitdir);
	free(common);
	free(back);
	free(dotgit);
	buf_release(&path);
	return found;
}

/* Add dir's entries to readable but the secrets (to hidden), entering the
 * directories that hold one.  secrets: n full paths. */
static void add_except(struct list *readable, struct list *hidden, const char *dir,
		       char secrets[][PATH_MAX], size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d))) {
		bool secret = false, holds = false, is_dir = e->d_type == DT_DIR;
		struct stat st;
		size_t len;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (e->d_type == DT_UNKNOWN)
			is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
		len = strlen(path);
		for (size_t i = 0; i < n; i++) {
			secret = secret || !strcmp(secrets[i], path);
			holds = holds || (!strncmp(secrets[i], path, len) && secrets[i][len] == '/');
		}
		if (secret)
			list_add(hidden, path);
		else if (holds && is_dir)
			add_except(readable, hidden, path, secrets, n);
		else if (!holds)
			list_add(readable, path);
	}
	closedir(d);
}

/* A toolchain's home, readable: whole, or around the secrets it holds
 * (home_secrets; hidden: covered in the view, no Landlock rule). */
static void add_home(struct list *readable, struct list *hidden, const char *dir)
{
	char secrets[sizeof home_secrets / sizeof *home_secrets][PATH_MAX];
	const char *name = strrchr(dir, '/');
	struct stat st;
	size_t n = 0;

	name = name ? name + 1 : dir;
	for (size_t i = 0; home_secrets[i].home; i++)
		if (!strcmp(home_secrets[i].home, name) &&
		    snprintf(secrets[n], PATH_MAX, "%s/%s", dir, home_secrets[i].path) < PATH_MAX &&
		    lstat(secrets[n], &st) == 0)
			n++;
	if (n)
		add_except(readable, hidden, dir, secrets, n);
	else
		list_add(readable, dir);
}

/*
 * Version managers that keep a toolchain deeper than its home's bin: nvm's
 * ~/.nvm/versions/node/v20/bin/npm is a symlink to ../lib/node_modules/...,
 * so with the bin alone readable the command's shell skipped it and ran
 * another npm (or none).  A PATH directory beneath one of these homes
 * makes the whole home readable (add_home: around its secrets).
 */
static const char *const manager_homes[] = {
	".nvm", ".volta", ".fnm", ".bun", ".deno", ".rbenv", ".pyenv", ".asdf", ".sdkman",
	".ghcup", ".opam", ".juliaup", ".dotnet", ".nimble", NULL,
};

static void add_manager_home(struct list *readable, struct list *hidden, const char *dir)
{
	for (const char *p = strstr(dir, "/."); p; p = strstr(p + 1, "/.")) {
		size_t n = strcspn(p + 1, "/");

		for (size_t i = 0; manager_homes[i]; i++) {
			if (strlen(manager_homes[i]) == n && !strncmp(p + 1, manager_homes[i], n)) {
				char home[PATH_MAX];

				snprintf(home, sizeof home, "%.*s", (int)(p + 1 + n - dir), dir);
				add_home(readable, hidden, home);
				return;
			}
		}
	}
}

/*
 * The places a PATH entry (or a toolchain home of the environment) must
 * not hold, each with why: a directory bound or made readable whole
 * brings everything beneath it, so PATH=$PATH:~ gave commands ~/.ssh and
 * a ~/.env with the API key, and /tmp in PATH the host's sockets.
 *
 * The guard depends only on the user, the environment and the parents of
 * the repository and of the command's temp dir, the same for every command
 * of a phase, so it is built once and kept while they stay (getpwuid() and
 * a realpath() of each place are ~60 system calls).  Verdicts are kept by
 * the directory's real path, which is taken again for every command: a
 * directory the command could replace by a link is judged anew (a
 * toolchain home's only while the directory stays as it was:
 * guard_refuses_home).
 */
struct guard {
	char *path[24];
	const char *why[24];
	size_t n;
	char *key;			/* what it was built from */
	struct verdict {
		char *real;
		const char *why;	/* NULL: may be read */
		bool home;		/* guard_refuses_home's (judged with its secrets) */
		dev_t dev;		/* a home's: the directory when judged */
		ino_t ino;
		struct timespec mtime, ctime;
	} *verdicts;
	size_t nverdicts;
};

static struct guard guard_cache;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;

static void guard_add(struct guard *g, const char *path, const char *why, bool parent)
{
	char *p, *slash;

	if (!path || path[0] != '/' || g->n >= sizeof g->path / sizeof *g->path)
		return;
	/* a place that is not there is guarded by its text */
	p = realpath(path, NULL);
	if (!p)
		p = xstrdup(path);
	if (parent && (slash = strrchr(p, '/'))) {
		if (slash == p)
			slash++;	/* the parent of /x is / */
		*slash = '\0';
	}
	g->path[g->n] = p;
	g->why[g->n++] = why;
}

static const char *const guard_xdg[] = {
	"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", NULL,
};

/* What the guard is built from, as one string, each value after its
 * length (the parents by their text: a command's temp dir is new each
 * time, its parent is not). */
static char *guard_key(const struct sandbox_cmd *cmd, char *const *env)
{
	static const char *const names[] = {
		"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
		"FORGE_DB", "XDG_RUNTIME_DIR", "TMPDIR", NULL,
	};
	struct buf b = BUF_INIT;
	const char *slash = cmd->tmp ? strrchr(cmd->tmp, '/') : NULL;
	int tmp_parent = slash ? (int)(slash - cmd->tmp) : 0;

	buf_addf(&b, "uid=%u", (unsigned)getuid());
	for (size_t i = 0; names[i]; i++) {
		const char *v = sandbox_env_value(env, names[i]);
		if (v)
			buf_addf(&b, " %s=%zu:%s", names[i], strlen(v), v);
	}
	buf_addf(&b, " tmp=%d:%.*s", tmp_parent, tmp_parent, slash ? cmd->tmp : "");
	buf_addf(&b, " root=%zu:%s", strlen(cmd->root), cmd->root);
	return buf_detach(&b, NULL);
}

static void guard_release(struct guard *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->path[i]);
	for (size_t i = 0; i < g->nverdicts; i++)
		free(g->verdicts[i].real);
	free(g->verdicts);
	free(g->key);
	memset(g, 0, sizeof(*g));
}

static void guard_build(struct guard *g, const struct sandbox_cmd *cmd, char *const *env, char *key)
{
	static const char *const temps[] = { "/tmp", "/var/tmp", "/dev/shm", "/run", NULL };
	struct passwd *pw = getpwuid(getuid());

	memset(g, 0, sizeof(*g));
	g->key = key;
	/* the first place a directory holds gives the reason: /tmp holding
	 * a home is said to be a temporary directory */
	for (size_t i = 0; temps[i]; i++)
		guard_add(g, temps[i], "a temporary directory or a parent of one", false);
	guard_add(g, cmd->tmp, "a temporary directory or a parent of one", true);
	guard_add(g, sandbox_env_value(env, "HOME"), "the home directory or a parent of it", false);
	guard_add(g, pw ? pw->pw_dir : NULL, "the home directory or a parent of it", false);
	for (size_t i = 0; guard_xdg[i]; i++)
		guard_add(g, sandbox_env_value(env, guard_xdg[i]), "holds the user's configuration or data", false);
	guard_add(g, sandbox_env_value(env, "FORGE_DB"), "holds the Forge database", true);
	guard_add(g, sandbox_env_value(env, "XDG_RUNTIME_DIR"), "holds the user's sockets", false);
	guard_add(g, sandbox_env_value(env, "TMPDIR"), "a temporary directory or a parent of one", false);
	guard_add(g, cmd->root, "a parent of the repository", true);
}

/* The guard for this command: the kept one when built from the same, else
 * a new one.  Called with guard_lock held. */
static struct guard *guard_get(const struct sandbox_cmd *cmd, char *const *env)
{
	char *key = guard_key(cmd, env);

	if (guard_cache.key && !strcmp(guard_cache.key, key)) {
		free(key);
		return &guard_cache;
	}
	guard_release(&guard_cache);
	guard_build(&guard_cache, cmd, env, key);
	return &guard_cache;
}

/* Whether path lies beneath one of the secrets of the toolchain home dir
 * (home_secrets: ~/.local/state, where runs' worktrees are by default),
 * which add_home leaves out of what is readable. */
static bool in_home_secret(const char *dir, const char *path)
{
	const char *name = strrchr(dir, '/');
	char secret[PATH_MAX];

	name = name ? name + 1 : dir;
	for (size_t i = 0; home_secrets[i].home; i++)
		if (!strcmp(home_secrets[i].home, name) &&
		    snprintf(secret, sizeof secret, "%s/%s", dir, home_secrets[i].path) < (int)sizeof secret &&
		    beneath(path, secret))
			return true;
	return false;
}

/* Why the directory at real path `real` may not be made readable (static),
 * or NULL when it may. */
static const char *guard_judge(const struct guard *g, const char *real, bool home)
{
	char path[PATH_MAX];
	struct stat st;

	if (!strcmp(real, "/"))
		return "the root directory";
	for (size_t i = 0; i < g->n; i++)
		if (beneath(g->path[i], real) && !(home && in_home_secret(real, g->path[i])))
			return g->why[i];
	for (size_t i = 0; private_dots[i]; i++)
		if (strstr(real, private_dots[i]) ||
		    (snprintf(path, sizeof path, "%s/%s", real, private_dots[i]) < (int)sizeof path &&
		     lstat(path, &st) == 0))
			return "holds or is ~/.ssh or the like";
	return NULL;
}

/* Why dir may not be made readable (static), or NULL when it may.  Decided
 * on its real path: a symlink in PATH names what it points to. */
static const char *guard_refuses(struct guard *g, const char *dir)
{
	char *real = realpath(dir, NULL);
	const char *why;

	if (!real)
		return NULL;	/* not there: nothing is bound */
	for (size_t i = 0; i < g->nverdicts; i++)
		if (!g->verdicts[i].home && !strcmp(g->verdicts[i].real, real)) {
			free(real);
			return g->verdicts[i].why;
		}
	why = guard_judge(g, real, false);
	g->verdicts = xrealloc(g->verdicts, (g->nverdicts + 1) * sizeof *g->verdicts);
	g->verdicts[g->nverdicts] = (struct verdict){ .real = real, .why = why };	/* owned by the guard now */
	g->nverdicts++;
	return why;
}

/* How long a home must have stayed unchanged before its verdict is kept:
 * well above the granularity of any file system's times (FAT's 2 s), so a
 * change after the stamp cannot get the very times it had. */
int sandbox_home_settled_sec = 3;

static bool settled(struct timespec t, struct timespec now)
{
	return (long long)t.tv_sec + sandbox_home_settled_sec < (long long)now.tv_sec;
}

/*
 * guard_refuses for a toolchain home made readable by add_home, around
 * its secrets: what is beneath them (a run's worktree in ~/.local/state,
 * the repository's parent the guard keeps) does not keep it out.
 *
 * Judged again for every command, unlike a PATH entry: a .ssh that
 * appears in ~/.cargo between two commands keeps it out of the next.  The
 * verdict (a dozen lstat()s of the names in private_dots, for each home of
 * each command) is kept with the home's real path, device, inode and
 * modification and change times, and used while they stay: what the
 * judgement reads beyond the guard's own (fixed) paths is which names the
 * directory holds, and an entry made, removed or renamed in it, a chmod,
 * or another directory in its place (a link, a mount) changes one of
 * them, whatever a command or anyone else did.  The times are taken
 * before the judgement, and only a home unchanged for sandbox_home_settled_sec
 * before it is kept: a change within the same tick of the clock (or the
 * same 2 s of a coarse file system) would leave its times as they were.
 */
static const char *guard_refuses_home(struct guard *g, const char *dir)
{
	char *real = realpath(dir, NULL);
	struct verdict *v = NULL;
	struct timespec now;
	struct stat st;
	const char *why;
	bool stamped;

	if (!real)
		return NULL;
	stamped = clock_gettime(CLOCK_REALTIME, &now) == 0 && lstat(real, &st) == 0 && S_ISDIR(st.st_mode);
	for (size_t i = 0; i < g->nverdicts && !v; i++)
		if (g->verdicts[i].home && !strcmp(g->verdicts[i].real, real))
			v = &g->verdicts[i];
	if (v && stamped && v->dev == st.st_dev && v->ino == st.st_ino && same_time(v->mtime, st.st_mtim) &&
	    same_time(v->ctime, st.st_ctim)) {
		free(real);
		return v->why;
	}
	if (v) {
		/* changed since: forgotten (the last verdict takes its place) */
		free(v->real);
		*v = g->verdicts[--g->nverdicts];
	}
	why = guard_judge(g, real, true);
	if (!stamped || !settled(st.st_mtim, now) || !settled(st.st_ctim, now)) {
		free(real);
		return why;
	}
	g->verdicts = xrealloc(g->verdicts, (g->nverdicts + 1) * sizeof *g->verdicts);
	g->verdicts[g->nverdicts++] = (struct verdict){
		.real = real,	/* owned by the guard now */
		.why = why,
		.home = true,
		.dev = st.st_dev,
		.ino = st.st_ino,
		.mtime = st.st_mtim,
		.ctime = st.st_ctim,
	};
	return why;
}

static void note_left_out(struct list *left_out, const char *what, const char *dir, const char *why)
{
	struct buf b = BUF_INIT;

	buf_addf(&b, "%s: %s is left out of what commands may read (%s)", what, dir, why);
	list_add(left_out, b.buf);
	buf_release(&b);
}

/* The directories of PATH, and the dot-directory toolchain each lives in
 * (~/.cargo/bin -> ~/.cargo, ~/.pyenv/shims -> ~/.pyenv); those the guard
 * refuses to left_out. */
static void add_path_dirs(struct list *readable, struct list *hidden, struct list *left_out,
			  struct guard *g, char *const *env)
{
	const char *val = NULL;
	struct list seen = { 0 }, homes = { 0 };

	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], "PATH=", 5))
			val = env[i] + 5;
	while (val && *val) {
		size_t n = strcspn(val, ":");
		char dir[PATH_MAX], *slash;
		if (n > 1 && n < sizeof(dir) && val[0] == '/') {
			const char *why;
			memcpy(dir, val, n);
			dir[n] = '\0';
			/* named again (PATH=~/.cargo/bin:~/.cargo/bin:...):
			 * what it adds is there already */
			bool again = list_has(&seen, dir);

			list_add(&seen, dir);
			if (again || access(dir, X_OK) != 0) {
				/* named before, not there or not searchable: nothing to bind */
			} else if ((why = guard_refuses(g, dir))) {
				note_left_out(left_out, "PATH", dir, why);
			} else {
				list_add(readable, dir);
				add_manager_home(readable, hidden, dir);
				slash = strrchr(dir, '/');
				if (slash && slash > dir) {
					*slash = '\0';
					slash = strrchr(dir, '/');
					/* (~/.pyenv/shims and ~/.pyenv/bin: one home) */
					if (slash && slash[1] == '.' && !list_has(&homes, dir)) {
						list_add(&homes, dir);
						if (!guard_refuses_home(g, dir))
							add_home(readable, hidden, dir);
					}
				}
			}
		}
		val += n;
		if (*val == ':')
			val++;
	}
	list_release(&seen);
	list_release(&homes);
}

/* The toolchain homes the command's environment names (sandbox_build_env:
 * RUSTUP_HOME, CARGO_HOME), read-only, unless private or missing. */
static void add_env_homes(struct list *readable, struct list *hidden, struct list *left_out,
			  struct guard *g, char *const *env)
{
	static const char *const names[] = { "RUSTUP_HOME", "CARGO_HOME", NULL };

	for (size_t i = 0; env && env[i]; i++) {
		for (size_t n = 0; names[n]; n++) {
			size_t len = strlen(names[n]);
			const char *dir, *why;

			if (strncmp(env[i], names[n], len) || env[i][len] != '=')
				continue;
			dir = env[i] + len + 1;
			if (dir[0] != '/' || access(dir, X_OK) != 0)
				continue;
			if ((why = guard_refuses_home(g, dir)))
				note_left_out(left_out, names[n], dir, why);
			else
				add_home(readable, hidden, dir);
		}
	}
}

/*
 * A run's worktree lies in the worktrees base (core/cachedir.h
 * worktrees_base: BASE/KEY/TRACE, git/git.h forge_git_runs_dir) beside the
 * other runs' of its repository and the runs' of every other one, their
 * uncommitted files too; what else is readable may hold BASE (a lent
 * ~/.local, read_anywhere).  In the view BASE is an empty directory, with
 * this run's worktree bound back in it (nsview binds parents first).
 */
static void hide_other_runs(struct list *hidden, const char *root)
{
	char *real = realpath(root, NULL), *base = worktrees_base();
	char *real_base = base ? realpath(base, NULL) : NULL;
	char *key = real ? path_parent(real) : NULL;
	char *above = key ? path_parent(key) : NULL;

	if (above && real_base && strcmp(above, real_base) == 0 && strcmp(key, real_base) != 0)
		list_add(hidden, real_base);
	free(above);
	free(key);
	free(real_base);
	free(base);
	free(real);
}

static void view_add(struct sandbox_walls *w, const char *src, const char *dst, int kind)
{
	w->view = xrealloc(w->view, (w->nview + 1) * sizeof(*w->view));
	w->view[w->nview].src = src;
	w->view[w->nview].dst = dst;
	w->view[w->nview].kind = kind;
	w->view[w->nview].data = NULL;
	w->nview++;
}

/* Whether a git config line (key = value, trimmed) names a credential. */
static bool credential_key(const char *line)
{
	static const char *const words[] = { "extraheader", "password", "token", "helper", "secret", NULL };
	char key[128];
	size_t n = 0;

	while (line[n] && line[n] != '=' && line[n] != ' ' && line[n] != '\t' && n < sizeof key - 1) {
		key[n] = (char)(line[n] >= 'A' && line[n] <= 'Z' ? line[n] - 'A' + 'a' : line[n]);
		n++;
	}
	key[n] = '\0';
	for (size_t i = 0; words[i]; i++)
		if (strstr(key, words[i]))
			return true;
	return false;
}

/* line without the user:password@ of a URL in it (appended to out). */
static void add_without_userinfo(struct buf *out, const char *line)
{
	const char *scheme = strstr(line, "://"), *at, *end;

	if (!scheme) {
		buf_adds(out, line);
		return;
	}
	end = scheme + 3 + strcspn(scheme + 3, "/ \t\"\n");
	at = memchr(scheme + 3, '@', (size_t)(end - scheme - 3));
	if (!at) {
		buf_adds(out, line);
		return;
	}
	buf_add(out, line, (size_t)(scheme + 3 - line));
	buf_adds(out, at + 1);
}

/* The most of a git config Forge copies; a larger one is hidden. */
#define GIT_CONFIG_MAX (16u << 20)

/*
 * Cover config (malloc'd; the walls own it) with a copy without its
 * credentials: the lines of keys that hold one (extraheader, password,
 * token, credential helpers) and the user:password@ of URLs.  The copy is
 * an NSVIEW_DATA entry: the view's own tmpfs holds it, never a host path a
 * command could remove, replace or turn into a FIFO.  Fail closed: a config
 * that is there but cannot be read as a regular file is hidden instead
 * (w->uncovered says why); nothing when there is none.
 */
static void cover_git_config(struct sandbox_walls *w, char *config)
{
	struct buf text = BUF_INIT, out = BUF_INIT;
	size_t at = 0;

	if (buf_read_regular(&text, config, GIT_CONFIG_MAX) < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			free(config);
			buf_release(&text);
			return;
		}
		w->covers = xrealloc(w->covers, (w->ncovers + 1) * 2 * sizeof *w->covers);
		w->covers[w->ncovers * 2] = NULL;
		w->covers[w->ncovers * 2 + 1] = config;
		view_add(w, config, NULL, NSVIEW_HIDE);
		if (!w->uncovered)
			w->uncovered = xstrdup(forge_last_error());
		w->ncovers++;
		buf_release(&text);
		return;
	}
	while (at < text.len) {
		/* line by line, whole lines however long (a part of a long
		 * credential line must not pass for a line of its own) */
		const char *nl = memchr(text.buf + at, '\n', text.len - at);
		size_t end = nl ? (size_t)(nl - text.buf) + 1 : text.len;
		struct buf line = BUF_INIT;
		const char *t;

		buf_add(&line, text.buf + at, end - at);
		t = line.buf + strspn(line.buf, " \t");
		if (*t != '[' && *t != '#' && *t != ';' && credential_key(t))
			buf_adds(&out, "\t# (a credential: not shown to commands)\n");
		else
			add_without_userinfo(&out, line.buf);
		buf_release(&line);
		at = end;
	}
	w->covers = xrealloc(w->covers, (w->ncovers + 1) * 2 * sizeof *w->covers);
	w->covers[w->ncovers * 2] = out.buf ? buf_detach(&out, NULL) : xstrdup("");
	w->covers[w->ncovers * 2 + 1] = config;
	view_add(w, NULL, config, NSVIEW_DATA);
	w->view[w->nview - 1].data = w->covers[w->ncovers * 2];
	w->ncovers++;
	buf_release(&out);
	buf_release(&text);
}

void sandbox_walls_build(struct sandbox_walls *w, const struct sandbox_policy *p,
			 const struct sandbox_cmd *cmd, char *const *env, bool view)
{
	struct list readable = { 0 }, hidden = { 0 }, viewro = { 0 }, writable = { 0 }, left_out = { 0 };
	struct buf b = BUF_INIT;
	struct guard *g;

	memset(w, 0, sizeof(*w));
	list_add(&writable, cmd->root);
	if (cmd->tmp)
		list_add(&writable, cmd->tmp);
	for (size_t i = 0; p->writable && p->writable[i]; i++)
		list_add(&writable, p->writable[i]);

	for (size_t i = 0; system_paths[i]; i++) {
		list_add(&readable, system_paths[i]);
		list_add(&viewro, system_paths[i]);
	}
	if (view) {
		/* The view covers the secrets: one Landlock rule for /etc (a
		 * rule per entry costs ~2 ms a command). */
		add_etc_view(&readable, &hidden);
	} else {
		add_dir_except(&readable, &hidden, "/etc");
	}
	list_add(&viewro, "/etc");
	pthread_mutex_lock(&guard_lock);
	g = guard_get(cmd, cmd->base_env ? cmd->base_env : environ);
	add_path_dirs(&readable, &hidden, &left_out, g, env);
	add_env_homes(&readable, &hidden, &left_out, g, env);
	pthread_mutex_unlock(&guard_lock);
	char *common = add_git_common(&readable, cmd->root);
	if (view)
		hide_other_runs(&hidden, cmd->root);
	for (size_t i = 0; p->read_paths && p->read_paths[i]; i++)
		list_add(&readable, p->read_paths[i]);
	/* Everything readable but not a system path or /etc entry is bound as is. */
	for (size_t i = 0; i < readable.n; i++) {
		bool covered = beneath(readable.v[i], "/etc");
		for (size_t k = 0; system_paths[k] && !covered; k++)
			covered = beneath(readable.v[i], system_paths[k]);
		for (size_t k = 0; k < readable.n && !covered; k++)
			covered = k != i && beneath(readable.v[i], readable.v[k]) &&
				  strcmp(readable.v[i], readable.v[k]);
		if (!covered)
			list_add(&viewro, readable.v[i]);
	}
	list_add(&readable, "/proc");

	if (p->read_anywhere) {
		/* Everything, but still no host sockets or shared memory. */
		view_add(w, "/", "/", NSVIEW_RO);
		view_add(w, "/tmp", NULL, NSVIEW_HIDE);
		view_add(w, "/var/tmp", NULL, NSVIEW_HIDE);
		view_add(w, "/run", NULL, NSVIEW_HIDE);
		view_add(w, "/var/run", NULL, NSVIEW_HIDE);
		for (size_t i = 0; i < hidden.n; i++)
			view_add(w, hidden.v[i], NULL, NSVIEW_HIDE);
	} else {
		for (size_t i = 0; i < viewro.n; i++)
			view_add(w, viewro.v[i], NULL, NSVIEW_RO);
		for (size_t i = 0; i < hidden.n; i++)
			view_add(w, hidden.v[i], NULL, NSVIEW_HIDE);
	}
	for (size_t i = 0; i < writable.n; i++)
		view_add(w, writable.v[i], NULL, NSVIEW_RW);
	if (cmd->tmp && !beneath(cmd->tmp, "/tmp"))
		view_add(w, cmd->tmp, "/tmp", NSVIEW_RW);
	buf_addf(&b, "%s/.forge", cmd->root);
	w->forge_dir = buf_detach(&b, NULL);
	/* Forge's own rules are read-only for commands; an empty .forge is
	 * made when there is none, so that none can be created either. */
	if (p->namespaces != SANDBOX_OFF && mkdir(w->forge_dir, 0755) < 0 && errno != EEXIST) {
		/* a read-only worktree, or a file named .forge: nothing to guard */
	}
	view_add(w, w->forge_dir, NULL, NSVIEW_RO);
	/* So is the worktree's .git (a linked worktree's file naming its git
	 * directory): a command that rewrote it would point the next one's
	 * walls, or git run later outside any sandbox, where it likes. */
	buf_addf(&b, "%s/.git", cmd->root);
	w->git_link = buf_detach(&b, NULL);
	struct stat gst;

	if (p->namespaces != SANDBOX_OFF && lstat(w->git_link, &gst) == 0 &&
	    (S_ISREG(gst.st_mode) || S_ISDIR(gst.st_mode)))
		view_add(w, w->git_link, NULL, NSVIEW_RO);
	/* The repository's config is covered by a copy without its
	 * credentials (a CI checkout's token in http.*.extraheader, a token in
	 * a remote's URL): what the command reads of it reaches the model.
	 * Only the view covers it: without one the copy would be no use. */
	if (p->namespaces != SANDBOX_OFF && view) {
		if (common) {
			buf_addf(&b, "%s/config", common);
			cover_git_config(w, buf_detach(&b, NULL));
		}
		if (lstat(w->git_link, &gst) == 0 && S_ISDIR(gst.st_mode)) {
			buf_addf(&b, "%s/config", w->git_link);
			cover_git_config(w, buf_detach(&b, NULL));
		}
	}
	free(common);

	w->readable = readable.v;
	w->writable = writable.v;
	w->viewro = viewro.v;
	w->hidden = hidden.v;
	w->left_out = left_out.v;
	if (!w->readable)
		w->readable = xcalloc(1, sizeof(char *));
	if (!w->hidden)
		w->hidden = xcalloc(1, sizeof(char *));
}

/* Append a copy of s to the NULL-terminated *v (which may be NULL). */
static void strv_append(char ***v, const char *s)
{
	size_t n = 0;

	while (*v && (*v)[n])
		n++;
	*v = xrealloc(*v, (n + 2) * sizeof **v);
	(*v)[n] = xstrdup(s);
	(*v)[n + 1] = NULL;
}

void sandbox_walls_lend(struct sandbox_walls *w, struct sandbox_deps *d,
			const struct sandbox_cmd *cmd, bool view)
{
	for (size_t i = 0; i < d->n; i++) {
		struct sandbox_lend *l = &d->v[i];

		strv_append(&w->readable, l->src);
		if (!view)
			continue;
		if (l->venv)
			view_add(w, l->src, NULL, NSVIEW_RO);   /* where its scripts' #! lines look */
		if (!l->made && mkdir(l->dst, 0755) == 0)
			l->made = true;
		else if (!l->made && errno != EEXIST)
			continue;   /* no mount point: a read-only root */
		view_add(w, l->src, l->dst, NSVIEW_RO);
	}
	if (d->venv_home) {
		/* pyvenv.cfg says where: judged as a PATH entry is (never the
		 * home directory, / or a parent of the repository ...) */
		struct list left_out = { 0 };
		const char *why;

		pthread_mutex_lock(&guard_lock);
		why = guard_refuses(guard_get(cmd, cmd->base_env ? cmd->base_env : environ), d->venv_home);
		pthread_mutex_unlock(&guard_lock);
		if (why) {
			note_left_out(&left_out, "the virtualenv's python", d->venv_home, why);
			strv_append(&w->left_out, left_out.v[0]);
			list_release(&left_out);
		} else {
			strv_append(&w->readable, d->venv_home);
			if (view)
				view_add(w, d->venv_home, NULL, NSVIEW_RO);
		}
	}
}

static void strv_release(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void sandbox_walls_release(struct sandbox_walls *w)
{
	if (!w)
		return;
	strv_release(w->readable);
	strv_release(w->writable);
	strv_release(w->viewro);
	strv_release(w->hidden);
	strv_release(w->left_out);
	free(w->forge_dir);
	free(w->git_link);
	free(w->uncovered);
	for (size_t i = 0; i < w->ncovers * 2; i++)
		free(w->covers[i]);
	free(w->covers);
	free(w->view);
	memset(w, 0, sizeof(*w));
}
