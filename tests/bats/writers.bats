#!/usr/bin/env bats
# One writer at a time, and no writer over its own input (issue 23, items 1 to 3): the
# writer's lock (libcore/io/lock.c) between btk processes and against flock(1); --wait; the
# fault switch BTK_FAULT reaching every writer; one file as input and output of dump and
# restore; restore over another filesystem. The loop-device refusals: tests/oracle/open_path.bats.

load helpers

setup() {
	require_btk mkfs
	require_btk image
	require_btk resize
	MKFS=$BTK_BUILD/bin/btk-mkfs
	IMG=$BTK_BUILD/bin/btk-image
	RESIZE=$BTK_BUILD/bin/btk-resize
	D=$BATS_TEST_TMPDIR
	cd "$D"
	"$MKFS" -q -b 256m fs.img
}

sha() { sha256_of "$1"; }

# check_clean IMG: btrfs check (Debian's btrfs-progs) finds nothing
check_clean() {
	btrfs check --readonly "$1" >"$D/check.out" 2>&1 || { cat "$D/check.out" >&2; return 1; }
}

# hold_lock SECONDS: flock(1) holds fs.img's lock for SECONDS in the background (its pid in
# $holder); returns once the lock is held (a fixed sleep raced a loaded machine)
hold_lock() {
	rm -f "$D/held"
	flock -x fs.img sh -c ': >"$0"; exec sleep "$1"' "$D/held" "$1" &
	holder=$!
	local i
	for i in $(seq 1 400); do
		[ -e "$D/held" ] && return 0
		sleep 0.05
	done
	echo "flock(1) did not take the lock in 20 s" >&2
	return 1
}

# release_lock: ends hold_lock's flock(1) and the command it runs (which holds the lock too)
release_lock() {
	pkill -P "$holder" 2>/dev/null || true
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
}

# locked_refused CMD...: with fs.img locked by flock(1), CMD exits 1 with the lock line and
# fs.img keeps its bytes
locked_refused() {
	local h
	h=$(sha fs.img)
	local holder
	hold_lock 30 || return 1
	btk_run 20 "$@"
	release_lock
	[ "$status" -eq 1 ] || { show_err; return 1; }
	grep -q "is being changed by another btk process (pid [0-9]*)" "$BTK_ERR" || { show_err; return 1; }
	[ "$(wc -l <"$BTK_ERR")" -eq 1 ] || { show_err; return 1; }
	[ "$(sha fs.img)" = "$h" ]
}

@test "writers: every writer refuses a device another process is changing, nothing written" {
	"$IMG" mkdir fs.img /d
	"$IMG" dump fs.img d.dump >/dev/null
	ln fs.img hard.img
	locked_refused "$MKFS" -f fs.img
	locked_refused "$MKFS" -f hard.img # the lock is the file's, whatever its name
	locked_refused "$RESIZE" +64m fs.img
	locked_refused "$IMG" restore -f d.dump fs.img
	local v
	for v in "mkdir fs.img /x" "rm fs.img /d" "mv fs.img /d /e" "ln -s fs.img /d /l" \
		"chmod fs.img 700 /d" "chown fs.img 1:1 /d" "touch fs.img /t" \
		"setfattr -n user.a -v 1 fs.img /d" "snapshot fs.img / /snap" \
		"subvol create fs.img /sv" "put fs.img d.dump /p" "label fs.img x" \
		"uuid fs.img random" "uuid -m fs.img random"; do
		# shellcheck disable=SC2086 # the verb's words
		locked_refused "$IMG" $v || { echo "verb: $v" >&2; return 1; }
	done
	# readers never wait and are never refused
	local holder
	hold_lock 30
	btk_run 20 "$IMG" ls fs.img /
	release_lock
	[ "$status" -eq 0 ] && grep -qx d "$BTK_OUT" || { show_err; false; }
}

