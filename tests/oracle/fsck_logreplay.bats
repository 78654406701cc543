#!/usr/bin/env bats
# btk-fsck --rescue replay-log / zero-log on kernel-made images with a log tree (issue 26):
# mkimg.sh -L copies the image after fsync and before the commit (commit=600). The offline
# replay must give what the kernel's replay at mount gives (on another copy): the same files
# (manifest.py: names, modes, owners, sizes, link counts, times, contents, xattrs) and the
# same fs tree items; both checkers clean; no log left. Power cuts at every write of a replay
# leave the log or the replayed filesystem. Run under the machine-wide kernel lock.

load ../bats/helpers
load image_lib

FSCK=$BTK_BUILD/bin/btk-fsck

setup() {
	require_loop
	require_btk fsck
	require_tool btrfs
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	LOOPS=()
	MAN=$BTK_ROOT/tests/oracle/manifest.py
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	loops_down
	true
}

# copies NAME: fresh copies of the log image set IMG_DEVS as $D/NAME-N.img in COPY
copies() {
	local i
	COPY=()
	for i in "${!IMG_DEVS[@]}"; do
		COPY+=("$D/$1-$i.img")
		cp --sparse=always "${IMG_DEVS[$i]}" "${COPY[$i]}"
	done
}

# kernel_replayed OUT DEV...: the kernel replays the log (a read-write mount), then OUT.man
# (manifest) and OUT.items (fs tree items as dump-tree prints them, without item numbers and
# offsets) of the result
kernel_replayed() {
	local out=$1
	shift
	DEVS=("$@")
	loops_up
	mount "${LOOPS[0]}" "$MNT"
	umount "$MNT"
	loops_down
	views "$out" "$@"
}

# views OUT DEV...: btrfs check --readonly clean, manifest and fs tree items to OUT.*
views() {
	local out=$1
	shift
	DEVS=("$@")
	loops_up
	btrfs check --readonly "${LOOPS[0]}" >"$D/check.log" 2>&1 || {
		tail -20 "$D/check.log" >&2
		loops_down
		return 1
	}
	btrfs inspect-internal dump-tree -t 5 "${LOOPS[0]}" |
		awk '/^\titem [0-9]+ key/ { sub(/^\titem [0-9]+ /, ""); sub(/itemoff [0-9]+ /, ""); print; next } /^\t\t/ { print }' >"$out.items"
	btrfs inspect-internal dump-super "${LOOPS[0]}" | awk '$1 == "log_root" { print $2 }' >"$out.log_root"
	mount -o ro "${LOOPS[0]}" "$MNT"
	python3 "$MAN" "$MNT" >"$out.man"
	umount "$MNT"
	loops_down
}

# same_as_kernel A B: the two results agree (files and fs tree items)
same_as_kernel() {
	diff "$1.man" "$2.man" >&2 || { echo "the files differ from the kernel's replay" >&2; return 1; }
	diff "$1.items" "$2.items" >&2 || { echo "the fs tree items differ from the kernel's replay" >&2; return 1; }
	[ "$(cat "$2.log_root")" = 0 ]
}

replay_case() {
	copies kernel
	kernel_replayed "$D/k" "${COPY[@]}"
	copies offline
	btk_run 300 "$FSCK" --rescue replay-log --no-undo "${COPY[@]}"
	assert_no_crash
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "^log of transaction [0-9]* replayed (.*; the log is cleared$" "$BTK_OUT"
	echo "# $(tail -1 "$BTK_OUT")" >&3
	btk_run 300 "$FSCK" -q "${COPY[@]}"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	views "$D/o" "${COPY[@]}"
	same_as_kernel "$D/k" "$D/o"
	grep -q "^/logged/renamed " "$D/o.man"
	! grep -q "^/logged/fsynced-00 " "$D/o.man"
	[ "$(grep -c '^/logged/' "$D/o.man")" = 40 ]
	# a second run finds no log
	btk_run 60 "$FSCK" --rescue replay-log --no-undo "${COPY[@]}"
	[ "$status" = 0 ]
	grep -q "^log: none to replay$" "$BTK_OUT"
}

