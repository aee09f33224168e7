/*
 * graph.h - a pipeline as data (schemas/pipeline.schema.json; seed 004 §2):
 * its nodes and edges loaded into a C structure, validated, and the
 * questions a supervisor asks of it (which nodes are ready, is it complete,
 * what came before a node).
 *
 * A node is a built-in phase or a program that speaks the stream contract.
 * Its `needs` are its incoming edges: a node is ready when it is pending and
 * every node it needs is done or skipped (a skipped node - its `when` did
 * not hold - counts as finished; the nodes after it decide for themselves
 * with their own `when`), so nodes that are ready together may run at the
 * same time.  A bounce is the one edge that goes backwards: when the node
 * ends rejected, back to an earlier node (one it needs, directly or not),
 * which runs again with every node after it (graph_rerun), at most max
 * times.  A bounce's condition and bound default to the configuration's
 * bounces.PHASE_condition and bounces.PHASE_max for a phase node that has
 * them (review, test), so the defaults file stays the only source of
 * defaults; any other bounce must give its max.
 *
 * Validation lists every error it finds, each naming its node when it has
 * one (graph->errors, in the order of the file): the schema, ids unique,
 * phase or program (not both), a program found (a bare name beside forge,
 * env->bindir, then on PATH; a name with '/' relative to the file's
 * directory), needs that name known nodes, no cycle through needs (and the
 * nodes after a cycle are unreachable from the roots), a bounce to a node
 * before it and with a bound, jq conditions that compile, no two nodes that
 * may run at the same time writing the same result key, at least one node.
 *
 * Ownership: struct graph and everything in it belongs to the graph
 * (graph_free).  Node indices are positions in graph->nodes (file order).
 */
#ifndef FORGE_GRAPH_H
#define FORGE_GRAPH_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

struct config;

/* A node's status during a run (seed 004's NodeStatus). */
enum node_status {
	NODE_PENDING,   /* not started */
	NODE_RUNNING,
	NODE_DONE,      /* ended ok */
	NODE_BLOCKED,   /* said no; waits for a bounce, a retry or a human */
	NODE_FAILED,    /* cannot go on */
	NODE_SKIPPED,   /* its `when` did not hold */
	NODE_NSTATUS
};

/* "pending", "running", "done", "blocked", "failed", "skipped"; static. */
const char *node_status_name(enum node_status s);
/* The status called name; NODE_NSTATUS when none is. */
enum node_status node_status_of(const char *name);

/* retry.on */
enum { GRAPH_RETRY_FAILED = 1 << 0, GRAPH_RETRY_REJECTED = 1 << 1 };

struct graph_bounce {
	size_t to;              /* node index (valid when the graph has no errors) */
	char *to_id;
	char *when;             /* effective condition; NULL: every rejection bounces */
	char *when_from;        /* "file", or the configuration key it came from; NULL with when */
	int max;                /* effective bound (-1: none, an error) */
	char *max_from;         /* "file" or the configuration key */
};

struct graph_gate {
	char *ladder;           /* decision point of safety.ladder (gates.h) */
	char *when;             /* NULL: always */
	char *prompt;           /* NULL: none given */
};

struct graph_node {
	char *id;               /* "#N" (1-based position) when the file gives none */
	char *phase;            /* a built-in phase, or NULL */
	char *program;          /* as written, or NULL */
	char *path;             /* the program found (an absolute path), or NULL */
	char **args;
	size_t nargs;
	size_t *needs;          /* indices of the known nodes it needs */
	size_t nneeds;
	char *result_key;       /* effective */
	char *when;             /* NULL: always runs */
	int retry_max;          /* 0: no retry */
	unsigned retry_on;      /* GRAPH_RETRY_* */
	bool has_bounce, has_gate;
	struct graph_bounce bounce;
	struct graph_gate gate;
	int layer;              /* 1 for a root, 1 + the deepest need's; 0 on or after a cycle */
};

struct graph_error {
	char *node;             /* the node's id, or NULL for the file as a whole */
	char *message;          /* "needs unknown node 'y'" */
};

struct graph {
	char *name;             /* "pipeline", or NULL when the file has none */
	char *description;
	char *source;           /* what messages name: the path, or "NAME (built-in)" */
	char *path;             /* the file, or NULL for a built-in pipeline */
	struct graph_node *nodes;
	size_t n;
	size_t *order;          /* topological order (file order among equals); norder <= n */
	size_t norder;
	int nlayers;
	size_t nedges;          /* needs edges between known nodes */
	size_t nbounces;
	struct graph_error *errors;
	size_t nerrors;
	jv doc;                 /* the document as given (what a run records, so a resume
				 * runs the same pipeline); jv_null() when none was read */
	bool project;           /* the repository's file (graph_load): its nodes' args are
				 * not the person's, and may not pass what a human decides
				 * (app/supervise_graph.c); false from graph_from_json() */
};

