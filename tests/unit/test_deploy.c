/* test_deploy.c - lib/deploy: names, risk, canary ladders, percentiles,
 * health verdicts, the gate decision and prompt, the command environment. */
#include "app/prompt.h"
#include "data/config.h"
#include "deploy/deploy.h"
#include "core/forge.h"
#include "core/json.h"
#include "unit.h"

#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

static void test_strategy_names(void)
{
	enum deploy_strategy s;

	CHECK(deploy_strategy_parse(&s, "merge") == 0 && s == DEPLOY_MERGE);
	CHECK(deploy_strategy_parse(&s, "command") == 0 && s == DEPLOY_COMMAND);
	CHECK_STR(deploy_strategy_name(DEPLOY_PUSH), "push");
	CHECK(deploy_strategy_parse(&s, "teleport") < 0);
	CHECK(strstr(forge_last_error(), "'teleport'") != NULL);
	CHECK(deploy_strategy_parse(&s, NULL) < 0);
}

static void test_risk(void)
{
	CHECK_INT(deploy_risk_rank("low"), 0);
	CHECK_INT(deploy_risk_rank("critical"), 3);
	CHECK_INT(deploy_risk_rank("LOW"), -1);
	CHECK_INT(deploy_risk_rank(NULL), -1);

	const char *both = "{\"plan\":{\"risk\":{\"level\":\"low\"}},\"review\":{\"risk\":{\"level\":\"high\"}}}";
	const char *bogus = "{\"review\":{\"risk\":{\"level\":\"bogus\"}}}";
	jv st = json_parse(both, strlen(both));
	CHECK(jv_is_valid(st));
	CHECK_STR(deploy_risk_of(st), "high");
	jv_free(st);
	st = json_parse(bogus, strlen(bogus));
	CHECK_STR(deploy_risk_of(st), "medium");	/* unknown is not low */
	jv_free(st);
	CHECK_STR(deploy_risk_of(jv_null()), "medium");
}

static bool steps_are(jv steps /* consumed */, const char *want)
{
	char *got = json_dumps(steps, false);
	bool same = strcmp(got, want) == 0;

	if (!same)
		printf("#     steps %s, want %s\n", got, want);
	free(got);
	return same;
}

static void test_canary_builtin(void)
{
	jv s;

	CHECK(deploy_canary_steps(&s, NULL, "low") == 0);
	CHECK(steps_are(s, "[100]"));
	CHECK(deploy_canary_steps(&s, NULL, "medium") == 0);
	CHECK(steps_are(s, "[5,25,100]"));
	CHECK(deploy_canary_steps(&s, NULL, "high") == 0);
	CHECK(steps_are(s, "[5,10,25,50,100]"));
	CHECK(deploy_canary_steps(&s, NULL, "critical") == 0);
	CHECK(steps_are(s, "[5,10,25,50,100]"));
	CHECK(deploy_canary_steps(&s, NULL, "extreme") < 0);
	CHECK(jv_get_kind(s) == JV_KIND_NULL);
}

static void test_canary_config(void)
{
	struct config *cfg = NULL;
	char dir[] = "/tmp/forge-deploy-unit.XXXXXX";
	jv s;

	CHECK(mkdtemp(dir) != NULL);
	setenv("HOME", dir, 1);
	setenv("XDG_CONFIG_HOME", dir, 1);
	setenv("XDG_CACHE_HOME", dir, 1);	/* the tests after it make none there */
	jv flags = jv_null();
	CHECK(config_flag_assign(&flags, "deploy.canary.medium=[10,50,100]") == 0);
	struct config_sources src = { .repo = NULL, .file = NULL, .flags = flags };
	CHECK(config_load(&cfg, &src) == 0);
	CHECK(deploy_canary_steps(&s, cfg, "medium") == 0);
	CHECK(steps_are(s, "[10,50,100]"));
	CHECK(deploy_canary_steps(&s, cfg, "high") == 0);	/* the default ladder */
	CHECK(steps_are(s, "[5,10,25,50,100]"));
	config_free(cfg);
	unit_rmtree(dir);
	unsetenv("XDG_CACHE_HOME");
	/* nothing is written under a removed HOME (not /nonexistent: run as
	 * root, a cache was made at the machine's root, and a test that reads
	 * /nonexistent as gone passed only because of it) */
	setenv("HOME", dir, 1);
}

