#!/usr/bin/env bats
# Writers stopped by a signal (issue 23 item 5): SIGINT at every moment of a resize, an image
# file operation and a mkfs (BTK_TEST_SIGINT_AT=N: before the Nth change of a device) ends
# the tool with exit 130 and one line saying what state the image is in — "NAME is unchanged"
# (and it is: same superblock, btrfs check clean) or, after a commit, what it holds and how to
# finish; and a resize whose size stays still cuts an image file longer than its device (the
# state a resize stopped between its commit and its cut leaves).

load helpers

B=$BTK_BUILD/bin

setup() {
	require_btk resize
	require_tool btrfs
	D=$BATS_TEST_TMPDIR
}

super_of() {
	dd if="$1" bs=4096 skip=16 count=1 status=none | sha256sum | cut -d' ' -f1
}
dev_total() {
	btrfs inspect-internal dump-super "$1" | awk '$1 == "dev_item.total_bytes" { print $2 }'
}
check_clean() {
	btrfs check --readonly "$1" >"$D/check.out" 2>&1 || {
		tail -20 "$D/check.out" >&2
		return 1
	}
}

@test "resize: a size that stays still cuts an image file longer than its device" {
	truncate -s 512M "$D/a.img"
	mkfs.btrfs -q -f "$D/a.img" >/dev/null 2>&1
	btk_run 60 "$B/btk-resize" 300m "$D/a.img"
	[ "$status" = 0 ]
	[ "$(stat -c %s "$D/a.img")" = 314572800 ]
	# a resize stopped after its commit, before its cut
	truncate -s 512M "$D/a.img"
	btk_run 60 "$B/btk-resize" 300m "$D/a.img"
	[ "$status" = 0 ] || { show_err; return 1; }
	grep -q "size stays 300.00MiB (314572800 bytes)" "$BTK_OUT"
	grep -q "image file was cut from 536870912 to 314572800" "$BTK_OUT"
	[ "$(stat -c %s "$D/a.img")" = 314572800 ]
	check_clean "$D/a.img"
	# nothing to cut: nothing said, nothing changed
	local before
	before=$(sha256_of "$D/a.img")
	btk_run 60 "$B/btk-resize" 300m "$D/a.img"
	[ "$status" = 0 ] && ! grep -q "cut from" "$BTK_OUT"
	[ "$(sha256_of "$D/a.img")" = "$before" ]
}

# sweep TOOL-ARGS...: runs the command (with IMG copied from $D/orig.img first) with SIGINT
# before change 1, 2, ... until it finishes; judge_unchanged / judge_after are called per state
sweep() {
	local n=1 seen_unchanged=0 seen_after=0
	while :; do
		cp --sparse=always "$D/orig.img" "$D/w.img"
		status=0
		BTK_TEST_SIGINT_AT=$n timeout 120 "$@" >"$D/out" 2>"$D/err" || status=$?
		[ "$status" = 0 ] && break
		[ "$status" = 130 ] || { echo "n=$n: exit $status" >&2; cat "$D/err" >&2; return 1; }
		[ "$(wc -l <"$D/err")" = 1 ] || { echo "n=$n: stderr:" >&2; cat "$D/err" >&2; return 1; }
		if grep -q ": interrupted: .*w.img is unchanged$" "$D/err"; then
			[ "$(super_of "$D/w.img")" = "$(super_of "$D/orig.img")" ] ||
				{ echo "n=$n: said unchanged, superblock differs" >&2; return 1; }
			check_clean "$D/w.img" || { echo "n=$n" >&2; return 1; }
			seen_unchanged=$((seen_unchanged + 1))
		elif grep -q ": interrupted after a commit: " "$D/err"; then
			judge_after "$n" || { echo "n=$n: $(cat "$D/err")" >&2; return 1; }
			seen_after=$((seen_after + 1))
		else
			echo "n=$n: unexpected message: $(cat "$D/err")" >&2
			return 1
		fi
		n=$((n + 1))
		[ $n -lt 500 ] || { echo "never finished" >&2; return 1; }
	done
	echo "# $1: $((n - 1)) interruptions: $seen_unchanged unchanged, $seen_after after a commit" >&3
	[ $seen_unchanged -gt 0 ] && [ $seen_after -gt 0 ]
}

