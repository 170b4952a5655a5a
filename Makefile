# trove's two commands, on a fresh Debian 12 machine:
#   make demo    installs what is missing, builds, runs trove's main job on the sample trace
#   make check   installs what is missing, builds, runs every test (plain and ASan+UBSan,
#                and the threaded store, stream and capture tests under TSan)
# and two long ones that stay out of `make check`:
#   make bench   the benchmarks (docs/BENCHMARKS.md records their output)
#   make fuzz    libFuzzer campaigns over every fuzz target (FUZZ_SECONDS each)

SHARED_DATA  ?= $(abspath ../shared/data)
SAMPLE       := $(SHARED_DATA)/chrome-trace-dom.json.zst
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 300
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages trove builds, tests and benchmarks with (docs/DEPENDENCIES.md says why),
# and the ones only `make fuzz` needs.
DEB_PACKAGES  := build-essential cmake pkg-config libdeflate-dev zlib1g-dev libzstd-dev \
                 liblz4-dev libstreamvbyte-dev libxxhash-dev libzip-dev libjansson-dev zstd python3 \
                 protobuf-compiler
FUZZ_PACKAGES := clang libclang-rt-14-dev

BUILD      := build
BUILD_ASAN := build-asan
BUILD_TSAN := build-tsan
BUILD_FUZZ := build-fuzz
# The tests that run threaded code (the store's put pool, streaming), also run under TSan.
TSAN_TESTS := test_volume|test_crash|test_stream|test_capture|cli_store|cli_capture
TROVE      := $(BUILD)/trove

.PHONY: all deps deps-fuzz build build-asan build-tsan check check-plain check-asan check-tsan \
        demo bench fuzz clean deps-npm deps-node

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
DUCKDB_STAMP := tools/duckdb/node_modules/.stamp

deps-npm: $(DUCKDB_STAMP)

$(DUCKDB_STAMP): tools/duckdb/package-lock.json tools/duckdb/package.json | deps-node
	npm ci --prefix tools/duckdb --no-audit --no-fund
	@touch $@

deps-node: deps
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "installing: nodejs npm"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends nodejs npm; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DTROVE_SHARED_DATA=$(SHARED_DATA)
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DTROVE_SANITIZE=ON -DTROVE_SHARED_DATA=$(SHARED_DATA)
	cmake --build $(BUILD_ASAN) -j $(JOBS)

build-tsan: deps
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROVE_TSAN=ON -DTROVE_SHARED_DATA=$(SHARED_DATA)
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target trove test_volume test_crash test_stream test_capture

check-plain: build deps-npm
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

check-asan: build-asan deps-npm
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

check-tsan: build-tsan
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir $(BUILD_TSAN) --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS))$$'

check: check-plain check-asan check-tsan

demo: build
	@test -f $(SAMPLE) || { echo "make demo: the sample trace $(SAMPLE) is missing"; exit 1; }
	@mkdir -p $(BUILD)/demo
	zstd -dqf $(SAMPLE) -o $(BUILD)/demo/trace.json
	$(TROVE) convert $(BUILD)/demo/trace.json $(BUILD)/demo/trace.packed --to packed
	$(TROVE) convert $(BUILD)/demo/trace.packed $(BUILD)/demo/trace.deflate --to deflate
	$(TROVE) cat $(BUILD)/demo/trace.deflate --limit 5
	$(TROVE) bench wire --input $(BUILD)/demo/trace.json --input-format chrome-json
	$(TROVE) volume put trace.json $(BUILD)/demo/trace.json --block-size 64K --store $(BUILD)/demo/store
	$(TROVE) volume put trace.packed $(BUILD)/demo/trace.packed --block-size 64K --store $(BUILD)/demo/store
	$(TROVE) volume info trace.json --store $(BUILD)/demo/store
	$(TROVE) verify --deep --store $(BUILD)/demo/store
	$(TROVE) export $(BUILD)/demo/trace.json -o $(BUILD)/demo/trace.bundle
	$(TROVE) import $(BUILD)/demo/trace.bundle -o $(BUILD)/demo/trace.imported --to packed
	$(TROVE) import $(BUILD)/demo/trace.json --name trace --store $(BUILD)/demo/store
	$(TROVE) import $(BUILD)/demo/trace.bundle --name trace --store $(BUILD)/demo/store
	$(TROVE) ls --store $(BUILD)/demo/store
	$(TROVE) replay trace --wire packed -o $(BUILD)/demo/trace.replayed --store $(BUILD)/demo/store
	$(TROVE) cat $(BUILD)/demo/trace.json > $(BUILD)/demo/trace.txt 2> /dev/null
	$(TROVE) cat $(BUILD)/demo/trace.replayed > $(BUILD)/demo/trace.replayed.txt
	cmp $(BUILD)/demo/trace.txt $(BUILD)/demo/trace.replayed.txt && echo "replay: every event and name of the trace came back out of the store"
	$(TROVE) ls --store $(BUILD)/demo/store
	$(TROVE) bench stream --segments 16 --segment-mib 1 --rounds 1

bench: build deps-npm
	@mkdir -p $(BUILD)/demo
	zstd -dqf $(SAMPLE) -o $(BUILD)/demo/trace.json
	$(TROVE) bench wire
	$(TROVE) bench wire --input $(BUILD)/demo/trace.json --input-format chrome-json
	$(TROVE) bench bitpack
	$(TROVE) bench put
	bash bench/replay_verify.sh $(TROVE) $(BUILD)/demo/trace.json
	$(TROVE) bench recipe
	$(TROVE) bench parquet
	$(TROVE) bench stream
	$(TROVE) bench stream --depth 4
	$(TROVE) bench stream --latency-ms 0

fuzz: deps-fuzz
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROVE_FUZZ=ON \
	  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	@for f in fuzz/fuzz_*.c; do t=$$(basename $$f .c); \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$t; \
	  echo "== $$t for $(FUZZ_SECONDS) s (new inputs in $(BUILD_FUZZ)/corpus/$$t)"; \
	  dict=""; [ -f fuzz/$$t.dict ] && dict="-dict=fuzz/$$t.dict"; \
	  $(BUILD_FUZZ)/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$dict \
	    -artifact_prefix=$(BUILD_FUZZ)/ $(BUILD_FUZZ)/corpus/$$t fuzz/corpus/$$t || exit 1; \
	done

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ)
