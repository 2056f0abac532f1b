# SPDX-License-Identifier: MIT
# Pytest setup of the Python tests: the package from python/ (not an installed one), the library from the build
# tree (RCANVAS_LIBRARY if set: `make test-python` sets it), rendercanvas from ../shared/third_party when there.
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
RENDERCANVAS = os.environ.get("RCANVAS_RENDERCANVAS_DIR",
                              os.path.join(ROOT, "..", "shared", "third_party", "rendercanvas"))
