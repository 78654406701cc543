#!/usr/bin/env bats
# btk-fsck --rescue on kernel-made images (issue 26); free-space-tree, uuid-tree, quota and
# data-reloc-tree below. csum-tree: compressed, NODATASUM,
# partly written prealloc, reflinked and snapshotted files, the checksum tree lost on both
# copies (tests/lib/smash.c). After the rebuild btrfs check --check-data-csum is clean, every
# sector has the checksum the kernel gave it (no more, no fewer), the kernel mounts it, reads
# every file as before and scrub finds no error. btk-made images: tests/bats/fsck_rebuild.bats.
# Run under the machine-wide kernel lock (HACKING.md).

load ../bats/helpers

FSCK=$BTK_BUILD/bin/btk-fsck
SMASH=$BTK_BUILD/tests/smash

setup() {
	require_loop
	require_btk fsck
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

# view IMG OUT: btrfs check --readonly --check-data-csum clean, mounted read-only, "sha256
# path" of every file to OUT, a read-only scrub with no error
view() {
	btrfs check --readonly --check-data-csum "$1" >"$D/check.log" 2>&1 || {
		echo "btrfs check not clean" >&2
		tail -20 "$D/check.log" >&2
		return 1
	}
	LOOP=$(losetup -f --show "$1")
	mount -o ro "$LOOP" "$MNT"
	(cd "$MNT" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) >"$2"
	btrfs scrub start -B -r "$MNT" >"$D/scrub.log" 2>&1
	grep -q "no errors found" "$D/scrub.log" || { cat "$D/scrub.log" >&2; return 1; }
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

# sums IMG: "logical checksum" of every sector the checksum tree has (btk-debug tree)
sums() {
	"$BTK_BUILD/bin/btk-debug" tree -t 7 "$1" | awk '
		$1 == "start" { at = $2 }
		$1 == "csums" { for (i = 2; i <= NF; i++) { print at, $i; at += 4096 } }'
}

# kernel_image IMG [quota]: made by the kernel: compressed, NODATASUM, partly written prealloc,
# reflinked files, a snapshot, a read-only snapshot sent and received (a received uuid); with
# quota, quotas on from the start, a level-1 qgroup over the snapshot and the received
# subvolume assigned without a rescan (the kernel marks quotas inconsistent)
kernel_image() {
	local img=$1
	truncate -s 512M "$img"
	mkfs.btrfs -q -f "$img"
	LOOP=$(losetup -f --show "$img")
	mount -o compress=zstd "$LOOP" "$MNT"
	[ "${2:-}" != quota ] || btrfs quota enable "$MNT"
	head -c 3000000 /dev/urandom >"$MNT/rand"
	yes "a line that compresses well" | head -c 2000000 >"$MNT/compressed"
	touch "$MNT/nocow"
	chattr +C "$MNT/nocow"
	head -c 1000000 /dev/urandom >"$MNT/nocow"
	fallocate -l 1M "$MNT/prealloc"
	dd if=/dev/urandom of="$MNT/prealloc" bs=4096 seek=10 count=5 conv=notrunc status=none
	cp --reflink=always "$MNT/rand" "$MNT/clone"
	dd if=/dev/urandom of="$MNT/clone" bs=4096 seek=100 count=3 conv=notrunc status=none
	btrfs subvolume snapshot "$MNT" "$MNT/snap" >/dev/null
	mkdir "$MNT/d" "$MNT/recv"
	for i in $(seq 1 100); do echo "$i" >"$MNT/d/f$i"; done
	btrfs subvolume snapshot -r "$MNT" "$MNT/ro" >/dev/null
	btrfs send -q -f "$D/stream" "$MNT/ro"
	btrfs receive -q -f "$D/stream" "$MNT/recv"
	if [ "${2:-}" = quota ]; then
		sync -f "$MNT"
		btrfs quota rescan -w "$MNT" >/dev/null
		btrfs qgroup create 1/100 "$MNT"
		btrfs qgroup assign --no-rescan "$MNT/snap" 1/100 "$MNT" 2>/dev/null || true
		btrfs qgroup assign --no-rescan "$MNT/recv/ro" 1/100 "$MNT" 2>/dev/null || true
		rm "$MNT/clone"
	fi
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

@test "rescue csum-tree, kernel image: the lost checksum tree comes back with the kernel's checksums; check, mount, read and scrub clean" {
	local img=$D/k.img
	kernel_image "$img"
	view "$img" "$D/before"
	sums "$img" >"$D/sums.kernel"
	[ "$(wc -l <"$D/sums.kernel")" -gt 700 ]

	"$SMASH" tree 7 1 "$img" >/dev/null
	"$SMASH" tree 7 2 "$img" >/dev/null
	btk_run 60 btrfs check --readonly "$img"
	[ "$status" != 0 ]
	btk_run 120 "$FSCK" --rescue csum-tree --no-undo "$img"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -q ', 0 without a right checksum$' "$BTK_OUT"
	btk_run 120 "$FSCK" --check-data-csum "$img"
	[ "$status" = 0 ] || { show_err; return 1; }
	sums "$img" >"$D/sums.btk"
	diff "$D/sums.kernel" "$D/sums.btk" >&2
	view "$img" "$D/after"
	diff "$D/before" "$D/after"
}

@test "rescue free-space-tree and uuid-tree, kernel image: both trees lost on both copies come back; the uuid tree as the kernel had it (snapshots, a received subvolume); check, mount, read and scrub clean" {
	local img=$D/k.img
	kernel_image "$img"
	view "$img" "$D/before"
	"$BTK_BUILD/bin/btk-debug" tree -t 9 "$img" | grep -A1 'key (' | grep -Ev '^(leaf|node) ' | sed 's/itemoff [0-9]* //' >"$D/uuid.kernel"
	[ "$(grep -c UUID_KEY_RECEIVED_SUBVOL "$D/uuid.kernel")" = 1 ]
	local t
	for t in 9 10; do
		"$SMASH" tree $t 1 "$img" >/dev/null
		"$SMASH" tree $t 2 "$img" >/dev/null
	done
	btk_run 60 btrfs check --readonly "$img"
	[ "$status" != 0 ]
	btk_run 60 "$FSCK" --rescue free-space-tree --no-undo "$img"
	[ "$status" = 1 ] || { show_err; return 1; }
	btk_run 60 "$FSCK" --rescue uuid-tree --no-undo "$img"
	[ "$status" = 1 ] || { show_err; return 1; }
	btk_run 120 "$FSCK" --check-data-csum "$img"
	[ "$status" = 0 ] || { show_err; return 1; }
	"$BTK_BUILD/bin/btk-debug" tree -t 9 "$img" | grep -A1 'key (' | grep -Ev '^(leaf|node) ' | sed 's/itemoff [0-9]* //' | diff "$D/uuid.kernel" - >&2
	view "$img" "$D/after"
	diff "$D/before" "$D/after"
	# the kernel mounted it read-write and found nothing to change in either tree
	LOOP=$(losetup -f --show "$img")
	mount "$LOOP" "$MNT"
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
	btk_run 60 btrfs check --readonly "$img"
	[ "$status" = 0 ] || { show_err; return 1; }
}

# qgroups IMG OUT: the kernel's qgroup numbers of IMG (mounted read-only) to OUT; fails when
# the kernel says they are inconsistent
qgroups() {
	LOOP=$(losetup -f --show "$1")
	mount -o ro "$LOOP" "$MNT"
	btrfs qgroup show --raw -p "$MNT" >"$2" 2>"$D/qgroup.err"
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
	! grep -i 'inconsistent' "$D/qgroup.err" >&2
}

@test "rescue quota, kernel image: quotas marked inconsistent are counted as the kernel's own rescan counts them (subvolumes, snapshots, reflinks, a level-1 qgroup); btrfs check clean" {
	local img=$D/k.img
	kernel_image "$img" quota
	"$BTK_BUILD/bin/btk-debug" tree -t 8 "$img" | grep -q 'flags 0x5(ON|INCONSISTENT)'
	cp --sparse=always "$img" "$D/kernel.img"
	# the kernel's rescan of a copy
	LOOP=$(losetup -f --show "$D/kernel.img")
	mount "$LOOP" "$MNT"
	btrfs quota rescan -w "$MNT" >/dev/null
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
	qgroups "$D/kernel.img" "$D/qgroups.kernel"
	[ "$(grep -c '^0/' "$D/qgroups.kernel")" -ge 4 ] && grep -q '^1/100 ' "$D/qgroups.kernel"
	sed 's/^/# /' "$D/qgroups.kernel" >&3
	# the numbers on disk before are not the kernel's rescan's
	qinfo "$img" >"$D/info.before"

	btk_run 120 "$FSCK" --rescue quota --no-undo "$img"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -q '^quotas rescanned (they were marked inconsistent): ' "$BTK_OUT"
	btk_run 120 btrfs check --readonly "$img"
	[ "$status" = 0 ] || { show_err; return 1; }
	! grep -Eq 'are different|inconsistent' "$BTK_OUT" "$BTK_ERR"
	btk_run 120 "$FSCK" "$img"
	[ "$status" = 0 ] || { show_err; return 1; }
	qgroups "$img" "$D/qgroups.btk"
	diff "$D/qgroups.kernel" "$D/qgroups.btk" >&2
	qinfo "$img" >"$D/info.after"
	! cmp -s "$D/info.before" "$D/info.after"
}

# qinfo IMG: every qgroup's id and numbers on disk (btk-debug)
qinfo() {
	"$BTK_BUILD/bin/btk-debug" tree -t 8 "$1" | grep -A2 'QGROUP_INFO' | grep -Ev 'generation|^--' | sed 's/itemoff [0-9]* //'
}

@test "rescue data-reloc-tree, kernel image: the tree lost on both copies is rebuilt; btrfs check clean, the kernel balances the data with it (the tree relocation uses) and everything reads as before" {
	local img=$D/k.img t=18446744073709551607
	kernel_image "$img"
	view "$img" "$D/before"
	"$SMASH" tree $t 1 "$img" >/dev/null
	"$SMASH" tree $t 2 "$img" >/dev/null
	btk_run 60 btrfs check --readonly "$img"
	[ "$status" != 0 ]
	btk_run 60 "$FSCK" --rescue data-reloc-tree --no-undo "$img"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -q '^data relocation tree rebuilt empty, with its top directory (1 old block(s) dropped)$' "$BTK_OUT"
	btk_run 120 "$FSCK" --check-data-csum "$img"
	[ "$status" = 0 ] || { show_err; return 1; }
	view "$img" "$D/after"
	diff "$D/before" "$D/after"
	# a data balance relocates through the data relocation tree
	LOOP=$(losetup -f --show "$img")
	mount "$LOOP" "$MNT"
	btrfs balance start -d "$MNT" >"$D/balance.log" 2>&1 || { cat "$D/balance.log" >&2; return 1; }
	grep -Eq 'relocate [1-9][0-9]* out of' "$D/balance.log"
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
	view "$img" "$D/balanced"
	diff "$D/before" "$D/balanced"
}

# shared_both IMG [mixed]: a kernel image (16 KiB nodes, or mixed block groups) whose snapshots
# are changed on both sides afterwards (the blocks they shared copied: the old ones only the
# other side reaches, FULL_BACKREF), with a subvolume deleted whole and compressed, reflinked,
# preallocated files
shared_both() {
	local img=$1 i
	if [ "${2:-}" = mixed ]; then
		truncate -s 256M "$img"
		mkfs.btrfs -q -f --mixed "$img"
	else
		truncate -s 512M "$img"
		mkfs.btrfs -q -f -n 16k "$img"
	fi
	LOOP=$(losetup -f --show "$img")
	mount -o compress=zstd "$LOOP" "$MNT"
	head -c 3000000 /dev/urandom >"$MNT/rand"
	yes "a line that compresses well" | head -c 2000000 >"$MNT/compressed"
	cp --reflink=always "$MNT/rand" "$MNT/clone"
	fallocate -l 1M "$MNT/prealloc"
	mkdir "$MNT/d"
	for i in $(seq 1 1500); do echo "file $i" >"$MNT/d/f$i"; done
	btrfs subvolume create "$MNT/sub" >/dev/null
	cp -a "$MNT/d" "$MNT/sub/"
	sync -f "$MNT"
	btrfs subvolume snapshot "$MNT" "$MNT/snap" >/dev/null
	btrfs subvolume snapshot "$MNT/sub" "$MNT/sub/snap2" >/dev/null
	sync -f "$MNT"
	for i in $(seq 1 7 1500); do echo changed >"$MNT/d/f$i"; done
	for i in $(seq 3 11 1500); do rm "$MNT/snap/d/f$i"; done
	btrfs subvolume create "$MNT/gone" >/dev/null
	cp -a "$MNT/d" "$MNT/gone/"
	btrfs subvolume snapshot "$MNT/gone" "$MNT/gone2" >/dev/null
	sync -f "$MNT"
	echo y >>"$MNT/gone2/d/f5"
	btrfs subvolume delete "$MNT/gone" >/dev/null
	btrfs filesystem sync "$MNT" # a commit wakes the cleaner: no wait for the 30 s one
	btrfs subvolume sync "$MNT" >/dev/null
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

@test "rescue extent-tree, kernel images (16 KiB nodes; mixed block groups): the extent tree lost on both copies comes back with the kernel's records, full back references included; check, mount, read and scrub clean; the kernel then writes to both sides of the snapshots and deletes one, btrfs check clean" {
	local img=$D/k.img v
	for v in plain mixed; do
		rm -f "$img"
		shared_both "$img" $v
		view "$img" "$D/before"
		records "$img" >"$D/rec.kernel"
		grep -q FULL_BACKREF "$D/rec.kernel"
		"$SMASH" tree 2 1 "$img" >/dev/null
		[ $v = mixed ] || "$SMASH" tree 2 2 "$img" >/dev/null # mixed: one copy
		btk_run 60 btrfs check --readonly "$img"
		[ "$status" != 0 ]
		btk_run 120 "$FSCK" --rescue extent-tree --no-undo "$img"
		[ "$status" = 1 ] || { show_err; return 1; }
		records "$img" | diff "$D/rec.kernel" - >&2
		btk_run 120 btrfs check --readonly --mode=lowmem "$img"
		[ "$status" = 0 ] || { show_err; return 1; }
		view "$img" "$D/after"
		diff "$D/before" "$D/after"
		LOOP=$(losetup -f --show "$img")
		mount "$LOOP" "$MNT"
		for i in $(seq 1 5 1500); do echo more >>"$MNT/d/f$i"; done
		for i in $(seq 2 5 1500); do [ ! -e "$MNT/snap/d/f$i" ] || echo more >>"$MNT/snap/d/f$i"; done
		head -c 5000000 /dev/urandom >"$MNT/new"
		btrfs subvolume delete "$MNT/snap" >/dev/null
		btrfs filesystem sync "$MNT" # a commit wakes the cleaner: no wait for the 30 s one
		btrfs subvolume sync "$MNT" >/dev/null
		umount "$MNT"
		losetup -d "$LOOP"
		LOOP=
		btk_run 120 btrfs check --readonly "$img"
		[ "$status" = 0 ] || { echo "$v: after the kernel's writes" >&2; show_err; return 1; }
	done
}

# ---- a lost leaf of the fs tree (libcore/repair/lostleaf.c): each leaf of the image in turn is
# zeroed on every copy (tests/lib/smash.c) and --repair drops it and makes again what it held;
# tests/lib/lost_leaf.py says how many of the files that lived in it are back with their name
# and content, how many in lost+found

MEASURE=$BATS_TEST_DIRNAME/../lib/lost_leaf.py

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
        open(f"{sys.argv[1]}/d{d}/f{i:03d}", "wb").write(os.urandom(n - 1) + b"z")  # see tail_zeros
' "$D/src"
}

# leaf_image IMG once|commits|snap: the source copied by the kernel in one transaction, or in
# several (a sync after each directory, then some files touched and a new directory added:
# older copies of many leaves stay on disk); snap: commits with a snapshot of the top and
# files changed after it
leaf_image() {
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
		for d in d0 d1 d2 d3; do cp -a "$D/src/$d" "$MNT/" && sync -f "$MNT"; done
		for f in "$MNT"/d*/f0[0-5]3; do touch "$f"; done
		sync -f "$MNT"
		if [ "$2" = snap ]; then
			# a snapshot, then files appended to (a new extent over the tail of one the
			# snapshot keeps) and removed
			btrfs subvolume snapshot "$MNT" "$MNT/snap" >/dev/null
			for f in "$MNT"/d1/f0[0-4]*; do echo changed >>"$f"; done
			rm -f "$MNT"/d2/f01*
			sync -f "$MNT"
		fi
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
	require_btk debug image
	local kind
	for kind in once commits; do
		leaf_image "$D/$kind.img" $kind
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

@test "repair: every leaf of a kernel-made fs tree with a snapshot lost in turn (files appended to and removed after it): both checkers clean; at least 90 % of the files back with name and content, the entries naming the snapshot too" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow (~1 min): BTK_ORACLE_FULL=1 runs it (fsck_rebuild.bats's subvolume entries case covers the names; this the kernel's extents cut by a write after a snapshot)"
	require_btk debug image
	leaf_image "$D/snap.img" snap
	btk_run 60 btrfs check --readonly "$D/snap.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	sweep "$D/snap.img"
	echo "# snap: $TOTAL" >&3
	local pct=${TOTAL#*content (}
	[ "${pct%% *}" -ge 90 ] || { echo "$TOTAL" >&2; return 1; }
}

# ---- a lost node, a lost root node, a lost subvolume root leaf (lostleaf.c: the blocks below
# a lost node are found by their extent records; a lost root starts the tree again)

# node_image IMG: 4 KiB nodes (an fs tree of three levels): 4 directories of 330 files copied
# by the kernel in one go, and a subvolume sv whose files come over three commits (older copies
# of its one leaf stay on disk)
node_image() {
	[ -d "$D/nsrc" ] || python3 -c '
import os, random, sys
random.seed(9)
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/d{d}")
    for i in range(330):
        n = random.randint(300, 1500) if i % 20 == 7 else random.randint(4200, 7000)
        open(f"{sys.argv[1]}/d{d}/f{i:03d}", "wb").write(os.urandom(n - 1) + b"z")  # see tail_zeros
' "$D/nsrc"
	rm -f "$1"
	truncate -s 300M "$1"
	mkfs.btrfs -q -f -n 4096 "$1" >/dev/null 2>&1
	LOOP=$(losetup -f --show "$1")
	mount "$LOOP" "$MNT"
	cp -a "$D/nsrc/." "$MNT/"
	btrfs subvolume create "$MNT/sv" >/dev/null
	local i
	for i in 1 2 3; do
		# a non-zero last byte: sizes of lost inodes come from their data (tail_zeros)
		{ head -c $((i * 9000 - 1)) /dev/urandom; printf z; } >"$MNT/sv/a$i"
		mkdir -p "$MNT/sv/d$i" && { head -c $((i * 7000 - 1)) /dev/urandom; printf z; } >"$MNT/sv/d$i/b"
		sync -f "$MNT"
	done
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

# listing IMG OUT: "sha256  path" of every file, from a read-only kernel mount
listing() {
	LOOP=$(losetup -f --show "$1")
	mount -o ro "$LOOP" "$MNT"
	(cd "$MNT" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) >"$2"
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

# back ORIG RESCUED [PREFIX]: "B of N" files of ORIG's listing (under PREFIX) in RESCUED's with
# the same path and content
back() {
	local n b
	n=$(grep -c "  \./${3:-}" "$1")
	b=$(grep "  \./${3:-}" "$1" | grep -cxFf "$2")
	echo "$b of $n"
}

@test "repair, kernel image: a lost level-1 node, the lost level-2 root node of the fs tree and a subvolume's lost root leaf (every copy): btrfs check clean, the kernel mounts and reads; files back with name and content" {
	[ -n "${BTK_ORACLE_FULL:-}" ] ||
		skip "slow (~1 min): BTK_ORACLE_FULL=1 runs it (fsck_rebuild.bats's lost node and root cases cover the rebuild; the leaf sweep above the kernel's layout)"
	require_btk debug
	node_image "$D/n.img"
	btk_run 60 btrfs check --readonly "$D/n.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	listing "$D/n.img" "$D/orig.list"
	local what blk got sv
	sv=256 # the first subvolume made gets the first free id
	for what in mid root svleaf; do
		case $what in
		mid) blk=$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$D/n.img" | awk '/^node [0-9]+ level 1/ { n++; if (n == 2) { print $2; exit } }') ;;
		root) blk=$("$BTK_BUILD/bin/btk-debug" tree -t 5 "$D/n.img" | awk '/^node [0-9]+ level 2/ { print $2; exit }') ;;
		svleaf) blk=$("$BTK_BUILD/bin/btk-debug" tree -t "$sv" "$D/n.img" | awk '/^leaf [0-9]+ items/ { print $2; exit }') ;;
		esac
		[ -n "$blk" ] || { echo "$what: no such block" >&2; return 1; }
		cp --sparse=always "$D/n.img" "$D/x.img"
		"$SMASH" zero "$blk" "$D/x.img" >/dev/null
		btk_run 180 "$FSCK" --repair --no-undo "$D/x.img"
		[ "$status" = 1 ] || { echo "$what $blk" >&2; show_err; cat "$BTK_OUT" >&2; return 1; }
		grep -q ', 0 left$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		btk_run 60 btrfs check --readonly "$D/x.img"
		[ "$status" = 0 ] || { echo "$what: btrfs check after" >&2; show_err; return 1; }
		mounted_reads "$D/x.img"
		listing "$D/x.img" "$D/x.list"
		if [ $what = svleaf ]; then
			got=$(back "$D/orig.list" "$D/x.list" sv/)
		else
			got=$(back "$D/orig.list" "$D/x.list" d)
		fi
		echo "# lost $what $blk: $got files back with name and content" >&3
		# below a lost node every leaf is on disk: every file comes back; of the subvolume's,
		# the four files of its first two commits get their names from the older copies of
		# its leaf (those of the last commit have none: their data goes to lost+found)
		if [ $what = svleaf ]; then
			[ "${got%% *}" -ge 4 ] || { echo "$what: $got" >&2; return 1; }
		else
			[ "${got%% *}" = "${got##* }" ] || { echo "$what: $got" >&2; return 1; }
		fi
	done
}
