/* git.c - the repository: open, resolve, merge base, fast-forward, push.
 * Worktrees are in git_worktree.c; status, diff, commit and reset in
 * git_diff.c. */
#include "git/git_internal.h"

#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "core/forgedir.h"
#include "core/json.h"
#include "core/owner.h"
#include "core/secret.h"
#include "core/sha256.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <git2/sys/repository.h>
#include <limits.h>
#ifdef FORGE_GIT2_STATIC
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- libgit2, once per process ------------------------------------------ */

/*
 * libgit2 (Debian's, built with mbedtls) parses the system CA bundle in
 * git_libgit2_init() through mbedtls_x509_crt_parse_file().  That call lands
 * here: during our own initialisation the path is only noted; any other call
 * goes to mbedtls.  Linked statically (FORGE_GIT2_STATIC), the linker routes
 * libgit2's call here (-Wl,--wrap=mbedtls_x509_crt_parse_file); loaded as a
 * shared library, this program defines the function, and the executable's
 * definition comes first in the dynamic linker's lookup.  With a libgit2
 * built on another TLS library nothing calls it.
 */
struct mbedtls_x509_crt;
typedef int parse_fn(struct mbedtls_x509_crt *, const char *);
#ifdef FORGE_GIT2_STATIC
#define CA_PARSE_FILE __wrap_mbedtls_x509_crt_parse_file
parse_fn __real_mbedtls_x509_crt_parse_file;
#else
#define CA_PARSE_FILE mbedtls_x509_crt_parse_file
#endif
parse_fn CA_PARSE_FILE;

#ifdef FORGE_GIT2_STATIC
/* Pulls gss_lazy.o and ssh2_lazy.o from the archive with this one: libgit2.a,
 * linked after it, needs their gss_* and libssh2_* functions. */
extern const int forge_gss_lazy, forge_ssh2_lazy;
__attribute__((used)) static const int *const lazy_linked[] = { &forge_gss_lazy, &forge_ssh2_lazy };
#endif

static bool ca_deferring;
static char *ca_deferred;   /* the bundle libgit2 wanted, until read */
static int ca_loads;

#ifdef FORGE_GIT2_STATIC
/*
 * libgit2's whole mbedtls set-up waits for TLS too: git_libgit2_init()
 * seeds a random generator from the system's entropy and fills an SSL
 * configuration (~1.4M instructions, 13% of a forge-deploy that never
 * pushes).  Linked statically, the linker routes libgit2's four ways into
 * its mbedtls stream here (-Wl,--wrap=...): the set-up is skipped while
 * libgit2 initialises and made, once, before the first of the other three
 * (a TLS stream, a wrapped proxy stream, CA locations), from whichever
 * thread comes first (pthread_once).
 */
struct git_stream;
int __real_git_mbedtls_stream_global_init(void);
int __real_git_mbedtls_stream_new(struct git_stream **out, const char *host, const char *port);
int __real_git_mbedtls_stream_wrap(struct git_stream **out, struct git_stream *in, const char *host);
int __real_git_mbedtls__set_cert_location(const char *file, const char *path);
int __wrap_git_mbedtls_stream_global_init(void);
int __wrap_git_mbedtls_stream_new(struct git_stream **out, const char *host, const char *port);
int __wrap_git_mbedtls_stream_wrap(struct git_stream **out, struct git_stream *in, const char *host);
int __wrap_git_mbedtls__set_cert_location(const char *file, const char *path);

static int tls_init_rc, tls_inits;

static void tls_init_once(void)
{
	tls_inits++;
	tls_init_rc = __real_git_mbedtls_stream_global_init();
}

/* The deferred set-up: 0, or libgit2's error (it set the message). */
static int tls_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, tls_init_once);
	return tls_init_rc;
}

int __wrap_git_mbedtls_stream_global_init(void)
{
	return ca_deferring ? 0 : tls_init();
}

int __wrap_git_mbedtls_stream_new(struct git_stream **out, const char *host, const char *port)
{
	return tls_init() < 0 ? -1 : __real_git_mbedtls_stream_new(out, host, port);
}

int __wrap_git_mbedtls_stream_wrap(struct git_stream **out, struct git_stream *in, const char *host)
{
	return tls_init() < 0 ? -1 : __real_git_mbedtls_stream_wrap(out, in, host);
}

int __wrap_git_mbedtls__set_cert_location(const char *file, const char *path)
{
	return tls_init() < 0 ? -1 : __real_git_mbedtls__set_cert_location(file, path);
}

/*
 * libgit2 1.5.1's git_regexp_match() (PCRE2) does not free its match data
 * when the string does not match (later versions do).  Opening a
 * repository of format version 1 -- a worktreeConfig one, which Forge
 * opens -- runs git_config_foreach_match("^extensions\\.") over every
 * setting, so each open leaked ~20 KiB per setting, and every program
 * under LeakSanitizer failed there.  Linked statically, libgit2's calls
 * come here (-Wl,--wrap=git_regexp_match): the same match, the data freed.
 * (git_regex is a pcre2_code * in a PCRE2 build; the return values are
 * libgit2's.)
 */
int __wrap_git_regexp_match(pcre2_code *const *r, const char *string);

int __wrap_git_regexp_match(pcre2_code *const *r, const char *string)
{
	pcre2_match_data *data = pcre2_match_data_create(1, NULL);
	int e;

	if (!data)
		return -1;
	e = pcre2_match(*r, (PCRE2_SPTR)string, strlen(string), 0, 0, data, NULL);
	pcre2_match_data_free(data);
	if (e < 0)
		return e == PCRE2_ERROR_NOMATCH ? GIT_ENOTFOUND : GIT_EINVALIDSPEC;
	return 0;
}
#endif

int CA_PARSE_FILE(struct mbedtls_x509_crt *chain, const char *path)
{
	static parse_fn *real;

	if (ca_deferring) {
		free(ca_deferred);
		ca_deferred = path ? xstrdup(path) : NULL;
		return 0;       /* no certificate yet: forge_git_tls_prepare() */
	}
#ifdef FORGE_GIT2_STATIC
	real = __real_mbedtls_x509_crt_parse_file;
#else
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "mbedtls_x509_crt_parse_file");
#endif
	if (!real)
		return -1;
	ca_loads++;
	return real(chain, path);
}

static void kept_drop(void);

static pthread_mutex_t kept_lock;

static void git_done(void)
{
	/* (the kept handle: forge_git_identity()).  Another thread using it
	 * as the process exits (an agent tool's forge_git_written_paths())
	 * keeps it, and libgit2 too: freed under that thread, they would be
	 * read after their free; the exit takes them all the same */
	if (pthread_mutex_trylock(&kept_lock) != 0)
		return;
	kept_drop();
	pthread_mutex_unlock(&kept_lock);
	git_libgit2_shutdown();
	free(ca_deferred);
	ca_deferred = NULL;
}

static void git_once(void)
{
	ca_deferring = true;
	git_libgit2_init();
	ca_deferring = false;
	/* libgit2 1.5 checks who owns a repository it opens, but not as git
	 * does (safe.directory '*' is not honoured, and its refusal reads
	 * "config value 'safe.directory' was not found"): forge_git_repo_open()
	 * makes git's check instead. */
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
	/* Repository format extensions libgit2 1.5 refuses to open though
	 * nothing it does goes against them: worktreeConfig (per-worktree
	 * settings in config.worktree, read by forge_git_repo_open()) and
	 * preciousObjects (no object is ever deleted: neither libgit2 nor
	 * Forge prunes or repacks).  `git sparse-checkout` sets the first. */
	static const char *const allowed[] = { "worktreeconfig", "preciousobjects" };
	git_libgit2_opts(GIT_OPT_SET_EXTENSIONS, allowed, sizeof allowed / sizeof allowed[0]);
	atexit(git_done);
}

void forge_git_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, git_once);
}

int forge_git_tls_prepare(void)
{
	forge_git_init();
	if (!ca_deferred)
		return 0;
	if (git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, ca_deferred, NULL) < 0)
		return forge_git_fail("cannot read the CA certificates '%s'", ca_deferred);
	free(ca_deferred);
	ca_deferred = NULL;
	return 0;
}

int forge_git_ca_loads(void)
{
	return ca_loads;
}

int forge_git_tls_inits(void)
{
#ifdef FORGE_GIT2_STATIC
	return tls_inits;
#else
	return -1;
#endif
}

/* ---- errors ---------------------------------------------------------------- */

/*
 * libgit2 says which file it could not make or change ("failed to create
 * locked file '/r/.git/refs/heads/forge/T.lock': Permission denied"), not
 * which directory is in the way: one `sudo forge run` (or `sudo git`) left
 * root's.  The first absolute path quoted in a "Permission denied" message,
 * explained (core/owner.h).
 */
static void explain_denied(struct buf *b, const char *msg)
{
	const char *p = strstr(msg, "'/"), *end;

	if (!strstr(msg, strerror(EACCES)) || !p || !(end = strchr(p + 1, '\'')))
		return;
	char *path = xstrndup(p + 1, (size_t)(end - p - 1));
	size_t at = b->len;

	buf_adds(b, "; ");
	if (!owner_explain(b, path, true))
		buf_truncate(b, at);
	free(path);
}

/* Whether libgit2's last error is the process's (EMFILE) or the system's
 * (ENFILE) table of open files being full: its words ("could not open
 * '.git/config': Too many open files") read as no repository there. */
static bool out_of_files(void)
{
	const git_error *e = git_error_last();

	return e && e->message && (strstr(e->message, strerror(EMFILE)) || strstr(e->message, strerror(ENFILE)));
}

/* When out_of_files(), appends to b what is full and what to do. */
static void explain_out_of_files(struct buf *b)
{
	const git_error *e = git_error_last();
	struct rlimit nofile;

	if (!out_of_files())
		return;
	if (strstr(e->message, strerror(ENFILE)))
		buf_adds(b, "; the system's table of open files is full: close some programs and try again");
	else if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
		buf_addf(b, "; too many open files: this process may have %llu open at once (ulimit -n, "
			 "RLIMIT_NOFILE): raise the limit and try again", (unsigned long long)nofile.rlim_cur);
	else
		buf_adds(b, "; too many open files for this process (ulimit -n): raise the limit and try again");
}

int forge_git_fail(const char *fmt, ...)
{
	const git_error *e = git_error_last();   /* may be NULL in 1.5 */
	struct buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (e && e->message && *e->message) {
		size_t n = strlen(e->message);

		while (n > 0 && (e->message[n - 1] == '\n' || e->message[n - 1] == '.'))
			n--;
		buf_adds(&b, ": ");
		buf_add(&b, e->message, n);
		explain_denied(&b, e->message);
		explain_out_of_files(&b);
	}
	forge_error("%s", b.buf);
	buf_release(&b);
	return -1;
}

/* libgit2's walk of a worktree stops at this many directories (its
 * iterator's FILESYSTEM_MAX_DEPTH). */
#define GIT_WALK_DEPTH_MAX 100

/* Append to rel the first directory below dir (open, consumed) that is
 * `left` directories deep or deeper: 1 found, 0 none. */
static int find_too_deep(struct buf *rel, int dir, int left)
{
	DIR *d = fdopendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d) {
		close(dir);
		return 0;
	}
	while (!found && (e = readdir(d))) {
		struct stat st;
		size_t mark = rel->len;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".git"))
			continue;
		if (e->d_type != DT_DIR && (e->d_type != DT_UNKNOWN ||
					    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
					    !S_ISDIR(st.st_mode)))
			continue;
		buf_addf(rel, "%s%s", mark ? "/" : "", e->d_name);
		if (left <= 1)
			return closedir(d), 1;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			found = find_too_deep(rel, sub, left - 1);
		if (!found)
			buf_truncate(rel, mark);
	}
	closedir(d);
	return found;
}

int forge_git_fail_status(const char *workdir)
{
	const git_error *e = git_error_last();
	struct buf rel = BUF_INIT;
	int dir;

	forge_git_fail("cannot read the status of worktree '%s'", workdir);
	if (!e || !e->message || !strstr(e->message, "nesting too deep"))
		return -1;
	dir = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir >= 0 && find_too_deep(&rel, dir, GIT_WALK_DEPTH_MAX)) {
		char *why = xstrdup(forge_last_error());

		forge_error("%s: a directory %d deep, more than git (libgit2) walks, is in the worktree "
			    "(a command's doing, as a rule): remove it (rm -rf '%s/%s') and try again", why,
			    GIT_WALK_DEPTH_MAX, workdir, rel.buf);
		free(why);
	}
	buf_release(&rel);
	return -1;
}

char *forge_git_hex(const git_oid *id)
{
	char hex[GIT_OID_HEXSZ + 1];

	git_oid_tostr(hex, sizeof hex, id);
	return xstrdup(hex);
}

int forge_git_signature(git_signature **out)
{
	if (git_signature_now(out, "Forge", "forge@localhost") < 0)
		return forge_git_fail("cannot make a signature");
	return 0;
}

const char *const forge_git_guard[] = { "core.fsmonitor=false", "core.hooksPath=/dev/null", NULL };

char *forge_git_guard_env(void)
{
	struct buf b = BUF_INIT;

	/* 'NAME=VALUE' quoted, space-separated: the form every git reads */
	buf_adds(&b, "GIT_CONFIG_PARAMETERS=");
	for (const char *const *s = forge_git_guard; *s; s++)
		buf_addf(&b, "%s'%s'", s == forge_git_guard ? "" : " ", *s);
	return buf_detach(&b, NULL);
}

char *forge_git_path(const char *a, const char *b)
{
	struct buf p = BUF_INIT;

	buf_addf(&p, "%s/%s", a, b);
	return buf_detach(&p, NULL);
}

int forge_git_branch_gone(git_repository *wt_repo, const char *branch, const char *trace,
			  const char *base)
{
	git_reflog *log = NULL;
	const git_reflog_entry *last;
	char hex[GIT_OID_HEXSZ + 1] = "";

	/* The worktree's HEAD keeps its reflog when the branch (and the
	 * branch's own reflog) is deleted: its newest entry is the commit the
	 * branch was at.  No entry: nothing was committed through HEAD, and
	 * the branch was at the run's base. */
	if (git_reflog_read(&log, wt_repo, "HEAD") == 0 && (last = git_reflog_entry_byindex(log, 0)))
		git_oid_tostr(hex, sizeof hex, git_reflog_entry_id_new(last));
	else if (base)
		snprintf(hex, sizeof hex, "%s", base);
	git_reflog_free(log);
	if (*hex)
		return forge_error("the run's branch '%s' is gone (deleted while the run was going?); "
				   "nothing was committed.  `forge resume %s` puts it back at the run's last "
				   "checkpoint, or `git branch %s %s` at its last commit", branch, trace, branch, hex);
	return forge_error("the run's branch '%s' is gone (deleted while the run was going?); "
			   "nothing was committed.  `forge resume %s` puts it back at the run's last "
			   "checkpoint", branch, trace);
}

