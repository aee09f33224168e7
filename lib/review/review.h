/*
 * review.h - forge-review's layers and synthesis (DESIGN.md §3, seed 000
 * §7.3): static analysis (review_lint.c), security (review_secrets.c: secrets
 * and built-in insecure patterns; review_scan.c: external scanners), the AI
 * layer (review_ai.c) and synthesis (review.c: fingerprints, dedupe, risk,
 * decision).  SARIF output is sarif.h.
 *
 * A finding is a jv object in the state's form (state.schema.json
 * $defs/finding) plus "fingerprint":
 *   {"layer":"static"|"security"|"ai","severity":"info"|"warning"|"error"|
 *    "critical","category":"style"|"security"|"correctness"|"performance",
 *    "rule","message","file","line","confidence","fixable","fix","fingerprint"}
 * Every finding a layer returns is on a line the diff added (the layers map
 * their tools' file:line through the diff and drop the rest).
 *
 * Ownership: jv arguments follow json.h (consumed unless "borrows"); the
 * diff and config are borrowed.  Functions return 0, or -1 after
 * forge_error().  Nothing here prints.
 */
#ifndef FORGE_REVIEW_H
#define FORGE_REVIEW_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

#include "data/risk.h"

struct config;
struct diff;
struct llm_client;
struct llm_response;

/* What a review runs on.  Set the borrowed inputs, then review_prepare(). */
struct review_ctx {
	const struct diff *diff;        /* borrowed */
	const struct config *cfg;       /* borrowed; may be NULL */
	const char *root;               /* the directory holding the post-image files
	                                   (worktree, repository or cwd); borrowed */
	const char *commit;             /* post-image from this commit (read with libgit2), or NULL */
	/* Why the post-image cannot be read here (a run's worktree gone, its
	 * commits not in this repository), or NULL: review_prepare() then
	 * skips each file it would have copied with this reason, and no
	 * tools.lint_command runs (root is no tree of the change's). */
	const char *unreadable;
	long timeout_ms;                /* per tool; 0 = 120000 */
	/* Events (type, payload consumed); may be NULL. */
	void (*emit)(void *payload, const char *type, jv data);
	void *emit_payload;
	/* Filled by review_prepare(): */
	char *workdir;                  /* temp dir with a copy of each checked file (owned) */
	jv checked;                     /* paths copied there (array of strings, owned) */
	/* Filled by review_lint() and review_scan(): the tools that would have
	 * run on the checked files but are not installed,
	 * [{"tool":"ruff","layer":"static","language":"python"}, …] (owned;
	 * null or invalid, as from `= {0}`, until the first). */
	jv missing;
};

/* Pass one event to ctx->emit (consumes data; dropped when emit is NULL). */
void review_emit(struct review_ctx *ctx, const char *type, jv data);

/* Copy the post-image of each text file the diff adds to or changes into a
 * temporary directory, after checking that its content agrees with the
 * diff (every added and context line at its number); a file that does not
 * agree, or cannot be read (ctx->unreadable: none can), is left out with a
 * review.file_skipped event.  A symbolic link the diff adds or changes
 * (mode 120000) is no file to lint: left out with a review.symlink_skipped
 * event {file, target}.
 * Linters then run on the copy, so their line numbers are the diff's. */
int review_prepare(struct review_ctx *ctx);
/*
 * A diff whose paths are relative to the directory `prefix` of root (a
 * path of it, no trailing '/'; git diff --relative, or diff.relative set,
 * run in that directory): when no file's post-image at root/PATH agrees
 * with the diff (review_prepare()'s check) and one at root/prefix/PATH
 * does, every path of d (path, old_path, the omitted ones) is made
 * root's, prefix/PATH, and 1 is returned; 0 when not (d unchanged: a
 * diff of root's paths, or one this cannot tell, having no added line).
 */
int review_diff_relative(struct diff *d, const char *root, const char *prefix);
/* Remove the temporary directory and free what prepare made. */
void review_ctx_release(struct review_ctx *ctx);

/* A new finding with the required fields; file may be NULL, line <= 0 for
 * none.  confidence 1, fixable false. */
jv review_finding(const char *layer, const char *severity, const char *category,
		  const char *rule, const char *file, int line, const char *message);

/* The absolute path of program `name` found on $PATH (malloc'd), or NULL. */
char *review_which(const char *name);

/* A tool of layer (static|security) for language that is not installed:
 * a review.tool_skipped event (reason "not installed") and an entry in
 * ctx->missing. */
void review_tool_missing(struct review_ctx *ctx, const char *tool, const char *layer,
			 const char *language);

/* ---- layer 1: static (review_lint.c) ------------------------------------ */

/*
 * The project's lint command (config tools.lint_command, run in ctx->root,
 * its output read as "file:line[:col]: [severity:] message" lines), else the
 * linters for the diff's languages that are installed: cppcheck (C/C++),
 * shellcheck -f json1 (shell; its security-relevant codes are reported as
 * layer security), clang-tidy (C/C++), ruff or flake8 (Python), eslint
 * (JavaScript/TypeScript).  *out: the findings on added lines.  A linter
 * that is missing is skipped with review_tool_missing() - except ruff
 * when flake8 checked the Python files instead.  With ctx->unreadable the
 * lint command is not run (a review.tool_skipped event with that reason).
 */
