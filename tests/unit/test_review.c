/*
 * test_review.c - forge-review's layers and synthesis (lib/review/review.h) and
 * SARIF output (lib/review/sarif.h), which is validated against the SARIF 2.1.0
 * JSON schema in tests/fixtures/sarif/ with lib/schema.
 *
 * Secrets here are synthetic and assembled at run time; insecure calls are
 * split in the source so `make lint` does not flag this file.
 */
#include "core/buf.h"
#include "git/diff.h"
#include "core/forge.h"
#include "core/json.h"
#include "review/review.h"
#include "review/sarif.h"
#include "data/schema.h"
#include "llm/llm.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A diff adding `lines` (joined by '\n') as a new file. */
static struct diff *added(const char *path, const char *const *lines, size_t n)
{
	struct buf b = BUF_INIT;
	struct diff *d = NULL;

	buf_addf(&b, "--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%zu @@\n", path, n);
	for (size_t i = 0; i < n; i++)
		buf_addf(&b, "+%s\n", lines[i]);
	if (diff_parse(&d, b.buf, b.len) < 0)
		d = NULL;
	buf_release(&b);
	return d;
}

/* The rule of the first finding on line `line`, or "" (a static copy). */
static const char *rule_at(jv list, int line)
{
	static char r[128];

	r[0] = '\0';
	jv_array_foreach(list, i, f) {
		(void)i;
		if ((int)json_get_num(f, "line", 0) == line && !r[0])
			snprintf(r, sizeof r, "%s", json_get_str(f, "rule"));
		jv_free(f);
	}
	return r;
}

static int count(jv list)
{
	return jv_array_length(jv_copy(list));
}

static void test_entropy_and_placeholders(void)
{
	CHECK(fabs(review_entropy("aaaa", 4)) < 1e-9);
	CHECK(fabs(review_entropy("abcd", 4) - 2.0) < 1e-9);
	CHECK(review_placeholder("changeme", 8));
	CHECK(review_placeholder("xxxxxxxxxxxxxxxx", 16));
	CHECK(review_placeholder("${TOKEN}", 8));
	CHECK(review_placeholder("<your-token>", 12));
	CHECK(review_placeholder("AKIAIOSFODNN7EXAMPLE", 20));
	CHECK(review_placeholder("dummy-secret-value", 18));
	CHECK(!review_placeholder("q8Zr2LmV0xNc7TpW", 16));
}

static void test_secret_rules(void)
{
	char ghp[64], aws[32], slack[64], stripe[64], google[64], oai[80], ant[96], gen[96];
	const char *rnd = "4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ7kM3nB5vC1xZ8qW4eR6tY9u";

	snprintf(ghp, sizeof ghp, "token = \"gh%s_%.36s\"", "p", rnd);
	snprintf(aws, sizeof aws, "key: AK%s%.16s", "IA", "J7QZ4X2MV9BN1CR8");
	snprintf(slack, sizeof slack, "SLACK=xo%s-%.24s", "xb", rnd);
	snprintf(stripe, sizeof stripe, "s = 'sk_%s_%.24s'", "live", rnd);
	snprintf(google, sizeof google, "url?key=AI%s%.35s", "za", rnd);
	snprintf(oai, sizeof oai, "client = OpenAI(api_key=\"sk-%s%.40s\")", "proj-", rnd);
	snprintf(ant, sizeof ant, "k=\"sk-%s-api03-%.40s\"", "ant", rnd);
	snprintf(gen, sizeof gen, "db_password = \"%.20s\"", rnd + 5);
	const char *lines[] = {
		ghp, aws, slack, stripe, google, oai, ant, gen,
		"-----BEGIN RSA PRIVATE KEY-----",
		"password = \"changeme\"",                       /* 10: placeholder */
		"token = \"${GITHUB_TOKEN}\"",                   /* 11: template */
		"api_key = \"aaaaaaaaaaaaaaaaaaaa\"",            /* 12: no entropy */
		"AWS_KEY=AKIAIOSFODNN7EXAMPLE",                  /* 13: documented example */
		"secret = \"q8Zr2LmV0xNc7TpWq8Zr\" # forge:allow", /* 14: suppressed */
		"ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",      /* 15: placeholder token */
	};
	struct diff *d = added("conf.txt", lines, sizeof lines / sizeof lines[0]);
	jv out;

	CHECK(d);
	CHECK(review_secrets(&out, d) == 0);
	CHECK_STR(rule_at(out, 1), "secret/github-token");
	CHECK_STR(rule_at(out, 2), "secret/aws-access-key-id");
	CHECK_STR(rule_at(out, 3), "secret/slack-token");
	CHECK_STR(rule_at(out, 4), "secret/stripe-live-key");
	CHECK_STR(rule_at(out, 5), "secret/google-api-key");
	CHECK_STR(rule_at(out, 6), "secret/openai-api-key");
	CHECK_STR(rule_at(out, 7), "secret/anthropic-api-key");
	CHECK_STR(rule_at(out, 8), "secret/generic-assignment");
	CHECK_STR(rule_at(out, 9), "secret/private-key");
	CHECK_INT(count(out), 9);
	/* never the secret itself in a message */
	char *dump = json_dumps(jv_copy(out), false);
	CHECK(strstr(dump, rnd + 4) == NULL);
	CHECK(strstr(dump, "4kQ9zX2mV7") == NULL);
	free(dump);
	jv_free(out);
	diff_free(d);
}

