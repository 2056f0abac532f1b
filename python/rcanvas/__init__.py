"""rcanvas for Python: a live canvas served to web browsers over WebSockets, fed with numpy arrays.

    import numpy as np, rcanvas
    server = rcanvas.Server(port=8080)
    canvas = server.canvas(title="noise", update_mode="continuous")
    print(canvas.url)                       # open it in a browser (the URL carries the access token)
    try:
        while True:
            wake = canvas.wait()            # blocks (GIL released) until a draw is due or events came
            for ev in canvas.poll_events(): # renderview dicts: {"event_type": "pointer_down", "x": …, …}
                print(ev)
            if wake & rcanvas.WAKE_DRAW:
                w, h = canvas.physical_size
                canvas.present(np.random.randint(0, 255, (h, w, 3), np.uint8))
    except KeyboardInterrupt:               # Ctrl-C (wait() lets it through within 0.1 s): a quiet exit
        server.close()

Why ctypes (and not cffi): it is in the standard library, so the package needs nothing but numpy, and the C
API is small (plain structs, ints and strings, no callbacks on hot paths). ctypes releases the GIL around
every foreign call (ctypes.CDLL, unlike ctypes.PyDLL), so while rcanvas copies a frame, waits, or frees a
server, other Python threads run; the log callback re-acquires it on rcanvas' threads.

Threading: the rules of include/rcanvas.h hold: present() and wait() one thread at a time per canvas; the rest
from any thread. Errors raise RcanvasError carrying the C error's name (e.g. "RCANVAS_EADDRINUSE"); bad arrays
raise TypeError (dtype) or ValueError (shape, layout) before anything reaches the library.

The library is found by rcanvas._lib.load(): $RCANVAS_LIBRARY, else ../build/librcanvas.so beside this package
(the source tree), else the system's librcanvas (ctypes.util.find_library).
"""

import atexit
import ctypes
import logging
import threading
import time
import weakref

import numpy as np

from . import _lib as L

__all__ = ["Server", "Canvas", "RcanvasError", "WAKE_DRAW", "WAKE_EVENTS", "lib"]
__version__ = "0.1.0"

logger = logging.getLogger("rcanvas")
_loaded = None  # the CDLL (not named _lib: that is the submodule rcanvas._lib)
_lib_lock = threading.Lock()


def lib():
    """The loaded librcanvas (ctypes.CDLL), loaded at the first call."""
    global _loaded
    with _lib_lock:
        if _loaded is None:
            _loaded = L.load()
        return _loaded


WAKE_DRAW = 1
WAKE_EVENTS = 2
WAIT_SLICE_S = 0.1  # the longest a wait() stays in C before Python's signal handlers get to run

UPDATE_MODES = {"manual": 0, "ondemand": 1, "continuous": 2, "fastest": 3}
CODECS = {"auto": 0, "jpeg": 1, "png": 2, "h264": 3, "vp8": 4, "vp9": 5, "av1": 6, "webp": 7}
SUBSAMPLING = {"420": 0, "444": 1, "auto": 2}
# rcanvas_option (include/rcanvas.h): names for Canvas.set_option/get_option.
OPTIONS = {"codec": 1, "quality": 2, "subsampling": 3, "refine_ms": 4, "max_in_flight": 5, "update_mode": 6,
           "max_fps": 7, "bitrate_kbps": 8, "keyframe_interval": 9, "encoder_threads": 10, "refine_codec": 11,
           "rate_adapt": 12}
FORMATS = {"rgba": 1, "bgra": 2, "rgbx": 3}
EVENT_TYPES = {1: "pointer_down", 2: "pointer_up", 3: "pointer_move", 4: "pointer_enter", 5: "pointer_leave",
               6: "double_click", 7: "wheel", 8: "key_down", 9: "key_up", 10: "char", 11: "resize", 12: "close"}
_MODIFIERS = ((1, "Shift"), (2, "Control"), (4, "Alt"), (8, "Meta"))
_LOG_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}
ECLOSED = -10


class RcanvasError(RuntimeError):
    """An rcanvas C error: .code (negative int), .name ("RCANVAS_EBUSY"), .description."""

    def __init__(self, code, what=""):
        self.code = int(code)
        self.name = lib().rcanvas_err_name(self.code).decode()
        self.description = lib().rcanvas_strerror(self.code).decode()
        super().__init__(f"{what + ': ' if what else ''}{self.name}: {self.description}")


def _check(r, what):
    if r < 0:
        raise RcanvasError(r, what)
    return r


def _b(s):
    return None if s is None else str(s).encode()


