#!/usr/bin/env bats
# forge-memory: every subcommand, bad input, concurrency, the vector file.

load test_helper/common

setup() {
	forge_setup
	FIX="$FORGE_ROOT/tests/fixtures/memory"
}

add() { forge-memory add "$@"; }

# embeddings_mock [MOCK OPTION...]: the mock provider on loopback (its pid in
# $BATS_TEST_TMPDIR/pid, its requests in log.jsonl) configured as the
# OpenAI embeddings API.
embeddings_mock() {
	python3 "$FORGE_ROOT/tests/helpers/mock_llm.py" "$@" --port-file "$BATS_TEST_TMPDIR/port" \
		--log "$BATS_TEST_TMPDIR/log.jsonl" 3>&- &
	echo $! >"$BATS_TEST_TMPDIR/pid"
	for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.05; done
	mkdir -p "$XDG_CONFIG_HOME/forge"
	printf '{"llm":{"embeddings":{"provider":"openai","model":"text-embedding-3-small","base_url":"http://127.0.0.1:%s/v1"}}}' \
		"$(cat "$BATS_TEST_TMPDIR/port")" >"$XDG_CONFIG_HOME/forge/config.json"
	export OPENAI_API_KEY=sk-test-not-a-real-key
}

@test "add prints an id; show finds it; an unknown id is status 1" {
	run -0 add --tags auth,jwt --context "auth implementation" "Authentication uses JWT tokens"
	id=$output
	[[ $id =~ ^[0-9A-Z]{26}$ ]]
	run -0 forge-memory show --json "$id"
	[ "$(jq -r .content <<<"$output")" = "Authentication uses JWT tokens" ]
	[ "$(jq -r .confidence <<<"$output")" = 0.5 ]
	[ "$(jq -c .tags <<<"$output")" = '["auth","jwt"]' ]
	run -0 forge-memory show "$id"
	assert_output --partial "Authentication uses JWT tokens"
	run -1 --separate-stderr forge-memory show 01JDB3AAAAAAAAAAAAAAAAAAAA
	[[ $stderr == *"no memory '01JDB3AAAAAAAAAAAAAAAAAAAA'"* ]]
}

@test "add: source human starts at 0.7, production at 0.9; bad input is status 2" {
	run -0 add --source human "humans say so"
	run -0 forge-memory show --json "$output"
	[ "$(jq -r .confidence <<<"$output")" = 0.7 ]
	run -0 add --source production "production says so"
	run -0 forge-memory show --json "$output"
	[ "$(jq -r .confidence <<<"$output")" = 0.9 ]
	run -2 add --type nonsense "x"
	run -2 add --confidence 2 "x"
	run -2 add
	run -2 forge-memory frobnicate
}

@test "search counts its accesses beside the database: the database is not written, a write folds them in" {
	id=$(add --context "auth implementation" "Authentication uses JWT tokens signed with RS256")
	add "Database uses PostgreSQL with pgbouncer" >/dev/null
	run -0 forge-memory search --peek warm up the thesaurus and the vector file
	before=$(sha256sum "$FORGE_DB")
	run -0 forge-memory search authentication tokens
	run -0 forge-memory search --json authentication tokens
	# (no write transaction: the log is empty, the file is unchanged)
	[ "$(sha256sum "$FORGE_DB")" = "$before" ]
	[ ! -s "$FORGE_DB-wal" ]
	[ "$(sqlite3 "$FORGE_DB" "SELECT access_count FROM memories WHERE id = '$id'")" = 0 ]
	[ "$(grep -c "^$id " "$FORGE_DB.accesses")" = 2 ]
	run -0 forge-memory show --json "$id"
	[ "$(jq -r .access_count <<<"$output")" = 2 ]
	run -0 add "a write folds the accesses into the rows"
	[ "$(sqlite3 "$FORGE_DB" "SELECT access_count FROM memories WHERE id = '$id'")" = 2 ]
	[ ! -s "$FORGE_DB.accesses" ]
	run -0 forge-memory show --json "$id"
	[ "$(jq -r .access_count <<<"$output")" = 2 ]
}

@test "search ranks the relevant memory first and counts the access" {
	add --context "database setup" "Database uses PostgreSQL with pgbouncer" >/dev/null
	id=$(add --context "auth implementation" --tags auth "Authentication uses JWT tokens signed with RS256")
	add --type procedural --context "jest" "When tests fail with mock errors add clearAllMocks" >/dev/null
	run -0 forge-memory search --json implementing authentication tokens
	[ "$(head -1 <<<"$output" | jq -r .memory.id)" = "$id" ]
	head -1 <<<"$output" | jq -e '.relevance > 0 and .similarity > 0 and .recency == 1'
	run -0 forge-memory show --json "$id"
	[ "$(jq -r .access_count <<<"$output")" = 1 ]
	run -0 forge-memory search --peek authentication
	run -0 forge-memory show --json "$id"
	[ "$(jq -r .access_count <<<"$output")" = 1 ]
	run -0 forge-memory search --type procedural --json mock errors
	[ "$(jq -r .memory.type <<<"$output" | sort -u)" = procedural ]
	run -2 forge-memory search
}

