#!/usr/bin/env bash
# The benchmark table on a borrowed machine (a quiet many-core one, where
# issue 11's figures are defined), in one prepared command each side.
#
#   scripts/device.sh pack [DIR...]
#       here, with Go: builds this checkout (as "head") and packs it, with
#       any other builds given (scripts/acceptance.sh build DIR, a base to
#       compare with) and the cache's ONNX Runtime library and models,
#       into .cache/devpack: the one ignored folder to carry there.
#   scripts/device.sh run [-r ROUNDS] [-t SECONDS]
#       there, without Go, from the checkout's root: unpacks .cache/devpack,
#       runs BenchmarkBeside first (whether work beside an ONNX Runtime call
#       slows it on that machine: RATIONALE, "A runner assembles into its
#       own buffers"), then ROUNDS rounds (default 5) of every build,
#       stopping early once SECONDS (default 420) have passed (the
#       server's benches in rounds of ACCEPTANCE_SOCKETS_ROUND, default
#       200ms there), and writes beside.txt, runs.txt and machine.txt
#       into $OUT (or .cache/devout).
#       Back here: scripts/acceptance.sh table runs.txt.
set -euo pipefail
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
pack=$root/.cache/devpack

usage() {
	sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

pack() {
	local head=$root/.cache/devbuild/head
	bash "$root/scripts/acceptance.sh" build "$head"
	bash "$root/scripts/acceptance.sh" pack "$pack" "$head" "$@"
}

run() {
	local rounds=5 budget=420 out=${OUT:-$root/.cache/devout} start i d
	while [ $# -gt 0 ]; do
		case $1 in
		-r) [[ ${2-} =~ ^[1-9][0-9]*$ ]] || usage; rounds=$2; shift 2 ;;
		-t) [[ ${2-} =~ ^[1-9][0-9]*$ ]] || usage; budget=$2; shift 2 ;;
		*) usage ;;
		esac
	done
	[ -d "$pack/builds" ] || { echo "device: no $pack; run scripts/device.sh pack here first" >&2; exit 1; }
	mkdir -p -- "$out"
	if compgen -G "$pack/builds/*/*.gz" >/dev/null; then
		bash "$root/scripts/acceptance.sh" unpack "$pack"
	fi
	export GENAIC_CACHE=$pack/cache
	# The server's benches take rounds of 200 ms there, not a second, so
	# that a round of every build fits the machine's time; their medians
	# place the server rather than judge a change to it.
	export ACCEPTANCE_SOCKETS_ROUND=${ACCEPTANCE_SOCKETS_ROUND:-200ms}
	{ nproc; lscpu 2>/dev/null || true; } >"$out/machine.txt"
	start=$SECONDS
	(cd -- "$root/vm/e2e" && "$pack/builds/head/e2e.test" -test.run '^$' -test.bench Beside -test.benchtime 10x -test.count 3) \
		>"$out/beside.txt" 2>&1 || true
	: >"$out/runs.txt"
	for ((i = 1; i <= rounds; i++)); do
		if [ $((SECONDS - start)) -ge "$budget" ]; then
			echo "device: stopped after $((i - 1)) rounds, at the time budget" >&2
			break
		fi
		bash "$root/scripts/acceptance.sh" run -r 1 "$pack"/builds/* >>"$out/runs.txt"
		echo "device: round $i done at $((SECONDS - start)) s" >&2
	done
	for d in "$pack"/builds/*; do
		echo "$(basename -- "$d")"
	done >"$out/builds.txt"
}

case "${1-}" in
pack) shift; pack "$@" ;;
run) shift; run "$@" ;;
*) usage ;;
esac
