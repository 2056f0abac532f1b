# SPDX-License-Identifier: MIT
"""The numpy binding (python/rcanvas): struct layouts against the C header, a pixel-exact PNG round trip read back
through a raw WebSocket viewer, bad arrays refused with TypeError/ValueError while the server keeps serving, C
errors named, events as renderview dicts, the cursor message, the GIL released in wait()."""

import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rcanvas
from rcanvas import _lib as L
from wsraw import RawWS, decode_png, parse_frame

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# ---- layout ---------------------------------------------------------------------------------------------------

STRUCTS = {"rcanvas_server_config": L.ServerConfig, "rcanvas_canvas_config": L.CanvasConfig,
           "rcanvas_frame": L.Frame, "rcanvas_encoded_frame": L.EncodedFrame, "rcanvas_size": L.Size, "rcanvas_touch": L.Touch, "rcanvas_event": L.Event}


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler (cc) to read the header's layout")
def test_struct_layout_matches_header(tmp_path):
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "rcanvas.h"', 'int main(void) {']
    for cname, cls in STRUCTS.items():
        lines.append(f'printf("{cname} sizeof %zu\\n", sizeof({cname}));')
        for fname, _ in cls._fields_:
            lines.append(f'printf("{cname} {fname} %zu\\n", offsetof({cname}, {fname}));')
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-I", os.path.join(ROOT, "include"), "-I", os.path.join(ROOT, "build"),
                    str(src), "-o", str(exe)], check=True)
    got = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        s, f, v = line.split()
        got[(s, f)] = int(v)
    for cname, cls in STRUCTS.items():
        assert ctypes.sizeof(cls) == got[(cname, "sizeof")], cname
        for fname, _ in cls._fields_:
            assert getattr(cls, fname).offset == got[(cname, fname)], f"{cname}.{fname}"


def _table(name_of, first=0, last=255):
    return {v: name_of(v).decode() for v in range(first, last + 1) if name_of(v)}


def test_name_tables_match_the_library():
    """The package's copies of rcanvas.h's name tables (codecs, options, events) equal the library's, both ways."""
    lib = rcanvas.lib()
    codecs = _table(lib.rcanvas_codec_name)
    assert codecs == {v: k for k, v in rcanvas.CODECS.items()}
    assert _table(lib.rcanvas_option_name) == {v: k for k, v in rcanvas.OPTIONS.items()}
    events = {v: lib.rcanvas_event_type_name(v).decode() for v in range(1, 256)}
    assert {v: n for v, n in events.items() if n != "unknown"} == rcanvas.EVENT_TYPES
    for v, n in codecs.items():  # and the lookups by name agree
        assert lib.rcanvas_codec_from_name(n.encode()) == v
    for n, v in rcanvas.OPTIONS.items():
        assert lib.rcanvas_option_from_name(n.encode()) == v
    assert lib.rcanvas_codec_from_name(b"gif") == lib.rcanvas_option_from_name(b"nope") == -1  # RCANVAS_EINVAL
    assert lib.rcanvas_codec_name(200) is None and lib.rcanvas_option_name(-5) is None


def test_encoders_are_chosen_by_name(server):
    """An encoder is a name apart from its wire codec: "h264-gpu" makes an H.264 canvas whose encoder is it (the
    codec option reads H264), a codec name goes back to the codec's default encoder, and a name of neither is a
    ValueError that names both lists."""
    names = rcanvas.encoders()
    assert {"jpeg", "png"} <= set(names) and len(names) == len(set(names))
    c = server.canvas("enc", codec="png")
    try:
        assert c.encoder == "png"
        if "h264-gpu" in names:
            c.set_codec("h264-gpu", quality=70)
            assert c.encoder == "h264-gpu"
            assert c.get_option("codec") == rcanvas.CODECS["h264"] and c.get_option("quality") == 70
            c.set_codec("jpeg")
            assert c.encoder == "jpeg"
        c.set_codec("auto")
        assert c.encoder is None
        with pytest.raises(ValueError, match="encoders"):
            c.set_codec("h265-gpu")
    finally:
        c.close()
    with pytest.raises(ValueError):
        server.canvas("enc2", codec="gif")


