/*
 * config.h - Forge's layered configuration.
 *
 * Layers, lowest first; a later layer overrides an earlier one key by key
 * (objects merge recursively, everything else - arrays too - is replaced):
 *   1. default   built-in defaults, schemas/config.defaults.json (embedded)
 *   2. user      $XDG_CONFIG_HOME/forge/config.json when XDG_CONFIG_HOME is
 *                an absolute path, else $HOME/.config/forge/config.json
 *   3. project   <repo>/.forge/config.json
 *   4. file      --config FILE (when given)
 *   5. env       FORGE_* variables (table below and in config.c)
 *   6. flags     the object given by the program
 * A missing user or project file is not an error; a missing --config file
 * is.  Each layer on its own and then the merged result are validated
 * against schemas/config.schema.json; an error names the file (or the
 * variable, or "command line") and the JSON path:
 *   "/r/.forge/config.json: .safety.automation_level: 7 is greater than ..."
 * Keys beginning with '$' ("$comment" anywhere, "$schema" at the top) are
 * notes for the reader and editors; they are validated and then dropped, so
 * they never appear in the effective configuration or in config_explain().
 *
 * The project layer is the repository's, often someone else's: it may not
 * choose where a request carrying the person's API key goes, nor widen
 * what the worktree's commands and the model's tools may do, nor let more
 * pass without a person, nor let a run spend or take more.  Unless the
 * person's own layers (user, file, env, flags) set trust_project to true,
 * config_load() drops from it every value of these keys that differs from
 * what the layers below it (user, default) make and widens it:
 *   llm.base_url, llm.phases.*.base_url, llm.embeddings.base_url  any URL (null stays)
 *   trust_project, mcp.trust_project, sandbox.read_anywhere        true
 *   sandbox.landlock, .namespaces (off<auto<require), .network
 *     (allow<auto<deny)                                            a weaker mode
 *   sandbox.command_timeout_s, .output_cap_bytes, .limits.*        a larger bound (0: none)
 *   sandbox.read_paths, .writable, .env                            an item not in the list below
 *   sandbox.deny, .ask, .deny_extra, .ask_extra,
 *     tools.permissions.*.deny, .ask                               a missing item of the list below
 *   tools.permissions.P.allow                                      an item not in P's (else
 *                                                                  default's) list below, if any
 *   safety.automation_level, the timeouts, budgets and caps
 *     (llm.max_tokens, safety.cost.*, safety.time_s.*, ...: the
 *     table in config.c)                                           a larger number (a null or
 *                                                                  missing one: its fallback's)
 *   safety.ladder                                                  a rule below the same row's
 *                                                                  (auto < ask < human)
 *   gates                                                          a gate below left out or less
 *                                                                  strict (another condition,
 *                                                                  phase, lower auto level)
 *   llm.pricing.MODEL.*                                            a price below the one below
 *                                                                  (else schemas/pricing.json),
 *                                                                  or any for a model with none:
 *                                                                  the whole entry is dropped
 *   deploy.environment                                             another name when the one
 *                                                                  below is "production"
 *   deploy.strategy (branch < merge < push, command)               a further one
 *   deploy.canary.*                                                a missing step of the list below
 * A value a later layer (file, env, flags) replaces is left alone.  What
 * was dropped: config_ignored().  (MCP servers the project defines are
 * refused where they start, app/toolset.c, under the same trust.)
 */
#ifndef FORGE_CONFIG_H
#define FORGE_CONFIG_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

struct config;

struct config_sources {
	const char *repo;        /* repository root for .forge/config.json; may be NULL */
	const char *file;        /* --config FILE; may be NULL */
	jv flags;                /* flag overrides as an object (consumed); jv_null() for none */
};

/* Load and merge every layer.  Consumes src->flags (also on failure; it is
 * left as jv_null()).  -1 with a message naming the file, variable and path
 * at fault. */
int config_load(struct config **out, struct config_sources *src);

/*
 * A value that passed validation once is not validated again while the
 * schema and the program are the same: config_load keeps the keys of the
 * values that passed (a 128-bit hash of the schema, the program's GNU
 * build-id and the value's JSON; no build-id, no keys) in
 * $XDG_CACHE_HOME/forge/config-valid when XDG_CACHE_HOME is absolute, else
 * $HOME/.cache/forge/config-valid (the last 256; best effort: a file that
 * cannot be read or written only costs the validation).  Values that fail
 * are never kept, so their errors stay as they are.  How many values this
 * process validated in full (for tests).
 */
int config_full_validations(void);
void config_free(struct config *cfg);

/*
 * A process pays for the configuration it reads: config_load parses and
 * checks the user, project, --config, environment and flag layers (so
 * their errors come at load, as ever) but keeps the built-in defaults as
 * text; a top-level section ("llm", "memory", ...) is parsed and merged
 * across the layers the first time a path under it is read, with the same
 * result as merging everything.  What needs the whole configuration
 * (config_effective, config_explain, config_get of "", and validating the
 * merged result when the cache does not know it) builds it whole.  So the
 * queries below, though they take a const configuration, may parse: a
 * configuration is used from one thread at a time (as its jv values
 * already require).  For tests: how many sections of the defaults this
 * configuration has parsed (each at most once: building the whole parses
 * those not read yet), and whether it has built the whole.
 */
void config_parse_counts(const struct config *cfg, int *sections, bool *whole);

/*
 * Paths are dotted keys ("llm.model"); a segment of digits indexes an array
 * ("gates.0.id"); "" is the whole configuration.  Keys that contain a '.'
 * cannot be addressed.
 */

