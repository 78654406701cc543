#!/bin/bash
# fsck-same.sh OLD NEW IMG... — runs two btk-fsck binaries over the same images, as text,
# as --json and as text with --check-data-csum, and compares stdout, stderr and the exit
# status byte for byte (each run on a scratch copy). Prints each image that differs with a
# diff, then "N images: S same, D differ"; exits 1 when any differs. For refactorings that
# must not change the checker's output.
set -u
[ $# -ge 3 ] || {
	echo "usage: $0 OLD-BTK-FSCK NEW-BTK-FSCK IMG..." >&2
	exit 2
}
old=$1 new=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
same=0 differ=0
for img in "$@"; do
	ok=1
	for mode in "" --json --check-data-csum; do
		for v in old new; do
			bin=$old
			[ $v = new ] && bin=$new
			cp --sparse=always "$img" "$tmp/img"
			# the image path is the same for both runs; the binary's name is not printed
			timeout 120 "$bin" $mode "$tmp/img" >"$tmp/$v.out" 2>"$tmp/$v.err"
			echo "exit $?" >>"$tmp/$v.err"
		done
		if ! cmp -s "$tmp/old.out" "$tmp/new.out" || ! cmp -s "$tmp/old.err" "$tmp/new.err"; then
			ok=0
			echo "DIFFERS: $img ${mode:-(text)}"
			diff "$tmp/old.out" "$tmp/new.out" | head -20
			diff "$tmp/old.err" "$tmp/new.err" | head -10
		fi
	done
	if [ $ok = 1 ]; then same=$((same + 1)); else differ=$((differ + 1)); fi
done
echo "$# images: $same same, $differ differ"
[ $differ = 0 ]
