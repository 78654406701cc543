#!/usr/bin/env bats
# btk-fsck --rescue chunk-tree (issue 26): the chunk tree rebuilt from the dev extents and block
# group items found by a scan of the devices, on btk-mkfs images whose chunk tree is lost (its
# block zeroed on every copy, tests/lib/smash.c) or whose superblocks name the wrong chunk root
# (tests/lib/corrupt.c chunk-root-ptr): afterwards the chunk tree holds the same items, both
# checkers are clean and every file reads the same; evidence that is missing is refused with
# nothing written; a power cut at any write and a SIGINT leave the old or the rebuilt
# filesystem. Kernel-made images and btrfs rescue chunk-recover: tests/oracle/fsck_chunk_rebuild.bats.

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck
SMASH=$BTK_BUILD/tests/smash
CORRUPT=$BTK_BUILD/tests/corrupt

setup_file() {
	local d=$BATS_FILE_TMPDIR/src
	mkdir -p "$d/dir"
	for i in 1 2 3 4 5 6; do head -c $((i * 900000)) /dev/urandom >"$d/f$i"; done
	for i in $(seq 1 50); do echo "file $i" >"$d/dir/n$i"; done
}

# image PROF: a fresh 300 MiB image with metadata PROF in $IMG (original: .orig)
image() {
	IMG=$BATS_TEST_TMPDIR/$1.img
	rm -f "$IMG"
	truncate -s 300M "$IMG"
	"$BTK_BUILD/bin/btk-mkfs" -q -f -m "$1" --rootdir "$BATS_FILE_TMPDIR/src" "$IMG" >/dev/null
	cp --sparse=always "$IMG" "$IMG.orig"
}

chunk_root() {
	btrfs inspect-internal dump-super "$1" | awk '$1 == "chunk_root" { print $2 }'
}

# the chunk tree's items (not its block headers)
chunk_items() {
	btrfs inspect-internal dump-tree -t chunk "$1" | grep -Ev '^(leaf|node|chunk tree|fs uuid|chunk uuid|btrfs-progs)'
}

# every file's content, by name
contents() {
	local f
	for f in f1 f2 f3 f4 f5 f6 dir/n1 dir/n50; do
		echo "$f $("$BTK_BUILD/bin/btk-image" cat "$1" "/$f" | sha256sum)"
	done
}

