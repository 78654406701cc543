#!/usr/bin/env bats
# btk-fsck --rescue super|heal and the same steps at the start of --repair (issue 26): one copy
# of a tree block, a data copy or a superblock copy smashed (tests/lib/smash.c) on btk-mkfs
# images of every redundant profile; after the rescue the image is byte-identical to the one
# before the damage. Power cuts at every write of a heal leave a filesystem that opens, whose
# only faults are bad copies, and that a second run heals. Kernel-made images:
# tests/oracle/fsck_rescue.bats.

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck
SMASH=$BTK_BUILD/tests/smash

setup_file() {
	local d=$BATS_FILE_TMPDIR/src
	mkdir -p "$d/dir/sub"
	for i in 1 2 3 4 5 6; do head -c $((i * 20000)) /dev/urandom >"$d/dir/f$i"; done
	for i in $(seq 1 300); do echo "file $i" >"$d/dir/sub/n$i"; done
}

# profile PROF N: N fresh 300 MiB devices with metadata and data PROF in $IMGS (originals
# kept as .orig)
profile() {
	IMGS=()
	local i
	for i in $(seq 1 "$2"); do
		IMGS+=("$BATS_TEST_TMPDIR/$1-$i.img")
		rm -f "${IMGS[-1]}"
		truncate -s 300M "${IMGS[-1]}"
	done
	"$BTK_BUILD/bin/btk-mkfs" -q -f -m "$1" -d "$1" --rootdir "$BATS_FILE_TMPDIR/src" \
		"${IMGS[@]}" >/dev/null
	for i in "${IMGS[@]}"; do cp --sparse=always "$i" "$i.orig"; done
}

# every device equal to its original
same_as_orig() {
	local i
	for i in "${IMGS[@]}"; do
		cmp "$i" "$i.orig" || return 1
	done
}

@test "rescue heal: a smashed copy of each tree's top block and of a leaf, each copy, every redundant profile: healed byte for byte" {
	require_btk fsck
	local prof n t c where
	for prof in dup:1 raid1:2 raid1c3:3 raid10:4 raid5:3 raid6:4; do
		n=${prof#*:} prof=${prof%:*}
		profile "$prof" "$n"
		for t in 1 2 3 4 5 7; do
			for c in 1 2; do
				# RAID5/6: copy 1 is the data stripe, the other is rebuilt from parity
				case $prof:$c in raid5:2 | raid6:2) continue ;; esac
				for where in "" leaf; do
					"$SMASH" tree $t $c $where "${IMGS[@]}" >/dev/null
					btk_run 60 "$FSCK" -q "${IMGS[@]}"
					[ "$status" = 4 ] || { show_err; echo "$prof tree $t copy $c $where: not detected" >&2; return 1; }
					btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[@]}"
					assert_no_crash
					[ "$status" = 1 ] || { show_err; echo "$prof tree $t copy $c $where: exit $status" >&2; return 1; }
					grep -q "^HEALED: tree $t level [0-9] block [0-9]* copy $c of " "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
					grep -q ", 1 bad copy rewritten, 0 without a good copy$" "$BTK_OUT"
					same_as_orig || { echo "$prof tree $t copy $c $where: not as before" >&2; return 1; }
				done
			done
		done
	done
}

@test "rescue heal --check-data-csum: a smashed data copy is rewritten from the good one (every redundant profile); without the option data is left alone" {
	require_btk fsck
	local prof n c
	for prof in dup:1 raid1:2 raid10:4 raid1c4:4 raid5:3 raid6:4; do
		n=${prof#*:} prof=${prof%:*}
		profile "$prof" "$n"
		for c in 1 2; do
			case $prof:$c in raid5:2 | raid6:2) continue ;; esac
			"$SMASH" data $c "${IMGS[@]}" >/dev/null
			btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[@]}"
			[ "$status" = 0 ] || { show_err; return 1; }
			btk_run 60 "$FSCK" -q --check-data-csum "${IMGS[@]}"
			[ "$status" = 4 ] || { show_err; echo "$prof data copy $c: not detected" >&2; return 1; }
			btk_run 60 "$FSCK" --rescue heal --check-data-csum --json --no-undo "${IMGS[@]}"
			[ "$status" = 1 ] || { show_err; echo "$prof data copy $c: exit $status" >&2; return 1; }
			python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["result"] == "rescued", r