@test "list filters by type, tag and confidence; archived ones only on request" {
	a=$(add --tags ci "run make check before pushing")
	add --type procedural --confidence 0.9 "use make -j2" >/dev/null
	run -0 forge-memory list --json
	[ "${#lines[@]}" -eq 2 ]
	run -0 forge-memory list --json --type procedural
	[ "${#lines[@]}" -eq 1 ]
	run -0 forge-memory list --json --tag ci
	[ "$(jq -r .id <<<"$output")" = "$a" ]
	run -0 forge-memory list --json --min-confidence 0.8
	[ "${#lines[@]}" -eq 1 ]
	run -0 forge-memory forget --reason "wrong" "$a"
	run -0 forge-memory list --json
	[ "${#lines[@]}" -eq 1 ]
	run -0 forge-memory list --json --archived
	[ "$(jq -r .archived_reason <<<"$output")" = wrong ]
	run -0 forge-memory list
	assert_output --partial "use make -j2"
}

@test "forget archives, --hard deletes, unknown id is status 1" {
	a=$(add "something to forget")
	run -0 forge-memory forget "$a"
	run -0 forge-memory show --json "$a"
	jq -e .archived_at <<<"$output"
	run -0 forge-memory forget --hard "$a"
	run -1 forge-memory show "$a"
	run -1 forge-memory forget "$a"
	run -2 forge-memory forget
}

@test "signal applies the confidence rules" {
	a=$(add "a rule to confirm")
	run -0 forge-memory signal "$a" applied
	assert_output --partial "0.60"
	run -0 forge-memory signal "$a" confirmed
	assert_output --partial "0.80"
	run -0 forge-memory signal "$a" dismissed
	assert_output --partial "0.60"
	run -1 forge-memory signal 01JDB3AAAAAAAAAAAAAAAAAAAA applied
	run -2 forge-memory signal "$a" liked
}

@test "stats counts memories by type" {
	add "one" >/dev/null
	add --type procedural "two" >/dev/null
	run -0 forge-memory stats --json
	jq -e '.active == 2 and .by_type.semantic == 1 and .by_type.procedural == 1' <<<"$output"
	run -0 forge-memory stats
	assert_output --partial "2 active"
}

@test "a tag holding a NUL character, content over 256 KiB, a source over 1 KiB: bad input on both stores" {
	run -2 --separate-stderr forge-memory import - <<<'{"type":"semantic","content":"x","tags":["a\u0000b"]}'
	[[ $stderr == *"'tags' item 0 holds a NUL character"* ]]
	run -2 --separate-stderr forge-memory import - < <(jq -nc '{type: "semantic", content: ("word " * 60000)}')
	[[ $stderr == *"'content' is 300000 bytes, more than a memory holds (262144)"* ]]
	run -2 --separate-stderr forge-memory import - < <(jq -nc '{type: "semantic", content: "x", source: ("s" * 2000)}')
	[[ $stderr == *"'source' is 2000 bytes, more than 1024"* ]]
}

@test "a known API key in what is added or imported is stored redacted (README \"Keys\")" {
	export ANTHROPIC_API_KEY=sk-ant-test-secret-value-123456
	run -0 add --tags "k:$ANTHROPIC_API_KEY" --context "key $ANTHROPIC_API_KEY" "The key $ANTHROPIC_API_KEY was rejected"
	run -0 forge-memory show --json "$output"
	jq -e '.content == "The key [REDACTED] was rejected" and .context == "key [REDACTED]"
		and .tags == ["k:[REDACTED]"]' <<<"$output"
	run -0 forge-memory import - < <(jq -nc --arg k "$ANTHROPIC_API_KEY" '{type: "semantic", content: "imported \($k)",
		episode: {note: $k}}')
	run -0 sqlite3 "$FORGE_DB" "SELECT count(*) FROM memories WHERE content || context || tags || coalesce(episode, '')
		LIKE '%$ANTHROPIC_API_KEY%'; SELECT count(*) FROM memories WHERE content LIKE '%[REDACTED]%'"
	assert_output $'0\n2'
}

@test "tokens of known formats and a URL's password in a memory are stored redacted, known to this process or not (hunt38)" {
	run -0 add "use postgres://admin:S3cretPassw0rd@db.example/x, ghp_abcdefghijklmnopqrstuvwxyz0123456789, AKIAIOSFODNN7EXAMPLE, xoxb-1234567890-abcdefghij; not ghp_short"
	run -0 forge-memory show --json "$output"
	jq -e '.content == "use postgres://admin:***@db.example/x, [REDACTED], [REDACTED], [REDACTED]; not ghp_short"' <<<"$output"
}

