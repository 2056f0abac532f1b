# SPDX-License-Identifier: MIT
"""A rendercanvas backend on rcanvas: each canvas is a page of one rcanvas server (the first at "/", others at
"/c/NAME"), frames go out through rcanvas' encoders (JPEG by default, threaded, in C) with its flow control,
and browser input comes back as rendercanvas events.

Use it in place of ``rendercanvas.auto``::

    from rcanvas.rendercanvas import RenderCanvas, loop

or run an unmodified rendercanvas program on it::

    python3 -m rcanvas.rendercanvas examples/drag.py      # prints the page's URL; exits when the script does

Configuration by environment (the runner and notebooks; rcanvas.get_server()): RCANVAS_HOST (127.0.0.1),
RCANVAS_PORT (unset: a free port; in a Jupyter kernel one derived from the kernel, the same after a restart),
RCANVAS_TOKEN, RCANVAS_BASE_PATH (behind a proxy, e.g. jupyter-server-proxy), RCANVAS_JUPYTER_PROXY (set by the
notebook server extension rcanvas.jupyter), RCANVAS_CODEC (jpeg; "jpeg-wgpu": JPEG on the app's wgpu device, the
default for wgpu canvases on a GPU), RCANVAS_QUALITY (85), RCANVAS_ALLOWED_HOSTS and RCANVAS_ALLOWED_ORIGINS
(comma-separated; docs/python.md, "Notebooks"), RCANVAS_EVENT_LOG (a file: every event given to the app is appended
as a JSON line, for debugging and for tests that replay them). Keyword arguments of RenderCanvas:
name= (the page /c/NAME), codec=, quality=. Each new canvas says where it is: a link in a notebook cell's output,
a line "rcanvas: open URL" on stdout elsewhere. A canvas made under the name of a live one replaces it.

Scheduling: rendercanvas' scheduler decides when a frame is wanted (update_mode, max_fps); ``_rc_request_draw``
asks rcanvas for a draw, which rcanvas grants once a viewer watches and its flow control allows (frames in
flight below max_in_flight), as the http backend does with its own acks. A thread per canvas blocks in
rcanvas_wait() (GIL released) and hands draws and events to the asyncio loop with call_soon_threadsafe.
Ctrl-C (SIGINT): while loop.run() runs, rendercanvas' own handler stops the loop (closing the canvases, their
viewers see the page go away) and run() returns at once; the script goes on from there, so the runner exits 0
when the script then ends. A Ctrl-C outside loop.run() (while the script sets up) raises KeyboardInterrupt in
the script; the runner then closes the server and exits 130 without a traceback. SIGTERM keeps its default,
ending the process at once (rendercanvas 2.7.2 means to handle it too, but installs a handler only where Python
has one, which it has for SIGINT alone).
Presenting: bitmaps only ("rgba-u8"; a wgpu canvas context renders to a texture and reads it back, rendercanvas'
bitmap fallback) of any size: the browser upscales a bitmap smaller than its canvas nearest-neighbour, as
rendercanvas' own backends do (set_bitmap: "N times smaller bitmaps … a pixelated visualization"), and rcanvas sends
a small one lossless (docs/protocol.md, "Small bitmaps"). The window's size follows the browser's canvas (resize
events carry its devicePixelRatio); set_logical_size applies until a viewer has reported its size.
"""

__all__ = ["RcanvasRenderCanvas", "RenderCanvas", "RcanvasLoop", "loop", "get_server"]

import atexit
import json
import math
import os
import signal
import sys
import threading
import time
import weakref

MISSING_RENDERCANVAS = ("rcanvas.rendercanvas needs the rendercanvas package (>= 2.7), which is not installed: "
                        "pip install 'rcanvas[rendercanvas]' (or pip install rendercanvas)")

try:
    import rendercanvas  # noqa: F401  (the user's installed package)
except ModuleNotFoundError as _err:
    if _err.name != "rendercanvas":
        raise  # rendercanvas is there but one of its own imports failed: its traceback says which
    if __name__ == "__main__":  # python3 -m rcanvas.rendercanvas: one line, not a traceback
        print("rcanvas: " + MISSING_RENDERCANVAS, file=sys.stderr)
        sys.exit(2)
    raise ModuleNotFoundError(MISSING_RENDERCANVAS, name="rendercanvas") from None