@test "writers: convert and rollback refuse a device another process is changing, nothing written" {
	require_btk convert
	local conv=$BTK_BUILD/bin/btk-convert
	mkdir src
	echo hello >src/a
	rm -f fs.img
	mke2fs -q -F -t ext4 -b 4096 -d src fs.img 64M
	locked_refused "$conv" fs.img
	"$conv" fs.img >/dev/null
	locked_refused "$conv" --rollback fs.img
	"$conv" --rollback fs.img >/dev/null
	e2fsck -fn fs.img >/dev/null
}

@test "writers: --wait waits for the holder, then writes" {
	local holder
	hold_lock 2
	btk_run 30 "$IMG" mkdir --wait fs.img /waited
	[ "$status" -eq 0 ] || { show_err; false; }
	wait
	"$IMG" ls fs.img / | grep -qx waited
	check_clean fs.img
}

@test "writers: 20 parallel mkdirs: each one is done or refused, none is lost" {
	local i pids=()
	for i in $(seq 1 20); do
		"$IMG" mkdir fs.img "/d$i" >/dev/null 2>"$D/err.$i" &
		pids+=($!)
	done
	local ok=0 refused=0
	for i in $(seq 1 20); do
		if wait "${pids[$((i - 1))]}"; then
			echo "d$i" >>"$D/made"
			ok=$((ok + 1))
		else
			grep -q "is being changed by another btk process" "$D/err.$i" ||
				{ cat "$D/err.$i" >&2; return 1; }
			refused=$((refused + 1))
		fi
	done
	echo "$ok made, $refused refused" >&2
	[ "$ok" -ge 1 ]
	"$IMG" ls fs.img / >"$D/ls"
	[ "$(sort "$D/made")" = "$(grep '^d[0-9]' "$D/ls" | sort)" ] || { diff <(sort "$D/made") <(sort "$D/ls") >&2; false; }
	check_clean fs.img
	# with --wait every one of them is made
	for i in $(seq 1 20); do
		"$IMG" mkdir --wait fs.img "/w$i" >/dev/null 2>"$D/err.$i" &
		pids[i - 1]=$!
	done
	for i in $(seq 1 20); do
		wait "${pids[$((i - 1))]}" || { cat "$D/err.$i" >&2; return 1; }
	done
	[ "$("$IMG" ls fs.img / | grep -c '^w[0-9]')" -eq 20 ]
	check_clean fs.img
}

@test "writers: resize and put at once: each is done or refused, none is lost" {
	require_btk debug
	head -c 24M /dev/urandom >"$D/blob"
	local round size=$((256 << 20)) rrc prc
	for round in $(seq 1 8); do
		"$RESIZE" -q +16m fs.img 2>"$D/r.err" &
		local rp=$!
		"$IMG" put fs.img "$D/blob" "/b$round" 2>"$D/p.err" &
		local pp=$!
		rrc=0 prc=0
		wait "$rp" || rrc=$?
		wait "$pp" || prc=$?
		for e in "$rrc:$D/r.err" "$prc:$D/p.err"; do
			[ "${e%%:*}" -eq 0 ] && continue
			grep -q "is being changed by another btk process" "${e#*:}" ||
				{ cat "${e#*:}" >&2; return 1; }
		done
		[ "$rrc" -ne 0 ] || size=$((size + (16 << 20)))
		# what each one that said done did is there
		"$BTK_BUILD/bin/btk-debug" super fs.img | grep -qx "dev_item.total_bytes.$size" ||
			{ echo "round $round: resize said $rrc, size not $size" >&2; return 1; }
		if [ "$prc" -eq 0 ]; then
			"$IMG" cat fs.img "/b$round" | cmp - "$D/blob" || { echo "round $round: put lost" >&2; return 1; }
		fi
	done
	check_clean fs.img
}