static void test_insecure_c(void)
{
	const char *lines[] = {
		"char *s = ge" "ts(buf);",
		"strc" "py(dst, src);",
		"spri" "ntf(buf, \"%d\", n);",
		"system(cmd);",
		"system(\"ls -l\");",                 /* constant: fine */
		"// strc" "py(dst, src); in a comment",
		"printf(user_input);",
		"snprintf(buf, sizeof buf, \"%s\", s);",
	};
	struct diff *d = added("src/x.c", lines, sizeof lines / sizeof lines[0]);
	jv out;

	CHECK(d);
	CHECK(review_secrets(&out, d) == 0);
	CHECK_STR(rule_at(out, 1), "insecure/c-gets");
	CHECK_STR(rule_at(out, 2), "insecure/c-strcpy");
	CHECK_STR(rule_at(out, 3), "insecure/c-sprintf");
	CHECK_STR(rule_at(out, 4), "insecure/c-system");
	CHECK_STR(rule_at(out, 5), "");
	CHECK_STR(rule_at(out, 6), "");
	CHECK_STR(rule_at(out, 7), "insecure/c-format");
	CHECK_STR(rule_at(out, 8), "");
	jv_free(out);
	diff_free(d);
}

/* A .forge file a cut left out (named by the marker) is still a critical
 * forge/config-changed finding. */
static void test_config_change_in_a_cut(void)
{
	static const char text[] =
		"--- a/a.c\n+++ b/a.c\n@@ -1 +1,2 @@\n int x;\n+int y;\n"
		"[\u2026 diff cut: 1 file not shown (900000 bytes) \u2026]\n"
		"[\u2026 not shown: .forge/config.json (900000 bytes) \u2026]\n";
	struct diff *d = NULL;
	jv out;

	CHECK(diff_parse(&d, text, sizeof text - 1) == 0);
	CHECK(d->nomitted == 1);
	CHECK(review_secrets(&out, d) == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 1);
	jv f = jv_array_get(jv_copy(out), 0);
	CHECK_STR(json_get_str(f, "rule"), "forge/config-changed");
	CHECK_STR(json_get_str(f, "file"), ".forge/config.json");
	CHECK_STR(json_get_str(f, "severity"), "critical");
	jv_free(f);
	jv_free(out);
	diff_free(d);
}

/* A symbolic link (mode 120000) the diff adds or changes whose target
 * leads outside the repository -- absolute, climbing above the root, into
 * .git -- is an error forge/symlink-outside on its line; one that stays
 * inside, a file holding such a path, and a link removed are not. */
