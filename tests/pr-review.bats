#!/usr/bin/env bats
# pr-review.bats - forge-review --pr N against a loopback GitHub
# (tests/helpers/github_server.py): the pull request read from the REST API,
# its head fetched as refs/pull/N/head from a local bare "origin", one review
# posted with inline comments, a second run updating instead of duplicating,
# rate limits, and the token kept out of everything written.
#
# The server checks every request body and answer against GitHub's published
# OpenAPI description (@octokit/openapi, installed by scripts/github-openapi
# with npm; the part of it the server uses, cut out once by
# tests/helpers/github_openapi_trim.py); each test's teardown fails on a
# violation.  Without npm (or Python's jsonschema) the server runs unchecked
# and the test that asks for the check is skipped, saying so.  One server
# and one set of repositories are made per file; each test copies the
# repositories and resets the server.  No assertion is on timing: rate
# limits are asserted by the requests the server counted.

bats_require_minimum_version 1.5.0

TOKEN=ghp_PRREVIEWTESTTOKEN0123456789abcdef
KEY=sk-ant-PRREVIEWTEST-000000000000000

load test_helper/mock

teardown_file() {
	[ -f "$BATS_FILE_TMPDIR/gh.pid" ] && kill "$(cat "$BATS_FILE_TMPDIR/gh.pid")" 2>/dev/null
	mock_stop
}

setup_file() {
	export BATS_TEST_TIMEOUT=120
	mock_start
	OPENAPI=""
	OPENAPI_WHY=""
	if ! command -v npm >/dev/null; then
		OPENAPI_WHY="npm is not installed: GitHub's OpenAPI description cannot be installed"
	elif ! python3 -c 'import jsonschema' 2>/dev/null; then
		OPENAPI_WHY="Python's jsonschema is not installed"
	else
		OPENAPI=$("$BATS_TEST_DIRNAME/../scripts/github-openapi")
		# the operations the server implements and what they reference, made
		# once and cached next to the description: the server reads ~100 KB
		# instead of 13 MB (github_openapi_trim.py says why its checks are
		# the full description's)
		OPENAPI=$("$TEST_PYTHON3" "$BATS_TEST_DIRNAME/helpers/github_openapi_trim.py" "$OPENAPI")
	fi
	export OPENAPI OPENAPI_WHY
	repos_template "$BATS_FILE_TMPDIR/repos"
	# One loopback GitHub for the file's tests (they run one at a time:
	# mock_start): each test's setup resets it to a new server's state for
	# its own repositories (POST /_gh/reset), so no test sees another's.
	local d=$BATS_FILE_TMPDIR
	echo '{"owner": "octo", "repo": "hello", "token": "", "pulls": {}}' >"$d/gh.json"
	"$TEST_PYTHON3" "$BATS_TEST_DIRNAME/helpers/github_server.py" --port-file "$d/gh.port" --config "$d/gh.json" \
		${OPENAPI:+--openapi "$OPENAPI"} 2>"$d/gh.err" 3>&- &
	echo $! >"$d/gh.pid"
	for _ in $(seq 1200); do
		[ -s "$d/gh.port" ] || ! kill -0 "$(cat "$d/gh.pid")" 2>/dev/null && break
		sleep 0.05
	done
	[ -s "$d/gh.port" ] || { cat "$d/gh.err" >&2; return 1; }
	export GH="http://127.0.0.1:$(cat "$d/gh.port")"
}

# repos_template DIR: the repositories every test starts from, made once
# (each test copies them): DIR/src with main (one commit) and feature (the
# pull request: src/auth.c, src/copy.c), DIR/origin.git (a bare clone of
# main, the pull request's head only as refs/pull/7/head) and DIR/work (a
# clone of origin.git, where forge-review runs)
repos_template() {
	(
		export HOME="$1.home" LC_ALL=C
		export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.com
		export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.com
		mkdir -p "$HOME"
		git init -q -b main "$1/src"
		echo hello >"$1/src/README"
		git -C "$1/src" add -A && git -C "$1/src" commit -q -m initial
		git clone -q --bare "$1/src" "$1/origin.git"
		git clone -q "$1/origin.git" "$1/work"
		git -C "$1/src" checkout -q -b feature
		mkdir -p "$1/src/src"
		printf 'int check_token(const char *t)\n{\n\treturn t[0] == 0;\n}\n' >"$1/src/src/auth.c"
		printf '#include <string.h>\nvoid put(char *d, const char *s)\n{\n\tstrcpy(d, s);\n}\n' >"$1/src/src/copy.c"
		git -C "$1/src" add -A && git -C "$1/src" commit -q -m feature
		git -C "$1/src" push -q "$1/origin.git" feature:refs/pull/7/head
	)
}

