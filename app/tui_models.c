/*
 * tui_models.c - the model picker of `forge tui` (tui.h).
 */
#include "app/tui.h"

void tui_models(struct tui *t)
{
	tui_say(t, "the model picker is not there yet: forge config set llm.phases.PHASE.model M");
}
