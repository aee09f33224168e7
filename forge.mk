# forge.mk - forge targets for a project's Makefile or CI job.
#
#   include /usr/local/share/forge/forge.mk     (or a copy in your tree)
#
#   make forge-review            review what the branch changed since it left $(FORGE_BASE)
#                                (from their merge base, as a pull request); SARIF for code scanning
#   make forge-test              run the project's tests through forge (flaky reruns, JUnit XML)
#   make forge-check             both (always both), as a CI gate: fails when either says no
#   make forge-run TASK="…"      a whole run; every record in forge-run.jsonl
#
# make itself exits 2 whenever a target fails, so forge's exit status does not
# pass through make's.  Each target records it instead, as a NAME=STATUS line
# (review=, test=, run=) in $(FORGE_STATUS), and says on stderr what a non-zero
# one means: 1 = review requested changes / tests failed, 2 = usage error or
# bad input, 3 = a circuit breaker tripped, 4 = a human is needed, 5 = a
# dependency (model, git, database) failed, 130 = interrupted.

FORGE ?= forge
FORGE_BASE ?= origin/main
FORGE_REVIEW_FLAGS ?=
FORGE_TEST_FLAGS ?=
FORGE_RUN_FLAGS ?= --auto-approve
FORGE_OUT ?= .
FORGE_STATUS ?= $(FORGE_OUT)/forge-status

# $(call forge_q,TEXT): TEXT as one shell word, quoted ('…', each ' as '\''):
# a path with a space (a CI workspace named after its job) or an apostrophe
# is one argument, and a redirection to it writes there and nowhere else.
forge_q = '$(subst ','\'',$(1))'

# Shell code defining forge_step NAME COMMAND...: run COMMAND, replace the NAME=
# line of $(FORGE_STATUS) with NAME=STATUS, and when STATUS is not 0 say on
# stderr "forge-NAME: exit STATUS (meaning)".  Returns STATUS.  It makes
# $(FORGE_OUT) first (a fresh checkout lacks it): the commands' output is
# redirected there before forge_step runs.  The file is read and rewritten
# under a lock (flock(1) on its directory, which leaves no file behind):
# targets of `make -j` that finish together each rewrite the whole file, and
# without it the last to move its copy in dropped the other's line.  Where
# flock is missing the rewrite goes on unlocked, as before.
FORGE_STEP = forge_step() { \
	n=$$1; shift; s=0; "$$@" || s=$$?; \
	f=$(call forge_q,$(FORGE_STATUS)); \
	if command -v flock >/dev/null 2>&1; then \
		{ flock 9 || :; forge_status_put "$$n" "$$s" "$$f"; } 9<"$$(dirname -- "$$f")" || \
			forge_status_put "$$n" "$$s" "$$f"; \
	else forge_status_put "$$n" "$$s" "$$f"; fi; \
	case $$s in \
	0) m=passed ;; \
	1) case $$n in review) m='changes requested' ;; test) m='tests failed' ;; \
	   *) m='rejected: changes requested, tests failed or rolled back' ;; esac ;; \
	2) m='usage error or bad input' ;; \
	3) m='a circuit breaker tripped' ;; \
	4) m='a human is needed' ;; \
	5) m='a dependency (model, git, database) failed' ;; \
	130) m=interrupted ;; \
	*) m='unexpected status' ;; \
	esac; \
	[ $$s -eq 0 ] || echo "forge-$$n: exit $$s ($$m); $$n=$$s in $$f" >&2; \
	return $$s; \
}; \
forge_status_put() { \
	{ grep -v "^$$1=" "$$3" 2>/dev/null; echo "$$1=$$2"; } >"$$3.$$1.tmp" && mv -f "$$3.$$1.tmp" "$$3"; \
}; \
forge_out=$(call forge_q,$(FORGE_OUT)); \
mkdir -p -- "$$forge_out" "$$(dirname -- $(call forge_q,$(FORGE_STATUS)))" || { \
	echo "forge.mk: cannot make FORGE_OUT '$$forge_out'" >&2; exit 2; }

FORGE_REVIEW_CMD = $(FORGE) review --base $(call forge_q,$(FORGE_BASE)) --no-input \
	--sarif $(call forge_q,$(FORGE_OUT)/forge-review.sarif) \
	$(FORGE_REVIEW_FLAGS) > $(call forge_q,$(FORGE_OUT)/forge-review.jsonl)
FORGE_TEST_CMD = $(FORGE) test --no-input --junit $(call forge_q,$(FORGE_OUT)/forge-junit.xml) \
	$(FORGE_TEST_FLAGS) </dev/null > $(call forge_q,$(FORGE_OUT)/forge-test.jsonl)

forge-review:
	@$(FORGE_STEP); forge_step review $(FORGE_REVIEW_CMD)

forge-test:
	@$(FORGE_STEP); forge_step test $(FORGE_TEST_CMD)

forge-check:
	@$(FORGE_STEP); r=0; t=0; \
	forge_step review $(FORGE_REVIEW_CMD) || r=$$?; \
	forge_step test $(FORGE_TEST_CMD) || t=$$?; \
	[ $$r -eq 0 ] && [ $$t -eq 0 ] && exit 0; \
	echo "forge-check: failed: review=$$r test=$$t" >&2; \
	[ $$r -ne 0 ] && exit $$r; exit $$t

# The task reaches forge verbatim, through the environment: an issue title
# pasted into the command line would run its `backquotes` and lose its
# quotes.  Given on the command line or in the environment it is taken as
# written (make does not expand a $(...) in it); set in a makefile, expanded.
forge-run: export FORGE_MK_TASK = $(if $(filter command environment,$(origin TASK)),$(value TASK),$(TASK))
forge-run:
	@test -n "$$FORGE_MK_TASK" || { echo 'forge-run: set TASK="what to do"' >&2; exit 2; }
	@$(FORGE_STEP); forge_step run $(FORGE) run --json $(FORGE_RUN_FLAGS) "$$FORGE_MK_TASK" > $(call forge_q,$(FORGE_OUT)/forge-run.jsonl)

.PHONY: forge-review forge-test forge-check forge-run
