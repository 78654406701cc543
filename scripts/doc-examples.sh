#!/usr/bin/env bash
# scripts/doc-examples.sh — extract the runnable examples of man pages and the README.
#
# Usage: scripts/doc-examples.sh OUTDIR FILE...
# Every block of a document carries a mark on the line right before it, so that no example
# escapes the test by being forgotten. The marks are comments: readers never see them.
#   runnable:      man page (roff)  .\" test-example[ root][: SETUP]
#                  markdown         <!-- test-example[ root][: SETUP] -->
#   not runnable:  man page (roff)  .\" no-test: REASON
#                  markdown         <!-- no-test: REASON -->
# A block is a .nf/.fi or .EX/.EE block (roff, any section) or a ``` fenced block (markdown).
# SETUP is a shell command that prepares what the example assumes (images, files) and runs
# first, in the same directory. "root": the example needs root (block devices such as
# /dev/sdb1, loop devices, mounts); the test runs it as root on loop devices that stand in for
# each /dev/sdX name, and skips it otherwise. REASON says why the block is not run: it is no
# command (an output or JSON format, a file layout), or it cannot run inside a test (make
# targets that build or install the tree; tests/bats/demo.bats runs make demo). A markdown
# ```console block needs no mark: its "$ " lines are the README session that
# tests/bats/docs_examples.bats runs line by line.
# For each runnable example N (001, 002, ... in file order) OUTDIR gets N.where (FILE:LINE),
# N.mode (plain or root), N.setup and N.sh (the block as a reader types it: roff escapes
# undone). OUTDIR/untested lists the blocks marked no-test, "FILE:LINE: REASON".
# Prints the number of runnable examples. An unmarked block, a no-test mark without a reason
# or a mark with no block after it is reported on stderr and the exit status is 1.
set -eu
out=$1
shift
mkdir -p "$out"
: >"$out/untested"
awk -v out="$out" '
function unroff(s) {
	gsub(/\\-/, "-", s); gsub(/\\\[aq\]|\\\(aq/, "\047", s); gsub(/\\\[dq\]|\\\(dq/, "\"", s)
	gsub(/\\f[BIRP]/, "", s); gsub(/\\&/, "", s); gsub(/\\e/, "\\", s)
	return s
}
function complain(msg) { print FILENAME ":" FNR ": " msg > "/dev/stderr"; bad = 1 }
# a mark whose block never came
function dangling() { if (pending) print markwhere ": mark without a block after it" > "/dev/stderr"; if (pending) bad = 1 }
function mark(s,   m) {
	dangling()
	n++
	f = sprintf("%s/%03d", out, n)
	mode = "plain"
	m = s
	sub(/^[^t]*test-example/, "", m)
	sub(/ *-->.*$/, "", m)
	if (m ~ /^ root/) { mode = "root"; sub(/^ root/, "", m) }
	setup = ""
	if (m ~ /^: /) setup = substr(m, 3)
	print FILENAME ":" FNR > (f ".where"); close(f ".where")
	print mode > (f ".mode"); close(f ".mode")
	print setup > (f ".setup"); close(f ".setup")
	printf "" > (f ".sh")
	pending = 1; skip = 0; markwhere = FILENAME ":" FNR
}
function notest(s,   r) {
	dangling()
	r = s
	sub(/^[^n]*no-test:? */, "", r)
	sub(/ *-->.*$/, "", r)
	if (r == "") complain("no-test mark without a reason")
	print FILENAME ":" FNR ": " r >> (out "/untested")
	pending = 1; skip = 1; markwhere = FILENAME ":" FNR
}
# a block starts: the mark before it says what to do with it
function start(kind) {
	inblk = 1
	cur = ""
	if (pending && !skip) cur = f ".sh"
	else if (!pending && kind != "console")
		complain("block not marked (" (md ? "<!-- test-example -->, <!-- no-test: REASON -->" : ".\\\" test-example, .\\\" no-test: REASON") ")")
	pending = 0
}
FNR == 1 { dangling(); md = FILENAME ~ /\.md$/; pending = 0; inblk = 0 }
!md && !inblk && /^\.\\" test-example/ { mark($0); next }
md && !inblk && /^<!-- test-example/ { mark($0); next }
!md && !inblk && /^\.\\" no-test/ { notest($0); next }
md && !inblk && /^<!-- no-test/ { notest($0); next }
!md && !inblk && /^\.(nf|EX)$/ { start("roff"); next }
md && !inblk && /^```/ { start($0 ~ /^```console/ ? "console" : "fence"); next }
!md && inblk && /^\.(fi|EE)$/ { inblk = 0; if (cur != "") close(cur); next }
md && inblk && /^```$/ { inblk = 0; if (cur != "") close(cur); next }
inblk && cur != "" { print (md ? $0 : unroff($0)) >> cur; next }
# anything but blank lines between a mark and its block: the mark is lost
pending && !inblk && !/^[ \t]*$/ { dangling(); pending = 0 }
END { dangling(); print n + 0; exit bad }
' "$@"
