# SPDX-License-Identifier: MIT
"""The build step of the rcanvas Python package (metadata: pyproject.toml).

`pip install --no-build-isolation ./python` builds librcanvas.so with CMake from the C sources of the rcanvas
repository (the folder above this one; in an sdist, csrc/ beside this file) and ships it inside the package as
rcanvas/librcanvas.so, which rcanvas._lib.load() prefers to a system copy. Only the library target is built
(-DRCANVAS_PROGRAMS=OFF: no demo, tools or tests), RelWithDebInfo, with os.cpu_count() jobs.

It needs what `make deps` installs on Debian 12: cmake, a C compiler, pkg-config and the -dev packages of the
library's dependencies. --no-build-isolation: pip uses the setuptools (>= 61; Debian 12 has 66) and wheel already
installed instead of fetching them, so the install works offline.

Environment:
  RCANVAS_PY_BUILD_DIR  a folder for everything the build writes (setuptools' build/ and egg-info, the CMake tree);
                        default: setuptools' own places in the source tree (python/build/, python/rcanvas.egg-info,
                        both ignored by git), so that a second install rebuilds only what changed.
  RCANVAS_CMAKE_ARGS    extra arguments of the CMake configure step (e.g. -DRCANVAS_VULKAN=OFF), shell-split.
  CMAKE_BUILD_PARALLEL_LEVEL  the number of build jobs, in place of os.cpu_count().
"""

import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
LIBNAME = "librcanvas.so"
WIDGET = "widget.js"
# What the library's CMake configure (RCANVAS_PROGRAMS=OFF) and build read: the sdist carries these in csrc/.
C_SOURCES = ("CMakeLists.txt", "LICENSE", "cmake", "include", "src", "client")
# The pkg-config modules CMakeLists.txt requires, and the Debian 12 package of each (the Makefile's APT_PACKAGES).
APT_OF_MODULE = {"libwebsockets": "libwebsockets-dev", "libcjson": "libcjson-dev", "libturbojpeg": "libturbojpeg0-dev",
                 "spng": "libspng-dev", "zlib": "zlib1g-dev", "libcrypto": "libssl-dev"}
DEPS_HINT = ("librcanvas needs cmake, a C compiler, pkg-config and the -dev packages of its libraries: in the rcanvas "
             "checkout run `make deps` (Debian 12; it lists them in APT_PACKAGES), then `pip install "
             "--no-build-isolation ./python` again")


class BuildError(SystemExit):
    """Stops the build with a message for the user (pip shows it under the build's output)."""

    def __init__(self, message):
        super().__init__("\nrcanvas: " + message + "\n")


def c_sources():
    """The folder holding CMakeLists.txt and src/ of rcanvas: csrc/ (an sdist) or the repository root (a checkout)."""
    for d in (os.path.join(HERE, "csrc"), os.path.dirname(HERE)):
        if os.path.isfile(os.path.join(d, "CMakeLists.txt")) and os.path.isfile(os.path.join(d, "include", "rcanvas.h")):
            return d
    raise BuildError(f"the C sources of rcanvas are not beside {HERE} (no ../CMakeLists.txt and ../include/rcanvas.h, "
                     "no csrc/): install from a checkout of the rcanvas repository (`pip install --no-build-isolation "
                     "./python`) or from its sdist")