from rendercanvas.base import BaseCanvasGroup, BaseRenderCanvas
from rendercanvas.asyncio import AsyncioLoop

import rcanvas as _rc
from rcanvas import _kernel

_announce = None  # the runner's function that prints each canvas's URL; None = _kernel.announce


_EVENT_LOG = os.environ.get("RCANVAS_EVENT_LOG")
_SUBSAMPLING_NAMES = {0: "420", 1: "444", 2: "auto"}  # rcanvas_subsampling


def get_server():
    """The one rcanvas.Server of this process's canvases: rcanvas.get_server() (made at the first canvas, from
    the RCANVAS_* environment variables; in a Jupyter kernel on a port and with tokens that survive restarts)."""
    return _rc.get_server()


def __getattr__(name):
    if name == "_server":  # the runner and older callers: the shared server, None before the first canvas
        return _rc._shared
    raise AttributeError(name)


class RcanvasLoop(AsyncioLoop):
    """rendercanvas' asyncio loop; rcanvas' own threads do the network and encoding beside it."""

    def _rc_init(self):
        return super()._rc_init()

    def _rc_run(self):
        return super()._rc_run()

    async def _rc_run_async(self):
        return await super()._rc_run_async()

    def _rc_stop(self):
        # rendercanvas' SIGINT handler calls stop() -> here, from a Python signal handler that runs in
        # the main thread while asyncio sits in epoll_wait(): setting the stop event only queues its waiter
        # with call_soon, which does not wake the selector, and with no timer due asyncio waited for ever (the
        # hang after the first Ctrl-C). call_soon_threadsafe writes to the loop's self-pipe, as asyncio's own
        # SIGINT handler does.
        aloop = self._interactive_loop or self._run_loop
        r = super()._rc_stop()
        if aloop is not None:
            try:
                aloop.call_soon_threadsafe(_noop)
            except RuntimeError:  # the loop is closed
                pass
        return r

    def _rc_add_task(self, async_func, name):
        return super()._rc_add_task(async_func, name)

    def _rc_call_later(self, delay, callback):
        return super()._rc_call_later(delay, callback)

    def _rc_call_soon_threadsafe(self, callback):
        return super()._rc_call_soon_threadsafe(callback)

    def _post(self, callback):
        """call_soon_threadsafe into the running asyncio loop; False when none runs (yet) or it has closed."""
        aloop = self._interactive_loop or self._run_loop
        if aloop is None:
            return False
        try:
            aloop.call_soon_threadsafe(callback)
            return True
        except RuntimeError:  # the loop is closed
            return False


def _noop():
    pass


loop = RcanvasLoop()


class RcanvasCanvasGroup(BaseCanvasGroup):
    pass


_counter = 0
_live = weakref.WeakSet()  # canvases whose waiter thread may be inside rcanvas
_by_name = weakref.WeakValueDictionary()  # (id of the server, name) -> the live canvas of that name


@atexit.register
def _stop_waiters():
    # Runs before rcanvas' own atexit hook (registered earlier, so run later) frees the server: every waiter
    # thread leaves rcanvas first, so that none is inside a call on a canvas being freed.
    for c in list(_live):
        c._stop_waiter()


