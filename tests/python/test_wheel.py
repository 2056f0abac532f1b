# SPDX-License-Identifier: MIT
"""The wheel of `make wheel` (dist/rcanvas-*-manylinux_*.whl), as a pip user gets it: tagged manylinux, installed
with a plain `pip install` into a fresh venv of Debian's python3 (no system site packages, no RCANVAS_LIBRARY), it
loads its own librcanvas.so, every library that needs comes from the wheel or is one a manylinux policy allows from
the system (ldd: none of the -dev packages' runtime libraries is used), and a canvas serves a frame to a raw viewer
(wheel_check.py). tools/wheel-chroot-test.sh runs the same check in a bare Debian with only Python. Skips, saying
why, where there is no wheel (make wheel) or pip cannot reach PyPI for numpy."""

import glob
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
WHEELS = sorted(glob.glob(os.path.join(ROOT, "dist", "rcanvas-*-manylinux_*.whl")), key=os.path.getmtime)


@pytest.mark.timeout(600)
@pytest.mark.skipif(not WHEELS, reason="no dist/rcanvas-*-manylinux_*.whl: make wheel")
def test_the_wheel_installs_and_works_with_its_own_libraries(tmp_path):
    wheel = WHEELS[-1]
    names = zipfile.ZipFile(wheel).namelist()
    assert "rcanvas/librcanvas.so" in names and "rcanvas/widget.js" in names, names
    bundled = [n for n in names if n.startswith("rcanvas.libs/")]
    assert any("libwebsockets" in n for n in bundled) and any("libturbojpeg" in n for n in bundled), bundled
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RCANVAS_") and k not in ("PYTHONPATH",
                                                                                             "LD_LIBRARY_PATH")}
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", wheel],
                       capture_output=True, text=True, timeout=400, env=env)
    if r.returncode != 0 and ("NewConnectionError" in r.stderr or "No matching distribution" in r.stderr):
        pytest.skip(f"pip could not fetch numpy from PyPI: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(venv / "bin" / "python"), os.path.join(HERE, "wheel_check.py")], capture_output=True,
                       text=True, timeout=120, env=env, cwd=str(tmp_path))
    print(r.stdout, r.stderr[-2000:], file=sys.stderr)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and out["errors"] == [], out
    assert out["library"].startswith(str(venv)), out["library"]
    assert out["png_exact"] and out["jpeg_bytes"] > 0, out
    assert any("libwebsockets" in b for b in out["bundled"]), out["bundled"]
