#!/usr/bin/env bats
# btk-resize -M on kernel-aged images (tests/oracle/resize_age.sh: rounds of create, append,
# truncate, delete and rename, a snapshot per round and older ones deleted, reflinks, zstd,
# quotas), where chunks end up partly used all over the device: -M repacks them (chunks cut,
# metadata packed, new chunks sized to fit the holes). -M reaches exactly what -P says, at most
# 1.10 times the floor -n --json reports and never more than the kernel's own online minimum
# (btrfs filesystem resize, stepwise until it refuses, on a copy); then btrfs check is clean,
# the kernel shows the same files (sha256), the qgroups agree after the kernel's rescan, and,
# grown by 1 GiB, the kernel writes 64 MiB and runs a full balance. A power cut at sampled
# writes of such a shrink (every write with BTK_ORACLE_FULL=1, or every BTK_POWERCUT_EVERY-th)
# leaves the old or the new filesystem with the same files. A 16K-node image, mixed block
# groups, devices of a 3-device RAID1 filesystem (one, and devid 3 then devid 1) and one of a
# 2-device RAID1 (its system chunk moved) here (with power cuts of the mixed and 3-device ones,
# the devices sharing one budget); the matrix (4K and 64K nodes, DUP data) with
# BTK_ORACLE_FULL=1.

load ../bats/helpers
load ../lib/powercut

RESIZE=$BTK_BUILD/bin/btk-resize

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	export ORC=$BTK_TEST_TMP/resize-aged
	mkdir -p "$ORC"
}

setup() {
	require_loop
	require_btk resize
	MNT=$BATS_TEST_TMPDIR/mnt
	D=$BATS_TEST_TMPDIR
	mkdir -p "$MNT"
	LOOP=
	LOOPS=()
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	for l in "${LOOPS[@]}"; do losetup -d "$l"; done
	[ -n "${SHM_DIR:-}" ] && rm -rf "$SHM_DIR"
	true
}

step() {
	btk_run 300 "$RESIZE" "$@"
	[ "$status" = 0 ] || {
		show_err
		return 1
	}
}

check_clean() {
	btrfs check --readonly "$@" "$IMG" >"$D/check.out" 2>&1 || {
		echo "btrfs check $* fails on $IMG:" >&2
		tail -20 "$D/check.out" >&2
		return 1
	}
}

manifest() {
	(
		cd "$1" && find . -printf '%p %y %s\n' | LC_ALL=C sort &&
			find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	)
}

# aged NAME SIZE ROUNDS MKFS_OPTS...: an aged image (built once per run) copied to $IMG, its
# manifest in $SAVED
aged() {
	local name=$1 size=$2 rounds=$3 d=$ORC/$1
	shift 3
	(
		flock 9
		[ -e "$d/done" ] && exit 0
		rm -rf "$d"
		mkdir -p "$d/mnt"
		truncate -s "$size" "$d/img"
		mkfs.btrfs -q -f "$@" "$d/img" >/dev/null 2>&1 || exit 1
		mount -o loop "$d/img" "$d/mnt" || exit 1
		bash "$BTK_ROOT/tests/oracle/resize_age.sh" "$d/mnt" "$rounds" 1 >"$d/age.log" 2>&1
		local rc=$?
		[ $rc = 0 ] && btrfs quota rescan -w "$d/mnt" >/dev/null && manifest "$d/mnt" >"$d/saved"
		umount "$d/mnt"
		[ $rc = 0 ] && btrfs check --readonly "$d/img" >/dev/null 2>&1 && touch "$d/done"
	) 9>"$ORC/.lock.$name"
	[ -e "$ORC/$name/done" ] || {
		echo "ageing image $name failed" >&2
		tail "$ORC/$name/age.log" >&2
		return 1
	}
	IMG=$D/$name.img
	cp --sparse=always "$ORC/$name/img" "$IMG"
	SAVED=$ORC/$name/saved
}

