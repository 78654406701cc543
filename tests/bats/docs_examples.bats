#!/usr/bin/env bats
# The documentation's examples run as written: the README's console session (each "$ " line,
# in order, in one scratch dir, with build/bin first on PATH), and every example block marked
# ".\" test-example" in a man page or "<!-- test-example -->" in the README, found by
# scripts/doc-examples.sh. Every other block is marked "no-test: REASON" (a format, a make
# target): the extractor fails on an unmarked block, so that no example escapes the test.
# Examples marked root need block devices: as root, a loop device over a scratch image stands
# in for each /dev/sdX name and a scratch directory for /mnt; otherwise that test skips.

load helpers

setup() {
	require_btk mkfs
	require_btk debug
	D=$BATS_TEST_TMPDIR
	export PATH="$BTK_BUILD/bin:$PATH"
	DOCS=("$BTK_ROOT"/man/*.[78] "$BTK_ROOT/README.md")
}

@test "README: the console session runs as written" {
	require_tool jq
	awk '/^```console/ { on = 1; next } /^```/ { on = 0 } on && /^\$ / { print substr($0, 3) }' \
		"$BTK_ROOT/README.md" >"$D/session.sh"
	[ "$(wc -l <"$D/session.sh")" -ge 3 ]
	! grep -q 'mkfs.btrfs' "$D/session.sh"
	mkdir "$D/run"
	cd "$D/run"
	local line n=0
	while IFS= read -r line; do
		n=$((n + 1))
		bash -e -o pipefail -c "$line" >"$D/out.$n" 2>&1 ||
			{ echo "README line failed: $line" >&2; cat "$D/out.$n" >&2; false; }
	done <"$D/session.sh"
}

@test "docs: every block of the man pages and the README is marked, every page has examples" {
	run "$BTK_ROOT/scripts/doc-examples.sh" "$D/ex" "${DOCS[@]}"
	[ "$status" -eq 0 ] || { echo "$output" >&2; false; }
	local p
	for p in "$BTK_ROOT"/man/btk-*.8 "$BTK_ROOT"/man/btk.7; do
		grep -q "^man/${p##*/}:" <(sed "s|^$BTK_ROOT/||" "$D"/ex/*.where) ||
			{ echo "${p##*/} has no runnable example" >&2; false; }
	done
	grep -q '^README.md:' <(sed "s|^$BTK_ROOT/||" "$D"/ex/*.where)
	# the README's runnable examples show every tool at work
	local w t readme=()
	for w in "$D"/ex/*.where; do
		grep -q "README.md:" "$w" && readme+=("${w%.where}.sh")
	done
	for p in "$BTK_ROOT"/man/btk-*.8; do
		t=$(basename "$p" .8)
		grep -qE "(^|[ (|;&])$t " "${readme[@]}" ||
			{ echo "no runnable README example runs $t" >&2; false; }
	done
	# the blocks not run say why (scripts/doc-examples.sh's header has the marks)
	echo "blocks not run, with their reasons:" >&3
	sed "s|^$BTK_ROOT/|  |" "$D/ex/untested" >&3
	! grep -qE ':[0-9]+: *$' "$D/ex/untested"
}

@test "docs: the extractor refuses an unmarked block, a mark without reason or block" {
	local x=$BTK_ROOT/scripts/doc-examples.sh
	# an unmarked block of a man page, in any section, and of the README
	printf '.SH EXAMPLES\n.nf\nbtk-fsck x.img\n.fi\n' >"$D/bad.8"
	run "$x" "$D/e1" "$D/bad.8"
	[ "$status" -eq 1 ] && [[ "$output" == *"bad.8:2: block not marked"* ]]
	printf '.SH OUTPUT\n.EX\nfound 1 error\n.EE\n' >"$D/out.8"
	run "$x" "$D/e2" "$D/out.8"
	[ "$status" -eq 1 ] && [[ "$output" == *"out.8:2: block not marked"* ]]
	printf '# x\n\n```sh\nmake demo\n```\n' >"$D/bad.md"
	run "$x" "$D/e3" "$D/bad.md"
	[ "$status" -eq 1 ] && [[ "$output" == *"bad.md:3: block not marked"* ]]
	# no-test needs a reason; a mark needs its block right after it
	printf '<!-- no-test -->\n```\nN passed\n```\n' >"$D/noreason.md"
	run "$x" "$D/e4" "$D/noreason.md"
	[ "$status" -eq 1 ] && [[ "$output" == *"no-test mark without a reason"* ]]
	printf '.\\" test-example\ntext between\n.nf\nbtk-fsck x.img\n.fi\n' >"$D/lost.8"
	run "$x" "$D/e5" "$D/lost.8"
	[ "$status" -eq 1 ] && [[ "$output" == *"lost.8:1: mark without a block after it"* ]]
	# marked blocks pass: a no-test one is listed with its reason and not extracted, a
	# console session needs no mark
	printf '<!-- no-test: a format -->\n```\nN passed\n```\n```console\n$ ls\n```\n<!-- test-example -->\n```sh\nbtk-fsck x.img\n```\n' >"$D/good.md"
	run "$x" "$D/e6" "$D/good.md"
	[ "$status" -eq 0 ] && [ "$output" = 1 ] || { echo "$output" >&2; false; }
	grep -qx "$D/good.md:1: a format" "$D/e6/untested"
	[ "$(cat "$D/e6/001.sh")" = "btk-fsck x.img" ]
}

# a small sample directory for the examples' setups
make_sample() {
	mkdir -p "$1/sub"
	seq 1 3000 >"$1/numbers.txt"
	echo hello >"$1/sub/hello.txt"
	head -c 200000 /dev/urandom >"$1/sub/data.bin"
	ln -s numbers.txt "$1/link"
}

# run_examples MODE: every example of MODE (plain or root), one scratch dir per document, in
# the document's order; setup first, then the block as one bash script (errexit, pipefail)
run_examples() {
	local mode=$1 ex=$D/ex n=0 w doc dir s
	"$BTK_ROOT/scripts/doc-examples.sh" "$ex" "${DOCS[@]}" >/dev/null
	make_sample "$D/sample"
	for s in "$ex"/*.sh; do
		s=${s%.sh}
		[ "$(cat "$s.mode")" = "$mode" ] || continue
		w=$(sed "s|^$BTK_ROOT/||" "$s.where")
		doc=${w%%:*}
		dir=$D/run/${doc//\//_}
		mkdir -p "$dir"
		cp "$s.sh" "$dir/example.sh"
		cp "$s.setup" "$dir/setup.sh"
		if [ "$mode" = root ]; then
			stand_in "$dir" || return 1
		fi
		n=$((n + 1))
		(cd "$dir" && SAMPLE=$D/sample bash -e -o pipefail setup.sh) >"$D/out" 2>&1 ||
			{ echo "$w: setup failed: $(cat "$s.setup")" >&2; cat "$D/out" >&2; return 1; }
		(cd "$dir" && SAMPLE=$D/sample bash -e -o pipefail "$D/preamble.sh" example.sh) \
			>"$D/out" 2>&1 ||
			{ echo "$w: example failed:" >&2; cat "$s.sh" >&2; echo "--- output:" >&2; cat "$D/out" >&2; return 1; }
		owned_by "$dir" "$w" || return 1
	done
	echo "$n $mode examples ran" >&3
	[ "$n" -ge 1 ]
}

# owned_by DIR WHERE: a btk-owner line of DIR's example.sh whose comment says "owned by PATH"
# (a literal address) must say so: run again, every line of its answer names PATH
owned_by() {
	local dir=$1 w=$2 line cmd path
	while IFS= read -r line; do
		path=${line##*owned by }
		path=${path%%[ ,;)]*}
		cmd=${line%%#*}
		(cd "$dir" && bash -e -o pipefail -c "$cmd") >"$D/owned" 2>&1 &&
			[ -s "$D/owned" ] && ! grep -vqF "path=$path" "$D/owned" ||
			{ echo "$w: not owned by $path: $cmd" >&2; cat "$D/owned" >&2; return 1; }
		echo "$cmd: owned by $path" >>"$D/owned.log"
	done < <(grep -E '^btk-owner .*# .*owned by /' "$dir/example.sh")
}

@test "docs: the examples on image files run as written" {
	require_tool jq
	printf 'source "$1"\n' >"$D/preamble.sh"
	run_examples plain
	# the README's literal addresses were checked against the files they name
	[ "$(grep -c 'owned by' "$D/owned.log")" -ge 2 ]
}

# stand_in DIR: replace each /dev/sdX name of DIR's setup.sh and example.sh by a loop device
# over a fresh sparse image (one per name and document) and /mnt by DIR/mnt; fails when a
# device name of this machine is left
stand_in() {
	local dir=$1 name img loop f
	for name in $(grep -ohE '/dev/sd[a-zA-Z][0-9]*' "$dir/setup.sh" "$dir/example.sh" | sort -u); do
		if [ ! -e "$dir/dev.$(basename "$name")" ]; then
			img=$dir/$(basename "$name").img
			truncate -s 1G "$img"
			loop=$(losetup -f --show "$img") || return 1
			echo "$loop" >>"$D/loops"
			echo "$loop" >"$dir/dev.$(basename "$name")"
		fi
		loop=$(cat "$dir/dev.$(basename "$name")")
		for f in "$dir/setup.sh" "$dir/example.sh"; do
			sed -i -E "s#$name([^0-9]|\$)#$loop\\1#g" "$f"
		done
	done
	mkdir -p "$dir/mnt"
	for f in "$dir/setup.sh" "$dir/example.sh"; do
		sed -i -E "s#(^|[ ;])/mnt([/ ;]|\$)#\\1$dir/mnt\\2#g" "$f"
		if grep -qE '/dev/(sd|vd|hd|xvd|nvme|mmcblk)' "$f"; then
			echo "a device of this machine is left in $f:" >&2
			cat "$f" >&2
			return 1
		fi
	done
}

teardown() {
	# unmount and detach only what these tests attached (their scratch dir, their loops)
	local m l
	for m in $(awk -v d="$D/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if [ -f "$D/loops" ]; then
		while read -r l; do losetup -d "$l" 2>/dev/null || true; done <"$D/loops"
	fi
	true
}

@test "docs: the examples on block devices run as written (root, loop devices)" {
	require_loop
	require_tool jq
	"$BTK_ROOT/scripts/doc-examples.sh" "$D/ex" "${DOCS[@]}" >/dev/null
	local s
	for s in $(grep -l root "$D"/ex/*.mode); do
		s=${s%.mode}
		# what the examples call beyond btk and coreutils
		if grep -qw badblocks "$s.sh"; then require_tool badblocks; fi
		if grep -qw mkfs.ext4 "$s.setup"; then require_tool mkfs.ext4; fi
		# a mount comes only after btrfs check --readonly says the filesystem is clean
		if grep -qw mount "$s.sh"; then require_tool btrfs; fi
	done
	cat >"$D/preamble.sh" <<'EOF'
mount() {
	local dev=${*: -2:1}
	if [ "$(blkid -o value -s TYPE "$dev")" = btrfs ]; then
		btrfs check --readonly "$dev" >/dev/null 2>&1 ||
			{ echo "not mounting $dev: btrfs check --readonly is not clean" >&2; return 1; }
	fi
	command mount "$@"
}
source "$1"
EOF
	run_examples root
}

@test "docs: btk.7 and the README name every tool, none as in development or to come later" {
	local p t
	for p in "$BTK_ROOT"/man/btk-*.8; do
		t=$(basename "$p" .8)
		grep -q "^\.BR $t (8)" "$BTK_ROOT/man/btk.7" || { echo "btk.7 does not name $t" >&2; false; }
		grep -q "^| \`$t\` | \*\*" "$BTK_ROOT/README.md" || { echo "README's table lacks $t" >&2; false; }
	done
	! grep -niE 'in development|in later steps|comes? later|\(later\)' "$BTK_ROOT/man/btk.7" \
		"$BTK_ROOT/README.md"
	# and say how to reach the tools: build/bin on PATH, or make install
	grep -qF 'export PATH=$PWD/build/bin:$PATH' "$BTK_ROOT/README.md"
	grep -q 'make install' "$BTK_ROOT/README.md"
	grep -q 'build/bin' "$BTK_ROOT/man/btk.7"
}
