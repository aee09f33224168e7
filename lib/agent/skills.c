/*
 * skills.c - finding, parsing and matching SKILL.md files (see skills.h).
 */
#include "agent/skills.h"
#include "core/buf.h"
#include "core/cachedir.h"
#include "core/forge.h"
#include "core/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

static const char *const PHASES[] = { "plan", "implement", "review", "test", "deploy", NULL };

static const struct {
	const char *category;
	const char *phase;
} CATEGORY_PHASE[] = {
	{ "plan", "plan" }, { "planning", "plan" }, { "design", "plan" }, { "architecture", "plan" },
	{ "code", "implement" }, { "coding", "implement" }, { "implement", "implement" },
	{ "implementation", "implement" }, { "tdd", "implement" }, { "refactor", "implement" },
	{ "refactoring", "implement" },
	{ "review", "review" }, { "security", "review" }, { "style", "review" },
	{ "test", "test" }, { "testing", "test" }, { "qa", "test" },
	{ "deploy", "deploy" }, { "deployment", "deploy" }, { "release", "deploy" }, { "ops", "deploy" },
	{ NULL, NULL }
};

int skills_phase_valid(const char *phase)
{
	if (!phase)
		return 0;
	for (size_t i = 0; PHASES[i]; i++)
		if (strcmp(PHASES[i], phase) == 0)
			return 1;
	return 0;
}

/* The phase a category maps to, or NULL. */
static const char *category_phase(const char *category)
{
	for (size_t i = 0; category && CATEGORY_PHASE[i].category; i++)
		if (strcasecmp(CATEGORY_PHASE[i].category, category) == 0)
			return CATEGORY_PHASE[i].phase;
	return NULL;
}

static void skill_release(struct skill *s)
{
	free(s->name);
	free(s->description);
	free(s->category);
	free(s->path);
	free(s->text);
	for (size_t i = 0; i < s->nphases; i++)
		free(s->phases[i]);
	free(s->phases);
	for (size_t i = 0; i < s->nkeywords; i++)
		free(s->keywords[i]);
	free(s->keywords);
	memset(s, 0, sizeof *s);
}

void skills_free(struct skill_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++)
		skill_release(&set->items[i]);
	free(set->items);
	jv_free(set->warnings);
	free(set);
}

