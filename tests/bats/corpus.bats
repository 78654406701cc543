#!/usr/bin/env bats
# btk-debug on hostile input: every image of ../shared/corpus/btrfs-progs-fsck (btrfs-progs'
# own corrupt and fuzzed test images) and images crafted here with one defect each. The rule
# (DESIGN.md): a one-line error and a non-zero exit, never a crash, a sanitizer report or a
# hang. Run it in a SANITIZE=1 build (make check SANITIZE=1) to catch memory errors.

load helpers


# base images for crafted defects: made without root by mkfs.btrfs --rootdir, 4K nodes so
# the fs tree has internal nodes; single metadata so a defect has no healthy copy
base_image() {
	local name=$1 meta=$2 dir=$BTK_TEST_TMP/crafted
	mkdir -p "$dir"
	(
		flock 9
		[ -e "$dir/$name.img" ] && exit 0
		rm -rf "$dir/src-$name"
		mkdir -p "$dir/src-$name"
		python3 - "$dir/src-$name" <<'EOF'
import os, sys
for i in range(600):
    d = os.path.join(sys.argv[1], "d%d" % (i % 7))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file-%04d" % i), "w") as f:
        f.write("x" * (i % 50))
EOF
		truncate -s 256M "$dir/$name.tmp"
		mkfs.btrfs -q -f -n 4096 -m "$meta" -d single -r "$dir/src-$name" "$dir/$name.tmp" >/dev/null 2>&1
		mv "$dir/$name.tmp" "$dir/$name.img"
	) 9>"$dir/.lock-$name"
	echo "$dir/$name.img"
}

craft() {
	local kind=$1 base=$2
	CRAFTED=$BATS_TEST_TMPDIR/$kind.img
	python3 "$BTK_ROOT/tests/oracle/craft.py" "$kind" "$base" "$CRAFTED" >"$BATS_TEST_TMPDIR/craft.txt"
	BLOCK=$(grep -oE '(leaf|node|block) [0-9]+' "$BATS_TEST_TMPDIR/craft.txt" | head -1 | cut -d' ' -f2)
}