@test "resize: SIGINT at every change: unchanged, or whole and finished by the command it names" {
	truncate -s 512M "$D/orig.img"
	mkfs.btrfs -q -f "$D/orig.img" >/dev/null 2>&1
	judge_after() {
		check_clean "$D/w.img" || return 1
		local cmd
		cmd=$(sed -n "s/.*'\(btk-resize [^']*\)' finishes.*/\1/p" "$D/err")
		[ "$cmd" = "btk-resize 1:222298112 $D/w.img" ] || { echo "command: $cmd" >&2; return 1; }
		# shellcheck disable=SC2086
		"$B/btk-resize" ${cmd#btk-resize } >/dev/null || return 1
		[ "$(stat -c %s "$D/w.img")" = 222298112 ] && [ "$(dev_total "$D/w.img")" = 222298112 ] &&
			check_clean "$D/w.img"
	}
	sweep "$B/btk-resize" -300m "$D/w.img"
	[ "$(stat -c %s "$D/w.img")" = 222298112 ]
}

@test "image uuid: SIGINT at every change of the full rewrite: unchanged, or the new uuid committed" {
	"$B/btk-mkfs" -q -b 256m -U 11111111-2222-3333-4444-555555555555 "$D/orig.img"
	"$B/btk-image" mkdir "$D/orig.img" /d >/dev/null
	"$B/btk-image" snapshot "$D/orig.img" / /snap >/dev/null
	judge_after() {
		grep -q "w.img has the change" "$D/err" && check_clean "$D/w.img" &&
			[ "$("$B/btk-image" uuid "$D/w.img")" = 99999999-8888-7777-6666-555555555555 ]
	}
	sweep "$B/btk-image" uuid "$D/w.img" 99999999-8888-7777-6666-555555555555
	[ "$("$B/btk-image" uuid "$D/w.img")" = 99999999-8888-7777-6666-555555555555 ]
}

@test "image mkdir: SIGINT at every change: unchanged, or the change committed" {
	"$B/btk-mkfs" -q -b 256m "$D/orig.img"
	judge_after() {
		grep -q "w.img has the change" "$D/err" && check_clean "$D/w.img" &&
			"$B/btk-image" ls "$D/w.img" / | grep -qx d
	}
	sweep "$B/btk-image" mkdir "$D/w.img" /d
	"$B/btk-image" ls "$D/w.img" / | grep -qx d
}

@test "mkfs: SIGINT at every change: no filesystem (said so), or the new one" {
	local n=1 st
	while :; do
		rm -f "$D/m.img"
		st=0
		BTK_TEST_SIGINT_AT=$n "$B/btk-mkfs" -q -b 256m "$D/m.img" 2>"$D/err" || st=$?
		[ $st = 0 ] && break
		[ $st = 130 ] || { echo "n=$n: exit $st" >&2; return 1; }
		[ "$(wc -l <"$D/err")" = 1 ]
		if grep -q "^btk-mkfs: interrupted: .*m.img holds no filesystem: btk-mkfs did not finish" "$D/err"; then
			! btrfs check --readonly "$D/m.img" >/dev/null 2>&1
		elif grep -q "^btk-mkfs: interrupted after a commit: .*m.img holds the new filesystem" "$D/err"; then
			check_clean "$D/m.img"
		else
			cat "$D/err" >&2
			return 1
		fi
		n=$((n + 1))
	done
	[ $n -gt 2 ]
}

# run_at N CMD...: $D/orig.img copied to $D/w.img, CMD run with SIGINT before change N; sets st
run_at() {
	local n=$1
	shift
	cp --sparse=always "$D/orig.img" "$D/w.img"
	st=0
	BTK_TEST_SIGINT_AT=$n timeout 120 "$@" >"$D/out" 2>"$D/err" || st=$?
}
# changes CMD...: how many device changes CMD makes (the smallest N at which it finishes, - 1)
changes() {
	local lo=1 hi=1
	while run_at $hi "$@" && [ $st = 130 ]; do lo=$hi hi=$((hi * 2)); done
	[ $st = 0 ] || return 1
	while [ $((hi - lo)) -gt 1 ]; do
		local mid=$(((lo + hi) / 2))
		run_at $mid "$@"
		if [ $st = 0 ]; then hi=$mid; else lo=$mid; fi
	done
	echo $lo
}

@test "convert and rollback: SIGINT near the start, middle and end: ext, btrfs, or said which" {
	require_btk convert
	require_tool mke2fs
	require_tool e2fsck
	local s=$D/src n total i
	mkdir -p "$s/d"
	for i in $(seq 1 40); do head -c $((i * 3000)) /dev/urandom >"$s/d/f$i"; done
	mke2fs -q -F -t ext4 -b 4096 -d "$s" "$D/orig.img" 64M
	cp "$D/orig.img" "$D/ext.img"
	total=$(changes "$B/btk-convert" --no-progress "$D/w.img")
	[ "$total" -gt 10 ]
	for n in 1 2 $((total / 2)) $((total - 3)) $((total - 2)) $((total - 1)) $total; do
		run_at $n "$B/btk-convert" --no-progress "$D/w.img"
		[ $st = 130 ] && [ "$(wc -l <"$D/err")" = 1 ] || { echo "n=$n exit $st" >&2; cat "$D/err" >&2; return 1; }
		if grep -q "^btk-convert: interrupted: .*w.img is unchanged" "$D/err"; then
			e2fsck -fn "$D/w.img" >/dev/null 2>&1 || { echo "n=$n: ext not clean" >&2; return 1; }
		elif grep -q "^btk-convert: interrupted after a commit: .*w.img is converted to btrfs" "$D/err"; then
			check_clean "$D/w.img" || { echo "n=$n" >&2; return 1; }
		else
			echo "n=$n: $(cat "$D/err")" >&2
			return 1
		fi
	done
	# rollback, from the converted image
	"$B/btk-convert" --no-progress "$D/ext.img" >/dev/null
	cp "$D/ext.img" "$D/orig.img"
	total=$(changes "$B/btk-convert" --rollback "$D/w.img")
	for n in 1 $((total - 1)) $total; do
		run_at $n "$B/btk-convert" --rollback "$D/w.img"
		[ $st = 130 ] && [ "$(wc -l <"$D/err")" = 1 ] || { echo "n=$n exit $st" >&2; cat "$D/err" >&2; return 1; }
		if grep -q "^btk-convert: interrupted: .*w.img is unchanged" "$D/err"; then
			cmp -s "$D/w.img" "$D/orig.img"
		elif grep -q "^btk-convert: interrupted: .*w.img is still the btrfs filesystem: the rollback did not finish" "$D/err"; then
			"$B/btk-convert" --rollback "$D/w.img" >/dev/null || { echo "n=$n: rerun failed" >&2; return 1; }
			e2fsck -fn "$D/w.img" >/dev/null 2>&1
		elif grep -q "^btk-convert: interrupted: .*w.img is the ext filesystem again" "$D/err"; then
			e2fsck -fn "$D/w.img" >/dev/null 2>&1
		else
			echo "n=$n: $(cat "$D/err")" >&2
			return 1
		fi
	done
}

@test "a real SIGTERM to a writer at work: exit 130, one line, a clean filesystem" {
	local s=$D/big i
	mkdir -p "$s"
	for i in $(seq 1 60); do head -c $((3 << 20)) /dev/urandom >"$s/f$i"; done
	"$B/btk-mkfs" -q -b 1g "$D/t.img"
	cp --sparse=always "$D/t.img" "$D/t0.img"
	"$B/btk-image" put -r "$D/t.img" "$s" /big 2>"$D/err" &
	local pid=$! st=0 n
	# signal it once it has the image open (its handler is set before that; a fixed sleep
	# could signal a process that had not started yet on a loaded machine)
	for n in $(seq 1 400); do
		ls -l /proc/$pid/fd 2>/dev/null | grep -q "$D/t.img" && break
		sleep 0.05
	done
	kill -TERM $pid 2>/dev/null || true
	wait $pid || st=$?
	[ $st = 0 ] && skip "the put finished before the signal"
	[ $st = 130 ] && [ "$(wc -l <"$D/err")" = 1 ] || { echo "exit $st" >&2; cat "$D/err" >&2; return 1; }
	grep -Eq "^btk-image put: interrupted(: .*t.img is unchanged| after a commit: .*t.img has the change)" "$D/err"
	check_clean "$D/t.img"
}

@test "restore: SIGINT at the first, middle and last changes: unchanged, incomplete (said), or restored" {
	local total n
	"$B/btk-mkfs" -q -b 256m "$D/src.img"
	"$B/btk-image" mkdir "$D/src.img" /d
	"$B/btk-image" dump "$D/src.img" "$D/src.dump" >/dev/null
	truncate -s 256M "$D/orig.img"
	total=$(changes "$B/btk-image" restore "$D/src.dump" "$D/w.img")
	[ "$total" -gt 3 ]
	for n in 1 2 $((total / 2)) $((total - 1)) $total; do
		run_at $n "$B/btk-image" restore "$D/src.dump" "$D/w.img"
		[ $st = 130 ] && [ "$(wc -l <"$D/err")" = 1 ] || { echo "n=$n exit $st" >&2; cat "$D/err" >&2; return 1; }
		if grep -Eq "^btk-image( restore)?: interrupted: .*w.img is unchanged" "$D/err"; then
			cmp -s "$D/w.img" "$D/orig.img"
		elif grep -Eq "^btk-image( restore)?: interrupted: .*w.img holds no complete filesystem: the restore did not finish \(run it again with -f\)" "$D/err"; then
			"$B/btk-image" restore -f "$D/src.dump" "$D/w.img" >/dev/null && check_clean "$D/w.img"
		elif grep -Eq "^btk-image( restore)?: interrupted after a commit: .*w.img holds the restored filesystem" "$D/err"; then
			check_clean "$D/w.img"
		else
			echo "n=$n: $(cat "$D/err")" >&2
			return 1
		fi
	done
}
