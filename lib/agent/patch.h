/*
 * patch.h - the "*** Begin Patch" format (Codex apply_patch) and edit_file's
 * search/replace, with the same tolerant line matching.
 *
 * MATCHING.  A block of lines is looked for in four passes, each over the
 * whole file before the next, and the first pass that finds it wins:
 *   1. exact;
 *   2. ignoring trailing whitespace (rstrip);
 *   3. ignoring leading and trailing whitespace (strip);
 *   4. strip, with typographic punctuation read as ASCII: the dashes
 *      U+2010..U+2015 and U+2212 as '-', the quotes U+2018..U+201B as '\'',
 *      U+201C..U+201F as '"', and no-break and odd spaces (U+00A0,
 *      U+2002..U+200A, U+202F, U+205F, U+3000) as ' ', and composed
 *      letters decomposed as in NFD (the Latin letters U+00C0..U+017F
 *      that are a letter and one combining mark, Hangul syllables), so
 *      that a file's decomposed text matches the model's composed text.
 * BYTE-ORDER MARK.  A file that starts with the UTF-8 byte-order mark
 * (EF BB BF, as Windows and .NET tools write .cs and .csproj files) is
 * matched without it, and the patch's and `old`'s lines are matched
 * without a leading one (read_file shows it, invisible, so a model may
 * copy it or not); the result keeps the file's mark, exactly one, and its
 * line ends, whatever line 1 became.
 * When nothing matches, the error shows the lines of the file that come
 * closest (the window with the highest mean per-line similarity, bigram
 * Dice on stripped lines) and the first line that differs.
 *
 * APPLY_PATCH (agent-clis.md section 2C).  Grammar:
 *   *** Begin Patch
 *   *** Add File: PATH        then lines "+text" (a bare empty line is an empty line)
 *   *** Delete File: PATH
 *   *** Update File: PATH     then optionally "*** Move to: PATH", then chunks:
 *       "@@" or "@@ CONTEXT"  starts a chunk; CONTEXT (a line above the change)
 *                             is found first and the search continues below it
 *       " text" / "-text" / "+text"   context, removed, added ("" = empty context)
 *       "*** End of File"     the chunk is at the end of the file
 *   *** End Patch
 * Leniency: markers may carry surrounding whitespace; a heredoc wrapper
 * (<<'EOF' ... EOF) is stripped; blank lines between hunks are skipped; a
 * unified-diff header "@@ -1,3 +1,4 @@ CONTEXT" counts as "@@ CONTEXT";
 * bare empty lines at the end of a chunk are dropped.  Chunks of one file
 * are found in order (the cursor only moves forward); an "*** End of File"
 * chunk is tried at the end first; a chunk with no context or removed
 * lines is inserted after its @@ CONTEXT line, or at the end of the file
 * when it has none.  A file whose lines end in CRLF keeps CRLF on added
 * lines.  A file without a final newline keeps none, unless the patch says
 * otherwise with unified diff's "\ No newline at end of file" marker (any
 * line starting with '\'): after a removed line it means the old last line
 * had none and the new one gets one; after an added or context line, that
 * the new last line has none.  A chunk with the marker is at the end of the
 * file (as with "*** End of File").
 * ALL OR NOTHING: every hunk of every file is checked (and every failure
 * reported) before anything is written; the writes then go through one
 * sandbox transaction (sandbox.h), so a failing patch changes nothing.
 * Add File refuses an existing file; Delete and Update need one; Move to
 * refuses an existing destination.
 */
#ifndef FORGE_PATCH_H
#define FORGE_PATCH_H

#include <jv.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

struct sandbox_root;

enum patch_fuzz { PATCH_EXACT = 0, PATCH_RSTRIP, PATCH_STRIP, PATCH_PUNCT };

/* "exact", "ignoring trailing whitespace", ... (static). */
const char *patch_fuzz_name(enum patch_fuzz f);

/*
 * Find pat[0..np) in lines[start..n) (see MATCHING).  With eof the end of
 * the file is tried first.  Returns the index or -1; *fuzz (may be NULL)
 * gets the pass that matched.  An empty pattern matches at start.
 */
long patch_seek(char *const *lines, size_t n, char *const *pat, size_t np, size_t start,
		bool eof, enum patch_fuzz *fuzz);

/*
 * Describe the closest match of pat in lines into msg: "closest lines in
 * PATH (12-15, 78% similar):" and the numbered lines, then the first line
 * that differs.  Appends nothing when the file is empty.
 */
void patch_closest(struct buf *msg, char *const *lines, size_t n, char *const *pat, size_t np,
		   const char *path);

/*
 * edit_file: replace `old` with `new` in content.  An exact occurrence
 * must be unique (or replace_all); otherwise whole lines are matched with
 * passes 2-4 (a unique match; with pass 3 or 4 a uniform extra indentation
 * of the file is added to the new lines too).  On success *out is the new
 * content (malloc'd), *fuzz the pass, *count the replacements.  On failure
 * -1 with a message for the model (how often it matched, or the closest
 * lines).  path is only used in messages.
 */
int patch_edit(char **out, enum patch_fuzz *fuzz, int *count, const char *content,
	       const char *path, const char *old, const char *new, bool replace_all);

/*
 * apply_patch: parse text and apply it beneath root, all or nothing.  On
 * success *summary (malloc'd) is "Success. Updated the following files:\n"
 * with "A path", "M path", "D path" lines (a move is "M dest (moved from
 * src)") plus notes on tolerant matches, and *files an array of
 * {"path","action":"add|modify|delete|rename","from"?,"additions","deletions",
 * "encoding"?,"replaced_symlink"?} ("latin1" for a file written back in
 * Latin-1, see LATIN-1; replaced_symlink: the target of the symbolic link
 * to nothing that a file added took the place of, sandbox_dangling_link(),
 * with a note in the summary).
 * On failure -1 (or a sandbox code when a path is refused: SANDBOX_EDENIED)
 * with a message listing every problem; nothing was written.
 */
int patch_apply(char **summary, jv *files, const struct sandbox_root *root, const char *text);

/*
 * LATIN-1.  A text file that is not valid UTF-8 (a Latin-1 file, say) is
 * read as Latin-1: each byte is the character U+0000..U+00FF of the same
 * value.  That reading is one-to-one, so nothing is lost: read_file and
 * grep show such a file so (and say so), and edit_file, apply_patch and
 * write_file turn the model's text back into bytes the same way, so the
 * file keeps its own encoding.  A character above U+00FF cannot be written
 * into such a file; the tools refuse it.
 */

/* True when text[0..len) is to be read as Latin-1: it is not valid UTF-8. */
bool patch_is_latin1(const char *text, size_t len);

/* text[0..len) read as Latin-1, appended to b as UTF-8. */
void patch_latin1_decode(struct buf *b, const char *text, size_t len);

/*
 * text[0..len) (UTF-8, as the model's text is) appended to b as Latin-1
 * bytes.  Returns 0, or -1 when it holds a character above U+00FF or bytes
 * that are not UTF-8: then b is unchanged and the error says that `path`
 * (a Latin-1 file) cannot hold that character, where it is in `what` (line
 * and character) and what to do.
 */
int patch_latin1_encode(struct buf *b, const char *text, size_t len, const char *path,
			const char *what);

/* Split text into lines (the final newline does not start an empty line).
 * *out is malloc'd, each line too; free with patch_lines_free. */
size_t patch_split_lines(char ***out, const char *text, size_t len);
void patch_lines_free(char **lines, size_t n);

#endif
