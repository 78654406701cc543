#!/usr/bin/env bash
# convert_powercut.sh CONVERT EXT_IMAGE WORKDIR — power cuts during btk-convert and during its
# rollback: for every N, the write path stops after write N (BTK_FAULT=fail:N, the
# fault-injecting io backend), and the device must then be either the ext filesystem (e2fsck
# -fn clean, every block it uses identical to before) or a complete btrfs (btrfs check clean,
# and the ext image inside it intact: a rollback from there restores it exactly), and blkid -p
# finds that one filesystem and no other (never "ambivalent"). Prints one
# line per state kind and "powercut: N states ok" at the end; exit 1 at the first bad state.
# PC_STEP=K (default 1: every write) checks every K-th write, then every one of the last 12
# (the superblocks and the final flushes are always among them).
set -u
conv=$1 orig=$2 w=$3
here=$(dirname "$0")
img=$w/pc.img

ext_intact() { # the ext filesystem as it was
	e2fsck -fn "$1" >/dev/null 2>&1 && python3 "$here/ext_used_diff.py" "$orig" "$1" >/dev/null
}
# blkid -p (libblkid, as udev and mount without -t) finds exactly one filesystem, of type $2
# (ext2/3/4 or btrfs): "ambivalent" (exit 8) when both signatures are there
blkid_one() {
	local out
	out=$(blkid -p -o export "$1" 2>&1) && echo "$out" | grep -Eqx "TYPE=$2"
}
btrfs_complete() {
	btrfs check --readonly "$1" >/dev/null 2>&1
}
# a btrfs state must roll back to the exact ext filesystem
rollback_exact() {
	cp --sparse=always "$1" "$w/rb.img" && "$conv" -r "$w/rb.img" >/dev/null 2>&1 && ext_intact "$w/rb.img"
}

step=${PC_STEP:-1}
states=0 ext=0 btr=0
for phase in convert rollback; do
	n=0 last=0
	while :; do
		# sampled: K-th writes until one run finishes, then back over the last 12 writes
		if [ "$last" -gt 0 ]; then
			n=$((n + 1))
			[ "$n" -lt "$last" ] || { echo "powercut: $phase: $last writes, sampled every $step and the last 12"; break; }
		elif [ "$step" -gt 1 ] && [ "$n" -gt 0 ]; then
			n=$((n + step))
		else
			n=$((n + 1))
		fi
		if [ "$phase" = convert ]; then
			cp --sparse=always "$orig" "$img"
			BTK_FAULT=fail:$n "$conv" --no-progress "$img" >/dev/null 2>&1
		else
			cp --sparse=always "$w/converted.img" "$img"
			BTK_FAULT=fail:$n "$conv" -r "$img" >/dev/null 2>&1
		fi
		rc=$?
		states=$((states + 1))
		if ext_intact "$img"; then
			ext=$((ext + 1))
			kind='ext[234]'
		elif btrfs_complete "$img" && rollback_exact "$img"; then
			btr=$((btr + 1))
			kind=btrfs
		else
			echo "powercut: $phase stopped after write $n: neither the ext nor a complete btrfs" >&2
			cp "$img" "$w/bad-$phase-$n.img"
			exit 1
		fi
		if ! blkid_one "$img" "$kind"; then
			echo "powercut: $phase stopped after write $n: blkid -p does not find the one filesystem there ($kind): $(blkid -p "$img" 2>&1)" >&2
			exit 1
		fi
		if [ "$rc" -eq 0 ] && [ "$last" -eq 0 ]; then
			[ "$phase" = convert ] && cp --sparse=always "$img" "$w/converted.img"
			if [ "$step" -eq 1 ]; then
				echo "powercut: $phase: $n writes, every stop checked"
				break
			fi
			last=$n
			n=$((n - 13))
			[ "$n" -ge 0 ] || n=0
		fi
		[ "$n" -lt 100000 ] || { echo "powercut: $phase never finished" >&2; exit 1; }
	done
done
echo "powercut: $states states ok ($ext ext, $btr btrfs)"
