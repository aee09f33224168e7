/*
 * sandbox_deps.c - the checkout's installed dependencies (node_modules, a
 * Python virtualenv) lent read-only to commands in a run's worktree.  See
 * "THE CHECKOUT'S INSTALLED DEPENDENCIES" in sandbox.h.
 */
#include "os/sandbox.h"
#include "os/sandbox_internal.h"
#include "core/buf.h"
#include "core/forge.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The entries of one directory looked at for package directories: the
 * look is made once per process, a tree of sources is not walked. */
#define DEPS_SCAN_MAX 512

struct found {
	char *rel;
	bool venv;
};

static pthread_mutex_t deps_lock = PTHREAD_MUTEX_INITIALIZER;
static char *checkout;          /* its real path, or NULL */
static bool scanned;
static struct found *found;     /* what the checkout holds, parents first */
static size_t nfound;

static void found_clear(void)
{
	for (size_t i = 0; i < nfound; i++)
		free(found[i].rel);
	free(found);
	found = NULL;
	nfound = 0;
	scanned = false;
}

void sandbox_set_checkout(const char *dir)
{
	char *real = dir ? realpath(dir, NULL) : NULL;

	pthread_mutex_lock(&deps_lock);
	if (!real || !checkout || strcmp(real, checkout) != 0) {
		free(checkout);
		checkout = real;
		real = NULL;
		found_clear();
	}
	pthread_mutex_unlock(&deps_lock);
	free(real);
}

static bool is_dir_at(const char *base, const char *rel, const char *name)
{
	struct buf b = BUF_INIT;
	struct stat st;
	bool yes;

	buf_addf(&b, "%s/%s%s%s", base, rel, *rel && name ? "/" : "", name ? name : "");
	yes = stat(b.buf, &st) == 0 && S_ISDIR(st.st_mode);
	buf_release(&b);
	return yes;
}

/* Whether base/rel is a virtualenv (holds a pyvenv.cfg). */
static bool is_venv(const char *base, const char *rel)
{
	struct buf b = BUF_INIT;
	struct stat st;
	bool yes;

	buf_addf(&b, "%s/%s/pyvenv.cfg", base, rel);
	yes = stat(b.buf, &st) == 0 && S_ISREG(st.st_mode);
	buf_release(&b);
	return yes;
}

static void found_add(const char *rel, bool venv)
{
	found = xrealloc(found, (nfound + 1) * sizeof *found);
	found[nfound].rel = xstrdup(rel);
	found[nfound].venv = venv;
	nfound++;
}

/* The package directories' node_modules beneath the checkout's rel ("" =
 * the root's entries), depth levels down. */
static void scan_packages(const char *rel, int depth)
{
	struct buf path = BUF_INIT, sub = BUF_INIT;
	struct dirent *e;
	size_t seen = 0;
	DIR *d;

	buf_addf(&path, "%s%s%s", checkout, *rel ? "/" : "", rel);
	d = opendir(path.buf);
	while (d && (e = readdir(d)) && seen++ < DEPS_SCAN_MAX) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "node_modules") ||
		    (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		buf_reset(&sub);
		buf_addf(&sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		if (!is_dir_at(checkout, sub.buf, NULL))
			continue;
		if (is_dir_at(checkout, sub.buf, "node_modules")) {
			buf_adds(&sub, "/node_modules");
			found_add(sub.buf, false);
		} else if (depth > 1) {
			scan_packages(sub.buf, depth - 1);
		}
	}
	if (d)
		closedir(d);
	buf_release(&sub);
	buf_release(&path);
}

/* Under deps_lock, with a checkout. */
static void scan(void)
{
	static const char *const venvs[] = { ".venv", "venv", NULL };

	scanned = true;
	if (is_dir_at(checkout, "node_modules", NULL))
		found_add("node_modules", false);
	scan_packages("", 2);
	/* one virtualenv: a command has one VIRTUAL_ENV */
	for (size_t i = 0; venvs[i]; i++)
		if (is_venv(checkout, venvs[i])) {
			found_add(venvs[i], true);
			break;
		}
}

/* Whether root/rel may take the checkout's: not there, or an empty
 * directory (a mount point). */
static bool free_place(const char *path)
{
	struct stat st;
	struct dirent *e;
	bool empty = true;
	DIR *d;

	if (lstat(path, &st) < 0)
		return errno == ENOENT;
	if (!S_ISDIR(st.st_mode) || !(d = opendir(path)))
		return false;
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}

/* The prefix of the interpreter a virtualenv was made from (pyvenv.cfg's
 * "home = /usr/local/bin": /usr/local), or NULL. */
static char *venv_home(const char *venv)
{
	struct buf path = BUF_INIT;
	char line[PATH_MAX + 64], *real = NULL, *slash;
	FILE *f;

	buf_addf(&path, "%s/pyvenv.cfg", venv);
	f = fopen(path.buf, "re");
	while (f && !real && fgets(line, sizeof line, f)) {
		char *k = line + strspn(line, " \t"), *v = strchr(k, '=');
		size_t n = strcspn(k, " \t=");

		if (!v || n != 4 || strncmp(k, "home", 4) != 0)
			continue;
		v += 1 + strspn(v + 1, " \t");
		v[strcspn(v, "\r\n")] = '\0';
		while (*v && (v[strlen(v) - 1] == ' ' || v[strlen(v) - 1] == '\t'))
			v[strlen(v) - 1] = '\0';
		real = v[0] == '/' ? realpath(v, NULL) : NULL;
	}
	if (f)
		fclose(f);
	buf_release(&path);
	if (real && (slash = strrchr(real, '/')) && slash != real) {
		*slash = '\0';
		return real;
	}
	free(real);
	return NULL;
}

