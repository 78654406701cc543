#!/usr/bin/env bats
# btk-image label and uuid, offline: show, set, back again; btrfs check and btk-fsck clean,
# blkid reads the new values, the image stays writable; uuid rewrites every tree block with the
# new fsid (snapshots keep sharing), -m goes through metadata_uuid; a power cut at every write
# leaves the old or the new value on a clean filesystem; several devices, bad values and no room
# for a second copy of the metadata refused. No root.

load helpers

setup() {
	require_btk image
	MKFS=$BTK_BUILD/bin/btk-mkfs
	IMAGE=$BTK_BUILD/bin/btk-image
	D=$BATS_TEST_TMPDIR
	U1=11111111-2222-3333-4444-555555555555
	U2=99999999-8888-7777-6666-555555555555
	"$MKFS" -q -b 300M -L old -U $U1 "$D/a.img"
}

clean() {
	if command -v btrfs >/dev/null; then
		btrfs check --readonly "$1" >"$D/check.out" 2>&1 || { cat "$D/check.out" >&2; return 1; }
	fi
	"$BTK_BUILD/bin/btk-fsck" "$1" >"$D/fsck.out" 2>&1 || { cat "$D/fsck.out" >&2; return 1; }
}

@test "label: show, set, blkid sees it, clean" {
	[ "$("$IMAGE" label "$D/a.img")" = old ]
	run "$IMAGE" label "$D/a.img" "a new label"
	[ "$status" = 0 ] && [ "$output" = "label: a new label" ]
	[ "$("$IMAGE" label "$D/a.img")" = "a new label" ]
	[ "$("$IMAGE" label --json "$D/a.img")" = '{"label": "a new label"}' ]
	if command -v blkid >/dev/null; then
		[ "$(blkid -p -s LABEL -o value "$D/a.img")" = "a new label" ]
	fi
	clean "$D/a.img"
	run "$IMAGE" label "$D/a.img" ""
	[ "$("$IMAGE" label "$D/a.img")" = "" ]
	btk_run 30 "$IMAGE" label "$D/a.img" "$(printf 'x%.0s' $(seq 1 256))"
	assert_one_line_error 1
	[ "$status" = 2 ]
}

@test "uuid -m: set through metadata_uuid, random, back to the metadata's: blkid, btrfs check, writes after" {
	[ "$("$IMAGE" uuid "$D/a.img")" = $U1 ]
	run "$IMAGE" uuid -m "$D/a.img" $U2
	[ "$status" = 0 ] && [ "$output" = "uuid: $U2" ]
	[ "$("$IMAGE" uuid "$D/a.img")" = "$U2 (metadata uuid $U1)" ]
	if command -v blkid >/dev/null; then
		[ "$(blkid -p -s UUID -o value "$D/a.img")" = $U2 ]
	fi
	clean "$D/a.img"
	if command -v btrfs >/dev/null; then
		btrfs inspect-internal dump-super "$D/a.img" | grep -q "METADATA_UUID"
	fi
	# the image stays writable and clean (new tree blocks carry the metadata uuid)
	"$IMAGE" mkdir "$D/a.img" /after >/dev/null
	echo data >"$D/f" && "$IMAGE" put "$D/a.img" "$D/f" /after/f >/dev/null
	clean "$D/a.img"
	"$IMAGE" uuid --metadata-uuid "$D/a.img" random >/dev/null
	run "$IMAGE" uuid "$D/a.img"
	[[ "$output" != "$U2"* && "$output" == *"(metadata uuid $U1)" ]]
	# back to the uuid the metadata holds: the feature goes
	"$IMAGE" uuid -m "$D/a.img" $U1 >/dev/null
	[ "$("$IMAGE" uuid "$D/a.img")" = $U1 ]
	if command -v btrfs >/dev/null; then
		! btrfs inspect-internal dump-super "$D/a.img" | grep -q "METADATA_UUID"
	fi
	clean "$D/a.img"
	[ "$("$IMAGE" cat "$D/a.img" /after/f)" = data ]
}