def _strv(items):
    items = [str(x).encode() for x in (items or [])]
    return (L.c_char_p * max(1, len(items)))(*items), len(items)


@L.LOG_FN
def _log_cb(user, level, message):
    try:
        logger.log(_LOG_LEVELS.get(level, logging.DEBUG), "%s", message.decode(errors="replace"))
    except Exception:  # never raise into C
        pass


_servers = weakref.WeakSet()


@atexit.register
def _close_all():
    # Stops the servers before the interpreter goes away, so that no rcanvas thread calls the log callback then.
    for s in list(_servers):
        s.close()


class Server:
    """An rcanvas server: one port, any number of canvases (one page each: "/" and "/c/NAME").

    host: address to bind ("127.0.0.1", loopback only, by default); port: 0 = any free port (read .port).
    token/view_token: the interactive and view-only access tokens (None: 128 random bits each).
    base_path: the URL prefix a reverse proxy serves it under (e.g. jupyter-server-proxy's "/proxy/8080").
    allowed_hosts / allowed_origins: extra Host names and WebSocket Origins accepted (docs/security.md).
    tls_cert/tls_key: PEM paths for https/wss. log_level: the most verbose rcanvas log lines passed on to the
    Python logger "rcanvas" ("error", "warn", "info", "debug"). Raises RcanvasError (e.g. RCANVAS_EADDRINUSE).
    Use as a context manager, or call close(); it is closed at interpreter exit in any case.
    """

    def __init__(self, host="127.0.0.1", port=0, *, token=None, view_token=None, base_path=None,
                 allowed_hosts=None, allowed_origins=None, tls_cert=None, tls_key=None, encode_threads=0,
                 max_viewers=None, log_level="warn"):
        cfg = L.ServerConfig()
        lib().rcanvas_server_config_init(ctypes.byref(cfg))
        self._keep = []  # the strings the config points to, alive until rcanvas_server_new copied them
        cfg.host = _b(host)
        cfg.port = int(port)
        cfg.token = _b(token)
        cfg.view_token = _b(view_token)
        cfg.base_path = _b(base_path)
        if allowed_hosts:
            arr, n = _strv(allowed_hosts)
            self._keep.append(arr)
            cfg.allowed_hosts, cfg.n_allowed_hosts = ctypes.cast(arr, ctypes.POINTER(L.c_char_p)), n
        if allowed_origins:
            arr, n = _strv(allowed_origins)
            self._keep.append(arr)
            cfg.allowed_origins, cfg.n_allowed_origins = ctypes.cast(arr, ctypes.POINTER(L.c_char_p)), n
        cfg.tls_cert, cfg.tls_key = _b(tls_cert), _b(tls_key)
        cfg.encode_threads = int(encode_threads)
        if max_viewers is not None:
            cfg.max_viewers = int(max_viewers)
        cfg.log = _log_cb
        cfg.log_level = {"error": 0, "warn": 1, "info": 2, "debug": 3}[log_level]
        h = ctypes.c_void_p()
        _check(lib().rcanvas_server_new(ctypes.byref(cfg), ctypes.byref(h)), "rcanvas_server_new")
        self._keep = None
        self._h = h
        self.base_path = base_path or ""
        self._canvases = weakref.WeakSet()
        self._lock = threading.Lock()
        _servers.add(self)

    @property
    def handle(self):
        if self._h is None:
            raise RcanvasError(ECLOSED, "server closed")
        return self._h

    @property
    def port(self):
        return _check(lib().rcanvas_server_port(self.handle), "rcanvas_server_port")

    @property
    def token(self):
        return lib().rcanvas_server_token(self.handle).decode()

    @property
    def view_token(self):
        return lib().rcanvas_server_view_token(self.handle).decode()

    def url(self, name=None, *, view_only=False, relative=False):
        """The URL of a canvas's page with the interactive (or view-only) token; name None = the default.
        relative=True: without scheme and host ("/proxy/8080/c/NAME?token=…" with base_path "/proxy/8080"), for
        a page served by a proxy on the notebook's own origin (jupyter-server-proxy)."""
        buf = ctypes.create_string_buffer(4096)
        fn = lib().rcanvas_server_view_url if view_only else lib().rcanvas_server_url
        _check(fn(self.handle, _b(name), buf, len(buf)), "rcanvas_server_url")
        url = buf.value.decode()
        if relative:
            url = "/" + url.split("://", 1)[1].split("/", 1)[1]
        return url

    def canvas(self, name="", **kwargs):
        """A new Canvas on this server (see Canvas)."""
        return Canvas(self, name, **kwargs)

    def close(self):
        """Closes every viewer and frees the server and its canvases (the Canvas objects become closed).
        Blocks until rcanvas' threads have joined (typically < 50 ms). Idempotent."""
        with self._lock:
            if self._h is None:
                return
            for c in list(self._canvases):
                c._detach()  # the server frees them
            h, self._h = self._h, None
        lib().rcanvas_server_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Canvas:
    """A canvas on a server, served at "/" (name "") or "/c/NAME".

    title; width/height: the initial logical size (CSS pixels) until a viewer reports its own; pixel_ratio;
    update_mode: "manual", "ondemand" (default), "continuous" or "fastest"; max_fps (0 = no cap);
    max_in_flight; codec: "jpeg" (default), "png", "webp", "h264", "vp8", "vp9", "av1", "auto"; quality 1-100;
    subsampling "auto" (default: 4:4:4 where 4:2:0 would blur thin coloured detail), "420" or "444"; refine_ms. Raises RcanvasError (RCANVAS_EEXIST, RCANVAS_ENAME, RCANVAS_EINVAL).
    """

    def __init__(self, server, name="", *, title="rcanvas", width=640, height=480, pixel_ratio=1.0,
                 update_mode="ondemand", max_fps=60.0, max_in_flight=2, codec="jpeg", quality=85,
                 subsampling="auto", refine_ms=300):
        if update_mode not in UPDATE_MODES:
            raise ValueError(f"update_mode must be one of {sorted(UPDATE_MODES)}, not {update_mode!r}")
        if codec not in CODECS:
            raise ValueError(f"codec must be one of {sorted(CODECS)}, not {codec!r}")
        cfg = L.CanvasConfig()
        lib().rcanvas_canvas_config_init(ctypes.byref(cfg))
        cfg.name, cfg.title = _b(name or ""), _b(title)
        cfg.width, cfg.height, cfg.pixel_ratio = int(width), int(height), float(pixel_ratio)
        cfg.update_mode, cfg.max_fps, cfg.max_in_flight = UPDATE_MODES[update_mode], float(max_fps), int(max_in_flight)
        cfg.codec, cfg.quality, cfg.subsampling = CODECS[codec], int(quality), SUBSAMPLING[str(subsampling)]
        cfg.refine_ms = int(refine_ms)
        h = ctypes.c_void_p()
        with server._lock:
            _check(lib().rcanvas_canvas_new(server.handle, ctypes.byref(cfg), ctypes.byref(h)), "rcanvas_canvas_new")
            server._canvases.add(self)
        self._h, self._server, self.name = h, server, name or ""
        self._frame = L.Frame()
        self._event = L.Event()
        self._rgbx = None  # the conversion buffer of (H, W, 3) arrays, reused while the size stays

    # -- basics

    @property
    def handle(self):
        if self._h is None:
            raise RcanvasError(ECLOSED, "canvas closed")
        return self._h

    @property
    def closed(self):
        return self._h is None

    @property
    def url(self):
        """The page's URL with the interactive token."""
        return self._server.url(self.name)

    @property
    def view_url(self):
        """The page's URL with the view-only token."""
        return self._server.url(self.name, view_only=True)

    def set_title(self, title):
        _check(lib().rcanvas_canvas_set_title(self.handle, _b(title)), "rcanvas_canvas_set_title")

    def set_cursor(self, cursor):
        """A CSS cursor keyword ("default", "pointer", "crosshair", "none", …) viewers see over the canvas."""
        if not isinstance(cursor, str):
            raise TypeError(f"cursor must be a str, not {type(cursor).__name__}")
        _check(lib().rcanvas_canvas_set_cursor(self.handle, cursor.encode()), f"set_cursor({cursor!r})")

    def set_codec(self, codec, quality=85, subsampling="auto"):
        if codec not in CODECS:
            raise ValueError(f"codec must be one of {sorted(CODECS)}, not {codec!r}")
        _check(lib().rcanvas_canvas_set_codec(self.handle, CODECS[codec], int(quality), SUBSAMPLING[str(subsampling)]),
               "rcanvas_canvas_set_codec")

    def set_option(self, option, value):
        """rcanvas_canvas_set_option: option is a name of OPTIONS ("rate_adapt", "max_in_flight", …) or the
        RCANVAS_OPT_* number (include/rcanvas.h has units and ranges); value an int."""
        opt = OPTIONS[option] if isinstance(option, str) else int(option)
        _check(lib().rcanvas_canvas_set_option(self.handle, opt, int(value)), f"set_option({option!r}, {value!r})")

    def get_option(self, option):
        opt = OPTIONS[option] if isinstance(option, str) else int(option)
        v = ctypes.c_int()
        _check(lib().rcanvas_canvas_get_option(self.handle, opt, ctypes.byref(v)), f"get_option({option!r})")
        return v.value

    def get_size(self):
        """{"width", "height" (logical, CSS pixels), "pixel_ratio", "physical_width", "physical_height"}."""
        s = L.Size()
        lib().rcanvas_canvas_get_size(self.handle, ctypes.byref(s))
        return {"width": s.width, "height": s.height, "pixel_ratio": s.pixel_ratio,
                "physical_width": s.physical_width, "physical_height": s.physical_height}

    @property
    def physical_size(self):
        """(width, height) in physical pixels: the size to render at."""
        s = self.get_size()
        return s["physical_width"], s["physical_height"]

    @property
    def viewer_count(self):
        return _check(lib().rcanvas_canvas_viewer_count(self.handle), "rcanvas_canvas_viewer_count")

    # -- frames

    def present(self, array, format=None):
        """Hands a frame to rcanvas; the pixels are copied before it returns (GIL released meanwhile).

        array: numpy uint8 (H, W, 4) (format "rgba" default, "bgra" or "rgbx"; alpha is ignored) or (H, W, 3)
        ("rgb"). Zero-copy up to rcanvas' own copy: (H, W, 4) arrays whose pixels are 4 consecutive bytes
        (strides[1] == 4, strides[2] == 1) and whose rows are ≥ 4·W bytes apart (strides[0], any pitch: a
        C-contiguous array, or a crop of one such as big[y0:y1, x0:x1]). Other (H, W, 4) layouts raise
        ValueError (np.ascontiguousarray makes a fitting copy). (H, W, 3) arrays of any strides are converted
        into a reused RGBX buffer first (one more copy). Raises TypeError (not uint8), ValueError (shape,
        layout, format), RcanvasError (e.g. RCANVAS_EFRAME_SIZE above the server's max_frame_dim)."""
        a = array if isinstance(array, np.ndarray) else np.asarray(array)
        if a.dtype != np.uint8:
            raise TypeError(f"present() takes a uint8 array, not {a.dtype}")
        if a.ndim != 3 or a.shape[2] not in (3, 4):
            raise ValueError(f"present() takes an array of shape (H, W, 4) or (H, W, 3), not {a.shape}")
        h, w, ch = a.shape
        if h == 0 or w == 0:
            raise ValueError(f"present() takes a non-empty array, not {a.shape}")
        if ch == 4:
            fmt = "rgba" if format is None else format
            if fmt not in FORMATS:
                raise ValueError(f"format of a (H, W, 4) array must be one of {sorted(FORMATS)}, not {fmt!r}")
            pitch = a.strides[0] if h > 1 else w * 4
            if a.strides[2] != 1 or a.strides[1] != 4 or pitch < w * 4:
                raise ValueError(
                    f"present() needs the 4 bytes of a pixel together and rows at least 4*W bytes apart "
                    f"(strides (≥{4 * w}, 4, 1)), not strides {a.strides}: pass np.ascontiguousarray(array)")
            src = a
        else:
            if format not in (None, "rgb"):
                raise ValueError(f"format of a (H, W, 3) array must be 'rgb', not {format!r}")
            if self._rgbx is None or self._rgbx.shape[:2] != (h, w):
                self._rgbx = np.empty((h, w, 4), np.uint8)
                self._rgbx[..., 3] = 255
            self._rgbx[..., :3] = a
            src, fmt, pitch = self._rgbx, "rgbx", w * 4
        f = self._frame
        f.pixels = src.ctypes.data
        f.width, f.height, f.pitch, f.format, f.timestamp_us = w, h, pitch, FORMATS[fmt], 0
        _check(lib().rcanvas_present(self.handle, ctypes.byref(f)), "rcanvas_present")

    # -- scheduling and events

    def wait(self, timeout=None):
        """Blocks (GIL released) until a draw is due or events are queued, at most timeout seconds (None: no
        limit; 0: just check). Returns a mask of WAKE_DRAW | WAKE_EVENTS, 0 on timeout. Raises RcanvasError
        (RCANVAS_ECLOSED) once the server is stopping. One thread at a time per canvas.

        Signals: it waits in slices of at most WAIT_SLICE_S (0.1 s) of rcanvas_wait(), so that Python's signal
        handlers run between them: in the main thread, Ctrl-C raises KeyboardInterrupt out of wait() within
        0.1 s, viewers or not (catch it around the loop to exit quietly, as the README's loop does). A handler
        that does not raise (one that only sets a flag) does not end the wait: pass a timeout to look at the
        flag. An interrupt that lands just as a slice returned a draw loses that draw (it is consumed in C);
        an app that catches KeyboardInterrupt and goes on waiting should call request_draw() in ondemand mode."""
        if timeout is not None and timeout <= 0:
            return _check(lib().rcanvas_wait(self.handle, 0), "rcanvas_wait")
        fn = lib().rcanvas_wait
        deadline = None if timeout is None else time.monotonic() + timeout
        slice_ms = int(WAIT_SLICE_S * 1000)
        while True:
            ms = slice_ms
            if deadline is not None:
                ms = min(ms, max(0, int(round((deadline - time.monotonic()) * 1000))))
            r = _check(fn(self.handle, ms), "rcanvas_wait")  # the handle anew: closed between slices → ECLOSED
            # Back in Python: a pending signal's handler runs here (KeyboardInterrupt for Ctrl-C).
            if r or (deadline is not None and time.monotonic() >= deadline):
                return r

    def request_draw(self):
        """Asks for a draw (ondemand mode): the next wait() returns WAKE_DRAW once a viewer can take a frame."""
        lib().rcanvas_request_draw(self.handle)

    def poll_event(self):
        """The oldest queued event as a renderview dict, or None."""
        r = _check(lib().rcanvas_poll_event(self.handle, ctypes.byref(self._event)), "rcanvas_poll_event")
        return event_to_dict(self._event) if r == 1 else None

    def poll_events(self):
        """Every queued event, oldest first (renderview dicts)."""
        out = []
        while (ev := self.poll_event()) is not None:
            out.append(ev)
        return out

    # -- lifetime

    def _detach(self):
        self._h = None

    def close(self):
        """Closes its viewers (1001) and frees the canvas. No other thread may be inside a call on it."""
        with self._server._lock:
            h, self._h = self._h, None
            if h is not None:
                self._server._canvases.discard(self)
        if h is not None:
            lib().rcanvas_canvas_free(h)

    # -- notebooks

    def _repr_html_(self):
        # Behind a proxy (base_path set) the iframe asks the notebook's own origin: a URL without host.
        return iframe_html(self._server.url(self.name, relative=bool(self._server.base_path)), self.get_size())

    def _repr_mimebundle_(self, include=None, exclude=None):
        html = self._repr_html_()
        return {"text/html": html, "text/plain": f"<rcanvas.Canvas {self.url}>"}


