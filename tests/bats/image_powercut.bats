#!/usr/bin/env bats
# Power cuts during btk-image put -r (fault-injecting io backend, BTK_FAULT=fail:N): the image
# after each of many sampled write budgets passes btrfs check and holds either none of the
# new tree or all of it (copied back out with get -r and compared).

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_tool btrfs
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
}

@test "power cut at sampled writes of put -r: none or all of the tree, always clean" {
	mkdir -p "$D/top/old" "$D/src/a/b" "$D/src/c"
	echo keep >"$D/top/old/file"
	for i in $(seq 1 60); do head -c $((i * 97)) /dev/urandom >"$D/src/a/f$i"; done
	head -c 700000 /dev/urandom >"$D/src/a/b/big"
	truncate -s 300K "$D/src/c/sparse"
	ln "$D/src/a/f1" "$D/src/c/hard"
	ln -s ../a/f2 "$D/src/c/sym"
	truncate -s 128M "$D/orig.img"
	"$MKFS" -q -r "$D/top" "$D/orig.img"
	n=0 done=0 none=0 all=0
	while [ $done = 0 ] && [ $n -lt 1500 ]; do
		cp --sparse=always "$D/orig.img" "$D/fs.img"
		BTK_FAULT=fail:$n btk_run 60 "$IMG" put -r "$D/fs.img" "$D/src" /new
		assert_no_crash
		[ "$status" = 0 ] && done=1
		btrfs check --readonly "$D/fs.img" >"$D/check.out" 2>&1 || {
			echo "after $n writes: btrfs check fails" >&2
			tail -15 "$D/check.out" >&2
			false
		}
		btk_run 60 "$IMG" ls "$D/fs.img" /
		[ "$status" = 0 ] || { show_err; false; }
		if grep -qw new "$BTK_OUT"; then
			rm -rf "$D/out"
			btk_run 60 "$IMG" get -r "$D/fs.img" /new "$D/out"
			[ "$status" = 0 ] || { show_err; false; }
			diff -r "$D/src" "$D/out" >&2 || { echo "after $n writes: partial tree" >&2; false; }
			all=$((all + 1))
		else
			[ $done = 0 ] || { echo "put succeeded but /new is missing" >&2; false; }
			none=$((none + 1))
		fi
		n=$((n + 2))
	done
	[ $done = 1 ]
	[ $none -gt 3 ]
	echo "# $n write budgets tried (every other), $none without the tree, $all with it" >&3
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
