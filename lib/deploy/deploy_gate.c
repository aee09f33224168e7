/* deploy_gate.c - the human gate before a deploy; see deploy.h. */
#include "deploy/deploy.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The config's gates[] entry with this id, or jv_null(). */
static jv configured_gate(const struct config *cfg, const char *id)
{
	jv gates = cfg ? config_get(cfg, "gates") : jv_null();
	jv found = jv_null();

	if (jv_get_kind(gates) == JV_KIND_ARRAY) {
		jv_array_foreach(gates, i, g) {
			const char *gid = json_get_str(g, "id");
			if (jv_get_kind(found) == JV_KIND_NULL && gid && strcmp(gid, id) == 0)
				found = jv_copy(g);
			jv_free(g);
		}
	}
	jv_free(gates);
	return found;
}

void deploy_gate_for(struct deploy_gate *out, const struct config *cfg, bool production,
		     const char *risk)
{
	const char *dflt;

	memset(out, 0, sizeof *out);
	if (production) {
		out->id = "production_deploy";
		dflt = "Approve production deployment.";
		snprintf(out->why, sizeof out->why,
			 "a production deploy always needs a human's approval (no automation level passes it)");
	} else if (deploy_risk_rank(risk) == 3) {
		out->id = "critical_deploy";
		dflt = "Approve deploying a critical-risk change.";
		snprintf(out->why, sizeof out->why, "a critical-risk deploy always needs a human's approval");
	} else {
		return;
	}
	jv g = configured_gate(cfg, out->id);
	const char *prompt = json_get_str(g, "prompt");
	snprintf(out->prompt, sizeof out->prompt, "%s", prompt && *prompt ? prompt : dflt);
	out->timeout_s = json_get_num(g, "timeout_s", 3600);
	jv_free(g);
}
