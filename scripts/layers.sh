#!/usr/bin/env bash
# make layers: fails when a libcore folder calls or includes a folder of its own rank or above,
# when anything outside a folder includes its private headers (*_int.h, *_priv.h), or when a
# .c file sits directly in libcore/. Calls come from the object files' symbols (nm), so a call
# through a header that was not included is seen too. Usage: layers.sh BUILD_DIR
set -u
B=${1:-build}
cd "$(dirname "$0")/.."

# rank folder: a folder may use only folders of a lower rank (and itself). HACKING.md says
# what each holds.
ranks="0 format
1 base
2 io
3 volumes
4 tree
5 trans
6 fs
7 backref
8 relocate
8 decode
9 check
9 image
10 repair"

rank_of() { awk -v d="$1" '$2 == d { print $1 }' <<<"$ranks"; }
fail=0
say() { printf 'layers: %s\n' "$*"; fail=1; }

for f in libcore/*.c; do [ -e "$f" ] && say "$f: every .c file belongs in a layer folder"; done
for d in libcore/*/; do
	d=${d%/}; d=${d#libcore/}
	[ -n "$(rank_of "$d")" ] || say "libcore/$d: folder has no rank in scripts/layers.sh"
done

# Includes: "folder/header.h" names the folder it comes from.
while IFS=: read -r file _ inc; do
	from=${file#libcore/}; from=${from%%/*}
	to=${inc#*\"}; to=${to%%/*}
	[ "$from" = "$to" ] && continue
	hdr=${inc#*/}; hdr=${hdr%\"*}
	case "$hdr" in *_int.h | *_priv.h) say "$file includes $to/$hdr, private to libcore/$to" ;; esac
	rf=$(rank_of "$from"); rt=$(rank_of "$to")
	[ -z "$rt" ] && continue
	[ "$rt" -ge "$rf" ] && say "$file (libcore/$from, rank $rf) includes $to/$hdr (rank $rt)"
done < <(grep -Hn '^#include "[a-z0-9_]*/' libcore/*/*.[ch] 2>/dev/null)

# Tools, cli and tests reach libcore through public headers only.
while IFS=: read -r file _ inc; do
	case "$file" in tests/*) continue ;; esac
	say "$file includes private ${inc#*\"}"
done < <(grep -Hn '^#include "[a-z0-9_]*/[a-z0-9_]*_\(int\|priv\)\.h"' $(ls -d */ | grep -v '^libcore/\|^tests/\|^build') 2>/dev/null)

# Symbols: every undefined symbol of a layer's object must be defined in a lower layer.
if [ -d "$B/libcore" ]; then
	defs=$(for o in "$B"/libcore/*/*.o; do
		l=${o#"$B"/libcore/}; l=${l%%/*}
		nm --defined-only -g "$o" | awk -v l="$l" '{ print $3, l }'
	done)
	while read -r o; do
		l=${o#"$B"/libcore/}; l=${l%%/*}
		rl=$(rank_of "$l")
		for s in $(nm -u "$o" | awk '{ print $2 }'); do
			t=$(awk -v s="$s" '$1 == s { print $2; exit }' <<<"$defs")
			[ -z "$t" ] || [ "$t" = "$l" ] && continue
			rt=$(rank_of "$t")
			[ "$rt" -ge "$rl" ] && say "${o#"$B"/} (libcore/$l, rank $rl) calls $s from libcore/$t (rank $rt)"
		done
	done < <(ls "$B"/libcore/*/*.o)
else
	say "$B/libcore: not built (run make first)"
fi
[ $fail = 0 ] && echo "layers: ok"
exit $fail