setup() {
	load test_helper/common
	forge_setup
	mock_reset
	unset GITHUB_TOKEN GH_TOKEN GITHUB_API_URL GITHUB_REPOSITORY
	T=$BATS_TEST_TMPDIR
	cp -a "$BATS_FILE_TMPDIR/repos/." "$T/"
	git -C "$T/work" remote set-url origin "$T/origin.git"
	HEAD_SHA=$(git -C "$T/src" rev-parse HEAD)
	cat >"$T/gh.json" <<-EOF
	{"owner": "octo", "repo": "hello", "token": "$TOKEN", "page_size": 2,
	 "pulls": {"7": {"repo_dir": "$T/origin.git", "base_ref": "main"}}}
	EOF
	gh_reset
	export GITHUB_API_URL=$GH GITHUB_REPOSITORY=octo/hello
	# the AI layer (src/auth.c makes the risk medium) finds one fixable problem
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[
		{"file":"src/auth.c","line":3,"severity":"error","category":"security","rule":"empty-token",
		 "message":"an empty token is accepted","confidence":0.9,"fixable":true,
		 "fix":"\treturn t == NULL || t[0] == 0;"}]}}]},
		{"tool_calls":[{"name":"report_findings","input":{"findings":[
		{"file":"src/auth.c","line":3,"severity":"error","category":"security","rule":"empty-token",
		 "message":"an empty token is accepted","confidence":0.9,"fixable":true,
		 "fix":"\treturn t == NULL || t[0] == 0;"}]}}]}]'
	cd "$T/work"
}

teardown() {
	local v
	v=$(curl -sS "$GH/_gh/state" | jq -c .violations)
	if [ "$v" != "[]" ]; then
		echo "GitHub OpenAPI violations: $v" >&2
		return 1
	fi
}

# gh_reset: the loopback GitHub as new, serving this test's $T/gh.json
gh_reset() {
	curl -sS -f -X POST --data-binary @"$T/gh.json" "$GH/_gh/reset" >/dev/null ||
		{ cat "$BATS_FILE_TMPDIR/gh.err" >&2; return 1; }
}
gh_state() { curl -sS "$GH/_gh/state"; }
# review ARGS...: forge-review --pr 7 with the mock model and the token
review() { GITHUB_TOKEN=$TOKEN ANTHROPIC_API_KEY=$KEY forge-review --no-input --provider anthropic \
	--base-url "$MOCK_URL" "$@"; }
posted() { jq -c 'select(.type == "review.github.posted") | .payload' <<<"$OUT"; }

@test "a pull request is reviewed and posted as one review: inline comments on the changed lines, a suggestion, REQUEST_CHANGES" {
	run -1 --separate-stderr review --pr 7
	OUT=$output
	run jq -r '.review.decision' <<<"$(tail -n 1 <<<"$OUT")"
	assert_output request_changes
	S=$(gh_state)
	assert_equal "$(jq -r '[.reviews | length, .[0].state, .[0].commit_id] | join(" ")' <<<"$S")" "1 CHANGES_REQUESTED $HEAD_SHA"
	jq -e '.reviews[0].body | contains("<!-- forge:summary -->")' <<<"$S"
	# the model's finding on src/auth.c:3 with its fix as a suggestion
	run jq -r '.comments[] | select(.body | contains("empty-token")) | "\(.path) \(.line) \(.side)"' <<<"$S"
	assert_output "src/auth.c 3 RIGHT"
	run jq -r '.comments[] | select(.body | contains("empty-token")) | .body' <<<"$S"
	assert_output --partial $'```suggestion\n\treturn t == NULL || t[0] == 0;\n```'
	assert_output --regexp '<!-- forge:fp=[0-9a-f]{16} -->'
	# the built-in rule on the strcpy line
	run jq -r '.comments[] | select(.body | contains("insecure/c-strcpy")) | "\(.path) \(.line)"' <<<"$S"
	assert_output "src/copy.c 4"
	# one review, every comment in it, all through the endpoints Forge uses
	assert_equal "$(jq '[.comments[].pull_request_review_id] | unique | length' <<<"$S")" 1
	assert_equal "$(jq -c '[.requests[] | select(.[0] != "GET")]' <<<"$S")" '[["POST","/repos/octo/hello/pulls/7/reviews"]]'
	assert_equal "$(posted | jq -r '[.posted, .event] | join(" ")')" "$(jq '.comments | length' <<<"$S") REQUEST_CHANGES"
}

@test "review.github.event decides the review's event: request_changes posted as COMMENT" {
	echo '{"review": {"github": {"event": {"request_changes": "COMMENT"}}}}' >"$T/cfg.json"
	run -1 --separate-stderr review --pr 7 --config "$T/cfg.json"
	assert_equal "$(gh_state | jq -r '.reviews[0].state')" COMMENTED
}