static void test_percentile(void)
{
	const double v[] = { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 };

	CHECK(deploy_percentile(v, 10, 50) == 50);
	CHECK(deploy_percentile(v, 10, 95) == 100);
	CHECK(deploy_percentile(v, 10, 0) == 10);
	CHECK(deploy_percentile(v, 1, 95) == 10);
	CHECK(deploy_percentile(v, 0, 50) == 0);
}

static void test_health_verdict(void)
{
	struct deploy_health h = { .samples = 20, .errors = 1, .error_rate = 0.05, .p50_ms = 10, .p95_ms = 900 };

	CHECK(deploy_health_ok(&h, 0.05, 1000));	/* limits are inclusive */
	CHECK(!deploy_health_ok(&h, 0.04, 1000));
	CHECK(!deploy_health_ok(&h, 0.05, 800));
	h.samples = 0;
	h.errors = 0;
	h.error_rate = 0;
	CHECK(!deploy_health_ok(&h, 1, 1e9));		/* no samples is not healthy */

	struct deploy_health e = { .samples = 4, .errors = 2, .error_rate = 0.5, .last_status = 500 };
	snprintf(e.last_error, sizeof e.last_error, "HTTP 500");
	jv j = deploy_health_json(&e);
	CHECK(json_get_num(j, "errors", -1) == 2);
	CHECK(json_get_num(j, "error_rate", -1) == 0.5);
	CHECK_STR(json_get_str(j, "error"), "HTTP 500");
	jv_free(j);
}

static void test_health_unreachable(void)
{
	struct deploy_health h;
	struct deploy_health_opts o = { .url = "http://127.0.0.1:9/health", .samples = 2, .timeout_ms = 2000 };

	CHECK(deploy_health_check(&h, &o) == 0);
	CHECK_INT(h.samples, 2);
	CHECK_INT(h.errors, 2);
	CHECK(h.error_rate == 1);
	CHECK(h.last_error[0] != '\0');
	CHECK(!deploy_health_ok(&h, 0.05, 1000));
}

static void test_gate_decision(void)
{
	struct deploy_gate g;

	deploy_gate_for(&g, NULL, false, "high");
	CHECK(g.id == NULL);
	deploy_gate_for(&g, NULL, true, "low");
	CHECK_STR(g.id, "production_deploy");
	CHECK_STR(g.prompt, "Approve production deployment.");
	CHECK(g.timeout_s == 3600);
	deploy_gate_for(&g, NULL, false, "critical");
	CHECK_STR(g.id, "critical_deploy");
	deploy_gate_for(&g, NULL, true, "critical");
	CHECK_STR(g.id, "production_deploy");	/* production wins */
}

static void test_gate_config_prompt(void)
{
	struct config *cfg = NULL;
	struct deploy_gate g;
	jv flags = jv_null();

	/* Even at automation level 4 the production gate stays. */
	CHECK(config_flag_assign(&flags, "safety.automation_level=4") == 0);
	CHECK(config_flag_assign(&flags, "gates=[{\"id\":\"production_deploy\",\"phase\":\"deploy\","
				 "\"condition\":\"true\",\"prompt\":\"Ship it?\",\"timeout_s\":60,"
				 "\"auto_approve_level\":4}]") == 0);
	struct config_sources src = { .flags = flags };
	CHECK(config_load(&cfg, &src) == 0);
	deploy_gate_for(&g, cfg, true, "low");
	CHECK_STR(g.id, "production_deploy");
	CHECK_STR(g.prompt, "Ship it?");
	CHECK(g.timeout_s == 60);
	config_free(cfg);
}

