# SPDX-License-Identifier: MIT
"""The Python binding against an attacker's and a careless app's inputs:

- present() from many threads at once (each at its own size, (H, W, 4) and (H, W, 3) mixed) neither crashes nor
  sends a viewer a byte that is not of a presented frame; the same run under AddressSanitizer (the ASan build's
  librcanvas.so, libasan preloaded) reports nothing. The shared frame description of before crashed the process
  or sent other frames' and heap bytes.
- An app that holds the GIL in a long C call does not stall the server: a wrong-token request (which rcanvas
  logs) and then the page, the WebSocket upgrade and a frame are all answered while the GIL is still held, and
  the log line reaches the Python logger afterwards. Before, the log callback waited for the GIL on the network
  thread, and so did every page and viewer.
- A NUL in a string argument and an integer outside its C field's range are refused with ValueError (before,
  a token or name was silently cut at the NUL, and port=2**32 + p listened on p); an (H, W, 3) array over the
  frame size limit is refused before it is converted, and no conversion buffer is kept for a refused size.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import rcanvas
from wsraw import RawWS, parse_frame

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def child_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_present_threads(env, threads=8, presents=300, timeout=240):
    p = subprocess.run([sys.executable, os.path.join(HERE, "attack", "present_threads.py"), str(threads),
                        str(presents)], env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-6000:]}"
    counts = json.loads(p.stdout.strip().splitlines()[-1])
    return counts, p.stderr


def check_counts(counts, threads, presents):
    assert counts["errors"] == [], counts["errors"]
    assert counts["presented"] == threads * presents
    assert counts["frames"] > 0 and counts["tiles"] >= counts["frames"]
    assert counts["bad_tiles"] == 0, counts


def test_present_from_many_threads_sends_only_presented_pixels():
    counts, _ = run_present_threads(child_env())
    check_counts(counts, 8, 300)


def asan_library():
    lib = os.environ.get("RCANVAS_ASAN_LIBRARY") or os.path.join(ROOT, "build-asan", "librcanvas.so")
    if not os.path.exists(lib):
        pytest.skip(f"no ASan build of librcanvas.so at {lib} (make build-asan, or set RCANVAS_ASAN_LIBRARY)")
    runtime = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(runtime) or not os.path.exists(runtime):
        pytest.skip("gcc does not name its libasan.so (the ASan runtime to preload into python)")
    return lib, runtime


def test_present_from_many_threads_under_asan():
    lib, runtime = asan_library()
    # Leaks are not checked: the interpreter itself keeps memory to its end. halt_on_error: the first report fails.
    env = child_env(RCANVAS_LIBRARY=lib, LD_PRELOAD=runtime,
                    ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=66",
                    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    counts, err = run_present_threads(env, threads=8, presents=60, timeout=400)
    check_counts(counts, 8, 60)
    assert "AddressSanitizer" not in err and "runtime error" not in err, err[-6000:]


def test_a_held_gil_does_not_stall_pages_upgrades_or_frames():
    hold_s = 4.0
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "attack", "gil_server.py"), str(int(hold_s * 1e6))],
                         env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        info = json.loads(p.stdout.readline())
        port, token = info["port"], info["token"]
        base = f"http://127.0.0.1:{port}"
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "holding"
        times = {}
        # a wrong token: refused, and logged by rcanvas' network thread
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{base}/?token=wrong-token-wrong-token-wrong", timeout=30)
        assert e.value.code == 403
        times["refused"] = time.monotonic()
        # the page (a Bearer token: a tool's way, answered 200 without a redirect)
        req = urllib.request.Request(f"{base}/", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        times["page"] = time.monotonic()
        ws = RawWS("127.0.0.1", port, f"/ws?token={token}", timeout=30)
        try:
            assert json.loads(ws.recv())["type"] == "hello"
            times["upgrade"] = time.monotonic()
            while True:
                msg = ws.recv()
                if isinstance(msg, bytes):
                    h, _ = parse_frame(msg)
                    assert (h["frame_width"], h["frame_height"]) == (64, 48)
                    break
            times["frame"] = time.monotonic()
        finally:
            ws.close()
        out, err = p.communicate("done\n", timeout=60)
        assert p.returncode == 0, err[-4000:]
        result = json.loads(out.strip().splitlines()[-1])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    t_hold, t_release = result["t_hold"], result["t_release"]
    assert t_release - t_hold >= hold_s * 0.99   # t_hold is taken just before "holding" is printed
    for what, t in times.items():   # all answered while the app still held the GIL
        assert t_hold < t < t_release, f"{what} answered {t - t_hold:.2f} s into a {hold_s} s hold of the GIL"
    wrong = [t for t, level, m in result["logs"] if "wrong token" in m]
    assert wrong, f"the wrong token's log line never reached the Python logger: {result['logs']}"
    # queued while the pages were served, passed on to Python once the GIL was free
    assert wrong[0] > times["page"] and wrong[0] > t_release - 0.05


@pytest.fixture
def server():
    s = rcanvas.Server(port=0, max_frame_dim=1024)
    yield s
    s.close()


def test_nul_in_strings_is_refused_not_cut():
    good = "A" * 30
    with pytest.raises(ValueError, match="token contains a NUL"):
        rcanvas.Server(port=0, token=good + "\0tail")
    with pytest.raises(ValueError, match="view_token contains a NUL"):
        rcanvas.Server(port=0, view_token=good + "\0")
    with pytest.raises(ValueError, match="allowed_hosts"):
        rcanvas.Server(port=0, allowed_hosts=["example.org\0.evil"])
    with pytest.raises(ValueError, match="base_path"):
        rcanvas.Server(port=0, base_path="/viz\0x")
    with rcanvas.Server(port=0) as s:
        with pytest.raises(ValueError, match="name contains a NUL"):
            s.canvas("plot\0other")
        c = s.canvas("plot")
        for call in (lambda: c.set_title("t\0x"), lambda: c.set_cursor("pointer\0x")):
            with pytest.raises(ValueError, match="NUL"):
                call()


@pytest.mark.parametrize("kwargs, what", [
    ({"port": 2**32 + 18094}, "port"), ({"port": -1}, "port"), ({"port": 65536}, "port"),
    ({"max_viewers": 2**32 + 1}, "max_viewers"), ({"max_viewers": 0}, "max_viewers"),
    ({"encode_threads": 2**31}, "encode_threads"), ({"max_frame_dim": 2**32}, "max_frame_dim"),
])
def test_out_of_range_server_integers_are_refused(kwargs, what):
    with pytest.raises(ValueError, match=what):
        rcanvas.Server(**kwargs)


def test_out_of_range_canvas_integers_are_refused(server):
    for kwargs, what in (({"width": 2**32 + 640}, "width"), ({"height": -1}, "height"),
                         ({"quality": 2**31}, "quality"), ({"max_in_flight": 2**40}, "max_in_flight"),
                         ({"refine_ms": -2**31 - 1}, "refine_ms")):
        with pytest.raises(ValueError, match=what):
            server.canvas("x", **kwargs)
    c = server.canvas("x")
    with pytest.raises(ValueError, match="option"):
        c.set_option("max_in_flight", 2**32 + 2)
    with pytest.raises(ValueError, match="quality"):
        c.set_codec("jpeg", quality=2**32 + 85)
    with pytest.raises(TypeError, match="integer"):
        c.set_option("max_in_flight", "many")
    assert c.get_option("max_in_flight") == 2     # nothing reached the canvas


def test_a_frame_over_the_limit_is_refused_before_conversion(server):
    c = server.canvas()
    # (H, W, 3) over max_frame_dim: a view of one row (no memory of its own), so that a conversion would have to
    # allocate the whole frame, which the refusal must come before
    row = np.zeros((1, 2048, 3), np.uint8)
    big = np.broadcast_to(row, (1500, 2048, 3))
    with pytest.raises(rcanvas.RcanvasError) as e:
        c.present(big)
    assert e.value.name == "RCANVAS_EFRAME_SIZE" and "max_frame_dim 1024" in str(e.value)
    assert c._rgbx is None
    # a size under max_frame_dim that the codec refuses (H.264: at most 36864 macroblocks) keeps no buffer either
    c.set_codec("h264")
    wide = np.broadcast_to(np.zeros((1, 1024, 3), np.uint8), (1024, 1024, 3))
    small = np.zeros((16, 16, 3), np.uint8)
    c.present(small)
    assert c._rgbx is not None and c._rgbx.shape[:2] == (16, 16)
    try:
        c.present(wide)          # 4096 macroblocks: within H.264's limit, taken
    except rcanvas.RcanvasError as err:
        pytest.fail(f"a 1024x1024 frame is within every codec's limits: {err}")
    assert c._rgbx.shape[:2] == (1024, 1024)


def test_an_unsafe_ports_folder_leaves_no_server_listening(tmp_path, monkeypatch):
    # rcanvas.jupyter's ports folder given as a symlink (which another user could swap): the kernel's server
    # refuses to register there and is closed, not left listening unregistered
    from rcanvas import _kernel
    real = tmp_path / "ports"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.setenv("RCANVAS_JUPYTER_PROXY", "/rcanvas")
    monkeypatch.setenv("RCANVAS_JUPYTER_PORTS", str(link))
    monkeypatch.delenv("RCANVAS_PORT", raising=False)
    monkeypatch.delenv("RCANVAS_BASE_PATH", raising=False)
    monkeypatch.setattr(_kernel, "kernel_identity", lambda: None)   # not in a kernel: any free port
    before = {id(s) for s in rcanvas._servers if s._h is not None}
    try:
        rcanvas.get_server()
        pytest.fail("get_server() took a symlinked ports folder")
    except _kernel.PortsDirError:
        # looked at while the exception (and so the failed call's frame) is alive: closed, not merely unreferenced
        left = [s for s in rcanvas._servers if s._h is not None and id(s) not in before]
    assert left == [], "a server was left open after its registration was refused"
    assert list(real.iterdir()) == []


def test_a_session_url_opens_this_server_only_and_never_carries_the_token():
    # the notebook widget's direct way: the kernel hands the browser a session URL, not the token; it opens this
    # server process (page and WebSocket), and nothing of it opens another server with the same token (a kernel's
    # token survives its restart; a listener that took the port would have caught what reconnects send)
    token = "T" * 30
    with rcanvas.Server(port=0, token=token) as a:
        a.canvas("plot")
        url = a.session_url("plot")
        assert token not in url and "?session=" in url and "/s/" in url
        path = url.split(str(a.port), 1)[1]                       # /s/R/c/plot?session=S
        assert path.startswith("/s/") and "/c/plot?session=" in path
        ws_path = path.replace("?session=", "/ws?session=")
        ws = RawWS("127.0.0.1", a.port, ws_path)
        try:
            hello = json.loads(ws.recv())
            assert hello["type"] == "hello" and hello["canvas"] == "plot"
        finally:
            ws.close()
        view = a.session_url("plot", view_only=True)
        assert view.split("?session=")[1] != url.split("?session=")[1], "one session key per role"
        rel = a.session_url("plot", relative=True)
        assert rel.startswith("/s/") and rel.endswith(url.split("?session=")[1])
        with rcanvas.Server(port=0, token=token) as b:
            b.canvas("plot")
            assert b.session_url("plot").split(str(b.port), 1)[1] != path, "a new process, a new session"
            with pytest.raises(ConnectionError, match="401|403"):
                RawWS("127.0.0.1", b.port, ws_path)                # a's session opens nothing on b