# kernel_minimum IMG FROM: the kernel's online minimum on the image given (changed), stepwise
# until it refuses: first FROM (btk's minimum), else 64 MiB more at a time, then steps of
# 32 MiB down, halved at each refusal down to 1 MiB (from the top in 64 MiB steps it took
# minutes on a 2 GiB image)
kernel_minimum() {
	local sz t=$2 st=$((32 << 20))
	LOOP=$(losetup -f --show "$1")
	mount "$LOOP" "$MNT"
	sz=$(btrfs filesystem show --raw "$MNT" | awk '/devid +1 / { print $4 }')
	while [ "$t" -lt "$sz" ] && ! btrfs filesystem resize 1:"$t" "$MNT" >/dev/null 2>&1; do
		t=$((t + (64 << 20)))
	done
	[ "$t" -lt "$sz" ] && sz=$t
	while [ $st -ge $((1 << 20)) ]; do
		if btrfs filesystem resize 1:$((sz - st)) "$MNT" >/dev/null 2>&1; then
			sz=$((sz - st))
		else
			st=$((st / 2))
		fi
	done
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
	echo "$sz"
}

# same_files: the kernel shows the saved tree; then the qgroups agree after its rescan
same_files() {
	LOOP=$(losetup -f --show "$IMG")
	mount -o noatime "$LOOP" "$MNT"
	manifest "$MNT" >"$D/after"
	diff "$SAVED" "$D/after" >&2 || { echo "the files differ" >&2; return 1; }
	btrfs quota rescan -w "$MNT" >/dev/null
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
	check_clean --qgroup-report
	! grep -qiE "counts don't match|different|mismatch" "$D/check.out" || {
		cat "$D/check.out" >&2
		false
	}
}

# kernel_uses: grown by 1 GiB (a full balance needs room for chunks of the kernel's sizes), the
# kernel writes 64 MiB and balances everything, the chunks btk made or cut included. The
# kernel relocates the chunks from the highest logical address down and a system chunk only
# while the unallocated space, halved for DUP, exceeds its data chunk size (10% of the
# device): the system chunk -M moves into a new one, at the top, goes first (left the lowest,
# the DUP image's full balance ended ENOSPC there)
kernel_uses() {
	truncate -s +1G "$IMG"
	LOOP=$(losetup -f --show "$IMG")
	mount "$LOOP" "$MNT"
	btrfs filesystem resize max "$MNT" >/dev/null
	head -c 64M /dev/urandom >"$MNT/kernel-wrote"
	sync -f "$MNT"
	btrfs balance start --full-balance "$MNT" >/dev/null || {
		btrfs filesystem df "$MNT" >&2
		false
	}
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
	check_clean
}

# minimum_case NAME SIZE ROUNDS MKFS_OPTS...: the acceptance of issue 32 on one aged image
minimum_case() {
	aged "$@"
	step -n --json -M "$IMG"
	cp "$BTK_OUT" "$D/plan.json"
	step -P "$IMG"
	min=$(cat "$BTK_OUT")
	cp --sparse=always "$IMG" "$D/kernel.img"
	kmin=$(kernel_minimum "$D/kernel.img" "$min")
	step -M "$IMG"
	[ "$(stat -c %s "$IMG")" = "$min" ]
	python3 - "$D/plan.json" "$min" "$kmin" <<'PY' >&3
import json, sys
p = json.load(open(sys.argv[1]))
m, k, f = int(sys.argv[2]), int(sys.argv[3]), p["floor"]["total"]
assert p["minimum"] == m, (p["minimum"], m)
print("# -M %d MiB, floor %d MiB (%.3fx), kernel online minimum %d MiB (btk/kernel %.3f)"
      % (m >> 20, f >> 20, m / f, k >> 20, m / k))
assert m <= 1.10 * f, "more than 1.10x the floor"
assert m <= k, "above the kernel's online minimum"
PY
	check_clean
	same_files
	kernel_uses
}

@test "aged 16K-node image: -M = -P, at most 1.10x its floor and not above the kernel's minimum; same files, qgroups, kernel writes and balances" {
	minimum_case n16k 1G 4 -n 16k
}

