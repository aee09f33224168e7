/* graph.c - a pipeline's nodes and edges, validated; see graph.h. */
#include "engine/graph.h"
#include "engine/gates.h"
#include "engine/pipeline.h"
#include "core/buf.h"
#include "core/forge.h"
#include "core/jqexpr.h"
#include "core/json.h"
#include "data/config.h"
#include "data/schema.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA "pipeline.schema.json"
#define MAX_NODES 1000         /* the schema's nodes.maxItems */

static const char *const status_names[NODE_NSTATUS] = {
	"pending", "running", "done", "blocked", "failed", "skipped",
};

const char *node_status_name(enum node_status s)
{
	return (unsigned)s < NODE_NSTATUS ? status_names[s] : "unknown";
}

enum node_status node_status_of(const char *name)
{
	for (int s = 0; name && s < NODE_NSTATUS; s++)
		if (strcmp(name, status_names[s]) == 0)
			return (enum node_status)s;
	return NODE_NSTATUS;
}

/* ---- building ---------------------------------------------------------- */

/* What validation carries beside the graph. */
struct build {
	struct graph *g;
	const struct graph_env *env;
	char *dir;              /* relative program paths */
	bool *valid;            /* node i passed its schema */
	size_t *err_pos;        /* per error: its node's index + 1, 0 for the file */
	uint64_t *anc;          /* bit b of row a (words words each): a needs b, directly or not */
	size_t words;
};

static bool anc_has(const struct build *b, size_t a, size_t c)
{
	return (b->anc[a * b->words + c / 64] >> (c % 64)) & 1;
}

static void add_error(struct build *b, size_t pos, const char *node, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Record an error of node `pos` (index + 1; 0: the file). */
static void add_error(struct build *b, size_t pos, const char *node, const char *fmt, ...)
{
	struct graph *g = b->g;
	struct buf m = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&m, fmt, ap);
	va_end(ap);
	/* one line each (libjq's messages have several) */
	for (char *c = m.buf; *c; c++)
		if (*c == '\n')
			*c = ' ';
	g->errors = xrealloc(g->errors, (g->nerrors + 1) * sizeof *g->errors);
	b->err_pos = xrealloc(b->err_pos, (g->nerrors + 1) * sizeof *b->err_pos);
	g->errors[g->nerrors].node = node ? xstrdup(node) : NULL;
	g->errors[g->nerrors].message = buf_detach(&m, NULL);
	b->err_pos[g->nerrors++] = pos;
}

#define NODE_ERR(b, i, ...) add_error((b), (i) + 1, (b)->g->nodes[i].id, __VA_ARGS__)

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* The directory part of path ("." when it has none); malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

static bool executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* dir/name when it is an executable file, else NULL; absolute (without
 * resolving symbolic links: a program may go by the name it is called),
 * so that it runs the same from any directory.  malloc'd. */
static char *in_dir(const char *dir, size_t dlen, const char *name)
{
	char path[PATH_MAX], cwd[PATH_MAX];
	int n;

	if (dlen == 0) {        /* an empty PATH entry is the current directory */
		dir = ".";
		dlen = 1;
	}
	if (dir[0] == '/')
		n = snprintf(path, sizeof path, "%.*s/%s", (int)dlen, dir, name);
	else if (getcwd(cwd, sizeof cwd))
		n = snprintf(path, sizeof path, "%s/%.*s/%s", cwd, (int)dlen, dir, name);
	else
		return NULL;
	if (n < 0 || (size_t)n >= sizeof path)
		return NULL;
	return executable_file(path) ? xstrdup(path) : NULL;
}

/* Where program is: beside forge, then on PATH; a name with '/' relative to
 * dir.  malloc'd, or NULL. */
static char *find_program(const char *program, const char *bindir, const char *dir)
{
	char *found = NULL;

	if (strchr(program, '/')) {
		if (program[0] == '/')
			return executable_file(program) ? xstrdup(program) : NULL;
		return in_dir(dir, strlen(dir), program);
	}
	if (bindir && (found = in_dir(bindir, strlen(bindir), program)))
		return found;
	for (const char *p = getenv("PATH"); p && !found;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		found = in_dir(p, len, program);
		p = colon ? colon + 1 : NULL;
	}
	return found;
}

