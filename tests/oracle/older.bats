#!/usr/bin/env bats
# Older generations of a kernel-made image (older_mkhist.sh: seven commits that create, delete,
# rename and overwrite files, create a subvolume and its snapshot, delete the subvolume):
# btk-image roots finds every root btrfs-find-root -a finds; ls --deleted lists exactly the
# deleted names; get --generation gives their content byte for byte, or says "reused" where a
# newer file's extent lies on theirs; diff equals each step's change list.

load ../bats/helpers

setup_file() {
	[ "$(id -u)" = 0 ] && [ -e /dev/loop-control ] && command -v mkfs.btrfs >/dev/null || return 0
	H=$BTK_TEST_TMP/older-hist
	rm -rf "$H" && mkdir -p "$H"
	"$BTK_ROOT/tests/oracle/older_mkhist.sh" "$H"
}

setup() {
	require_loop
	require_btk image
	require_tool btrfs-find-root
	H=$BTK_TEST_TMP/older-hist
	[ -f "$H/h.img" ] || skip "the history image was not made"
	IMG=$BTK_BUILD/bin/btk-image
	mapfile -t G <"$H/gens"
	[ "${#G[@]}" -eq 7 ]
}

@test "roots finds every root tree and FS_TREE root btrfs-find-root -a finds" {
	btk_run 120 "$IMG" roots --json "$H/h.img"
	[ "$status" -eq 0 ]
	for o in 1 5; do
		btrfs-find-root -o $o -a "$H/h.img" 2>&1 |
			sed -n 's/.*block \([0-9]*\)(gen: \([0-9]*\) level: \([0-9]*\)).*/\1 \2 \3/p; s/^Found tree root at \([0-9]*\) gen \([0-9]*\) level \([0-9]*\)$/\1 \2 \3/p' |
			sort -u >"$BATS_TEST_TMPDIR/progs.$o"
		[ -s "$BATS_TEST_TMPDIR/progs.$o" ]
		jq -r --argjson o $o '.roots[] | select(.tree == $o) | "\(.bytenr) \(.generation) \(.level)"' \
			"$BTK_OUT" | sort -u >"$BATS_TEST_TMPDIR/btk.$o"
		missing=$(comm -23 "$BATS_TEST_TMPDIR/progs.$o" "$BATS_TEST_TMPDIR/btk.$o")
		[ -z "$missing" ] || { echo "tree $o: btk-image roots misses: $missing" >&2; false; }
	done
	# every step's root tree is still there on this small image: one that its commit kept
	for g in "${G[@]}"; do
		jq -e --argjson g "$g" \
			'[.roots[] | select(.tree == 1 and .generation == $g and (.superseded | not))] | length == 1' \
			"$BTK_OUT"
	done
	# the root trees the superblock and its backup roots name are the committed ones, listed
	# first of their generation
	btrfs inspect-internal dump-super -f "$H/h.img" |
		awk '$1 == "root" { print $2, g } $1 == "generation" && !g { g = $2 }
		     $1 == "backup_tree_root:" { print $2, $4 }' >"$BATS_TEST_TMPDIR/commits"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/commits")" -ge 4 ]
	while read -r b g; do
		[ "$(jq -r --argjson g "$g" '[.roots[] | select(.tree == 1 and .generation == $g)][0] |
			"\(.bytenr) \(.superseded)"' "$BTK_OUT")" = "$b false" ] ||
			{ echo "generation $g: committed root tree $b not first" >&2; false; }
	done <"$BATS_TEST_TMPDIR/commits"
	# a subvolume tree's root of a generation: the one that generation's committed root tree
	# names (btrfs dump-tree of it) is listed first and not superseded
	n=0
	for rt in $(jq -r '.roots[] | select(.tree == 1 and (.superseded | not)) | .bytenr' "$BTK_OUT"); do
		btrfs inspect-internal dump-tree -b "$rt" "$H/h.img" |
			awk '$1 == "item" && $3 == "key" && $4 ~ /^\((FS_TREE|[0-9]+)$/ && $5 == "ROOT_ITEM" { t = $4; sub(/\(/, "", t); getline; print t, $6, $2 }'
	done | sed 's/^FS_TREE /5 /' | sort -u >"$BATS_TEST_TMPDIR/named"
	while read -r t b g; do
		got=$(jq -r --argjson t "$t" --argjson g "$g" \
			'[.roots[] | select(.tree == $t and .generation == $g)][0] | "\(.bytenr) \(.superseded)"' "$BTK_OUT")
		[ "$got" = "$b false" ] || { echo "tree $t generation $g: $b named, btk lists first $got" >&2; false; }
		n=$((n + 1))
	done <"$BATS_TEST_TMPDIR/named"
	[ "$n" -ge 7 ]
}

@test "ls --deleted lists exactly the deleted names, with the newest generation that has each" {
	btk_run 120 "$IMG" ls --deleted --json "$H/h.img"
	[ "$status" -eq 0 ]
	got=$(jq -r '.entries[].path' "$BTK_OUT" | sort | tr '\n' ' ')
	want=$(awk '$2 == "deleted" { print $3 }' "$H/changes" | sort | tr '\n' ' ')
	[ "$got" = "$want" ]
	# /a/f1 went in step 2: the newest generation holding it is step 1's
	[ "$(jq -r '.entries[] | select(.path == "/a/f1") | .generation' "$BTK_OUT")" = "${G[0]}" ]
	[ "$(jq -r '.entries[] | select(.path == "/a/f3") | .generation' "$BTK_OUT")" = "${G[2]}" ]
	[ "$(jq -r '.entries[] | select(.path == "/a/f3") | .size' "$BTK_OUT")" = 210000 ]
	btk_run 120 "$IMG" ls --deleted "$H/h.img" /a/b
	[ "$status" -eq 0 ]
	[ "$(cat "$BTK_OUT")" = "$(printf '/a/b\n/a/b/tiny')" ]
}

# the disk ranges of a file's extents at a root ("START END" lines)
ranges() {
	"$IMG" stat --json "$@" 2>/dev/null |
		jq -r '.extents[] | select(.disk_bytenr > 0) | "\(.disk_bytenr) \(.disk_bytenr + .disk_bytes)"'
}

@test "get --generation and --deleted: deleted files byte for byte, or 'reused' where a newer extent lies on theirs" {
	# what the current files' extents cover
	"$IMG" ls -R --json "$H/h.img" | jq -r '.entries[] | select(.type == "file") | .path' \
		>"$BATS_TEST_TMPDIR/files"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/files")" -ge 10 ]
	while read -r f; do ranges "$H/h.img" "$f"; done <"$BATS_TEST_TMPDIR/files" \
		>"$BATS_TEST_TMPDIR/now"
	identical=0 reuses=0
	for f in /a/f1:0 /a/f3:2 /a/b/tiny:0; do
		p=${f%:*} g=${G[${f#*:}]}
		reused=no
		while read -r s e; do
			if awk -v s="$s" -v e="$e" '$1 < e && s < $2 { f = 1 } END { exit !f }' \
				"$BATS_TEST_TMPDIR/now"; then reused=yes; fi
		done < <(ranges --generation "$g" "$H/h.img" "$p")
		rm -rf "$BATS_TEST_TMPDIR/out" && mkdir "$BATS_TEST_TMPDIR/out"
		btk_run 120 "$IMG" get --generation "$g" "$H/h.img" "$p" "$BATS_TEST_TMPDIR/out/x"
		if [ $reused = yes ]; then
			[ "$status" -eq 1 ]
			grep -q "data of $p at generation $g was reused since" "$BTK_ERR"
			reuses=$((reuses + 1))
		else
			[ "$status" -eq 0 ] || { show_err; false; }
			cmp "$BATS_TEST_TMPDIR/out/x" "$H/orig$p"
			identical=$((identical + 1))
		fi
	done
	# older_mkhist.sh's small files land on /a/f1's old extent; /a/f3's stays free
	[ "$identical" -ge 1 ] && [ "$reuses" -ge 1 ]
	# --deleted finds the generation by itself
	rm -rf "$BATS_TEST_TMPDIR/out" && mkdir "$BATS_TEST_TMPDIR/out"
	btk_run 120 "$IMG" get --deleted "$H/h.img" /a/b/tiny "$BATS_TEST_TMPDIR/out/t"
	[ "$status" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/out/t" "$H/orig/a/b/tiny"
}

@test "diff between each two steps equals the change list the steps made" {
	for s in 2 3 4 5 6 7; do
		btk_run 120 "$IMG" diff --json --from "${G[$((s - 2))]}" --to "${G[$((s - 1))]}" "$H/h.img"
		[ "$status" -eq 0 ]
		got=$(jq -r '.changes[] | "\(.change) \(.path)\(if .new_path then " -> " + .new_path else "" end)"' \
			"$BTK_OUT" | sort)
		want=$(awk -v s=$s '$1 == s { $1 = ""; sub(/^ /, ""); print }' "$H/changes" | sort)
		[ "$got" = "$want" ] || { echo "step $s: got [$got] want [$want]" >&2; false; }
	done
}

@test "a deleted subvolume: its names are deleted under its old path, their data kept by the snapshot and read back" {
	btk_run 120 "$IMG" ls --deleted --json "$H/h.img" /sv
	[ "$status" -eq 0 ]
	[ "$(jq -r '.entries[].path' "$BTK_OUT" | sort | tr '\n' ' ')" = "/sv /sv/d /sv/d/s2 /sv/s1 " ]
	# /snap/s1 shares the extent: not reused, kept
	[ "$(jq -r '.entries[] | select(.path == "/sv/s1") | .data' "$BTK_OUT")" = kept ]
	[ "$(jq -r '.entries[] | select(.path == "/sv/s1") | .generation' "$BTK_OUT")" = "${G[5]}" ]
	btk_run 120 "$IMG" get --deleted "$H/h.img" /sv/s1 "$BATS_TEST_TMPDIR/s1"
	[ "$status" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/s1" "$H/orig/sv/s1"
	btk_run 120 "$IMG" get -r --generation "${G[5]}" "$H/h.img" /sv "$BATS_TEST_TMPDIR/sv"
	[ "$status" -eq 0 ]
	diff -r "$BATS_TEST_TMPDIR/sv" "$H/orig/sv"
	# the snapshot lives on with the same content
	btk_run 120 "$IMG" get -r "$H/h.img" /snap "$BATS_TEST_TMPDIR/snap"
	[ "$status" -eq 0 ]
	diff -r "$BATS_TEST_TMPDIR/snap" "$H/orig/sv"
}
