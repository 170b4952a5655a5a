# trove's two commands, on a fresh Debian 12 machine:
#   make demo    installs what is missing, builds, runs trove's main job on the sample trace
#   make check   installs what is missing, builds, runs every test (plain and ASan+UBSan,
#                and the threaded store, stream and capture tests under TSan)
# and long ones that stay out of `make check`:
#   make bench   the benchmarks (docs/BENCHMARKS.md records their output)
#   make soak    ten minutes of live capture at 1 M events/s, with viewers coming and going,
#                a stalled one, a garbage producer and a kill -9 (SOAK_SECONDS=N: shorter)
#   make fuzz    libFuzzer campaigns over every fuzz target (FUZZ_SECONDS each, or
#                FUZZ_RUNS executions each; FUZZ_TARGETS="fuzz_http fuzz_import" picks some),
#                and, unless FUZZ_TARGETS picks some, the long crash-state enumeration first
# and `make install` (PREFIX=/usr/local, DESTDIR= for staging), `make uninstall`.

SHARED_DATA  ?= $(abspath ../shared/data)
SAMPLE       := $(SHARED_DATA)/chrome-trace-dom.json.zst
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 300
# FUZZ_RUNS=N runs each target for N executions instead of FUZZ_SECONDS; FUZZ_TARGETS names
# the targets (default: every fuzz/fuzz_*.c); FUZZ_FLAGS adds libFuzzer flags.
FUZZ_RUNS    ?=
FUZZ_TARGETS ?= $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_FLAGS   ?=
PREFIX       ?= /usr/local
DESTDIR      ?=
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages trove builds, tests and benchmarks with (docs/DEPENDENCIES.md says why),
# and the ones only `make fuzz` needs.
DEB_PACKAGES  := build-essential cmake pkg-config libdeflate-dev zlib1g-dev libzstd-dev libsnappy-dev \
                 liblz4-dev liblzma-dev libbrotli-dev libstreamvbyte-dev libxxhash-dev libzip-dev libjansson-dev zstd python3 \
                 protobuf-compiler libcurl4-openssl-dev libssl-dev libdw-dev libelf-dev \
                 curl chromium \
                 swift-proxy swift-account swift-container swift-object memcached s3cmd xxhash
FUZZ_PACKAGES := clang libclang-rt-14-dev

BUILD      := build
BUILD_ASAN := build-asan
BUILD_TSAN := build-tsan
BUILD_FUZZ := build-fuzz
# The tests that run threaded code (the store's put pool and S3 uploads, streaming, the
# client's rings), also run under TSan.
TSAN_TESTS := test_volume|test_volume_v3|test_volume_v4|test_crash|test_backend_s3|test_stream|test_stream_fault|test_capture|test_capture_store|test_capture_objects|test_capture_live|test_capture_live_names|test_summary|test_input_service|test_net|test_serve|test_serve_faults|test_serve_stop|test_client|test_client_attrs|cli_serve|cli_stop|cli_api|cli_guard|cli_store|cli_capture|cli_client|cli_client_signals|cli_client_stop|cli_s3|cli_summary
TROVE      := $(BUILD)/trove
DEMO       := $(BUILD)/demo
# The benchmark peers (lz4, xz, brotli, streamvbyte) are built into trove, and loaded when a
# benchmark runs, only for the targets that show them, `make bench` and `make demo`
# (BENCH_PEERS=ON on any other target asks for them too); `make build` and `make check`
# build trove without them.
BENCH_PEERS ?= OFF
bench demo: BENCH_PEERS := ON

# The builds show only warnings and errors: no configure chatter, no per-file progress and
# no "Entering directory" lines from the make that cmake runs under this one. V=1 shows it all.
ifeq ($(V),1)
CMAKE_MESSAGES := -DCMAKE_RULE_MESSAGES=ON -DCMAKE_TARGET_MESSAGES=ON
CONFIGURE_OUT  :=
BUILD_FLAGS    :=
BUILD_SHOWS    := every step
else
CMAKE_MESSAGES := -DCMAKE_RULE_MESSAGES=OFF -DCMAKE_TARGET_MESSAGES=OFF
CONFIGURE_OUT  := >/dev/null
BUILD_FLAGS    := -- --no-print-directory
BUILD_SHOWS    := only warnings and errors; V=1 shows every step
endif
# A step's heading: $(STEP) "what it does".
STEP := @printf '\n== %s\n'

