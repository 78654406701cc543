#!/usr/bin/env bats
# btk-image's read verbs (ls, cat, ...) on btk-mkfs --rootdir images, no root: what they show
# equals the source tree (names, modes, sizes, times, content of inline, plain, sparse and
# compressed files); bad paths give one line and exit 1.

load helpers

setup() {
	require_btk image
	require_btk mkfs
	IMG=$BTK_BUILD/bin/btk-image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	SRC=$BTK_TEST_TMP/image-read-src
	if [ ! -d "$SRC" ]; then
		mkdir -p "$SRC.tmp/d/e" "$SRC.tmp/sub/x"
		echo small >"$SRC.tmp/d/inline"
		head -c 300000 /dev/urandom >"$SRC.tmp/d/random"
		yes btk | head -c 2000000 >"$SRC.tmp/d/text" # compresses
		truncate -s 5M "$SRC.tmp/d/sparse"
		echo tail >>"$SRC.tmp/d/sparse"
		printf 'head' | dd of="$SRC.tmp/d/sparse" conv=notrunc status=none
		ln -s inline "$SRC.tmp/d/link"
		ln "$SRC.tmp/d/text" "$SRC.tmp/d/hard"
		chmod 4750 "$SRC.tmp/d/random"
		touch -d '2001-02-03 04:05:06.123456789 UTC' "$SRC.tmp/d/inline"
		echo in-sub >"$SRC.tmp/sub/x/f"
		mv "$SRC.tmp" "$SRC"
	fi
}

# mkimg NAME MKFS-OPTIONS...
mkimg() {
	local n=$1
	shift
	"$MKFS" -q --rootdir "$SRC" -b 256m "$@" "$D/$n.img" >/dev/null
}

@test "ls lists a directory sorted, with -l modes, sizes, ns mtimes, symlink targets" {
	mkimg a
	btk_run 20 "$IMG" ls "$D/a.img" /d
	assert_no_crash
	[ "$status" = 0 ]
	[ "$(cat "$BTK_OUT")" = "$(cd "$SRC/d" && LC_ALL=C ls -A)" ]
	btk_run 20 "$IMG" ls -l "$D/a.img" /d
	[ "$status" = 0 ]
	grep -E '^ *[0-9]+ -rwsr-x--- +1 +0 +0 +300000 .* random$' "$BTK_OUT"
	grep -E ' 2001-02-03 04:05:06\.123456789 inline$' "$BTK_OUT"
	grep -E '^ *[0-9]+ lrwxrwxrwx .* link -> inline$' "$BTK_OUT"
	grep -E '^ *[0-9]+ -rw-r--r-- +2 .* hard$' "$BTK_OUT"
	# a file names itself
	btk_run 20 "$IMG" ls -l "$D/a.img" /d/text
	[ "$status" = 0 ]
	grep -E ' 2000000 .* /d/text$' "$BTK_OUT"
}

