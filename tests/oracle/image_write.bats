#!/usr/bin/env bats
# btk-image's writing verbs against the kernel, on an image populated through a loop mount
# (tests/oracle/get_populate.sh: snapshots, reflinks, compression, xattrs, ACLs, hard links,
# holes, prealloc, a read-only snapshot) with quotas on: after each verb btrfs check is clean
# and a kernel mount shows exactly the change (tests/oracle/manifest.py before and after: only
# the paths the verb names differ, and copied trees equal their source); then the kernel
# writes, snapshots and deletes on the result, and btrfs check stays clean.

load ../bats/helpers

setup() {
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
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	true
}

attach() {
	LOOP=$(losetup -f --show "$1")
	mount ${2:+-o "$2"} "$LOOP" "$MNT"
}

detach() {
	umount "$MNT"
	losetup -d "$LOOP"
	LOOP=
}

check_clean() {
	btrfs check --readonly "$IMAGE" >"$D/check.log" 2>&1 || {
		echo "btrfs check fails after: $*" >&2
		tail -20 "$D/check.log" >&2
		return 1
	}
}

# step REGEX VERB ARGS...: runs btk-image VERB IMAGE ARGS; btrfs check is clean; the kernel's
# view changed, and only at paths matching REGEX
step() {
	local allowed=$1 verb=$2 bad
	shift 2
	btk_run 300 "$IMG_TOOL" "$verb" "$IMAGE" "$@"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	check_clean "$verb $*"
	attach "$IMAGE" ro
	python3 "$MAN" "$MNT" >"$D/after"
	detach
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

@test "each write verb on a kernel-made image: btrfs check clean, the kernel sees exactly the change; the kernel writes on" {
	IMAGE=$D/fs.img
	truncate -s 1G "$IMAGE"
	mkfs.btrfs -q -f "$IMAGE" >/dev/null
	attach "$IMAGE"
	bash "$BTK_ROOT/tests/oracle/get_populate.sh" "$MNT" >"$D/populate.log" 2>&1 ||
		{ cat "$D/populate.log" >&2; false; }
	btrfs quota enable "$MNT"
	btrfs quota rescan -w "$MNT" >/dev/null
	detach
	check_clean populate
	attach "$IMAGE" ro
	python3 "$MAN" "$MNT" >"$D/before"
	detach

	# a source tree for put: data, holes, links, xattrs, an ACL
	S=$D/src
	mkdir -p "$S/a/b" "$S/c"
	for i in $(seq 1 50); do head -c $((i * 331)) /dev/urandom >"$S/a/f$i"; done
	head -c 3000000 /dev/urandom >"$S/a/b/big"
	truncate -s 5M "$S/c/sparse"
	printf data | dd of="$S/c/sparse" bs=1 seek=2000000 conv=notrunc 2>/dev/null
	ln "$S/a/f1" "$S/c/hard"
	ln -s ../a/f2 "$S/c/sym"
	setfattr -n user.k -v val "$S/a/f3"
	setfacl -m u:1000:rw "$S/a/f4"
	seq 1 100000 >"$S/c/text"

	step '/new' put -r "$S" /new
	step '/zst' put -r --compress zstd "$S" /zst
	attach "$IMAGE" ro
	diff <(python3 "$MAN" "$S") <(python3 "$MAN" "$MNT/new") >&2
	diff <(python3 "$MAN" "$S") <(python3 "$MAN" "$MNT/zst") >&2
	detach
	step '/sub/dir/g5' put -f "$S/a/f9" /sub/dir/g5
	step '/plain/x' mkdir -p /plain/x/y/z
	step '/plain/a/f6' ln /plain/a/f6 /plain/a/f6.third
	step '/new/link' ln -s /some/where /new/link
	step '/plain/a/f7' chmod 640 /plain/a/f7
	step '/plain/a/f8' chown 77:88 /plain/a/f8
	step '/plain/a/f9' touch -d '2003-04-05 06:07:08.25' /plain/a/f9
	step '/plain/touched' touch /plain/touched
	step '/attrs/f' setfattr -n user.small -v changed /attrs/f
	step '/attrs/f' setfattr -x user.binary /attrs/f
	step '/plain/a/f10|/plain/moved' mv /plain/a/f10 /plain/moved
	step '/sub/dir|/sub/moved' mv /sub/dir /sub/moved
	step '/reflink/clone' rm /reflink/clone
	step '/comp-zstd' rm -r /comp-zstd
	step '/plain/a/f6' rm /plain/a/f6.link
	step '/subnew' subvol create /subnew
	step '/subnew' put -r "$S/a" /subnew/a
	step '/snap2' snapshot /sub /snap2
	step '/snap3' snapshot -r /subnew /snap3
	step '/snap' subvol delete /snap
	step '/snap2/moved|/snap2/g1.link' rm -r /snap2/moved # g1.link: one link fewer
	btk_run 60 "$IMG_TOOL" subvol default "$IMAGE" /subnew
	[ "$status" = 0 ] || { show_err; false; }
	check_clean "subvol default"
	attach "$IMAGE" ro
	[ -d "$MNT/a" ] # the default subvolume is what mounts
	detach
	btk_run 60 "$IMG_TOOL" subvol default "$IMAGE" /
	[ "$status" = 0 ]
	# a read-only snapshot refuses changes, unless forced
	before=$(sha256sum <"$IMAGE")
	btk_run 60 "$IMG_TOOL" put "$IMAGE" "$S/a/f1" /snap-ro/x
	assert_one_line_error
	[ "$before" = "$(sha256sum <"$IMAGE")" ]

	# the kernel writes on what btk wrote
	attach "$IMAGE"
	cp -a "$S" "$MNT/new/kernel-copy"
	echo more >>"$MNT/new/a/f5"
	rm -rf "$MNT/zst/a"
	btrfs subvolume snapshot "$MNT/snap3" "$MNT/kernel-snap" >/dev/null
	echo k >"$MNT/kernel-snap/k"
	btrfs subvolume delete "$MNT/snap2" >/dev/null
	btrfs subvolume sync "$MNT" >/dev/null
	btrfs quota rescan -w "$MNT" >/dev/null
	sync -f "$MNT"
	detach
	check_clean "the kernel's writes"
}
