# btk — one Makefile builds libcore, every tool and the tests.
PREFIX   ?= /usr/local
DESTDIR  ?=
B        := build
CC       ?= cc
PKGS     := blkid popt libzstd zlib lzo2 libxxhash libcrypto libb2 libdeflate libarchive
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Ilibcore -I. \
            -MMD -MP $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ifeq ($(SANITIZE),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
B        := build-san
endif

LIB_SRC  := $(wildcard libcore/*/*.c)
CLI_SRC  := $(wildcard cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
# cli's objects as an archive: a tool links only those it uses, and with --as-needed only the
# shared libraries those need (libarchive, with libxml2, ICU and libstdc++ behind it, for
# btk-mkfs's archive input alone: loading them costs every other tool's start 5M instructions)
CLI_LIB  := $(B)/libcli.a
LDFLAGS  += -Wl,--as-needed
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
LIB      := $(B)/libcore.a
TOOLS    := $(sort $(foreach d,debug mkfs fsck owner convert resize image undo,$(if $(wildcard $(d)/*.c),$(d))))
BINS     := $(TOOLS:%=$(B)/bin/btk-%)
UNIT_SRC := $(wildcard tests/unit/*/test_*.c)
UNITS    := $(foreach s,$(UNIT_SRC),$(B)/tests/$(basename $(notdir $(s))))
TESTLIB_SRC := $(wildcard tests/lib/*.c)
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(B)/%.o)
TESTTOOLS := $(TESTLIB_SRC:tests/lib/%.c=$(B)/tests/%)

# The build sub-makes of all, check and demo use every core unless -j was given (CI has 2).
# Given on their command line, not added to MAKEFLAGS here: make 4.3 turning on parallel jobs
# after it has read the makefile (and run its $(shell) calls) is fragile, and a plain
# `make layers` or `make build/bin/btk-mkfs` needs no jobs at all.
# (expanded in the recipe: make 4.3 shows -j in MAKEFLAGS only there, not while parsing)
NPROC    := $(shell nproc 2>/dev/null || echo 2)
JOBS      = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))

.PHONY: all tools build deps check-deps check demo install uninstall clean format layers
# Packages are installed first, on their own, and the build runs in a second make: the
# pkg-config flags above are read when make starts, so a fresh machine must have the -dev
# packages before that make starts (and apt-get must not run twice at once under -j).
# all and install build the tools only (no libcmocka needed); check builds the tests too.
all: deps
	@$(MAKE) $(JOBS) --no-print-directory tools
tools: $(LIB) $(BINS)
build: tools $(UNITS) $(TESTTOOLS)

deps:
	@scripts/deps.sh build
check-deps:
	@scripts/deps.sh check

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CLI_LIB): $(CLI_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

.SECONDARY:
.SECONDEXPANSION:
$(B)/bin/btk-%: $$(addprefix $(B)/,$$(subst .c,.o,$$(wildcard $$*/*.c))) $(CLI_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/tests/test_%: $$(addprefix $(B)/,$$(subst .c,.o,$$(wildcard tests/unit/*/test_$$*.c))) $(CLI_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

# btk-convert reads ext with libext2fs
$(B)/convert/%.o: CFLAGS += $(shell pkg-config --cflags ext2fs com_err 2>/dev/null)
$(B)/bin/btk-convert: LDLIBS += $(shell pkg-config --libs ext2fs com_err 2>/dev/null)

# tests/lib/NAME.c: one helper program each (image makers, corruptors), linked with libcore
$(B)/tests/%: $(B)/tests/lib/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# lower layers never call or include upper ones (scripts/layers.sh; HACKING.md has the map)
layers: $(LIB)
	@scripts/layers.sh $(B)

check: check-deps
	@$(MAKE) $(JOBS) --no-print-directory build layers
	@BTK_BUILD=$(B) tests/run.sh

demo: deps
	@$(MAKE) $(JOBS) --no-print-directory tools
	@BTK_BUILD=$(B) scripts/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard man/*.8) $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 644 $(wildcard man/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/
	ln -sf btk-fsck $(DESTDIR)$(PREFIX)/bin/fsck.btk
	ln -sf btk-fsck.8 $(DESTDIR)$(PREFIX)/share/man/man8/fsck.btk.8
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	for t in $(notdir $(BINS)); do \
		install -m 644 completion/btk.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$t; \
	done

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(notdir $(BINS))) \
	      $(DESTDIR)$(PREFIX)/bin/fsck.btk $(DESTDIR)$(PREFIX)/share/man/man8/fsck.btk.8 \
	      $(addprefix $(DESTDIR)$(PREFIX)/share/man/man8/,$(notdir $(wildcard man/*.8))) \
	      $(addprefix $(DESTDIR)$(PREFIX)/share/man/man7/,$(notdir $(wildcard man/*.7))) \
	      $(addprefix $(DESTDIR)$(PREFIX)/share/bash-completion/completions/,$(notdir $(BINS)))

format:
	clang-format -i $(wildcard libcore/*/*.[ch] */*.[ch] tests/unit/*/*.c tests/unit/*.h tests/lib/*.c)

clean:
	rm -rf build build-san

-include $(shell find $(B) -name '*.d' 2>/dev/null)
