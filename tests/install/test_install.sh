#!/bin/sh
# SPDX-License-Identifier: MIT
# test_install — rcanvas as a program outside the tree sees it: `cmake --install` into BUILD/install, then
# hello_install.c is built and run against the INSTALLED library, through pkg-config (shared, then --static) and
# through find_package(rcanvas) (rcanvas::rcanvas, rcanvas::rcanvas_static). Also checks that librcanvas.so exports
# only rcanvas_* functions and needs libvulkan exactly when built with Vulkan.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR C_COMPILER VULKAN(ON|OFF) SANITIZE(ON|OFF) VERSION
set -u
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd); cc="$3"; vulkan="$4"; sanitize="$5"; version="$6"
if [ "$sanitize" = ON ]; then
  # The installed library would need the sanitizer runtimes in every program linked to it: not a real install.
  echo "SKIPPED: test_install does not run in a sanitizer build (RCANVAS_SANITIZE=ON); make test-c runs it"
  exit 77
fi
P="$build/install"; T="$build/install-test"
pass=0; fail=0
ok() { if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $*" >&2; fi; }
has() { printf '%s\n' "$1" | grep -Eq -- "$2"; }
hasnt() { ! printf '%s\n' "$1" | grep -Eq -- "$2"; }
# check_run NAME OUTPUT STATUS: what hello_install must print (and exit 0)
check_run() {
  f0=$fail
  ok [ "$3" -eq 0 ]
  ok has "$2" "^version ${version%.*}\$"
  ok has "$2" '^present ok$'
  ok has "$2" '^url http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}$'
  ok has "$2" '^error 0 '
  ok has "$2" '^error -1 .*argument'
  ok [ "$(printf '%s\n' "$2" | grep -c '^error -')" -ge 10 ]
  ok has "$2" '^done$'
  if [ "$fail" -eq "$f0" ]; then echo "--- $1: $(printf '%s\n' "$2" | grep '^url ')"
  else echo "--- $1: output:"; printf '%s\n' "$2"; fi
}

rm -rf "$P" "$T"
cmake --install "$build" --prefix "$P" > "$build/install.log" || { echo "FAILED: cmake --install"; exit 1; }
ok [ -f "$P/include/rcanvas.h" ]; ok [ -f "$P/include/rcanvas_export.h" ]
ok [ -f "$P/lib/librcanvas.a" ]; ok [ -f "$P/lib/cmake/rcanvas/rcanvasConfigVersion.cmake" ]
ok [ "$(readlink "$P/lib/librcanvas.so")" = librcanvas.so.0 ]
ok has "$(readelf -d "$P/lib/librcanvas.so")" 'SONAME.*\[librcanvas\.so\.0\]'

# Exports: rcanvas_* only (internal rc_* functions are hidden); the Vulkan ones exactly when built with Vulkan.
syms=$(nm -D --defined-only "$P/lib/librcanvas.so" | awk '{print $3}')
echo "--- exported: $(echo $syms)"
ok [ "$(printf '%s\n' "$syms" | grep -vc '^rcanvas_')" -eq 0 ]
ok has "$syms" '^rcanvas_server_new$'
needed=$(ldd "$P/lib/librcanvas.so")
if [ "$vulkan" = ON ]; then
  ok has "$syms" '^rcanvas_present_vk$'; ok has "$needed" 'libvulkan'
else
  ok hasnt "$syms" '^rcanvas_vk_'; ok hasnt "$needed" 'libvulkan'; ok [ ! -e "$P/include/rcanvas_vk.h" ]
fi

# pkg-config, shared: Libs is -lrcanvas alone (dependencies are private); runs from the install prefix.
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
ok [ "$(pkg-config --modversion rcanvas)" = "$version" ]
libs=$(pkg-config --libs rcanvas); echo "--- pkg-config --libs: $libs"
ok hasnt "$libs" '-l(websockets|vulkan|turbojpeg)'
mkdir -p "$T"
# shellcheck disable=SC2046
"$cc" "$src/tests/install/hello_install.c" $(pkg-config --cflags --libs rcanvas) -o "$T/hello_pc"; ok [ $? -eq 0 ]
out=$(LD_LIBRARY_PATH="$P/lib" "$T/hello_pc"); check_run "pkg-config (shared)" "$out" $?
ok has "$(LD_LIBRARY_PATH="$P/lib" ldd "$T/hello_pc")" "librcanvas\.so\.0 => $P/lib/"

# pkg-config --static: the archive plus every private dependency.
slibs=$(pkg-config --static --libs rcanvas); echo "--- pkg-config --static --libs: $slibs"
ok has "$slibs" '-lwebsockets'
if [ "$vulkan" = ON ]; then ok has "$slibs" '-lvulkan'; else ok hasnt "$slibs" '-lvulkan'; fi
# shellcheck disable=SC2046
"$cc" "$src/tests/install/hello_install.c" $(pkg-config --static --cflags rcanvas) \
  $(printf '%s\n' "$slibs" | sed 's/-lrcanvas\b/-l:librcanvas.a/') -o "$T/hello_pc_static"; ok [ $? -eq 0 ]
out=$("$T/hello_pc_static"); check_run "pkg-config --static" "$out" $?
ok hasnt "$(ldd "$T/hello_pc_static")" 'librcanvas'

# find_package(rcanvas) in a separate CMake project.
cmake -S "$src/tests/install" -B "$T/cmake" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$P" \
      -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -DRCANVAS_EXPECT_VERSION="$version" > "$T/cmake.log" 2>&1
ok [ $? -eq 0 ]
ok grep -q "rcanvas $version from $P/lib/cmake/rcanvas (Vulkan: $vulkan)" "$T/cmake.log"
cmake --build "$T/cmake" > "$T/build.log" 2>&1 || { cat "$T/cmake.log" "$T/build.log"; fail=$((fail+1)); }
out=$("$T/cmake/hello_install"); check_run "find_package: rcanvas::rcanvas" "$out" $?
ok has "$(ldd "$T/cmake/hello_install")" "librcanvas\.so\.0 => $P/lib/"
out=$("$T/cmake/hello_install_static"); check_run "find_package: rcanvas::rcanvas_static" "$out" $?
ok hasnt "$(ldd "$T/cmake/hello_install_static")" 'librcanvas'

# The README's own lines (as written they failed with "DSO missing from command line", hello.c calls
# sin): the code block after the "readme-c-link" marker, run in a folder holding examples/hello/hello.c with
# ~/.local being the install prefix. Its make/cmake lines are the build this test runs in (skipped); `./hello`
# runs with port 0 and must print its URL. Then the "readme-cmake" CMakeLists.txt beside a copy of hello.c.
readme_block() { # MARKER: the lines of the first ``` block after the line holding MARKER
  awk -v m="$1" 'index($0, m) {f = 1; next} f && /^```/ {if (in_b) exit; in_b = 1; next} in_b {print}' "$src/README.md"
}
R="$T/readme"; mkdir -p "$R/home" "$R/c/examples/hello" "$R/cmake"; ln -s "$P" "$R/home/.local"
cp "$src/examples/hello/hello.c" "$R/c/examples/hello/"
block=$(readme_block readme-c-link)
ok has "$block" '^cc examples/hello/hello\.c '
script=$(printf '%s\n' "$block" | grep -Ev '^(make|cmake) ' | sed 's/^\.\/hello\b.*/timeout 3 .\/hello 0 || true/')
echo "--- README lines run: $(printf '%s\n' "$script" | tr '\n' ';')"
out=$(cd "$R/c" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH HOME="$R/home" sh -ec "$script" 2>&1); ok [ -x "$R/c/hello" ]
ok has "$out" 'open http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}'
[ -x "$R/c/hello" ] || echo "--- README lines: $out"
readme_block readme-cmake > "$R/cmake/CMakeLists.txt"; cp "$src/examples/hello/hello.c" "$R/cmake/"
ok grep -q 'rcanvas::rcanvas' "$R/cmake/CMakeLists.txt"
if cmake -S "$R/cmake" -B "$R/cmake/b" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$P" >"$R/cmake.log" 2>&1 &&
   cmake --build "$R/cmake/b" >>"$R/cmake.log" 2>&1; then
  out=$(LD_LIBRARY_PATH="$P/lib" timeout 3 "$R/cmake/b/hello" 0)
  ok has "$out" 'open http://127\.0\.0\.1:[0-9]+/\?token='
else
  cat "$R/cmake.log"; fail=$((fail+1)); echo "FAILED: the README's CMakeLists.txt" >&2
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
