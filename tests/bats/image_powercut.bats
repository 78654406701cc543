#!/usr/bin/env bats
# Power cuts during btk-image writes (fault-injecting io backend, BTK_FAULT=fail:N): the image
# after each of many sampled write budgets, and after each of the last writes, passes btrfs
# check and holds the old state or the new one, whole.

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_tool btrfs
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
}

# fs_tree IMG: every item of the top-level tree as btk-debug decodes it (inodes with their
# sizes, flags, modes, times; names, xattrs, extents)
fs_tree() {
	"$BTK_BUILD/bin/btk-debug" tree -t 5 "$1"
}

# cut_state N: the image after a put -r cut after N writes is clean and its whole top-level
# tree is the old one or the completed put's (fs_tree); counts none/all
cut_state() {
	cp --sparse=always "$D/orig.img" "$D/fs.img"
	BTK_FAULT=fail:$1 btk_run 60 "$IMG" put -r "$D/fs.img" "$D/src" /new
	assert_no_crash
	last_status=$status
	btrfs check --readonly "$D/fs.img" >"$D/check.out" 2>&1 || {
		echo "after $1 writes: btrfs check fails" >&2
		tail -15 "$D/check.out" >&2
		return 1
	}
	fs_tree "$D/fs.img" >"$D/cut.tree"
	if cmp -s "$D/cut.tree" "$D/old.tree"; then
		none=$((none + 1))
	elif cmp -s "$D/cut.tree" "$D/new.tree"; then
		all=$((all + 1))
		# a failed commit that reached the disk says so, never "unchanged"
		[ "$last_status" = 0 ] || grep -q "holds the change" "$BTK_ERR" || { show_err; return 1; }
	else
		echo "after $1 writes: neither the old nor the new tree:" >&2
		diff "$D/new.tree" "$D/cut.tree" | head -20 >&2
		return 1
	fi
}

@test "power cut at sampled writes and at each of the last writes of put -r: the old or the new tree, whole, always clean" {
	export SOURCE_DATE_EPOCH=1700000000
	mkdir -p "$D/top/old" "$D/src/a/b" "$D/src/c"
	echo keep >"$D/top/old/file"
	for i in $(seq 1 60); do head -c $((i * 97)) /dev/urandom >"$D/src/a/f$i"; done
	for d in $(seq 1 12); do
		mkdir "$D/src/d$d"
		for f in $(seq 1 20); do echo "$d $f" >"$D/src/d$d/f$f"; done
	done
	head -c 700000 /dev/urandom >"$D/src/a/b/big"
	truncate -s 300K "$D/src/c/sparse"
	ln "$D/src/a/f1" "$D/src/c/hard"
	ln -s ../a/f2 "$D/src/c/sym"
	find "$D/src" -type f -exec cat {} + >/dev/null # atimes settle before the first copy
	truncate -s 128M "$D/orig.img"
	"$MKFS" -q -r "$D/top" "$D/orig.img"
	fs_tree "$D/orig.img" >"$D/old.tree"
	cp --sparse=always "$D/orig.img" "$D/new.img"
	"$IMG" put -r "$D/new.img" "$D/src" /new >/dev/null
	fs_tree "$D/new.img" >"$D/new.tree"
	rm -rf "$D/out"
	btk_run 60 "$IMG" get -r "$D/new.img" /new "$D/out"
	[ "$status" = 0 ] || { show_err; false; }
	diff -r "$D/src" "$D/out" >&2
	# the number of writes of a whole put: the smallest budget that succeeds
	lo=0 hi=4000
	while [ $((hi - lo)) -gt 1 ]; do
		mid=$(((lo + hi) / 2))
		cp --sparse=always "$D/orig.img" "$D/fs.img"
		if BTK_FAULT=fail:$mid "$IMG" put -r "$D/fs.img" "$D/src" /new >/dev/null 2>&1; then
			hi=$mid
		else
			lo=$mid
		fi
	done
	total=$hi
	none=0 all=0 tried=0
	for n in $(seq 0 $((total / 23 + 1)) $((total - 9))) $(seq $((total - 8)) "$total"); do
		cut_state "$n"
		tried=$((tried + 1))
	done
	[ "$last_status" = 0 ] # the whole budget
	[ $none -gt 3 ] && [ $all -ge 2 ]
	echo "# $total writes; $tried cuts (every one of the last 9): $none old, $all new" >&3
}