static void symlink_diff(struct buf *b, const char *path, const char *header, const char *target)
{
	buf_addf(b, "diff --git a/%s b/%s\n%s--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+%s\n"
		 "\\ No newline at end of file\n", path, path, header, path, target);
}

static void test_symlink_outside(void)
{
	static const struct {
		const char *path, *header, *target;
		bool found;
	} cases[] = {
		{ "config.py", "new file mode 120000\nindex 0000000..48980ad\n", "/etc/hostname", true },
		{ "up", "new file mode 120000\nindex 0000000..305f207\n", "../../../../../..", true },
		{ "a/b/c", "new file mode 120000\n", "../../../x", true },
		{ "a/b/c", "new file mode 120000\n", "../../x", false },
		{ "a/b/c", "new file mode 120000\n", "./../.././d/../../e", true },
		{ "a/link", "new file mode 120000\n", "../.git/config", true },
		{ "hooks", "new file mode 120000\n", ".git/hooks", true },
		{ "a/gitx", "new file mode 120000\n", "../.gitx", false },
		{ "docs", "new file mode 120000\n", "doc/../README", false },
		/* a link whose target changed keeps its mode: "index A..B 120000" */
		{ "l", "index 1111111..2222222 120000\n", "/tmp", true },
		/* a file that became a link ("new mode"); a file whose text is a path */
		{ "m", "old mode 100644\nnew mode 120000\n", "/etc", true },
		{ "notes.txt", "new file mode 100644\n", "/etc/hostname", false },
		{ "n", "old mode 120000\nnew mode 100644\nindex 1111111..2222222\n", "/etc", false },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct buf b = BUF_INIT;
		struct diff *d = NULL;
		jv out;

		symlink_diff(&b, cases[i].path, cases[i].header, cases[i].target);
		if (strstr(cases[i].header, "index 1111111")) {
			/* a change, not an addition: a removed line too */
			buf_reset(&b);
			buf_addf(&b, "diff --git a/%s b/%s\n%s--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-old\n"
				 "\\ No newline at end of file\n+%s\n\\ No newline at end of file\n", cases[i].path,
				 cases[i].path, cases[i].header, cases[i].path, cases[i].path, cases[i].target);
		}
		CHECK(diff_parse(&d, b.buf, b.len) == 0);
		CHECK(review_secrets(&out, d) == 0);
		int n = 0;
		jv_array_foreach(out, j, f) {
			if (!strcmp(json_get_str(f, "rule"), "forge/symlink-outside")) {
				n++;
				CHECK_STR(json_get_str(f, "severity"), "error");
				CHECK_STR(json_get_str(f, "file"), cases[i].path);
				CHECK_INT((int)json_get_num(f, "line", 0), 1);
				CHECK(strstr(json_get_str(f, "message"), cases[i].target) != NULL);
			}
			jv_free(f);
		}
		if (n != (cases[i].found ? 1 : 0))
			fprintf(stderr, "# case %zu: %s -> %s: %d findings\n", i, cases[i].path, cases[i].target, n);
		CHECK_INT(n, cases[i].found ? 1 : 0);
		jv_free(out);
		diff_free(d);
		buf_release(&b);
	}
}

static const char *two_files =
	"--- a/a.c\n+++ b/a.c\n@@ -1,2 +1,4 @@\n int x;\n+int y;\n+int z;\n int w;\n"
	"--- a/s.sh\n+++ b/s.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo \"$1\"\n+echo $1\n";