int review_lint(jv *out, struct review_ctx *ctx);
/* Whether review_lint() runs a command in ctx->root (tools.lint_command;
 * the detected linters and the scanners run on the copy): what it leaves
 * there is the caller's to take out (a run's worktree: app/phase.h,
 * phase_command_before). */
bool review_lint_in_root(const struct review_ctx *ctx);

/* Run a linter or scanner (argv[0] a path) in dir under the sandbox with
 * ctx->cfg's policy (sandbox_job.h), stdout and stderr merged, 4 MiB kept,
 * ctx->timeout_ms.  As sandbox_job_run(): *r always initialised.  In
 * ctx->workdir, unless review.tool_cache is false, a run of the same
 * command on the same files is taken from the tool cache
 * (review/toolcache.h): *cached (may be NULL) says so, r->exit_code and
 * r->out are the kept ones. */
struct proc_result;
struct buf;
int review_run_tool(struct proc_result *r, bool *cached, struct review_ctx *ctx, const char *const *argv,
		    const char *dir);

/* Why a tool's run failed, appended to why: "was killed by signal N", or
 * "failed (exit N[, command not found | , not executable | , killed by
 * signal N-128]: FIRST LINE)"
 * with the first line of its output. */
void review_tool_failure(struct buf *why, const struct proc_result *r);

/* A forge/not-reviewed warning (layer "static" or "security") for each of
 * files[0..nf) that tool did not check: "not NOT_DONE: TOOL WHY; review
 * the file yourself" ("not linted: cppcheck was killed by signal 11; …").
 * Appends to *acc (owned). */
void review_not_reviewed(jv *acc, const char *layer, const char *not_done, const char *tool, const char **files,
			 size_t nf, const char *why);

/* One review.tool_ran event for a tool that ran over `files` files:
 * {"tool", ["failed": true, "error": failure,] "files", "exit_code",
 * "findings", ["cached": true]} (a run that timed out is a
 * review.tool_skipped).  failure is NULL for
 * a run whose output was read (findings counted), else why it failed
 * (review_tool_failure's text; findings is then reported as 0). */
void review_tool_ran(struct review_ctx *ctx, const char *tool, int files, int exit_code, int findings,
		     bool cached, const char *failure);

/* Append files[0..nf) to argv from argv[*a] on (*a advanced), each name
 * that starts with '-' as "./-name": a linter or scanner took it for an
 * option otherwise and checked nothing (the parsers strip "./").  Those
 * copies are malloc'd into dotted[] (room for nf); returns how many, for
 * the caller to free after the run.  The other names are borrowed. */
size_t review_file_args(const char **argv, size_t *a, const char *const *files, size_t nf, char **dotted);

/* Parsers, exposed for the unit tests.  Each appends to *acc (an array)
 * the findings whose file:line is an added line of d; tool names the rule
 * prefix ("cppcheck").  Borrows everything. */
void review_parse_gcc(jv *acc, const struct diff *d, const char *tool, const char *text);
void review_parse_cppcheck(jv *acc, const struct diff *d, const char *text);
void review_parse_shellcheck(jv *acc, const struct diff *d, const char *json_text);

/* ---- layer 2: security (review_secrets.c, review_scan.c) ------------------- */

/* Secrets on added lines: provider rules (AWS, GitHub, Slack, Stripe,
 * Google, OpenAI, Anthropic, private keys) and generic key/secret/password/
 * token assignments above an entropy threshold; obvious placeholders are
 * allowed.  Also the built-in insecure-pattern rules (C: gets, strcpy,
 * sprintf, system/popen with a non-constant argument, …; Python: eval,
 * pickle, shell=True; shell: curl | sh).  And a symbolic link the diff
 * adds or changes (git's mode 120000) whose target leads outside the
 * repository -- absolute, or climbing above its root with ".." -- or into
 * its .git: an error finding forge/symlink-outside on the link's line.
 * Borrows d. */
int review_secrets(jv *out, const struct diff *d);

/* Shannon entropy of s[0..n) in bits per character. */
double review_entropy(const char *s, size_t n);

/* True when a candidate secret is an obvious placeholder ("example",
 * "changeme", "xxxx", "<token>", "${VAR}", test/dummy/fake, one repeated
 * character, …). */
bool review_placeholder(const char *s, size_t n);

/* External scanners where installed: flawfinder (C/C++), bandit (Python),
 * on every checked file of their language (in batches).  Missing ones are
 * skipped with review_tool_missing(); a run that fails gives a
 * forge/not-reviewed warning (line 0) for each of its files. */
int review_scan(jv *out, struct review_ctx *ctx);

/* ---- layer 3: AI (review_ai.c) --------------------------------------------- */

