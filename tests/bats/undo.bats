#!/usr/bin/env bats
# Undo files (issue 25): -z/--undo FILE on btk-resize, btk-convert and btk-image's writing
# verbs, and btk-undo FILE DEV... (io/undo.h). After a whole run, after a power cut
# (BTK_FAULT=stop:N) at every change of a run, after SIGINT at every change, and after a power
# cut or SIGINT of btk-undo itself run again, the image is byte-identical (sha256) to the one
# before the run. An undo file that does not belong to the devices (another image, the image
# changed since, a damaged file, another count) is refused with one line and nothing
# written; so are a locked device, an undo file that exists, the device as its own undo file.

load helpers

setup() {
	require_btk mkfs
	require_btk image
	require_btk resize
	require_btk convert
	require_btk undo
	MKFS=$BTK_BUILD/bin/btk-mkfs
	IMG=$BTK_BUILD/bin/btk-image
	RESIZE=$BTK_BUILD/bin/btk-resize
	CONVERT=$BTK_BUILD/bin/btk-convert
	UNDO=$BTK_BUILD/bin/btk-undo
	D=$BATS_TEST_TMPDIR
	cd "$D"
	export SOURCE_DATE_EPOCH=1700000000
	set_runs
}

# sample files, a few small and one of 6 MiB: a shrink of their 128 MiB image to 70m moves
# stripes and cuts chunks
make_src() {
	mkdir -p src
	for i in $(seq 1 60); do head -c $((i * 3000)) /dev/urandom >"src/f$i"; done
	head -c 6M /dev/urandom >src/big
	# what put copies in: a few files, a few dozen changes
	mkdir -p few
	for i in 1 5 9 13 17 21; do cp "src/f$i" few/; done
}

# fs.img: btrfs of src; orig.img its copy, $orig_sha its sha256
make_btrfs() {
	make_src
	truncate -s 128M fs.img
	"$MKFS" -q -r src fs.img
	cp --sparse=always fs.img orig.img
	orig_sha=$(sha256_of fs.img)
}

make_ext() {
	require_tool mkfs.ext4
	make_src
	truncate -s 200M fs.img
	mkfs.ext4 -q -F -b 4096 -E root_owner=0:0 -d src fs.img
	cp --sparse=always fs.img orig.img
	orig_sha=$(sha256_of fs.img)
}

# The runs, each changing fs.img with -z u.undo (commands, not functions: btk_run runs them
# under timeout(1))
set_runs() {
	RUN_RESIZE=("$RESIZE" -q -z u.undo 70m fs.img)
	RUN_CONVERT=("$CONVERT" --uuid 0b7c5e5e-0000-4000-8000-000000000001 -z u.undo fs.img)
	RUN_PUT=("$IMG" put -r -z u.undo fs.img few /new)
}

# fresh: fs.img is the original again, no undo file
fresh() {
	cp --sparse=always orig.img fs.img
	rm -f u.undo
}

# undo_back WHAT: btk-undo u.undo fs.img exits 0 and fs.img is the original (sha256)
undo_back() {
	btk_run 120 "$UNDO" u.undo fs.img
	assert_no_crash
	[ "$status" = 0 ] || {
		echo "$1: btk-undo exits $status:" >&2
		cat "$BTK_ERR" >&2
		return 1
	}
	[ "$(sha256_of fs.img)" = "$orig_sha" ] || {
		echo "$1: not the original after btk-undo" >&2
		return 1
	}
}

# changes RUN: the changes a whole RUN makes (the smallest BTK_FAULT=fail:N budget it
# finishes with) in $total
changes() {
	local lo=-1 hi=4000 mid
	while [ $((hi - lo)) -gt 1 ]; do
		mid=$(((lo + hi) / 2))
		fresh
		if BTK_FAULT=fail:$mid "$@" >/dev/null 2>&1; then hi=$mid; else lo=$mid; fi
	done
	total=$hi
	[ "$total" -gt 3 ] && [ "$total" -lt 4000 ]
}

# whole RUN: RUN with -z changes fs.img; btk-undo puts the original back; again: nothing to do
whole() {
	fresh
	"$@" >/dev/null
	[ "$(sha256_of fs.img)" != "$orig_sha" ]
	[ -s u.undo ]
	undo_back "whole run"
	grep -q "the run finished" "$BTK_OUT"
	undo_back "btk-undo again"
	grep -q "put back 0 blocks" "$BTK_OUT"
}

