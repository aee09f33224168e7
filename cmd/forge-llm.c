/*
 * forge-llm - ask a model from the shell: `forge llm [PROMPT]`.
 *
 * The prompt is the operands joined by spaces and/or standard input (when it
 * is not a terminal; with both, the operands come first, then a blank line,
 * then stdin), like other Unix LLM tools.  The answer goes to stdout: the
 * text, or with --json the normalised response of lib/llm/llm.h (rate_limit
 * included).  Every setting comes from the layered configuration (config.h:
 * llm.provider, model, base_url, cassette, max_tokens, temperature,
 * timeout_s, stall_timeout_s, max_retries, retry_max_delay_s, pricing), so
 * FORGE_PROVIDER etc. work as its environment layer and the flags override
 * them.  --stream streams (with --json too: the response is printed at its
 * end), bounded as a whole by llm.timeout_s, since a stream kept alive by
 * pings never stalls.  While llm.provider and llm.model are still the
 * built-in defaults, the provider is chosen by the keys present (llm.h) and
 * the model is that provider's default.  Exit 0 on an answer (one cut at
 * max_tokens or by the context window too, said on stderr), 1 when the
 * model refused, 2 on a usage error (an unknown provider, a bad config), 5
 * when the provider failed after its retries (the message says what failed
 * and what to do).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "app/cli.h"
#include "data/config.h"
#include "core/forge.h"
#include "core/ids.h"
#include "core/json.h"
#include "llm/llm.h"
#include "store/store.h"

enum { OPT_SYSTEM = 256, OPT_JSON, OPT_RECORD, OPT_STREAM, OPT_MAX_TOKENS, OPT_TEMPERATURE };

static const struct cli_option options[] = {
	{ "system", 's', "TEXT", "system prompt", OPT_SYSTEM },
	{ "json", 0, NULL, "print the normalised response as one JSON line", OPT_JSON },
	{ "stream", 0, NULL, "stream the answer as it comes (--json: printed at its end)", OPT_STREAM },
	{ "record", 0, "FILE", "append every exchange to a cassette FILE", OPT_RECORD },
	{ "max-tokens", 0, "N", "longest answer in tokens (llm.max_tokens, default 8192)", OPT_MAX_TOKENS },
	{ "temperature", 0, "T", "sampling temperature 0-2, or none (llm.temperature, default 0)", OPT_TEMPERATURE },
	{ NULL, 0, NULL, NULL, 0 },
};

static const struct cli_spec spec = {
	.name = "forge-llm",
	.synopsis = "[--provider P] [--model M] [--base-url URL] [--system S] [--json] [PROMPT...]",
	.description = "Send a prompt (the operands and/or standard input) to a model and print "
		       "the answer.  Handy in pipelines and for checking a provider setup.",
	.options = options,
	.flags = CLI_MODEL_OPTIONS,
	.extra_help = "Settings come from the config (forge config), lowest first: built-in defaults,\n"
		      "~/.config/forge/config.json, .forge/config.json, --config FILE, the\n"
		      "environment, the options above.  Keys llm.provider, llm.model, llm.base_url,\n"
		      "llm.cassette, llm.max_tokens, llm.temperature, llm.timeout_s,\n"
		      "llm.stall_timeout_s, llm.max_retries, llm.retry_max_delay_s, llm.pricing.\n"
		      "llm.timeout_s bounds a call not streamed, and a streamed one as a whole\n"
		      "(its retries included), however long the server keeps it alive.\n"
		      "\nEnvironment:\n"
		      "  FORGE_PROVIDER      anthropic, openai or replay (llm.provider); unset, the\n"
		      "                      provider is picked by the key present\n"
		      "  FORGE_MODEL         the model (llm.model)\n"
		      "  FORGE_BASE_URL      the base URL (llm.base_url); OpenAI-compatible servers\n"
		      "                      end in /v1 (Ollama: http://localhost:11434/v1); one in\n"
		      "                      your config file only with a named provider\n"
		      "  FORGE_CASSETTE      the cassette to replay (llm.cassette)\n"
		      "  FORGE_CASSETTE_MODE strict or sequential\n"
		      "  FORGE_RECORD        like --record\n"
		      "  FORGE_PHASE, FORGE_ATTEMPT  which cassette entries a process answers from\n"
		      "  ANTHROPIC_API_KEY, OPENAI_API_KEY (or FORGE_ANTHROPIC_KEY_FILE,\n"
		      "  FORGE_OPENAI_KEY_FILE)  the keys; never logged\n"
		      "  ANTHROPIC_BASE_URL, OPENAI_BASE_URL  a provider's base URL\n"
		      "  FORGE_DB            log every call in the database (llm_calls)\n"
		      "\nExit status: 0 an answer (one cut at llm.max_tokens is said on stderr),\n"
		      "1 the model refused (stop_reason refusal), 2 usage error (unknown provider,\n"
		      "bad config, no prompt), 5 the provider failed after its retries, 130\n"
		      "interrupted (SIGINT/SIGTERM).\n"
		      "\nExamples:\n"
		      "  git diff | forge llm --system 'Review this diff'\n"
		      "  forge llm --provider openai --base-url http://localhost:11434/v1 \\\n"
		      "    --model llama3.2 hi\n",
};

struct args {
	const char *system, *record;
	bool json, stream;
	jv flags;                      /* config flags layer: --max-tokens, --temperature */
};

