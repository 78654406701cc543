#!/usr/bin/env bats
# Containers (issue 27), without root: split raw segments read and written as one device; EWF
# (E01 made by ewfacquire) read like the raw image by every read tool, refused by writers;
# formats btk does not read named with what to do; read tools leave an image's bytes and mtime
# alone and work on a 0444 file for a user who may not write it.

load helpers

B=$BTK_BUILD/bin

setup() {
	require_btk mkfs
	require_tool sfdisk
	D=$BATS_TEST_TMPDIR
}

# disk IMG: a GPT disk image of 300 MiB with a populated btrfs in p2 (made by btk-mkfs)
disk() {
	truncate -s 300M "$1"
	printf 'label: gpt\n,32M,L\n,200M,L\n,\n' | sfdisk -q "$1"
	"$B/btk-mkfs" -q -L inside -r "$BTK_ROOT/man" "$1@p2"
}

@test "split raw: split -b 64M -d segments read as the raw image, and written as it" {
	disk "$D/disk.img"
	(cd "$D" && split -b 64M -d disk.img seg.raw.)
	[ -e "$D/seg.raw.04" ]
	read_tools "$D/disk.img@p2" "$D/raw" /btk.7
	read_tools "$D/seg.raw.00@p2" "$D/split" /btk.7
	diff -r "$D/raw" "$D/split"
	"$B/btk-debug" parts "$D/seg.raw.00" | grep -q "btrfs label 'inside'"
	# the same writes on both: byte for byte the same result
	for dev in "$D/disk.img@p2" "$D/seg.raw.00@p2"; do
		export SOURCE_DATE_EPOCH=1
		"$B/btk-image" put "$dev" "$BTK_ROOT/README.md" /readme
		"$B/btk-image" mkdir "$dev" /d
		"$B/btk-resize" -q 150M "$dev"
	done
	cat "$D"/seg.raw.0* | cmp - "$D/disk.img"
	"$B/btk-image" cat "$D/seg.raw.00@p2" /readme | cmp - "$BTK_ROOT/README.md"
	# the segments keep their sizes: the device cannot grow
	btk_run 20 "$B/btk-resize" 250M "$D/seg.raw.00@p2"
	assert_one_line_error 1
	# btk-convert hands the device to libext2fs, which reads one file: refused, naming them
	if [ -x "$B/btk-convert" ]; then
		sha=$(cat "$D"/seg.raw.0* | sha256sum)
		btk_run 20 "$B/btk-convert" "$D/seg.raw.00@p2"
		assert_one_line_error 1
		[ "$status" -eq 1 ] && grep -q "split raw segments" "$BTK_ERR" || { show_err; false; }
		[ "$(cat "$D"/seg.raw.0* | sha256sum)" = "$sha" ]
	fi
	# other series names: .000 and .aa
	(cd "$D" && split -b 100M -a 3 -d disk.img three. && split -b 100M disk.img let.)
	"$B/btk-fsck" "$D/three.000@p2" >/dev/null
	"$B/btk-fsck" "$D/let.aa@p2" >/dev/null
}

@test "split raw: one set given twice to a multi-device writer (as partitions, an offset, a later segment) is one device" {
	truncate -s 600M "$D/d.img"
	printf 'label: gpt\n,250M,L\n,250M,L\n' | sfdisk -q "$D/d.img"
	split -b 200M -d -a 3 "$D/d.img" "$D/sp."
	sha=$(cat "$D"/sp.* | sha256sum)
	for pair in "sp.000@p1 sp.000@p1" "sp.000@p1 sp.000@1MiB" "sp.000@p1 sp.001" "sp.000 sp.002"; do
		set -- $pair
		btk_run 60 "$B/btk-mkfs" -f "$D/$1" "$D/$2"
		assert_one_line_error 1
		grep -q "are the same device" "$BTK_ERR"
	done
	[ "$(cat "$D"/sp.* | sha256sum)" = "$sha" ]
	# two partitions of one set are two devices
	"$B/btk-mkfs" -q -f -d raid1 "$D/sp.000@p1" "$D/sp.000@p2" >/dev/null
	"$B/btk-fsck" "$D/sp.000@p1" "$D/sp.000@p2" >/dev/null
}