# cuts RUN: a power cut after each of RUN's changes (every one of them, and none), each then
# put back by btk-undo: the original every time
cuts() {
	local n
	changes "$@"
	local changed=0
	for n in $(seq 0 "$total"); do
		fresh
		BTK_FAULT=stop:$n btk_run 120 "$@"
		assert_no_crash
		[ "$status" -lt 126 ] || { show_err; return 1; }
		[ "$(sha256_of fs.img)" = "$orig_sha" ] || changed=$((changed + 1))
		[ -e u.undo ] # its first change is logged before it is cut
		undo_back "power cut after $n of $total changes"
	done
	# the cuts left changed images (all but the one before the first change, at least)
	[ "$changed" -ge $((total / 2)) ]
	echo "# $total changes: cut after each ($changed changed the image), put back each time" >&3
}

# sigints RUN: SIGINT before each of RUN's changes (BTK_TEST_SIGINT_AT), then btk-undo
sigints() {
	local n st
	changes "$@"
	for n in $(seq 1 "$total"); do
		fresh
		BTK_TEST_SIGINT_AT=$n btk_run 120 "$@"
		st=$status
		# 130 with the interrupt line; the last budget (the final flush) may see no change
		{ [ "$st" = 130 ] && grep -q "interrupted" "$BTK_ERR"; } ||
			{ [ "$st" = 0 ] && [ "$n" = "$total" ]; } || {
			echo "SIGINT at change $n of $total: exit $st" >&2
			cat "$BTK_ERR" >&2
			return 1
		}
		if [ -e u.undo ]; then
			undo_back "SIGINT at change $n of $total"
			[ "$st" = 0 ] || grep -q "cut short" "$BTK_OUT"
		else
			[ "$(sha256_of fs.img)" = "$orig_sha" ]
		fi
	done
}

@test "resize (shrink with moves and a cut file, and grow) -z, then btk-undo: the image byte-identical" {
	make_btrfs
	whole "${RUN_RESIZE[@]}"
	fresh
	"$RESIZE" -q -z u.undo 300m fs.img
	[ "$(stat -c %s fs.img)" = $((300 << 20)) ]
	undo_back "grow"
	[ "$(stat -c %s fs.img)" = $((128 << 20)) ]
}

@test "convert -z, then btk-undo: the ext image byte-identical; the rollback too" {
	make_ext
	whole "${RUN_CONVERT[@]}"
	fresh
	"$CONVERT" fs.img >/dev/null
	cp --sparse=always fs.img orig.img
	orig_sha=$(sha256_of fs.img)
	"$CONVERT" -r -z u.undo fs.img >/dev/null
	undo_back "rollback"
}

@test "image put -r -z, then btk-undo: the image byte-identical; --json, -n" {
	make_btrfs
	whole "${RUN_PUT[@]}"
	fresh
	"${RUN_PUT[@]}" >/dev/null
	after=$(sha256_of fs.img)
	btk_run 60 "$UNDO" -n --json u.undo fs.img
	[ "$status" = 0 ]
	[ "$(sha256_of fs.img)" = "$after" ]
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["dry_run"] is True and j["complete"] is True and j["tool"] == "btk-image", j
d = j["devices"][0]
assert d["device"] == "fs.img" and d["devid"] == 1 and d["restore_blocks"] > 10, d
assert d["size"] == d["size_now"] == 128 << 20, d
' "$BTK_OUT"
	undo_back "after the dry run"
}

@test "power cut at every change of resize -z: btk-undo gives the original back" {
	make_btrfs
	cuts "${RUN_RESIZE[@]}"
}

@test "power cut at every change of convert -z: btk-undo gives the original back" {
	make_ext
	cuts "${RUN_CONVERT[@]}"
}

@test "power cut at every change of image put -z: btk-undo gives the original back" {
	make_btrfs
	cuts "${RUN_PUT[@]}"
}

@test "SIGINT at every change of resize -z and put -z: btk-undo gives the original back" {
	make_btrfs
	sigints "${RUN_RESIZE[@]}"
	sigints "${RUN_PUT[@]}"
}

@test "power cut and SIGINT during btk-undo, then btk-undo again: the original" {
	make_btrfs
	fresh
	"${RUN_RESIZE[@]}"
	cp --sparse=always fs.img after.img
	cp u.undo keep.undo
	# btk-undo's own changes
	lo=-1 hi=4000
	while [ $((hi - lo)) -gt 1 ]; do
		mid=$(((lo + hi) / 2))
		cp --sparse=always after.img fs.img
		if BTK_FAULT=fail:$mid "$UNDO" u.undo fs.img >/dev/null 2>&1; then hi=$mid; else lo=$mid; fi
	done
	[ "$hi" -gt 2 ]
	for n in $(seq 0 "$hi"); do
		cp --sparse=always after.img fs.img
		BTK_FAULT=stop:$n btk_run 60 "$UNDO" u.undo fs.img
		assert_no_crash
		undo_back "btk-undo cut after $n of $hi changes, run again"
	done
	cp --sparse=always after.img fs.img
	BTK_TEST_SIGINT_AT=1 btk_run 60 "$UNDO" u.undo fs.img
	[ "$status" = 130 ]
	grep -q "interrupted: fs.img is unchanged" "$BTK_ERR"
	[ "$(sha256_of fs.img)" = "$(sha256_of after.img)" ]
	# (hi: its changes and its last flush, which a fail:N budget counts too)
	for n in 2 $((hi / 2)) $((hi - 1)); do
		cp --sparse=always after.img fs.img
		BTK_TEST_SIGINT_AT=$n btk_run 60 "$UNDO" u.undo fs.img
		[ "$status" = 130 ]
		grep -q "partly put back: run btk-undo again" "$BTK_ERR" || { show_err; false; }
		undo_back "btk-undo stopped by SIGINT at change $n, run again"
	done
	cmp u.undo keep.undo # btk-undo never writes its file
}