/* True when HEAD is unborn and rev is "HEAD" or the branch it names. */
static bool names_unborn_head(git_repository *repo, const char *rev)
{
	git_reference *head = NULL;
	const char *target;
	bool yes = false;

	if (git_repository_head_unborn(repo) != 1)
		return false;
	if (strcmp(rev, "HEAD") == 0)
		return true;
	if (git_reference_lookup(&head, repo, "HEAD") < 0)
		return false;
	target = git_reference_symbolic_target(head);
	if (target && (strcmp(target, rev) == 0 ||
		       (strncmp(target, "refs/heads/", 11) == 0 && strcmp(target + 11, rev) == 0)))
		yes = true;
	git_reference_free(head);
	return yes;
}

int forge_git_peel(git_oid *out, bool *out_unborn, git_repository *repo, const char *rev)
{
	git_object *obj = NULL, *commit = NULL;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (out_unborn)
		*out_unborn = false;
	if (!rev || !*rev)
		return forge_error("an empty revision names no commit");
	if (git_revparse_single(&obj, repo, rev) < 0) {
		forge_git_fail("cannot resolve '%s'", rev);
		if (out_unborn && names_unborn_head(repo, rev)) {
			*out_unborn = true;
			rc = 0;
		}
		goto out;
	}
	if (git_object_peel(&commit, obj, GIT_OBJECT_COMMIT) < 0) {
		forge_git_fail("'%s' does not name a commit", rev);
		goto out;
	}
	git_oid_cpy(out, git_object_id(commit));
	rc = 0;
out:
	git_object_free(commit);
	git_object_free(obj);
	return rc;
}

static void strip_slash(char *s)
{
	size_t n = strlen(s);

	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
}

char *forge_git_legacy_runs_dir(const char *root)
{
	return forge_git_path(root, ".forge/worktrees");
}

bool forge_git_directly_in(const char *path, const char *dir)
{
	size_t n = strlen(dir), m;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (strncmp(path, dir, n) != 0 || path[n] != '/')
		return false;
	path += n + 1;
	m = strlen(path);
	while (m > 0 && path[m - 1] == '/')
		m--;
	return m > 0 && !memchr(path, '/', m);
}

static bool ascii_alnum(char c);

#define RUNS_KEY_NAME_MAX 32      /* bytes of the checkout's name in a runs dir's */
#define RUNS_KEY_HASH_HEX 16

bool forge_git_runs_key_shaped(const char *name)
{
	size_t n = strlen(name);

	if (n < RUNS_KEY_HASH_HEX + 2 || name[n - RUNS_KEY_HASH_HEX - 1] != '-')
		return false;
	for (const char *h = name + n - RUNS_KEY_HASH_HEX; *h; h++)
		if (!(*h >= '0' && *h <= '9') && !(*h >= 'a' && *h <= 'f'))
			return false;
	return true;
}

/* Whether dir is a run's worktree directly in a runs dir of the worktrees
 * base (base/KEY/NAME): this repository's, or the one it had before its
 * checkout moved (another KEY). */
static bool in_runs_base(const char *base, const char *dir)
{
	char *d = xstrdup(dir), *parent, *key;
	bool is = false;

	strip_slash(d);
	parent = path_parent(d);
	key = strrchr(parent, '/');
	if (base && key && forge_git_directly_in(parent, base) && forge_git_runs_key_shaped(key + 1) &&
	    forge_git_directly_in(d, parent))
		is = true;
	free(parent);
	free(d);
	return is;
}

/* Whether dir is one of Forge's run worktrees of g's repository: directly
 * in g->runs, in another runs dir of the base (a checkout moved since its
 * run began), or in an older Forge's <root>/.forge/worktrees.  By path. */
static bool is_run_worktree(const struct forge_git *g, const char *dir)
{
	char *legacy = forge_git_legacy_runs_dir(g->root);
	bool is = forge_git_directly_in(dir, g->runs) || forge_git_directly_in(dir, legacy) ||
		  in_runs_base(g->runs_base, dir);

	free(legacy);
	return is;
}

/* ---- ownership: git's safe.directory ------------------------------------ */

/* Whether git counts path as this user's: owned by the effective user, or,
 * for root, by root or by the user sudo was run by (SUDO_UID).  A path that
 * is not there is no one's to refuse (true).  *owner: who owns it. */
static bool owned_here(uid_t *owner, const char *path)
{
	const char *sudo = getenv("SUDO_UID");
	uid_t euid = geteuid();
	struct stat st;

	*owner = euid;
	if (lstat(path, &st) < 0)
		return true;
	*owner = st.st_uid;
	if (st.st_uid == euid)
		return true;
	if (euid == 0 && sudo && *sudo) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(sudo, &end, 10);
		return errno == 0 && !*end && v == (unsigned long)st.st_uid;
	}
	return false;
}

struct safe_dir {
	const char *path;   /* what names the repository to git */
	bool safe;
};

/* One safe.directory value, in git's order: '*' names every repository,
 * an empty value (or none: `[safe] directory` alone) clears those before
 * it, any other is a path (~/ expanded) compared as it is. */
static void safe_dir_value(struct safe_dir *s, const char *value)
{
	git_buf full = { 0 };

	if (!value || !*value)
		s->safe = false;
	else if (strcmp(value, "*") == 0)
		s->safe = true;
	else if (git_config_parse_path(&full, value) == 0 && full.ptr && strcmp(full.ptr, s->path) == 0)
		s->safe = true;
	git_buf_dispose(&full);
	git_error_clear();      /* (a "~user/" path libgit2 does not expand names nothing) */
}

static int safe_dir_entry(const git_config_entry *e, void *payload)
{
	safe_dir_value(payload, e->value);
	return 0;
}

/* Add the configuration file path at level, as git reads it: skipped
 * when it cannot be read (not there, no permission).  0, or -1 with
 * *why (a file libgit2 cannot parse, which git refuses too). */
static int add_config_file(git_config *cfg, const char *path, git_config_level_t level, struct buf *why)
{
	const git_error *e;

	if (!*path || access(path, R_OK) < 0)
		return 0;
	if (git_config_add_file_ondisk(cfg, path, level, NULL, 0) == 0)
		return 0;
	e = git_error_last();
	buf_addf(why, "cannot read the git configuration '%s': %s", path, e && e->message ? e->message : "error");
	git_error_clear();
	return -1;
}

/*
 * The safe.directory values of git's configuration files, in its order:
 * the system file (GIT_CONFIG_SYSTEM, else the default; none with
 * GIT_CONFIG_NOSYSTEM true), then the global ones (GIT_CONFIG_GLOBAL
 * alone, else the XDG file and ~/.gitconfig).  The repository's own is not
 * read: it cannot vouch for itself.  0, or -1 with *why.
 */
static int safe_dir_files(struct safe_dir *s, struct buf *why)
{
	git_config *cfg = NULL;
	git_buf found = { 0 };
	const char *env;
	int rc = -1, nosystem = 0;

	if (git_config_new(&cfg) < 0) {
		buf_adds(why, "cannot make a git configuration");
		goto out;
	}
	if ((env = getenv("GIT_CONFIG_NOSYSTEM")) && git_config_parse_bool(&nosystem, env) < 0) {
		buf_addf(why, "bad boolean value '%s' for GIT_CONFIG_NOSYSTEM", env);
		goto out;
	}
	if (!nosystem) {
		if ((env = getenv("GIT_CONFIG_SYSTEM"))) {
			if (add_config_file(cfg, env, GIT_CONFIG_LEVEL_SYSTEM, why) < 0)
				goto out;
		} else if (git_config_find_system(&found) == 0 &&
			   add_config_file(cfg, found.ptr, GIT_CONFIG_LEVEL_SYSTEM, why) < 0) {
			goto out;
		}
		git_buf_dispose(&found);
	}
	if ((env = getenv("GIT_CONFIG_GLOBAL"))) {
		if (add_config_file(cfg, env, GIT_CONFIG_LEVEL_GLOBAL, why) < 0)
			goto out;
	} else {
		if (git_config_find_xdg(&found) == 0 && add_config_file(cfg, found.ptr, GIT_CONFIG_LEVEL_XDG, why) < 0)
			goto out;
		git_buf_dispose(&found);
		if (git_config_find_global(&found) == 0 &&
		    add_config_file(cfg, found.ptr, GIT_CONFIG_LEVEL_GLOBAL, why) < 0)
			goto out;
	}
	/* (libgit2 goes through the levels from the lowest, as git reads them) */
	git_config_get_multivar_foreach(cfg, "safe.directory", NULL, safe_dir_entry, s);
	rc = 0;
out:
	git_buf_dispose(&found);
	git_config_free(cfg);
	git_error_clear();      /* none set is no error */
	return rc;
}

/* Whether git takes key as a configuration key (its git_config_parse_key):
 * SECTION[.SUBSECTION].NAME, the section and name letters, digits and '-',
 * the name starting with a letter, no newline anywhere. */
