#!/usr/bin/env bats
# Golden checker cases (tests/fsck_golden/*/, see its README): each case's recipe makes an
# image; btk-fsck's whole output on it must be expect.out (the image path written IMG), its
# problem codes expect.codes, its exit 4 when the output has an error and 0 otherwise (or what
# expect.exit says: 8 when the check could not run, e.g. an unreadable root tree); and
# `btrfs check --readonly` must agree on error or clean (unless the case's
# btrfs-check-disagrees file says why not, which must then still hold). No mounts.
# Optional per case: `args` (btk-fsck options), `btrfs-args` (btrfs check options),
# `expect.json` (btk-fsck --json's output, compared too).
#
# BTK_GOLDEN=NAME runs that case only; BTK_GOLDEN_UPDATE=1 (re)writes expect.out and
# expect.codes from what btk-fsck prints (read the diff before committing it).

load helpers

FSCK=$BTK_BUILD/bin/btk-fsck
GOLDEN=$BTK_ROOT/tests/fsck_golden

# the codes of an output, one per problem kind, in code order: "E1111 nlink"
codes_of() {
	sed -n 's/^\(ERROR\|WARNING\): \[\(E[0-9]*\) \([^]]*\)\].*/\2 \3/p' "$1" | sort -u
}

# golden_case NAME: builds, checks and compares case NAME; says why on stderr and fails
golden_case() {
	local name=$1 dir=$GOLDEN/$1 work=$BATS_TEST_TMPDIR/$1 rc=0 brc=0 want=0
	mkdir -p "$work/src"
	# a process of its own, so that set -e holds in it
	IMG=$work/img SRC=$work/src CORPUS_SRC=$(corpus_src || true) BTK_BUILD=$BTK_BUILD \
		bash -ec 'cd "$1" && . "$2" && . ./recipe' _ "$dir" "$GOLDEN/golden_lib.bash" \
		>"$work/recipe.log" 2>&1 || rc=$?
	if [ "$rc" = 77 ]; then
		echo "# $name: skipped ($(tail -1 "$work/recipe.log"))" >&3
		return 0
	fi
	[ "$rc" = 0 ] || {
		echo "$name: recipe failed ($rc): $(tail -3 "$work/recipe.log")" >&2
		return 1
	}
	local args=()
	[ -f "$dir/args" ] && read -r -a args <"$dir/args"
	btk_run 60 "$FSCK" "${args[@]}" "$work/img"
	assert_no_crash || return 1
	cat "$BTK_OUT" "$BTK_ERR" | sed "s|$work/img|IMG|g" >"$work/out"
	codes_of "$work/out" >"$work/codes"
	if [ -n "${BTK_GOLDEN_UPDATE:-}" ]; then
		cp "$work/out" "$dir/expect.out"
		cp "$work/codes" "$dir/expect.codes"
		rm -f "$dir/expect.exit"
		local usual=0
		grep -q '^ERROR: \[' "$work/out" && usual=4
		[ "$status" = $usual ] || echo "$status" >"$dir/expect.exit"
	fi
	# --json too, for a case that has expect.json
	if [ -f "$dir/expect.json" ]; then
		btk_run 60 "$FSCK" --json "${args[@]}" "$work/img"
		assert_no_crash || return 1
		cat "$BTK_OUT" "$BTK_ERR" | sed "s|$work/img|IMG|g" >"$work/json"
		[ -z "${BTK_GOLDEN_UPDATE:-}" ] || cp "$work/json" "$dir/expect.json"
		diff -u "$dir/expect.json" "$work/json" >&2 || {
			echo "$name: --json output differs (above)" >&2
			return 1
		}
		btk_run 60 "$FSCK" "${args[@]}" "$work/img" # $status of the text run again
	fi
	grep -q '^ERROR: \[' "$work/out" && want=4
	[ -f "$dir/expect.exit" ] && read -r want <"$dir/expect.exit"
	local bad=0
	diff -u "$dir/expect.codes" "$work/codes" >&2 || {
		echo "$name: problem codes differ (above)" >&2
		bad=1
	}
	diff -u "$dir/expect.out" "$work/out" >&2 || {
		echo "$name: output differs (above)" >&2
		bad=1
	}
	[ "$status" = "$want" ] || {
		echo "$name: btk-fsck exit $status, wanted $want" >&2
		bad=1
	}
	local bargs=()
	[ -f "$dir/btrfs-args" ] && read -r -a bargs <"$dir/btrfs-args"
	timeout 120 btrfs check --readonly "${bargs[@]}" "$work/img" >"$work/btrfs.out" 2>&1 ||
		brc=$?
	local agree=1
	[ $((brc != 0)) = $((want != 0)) ] || agree=0
	if [ -f "$dir/btrfs-check-disagrees" ]; then
		[ $agree = 0 ] || {
			echo "$name: btrfs check now agrees (exit $brc): drop btrfs-check-disagrees" >&2
			bad=1
		}
	elif [ $agree = 0 ]; then
		echo "$name: btrfs check exit $brc, btk-fsck $status" >&2
		tail -5 "$work/btrfs.out" >&2
		bad=1
	fi
	rm -f "$work/img"
	[ $bad = 0 ] && echo "# $name: $(wc -l <"$work/codes") code(s), btrfs check exit $brc" >&3
	return $bad
}

@test "golden checker cases: output, codes and exit as expected; btrfs check agrees" {
	require_btk fsck
	require_btk mkfs
	require_tool btrfs
	[ -x "$BTK_BUILD/tests/corrupt" ] || {
		echo "corrupt helper not built" >&2
		return 1
	}
	local d name n=0 failed=()
	for d in "$GOLDEN"/*/; do
		name=$(basename "$d")
		[ -z "${BTK_GOLDEN:-}" ] || [ "$name" = "$BTK_GOLDEN" ] || continue
		n=$((n + 1))
		golden_case "$name" || failed+=("$name")
	done
	echo "# $n case(s), ${#failed[@]} failed" >&3
	[ "$n" -gt 0 ]
	[ "${#failed[@]}" = 0 ] || {
		echo "failed: ${failed[*]}" >&2
		return 1
	}
}

@test "golden checker cases: every case has a recipe, expect.codes and expect.out" {
	local d bad=0
	for d in "$GOLDEN"/*/; do
		for f in recipe expect.codes expect.out; do
			[ -f "$d/$f" ] || {
				echo "$d: no $f" >&2
				bad=1
			}
		done
	done
	[ $bad = 0 ]
}
