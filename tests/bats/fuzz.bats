#!/usr/bin/env bats
# A bounded libFuzzer run of tests/fuzz/fuzz_check (open + check + owner on an image held in
# memory, tree blocks mutated with checksums recomputed): about a minute, no crash, leak or
# sanitizer report. Longer runs by hand: BTK_FUZZ_IMAGE=IMG build/fuzz/fuzz_check DIR.

load helpers

@test "fuzz: fuzz_check runs a minute without a crash" {
	command -v clang >/dev/null 2>&1 || skip "clang not installed (scripts/deps.sh check)"
	local bin=$BTK_BUILD/fuzz/fuzz_check
	# incremental (tests/fuzz/fuzz.mk): compiles only what changed since the last run
	sh "$BTK_ROOT/tests/fuzz/build.sh" "$BTK_BUILD/fuzz" >"$BATS_TEST_TMPDIR/build.log" 2>&1 || {
		tail -20 "$BATS_TEST_TMPDIR/build.log" >&2
		return 1
	}
	local d=$BATS_TEST_TMPDIR src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/d" "$d/corpus"
	for i in $(seq 1 60); do echo "f $i" >"$src/d/f$i"; done
	head -c 20000 /dev/urandom >"$src/big"
	ln "$src/d/f1" "$src/hardlink"
	truncate -s 32M "$d/img"
	mkfs.btrfs -q -f -M -n 4096 -s 4096 -r "$src" "$d/img" >/dev/null 2>&1
	# seeds: a few mutation lists (block, offset, flags, length, bytes)
	printf '\000\000\020\000\000\004\377\377\377\377' >"$d/corpus/header"
	printf '\003\000\145\000\001\010AAAAAAAA' >"$d/corpus/one-copy"
	printf '\007\000\000\001\002\002\000\000' >"$d/corpus/bad-csum"
	head -c 200 /dev/urandom >"$d/corpus/random"
	BTK_FUZZ_IMAGE=$d/img timeout -k 10 150 "$bin" -max_total_time=60 -rss_limit_mb=2048 \
		-artifact_prefix="$d/" "$d/corpus" >"$d/fuzz.log" 2>&1 || {
		tail -40 "$d/fuzz.log" >&2
		return 1
	}
	local runs
	runs=$(grep -oE 'Done [0-9]+ runs' "$d/fuzz.log" | grep -oE '[0-9]+')
	echo "# fuzz_check: ${runs:-?} runs in 60 s, no crash" >&3
	[ "${runs:-0}" -gt 100 ]
}
