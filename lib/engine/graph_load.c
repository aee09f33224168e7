/* graph_load.c - pipelines found by name or path; see graph.h. */
#include "engine/graph.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "core/resource.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUILTIN_DIR "pipelines/"
#define PROJECT_DIR ".forge/pipelines"
/* A pipeline file is small; this bounds what a mistaken path reads. */
#define MAX_FILE (4u << 20)

static bool is_path(const char *what)
{
	size_t n = strlen(what);

	return strchr(what, '/') || (n > 5 && strcmp(what + n - 5, ".json") == 0);
}

/* <repo>/.forge/pipelines/NAME.json, malloc'd (NULL without repo). */
static char *project_file(const char *repo, const char *name)
{
	struct buf b = BUF_INIT;

	if (!repo)
		return NULL;
	buf_addf(&b, "%s/" PROJECT_DIR "/%s.json", repo, name);
	return buf_detach(&b, NULL);
}

static const struct resource *builtin(const char *name)
{
	char res[160];

	if ((size_t)snprintf(res, sizeof res, BUILTIN_DIR "%s.json", name) >= sizeof res)
		return NULL;
	return resource_find(res);
}

/* A graph that is one error of the file (nothing could be read). */
static int load_error(struct graph **out, const char *source, const char *path, const char *msg)
{
	struct graph *g = xcalloc(1, sizeof *g);

	g->source = xstrdup(source);
	g->path = path ? xstrdup(path) : NULL;
	g->doc = jv_null();
	g->errors = xcalloc(1, sizeof *g->errors);
	g->errors[0].message = xstrdup(msg);
	g->nerrors = 1;
	*out = g;
	return forge_error("%s: %s", source, msg);
}

static int load_file(struct graph **out, const char *path, const struct graph_env *env)
{
	struct buf b = BUF_INIT;
	int rc;

	buf_init(&b, MAX_FILE);
	if (buf_read_file(&b, path) < 0) {
		char *msg = xstrdup(errno == ENOENT ? "no such file" : forge_last_error());

		buf_release(&b);
		rc = load_error(out, path, path, msg);
		free(msg);
		return rc;
	}
	jv doc = json_parse(b.buf, b.len);
	buf_release(&b);
	if (!jv_is_valid(doc)) {
		char *why = json_invalid_msg(doc), msg[600];

		snprintf(msg, sizeof msg, "malformed JSON: %s", why);
		free(why);
		return load_error(out, path, path, msg);
	}
	return graph_from_json(out, doc, path, path, env);
}

/* Whether the file at path lies inside repo (both taken by their real
 * paths): then the repository, not the person, wrote it. */
static bool inside_repo(const char *path, const char *repo)
{
	char *rp = repo ? realpath(repo, NULL) : NULL, *fp = rp ? realpath(path, NULL) : NULL;
	size_t n = rp ? strlen(rp) : 0;
	bool in = fp && strncmp(fp, rp, n) == 0 && (fp[n] == '/' || (n == 1 && rp[0] == '/'));

	free(fp);
	free(rp);
	return in;
}

int graph_load(struct graph **out, const char *what, const char *repo, const struct graph_env *env)
{
	if (is_path(what)) {
		int rc = load_file(out, what, env);

		(*out)->project = inside_repo(what, repo);
		return rc;
	}

	char *file = project_file(repo, what);
	FILE *f = file ? fopen(file, "r") : NULL;

	if (f) {
		fclose(f);
		int rc = load_file(out, file, env);
		(*out)->project = true;
		free(file);
		return rc;
	}
	free(file);
	const struct resource *r = builtin(what);
	char source[200];

	snprintf(source, sizeof source, "%s (built-in)", what);
	if (!r) {
		char msg[300];

		snprintf(msg, sizeof msg, "no pipeline named '%s' (forge pipeline list shows them; a file is "
			 "named by its path)", what);
		return load_error(out, what, NULL, msg);
	}
	return graph_from_json(out, json_parse(r->data, r->len), source, NULL, env);
}

/* {"name","where",...,"description"|"error"} of one pipeline's text. */
static jv entry(const char *name, const char *where, const char *path, const char *text, size_t len)
{
	jv e = json_set(json_set(jv_object(), "name", jv_string(name)), "where", jv_string(where));
	jv doc = json_parse(text, len);

	if (path)
		e = json_set(e, "path", jv_string(path));
	e = json_set(e, "overridden", jv_false());
	if (!jv_is_valid(doc)) {
		char *why = json_invalid_msg(doc);

		e = json_set(e, "error", jv_string_fmt("malformed JSON: %s", why));
		free(why);
		return e;
	}
	e = json_set(e, "description", json_str_or_null(json_get_str(doc, "description")));
	jv_free(doc);
	return e;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The project's pipeline names (NAME of NAME.json), sorted; *n how many. */
static char **project_names(const char *repo, size_t *n)
{
	struct buf dir = BUF_INIT;
	char **names = NULL;
	DIR *d;
	struct dirent *e;

	*n = 0;
	if (!repo)
		return NULL;
	buf_addf(&dir, "%s/" PROJECT_DIR, repo);
	d = opendir(dir.buf);
	buf_release(&dir);
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len <= 5 || e->d_name[0] == '.' || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		names = xrealloc(names, (*n + 1) * sizeof *names);
		names[(*n)++] = xstrndup(e->d_name, len - 5);
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(names, *n, sizeof *names, cmp_str);
	return names;
}

jv graph_list(const char *repo)
{
	jv out = jv_array();
	size_t n;
	char **names = project_names(repo, &n);

	for (const struct resource *r = resource_all(); r->name; r++) {
		size_t len = strlen(r->name);

		if (strncmp(r->name, BUILTIN_DIR, strlen(BUILTIN_DIR)) != 0 || len < 5 ||
		    strcmp(r->name + len - 5, ".json") != 0)
			continue;
		char *name = xstrndup(r->name + strlen(BUILTIN_DIR), len - strlen(BUILTIN_DIR) - 5);
		jv e = entry(name, "built-in", NULL, r->data, r->len);
		for (size_t i = 0; i < n; i++)
			if (strcmp(names[i], name) == 0)
				e = json_set(e, "overridden", jv_true());
		out = jv_array_append(out, e);
		free(name);
	}
	for (size_t i = 0; i < n; i++) {
		char *path = project_file(repo, names[i]);
		struct buf text = BUF_INIT;

		buf_init(&text, MAX_FILE);
		if (buf_read_file(&text, path) < 0)
			out = jv_array_append(out, json_set(entry(names[i], "project", path, "", 0), "error",
							    jv_string(forge_last_error())));
		else
			out = jv_array_append(out, entry(names[i], "project", path, text.buf, text.len));
		buf_release(&text);
		free(path);
		free(names[i]);
	}
	free(names);
	return out;
}