static void test_parsers_keep_added_lines(void)
{
	struct diff *d = NULL;
	jv acc = jv_array();

	CHECK(diff_parse(&d, two_files, strlen(two_files)) == 0);
	review_parse_cppcheck(&acc, d,
		"a.c:2:5: error: arrayIndexOutOfBounds: Array 'a[2]' accessed at index 2 [CWE-788]\n"
		"a.c:1:1: style: unusedVariable: Unused variable: x [CWE-563]\n"       /* context line */
		"b.c:2:1: error: nullPointer: Null pointer dereference [CWE-476]\n"    /* not in the diff */
		"a.c:3:1: style: unusedVariable: Unused variable: z [CWE-0]\n");
	review_parse_shellcheck(&acc, d,
		"{\"comments\":[{\"file\":\"s.sh\",\"line\":2,\"column\":6,\"level\":\"info\",\"code\":2086,"
		"\"message\":\"Double quote to prevent globbing\",\"fix\":{\"replacements\":[]}},"
		"{\"file\":\"s.sh\",\"line\":1,\"level\":\"error\",\"code\":1000,\"message\":\"x\"}]}");
	review_parse_gcc(&acc, d, "flake8", "./a.c:2:1: F821 undefined name 'q'\n"
				  "a.c:3:10: warning: something odd [bugprone-thing]\nnoise\n");
	CHECK_INT(count(acc), 5);
	jv f = jv_array_get(jv_copy(acc), 0);
	CHECK_STR(json_get_str(f, "rule"), "cppcheck/arrayIndexOutOfBounds");
	CHECK_STR(json_get_str(f, "severity"), "error");
	CHECK_INT(json_get_num(f, "line", 0), 2);
	jv_free(f);
	f = jv_array_get(jv_copy(acc), 1);
	CHECK_STR(json_get_str(f, "severity"), "info");
	CHECK_STR(json_get_str(f, "message"), "Unused variable: z");
	jv_free(f);
	f = jv_array_get(jv_copy(acc), 2);
	CHECK_STR(json_get_str(f, "rule"), "shellcheck/SC2086");
	CHECK(json_get_bool(f, "fixable", false));
	jv_free(f);
	f = jv_array_get(jv_copy(acc), 3);
	CHECK_STR(json_get_str(f, "rule"), "flake8/F821");
	CHECK_STR(json_get_str(f, "severity"), "error");
	jv_free(f);
	f = jv_array_get(jv_copy(acc), 4);
	CHECK_STR(json_get_str(f, "rule"), "flake8/bugprone-thing");
	CHECK_STR(json_get_str(f, "severity"), "warning");
	jv_free(f);
	jv_free(acc);
	diff_free(d);
}

static void test_fingerprint(void)
{
	char a[17], b[17], c[17];

	review_fingerprint(a, "r", "f.c", "  int   x = 1;");
	review_fingerprint(b, "r", "f.c", "int x = 1;\n");
	review_fingerprint(c, "s", "f.c", "int x = 1;");
	CHECK_STR(a, b);
	CHECK(strcmp(a, c) != 0);
	CHECK_INT(strlen(a), 16);
}

static void test_synthesize(void)
{
	struct diff *d = NULL;
	jv in = jv_array();

	CHECK(diff_parse(&d, two_files, strlen(two_files)) == 0);
	in = jv_array_append(in, review_finding("static", "warning", "style", "r1", "a.c", 2, "w"));
	in = jv_array_append(in, review_finding("static", "error", "correctness", "r1", "a.c", 2, "e"));
	in = jv_array_append(in, review_finding("security", "warning", "security", "r2", "a.c", 2, "other rule"));
	in = jv_array_append(in, json_set(review_finding("ai", "error", "correctness", "ai/x", "a.c", 3, "unsure"),
					  "confidence", jv_number(0.2)));
	jv out = review_synthesize(in, d, 0.5);
	CHECK_INT(count(out), 2);
	jv f = jv_array_get(jv_copy(out), 0);
	CHECK_STR(json_get_str(f, "severity"), "error");
	CHECK_INT(strlen(json_get_str(f, "fingerprint")), 16);
	char fp[17];
	review_fingerprint(fp, "r1", "a.c", "int y;");
	CHECK_STR(json_get_str(f, "fingerprint"), fp);
	jv_free(f);
	jv_free(out);
	diff_free(d);
}

