# rcanvas — top-level commands. `make demo` and `make test` install what they need on Debian 12 (apt packages,
# npm packages) and build with CMake. Everything builds out of tree in build/ (build-asan/ for sanitizers, build-cpu/
# without Vulkan).

APT_PACKAGES := build-essential cmake pkg-config libwebsockets-dev libcjson-dev libturbojpeg0-dev libspng-dev \
                zlib1g-dev chromium libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslc \
                libopenh264-dev libvpx-dev libyuv-dev libwebp-dev libaom-dev libdav1d-dev
# make bench-vnc only (make test does not need them): TigerVNC's X server, noVNC and websockify, and the X11 headers
# of its frame player (bench-x11-player, built when they are there).
BENCH_VNC_PACKAGES := tigervnc-standalone-server novnc websockify libx11-dev libxext-dev
# Node.js: Debian's nodejs + npm only where no node is installed yet (an existing Node.js 20 ships its own npm).
NODE_PACKAGES := $(shell command -v node >/dev/null 2>&1 || echo nodejs npm)
JOBS ?= $(shell nproc)
PORT ?= 8080
DEMO_ARGS ?=
# The shared frame corpus, optional: the tests run on their own generated frames and on these in addition when the
# folder exists; the benchmarks run on these, else on generated frames of the same sizes (BENCH_FRAMES).
FRAMES ?= $(abspath ../shared/frames)
BENCH_FRAMES = $(if $(wildcard $(FRAMES)/*.png),$(FRAMES),$(abspath build/testframes))
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# No "Entering/Leaving directory" lines from CMake's nested makes (28 of the 45 lines of a no-op make build);
# the flag travels to them through MAKEFLAGS.
MAKEFLAGS += --no-print-directory
# Configure build/ (silent unless something is wrong: CMake's warnings and errors go to stderr).
CONFIGURE := cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRCANVAS_FRAMES_DIR=$(FRAMES) >/dev/null

.PHONY: all deps build build-asan build-cpu demo test test-c test-asan test-cpu-only test-browser bench bench-frames bench-encode bench-video bench-vk bench-jpeg-gpu bench-e2e bench-shaped bench-deps bench-vnc clean

all: build

# Installs missing Debian packages (only those missing: a no-op when all are there).
deps:
	@missing=""; for p in $(APT_PACKAGES) $(NODE_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

build: deps
	$(CONFIGURE)
	cmake --build build -j $(JOBS)

build-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRCANVAS_SANITIZE=ON -DRCANVAS_FRAMES_DIR=$(FRAMES) >/dev/null
	cmake --build build-asan -j $(JOBS)

# CPU-only: the library and everything in-tree without Vulkan (RCANVAS_VULKAN=OFF).
build-cpu: deps
	cmake -S . -B build-cpu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRCANVAS_VULKAN=OFF -DRCANVAS_FRAMES_DIR=$(FRAMES) >/dev/null
	cmake --build build-cpu -j $(JOBS)

# Runs the demo; prints the URL (with its token) to open in a browser. Ctrl-C stops it. Builds only the library
# and the demo, without echoing commands, so that the URL is not lost in build output (compiler warnings and
# errors still show; an up-to-date tree prints three "Built target" lines).
demo: deps
	@$(CONFIGURE)
	@cmake --build build -j $(JOBS) --target rcanvas-demo
	@./build/rcanvas-demo --port $(PORT) $(DEMO_ARGS)

tests/browser/node_modules: tests/browser/package.json tests/browser/package-lock.json
	cd tests/browser && npm ci --no-audit --no-fund
	touch $@

test-c: build
	cd build && ctest --output-on-failure

test-asan: build-asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
	  ctest --output-on-failure

# The CPU-only build works: its librcanvas.so needs no libvulkan, and the installed-library test and the quick C
# tests pass against it (test_soak and test_encode do not touch the Vulkan code and ran in test-c already).
test-cpu-only: build-cpu
	@if ldd build-cpu/librcanvas.so | grep -i vulkan; then echo "build-cpu/librcanvas.so needs libvulkan"; exit 1; fi
	cd build-cpu && ctest --output-on-failure --no-tests=error -E '^test_(soak|encode)$$'

test-browser: build tests/browser/node_modules
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) RCANVAS_FRAMES_DIR=$(FRAMES) \
	  node --test --test-concurrency=1 *.test.mjs

# All tests: C unit tests (and the installed library), the CPU-only build, the C tests under ASan+UBSan, then the
# browser tests in headless Chromium.
test: test-c test-cpu-only test-asan test-browser

# Without the corpus: every kind of generated frame at 1920x1080 and 3840x2160 (the sizes the benchmarks expect),
# written afresh into build/testframes by rcanvas-testframes (deterministic, about a second).
bench-frames: build
	@if [ "$(BENCH_FRAMES)" = "$(FRAMES)" ]; then echo "benchmark frames: $(FRAMES)"; else \
	  echo "benchmark frames: no corpus at $(FRAMES); generated frames in $(BENCH_FRAMES)"; \
	  ./build/rcanvas-testframes $(BENCH_FRAMES) $(foreach k,plot text gradient heatmap noise,$(k)-1920x1080 $(k)-3840x2160) >/dev/null; \
	fi

bench-encode: bench-frames
	./build/bench-encode --runs 31 $(BENCH_FRAMES)

# Video codecs (H.264, …) against JPEG on moving 1080p sequences panned and zoomed over the benchmark frames: bytes,
# Y PSNR, encode ms; JPEG bytes at equal PSNR.
bench-video: bench-frames
	./build/bench-video $(BENCH_FRAMES)

# Vulkan readback ring per depth, with and without encoding (on this machine: lavapipe; see docs/benchmarks.md
# for the H200 run).
bench-vk: bench-frames
	./build/bench-vk --frames 200 $(BENCH_FRAMES)

# The Vulkan compute JPEG encoder per stage, beside libturbojpeg (few frames: on lavapipe each takes 0.1-0.5 s;
# the H200 figures in docs/benchmarks.md use --frames 300).
bench-jpeg-gpu: bench-frames
	./build/bench-jpeg-gpu --frames 10 $(BENCH_FRAMES)

bench-e2e: build tests/browser/node_modules
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) node bench_e2e.mjs

# The demo through a shaped link (tests/browser/shaper.mjs): 20 Mbit/s / 40 ms and 4 Mbit/s / 80 ms, JPEG and H.264.
bench-shaped: build tests/browser/node_modules
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) node bench_shaped.mjs

# The benchmarks' own packages (BENCH_VNC_PACKAGES), installed as deps installs the build's: only those missing.
bench-deps: deps
	@missing=""; for p in $(BENCH_VNC_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

# rcanvas against TigerVNC + noVNC, side by side (tests/browser/bench_vnc.mjs): the corpus's 1920x1080 frames at
# 30 fps, loopback, 20 Mbit/s / 40 ms and 4 Mbit/s / 80 ms; fps, Mbit/s, PSNR, click-to-pixels latency.
# BENCH_VNC_ARGS="--help" lists the options (links, codecs, noVNC's quality/compression pairs, seconds).
BENCH_VNC_ARGS ?=
bench-vnc: bench-deps tests/browser/node_modules
	$(CONFIGURE)
	cmake --build build -j $(JOBS) --target rcanvas-demo bench-x11-player
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) RCANVAS_FRAMES_DIR=$(FRAMES) node bench_vnc.mjs $(BENCH_VNC_ARGS)

# Benchmarks print figures (nothing is asserted): encoders over the corpus, then the end-to-end run.
bench: bench-encode bench-video bench-vk bench-jpeg-gpu bench-e2e

clean:
	rm -rf build build-asan build-cpu