def iframe_html(url, size):
    """An <iframe> of url sized to the canvas's logical size (used by _repr_html_ in notebooks)."""
    import html as _html
    w, h = int(round(size["width"])), int(round(size["height"]))
    return (f'<iframe src="{_html.escape(url, quote=True)}" width="{w}" height="{h}" '
            f'style="border:0;width:{w}px;height:{h}px" allow="fullscreen"></iframe>')


def event_to_dict(ev):
    """An rcanvas_event as a renderview/rendercanvas event dict ("event_type", "time_stamp", …)."""
    t = EVENT_TYPES.get(ev.type, "unknown")
    d = {"event_type": t, "time_stamp": ev.time_stamp, "viewer_id": ev.viewer_id}
    mods = tuple(name for bit, name in _MODIFIERS if ev.modifiers & bit)
    if t.startswith("pointer_") or t in ("double_click", "wheel"):
        d["x"], d["y"] = ev.x, ev.y
        d["buttons"] = tuple(b for b in range(32) if ev.buttons & (1 << b))
        d["modifiers"] = mods
        if t == "wheel":
            d["dx"], d["dy"] = ev.dx, ev.dy
        else:
            d["button"] = ev.button
            if t != "double_click":
                d["ntouches"] = ev.ntouches
                d["touches"] = {ev.touches[i].id: {"x": ev.touches[i].x, "y": ev.touches[i].y,
                                                   "pressure": ev.touches[i].pressure}
                                for i in range(min(ev.ntouches, L.MAX_TOUCHES))}
    elif t in ("key_down", "key_up"):
        d["key"] = ev.key.decode(errors="replace")
        d["modifiers"] = mods
    elif t == "char":
        d["data"] = ev.data.decode(errors="replace")
        d["modifiers"] = mods
    elif t == "resize":
        d["width"], d["height"], d["pixel_ratio"] = ev.width, ev.height, ev.pixel_ratio
    return d
