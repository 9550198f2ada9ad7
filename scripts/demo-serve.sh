#!/usr/bin/env bash
# The end of `make demo`: serve the example repository on the Open Inference
# Protocol, send one request to MODEL with curl, print the answer, load
# the server with genaic bench, print a few metric lines and the model's
# statistics in Triton's schema, then stop the
# server with SIGTERM (it drains and exits 0).
# usage: demo-serve.sh GENAIC REPO MODEL
set -euo pipefail
genaic=$1 repo=${2%/} model=$3
pkg=$repo/$model
port=${DEMO_PORT:-18080}
log=$(mktemp) body=$(mktemp)
trap 'rm -f "$log" "$body"' EXIT

echo "== genaic serve $repo --http 127.0.0.1:$port --grpc ''"
"$genaic" serve "$repo" --http "127.0.0.1:$port" --grpc "" 2>"$log" &
pid=$!
stop() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap 'stop; rm -f "$log" "$body"' EXIT
# The server is ready once every package of the repository is loaded, and
# it plans each package's execution on this machine as it loads it (a few
# seconds a package, more for the real models): it may take a minute or
# two, so say how far it has got every ten seconds.
ready=
packages=$(find "$repo" -mindepth 2 -maxdepth 2 -name inference_metadata.yaml | wc -l)
for i in $(seq 1 1500); do
	if curl -sf "http://127.0.0.1:$port/v2/health/ready" >/dev/null 2>&1; then ready=1; break; fi
	if ! kill -0 "$pid" 2>/dev/null; then break; fi
	if ((i % 50 == 0)); then
		echo "   loading: $(grep -c 'msg="model loaded"' "$log" || true) of $packages packages planned and loaded"
	fi
	sleep 0.2
done
if [ -z "$ready" ]; then
	echo "genaic serve did not become ready; its log:" >&2
	cat "$log" >&2
	exit 1
fi

# The first request of the package's requests.json, as an OIP request.
python3 - "$pkg/requests.json" >"$body" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["requests"][0]
types = {"float32": "FP32", "float64": "FP64", "int64": "INT64", "int32": "INT32", "uint8": "UINT8", "bool": "BOOL"}
print(json.dumps({"id": r["id"], "inputs": [
    {"name": n, "shape": t["shape"], "datatype": types[t["dtype"]], "data": t["data"]}
    for n, t in r["inputs"].items()]}))
PY
echo "== curl -X POST http://127.0.0.1:$port/v2/models/$model/infer -d @request.json"
curl -sS -X POST -H 'Content-Type: application/json' --data @"$body" "http://127.0.0.1:$port/v2/models/$model/infer"
echo
echo "== genaic bench $pkg --requests $pkg/requests.json --url 127.0.0.1:$port --concurrency 4 --rounds 1 (load the server)"
"$genaic" bench "$pkg" --requests "$pkg/requests.json" --url "127.0.0.1:$port" --concurrency 4 --rounds 1 --round-time 50ms
echo "== curl http://127.0.0.1:$port/metrics (a few lines)"
curl -sS "http://127.0.0.1:$port/metrics" | grep -E '^genaic_(requests_total|request_duration_seconds_count|component_invocations_total|group_requests_count|budget_peak|queue_depth)' | grep "model=\"$model\"" || true
echo "== curl http://127.0.0.1:$port/v2/models/$model/stats (Triton's statistics extension, as perf_analyzer reads it)"
curl -sS "http://127.0.0.1:$port/v2/models/$model/stats"
echo
echo "== kill -TERM (drain and stop)"
stop
trap 'rm -f "$log" "$body"' EXIT
grep -E 'msg="?(ready|stopped|draining)' "$log" | cut -c1-160 || true
