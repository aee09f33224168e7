/*
 * memory_cli.c - what forge-memory, forge-findings and forge-metrics share:
 * configuration, database and memory handle from the common options.
 */
#include "memory/memory_internal.h"

#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "store/store.h"

static int cli_open(int *status, struct memory_cli *c, const struct cli_common *common, bool readonly)
{
	struct memory_options mo;
	struct session ses;

	memset(c, 0, sizeof *c);
	*status = session_open(&ses, common, SESSION_CONFIG | SESSION_STORE |
			       (readonly ? SESSION_READONLY : 0), jv_null());
	if (*status)
		return -1;
	c->cfg = ses.cfg;
	c->st = ses.store;
	free(ses.repo);
	free(ses.db);
	memory_options_from_config(&mo, c->cfg);
	if (memory_open(&c->m, c->st, &mo) < 0) {
		*status = FORGE_EXIT_USAGE;
		return -1;
	}
	return 0;
}

int memory_cli_open(int *status, struct memory_cli *c, const struct cli_common *common)
{
	return cli_open(status, c, common, false);
}

int memory_cli_open_readonly(int *status, struct memory_cli *c, const struct cli_common *common)
{
	return cli_open(status, c, common, true);
}

int memory_cli_llm(struct memory_cli *c, const struct cli_common *common)
{
	struct llm_options opt;

	(void)common;   /* its model options are a layer of c->cfg */
	llm_options_init(&opt);
	llm_options_for(&opt, c->cfg, NULL, true);
	opt.phase = "consolidate";
	opt.store = c->st;
	return llm_client_new(&c->llm, &opt);
}

void memory_cli_close(struct memory_cli *c)
{
	llm_client_free(c->llm);
	memory_free(c->m);
	store_free(c->st);
	config_free(c->cfg);
	memset(c, 0, sizeof *c);
}
