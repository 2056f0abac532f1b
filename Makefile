# rcanvas — top-level commands. `make demo` and `make test` install what they need on Debian 12 or 13 (apt packages,
# npm packages) and build with CMake. Everything builds out of tree in build/ (build-asan/ for sanitizers, build-cpu/
# without Vulkan).

# What `make demo` needs (demo-deps): the compiler and CMake, the library's own libraries, its codecs, and the Vulkan
# headers and glslc (build/ is configured once, and RCANVAS_VULKAN is decided then: a build/ configured without them
# would stay CPU-only for `make test` too). Running the demo with --gpu also needs a Vulkan driver (DEMO_VK_DRIVER).
DEMO_APT_PACKAGES := build-essential cmake pkg-config libwebsockets-dev libcjson-dev libturbojpeg0-dev libspng-dev \
                zlib1g-dev libssl-dev libvulkan-dev glslc \
                libopenh264-dev libvpx-dev libyuv-dev libwebp-dev libaom-dev
# What the tests need on top (deps): headless Chromium for the browser tests, Mesa's lavapipe and the validation
# layers for the Vulkan tests, dav1d (the AV1 decoder of test_av1), curl and openssl (test_h2c_curl, test_cli),
# clang and its runtime (the fuzz targets), nginx and haproxy (tests/browser/nginx.test.mjs runs deploy/'s proxy
# configurations in front of two servers; it starts them itself, on free ports, and the Debian services they come
# with are not used), Debian's Python test modules, and Node.js (NODE_PACKAGES).
# For the SFU (tests/browser/janus.test.mjs, make bench-sfu): Janus with its streaming plugin (janus), its browser
# library janus.js (libjs-janus-gateway, MIT) and webrtc-adapter (libjs-webrtc-adapter, which janus.js needs) for
# the SFU viewer page, and nginx, the web front that serves that page and proxies the Janus API (deploy/janus/).
# libavcodec-dev, a second H.264 decoder that test_h264_gpu checks the GPU encoder's streams with.
# libzstd-dev: the static link of test_install and `make check` (OpenSSL 3.5's libcrypto.pc, Debian 13, names
# -lzstd among its private libraries).
TEST_APT_PACKAGES := chromium mesa-vulkan-drivers vulkan-validationlayers libdav1d-dev curl openssl \
                clang libclang-rt-dev nginx haproxy \
                python3-numpy python3-pytest python3-uvicorn python3-pil python3-pip python3-setuptools \
                python3-wheel python3-venv python3-pytest-timeout \
                libjs-webrtc-adapter libavcodec-dev libzstd-dev
# Installed where the release has them, else left out (apt installs nothing at all when one name of a list is
# unknown): Debian 13 has no Janus. The tests that need them skip, saying what is missing.
OPTIONAL_TEST_APT_PACKAGES := janus libjs-janus-gateway
APT_PACKAGES := $(DEMO_APT_PACKAGES) $(TEST_APT_PACKAGES)
# The demo's --gpu renders with Vulkan: a driver (Mesa's, lavapipe on the CPU where there is no GPU).
DEMO_VK_DRIVER := $(if $(findstring --gpu,$(DEMO_ARGS)),mesa-vulkan-drivers)
# make bench-vnc only (make test does not need them): TigerVNC's X server, noVNC and websockify, and the X11 headers
# of its frame player (bench-x11-player, built when they are there).
BENCH_VNC_PACKAGES := tigervnc-standalone-server novnc websockify libx11-dev libxext-dev
# make bench-anchor only: x264 (GPL; linked into bench-anchor alone, never into the library) and libavcodec (to decode
# x264's high profile). Installed by bench-anchor-deps only, not by deps, bench-deps or bench-anchor.
BENCH_ANCHOR_PACKAGES := libx264-dev libavcodec-dev
# make test-python only: Jupyter's Notebook 6.4 and jupyter_server 1.23 with ipykernel, for the notebook tests
# (tests/python/notebook.test.mjs, test_jupyter.py, test_notebook.py), without their recommends (scipy, matplotlib,
# pandoc: about 50 more packages the tests do not use).
PYTHON_TEST_PACKAGES := python3-notebook python3-jupyter-server python3-ipykernel
# Node.js: Debian's nodejs (18 on Debian 12) where no node is installed yet, and Debian's npm where no npm is (an
# existing Node.js 20 from elsewhere ships its own npm). The browser tests need Node.js 18 or newer.
NODE_PACKAGES := $(shell command -v node >/dev/null 2>&1 || echo nodejs) $(shell command -v npm >/dev/null 2>&1 || echo npm)
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

