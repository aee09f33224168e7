/*
 * cli_tables.h - the common option tables, shared by the two halves of the
 * command line: cli.c parses them, cli_help.c prints them.  Internal to
 * app/cli.c and app/cli_help.c.
 */
#ifndef FORGE_CLI_TABLES_H
#define FORGE_CLI_TABLES_H

#include "app/cli.h"

#include <stddef.h>

enum {
	OPT_VERSION = 1000, OPT_REPO, OPT_DB, OPT_CONFIG,
	OPT_PROVIDER, OPT_MODEL, OPT_BASE_URL, OPT_CASSETTE, OPT_HELP_MAN, OPT_HELP_WORDS,
};

/* Each ends with {NULL}. */
extern const struct cli_option cli_common_options[];   /* --help, --version, --repo, ... */
extern const struct cli_option cli_model_options[];    /* --provider, --model, ... */
extern const struct cli_option cli_hidden_options[];   /* --help-man, --help-words */

/* How many options o holds (0 for NULL). */
size_t cli_count_options(const struct cli_option *o);

#endif