.PHONY: all deps deps-fuzz build build-asan build-tsan check check-plain check-asan check-tsan \
        demo bench soak fuzz crash-states clean deps-npm deps-node install uninstall

all: build

# Install only what is missing; apt-get update first, as a fresh machine has no lists.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PACKAGES))

deps-fuzz: deps
	$(call install_missing,$(FUZZ_PACKAGES))

# Node (Debian's nodejs and npm, only if node or npm is missing) and, from the committed
# lockfile, DuckDB: the independent Parquet reader and writer of the interop tests and the
# parquet benchmark (tools/duckdb/duckdb_tool.md). npm ci reruns only when the lockfile changes.
# Also playwright-core, which drives Debian's chromium in the viewer's tests and benchmark
# (tests/browser/; it downloads no browser).
DUCKDB_STAMP := tools/duckdb/node_modules/.stamp
BROWSER_STAMP := tests/browser/node_modules/.stamp

deps-npm: $(DUCKDB_STAMP) $(BROWSER_STAMP)

$(DUCKDB_STAMP): tools/duckdb/package-lock.json tools/duckdb/package.json | deps-node
	npm ci --prefix tools/duckdb --no-audit --no-fund
	@touch $@

$(BROWSER_STAMP): tests/browser/package-lock.json tests/browser/package.json | deps-node
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix tests/browser --no-audit --no-fund
	@touch $@

deps-node: deps
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "installing: nodejs npm"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends nodejs npm; \
	fi

build: deps
	@echo "== build: $(BUILD)/ (Release; $(BUILD_SHOWS))"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTROVE_SHARED_DATA=$(SHARED_DATA) \
	  -DTROVE_BENCH_PEERS=$(BENCH_PEERS) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_MESSAGES) \
	  $(CONFIGURE_OUT)
	@cmake --build $(BUILD) -j $(JOBS) $(BUILD_FLAGS)

build-asan: deps
	$(STEP) "build: $(BUILD_ASAN)/ (Debug, ASan and UBSan)"
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DTROVE_SANITIZE=ON \
	  -DTROVE_SHARED_DATA=$(SHARED_DATA) $(CMAKE_MESSAGES) $(CONFIGURE_OUT)
	@cmake --build $(BUILD_ASAN) -j $(JOBS) $(BUILD_FLAGS)

build-tsan: deps
	$(STEP) "build: $(BUILD_TSAN)/ (TSan, the threaded code's tests)"
	@cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROVE_TSAN=ON \
	  -DTROVE_SHARED_DATA=$(SHARED_DATA) $(CMAKE_MESSAGES) $(CONFIGURE_OUT)
	@cmake --build $(BUILD_TSAN) -j $(JOBS) --target trove test_volume test_volume_v3 test_volume_v4 test_crash \
	  test_backend_s3 test_stream test_stream_fault test_capture test_capture_store test_capture_objects \
	  test_capture_live test_capture_live_names test_summary test_input_service test_net test_serve \
	  test_serve_faults test_serve_stop test_client test_client_attrs \
	  trove-example-sort trove-test-client-stop $(BUILD_FLAGS)

check-plain: build deps-npm
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

check-asan: build-asan deps-npm
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

check-tsan: build-tsan
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir $(BUILD_TSAN) --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS))$$'

check: check-plain check-asan check-tsan

# The binary, libtrove and libtrove-client (.a, and .so with a versioned soname), the
# headers and the .pc files into $(DESTDIR)$(PREFIX), in the GNUInstallDirs layout for
# PREFIX: `make build` configures build/ with it, so that the library directory is the one
# that prefix calls for (lib under /usr/local, lib/<multiarch triplet> under /usr on
# Debian). What was installed, DESTDIR included (cmake's install_manifest.txt leaves it
# out), is kept for `make uninstall`.
INSTALLED := $(BUILD)/installed_files.txt

install: build
	$(STEP) "install: $(BUILD)/ into $(DESTDIR)$(PREFIX)"
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)
	@sed 's|^|$(DESTDIR)|' $(BUILD)/install_manifest.txt > $(INSTALLED)

