# btk-fsck test helpers shared by tests/bats/fsck.bats (images made without the kernel) and
# tests/oracle/fsck.bats (kernel-populated and mounted images).

FSCK=$BTK_BUILD/bin/btk-fsck

# a clean image from mkfs.btrfs alone (no root needed); extra args go to mkfs.btrfs
mkfs_image() {
	local img=$BATS_TEST_TMPDIR/mkfs.img
	rm -f "$img"
	truncate -s "${SIZE:-256M}" "$img"
	mkfs.btrfs -q -f "$@" "$img" >/dev/null 2>&1 || {
		echo "mkfs.btrfs $* failed" >&2
		return 1
	}
	IMG=$img
}

# clean IMG...: btrfs check agrees it is clean, btk-fsck exits 0 and says so
# (several devices: btrfs check needs them scanned as loop devices, so the verdict comes from
# the log mkimg.sh keeps of its run after population)
assert_clean() {
	local log=$(dirname "$1")/check-after.log
	if [ $# -gt 1 ] && [ -f "$log" ]; then
		cp "$log" "$BATS_TEST_TMPDIR/btrfs.out"
		grep -q "no error found" "$log"
	else
		btrfs check --readonly "$@" >"$BATS_TEST_TMPDIR/btrfs.out" 2>&1
	fi || {
		echo "btrfs check finds errors: the image is not clean" >&2
		tail -5 "$BATS_TEST_TMPDIR/btrfs.out" >&2
		return 1
	}
	btk_run 300 "$FSCK" --check-data-csum "$@"
	assert_no_crash
	if [ "$status" != 0 ] || ! grep -q "no error found" "$BTK_OUT"; then
		show_err
		grep ERROR "$BTK_OUT" | head -20 >&2
		return 1
	fi
	# the totals btrfs check prints must agree with ours
	local k
	# (btk-fsck checks bytes used against the superblock itself; btrfs check's figure once
	# differed from it by a few sectors on a kernel image, so kernel cases skip it here)
	local keys=("total csum bytes" "total tree bytes" "total fs tree bytes"
		"total extent tree bytes" "file data blocks allocated" " referenced")
	[ -n "${KERNEL_IMAGE:-}" ] || keys+=("bytes used")
	for k in "${keys[@]}"; do
		local a b
		a=$(grep -m1 "$k" "$BATS_TEST_TMPDIR/btrfs.out" | grep -oE '[0-9]+' | head -1)
		b=$(grep -m1 "$k" "$BTK_OUT" | grep -oE '[0-9]+' | head -1)
		if [ "$a" != "$b" ]; then
			echo "$k: btrfs check says $a, btk-fsck $b" >&2
			return 1
		fi
	done
}
