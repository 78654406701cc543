#!/usr/bin/env bats
# The mkfs.btrfs command lines image build pipelines pass, through a mkfs.btrfs-named link to
# btk-mkfs (installed as $(PREFIX)/libexec/btk/mkfs.btrfs: a pipeline puts that directory
# first on PATH). Each line is run as the pipeline runs it, as nobody (no root), on an image file
# prepared as the pipeline prepares it; then btrfs check --readonly is clean, the kernel mounts
# the image, the mount holds the root tree byte for byte (rsync -aHAX --checksum --numeric-ids)
# with the owners btk wrote, and blkid reads the label and uuid asked for.
#
# Where each line comes from (the pipelines' sources; "as read" = the line read in that
# source's text, "as known" = its shape known without the text at hand):
#   systemd-repart (and mkosi, which builds its images through it): src/shared/mkfs-util.c,
#     make_filesystem(): mkfs.btrfs -q -L LABEL -U UUID NODE [--nodiscard] [-r ROOT] (as read)
#   Yocto image_types.bbclass: IMAGE_CMD:btrfs, dd seek=SIZE count=0, then
#     mkfs.btrfs ${EXTRA_IMAGECMD} -r ${IMAGE_ROOTFS} IMG, EXTRA_IMAGECMD:btrfs ?= "-n 4096
#     --shrink" (as read)
#   Yocto wic (scripts/lib/wic/partition.py): prepare_rootfs_btrfs: truncate, then
#     mkfs.btrfs -b BYTES -r ROOTFS -L LABEL IMG (as read; newer wic adds EXTRAOPTS -U UUID);
#     prepare_empty_partition_btrfs: mkfs.btrfs -b BYTES -L LABEL IMG (as read)
#   debos (actions/image_partition_action.go): mkfs.btrfs -L NAME -f [-O FEATURES] DEV (as read)
#   osbuild stage org.osbuild.mkfs.btrfs: options uuid (required), label, metadata single|dup:
#     mkfs.btrfs -U UUID [-L LABEL] [-m METADATA] DEV (schema as read, order as known)
#   Buildroot fs/btrfs/btrfs.mk: rm -f IMG; mkfs.btrfs --label=L --byte-count=SIZE
#     --nodesize=N --sectorsize=S [--features=F] -r TARGET_DIR IMG (as known)
#   KIWI (kiwi/filesystem/btrfs.py): mkfs.btrfs [create options] -L LABEL -U UUID DEV (as known)
#   genimage (image-btrfs.c): mkfs.btrfs -L 'LABEL' -r ROOT EXTRAARGS 'IMG' on an image file
#     of the configured size (as known)

load ../bats/helpers

setup_file() {
	export ROOT=$BATS_FILE_TMPDIR/root
	mkdir -p "$ROOT/etc" "$ROOT/usr/bin" "$ROOT/var/empty" "$ROOT/home/u"
	echo "root:x:0:0::/root:/bin/sh" >"$ROOT/etc/passwd"
	head -c 300000 /dev/urandom >"$ROOT/usr/bin/tool"
	chmod 755 "$ROOT/usr/bin/tool"
	ln "$ROOT/usr/bin/tool" "$ROOT/usr/bin/tool2"
	ln -s usr/bin "$ROOT/bin"
	head -c 1500 /dev/urandom >"$ROOT/home/u/small"
	setfattr -n user.note -v pipeline "$ROOT/home/u/small" 2>/dev/null || true
	mkfifo "$ROOT/var/fifo"
	chmod -R a+rX "$BATS_FILE_TMPDIR"
}

setup() {
	require_btk mkfs
	require_loop
	require_tool btrfs
	require_tool rsync
	D=$BATS_TEST_TMPDIR
	MNT=$D/mnt
	mkdir -p "$MNT" "$D/bin"
	ln -s "$BTK_BUILD/bin/btk-mkfs" "$D/bin/mkfs.btrfs"
	as_user "$D"
	U=6c1f0e4a-8d3b-4f29-9a57-0b2e1c3d4e5f
}

teardown() {
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	true
}

# run CMD... as the pipeline does: mkfs.btrfs found on PATH, as nobody
pipe() {
	btk_run 300 env PATH="$D/bin:$PATH" "${AS[@]}" "$@"
	assert_no_crash
	[ "$status" -eq 0 ] || { show_err; return 1; }
}

# sized FILE SIZE: an image file as the pipeline prepares it, that nobody may write
sized() {
	truncate -s "$2" "$1"
	chmod 666 "$1"
}

# judge IMG ROOT|- LABEL|- UUID|-: check, mount, content, label, uuid
judge() {
	local img=$1 root=$2 label=$3 uuid=$4
	btrfs check --readonly "$img" >"$D/check" 2>&1 || { cat "$D/check" >&2; return 1; }
	if [ "$label" != - ]; then
		[ "$(blkid -p -o value -s LABEL "$img")" = "$label" ]
	fi
	if [ "$uuid" != - ]; then
		[ "$(blkid -p -o value -s UUID "$img")" = "$uuid" ]
	fi
	mount -o loop,ro "$img" "$MNT"
	if [ "$root" != - ]; then
		run rsync -aHAX --checksum --dry-run --itemize-changes --numeric-ids "$root/" "$MNT/"
		[ "$status" -eq 0 ]
		[ -z "$output" ] || { echo "$output" | head >&2; umount "$MNT"; return 1; }
		# the tree as nobody read it: its owners are the source's, not nobody's
		[ "$(stat -c %u:%g "$MNT/etc/passwd")" = "$(stat -c %u:%g "$root/etc/passwd")" ]
	fi
	touch "$MNT/x" 2>/dev/null && { umount "$MNT"; return 1; } # read-only as asked
	umount "$MNT"
}

@test "systemd-repart / mkosi: -q -L -U NODE --nodiscard -r ROOT (options after the device)" {
	sized "$D/repart.img" 256M
	pipe mkfs.btrfs -q -L root-x86-64 -U $U "$D/repart.img" --nodiscard -r "$ROOT"
	[ ! -s "$BTK_OUT" ]
	judge "$D/repart.img" "$ROOT" root-x86-64 $U
	# an empty partition (no -r) and discard left on
	sized "$D/empty.img" 128M
	pipe mkfs.btrfs -q -L home -U $U "$D/empty.img"
	judge "$D/empty.img" - home $U
}

@test "Yocto image_types: dd seek=SIZE count=0, then -n 4096 --shrink -r ROOTFS IMG" {
	dd if=/dev/zero of="$D/core.btrfs" seek=262144 count=0 bs=1024 2>/dev/null
	chmod 666 "$D/core.btrfs"
	pipe mkfs.btrfs -n 4096 --shrink -r "$ROOT" "$D/core.btrfs"
	[ "$(stat -c %s "$D/core.btrfs")" -lt $((256 << 20)) ] # shrunk to what it holds
	judge "$D/core.btrfs" "$ROOT" - -
}

@test "Yocto wic: -b BYTES -r ROOTFS -L LABEL [-U UUID] IMG, and an empty partition" {
	sized "$D/rootfs_platform.1.btrfs" 300M
	pipe mkfs.btrfs -b $((300 << 20)) -r "$ROOT" -L platform "$D/rootfs_platform.1.btrfs"
	judge "$D/rootfs_platform.1.btrfs" "$ROOT" platform -
	sized "$D/rootfs_new.btrfs" 300M
	pipe mkfs.btrfs -b $((300 << 20)) -r "$ROOT" -L platform -U $U "$D/rootfs_new.btrfs"
	judge "$D/rootfs_new.btrfs" "$ROOT" platform $U
	sized "$D/fs.btrfs" 200M
	pipe mkfs.btrfs -b $((200 << 20)) -L data "$D/fs.btrfs"
	judge "$D/fs.btrfs" - data -
}

@test "debos: -L NAME -f -O FEATURES DEV (a partition formatted before)" {
	sized "$D/part.img" 256M
	mkfs.ext4 -q -F "$D/part.img" # what -f is there for
	pipe mkfs.btrfs -L rootfs -f -O no-holes,block-group-tree "$D/part.img"
	judge "$D/part.img" - rootfs -
}

@test "osbuild: -U UUID -L LABEL -m dup DEV" {
	sized "$D/osbuild.img" 256M
	pipe mkfs.btrfs -U $U -L root -m dup "$D/osbuild.img"
	judge "$D/osbuild.img" - root $U
}

@test "Buildroot: rm -f IMG; --label= --byte-count= --nodesize= --sectorsize= --features= -r TARGET IMG" {
	pipe mkfs.btrfs --label=buildroot --byte-count=256M --nodesize=16384 --sectorsize=4096 \
		--features=extref,skinny-metadata -r "$ROOT" "$D/rootfs.btrfs"
	judge "$D/rootfs.btrfs" "$ROOT" buildroot -
}

@test "KIWI: -L LABEL -U UUID DEV, and genimage: -L 'LABEL' -r ROOT IMG on a sized file" {
	sized "$D/kiwi.raw" 256M
	pipe mkfs.btrfs -L ROOT -U $U "$D/kiwi.raw"
	judge "$D/kiwi.raw" - ROOT $U
	sized "$D/genimage.btrfs" 256M
	pipe sh -c "mkfs.btrfs -L 'gen image' -r '$ROOT'  '$D/genimage.btrfs'"
	judge "$D/genimage.btrfs" "$ROOT" "gen image" -
}