struct review_ai_input {
	const char *system;             /* the system prompt */
	const char *task;               /* the task description; may be NULL */
	jv findings;                    /* the other layers' findings (borrowed) */
	jv dismissed;                   /* texts of dismissed-finding memories (borrowed array) */
	int max_tokens;                 /* 0 = 4096 */
	double temperature;             /* llm_temperature(); < 0 = none sent */
	long max_diff_tokens;           /* what the rendered diff may take (tokens_estimate);
					 * files past it are left out and named; 0 = no bound */
	long max_prompt_tokens;         /* what the whole user message may take (the window
					 * less the system prompt, the tool and the answer);
					 * 0 = no bound.  The task, the findings, the dismissed
					 * memories and the list of files not shown each get at
					 * most a share of it (findings past theirs are counted
					 * by tool, severity and file, the most severe listed),
					 * and the diff the rest (and at most max_diff_tokens) */
	/* Told of each billed call (its llm.called); may be NULL.  resp borrowed. */
	void (*on_call)(void *arg, const struct llm_response *resp);
	void *on_call_arg;
};

struct review_ai_result {
	double cost_usd;
	bool cost_known;
	long tokens;
	int dropped;                    /* findings not on a line of the diff */
	int attempts;                   /* calls it took to get a usable answer */
	jv not_shown;                   /* files left out for the diff's budget: an array
					 * of paths, owned by the caller (jv_free) */
	long diff_tokens;               /* the diff's budget (0 = no bound) */
	int findings_left_out;          /* findings only counted, not listed one by one */
	bool skipped;                   /* no line of code was left to show (every file
					 * in not_shown, or binary files and renames
					 * alone): no call was made, no findings */
	bool human;                     /* with -1: the model answered but gave no review
					 * (it refused, or called no report_findings when
					 * asked again): a human is needed, as when the
					 * agent loop's model refuses, not a failed call */
};

/* The diff as the model sees it: per file "## File: path", each hunk with
 * new-file line numbers on added and context lines; lines that carry a
 * "secret/..." finding of `findings` (borrowed; may be jv_null()) are
 * replaced by "[redacted: possible secret]".  malloc'd.  With max_tokens
 * > 0 the files are taken whole, in order, while they fit that many
 * tokens (tokens_estimate); each that does not is left out and appended
 * to *not_shown (a new array, when not NULL), so a large generated file
 * does not push the smaller ones after it out. */
char *review_ai_render(const struct diff *d, jv findings, long max_tokens, jv *not_shown);

/* One structured call (forced tool "report_findings"); *out the findings
 * it reported that lie inside the diff's hunks (layer "ai").  An answer
 * that cannot be used (no call, arguments cut at max_tokens or not the
 * tool's schema, a refusal) is not an empty review: the model is asked once
 * more, told what was wrong (not after a cut or a refusal), and then it is
 * an error.  -1 when the call failed or gave no usable answer (res->human
 * says whether the model refused or would not call the tool); res holds
 * the cost of every call made, also then.  A prompt that would hold no
 * line of code is not sent: 0, with res->skipped and no findings. */
int review_ai(jv *out, struct review_ai_result *res, struct llm_client *llm,
	      const struct diff *d, const struct review_ai_input *in);

/* ---- synthesis (review.c) -------------------------------------------------- */

/* data/risk.h's levels (its bands decide a score's level). */
enum review_level {
	REVIEW_LOW = RISK_LOW, REVIEW_MEDIUM = RISK_MEDIUM, REVIEW_HIGH = RISK_HIGH,
	REVIEW_CRITICAL = RISK_CRITICAL
};

const char *review_level_name(enum review_level l);
/* -1 when name is not a level. */
int review_level_parse(enum review_level *out, const char *name);

/* A stable fingerprint: 16 hex digits of a 64-bit FNV-1a hash of rule,
 * file and the line's content with white space collapsed (the message
 * when there is no line). */
void review_fingerprint(char out[17], const char *rule, const char *file, const char *content);

/* Set each finding's fingerprint from d and keep one finding per (file,
 * line, rule) - the most severe; also drops findings under min_confidence.
 * Sorted by file, line, severity.  Consumes findings. */
jv review_synthesize(jv findings, const struct diff *d, double min_confidence);

struct review_risk {
	double score;                   /* 0..1 */
	enum review_level level;
	jv reasons;                     /* array of strings (owned; jv_free it) */
};

/* Score the change: size, sensitive paths (auth, crypto, secrets, CI
 * workflows, Makefiles, Dockerfiles, migrations, …), findings by severity,
 * and the plan's risk (state.plan.risk; jv_null() when none), read as one
 * unit (risk_of_plan: its level, its score in that level's band) and
 * raising the score to it with a reason naming the level applied.  The
 * level is the score's (risk_level_of), never apart from it.  Borrows
 * findings and plan_risk. */
void review_risk(struct review_risk *out, const struct diff *d, jv findings, jv plan_risk);

/* The decision: require_human for a critical security finding; else
 * request_changes for an error or critical finding; else require_human
 * when the risk is at least human_min; else approve.  *why (static text)
 * says which rule decided.  Borrows findings. */
const char *review_decide(const char **why, jv findings, enum review_level risk,
			  enum review_level human_min);

#endif
