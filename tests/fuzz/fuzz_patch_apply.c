/*
 * fuzz_patch_apply.c - libFuzzer target: the "*** Begin Patch" applier
 * (patch_apply in lib/agent/patch.c) against a scratch tree.  The input is split
 * at its first NUL byte: the content of the tree's file a.txt, then the
 * patch; the tree also holds old.txt ("obsolete").  The tree is made
 * afresh for every input, in a scratch directory under $TMPDIR.
 */
#include "agent/patch.h"
#include "os/sandbox.h"

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

static void clean(void)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup_at_exit(void)
{
	clean();
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sandbox_root *root = NULL;
	char *summary = NULL;
	jv files = jv_null();

	if (!dir[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/forge-fuzz-patch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup_at_exit);
	}
	const uint8_t *nul = memchr(data, '\0', size);
	size_t clen = nul ? (size_t)(nul - data) : 0;
	const uint8_t *patch = nul ? nul + 1 : data;
	size_t plen = size - (size_t)(patch - data);

	char path[4200];
	snprintf(path, sizeof path, "%s/a.txt", dir);
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	fwrite(data, 1, clen, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/old.txt", dir);
	f = fopen(path, "wb");
	if (!f)
		abort();
	fputs("obsolete\n", f);
	fclose(f);
	char *text = malloc(plen + 1);
	if (!text)
		abort();
	memcpy(text, patch, plen);
	text[plen] = '\0';
	if (sandbox_root_open(&root, dir) == 0) {
		if (patch_apply(&summary, &files, root, text) == 0)
			free(summary);
		jv_free(files);
		sandbox_root_free(root);
	}
	free(text);
	clean();
	return 0;
}
