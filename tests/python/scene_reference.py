# SPDX-License-Identifier: MIT
"""The reference for pygfx_scenes.test.mjs: a rendercanvas program (SCRIPT, run as __main__ with rendercanvas.auto
replaced by rendercanvas' offscreen canvas at W×H, pixel ratio 1, and a loop whose run() returns), rendered by pygfx
itself, once as it starts and once after replaying the events the rcanvas app was given (EVENTS: the JSON lines of
RCANVAS_EVENT_LOG; pointer and wheel events; controllers' damping is set to 0 so that the camera lands where the
browser's settled). Compares with the browser's pictures (RGBA files, W×H): prints JSON with the PSNR of BEFORE
against the start and of AFTER against the replayed state and against the start.

    python scene_reference.py SCRIPT W H BEFORE.rgba AFTER.rgba EVENTS.jsonl"""

import gc
import json
import os
import runpy
import sys
import types

import numpy as np


def psnr(a, b):
    d = a[..., :3].astype(np.float64) - b[..., :3].astype(np.float64)
    mse = float((d * d).mean())
    return 99.0 if mse == 0 else round(10 * np.log10(255.0 ** 2 / mse), 2)


def main(argv):
    script, w, h = argv[0], int(argv[1]), int(argv[2])
    before = np.fromfile(argv[3], np.uint8).reshape(h, w, 4)
    after = np.fromfile(argv[4], np.uint8).reshape(h, w, 4)
    events = [json.loads(x) for x in open(argv[5])] if os.path.exists(argv[5]) else []

    import rendercanvas
    import rendercanvas.offscreen as off

    made = []

    class Canvas(off.OffscreenRenderCanvas):
        def __init__(self, *a, **kw):
            kw["size"], kw["pixel_ratio"] = (w, h), 1.0
            super().__init__(*a, **kw)
            made.append(self)

    class Loop:  # the script's loop.run() returns: the pictures are drawn here
        def __getattr__(self, name):
            return getattr(off.loop, name)

        def run(self, *a, **kw):
            return None

    auto = types.ModuleType("rendercanvas.auto")
    auto.RenderCanvas, auto.loop = Canvas, Loop()
    sys.modules["rendercanvas.auto"] = auto
    rendercanvas.auto = auto
    sys.argv = [script]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    canvas = made[0]

    import pygfx as gfx

    for o in gc.get_objects():
        if isinstance(o, gfx.Controller):
            o.damping = 0
    for _ in range(3):  # fastplotlib fits its camera to the data over its first draws
        start = np.asarray(canvas.draw()).copy()
    for ev in events:
        if ev.get("event_type") in ("pointer_down", "pointer_move", "pointer_up", "wheel"):
            for k in ("buttons", "modifiers"):
                if k in ev:
                    ev[k] = tuple(ev[k])
            canvas.submit_event(ev)
            canvas._process_events()  # what rendercanvas' scheduler does before a draw: the handlers run
            canvas.draw()
    end = np.asarray(canvas.draw()).copy()
    end = np.asarray(canvas.draw()).copy()  # a controller that moves on the draw after settles here
    print(json.dumps({"psnr_before": psnr(before, start), "psnr_after": psnr(after, end),
                      "psnr_after_vs_start": psnr(after, start), "psnr_start_vs_end": psnr(start, end),
                      "events": len(events)}))


if __name__ == "__main__":
    main(sys.argv[1:])
