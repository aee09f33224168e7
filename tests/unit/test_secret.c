/* test_secret.c - keys redacted by value (llm.h: llm_secret_*, llm_redact_*)
 * in records, the database and commits; worktree commands in the sandbox
 * (sandbox_job.h); .forge off limits (sandbox_path_is_forge). */
#include "core/buf.h"
#include "core/forge.h"
#include "git/git.h"
#include "core/json.h"
#include "core/secret.h"
#include "core/secret_forms.h"
#include "git/diff.h"
#include "os/landlock.h"
#include "llm/llm.h"
#include "os/sandbox.h"
#include "os/sandbox_job.h"
#include "review/review.h"
#include "store/store.h"
#include "data/stream.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY "sk-ant-unit-SECRET-0123456789abcdef"

static char tmp[128];

#define SH(...) do { \
	char cmd_[1024]; \
	snprintf(cmd_, sizeof cmd_, __VA_ARGS__); \
	if (system(cmd_) != 0) \
		printf("# failed: %s\n", cmd_); \
} while (0)

static bool file_has(const char *path, const char *what)
{
	struct buf b = BUF_INIT;
	bool has = buf_read_file(&b, path) == 0 && memmem(b.buf, b.len, what, strlen(what));

	buf_release(&b);
	return has;
}

/* Run first: the key is in the environment the program started with
 * (main re-executes itself with it). */
