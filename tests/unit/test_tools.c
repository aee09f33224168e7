/* test_tools.c - the tool registry, schemas, validation and the tools
 * themselves against a scratch git repository (lib/agent/tools.h). */
#include "agent/agent.h"
#include "core/forge.h"
#include "git/git.h"
#include "core/json.h"
#include "core/resource.h"
#include "llm/llm.h"
#include "os/sandbox.h"
#include "data/schema.h"
#include "agent/tools.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char repo[128];
static struct tool_ctx ctx;

static void run(const char *cmd)
{
	if (system(cmd) != 0)
		printf("# failed: %s\n", cmd);
}

static void setup(void)
{
	char t[] = "/tmp/forge-tools-XXXXXX", cmd[1024];

	snprintf(repo, sizeof(repo), "%s", mkdtemp(t));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && git init -q && mkdir -p src build && printf 'int main(void)\\n{\\n\\treturn 0;\\n}\\n' > src/main.c && "
		 "printf 'build/\\n*.o\\n' > .gitignore && echo x > build/out && echo o > src/main.o && "
		 "printf 'a\\0b' > blob.bin && seq 1 5000 > long.txt && git add . && "
		 "git -c user.name=t -c user.email=t@x commit -qm init && echo new > src/new.h",
		 repo);
	run(cmd);
	ctx.root = repo;
}

static void call(struct tool_result *r, const char *name, const char *input)
{
	jv in = json_parse(input, strlen(input));
	tools_run(r, name, &ctx, in);
	jv_free(in);
}

static void test_registry_and_schemas(void)
{
	static const char *const names[] = {
		"read_file", "list_files", "grep", "write_file", "edit_file", "apply_patch",
		"run_command", "git_diff", "git_status", "finish", "ask_human",
	};
	size_t n;

	tools_all(&n);
	CHECK_INT(n, 11);
	for (size_t i = 0; i < 11; i++) {
		const struct tool *t = tools_find(names[i]);
		jv spec;
		CHECK_MSG(t != NULL, "%s", names[i]);
		CHECK_MSG(schema_get(t->schema) != NULL, "%s: %s", names[i], forge_last_error());
		spec = tool_spec(t, jv_null());
		CHECK_STR(json_get_str(spec, "name"), names[i]);
		CHECK(strlen(json_get_str(spec, "description")) > 40);
		{
			jv is = json_get(spec, "input_schema");
			bool has = json_has(is, "$schema");
			bool obj = json_get_str(is, "type") && !strcmp(json_get_str(is, "type"), "object");
			jv_free(is);
			jv_free(spec);
			CHECK(!has);
			CHECK(obj);
		}
	}
	CHECK(tools_find("rm") == NULL);
	{
		const char *ov = "{\"type\":\"object\",\"required\":[\"x\"]}";
		jv s = tool_spec(tools_find("finish"), json_parse(ov, strlen(ov)));
		jv is = json_get(s, "input_schema");
		bool has = json_has(is, "required");
		jv_free(is);
		jv_free(s);
		CHECK(has);
	}
	{
		jv all = tool_specs(NULL);
		const char *const two[] = { "read_file", "grep", NULL }, *const bad[] = { "nope", NULL };
		CHECK_INT(jv_array_length(all), 9);
		all = tool_specs(two);
		CHECK_INT(jv_array_length(all), 2);
		all = tool_specs(bad);
		CHECK(!jv_is_valid(all));
		jv_free(all);
	}
}

/* tool_spec(t, null) as it was made before it skimmed the resource: the
 * whole schema parsed, then its notes deleted. */
static jv tool_spec_reference(const struct tool *t)
{
	static const char *const drop[] = { "$schema", "$id", "title", "description", "$comment", NULL };
	const struct resource *res = resource_find(t->schema);
	jv s = res ? json_parse(res->data, res->len) : jv_object();
	jv spec = json_set(jv_object(), "name", jv_string(t->name));
	const char *desc = json_get_str(s, "description");

	spec = json_set(spec, "description", jv_string(desc ? desc : t->name));
	for (size_t i = 0; drop[i]; i++)
		if (json_has(s, drop[i]))
			s = jv_object_delete(s, jv_string(drop[i]));
	return json_set(spec, "input_schema", s);
}

/* Every tool's spec is the reference's, byte for byte (key order too). */
static void test_tool_spec_reference(void)
{
	size_t n;
	const struct tool *all = tools_all(&n);

	for (size_t i = 0; i < n; i++) {
		char *got = json_dumps(tool_spec(&all[i], jv_null()), false);
		char *want = json_dumps(tool_spec_reference(&all[i]), false);

		CHECK_STR(got, want);
		free(got);
		free(want);
	}
	char *got = json_dumps(tool_spec(&(struct tool){ "x", "tools/no_such.json", false, NULL }, jv_null()), false);
	CHECK_STR(got, "{\"name\":\"x\",\"description\":\"x\",\"input_schema\":{}}");
	free(got);
}

