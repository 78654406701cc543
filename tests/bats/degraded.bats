#!/usr/bin/env bats
# Degraded arrays without a kernel: btk-mkfs --rootdir sets of every redundant profile, read
# with members missing (not given, or a blank file in their place). btk-fsck names the
# missing devices (E0406, a warning: exit 0), btk-image get -r copies the source tree whole
# (RAID5/6 rebuilt from parity, RAID6 with two members gone); data chunks with no copy left
# are an error (E0409, exit 4), lost metadata refuses the open (exit 8, one line); writers
# refuse. The kernel's view of the same: tests/oracle/degraded.bats.

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_btk fsck
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	FSCK=$BTK_BUILD/bin/btk-fsck
	D=$BATS_TEST_TMPDIR
	SRC=$D/src
	mkdir -p "$SRC/a/b"
	for i in $(seq 1 50); do echo "small $i" >"$SRC/a/f$i"; done
	head -c 1500000 /dev/urandom >"$SRC/a/b/big1"
	head -c 700001 /dev/urandom >"$SRC/a/b/big2"
	ln -s f1 "$SRC/a/link"
}

# mkset N PROFILE [DATA-PROFILE]: d1..dN.img
mkset() {
	local n=$1 m=$2 d=${3:-$2} imgs=() i
	rm -f "$D"/d?.img
	for i in $(seq 1 "$n"); do imgs+=("$D/d$i.img"); done
	"$MKFS" -q --rootdir "$SRC" -b 256m -m "$m" -d "$d" "${imgs[@]}" >/dev/null
}

# left N GONE...: the members not in GONE, as --device options after the first (FIRST)
left() {
	local n=$1 i
	shift
	FIRST= DEVS=()
	for i in $(seq 1 "$n"); do
		[[ " $* " == *" $i "* ]] && continue
		if [ -z "$FIRST" ]; then FIRST=$D/d$i.img; else DEVS+=(--device "$D/d$i.img"); fi
	done
}

# readable N PROFILE GONE...: fsck exit 0 naming them, get -r equal to the source
readable() {
	local n=$1 prof=$2 all
	shift 2
	left "$n" "$@"
	all=("$FIRST")
	for ((i = 1; i < ${#DEVS[@]}; i += 2)); do all+=("${DEVS[i]}"); done
	btk_run 60 "$FSCK" --check-data-csum "${all[@]}"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; false; }
	for g in "$@"; do grep -q "\[E0406 dev-missing\]: device $g is missing" "$BTK_OUT"; done
	grep -q "missing device(s): devid ${1}" "$BTK_ERR"
	rm -rf "$D/got"
	btk_run 60 "$IMG" get -r "${DEVS[@]}" "$FIRST" / "$D/got"
	[ "$status" = 0 ] || { show_err; false; }
	diff -r --no-dereference "$SRC" "$D/got"
}

@test "raid1, raid1c3, raid10: members missing read whole" {
	mkset 2 raid1
	readable 2 raid1 1
	readable 2 raid1 2
	mkset 3 raid1c3
	readable 3 raid1c3 1 3
	mkset 4 raid10
	readable 4 raid10 1 3
	readable 4 raid10 2 4
}

@test "raid5 and raid6: rebuilt from P, from Q, from P and Q (two data stripes gone)" {
	mkset 3 raid5
	for g in 1 2 3; do readable 3 raid5 "$g"; done
	mkset 4 raid6
	readable 4 raid6 1 2
	readable 4 raid6 2 4
	readable 4 raid6 3
}

@test "a blank file in a member's place is read around; alone it is no filesystem" {
	mkset 2 raid1
	truncate -s 0 "$D/d2.img"
	truncate -s 256m "$D/d2.img"
	btk_run 60 "$FSCK" "$D/d2.img" "$D/d1.img"
	[ "$status" = 0 ] || { show_err; false; }
	grep -q "d2.img: not a btrfs filesystem .*: ignored" "$BTK_ERR"
	grep -q "\[E0406 dev-missing\]: device 2 is missing" "$BTK_OUT"
	btk_run 60 "$FSCK" "$D/d2.img"
	[ "$status" = 8 ]
	assert_one_line_error 8
}

@test "lost data chunks are an error (exit 4), lost metadata a one-line refusal (exit 8)" {
	# btk-mkfs puts single chunks on devid 1
	mkset 2 raid1 single
	btk_run 60 "$FSCK" "$D/d2.img"
	[ "$status" = 4 ] || { show_err; cat "$BTK_OUT" >&2; false; }
	grep -q "E0409 dev-missing-data" "$BTK_OUT"
	grep -q "data chunk(s) .* have no copy left" "$BTK_ERR"
	btk_run 60 "$IMG" cat "$D/d2.img" /a/b/big1
	[ "$status" = 1 ]
	mkset 2 single
	btk_run 60 "$FSCK" "$D/d2.img"
	assert_one_line_error 8
	grep -q "missing device(s): devid 1: .* chunk .* has no copy left" "$BTK_ERR"
}

@test "writers refuse a degraded filesystem with one line" {
	mkset 2 raid1
	btk_run 60 "$IMG" mkdir "$D/d1.img" /new
	assert_one_line_error 1
	grep -q "missing device(s): devid 2 (give every member device)" "$BTK_ERR"
	"$BTK_BUILD/tests/corrupt" nlink "$D/d1.img" "$D/d2.img"
	btk_run 60 "$FSCK" --repair "$D/d1.img"
	[ "$status" = 8 ]
	grep -q "cannot repair .*missing device(s): devid 2 (give every member device)" "$BTK_ERR"
	btk_run 60 "$BTK_BUILD/bin/btk-resize" -- -10m "$D/d1.img"
	assert_one_line_error 1
	grep -q "missing device(s): devid 2 (give every member device)" "$BTK_ERR"
}