# refused CMD...: exits 1 with one line on stderr, and fs.img and u.undo are unchanged
refused() {
	local before undo_before
	before=$(sha256_of fs.img)
	undo_before=$(sha256_of u.undo)
	btk_run 60 "$@"
	assert_one_line_error
	[ "$status" = 1 ]
	[ "$(sha256_of fs.img)" = "$before" ]
	[ "$(sha256_of u.undo)" = "$undo_before" ]
}

@test "an undo file of another image, of an image changed since, damaged, or for another device count: refused, nothing written" {
	make_btrfs
	fresh
	"${RUN_RESIZE[@]}"
	"$MKFS" -q -b 128m other.img
	cp other.img fs.img.keep
	mv fs.img changed.img
	mv other.img fs.img
	refused "$UNDO" u.undo fs.img
	grep -q "is not a device of u.undo" "$BTK_ERR"
	grep -q "nothing written" "$BTK_ERR"
	mv changed.img fs.img
	"$IMG" mkdir fs.img /later >/dev/null
	refused "$UNDO" u.undo fs.img
	grep -q "changed since u.undo was written" "$BTK_ERR"
	cp fs.img.keep two.img
	refused "$UNDO" u.undo fs.img two.img
	grep -q "the run changed 1 device" "$BTK_ERR"
	# a record in the middle that does not verify
	cp u.undo good.undo
	printf 'X' | dd of=u.undo bs=1 seek=300 conv=notrunc status=none
	refused "$UNDO" u.undo fs.img
	grep -q "damaged" "$BTK_ERR"
	# not an undo file, the device as the undo file
	refused "$UNDO" fs.img.keep fs.img
	grep -q "not a btk undo file" "$BTK_ERR"
	btk_run 60 "$UNDO" fs.img fs.img
	[ "$status" = 2 ]
}

@test "btk-undo takes the writer's lock: refused while another process holds it" {
	require_tool flock
	make_btrfs
	fresh
	"${RUN_RESIZE[@]}"
	flock -x fs.img sh -c ': >"$0"; exec sleep 30' "$D/held" &
	holder=$!
	for i in $(seq 1 400); do
		[ -e "$D/held" ] && break
		sleep 0.05
	done
	refused "$UNDO" u.undo fs.img
	grep -q "is being changed by another" "$BTK_ERR"
	pkill -P "$holder" 2>/dev/null || true
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	undo_back "after the lock"
}

@test "-z refuses an undo file that exists or is the device; makes none when nothing changes" {
	make_btrfs
	echo keep >u.undo
	refused "$RESIZE" -z u.undo 70m fs.img
	grep -q "exists and is not empty" "$BTK_ERR"
	before=$(sha256_of fs.img)
	btk_run 60 "$RESIZE" -z fs.img 70m fs.img
	[ "$status" = 1 ]
	[ "$(sha256_of fs.img)" = "$before" ]
	rm u.undo
	"$RESIZE" -n -z u.undo 70m fs.img >/dev/null
	[ ! -e u.undo ]
	btk_run 60 "$IMG" put -z '' fs.img src/f1 /f1
	[ "$status" = 2 ]
}

@test "two devices in one undo file: btk-undo takes them in any order" {
	make_src
	truncate -s 128M a.img b.img
	"$MKFS" -q -d raid1 -m raid1 -r src a.img b.img
	sa=$(sha256_of a.img) sb=$(sha256_of b.img)
	"$RESIZE" -q -z u.undo 2:112m a.img b.img
	[ "$(sha256_of b.img)" != "$sb" ]
	btk_run 60 "$UNDO" u.undo b.img a.img
	[ "$status" = 0 ] || { cat "$BTK_ERR" >&2; false; }
	[ "$(sha256_of a.img)" = "$sa" ]
	[ "$(sha256_of b.img)" = "$sb" ]
}
