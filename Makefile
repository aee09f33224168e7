# Forge - one non-recursive Makefile.
#
#   make              build $(O)/libforge-common.a (lib/*/*.c, app/*.c) and every program
#                     (cmd/*.c, filters/*.c) into bin/
#   make check        lint, clang's warnings, unit tests and bats suites, then again under
#                     ASan+UBSan, and the fuzz corpora replayed under ASan+UBSan (make
#                     fuzz-check), and lease.bats on PostgreSQL; make check-pg: the
#                     end-to-end files (PG_FILES) on PostgreSQL;
#                     FORGE_JOBS jobs at once.  make fuzz: libFuzzer, 60 s each
#   make demo         a whole forge run, offline, on the sample project
#   make bench        benchmarks (medians)
#   make install      PREFIX=/usr/local DESTDIR=: programs, schemas, man pages, completions
#   make uninstall    removes exactly what make install put (same PREFIX and DESTDIR)
#   make man          the man pages into $(O)/man (scripts/gen-man, from each program's --help)
#   make mcp-ref      the MCP reference server for tests/mcp.bats (npm; scripts/mcp-ref)
#   make github-openapi  GitHub's OpenAPI description for tests/pr-review.bats (npm)
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
# Missing build dependencies are installed (scripts/install-deps) before the
# flags below are decided: they probe what is installed (static archives,
# sonames), and a first `make` on a fresh machine that decided them without
# libgit2-dev had every object of build/ rebuilt by the next make (new flags).
# The stamp is an included makefile, so make makes it first and starts again.
DEPS_STAMP ?= $(O)/.deps-ok
ifeq ($(filter clean,$(MAKECMDGOALS)),)
-include $(DEPS_STAMP)
endif
PREFIX   ?= /usr/local
DESTDIR  ?=
DATADIR  ?= $(PREFIX)/share/forge
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions

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
# SQLite, libyaml and expat are linked statically when their archives are
# installed (STATIC_LIBS= links them shared): three fewer libraries for the
# dynamic loader at every program's start (--version: 2.3 -> 1.5 ms CPU,
# 3.2 -> 2.8 MiB).
STATIC_LIBS ?= $(foreach l,sqlite3 yaml expat,$(if $(wildcard $(shell $(CC) -print-file-name=lib$(l).a)),$(l)))
BSTATIC  := -Wl,-Bstatic
BDYNAMIC := -Wl,-Bdynamic
LDLIBS   += $(if $(STATIC_LIBS),$(BSTATIC) $(STATIC_LIBS:%=-l%) $(BDYNAMIC)) \
            $(filter-out $(STATIC_LIBS:%=-l%),-lsqlite3 -lyaml -lexpat) -lpcre2-8 -lm -lpthread -ldl
