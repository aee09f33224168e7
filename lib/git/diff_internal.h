/*
 * diff_internal.h - what diff.c and diff_combine.c share; not part of the
 * contract (diff.h).
 */
#ifndef FORGE_DIFF_INTERNAL_H
#define FORGE_DIFF_INTERNAL_H

#include "git/diff.h"

/* The longest blob id an "index OLD..NEW" line holds (SHA-256, in hex). */
#define DIFF_ID_MAX 64

/* What the parser knows of d->files[i] beyond struct diff_file. */
struct diff_section {
	unsigned long line;             /* the text's line where its header starts */
	unsigned long patch;            /* which patch of a series it is in (0: the first; a
					 * "From " or "commit SHA" line starts the next) */
	char old_id[DIFF_ID_MAX + 1];   /* its "index OLD..NEW" blobs (abbreviated, */
	char new_id[DIFF_ID_MAX + 1];   /* as git wrote them); "" when it has none */
	bool copy;                      /* "copy from": old_path stays, a new file begins */
};

/*
 * Make each file that is in several of d's sections one struct diff_file
 * (diff.h says how).  sec[i] describes d->files[i].  d->files, d->nfiles,
 * d->additions and d->deletions are replaced; 0 also when no file repeats.
 * -1 with a message, d unchanged, when the sections of a file follow one
 * another in neither order.
 */
int diff_combine(struct diff *d, const struct diff_section *sec);

/* Free what f holds (not f itself). */
void diff_file_release(struct diff_file *f);

#endif
