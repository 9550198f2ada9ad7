# genaic: build, check and demo entry points.
#
# "make test" is the whole check CI runs (.ci/run); "make setup" fetches and
# verifies the ONNX Runtime library and reference models into .cache/ (see
# scripts/setup.sh) and is a prerequisite of everything that needs them.

GO       ?= go
DEMO_PKG ?= testdata/packages/image_padded
CACHE    := $(CURDIR)/.cache

.DEFAULT_GOAL := build
.PHONY: setup build lint test demo clean-cache

setup:
	@bash scripts/setup.sh

build:
	$(GO) build ./...

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files are not formatted (run gofmt -w on them):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi
	$(GO) vet ./...

# Tests and the demo find the cache through GENAIC_CACHE (vm/ortlib).
test demo: export GENAIC_CACHE := $(CACHE)

test: setup lint
	$(GO) test ./...
	$(GO) test -race ./vm/... ./compiler/... ./passes/...
	$(GO) test ./compiler -run '^$$' -fuzz '^FuzzFrontEnd$$' -fuzztime 4s
	$(GO) test ./passes -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime 4s
	$(GO) test ./ir/irtext -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 4s

demo: setup
	$(GO) run ./cmd/genaic check -v $(DEMO_PKG)

clean-cache:
	rm -rf -- "$(CACHE)"