@test "aged 4K-node image (BTK_ORACLE_FULL=1)" {
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] || skip "slow: BTK_ORACLE_FULL=1 runs it (the 16K case runs)"
	minimum_case n4k 2G 6 -n 4k
}

@test "aged 64K-node image (BTK_ORACLE_FULL=1)" {
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] || skip "slow: BTK_ORACLE_FULL=1 runs it (the 16K case runs)"
	minimum_case n64k 2G 6 -n 64k
}

@test "aged image with DUP data (BTK_ORACLE_FULL=1)" {
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] || skip "slow: BTK_ORACLE_FULL=1 runs it (the 16K case runs)"
	minimum_case dup 2G 4 -d dup -m dup
}

@test "aged image with mixed block groups: its chunks cut and their tree blocks and data moved below the size" {
	minimum_case mixed 1G 4 -M
}

# ---- one device of several (tests/oracle/resize_age.sh on a filesystem of NDEV devices) ----

# aged_multi NAME SIZE ROUNDS NDEV MKFS_OPTS...: an aged filesystem of NDEV image files (built
# once per run), copied to IMGS, its manifest in $SAVED
aged_multi() {
	local name=$1 size=$2 rounds=$3 n=$4 d=$ORC/$1 i
	shift 4
	(
		flock 9
		[ -e "$d/done" ] && exit 0
		rm -rf "$d"
		mkdir -p "$d/mnt"
		local imgs=() loops=() rc=1
		for ((i = 0; i < n; i++)); do
			truncate -s "$size" "$d/img$i"
			imgs+=("$d/img$i")
		done
		mkfs.btrfs -q -f "$@" "${imgs[@]}" >/dev/null 2>&1 || exit 1
		for i in "${imgs[@]}"; do loops+=("$(losetup -f --show "$i")"); done
		btrfs device scan "${loops[@]}" >/dev/null 2>&1
		if mount "${loops[0]}" "$d/mnt"; then
			bash "$BTK_ROOT/tests/oracle/resize_age.sh" "$d/mnt" "$rounds" 1 >"$d/age.log" 2>&1
			rc=$?
			[ $rc = 0 ] && btrfs quota rescan -w "$d/mnt" >/dev/null &&
				manifest "$d/mnt" >"$d/saved"
			umount "$d/mnt"
		fi
		[ $rc = 0 ] && btrfs check --readonly "${loops[0]}" >/dev/null 2>&1 && touch "$d/done"
		for i in "${loops[@]}"; do losetup -d "$i"; done
	) 9>"$ORC/.lock.$name"
	[ -e "$ORC/$name/done" ] || {
		echo "ageing image $name failed" >&2
		tail "$ORC/$name/age.log" >&2
		return 1
	}
	IMGS=()
	for ((i = 0; i < n; i++)); do
		cp --sparse=always "$ORC/$name/img$i" "$D/$name.$i.img"
		IMGS+=("$D/$name.$i.img")
	done
	SAVED=$ORC/$name/saved
}

# attach FILE...: loop devices for the files, scanned (LOOPS); detach: gone again
attach() {
	local f
	LOOPS=()
	for f in "$@"; do LOOPS+=("$(losetup -f --show "$f")"); done
	btrfs device scan "${LOOPS[@]}" >/dev/null 2>&1
}

detach() {
	local l
	for l in "${LOOPS[@]}"; do losetup -d "$l"; done
	LOOPS=()
}

# check_multi OPTS...: btrfs check of the filesystem of IMGS
check_multi() {
	attach "${IMGS[@]}"
	btrfs check --readonly "$@" "${LOOPS[0]}" >"$D/check.out" 2>&1
	local rc=$?
	detach
	[ $rc = 0 ] || {
		echo "btrfs check $* fails:" >&2
		tail -20 "$D/check.out" >&2
		return 1
	}
}

