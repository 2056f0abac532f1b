"""`pip install ./python` works: installed offline with the machine's pip into a temporary folder (--target,
--no-index, --no-build-isolation: Debian's setuptools builds it), the installed copy imports and serves."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def _pip_ok():
    r = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if r.returncode != 0:
        return False
    return subprocess.run([sys.executable, "-c", "import setuptools"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _pip_ok(), reason="no pip or setuptools for this python (apt: python3-pip python3-setuptools)")
def test_pip_install_target(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "python"), src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-build-isolation",
                        "--disable-pip-version-check", "--target", str(target), str(src)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (target / "rcanvas" / "__init__.py").exists() and (target / "rcanvas" / "rendercanvas.py").exists()
    env = dict(os.environ, PYTHONPATH=str(target),
               RCANVAS_LIBRARY=os.environ.get("RCANVAS_LIBRARY", os.path.join(ROOT, "build", "librcanvas.so")))
    code = ("import rcanvas, numpy as np; assert rcanvas.__file__.startswith(%r); s = rcanvas.Server(); "
            "c = s.canvas(); c.present(np.zeros((8, 8, 3), np.uint8)); print(s.port > 0); s.close()" % str(target))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stdout + r.stderr
