/*
 * project.h - what kind of project a directory holds, and how it is built,
 * tested and linted: the configured commands (config tools.*) first, else
 * detected from the files at its root.
 *
 * Detection (first match wins for each command):
 *   GNUmakefile, makefile, Makefile (the first one, as GNU make reads them)
 *                         test: `make check` when a `check:` target exists,
 *                         else `make test` when a `test:` target exists;
 *                         build: `make`
 *   package.json          test: `npm test` when scripts.test is set and is
 *                         not `npm init`'s placeholder (`echo "Error: no
 *                         test specified" && exit 1`);
 *                         build: `npm run build` when scripts.build is set;
 *                         lint: `npm run lint` when scripts.lint is set
 *   Cargo.toml            test: `cargo test`; build: `cargo build`
 *   go.mod                test: `go test ./...`; build: `go build ./...`
 *   pyproject.toml, setup.py, pytest.ini, tox.ini, setup.cfg
 *                         test: `python3 -m pytest`
 *   CMakeLists.txt        test: `cmake -S . -B build && cmake --build build
 *                         && ctest --test-dir build` (the whole command is
 *                         rerun); build: `cmake -S . -B build && cmake --build build`
 *   *.bats in test/ or tests/   test: `bats <dir>`
 * Languages are counted from file extensions under the root (not .git, not
 * .forge, not node_modules), at most PROJECT_SCAN_MAX files.
 */
#ifndef FORGE_PROJECT_H
#define FORGE_PROJECT_H

#include <jv.h>

struct config;

#define PROJECT_SCAN_MAX 20000

/*
 * Describe the project at root:
 *   {"languages":{"c":12,"shell":3}, "build_files":["Makefile"],
 *    "commands":{"build":…|null,"test":…|null,"lint":…|null,"typecheck":…|null},
 *    "sources":{"test":"config"|"detected"|null, …}}
 * cfg may be NULL (nothing configured).  Returns 0, or -1 when root cannot
 * be read.
 */
int project_describe(jv *out, const char *root, const struct config *cfg);

/* One command ("build", "test", "lint", "typecheck") as a malloc'd string,
 * or NULL when none is configured or detected. */
char *project_command(const char *root, const struct config *cfg, const char *which);

/* The language of a path from its extension ("c", "python", "shell", …),
 * or NULL. */
const char *project_language(const char *path);

#endif
