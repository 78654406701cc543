#!/usr/bin/env bats
# btk-fsck --repair on kernel-made images (issue 25): one semantic corruption at a time
# (tests/lib/corrupt.c) on the read-path matrix's rich-default image; the repair must leave
# btk-fsck and btrfs check clean, the kernel must mount the result, and every file must read as
# it did before the corruption (none of these corruptions destroys data). Run under the
# machine-wide kernel lock (HACKING.md).

load ../bats/helpers

FSCK=$BTK_BUILD/bin/btk-fsck
CORRUPT=$BTK_BUILD/tests/corrupt

# listing MNT: "sha256  path" of every file under MNT, sorted
listing() {
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# codes IMG: the sorted problem codes btk-fsck reports on IMG, one line
codes() {
	"$FSCK" --json "$1" | python3 -c 'import json,sys; print(" ".join(sorted(e["code"] for e in json.load(sys.stdin)["errors"])))'
}

# mounted_listing IMG OUT: mounts IMG read-only (btrfs check must be clean first), lists, unmounts
mounted_listing() {
	local mnt=$BATS_TEST_TMPDIR/mnt rc=0
	mkdir -p "$mnt"
	btrfs check --readonly "$1" >/dev/null 2>&1 || {
		echo "btrfs check not clean: not mounting $1" >&2
		return 1
	}
	mount -o loop,ro "$1" "$mnt" || return 1
	listing "$mnt" >"$2" || rc=1
	umount "$mnt" || rc=1
	return $rc
}

@test "kernel image: each fixable corruption repaired, both checkers clean, mounts, files unchanged" {
	require_loop
	require_btk fsck
	require_tool btrfs
	[ -x "$CORRUPT" ] || skip "corrupt helper not built"
	oracle_image rich-default -C rich
	local base=$BATS_TEST_TMPDIR/base.img kind
	cp --sparse=always "${IMG_DEVS[0]}" "$base"
	mounted_listing "$base" "$BATS_TEST_TMPDIR/before.list"
	[ -s "$BATS_TEST_TMPDIR/before.list" ]
	# what btk-fsck says of the uncorrupted image (clean, or false alarms of the checker that
	# the repair must neither fix nor add to): the repaired image must say the same
	local base_codes
	base_codes=$(codes "$base")
	[ -z "$base_codes" ] || echo "# base image: btk-fsck reports $base_codes (btrfs check: clean)" >&3
	# every class of tests/lib/corrupt.c that has a fix (libcore/repair/fixes.def) and destroys
	# no data (copy1, copy2, csum-leaf: one copy or checksums only); a second set behind
	# BTK_ORACLE_FULL=1 (the same fixes, other trees or items). Not here: the classes
	# fixes.def marks "not repairable" (free-space tree, qgroups, names' hashes and types,
	# file extent overlaps, ...), fe-bytenr (its record comes back, but the kernel image's
	# qgroups and free-space tree then differ: not repairable yet), the fuzz and data kinds
	# (they destroy what they hit). data-missing is repaired by the extent tree rebuild,
	# which must give the blocks a relocation wrote (the image's paused balance leaves
	# some in the fs tree: header RELOC flag) FULL_BACKREF and shared data references, or
	# btrfs check finds "bad full backref"; reloc-flag makes one more such leaf.
	local kinds="nlink nbytes dir-isize bg-used super-devs inline-ram dir-index extent-refs
		meta-missing data-missing csum copy1 leaf-gen sys-array-type dev-extent root-orphan"
	[ -z "${BTK_ORACLE_FULL:-}" ] || kinds+=" meta-refs backref index-name leaf-csum-zero copy2
		csum-leaf leaf-gap node-gen extra-extent bg-len symlink-size super-copy reloc-flag"
	for kind in $kinds; do
		local img=$BATS_TEST_TMPDIR/$kind.img
		cp --sparse=always "$base" "$img"
		run "$CORRUPT" "$kind" "$img"
		[ "$status" = 0 ] || { echo "corrupt $kind: $output" >&2; return 1; }
		[ "$(codes "$img")" != "$base_codes" ] || { echo "$kind: not detected" >&2; return 1; }
		btk_run 300 "$FSCK" --repair "$img"
		assert_no_crash
		[ $((status & 1)) = 1 ] && [ $((status & ~5)) = 0 ] ||
			{ show_err; cat "$BTK_OUT" >&2; echo "$kind: exit $status" >&2; return 1; }
		[ "$(codes "$img")" = "$base_codes" ] ||
			{ "$FSCK" "$img" >&2; echo "$kind: btk-fsck not back to the base's report" >&2; return 1; }
		mounted_listing "$img" "$BATS_TEST_TMPDIR/$kind.list" || { echo "$kind: mount" >&2; return 1; }
		diff "$BATS_TEST_TMPDIR/before.list" "$BATS_TEST_TMPDIR/$kind.list" >&2 ||
			{ echo "$kind: files differ" >&2; return 1; }
		echo "# $kind: repaired, clean, mounted, files as before" >&3
		rm -f "$img"
	done
}