static void test_risk_and_decision(void)
{
	struct diff *d = NULL;
	struct review_risk r;
	const char *why;
	const char *ci = "--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -1 +1 @@\n-a\n+b\n";

	CHECK(diff_parse(&d, two_files, strlen(two_files)) == 0);
	review_risk(&r, d, jv_null(), jv_null());
	CHECK(r.level == REVIEW_LOW);
	jv_free(r.reasons);
	jv plan = json_set(jv_object(), "level", jv_string("high"));
	review_risk(&r, d, jv_null(), plan);
	CHECK(r.level == REVIEW_HIGH);
	jv_free(r.reasons);
	jv_free(plan);
	diff_free(d);
	CHECK(diff_parse(&d, ci, strlen(ci)) == 0);
	review_risk(&r, d, jv_null(), jv_null());
	CHECK(r.level == REVIEW_MEDIUM);
	CHECK(jv_array_length(jv_copy(r.reasons)) == 1);
	jv_free(r.reasons);
	diff_free(d);

	jv none = jv_array();
	jv warn = JV_ARRAY(review_finding("static", "warning", "style", "r", "a", 1, "m"));
	jv err = JV_ARRAY(review_finding("static", "error", "correctness", "r", "a", 1, "m"));
	jv crit = JV_ARRAY(review_finding("security", "critical", "security", "r", "a", 1, "m"));
	CHECK_STR(review_decide(&why, none, REVIEW_LOW, REVIEW_HIGH), "approve");
	CHECK_STR(review_decide(&why, warn, REVIEW_MEDIUM, REVIEW_HIGH), "approve");
	CHECK_STR(review_decide(&why, err, REVIEW_LOW, REVIEW_HIGH), "request_changes");
	CHECK_STR(review_decide(&why, crit, REVIEW_LOW, REVIEW_HIGH), "require_human");
	CHECK_STR(review_decide(&why, none, REVIEW_HIGH, REVIEW_HIGH), "require_human");
	jv_free(none);
	jv_free(warn);
	jv_free(err);
	jv_free(crit);
}

/* The plan's risk (state.plan.risk) in the review's: its level with its
 * score in that level's band, and a reason naming the level applied
 * (hunt69 #1: {medium, 0.5} made a 4-line change "high", require_human,
 * with the reason "the plan's risk is medium"). */
static void test_risk_follows_the_plans_level(void)
{
	static const struct {
		const char *level;
		double score;
		enum review_level want;
		double want_score;
		const char *reason;
	} at[] = {
		{ "medium", 0.5, REVIEW_MEDIUM, 0.49,
		  "the plan's risk is medium (score 0.49; the plan gave 0.5, outside medium's band 0.25-0.49)" },
		{ "medium", 0.3, REVIEW_MEDIUM, 0.3, "the plan's risk is medium (score 0.30)" },
		{ "low", 0.3, REVIEW_LOW, 0.24,
		  "the plan's risk is low (score 0.24; the plan gave 0.3, outside low's band 0.00-0.24)" },
		{ "high", 0.2, REVIEW_HIGH, 0.5,
		  "the plan's risk is high (score 0.50; the plan gave 0.2, outside high's band 0.50-0.74)" },
	};
	struct diff *d = NULL;
	struct review_risk r;
	const char *why;
	jv none = jv_array();   /* no findings (borrowed by review_risk) */

	CHECK(diff_parse(&d, two_files, strlen(two_files)) == 0);   /* 4 lines: nothing of its own */
	for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
		jv plan = json_set(json_set(jv_object(), "level", jv_string(at[i].level)), "score",
				   jv_number(at[i].score));

		review_risk(&r, d, none, plan);
		CHECK_MSG(r.level == at[i].want && r.score == at[i].want_score, "{%s, %g}: %s %g",
			  at[i].level, at[i].score, review_level_name(r.level), r.score);
		CHECK_INT(jv_array_length(jv_copy(r.reasons)), 1);
		jv reason = jv_array_get(jv_copy(r.reasons), 0);
		CHECK_STR(jv_string_value(reason), at[i].reason);
		jv_free(reason);
		jv_free(r.reasons);
		jv_free(plan);
	}
	/* {medium, 0.5}: no human needed under human_min_risk high */
	jv plan = json_set(json_set(jv_object(), "level", jv_string("medium")), "score", jv_number(0.5));
	review_risk(&r, d, none, plan);
	CHECK_STR(review_decide(&why, none, r.level, REVIEW_HIGH), "approve");
	jv_free(r.reasons);
	jv_free(plan);
	diff_free(d);

	/* a change riskier than the plan: the plan raises nothing, says nothing */
	const char *ci = "--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -1 +1 @@\n-a\n+b\n";
	CHECK(diff_parse(&d, ci, strlen(ci)) == 0);
	plan = json_set(json_set(jv_object(), "level", jv_string("low")), "score", jv_number(0.1));
	review_risk(&r, d, none, plan);
	CHECK(r.level == REVIEW_MEDIUM && r.score == 0.25);
	CHECK_INT(jv_array_length(jv_copy(r.reasons)), 1);
	jv_free(r.reasons);
	jv_free(plan);
	diff_free(d);
	jv_free(none);
}