@test "show, list and search print control characters as spaces, --json keeps them; list cuts at a character" {
	run -0 forge-memory import - < <(jq -nc '{id: "01JDB3M0000000000000000001", type: "episodic",
		content: "boom \u001b]0;pwned-title\u0007\u001b[2J\u001b[31mRED \u009b", context: "ctx\u001b[31m"},
		{id: "01JDB3M0000000000000000002", type: "semantic", content: (("a" * 79) + "\u00e9\u00e9 tail")}')
	run -0 forge-memory show 01JDB3M0000000000000000001
	assert_line --regexp '^content +boom  \]0;pwned-title  \[2J \[31mRED   $'
	assert_line --regexp '^context +ctx \[31m$'
	run -0 forge-memory list
	[[ $output != *$'\e'* && $output != *$'\a'* && $output != *$'\xc2\x9b'* ]]
	assert_output --partial "boom  ]0;pwned-title  [2J [31mRED  "
	# 80 characters: the 79 a's and one é, whole (before: 80 bytes, half an é)
	assert_output --partial "$(printf 'a%.0s' $(seq 79))é..."
	run -0 forge-memory search pwned
	[[ $output != *$'\e'* && $output != *$'\a'* ]]
	assert_output --partial "boom  ]0;pwned-title"
	run -0 forge-memory show --json 01JDB3M0000000000000000001
	jq -e '.content | contains("\u001b]0;pwned-title\u0007")' <<<"$output"
}

@test "export and import round-trip as JSON lines" {
	run -0 forge-memory import "$FIX/good.jsonl"
	assert_output --partial "imported 3"
	run -0 forge-memory export
	[ "${#lines[@]}" -eq 3 ]
	echo "$output" >"$BATS_TEST_TMPDIR/out.jsonl"
	jq -e 'has("relationships")' <<<"${lines[0]}"
	FORGE_DB="$BATS_TEST_TMPDIR/other.db" run -0 forge-memory import - <"$BATS_TEST_TMPDIR/out.jsonl"
	FORGE_DB="$BATS_TEST_TMPDIR/other.db" run -0 forge-memory show --json 01JDB3M0000000000000000001
	[ "$(jq -r .confidence <<<"$output")" = 0.8 ]
	run -0 forge-memory import "$FIX/good.jsonl"
	assert_output --partial "skipped 3"
	run -0 forge-memory export "$BATS_TEST_TMPDIR/file.jsonl"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/file.jsonl")" -eq 3 ]
}

@test "an exported memory carries the decay already counted: its copy consolidates as the original does" {
	# unused for ten weeks: consolidation decays it once (0.8 -> 0.3)
	ago=$(date -u -d '70 days ago' +%Y-%m-%dT%H:%M:%S.000Z)
	printf '{"id":"01JDB3M0000000000000000009","type":"semantic","content":"old lesson","confidence":0.8,"created_at":"%s"}\n' \
		"$ago" >"$BATS_TEST_TMPDIR/m.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/m.jsonl"
	run -0 forge-memory consolidate --no-llm
	run -0 forge-memory show --json 01JDB3M0000000000000000009
	jq -e '.confidence < 0.8 and .decayed_through != null and .archived_at == null' <<<"$output"
	a=$(jq -c '[.confidence, .decayed_through]' <<<"$output")
	run -0 forge-memory export
	echo "$output" >"$BATS_TEST_TMPDIR/out.jsonl"
	# (before: the copy was decayed for the same weeks again, and archived)
	export FORGE_DB="$BATS_TEST_TMPDIR/copy.db"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/out.jsonl"
	run -0 forge-memory consolidate --no-llm
	run -0 forge-memory show --json 01JDB3M0000000000000000009
	[ "$(jq -c '[.confidence, .decayed_through]' <<<"$output")" = "$a" ]
	jq -e '.archived_at == null' <<<"$output"
}

@test "forge memory export | head: exit 141 and nothing said, as SIGPIPE would" {
	# more than a pipe holds, so that the export is still writing when head has gone
	for i in $(seq 600); do
		printf '{"type":"semantic","content":"lesson %d: %s"}\n' "$i" "$(printf '%0200d' 0)"
	done >"$BATS_TEST_TMPDIR/many.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/many.jsonl"
	# (before: "forge-memory: cannot write the export" on stderr)
	run -141 --separate-stderr bash -c 'forge-memory export | head -n 1 >/dev/null; exit "${PIPESTATUS[0]}"'
	[ -z "$stderr" ]
}