# kernel_minimum_multi DEVID FROM FILE...: the kernel's online minimum of devid (as
# kernel_minimum) on the filesystem of the files given (changed)
kernel_minimum_multi() {
	local devid=$1 t=$2 sz st=$((32 << 20))
	shift 2
	# the kernel refuses any size below 256 MiB (btrfs_ioctl_resize)
	[ "$t" -ge $((256 << 20)) ] || t=$((256 << 20))
	attach "$@"
	mount "${LOOPS[0]}" "$MNT"
	sz=$(btrfs filesystem show --raw "$MNT" | awk -v d="$devid" '$1 == "devid" && $2 == d { print $4 }')
	while [ "$t" -lt "$sz" ] && ! btrfs filesystem resize "$devid:$t" "$MNT" >/dev/null 2>&1; do
		t=$((t + (64 << 20)))
	done
	[ "$t" -lt "$sz" ] && sz=$t
	while [ $st -ge $((1 << 20)) ]; do
		if [ $((sz - st)) -gt 0 ] && btrfs filesystem resize "$devid:$((sz - st))" "$MNT" >/dev/null 2>&1; then
			sz=$((sz - st))
		else
			st=$((st / 2))
		fi
	done
	umount "$MNT"
	detach
	echo "$sz"
}

# minimum_multi NAME SIZE ROUNDS NDEV DEVIDS MKFS_OPTS...: the acceptance of issue 32 for
# devices of several, each of DEVIDS ("3 1": devid 3, then devid 1) in turn: as minimum_case,
# with the other devices taking what moves
minimum_multi() {
	local devids=$5 devid
	aged_multi "$1" "$2" "$3" "$4" "${@:6}"
	for devid in $devids; do
		minimum_dev "$devid"
	done
	check_multi
	# the kernel shows the same files; qgroups agree after its rescan
	attach "${IMGS[@]}"
	mount -o noatime "${LOOPS[0]}" "$MNT"
	manifest "$MNT" >"$D/after"
	diff "$SAVED" "$D/after" >&2 || { echo "the files differ" >&2; return 1; }
	btrfs quota rescan -w "$MNT" >/dev/null
	umount "$MNT"
	detach
	check_multi --qgroup-report
	! grep -qiE "counts don't match|different|mismatch" "$D/check.out"
	# grown back by 1 GiB, the kernel writes 64 MiB and balances everything
	for devid in $devids; do truncate -s +1G "${IMGS[$((devid - 1))]}"; done
	attach "${IMGS[@]}"
	mount "${LOOPS[0]}" "$MNT"
	for devid in $devids; do btrfs filesystem resize "$devid:max" "$MNT" >/dev/null; done
	head -c 64M /dev/urandom >"$MNT/kernel-wrote"
	sync -f "$MNT"
	btrfs balance start --full-balance "$MNT" >/dev/null
	umount "$MNT"
	detach
	check_multi
}

# minimum_dev DEVID: -M of devid on IMGS reaches -P, at most 1.10x its floor and not above the
# kernel's online minimum (on a copy of the filesystem as it is)
minimum_dev() {
	local devid=$1 f
	step -n --json -M "$devid:" "${IMGS[@]}"
	cp "$BTK_OUT" "$D/plan.json"
	step -P "$devid:" "${IMGS[@]}"
	min=$(cat "$BTK_OUT")
	local kimgs=()
	for f in "${IMGS[@]}"; do
		cp --sparse=always "$f" "$f.k"
		kimgs+=("$f.k")
	done
	kmin=$(kernel_minimum_multi "$devid" "$min" "${kimgs[@]}")
	rm -f "${kimgs[@]}"
	step -M "$devid:" "${IMGS[@]}"
	cat "$BTK_OUT" >&2
	[ "$(stat -c %s "${IMGS[$((devid - 1))]}")" = "$min" ]
	python3 - "$D/plan.json" "$min" "$kmin" <<'PY' >&3
import json, sys
p = json.load(open(sys.argv[1]))
m, k, f = int(sys.argv[2]), int(sys.argv[3]), p["floor"]["total"]
assert p["minimum"] == m, (p["minimum"], m)
print("# devid %d: -M %d MiB, floor %d MiB (%.3fx), kernel online minimum %d MiB (btk/kernel %.3f)"
      % (p["devid"], m >> 20, f >> 20, m / f, k >> 20, m / k))
assert m <= 1.10 * f, "more than 1.10x the floor"
assert m <= k, "above the kernel's online minimum"
PY
}

