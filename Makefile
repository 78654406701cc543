# btk — one Makefile builds libcore, every tool and the tests.
PREFIX   ?= /usr/local
DESTDIR  ?=
B        := build
CC       ?= cc
PKGS     := blkid popt libzstd zlib lzo2 libxxhash libcrypto libb2 libdeflate
# libarchive: its header only; cli/archive.c loads the library (dlopen) when an archive is read
HDR_PKGS := libarchive
# pkg-config runs once, here (:=): CFLAGS and LDLIBS are expanded in every recipe, and a $(shell)
# inside them would run again each time (hundreds of runs per build)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) $(HDR_PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Ilibcore -I. \
            -MMD -MP $(PKG_CFLAGS)
# every object can go into libbtk.so; no interposition, so calls stay as direct as without
CFLAGS   += -fPIC -fno-semantic-interposition
# libselinux (optional): its header only; btk-mkfs --file-contexts loads the library (dlopen)
ifeq ($(shell pkg-config --exists libselinux 2>/dev/null && echo y),y)
SELINUX_CFLAGS := $(shell pkg-config --cflags libselinux)
CFLAGS   += -DBTK_HAVE_SELINUX $(SELINUX_CFLAGS)
endif
LDLIBS   += $(PKG_LIBS)
ifeq ($(SANITIZE),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
B        := build-san
endif

LIB_SRC  := $(wildcard libcore/*/*.c)
CLI_SRC  := $(wildcard cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
# cli's objects as an archive: a tool links only those it uses, and with --as-needed only the
# shared libraries those need
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
# libbtk: the public API (include/btk/, lib/) over libcore, shared (only btkfs_* exported,
# lib/libbtk.map) and static
LIBDIR   ?= $(PREFIX)/lib
BTK_VER  := 0.3
LIBBTK_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard lib/*.c)) $(B)/cli/uuid.o $(B)/cli/fault.o \
	      $(B)/cli/epoch.o $(B)/cli/archive.o
LIBBTK   := $(B)/lib/libbtk.so.$(BTK_VER) $(B)/lib/libbtk.a

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
tools: $(LIB) $(BINS) $(LIBBTK)
build: tools $(UNITS) $(TESTTOOLS)

deps:
	@scripts/deps.sh build
check-deps:
	@scripts/deps.sh check

# objects are rebuilt when the flags change (a stale non-PIC object cannot go into libbtk.so):
# $(B)/.cflags holds them and is rewritten, when make starts, only when they differ
FLAGSTAMP := $(B)/.cflags
$(shell mkdir -p $(B) && echo '$(CC) $(CFLAGS)' | cmp -s - $(FLAGSTAMP) || \
	echo '$(CC) $(CFLAGS)' >$(FLAGSTAMP))
$(B)/%.o: %.c $(FLAGSTAMP)
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

$(B)/lib/%.o: CFLAGS += -Iinclude -fvisibility=hidden
$(B)/lib/libbtk.so.$(BTK_VER): $(LIBBTK_OBJ) $(LIB) lib/libbtk.map
	$(CC) -shared -Wl,-soname,libbtk.so.0 -Wl,--version-script=lib/libbtk.map -Wl,--no-undefined \
		$(LDFLAGS) -o $@ $(LIBBTK_OBJ) $(LIB) $(LDLIBS)
	ln -sf libbtk.so.$(BTK_VER) $(B)/lib/libbtk.so.0 && ln -sf libbtk.so.0 $(B)/lib/libbtk.so
$(B)/lib/libbtk.a: $(LIBBTK_OBJ) $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

# btk-image's file verbs call the public API (include/btk/btk.h) from the static libbtk
$(B)/image/%.o: CFLAGS += -Iinclude
$(B)/bin/btk-image: $(B)/lib/libbtk.a

# btk-convert reads ext with libext2fs
EXT2_CFLAGS := $(shell pkg-config --cflags ext2fs com_err 2>/dev/null)
EXT2_LIBS := $(shell pkg-config --libs ext2fs com_err 2>/dev/null)
$(B)/convert/%.o: CFLAGS += $(EXT2_CFLAGS)
$(B)/bin/btk-convert: LDLIBS += $(EXT2_LIBS)

# tests/lib/NAME.c: one helper program each (image makers, corruptors), linked with libcore
$(B)/tests/%: $(B)/tests/lib/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# lower layers never call or include upper ones (scripts/layers.sh; HACKING.md has the map)
layers: $(LIB)
	@scripts/layers.sh $(B)

# the libFuzzer target (clang, every libcore source again) is built here on every core, before
# the tests: in tests/bats/fuzz.bats it was one job in the free lane, its longest step. That
# test builds it again (incremental: nothing left to do) and says why when the build fails.
check: check-deps
	@$(MAKE) $(JOBS) --no-print-directory build layers
	@! command -v clang >/dev/null 2>&1 || BTK_FUZZ_JOBS=$(NPROC) sh tests/fuzz/build.sh $(B)/fuzz \
		>/dev/null 2>&1 || echo "make check: the fuzz target did not build (tests/bats/fuzz.bats says why)"
	@BTK_BUILD=$(B) tests/run.sh

demo: deps
	@$(MAKE) $(JOBS) --no-print-directory tools
	@BTK_BUILD=$(B) scripts/demo.sh

# the Python package's folder for this prefix, as Debian's python3 looks for it:
# /usr/lib/python3/dist-packages, or PREFIX/lib/python3.N/dist-packages
PYTHON   ?= $(firstword $(wildcard /usr/bin/python3) python3)
PYDIR    ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(shell \
	$(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)/dist-packages)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard man/*.8) $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 644 $(wildcard man/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/
	ln -sf btk-fsck $(DESTDIR)$(PREFIX)/bin/fsck.btk
	ln -sf btk-fsck.8 $(DESTDIR)$(PREFIX)/share/man/man8/fsck.btk.8
	# mkfs.btrfs for build pipelines, off PATH (btrfs-progs' own stays): PATH=.../libexec/btk:$$PATH
	install -d $(DESTDIR)$(PREFIX)/libexec/btk
	ln -sf ../../bin/btk-mkfs $(DESTDIR)$(PREFIX)/libexec/btk/mkfs.btrfs
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	for t in $(notdir $(BINS)); do \
		install -m 644 completion/btk.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$t; \
	done
	install -d $(DESTDIR)$(PREFIX)/include/btk $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 include/btk/btk.h $(DESTDIR)$(PREFIX)/include/btk/
	install -m 755 $(B)/lib/libbtk.so.$(BTK_VER) $(DESTDIR)$(LIBDIR)/
	ln -sf libbtk.so.$(BTK_VER) $(DESTDIR)$(LIBDIR)/libbtk.so.0
	ln -sf libbtk.so.0 $(DESTDIR)$(LIBDIR)/libbtk.so
	install -m 644 $(B)/lib/libbtk.a $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@VERSION@|$(BTK_VER)|' \
	    -e 's|@PRIVATE@|$(PKGS)|' lib/btk.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/btk.pc
	install -m 644 man/libbtk.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -d $(DESTDIR)$(PYDIR)/btk
	install -m 644 python/btk/__init__.py $(DESTDIR)$(PYDIR)/btk/

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/include/btk $(DESTDIR)$(PYDIR)/btk
	rm -f $(addprefix $(DESTDIR)$(LIBDIR)/,libbtk.so.$(BTK_VER) libbtk.so.0 libbtk.so libbtk.a pkgconfig/btk.pc) \
	      $(DESTDIR)$(PREFIX)/share/man/man3/libbtk.3
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(notdir $(BINS))) \
	      $(DESTDIR)$(PREFIX)/bin/fsck.btk $(DESTDIR)$(PREFIX)/share/man/man8/fsck.btk.8 \
	      $(DESTDIR)$(PREFIX)/libexec/btk/mkfs.btrfs \
	      $(addprefix $(DESTDIR)$(PREFIX)/share/man/man8/,$(notdir $(wildcard man/*.8))) \
	      $(addprefix $(DESTDIR)$(PREFIX)/share/man/man7/,$(notdir $(wildcard man/*.7))) \
	      $(addprefix $(DESTDIR)$(PREFIX)/share/bash-completion/completions/,$(notdir $(BINS)))

format:
	clang-format -i $(wildcard libcore/*/*.[ch] */*.[ch] include/btk/*.h tests/unit/*/*.c tests/unit/*.h tests/lib/*.c)

clean:
	rm -rf build build-san

-include $(shell find $(B) -name '*.d' 2>/dev/null)
