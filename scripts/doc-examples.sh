#!/usr/bin/env bash
# scripts/doc-examples.sh — extract the runnable examples of man pages and the README.
#
# Usage: scripts/doc-examples.sh OUTDIR FILE...
# A runnable example is a block right after a mark:
#   man page (roff):  .\" test-example[ root][: SETUP]      then a .nf/.fi or .EX/.EE block
#   markdown:         <!-- test-example[ root][: SETUP] -->  then a ```sh fenced block
# The mark is a comment: readers never see it. SETUP is a shell command that prepares what the
# example assumes (images, files) and runs first, in the same directory. "root": the example
# needs root (block devices such as /dev/sdb1, loop devices, mounts); the test runs it as root
# on loop devices that stand in for each /dev/sdX name, and skips it otherwise.
# For each example N (001, 002, ... in file order) OUTDIR gets N.where (FILE:LINE), N.mode
# (plain or root), N.setup and N.sh (the block as a reader types it: roff escapes undone).
# Prints the number of examples. Every example block of an EXAMPLES section of a man page must
# be marked, so that none escapes the test: an unmarked one is reported and the exit status is 1.
set -eu
out=$1
shift
mkdir -p "$out"
awk -v out="$out" '
function unroff(s) {
	gsub(/\\-/, "-", s); gsub(/\\\[aq\]|\\\(aq/, "\047", s); gsub(/\\\[dq\]|\\\(dq/, "\"", s)
	gsub(/\\f[BIRP]/, "", s); gsub(/\\&/, "", s); gsub(/\\e/, "\\", s)
	return s
}
function mark(s,   m) {
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
	pending = 1
}
FNR == 1 { md = FILENAME ~ /\.md$/; section = ""; pending = 0; inblk = 0 }
!md && /^\.SH / { section = $2 }
# the mark
!md && /^\.\\" test-example/ { mark($0); next }
md && /^<!-- test-example/ { mark($0); next }
# a block starts
!md && !inblk && /^\.(nf|EX)$/ {
	inblk = 1
	if (pending) { cur = f ".sh"; pending = 0 }
	else {
		cur = ""
		if (section == "EXAMPLES") { print FILENAME ":" FNR ": example not marked (.\\\" test-example)" > "/dev/stderr"; bad = 1 }
	}
	next
}
md && !inblk && /^```/ {
	inblk = 1
	if (pending) { cur = f ".sh"; pending = 0 } else cur = ""
	next
}
!md && inblk && /^\.(fi|EE)$/ { inblk = 0; if (cur != "") close(cur); next }
md && inblk && /^```$/ { inblk = 0; if (cur != "") close(cur); next }
inblk && cur != "" { print (md ? $0 : unroff($0)) >> cur }
END { print n + 0; exit bad }
' "$@"
