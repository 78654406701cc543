#!/usr/bin/env bash
# repair-corpus.sh — btk-fsck --repair on every corrupt image of the btrfs-progs corpus
# (../shared/corpus/btrfs-progs-fsck, MANIFEST expected=corrupt), each on a scratch copy:
#   before: btk-fsck error count, btrfs check --readonly status, files btrfs restore reads
#   repair: btk-fsck --repair (timeout 120 s; a crash is an exit >= 128, a hang a timeout)
#   after:  the same three; "clean" when both checkers exit 0; "worse" when btk-fsck finds
#           more errors than before or no longer opens it, or btrfs check stops opening it;
#           "lost" counts files restore read before that it no longer reads the same (a file
#           restore wrote empty before, its extents unreadable, counts only when it is gone)
#           "renamed" counts files whose path is gone while their content reads at a path
#           that is new (the repair set a name right): not lost, listed in the verdict
#   undo:   btk-undo with the repair's undo file must give the image back (same data; holes
#           and zero blocks alike): "undo-bad" counts those it did not
# Usage: bench/repair-corpus.sh [BUILD_DIR] [NAME_FILTER]   (one line per image, then totals)
set -u
B=${1:-build}
FILTER=${2:-}
B=$(cd "$B" && pwd)
CORPUS=${BTK_CORPUS:-/work/shared/corpus/btrfs-progs-fsck}
FSCK=$B/bin/btk-fsck
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

errs() { # btk-fsck error count, or "open" when it could not check
	local out rc
	out=$("$FSCK" -q "$1" 2>/dev/null)
	rc=$?
	if [ $rc -ge 8 ]; then echo open; return; fi
	echo "${out%% *}" | grep -E '^[0-9]+$' || echo 0
}
sparse_sha() { python3 "$(dirname "$0")/../tests/oracle/sparse_sha256.py" --zero-blocks-as-holes "$1"; }
files() { # "sha256  path" of every file btrfs restore reads
	rm -rf "$T/r"
	mkdir "$T/r"
	timeout 120 btrfs restore -i "$1" "$T/r" >/dev/null 2>&1
	(cd "$T/r" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

n=0 clean=0 worse=0 crash=0 hang=0 lost_imgs=0 changed=0 undo_bad=0 renamed_files=0
printf '%-62s %6s %6s %5s %5s %5s %s\n' image before after rc btrfs lost verdict
while IFS=$'\t' read -r name _ _ size expected _; do
	[ "$expected" = corrupt ] || continue
	[ -n "$FILTER" ] && [[ "$name" != *$FILTER* ]] && continue
	img=$T/$name.raw
	xz -dc "$CORPUS/$name.raw.xz" | cp --sparse=always /dev/stdin "$img"
	truncate -s "$size" "$img"
	n=$((n + 1))
	b_err=$(errs "$img")
	btrfs check --readonly "$img" >/dev/null 2>&1
	b_btrfs=$?
	files "$img" >"$T/before.files"
	sha_before=$(sparse_sha "$img")
	rm -f "$img.undo"
	timeout 120 "$FSCK" --repair "$img" >"$T/repair.out" 2>&1
	rc=$?
	a_err=$(errs "$img")
	btrfs check --readonly "$img" >/dev/null 2>&1
	a_btrfs=$?
	files "$img" >"$T/after.files"
	# an empty file read before (e3b0...: nothing of it read) that reads with data after is
	# not a loss; it is one when it is gone
	# a file whose path is gone but whose content reads at a path that is new after the
	# repair (a name set right) is renamed, not lost: counted apart
	comm -13 <(cut -c67- "$T/before.files" | sort) <(cut -c67- "$T/after.files" | sort) \
		>"$T/new.paths"
	comm -23 <(sort "$T/before.files") <(sort "$T/after.files") |
		while read -r sum path; do
			[ "$sum" = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 ] &&
				cut -c67- "$T/after.files" | grep -qxF -- "$path" && continue
			if grep -F -- "$sum  " "$T/after.files" | cut -c67- | grep -qxFf "$T/new.paths"; then
				echo "renamed $path"
			else
				echo "lost $path"
			fi
		done >"$T/gone"
	lost=$(grep -c '^lost ' "$T/gone")
	renamed=$(grep -c '^renamed ' "$T/gone")
	renamed_files=$((renamed_files + renamed))
	[ "$(sparse_sha "$img")" != "$sha_before" ] && changed=$((changed + 1))
	verdict=left
	if [ $rc = 124 ]; then
		verdict=HANG; hang=$((hang + 1))
	elif [ $rc -ge 128 ]; then
		verdict=CRASH; crash=$((crash + 1))
	fi
	if [ "$a_err" = 0 ] && [ $a_btrfs = 0 ]; then
		[ $verdict = left ] && verdict=clean
		clean=$((clean + 1))
	fi
	if { [ "$a_err" = open ] && [ "$b_err" != open ]; } ||
		{ [ "$a_err" != open ] && [ "$b_err" != open ] && [ "$a_err" -gt "$b_err" ]; } ||
		{ [ $b_btrfs != 0 ] && [ $b_btrfs -lt 128 ] && [ $a_btrfs -ge 128 ]; }; then
		verdict="$verdict WORSE"; worse=$((worse + 1))
	fi
	[ "$lost" -gt 0 ] && lost_imgs=$((lost_imgs + 1))
	[ "$renamed" -gt 0 ] && verdict="$verdict renamed:$renamed"
	if [ -e "$img.undo" ]; then
		"$B/bin/btk-undo" "$img.undo" "$img" >/dev/null 2>&1 || verdict="$verdict undo-failed"
		[ "$(sparse_sha "$img")" = "$sha_before" ] || { verdict="$verdict UNDO-BAD"; undo_bad=$((undo_bad + 1)); }
		rm -f "$img.undo"
	elif [ "$(sparse_sha "$img")" != "$sha_before" ]; then
		verdict="$verdict NO-UNDO-FILE"; undo_bad=$((undo_bad + 1))
	fi
	printf '%-62s %6s %6s %5s %5s %5s %s\n' "$name" "$b_err" "$a_err" $rc $a_btrfs "$lost" "$verdict"
	rm -f "$img"
done < <(tail -n +2 "$CORPUS/MANIFEST.tsv" | cut -f1-5 | awk -F'\t' '{print $1"\t"$2"\t"$3"\t"$4"\t"$5"\t"}')
echo "images $n, clean for both checkers $clean, changed $changed, worse $worse, crashes $crash, hangs $hang, images with files lost $lost_imgs, undo not byte-identical $undo_bad, files renamed $renamed_files"
