#!/usr/bin/env bats
# btk-fsck --repair on kernel-made images whose fs tree lost one leaf on every copy (issue 26):
# each leaf of the image in turn is zeroed (tests/lib/smash.c), the repair drops it and makes
# again what it held (libcore/repair/lostleaf.c); after it btrfs check is clean and the kernel
# mounts the image, reads every file and its scrub finds no error. tests/lib/lost_leaf.py says
# how many of the files that lived in the leaf are back with their name and content, how many
# in lost+found. btk-made images: tests/bats/fsck_rebuild.bats.
# Run under the machine-wide kernel lock (HACKING.md).

load ../bats/helpers

FSCK=$BTK_BUILD/bin/btk-fsck
SMASH=$BTK_BUILD/tests/smash
MEASURE=$BATS_TEST_DIRNAME/../lib/lost_leaf.py

setup() {
	require_loop
	require_btk fsck debug image
	require_tool btrfs
	require_tool mkfs.btrfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	LOOP=
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	true
}

# source tree: 4 directories of 60 files, one in ten small enough to be inline
src() {
	[ -d "$D/src" ] && return 0
	python3 -c '
import os, random, sys
random.seed(5)
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/d{d}")
    for i in range(60):
        n = random.randint(200, 1800) if i % 10 == 7 else random.randint(4500, 60000)
        open(f"{sys.argv[1]}/d{d}/f{i:03d}", "wb").write(os.urandom(n))
' "$D/src"
}

# kernel_image IMG once|commits: the source copied by the kernel in one transaction, or in
# several (a sync after each directory, then some files touched and a new directory added:
# older copies of many leaves stay on disk)
kernel_image() {
	src
	rm -f "$1"
	truncate -s 300M "$1"
	mkfs.btrfs -q -f "$1" >/dev/null 2>&1
	LOOP=$(losetup -f --show "$1")
	mount "$LOOP" "$MNT"
	if [ "$2" = once ]; then
		cp -a "$D/src/." "$MNT/"
	else
		local d f
		for d in d0 d1 d2 d3; do cp -a "$D/src/$d" "$MNT/" && sync; done
		for f in "$MNT"/d*/f0[0-5]3; do touch "$f"; done
		sync
		mkdir "$MNT/new" && cp "$D/src/d0/f00"* "$MNT/new/"
	fi
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

# mounted_reads IMG: the kernel mounts IMG read-only, reads every file, scrub finds no error
mounted_reads() {
	LOOP=$(losetup -f --show "$1")
	mount -o ro "$LOOP" "$MNT"
	find "$MNT" -type f -exec cat {} + >/dev/null
	btrfs scrub start -B -r "$MNT" >"$D/scrub.log" 2>&1
	grep -q "no errors found" "$D/scrub.log" || { cat "$D/scrub.log" >&2; return 1; }
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

# sweep IMG: every leaf of IMG's fs tree lost in turn and repaired; both checkers clean after
# each, no file with data outside the leaf (larger than inline) lost; the totals in $TOTAL
sweep() {
	local leaf line n=0 files=0 back=0 lf=0 lost=0
	for leaf in $(python3 "$MEASURE" "$BTK_BUILD" "$1" --leaves); do
		cp --sparse=always "$1" "$D/x.img"
		"$SMASH" zero "$leaf" "$D/x.img" >/dev/null
		btk_run 180 "$FSCK" --repair --no-undo "$D/x.img"
		[ "$status" = 1 ] || { echo "leaf $leaf" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
		grep -q ', 0 left$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		btk_run 60 "$FSCK" -q "$D/x.img"
		[ "$status" = 0 ] || { echo "leaf $leaf: btk-fsck after" >&2; show_err; return 1; }
		btk_run 60 btrfs check --readonly "$D/x.img"
		[ "$status" = 0 ] || { echo "leaf $leaf: btrfs check after" >&2; show_err; return 1; }
		line=$(python3 "$MEASURE" "$BTK_BUILD" "$1" "$leaf" "$D/x.img")
		! echo "$line" | awk -F", " '/^  lost:/ && /'"'"'lost'"'"'\)$/ { if ($3 + 0 > 2048) bad = 1 } END { exit !bad }' || { echo "$line" >&2; return 1; }
		set -- "$1" $(echo "$line" | head -1 | awk '{ print $3, $8, $16, $19 }')
		files=$((files + $2)) back=$((back + $3)) lf=$((lf + $4)) lost=$((lost + $5))
		n=$((n + 1))
		[ $n = 3 ] && { mounted_reads "$D/x.img" || return 1; }
	done
	TOTAL="$n leaves: $files files lived in them, $back back with name and content ($((100 * back / files)) %), $lf in lost+found, $lost lost"
}

@test "repair: every leaf of a kernel-made fs tree lost in turn (one commit, several commits): both checkers clean, the kernel reads every file; files back with name and content, the rest in lost+found but inline data" {
	local kind
	for kind in once commits; do
		kernel_image "$D/$kind.img" $kind
		btk_run 60 btrfs check --readonly "$D/$kind.img"
		[ "$status" = 0 ] || { show_err; return 1; }
		sweep "$D/$kind.img"
		echo "# $kind: $TOTAL" >&3
		# with older copies of the leaves on disk, their inline data and names come back
		if [ $kind = commits ]; then
			local pct=${TOTAL#*content (}
			[ "${pct%% *}" -ge 90 ] || { echo "$TOTAL" >&2; return 1; }
		fi
	done
}
