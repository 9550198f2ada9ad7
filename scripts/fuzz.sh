#!/usr/bin/env bash
# scripts/fuzz.sh: the short fuzz runs of "make test", one target at a time.
#
# Each target runs a count of inputs (-fuzztime Nx), not a duration: with a
# duration, Go's fuzzing coordinator can report its own end as "context
# deadline exceeded" and fail a target that found nothing.
#
# Each run starts from the target's seeds (its f.Add calls and
# testdata/fuzz), not from the inputs earlier runs found interesting: Go
# keeps those in its build cache and runs every one of them again before
# fuzzing, so a run that kept them would take longer each time. The
# interesting inputs of this run go to a folder removed at the end, and
# minimizing is kept short (an input thrown away gains little from it). A
# failing input is still written, minimized briefly, to the package's
# testdata/fuzz, where "go test" runs it from then on.
#
# Usage: scripts/fuzz.sh [GO]   (GO defaults to "go")
set -euo pipefail

GO="${1:-go}"
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

# package target inputs
TARGETS="
compiler      FuzzFrontEnd         2000
passes        FuzzCheck            3000
ir/irtext     FuzzParse            2000
vm/jsonio     FuzzReadRequests     20000
vm/jsonio     FuzzReadNPY          10000
vm/jsonio     FuzzTensorData       10000
vm            FuzzPackItems        20000
vm/e2e        FuzzRunRequests      3000
plan          FuzzDecode           5000
engine        FuzzKeptPlan         20000
onnx          FuzzDecode           20000
onnx          FuzzMaskToLengths    20000
onnx          FuzzDynamicBatch     20000
vm/adapters   FuzzDecodeWAV        20000
vm/adapters   FuzzAudioRequest     15000
vm/adapters   FuzzAudioFrontEnd    10000
vm/adapters   FuzzImageRequest     10000
vm/adapters   FuzzImageSeqRequest  5000
vm/adapters   FuzzVideoRequest     8000
vm/adapters   FuzzSampleByTime     20000
serve         FuzzDecodeHTTP       3000
serve         FuzzDecodeGRPC       3000
serve         FuzzReadInferRequest 20000
serve         FuzzParseConfig      3000
serve         FuzzJSONData         5000
serve         FuzzDecodeFixed      10000
serve         FuzzAnswer           10000
serve         FuzzRepository       2000
"

corpus="$(mktemp -d)"
trap 'rm -rf -- "$corpus"' EXIT
while read -r pkg target inputs; do
	[ -n "$pkg" ] || continue
	echo "$GO test ./$pkg -run '^\$' -fuzz '^$target\$' -fuzztime ${inputs}x"
	# -test.fuzzcachedir, after -args, replaces the build cache's folder
	# that "go test" names for the target's interesting inputs.
	"$GO" test "./$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "${inputs}x" -fuzzminimizetime 10x \
		-args -test.fuzzcachedir="$corpus/$pkg/$target"
done <<<"$TARGETS"
