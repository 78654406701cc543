#!/usr/bin/env bash
# full_matrix.sh [--btk PATH] [--fsck] [--lock FILE] [--keep] [--only REGEX] — the whole
# oracle matrix of issue 2: every profile on 1-4 image files, each checksum, nodesize
# 4K/16K/64K, with and without no-holes and the free-space tree (v1 cache), mixed block
# groups, compression, a log tree; kernel-populated rich content. For each image:
# `btk-debug tree --json` against `btrfs inspect-internal dump-tree`
# (tests/oracle/dumptree_cmp.py); with --fsck instead the verdicts of
# `btk-fsck --check-data-csum` and `btrfs check --readonly --check-data-csum` (issue 12: no
# false alarm, no miss). --lock FILE: each step that attaches loop devices runs under
# `flock FILE` (shared machines). Prints one line per image and a final `N passed, N failed`.
# Needs root and loop devices; ~10-15 min.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
btk="" keep=0 only="" fsck=0 lock=""
while [ $# -gt 0 ]; do
	case $1 in
	--btk) btk=$2; shift ;;
	--fsck) fsck=1 ;;
	--lock) lock=$2; shift ;;
	--keep) keep=1 ;;
	--only) only=$2; shift ;;
	*) sed -n '2,11p' "$0" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$btk" ] || btk=${BTK_BUILD:-$root/build}/bin/btk-$([ $fsck = 1 ] && echo fsck || echo debug)
[ "$(id -u)" = 0 ] || { echo "full_matrix: needs root" >&2; exit 2; }
[ -x "$btk" ] || { echo "full_matrix: $btk not built" >&2; exit 2; }
# locked CMD...: CMD under the kernel lock when --lock was given
locked() {
	if [ -n "$lock" ]; then flock "$lock" "$@"; else "$@"; fi
}

tmp=$(mktemp -d /tmp/btk-matrix-XXXXXX)
[ $keep = 1 ] || trap 'rm -rf "$tmp"' EXIT
log=$tmp/results.txt

# name ; regex dump-tree must show (the feature is really there) | mkimg.sh options
matrix() {
	cat <<'EOF'
single-1        ;type DATA(\|single)?$       ;-m single -d single -C rich
dup-1           ;type DATA\|DUP$               ;-m dup -d dup -C rich
raid0-2         ;type DATA\|RAID0$             ;-n 2 -m raid0 -d raid0 -C rich
raid1-2         ;type DATA\|RAID1$             ;-n 2 -m raid1 -d raid1 -C rich
raid1-3         ;type METADATA\|RAID1$         ;-n 3 -s 384M -m raid1 -d single -C rich
raid10-2        ;type DATA\|RAID10$            ;-n 2 -m raid10 -d raid10 -C rich
raid10-4        ;type DATA\|RAID10$            ;-n 4 -s 320M -m raid10 -d raid10 -C rich
raid1c3-3       ;type DATA\|RAID1C3$           ;-n 3 -s 384M -m raid1c3 -d raid1c3 -C rich
raid1c4-4       ;type DATA\|RAID1C4$           ;-n 4 -s 320M -m raid1c4 -d raid1c4 -C rich
raid5-3         ;type DATA\|RAID5$             ;-n 3 -s 384M -m raid5 -d raid5 -C rich
raid6-4         ;type DATA\|RAID6$             ;-n 4 -s 320M -m raid6 -d raid6 -C rich
raid0-4-raid6   ;type METADATA\|RAID6$         ;-n 4 -s 320M -m raid6 -d raid0 -C rich
csum-xxhash     ;.                             ;-c xxhash -C rich
csum-sha256     ;.                             ;-c sha256 -C rich
csum-blake2     ;.                             ;-c blake2 -C rich
node-4k         ;^node .* level 2              ;-N 4096 -C rich
node-16k        ;.                             ;-N 16384 -C rich
node-64k        ;.                             ;-N 65536 -C rich
holes           ;extent data disk byte 0 nr 0  ;-O ^no-holes -C rich
holes-4k-xxhash ;extent data disk byte 0 nr 0  ;-O ^no-holes -N 4096 -c xxhash -C rich
v1-cache        ;FREE_SPACE UNTYPED            ;-R ^free-space-tree -s 2G -o space_cache=v1 -C rich
v1-cache-holes  ;FREE_SPACE UNTYPED            ;-R ^free-space-tree -O ^no-holes -s 2G -o space_cache=v1 -C rich
mixed           ;type DATA\|METADATA           ;-M -N 4096 -C rich
mixed-raid1     ;type DATA\|METADATA\|RAID1$   ;-M -N 4096 -n 2 -m raid1 -d raid1 -C rich
force-zlib      ;compression 1 \(zlib\)        ;-o compress-force=zlib -C rich
force-lzo       ;compression 2 \(lzo\)         ;-o compress-force=lzo -C rich
force-zstd      ;compression 3 \(zstd\)        ;-o compress-force=zstd:15 -C rich
logtree         ;^log root tree                ;-L -C rich
logtree-raid1   ;^log root tree                ;-L -n 2 -m raid1 -d raid1 -C small
many-64k-sha256 ;.                             ;-N 65536 -c sha256 -n 3 -m raid1c3 -d raid0 -s 512M -C many
EOF
}

