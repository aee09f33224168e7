/*
 * test_schema_suite.c - lib/schema against the official JSON-Schema-Test-Suite.
 *
 * One TAP line per keyword file: "ok 3 - type.json: 80/80".  A test group
 * whose schema schema_compile() refuses as *unsupported* (a keyword outside
 * our subset, a remote $ref, an embedded $id) is counted, not failed; in a
 * file marked strict - a file about keywords we implement and nothing else -
 * any refusal is a failure.  A refusal for any other reason (a "malformed"
 * schema the suite says is fine) is always a failure.
 *
 * Every group also runs through schema_compile_lazy() alone (the path of the
 * embedded schemas, compiled as validation reaches each part): each case
 * must get the same answer and the same message as from the schema
 * schema_compile() compiled whole, and a schema schema_compile() refuses
 * must be refused lazily too (at its root, or by schema_compile_rest()).
 *
 * Where the suite is:
 *   $FORGE_SCHEMA_SUITE (a tests/draft2020-12 directory, or a draft7 one),
 *   else tests/fixtures/json-schema-test-suite/draft2020-12 (run from the
 *   top of the tree, as scripts/check does),
 *   else /usr/share/json-schema-test-suite/tests/draft2020-12,
 *   else Debian 12's package, which stops at draft7: its files for the
 *   keywords whose meaning did not change since draft7 are run, the
 *   2020-12-only files (prefixItems, $defs) are absent and reported as
 *   skipped, and groups that test draft7-only behaviour are listed below.
 */
#include "data/schema.h"
#include "core/forge.h"
#include "core/json.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct suite_file {
	const char *name;
	bool strict;
};

static const struct suite_file files[] = {
	{ "type.json", true }, { "enum.json", true }, { "const.json", true },
	{ "required.json", true }, { "minItems.json", true }, { "maxItems.json", true },
	{ "minLength.json", true }, { "maxLength.json", true },
	{ "minProperties.json", true }, { "maxProperties.json", true },
	{ "minimum.json", true }, { "maximum.json", true },
	{ "exclusiveMinimum.json", true }, { "exclusiveMaximum.json", true },
	{ "multipleOf.json", true }, { "pattern.json", true },
	{ "boolean_schema.json", true },
	{ "properties.json", false }, { "additionalProperties.json", false },
	{ "patternProperties.json", false }, { "items.json", false },
	{ "prefixItems.json", false }, { "uniqueItems.json", false },
	{ "anyOf.json", false }, { "oneOf.json", false }, { "allOf.json", false },
	{ "not.json", false }, { "ref.json", false }, { "defs.json", false },
	{ "infinite-loop-detection.json", false }, { "default.json", false },
	{ "format.json", false },
};

/* draft7 groups whose expected results changed in 2020-12 ($ref stopped
 * overriding its siblings). */
static const char *const draft7_only[] = {
	"ref overrides any sibling keywords",
	NULL,
};

struct totals {
	int passed, failed, unsupported, skipped;
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *suite_dir(bool *draft7)
{
	static const char *const candidates[] = {
		"tests/fixtures/json-schema-test-suite/draft2020-12",
		"/usr/share/json-schema-test-suite/tests/draft2020-12",
		"/usr/share/json-schema-test-suite/tests/draft7",
	};
	const char *env = getenv("FORGE_SCHEMA_SUITE");
	const char *dir = NULL;

	if (env && *env) {
		dir = env;
	} else {
		for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !dir; i++)
			if (is_dir(candidates[i]))
				dir = candidates[i];
	}
	if (dir) {
		size_t len = strlen(dir);

		while (len > 1 && dir[len - 1] == '/')
			len--;
		*draft7 = len >= 6 && strncmp(dir + len - 6, "draft7", 6) == 0;
	}
	return dir;
}

static bool listed(const char *const *list, const char *s)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], s) == 0)
			return true;
	return false;
}

static const char *str_or(jv obj, const char *key, const char *dflt)
{
	const char *s = json_get_str(obj, key);

	return s ? s : dflt;
}

/* The lazy schema gives case t the answer and message the whole one gave. */
/* schema_validate_all answers as schema_validate, its first error first. */
static bool all_agrees(const struct schema *s, jv t, bool got, const char *msg)
{
	jv data = json_get(t, "data"), errors;
	bool all_got = schema_validate_all(&errors, s, data) == 0;
	jv first = jv_array_length(jv_copy(errors)) ? jv_array_get(jv_copy(errors), 0) : jv_string("");
	bool same = all_got == got && (got ? jv_array_length(jv_copy(errors)) == 0
				    : strcmp(msg, jv_string_value(first)) == 0);

	if (!same)
		printf("# %s: schema_validate_all says %s (%s), schema_validate %s (%s)\n",
		       str_or(t, "description", "?"), all_got ? "valid" : "invalid", jv_string_value(first),
		       got ? "valid" : "invalid", msg);
	jv_free(first);
	jv_free(errors);
	jv_free(data);
	return same;
}

static bool lazy_agrees(const struct schema *lazy, jv t, bool got, const char *msg)
{
	jv data = json_get(t, "data");
	bool lazy_got = schema_validate(lazy, data) == 0;
	bool same = lazy_got == got && schema_is_valid(lazy, data) == got &&
		    (got || strcmp(msg, forge_last_error()) == 0);

	if (!same)
		printf("# %s: lazily %s (%s), compiled whole %s (%s)\n", str_or(t, "description", "?"),
		       lazy_got ? "valid" : "invalid", lazy_got ? "" : forge_last_error(),
		       got ? "valid" : "invalid", msg);
	jv_free(data);
	return same;
}