/*
 * The gate asks through lib/prompt on a pseudo-terminal standing in for
 * /dev/tty.  No timing: the answer is typed ahead (before the prompt reads
 * it), echo is off, and after the prompt returned its output is read up to a
 * marker written behind it.
 */
#define MARK "@@deploy-test-end@@"

struct pty {
	int master, slave;
	char path[128];
};

static int pty_open(struct pty *p)
{
	struct termios t;
	const char *name;

	p->slave = -1;
	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->master < 0 || grantpt(p->master) < 0 || unlockpt(p->master) < 0 ||
	    !(name = ptsname(p->master)))
		return -1;
	snprintf(p->path, sizeof p->path, "%s", name);
	p->slave = open(p->path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->slave < 0 || tcgetattr(p->slave, &t) < 0)
		return -1;
	t.c_lflag &= ~(tcflag_t)ECHO;
	return tcsetattr(p->slave, TCSANOW, &t);
}

static void pty_close(struct pty *p)
{
	if (p->slave >= 0)
		close(p->slave);
	if (p->master >= 0)
		close(p->master);
}

/* What the prompt wrote on the terminal, up to the marker. */
static bool shown(char *out, size_t cap, struct pty *p)
{
	size_t len = 0;

	if (write(p->slave, MARK, strlen(MARK)) != (ssize_t)strlen(MARK))
		return false;
	out[0] = '\0';
	while (!strstr(out, MARK)) {
		struct pollfd pf = { .fd = p->master, .events = POLLIN };
		if (len + 1 >= cap || poll(&pf, 1, 30000) <= 0)
			return false;
		ssize_t n = read(p->master, out + len, cap - 1 - len);
		if (n <= 0)
			return false;
		len += (size_t)n;
		out[len] = '\0';
	}
	return true;
}

static enum prompt_answer ask_on_pty(struct pty *p, const char *typed, double timeout_s)
{
	struct deploy_gate g = { .id = "production_deploy", .timeout_s = timeout_s };

	snprintf(g.prompt, sizeof g.prompt, "Approve production deployment.");
	if (typed && write(p->master, typed, strlen(typed)) != (ssize_t)strlen(typed))
		return (enum prompt_answer)-1;
	return deploy_gate_ask(&g, "summary line", p->path);
}

static void test_gate_ask(void)
{
	struct pty p;
	char out[8192];

	CHECK(deploy_gate_ask(&(struct deploy_gate){ .id = "x", .timeout_s = 1 }, NULL,
			      "/nonexistent/tty") == PROMPT_NO_TTY);
	CHECK(pty_open(&p) == 0);
	CHECK_INT(ask_on_pty(&p, "y\n", 10), PROMPT_APPROVE);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "summary line") != NULL);
	CHECK(strstr(out, "Approve production deployment. [y/n] ") != NULL);
	CHECK_INT(ask_on_pty(&p, "no\n", 10), PROMPT_REJECT);
	/* Enter alone and a typo ask again; they are not a "no" */
	CHECK_INT(ask_on_pty(&p, "\nyep\nYes\n", 10), PROMPT_APPROVE);
	CHECK(shown(out, sizeof out, &p));
	CHECK(strstr(out, "please answer y (yes) or n (no)") != NULL);
	/* Ctrl-D and no answer in time leave the gate waiting */
	CHECK_INT(ask_on_pty(&p, "\x04", 10), PROMPT_EOF);
	CHECK_INT(ask_on_pty(&p, NULL, 0.05), PROMPT_TIMEOUT);
	pty_close(&p);
}

static bool has(char **env, const char *entry)
{
	for (size_t i = 0; env[i]; i++)
		if (strcmp(env[i], entry) == 0)
			return true;
	return false;
}

static bool has_name(char **env, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; env[i]; i++)
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
			return true;
	return false;
}

