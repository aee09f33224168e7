/*
 * memory_cli.c - what forge-memory, forge-feedback and forge-metrics share:
 * configuration, database and memory handle from the common options.
 */
#include "memory/memory_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/cli.h"
#include "data/config.h"
#include "git/git.h"
#include "core/forge.h"
#include "core/json.h"
#include "llm/llm.h"
#include "os/heap.h"
#include "store/store.h"
#include "store/db.h"

/* The repository holding the current directory, found without libgit2
 * (forge_git_find_root): 1 with *root set (malloc'd), 0 when not in a
 * repository, -1 when only libgit2 can tell. */
static int quick_repo_root(char **root)
{
	char *cwd = getcwd(NULL, 0);
	int rc;

	*root = NULL;
	if (!cwd)
		return -1;
	rc = forge_git_find_root(root, cwd);
	free(cwd);
	return rc;
}

/*
 * session_open() (app/cli.h) for the memory programs, except that the
 * repository is found by quick_repo_root() when it can be: 0 opened, 1 not
 * decided (use session_open), else the exit status.
 */
static int quick_session(struct session *s, const struct cli_common *common, unsigned open_flags)
{
	bool db_named = common->db || (getenv("FORGE_DB") && *getenv("FORGE_DB"));
	jv flags = jv_null(), llm;
	int found, rc = 0;

	memset(s, 0, sizeof *s);
	if (common->repo || (found = quick_repo_root(&s->repo)) < 0)
		return 1;
	if (!found && !db_named) {
		forge_error("'.' is not in a git repository; use --repo DIR or --db PATH");
		return FORGE_EXIT_USAGE;
	}
	llm = cli_model_flags(common);
	jv_object_foreach(llm, k, v) {
		struct buf key = BUF_INIT;

		buf_addf(&key, "llm.%s", jv_string_value(k));
		if (rc == 0)
			rc = config_flag_set(&flags, key.buf, v);   /* consumes v */
		else
			jv_free(v);
		buf_release(&key);
		jv_free(k);
	}
	jv_free(llm);
	struct config_sources src = { .repo = s->repo, .file = common->config, .flags = flags };

	if (rc < 0 || config_load(&s->cfg, &src) < 0) {
		if (rc < 0)
			jv_free(flags);
		session_close(s);
		return FORGE_EXIT_USAGE;
	}
	if (store_resolve_path(&s->db, common->db, s->repo) < 0 || !s->db ||
	    session_open_store(s, common, open_flags) < 0) {
		session_close(s);
		return FORGE_EXIT_DEPENDENCY;
	}
	return 0;
}

/*
 * The memory programs read the database through a mapping of the file
 * (SQLite's mmap_size) rather than read(2) into page buffers: a search reads
 * a few dozen 16 KiB pages once, and copying each into freshly allocated
 * memory was most of its page faults (forge memory search at 600 memories
 * 312 -> 251 faults, at 100K 765 -> 413; ~15% of its CPU).  Writes still go
 * through write(2).  At most MEMORY_CLI_MMAP bytes of the file are mapped.
 */
#define MEMORY_CLI_MMAP (256LL << 20)

/* The heap a memory program fills (os/heap.h), made resident in one call:
 * a search at 460 memories peaks near 290 KiB (schema, FTS5 doclists,
 * candidates), ~70 page faults of its ~240, each ~12 us on a paravirtualised
 * machine, against ~1 us a page populated at once. */
#define MEMORY_CLI_HEAP_WARM (512u << 10)

static int cli_open(int *status, struct memory_cli *c, const struct cli_common *common,
		    unsigned open_flags)
{
	struct memory_options mo;
	struct session ses;

	memset(c, 0, sizeof *c);
	heap_warm(MEMORY_CLI_HEAP_WARM);
	*status = quick_session(&ses, common, open_flags);
	if (*status == 1)
		*status = session_open(&ses, common, SESSION_CONFIG | SESSION_STORE | open_flags, jv_null());
	if (*status)
		return -1;
	c->cfg = ses.cfg;
	c->st = ses.store;
	free(ses.repo);
	free(ses.db);
	char pragma[64];

	snprintf(pragma, sizeof pragma, "PRAGMA mmap_size = %lld", MEMORY_CLI_MMAP);
	if (store_backend(c->st) == DB_SQLITE)
		(void)store_exec(c->st, pragma);        /* without it, read(2) as before */
	memory_options_from_config(&mo, c->cfg);
	if (memory_open(&c->m, c->st, &mo) < 0) {
		*status = FORGE_EXIT_USAGE;
		return -1;
	}
	return 0;
}

int memory_cli_open(int *status, struct memory_cli *c, const struct cli_common *common)
{
	return cli_open(status, c, common, 0);
}

int memory_cli_open_readonly(int *status, struct memory_cli *c, const struct cli_common *common)
{
	return cli_open(status, c, common, SESSION_READONLY);
}

int memory_cli_open_existing(int *status, struct memory_cli *c, const struct cli_common *common)
{
	return cli_open(status, c, common, SESSION_READ_IF_ABSENT);
}

int memory_cli_llm(struct memory_cli *c, const struct cli_common *common)
{
	struct llm_options opt;

	/* (its model options are a layer of c->cfg) */
	cli_say_base_url_unused(c->cfg, NULL, common->verbosity < 0);
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