@test "EWF: chunks stored deflated and stored plain (random bytes) read back byte for byte, across chunk edges" {
	require_tool ewfacquire
	mkdir "$D/src"
	head -c $((3 << 20)) /dev/urandom >"$D/src/rnd"
	head -c 100001 /dev/urandom >"$D/src/odd"
	cat "$BTK_ROOT"/man/*.[0-9] >"$D/src/text"
	truncate -s 240M "$D/disk.img"
	printf 'label: gpt\n,1M,L\n,200M,L\n' | sfdisk -q "$D/disk.img"
	"$B/btk-mkfs" -q -r "$D/src" "$D/disk.img@p2"
	ewfacquire -u -q -t "$D/ev" -f encase6 -c fast -S 100M "$D/disk.img" >/dev/null 2>&1
	for f in rnd odd text; do
		"$B/btk-image" cat "$D/ev.E01@p2" "/$f" | cmp - "$D/src/$f"
	done
	"$B/btk-fsck" "$D/ev.E01@p2" >/dev/null
	# a device read that starts and ends inside chunks: the whole partition through the E01
	"$B/btk-image" get -r -q "$D/ev.E01@p2" / "$D/out"
	diff -r "$D/src" "$D/out"
}

@test "EWF: readers on 8 threads share the chunk cache and read every range as the raw file; chunks stored alike are known equal without being inflated" {
	require_tool ewfacquire
	EWFREAD=$BTK_BUILD/tests/ewfread
	[ -x "$EWFREAD" ]
	# 24 MiB, three times the cache: text (stored deflated), random bytes (stored plain), the
	# text again 16 MiB further
	for _ in $(seq 60); do cat "$BTK_ROOT"/man/*; done | head -c 8M >"$D/text"
	head -c 8M /dev/urandom >"$D/rnd"
	cat "$D/text" "$D/rnd" "$D/text" >"$D/raw"
	ewfacquire -u -q -t "$D/ev" -f encase6 -c fast -S 10M "$D/raw" >/dev/null 2>&1
	"$EWFREAD" same "$D/ev.E01" "$D/raw" 8 1500 "$RANDOM"
	# alike: the text and its copy, whole or inside a chunk (a DUP tree block's two copies)
	[ "$("$EWFREAD" equal "$D/ev.E01" 0 16777216 1048576)" = 1 ]
	[ "$("$EWFREAD" equal "$D/ev.E01" 49152 16826368 16384)" = 1 ]
	# not known alike: text against random bytes, stored plain chunks, offsets that do not
	# pair chunks up, a range past the end
	[ "$("$EWFREAD" equal "$D/ev.E01" 0 8388608 32768)" = 0 ]
	[ "$("$EWFREAD" equal "$D/ev.E01" 8388608 8454144 32768)" = 0 ]
	[ "$("$EWFREAD" equal "$D/ev.E01" 0 16777728 1024)" = 0 ]
	[ "$("$EWFREAD" equal "$D/ev.E01" 0 16777216 9437184)" = 0 ]
}

@test "EWF: a bad DUP copy of a tree block is reported from the E01 as from the raw image (its chunks are not stored alike)" {
	require_tool ewfacquire
	require_tool mkfs.btrfs
	CORRUPT=$BTK_BUILD/tests/corrupt
	[ -x "$CORRUPT" ]
	mkdir -p "$D/src/d"
	for i in $(seq 1 300); do echo "file $i" >"$D/src/d/f$i"; done
	truncate -s 256M "$D/good.img"
	mkfs.btrfs -q -f -m dup -r "$D/src" "$D/good.img" >/dev/null 2>&1
	cp --sparse=always "$D/good.img" "$D/bad.img"
	"$CORRUPT" copy2 "$D/bad.img" >/dev/null
	for img in good bad; do
		ewfacquire -u -q -t "$D/$img" -f encase6 -c fast "$D/$img.img" >/dev/null 2>&1
		btk_run 60 "$B/btk-fsck" "$D/$img.img"
		raw_status=$status
		cp "$BTK_OUT" "$D/$img.raw.out"
		btk_run 60 "$B/btk-fsck" "$D/$img.E01"
		[ "$status" = "$raw_status" ]
		diff <(sed "s|$D/$img.img|DEV|" "$D/$img.raw.out") <(sed "s|$D/$img.E01|DEV|" "$BTK_OUT")
	done
	[ "$raw_status" = 4 ]
	grep -qE '^ERROR: \[E0608 tb-copy-bad\] .*copy 2 of 2' "$BTK_OUT"
}

@test "EWF: an E01 of the disk image reads as the raw image in every read tool; writers refuse it in one line" {
	require_tool ewfacquire
	disk "$D/disk.img"
	ewfacquire -u -q -t "$D/ev" -f encase6 -c fast -S 100M "$D/disk.img" >/dev/null 2>&1
	[ -e "$D/ev.E01" ]
	read_tools "$D/disk.img@p2" "$D/raw" /btk.7
	read_tools "$D/ev.E01@p2" "$D/ewf" /btk.7
	diff -r "$D/raw" "$D/ewf"
	"$B/btk-debug" parts --json "$D/ev.E01" | grep -q '"label":"inside"'
	sha=$(sha256_of "$D/ev.E01")
	# one line and the refused operation's exit status (btk.7: 1; btk-fsck's operational error 8)
	local cmds=("btk-resize 100M" "btk-image mkdir" "btk-mkfs -f" "btk-image rm"
		"btk-fsck --repair" "btk-fsck --rescue super" "btk-fsck --rescue heal")
	[ ! -x "$B/btk-convert" ] || cmds+=(btk-convert)
	for cmd in "${cmds[@]}"; do
		set -- $cmd
		tool=$1
		shift
		case $tool in
		btk-image) btk_run 20 "$B/$tool" "$@" "$D/ev.E01@p2" /x ;;
		*) btk_run 20 "$B/$tool" "$@" "$D/ev.E01@p2" ;;
		esac
		assert_one_line_error 1
		[ "$status" -eq "$([ "$tool" = btk-fsck ] && echo 8 || echo 1)" ] || { show_err; false; }
		grep -q "EWF evidence file (E01) is read-only" "$BTK_ERR" || { show_err; false; }
	done
	[ "$(sha256_of "$D/ev.E01")" = "$sha" ]
}

@test "containers btk does not read are named with what to do, never 'not a btrfs filesystem'" {
	local f
	for f in "qcow2:QFI\xfb:qemu-img convert" "vmdk:KDMV:VMDK image" "vhdx:vhdxfile:VHDX image" \
		"aff:AFF10\r\n:AFF evidence file" "luks:LUKS\xba\xbe:cryptsetup open"; do
		IFS=: read -r name magic words <<<"$f"
		truncate -s 1M "$D/x.$name"
		printf "$magic" | dd of="$D/x.$name" conv=notrunc status=none
		btk_run 20 "$B/btk-fsck" "$D/x.$name"
		assert_one_line_error 1
		grep -q "$words" "$BTK_ERR" || { show_err; false; }
		! grep -q "not a btrfs filesystem" "$BTK_ERR"
	done
	truncate -s 1M "$D/x.lvm"
	printf 'LABELONE' | dd of="$D/x.lvm" bs=1 seek=512 conv=notrunc status=none
	btk_run 20 "$B/btk-image" ls "$D/x.lvm" /
	assert_one_line_error 1
	grep -q "LVM physical volume: activate it" "$BTK_ERR"
	# a disk image given without its partition
	disk "$D/disk.img"
	btk_run 20 "$B/btk-owner" -l "$D/disk.img" 1
	assert_one_line_error 1
	grep -q "GPT partition table (3 partitions): give the partition" "$BTK_ERR"
	# mkfs leaves a container alone without -f
	sha=$(sha256_of "$D/x.qcow2")
	btk_run 20 "$B/btk-mkfs" "$D/x.qcow2"
	assert_one_line_error 1
	[ "$(sha256_of "$D/x.qcow2")" = "$sha" ]
}

@test "read tools change nothing: sha256 and mtime kept, and they work on a 0444 file for a user who cannot write it" {
	local dir run=()
	dir=$(mktemp -d /tmp/btk-ro.XXXXXX)
	chmod 755 "$dir"
	disk "$dir/disk.img"
	chmod 0444 "$dir/disk.img"
	touch -d '2001-02-03 04:05:06' "$dir/disk.img"
	sha=$(sha256_of "$dir/disk.img")
	mt=$(stat -c %Y "$dir/disk.img")
	if [ "$(id -u)" = 0 ]; then
		require_tool setpriv
		run=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	fi
	out=$dir/out
	mkdir "$out"
	chmod 777 "$out"
	for c in "btk-fsck" "btk-fsck --check-data-csum" "btk-debug super" "btk-debug tree" \
		"btk-debug stats" "btk-debug parts" "btk-owner --file /btk.7" "btk-image ls -R" \
		"btk-image cat" "btk-image get -r -q" "btk-image dump" "btk-image stat" \
		"btk-resize --dry-run 100M" "btk-convert --rollback --dry-run"; do
		set -- $c
		tool=$1
		shift
		dev=$dir/disk.img@p2
		[ "$c" = "btk-debug parts" ] && dev=$dir/disk.img
		case $c in
		"btk-image ls -R") args=("$dev" /) ;;
		"btk-image cat") args=("$dev" /btk.7) ;;
		"btk-image stat") args=("$dev" /btk.7) ;;
		"btk-image get -r -q") args=("$dev" / "$out/get") ;;
		"btk-image dump") args=("$dev" "$out/dump") ;;
		*) args=("$dev") ;;
		esac
		status=0
		"${run[@]}" "$B/$tool" "$@" "${args[@]}" >"$out/o" 2>"$out/e" || status=$?
		case $c in
		"btk-convert --rollback --dry-run") [ "$status" -eq 1 ] ;; # not a converted filesystem
		*) [ "$status" -eq 0 ] || { echo "$c: exit $status" >&2; cat "$out/e" >&2; false; } ;;
		esac
		[ "$(sha256_of "$dir/disk.img")" = "$sha" ] || { echo "$c changed the image" >&2; false; }
		[ "$(stat -c %Y "$dir/disk.img")" = "$mt" ] || { echo "$c changed the mtime" >&2; false; }
	done
	# a writer cannot open it
	btk_run 20 "${run[@]}" "$B/btk-image" mkdir "$dir/disk.img@p2" /x
	assert_one_line_error 1
	rm -rf "$dir"
}