/* The SARIF 2.1.0 schema (SchemaStore's rtm.5, JSON Schema draft-04): its
 * root "id" is draft-04's name for "$id"; every other keyword it uses is
 * one lib/schema supports. */
static struct schema *sarif_schema(void)
{
	const char *root = getenv("FORGE_ROOT");
	struct buf path = BUF_INIT;
	struct schema *s = NULL;

	buf_addf(&path, "%s/tests/fixtures/sarif/sarif-2.1.0.json", root && *root ? root : ".");
	jv doc = json_parse_file(path.buf);
	buf_release(&path);
	if (!jv_is_valid(doc)) {
		jv_free(doc);
		return NULL;
	}
	jv id = json_get(doc, "id");
	doc = jv_object_delete(doc, jv_string("id"));
	doc = json_set(doc, "$id", id);
	if (schema_compile(&s, doc) < 0) {
		printf("# %s\n", forge_last_error());
		return NULL;
	}
	return s;
}

static void test_sarif_validates(void)
{
	struct schema *s = sarif_schema();
	jv findings = jv_array();

	CHECK(s);
	findings = jv_array_append(findings, json_set(json_set(
		review_finding("security", "critical", "security", "secret/github-token", "dir with space/conf.py",
			       3, "possible GitHub token"), "fingerprint", jv_string("0123456789abcdef")),
		"id", jv_string("01JDB3AAAAAAAAAAAAAAAAAAAA")));
	findings = jv_array_append(findings, review_finding("static", "warning", "style", "shellcheck/SC2086",
							    "s.sh", 2, "quote it"));
	findings = jv_array_append(findings, review_finding("ai", "info", "correctness", "ai/naming", NULL, 0,
							    "no location"));
	findings = jv_array_append(findings, review_finding("static", "error", "correctness", "shellcheck/SC2086",
							    "s.sh", 9, "same rule again"));
	jv log = sarif_log(findings, FORGE_VERSION);
	CHECK_MSG(schema_validate(s, log) == 0, "%s", forge_last_error());
	jv rules = json_get_path(log, "runs");
	CHECK_INT(jv_array_length(jv_copy(rules)), 1);
	jv_free(rules);
	jv run = jv_array_get(json_get(log, "runs"), 0);
	jv rl = json_get_path(run, "tool.driver.rules");
	CHECK_INT(jv_array_length(rl), 3);
	jv r0 = jv_array_get(json_get(run, "results"), 0);
	jv uri = json_get_path(r0, "partialFingerprints");
	CHECK_STR(json_get_str(uri, "primaryLocationLineHash"), "0123456789abcdef:1");
	jv_free(uri);
	jv loc = jv_array_get(json_get(r0, "locations"), 0);
	jv art = json_get_path(loc, "physicalLocation.artifactLocation");
	CHECK_STR(json_get_str(art, "uri"), "dir%20with%20space/conf.py");
	CHECK_STR(json_get_str(r0, "level"), "error");
	jv_free(art);
	jv_free(loc);
	jv_free(r0);
	jv_free(run);
	/* and the schema does catch a broken log */
	jv bad = json_set(jv_copy(log), "version", jv_string("2.0.0"));
	CHECK(schema_validate(s, bad) < 0);
	jv_free(bad);
	jv_free(log);
	jv_free(findings);
	schema_free(s);
}

