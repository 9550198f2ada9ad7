#!/usr/bin/env bash
# Issues 11's and 44's acceptance figures, measured as the issues ask:
# every way of running a workload interleaved in one run, repeated, and
# reported as medians with their spread.
#
#   scripts/acceptance.sh build DIR
#       builds this checkout's benchmark binaries (vm/e2e, vm, vm/ort
#       tests and genaic, stripped) into DIR. Needs Go.
#   scripts/acceptance.sh run [-r ROUNDS] DIR...
#       runs ROUNDS rounds (default 5); each round runs every DIR's
#       binaries in turn, so that two builds (a base and a change) are
#       compared on one machine state. Prints the benchmark lines, each
#       after its DIR's name. Needs no Go: DIRs built elsewhere run on a
#       machine with this checkout and the cache's onnxruntime/ and
#       models/ folders (make setup's; GENAIC_CACHE names where they are).
#   scripts/acceptance.sh table FILE
#       the medians [min–max] per build, benchmark and figure of run's
#       output (go run ./scripts/benchtable), then issues 11's and 44's
#       acceptance checks per build, met or SHORT with their medians.
#       Needs Go.
#   scripts/acceptance.sh sockets DIR...
#       the server's part of a round alone (genaic serve of two packages,
#       grouped and one request per invocation, loaded over HTTP and a gRPC
#       stream, and the same bench in process), once per DIR; its benches'
#       rounds last ACCEPTANCE_SOCKETS_ROUND (default 1s).
#   scripts/acceptance.sh pack OUT DIR...
#       puts DIRs' binaries (each under OUT/builds/ by its folder's name)
#       and the cache's ONNX Runtime library and models (OUT/cache),
#       compressed, into OUT: one folder to carry to another machine, for
#       which it prints the size against a 64 MiB limit. A build may hold
#       only some of the binaries (an experiment's e2e.test alone, say);
#       run measures what each has.
#   scripts/acceptance.sh unpack OUT
#       decompresses a packed OUT in place; then
#       GENAIC_CACHE=OUT/cache scripts/acceptance.sh run OUT/builds/*
#   scripts/acceptance.sh count [-w WORKLOAD[,WORKLOAD...]] [-r REPEATS] DIR...
#       counts instructions, which a busy machine does not move as it
#       moves time: under valgrind's callgrind (the valgrind package), on
#       one processor with the collector off (GOGC=100 in the environment
#       counts it too, less steadily: its cycles fall unevenly between
#       the two runs), the difference of two runs
#       of the same benchmark, so that set-up cancels out. Per DIR: the
#       no-op backend's instructions per request (BenchmarkRuntimeOverhead,
#       grouped), and for each workload (default image_padded/64 and
#       text_packed/short) the instructions per document of the grouped
#       engine and of the ideal's direct calls (BenchmarkWorkloadCost),
#       each split into Go code (genaic and onnxruntime_go) and native
#       code (ONNX Runtime and the C library), and the runtime's own: the
#       grouped engine's Go instructions beyond the ideal's, per document
#       and per request. Counts, not times: a cache miss costs more than
#       an add, and under valgrind ONNX Runtime takes code paths without
#       AVX-512 (more instructions than it runs natively), so no ratio to
#       the ideal is given. The no-op count repeats to the instruction.
#       A workload's moves between runs (set-up does not always take the
#       same path, and the scheduler's choices follow times, which
#       valgrind stretches): each is the median of REPEATS (default 3)
#       differences of 10 and 50 documents. Slow (minutes per build).
#       Needs no Go.
#
# A round: BenchmarkWorkloads (grouped, grouped with two runners, solo and
# direct ONNX Runtime calls on the budget-sized batches, per workload),
# BenchmarkWorkloadsApart (grouped and the direct calls in blocks of 20
# documents), BenchmarkWorkloadFloor (grouped, the direct calls and a
# hand-written minimal runtime, the floor, where a workload has one: what
# any runtime reaches on the machine), BenchmarkServed (callers of Run, as a server's, against lockstep and the
# direct calls),
# BenchmarkRuntimeOverhead (CPU per request on a backend that does no
# work), BenchmarkRunVsDirect on the image batches (one ONNX Runtime call
# through genaic against a direct onnxruntime_go Run), and genaic bench on
# docs/benchmarks.md's example at 1 and 16 clients (under all processors and one
# fewer, where the machine has several); then issue 44's: BenchmarkBest
# (served callers at planned defaults against the best hand-assembled
# strategy, synthetic and real models) and genaic bench at its defaults on
# the two real models (ocr_rec, wakeword_audio), and the server's checks
# (sockets, below: genaic serve loaded by genaic bench over HTTP and a gRPC
# stream).
set -euo pipefail
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