@test "a second run updates instead of duplicating; a finding that is gone gets one 'resolved' reply" {
	run -1 --separate-stderr review --pr 7
	n=$(gh_state | jq '.comments | length')
	[ "$n" -ge 3 ]
	run -1 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq '.comments | length' <<<"$S")" "$n"
	assert_equal "$(jq '.reviews | length' <<<"$S")" 1
	assert_equal "$(posted | jq -r '[.posted, .kept, .new_review] | join(" ")')" "0 $n false"
	# the summary is updated in place (listing the comments took pages: page_size 2)
	assert_equal "$(jq -c '[.requests[] | select(.[0] == "PUT")]' <<<"$S")" "[[\"PUT\",\"/repos/octo/hello/pulls/7/reviews/$(jq '.reviews[0].id' <<<"$S")\"]]"
	[ "$(jq '[.requests[] | select(.[1] == "/repos/octo/hello/pulls/7/comments")] | length' <<<"$S")" -gt 2 ]
	# the pull request's new head no longer copies with strcpy
	printf '#include <string.h>\nvoid put(char *d, const char *s)\n{\n\tmemmove(d, s, strlen(s) + 1);\n}\n' >"$T/src/src/copy.c"
	git -C "$T/src" commit -q -am "no strcpy"
	git -C "$T/src" push -q -f "$T/origin.git" feature:refs/pull/7/head
	mock_reset
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	run --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	run jq -r '.comments[] | select(.in_reply_to_id != null) | .body' <<<"$S"
	assert_output --partial "<!-- forge:resolved="
	replies=$(jq '[.comments[] | select(.in_reply_to_id != null)] | length' <<<"$S")
	[ "$replies" -ge 1 ]
	assert_equal "$(posted | jq .resolved)" "$replies"
	# and a fourth run replies to nothing again
	mock_reset
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	run --separate-stderr review --pr 7
	assert_equal "$(gh_state | jq '[.comments[] | select(.in_reply_to_id != null)] | length')" "$replies"
}

@test "the head commit is fetched from origin as refs/pull/N/head when it is not present" {
	run -128 git cat-file -e "$HEAD_SHA^{commit}"
	run -1 --separate-stderr review --pr 7
	OUT=$output
	run jq -r 'select(.type == "review.github.fetched") | .payload.ref' <<<"$OUT"
	assert_output refs/pull/7/head
	assert_equal "$(git rev-parse refs/forge/pull/7/head)" "$HEAD_SHA"
	# present now: not fetched again
	run -1 --separate-stderr review --pr 7
	OUT=$output
	run jq -r 'select(.type == "review.github.fetched") | .payload.ref' <<<"$OUT"
	assert_output ""
}

@test "the repository: GITHUB_REPOSITORY wins, else the origin remote's URL (ssh and https, Enterprise hosts)" {
	git fetch -q origin refs/pull/7/head
	git remote set-url origin git@github.example.com:octo/hello.git
	unset GITHUB_REPOSITORY
	run -1 --separate-stderr review --pr 7
	git remote set-url origin https://github.example.com/octo/hello.git
	run -1 --separate-stderr review --pr 7 --dry-run
	export GITHUB_REPOSITORY=someone/else
	run -5 --separate-stderr review --pr 7
	assert_output --partial "HTTP 404"
	assert_equal "$(gh_state | jq -r '[.requests[] | select(.[0] == "GET" and (.[1] | test("/pulls/7$"))) | .[1]] | join(" ")')" \
		"/repos/octo/hello/pulls/7 /repos/octo/hello/pulls/7 /repos/someone/else/pulls/7"
	# a remote whose URL names no owner/name is bad input
	unset GITHUB_REPOSITORY
	git remote set-url origin /nowhere
	run -2 --separate-stderr review --pr 7
	assert_output --partial "GITHUB_REPOSITORY"
}

@test "without a token: exit 2 with a clear message, and no request" {
	run -2 --separate-stderr forge-review --no-input --pr 7
	assert_output --partial "GITHUB_TOKEN or GH_TOKEN"
	assert_equal "$(gh_state | jq '.requests | length')" 0
	run -2 --separate-stderr forge-review --no-input --pr seven
}

@test "the token is in no event, log, output or database (GH_TOKEN, a failed run too)" {
	GH_TOKEN=$TOKEN ANTHROPIC_API_KEY=$KEY run -1 --separate-stderr forge-review --no-input -v --pr 7 \
		--provider anthropic --base-url "$MOCK_URL"
	all="$output$stderr"
	export GITHUB_REPOSITORY=someone/else
	GH_TOKEN=$TOKEN run -5 --separate-stderr forge-review --no-input -v --pr 7
	all="$all$output$stderr"
	[[ $all != *"$TOKEN"* ]]
	[ -s "$FORGE_DB" ]
	run grep -rla "$TOKEN" "$FORGE_DB"* "$T/work" "$HOME"
	assert_output ""
	# it was sent: the server accepted it
	assert_equal "$(gh_state | jq '[.requests[] | select(.[0] == "POST")] | length')" 1
}

