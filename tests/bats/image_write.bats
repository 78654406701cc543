#!/usr/bin/env bats
# btk-image's writing verbs on btk-mkfs images (no root): after each change btrfs check and
# btk-fsck are clean and btk's own reads show the change; refusals write nothing (sha256).

load helpers

setup() {
	require_btk image
	require_btk mkfs
	require_btk fsck
	require_tool btrfs
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	FSCK=$BTK_BUILD/bin/btk-fsck
	DBG=$BTK_BUILD/bin/btk-debug
	D=$BATS_TEST_TMPDIR
	export SOURCE_DATE_EPOCH=1700000000
	mkdir -p "$D/top/keep"
	echo old >"$D/top/keep/file"
	truncate -s 128M "$D/fs.img"
	"$MKFS" -q -r "$D/top" "$D/fs.img"
}

# a small source tree with what --rootdir copies: data, holes, links, xattrs
make_src() {
	mkdir -p "$D/src/a/b" "$D/src/e"
	echo hello >"$D/src/a/small"
	head -c 300000 /dev/urandom >"$D/src/a/b/big"
	truncate -s 1M "$D/src/sparse"
	printf x | dd of="$D/src/sparse" bs=1 seek=500000 conv=notrunc 2>/dev/null
	ln "$D/src/a/small" "$D/src/a/hard"
	ln -s small "$D/src/a/sym"
	setfattr -n user.k -v v "$D/src/a/small" 2>/dev/null || true
}

clean() {
	btrfs check --readonly "$D/fs.img" >"$D/check.out" 2>&1 || {
		tail -20 "$D/check.out" >&2
		return 1
	}
	btk_run 120 "$FSCK" --check-data-csum "$D/fs.img"
	assert_no_crash
	[ "$status" = 0 ] || {
		show_err
		cat "$BTK_OUT" >&2
		return 1
	}
}

# unchanged CMD...: the command fails with a short error and the image keeps its bytes
unchanged() {
	local before after
	before=$(sha256sum <"$D/fs.img")
	btk_run 60 "$@"
	assert_one_line_error
	after=$(sha256sum <"$D/fs.img")
	[ "$before" = "$after" ] || {
		echo "FAIL: the image changed" >&2
		return 1
	}
}

@test "put -r copies a tree (data, holes, hard links, symlinks, xattrs); put of a file" {
	make_src
	btk_run 60 "$IMG" put -r "$D/fs.img" "$D/src" /dst
	assert_no_crash
	[ "$status" = 0 ] || { show_err; return 1; }
	clean
	btk_run 60 "$IMG" put --json "$D/fs.img" "$D/src/a/b/big" /keep
	[ "$status" = 0 ] || { show_err; return 1; }
	grep -q '"path": "/keep/big"' "$BTK_OUT"
	clean
	# -f replaces a file; without it the existing name is refused
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" /keep/big
	btk_run 60 "$IMG" put -f "$D/fs.img" "$D/src/a/small" /keep/big
	[ "$status" = 0 ] || { show_err; return 1; }
	clean
}

@test "put --compress zstd and lzo mark the feature and stay clean" {
	make_src
	head -c 400000 /dev/zero | tr '\0' a >"$D/src/e/text"
	btk_run 60 "$IMG" put -r --compress zstd:3 "$D/fs.img" "$D/src" /z
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" put -r --compress lzo "$D/fs.img" "$D/src" /l
	[ "$status" = 0 ] || { show_err; return 1; }
	"$DBG" super "$D/fs.img" | grep -q COMPRESS_ZSTD
	"$DBG" super "$D/fs.img" | grep -q COMPRESS_LZO
	clean
}

@test "mkdir and mkdir -p" {
	btk_run 60 "$IMG" mkdir "$D/fs.img" /one
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" mkdir -p "$D/fs.img" /one/two/three
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$IMG" mkdir -p "$D/fs.img" /one/two
	[ "$status" = 0 ] || { show_err; return 1; }
	clean
	unchanged "$IMG" mkdir "$D/fs.img" /one
	unchanged "$IMG" mkdir "$D/fs.img" /missing/dir
	unchanged "$IMG" mkdir "$D/fs.img" /keep/file/x
	unchanged "$IMG" mkdir "$D/fs.img" "/$(printf '%256s' | tr ' ' n)"
	unchanged "$IMG" mkdir -p "$D/fs.img" /keep/file/x
}

@test "put refuses bad input and writes nothing" {
	make_src
	unchanged "$IMG" put "$D/fs.img" "$D/src" /d
	unchanged "$IMG" put -r "$D/fs.img" "$D/nonexistent" /d
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" /no/such/dir/x
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" /keep/file/x
	unchanged "$IMG" put "$D/fs.img" "$D/src/a/small" "/$(printf '%256s' | tr ' ' n)"
	unchanged "$IMG" put -r "$D/fs.img" "$D/src" /keep/file
	# more data than the filesystem holds
	truncate -s 120M "$D/small.img"
	"$MKFS" -q "$D/small.img"
	fallocate -l 150M "$D/huge"
	before=$(sha256sum <"$D/small.img")
	btk_run 60 "$IMG" put "$D/small.img" "$D/huge" /huge
	assert_one_line_error
	grep -q "no space" "$BTK_ERR"
	[ "$before" = "$(sha256sum <"$D/small.img")" ]
}
