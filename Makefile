# tensio — top-level entry points. `make demo` and `make test` do everything:
# install missing Debian packages, configure, build, run.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
BENCH_BUILD ?= build-bench
REL_BUILD  ?= build-release
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 20
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps configure build test test-main test-release test-asan test-tsan test-fuzz fuzz \
        fuzz-build demo \
        install clean help bench

all: build

help:
	@echo "make demo      install deps, build, run the demo"
	@echo "make test      install deps, build, run every test, build the Release tree (make"
	@echo "               test-release), run again under ASan+UBSan and under ThreadSanitizer"
	@echo "               (make test-tsan), then the fuzz targets"
	@echo "make fuzz      run every libFuzzer target FUZZ_SECONDS (default 300) each,"
	@echo "               keeping new inputs in fuzz/corpus/"
	@echo "make bench     build bench/tio_bench (Release), generate data, run every case,"
	@echo "               write bench/results/latest.md and latest.png (docs/performance.md)"
	@echo "make build     build build/tensio, build/libtensio.so, build/libtensio.a"
	@echo "make install   install (PREFIX=$(PREFIX), DESTDIR honoured)"
	@echo "make clean     remove build trees"

deps:
	@bash scripts/install-deps.sh
	@bash scripts/install-ort.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIO_WERROR=ON \
	  -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

test: test-main test-release test-asan test-tsan test-fuzz

test-main: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# The library, the CLI and tio_bench built as `make bench` builds them (gcc,
# Release: -O3, whose deeper analysis finds warnings -O2 does not, such as a
# format that may truncate), warnings as errors. Built, not run: the suite ran
# in the main build.
test-release: deps
	cmake -S . -B $(REL_BUILD) -DCMAKE_BUILD_TYPE=Release -DTIO_WERROR=ON \
	  -DTIO_BUILD_TESTS=OFF -DTIO_BUILD_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(REL_BUILD) -j$(JOBS) --target tensio_shared tensio_static tensio_cli tio_bench

# The same suite built with clang under AddressSanitizer + UndefinedBehaviorSanitizer
# (at -O1, its executables not position-independent: CMakeLists.txt says why).
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	  -DTIO_SANITIZE=ON -DTIO_WERROR=ON $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS)

# The same suite built with clang under ThreadSanitizer (the thread tests:
# tests/core/test_threads.c, tests/transport/test_stream_threads.c; the
# library's own thread in every ONNX -> rten test). Any report fails the test
# that made it (halt_on_error, exit code 66). tests/tsan.supp suppresses
# libzmq's internals only. The interop tests labelled no-tsan are left to
# the other two stages (tests/CMakeLists.txt says why). No Python package here: Debian's python3 cannot
# load the ThreadSanitizer runtime (python/tests/test_threads.py runs in the
# other two builds).
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTIO_TSAN=ON -DTIO_WERROR=ON -DTIO_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(TSAN_BUILD) -j$(JOBS)
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  ctest --test-dir $(TSAN_BUILD) --output-on-failure -j$(JOBS) -LE no-tsan

# libFuzzer targets (clang, ASan+UBSan): the regression inputs, then a short
# smoke of every target from the vectors' seeds.
fuzz-build: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTIO_FUZZ=ON -DTIO_WERROR=ON $(CMAKE_ARGS)
	cmake --build $(FUZZ_BUILD) -j$(JOBS)

# libFuzzer's -timeout is wall-clock time: 20 s per input here (2 s in make
# fuzz), far above what an input needs, so a loaded machine fails nothing.
test-fuzz: fuzz-build
	FUZZ_TIMEOUT=20 bash fuzz/run.sh $(FUZZ_BUILD) regress
	FUZZ_TIMEOUT=20 bash fuzz/run.sh $(FUZZ_BUILD) smoke $(FUZZ_SMOKE_SECONDS)

fuzz: fuzz-build
	bash fuzz/run.sh $(FUZZ_BUILD) long $(FUZZ_SECONDS)

# Benchmarks: a Release build of its own, data generated under BENCH_DIR
# (default $(BENCH_BUILD)/data), results in bench/results/. Never run by make test.
bench: deps
	@bash scripts/install-deps.sh --bench
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DTIO_WERROR=ON \
	  -DTIO_BUILD_TESTS=OFF $(CMAKE_ARGS)
	cmake --build $(BENCH_BUILD) -j$(JOBS) --target tio_bench tensio_cli
	# the Python package for the python and shards cases, where python/ builds it
	# (python3-dev and NumPy present; else those cases say they were skipped)
	cmake --build $(BENCH_BUILD) -j$(JOBS) --target tensio_python_files 2>/dev/null || true
	bash bench/run.sh $(BENCH_BUILD)

demo: build
	@bash scripts/demo.sh $(BUILD)/tensio

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(REL_BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) $(BENCH_BUILD)