static void test_ai_render(void)
{
	struct diff *d = NULL;
	jv secret = JV_ARRAY(review_finding("security", "critical", "security", "secret/x", "a.c", 3, "m"));

	CHECK(diff_parse(&d, two_files, strlen(two_files)) == 0);
	char *text = review_ai_render(d, secret, 0, NULL);
	CHECK(strstr(text, "## File: a.c\n") != NULL);
	CHECK(strstr(text, "     2 + int y;\n") != NULL);
	CHECK(strstr(text, "     3 + [redacted: possible secret]\n") != NULL);
	CHECK(strstr(text, "       - echo \"$1\"\n") != NULL);
	free(text);
	jv_free(secret);
	diff_free(d);

	/* every line of a private key, not only its BEGIN line (the one the
	 * secret rule marks), and nothing after its END */
	static const char key[] =
		"diff --git a/k.pem b/k.pem\nnew file mode 100644\n--- /dev/null\n+++ b/k.pem\n"
		"@@ -0,0 +1,5 @@\n"
		"+-----BEGIN OPENSSH PRIVATE KEY-----\n"
		"+b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
		"+QyNTUxOQAAACBNn4mXq0a2AAAA\n"
		"+-----END OPENSSH PRIVATE KEY-----\n"
		"+after\n";
	secret = JV_ARRAY(review_finding("security", "critical", "security", "secret/private-key", "k.pem", 1, "m"));
	CHECK(diff_parse(&d, key, strlen(key)) == 0);
	text = review_ai_render(d, secret, 0, NULL);
	CHECK(strstr(text, "b3BlbnNzaC1rZXkt") == NULL && strstr(text, "QyNTUxOQ") == NULL);
	CHECK(strstr(text, "PRIVATE KEY") == NULL);
	CHECK(strstr(text, "     4 + [redacted: possible secret]\n") != NULL);
	CHECK(strstr(text, "     5 + after\n") != NULL);
	free(text);
	jv_free(secret);
	diff_free(d);
}

/* No file of the diff fits the window: no call is made (the prompt would
 * hold no line of code), and the result says so (hunt45 bug 8).  The
 * client replays an empty cassette: a call made would fail. */
static void test_ai_no_code_no_call(void)
{
	char path[] = "/tmp/forge-review-cassette-XXXXXX";
	int fd = mkstemp(path);
	struct llm_options opt;
	struct llm_client *llm = NULL;
	struct diff *d = NULL;
	struct review_ai_input in = { .system = "review", .findings = jv_array(), .dismissed = jv_array() };
	struct review_ai_result res;
	jv out;

	CHECK(fd >= 0);
	close(fd);
	llm_options_init(&opt);
	opt.provider = "replay";
	opt.cassette = path;
	opt.model = "claude-sonnet-4-5";
	CHECK_MSG(llm_client_new(&llm, &opt) == 0, "%s", forge_last_error());
	CHECK(diff_parse(&d, two_files, strlen(two_files)) == 0);
	in.max_diff_tokens = 1;
	CHECK_MSG(review_ai(&out, &res, llm, d, &in) == 0, "%s", forge_last_error());
	CHECK(res.skipped);
	CHECK(res.cost_usd == 0 && res.tokens == 0 && res.attempts == 0);
	CHECK_INT(jv_array_length(jv_copy(out)), 0);
	CHECK_INT(jv_array_length(jv_copy(res.not_shown)), 2);
	jv_free(out);
	jv_free(res.not_shown);

	/* a file that fits: the call is made (and fails here: no cassette) */
	in.max_diff_tokens = 0;
	CHECK(review_ai(&out, &res, llm, d, &in) == -1);
	CHECK(!res.skipped);
	jv_free(out);
	jv_free(res.not_shown);
	llm_client_free(llm);
	diff_free(d);
	jv_free(in.findings);
	jv_free(in.dismissed);
	unlink(path);
}