static void warn(struct skill_set *set, const char *path, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void warn(struct skill_set *set, const char *path, size_t line, const char *fmt, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;

	buf_addf(&b, "%s:%zu: ", path, line);
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	set->warnings = jv_array_append(set->warnings, jv_string_sized(b.buf, (int)b.len));
	buf_release(&b);
}

/* ---- parsing one file -------------------------------------------------- */

/* Append a string to a growable array of strings. */
static void strv_add(char ***v, size_t *n, const char *s, size_t len)
{
	*v = xrealloc(*v, (*n + 1) * sizeof **v);
	(*v)[(*n)++] = xstrndup(s, len);
}

static const char *scalar(yaml_node_t *n, size_t *len)
{
	*len = n->data.scalar.length;
	return (const char *)n->data.scalar.value;
}

/* A YAML scalar, or a sequence of scalars, as a list of strings.  -1 with
 * the offending node in *bad. */
static int scalar_list(char ***v, size_t *n, yaml_document_t *doc, yaml_node_t *node,
		       yaml_node_t **bad)
{
	size_t len;
	const char *s;

	if (node->type == YAML_SCALAR_NODE) {
		s = scalar(node, &len);
		if (len)
			strv_add(v, n, s, len);
		return 0;
	}
	if (node->type != YAML_SEQUENCE_NODE) {
		*bad = node;
		return -1;
	}
	for (yaml_node_item_t *it = node->data.sequence.items.start;
	     it < node->data.sequence.items.top; it++) {
		yaml_node_t *item = yaml_document_get_node(doc, *it);

		if (!item || item->type != YAML_SCALAR_NODE) {
			*bad = item ? item : node;
			return -1;
		}
		s = scalar(item, &len);
		if (len)
			strv_add(v, n, s, len);
	}
	return 0;
}

static bool name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* Is the line s[0..len) (without its '\n') a "---" marker? */
static bool is_marker(const char *s, size_t len)
{
	if (len < 3 || memcmp(s, "---", 3) != 0)
		return false;
	for (size_t i = 3; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* The name of the directory that holds path ("x/tdd/SKILL.md" -> "tdd"). */
static char *dir_name(const char *path)
{
	const char *end = strrchr(path, '/');
	const char *start;

	if (!end || end == path)
		return xstrdup("");
	start = end;
	while (start > path && start[-1] != '/')
		start--;
	return xstrndup(start, (size_t)(end - start));
}

/* Map the front matter's keys onto s.  Returns 0, or -1 after a warning. */
static int read_front_matter(struct skill_set *set, struct skill *s, yaml_document_t *doc,
			     const char *path)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);

	if (!root) {
		warn(set, path, 2, "front matter is empty: 'description' is required");
		return -1;
	}
	if (root->type != YAML_MAPPING_NODE) {
		warn(set, path, root->start_mark.line + 2, "front matter is not a mapping of keys");
		return -1;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		yaml_node_t *bad = NULL;
		const char *key;
		size_t len;
		char **one = NULL;
		size_t none = 0;

		if (!k || !v)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			warn(set, path, k->start_mark.line + 2, "a key of the front matter is not a string");
			return -1;
		}
		key = (const char *)k->data.scalar.value;
		if (strcmp(key, "name") == 0 || strcmp(key, "description") == 0 ||
		    strcmp(key, "category") == 0) {
			char **field = key[0] == 'n' ? &s->name : key[0] == 'd' ? &s->description
										: &s->category;
			const char *val;

			if (v->type != YAML_SCALAR_NODE) {
				warn(set, path, v->start_mark.line + 2, "'%s' must be a string", key);
				return -1;
			}
			val = scalar(v, &len);
			if (memchr(val, '\0', len)) {
				warn(set, path, v->start_mark.line + 2, "'%s' contains a NUL character", key);
				return -1;
			}
			free(*field);
			*field = xstrndup(val, len);
		} else if (strcmp(key, "phases") == 0) {
			if (scalar_list(&one, &none, doc, v, &bad) < 0) {
				warn(set, path, bad->start_mark.line + 2,
				     "'phases' must be a list of phase names");
				goto bad_list;
			}
			for (size_t i = 0; i < none; i++) {
				lower(one[i]);
				if (!skills_phase_valid(one[i])) {
					warn(set, path, v->start_mark.line + 2,
					     "unknown phase '%s' in 'phases' (plan, implement, review, test, deploy)",
					     one[i]);
					goto bad_list;
				}
			}
			for (size_t i = 0; i < s->nphases; i++)
				free(s->phases[i]);
			free(s->phases);
			s->phases = one;
			s->nphases = none;
		} else if (strcmp(key, "task_types") == 0 || strcmp(key, "triggers") == 0) {
			if (scalar_list(&one, &none, doc, v, &bad) < 0) {
				warn(set, path, bad->start_mark.line + 2,
				     "'%s' must be a string or a list of strings", key);
				goto bad_list;
			}
			for (size_t i = 0; i < none; i++) {
				lower(one[i]);
				s->keywords = xrealloc(s->keywords, (s->nkeywords + 1) * sizeof *s->keywords);
				s->keywords[s->nkeywords++] = one[i];
			}
			free(one);
		} else if (strcmp(key, "priority") == 0) {
			long prio;

			if (v->type != YAML_SCALAR_NODE ||
			    forge_parse_long(&prio, (const char *)v->data.scalar.value, -100, 100) < 0) {
				warn(set, path, v->start_mark.line + 2,
				     "'priority' must be a whole number from -100 to 100");
				return -1;
			}
			s->priority = (int)prio;
		}
		continue;
bad_list:
		for (size_t i = 0; i < none; i++)
			free(one[i]);
		free(one);
		return -1;
	}
	if (!s->description || !s->description[0]) {
		warn(set, path, 2, "'description' is required");
		return -1;
	}
	if (!s->name)
		s->name = dir_name(path);
	if (!name_valid(s->name)) {
		warn(set, path, 2,
		     "skill name '%s' is not 1-64 letters, digits, '-', '_' or '.'", s->name);
		return -1;
	}
	if (!s->category || !s->category[0]) {
		free(s->category);
		s->category = xstrdup("general");
	}
	return 0;
}