# every_corpus_image CMD...: run btk-debug CMD on each image; list every crash, sanitizer
# report or hang; stop after 3 hangs so a broken build cannot stall make check
every_corpus_image() {
	local src dir img bad=() hangs=0 n=0 ok=0
	require_btk debug
	src=$(corpus_src) || skip "corpus not found (../shared/corpus/btrfs-progs-fsck)"
	dir=$(corpus_unpack "$src")
	for img in "$dir"/*.raw; do
		n=$((n + 1))
		btk_run 60 "$BTK_DEBUG" "$@" "$img"
		if ! assert_no_crash 2>"$BATS_TEST_TMPDIR/why"; then
			bad+=("$(basename "$img"): $(grep FAIL "$BATS_TEST_TMPDIR/why") :: $(grep -m1 -E 'Sanitizer|runtime error' "$BTK_ERR")")
			[ "$status" = 124 ] && hangs=$((hangs + 1))
			[ $hangs -ge 3 ] && break
		elif [ "$status" = 0 ]; then
			ok=$((ok + 1))
		elif ! [ -s "$BTK_ERR" ]; then
			bad+=("$(basename "$img"): exit $status without an error message")
		fi
	done
	echo "btk-debug $*: $n images, $ok exit 0, ${#bad[@]} bad" >&2
	if [ ${#bad[@]} -gt 0 ]; then
		printf '  %s\n' "${bad[@]}" >&2
		return 1
	fi
}

@test "corpus: btk-debug super on every image: no crash, no sanitizer report, no hang" {
	every_corpus_image super
}

@test "corpus: btk-debug tree on every image: no crash, no sanitizer report, no hang" {
	every_corpus_image tree
}

@test "corpus: btk-debug tree --json on every image: no crash, no sanitizer report, no hang" {
	every_corpus_image tree --json
}

@test "corpus: btk-debug stats on every image: no crash, no sanitizer report, no hang" {
	every_corpus_image stats
}

@test "corpus: btk-debug super --all on every image: no crash, no sanitizer report, no hang" {
	every_corpus_image super --all
}

@test "corpus: on every image btrfs check calls clean, tree --json agrees with dump-tree" {
	require_btk debug
	local src dir name bad=() n=0
	src=$(corpus_src) || skip "corpus not found (../shared/corpus/btrfs-progs-fsck)"
	dir=$(corpus_unpack "$src")
	for name in $(awk -F'\t' 'NR > 1 && $5 == "clean" { print $1 }' "$src/MANIFEST.tsv"); do
		n=$((n + 1))
		timeout 60 btrfs inspect-internal dump-tree --noscan "$dir/$name.raw" \
			>"$BATS_TEST_TMPDIR/dump.txt" 2>/dev/null
		btk_run 60 "$BTK_DEBUG" tree --json "$dir/$name.raw"
		if [ "$status" != 0 ]; then
			bad+=("$name: btk-debug exit $status: $(head -1 "$BTK_ERR")")
		elif ! python3 "$BTK_ROOT/tests/oracle/dumptree_cmp.py" --dump "$BATS_TEST_TMPDIR/dump.txt" \
			--json "$BTK_OUT" --max 5 >"$BATS_TEST_TMPDIR/cmp.txt" 2>&1; then
			bad+=("$name: $(sed -n '2,8p' "$BATS_TEST_TMPDIR/cmp.txt")")
		fi
	done
	[ "$n" -ge 10 ] || { echo "only $n clean images in the manifest" >&2; return 1; }
	if [ ${#bad[@]} -gt 0 ]; then
		printf '%s\n' "${bad[@]}" >&2
		return 1
	fi
}

@test "bad input: a file that is not btrfs" {
	require_btk debug
	head -c 4M /dev/urandom >"$BATS_TEST_TMPDIR/random.img"
	for cmd in super tree stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$BATS_TEST_TMPDIR/random.img"
		assert_one_line_error 1
	done
}

@test "bad input: an ext4 filesystem" {
	require_btk debug
	require_tool mke2fs
	truncate -s 64M "$BATS_TEST_TMPDIR/ext4.img"
	mke2fs -q -F -t ext4 "$BATS_TEST_TMPDIR/ext4.img"
	for cmd in super tree stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$BATS_TEST_TMPDIR/ext4.img"
		assert_one_line_error 1
	done
}

@test "bad input: an empty file" {
	require_btk debug
	: >"$BATS_TEST_TMPDIR/empty.img"
	for cmd in super tree stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$BATS_TEST_TMPDIR/empty.img"
		assert_one_line_error 1
	done
}

@test "bad input: a missing file" {
	require_btk debug
	btk_run 60 "$BTK_DEBUG" super "$BATS_TEST_TMPDIR/does-not-exist.img"
	assert_one_line_error 1
	grep -q "does-not-exist" "$BTK_ERR"
}

@test "bad input: an image truncated before its superblock" {
	require_btk debug
	local base
	base=$(base_image single single)
	head -c 32K "$base" >"$BATS_TEST_TMPDIR/short.img"
	for cmd in super tree stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$BATS_TEST_TMPDIR/short.img"
		assert_one_line_error 1
	done
}

@test "bad input: an image truncated after its superblock (trees missing)" {
	require_btk debug
	local base
	base=$(base_image single single)
	head -c 1M "$base" >"$BATS_TEST_TMPDIR/short.img"
	for cmd in tree stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$BATS_TEST_TMPDIR/short.img"
		assert_one_line_error
	done
}

@test "bad input: zeroed primary superblock: a mirror is used, with a warning" {
	require_btk debug
	local base
	base=$(base_image single single)
	btk_run 60 "$BTK_DEBUG" tree --json "$base"
	[ "$status" = 0 ] || { show_err; return 1; }
	local want
	want=$(wc -l <"$BTK_OUT")
	craft zero-primary "$base"
	for cmd in super stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$CRAFTED"
		assert_no_crash
		[ "$status" = 0 ] || { show_err; return 1; }
		[ -s "$BTK_ERR" ] || { echo "no warning about the primary superblock" >&2; return 1; }
	done
	btk_run 60 "$BTK_DEBUG" tree --json "$CRAFTED"
	[ "$status" = 0 ] || { show_err; return 1; }
	[ -s "$BTK_ERR" ] || { echo "no warning about the primary superblock" >&2; return 1; }
	[ "$(wc -l <"$BTK_OUT")" = "$want" ] || { echo "tree output differs from the pristine image" >&2; return 1; }
}

@test "bad input: primary superblock with a bad checksum: a mirror is used, with a warning" {
	require_btk debug
	craft bad-primary "$(base_image single single)"
	btk_run 60 "$BTK_DEBUG" tree "$CRAFTED"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	[ -s "$BTK_ERR" ] || { echo "no warning about the primary superblock" >&2; return 1; }
}

@test "bad input: every superblock zeroed" {
	require_btk debug
	craft zero-all-supers "$(base_image single single)"
	for cmd in super tree stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$CRAFTED"
		assert_one_line_error 1
	done
}

# crafted tree-block defects: tree and stats must fail with a short error naming the block
crafted_block_case() {
	local kind=$1 cmd
	require_btk debug
	craft "$kind" "$(base_image single single)"
	for cmd in tree stats "tree --json"; do
		btk_run 60 "$BTK_DEBUG" $cmd "$CRAFTED"
		assert_one_line_error
		if [ -n "$BLOCK" ] && ! grep -q "$BLOCK" "$BTK_ERR"; then
			show_err
			echo "FAIL: the error does not name block $BLOCK ($(cat "$BATS_TEST_TMPDIR/craft.txt"))" >&2
			return 1
		fi
	done
}

@test "bad input: tree block with a bad checksum" {
	crafted_block_case block-csum
}

@test "bad input: tree node that points to itself" {
	crafted_block_case self-pointer
}

@test "bad input: leaf item offset outside the block" {
	crafted_block_case item-offset
}

@test "bad input: leaf item size running past the block" {
	crafted_block_case item-size
}

@test "bad input: leaf with an absurd item count" {
	crafted_block_case nritems
}

@test "bad input: leaf keys out of order" {
	crafted_block_case key-order
}

@test "bad input: tree root block with an absurd level" {
	crafted_block_case level
}

@test "bad input: superblock with an absurd root level" {
	require_btk debug
	craft super-level "$(base_image single single)"
	for cmd in tree stats; do
		btk_run 60 "$BTK_DEBUG" $cmd "$CRAFTED"
		assert_one_line_error
	done
}

@test "bad input: bad checksum on one DUP copy: the other copy serves, same output" {
	require_btk debug
	local base
	base=$(base_image dup dup)
	btk_run 60 "$BTK_DEBUG" tree --json "$base"
	[ "$status" = 0 ] || { show_err; return 1; }
	cp "$BTK_OUT" "$BATS_TEST_TMPDIR/pristine.jsonl"
	craft one-copy-csum "$base"
	btk_run 60 "$BTK_DEBUG" tree --json "$CRAFTED"
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	cmp -s "$BTK_OUT" "$BATS_TEST_TMPDIR/pristine.jsonl" || {
		echo "output differs from the pristine image's" >&2
		return 1
	}
}
