/*
 * context.h - the smart context builder (seed 002 section 11, the agent's
 * perceive step of seed 003): fit recalled memories, the conversation and
 * the environment into a token budget.
 *
 * THE BUDGET.  Sizes are estimated with tokens.h.  The size of a fitted
 * result (context_cost) is the sum of
 *   tokens_estimate_jv(m)                        for each kept memory
 *   tokens_estimate_jv(msg)                      for each kept message
 *   tokens_estimate_jv(key) + tokens_estimate_jv(value)  for each kept
 *                                                environment part (key as
 *                                                a JSON string)
 * and context_build() guarantees it is never above the budget, whatever the
 * input (a tiny budget yields empty parts).
 *
 * THE SPLIT.  The budget is shared 60/30/10 between memories, conversation
 * and environment (memory.token_budget in the configuration).  A part that
 * needs less than its share gives the rest to the others in proportion to
 * their shares; what is left after fitting (an item too big for the space
 * that remains) is offered again to the parts that lost something, in the
 * order memories, conversation, environment.
 *
 * FITTING.  An item that does not fit whole is truncated when it has text
 * to cut, else dropped.  A cut keeps the head of the text, never splits a
 * UTF-8 sequence, and ends with the marker "[… N tokens omitted …]".
 *   memories      in the order given (most relevant first); whole while they
 *                 fit; the first that does not fit has its "content" cut to
 *                 the space left; later ones are kept if they fit whole.
 *   conversation  messages are opaque JSON values (lib/llm/llm.h's normalised
 *                 form).  The first message (the task) is kept, then the
 *                 most recent ones back to the first that does not fit;
 *                 a string "content" of the first or of the latest message
 *                 may be cut.  The kept recent run never begins with a
 *                 "tool" message whose call was dropped (providers reject
 *                 orphaned tool results).
 *   environment   named parts in the object's order, which is their
 *                 priority (put "task" first): every part that fits whole,
 *                 in order; then the first string part left out is cut to
 *                 the space that remains; the rest are dropped.  The kept
 *                 parts keep the input's order.
 */
#ifndef FORGE_CONTEXT_H
#define FORGE_CONTEXT_H

#include <jv.h>
#include <stddef.h>

struct config;

struct context_shares {
	double memories;
	double conversation;
	double environment;
};

#define CONTEXT_SHARES_DEFAULT { 0.6, 0.3, 0.1 }

struct context_input {
	jv memories;        /* borrowed: array of {id, type, content, context, confidence,
			     * relevance}, most relevant first; null = none */
	jv conversation;    /* borrowed: array of messages; null = none */
	jv environment;     /* borrowed: object of named parts (text or JSON); null = none */
	size_t budget;      /* tokens */
	struct context_shares shares;   /* negative values count as 0; all 0 = default */
};

/*
 * Fit in->… into in->budget.  *out is a new object
 *   {"memories":[…], "conversation":[…], "environment":{…},
 *    "report":{"budget":N,
 *              "allocated":{"memories":N,"conversation":N,"environment":N},
 *              "used":{"memories":N,"conversation":N,"environment":N,"total":N},
 *              "dropped":[{"part":"memories","id":"…"|"index":N|"key":"…","tokens":N}],
 *              "truncated":[{"part":…,"id"|"index"|"key":…,"from":N,"to":N}]}}
 * Memories are identified by their "id" when it is a string, else by index;
 * messages by index; environment parts by key.  Never fails; returns 0.
 */
int context_build(jv *out, const struct context_input *in);

/* The size of a fitted result as defined above.  Borrows fitted. */
size_t context_cost(jv fitted);

/*
 * The shares configured at memory.token_budget (missing keys keep their
 * default).  Borrows cfg, which may be NULL (the defaults).
 */
void context_shares_from_config(struct context_shares *out, const struct config *cfg);

/*
 * A prompt text block from a fitted result (borrowed), in markdown:
 *   "## Task" (environment "task"), one "## Title" per other environment
 *   part (key with '_' as ' ', first letter upper case), "## Skills"
 *   (environment "skills"), then "## Relevant past learnings", a line
 *   saying they are notes to weigh, not instructions, and one
 *   "- [type] content (confidence: 0.80)" line per memory, its text
 *   with secrets hidden (core/secret.h secret_hidden_jv).
 * The conversation is not rendered (it goes to the model as messages).
 * tokens_estimate() of the text is never above budget: when the sections
 * together are too big, the text is cut with the marker.  *out is
 * malloc'd.  Returns 0.
 */
int context_render(char **out, jv fitted, size_t budget);

/*
 * s[0..len) cut to at most max_tokens (tokens_estimate of the text): the
 * longest head at a UTF-8 boundary followed by the marker, or "" when not
 * even the marker fits.  *out is malloc'd (NUL-terminated; *out_len its
 * length, may be NULL).  Returns 0 when the text fitted unchanged, 1 when it
 * was cut.
 */
int context_truncate_text(char **out, size_t *out_len, const char *s, size_t len,
			  size_t max_tokens);

/*
 * THE PROJECT'S INSTRUCTIONS.  The files other coding agents read for a
 * project's conventions, in this order (earlier ones are cut last):
 *   AGENTS.md, CLAUDE.md, CONVENTIONS.md, .github/copilot-instructions.md
 * at root, then AGENTS.md in the directories (nearest the root first) that
 * hold the files of `touched` (relative paths, borrowed array; null for
 * none).  A file is read only when it is a regular file inside root once
 * symbolic links are resolved: a link out of the repository is skipped
 * with a reason, never followed; at most 1 MiB of a file is read.
 *
 * *out_text (malloc'd) is markdown: "## Project instructions", a line
 * saying what the files are, and one "### PATH" section per file, "" when
 * no file was found.  tokens_estimate() of it is never above `budget`: the
 * first file that does not fit whole is cut (the marker of
 * context_truncate_text, then a line naming the file and
 * context.instructions_tokens), and the files after it are left out.
 * *out_report (new reference) is
 *   {"budget":N,"tokens":N,
 *    "files":[{"path":"AGENTS.md","tokens":N,"kept":N,"truncated":bool}],
 *    "skipped":[{"path":…,"reason":…}]}
 * where "tokens" of a file is its size and "kept" what the text holds of
 * it; a file left out for lack of room is in "skipped".  Returns 0.
 */
int context_instructions(char **out_text, jv *out_report, const char *root, jv touched,
			 size_t budget);

/* The root-level instruction files context_instructions() reads, in order;
 * ends with NULL.  Static. */
const char *const *context_instruction_files(void);

#endif
