/*
 * stage_int.h - what the spec stages of forge compile share
 * (app/stage_spec.c, app/stage_interview.c); see app/stage.h.
 */
#ifndef FORGE_STAGE_INT_H
#define FORGE_STAGE_INT_H

#include "app/phase.h"

#include <jv.h>
#include <stdbool.h>

/* compile.mode is "edit". */
bool stage_edit_mode(struct phase *ph);

/*
 * Run the stage's agent loop for document `kind`: the system prompt is
 * the stage's (schemas/prompts/STAGE.md with the project's overlay), the
 * first message env (an object of named texts, consumed) fitted with
 * memories and skills; tools (consumed; [] for none) run through exec
 * (NULL: every tool is refused).  The model's finish input, checked against
 * compile/KIND.schema.json, is *out_doc (jv_null() unless "ok").  Returns
 * the phase status.
 */
const char *stage_run_doc(struct phase *ph, const char *kind, jv env, jv tools, agent_exec_fn exec,
			  void *payload, jv *out_doc);

#endif
