# forge.mk - forge targets for a project's Makefile or CI job.
#
#   include /usr/local/share/forge/forge.mk     (or a copy in your tree)
#
#   make forge-review            review the changes against $(FORGE_BASE); SARIF for code scanning
#   make forge-test              run the project's tests through forge (flaky reruns, JUnit XML)
#   make forge-check             both, as a CI gate: fails when review or tests say no
#   make forge-run TASK="…"      a whole run; every record in forge-run.jsonl
#
# Exit statuses pass through: 1 = review requested changes or tests failed,
# 4 = a human is needed, 5 = a dependency (model, git) failed.

FORGE ?= forge
FORGE_BASE ?= origin/main
FORGE_REVIEW_FLAGS ?=
FORGE_TEST_FLAGS ?=
FORGE_RUN_FLAGS ?= --auto-approve
FORGE_OUT ?= .

forge-review:
	$(FORGE) review --base $(FORGE_BASE) --no-input --sarif $(FORGE_OUT)/forge-review.sarif $(FORGE_REVIEW_FLAGS) \
		> $(FORGE_OUT)/forge-review.jsonl

forge-test:
	$(FORGE) test --no-input --junit $(FORGE_OUT)/forge-junit.xml $(FORGE_TEST_FLAGS) \
		> $(FORGE_OUT)/forge-test.jsonl

forge-check: forge-review forge-test

forge-run:
	@test -n "$(TASK)" || { echo 'forge-run: set TASK="what to do"' >&2; exit 2; }
	$(FORGE) run --json $(FORGE_RUN_FLAGS) "$(TASK)" > $(FORGE_OUT)/forge-run.jsonl

.PHONY: forge-review forge-test forge-check forge-run
