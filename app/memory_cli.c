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
	struct config_sources src = { NULL, common->config, jv_null() };
	struct memory_options mo;
	char *root = NULL, *path = NULL;
	int rc = -1;

	memset(c, 0, sizeof *c);
	*status = FORGE_EXIT_USAGE;
	if (cli_repo_root(&root, common->repo) < 0) {
		if (common->repo)
			goto out;
		root = NULL;    /* outside a repository: no project layer */
	}
	src.repo = root;
	jv llm = cli_model_flags(common);

	jv_object_foreach(llm, k, v) {
		struct buf key = BUF_INIT;

		buf_addf(&key, "llm.%s", jv_string_value(k));
		config_flag_set(&src.flags, key.buf, v);
		buf_release(&key);
		jv_free(k);
	}
	jv_free(llm);
	if (config_load(&c->cfg, &src) < 0)
		goto out;
	if (!common->db && !getenv("FORGE_DB") && !root) {
		forge_error("no database: not in a git repository; use --repo DIR or --db PATH");
		goto out;
	}
	if (store_resolve_path(&path, common->db, root) < 0)
		goto out;
	*status = FORGE_EXIT_DEPENDENCY;
	if ((readonly ? store_open_readonly : store_open)(&c->st, path) < 0)
		goto out;
	memory_options_from_config(&mo, c->cfg);
	if (memory_open(&c->m, c->st, &mo) < 0) {
		*status = FORGE_EXIT_USAGE;
		goto out;
	}
	*status = 0;
	rc = 0;
out:
	free(root);
	free(path);
	return rc;
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