@test "a 403 secondary rate limit with retry-after is waited out and the request sent again" {
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"POST","path":"/repos/octo/hello/pulls/7/reviews","status":403,"headers":{"retry-after":"1"},"count":1}' >/dev/null
	run -1 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq '[.requests[] | select(.[0] == "POST")] | length' <<<"$S")" 2
	assert_equal "$(jq '.reviews | length' <<<"$S")" 1
	assert_equal "$(posted | jq .rate_limit_waits)" 1
}

@test "a 429 asking for longer than review.github.max_wait_s fails clearly (exit 5) without waiting" {
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"GET","path":"/repos/octo/hello/pulls/7","status":429,"headers":{"retry-after":"3600"},"count":1}' >/dev/null
	run -5 --separate-stderr review --pr 7
	assert_output --partial "asked to wait 3600 s, more than review.github.max_wait_s (60 s)"
	assert_equal "$(gh_state | jq '.requests | length')" 1
	# x-ratelimit-remaining: 0 with a reset an hour away: the same
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"GET","path":"/repos/octo/hello/pulls/7","status":403,"headers":{"x-ratelimit-remaining":"0","x-ratelimit-reset":"'$(($(date +%s) + 3600))'"},"count":1}' >/dev/null
	run -5 --separate-stderr review --pr 7
	assert_output --partial "more than review.github.max_wait_s"
}

@test "a 5xx answer is sent again (bounded backoff): 503 then 200 goes on; retry-after past max_wait_s and a lasting 502 fail clearly (exit 5)" {
	# one 503, then GitHub answers: the review is read and posted
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"GET","path":"/repos/octo/hello/pulls/7","status":503,"count":1,"message":"Service Unavailable"}' >/dev/null
	run -1 --separate-stderr review --pr 7
	S=$(gh_state)
	assert_equal "$(jq '[.requests[] | select(. == ["GET", "/repos/octo/hello/pulls/7"])] | length' <<<"$S")" 2
	assert_equal "$(jq '.reviews | length' <<<"$S")" 1
	# a 503 asking to wait longer than review.github.max_wait_s: not sent again
	gh_reset
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"GET","path":"/repos/octo/hello/pulls/7","status":503,"headers":{"retry-after":"3600"},"count":1,"message":"Service Unavailable"}' >/dev/null
	run -5 --separate-stderr review --pr 7
	assert_output --partial "GitHub GET $GH/repos/octo/hello/pulls/7: HTTP 503: Service Unavailable (not retried: GitHub asked to wait 3600 s, more than review.github.max_wait_s (60 s))"
	assert_equal "$(gh_state | jq '.requests | length')" 1
	# a 502 that lasts: 4 attempts, then a message naming the status and the URL
	gh_reset
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"GET","path":"/repos/octo/hello/pulls/7","status":502,"count":10,"message":"Server Error"}' >/dev/null
	run -5 --separate-stderr review --pr 7
	assert_output --partial "GitHub GET $GH/repos/octo/hello/pulls/7: HTTP 502: Server Error (4 attempts)"
	assert_equal "$(gh_state | jq '.requests | length')" 4
}

@test "--dry-run prints what would be posted and sends no write request" {
	run -1 --separate-stderr review --pr 7 --dry-run
	OUT=$output
	assert_equal "$(gh_state | jq -c '[.requests[] | select(.[0] != "GET")]')" "[]"
	assert_equal "$(posted | jq -r '.requests[0] | "\(.method) \(.path) \(.body.event)"')" "POST /repos/octo/hello/pulls/7/reviews REQUEST_CHANGES"
	[[ $stderr == *"--dry-run: would send"* ]]
	# the same through forge
	GITHUB_TOKEN=$TOKEN ANTHROPIC_API_KEY=$KEY run -1 --separate-stderr forge review --no-input --provider anthropic \
		--base-url "$MOCK_URL" --pr 7 --dry-run
	OUT=$output
	assert_equal "$(posted | jq -r .dry_run)" true
	assert_equal "$(gh_state | jq -c '[.requests[] | select(.[0] != "GET")]')" "[]"
}

