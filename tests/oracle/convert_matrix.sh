#!/usr/bin/env bash
# convert_matrix.sh [--btk PATH] [--quick] — the full acceptance of btk-convert (issue 13), by
# hand (make check runs a small part of it in convert.bats): the full generated tree
# (gen_tree.sh: 20,000 files, 1,200 hard links, a 5 GiB sparse file, ACLs on directories;
# plus 9,000 long names for a two-level htree, and convert_check.sh's own additions)
# as ext2, ext3, ext4, ext4 with 64bit,metadata_csum,huge_file,inline_data and ext4 with
# every feature btk-convert takes, each through convert_check.sh (8 GiB images); 98 %-full
# ext4s of 1, 2 and 4 GiB; kernel writes into unwritten extents (convert_prealloc.sh) of every
# flavour that has them; a power cut at every write of a small conversion and rollback.
# --quick: the small tree and 256 MiB images. --lock FILE: each case that mounts runs under
# flock FILE (a machine shared with other kernel tests), not the whole run. Prints one line per
# case and "N passed, N failed". Root; ~10-20 minutes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
conv=${BTK_BUILD:-$root/build}/bin/btk-convert
quick=""
lockfile=""
while [ $# -gt 0 ]; do
	case $1 in
	--btk) conv=$2; shift ;;
	--quick) quick=small ;;
	--lock) lockfile=$2; shift ;;
	*) sed -n '2,10p' "$0" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "convert_matrix: needs root" >&2; exit 2; }
[ -x "$conv" ] || { echo "convert_matrix: $conv not built" >&2; exit 2; }
w=$(mktemp -d /tmp/btk-convmatrix-XXXXXX)
trap 'for m in "$w/mb" "$w/me"; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done; rm -rf "$w"' EXIT
pass=0 failed=0
# the kernel lock (--lock), held through each case that mounts
lock() { [ -z "$lockfile" ] || { exec 9>>"$lockfile" && flock 9; }; }
unlock() { [ -z "$lockfile" ] || { flock -u 9 && exec 9>&-; }; }
result() { # NAME STATUS OUTPUT
	if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else failed=$((failed + 1)); fi
	echo "$3" | tail -3
}

bash "$here/gen_tree.sh" "$w/src" $quick >/dev/null 2>&1 || { echo "gen_tree failed" >&2; exit 2; }
# 9,000 names of 240 bytes: e2fsck -fD makes /longnames a two-level htree (convert_check.sh)
python3 -c 'import os, sys; os.mkdir(sys.argv[1]); [open(os.path.join(sys.argv[1], "%05d-" % i + "n" * 234), "w").close() for i in range(9000)]' "$w/src/longnames"
if [ -n "$quick" ]; then
	export EXT_SIZE=256M
	rm -f "$w/src/sparse-5g"
else
	export EXT_SIZE=8G
fi
export ROLLBACK_TREE_CMP=1
for v in "ext2:-t ext2" "ext3:-t ext3" "ext4:-t ext4" \
	"ext4-all:-t ext4 -O 64bit,metadata_csum,huge_file,inline_data" \
	"ext4-every:-t ext4 -O 64bit,metadata_csum,metadata_csum_seed,huge_file,inline_data,large_dir,orphan_file"; do
	name=${v%%:*}
	# shellcheck disable=SC2086
	lock
	out=$("$here/convert_check.sh" "$conv" "$w/src" "$w" "$name" ${v#*:} 2>&1)
	st=$?
	unlock
	result "$name" $st "$out"
done

# the kernel writes into what were unwritten extents, every flavour that has them
for v in "ext4:-t ext4" "ext4-all:-t ext4 -O 64bit,metadata_csum,huge_file" \
	"inline:-t ext4 -O inline_data" "nojournal:-t ext4 -O ^has_journal" \
	"ext4-every:-t ext4 -O 64bit,metadata_csum,metadata_csum_seed,huge_file,inline_data,large_dir,orphan_file"; do
	lock
	# shellcheck disable=SC2086
	out=$("$here/convert_prealloc.sh" "$conv" "$w" "prealloc-${v%%:*}" ${v#*:} 2>&1)
	st=$?
	unlock
	result "prealloc-${v%%:*}" $st "$out"
done

# 98 % full: converted completely (btrfs check, exact rollback) or refused with no byte
# changed, as the dry run said
for size in 1G 2G 4G; do
	img=$w/full-$size.img
	mke2fs -q -F -t ext4 -b 4096 -m 0 -d "$w/src" "$img" "$size" 2>/dev/null
	read -r total free < <(dumpe2fs -h "$img" 2>/dev/null |
		awk '/^Block count:/ { t = $3 } /^Free blocks:/ { f = $3 } END { print t, f }')
	printf 'write /dev/null filler\nfallocate /filler 0 %d\n' $((total * 98 / 100 - (total - free) - 1)) |
		debugfs -w -f - "$img" >/dev/null 2>&1
	before=$(python3 "$here/sparse_sha256.py" "$img")
	cp --sparse=always "$img" "$img.orig"
	"$conv" --dry-run "$img" >/dev/null 2>&1
	dry=$?
	"$conv" --no-progress "$img" >/dev/null 2>"$w/err"
	rc=$?
	if [ "$rc" -ne "$dry" ]; then
		result "full-$size" 1 "full-$size: dry run said $dry, the conversion $rc: $(cat "$w/err")"
	elif [ "$rc" -eq 0 ]; then
		ok=1 cmp="kernel trees not compared"
		btrfs check --readonly "$img" >/dev/null 2>&1 || ok=0
		if [ $ok = 1 ]; then
			mkdir -p "$w/me" "$w/mb"
			lock
			mount -o loop,ro "$img.orig" "$w/me" && mount -o loop,ro "$img" "$w/mb" &&
				cmp=$(python3 "$here/convert_tree_cmp.py" --skip ext2_saved --unwritten-holes "$w/me" "$w/mb" | tail -1) || ok=0
			umount "$w/mb" "$w/me" 2>/dev/null
			unlock
		fi
		"$conv" -r "$img" >/dev/null 2>&1 || ok=0
		e2fsck -fn "$img" >/dev/null 2>&1 || ok=0
		d=$(python3 "$here/ext_used_diff.py" "$img.orig" "$img") || ok=0
		result "full-$size" $((1 - ok)) "full-$size (98 %): converted, btrfs check clean, $cmp, rolled back, e2fsck clean, $d: $([ $ok = 1 ] && echo ok || echo FAILED)"
	else
		same=0
		[ "$(python3 "$here/sparse_sha256.py" "$img")" = "$before" ] && same=1
		result "full-$size" $((1 - same)) "full-$size (98 %): refused ($(head -c 160 "$w/err")); sha256 unchanged: $([ $same = 1 ] && echo yes || echo NO)"
	fi
	rm -f "$img" "$img.orig"
done

# a power cut at every write
mkdir -p "$w/pc"
head -c 300000 /dev/urandom >"$w/pc/data"
mkdir "$w/pc/dir" && echo hi >"$w/pc/dir/f" && ln "$w/pc/dir/f" "$w/pc/link"
mke2fs -q -F -t ext4 -b 4096 -d "$w/pc" "$w/p.img" 128M 2>/dev/null
out=$(PC_STEP=1 "$here/convert_powercut.sh" "$conv" "$w/p.img" "$w" 2>&1)
result powercut $? "$out"
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
