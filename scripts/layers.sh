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
7 create
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
grep -Hn '^#include "[a-z0-9_]*/' libcore/*/*.[ch] 2>/dev/null | awk -v ranks="$ranks" '
	BEGIN {
		n = split(ranks, line, "\n")
		for (i = 1; i <= n; i++) { split(line[i], f, " "); rank[f[2]] = f[1] }
	}
	{
		file = substr($0, 1, index($0, ":") - 1)
		from = file; sub("^libcore/", "", from); sub("/.*", "", from)
		inc = substr($0, index($0, "\"") + 1); sub("\".*", "", inc)
		to = inc; sub("/.*", "", to); hdr = inc; sub("^[^/]*/", "", hdr)
		if (from == to) next
		if (hdr ~ /_(int|priv)\.h$/) {
			printf "layers: %s includes %s/%s, private to libcore/%s\n", file, to, hdr, to
			bad = 1
		}
		if (!(to in rank) || rank[to] < rank[from]) next
		printf "layers: %s (libcore/%s, rank %s) includes %s/%s (rank %s)\n", file, from,
			rank[from], to, hdr, rank[to]
		bad = 1
	}
	END { exit bad }' || fail=1

# Tools, cli and tests reach libcore through public headers only.
while IFS=: read -r file _ inc; do
	case "$file" in tests/*) continue ;; esac
	say "$file includes private ${inc#*\"}"
done < <(grep -Hn '^#include "[a-z0-9_]*/[a-z0-9_]*_\(int\|priv\)\.h"' $(ls -d */ | grep -v '^libcore/\|^tests/\|^build') 2>/dev/null)

# Symbols: every undefined symbol of a layer's object must be defined in a lower layer. One
# nm and one awk over all objects (a process per symbol took a minute).
if [ -d "$B/libcore" ]; then
	objs=("$B"/libcore/*/*.o)
	{
		nm -A --defined-only -g "${objs[@]}" | sed 's/^/D /'
		nm -A -u "${objs[@]}" | sed 's/^/U /'
	} | awk -v B="$B/libcore/" -v ranks="$ranks" '
		BEGIN {
			n = split(ranks, line, "\n")
			for (i = 1; i <= n; i++) { split(line[i], f, " "); rank[f[2]] = f[1] }
		}
		{
			obj = substr($2, 1, index($2, ":") - 1); sym = $NF
			l = substr(obj, length(B) + 1); sub("/.*", "", l)
		}
		$1 == "D" { if (!(sym in def)) def[sym] = l; next }
		{
			t = def[sym]
			if (t == "" || t == l || rank[t] < rank[l]) next
			printf "layers: %s (libcore/%s, rank %s) calls %s from libcore/%s (rank %s)\n",
				substr(obj, length(B) - 7), l, rank[l], sym, t, rank[t]
			bad = 1
		}
		END { exit bad }' || fail=1
else
	say "$B/libcore: not built (run make first)"
fi
[ $fail = 0 ] && echo "layers: ok"
exit $fail
