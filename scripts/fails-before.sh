#!/bin/bash
# fails-before.sh COMMIT TEST [FILTER] [FILE...] — shows that a fix's test fails without the fix:
# builds COMMIT^ with the test files of COMMIT (and any FILE... from COMMIT, e.g. a test helper)
# in a scratch worktree, runs TEST, then the same at COMMIT. TEST is a unit test name
# (test_compress) or a bats file (tests/bats/x.bats, FILTER: a bats -f pattern, '' for all).
# Prints each run's result lines; the scratch worktree is removed at the end.
set -u
[ $# -ge 2 ] || {
	sed -n '2,6p' "$0"
	exit 2
}
c=$1 t=$2 flt=${3:-}
shift $(($# >= 3 ? 3 : 2))
root=$(git rev-parse --show-toplevel) || exit 2
# a hash, not a name: HEAD or a branch would move with the checkouts in the scratch worktree
h=$(git -C "$root" rev-parse --verify --quiet "$c^{commit}") || {
	echo "$c: not a commit" >&2
	exit 2
}
c=$h
w=$(mktemp -d)/tree
trap 'git -C "$root" worktree remove --force "$w" >/dev/null 2>&1; rm -rf "$(dirname "$w")"' EXIT
git -C "$root" worktree add -q --detach "$w" "$c" || exit 2
cd "$w" || exit 2
case $t in
*.bats) files=("$t") ;;
*) mapfile -t files < <(git show --format= --name-only "$c" -- "tests/unit/*/$t.c") ;;
esac
[ ${#files[@]} -gt 0 ] || {
	echo "$c does not touch a test named $t" >&2
	exit 2
}
for rev in "$c^" "$c"; do
	git checkout -q -f --detach "$rev" && git checkout -q "$c" -- "${files[@]}" "$@" || exit 2
	echo "== $t at $(git rev-parse --short HEAD) ($rev)"
	if [[ $t == *.bats ]]; then
		# the tools and the test helpers (tests/lib: corrupt, smash, ...) the bats files run
		helpers=$(for f in tests/lib/*.c; do f=${f##*/}; echo "build/tests/${f%.c}"; done)
		# shellcheck disable=SC2086
		nice make -j2 B=build all $helpers >build.log 2>&1 || { tail -5 build.log; continue; }
		BTK_BUILD=build nice bats -f "$flt" "$t" >bats.log 2>&1
		rc=$?
		grep -E '^(not )?ok|failed$' bats.log
		# a filter that matches no test proves nothing: say so rather than "exit 0"
		grep -qE '^(not )?ok' bats.log || echo "no test of $t matches '$flt'"
		echo "exit $rc"
		continue
	else
		nice make -j2 B=build "build/tests/$t" >build.log 2>&1 || { tail -5 build.log; continue; }
		nice "build/tests/$t" 2>&1 | grep -E 'FAILED|PASSED|LINE|ERROR'
	fi
	echo "exit ${PIPESTATUS[0]}"
done
