# SPDX-License-Identifier: MIT
"""A pygfx program on rcanvas.rendercanvas with codec "jpeg-wgpu" (test_wgpu_present.py runs it with the venv's
python and RCANVAS_GPU_CODEC_DEVICE=any, so that lavapipe runs it too), watched by a raw WebSocket viewer in this
process. Frame k (1..FRAMES) fills the 320x240 canvas with a colour that encodes k and draws a thin line; the
draws stop after FRAMES (ondemand). The viewer acks each frame as the browser does, decodes the JPEGs
(simplejpeg, libjpeg-turbo) and, once the picture is still, the lossless refinement (PNG), which needs the
pixels rcanvas asked the app for. Prints one JSON line: the encoder names the viewer was told, the frames it saw
(k, codec, bytes, worst error at the centre), the refinement's exactness, the context's stats."""

import json
import os
import sys
import threading
import time
from urllib.parse import parse_qs, urlparse

import numpy as np
import simplejpeg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wsraw import RawWS, decode_png, parse_frame  # noqa: E402

import pygfx as gfx  # noqa: E402
from rcanvas.rendercanvas import RenderCanvas, loop  # noqa: E402

FRAMES = int(os.environ.get("FRAMES", "12"))
W, H = 320, 240
CODEC = os.environ.get("CODEC", "jpeg-wgpu")


def colour(k):
    return (k * 19) % 256, (255 - k * 13) % 256, 90


canvas = RenderCanvas(size=(W, H), name="wgpuj", codec=CODEC, update_mode="ondemand", max_fps=1000)
renderer = gfx.WgpuRenderer(canvas)
scene = gfx.Scene()
bg = gfx.Background.from_color("#000")
scene.add(bg)
line = gfx.Line(gfx.Geometry(positions=np.array([[-1, -0.5, 0], [1, 0.5, 0]], np.float32)),
                gfx.LineMaterial(thickness=2, color="#ff2020"))
scene.add(line)
camera = gfx.NDCCamera()
k = 0
ctx = {}
# REFUSE=K: rcanvas is made to refuse the K-th JPEG handed to it (as when a viewer needs another codec or a smaller
# frame), so that the context's way back (the frame read back whole and presented as pixels) runs
REFUSE = int(os.environ.get("REFUSE", "0"))
_present_encoded = canvas._canvas.present_encoded
calls = [0]


def present_encoded(*args, **kwargs):
    calls[0] += 1
    if calls[0] == REFUSE:
        return False
    return _present_encoded(*args, **kwargs)


canvas._canvas.present_encoded = present_encoded


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
seen, told, errors, refined = [], [], [], {}
last_px = {}


def viewer():
    try:
        u = urlparse(canvas.url)
        ws = RawWS("127.0.0.1", u.port, f"/c/wgpuj/ws?token={parse_qs(u.query)['token'][0]}")
        ws.sock.settimeout(20)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            m = ws.recv()
            if isinstance(m, str):
                j = json.loads(m)
                if j.get("type") in ("hello", "encoder") and j.get("encoder"):
                    told.append(j["encoder"])
                continue
            h, payload = parse_frame(m)
            if h["flags"] & 2:
                ws.send_json({"type": "ack", "seq": h["seq"]})
            if h["flags"] & 4:  # the refinement (PNG) of the last frame: exact pixels
                if not seen or seen[-1]["k"] != FRAMES:
                    continue  # of a frame before the last (this machine paused the drawing): not the end
                px = decode_png(payload)
                refined.update(seq=h["seq"], w=int(px.shape[1]), h=int(px.shape[0]),
                               centre=[int(v) for v in px[H // 2, 20, :3]],
                               max_err=int(np.abs(px[:, :, :3].astype(int) - last_px["rgb"].astype(int)).max())
                               if "rgb" in last_px else None)
                break
            if h["codec"] == 1:
                px = simplejpeg.decode_jpeg(payload, colorspace="RGB")
            else:
                px = decode_png(payload)[:, :, :3]
            c = px[H // 2, 20, :3].astype(int)  # off the line
            best = min(range(1, FRAMES + 1), key=lambda j: np.abs(c - colour(j)).sum())
            sof = payload.find(b"\xff\xc0")  # the luma's sampling factors: 0x22 is 4:2:0, 0x11 4:4:4
            ss = {0x22: "420", 0x11: "444"}.get(payload[sof + 11]) if h["codec"] == 1 and sof > 0 else None
            seen.append({"k": best, "err": int(np.abs(c - colour(best)).max()), "codec": h["codec"],
                         "bytes": len(payload), "w": h["frame_width"], "h": h["frame_height"], "ss": ss})
            last_px["rgb"] = px[:, :, :3]
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
print(json.dumps({"context": type(c).__name__, "frames_drawn": k, "seen": seen, "told": told, "refined": refined,
                  "stats": getattr(c, "stats", None), "errors": errors}))
