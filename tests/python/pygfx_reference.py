# SPDX-License-Identifier: MIT
"""pygfx's own render of pygfx_examples/cube.py on rendercanvas' offscreen canvas, compared with pictures a browser
showed of the same program on rcanvas (pygfx.test.mjs). The example is loaded as a module (its `cube` and
`animate`, not its __main__ block) and shown by gfx.Display exactly as its __main__ block does, on an offscreen
canvas of the browser's size; frame n is the picture after n calls of animate() (the example turns the cube a
little each frame), so the frame the browser showed is found by searching n.

    python pygfx_reference.py W H BEFORE.rgba NMAX_BEFORE AFTER.rgba NMAX_AFTER X0 Y0 X1 Y1 STEPS

BEFORE/AFTER: the browser's RGBA pictures (W×H) before and after a pointer drag from (X0, Y0) to (X1, Y1) (logical
pixels, STEPS moves); NMAX_*: the most frames the app can have drawn by then. Prints JSON: for BEFORE the best n
and its PSNR, and the PSNR of frames 15 away; for AFTER the best PSNR with pygfx's camera after the same drag, and
the best without a drag and with the opposite drag. PSNR over the picture but for the stats box at the top left
(its text is the frame rate, which differs)."""

import json
import runpy
import sys

import numpy as np

STATS_BOX = (100, 40)  # w, h in pixels: Stats' 90 × 34 px box, with a margin


def psnr(a, b):
    m = np.ones(a.shape[:2], bool)
    m[:STATS_BOX[1], :STATS_BOX[0]] = False
    d = (a[..., :3].astype(np.float64) - b[..., :3].astype(np.float64))[m]
    mse = float((d * d).mean())
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def main(argv):
    w, h = int(argv[0]), int(argv[1])
    before = np.fromfile(argv[2], np.uint8).reshape(h, w, 4)
    nmax_before = int(argv[3])
    after = np.fromfile(argv[4], np.uint8).reshape(h, w, 4)
    nmax_after = int(argv[5])
    x0, y0, x1, y1, steps = float(argv[6]), float(argv[7]), float(argv[8]), float(argv[9]), int(argv[10])

    import pygfx as gfx
    import rendercanvas.offscreen as offscreen

    ex = runpy.run_path(argv[11] if len(argv) > 11 else "pygfx_examples/cube.py", run_name="cube_example")
    cube, animate = ex["cube"], ex["animate"]
    rot0 = cube.local.rotation.copy()

    canvas = offscreen.OffscreenRenderCanvas(size=(w, h), pixel_ratio=1.0)
    disp = gfx.Display(canvas=canvas)
    disp.stats = True
    disp.show(cube)  # the example's own setup; the offscreen loop's run() returns at once
    disp.controller.damping = 0  # the camera where the drag leaves it at once (the browser's had time to settle)
    cam0 = disp.camera.get_state()

    def frame(n, cam=None):
        cube.local.rotation = rot0
        for _ in range(n):
            animate()
        disp.camera.set_state(cam or cam0)
        return np.asarray(canvas.draw())

    def best(pic, lo, hi, cam=None):
        # coarse, then fine: the PSNR falls off smoothly around the right frame
        scores = {}
        for n in range(lo, hi + 1, 6):
            scores[n] = psnr(pic, frame(n, cam))
        c = max(scores, key=scores.get)
        for n in range(max(lo, c - 6), min(hi, c + 6) + 1):
            if n not in scores:
                scores[n] = psnr(pic, frame(n, cam))
        n = max(scores, key=scores.get)
        return n, scores[n]

    def dragged(dx, dy):
        disp.camera.set_state(cam0)

        def ev(t, x, y, buttons):
            return {"event_type": t, "x": x, "y": y, "button": 1, "buttons": buttons, "modifiers": (),
                    "ntouches": 0, "touches": {}, "time_stamp": 0}
        canvas.submit_event(ev("pointer_down", x0, y0, (1,)))
        for i in range(1, steps + 1):
            canvas.submit_event(ev("pointer_move", x0 + dx * i / steps, y0 + dy * i / steps, (1,)))
        canvas.submit_event(ev("pointer_up", x0 + dx, y0 + dy, ()))
        canvas._process_events()  # what the scheduler does each tick (the offscreen canvas has none)
        canvas.draw()  # the controller moves the camera before the render; damping 0: where the drag left it
        return disp.camera.get_state()

    n1, p1 = best(before, 0, nmax_before)
    near = [psnr(before, frame(n)) for n in (max(0, n1 - 15), n1 + 15)]
    cam_drag = dragged(x1 - x0, y1 - y0)
    cam_opp = dragged(x0 - x1, y0 - y1)
    n2, p2 = best(after, n1, nmax_after, cam_drag)
    _, p2_none = best(after, n1, nmax_after, cam0)
    _, p2_opp = best(after, n1, nmax_after, cam_opp)
    print(json.dumps({"n_before": n1, "psnr_before": p1, "psnr_15_frames_away": max(near), "n_after": n2,
                      "psnr_after_drag": p2, "psnr_after_no_drag": p2_none, "psnr_after_opposite_drag": p2_opp}))


if __name__ == "__main__":
    main(sys.argv[1:])