/* Read up to SKILLS_MAX_BYTES of path into *out.  -1 after a warning. */
static int read_skill_file(struct skill_set *set, struct buf *out, const char *path)
{
	char chunk[8192];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = -1;

	if (fd < 0) {
		warn(set, path, 0, "cannot read: %s", strerror(errno));
		return -1;
	}
	buf_init(out, SKILLS_MAX_BYTES);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			warn(set, path, 0, "cannot read: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (buf_add(out, chunk, (size_t)n) < 0) {
			warn(set, path, 0, "larger than %d bytes; skipped", SKILLS_MAX_BYTES);
			goto out;
		}
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Parse one SKILL.md into *s.  0, or -1 after a warning (s released). */
static int parse_skill(struct skill_set *set, struct skill *s, const char *path)
{
	struct buf file = BUF_INIT;
	yaml_parser_t parser;
	yaml_document_t doc;
	bool parser_ok = false, doc_ok = false;
	const char *text, *end, *line, *fm_start, *fm_end = NULL, *body = NULL;
	size_t lineno = 1;
	int rc = -1;

	memset(s, 0, sizeof *s);
	if (read_skill_file(set, &file, path) < 0)
		goto out;
	if (memchr(file.buf, '\0', file.len)) {
		warn(set, path, 0, "contains a NUL byte; not a text file");
		goto out;
	}
	if (!json_utf8_valid(file.buf, file.len)) {
		warn(set, path, 0, "not valid UTF-8");
		goto out;
	}
	text = file.buf;
	end = file.buf + file.len;
	if (file.len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		text += 3;
	line = text;
	{
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);

		if (!is_marker(line, len)) {
			warn(set, path, 1, "no front matter: the file must begin with a line '---'");
			goto out;
		}
		fm_start = nl ? nl + 1 : end;
	}
	for (line = fm_start; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);

		lineno++;
		if (is_marker(line, len)) {
			fm_end = line;
			body = nl ? nl + 1 : end;
			break;
		}
		line = nl ? nl + 1 : end;
	}
	if (!fm_end) {
		warn(set, path, 1, "front matter is not closed: no second line '---'");
		goto out;
	}
	if (!yaml_parser_initialize(&parser)) {
		warn(set, path, 0, "cannot start the YAML parser");
		goto out;
	}
	parser_ok = true;
	yaml_parser_set_input_string(&parser, (const unsigned char *)fm_start,
				     (size_t)(fm_end - fm_start));
	if (!yaml_parser_load(&parser, &doc)) {
		/* a construct left open is reported where it began */
		if (parser.context)
			warn(set, path, parser.context_mark.line + 2,
			     "front matter is not valid YAML: %s %s (line %zu)",
			     parser.problem ? parser.problem : "parse error", parser.context,
			     parser.problem_mark.line + 2);
		else
			warn(set, path, parser.problem_mark.line + 2, "front matter is not valid YAML: %s",
			     parser.problem ? parser.problem : "parse error");
		goto out;
	}
	doc_ok = true;
	if (read_front_matter(set, s, &doc, path) < 0)
		goto out;
	while (body < end && (*body == '\n' || *body == '\r'))
		body++;
	s->text = xstrndup(body, (size_t)(end - body));
	s->path = xstrdup(path);
	rc = 0;
out:
	if (doc_ok)
		yaml_document_delete(&doc);
	if (parser_ok)
		yaml_parser_delete(&parser);
	buf_release(&file);
	if (rc < 0)
		skill_release(s);
	return rc;
}

/* ---- finding files ----------------------------------------------------- */

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

struct walk {
	struct skill_set *set;
	char **paths;
	size_t n;
	bool full;
};

/* Collect the SKILL.md files under dir.  -1 (with a message) only when the
 * top directory exists and cannot be read. */