@test "aged RAID1 filesystem of 3 devices, one shrunk: its chunks cut, what moves goes to chunks of the others and new ones; same files, qgroups, kernel writes and balances" {
	minimum_multi r1x3 1G 4 3 1 -d raid1 -m raid1
}

# devid 3 first leaves devid 1 and 2 to hold both copies of everything: devid 1's chunks are
# cut to what they hold and their stripes moved below the size (1.20x its floor before)
@test "aged RAID1 filesystem of 3 devices, devid 3 then devid 1 shrunk: a chunk past the size cut to what it holds and moved below it" {
	minimum_multi r1x3 1G 4 3 "3 1" -d raid1 -m raid1
}

# a RAID1 of 2 devices: what leaves devid 1 has its other copy on devid 2 only, so the metadata
# is compacted and the system chunk moves into a new one (its stripes on both devices)
@test "aged RAID1 filesystem of 2 devices, devid 1 shrunk: the system chunk moved into a new one on both; same files, qgroups, kernel writes and balances" {
	aged_multi r1x2 1G 4 2 -d raid1 -m raid1
	step -n -M 1: "${IMGS[@]}"
	grep -q "^would make a system chunk .* on devid [12] (and its copies)" "$BTK_OUT" ||
		{ cat "$BTK_OUT" >&2; false; }
	grep -q "^would empty and remove system chunk" "$BTK_OUT"
	minimum_multi r1x2 1G 4 2 1 -d raid1 -m raid1
}

# ---- power cuts of the mixed and several-device repackings ----

# fs_check IMG...: btrfs check of the filesystem of the files given (with --check-data-csum)
fs_check() {
	local saved=("${IMGS[@]}")
	IMGS=("$@")
	check_multi --check-data-csum
	local rc=$?
	IMGS=("${saved[@]}")
	return $rc
}

# fs_same IMG...: the kernel shows the saved tree on the filesystem of the files given
fs_same() {
	attach "$@"
	mount -o ro,noatime "${LOOPS[0]}" "$MNT" || { detach; return 1; }
	manifest "$MNT" >"$D/after"
	umount "$MNT"
	detach
	diff "$SAVED" "$D/after" >&2 || { echo "the files differ" >&2; return 1; }
}

