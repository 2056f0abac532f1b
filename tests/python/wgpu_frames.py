# SPDX-License-Identifier: MIT
"""A pygfx program on rcanvas.rendercanvas, watched by a raw WebSocket viewer in this process (test_wgpu.py runs it
with the venv's python, once per present mode of RCANVAS_WGPU_PRESENT). Frame k (1..FRAMES) fills the canvas with a
colour that encodes k; the draws stop after FRAMES (ondemand: nothing draws again, so the last frame must go out by
itself in every mode). The viewer acks each frame as the browser does and decodes them (PNG: exact pixels). Prints
one JSON line: the context's class, its stats, the frames the viewer saw (k decoded from the colour), the pitch
rcanvas was handed, the frame size."""

import json
import os
import sys
import threading
import time
from urllib.parse import parse_qs, urlparse

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wsraw import RawWS, decode_png, parse_frame  # noqa: E402

import pygfx as gfx  # noqa: E402
from rcanvas.rendercanvas import RenderCanvas, loop  # noqa: E402

FRAMES = int(os.environ.get("FRAMES", "24"))
W, H = 100, 60  # 400 bytes a row: wgpu pads it to 512


def colour(k):
    return (k * 9) % 256, (255 - k * 7) % 256, 90


canvas = RenderCanvas(size=(W, H), name="wgpu", codec="png", update_mode="ondemand", max_fps=1000)
renderer = gfx.WgpuRenderer(canvas)
scene = gfx.Scene()
bg = gfx.Background.from_color("#000")
scene.add(bg)
camera = gfx.NDCCamera()
k = 0
ctx = {}
pitches = []
orig = canvas._canvas.present_address


def spy(address, width, height, pitch, format="rgba"):
    pitches.append((width, height, pitch, format))
    return orig(address, width, height, pitch, format)


canvas._canvas.present_address = spy


def draw():
    global k
    k += 1
    r, g, b = colour(k)
    bg.material.set_colors(f"#{r:02x}{g:02x}{b:02x}")
    renderer.render(scene, camera)
    ctx["context"] = canvas._canvas_context
    if k < FRAMES:
        canvas.request_draw()


canvas.request_draw(draw)
seen = []
errors = []


def viewer():
    try:
        u = urlparse(canvas.url)
        ws = RawWS("127.0.0.1", u.port, f"/c/wgpu/ws?token={parse_qs(u.query)['token'][0]}")
        ws.sock.settimeout(20)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            m = ws.recv()
            if isinstance(m, str):
                continue
            h, payload = parse_frame(m)
            if h["flags"] & 2:
                ws.send_json({"type": "ack", "seq": h["seq"]})
            if h["flags"] & 4:
                continue  # a refinement of the frame before
            px = decode_png(payload)[h["h"] // 2, h["w"] // 2, :3].astype(int)
            best = min(range(1, FRAMES + 1), key=lambda j: np.abs(px - colour(j)).sum())
            seen.append({"k": best, "err": int(np.abs(px - colour(best)).max()), "w": h["frame_width"],
                         "h": h["frame_height"]})
            if best == FRAMES:
                break
        ws.close()
    except Exception as e:  # reported in the JSON, the test fails with it
        errors.append(repr(e))
        print("viewer:", repr(e), file=sys.stderr, flush=True)
    finally:
        loop.call_soon_threadsafe(canvas.close)


threading.Thread(target=viewer, daemon=True).start()
loop.call_later(90, canvas.close)  # never hangs, whatever happens
loop.run()
c = ctx.get("context")
print(json.dumps({"context": type(c).__name__, "frames_drawn": k, "seen": seen, "pitches": sorted(set(pitches)),
                  "stats": getattr(c, "stats", None), "errors": errors}))
