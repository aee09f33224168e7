/*
 * forge-llm - ask a model from the shell: `forge llm [PROMPT]`.
 *
 * The prompt is the operands joined by spaces and/or standard input (when it
 * is not a terminal; with both, the operands come first, then a blank line,
 * then stdin), like other Unix LLM tools.  The answer goes to stdout: the
 * text, or with --json the normalised response of lib/llm.h.  Exit 0 on an
 * answer, 1 when the model refused, 2 on a usage error, 5 when the provider
 * failed after its retries (the message says what failed and what to do).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "forge.h"
#include "json.h"
#include "llm.h"
#include "store.h"

enum { OPT_SYSTEM = 256, OPT_JSON, OPT_RECORD, OPT_STREAM, OPT_MAX_TOKENS, OPT_TEMPERATURE };

static const struct cli_option options[] = {
	{ "system", 's', "TEXT", "system prompt", OPT_SYSTEM },
	{ "json", 0, NULL, "print the normalised response as one JSON line", OPT_JSON },
	{ "stream", 0, NULL, "stream the answer as it is generated", OPT_STREAM },
	{ "record", 0, "FILE", "append every exchange to a cassette FILE", OPT_RECORD },
	{ "max-tokens", 0, "N", "longest answer in tokens (default 4096)", OPT_MAX_TOKENS },
	{ "temperature", 0, "T", "sampling temperature", OPT_TEMPERATURE },
	{ NULL, 0, NULL, NULL, 0 },
};

static const struct cli_spec spec = {
	.name = "forge-llm",
	.synopsis = "[--provider P] [--model M] [--base-url URL] [--system S] [--json] [PROMPT...]",
	.description = "Send a prompt (the operands and/or standard input) to a model and print "
		       "the answer.  Handy in pipelines and for checking a provider setup.",
	.options = options,
	.flags = CLI_MODEL_OPTIONS,
	.extra_help = "Keys: ANTHROPIC_API_KEY, OPENAI_API_KEY (or FORGE_ANTHROPIC_KEY_FILE,\n"
		      "FORGE_OPENAI_KEY_FILE).  Exit: 0 answer, 1 refused, 2 usage, 5 provider failed.\n"
		      "Examples:\n"
		      "  git diff | forge llm --system 'Review this diff' \n"
		      "  forge llm --provider openai --base-url http://localhost:11434/v1 --model llama3.2 hi\n",
};

struct args {
	const char *system, *record;
	bool json, stream;
	long max_tokens;
	double temperature;
};

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_SYSTEM: a->system = arg; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_STREAM: a->stream = true; return 0;
	case OPT_RECORD: a->record = arg; return 0;
	case OPT_MAX_TOKENS: return forge_parse_long(&a->max_tokens, arg, 1, 1000000);
	case OPT_TEMPERATURE:
		if (forge_parse_double(&a->temperature, arg) < 0 || a->temperature < 0 || a->temperature > 2)
			return forge_error("--temperature wants a number from 0 to 2");
		return 0;
	default: return forge_error("unknown option");
	}
}

static int read_prompt(struct buf *out, int argc, char **argv, int first)
{
	char tmp[8192];
	size_t n;

	for (int i = first; i < argc; i++)
		buf_addf(out, "%s%s", i > first ? " " : "", argv[i]);
	if (isatty(STDIN_FILENO))
		return 0;
	size_t before = out->len;
	if (before)
		buf_adds(out, "\n\n");
	while ((n = fread(tmp, 1, sizeof tmp, stdin)) > 0)
		if (buf_add(out, tmp, n) < 0)
			return forge_error("the prompt is too large");
	if (ferror(stdin))
		return forge_error("cannot read standard input");
	if (out->len == before + (before ? 2 : 0))
		out->buf[out->len = before] = '\0';   /* empty stdin */
	return 0;
}

static void warn(void *payload, const char *msg)
{
	(void)payload;
	fprintf(stderr, "forge-llm: warning: %s\n", msg);
}

static void on_text(void *payload, const char *text, size_t len)
{
	(void)payload;
	fwrite(text, 1, len, stdout);
	fflush(stdout);
}

static int open_store(struct store **out, const struct cli_common *common)
{
	char *path = NULL;
	int rc;

	*out = NULL;
	if (!common->db && !getenv("FORGE_DB"))
		return 0;   /* logging only when a database was named */
	rc = store_resolve_path(&path, common->db, NULL);
	if (rc == 0)
		rc = store_open(out, path);
	free(path);
	return rc;
}

static int print_answer(const struct llm_response *r, const struct args *a)
{
	size_t len = strlen(r->text);

	if (a->json)
		return json_write_line(stdout, llm_response_to_json(r), false);
	if (!a->stream)
		fwrite(r->text, 1, len, stdout);
	for (size_t i = 0; i < r->ncalls; i++) {
		char *input = json_dumps(jv_copy(r->calls[i].input), false);
		printf("%s%s(%s)\n", len || i ? "\n" : "", r->calls[i].name, input);
		free(input);
	}
	if ((len || a->stream) && !r->ncalls && (len == 0 || r->text[len - 1] != '\n'))
		putchar('\n');
	return 0;
}

static int ask(struct llm_client *c, const struct args *a, const char *prompt)
{
	struct llm_request req;
	struct llm_response r;
	int status = FORGE_EXIT_OK;

	llm_request_init(&req);
	req.system = a->system;
	req.messages = jv_array_append(jv_array(), llm_msg_user(prompt));
	req.max_tokens = (int)a->max_tokens;
	req.temperature = a->temperature;
	req.stream = a->stream && !a->json;
	req.on_text = on_text;
	if (llm_call(&r, c, &req) < 0) {
		fprintf(stderr, "forge-llm: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else {
		print_answer(&r, a);
		if (r.stop == LLM_STOP_REFUSAL) {
			fprintf(stderr, "forge-llm: the model refused%s%s\n", r.stop_detail ? ": " : "",
				r.stop_detail ? r.stop_detail : "");
			status = FORGE_EXIT_REJECTED;
		}
	}
	llm_response_release(&r);
	llm_request_release(&req);
	return status;
}

int main(int argc, char **argv)
{
	struct args a = { NULL, NULL, false, false, 0, -1 };
	struct cli_common common;
	struct llm_options opt;
	struct llm_client *c = NULL;
	struct store *st = NULL;
	struct buf prompt = BUF_INIT;
	int first, status;

	signal(SIGPIPE, SIG_IGN);   /* libcurl runs with NOSIGNAL; EPIPE is handled by cli_finish */
	first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	if (read_prompt(&prompt, argc, argv, first) < 0)
		cli_usage_error(&spec, "%s", forge_last_error());
	if (prompt.len == 0)
		cli_usage_error(&spec, "no prompt: give it as arguments or on standard input");
	llm_options_init(&opt);
	opt.provider = common.provider;
	opt.model = common.model;
	opt.base_url = common.base_url;
	opt.cassette = common.cassette;
	opt.record = a.record;
	opt.warn = warn;
	if (open_store(&st, &common) < 0) {
		fprintf(stderr, "forge-llm: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else if ((opt.store = st, llm_client_new(&c, &opt)) < 0) {
		fprintf(stderr, "forge-llm: %s\n", forge_last_error());
		status = FORGE_EXIT_DEPENDENCY;
	} else {
		status = ask(c, &a, prompt.buf);
	}
	llm_client_free(c);
	store_free(st);
	buf_release(&prompt);
	return cli_finish("forge-llm", status);
}
