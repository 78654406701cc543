#!/usr/bin/env bats
# btk-resize against the kernel: images populated through a loop mount
# (tests/oracle/resize_populate.sh: snapshots of snapshots, a read-only one, reflinks, zstd,
# prealloc, hard links, xattrs, data spread by deleting every other file, metadata and system
# chunks at the end of the device) are shrunk below the end of their chunks (DUP metadata and
# system stripes and data stripes move), grown, set to an absolute size and shrunk with -M.
# After each step: btrfs check clean, superblock and file sizes as asked, the kernel sees the
# same tree (rsync --checksum against a copy saved before), used bytes unchanged, and the
# kernel writes and btrfs check stays clean. Then a power cut at every other write of a shrink
# and at each of its last ones (every write with BTK_ORACLE_FULL=1), and the refusals that
# need the kernel (mounted, log tree, balance in progress).

load ../bats/helpers

RESIZE=$BTK_BUILD/bin/btk-resize
# the mechanisms this file is about: whole stripes moved, tails cut, chunks emptied into the
# others, compaction; repacking (below what they reach) is tested in resize_aged.bats,
# resize_profiles.bats and ../bats/resize.bats, chunks split for their parts to move apart in
# ../bats/resize.bats and resize_aged.bats
NR="--no-repack --no-split"

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	export ORC=$BTK_TEST_TMP/resize-oracle
	mkdir -p "$ORC"
}

setup() {
	require_loop
	require_btk resize
	require_tool rsync
	require_tool setfattr
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir -p "$MNT"
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "${LOOPS+x}" ] && detach
	[ -n "${SHM_DIR:-}" ] && rm -rf "$SHM_DIR"
	true
}

# power_cut_setup: the image (IMG) moves to a scratch folder in memory when /dev/shm has room:
# a power-cut loop restores it and runs the tool a hundred times, and on disk the copies and
# the tool's flushes took two seconds a run (what is written where is the same)
power_cut_setup() {
	CUT_DIR=$BATS_TEST_TMPDIR
	if [ "$(df --output=avail -B1M /dev/shm 2>/dev/null | tail -1)" -gt 4096 ] 2>/dev/null; then
		SHM_DIR=$(mktemp -d -p /dev/shm btk-resize-XXXXXX)
		CUT_DIR=$SHM_DIR
	fi
	ORIG=$CUT_DIR/orig.img
	mv "$IMG" "$ORIG"
	IMG=$CUT_DIR/cut.img
	cp --sparse=always "$ORIG" "$IMG"
}

# make_image NAME SIZE FILL_MB: a populated image and its saved tree (built once per run)
make_image() {
	local d=$ORC/$1
	(
		flock 9
		[ -e "$d/done" ] && exit 0
		rm -rf "$d"
		mkdir -p "$d/mnt" "$d/saved"
		truncate -s "$2" "$d/img"
		mkfs.btrfs -q -f "$d/img" >/dev/null 2>&1
		btrfs check --readonly "$d/img" >/dev/null 2>&1 || exit 1
		mount -o loop "$d/img" "$d/mnt" || exit 1
		bash "$BTK_ROOT/tests/oracle/resize_populate.sh" "$d/mnt" $3 >"$d/populate.log" 2>&1
		local rc=$?
		[ $rc = 0 ] && rsync -aHAX --filter='-x btrfs.compression' "$d/mnt/" "$d/saved/"
		data_used "$d/mnt" >"$d/used"
		umount "$d/mnt"
		[ $rc = 0 ] && touch "$d/done"
	) 9>"$ORC/.lock.$1"
	[ -e "$ORC/$1/done" ] || {
		echo "building image $1 failed" >&2
		tail "$ORC/$1/populate.log" >&2
		return 1
	}
	IMG=$BATS_TEST_TMPDIR/$1.img
	cp --sparse=always "$ORC/$1/img" "$IMG"
	SAVED=$ORC/$1/saved
	USED=$(cat "$ORC/$1/used")
}

# data bytes used (shared extents count once): must not grow when extents move
data_used() {
	btrfs filesystem usage -b "$1" | sed -n 's/^Data,[^:]*: Size:[0-9]*, Used:\([0-9]*\).*/\1/p'
}

sb_field() {
	btrfs inspect-internal dump-super "$1" | awk -v f="$2" '$1 == f { print $2 }'
}

# size_is IMG BYTES
size_is() {
	[ "$(sb_field "$1" total_bytes)" = "$2" ] &&
		[ "$(sb_field "$1" dev_item.total_bytes)" = "$2" ] &&
		[ "$(stat -c %s "$1")" = "$2" ] || {
		echo "sizes: super $(sb_field "$1" total_bytes) dev_item" \
			"$(sb_field "$1" dev_item.total_bytes) file $(stat -c %s "$1"), want $2" >&2
		return 1
	}
}

