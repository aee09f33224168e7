/* stage_spec.c - PLACEHOLDER until issue 16 part C lands; see app/stage.h. */
#include "app/stage.h"

static const char *not_yet(struct phase *ph)
{
	phase_reason(ph, "this stage is not built yet");
	return "failed";
}

const struct phase_spec stage_interview = { .name = "interview", .program = "forge-stage interview", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_change = { .name = "change", .program = "forge-stage change", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_flows = { .name = "flows", .program = "forge-stage flows", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_contracts = { .name = "contracts", .program = "forge-stage contracts", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_rules = { .name = "rules", .program = "forge-stage rules", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };

const struct phase_spec stage_schema = { .name = "schema", .program = "forge-stage schema", .synopsis = "< STATE", .description = "(not built yet)", .run = not_yet };
