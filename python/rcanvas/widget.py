# SPDX-License-Identifier: MIT
"""rcanvas in notebooks as a widget (anywidget): no open port and no server extension needed.

    import rcanvas
    canvas = rcanvas.get_server().canvas("plot", width=640, height=400, replace=True)
    canvas                       # in a kernel with anywidget: a CanvasWidget (else the iframe)

The front end (widget.js, bundled from client/ by bundle_widget.py) connects straight to the kernel's rcanvas
WebSocket when the browser reaches it (a probe of 1.5 s), else it speaks the same protocol over the widget's comm:
each WebSocket message is a buffer (or a text) of a custom message, and this module relays them to the kernel's
rcanvas server as a viewer of its own (a WebSocket client in a thread per view: the kernel's main thread stays
free). Acks, input events, resizes and visibility go back the same way, so rcanvas' flow control, damage, codecs
and link adaptation work on either way. docs/python.md, "Notebooks".

Limits of the comm way: messages to the front end are capped at RCANVAS_WIDGET_MAX_MSG_RATE a second for the
whole kernel (default 120; jupyter_server drops iopub messages past 1000/s averaged over 3 s and says "IOPub message
rate exceeded"), the tiles of a frame and what else waits go as one message (up to 4 MiB of buffers); past the cap
the relay waits, the server gets no acks meanwhile and sends fewer frames (nothing is dropped). What the front end
sends (acks, input) reaches the kernel on its shell channel: while a cell runs, it waits for the cell to end.
RCANVAS_WIDGET=0: canvases show as the iframe; RCANVAS_WIDGET_DIRECT=0: the comm way only (=1: direct only).
"""

import base64
import json
import os
import select
import socket
import struct
import threading
import time
import weakref

import anywidget
import traitlets

_HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BATCH_BYTES = 4 << 20        # buffers of one comm message (tornado refuses 10 MiB from a browser; keep well off)
_ESM = None


def _load_esm():
    # In a source tree the bundle is made from its client/ (so that the widget runs the client beside it);
    # an installed package has only the widget.js it was built with.
    global _ESM
    if _ESM is None:
        if os.path.exists(os.path.join(_HERE, "..", "..", "client", "view.js")):
            try:
                from . import bundle_widget
                _ESM = bundle_widget.bundle()
            except (OSError, SystemExit):
                _ESM = None
        if _ESM is None:
            with open(os.path.join(_HERE, "widget.js"), encoding="utf-8") as f:
                _ESM = f.read()
    return _ESM


class _Rate:
    """A token bucket shared by every relay of the process: comm messages to the front end per second."""

    def __init__(self, per_s):
        self.per_s = max(1.0, float(per_s))
        self.tokens = self.per_s / 4
        self.t = time.monotonic()
        self.lock = threading.Lock()
        self.waits = 0           # times a relay had to wait for the cap (tests, stats)

    def take(self):
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.per_s / 4, self.tokens + (now - self.t) * self.per_s)
                self.t = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.per_s
                self.waits += 1
            time.sleep(wait)


RATE = _Rate(os.environ.get("RCANVAS_WIDGET_MAX_MSG_RATE") or 120)