/* The string array at key (strings only: the schema checked them). */
static char **str_array(jv node, const char *key, size_t *n)
{
	jv a = json_get(node, key);
	char **out = NULL;

	*n = 0;
	if (jv_get_kind(a) == JV_KIND_ARRAY) {
		out = xcalloc((size_t)jv_array_length(jv_copy(a)) + 1, sizeof *out);
		jv_array_foreach(a, i, s) {
			if (jv_get_kind(s) == JV_KIND_STRING)
				out[(*n)++] = xstrdup(jv_string_value(s));
			jv_free(s);
		}
	}
	jv_free(a);
	return out;
}

/* A jq condition at key, checked: NULL when absent or broken (an error). */
static char *condition(struct build *b, size_t i, jv obj, const char *key, const char *what)
{
	const char *expr = json_get_str(obj, key);

	if (!expr)
		return NULL;
	if (jqexpr_check(expr) < 0) {
		NODE_ERR(b, i, "%s: %s", what, forge_last_error());
		return NULL;
	}
	return xstrdup(expr);
}

/* The schema's message for node i, in the file's words where it has some. */
static void schema_error(struct build *b, size_t i, const char *msg)
{
	if (strncmp(msg, ".phase:", 7) == 0 && b->g->nodes[i].phase)
		NODE_ERR(b, i, "unknown phase '%s': a phase is plan, implement, review, test or deploy; "
			 "another program is given with \"program\"", b->g->nodes[i].phase);
	else
		NODE_ERR(b, i, "%s", strncmp(msg, ".: ", 3) == 0 ? msg + 3 : msg);   /* the node itself */
}

/* Node i against the schema, every error said; borrows node. */
static bool node_valid(struct build *b, size_t i, jv node)
{
	jv errors;
	bool ok = schema_validate_def_all(&errors, SCHEMA, "node", node) == 0;

	jv_array_foreach(errors, k, e) {
		schema_error(b, i, jv_string_value(e));
		jv_free(e);
	}
	jv_free(errors);
	return ok;
}

/* First pass: ids, fields, the schema of each node.  Consumes nodes. */
static void read_nodes(struct build *b, jv nodes)
{
	struct graph *g = b->g;

	g->n = (size_t)jv_array_length(jv_copy(nodes));
	g->nodes = xcalloc(g->n ? g->n : 1, sizeof *g->nodes);
	b->valid = xcalloc(g->n ? g->n : 1, sizeof *b->valid);
	jv_array_foreach(nodes, i, node) {
		struct graph_node *nd = &g->nodes[i];
		const char *id = json_get_str(node, "id");
		char label[32];

		snprintf(label, sizeof label, "#%d", i + 1);
		nd->id = xstrdup(id ? id : label);
		nd->phase = dup_or_null(json_get_str(node, "phase"));
		nd->program = dup_or_null(json_get_str(node, "program"));
		if (jv_get_kind(node) != JV_KIND_OBJECT) {
			NODE_ERR(b, (size_t)i, "a node is an object with an id and a phase or a program");
		} else if (!node_valid(b, (size_t)i, node)) {
			/* node_valid said what is wrong */
		} else {
			b->valid[i] = true;
			for (int j = 0; j < i; j++)
				if (strcmp(g->nodes[j].id, nd->id) == 0) {
					NODE_ERR(b, (size_t)i, "the id is taken by node #%d: ids must be unique", j + 1);
					b->valid[i] = false;
					break;
				}
		}
		jv_free(node);
	}
	jv_free(nodes);
}

/* phase or program, and where the program is. */
static void check_kind(struct build *b, size_t i)
{
	struct graph_node *nd = &b->g->nodes[i];

	if (nd->phase && nd->program) {
		NODE_ERR(b, i, "has both phase '%s' and program '%s': give one", nd->phase, nd->program);
	} else if (!nd->phase && !nd->program) {
		NODE_ERR(b, i, "has neither a phase (plan, implement, review, test, deploy) nor a program: give one");
	} else if (nd->program && !(nd->path = find_program(nd->program, b->env->bindir, b->dir))) {
		if (strchr(nd->program, '/'))
			NODE_ERR(b, i, "program '%s' is not an executable file (a path with '/' is relative to %s)",
				 nd->program, b->dir);
		else
			NODE_ERR(b, i, "program '%s' not found beside forge%s%s%s or on PATH: install it, or give its path",
				 nd->program, b->env->bindir ? " (" : "", b->env->bindir ? b->env->bindir : "",
				 b->env->bindir ? ")" : "");
	}
}

