# SPDX-License-Identifier: MIT
"""One install for Python users: `pip install --no-build-isolation ./python` into a venv made with
--system-site-packages (Debian's numpy and setuptools; PEP 668 keeps pip out of the system's Python), offline
(--no-index). The install compiles librcanvas.so with CMake and bundles it in the package; then, without
RCANVAS_LIBRARY: the installed package loads that copy (the path asserted, and mapped in the process), the demo
`python -m rcanvas` serves moving frames, paints where the pointer drags and exits 0 on Ctrl-C, the installed runner
serves rendercanvas' snake.py (frames read back over a raw WebSocket), and without rendercanvas the runner prints
what to install and exits 2. Beside it: the sdist carries the C sources the library's CMake configure needs, and a
missing cmake or -dev package fails the install with a message naming `make deps`.

The compiling install runs once per session (module fixture; under a minute to a few minutes on 2 cores). All that
the builds write goes to a temporary folder (RCANVAS_PY_BUILD_DIR): the source tree is unchanged afterwards (git
status, ignored files included). rendercanvas comes from RCANVAS_RENDERCANVAS_DIR on PYTHONPATH: the copy in
../shared/third_party is the package's source folder without packaging metadata (no pyproject.toml or setup.py), so
pip cannot install it; the snake test skips, saying so, when it is absent."""

import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tarfile
import threading
import time
from urllib.parse import urlparse

import numpy as np
import pytest

from conftest import RENDERCANVAS, ROOT
from wsraw import RawWS, decode_png, parse_frame

try:
    from PIL import Image
except ImportError:  # the pure-Python decoder (slower)
    Image = None

INSTALL_TIMEOUT = 1800  # s: a compile on a loaded 2-core machine, with margin
SNAKE = os.path.join(RENDERCANVAS, "examples", "snake.py")
PAINT = (255, 255, 255)  # rcanvas/__main__.py's stroke colour


