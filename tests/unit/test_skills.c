/* test_skills.c - SKILL.md discovery, front matter, warnings, matching. */
#include "core/buf.h"
#include "core/forge.h"
#include "core/json.h"
#include "agent/skills.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256];
static char repo[4400];
static char user_dir[4400];

/* A repository whose .forge/skills links to tests/fixtures/skills/project. */
static int setup_dirs(void)
{
	char cwd[4096];
	struct buf b = BUF_INIT;
	const char *base = getenv("TMPDIR");
	int rc = -1;

	snprintf(tmp, sizeof tmp, "%s/forge-skills-XXXXXX", base && base[0] ? base : "/tmp");
	if (!mkdtemp(tmp) || !getcwd(cwd, sizeof cwd))
		return -1;
	snprintf(repo, sizeof repo, "%s/repo", tmp);
	snprintf(user_dir, sizeof user_dir, "%s/tests/fixtures/skills/user", cwd);
	buf_addf(&b, "%s/.forge", repo);
	if (mkdir(repo, 0700) < 0 || mkdir(b.buf, 0700) < 0)
		goto out;
	buf_reset(&b);
	buf_addf(&b, "%s/.forge/skills", repo);
	{
		struct buf target = BUF_INIT;

		buf_addf(&target, "%s/tests/fixtures/skills/project", cwd);
		rc = symlink(target.buf, b.buf);
		buf_release(&target);
	}
out:
	buf_release(&b);
	return rc;
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f) {
		fwrite(text, 1, len, f);
		fclose(f);
	}
}

/* The warning that mentions needle, or NULL.  Borrows set. */
static const char *warning_with(const struct skill_set *set, const char *needle)
{
	int n = jv_array_length(jv_copy(set->warnings));

	for (int i = 0; i < n; i++) {
		jv w = jv_array_get(jv_copy(set->warnings), i);
		const char *s = jv_string_value(w);

		jv_free(w);   /* the array still holds it */
		if (strstr(s, needle))
			return s;
	}
	return NULL;
}

static void test_load_finds_and_overrides(void)
{
	struct skill_set *set = NULL;
	const struct skill *s;

	CHECK_INT(skills_load(&set, repo, user_dir), 0);
	/* commit-style docs security-review shared spec-writing tdd */
	CHECK_INT(set->n, 6);
	CHECK_STR(set->items[0].name, "commit-style");
	CHECK_STR(set->items[5].name, "tdd");
	s = skills_find(set, "tdd");
	CHECK(s != NULL);
	CHECK_STR(s->description, "Test-driven development workflow");
	CHECK_STR(s->category, "code");
	CHECK_INT(s->nphases, 2);
	CHECK_STR(s->phases[1], "test");
	CHECK_INT(s->nkeywords, 3);
	CHECK_STR(s->keywords[2], "failing test");
	CHECK_INT(s->priority, 5);
	CHECK_STR(s->source, "project");
	CHECK(strncmp(s->text, "# TDD\n", 6) == 0);
	/* the project's "shared" wins over the user's, silently */
	s = skills_find(set, "shared");
	CHECK_STR(s->description, "The project's version");
	CHECK_STR(s->source, "project");
	CHECK(warning_with(set, "user/shared") == NULL);
	/* a skill without a name takes its directory's; no category = general */
	s = skills_find(set, "docs");
	CHECK(s != NULL);
	CHECK_STR(s->source, "user");
	CHECK_INT(s->priority, -1);
	CHECK_STR(skills_find(set, "commit-style")->category, "general");
	CHECK(skills_find(set, "hidden") == NULL);
	CHECK(skills_find(set, "nope") == NULL);
	skills_free(set);
}

static void test_warnings_name_file_and_line(void)
{
	struct skill_set *set = NULL;
	const char *w;

	CHECK_INT(skills_load(&set, repo, user_dir), 0);
	CHECK_INT(jv_array_length(jv_copy(set->warnings)), 5);
	w = warning_with(set, "broken/SKILL.md");
	CHECK(w != NULL);
	CHECK_MSG(strstr(w, "SKILL.md:3: front matter is not valid YAML") != NULL, "%s", w);
	w = warning_with(set, "nofm/SKILL.md");
	CHECK_MSG(w && strstr(w, "SKILL.md:1: no front matter"), "%s", w ? w : "(none)");
	w = warning_with(set, "badphase/SKILL.md");
	CHECK_MSG(w && strstr(w, "SKILL.md:4: unknown phase 'shipping'"), "%s", w ? w : "(none)");
	w = warning_with(set, "nodesc/SKILL.md");
	CHECK_MSG(w && strstr(w, "'description' is required"), "%s", w ? w : "(none)");
	w = warning_with(set, "docs2/SKILL.md");
	CHECK_MSG(w && strstr(w, "duplicate skill 'docs'"), "%s", w ? w : "(none)");
	skills_free(set);
}