/* Edit distance of a and b, capped at 9 (only small ones matter). */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[65], prev;

	if (la > 64 || lb > 64)
		return 9;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int sub = prev + (a[i - 1] != b[j - 1]), best = row[j] + 1;

			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			prev = row[j];
			row[j] = sub < best ? sub : best;
		}
	}
	return row[lb] < 9 ? row[lb] : 9;
}

/* " (did you mean 'x'?)" for the id nearest to an unknown one, when it is
 * near (an edit for every 3 characters, at least 1) and not node `self`'s;
 * else "".  Into hint (96 bytes), which it returns. */
static const char *did_you_mean(char hint[96], const struct graph *g, size_t self, const char *unknown)
{
	int near = (int)strlen(unknown) / 3, best = (near > 1 ? near : 1) + 1;

	hint[0] = '\0';
	for (size_t j = 0; j < g->n; j++) {
		int d = j == self ? 9 : distance(unknown, g->nodes[j].id);

		if (d < best) {
			best = d;
			snprintf(hint, 96, " (did you mean '%.60s'?)", g->nodes[j].id);
		}
	}
	return hint;
}

static void read_needs(struct build *b, size_t i, jv node)
{
	struct graph *g = b->g;
	struct graph_node *nd = &g->nodes[i];
	size_t n;
	char **names = str_array(node, "needs", &n), hint[96];

	nd->needs = xcalloc(n ? n : 1, sizeof *nd->needs);
	for (size_t k = 0; k < n; k++) {
		int j = graph_index(g, names[k]);

		if (j < 0)
			NODE_ERR(b, i, "needs unknown node '%s'%s", names[k], did_you_mean(hint, g, i, names[k]));
		else if ((size_t)j == i)
			NODE_ERR(b, i, "needs itself: to run a node again use retry, to go back use a bounce");
		else
			nd->needs[nd->nneeds++] = (size_t)j;
		free(names[k]);
	}
	free(names);
	g->nedges += nd->nneeds;
}

static void read_retry(struct build *b, size_t i, jv node)
{
	struct graph_node *nd = &b->g->nodes[i];
	jv retry = json_get(node, "retry");

	if (jv_get_kind(retry) == JV_KIND_OBJECT) {
		size_t n;
		char **on = str_array(retry, "on", &n);

		nd->retry_max = (int)json_get_num(retry, "max", 0);
		nd->retry_on = on ? 0 : GRAPH_RETRY_FAILED;
		for (size_t k = 0; k < n; k++) {
			nd->retry_on |= strcmp(on[k], "rejected") == 0 ? GRAPH_RETRY_REJECTED : GRAPH_RETRY_FAILED;
			free(on[k]);
		}
		free(on);
	}
	jv_free(retry);
}

/* bounces.PHASE_WHAT when the configuration has it (malloc'd key), else NULL. */
static char *config_key(const struct build *b, const char *phase, const char *what)
{
	char key[96];

	if (!b->env->cfg || !phase)
		return NULL;
	snprintf(key, sizeof key, "bounces.%s_%s", phase, what);
	return config_has(b->env->cfg, key) ? xstrdup(key) : NULL;
}