@test "requests and answers are checked against GitHub's OpenAPI description" {
	[ -n "$OPENAPI" ] || skip "$OPENAPI_WHY"
	# a body that breaks the description is refused by the server and recorded
	run curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
		"$GH/repos/octo/hello/pulls/7/reviews" -d '{"event":"MAYBE"}'
	assert_output 422
	run bash -c "curl -sS '$GH/_gh/state' | jq -r '.violations[0]'"
	assert_output --partial "request POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews"
	# with the trimmed description (setup_file), as strict as the full one:
	# a comment without its body (required inside comments[]), a dismissal
	# without its message
	[[ $OPENAPI == *.trimmed-*.json ]]
	run curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOKEN" \
		"$GH/repos/octo/hello/pulls/7/reviews" -d '{"event":"COMMENT","body":"b","comments":[{"path":"src/auth.c","line":3}]}'
	assert_output 422
	run curl -sS -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $TOKEN" \
		"$GH/repos/octo/hello/pulls/7/reviews/1/dismissals" -d '{"event":"DISMISS"}'
	assert_output 422
	run bash -c "curl -sS '$GH/_gh/state' | jq -r '.violations[]'"
	assert_output --partial "request POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews: 'body' is a required property at comments/0"
	assert_output --partial "request PUT /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals: 'message' is a required property"
	assert_equal "$(gh_state | jq '.reviews | length')" 0
	# (the teardown would fail on them: forget them)
	gh_reset
}

@test "the loopback GitHub's reset forgets reviews, comments, requests, violations and faults: each test starts from a new server" {
	run curl -sS -f -X POST -H "Authorization: Bearer $TOKEN" "$GH/repos/octo/hello/pulls/7/reviews" \
		-d '{"event":"COMMENT","body":"b","comments":[{"path":"src/auth.c","line":3,"body":"c"}]}'
	assert_equal "$(jq .id <<<"$output")" 1001
	curl -sS -f -X POST "$GH/_gh/fault" -d '{"method":"GET","path":".*","status":500,"count":1}' >/dev/null
	curl -sS -X PUT -H "Authorization: Bearer $TOKEN" "$GH/repos/octo/hello/pulls/7/reviews/1001/dismissals" -d '{"message":5}' >/dev/null
	gh_state | jq -e '[.reviews, .comments, .requests] | map(length) == [1, 1, 2]'
	[ -z "$OPENAPI" ] || gh_state | jq -e '.violations | length == 1'
	gh_reset
	assert_equal "$(gh_state | jq -c '[.reviews, .comments, .dismissals, .requests, .violations]')" '[[],[],{},[],[]]'
	# the fault is gone too, and the ids start again
	run curl -sS -f -H "Authorization: Bearer $TOKEN" "$GH/repos/octo/hello/pulls/7"
	assert_equal "$(jq -r .head.sha <<<"$output")" "$HEAD_SHA"
	run curl -sS -f -X POST -H "Authorization: Bearer $TOKEN" "$GH/repos/octo/hello/pulls/7/reviews" -d '{"event":"COMMENT","body":"b"}'
	assert_equal "$(jq .id <<<"$output")" 1001
}

@test "the trimmed description: the operations asked for and every component they reach, nothing else; a \$ref it cannot follow is refused" {
	run -0 "$TEST_PYTHON3" -c '
import json, sys
sys.path.insert(0, sys.argv[1])
from github_openapi_trim import trim
doc = {"openapi": "3.0.3", "info": {"title": "t"},
       "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/r"}}},
                        "post": {"responses": {"200": {"$ref": "#/components/responses/unused"}}}},
                 "/b": {"get": {}}},
       "components": {"responses": {"r": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/x"}}}},
                                    "unused": {}},
                      "schemas": {"x": {"properties": {"y": {"items": [{"$ref": "#/components/schemas/y"}]}}},
                                  "y": {"$ref": "#/components/schemas/z"}, "z": {"type": "integer"}, "unused": {}},
                      "examples": {"e": {"value": {"id": 1}}, "unused": {}}}}
print(json.dumps(trim(doc, [("GET", "/a")], ["e"]), sort_keys=True))
doc["components"]["schemas"]["z"] = {"$ref": "#/components/schemas/x/properties/y"}
try:
    trim(doc, [("GET", "/a")], [])
except ValueError as e:
    print(e)
' "$BATS_TEST_DIRNAME/helpers"
	assert_line --index 0 '{"components": {"examples": {"e": {"value": {"id": 1}}}, "responses": {"r": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/x"}}}}}, "schemas": {"x": {"properties": {"y": {"items": [{"$ref": "#/components/schemas/y"}]}}}, "y": {"$ref": "#/components/schemas/z"}, "z": {"type": "integer"}}}, "info": {"title": "t"}, "openapi": "3.0.3", "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/r"}}}}}}'
	assert_line --index 1 'a $ref that is not #/components/KIND/NAME: #/components/schemas/x/properties/y'
}

