#!/usr/bin/env bash
# resize_populate.sh MNT [FILL_MB [SPREAD_MB]] — content for the resize oracle (tests/oracle/resize.bats), written
# through the kernel: files, hard links, xattrs, zstd compression, prealloc, reflinks, a
# subvolume with a snapshot and a read-only snapshot of that snapshot; data spread over the
# device by writing then deleting every other file; metadata and system chunks relocated to
# the end of the device (balance) and the big files that filled its start deleted, so that a
# shrink has chunks to move into holes below.
set -eu
mnt=$1
rnd() { head -c "$1" /dev/urandom; }
mkdir -p "$mnt/fill" "$mnt/spread" "$mnt/meta"
fill=${2:-96} spread=${3:-4}
for i in 0 1 2; do rnd "${fill}M" >"$mnt/fill/big$i"; sync -f "$mnt"; done
for i in $(seq 0 19); do rnd "${spread}M" >"$mnt/spread/f$i"; done
sync -f "$mnt"
python3 - "$mnt/meta" <<'PY'
import os, random, sys
rnd = random.Random(7)
for i in range(3000):
    d = os.path.join(sys.argv[1], "d%02d" % (i % 17))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "s%05d" % i), "wb") as f:
        f.write(rnd.randbytes(rnd.choice([10, 900, 3000, 6000])))
PY
echo hello >"$mnt/meta/h"
ln "$mnt/meta/h" "$mnt/meta/h.link1"
ln "$mnt/meta/h" "$mnt/meta/h.link2"
setfattr -n user.color -v blue "$mnt/meta/h"
setfattr -n user.big -v "$(printf '%0900d' 1)" "$mnt/spread/f1"
mkdir "$mnt/zstd"
btrfs property set "$mnt/zstd" compression zstd
for i in 0 1 2; do yes "compressible line $i" | head -c 3M >"$mnt/zstd/c$i"; done
fallocate -l 8M "$mnt/prealloc"
rnd 1M | dd of="$mnt/prealloc" bs=1M seek=2 conv=notrunc status=none
cp --reflink=always "$mnt/spread/f3" "$mnt/spread/f3.reflink"
btrfs subvolume create "$mnt/sv" >/dev/null
rnd 2M >"$mnt/sv/inside"
cp --reflink=always "$mnt/spread/f5" "$mnt/sv/f5.reflink"
sync -f "$mnt"
btrfs subvolume snapshot "$mnt/sv" "$mnt/sv.snap" >/dev/null
echo changed >"$mnt/sv.snap/new-in-snap"
btrfs subvolume snapshot -r "$mnt/sv.snap" "$mnt/sv.snap.ro" >/dev/null
sync -f "$mnt"
# metadata and system chunks to the end of the device
btrfs balance start -f -m -s "$mnt" >/dev/null 2>&1 || [ "${fill}" -lt 96 ] # small images may lack room
rm -f "$mnt/fill/big"*
for i in $(seq 0 2 19); do rm -f "$mnt/spread/f$i"; done
sync -f "$mnt"
btrfs balance start -dusage=0 "$mnt" >/dev/null 2>&1 || true
sync -f "$mnt"
