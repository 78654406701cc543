# Helpers of the --rootdir tests (rootdir.bats, rootdir_progs.bats). Load after helpers.

# gen_src DIR: gen_tree.sh's full tree (as root: device nodes, owners)
gen_src() {
	bash "$BTK_ROOT/tests/oracle/gen_tree.sh" "$1" >/dev/null 2>&1
}

check_clean() {
	run btrfs check --readonly "$@"
	[ "$status" -eq 0 ] || { echo "$output" >&2; return 1; }
}

super_total() { btrfs inspect-internal dump-super "$1" | awk '$1 == "total_bytes" { print $2 }'; }

# the end of the last dev extent, from dump-tree of the device tree
last_extent_end() {
	btrfs inspect-internal dump-tree -t dev "$1" | awk '
		/DEV_EXTENT/ { split($0, a, " "); for (i = 1; i <= NF; i++) if ($i == "DEV_EXTENT") off = $(i + 1) + 0 }
		/length/ && off != "" { for (i = 1; i <= NF; i++) if ($i == "length") { e = off + $(i + 1); if (e > m) m = e } off = "" }
		END { printf "%d\n", m }'
}

# asserts the image file, the superblock and the last dev extent all end at one place
assert_ends_at_last_extent() {
	local img=$1 size total end
	size=$(stat -c %s "$img")
	total=$(super_total "$img")
	end=$(last_extent_end "$img")
	echo "file $size super $total last extent end $end" >&2
	[ "$size" -eq "$total" ]
	[ "$end" -eq "$total" ]
}