static int walk_dir(struct walk *w, const char *dir, int depth)
{
	struct dirent **list = NULL;
	int n = scandir(dir, &list, not_dot, by_name);

	if (n < 0) {
		if (depth == 0 && errno == ENOENT)
			return 0;
		if (depth == 0)
			return forge_error("cannot read skills directory '%s': %s", dir, strerror(errno));
		warn(w->set, dir, 0, "cannot read directory: %s", strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		struct buf p = BUF_INIT;
		struct stat st;

		buf_addf(&p, "%s/%s", dir, list[i]->d_name);
		if (lstat(p.buf, &st) == 0) {
			if (S_ISDIR(st.st_mode) && strcmp(list[i]->d_name, "SKILL.md") == 0) {
				warn(w->set, p.buf, 0, "a directory, not a skill's file; not read");
			} else if (S_ISDIR(st.st_mode)) {
				if (depth + 1 < SKILLS_MAX_DEPTH)
					walk_dir(w, p.buf, depth + 1);
				else
					warn(w->set, p.buf, 0, "deeper than %d levels; not searched",
					     SKILLS_MAX_DEPTH);
			} else if (strcmp(list[i]->d_name, "SKILL.md") == 0 &&
				   stat(p.buf, &st) == 0 && S_ISREG(st.st_mode)) {
				if (w->n >= SKILLS_MAX_FILES) {
					if (!w->full)
						warn(w->set, dir, 0, "more than %d skills; the rest are skipped",
						     SKILLS_MAX_FILES);
					w->full = true;
				} else {
					w->paths = xrealloc(w->paths, (w->n + 1) * sizeof *w->paths);
					w->paths[w->n++] = buf_detach(&p, NULL);
				}
			}
		}
		buf_release(&p);
		free(list[i]);
	}
	free(list);
	return 0;
}

static struct skill *find_mut(struct skill_set *set, const char *name)
{
	for (size_t i = 0; i < set->n; i++)
		if (strcmp(set->items[i].name, name) == 0)
			return &set->items[i];
	return NULL;
}

static int load_root(struct skill_set *set, const char *dir, const char *source)
{
	struct walk w = { set, NULL, 0, false };
	int rc = walk_dir(&w, dir, 0);

	for (size_t i = 0; i < w.n; i++) {
		struct skill s;
		struct skill *old;

		if (rc == 0 && parse_skill(set, &s, w.paths[i]) == 0) {
			s.source = source;
			old = find_mut(set, s.name);
			if (old && old->source != source) {
				/* a project skill overrides a user skill of the same name */
				skill_release(&s);
			} else if (old) {
				warn(set, s.path, 0, "duplicate skill '%s' (already defined in '%s'); skipped",
				     s.name, old->path);
				skill_release(&s);
			} else {
				set->items = xrealloc(set->items, (set->n + 1) * sizeof *set->items);
				set->items[set->n++] = s;
			}
		}
		free(w.paths[i]);
	}
	free(w.paths);
	return rc;
}

char *skills_user_dir(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = home_dir();      /* (absolute only) */
	struct buf b = BUF_INIT;

	if (xdg && xdg[0] == '/')
		buf_addf(&b, "%s/forge/skills", xdg);
	else if (home)
		buf_addf(&b, "%s/.config/forge/skills", home);
	else
		return NULL;
	return buf_detach(&b, NULL);
}

static int skill_cmp(const void *a, const void *b)
{
	return strcmp(((const struct skill *)a)->name, ((const struct skill *)b)->name);
}

int skills_load(struct skill_set **out, const char *repo_root, const char *user_dir)
{
	struct skill_set *set = xcalloc(1, sizeof *set);
	char *udir = NULL;
	int rc = -1;

	*out = NULL;
	set->warnings = jv_array();
	if (repo_root && repo_root[0]) {
		struct buf d = BUF_INIT;
		int r;

		buf_addf(&d, "%s/.forge/skills", repo_root);
		r = load_root(set, d.buf, "project");
		buf_release(&d);
		if (r < 0)
			goto out;
	}
	udir = user_dir ? xstrdup(user_dir) : skills_user_dir();
	if (udir && udir[0] && load_root(set, udir, "user") < 0)
		goto out;
	if (set->n > 1)
		qsort(set->items, set->n, sizeof *set->items, skill_cmp);
	*out = set;
	set = NULL;
	rc = 0;
out:
	free(udir);
	skills_free(set);
	return rc;
}

const struct skill *skills_find(const struct skill_set *set, const char *name)
{
	for (size_t i = 0; set && name && i < set->n; i++)
		if (strcmp(set->items[i].name, name) == 0)
			return &set->items[i];
	return NULL;
}

/* ---- matching ---------------------------------------------------------- */

static bool word_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c >= 0x80;
}

/* " word word " : lowercased words, single spaces, a space at each end. */
static char *normalise(const char *s)
{
	struct buf b = BUF_INIT;
	bool space = true;

	buf_addch(&b, ' ');
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		if (word_char(*p)) {
			buf_addch(&b, (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p));
			space = false;
		} else if (!space) {
			buf_addch(&b, ' ');
			space = true;
		}
	}
	if (!space)
		buf_addch(&b, ' ');
	return buf_detach(&b, NULL);
}

/* Does the normalised phrase kw occur in the normalised text? */
static bool contains_phrase(const char *norm_text, const char *kw)
{
	char *k = normalise(kw);
	bool found = strlen(k) > 1 && strstr(norm_text, k) != NULL;

	free(k);
	return found;
}