check_clean() {
	btrfs check --readonly "$1" >"$BATS_TEST_TMPDIR/check.out" 2>&1 || {
		echo "btrfs check fails on $1:" >&2
		tail -20 "$BATS_TEST_TMPDIR/check.out" >&2
		return 1
	}
}

# check_data IMG: btrfs check clean, data checksums verified too
check_data() {
	btrfs check --readonly --check-data-csum "$1" >"$BATS_TEST_TMPDIR/check.out" 2>&1 || {
		echo "btrfs check --check-data-csum fails on $1:" >&2
		tail -20 "$BATS_TEST_TMPDIR/check.out" >&2
		return 1
	}
}

# same_tree IMG: mounted by the kernel, the tree equals the saved copy and the used bytes
# did not grow (shared extents stay shared); then the kernel writes and deletes a file
same_tree() {
	# noatime: reading every file must not copy every leaf of every snapshot for its atimes
	# (that alone can fill the metadata of an image shrunk to its minimum)
	mount -o loop,noatime "$1" "$MNT"
	rsync -aHAX --filter='-x btrfs.compression' --checksum --dry-run --itemize-changes \
		--numeric-ids --delete "$MNT/" "$SAVED/" >"$BATS_TEST_TMPDIR/rsync.out" 2>&1
	local rc=$? used
	used=$(data_used "$MNT")
	# metadata always; data unless a shrink to the minimum left no room for it
	head -c 1000 /dev/urandom >"$MNT/kernel-wrote-inline"
	head -c 4M /dev/urandom 2>/dev/null >"$MNT/kernel-wrote" ||
		[ "$(df --output=avail -B1 "$MNT" | tail -1)" -lt $((4 << 20)) ]
	sync -f "$MNT"
	rm -f "$MNT/kernel-wrote" "$MNT/kernel-wrote-inline"
	touch -r "$SAVED" "$MNT" # the top directory's times as saved, for the next comparison
	umount "$MNT"
	[ $rc = 0 ] && [ ! -s "$BATS_TEST_TMPDIR/rsync.out" ] || {
		echo "the tree differs (rsync $rc):" >&2
		head -20 "$BATS_TEST_TMPDIR/rsync.out" >&2
		return 1
	}
	[ "$used" = "$USED" ] || {
		echo "used bytes $used, were $USED" >&2
		return 1
	}
	check_clean "$1"
}

step() {
	btk_run 300 "$RESIZE" $NR "$@"
	[ "$status" = 0 ] || {
		show_err
		return 1
	}
}

@test "shrink below the allocated end (stripes move), grow, absolute, -M = -P: same tree" {
	make_image big 1G 96
	step -P "$IMG"
	min=$(cat "$BTK_OUT")
	[ "$min" -lt $((900 << 20)) ]
	# halfway between the minimum and the end of the chunks: some stripes must move
	end=$(btrfs inspect-internal dump-tree -t dev "$IMG" | awk '/DEV_EXTENT/ { o = $6 + 0 }
		/length/ { if (o + $NF > e) e = o + $NF } END { print e }')
	target=$(((min + end) / 2 / 4096 * 4096))
	[ "$target" -lt "$end" ]
	step "$target" "$IMG"
	grep -q "^moved " "$BTK_OUT"
	size_is "$IMG" "$target"
	check_clean "$IMG"
	same_tree "$IMG"
	step +256m "$IMG"
	size_is "$IMG" $((target + (256 << 20)))
	check_clean "$IMG"
	same_tree "$IMG"
	step 1:900m "$IMG"
	size_is "$IMG" $((900 << 20))
	same_tree "$IMG"
	step -P "$IMG"
	min2=$(cat "$BTK_OUT")
	step -M "$IMG"
	size_is "$IMG" "$min2"
	check_clean "$IMG"
	same_tree "$IMG"
	step -P "$IMG"
	[ "$(cat "$BTK_OUT")" = "$min2" ]
}

@test "DUP metadata and system stripes move, and the sys_chunk_array follows" {
	make_image big 1G 96
	step -P "$IMG"
	min=$(cat "$BTK_OUT")
	step -M "$IMG"
	size_is "$IMG" "$min"
	grep -q "^moved system chunk" "$BTK_OUT"
	grep -q "^moved metadata chunk .* stripe 0" "$BTK_OUT"
	grep -q "^moved metadata chunk .* stripe 1" "$BTK_OUT"
	# the superblock's copy of the system chunk agrees with the chunk tree
	sys=$(btrfs inspect-internal dump-super -f "$IMG" | awk '/backup_roots/ { exit }
		/ key / { f = 0 } /type SYSTEM/ { f = 1 } f && /stripe [0-9]+ devid/' |
		grep -oE 'stripe [0-9]+ devid [0-9]+ offset [0-9]+' | sort)
	tree=$(btrfs inspect-internal dump-tree -t chunk "$IMG" |
		awk '/ key / { f = 0 } /type SYSTEM/ { f = 1 } f && /stripe [0-9]+ devid/' |
		grep -oE 'stripe [0-9]+ devid [0-9]+ offset [0-9]+' | sort)
	[ -n "$sys" ]
	[ "$sys" = "$tree" ]
	check_clean "$IMG"
	same_tree "$IMG"
}

# cut_at N: the shrink stopped after N writes (a run that completes sets done, keeps its image as
# $FINAL and its output as final.out); old or new size, checksums verified, and the kernel
# compares the tree once per generation reached and for a completed run
cut_at() {
	local n=$1 ok=0 sz gen
	cp --sparse=always "$ORIG" "$IMG"
	BTK_FAULT=fail:$n btk_run 120 "$RESIZE" $NR -M "$IMG"
	assert_no_crash
	if [ "$status" = 0 ]; then
		ok=1
		if [ $done = 0 ]; then
			done=1
			cp "$BTK_OUT" "$BATS_TEST_TMPDIR/final.out"
			FINAL=$CUT_DIR/final.img
			cp --sparse=always "$IMG" "$FINAL"
		fi
	fi
	# every reachable block and data extent is intact (checksums, data included) ...
	check_data "$IMG" || { echo "after $n writes" >&2; return 1; }
	sz=$(sb_field "$IMG" total_bytes)
	case $sz in
	"$old") seen_old=$((seen_old + 1)) ;;
	"$new") seen_new=$((seen_new + 1)) ;;
	*) echo "after $n writes: size $sz, neither $old nor $new" >&2; return 1 ;;
	esac
	# ... so a state whose superblock names trees already seen has their content: the
	# kernel compares it once per generation reached, and for a completed run
	gen=$(sb_field "$IMG" generation)
	if [ -z "${seen_gen[$gen]:-}" ] || [ $ok = 1 ]; then
		same_tree "$IMG" || { echo "after $n writes" >&2; return 1; }
		seen_gen[$gen]=1
	fi
	tried=$((tried + 1))
}