@test "rescue chunk-tree: the chunk tree's block lost on every copy (single, dup) or the chunk root pointer wrong: rebuilt with the same items, both checkers clean, every file the same" {
	require_btk fsck
	require_tool btrfs
	local prof how
	for prof in single dup; do
		for how in zero pointer; do
			image $prof
			contents "$IMG" >"$BATS_TEST_TMPDIR/want"
			chunk_items "$IMG" >"$BATS_TEST_TMPDIR/items"
			if [ $how = zero ]; then
				"$SMASH" zero "$(chunk_root "$IMG")" "$IMG" >/dev/null
			else
				"$CORRUPT" chunk-root-ptr "$IMG" >/dev/null
			fi
			btk_run 60 "$FSCK" -q "$IMG"
			[ "$status" = 8 ] || { show_err; return 1; }
			btk_run 120 "$FSCK" --rescue chunk-tree --no-undo "$IMG"
			[ "$status" = 1 ] || { echo "$prof $how" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
			grep -Eq '^chunk tree rebuilt \(1 block\(s\) did not read\): a scan of 314572800 bytes found [0-9]+ tree block\(s\); [0-9]+ chunk\(s\) \(1 system\) from [0-9]+ dev extent\(s\) and [0-9]+ block group item\(s\), [0-9]+ with the stripe order of an older chunk item; 1 device item\(s\); [1-9][0-9]* found block\(s\) where the new map puts them, 0 elsewhere; 1 old block\(s\) dropped$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
			btk_run 120 "$FSCK" --check-data-csum "$IMG"
			[ "$status" = 0 ] || { show_err; return 1; }
			btk_run 120 btrfs check --readonly --check-data-csum "$IMG"
			[ "$status" = 0 ] || { show_err; return 1; }
			chunk_items "$IMG" | diff "$BATS_TEST_TMPDIR/items" - >&2
			contents "$IMG" | diff "$BATS_TEST_TMPDIR/want" - >&2
		done
	done
}

@test "rescue chunk-tree: a chunk tree that reads whole is left alone (nothing written); --json says what was rebuilt" {
	require_btk fsck
	image dup
	btk_run 60 "$FSCK" --rescue chunk-tree --no-undo "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	grep -qx 'chunk tree: reads whole: nothing rebuilt' "$BTK_OUT"
	cmp "$IMG" "$IMG.orig"
	"$SMASH" zero "$(chunk_root "$IMG")" "$IMG" >/dev/null
	btk_run 120 "$FSCK" --rescue chunk-tree --json --no-undo "$IMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["chunk_summary"]
assert s["rebuilt"] and not s["whole"] and s["bad_blocks"] == 1, s
assert s["chunks"] == s["block_groups"] >= 3 and s["sys_chunks"] == 1 and s["devices"] == 1, s
assert s["misplaced"] == 0 and s["placed"] > 0 and s["old_blocks"] == 1, s
assert r["result"] == "rescued", r
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
}

@test "rescue chunk-tree: the dev tree lost as well: refused in one line naming what is missing, nothing written" {
	require_btk fsck
	require_tool btrfs
	image single
	local dev
	dev=$(btrfs inspect-internal dump-tree -t root "$IMG" | awk '/key \(DEV_TREE ROOT_ITEM/ { getline; for (i = 1; i <= NF; i++) if ($i == "bytenr") print $(i + 1) }')
	[ -n "$dev" ]
	"$SMASH" zero "$dev" "$IMG" >/dev/null
	"$SMASH" zero "$(chunk_root "$IMG")" "$IMG" >/dev/null
	cp "$IMG" "$IMG.damaged"
	btk_run 120 "$FSCK" --rescue chunk-tree --no-undo "$IMG"
	[ "$status" = 8 ] || { show_err; return 1; }
	[ "$(wc -l <"$BTK_ERR")" = 1 ] || { cat "$BTK_ERR" >&2; return 1; }
	grep -Eq "^btk-fsck: .*: chunk tree not rebuilt: the scan of [0-9]+ bytes found [0-9]+ tree block\(s\), 0 dev extent\(s\) and [0-9]+ block group item\(s\): nothing to rebuild the chunk tree from$" "$BTK_ERR" || { cat "$BTK_ERR" >&2; return 1; }
	cmp "$IMG" "$IMG.damaged"
}

@test "repair: a chunk tree that does not read is rebuilt first by --repair; both checkers clean" {
	require_btk fsck
	require_tool btrfs
	image dup
	"$CORRUPT" chunk-root-ptr "$IMG" >/dev/null
	btk_run 180 "$FSCK" --repair --no-undo "$IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q '^chunk tree rebuilt (1 block(s) did not read)' "$BTK_OUT"
	btk_run 120 "$FSCK" "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 120 btrfs check --readonly "$IMG"
	[ "$status" = 0 ] || { show_err; return 1; }
}

@test "rescue chunk-tree: a power cut at every write leaves the old filesystem or the rebuilt one; SIGINT exits 32 with the old one" {
	require_btk fsck
	image dup
	"$SMASH" zero "$(chunk_root "$IMG")" "$IMG" >/dev/null
	cp --sparse=always "$IMG" "$IMG.damaged"
	cp --sparse=always "$IMG" "$IMG.full"
	"$FSCK" --rescue chunk-tree --no-undo "$IMG.full" >/dev/null || [ $? = 1 ]
	local n old=0 new=0 done=
	for n in $(seq 0 100); do
		cp --sparse=always "$IMG.damaged" "$IMG"
		BTK_FAULT=stop:$n btk_run 120 "$FSCK" --rescue chunk-tree --no-undo "$IMG"
		assert_no_crash
		# the re-check of the new state before the superblocks sees the writes the cut
		# kept from the disk, and writes no superblock
		if [ "$status" = 8 ] && grep -q 'nothing written' "$BTK_ERR"; then
			btk_run 120 "$FSCK" -q "$IMG"
			[ "$status" = 8 ] || { echo "stop:$n: refused, not the old filesystem" >&2; return 1; }
			old=$((old + 1))
			continue
		fi
		[ "$status" = 1 ] || { show_err; return 1; }
		cmp -s "$IMG" "$IMG.full" && { done=$n; break; }
		# the old filesystem: the chunk tree still lost (the checker stops at the root
		# tree); the new one: clean but for superblock mirrors not yet written
		btk_run 120 "$FSCK" --json "$IMG"
		case $(python3 -c '
import json, sys
codes = sorted(e["code"] for e in json.load(open(sys.argv[1]))["errors"])
print("old" if codes == ["E0113"] else "new" if all(c in ("E0102", "E0103", "E0115") for c in codes) else "broken")
' "$BTK_OUT") in
		old) old=$((old + 1)) ;;
		new) new=$((new + 1)) ;;
		*) echo "stop:$n: neither the old nor the new filesystem" >&2; cat "$BTK_OUT" >&2; return 1 ;;
		esac
	done
	[ -n "$done" ] && [ $old -ge 3 ] || { echo "old $old new $new, last write ${done:-not reached}" >&2; return 1; }
	echo "# chunk-tree: $done writes: old $old, new $new" >&3
	for n in 1 2 3; do
		cp --sparse=always "$IMG.damaged" "$IMG"
		BTK_TEST_SIGINT_AT=$n btk_run 120 "$FSCK" --rescue chunk-tree --no-undo "$IMG"
		[ "$status" = 32 ] || { show_err; return 1; }
		grep -q 'interrupted' "$BTK_ERR"
		btk_run 120 "$FSCK" -q "$IMG"
		[ "$status" = 8 ] || { echo "SIGINT at $n: not the old filesystem" >&2; show_err; return 1; }
	done
}