@test "replay-log: one device: the offline replay equals the kernel's (files and fs tree items), both checkers clean" {
	oracle_image rescue-log -L -C small -s 512M
	replay_case
}

@test "replay-log: RAID1 on two devices, through --repair: equals the kernel's replay" {
	oracle_image rescue-log2 -L -n 2 -s 256M -m raid1 -d raid1 -C small
	copies kernel
	kernel_replayed "$D/k" "${COPY[@]}"
	copies offline
	btk_run 300 "$FSCK" --repair --no-undo "${COPY[@]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "^log of transaction [0-9]* replayed" "$BTK_OUT"
	views "$D/o" "${COPY[@]}"
	same_as_kernel "$D/k" "$D/o"
}

@test "replay-log through --repair: a bit flipped in both copies of the log root (DUP) is set back first, then the log replays: the same image as from an undamaged copy" {
	oracle_image rescue-log -L -C small -s 512M
	copies clean
	btk_run 300 "$FSCK" --repair --no-undo "${COPY[@]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	copies flipped
	"$BTK_BUILD/tests/smash" flip log 1 1000 "${COPY[@]}" >/dev/null
	"$BTK_BUILD/tests/smash" flip log 2 1008 "${COPY[@]}" >/dev/null
	btk_run 300 "$FSCK" --repair --no-undo "${COPY[@]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "^HEALED: tree 18446744073709551610 level 0 .*bit 1000 .*flipped" "$BTK_OUT"
	grep -q "^log of transaction [0-9]* replayed" "$BTK_OUT"
	cmp "$D/clean-0.img" "$D/flipped-0.img"
	btrfs check --readonly "${COPY[0]}" >/dev/null 2>&1
}

# mixed_log IMG: a one-device image whose log holds what fsync logs of changes to files that
# the last commit has: an append, an overwrite in the middle of a file (its extent split),
# a truncate and rewrite, an unlink (a directory's logged deletes), a hard link, an xattr;
# IMG is the copy taken before the commit
mixed_log() {
	local img=$1 l
	truncate -s 512M "$img.tmp"
	mkfs.btrfs -q -f "$img.tmp" >/dev/null
	l=$(losetup -f --show "$img.tmp")
	LOOPS=("$l")
	mount -o commit=600 "$l" "$MNT"
	mkdir "$MNT/d"
	python3 - "$MNT/d" <<'PY'
import os, random, sys
d = sys.argv[1]
rnd = random.Random(26)
for i in range(1, 5):
    with open(os.path.join(d, "base%d" % i), "wb") as f:
        f.write(rnd.randbytes(200000))
with open(os.path.join(d, "small"), "wb") as f:
    f.write(b"hi\n")
os.setxattr(os.path.join(d, "base1"), "user.a", b"1")
PY
	btrfs filesystem sync "$MNT"
	python3 - "$MNT/d" <<'PY'
import os, random, sys
d = sys.argv[1]
rnd = random.Random(27)
def fsync_path(p):
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
with open(os.path.join(d, "base1"), "ab") as f:
    f.write(rnd.randbytes(5000)); f.flush(); os.fsync(f.fileno())
with open(os.path.join(d, "base2"), "r+b") as f:
    f.seek(50000); f.write(rnd.randbytes(8192)); f.flush(); os.fsync(f.fileno())
with open(os.path.join(d, "base3"), "wb") as f:
    f.write(rnd.randbytes(3000)); f.flush(); os.fsync(f.fileno())
os.unlink(os.path.join(d, "base4"))
fsync_path(d)
os.link(os.path.join(d, "small"), os.path.join(d, "small-link"))
fsync_path(os.path.join(d, "small"))
os.setxattr(os.path.join(d, "base1"), "user.b", b"2")
fsync_path(os.path.join(d, "base1"))
PY
	cp --sparse=always "$img.tmp" "$img"
	umount "$MNT"
	loops_down
	rm -f "$img.tmp"
}