static void test_validation_errors(void)
{
	struct tool_result r;

	call(&r, "read_file", "{\"path\":\"src/main.c\",\"start_line\":\"1\"}");
	CHECK(!r.ok);
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(strstr(r.error, "read_file: invalid input: .start_line"), "%s", r.error);
	tool_result_release(&r);
	call(&r, "read_file", "{}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(strstr(r.error, "path"), "%s", r.error);
	tool_result_release(&r);
	call(&r, "write_file", "{\"path\":\"a\",\"content\":\"x\",\"mode\":7}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	tool_result_release(&r);
	call(&r, "frobnicate", "{}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK(strstr(r.error, "no tool called 'frobnicate'"));
	tool_result_release(&r);
}

static void test_read_file(void)
{
	struct tool_result r;

	call(&r, "read_file", "{\"path\":\"src/main.c\"}");
	CHECK(r.ok);
	CHECK_STR(r.output, "     1\tint main(void)\n     2\t{\n     3\t\treturn 0;\n     4\t}");
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"long.txt\",\"start_line\":10,\"end_line\":12}");
	CHECK_STR(r.output, "    10\t10\n    11\t11\n    12\t12\n[lines 10-12 of 5000; call again with start_line=13 to read on]");
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"long.txt\"}");
	CHECK(strstr(r.output, "[lines 1-2000 of 5000; call again with start_line=2001"));
	tool_result_release(&r);
	ctx.read_cap = 100;
	call(&r, "read_file", "{\"path\":\"long.txt\"}");
	CHECK(json_get_bool(r.data, "truncated", false));
	CHECK(strlen(r.output) < 200);
	ctx.read_cap = 0;
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"blob.bin\"}");
	CHECK(r.ok);
	CHECK(strstr(r.output, "binary file (3 bytes)"));
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"long.txt\",\"start_line\":6000}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK(strstr(r.error, "past the end"));
	tool_result_release(&r);
	/* a start_line past any long (1e20, LONG_MAX) is past the end too
	 * (before: cast to LONG_MIN, "[lines -9223372036854775808-0 of ...]") */
	call(&r, "read_file", "{\"path\":\"long.txt\",\"start_line\":99999999999999999999}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "start_line 100000000000000000000 is past the end of 'long.txt' (5000 lines)"),
		  "%s", r.error ? r.error : r.output);
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"long.txt\",\"start_line\":9223372036854775807}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "past the end"), "%s", r.error ? r.error : r.output);
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"long.txt\",\"start_line\":4999,\"end_line\":1e20}");
	CHECK_MSG(r.ok && !strcmp(r.output, "  4999\t4999\n  5000\t5000\n[lines 4999-5000 of 5000]"), "%s",
		  r.ok ? r.output : r.error);
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"long.txt\",\"start_line\":1e20,\"end_line\":3}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "end_line 3 is before start_line 100000000000000000000"), "%s",
		  r.error ? r.error : r.output);
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"nope.c\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK(strstr(r.error, "no such file"));
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\".git/HEAD\"}");
	CHECK_INT(r.kind, TOOL_ERR_DENIED);
	tool_result_release(&r);
	/* a line longer than the read cap (minified, one-line JSON) is shown
	 * cut, as any long line, and the lines after it too (before: nothing
	 * shown, and "call again with start_line=1", the same call) */
	char cmd[600];

	snprintf(cmd, sizeof cmd, "cd %s && head -c 300000 /dev/zero | tr '\\0' a > min.js && "
		 "printf '\\nsecond line\\n' >> min.js", repo);
	run(cmd);
	call(&r, "read_file", "{\"path\":\"min.js\"}");
	CHECK(r.ok);
	CHECK_MSG(r.output && strstr(r.output, "[line cut: 300000 chars]") && strstr(r.output, "     2\tsecond line"),
		  "%s", r.output ? r.output + (strlen(r.output) > 100 ? strlen(r.output) - 100 : 0) : r.error);
	CHECK(!json_get_bool(r.data, "truncated", true));
	tool_result_release(&r);
	snprintf(cmd, sizeof cmd, "rm %s/min.js", repo);
	run(cmd);
}

static void test_list_files_respects_gitignore(void)
{
	struct tool_result r;

	call(&r, "list_files", "{}");
	CHECK(r.ok);
	CHECK_STR(r.output, ".gitignore\nblob.bin\nlong.txt\nsrc/main.c\nsrc/new.h");
	tool_result_release(&r);
	call(&r, "list_files", "{\"pattern\":\"*.h\"}");
	CHECK_STR(r.output, "src/new.h");
	tool_result_release(&r);
	call(&r, "list_files", "{\"pattern\":\"src/**\",\"max_results\":1}");
	CHECK_STR(r.output, "src/main.c\n[1 more files not shown; narrow with path or pattern]");
	tool_result_release(&r);
	call(&r, "list_files", "{\"path\":\"src\",\"pattern\":\"m[a-z]in.?\"}");
	CHECK_STR(r.output, "src/main.c");
	tool_result_release(&r);
	call(&r, "list_files", "{\"path\":\"../\"}");
	CHECK_INT(r.kind, TOOL_ERR_DENIED);
	tool_result_release(&r);
}