/* What validation looks at besides the file.  Every field may be NULL. */
struct graph_env {
	const struct config *cfg;   /* bounce defaults (bounces.*); NULL: the file's alone */
	const char *bindir;         /* forge's own programs: first place a program is looked for */
	const char *base_dir;       /* relative program paths; NULL: the file's directory, or "." */
};

/*
 * Build and validate the pipeline `doc` (consumed) from `source` (a path, or
 * a label, copied).  *out is always set (graph_free it), with every error in
 * (*out)->errors.  Returns 0 when there is none, else -1 with the first as
 * forge_error ("node 'x': needs unknown node 'y'").
 */
int graph_from_json(struct graph **out, jv doc, const char *source, const char *path,
		    const struct graph_env *env);

/*
 * Find the pipeline `what` and load it: a path when it contains '/' or ends
 * in ".json"; otherwise a name: <repo>/.forge/pipelines/NAME.json (repo may
 * be NULL), then the built-in pipelines/NAME.json.  A missing file, an
 * unknown name or malformed JSON is one error of the graph (node NULL).
 * (*out)->project is set for the repository's own file: the one found by
 * name, or a path inside repo.  Same result as graph_from_json().
 */
int graph_load(struct graph **out, const char *what, const char *repo, const struct graph_env *env);

/*
 * The pipelines graph_load() finds by name, built-in first, then the
 * project's (by name): an array of {"name","where":"built-in"|"project",
 * "path" (project only),"overridden" (a project file of the same name is
 * found first),"description"}.  A project file that cannot be read or
 * parsed has "error" instead of a description.  New reference.
 */
jv graph_list(const char *repo);

/* The index of node id, or -1. */
int graph_index(const struct graph *g, const char *id);

/*
 * The nodes ready to run given each node's status (st[i] for node i):
 * pending, and every node they need done or skipped.  Their indices go to
 * ready (room for g->n) in file order; returns how many.
 */
size_t graph_ready(const struct graph *g, const enum node_status *st, size_t *ready);

/* True when every node is done or skipped (seed 004's is_complete). */
bool graph_is_complete(const struct graph *g, const enum node_status *st);

/*
 * Every node that node i needs, directly or not (its context: seed 004's
 * get_path_to_root), in topological order, into out (room for g->n);
 * returns how many.
 */
size_t graph_path_to_root(const struct graph *g, size_t i, size_t *out);

/*
 * What a bounce to node `to` runs again: `to` and every node that needs it,
 * directly or not, in topological order, into out (room for g->n); returns
 * how many.
 */
size_t graph_rerun(const struct graph *g, size_t to, size_t *out);

/* True when node a needs node b, directly or not. */
bool graph_needs(const struct graph *g, size_t a, size_t b);

/*
 * The graph as JSON: {"pipeline","description","source","nodes":[{"id",
 * "phase"|"program","path","args","needs","layer","result_key","when",
 * "retry","bounce":{"to","when","when_from","max","max_from"},"gate"}],
 * "edges":[{"from","to","kind":"needs"|"bounce"}]}; an edge goes the way
 * the work flows (from the needed node).  New reference.
 */
jv graph_to_json(const struct graph *g);

/* The errors as [{"node","message"}].  New reference. */
jv graph_errors_json(const struct graph *g);

void graph_free(struct graph *g);

/*
 * Merge the states that nodes run at the same time returned, each from the
 * same input `base` (borrowed): returned[0..n) (borrowed; a jv that is not
 * an object is left out), names[i] naming who returned it in messages.
 * A top-level key no node changed keeps base's value; a key one node
 * changed (set, replaced or removed) takes that node's value; a key two
 * nodes changed to different values is a conflict.  The accumulators
 * (cost, budget, usage) add up: each number in them is base's plus every
 * node's change to it (other values in them merge as keys do).  phase and
 * status are the last returned state's.  *out is the merged state (new
 * reference) and 0, or -1 with why ("key 'x' was changed by both 'a' and
 * 'b'") and *out jv_null().
 */
int graph_merge_states(jv *out, jv base, const jv *returned, const char *const *names, size_t n,
		       char *why, size_t whylen);

#endif
