#!/usr/bin/env bats
# btk-mkfs -O quota (and -R quota): quotas on in the new filesystem, as `btrfs quota enable`
# leaves them, with every qgroup counted exactly: each subvolume's level-0 qgroup, referenced and
# exclusive bytes of its tree blocks and data extents. btrfs check --qgroup-report recounts them
# (qgroups_exact) and btk-fsck checks them; tests/oracle/mkfs_kernel.bats mounts one.

load helpers

setup() {
	require_btk mkfs
	require_tool btrfs
	MKFS=$BTK_BUILD/bin/btk-mkfs
	D=$BATS_TEST_TMPDIR
	export SOURCE_DATE_EPOCH=1700000000
	mkdir -p "$D/src/sv/a" "$D/src/sv/nested" "$D/src/d"
	head -c 300000 /dev/urandom >"$D/src/d/big"
	ln "$D/src/d/big" "$D/src/d/big2"
	head -c 1000000 /dev/urandom >"$D/src/sv/a/random"
	yes hello | head -c 2000000 >"$D/src/sv/a/text"
	for i in $(seq 300); do echo "$i" >"$D/src/sv/nested/f$i"; done
}

mkfs() {
	btk_run 120 "$MKFS" -q -b 1G "$@"
	assert_no_crash
	[ "$status" -eq 0 ] || { show_err; return 1; }
}

fsck_clean() {
	run "$BTK_BUILD/bin/btk-fsck" "$1"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

# qgroup IMG ID: "referenced exclusive" of qgroup ID (0/5...) as the quota tree holds them (read
# by btk-debug: btrfs-progs before 6.7 cannot open a filesystem with simple quotas)
qgroup() {
	"$BTK_DEBUG" tree -t quota "$1" |
		awk -v id="$2" '$0 ~ "QGROUP_INFO " id "\\)" { f = 1; next }
			f && /referenced/ { r = $2 } f && /exclusive/ { print r, $2; exit }'
}

@test "-O quota: every subvolume's qgroup counted (subvolumes, compression, hard links, an archive, --shrink)" {
	mkfs -O quota --subvol sv --subvol sv/nested --compress zstd -r "$D/src" "$D/q.img"
	qgroups_exact "$D/q.img"
	fsck_clean "$D/q.img"
	# one qgroup per subvolume, each holding what only it reaches
	for id in 0/5 0/256 0/257; do
		read -r rfer excl <<<"$(qgroup "$D/q.img" $id)"
		[ "$rfer" -gt 0 ] && [ "$rfer" = "$excl" ]
	done
	read -r rfer _ <<<"$(qgroup "$D/q.img" 0/256)"
	[ "$rfer" -gt 1000000 ] # the random file's extents at least
	[ -z "$(qgroup "$D/q.img" 0/258)" ]
	# an archive of the same tree, a shrunk image, -R
	tar -C "$D/src" -cf "$D/src.tar" .
	mkfs -R quota --subvol sv -r "$D/src.tar" "$D/a.img"
	qgroups_exact "$D/a.img"
	fsck_clean "$D/a.img"
	rm -f "$D/s.img"
	btk_run 120 "$MKFS" -q -O quota --shrink -r "$D/src" "$D/s.img"
	[ "$status" -eq 0 ] || { show_err; return 1; }
	qgroups_exact "$D/s.img"
	fsck_clean "$D/s.img"
	# and an empty filesystem
	mkfs -O quota "$D/e.img"
	qgroups_exact "$D/e.img"
	[ "$(qgroup "$D/e.img" 0/5)" = "16384 16384" ]
}

@test "-O quota: reproducible, listed, said in the summary and JSON; ^quota and without it: no quota tree" {
	mkfs -O quota -U 01234567-89ab-cdef-0123-456789abcdef -r "$D/src" "$D/1.img"
	mkfs -O quota -U 01234567-89ab-cdef-0123-456789abcdef -r "$D/src" "$D/2.img"
	cmp "$D/1.img" "$D/2.img"
	"$MKFS" -O list-all | grep -q '^quota '
	"$MKFS" -R list-all | grep -q '^quota '
	run "$MKFS" -b 1G -O quota "$D/3.img"
	[ "$status" -eq 0 ]
	grep -q '^Runtime features: .*quota' <<<"$output"
	run "$MKFS" -b 1G -O quota --json "$D/4.img"
	[[ "$output" == *'"features": ['*'"quota"'* ]]
	mkfs -O quota,^quota "$D/5.img"
	! btrfs inspect-internal dump-tree -t quota "$D/5.img" 2>/dev/null | grep -q QGROUP
	run "$BTK_BUILD/bin/btk-convert" -O quota "$D/1.img"
	[ "$status" -eq 2 ]
}

@test "-O squota: simple quotas, every data extent owned by the subvolume that wrote it, counted for its owner" {
	mkfs -O squota --subvol sv --subvol sv/nested --compress zstd -r "$D/src" "$D/s.img"
	fsck_clean "$D/s.img"
	run "$BTK_DEBUG" tree -t quota "$D/s.img"
	[[ "$output" == *"QGROUP_STATUS 0) itemoff "*" itemsize 40"* ]]
	[[ "$output" == *"generation 1 flags 0x9(ON) scan 0 enable_gen 1"* ]]
	# each data extent record starts with its owner: as many owners as data extents
	"$BTK_DEBUG" tree -t extent "$D/s.img" >"$D/extents"
	data=$(grep -c 'flags DATA$' "$D/extents")
	owners=$(grep -c 'type EXTENT_OWNER_REF root' "$D/extents")
	[ "$data" -gt 10 ] && [ "$owners" = "$data" ]
	grep -A1 'flags DATA$' "$D/extents" | grep -q 'EXTENT_OWNER_REF root 256'
	# nothing is shared in a new filesystem: each owner's count is the full count of -O quota
	mkfs -O quota --subvol sv --subvol sv/nested --compress zstd -r "$D/src" "$D/q.img"
	for id in 0/5 0/256 0/257; do
		[ "$(qgroup "$D/s.img" $id)" = "$(qgroup "$D/q.img" $id)" ]
	done
	[ -n "$(qgroup "$D/s.img" 0/257)" ]
	# without quotas' tree it cannot be
	btk_run 60 "$MKFS" -q -b 1G -O squota,^quota "$D/x.img"
	assert_one_line_error 1
	grep -q "squota needs quota" "$BTK_ERR"
	"$MKFS" -O list-all | grep -q '^squota '
}