static const char *const providers[] = { "anthropic", "openai", "replay", NULL };

static int on_option(int id, const char *arg, void *payload)
{
	struct args *a = payload;

	switch (id) {
	case OPT_SYSTEM: a->system = arg; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_STREAM: a->stream = true; return 0;
	case OPT_RECORD: a->record = arg; return 0;
	case OPT_MAX_TOKENS: {
		long n;
		if (forge_parse_long(&n, arg, 1, 1000000) < 0)
			return -1;
		return config_flag_set(&a->flags, "llm.max_tokens", jv_number((double)n));
	}
	case OPT_TEMPERATURE: {
		double t;
		if (!strcmp(arg, "none"))   /* the provider's default */
			return config_flag_set(&a->flags, "llm.temperature", jv_null());
		if (forge_parse_double(&t, arg) < 0 || t < 0 || t > 2)
			return forge_error("--temperature wants a number from 0 to 2, or none");
		return config_flag_set(&a->flags, "llm.temperature", jv_number(t));
	}
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

static int ask(struct llm_client *c, const struct args *a, const struct config *cfg,
	       const char *prompt)
{
	struct llm_request req;
	struct llm_response r;
	int status = FORGE_EXIT_OK;
	double timeout_s = config_get_num(cfg, "llm.timeout_s");

	llm_request_init(&req);
	req.system = a->system;
	req.messages = jv_array_append(jv_array(), llm_msg_user(prompt));
	req.max_tokens = (int)config_get_num(cfg, "llm.max_tokens");
	req.temperature = llm_temperature(cfg, NULL);
	/* --json --stream streams too (progress, the stall watch): the
	 * normalised response is printed at its end, never the text as it
	 * comes.  A stream goes on while bytes keep coming, so llm.timeout_s
	 * bounds it as a whole (retries and their waits included): a server
	 * that only sends keep-alive pings does not hold it open. */
	req.stream = a->stream;
	req.on_text = a->json ? NULL : on_text;
	if (timeout_s <= 0)
		timeout_s = 600;   /* (the client's default) */
	if (a->stream)
		req.deadline_ms = monotonic_ms() + (long long)(timeout_s * 1000.0 + 0.5);
	int rc = llm_call(&r, c, &req);

	cli_leave_if_interrupted();     /* a Ctrl-C cut it off: it is recorded */
	if (rc < 0) {
		fprintf(stderr, "forge-llm: %s\n", forge_last_error());
		if (req.deadline_ms > 0 && r.error == LLM_ERR_TIMEOUT && monotonic_ms() >= req.deadline_ms)
			fprintf(stderr, "forge-llm: a streamed call may take llm.timeout_s (%g s) in all; "
				"raise it for a longer answer\n", timeout_s);
		status = FORGE_EXIT_DEPENDENCY;
	} else {
		print_answer(&r, a);
		/* (a cut answer is still the answer, exit 0; a reader of the
		 * text alone, a pipeline's, is told it is not whole) */
		if (r.stop == LLM_STOP_MAX_TOKENS)
			fprintf(stderr, "forge-llm: the answer was cut at llm.max_tokens (%d) before it was "
				"whole; raise it (--max-tokens)\n", req.max_tokens);
		else if (r.stop == LLM_STOP_CONTEXT_WINDOW)
			fprintf(stderr, "forge-llm: the answer was cut where the prompt and it filled the "
				"model's context window; shorten the prompt\n");
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

static void check_provider(const struct cli_spec *sp, const char *name)
{
	for (size_t i = 0; name && providers[i]; i++)
		if (!strcmp(providers[i], name))
			return;
	if (name)
		cli_usage_error(sp, "unknown provider '%s' (anthropic, openai, replay)", name);
}

/* SIGINT or SIGTERM: exit 130 as every forge program does (DESIGN.md's
 * exit table), not a death by the signal -- once the model call it cut
 * off is recorded (its llm_calls row, priced with what arrived), when one
 * ran (cli_catch_model_interrupts); a second one does not wait. */
static void on_signal(int sig)
{
	static const char msg[] = "forge-llm: interrupted\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
		/* nothing more to do */
	}
	_exit(FORGE_EXIT_INTERRUPTED);
}

int main(int argc, char **argv)
{
	struct args a = { NULL, NULL, false, false, JSON_NULL };
	struct cli_common common;
	struct llm_options opt;
	struct llm_client *c = NULL;
	struct session ses;
	struct buf prompt = BUF_INIT;
	int first, status;

	signal(SIGPIPE, SIG_IGN);   /* libcurl runs with NOSIGNAL; EPIPE is handled by cli_finish */
	first = cli_parse(&common, &spec, argc, argv, on_option, &a);
	cli_catch_model_interrupts(on_signal, NULL, 0);
	check_provider(&spec, common.provider);
	/* the database only when one is named: model calls are logged there */
	status = session_open(&ses, &common, SESSION_CONFIG | SESSION_STORE_IF_NAMED, a.flags);
	a.flags = jv_null();
	if (status) {
		fprintf(stderr, "forge-llm: %s\n", forge_last_error());
		if (status == FORGE_EXIT_USAGE && strstr(forge_last_error(), "llm.provider"))
			fprintf(stderr, "forge-llm: providers: anthropic, openai, replay\n");
		return cli_finish("forge-llm", status);
	}
	if (read_prompt(&prompt, argc, argv, first) < 0)
		cli_usage_error(&spec, "%s", forge_last_error());
	if (prompt.len == 0)
		cli_usage_error(&spec, "no prompt: give it as arguments or on standard input");
	cli_say_base_url_unused(ses.cfg, NULL, common.verbosity < 0);
	llm_options_init(&opt);
	llm_options_from_config(&opt, ses.cfg);
	opt.record = a.record;
	opt.warn = warn;
	opt.store = ses.store;
	if (llm_client_new(&c, &opt) < 0) {
		/* (a key, a provider or a URL to set: bad input, as its help says) */
		fprintf(stderr, "forge-llm: %s\n", forge_last_error());
		status = FORGE_EXIT_USAGE;
	} else {
		status = ask(c, &a, ses.cfg, prompt.buf);
	}
	jv_free(opt.pricing);   /* jv_null() once the client took it */
	llm_client_free(c);
	session_close(&ses);
	buf_release(&prompt);
	return cli_finish("forge-llm", status);
}