static bool config_key_valid(const char *key)
{
	const char *last = strrchr(key, '.');
	const char *first = strchr(key, '.');

	if (!last || last == key || !last[1])
		return false;
	for (const char *p = key; *p; p++) {
		unsigned char c = (unsigned char)*p;
		bool keychar = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
		if (p < first || p > last) {
			if (!keychar || (p == last + 1 && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z')))
				return false;
		} else if (c == '\n') {
			return false;
		}
	}
	return true;
}

/* One setting of the command line (key as given, value NULL for a bare
 * key): 0, or -1 with *why, as git refuses it. */
static int safe_dir_pair(struct safe_dir *s, const char *key, const char *value, struct buf *why)
{
	if (!*key) {
		buf_adds(why, "empty config key");
		return -1;
	}
	if (!config_key_valid(key)) {
		buf_addf(why, "invalid key: %s", key);
		return -1;
	}
	/* (no subsection: the whole key is case-insensitive) */
	if (strcasecmp(key, "safe.directory") == 0)
		safe_dir_value(s, value);
	return 0;
}

/* git's sq_dequote_step: the single-quoted word at *cur ('\'' and '\!'
 * escapes between quotes), unquoted in place; *cur past it (NULL at the
 * end).  NULL when it is not one. */
static char *sq_dequote_step(char **cur)
{
	char *arg = *cur, *dst = arg, *src = arg;

	if (*src != '\'')
		return NULL;
	for (;;) {
		char c = *++src;
		if (!c)
			return NULL;
		if (c != '\'') {
			*dst++ = c;
			continue;
		}
		if (!*++src) {
			*dst = '\0';
			*cur = NULL;
			return arg;
		}
		if (*src == '\\' && (src[1] == '\'' || src[1] == '!') && src[2] == '\'') {
			*dst++ = src[1];
			src += 2;
			continue;
		}
		*dst = '\0';
		*cur = src;
		return arg;
	}
}

/* git's isspace() */
static bool git_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* An old-style 'KEY=VALUE' word of GIT_CONFIG_PARAMETERS (KEY alone: no
 * value; the key's blanks trimmed). */
static int safe_dir_old_param(struct safe_dir *s, char *text, struct buf *why)
{
	char *eq = strchr(text, '='), *value = NULL, *end;

	if (eq) {
		*eq = '\0';
		value = eq + 1;
	}
	while (git_space(*text))
		text++;
	end = text + strlen(text);
	while (end > text && git_space(end[-1]))
		*--end = '\0';
	if (!*text) {
		buf_adds(why, "bogus config parameter in GIT_CONFIG_PARAMETERS");
		return -1;
	}
	return safe_dir_pair(s, text, value, why);
}

/* GIT_CONFIG_PARAMETERS, as `git -c` passes its settings on:
 * space-separated 'KEY'='VALUE' ('KEY'= alone: no value) or 'KEY=VALUE'. */
static int safe_dir_params(struct safe_dir *s, const char *env, struct buf *why)
{
	char *copy = xstrdup(env), *cur = copy;
	int rc = 0;

	while (rc == 0 && cur && *cur) {
		char *key = sq_dequote_step(&cur), *value = NULL;
		bool ok = key != NULL;

		if (ok && (!cur || git_space(*cur))) {
			rc = safe_dir_old_param(s, key, why);
		} else {
			if (ok && *cur != '=')
				ok = false;
			else if (ok && *++cur == '\'')
				ok = (value = sq_dequote_step(&cur)) && (!cur || git_space(*cur));
			else if (ok && *cur && !git_space(*cur))
				ok = false;    /* ('KEY'= then a blank or the end: no value) */
			if (ok) {
				rc = safe_dir_pair(s, key, value, why);
			} else {
				buf_adds(why, "bogus format in GIT_CONFIG_PARAMETERS");
				rc = -1;
			}
		}
		while (cur && git_space(*cur))
			cur++;
	}
	free(copy);
	return rc;
}

/*
 * The command line's settings, after the files: git -c (GIT_CONFIG_PARAMETERS,
 * which a git hands on to what it runs) and GIT_CONFIG_COUNT with
 * GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n>, those first.  0, or -1 with
 * *why where git refuses to run (a bogus count, a key or value missing, a
 * malformed parameter).
 */
static int safe_dir_cmdline(struct safe_dir *s, struct buf *why)
{
	const char *env = getenv("GIT_CONFIG_COUNT");

	if (env) {
		char *end, name[48];
		unsigned long count;

		errno = 0;
		count = strtoul(env, &end, 10);
		if (*end || errno) {
			buf_addf(why, "bogus count '%s' in GIT_CONFIG_COUNT", env);
			return -1;
		}
		if (count > INT_MAX) {
			buf_addf(why, "too many entries in GIT_CONFIG_COUNT (%s)", env);
			return -1;
		}
		for (unsigned long i = 0; i < count; i++) {
			const char *key, *value;
			snprintf(name, sizeof name, "GIT_CONFIG_KEY_%lu", i);
			if (!(key = getenv(name))) {
				buf_addf(why, "missing config key %s", name);
				return -1;
			}
			snprintf(name, sizeof name, "GIT_CONFIG_VALUE_%lu", i);
			if (!(value = getenv(name))) {
				buf_addf(why, "missing config value %s", name);
				return -1;
			}
			if (safe_dir_pair(s, key, value, why) < 0)
				return -1;
		}
	}
	if ((env = getenv("GIT_CONFIG_PARAMETERS")))
		return safe_dir_params(s, env, why);
	return 0;
}

/* Append s as one shell word. */
static void add_shell_word(struct buf *b, const char *s)
{
	if (*s && !s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+:@,%=")]) {
		buf_adds(b, s);
		return;
	}
	buf_add_shell_quoted(b, s);
}

/*
 * git's ownership check of an open repository: its working tree, its .git
 * file (a linked worktree) and its git directory must be this user's
 * (owned_here), or the working tree -- a bare repository: its git
 * directory -- must be named by safe.directory in git's protected
 * configuration: the system and global files and the command line, found
 * as git finds them (safe_dir_files, safe_dir_cmdline); the repository's
 * own cannot vouch for it.
 */
static int check_owner(git_repository *repo)
{
	const char *workdir = git_repository_workdir(repo);
	char *name = xstrdup(workdir ? workdir : git_repository_path(repo));
	char *gitdir = xstrdup(git_repository_path(repo));
	struct safe_dir s = { name, false };
	struct buf dotgit = BUF_INIT, cmd = BUF_INIT, why = BUF_INIT;
	struct stat st;
	uid_t owner = geteuid();
	bool mine;
	int rc = 0;

	strip_slash(name);
	strip_slash(gitdir);
	buf_addf(&dotgit, "%s/.git", name);
	mine = (!workdir || owned_here(&owner, name)) &&
	       (!workdir || lstat(dotgit.buf, &st) < 0 || !S_ISREG(st.st_mode) || owned_here(&owner, dotgit.buf)) &&
	       owned_here(&owner, gitdir);
	if (!mine && (safe_dir_files(&s, &why) < 0 || safe_dir_cmdline(&s, &why) < 0)) {
		rc = FORGE_GIT_NOT_OWNED;
		forge_error("the repository at '%s' is owned by another user (uid %lu), and whether you trust it "
			    "cannot be read: %s (git refuses to run with it too); fix or unset it",
			    name, (unsigned long)owner, why.buf);
	} else if (!mine && !s.safe) {
		add_shell_word(&cmd, name);
		rc = FORGE_GIT_NOT_OWNED;
		forge_error("the repository at '%s' is owned by another user (uid %lu); if you trust it, run "
			    "`git config --global --add safe.directory %s`", name, (unsigned long)owner, cmd.buf);
	}
	buf_release(&dotgit);
	buf_release(&cmd);
	buf_release(&why);
	free(name);
	free(gitdir);
	return rc;
}

/* What a repository format extension libgit2 refuses is, and what to do:
 * by its name as libgit2 gives it (lower case). */
static const struct format_ext {
	const char *key, *name, *what, *todo;
} format_exts[] = {
	{ "objectformat", "objectFormat", "as git init --object-format=sha256 sets it",
	  "Forge works in repositories with SHA-1 object names only" },
	{ "refstorage", "refStorage", "as git init --ref-format=reftable sets it",
	  "`git refs migrate --ref-format=files` turns it back into the files store" },
	{ "partialclone", "partialClone", "as git clone --filter sets it",
	  "a full clone (git clone without --filter) works" },
};

/*
 * After git_repository_open_ext() failed: when libgit2 refused the
 * repository's format (an extension it does not know, a format version
 * over 1), a message saying so and FORGE_GIT_SETUP; else -1, libgit2's
 * error left as the last.
 */
static int format_refused(const char *path)
{
	static const char ext[] = "unsupported extension name extensions.";
	static const char version[] = "unsupported repository version ";
	const git_error *e = git_error_last();
	const char *msg = e && e->message ? e->message : "";
	int maj = 0, min = 0, rev = 0;
	char lib[64];

	if (strncmp(msg, ext, sizeof ext - 1) != 0 && strncmp(msg, version, sizeof version - 1) != 0)
		return -1;
	if (git_libgit2_version(&maj, &min, &rev) == 0)
		snprintf(lib, sizeof lib, "libgit2 %d.%d.%d", maj, min, rev);
	else
		snprintf(lib, sizeof lib, "libgit2");
	if (strncmp(msg, version, sizeof version - 1) == 0) {
		forge_error("the repository at '%s' has a git repository format %s cannot open (%s); Forge "
			    "cannot work in it: use git there", path, lib, msg);
		git_error_clear();
		return FORGE_GIT_SETUP;
	}
	const char *name = msg + sizeof ext - 1;
	size_t n = strcspn(name, " \t\r\n;:");
	const struct format_ext *known = NULL;

	for (size_t i = 0; i < sizeof format_exts / sizeof format_exts[0] && !known; i++)
		if (strlen(format_exts[i].key) == n && strncasecmp(name, format_exts[i].key, n) == 0)
			known = &format_exts[i];
	if (known)
		forge_error("the repository at '%s' uses the git format extension extensions.%s, %s, which %s "
			    "(the git library Forge is built on) cannot open; %s", path, known->name, known->what,
			    lib, known->todo);
	else
		forge_error("the repository at '%s' uses the git format extension extensions.%.*s, which %s (the "
			    "git library Forge is built on) cannot open; Forge cannot work in it as it is: use git "
			    "there, or a clone made without that extension", path, (int)n, name, lib);
	git_error_clear();
	return FORGE_GIT_SETUP;
}

/*
 * With extensions.worktreeConfig on, git reads the working tree's own
 * settings from <gitdir>/config.worktree over the repository's
 * (commit.gpgsign, core.hooksPath, user.email may be there); libgit2 1.5
 * does not.  Add that file at the highest level, as git has it.  0, or -1
 * with a message.
 */
static int worktree_config(git_repository *repo)
{
	git_config *cfg = NULL;
	struct buf p = BUF_INIT;
	char *path = NULL;
	struct stat st;
	int on = 0, rc = 0;

	if (git_repository_config(&cfg, repo) < 0)
		return forge_git_fail("cannot read the configuration of '%s'", git_repository_path(repo));
	if (git_config_get_bool(&on, cfg, "extensions.worktreeconfig") < 0 || !on) {
		git_error_clear();
		goto out;
	}
	buf_addf(&p, "%sconfig.worktree", git_repository_path(repo));   /* (the path ends in '/') */
	path = buf_detach(&p, NULL);
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	if (git_config_add_file_ondisk(cfg, path, GIT_CONFIG_LEVEL_APP, repo, 0) < 0 ||
	    git_repository_set_config(repo, cfg) < 0)
		rc = forge_git_fail("cannot read '%s'", path);
out:
	free(path);
	git_config_free(cfg);
	return rc;
}

int forge_git_repo_open(git_repository **out, const char *path, unsigned flags)
{
	git_repository *repo = NULL;
	int rc;

	*out = NULL;
	forge_git_init();
	if (git_repository_open_ext(&repo, path, flags, NULL) < 0)
		return format_refused(path);
	if ((rc = check_owner(repo)) != 0 || (rc = worktree_config(repo)) != 0) {
		git_repository_free(repo);
		return rc;
	}
	*out = repo;
	return 0;
}

/* ---- the repository -------------------------------------------------------- */

/*
 * The main working tree of the repository whose linked worktree wt is, as
 * git takes it (`git worktree list`): the directory holding the common
 * directory when that is "DIR/.git" of a repository that is not bare.  NULL
 * when there is none there: a bare repository's linked worktrees (git clone
 * --bare; git worktree add), or a git directory apart from its working tree
 * (git init --separate-git-dir), whose main working tree no file names.
 */
static char *main_tree(git_repository *wt)
{
	char *common = xstrdup(git_repository_commondir(wt));
	git_config *cfg = NULL;
	char *slash;
	int bare = 0;

	strip_slash(common);
	slash = strrchr(common, '/');
	if (!slash || slash == common || strcmp(slash + 1, ".git") != 0 ||
	    git_repository_config_snapshot(&cfg, wt) < 0 ||
	    (git_config_get_bool(&bare, cfg, "core.bare") == 0 && bare)) {
		git_config_free(cfg);
		git_error_clear();
		free(common);
		return NULL;
	}
	git_config_free(cfg);
	git_error_clear();      /* core.bare not set */
	*slash = '\0';
	return common;
}

/* Whether two paths name one directory. */
static bool same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * Where the runs' worktrees of the repository rooted at root are made:
 * base/KEY (base: worktrees_base, its real path), KEY the checkout's name
 * (at most 32 bytes, each byte but [A-Za-z0-9._-] as '_') and 16 hex
 * digits of the SHA-256 of the real path of the repository's common git
 * directory -- and of root, when root is not the main working tree (a
 * bare repository's or a --separate-git-dir one's linked worktree: each
 * such checkout has runs of its own, and KEY/root names it).  Outside the
 * checkout, where none of its test runners, linters or `git clean -x`
 * looks (in the checkout's .forge/ jest and vitest took every run's copy of
 * the tests for the project's own; in .git/ jest finds none in a run's).
 * With no base: the legacy <root>/.forge/worktrees.  malloc'd, no trailing
 * slash.
 */
static char *runs_dir_of(const char *base, const char *root, git_repository *repo)
{
	char *dotgit, *common;
	const char *name = strrchr(root, '/');
	struct buf dir = BUF_INIT;
	struct sha256 h;
	char hex[65];
	size_t k = 0;

	if (!base)
		return forge_git_legacy_runs_dir(root);
	dotgit = forge_git_path(root, ".git");
	common = realpath(git_repository_commondir(repo), NULL);
	if (!common) {
		common = xstrdup(git_repository_commondir(repo));
		strip_slash(common);
	}
	sha256_init(&h);
	sha256_update(&h, common, strlen(common));
	if (!same_dir(dotgit, common)) {
		sha256_update(&h, "\n", 1);
		sha256_update(&h, root, strlen(root));
	}
	sha256_hex(hex, &h);
	buf_addf(&dir, "%s/", base);
	for (name = name ? name + 1 : root; *name && k < RUNS_KEY_NAME_MAX; name++, k++)
		buf_addch(&dir, ascii_alnum(*name) || strchr("._-", *name) ? *name : '_');
	if (k == 0)
		buf_adds(&dir, "repo");
	buf_addf(&dir, "-%.*s", RUNS_KEY_HASH_HEX, hex);
	free(common);
	free(dotgit);
	return buf_detach(&dir, NULL);
}

/* The worktrees base (worktrees_base), its real path when it is there;
 * NULL when there is none. */
static char *runs_base(void)
{
	char *base = worktrees_base(), *real = base ? realpath(base, NULL) : NULL;

	if (real) {
		free(base);
		return real;
	}
	return base;
}

/*
 * The root a run's worktree dir, of a repository with no main working
 * tree, was made for: "BASE/KEY/TRACE" names it in BASE/KEY/root (written
 * when the first is made, git_worktree.c); an older Forge's
 * "ROOT/.forge/worktrees/TRACE" in its path.  NULL when dir is neither.
 */
static char *root_named_by(const char *dir)
{
	static const char legacy[] = "/.forge/worktrees/";
	const char *at = NULL, *p = dir, *key;
	char *parent = path_parent(dir), *root = NULL;

	key = strrchr(parent, '/');
	if (key && forge_git_runs_key_shaped(key + 1)) {
		struct buf file = BUF_INIT, text = BUF_INIT;

		buf_addf(&file, "%s/root", parent);
		if (buf_read_file(&text, file.buf) == 0) {
			while (text.len > 0 && text.buf[text.len - 1] == '\n')
				text.buf[--text.len] = '\0';
			if (text.len > 1 && text.buf[0] == '/')
				root = buf_detach(&text, NULL);
		}
		buf_release(&file);
		buf_release(&text);
	}
	free(parent);
	if (root)
		return root;
	while ((p = strstr(p, legacy))) {
		at = p;
		p += 1;
	}
	if (!at || !at[sizeof legacy - 1] || strchr(at + sizeof legacy - 1, '/') || at == dir)
		return NULL;
	return xstrndup(dir, (size_t)(at - dir));
}

/*
 * For a repository with no main working tree (main_tree() NULL), where
 * the root is the checkout a run was started in: when dir is a run's
 * worktree (root_named_by) and its ROOT is a working tree of the same
 * repository (its common directory is common), *out is ROOT and *out_repo
 * ROOT opened: 1.  0 when dir is not such a worktree, FORGE_GIT_NOT_OWNED
 * (a message) when ROOT is another user's.
 */
static int run_root(char **out, git_repository **out_repo, const char *dir, const char *common)
{
	git_repository *r = NULL;
	char *root = root_named_by(dir);
	int rc = 0;

	*out = NULL;
	*out_repo = NULL;
	if (!root)
		return 0;
	rc = forge_git_repo_open(&r, root, GIT_REPOSITORY_OPEN_NO_SEARCH);
	if (rc == -1) {
		git_error_clear();
		rc = 0;         /* no repository there: dir is a worktree of its own */
	} else if (rc == 0 && (!git_repository_workdir(r) || !same_dir(git_repository_commondir(r), common))) {
		rc = 0;
	} else if (rc == 0) {
		*out = root;
		*out_repo = r;
		return 1;
	}
	git_repository_free(r);
	free(root);
	return rc;
}

int forge_git_open(struct forge_git **out, const char *path)
{
	struct forge_git *g = xcalloc(1, sizeof *g);
	git_repository *found = NULL;
	char resolved[PATH_MAX];
	const char *shown = path ? path : ".";
	int rc = -1, e;

	*out = NULL;
	forge_git_init();
	if (!realpath(shown, resolved)) {
		forge_error("cannot use repository '%s': %s", shown, strerror(errno));
		goto out;
	}
	if ((e = forge_git_repo_open(&found, resolved, 0)) != 0) {
		if (e != -1)
			rc = e;         /* another user's, a format libgit2 refuses: said */
		else if (out_of_files())        /* (hunt65 #6: not "is not in a git repository") */
			forge_git_fail("cannot open the git repository of '%s'", shown);
		else
			forge_git_fail("'%s' is not in a git repository", shown);
		goto out;
	}
	if (git_repository_is_bare(found)) {
		forge_error("'%s' is a bare repository; forge needs a working tree (clone it first)",
			    shown);
		goto out;
	}
	if (git_repository_is_worktree(found)) {
		g->checkout = xstrdup(git_repository_workdir(found));
		strip_slash(g->checkout);
		/* A linked worktree: the root is the main working tree, or, for
		 * a repository without one, the checkout a run started in. */
		g->root = main_tree(found);
		g->runs_base = runs_base();
		if (g->root)
			g->runs = runs_dir_of(g->runs_base, g->root, found);
		if (g->root && is_run_worktree(g, g->checkout)) {
			if ((e = forge_git_repo_open(&g->repo, g->root, GIT_REPOSITORY_OPEN_NO_SEARCH)) != 0) {
				if (e != -1)
					rc = e;
				else
					forge_git_fail("cannot open the main repository of '%s' at '%s'",
						       shown, g->root);
				goto out;
			}
			free(g->checkout);
			g->checkout = xstrdup(g->root);
		} else if (!g->root &&
			   (e = run_root(&g->root, &g->repo, g->checkout, git_repository_commondir(found))) != 0) {
			if (e < 0) {
				rc = e;
				goto out;
			}
			free(g->checkout);
			g->checkout = xstrdup(g->root);
		} else {
			/* the person's own: its HEAD and files are what counts */
			if (!g->root)
				g->root = xstrdup(g->checkout);
			g->repo = found;
			found = NULL;
		}
	} else {
		g->root = xstrdup(git_repository_workdir(found));
		strip_slash(g->root);
		g->checkout = xstrdup(g->root);
		g->repo = found;
		found = NULL;
	}
	if (!g->runs_base)
		g->runs_base = runs_base();
	if (!g->runs)
		g->runs = runs_dir_of(g->runs_base, g->root, g->repo);
	*out = g;
	g = NULL;
	rc = 0;
out:
	git_repository_free(found);
	forge_git_free(g);
	return rc;
}

void forge_git_free(struct forge_git *g)
{
	if (!g)
		return;
	if (g->merge_locks > 0)
		close(g->merge_lock_fd);
	git_repository_free(g->repo);
	free(g->root);
	free(g->checkout);
	free(g->runs);
	free(g->runs_base);
	free(g);
}

const char *forge_git_runs_dir(const struct forge_git *g)
{
	return g->runs;
}

bool forge_git_is_run_worktree(const struct forge_git *g, const char *dir)
{
	return is_run_worktree(g, dir);
}

bool forge_git_is_run_root(const char *dir)
{
	char *real = realpath(dir, NULL), *base = worktrees_base(), *real_base = NULL, *parent = NULL;
	static const char legacy[] = "/.forge/worktrees";
	struct buf link = BUF_INIT;
	struct stat st;
	bool is = false;

	/* (a linked worktree: its .git a file) */
	if (!real || (buf_addf(&link, "%s/.git", real), lstat(link.buf, &st) < 0) || !S_ISREG(st.st_mode))
		goto out;
	parent = path_parent(real);
	is = (strlen(parent) > strlen(legacy) && !strcmp(parent + strlen(parent) - strlen(legacy), legacy)) ||
	     (base && (real_base = realpath(base, NULL)) && in_runs_base(real_base, real));
out:
	buf_release(&link);
	free(real);
	free(base);
	free(real_base);
	free(parent);
	return is;
}

int forge_git_merge_lock(struct forge_git *g)
{
	if (g->merge_locks == 0) {
		int fd = forge_git_flock(g, "forge-merge.lock");

		if (fd < 0)
			return -1;
		g->merge_lock_fd = fd;
	}
	g->merge_locks++;
	return 0;
}

void forge_git_merge_unlock(struct forge_git *g)
{
	if (g->merge_locks > 0 && --g->merge_locks == 0)
		close(g->merge_lock_fd);
}

const char *forge_git_root(const struct forge_git *g)
{
	return g->root;
}

const char *forge_git_checkout(const struct forge_git *g)
{
	return g->checkout ? g->checkout : g->root;
}

int forge_git_resolve(char **out, struct forge_git *g, const char *rev)
{
	git_oid id;

	*out = NULL;
	if (forge_git_peel(&id, NULL, g->repo, rev) < 0)
		return -1;
	*out = forge_git_hex(&id);
	return 0;
}

int forge_git_has_object(struct forge_git *g, const char *sha)
{
	git_odb *odb = NULL;
	git_oid id;
	int rc;

	if (!sha || strlen(sha) != GIT_OID_HEXSZ || git_oid_fromstr(&id, sha) < 0)
		return forge_error("'%s' is not an object id", sha ? sha : "(null)");
	if (git_repository_odb(&odb, g->repo) < 0)
		return forge_git_fail("cannot open the object database");
	rc = git_odb_exists(odb, &id) ? 1 : 0;
	git_odb_free(odb);
	return rc;
}

int forge_git_init_repo(const char *dir, const char *message)
{
	git_repository *repo = NULL;
	git_signature *sig = NULL;
	git_treebuilder *tb = NULL;
	git_oid tree_id, commit_id;
	git_tree *tree = NULL;
	int rc = -1;

	forge_git_init();
	if (git_repository_init(&repo, dir, 0) < 0 || git_treebuilder_new(&tb, repo, NULL) < 0 ||
	    git_treebuilder_write(&tree_id, tb) < 0 || git_tree_lookup(&tree, repo, &tree_id) < 0)
		goto out;
	if (git_signature_default(&sig, repo) < 0 && git_signature_now(&sig, "forge", "forge@localhost") < 0)
		goto out;
	if (git_commit_create(&commit_id, repo, "HEAD", sig, sig, NULL, message, tree, 0, NULL) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		forge_git_fail("cannot make %s a git repository", dir);
	git_tree_free(tree);
	git_treebuilder_free(tb);
	git_signature_free(sig);
	git_repository_free(repo);
	return rc;
}

/*
 * The handle of the repository at a directory kept for the process, shared
 * by the calls that only read it a few things at a time and used to open it
 * each time (forge_git_identity(), forge_git_written_paths(): a write tool
 * of the agent, each command the sandbox runs): an opening costs ~65 system
 * calls (its config files read, its refdb and object database set up), and
 * the objects read through it are kept in its cache.  Opened as
 * forge_git_repo_open(dir, 0) does, and opened again when the directory
 * asked is another, or its git directory is no longer the one it was
 * (removed, made again: its device and inode).  What it reads is what a new
 * handle would read: libgit2 checks the config files, refs and ignore files
 * against the disk at each read, and the index is read again when its file
 * changed (keep_index()).  One user at a time (kept_lock: the agent's tools
 * and the sandbox's commands may run on other threads); freed at exit
 * before libgit2 is shut down (git_done()).
 */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char *dir;
	git_repository *repo;
	dev_t dev;
	ino_t ino;
} kept_handle;

static void kept_drop(void)
{
	git_repository_free(kept_handle.repo);
	free(kept_handle.dir);
	memset(&kept_handle, 0, sizeof kept_handle);
}

/* Whether the kept handle is dir's, its git directory still the same. */
static bool kept_valid(const char *dir)
{
	struct stat st;

	return kept_handle.repo && strcmp(kept_handle.dir, dir) == 0 &&
	       stat(git_repository_path(kept_handle.repo), &st) == 0 &&
	       st.st_dev == kept_handle.dev && st.st_ino == kept_handle.ino;
}

/* Lock kept_lock and point *out at dir's kept handle (opened now when
 * there is none).  Returns forge_git_repo_open()'s code; kept_release()
 * after, whatever it returned. */
static int kept_repo(git_repository **out, const char *dir)
{
	struct stat st;
	int rc;

	*out = NULL;
	forge_git_init();
	pthread_mutex_lock(&kept_lock);
	if (kept_valid(dir)) {
		*out = kept_handle.repo;
		return 0;
	}
	kept_drop();
	if ((rc = forge_git_repo_open(&kept_handle.repo, dir, 0)) != 0)
		return rc;
	if (stat(git_repository_path(kept_handle.repo), &st) == 0) {
		kept_handle.dev = st.st_dev;
		kept_handle.ino = st.st_ino;
	}
	kept_handle.dir = xstrdup(dir);
	*out = kept_handle.repo;
	return 0;
}

static void kept_release(void)
{
	pthread_mutex_unlock(&kept_lock);
}

int forge_git_identity(char **name, char **email, const char *dir)
{
	git_repository *repo = NULL;
	git_signature *sig = NULL;
	int rc = -1;

	*name = *email = NULL;
	if (kept_repo(&repo, dir) == 0 && git_signature_default(&sig, repo) == 0) {
		*name = xstrdup(sig->name);
		*email = xstrdup(sig->email);
		rc = 0;
	}
	kept_release();
	git_signature_free(sig);
	return rc;
}

int forge_git_gitlinks(char ***out, const char *dir)
{
	git_repository *repo = NULL;
	git_index *idx = NULL;
	char *want = realpath(dir, NULL), *have = NULL;
	char **v = NULL;
	size_t n = 0;
	int rc = -1;

	*out = NULL;
	if (kept_repo(&repo, dir) != 0)
		goto out;
	rc = 0;
	/* (paths in the index are the working tree root's) */
	if (!want || !git_repository_workdir(repo) || !(have = realpath(git_repository_workdir(repo), NULL)) ||
	    strcmp(want, have) != 0)
		goto out;
	if (git_repository_index(&idx, repo) < 0 || git_index_read(idx, 0) < 0)
		goto out;
	for (size_t i = 0; i < git_index_entrycount(idx); i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);

		if (!e || e->mode != GIT_FILEMODE_COMMIT || GIT_INDEX_ENTRY_STAGE(e) != 0)
			continue;
		v = xrealloc(v, (n + 2) * sizeof *v);
		v[n++] = xstrdup(e->path);
		v[n] = NULL;
	}
out:
	git_error_clear();
	git_index_free(idx);
	kept_release();
	free(want);
	free(have);
	*out = v;
	return rc;
}

int forge_git_read_blob(struct buf *out, struct forge_git *g, const char *rev, const char *path)
{
	git_oid id;
	git_commit *commit = NULL;
	git_tree *tree = NULL;
	git_tree_entry *entry = NULL;
	git_blob *blob = NULL;
	int rc = -1;

	if (forge_git_peel(&id, NULL, g->repo, rev) < 0)
		return -1;
	if (git_commit_lookup(&commit, g->repo, &id) < 0 || git_commit_tree(&tree, commit) < 0) {
		forge_git_fail("cannot read the tree of '%s'", rev);
		goto out;
	}
	if (git_tree_entry_bypath(&entry, tree, path) < 0) {
		forge_git_fail("'%s' is not in '%s'", path, rev);
		goto out;
	}
	if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB) {
		forge_error("'%s' is not a file in '%s'", path, rev);
		goto out;
	}
	if (git_tree_entry_filemode(entry) == GIT_FILEMODE_LINK) {
		/* its blob is the link's target, not a file's content (before:
		 * a link scripts/run.sh -> ../bin/run.sh was linted as a shell
		 * script, hunt61 #4) */
		forge_error("'%s' is a symbolic link in '%s', not a file", path, rev);
		rc = -2;
		goto out;
	}
	if (git_blob_lookup(&blob, g->repo, git_tree_entry_id(entry)) < 0) {
		forge_git_fail("cannot read '%s' in '%s'", path, rev);
		goto out;
	}
	buf_add(out, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
	rc = 0;
out:
	git_blob_free(blob);
	git_tree_entry_free(entry);
	git_tree_free(tree);
	git_commit_free(commit);
	return rc;
}

/* A mapped run name (forge_git_run_name): at most this much of the trace,
 * then '.' and this many hex digits of its SHA-256 (64 bits: two traces
 * of one repository do not meet by chance). */
enum { RUN_NAME_PREFIX_MAX = 64, RUN_NAME_HASH_HEX = 16 };

/* ASCII only: the C library's isalnum() follows the locale. */
static bool ascii_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool forge_git_trace_valid(const char *trace)
{
	size_t n = trace ? strlen(trace) : 0;

	if (n == 0 || n > FORGE_GIT_TRACE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!ascii_alnum(trace[i]) && !strchr("._:-", trace[i]))
			return false;
	return true;
}

/* [A-Za-z0-9_-]: what a run's name keeps of a trace as it is. */
static bool name_char(char c)
{
	return ascii_alnum(c) || c == '_' || c == '-';
}

/* Letters, digits, '_' and '-', the first a letter or digit: s[0..n). */
static bool plain_name(const char *s, size_t n)
{
	if (n == 0 || !ascii_alnum(s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i]))
			return false;
	return true;
}

/*
 * A name that is its own run name: a plain one of at most 100 characters
 * (every run's before other ids were mapped: their branches and worktrees
 * keep their names), or a mapped one, PREFIX.HEX, so that the name of a
 * worktree's directory (lib/agent/tools.c opens it by that) is the run's.
 */
static bool name_as_is(const char *s)
{
	size_t n = strlen(s);
	const char *dot = strchr(s, '.');

	if (!dot)
		return n <= 100 && plain_name(s, n);
	if ((size_t)(dot - s) > RUN_NAME_PREFIX_MAX || !plain_name(s, (size_t)(dot - s)) ||
	    strlen(dot + 1) != RUN_NAME_HASH_HEX)
		return false;
	for (const char *h = dot + 1; *h; h++)
		if (!(*h >= '0' && *h <= '9') && !(*h >= 'a' && *h <= 'f'))
			return false;
	return true;
}

int forge_git_run_name(char out[FORGE_GIT_RUN_NAME_SIZE], const char *trace)
{
	struct sha256 h;
	char hex[65];
	size_t k = 0;

	out[0] = '\0';
	if (!forge_git_trace_valid(trace))
		return forge_error("'%s' is not a trace id (1 to %d letters, digits, '.', '_', ':' and '-')",
				   trace ? trace : "", FORGE_GIT_TRACE_MAX);
	if (name_as_is(trace)) {
		snprintf(out, FORGE_GIT_RUN_NAME_SIZE, "%s", trace);
		return 0;
	}
	/* A ref name cannot hold ':', a component not start with '.' nor end
	 * in ".lock", and git keeps a worktree's name to what its directory
	 * can be: the trace's own characters where they are safe, then '.'
	 * and a hash of the whole trace.  No plain name has a '.', so a
	 * mapped name is never another trace's plain one; two mapped ones
	 * differ by their hashes (only an id written to be another's mapped
	 * name, PREFIX.HEX itself, would meet it). */
	for (const char *p = trace; *p && k < RUN_NAME_PREFIX_MAX; p++) {
		if (k == 0 && !ascii_alnum(*p))
			continue;
		out[k++] = name_char(*p) ? *p : '_';
	}
	if (k == 0) {
		memcpy(out, "run", 3);
		k = 3;
	}
	sha256_init(&h);
	sha256_update(&h, trace, strlen(trace));
	sha256_hex(hex, &h);
	snprintf(out + k, FORGE_GIT_RUN_NAME_SIZE - k, ".%.*s", RUN_NAME_HASH_HEX, hex);
	return 0;
}

bool forge_git_run_name_valid(const char *name)
{
	return name && forge_git_trace_valid(name) && name_as_is(name);
}

int forge_git_merge_base(char **out, struct forge_git *g, const char *a, const char *b)
{
	git_oid ia, ib, base;
	int e;

	*out = NULL;
	if (forge_git_peel(&ia, NULL, g->repo, a) < 0 || forge_git_peel(&ib, NULL, g->repo, b) < 0)
		return -1;
	if (git_repository_is_shallow(g->repo) == 1) {
		/* (libgit2's walk is not tried there: it fails at the cut, and
		 * leaks on the way out) */
		if (forge_git_shallow_merge_base(&base, g->repo, &ia, &ib) < 0)
			return -1;
		*out = forge_git_hex(&base);
		return 0;
	}
	e = git_merge_base(&base, g->repo, &ia, &ib);
	if (e == GIT_ENOTFOUND)
		return forge_error("'%s' and '%s' have no common ancestor", a, b);
	if (e < 0)
		return forge_git_fail("cannot find the merge base of '%s' and '%s'", a, b);
	*out = forge_git_hex(&base);
	return 0;
}

bool forge_git_is_shallow(struct forge_git *g)
{
	return git_repository_is_shallow(g->repo) == 1;
}

/* True when id is a root commit with an empty tree (a forge empty base). */
static bool is_empty_root(git_repository *repo, const git_oid *id)
{
	git_commit *c = NULL;
	bool yes = false;

	if (git_commit_lookup(&c, repo, id) < 0)
		return false;
	if (git_commit_parentcount(c) == 0) {
		git_tree *t = NULL;

		if (git_commit_tree(&t, c) == 0 && git_tree_entrycount(t) == 0)
			yes = true;
		git_tree_free(t);
	}
	git_commit_free(c);
	return yes;
}

int forge_git_base_moved(bool *out, struct forge_git *g, const char *base_ref,
			 const char *base_commit)
{
	git_oid now, then;
	bool unborn;

	*out = false;
	if (forge_git_peel(&then, NULL, g->repo, base_commit) < 0)
		return -1;
	if (forge_git_peel(&now, &unborn, g->repo, base_ref) < 0)
		return -1;
	if (unborn)
		*out = !is_empty_root(g->repo, &then);
	else
		*out = !git_oid_equal(&now, &then);
	return 0;
}

/* The entries of the index a sparse checkout leaves out of the working
 * files on purpose (skip-worktree: git sparse-checkout, or git
 * update-index --skip-worktree): how many, the first 5 named in *paths
 * and, as shell words each after a space, in *words (both may be NULL). */
static int index_sparse(git_index *idx, struct buf *paths, struct buf *words)
{
	size_t n = idx ? git_index_entrycount(idx) : 0;
	int count = 0;

	for (size_t i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);

		if (!e || !(e->flags_extended & GIT_INDEX_ENTRY_SKIP_WORKTREE))
			continue;
		if (paths && count < 5) {
			if (count)
				buf_adds(paths, ", ");
			buf_add_path_quoted(paths, e->path);
		}
		if (words && count < 5) {
			buf_addch(words, ' ');
			buf_add_shell_quoted(words, e->path);
		}
		count++;
	}
	return count;
}