# powercut_multi DEVID SAMPLES LAST EXPECT...: -M of devid on IMGS (whose -n output matches
# every EXPECT) stopped at SAMPLES evenly spread changes and each of the LAST ones (every
# change with BTK_ORACLE_FULL=1; the devices share one budget: one power cut for all), each
# leaving the old or the new filesystem, clean and with the same files
powercut_multi() {
	local devid=$1 samples=$2 last=$3 i n total every seen_old=0 seen_new=0 budgets=() cur=()
	declare -A seen_gen=()
	shift 3
	step -n -M "$devid:" "${IMGS[@]}"
	for i in "$@"; do grep -qE "$i" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }; done
	step -P "$devid:" "${IMGS[@]}"
	local new old
	new=$(cat "$BTK_OUT")
	old=$(stat -c %s "${IMGS[$((devid - 1))]}")
	CUT=$D
	if [ "$(df --output=avail -B1M /dev/shm 2>/dev/null | tail -1)" -gt 4096 ] 2>/dev/null; then
		SHM_DIR=$(mktemp -d -p /dev/shm btk-aged-XXXXXX)
		CUT=$SHM_DIR
	fi
	for i in "${!IMGS[@]}"; do
		mv "${IMGS[$i]}" "$CUT/orig.$i.img"
		cur+=("$CUT/cut.$i.img")
	done
	fresh() { for i in "${!cur[@]}"; do cp --sparse=always "$CUT/orig.$i.img" "${cur[$i]}"; done; }
	powercut_total fresh 256 300 "$RESIZE" -M "$devid:" "${cur[@]}"
	total=$POWERCUT_TOTAL
	every=$((total / samples))
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] && every=${BTK_POWERCUT_EVERY:-1}
	[ $every -ge 1 ] || every=1
	for ((n = 0; n < total; n += every)); do budgets+=($n); done
	for ((n = total - last; n < total; n++)); do [ $n -gt 0 ] && budgets+=($n); done
	for n in "${budgets[@]}"; do
		fresh
		BTK_FAULT=stop:$n btk_run 300 "$RESIZE" -M "$devid:" "${cur[@]}"
		assert_no_crash
		fs_check "${cur[@]}" || { echo "after $n changes" >&2; return 1; }
		sz=$(btrfs inspect-internal dump-super "${cur[$((devid - 1))]}" |
			awk '$1 == "dev_item.total_bytes" { print $2 }')
		case $sz in
		"$old") seen_old=$((seen_old + 1)) ;;
		"$new") seen_new=$((seen_new + 1)) ;;
		*) echo "after $n changes: size $sz, neither $old nor $new" >&2; return 1 ;;
		esac
		gen=$(btrfs inspect-internal dump-super "${cur[0]}" | awk '$1 == "generation" { print $2 }')
		if [ -z "${seen_gen[$gen]:-}" ]; then
			fs_same "${cur[@]}" || { echo "after $n changes" >&2; return 1; }
			seen_gen[$gen]=1
		fi
	done
	[ $seen_old -gt 0 ]
	[ $seen_new -gt 0 ]
	[ ${#seen_gen[@]} -ge 3 ]
	echo "# ${#budgets[@]} power cuts of ~$total changes (1 in $every and the last $last): $seen_old old, $seen_new new, ${#seen_gen[@]} generations" >&3
}

@test "power cut at sampled writes of a mixed block group shrink (a mixed chunk cut, its tree blocks and data moved): old or new filesystem, same files" {
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] ||
		skip "slow (~2 min): BTK_ORACLE_FULL=1 runs it (the repacking power cut below runs)"
	aged mixed 1G 4 -M
	IMGS=("$IMG")
	# 8 samples and the last 4 (a cut takes ~20 s to judge here)
	powercut_multi 1 8 4 "^would cut mixed chunk .*past the size"
}

@test "power cut at sampled writes of a RAID1 shrink of one device of 3 (chunks cut in every copy, new chunks on the others): old or new filesystem, same files" {
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] ||
		skip "slow (~2.5 min): BTK_ORACLE_FULL=1 runs it (the repacking power cut below runs)"
	aged_multi r1x3 1G 4 3 -d raid1 -m raid1
	powercut_multi 1 16 4 "^would make a data chunk .* on devid [23]"
}

@test "power cut at sampled writes of a RAID1 shrink of devid 1 after devid 3 (a chunk past the size cut to what it holds, a stripe moved below): old or new filesystem, same files" {
	[ "${BTK_ORACLE_FULL:-0}" = 1 ] ||
		skip "slow (~3 min): BTK_ORACLE_FULL=1 runs it (the repacking power cut below runs)"
	aged_multi r1x3 1G 4 3 -d raid1 -m raid1
	step -M 3: "${IMGS[@]}"
	powercut_multi 1 16 4 "^would cut data chunk .*past the size" "^would move metadata chunk"
}

@test "power cut at sampled writes of a repacking shrink (a chunk split, metadata compacted, the system chunk moved into a new one): old or new filesystem, same files" {
	aged n16k 1G 4 -n 16k
	IMGS=("$IMG")
	powercut_multi 1 40 8 "^would cut metadata chunk .*(compacted)" \
		"^would (cut data chunk .*past the size|make a data chunk)" \
		"^would empty and remove system chunk .*moved into a new one" \
		"^would make a system chunk"
}
