#!/usr/bin/env bash
# resize_age.sh MNT [ROUNDS [SEED]] — ages a mounted btrfs through the kernel for the resize
# minimum tests: rounds of create/append/truncate/delete/rename, a snapshot per round (older
# ones deleted), reflinks, zstd-compressed files and quotas on, so that chunks end up partly
# used and spread over the device as on a long-lived filesystem.
set -eu
mnt=$1 rounds=${2:-6} seed=${3:-1}
btrfs quota enable "$mnt"
btrfs subvolume create "$mnt/vol" >/dev/null
mkdir -p "$mnt/vol/z"
btrfs property set "$mnt/vol/z" compression zstd
python3 - "$mnt" "$rounds" "$seed" <<'PY'
import os, random, subprocess, sys
mnt, rounds, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
vol = os.path.join(mnt, "vol")
files = []
def blob(n):
    return rnd.randbytes(n) if rnd.random() < 0.7 else (b"line %d\n" % n) * (n // 8 + 1)
for r in range(rounds):
    for i in range(120):
        d = os.path.join(vol, "z" if rnd.random() < 0.2 else "d%d" % rnd.randrange(8))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "f%d_%d" % (r, i))
        with open(p, "wb") as f:
            f.write(blob(rnd.choice([500, 3000, 20000, 200000, 1 << 20, 3 << 20])))
        files.append(p)
    for p in rnd.sample(files, min(len(files), 40)):
        with open(p, "ab") as f:
            f.write(blob(rnd.choice([100, 8000, 300000])))
    for p in rnd.sample(files, min(len(files), 20)):
        os.truncate(p, rnd.randrange(0, 1 << 16))
    for p in rnd.sample(files, min(len(files), 10)):
        q = p + ".r"
        os.rename(p, q)
        files[files.index(p)] = q
    for p in rnd.sample(files, min(len(files), 6)):
        subprocess.run(["cp", "--reflink=always", p, p + ".cl%d" % r], check=True)
    subprocess.run(["sync", "-f", mnt], check=True)
    subprocess.run(["btrfs", "subvolume", "snapshot", vol, os.path.join(mnt, "snap%d" % r)],
                   check=True, stdout=subprocess.DEVNULL)
    if r >= 2 and r % 2 == 0:
        subprocess.run(["btrfs", "subvolume", "delete", os.path.join(mnt, "snap%d" % (r - 2))],
                       check=True, stdout=subprocess.DEVNULL)
    for p in rnd.sample(files, len(files) // 3):
        os.unlink(p)
        files.remove(p)
    subprocess.run(["sync", "-f", mnt], check=True)
PY
# a commit by ioctl wakes the cleaner: no wait for its 30 s timer (the snapshots deleted above)
btrfs filesystem sync "$mnt" >/dev/null
btrfs subvolume sync "$mnt" >/dev/null 2>&1 || true
sync -f "$mnt"