/* review_ai over a cassette of answers (one a line, text): *rc what it
 * returned (-2: not run), res whether a human is needed. */
static void ai_over(int *rc, struct review_ai_result *res, const char *answers)
{
	char path[] = "/tmp/forge-review-cassette-XXXXXX";
	int fd = mkstemp(path);
	struct llm_options opt;
	struct llm_client *llm = NULL;
	struct diff *d = NULL;
	struct review_ai_input in = { .system = "review", .findings = jv_array(), .dismissed = jv_array() };
	jv out = jv_null();

	*rc = -2;
	memset(res, 0, sizeof *res);
	res->not_shown = jv_null();
	CHECK(fd >= 0);
	CHECK(write(fd, answers, strlen(answers)) == (ssize_t)strlen(answers));
	close(fd);
	llm_options_init(&opt);
	opt.provider = "replay";
	opt.cassette = path;
	opt.model = "claude-sonnet-4-5";
	CHECK_MSG(llm_client_new(&llm, &opt) == 0, "%s", forge_last_error());
	CHECK(diff_parse(&d, two_files, strlen(two_files)) == 0);
	if (llm && d)
		*rc = review_ai(&out, res, llm, d, &in);
	jv_free(out);
	jv_free(res->not_shown);
	res->not_shown = jv_null();
	llm_client_free(llm);
	diff_free(d);
	jv_free(in.findings);
	jv_free(in.dismissed);
	unlink(path);
}

/* A refusal, or answers that never call report_findings, are the model's
 * doing: a human is needed (the phase escalates, as plan and implement do),
 * not a failed dependency (hunt57 #3).  A cut answer and a call that could
 * not be made are not. */
static void test_ai_refusal_needs_a_human(void)
{
	struct review_ai_result res;
	int rc;

	ai_over(&rc, &res, "{\"response\":{\"text\":\"I cannot review this.\",\"stop_reason\":\"refusal\"}}\n");
	CHECK_INT(rc, -1);
	CHECK_MSG(strstr(forge_last_error(), "the model refused: I cannot review this.") != NULL, "%s",
		  forge_last_error());
	CHECK(res.human);
	CHECK_INT(res.attempts, 0);

	ai_over(&rc, &res, "{\"response\":{\"text\":\"Looks fine.\",\"stop_reason\":\"end_turn\"}}\n"
			    "{\"response\":{\"text\":\"Still fine.\",\"stop_reason\":\"end_turn\"}}\n");
	CHECK_INT(rc, -1);
	CHECK_MSG(strstr(forge_last_error(), "without calling report_findings") != NULL, "%s", forge_last_error());
	CHECK(res.human);

	ai_over(&rc, &res, "{\"response\":{\"text\":\"Found\",\"stop_reason\":\"max_tokens\"}}\n");
	CHECK_INT(rc, -1);
	CHECK_MSG(strstr(forge_last_error(), "llm.max_tokens") != NULL, "%s", forge_last_error());
	CHECK(!res.human);

	ai_over(&rc, &res, "");
	CHECK_INT(rc, -1);
	CHECK(!res.human);
}

int main(void)
{
	RUN(test_entropy_and_placeholders);
	RUN(test_secret_rules);
	RUN(test_insecure_c);
	RUN(test_config_change_in_a_cut);
	RUN(test_symlink_outside);
	RUN(test_parsers_keep_added_lines);
	RUN(test_fingerprint);
	RUN(test_synthesize);
	RUN(test_risk_and_decision);
	RUN(test_risk_follows_the_plans_level);
	RUN(test_sarif_validates);
	RUN(test_ai_render);
	RUN(test_ai_no_code_no_call);
	RUN(test_ai_refusal_needs_a_human);
	return unit_done();
}