# every other write budget, then each one between the last cut sampled and the first run that
# completed, so the last writes are all cut (every budget with BTK_ORACLE_FULL=1)
@test "power cut at every other write of a shrink and at each of its last: old or new filesystem, same content" {
	make_image small 512M "40 1"
	power_cut_setup
	old=$(stat -c %s "$IMG")
	step -P "$IMG"
	new=$(cat "$BTK_OUT")
	[ "$new" -lt "$old" ]
	local every=2 n=0 m
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] && every=1
	done=0 seen_old=0 seen_new=0 tried=0
	declare -A seen_gen=()
	while [ $done = 0 ] && [ $n -lt 400 ]; do
		cut_at $n
		n=$((n + every))
	done
	[ $done = 1 ]
	n=$((n - every)) # the first budget that completed
	for ((m = n - every + 1; m < n; m++)); do
		cut_at $m
	done
	# the run cut data chunk tails (round 0) and moved stripes (round 1): both were cut short
	grep -q "^cut data chunk" "$BATS_TEST_TMPDIR/final.out"
	grep -q "^moved " "$BATS_TEST_TMPDIR/final.out"
	[ $seen_old -gt 0 ]
	[ $seen_new -gt 0 ]
	size_is "$FINAL" "$new"
	# the kernel saw the old trees, the new ones and at least one commit between
	[ ${#seen_gen[@]} -ge 3 ]
	echo "# $tried write budgets tried (up to $n: 1 in $every and the last ones), $seen_old old, $seen_new new, ${#seen_gen[@]} generations" >&3
}

@test "refused while mounted; image unchanged after unmount" {
	make_image small 512M "40 1"
	mount -o loop,ro "$IMG" "$MNT"
	btk_run 60 "$RESIZE" $NR -M "$IMG"
	assert_one_line_error
	grep -q "mounted" "$BTK_ERR"
	umount "$MNT"
	cmp -s "$IMG" "$ORC/small/img"
}

@test "refused with a log tree to replay (says how); image unchanged" {
	oracle_image logtree -C small -L -s 512M
	IMG=$BATS_TEST_TMPDIR/log.img
	cp --sparse=always "${IMG_DEVS[0]}" "$IMG"
	sum=$(sha256_of "$IMG")
	btk_run 60 "$RESIZE" $NR +64m "$IMG"
	assert_one_line_error
	grep -q "log tree" "$BTK_ERR"
	grep -q "mount" "$BTK_ERR"
	grep -q "btk-fsck --rescue replay-log" "$BTK_ERR"
	[ "$(sha256_of "$IMG")" = "$sum" ]
}

@test "refused with a paused balance; image unchanged" {
	IMG=$BATS_TEST_TMPDIR/bal.img
	truncate -s 512M "$IMG"
	mkfs.btrfs -q -f "$IMG" >/dev/null 2>&1
	mount -o loop "$IMG" "$MNT"
	# three data chunks: a pause stops the balance after the first
	for i in $(seq 0 7); do head -c 16M /dev/urandom >"$MNT/f$i"; done
	sync -f "$MNT"
	btrfs balance start --bg -d "$MNT" >/dev/null 2>&1
	for i in $(seq 1 50); do
		btrfs balance pause "$MNT" >/dev/null 2>&1 || true
		st=$(btrfs balance status "$MNT" 2>&1 || true)
		case $st in *"is paused"* | *"No balance"*) break ;; esac
		sleep 0.2
	done
	umount "$MNT" || { sleep 10; umount "$MNT"; }
	btrfs inspect-internal dump-tree -t root "$IMG" | grep -q "BALANCE" ||
		skip "the balance finished before it could be paused"
	sum=$(sha256_of "$IMG")
	btk_run 60 "$RESIZE" $NR +64m "$IMG"
	assert_one_line_error
	grep -q "balance" "$BTK_ERR"
	[ "$(sha256_of "$IMG")" = "$sum" ]
}

