/*
 * forge-skills - the SKILL.md files Forge can give its agents (`forge skills`).
 *
 *   forge-skills                     every skill: name, category, phases, path
 *   forge-skills PHASE [--task TEXT] the skills matching a phase and/or task,
 *   forge-skills --task TEXT         best first, with their scores
 *   forge-skills --show NAME         one skill's text
 *
 * Skills come from <repo>/.forge/skills and $XDG_CONFIG_HOME/forge/skills
 * (lib/agent/skills.h has the format and the scoring).  A skill file that cannot
 * be used is reported on stderr as a warning and skipped.  The configuration
 * is read as by every program (a --config file that is missing or not valid
 * is a usage error), though no setting of it changes the skills; --db is
 * taken, as every program takes it, and not opened: skills are files, not
 * records.  Exit 0; 1 when --show names no skill; 2 on a usage error.
 */
#include "core/buf.h"
#include "app/cli.h"
#include "core/forge.h"
#include "core/json.h"
#include "agent/skills.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "forge-skills"

enum { OPT_TASK = 256, OPT_JSON, OPT_SHOW, OPT_LIMIT };

static const struct cli_option options[] = {
	{ "task", 't', "TEXT", "match the skills against a task description", OPT_TASK },
	{ "show", 0, "NAME", "print the text of the skill NAME", OPT_SHOW },
	{ "limit", 'n', "N", "show at most N matching skills", OPT_LIMIT },
	{ "json", 0, NULL, "JSON output (an array; --show: the skill as an object)", OPT_JSON },
	{ NULL, 0, NULL, NULL, 0 }
};

struct args {
	const char *task;
	const char *show;
	long limit;
	bool json;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_TASK:
		a->task = arg;
		return 0;
	case OPT_SHOW:
		a->show = arg;
		return 0;
	case OPT_LIMIT:
		return forge_parse_long(&a->limit, arg, 1, 100000);
	case OPT_JSON:
		a->json = true;
		return 0;
	}
	return forge_error("unhandled option");
}

/* "implement,test", or "any" for a skill of every phase.  Consumes phases. */
static char *phase_list(jv phases)
{
	struct buf b = BUF_INIT;

	jv_array_foreach(phases, i, p) {
		buf_addf(&b, "%s%s", i ? "," : "", jv_string_value(p));
		jv_free(p);
	}
	if (b.len == 0)
		buf_adds(&b, "any");
	jv_free(phases);
	return buf_detach(&b, NULL);
}

static void list_all(const struct skill_set *set, bool json)
{
	jv all = jv_array();

	for (size_t i = 0; i < set->n; i++)
		all = jv_array_append(all, skills_to_json(&set->items[i], 0));
	if (json) {
		json_write_pretty(stdout, all);
		return;
	}
	jv_array_foreach(all, i, s) {
		char *phases = phase_list(json_get(s, "phases"));

		printf("%-24s %-14s %-22s %s\n", json_get_str(s, "name"), json_get_str(s, "category"),
		       phases, json_get_str(s, "path"));
		free(phases);
		jv_free(s);
	}
	jv_free(all);
}

static void list_matches(const struct skill_set *set, const char *phase, const struct args *a)
{
	jv m;

	skills_match(&m, set, phase, a->task, (size_t)a->limit);
	if (a->json) {
		json_write_pretty(stdout, m);
		return;
	}
	jv_array_foreach(m, i, s) {
		printf("%3g  %-24s %-14s %s\n", json_get_num(s, "score", 0), json_get_str(s, "name"),
		       json_get_str(s, "category"), json_get_str(s, "path"));
		jv_free(s);
	}
	jv_free(m);
}

static int show(const struct skill_set *set, const char *name, bool json)
{
	const struct skill *s = skills_find(set, name);

	if (!s) {
		fprintf(stderr, PROG ": no skill named '%s' (forge skills lists them)\n", name);
		return FORGE_EXIT_REJECTED;
	}
	if (json) {
		json_write_pretty(stdout, skills_to_json(s, 1));
	} else {
		size_t len = strlen(s->text);

		fputs(s->text, stdout);
		if (len && s->text[len - 1] != '\n')
			putchar('\n');
	}
	return FORGE_EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct cli_spec spec = {
		.name = PROG,
		.synopsis = "[PHASE] [--task TEXT] [--limit N] [--json]\n--show NAME [--json]",
		.description = "List the skills (SKILL.md files) found in <repo>/.forge/skills and\n"
			       "$XDG_CONFIG_HOME/forge/skills, or those matching a phase (plan,\n"
			       "implement, review, test, deploy) and/or a task, best first.",
		.options = options,
		.extra_help = "A project skill replaces a user skill of the same name.  Unusable skill\n"
			      "files are reported on stderr as warnings and skipped.  The configuration\n"
			      "(--config) is read and checked as by every program; --db is taken and not\n"
			      "opened: skills are files, not records in the database.\n",
	};
	struct cli_common common;
	struct args a = { NULL, NULL, 0, false };
	int first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	int nops = argc - first;
	const char *phase = nops > 0 ? argv[first] : NULL;
	struct skill_set *set = NULL;
	struct session ses;
	int status = FORGE_EXIT_OK;

	if (nops > 1)
		cli_usage_error(&spec, "too many arguments: '%s'", argv[first + 1]);
	if (phase && !skills_phase_valid(phase))
		cli_usage_error(&spec, "unknown phase '%s' (plan, implement, review, test, deploy)",
				phase);
	if (a.show && (phase || a.task))
		cli_usage_error(&spec, "--show takes no phase or --task");
	/* the repository (outside one: user skills only) and the configuration,
	 * as every program reads them: a --config that cannot be read is said
	 * (before: not even opened) */
	status = session_open(&ses, &common, SESSION_CONFIG, jv_null());
	if (status) {
		fprintf(stderr, PROG ": %s\n", forge_last_error());
		return cli_finish(PROG, status);
	}
	if (skills_load(&set, ses.repo, NULL) < 0) {
		fprintf(stderr, PROG ": %s\n", forge_last_error());
		session_close(&ses);
		return cli_finish(PROG, FORGE_EXIT_USAGE);
	}
	if (common.verbosity >= 0) {
		jv_array_foreach(set->warnings, i, w) {
			fprintf(stderr, PROG ": warning: %s\n", jv_string_value(w));
			jv_free(w);
		}
	}
	if (a.show)
		status = show(set, a.show, a.json);
	else if (phase || (a.task && a.task[0]))
		list_matches(set, phase, &a);
	else
		list_all(set, a.json);
	skills_free(set);
	session_close(&ses);
	return cli_finish(PROG, status);
}
