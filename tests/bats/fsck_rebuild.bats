#!/usr/bin/env bats
# btk-fsck --rescue csum-tree, free-space-tree, uuid-tree, data-reloc-tree and quota (issue 26).
# csum-tree: the checksum tree rebuilt from the data on btk-mkfs
# images whose checksum tree is lost on every copy (tests/lib/smash.c): afterwards both
# checkers are clean with --check-data-csum; old checksums that still read are kept; data whose
# copies differ with no old checksum is listed, never summed; a power cut at any write and a
# SIGINT leave the old or the rebuilt filesystem. Kernel-made images (NODATASUM, compressed):
# tests/oracle/fsck_rebuild.bats.

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck
SMASH=$BTK_BUILD/tests/smash

setup_file() {
	local d=$BATS_FILE_TMPDIR/src
	mkdir -p "$d/big" "$d/small"
	# 40 MiB of data: its checksums fill several leaves
	for i in 1 2 3 4 5; do head -c $((i * 2700000)) /dev/urandom >"$d/big/f$i"; done
	for i in $(seq 1 200); do echo "file $i" >"$d/small/n$i"; done
}

# image PROF [MKFS OPTION...]: a fresh 300 MiB image with metadata and data PROF in $IMG
# (original: .orig)
image() {
	IMG=$BATS_TEST_TMPDIR/$1.img
	rm -f "$IMG"
	truncate -s 300M "$IMG"
	"$BTK_BUILD/bin/btk-mkfs" -q -f -m "$1" -d "$1" "${@:2}" --rootdir "$BATS_FILE_TMPDIR/src" "$IMG" >/dev/null
	cp --sparse=always "$IMG" "$IMG.orig"
}

# both checkers clean, data read and verified against the checksums
both_clean() {
	btk_run 120 "$FSCK" --check-data-csum "$1"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 120 btrfs check --readonly --check-data-csum "$1"
	[ "$status" = 0 ] || { show_err; return 1; }
}

@test "rescue csum-tree: the checksum tree's root lost (single) or each of its copies (dup): rebuilt from the data, both checkers clean with --check-data-csum" {
	require_btk fsck
	require_tool btrfs
	local prof
	for prof in single dup; do
		image $prof
		"$SMASH" tree 7 1 "$IMG" >/dev/null
		[ $prof = dup ] && "$SMASH" tree 7 2 "$IMG" >/dev/null
		btk_run 60 "$FSCK" -q "$IMG"
		[ "$status" = 4 ] || { show_err; return 1; }
		btk_run 60 btrfs check --readonly "$IMG"
		[ "$status" != 0 ]
		btk_run 120 "$FSCK" --rescue csum-tree --no-undo "$IMG"
		[ "$status" = 1 ] || { show_err; return 1; }
		grep -Eq '^checksum tree rebuilt \([0-9]+ old block\(s\) dropped\): ([0-9]+) data sector\(s\) of [0-9]+ file extent\(s\) read, [0-9]+ summed afresh, 0 kept their old checksum, 0 without a right checksum$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		# every data sector of the files got a checksum: as many sums as the original has
		local want got
		want=$("$FSCK" --json "$IMG.orig" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["total_csum_bytes"])')
		got=$("$FSCK" --json "$IMG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["total_csum_bytes"])')
		[ "$want" = "$got" ] || { echo "$prof: $got checksum bytes, $want before" >&2; return 1; }
		both_clean "$IMG"
		# a whole tree that covers exactly the data that needs checksums: nothing written
		cp --sparse=always "$IMG.orig" "$IMG"
		btk_run 60 "$FSCK" --rescue csum-tree --no-undo "$IMG"
		[ "$status" = 0 ] || { show_err; return 1; }
		grep -q '^checksum tree: reads whole and covers exactly the data of [0-9]* file extent(s) that needs checksums: nothing rebuilt$' "$BTK_OUT"
		cmp "$IMG" "$IMG.orig"
	done
}

@test "rescue csum-tree: one leaf lost: the other leaves' checksums are kept, the lost ones summed afresh; --json" {
	require_btk fsck
	require_tool btrfs
	image single
	"$SMASH" tree 7 1 leaf "$IMG" >/dev/null
	btk_run 120 "$FSCK" --rescue csum-tree --no-undo --json "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["csum_summary"]
assert r["result"] == "rescued", r
assert s["rebuilt"] and s["old_blocks"] >= 2, s
assert s["sectors_new"] > 0 and s["sectors_kept"] > 0 and s["sectors_left"] == 0, s
assert s["sectors_new"] + s["sectors_kept"] == s["sectors"], s
assert r["csum_not_summed"] == [], r
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	both_clean "$IMG"
}

@test "rescue csum-tree: data whose copies differ is listed and left without a checksum unless an old one says which copy is right" {
	require_btk fsck
	require_tool btrfs
	image dup
	# the old tree is whole: nothing is rewritten, its checksums say which copy is right
	"$SMASH" data 1 "$IMG" >/dev/null
	btk_run 120 "$FSCK" --rescue csum-tree --no-undo "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	grep -q 'nothing rebuilt$' "$BTK_OUT"
	btk_run 120 "$FSCK" --rescue heal --check-data-csum --no-undo "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	both_clean "$IMG"
	# no old checksum: the 4 sectors are listed, without a checksum, exit 1|4
	image dup
	"$SMASH" data 1 "$IMG" >/dev/null
	"$SMASH" tree 7 1 "$IMG" >/dev/null
	"$SMASH" tree 7 2 "$IMG" >/dev/null
	btk_run 120 "$FSCK" --rescue csum-tree --no-undo "$IMG"
	[ "$status" = 5 ] || { show_err; return 1; }
	[ "$(grep -c '^NOT SUMMED: data \[[0-9]*, +4096): its copies differ and no old checksum says which is right: left without a checksum$' "$BTK_OUT")" = 4 ] || { cat "$BTK_OUT" >&2; return 1; }
	grep -q ', 4 without a right checksum$' "$BTK_OUT"
	# the checker names the data without checksums
	btk_run 120 "$FSCK" --json "$IMG"
	[ "$status" = 4 ]
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["errors"] and all(e["code"] == "E1406" for e in r["errors"]), r["errors"]
' "$BTK_OUT" || { grep -o '"code": "[^"]*"' "$BTK_OUT" | sort | uniq -c >&2; return 1; }
}

# cuts STEP TREE [leaf]: tree TREE's top block (or first leaf) of $IMG smashed (TREE zero:BYTENR:
# the block at BYTENR zeroed on every copy); a power cut at
# every write of --rescue STEP (STEP "repair": of --repair) leaves the old filesystem (the same
# errors) or the rebuilt one (clean but for superblock mirrors not yet written); SIGINT before
# one of the first writes exits 32 with the old one
cuts() {
	local step=$1 tree=$2 where=${3:-} how=(--rescue "$1")
	[ "$step" = repair ] && how=(--repair)
	case $tree in
	zero:*) "$SMASH" zero "${tree#zero:}" "$IMG" >/dev/null ;; # a block lost on every copy
	*) "$SMASH" tree "$tree" 1 $where "$IMG" >/dev/null ;;
	esac
	cp --sparse=always "$IMG" "$IMG.damaged"
	"$FSCK" --json "$IMG.damaged" | python3 -c 'import json,sys; print(sorted(e["code"] for e in json.load(sys.stdin)["errors"]))' >"$BATS_TEST_TMPDIR/old-errors"
	grep -q E0 "$BATS_TEST_TMPDIR/old-errors"
	cp --sparse=always "$IMG.damaged" "$IMG.full"
	"$FSCK" "${how[@]}" --no-undo "$IMG.full" >/dev/null || [ $? = 1 ]
	local n old=0 new=0 done=
	for n in $(seq 0 300); do
		cp --sparse=always "$IMG.damaged" "$IMG"
		BTK_FAULT=stop:$n btk_run 120 "$FSCK" "${how[@]}" --no-undo "$IMG"
		assert_no_crash
		# a step that re-checks the new state before its superblocks (VERIFIED) sees the
		# writes the cut kept from the disk, and writes no superblock
		if [ -n "${VERIFIED:-}" ] && [ "$status" = 8 ] && grep -q 'nothing written' "$BTK_ERR"; then
			[ "$(state)" = old ] || { echo "$step stop:$n: refused, not the old filesystem" >&2; return 1; }
			old=$((old + 1))
			continue
		fi
		[ "$status" = 1 ] || [ "$step" = repair ] || { show_err; return 1; }
		# the cut came after the last write
		cmp -s "$IMG" "$IMG.full" && { done=$n; break; }
		case $(state) in
		old) old=$((old + 1)) ;;
		new) new=$((new + 1)) ;;
		*) echo "$step stop:$n: neither the old nor the new filesystem" >&2; cat "$BTK_OUT" >&2; return 1 ;;
		esac
	done
	[ -n "$done" ] && [ $old -ge 3 ] || { echo "$step: old $old new $new, last write ${done:-not reached}" >&2; return 1; }
	echo "# $step: $done writes: old $old, new $new" >&3
	for n in 1 2 3; do
		cp --sparse=always "$IMG.damaged" "$IMG"
		BTK_TEST_SIGINT_AT=$n btk_run 120 "$FSCK" "${how[@]}" --no-undo "$IMG"
		[ "$status" = 32 ] || { show_err; return 1; }
		grep -q 'interrupted' "$BTK_ERR"
		[ "$(state)" = old ] || { echo "$step SIGINT at $n: not the old filesystem" >&2; return 1; }
	done
}

# state: old ($IMG has the errors of $IMG.damaged), new (clean but for superblock mirrors not
# yet written) or broken
state() {
	btk_run 120 "$FSCK" --json "$IMG"
	python3 -c '
import json, sys
codes = sorted(e["code"] for e in json.load(open(sys.argv[1]))["errors"])
if str(codes) == open(sys.argv[2]).read().strip():
    print("old")
elif all(c in ("E0102", "E0103", "E0115") for c in codes):
    print("new")
else:
    print("broken")
' "$BTK_OUT" "$BATS_TEST_TMPDIR/old-errors"
}

@test "rescue csum-tree, free-space-tree, uuid-tree, data-reloc-tree: a power cut at every write leaves the old filesystem or the rebuilt one; SIGINT exits 32 with the old one" {
	require_btk fsck
	image single
	cuts csum-tree 7 leaf
	image single
	cuts free-space-tree 10
	image single
	cuts uuid-tree 9
	image single
	cuts data-reloc-tree 18446744073709551607
}

@test "repair: a lost free-space tree, uuid tree, checksum tree root or data relocation tree (every copy) is rebuilt by one --repair; both checkers clean with --check-data-csum" {
	require_btk fsck
	require_tool btrfs
	local prof tree
	for prof in single dup; do
		for tree in 10 9 7 18446744073709551607; do
			image $prof
			"$SMASH" tree $tree 1 "$IMG" >/dev/null
			[ $prof = dup ] && "$SMASH" tree $tree 2 "$IMG" >/dev/null
			btk_run 60 "$FSCK" -q "$IMG"
			[ "$status" = 4 ] || { show_err; return 1; }
			btk_run 180 "$FSCK" --repair --no-undo "$IMG"
			[ "$status" = 1 ] || { echo "$prof tree $tree" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
			grep -Eq "^FIXED: \[E0606 tb-unreadable\] tree $tree bytenr [0-9]+: .* -> (rebuilt|an empty one)" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
			grep -q ', 0 left$' "$BTK_OUT"
			both_clean "$IMG"
		done
	done
	# the checksum tree rebuilt keeps every data sector summed
	local want got
	want=$("$FSCK" --json "$IMG.orig" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["total_csum_bytes"])')
	image single
	"$SMASH" tree 7 1 "$IMG" >/dev/null
	"$FSCK" --repair --no-undo "$IMG" >/dev/null || [ $? = 1 ]
	got=$("$FSCK" --json "$IMG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["total_csum_bytes"])')
	[ "$want" = "$got" ]
}

@test "repair: the rebuilds of --repair: a power cut at every write leaves the old filesystem or the repaired one; SIGINT exits 32 with the old one" {
	require_btk fsck
	image single
	cuts repair 10
	image single
	cuts repair 9
}

# items IMG TREE: the keys and bodies of a tree's items (btk-debug tree), without block headers
items() {
	"$BTK_BUILD/bin/btk-debug" tree -t "$2" "$1" | grep -Ev '^(leaf|node|fs uuid|chunk uuid|[a-z -]+ tree key)' | grep -v 'generation' | sed 's/itemoff [0-9]* //'
}

@test "rescue free-space-tree: the tree lost on every copy is rebuilt with the items it had; both checkers clean" {
	require_btk fsck
	require_tool btrfs
	local prof
	for prof in single dup; do
		image $prof
		"$SMASH" tree 10 1 "$IMG" >/dev/null
		[ $prof = dup ] && "$SMASH" tree 10 2 "$IMG" >/dev/null
		btk_run 60 btrfs check --readonly "$IMG"
		[ "$status" != 0 ]
		btk_run 60 "$FSCK" --rescue free-space-tree --no-undo "$IMG"
		[ "$status" = 1 ] || { show_err; return 1; }
		grep -q '^free-space tree rebuilt from the extent records ([1-9][0-9]* old block(s) dropped)$' "$BTK_OUT"
		# every block group's items as before (the new root leaf lies elsewhere: the
		# ranges next to it may differ)
		[ "$(items "$IMG" 10 | grep -c FREE_SPACE_INFO)" = "$(items "$IMG.orig" 10 | grep -c FREE_SPACE_INFO)" ]
		both_clean "$IMG"
	done
}

@test "rescue uuid-tree: the tree lost is rebuilt from the root items (subvolume and snapshots), marked current; both checkers clean" {
	require_btk fsck image
	require_tool btrfs
	image dup
	"$BTK_BUILD/bin/btk-image" snapshot "$IMG" / /snap1 >/dev/null
	"$BTK_BUILD/bin/btk-image" snapshot -r "$IMG" / /snap2 >/dev/null
	cp --sparse=always "$IMG" "$IMG.orig"
	"$SMASH" tree 9 1 "$IMG" >/dev/null
	"$SMASH" tree 9 2 "$IMG" >/dev/null
	btk_run 60 "$FSCK" -q "$IMG"
	[ "$status" = 4 ]
	btk_run 60 "$FSCK" --rescue uuid-tree --no-undo --json "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "rescued" and r["uuid_summary"]["items"] == 3, r
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	diff <(items "$IMG.orig" 9) <(items "$IMG" 9)
	btrfs inspect-internal dump-super "$IMG" | awk '$1 == "generation" { g = $2 } $1 == "uuid_tree_generation" { u = $2 } END { exit !(g == u) }'
	both_clean "$IMG"
}

@test "rescue csum-tree, free-space-tree, uuid-tree, data-reloc-tree, quota: a filesystem with a log tree is refused (replay it first), the image untouched" {
	require_btk fsck
	local img step
	corpus_copy 065-valid-log-tree__compressed
	img=$CIMG
	local sum
	sum=$(sha256_of "$img")
	for step in csum-tree free-space-tree uuid-tree data-reloc-tree quota; do
		btk_run 60 "$FSCK" --rescue $step --no-undo "$img"
		[ "$status" = 8 ] || { echo "$step: status $status" >&2; show_err; return 1; }
		grep -q 'has a log tree.*replay it first (--rescue replay-log)' "$BTK_ERR"
		[ "$(sha256_of "$img")" = "$sum" ]
	done
}

# corpus_img NAME: a scratch copy of corpus image NAME in $IMG (original: .orig)
corpus_img() {
	corpus_copy "$1"
	IMG=$CIMG
	cp --sparse=always "$IMG" "$IMG.orig"
}

# qstatus IMG: the quota status item's flags (btk-debug)
qstatus() {
	"$BTK_BUILD/bin/btk-debug" tree -t 8 "$1" | awk '$1 == "version" { for (i = 1; i < NF; i++) if ($i == "flags") print $(i + 1) }'
}

@test "rescue quota: the corpus's quotas whose rescan never started (036) or stopped halfway (022) are counted afresh: btrfs check finds every count right, both checkers clean" {
	require_btk fsck debug
	require_tool btrfs
	local n step
	for n in 036-rescan-not-kicked-in__no_rescan_kicked_in 022-qgroup-rescan-halfway__qgroup_rescan_halfway; do
		corpus_img $n
		[ "$(qstatus "$IMG")" != "0x1(ON)" ]
		btk_run 60 "$FSCK" --rescue quota --no-undo --json "$IMG"
		[ "$status" = 1 ] || { show_err; return 1; }
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["quota_summary"]
assert r["result"] == "rescued" and s["rescanned"] and s["qgroups"] >= 1 and s["changed"] >= 1, r
assert s["was_inconsistent"] or s["was_rescanning"], s
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		[ "$(qstatus "$IMG")" = "0x1(ON)" ]
		# btrfs check now compares the counts (it skipped or flagged them before)
		btk_run 60 btrfs check --readonly "$IMG"
		[ "$status" = 0 ] || { show_err; return 1; }
		! grep -Eq 'are different|inconsistent|[Rr]escan' "$BTK_OUT" "$BTK_ERR"
		btk_run 60 "$FSCK" "$IMG"
		[ "$status" = 0 ] || { show_err; return 1; }
		# counted already: a second rescan finds every number right and writes nothing (no
		# commit, no undo file), exit 0
		cp --sparse=always "$IMG" "$IMG.counted"
		rm -f "$BATS_TEST_TMPDIR/q.undo"
		btk_run 60 "$FSCK" --rescue quota -z "$BATS_TEST_TMPDIR/q.undo" "$IMG"
		[ "$status" = 0 ] || { show_err; return 1; }
		grep -q '^quotas: every one of the [1-9][0-9]* qgroup(s) counted right already: nothing written$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		cmp "$IMG" "$IMG.counted"
		[ ! -e "$BATS_TEST_TMPDIR/q.undo" ]
		# the other rebuilds change no subvolume tree: quotas stay consistent through them
		for step in uuid-tree free-space-tree csum-tree; do
			btk_run 60 "$FSCK" --rescue $step --no-undo "$IMG"
			[ "$status" -le 1 ] || { show_err; return 1; } # csum-tree: 0, nothing to do
			[ "$(qstatus "$IMG")" = "0x1(ON)" ] || { echo "$step: quotas now $(qstatus "$IMG")" >&2; return 1; }
		done
		btk_run 60 btrfs check --readonly "$IMG"
		[ "$status" = 0 ] && ! grep -Eq 'are different|inconsistent|[Rr]escan' "$BTK_OUT" "$BTK_ERR"
	done
	# quotas off: nothing to rescan, refused in one line with the usage status (16), not as a
	# filesystem that could not be worked on (8)
	image single
	btk_run 60 "$FSCK" --rescue quota --no-undo "$IMG"
	[ "$status" = 16 ] || { show_err; return 1; }
	[ "$(wc -l <"$BTK_ERR")" = 1 ] && grep -q 'quotas not rescanned: quotas are off' "$BTK_ERR"
	cmp "$IMG" "$IMG.orig"
	btk_run 60 "$FSCK" --rescue quota --no-undo --json "$IMG"
	[ "$status" = 16 ] && python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "not rescued" and "quota_error" in r, r
' "$BTK_OUT"
}

@test "rescue quota: a power cut at every write leaves the quotas as they were or rescanned; SIGINT exits 32 with them as they were" {
	require_btk fsck debug
	require_tool btrfs
	corpus_img 022-qgroup-rescan-halfway__qgroup_rescan_halfway
	local before n old=0 new=0 done=
	before=$(qstatus "$IMG")
	cp --sparse=always "$IMG" "$IMG.full"
	"$FSCK" --rescue quota --no-undo "$IMG.full" >/dev/null || [ $? = 1 ]
	for n in $(seq 0 100); do
		cp --sparse=always "$IMG.orig" "$IMG"
		BTK_FAULT=stop:$n btk_run 120 "$FSCK" --rescue quota --no-undo "$IMG"
		assert_no_crash
		[ "$status" = 1 ] || { show_err; return 1; }
		cmp -s "$IMG" "$IMG.full" && { done=$n; break; }
		# clean, but for superblock mirrors not yet written
		btk_run 60 "$FSCK" --json "$IMG"
		python3 -c '
import json, sys
codes = [e["code"] for e in json.load(open(sys.argv[1]))["errors"]]
assert all(c in ("E0102", "E0103", "E0115") for c in codes), codes
' "$BTK_OUT" || { echo "stop:$n: btk-fsck not clean" >&2; return 1; }
		btk_run 60 btrfs check --readonly "$IMG"
		[ "$status" = 0 ] || { echo "stop:$n: btrfs check" >&2; show_err; return 1; }
		case $(qstatus "$IMG") in
		"$before") old=$((old + 1)) ;;
		"0x1(ON)") ! grep -q 'are different' "$BTK_OUT" && new=$((new + 1)) ;;
		*) echo "stop:$n: status $(qstatus "$IMG")" >&2; return 1 ;;
		esac
	done
	[ -n "$done" ] && [ $old -ge 2 ] || { echo "old $old new $new, last write ${done:-not reached}" >&2; return 1; }
	echo "# quota: $done writes: old $old, new $new" >&3
	for n in 1 2; do
		cp --sparse=always "$IMG.orig" "$IMG"
		BTK_TEST_SIGINT_AT=$n btk_run 120 "$FSCK" --rescue quota --no-undo "$IMG"
		[ "$status" = 32 ] || { show_err; return 1; }
		[ "$(qstatus "$IMG")" = "$before" ]
	done
}

# qinfo IMG: the quota tree's QGROUP_INFO items and their numbers (btk-debug), without generations
qinfo() {
	"$BTK_BUILD/bin/btk-debug" tree -t 8 "$1" | grep -A2 'QGROUP_INFO' | grep -v generation | sed 's/itemoff [0-9]* //; s/item [0-9]* //'
}

@test "rescue quota, repair: a quota tree lost on every copy is recreated and rescanned (the same numbers as before); btrfs check clean and compares them" {
	require_btk fsck debug
	require_tool btrfs
	local how
	for how in "--rescue quota" --repair; do
		image dup -O quota
		"$SMASH" tree 8 1 "$IMG" >/dev/null
		"$SMASH" tree 8 2 "$IMG" >/dev/null
		btk_run 60 "$FSCK" -q "$IMG"
		[ "$status" = 4 ] || { show_err; return 1; }
		btk_run 120 "$FSCK" $how --no-undo "$IMG"
		[ "$status" = 1 ] || { echo "$how" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
		if [ "$how" = --repair ]; then
			grep -q '^FIXED: \[E0606 tb-unreadable\] tree 8 bytenr [0-9]*: quota tree lost (1 block(s)) -> recreated and rescanned (limits and higher-level qgroups lost)$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		else
			grep -q '^quota tree recreated (1 old block(s) dropped: tree block [0-9]*: checksum mismatch): its limits, higher-level qgroups and their relations are lost$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
			grep -q '^quotas rescanned: 1 qgroup(s), 0 with new numbers, 1 made for subvolumes without one$' "$BTK_OUT"
		fi
		[ "$(qstatus "$IMG")" = "0x1(ON)" ]
		diff <(qinfo "$IMG.orig") <(qinfo "$IMG")
		[ -n "$(qinfo "$IMG")" ]
		both_clean "$IMG"
		! grep -Eq 'are different|inconsistent|[Rr]escan' "$BTK_OUT" "$BTK_ERR"
	done
	# a power cut at every write of the repair: the lost tree or the recreated one
	image single -O quota
	cuts repair 8
	image single -O quota
	cuts quota 8
}

@test "rescue uuid-tree, data-reloc-tree, free-space-tree: a tree that is right already is left as it is: nothing written, exit 0 (nothing needed doing); one that was just rebuilt is right" {
	require_btk fsck image
	image dup
	"$BTK_BUILD/bin/btk-image" snapshot "$IMG" / /snap1 >/dev/null
	# a new filesystem's uuid tree is right but not marked current (the kernel would rescan
	# it): the first run marks it (1), or finds it current (0)
	btk_run 60 "$FSCK" --rescue uuid-tree --no-undo "$IMG"
	[ "$status" -le 1 ] || { show_err; return 1; }
	cp --sparse=always "$IMG" "$IMG.orig"
	btk_run 60 "$FSCK" --rescue uuid-tree --no-undo "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	grep -q '^uuid tree: current, and holds exactly the 2 item(s) of the root items.* nothing rebuilt$' "$BTK_OUT"
	btk_run 60 "$FSCK" --rescue data-reloc-tree --no-undo --json "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "clean" and not r["data_reloc_summary"]["rebuilt"], r
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	rm -f "$BATS_TEST_TMPDIR/f.undo"
	btk_run 60 "$FSCK" --rescue free-space-tree -z "$BATS_TEST_TMPDIR/f.undo" --json "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "clean" and not r["fst_summary"]["rebuilt"], r
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	[ ! -e "$BATS_TEST_TMPDIR/f.undo" ]
	cmp "$IMG" "$IMG.orig"
	# a lost uuid tree or free-space tree is rebuilt (exit 1); a second run finds the rebuilt
	# one right (exit 0)
	local tree step
	for tree in 9 10; do
		step=uuid-tree
		[ $tree = 10 ] && step=free-space-tree
		"$SMASH" tree $tree 1 "$IMG" >/dev/null
		"$SMASH" tree $tree 2 "$IMG" >/dev/null
		btk_run 60 "$FSCK" --rescue $step --no-undo "$IMG"
		[ "$status" = 1 ] || { show_err; return 1; }
		cp --sparse=always "$IMG" "$IMG.rebuilt"
		btk_run 60 "$FSCK" --rescue $step --no-undo "$IMG"
		[ "$status" = 0 ] || { show_err; return 1; }
		cmp "$IMG" "$IMG.rebuilt"
	done
	grep -q '^free-space tree: says exactly the free space of the extent records: nothing rebuilt$' "$BTK_OUT"
	# one free range wrong: rebuilt (exit 1)
	"$BTK_BUILD/tests/corrupt" free-space "$IMG" >/dev/null
	btk_run 60 "$FSCK" --rescue free-space-tree --no-undo "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	btk_run 60 "$FSCK" "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
}

@test "rescue data-reloc-tree: the tree lost on both copies is rebuilt as mkfs makes it (its top directory); both checkers clean" {
	require_btk fsck debug
	require_tool btrfs
	local t=18446744073709551607
	image dup
	"$SMASH" tree $t 1 "$IMG" >/dev/null
	"$SMASH" tree $t 2 "$IMG" >/dev/null
	btk_run 60 "$FSCK" -q "$IMG"
	[ "$status" = 4 ]
	btk_run 60 "$FSCK" --rescue data-reloc-tree --no-undo --json "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "rescued" and r["data_reloc_summary"] == {"rebuilt": True, "old_blocks": 1}, r
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	# the same items as mkfs made (but for times and generations)
	diff <(items "$IMG.orig" $t | grep -Ev 'time|transid') <(items "$IMG" $t | grep -Ev 'time|transid')
	both_clean "$IMG"
}

# srcimg NAME SEED FILES MIN MAX [MKFS OPTION...]: $IMG, a btk-mkfs image (dup metadata) of 4
# directories of FILES files each of MIN to MAX random bytes, one in ten (the fourth) small
# enough to be inline when MIN > 4096
srcimg() {
	local d=$BATS_FILE_TMPDIR/$1src
	if [ ! -d "$d" ]; then
		python3 -c '
import os, random, sys
random.seed(int(sys.argv[2]))
lo, hi = int(sys.argv[4]), int(sys.argv[5])
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/d{d}")
    for i in range(int(sys.argv[3])):
        n = random.randint(300, 1500) if i % 10 == 3 and lo > 4096 else random.randint(lo, hi)
        # not ending in a zero byte: a file whose inode item is lost gets its size from its
        # data, where trailing zeros are taken as the kernel fill (libcore/repair/lostleaf.c)
        open(f"{sys.argv[1]}/d{d}/file{i:03d}", "wb").write(os.urandom(n - 1) + b"z")
' "$d" "$2" "$3" "$4" "$5"
	fi
	IMG=$BATS_TEST_TMPDIR/$1.img
	rm -f "$IMG"
	truncate -s 300M "$IMG"
	"$BTK_BUILD/bin/btk-mkfs" -q -f -m dup -d single "${@:6}" --rootdir "$d" "$IMG" >/dev/null
	cp --sparse=always "$IMG" "$IMG.orig"
}

# leafimg: 4 directories of 60 files, most of them larger than a sector (regular extents), a
# few small enough to be inline; its FS_TREE has many leaves
leafimg() {
	srcimg leaf 11 60 5000 50000
}

@test "repair: a leaf of the fs tree lost on every copy (first, middle, last): dropped and rebuilt from the names and data references left; both checkers clean; every file with data outside the leaf back with its name and content" {
	require_btk fsck debug image
	require_tool btrfs
	leafimg
	local leaves n i leaf line
	leaves=$(python3 "$BATS_TEST_DIRNAME/../lib/lost_leaf.py" "$BTK_BUILD" "$IMG.orig" --leaves)
	n=$(echo "$leaves" | wc -l)
	[ "$n" -ge 8 ] || { echo "only $n leaves" >&2; return 1; }
	for i in $(printf "%s\n" 1 2 $((n / 2)) $n | sort -un); do
		leaf=$(echo "$leaves" | sed -n "${i}p")
		cp --sparse=always "$IMG.orig" "$IMG"
		"$SMASH" zero "$leaf" "$IMG" >/dev/null
		btk_run 60 "$FSCK" -q "$IMG"
		[ "$status" = 4 ] || { show_err; return 1; }
		btk_run 180 "$FSCK" --repair --no-undo "$IMG"
		[ "$status" = 1 ] || { echo "leaf $leaf" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
		grep -Eq "^FIXED: \[E0606 tb-unreadable\] tree 5 bytenr $leaf: 1 lost block\(s\) from key \([0-9]+ [0-9]+ [0-9]+\) -> 0 items kept, [0-9]+ inodes, [0-9]+ names, [0-9]+ extents back \([0-9]+ old\), [0-9]+ in lost\+found$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		grep -q ', 0 left$' "$BTK_OUT"
		both_clean "$IMG"
		line=$(python3 "$BATS_TEST_DIRNAME/../lib/lost_leaf.py" "$BTK_BUILD" "$IMG.orig" "$leaf" "$IMG")
		echo "# $(echo "$line" | head -1)" >&3
		# what is lost is inline data (small files), which lived in the leaf alone
		! echo "$line" | awk -F", " '/^  lost:/ && /'"'"'lost'"'"'\)$/ { if ($3 + 0 > 2048) bad = 1 } END { exit !bad }' || { echo "$line" >&2; return 1; }
	done
}

@test "repair: a lost fs tree leaf of compressed files (zlib, lzo, zstd): each extent's compression found by decoding it, its length and the file's size from what it decodes to; both checkers clean; every file with data outside the leaf back with its name and content" {
	require_btk fsck debug image
	require_tool btrfs
	local d=$BATS_FILE_TMPDIR/zsrc alg leaf line
	[ -d "$d" ] || python3 -c '
import os, random, sys
random.seed(3)
words = [b"alpha", b"beta", b"gamma", b"delta", b"extent", b"leaf", b"\n"]
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/d{d}")
    for i in range(40):
        n = random.randint(300, 1500) if i % 10 == 3 else random.randint(5000, 200000)
        b = bytearray()
        while len(b) < n:
            # seeded bytes: the same files every run (a plain tail ending in a zero byte would
            # be cut short, as lostleaf.c says; with seed 3 none is)
            b += random.choice(words) + b" " + (random.randbytes(6) if random.random() < 0.05 else b"")
        open(f"{sys.argv[1]}/d{d}/file{i:03d}", "wb").write(bytes(b[:n]))
' "$d"
	for alg in zlib lzo zstd; do
		IMG=$BATS_TEST_TMPDIR/$alg.img
		truncate -s 300M "$IMG"
		"$BTK_BUILD/bin/btk-mkfs" -q -f -m dup -d single --compress=$alg --rootdir "$d" "$IMG" >/dev/null
		cp --sparse=always "$IMG" "$IMG.orig"
		leaf=$(python3 "$BATS_TEST_DIRNAME/../lib/lost_leaf.py" "$BTK_BUILD" "$IMG.orig" --leaves | sed -n 2p)
		[ -n "$leaf" ] || { echo "$alg: one leaf only" >&2; return 1; }
		"$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG" | grep -Eq "compression [0-9] \($alg\)" || { echo "$alg: nothing compressed" >&2; return 1; }
		"$SMASH" zero "$leaf" "$IMG" >/dev/null
		btk_run 180 "$FSCK" --repair --no-undo "$IMG"
		[ "$status" = 1 ] || { echo "$alg leaf $leaf" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
		grep -q ', 0 left$' "$BTK_OUT"
		both_clean "$IMG"
		line=$(python3 "$BATS_TEST_DIRNAME/../lib/lost_leaf.py" "$BTK_BUILD" "$IMG.orig" "$leaf" "$IMG")
		echo "# $alg: $(echo "$line" | head -1)" >&3
		# only inline data (small files) is lost; a compressed tail's size is exact
		! echo "$line" | grep "^  lost:.*trailing zeros" >&2
		! echo "$line" | awk -F", " '/^  lost:/ { if ($3 + 0 > 2048) bad = 1 } END { exit !bad }' || { echo "$line" >&2; return 1; }
		[ "$(echo "$line" | head -1 | awk '{ print $8 }')" -ge 20 ] || { echo "$line" >&2; return 1; }
	done
}

@test "repair: the lost first leaf of the fs tree holding the entries that name a subvolume and a snapshot: the entries come back from the root tree's ROOT_REF items; both checkers clean" {
	require_btk fsck debug image
	require_tool btrfs
	leafimg
	"$BTK_BUILD/bin/btk-image" subvol create "$IMG" /sv >/dev/null
	"$BTK_BUILD/bin/btk-image" snapshot "$IMG" / /snap >/dev/null
	local leaf
	leaf=$(python3 "$BATS_TEST_DIRNAME/../lib/lost_leaf.py" "$BTK_BUILD" "$IMG" --leaves | sed -n 1p)
	"$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG" | awk -v l="$leaf" '/^(leaf|node) / { on = $2 == l } on' | grep -q 'location key ([0-9]* ROOT_ITEM' || { echo "leaf $leaf names no subvolume" >&2; return 1; }
	"$SMASH" zero "$leaf" "$IMG" >/dev/null
	btk_run 180 "$FSCK" --repair --no-undo "$IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q ', 0 left$' "$BTK_OUT"
	both_clean "$IMG"
	btk_run 30 "$BTK_BUILD/bin/btk-image" ls "$IMG" /
	grep -qx sv "$BTK_OUT" && grep -qx snap "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	btk_run 30 "$BTK_BUILD/bin/btk-image" ls "$IMG" /snap/d1
	[ "$status" = 0 ] && grep -q file000 "$BTK_OUT"
}

@test "repair: a lost fs tree leaf: a power cut at every write leaves the old filesystem or the rebuilt one; SIGINT exits 32 with the old one" {
	require_btk fsck
	leafimg
	local leaf
	leaf=$(python3 "$BATS_TEST_DIRNAME/../lib/lost_leaf.py" "$BTK_BUILD" "$IMG.orig" --leaves | sed -n 3p)
	cuts repair "zero:$leaf"
}

# snapleafimg: leafimg with a snapshot and a read-only one of the top, then the top changed (a
# file removed, one touched, one added): the top copies the leaves it changes, the old ones
# (FULL_BACKREF) only the snapshots reach; the others all three share. $SNAPLEAVES: the leaves of
# the snapshot's tree (256) the top no longer reaches; $SHAREDLEAVES: those all three reach
snapleafimg() {
	leafimg
	"$BTK_BUILD/bin/btk-image" snapshot "$IMG" / /snap >/dev/null
	"$BTK_BUILD/bin/btk-image" snapshot -r "$IMG" / /ro >/dev/null
	"$BTK_BUILD/bin/btk-image" rm "$IMG" /d1/file005
	"$BTK_BUILD/bin/btk-image" touch "$IMG" /d2/file010
	printf 'new file\n' >"$BATS_TEST_TMPDIR/new"
	"$BTK_BUILD/bin/btk-image" put "$IMG" "$BATS_TEST_TMPDIR/new" /d3/new >/dev/null
	cp --sparse=always "$IMG" "$IMG.orig"
	local top snap
	top=$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG" | awk '/^leaf [0-9]+ items/ { print $2 }' | sort -u)
	snap=$("$BTK_BUILD/bin/btk-debug" tree -t 256 "$IMG" | awk '/^leaf [0-9]+ items/ { print $2 }' | sort -u)
	SNAPLEAVES=$(comm -13 <(echo "$top") <(echo "$snap"))
	SHAREDLEAVES=$(comm -12 <(echo "$top") <(echo "$snap"))
}

# same_files A B [inline]: every file under A is in B with the same content, or in the
# lost+found of its subvolume (snap/, ro/ or the top); with inline, a file of up to 2048 bytes
# may differ or be missing (inline data lives in the lost leaf only)
same_files() {
	local f c lf bad=0
	while IFS= read -r -d '' f; do
		cmp -s "$1/$f" "$2/$f" && continue
		[ -n "${3:-}" ] && [ "$(stat -c %s "$1/$f")" -le 2048 ] && continue
		case $f in ./snap/* | ./ro/*) lf=${f#./}; lf=$2/${lf%%/*}/lost+found ;; *) lf=$2/lost+found ;; esac
		for c in "$lf"/*; do cmp -s "$1/$f" "$c" && continue 2; done
		echo "$f differs or is missing" >&2
		bad=1
	done < <(cd "$1" && find . -type f -print0)
	return $bad
}

@test "repair: a lost leaf that snapshots share (every copy): the leaf the top copied away after the snapshots (full back references: its data named by its address) comes back from the top's unchanged inodes and the extents' places the top names; a leaf all three trees share is made again in each; both checkers clean; every snapshot file back" {
	require_btk fsck debug image
	require_tool btrfs
	snapleafimg
	[ -n "$SNAPLEAVES" ] && [ -n "$SHAREDLEAVES" ] || { echo "snapshot-only: $SNAPLEAVES; shared: $SHAREDLEAVES" >&2; return 1; }
	local leaf
	"$BTK_BUILD/bin/btk-image" get -r "$IMG.orig" / "$BATS_TEST_TMPDIR/a" >/dev/null
	for leaf in $(echo "$SNAPLEAVES" | sed -n 1p) $(echo "$SHAREDLEAVES" | sed -n 2p); do
		cp --sparse=always "$IMG.orig" "$IMG"
		"$SMASH" zero "$leaf" "$IMG" >/dev/null
		btk_run 60 "$FSCK" -q "$IMG"
		[ "$status" = 4 ] || { show_err; return 1; }
		btk_run 180 "$FSCK" --repair --no-undo "$IMG"
		[ "$status" = 1 ] || { echo "leaf $leaf" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
		grep -q ', 0 left$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		cp "$BTK_OUT" "$BATS_TEST_TMPDIR/repair.out"
		both_clean "$IMG"
		rm -rf "$BATS_TEST_TMPDIR/b"
		"$BTK_BUILD/bin/btk-image" get -r "$IMG" / "$BATS_TEST_TMPDIR/b" >/dev/null
		if echo "$SNAPLEAVES" | grep -qx "$leaf"; then
			# the snapshots' leaf came from the top, whose inodes but three are unchanged:
			# every file back but the data of the one removed, which only the lost leaf
			# placed (lost+found)
			grep -Eq "^FIXED: \[E0606 tb-unreadable\] tree 256 bytenr $leaf: .* -> [1-9][0-9]* items kept, .* [01] in lost\+found$" "$BATS_TEST_TMPDIR/repair.out" || { cat "$BATS_TEST_TMPDIR/repair.out" >&2; return 1; }
			same_files "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
		else
			# made again in each tree that reaches it: every one of them fixed
			local t
			for t in 5 256 257; do
				grep -Eq "^FIXED: \[E0606 tb-unreadable\] tree $t bytenr $leaf: " "$BATS_TEST_TMPDIR/repair.out" || { echo "tree $t" >&2; cat "$BATS_TEST_TMPDIR/repair.out" >&2; return 1; }
			done
			same_files "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b" inline
		fi
	done
}

@test "repair: a lost leaf that only snapshots reach: a power cut at every write leaves the old filesystem or the rebuilt one; SIGINT exits 32 with the old one" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow (~2 min): BTK_ORACLE_FULL=1 runs it (the lost-leaf power-cut case above covers the same write path; this adds the shared references and the source's items)"
	require_btk fsck debug image
	snapleafimg
	cuts repair "zero:$(echo "$SNAPLEAVES" | sed -n 1p)"
}

# nodeimg: 4 KiB nodes, 4 directories of 330 files (most a sector and more): its FS_TREE has three
# levels
nodeimg() {
	srcimg node 7 330 4200 6000 -n 4096
}

@test "repair: a lost node of the fs tree (a level-1 node, the level-2 root; every copy): the leaves below it are found by their extent records and their items come back; both checkers clean; every file back with its name and content" {
	require_btk fsck debug image
	require_tool btrfs
	nodeimg
	local root mid node
	root=$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG.orig" | awk '/^node [0-9]+ level 2/ { print $2; exit }')
	mid=$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG.orig" | awk '/^node [0-9]+ level 1/ { n++; if (n == 2) { print $2; exit } }')
	[ -n "$root" ] && [ -n "$mid" ] || { echo "no three levels" >&2; return 1; }
	"$BTK_BUILD/bin/btk-image" get -r "$IMG.orig" / "$BATS_TEST_TMPDIR/a" >/dev/null
	for node in "$mid" "$root"; do
		cp --sparse=always "$IMG.orig" "$IMG"
		"$SMASH" zero "$node" "$IMG" >/dev/null
		btk_run 60 "$FSCK" -q "$IMG"
		[ "$status" = 4 ] || { show_err; return 1; }
		btk_run 180 "$FSCK" --repair --no-undo "$IMG"
		[ "$status" = 1 ] || { echo "node $node" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
		grep -Eq "^FIXED: \[E0606 tb-unreadable\] tree 5 bytenr $node: 1 lost block\(s\) from key \([0-9]+ [0-9]+ [0-9]+\) -> [1-9][0-9]* items kept, 0 inodes, 0 names, 0 extents back \(0 old\), 0 in lost\+found$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		grep -q ', 0 left$' "$BTK_OUT"
		both_clean "$IMG"
		rm -rf "$BATS_TEST_TMPDIR/b"
		"$BTK_BUILD/bin/btk-image" get -r "$IMG" / "$BATS_TEST_TMPDIR/b" >/dev/null
		diff -r "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	done
}

@test "repair: the lost root leaf of a subvolume (every copy): the tree starts again from the data references; both checkers clean; every file with data outside the leaf in lost+found with its content" {
	require_btk fsck debug image
	require_tool btrfs
	local d=$BATS_TEST_TMPDIR/rsrc i root
	mkdir -p "$d/dir"
	# each ends in a non-zero byte: lost+found sizes come from the data (trailing zeros cut)
	for i in 1 2 3 4 5; do { head -c $((i * 5000 - 1)) /dev/urandom; printf z; } >"$d/dir/f$i"; done
	echo inline >"$d/small"
	IMG=$BATS_TEST_TMPDIR/root.img
	truncate -s 200M "$IMG"
	"$BTK_BUILD/bin/btk-mkfs" -q -f -m dup --rootdir "$d" "$IMG" >/dev/null
	root=$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG" | awk '/^leaf [0-9]+ items/ { print $2; exit }')
	[ "$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG" | grep -c '^leaf [0-9]* items')" = 1 ]
	"$SMASH" zero "$root" "$IMG" >/dev/null
	btk_run 180 "$FSCK" --repair --no-undo "$IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -Eq "^FIXED: \[E0606 tb-unreadable\] tree 5 bytenr $root: 1 lost block\(s\) from key \(0 0 0\) -> 0 items kept, [0-9]+ inodes, [0-9]+ names, 5 extents back \(0 old\), 5 in lost\+found$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	both_clean "$IMG"
	"$BTK_BUILD/bin/btk-image" get -r "$IMG" / "$BATS_TEST_TMPDIR/b" >/dev/null
	(cd "$d/dir" && sha256sum f* | awk '{ print $1 }' | sort) >"$BATS_TEST_TMPDIR/want"
	(cd "$BATS_TEST_TMPDIR/b/lost+found" && sha256sum * | awk '{ print $1 }' | sort) >"$BATS_TEST_TMPDIR/got"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
}

@test "repair: a lost root node of the fs tree: a power cut at every write leaves the old filesystem or the rebuilt one; SIGINT exits 32 with the old one" {
	require_btk fsck debug
	leafimg
	local node
	node=$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$IMG.orig" | awk '/^node [0-9]+ level 1/ { print $2; exit }')
	[ -n "$node" ]
	cuts repair "zero:$node"
}

# snapshots IMG: a snapshot and a read-only one of the top subvolume, then both sides changed
# (the blocks they shared are copied: the old ones only the other side reaches, FULL_BACKREF)
snapshots() {
	local i
	"$BTK_BUILD/bin/btk-image" snapshot "$1" / /snap >/dev/null
	"$BTK_BUILD/bin/btk-image" snapshot -r "$1" / /ro >/dev/null
	for i in 3 50 120 190; do
		"$BTK_BUILD/bin/btk-image" rm "$1" /small/n$i
		"$BTK_BUILD/bin/btk-image" touch "$1" /snap/small/n$((i + 1))
	done
	"$BTK_BUILD/bin/btk-image" rm "$1" /big/f2
}

@test "rescue extent-tree: the extent tree lost on every copy (single, dup, mixed block groups; snapshots changed on both sides) is rebuilt with every record it had; both checkers clean (lowmem too)" {
	require_btk fsck image debug
	require_tool btrfs
	local prof
	for prof in single dup mixed; do
		if [ $prof = mixed ]; then
			IMG=$BATS_TEST_TMPDIR/mixed.img
			rm -f "$IMG"
			truncate -s 300M "$IMG"
			"$BTK_BUILD/bin/btk-mkfs" -q -f -M --rootdir "$BATS_FILE_TMPDIR/src" "$IMG" >/dev/null
		else
			image $prof
		fi
		snapshots "$IMG"
		cp --sparse=always "$IMG" "$IMG.orig"
		records "$IMG.orig" >"$BATS_TEST_TMPDIR/rec.orig"
		grep -q 'FULL_BACKREF' "$BATS_TEST_TMPDIR/rec.orig" || { echo "$prof: no shared block" >&2; return 1; }
		"$SMASH" tree 2 1 "$IMG" >/dev/null
		[ $prof = dup ] && "$SMASH" tree 2 2 "$IMG" >/dev/null
		btk_run 60 "$FSCK" -q "$IMG"
		[ "$status" = 4 ] || { show_err; return 1; }
		btk_run 120 "$FSCK" --rescue extent-tree --no-undo "$IMG"
		[ "$status" = 1 ] || { show_err; return 1; }
		grep -Eq '^extent tree rebuilt from [0-9]+ tree\(s\): [0-9]+ tree block\(s\) \([1-9][0-9]* with full back references\), [1-9][0-9]* data extent\(s\) with [0-9]+ reference\(s\), 0 file extent item\(s\) left without a record; [0-9]+ old block\(s\) dropped, 0 bytes of checksums without data dropped; the checker.s errors [1-9][0-9]* before, 0 after$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		records "$IMG" >"$BATS_TEST_TMPDIR/rec.new"
		diff "$BATS_TEST_TMPDIR/rec.orig" "$BATS_TEST_TMPDIR/rec.new" >&2 || { echo "$prof: records differ" >&2; return 1; }
		both_clean "$IMG"
		btk_run 120 btrfs check --readonly --mode=lowmem "$IMG"
		[ "$status" = 0 ] || { show_err; return 1; }
	done
}

@test "rescue extent-tree: --json; the corpus's fuzzed extent tree and block group items (bko-155621, mixed block groups) end clean for both checkers" {
	require_btk fsck
	require_tool btrfs
	corpus_img fuzz-images__bko-155621-bad-block-group-offset
	btk_run 60 "$FSCK" --rescue extent-tree --no-undo --json "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["extent_summary"]
assert r["result"] == "rescued" and r["extent_left"] == [], r
assert s["rebuilt"] and s["tree_blocks"] == 5 and s["errors_before"] > 0 and s["errors_after"] == 0, s
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	both_clean "$IMG"
	btk_run 60 btrfs check --readonly --mode=lowmem "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
}

@test "repair: an extent tree lost on every copy, or records no fix can parse (bko-155621), is rebuilt from the trees by one --repair; both checkers clean" {
	require_btk fsck image
	require_tool btrfs
	image dup
	snapshots "$IMG"
	"$SMASH" tree 2 1 "$IMG" >/dev/null
	"$SMASH" tree 2 2 "$IMG" >/dev/null
	btk_run 180 "$FSCK" --repair --no-undo "$IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -Eq '^FIXED: \[E0606 tb-unreadable\] tree 2 bytenr [0-9]+: .* -> extent tree rebuilt from the trees$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	grep -q ', 0 left$' "$BTK_OUT"
	both_clean "$IMG"
	# inline references that do not parse: each record's fix fails, the rebuild does not read them
	corpus_img fuzz-images__bko-155621-bad-block-group-offset
	btk_run 120 "$FSCK" --repair --no-undo --json "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "repaired" and r["errors_after"] == 0, r
assert any(f["after"] == "extent tree rebuilt from the trees" and f["code"] == "E0703" for f in r["fixes"]), r["fixes"]
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	both_clean "$IMG"
}

@test "rescue extent-tree: a tree the checker finds no extent problem in is left as it is (exit 0, nothing written)" {
	require_btk fsck image
	image dup
	snapshots "$IMG"
	cp --sparse=always "$IMG" "$IMG.orig"
	btk_run 60 "$FSCK" --rescue extent-tree --no-undo "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	grep -q '^extent tree: the checker finds no extent, back reference, block group or free-space problem: nothing rebuilt$' "$BTK_OUT"
	cmp "$IMG" "$IMG.orig"
}

@test "rescue extent-tree: refused, the image untouched: a log tree, a tree block that does not read, file extent items naming data outside the data chunks (their space would be given out again)" {
	require_btk fsck
	local sum
	corpus_copy 065-valid-log-tree__compressed
	sum=$(sha256_of "$CIMG")
	btk_run 60 "$FSCK" --rescue extent-tree --no-undo "$CIMG"
	[ "$status" = 8 ] || { show_err; return 1; }
	grep -q 'extent tree not rebuilt: .*has a log tree.*replay it first (--rescue replay-log)' "$BTK_ERR"
	[ "$(sha256_of "$CIMG")" = "$sum" ]
	image single
	"$SMASH" tree 5 1 leaf "$IMG" >/dev/null
	cp --sparse=always "$IMG" "$IMG.damaged"
	btk_run 60 "$FSCK" --rescue extent-tree --no-undo "$IMG"
	[ "$status" = 8 ] || { show_err; return 1; }
	grep -q 'extent tree not rebuilt: tree 5: block [0-9]* (level 0) does not read (.*): without what it holds the rebuilt extent tree would give its space out again' "$BTK_ERR" || { cat "$BTK_ERR" >&2; return 1; }
	cmp "$IMG" "$IMG.damaged"
	# file extent items naming data that cannot be an extent (outside the data chunks):
	# listed, nothing written (their bytes would be free space to the new tree)
	corpus_copy 018-leaf-crossing-stripes__default_case
	sum=$(sha256_of "$CIMG")
	btk_run 60 "$FSCK" --rescue extent-tree --no-undo "$CIMG"
	[ "$status" = 12 ] || { show_err; return 1; }
	grep -q '^NO RECORD: data \[[0-9]*, +[0-9]*) named by tree 256 inode 257 offset [0-9]*: in a chunk without data$' "$BTK_OUT"
	grep -q 'extent tree not rebuilt: 36 file extent item(s) name data that cannot be given a record (listed)' "$BTK_ERR"
	[ "$(sha256_of "$CIMG")" = "$sum" ]
}

@test "rescue extent-tree: a power cut at every write leaves the old filesystem or the rebuilt one; SIGINT exits 32 with the old one" {
	require_btk fsck image
	image single
	snapshots "$IMG"
	VERIFIED=1 cuts extent-tree 2
}
