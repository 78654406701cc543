#!/usr/bin/env bash
# fsck_mkfs_matrix.sh [--lock FILE] [--keep] [--only REGEX] — btk-fsck --check-data-csum
# against btrfs check --readonly --check-data-csum on images made by btk-mkfs and by
# mkfs.btrfs (no kernel writes): every profile on 1-4 image files, each checksum, node sizes
# 4K-64K, mixed block groups, without no-holes or the free-space tree, empty and populated
# with --rootdir (tests/oracle/gen_tree.sh small, its sparse 5 GiB file left out). The verdicts must agree (issue 12); the
# kernel-made half of the matrix is `full_matrix.sh --fsck`. Prints one line per image and
# `N passed, N failed`. Root: images of several devices are checked by btrfs check through
# loop devices (under --lock FILE when given).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
btk=${BTK_BUILD:-$root/build}/bin/btk-fsck
mkfs_btk=${BTK_BUILD:-$root/build}/bin/btk-mkfs
keep=0 only="" lock=""
while [ $# -gt 0 ]; do
	case $1 in
	--lock) lock=$2; shift ;;
	--keep) keep=1 ;;
	--only) only=$2; shift ;;
	*) sed -n '2,9p' "$0" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "fsck_mkfs_matrix: needs root" >&2; exit 2; }
[ -x "$btk" ] && [ -x "$mkfs_btk" ] || { echo "fsck_mkfs_matrix: build btk first" >&2; exit 2; }

tmp=$(mktemp -d /tmp/btk-fsck-mkfs-XXXXXX)
[ $keep = 1 ] || trap 'rm -rf "$tmp"' EXIT
log=$tmp/results.txt
# shellcheck source=tests/oracle/fsck_verdict.bash
source "$here/fsck_verdict.bash"

src=$tmp/src
bash "$here/gen_tree.sh" "$src" small >/dev/null 2>&1 || { echo "gen_tree.sh failed" >&2; exit 1; }
# without the 5 GiB sparse file: mkfs.btrfs 6.2 writes its holes as data (5 GB per image)
find "$src" -type f -size +100M -delete

# name ; devices x size ; mkfs options (the same for both tools)
matrix() {
	cat <<'EOF'
default       ;1x512M ;
single        ;1x512M ;-m single -d single
dup           ;1x512M ;-m dup -d dup
node-4k       ;1x512M ;-n 4096
node-64k      ;1x512M ;-n 65536
xxhash        ;1x512M ;--csum xxhash
sha256        ;1x512M ;--csum sha256
blake2        ;1x512M ;--csum blake2
mixed         ;1x512M ;-M
holes-v1      ;1x512M ;-O ^no-holes -R ^free-space-tree
raid0-2       ;2x384M ;-m raid0 -d raid0
raid1-2       ;2x384M ;-m raid1 -d raid1
raid10-4      ;4x320M ;-m raid10 -d raid10
raid1c3-3     ;3x384M ;-m raid1c3 -d raid1c3
raid1c4-4     ;4x320M ;-m raid1c4 -d raid1c4
raid5-3       ;3x384M ;-m raid5 -d raid5
raid6-4       ;4x320M ;-m raid6 -d raid6
mixed-raid1-2 ;2x384M ;-M -m raid1 -d raid1
EOF
}

passed=0 failed=0
start=$(date +%s)
printf '%-17s %-8s %s\n' image result detail | tee "$log"
while IFS=';' read -r name geo opts; do
	name=$(echo "$name" | xargs)
	geo=$(echo "$geo" | xargs)
	for tool in btk-mkfs mkfs.btrfs; do
		for content in empty rootdir; do
			case=$name-$tool-$content
			[ -n "$only" ] && ! [[ $case =~ $only ]] && continue
			devs=()
			for ((i = 0; i < ${geo%x*}; i++)); do
				devs+=("$tmp/$case.$i.img")
				truncate -s "${geo#*x}" "$tmp/$case.$i.img"
			done
			extra=()
			[ $content = rootdir ] && extra=(--rootdir "$src")
			mk=$mkfs_btk
			[ $tool = mkfs.btrfs ] && mk=mkfs.btrfs
			# shellcheck disable=SC2086 # an option list
			if ! "$mk" -q -f $opts "${extra[@]}" "${devs[@]}" >"$tmp/$case.mkfs" 2>&1; then
				printf '%-17s %-8s %s\n' "$case" skip "$tool refuses: $(tail -1 "$tmp/$case.mkfs")" |
					tee -a "$log"
			else
				fsck_case "$case" "${devs[@]}"
			fi
			[ $keep = 1 ] || rm -f "${devs[@]}"
		done
	done
done < <(matrix)
echo "fsck mkfs matrix took $(($(date +%s) - start)) s$([ $keep = 1 ] && echo "; kept in $tmp")"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