def run_logged(cmd, what):
    """Runs cmd, passing its output on; on failure raises BuildError naming what failed and, where CMake said so,
    the pkg-config modules or programs that were missing."""
    print("rcanvas: " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    rc = proc.wait()
    sys.stdout.flush()
    if rc == 0:
        return
    missing = []
    text = "".join(lines)
    # pkg-config through CMake: "Package 'libwebsockets', required by 'virtual:world', not found" (or "No package
    # 'x' found" from older pkg-config); no compiler: "No CMAKE_C_COMPILER could be found"; no pkg-config itself.
    for module in re.findall(r"Package '([^']+)', required by|No package '([^']+)' found", text):
        module = module[0] or module[1]
        missing.append(f"{module} (Debian: {APT_OF_MODULE[module]})" if module in APT_OF_MODULE else module)
    if "No CMAKE_C_COMPILER could be found" in text:
        missing.append("a C compiler (Debian: build-essential)")
    if "Could NOT find PkgConfig" in text:
        missing.append("pkg-config (Debian: pkg-config)")
    detail = f" (missing: {', '.join(dict.fromkeys(missing))})" if missing else ""
    raise BuildError(f"{what} failed with exit status {rc}{detail}. {DEPS_HINT}.")


class BuildPyWithLibrary(build_py):
    """build_py, then librcanvas.so built with CMake into the package (rcanvas/librcanvas.so)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install uses RCANVAS_LIBRARY or the build tree (rcanvas._lib.load)
        self.copy_file(self.build_library(), os.path.join(self.build_lib, "rcanvas", LIBNAME), preserve_mode=True)
        self.build_widget()

    def build_widget(self):
        """widget.js, the notebook widget's front end, bundled from the client/ of the sources built (an installed
        package has no client/ to bundle at import, as a source tree does)."""
        src = c_sources()
        out = os.path.join(self.build_lib, "rcanvas", WIDGET)
        env = dict(os.environ, RCANVAS_CLIENT_DIR=os.path.join(src, "client"))
        r = subprocess.run([sys.executable, os.path.join(HERE, "rcanvas", "bundle_widget.py"), "--out", out], env=env,
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.isfile(out):
            raise BuildError(f"bundling the notebook widget (rcanvas/bundle_widget.py) failed: {r.stdout}{r.stderr}")

    def build_library(self):
        src = c_sources()
        if not shutil.which("cmake"):
            raise BuildError(f"cmake is not installed (not on PATH). {DEPS_HINT}.")
        build_base = self.get_finalized_command("build").build_base
        tree = os.path.abspath(os.path.join(build_base, "librcanvas-cmake"))
        configure = ["cmake", "-S", src, "-B", tree, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DRCANVAS_PROGRAMS=OFF"]
        configure += shlex.split(os.environ.get("RCANVAS_CMAKE_ARGS", ""))
        run_logged(configure, "configuring librcanvas (cmake)")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        run_logged(["cmake", "--build", tree, "--target", "rcanvas", "-j", jobs], "building librcanvas (cmake --build)")
        lib = os.path.realpath(os.path.join(tree, LIBNAME))  # librcanvas.so -> .so.0 -> .so.0.N.0: the file itself
        if not os.path.isfile(lib):
            raise BuildError(f"cmake --build finished but {os.path.join(tree, LIBNAME)} is not there")
        return lib

    def get_outputs(self, include_bytecode=1):
        outs = super().get_outputs(include_bytecode)
        if not getattr(self, "editable_mode", False):
            outs.append(os.path.join(self.build_lib, "rcanvas", LIBNAME))
            outs.append(os.path.join(self.build_lib, "rcanvas", WIDGET))
        return outs


class SdistWithSources(sdist):
    """An sdist that builds alone: the C sources of the library go into csrc/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        src = c_sources()
        dest = os.path.join(base_dir, "csrc")
        if os.path.abspath(src) == os.path.abspath(dest):
            return  # an sdist of an sdist: csrc/ is among the files already
        for name in C_SOURCES:
            path = os.path.join(src, name)
            if os.path.isdir(path):
                shutil.copytree(path, os.path.join(dest, name), ignore=shutil.ignore_patterns("__pycache__", "*.o"))
            else:
                os.makedirs(dest, exist_ok=True)
                shutil.copy2(path, os.path.join(dest, name))


class LibraryDistribution(Distribution):
    """The wheel holds a compiled library: platform-specific (platlib, a linux_x86_64-style tag)."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPyWithLibrary, "sdist": SdistWithSources}
try:  # the library does not depend on the Python ABI (ctypes): tag the wheel py3-none-<platform>
    from wheel.bdist_wheel import bdist_wheel

    class BdistWheelAnyPython(bdist_wheel):
        def get_tag(self):
            return ("py3", "none", super().get_tag()[2])

    cmdclass["bdist_wheel"] = BdistWheelAnyPython
except ImportError:  # no wheel package: setuptools says so when a wheel is asked for
    pass

options = {}
out = os.environ.get("RCANVAS_PY_BUILD_DIR")
if out:
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    options = {"build": {"build_base": os.path.join(out, "build")}, "egg_info": {"egg_base": out}}

setup(packages=["rcanvas"], cmdclass=cmdclass,
      distclass=LibraryDistribution, options=options)