static void read_bounce(struct build *b, size_t i, jv node)
{
	struct graph_node *nd = &b->g->nodes[i];
	struct graph_bounce *bo = &nd->bounce;
	jv bounce = json_get(node, "bounce");
	char hint[96];

	if (jv_get_kind(bounce) != JV_KIND_OBJECT) {
		jv_free(bounce);
		return;
	}
	nd->has_bounce = true;
	b->g->nbounces++;
	bo->to_id = xstrdup(json_get_str(bounce, "to"));
	bo->max = -1;
	if (json_has(bounce, "when")) {
		bo->when = condition(b, i, bounce, "when", "bounce when");
		bo->when_from = xstrdup("file");
	} else if ((bo->when_from = config_key(b, nd->phase, "condition"))) {
		bo->when = dup_or_null(config_get_str(b->env->cfg, bo->when_from));
	}
	if (json_has(bounce, "max")) {
		bo->max = (int)json_get_num(bounce, "max", 0);
		bo->max_from = xstrdup("file");
	} else if ((bo->max_from = config_key(b, nd->phase, "max"))) {
		bo->max = (int)config_get_num(b->env->cfg, bo->max_from);
	} else {
		NODE_ERR(b, i, "bounce to '%s' has no bound: give it a max (only a review or test phase "
			 "takes bounces.PHASE_max from the configuration)", bo->to_id);
	}
	int to = graph_index(b->g, bo->to_id);
	if (to < 0)
		NODE_ERR(b, i, "bounce to unknown node '%s'%s", bo->to_id, did_you_mean(hint, b->g, i, bo->to_id));
	else if ((size_t)to == i)
		NODE_ERR(b, i, "bounce to itself: to run a node again use retry");
	bo->to = to < 0 ? i : (size_t)to;
	if (nd->retry_on & GRAPH_RETRY_REJECTED)
		NODE_ERR(b, i, "both a bounce and a retry on 'rejected' answer a rejection: keep one");
	jv_free(bounce);
}

static void read_gate(struct build *b, size_t i, jv node)
{
	struct graph_node *nd = &b->g->nodes[i];
	jv gate = json_get(node, "gate");

	if (jv_get_kind(gate) == JV_KIND_OBJECT) {
		nd->has_gate = true;
		nd->gate.ladder = xstrdup(json_get_str(gate, "ladder"));
		nd->gate.when = condition(b, i, gate, "when", "gate when");
		nd->gate.prompt = dup_or_null(json_get_str(gate, "prompt"));
		if (!ladder_is_point(nd->gate.ladder))
			NODE_ERR(b, i, "gate: '%s' is not a decision point of safety.ladder", nd->gate.ladder);
	}
	jv_free(gate);
}

/* Keys of the state a node's result must not replace. */
static bool reserved_key(const char *key)
{
	/* the record's own, and what the executor writes (nodes, node_runs)
	 * or adds up (usage) there */
	static const char *const keys[] = { "kind", "v", "trace_id", "phase", "status", "task", "bounces",
					    "cost", "budget", "usage", "nodes", "node_runs", NULL };

	for (const char *const *k = keys; *k; k++)
		if (strcmp(*k, key) == 0)
			return true;
	return false;
}

/* Second pass over a node that passed its schema. */
static void read_node(struct build *b, size_t i, jv node)
{
	struct graph_node *nd = &b->g->nodes[i];
	const char *key = json_get_str(node, "result_key");

	check_kind(b, i);
	nd->args = str_array(node, "args", &nd->nargs);
	read_needs(b, i, node);
	nd->when = condition(b, i, node, "when", "when");
	read_retry(b, i, node);
	read_bounce(b, i, node);
	read_gate(b, i, node);
	nd->result_key = xstrdup(key ? key : nd->phase ? pipeline_result_key(nd->phase) : nd->id);
	if (reserved_key(nd->result_key))
		NODE_ERR(b, i, "result_key '%s' is the state's own: choose another", nd->result_key);
	else if (!key && !nd->phase && strchr(nd->result_key, '-'))
		NODE_ERR(b, i, "its id cannot be a result key ('-'): give it a result_key");
}

/* ---- order, cycles, reachability ---------------------------------------- */

/* Kahn's algorithm, taking the first ready node in file order each time. */
/* A min-heap of node indexes. */
static void heap_push(size_t *h, size_t *n, size_t v)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static size_t heap_pop(size_t *h, size_t *n)
{
	size_t top = h[0], v = h[--*n], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
	return top;
}

/* Kahn's order: a node once every node it needs is placed, the lowest
 * index first among those ready (the order the earlier scan gave), in
 * O(n log n + edges) -- the scan was O(n * edges): 22 s for a 1000-node
 * pipeline whose nodes each need all the ones before. */