@test "ls -R walks every directory, subvolumes marked; --json parses and matches stat(1)" {
	require_tool python3
	mkimg s -u ro:sub
	btk_run 20 "$IMG" ls -R "$D/s.img"
	[ "$status" = 0 ]
	for d in / /d /d/e /sub /sub/x; do grep -qx "$d:" "$BTK_OUT"; done
	btk_run 20 "$IMG" ls -l "$D/s.img" /
	grep -E ' sub  \[subvolume 256, read-only\]$' "$BTK_OUT"
	btk_run 20 "$IMG" ls -R --json "$D/s.img" /d
	[ "$status" = 0 ]
	python3 - "$BTK_OUT" "$SRC" <<'PY'
import json, os, stat, sys
doc = json.load(open(sys.argv[1]))
assert doc["errors"] is False
seen = {}
for e in doc["entries"]:
    st = os.lstat(sys.argv[2] + e["path"])
    assert e["mode"] == stat.S_IMODE(st.st_mode), e
    assert e["type"] == {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink"}[stat.S_IFMT(st.st_mode)]
    if e["type"] != "dir":
        assert e["size"] == st.st_size, e
    assert e["mtime"]["sec"] * 10**9 + e["mtime"]["nsec"] == st.st_mtime_ns, e
    assert e["nlink"] == st.st_nlink or e["type"] == "dir", e
    seen[e["path"]] = e
assert seen["/d/link"]["target"] == "inline"
assert set(seen) == {"/d/" + n for n in os.listdir(sys.argv[2] + "/d")} | {"/d/e"}, sorted(seen)
PY
}

@test "cat gives every file's bytes: inline, plain, sparse, zlib, lzo, zstd" {
	local alg f
	for alg in none zlib lzo zstd; do
		if [ $alg = none ]; then mkimg $alg; else mkimg $alg --compress $alg; fi
		for f in inline random text sparse hard; do
			btk_run 20 "$IMG" cat "$D/$alg.img" /d/$f
			[ "$status" = 0 ] || { show_err; false; }
			cmp "$BTK_OUT" "$SRC/d/$f"
		done
	done
	mkimg sub -u sub
	btk_run 20 "$IMG" cat "$D/sub.img" /sub/x/f
	[ "$(cat "$BTK_OUT")" = in-sub ]
}

@test "bad paths: missing, through a file, a name over 255 bytes, cat of a directory" {
	mkimg b
	local sum
	sum=$(sha256_of "$D/b.img")
	btk_run 20 "$IMG" ls "$D/b.img" /d/nope
	assert_one_line_error 1
	grep -q 'No such file' "$BTK_ERR"
	btk_run 20 "$IMG" ls "$D/b.img" /d/text/x
	assert_one_line_error 1
	grep -q 'Not a directory' "$BTK_ERR"
	btk_run 20 "$IMG" cat "$D/b.img" /d/text/
	assert_one_line_error 1
	btk_run 20 "$IMG" ls "$D/b.img" "/d/$(printf '%256s' | tr ' ' a)"
	assert_one_line_error 1
	grep -q 'too long' "$BTK_ERR"
	btk_run 20 "$IMG" cat "$D/b.img" /d
	assert_one_line_error 1
	btk_run 20 "$IMG" ls "$D/nonexistent.img" /
	assert_one_line_error 1
	btk_run 20 "$IMG" ls
	[ "$status" = 2 ]
	[ "$(sha256_of "$D/b.img")" = "$sum" ]
}

@test "stat and getfattr show every inode field, xattrs and extents" {
	require_tool setfattr
	require_tool getfattr
	require_tool python3
	local s=$D/xsrc
	mkdir -p "$s"
	echo v >"$s/f"
	setfattr -n user.text -v hello "$s/f"
	setfattr -n user.bin -v 0x00ff01 "$s/f"
	setfattr -n user.empty "$s/f"
	"$MKFS" -q --rootdir "$s" -b 256m "$D/x.img"
	local e
	for e in "" "-e hex" "-e base64"; do
		btk_run 20 "$IMG" getfattr -d $e "$D/x.img" /f
		[ "$status" = 0 ]
		diff <(tail -n +2 "$BTK_OUT") <(getfattr -d $e "$s/f" 2>/dev/null | tail -n +2)
	done
	btk_run 20 "$IMG" getfattr -n user.text "$D/x.img" /f
	grep -qx 'user.text="hello"' "$BTK_OUT"
	btk_run 20 "$IMG" getfattr -n user.none "$D/x.img" /f
	assert_one_line_error 1
	btk_run 20 "$IMG" stat --json "$D/x.img" /f
	[ "$status" = 0 ]
	python3 - "$BTK_OUT" "$s/f" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1])); st = os.lstat(sys.argv[2])
assert d["size"] == st.st_size and d["mode"] == st.st_mode and d["nlink"] == 1, d
assert d["mtime"]["sec"] * 10**9 + d["mtime"]["nsec"] == st.st_mtime_ns
assert {x["name"]: x["value"] for x in d["xattrs"]} == {"user.text": "hello", "user.bin": "\x00\udcff\x01", "user.empty": ""}, d["xattrs"]
assert [x["type"] for x in d["extents"]] == ["inline"] and d["errors"] is False
PY
	btk_run 20 "$IMG" stat "$D/x.img" /f
	grep -q '^  Mode: 0644 (-rw-r--r--)  Links: 1' "$BTK_OUT" || grep -q 'Mode: 0644' "$BTK_OUT"
}

@test "get -r copies a tree as it is: modes, times in ns, xattrs, ACLs, hard links, holes" {
	require_tool rsync
	require_tool setfacl
	local s=$D/gsrc
	cp -a "$SRC" "$s"
	mkdir "$s/acl"
	setfacl -d -m u:1000:rw "$s/acl"
	setfacl -m u:1000:r "$s/d/inline"
	setfattr -n user.dir -v onadir "$s/acl"
	mkfifo "$s/fifo"
	chmod 555 "$s/d/e"
	for alg in none zstd; do
		rm -rf "$D/out"
		"$MKFS" -q --rootdir "$s" -b 256m $([ $alg = none ] || echo --compress $alg) "$D/g.img"
		btk_run 60 "$IMG" get -r "$D/g.img" / "$D/out"
		[ "$status" = 0 ] || { show_err; false; }
		# rsync names every difference of content, mode, times, xattrs, ACLs, hard links
		[ -z "$(rsync -naHAXc --itemize-changes "$s/" "$D/out/")" ]
		[ "$(stat -c %b "$D/out/d/sparse")" -le 32 ] # 5 MiB of hole stays a hole
		[ "$(stat -c %h "$D/out/d/hard")" = 2 ]
		[ "$(stat -c %i "$D/out/d/hard")" = "$(stat -c %i "$D/out/d/text")" ]
		rm -f "$D/g.img"
	done
	# one file, into an existing directory; refusing to overwrite without -f
	mkdir "$D/one"
	"$MKFS" -q --rootdir "$s" -b 256m "$D/g.img"
	btk_run 20 "$IMG" get "$D/g.img" /d/random "$D/one"
	[ "$status" = 0 ]
	cmp "$D/one/random" "$s/d/random"
	btk_run 20 "$IMG" get "$D/g.img" /d/random "$D/one"
	[ "$status" = 1 ]
	btk_run 20 "$IMG" get -f "$D/g.img" /d/random "$D/one"
	[ "$status" = 0 ]
	btk_run 20 "$IMG" get "$D/g.img" /d "$D/one"
	assert_one_line_error 1
	grep -q 'is a directory' "$BTK_ERR"
}

