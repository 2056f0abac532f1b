# SPDX-License-Identifier: MIT
"""bench/gpu_wgpu_bench.py's app (the "present" part) and make bench-pygfx's: pygfx's cube
(tests/python/pygfx_examples/cube.py, as tests/python/cube_fastest.py for make bench-wgpu) at SIZE (WxH, default
1920x1080), update_mode="fastest", drawn continuously.

BACKEND=rcanvas (default): on rcanvas.rendercanvas, canvas name "bench"; RCANVAS_WGPU_PRESENT picks the present
path, CODEC the codec ("jpeg": the ring; "jpeg-wgpu": JPEG on the app's device). Prints "url URL" once, then the
wgpu context's counters every second ("stats {...}").
BACKEND=http: on rendercanvas' own http backend (rendercanvas.http: uvicorn, its bitmap context, simplejpeg at
quality 80) on 127.0.0.1:PORT. Prints "url http://127.0.0.1:PORT/" once the server listens, then "stats {...}"
with its frame counters every second.

A click (pointer_down) toggles the background between black and green, which the benchmarks' viewers time: from
the click to the first picture with the new background (click to picture)."""

import json
import os
import runpy
import socket
import time

import pygfx as gfx

W, H = map(int, os.environ.get("SIZE", "1920x1080").split("x"))
BACKEND = os.environ.get("BACKEND", "rcanvas")
ex = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python",
                                 "pygfx_examples", "cube.py"), run_name="cube_example")

if BACKEND == "http":
    from rendercanvas.http import RenderCanvas, loop

    port = int(os.environ.get("PORT", "0"))
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    canvas = RenderCanvas(size=(W, H), update_mode="fastest")
else:
    from rcanvas.rendercanvas import RenderCanvas, loop

    canvas = RenderCanvas(size=(W, H), name="bench", update_mode="fastest",
                          codec=os.environ.get("CODEC") or None)
renderer = gfx.WgpuRenderer(canvas)
camera = gfx.PerspectiveCamera(70, 16 / 9)
camera.show_object(ex["cube"])
scene = gfx.Scene()
background = gfx.Background.from_color("#000000")
scene.add(background, ex["cube"], gfx.AmbientLight(), gfx.DirectionalLight())
frames, clicks = [0], [0]


def on_click(event):
    clicks[0] += 1
    background.material.set_colors("#00c800" if clicks[0] % 2 else "#000000")


canvas.add_event_handler(on_click, "pointer_down")


def draw():
    ex["animate"]()
    renderer.render(scene, camera)
    frames[0] += 1
    canvas.request_draw()


canvas.request_draw(draw)


def report():
    ctx = getattr(canvas, "_canvas_context", None)
    st = dict(getattr(ctx, "stats", None) or {})
    st["drawn"], st["clicks"] = frames[0], clicks[0]
    if BACKEND == "http":
        st["sent_frames"] = canvas._stats.get("sent_frames", 0)
    print("stats " + json.dumps({"context": type(ctx).__name__, **st}), flush=True)
    loop.call_later(1.0, report)


loop.call_later(1.0, report)
if BACKEND == "http":
    def announce():  # once uvicorn listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            print(f"url http://127.0.0.1:{port}/", flush=True)
        except OSError:
            loop.call_later(0.1, announce)

    loop.call_later(0.1, announce)
    loop.run(host="127.0.0.1", port=port)
else:
    print("url " + canvas.url, flush=True)
    loop.run()
