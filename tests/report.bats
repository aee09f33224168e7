#!/usr/bin/env bats
# report.bats - forge report TRACE: one self-contained HTML page, rendered in
# headless Chromium and inspected there: its sections (summary, plan,
# timeline, cost, diff, findings, tests) are in the DOM, and the <script>
# the run's task and diff carry shows as text, never as an element.  The
# run is one real completed run (replayed model answers) made once in
# setup_file; its branch gets one more commit whose file holds a script.
# The Chromium tests skip, saying so, only when no chromium is installed
# (scripts/install-deps installs it).

bats_require_minimum_version 1.5.0

load test_helper/common

# The injections: each would leave a mark in the DOM if it ran or parsed.
TASK_EVIL='add a mul <script>document.body.setAttribute("data-pwned","task")</script> operation <img src=x onerror=alert(1)>'
DIFF_EVIL='<script>document.body.setAttribute("data-pwned","diff")</script></pre><h1 id="injected">x</h1>'

setup_file() {
	SHARED="$BATS_FILE_TMPDIR/shared"
	export SHARED
	(
		BATS_TEST_TMPDIR=$SHARED
		mkdir -p "$SHARED"
		forge_setup
		cp -r "$FORGE_ROOT/tests/fixtures/repos/calc" "$SHARED/calc"
		cd "$SHARED/calc" || exit 1
		git init -q -b main && git add -A && git commit -q -m calc
		rc=0
		FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl" \
			forge run "$TASK_EVIL" </dev/null >"$SHARED/run.out" 2>&1 || rc=$?
		echo $rc >"$SHARED/run.rc"
		T=$(forge history --json -n 1 | jq -r .trace_id)
		wt="$(run_worktree "$T" "$SHARED/calc")"
		printf '%s\n' "$DIFF_EVIL" >"$wt/evil.html"
		git -C "$wt" add evil.html && git -C "$wt" commit -q -m "a file with a script"
		forge report "$T" >"$SHARED/run.html" 2>"$SHARED/report.err" || echo "report failed: $?" >>"$SHARED/run.out"
	)
}

setup() {
	forge_setup
	[ "$(cat "$SHARED/run.rc")" = 0 ] || { cat "$SHARED/run.out"; false; }
	cd "$SHARED/calc"
	export FORGE_DB="$SHARED/forge.db"     # read only here
	T=$(forge history --json -n 1 | jq -r .trace_id)
	HTML="$SHARED/run.html"
}

# chromium_dom FILE: the DOM Chromium builds from FILE, serialised.
chromium_dom() {
	local bin
	bin=$(command -v chromium || command -v chromium-browser || command -v google-chrome) ||
		skip "no chromium installed (scripts/install-deps installs the Debian package chromium)"
	"$bin" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$BATS_TEST_TMPDIR/chromium" \
		--dump-dom "file://$1" 2>"$BATS_TEST_TMPDIR/chromium.err"
}

@test "the page: sections, escaped run data, no script, nothing external" {
	[ -s "$HTML" ]
	[ ! -s "$SHARED/report.err" ]
	run -0 grep -c '<section id="' "$HTML"
	[ "$output" -eq 7 ]
	for id in summary plan timeline cost diff findings tests; do
		grep -q "<section id=\"$id\">" "$HTML"
	done
	# nothing to fetch, nothing to run (an attribute inside a tag: the
	# escaped task's "&lt;img src=x" is text)
	! grep -qiE '<script|<link|<img|<iframe|<[a-z][^>]*[[:space:]](src|href)=|@import|url\(' "$HTML" || false
	grep -q "content=\"default-src 'none'; style-src 'unsafe-inline'\"" "$HTML"
	# the task and the diff's script are text
	grep -qF 'add a mul &lt;script&gt;document.body.setAttribute(&quot;data-pwned&quot;,&quot;task&quot;)&lt;/script&gt; operation &lt;img src=x onerror=alert(1)&gt;' "$HTML"
	grep -qF '<span class="add">+&lt;script&gt;document.body.setAttribute(&quot;data-pwned&quot;,&quot;diff&quot;)&lt;/script&gt;&lt;/pre&gt;&lt;h1 id=&quot;injected&quot;&gt;x&lt;/h1&gt;</span>' "$HTML"
	# the numbers of the run
	grep -qF '<td class="n">0.0191</td><td class="n">4870</td><td class="n">3</td>' "$HTML"
	grep -qF '5 passed, 0 failed' "$HTML"
	grep -qF 'model claude-sonnet-4-5: 1200 in + 40 out tokens, $0.0042' "$HTML"
	grep -qF 'diff --git a/evil.html b/evil.html' "$HTML"
}

@test "rendered in headless Chromium: the sections are there, the injected script and markup are text" {
	run -0 chromium_dom "$HTML"
	dom=$output
	for id in summary plan timeline cost diff findings tests; do
		[[ $dom == *"<section id=\"$id\">"* ]] || { echo "no section $id"; false; }
	done
	[[ $dom == *"<h2>Timeline</h2>"* && $dom == *"<h2>Cost per phase</h2>"* && $dom == *"<h2>Diff</h2>"* ]]
	# no script ran (it would have marked the body) and none became an element
	[[ $dom != *data-pwned=* ]]
	[[ $dom != *"<script"* && $dom != *"<img"* && $dom != *'<h1 id="injected"'* ]]
	# the text is there, as text
	[[ $dom == *'&lt;script&gt;document.body.setAttribute("data-pwned","diff")&lt;/script&gt;'* ]]
	[[ $dom == *"<h1>add a mul &lt;script&gt;"* ]]
	[[ $dom == *"<title>forge run $T</title>"* ]]
}

@test "forge report takes a unique prefix; bad usage and unknown runs exit 2" {
	run -0 --separate-stderr forge report "${T:0:20}"
	[ "$output" = "$(cat "$HTML")" ]
	run -2 --separate-stderr forge report 7NOSUCHRUN
	[[ $stderr == "forge-report: no run matches '7NOSUCHRUN'" ]]
	run -2 --separate-stderr forge report
	run -0 forge report --help
	[[ ${lines[0]} == "usage: forge-report TRACE > run.html" ]]
}