# What the last `make install` installed, and its include/trove/ if that leaves it empty.
uninstall:
	@test -f $(INSTALLED) || { echo "make uninstall: no $(INSTALLED): nothing was installed from $(BUILD)/"; exit 1; }
	$(STEP) "uninstall: the files $(INSTALLED) lists"
	@tr '\n' '\0' < $(INSTALLED) | xargs -0 rm -fv
	@d=$$(sed -n 's|/trove/[^/]*\.h$$|/trove|p' $(INSTALLED) | head -n 1); \
	  if [ -d "$$d" ]; then rmdir --ignore-fail-on-non-empty "$$d"; fi
	@rm -f $(INSTALLED)

# The Chrome trace is read once, by the first convert (which says what it drops, once); every
# later step reads trove's packed stream of it, so the replay is checked against what went in.
demo: build
	@test -f $(SAMPLE) || { echo "make demo: the sample trace $(SAMPLE) is missing"; exit 1; }
	@mkdir -p $(DEMO)
	$(STEP) "import: the sample Chrome trace to trove's packed and packed+deflate wire formats"
	zstd -dqf $(SAMPLE) -o $(DEMO)/trace.json
	$(TROVE) convert $(DEMO)/trace.json $(DEMO)/trace.packed --wire packed
	$(TROVE) convert $(DEMO)/trace.packed $(DEMO)/trace.deflate --wire deflate
	$(STEP) "live: trove serve, the trace recorded in real time by two producers, a viewer watching"
	@bash tools/demo_live.sh $(TROVE) $(DEMO)/trace.packed $(DEMO)
	$(STEP) "cat: its first events, read back from the deflate stream"
	$(TROVE) cat $(DEMO)/trace.deflate --limit 5
	$(STEP) "bench wire: its first 65,536 events on the wire, trove's formats next to zlib, zstd, lz4, xz and brotli"
	$(TROVE) bench wire --input $(DEMO)/trace.packed --events 65536
	$(STEP) "store: the trace as deduplicating volumes of 64 KiB blocks, then every block verified"
	$(TROVE) volume put trace.json $(DEMO)/trace.json --block-size 64K --store $(DEMO)/store
	$(TROVE) volume put trace.packed $(DEMO)/trace.packed --block-size 64K --store $(DEMO)/store
	$(TROVE) volume info trace.json --store $(DEMO)/store
	$(TROVE) verify --deep --store $(DEMO)/store
	$(STEP) "export: the trace as a bundle of Parquet tables and as a Perfetto trace, and imported back"
	$(TROVE) export $(DEMO)/trace.packed -o $(DEMO)/trace.bundle
	$(TROVE) export $(DEMO)/trace.packed -o $(DEMO)/trace.pftrace --format perfetto
	$(TROVE) import $(DEMO)/trace.bundle -o $(DEMO)/trace.imported --wire packed
	$(STEP) "capture: the trace in the store as a capture; the bundle again stores only its names"
	$(TROVE) import $(DEMO)/trace.packed --name trace --store $(DEMO)/store
	$(TROVE) import $(DEMO)/trace.bundle --name trace --store $(DEMO)/store
	$(TROVE) ls --store $(DEMO)/store
	$(STEP) "replay: the capture through the prefetching pipeline, compared event by event"
	$(TROVE) replay trace --wire packed -o $(DEMO)/trace.replayed --store $(DEMO)/store
	@$(TROVE) cat $(DEMO)/trace.packed > $(DEMO)/trace.txt
	@$(TROVE) cat $(DEMO)/trace.replayed > $(DEMO)/trace.replayed.txt
	@cmp $(DEMO)/trace.txt $(DEMO)/trace.replayed.txt && \
	  echo "every event and name of the trace came back out of the store"
	$(TROVE) ls --store $(DEMO)/store
	$(STEP) "bench stream: replay from a store 20 ms away: serial, prefetch, prefetch + sender"
	$(TROVE) bench stream --segments 16 --segment-mib 1 --rounds 1
	$(STEP) "browse: the demo's captures (demo and sort recorded live, trace imported) in the viewer"
	@echo "  $(TROVE) serve --store $(DEMO)/store"
	@echo "then open http://127.0.0.1:7700/ (Ctrl-C stops the service)"

bench: build deps-npm
	@mkdir -p $(DEMO)
	zstd -dqf $(SAMPLE) -o $(DEMO)/trace.json
	$(TROVE) bench wire
	$(TROVE) bench wire --input $(DEMO)/trace.json --input-format chrome-json
	$(TROVE) bench bitpack
	$(TROVE) bench put
	bash bench/replay_verify.sh $(TROVE) $(DEMO)/trace.json
	$(TROVE) bench recipe
	$(TROVE) bench parquet
	$(TROVE) bench stream
	$(TROVE) bench stream --depth 4
	$(TROVE) bench stream --latency-ms 0
	$(TROVE) bench serve --rate 1000000 --events 10000000
	$(TROVE) bench serve --max
	bash bench/api_bench.sh $(TROVE) $(DEMO)/trace.json 15
	bash bench/guard_bench.sh $(TROVE) 5 3
	bash bench/export_bench.sh $(TROVE) "" 20M 5
	bash bench/stream_bench.sh $(TROVE) 200M
	bash bench/summary_bench.sh $(TROVE) 1G
	bash bench/viewer_bench.sh $(TROVE) $(DEMO)
	bash bench/find_bench.sh $(TROVE) $(DEMO) $(DEMO)/trace.json
	bash bench/frames_bench.sh $(TROVE) $(DEMO) $(DEMO)/trace.json
	bash bench/diff_bench.sh $(TROVE) $(DEMO) $(SAMPLE)
	bash bench/bundle_codec.sh $(TROVE) . $(SAMPLE)
	bash bench/startup_bench.sh $(TROVE)

# The long run (bench/soak.sh; docs/RELIABILITY.md, "Soak"): the service for SOAK_SECONDS
# (default 600) at 1 M events/s from 4 producers of libtrove-client, a viewer joining and
# leaving every second, a stalled viewer, a garbage producer every 10 s, a kill -9 and a
# restart at half time; sent vs committed vs delivered, drops, RSS and open fds over time,
# verify --deep. The report is printed and kept with the run's files in SOAK_DIR (default a
# new /tmp/trove-soak-XXXXXX); the exit status says whether every criterion held.
soak: build
	bash bench/soak.sh $(TROVE)

# The crash states of tests/unit/test_io_faults.c on bigger volumes (about 5 minutes).
crash-states: build
	TROVE_IO_FAULTS_LONG=1 $(BUILD)/test_io_faults | grep -v '^ok'

# Each target's libFuzzer output goes to $(BUILD_FUZZ)/TARGET.log; what is printed is its
# end (-print_final_stats) and a line of executions, time and rate. A crash stops the run,
# its input in $(BUILD_FUZZ)/TARGET-crash-*. fuzz/TARGET.dict is its dictionary and
# fuzz/TARGET.flags (one libFuzzer flag a line, '#' comments) its own flags. The crash
# states run too, before the targets, unless FUZZ_TARGETS picked some.
fuzz: deps-fuzz $(if $(filter command line environment,$(origin FUZZ_TARGETS)),,crash-states)
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROVE_FUZZ=ON \
	  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do \
	  [ -f fuzz/$$t.c ] || { echo "make fuzz: no fuzz/$$t.c"; exit 1; }; \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$t; \
	  if [ -n "$(FUZZ_RUNS)" ]; then limit=-runs=$(FUZZ_RUNS); what="$(FUZZ_RUNS) executions"; \
	  else limit=-max_total_time=$(FUZZ_SECONDS); what="$(FUZZ_SECONDS) s"; fi; \
	  echo "== $$t for $$what (new inputs in $(BUILD_FUZZ)/corpus/$$t, log in $(BUILD_FUZZ)/$$t.log)"; \
	  dict=""; [ -f fuzz/$$t.dict ] && dict="-dict=fuzz/$$t.dict"; \
	  flags=""; [ -f fuzz/$$t.flags ] && flags=$$(grep -v '^#' fuzz/$$t.flags); \
	  start=$$(date +%s); \
	  $(BUILD_FUZZ)/$$t $$limit -print_final_stats=1 $$dict $$flags $(FUZZ_FLAGS) \
	    -artifact_prefix=$(BUILD_FUZZ)/$$t- $(BUILD_FUZZ)/corpus/$$t fuzz/corpus/$$t \
	    > $(BUILD_FUZZ)/$$t.log 2>&1; rc=$$?; \
	  secs=$$(( $$(date +%s) - start )); \
	  grep -E '^(#[0-9]+ +DONE|stat::|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written|.*check failed)' \
	    $(BUILD_FUZZ)/$$t.log; \
	  execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(BUILD_FUZZ)/$$t.log); \
	  echo "== $$t: $${execs:-?} executions in $$secs s ($$(( $${execs:-0} / ($$secs > 0 ? $$secs : 1) )) per second), exit $$rc"; \
	  [ $$rc -eq 0 ] || exit 1; \
	done

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ)