@test "a large import leaves the word index in one segment; search finds by it as before" {
	# 4000 memories of 40 words out of 20000 flush as several FTS5
	# segments (7 unmerged); the import merges them (memory_io.c).
	python3 -c '
import random
r = random.Random(7)
for i in range(4000):
    words = " ".join("w%d" % r.randrange(20000) for _ in range(40))
    print("{\"type\":\"semantic\",\"content\":\"note %d: %s\"}" % (i, words))
print("{\"type\":\"semantic\",\"content\":\"the needle zyzzyva is here\"}")
' >"$BATS_TEST_TMPDIR/big.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/big.jsonl"
	assert_output "imported 4001, skipped 0 (already present)"
	run -0 sqlite3 "$FORGE_DB" "SELECT count(DISTINCT segid) FROM memories_fts_idx"
	assert_output 1
	run -0 forge-memory search --json --peek zyzzyva
	[ "$(jq -r .memory.content <<<"$output")" = "the needle zyzzyva is here" ]
}

@test "an imported copy of a memory is linked and merged: from an export, or in a file of more than 2000 lines (hunt38 #1)" {
	# an export's lines all have "relationships": the copy of a memory
	# already here got no link, and consolidation never merged it
	M="Run make check before finishing an implement attempt in the calc project"
	FORGE_DB="$BATS_TEST_TMPDIR/a.db" forge-memory add --type procedural "$M" >/dev/null
	add --type procedural "$M" >/dev/null
	FORGE_DB="$BATS_TEST_TMPDIR/a.db" forge-memory export >"$BATS_TEST_TMPDIR/a.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/a.jsonl"
	run -0 forge-memory consolidate --no-llm --json
	jq -e '.merged == 1' <<<"$output"
	# too many lines to link by similarity: exact copies still are
	seq 2001 | jq -c '{type: "semantic", content: "fact \(.): the cache of service\(.) is in /var/cache/s\(.)"}' \
		>"$BATS_TEST_TMPDIR/big.jsonl"
	export FORGE_DB="$BATS_TEST_TMPDIR/d.db"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/big.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/big.jsonl"
	run -0 forge-memory consolidate --no-llm --json
	jq -e '.merged == 2001' <<<"$output"
	run -0 forge-memory stats --json
	jq -e '.active == 2001' <<<"$output"
}

@test "a merged memory's content hash follows the tags it gained: an exact copy of it is still linked and merged" {
	M="Run make check before finishing an implement attempt in the calc project"
	add --type procedural --tags make "$M" >/dev/null
	add --type procedural --tags calc "$M" >/dev/null
	run -0 forge-memory consolidate --no-llm --json
	jq -e '.merged == 1' <<<"$output"
	run -0 forge-memory list --json
	tags=$(jq -c .tags <<<"$output")
	[ "$tags" = '["calc","make"]' ]
	# too many lines to link by similarity: only an exact copy (the same
	# content hash) is linked (before: the kept memory's hash was still
	# that of its tags before the merge, and the copy stayed)
	{
		jq -nc --arg m "$M" --argjson t "$tags" '{type: "procedural", content: $m, tags: $t}'
		seq 2000 | jq -c '{type: "semantic", content: "fact \(.): the cache of service\(.) is in /var/cache/s\(.)"}'
	} >"$BATS_TEST_TMPDIR/big.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/big.jsonl"
	run -0 forge-memory consolidate --no-llm --json
	jq -e '.merged == 1' <<<"$output"
	run -0 forge-memory list --json --type procedural
	[ "${#lines[@]}" -eq 1 ]
}

@test "content of white space only is bad input: add and import store nothing (exit 2)" {
	run -2 --separate-stderr add "  	 "
	[[ $stderr == *"'content' is only white space"* ]]
	printf '{"type":"semantic","content":"a lesson"}\n{"type":"semantic","content":" \\n\\t "}\n' \
		>"$BATS_TEST_TMPDIR/blank.jsonl"
	run -2 --separate-stderr forge-memory import "$BATS_TEST_TMPDIR/blank.jsonl"
	[[ $stderr == *"line 2: 'content' is only white space"* ]]
	run -0 forge-memory list --json --all
	[ -z "$output" ]
}

@test "search: a query whose every word is in more than 2000 memories still finds them (hunt38 #2)" {
	seq 2001 | jq -c '{type: "episodic", content: "run \(.) of the billing service: postgres migration \(.) applied"}' \
		>"$BATS_TEST_TMPDIR/runs.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/runs.jsonl"
	add --type procedural "postgres migration: take a backup first" >/dev/null
	run -0 --separate-stderr forge-memory search --json --peek postgres migration
	[ "${#lines[@]}" -eq 10 ]
	[ "$(jq -r .memory.content <<<"${lines[0]}")" = "postgres migration: take a backup first" ]
}