build() {
	local dir=$1
	mkdir -p -- "$dir"
	cd -- "$root"
	local flags=(-trimpath -ldflags=-s\ -w)
	go test -c "${flags[@]}" -o "$dir/e2e.test" ./vm/e2e
	go test -c "${flags[@]}" -o "$dir/vm.test" ./vm
	go test -c "${flags[@]}" -o "$dir/ort.test" ./vm/ort
	go build "${flags[@]}" -o "$dir/genaic" ./cmd/genaic
}

# label prefixes every benchmark line (and genaic bench's JSON, made one
# line) with the build's name.
label() { awk -v l="$1" '/^(Benchmark|\{)/ { print l "\t" $0 }'; }

# measure runs a command in folder dir and passes its benchmark lines on
# under the build's name; when the command fails, its output goes to
# stderr and the run stops.
measure() {
	local name=$1 dir=$2 out
	shift 2
	if ! out=$(cd -- "$dir" && "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "acceptance: failed in $dir: $*" >&2
		exit 1
	fi
	case $out in
	'{'*) printf '%s\n' "$out" | tr -d '\n' | label "$name" ;;
	*) printf '%s\n' "$out" | label "$name" ;;
	esac
}

round() {
	local dir=$1 name pkg=$root/testdata/packages/text_packed
	name=$(basename -- "$dir")
	[ ! -e "$dir/e2e.test" ] ||
		measure "$name" "$root/vm/e2e" "$dir/e2e.test" -test.run '^$' -test.bench 'Workloads$' -test.benchtime 100x
	[ ! -e "$dir/e2e.test" ] ||
		measure "$name" "$root/vm/e2e" "$dir/e2e.test" -test.run '^$' -test.bench 'WorkloadsApart' -test.benchtime 20x
	[ ! -e "$dir/e2e.test" ] ||
		measure "$name" "$root/vm/e2e" "$dir/e2e.test" -test.run '^$' -test.bench 'WorkloadFloor' -test.benchtime 100x
	[ ! -e "$dir/e2e.test" ] ||
		measure "$name" "$root/vm/e2e" "$dir/e2e.test" -test.run '^$' -test.bench 'Served' -test.benchtime 20x
	[ ! -e "$dir/vm.test" ] ||
		measure "$name" "$root/vm" "$dir/vm.test" -test.run '^$' -test.bench 'RuntimeOverhead' -test.benchtime 4000x -test.benchmem
	[ ! -e "$dir/ort.test" ] ||
		measure "$name" "$root/vm/ort" "$dir/ort.test" -test.run '^$' -test.bench 'RunVsDirect/image16$' -test.benchtime 20000x
	[ ! -e "$dir/genaic" ] ||
		measure "$name" "$root" "$dir/genaic" bench "$pkg" --requests "$pkg/requests.json" --concurrency 1,16 --json $(procs "$dir/genaic")
	[ ! -e "$dir/e2e.test" ] ||
		measure "$name" "$root/vm/e2e" "$dir/e2e.test" -test.run '^$' -test.bench 'Best' -test.benchtime 3x
	local real
	for real in ocr_rec wakeword_audio; do
		[ ! -e "$dir/genaic" ] ||
			measure "$name" "$root" "$dir/genaic" bench "$root/testdata/packages/$real" \
				--requests "$root/testdata/packages/$real/requests.json" --json |
			packaged "$real"
	done
	[ ! -e "$dir/genaic" ] || sockets "$dir"
}

