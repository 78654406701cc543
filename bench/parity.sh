#!/usr/bin/env bash
# bench/parity.sh — two builds of btk against each other, in one run: the same commands as
# mkfs.sh, rootdir.sh, fsck.sh, owner.sh and debug-tree.sh, each run alternately with the
# binaries of BTK_OLD and of BTK_BUILD, so that both see the same machine load and page cache.
# For a change that must not change speed (a refactoring): ratios new/old near 1.00.
#
# Usage: BTK_OLD=DIR [BTK_BUILD=build] bench/parity.sh [-r REPS] [-t LIST] [-c]
#   BTK_OLD    build folder of the old binaries (DIR/bin/btk-*), required
#   -r REPS    timed rounds per command after one warm-up of each (default 5)
#   -t LIST    comma-separated cases, default mkfs,rootdir,fsck,owner,debug; rootdir-big adds
#              the 200k-file tree of rootdir.sh
#   -c         also count instructions of one run of each with valgrind --tool=callgrind
#              (independent of the load; slow: about 50x)
# The images and trees are those of the other scripts (built by them, or here on first use).
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$(dirname "$0")/common.sh"

reps=5
cases=mkfs,rootdir,fsck,owner,debug
callgrind=0
while getopts "r:t:ch" opt; do
	case $opt in
	r) reps=$OPTARG ;;
	t) cases=$OPTARG ;;
	c) callgrind=1 ;;
	*)
		sed -n '2,13s/^# \{0,1\}//p' "$0"
		exit 2
		;;
	esac
done
OLD=${BTK_OLD:-}
[ -n "$OLD" ] || bench_die "set BTK_OLD to the old build folder"
case $OLD in /*) ;; *) OLD=$BENCH_ROOT/$OLD ;; esac
NEW=$BTK_BUILD
for t in mkfs fsck owner debug; do
	[ -x "$OLD/bin/btk-$t" ] || bench_die "$OLD/bin/btk-$t not built"
	[ -x "$NEW/bin/btk-$t" ] || bench_die "$NEW/bin/btk-$t not built"
done
[ "$callgrind" = 0 ] || command -v valgrind >/dev/null || bench_die "valgrind not installed"
IMAGES=${BENCH_TREES:-/tmp/btk-bench-images}
bench_init

has_case() { case ",$cases," in *",$1,"*) return 0 ;; esac; return 1; }

# instructions CMD... — instructions executed by the btk process of one run (callgrind's total
# Ir; a shell wrapper and its rm and truncate are followed but not counted)
instructions() {
	rm -rf "$BENCH_TMP/cg"
	mkdir -p "$BENCH_TMP/cg"
	valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$BENCH_TMP/cg/out.%p" "$@" >/dev/null 2>&1 || return 1
	awk '/^cmd:/ { btk = index($0, "btk-") > 0 } /^summary:/ && btk { n += $2 }
		END { print n + 0 }' "$BENCH_TMP"/cg/out.*
}

# pair NAME CMD-TEMPLATE... — times the command with @BIN@ replaced by the old and by the new
# binary's folder, alternately; prints the medians and the ratio new/old.
pair() {
	local name=$1 a b i
	shift
	local -a old=() new=()
	for a in "$@"; do
		old+=("${a//@BIN@/$OLD/bin}")
		new+=("${a//@BIN@/$NEW/bin}")
	done
	echo "== $name"
	bench_compare "$reps" "old" "${old[@]}" -- "new" "${new[@]}" || bench_die "$name failed"
	echo "ratio new/old: wall $(bench_ratio "${BC_WALL[1]}" "${BC_WALL[0]}")," \
		"cpu $(bench_ratio "${BC_CPU[1]}" "${BC_CPU[0]}")," \
		"peak RSS $(bench_ratio "${BC_RSS[1]}" "${BC_RSS[0]}")"
	if [ "$callgrind" = 1 ]; then
		a=$(instructions "${old[@]}") || bench_die "$name: callgrind failed (old)"
		b=$(instructions "${new[@]}") || bench_die "$name: callgrind failed (new)"
		i=$(bench_ratio "$b" "$a")
		echo "instructions: old $a, new $b, ratio new/old $i"
	fi
}

# a fresh sparse image file each run, as mkfs.sh and rootdir.sh do
fresh() {
	echo "rm -f $*; truncate -s \$SIZE $*"
}

if has_case mkfs; then
	T=$BENCH_TMP
	for c in "10G 1" "1T 1" "10G 4"; do
		read -r size n <<<"$c"
		imgs=""
		for ((i = 1; i <= n; i++)); do imgs+=" $T/d$i.img"; done
		pair "btk-mkfs $n x $size" bash -c "SIZE=$size; $(fresh "$imgs"); exec @BIN@/btk-mkfs -q -f $imgs"
	done
	rm -f "$T"/d*.img
fi

for t in rootdir rootdir-big; do
	has_case $t || continue
	if [ $t = rootdir ]; then name=20k; else name=200k; fi
	src=$IMAGES/rootdir-$name
	[ -d "$src" ] || bench_die "$src missing: run bench/rootdir.sh -B first"
	find "$src" -type f -print0 | xargs -0 cat >/dev/null 2>&1
	img=$BENCH_TMP/rootdir.img
	pair "btk-mkfs --rootdir ($name)" bash -c \
		"SIZE=8G; $(fresh "$img"); exec @BIN@/btk-mkfs -q -f --rootdir $src $img"
	rm -f "$img"
done

if has_case fsck; then
	img=$IMAGES/fsck.img
	bench_image "$img" 200000 2 4G
	pair "btk-fsck ($(cat "$img.params"))" @BIN@/btk-fsck "$img"
fi

if has_case owner; then
	img=$IMAGES/owner.img
	bench_image "$img" 100000 2 4G
	addrs=$BENCH_TMP/addrs
	bench_data_addrs "$img" 10000 >"$addrs" || bench_die "no data extents found"
	pair "btk-owner --logical -f (10000 addresses)" @BIN@/btk-owner --logical -f "$addrs" "$img"
	pair "btk-owner --logical --json -f" @BIN@/btk-owner --logical --json -f "$addrs" "$img"
	pair "btk-owner, one address" @BIN@/btk-owner --logical "$img" "$(head -n 1 "$addrs")"
fi

if has_case debug; then
	img=$IMAGES/debug-tree.img
	bench_image "$img" 200000 0 4G
	pair "btk-debug tree" @BIN@/btk-debug tree "$img"
	pair "btk-debug tree --json" @BIN@/btk-debug tree --json "$img"
fi