/*
 * The length of a model's name without a date suffix (-YYYYMMDD or
 * -YYYY-MM-DD): the name a price given for the undated model applies to
 * (llm.pricing, as lib/llm finds prices, and the project guard on it).
 */
size_t config_model_undated_len(const char *name);

/* The value at path as a new reference, or jv_null() when absent. */
jv config_get(const struct config *cfg, const char *path);
/* True when path exists (also when its value is null). */
bool config_has(const struct config *cfg, const char *path);
/*
 * Typed accessors.  The defaults layer (schemas/config.defaults.json) is the
 * only source of defaults: every number and boolean key the code reads is
 * in it (a key missing there is a programming error, caught by
 * tests/unit/test_config.c, which checks the sources), so callers pass no
 * fallback.  Optional keys default to null there.
 */
/* Borrowed from cfg; NULL when absent, null or not a string (unset). */
const char *config_get_str(const struct config *cfg, const char *path);
/* The number at path; 0 when null (an optional key left unset). */
double config_get_num(const struct config *cfg, const char *path);
/* The boolean at path; false when null. */
bool config_get_bool(const struct config *cfg, const char *path);

/*
 * The project layer's values config_load() dropped (above): an array of
 * {"path":"llm.base_url","source":"/r/.forge/config.json"} sorted by path;
 * empty when none (new reference).  The programs say so
 * on stderr (app/cli.c), forge run in a run.config_ignored event.
 */
jv config_ignored(const struct config *cfg);

/*
 * Whether the repository giving value (borrowed) for the dotted path would
 * loosen what cfg's effective value there allows, by the rules above; false
 * for a path they do not name.  For what a repository gives other than in
 * its configuration file: a project pipeline's node args (app/supervise_graph.c).
 */
bool config_project_widens(const struct config *cfg, const char *path, jv value);

/*
 * The object one layer (default is not one: "user", "project", "file",
 * "env", "flags") contributed, as merged (notes dropped; the project's
 * without what config_ignored() lists); jv_null() when cfg has no such
 * layer.  New reference.  What forge run records of the person's own
 * layers for the run (file and flags), so that a resume goes on under them.
 */
jv config_layer_value(const struct config *cfg, const char *name);

/* The whole effective configuration (new reference). */
jv config_effective(const struct config *cfg);

/*
 * For every leaf value, which layer set it: an array of
 * {"path":"llm.model","value":…,"layer":"project","source":"/repo/.forge/config.json"}
 * sorted by path.  A leaf is any value that is not an object, and an empty
 * object; arrays are leaves because a layer replaces them whole.  layer is
 * default|user|project|file|env|flags; source is the file's path,
 * "built-in", the variable's name or "command line".
 */
jv config_explain(const struct config *cfg);

/*
 * config_explain()'s entry for one dotted path without building the list:
 * the layer that set the leaf and its source (borrowed from cfg).  -1 when
 * path is not a leaf of the effective configuration.
 */
int config_leaf_layer(const struct config *cfg, const char *path, const char **layer,
		      const char **source);

/*
 * The files config_load() would read for src, in layer order, as an array
 * of {"layer":"user","path":"…","exists":true}; a layer with no possible
 * file (no HOME, no repo, no --config) is left out.  Borrows src.
 */
jv config_files(const struct config_sources *src);

/* The environment layer's variables (for --help). */
struct config_env_var {
	const char *name;        /* "FORGE_MODEL" */
	const char *path;        /* "llm.model" */
	bool number;             /* parsed as a number, else taken as a string */
};
/* Borrowed, static; ends with a {NULL} entry.  An empty variable counts as
 * unset. */
const struct config_env_var *config_env_vars(void);

/*
 * Set path in the flags object *flags (jv_null() starts a new one) to value;
 * consumes value.  -1 with a message when path is empty or crosses a value
 * that is not an object.
 */
int config_flag_set(jv *flags, const char *path, jv value);

/*
 * Parse "PATH=VALUE" as given to --set: VALUE is taken as JSON when it
 * parses as JSON and as a plain string otherwise (so --set llm.model=x and
 * --set safety.automation_level=2 both do what they say).
 */
int config_flag_assign(jv *flags, const char *assignment);

/*
 * The user layer's file ($XDG_CONFIG_HOME/forge/config.json, else
 * $HOME/.config/forge/config.json; NULL when neither is set) and the
 * project layer's (<repo>/.forge/config.json).  malloc'd.
 */
char *config_user_file(void);
char *config_project_file(const char *repo);

/*
 * Check one layer as config_load() checks a file: against the schema, and
 * no NUL character in a string.  Borrows layer.  -1 with the schema's
 * message prefixed with source ("/r/.forge/config.json: .llm.x: …").
 */
int config_layer_check(jv layer, const char *source);

/*
 * Writing configuration files (config_file.c).
 * config_make_parent: mkdir -p of path's directory (0755).
 * (The file is written with buf_replace_file(), core/buf.h.)
 * config_file_set: set key (dotted, as config_flag_set()) to value
 * (consumed) in the file at path (created when missing, its parent too),
 * after checking the whole file as a layer (config_layer_check()); written
 * indented.  0, CONFIG_FILE_BAD (the file is not a JSON object, or the key
 * or the result is invalid: nothing written) or CONFIG_FILE_UNWRITTEN (it
 * could not be written), with forge_error().
 */
enum { CONFIG_FILE_BAD = -1, CONFIG_FILE_UNWRITTEN = -2 };
int config_make_parent(const char *path);
int config_file_set(const char *path, const char *key, jv value);

#endif