class RcanvasRenderCanvas(BaseRenderCanvas):
    """A rendercanvas canvas shown in web browsers by rcanvas. Extra keyword arguments: name (the page
    "/c/NAME"; default: in a notebook cell a name of the cell, "cell-" + 10 hex digits, elsewhere "" for the
    first canvas, "canvas2", "canvas3", … after), codec ("jpeg", "jpeg-wgpu", "png", "webp", "h264", …; default
    $RCANVAS_CODEC or "jpeg", which is jpeg-wgpu for a wgpu canvas on a GPU), quality (1-100), server (an rcanvas.Server to use; default rcanvas.get_server()).

    A new canvas of the name of a live one replaces it: the old one is closed (its viewers get 1001 "canvas
    closed" and reconnect to the new one, at the same URL). So a notebook cell run again replaces its canvas
    instead of leaving the old one drawing."""

    _rc_canvas_group = RcanvasCanvasGroup(loop)

    def __init__(self, *args, name=None, codec=None, quality=None, server=None, **kwargs):
        global _counter
        if name is None:
            name = _kernel.cell_canvas_name()
        if name is None:
            _counter += 1
            name = "" if _counter == 1 else f"canvas{_counter}"
        self._server = server or get_server()
        codec = codec or os.environ.get("RCANVAS_CODEC", "jpeg")
        # JPEG on the app's own wgpu device (rcanvas._wgpu, rcanvas.jpeg_wgpu): asked for by name, or wherever the
        # canvas streams JPEG and the device is a GPU; rcanvas itself is told JPEG
        self._jpeg_wgpu = "on" if codec == "jpeg-wgpu" else "auto" if codec == "jpeg" else None
        if codec == "jpeg-wgpu":
            codec = "jpeg"
        old = _by_name.get((id(self._server), name))
        super().__init__(*args, **kwargs)
        size = kwargs.get("size") or (640, 480)
        self._canvas = self._server.canvas(
            name, replace=True, title="rcanvas", width=max(1, int(size[0])), height=max(1, int(size[1])),
            update_mode="ondemand", max_fps=0,  # rendercanvas' scheduler paces; rcanvas grants per flow control
            codec=codec,
            quality=int(quality or os.environ.get("RCANVAS_QUALITY", "85")))
        self._pixel_ratio = 1.0
        self._viewer_sized = False  # a viewer reported its size (resize): set_logical_size no longer applies
        self._draw_requested = False
        self._t_request = 0.0
        self._draw_wait = 0.0  # seconds the last draw waited for rcanvas to grant it
        self._pending = []  # events and a granted draw the waiter thread hands to the loop (under _lock)
        self._pending_draw = False
        self._pending_pixels = False  # rcanvas asked for the pixels of a frame it took as JPEG (WAKE_PIXELS)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._waiter = threading.Thread(target=self._wait_loop, name=f"rcanvas-wait-{name or 'default'}",
                                        daemon=True)
        self._final_canvas_init()
        _live.add(self)
        _by_name[(id(self._server), name)] = self
        if old is not None and not old.get_closed():
            # a cell run again: its old canvas (whose rcanvas canvas replace=True closed) gives way to this one;
            # closed after this one joined the loop's canvases, so that the loop does not stop for want of any
            old.close()
        self._waiter.start()
        url = self._canvas.url
        if _announce is not None:
            _announce(self, url)
        else:  # a link in a notebook's cell output, a line on stdout elsewhere: not a warning on stderr
            _kernel.announce(name, url, self._canvas.display_url)

    # %% rcanvas side

    @property
    def url(self):
        """The page's URL (with the interactive token)."""
        return self._canvas.url

    def _wait_loop(self):
        # One thread per canvas: rcanvas_wait() (GIL released) and hand-over to the loop's thread.
        c = self._canvas
        while not self._stop.is_set():
            try:
                w = c.wait(0.05)
                evs = c.poll_events() if w & _rc.WAKE_EVENTS else []
            except _rc.RcanvasError:
                break
            with self._lock:
                self._pending.extend(evs)
                if w & _rc.WAKE_DRAW:
                    self._pending_draw = True
                if w & _rc.WAKE_PIXELS:
                    self._pending_pixels = True
                due = bool(self._pending) or self._pending_draw or self._pending_pixels
            if due:
                loop._post(self._on_wake)  # retried on the next round (≤ 50 ms) while no loop runs yet

    def _on_wake(self):
        # In the loop's thread.
        with self._lock:
            evs, self._pending = self._pending, []
            draw, self._pending_draw = self._pending_draw, False
            pixels, self._pending_pixels = self._pending_pixels, False
        if self.get_closed():
            return
        if pixels:
            ctx = getattr(self, "_canvas_context", None)
            if hasattr(ctx, "_rc_pixels") and self._canvas._h is not None:
                ctx._rc_pixels(self._canvas.present_pixels_address)
        for ev in evs:
            self._on_event(ev)
        if draw and self._draw_requested:
            self._draw_requested = False
            # how long rcanvas' flow control held this draw (its wgpu context goes one frame behind when long)
            self._draw_wait = time.perf_counter() - self._t_request
            self._time_to_draw()

    def _on_event(self, ev):
        t = ev["event_type"]
        if t == "resize":
            ratio = ev["pixel_ratio"] or 1.0
            self._pixel_ratio = ratio
            self._viewer_sized = True
            # the physical size rcanvas gives the canvas for this event (rc_canvas_set_size_locked rounds half up;
            # Python's round() rounds half to even: 320.5 CSS px would be 320 here and 321 in the browser)
            pw = max(1, math.floor(ev["width"] * ratio + 0.5))
            ph = max(1, math.floor(ev["height"] * ratio + 0.5))
            self._size_info.set_physical_size(pw, ph, ratio)
        elif t == "close":
            self.close()
        else:
            ev.pop("viewer_id", None)
            ctx = getattr(self, "_canvas_context", None)
            if hasattr(ctx, "note_input"):  # its next frames go newest first: the viewer waits for the answer
                ctx.note_input()
            if t == "char":
                ev.setdefault("char_str", ev.get("data", ""))  # rendercanvas 2.7's qt/glfw send both (compat)
            if _EVENT_LOG:  # RCANVAS_EVENT_LOG: what the app is given, a JSON line each (tests replay them)
                with open(_EVENT_LOG, "a") as f:
                    f.write(json.dumps(ev, default=list) + "\n")
            self.submit_event(ev)

    def _repr_html_(self):
        return self._canvas._repr_html_()

    def _repr_mimebundle_(self, include=None, exclude=None):
        # as rcanvas.Canvas: the notebook widget where the kernel has anywidget (rcanvas.widget; no port need be
        # reachable from the browser), with the iframe as its text/html; else the iframe
        bundle = self._canvas._repr_mimebundle_(include, exclude)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict) and "text/plain" in data:
            data["text/plain"] = f"<RcanvasRenderCanvas {self.url}>"
        return bundle

    # %% Methods to implement RenderCanvas

    def _rc_gui_poll(self):
        pass  # events arrive through the waiter thread

    def get_context(self, context_type):
        # A wgpu context of rcanvas' own (rcanvas._wgpu): rendercanvas picks its context class by present method,
        # and for "bitmap" that is WgpuContextToBitmap, which copies every mapped frame into a new numpy array that
        # rcanvas then copies again. RCANVAS_WGPU_PRESENT=bitmap keeps rendercanvas' own (for comparison).
        if context_type == "wgpu" or (isinstance(context_type, type) and context_type.__name__ == "WgpuContext"
                                      and context_type.__module__.startswith("rendercanvas.")):
            from rcanvas import _wgpu

            if _wgpu.present_mode() != "bitmap":
                context_type = _wgpu.RcanvasWgpuContext
        return super().get_context(context_type)

    def _rc_get_present_info(self, present_methods):
        if "bitmap" in present_methods:
            me = weakref.WeakMethod(self._rc_present_bitmap)  # the context must not keep the canvas alive
            self_ref = weakref.ref(self)

            def present(**result):
                m = me()
                if m is not None:
                    m(**result)

            def live_quality():
                me_ = self_ref()
                return me_._canvas.live_quality if me_ is not None and me_._canvas._h is not None else 0

            return {"method": "bitmap", "formats": ["rgba-u8"], "rcanvas_present": present,
                    "rcanvas_draw_wait": lambda: self_ref()._draw_wait if self_ref() is not None else 0.0,
                    "rcanvas_jpeg": self._jpeg_wgpu, "rcanvas_live_quality": live_quality,
                    "rcanvas_subsampling": lambda: (_SUBSAMPLING_NAMES.get(self_ref()._subsampling_opt(), "auto")
                                                    if self_ref() is not None else "auto")}
        return None  # rendercanvas raises: no "screen" on a remote canvas

    def _subsampling_opt(self):
        return self._canvas.get_option("subsampling") if self._canvas._h is not None else 2

    def _rc_request_draw(self):
        # rcanvas grants it (WAKE_DRAW in the waiter) once a viewer watches and may take a frame.
        self._draw_requested = True
        self._t_request = time.perf_counter()
        if self._canvas._h is not None:
            self._canvas.request_draw()

    def _rc_request_paint(self):
        loop.call_soon(self._time_to_paint)

    def _rc_force_paint(self):
        pass  # the bitmap goes out on present

    def _rc_present_bitmap(self, *, data, format, **kwargs):
        import numpy as np

        if type(data).__name__ == "EncodedJpeg":  # from rcanvas._wgpu: JPEG made on the app's GPU (jpeg-wgpu)
            if self._canvas._h is None:
                return
            if self._canvas.present_encoded(data.jpeg, data.width, data.height, data.quality, "jpeg-wgpu"):
                data.taken()
            else:  # rcanvas cannot send it as it is: this frame's pixels, read back now
                data.present_pixels(self._canvas.present_address)
            return
        if type(data).__name__ == "MappedFrame":  # from rcanvas._wgpu: a mapped GPU buffer, padded rows
            try:
                if self._canvas._h is not None:
                    self._canvas.present_address(data.address, data.width, data.height, data.pitch, data.format)
            finally:
                data.done()  # copied by rcanvas: the buffer is unmapped now
            return
        a = np.asarray(data)
        if a.ndim == 2:  # rendercanvas gives rgba-u8 as asked; be lenient with a flat one
            a = a.reshape(a.shape[0], -1, 4)
        self._canvas.present(a, "rgba")

    def _rc_set_logical_size(self, width, height):
        # Until a viewer reports its own size: this size, at the last known pixel ratio. After that the browser's
        # canvas has the size (the page fills its window or iframe; nothing here can resize it): rendering at
        # another size would only be stretched onto it until the browser's next resize.
        if self._viewer_sized:
            return
        ratio = self._pixel_ratio
        pw = max(1, round(float(width) * ratio + 0.01))
        ph = max(1, round(float(height) * ratio + 0.01))
        self._size_info.set_physical_size(pw, ph, ratio)

    def _stop_waiter(self):
        self._stop.set()
        if self._waiter.is_alive() and self._waiter is not threading.current_thread():
            self._waiter.join()
        _live.discard(self)

    def _rc_close(self):
        self._stop_waiter()
        self._canvas.close()

    def _rc_set_title(self, title):
        if self._canvas._h is not None:
            self._canvas.set_title(title)

    def _rc_set_cursor(self, cursor):
        if self._canvas._h is not None:
            self._canvas.set_cursor(cursor)


