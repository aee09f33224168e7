/*
 * forge-stage - one stage of `forge compile` as a filter (app/stage.h):
 * `forge-stage NAME [options] < STATE`.
 */
#include "app/stage.h"
#include "core/forge.h"

#include <stdio.h>
#include <string.h>

static const struct phase_spec *const stages[] = {
	&stage_interview, &stage_change, &stage_flows, &stage_contracts, &stage_rules,
	&stage_schema, &stage_tests, &stage_code, &stage_integrate, &stage_review,
};

static void usage(FILE *f)
{
	fputs("usage: forge-stage STAGE [options] < STATE\nstages:", f);
	for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
		fprintf(f, " %s", stages[i]->name);
	fputs("\n`forge-stage STAGE --help` describes one.\n", f);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-') {
		bool help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);

		usage(help ? stdout : stderr);
		return help ? 0 : 2;
	}
	for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
		if (strcmp(argv[1], stages[i]->name) == 0)
			return phase_main(stages[i], argc - 1, argv + 1, NULL);
	fprintf(stderr, "forge-stage: unknown stage '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