# multi_dev PROFILE: 4 image files, populated, one device shrunk with -M; the others stay
multi_dev() {
	local d=$BATS_TEST_TMPDIR/multi i l
	rm -rf "$d" && mkdir -p "$d/saved"
	for i in 0 1 2 3; do truncate -s 512M "$d/d$i.img"; done
	mkfs.btrfs -q -f -m "$1" -d "$1" "$d"/d{0,1,2,3}.img >/dev/null 2>&1
	LOOPS=()
	for i in 0 1 2 3; do LOOPS+=("$(losetup -f --show "$d/d$i.img")"); done
	btrfs device scan "${LOOPS[@]}" >/dev/null
	btrfs check --readonly "${LOOPS[0]}" >/dev/null 2>&1
	mount "${LOOPS[0]}" "$MNT"
	bash "$BTK_ROOT/tests/oracle/resize_populate.sh" "$MNT" 60 2 >"$d/populate.log" 2>&1 || true
	rsync -aHAX --filter='-x btrfs.compression' "$MNT/" "$d/saved/"
	used=$(data_used "$MNT")
	umount "$MNT"
	detach
	# the first device whose shrink moves a stripe (the layout is the kernel's)
	dv=0
	for i in 1 2 3 4; do
		step -n -M $i: "$d"/d*.img
		grep -q "^would move" "$BTK_OUT" && { dv=$i; break; }
	done
	[ $dv != 0 ]
	step -P $dv: "$d"/d*.img
	min=$(cat "$BTK_OUT")
	others=()
	for i in 0 1 2 3; do [ $i != $((dv - 1)) ] && others+=("$d/d$i.img"); done
	sizes=$(stat -c %s "${others[@]}")
	step -M $dv: "$d"/d*.img
	grep -q "^moved .* stripe" "$BTK_OUT"
	[ "$(stat -c %s "$d/d$((dv - 1)).img")" = "$min" ]
	[ "$(stat -c %s "${others[@]}")" = "$sizes" ]
	for i in 0 1 2 3; do LOOPS+=("$(losetup -f --show "$d/d$i.img")"); done
	btrfs device scan "${LOOPS[@]}" >/dev/null
	btrfs check --readonly "${LOOPS[0]}" >"$d/check.out" 2>&1 || { tail "$d/check.out" >&2; false; }
	mount "${LOOPS[0]}" "$MNT"
	btrfs filesystem show --raw "$MNT" | grep -q "devid *$dv size $min " || {
		btrfs filesystem show --raw "$MNT" >&2
		false
	}
	rsync -aHAX --filter='-x btrfs.compression' --checksum --dry-run --itemize-changes \
		--numeric-ids --delete "$MNT/" "$d/saved/" >"$d/rsync.out" 2>&1
	[ -n "$used" ]
	[ "$(data_used "$MNT")" = "$used" ] || { echo "data used $(data_used "$MNT"), was $used" >&2; false; }
	head -c 20M /dev/urandom >"$MNT/kernel-wrote"
	sync -f "$MNT"
	umount "$MNT"
	[ ! -s "$d/rsync.out" ] || { head "$d/rsync.out" >&2; false; }
	btrfs check --readonly "${LOOPS[0]}" >"$d/check.out" 2>&1 || { tail "$d/check.out" >&2; false; }
	detach
}

detach() {
	local l
	for l in "${LOOPS[@]}"; do
		btrfs device scan --forget "$l" >/dev/null 2>&1 || true
		losetup -d "$l" 2>/dev/null || true
	done
	LOOPS=()
}