/* Whether git sparse-checkout made the checkout sparse (core.sparseCheckout,
 * which it writes to the worktree's config.worktree, a file libgit2 1.5
 * does not read), rather than git update-index --skip-worktree marking
 * some files. */
static bool sparse_configured(git_repository *repo)
{
	git_config *cfg = NULL;
	struct buf path = BUF_INIT, why = BUF_INIT;
	int on = 0;

	if (git_repository_config_snapshot(&cfg, repo) == 0 && git_config_get_bool(&on, cfg, "core.sparseCheckout") < 0)
		on = 0;
	git_config_free(cfg);
	cfg = NULL;
	buf_addf(&path, "%sconfig.worktree", git_repository_path(repo));
	if (!on && git_config_new(&cfg) == 0 && add_config_file(cfg, path.buf, GIT_CONFIG_LEVEL_LOCAL, &why) == 0 &&
	    git_config_get_bool(&on, cfg, "core.sparseCheckout") < 0)
		on = 0;
	git_config_free(cfg);
	git_error_clear();
	buf_release(&path);
	buf_release(&why);
	return on != 0;
}

/* A status entry that only says "deleted from the working files" of a
 * file the index marks skip-worktree: left out by a sparse checkout, not
 * a change (git status, git stash and git merge agree; libgit2 1.5 knows
 * no sparse checkouts). */
