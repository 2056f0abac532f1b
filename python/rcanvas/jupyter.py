# SPDX-License-Identifier: MIT
"""rcanvas.jupyter: a Jupyter server extension that serves the rcanvas servers of its kernels through the notebook
server's own port, for a kernel whose port the browser cannot reach (a remote notebook server, JupyterHub).

    jupyter notebook --NotebookApp.nbserver_extensions='{"rcanvas.jupyter": True}'     # Notebook 6 (Debian 12)
    jupyter server --ServerApp.jpserver_extensions='{"rcanvas.jupyter": True}'         # jupyter_server (Lab, …)
    jupyter serverextension enable --py rcanvas.jupyter    # or for good: Notebook 6 (jupyter server extension
                                                           # enable rcanvas.jupyter for jupyter_server)

What it serves: ``<base_url>rcanvas/<port>/<path>`` is ``http://127.0.0.1:<port>/<base_url>rcanvas/<port>/<path>``:
HTTP GET (the page, its script, the probe, /metrics) and the WebSocket (frames and input, binary and text
messages both ways). The kernels it starts learn of it from the environment they inherit:
RCANVAS_JUPYTER_PROXY (the prefix, "<base_url>rcanvas") and RCANVAS_JUPYTER_PORTS (a folder, mode 0700, where
each kernel's rcanvas.get_server() names its port: a new temporary one, or the folder that variable names in the
notebook server's own environment); their servers then take "<base_url>rcanvas/<port>" as base
path, and a notebook shows the canvas at that path on the notebook's own origin.

Security: every request needs the notebook server's login (its token or cookie, as its own pages do; a
WebSocket also its Origin check), and rcanvas' own checks stay: the rcanvas token (in the URL or rcanvas'
cookie), its Host and Origin checks. The proxy connects to 127.0.0.1:<port> with the Host that port's server
expects and, for the WebSocket, that server's own Origin, since the notebook server has checked the browser's
Origin already. Of the browser's cookies it passes on only rcanvas' own (rcanvas_s), never the notebook's; of
the query, never the notebook's token (a ?token= equal to the notebook server's) nor _xsrf; no Authorization
header. Back it passes rcanvas' Set-Cookie (rcanvas_s) and a relative Location (rcanvas' 303 into s/<R>/…)
unchanged. No token reaches the notebook server's log: the handler's log lines show token=[redacted].

It proxies only to a port that a kernel of this server registered (a regular file, not a symlink, in the
ports folder: a folder of this user, mode 0700, no symlink, opened once and then used by its descriptor) whose
registering process is alive, not a zombie, and (on Linux, from /proc) holds every socket listening on that
port itself: no other local service (another user's, a web app of one's own, or whatever took the port of a
kernel that died) is served on the notebook's origin. Where /proc cannot tell (not Linux) it checks only that
the process exists.

Limits, per viewer: one message at a time in each direction (the next browser message is read once the last
one is written to rcanvas, the next rcanvas message once the last one is written to the browser), so a browser
that floods or does not read holds at most a message and the sockets' buffers, and other viewers go on; a
WebSocket ping every 5 s, and a viewer that answers none for 20 s (rcanvas' own idle timeout) is dropped, its
rcanvas connection closed. HTTP bodies of 16 MiB, WebSocket messages of 1 MiB from the browser and 256 MiB from
rcanvas; the upstream connect times out after 10 s, an HTTP answer after 60 s; every HTTP request has its own
connection, so a stalled kernel's server delays only its own pages.
"""

import asyncio
import atexit
import hmac
import os
import re
import shutil
import stat
import tempfile
from urllib.parse import unquote_plus

from . import _kernel

PREFIX = "rcanvas"
MAX_HTTP_BODY = 16 << 20
MAX_WS_FROM_BROWSER = 1 << 20
MAX_WS_FROM_RCANVAS = 256 << 20
CONNECT_TIMEOUT_S = 10
REQUEST_TIMEOUT_S = 60
COOKIE = "rcanvas_s"            # rcanvas' session cookie (Path=<base>/s/<R>/)