/* Whether path is dir or beneath it (both real paths). */
static bool within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/*
 * Whether the directory path is to be made in lies in root (real), by its
 * real path: a symbolic link on the way (one the project commits, as
 * packages/web -> /elsewhere) would put the mount point, or the lent
 * directory, outside the worktree.
 */
static bool parent_within(const char *path, const char *root)
{
	char *parent = path_parent(path), *real = parent ? realpath(parent, NULL) : NULL;
	bool yes = real && within(real, root);

	free(real);
	free(parent);
	return yes;
}

void sandbox_deps_find(struct sandbox_deps *d, const char *root)
{
	char *real_root = realpath(root, NULL);
	bool own_venv;

	memset(d, 0, sizeof *d);
	pthread_mutex_lock(&deps_lock);
	if (!checkout || !real_root || !strcmp(real_root, checkout))
		goto out;
	if (!scanned)
		scan();
	own_venv = is_venv(real_root, ".venv") || is_venv(real_root, "venv");
	for (size_t i = 0; i < nfound; i++) {
		struct buf src = BUF_INIT, dst = BUF_INIT;
		const char *slash = strrchr(found[i].rel, '/');
		char *real_src;

		if (found[i].venv && own_venv)
			continue;
		/* a package directory the root does not have takes nothing */
		if (slash) {
			char *parent = xstrndup(found[i].rel, (size_t)(slash - found[i].rel));
			bool there = is_dir_at(real_root, parent, NULL);

			free(parent);
			if (!there)
				continue;
		}
		buf_addf(&src, "%s/%s", checkout, found[i].rel);
		buf_addf(&dst, "%s/%s", real_root, found[i].rel);
		real_src = realpath(src.buf, NULL);
		buf_release(&src);
		if (!real_src || !within(real_src, checkout) || !parent_within(dst.buf, real_root) ||
		    !free_place(dst.buf)) {
			free(real_src);
			buf_release(&dst);
			continue;
		}
		d->v = xrealloc(d->v, (d->n + 1) * sizeof *d->v);
		d->v[d->n] = (struct sandbox_lend){
			.rel = xstrdup(found[i].rel),
			.src = real_src,
			.dst = buf_detach(&dst, NULL),
			.venv = found[i].venv,
		};
		if (found[i].venv)
			d->venv_home = venv_home(real_src);
		d->n++;
	}
out:
	pthread_mutex_unlock(&deps_lock);
	free(real_root);
}

jv sandbox_deps_lent(const char *root)
{
	struct sandbox_deps d;
	jv out = jv_array();

	sandbox_deps_find(&d, root);
	for (size_t i = 0; i < d.n; i++) {
		jv e = jv_object();

		e = jv_object_set(e, jv_string("dir"), jv_string(d.v[i].rel));
		e = jv_object_set(e, jv_string("from"), jv_string(d.v[i].src));
		out = jv_array_append(out, e);
	}
	sandbox_deps_release(&d);
	return out;
}

char **sandbox_deps_env(const struct sandbox_deps *d, char **env, bool view)
{
	const struct sandbox_lend *venv = NULL, *node = NULL;
	struct buf path = BUF_INIT, node_path = BUF_INIT, virtual_env = BUF_INIT;
	const char *old_path, *old_node;
	size_t n = 0, k = 0;
	char **out;

	for (size_t i = 0; i < d->n; i++) {
		if (d->v[i].venv && !venv)
			venv = &d->v[i];
		else if (!strcmp(d->v[i].rel, "node_modules") && !view)
			node = &d->v[i];
	}
	if (!venv && !node)
		return env;
	old_path = sandbox_env_value(env, "PATH");
	old_node = sandbox_env_value(env, "NODE_PATH");
	buf_adds(&path, "PATH=");
	if (venv)
		buf_addf(&path, "%s/bin:", venv->src);
	if (node)
		buf_addf(&path, "%s/.bin:", node->src);
	buf_adds(&path, old_path ? old_path : "/usr/local/bin:/usr/bin:/bin");
	if (node)
		buf_addf(&node_path, "NODE_PATH=%s%s%s", node->src, old_node && *old_node ? ":" : "",
			 old_node ? old_node : "");
	if (venv)
		buf_addf(&virtual_env, "VIRTUAL_ENV=%s", venv->src);
	while (env && env[n])
		n++;
	out = xcalloc(n + 4, sizeof *out);
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(env[i], "PATH=", 5) || (node && !strncmp(env[i], "NODE_PATH=", 10)) ||
		    (venv && !strncmp(env[i], "VIRTUAL_ENV=", 12)))
			free(env[i]);
		else
			out[k++] = env[i];
	}
	out[k++] = buf_detach(&path, NULL);
	if (node)
		out[k++] = buf_detach(&node_path, NULL);
	if (venv)
		out[k++] = buf_detach(&virtual_env, NULL);
	out[k] = NULL;
	free(env);
	buf_release(&node_path);
	buf_release(&virtual_env);
	return out;
}

void sandbox_deps_release(struct sandbox_deps *d)
{
	if (!d)
		return;
	/* the deepest first: a package's mount point, then the root's */
	for (size_t i = d->n; i-- > 0;) {
		if (d->v[i].made && rmdir(d->v[i].dst) < 0) {
			/* something was put there after all: it stays */
		}
		free(d->v[i].rel);
		free(d->v[i].src);
		free(d->v[i].dst);
	}
	free(d->v);
	free(d->venv_home);
	memset(d, 0, sizeof *d);
}
