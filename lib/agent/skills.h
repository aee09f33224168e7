/*
 * skills.h - SKILL.md files: reusable procedural knowledge for the agents
 * (seed 004 section 8, DESIGN.md section 5 "memory").
 *
 * A skill is a file named SKILL.md found anywhere under
 *   <repo>/.forge/skills/        project skills
 *   <user_dir>                   user skills; by default
 *                                $XDG_CONFIG_HOME/forge/skills (absolute
 *                                XDG_CONFIG_HOME only), else
 *                                $HOME/.config/forge/skills
 * Directories are walked in byte order of their names (deterministic),
 * entries beginning with '.' and symbolic links to directories are not
 * followed, at most SKILLS_MAX_DEPTH levels deep.  A project skill replaces
 * a user skill of the same name; within one root the first file in walk
 * order wins and a duplicate is skipped with a warning.
 *
 * The file starts with YAML front matter between two lines "---"; the rest
 * is the skill's text:
 *
 *   ---
 *   name: tdd                       # default: the name of its directory
 *   description: Test-driven development workflow       (required)
 *   category: code                  # default: general
 *   phases: [implement, test]       # optional: plan implement review test deploy
 *   task_types: [tdd, testing]      # optional keywords (a list or one string)
 *   triggers: ["failing test"]      # optional keywords or phrases
 *   priority: 5                     # optional integer -100..100, default 0
 *   ---
 *   # TDD
 *   1. Write a failing test first ...
 *
 * Other keys are ignored.  A file over SKILLS_MAX_BYTES, not UTF-8, without
 * front matter, with YAML that does not parse, or with a key of the wrong
 * type is skipped with a warning "PATH:LINE: message" (LINE counts the file's
 * lines from 1; 0 when it is about the whole file), collected in the set;
 * nothing is printed.
 *
 * MATCHING (skills_match).  For a phase and/or a task text:
 *   1. phase filter - a skill that lists phases, or whose category maps to
 *      phases (table below), is left out when the phase is not among them;
 *      a skill with neither applies to every phase (with phase score 0, so
 *      it is a match only through its keywords).
 *   2. phase score - 3 when the phase is listed in `phases`, 2 when it comes
 *      from the category, 0 otherwise.
 *   3. keyword score - for the task text, compared case-insensitively on
 *      word boundaries ('a'-'z', '0'-'9', '_' and '-' are word characters,
 *      and runs of other characters compare as one space): 2 for each
 *      task_types/triggers entry found, 2 when the skill's name is found,
 *      1 when its category is found.
 *   4. a skill is a match when its score (2 + 3) is above 0; with neither a
 *      phase nor a task every skill matches with score 0.
 *   Order: score descending, then priority descending, then name.
 *   Category → phases: plan|planning|design|architecture → plan;
 *   code|coding|implement|implementation|tdd|refactor|refactoring → implement;
 *   review|security|style → review; test|testing|qa → test;
 *   deploy|deployment|release|ops → deploy; anything else: no phases.
 */
#ifndef FORGE_SKILLS_H
#define FORGE_SKILLS_H

#include <jv.h>
#include <stddef.h>

#define SKILLS_MAX_BYTES (64 * 1024)
#define SKILLS_MAX_DEPTH 8
#define SKILLS_MAX_FILES 1000   /* per root; more is skipped with a warning */

struct skill {
	char *name;
	char *description;
	char *category;
	char *path;             /* the SKILL.md file */
	const char *source;     /* "project" or "user" (static) */
	char *text;             /* the body after the front matter */
	char **phases;          /* nphases entries */
	size_t nphases;
	char **keywords;        /* task_types then triggers, lowercased */
	size_t nkeywords;
	int priority;
};

struct skill_set {
	struct skill *items;    /* sorted by name */
	size_t n;
	jv warnings;            /* array of strings "PATH:LINE: message" */
};

/*
 * Load every skill under <repo_root>/.forge/skills (repo_root may be NULL:
 * no project skills) and user_dir (NULL: the default above; "" : none).
 * Missing directories are not errors; bad files become warnings.  Returns
 * 0; -1 with a message only when a directory that exists cannot be read.
 * *out is the caller's (skills_free).
 */
int skills_load(struct skill_set **out, const char *repo_root, const char *user_dir);

/* The default user directory as a malloc'd string, or NULL when neither
 * XDG_CONFIG_HOME nor HOME is usable. */
char *skills_user_dir(void);

void skills_free(struct skill_set *set);

/* The skill named name, borrowed from set; NULL when there is none. */
const struct skill *skills_find(const struct skill_set *set, const char *name);

/* True when phase is one of plan, implement, review, test, deploy. */
int skills_phase_valid(const char *phase);

/*
 * The skills matching phase (NULL or "": any) and task_text (NULL or "":
 * none), best first, at most limit (0: all), as a new array in *out of
 *   {name, description, category, phases, source, path, priority, score, text}
 * Borrows set.  Returns the count.
 */
int skills_match(jv *out, const struct skill_set *set, const char *phase, const char *task_text,
		 size_t limit);

/* One skill as {name, description, category, phases, keywords, priority,
 * source, path} plus "text" when with_text.  A new object. */
jv skills_to_json(const struct skill *s, int with_text);

/*
 * Markdown for a prompt from a skills_match() array (borrowed): per skill
 * "### NAME\n\nDESCRIPTION\n\nTEXT\n\n".  malloc'd.
 */
char *skills_render(jv matched);

/* libyaml's version ("0.2.5"), the parser of a skill's front matter; static. */
const char *skills_yaml_version(void);

#endif
