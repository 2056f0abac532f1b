# SPDX-License-Identifier: MIT
"""make bench-wgpu's program (ours, not one of pygfx's examples): pygfx's cube example (pygfx_examples/cube.py: the
same box, material and turn per frame, gfx.Display's lights, background, camera and controller) on a canvas with
update_mode="fastest", so that the present path, not rendercanvas' default max_fps of 30, sets the frame rate.
Prints the wgpu context's counters every second ("stats {...}")."""

import json
import os
import runpy

import pygfx as gfx
from rendercanvas.auto import RenderCanvas, loop

ex = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pygfx_examples", "cube.py"),
                    run_name="cube_example")
canvas = RenderCanvas(update_mode="fastest")
disp = gfx.Display(canvas=canvas)
disp.before_render = ex["animate"]


def report():
    ctx = canvas._canvas_context
    print("stats " + json.dumps({"context": type(ctx).__name__, **(getattr(ctx, "stats", None) or {})}), flush=True)
    loop.call_later(1.0, report)


loop.call_later(1.0, report)
disp.show(ex["cube"])