static void test_bad_files_never_crash(void)
{
	struct buf d = BUF_INIT, p = BUF_INIT;
	struct skill_set *set = NULL;
	static const char *const bodies[] = {
		"---\n",                                  /* not closed */
		"---\n---\nbody\n",                        /* empty front matter */
		"---\n- a\n- b\n---\n",                    /* not a mapping */
		"---\nname: [x]\ndescription: d\n---\n",   /* name not a string */
		"---\ndescription: d\npriority: high\n---\n",
		"---\ndescription: d\npriority: 1000\n---\n",
		"---\ndescription: d\nphases: {a: 1}\n---\n",
		"---\ndescription: d\ntriggers: [[x]]\n---\n",
		"---\ndescription: d\nname: 'a b'\n---\n",  /* invalid name */
		"---\ndescription: \"\\0\"\n---\n",           /* NUL in a scalar */
		"---\n&a [*a]\n---\n",                       /* alias loop */
		"---\ndescription: \xff\xfe\n---\n",          /* not UTF-8 */
		"",
		"---\n\t: :\n---\n",
	};
	size_t nb = sizeof bodies / sizeof bodies[0];

	buf_addf(&d, "%s/bad", tmp);
	CHECK(mkdir(d.buf, 0700) == 0);
	for (size_t i = 0; i < nb; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s/b%02zu", d.buf, i);
		mkdir(p.buf, 0700);
		buf_adds(&p, "/SKILL.md");
		write_file(p.buf, bodies[i], strlen(bodies[i]));
	}
	/* over the size cap */
	{
		size_t big = SKILLS_MAX_BYTES + 10;
		char *text = xmalloc(big);

		memset(text, 'x', big);
		memcpy(text, "---\ndescription: d\n---\n", 24);
		buf_reset(&p);
		buf_addf(&p, "%s/big", d.buf);
		mkdir(p.buf, 0700);
		buf_adds(&p, "/SKILL.md");
		write_file(p.buf, text, big);
		free(text);
	}
	CHECK_INT(skills_load(&set, NULL, d.buf), 0);
	CHECK_INT(set->n, 0);
	CHECK_INT(jv_array_length(jv_copy(set->warnings)), (int)nb + 1);
	CHECK(warning_with(set, "larger than 65536 bytes") != NULL);
	CHECK(warning_with(set, "not valid UTF-8") != NULL);
	CHECK(warning_with(set, "b03/SKILL.md:2: 'name' must be a string") != NULL);
	CHECK(warning_with(set, "b05/SKILL.md:3: 'priority'") != NULL);
	skills_free(set);
	buf_release(&d);
	buf_release(&p);
}

static void test_missing_dirs(void)
{
	struct skill_set *set = NULL;

	CHECK_INT(skills_load(&set, "/nonexistent/repo", "/nonexistent/user"), 0);
	CHECK_INT(set->n, 0);
	CHECK_INT(jv_array_length(jv_copy(set->warnings)), 0);
	skills_free(set);
	skills_free(NULL);
	CHECK_INT(skills_load(&set, NULL, ""), 0);
	CHECK_INT(set->n, 0);
	skills_free(set);
}

static void test_user_dir_default(void)
{
	char *saved_xdg = getenv("XDG_CONFIG_HOME") ? xstrdup(getenv("XDG_CONFIG_HOME")) : NULL;
	char *d;

	setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
	d = skills_user_dir();
	CHECK_STR(d, "/x/cfg/forge/skills");
	free(d);
	setenv("XDG_CONFIG_HOME", "relative", 1);
	setenv("HOME", "/home/u", 1);
	d = skills_user_dir();
	CHECK_STR(d, "/home/u/.config/forge/skills");
	free(d);
	if (saved_xdg)
		setenv("XDG_CONFIG_HOME", saved_xdg, 1);
	else
		unsetenv("XDG_CONFIG_HOME");
	free(saved_xdg);
}

/* Names of a match result joined with ','. malloc'd. */
static char *names(jv arr)
{
	struct buf b = BUF_INIT;

	jv_array_foreach(arr, i, s) {
		buf_addf(&b, "%s%s", i ? "," : "", json_get_str(s, "name"));
		jv_free(s);
	}
	return buf_detach(&b, NULL);
}

