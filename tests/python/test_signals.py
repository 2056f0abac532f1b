# SPDX-License-Identifier: MIT
# Ctrl-C ("Signals"): real processes get a real SIGINT once their server listens (the URL line is out),
# with and without a WebSocket viewer, and must exit by themselves (not killed by the test) with the expected
# status and no traceback:
#   - a numpy wait() loop as in the README (it catches KeyboardInterrupt): status 0; wait() used to block in C
#     with no timeout, so Python's handler never ran while no viewer watched;
#   - the same loop without the catch: Python's own ending (killed by SIGINT, KeyboardInterrupt out of wait());
#   - the runner `python3 -m rcanvas.rendercanvas` on rendercanvas' noise.py: status 0 (rendercanvas' handler
#     stops the loop; it used to hang there with asyncio asleep in epoll_wait), and on a script that is not
#     rendercanvas' (a bare wait() loop, no catch): status 130, quietly.
# The runner cases need rendercanvas (../shared/third_party) and skip without it.
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import rcanvas
from conftest import RENDERCANVAS, ROOT
from wsraw import RawWS, parse_frame

URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]+)")
START_S = 60  # start-up (numpy, rendercanvas, a loaded 2-core machine)
EXIT_S = 15   # from SIGINT to the exit: measured 0.3-1.7 s with the machine at a load of 16
HAVE_RENDERCANVAS = os.path.isdir(os.path.join(RENDERCANVAS, "rendercanvas"))
needs_rendercanvas = pytest.mark.skipif(
    not HAVE_RENDERCANVAS, reason=f"rendercanvas is not at {RENDERCANVAS} (../shared/third_party): the runner "
                                  "imports it, so its Ctrl-C cases are skipped")

LOOP = '''
import numpy as np, rcanvas
server = rcanvas.Server(port=0)
canvas = server.canvas(title="noise", update_mode="continuous", max_fps=30, codec="png", refine_ms=0)
print(canvas.url, flush=True)
{try_}while True:
{i}    wake = canvas.wait()
{i}    for ev in canvas.poll_events():
{i}        print(ev)
{i}    if wake & rcanvas.WAKE_DRAW:
{i}        w, h = canvas.physical_size
{i}        canvas.present(np.random.randint(0, 256, (h, w, 3), np.uint8))
{except_}'''
CAUGHT = LOOP.format(try_="try:\n    ", i="    ", except_="except KeyboardInterrupt:\n"
                     "    server.close()\n    print('interrupted: closed', flush=True)\n")
UNCAUGHT = LOOP.format(try_="", i="", except_="")


class Proc:
    """A child process with SIGINT at its default (a test run from a background job inherits it ignored, and
    Python leaves an ignored SIGINT ignored), stdout read line by line, stderr into a file."""

    def __init__(self, args, tmp_path, pythonpath):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath), PYTHONUNBUFFERED="1")
        self.err_path = tmp_path / "stderr.txt"
        self._err = open(self.err_path, "w")
        self.p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=self._err, text=True,
                                  cwd=tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines = queue.Queue()
        self.out = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.out.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def url(self):
        """(port, token) of the first URL line: the server listens from then on."""
        end = time.monotonic() + START_S
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                pytest.fail(f"exited ({self.p.wait()}) before printing a URL; stderr:\n{self.stderr()}")
            m = URL.search(line)
            if m:
                return int(m[1]), m[2]
        self.kill()
        pytest.fail(f"no URL line within {START_S} s; stderr:\n{self.stderr()}")

    def interrupt(self):
        """SIGINT, then the exit status; fails (after killing it) if it does not exit within EXIT_S."""
        t0 = time.monotonic()
        self.p.send_signal(signal.SIGINT)
        try:
            rc = self.p.wait(EXIT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"still running {EXIT_S} s after SIGINT (killed by the test); stdout:\n{''.join(self.out)}"
                        f"stderr:\n{self.stderr()}")
        self.exit_s = time.monotonic() - t0
        return rc

    def stderr(self):
        self._err.flush()
        return self.err_path.read_text()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def stdout(self):
        deadline = time.monotonic() + 5  # the reader thread drains the pipe after the exit
        while time.monotonic() < deadline:
            try:
                if self.lines.get(timeout=0.1) is None:
                    break
            except queue.Empty:
                pass
        return "".join(self.out)


def watch(port, token, frames=3):
    """A raw WebSocket viewer on "/" that acks; returns once it has been sent `frames` whole frames."""
    ws = RawWS("127.0.0.1", port, f"/ws?token={token}", timeout=START_S)
    n = 0
    while n < frames:
        msg = ws.recv()
        if isinstance(msg, bytes):
            h, _ = parse_frame(msg)
            if h["flags"] & 2:  # the last tile of a frame
                ws.send_json({"type": "ack", "seq": h["seq"]})
                n += 1
    return ws


