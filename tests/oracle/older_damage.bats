#!/usr/bin/env bats
# Recovery from damaged kernel-made images: btk-image get -r (automatic fallback to older
# roots; --salvage for what did not read whole) recovers at least the files btrfs restore -t
# recovers from the best older root, with the same content. Damage: both copies of the root
# tree block smashed; both copies of an fs tree leaf smashed; the image truncated.

load ../bats/helpers

setup_file() {
	[ "$(id -u)" = 0 ] && [ -e /dev/loop-control ] && command -v mkfs.btrfs >/dev/null || return 0
	H=$BTK_TEST_TMP/older-damage
	rm -rf "$H" && mkdir -p "$H"
	# many files (an fs tree of several leaves), then one more commit that changes a few
	local mnt loop
	mnt=$(mktemp -d)
	truncate -s 256M "$H/base.img"
	mkfs.btrfs -q -f "$H/base.img" >/dev/null
	loop=$(losetup -f --show "$H/base.img")
	mount "$loop" "$mnt"
	for d in 1 2 3 4; do
		mkdir "$mnt/d$d"
		for f in $(seq 1 150); do echo "file $d/$f $RANDOM" >"$mnt/d$d/f$f"; done
		head -c 150000 /dev/urandom >"$mnt/d$d/big"
	done
	sync -f "$mnt"
	echo changed >"$mnt/d1/f1"
	touch "$mnt/d4/new"
	sync -f "$mnt"
	umount "$mnt"
	losetup -d "$loop"
	rmdir "$mnt"
	# the originals: the undamaged image as btrfs restore gives it
	mkdir "$H/orig"
	btrfs restore "$H/base.img" "$H/orig" >/dev/null
}

setup() {
	require_loop
	require_btk image
	H=$BTK_TEST_TMP/older-damage
	[ -f "$H/base.img" ] || skip "the base image was not made"
	IMG=$BTK_BUILD/bin/btk-image
	CORRUPT=$BTK_BUILD/tests/corrupt
	D=$BATS_TEST_TMPDIR
}

# restore_best IMG: btrfs restore -t with each root tree btrfs-find-root lists (and without
# -t); the run that recovered the most files, in $D/restore
restore_best() {
	local best=-1 t n
	for t in "" $(btrfs-find-root -a "$1" 2>/dev/null | sed -n 's/^Well block \([0-9]*\).*/\1/p; s/^Found tree root at \([0-9]*\).*/\1/p'); do
		rm -rf "$D/try" && mkdir "$D/try"
		btrfs restore -i ${t:+-t "$t"} "$1" "$D/try" >/dev/null 2>&1 || true
		n=$(find "$D/try" -type f | wc -l)
		if [ "$n" -gt "$best" ]; then
			best=$n
			rm -rf "$D/restore" && mv "$D/try" "$D/restore"
		fi
	done
	echo "# btrfs restore: $best files at best" >&3
}

# at_least: every file btrfs restore got from the damaged image, btk-image got too, with the
# original's content (btrfs restore's own copy may be cut short: an empty file where the inode
# was lost)
at_least() {
	local f n=0 short=0
	while IFS= read -r -d '' f; do
		# the original, or an older version as btrfs restore's older root has it too
		# what btrfs restore wrote empty it did not recover (an inode whose data is lost)
		if [ ! -s "$D/restore/$f" ] && [ -s "$H/orig/$f" ]; then
			short=$((short + 1))
			continue
		fi
		cmp -s "$H/orig/$f" "$D/btk/$f" || cmp "$D/restore/$f" "$D/btk/$f" || {
			echo "differs or missing: $f" >&2
			grep -F "${f#.}" "$BTK_ERR" >&2
			return 1
		}
		n=$((n + 1))
	done < <(cd "$D/restore" && find . -type f -print0)
	echo "# btk-image: $(find "$D/btk" -type f | wc -l) files; all $n files btrfs restore recovered are there, equal (and $short it wrote empty)" >&3
	[ "$n" -gt 0 ]
}

@test "root tree smashed (both copies): get -r falls back by itself, >= btrfs restore -t" {
	cp --sparse=always "$H/base.img" "$D/x.img"
	"$CORRUPT" root-tree "$D/x.img"
	btk_run 300 "$IMG" get -r "$D/x.img" / "$D/btk"
	[ "$status" -eq 0 ] || { show_err; false; }
	grep -q "does not read at the current root" "$BTK_ERR"
	grep -q "read from generation" "$BTK_ERR"
	restore_best "$D/x.img"
	at_least
}

