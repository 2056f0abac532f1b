# SPDX-License-Identifier: MIT
"""Many threads present on one canvas at once, each at its own size and colour, (H, W, 4) and (H, W, 3) arrays
mixed, while a raw viewer reads every frame and checks that each tile has the colour of the thread whose size
the frame has (stray bytes from another frame or from the heap would not). Run as a child process by
test_hardening.py, so that a crash ends this process and not the test runner; prints one JSON line of counts.

argv: threads, presents per thread."""

import json
import os
import sys
import threading

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import rcanvas  # noqa: E402
from wsraw import RawWS, decode_png, parse_frame  # noqa: E402

THREADS, PRESENTS = int(sys.argv[1]), int(sys.argv[2])
SIZES = [(40 + 12 * i, 24 + 10 * i) for i in range(THREADS)]           # (w, h): every thread's own
COLOURS = [(30 * i + 10, 255 - 20 * i, (70 * i) % 256) for i in range(THREADS)]
BY_SIZE = {s: c for s, c in zip(SIZES, COLOURS)}

server = rcanvas.Server(port=0)
canvas = server.canvas(codec="png", refine_ms=0, update_mode="manual", max_fps=0)
canvas.set_option("rate_adapt", 0)
ws = RawWS("127.0.0.1", server.port, f"/ws?token={server.token}")
counts = {"presented": 0, "errors": [], "tiles": 0, "bad_tiles": 0, "frames": 0}
lock = threading.Lock()


def viewer():
    while True:
        try:
            msg = ws.recv()
        except (OSError, ConnectionError):
            return  # the server closed (the end of the run)
        if isinstance(msg, str):
            continue
        h, payload = parse_frame(msg)
        tile = decode_png(payload)[..., :3]
        want = BY_SIZE.get((h["frame_width"], h["frame_height"]))
        with lock:
            counts["tiles"] += 1
            if want is None or not (tile == np.array(want, np.uint8)).all():
                counts["bad_tiles"] += 1
        if h["flags"] & 2:
            counts["frames"] += 1
            try:
                ws.send_json({"type": "ack", "seq": h["seq"]})
            except OSError:
                return  # the server closed meanwhile


def presenter(i):
    w, h = SIZES[i]
    rgba = np.empty((h, w, 4), np.uint8)
    rgba[..., :3], rgba[..., 3] = COLOURS[i], 255
    rgb = np.ascontiguousarray(rgba[..., :3])
    for k in range(PRESENTS):
        try:
            canvas.present(rgba if (i + k) % 2 else rgb)
            with lock:
                counts["presented"] += 1
        except Exception as e:  # counted: the test expects none
            with lock:
                counts["errors"].append(repr(e))


vt = threading.Thread(target=viewer, daemon=True)
vt.start()
ts = [threading.Thread(target=presenter, args=(i,)) for i in range(THREADS)]
for t in ts:
    t.start()
for t in ts:
    t.join()
server.close()  # closes the viewer's connection: its thread returns
vt.join(10)
counts["errors"] = counts["errors"][:5]
print(json.dumps(counts), flush=True)
