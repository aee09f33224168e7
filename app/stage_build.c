/* stage_build.c - PLACEHOLDER until issue 16 part C lands; see app/stage.h. */
#include "app/stage.h"

static const char *not_yet(struct phase *ph)
{
	phase_reason(ph, "this stage is not built yet");
	return "failed";
}

const struct phase_spec stage_tests = { .name = "tests", .program = "forge-stage tests", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_code = { .name = "code", .program = "forge-stage code", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_integrate = { .name = "integrate", .program = "forge-stage integrate", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_review = { .name = "review", .program = "forge-stage review", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };
