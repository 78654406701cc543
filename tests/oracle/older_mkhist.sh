#!/usr/bin/env bash
# older_mkhist.sh DIR: a kernel-made image DIR/h.img with seven committed steps (files created,
# deleted, renamed, overwritten; a subvolume and its snapshot created, then the subvolume
# deleted), for tests/oracle/older.bats. DIR/orig/ keeps every file's
# content as first written (by its path at the time), DIR/gens the generation after each step
# (one a line), DIR/changes the change list of each step ("STEP change path[ -> new]").
set -eu
D=$1
IMG=$D/h.img
MNT=$(mktemp -d)
LOOP=
cleanup() {
	mountpoint -q "$MNT" && umount "$MNT"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rmdir "$MNT"
}
trap cleanup EXIT
mkdir -p "$D/orig/a/b" "$D/orig/keep"
rm -f "$IMG" "$D/gens" "$D/changes"
truncate -s 256M "$IMG"
mkfs.btrfs -q -f "$IMG" >/dev/null
LOOP=$(losetup -f --show "$IMG")
mount "$LOOP" "$MNT"
commit() { # the generation of the commit that sync makes
	sync -f "$MNT"
	btrfs subvolume find-new "$MNT" 99999999 | sed -n 's/^transid marker was //p' >>"$D/gens"
}
mkdir -p "$MNT/a/b" "$MNT/keep"
for i in 1 2 3 4 5; do head -c $((i * 70000)) /dev/urandom >"$D/orig/a/f$i"; done
echo small >"$D/orig/a/b/tiny"
head -c 300000 /dev/urandom >"$D/orig/keep/k1"
cp -a "$D/orig/a" "$D/orig/keep" "$MNT/"
commit # step 1
rm "$MNT/a/f1" "$MNT/a/b/tiny"
printf '2 deleted /a/b/tiny\n2 deleted /a/f1\n' >>"$D/changes"
commit # step 2
mv "$MNT/a/f2" "$MNT/keep/f2moved"
echo new >"$MNT/a/new1"
printf '3 created /a/new1\n3 renamed /a/f2 -> /keep/f2moved\n' >>"$D/changes"
commit # step 3
rm -r "$MNT/a/b"
rm "$MNT/a/f3"
printf '4 deleted /a/b\n4 deleted /a/f3\n' >>"$D/changes"
commit # step 4
head -c 2000000 /dev/urandom >"$MNT/keep/big"
head -c 280000 /dev/urandom >"$MNT/a/f4"
printf '5 created /keep/big\n5 modified /a/f4\n' >>"$D/changes"
# small files into the space the deleted files freed (the allocator
# takes the lowest free range that fits): some deleted data is reused
mkdir "$MNT/fill"
printf '5 created /fill\n' >>"$D/changes"
for i in 01 02 03 04 05 06 07 08; do
	head -c 65536 /dev/urandom >"$MNT/fill/$i"
	printf '5 created /fill/%s\n' $i >>"$D/changes"
done
commit # step 5
btrfs -q subvolume create "$MNT/sv" >/dev/null
mkdir -p "$MNT/sv/d" "$D/orig/sv/d"
head -c 90000 /dev/urandom >"$D/orig/sv/s1"
echo deep >"$D/orig/sv/d/s2"
cp "$D/orig/sv/s1" "$MNT/sv/s1"
cp "$D/orig/sv/d/s2" "$MNT/sv/d/s2"
sync -f "$MNT"
btrfs -q subvolume snapshot "$MNT/sv" "$MNT/snap" >/dev/null
for t in sv snap; do
	printf '6 created /%s\n6 created /%s/s1\n6 created /%s/d\n6 created /%s/d/s2\n' \
		$t $t $t $t >>"$D/changes"
done
commit # step 6
# the subvolume goes; its snapshot keeps the same names (the cleaner may or may not have
# dropped the deleted tree by the commit: both must read the same)
btrfs -q subvolume delete "$MNT/sv" >/dev/null
printf '7 deleted /sv\n7 deleted /sv/s1\n7 deleted /sv/d\n7 deleted /sv/d/s2\n' >>"$D/changes"
commit # step 7
