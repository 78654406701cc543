# golden_lib.bash — what a golden checker case's `recipe` may call (tests/fsck_golden/README).
# A recipe runs in a shell of its own (bash -e, in its case's folder) with these set: IMG (the
# image to make), SRC (an empty source directory), BTK_BUILD, CORPUS_SRC (the corpus folder,
# or empty); it makes $IMG or fails (non-zero), or exits 77 to skip.

# A fixed epoch and uuid: btk-mkfs then makes the same image, byte for byte, on every run.
GOLDEN_EPOCH=1700000000
GOLDEN_UUID=6b2c5e4a-1d3f-4a5b-9c8d-7e6f5a4b3c2d

# std_src: the standard source tree in $SRC: 100 small files in d/ (inline extents), 20 at the
# top, a 300000-byte file (regular extents), all with one mtime. Run once; files may be added.
std_src() {
	[ -e "$SRC.std" ] && return 0
	mkdir -p "$SRC/d"
	local i
	for i in $(seq 1 100); do echo "file $i" >"$SRC/d/f$i"; done
	for i in $(seq 1 20); do echo "top $i" >"$SRC/t$i"; done
	yes "a line of a bigger file" | head -c 300000 >"$SRC/big"
	touch "$SRC.std"
}

# base [btk-mkfs options...]: $IMG, 256 MiB, made by btk-mkfs from $SRC (std_src unless the
# recipe filled it), reproducibly.
base() {
	std_src
	find "$SRC" -exec touch -h -d "@$GOLDEN_EPOCH" {} +
	rm -f "$IMG"
	truncate -s 256M "$IMG"
	SOURCE_DATE_EPOCH=$GOLDEN_EPOCH "$BTK_BUILD/bin/btk-mkfs" -q -f -U "$GOLDEN_UUID" \
		-r "$SRC" "$@" "$IMG" >/dev/null || {
		echo "btk-mkfs $* failed" >&2
		return 1
	}
}

# corrupt KIND...: changes $IMG with tests/lib/corrupt (see corrupt --list), one kind after
# another; a kind that finds nothing to change fails the case.
corrupt() {
	local k
	for k in "$@"; do
		CORRUPT_SEED=${CORRUPT_SEED:-1} "$BTK_BUILD/tests/corrupt" "$k" "$IMG" >/dev/null || {
			echo "corrupt $k failed" >&2
			return 1
		}
	done
}

# corpus NAME: $IMG is image NAME of ../shared/corpus/btrfs-progs-fsck (skips without it).
corpus() {
	local src=${CORPUS_SRC:-} xz size
	[ -n "$src" ] || {
		echo "corpus not found (../shared/corpus/btrfs-progs-fsck)"
		exit 77
	}
	xz=$src/$1.raw.xz
	size=$(awk -F'\t' -v n="$1" '$1 == n { print $4 }' "$src/MANIFEST.tsv")
	[ -f "$xz" ] && [ -n "$size" ] || {
		echo "corpus image $1 not found" >&2
		return 1
	}
	xz -dc "$xz" | cp --sparse=always /dev/stdin "$IMG"
	truncate -s "$size" "$IMG"
}
