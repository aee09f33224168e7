/*
 * forge-metrics - the feedback-loop figures (seed 000 section 10.7)
 * computed from the database: iterations, tool success, bounces, learnings,
 * dismissals, overrides, cost and success over time.
 *
 * Each figure has its basis n; a figure without data is null ("-").
 * Exit status: 0 done; 2 usage; 5 the database failed.
 */
#include "app/cli.h"
#include "core/forge.h"
#include "core/json.h"
#include "memory/memory.h"
#include "store/store.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

enum { OPT_JSON = 256 };

static const struct cli_option options[] = {
	{ "json", 0, NULL, "one JSON object instead of text", OPT_JSON },
	{ NULL, 0, NULL, NULL, 0 }
};

static const struct cli_spec spec = {
	.name = "forge-metrics",
	.synopsis = "[--json]",
	.description = "How well forge's feedback loops work, from the runs, events, findings and\n"
		       "memories in the database.",
	.options = options,
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

int main(int argc, char **argv)
{
	struct cli_common common;
	struct memory_cli c;
	bool json = false;
	int first = cli_parse(&common, &spec, argc, argv, on_option, &json), status;
	jv out;

	signal(SIGPIPE, SIG_IGN);
	if (first < argc)
		cli_usage_error(&spec, "unexpected operand '%s'", argv[first]);
	if (memory_cli_open_readonly(&status, &c, &common) < 0 || memory_metrics(&out, c.st) < 0) {
		fprintf(stderr, "forge-metrics: %s\n", forge_last_error());
		memory_cli_close(&c);
		return cli_finish("forge-metrics", status ? status : FORGE_EXIT_DEPENDENCY);
	}
	if (json) {
		json_write_line(stdout, out, false);
	} else {
		jv_object_foreach(out, k, v) {
			if (jv_get_kind(v) == JV_KIND_OBJECT) {
				jv val = json_get(v, "value");

				if (jv_get_kind(val) == JV_KIND_NUMBER)
					printf("%-28s %10.3f  (n=%.0f)\n", jv_string_value(k), jv_number_value(val),
					       json_get_num(v, "n", 0));
				else
					printf("%-28s %10s  (n=%.0f)\n", jv_string_value(k), "-", json_get_num(v, "n", 0));
				jv_free(val);
			}
			jv_free(k);
			jv_free(v);
		}
		jv_free(out);
	}
	memory_cli_close(&c);
	return cli_finish("forge-metrics", 0);
}
