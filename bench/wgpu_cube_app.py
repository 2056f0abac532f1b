# SPDX-License-Identifier: MIT
"""bench/gpu_wgpu_bench.py's app (the "present" part): pygfx's cube (tests/python/pygfx_examples/cube.py, as
tests/python/cube_fastest.py for make bench-wgpu) on rcanvas.rendercanvas at SIZE (WxH, default 1920x1080) with
update_mode="fastest", canvas name "bench". Prints "url URL" once, then the wgpu context's counters every second
("stats {...}"). RCANVAS_WGPU_PRESENT picks the present path."""

import json
import os
import runpy

import pygfx as gfx
from rcanvas.rendercanvas import RenderCanvas, loop

W, H = map(int, os.environ.get("SIZE", "1920x1080").split("x"))
ex = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python",
                                 "pygfx_examples", "cube.py"), run_name="cube_example")
canvas = RenderCanvas(size=(W, H), name="bench", update_mode="fastest")
disp = gfx.Display(canvas=canvas)
disp.before_render = ex["animate"]
print("url " + canvas.url, flush=True)


def report():
    ctx = canvas._canvas_context
    print("stats " + json.dumps({"context": type(ctx).__name__, **(getattr(ctx, "stats", None) or {})}), flush=True)
    loop.call_later(1.0, report)


loop.call_later(1.0, report)
disp.show(ex["cube"])