# packaged names the package of the genaic bench documents it passes on
# (benchtable puts pkg=NAME into their benchmarks' names).
packaged() { sed "s/^\([^\t]*\t\){/\1{\"package\":\"$1\",/"; }

# sockets measures issue 44's checks of a server: genaic serve of the
# short text and the 64-image packages, grouped and with every component
# declined to one request per invocation (package NAME+one), loaded by
# genaic bench over HTTP with binary tensors and over a gRPC stream at 16
# and 64 clients, beside the same bench in process (its grouped mode is
# what the server is held to). Its rounds last a second, not bench's
# default: a server's throughput over a short round moves with the
# machine more than the changes it is measured to judge.
sockets() {
	local dir=$1 name pkg reqs one pid round=${ACCEPTANCE_SOCKETS_ROUND:-1s}
	name=$(basename -- "$dir")
	for pkg in text_packed:requests.json image_padded:requests64.json; do
		reqs=$root/testdata/packages/${pkg%%:*}/${pkg#*:}
		pkg=${pkg%%:*}
		measure "$name" "$root" "$dir/genaic" bench "testdata/packages/$pkg" --requests "$reqs" \
			--concurrency 16,64 --round-time "$round" --json | packaged "$pkg"
		for one in "" +one; do
			local flags=(--http "127.0.0.1:$httpPort" --grpc "127.0.0.1:$grpcPort")
			[ -z "$one" ] || flags+=(--decline '*=one request per invocation')
			# Each start plans anew, in a cache folder of its own (a build
			# before the plan cache ignores it): a round samples what the
			# planning chooses too, as every round did before plans were kept.
			rm -rf -- "$dir/plans"
			XDG_CACHE_HOME=$dir/plans "$dir/genaic" serve "$root/testdata/packages/$pkg" "${flags[@]}" 2>"$dir/serve.log" &
			pid=$!
			if ! ready "$httpPort"; then
				kill "$pid" 2>/dev/null || true
				cat "$dir/serve.log" >&2
				echo "acceptance: genaic serve of $pkg never became ready" >&2
				exit 1
			fi
			if ! measure "$name" "$root" "$dir/genaic" bench "testdata/packages/$pkg" --requests "$reqs" \
				--url "http://127.0.0.1:$httpPort" --grpc "127.0.0.1:$grpcPort" --protocols http,grpc_stream \
				--concurrency 16,64 --round-time "$round" --json | packaged "$pkg$one"; then
				kill "$pid"
				exit 1
			fi
			kill "$pid"
			wait "$pid" || true
		done
	done
}

# The ports sockets serves on, on the loopback interface.
httpPort=18080 grpcPort=18081

# ready waits until the server on port answers /v2/health/ready with 200
# (its models warmed up), for at most a minute.
ready() {
	local i
	for ((i = 0; i < 600; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /v2/health/ready HTTP/1.0\r\n\r\n' >&3 &&
			head -n 1 <&3 | grep -q ' 200') 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# procs is the --procs flag of a round's genaic bench: every mode under
# all the processors and one fewer (where ONNX Runtime's threads are not
# counted by Go; RATIONALE, "Go's processors and ONNX Runtime's threads"),
# for a build whose bench has the flag, on a machine of several.
procs() {
	local n usage
	n=$(nproc)
	usage=$("$1" bench --help 2>&1 || true)
	if [ "$n" -gt 1 ] && [[ $usage == *-procs* ]]; then
		echo "--procs $n,$((n - 1))"
	fi
}

# pack compresses builds and the cache into one folder (see usage).
pack() {
	local out=$1 d f cache=${GENAIC_CACHE:-$root/.cache}
	shift
	[ -f "$cache/onnxruntime/libonnxruntime.so.1" ] && [ -d "$cache/models" ] || {
		echo "acceptance: $cache has no onnxruntime/libonnxruntime.so.1 or models/: run make setup" >&2
		exit 1
	}
	rm -rf -- "$out"
	mkdir -p -- "$out/builds" "$out/cache/onnxruntime" "$out/cache/models"
	for d in "$@"; do
		mkdir -p -- "$out/builds/$(basename -- "$d")"
		for f in "$d"/*; do
			gzip -9 -c -- "$f" >"$out/builds/$(basename -- "$d")/$(basename -- "$f").gz"
		done
	done
	gzip -9 -c -- "$cache/onnxruntime/libonnxruntime.so.1" >"$out/cache/onnxruntime/libonnxruntime.so.1.gz"
	for f in "$cache/models"/*; do
		gzip -9 -c -- "$f" >"$out/cache/models/$(basename -- "$f").gz"
	done
	local bytes
	bytes=$(du -sb -- "$out" | cut -f1)
	echo "acceptance: packed $# build(s) into $out: $((bytes / 1048576)) MiB of a 64 MiB carry" >&2
}

# unpack decompresses a packed folder in place.
unpack() {
	local out=$1
	[ -d "$out/builds" ] && [ -d "$out/cache" ] || usage
	gunzip -r -f -- "$out"
	chmod +x -- "$out"/builds/*/*
}

# callgrind runs a test binary's benchmark twice under callgrind, lo and
# hi iterations, and prints the difference per iteration: all
# instructions, then those outside the binary's own (native) code.
callgrind() {
	local bin=$1 dir=$2 bench=$3 lo=$4 hi=$5 n out totals=()
	# one run outside valgrind first: set-up that fills a cache (fixture
	# models, compiled plans) then takes the same path in both counted runs
	(cd -- "$dir" && "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime 1x >/dev/null 2>&1) || true
	for n in "$lo" "$hi"; do
		out=$tmp/callgrind.$n
		# valgrind 3.19 cannot decode RDTSCP, which the Go runtime (1.26)
		# reads the cycle counter with where the processor has it
		if ! (cd -- "$dir" && GOGC=${GOGC:-off} GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 \
			valgrind --tool=callgrind --callgrind-out-file="$out" \
			"$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "${n}x" >"$out.log" 2>&1); then
			cat -- "$out.log" >&2
			echo "acceptance: callgrind failed on $bin -test.bench $bench" >&2
			exit 1
		fi
		grep -q '^Benchmark' "$out.log" || {
			echo "acceptance: $bin ran no benchmark $bench" >&2
			exit 1
		}
		totals+=("$(callgrind_annotate --threshold=100 "$out" | awk -v bin="$(basename -- "$bin")" '
			/PROGRAM TOTALS/ { t = $1; gsub(",", "", t) }
			/^ *[0-9,]+ .*\]$/ { v = $1; gsub(",", "", v); if (index($NF, "/" bin "]") == 0) native += v }
			END { printf "%d %d", t, native }')")
	done
	read -r t1 n1 <<<"${totals[0]}"
	read -r t2 n2 <<<"${totals[1]}"
	echo "$(((t2 - t1) / (hi - lo))) $(((n2 - n1) / (hi - lo)))"
}

# median prints the median of its integer arguments.
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

count() {
	local list=image_padded/64,text_packed/short repeats=3
	while [ $# -ge 2 ]; do
		case $1 in
		-w) list=$2 ;;
		-r) [[ $2 =~ ^[1-9][0-9]*$ ]] || usage; repeats=$2 ;;
		*) break ;;
		esac
		shift 2
	done
	[ $# -ge 1 ] || usage
	command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null || {
		echo "acceptance: count needs valgrind's callgrind (the valgrind package)" >&2
		exit 1
	}
	tmp=$(mktemp -d)
	trap 'rm -rf -- "$tmp"' EXIT
	local d bin w mode pat per all native go ideal grouped workloads alls gos i
	IFS=, read -r -a workloads <<<"$list"
	printf '%-10s %-22s %-8s %12s %12s %12s\n' build workload way total go native
	for d in "$@"; do
		d=$(cd -- "$d" && pwd)
		bin=$d/vm.test
		if [ -e "$bin" ]; then
			# the benchmark reports ns/op and ns/request: their ratio is
			# the requests in one of its batches
			read -r all native <<<"$(callgrind "$bin" "$root/vm" '^BenchmarkRuntimeOverhead$/^solo=false$' 200 600)"
			per=$(awk '/^Benchmark/ { for (i = 1; i < NF; i++) { if ($(i+1) == "ns/op") op = $i; if ($(i+1) == "ns/request") r = $i } } END { printf "%.0f", op / r }' "$tmp/callgrind.600.log")
			printf '%-10s %-22s %-8s %12d %12d %12d   per request (batches of %d)\n' "$(basename -- "$d")" no-op grouped \
				$((all / per)) $(((all - native) / per)) $((native / per)) "$per"
		fi
		bin=$d/e2e.test
		[ -e "$bin" ] || continue
		for w in "${workloads[@]}"; do
			ideal='' grouped=''
			for mode in grouped ideal; do
				pat=$(printf '%s' "$w/$mode" | sed 's#[^/]*#^&$#g')
				alls=() gos=()
				for ((i = 1; i <= repeats; i++)); do
					read -r all native <<<"$(callgrind "$bin" "$root/vm/e2e" "^BenchmarkWorkloadCost\$/$pat" 10 50)"
					alls+=("$all") gos+=($((all - native)))
				done
				all=$(median "${alls[@]}") go=$(median "${gos[@]}")
				printf '%-10s %-22s %-8s %12d %12d %12d   per document, median of %d\n' "$(basename -- "$d")" "$w" "$mode" \
					"$all" "$go" $((all - go)) "$repeats"
				printf -v "$mode" '%s' "$go"
			done
			per=$(awk '/^Benchmark/ { for (i = 1; i < NF; i++) if ($(i+1) == "requests/op") r = $i } END { print r + 0 }' "$tmp/callgrind.50.log")
			printf '%-10s %-22s %-8s %12d   own: Go beyond the ideal'"'"'s, per document (%d per request)\n' \
				"$(basename -- "$d")" "$w" own $((grouped - ideal)) $(((grouped - ideal) / (per > 0 ? per : 1)))
		done
	done
}

run() {
	local rounds=5
	if [ "${1-}" = -r ]; then
		[ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || usage
		rounds=$2
		shift 2
	fi
	[ $# -ge 1 ] || usage
	local dirs=() d
	for d in "$@"; do
		dirs+=("$(cd -- "$d" && pwd)")
	done
	for ((i = 1; i <= rounds; i++)); do
		echo "# round $i of $rounds" >&2
		for d in "${dirs[@]}"; do
			round "$d"
		done
	done
}

case "${1-}" in
build) [ $# -eq 2 ] || usage; build "$2" ;;
run) shift; run "$@" ;;
pack) [ $# -ge 3 ] || usage; shift; pack "$@" ;;
unpack) [ $# -eq 2 ] || usage; unpack "$2" ;;
count) shift; count "$@" ;;
sockets)
	[ $# -ge 2 ] || usage
	shift
	for d in "$@"; do
		sockets "$(cd -- "$d" && pwd)"
	done
	;;
table)
	[ $# -eq 2 ] || usage
	file=$(cd -- "$(dirname -- "$2")" && pwd)/$(basename -- "$2")
	cd -- "$root" && go run ./scripts/benchtable "$file"
	;;
*) usage ;;
esac
