# SPDX-License-Identifier: MIT
"""rendercanvas' own backend check (its tests/test_backends.py) applied to rcanvas.rendercanvas: every _rc_*
method of BaseRenderCanvas and BaseLoop is implemented by our canvas and loop classes, and no others; plus the
module's names, and a canvas made and closed in-process. Needs ../shared/third_party/rendercanvas."""

import importlib
import os
import sys

import pytest

from conftest import RENDERCANVAS, ROOT

if not os.path.isdir(os.path.join(RENDERCANVAS, "rendercanvas")):
    pytest.skip(f"rendercanvas is not at {RENDERCANVAS} (../shared/third_party): skipping the rendercanvas "
                "backend tests", allow_module_level=True)

sys.path.insert(0, RENDERCANVAS)
sys.path.insert(0, os.path.join(RENDERCANVAS, "tests"))

BACKEND = os.path.join(ROOT, "python", "rcanvas", "rendercanvas.py")


def module():
    tb = importlib.import_module("test_backends")   # rendercanvas' test, unmodified
    m = tb.Module.__new__(tb.Module)               # its AST reader, pointed at our file
    m.name = "rcanvas.rendercanvas"
    m.filename = BACKEND
    with open(BACKEND, "rb") as f:
        m.source = f.read().decode()
    m.names = m.get_namespace()
    return tb, m


def test_rc_methods_of_canvas_and_loop():
    tb, m = module()
    assert len(tb.canvas_rc_methods) >= 10 and len(tb.loop_rc_methods) >= 3
    canvas_class = m.get_canvas_class()
    m.check_canvas(canvas_class)
    assert canvas_class.name == "RcanvasRenderCanvas"
    loop_class = m.get_loop_class()
    m.check_loop(loop_class)
    assert loop_class.name == "RcanvasLoop"


def test_module_names_and_a_canvas():
    import numpy as np
    import rcanvas.rendercanvas as backend

    for name in backend.__all__:
        assert hasattr(backend, name), name
    assert backend.RenderCanvas is backend.RcanvasRenderCanvas
    c = backend.RenderCanvas(size=(320, 200), title="api test", name="apitest")
    try:
        assert c.url.startswith("http://127.0.0.1:") and "/c/apitest?token=" in c.url
        assert c.get_logical_size() == (320.0, 200.0)
        c.set_cursor("crosshair")
        ctx = c.get_bitmap_context()
        ctx.set_bitmap(np.zeros((20, 30, 4), np.uint8))
        assert "iframe" in c._repr_html_() and 'width="320"' in c._repr_html_()
    finally:
        c.close()
    assert c.get_closed() and c._canvas.closed


def test_runner_prints_the_url_and_exits_when_the_script_does(tmp_path):
    import subprocess

    script = tmp_path / "app.py"
    script.write_text(
        "import sys\n"
        "from rendercanvas.auto import RenderCanvas, loop\n"
        "c = RenderCanvas(title='runner test')\n"
        "print('backend', type(c).__module__, type(c).__name__)\n"
        "loop.call_later(0.3, c.close)\n"
        "loop.run()\n"
        "print('argv', sys.argv[1:])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), RENDERCANVAS]))
    r = subprocess.run([sys.executable, "-m", "rcanvas.rendercanvas", str(script), "--flag"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("rcanvas: open http://127.0.0.1:") and "?token=" in lines[0], r.stdout
    assert "backend rcanvas.rendercanvas RcanvasRenderCanvas" in lines
    assert lines[-1] == "argv ['--flag']"


def _viewer(c, name):
    """A raw WebSocket viewer of canvas c (page /c/NAME), past its hello."""
    from urllib.parse import urlparse, parse_qs
    from wsraw import RawWS

    u = urlparse(c.url)
    ws = RawWS("127.0.0.1", u.port, f"/c/{name}/ws?token={parse_qs(u.query)['token'][0]}")
    hello = ws.recv()
    assert '"type":"hello"' in hello.replace(" ", ""), hello
    return ws


def _pending_events(c, event_type, timeout=10):
    """Waits until the canvas's waiter thread has taken an event of that type from rcanvas (no loop runs here, so
    it stays in the hand-over list), then hands the list to the canvas as the loop would."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with c._lock:
            if any(e["event_type"] == event_type for e in c._pending):
                break
        time.sleep(0.02)
    else:
        raise AssertionError(f"no {event_type} event from rcanvas within {timeout} s")
    c._on_wake()


def test_resize_gives_the_physical_size_the_server_gives_the_canvas():
    """rendercanvas' get_physical_size() is the size the bitmap must have to fill the browser's canvas 1:1 (a bitmap
    a pixel smaller is upscaled, nearest-neighbour): the same rounding as rcanvas' own, 320.5 CSS px at ratio 1 is
    321, not Python's round-half-even 320."""
    import rcanvas.rendercanvas as backend

    c = backend.RenderCanvas(size=(320, 200), name="sizetest")
    ws = None
    try:
        c.set_logical_size(400, 300)  # no viewer yet: it applies
        assert c.get_physical_size() == (400, 300)
        ws = _viewer(c, "sizetest")
        ws.send_json({"event_type": "resize", "width": 320.5, "height": 240.5, "pixel_ratio": 1.0, "time_stamp": 1})
        _pending_events(c, "resize")
        assert c._canvas.physical_size == (321, 241)
        assert c.get_physical_size() == (321, 241)
        assert c.get_pixel_ratio() == 1.0
        ws.send_json({"event_type": "resize", "width": 200, "height": 150.25, "pixel_ratio": 1.5, "time_stamp": 2})
        _pending_events(c, "resize")
        assert c.get_physical_size() == c._canvas.physical_size == (300, 225)
        assert c.get_pixel_ratio() == 1.5
        assert c.get_logical_size() == (200.0, 150.0)
        # a viewer has its size now: set_logical_size cannot resize the browser's canvas, so the size stays
        c.set_logical_size(800, 600)
        assert c.get_physical_size() == (300, 225)
    finally:
        if ws:
            ws.close()
        c.close()


def test_char_events_carry_data_and_char_str():
    """rendercanvas 2.7's qt and glfw char events have `data` and, for compatibility, `char_str`."""
    import rcanvas.rendercanvas as backend

    c = backend.RenderCanvas(size=(64, 48), name="chartest")
    ws = None
    seen = []
    try:
        c.add_event_handler(seen.append, "char", "key_down")
        ws = _viewer(c, "chartest")
        ws.send_json({"event_type": "key_down", "key": "a", "modifiers": ["Shift"], "time_stamp": 3})
        ws.send_json({"event_type": "char", "data": "é", "modifiers": [], "time_stamp": 4})
        _pending_events(c, "char")
        c._events.flush()
        key, char = [e for e in seen if e["event_type"] == "key_down"], [e for e in seen if e["event_type"] == "char"]
        assert len(key) == 1 and key[0]["key"] == "a" and key[0]["modifiers"] == ("Shift",), seen
        assert key[0]["time_stamp"] == 3 and "viewer_id" not in key[0]
        assert len(char) == 1 and char[0]["data"] == "é" and char[0]["char_str"] == "é", seen
    finally:
        if ws:
            ws.close()
        c.close()
