# SPDX-License-Identifier: MIT
"""rcanvas.widget's kernel side without a front end: the relay that carries a view's WebSocket over the comm
(hello, frames, acks both ways, coalescing, the per-process message cap, refusals with their HTTP status), the
origins of local Jupyter servers, and the front end's bundle. Needs anywidget (build/venv-lab; make test-python
runs this file with it); skips elsewhere. lab.test.mjs runs the widget in JupyterLab."""

import json
import os
import shutil
import subprocess
import time

import numpy as np
import pytest

anywidget = pytest.importorskip("anywidget", reason="anywidget is not installed here (make venv-lab has it)")

import rcanvas  # noqa: E402
from rcanvas import widget  # noqa: E402


@pytest.fixture
def setup():
    srv = rcanvas.Server()
    c = srv.canvas("w", width=64, height=48)
    w = widget.widget_for(c)
    got = []
    w.send = lambda content, buffers=None: got.append((dict(content), list(buffers or [])))
    try:
        yield srv, c, w, got
    finally:
        w.close()
        srv.close()


def wait_for(fn, timeout=10):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_relay_carries_hello_frames_and_acks(setup):
    srv, c, w, got = setup
    # the browser gets the server process's session URL, never the token
    assert w.url == srv.session_url("w") and srv.token not in w.url
    assert w.width == 64 and w.height == 48 and w.canvas_name == "w"
    w._on_front(w, {"op": "open", "sid": "s1", "path": f"/c/w/ws?token={srv.token}&codecs=png"}, [])
    wait_for(lambda: any(g[0]["op"] == "open" for g in got))
    hello = wait_for(lambda: next((json.loads(t) for g in got if g[0]["op"] == "m" for t in g[0]["t"]
                                   if json.loads(t).get("type") == "hello"), None))
    assert hello["canvas"] == "w" and hello["protocol"] >= 1
    seqs = []
    for i in range(3):
        c.present(np.full((48, 64, 3), 40 * i, np.uint8))
        frame = wait_for(lambda: next((b for g in got if g[0]["op"] == "m" for b in g[1]
                                       if int.from_bytes(b[8:12], "little") not in seqs), None))
        seq = int.from_bytes(frame[8:12], "little")
        seqs.append(seq)
        assert frame[:4] == b"RCCF"
        # each binary message is one buffer, in the order of the kinds string
        m = next(g for g in got if any(b is frame for b in g[1]))
        assert m[0]["k"].count("b") == len(m[1]) and m[0]["sid"] == "s1"
        w._on_front(w, {"op": "m", "sid": "s1", "t": json.dumps({"type": "ack", "seq": seq})}, [])
    assert len(set(seqs)) == 3
    w._on_front(w, {"op": "m", "sid": "s1", "t": json.dumps({"event_type": "pointer_down", "x": 5, "y": 6,
                                                              "button": 1, "buttons": [1], "modifiers": [],
                                                              "time_stamp": 1.0})}, [])
    ev = wait_for(lambda: next((e for e in c.poll_events() if e["event_type"] == "pointer_down"), None))
    assert (ev["x"], ev["y"]) == (5, 6)
    w._on_front(w, {"op": "close", "sid": "s1", "code": 1000}, [])
    wait_for(lambda: c.viewer_count == 0)


def test_refusals_say_their_status(setup):
    srv, c, w, got = setup
    # the relay goes by the kernel's own token whatever credential the front end's path carries (the session's
    # path prefix is not in it): a canvas the server does not have is refused with its status
    w._on_front(w, {"op": "open", "sid": "bad", "path": "/c/nosuch/ws?session=whatever"}, [])
    m = wait_for(lambda: next((g[0] for g in got if g[0]["op"] == "close"), None))
    assert m["sid"] == "bad" and m["status"] == 404
    got.clear()
    w._on_front(w, {"op": "open", "sid": "p", "path": "/etc/passwd"}, [])
    assert got[0][0] == {"op": "close", "sid": "p", "code": 1006, "reason": "", "status": 404}


def test_message_rate_is_capped(setup, monkeypatch):
    srv, c, w, got = setup
    # a cap far below what the relay would send here (frames acked at once): it must hold, by waiting
    rate = widget._Rate(5)
    monkeypatch.setattr(widget, "RATE", rate)
    w._on_front(w, {"op": "open", "sid": "s", "path": f"/c/w/ws?token={srv.token}&codecs=png"}, [])
    wait_for(lambda: any(g[0]["op"] == "open" for g in got))
    t0 = time.monotonic()
    n0 = len(got)
    acked = set()
    while time.monotonic() - t0 < 2:
        c.present(np.random.randint(0, 256, (48, 64, 3), np.uint8))
        for g in list(got):
            for b in g[1]:
                seq = int.from_bytes(b[8:12], "little")
                if b[:4] == b"RCCF" and seq not in acked:
                    acked.add(seq)
                    w._on_front(w, {"op": "m", "sid": "s", "t": json.dumps({"type": "ack", "seq": seq})}, [])
        time.sleep(0.005)
    n = len(got) - n0
    assert n <= 2 * 5 + 5 / 4 + 2, f"{n} comm messages in 2 s at a cap of 5/s"
    assert rate.waits > 0


def test_local_notebook_origins(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "jpserver-123.json").write_text(json.dumps({"port": 8899, "hostname": "localhost", "secure": False}))
    (tmp_path / "nbserver-9.json").write_text("not json")
    (tmp_path / "kernel-1.json").write_text(json.dumps({"port": 1}))
    o = widget.local_notebook_origins()
    assert "http://localhost:8899" in o and "http://127.0.0.1:8899" in o
    assert not any(":1" == x[-2:] for x in o)


@pytest.mark.skipif(not shutil.which("node"), reason="no node")
def test_bundle_is_one_module(tmp_path):
    from rcanvas import bundle_widget
    text = bundle_widget.bundle()
    f = tmp_path / "w.mjs"
    f.write_text(text)
    r = subprocess.run(["node", "-e", f"import({json.dumps(str(f))}).then(m => console.log(typeof m.default.render))"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "function", r.stderr
    assert "import.meta" not in text and "\nimport " not in text


def test_canvas_shows_the_widget_with_the_iframe_as_fallback(setup, monkeypatch):
    srv, c, w, got = setup
    monkeypatch.setattr(widget, "in_kernel", lambda: True)
    b = c._repr_mimebundle_()
    data = b[0] if isinstance(b, tuple) else b
    assert "application/vnd.jupyter.widget-view+json" in data
    assert '<iframe src="' in data["text/html"] and c.url.split("?")[0] in data["text/html"]
    assert c._repr_mimebundle_() is not None and c._widget.comm is not None  # one widget per canvas, reused
    monkeypatch.setenv("RCANVAS_WIDGET", "0")
    assert set(c._repr_mimebundle_()) == {"text/html", "text/plain"}


def test_the_relay_replaces_the_front_ends_credential_with_the_kernels_token():
    p = widget._with_token("/c/w/ws?session=S&codecs=h264,png&token=X", "K")
    assert p == "/c/w/ws?token=K&codecs=h264,png"
    assert widget._with_token("/ws", "K") == "/ws?token=K"


def test_a_rendercanvas_canvas_shows_the_widget_too(monkeypatch):
    # rcanvas.rendercanvas' canvases (what pygfx and fastplotlib draw on) are the cell's value as often as a Canvas:
    # the same widget, on the canvas's rcanvas.Canvas, with the iframe as its text/html
    pytest.importorskip("rendercanvas", reason="rendercanvas is not installed")
    from rcanvas import rendercanvas as rrc

    monkeypatch.setattr(widget, "in_kernel", lambda: True)
    srv = rcanvas.Server()
    try:
        rc = rrc.RenderCanvas(size=(64, 48), name="rcw", server=srv)
        b = rc._repr_mimebundle_()
        data = b[0] if isinstance(b, tuple) else b
        assert "application/vnd.jupyter.widget-view+json" in data, data.keys()
        assert '<iframe src="' in data["text/html"] and data["text/plain"].startswith("<RcanvasRenderCanvas")
        assert rc._canvas._widget is not None and rc._canvas._widget.comm is not None
        monkeypatch.setenv("RCANVAS_WIDGET", "0")
        assert "application/vnd.jupyter.widget-view+json" not in rc._repr_mimebundle_()
        rc.close()
    finally:
        srv.close()
