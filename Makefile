# jitterlab — build, demo, tests and benchmarks.
#
#   make demo   install the neighbours' tools, build, and answer the seeds'
#               questions on this machine: a 4 ms control task with a
#               cache-sensitive scan, timer wake-up latency on every CPU but
#               CPU 0, [Baumgartner POWERLINK]'s POWERLINK managing node polling 3 emulated
#               CNs (run netcycle, its capture read back by analyze) and
#               both of [Baumgartner POWERLINK]'s tables as a bench (preset powerlink: the
#               load of 1 ms and 10 ms cycles × 3 and 40 CNs, and the seven
#               stress conditions, 5 s cells), [Red Hat caterpillar]'s pointer chase idle and
#               beside a cache thrasher (preset caterpillar, 200 samples a
#               cell), [Xu EPICS]'s latencies with a quiet and a flooded
#               network (preset epics, 3 s cells), [Red Hat controls]'s screw-to-screw
#               round trip over OPC UA PubSub against its 6.7 ms budget (its
#               verdict is printed, and the demo carries on whatever it is);
#               results under out/ (database, JSON, CSV, cyclictest
#               histograms, Markdown tables, HTML reports with plots of the
#               control task and of [Baumgartner POWERLINK]'s bench, and every run imported
#               into a second database as a fleet's would be)
#   make test   install the test tools, then formatting, lints and every test
#               (as CI runs them), the test-only probe `sleep` included
#   make deb    the Debian package (cargo-deb): the release binary, its man
#               pages and bash/zsh/fish completions (generated from the
#               command line by the hidden `jitterlab __generate-docs`), the
#               examples and the README, the monitor's systemd unit
#               (disabled) and /etc/default/jitterlab, in target/debian/
#   make bench  the comparisons against cyclictest quoted in BENCHMARKS.md
#               (installs rt-tests, stress-ng and time; ~40 minutes; keep the
#               machine otherwise idle)
#
# The documents cited here are listed in docs/design.md.

CARGO ?= cargo
BIN := target/release/jitterlab
OUT := out

# Debian packages the neighbours and the tests use: stress-ng (cpu, disk,
# misc, codesys loads), rt-tests (hackbench), iproute2 (network namespaces),
# procps (kill), rtla (interrupt latency where the kernel has timerlat).
DEPS := stress-ng rt-tests iproute2 procps rtla

.PHONY: all build deps test-deps demo test lint bench bench-deps clean deb

all: build

build:
	$(CARGO) build --release --locked

deps:
	@command -v stress-ng >/dev/null && command -v hackbench >/dev/null && \
		command -v ip >/dev/null && command -v kill >/dev/null && command -v rtla >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEPS); }

demo: deps build
	mkdir -p $(OUT)
	# Exit status 1 is a verdict this machine did not pass (a limit, a cycle
	# time not held, a budget exceeded): a result the reports show, not a
	# failure of the demo. Any other non-zero status stops it.
	$(BIN) --db $(OUT)/jitterlab.db run cyclic --period 4ms --scan 500us --working-set 1MiB \
		--duration 20s --json $(OUT)/cyclic.json --csv $(OUT)/cyclic.csv --histogram $(OUT)/cyclic.hist || [ $$? -eq 1 ]
	$(BIN) --db $(OUT)/jitterlab.db report --format html -o $(OUT)/cyclic.html
	$(BIN) --db $(OUT)/jitterlab.db run wakeup --interval 1ms --duration 10s \
		--json $(OUT)/wakeup.json --csv $(OUT)/wakeup.csv --histogram $(OUT)/wakeup.hist || [ $$? -eq 1 ]
	$(BIN) --db $(OUT)/jitterlab.db run netcycle --cycle 500us --cns 3 --duration 10s \
		--pcap $(OUT)/netcycle.pcap --json $(OUT)/netcycle.json || [ $$? -eq 1 ]
	$(BIN) analyze $(OUT)/netcycle.pcap > $(OUT)/netcycle-analyze.txt || [ $$? -eq 1 ]
	$(BIN) --db $(OUT)/jitterlab.db bench --preset powerlink --cycles 1ms,10ms --cns 3,40 \
		--duration 5s --warmup 1s --json $(OUT)/powerlink.json || [ $$? -eq 1 ]
	$(BIN) --db $(OUT)/jitterlab.db report --format md > $(OUT)/powerlink.md
	$(BIN) --db $(OUT)/jitterlab.db report --format html -o $(OUT)/powerlink.html
	$(BIN) --db $(OUT)/jitterlab.db bench --preset caterpillar --warmup 1s \
		--json $(OUT)/caterpillar.json || [ $$? -eq 1 ]
	$(BIN) --db $(OUT)/jitterlab.db report --format md > $(OUT)/caterpillar.md
	$(BIN) --db $(OUT)/jitterlab.db bench --preset epics --duration 3s --warmup 1s \
		--json $(OUT)/epics.json || [ $$? -eq 1 ]
	$(BIN) --db $(OUT)/jitterlab.db report --format md > $(OUT)/epics.md
	$(BIN) --db $(OUT)/jitterlab.db run roundtrip --duration 20s --json $(OUT)/roundtrip.json \
		--csv $(OUT)/roundtrip.csv || [ $$? -eq 1 ]
	# A monitor stopped after 15 s (SIGTERM: exit 0) and started again: one
	# series of two segments, the resumption marked.
	timeout --preserve-status -s TERM 15 $(BIN) --db $(OUT)/monitor.db monitor --max-latency 500us
	timeout --preserve-status -s TERM 10 $(BIN) --db $(OUT)/monitor.db monitor --max-latency 500us
	$(BIN) --db $(OUT)/monitor.db report --monitor
	$(BIN) --db $(OUT)/monitor.db report --monitor --format html -o $(OUT)/monitor.html
	$(BIN) --db $(OUT)/jitterlab.db runs
	$(BIN) --db $(OUT)/fleet.db import $(OUT)/jitterlab.db
	@echo "results: $(OUT)/jitterlab.db $(OUT)/{cyclic,wakeup}.{json,csv,hist} $(OUT)/roundtrip.{json,csv} $(OUT)/netcycle.{json,pcap} $(OUT)/netcycle-analyze.txt $(OUT)/{powerlink,caterpillar,epics}.{json,md} $(OUT)/{cyclic,powerlink,monitor}.html $(OUT)/monitor.db $(OUT)/fleet.db"

# Lints and tests with the test-only probe `sleep` (feature test-probe:
# tests/sleep_probe.rs) and, for clippy, without it too.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --all-targets --workspace --locked -- -D warnings
	$(CARGO) clippy --all-targets --workspace --locked --features test-probe -- -D warnings

# podman for the container tests (they skip, saying why, where the host
# cannot run one), tshark for tests/powerlink_tshark.rs (its debconf
# question about capture permissions is answered no beforehand), chromium
# for tests/html_report.rs (renders the HTML report headless), prometheus
# for promtool (tests/metrics.rs checks the live metrics with it), groff
# and man-db for tests/docs.rs and tests/deb.rs (the generated man pages
# pass groff's warnings; man -w finds the installed ones), systemd for
# systemd-id128 and for tests/service.rs (systemd-analyze verify checks the
# monitor's unit).
test-deps: deps
	@command -v podman >/dev/null && command -v tshark >/dev/null && command -v python3 >/dev/null && \
		command -v systemd-id128 >/dev/null && command -v systemd-analyze >/dev/null && \
		command -v chromium >/dev/null && \
		command -v promtool >/dev/null && command -v groff >/dev/null && command -v man >/dev/null || \
		{ echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections && \
		  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman tshark python3 systemd chromium prometheus groff-base man-db; }

test: test-deps lint
	$(CARGO) test --workspace --locked --features test-probe

# The Debian package. cargo-deb is installed (pinned) when missing; the man
# pages and completions are generated by the release binary itself before
# cargo-deb packs them (assets in Cargo.toml's [package.metadata.deb]),
# dpkg-shlibdeps (dpkg-dev) finds the shared libraries for Depends' $auto,
# and the binary is stripped (the release profile keeps debug info for
# profiling; the package does not need it). CARGO_TARGET_DIR is honoured.
CARGO_DEB_VERSION := 3.8.0
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
PKG_DOCS := target/pkg-docs

deb:
	@command -v dpkg-shlibdeps >/dev/null && command -v strip >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev binutils; }
	@$(CARGO) deb --version 2>/dev/null | grep -qx 'cargo-deb $(CARGO_DEB_VERSION)' || \
		$(CARGO) install cargo-deb --version $(CARGO_DEB_VERSION) --locked
	$(CARGO) build --release --locked
	rm -rf $(PKG_DOCS)
	$(TARGET_DIR)/release/jitterlab __generate-docs $(PKG_DOCS)
	$(CARGO) deb --no-build --strip

bench-deps:
	@command -v cyclictest >/dev/null && command -v stress-ng >/dev/null && command -v podman >/dev/null && [ -x /usr/bin/time ] || \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y rt-tests stress-ng time iproute2 podman; }

bench: bench-deps build
	$(CARGO) bench -p jitterlab-core --bench record
	$(CARGO) bench -p jitterlab-core --bench uadp
	$(CARGO) bench -p jitterlab-core --bench powerlink
	bash bench/fidelity.sh
	bash bench/short_periods.sh
	bash bench/memory.sh
	bash bench/overhead.sh
	bash bench/report_speed.sh
	bash bench/codesys_stop.sh
	DEPLOYMENTS='"host", "container"' bash bench/roundtrip.sh
	bash bench/metrics_cost.sh
	bash bench/monitor-year.sh
	bash bench/monitor-memory.sh

clean:
	$(CARGO) clean
	rm -rf $(OUT) bench/out
