# Forge - one non-recursive Makefile.
#
#   make              build $(O)/libforge-common.a (lib/*/*.c, app/*.c) and every program
#                     (cmd/*.c, filters/*.c) into bin/
#   make check        unit tests and bats suites, then again under ASan+UBSan, then the
#                     fuzz targets over their corpora (make fuzz-check; make fuzz: 60 s each)
#   make demo         a whole forge run, offline, on the sample project
#   make bench        benchmarks (medians)
#   make install      PREFIX=/usr/local DESTDIR=
#   make clean
#
# Objects go to $(O) (default build/); `make O=build-asan SANITIZE=address,undefined`
# builds a second tree beside it, with its programs in $(O)/bin.

O        ?= build
ifeq ($(O),build)
BINDIR   ?= bin
else
BINDIR   ?= $(O)/bin
endif
PREFIX   ?= /usr/local
DESTDIR  ?=
DATADIR  ?= $(PREFIX)/share/forge

CC       ?= cc
CSTD     := -std=c17
WARN     := -Wall -Wextra -Wformat=2 -Wformat-nonliteral -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-missing-field-initializers -Werror=implicit-function-declaration
ifdef CI
WARN     += -Werror
endif
CFLAGS   ?= -O2 -g
# No install path is compiled in (forge finds its programs beside itself; schemas,
# migrations and prompts are embedded), so `make install PREFIX=...` rebuilds nothing.
CPPFLAGS += -D_GNU_SOURCE -Ilib -I. -I$(O)/gen
LDLIBS   += -lsqlite3 -ljq -lpcre2-8 -lyaml -lexpat -lm -lpthread -ldl
# libgit2 and libcurl are not linked: they (and the ~40 libraries they bring)
# are loaded on first use (lib/core/lazylib.h; lib/git/git2_lazy.c, made by
# scripts/gen-lazy-git2, and lib/net/curl_lazy.c), by the soname of the
# library the headers belong to.  libgit2's call that parses the CA bundle
# at init lands in lib/git/git.c, which defers it (forge_git_init).
soname    = $(shell readelf -d "$$($(CC) -print-file-name=$(1))" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
GIT2_SONAME := $(call soname,libgit2.so)
CURL_SONAME := $(call soname,libcurl.so)
CPPFLAGS += $(if $(GIT2_SONAME),-DFORGE_GIT2_SONAME='"$(GIT2_SONAME)"') \
            $(if $(CURL_SONAME),-DFORGE_CURL_SONAME='"$(CURL_SONAME)"')
LDFLAGS  += -Wl,--export-dynamic-symbol=mbedtls_x509_crt_parse_file

ifdef SANITIZE
CFLAGS   := -O1 -g -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

LIB_SRC     := $(sort $(wildcard lib/*/*.c) $(wildcard app/*.c))
PROG_SRC    := $(sort $(wildcard cmd/*.c) $(wildcard filters/*.c))
UNIT_SRC    := $(sort $(wildcard tests/unit/test_*.c))
HELPER_SRC  := $(sort $(wildcard tests/helpers/*.c))
RESOURCES   := $(sort $(wildcard schemas/*.json schemas/*/*.json schemas/sql/*.sql schemas/prompts/*.md))

GEN_RES     := $(O)/gen/resources.c
LIB_OBJ     := $(LIB_SRC:%.c=$(O)/obj/%.o) $(O)/obj/gen/resources.o
LIB         := $(O)/libforge-common.a
PROGS       := $(foreach s,$(PROG_SRC),$(BINDIR)/$(basename $(notdir $(s))))
UNITS       := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
HELPERS     := $(HELPER_SRC:tests/helpers/%.c=$(O)/tests/%)
SRC_OBJ     := $(LIB_SRC:%.c=$(O)/obj/%.o) $(PROG_SRC:%.c=$(O)/obj/%.o) \
               $(UNIT_SRC:%.c=$(O)/obj/%.o) $(HELPER_SRC:%.c=$(O)/obj/%.o)
DEPS_STAMP  := $(O)/.deps-ok

ifeq ($(V),1)
Q :=
else
Q := @
endif

all: $(PROGS) $(LIB)

# Install missing build dependencies once per build tree (apt-get; see the script).
$(DEPS_STAMP): scripts/install-deps
	@mkdir -p $(@D)
	$(Q)scripts/install-deps
	@touch $@

$(SRC_OBJ): $(O)/obj/%.o: %.c $(O)/.cflags | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CSTD) $(CPPFLAGS) $(WARN) $(CFLAGS) -MMD -MP -c -o $@ $<

$(GEN_RES): $(RESOURCES) scripts/embed.sh
	@mkdir -p $(@D)
	@echo "  EMBED   $@"
	$(Q)scripts/embed.sh $@ $(RESOURCES)

$(O)/obj/gen/resources.o: $(GEN_RES) $(O)/.cflags | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CSTD) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

define prog_rule
$(BINDIR)/$(basename $(notdir $(1))): $(O)/obj/$(basename $(1)).o $(LIB)
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	$(Q)$(CC) $(LDFLAGS) -o $$@ $$^ $(LDLIBS)
endef
$(foreach s,$(PROG_SRC),$(eval $(call prog_rule,$(s))))

$(UNITS): $(O)/tests/%: $(O)/obj/tests/unit/%.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(HELPERS): $(O)/tests/%: $(O)/obj/tests/helpers/%.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

FLAGS_NOW := $(CC) $(CSTD) $(CPPFLAGS) $(WARN) $(CFLAGS) $(LDFLAGS) $(LDLIBS)
$(O)/.cflags: FORCE
	@mkdir -p $(@D)
	@echo '$(FLAGS_NOW)' | cmp -s - $@ || echo '$(FLAGS_NOW)' > $@

# The suite against one build tree: unit tests, then the bats suites.
check-suite: $(PROGS) $(UNITS) $(HELPERS)
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" FORGE_TESTBIN="$(CURDIR)/$(O)/tests" \
	    FORGE_SUITE="$(SUITE_NAME)" scripts/check

check: SUITE_NAME = default
check: lint check-suite
	$(Q)$(MAKE) --no-print-directory O=build-asan SANITIZE=address,undefined SUITE_NAME=asan+ubsan check-suite
	$(Q)$(MAKE) --no-print-directory fuzz-check

demo: all
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" scripts/demo

bench: all $(HELPERS)
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" FORGE_TESTBIN="$(CURDIR)/$(O)/tests" scripts/bench

lint:
	$(Q)! grep -nE '\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok|atoi|atol|gets)\s*\(' $(wildcard lib/*/*.[ch] app/*.[ch] cmd/*.c filters/*.c tests/unit/*.c tests/helpers/*.c tests/fuzz/*.c)
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
	    -D_GNU_SOURCE -Ilib -I. lib app cmd filters
	$(Q)scripts/check-layers

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(DATADIR)/schemas/sql
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/
	for f in $(RESOURCES); do \
	    install -D -m 644 $$f $(DESTDIR)$(DATADIR)/$$f; done
	install -m 644 forge.mk $(DESTDIR)$(DATADIR)/forge.mk

clean:
	rm -rf build build-asan build-clang build-fuzz $(PROGS)

# Fuzzing (libFuzzer, clang): one target per parser in tests/fuzz/fuzz_*.c,
# seeded from tests/fuzz/corpus/TARGET/ (the tests' fixtures, and every
# input that once crashed, as a regression).  The library and the targets
# are built with clang in their own tree, build-fuzz/.
#   make fuzz                 each target for FUZZ_SECONDS (60) s; new inputs go
#                             to build-fuzz/corpus/TARGET, crashes to build-fuzz/crashes/
#   make fuzz-check           each target over its corpus plus FUZZ_RUNS (2000)
#                             mutations: bounded and not timing dependent (make check)
FUZZ_O       ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= 2000
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES   := $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZERS      := $(FUZZ_NAMES:%=$(O)/fuzz/%)
FUZZ_MAKE    := $(MAKE) --no-print-directory O=$(FUZZ_O) CC=$(FUZZ_CC) \
                SANITIZE=fuzzer-no-link,address,undefined fuzz-targets

$(FUZZERS): $(O)/fuzz/%: tests/fuzz/%.c $(LIB) $(O)/.cflags
	@mkdir -p $(@D)
	@echo "  FUZZ    $@"
	$(Q)$(CC) $(CSTD) $(CPPFLAGS) $(WARN) $(CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(LIB) $(LDLIBS)

fuzz-targets: $(FUZZERS)

fuzz:
	$(Q)$(FUZZ_MAKE)
	$(Q)set -e; for t in $(FUZZ_NAMES); do \
	    mkdir -p $(FUZZ_O)/corpus/$$t $(FUZZ_O)/crashes tests/fuzz/corpus/$$t; \
	    echo "  FUZZ    $$t ($(FUZZ_SECONDS) s)"; \
	    $(FUZZ_O)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_O)/crashes/$$t- $(FUZZ_O)/corpus/$$t tests/fuzz/corpus/$$t \
	        2>$(FUZZ_O)/$$t.log || { tail -40 $(FUZZ_O)/$$t.log; exit 1; }; \
	    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' $(FUZZ_O)/$$t.log; \
	done

fuzz-check:
	$(Q)$(FUZZ_MAKE)
	$(Q)set -e; for t in $(FUZZ_NAMES); do \
	    rm -rf $(FUZZ_O)/check/$$t; mkdir -p $(FUZZ_O)/crashes $(FUZZ_O)/check/$$t; \
	    $(FUZZ_O)/fuzz/$$t -runs=$(FUZZ_RUNS) -seed=1 -artifact_prefix=$(FUZZ_O)/crashes/$$t- \
	        $(FUZZ_O)/check/$$t tests/fuzz/corpus/$$t 2>$(FUZZ_O)/$$t.check.log || { tail -40 $(FUZZ_O)/$$t.check.log; exit 1; }; \
	    echo "  FUZZ    $$t: $$(ls tests/fuzz/corpus/$$t | wc -l) corpus inputs + $(FUZZ_RUNS) runs, no crash"; \
	done

-include $(SRC_OBJ:.o=.d)
.PHONY: all check check-suite demo bench lint install clean FORCE fuzz fuzz-check fuzz-targets
.DELETE_ON_ERROR:
