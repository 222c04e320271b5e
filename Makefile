# jitterlab — build, demo, tests and benchmarks.
#
#   make demo   build and answer seed 000's question on this machine: a 4 ms
#               control task with a cache-sensitive scan, then timer wake-up
#               latency on every CPU but CPU 0; results under out/ (database,
#               JSON, CSV, cyclictest histograms)
#   make test   formatting, lints and every test (as CI runs them)
#   make bench  the comparisons against cyclictest quoted in BENCHMARKS.md
#               (installs rt-tests, stress-ng and time; ~40 minutes; keep the
#               machine otherwise idle)

CARGO ?= cargo
BIN := target/release/jitterlab
OUT := out

.PHONY: all build demo test lint bench bench-deps clean

all: build

build:
	$(CARGO) build --release --locked

demo: build
	mkdir -p $(OUT)
	$(BIN) --db $(OUT)/jitterlab.db run cyclic --period 4ms --scan 500us --working-set 1MiB \
		--duration 20s --json $(OUT)/cyclic.json --csv $(OUT)/cyclic.csv --histogram $(OUT)/cyclic.hist
	$(BIN) --db $(OUT)/jitterlab.db run wakeup --interval 1ms --duration 10s \
		--json $(OUT)/wakeup.json --csv $(OUT)/wakeup.csv --histogram $(OUT)/wakeup.hist
	$(BIN) --db $(OUT)/jitterlab.db runs
	@echo "results: $(OUT)/jitterlab.db $(OUT)/cyclic.{json,csv,hist} $(OUT)/wakeup.{json,csv,hist}"

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --all-targets --workspace --locked -- -D warnings

test: lint
	$(CARGO) test --workspace --locked

bench-deps:
	@command -v cyclictest >/dev/null && command -v stress-ng >/dev/null && [ -x /usr/bin/time ] || \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y rt-tests stress-ng time; }

bench: bench-deps build
	$(CARGO) bench -p jitterlab-core --bench record
	bash bench/fidelity.sh
	bash bench/short_periods.sh
	bash bench/memory.sh

clean:
	$(CARGO) clean
	rm -rf $(OUT) bench/out
