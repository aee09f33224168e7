#!/usr/bin/env bats
# layers.bats - scripts/check-layers (make lint): app/, cmd/ and filters/
# reach the libraries Forge links only through lib/'s headers (rule 5).

bats_require_minimum_version 1.5.0

setup() {
	# scripts/check-layers reads the sources, it runs no program of the
	# tree under test: checked once, in the default suite (~17 CPU-s).
	[ "${FORGE_SUITE:-default}" = default ] ||
		skip "runs no program of the tree under test: check-layers is checked once, in the default suite"
	ROOT=${BATS_TEST_DIRNAME%/*}
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T/scripts"
	cp -r "$ROOT/lib" "$ROOT/app" "$ROOT/cmd" "$ROOT/filters" "$ROOT/README.md" "$T/"
	cp "$ROOT/scripts/check-layers" "$T/scripts/"
}

@test "check-layers: the tree as it is passes" {
	run -0 --separate-stderr "$T/scripts/check-layers"
}

@test "check-layers: a library's header in a program, or ncurses outside the TUI, fails naming the file" {
	sed -i '0,/#include <stdio.h>/s//#include <git2.h>\n#include <stdio.h>/' "$T/filters/forge-plan.c"
	printf '#include <curses.h>\n' >>"$T/app/cli.c"
	printf '#include "sqlite3.h"\n' >>"$T/cmd/forge-gc.c"
	run -1 --separate-stderr "$T/scripts/check-layers"
	[[ "$stderr" == *"filters/forge-plan.c: external git2.h (a library's header outside lib/"* ]]
	[[ "$stderr" == *"app/cli.c: external curses.h"* ]]
	[[ "$stderr" == *"cmd/forge-gc.c: external sqlite3.h"* ]]
	# where EXTERNAL allows it, the same header passes
	printf '#include <curses.h>\n' >>"$T/app/tui_new.c"
	run -1 --separate-stderr "$T/scripts/check-layers"
	[[ "$stderr" != *"app/tui_new.c"* ]]
}

@test "check-layers: an EXTERNAL entry no file uses fails (delete it)" {
	sed -i '/#include <curses.h>/d' "$T/cmd/forge-tui.c"
	run -1 --separate-stderr "$T/scripts/check-layers"
	[[ "$stderr" == *"external curses.h (EXTERNAL allows it in cmd/forge-tui.c, which includes it nowhere: delete that)"* ]]
}