static void test_match(void)
{
	struct skill_set *set = NULL;
	jv m;
	char *n;

	CHECK_INT(skills_load(&set, repo, user_dir), 0);
	/* phase only: listed phases (3) before category-mapped ones (2) */
	CHECK_INT(skills_match(&m, set, "implement", NULL, 0), 1);
	n = names(m);
	CHECK_STR(n, "tdd");
	free(n);
	jv_free(m);
	CHECK_INT(skills_match(&m, set, "review", NULL, 0), 2);
	n = names(m);
	CHECK_STR(n, "security-review,shared");   /* same score: by name */
	free(n);
	jv_free(m);
	/* task only: keywords on word boundaries, case-insensitive */
	skills_match(&m, set, NULL, "Fix the FAILING TEST in auth.c and update the README", 0);
	n = names(m);
	CHECK_STR(n, "tdd,security-review,docs");  /* all score 2: by priority */
	free(n);
	jv_free(m);
	skills_match(&m, set, NULL, "tdd: testing the failing-test path", 0);
	n = names(m);
	CHECK_STR(n, "tdd");                       /* "failing-test" is one word */
	free(n);
	{
		jv first = jv_array_get(jv_copy(m), 0);
		double score = json_get_num(first, "score", 0);

		jv_free(first);
		CHECK_INT(score, 6);   /* tdd (task type and name) + testing */
	}
	jv_free(m);
	skills_match(&m, set, NULL, "authentication", 0);   /* "auth" is not a word of it */
	CHECK_INT(jv_array_length(m), 0);
	/* phase and task together; a general skill joins through its keywords */
	skills_match(&m, set, "plan", "write the commit message for the plan", 0);
	n = names(m);
	CHECK_STR(n, "commit-style,spec-writing");  /* 2 (keyword) and 2 (category): by name */
	free(n);
	jv_free(m);
	skills_match(&m, set, "plan", "planning notes and a commit message", 0);
	n = names(m);
	CHECK_STR(n, "spec-writing,commit-style");  /* 2 + 2 (task type) + 1 (category) vs 2 */
	free(n);
	jv_free(m);
	/* the phase filter excludes skills of other phases even on a keyword hit */
	skills_match(&m, set, "deploy", "tdd testing", 0);
	CHECK_INT(jv_array_length(m), 0);
	/* neither: everything, score 0, by priority then name; limit */
	CHECK_INT(skills_match(&m, set, NULL, NULL, 0), 6);
	n = names(m);
	CHECK_STR(n, "tdd,commit-style,security-review,shared,spec-writing,docs");
	free(n);
	jv_free(m);
	CHECK_INT(skills_match(&m, set, "", "", 2), 2);
	{
		jv first = jv_array_get(m, 0);

		CHECK_STR(json_get_str(first, "text"), skills_find(set, "tdd")->text);
		CHECK(json_get_str(first, "path") != NULL);
		CHECK_STR(json_get_str(first, "source"), "project");
		jv_free(first);
	}
	skills_free(set);
}

static void test_render(void)
{
	struct skill_set *set = NULL;
	jv m;
	char *text;

	CHECK_INT(skills_load(&set, repo, user_dir), 0);
	skills_match(&m, set, "implement", NULL, 0);
	text = skills_render(m);
	CHECK_MSG(strncmp(text, "### tdd\n\nTest-driven development workflow\n\n# TDD\n", 49) == 0,
		  "%s", text);
	free(text);
	jv_free(m);
	text = skills_render(jv_null());
	CHECK_STR(text, "");
	free(text);
	skills_free(set);
}

static void cleanup(void)
{
	struct buf cmd = BUF_INIT;

	if (!tmp[0])
		return;
	buf_addf(&cmd, "rm -rf '%s'", tmp);
	if (system(cmd.buf) != 0)
		printf("# could not remove %s\n", tmp);
	buf_release(&cmd);
}

int main(void)
{
	if (setup_dirs() < 0) {
		printf("not ok 1 - setup\n1..1\n");
		return 1;
	}
	RUN(test_load_finds_and_overrides);
	RUN(test_warnings_name_file_and_line);
	RUN(test_bad_files_never_crash);
	RUN(test_missing_dirs);
	RUN(test_user_dir_default);
	RUN(test_match);
	RUN(test_render);
	cleanup();
	return unit_done();
}
