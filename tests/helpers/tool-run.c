/*
 * tool-run - run one tool call against a directory, for tests.
 *
 *   tool-run [-C ROOT] [--tmp DIR] [--approved] [--sandbox JSON] [--repeat N] NAME [INPUT-JSON]
 *   tool-run --features
 *   tool-run --check-command COMMAND        prints allow | ask RULE | deny RULE
 *
 * Prints the result as one JSON line {"ok","kind","retryable","output",
 * "error","data"} and exits 0 when ok, 1 when not, 2 on usage errors.
 * --sandbox gives the config "sandbox" section (defaults for missing keys).
 * --repeat N runs the call N times (the last result is printed) and prints
 * "mean_ms M" to stderr: the mean wall time of a call, to measure overhead.
 */
#include "core/forge.h"
#include "core/json.h"
#include "os/sandbox.h"
#include "agent/tools.h"
#include "git/git.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int usage(void)
{
	fprintf(stderr, "usage: tool-run [-C ROOT] [--tmp DIR] [--approved] [--sandbox JSON] [--repeat N] NAME [INPUT]\n"
			"       tool-run [--sandbox JSON] --features | --check-command COMMAND\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct tool_ctx ctx = { 0 };
	struct sandbox_policy *policy = NULL;
	struct tool_result r;
	const char *root = ".", *section = NULL, *check = NULL;
	bool features = false;
	jv input, out, sec = jv_null();
	int i, rc;
	long repeat = 1;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-C") && i + 1 < argc)
			root = argv[++i];
		else if (!strcmp(argv[i], "--tmp") && i + 1 < argc)
			ctx.tmp_dir = argv[++i];
		else if (!strcmp(argv[i], "--approved"))
			ctx.approved = true;
		else if (!strcmp(argv[i], "--sandbox") && i + 1 < argc)
			section = argv[++i];
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--features"))
			features = true;
		else if (!strcmp(argv[i], "--check-command") && i + 1 < argc)
			check = argv[++i];
		else
			return usage();
	}
	if (section) {
		sec = json_parse(section, strlen(section));
		if (!jv_is_valid(sec)) {
			char *m = json_invalid_msg(sec);
			fprintf(stderr, "tool-run: --sandbox: %s\n", m);
			free(m);
			return 2;
		}
	}
	sandbox_set_identity_source(forge_git_identity);   /* as session_open() does */
	sandbox_set_gitlinks_source(forge_git_gitlinks);
	sandbox_set_run_root_source(forge_git_is_run_root);
	rc = sandbox_policy_new(&policy, sec);
	jv_free(sec);
	if (rc < 0) {
		fprintf(stderr, "tool-run: %s\n", forge_last_error());
		return 2;
	}
	if (features) {
		jv f;
		sandbox_features(&f, policy);
		json_write_line(stdout, f, false);
		sandbox_policy_free(policy);
		return 0;
	}
	if (check) {
		const char *rule = NULL;
		enum sandbox_verdict v = sandbox_check_command(policy, check, &rule);
		printf("%s%s%s\n", v == SANDBOX_DENY ? "deny" : v == SANDBOX_ASK ? "ask" : "allow",
		       rule ? " " : "", rule ? rule : "");
		sandbox_policy_free(policy);
		return 0;
	}
	if (i >= argc)
		return usage();
	input = i + 1 < argc ? json_parse(argv[i + 1], strlen(argv[i + 1])) : jv_object();
	if (!jv_is_valid(input)) {
		char *m = json_invalid_msg(input);
		fprintf(stderr, "tool-run: input: %s\n", m);
		free(m);
		sandbox_policy_free(policy);
		return 2;
	}
	ctx.root = root;
	ctx.policy = policy;
	{
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long k = 1; k < repeat; k++) {
			tools_run(&r, argv[i], &ctx, input);
			tool_result_release(&r);
		}
		tools_run(&r, argv[i], &ctx, input);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (repeat > 1)
			fprintf(stderr, "mean_ms %.3f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e3 +
						       (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / (double)repeat);
	}
	out = json_set(jv_object(), "ok", jv_bool(r.ok));
	out = json_set(out, "kind", jv_string(tool_kind_name(r.kind)));
	out = json_set(out, "retryable", jv_bool(r.retryable));
	out = json_set(out, "output", json_str_or_null(r.output));
	out = json_set(out, "error", json_str_or_null(r.error));
	out = json_set(out, "data", jv_copy(r.data));
	json_write_line(stdout, out, false);
	rc = r.ok ? 0 : 1;
	tool_result_release(&r);
	jv_free(input);
	sandbox_policy_free(policy);
	return rc;
}
