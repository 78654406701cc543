#!/usr/bin/env bats
# btk-fsck: interface (exit codes, --json, problem codes) and no false alarms on clean
# filesystems made by mkfs.btrfs 6.2 and by btk-mkfs. Every clean image must also pass
# `btrfs check`, or the test machinery is at fault. Kernel-populated and mounted images:
# tests/oracle/fsck.bats.

load helpers
load fsck_lib

@test "usage: no device is exit 16, unknown option is exit 16" {
	require_btk fsck
	btk_run 10 "$FSCK"
	[ "$status" = 16 ]
	btk_run 10 "$FSCK" --no-such-option x
	[ "$status" = 16 ]
	btk_run 10 "$FSCK" --help
	[ "$status" = 0 ]
	grep -q -- "--check-data-csum" "$BTK_OUT"
}

@test "not btrfs, missing file: exit 8 with a one-line error" {
	require_btk fsck
	head -c 1M /dev/zero >"$BATS_TEST_TMPDIR/zero.img"
	btk_run 20 "$FSCK" "$BATS_TEST_TMPDIR/zero.img"
	[ "$status" = 8 ]
	assert_one_line_error
	btk_run 20 "$FSCK" "$BATS_TEST_TMPDIR/nonexistent.img"
	[ "$status" = 8 ]
	assert_one_line_error
}

@test "mkfs.btrfs defaults: clean, totals equal btrfs check's" {
	require_btk fsck
	mkfs_image
	assert_clean "$IMG"
}

@test "mkfs.btrfs 4K nodes, xxhash, no no-holes, v1 cache: clean" {
	require_btk fsck
	mkfs_image -n 4096 --csum xxhash -O ^no-holes -R ^free-space-tree
	assert_clean "$IMG"
}

@test "mkfs.btrfs mixed block groups, sha256: clean" {
	require_btk fsck
	mkfs_image -M --csum sha256
	assert_clean "$IMG"
}

@test "mkfs.btrfs --rootdir with files, hard links and a deep tree: clean" {
	require_btk fsck
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/a/b/c"
	for i in $(seq 1 400); do echo "file $i" >"$src/a/f$i"; done
	head -c 3M /dev/urandom >"$src/a/b/big"
	for i in $(seq 1 40); do ln "$src/a/f1" "$src/a/b/c/link-with-a-long-name-$i"; done
	ln -s f1 "$src/a/sym"
	mkfs_image -n 4096 -r "$src"
	assert_clean "$IMG"
}

@test "--json: one object, errors list empty, result clean" {
	require_btk fsck
	mkfs_image
	btk_run 60 "$FSCK" --json "$IMG"
	assert_no_crash
	[ "$status" = 0 ]
	python3 - "$BTK_OUT" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["result"] == "clean", o
assert o["errors"] == [], o
assert o["summary"]["errors"] == 0 and o["summary"]["bytes_used"] > 0, o
EOF
}

@test "-p shows progress on stderr, -q prints nothing on a clean image" {
	require_btk fsck
	mkfs_image
	btk_run 60 "$FSCK" -p "$IMG"
	[ "$status" = 0 ]
	grep -q "checking trees" "$BTK_ERR"
	btk_run 60 "$FSCK" -q "$IMG"
	[ "$status" = 0 ]
	[ ! -s "$BTK_OUT" ]
}

@test "btk-mkfs images are clean (several profiles, node sizes, checksums)" {
	require_btk fsck
	[ -x "$BTK_BUILD/bin/btk-mkfs" ] || skip "btk-mkfs not built"
	local img=$BATS_TEST_TMPDIR/btk-mkfs.img opts
	for opts in "" "-n 4096" "-n 65536 --csum sha256" "-m single -d dup" "--csum xxhash" \
		"-M" "-O ^no-holes -R ^free-space-tree"; do
		rm -f "$img"
		truncate -s 256M "$img"
		# shellcheck disable=SC2086 # an option list
		"$BTK_BUILD/bin/btk-mkfs" -f $opts "$img" >/dev/null 2>&1 || {
			echo "# btk-mkfs $opts: not supported yet, skipped" >&3
			continue
		}
		assert_clean "$img" || {
			echo "btk-mkfs $opts" >&2
			return 1
		}
	done
}

@test "problem codes: btk-fsck(8) lists every code of problems.def" {
	local want=$BATS_TEST_TMPDIR/want.man
	sh "$BTK_ROOT/scripts/problems-man.sh" >"$want"
	# the generated section, as it stands in the man page
	sed -n '/^\.\\" BEGIN PROBLEM CODES/,/^\.\\" END PROBLEM CODES/p' "$BTK_ROOT/man/btk-fsck.8" >"$BATS_TEST_TMPDIR/have.man"
	diff -u "$want" "$BATS_TEST_TMPDIR/have.man" || {
		echo "man/btk-fsck.8 is out of date: run scripts/problems-man.sh --update" >&2
		return 1
	}
	local n
	n=$(grep -c '^BTK_PROBLEM(' "$BTK_ROOT/libcore/check/problems.def")
	[ "$n" -gt 100 ]
	[ "$(grep -c '^\.B E[0-9]\{4\} ' "$BTK_ROOT/man/btk-fsck.8")" = "$n" ]
}

@test "a symlink whose target bytes a metadata dump zeroed is clean (its size is the whole length)" {
	local I=$BTK_BUILD/bin/btk-image D=$BATS_TEST_TMPDIR
	mkdir -p "$D/sl"
	echo hi >"$D/sl/hello.txt"
	ln -s hello.txt "$D/sl/link"
	"$BTK_BUILD/bin/btk-mkfs" -q -b 256m "$D/w.img"
	"$I" put -r "$D/w.img" "$D/sl" /s >/dev/null
	"$I" dump "$D/w.img" "$D/w.dump" >/dev/null
	"$I" restore "$D/w.dump" "$D/r.img" >/dev/null
	btk_run 60 "$FSCK" "$D/r.img"
	[ "$status" -eq 0 ] || { cat "$BTK_OUT" >&2; false; }
}
