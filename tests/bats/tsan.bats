#!/usr/bin/env bats
# Code that runs on several threads, built with ThreadSanitizer: a data race is a failure even
# where x86 hides it (the normal and ASan builds cannot see one). The unit test of the first
# crc32c use from 8 threads at once failed here (2 races on the lazy table set-up) before the
# tables were set up once with pthread_once.

load helpers

setup() {
	command -v cc >/dev/null || skip "no C compiler"
	T=$BATS_TEST_TMPDIR
	echo 'int main(void){return 0;}' >"$T/probe.c"
	if ! { cc -fsanitize=thread -o "$T/probe" "$T/probe.c" 2>/dev/null && "$T/probe"; }; then
		skip "cc has no working -fsanitize=thread (libtsan)"
	fi
}

@test "tsan: crc32c first used from 8 threads at once: no data race, right sums" {
	cd "$BTK_ROOT"
	# shellcheck disable=SC2046 # pkg-config prints several words
	cc -std=gnu11 -O1 -g -fsanitize=thread -D_GNU_SOURCE -Ilibcore -I. \
		tests/unit/base/test_csum_threads.c libcore/base/csum.c libcore/base/blake2b.c libcore/base/error.c \
		-o "$T/csum_threads" -lcmocka $(pkg-config --libs libcrypto libxxhash) -lpthread
	TSAN_OPTIONS=exitcode=66 run "$T/csum_threads"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output != *"data race"* ]]
}

@test "tsan: EWF chunk cache read by 8 threads at once (slots loaded outside the lock, waited for, evicted): no data race, every range as the raw file" {
	require_tool ewfacquire
	cd "$BTK_ROOT"
	# libcore's io handle and EWF reader alone; the writer's lock is not used (a stub)
	echo 'void btk_lock_drop(void *l) { (void)l; }' >"$T/stub.c"
	cc -std=gnu11 -O1 -g -fsanitize=thread -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Ilibcore -I. \
		tests/lib/ewfread.c libcore/io/ewf.c libcore/io/io.c libcore/base/error.c "$T/stub.c" \
		-o "$T/ewfread" -ldeflate -lpthread -ldl
	for _ in $(seq 60); do cat man/*; done | head -c 8M >"$T/text"
	head -c 8M /dev/urandom >"$T/rnd"
	cat "$T/text" "$T/rnd" "$T/text" >"$T/disk.bin"
	ewfacquire -u -q -t "$T/ev" -f encase6 -c fast -S 10M "$T/disk.bin" >/dev/null 2>&1
	TSAN_OPTIONS=exitcode=66 run "$T/ewfread" same "$T/ev.E01" "$T/disk.bin" 8 400 "$RANDOM"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output != *"data race"* ]]
}