def closed_by_server(ws):
    """The close frame's code once the server goes away (reading past frames still in flight)."""
    try:
        while True:
            ws.recv()
    except ConnectionError as e:
        return str(e)
    finally:
        ws.close()


@pytest.fixture
def proc(tmp_path):
    made = []

    def make(args, pythonpath):
        p = Proc(args, tmp_path, pythonpath)
        made.append(p)
        return p

    yield make
    for p in made:
        p.kill()


def loop_script(tmp_path, text):
    path = tmp_path / "loop.py"
    path.write_text(text)
    return [sys.executable, str(path)]


PY = [os.path.join(ROOT, "python")]


# ---- wait() itself ------------------------------------------------------------------------------------------

def test_wait_in_slices_keeps_its_timeout():
    # Sliced at 0.1 s, a wait with no viewer still lasts its whole timeout (a slice's 0 is not returned early).
    with rcanvas.Server() as s:
        c = s.canvas(update_mode="continuous")
        t0 = time.monotonic()
        assert c.wait(0.35) == 0
        assert time.monotonic() - t0 >= 0.34
        assert c.wait(0) == 0


# ---- a numpy wait() loop ------------------------------------------------------------------------------------

def test_numpy_loop_no_viewer(proc, tmp_path):
    p = proc(loop_script(tmp_path, CAUGHT), PY)
    p.url()
    time.sleep(0.3)  # into wait(), where no viewer means no draw is ever due: it stays in C
    rc = p.interrupt()
    err = p.stderr()
    assert rc == 0, err
    assert "Traceback" not in err, err
    assert "interrupted: closed" in p.stdout()  # it left through the README's except KeyboardInterrupt


def test_numpy_loop_with_a_viewer(proc, tmp_path):
    p = proc(loop_script(tmp_path, CAUGHT), PY)
    ws = watch(*p.url())  # frames flowing: the loop draws and presents
    rc = p.interrupt()
    err = p.stderr()
    assert rc == 0, err
    assert "Traceback" not in err, err
    assert "interrupted: closed" in p.stdout()
    assert closed_by_server(ws).startswith("close 03e9")  # 1001: the server closed the viewer


def test_numpy_loop_uncaught_is_pythons_own_ending(proc, tmp_path):
    # No catch: the KeyboardInterrupt comes out of wait() and Python ends as it does for any script.
    p = proc(loop_script(tmp_path, UNCAUGHT), PY)
    p.url()
    time.sleep(0.3)
    rc = p.interrupt()
    err = p.stderr()
    assert rc == -signal.SIGINT, err
    assert err.rstrip().endswith("KeyboardInterrupt") and "in wait" in err, err


# ---- the rendercanvas runner --------------------------------------------------------------------------------

def runner(script):
    return [sys.executable, "-m", "rcanvas.rendercanvas", str(script)]


NOISE = os.path.join(RENDERCANVAS, "examples", "noise.py")


@needs_rendercanvas
def test_runner_noise_no_viewer(proc):
    p = proc(runner(NOISE), PY + [RENDERCANVAS])
    p.url()
    time.sleep(0.3)  # into loop.run()
    rc = p.interrupt()
    err = p.stderr()
    assert rc == 0, err
    assert "Traceback" not in err, err
    assert "Received signal Interrupt" in err, err  # rendercanvas' handler stopped the loop


@needs_rendercanvas
def test_runner_noise_with_a_viewer(proc):
    p = proc(runner(NOISE), PY + [RENDERCANVAS])
    ws = watch(*p.url())  # rendercanvas draws noise, rcanvas streams it
    rc = p.interrupt()
    err = p.stderr()
    assert rc == 0, err
    assert "Traceback" not in err, err
    assert "Received signal Interrupt" in err, err
    assert closed_by_server(ws).startswith("close 03e9")


@needs_rendercanvas
def test_runner_plain_script_exits_130_quietly(proc, tmp_path):
    # A script that is not rendercanvas' (a bare wait() loop, no catch): KeyboardInterrupt reaches the runner,
    # which closes the server and exits 130 without a traceback.
    p = proc(runner(loop_script(tmp_path, UNCAUGHT)[1]), PY + [RENDERCANVAS])
    p.url()
    time.sleep(0.3)
    rc = p.interrupt()
    err = p.stderr()
    assert rc == 130, err
    assert "Traceback" not in err, err