@test "a finding whose text changed edits its comment (PATCH) instead of adding one" {
	run -1 --separate-stderr review --pr 7
	id=$(gh_state | jq '.comments[] | select(.body | contains("empty-token")) | .id')
	n=$(gh_state | jq '.comments | length')
	mock_reset
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[
		{"file":"src/auth.c","line":3,"severity":"error","category":"security","rule":"empty-token",
		 "message":"an empty or NULL token is accepted","confidence":0.9,"fixable":false}]}}]}]'
	run -1 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq '.comments | length' <<<"$S")" "$n"
	assert_equal "$(jq -c '[.requests[] | select(.[0] == "PATCH")]' <<<"$S")" "[[\"PATCH\",\"/repos/octo/hello/pulls/comments/$id\"]]"
	run jq -r ".comments[] | select(.id == $id) | .body" <<<"$S"
	assert_output --partial "an empty or NULL token is accepted"
	refute_output --partial suggestion
	assert_equal "$(posted | jq -r '[.updated, .posted] | join(" ")')" "1 0"
}

# fixed_head: the pull request's new head copies without strcpy, and the
# model finds nothing in it: the review no longer requests changes.
fixed_head() {
	printf '#include <string.h>\nvoid put(char *d, const char *s)\n{\n\tmemmove(d, s, strlen(s) + 1);\n}\n' >"$T/src/src/copy.c"
	git -C "$T/src" commit -q --allow-empty -am "no strcpy"
	git -C "$T/src" push -q -f "$T/origin.git" feature:refs/pull/7/head
	FIXED_SHA=$(git -C "$T/src" rev-parse HEAD)
	mock_reset
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
}

@test "a later run that no longer requests changes dismisses Forge's earlier REQUEST_CHANGES review, naming the commit" {
	run -1 --separate-stderr review --pr 7
	old=$(gh_state | jq '.reviews[0].id')
	fixed_head
	run -0 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq -r '[.reviews[] | .state] | join(" ")' <<<"$S")" "DISMISSED COMMENTED"
	assert_equal "$(jq -r --arg id "$old" '.dismissals[$id]' <<<"$S")" \
		"Resolved by $FIXED_SHA: Forge's review of that commit no longer requests changes."
	assert_equal "$(jq -c '[.requests[] | select(.[1] | endswith("/dismissals"))]' <<<"$S")" \
		"[[\"PUT\",\"/repos/octo/hello/pulls/7/reviews/$old/dismissals\"]]"
	run jq -c 'select(.type == "review.github.dismissed") | .payload' <<<"$OUT"
	assert_output "{\"number\":7,\"review_id\":$old,\"commit\":\"$FIXED_SHA\",\"dry_run\":false}"
	assert_equal "$(posted | jq -c '[.event, .dismissed, .dismiss_failed]')" "[\"COMMENT\",[$old],[]]"
	# the event names the review this run posted (before: none, once the
	# earlier summary was marked superseded)
	assert_equal "$(posted | jq '.review_id')" "$(jq '.reviews[1].id' <<<"$S")"
	# a third run finds nothing left to dismiss
	fixed_head
	run -0 --separate-stderr review --pr 7
	assert_equal "$(gh_state | jq '[.requests[] | select(.[1] | endswith("/dismissals"))] | length')" 1
}

@test "no dismissal when Forge's earlier review was a COMMENT" {
	# the earlier review is a COMMENT (review.github.event): nothing to dismiss
	echo '{"review": {"github": {"event": {"request_changes": "COMMENT"}}}}' >"$T/cfg.json"
	run -1 --separate-stderr review --pr 7 --config "$T/cfg.json"
	fixed_head
	run -0 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	# (a new review: the new head has new findings) and the old one is left as it is
	assert_equal "$(jq -r '[.reviews[] | .state] | join(" ")' <<<"$S")" "COMMENTED COMMENTED"
	assert_equal "$(jq '[.requests[] | select(.[1] | endswith("/dismissals"))] | length' <<<"$S")" 0
	run jq -c 'select(.type // "" | startswith("review.github.dismiss"))' <<<"$OUT"
	assert_output ""
}

@test "no dismissal while the new run still requests changes" {
	run -1 --separate-stderr review --pr 7
	# a new push, the same problem in it: a new finding, a new REQUEST_CHANGES review
	printf 'int check_token(const char *t)\n{\n\treturn t[0] == 0;\n}\nint other(void) { return 0; }\n' >"$T/src/src/auth.c"
	git -C "$T/src" commit -q -am "more"
	git -C "$T/src" push -q -f "$T/origin.git" feature:refs/pull/7/head
	mock_reset
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[
		{"file":"src/auth.c","line":3,"severity":"error","category":"security","rule":"empty-token",
		 "message":"an empty token is accepted","confidence":0.9,"fixable":false},
		{"file":"src/auth.c","line":5,"severity":"error","category":"correctness","rule":"unused",
		 "message":"other is never called","confidence":0.9,"fixable":false}]}}]}]'
	run -1 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq -r '[.reviews[] | .state] | join(" ")' <<<"$S")" "CHANGES_REQUESTED CHANGES_REQUESTED"
	assert_equal "$(jq '[.requests[] | select(.[1] | endswith("/dismissals"))] | length' <<<"$S")" 0
	assert_equal "$(posted | jq -c '[.event, .dismissed]')" '["REQUEST_CHANGES",[]]'
	# both are dismissed once a run no longer requests changes
	fixed_head
	run -0 --separate-stderr review --pr 7
	assert_equal "$(gh_state | jq -r '[.reviews[] | .state] | join(" ")')" "DISMISSED DISMISSED COMMENTED"
}