# fsids IMG: the distinct fsids of every tree block header, as btrfs-progs reads them
fsids() {
	btrfs inspect-internal dump-tree "$1" | sed -n 's/^fs uuid //p' | sort -u
}

# tree_blocks IMG: how many tree blocks btk-fsck counts
tree_blocks() {
	"$BTK_BUILD/bin/btk-fsck" "$1" | sed -n 's/.*, tree blocks \([0-9]*\),.*/\1/p'
}

@test "uuid: every tree block rewritten with the new uuid, snapshots keep sharing; from metadata_uuid too" {
	require_tool btrfs
	mkdir -p "$D/src/d"
	for i in $(seq 1 400); do echo "file $i" >"$D/src/d/f$i"; done
	"$IMAGE" put -r "$D/a.img" "$D/src/d" /d >/dev/null
	"$IMAGE" snapshot "$D/a.img" / /snap >/dev/null
	"$IMAGE" subvol create "$D/a.img" /sv >/dev/null
	local blocks
	blocks=$(tree_blocks "$D/a.img")
	[ "$blocks" -gt 10 ]
	run "$IMAGE" uuid "$D/a.img" $U2
	[ "$status" = 0 ] && [ "$output" = "uuid: $U2" ]
	[ "$("$IMAGE" uuid "$D/a.img")" = $U2 ]
	[ "$(fsids "$D/a.img")" = $U2 ]
	! btrfs inspect-internal dump-super "$D/a.img" | grep -q "METADATA_UUID"
	btrfs inspect-internal dump-super "$D/a.img" | grep -q "^dev_item.fsid.*$U2 \[match\]"
	if command -v blkid >/dev/null; then
		[ "$(blkid -p -s UUID -o value "$D/a.img")" = $U2 ]
	fi
	clean "$D/a.img"
	# shared blocks were copied once, not once per snapshot
	[ "$(tree_blocks "$D/a.img")" = "$blocks" ]
	[ "$("$IMAGE" cat "$D/a.img" /snap/d/f17)" = "file 17" ]
	# writable after, with the new uuid in new blocks
	"$IMAGE" mkdir "$D/a.img" /after >/dev/null
	clean "$D/a.img"
	[ "$(fsids "$D/a.img")" = $U2 ]
	# from a metadata_uuid filesystem: the blocks get the new uuid and the feature goes
	"$IMAGE" uuid -m "$D/a.img" $U1 >/dev/null
	[ "$("$IMAGE" uuid "$D/a.img")" = "$U1 (metadata uuid $U2)" ]
	"$IMAGE" uuid "$D/a.img" random >/dev/null
	local u
	u=$("$IMAGE" uuid "$D/a.img")
	[[ "$u" =~ ^[0-9a-f-]{36}$ && "$u" != $U1 && "$u" != $U2 ]]
	[ "$(fsids "$D/a.img")" = "$u" ]
	! btrfs inspect-internal dump-super "$D/a.img" | grep -q "METADATA_UUID"
	clean "$D/a.img"
	# the same uuid again: nothing to do, nothing written
	local h
	h=$(sha256_of "$D/a.img")
	"$IMAGE" uuid "$D/a.img" "$u" >/dev/null
	[ "$(sha256_of "$D/a.img")" = "$h" ]
}

