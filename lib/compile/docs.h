/*
 * docs.h - the documents `forge compile` makes, stored and versioned (issue
 * 16 part C): table compile_docs of schemas/sql/010-compile-docs.sql, and a
 * copy of the newest of each kind in the project, <root>/.forge/compile/KIND.json,
 * so a project carries its spec: in a run, <root> is the run's worktree,
 * and the stages' commits carry the files (app/stage_land.c).
 *
 * A document belongs to a project (its repository root, as given: callers
 * pass the real path) and has a kind (the stage's result key: intent,
 * flows, contracts, rules, db_schema, delta, test_suite, …).  Each time a
 * stage makes one it is appended as the kind's next version (1, 2, …) with
 * the trace of the run; rows are never updated or deleted.
 *
 * Conventions (forge.h): 0 on success, -1 after forge_error(); output
 * parameters first; jv arguments are borrowed, jv returned through out are
 * the caller's.
 */
#ifndef FORGE_DOCS_H
#define FORGE_DOCS_H

#include <jv.h>

struct store;

/* The kinds of document, in the order the stages make them (NULL-terminated). */
extern const char *const docs_kinds[];

/*
 * Append doc (an object) as the next version of (project, kind), in one
 * BEGIN IMMEDIATE transaction.  *out_version gets its number.  A document
 * equal to the newest version is not appended again: *out_version is that
 * version's.  trace may be NULL.
 */
int docs_append(int *out_version, struct store *st, const char *project, const char *kind, const char *trace,
		jv doc);

/*
 * Version `version` of (project, kind), or the newest when version is 0:
 * *out is {kind, version, trace_id, created_at, doc}, or jv_null() when
 * there is none.
 */
int docs_get(jv *out, struct store *st, const char *project, const char *kind, int version);

/* Every document of project, by kind (in docs_kinds order, then others by
 * name) and version: [{kind, version, trace_id, created_at}]. */
int docs_list(jv *out, struct store *st, const char *project);

/* Write doc as <root>/.forge/compile/KIND.json (pretty, replacing it;
 * the directories are made). */
int docs_write_file(const char *root, const char *kind, jv doc);

/* Every document state holds (each docs_kinds key whose value is an
 * object; state borrowed) written by docs_write_file(): what a stage's
 * commit carries, its own document included. */
int docs_write_files(const char *root, jv state);

/* <root>/.forge/compile/KIND.json: *out the document, or jv_null() when
 * there is no such file; -1 when it exists but is not a JSON object. */
int docs_read_file(jv *out, const char *root, const char *kind);

#endif