@test "search: a lesson's stock phrasing ('Fixed in attempt 2', 'Outcome: fixed') makes it no match of a task (hunt38 #5)" {
	add --type semantic --tags lesson,implement,review,lang:c,fixed --context "implement phase: add calc_trace (a review finding in C)" \
		'Lesson for implement (C) from the run "add calc_trace": review sent implement attempt 1 back: flawfinder/printf in calc.c:19: format string is not a constant. Fixed in attempt 2: calc_trace prints the message with printf("%s", msg). Then the review passed. Outcome: fixed; the run completed.' >/dev/null
	run -0 --separate-stderr forge-memory search --json --peek "fix a typo in the README"
	jq -e -s 'all(.similarity < 0.15)' <<<"$output"
	run -0 --separate-stderr forge-memory search --json --peek "printf format string of calc_trace"
	jq -e -s 'length == 1 and .[0].similarity >= 0.15' <<<"$output"
}

@test "a malformed import line imports nothing and names the line" {
	run -2 --separate-stderr forge-memory import "$FIX/bad-line3.jsonl"
	[[ $stderr == *"line 3"*"content"* ]]
	run -0 forge-memory list --json --all
	[ -z "$output" ]
	printf '{"type":"semantic","content":"ok"}\nnot json\n' >"$BATS_TEST_TMPDIR/b.jsonl"
	run -2 --separate-stderr forge-memory import "$BATS_TEST_TMPDIR/b.jsonl"
	[[ $stderr == *"line 2: not JSON"* ]]
	run -0 forge-memory list --json --all
	[ -z "$output" ]
	run -2 forge-memory import "$BATS_TEST_TMPDIR/missing.jsonl"
	# a directory is no file of lines (before: exit 5, "read error")
	run -2 --separate-stderr forge-memory import "$BATS_TEST_TMPDIR"
	[[ $stderr == *"is a directory: give a file of JSON lines"* ]]
	# a NUL in the content (before: "a\u0000b" was stored as "a", and
	# "\u0000b" refused as "missing or empty")
	printf '{"type":"semantic","content":"a\\u0000b"}\n' >"$BATS_TEST_TMPDIR/nul.jsonl"
	run -2 --separate-stderr forge-memory import "$BATS_TEST_TMPDIR/nul.jsonl"
	[[ $stderr == *"line 1: 'content' holds a NUL character"* ]]
	# nan and inf are no amounts (before: --confidence nan was stored as 0.5)
	run -2 --separate-stderr forge-memory add --confidence nan "a lesson"
	run -2 --separate-stderr forge-memory add --confidence inf "a lesson"
	run -0 forge-memory list --json --all
	[ -z "$output" ]
}

@test "an import line with a time that is no time is refused, naming it (before: stored, then every list aborted)" {
	# (before: 253402300800000 was stored and every later list or export of
	# the database aborted, exit 134; -5 exported as a time the import
	# refused; month 13 rolled over into another date)
	for t in 253402300800000 1e30 -5 1.5 '"2026-13-45T99:99:99Z"' '"2026-02-30T10:00:00Z"'; do
		printf '{"type":"semantic","content":"ok"}\n{"type":"semantic","content":"x","created_at":%s}\n' "$t" \
			>"$BATS_TEST_TMPDIR/t.jsonl"
		run -2 --separate-stderr forge-memory import "$BATS_TEST_TMPDIR/t.jsonl"
		[[ $stderr == *"line 2: 'created_at': "*"not a time"* ]]
	done
	run -0 forge-memory list --json --all
	[ -z "$output" ]
	# the ends of the range are times, and come back as written
	printf '{"type":"semantic","content":"first","created_at":"1970-01-01T00:00:00.000Z"}\n{"type":"semantic","content":"last","created_at":253402300799999}\n' \
		>"$BATS_TEST_TMPDIR/t.jsonl"
	run -0 --separate-stderr forge-memory import "$BATS_TEST_TMPDIR/t.jsonl"
	run -0 forge-memory export
	jq -e -s 'map(.created_at) | sort == ["1970-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"]' <<<"$output"
}

@test "consolidate without a model: decay, archive, idempotent" {
	run -0 forge-memory import "$FIX/good.jsonl"
	run -0 forge-memory consolidate --no-llm --json
	jq -e '.merged == 0 and .errors == []' <<<"$output"
	run -0 forge-memory consolidate --no-llm --json
	jq -e '.decayed == 0 and .archived == 0' <<<"$output"
	run -0 forge-memory consolidate --no-llm
	assert_output --partial "merged 0"
}

