/*
 * diff.h - a parser for unified diffs (git diff, diff -u, svn diff).
 *
 * Understands git's extended headers (diff --git, new/deleted file mode,
 * rename from/to, similarity index, index, Binary files … differ, GIT
 * binary patch), plain "--- a\n+++ b" headers with or without timestamps,
 * quoted paths ("a/sp ace"), "\ No newline at end of file", and empty lines
 * inside a hunk (context lines whose single space was stripped).  Text
 * before the first file header (a commit message, `git show` output) is
 * skipped, and so is the text between patches of a series (`git
 * format-patch` mails: from a "From " line or the "-- " signature on;
 * `git log -p`: from a "commit SHA" line on), so a "---" or "- bullet"
 * line of the next message is not read as the end of the last hunk.
 *
 * A file in several sections (a series, diffs concatenated, `git log -p`,
 * a type change git shows as a deletion and a creation) is one struct
 * diff_file: the combined change, from the file before the first section
 * to the file after the last, in post-image line numbers of the last (the
 * lines `git diff FIRST^ LAST` adds and removes, with the sections' context
 * lines; its hunks have no section text).  The
 * sections are taken in the text's order, or in the reverse order when
 * only that one fits (`git log -p`, newest first): a section follows
 * another when its "index OLD..NEW" blob starts where the other's ended,
 * and its context and removed lines are the lines the other left there.
 * Lines one section added and a later one removed are kept in `dropped`
 * (a series' commits still hold them).
 *
 * Paths are given without their a/ b/ prefixes.  Line numbers count from 1
 * in the new file (the post-image) for added and context lines.
 *
 * Malformed input - a hunk header that does not parse, a hunk whose body
 * is shorter or longer than its header says, a hunk before any file
 * header, a line inside a hunk that is not ' ', '+', '-' or '\' - is an
 * error naming the line number; so is text with no file in it at all.
 *
 * A diff cut to a size (diff_cut) is not malformed: its "[… diff cut: …]"
 * and "[… not shown: …]" lines are read into struct diff's cut fields, so
 * a reader can say which files it did not see.  An older cut that fell
 * inside a hunk ("[… diff cut: N more bytes …]" as a hunk line) ends that
 * hunk where the text does and marks its file `cut`.
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
	bool cut;               /* the text ends inside this file: only a part is shown */
	bool symlink;           /* the post-image is a symbolic link (git's mode 120000 on
				 * "new file mode", "new mode" or "index"): its one
				 * line is the link's target */
	int additions, deletions;
	struct diff_hunk *hunks;
	size_t nhunks;
	struct diff_line *dropped;      /* lines a section added and a later section of the
					 * same file removed (kind '+', both line numbers 0) */
	size_t ndropped;
};

/* A file a cut left out, as its "[… not shown: PATH (N bytes) …]" line names it. */
struct diff_omitted {
	char *path;
	size_t bytes;           /* the size of its part of the full diff */
};

struct diff {
	struct diff_file *files;
	size_t nfiles;
	int additions, deletions;
	bool cut;               /* the text was cut: some of the change is not in it */
	size_t omitted_total;   /* files left out, named or not (the marker's count) */
	struct diff_omitted *omitted;   /* the ones named (at most omitted_total) */
	size_t nomitted;
};

/* True when text looks like a unified diff (a "diff --git ", "--- "/"+++ "
 * pair or "Index: " header near a line start); says nothing of validity. */
bool diff_looks_like(const char *text, size_t len);

/* Parse text[0..len).  -1 with a message ("line 12: hunk header …") when
 * the text is malformed; -2 with a message when it is well formed but
 * names a file in sections that do not follow one another (two diffs of
 * one file from the same commit: there is no one change to review). */
/* (A cut diff may hold no file at all: only its markers.) */
int diff_parse(struct diff **out, const char *text, size_t len);
void diff_free(struct diff *d);   /* NULL-safe */

/* The file with this (new) path, or NULL.  (The sections of a file are
 * combined; a series that deletes a file and then renames another to its
 * name has two: this is the one the name holds at the end.) */
const struct diff_file *diff_find(const struct diff *d, const char *path);

/* The text of added line `line` of f (post-image numbering), or NULL when
 * that line was not added by the diff. */
const char *diff_added_line(const struct diff_file *f, int line);

/* The text of post-image line `line` when the diff shows it (added or
 * context), else NULL. */
const char *diff_new_line(const struct diff_file *f, int line);

/* True when `line` of the post-image lies inside one of f's hunks. */
bool diff_in_hunk(const struct diff_file *f, int line);

/*
 * A patch as git writes it (each file's part starting with "diff --git"),
 * at most about `max` bytes and still a valid diff: the files whose parts
 * fit are kept whole, in order (a big file further on does not hide the
 * small ones after it), and the rest are left out and named at the end,
 * "[… diff cut: N files not shown (B bytes) …]" then one
 * "[… not shown: PATH (B bytes) …]" line each (a path with a quote,
 * backslash or control character in C quotes, as git quotes it), and
 * "[… and N more files not shown …]" when naming them all would pass max.
 * Text under max is returned as it is.  The result is malloc'd and at
 * most max bytes long (max at least 4096).
 */
char *diff_cut(const char *text, size_t len, size_t max);

/* True when text holds a "[… diff cut: " line (diff_cut's, or an older
 * cut's): some of the change is not in it. */
bool diff_is_cut(const char *text, size_t len);

#endif