# libgit2 and libcurl are not linked: they (and the ~40 libraries they bring)
# are loaded on first use (lib/core/lazylib.h; lib/git/git2_lazy.c, made by
# scripts/gen-lazy-git2, and lib/net/curl_lazy.c), by the soname of the
# library the headers belong to.  libgit2's call that parses the CA bundle
# at init lands in lib/git/git.c, which defers it (forge_git_init).
soname    = $(shell readelf -d "$$($(CC) -print-file-name=$(1))" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
GIT2_SONAME := $(call soname,libgit2.so)
CURL_SONAME := $(call soname,libcurl.so)
# libjq (and libonig) too (lib/core/jq_lazy.c, made by scripts/gen-lazy-jq;
# there is no libjq.a to link in): their relocations were ~80% of a
# program's --version.
JQ_SONAME   := $(call soname,libjq.so)
CPPFLAGS += $(if $(GIT2_SONAME),-DFORGE_GIT2_SONAME='"$(GIT2_SONAME)"') \
            $(if $(JQ_SONAME),-DFORGE_JQ_SONAME='"$(JQ_SONAME)"') \
            $(if $(CURL_SONAME),-DFORGE_CURL_SONAME='"$(CURL_SONAME)"')
# libpq (--db postgres://...) is not linked either: lib/store/pq_lazy.c
# loads it on the first connection (with it loaded at start, ~24
# libraries, forge-events --version took 42 ms CPU instead of 12.7).
PQ_SONAME := $(call soname,libpq.so)
CPPFLAGS += -I$(or $(shell pg_config --includedir 2>/dev/null),/usr/include/postgresql) \
            $(if $(PQ_SONAME),-DFORGE_PQ_SONAME='"$(PQ_SONAME)"')
# Where the static archives are installed (Debian's -dev packages ship them),
# libgit2 and the libraries it needs are linked in instead (GIT2_STATIC=1, the
# default then; GIT2_STATIC= keeps the lazy dlopen): a program that touches a
# repository then pays no dlopen of ~17 libraries and their ~4000 symbol
# relocations (~6 ms CPU and ~3 MiB of RSS per forge-implement session),
# and one that does not touch it pays nothing -- only the archive members a
# program references are linked, and their pages are read on first use.
# libgit2's calls to libssh2 and its SPNEGO calls (gss_*) stay lazy
# (lib/git/ssh2_lazy.c, made by scripts/gen-lazy-ssh2, and lib/git/gss_lazy.c):
# libssh2 with libcrypto, and Kerberos, are loaded only by a push over ssh or
# to a server that negotiates.  The CA bundle is deferred by
# --wrap instead of by interposition (lib/git/git.c), and libgit2 1.5.1's
# git_regexp_match(), which leaks on every miss, is replaced the same way.
GIT2_STATIC_LIBS := git2 mbedtls mbedx509 mbedcrypto http_parser pcre2-8 z
ifeq ($(origin GIT2_STATIC),undefined)
GIT2_STATIC := $(if $(strip $(foreach l,$(GIT2_STATIC_LIBS),$(if $(wildcard $(shell $(CC) -print-file-name=lib$(l).a)),,x))),,1)
endif
ifeq ($(GIT2_STATIC),1)
CPPFLAGS += -DFORGE_GIT2_STATIC
LDFLAGS  += -Wl,--wrap=mbedtls_x509_crt_parse_file \
            -Wl,--wrap=git_mbedtls_stream_global_init -Wl,--wrap=git_mbedtls_stream_new \
            -Wl,--wrap=git_mbedtls_stream_wrap -Wl,--wrap=git_mbedtls__set_cert_location \
            -Wl,--wrap=git_regexp_match
LDLIBS   := -Wl,-Bstatic $(GIT2_STATIC_LIBS:%=-l%) -Wl,-Bdynamic $(LDLIBS)
else
LDFLAGS  += -Wl,--export-dynamic-symbol=mbedtls_x509_crt_parse_file
endif
# libcurl likewise (CURL_STATIC=1, the default where the archives of libcurl,
# nghttp2, zstd, brotli and zlib and the -dev packages of the libraries
# below are installed; CURL_STATIC= keeps the dlopen of lib/net/curl_lazy.c):
# the first HTTP request then loads none of ~30 libraries.  What libcurl
# needs only for some requests stays shared and is loaded by its first call
# (lib/net/curl_libs_lazy.c, made by scripts/gen-lazy-curl): OpenSSL by the
# first https:// request (linked in, its ~19000 relocations would cost every
# program's --version), libidn2, libpsl, librtmp and OpenLDAP by what Forge
# never asks (IDN host names, cookies, rtmp://, ldap://); libssh2 and
# Kerberos share libgit2's lib/git/ssh2_lazy.c and gss_lazy.c.
# curl_global_init() initialises OpenSSL even for http://: --wrap=Curl_ssl_init
# lands that call in lib/net/http.c, which makes it before the first request
# that may use TLS.
CURL_STATIC_LIBS := curl nghttp2 zstd brotlidec brotlicommon z
CURL_LAZY_DEV    := ssl idn2 psl rtmp ldap lber ssh2
ifeq ($(origin CURL_STATIC),undefined)
CURL_STATIC := $(if $(shell for l in $(CURL_STATIC_LIBS) $(CURL_LAZY_DEV); do \
	[ -e "$$($(CC) -print-file-name=lib$$l.a)" ] || echo $$l; done),,1)
endif
ifeq ($(CURL_STATIC),1)
CPPFLAGS += -DFORGE_CURL_STATIC
LDFLAGS  += -Wl,--wrap=Curl_ssl_init
LDLIBS   := -Wl,-Bstatic $(CURL_STATIC_LIBS:%=-l%) -Wl,-Bdynamic $(LDLIBS)
endif

ifdef SANITIZE
CFLAGS   := -O1 -g1 -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=$(SANITIZE)
else
# Hardening, as Debian builds its packages: glibc's checked copies of the
# string, memory and I/O functions (a length the compiler knows is held to
# the object; the sanitizers check those themselves), stack canaries, and
# the relocations made read-only before main.  Forge runs what a model
# wrote beside its own memory.  (FORTIFY only when optimising, which it
# needs: older glibc warns without, and CI's -Werror would stop at
# `make CFLAGS='-O0 -g'`.)
CPPFLAGS += $(if $(filter -O -O1 -O2 -O3 -Os -Og -Oz -Ofast,$(CFLAGS)),-D_FORTIFY_SOURCE=2)
CFLAGS   += -fstack-protector-strong
endif
LDFLAGS  += -Wl,-z,relro,-z,now
# realpath() resolved by the kernel in three system calls (open O_PATH,
# readlink of /proc/self/fd/N, close) instead of glibc's readlink() of every
# component: lib/core/realpath.c, for Forge's calls, libgit2's (the static
# archive's references are wrapped too) and _FORTIFY_SOURCE's
# __realpath_chk().  ~430 of a session's ~3800 system calls in forge-implement.
LDFLAGS  += -Wl,--wrap=realpath -Wl,--wrap=__realpath_chk
# Link with gold when the compiler can: the ~60 programs and tests of a tree
# link in a third of ld.bfd's CPU time (a fifth with ASan).  FUSE_LD= : ld.bfd.
ifeq ($(origin FUSE_LD),undefined)
FUSE_LD  := $(shell $(CC) -fuse-ld=gold -Wl,--version 2>/dev/null | grep -q '^GNU gold' && echo -fuse-ld=gold)
endif
LDFLAGS  += $(FUSE_LD)
# Each function and object in a section of its own, and the sections no
# program reaches left out of it (GC_SECTIONS= keeps them): a program links
# the whole libforge-common and the static archives, and what it never
# calls (forge-mcp: libgit2's and SQLite's tables behind code only other
# programs run) was loaded and relocated at every start.  --help: page
# faults -1..-18 a program (forge-skills 95 -> 77, forge-mcp 98 -> 87, at
# ~50-100 us each on this paravirtualised VM), instructions -1..-25%, the
# relative relocations of forge-mcp 5083 -> 3562 (pages written 23 -> 18),
# forge-mcp 7.9 -> 6.2 MB.  The hardening stays as it was (PIE, RELRO).
GC_SECTIONS ?= 1
ifneq ($(GC_SECTIONS),)
CFLAGS   += -ffunction-sections -fdata-sections
LDFLAGS  += -Wl,--gc-sections
endif
# Only the shared libraries a program uses are loaded at its start (gcc's
# default on Debian, said here for compilers that do not default to it).
ifndef SANITIZE
LDFLAGS  += -Wl,--as-needed
endif

LIB_SRC     := $(sort $(wildcard lib/*/*.c) $(wildcard app/*.c))
ifeq ($(GIT2_STATIC),1)
LIB_SRC     := $(filter-out lib/git/git2_lazy.c,$(LIB_SRC))
else ifneq ($(CURL_STATIC),1)
LIB_SRC     := $(filter-out lib/git/gss_lazy.c lib/git/ssh2_lazy.c,$(LIB_SRC))
endif
ifeq ($(CURL_STATIC),1)
LIB_SRC     := $(filter-out lib/net/curl_lazy.c,$(LIB_SRC))
else
LIB_SRC     := $(filter-out lib/net/curl_libs_lazy.c,$(LIB_SRC))
endif
PROG_SRC    := $(sort $(wildcard cmd/*.c) $(wildcard filters/*.c))
UNIT_SRC    := $(sort $(wildcard tests/unit/test_*.c))
HELPER_SRC  := $(sort $(wildcard tests/helpers/*.c))
FUZZ_SRC    := $(sort $(wildcard tests/fuzz/fuzz_*.c))
INIT_SRC    := cmd/libexec/forge-sandbox-init.c
RESOURCES   := $(sort $(wildcard schemas/*.json schemas/*/*.json schemas/sql/*.sql schemas/pg/*.sql schemas/prompts/*.md pipelines/*.json))
SHARE       := share/forge/concepts.tsv

GEN_RES     := $(O)/gen/resources.c
LIB_OBJ     := $(LIB_SRC:%.c=$(O)/obj/%.o) $(O)/obj/gen/resources.o
LIB         := $(O)/libforge-common.a
PROGS       := $(foreach s,$(PROG_SRC),$(BINDIR)/$(basename $(notdir $(s))))
UNITS       := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
HELPERS     := $(HELPER_SRC:tests/helpers/%.c=$(O)/tests/%)
# PID 1 of a sandboxed command (lib/os/proc.c's fast path), where a program
# looks for it: ../libexec/forge/ from its own directory, as installed
# ($(PREFIX)/bin, $(PREFIX)/libexec/forge).  The test programs of $(O)/tests
# find it through the link in $(O)/libexec/forge when BINDIR is not $(O)/bin.
LIBEXEC_DIR := $(patsubst ./%,%,$(dir $(BINDIR))libexec/forge)
SANDBOX_INIT := $(LIBEXEC_DIR)/forge-sandbox-init
SANDBOX_INIT_LINK := $(filter-out $(SANDBOX_INIT),$(O)/libexec/forge/forge-sandbox-init)
FUZZ_NAMES  := $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(O)/fuzz-replay/%)
SRC_OBJ     := $(LIB_SRC:%.c=$(O)/obj/%.o) $(PROG_SRC:%.c=$(O)/obj/%.o) \
               $(UNIT_SRC:%.c=$(O)/obj/%.o) $(HELPER_SRC:%.c=$(O)/obj/%.o) \
               $(FUZZ_SRC:%.c=$(O)/obj/%.o) $(O)/obj/tests/fuzz/replay.o $(INIT_SRC:%.c=$(O)/obj/%.o)

ifeq ($(V),1)
Q :=
else
Q := @
endif

all: $(PROGS) $(LIB) $(SANDBOX_INIT) $(SANDBOX_INIT_LINK)

# Install missing build dependencies once per build tree (apt-get; see the script).
$(DEPS_STAMP): scripts/install-deps
	@mkdir -p $(@D)
	$(Q)scripts/install-deps
	@touch $@

$(SRC_OBJ): $(O)/obj/%.o: %.c $(O)/.cflags | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CSTD) $(CPPFLAGS) $(WARN) $(CFLAGS) -MMD -MP -c -o $@ $<

$(GEN_RES): $(RESOURCES) $(SHARE) scripts/embed.sh $(O)/.resources
	@mkdir -p $(@D)
	@echo "  EMBED   $@"
	$(Q)scripts/embed.sh $@ $(RESOURCES) $(SHARE)

$(O)/obj/gen/resources.o: $(GEN_RES) $(O)/.cflags | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CSTD) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# A program's own libraries, linked into it alone: LDLIBS_forge-NAME.
# forge tui's curses (the wide-character one: task texts are UTF-8), linked
# static where its archives are installed (Debian's libncurses-dev): then
# `forge-tui --version` loads no library but libc, as every other program
# (713K -> 298K instructions; the dynamic ncursesw and tinfo were most of it).
comma        := ,
NCURSES_LIBS := $(or $(shell pkg-config --libs ncursesw 2>/dev/null),-lncursesw)
NCURSES_STATIC := $(if $(wildcard $(shell $(CC) -print-file-name=libncursesw.a)),1)
LDLIBS_forge-tui := $(if $(NCURSES_STATIC),-Wl$(comma)-Bstatic $(NCURSES_LIBS) -Wl$(comma)-Bdynamic,$(NCURSES_LIBS))

define prog_rule
$(BINDIR)/$(basename $(notdir $(1))): $(O)/obj/$(basename $(1)).o $(LIB)
	@mkdir -p $$(@D)
	@echo "  LD      $$@"
	$(Q)$(CC) $(LDFLAGS) -o $$@ $$^ $(LDLIBS_$(basename $(notdir $(1)))) $(LDLIBS)
endef
$(foreach s,$(filter-out cmd/forge.c,$(PROG_SRC)),$(eval $(call prog_rule,$(s))))

# forge, the dispatcher, needs only libc (app/cli_help.c, lib/core/buf.c,
# error.c): where libc.a is installed it is linked static-pie (with ld.bfd:
# gold cannot), so `forge CMD` pays no dynamic loader before the exec of
# forge-CMD (forge --version: 137K -> 61K instructions, 53 -> 30 page
# faults, less than /bin/true).  Not under a sanitizer (no static runtime);
# then dynamic, still without $(LDLIBS): libjq and the rest are not loaded.
DISPATCH_STATIC := $(if $(SANITIZE),,$(if $(wildcard $(shell $(CC) -print-file-name=libc.a)),1))
$(BINDIR)/forge: $(O)/obj/cmd/forge.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(if $(DISPATCH_STATIC),$(CC) -static-pie -o $@ $^,$(CC) $(LDFLAGS) -o $@ $^)

# Static where libc.a is installed, as forge: nothing for the dynamic
# loader to do at its exec, and nothing it needs to find inside the view of
# the files the command has (it starts after the pivot into it).
$(SANDBOX_INIT): $(O)/obj/cmd/libexec/forge-sandbox-init.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(if $(DISPATCH_STATIC),$(CC) -static-pie -Wl$(comma)--gc-sections -Wl$(comma)-z$(comma)relro$(comma)-z$(comma)now -o $@ $^,$(CC) $(LDFLAGS) -o $@ $^)

$(SANDBOX_INIT_LINK): $(SANDBOX_INIT)
	@mkdir -p $(@D)
	$(Q)ln -sf "$(CURDIR)/$(SANDBOX_INIT)" $@

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

# The names embedded: a file removed (a migration taken out) changes no
# remaining file's time, and would stay in resources.c without this.
$(O)/.resources: FORCE
	@mkdir -p $(@D)
	@echo '$(RESOURCES) $(SHARE)' | cmp -s - $@ || echo '$(RESOURCES) $(SHARE)' > $@

# The suite against one build tree: unit tests, then the bats suites.
check-suite: $(PROGS) $(UNITS) $(HELPERS) $(SANDBOX_INIT) $(SANDBOX_INIT_LINK)
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" FORGE_TESTBIN="$(CURDIR)/$(O)/tests" \
	    FORGE_SUITE="$(SUITE_NAME)" scripts/check

# make check is one make run (FORGE_JOBS jobs, default: the number of cores,
# unless make was given -j): lint and clang's warnings while build/ builds,
# the suite against build/, the ASan+UBSan tree build-asan/ built while that
# suite runs (at a lower priority: it takes the cores the suite leaves idle),
# its suite after the default one, and the fuzz corpora replayed against it.
# A sub-make builds build-asan/ once (asan-build); the steps that use it wait.
ASAN_O    := build-asan
# (make passes its jobserver only to recipe lines that name $(MAKE) itself.)
# (and build/'s install-deps stamp: the dependencies are checked once.)
ASAN_ARGS := --no-print-directory O=$(ASAN_O) SANITIZE=address,undefined DEPS_STAMP=$(DEPS_STAMP)
NPROC      = $(shell nproc 2>/dev/null || echo 1)

check:
	$(Q)$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(or $(FORGE_JOBS),$(NPROC))) check-all

check-all: check-default check-pg-suite lint clang-check check-asan-suite check-fuzz

check-default: SUITE_NAME = default
check-default: check-suite

# The end-to-end files that run on both backends, again with FORGE_DB a new
# database of a throwaway PostgreSQL cluster for each test (make check-pg;
# skipped, saying why, when PostgreSQL is not installed).  make check runs
# the cheapest of them so (lease: ~29 CPU-s with the server's; all three
# ~140 CPU-s, measured with PG_CPU_LOG, README "Both backends").
PG_FILES       := supervisor crash lease
PG_CHECK_FILES := lease
check-pg: $(PROGS) $(UNITS) $(HELPERS) $(SANDBOX_INIT) $(SANDBOX_INIT_LINK)
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" FORGE_TESTBIN="$(CURDIR)/$(O)/tests" FORGE_SUITE=postgres \
	    FORGE_TEST_BACKEND=postgres FORGE_CHECK_FILES="$(PG_FILES)" scripts/check

# (in make check: after the default suite, beside the ASan+UBSan one)
check-pg-suite: | check-default
	$(Q)$(MAKE) --no-print-directory PG_FILES="$(PG_CHECK_FILES)" check-pg

asan-build: | $(DEPS_STAMP)
	$(Q)nice -n 10 $(MAKE) $(ASAN_ARGS) check-build

# Everything a check of this tree runs.
check-build: $(PROGS) $(UNITS) $(HELPERS) $(FUZZ_REPLAY) $(SANDBOX_INIT) $(SANDBOX_INIT_LINK)

check-asan-suite: asan-build | check-default
	$(Q)$(MAKE) $(ASAN_ARGS) SUITE_NAME=asan+ubsan check-suite

check-fuzz: asan-build
	$(Q)$(MAKE) $(ASAN_ARGS) fuzz-replay

# clang's warnings without a clang build: every source through clang -fsyntax-only
# with the same warnings (and -Werror under CI).  Skipped when there is no clang.
CLANG     ?= clang
CLANG_OK  := $(SRC_OBJ:$(O)/obj/%.o=$(O)/clang/%.ok)

$(CLANG_OK): $(O)/clang/%.ok: %.c $(O)/.cflags | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@echo "  CLANG   $<"
	$(Q)$(CLANG) $(CSTD) $(CPPFLAGS) $(WARN) -fsyntax-only -MMD -MP -MF $(@:.ok=.d) -MT $@ $<
	@touch $@

clang-check: | $(DEPS_STAMP)
	$(Q)if command -v $(CLANG) >/dev/null 2>&1; then $(MAKE) --no-print-directory clang-syntax; \
	else echo "  ($(CLANG) is not installed: clang's warnings not checked; scripts/install-deps)"; fi

clang-syntax: $(CLANG_OK)

demo: all
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" scripts/demo

# The CI pipeline (.github/workflows/forge-pipeline.yml) simulated here: a
# fresh clone per job, only the artifacts and the database (DB=PATH-or-URI)
# shared; CI_SIM_WORK=DIR keeps the results there.
ci-sim: all
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" $(if $(DB),DB="$(DB)") scripts/ci-sim $(if $(CI_SIM_WORK),--work "$(CI_SIM_WORK)")

bench: all $(HELPERS)
	$(Q)FORGE_BINDIR="$(CURDIR)/$(BINDIR)" FORGE_TESTBIN="$(CURDIR)/$(O)/tests" scripts/bench

lint: | $(DEPS_STAMP)
	$(Q)! grep -nE '\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok|atoi|atol|gets)\s*\(' $(wildcard lib/*/*.[ch] app/*.[ch] cmd/*.c filters/*.c tests/unit/*.c tests/helpers/*.c tests/fuzz/*.c)
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
	    -D_GNU_SOURCE -Ilib -I. lib app cmd filters
	$(Q)scripts/check-layers

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(DATADIR)/schemas/sql $(DESTDIR)$(DATADIR)/schemas/pg
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/
	install -D -m 755 $(SANDBOX_INIT) $(DESTDIR)$(PREFIX)/libexec/forge/forge-sandbox-init
	for f in $(RESOURCES); do \
	    install -D -m 644 $$f $(DESTDIR)$(DATADIR)/$$f; done
	install -m 644 forge.mk $(DESTDIR)$(DATADIR)/forge.mk
	install -m 644 $(SHARE) $(DESTDIR)$(DATADIR)/
	scripts/gen-man $(DESTDIR)$(MANDIR)/man1 $(PROGS)
	install -D -m 644 share/completions/forge.bash $(DESTDIR)$(BASHCOMPDIR)/forge
	install -D -m 644 share/completions/_forge $(DESTDIR)$(ZSHCOMPDIR)/_forge

# The man pages to remove are listed by the installed forge (the commands of
# its dispatcher table), before the programs go.  Directories are removed
# only when they are forge's own and empty.
INSTALLED_PROGS := $(PROGS:$(BINDIR)/%=$(DESTDIR)$(PREFIX)/bin/%)
uninstall:
	for m in $$(scripts/gen-man --list $(INSTALLED_PROGS) 2>/dev/null); do \
	    rm -f $(DESTDIR)$(MANDIR)/man1/$$m; done
	rm -f $(INSTALLED_PROGS) $(DESTDIR)$(PREFIX)/libexec/forge/forge-sandbox-init
	rmdir $(DESTDIR)$(PREFIX)/libexec/forge 2>/dev/null || true
	rm -f $(RESOURCES:%=$(DESTDIR)$(DATADIR)/%) $(DESTDIR)$(DATADIR)/forge.mk \
	    $(addprefix $(DESTDIR)$(DATADIR)/,$(notdir $(SHARE)))
	rm -f $(DESTDIR)$(BASHCOMPDIR)/forge $(DESTDIR)$(ZSHCOMPDIR)/_forge
	for d in $(sort $(dir $(RESOURCES))); do rmdir $(DESTDIR)$(DATADIR)/$$d 2>/dev/null || true; done
	rmdir $(DESTDIR)$(DATADIR)/schemas $(DESTDIR)$(DATADIR) 2>/dev/null || true

man: all
	$(Q)scripts/gen-man $(O)/man $(PROGS)

# The official MCP reference server tests/mcp.bats runs, installed once with
# npm ci into ~/.cache/forge-test (scripts/mcp-ref; the tests also run it).
mcp-ref:
	$(Q)scripts/mcp-ref >/dev/null
.PHONY: mcp-ref

# GitHub's OpenAPI description tests/pr-review.bats checks its GitHub server
# against (scripts/github-openapi; the tests also run it).
github-openapi:
	$(Q)scripts/github-openapi >/dev/null
.PHONY: github-openapi

clean:
	rm -rf build build-asan build-clang build-fuzz $(PROGS) $(SANDBOX_INIT)

# Fuzzing: one libFuzzer target per parser in tests/fuzz/fuzz_*.c, seeded
# from tests/fuzz/corpus/TARGET/ (the tests' fixtures, and every input that
# once crashed, as a regression).
#   make fuzz-check   (in make check) each target linked with tests/fuzz/replay.c,
#                     a main() without libFuzzer, against build-asan/: its corpus
#                     plus FUZZ_RUNS (2000) inputs edited from it with a fixed seed,
#                     under ASan+UBSan; bounded and not timing dependent.
#                     Failing inputs go to build-asan/fuzz-crashes/.
#   make fuzz         real fuzzing: libFuzzer (clang) in its own tree build-fuzz/,
#                     each target for FUZZ_SECONDS (60) s; new inputs go to
#                     build-fuzz/corpus/TARGET, crashes to build-fuzz/crashes/
FUZZ_O       ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= 2000
FUZZERS      := $(FUZZ_NAMES:%=$(O)/fuzz/%)
FUZZ_ARGS    := --no-print-directory O=$(FUZZ_O) CC=$(FUZZ_CC) \
                SANITIZE=fuzzer-no-link,address,undefined fuzz-targets

$(FUZZ_REPLAY): $(O)/fuzz-replay/%: $(O)/obj/tests/fuzz/%.o $(O)/obj/tests/fuzz/replay.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The replay in this tree (fuzz-check runs it in build-asan/).
fuzz-replay: $(FUZZ_REPLAY)
	$(Q)mkdir -p $(O)/fuzz-crashes
	$(Q)set -e; export ASAN_OPTIONS="$${ASAN_OPTIONS:-detect_leaks=1:exitcode=99}" \
	    LSAN_OPTIONS="$${LSAN_OPTIONS:-suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0}" \
	    UBSAN_OPTIONS="$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"; \
	for t in $(FUZZ_NAMES); do \
	    $(O)/fuzz-replay/$$t -runs=$(FUZZ_RUNS) -seed=1 -artifact_prefix=$(O)/fuzz-crashes/$$t- \
	        tests/fuzz/corpus/$$t 2>$(O)/fuzz-replay/$$t.log || { tail -40 $(O)/fuzz-replay/$$t.log; exit 1; }; \
	    echo "  FUZZ    $$t: $$(ls tests/fuzz/corpus/$$t | wc -l) corpus inputs + $(FUZZ_RUNS) edited, no crash"; \
	done

fuzz-check: | $(DEPS_STAMP)
	$(Q)$(MAKE) $(ASAN_ARGS) fuzz-replay

$(FUZZERS): $(O)/fuzz/%: tests/fuzz/%.c $(LIB) $(O)/.cflags
	@mkdir -p $(@D)
	@echo "  FUZZ    $@"
	$(Q)$(CC) $(CSTD) $(CPPFLAGS) $(WARN) $(CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(LIB) $(LDLIBS)

fuzz-targets: $(FUZZERS)

fuzz:
	$(Q)$(MAKE) $(FUZZ_ARGS)
	$(Q)set -e; for t in $(FUZZ_NAMES); do \
	    mkdir -p $(FUZZ_O)/corpus/$$t $(FUZZ_O)/crashes tests/fuzz/corpus/$$t; \
	    echo "  FUZZ    $$t ($(FUZZ_SECONDS) s)"; \
	    $(FUZZ_O)/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_O)/crashes/$$t- $(FUZZ_O)/corpus/$$t tests/fuzz/corpus/$$t \
	        2>$(FUZZ_O)/$$t.log || { tail -40 $(FUZZ_O)/$$t.log; exit 1; }; \
	    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' $(FUZZ_O)/$$t.log; \
	done

-include $(SRC_OBJ:.o=.d) $(CLANG_OK:.ok=.d)
.PHONY: all check check-all check-default check-pg check-pg-suite check-suite check-build asan-build check-asan-suite check-fuzz clang-check clang-syntax demo ci-sim bench lint \
        install uninstall man clean FORCE fuzz fuzz-check fuzz-replay fuzz-targets
.DELETE_ON_ERROR:
