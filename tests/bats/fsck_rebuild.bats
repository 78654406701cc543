#!/usr/bin/env bats
# btk-fsck --rescue csum-tree (issue 26): the checksum tree rebuilt from the data on btk-mkfs
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

# image PROF: a fresh 300 MiB image with metadata and data PROF in $IMG (original: .orig)
image() {
	IMG=$BATS_TEST_TMPDIR/$1.img
	rm -f "$IMG"
	truncate -s 300M "$IMG"
	"$BTK_BUILD/bin/btk-mkfs" -q -f -m "$1" -d "$1" --rootdir "$BATS_FILE_TMPDIR/src" "$IMG" >/dev/null
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

# cuts STEP TREE [leaf]: tree TREE's top block (or first leaf) of $IMG smashed; a power cut at
# every write of --rescue STEP leaves the old filesystem (the same errors) or the rebuilt one
# (clean but for superblock mirrors not yet written); SIGINT before one of the first writes
# exits 32 with the old one
cuts() {
	local step=$1 tree=$2 where=${3:-}
	"$SMASH" tree "$tree" 1 $where "$IMG" >/dev/null
	cp --sparse=always "$IMG" "$IMG.damaged"
	"$FSCK" --json "$IMG.damaged" | python3 -c 'import json,sys; print(sorted(e["code"] for e in json.load(sys.stdin)["errors"]))' >"$BATS_TEST_TMPDIR/old-errors"
	grep -q E0 "$BATS_TEST_TMPDIR/old-errors"
	cp --sparse=always "$IMG.damaged" "$IMG.full"
	"$FSCK" --rescue "$step" --no-undo "$IMG.full" >/dev/null || [ $? = 1 ]
	local n old=0 new=0 done=
	for n in $(seq 0 300); do
		cp --sparse=always "$IMG.damaged" "$IMG"
		BTK_FAULT=stop:$n btk_run 120 "$FSCK" --rescue "$step" --no-undo "$IMG"
		assert_no_crash
		[ "$status" = 1 ] || { show_err; return 1; }
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
		BTK_TEST_SIGINT_AT=$n btk_run 120 "$FSCK" --rescue "$step" --no-undo "$IMG"
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

@test "rescue csum-tree, free-space-tree, uuid-tree: a power cut at every write leaves the old filesystem or the rebuilt one; SIGINT exits 32 with the old one" {
	require_btk fsck
	image single
	cuts csum-tree 7 leaf
	image single
	cuts free-space-tree 10
	image single
	cuts uuid-tree 9
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

@test "rescue csum-tree, free-space-tree, uuid-tree: a filesystem with a log tree is refused (replay it first), the image untouched" {
	require_btk fsck
	local src img=$BATS_TEST_TMPDIR/log.img step
	src=$(corpus_src) || skip "corpus not available"
	xz -dc "$src/065-valid-log-tree__compressed.raw.xz" | cp --sparse=always /dev/stdin "$img"
	truncate -s "$(awk '$1 == "065-valid-log-tree__compressed" { print $4 }' "$src/MANIFEST.tsv")" "$img"
	local sum
	sum=$(sha256sum <"$img")
	for step in csum-tree free-space-tree uuid-tree; do
		btk_run 60 "$FSCK" --rescue $step --no-undo "$img"
		[ "$status" = 8 ] || { echo "$step: status $status" >&2; show_err; return 1; }
		grep -q 'has a log tree.*replay it first (--rescue replay-log)' "$BTK_ERR"
		[ "$(sha256sum <"$img")" = "$sum" ]
	done
}