# smash LOGICAL IMG: zeros over every copy of the tree block at LOGICAL
smash() {
	local p
	for p in $(btrfs-map-logical -l "$1" "$2" 2>/dev/null | sed -n 's/.* physical \([0-9]*\) .*/\1/p'); do
		dd if=/dev/zero of="$2" bs=16384 count=1 seek=$((p / 16384)) conv=notrunc status=none
	done
}

@test "fs tree leaf smashed (both copies): get -r --salvage, >= btrfs restore -t; what is lost is listed" {
	cp --sparse=always "$H/base.img" "$D/x.img"
	# the third leaf of the current fs tree (the first holds the top directory: see BUGS)
	local leaf
	leaf=$("$BTK_BUILD/bin/btk-debug" tree -t 5 --json "$D/x.img" | jq -r 'select(.level == 0) | .block' | uniq | sed -n 3p)
	[ -n "$leaf" ]
	smash "$leaf" "$D/x.img"
	btk_run 300 "$IMG" get -r --salvage "$D/x.img" / "$D/btk"
	assert_no_crash
	# something was lost: exit 1 and what
	[ "$status" -eq 1 ]
	grep -Eq "not recovered|stepped over" "$BTK_ERR"
	restore_best "$D/x.img"
	at_least
}

@test "top directory's leaf smashed (both copies): get -r --salvage finds files by their own items, >= btrfs restore -t" {
	cp --sparse=always "$H/base.img" "$D/x.img"
	local leaf
	leaf=$("$BTK_BUILD/bin/btk-debug" tree -t 5 --json "$D/x.img" | jq -r 'select(.level == 0) | .block' | head -1)
	"$BTK_BUILD/bin/btk-debug" tree --block "$leaf" --json "$D/x.img" | jq -r '.key.objectid' | grep -qx 256
	smash "$leaf" "$D/x.img"
	btk_run 300 "$IMG" get -r --salvage "$D/x.img" / "$D/btk"
	assert_no_crash
	[ "$status" -eq 1 ]
	grep -q "found by their own items" "$BTK_ERR"
	restore_best "$D/x.img"
	# every file of the originals btk-image found is equal to it, at its path or under
	# lost+found (its directory's name lost)
	local f n=0 lf=0
	while IFS= read -r -d '' f; do
		f=${f#./}
		case $f in
		lost+found/*)
			# the original of the same name whose content it has
			local name=${f##*/} o ok=no
			for o in "$H"/orig/*/"$name"; do cmp -s "$o" "$D/btk/$f" && ok=yes; done
			[ $ok = yes ] || { echo "lost+found/$f: no original of that name and content" >&2; return 1; }
			lf=$((lf + 1))
			;;
		*) cmp "$H/orig/$f" "$D/btk/$f" ;;
		esac
		n=$((n + 1))
	done < <(cd "$D/btk" && find . -type f -print0)
	echo "# btk-image: $n files ($lf under lost+found); $(find "$H/orig" -type f | wc -l) in the original" >&3
	[ "$n" -ge 500 ]
	# at least what btrfs restore recovered, where it recovered anything
	if [ "$(find "$D/restore" -type f | wc -l)" -gt 0 ]; then at_least; fi
}

@test "truncated image: get -r --salvage, >= btrfs restore -t" {
	cp --sparse=always "$H/base.img" "$D/x.img"
	# cut at the first copy of the current fs tree root: past it nothing reads
	local cut
	cut=$("$IMG" roots --json "$D/x.img" | jq '.roots[] | select(.tree == 5 and .current) | .bytenr')
	cut=$(btrfs-map-logical -l "$cut" "$D/x.img" 2>/dev/null | sed -n '1s/.*physical \([0-9]*\).*/\1/p')
	[ -n "$cut" ]
	truncate -s "$cut" "$D/x.img"
	btk_run 300 "$IMG" get -r --salvage "$D/x.img" / "$D/btk"
	assert_no_crash
	[ "$status" -le 1 ]
	restore_best "$D/x.img"
	at_least
}