static void topo_order(struct graph *g)
{
	size_t n = g->n ? g->n : 1, *missing = xcalloc(n, sizeof *missing);
	size_t *first = xcalloc(n + 1, sizeof *first), *users, *heap = xcalloc(n, sizeof *heap), nheap = 0;

	g->order = xcalloc(n, sizeof *g->order);
	/* who needs each node (a need named twice counts twice, as missing does) */
	for (size_t j = 0; j < g->n; j++)
		for (size_t k = 0; k < g->nodes[j].nneeds; k++)
			first[g->nodes[j].needs[k] + 1]++;
	for (size_t i = 0; i < g->n; i++)
		first[i + 1] += first[i];
	users = xcalloc(first[g->n] ? first[g->n] : 1, sizeof *users);
	{
		size_t *at = xcalloc(n, sizeof *at);

		for (size_t j = 0; j < g->n; j++)
			for (size_t k = 0; k < g->nodes[j].nneeds; k++) {
				size_t i = g->nodes[j].needs[k];

				users[first[i] + at[i]++] = j;
			}
		free(at);
	}
	for (size_t i = 0; i < g->n; i++) {
		missing[i] = g->nodes[i].nneeds;
		if (!missing[i])
			heap_push(heap, &nheap, i);
	}
	while (nheap) {
		size_t i = heap_pop(heap, &nheap);

		g->order[g->norder++] = i;
		for (size_t u = first[i]; u < first[i + 1]; u++)
			if (--missing[users[u]] == 0)
				heap_push(heap, &nheap, users[u]);
	}
	free(missing);
	free(first);
	free(users);
	free(heap);
}

/* The cycle through node `start` among the unplaced nodes, as "a needs b,
 * b needs a", into m; false when start is on none. */
static bool cycle_through(const struct graph *g, size_t start, const bool *placed, struct buf *m, bool *on)
{
	size_t *path = xcalloc(g->n + 1, sizeof *path), *next = xcalloc(g->n + 1, sizeof *next);
	bool *seen = xcalloc(g->n, sizeof *seen);
	size_t depth = 0;
	bool found = false;

	path[0] = start;
	seen[start] = true;
	/* depth-first along needs, among the nodes not placed in order */
	while (!found) {
		const struct graph_node *nd = &g->nodes[path[depth]];

		if (next[depth] >= nd->nneeds) {
			if (depth == 0)
				break;
			depth--;
			continue;
		}
		size_t to = nd->needs[next[depth]++];
		if (to == start) {
			found = true;
		} else if (!placed[to] && !seen[to]) {
			seen[to] = true;
			path[++depth] = to;
			next[depth] = 0;
		}
	}
	for (size_t k = 0; found && k <= depth; k++) {
		buf_addf(m, "%s'%s' needs '%s'", k ? ", " : "", g->nodes[path[k]].id,
			 g->nodes[k < depth ? path[k + 1] : start].id);
		on[path[k]] = true;
	}
	free(path);
	free(next);
	free(seen);
	return found;
}

/* Nodes left out of the order are on a cycle, or after one. */
static void check_cycles(struct build *b)
{
	struct graph *g = b->g;
	bool *placed = xcalloc(g->n ? g->n : 1, sizeof *placed), *on = xcalloc(g->n ? g->n : 1, sizeof *on);

	for (size_t k = 0; k < g->norder; k++)
		placed[g->order[k]] = true;
	for (size_t i = 0; i < g->n; i++) {
		struct buf m = BUF_INIT;

		if (!placed[i] && !on[i] && cycle_through(g, i, placed, &m, on))
			NODE_ERR(b, i, "needs go round in a cycle (%s): only a bounce may go back, "
				 "and it needs a max", m.buf);
		buf_release(&m);
	}
	for (size_t i = 0; i < g->n; i++) {
		if (placed[i] || on[i])
			continue;
		const char *via = "";
		for (size_t k = 0; k < g->nodes[i].nneeds; k++)
			if (!placed[g->nodes[i].needs[k]])
				via = g->nodes[g->nodes[i].needs[k]].id;
		NODE_ERR(b, i, "unreachable from the roots: it needs '%s', which waits on a cycle", via);
	}
	free(placed);
	free(on);
}