@test "consolidate waits for another writer as every writer does (busy timeout), not exit 5 'database is locked'" {
	skip_on_postgres "holds SQLite's write lock"
	forge memory add "a memory about caching" >/dev/null
	test_python3
	# another process holds the write lock for two seconds
	"$TEST_PYTHON3" - "$FORGE_DB" "$BATS_TEST_TMPDIR/locked" <<-'EOF' 3>&- &
		import sqlite3, sys, time
		c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
		c.execute("BEGIN IMMEDIATE")
		open(sys.argv[2], "w").close()
		time.sleep(2)
		c.execute("COMMIT")
	EOF
	holder=$!
	for _ in $(seq 200); do [ -e "$BATS_TEST_TMPDIR/locked" ] && break; sleep 0.05; done
	# (before: its read of max(seq) was left open, so BEGIN IMMEDIATE could
	# not wait: "decay/archive: 'BEGIN IMMEDIATE' failed: database is locked")
	run -0 --separate-stderr forge memory consolidate --no-llm
	wait "$holder"
}

@test "a write lock held past the busy timeout: said what holds it and what to do, with SQLite's code (hunt65 #6)" {
	skip_on_postgres "holds SQLite's write lock"
	forge memory add "a memory about caching" >/dev/null
	test_python3
	# another process holds the write lock until told to let go
	"$TEST_PYTHON3" - "$FORGE_DB" "$BATS_TEST_TMPDIR/locked" "$BATS_TEST_TMPDIR/done" <<-'EOF' 3>&- &
		import os, sqlite3, sys, time
		c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
		c.execute("BEGIN IMMEDIATE")
		open(sys.argv[2], "w").close()
		for _ in range(1200):
		    if os.path.exists(sys.argv[3]):
		        break
		    time.sleep(0.05)
		c.execute("COMMIT")
	EOF
	holder=$!
	for _ in $(seq 200); do [ -e "$BATS_TEST_TMPDIR/locked" ] && break; sleep 0.05; done
	run -5 --separate-stderr forge memory add "a memory never stored"
	touch "$BATS_TEST_TMPDIR/done"
	wait "$holder"
	# (before: "...: database is locked (sqlite code 5)" alone)
	[[ $stderr == "forge-memory: database '$FORGE_DB': "*": another process holds the database's write lock (another forge command, or a sqlite3 shell in a transaction) and did not let it go within 10 s: wait for it to finish and try again (fuser '$FORGE_DB' names the processes that have it open) (database is locked, sqlite code 5)" ]]
	run -0 forge memory list
	[[ $output != *"a memory never stored"* ]]
}

@test "consolidate promotes 3 similar episodes with one model call (cassette)" {
	for i in 1 2 3; do
		add --type episodic --context "review phase: fix parser" \
			"review phase for fix parser: cppcheck warns about an uninitialised variable in parser.c line 1$i -> failed" >/dev/null
	done
	run -0 forge-memory consolidate --provider replay --cassette "$FIX/promote-cassette.jsonl" --json
	jq -e '.promoted == 1' <<<"$output"
	run -0 forge-memory patterns --json
	[ "$(jq -r .type <<<"$output")" = failure ]
	[ "$(jq -r .frequency <<<"$output")" = 3 ]
	run -0 forge-memory consolidate --provider replay --cassette "$FIX/promote-cassette.jsonl" --json
	jq -e '.promoted == 0' <<<"$output"
	run -0 forge-memory search --json uninitialised variables cppcheck
	jq -se 'map(.memory.tags | index("pattern")) | any' <<<"$output"
}

@test "consolidate: a promotion request holds a bounded sample of its cluster, cut to fit (hunt38 #3)" {
	# 4 similar episodes of 200 KB each made one 817 KB request, refused as
	# too long, and sent again by every consolidation
	python3 -c "
import json
for i in range(4):
    print(json.dumps({'type':'episodic','context':'review phase: fix parser','content':'review phase for fix parser: cppcheck warns about an uninitialised variable in parser.c line %d -> failed. Log: '%i + ('cppcheck parser.c warning uninitialised variable x ' * 4000)}))" \
		>"$BATS_TEST_TMPDIR/eps.jsonl"
	run -0 forge-memory import "$BATS_TEST_TMPDIR/eps.jsonl"
	embeddings_mock
	rm -f "$XDG_CONFIG_HOME/forge/config.json"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")" ANTHROPIC_API_KEY=test-key
	echo '{"steps":[{"fault":"context_length","repeat":"forever"}]}' |
		curl -sS -f -X POST -H 'content-type: application/json' --data-binary @- "$FORGE_BASE_URL/_mock/script?replace=1"
	# (the model refused it: the step's error is exit 5)
	run -5 --separate-stderr forge-memory consolidate --json
	echo "$stderr"
	run -0 curl -sS -f "$FORGE_BASE_URL/_mock/requests"
	kill "$(cat "$BATS_TEST_TMPDIR/pid")"
	jq -e 'length == 1 and (.[0].body | tostring | length) < 40000' <<<"$output"
	jq -e '.[0].body.messages[0].content | tostring | test("\\[\\.\\.\\.\\]")' <<<"$output"
}