h = [e for e in r["heal"] if e["kind"] == "data"]
assert h and all(e["healed"] and e["copy"] == int(sys.argv[2]) for e in h), h
assert r["heal_summary"]["data_sectors_healed"] == 4, r["heal_summary"]
assert r["heal_summary"]["data_sectors_lost"] == 0
' "$BTK_OUT" $c
			same_as_orig || { echo "$prof data copy $c: not as before" >&2; return 1; }
		done
	done
}

@test "rescue heal, RAID5/6: a smashed P or Q of a tree block's and of data's row, and for RAID6 two of data stripe, P, Q and another data stripe of the row, are rewritten (parity from the data stripes, the data stripe from the good rebuild): byte for byte; the checker reports a bad parity (of data with --check-data-csum); --repair heals it" {
	require_btk fsck
	local prof n combo c out
	for prof in raid5:3 raid6:4; do
		n=${prof#*:} prof=${prof%:*}
		profile "$prof" "$n"
		for combo in 2 3 "1 2" "1 3" "2 3" "1 next"; do
			case $prof:$combo in raid5:2) ;; raid5:*) continue ;; esac
			# data first (smash reads the trees to find it)
			for c in $combo; do "$SMASH" data $c "${IMGS[@]}" >/dev/null; done
			for c in $combo; do
				"$SMASH" tree 5 $c leaf "${IMGS[@]}" >/dev/null
				"$SMASH" tree 1 $c "${IMGS[@]}" >/dev/null
			done
			btk_run 60 "$FSCK" "${IMGS[@]}"
			[ "$status" = 4 ] || { show_err; echo "$prof $combo: not detected" >&2; return 1; }
			# a bad data stripe is reported as such (its parity rebuilt it); else the parity
			for c in $combo; do
				case $combo:$c in 1*:1) out="checksum mismatch" ;; 1*) continue ;; *) out="parity does not match the data stripes of its row" ;; esac
				grep -q "tree 5 level 0 block [0-9]*: copy $c of $((n == 3 ? 2 : 3)) (devid [0-9]* physical [0-9]*) is bad (expected a copy equal to the good one, found $out)" "$BTK_OUT" || { cat "$BTK_OUT" >&2; echo "$prof $combo: copy $c not reported" >&2; return 1; }
			done
			btk_run 60 "$FSCK" --rescue heal --check-data-csum --no-undo "${IMGS[@]}"
			assert_no_crash
			[ "$status" = 1 ] || { show_err; echo "$prof $combo: exit $status" >&2; return 1; }
			for c in $combo; do
				[ "$c" != next ] || continue
				grep -q "^HEALED: tree 5 level 0 block [0-9]* copy $c of " "$BTK_OUT" || { cat "$BTK_OUT" >&2; echo "$prof $combo: tree 5 copy $c not healed" >&2; return 1; }
				grep -q "^HEALED: data \[[0-9]*, +[0-9]*) copy $c of " "$BTK_OUT" || { cat "$BTK_OUT" >&2; echo "$prof $combo: data copy $c not healed" >&2; return 1; }
			done
			# two data stripes bad: the reader rebuilds the block from P and Q
			[ "$combo" != "1 next" ] || grep -q "^HEALED: tree 5 level 0 block [0-9]* copy 1 of 3 (devid [0-9]* physical [0-9]*): checksum mismatch; rewritten from copy 3" "$BTK_OUT"
			grep -q " 0 without a good copy; .* 0 without a good copy$" "$BTK_OUT"
			same_as_orig || { echo "$prof $combo: not as before" >&2; return 1; }
		done
	done
	# a bad parity of data alone: --check-data-csum reports it, its repair heals it
	"$SMASH" data 2 "${IMGS[@]}" >/dev/null
	btk_run 60 "$FSCK" "${IMGS[@]}"
	[ "$status" = 0 ] || { show_err; return 1; }
	btk_run 60 "$FSCK" --check-data-csum "${IMGS[@]}"
	[ "$status" = 4 ] || { show_err; return 1; }
	grep -q "^ERROR: \[E1504 data-parity\] tree 7 bytenr [0-9]*: data \[[0-9]*, +[0-9]*): copy 2 of 3 (P of its row, devid [0-9]* physical [0-9]*) does not match the data stripes" "$BTK_OUT"
	btk_run 60 "$FSCK" --repair --check-data-csum --no-undo "${IMGS[@]}"
	[ "$status" = 1 ] || { show_err; return 1; }
	same_as_orig
	# the repair runs the heal when its check reports a bad parity (no --check-data-csum)
	"$SMASH" tree 2 3 "${IMGS[@]}" >/dev/null
	btk_run 60 "$FSCK" --repair --no-undo "${IMGS[@]}"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -q "^HEALED: tree 2 level [0-9] block [0-9]* copy 3 of 3 (devid [0-9]* physical [0-9]*): Q does not match the data stripes of its row; recomputed from them" "$BTK_OUT"
	same_as_orig
}

