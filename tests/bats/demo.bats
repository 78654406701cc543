#!/usr/bin/env bats
# make demo: runs with no btrfs-progs on PATH, as root and as an unprivileged user, and shows
# btk-mkfs (reproducible), btk-fsck, btk-owner (both ways) and btk-debug at work. The script
# in this tree, then `make demo` (and `make install`) in a fresh clone, which holds only what
# is committed: a clone of HEAD, so that uncommitted changes are not in it.

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
	# the fresh clone, where any user can read it, with a copy of this run's build: the
	# clone's files are dated before the build so that make rebuilds nothing (a clone that
	# builds itself from nothing: the BTK_ORACLE_FULL test below)
	CLONE=$(mktemp -d /tmp/btk-democlone-XXXXXX)
	chmod 755 "$CLONE"
	export CLONE
	B=$(basename "$BTK_BUILD")
	export B
	# a tree that is no git checkout (a release tarball) has nothing to clone
	git -C "$BTK_ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1 || return 0
	git clone -q "$BTK_ROOT" "$CLONE/btk" || return 1
	(cd "$CLONE/btk" && git ls-files -z | xargs -0 touch -h -d 2000-01-01) || return 1
	cp -a "$BTK_BUILD" "$CLONE/btk/$B" || return 1
	chmod -R a+rX "$CLONE"
}

teardown_file() {
	[ -n "${NOBTRFS:-}" ] && rm -rf "$NOBTRFS"
	[ -n "${CLONE:-}" ] && rm -rf "$CLONE"
	true
}

setup() {
	local t
	for t in mkfs fsck owner debug image undo; do require_btk $t; done
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
	# files in and out, a snapshot, a shrink, a dump restored, ext4 there and back
	grep -qx 'same' "$BTK_OUT"
	grep -q '^devid 1: resized from ' "$BTK_OUT"
	[ "$(grep -c 'no error found' "$BTK_OUT")" -ge 2 ]
	grep -q '^ext.img: converted to btrfs ' "$BTK_OUT"
	grep -qx 'hello from btk' "$BTK_OUT"
	grep -q '^ext.img: rolled back' "$BTK_OUT"
	grep -qx 'ext4' "$BTK_OUT"
	grep -q '^\$ btk-undo demo.undo demo.img' "$BTK_OUT"
	grep -q '^demo.img: put back [1-9][0-9]* blocks' "$BTK_OUT"
	grep -q '^demo: done' "$BTK_OUT"
}

@test "demo: runs without btrfs-progs on PATH" {
	! PATH=$NOBTRFS command -v mkfs.btrfs
	btk_run 300 env PATH="$NOBTRFS" BTK_BUILD="$BTK_BUILD" "$BTK_ROOT/scripts/demo.sh"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_demo_output || { cat "$BTK_OUT" >&2; false; }
	# the README's quick start says what the demo does: the tools it names are those it runs
	local said ran
	said=$(awk '/^## Quick start/ { on = 1 } on && /^make check/ { exit } on' "$BTK_ROOT/README.md" |
		grep -oE 'btk-[a-z]+' | sort -u)
	ran=$(grep -oE '^\$ btk-[a-z]+' "$BTK_OUT" | cut -c3- | sort -u)
	[ -n "$said" ] && [ "$said" = "$ran" ] ||
		{ echo "README quick start names: $said; the demo runs: $ran" >&2; false; }
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

# a fresh clone needs a git checkout to clone
require_clone() {
	[ -d "$CLONE/btk" ] || skip "$BTK_ROOT is not a git checkout: no fresh clone to make"
}

# the binaries make demo needs, as make names them in the clone
clone_bins() {
	local t
	for t in mkfs fsck owner debug image resize convert undo; do echo "$B/bin/btk-$t"; done
}

@test "make demo: a fresh clone runs it without btrfs-progs on PATH, as root" {
	require_clone
	cd "$CLONE/btk"
	# the copied build is current: make demo shows the tools, it does not rebuild them
	make -q B="$B" $(clone_bins) || { echo "make would rebuild the copied $B" >&2; false; }
	btk_run 300 env PATH="$NOBTRFS" make -s demo B="$B"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_demo_output || { cat "$BTK_OUT" >&2; false; }
	# and make install puts the tools and man pages where the README says
	btk_run 120 env PATH="$NOBTRFS" make -s install B="$B" PREFIX=/usr/local DESTDIR="$D/stage"
	[ "$status" -eq 0 ] || { show_err; false; }
	local t
	for t in mkfs fsck owner debug convert resize image undo; do
		"$D/stage/usr/local/bin/btk-$t" --version | grep -q "^btk-$t "
		[ -f "$D/stage/usr/local/share/man/man8/btk-$t.8" ]
		[ -f "$D/stage/usr/local/share/bash-completion/completions/btk-$t" ]
	done
	[ -f "$D/stage/usr/local/share/man/man7/btk.7" ]
	# and make uninstall takes back every file it put there
	btk_run 60 make -s uninstall B="$B" PREFIX=/usr/local DESTDIR="$D/stage"
	[ "$status" -eq 0 ] || { show_err; false; }
	[ -z "$(find "$D/stage" -type f)" ] || { find "$D/stage" -type f >&2; false; }
}

@test "make: the tools (make, make install) build without libcmocka; only the tests link it" {
	cd "$BTK_ROOT"
	# what a plain make would run in an empty build folder
	make -n -B B="$D/nob" tools >"$D/plan"
	grep -q 'btk-mkfs' "$D/plan"
	! grep -q cmocka "$D/plan" || { grep cmocka "$D/plan" >&2; false; }
	! grep -qw libcmocka-dev <(sed -n '/^build_pkgs=/,/"$/p' scripts/deps.sh)
	make -n -B B="$D/nob" build | grep -q cmocka
}

@test "make demo: a fresh clone runs it without btrfs-progs on PATH, as an unprivileged user" {
	require_root
	require_tool setpriv
	require_clone
	cd "$CLONE/btk"
	make -q B="$B" $(clone_bins) || { echo "make would rebuild the copied $B" >&2; false; }
	btk_run 300 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env PATH="$NOBTRFS" HOME=/tmp TMPDIR=/tmp make -s demo B="$B"
	[ "$status" -eq 0 ] || { show_err; false; }
	check_demo_output || { cat "$BTK_OUT" >&2; false; }
	grep -q 'as user nobody' "$BTK_OUT"
}

@test "make demo: a fresh clone that an unprivileged user builds from nothing" {
	[ -n "${BTK_ORACLE_FULL:-}" ] || skip "slow (a whole build): BTK_ORACLE_FULL=1 runs it"
	require_root
	require_tool setpriv
	require_clone
	local c
	c=$(mktemp -d /tmp/btk-demobuild-XXXXXX)
	echo "$c" >"$D/buildclone"
	git clone -q "$BTK_ROOT" "$c/btk"
	chown -R nobody:nogroup "$c"
	btk_run 900 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env -C "$c/btk" PATH="$NOBTRFS" HOME=/tmp TMPDIR=/tmp make -s demo
	[ "$status" -eq 0 ] || { show_err; false; }
	check_demo_output || { cat "$BTK_OUT" >&2; false; }
	grep -q 'as user nobody' "$BTK_OUT"
}

teardown() {
	if [ -f "$D/buildclone" ]; then rm -rf "$(cat "$D/buildclone")"; fi
	true
}