struct scored {
	const struct skill *s;
	int score;
};

static int scored_cmp(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->s->priority != y->s->priority)
		return x->s->priority > y->s->priority ? -1 : 1;
	return strcmp(x->s->name, y->s->name);
}

static jv strv_json(char **v, size_t n)
{
	jv a = jv_array();

	for (size_t i = 0; i < n; i++)
		a = jv_array_append(a, jv_string(v[i]));
	return a;
}

/* The phases a skill applies to, as a JSON array ([] = every phase). */
static jv skill_phases(const struct skill *s)
{
	const char *p;

	if (s->nphases)
		return strv_json(s->phases, s->nphases);
	p = category_phase(s->category);
	return p ? jv_array_append(jv_array(), jv_string(p)) : jv_array();
}

jv skills_to_json(const struct skill *s, int with_text)
{
	jv o = jv_object();

	o = json_set(o, "name", jv_string(s->name));
	o = json_set(o, "description", jv_string(s->description));
	o = json_set(o, "category", jv_string(s->category));
	o = json_set(o, "phases", skill_phases(s));
	o = json_set(o, "keywords", strv_json(s->keywords, s->nkeywords));
	o = json_set(o, "priority", jv_number(s->priority));
	o = json_set(o, "source", jv_string(s->source));
	o = json_set(o, "path", jv_string(s->path));
	if (with_text)
		o = json_set(o, "text", jv_string(s->text));
	return o;
}

/* The score of s for phase/task (normalised), or -1 when it does not apply. */
static int score_skill(const struct skill *s, const char *phase, const char *norm_task)
{
	int score = 0;

	if (phase) {
		const char *cp = category_phase(s->category);
		bool listed = false;

		for (size_t i = 0; i < s->nphases; i++)
			if (strcmp(s->phases[i], phase) == 0)
				listed = true;
		if (listed)
			score += 3;
		else if (s->nphases > 0)
			return -1;
		else if (cp && strcmp(cp, phase) == 0)
			score += 2;
		else if (cp)
			return -1;
	}
	if (norm_task) {
		for (size_t i = 0; i < s->nkeywords; i++)
			if (contains_phrase(norm_task, s->keywords[i]))
				score += 2;
		if (contains_phrase(norm_task, s->name))
			score += 2;
		if (strcmp(s->category, "general") != 0 && contains_phrase(norm_task, s->category))
			score += 1;
	}
	return score;
}

int skills_match(jv *out, const struct skill_set *set, const char *phase, const char *task_text,
		 size_t limit)
{
	struct scored *list = NULL;
	size_t n = 0;
	char *norm = NULL;
	bool any = false;

	if (phase && !phase[0])
		phase = NULL;
	if (task_text && task_text[0])
		norm = normalise(task_text);
	any = !phase && !norm;
	for (size_t i = 0; set && i < set->n; i++) {
		int sc = score_skill(&set->items[i], phase, norm);

		if (sc > 0 || (any && sc == 0)) {
			list = xrealloc(list, (n + 1) * sizeof *list);
			list[n].s = &set->items[i];
			list[n].score = sc;
			n++;
		}
	}
	if (n > 1)
		qsort(list, n, sizeof *list, scored_cmp);
	if (limit && n > limit)
		n = limit;
	*out = jv_array();
	for (size_t i = 0; i < n; i++) {
		jv o = skills_to_json(list[i].s, 1);

		o = json_set(o, "score", jv_number(list[i].score));
		*out = jv_array_append(*out, o);
	}
	free(list);
	free(norm);
	return (int)n;
}

char *skills_render(jv matched)
{
	struct buf b = BUF_INIT;

	if (jv_get_kind(matched) != JV_KIND_ARRAY)
		return buf_detach(&b, NULL);
	jv_array_foreach(matched, i, s) {
		const char *name = json_get_str(s, "name");
		const char *desc = json_get_str(s, "description");
		const char *text = json_get_str(s, "text");

		buf_addf(&b, "### %s\n\n", name ? name : "skill");
		if (desc && desc[0])
			buf_addf(&b, "%s\n\n", desc);
		if (text && text[0]) {
			size_t len = strlen(text);

			buf_add(&b, text, len);
			buf_adds(&b, text[len - 1] == '\n' ? "\n" : "\n\n");
		}
		jv_free(s);
	}
	return buf_detach(&b, NULL);
}

const char *skills_yaml_version(void)
{
	return yaml_get_version_string();
}