static bool sparse_absent(git_index *idx, const git_status_entry *e)
{
	const git_index_entry *ie;

	if (e->status != GIT_STATUS_WT_DELETED || !e->index_to_workdir || !e->index_to_workdir->old_file.path)
		return false;
	ie = git_index_get_bypath(idx, e->index_to_workdir->old_file.path, 0);
	return ie && (ie->flags_extended & GIT_INDEX_ENTRY_SKIP_WORKTREE);
}

int forge_git_checkout_dirty(struct forge_git *g)
{
	git_status_options opts = GIT_STATUS_OPTIONS_INIT;
	git_status_list *list = NULL;
	git_index *idx = NULL;
	int dirty = 0;

	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (git_status_list_new(&list, g->repo, &opts) < 0)
		return forge_git_fail("cannot read the status of '%s'", forge_git_checkout(g));
	size_t n = git_status_list_entrycount(list);

	if (n && git_repository_index(&idx, g->repo) < 0) {
		git_status_list_free(list);
		return forge_git_fail("cannot read the index of '%s'", forge_git_checkout(g));
	}
	for (size_t i = 0; i < n && !dirty; i++)
		dirty = !sparse_absent(idx, git_status_byindex(list, i));
	git_index_free(idx);
	git_status_list_free(list);
	return dirty;
}

static const char *status_path(const git_status_entry *e);

/* Whether the working file `path` has the blob `want` (NULL: absent). */
static bool workdir_has(git_repository *repo, const char *path, const git_oid *want)
{
	struct buf full = BUF_INIT;
	struct stat st;
	git_oid oid;
	bool has;

	buf_addf(&full, "%s%s", git_repository_workdir(repo), path);
	if (lstat(full.buf, &st) < 0) {
		has = !want && errno == ENOENT;
	} else if (!want || S_ISDIR(st.st_mode)) {
		has = false;
	} else if (S_ISLNK(st.st_mode)) {
		char to[PATH_MAX];
		ssize_t n = readlink(full.buf, to, sizeof to);

		has = n >= 0 && git_odb_hash(&oid, to, (size_t)n, GIT_OBJECT_BLOB) == 0 && git_oid_equal(&oid, want);
	} else {
		/* (with the repository's filters, as the checkout wrote it) */
		has = git_repository_hashfile(&oid, repo, path, GIT_OBJECT_BLOB, NULL) == 0 && git_oid_equal(&oid, want);
	}
	buf_release(&full);
	return has;
}

/* A tree's blob at path, or NULL (absent, or not a blob). */
static const git_oid *blob_at(git_tree_entry **e, git_tree *tree, const char *path)
{
	if (git_tree_entry_bypath(e, tree, path) < 0)
		return *e = NULL, NULL;
	return git_tree_entry_type(*e) == GIT_OBJECT_BLOB ? git_tree_entry_id(*e) : NULL;
}

/*
 * One path the status lists: 1 when it is the fast-forward's own (a path
 * the change makes whose working file is the base's or the target's blob;
 * *ahead set when the target's), 0 when the person's.
 */
static int midway_path(git_repository *repo, git_tree *base, git_tree *target, const git_status_entry *e,
		       bool *ahead)
{
	const char *path = status_path(e);
	git_tree_entry *be = NULL, *te = NULL;
	const git_oid *b, *t;
	int rc = 0;

	if (!path)
		return 0;
	b = blob_at(&be, base, path);
	t = blob_at(&te, target, path);
	if (b && t && git_oid_equal(b, t)) {
		rc = 0;         /* a path the change keeps: a change of the person's */
	} else if (!be && !te) {
		/* an untracked file of the person's, where the target has none: not in the way */
		rc = e->status == GIT_STATUS_WT_NEW;
	} else if ((!be || b) && (!te || t) && (b || t)) {
		/* (a file that is only the start of the run's is not taken for
		 * one the checkout was writing when killed: the person may have
		 * cut it so, and a forced checkout would drop that edit) */
		bool at_target = workdir_has(repo, path, t);

		*ahead = *ahead || at_target;
		rc = at_target || workdir_has(repo, path, b);
	}
	git_tree_entry_free(be);
	git_tree_entry_free(te);
	return rc;
}

/* Whether the index is tree's: 1, 0, or -1. */
static int index_is(git_repository *repo, git_tree *tree, git_index *idx)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_diff *d = NULL;
	int rc;

	opts.flags = GIT_DIFF_IGNORE_SUBMODULES;
	if (git_diff_tree_to_index(&d, repo, tree, idx, &opts) < 0)
		return -1;
	rc = git_diff_num_deltas(d) == 0;
	git_diff_free(d);
	return rc;
}

int forge_git_checkout_midway(struct forge_git *g, const char *rev)
{
	git_status_options opts = GIT_STATUS_OPTIONS_INIT;
	git_status_list *list = NULL;
	git_commit *commit = NULL, *head = NULL;
	git_tree *tree = NULL, *base = NULL;
	git_index *idx = NULL;
	git_oid oid;
	bool ahead = false;
	int rc = -1, at_base = 0, at_target = 0;

	if (forge_git_peel(&oid, NULL, g->repo, rev) < 0)
		return -1;
	if (git_repository_head_unborn(g->repo) == 1)
		return 0;
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_INCLUDE_UNTRACKED |
		     GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
	if (git_commit_lookup(&commit, g->repo, &oid) < 0 || git_commit_tree(&tree, commit) < 0 ||
	    git_revparse_single((git_object **)&head, g->repo, "HEAD^{commit}") < 0 ||
	    git_commit_tree(&base, head) < 0 || git_repository_index(&idx, g->repo) < 0 ||
	    (at_base = index_is(g->repo, base, idx)) < 0 || (at_target = index_is(g->repo, tree, idx)) < 0 ||
	    git_status_list_new(&list, g->repo, &opts) < 0) {
		forge_git_fail("cannot compare '%s' with '%s'", forge_git_checkout(g), rev);
		goto out;
	}
	/* the checkout writes the index last: it is the base's or the target's,
	 * never a mix (a staged change is the person's) */
	rc = 0;
	if (!at_base && !at_target)
		goto out;
	size_t n = git_status_list_entrycount(list);
	for (size_t i = 0; i < n; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		int own = sparse_absent(idx, e) ? 1 : midway_path(g->repo, base, tree, e, &ahead);

		if (own <= 0)
			goto out;
	}
	rc = at_target || ahead;
out:
	git_status_list_free(list);
	git_index_free(idx);
	git_tree_free(base);
	git_tree_free(tree);
	git_commit_free(head);
	git_commit_free(commit);
	return rc;
}

/* What is in a checkout's way, up to 5 paths of each kind named: files git
 * does not track (ignored ones too), and tracked files whose working copy
 * differs from the index while git status shows none of it (marked
 * assume-unchanged: git update-index --assume-unchanged). */
struct in_the_way {
	git_index *idx;         /* borrowed: what the checkout tracks */
	struct buf paths;       /* the untracked */
	int n;
	struct buf tracked;     /* the tracked, as paths */
	struct buf words;       /* the tracked, as shell words */
	int ntracked;
	int assumed;            /* of those, how many are marked assume-unchanged */
};

/* Add path to a list of up to 5 (its count in *n). */
static void way_add(struct buf *list, int *n, const char *path)
{
	if ((*n)++ < 5) {
		if (*n > 1)
			buf_adds(list, ", ");
		buf_add_path_quoted(list, path);
	}
}

static int note_in_the_way(git_checkout_notify_t why, const char *path, const git_diff_file *baseline,
			   const git_diff_file *target, const git_diff_file *workdir, void *payload)
{
	struct in_the_way *w = payload;
	const git_index_entry *ie = w->idx ? git_index_get_bypath(w->idx, path, 0) : NULL;

	(void)why;
	(void)baseline;
	(void)target;
	(void)workdir;
	if (!ie) {
		way_add(&w->paths, &w->n, path);
		return 0;	/* go on: the checkout counts them and fails */
	}
	/* (a tracked file git status calls unchanged: "commit it" would do nothing) */
	if (w->ntracked < 5) {
		buf_addch(&w->words, ' ');
		buf_add_shell_quoted(&w->words, path);
	}
	way_add(&w->tracked, &w->ntracked, path);
	if (ie->flags & GIT_INDEX_ENTRY_VALID)
		w->assumed++;
	return 0;
}

/* Whether rel (a path of the checkout) is git's: in the index or in head
 * (may be NULL). */
static bool tracked_path(git_index *idx, git_tree *head, const char *rel)
{
	git_tree_entry *e = NULL;
	bool yes = idx && git_index_get_bypath(idx, rel, 0);

	if (!yes && head && git_tree_entry_bypath(&e, head, rel) == 0)
		yes = true;
	git_tree_entry_free(e);
	return yes;
}

/* What git does not track in the directory full (the checkout's, its
 * first rootlen bytes the checkout's own directory), ignored files
 * too, walking down: into w (up to 6, then it stops).  A repository in
 * it (a directory holding .git) is named whole; so are a directory that
 * cannot be read and an empty one below the top one (libgit2 1.5 removes
 * neither; the top one, empty, it replaces). */