@test "4-device RAID1: shrinking one device moves only its stripes; check clean, same tree" {
	multi_dev raid1
}

@test "4-device RAID10: shrinking one device moves only its stripes; check clean, same tree" {
	multi_dev raid10
}

@test "4-device RAID5: shrinking one device moves only its stripes; check clean, same tree" {
	multi_dev raid5
}

@test "4-device RAID6: shrinking one device moves only its stripes; check clean, same tree" {
	# RAID6's second parity: written by the kernel in image_write.bats' RAID6 case, and by
	# btk on this path as for RAID5; the shrink adds 10-20 s
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] || skip "slow: BTK_ORACLE_FULL=1 runs it (the RAID5 case runs)"
	multi_dev raid6
}

# spread_image: a kernel-populated image whose last data chunk can be emptied into the free
# space that deleting every other file left in the chunk before it; with a snapshot, a reflink
# and small files (its saved tree in $SAVED, data used in $USED)
spread_image() {
	local d=$ORC/spread
	(
		flock 9
		[ -e "$d/done" ] && exit 0
		rm -rf "$d"
		mkdir -p "$d/mnt" "$d/saved"
		truncate -s 1G "$d/img"
		mkfs.btrfs -q -f "$d/img" >/dev/null 2>&1
		btrfs check --readonly "$d/img" >/dev/null 2>&1 || exit 1
		mount -o loop "$d/img" "$d/mnt" || exit 1
		(
			set -e
			# no subvolume inside another: the kernel makes up the times of their
			# placeholder directories in snapshots, which no saved copy can match
			btrfs subvolume create "$d/mnt/sv" >/dev/null
			for i in $(seq 1 60); do head -c 3M /dev/urandom >"$d/mnt/sv/f$i"; done
			sync -f "$d/mnt"
			for i in $(seq 1 2 60); do rm "$d/mnt/sv/f$i"; done
			cp --reflink=always "$d/mnt/sv/f2" "$d/mnt/sv/f2.reflink"
			mkdir "$d/mnt/sv/small"
			for i in $(seq 1 300); do echo "$i" >"$d/mnt/sv/small/s$i"; done
			btrfs subvolume snapshot "$d/mnt/sv" "$d/mnt/snap" >/dev/null
			btrfs subvolume snapshot -r "$d/mnt/snap" "$d/mnt/snap.ro" >/dev/null
			sync -f "$d/mnt"
		) >"$d/populate.log" 2>&1
		local rc=$?
		[ $rc = 0 ] && rsync -aHAX "$d/mnt/" "$d/saved/"
		data_used "$d/mnt" >"$d/used"
		umount "$d/mnt"
		[ $rc = 0 ] && touch "$d/done"
	) 9>"$ORC/.lock.spread"
	[ -e "$ORC/spread/done" ] || return 1
	IMG=$BATS_TEST_TMPDIR/spread.img
	cp --sparse=always "$ORC/spread/img" "$IMG"
	SAVED=$ORC/spread/saved
	USED=$(cat "$ORC/spread/used")
}

@test "chunks past the size are emptied: extents move, snapshots and reflinks stay shared" {
	spread_image
	# whole stripes cannot get below the end of the second data chunk: the last one is emptied
	step -n -M "$IMG"
	grep -q "^would empty and remove chunk" "$BTK_OUT"
	step -P "$IMG"
	min=$(cat "$BTK_OUT")
	step -M "$IMG"
	grep -q "^emptied and removed chunk" "$BTK_OUT"
	size_is "$IMG" "$min"
	btrfs check --readonly --check-data-csum "$IMG" >"$BATS_TEST_TMPDIR/check.out" 2>&1 || {
		tail "$BATS_TEST_TMPDIR/check.out" >&2
		false
	}
	same_tree "$IMG"
	# the packed chunks may now allow more (a free tail to cut): never less
	step -P "$IMG"
	[ "$(cat "$BTK_OUT")" -le "$min" ]
}

@test "power cut at every fifth write of an emptying shrink: old or new filesystem" {
	spread_image
	power_cut_setup
	old=$(stat -c %s "$IMG")
	step -P "$IMG"
	new=$(cat "$BTK_OUT")
	n=0 done=0 seen_old=0 seen_new=0
	while [ $done = 0 ] && [ $n -lt 400 ]; do
		cp --sparse=always "$ORIG" "$IMG"
		BTK_FAULT=fail:$n btk_run 120 "$RESIZE" $NR -M "$IMG"
		assert_no_crash
		[ "$status" = 0 ] && done=1
		check_clean "$IMG" || { echo "after $n writes" >&2; false; }
		sz=$(sb_field "$IMG" total_bytes)
		case $sz in
		"$old") seen_old=$((seen_old + 1)) ;;
		"$new") seen_new=$((seen_new + 1)) ;;
		*) echo "after $n writes: size $sz, neither $old nor $new" >&2; false ;;
		esac
		if [ $((n % 15)) = 0 ] || [ $done = 1 ]; then
			same_tree "$IMG" || { echo "after $n writes" >&2; false; }
		fi
		n=$((n + 5))
	done
	[ $done = 1 ]
	[ $seen_old -gt 0 ]
	size_is "$IMG" "$new"
	echo "# write budgets up to $n tried (every fifth), $seen_old old, $seen_new new" >&3
}