.PHONY: check all deps demo-deps build build-asan build-cpu demo test test-c test-asan test-cpu-only test-browser fuzz test-fuzz fuzz-build bench bench-frames bench-encode bench-video bench-vk bench-vk-damage gpu-kit bench-jpeg-gpu bench-e2e bench-shaped bench-damage bench-fanout bench-deps bench-anchor-deps bench-anchor bench-vnc bench-sfu test-python python-test-deps bench-rendercanvas bench-notebook venv venv-lab bench-wgpu bench-pygfx wheel clean

all: build

# $(call apt_install,PACKAGES[,APT_OPTIONS]): installs those of PACKAGES that are missing (a no-op when all are there).
define apt_install
@missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
done; \
if [ -n "$$missing" ]; then \
  echo "Installing:$$missing"; \
  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $(2) $$missing; \
fi
endef

# $(call apt_install_optional,PACKAGES): installs those of PACKAGES that are missing and that apt has a candidate
# for (the package lists are updated first when one is missing and unknown), and names the others.
define apt_install_optional
@missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
done; \
if [ -n "$$missing" ]; then \
  has() { apt-cache policy "$$1" 2>/dev/null | grep -q 'Candidate: [^(]'; }; \
  for p in $$missing; do has $$p || { $(SUDO) apt-get update -q >/dev/null; break; }; done; \
  avail=""; for p in $$missing; do \
    if has $$p; then avail="$$avail $$p"; \
    else echo "note: $$p is not in this release's packages: the tests that need it skip"; fi; \
  done; \
  if [ -n "$$avail" ]; then echo "Installing:$$avail"; \
    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$avail; fi; \
fi
endef

# deps: everything the build and the tests need (the test targets use it). demo-deps: what `make demo` needs only.
deps:
	$(call apt_install,$(APT_PACKAGES) $(NODE_PACKAGES))
	$(call apt_install_optional,$(OPTIONAL_TEST_APT_PACKAGES))

demo-deps:
	$(call apt_install,$(DEMO_APT_PACKAGES) $(DEMO_VK_DRIVER))

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
demo: demo-deps
	@$(CONFIGURE)
	@cmake --build build -j $(JOBS) --target rcanvas-demo
	@./build/rcanvas-demo --port $(PORT) $(DEMO_ARGS)

# playwright-core is pinned to 1.61.1, the last release for Node.js 18 (Debian 12's); 1.62 and later need Node.js 20.
tests/browser/node_modules: tests/browser/package.json tests/browser/package-lock.json
	@v=$$(node -p 'process.versions.node' 2>/dev/null); case "$$v" in \
	  ""|1[0-7].*|[0-9].*) echo "The browser tests need Node.js 18 or newer; node is $${v:-not installed} here (Debian 12: apt-get install nodejs npm)"; exit 1;; \
	esac
	cd tests/browser && npm ci --no-audit --no-fund
	touch $@

test-c: build
	cd build && ctest --output-on-failure --timeout $(CTEST_TIMEOUT_S)

test-asan: build-asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp) \
	  ctest --output-on-failure --timeout $(CTEST_TIMEOUT_S)

# The CPU-only build works: its librcanvas.so needs no libvulkan, and the installed-library test and the quick C
# tests pass against it (test_soak and test_encode do not touch the Vulkan code and ran in test-c already).
test-cpu-only: build-cpu
	@if ldd build-cpu/librcanvas.so | grep -i vulkan; then echo "build-cpu/librcanvas.so needs libvulkan"; exit 1; fi
	cd build-cpu && ctest --output-on-failure --timeout $(CTEST_TIMEOUT_S) --no-tests=error -E '^test_(soak|encode)$$'

# Every node test file runs under tests/tools/node-tests.sh: a limit per test and per file, and what a file leaves
# running is killed, so that no test can hang the suite. ctest gives a test without a TIMEOUT of its own
# CTEST_TIMEOUT_S; pytest stops a test after PYTEST_TIMEOUT_S (pytest-timeout).
NODE_TESTS := $(abspath tests/tools/node-tests.sh)
CTEST_TIMEOUT_S ?= 600
PYTEST_TIMEOUT_S ?= 600

test-browser: build tests/browser/node_modules
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) RCANVAS_FRAMES_DIR=$(FRAMES) \
	  $(NODE_TESTS) *.test.mjs

# Python: the binding (python/rcanvas, over build/librcanvas.so) with pytest, then rendercanvas' own
# examples through `python3 -m rcanvas.rendercanvas` in headless Chromium, and a real notebook (Debian's Notebook
# 6.4, rcanvas.jupyter) in it. The rendercanvas tests skip, saying so, when ../shared/third_party/rendercanvas is
# absent. Debian's python3 only (pip cannot reach PyPI here). The other tests use the build tree's library
# (RCANVAS_LIBRARY); test_pip_install.py unsets it and runs `pip install --no-build-isolation ./python` into a
# temporary venv (it compiles its own librcanvas.so, once per run).
RENDERCANVAS_DIR ?= $(abspath ../shared/third_party/rendercanvas)
python-test-deps: deps
	$(call apt_install,$(PYTHON_TEST_PACKAGES),--no-install-recommends)

# The wgpu tests' venv (make venv): build/venv, a clean venv of Debian's python3 (no system site packages, so that
# neither Debian's numpy 1.24 nor its notebook packages mix with PyPI's wheels) with tests/python/requirements.txt's
# exact versions (wgpu, pygfx, fastplotlib, PyPI's rendercanvas, simplejpeg, pytest). wgpu renders on Mesa's
# lavapipe (mesa-vulkan-drivers). Needs PyPI; where pip cannot reach it, test-python goes on without the venv and
# the wgpu tests skip, saying so.
VENV := build/venv
$(VENV)/.installed: tests/python/requirements.txt
	@mkdir -p build
	/usr/bin/python3 -m venv --clear $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r tests/python/requirements.txt
	touch $@

venv: $(VENV)/.installed

# The notebook widget's venv (make venv-lab): build/venv-lab with JupyterLab 4, ipykernel and anywidget at
# tests/python/requirements-lab.txt's exact versions, apart from build/venv; tests/python/lab.test.mjs drives
# JupyterLab with it in Chromium (it skips, saying so, without it).
VENV_LAB := build/venv-lab
$(VENV_LAB)/.installed: tests/python/requirements-lab.txt
	@mkdir -p build
	/usr/bin/python3 -m venv --clear $(VENV_LAB)
	$(VENV_LAB)/bin/pip install -q --disable-pip-version-check -r tests/python/requirements-lab.txt
	touch $@

venv-lab: $(VENV_LAB)/.installed

test-python: build python-test-deps tests/browser/node_modules
	@$(MAKE) venv || echo "note: make venv failed (no PyPI?): the wgpu tests skip"
	@$(MAKE) venv-lab || echo "note: make venv-lab failed (no PyPI?): lab.test.mjs skips"
	@$(MAKE) wheel || echo "note: make wheel failed (no PyPI?): test_wheel.py skips"
	@cd tests/python && r=0; \
	RCANVAS_LIBRARY=$(abspath build/librcanvas.so) RCANVAS_RENDERCANVAS_DIR=$(RENDERCANVAS_DIR) \
	  /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider --timeout=$(PYTEST_TIMEOUT_S) . || r=1; \
	if [ -x $(abspath $(VENV))/bin/python ] && [ -f $(abspath $(VENV))/.installed ]; then \
	  RCANVAS_LIBRARY=$(abspath build/librcanvas.so) RCANVAS_RENDERCANVAS_DIR=$(RENDERCANVAS_DIR) \
	    $(abspath $(VENV))/bin/python -m pytest -q -rs -p no:cacheprovider --timeout=$(PYTEST_TIMEOUT_S) \
	    $(WGPU_PYTESTS) || r=1; \
	fi; \
	if [ -x $(abspath $(VENV_LAB))/bin/python ] && [ -f $(abspath $(VENV_LAB))/.installed ]; then \
	  RCANVAS_LIBRARY=$(abspath build/librcanvas.so) $(abspath $(VENV_LAB))/bin/python -m pytest -q -rs \
	    -p no:cacheprovider --timeout=$(PYTEST_TIMEOUT_S) $(LAB_PYTESTS) || r=1; \
	fi; \
	RCANVAS_LIBRARY=$(abspath build/librcanvas.so) RCANVAS_RENDERCANVAS_DIR=$(RENDERCANVAS_DIR) \
	  RCANVAS_VENV_PYTHON=$(abspath $(VENV))/bin/python $(NODE_TESTS) *.test.mjs || r=1; \
	exit $$r