static void untracked_under(struct in_the_way *w, git_index *idx, git_tree *head, struct buf *full,
			    size_t rootlen, bool top)
{
	size_t len = full->len;
	struct dirent *de;
	struct stat st;
	DIR *d;

	buf_adds(full, "/.git");
	if (lstat(full->buf, &st) == 0) {
		buf_truncate(full, len);
		buf_addch(full, '/');
		way_add(&w->paths, &w->n, full->buf + rootlen);
		buf_truncate(full, len);
		return;
	}
	buf_truncate(full, len);
	if (!(d = opendir(full->buf))) {
		buf_addch(full, '/');
		way_add(&w->paths, &w->n, full->buf + rootlen);
		buf_truncate(full, len);
		return;
	}
	bool empty = true;

	while (w->n <= 5 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		empty = false;
		buf_truncate(full, len);
		buf_addf(full, "/%s", de->d_name);
		if (lstat(full->buf, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			untracked_under(w, idx, head, full, rootlen, false);
		else if (!tracked_path(idx, head, full->buf + rootlen))
			way_add(&w->paths, &w->n, full->buf + rootlen);
	}
	closedir(d);
	buf_truncate(full, len);
	if (empty && !top) {
		buf_addch(full, '/');
		way_add(&w->paths, &w->n, full->buf + rootlen);
		buf_truncate(full, len);
	}
}

/*
 * Files git does not track (ignored ones too) in a directory of the
 * checkout where commit has a file, a link or a submodule, into w; the
 * directories into *dirs (up to 5, counted in *ndirs).  libgit2 1.5's
 * checkout notices none of them: it removes the directory's tracked files,
 * then fails to write the file over what is left ("Is a directory"), the
 * checkout half written and the branch not moved (hunt60 #1).  -1 when
 * the change cannot be read.
 */
static int in_replaced_dirs(struct in_the_way *w, struct buf *dirs, int *ndirs, git_repository *repo,
			    git_commit *commit)
{
	git_object *head = NULL;
	git_tree *to = NULL;
	git_diff *diff = NULL;
	struct buf full = BUF_INIT;
	const char *workdir = git_repository_workdir(repo);
	int rc = -1;

	if (!workdir)
		return 0;
	if ((git_repository_head_unborn(repo) != 1 && git_revparse_single(&head, repo, "HEAD^{tree}") < 0) ||
	    git_commit_tree(&to, commit) < 0 ||
	    git_diff_tree_to_tree(&diff, repo, (git_tree *)head, to, NULL) < 0)
		goto out;
	size_t nd = git_diff_num_deltas(diff), rootlen = strlen(workdir);

	for (size_t i = 0; i < nd && w->n <= 5; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		struct stat st;
		int before = w->n;

		/* (a submodule's directory is its own: the checkout leaves it) */
		if (!d || d->status == GIT_DELTA_DELETED || d->new_file.mode == GIT_FILEMODE_TREE ||
		    d->new_file.mode == GIT_FILEMODE_COMMIT)
			continue;
		buf_reset(&full);
		buf_addf(&full, "%s%s", workdir, d->new_file.path);
		if (lstat(full.buf, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		untracked_under(w, w->idx, (git_tree *)head, &full, rootlen, true);
		if (w->n > before)
			way_add(dirs, ndirs, d->new_file.path);
	}
	rc = 0;
out:
	buf_release(&full);
	git_diff_free(diff);
	git_tree_free(to);
	git_object_free(head);
	return rc;
}

/* The message of a checkout that found files in its way (w). */
static void say_in_the_way(const struct in_the_way *w, const char *what, const char *checkout)
{
	struct buf m = BUF_INIT;

	buf_addf(&m, "%s: ", what);
	if (w->n)
		buf_addf(&m, "%d file%s in '%s' that git does not track would be overwritten: %s%s; move or "
			 "remove %s (or commit %s)", w->n, w->n == 1 ? "" : "s", checkout, w->paths.buf,
			 w->n > 5 ? ", …" : "", w->n == 1 ? "it" : "them", w->n == 1 ? "it" : "them");
	if (w->n && w->ntracked)
		buf_adds(&m, "; and ");
	if (w->ntracked == w->assumed && w->assumed)
		buf_addf(&m, "%d tracked file%s in '%s' would be overwritten whose changes git status does not "
			 "show (marked with git update-index --assume-unchanged): %s%s; git update-index "
			 "--no-assume-unchanged%s%s lets git see %s changes: commit or stash them", w->ntracked,
			 w->ntracked == 1 ? "" : "s", checkout, w->tracked.buf, w->ntracked > 5 ? ", …" : "",
			 w->words.buf, w->ntracked > 5 ? " …" : "", w->ntracked == 1 ? "its" : "their");
	else if (w->ntracked)
		buf_addf(&m, "%d tracked file%s in '%s' changed in the checkout would be overwritten: %s%s; "
			 "commit or stash %s (git status; git update-index --no-assume-unchanged%s%s if git "
			 "status shows nothing)", w->ntracked, w->ntracked == 1 ? "" : "s", checkout,
			 w->tracked.buf, w->ntracked > 5 ? ", …" : "", w->ntracked == 1 ? "it" : "them",
			 w->words.buf, w->ntracked > 5 ? " …" : "");
	buf_adds(&m, ", then try again");
	forge_error("%s", m.buf);
	buf_release(&m);
}

/* forge_git_dirs_clear()'s walk. */
struct dirs_clear {
	int top;                /* the working files' directory */
	bool remove;
	git_tree *keep;         /* borrowed, may be NULL: see forge_git_dirs_clear() */
	const char *what;
	const char *checkout;
	struct buf at;          /* the directory last opened, at_fd (-1: at_errno) */
	int at_fd, at_errno;
	int rc;
};

/* The directory rel (a path of the working files, "" or ending in '/')
 * opened beneath top without following a symbolic link at any step: an
 * fd, or -1 (errno set). */
static int open_beneath(int top, const char *rel)
{
	struct buf part = BUF_INIT;
	int fd = fcntl(top, F_DUPFD_CLOEXEC, 0);

	while (fd >= 0 && *rel) {
		size_t n = strcspn(rel, "/");
		int sub;

		buf_reset(&part);
		buf_add(&part, rel, n);
		sub = openat(fd, part.buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = sub;
		rel += n + (rel[n] == '/');
	}
	buf_release(&part);
	return fd;
}

static int dir_in_place(const char *root, const git_tree_entry *entry, void *payload)
{
	struct dirs_clear *w = payload;
	const char *name = git_tree_entry_name(entry);
	bool dir = git_tree_entry_type(entry) == GIT_OBJECT_TREE;
	git_tree_entry *kept = NULL;
	struct buf rel = BUF_INIT;
	struct stat st;
	int fd, rc = 1;         /* (a directory's: 1 skips what is below it) */

	/* (a link is made with symlink(2), which follows nothing; a submodule
	 * is left as it is) */
	if (!dir && (git_tree_entry_type(entry) != GIT_OBJECT_BLOB ||
		     git_tree_entry_filemode(entry) == GIT_FILEMODE_LINK))
		return 0;
	buf_addf(&rel, "%s%s", root, name);
	/* (a parent is a directory: walked before, from the top; the entries
	 * of one directory come one after the other) */
	if (w->at_fd < 0 || strcmp(w->at.buf, root) != 0) {
		if (w->at_fd >= 0)
			close(w->at_fd);
		buf_reset(&w->at);
		buf_adds(&w->at, root);
		w->at_fd = open_beneath(w->top, root);
		w->at_errno = errno;
	}
	if ((fd = w->at_fd) < 0 || fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int e = fd < 0 ? w->at_errno : errno;

		if (e != ENOENT) {
			w->rc = forge_error("%s: cannot read '%s' in '%s': %s", w->what, rel.buf, w->checkout,
					    strerror(e));
			rc = -1;
		}
		goto out;       /* (absent: the checkout makes it, and all below) */
	}
	/* a directory where a file goes the checkout removes, never following
	 * a link in it */
	if (S_ISDIR(st.st_mode) || (!dir && S_ISREG(st.st_mode))) {
		rc = 0;
		goto out;
	}
	/* a file or link the checkout itself replaces (the checkout's HEAD has
	 * it: git checks whether it was changed) */
	if (w->keep && git_tree_entry_bypath(&kept, w->keep, rel.buf) == 0 &&
	    git_tree_entry_type(kept) == GIT_OBJECT_BLOB)
		goto out;
	if (!w->remove) {
		forge_error("%s: '%s' in '%s' is %s where the change has a %s; git would not write through "
			    "it: move or remove it, then try again (nothing was changed)", w->what, rel.buf,
			    w->checkout, S_ISLNK(st.st_mode) ? "a symbolic link" : dir ? "not a directory" :
			    "not a regular file", dir ? "directory" : "file");
		w->rc = FORGE_GIT_BLOCKED;
		rc = -1;
	} else if (unlinkat(fd, name, 0) < 0) {
		w->rc = forge_error("%s: cannot remove '%s' from '%s': %s", w->what, rel.buf, w->checkout,
				    strerror(errno));
		rc = -1;
	}
out:
	git_tree_entry_free(kept);
	buf_release(&rel);
	return rc < 0 ? -1 : dir ? rc : 0;
}

int forge_git_dirs_clear(git_repository *repo, git_tree *tree, git_tree *keep, bool remove, const char *what)
{
	struct dirs_clear w = { .remove = remove, .keep = keep, .what = what, .checkout = git_repository_workdir(repo),
				.at = BUF_INIT, .at_fd = -1 };

	if (!w.checkout)
		return 0;
	if ((w.top = open(w.checkout, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return forge_error("%s: cannot open '%s': %s", what, w.checkout, strerror(errno));
	if (git_tree_walk(tree, GIT_TREEWALK_PRE, dir_in_place, &w) < 0 && w.rc == 0)
		w.rc = forge_git_fail("%s: cannot read the tree to check out in '%s'", what, w.checkout);
	if (w.at_fd >= 0)
		close(w.at_fd);
	close(w.top);
	buf_release(&w.at);
	return w.rc;
}

/* 0 when no <gitdir>/index.lock is in the way of the index's write; else
 * -1 with a message after `what` naming it.  Looked at before a file is
 * written: libgit2 writes the files first and the index last, so a lock
 * found only then left the checkout's files rewritten, its index and
 * branch not (hunt65 #5). */
static int index_unlocked(struct forge_git *g, const char *what)
{
	struct buf lock = BUF_INIT;
	struct stat st;
	int rc = 0;

	buf_addf(&lock, "%sindex.lock", git_repository_path(g->repo));   /* (the path ends in '/') */
	if (lstat(lock.buf, &st) == 0)
		rc = forge_error("%s: %s exists: a git command is at work in '%s', or one was killed there; "
				 "when none runs, remove that file and try again (nothing was changed)", what,
				 lock.buf, forge_git_checkout(g));
	else if (errno != ENOENT)
		rc = forge_error("%s: cannot look for '%s': %s (nothing was changed)", what, lock.buf,
				 strerror(errno));
	buf_release(&lock);
	return rc;
}

/* The files and index of the main checkout made commit's, with `force`
 * (GIT_CHECKOUT_FORCE) or safely; see forge_git_checkout_commit(). */
static int checkout_as(struct forge_git *g, git_commit *commit, const char *what, bool force)
{
	git_checkout_options copts = GIT_CHECKOUT_OPTIONS_INIT;
	struct in_the_way w = { .paths = BUF_INIT, .tracked = BUF_INIT, .words = BUF_INIT };
	struct buf dirs = BUF_INIT, marked = BUF_INIT, marked_words = BUF_INIT;
	git_object *head = NULL;
	git_tree *to = NULL;
	int rc = 0, ndirs = 0, nmarked;

	if (git_repository_index(&w.idx, g->repo) < 0) {
		rc = forge_git_fail("%s: cannot read the index of '%s'", what, forge_git_checkout(g));
		goto out;
	}
	/* libgit2 1.5 would write out the files a sparse checkout leaves out
	 * (and lose their marks): git does this one */
	if ((nmarked = index_sparse(w.idx, &marked, &marked_words)) > 0) {
		if (sparse_configured(g->repo))
			forge_error("%s: '%s' is a sparse checkout (git sparse-checkout), which forge cannot "
				    "update and keep sparse; merge with git instead (git merge)", what,
				    forge_git_checkout(g));
		else    /* (the marks alone: local settings kept out of git's sight) */
			forge_error("%s: %d file%s in '%s' %s marked skip-worktree (git update-index "
				    "--skip-worktree): %s%s, and forge cannot update the checkout and keep the "
				    "mark%s; merge with git instead (git merge), or lift the mark%s (git "
				    "update-index --no-skip-worktree%s%s: then commit or stash %s changes) and "
				    "try again", what, nmarked, nmarked == 1 ? "" : "s", forge_git_checkout(g),
				    nmarked == 1 ? "is" : "are", marked.buf, nmarked > 5 ? ", …" : "",
				    nmarked == 1 ? "" : "s", nmarked == 1 ? "" : "s", marked_words.buf,
				    nmarked > 5 ? " …" : "", nmarked == 1 ? "its" : "their");
		rc = FORGE_GIT_BLOCKED;
		goto out;
	}
	/* Files git does not track in a directory the change makes a file:
	 * before anything is written, nothing overwritten, nothing moved (as
	 * git merge: "would lose untracked files in them"); before, the
	 * checkout failed half written, exit 5, and every retry "finished"
	 * it into the same failure. */
	if (in_replaced_dirs(&w, &dirs, &ndirs, g->repo, commit) < 0) {
		rc = forge_git_fail("%s: cannot read the change to '%s'", what, forge_git_checkout(g));
		goto out;
	}
	if (w.n) {
		forge_error("%s: the change puts a file where '%s' has %s director%s, %s%s, holding what git "
			    "does not track (ignored files too): %s%s; move or remove %s, then try again "
			    "(nothing was changed)", what, forge_git_checkout(g), ndirs == 1 ? "a" : "the",
			    ndirs == 1 ? "y" : "ies", dirs.buf, ndirs > 5 ? ", …" : "", w.paths.buf,
			    w.n > 5 ? ", …" : "", w.n == 1 ? "it" : "them");
		rc = FORGE_GIT_BLOCKED;
		goto out;
	}

	/* A link (or FIFO) the person has where the change has a directory
	 * or a file: refused, as git refuses, before libgit2 can write
	 * through it (hunt66 #1: it did in a run's worktree; here libgit2's
	 * own refusal of untracked files in the way catches them too, and
	 * this wall does not depend on it). */
	if ((git_repository_head_unborn(g->repo) != 1 && git_revparse_single(&head, g->repo, "HEAD^{tree}") < 0) ||
	    git_commit_tree(&to, commit) < 0) {
		rc = forge_git_fail("%s: cannot read the change to '%s'", what, forge_git_checkout(g));
		goto out;
	}
	if ((rc = forge_git_dirs_clear(g->repo, to, (git_tree *)head, false, what)) != 0)
		goto out;
	if ((rc = index_unlocked(g, what)) != 0)
		goto out;

	/* An ignored file is the person's too (.env, local settings), and
	 * not in git: the change does not overwrite it (git merge would). */
	copts.checkout_strategy = (force ? GIT_CHECKOUT_FORCE : GIT_CHECKOUT_SAFE) | GIT_CHECKOUT_DONT_OVERWRITE_IGNORED;
	copts.notify_flags = GIT_CHECKOUT_NOTIFY_CONFLICT;
	copts.notify_cb = note_in_the_way;
	copts.notify_payload = &w;
	if (git_checkout_tree(g->repo, (const git_object *)commit, &copts) < 0) {
		if (w.n || w.ntracked) {
			say_in_the_way(&w, what, forge_git_checkout(g));
			rc = FORGE_GIT_BLOCKED;
		} else {
			rc = forge_git_fail("%s: updating the files of '%s' failed", what, forge_git_checkout(g));
		}
	}
out:
	git_tree_free(to);
	git_object_free(head);
	git_index_free(w.idx);
	buf_release(&w.paths);
	buf_release(&w.tracked);
	buf_release(&w.words);
	buf_release(&dirs);
	buf_release(&marked);
	buf_release(&marked_words);
	return rc;
}

int forge_git_checkout_commit(struct forge_git *g, git_commit *commit, const char *what)
{
	return checkout_as(g, commit, what, false);
}

/*
 * The main checkout updated to commit for a fast-forward: safely, or when
 * a fast-forward to it was interrupted (killed) while it updated the
 * files or after, before the branch moved, and everything in the way is
 * its own (forge_git_checkout_midway), finished over its half-written
 * files (before: they were the person's "uncommitted changes" or
 * "untracked files", and every resume and forge merge refused).
 */
static int checkout_ff(struct forge_git *g, git_commit *commit, const char *rev, const char *what, bool dirty)
{
	int e = dirty ? FORGE_GIT_BLOCKED : checkout_as(g, commit, what, false);
	int m = e == FORGE_GIT_BLOCKED ? forge_git_checkout_midway(g, rev) : 0;

	if (m < 0)
		return -1;
	if (m == 0 && dirty) {
		forge_error("%s: '%s' has uncommitted changes to tracked files; commit or stash them first", what,
			    forge_git_checkout(g));
		return FORGE_GIT_BLOCKED;
	}
	return m == 1 ? checkout_as(g, commit, what, true) : e;
}

/* The path a status entry is about (its new side in the index, else in
 * the working files). */
static const char *status_path(const git_status_entry *e)
{
	if (e->head_to_index && e->head_to_index->new_file.path)
		return e->head_to_index->new_file.path;
	if (e->index_to_workdir && e->index_to_workdir->new_file.path)
		return e->index_to_workdir->new_file.path;
	return NULL;
}

int forge_git_base_resolves(struct forge_git *g, const char *base)
{
	git_oid id;
	bool unborn = false;

	return forge_git_peel(&id, &unborn, g->repo, base ? base : "HEAD");
}

/* forge_git_base_check()'s unborn HEAD with files in the checkout: 1 with a
 * message, 0, or -1. */
static int unborn_with_files(struct forge_git *g, const char *base)
{
	git_status_options opts = GIT_STATUS_OPTIONS_INIT;
	git_status_list *list = NULL;
	git_reference *head = NULL;
	const char *branch = "HEAD";
	bool files = false;
	size_t n;

	if (!names_unborn_head(g->repo, base))
		return 0;
	/* Untracked directories as one entry each: the first file is enough. */
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (git_status_list_new(&list, g->repo, &opts) < 0)
		return forge_git_fail("cannot read the status of '%s'", forge_git_checkout(g));
	n = git_status_list_entrycount(list);
	for (size_t i = 0; i < n && !files; i++) {
		const char *p = status_path(git_status_byindex(list, i));

		/* Forge's own directory (config, skills, prompts) is read from
		 * the checkout, not from the run's base. */
		files = p && strcmp(p, ".forge") != 0 && strncmp(p, ".forge/", 7) != 0;
	}
	if (!files) {
		git_status_list_free(list);
		return 0;
	}
	if (git_reference_lookup(&head, g->repo, "HEAD") == 0 && git_reference_symbolic_target(head) &&
	    strncmp(git_reference_symbolic_target(head), "refs/heads/", 11) == 0)
		branch = git_reference_symbolic_target(head) + 11;
	forge_error("no commits yet on %s: a run starts from the last commit and would not see the files "
		    "here; commit your files first (git add -A && git commit)", branch);
	git_reference_free(head);
	git_status_list_free(list);
	return 1;
}

int forge_git_base_check(struct forge_git *g, const char *base, const char *trace)
{
	char name[FORGE_GIT_RUN_NAME_SIZE];
	git_oid id;
	bool unborn;
	int e;

	base = base ? base : "HEAD";
	if (forge_git_run_name(name, trace) < 0)
		return -1;
	if (forge_dir_check(g->root) < 0)
		return 1;
	if ((e = forge_git_run_refs_clear(g->repo, name)) != 0)
		return e == FORGE_GIT_SETUP ? 1 : e;
	if ((e = unborn_with_files(g, base)) != 0)
		return e;
	/* (a base that does not resolve is forge_git_worktree_open()'s to report) */
	if (forge_git_peel(&id, &unborn, g->repo, base) < 0)
		return 0;
	e = forge_git_tree_fits(g->repo, unborn ? NULL : &id, g->runs, g->root, name);
	return e == FORGE_GIT_SETUP ? 1 : e;
}

/* Whether HEAD of the working tree at path is the branch `name`. */
static bool on_branch(const char *path, const char *name)
{
	git_repository *r = NULL;
	git_reference *head = NULL;
	bool yes = false;

	if (forge_git_repo_open(&r, path, GIT_REPOSITORY_OPEN_NO_SEARCH) == 0 &&
	    git_reference_lookup(&head, r, "HEAD") == 0 && git_reference_symbolic_target(head))
		yes = strcmp(git_reference_symbolic_target(head), name) == 0;
	git_reference_free(head);
	git_repository_free(r);
	return yes;
}

/* forge_git_checked_out_in(), the run's worktrees left out when skip_runs. */
static int checked_out_in(char **out, struct forge_git *g, const char *name, bool skip_runs)
{
	git_strarray names = { NULL, 0 };

	*out = NULL;
	if (git_worktree_list(&names, g->repo) < 0)
		return forge_git_fail("cannot list the worktrees of '%s'", g->root);
	for (size_t i = 0; i <= names.count && !*out; i++) {
		git_worktree *wt = NULL;
		char *path = NULL;

		if (i == names.count)
			path = xstrdup(g->root);
		else if (git_worktree_lookup(&wt, g->repo, names.strings[i]) == 0)
			path = xstrdup(git_worktree_path(wt));
		git_worktree_free(wt);
		if (path)
			strip_slash(path);
		if (path && !(skip_runs && is_run_worktree(g, path)) && on_branch(path, name)) {
			*out = path;
			path = NULL;
		}
		free(path);
	}
	git_strarray_dispose(&names);
	return 0;
}

int forge_git_checked_out_in(char **out, struct forge_git *g, const char *name)
{
	return checked_out_in(out, g, name, false);
}

int forge_git_put_back(struct forge_git *g, const git_oid *old, const git_oid *written, const char *branch)
{
	git_checkout_options copts = GIT_CHECKOUT_OPTIONS_INIT;
	git_treebuilder *tb = NULL;
	git_commit *from = NULL;
	git_tree *to = NULL, *baseline = NULL;
	git_oid empty;
	char what[300];
	int rc = -1;

	/* the branch was unborn: its checkout goes back to no file */
	if (old ? git_commit_lookup(&from, g->repo, old) < 0 || git_commit_tree(&to, from) < 0
		: git_treebuilder_new(&tb, g->repo, NULL) < 0 || git_treebuilder_write(&empty, tb) < 0 ||
			  git_tree_lookup(&to, g->repo, &empty) < 0) {
		forge_git_fail("'%s' moved while '%s' was updated for it, and its files cannot be put back",
			       branch, forge_git_checkout(g));
		goto out;
	}
	git_commit_free(from);
	from = NULL;
	if (git_commit_lookup(&from, g->repo, written) < 0 || git_commit_tree(&baseline, from) < 0) {
		forge_git_fail("'%s' moved while '%s' was updated for it, and its files cannot be put back",
			       branch, forge_git_checkout(g));
		goto out;
	}
	/* Safely, from what the merge wrote: a file changed since then (by
	 * whoever moved the branch) is theirs and stays. */
	copts.checkout_strategy = GIT_CHECKOUT_SAFE | GIT_CHECKOUT_DONT_OVERWRITE_IGNORED;
	copts.baseline = baseline;
	snprintf(what, sizeof what, "'%.100s' moved while '%.100s' was updated for it, and its files cannot be "
		 "put back", branch, forge_git_checkout(g));
	if (forge_git_dirs_clear(g->repo, to, baseline, false, what) != 0)
		goto out;
	if (git_checkout_tree(g->repo, (const git_object *)to, &copts) < 0) {
		forge_git_fail("'%s' moved while '%s' was updated for it, and its files could not all be put "
			       "back (git status shows what is left)", branch, forge_git_checkout(g));
		goto out;
	}
	rc = 0;
out:
	git_tree_free(baseline);
	git_tree_free(to);
	git_commit_free(from);
	git_treebuilder_free(tb);
	return rc;
}

static int merge_ff(char **out, struct forge_git *g, const char *base_branch, const char *rev);

/* forge_git_merge_ff() of a branch checked out in a checkout other than
 * g's: done there, so that checkout's files move with its branch (a
 * branch moved under a checkout would leave its files behind, as changes
 * undoing the run). */
static int merge_ff_there(char **out, struct forge_git *g, const char *name, const char *rev)
{
	struct forge_git *there = NULL;
	char *path = NULL;
	int rc;

	if (checked_out_in(&path, g, name, true) < 0)
		return -1;
	if (!path)
		return forge_error("cannot fast-forward '%s': it is checked out in a worktree of a run",
				   name + 11);
	rc = forge_git_open(&there, path);
	free(path);
	if (rc == 0)
		rc = merge_ff(out, there, name, rev);   /* (g's lock is the repository's) */
	forge_git_free(there);
	return rc;
}

int forge_git_merge_ff(char **out, struct forge_git *g, const char *base_branch, const char *rev)
{
	int rc;

	if (out)
		*out = NULL;
	if (forge_git_merge_lock(g) < 0)
		return -1;
	rc = merge_ff(out, g, base_branch, rev);
	forge_git_merge_unlock(g);
	return rc;
}

/* forge_git_merge_ff(), its lock held. */
static int merge_ff(char **out, struct forge_git *g, const char *base_branch, const char *rev)
{
	git_reference *ref = NULL, *head = NULL, *moved = NULL;
	git_commit *commit = NULL;
	struct buf name = BUF_INIT;
	git_oid target;
	char what[300];
	const char *head_target = NULL;
	bool in_main;
	int e, rc = -1;

	if (out)
		*out = NULL;
	if (strncmp(base_branch, "refs/heads/", 11) != 0)
		buf_adds(&name, "refs/heads/");
	buf_adds(&name, base_branch);
	if (!git_reference_is_valid_name(name.buf)) {
		forge_error("'%s' is not a valid branch name", base_branch);
		goto out;
	}
	if (forge_git_peel(&target, NULL, g->repo, rev) < 0)
		goto out;
	if (git_reference_lookup(&head, g->repo, "HEAD") == 0)
		head_target = git_reference_symbolic_target(head);
	in_main = head_target && strcmp(head_target, name.buf) == 0;

	e = git_reference_lookup(&ref, g->repo, name.buf);
	if (e == GIT_ENOTFOUND) {
		if (!in_main) {
			forge_error("no branch '%s' to merge into", base_branch);
			goto out;
		}
		/* The unborn branch of an empty repository: it is created below. */
	} else if (e < 0) {
		forge_git_fail("cannot read branch '%s'", base_branch);
		goto out;
	} else {
		const git_oid *tip = git_reference_target(ref);

		if (!tip) {
			forge_error("'%s' is a symbolic reference, not a branch", base_branch);
			goto out;
		}
		if (git_oid_equal(tip, &target)) {
			if (out)
				*out = forge_git_hex(&target);
			rc = FORGE_GIT_NOTHING;
			goto out;
		}
		e = forge_git_descendant_of(g->repo, &target, tip);
		if (e < 0) {
			forge_git_fail("cannot compare '%s' with '%s'", rev, base_branch);
			goto out;
		}
		if (e == 0) {
			/* (a caller that found it a fast-forward looked before the
			 * branch moved: FORGE_GIT_MOVED tells it so) */
			forge_error("cannot fast-forward '%s' to '%s': the branches have diverged "
				    "(rebase the run's branch, or merge by hand)", base_branch, rev);
			rc = FORGE_GIT_MOVED;
			goto out;
		}
		if (!in_main && git_branch_is_checked_out(ref) == 1) {
			rc = merge_ff_there(out, g, name.buf, rev);
			goto out;
		}
	}

	if (in_main) {
		e = forge_git_checkout_dirty(g);
		if (e < 0)
			goto out;
		if (git_commit_lookup(&commit, g->repo, &target) < 0) {
			forge_git_fail("cannot read commit '%s'", rev);
			goto out;
		}
		/* the person's changes are in the way, as their untracked files
		 * are; an interrupted fast-forward's own are finished */
		snprintf(what, sizeof what, "cannot fast-forward '%s'", base_branch);
		if ((e = checkout_ff(g, commit, rev, what, e > 0)) != 0) {
			rc = e;
			goto out;
		}
	}
	if (ref)
		e = git_reference_set_target(&moved, ref, &target, "forge: fast-forward");
	else
		e = git_reference_create(&moved, g->repo, name.buf, &target, 0, "forge: fast-forward");
	if (e == GIT_EMODIFIED || e == GIT_EEXISTS) {
		/* moved since it was read above, by something that does not
		 * hold the merge lock (a git command): the checkout goes back to
		 * where the branch was, so that it holds no change that is on no
		 * branch (before: the run's files staged, a commit reverting
		 * what moved the branch) */
		if (in_main && forge_git_put_back(g, ref ? git_reference_target(ref) : NULL, &target,
						  base_branch) < 0)
			goto out;
		forge_error("cannot fast-forward '%s': it moved while '%s' was updated for it (a git command "
			    "moved it); nothing changed: merge again", base_branch, forge_git_checkout(g));
		rc = FORGE_GIT_MOVED;
		goto out;
	}
	if (e == GIT_ELOCKED)   /* (libgit2's message ends in an empty OS error) */
		forge_error("cannot move branch '%s': %s%s.lock exists: a git command is at work on it, or one "
			    "was killed there; when none runs, remove that file and try again", base_branch,
			    git_repository_commondir(g->repo), name.buf);
	else if (e < 0)
		forge_git_fail("cannot move branch '%s'", base_branch);
	if (e < 0)
		goto out;
	if (out)
		*out = forge_git_hex(&target);
	rc = 0;
out:
	git_reference_free(moved);
	git_reference_free(ref);
	git_reference_free(head);
	git_commit_free(commit);
	buf_release(&name);
	return rc;
}

/* A ref name for one side of a push refspec: "x" becomes refs/heads/x. */
static void add_full_ref(struct buf *b, const char *s, size_t n)
{
	if (!(n >= 5 && strncmp(s, "refs/", 5) == 0))
		buf_adds(b, "refs/heads/");
	buf_add(b, s, n);
}

/* The payload of a push's callbacks: the credential state first, so that
 * forge_git_cred_acquire() takes it as its own. */
struct push_state {
	struct forge_git_cred cred;
	struct buf rejected;
};

static int on_push_update(const char *refname, const char *status, void *payload)
{
	struct push_state *st = payload;

	if (status) {
		if (st->rejected.len)
			buf_adds(&st->rejected, ", ");
		buf_addf(&st->rejected, "'%s' rejected: %s", refname, status);
	}
	return 0;
}

/*
 * The URL to push to: remote.NAME.pushurl or remote.NAME.url of a configured
 * remote, else `remote` itself (a URL or a path).  Read by hand because
 * git_remote_lookup() and url.*.insteadOf handling in libgit2 1.5.1 leak
 * PCRE2 match data on every call (fixed upstream by libgit2 PR #6382), and
 * every forge test runs under LeakSanitizer; insteadOf is not applied.
 */
static int remote_url(struct buf *out, git_repository *repo, const char *remote, bool push)
{
	git_config *cfg = NULL;
	git_buf value = GIT_BUF_INIT;
	struct buf key = BUF_INIT;
	int valid = 0, rc = -1;

	if (git_remote_name_is_valid(&valid, remote) == 0 && valid) {
		if (git_repository_config_snapshot(&cfg, repo) < 0) {
			forge_git_fail("cannot read the configuration");
			goto out;
		}
		static const char *const keys[] = { "pushurl", "url" };
		for (size_t i = push ? 0 : 1; i < 2; i++) {
			buf_reset(&key);
			buf_addf(&key, "remote.%s.%s", remote, keys[i]);
			if (git_config_get_string_buf(&value, cfg, key.buf) == 0) {
				buf_add(out, value.ptr, value.size);
				rc = 0;
				goto out;
			}
		}
		if (!strchr(remote, '/') && !strchr(remote, ':') && !strchr(remote, '.')) {
			forge_error("no remote '%s' (give a configured remote, a URL or a path)",
				    remote);
			goto out;
		}
	}
	buf_adds(out, remote);
	rc = 0;
out:
	git_buf_dispose(&value);
	git_config_free(cfg);
	buf_release(&key);
	return rc;
}

/* A password in url's userinfo is a secret: redacted wherever secrets are
 * (llm_secret_add), as a helper's is. */
static void hide_url_password(const char *url)
{
	const char *scheme = strstr(url, "://");

	if (!scheme)
		return;
	const char *host = scheme + 3, *end = host + strcspn(host, "/?#");
	const char *at = memrchr(host, '@', (size_t)(end - host));
	const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;

	if (colon) {
		char *pw = strndup(colon + 1, (size_t)(at - colon - 1));

		if (pw)
			llm_secret_add(pw);
		free(pw);
	}
}

/*
 * An anonymous remote for `remote` (a configured remote's name, a URL or a
 * path; its pushurl first when `push`), the TLS CA bundle prepared for an
 * http(s) URL (an http URL may redirect to https), after checking that
 * both remote and refspec are given.  The caller frees *out with
 * git_remote_free().  The one set-up push and fetch share.
 */
static int open_remote(git_remote **out, struct forge_git *g, const char *remote, const char *refspec,
		       bool push, struct forge_git_cred *cred)
{
	git_remote_create_options copts = GIT_REMOTE_CREATE_OPTIONS_INIT;
	struct buf url = BUF_INIT;
	int rc = -1;

	*out = NULL;
	if (!refspec || !*refspec || !remote || !*remote) {
		forge_error("%s needs a remote and a refspec", push ? "push" : "fetch");
		goto out;
	}
	if (remote_url(&url, g->repo, remote, push) < 0)
		goto out;
	if ((strncmp(url.buf, "https://", 8) == 0 || strncmp(url.buf, "http://", 7) == 0) &&
	    forge_git_tls_prepare() < 0)
		goto out;
	hide_url_password(url.buf);
	forge_git_cred_url(cred, url.buf);
	copts.repository = g->repo;
	copts.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
	if (git_remote_create_with_opts(out, url.buf, &copts) < 0) {
		char *shown = forge_git_url_display(remote);

		forge_git_fail("cannot use remote '%s'", shown);
		free(shown);
		goto out;
	}
	rc = 0;
out:
	buf_release(&url);
	return rc;
}

int forge_git_push_refspecs(struct forge_git *g, const char *remote, const char *const *specs, size_t n,
			    const char *what)
{
	git_remote *r = NULL;
	git_push_options opts = GIT_PUSH_OPTIONS_INIT;
	struct push_state st = { .rejected = BUF_INIT };
	git_strarray arr = { (char **)specs, n };
	char *shown = forge_git_url_display(remote);
	struct buf url = BUF_INIT;
	int rc = -1;

	forge_git_cred_init(&st.cred, g->root, remote);
	if (remote && *remote && what && *what) {
		if (remote_url(&url, g->repo, remote, true) < 0)
			goto out;
		/* libgit2 would write there itself, past the remote's hooks */
		if (forge_git_url_local(url.buf)) {
			rc = forge_git_push_local(g, url.buf, specs, n, what, shown);
			goto out;
		}
	}
	if (open_remote(&r, g, remote, what, true, &st.cred) < 0)
		goto out;
	opts.callbacks.push_update_reference = on_push_update;
	opts.callbacks.credentials = forge_git_cred_acquire;
	opts.callbacks.certificate_check = forge_git_cred_check_host;
	opts.callbacks.payload = &st;
	if (git_remote_push(r, &arr, &opts) < 0) {
		forge_git_fail("cannot push '%s' to '%s'", what, shown);
		goto out;
	}
	forge_git_cred_done(&st.cred, true);
	if (st.rejected.len) {
		forge_error("push of '%s' to '%s' failed: %s", what, shown, st.rejected.buf);
		goto out;
	}
	rc = 0;
out:
	git_remote_free(r);
	buf_release(&st.rejected);
	buf_release(&url);
	forge_git_cred_release(&st.cred);
	free(shown);
	return rc;
}

int forge_git_push(struct forge_git *g, const char *remote, const char *refspec)
{
	struct buf spec = BUF_INIT;
	const char *src = refspec, *colon;
	int rc = -1;

	if (!refspec || !*refspec || !remote || !*remote) {
		forge_error("push needs a remote and a refspec");
		goto out;
	}
	if (*src == '+') {
		buf_addch(&spec, '+');
		src++;
	}
	colon = strchr(src, ':');
	if (colon) {
		add_full_ref(&spec, src, (size_t)(colon - src));
		buf_addch(&spec, ':');
		add_full_ref(&spec, colon + 1, strlen(colon + 1));
	} else {
		add_full_ref(&spec, src, strlen(src));
		buf_addch(&spec, ':');
		add_full_ref(&spec, src, strlen(src));
	}
	const char *specs[] = { spec.buf };
	rc = forge_git_push_refspecs(g, remote, specs, 1, refspec);
out:
	buf_release(&spec);
	return rc;
}

int forge_git_remote_url(char **out, struct forge_git *g, const char *remote)
{
	struct buf url = BUF_INIT;

	*out = NULL;
	if (remote_url(&url, g->repo, remote, false) < 0) {
		buf_release(&url);
		return -1;
	}
	*out = buf_detach(&url, NULL);
	return 0;
}

int forge_git_fetch(struct forge_git *g, const char *remote, const char *refspec)
{
	git_remote *r = NULL;
	git_fetch_options opts = GIT_FETCH_OPTIONS_INIT;
	char *specs[1];
	git_strarray arr = { specs, 1 };
	struct forge_git_cred cred;
	char *shown = forge_git_url_display(remote);
	int rc = -1;

	forge_git_cred_init(&cred, g->root, remote);
	if (open_remote(&r, g, remote, refspec, false, &cred) < 0)
		goto out;
	specs[0] = (char *)refspec;
	opts.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
	opts.callbacks.credentials = forge_git_cred_acquire;
	opts.callbacks.certificate_check = forge_git_cred_check_host;
	opts.callbacks.payload = &cred;
	if (git_remote_fetch(r, &arr, &opts, NULL) < 0) {
		forge_git_fail("cannot fetch '%s' from '%s'", refspec, shown);
		goto out;
	}
	forge_git_cred_done(&cred, true);
	rc = 0;
out:
	git_remote_free(r);
	forge_git_cred_release(&cred);
	free(shown);
	return rc;
}

int forge_git_tracked_files(jv *out, size_t *total, const char *dir, size_t max)
{
	git_repository *repo = NULL;
	git_index *index = NULL;
	int rc = -1;

	*out = jv_null();
	*total = 0;
	forge_git_init();
	if ((rc = forge_git_repo_open(&repo, dir, 0)) < -1) {
		rc = -1;        /* said so */
		goto out;
	}
	if (rc != 0 || git_repository_index(&index, repo) < 0) {
		rc = forge_git_fail("cannot read the index of '%s'", dir);
		goto out;
	}
	*out = jv_array();
	*total = git_index_entrycount(index);
	for (size_t i = 0; i < *total && i < max; i++) {
		const git_index_entry *e = git_index_get_byindex(index, i);

		if (e && GIT_INDEX_ENTRY_STAGE(e) == 0)
			*out = jv_array_append(*out, jv_string(e->path));
	}
	rc = 0;
out:
	git_index_free(index);
	git_repository_free(repo);
	return rc;
}

/* Of paths, those git ignores and does not track in repo (appended to *out). */
static void ignored_in(jv *out, git_repository *repo, jv paths)
{
	jv_array_foreach(paths, i, p) {
		unsigned int flags = 0;

		/* GIT_STATUS_IGNORED only for a path the index does not hold:
		 * a tracked file matching .gitignore is still committed */
		if (jv_get_kind(p) == JV_KIND_STRING &&
		    git_status_file(&flags, repo, jv_string_value(p)) == 0 && (flags & GIT_STATUS_IGNORED))
			*out = jv_array_append(*out, jv_copy(p));
		jv_free(p);
	}
}

/* Of paths, those below a gitlink of repo's index (appended to *out). */
static void submodules_in(jv *out, git_repository *repo, jv paths)
{
	git_index *idx = NULL;
	jv links = jv_array();

	/* (the handle is kept: the index as it is on disk now, read again
	 * when its file changed since; forced when the file is gone, which
	 * alone empties it: libgit2 keeps the old entries otherwise) */
	if (git_repository_index(&idx, repo) < 0 ||
	    git_index_read(idx, git_index_path(idx) && access(git_index_path(idx), F_OK) != 0) < 0)
		goto out;
	for (size_t i = 0; i < git_index_entrycount(idx); i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);

		if (e && e->mode == GIT_FILEMODE_COMMIT && GIT_INDEX_ENTRY_STAGE(e) == 0)
			links = jv_array_append(links, jv_string(e->path));
	}
	if (jv_array_length(jv_copy(links)) == 0)
		goto out;
	jv_array_foreach(paths, i, p) {
		const char *path = jv_get_kind(p) == JV_KIND_STRING ? jv_string_value(p) : NULL;
		jv in = jv_invalid();

		for (int j = 0, nl = jv_array_length(jv_copy(links)); path && j < nl && !jv_is_valid(in); j++) {
			jv l = jv_array_get(jv_copy(links), j);
			size_t n = (size_t)jv_string_length_bytes(jv_copy(l));

			if (strncmp(path, jv_string_value(l), n) == 0 && path[n] == '/')
				in = jv_copy(l);
			jv_free(l);
		}
		if (jv_is_valid(in))
			*out = jv_array_append(*out, json_set(json_set(jv_object(), "path", jv_copy(p)),
							      "submodule", in));
		else
			jv_free(in);
		jv_free(p);
	}
out:
	git_error_clear();
	jv_free(links);
	git_index_free(idx);
}

void forge_git_written_paths(jv *ignored, jv *inside, const char *dir, jv paths)
{
	git_repository *repo = NULL;

	if (ignored)
		*ignored = jv_array();
	if (inside)
		*inside = jv_array();
	if (jv_get_kind(paths) != JV_KIND_ARRAY)
		return;
	if (kept_repo(&repo, dir) != 0) {
		if (inside)
			git_error_clear();
		kept_release();
		return;
	}
	if (ignored)
		ignored_in(ignored, repo, paths);
	if (inside)
		submodules_in(inside, repo, paths);
	kept_release();
}

void forge_git_ignored_paths(jv *out, const char *dir, jv paths)
{
	forge_git_written_paths(out, NULL, dir, paths);
}

void forge_git_submodule_paths(jv *out, const char *dir, jv paths)
{
	forge_git_written_paths(NULL, out, dir, paths);
}

char *forge_git_library_version(void)
{
	int maj = 0, min = 0, rev = 0;
	struct buf b = BUF_INIT;

	if (git_libgit2_version(&maj, &min, &rev) != 0)
		return NULL;
	buf_addf(&b, "%d.%d.%d", maj, min, rev);
	return buf_detach(&b, NULL);
}