@test "rescue heal: data with no good copy is reported and left alone (exit 4)" {
	require_btk fsck
	profile dup 1
	"$SMASH" data 1 "${IMGS[@]}" >/dev/null
	"$SMASH" data 2 "${IMGS[@]}" >/dev/null
	cp --sparse=always "${IMGS[0]}" "$BATS_TEST_TMPDIR/smashed.img"
	btk_run 60 "$FSCK" --rescue heal --check-data-csum --no-undo "${IMGS[@]}"
	[ "$status" = 4 ] || { show_err; return 1; }
	[ "$(grep -c '^NOT HEALED: data \[[0-9]*, +4096): no good copy of 2: no copy matches its checksum$' "$BTK_OUT")" = 4 ]
	cmp "${IMGS[0]}" "$BATS_TEST_TMPDIR/smashed.img"
}

@test "rescue super: a zeroed primary, a stale or zeroed mirror are rewritten from the best copy; sys-chunk-stripe-len-bogus opens again; no valid copy is refused" {
	require_btk fsck
	local k
	for prof in dup:1 raid1:2 raid5:3; do
		n=${prof#*:} prof=${prof%:*}
		profile "$prof" "$n"
		for k in "0 zero" "1 stale" "1 zero"; do
			"$SMASH" super $k "${IMGS[@]}" >/dev/null
			btk_run 60 "$FSCK" --rescue super --no-undo "${IMGS[@]}"
			[ "$status" = 1 ] || { show_err; echo "$prof super $k: exit $status" >&2; return 1; }
			grep -q "^REWRITTEN: superblock copy ${k% *} of devid 1 " "$BTK_OUT"
			grep -q "^superblocks: [0-9]* copies, 1 rewritten from copy [01] " "$BTK_OUT"
			same_as_orig || { echo "$prof super $k: not as before" >&2; return 1; }
		done
		btk_run 60 "$FSCK" --rescue super --no-undo "${IMGS[@]}"
		[ "$status" = 0 ]
		grep -q "every copy equal to the best one" "$BTK_OUT"
	done
	# both copies of a one-device image gone: refused, nothing written
	profile dup 1
	"$SMASH" super 0 zero "${IMGS[@]}" >/dev/null
	dd if=/dev/zero of="${IMGS[0]}" bs=4096 seek=16384 count=1 conv=notrunc status=none
	cp --sparse=always "${IMGS[0]}" "$BATS_TEST_TMPDIR/gone.img"
	btk_run 60 "$FSCK" --rescue super --no-undo "${IMGS[@]}"
	[ "$status" = 8 ]
	grep -q "superblocks: no superblock copy opens the filesystem (copy 0: no btrfs magic; copy 1: no btrfs magic; copy 2: past the device end)" "$BTK_ERR"
	cmp "${IMGS[0]}" "$BATS_TEST_TMPDIR/gone.img"
	# the corpus's fuzzed sys_chunk_array stripe length in the primary (a good checksum)
	local src name=fuzz-images__sys-chunk-stripe-len-bogus
	src=$(corpus_src) || skip "corpus not available"
	CORPUS_IMG=$BATS_TEST_TMPDIR/bogus.img
	xz -dc "$src/$name.raw.xz" | cp --sparse=always /dev/stdin "$CORPUS_IMG"
	truncate -s "$(awk -v n=$name '$1 == n { print $4 }' "$src/MANIFEST.tsv")" "$CORPUS_IMG"
	# the check reads the chunk tree through its root block (E0117); the repair's first step
	# rewrites the primary from the mirror whose array parses
	btk_run 60 "$FSCK" "$CORPUS_IMG"
	[ "$status" = 4 ] || { show_err; return 1; }
	grep -q "E0117 sys-array" "$BTK_OUT"
	btk_run 60 "$FSCK" --repair "$CORPUS_IMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "^REWRITTEN: superblock copy 0 of devid 1 .*: differs from copy 1 at byte 846; from copy 1" "$BTK_OUT"
	btk_run 60 "$FSCK" -q "$CORPUS_IMG"
	[ "$status" = 0 ]
	if command -v btrfs >/dev/null; then btrfs check --readonly "$CORPUS_IMG" >/dev/null 2>&1; fi
	btk_run 60 "$FSCK" --repair --no-undo "$CORPUS_IMG"
	[ "$status" = 0 ]
}

@test "rescue super: two copies damaged in different places (no copy opens alone) are merged: the primary with the mirror's system chunk array, byte for byte as before; --json; undo puts both back" {
	require_btk fsck undo
	profile dup 1
	"$BTK_BUILD/tests/corrupt" super-split "${IMGS[0]}" >/dev/null
	cp --sparse=always "${IMGS[0]}" "$BATS_TEST_TMPDIR/split.img"
	btk_run 60 "$FSCK" -q "${IMGS[0]}"
	[ "$status" = 8 ] || { show_err; return 1; }
	rm -f "$BATS_TEST_TMPDIR/s.undo"
	btk_run 60 "$FSCK" --rescue super -z "$BATS_TEST_TMPDIR/s.undo" --json "${IMGS[0]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["super_summary"]
assert r["result"] == "rescued" and s["rewritten"] == 2 and s["source_copy"] == 0, r
assert s["merged"] == {"part": "system chunk array", "from_copy": 1}, s
assert [e["copy"] for e in r["super"]] == [0, 1], r["super"]
' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	same_as_orig || { echo "not as before the damage" >&2; return 1; }
	"$BTK_BUILD/bin/btk-undo" "$BATS_TEST_TMPDIR/s.undo" "${IMGS[0]}" >/dev/null
	cmp "${IMGS[0]}" "$BATS_TEST_TMPDIR/split.img"
	# the same by --repair, in text
	btk_run 120 "$FSCK" --repair --no-undo "${IMGS[0]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q '^REWRITTEN: superblock copy 0 of devid 1 .*: its system chunk array taken from copy 1 (no copy opened the filesystem alone); from copy 0 ' "$BTK_OUT"
	grep -q '^superblocks: 2 copies, 2 rewritten from copy 0 with the system chunk array of copy 1 (generation [0-9]*)$' "$BTK_OUT"
	same_as_orig
}

@test "repair: superblocks and bad copies first, in the text and --json reports; undo puts the damage back" {
	require_btk fsck undo
	profile dup 1
	"$SMASH" tree 5 2 leaf "${IMGS[@]}" >/dev/null
	"$SMASH" super 0 zero "${IMGS[@]}" >/dev/null
	cp --sparse=always "${IMGS[0]}" "$BATS_TEST_TMPDIR/damaged.img"
	btk_run 60 "$FSCK" --repair --json -z "$BATS_TEST_TMPDIR/u.undo" "${IMGS[@]}"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert [e["copy"] for e in r["super"]] == [0], r["super"]
assert len(r["heal"]) == 1 and r["heal"][0]["tree"] == 5 and r["heal"][0]["copy"] == 2, r["heal"]
assert r["result"] == "clean" and r["errors_after"] == 0, r
' "$BTK_OUT"
	same_as_orig
	btk_run 60 "$BTK_BUILD/bin/btk-undo" "$BATS_TEST_TMPDIR/u.undo" "${IMGS[@]}"
	[ "$status" = 0 ] || { show_err; return 1; }
	cmp "${IMGS[0]}" "$BATS_TEST_TMPDIR/damaged.img"
}

# cuts STEP WRITES: BTK_FAULT=stop:N for N = 0..WRITES+1 on copies of the damaged $IMGS
# (.damaged): each state opens, shows only bad copies, and a second run of STEP makes it the
# original; exactly WRITES of the states were short of it (one open of each device: the
# switch counts per handle)
cuts() {
	local step=$1 writes=$2 i n stopped=0
	for i in "${IMGS[@]}"; do cp --sparse=always "$i" "$i.damaged"; done
	for n in $(seq 0 $((writes + 1))); do
		for i in "${IMGS[@]}"; do cp --sparse=always "$i.damaged" "$i"; done
		BTK_FAULT=stop:$n btk_run 60 "$FSCK" --rescue $step --check-data-csum --no-undo "${IMGS[@]}"
		assert_no_crash
		btk_run 60 "$FSCK" --json "${IMGS[@]}"
		[ "$status" = 0 ] || [ "$status" = 4 ] || { show_err; echo "$step stop:$n: exit $status" >&2; return 1; }
		# nothing but bad copies (tree blocks, superblocks), never a damaged tree
		python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
bad = [e for e in r["errors"] if e["code"] not in ("E0608", "E0102", "E0103", "E0115")]
assert not bad, bad
' "$BTK_OUT" || { echo "$step stop:$n" >&2; return 1; }
		same_as_orig >/dev/null || stopped=$((stopped + 1))
		btk_run 60 "$FSCK" --rescue $step $([ $step = heal ] && echo --check-data-csum) --no-undo "${IMGS[@]}"
		[ "$status" = 0 ] || [ "$status" = 1 ] || { show_err; return 1; }
		same_as_orig || { echo "$step stop:$n: the second run did not heal it" >&2; return 1; }
	done
	[ "$stopped" = "$writes" ] || { echo "$step: $stopped cuts left something to heal, $writes expected" >&2; return 1; }
}

@test "rescue: power cut at every write of a heal and of a superblock rewrite: the filesystem opens, only bad copies are reported, a second run heals it" {
	require_btk fsck
	profile dup 1
	"$SMASH" tree 5 1 leaf "${IMGS[@]}" >/dev/null
	"$SMASH" tree 2 2 "${IMGS[@]}" >/dev/null
	"$SMASH" tree 3 1 "${IMGS[@]}" >/dev/null
	"$SMASH" data 2 "${IMGS[@]}" >/dev/null
	cuts heal 4
	profile dup 1
	"$SMASH" super 0 zero "${IMGS[@]}" >/dev/null
	cuts super 1
}

# has_log IMG: the primary superblock names a log tree
has_log() {
	"$BTK_BUILD/bin/btk-debug" super "$1" | awk '$1 == "log_root" { exit $2 == 0 }'
}

@test "replay-log: the corpus's logged compressed file is replayed, the log cleared, both checkers clean; a power cut at every write leaves the log or the replay" {
	require_btk fsck image
	corpus_copy 065-valid-log-tree__compressed
	cp --sparse=always "$CIMG" "$BATS_TEST_TMPDIR/orig.img"
	btk_run 60 "$FSCK" --rescue replay-log --json --no-undo "$CIMG"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = r["log_summary"]
assert r["result"] == "rescued" and s["cleared"] and s["inodes"] == 1 and s["extents"] == 1, r
assert s["names_added"] == 1 and s["unsummed_bytes"] == 0, s
' "$BTK_OUT"
	btk_run 60 "$FSCK" -q "$CIMG"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	if command -v btrfs >/dev/null; then
		btrfs check --readonly "$CIMG" >/dev/null 2>&1
		btrfs inspect-internal dump-super "$CIMG" | grep -Eq '^log_root[[:space:]]+0$'
	fi
	# the logged file reads back: what btk-image sees after the replay
	btk_run 60 "$BTK_BUILD/bin/btk-image" ls -l "$CIMG" /
	[ "$status" = 0 ]
	local replayed
	replayed=$(sha256_of "$CIMG")
	# no log left: a second run does nothing
	btk_run 60 "$FSCK" --rescue replay-log --no-undo "$CIMG"
	[ "$status" = 0 ] && grep -q "^log: none to replay$" "$BTK_OUT"
	# power cuts: the log whole (checkers as before) or the replayed filesystem
	local n old=0 new=0
	for n in $(seq 0 100); do
		cp --sparse=always "$BATS_TEST_TMPDIR/orig.img" "$CIMG"
		BTK_FAULT=stop:$n btk_run 60 "$FSCK" --rescue replay-log --no-undo "$CIMG"
		assert_no_crash
		btk_run 60 "$FSCK" -q "$CIMG"
		[ "$status" = 0 ] || { show_err; echo "cut at write $n: not clean" >&2; return 1; }
		if ! has_log "$CIMG"; then
			# replayed: the cut may have come between the superblock copies
			new=$((new + 1))
			btk_run 60 "$FSCK" --rescue super --no-undo "$CIMG"
			[ "$(sha256_of "$CIMG")" = "$replayed" ] || { echo "cut at write $n: not the replay" >&2; return 1; }
			[ $new -lt 2 ] || break
		else
			old=$((old + 1))
			btk_run 60 "$FSCK" --rescue replay-log --no-undo "$CIMG"
			[ "$status" = 1 ] || { show_err; echo "cut at write $n: the rerun" >&2; return 1; }
			[ "$(sha256_of "$CIMG")" = "$replayed" ] || { echo "cut at write $n: the rerun differs" >&2; return 1; }
		fi
	done
	echo "# $old cuts left the log, $new the replay" >&3
	[ $old -ge 3 ] && [ $new = 2 ]
}

@test "replay-log: a log whose data has no logged checksums: --repair replays it and sums that data, --rescue replay-log replays it with a note; --zero-log drops it" {
	require_btk fsck
	corpus_copy 063-log-missing-csum__default
	cp --sparse=always "$CIMG" "$BATS_TEST_TMPDIR/z.img"
	cp --sparse=always "$CIMG" "$BATS_TEST_TMPDIR/r.img"
	btk_run 60 "$FSCK" --repair --no-undo "$BATS_TEST_TMPDIR/r.img"
	[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -q "^FIXED: \[E1406 csum\] .*4096 of 4096 bytes without checksums -> checksums of the data as on disk" "$BTK_OUT"
	btk_run 60 "$FSCK" -q --check-data-csum "$BATS_TEST_TMPDIR/r.img"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	btk_run 60 "$FSCK" --rescue replay-log --no-undo "$CIMG"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -q "(some without logged checksums: unchecked); the log is cleared$" "$BTK_OUT"
	btk_run 60 "$FSCK" --zero-log --no-undo "$BATS_TEST_TMPDIR/z.img"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -q '^LOST: tree 5 inode 257: logged name ' "$BTK_OUT"
	grep -q "dropped unreplayed (3 item(s) in 1 subvolume(s)): what it held is lost$" "$BTK_OUT"
	btk_run 60 "$FSCK" -q "$BATS_TEST_TMPDIR/z.img"
	[ "$status" = 0 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
}

@test "rescue heal: a bit flipped in a tree block with no good copy (checksum field, first key, middle; single and both DUP copies, different bits) is set back: byte for byte, both checkers clean; two flipped bits are not guessed" {
	require_btk fsck
	require_tool btrfs
	local prof bit t
	for prof in single dup; do
		profile $prof 1
		for t in 5:leaf 5: 2: 7:; do
			for bit in 5 816 70000; do
				"$SMASH" flip ${t%:*} 1 $bit ${t#*:} "${IMGS[0]}" >/dev/null
				[ $prof = dup ] && "$SMASH" flip ${t%:*} 2 $((bit + 8)) ${t#*:} "${IMGS[0]}" >/dev/null
				btk_run 60 "$FSCK" -q "${IMGS[0]}"
				[ "$status" = 4 ] || { echo "$prof tree $t bit $bit: not detected" >&2; return 1; }
				btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[0]}"
				[ "$status" = 1 ] || { show_err; echo "$prof tree $t bit $bit: exit $status" >&2; return 1; }
				grep -Eq "^HEALED: tree ${t%:*} level [0-9] block [0-9]+ copy 1 of [12] \(devid 1 physical [0-9]+\): bit $bit \(byte $((bit / 8)), bit $((bit % 8))\) flipped: the checksum matches with it set back; written to every copy$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
				grep -q ', 1 set right by one flipped bit$' "$BTK_OUT"
				same_as_orig || { echo "$prof tree $t bit $bit: not as before" >&2; return 1; }
			done
		done
		btk_run 60 btrfs check --readonly "${IMGS[0]}"
		[ "$status" = 0 ]
	done
	# two bits: no single flip matches the checksum; nothing is written
	profile single 1
	"$SMASH" flip 5 1 70000,70001 leaf "${IMGS[0]}" >/dev/null
	cp --sparse=always "${IMGS[0]}" "$BATS_TEST_TMPDIR/two"
	btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[0]}"
	[ "$status" = 4 ] || { show_err; return 1; }
	grep -q '^NOT HEALED: tree 5 level 0 block [0-9]*: no good copy of 1: ' "$BTK_OUT"
	cmp "${IMGS[0]}" "$BATS_TEST_TMPDIR/two"
}

@test "rescue heal, repair: a bit flipped in the root tree's or the chunk tree's root block (single, both DUP copies) is set back, by --rescue heal and by --repair: byte for byte" {
	require_btk fsck
	require_tool btrfs
	local prof bit t how
	for prof in single dup; do
		profile $prof 1
		for t in 1 3; do
			for how in "--rescue heal" --repair; do
				bit=$((t == 1 ? 816 : 70000))
				"$SMASH" flip $t 1 $bit "${IMGS[0]}" >/dev/null
				[ $prof = dup ] && "$SMASH" flip $t 2 $((bit + 8)) "${IMGS[0]}" >/dev/null
				btk_run 60 "$FSCK" -q "${IMGS[0]}"
				[ "$status" != 0 ] || { echo "$prof tree $t: not detected" >&2; return 1; }
				btk_run 60 "$FSCK" $how --no-undo "${IMGS[0]}"
				[ "$status" = 1 ] || { show_err; cat "$BTK_OUT" >&2; echo "$prof tree $t $how: exit $status" >&2; return 1; }
				grep -Eq "^HEALED: tree $t level 0 block [0-9]+ copy 1 of [12] \(devid 1 physical [0-9]+\): bit $bit \(byte $((bit / 8)), bit $((bit % 8))\) flipped: the checksum matches with it set back; written to every copy$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
				! grep -q 'superblocks:' "$BTK_ERR"
				same_as_orig || { echo "$prof tree $t $how: not as before" >&2; return 1; }
			done
		done
		btk_run 60 btrfs check --readonly "${IMGS[0]}"
		[ "$status" = 0 ]
	done
}

@test "rescue heal: a power cut while a flipped bit is set back (an fs tree leaf, the chunk tree's root) leaves the block as it was or set right" {
	require_btk fsck
	local t n done=
	for t in 5:leaf 3:; do
		profile dup 1
		"$SMASH" flip ${t%:*} 1 70000 ${t#*:} "${IMGS[0]}" >/dev/null
		"$SMASH" flip ${t%:*} 2 70008 ${t#*:} "${IMGS[0]}" >/dev/null
		cp --sparse=always "${IMGS[0]}" "$BATS_TEST_TMPDIR/damaged"
		done=
		for n in $(seq 0 10); do
			cp --sparse=always "$BATS_TEST_TMPDIR/damaged" "${IMGS[0]}"
			BTK_FAULT=stop:$n btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[0]}"
			assert_no_crash
			same_as_orig && { done=$n; break; }
			# copy 1 written, copy 2 not yet: an ordinary bad copy; or nothing written
			btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[0]}"
			[ "$status" = 1 ] || { show_err; echo "stop:$n: the second run exits $status" >&2; return 1; }
			same_as_orig || { echo "tree $t stop:$n: not healed by a second run" >&2; return 1; }
		done
		[ -n "$done" ] && [ "$done" -ge 2 ]
	done
}

# Byte OFF of the root directory's inode item (the first item of FS_TREE's first leaf): 40 is
# its link count (the checker finds errors with a changed one), 112 its atime (no checker can
# tell which is right).
NLINK=40 ATIME=112

@test "rescue heal: a copy that validates but differs (an item changed, checksum right) loses to the copy the filesystem checks clean with, whichever copy it is (DUP, RAID1C3, RAID5's stored stripe against the rebuild); in a tie the copy read first is kept; a tie without it is left, nothing written" {
	require_btk fsck
	require_tool btrfs
	local prof n c
	for prof in dup:1:1 dup:1:2 raid1c3:3:1 raid1c3:3:3 raid5:3:1; do
		n=${prof#*:} c=${n#*:} n=${n%:*} prof=${prof%%:*}
		profile "$prof" "$n"
		"$SMASH" valid 5 "$c" 1 $NLINK leaf "${IMGS[@]}" >/dev/null
		btk_run 60 "$FSCK" -q "${IMGS[@]}"
		[ "$status" = 4 ] || { echo "$prof copy $c: not detected" >&2; return 1; }
		btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[@]}"
		[ "$status" = 1 ] || { show_err; echo "$prof copy $c: exit $status" >&2; return 1; }
		grep -Eq "^HEALED: tree 5 level 0 block [0-9]+ copy $c of [0-9] \(devid [0-9]+ physical [0-9]+\): valid but different: the checker finds [1-9][0-9]* error\(s\) with it, 0 with copy [0-9]; rewritten from copy [0-9]$" "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
		grep -q ", 1 bad copy rewritten, 0 without a good copy$" "$BTK_OUT"
		same_as_orig || { echo "$prof copy $c: not as before" >&2; return 1; }
		[ "$n" != 1 ] || btk_run 60 btrfs check --readonly "${IMGS[0]}" # one device only
		[ "$n" != 1 ] || [ "$status" = 0 ] || { show_err; return 1; }
	done
	# the same item changed on copies 1 and 3 of three: the two equal copies are not a majority
	profile raid1c3 3
	"$SMASH" valid 5 1 1 $NLINK leaf "${IMGS[@]}" >/dev/null
	"$SMASH" valid 5 3 1 $NLINK leaf "${IMGS[@]}" >/dev/null
	btk_run 60 "$FSCK" --repair --no-undo "${IMGS[@]}"
	[ "$status" = 1 ] || { show_err; return 1; }
	[ "$(grep -c '^HEALED: tree 5 level 0 block [0-9]* copy [13] of 3 .*: valid but different: .*; rewritten from copy 2$' "$BTK_OUT")" = 2 ]
	same_as_orig
	# the atime: both copies check clean, a tie: the copy read first (copy 1, the one the
	# kernel reads first) is kept and written over the other
	profile dup 1
	"$SMASH" valid 5 2 1 $ATIME leaf "${IMGS[0]}" >/dev/null
	btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[0]}"
	[ "$status" = 1 ] || { show_err; return 1; }
	grep -Eq '^HEALED: tree 5 level 0 block [0-9]+ copy 2 of 2 \(devid 1 physical [0-9]+\): valid but different: the checker finds 0 error\(s\) with it as with copy 1, the copy read first \(as the kernel reads it\); rewritten from copy 1$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	same_as_orig
	# a tie without the copy read first (copy 1 worse; copies 2 and 3 clean and different):
	# left, reported with every place, nothing written
	profile raid1c3 3
	"$SMASH" valid 5 1 1 $NLINK leaf "${IMGS[@]}" >/dev/null
	"$SMASH" valid 5 2 1 $ATIME leaf "${IMGS[@]}" >/dev/null
	local i
	for i in "${IMGS[@]}"; do cp --sparse=always "$i" "$i.tie"; done
	btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[@]}"
	[ "$status" = 4 ] || { show_err; cat "$BTK_OUT" >&2; return 1; }
	grep -Eq '^NOT HEALED: tree 5 level 0 block [0-9]+: copies valid and different, none judged better: copy 1 \(devid [0-9]+ physical [0-9]+\) [1-9][0-9]* error\(s\); copy 2 \(devid [0-9]+ physical [0-9]+\) 0 error\(s\); copy 3 \(devid [0-9]+ physical [0-9]+\) 0 error\(s\): a tie$' "$BTK_OUT" || { cat "$BTK_OUT" >&2; return 1; }
	grep -q ', 1 left with valid copies that differ$' "$BTK_OUT"
	for i in "${IMGS[@]}"; do cmp "$i" "$i.tie"; done
	btk_run 60 "$FSCK" --rescue heal --json --no-undo "${IMGS[@]}"
	[ "$status" = 4 ] || { show_err; return 1; }
	grep -q '"tree_blocks_disputed": 1' "$BTK_OUT"
	for i in "${IMGS[@]}"; do cmp "$i" "$i.tie"; done
}

@test "rescue heal: a power cut while valid but different copies are rewritten (two of three) leaves the old copies or the judged one, and a second run ends the same" {
	require_btk fsck
	local n writes=0
	profile raid1c3 3
	"$SMASH" valid 5 1 1 $NLINK leaf "${IMGS[@]}" >/dev/null
	"$SMASH" valid 5 3 1 $NLINK leaf "${IMGS[@]}" >/dev/null
	for i in "${IMGS[@]}"; do cp --sparse=always "$i" "$i.damaged"; done
	for n in 0 1 2 3; do
		for i in "${IMGS[@]}"; do cp --sparse=always "$i.damaged" "$i"; done
		BTK_FAULT=stop:$n btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[@]}"
		assert_no_crash
		same_as_orig >/dev/null 2>&1 || writes=$((writes + 1))
		btk_run 60 "$FSCK" --rescue heal --no-undo "${IMGS[@]}"
		[ "$status" = 0 ] || [ "$status" = 1 ] || { show_err; return 1; }
		same_as_orig || { echo "stop:$n: the second run did not heal it" >&2; return 1; }
	done
	[ "$writes" = 2 ] # cut before the first and before the second write; 2 and 3 let both through
}
