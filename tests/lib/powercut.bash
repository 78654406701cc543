# tests/lib/powercut.bash — for power-cut sweeps of a writer (bats files: load ../lib/powercut):
# how many changes a whole run makes, found with the fault switch BTK_FAULT=fail:N (HACKING.md).
# Needs btk_run (tests/bats/helpers.bash).

# powercut_total FRESH FROM TIMEOUT CMD...: the changes a whole run of CMD makes, in
# POWERCUT_TOTAL: the smallest budget N with which BTK_FAULT=fail:N lets the run complete (exit
# 0), N doubled from FROM until it does, then halved down to the exact count. FRESH (a command)
# puts the image(s) back before each run; TIMEOUT is btk_run's. Fails, saying so, when no budget
# up to FROM * 1024 is enough.
powercut_total() {
	local fresh=$1 n=$2 t=$3 lo=0 hi=0 i
	shift 3
	for ((i = 0; i <= 10; i++)); do
		$fresh || return 1
		BTK_FAULT=fail:$n btk_run "$t" "$@"
		[ "$status" = 0 ] && {
			hi=$n
			break
		}
		lo=$n n=$((n * 2))
	done
	[ $hi -gt 0 ] || {
		echo "powercut_total: no run of $* completed with up to $lo changes" >&2
		show_err
		return 1
	}
	while [ $((hi - lo)) -gt 1 ]; do
		n=$(((lo + hi) / 2))
		$fresh || return 1
		BTK_FAULT=fail:$n btk_run "$t" "$@"
		if [ "$status" = 0 ]; then hi=$n; else lo=$n; fi
	done
	POWERCUT_TOTAL=$hi
}
