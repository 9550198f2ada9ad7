# genaic: build, check and demo entry points.
#
# "make test" is the whole check CI runs (.ci/run); "make setup" fetches and
# verifies the ONNX Runtime library and reference models into .cache/ (see
# scripts/setup.sh) and is a prerequisite of everything that needs them.

GO       ?= go
DEMO_PKG ?= testdata/packages/image_padded
CACHE    := $(CURDIR)/.cache

.DEFAULT_GOAL := build
.PHONY: setup build install lint test demo bench count soak clean-cache

setup:
	@bash scripts/setup.sh

build:
	$(GO) build ./...

# install: genaic into $(go env GOBIN), else $(go env GOPATH)/bin, told
# where this checkout's cache is (vm/ortlib), so that it finds ONNX Runtime
# from any folder without GENAIC_CACHE.
install: setup
	$(GO) install -ldflags='-X github.com/genaic/genaic/vm/ortlib.installedCache=$(CACHE)' ./cmd/genaic
	@bin="$$($(GO) env GOBIN)"; bin="$${bin:-$$($(GO) env GOPATH)/bin}"; \
	echo "installed $$bin/genaic (it finds ONNX Runtime in $(CACHE)); put $$bin on your PATH"

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files are not formatted (run gofmt -w on them):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./... ./testdata/models/gen
	@bash scripts/comment-figures

# Tests, benchmarks and the demo find the cache through GENAIC_CACHE
# (vm/ortlib).
test demo bench count soak: export GENAIC_CACHE := $(CACHE)

# Warm, "go test" answers from its cache for every package unchanged since
# it last passed, with and without -race; the fuzz runs (scripts/fuzz.sh: a
# count of inputs per target, from the seeds) run every time. -race covers
# the packages whose code runs goroutines or converts unsafe pointers (the
# race detector's checkptr checks those): elsewhere it has nothing to find.
test: setup lint
	$(GO) test ./...
	$(GO) test -race ./backend/... ./engine/... ./internal/jsondata/... ./sched/... ./vm/... ./serve/...
	$(GO) test -race ./cmd/genaic -run '^TestBench(Server|OpenLoop|TritonStats|MetricsSource|Priority)'
	@bash scripts/fuzz.sh $(GO)

# The soak (serve.TestSoak): mixed good and hostile HTTP/gRPC traffic
# against a server with load/unload churn, for SOAK (default 10m; `make
# soak SOAK=30s` shows it works) twice: under -race (races; the live heap,
# goroutines and fds back in their band), then without (RSS, which the
# race detector's own memory would swell, back in its band).
SOAK ?= 10m
soak: setup
	GENAIC_SOAK=$(SOAK) $(GO) test -race ./serve -run '^TestSoak$$' -count=1 -v -timeout 0
	GENAIC_SOAK=$(SOAK) $(GO) test ./serve -run '^TestSoak$$' -count=1 -v -timeout 0

demo: setup
	@echo "== go build -o .cache/bin/genaic ./cmd/genaic (make install puts genaic on your PATH)"
	@$(GO) build -o $(CACHE)/bin/genaic ./cmd/genaic
	@echo "== genaic check -v $(DEMO_PKG)"
	@$(CACHE)/bin/genaic check -v $(DEMO_PKG)
	@echo "== genaic compile $(DEMO_PKG) -o .cache/demo-plan.json"
	@$(CACHE)/bin/genaic compile $(DEMO_PKG) -o $(CACHE)/demo-plan.json
	@echo "== genaic inspect .cache/demo-plan.json"
	@$(CACHE)/bin/genaic inspect $(CACHE)/demo-plan.json
	@echo "== genaic run .cache/demo-plan.json --requests $(DEMO_PKG)/requests.json --stats"
	@$(CACHE)/bin/genaic run $(CACHE)/demo-plan.json --requests $(DEMO_PKG)/requests.json --stats
	@bash scripts/demo-serve.sh $(CACHE)/bin/genaic $(dir $(DEMO_PKG)) $(notdir $(DEMO_PKG))

# The benchmark table (scripts/acceptance.sh): the shipped workloads
# grouped, solo and as direct ONNX Runtime calls, the runtime's own cost,
# one call through genaic against a direct one, and genaic bench on the
# example of docs/benchmarks.md, BENCH_ROUNDS rounds (about 8 s each on 2 cores), then
# medians [min–max]. To compare two builds, build each with
# "scripts/acceptance.sh build DIR" and run them together.
BENCH_ROUNDS ?= 5
bench: setup
	@bash scripts/acceptance.sh build $(CACHE)/bench/checkout
	@bash scripts/acceptance.sh run -r $(BENCH_ROUNDS) $(CACHE)/bench/checkout >$(CACHE)/bench/runs.txt
	@bash scripts/acceptance.sh table $(CACHE)/bench/runs.txt

# Instruction counts of the same build (scripts/acceptance.sh count; needs
# valgrind): the runtime's own per request and the workloads' per
# document, which a busy machine does not move as it moves times.
count: setup
	@bash scripts/acceptance.sh build $(CACHE)/bench/checkout
	@bash scripts/acceptance.sh count $(CACHE)/bench/checkout

clean-cache:
	rm -rf -- "$(CACHE)"