# shellcheck source=tests/oracle/fsck_verdict.bash
source "$here/fsck_verdict.bash"

passed=0 failed=0
start=$(date +%s)
printf '%-17s %-8s %s\n' image result detail | tee "$log"
while IFS=';' read -r name expect opts; do
	name=$(echo "$name" | xargs)
	expect=$(echo "$expect" | sed 's/ *$//')
	[ -n "$only" ] && ! [[ $name =~ $only ]] && continue
	dir=$tmp/$name
	# shellcheck disable=SC2086
	if ! mapfile -t devs < <(locked bash "$here/mkimg.sh" $opts "$dir" 2>"$tmp/$name.mkimg.err") || [ ${#devs[@]} = 0 ]; then
		printf '%-17s %-8s %s\n' "$name" FAIL "image build failed: $(tail -1 "$tmp/$name.mkimg.err")" | tee -a "$log"
		failed=$((failed + 1))
		continue
	fi
	btrfs inspect-internal dump-tree --noscan "${devs[@]}" >"$tmp/$name.dump" 2>/dev/null
	if ! grep -qaE -- "$expect" "$tmp/$name.dump"; then
		printf '%-17s %-8s %s\n' "$name" FAIL "image lacks /$expect/" | tee -a "$log"
		failed=$((failed + 1))
		continue
	fi
	if [ $fsck = 1 ]; then
		fsck_case "$name" "${devs[@]}"
		[ $keep = 1 ] || rm -f "$dir"/*.img "$tmp/$name.dump"
		continue
	fi
	rc=0
	timeout 600 "$btk" tree --json "${devs[@]}" >"$tmp/$name.jsonl" 2>"$tmp/$name.btk.err" || rc=$?
	if [ $rc != 0 ]; then
		printf '%-17s %-8s %s\n' "$name" FAIL "btk-debug exit $rc: $(head -1 "$tmp/$name.btk.err")" | tee -a "$log"
		failed=$((failed + 1))
	elif python3 "$here/dumptree_cmp.py" --dump "$tmp/$name.dump" --json "$tmp/$name.jsonl" \
		--max 10 >"$tmp/$name.cmp" 2>&1; then
		printf '%-17s %-8s %s\n' "$name" ok "$(head -1 "$tmp/$name.cmp" | cut -c1-100)" | tee -a "$log"
		passed=$((passed + 1))
	else
		printf '%-17s %-8s %s\n' "$name" FAIL "$(sed -n 2p "$tmp/$name.cmp")" | tee -a "$log"
		sed -n '3,20p' "$tmp/$name.cmp" | sed 's/^/    /' | tee -a "$log"
		failed=$((failed + 1))
	fi
	[ $keep = 1 ] || rm -f "$dir"/*.img "$tmp/$name.dump" "$tmp/$name.jsonl"
done < <(matrix)
echo "full matrix took $(($(date +%s) - start)) s$([ $keep = 1 ] && echo "; kept in $tmp")"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