if "_rc_get_closed" in vars(BaseRenderCanvas):
    # rendercanvas 2.7.2 as released on PyPI asks the backend whether it is closed (its get_closed() is
    # _rc_get_closed(), False by default: a closed canvas would stay in the loop, which then never ended); its later
    # sources (../shared/third_party) track that in the base class and have no such method, and their backend check
    # refuses one that is not theirs. So it is added here, outside the class body, only where the base has it.
    def _rc_get_closed(self):
        return self._canvas.closed

    RcanvasRenderCanvas._rc_get_closed = _rc_get_closed
    del _rc_get_closed

RenderCanvas = RcanvasRenderCanvas


def _run_script(argv):
    """python3 -m rcanvas.rendercanvas SCRIPT.py [ARGS…]: runs SCRIPT with this module as rendercanvas.auto."""
    import runpy

    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        print("usage: python3 -m rcanvas.rendercanvas SCRIPT.py [ARGS...]")
        return 0 if argv else 2
    import rcanvas.rendercanvas as mod  # the module proper (this file runs as __main__)

    def announce(canvas, url):
        print(f"rcanvas: open {url}", flush=True)

    mod._announce = announce
    sys.modules["rendercanvas.auto"] = mod
    import rendercanvas as _pkg
    _pkg.auto = mod
    script = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    if not os.path.isfile(script):
        print(f"rcanvas: {script}: no such file", file=sys.stderr)
        return 2
    try:
        _rc.lib()  # here rather than at the script's first canvas: a missing library is one line, not a traceback
    except _rc.LibraryNotFound as err:
        print(f"rcanvas: {err}", file=sys.stderr)
        return 2
    interrupted = False
    try:
        runpy.run_path(script, run_name="__main__")
    except KeyboardInterrupt:  # Ctrl-C outside loop.run() (there rendercanvas' handler stops the loop)
        interrupted = True
    finally:
        # A Ctrl-C more must not cut the clean-up short (it joins rcanvas' threads): ignored for its few ms.
        prev = _ignore_sigint()
        try:
            mod._stop_waiters()
            if _rc._shared is not None:
                _rc._shared.close()
        finally:
            if prev is not None:
                signal.signal(signal.SIGINT, prev)
    return 130 if interrupted else 0


def _ignore_sigint():
    """Ignores SIGINT (main thread only); returns the previous handler to restore, None when not changed."""
    try:
        return signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        return None


if __name__ == "__main__":
    try:
        sys.exit(_run_script(sys.argv[1:]))
    except KeyboardInterrupt:  # in the few lines around the script's run: still a quiet exit
        sys.exit(130)
