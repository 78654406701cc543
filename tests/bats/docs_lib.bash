# docs_lib.bash — what docs_examples.bats and docs_examples_root.bats share: the sample
# directory of the examples' setups, and running every example of one mode (plain or root).

# a small sample directory for the examples' setups
make_sample() {
	mkdir -p "$1/sub"
	seq 1 3000 >"$1/numbers.txt"
	echo hello >"$1/sub/hello.txt"
	head -c 200000 /dev/urandom >"$1/sub/data.bin"
	ln -s numbers.txt "$1/link"
}

# run_examples MODE: every example of MODE (plain or root), one scratch dir per document, in
# the document's order; setup first, then the block as one bash script (errexit, pipefail)
run_examples() {
	local mode=$1 ex=$D/ex n=0 w doc dir s
	"$BTK_ROOT/scripts/doc-examples.sh" "$ex" "${DOCS[@]}" >/dev/null
	make_sample "$D/sample"
	for s in "$ex"/*.sh; do
		s=${s%.sh}
		[ "$(cat "$s.mode")" = "$mode" ] || continue
		w=$(sed "s|^$BTK_ROOT/||" "$s.where")
		doc=${w%%:*}
		dir=$D/run/${doc//\//_}
		mkdir -p "$dir"
		cp "$s.sh" "$dir/example.sh"
		cp "$s.setup" "$dir/setup.sh"
		if [ "$mode" = root ]; then
			stand_in "$dir" || return 1
		fi
		n=$((n + 1))
		(cd "$dir" && SAMPLE=$D/sample bash -e -o pipefail setup.sh) >"$D/out" 2>&1 ||
			{ echo "$w: setup failed: $(cat "$s.setup")" >&2; cat "$D/out" >&2; return 1; }
		(cd "$dir" && SAMPLE=$D/sample bash -e -o pipefail "$D/preamble.sh" example.sh) \
			>"$D/out" 2>&1 ||
			{ echo "$w: example failed:" >&2; cat "$s.sh" >&2; echo "--- output:" >&2; cat "$D/out" >&2; return 1; }
		owned_by "$dir" "$w" || return 1
	done
	echo "$n $mode examples ran" >&3
	[ "$n" -ge 1 ]
}

# owned_by DIR WHERE: a btk-owner line of DIR's example.sh whose comment says "owned by PATH"
# (a literal address) must say so: run again, every line of its answer names PATH
owned_by() {
	local dir=$1 w=$2 line cmd path
	while IFS= read -r line; do
		path=${line##*owned by }
		path=${path%%[ ,;)]*}
		cmd=${line%%#*}
		(cd "$dir" && bash -e -o pipefail -c "$cmd") >"$D/owned" 2>&1 &&
			[ -s "$D/owned" ] && ! grep -vqF "path=$path" "$D/owned" ||
			{ echo "$w: not owned by $path: $cmd" >&2; cat "$D/owned" >&2; return 1; }
		echo "$cmd: owned by $path" >>"$D/owned.log"
	done < <(grep -E '^btk-owner .*# .*owned by /' "$dir/example.sh")
}

# docs_setup: the tools first on PATH, D a scratch dir, DOCS the documents with examples
docs_setup() {
	require_btk mkfs
	require_btk debug
	D=$BATS_TEST_TMPDIR
	export PATH="$BTK_BUILD/bin:$PATH"
	DOCS=("$BTK_ROOT"/man/*.[78] "$BTK_ROOT/README.md")
}