@test "a dismissal GitHub refuses (403, 422) is a warning: the review is posted, the exit status is the review's" {
	run -1 --separate-stderr review --pr 7
	old=$(gh_state | jq '.reviews[0].id')
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"PUT","path":".*/dismissals","status":403,"count":1,"message":"Resource not accessible by integration"}' >/dev/null
	fixed_head
	run -0 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq -r '[.reviews[] | .state] | join(" ")' <<<"$S")" "CHANGES_REQUESTED COMMENTED"
	[[ $stderr == *"forge-review: warning: the earlier review $old that requested changes is not dismissed: GitHub PUT /repos/octo/hello/pulls/7/reviews/$old/dismissals: HTTP 403: Resource not accessible by integration"* ]]
	run jq -c 'select(.type == "review.github.dismiss_failed") | .payload | [.review_id, .status, .number]' <<<"$OUT"
	assert_output "[$old,403,7]"
	assert_equal "$(posted | jq -c '[.dismissed, (.dismiss_failed | length)]')" "[[],1]"
	# no retry of a 403 that is not a rate limit
	assert_equal "$(jq '[.requests[] | select(.[1] | endswith("/dismissals"))] | length' <<<"$S")" 1
	# a 422 (GitHub: the review cannot be dismissed) the same way
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"PUT","path":".*/dismissals","status":422,"count":1,"message":"Validation Failed"}' >/dev/null
	fixed_head
	run -0 --separate-stderr review --pr 7
	[[ $stderr == *"forge-review: warning: the earlier review $old that requested changes is not dismissed: "*"HTTP 422: Validation Failed"* ]]
	# the next run tries again (the review still requests changes) and dismisses it
	fixed_head
	run -0 --separate-stderr review --pr 7
	assert_equal "$(gh_state | jq -r '[.reviews[] | .state] | join(" ")')" "DISMISSED COMMENTED"
	assert_equal "$(gh_state | jq '[.requests[] | select(.[1] | endswith("/dismissals"))] | length')" 3
}

@test "a dismissal that fails otherwise (a 500) fails the review (exit 5); a rate limit on it is waited out" {
	run -1 --separate-stderr review --pr 7
	# (a 500 is sent 4 times in all: every one fails)
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"PUT","path":".*/dismissals","status":500,"count":4,"message":"Server Error"}' >/dev/null
	fixed_head
	run -5 --separate-stderr review --pr 7
	[[ $stderr == *"/dismissals: HTTP 500: Server Error (4 attempts)"* ]]
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"PUT","path":".*/dismissals","status":403,"headers":{"retry-after":"1"},"count":1}' >/dev/null
	fixed_head
	run -0 --separate-stderr review --pr 7
	OUT=$output
	assert_equal "$(gh_state | jq '[.requests[] | select(.[1] | endswith("/dismissals"))] | length')" 6
	assert_equal "$(gh_state | jq -r '[.reviews[] | .state] | join(" ")')" "DISMISSED COMMENTED"
	assert_equal "$(posted | jq .rate_limit_waits)" 1
}

# changed_auth: main gets a 30-line lib/auth.c and the pull request changes
# its line 15; the model finds something on line 22, 7 lines from the change
# (outside GitHub's 3 lines of context)
changed_auth() {
	git -C "$T/src" checkout -q main
	mkdir -p "$T/src/lib"
	for i in $(seq 1 30); do echo "int v$i = $i;"; done >"$T/src/lib/auth.c"
	git -C "$T/src" add -A && git -C "$T/src" commit -q -m auth
	git -C "$T/src" push -q "$T/origin.git" main
	git -C "$T/src" checkout -q feature
	git -C "$T/src" merge -q --no-edit main
	sed -i 's/int v15 = 15;/int v15 = 150;/' "$T/src/lib/auth.c"
	git -C "$T/src" commit -q -am "v15"
	git -C "$T/src" push -q -f "$T/origin.git" feature:refs/pull/7/head
	mock_reset
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[
		{"file":"lib/auth.c","line":22,"severity":"warning","category":"correctness","rule":"v22",
		 "message":"v22 looks wrong","confidence":0.9}]}}]},
		{"tool_calls":[{"name":"report_findings","input":{"findings":[
		{"file":"lib/auth.c","line":22,"severity":"warning","category":"correctness","rule":"v22",
		 "message":"v22 looks wrong","confidence":0.9}]}}]}]'
}