@test "writers: one file as the input and the output of dump or restore is refused" {
	local h
	h=$(sha fs.img)
	ln fs.img hard.img
	ln -s fs.img sym.img
	local out
	for out in fs.img ./fs.img hard.img sym.img; do
		btk_run 20 "$IMG" dump fs.img "$out"
		[ "$status" -eq 1 ] || { show_err; return 1; }
		[ "$(sha fs.img)" = "$h" ]
	done
	"$IMG" dump fs.img d.dump >/dev/null
	h=$(sha d.dump)
	ln d.dump d2.dump
	for out in d.dump ./d.dump d2.dump; do
		btk_run 20 "$IMG" restore -f d.dump "$out"
		[ "$status" -eq 1 ] || { show_err; return 1; }
		grep -q "the same file" "$BTK_ERR" || { show_err; return 1; }
		[ "$(sha d.dump)" = "$h" ]
	done
}

@test "writers: restore refuses a target holding a filesystem without -f, as mkfs does" {
	require_tool mkfs.ext4
	"$IMG" dump fs.img d.dump >/dev/null
	truncate -s 256M ext.img
	mkfs.ext4 -q -F ext.img
	local h
	h=$(sha ext.img)
	btk_run 60 "$IMG" restore d.dump ext.img
	[ "$status" -eq 1 ] && grep -q "contains a ext4 filesystem (use -f" "$BTK_ERR" || { show_err; false; }
	[ "$(sha ext.img)" = "$h" ]
	btk_run 60 "$IMG" restore -f d.dump ext.img
	[ "$status" -eq 0 ] || { show_err; false; }
	check_clean ext.img
}

@test "writers: the fault switch reaches mkfs (and a malformed one is a usage error)" {
	btk_run 60 env BTK_FAULT=fail:2 "$MKFS" -f fs.img
	[ "$status" -eq 1 ] && grep -q "injected write failure" "$BTK_ERR" || { show_err; false; }
	btk_run 60 env BTK_FAULT=fail:2 "$MKFS" -b 256m new.img
	[ "$status" -eq 1 ] && [ ! -e new.img ] || { show_err; false; }
	btk_run 60 env BTK_FAULT=sometimes "$MKFS" -f fs.img
	[ "$status" -eq 2 ] && grep -q "BTK_FAULT=sometimes" "$BTK_ERR" || { show_err; false; }
	# stop: the tool goes on, the disk keeps what the first N changes made
	"$MKFS" -q -f fs.img
	"$IMG" mkdir fs.img /kept
	btk_run 60 env BTK_FAULT=stop:0 "$IMG" mkdir fs.img /lost
	[ "$status" -eq 0 ] || { show_err; false; }
	"$IMG" ls fs.img / >"$D/ls"
	grep -qx kept "$D/ls" && ! grep -qx lost "$D/ls"
	check_clean fs.img
}

@test "writers: two mkfs making one new image file at once: exactly one makes it, the other refuses in one line" {
	# The file is locked before it has a name (O_TMPFILE, then linkat): the other mkfs finds it
	# locked, or already made and holding a btrfs, and refuses; it never removes or writes it.
	local round
	for round in 1 2 3 4 5 6 7 8; do
		rm -f new.img
		"$MKFS" -q -L one -b 256m new.img 2>"$D/1.err" &
		local p1=$!
		"$MKFS" -q -L two -b 256m new.img 2>"$D/2.err" &
		local p2=$!
		local r1=0 r2=0
		wait "$p1" || r1=$?
		wait "$p2" || r2=$?
		[ "$r1" -ne 0 ] || [ "$r2" -ne 0 ] || { echo "round $round: both made it" >&2; return 1; }
		[ "$r1" -eq 0 ] || [ "$r2" -eq 0 ] || {
			echo "round $round: both refused" >&2
			cat "$D/1.err" "$D/2.err" >&2
			return 1
		}
		local won=one lost=2
		[ "$r2" -eq 0 ] && won=two lost=1
		[ "$(wc -l <"$D/$lost.err")" -eq 1 ] || { cat "$D/$lost.err" >&2; return 1; }
		[ -e new.img ] || { echo "round $round: the made file was removed" >&2; return 1; }
		btrfs filesystem label new.img | grep -qx "$won" || { echo "round $round: not $won's" >&2; return 1; }
		check_clean new.img
	done
}
