/*
 * bench-llm - the LLM client's own cost per call, for scripts/bench-llm.sh:
 *
 *   bench-llm [--stream] PROVIDER BASE_URL N
 *
 * makes N sequential llm_call()s (one client, so one kept-alive connection)
 * against a server that answers at once (the mock with a zero-delay script)
 * and prints one line
 *   calls=N wall_s=W user_s=U sys_s=S
 * where user/sys are this process's CPU time (getrusage) over the calls
 * alone: what the client costs, whatever the server's speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/forge.h"
#include "llm/llm.h"

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct llm_options opt;
	struct llm_client *c = NULL;
	struct llm_request req;
	struct rusage r0, r1;
	bool stream = argc > 1 && !strcmp(argv[1], "--stream");
	int a = stream ? 2 : 1, status = FORGE_EXIT_DEPENDENCY;
	long n;
	double t0;

	if (argc - a != 3 || forge_parse_long(&n, argv[a + 2], 1, 100000000) < 0) {
		fprintf(stderr, "usage: bench-llm [--stream] PROVIDER BASE_URL N\n");
		return FORGE_EXIT_USAGE;
	}
	llm_options_init(&opt);
	opt.provider = argv[a];
	opt.base_url = argv[a + 1];
	opt.model = !strcmp(argv[a], "anthropic") ? "claude-haiku-4-5" : "gpt-4o-mini";
	opt.max_retries = 0;
	llm_request_init(&req);
	req.system = "You are terse.";
	req.messages = jv_array_append(jv_array(), llm_msg_user("Say something short."));
	req.stream = stream;
	if (llm_client_new(&c, &opt) < 0)
		goto fail;
	getrusage(RUSAGE_SELF, &r0);
	t0 = mono_s();
	for (long i = 0; i < n; i++) {
		struct llm_response resp;
		int rc = llm_call(&resp, c, &req);
		llm_response_release(&resp);
		if (rc < 0)
			goto fail;
	}
	double wall = mono_s() - t0;
	getrusage(RUSAGE_SELF, &r1);
	printf("calls=%ld wall_s=%.4f user_s=%.4f sys_s=%.4f\n", n, wall,
	       tv_s(r1.ru_utime) - tv_s(r0.ru_utime), tv_s(r1.ru_stime) - tv_s(r0.ru_stime));
	status = FORGE_EXIT_OK;
	goto out;
fail:
	fprintf(stderr, "bench-llm: %s\n", forge_last_error());
out:
	llm_request_release(&req);
	llm_client_free(c);
	return status;
}