# The pytest files that need wgpu, run a second time with the venv's python (with Debian's they skip).
WGPU_PYTESTS := test_wgpu_present.py test_jpeg_wgpu.py
# The pytest files that need anywidget (rcanvas.widget), run again with build/venv-lab's python.
LAB_PYTESTS := test_widget.py

# rendercanvas' noise.py at 1280x720 and 1920x1080 on its http backend (uvicorn, PNG) and on rcanvas.rendercanvas:
# frames/s shown, round trip, Mbit/s, server CPU % (tests/python/bench_rendercanvas.mjs; docs/benchmarks.md).
bench-rendercanvas: build tests/browser/node_modules
	cd tests/python && RCANVAS_LIBRARY=$(abspath build/librcanvas.so) RCANVAS_RENDERCANVAS_DIR=$(RENDERCANVAS_DIR) \
	  node bench_rendercanvas.mjs

# A live canvas in JupyterLab 4 (build/venv-lab) four ways: rcanvas.widget direct and over the comm, jupyter_rfb,
# rendercanvas' anywidget backend, at 640x480 and 1920x1080: `notebook PATH WxH fps F kernel-cpu-ms C click-ms P`
# (tests/python/bench_notebook.mjs; docs/benchmarks.md).
bench-notebook: build tests/browser/node_modules venv-lab
	cd tests/python && RCANVAS_LIBRARY=$(abspath build/librcanvas.so) RCANVAS_LAB_PYTHON=$(abspath $(VENV_LAB))/bin/python \
	  node bench_notebook.mjs

# pygfx's cube (update_mode "fastest") through each present path of wgpu frames: rendercanvas' bitmap fallback, rcanvas'
# wgpu context newest first, one behind, auto; frames/s shown in Chromium, the app's CPU ms per frame, CPU bytes copied
# per frame (tests/python/bench_wgpu.mjs; docs/benchmarks.md). SIZES=320x240,640x480 MODES=bitmap,newest,behind,auto.
bench-wgpu: build venv tests/browser/node_modules
	cd tests/python && RCANVAS_LIBRARY=$(abspath build/librcanvas.so) RCANVAS_VENV_PYTHON=$(abspath $(VENV))/bin/python \
	  node bench_wgpu.mjs

# pygfx's cube (update_mode "fastest"; a click toggles its background) at each size on rendercanvas' own http backend
# and through rcanvas: rendercanvas' bitmap context, rcanvas' ring (newest first, one behind), jpeg-wgpu (JPEG on the
# app's wgpu device); one headless Chromium viewer; frames/s shown, app CPU ms per frame, GPU bytes read per frame,
# bytes received per frame, click to picture (tests/python/bench_pygfx.mjs; docs/benchmarks.md). On a CPU device
# (lavapipe) jpeg-wgpu runs with RCANVAS_GPU_CODEC_DEVICE=any, set there. SIZES=1920x1080,3840x2160
# MODES=http,bitmap,newest,behind,jpeg-wgpu MEASURE_MS=10000 CLICKS=5. The GPU machine (no browser) runs the same with
# a raw WebSocket viewer: tools/gpu_bench_wgpu.sh run present (bench/gpu_wgpu_bench.py).
bench-pygfx: build venv tests/browser/node_modules
	cd tests/python && RCANVAS_LIBRARY=$(abspath build/librcanvas.so) RCANVAS_VENV_PYTHON=$(abspath $(VENV))/bin/python \
	  node bench_pygfx.mjs

# A wheel for pip users (dist/rcanvas-VERSION-py3-none-manylinux_*.whl): pip builds the package with its normal
# build isolation (setup.py compiles librcanvas.so with CMake, as `pip install ./python` does), then auditwheel
# repair copies the libraries it links (libwebsockets, OpenSSL, libjpeg-turbo, openh264, libvpx, libaom, libwebp,
# libspng, the Vulkan loader, ...) into the wheel (rcanvas.libs/), sets librcanvas' RPATH to them, strips debug info
# and tags the wheel with the oldest manylinux policy its symbols allow. It installs with a plain `pip install
# dist/rcanvas-*.whl` where none of the -dev packages (nor their runtime libraries) are: tests/python/test_wheel.py
# checks what it links; tools/wheel-chroot-test.sh installs and runs it in a bare Debian.
WHEEL_VENV := build/venv-wheel
$(WHEEL_VENV)/.installed: tools/requirements-wheel.txt
	rm -rf $(WHEEL_VENV) && /usr/bin/python3 -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/pip install -q --disable-pip-version-check -r tools/requirements-wheel.txt
	touch $@
wheel: deps $(WHEEL_VENV)/.installed
	rm -rf build/wheel-raw && mkdir -p dist
	RCANVAS_PY_BUILD_DIR=$(abspath build/wheel-build) $(WHEEL_VENV)/bin/pip wheel -q --no-deps \
	  --disable-pip-version-check -w build/wheel-raw ./python
	PATH=$(abspath $(WHEEL_VENV))/bin:$$PATH $(WHEEL_VENV)/bin/auditwheel repair --strip -w dist build/wheel-raw/rcanvas-*.whl
	@ls -l dist/rcanvas-*manylinux*.whl

# ---- Fuzzing: libFuzzer targets in tests/fuzz/, built with clang (ASan + UBSan) into build-fuzz/ from the
# few sources each needs (no CMake: the library builds with gcc). Each starts from its seed corpus
# tests/fuzz/corpus/<target>/ (and its dictionary tests/fuzz/<target>.dict if any); what a long run finds that is new
# goes to build-fuzz/corpus/<target>/ (not committed); a crash leaves its input in build-fuzz/ and fails the target.
#   fuzz_msg     client JSON messages: rc_client_msg_parse (src/transport/wire.c)
#   fuzz_route   the HTTP routing decision: rc_http_route (src/transport/route.c)
#   fuzz_header  the wire frame header: rc_frame_header_read (src/transport/wire.c)
#   fuzz_auth    the access rules: Bearer, cookie, Host check, base path, root prefix, role (src/transport/auth.c)
#   fuzz_jpeg    the check of an app's JPEG before it is sent as it is: rc_jpeg_check_baseline (src/codec/jpeg_app.c)
FUZZ_TARGETS := msg route header auth jpeg
FUZZ_SECONDS ?= 120
FUZZ_RUNS ?= 20000
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE -Iinclude -Isrc
FUZZ_SRC_msg := src/transport/wire.c
FUZZ_SRC_header := src/transport/wire.c
FUZZ_SRC_route := src/transport/route.c src/core/util.c
FUZZ_SRC_auth := src/transport/auth.c src/core/util.c
FUZZ_SRC_jpeg := src/codec/jpeg_app.c
FUZZ_LIBS := -lcjson -lm
FUZZ_HEADERS := $(wildcard include/*.h src/transport/*.h src/stream/*.h src/codec/*.h src/core/*.h)

.SECONDEXPANSION:
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRC_$$*) $(FUZZ_HEADERS)
	@mkdir -p build-fuzz
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_SRC_$*) $(FUZZ_LIBS) -o $@

# 1 when clang can build a libFuzzer program here (clang and its runtime, libclang-rt-dev), else empty.
FUZZ_OK = $(shell echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
            $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1 && echo 1)

fuzz-build: deps
	@if [ -z "$(FUZZ_OK)" ]; then echo "fuzz: SKIPPED: $(FUZZ_CC) cannot build libFuzzer programs (apt: clang libclang-rt-dev)"; \
	else $(MAKE) $(foreach t,$(FUZZ_TARGETS),build-fuzz/fuzz_$(t)); fi

# Each target for FUZZ_SECONDS (default 120 s each), growing build-fuzz/corpus/<target>/ from the seeds.
fuzz: fuzz-build
	@[ -n "$(FUZZ_OK)" ] || exit 0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t; \
	  dict=""; [ -f tests/fuzz/$$t.dict ] && dict="-dict=tests/fuzz/$$t.dict"; \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	  if ./build-fuzz/fuzz_$$t $$dict -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=build-fuzz/ \
	       build-fuzz/corpus/$$t tests/fuzz/corpus/$$t >build-fuzz/fuzz-$$t.log 2>&1; then \
	    grep -E 'DONE|stat::number_of_executed_units|stat::new_units_added' build-fuzz/fuzz-$$t.log; \
	  else tail -40 build-fuzz/fuzz-$$t.log; echo "fuzz_$$t FAILED: the input is in build-fuzz/ (log build-fuzz/fuzz-$$t.log)"; exit 1; fi; \
	done

# For `make test` (CI): the seeds, then FUZZ_RUNS (default 20000) mutations per target — a few seconds in all. New
# inputs go to build-fuzz/test-corpus/ (libFuzzer writes into its first corpus folder), never into the repository.
test-fuzz: fuzz-build
	@[ -n "$(FUZZ_OK)" ] || exit 0; for t in $(FUZZ_TARGETS); do \
	  dict=""; [ -f tests/fuzz/$$t.dict ] && dict="-dict=tests/fuzz/$$t.dict"; \
	  rm -rf build-fuzz/test-corpus/$$t; mkdir -p build-fuzz/test-corpus/$$t; \
	  if ./build-fuzz/fuzz_$$t $$dict -runs=$(FUZZ_RUNS) -seed=1 -artifact_prefix=build-fuzz/ build-fuzz/test-corpus/$$t \
	       tests/fuzz/corpus/$$t >build-fuzz/test-fuzz-$$t.log 2>&1; then \
	    echo "fuzz_$$t: $(FUZZ_RUNS) runs, no crash"; \
	  else tail -40 build-fuzz/test-fuzz-$$t.log; echo "fuzz_$$t FAILED (build-fuzz/test-fuzz-$$t.log)"; exit 1; fi; \
	done

# All tests: C unit tests (and the installed library), the CPU-only build, the C tests under ASan+UBSan, the fuzz
# targets for a short fixed number of runs, then the browser tests in headless Chromium, then the Python tests.
# Every suite runs even when one before it failed; the end says which failed (and the status is 1 then) and how long
# each took. One suite alone: make test-c, test-browser, ...
TEST_SUITES := test-c test-cpu-only test-asan test-fuzz test-browser test-python
test:
	@failed=""; summary=""; for t in $(TEST_SUITES); do \
	  echo "==== make $$t"; t0=$$(date +%s); \
	  if $(MAKE) $$t; then r=passed; else r=FAILED; failed="$$failed $$t"; fi; \
	  summary="$$summary\n  $$t: $$r ($$(( $$(date +%s) - t0 )) s)"; \
	done; \
	printf "==== make test:$$summary\n"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed (each suite's own output above says which tests)"; exit 1; fi; \
	echo "make test: all $(words $(TEST_SUITES)) suites passed"

# A quick self-test for users (a minute or two): the build, the unit tests of the pipeline, the protocol and the
# installed library, and the demo in headless Chromium (pixels, input, reconnects). `make test` is the full suite.
CHECK_C_TESTS := ^test_(ratelog|encode|h264|vpx|webp|damage|rate|small|stream|tiers|auth|protocol|route|hello|cli|install)$$
check: build tests/browser/node_modules
	cd build && ctest --output-on-failure --timeout $(CTEST_TIMEOUT_S) --no-tests=error -R '$(CHECK_C_TESTS)'
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) RCANVAS_FRAMES_DIR=$(FRAMES) \
	  $(NODE_TESTS) spine.test.mjs

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

# Damage on the GPU against whole frames: bytes read back and readback time per frame, for a still plot with a small
# moving marker and for frames that change whole, at 1080p and 4K (on lavapipe the hash runs on the CPU, which is
# why damage is off there by default; the GPU figures come from the H200: `make gpu-kit`, docs/benchmarks.md).
bench-vk-damage: bench-frames
	./build/bench-vk --damage --frames 100 $(BENCH_FRAMES)

# The kit for the GPU machine (../shared/GPU.md) in .gl/ (ignored): bench-vk, bench-jpeg-gpu, test_vk_readback,
# test_jpeg_gpu, test_h264_gpu, bench-h264-gpu, bench-anchor, rcanvas-demo, bench-fanout, bench/nvjpeg.py, the
# Debian packages they need, the corpus frames. Then one run there, carrying .gl:
#   eval "$$(bash .gl/unpack-runtime.sh .gl)"; cd .gl; ./test_vk_readback; ./test_jpeg_gpu;
#   ./bench-jpeg-gpu --frames 300 --tj 3 frames; python3 nvjpeg.py frames; ./bench-vk --damage --frames 300 frames
gpu-kit: bench-frames
	@[ -f ../shared/gpu/pack-runtime.sh ] || { echo "gpu-kit: needs ../shared/gpu/pack-runtime.sh"; exit 1; }
	mkdir -p .gl/frames
	cp ../shared/gpu/pack-runtime.sh ../shared/gpu/unpack-runtime.sh build/bench-vk build/bench-jpeg-gpu \
	  build/test_vk_readback build/test_jpeg_gpu build/test_h264_gpu build/bench-h264-gpu build/bench-anchor \
	  build/rcanvas-demo build/bench-fanout bench/nvjpeg.py .gl/
	cp -P build/librcanvas.so* .gl/ # rcanvas-demo's own library (LD_LIBRARY_PATH=.gl there)
	cp $(BENCH_FRAMES)/*.png .gl/frames/
	bash .gl/pack-runtime.sh .gl .gl/bench-vk .gl/bench-jpeg-gpu .gl/test_vk_readback .gl/test_jpeg_gpu \
	  .gl/test_h264_gpu .gl/bench-h264-gpu .gl/bench-anchor .gl/rcanvas-demo .gl/bench-fanout

# The Vulkan compute JPEG encoder per stage, beside libturbojpeg (few frames: on lavapipe each takes 0.1-0.5 s;
# the H200 figures in docs/benchmarks.md use --frames 300).
bench-jpeg-gpu: bench-frames
	./build/bench-jpeg-gpu --frames 10 $(BENCH_FRAMES)

# Damage: bytes per frame of a still 1920x1080 plot with a moving marker (JPEG q85), partial against whole
# frames, the refinement, and the tile diff's cost at 1080p and 4K.
bench-damage: build
	./build/bench-damage

bench-e2e: build tests/browser/node_modules
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) node bench_e2e.mjs

# The demo through a shaped link (tests/browser/shaper.mjs): 20 Mbit/s / 40 ms and 4 Mbit/s / 80 ms, JPEG and H.264.
bench-shaped: build tests/browser/node_modules
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) node bench_shaped.mjs

# Many viewers of one canvas: 1, 16, 100 and 200 raw acking viewers (bench/bench_fanout.c) of the animated
# 640x480 demo: fps per viewer, Mbit/s, the server's CPU per viewer-frame (about a minute).
bench-fanout: build
	./build/bench-fanout --viewers 1,16,100,200

# The benchmarks' own packages (BENCH_VNC_PACKAGES), installed as deps installs the build's: only those missing.
bench-deps: deps
	$(call apt_install,$(BENCH_VNC_PACKAGES))

# The quality anchor (bench/bench_anchor.c): openh264 and VP9 as the library runs them against x264
# (superfast and veryfast, zerolatency, baseline and high profile) at 2/4/8/16 Mbit/s on 1080p pan, zoom, rotation and
# slideshow sequences — actual bitrate, Y/Cb/Cr PSNR, CPU ms per frame on one thread — then chroma: JPEG 4:2:0 against
# 4:4:4 and H.264 / VP9 4:2:0 against VP9 profile 1 4:4:4 on plots, text, renders and 1-px coloured lines (about 5
# minutes on 2 cores). x264 is optional and not installed by this target: `make bench-anchor-deps` first, else the
# benchmark runs without it and says that it skipped x264. BENCH_ANCHOR_ARGS="--help" lists the options.
BENCH_ANCHOR_ARGS ?=
bench-anchor-deps: deps
	$(call apt_install,$(BENCH_ANCHOR_PACKAGES))

bench-anchor: bench-frames
	$(CONFIGURE)
	cmake --build build -j $(JOBS) --target bench-anchor
	./build/bench-anchor $(BENCH_ANCHOR_ARGS) $(BENCH_FRAMES)

# rcanvas against TigerVNC + noVNC, side by side (tests/browser/bench_vnc.mjs): the corpus's 1920x1080 frames at
# 30 fps, loopback, 20 Mbit/s / 40 ms and 4 Mbit/s / 80 ms; fps, Mbit/s, PSNR, click-to-pixels latency.
# BENCH_VNC_ARGS="--help" lists the options (links, codecs, noVNC's quality/compression pairs, seconds).
BENCH_VNC_ARGS ?=
# The content: the corpus slideshow (1920x1080 frames of FRAMES) and generated motion sequences
# (rcanvas-testframes --motion, 64 frames, the last followed by the first without a jump): motion, a pan and zoom
# over a dense coloured line plot; rotate, a 3D scatter plot orbited (every point moves by its depth); zoom,
# noise-like imaging data zoomed in and out with sensor noise in every frame; scroll, a terminal's text scrolling 3
# lines a frame. Each with the source at every rate of BENCH_VNC_FPS. BENCH_VNC_PIN=0/1: the servers on CPU 0 and
# Chromium on CPU 1 (taskset), as on two machines.
BENCH_VNC_FPS ?= 30 60
BENCH_VNC_CONTENT ?= slideshow motion rotate zoom scroll
BENCH_VNC_PIN ?=
bench-vnc: bench-deps tests/browser/node_modules
	$(CONFIGURE)
	cmake --build build -j $(JOBS) --target rcanvas-demo bench-x11-player rcanvas-testframes
	rm -rf build/bench-motion build/bench-rotate build/bench-zoom build/bench-scroll
	./build/rcanvas-testframes build/bench-motion --motion pan-1920x1080 64 >/dev/null
	for m in rotate zoom scroll; do ./build/rcanvas-testframes build/bench-$$m --motion $$m-1920x1080 64 >/dev/null; done
	for c in $(BENCH_VNC_CONTENT); do for f in $(BENCH_VNC_FPS); do \
	  dir=$(FRAMES); [ $$c != slideshow ] && dir=$(abspath build/bench-$$c); \
	  echo "== bench-vnc: $$c at $$f fps"; \
	  (cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) RCANVAS_FRAMES_DIR=$(FRAMES) \
	    node bench_vnc.mjs --frames $$dir --fps $$f $(if $(BENCH_VNC_PIN),--pin $(BENCH_VNC_PIN)) $(BENCH_VNC_ARGS)) || exit 1; \
	done; done

# Viewers through Janus (the SFU: rcanvas-demo --rtp-out → Janus → WebRTC) against direct WebSocket viewers,
# 1, 4 and 16 of each (BENCH_SFU_VIEWERS), on the generated pan (1280×720, 30 fps): fps per viewer, glass-to-glass
# latency of the click marker, rcanvas' and Janus's CPU. Prints a table (docs/benchmarks.md has one); asserts nothing.
BENCH_SFU_VIEWERS ?= 1,4,16
BENCH_SFU_ARGS ?=
bench-sfu: deps tests/browser/node_modules
	$(CONFIGURE)
	cmake --build build -j $(JOBS) --target rcanvas-demo rcanvas-testframes
	rm -rf build/bench-sfu-motion && ./build/rcanvas-testframes build/bench-sfu-motion --motion pan-1280x720 64 >/dev/null
	cd tests/browser && RCANVAS_BUILD_DIR=$(abspath build) \
	  node bench_sfu.mjs --frames $(abspath build/bench-sfu-motion) --viewers $(BENCH_SFU_VIEWERS) $(BENCH_SFU_ARGS)

# Benchmarks print figures (nothing is asserted): encoders over the corpus, then the end-to-end runs.
bench: bench-encode bench-video bench-vk bench-vk-damage bench-jpeg-gpu bench-damage bench-e2e bench-fanout

clean:
	rm -rf build build-asan build-cpu build-fuzz