# ---- helpers --------------------------------------------------------------------------------------------------

@pytest.fixture
def server():
    s = rcanvas.Server(port=0)
    yield s
    s.close()


def connect(server, name=""):
    path = ("/ws" if not name else f"/c/{name}/ws") + f"?token={server.token}"
    ws = RawWS("127.0.0.1", server.port, path)
    hello = json.loads(ws.recv())
    assert hello["type"] == "hello"
    return ws, hello


def read_frame(ws, picture):
    """Reads the tiles of one frame into picture (H, W, 3), as the client draws them; acks; returns the header
    of its last tile."""
    while True:
        msg = ws.recv()
        if isinstance(msg, str):
            continue
        h, payload = parse_frame(msg)
        assert h["codec"] == 2, "expected PNG tiles"
        tile = decode_png(payload)
        assert tile.shape[:2] == (h["h"], h["w"])
        picture[h["y"]:h["y"] + h["h"], h["x"]:h["x"] + h["w"]] = tile[..., :3]
        if h["flags"] & 2:
            ws.send_json({"type": "ack", "seq": h["seq"]})
            return h


def round_trip(canvas, ws, array, fmt=None, picture=None):
    a = np.asarray(array)
    if picture is None:
        picture = np.zeros((a.shape[0], a.shape[1], 3), np.uint8)
    canvas.request_draw()                 # present when a draw is due, as an app does
    t0 = time.time()
    while not canvas.wait(1) & rcanvas.WAKE_DRAW:
        assert time.time() - t0 < 10, "no draw due"
    canvas.present(array, fmt)
    h = read_frame(ws, picture)
    assert (h["frame_width"], h["frame_height"]) == (a.shape[1], a.shape[0])
    return picture


# ---- round trip -----------------------------------------------------------------------------------------------

def test_png_round_trip_is_pixel_exact(server):
    c = server.canvas(codec="png", refine_ms=0)
    c.set_option("rate_adapt", 0)         # every frame whole, none skipped for the link's sake
    ws, hello = connect(server)
    rng = np.random.default_rng(1)
    try:
        # C-contiguous RGBA (zero-copy)
        a = rng.integers(0, 256, (131, 257, 4), dtype=np.uint8)
        pic = round_trip(c, ws, a)
        assert np.array_equal(pic, a[..., :3])
        # a crop of a bigger array: pitch = the big one's row, still zero-copy
        big = rng.integers(0, 256, (300, 400, 4), dtype=np.uint8)
        crop = big[17:148, 33:290]
        assert not crop.flags.c_contiguous
        pic = round_trip(c, ws, crop, picture=pic)
        assert np.array_equal(pic, crop[..., :3])
        # BGRA: the channels swapped back
        b = rng.integers(0, 256, (131, 257, 4), dtype=np.uint8)
        pic = round_trip(c, ws, b, "bgra", picture=pic)
        assert np.array_equal(pic, b[..., 2::-1])
        # RGB (H, W, 3), strided (every other column of a wider array): converted, exact
        wide = rng.integers(0, 256, (131, 514, 3), dtype=np.uint8)
        rgb = wide[:, ::2]
        pic = round_trip(c, ws, rgb, picture=pic)
        assert np.array_equal(pic, rgb)
    finally:
        ws.close()


def test_present_encoded_sends_the_apps_jpeg_and_asks_for_the_pixels_once(server):
    # An app that encodes its own frames (jpeg-wgpu does it on the GPU): its JPEG goes out byte for byte, the viewer
    # is told the encoder's name, and once the picture is still rcanvas asks for the pixels (WAKE_PIXELS, once),
    # whose lossless refinement is exact. Bad bytes raise, naming the error; a PNG canvas does not take JPEG.
    import io

    from PIL import Image

    c = server.canvas(name="enc", codec="jpeg", refine_ms=100, update_mode="manual")
    c.set_option("rate_adapt", 0)
    ws, hello = connect(server, "enc")
    try:
        y, x = np.mgrid[0:240, 0:320]
        a = np.stack([x % 256, y, (x + y) % 97 + 100, np.full_like(x, 255)], -1).astype(np.uint8)
        a[100:102, :, :3] = (250, 20, 30)  # a thin red line
        buf = io.BytesIO()
        Image.fromarray(a[..., :3]).save(buf, "JPEG", quality=80)
        jpeg = buf.getvalue()
        assert c.live_quality == 85
        assert c.present_encoded(jpeg, 320, 240, 80, "jpeg-wgpu") is True
        told, got = [], None
        while got is None:
            msg = ws.recv()
            if isinstance(msg, str):
                m = json.loads(msg)
                if m.get("type") == "encoder":
                    told.append(m["encoder"])
                continue
            h, payload = parse_frame(msg)
            assert h["codec"] == 1 and h["seq"] == 1 and (h["w"], h["h"]) == (320, 240)
            got = bytes(payload)
            ws.send_json({"type": "ack", "seq": h["seq"]})
        assert got == jpeg, "the viewer got other bytes than the app's JPEG"
        # still: the refinement needs the pixels, asked for once
        t0, woke = time.time(), 0
        while not woke:
            assert time.time() - t0 < 10, "rcanvas never asked for the pixels"
            woke = c.wait(0.5) & rcanvas.WAKE_PIXELS
        assert not c.wait(0.3) & rcanvas.WAKE_PIXELS, "asked twice"
        assert c.present_pixels_address(a.ctypes.data, 320, 240, 320 * 4) is True
        assert c.present_pixels_address(a.ctypes.data, 320, 240, 320 * 4) is False  # it has them
        while True:
            msg = ws.recv()
            if isinstance(msg, str):
                m = json.loads(msg)
                told += [m["encoder"]] if m.get("type") == "encoder" else []
                continue
            h, payload = parse_frame(msg)
            if h["flags"] & 4:
                break
        assert h["codec"] == 2 and h["seq"] == 1
        tile = decode_png(payload)
        assert np.array_equal(tile[..., :3], a[h["y"]:h["y"] + h["h"], h["x"]:h["x"] + h["w"], :3])
        assert "jpeg-wgpu" in told, told
        with pytest.raises(rcanvas.RcanvasError, match="RCANVAS_EDATA"):
            c.present_encoded(b"\xff\xd8 not a jpeg \xff\xd9", 320, 240, 80)
        with pytest.raises(rcanvas.RcanvasError, match="RCANVAS_EDATA"):
            c.present_encoded(jpeg, 321, 240, 80)  # another size than its SOF0's
        with pytest.raises(rcanvas.RcanvasError, match="RCANVAS_EINVAL"):
            c.present_encoded(jpeg, 320, 240, 80, "x264")
        with pytest.raises(ValueError, match="quality"):
            c.present_encoded(jpeg, 320, 240, 0)
        p = server.canvas(name="encpng", codec="png")
        assert p.live_quality == 0
        assert p.present_encoded(jpeg, 320, 240, 80) is False  # present its pixels instead
    finally:
        ws.close()


def test_bad_arrays_raise_and_the_server_keeps_serving(server):
    c = server.canvas(codec="png", refine_ms=0)
    c.set_option("rate_adapt", 0)
    ws, _ = connect(server)
    try:
        with pytest.raises(TypeError, match="uint8"):
            c.present(np.zeros((10, 10, 4), np.float32))
        with pytest.raises(TypeError, match="uint8"):
            c.present(np.zeros((10, 10, 4), np.uint16))
        for shape in [(10, 10), (10, 10, 2), (10, 10, 5), (0, 10, 4), (10, 0, 3), (2, 10, 10, 4)]:
            with pytest.raises(ValueError, match="shape|non-empty"):
                c.present(np.zeros(shape, np.uint8))
        with pytest.raises(ValueError, match="strides"):
            c.present(np.zeros((10, 20, 4), np.uint8)[:, ::2])      # pixels 8 bytes apart
        with pytest.raises(ValueError, match="strides"):
            c.present(np.zeros((10, 10, 4), np.uint8)[::-1])        # rows going backwards
        with pytest.raises(ValueError, match="strides"):
            c.present(np.zeros((4, 10, 10), np.uint8).transpose(1, 2, 0))  # planar
        with pytest.raises(ValueError, match="format"):
            c.present(np.zeros((10, 10, 4), np.uint8), "argb")
        with pytest.raises(ValueError, match="format"):
            c.present(np.zeros((10, 10, 3), np.uint8), "bgra")
        with pytest.raises(rcanvas.RcanvasError) as e:
            c.present(np.zeros((9000, 1, 4), np.uint8))             # above max_frame_dim (8192)
        assert e.value.name == "RCANVAS_EFRAME_SIZE"
        # still serving: this viewer gets an exact frame, and a new viewer connects
        a = np.random.default_rng(2).integers(0, 256, (64, 96, 4), dtype=np.uint8)
        assert np.array_equal(round_trip(c, ws, a), a[..., :3])
        ws2, hello2 = connect(server)
        assert hello2["viewer_id"] != 0
        ws2.close()
    finally:
        ws.close()


# ---- errors, events, cursor, GIL ------------------------------------------------------------------------------

def test_errors_carry_the_c_name(server):
    server.canvas("one")
    with pytest.raises(rcanvas.RcanvasError) as e:
        server.canvas("one")
    assert e.value.name == "RCANVAS_EEXIST" and e.value.code == -11
    with pytest.raises(rcanvas.RcanvasError) as e:
        server.canvas("bad name!")
    assert e.value.name == "RCANVAS_ENAME"
    with pytest.raises(rcanvas.RcanvasError) as e:
        rcanvas.Server(port=server.port)
    assert e.value.name == "RCANVAS_EADDRINUSE"
    assert "RCANVAS_EADDRINUSE" in str(e.value)


def test_events_are_renderview_dicts(server):
    c = server.canvas()
    ws, _ = connect(server)
    try:
        ws.send_json({"event_type": "pointer_down", "x": 12.5, "y": 30, "button": 1, "buttons": [1],
                      "modifiers": ["Shift", "Control"], "ntouches": 0, "touches": {}, "time_stamp": 1.5})
        ws.send_json({"event_type": "key_down", "key": "ArrowLeft", "modifiers": [], "time_stamp": 2})
        ws.send_json({"event_type": "wheel", "x": 1, "y": 2, "dx": 0, "dy": -120, "buttons": [],
                      "modifiers": ["Alt"], "time_stamp": 3})
        evs = []
        t0 = time.time()
        while len(evs) < 3 and time.time() - t0 < 5:
            if c.wait(0.5) & rcanvas.WAKE_EVENTS:
                evs += [e for e in c.poll_events() if e["event_type"] != "resize"]
        assert [e["event_type"] for e in evs] == ["pointer_down", "key_down", "wheel"]
        p, k, w = evs
        assert (p["x"], p["y"], p["button"], p["buttons"], p["modifiers"]) == (12.5, 30, 1, (1,), ("Shift", "Control"))
        assert p["time_stamp"] == 1.5 and p["ntouches"] == 0 and p["touches"] == {}
        assert k["key"] == "ArrowLeft" and k["modifiers"] == ()
        assert (w["dx"], w["dy"], w["modifiers"]) == (0, -120, ("Alt",))
    finally:
        ws.close()


def test_cursor_message(server):
    c = server.canvas()
    ws, _ = connect(server)
    try:
        c.set_cursor("pointer")
        with pytest.raises(rcanvas.RcanvasError) as e:
            c.set_cursor("url(x)")
        assert e.value.name == "RCANVAS_EINVAL"
        while True:
            m = ws.recv()
            if isinstance(m, str) and json.loads(m)["type"] == "cursor":
                assert json.loads(m)["cursor"] == "pointer"
                break
        # a viewer that comes later is told with its hello
        ws2, _ = connect(server)
        while True:
            m = ws2.recv()
            if isinstance(m, str) and json.loads(m)["type"] == "cursor":
                assert json.loads(m)["cursor"] == "pointer"
                break
        ws2.close()
    finally:
        ws.close()


def test_wait_releases_the_gil(server):
    c = server.canvas(update_mode="manual")
    count = 0
    stop = threading.Event()

    def spin():
        nonlocal count
        while not stop.is_set():
            count += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = count
        assert c.wait(0.3) == 0   # nothing due in manual mode without viewers: a timeout
        during = count - before
    finally:
        stop.set()
        t.join()
    assert during > 1000, during   # the other thread ran while this one was inside rcanvas_wait


def test_library_env_var_and_closed_handles(tmp_path):
    env = dict(os.environ, RCANVAS_LIBRARY=str(tmp_path / "nope.so"),
               PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", "import rcanvas; rcanvas.lib()"], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "nope.so" in r.stderr and "RCANVAS_LIBRARY" in r.stderr
    s = rcanvas.Server()
    c = s.canvas()
    s.close()
    with pytest.raises(rcanvas.RcanvasError) as e:
        c.present(np.zeros((4, 4, 4), np.uint8))
    assert e.value.name == "RCANVAS_ECLOSED"


def test_repr_html_is_an_iframe_of_the_tokened_url(server):
    c = server.canvas("nb", width=320, height=200)
    html = c._repr_html_()
    assert f'src="http://127.0.0.1:{server.port}/c/nb?token={server.token}"' in html
    assert 'width="320"' in html and 'height="200"' in html
    assert c._repr_mimebundle_()["text/html"] == html


def test_repr_html_behind_a_proxy_uses_a_url_on_the_notebooks_origin():
    s = rcanvas.Server(base_path="/user/me/proxy/8080")
    try:
        c = s.canvas(width=300, height=150)
        assert f'src="/user/me/proxy/8080/?token={s.token}"' in c._repr_html_()
        assert c.url.startswith(f"http://127.0.0.1:{s.port}/user/me/proxy/8080/?token=")
    finally:
        s.close()


def test_close_after_an_interrupt_inside_a_call_does_not_hang():
    """A KeyboardInterrupt that lands inside the call bookkeeping (after a call was counted, before its try) left
    a count no call held, and close() from that thread waited for it for ever: `python -m rcanvas` hung on Ctrl-C
    (test_pip_install, under load). Entering the count without leaving it stands for that interrupt."""
    s = rcanvas.Server(port=0)
    c = s.canvas(name="interrupted")
    stuck = c._use()
    stuck.__enter__()  # counted, never left: what the interrupt leaves behind
    closer = threading.Thread(target=c.close, daemon=True)
    # another thread's call is under way: close() in a third thread waits for it ...
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "close() did not wait for another thread's call"
    stuck.__exit__(None, None, None)
    closer.join(5)
    assert not closer.is_alive(), "close() did not return once the other thread's call left"
    # ... and the same thread's own leftover count is not waited for (before: this close() never returned)
    c2 = s.canvas(name="interrupted2")
    done = threading.Event()

    def interrupted_then_close():
        left = c2._use()  # kept: a generator let go would be closed, and its finally would run
        left.__enter__()
        c2.close()
        s.close()
        done.set()

    t = threading.Thread(target=interrupted_then_close, daemon=True)
    t.start()
    t.join(5)
    assert done.is_set(), "close() waited for the calling thread's own leftover count"
    assert c2.closed


def test_close_from_inside_a_call_of_the_same_thread_frees_when_the_call_returns():
    """A signal handler that closes the canvas while wait() is inside rcanvas (same thread): the handle must stay
    valid until that call returns, and be freed then (not hang, not free it under the call)."""
    s = rcanvas.Server(port=0)
    c = s.canvas(name="reentrant")
    with c._use() as h:
        c.close()  # as from a handler that ran inside the call
        assert c._h == h and c.closed, "freed under a call of its own thread"
        with pytest.raises(rcanvas.RcanvasError):
            c.request_draw()  # closed to new calls at once
    assert c._h is None, "not freed once the call returned"
    s.close()