class _WS:
    """A small RFC 6455 client (no extensions): the relay's viewer connection to the local rcanvas server."""

    def __init__(self, host, port, path, timeout=5):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        hp = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        req = (f"GET {path} HTTP/1.1\r\nHost: {hp}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: rcanvas.v1\r\n\r\n")
        self.sock.sendall(req.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError(0)
            self.buf += chunk
            if len(self.buf) > 65536:
                raise ConnectionError(0)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        parts = head.split(b"\r\n", 1)[0].split()
        self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        if self.status != 101:
            self.sock.close()
            raise ConnectionError(self.status)
        self.sock.settimeout(None)
        self.wlock = threading.Lock()

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def pending(self):
        """Whether a message may be read without waiting (bytes buffered or readable on the socket)."""
        if self.buf:
            return True
        r, _, _ = select.select([self.sock], [], [], 0)
        return bool(r)

    def recv(self):
        """The next message, str or bytes; ("close", code, reason) on a close frame. Answers pings."""
        data, kind = b"", None
        while True:
            b0, b1 = self._read(2)
            op, n = b0 & 15, b1 & 127
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            if b1 & 0x80:
                raise EOFError  # a server never masks
            payload = self._read(n)
            if op == 8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                return ("close", code, payload[2:].decode("utf-8", "replace"))
            if op == 9:
                self.send(payload, opcode=10)
                continue
            if op == 10:
                continue
            if op in (1, 2):
                kind = op
            data += payload
            if b0 & 0x80:
                return data.decode() if kind == 1 else data

    def send(self, payload, opcode=None):
        if opcode is None:
            opcode = 1 if isinstance(payload, str) else 2
        if isinstance(payload, str):
            payload = payload.encode()
        n = len(payload)
        mask = os.urandom(4)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        import numpy as np  # a dependency of rcanvas: masking at C speed
        m = np.frombuffer(mask * (n // 4 + 1), np.uint8)[:n]
        masked = (np.frombuffer(payload, np.uint8) ^ m).tobytes()
        with self.wlock:
            self.sock.sendall(head + mask + masked)

    def close(self, code=1000, reason=""):
        try:
            self.send(struct.pack(">H", code) + reason.encode()[:100], opcode=8)
        except OSError:
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _Relay:
    """One front-end view's WebSocket carried over the comm: a viewer of the local server, read in a thread."""

    def __init__(self, widget, sid, path):
        self.widget, self.sid, self.path = widget, sid, path
        self.ws = None
        self.closed = False
        self.thread = threading.Thread(target=self._run, name=f"rcanvas-widget-{sid}", daemon=True)
        self.thread.start()

    def _send(self, content, buffers=None):
        w = self.widget()
        if w is not None and not self.closed:
            RATE.take()
            w.send(dict(content, sid=self.sid), buffers=buffers)

    def _run(self):
        w = self.widget()
        if w is None:
            return
        host, port = w._host, w._port
        del w
        try:
            self.ws = _WS(host, port, self.path)
        except (OSError, ConnectionError) as e:
            status = e.args[0] if isinstance(e, ConnectionError) and e.args and isinstance(e.args[0], int) else 0
            self._send({"op": "close", "code": 1006, "reason": "", "status": status})
            self.closed = True
            return
        if self.closed:  # the front end closed it meanwhile
            self.ws.close()
            return
        self._send({"op": "open", "protocol": "rcanvas.v1"})
        code, reason = 1006, ""
        try:
            while not self.closed:
                kinds, texts, bufs, size = [], [], [], 0
                m = self.ws.recv()
                # what else has arrived goes in the same comm message (a frame's tiles, a notice), in order
                while True:
                    if isinstance(m, tuple):
                        break
                    if isinstance(m, str):
                        kinds.append("t")
                        texts.append(m)
                    else:
                        kinds.append("b")
                        bufs.append(m)
                        size += len(m)
                    if size >= MAX_BATCH_BYTES or len(kinds) >= 256 or not self.ws.pending():
                        m = None
                        break
                    m = self.ws.recv()
                if kinds:
                    self._send({"op": "m", "k": "".join(kinds), "t": texts}, bufs)
                if isinstance(m, tuple):
                    code, reason = m[1], m[2]
                    break
        except (OSError, EOFError, ValueError):
            pass
        if not self.closed:
            self._send({"op": "close", "code": code, "reason": reason})
        self.stop()

    def send(self, data):
        if self.ws is not None and not self.closed:
            try:
                self.ws.send(data)
            except OSError:
                self.stop()

    def stop(self, code=1000, reason=""):
        first = not self.closed
        self.closed = True
        if first and self.ws is not None:
            self.ws.close(code, reason)


def _direct_mode():
    v = os.environ.get("RCANVAS_WIDGET_DIRECT", "").strip()
    return {"0": "comm", "1": "direct"}.get(v, "auto")


def _with_token(path, token):
    """The front end's WebSocket path ("/c/NAME/ws?session=S&codecs=…") with whatever credential it carries
    replaced by the kernel's token: the relay connects from the kernel to its own server, where the session's path
    prefix is gone from the path the front end sends."""
    base, _, query = path.partition("?")
    # the other arguments as they came (codecs=h264,png: re-encoding would turn its commas into %2C)
    args = [a for a in query.split("&") if a and a.split("=", 1)[0] not in ("token", "session")]
    return f"{base}?" + "&".join([f"token={token}"] + args)


class CanvasWidget(anywidget.AnyWidget):
    """The live view of an rcanvas.Canvas in a notebook (see the module's doc)."""

    _esm = _load_esm()
    # the page URL by the server process's session ("…/s/R/c/NAME?session=S"), never the token: the browser's
    # direct WebSocket and its reconnects then carry nothing that opens the server after a restart
    url = traitlets.Unicode("").tag(sync=True)
    canvas_name = traitlets.Unicode("").tag(sync=True)
    width = traitlets.Int(640).tag(sync=True)           # CSS pixels of the output
    height = traitlets.Int(480).tag(sync=True)
    way = traitlets.Unicode("auto").tag(sync=True)      # "auto", "direct" or "comm"
    stats = traitlets.Bool(False).tag(sync=True)        # the F2 overlay shown from the start

    def __init__(self, canvas, **kw):
        size = canvas.get_size()
        server = canvas._server
        host = os.environ.get("RCANVAS_HOST", "127.0.0.1")
        self._host = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
        self._port = server.port
        self._token = server.token   # the comm way's relay is the kernel's own viewer: it goes by the token
        self._relays = {}
        kw.setdefault("way", _direct_mode())
        url = server.session_url(canvas.name, relative=bool(server.base_path))
        super().__init__(url=url, canvas_name=canvas.name,
                         width=int(round(size["width"])), height=int(round(size["height"])), **kw)
        self.on_msg(self._on_front)

    def _on_front(self, _widget, content, buffers):
        if not isinstance(content, dict):
            return
        sid, op = str(content.get("sid", "")), content.get("op")
        if op == "open":
            path = str(content.get("path", ""))
            # the kernel connects to its own server only, to a canvas's WebSocket
            if not (path.startswith("/c/") or path.startswith("/ws")) or "\r" in path or "\n" in path or " " in path:
                self.send({"op": "close", "sid": sid, "code": 1006, "reason": "", "status": 404})
                return
            old = self._relays.pop(sid, None)
            if old:
                old.stop()
            self._relays[sid] = _Relay(weakref.ref(self), sid, _with_token(path, self._token))
            self._prune()
        elif op == "m":
            r = self._relays.get(sid)
            if r:
                if "t" in content:
                    r.send(str(content["t"]))
                for b in buffers or []:
                    r.send(bytes(b))
        elif op == "close":
            r = self._relays.pop(sid, None)
            if r:
                r.stop(int(content.get("code") or 1000) if content.get("code") in (1000, 1001) else 1000)

    def _prune(self):
        for sid, r in list(self._relays.items()):
            if r.closed:
                del self._relays[sid]

    def close(self):
        for r in list(self._relays.values()):
            r.stop(1001, "widget closed")
        self._relays.clear()
        super().close()


def widget_for(canvas, **kw):
    """A CanvasWidget of canvas: an rcanvas.Canvas, or a rendercanvas canvas of rcanvas.rendercanvas (its
    `_canvas`). kw: way ("auto", "direct", "comm"), stats."""
    c = getattr(canvas, "_canvas", canvas)
    return CanvasWidget(c, **kw)


def in_kernel():
    """Whether an IPython kernel runs in this process (a widget needs its comms)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def mimebundle_for(canvas):
    """Canvas._repr_mimebundle_'s widget: the bundle of its (cached) widget, or None where no widget can show."""
    if os.environ.get("RCANVAS_WIDGET", "").strip() == "0" or not in_kernel():
        return None
    w = getattr(canvas, "_widget", None)
    if w is None or w.comm is None:
        w = widget_for(canvas)
        canvas._widget = w
    bundle = w._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    if isinstance(data, dict):
        # a front end without ipywidgets' renderer (Notebook 6 without the widgets extension, nbviewer) shows the
        # iframe as before; one with it prefers the widget's mime type
        from . import iframe_html
        data.setdefault("text/html", iframe_html(canvas.display_url, canvas.get_size()))
    return bundle


def local_notebook_origins():
    """The browser origins of this user's running Jupyter servers (their runtime files, jpserver-*.json and
    nbserver-*.json), for the shared server's Origin check: a notebook page of one of them may then open the
    WebSocket straight (with the token still). Empty when there are none or they cannot be read."""
    dirs = []
    if os.environ.get("JUPYTER_RUNTIME_DIR"):
        dirs.append(os.environ["JUPYTER_RUNTIME_DIR"])
    try:
        from jupyter_core.paths import jupyter_runtime_dir
        dirs.append(jupyter_runtime_dir())
    except Exception:
        dirs.append(os.path.expanduser("~/.local/share/jupyter/runtime"))
    out = []
    for d in dict.fromkeys(dirs):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            if not (n.startswith(("jpserver-", "nbserver-")) and n.endswith(".json")):
                continue
            try:
                with open(os.path.join(d, n), encoding="utf-8") as f:
                    info = json.load(f)
                port = int(info["port"])
                scheme = "https" if info.get("secure") else "http"
            except (OSError, ValueError, KeyError, TypeError):
                continue
            for h in ("localhost", "127.0.0.1", "[::1]"):
                out.append(f"{scheme}://{h}:{port}")
            host = str(info.get("hostname") or "")
            if host and host not in ("localhost", "127.0.0.1", "0.0.0.0", "::"):
                out.append(f"{scheme}://{host}:{port}")
    return list(dict.fromkeys(out))
