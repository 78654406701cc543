# fuzz.mk — the libFuzzer targets of tests/fuzz/, built by build.sh (make -f fuzz.mk TOP=DIR
# OUT=DIR): every libcore source is compiled once into OUT/obj with its header dependencies
# (-MMD), so a second build recompiles only what changed.
PKGS := blkid popt libzstd zlib lzo2 libxxhash libcrypto libb2 libdeflate
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
CFLAGS := -O1 -g -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -I$(TOP)/libcore -I$(TOP) \
	-fsanitize=fuzzer-no-link $(SAN) $(shell pkg-config --cflags $(PKGS))
LIBS := $(shell pkg-config --libs $(PKGS))
LIB_SRC := $(wildcard $(TOP)/libcore/*/*.c)
LIB_OBJ := $(patsubst $(TOP)/%.c,$(OUT)/obj/%.o,$(LIB_SRC))
TARGETS := $(patsubst $(TOP)/tests/fuzz/%.c,$(OUT)/%,$(wildcard $(TOP)/tests/fuzz/fuzz_*.c))

all: $(TARGETS)

$(OUT)/obj/%.o: $(TOP)/%.c
	@mkdir -p $(dir $@)
	clang $(CFLAGS) -MMD -MP -c -o $@ $<

$(OUT)/%: $(OUT)/obj/tests/fuzz/%.o $(LIB_OBJ)
	clang -fsanitize=fuzzer $(SAN) -o $@ $^ $(LIBS)

# the objects are what makes the next build incremental: never delete them as intermediates
.SECONDARY:
.PHONY: all
-include $(LIB_OBJ:.o=.d) $(patsubst $(OUT)/%,$(OUT)/obj/tests/fuzz/%.d,$(TARGETS))
