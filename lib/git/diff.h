/*
 * diff.h - a parser for unified diffs (git diff, diff -u, svn diff).
 *
 * Understands git's extended headers (diff --git, new/deleted file mode,
 * rename from/to, similarity index, index, Binary files … differ, GIT
 * binary patch), plain "--- a\n+++ b" headers with or without timestamps,
 * quoted paths ("a/sp ace"), "\ No newline at end of file", and empty lines
 * inside a hunk (context lines whose single space was stripped).  Text
 * before the first file header (a commit message, `git show` output) is
 * skipped.
 *
 * Paths are given without their a/ b/ prefixes.  Line numbers count from 1
 * in the new file (the post-image) for added and context lines.
 *
 * Malformed input - a hunk header that does not parse, a hunk whose body
 * is shorter or longer than its header says, a hunk before any file
 * header, a line inside a hunk that is not ' ', '+', '-' or '\' - is an
 * error naming the line number; so is text with no file in it at all.
 *
 * Ownership: struct diff and everything it points to belong to the diff;
 * diff_free() releases it.  Strings returned by the accessors are borrowed.
 */
#ifndef FORGE_DIFF_H
#define FORGE_DIFF_H

#include <stdbool.h>
#include <stddef.h>

struct diff_line {
	int new_line;           /* post-image line number (0 for a removed line) */
	int old_line;           /* pre-image line number (0 for an added line) */
	char kind;              /* '+', '-' or ' ' */
	char *text;             /* without the marker and the newline */
};

struct diff_hunk {
	int old_start, old_count, new_start, new_count;
	char *section;          /* the text after the second "@@" (may be "") */
	struct diff_line *lines;
	size_t nlines;
};

struct diff_file {
	char *path;             /* the new path; the old one for a deletion */
	char *old_path;         /* the old path (== path unless renamed/created) */
	bool created, deleted, renamed, binary;
	int additions, deletions;
	struct diff_hunk *hunks;
	size_t nhunks;
};

struct diff {
	struct diff_file *files;
	size_t nfiles;
	int additions, deletions;
};

/* True when text looks like a unified diff (a "diff --git ", "--- "/"+++ "
 * pair or "Index: " header near a line start); says nothing of validity. */
bool diff_looks_like(const char *text, size_t len);

/* Parse text[0..len).  -1 with a message ("line 12: hunk header …"). */
int diff_parse(struct diff **out, const char *text, size_t len);
void diff_free(struct diff *d);   /* NULL-safe */

/* The file with this (new) path, or NULL. */
const struct diff_file *diff_find(const struct diff *d, const char *path);

/* The text of added line `line` of f (post-image numbering), or NULL when
 * that line was not added by the diff. */
const char *diff_added_line(const struct diff_file *f, int line);

/* The text of post-image line `line` when the diff shows it (added or
 * context), else NULL. */
const char *diff_new_line(const struct diff_file *f, int line);

/* True when `line` of the post-image lies inside one of f's hunks. */
bool diff_in_hunk(const struct diff_file *f, int line);

#endif