/* Layers and the ancestor matrix, in topological order. */
static void layers(struct build *b)
{
	struct graph *g = b->g;

	b->words = (g->n + 63) / 64;
	b->anc = xcalloc(g->n ? g->n * b->words : 1, sizeof *b->anc);
	for (size_t k = 0; k < g->norder; k++) {
		struct graph_node *nd = &g->nodes[g->order[k]];
		size_t i = g->order[k];
		uint64_t *row = &b->anc[i * b->words];

		nd->layer = 1;
		for (size_t e = 0; e < nd->nneeds; e++) {
			size_t j = nd->needs[e];
			const uint64_t *of = &b->anc[j * b->words];

			if (g->nodes[j].layer + 1 > nd->layer)
				nd->layer = g->nodes[j].layer + 1;
			row[j / 64] |= (uint64_t)1 << (j % 64);
			for (size_t w = 0; w < b->words; w++)
				row[w] |= of[w];
		}
		if (nd->layer > g->nlayers)
			g->nlayers = nd->layer;
	}
}

/* Bounces go back to a node before them; parallel nodes write apart. */
static void check_order(struct build *b)
{
	struct graph *g = b->g;

	for (size_t i = 0; i < g->n; i++) {
		struct graph_node *nd = &g->nodes[i];

		if (!b->valid[i] || !nd->layer)
			continue;
		if (nd->has_bounce && nd->bounce.to != i && graph_index(g, nd->bounce.to_id) >= 0 &&
		    !anc_has(b, i, nd->bounce.to))
			NODE_ERR(b, i, "bounce to '%s', which is not before it: a bounce goes back to a node "
				 "it needs, directly or not", nd->bounce.to_id);
		for (size_t j = 0; j < i; j++)
			if (b->valid[j] && g->nodes[j].layer && g->nodes[j].result_key &&
			    nd->result_key && strcmp(g->nodes[j].result_key, nd->result_key) == 0 &&
			    !anc_has(b, i, j) && !anc_has(b, j, i)) {
				NODE_ERR(b, i, "result_key '%s' is also written by '%s', which may run at the same "
					 "time: give one of them another result_key", nd->result_key, g->nodes[j].id);
				break;
			}
	}
}

/* Errors in the order of the file: the file's own first, then by node. */
static void sort_errors(struct build *b)
{
	struct graph *g = b->g;

	for (size_t i = 1; i < g->nerrors; i++)
		for (size_t j = i; j > 0 && b->err_pos[j - 1] > b->err_pos[j]; j--) {
			struct graph_error e = g->errors[j];
			size_t p = b->err_pos[j];

			g->errors[j] = g->errors[j - 1];
			b->err_pos[j] = b->err_pos[j - 1];
			g->errors[j - 1] = e;
			b->err_pos[j - 1] = p;
		}
}

/* The top level against the schema (each node is read_nodes' business);
 * true when there are nodes to read. */
static bool check_top(struct build *b, jv doc)
{
	const struct schema *s = schema_get(SCHEMA);
	jv errors;

	if (!s)
		add_error(b, 0, NULL, "%s", forge_last_error());
	if (jv_get_kind(doc) != JV_KIND_OBJECT) {
		add_error(b, 0, NULL, "a pipeline is a JSON object {\"pipeline\", \"version\", \"nodes\"}");
		return false;
	}
	if (s && schema_validate_all(&errors, s, doc) < 0) {
		jv_array_foreach(errors, k, e) {
			add_error(b, 0, NULL, "%s", jv_string_value(e));
			jv_free(e);
		}
	}
	if (s)
		jv_free(errors);
	jv nodes = json_get(doc, "nodes");
	int n = jv_get_kind(nodes) == JV_KIND_ARRAY ? jv_array_length(jv_copy(nodes)) : -1;
	jv_free(nodes);
	if (n == 0)
		add_error(b, 0, NULL, "no nodes: a pipeline needs at least one (see forge pipeline show default)");
	/* past the schema's maxItems (an error already): not read, the
	 * ancestor matrix is n * n bytes */
	return n > 0 && n <= MAX_NODES;
}