static void test_env(void)
{
	const char *extra[] = { "FORGE_DEPLOY_PERCENT=25", NULL };

	setenv("ANTHROPIC_API_KEY", "sk-ant-unit-secret-123456", 1);
	setenv("FORGE_DEPLOY_PERCENT", "99", 1);
	setenv("DEPLOY_UNIT_KEEP", "1", 1);
	setenv("FORGE_DEPLOY_DIR", "/srv/app", 1);	/* the user's own: kept */
	char **env = deploy_env_new(extra);
	bool ok = !has_name(env, "ANTHROPIC_API_KEY") && has(env, "FORGE_DEPLOY_PERCENT=25") &&
		  !has(env, "FORGE_DEPLOY_PERCENT=99") && has(env, "DEPLOY_UNIT_KEEP=1") &&
		  has(env, "FORGE_DEPLOY_DIR=/srv/app");
	size_t percents = 0;
	for (size_t i = 0; env[i]; i++)
		percents += strncmp(env[i], "FORGE_DEPLOY_PERCENT=", 21) == 0;
	deploy_env_free(env);
	unsetenv("ANTHROPIC_API_KEY");
	unsetenv("FORGE_DEPLOY_PERCENT");
	unsetenv("DEPLOY_UNIT_KEEP");
	unsetenv("FORGE_DEPLOY_DIR");
	CHECK(ok);
	CHECK_INT((int)percents, 1);
}

static void test_env_set(void)
{
	const char *vars[] = { "FORGE_DEPLOY_STEP=2", "FORGE_DEPLOY_REF=forge/t1", "FORGE_DEPLOY_STEP=3", NULL };
	char **env = xcalloc(4, sizeof *env);

	env[0] = xstrdup("FORGE_DEPLOY_STEPX=keep");
	env[1] = xstrdup("FORGE_DEPLOY_STEP=1");
	env[2] = xstrdup("FORGE_DEPLOY_DIR=/srv/app");
	env = deploy_env_set(env, vars);
	CHECK_STR(env[0], "FORGE_DEPLOY_STEPX=keep");	/* a longer name is another name */
	CHECK_STR(env[1], "FORGE_DEPLOY_STEP=3");	/* replaced in place; the last one wins */
	CHECK_STR(env[2], "FORGE_DEPLOY_DIR=/srv/app");
	CHECK_STR(env[3], "FORGE_DEPLOY_REF=forge/t1");	/* a new name is appended */
	CHECK(env[4] == NULL);
	deploy_env_free(env);
	env = deploy_env_set(NULL, vars);
	CHECK(env[0] && env[1] && !env[2]);
	deploy_env_free(env);
	env = deploy_env_set(NULL, NULL);
	CHECK(env[0] == NULL);
	deploy_env_free(env);
}

static void test_run_command(void)
{
	struct deploy_cmd_result r;
	const char *extra[] = { "FORGE_DEPLOY_PERCENT=5", NULL };
	char **env = deploy_env_new(extra);

	int rc = deploy_run_command(&r, "echo at $FORGE_DEPLOY_PERCENT; echo err >&2", "/", env, 10000, 0, NULL, false);
	bool ok = rc == 0 && r.exit_code == 0 && strcmp(r.output, "at 5\nerr\n") == 0;
	deploy_cmd_result_release(&r);
	deploy_env_free(env);
	CHECK(ok);
	CHECK(deploy_run_command(&r, "exit 7", "/", NULL, 10000, 0, NULL, false) < 0);
	CHECK_INT(r.exit_code, 7);
	CHECK(strstr(forge_last_error(), "status 7") != NULL);
	deploy_cmd_result_release(&r);
	CHECK(deploy_run_command(&r, "true", "/nonexistent/dir", NULL, 10000, 0, NULL, false) < 0);
	CHECK_INT(r.exit_code, -1);
	deploy_cmd_result_release(&r);
}

int main(void)
{
	RUN(test_strategy_names);
	RUN(test_risk);
	RUN(test_canary_builtin);
	RUN(test_canary_config);
	RUN(test_percentile);
	RUN(test_health_verdict);
	RUN(test_health_unreachable);
	RUN(test_gate_decision);
	RUN(test_gate_config_prompt);
	RUN(test_gate_ask);
	RUN(test_env);
	RUN(test_env_set);
	RUN(test_run_command);
	return unit_done();
}