static void test_protect(void)
{
	char path[64];

	CHECK(file_has("/proc/self/environ", KEY));
	llm_secret_protect();
	llm_secret_protect();       /* idempotent */
	CHECK_INT(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	/* getenv still answers (the key moved to the heap) ... */
	CHECK_STR(getenv("ANTHROPIC_API_KEY"), KEY);
	CHECK_STR(getenv("UNIT_OTHER"), "stays");
	CHECK(llm_secret_in(KEY, strlen(KEY)));
	/* ... and the environment block /proc shows holds it no more */
	snprintf(path, sizeof path, "/proc/%ld/environ", (long)getpid());
	CHECK(!file_has(path, KEY));
}

static void test_redact(void)
{
	const char text[] = "a " KEY " b\0" KEY;
	size_t n;
	char *r = llm_redact_mem(text, sizeof text - 1, &n);

	CHECK_INT((int)n, (int)strlen("a [REDACTED] b") + 1 + 10);
	CHECK(memcmp(r, "a [REDACTED] b\0[REDACTED]", n) == 0);
	CHECK(r[n] == '\0');
	free(r);
	r = llm_redact_mem("clean", 5, &n);
	CHECK_STR(r, "clean");
	free(r);
	CHECK(!llm_secret_in("sk-ant-unit-SECRET", 18));

	jv v = jv_parse("{\"a\":[\"x " KEY "\",1,{\"" KEY "\":\"" KEY KEY "\"}],\"b\":null}");
	v = llm_redact_jv(v);
	char *s = json_dumps(v, false);
	CHECK_STR(s, "{\"a\":[\"x [REDACTED]\",1,{\"[REDACTED]\":\"[REDACTED][REDACTED]\"}],\"b\":null}");
	free(s);
}

/* A URL's password: shown as ***, registered as a secret (long ones),
 * hidden in any string however short; a URL without one is unchanged. */
static void test_url_passwords(void)
{
	char *shown = secret_url_shown("https://bot:pw-0123456789ab@git.example/r.git");
	char *text = xstrdup("pushing with pw-0123456789ab failed");

	CHECK_STR(shown, "https://bot:***@git.example/r.git");
	CHECK_STR(llm_redact(text), "pushing with [REDACTED] failed");
	free(shown);
	free(text);
	shown = secret_url_shown("https://git.example/r.git");
	CHECK_STR(shown, "https://git.example/r.git");
	free(shown);
	shown = secret_url_shown("git@github.com:org/r.git");
	CHECK_STR(shown, "git@github.com:org/r.git");
	free(shown);
	jv v = secret_url_passwords_hidden_jv(JV_OBJECT(jv_string("git"),
		jv_string("remote http://u:pw@h:8080/x and https://a:b@c/ but not mailto:me@x or http://h/a@b")));
	jv got = jv_object_get(v, jv_string("git"));
	CHECK_STR(jv_string_value(got),
		  "remote http://u:***@h:8080/x and https://a:***@c/ but not mailto:me@x or http://h/a@b");
	jv_free(got);
	/* registered from a configuration's text before any URL is shown */
	secret_url_passwords_add("{\"push_remote\":\"http://u:another-long-pass@h/x\"}", 44);
	text = xstrdup("another-long-pass");
	CHECK_STR(llm_redact(text), "[REDACTED]");
	free(text);
}

/* One example of each secret form (core/secret_forms.h), in their order:
 * the line and the secret in it.  A new form needs an example here. */
static const struct {
	const char *line, *secret;
} form_examples[] = {
	{ "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----" },
	{ "id AKIAQ3ZT7XWL5NBR2MKD here", "AKIAQ3ZT7XWL5NBR2MKD" },
	{ "aws_secret_access_key = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq4Rt9sLwQ\"",
	  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq4Rt9sLwQ" },
	{ "token ghp_4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ.", "ghp_4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ" },
	{ "pat github_pat_11AQ3ZT7XW0aB9cD8eF7gH6iJ5kL4mN3oP2qR1sT0uV9wX8yZ7",
	  "github_pat_11AQ3ZT7XW0aB9cD8eF7gH6iJ5kL4mN3oP2qR1sT0uV9wX8yZ7" },
	{ "slack xoxb-2718281828-Q7wErTyUiOpAsDfG", "xoxb-2718281828-Q7wErTyUiOpAsDfG" },
	{ "hook https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/q8Zr2LmV0xNc7TpW",
	  "hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/q8Zr2LmV0xNc7TpW" },
	{ "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc" },
	{ "maps AIzaSyD4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9f", "AIzaSyD4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9f" },
	{ "key sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210", "sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210" },
	{ "key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789" },
	{ "db_password = \"q8Zr2LmV0xNc7TpW\"", "q8Zr2LmV0xNc7TpW" },
	{ "export API_TOKEN=q8Zr2LmV0xNc7TpWk3 next", "q8Zr2LmV0xNc7TpWk3" },
};

/* Every form the review's scanner reports is hidden by the redaction
 * memory uses (secret_tokens_hidden_jv): one list, both ways. */
static void test_secret_forms(void)
{
	CHECK_INT((int)(sizeof form_examples / sizeof form_examples[0]), SECRET_NFORMS);
	for (size_t i = 0; i < sizeof form_examples / sizeof form_examples[0] && i < SECRET_NFORMS; i++) {
		const char *line = form_examples[i].line, *secret = form_examples[i].secret;
		struct buf d = BUF_INIT;
		struct diff *diff = NULL;
		jv out = jv_invalid(), v = secret_tokens_hidden_jv(jv_array_append(jv_array(), jv_string(line)));
		jv got = jv_array_get(jv_copy(v), 0);
		const char *hidden = jv_string_value(got);

		if (!strstr(hidden, "[REDACTED]") || strstr(hidden, secret)) {
			fprintf(stderr, "form %s: '%s' became '%s'\n", secret_forms[i].id, line, hidden);
			CHECK(false);
		}
		jv_free(got);
		/* the scanner finds it, under the form's own rule */
		buf_addf(&d, "diff --git a/conf.txt b/conf.txt\nnew file mode 100644\n--- /dev/null\n"
			 "+++ b/conf.txt\n@@ -0,0 +1 @@\n+%s\n", line);
		CHECK_INT(diff_parse(&diff, d.buf, d.len), 0);
		CHECK_INT(review_secrets(&out, diff), 0);
		CHECK_INT(jv_array_length(jv_copy(out)), 1);
		jv f = jv_array_get(jv_copy(out), 0);
		const char *rule = json_get_str(f, "rule");
		if (!rule || strcmp(rule, secret_forms[i].id) != 0) {
			fprintf(stderr, "form %s: the scanner says %s\n", secret_forms[i].id, rule ? rule : "nothing");
			CHECK(false);
		}
		jv_free(f);
		jv_free(out);
		jv_free(v);
		diff_free(diff);
		buf_release(&d);
	}
	/* not secrets: too short, or not at a word's start */
	jv v = secret_tokens_hidden_jv(jv_string("ghp_short, desk-AbCdEfGhIjKlMnOpQrStUvWxYz, task-sk-ant-x, AKIA1234"));
	CHECK_STR(jv_string_value(v), "ghp_short, desk-AbCdEfGhIjKlMnOpQrStUvWxYz, task-sk-ant-x, AKIA1234");
	jv_free(v);
}

static void test_stream_and_store(void)
{
	char path[256];
	struct stream_out out;
	FILE *f;

	snprintf(path, sizeof path, "%s/out.jsonl", tmp);
	f = fopen(path, "w");
	stream_out_init(&out, f, "unit", "test");
	stream_out_set_trace(&out, "t1");
	CHECK_INT(stream_emit(&out, "tool.executed", json_set(jv_object(), "output", jv_string("got " KEY))), 0);
	CHECK_INT(stream_write_raw(&out, "{\"raw\":\"" KEY "\"}", strlen(KEY) + 10), 0);
	fclose(f);
	CHECK(!file_has(path, KEY));
	CHECK(file_has(path, "\"output\":\"got [REDACTED]\""));
	CHECK(file_has(path, "{\"raw\":\"[REDACTED]\"}"));

	struct store *st = NULL;
	snprintf(path, sizeof path, "%s/forge.db", tmp);
	CHECK_MSG(store_open(&st, path) == 0, "%s", forge_last_error());
	jv ev = jv_parse("{\"kind\":\"event\",\"id\":\"01JDB3AAAAAAAAAAAAAAAAAAAA\",\"trace_id\":\"t1\","
			 "\"ts\":\"2026-11-21T21:30:00.123Z\",\"source\":\"unit\",\"phase\":\"test\","
			 "\"type\":\"x\",\"payload\":{\"o\":\"" KEY "\"}}");
	CHECK_INT(store_event_put(st, ev, NULL, 0, NULL), 0);
	jv state = jv_parse("{\"phase\":\"test\",\"status\":\"ok\",\"changes\":{\"diff\":\"+" KEY "\"}}");
	CHECK_INT(store_checkpoint_save(st, "t1", "test", state, NULL), 0);
	jv_free(ev);
	jv_free(state);
	store_free(st);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "sqlite3 %s/forge.db .dump > %s/dump.sql", tmp, tmp);
	CHECK(system(cmd) == 0);
	snprintf(path, sizeof path, "%s/dump.sql", tmp);
	CHECK(!file_has(path, KEY));
	CHECK(file_has(path, "{\"o\":\"[REDACTED]\"}"));
	CHECK(file_has(path, "+[REDACTED]"));
}

static void test_commit(void)
{
	char repo[256], file[512];
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	char *sha = NULL;
	jv red = jv_null();

	snprintf(repo, sizeof repo, "%s/repo", tmp);
	SH("git init -q -b main %s && git -C %s -c user.name=u -c user.email=u@x commit -q --allow-empty -m init"
	   " && echo '.forge/' > %s/.git/info/exclude", repo, repo, repo);
	CHECK_MSG(forge_git_open(&g, repo) == 0, "%s", forge_last_error());
	CHECK_MSG(forge_git_worktree_open(&wt, g, "01JDB3AAAAAAAAAAAAAAAAAAAA", NULL) == 0, "%s", forge_last_error());
	if (!wt)
		goto out;
	snprintf(file, sizeof file, "%s/src.c", forge_git_worktree_path(wt));
	FILE *f = fopen(file, "w");
	fputs("const char *k = \"" KEY "\";\n", f);
	fclose(f);
	snprintf(file, sizeof file, "%s/clean.c", forge_git_worktree_path(wt));
	f = fopen(file, "w");
	fputs("int x;\n", f);
	fclose(f);
	CHECK_INT(forge_git_redact_secrets(&red, wt), 0);
	char *s = json_dumps(red, false);
	CHECK_STR(s, "[\"src.c\"]");
	free(s);
	snprintf(file, sizeof file, "%s/src.c", forge_git_worktree_path(wt));
	f = fopen(file, "a");
	fputs("/* again: " KEY " */\n", f);     /* commit_all redacts by itself too */
	fclose(f);
	CHECK_MSG(forge_git_commit_all(&sha, wt, "add " KEY) == 0, "%s", forge_last_error());
	CHECK(!file_has(file, KEY));
	CHECK(file_has(file, "k = \"[REDACTED]\";\n/* again: [REDACTED] */"));
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "git -C %s log -p --all > %s/log.txt", repo, tmp);
	CHECK(system(cmd) == 0);
	snprintf(file, sizeof file, "%s/log.txt", tmp);
	CHECK(!file_has(file, KEY));
	CHECK(file_has(file, "add [REDACTED]"));
	/* forge_git_commit_all_redacted says which files it redacted */
	free(sha);
	sha = NULL;
	snprintf(file, sizeof file, "%s/more.c", forge_git_worktree_path(wt));
	f = fopen(file, "w");
	fputs("char *m = \"" KEY "\";\n", f);
	fclose(f);
	CHECK_MSG(forge_git_commit_all_redacted(&sha, &red, wt, "more") == 0, "%s", forge_last_error());
	s = json_dumps(red, false);     /* (consumes red) */
	CHECK_STR(s, "[\"more.c\"]");
	free(s);
	CHECK(!file_has(file, KEY));
	free(sha);
	sha = NULL;
	CHECK_INT(forge_git_commit_all_redacted(&sha, &red, wt, "nothing"), FORGE_GIT_NOTHING);
	CHECK_INT(jv_array_length(red), 0);     /* (consumes red) */
out:
	free(sha);
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

static void test_job(void)
{
	char root[256], outside[256], cmd[1024];
	struct proc_result r;
	jv unconfined;

	snprintf(root, sizeof root, "%s/root", tmp);
	snprintf(outside, sizeof outside, "%s/outside", tmp);
	SH("mkdir -p %s %s", root, outside);
	snprintf(cmd, sizeof cmd, "echo x > %s/w; echo in > inside; env", outside);
	struct sandbox_job job = { .command = cmd, .root = root, .output_cap = 1 << 20 };
	CHECK_MSG(sandbox_job_run(&r, &unconfined, &job) == 0, "%s", forge_last_error());
	CHECK(!strstr(r.out.buf, KEY));
	CHECK(!strstr(r.out.buf, "UNIT_OTHER"));
	CHECK(strstr(r.out.buf, "TERM=dumb") != NULL);
	snprintf(cmd, sizeof cmd, "%s/inside", root);
	CHECK(access(cmd, F_OK) == 0);
	snprintf(cmd, sizeof cmd, "%s/w", outside);
	if (landlock_abi() >= 1)
		CHECK(access(cmd, F_OK) != 0);
	proc_result_release(&r);
	jv_free(unconfined);

	/* the network: cut by default, kept with allow_network (a deploy
	 * command); FORGE_DEPLOY_* passed with pass_env */
	struct proc_result host;
	const char *count = "echo p=$FORGE_DEPLOY_PERCENT; awk 'NR > 2' /proc/net/dev | wc -l";
	setenv("FORGE_DEPLOY_PERCENT", "25", 1);
	job.command = count;
	job.pass_env = (const char *const[]){ "FORGE_DEPLOY_PERCENT", NULL };
	CHECK_MSG(sandbox_job_run(&r, &unconfined, &job) == 0, "%s", forge_last_error());
	job.allow_network = true;
	CHECK_MSG(sandbox_job_run(&host, NULL, &job) == 0, "%s", forge_last_error());
	CHECK(strncmp(host.out.buf, "p=25\n", 5) == 0);
	if (jv_get_kind(unconfined) == JV_KIND_NULL)    /* a network namespace was made */
		CHECK_STR(r.out.buf, "p=25\n1\n");    /* lo alone */
	if (strcmp(host.out.buf, "p=25\n1\n") != 0)   /* the host has more than lo */
		CHECK(strcmp(host.out.buf, r.out.buf) != 0);
	proc_result_release(&r);
	proc_result_release(&host);
	jv_free(unconfined);
	unsetenv("FORGE_DEPLOY_PERCENT");
}

static void test_paths_and_quoting(void)
{
	CHECK(sandbox_path_is_forge(".forge"));
	CHECK(sandbox_path_is_forge(".forge/config.json"));
	CHECK(sandbox_path_is_forge(".FORGE/x"));
	CHECK(!sandbox_path_is_forge("a/.forge/config.json"));
	CHECK(!sandbox_path_is_forge(".forgery"));
	CHECK(!sandbox_path_is_forge("forge/x"));

	struct buf b = BUF_INIT;
	sandbox_shell_join(&b, (const char *const[]){ "/bin/echo", "it's", "a b", "$HOME", NULL });
	CHECK_STR(b.buf, "'/bin/echo' 'it'\\''s' 'a b' '$HOME'");
	struct sandbox_job job = { .command = b.buf, .root = tmp };
	struct proc_result r;
	CHECK(sandbox_job_run(&r, NULL, &job) == 0);
	CHECK_STR(r.out.buf, "it's a b $HOME\n");
	proc_result_release(&r);
	buf_release(&b);
}

int main(int argc, char **argv)
{
	char t[] = "/tmp/forge-secret-XXXXXX";

	(void)argc;
	if (!getenv("UNIT_OTHER")) {
		setenv("ANTHROPIC_API_KEY", KEY, 1);
		setenv("UNIT_OTHER", "stays", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	snprintf(tmp, sizeof tmp, "%s", mkdtemp(t));
	RUN(test_protect);
	RUN(test_redact);
	RUN(test_url_passwords);
	RUN(test_secret_forms);
	RUN(test_stream_and_store);
	RUN(test_commit);
	RUN(test_job);
	RUN(test_paths_and_quoting);
	SH("rm -rf %s", tmp);
	return unit_done();
}
