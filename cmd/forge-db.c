/*
 * forge-db - the database's schema: which backend, which version, what is
 * pending; apply the pending migrations.
 *
 *   forge db status [--json]    backend, database (a password hidden), schema
 *                               version, pending migrations; changes nothing
 *   forge db migrate [--json]   apply the pending migrations (idempotent; on
 *                               PostgreSQL under an advisory lock, so several
 *                               machines may run it at once)
 *
 * The database is --db, else FORGE_DB, else the repository's .forge/forge.db;
 * --db postgres://... (or postgresql://, or a libpq conninfo string) names a
 * PostgreSQL database.
 */
#include "app/cli.h"
#include "core/forge.h"
#include "core/json.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_JSON = 256 };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "one JSON object instead of text", OPT_JSON },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-db",
	.synopsis = "status [--json]\nmigrate [--json]",
	.description = "The database of forge: SQLite (a file, the default) or PostgreSQL\n"
		       "(--db postgres://USER@HOST/DB, postgresql://..., or a libpq conninfo such as\n"
		       "'host=/run/postgresql dbname=forge').\n"
		       "  status   the backend, the database (password hidden), the schema version\n"
		       "           and the migrations not applied yet; changes nothing\n"
		       "  migrate  apply the pending migrations; safe to run twice, and from several\n"
		       "           machines at once (PostgreSQL: an advisory lock)",
	.options = options,
	.extra_help = "Exit status: 0 done, 2 usage, 5 the database cannot be opened or migrated.\n",
};

static int on_option(int id, const char *arg, void *payload)
{
	(void)arg;
	if (id == OPT_JSON) {
		*(bool *)payload = true;
		return 0;
	}
	return forge_error("unhandled option");
}

static void print_status(jv st, bool json)
{
	int v = (int)json_get_num(st, "version", 0), known = (int)json_get_num(st, "known", 0);
	jv pending = json_get(st, "pending");

	if (json) {
		jv_free(pending);
		json_write_line(stdout, jv_copy(st), false);
		return;
	}
	printf("backend:  %s\ndatabase: %s\nschema:   version %d of %d%s\n", json_get_str(st, "backend"),
	       json_get_str(st, "database"), v, known,
	       v == known ? " (up to date)"
	       : v > known ? " (newer than this forge knows: its commands refuse this database; upgrade forge)"
	       : "");
	jv_array_foreach(pending, i, name) {
		printf("pending:  %s\n", jv_string_value(name));
		jv_free(name);
	}
	jv_free(pending);
}

/* Apply what is pending (what another process applied meanwhile is not
 * this one's); *after is the status then. */
static int migrate(jv *after, const char *db, bool json)
{
	struct store *store = NULL;

	if (store_open(&store, db) < 0)
		return -1;
	int applied = store_migrations_applied(store);

	store_free(store);
	if (store_db_status(after, db) < 0)
		return -1;
	if (json)
		return 0;
	int v1 = (int)json_get_num(*after, "version", 0), v0 = v1 - applied;
	if (!applied)
		printf("%s is up to date (schema version %d)\n", json_get_str(*after, "database"), v1);
	else
		printf("migrated %s: schema version %d -> %d\n", json_get_str(*after, "database"), v0, v1);
	return 0;
}

int main(int argc, char **argv)
{
	struct cli_common common;
	bool json = false;
	int first = cli_parse(&common, &spec, argc, argv, on_option, &json);
	struct session ses;
	char *db = NULL;
	jv st = jv_invalid(), after = jv_invalid();
	int status;

	if (first >= argc)
		cli_usage_error(&spec, "a command is needed: status or migrate");
	const char *cmd = argv[first];
	if (strcmp(cmd, "status") != 0 && strcmp(cmd, "migrate") != 0)
		cli_usage_error(&spec, "unknown command '%s'", cmd);
	if (argc - first > 1)
		cli_usage_error(&spec, "%s takes no argument", cmd);
	status = session_open(&ses, &common, 0, jv_null());
	if (!status && store_resolve_path(&db, common.db, ses.repo) < 0)
		status = FORGE_EXIT_USAGE;
	if (status) {
		fprintf(stderr, "forge-db: %s\n", forge_last_error());
		goto out;
	}
	status = FORGE_EXIT_DEPENDENCY;
	if (store_db_status(&st, db) < 0)
		goto fail;
	if (strcmp(cmd, "migrate") == 0 && migrate(&after, db, json) < 0)
		goto fail;
	if (strcmp(cmd, "status") == 0 || json)
		print_status(jv_is_valid(after) ? after : st, json);
	status = FORGE_EXIT_OK;
	goto out;
fail:
	fprintf(stderr, "forge-db: %s\n", forge_last_error());
out:
	jv_free(st);
	jv_free(after);
	free(db);
	session_close(&ses);
	return cli_finish("forge-db", status);
}