def _env_seconds(name, default):
    # a tuning knob for the viewer pings (the tests make them short); a bad value is an error, not a default
    v = os.environ.get(name, "").strip()
    if not v:
        return default
    x = float(v)
    if not 0 < x <= 3600:
        raise ValueError(f"{name} must be seconds in (0, 3600], not {v!r}")
    return x


# rcanvas' own keep-alive: a ping every 5 s, a viewer that answers none for 20 s is dropped
PING_INTERVAL_S = 5.0
IDLE_TIMEOUT_S = 20.0
# Request headers passed on to rcanvas (besides its cookie); response headers passed back (besides Set-Cookie).
_REQUEST_HEADERS = ("Accept", "Accept-Language", "Cache-Control", "If-None-Match", "If-Modified-Since", "User-Agent")
_RESPONSE_HEADERS = ("Content-Type", "Cache-Control", "ETag", "Last-Modified", "X-Content-Type-Options",
                     "Referrer-Policy")

_ports = None   # (path, descriptor) of the ports folder


def _jupyter_server_extension_points():   # jupyter_server
    return [{"module": "rcanvas.jupyter"}]


def _jupyter_server_extension_paths():    # notebook 6 (jupyter serverextension enable --py rcanvas.jupyter)
    return [{"module": "rcanvas.jupyter"}]


def load_jupyter_server_extension(app):
    """Adds the proxy's handler to the notebook server app (notebook 6 NotebookApp or jupyter_server ServerApp)
    and tells the kernels it will start where it is (environment variables they inherit). Raises
    _kernel.PortsDirError (the notebook server logs it and runs without the proxy) for a RCANVAS_JUPYTER_PORTS
    that another user could change."""
    global _ports
    ping = _env_seconds("RCANVAS_JUPYTER_PING_INTERVAL", PING_INTERVAL_S)
    idle = _env_seconds("RCANVAS_JUPYTER_IDLE_TIMEOUT", IDLE_TIMEOUT_S)
    if _ports is None:
        given = os.environ.get("RCANVAS_JUPYTER_PORTS")
        if given:
            _ports = (given, _kernel.open_ports_dir(given))
        else:
            path = tempfile.mkdtemp(prefix="rcanvas-jupyter-")   # 0700: only this user's kernels write here
            atexit.register(shutil.rmtree, path, True)
            _ports = (path, _kernel.open_ports_dir(path))
    os.environ["RCANVAS_JUPYTER_PORTS"] = _ports[0]
    base_url = app.web_app.settings.get("base_url", "/")
    prefix = base_url.rstrip("/") + "/" + PREFIX
    if os.environ.get("RCANVAS_JUPYTER_PROXY", "").strip() != "0":   # 0: the user wants the direct port
        os.environ["RCANVAS_JUPYTER_PROXY"] = prefix
    handler = _handler_class(type(app).__module__.split(".")[0])
    app.web_app.add_handlers(".*$", [(re.escape(prefix) + r"/(\d{1,5})(/.*)?", handler,
                                      {"prefix": prefix, "ports_dir": _ports[1], "ping_interval_s": ping,
                                       "idle_timeout_s": idle})])
    app.log.info("rcanvas.jupyter: serving the kernels' rcanvas servers under %s/<port>/", prefix)


_load_jupyter_server_extension = load_jupyter_server_extension


# ---- which ports may be proxied

# Local addresses (as /proc/net/tcp{,6} write them) a connection to 127.0.0.1 may reach: 127.0.0.1, 0.0.0.0, and
# in tcp6 :: and ::ffff:127.0.0.1 (a dual-stack listener).
_LOOPBACK_ADDRS = {"0100007F", "00000000", "00000000000000000000000000000000", "0000000000000000FFFF00000100007F"}


def _listeners(port):
    """{socket inode: uid} of the sockets listening on port where a connection to 127.0.0.1 lands, from
    /proc/net/tcp{,6}, or None when /proc cannot tell (not Linux)."""
    found, seen = {}, False
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for ln in lines:
            fields = ln.split()
            if len(fields) <= 9 or fields[3] != "0A":   # 0A: LISTEN
                continue
            addr, _, hexport = fields[1].rpartition(":")
            if int(hexport, 16) == port and addr.upper() in _LOOPBACK_ADDRS:
                found[int(fields[9])] = int(fields[7])
    return found if seen else None