# meta_image: a kernel-populated image whose last chunk is a DUP metadata chunk whose blocks
# four trees share: small files written after the data (overflowing the first metadata
# chunk), three in four deleted, then a subvolume snapshotted, the snapshot snapshotted, a
# read-only snapshot of that, and the source and the first snapshot changed afterwards (the
# blocks they copied leave FULL_BACKREF blocks with shared references behind)
meta_image() {
	local d=$ORC/meta
	(
		flock 9
		[ -e "$d/done" ] && exit 0
		rm -rf "$d"
		mkdir -p "$d/mnt" "$d/saved"
		truncate -s 512M "$d/img"
		mkfs.btrfs -q -f "$d/img" >/dev/null 2>&1
		btrfs check --readonly "$d/img" >/dev/null 2>&1 || exit 1
		# noatime: saving the tree must not copy every leaf of every snapshot for atimes
		mount -o loop,noatime "$d/img" "$d/mnt" || exit 1
		(
			set -e
			head -c 100M /dev/urandom >"$d/mnt/big"
			sync -f "$d/mnt"
			btrfs subvolume create "$d/mnt/sv" >/dev/null
			python3 - "$d/mnt/sv" <<'PY'
import os, subprocess, sys
for i in range(20000):
    p = os.path.join(sys.argv[1], "d%03d" % (i % 100))
    os.makedirs(p, exist_ok=True)
    with open(os.path.join(p, "f%06d" % i), "wb") as f:
        f.write(os.urandom(1500 if i % 7 else 9000))
subprocess.run(["sync", "-f", sys.argv[1]], check=True)
for i in range(20000):
    if i % 4:
        os.remove(os.path.join(sys.argv[1], "d%03d" % (i % 100), "f%06d" % i))
PY
			sync -f "$d/mnt"
			btrfs subvolume snapshot "$d/mnt/sv" "$d/mnt/s1" >/dev/null
			btrfs subvolume snapshot "$d/mnt/s1" "$d/mnt/s2" >/dev/null
			btrfs subvolume snapshot -r "$d/mnt/s2" "$d/mnt/s3ro" >/dev/null
			for i in $(seq 0 3 99); do
				echo "$i" >"$d/mnt/sv/d0$(printf %02d $i)/new"
				echo "$i" >"$d/mnt/s1/d0$(printf %02d $((99 - i)))/new1"
			done
			sync -f "$d/mnt"
		) >"$d/populate.log" 2>&1
		local rc=$?
		[ $rc = 0 ] && rsync -aHAX "$d/mnt/" "$d/saved/"
		data_used "$d/mnt" >"$d/used"
		umount "$d/mnt"
		[ $rc = 0 ] && touch "$d/done"
	) 9>"$ORC/.lock.meta"
	[ -e "$ORC/meta/done" ] || return 1
	IMG=$BATS_TEST_TMPDIR/meta.img
	cp --sparse=always "$ORC/meta/img" "$IMG"
	SAVED=$ORC/meta/saved
	USED=$(cat "$ORC/meta/used")
}

