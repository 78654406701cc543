#!/usr/bin/env bats
# The documentation's examples marked root (block devices) run as written: as root, a loop
# device over a scratch image stands in for each /dev/sdX name and a scratch directory for
# /mnt; otherwise the test skips. The other examples and the checks of the marks:
# docs_examples.bats.

load helpers
load docs_lib

setup() {
	docs_setup
}

# stand_in DIR: replace each /dev/sdX name of DIR's setup.sh and example.sh by a loop device
# over a fresh sparse image (one per name and document) and /mnt by DIR/mnt; fails when a
# device name of this machine is left
stand_in() {
	local dir=$1 name img loop f
	for name in $(grep -ohE '/dev/sd[a-zA-Z][0-9]*' "$dir/setup.sh" "$dir/example.sh" | sort -u); do
		if [ ! -e "$dir/dev.$(basename "$name")" ]; then
			img=$dir/$(basename "$name").img
			truncate -s 1G "$img"
			loop=$(losetup -f --show "$img") || return 1
			echo "$loop" >>"$D/loops"
			echo "$loop" >"$dir/dev.$(basename "$name")"
		fi
		loop=$(cat "$dir/dev.$(basename "$name")")
		for f in "$dir/setup.sh" "$dir/example.sh"; do
			sed -i -E "s#$name([^0-9]|\$)#$loop\\1#g" "$f"
		done
	done
	mkdir -p "$dir/mnt"
	for f in "$dir/setup.sh" "$dir/example.sh"; do
		sed -i -E "s#(^|[ ;])/mnt([/ ;]|\$)#\\1$dir/mnt\\2#g" "$f"
		if grep -qE '/dev/(sd|vd|hd|xvd|nvme|mmcblk)' "$f"; then
			echo "a device of this machine is left in $f:" >&2
			cat "$f" >&2
			return 1
		fi
	done
}

teardown() {
	# unmount and detach only what these tests attached (their scratch dir, their loops)
	local m l
	for m in $(awk -v d="$D/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if [ -f "$D/loops" ]; then
		while read -r l; do losetup -d "$l" 2>/dev/null || true; done <"$D/loops"
	fi
	true
}

@test "docs: the examples on block devices run as written (root, loop devices)" {
	require_loop
	require_tool jq
	"$BTK_ROOT/scripts/doc-examples.sh" "$D/ex" "${DOCS[@]}" >/dev/null
	local s
	for s in $(grep -l root "$D"/ex/*.mode); do
		s=${s%.mode}
		# what the examples call beyond btk and coreutils
		if grep -qw badblocks "$s.sh"; then require_tool badblocks; fi
		if grep -qw mkfs.ext4 "$s.setup"; then require_tool mkfs.ext4; fi
		# a mount comes only after btrfs check --readonly says the filesystem is clean
		if grep -qw mount "$s.sh"; then require_tool btrfs; fi
	done
	cat >"$D/preamble.sh" <<'EOF'
mount() {
	local dev=${*: -2:1}
	if [ "$(blkid -o value -s TYPE "$dev")" = btrfs ]; then
		btrfs check --readonly "$dev" >/dev/null 2>&1 ||
			{ echo "not mounting $dev: btrfs check --readonly is not clean" >&2; return 1; }
	fi
	command mount "$@"
}
source "$1"
EOF
	run_examples root
}
