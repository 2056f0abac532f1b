# SPDX-License-Identifier: MIT
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
API is small (plain structs, ints and strings, no Python callbacks). ctypes releases the GIL around every
foreign call (ctypes.CDLL, unlike ctypes.PyDLL), so while rcanvas copies a frame, waits, or frees a server,
other Python threads run.

No rcanvas thread ever waits for the GIL: a ctypes callback takes it, so a Python log callback would stall the
network thread (every page, upgrade and frame) for as long as the app holds the GIL, e.g. in a long C call of
numpy or a renderer's. rcanvas' log lines therefore go into a C log queue (rcanvas_log_queue_fn, which only
copies the line) and a daemon thread of this module passes them to the Python logger "rcanvas"; when it cannot
keep up, lines are dropped and the count is logged with the next one.

Threading: every call on a Server or Canvas may come from any thread. present() from several threads at once
is serialized (each call has its own frame description; the pixels are copied before it returns); wait() and
poll_event() from several threads are safe (each wake or event goes to one of them). Canvas.close() (and
Server.close()) may be called while another thread is inside a call on the canvas: it waits for that call to
return (wait() runs in slices of WAIT_SLICE_S and then raises RCANVAS_ECLOSED). Errors raise RcanvasError
carrying the C error's name (e.g. "RCANVAS_EADDRINUSE"); bad arrays raise TypeError (dtype) or ValueError (shape,
layout), and arguments that C would silently change (a NUL in a string, an integer outside its C field's range)
raise ValueError, before anything reaches the library.

Notebooks: rcanvas.get_server() is one server per process, configured by RCANVAS_* variables, on a port and
with tokens that stay the same across restarts of a Jupyter kernel; server.canvas(name, replace=True) lets a
cell run again replace its canvas; a Canvas is displayed as an iframe (docs/python.md, "Notebooks").

The library is found by rcanvas._lib.load(): $RCANVAS_LIBRARY, else the copy inside this package
(rcanvas/librcanvas.so, built by `pip install ./python`), else ../build/librcanvas.so beside this package (the source
tree), else the system's librcanvas (ctypes.util.find_library). rcanvas.lib()._rcanvas_path is the path loaded.
"""

import atexit
import contextlib
import ctypes
import logging
import os
import socket
import threading
import time
import weakref

import numpy as np

from . import _lib as L

__all__ = ["Server", "Canvas", "RcanvasError", "LibraryNotFound", "WAKE_DRAW", "WAKE_EVENTS", "WAKE_PIXELS", "lib",
           "get_server"]
__version__ = "0.1.0"

logger = logging.getLogger("rcanvas")
LibraryNotFound = L.LibraryNotFound  # an OSError: librcanvas.so is nowhere load() looks (the message says where)
_loaded = None  # the CDLL (not named _lib: that is the submodule rcanvas._lib)
_lib_lock = threading.Lock()


def lib():
    """The loaded librcanvas (ctypes.CDLL), loaded at the first call; its _rcanvas_path is the path loaded.
    Raises LibraryNotFound when it is nowhere rcanvas._lib.load() looks."""
    global _loaded
    with _lib_lock:
        if _loaded is None:
            _loaded = L.load()
        return _loaded


WAKE_DRAW = 1
WAKE_EVENTS = 2
WAKE_PIXELS = 4  # the newest frame came encoded (present_encoded) and rcanvas needs its pixels: present_pixels_address
ENOTUSED, ESTALE = -19, -21
WAIT_SLICE_S = 0.1  # the longest a wait() stays in C: Python's signal handlers run, a close() elsewhere is seen

UPDATE_MODES = {"manual": 0, "ondemand": 1, "continuous": 2, "fastest": 3}
# The names of include/rcanvas.h's tables (RCANVAS_CODECS, RCANVAS_OPTIONS, RCANVAS_EVENTS), here so that the
# package imports without its library; tests/python/test_binding.py fails when one drifts from the library's.
CODECS = {"auto": 0, "jpeg": 1, "png": 2, "h264": 3, "vp8": 4, "vp9": 5, "av1": 6, "webp": 7}
SUBSAMPLING = {"420": 0, "444": 1, "auto": 2}
# rcanvas_option: names for Canvas.set_option/get_option.
OPTIONS = {"codec": 1, "quality": 2, "subsampling": 3, "refine_ms": 4, "max_in_flight": 5, "update_mode": 6,
           "max_fps": 7, "bitrate_kbps": 8, "keyframe_interval": 9, "encoder_threads": 10, "refine_codec": 11,
           "rate_adapt": 12, "live_quality": 13}
FORMATS = {"rgba": 1, "bgra": 2, "rgbx": 3}


def encoders():
    """The names of this build's encoders a canvas can be given (codec= or set_codec): the codecs' own ("jpeg",
    "h264", …) and others such as "h264-gpu" (rcanvas_encoder_name)."""
    out, i = [], 0
    while (name := lib().rcanvas_encoder_name(i)) is not None:
        out.append(name.decode())
        i += 1
    return out


def _encoder_of(codec):
    """False for a codec name (CODECS), True for another encoder's name; else ValueError naming both lists."""
    if codec in CODECS:
        return False
    if isinstance(codec, str) and codec in encoders():
        return True
    raise ValueError(f"codec must be one of {sorted(CODECS)} or an encoder of encoders(), not {codec!r}")


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


def _b(s, what="a string argument"):
    """s as the bytes of a C string, or None. A NUL would end the C string early (a token or a name cut short,
    silently), so it is refused; the message names the argument, never its value (it may be a token)."""
    if s is None:
        return None
    b = str(s).encode()
    if b"\0" in b:
        raise ValueError(f"{what} contains a NUL character, which C would take for its end")
    return b


def _strv(items, what):
    items = [_b(x, f"an item of {what}") for x in (items or [])]
    return (L.c_char_p * max(1, len(items)))(*items), len(items)


def _int(v, what, lo, hi):
    """int(v), refused with ValueError outside lo..hi: ctypes would store it modulo the field's width
    (port=2**32 + 18094 listened on 18094)."""
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{what} must be an integer, not {v!r}") from None
    if not lo <= n <= hi:
        raise ValueError(f"{what} must be {lo}..{hi}, not {n}")
    return n


# ---- log lines: from rcanvas' threads through a C queue to the Python logger, never taking the GIL there ----

_logq = None          # the process's rcanvas_log_queue (never freed: a server of any thread may still log into it)
_logq_lock = threading.Lock()
LOG_QUEUE_LINES = 4096  # lines held while the Python side is busy; beyond, dropped and counted


def _log_queue():
    """The process-wide log queue and its reader thread, made at the first call. Returns (log_fn, user) for a
    server config: rcanvas_log_queue_fn itself (a C function pointer: calling it takes no GIL) and the queue."""
    global _logq
    with _logq_lock:
        if _logq is None:
            q = ctypes.c_void_p()
            _check(lib().rcanvas_log_queue_new(LOG_QUEUE_LINES, ctypes.byref(q)), "rcanvas_log_queue_new")
            _logq = q
            threading.Thread(target=_log_reader, args=(q,), name="rcanvas-log", daemon=True).start()
        fn = L.LOG_FN(ctypes.cast(lib().rcanvas_log_queue_fn, ctypes.c_void_p).value)
        return fn, _logq


def _log_reader(q):
    # Pops with the GIL released (a CDLL call); a timeout, so that interpreter shutdown is not held up by it.
    buf = ctypes.create_string_buffer(1024)
    level, dropped = ctypes.c_int(), L.c_uint64()
    pop = lib().rcanvas_log_queue_pop
    while True:
        r = pop(q, 500, ctypes.byref(level), buf, len(buf), ctypes.byref(dropped))
        if r < 0:
            return
        try:
            if dropped.value:
                logger.warning("%d rcanvas log lines dropped (the Python side did not keep up)", dropped.value)
            if r == 1:
                logger.log(_LOG_LEVELS.get(level.value, logging.DEBUG), "%s", buf.value.decode(errors="replace"))
        except Exception:  # a broken handler must not end the reader
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
    tls_cert/tls_key: PEM paths for https/wss. max_viewers; max_frame_dim: the largest frame side present()
    takes (None: the library's default, 8192). log_level: the most verbose rcanvas log lines passed on to the
    Python logger "rcanvas" ("error", "warn", "info", "debug"), from a thread of this module (rcanvas' own
    threads never wait for the GIL). Raises RcanvasError (e.g. RCANVAS_EADDRINUSE), ValueError for a string
    with a NUL or an integer outside its range (port 0-65535).
    Use as a context manager, or call close(); it is closed at interpreter exit in any case.
    """

    def __init__(self, host="127.0.0.1", port=0, *, token=None, view_token=None, base_path=None,
                 allowed_hosts=None, allowed_origins=None, tls_cert=None, tls_key=None, encode_threads=0,
                 max_viewers=None, max_frame_dim=None, log_level="warn"):
        if log_level not in ("error", "warn", "info", "debug"):
            raise ValueError(f"log_level must be 'error', 'warn', 'info' or 'debug', not {log_level!r}")
        cfg = L.ServerConfig()
        lib().rcanvas_server_config_init(ctypes.byref(cfg))
        self._keep = []  # the strings the config points to, alive until rcanvas_server_new copied them
        cfg.host = _b(host, "host")
        cfg.port = _int(port, "port", 0, 65535)
        cfg.token = _b(token, "token")
        cfg.view_token = _b(view_token, "view_token")
        cfg.base_path = _b(base_path, "base_path")
        if allowed_hosts:
            arr, n = _strv(allowed_hosts, "allowed_hosts")
            self._keep.append(arr)
            cfg.allowed_hosts, cfg.n_allowed_hosts = ctypes.cast(arr, ctypes.POINTER(L.c_char_p)), n
        if allowed_origins:
            arr, n = _strv(allowed_origins, "allowed_origins")
            self._keep.append(arr)
            cfg.allowed_origins, cfg.n_allowed_origins = ctypes.cast(arr, ctypes.POINTER(L.c_char_p)), n
        cfg.tls_cert, cfg.tls_key = _b(tls_cert, "tls_cert"), _b(tls_key, "tls_key")
        cfg.encode_threads = _int(encode_threads, "encode_threads", 0, L.INT_MAX)
        if max_viewers is not None:
            cfg.max_viewers = _int(max_viewers, "max_viewers", 1, L.INT_MAX)
        if max_frame_dim is not None:
            cfg.max_frame_dim = _int(max_frame_dim, "max_frame_dim", 1, L.UINT32_MAX)
        cfg.log, cfg.log_user = _log_queue()
        cfg.log_level = {"error": 0, "warn": 1, "info": 2, "debug": 3}[log_level]
        self.max_frame_dim = cfg.max_frame_dim  # present() refuses larger arrays before converting them
        h = ctypes.c_void_p()
        _check(lib().rcanvas_server_new(ctypes.byref(cfg), ctypes.byref(h)), "rcanvas_server_new")
        self._keep = None
        self._h = h
        self.base_path = base_path or ""
        self._canvases = weakref.WeakSet()
        self._by_name = {}  # name -> its Canvas, until closed (as in C: a canvas lives until freed)
        self._on_close = []  # callables run by close() (get_server's proxy registration)
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

    def session_url(self, name=None, *, view_only=False, relative=False):
        """The URL of a canvas's page by this server process's session ("…/s/R/c/NAME?session=S") instead of a
        token: for a client on another origin that keeps no cookie (the notebook widget). What such a client sends,
        reconnects included, opens nothing once this process has ended (rcanvas_server_session_url)."""
        buf = ctypes.create_string_buffer(4096)
        _check(lib().rcanvas_server_session_url(self.handle, _b(name, "name"), 1 if view_only else 0, buf, len(buf)),
               "rcanvas_server_session_url")
        url = buf.value.decode()
        if relative:
            url = "/" + url.split("://", 1)[1].split("/", 1)[1]
        return url

    def canvas(self, name="", *, replace=False, **kwargs):
        """A new Canvas on this server (see Canvas). replace=True: a canvas of this name that exists is closed
        first (its viewers get 1001 "canvas closed" and, reconnecting, find the new one at the same URL) — what
        a notebook cell that is run again wants; replace=False (default): RcanvasError RCANVAS_EEXIST then."""
        if replace:
            old = self._by_name.get(name or "")
            if old is not None:
                old.close()
        return Canvas(self, name, **kwargs)

    def close(self):
        """Closes every viewer and frees the server and its canvases (the Canvas objects become closed).
        Waits for calls on its canvases in other threads to return (wait() within WAIT_SLICE_S), then until
        rcanvas' threads have joined (typically < 50 ms). Idempotent."""
        with self._lock:
            if self._h is None:
                return
            for c in list(self._canvases):
                c._detach()  # the server frees them
            self._by_name.clear()
            h, self._h = self._h, None
            hooks, self._on_close = self._on_close, []
        lib().rcanvas_server_free(h)
        for fn in hooks:
            try:
                fn()
            except Exception:
                pass

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
    max_in_flight; codec: "jpeg" (default), "png", "webp", "h264", "vp8", "vp9", "av1", "auto", or the name of
    another encoder of this build (encoders(): "h264-gpu", H.264 in Vulkan compute shaders, openh264 where no Vulkan
    device runs it); quality 1-100;
    subsampling "auto" (default: 4:4:4 where 4:2:0 would blur thin coloured detail), "420" or "444"; refine_ms. Raises RcanvasError (RCANVAS_EEXIST, RCANVAS_ENAME, RCANVAS_EINVAL).
    """

    def __init__(self, server, name="", *, title="rcanvas", width=640, height=480, pixel_ratio=1.0,
                 update_mode="ondemand", max_fps=60.0, max_in_flight=2, codec="jpeg", quality=85,
                 subsampling="auto", refine_ms=300):
        if update_mode not in UPDATE_MODES:
            raise ValueError(f"update_mode must be one of {sorted(UPDATE_MODES)}, not {update_mode!r}")
        encoder = _encoder_of(codec)
        if str(subsampling) not in SUBSAMPLING:
            raise ValueError(f"subsampling must be one of {sorted(SUBSAMPLING)}, not {subsampling!r}")
        cfg = L.CanvasConfig()
        lib().rcanvas_canvas_config_init(ctypes.byref(cfg))
        cfg.name, cfg.title = _b(name or "", "name"), _b(title, "title")
        cfg.width, cfg.height = _int(width, "width", 0, L.UINT32_MAX), _int(height, "height", 0, L.UINT32_MAX)
        cfg.pixel_ratio = float(pixel_ratio)
        cfg.update_mode, cfg.max_fps = UPDATE_MODES[update_mode], float(max_fps)
        cfg.max_in_flight = _int(max_in_flight, "max_in_flight", L.INT_MIN, L.INT_MAX)
        cfg.codec, cfg.quality = CODECS.get(codec, 0), _int(quality, "quality", L.INT_MIN, L.INT_MAX)
        cfg.subsampling = SUBSAMPLING[str(subsampling)]
        cfg.refine_ms = _int(refine_ms, "refine_ms", L.INT_MIN, L.INT_MAX)
        h = ctypes.c_void_p()
        self._cv = threading.Condition()  # guards _h, _busy, _closing: close() waits for calls in other threads
        self._busy = {}  # thread ident -> calls of that thread inside rcanvas with the handle
        self._free_deferred = False  # close() came from inside a call of its own thread: freed when it leaves
        self._closing = False
        with server._lock:
            r = lib().rcanvas_canvas_new(server.handle, ctypes.byref(cfg), ctypes.byref(h))
            if r == -11:  # RCANVAS_EEXIST
                raise RcanvasError(r, f"a canvas named {name or ''!r} exists on this server (close it, or make the "
                                      f"new one with server.canvas({name or ''!r}, replace=True))")
            _check(r, "rcanvas_canvas_new")
            if encoder:
                r = lib().rcanvas_canvas_set_encoder(h, _b(codec, "codec"))
                if r:
                    lib().rcanvas_canvas_free(h)
                    _check(r, f"rcanvas_canvas_set_encoder({codec!r})")
            server._canvases.add(self)
            server._by_name[name or ""] = self
        self._h, self._server, self.name = h, server, name or ""
        # present() from several threads at once takes turns: the conversion buffer is one, and the C library
        # takes one present at a time per canvas (it would answer RCANVAS_EBUSY).
        self._present_lock = threading.Lock()
        self._rgbx = None  # the conversion buffer of (H, W, 3) arrays, reused while the size stays

    # -- basics

    @property
    def handle(self):
        if self._h is None:
            raise RcanvasError(ECLOSED, "canvas closed")
        return self._h

    @contextlib.contextmanager
    def _use(self):
        # The handle for one call, counted, so that close() (any thread) frees the canvas only once no call is
        # inside rcanvas with it; RCANVAS_ECLOSED once close() has begun.
        # Counted per thread: a KeyboardInterrupt can land between the count and the try below (or in the
        # finally's lock), leaving a count that no call holds; close() from that same thread then waited for it
        # for ever (test_pip_install caught `python -m rcanvas` hanging on Ctrl-C under load). A thread that calls
        # close() is in no call itself, so close() waits only for the other threads' counts.
        me = threading.get_ident()
        with self._cv:
            if self._h is None or self._closing:
                raise RcanvasError(ECLOSED, "canvas closed")
            self._busy[me] = self._busy.get(me, 0) + 1
            h = self._h
        try:
            yield h
        finally:
            with self._cv:
                n = self._busy.get(me, 0) - 1
                if n > 0:
                    self._busy[me] = n
                else:
                    self._busy.pop(me, None)
                    self._cv.notify_all()
                free_now = self._free_deferred and not self._busy
            if free_now:
                self.close()  # a close() from inside a call of this thread (a signal handler): done now

    @property
    def closed(self):
        return self._h is None or self._closing

    @property
    def url(self):
        """The page's URL with the interactive token."""
        return self._server.url(self.name)

    @property
    def view_url(self):
        """The page's URL with the view-only token."""
        return self._server.url(self.name, view_only=True)

    def set_title(self, title):
        t = _b(title, "title")
        with self._use() as h:
            _check(lib().rcanvas_canvas_set_title(h, t), "rcanvas_canvas_set_title")

    def set_cursor(self, cursor):
        """A CSS cursor keyword ("default", "pointer", "crosshair", "none", …) viewers see over the canvas."""
        if not isinstance(cursor, str):
            raise TypeError(f"cursor must be a str, not {type(cursor).__name__}")
        c = _b(cursor, "cursor")
        with self._use() as h:
            _check(lib().rcanvas_canvas_set_cursor(h, c), f"set_cursor({cursor!r})")

    def set_codec(self, codec, quality=85, subsampling="auto"):
        """codec: a name of CODECS, or of another encoder of this build (encoders())."""
        encoder = _encoder_of(codec)
        if str(subsampling) not in SUBSAMPLING:
            raise ValueError(f"subsampling must be one of {sorted(SUBSAMPLING)}, not {subsampling!r}")
        q = _int(quality, "quality", L.INT_MIN, L.INT_MAX)
        with self._use() as h:
            if not encoder:
                _check(lib().rcanvas_canvas_set_codec(h, CODECS[codec], q, SUBSAMPLING[str(subsampling)]),
                       "rcanvas_canvas_set_codec")
                return
            for opt, v in ((OPTIONS["quality"], q), (OPTIONS["subsampling"], SUBSAMPLING[str(subsampling)])):
                _check(lib().rcanvas_canvas_set_option(h, opt, v), "rcanvas_canvas_set_option")
            _check(lib().rcanvas_canvas_set_encoder(h, _b(codec, "codec")), f"rcanvas_canvas_set_encoder({codec!r})")

    @property
    def encoder(self):
        """The encoder this canvas's live frames come from ("jpeg", "h264", "h264-gpu", …; its codec's default
        where the one chosen cannot run), or None for codec "auto"."""
        with self._use() as h:
            name = lib().rcanvas_canvas_encoder(h)
        return name.decode() if name else None

    def set_option(self, option, value):
        """rcanvas_canvas_set_option: option is a name of OPTIONS ("rate_adapt", "max_in_flight", …) or the
        RCANVAS_OPT_* number (include/rcanvas.h has units and ranges); value an int."""
        opt = OPTIONS[option] if isinstance(option, str) else _int(option, "option", L.INT_MIN, L.INT_MAX)
        v = _int(value, f"the value of option {option!r}", L.INT_MIN, L.INT_MAX)
        with self._use() as h:
            _check(lib().rcanvas_canvas_set_option(h, opt, v), f"set_option({option!r}, {value!r})")

    def get_option(self, option):
        opt = OPTIONS[option] if isinstance(option, str) else _int(option, "option", L.INT_MIN, L.INT_MAX)
        v = ctypes.c_int()
        with self._use() as h:
            _check(lib().rcanvas_canvas_get_option(h, opt, ctypes.byref(v)), f"get_option({option!r})")
        return v.value

    def get_size(self):
        """{"width", "height" (logical, CSS pixels), "pixel_ratio", "physical_width", "physical_height"}."""
        s = L.Size()
        with self._use() as h:
            lib().rcanvas_canvas_get_size(h, ctypes.byref(s))
        return {"width": s.width, "height": s.height, "pixel_ratio": s.pixel_ratio,
                "physical_width": s.physical_width, "physical_height": s.physical_height}

    @property
    def physical_size(self):
        """(width, height) in physical pixels: the size to render at."""
        s = self.get_size()
        return s["physical_width"], s["physical_height"]

    @property
    def viewer_count(self):
        with self._use() as h:
            return _check(lib().rcanvas_canvas_viewer_count(h), "rcanvas_canvas_viewer_count")

    # -- frames

    def present(self, array, format=None):
        """Hands a frame to rcanvas; the pixels are copied before it returns (GIL released meanwhile).

        array: numpy uint8 (H, W, 4) (format "rgba" default, "bgra" or "rgbx"; alpha is ignored) or (H, W, 3)
        ("rgb"). Zero-copy up to rcanvas' own copy: (H, W, 4) arrays whose pixels are 4 consecutive bytes
        (strides[1] == 4, strides[2] == 1) and whose rows are ≥ 4·W bytes apart (strides[0], any pitch: a
        C-contiguous array, or a crop of one such as big[y0:y1, x0:x1]). Other (H, W, 4) layouts raise
        ValueError (np.ascontiguousarray makes a fitting copy). (H, W, 3) arrays of any strides are converted
        into a reused RGBX buffer first (one more copy). Any thread: calls from several threads at once take
        turns. Raises TypeError (not uint8), ValueError (shape, layout, format), RcanvasError (e.g.
        RCANVAS_EFRAME_SIZE above the server's max_frame_dim, checked before any conversion, or above the
        codec's limit)."""
        a = array if isinstance(array, np.ndarray) else np.asarray(array)
        if a.dtype != np.uint8:
            raise TypeError(f"present() takes a uint8 array, not {a.dtype}")
        if a.ndim != 3 or a.shape[2] not in (3, 4):
            raise ValueError(f"present() takes an array of shape (H, W, 4) or (H, W, 3), not {a.shape}")
        h, w, ch = a.shape
        if h == 0 or w == 0:
            raise ValueError(f"present() takes a non-empty array, not {a.shape}")
        maxd = self._server.max_frame_dim
        if w > maxd or h > maxd:  # before any conversion: a refused frame costs no copy and keeps no buffer
            raise RcanvasError(-3, f"present(): a {w}x{h} frame is over the server's max_frame_dim {maxd}")
        if ch == 4:
            fmt = "rgba" if format is None else format
            if fmt not in FORMATS:
                raise ValueError(f"format of a (H, W, 4) array must be one of {sorted(FORMATS)}, not {fmt!r}")
            pitch = a.strides[0] if h > 1 else w * 4
            if a.strides[2] != 1 or a.strides[1] != 4 or pitch < w * 4:
                raise ValueError(
                    f"present() needs the 4 bytes of a pixel together and rows at least 4*W bytes apart "
                    f"(strides (≥{4 * w}, 4, 1)), not strides {a.strides}: pass np.ascontiguousarray(array)")
            with self._present_lock:
                self._present(a, w, h, a.strides[0] if h > 1 else w * 4, fmt)
            return
        if format not in (None, "rgb"):
            raise ValueError(f"format of a (H, W, 3) array must be 'rgb', not {format!r}")
        with self._present_lock:
            if self._rgbx is None or self._rgbx.shape[:2] != (h, w):
                self._rgbx = None  # the old one freed before the new one is made
                self._rgbx = np.empty((h, w, 4), np.uint8)
                self._rgbx[..., 3] = 255
            self._rgbx[..., :3] = a
            try:
                self._present(self._rgbx, w, h, w * 4, "rgbx")
            except RcanvasError:
                self._rgbx = None  # e.g. over the codec's size limit: the buffer is not kept for a size refused
                raise

    def _present(self, src, w, h, pitch, fmt):
        # A frame description of this call's own (the pixels stay alive in src for the call).
        self._present_at(src.ctypes.data, w, h, pitch, fmt)

    def _present_at(self, address, w, h, pitch, fmt):
        f = L.Frame(address, w, h, pitch, FORMATS[fmt], 0)
        with self._use() as hd:
            _check(lib().rcanvas_present(hd, ctypes.byref(f)), "rcanvas_present")

    def present_address(self, address, width, height, pitch, format="rgba"):
        """Hands rcanvas a frame at a raw memory address: `height` rows of `pitch` bytes (the last row needs only
        4·width), 4 bytes a pixel in `format` ("rgba", "bgra", "rgbx"). rcanvas copies the pixels before it returns,
        so the memory need only stay valid for the call: a mapped GPU readback buffer (wgpu's bytes_per_row is a
        multiple of 256, passed here as the pitch, so nothing is repacked) can be unmapped right after. Nothing
        checks that the address is readable: a wrong one crashes the process, which is why present() (numpy arrays,
        whose memory it knows) is the method for everything else. Raises ValueError (size, pitch, format, a zero
        address), RcanvasError as present()."""
        address = _int(address, "address", 0, 2**64 - 1)
        w = _int(width, "width", 0, L.UINT32_MAX)
        h = _int(height, "height", 0, L.UINT32_MAX)
        pitch = _int(pitch, "pitch", 0, 2**63 - 1)
        if not address:
            raise ValueError("present_address() needs a non-zero address")
        if w == 0 or h == 0:
            raise ValueError(f"present_address() takes a non-empty frame, not {w}x{h}")
        if pitch < 4 * w:
            raise ValueError(f"pitch must be at least 4*width ({4 * w}), not {pitch}")
        if format not in FORMATS:
            raise ValueError(f"format must be one of {sorted(FORMATS)}, not {format!r}")
        maxd = self._server.max_frame_dim
        if w > maxd or h > maxd:
            raise RcanvasError(-3, f"present_address(): a {w}x{h} frame is over the server's max_frame_dim {maxd}")
        with self._present_lock:
            self._present_at(address, w, h, pitch, format)

    def present_encoded(self, data, width, height, quality, encoder="jpeg-wgpu"):
        """Hands rcanvas a frame the app encoded itself: `data` (bytes or any buffer) one complete baseline JPEG of
        width × height, coded at `quality` (1-100); `encoder` the name viewers are told ("jpeg-wgpu", or None for
        "jpeg-app"). The bytes are copied before it returns. Returns True when rcanvas sends them as they are, False
        when it cannot (the canvas is not JPEG, a viewer needs another codec, the rate adaptation asks for a lower
        quality than `quality` — see live_quality — or a smaller frame, or the frame is small enough to go
        lossless): then present the same frame's pixels (present / present_address) instead. After a frame was
        taken, wait() returns WAKE_PIXELS once when rcanvas needs its pixels (the lossless refinement of a still
        picture): hand them over with present_pixels_address. Raises ValueError (sizes, quality), RcanvasError
        (RCANVAS_EDATA: not a baseline JPEG of that size; RCANVAS_EINVAL: an unknown encoder name; as present())."""
        w = _int(width, "width", 1, L.UINT32_MAX)
        h = _int(height, "height", 1, L.UINT32_MAX)
        q = _int(quality, "quality", 1, 100)
        buf = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1).view(np.uint8)
        if buf.size < 4:
            raise ValueError(f"present_encoded() needs a whole JPEG, not {buf.size} bytes")
        f = L.EncodedFrame(buf.ctypes.data, buf.size, w, h, CODECS["jpeg"], q, _b(encoder, "encoder"))
        with self._present_lock, self._use() as hd:
            r = lib().rcanvas_present_encoded(hd, ctypes.byref(f))
        if r == ENOTUSED:
            return False
        _check(r, "rcanvas_present_encoded")
        return True

    def present_pixels_address(self, address, width, height, pitch, format="rgba"):
        """The pixels of the newest frame, which came through present_encoded, after wait() returned WAKE_PIXELS:
        arguments as present_address (copied before it returns). Returns True, or False when the newest frame is
        another one by now (a newer frame came, or it has its pixels): nothing to do. Raises as present_address."""
        address = _int(address, "address", 1, 2**64 - 1)
        w = _int(width, "width", 1, L.UINT32_MAX)
        h = _int(height, "height", 1, L.UINT32_MAX)
        pitch = _int(pitch, "pitch", 0, 2**63 - 1)
        if pitch < 4 * w:
            raise ValueError(f"pitch must be at least 4*width ({4 * w}), not {pitch}")
        if format not in FORMATS:
            raise ValueError(f"format must be one of {sorted(FORMATS)}, not {format!r}")
        f = L.Frame(address, w, h, pitch, FORMATS[format], 0)
        with self._present_lock, self._use() as hd:
            r = lib().rcanvas_present_pixels(hd, ctypes.byref(f))
        if r == ESTALE:
            return False
        _check(r, "rcanvas_present_pixels")
        return True

    @property
    def live_quality(self):
        """The JPEG quality rcanvas codes this canvas's next live frame at (its rate adaptation's, at most the
        configured quality), or 0 while it shrinks or caps the frames or its viewers use another codec: the quality
        an app that encodes its own frames (present_encoded) should code at."""
        return self.get_option("live_quality")

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
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
        with self._use() as h:
            while True:  # in slices, so that a close() in another thread is seen within WAIT_SLICE_S
                left = WAIT_SLICE_S if deadline is None else min(WAIT_SLICE_S, max(0.0, deadline - time.monotonic()))
                r = _check(lib().rcanvas_wait(h, int(round(left * 1000))), "rcanvas_wait")
                if r or (deadline is not None and time.monotonic() >= deadline):
                    return r
                if self._closing:
                    raise RcanvasError(ECLOSED, "canvas closed")

    def request_draw(self):
        """Asks for a draw (ondemand mode): the next wait() returns WAKE_DRAW once a viewer can take a frame."""
        with self._use() as h:
            lib().rcanvas_request_draw(h)

    def poll_event(self):
        """The oldest queued event as a renderview dict, or None."""
        ev = L.Event()  # this call's own: several threads may poll
        with self._use() as h:
            r = _check(lib().rcanvas_poll_event(h, ctypes.byref(ev)), "rcanvas_poll_event")
        return event_to_dict(ev) if r == 1 else None

    def poll_events(self):
        """Every queued event, oldest first (renderview dicts)."""
        out = []
        while (ev := self.poll_event()) is not None:
            out.append(ev)
        return out

    # -- lifetime

    def _quiesce(self):
        # Refuses new calls and waits for those under way in other threads (wait() leaves within WAIT_SLICE_S);
        # the calling thread's own count, if an interrupt left one, is no call under way (_use).
        me = threading.get_ident()
        with self._cv:
            self._closing = True
            while any(t != me for t in self._busy):
                self._cv.wait(WAIT_SLICE_S)  # bounded: a notify an interrupt cut off is not waited for
            return me in self._busy

    def _detach(self):
        # The server is being freed (its lock held): it frees the canvas.
        self._quiesce()
        self._h = None

    def close(self):
        """Closes its viewers (1001 "canvas closed") and frees the canvas. Any thread: calls on it in other
        threads return first (wait() within WAIT_SLICE_S, raising RCANVAS_ECLOSED) and later calls raise
        RCANVAS_ECLOSED. Idempotent. Called from inside a call of the same thread (a signal handler that runs
        during wait()), the canvas is closed to new calls now and freed when that call returns; an interrupt that
        left a call's count behind (_use) leaves the canvas to the server's close() then."""
        if self._quiesce():
            self._free_deferred = True
            return
        with self._server._lock:
            h, self._h = self._h, None
            if h is not None:
                self._server._canvases.discard(self)
                if self._server._by_name.get(self.name) is self:
                    del self._server._by_name[self.name]
                lib().rcanvas_canvas_free(h)  # under the lock: the server cannot be freed meanwhile

    # -- notebooks

    @property
    def display_url(self):
        """The URL a notebook's iframe and link use: behind a proxy (the server has a base_path: rcanvas.jupyter,
        jupyter-server-proxy) a path on the notebook's own origin ("/rcanvas/20417/c/NAME?token=…"), else url."""
        return self._server.url(self.name, relative=bool(self._server.base_path))

    def _repr_html_(self):
        if self.closed:
            return "<div>rcanvas: this canvas is closed</div>"
        return iframe_html(self.display_url, self.get_size())

    def _repr_mimebundle_(self, include=None, exclude=None):
        if self.closed:
            return {"text/plain": "<rcanvas.Canvas (closed)>"}
        bundle = _widget_bundle(self)
        if bundle is not None:
            return bundle
        return {"text/html": self._repr_html_(), "text/plain": f"<rcanvas.Canvas {self.url}>"}


def _widget_bundle(canvas):
    # In a kernel with anywidget the canvas shows as rcanvas.widget's CanvasWidget, which needs no port reachable
    # from the browser (it falls back to the widget's comm); without anywidget, the iframe as before.
    try:
        from . import widget
        return widget.mimebundle_for(canvas)
    except Exception as e:  # no anywidget (ImportError), or a widget that cannot be made: the iframe still shows
        if not isinstance(e, ImportError):
            import logging
            logging.getLogger("rcanvas").warning("rcanvas: the notebook widget failed (%s); showing the iframe", e)
        return None


def _notebook_origins():
    # The origins of this user's local Jupyter servers, so that the widget's page may open the WebSocket straight.
    try:
        from . import widget
    except Exception:  # no anywidget: no widget page to let in
        return []
    return widget.local_notebook_origins()


_shared = None
_shared_lock = threading.Lock()


def _env_port(name):
    v = os.environ.get(name, "").strip()
    if not v:
        return None
    if not v.isdigit() or int(v) > 65535:
        raise ValueError(f"{name} must be a port number 0-65535, not {v!r}")
    return int(v)


def _port_taken(host, port):
    # Whether a socket listens on host:port now (bound with SO_REUSEADDR as libwebsockets binds, so a port
    # that only has connections in TIME_WAIT, as after a kernel restart, counts as free).
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def _free_port(host):
    # A port free now (bound and released), for a server whose base_path must name its port before it binds.
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def get_server():
    """The process's shared rcanvas.Server (made at the first call; rcanvas.rendercanvas' canvases use it too),
    configured from the environment:

    RCANVAS_HOST (127.0.0.1), RCANVAS_PORT (unset: in a Jupyter kernel a port derived from the kernel's
    connection file, 20000-29999, the same after a kernel restart, the next one if it is taken; elsewhere any
    free port. Set: that port or RcanvasError RCANVAS_EADDRINUSE), RCANVAS_TOKEN / RCANVAS_VIEW_TOKEN (unset: in
    a kernel derived from its secret key, so the same after a restart; elsewhere random), RCANVAS_BASE_PATH,
    RCANVAS_ALLOWED_HOSTS / RCANVAS_ALLOWED_ORIGINS (comma-separated), RCANVAS_JUPYTER_PROXY (set by the
    notebook server extension rcanvas.jupyter for its kernels: the server's base path is then that prefix and
    its port, "/rcanvas/PORT", so that notebooks show the canvas through the notebook server's own port;
    0 = not). docs/python.md, "Notebooks"."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._h is None:
            _shared = _make_shared_server()
        return _shared


def _make_shared_server():
    from . import _kernel

    host = os.environ.get("RCANVAS_HOST", "127.0.0.1")
    pinned = _env_port("RCANVAS_PORT")
    base_path = os.environ.get("RCANVAS_BASE_PATH") or None
    proxy = None if base_path else _kernel.proxy_prefix()
    ident = _kernel.kernel_identity()
    tokens = _kernel.kernel_tokens(*ident) if ident else None
    token = os.environ.get("RCANVAS_TOKEN") or (tokens[0] if tokens else None)
    view_token = os.environ.get("RCANVAS_VIEW_TOKEN") or (tokens[1] if tokens else None)
    if pinned is not None:
        ports = [pinned]
    elif ident and ident[0]:
        ports = [_kernel.kernel_port(ident[0], i) for i in range(_kernel.PORT_TRIES)] + [0]
    else:
        ports = [0]
    kw = dict(token=token, view_token=view_token, allowed_hosts=_list_env("RCANVAS_ALLOWED_HOSTS"),
              allowed_origins=(_list_env("RCANVAS_ALLOWED_ORIGINS") or []) + (_notebook_origins() if ident else []) or None)
    last = None
    for port in ports:
        if port and pinned is None and _port_taken(host, port):
            continue  # a kernel's port taken: the next, quietly (rcanvas would log a warning for each)
        for _ in range(3 if port == 0 and proxy else 1):
            p = _free_port(host) if port == 0 and proxy else port
            try:
                server = Server(host, p, base_path=base_path or (f"{proxy}/{p}" if proxy else None), **kw)
            except RcanvasError as e:
                if e.name != "RCANVAS_EADDRINUSE":
                    raise
                if pinned is not None:
                    raise RcanvasError(e.code, f"RCANVAS_PORT={pinned} on {host} is taken (another kernel or "
                                               f"program listens there): set another port, or unset it") from None
                last = e
                continue
            if proxy:
                try:
                    reg = _kernel.register_port(server.port)
                except BaseException:
                    server.close()  # an unsafe ports folder (raised with its reason): no server left listening
                    raise
                server._on_close.append(lambda: _kernel.unregister_port(reg))
            return server
    raise last or RcanvasError(-17, f"no free port on {host}")


def _list_env(name):
    return [x.strip() for x in os.environ.get(name, "").split(",") if x.strip()] or None


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
