#!/usr/bin/env bats
# make demo's script: runs with no btrfs-progs on PATH, as root and as an unprivileged user,
# and shows btk-mkfs (reproducible), btk-fsck, btk-owner (both ways) and btk-debug at work.

load helpers

# a PATH with every tool of this machine but btrfs-progs, where any user can read it; made
# once for the file
setup_file() {
	NOBTRFS=$(mktemp -d /tmp/btk-nobtrfs-XXXXXX)
	local d f n
	for d in /usr/local/bin /usr/bin /usr/sbin /bin /sbin; do
		for f in "$d"/*; do
			n=${f##*/}
			case $n in *btrfs*) continue ;; esac
			[ -e "$NOBTRFS/$n" ] || ln -s "$f" "$NOBTRFS/$n"
		done
	done
	chmod 755 "$NOBTRFS"
	export NOBTRFS
}

teardown_file() {
	[ -n "${NOBTRFS:-}" ] && rm -rf "$NOBTRFS"
	true
}

setup() {
	local t
	for t in mkfs fsck owner debug; do require_btk $t; done
	D=$BATS_TEST_TMPDIR
}

check_demo_output() {
	grep -q '^\$ btk-mkfs .*--rootdir src demo.img' "$BTK_OUT"
	grep -q '^Label: *demo' "$BTK_OUT"
	# reproducible: the two builds print the same sha256
	[ "$(grep -cE '^[0-9a-f]{64}  (demo|again2)\.img$' "$BTK_OUT")" -eq 2 ]
	[ "$(grep -E '^[0-9a-f]{64}  ' "$BTK_OUT" | cut -d' ' -f1 | sort -u | wc -l)" -eq 1 ]
	grep -q 'no error found' "$BTK_OUT"
	grep -q '^file /docs/numbers.txt root=5' "$BTK_OUT"
	grep -q '^[0-9]* data devid=1 .*path=/docs/numbers.txt$' "$BTK_OUT"
	grep -q '^superblock: bytenr=65536' "$BTK_OUT"
	grep -q '^FS_TREE ' "$BTK_OUT"
	grep -q '^demo: done' "$BTK_OUT"
}

@test "demo: runs without btrfs-progs on PATH" {
	! PATH=$NOBTRFS command -v mkfs.btrfs
	btk_run 300 env PATH="$NOBTRFS" BTK_BUILD="$BTK_BUILD" "$BTK_ROOT/scripts/demo.sh"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_demo_output || { cat "$BTK_OUT" >&2; false; }
}

@test "demo: runs as an unprivileged user" {
	require_root
	require_tool setpriv
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$BTK_BUILD/bin/btk-mkfs" ||
		skip "user nobody cannot reach $BTK_BUILD"
	btk_run 300 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env PATH="$NOBTRFS" BTK_BUILD="$BTK_BUILD" TMPDIR=/tmp "$BTK_ROOT/scripts/demo.sh"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_demo_output || { cat "$BTK_OUT" >&2; false; }
	grep -q 'as user nobody' "$BTK_OUT"
}