@test "concurrent writers from several processes lose nothing" {
	forge-memory add "warm up" >/dev/null
	for p in 1 2 3 4; do
		(for i in $(seq 1 15); do forge-memory add --tags "p$p" "writer $p memory $i about topic $((i % 4))" >/dev/null || echo FAIL; done) >"$BATS_TEST_TMPDIR/w$p" 2>&1 &
	done
	wait
	! grep -q FAIL "$BATS_TEST_TMPDIR"/w* || false
	run -0 forge-memory list --json -n 1000
	[ "${#lines[@]}" -eq 61 ]
	run -0 forge-memory search --json -n 100 writer memory topic
	[ "${#lines[@]}" -ge 10 ]
	run -0 forge-memory stats --json
	jq -e '.vector_file.rows == 61' <<<"$output"
}

@test "the vector file is rebuilt when deleted or stale" {
	id=$(add "the vector file holds this")
	run -0 forge-memory search --json vector file
	[ -f "$FORGE_DB.vectors" ]
	rm "$FORGE_DB.vectors"
	run -0 forge-memory search --json vector file
	[ "$(jq -r .memory.id <<<"$output")" = "$id" ]
	printf 'garbage' >"$FORGE_DB.vectors"
	run -0 forge-memory search --json vector file
	[ "$(jq -r .memory.id <<<"$output")" = "$id" ]
}

@test "API embeddings (mock server) are cached by text" {
	embeddings_mock
	id=$(forge-memory add "Authentication uses JWT tokens")
	forge-memory add "Database uses PostgreSQL" >/dev/null
	run -0 forge-memory search --json authentication JWT tokens
	[ "$(head -1 <<<"$output" | jq -r .memory.id)" = "$id" ]
	n=$(grep -c embeddings "$BATS_TEST_TMPDIR/log.jsonl")
	run -0 forge-memory search --json authentication JWT tokens
	[ "$(grep -c embeddings "$BATS_TEST_TMPDIR/log.jsonl")" -eq "$n" ]
	run -0 forge-memory stats --json
	[ "$(jq -r .embedder <<<"$output")" = "openai:text-embedding-3-small" ]
	kill "$(cat "$BATS_TEST_TMPDIR/pid")"
}

@test "recall puts API vectors in its vector list: a match in other words, cached" {
	# one scripted vector per embedding request, in order: the two memories,
	# then the query, which shares no word with either
	cat >"$BATS_TEST_TMPDIR/script.json" <<-'EOF'
	[{"kind": "embed", "embeddings": [[1, 0, 0, 0]]},
	 {"kind": "embed", "embeddings": [[0, 1, 0, 0]]},
	 {"kind": "embed", "embeddings": [[0.6, 0.8, 0, 0]]}]
	EOF
	embeddings_mock --script "$BATS_TEST_TMPDIR/script.json"
	a=$(forge-memory add "Stripe webhooks are verified with the signing secret")
	b=$(forge-memory add "Payment provider events arrive twice; handlers are idempotent")
	run -0 --separate-stderr forge-memory search --json --peek how do we trust incoming callbacks
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -r .memory.id <<<"${lines[0]}")" = "$b" ]
	[ "$(jq -c .ranks <<<"${lines[0]}")" = '{"lexical":null,"vector":1,"concepts":null,"associations":null,"feedback":null}' ]
	[ "$(jq -r .cosine <<<"${lines[0]}")" = 0.8 ]
	[ "$(jq -r .memory.id <<<"${lines[1]}")" = "$a" ]
	[ "$(jq -c .ranks <<<"${lines[1]}")" = '{"lexical":null,"vector":2,"concepts":null,"associations":null,"feedback":null}' ]
	# the query's vector and the memories' are cached: no new request
	[ "$(grep -c embeddings "$BATS_TEST_TMPDIR/log.jsonl")" -eq 3 ]
	run -0 --separate-stderr forge-memory search --json --peek how do we trust incoming callbacks
	[ "$(jq -r .memory.id <<<"${lines[0]}")" = "$b" ]
	[ "$(grep -c embeddings "$BATS_TEST_TMPDIR/log.jsonl")" -eq 3 ]
	kill "$(cat "$BATS_TEST_TMPDIR/pid")"
}

