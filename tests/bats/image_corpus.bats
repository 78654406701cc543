#!/usr/bin/env bats
# btk-image dump/restore against btrfs-image on the corpus (../shared/corpus/btrfs-progs-fsck):
# for every image btrfs-image dumps (and restores), btk's dump holds every tree block
# btrfs-image's holds (the blocks the extent tree lists, damaged ones with a valid checksum
# included), is byte for byte btrfs-image's when it holds no more (blocks the trees reach
# that the extent tree does not list, which btrfs-image leaves out), and btk's restore of
# its own dump shows exactly the original's trees (btrfs inspect-internal dump-tree).
# No root needed.

load helpers

setup() {
	require_btk image
	require_tool btrfs-image
	IMG=$BTK_BUILD/bin/btk-image
	BLOCKS=$BTK_ROOT/tests/lib/metadump_blocks.py
	D=$BATS_TEST_TMPDIR
	src=$(corpus_src) || skip "corpus not found (../shared/corpus/btrfs-progs-fsck)"
	CORPUS=$(corpus_unpack "$src")
}

# dumptree IMG: dump-tree's output with the image's name taken out
dumptree() {
	# --noscan: a scan reads the machine's block devices, and a loop device that another test
	# attaches or detaches meanwhile put "ERROR: cannot scan /dev/loopN" into one dump only
	btrfs inspect-internal dump-tree --noscan "$1" 2>&1 | sed "s|$1|IMG|g"
}

@test "corpus: btk's dump holds btrfs-image's tree blocks (byte for byte when no more); btk's restore shows the original's trees" {
	local n=0 same=0 img name bad=() refused=()
	for img in "$CORPUS"/*.raw; do
		name=$(basename "$img" .raw)
		rm -f "$D"/*.img
		timeout 120 btrfs-image "$img" "$D/bi.img" >/dev/null 2>&1 || {
			refused+=("$name:dump:$?")
			continue
		}
		timeout 120 btrfs-image -r "$D/bi.img" "$D/bi-r.img" >/dev/null 2>&1 || {
			refused+=("$name:restore:$?")
			continue
		}
		n=$((n + 1))
		btk_run 120 "$IMG" dump "$img" "$D/btk.img"
		assert_no_crash
		python3 "$BLOCKS" "$D/bi.img" | sort >"$D/bi.set"
		python3 "$BLOCKS" "$D/btk.img" | sort >"$D/btk.set"
		if [ -n "$(comm -23 "$D/bi.set" "$D/btk.set")" ]; then
			bad+=("$name: blocks only in btrfs-image's dump: $(comm -23 "$D/bi.set" "$D/btk.set" | tr '\n' ' ')")
			continue
		fi
		if cmp -s "$D/bi.set" "$D/btk.set"; then
			same=$((same + 1))
			# the same blocks: a stored dump (-c0) is byte for byte btrfs-image's
			cmp -s "$D/bi.img" "$D/btk.img" ||
				bad+=("$name: the same blocks, but the dumps differ: $(cmp "$D/bi.img" "$D/btk.img" 2>&1)")
		fi
		btk_run 120 "$IMG" restore "$D/btk.img" "$D/btk-r.img"
		if [ "$status" != 0 ]; then
			bad+=("$name: restore of btk's dump: $(tail -1 "$BTK_ERR")")
			continue
		fi
		diff <(dumptree "$img") <(dumptree "$D/btk-r.img") >"$D/diff" ||
			bad+=("$name: the restore's dump-tree differs: $(head -4 "$D/diff" | tr '\n' ' ')")
	done
	echo "$n images dumped by btrfs-image, $same with the same tree blocks in both dumps" >&2
	[ ${#bad[@]} = 0 ] || {
		printf '%s\n' "${bad[@]}" >&2
		false
	}
	[ "$n" -ge 30 ] || {
		echo "btrfs-image refused (name:step:status): ${refused[*]}" >&2
		false
	}
}

@test "corpus: damaged blocks with a valid checksum are dumped as they are (002, 003: the same blocks as btrfs-image's)" {
	local c
	for c in 002-bad-transid__default_case 003-shift-offsets__default_case; do
		[ -e "$CORPUS/$c.raw" ] || skip "$c not in the corpus"
		btrfs-image "$CORPUS/$c.raw" "$D/bi-$c.img" >/dev/null 2>&1
		btk_run 120 "$IMG" dump --json "$CORPUS/$c.raw" "$D/btk-$c.img"
		[ "$status" = 0 ] || { show_err; false; }
		grep -q '"skipped": 0' "$BTK_OUT"
		diff <(python3 "$BLOCKS" "$D/bi-$c.img" | sort) <(python3 "$BLOCKS" "$D/btk-$c.img" | sort) >&2
	done
}

@test "corpus: restore takes btk's own dump of 055 (the superblock counts 8 devices, the chunk tree 1)" {
	local c=055-super-num-devs-mismatch__default
	[ -e "$CORPUS/$c.raw" ] || skip "$c not in the corpus"
	btk_run 120 "$IMG" dump "$CORPUS/$c.raw" "$D/d.img"
	[ "$status" = 0 ] || { show_err; false; }
	btk_run 120 "$IMG" restore "$D/d.img" "$D/r.img"
	[ "$status" = 0 ] || { show_err; false; }
	btrfs check --readonly "$D/r.img" >/dev/null 2>&1
	btrfs inspect-internal dump-super "$D/r.img" | grep -Eq '^num_devices[[:space:]]+1$'
	diff <(dumptree "$CORPUS/$c.raw") <(dumptree "$D/r.img") >&2
}