int graph_from_json(struct graph **out, jv doc, const char *source, const char *path,
		    const struct graph_env *env)
{
	static const struct graph_env none;
	struct graph *g = xcalloc(1, sizeof *g);
	struct build b = { .g = g, .env = env ? env : &none };

	*out = g;
	g->source = xstrdup(source ? source : "pipeline");
	g->path = dup_or_null(path);
	g->doc = jv_copy(doc);
	b.dir = b.env->base_dir ? xstrdup(b.env->base_dir) : dir_of(path);
	if (check_top(&b, doc)) {
		jv nodes = json_get(doc, "nodes");

		g->name = dup_or_null(json_get_str(doc, "pipeline"));
		g->description = dup_or_null(json_get_str(doc, "description"));
		read_nodes(&b, jv_copy(nodes));
		jv_array_foreach(nodes, i, node) {
			if (b.valid[i])
				read_node(&b, (size_t)i, node);
			jv_free(node);
		}
		jv_free(nodes);
		topo_order(g);
		check_cycles(&b);
		layers(&b);
		check_order(&b);
	}
	jv_free(doc);
	sort_errors(&b);
	free(b.dir);
	free(b.valid);
	free(b.err_pos);
	free(b.anc);
	if (!g->nerrors)
		return 0;
	if (g->errors[0].node)
		return forge_error("%s: node '%s': %s", g->source, g->errors[0].node, g->errors[0].message);
	return forge_error("%s: %s", g->source, g->errors[0].message);
}

/* ---- questions a supervisor asks ------------------------------------------ */

int graph_index(const struct graph *g, const char *id)
{
	for (size_t i = 0; id && i < g->n; i++)
		if (strcmp(g->nodes[i].id, id) == 0)
			return (int)i;
	return -1;
}

size_t graph_ready(const struct graph *g, const enum node_status *st, size_t *ready)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n; i++) {
		bool ok = st[i] == NODE_PENDING;

		for (size_t k = 0; ok && k < g->nodes[i].nneeds; k++) {
			enum node_status s = st[g->nodes[i].needs[k]];

			ok = s == NODE_DONE || s == NODE_SKIPPED;
		}
		if (ok)
			ready[n++] = i;
	}
	return n;
}

bool graph_is_complete(const struct graph *g, const enum node_status *st)
{
	for (size_t i = 0; i < g->n; i++)
		if (st[i] != NODE_DONE && st[i] != NODE_SKIPPED)
			return false;
	return true;
}

bool graph_needs(const struct graph *g, size_t a, size_t b)
{
	bool *seen = xcalloc(g->n ? g->n : 1, sizeof *seen);
	size_t *stack = xcalloc(g->n ? g->n : 1, sizeof *stack), top = 0;
	bool found = false;

	stack[top++] = a;
	seen[a] = true;
	while (top && !found) {
		const struct graph_node *nd = &g->nodes[stack[--top]];

		for (size_t k = 0; k < nd->nneeds && !found; k++) {
			size_t j = nd->needs[k];

			found = j == b;
			if (!seen[j]) {
				seen[j] = true;
				stack[top++] = j;
			}
		}
	}
	free(seen);
	free(stack);
	return found;
}

size_t graph_path_to_root(const struct graph *g, size_t i, size_t *out)
{
	size_t n = 0;

	for (size_t k = 0; k < g->norder; k++)
		if (g->order[k] != i && graph_needs(g, i, g->order[k]))
			out[n++] = g->order[k];
	return n;
}

size_t graph_rerun(const struct graph *g, size_t to, size_t *out)
{
	size_t n = 0;

	for (size_t k = 0; k < g->norder; k++)
		if (g->order[k] == to || graph_needs(g, g->order[k], to))
			out[n++] = g->order[k];
	return n;
}

/* ---- as JSON --------------------------------------------------------------- */

static jv str_list(char *const *s, size_t n)
{
	jv a = jv_array();

	for (size_t i = 0; i < n; i++)
		a = jv_array_append(a, jv_string(s[i]));
	return a;
}