def _socket_inodes(pid):
    """The inodes of the sockets process pid holds (its /proc/PID/fd); raises OSError when they cannot be
    read (gone, another user's)."""
    d = f"/proc/{pid}/fd"
    out = set()
    for fd in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, fd))
        except OSError:
            continue   # closed meanwhile
        if target.startswith("socket:["):
            out.add(int(target[8:-1]))
    return out


def _process_state(pid):
    """The state letter of process pid from /proc/PID/stat ("R", "S", … "Z" a zombie), None when it is gone,
    or "" when /proc cannot tell (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else ""
    except OSError:
        return ""
    # the command name, in parentheses, may hold any character: the state follows the last ')'
    return text[text.rindex(")") + 2:].split(" ", 1)[0]


def _registered_pid(port, dir_fd):
    """The pid in the registration file of port (a regular file of this user in the ports folder, never
    followed if a symlink), or None."""
    try:
        fd = os.open(str(port), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()):
            return None
        pid = int(os.read(fd, 64).split()[0])
        return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        return None
    finally:
        os.close(fd)


def port_refusal(port, ports_dir):
    """(HTTP status, why) when port may not be proxied, None when it may: a kernel of this server registered it
    (a regular file named by the port in the ports folder holding its pid; ports_dir: the folder's descriptor,
    or its path, then checked as _kernel.open_ports_dir does), that process is alive and no zombie (a killed
    kernel is one until reaped), and it holds every socket listening on the port itself (so whatever took the
    port of a kernel that died is not served). 404: not a kernel's port; 502: a kernel's whose server is gone."""
    if not 1 <= port <= 65535:
        return 404, f"port {port} is not a port number"
    if isinstance(ports_dir, int):
        pid = _registered_pid(port, ports_dir)
    else:
        try:
            fd = _kernel.open_ports_dir(ports_dir)
        except _kernel.PortsDirError as e:
            return 404, str(e)
        try:
            pid = _registered_pid(port, fd)
        finally:
            os.close(fd)
    if pid is None:
        return 404, f"no rcanvas server of this notebook server's kernels is registered on port {port}"
    state = _process_state(pid)
    if state is None or state in ("Z", "X", "x"):
        return 502, f"the kernel that registered port {port} (pid {pid}) has exited"
    if state == "":   # no /proc: only whether the process exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return 502, f"the kernel that registered port {port} (pid {pid}) has exited"
        except PermissionError:
            return 404, f"port {port} was registered by a process of another user"
        return None
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return 404, f"port {port} was registered by a process of another user"
        held = _socket_inodes(pid)
    except FileNotFoundError:
        return 502, f"the kernel that registered port {port} (pid {pid}) has exited"
    except OSError as e:
        return 404, f"the sockets of pid {pid} (port {port}) cannot be read: {e.strerror}"
    listening = _listeners(port)
    if not listening:
        return 502, f"nothing listens on port {port}"
    if not set(listening) <= held:
        return 404, f"port {port} is served by another process than the kernel that registered it (pid {pid})"
    return None


# ---- what passes between the browser and rcanvas

def _only_rcanvas_cookie(header):
    # Of the browser's Cookie header, rcanvas' own cookie only (never the notebook's login, nor its _xsrf).
    keep = [c.strip() for c in (header or "").split(";") if c.strip().split("=", 1)[0].strip() == COOKIE]
    return "; ".join(keep)


def _upstream_query(query, notebook_token):
    """The query passed on to rcanvas: the browser's, less the notebook's own token (a token= parameter equal
    to the notebook server's: the browser may log in to the notebook by it, and rcanvas must not learn it) and
    _xsrf. rcanvas' own token= (another value) stays: rcanvas' page needs it. The rest stays byte for byte."""
    keep = []
    for part in (query or "").split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        key = unquote_plus(key)
        if key == "_xsrf":
            continue
        if key == "token" and notebook_token and hmac.compare_digest(unquote_plus(value).encode(),
                                                                      str(notebook_token).encode()):
            continue
        keep.append(part)
    return "&".join(keep)


def _safe_location(loc):
    # rcanvas' redirects are relative ("s/<R>/c/NAME", a path on this origin): passed back unchanged; one to an
    # absolute URL (another host, 127.0.0.1:PORT) or scheme-relative ("//host", "/\\host") is not.
    return bool(loc) and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", loc) and not re.match(r"[/\\]{2}", loc) \
        and not loc.startswith("\\")


# Secrets that may appear in a proxied URL: rcanvas' token (or the notebook's, when the browser logs in by it),
# _xsrf, and the secret path segment R of rcanvas' cookie path (<prefix>/<port>/s/<R>/).
_SECRET_PARAM = re.compile(r"((?:^|[?&;])(?:token|view_token|_xsrf|access_token|session)=)[^&;#\s]*", re.IGNORECASE)
_SECRET_SEGMENT = re.compile(r"(/\d{1,5}/s/)[^/?#\s]+")


def redact(uri):
    """uri with its secrets replaced by [redacted], for a log line."""
    if not uri:
        return uri
    uri = _SECRET_PARAM.sub(r"\1[redacted]", uri)
    return _SECRET_SEGMENT.sub(r"\1[redacted]", uri)


def _bases(flavour):
    if flavour == "notebook":
        from notebook.base.handlers import IPythonHandler as Base
        from notebook.base.zmqhandlers import WebSocketMixin
    else:
        from jupyter_server.base.handlers import JupyterHandler as Base
        try:
            from jupyter_server.base.zmqhandlers import WebSocketMixin
        except ImportError:  # jupyter_server 2
            from jupyter_server.base.websocket import WebSocketMixin
    return Base, WebSocketMixin


def _handler_class(flavour):
    from tornado import httpclient, iostream, web, websocket
    from tornado.ioloop import IOLoop, PeriodicCallback
    from tornado.log import app_log, gen_log

    Base, WebSocketMixin = _bases(flavour)
    closed_errors = (websocket.WebSocketClosedError, iostream.StreamClosedError)

    class RcanvasProxyHandler(WebSocketMixin, websocket.WebSocketHandler, Base):
        """GET <prefix>/<port>/<path>: the page and files of rcanvas on 127.0.0.1:<port>, or, with an Upgrade,
        its WebSocket, relayed message by message."""

        def initialize(self, prefix, ports_dir, ping_interval_s=PING_INTERVAL_S, idle_timeout_s=IDLE_TIMEOUT_S):
            self.prefix = prefix
            self.ports_dir = ports_dir
            self.ping_interval_s = ping_interval_s
            self.idle_timeout_s = idle_timeout_s
            self.upstream = None
            self._pinger = None

        @property
        def max_message_size(self):
            return MAX_WS_FROM_BROWSER

        # The notebook's keep-alive (a ping every 30 s, 90 s without a pong) and tornado's are off: ours below
        # drops a viewer as rcanvas does (a ping every 5 s, 20 s without a pong).
        @property
        def ping_interval(self):
            return 0

        @property
        def ping_timeout(self):
            return 0

        # ---- logs: no secret of the URL (rcanvas' token, the notebook's) in the notebook server's log

        def _request_summary(self):
            return f"{self.request.method} {redact(self.request.uri)} ({self.request.remote_ip})"

        def _log(self):
            # the notebook's log_request writes request.uri and, for errors, the Referer: both redacted while it
            # runs
            req = self.request
            uri, referer = req.uri, req.headers.get("Referer")
            req.uri = redact(uri)
            if referer is not None:
                req.headers["Referer"] = redact(referer)
            try:
                super()._log()
            finally:
                req.uri = uri
                if referer is not None:
                    req.headers["Referer"] = referer

        def log_exception(self, typ, value, tb):
            # tornado's would write the request (its URI, its cookies) for an uncaught exception
            if isinstance(value, web.HTTPError):
                if value.log_message:
                    gen_log.warning("%d %s: " + value.log_message, value.status_code, self._request_summary(),
                                    *value.args)
            else:
                app_log.error("Uncaught exception %s", self._request_summary(), exc_info=(typ, value, tb))

        def _notebook_token(self):
            try:
                return self.token or ""
            except Exception:
                return ""

        @web.authenticated
        async def get(self, port, path):
            port = int(port)
            refusal = port_refusal(port, self.ports_dir)
            if refusal:
                code, why = refusal
                self.log.info("rcanvas.jupyter: %s", why)
                raise web.HTTPError(code, "%s", why, reason="Bad Gateway" if code == 502 else "Not Found")
            # rcanvas takes the path with its base path kept ("<prefix>/<port>/c/NAME"), its Host check wants
            # its own address
            target = f"127.0.0.1:{port}{self.prefix}/{port}{path or '/'}"
            query = _upstream_query(self.request.query, self._notebook_token())
            if query:
                target += "?" + query
            if self.request.headers.get("Upgrade", "").lower() == "websocket":
                await self._websocket(port, target)
            else:
                await self._http(port, target)

        # ---- HTTP

        async def _http(self, port, target):
            headers = {k: self.request.headers[k] for k in _REQUEST_HEADERS if k in self.request.headers}
            cookie = _only_rcanvas_cookie(self.request.headers.get("Cookie"))
            if cookie:
                headers["Cookie"] = cookie
            req = httpclient.HTTPRequest("http://" + target, headers=headers, follow_redirects=False,
                                         connect_timeout=CONNECT_TIMEOUT_S, request_timeout=REQUEST_TIMEOUT_S,
                                         decompress_response=False)
            # a client of its own for each request: no slots shared with other upstreams, so one that stalls
            # delays only its own requests; its answer bounded by MAX_HTTP_BODY (tornado refuses a longer one)
            client = httpclient.AsyncHTTPClient(force_instance=True, max_clients=1, max_body_size=MAX_HTTP_BODY,
                                                max_buffer_size=MAX_HTTP_BODY)
            try:
                resp = await client.fetch(req, raise_error=False)
            except (OSError, httpclient.HTTPClientError) as e:
                why = f"port {port}: {e}"
                if isinstance(e, httpclient.HTTPClientError) and "closed" in str(e).lower():
                    why += f" (an answer over the proxy's limit of {MAX_HTTP_BODY} bytes is cut so)"
                raise web.HTTPError(502, "%s", why, reason="Bad Gateway") from None
            finally:
                client.close()
            if resp.code == 599:  # tornado: no answer (connection refused, timeout), or over MAX_HTTP_BODY
                raise web.HTTPError(502, "%s", f"port {port}: {resp.error}", reason="Bad Gateway")
            self.set_status(resp.code, resp.reason)
            self.clear_header("Content-Type")
            for k in _RESPONSE_HEADERS:
                if k in resp.headers:
                    self.set_header(k, resp.headers[k])
            csp = resp.headers.get("Content-Security-Policy")
            # rcanvas' own policy, and only the notebook may frame it (as the notebook's own pages)
            self.set_header("Content-Security-Policy", (csp + "; " if csp else "") + "frame-ancestors 'self'")
            loc = resp.headers.get("Location")
            if _safe_location(loc):
                self.set_header("Location", loc)
            for c in resp.headers.get_list("Set-Cookie"):
                if c.split("=", 1)[0].strip() == COOKIE:
                    self.add_header("Set-Cookie", c)
            if resp.code not in (204, 304) and resp.body:
                self.write(resp.body)
            self.finish()

        # ---- WebSocket

        async def _websocket(self, port, target):
            if not self.check_origin(self.request.headers.get("Origin")):   # the notebook's own Origin check
                raise web.HTTPError(403, "cross-origin WebSocket refused")
            protos = [p.strip() for p in self.request.headers.get("Sec-WebSocket-Protocol", "").split(",")
                      if p.strip()]
            headers = {"Origin": f"http://127.0.0.1:{port}"}   # rcanvas' own origin: the browser's was checked
            cookie = _only_rcanvas_cookie(self.request.headers.get("Cookie"))
            if cookie:
                headers["Cookie"] = cookie
            req = httpclient.HTTPRequest("ws://" + target, headers=headers, connect_timeout=CONNECT_TIMEOUT_S,
                                         request_timeout=CONNECT_TIMEOUT_S)
            try:
                # upstream first: its refusal (401, 403, 404, 503) is the browser's answer too
                self.upstream = await websocket.websocket_connect(
                    req, subprotocols=protos or None, max_message_size=MAX_WS_FROM_RCANVAS)
            except httpclient.HTTPClientError as e:
                code = e.code if 400 <= e.code < 600 and e.code != 599 else 502
                raise web.HTTPError(code, "%s", f"port {port}: {e}") from None
            except OSError as e:
                raise web.HTTPError(502, "%s", f"port {port}: {e}", reason="Bad Gateway") from None
            await websocket.WebSocketHandler.get(self)
            if self.get_status() != 101 and self.upstream is not None:
                self.upstream.close()
                self.upstream = None

        def select_subprotocol(self, subprotocols):
            return self.upstream.selected_subprotocol if self.upstream is not None else None

        def open(self, *args, **kwargs):
            # not the notebook's open(): it starts the notebook's pings, ours replace them
            loop = IOLoop.current()
            self._last_pong = loop.time()
            self._pinger = PeriodicCallback(self._ping, self.ping_interval_s * 1000)
            self._pinger.start()
            loop.spawn_callback(self._pump)

        def on_pong(self, data):
            self._last_pong = IOLoop.current().time()

        def _ping(self):
            conn = self.ws_connection
            if conn is None or conn.is_closing():
                self._pinger.stop()
                return
            silent = IOLoop.current().time() - self._last_pong
            if silent > self.idle_timeout_s:
                # a viewer that reads nothing (or is gone) holds rcanvas' slot and our buffers: dropped, as
                # rcanvas drops such a viewer itself, at once (no close handshake with a peer that reads nothing)
                self._pinger.stop()
                self.log.info("rcanvas.jupyter: a viewer answered no ping for %.0f s: closed", silent)
                self._close_upstream(1001, "viewer answers no ping")
                stream = getattr(conn, "stream", None)
                self.close(1001, "no pong")
                if stream is not None:
                    stream.close()
                return
            try:
                self.ping(b"")
            except closed_errors:
                self._pinger.stop()

        async def _pump(self):
            # rcanvas -> browser, one message at a time: the next is read once the last one is written (the
            # client's read queue holds one more), so a browser that does not read holds up only its own relay
            up = self.upstream
            while up is not None:
                msg = await up.read_message()
                if msg is None:
                    break
                try:
                    await self.write_message(msg, binary=isinstance(msg, bytes))
                except closed_errors:
                    break
                await asyncio.sleep(0)   # other viewers' turn between two messages of this one
            if up is not None and self.ws_connection is not None:
                code, reason = up.close_code, up.close_reason
                self.close(code if code and code not in (1005, 1006) else 1001, reason or "rcanvas server gone")

        async def on_message(self, message):
            # browser -> rcanvas, one message at a time: tornado reads the next browser message once this
            # returns, i.e. once this one is written to rcanvas' socket; a viewer that floods then waits on its
            # own socket, and yields to the other viewers between two messages
            up = self.upstream
            if up is None:
                return
            try:
                await up.write_message(message, binary=isinstance(message, bytes))
            except closed_errors:
                self.close(1001, "rcanvas server gone")
                return
            await asyncio.sleep(0)

        def _close_upstream(self, code, reason):
            up, self.upstream = self.upstream, None
            if up is not None:
                up.close(code, reason)

        def on_close(self):
            if self._pinger is not None:
                self._pinger.stop()
            code = self.close_code
            self._close_upstream(code if code and code not in (1005, 1006) else 1000, self.close_reason or "")

    return RcanvasProxyHandler
