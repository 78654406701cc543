# fsck_verdict.bash — sourced by the oracle matrices (full_matrix.sh --fsck,
# fsck_mkfs_matrix.sh): the verdicts of btk-fsck and btrfs check on one image, which must
# agree (issue 12: no false alarm, no miss). The caller sets btk (btk-fsck), lock (a kernel
# lock file or empty), tmp, log, passed and failed.

# btrfs_check DEV... — btrfs check --readonly --check-data-csum; several image files are
# attached as loop devices first (btrfs check finds the other devices only among block
# devices; under the lock), and detached after.
btrfs_check() {
	if [ $# = 1 ]; then
		btrfs check --readonly --check-data-csum "$1"
		return
	fi
	if [ -n "$lock" ]; then
		exec 8>"$lock" && flock 8 || return 8 # never attach without the lock
	fi
	local loops=() l rc=0
	for l in "$@"; do
		loops+=("$(losetup -f --show "$l")") || { rc=8; break; }
	done
	if [ $rc = 0 ]; then
		btrfs device scan "${loops[@]}" >/dev/null
		btrfs check --readonly --check-data-csum "${loops[0]}" || rc=$?
	fi
	for l in "${loops[@]}"; do
		btrfs device scan --forget "$l" >/dev/null 2>&1
		losetup -d "$l"
	done
	[ -n "$lock" ] && exec 8>&-
	return $rc
}

# fsck_case NAME DEV... — both checkers' verdicts on one image; they must agree.
fsck_case() {
	local name=$1 brc=0 krc=0 what
	shift
	btrfs_check "$@" >"$tmp/$name.btrfs" 2>&1 || brc=$?
	timeout 600 "$btk" --check-data-csum "$@" >"$tmp/$name.fsck" 2>&1 || krc=$?
	what="btrfs check exit $brc, btk-fsck exit $krc"
	if [ $brc = 0 ] && [ $krc = 0 ] && grep -q "no error found" "$tmp/$name.fsck"; then
		printf '%-17s %-8s %s\n' "$name" ok "$what; $(grep -m1 'data blocks checked\|total csum bytes' \
			"$tmp/$name.fsck" | tr -s ' ')" | tee -a "$log"
		passed=$((passed + 1))
		return
	fi
	[ $brc = 0 ] && [ $krc != 0 ] && what="FALSE ALARM: $what"
	[ $brc != 0 ] && [ $krc = 0 ] && what="MISS: $what"
	printf '%-17s %-8s %s\n' "$name" FAIL "$what" | tee -a "$log"
	grep -E 'ERROR|\[E[0-9]{4}' "$tmp/$name.fsck" | head -10 | sed 's/^/    btk: /' | tee -a "$log"
	grep -iE 'error|mismatch|ERROR' "$tmp/$name.btrfs" | head -10 | sed 's/^/    btrfs: /' | tee -a "$log"
	failed=$((failed + 1))
}