@test "power cut at sampled writes of subvol delete: the subvolume whole or gone, always clean" {
	mkdir -p "$D/top/sv"
	for i in $(seq 1 400); do head -c $((i * 13)) /dev/urandom >"$D/top/sv/f$i"; done
	truncate -s 128M "$D/orig.img"
	"$MKFS" -q -r "$D/top" --subvol sv "$D/orig.img"
	"$IMG" snapshot "$D/orig.img" /sv /snap >/dev/null
	"$IMG" rm "$D/orig.img" /snap/f7 >/dev/null
	n=0 done=0 gone=0 kept=0
	while [ $done = 0 ] && [ $n -lt 1500 ]; do
		cp --sparse=always "$D/orig.img" "$D/fs.img"
		BTK_FAULT=fail:$n btk_run 60 "$IMG" subvol delete "$D/fs.img" /sv
		assert_no_crash
		[ "$status" = 0 ] && done=1
		btrfs check --readonly "$D/fs.img" >"$D/check.out" 2>&1 || {
			echo "after $n writes: btrfs check fails" >&2
			tail -15 "$D/check.out" >&2
			false
		}
		btk_run 60 "$IMG" ls "$D/fs.img" /
		if grep -qw sv "$BTK_OUT"; then
			btk_run 60 "$IMG" ls "$D/fs.img" /sv
			[ "$(grep -c . "$BTK_OUT")" -ge 400 ] || { echo "after $n writes: partial" >&2; false; }
			kept=$((kept + 1))
		else
			gone=$((gone + 1))
		fi
		n=$((n + 3))
	done
	[ $done = 1 ] && [ $kept -gt 3 ]
	echo "# $n write budgets tried (every third), $kept with the subvolume, $gone without" >&3
}

@test "power cut at each write of mv of a subvolume across subvolumes: old place or new, always clean" {
	mkdir -p "$D/top/sv/d" "$D/top/other"
	for i in $(seq 1 50); do head -c $((i * 13)) /dev/urandom >"$D/top/sv/d/f$i"; done
	truncate -s 128M "$D/orig.img"
	"$MKFS" -q -r "$D/top" --subvol sv "$D/orig.img"
	"$IMG" subvol create "$D/orig.img" /sv/inner >/dev/null
	"$IMG" put -r "$D/orig.img" "$D/top/sv/d" /sv/inner/d >/dev/null
	"$IMG" subvol create "$D/orig.img" /dest >/dev/null
	n=0 done=0 old=0 new=0
	while [ $done = 0 ] && [ $n -lt 500 ]; do
		cp --sparse=always "$D/orig.img" "$D/fs.img"
		BTK_FAULT=fail:$n btk_run 60 "$IMG" mv "$D/fs.img" /sv/inner /dest/moved
		assert_no_crash
		[ "$status" = 0 ] && done=1
		btrfs check --readonly "$D/fs.img" >"$D/check.out" 2>&1 || {
			echo "after $n writes: btrfs check fails" >&2
			tail -15 "$D/check.out" >&2
			false
		}
		btk_run 60 "$IMG" ls "$D/fs.img" /sv/inner/d
		if [ "$status" = 0 ]; then
			[ "$(grep -c . "$BTK_OUT")" = 50 ] || { echo "after $n writes: partial" >&2; false; }
			btk_run 60 "$IMG" ls "$D/fs.img" /dest/moved
			[ "$status" != 0 ] || { echo "after $n writes: in both places" >&2; false; }
			old=$((old + 1))
		else
			btk_run 60 "$IMG" ls "$D/fs.img" /dest/moved/d
			[ "$status" = 0 ] || { echo "after $n writes: in neither place" >&2; false; }
			[ "$(grep -c . "$BTK_OUT")" = 50 ] || { echo "after $n writes: partial" >&2; false; }
			new=$((new + 1))
		fi
		n=$((n + 1))
	done
	[ $done = 1 ] && [ $old -gt 3 ]
	echo "# $n write budgets tried (each), $old in the old place, $new in the new" >&3
}
