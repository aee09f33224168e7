/* test_forgedir.c - unit tests of lib/forgedir: the .gitignore of .forge/
 * (written, upgraded from an older Forge's "*", a user's own left alone),
 * what git then ignores, and whether .forge can be Forge's directory. */
#include "core/buf.h"
#include "core/forge.h"
#include "core/forgedir.h"
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

/* A path inside the temporary directory; the last four stay valid. */
static const char *tmp_path(const char *name)
{
	static char paths[4][512];
	static unsigned next;
	char *path = paths[next++ % 4];

	snprintf(path, sizeof paths[0], "%s/%s", tmpdir, name);
	return path;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The content of a file (static buffer), or "(missing)". */
static const char *read_file(const char *path)
{
	static char text[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return "(missing)";
	n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* The stdout of a shell command (static buffer, trailing newline removed). */
static const char *out(const char *cmd)
{
	static char text[4096];
	FILE *p = popen(cmd, "r");
	size_t n = 0;

	text[0] = '\0';
	if (!p)
		return text;
	n = fread(text, 1, sizeof text - 1, p);
	pclose(p);
	while (n > 0 && text[n - 1] == '\n')
		n--;
	text[n] = '\0';
	return text;
}

/* A fresh .forge/ directory named name under tmpdir. */
static const char *fresh_dir(const char *name)
{
	const char *dir = tmp_path(name);

	mkdir(dir, 0755);
	return dir;
}

static void test_written_when_absent(void)
{
	const char *dir = fresh_dir("new");
	char path[600];

	snprintf(path, sizeof path, "%s/.gitignore", dir);
	CHECK_INT(forge_dir_ignore(dir), 0);
	CHECK_STR(read_file(path), forge_dir_gitignore);
	CHECK(strstr(forge_dir_gitignore, "*.db-wal\n") != NULL);
	CHECK(strstr(forge_dir_gitignore, "/worktrees/\n") != NULL);
	/* Again: nothing changes. */
	CHECK_INT(forge_dir_ignore(dir), 0);
	CHECK_STR(read_file(path), forge_dir_gitignore);
}

static void test_old_upgraded(void)
{
	static const char *const olds[] = {
		"*\n", "# written by forge: nothing in .forge/ is tracked\n*\n",
		"# written by forge: what forge makes as it runs stays out of git;\n"
		"# config.json, skills/ and prompts/ can be committed.\n"
		"/.gitignore\n*.db\n*.db-wal\n*.db-shm\n*.db-journal\n*.vectors\n*.vectors.lock\n"
		"*.vectors.tmp.*\n/worktrees/\n/logs/\n/*.log\n",
	};

	for (size_t i = 0; i < sizeof olds / sizeof *olds; i++) {
		char name[32], path[600];
		const char *dir;

		snprintf(name, sizeof name, "old%zu", i);
		dir = fresh_dir(name);
		snprintf(path, sizeof path, "%s/.gitignore", dir);
		write_file(path, olds[i]);
		CHECK_INT(forge_dir_ignore(dir), 0);
		CHECK_STR(read_file(path), forge_dir_gitignore);
		/* No temporary file is left behind. */
		snprintf(path, sizeof path, "ls -A '%s'", dir);
		CHECK_STR(out(path), ".gitignore");
	}
}

static void test_user_file_left_alone(void)
{
	static const char *const mine[] = {
		"*\n!config.json\n", "*", "* \n", "forge.db\n",
		/* (what Forge writes with a line of the person's added) */
		"# written by forge: what forge makes as it runs stays out of git;\nmine\n",
	};

	for (size_t i = 0; i < sizeof mine / sizeof *mine; i++) {
		char name[32], path[600];
		const char *dir;

		snprintf(name, sizeof name, "mine%zu", i);
		dir = fresh_dir(name);
		snprintf(path, sizeof path, "%s/.gitignore", dir);
		write_file(path, mine[i]);
		CHECK_INT(forge_dir_ignore(dir), 0);
		CHECK_STR(read_file(path), mine[i]);
	}
}

/* A first write cut short (a full disk, a kill between the create and
 * the write) left an empty file or the start of the list: the next open
 * writes the whole list (before, it stayed, and .forge/ showed in git
 * status). */
static void test_cut_repaired(void)
{
	size_t full = strlen(forge_dir_gitignore);
	size_t cuts[] = { 0, 1, 10, full / 2, full - 1 };

	for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
		char name[32], path[600], part[1024];
		const char *dir;

		snprintf(name, sizeof name, "cut%zu", i);
		dir = fresh_dir(name);
		snprintf(path, sizeof path, "%s/.gitignore", dir);
		snprintf(part, sizeof part, "%.*s", (int)cuts[i], forge_dir_gitignore);
		write_file(path, part);
		CHECK_INT(forge_dir_ignore(dir), 0);
		CHECK_STR(read_file(path), forge_dir_gitignore);
		snprintf(path, sizeof path, "ls -A '%s'", dir);
		CHECK_STR(out(path), ".gitignore");
	}
}

static void test_error_names_the_file(void)
{
	const char *dir = tmp_path("no-such-dir/.forge");

	CHECK_INT(forge_dir_ignore(dir), -1);
	CHECK(strstr(forge_last_error(), "no-such-dir/.forge/.gitignore") != NULL);
}

/* buf_replace_file (core/buf.h), which the upgrade uses: the whole new
 * content or an error naming the file, and no temporary file left. */
static void test_replace_file(void)
{
	const char *path = tmp_path("replaced");
	struct buf b = BUF_INIT;
	struct stat st;
	char tmp[600];

	CHECK(buf_replace_file(path, "old\n", 4) == 0);
	CHECK(buf_replace_file(path, "new text\n", 9) == 0);
	CHECK(buf_read_file(&b, path) == 0);
	CHECK_STR(b.buf, "new text\n");
	buf_release(&b);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	CHECK(stat(tmp, &st) < 0);
	CHECK_INT(buf_replace_file(tmp_path("no-such-dir/f"), "x", 1), -1);
	CHECK(strstr(forge_last_error(), "no-such-dir/f.tmp.") != NULL);
}

/* What git sees: what Forge makes is ignored, the project's files are not. */
static void test_git_sees_the_project_files(void)
{
	const char *repo = tmp_path("repo");
	char cmd[2048];

	snprintf(cmd, sizeof cmd,
		 "set -e; git init -q '%s'; cd '%s'; mkdir -p .forge/worktrees/T1 .forge/logs "
		 ".forge/skills/x .forge/prompts; "
		 "for f in forge.db forge.db-wal forge.db-shm forge.db-journal forge.db.vectors "
		 "forge.db.vectors.lock forge.db.vectors.tmp.42 run.log worktrees/T1/calc.c logs/llm.txt config.json "
		 "skills/x/SKILL.md prompts/plan.md; do echo x > .forge/$f; done",
		 repo, repo);
	CHECK_INT(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s/.forge", repo);
	CHECK_INT(forge_dir_ignore(cmd), 0);
	snprintf(cmd, sizeof cmd, "git -C '%s' status --porcelain --untracked-files=all", repo);
	CHECK_STR(out(cmd), "?? .forge/config.json\n?? .forge/prompts/plan.md\n?? .forge/skills/x/SKILL.md");
	snprintf(cmd, sizeof cmd, "git -C '%s' add .forge/config.json .forge/skills/x/SKILL.md 2>&1; echo $?",
		 repo);
	CHECK_STR(out(cmd), "0");
}

/* forge_dir_check: .forge absent, a directory or a link to one will do;
 * a file or a link to nothing is named, with what to do. */
static void test_check(void)
{
	const char *root = fresh_dir("check");
	char path[600], target[600];

	CHECK_INT(forge_dir_check(root), 0);
	snprintf(path, sizeof path, "%s/.forge", root);
	write_file(path, "mine\n");
	CHECK_INT(forge_dir_check(root), -1);
	CHECK(strstr(forge_last_error(), "the repository's .forge is a file, not a directory:") != NULL);
	CHECK(strstr(forge_last_error(), "git mv .forge NEW-NAME") != NULL);
	CHECK(strstr(forge_last_error(), "/check/.forge')") != NULL);
	CHECK_INT(unlink(path), 0);
	snprintf(target, sizeof target, "%s/elsewhere", root);
	CHECK_INT(symlink(target, path), 0);
	CHECK_INT(forge_dir_check(root), -1);
	CHECK(strstr(forge_last_error(), "the repository's .forge is a symbolic link to nothing,") != NULL);
	CHECK_INT(mkdir(target, 0755), 0);
	CHECK_INT(forge_dir_check(root), 0);
	CHECK_INT(unlink(path), 0);
	CHECK_INT(mkdir(path, 0755), 0);
	CHECK_INT(forge_dir_check(root), 0);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/forge-forgedir-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_written_when_absent);
	RUN(test_check);
	RUN(test_old_upgraded);
	RUN(test_user_file_left_alone);
	RUN(test_cut_repaired);
	RUN(test_error_names_the_file);
	RUN(test_replace_file);
	RUN(test_git_sees_the_project_files);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return unit_done();
}
