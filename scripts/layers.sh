#!/usr/bin/env bash
# make layers: fails when a libcore folder calls or includes a folder of its own rank or above,
# when anything outside a folder includes its private headers (*_int.h, *_priv.h), when a
# .c file sits directly in libcore/, or when HACKING.md's table or a header's first line
# "(layer N)" disagrees with the rank table below. Calls come from the object files' symbols (nm), so a call
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
7 history
8 relocate
8 decode
8 edit
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

# The rank table above is the one source of the numbering: every header's first line names
# its folder's rank as "(layer N)" (a .c file's first line may too, and must agree), and
# HACKING.md's table lists every ranked folder at its rank.
awk -v ranks="$ranks" '
	BEGIN {
		n = split(ranks, line, "\n")
		for (i = 1; i <= n; i++) { split(line[i], f, " "); rank[f[2]] = f[1] }
	}
	FILENAME == "HACKING.md" {
		if ($0 !~ /^\| *[0-9]+ *\|/) next
		split($0, col, "|"); r = col[2]; gsub(/ /, "", r); rest = col[3]
		while (match(rest, /libcore\/[a-z0-9_]+\//)) {
			d = substr(rest, RSTART + 8, RLENGTH - 9); rest = substr(rest, RSTART + RLENGTH)
			listed[d] = 1
			if (!(d in rank))
				printf "layers: HACKING.md ranks libcore/%s (%s), scripts/layers.sh does not\n", d, r
			else if (rank[d] != r)
				printf "layers: HACKING.md ranks libcore/%s %s, scripts/layers.sh %s\n", d, r, rank[d]
			if (!(d in rank) || rank[d] != r) bad = 1
		}
		next
	}
	FNR == 1 {
		d = FILENAME; sub("^libcore/", "", d); sub("/.*", "", d)
		if (!(d in rank)) next
		if (match($0, /\(layer [^),]*[),]/)) {
			n = substr($0, RSTART + 7, RLENGTH - 8)
			if (n != rank[d]) {
				printf "layers: %s: first line says layer %s, libcore/%s has rank %s\n",
					FILENAME, n, d, rank[d]
				bad = 1
			}
		} else if (FILENAME ~ /\.h$/) {
			printf "layers: %s: first line does not name its layer \"(layer %s)\"\n",
				FILENAME, rank[d]
			bad = 1
		}
	}
	END {
		for (d in rank)
			if (!(d in listed)) {
				printf "layers: HACKING.md: no row ranks libcore/%s (rank %s)\n", d, rank[d]
				bad = 1
			}
		exit bad
	}' libcore/*/*.[ch] HACKING.md || fail=1

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
	# only objects whose source still exists (a moved file leaves a stale .o in a build dir)
	objs=()
	for o in "$B"/libcore/*/*.o; do
		src=${o#"$B"/}
		[ -f "${src%.o}.c" ] && objs+=("$o")
	done
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
