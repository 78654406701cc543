# image_lib.bash — what the btk-image oracle tests share (image_get.bats, image_write.bats):
# the populated image (tests/oracle/get_populate.sh through a kernel mount, quotas on), built
# once per run by mkimg.sh and copied per test; loop attach/detach of one image or of every
# device of a multi-device set; btrfs check; `step`, which runs one write verb and checks that
# the kernel sees exactly that change.
#
# Variables: D (scratch), MNT (mount point), IMG_TOOL, MAN (manifest.py).
# One image file: IMAGE (btk-image is given the file; it is attached only to be looked at).
# A device set: DEVS (image files) attached for the whole test by loops_up as LOOPS; then
# btk-image, btrfs check and the mounts all use the loop devices (one page cache), and TARGET
# holds what btk-image is given (LOOPS[0] alone: the others are found by libblkid scan; or
# every one with --device).

image_lib_setup() {
	require_loop
	require_btk image
	require_tool mkfs.btrfs
	require_tool setfacl
	require_tool python3
	IMG_TOOL=$BTK_BUILD/bin/btk-image
	MAN=$BTK_ROOT/tests/oracle/manifest.py
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT"
	LOOP=
	LOOPS=()
	TARGET=()
}

image_lib_teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	loops_down
	true
}

# populated_image DEST: a copy of the run's populated 1 GiB image (built on first use)
populated_image() {
	oracle_image get-populated -s 1G -C get || return 1
	cp --sparse=always "${IMG_DEVS[0]}" "$1"
}

# attach IMG [MOUNT-OPTIONS]: a loop device of our own, mounted on $MNT
attach() {
	LOOP=$(losetup -f --show "$1")
	mount ${2:+-o "$2"} "$LOOP" "$MNT"
}

detach() {
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

# loops_up: every file of DEVS on a loop device (LOOPS), known to the kernel as one filesystem
loops_up() {
	local f
	LOOPS=()
	for f in "${DEVS[@]}"; do LOOPS+=("$(losetup -f --show "$f")"); done
	[ "${#LOOPS[@]}" -lt 2 ] || btrfs device scan "${LOOPS[@]}" >/dev/null
}

loops_down() {
	local l
	for l in "${LOOPS[@]}"; do
		btrfs device scan --forget "$l" >/dev/null 2>&1 || true
		losetup -d "$l" || true
	done
	LOOPS=()
}

# view_up [MOUNT-OPTIONS] / view_down: the filesystem mounted on $MNT (and unmounted)
view_up() {
	if [ "${#LOOPS[@]}" -gt 0 ]; then
		mount ${1:+-o "$1"} "${LOOPS[0]}" "$MNT"
	else
		attach "$IMAGE" "$@"
	fi
}

view_down() {
	if [ "${#LOOPS[@]}" -gt 0 ]; then
		umount "$MNT"
	else
		detach
	fi
}

check_clean() {
	btrfs check --readonly "${LOOPS[0]:-$IMAGE}" >"$D/check.log" 2>&1 || {
		echo "btrfs check fails after: $*" >&2
		tail -20 "$D/check.log" >&2
		return 1
	}
}

# manifest_before: what the kernel sees now, the base of the next step
manifest_before() {
	view_up ro
	python3 "$MAN" "$MNT" >"$D/before"
	view_down
}

# step REGEX VERB ARGS...: runs btk-image VERB TARGET ARGS (TARGET: IMAGE unless set); btrfs
# check is clean; the kernel's view changed, and only at paths matching REGEX
step() {
	local allowed=$1 verb=$2 bad
	shift 2
	[ "${#TARGET[@]}" -gt 0 ] || TARGET=("$IMAGE")
	btk_run 300 "$IMG_TOOL" "$verb" "${TARGET[@]}" "$@"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	check_clean "$verb $*"
	view_up ro
	python3 "$MAN" "$MNT" >"$D/after"
	view_down
	diff "$D/before" "$D/after" | grep '^[<>]' | cut -d' ' -f2 | sort -u >"$D/changed" || true
	[ -s "$D/changed" ] || { echo "$verb $*: the kernel sees no change" >&2; return 1; }
	bad=$(grep -Ev "^($allowed)" "$D/changed" || true)
	[ -z "$bad" ] || {
		echo "$verb $*: unexpected changes at:" >&2
		echo "$bad" | head -20 >&2
		return 1
	}
	mv "$D/after" "$D/before"
}
