/*
 * llm-embed - llm_embed() from the shell, for tests/llm.bats:
 *
 *   llm-embed PROVIDER BASE_URL MODEL TEXT...
 *
 * prints {"dim":N,"vectors":[[…],…]} on one line (floats as %.6g); exit 5
 * with the message on stderr when the call fails, 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/forge.h"
#include "llm/llm.h"

int main(int argc, char **argv)
{
	struct llm_embed_options opt = { NULL, NULL, NULL, 1, 0 };
	float *v = NULL;
	size_t dim = 0, n;

	if (argc < 5) {
		fprintf(stderr, "usage: llm-embed PROVIDER BASE_URL MODEL TEXT...\n");
		return FORGE_EXIT_USAGE;
	}
	opt.provider = argv[1];
	opt.base_url = argv[2];
	opt.model = argv[3];
	n = (size_t)(argc - 4);
	if (llm_embed(&v, &dim, &opt, (const char *const *)argv + 4, n) < 0) {
		fprintf(stderr, "llm-embed: %s\n", forge_last_error());
		return FORGE_EXIT_DEPENDENCY;
	}
	printf("{\"dim\":%zu,\"vectors\":[", dim);
	for (size_t i = 0; i < n; i++) {
		printf("%s[", i ? "," : "");
		for (size_t j = 0; j < dim; j++)
			printf("%s%.6g", j ? "," : "", (double)v[i * dim + j]);
		putchar(']');
	}
	printf("]}\n");
	free(v);
	return FORGE_EXIT_OK;
}