static void test_grep(void)
{
	struct tool_result r;

	call(&r, "grep", "{\"pattern\":\"RETURN\\\\s+\\\\d\",\"case_insensitive\":true}");
	CHECK(r.ok);
	CHECK_STR(r.output, "src/main.c:3:\treturn 0;");
	tool_result_release(&r);
	call(&r, "grep", "{\"pattern\":\"^1\",\"glob\":\"*.txt\",\"max_results\":3}");
	CHECK(strstr(r.output, "long.txt:1:1\nlong.txt:10:10\nlong.txt:11:11\n[stopped after 3 matches"));
	tool_result_release(&r);
	call(&r, "grep", "{\"pattern\":\"x\",\"path\":\"build\"}");   /* ignored dir */
	CHECK(strstr(r.output, "no matches"));
	tool_result_release(&r);
	call(&r, "grep", "{\"pattern\":\"(\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK(strstr(r.error, "bad pattern"));
	tool_result_release(&r);
	call(&r, "grep", "{\"pattern\":\"(\",\"fixed_strings\":true}");
	CHECK(r.ok);
	tool_result_release(&r);
	/* a line on which the pattern backtracks past the limit is named, not
	 * dropped as "no match"; the other lines are searched */
	char cmd[300];
	snprintf(cmd, sizeof cmd, "cd %s && head -c 3000 /dev/zero | tr '\\0' a > bt.txt && "
		 "printf '!z\\nz\\n' >> bt.txt", repo);
	run(cmd);
	call(&r, "grep", "{\"pattern\":\"(a|a)+c|z\",\"glob\":\"bt.txt\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strstr(r.output, "bt.txt:2:z\n[pattern too complex (") &&
		  strstr(r.output, "on 1 line, not searched: bt.txt:1;"), "%s", r.output);
	CHECK_INT((int)json_get_num(r.data, "lines_not_searched", 0), 1);
	tool_result_release(&r);
	/* with no match elsewhere the answer is an error, never "no matches" */
	call(&r, "grep", "{\"pattern\":\"(a|a)+(b|c)\",\"glob\":\"bt.txt\"}");
	CHECK(!r.ok);
	CHECK_MSG(r.error && strstr(r.error, "not searched: bt.txt:1;") && !strstr(r.error, "no matches ("),
		  "%s", r.error);
	tool_result_release(&r);
	/* many such lines: the search stops after GREP_FAILED_MAX of them */
	snprintf(cmd, sizeof cmd, "cd %s && for i in 1 2 3 4 5 6 7 8 9 10 11 12; do head -c 3000 /dev/zero | "
		 "tr '\\0' a; echo; done > bt.txt", repo);
	run(cmd);
	call(&r, "grep", "{\"pattern\":\"(a|a)+(b|c)\",\"glob\":\"bt.txt\"}");
	CHECK(!r.ok);
	CHECK_MSG(r.error && strstr(r.error, "on 10 lines") && strstr(r.error, "[search stopped: the pattern is "
		  "too complex on too many lines; 1 of 1 files searched]"), "%s", r.error);
	tool_result_release(&r);
	snprintf(cmd, sizeof cmd, "rm %s/bt.txt", repo);
	run(cmd);
}

static void test_write_and_edit(void)
{
	struct tool_result r;

	call(&r, "write_file", "{\"path\":\"docs/a/b.md\",\"content\":\"# T\\nold line\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_STR(json_get_str(r.data, "action"), "add");
	tool_result_release(&r);
	call(&r, "edit_file", "{\"path\":\"docs/a/b.md\",\"old\":\"old line\",\"new\":\"new line\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"docs/a/b.md\"}");
	CHECK_STR(r.output, "     1\t# T\n     2\tnew line");
	tool_result_release(&r);
	call(&r, "edit_file", "{\"path\":\"docs/a/b.md\",\"old\":\"no such\\ntext\",\"new\":\"x\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK(strstr(r.error, "closest lines"));
	tool_result_release(&r);
	call(&r, "write_file", "{\"path\":\".git/hooks/post-checkout\",\"content\":\"evil\"}");
	CHECK_INT(r.kind, TOOL_ERR_DENIED);
	tool_result_release(&r);
	call(&r, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: p.txt\\n+hi\\n*** End Patch\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK(strstr(r.output, "A p.txt"));
	{
		jv files = json_get(r.data, "files");
		CHECK_INT(jv_array_length(files), 1);
	}
	tool_result_release(&r);
}

/* A symbolic link to nothing: one leading out of the tree stays refused;
 * one inside is replaced by the file written, and the result says so (it
 * said "Created", as if nothing had been there). */
static void test_dangling_links(void)
{
	struct tool_result r;
	char cmd[512];

	snprintf(cmd, sizeof cmd, "cd %s && mkdir -p lk && ln -s ../missing.txt lk/in && "
		 "ln -s /nonexistent-forge-dir/x lk/abs && ln -s ../../nonexistent-forge-x lk/up && "
		 "ln -s gone.txt lk/patched", repo);
	run(cmd);
	call(&r, "write_file", "{\"path\":\"lk/abs\",\"content\":\"x\\n\"}");
	CHECK_INT(r.kind, TOOL_ERR_DENIED);
	tool_result_release(&r);
	call(&r, "write_file", "{\"path\":\"lk/up\",\"content\":\"x\\n\"}");
	CHECK_INT(r.kind, TOOL_ERR_DENIED);
	tool_result_release(&r);
	call(&r, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: lk/abs\\n+x\\n*** End Patch\\n\"}");
	CHECK(!r.ok);
	tool_result_release(&r);
	call(&r, "write_file", "{\"path\":\"lk/in\",\"content\":\"A\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_STR(r.output, "Created lk/in (2 bytes, 1 lines). Note: lk/in was a symbolic link to "
		  "'../missing.txt', which does not exist: this file took the link's place (git records the "
		  "link replaced by a file), and the file the link named was not created. If you meant that "
		  "file, put the link back (git checkout -- lk/in, when git tracks it) and write 'missing.txt'.");
	CHECK_STR(json_get_str(r.data, "replaced_symlink"), "../missing.txt");
	tool_result_release(&r);
	call(&r, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Add File: lk/patched\\n+B\\n*** End Patch\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(strstr(r.output, "A lk/patched\nNote: a symbolic link to nothing stood where a file was added; "
			 "the file took the link's place (git records the link replaced by a file), and the "
			 "file the link named was not created: lk/patched (a link to 'gone.txt')"), "%s", r.output);
	tool_result_release(&r);
	/* nothing was written where the links led */
	snprintf(cmd, sizeof cmd, "cd %s && test -f lk/in && ! test -L lk/in && test -f lk/patched && "
		 "test ! -e missing.txt && test ! -e lk/gone.txt && test ! -e /nonexistent-forge-dir && "
		 "test ! -e ../nonexistent-forge-x && rm -r lk", repo);
	CHECK_INT(system(cmd), 0);
}

static void test_run_command(void)
{
	struct tool_result r;
	char *env[] = { "PATH=/usr/bin:/bin", "ANTHROPIC_API_KEY=sk-ant-canary-1234567890",
			"CANARY_TOKEN=tok", "MY_PASSWORD=pw", NULL };

	ctx.env = env;
	call(&r, "run_command", "{\"command\":\"echo [$ANTHROPIC_API_KEY$CANARY_TOKEN$MY_PASSWORD]; pwd\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK(strstr(r.output, "[]\n"));
	CHECK(strstr(r.output, "[exit status 0]"));
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"exit 4\"}");
	CHECK(!r.ok);
	CHECK_INT(r.kind, TOOL_ERR_FAILED);
	CHECK_INT(json_get_num(r.data, "exit_code", -1), 4);
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"sleep 5\",\"timeout_s\":0.2}");
	CHECK_INT(r.kind, TOOL_ERR_FAILED);
	CHECK(json_get_bool(r.data, "timed_out", false));
	CHECK(strstr(r.error, "timed out"));
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"rm -rf ~\"}");
	CHECK_INT(r.kind, TOOL_ERR_DENIED);
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"npm publish\"}");
	CHECK_INT(r.kind, TOOL_ASK);
	CHECK_STR(json_get_str(r.data, "command"), "npm publish");
	tool_result_release(&r);
	ctx.approved = true;
	call(&r, "run_command", "{\"command\":\"true npm publish\"}");
	CHECK(r.ok);
	ctx.approved = false;
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"pwd\",\"workdir\":\"src\"}");
	CHECK(r.ok);
	CHECK(strstr(r.output, "/src\n"));
	tool_result_release(&r);
	ctx.env = NULL;
}

/* NUL characters: refused in what names a path or a command, kept (as the
 * text \u0000) in what a command or a file gives back. */
static void test_nul_characters(void)
{
	struct tool_result r;
	char path[256];

	call(&r, "write_file", "{\"path\":\"nul\\u0000b.txt\",\"content\":\"x\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "'path' holds a NUL character"), "%s", r.error);
	snprintf(path, sizeof path, "%s/nul", repo);
	CHECK(access(path, F_OK) != 0);
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"touch cmdnul\\u0000; rm -rf src\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "run_command: 'command' holds a NUL"), "%s", r.error);
	snprintf(path, sizeof path, "%s/cmdnul", repo);
	CHECK(access(path, F_OK) != 0);
	tool_result_release(&r);
	call(&r, "edit_file", "{\"path\":\"src/main.c\",\"old\":\"return 0;\",\"new\":\"a\\u0000\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "'new' holds"), "%s", r.error);
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"printf 'before\\\\0after'\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strstr(r.output, "before\\u0000after\n[exit status 0]"), "%s", r.output);
	tool_result_release(&r);
	/* A NUL past the first 8000 bytes: not a binary file, and read whole. */
	snprintf(path, sizeof path, "cd %s && { seq 1 2000; printf 'x\\0y\\n'; } > late.txt", repo);
	run(path);
	call(&r, "read_file", "{\"path\":\"late.txt\",\"start_line\":2001}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strstr(r.output, "x\\u0000y"), "%s", r.output);
	tool_result_release(&r);
	call(&r, "grep", "{\"pattern\":\"^x\",\"glob\":\"late.txt\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strstr(r.output, "late.txt:2001:x\\u0000y"), "%s", r.output);
	tool_result_release(&r);
	/* Binary output: the escapes do not take it past the cap (64 KiB of
	 * NULs were 393,216 characters): a run of NULs is written once, with
	 * its count; NULs scattered through it stop at the cap, saying so. */
	call(&r, "run_command", "{\"command\":\"head -c 100000 /dev/zero\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strlen(r.output) < 2048 && strstr(r.output, "\\u0000[x32768]"), "%.200s", r.output);
	tool_result_release(&r);
	call(&r, "run_command", "{\"command\":\"yes | tr '\\\\n' '\\\\0' | head -c 100000\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strlen(r.output) < 70000, "%zu bytes", r.output ? strlen(r.output) : 0);
	tool_result_release(&r);
}

static void test_finish_ask_and_git(void)
{
	struct tool_result r;

	call(&r, "finish", "{\"summary\":\"done\"}");
	CHECK(r.ok);
	CHECK_INT(r.kind, TOOL_FINISH);
	CHECK_STR(json_get_str(r.data, "summary"), "done");
	tool_result_release(&r);
	call(&r, "ask_human", "{\"question\":\"which?\",\"options\":[\"a\",\"b\"]}");
	CHECK_INT(r.kind, TOOL_ASK_HUMAN);
	tool_result_release(&r);
	call(&r, "ask_human", "{}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	tool_result_release(&r);
	/* a plain checkout is not a run's worktree */
	call(&r, "git_status", "{}");
	CHECK(!r.ok);
	CHECK_MSG(strstr(r.error, "worktree"), "%s", r.error);
	tool_result_release(&r);
}

static void test_git_tools_in_a_run_worktree(void)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	struct tool_result r;
	const char *saved = ctx.root;

	CHECK_MSG(forge_git_open(&g, repo) == 0, "%s", forge_last_error());
	CHECK_MSG(forge_git_worktree_open(&wt, g, "t1", NULL) == 0, "%s", forge_last_error());
	ctx.root = forge_git_worktree_path(wt);
	call(&r, "write_file", "{\"path\":\"src/main.c\",\"content\":\"int main(void) { return 1; }\\n\"}");
	CHECK(r.ok);
	tool_result_release(&r);
	call(&r, "git_status", "{}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(strstr(r.output, "On branch forge/t1\nM  src/main.c"), "%s", r.output);
	tool_result_release(&r);
	call(&r, "git_diff", "{\"paths\":[\"src/main.c\"]}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK(strstr(r.output, "diff --git a/src/main.c b/src/main.c"));
	CHECK(strstr(r.output, "+int main(void) { return 1; }"));
	tool_result_release(&r);
	call(&r, "git_diff", "{\"paths\":[\"other\"]}");
	CHECK_STR(r.output, "no changes");
	tool_result_release(&r);
	/* git_status is capped as git_diff is, and says how to narrow
	 * (before: 150,000 new files, a 1.7 MB answer sent whole) */
	{
		char cmd[512];
		jv files;
		int nfiles;

		snprintf(cmd, sizeof cmd, "cd %s && mkdir m && cd m && seq -f '%%0250g' 1 1200 | xargs touch",
			 ctx.root);
		run(cmd);
		call(&r, "git_status", "{}");
		CHECK_MSG(r.ok, "%s", r.error);
		CHECK_MSG(r.ok && strlen(r.output) < (256u << 10) + 400, "%zu bytes", r.ok ? strlen(r.output) : 0);
		CHECK_MSG(r.ok && strstr(r.output, "more changed files not shown (1201 in all); git_diff with paths"),
			  "%s", r.ok ? r.output + strlen(r.output) - 200 : r.error);
		CHECK(json_get_bool(r.data, "truncated", false));
		CHECK_INT((long)json_get_num(r.data, "count", 0), 1201);
		files = json_get(r.data, "files");
		nfiles = jv_array_length(files);
		CHECK_MSG(nfiles > 900 && nfiles < 1201, "%d entries in the data", nfiles);
		tool_result_release(&r);
		snprintf(cmd, sizeof cmd, "rm -rf %s/m", ctx.root);
		run(cmd);
		call(&r, "git_status", "{}");
		CHECK_STR(r.output, "On branch forge/t1\nM  src/main.c");
		CHECK(!json_get_bool(r.data, "truncated", true));
		tool_result_release(&r);
	}
	ctx.root = saved;
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

/* A file whose name holds a newline (or another control character) is one
 * entry, quoted as git quotes it, in list_files, grep and git_status:
 * written raw it read as two files, one of them made up by the name. */
static void test_names_with_control_characters(void)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	struct tool_result r;
	const char *saved = ctx.root;
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "cd %s && printf 'quoted_marker\\n' > \"$(printf 'x\\nevil.c')\" && "
		 "printf 'quoted_marker\\n' > \"$(printf 'y\\033[2Jz')\"", repo);
	run(cmd);
	call(&r, "list_files", "{\"pattern\":\"[xy]*\"}");
	CHECK_STR(r.output, "\"x\\nevil.c\"\n\"y\\033[2Jz\"");
	tool_result_release(&r);
	call(&r, "grep", "{\"pattern\":\"quoted_marker\"}");
	CHECK_STR(r.output, "\"x\\nevil.c\":1:quoted_marker\n\"y\\033[2Jz\":1:quoted_marker");
	tool_result_release(&r);
	snprintf(cmd, sizeof cmd, "cd %s && rm -f \"$(printf 'x\\nevil.c')\" \"$(printf 'y\\033[2Jz')\"", repo);
	run(cmd);

	CHECK_MSG(forge_git_open(&g, repo) == 0, "%s", forge_last_error());
	CHECK_MSG(forge_git_worktree_open(&wt, g, "t2", NULL) == 0, "%s", forge_last_error());
	snprintf(cmd, sizeof cmd, "cd %s && echo x > \"$(printf 'a\\nM  b')\" && echo y > 'plain \"q\".c'",
		 forge_git_worktree_path(wt));
	run(cmd);
	ctx.root = forge_git_worktree_path(wt);
	call(&r, "git_status", "{}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_STR(r.output, "On branch forge/t2\n?? \"a\\nM  b\"\n?? \"plain \\\"q\\\".c\"");
	tool_result_release(&r);
	ctx.root = saved;
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

static void test_sanitize(void)
{
	char big[600];
	jv in, s;

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	llm_secret_add("sk-ant-known-secret-value");
	in = json_set(jv_object(), "content", jv_string(big));
	in = json_set(in, "api_key", jv_string("abc"));
	in = json_set(in, "command", jv_string("curl -H 'x: sk-ant-known-secret-value' h"));
	in = json_set(in, "list", jv_array_append(jv_array(), jv_number(1)));
	s = tool_input_sanitize(in);
	CHECK(strstr(json_get_str(s, "content"), "[+399 chars]"));
	CHECK_STR(json_get_str(s, "api_key"), "[REDACTED]");
	CHECK(!strstr(json_get_str(s, "command"), "known-secret"));
	{
		jv l = json_get(s, "list");
		CHECK_INT(jv_array_length(l), 1);
	}
	jv_free(s);
	jv_free(in);
}

static void test_agent_adapter(void)
{
	struct agent_tool_outcome o;
	const char *t1 = "{\"command\":\"docker ps\"}", *t2 = "{\"path\":\"src/main.c\"}";
	jv in = json_parse(t1, strlen(t1));

	CHECK(tools_agent_exec(&o, "run_command", in, &ctx) == 0);
	CHECK(!o.ok);
	CHECK(o.gate != NULL);
	CHECK(strstr(o.text, "approval"));
	CHECK_STR(json_get_str(o.event, "kind"), "ask");
	free(o.text);
	free(o.gate);
	jv_free(o.event);
	jv_free(in);
	in = json_parse(t2, strlen(t2));
	CHECK(tools_agent_exec(&o, "read_file", in, &ctx) == 0);
	CHECK(o.ok && !o.retryable && !o.gate);
	free(o.text);
	jv_free(o.event);
	jv_free(in);
}


/* The content of rel in the scratch repository (malloc'd). */
static char *repo_file(const char *rel, size_t *len)
{
	char path[300];
	struct buf b = BUF_INIT;

	snprintf(path, sizeof path, "%s/%s", repo, rel);
	if (buf_read_file(&b, path) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, len);
}

#define CHECK_FILE(rel, bytes) do { \
	size_t len_; \
	char *got_ = repo_file(rel, &len_); \
	bool same_ = got_ && len_ == sizeof(bytes) - 1 && !memcmp(got_, bytes, len_); \
	free(got_); \
	CHECK_MSG(same_, "%s is not as expected", rel); \
} while (0)

/* A file that is not UTF-8 (Latin-1) is shown as Latin-1, with a note,
 * and edited in its own bytes (before: read_file showed U+FFFD for its
 * bytes and said nothing; edit_file given that text answered "`old` was
 * not found"; write_file turned every such byte into U+FFFD). */
static void test_latin1_files(void)
{
	struct tool_result r;
	char cmd[600];

	snprintf(cmd, sizeof cmd, "cd %s && printf 'caf\\351 au lait\\nplain line\\n' > l1.txt && "
		 "printf 'x\\351' > tail.txt && printf 'caf\\303\\251\\n' > u8.txt && "
		 "{ printf a; i=0; while [ $i -lt 40000 ]; do printf '\\303\\251'; i=$((i+1)); done; } > u8big.txt",
		 repo);
	run(cmd);
	call(&r, "read_file", "{\"path\":\"l1.txt\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strstr(r.output, "'l1.txt' is not UTF-8: shown as Latin-1") &&
		  strstr(r.output, "\n     1\tcaf\xc3\xa9 au lait\n     2\tplain line"), "%s", r.output);
	CHECK_STR(json_get_str(r.data, "encoding"), "latin1");
	tool_result_release(&r);
	/* the byte that makes it so may be the very last */
	call(&r, "read_file", "{\"path\":\"tail.txt\"}");
	CHECK_MSG(r.output && strstr(r.output, "not UTF-8") && strstr(r.output, "     1\tx\xc3\xa9"), "%s", r.output);
	tool_result_release(&r);
	/* UTF-8 files, one with sequences across the reader's 64 KiB chunks,
	 * are shown as they are */
	call(&r, "read_file", "{\"path\":\"u8.txt\"}");
	CHECK_STR(r.output, "     1\tcaf\xc3\xa9");
	CHECK(!json_get_str(r.data, "encoding"));
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"u8big.txt\"}");
	CHECK_MSG(r.output && !strstr(r.output, "not UTF-8"), "%.200s", r.output);
	tool_result_release(&r);

	/* edit_file with the text as read_file showed it */
	call(&r, "edit_file", "{\"path\":\"l1.txt\",\"old\":\"caf\xc3\xa9 au lait\",\"new\":\"caf\xc3\xa9 noir\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK(strstr(r.output, "Latin-1"));
	tool_result_release(&r);
	CHECK_FILE("l1.txt", "caf\xe9 noir\nplain line\n");
	/* a loose match too (the indentation-blind pass) */
	call(&r, "edit_file", "{\"path\":\"l1.txt\",\"old\":\"  caf\xc3\xa9 noir\\nplain line\",\"new\":\"caf\xc3\xa9 cr\xc3\xa8me\\nplain line\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	tool_result_release(&r);
	CHECK_FILE("l1.txt", "caf\xe9 cr\xe8me\nplain line\n");
	/* U+FFFD in `old` (a lossy view) and a character above U+00FF in
	 * `new` are refused, saying why; the file is left as it was */
	call(&r, "edit_file", "{\"path\":\"l1.txt\",\"old\":\"caf\xef\xbf\xbd cr\xef\xbf\xbdme\",\"new\":\"x\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "'l1.txt' is not UTF-8") && strstr(r.error, "U+FFFD") &&
		  strstr(r.error, "`old`, character 4") && strstr(r.error, "read_file again"), "%s", r.error);
	tool_result_release(&r);
	call(&r, "edit_file", "{\"path\":\"l1.txt\",\"old\":\"plain line\",\"new\":\"plain\\n\xe2\x80\x94 line\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "U+2014") && strstr(r.error, "`new`, line 2, character 1") &&
		  strstr(r.error, "up to U+00FF"), "%s", r.error);
	tool_result_release(&r);
	CHECK_FILE("l1.txt", "caf\xe9 cr\xe8me\nplain line\n");

	/* apply_patch, through the tool */
	call(&r, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Update File: l1.txt\\n@@\\n-caf\xc3\xa9 cr\xc3\xa8me\\n+th\xc3\xa9\\n plain line\\n*** End Patch\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	tool_result_release(&r);
	CHECK_FILE("l1.txt", "th\xe9\nplain line\n");

	/* grep matches it as read_file shows it, and says so */
	call(&r, "grep", "{\"pattern\":\"th\xc3\xa9|caf\xc3\xa9\"}");
	CHECK_MSG(r.ok && strstr(r.output, "l1.txt:1:th\xc3\xa9\n") && strstr(r.output, "u8.txt:1:caf\xc3\xa9") &&
		  strstr(r.output, "[not UTF-8, so searched and shown as Latin-1, as read_file shows them: l1.txt]"),
		  "%s", r.output ? r.output : r.error);
	tool_result_release(&r);

	/* write_file keeps the encoding, or refuses what it cannot hold */
	call(&r, "write_file", "{\"path\":\"l1.txt\",\"content\":\"na\xc3\xafve\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_STR(json_get_str(r.data, "encoding"), "latin1");
	tool_result_release(&r);
	CHECK_FILE("l1.txt", "na\xefve\n");
	call(&r, "write_file", "{\"path\":\"l1.txt\",\"content\":\"na\xc3\xafve \xe2\x86\x92 x\\n\"}");
	CHECK_INT(r.kind, TOOL_ERR_INPUT);
	CHECK_MSG(r.error && strstr(r.error, "U+2192") && strstr(r.error, "Delete File: l1.txt"), "%s", r.error);
	tool_result_release(&r);
	CHECK_FILE("l1.txt", "na\xefve\n");
	/* a UTF-8 file stays UTF-8 */
	call(&r, "write_file", "{\"path\":\"u8.txt\",\"content\":\"\xe2\x86\x92\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	tool_result_release(&r);
	CHECK_FILE("u8.txt", "\xe2\x86\x92\n");
	call(&r, "edit_file", "{\"path\":\"u8.txt\",\"old\":\"\xe2\x86\x92\",\"new\":\"\xe2\x86\x90\"}");
	CHECK_MSG(r.ok && !strstr(r.output, "Latin-1"), "%s", r.error);
	tool_result_release(&r);
	CHECK_FILE("u8.txt", "\xe2\x86\x90\n");
	snprintf(cmd, sizeof cmd, "cd %s && rm -f l1.txt tail.txt u8.txt u8big.txt", repo);
	run(cmd);
}

/* A file over grep's 4 MiB is named as not searched, with its size and the
 * limit; "no matches" is never said without it (before: skipped silently,
 * "no matches (searched 1 files)"). */
static void test_grep_names_large_files(void)
{
	struct tool_result r;
	char cmd[400];

	snprintf(cmd, sizeof cmd, "cd %s && mkdir -p gen && { seq 1 700000; echo find_me_symbol; } > gen/big.c && "
		 "echo 'int small;' > gen/small.c", repo);
	run(cmd);
	call(&r, "grep", "{\"pattern\":\"find_me_symbol\",\"path\":\"gen\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strstr(r.output, "[1 file not searched, over grep's limit of 4194304 bytes (4 MiB) a file: "
				     "gen/big.c (4788910 bytes); search such a file with run_command") &&
		  strstr(r.output, "no matches in the 1 files searched; 1 not searched (named above)") &&
		  !strstr(r.output, "no matches (searched"), "%s", r.output);
	CHECK_INT((int)json_get_num(r.data, "files_not_searched", -1), 1);
	tool_result_release(&r);
	/* with matches elsewhere it is named as well */
	call(&r, "grep", "{\"pattern\":\"small|find_me_symbol\",\"path\":\"gen\"}");
	CHECK_MSG(r.ok && strstr(r.output, "gen/small.c:1:int small;\n") && strstr(r.output, "gen/big.c (4788910 bytes)"),
		  "%s", r.output ? r.output : r.error);
	tool_result_release(&r);
	snprintf(cmd, sizeof cmd, "rm -rf %s/gen", repo);
	run(cmd);
	call(&r, "grep", "{\"pattern\":\"find_me_symbol\"}");
	CHECK_MSG(r.ok && strstr(r.output, "no matches (searched") && !strstr(r.output, "not searched"), "%s", r.output);
	CHECK_INT((int)json_get_num(r.data, "files_not_searched", -1), 0);
	tool_result_release(&r);
}

/* A name that is not UTF-8 (Latin-1 caf\xe9.txt) is shown quoted, its
 * bytes as git writes them ("caf\351.txt"), and every path tool takes that
 * name back (before: shown as caf\uFFFD.txt, which no tool could open, and
 * one name for many).  A file whose name is that text itself is shown
 * quoted again, so the two are never taken for each other. */
static void test_names_not_utf8(void)
{
	struct forge_git *g = NULL;
	struct forge_git_worktree *wt = NULL;
	struct tool_result r;
	const char *saved = ctx.root;
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "cd %s && mkdir -p l1 && printf 'latin_marker\\n' > \"$(printf 'l1/caf\\351.txt')\" && "
		 "printf 'decoy_marker\\n' > 'l1/\"caf\\351.txt\"'", repo);
	run(cmd);
	call(&r, "list_files", "{\"path\":\"l1\"}");
	CHECK_STR(r.output, "\"l1/\\\"caf\\\\351.txt\\\"\"\n\"l1/caf\\351.txt\"");
	tool_result_release(&r);
	call(&r, "grep", "{\"pattern\":\"_marker\",\"path\":\"l1\"}");
	CHECK_STR(r.output, "\"l1/\\\"caf\\\\351.txt\\\"\":1:decoy_marker\n\"l1/caf\\351.txt\":1:latin_marker");
	tool_result_release(&r);
	/* each name as shown reaches its own file */
	call(&r, "read_file", "{\"path\":\"\\\"l1/caf\\\\351.txt\\\"\"}");
	CHECK_MSG(r.ok && !strcmp(r.output, "     1\tlatin_marker"), "%s", r.ok ? r.output : r.error);
	tool_result_release(&r);
	call(&r, "read_file", "{\"path\":\"\\\"l1/\\\\\\\"caf\\\\\\\\351.txt\\\\\\\"\\\"\"}");
	CHECK_MSG(r.ok && !strcmp(r.output, "     1\tdecoy_marker"), "%s", r.ok ? r.output : r.error);
	tool_result_release(&r);
	/* and the decoy by its own name, as it is (it holds no quote at the start) */
	call(&r, "grep", "{\"pattern\":\"latin\",\"path\":\"\\\"l1/caf\\\\351.txt\\\"\"}");
	CHECK_MSG(r.ok && strstr(r.output, ":1:latin_marker"), "%s", r.ok ? r.output : r.error);
	tool_result_release(&r);
	call(&r, "edit_file", "{\"path\":\"\\\"l1/caf\\\\351.txt\\\"\",\"old\":\"latin_marker\",\"new\":\"edited\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && !strcmp(r.output, "Edited \"l1/caf\\351.txt\": 1 replacement."), "%s", r.output);
	CHECK_STR(json_get_str(r.data, "path"), "\"l1/caf\\351.txt\"");
	tool_result_release(&r);
	CHECK_FILE("l1/caf\xe9.txt", "edited\n");
	CHECK_FILE("l1/\"caf\\351.txt\"", "decoy_marker\n");
	call(&r, "write_file", "{\"path\":\"\\\"l1/caf\\\\351.txt\\\"\",\"content\":\"written\\n\"}");
	CHECK_MSG(r.ok && strstr(r.output, "Replaced \"l1/caf\\351.txt\""), "%s", r.ok ? r.output : r.error);
	CHECK_STR(json_get_str(r.data, "path"), "\"l1/caf\\351.txt\"");
	tool_result_release(&r);
	CHECK_FILE("l1/caf\xe9.txt", "written\n");
	/* apply_patch: update and move, then delete, by the shown names */
	call(&r, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Update File: \\\"l1/caf\\\\351.txt\\\"\\n"
	     "*** Move to: \\\"l1/na\\\\357ve.txt\\\"\\n@@\\n-written\\n+patched\\n*** End Patch\\n\"}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_MSG(r.output && strstr(r.output, "M \"l1/na\\357ve.txt\" (moved from \"l1/caf\\351.txt\")"), "%s",
		  r.output);
	{
		jv f0 = jv_array_get(json_get(r.data, "files"), 0);
		CHECK_STR(json_get_str(f0, "path"), "\"l1/na\\357ve.txt\"");
		CHECK_STR(json_get_str(f0, "from"), "\"l1/caf\\351.txt\"");
		jv_free(f0);
	}
	tool_result_release(&r);
	CHECK_FILE("l1/na\xefve.txt", "patched\n");
	call(&r, "apply_patch", "{\"patch\":\"*** Begin Patch\\n*** Delete File: \\\"l1/na\\\\357ve.txt\\\"\\n*** End Patch\\n\"}");
	CHECK_MSG(r.ok && strstr(r.output, "D \"l1/na\\357ve.txt\""), "%s", r.ok ? r.output : r.error);
	tool_result_release(&r);
	/* run_command's workdir by its shown name */
	snprintf(cmd, sizeof cmd, "cd %s && mkdir \"$(printf 'l1/d\\351r')\" && echo in > \"$(printf 'l1/d\\351r/f')\"", repo);
	run(cmd);
	call(&r, "run_command", "{\"command\":\"cat f\",\"workdir\":\"\\\"l1/d\\\\351r\\\"\"}");
	CHECK_MSG(r.ok && !strncmp(r.output, "in\n", 3), "%s", r.ok ? r.output : r.error);
	tool_result_release(&r);
	snprintf(cmd, sizeof cmd, "cd %s && test ! -e \"$(printf 'l1/na\\357ve.txt')\" && rm -rf l1", repo);
	run(cmd);

	/* git_status: the name quoted once, and the data's name is that text */
	CHECK_MSG(forge_git_open(&g, repo) == 0, "%s", forge_last_error());
	CHECK_MSG(forge_git_worktree_open(&wt, g, "t3", NULL) == 0, "%s", forge_last_error());
	snprintf(cmd, sizeof cmd, "cd %s && echo x > \"$(printf 'caf\\351.txt')\"", forge_git_worktree_path(wt));
	run(cmd);
	ctx.root = forge_git_worktree_path(wt);
	call(&r, "git_status", "{}");
	CHECK_MSG(r.ok, "%s", r.error);
	CHECK_STR(r.output, "On branch forge/t3\n?? \"caf\\351.txt\"");
	{
		jv f0 = jv_array_get(json_get(r.data, "files"), 0);
		CHECK_STR(json_get_str(f0, "path"), "\"caf\\351.txt\"");
		jv_free(f0);
	}
	tool_result_release(&r);
	call(&r, "git_diff", "{}");
	CHECK_MSG(r.ok, "%s", r.error);
	{
		jv f0 = jv_array_get(json_get(r.data, "files"), 0);
		CHECK_STR(json_get_str(f0, "path"), "\"caf\\351.txt\"");
		jv_free(f0);
	}
	tool_result_release(&r);
	ctx.root = saved;
	forge_git_worktree_free(wt);
	forge_git_free(g);
}

int main(void)
{
	char cmd[200];

	setup();
	RUN(test_registry_and_schemas);
	RUN(test_tool_spec_reference);
	RUN(test_validation_errors);
	RUN(test_read_file);
	RUN(test_list_files_respects_gitignore);
	RUN(test_grep);
	RUN(test_write_and_edit);
	RUN(test_dangling_links);
	RUN(test_run_command);
	RUN(test_nul_characters);
	RUN(test_finish_ask_and_git);
	RUN(test_git_tools_in_a_run_worktree);
	RUN(test_names_with_control_characters);
	RUN(test_names_not_utf8);
	RUN(test_sanitize);
	RUN(test_agent_adapter);
	RUN(test_latin1_files);
	RUN(test_grep_names_large_files);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
	run(cmd);
	return unit_done();
}