def _tree_state():
    """git status of python/ and the build inputs, ignored files included (None outside a git checkout)."""
    r = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--ignored", "--untracked-files=all", "--",
                        "python", "CMakeLists.txt", "cmake", "include", "src", "client"],
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def _clean_env(**extra):
    """The environment of a user's shell: no RCANVAS_LIBRARY (make test-python sets it), no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RCANVAS_LIBRARY", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV")}
    env["PYTHONFAULTHANDLER"] = "1"  # a hang found by _stop shows every thread's stack (SIGABRT)
    env.update(extra)
    return env


def _missing_tools():
    if subprocess.run([sys.executable, "-c", "import ensurepip, venv"], capture_output=True).returncode != 0:
        return "python3 -m venv does not work here (apt: python3-venv)"
    if subprocess.run([sys.executable, "-c", "import setuptools, wheel"], capture_output=True).returncode != 0:
        return "no setuptools or wheel for this python (apt: python3-setuptools python3-wheel)"
    return None


class Venv:
    def __init__(self, path):
        self.path = path
        self.python = os.path.join(path, "bin", "python")
        self.pip = os.path.join(path, "bin", "pip")

    def pip_install(self, build_dir, env_extra=None, source=None):
        env = _clean_env(RCANVAS_PY_BUILD_DIR=str(build_dir), **(env_extra or {}))
        return subprocess.run([self.pip, "install", "--no-build-isolation", "--no-index", "--disable-pip-version-check",
                               source or os.path.join(ROOT, "python")],
                              env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, cwd=build_dir.parent)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    why = _missing_tools()
    if why:
        pytest.skip(why)
    base = tmp_path_factory.mktemp("pipinstall")
    v = Venv(str(base / "V"))
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", v.path], check=True, timeout=300)
    return v


@pytest.fixture(scope="module")
def installed(venv, tmp_path_factory):
    """The venv after `pip install --no-build-isolation ./python` (from the repository itself); its site-packages."""
    before = _tree_state()
    build = tmp_path_factory.mktemp("pybuild")
    t0 = time.monotonic()
    r = venv.pip_install(build)
    print(f"\npip install ./python (builds librcanvas): {time.monotonic() - t0:.0f} s")
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert "Successfully installed rcanvas-" in r.stdout, r.stdout[-3000:]
    assert (build / "build" / "librcanvas-cmake" / "CMakeCache.txt").exists(), "the CMake tree is in the build dir"
    assert _tree_state() == before, "pip install wrote into the source tree"
    site = subprocess.run([venv.python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                          capture_output=True, text=True, check=True, env=_clean_env()).stdout.strip()
    return site


# ---- the install ----------------------------------------------------------------------------------------------

def test_the_installed_package_loads_its_bundled_library(venv, installed, tmp_path):
    so = os.path.join(installed, "rcanvas", "librcanvas.so")
    with open(so, "rb") as f:
        assert f.read(4) == b"\x7fELF", "the bundled library is an ELF shared object"
    code = ("import json, numpy as np, rcanvas\n"
            "lib = rcanvas.lib()\n"
            "s = rcanvas.Server(port=0); c = s.canvas(); c.present(np.zeros((8, 8, 3), np.uint8))\n"
            "maps = [l.split()[-1] for l in open('/proc/self/maps') if 'librcanvas' in l]\n"
            "print(json.dumps({'pkg': rcanvas.__file__, 'lib': lib._rcanvas_path, 'maps': sorted(set(maps)),\n"
            "                  'numpy': np.__file__, 'port': s.port}))\n"
            "s.close()\n")
    r = subprocess.run([venv.python, "-c", code], env=_clean_env(), capture_output=True, text=True, cwd=tmp_path,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["pkg"] == os.path.join(installed, "rcanvas", "__init__.py"), "the installed copy, not the source tree"
    assert got["lib"] == so and got["maps"] == [so], got
    assert got["numpy"].startswith("/usr/lib/python3/"), "numpy from the system (--system-site-packages)"
    assert got["port"] > 0
    # RCANVAS_LIBRARY still comes first.
    build_so = os.path.join(ROOT, "build", "librcanvas.so")
    if os.path.exists(build_so):
        r = subprocess.run([venv.python, "-c", "import rcanvas; print(rcanvas.lib()._rcanvas_path)"],
                           env=_clean_env(RCANVAS_LIBRARY=build_so), capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.strip() == build_so, r.stdout + r.stderr


def test_sdist_carries_the_c_sources_the_library_build_needs(tmp_path):
    if _missing_tools():
        pytest.skip(_missing_tools())
    before = _tree_state()
    out = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta as b; print(b.build_sdist({str(out)!r}))"],
                       cwd=os.path.join(ROOT, "python"), env=_clean_env(RCANVAS_PY_BUILD_DIR=str(tmp_path / "b")),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    name = r.stdout.strip().splitlines()[-1]
    assert _tree_state() == before, "building the sdist wrote into the source tree"
    with tarfile.open(out / name) as tf:
        tf.extractall(tmp_path / "x")
    top = tmp_path / "x" / name[:-len(".tar.gz")]
    for f in ("setup.py", "pyproject.toml", "rcanvas/__main__.py", "csrc/CMakeLists.txt", "csrc/include/rcanvas.h",
              "csrc/src/rcanvas.c", "csrc/client/index.html", "csrc/cmake/embed.cmake"):
        assert (top / f).is_file(), f"the sdist lacks {f}"
    assert not (top / "csrc" / "tests").exists() and not (top / "csrc" / "examples").exists()
    # CMake's generate step checks that every source of every target exists: the library's configure from csrc/ alone.
    r = subprocess.run(["cmake", "-S", str(top / "csrc"), "-B", str(tmp_path / "cm"), "-DRCANVAS_PROGRAMS=OFF"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "Generating done" in r.stdout


def test_missing_cmake_or_dev_package_names_make_deps(venv, tmp_path):
    # No cmake on PATH: stops before anything is built.
    r = venv.pip_install(tmp_path / "nocmake", {"PATH": "/nonexistent"})
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "rcanvas: cmake is not installed" in out and "make deps" in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    # pkg-config finds none of the -dev packages: CMake's configure fails; the message names the first missing one.
    r = venv.pip_install(tmp_path / "nodev", {"PKG_CONFIG_LIBDIR": "/nonexistent", "PKG_CONFIG_PATH": ""})
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert re.search(r"rcanvas: configuring librcanvas \(cmake\) failed with exit status \d+ \(missing: libwebsockets "
                     r"\(Debian: libwebsockets-dev\)\)", out), out[-3000:]
    assert "make deps" in out


# ---- a raw viewer ---------------------------------------------------------------------------------------------

def _decode(payload):
    if Image is not None:
        return np.asarray(Image.open(io.BytesIO(payload)).convert("RGB"))
    return decode_png(payload)[..., :3]


class Viewer:
    """A raw WebSocket viewer of url (the page's URL with its token) that assembles PNG tiles into pictures."""

    def __init__(self, url):
        u = urlparse(url)
        self.ws = RawWS(u.hostname, u.port, u.path.rstrip("/") + "/ws?" + u.query, timeout=20)
        hello = json.loads(self.ws.recv())
        assert hello["type"] == "hello", hello
        self.hello = hello
        self.picture = None

    def frame(self):
        """Reads tiles until a frame's last one; acks it; returns a copy of the picture (H, W, 3)."""
        while True:
            msg = self.ws.recv()
            if isinstance(msg, str):
                continue
            h, payload = parse_frame(msg)
            assert h["codec"] == 2, f"expected PNG tiles, got codec {h['codec']}"
            fw, fh = h["frame_width"], h["frame_height"]
            if self.picture is None or self.picture.shape[:2] != (fh, fw):
                self.picture = np.zeros((fh, fw, 3), np.uint8)
            tile = _decode(payload)
            assert tile.shape[:2] == (h["h"], h["w"])
            self.picture[h["y"]:h["y"] + h["h"], h["x"]:h["x"] + h["w"]] = tile
            if h["flags"] & 2:
                self.ws.send_json({"type": "ack", "seq": h["seq"]})
                return self.picture.copy()

    def until(self, cond, what, timeout=60):
        """Frames until cond(picture) holds; returns that picture."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            p = self.frame()
            if cond(p):
                return p
        raise AssertionError(f"no frame within {timeout} s where {what}")

    def close(self):
        self.ws.close()


def _start(cmd, env, pattern, cwd):
    """Starts cmd; returns (proc, url) once a stdout line matches pattern (group 1: the URL), within 60 s. A thread
    keeps reading stdout (proc.lines), so that the pipe never fills."""
    # SIGINT at its default: a test run from a background job (CI's, a chroot's) inherits it ignored, and Python
    # leaves an ignored SIGINT ignored, so the Ctrl-C test's demo never saw its SIGINT (the chroot's make test,
    # twice; test_signals does the same)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.lines = queue.Queue()

    def read():
        for line in proc.stdout:
            proc.lines.put(line)
        proc.lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            line = proc.lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        m = re.match(pattern, line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise AssertionError(f"{cmd} printed no URL within 60 s: {proc.stderr.read()[-3000:]}")


def _stop(proc, sig):
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        # still running: its threads' Python stacks (PYTHONFAULTHANDLER, _clean_env) say where it hangs
        proc.send_signal(signal.SIGABRT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            err = "(no output)"
        raise AssertionError(f"{proc.args} did not exit within 30 s of signal {sig}; its stderr ends:\n{err[-6000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()


def _mapped(pid, needle):
    with open(f"/proc/{pid}/maps") as f:
        return sorted({line.split()[-1] for line in f if needle in line})


# ---- the demo: python -m rcanvas ------------------------------------------------------------------------------

def test_demo_moves_paints_where_dragged_and_exits_0_on_ctrl_c(venv, installed, tmp_path):
    proc, url = _start([venv.python, "-m", "rcanvas", "--port", "0", "--codec", "png"], _clean_env(),
                       r"^rcanvas demo: open (http://127\.0\.0\.1:\d+/\?token=\w+)", tmp_path)
    try:
        assert _mapped(proc.pid, "librcanvas") == [os.path.join(installed, "rcanvas", "librcanvas.so")]
        v = Viewer(url)
        a = v.frame()
        assert a.shape == (480, 640, 3), a.shape  # the canvas's initial size: no viewer reported its own
        assert not (a == PAINT).all(axis=2).any(), "nothing is painted before a drag"
        v.until(lambda p: np.abs(p.astype(int) - a).sum() > 0, "the picture moved")
        # A drag from (100, 100) to (200, 100), logical px = physical here (pixel ratio 1).
        ev = {"button": 1, "buttons": [1], "modifiers": [], "ntouches": 0, "touches": {}}
        v.ws.send_json({"event_type": "pointer_down", "x": 100, "y": 100, "time_stamp": 1, **ev})
        for i, x in enumerate(range(120, 201, 20)):
            v.ws.send_json({"event_type": "pointer_move", "x": x, "y": 100, "time_stamp": 2 + i, **ev})
        v.ws.send_json({"event_type": "pointer_up", "x": 200, "y": 100, "time_stamp": 9, **{**ev, "buttons": []}})
        painted = lambda p: all(tuple(p[100, x]) == PAINT for x in (100, 150, 200))
        p = v.until(painted, "the stroke from (100, 100) to (200, 100) is white")
        assert tuple(p[130, 150]) != PAINT and tuple(p[100, 260]) != PAINT, "paint only along the drag"
        # A move without a button pressed paints nothing.
        v.ws.send_json({"event_type": "pointer_move", "x": 300, "y": 300, "time_stamp": 10,
                        **{**ev, "buttons": []}})
        v.ws.send_json({"event_type": "key_down", "key": "c", "modifiers": [], "time_stamp": 11})
        p = v.until(lambda p: not (p == PAINT).all(axis=2).any(), "key c cleared the paint")
        v.close()
    finally:
        rc = _stop(proc, signal.SIGINT)
    err = proc.stderr.read()
    assert rc == 0, f"exit status {rc} after SIGINT: {err[-3000:]}"
    assert "Traceback" not in err, err[-3000:]


def test_demo_taken_port_is_one_line_and_exit_2(venv, installed, tmp_path):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        r = subprocess.run([venv.python, "-m", "rcanvas", "--port", str(s.getsockname()[1])], env=_clean_env(),
                           capture_output=True, text=True, timeout=60, cwd=tmp_path)
    finally:
        s.close()
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "RCANVAS_EADDRINUSE" in lines[0] and "--port" in lines[0], r.stderr


# ---- the rendercanvas runner ----------------------------------------------------------------------------------

def test_runner_without_rendercanvas_says_what_to_install(venv, installed, tmp_path):
    if subprocess.run([venv.python, "-c", "import rendercanvas"], env=_clean_env(), capture_output=True,
                      cwd=tmp_path).returncode == 0:
        pytest.skip("rendercanvas is importable in the venv (installed on the system): cannot test its absence")
    script = tmp_path / "app.py"
    script.write_text("from rendercanvas.auto import RenderCanvas, loop\n")
    r = subprocess.run([venv.python, "-m", "rcanvas.rendercanvas", str(script)], env=_clean_env(),
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "rcanvas: rcanvas.rendercanvas needs the rendercanvas package (>= 2.7), which is not installed: "
        "pip install 'rcanvas[rendercanvas]' (or pip install rendercanvas)"], r.stderr
    # Imported from a program: a ModuleNotFoundError with the same words.
    r = subprocess.run([venv.python, "-c", "import rcanvas.rendercanvas"], env=_clean_env(), capture_output=True,
                       text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 1 and "ModuleNotFoundError: rcanvas.rendercanvas needs the rendercanvas package" in r.stderr


@pytest.mark.skipif(not os.path.isfile(SNAKE), reason=f"rendercanvas is not at {RENDERCANVAS} (../shared/third_party): "
                                                      "skipping the installed runner on snake.py")
def test_installed_runner_serves_snake(venv, installed, tmp_path):
    env = _clean_env(PYTHONPATH=RENDERCANVAS, RCANVAS_CODEC="png", PYTHONUNBUFFERED="1")
    proc, url = _start([venv.python, "-m", "rcanvas.rendercanvas", SNAKE], env,
                       r"^rcanvas: open (http://127\.0\.0\.1:\d+/\?token=\w+)", tmp_path)
    try:
        assert _mapped(proc.pid, "librcanvas") == [os.path.join(installed, "rcanvas", "librcanvas.so")]
        v = Viewer(url)
        # snake.py draws a 20-cell white snake on black (a uint8 bitmap, one pixel per cell) moving one cell a frame.
        white = lambda p: (p >= 250).all(axis=2)
        black = lambda p: (p <= 5).all(axis=2)
        a = v.until(lambda p: white(p).any(), "the snake is there")
        assert (white(a) | black(a)).all(), "only white snake and black ground"
        assert white(a).sum() <= 20 * (a.shape[0] * a.shape[1]) // (60 * 80), "at most 20 cells"
        b = v.until(lambda p: white(p).any() and not np.array_equal(white(p), white(a)), "the snake moved")
        assert white(b).sum() >= white(a).sum(), "a moving snake does not shrink"
        v.close()
    finally:
        _stop(proc, signal.SIGTERM)


def test_pip_install_with_build_isolation_from_pypi(tmp_path):
    """The README's commands: a plain venv (no system packages) and `pip install ./python` with pip's normal build
    isolation (setuptools, wheel and numpy from PyPI); the package then loads its bundled library and serves a
    frame. Needs PyPI, which this project's machines and CI reach."""
    if subprocess.run([sys.executable, "-c", "import ensurepip, venv"], capture_output=True).returncode != 0:
        pytest.skip("python3 -m venv does not work here (apt: python3-venv)")
    v = Venv(str(tmp_path / "V"))
    subprocess.run([sys.executable, "-m", "venv", v.path], check=True, timeout=300)
    before = _tree_state()
    build = tmp_path / "pybuild"
    build.mkdir()
    r = subprocess.run([v.pip, "install", "--disable-pip-version-check", os.path.join(ROOT, "python")],
                       env=_clean_env(RCANVAS_PY_BUILD_DIR=str(build)), capture_output=True, text=True,
                       timeout=INSTALL_TIMEOUT, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert "Successfully installed" in r.stdout and "rcanvas-" in r.stdout, r.stdout[-3000:]
    assert _tree_state() == before, "pip install wrote into the source tree"
    code = ("import json, numpy as np, rcanvas\n"
            "s = rcanvas.Server(port=0); c = s.canvas(); c.present(np.zeros((8, 8, 3), np.uint8))\n"
            "print(json.dumps({'lib': rcanvas.lib()._rcanvas_path, 'numpy': np.__file__, 'port': s.port}))\n"
            "s.close()\n")
    r = subprocess.run([v.python, "-c", code], env=_clean_env(), capture_output=True, text=True, cwd=tmp_path,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["lib"].startswith(v.path) and got["lib"].endswith("rcanvas/librcanvas.so"), got
    assert got["numpy"].startswith(v.path), "numpy installed into the venv from PyPI, not the system's"
    assert got["port"] > 0
    # the notebook widget's front end, bundled by the build from the client/ it built (not a copy kept in git)
    widget = os.path.join(os.path.dirname(got["lib"]), "widget.js")
    with open(widget, encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("// Generated by python/rcanvas/bundle_widget.py"), text[:200]
    with open(os.path.join(ROOT, "client", "connection.js"), encoding="utf-8") as f:
        assert "GONE_AFTER" in f.read() and "GONE_AFTER" in text, "the client's modules are in the bundle"