# tree_blocks IMG LO HI: "S N": the tree blocks of subvolume trees (S), and how many of them
# in [LO, HI) are shared (more than one reference, or FULL_BACKREF) (N)
tree_blocks() {
	btrfs inspect-internal dump-tree -t extent "$1" | awk -v lo="$2" -v hi="$3" '
	function flush() { if (tb && sv) { s++; if (sh && cur >= lo && cur < hi) n++ } tb = sv = sh = 0 }
	/^\titem [0-9]+ key \([0-9]+ (METADATA|EXTENT)_ITEM / { flush(); cur = substr($4, 2) + 0 }
	/^\t\trefs [0-9]+ gen [0-9]+ flags TREE_BLOCK/ { tb = 1; if ($2 > 1 || /FULL_BACKREF/) sh = 1 }
	/tree block backref root (FS_TREE|[0-9]+)$/ { if ($NF == "FS_TREE" || $NF + 0 >= 256) sv = 1 }
	/shared block backref parent/ { sv = 1 }
	END { flush(); print s + 0, n + 0 }'
}

@test "a metadata chunk past the size is emptied: shared tree blocks move once, used bytes do not grow" {
	meta_image
	# the image has what this test is about: blocks shared by trees and by parents
	btrfs inspect-internal dump-tree -t extent "$IMG" >"$BATS_TEST_TMPDIR/ext"
	full=$(grep -c "FULL_BACKREF" "$BATS_TEST_TMPDIR/ext")
	srefs=$(grep -c "shared block backref" "$BATS_TEST_TMPDIR/ext")
	[ "$full" -gt 0 ]
	[ "$srefs" -gt 0 ]
	step --json -n -M "$IMG"
	chunk=""
	for c in $(grep -oE '"emptied": \[[0-9, ]+' "$BTK_OUT" | grep -oE '[0-9]+'); do
		btrfs inspect-internal dump-tree -t chunk "$IMG" |
			grep -A3 "CHUNK_ITEM $c)" | grep -q "type METADATA" && chunk=$c
	done
	[ -n "$chunk" ]
	len=$(btrfs inspect-internal dump-tree -t chunk "$IMG" | grep -A1 "CHUNK_ITEM $chunk)" |
		grep -oE "length [0-9]+" | grep -oE "[0-9]+")
	read -r blocks shared < <(tree_blocks "$IMG" "$chunk" $((chunk + len)))
	# enough shared blocks must move that one copy per tree would show
	[ "$shared" -ge 64 ]
	used=$(sb_field "$IMG" bytes_used)
	ns=$(sb_field "$IMG" nodesize)
	step -P "$IMG"
	min=$(cat "$BTK_OUT")
	step -M "$IMG"
	size_is "$IMG" "$min"
	check_clean "$IMG"
	! btrfs inspect-internal dump-tree -t chunk "$IMG" | grep -q "CHUNK_ITEM $chunk)"
	# one copy of every moved block, however many trees share it: the subvolume trees have
	# no more blocks than before; the bytes used may grow only by the few leaves the extent
	# and free-space trees split when the moved records land elsewhere (btk does not merge
	# leaves), far below a copy of the shared blocks per tree
	read -r blocks2 shared2 < <(tree_blocks "$IMG" "$chunk" $((chunk + len)))
	used2=$(sb_field "$IMG" bytes_used)
	echo "# subvolume tree blocks $blocks -> $blocks2 ($shared shared moved)," \
		"bytes_used $used -> $used2" >&3
	[ "$shared2" = 0 ]
	# the blocks shared through their parents stay so (their references moved with them)
	btrfs inspect-internal dump-tree -t extent "$IMG" >"$BATS_TEST_TMPDIR/ext"
	[ "$(grep -c "FULL_BACKREF" "$BATS_TEST_TMPDIR/ext")" = "$full" ]
	[ "$(grep -c "shared block backref" "$BATS_TEST_TMPDIR/ext")" = "$srefs" ]
	[ "$blocks2" -le "$blocks" ]
	[ $((used2 - used)) -lt $((shared * ns / 8)) ]
	same_tree "$IMG"
}

# the write order of a commit is tested at every write above; here what changes is what one
# transaction holds (shared blocks re-pointed): a few budgets by default (~2000 writes, one
# in ~600), one in 37 with BTK_ORACLE_FULL=1
@test "power cut at sampled writes of an emptying of shared tree blocks: old or new filesystem" {
	meta_image
	power_cut_setup
	old=$(stat -c %s "$IMG")
	step -P "$IMG"
	new=$(cat "$BTK_OUT")
	every=631
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] && every=37
	n=3 done=0 seen_old=0 seen_new=0 runs=0
	while [ $done = 0 ] && [ $n -lt 10000 ]; do
		cp --sparse=always "$ORIG" "$IMG"
		BTK_FAULT=fail:$n btk_run 120 "$RESIZE" $NR -M "$IMG"
		assert_no_crash
		[ "$status" = 0 ] && done=1
		check_clean "$IMG" || { echo "after $n writes" >&2; false; }
		sz=$(sb_field "$IMG" total_bytes)
		case $sz in
		"$old") seen_old=$((seen_old + 1)) ;;
		"$new") seen_new=$((seen_new + 1)) ;;
		*) echo "after $n writes: size $sz, neither $old nor $new" >&2; false ;;
		esac
		if [ $runs = 1 ] || [ $done = 1 ]; then
			same_tree "$IMG" || { echo "after $n writes" >&2; false; }
		fi
		n=$((n + every)) runs=$((runs + 1))
	done
	[ $done = 1 ]
	[ $seen_old -gt 0 ]
	size_is "$IMG" "$new"
	echo "# write budgets up to $n tried (every ${every}th), $seen_old old, $seen_new new" >&3
}

