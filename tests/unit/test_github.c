/* test_github.c - lib/review/github.c without a network: the repository
 * from a remote URL, the comment a finding becomes, the token kept out of
 * children and text. */
#include "unit.h"

#include "core/forge.h"
#include "core/json.h"
#include "core/secret.h"
#include "review/github.h"

#include <stdlib.h>
#include <string.h>

static void repo_is(const char *url, const char *want)
{
	char *slug = NULL;
	int rc = github_repo_from_url(&slug, url);

	if (want) {
		CHECK_MSG(rc == 0, "%s: %s", url, forge_last_error());
		if (slug)
			CHECK_STR(slug, want);
	} else {
		CHECK_MSG(rc < 0, "%s gave %s", url, slug ? slug : "?");
	}
	free(slug);
}

static void test_repo_from_url(void)
{
	repo_is("https://github.com/octo/hello.git", "octo/hello");
	repo_is("https://github.com/octo/hello", "octo/hello");
	repo_is("https://ghe.example.com/octo/hello.git/", "octo/hello");
	repo_is("http://user@ghe.example.com:8080/octo/hello.git", "octo/hello");
	repo_is("git@github.com:octo/hello.git", "octo/hello");
	repo_is("git@ghe.example.com:octo/hello", "octo/hello");
	repo_is("ssh://git@github.com/octo/hello.git", "octo/hello");
	repo_is("ssh://git@ghe.example.com:2222/octo/hello.git", "octo/hello");
	repo_is("/srv/git/hello.git", NULL);
	repo_is("https://github.com/octo", NULL);
	repo_is("https://github.com/a/b/c", NULL);
	repo_is("git@github.com:hello.git", NULL);
}

static void test_comment_body(void)
{
	jv f = json_set(jv_object(), "severity", jv_string("error"));
	char *b;

	f = json_set(f, "message", jv_string("an empty token is accepted"));
	f = json_set(f, "rule", jv_string("ai/empty-token"));
	f = json_set(f, "fingerprint", jv_string("0123456789abcdef"));
	f = json_set(f, "fix", jv_string("\treturn t == NULL;"));
	b = github_comment_body(f);
	CHECK(strstr(b, "```suggestion") == NULL);	/* not fixable: no suggestion */
	CHECK(strstr(b, "<!-- forge:fp=0123456789abcdef -->") != NULL);
	free(b);
	f = json_set(f, "fixable", jv_true());
	b = github_comment_body(f);
	CHECK(strstr(b, "**error** an empty token is accepted `[ai/empty-token]`") == b);
	CHECK(strstr(b, "\n\n```suggestion\n\treturn t == NULL;\n```\n\n<!-- forge:fp=0123456789abcdef -->") != NULL);
	free(b);
	jv_free(f);
}

static void test_token(void)
{
	struct github gh;
	char env0[] = "GITHUB_TOKEN=x", env1[] = "GH_TOKEN=y", env2[] = "PATH=/bin";
	char *envp[] = { env0, env1, env2, NULL };
	char text[] = "Authorization: Bearer ghp_unitTOKEN0123456789";

	CHECK(llm_scrub_env(envp) == 2);
	CHECK_STR(envp[0], "PATH=/bin");
	CHECK(github_open(&gh, NULL, "octo/hello", "", 60) < 0);
	CHECK(github_open(&gh, NULL, "octo", "ghp_unitTOKEN0123456789", 60) < 0);
	CHECK(github_open(&gh, "http://127.0.0.1:9/", "octo/hello", "ghp_unitTOKEN0123456789", 60) == 0);
	CHECK_STR(gh.api, "http://127.0.0.1:9");
	CHECK(strstr(llm_redact(text), "ghp_unitTOKEN") == NULL);
	github_close(&gh);
}

int main(void)
{
	RUN(test_repo_from_url);
	RUN(test_comment_body);
	RUN(test_token);
	return unit_done();
}