@test "replay-log: changes to committed files (append, overwrite in the middle, truncate, unlink, hard link, xattr): equals the kernel's replay" {
	mixed_log "$D/mixed.img"
	btrfs inspect-internal dump-super "$D/mixed.img" | grep -Eq '^log_root[[:space:]]+[1-9]'
	IMG_DEVS=("$D/mixed.img")
	copies kernel
	kernel_replayed "$D/k" "${COPY[@]}"
	copies offline
	btk_run 300 "$FSCK" --rescue replay-log --no-undo "${COPY[@]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q ", 1 name(s) added, 1 removed, 1 inode(s) deleted," "$BTK_OUT"
	echo "# $(tail -1 "$BTK_OUT")" >&3
	btk_run 300 "$FSCK" -q "${COPY[@]}"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	views "$D/o" "${COPY[@]}"
	same_as_kernel "$D/k" "$D/o"
	! grep -q "^/d/base4 " "$D/o.man"
	grep -q "^/d/small-link .* nlink=2 " "$D/o.man"
}

@test "zero-log: the log is dropped, what it held is listed as lost, the result is the last commit" {
	oracle_image rescue-log -L -C small -s 512M
	copies before
	# the last commit, as the kernel shows it without replaying
	DEVS=("${COPY[@]}")
	loops_up
	mount -o ro,rescue=nologreplay "${LOOPS[0]}" "$MNT"
	python3 "$MAN" "$MNT" >"$D/commit.man"
	umount "$MNT"
	loops_down
	btk_run 300 "$FSCK" --zero-log --no-undo "${COPY[@]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "^LOST: tree 5 inode [0-9]*: logged name \"renamed\" in directory [0-9]*$" "$BTK_OUT"
	[ "$(grep -c '^LOST: tree 5 inode [0-9]*: logged name' "$BTK_OUT")" = 41 ]
	grep -q "dropped unreplayed .*: what it held is lost$" "$BTK_OUT"
	views "$D/z" "${COPY[@]}"
	diff "$D/commit.man" "$D/z.man" >&2
	[ "$(cat "$D/z.log_root")" = 0 ]
}

@test "replay-log: a power cut at every write leaves the log or the replayed filesystem; a second run finishes" {
	oracle_image rescue-log -L -C small -s 512M
	copies kernel
	kernel_replayed "$D/k" "${COPY[@]}"
	copies damaged
	local n old=0 new=0 img=$D/cut.img
	for n in $(seq 0 300); do
		cp --sparse=always "${COPY[0]}" "$img"
		BTK_FAULT=stop:$n btk_run 120 "$FSCK" --rescue replay-log --no-undo "$img"
		assert_no_crash
		btk_run 120 "$FSCK" -q "$img"
		[ "$status" = 0 ] || { show_err; echo "cut at write $n: not clean" >&2; return 1; }
		if btrfs inspect-internal dump-super "$img" | grep -Eq '^log_root[[:space:]]+0$'; then
			new=$((new + 1))
		else
			old=$((old + 1))
			# the log is whole: a second run replays it
			btk_run 120 "$FSCK" --rescue replay-log --no-undo "$img"
			[ "$status" = 1 ] || { show_err; echo "cut at write $n: the rerun" >&2; return 1; }
		fi
		views "$D/c" "$img"
		same_as_kernel "$D/k" "$D/c" || { echo "cut at write $n" >&2; return 1; }
		[ $new -lt 2 ] || break
	done
	echo "# $old cuts left the log, $new the replayed filesystem" >&3
	[ $old -ge 3 ] && [ $new = 2 ]
}

@test "the write verbs and btk-resize refuse a log tree and name btk-fsck --rescue replay-log" {
	require_btk image resize
	oracle_image rescue-log -L -C small -s 512M
	copies verbs
	btk_run 60 "$BTK_BUILD/bin/btk-image" mkdir "${COPY[0]}" /m
	[ "$status" != 0 ]
	grep -q "btk-fsck --rescue replay-log" "$BTK_ERR"
	btk_run 60 "$BTK_BUILD/bin/btk-resize" +64m "${COPY[0]}"
	[ "$status" != 0 ]
	grep -q "btk-fsck --rescue replay-log" "$BTK_ERR"
}