@test "search: word and vector ranks fused; nothing for a query that matches nothing" {
	a=$(add --confidence 0.1 "The parser crashes on an empty date string: check the length first")
	add --confidence 1 "Always tag releases from the main branch" >/dev/null
	run -0 --separate-stderr forge-memory search --json --peek crash parsing empty dates
	[ "$(jq -r .memory.id <<<"${lines[0]}")" = "$a" ]
	[ "$(jq -r .ranks.lexical <<<"${lines[0]}")" = 1 ]
	[ "$(jq -r .ranks.vector <<<"${lines[0]}")" = 1 ]
	[ "${#lines[@]}" -eq 1 ]
	run -0 --separate-stderr forge-memory search --json --peek zyxxy qwop
	[ -z "$output" ]
}

@test "without --db: the repository's .forge/forge.db from any directory of it, a linked worktree and its project config too" {
	unset FORGE_DB
	r="$BATS_TEST_TMPDIR/repo"
	git init -q "$r" && mkdir -p "$r/src/deep" && git -C "$r" commit -q --allow-empty -m init
	git -C "$r" worktree add -q "$BATS_TEST_TMPDIR/wt" 2>/dev/null
	run -0 --separate-stderr bash -c 'cd "$1/src/deep" && forge-memory add "The ledger service pins its pool at 20"' _ "$r"
	id=$output
	[ -s "$r/.forge/forge.db" ]
	run -0 --separate-stderr bash -c 'cd "$1" && forge-memory search --json --peek ledger pool' _ "$r/src"
	[ "$(jq -r .memory.id <<<"${lines[0]}")" = "$id" ]
	# a linked worktree (a .git file) shares the main repository's database
	run -0 --separate-stderr bash -c 'cd "$1" && forge-memory search --json --peek ledger pool' _ "$BATS_TEST_TMPDIR/wt"
	[ "$(jq -r .memory.id <<<"${lines[0]}")" = "$id" ]
	# the project's configuration applies: a thesaurus file it names
	printf 'zorblax\tledger service\n' >"$r/groups.tsv"
	mkdir -p "$r/.forge"
	printf '{"memory":{"thesaurus":"%s"}}' "$r/groups.tsv" >"$r/.forge/config.json"
	run -0 --separate-stderr bash -c 'cd "$1" && forge-memory search --json --peek why zorblax stalls' _ "$r/src/deep"
	[ "$(jq -r .memory.id <<<"${lines[0]}")" = "$id" ]
	[ "$(jq -c .ranks.concepts <<<"${lines[0]}")" = 1 ]
	# a thesaurus that cannot be read is exit 5, naming it
	rm "$r/groups.tsv"
	run -5 --separate-stderr bash -c 'cd "$1" && forge-memory search --peek why zorblax stalls' _ "$r"
	[[ "$stderr" == "forge-memory: memory.thesaurus: cannot read '$r/groups.tsv': No such file or directory" ]]
}

# fsyncs_of DIR LOG: how many fsync/fdatasync calls in strace -y's LOG were of
# the directory DIR itself.
fsyncs_of() { grep -cE "^[0-9]+ +f(data)?sync\([0-9]+<$1>\)" "$2" || true; }
# (LeakSanitizer cannot work under ptrace: the ASan+UBSan suite traces
# without it)
traced() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace "$@"; }

@test "a process that writes to a database whose write-ahead log exists syncs no directory; the one that makes the log syncs its directory" {
	command -v strace >/dev/null || skip "strace is not installed (scripts/install-deps installs it)"
	dir="$BATS_TEST_TMPDIR/db"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	export FORGE_DB="$dir/forge.db"
	# the first process makes the database and its log (kept at exit)
	run -0 traced -f -y -qq -o "$BATS_TEST_TMPDIR/first" -e trace=fsync,fdatasync forge-memory add "first lesson"
	[ -e "$FORGE_DB-wal" ]
	[ "$(fsyncs_of "$dir" "$BATS_TEST_TMPDIR/first")" -ge 1 ]
	# a later one appends to the log that is there: its name is on disk
	# already (before: SQLite synced the directory in every process)
	run -0 traced -f -y -qq -o "$BATS_TEST_TMPDIR/later" -e trace=fsync,fdatasync forge-memory add "second lesson"
	grep -qE "f(data)?sync\([0-9]+<$dir/forge.db-wal>\)" "$BATS_TEST_TMPDIR/later"
	[ "$(fsyncs_of "$dir" "$BATS_TEST_TMPDIR/later")" -eq 0 ]
	run -0 forge-memory list
	[[ $output == *"first lesson"* && $output == *"second lesson"* ]]
	# a log removed (a sqlite3 shell that did not keep it) is made again,
	# and its directory synced again
	rm -f "$FORGE_DB-wal" "$FORGE_DB-shm"
	run -0 traced -f -y -qq -o "$BATS_TEST_TMPDIR/again" -e trace=fsync,fdatasync forge-memory add "third lesson"
	[ "$(fsyncs_of "$dir" "$BATS_TEST_TMPDIR/again")" -ge 1 ]
}
