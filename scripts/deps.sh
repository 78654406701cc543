#!/usr/bin/env bash
# Installs the Debian packages btk needs that are missing. Usage: deps.sh build|check
set -u
# The tools need build_pkgs; the tests (check) need the rest, libcmocka for the unit tests too.
build_pkgs="gcc make pkg-config libblkid-dev libpopt-dev libzstd-dev zlib1g-dev liblzo2-dev
 libxxhash-dev libssl-dev libb2-dev libext2fs-dev libacl1-dev libattr1-dev libdeflate-dev
 libarchive-dev
 libselinux1-dev"
# (libarchive-dev: the header at build time and, by its dependency, libarchive13, whose
# libarchive.so.13 btk-mkfs --rootdir ARCHIVE and btk-image put --archive load when they run)
# (libselinux1-dev: optional; its header builds btk-mkfs --file-contexts, which loads
# libselinux.so.1 when given)
# (one line per need, so that additions do not collide)
check_pkgs="libcmocka-dev bats btrfs-progs e2fsprogs acl attr rsync xz-utils python3 util-linux coreutils
 clang libclang-rt-14-dev
 fdisk
 libarchive-tools cpio zstd bzip2
 sleuthkit
 python3-pytest
 ewf-tools"
want=$build_pkgs
# one installer at a time, however many makes ask
exec 9<"$0" && flock 9 # the script itself: readable by every user, whoever ran it first
[ "${1:-build}" = check ] && want="$build_pkgs $check_pkgs"
# one dpkg-query for all: a no-op make stays well under a second
installed=" $(dpkg-query -W -f='${Package} ${Status}\n' $want 2>/dev/null |
	awk '/ ok installed$/ { printf "%s ", $1 }')"
missing=""
for p in $want; do
	case $installed in *" $p "*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "btk: missing Debian packages:$missing" >&2
	echo "btk: run as root, or: apt-get install$missing" >&2
	exit 1
fi
echo "btk: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends $missing >/dev/null ||
	{ apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $missing >/dev/null; }