/* Run the cases of one group on s and lazy; borrows group.  Returns failures. */
static int run_cases(const struct schema *s, const struct schema *lazy, jv group, int *passed)
{
	jv tests = json_get(group, "tests");
	int failed = 0;

	if (jv_get_kind(tests) != JV_KIND_ARRAY) {
		jv_free(tests);
		printf("# %s: no tests array\n", str_or(group, "description", "?"));
		return 1;
	}
	jv_array_foreach(tests, i, t) {
		jv data = json_get(t, "data");
		bool want = json_get_bool(t, "valid", false);
		bool got_quiet = schema_is_valid(s, data);
		bool got = schema_validate(s, data) == 0;
		char *msg = xstrdup(got ? "" : forge_last_error());

		if (!lazy_agrees(lazy, t, got, msg) || !all_agrees(s, t, got, msg)) {
			failed++;
		} else if (got == want && got_quiet == want) {
			(*passed)++;
		} else {
			failed++;
			printf("# %s / %s: expected %s, got %s%s%s\n",
			       str_or(group, "description", "?"), str_or(t, "description", "?"),
			       want ? "valid" : "invalid", got ? "valid" : "invalid",
			       got ? "" : ": ", msg);
			if (got_quiet != got)
				printf("#   schema_is_valid() and schema_validate() disagree\n");
		}
		free(msg);
		jv_free(data);
		jv_free(t);
	}
	jv_free(tests);
	return failed;
}

/* Compile and run one group; borrows group. */
static void run_group(const struct suite_file *f, jv group, bool draft7, int *passed,
		      int *cases, struct totals *tot, int *failed)
{
	const char *desc = str_or(group, "description", "?");
	char *text = json_dumps(json_get(group, "schema"), false);
	struct schema *s, *lazy = NULL;
	bool lazy_ok = schema_compile_lazy(&lazy, text, strlen(text)) == 0;
	char *lazy_why = lazy_ok ? NULL : xstrdup(forge_last_error());

	if (draft7 && listed(draft7_only, desc)) {
		tot->skipped++;
		printf("# skipped (draft7 semantics): %s\n", desc);
		goto out;
	}
	if (schema_compile(&s, json_get(group, "schema")) < 0) {
		char *why = xstrdup(forge_last_error());

		if (lazy_ok && schema_compile_rest(lazy) == 0) {
			(*failed)++;
			printf("# %s: refused (%s) but lazily accepted\n", desc, why);
		} else if (!f->strict && strstr(why, "unsupported")) {
			tot->unsupported++;
			printf("# unsupported: %s (%s)\n", desc, why);
		} else {
			(*failed)++;
			printf("# %s: schema refused: %s\n", desc, why);
		}
		free(why);
		goto out;
	}
	if (!lazy_ok) {
		(*failed)++;
		printf("# %s: lazily refused: %s\n", desc, lazy_why);
		schema_free(s);
		goto out;
	}
	jv tests = json_get(group, "tests");
	if (jv_get_kind(tests) == JV_KIND_ARRAY)
		*cases += jv_array_length(jv_copy(tests));
	jv_free(tests);
	*failed += run_cases(s, lazy, group, passed);
	schema_free(s);
out:
	schema_free(lazy);
	free(lazy_why);
	free(text);
}

static void run_file(int num, const char *dir, const struct suite_file *f, bool draft7,
		     struct totals *tot)
{
	char path[4096];
	int passed = 0, cases = 0, failed = 0, unsupported = tot->unsupported;

	snprintf(path, sizeof path, "%s/%s", dir, f->name);
	if (access(path, R_OK) != 0) {
		printf("ok %d - %s # SKIP not in this suite\n", num, f->name);
		return;
	}
	jv groups = json_parse_file(path);
	if (!jv_is_valid(groups)) {
		char *m = json_invalid_msg(groups);

		printf("not ok %d - %s: %s\n", num, f->name, m);
		free(m);
		tot->failed++;
		return;
	}
	if (jv_get_kind(groups) != JV_KIND_ARRAY) {
		jv_free(groups);
		printf("not ok %d - %s: not an array of test groups\n", num, f->name);
		tot->failed++;
		return;
	}
	jv_array_foreach(groups, i, group) {
		run_group(f, group, draft7, &passed, &cases, tot, &failed);
		jv_free(group);
	}
	jv_free(groups);
	tot->passed += passed;
	tot->failed += failed;
	printf("%s %d - %s: %d/%d", failed ? "not ok" : "ok", num, f->name, passed, cases);
	if (tot->unsupported > unsupported)
		printf(" (%d groups unsupported)", tot->unsupported - unsupported);
	printf("\n");
	fflush(stdout);
}

int main(void)
{
	bool draft7 = false;
	const char *dir = suite_dir(&draft7);
	struct totals tot = { 0, 0, 0, 0 };
	size_t nfiles = sizeof files / sizeof files[0];

	if (!dir || !is_dir(dir)) {
		printf("ok 1 # SKIP suite not installed\n1..1\n");
		return 0;
	}
	printf("# JSON-Schema-Test-Suite: %s%s\n", dir,
	       draft7 ? " (draft7: only keywords unchanged since draft7 are meaningful)" : "");
	for (size_t i = 0; i < nfiles; i++)
		run_file((int)i + 1, dir, &files[i], draft7, &tot);
	printf("1..%zu\n", nfiles);
	printf("# suite: %d passed, %d failed, %d groups unsupported", tot.passed, tot.failed,
	       tot.unsupported);
	if (tot.skipped)
		printf(", %d groups skipped (draft7 semantics)", tot.skipped);
	printf("\n");
	return tot.failed ? 1 : 0;
}