@test "get on a damaged image copies what reads, names what it skipped, exits 1" {
	require_btk owner
	require_tool python3
	local s=$D/dsrc phys
	mkdir -p "$s/ok" "$s/bad"
	head -c 1000000 /dev/urandom >"$s/bad/file"
	for i in $(seq 1 20); do head -c 5000 /dev/urandom >"$s/ok/f$i"; done
	"$MKFS" -q --rootdir "$s" -b 256m "$D/d.img"
	# overwrite 4 KiB of the file's data at 64 KiB in: its checksum no longer matches
	phys=$("$BTK_BUILD/bin/btk-owner" --json --file /bad/file "$D/d.img" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["extents"][0]["pieces"][0]["copies"][0]["physical"])')
	dd if=/dev/zero of="$D/d.img" bs=4096 seek=$(((phys + 65536) / 4096)) count=1 conv=notrunc status=none
	btk_run 60 "$IMG" get -r "$D/d.img" / "$D/out"
	assert_no_crash
	[ "$status" = 1 ]
	grep -q '/bad/file: bytes 65536\.\.69632: checksum mismatch' "$BTK_ERR"
	grep -q '1 problem:' "$BTK_ERR"
	for i in $(seq 1 20); do cmp "$s/ok/f$i" "$D/out/ok/f$i"; done
	# everything but the bad 4 KiB is there; that range is a hole
	cmp -n 65536 "$s/bad/file" "$D/out/bad/file"
	cmp -i 69632 "$s/bad/file" "$D/out/bad/file"
	[ "$(head -c 69632 "$D/out/bad/file" | tail -c 4096 | tr -d '\0' | wc -c)" = 0 ]
	btk_run 20 "$IMG" cat "$D/d.img" /bad/file
	assert_one_line_error 1
	grep -q 'checksum mismatch' "$BTK_ERR"
}

@test "two devices: --device names the other; a RAID1 copy that fails its checksum is read from the other" {
	require_btk owner
	require_tool python3
	"$MKFS" -q -d raid1 -m raid1 --rootdir "$SRC" -b 256m "$D/r1.img" "$D/r2.img"
	# one device of two: read degraded, one warning naming the missing one
	btk_run 20 "$IMG" ls "$D/r1.img" /d
	[ "$status" = 0 ] || { show_err; false; }
	[ "$(wc -l <"$BTK_ERR")" = 1 ]
	grep -q 'missing device(s): devid 2: reading the copies left' "$BTK_ERR"
	diff <(LC_ALL=C ls -A "$SRC/d") "$BTK_OUT"
	local phys
	phys=$("$BTK_BUILD/bin/btk-owner" --json --file /d/random "$D/r1.img" "$D/r2.img" |
		python3 -c 'import json,sys
for c in json.load(sys.stdin)["extents"][0]["pieces"][0]["copies"]:
    if c["devid"] == 1: print(c["physical"])')
	# that is where copy 1 of the file's data lies; then spoil 3 of its sectors
	cmp <(dd if="$D/r1.img" bs=4096 skip=$((phys / 4096)) count=16 status=none) \
		<(head -c 65536 "$SRC/d/random")
	dd if=/dev/zero of="$D/r1.img" bs=4096 seek=$((phys / 4096 + 2)) count=3 conv=notrunc status=none
	btk_run 20 "$IMG" cat --device "$D/r2.img" "$D/r1.img" /d/random
	[ "$status" = 0 ] || { show_err; false; }
	cmp "$BTK_OUT" "$SRC/d/random"
	btk_run 20 "$IMG" get --device "$D/r2.img" "$D/r1.img" /d/random "$D/copy"
	[ "$status" = 0 ]
	cmp "$D/copy" "$SRC/d/random"
}