# compact_image: a kernel-populated image whose last chunk can neither move whole (no hole
# below holds its stripe) nor be emptied (its extents are preallocated ones of up to 100 MiB,
# larger than any free range), above two data chunks of 3 MiB files of which every other one
# was deleted, with a reflink and a read-only snapshot. -M empties the second of those into the
# holes of the first and moves the last chunk's stripe into the room it leaves (compaction).
compact_image() {
	local d=$ORC/compact
	(
		flock 9
		[ -e "$d/done" ] && exit 0
		rm -rf "$d"
		mkdir -p "$d/mnt" "$d/saved"
		truncate -s 1G "$d/img"
		mkfs.btrfs -q -f "$d/img" >/dev/null 2>&1
		btrfs check --readonly "$d/img" >/dev/null 2>&1 || exit 1
		mount -o loop,noatime "$d/img" "$d/mnt" || exit 1
		(
			set -e
			btrfs subvolume create "$d/mnt/sv" >/dev/null
			for i in $(seq 1 79); do head -c 3M /dev/urandom >"$d/mnt/sv/f$i"; done
			sync -f "$d/mnt"
			fallocate -l 100M "$d/mnt/sv/prealloc"
			head -c 1M /dev/urandom | dd of="$d/mnt/sv/prealloc" bs=1M seek=50 conv=notrunc status=none
			sync -f "$d/mnt"
			for i in $(seq 1 2 79); do rm "$d/mnt/sv/f$i"; done
			cp --reflink=always "$d/mnt/sv/f2" "$d/mnt/sv/f2.reflink"
			mkdir "$d/mnt/sv/small"
			for i in $(seq 1 200); do echo "$i" >"$d/mnt/sv/small/s$i"; done
			btrfs subvolume snapshot -r "$d/mnt/sv" "$d/mnt/snap.ro" >/dev/null
			sync -f "$d/mnt"
		) >"$d/populate.log" 2>&1
		local rc=$?
		[ $rc = 0 ] && rsync -aHAX "$d/mnt/" "$d/saved/"
		data_used "$d/mnt" >"$d/used"
		umount "$d/mnt"
		[ $rc = 0 ] && touch "$d/done"
	) 9>"$ORC/.lock.compact"
	[ -e "$ORC/compact/done" ] || return 1
	IMG=$BATS_TEST_TMPDIR/compact.img
	cp --sparse=always "$ORC/compact/img" "$IMG"
	SAVED=$ORC/compact/saved
	USED=$(cat "$ORC/compact/used")
}

@test "compaction: a data chunk emptied, the stripe past it moves into its room" {
	compact_image
	step -n --json -M "$IMG"
	alloc_end=$(grep -oE '"allocated_end": [0-9]+' "$BTK_OUT" | grep -oE '[0-9]+')
	step -P "$IMG"
	min=$(cat "$BTK_OUT")
	step -M "$IMG"
	grep -q "^emptied and removed chunk" "$BTK_OUT"
	grep -q "then stripes move into the room they leave" "$BTK_OUT"
	grep -q "^moved data chunk" "$BTK_OUT"
	size_is "$IMG" "$min"
	# whole stripes alone could not go below the allocated end; compaction gains a chunk
	[ "$min" -lt $((alloc_end - (64 << 20))) ]
	check_data "$IMG"
	same_tree "$IMG"
	step -P "$IMG"
	[ "$(cat "$BTK_OUT")" -le "$min" ]
}

# the order of a compaction (passes, the chunk removal, then stripe rounds) cut short: a
# budget every 23rd write (every 3rd with BTK_ORACLE_FULL=1)
@test "power cut at sampled writes of a compaction: old or new filesystem" {
	compact_image
	power_cut_setup
	old=$(stat -c %s "$IMG")
	step -P "$IMG"
	new=$(cat "$BTK_OUT")
	every=23
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] && every=3
	n=1 done=0 seen_old=0 seen_new=0 runs=0
	while [ $done = 0 ] && [ $n -lt 20000 ]; do
		cp --sparse=always "$ORIG" "$IMG"
		BTK_FAULT=fail:$n btk_run 120 "$RESIZE" $NR -M "$IMG"
		assert_no_crash
		[ "$status" = 0 ] && done=1
		check_clean "$IMG" || { echo "after $n writes" >&2; false; }
		sz=$(sb_field "$IMG" total_bytes)
		case $sz in
		"$old") seen_old=$((seen_old + 1)) ;;
		"$new") seen_new=$((seen_new + 1)) ;;
		*) echo "after $n writes: size $sz, neither $old nor $new" >&2; false ;;
		esac
		if [ $((runs % 8)) = 3 ] || [ $done = 1 ]; then
			same_tree "$IMG" || { echo "after $n writes" >&2; false; }
		fi
		n=$((n + every)) runs=$((runs + 1))
	done
	[ $done = 1 ]
	[ $seen_old -gt 0 ]
	size_is "$IMG" "$new"
	echo "# write budgets up to $n tried (every ${every}th), $seen_old old, $seen_new new" >&3
}
