/*
 * fuzz_patch_edit.c - libFuzzer target: edit_file's search/replace with the
 * fuzzy line matcher (patch_edit in lib/agent/patch.c).  The input is three parts
 * split at the first two NUL bytes: the file's content, `old`, `new`; a
 * final byte 'A' asks for replace_all.
 */
#include "agent/patch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *content, *old, *new, *out = NULL;
	enum patch_fuzz fz;
	int count;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	content = text;
	old = memchr(text, '\0', size + 1);
	if ((size_t)(old - text) == size) {
		free(text);
		return 0;
	}
	old++;
	new = old + strlen(old);
	if ((size_t)(new - text) == size) {
		free(text);
		return 0;
	}
	new++;
	bool all = size > 0 && text[size - 1] == 'A';
	if (patch_edit(&out, &fz, &count, content, "fuzz.txt", old, new, all) == 0)
		free(out);
	free(text);
	return 0;
}