static jv node_json(const struct graph *g, const struct graph_node *nd)
{
	jv o = json_set(jv_object(), "id", jv_string(nd->id)), needs = jv_array();

	o = nd->phase ? json_set(o, "phase", jv_string(nd->phase)) : json_set(o, "program", json_str_or_null(nd->program));
	if (nd->program)
		o = json_set(o, "path", json_str_or_null(nd->path));
	o = json_set(o, "args", str_list(nd->args, nd->nargs));
	for (size_t k = 0; k < nd->nneeds; k++)
		needs = jv_array_append(needs, jv_string(g->nodes[nd->needs[k]].id));
	o = json_set(json_set(o, "needs", needs), "layer", jv_number(nd->layer));
	o = json_set(json_set(o, "result_key", json_str_or_null(nd->result_key)), "when", json_str_or_null(nd->when));
	if (nd->retry_max) {
		jv on = jv_array();
		if (nd->retry_on & GRAPH_RETRY_FAILED)
			on = jv_array_append(on, jv_string("failed"));
		if (nd->retry_on & GRAPH_RETRY_REJECTED)
			on = jv_array_append(on, jv_string("rejected"));
		o = json_set(o, "retry", json_set(json_set(jv_object(), "max", jv_number(nd->retry_max)), "on", on));
	}
	if (nd->has_bounce) {
		const struct graph_bounce *bo = &nd->bounce;
		jv bj = json_set(json_set(jv_object(), "to", jv_string(bo->to_id)), "when", json_str_or_null(bo->when));

		bj = json_set(json_set(bj, "when_from", json_str_or_null(bo->when_from)), "max",
			      bo->max >= 0 ? jv_number(bo->max) : jv_null());
		o = json_set(o, "bounce", json_set(bj, "max_from", json_str_or_null(bo->max_from)));
	}
	if (nd->has_gate) {
		jv gj = json_set(json_set(jv_object(), "ladder", jv_string(nd->gate.ladder)), "when",
				 json_str_or_null(nd->gate.when));
		o = json_set(o, "gate", json_set(gj, "prompt", json_str_or_null(nd->gate.prompt)));
	}
	return o;
}

static jv edge(const char *from, const char *to, const char *kind)
{
	return json_set(json_set(json_set(jv_object(), "from", jv_string(from)), "to", jv_string(to)), "kind",
			jv_string(kind));
}

jv graph_to_json(const struct graph *g)
{
	jv nodes = jv_array(), edges = jv_array();

	for (size_t i = 0; i < g->n; i++) {
		const struct graph_node *nd = &g->nodes[i];

		nodes = jv_array_append(nodes, node_json(g, nd));
		for (size_t k = 0; k < nd->nneeds; k++)
			edges = jv_array_append(edges, edge(g->nodes[nd->needs[k]].id, nd->id, "needs"));
		if (nd->has_bounce && nd->bounce.to_id)
			edges = jv_array_append(edges, edge(nd->id, nd->bounce.to_id, "bounce"));
	}
	jv o = json_set(jv_object(), "pipeline", json_str_or_null(g->name));
	o = json_set(json_set(o, "description", json_str_or_null(g->description)), "source", jv_string(g->source));
	return json_set(json_set(o, "nodes", nodes), "edges", edges);
}

jv graph_errors_json(const struct graph *g)
{
	jv a = jv_array();

	for (size_t i = 0; i < g->nerrors; i++)
		a = jv_array_append(a, json_set(json_set(jv_object(), "node", json_str_or_null(g->errors[i].node)),
						"message", jv_string(g->errors[i].message)));
	return a;
}

void graph_free(struct graph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		struct graph_node *nd = &g->nodes[i];

		free(nd->id);
		free(nd->phase);
		free(nd->program);
		free(nd->path);
		for (size_t k = 0; k < nd->nargs; k++)
			free(nd->args[k]);
		free(nd->args);
		free(nd->needs);
		free(nd->result_key);
		free(nd->when);
		free(nd->bounce.to_id);
		free(nd->bounce.when);
		free(nd->bounce.when_from);
		free(nd->bounce.max_from);
		free(nd->gate.ladder);
		free(nd->gate.when);
		free(nd->gate.prompt);
	}
	for (size_t i = 0; i < g->nerrors; i++) {
		free(g->errors[i].node);
		free(g->errors[i].message);
	}
	free(g->errors);
	free(g->nodes);
	free(g->order);
	free(g->name);
	free(g->description);
	free(g->source);
	free(g->path);
	jv_free(g->doc);
	free(g);
}