@test "uuid: no room for a second copy of the metadata: one line naming -m, nothing written; -m works" {
	# 45000 device nodes in a filesystem shrunk to fit them
	mkdir -p "$D/e"
	printf '/d d 755 0 0 - - - - -\n/d/a_long_device_node_name_for_metadata_room_ c 600 0 0 1 3 0 1 45000\n' >"$D/tab"
	"$MKFS" -q -r "$D/e" -D "$D/tab" --shrink "$D/s.img"
	local h
	h=$(sha256_of "$D/s.img")
	btk_run 120 "$IMAGE" uuid "$D/s.img" $U2
	assert_one_line_error 1
	grep -q "no room for a second copy of the metadata.*--metadata-uuid (-m)" "$BTK_ERR" || { show_err; false; }
	[ "$(sha256_of "$D/s.img")" = "$h" ]
	run "$IMAGE" uuid -m "$D/s.img" $U2
	[ "$status" = 0 ]
	[[ "$("$IMAGE" uuid "$D/s.img")" == "$U2 (metadata uuid "* ]]
	clean "$D/s.img"
}

@test "uuid: two devices refused, bad values refused, nothing written" {
	"$MKFS" -q -b 300M -d raid1 -m raid1 "$D/m1.img" "$D/m2.img"
	local h1 h2
	h1=$(sha256_of "$D/m1.img") h2=$(sha256_of "$D/m2.img")
	btk_run 30 "$IMAGE" uuid --device "$D/m2.img" "$D/m1.img" random
	assert_one_line_error 1
	grep -q "only single-device" "$BTK_ERR"
	btk_run 30 "$IMAGE" uuid -m --device "$D/m2.img" "$D/m1.img" random
	assert_one_line_error 1
	grep -q "only single-device" "$BTK_ERR"
	[ "$(sha256_of "$D/m1.img")" = "$h1" ] && [ "$(sha256_of "$D/m2.img")" = "$h2" ]
	h1=$(sha256_of "$D/a.img")
	btk_run 30 "$IMAGE" uuid "$D/a.img" not-a-uuid
	assert_one_line_error 1
	[ "$status" = 2 ]
	[ "$(sha256_of "$D/a.img")" = "$h1" ]
}

# powercut VERB VALUE SHOW-OLD SHOW-NEW [OPTION]: stop the device after each write in turn;
# every state is clean and shows the old or the new value; the last run writes everything
powercut() {
	local verb=$1 value=$2 old=$3 new=$4 n=1 got seen_new=
	cp "$D/a.img" "$D/orig.img"
	while [ $n -lt 200 ]; do
		cp "$D/orig.img" "$D/p.img"
		BTK_FAULT=stop:$n "$IMAGE" "$verb" ${5:-} "$D/p.img" "$value" >/dev/null 2>&1 || true
		got=$("$IMAGE" "$verb" "$D/p.img")
		[ "$got" = "$old" ] || [ "$got" = "$new" ] || {
			echo "stop:$n: $verb shows '$got'" >&2
			return 1
		}
		clean "$D/p.img" || { echo "stop:$n: not clean" >&2; return 1; }
		if [ "$got" = "$new" ]; then
			seen_new=$n
			# once the primary superblock is new, every later stop shows it too
			cp "$D/orig.img" "$D/q.img"
			BTK_FAULT=stop:100000 "$IMAGE" "$verb" ${5:-} "$D/q.img" "$value" >/dev/null
			cmp -s "$D/p.img" "$D/q.img" && break
		fi
		n=$((n + 1))
	done
	echo "# $verb ${5:-}: new from write $seen_new" >&3
	[ -n "$seen_new" ] && [ $n -gt 2 ]
}

@test "label and uuid: a power cut at every write leaves the old or the new value, clean" {
	powercut label "cut label" old "cut label"
	powercut uuid $U2 $U1 "$U2 (metadata uuid $U1)" -m
	# the full rewrite: every tree block and a snapshot's shared ones copied first
	mkdir -p "$D/src"
	for i in $(seq 1 300); do echo "file $i" >"$D/src/f$i"; done
	"$IMAGE" put -r "$D/a.img" "$D/src" /d >/dev/null
	"$IMAGE" snapshot "$D/a.img" / /snap >/dev/null
	powercut uuid $U2 $U1 $U2
	[ "$(fsids "$D/p.img")" = $U2 ]
}
