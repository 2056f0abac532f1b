# SPDX-License-Identifier: MIT
"""python3 -m rcanvas: a small demo of the binding. Opens a canvas, prints its URL (with the interactive token), and
streams moving colour bands with a bouncing ball drawn with numpy; pressing and dragging the pointer paints white
strokes, key "c" clears them. Ctrl-C stops it (exit status 0); a bad option or a taken port exits 2 with one line.

    python3 -m rcanvas [--host 127.0.0.1] [--port 8080] [--fps 30] [--codec jpeg] [--allow-host NAME]...
"""

import argparse
import logging
import math
import signal
import sys
import time

import numpy as np

import rcanvas

PAINT = (255, 255, 255)  # the strokes' colour: the background and the ball never reach it (see Scene.render)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m rcanvas", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only; "
                   "0.0.0.0 for every interface, with --allow-host for the name viewers use)")
    p.add_argument("--port", type=int, default=8080, help="TCP port, 0-65535 (default 8080; 0 = any free port)")
    p.add_argument("--fps", type=float, default=30.0, help="frame rate cap, 1-240 (default 30)")
    p.add_argument("--codec", default="jpeg", help="codec of the frames (default jpeg): one of "
                   + ", ".join(sorted(rcanvas.CODECS)) + ", or another encoder's name (rcanvas.encoders())")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="accept this Host name too (the machine's name or address when bound to 0.0.0.0); repeatable")
    a = p.parse_args(argv)
    if not 0 <= a.port <= 65535:
        p.error(f"--port: {a.port} is not in 0-65535")
    if not 1 <= a.fps <= 240:
        p.error(f"--fps: {a.fps:g} is not in 1-240")
    return a


class Scene:
    """The picture at the canvas's physical size: bands that drift, a ball that bounces, and the painted strokes
    (a mask kept across frames, cropped or padded when the viewer's size changes)."""

    def __init__(self):
        self.w = self.h = 0
        self.frame = self.paint = None
        self.ball = [0.3, 0.4]      # centre as a fraction of the size
        self.vel = [0.23, 0.31]     # fractions per second
        self.last = None            # the last painted point (physical px) of the stroke under way, or None

    def resize(self, w, h):
        if (w, h) == (self.w, self.h):
            return
        paint = np.zeros((h, w), bool)
        if self.paint is not None:
            ch, cw = min(h, self.h), min(w, self.w)
            paint[:ch, :cw] = self.paint[:ch, :cw]
        self.w, self.h, self.paint = w, h, paint
        self.frame = np.empty((h, w, 3), np.uint8)
        self.xs = np.arange(w, dtype=np.float32)
        self.ys = np.arange(h, dtype=np.float32)

    def stroke_to(self, x, y, radius):
        """Paints a disc at (x, y) and, while a stroke is under way, the segment from the last point."""
        x0, y0 = self.last if self.last is not None else (x, y)
        n = max(1, int(math.hypot(x - x0, y - y0) / max(1.0, radius / 2)))
        for i in range(n + 1):
            self._disc(x0 + (x - x0) * i / n, y0 + (y - y0) * i / n, radius)
        self.last = (x, y)

    def _disc(self, cx, cy, r):
        x0, x1 = max(0, int(cx - r)), min(self.w, int(cx + r) + 1)
        y0, y1 = max(0, int(cy - r)), min(self.h, int(cy + r) + 1)
        if x0 >= x1 or y0 >= y1:
            return
        dx = self.xs[x0:x1][None, :] - cx
        dy = self.ys[y0:y1][:, None] - cy
        self.paint[y0:y1, x0:x1] |= dx * dx + dy * dy <= r * r

    def render(self, t, dt):
        f = self.frame
        # Bands: red follows x, green follows y, blue their sum, each drifting with t; all in 20-219 (never PAINT).
        f[..., 0] = (120 + 100 * np.sin(self.xs / max(1, self.w) * 2 * math.pi * 2 - t * 1.3)).astype(np.uint8)[None, :]
        f[..., 1] = (120 + 100 * np.sin(self.ys / max(1, self.h) * 2 * math.pi * 1.5 + t * 0.9)).astype(np.uint8)[:, None]
        f[..., 2] = ((f[..., 0].astype(np.uint16) + f[..., 1]) // 2).astype(np.uint8)
        # The ball: bounces off the edges.
        for i in (0, 1):
            self.ball[i] += self.vel[i] * dt
            if not 0.05 <= self.ball[i] <= 0.95:
                self.vel[i] = -self.vel[i]
                self.ball[i] = min(0.95, max(0.05, self.ball[i]))
        r = max(4, min(self.w, self.h) // 12)
        cx, cy = self.ball[0] * self.w, self.ball[1] * self.h
        x0, x1 = max(0, int(cx - r)), min(self.w, int(cx + r) + 1)
        y0, y1 = max(0, int(cy - r)), min(self.h, int(cy + r) + 1)
        if x0 < x1 and y0 < y1:
            dx = self.xs[x0:x1][None, :] - cx
            dy = self.ys[y0:y1][:, None] - cy
            f[y0:y1, x0:x1][dx * dx + dy * dy <= r * r] = (240, 60, 40)
        f[self.paint] = PAINT
        return f


class _Held(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(format="rcanvas: %(levelname)s: %(message)s")
    # The library's log lines while the server starts are held back: when it fails, the one line below says why.
    held = _Held()
    log = logging.getLogger("rcanvas")
    log.addHandler(held)
    log.propagate = False
    try:
        server = rcanvas.Server(host=a.host, port=a.port, allowed_hosts=a.allow_host or None)
    except rcanvas.LibraryNotFound as err:
        print(f"rcanvas: {err}", file=sys.stderr)
        return 2
    except rcanvas.RcanvasError as err:
        hint = ": pick another with --port N (0: any free port)" if err.name == "RCANVAS_EADDRINUSE" else ""
        print(f"rcanvas: cannot serve on {a.host}:{a.port}: {err.description} ({err.name}){hint}", file=sys.stderr)
        return 2
    finally:
        log.removeHandler(held)
        log.propagate = True
    for record in held.records:
        log.handle(record)
    try:
        try:
            canvas = server.canvas(title="rcanvas demo", update_mode="continuous", max_fps=a.fps, codec=a.codec)
        except ValueError as err:  # an unknown --codec: the names it takes
            print(f"rcanvas: --codec: {err}", file=sys.stderr)
            return 2
        print(f"rcanvas demo: open {canvas.url}   (press and drag to paint, key c clears; Ctrl-C stops)", flush=True)
        scene = Scene()
        t0 = last = time.monotonic()
        # Ctrl-C raises KeyboardInterrupt as usual, and also sets a flag the loop checks: an interrupt that lands
        # while Python code runs inside a C callback (the library's log callback) is printed and swallowed by
        # ctypes, and the demo then ran on; with the flag it still stops within one wait (0.25 s).
        stop = []

        def on_sigint(signum, frame):
            stop.append(signum)
            raise KeyboardInterrupt

        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
        while not stop:
            wake = canvas.wait(0.25)  # a bounded wait: Ctrl-C is seen within a quarter second
            ratio = canvas.get_size()["pixel_ratio"] or 1.0
            scene.resize(*canvas.physical_size)
            for ev in canvas.poll_events():
                t = ev["event_type"]
                if t in ("pointer_down", "pointer_move") and (t == "pointer_down" or ev["buttons"]):
                    scene.stroke_to(ev["x"] * ratio, ev["y"] * ratio, 6 * ratio)
                elif t in ("pointer_up", "pointer_leave"):
                    scene.last = None
                elif t == "key_down" and ev["key"] in ("c", "C"):
                    scene.paint[:] = False
            if wake & rcanvas.WAKE_DRAW:
                now = time.monotonic()
                canvas.present(scene.render(now - t0, min(0.1, now - last)))
                last = now
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        server.close()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # before the loop began (while the server started)
        sys.exit(0)