@test "the diff comments are placed on is GitHub's (3 lines of context), whatever the user's git config says" {
	changed_auth
	git -C "$T/work" config diff.context 10
	git -C "$T/work" config diff.interHunkContext 20
	git -C "$T/work" config diff.noprefix true
	run -1 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq '.reviews | length' <<<"$S")" 1
	# the finding 7 lines from the change is not on a line of the pull request's diff:
	# not inline (before: placed there with diff.context=10, GitHub answered 422, nothing posted)
	assert_equal "$(jq '[.comments[] | select(.path == "lib/auth.c")] | length' <<<"$S")" 0
	assert_equal "$(jq -r '[.comments[] | "\(.path):\(.line)"] | unique | join(" ")' <<<"$S")" "src/copy.c:4"
}

@test "a review GitHub refuses for its inline comments (422) is posted again with them in the summary, GitHub's reason said" {
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"POST","path":".*/pulls/7/reviews","status":422,"count":1,"message":"Unprocessable Entity","errors":["Line could not be resolved"]}' >/dev/null
	run -1 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq -r '[.reviews | length, .[0].state] | join(" ")' <<<"$S")" "1 CHANGES_REQUESTED"
	assert_equal "$(jq '.comments | length' <<<"$S")" 0
	jq -e '.reviews[0].body | contains("`src/copy.c`: ") and contains("insecure/c-strcpy")
	  and contains("`src/auth.c`: an empty token is accepted")' <<<"$S"
	[[ $stderr == *"forge-review: warning: GitHub refused the review's inline comments (GitHub POST /repos/octo/hello/pulls/7/reviews: HTTP 422: Unprocessable Entity: Line could not be resolved); they are listed in the review's summary instead"* ]]
	posted | jq -e '.posted == 0 and .outside > 2 and (.inline_refused | contains("Line could not be resolved"))'
}

@test "a 422 says GitHub's reasons (its errors list), not only 'Validation Failed'" {
	curl -sS -X POST "$GH/_gh/fault" -d '{"method":"POST","path":".*/pulls/7/reviews","status":422,"count":2,"message":"Validation Failed","errors":[{"resource":"PullRequestReview","code":"custom","field":"event","message":"Can not request changes on your own pull request"},{"resource":"PullRequestReview","field":"body","code":"missing_field"}]}' >/dev/null
	run -5 --separate-stderr review --pr 7
	OUT=$output
	[[ $stderr == *"GitHub POST /repos/octo/hello/pulls/7/reviews: HTTP 422: Validation Failed: Can not request changes on your own pull request; PullRequestReview.body missing_field"* ]]
	jq -e -s '[.[] | select(.type == "phase.completed")][0].payload.reason
	  | contains("Can not request changes on your own pull request")' <<<"$OUT"
}

@test "a finding that comes back after its 'Resolved' reply gets a new comment; gone again, that one is resolved" {
	run -1 --separate-stderr review --pr 7
	first=$(gh_state | jq '[.comments[] | select(.body | contains("insecure/c-strcpy"))][0].id')
	fixed_head
	run -0 --separate-stderr review --pr 7
	# the strcpy is back
	printf '#include <string.h>\nvoid put(char *d, const char *s)\n{\n\tstrcpy(d, s);\n}\n' >"$T/src/src/copy.c"
	git -C "$T/src" commit -q -am "strcpy again"
	git -C "$T/src" push -q -f "$T/origin.git" feature:refs/pull/7/head
	mock_reset
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	run -1 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	# a new comment on the line, in the new review (before: "kept" under the old thread's "Resolved")
	run -0 jq -r --argjson first "$first" '[.comments[] | select(.body | contains("insecure/c-strcpy")) | select(.id != $first)
	  | "\(.path):\(.line) \(.in_reply_to_id)"] | join(",")' <<<"$S"
	assert_output "src/copy.c:4 null"
	posted | jq -e '.posted >= 1 and .kept == 0'
	replies_to_first=$(jq --argjson first "$first" '[.comments[] | select(.in_reply_to_id == $first)] | length' <<<"$S")
	assert_equal "$replies_to_first" 1
	# gone again: the new comment is resolved, the old thread is not answered twice
	fixed_head
	run -0 --separate-stderr review --pr 7
	OUT=$output
	S=$(gh_state)
	assert_equal "$(jq --argjson first "$first" '[.comments[] | select(.in_reply_to_id == $first)] | length' <<<"$S")" 1
	second=$(jq --argjson first "$first" '[.comments[] | select(.body | contains("insecure/c-strcpy")) | select(.id != $first and .in_reply_to_id == null)][0].id' <<<"$S")
	run -0 jq -r --argjson c "$second" '[.comments[] | select(.in_reply_to_id == $c) | .body] | join(",")' <<<"$S"
	assert_output --partial "Resolved: Forge no longer finds this."
}
