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
Origin already; of the browser's cookies it passes on only rcanvas' own (rcanvas_token_<port>), never the
notebook's. It proxies only to a port that a kernel of this server registered, whose registering process is
alive and (on Linux) whose listening socket belongs to this server's user: no other local service (another
user's, or a web app of one's own) is served on the notebook's origin. Limits: HTTP bodies of 16 MiB, WebSocket
messages of 1 MiB from the browser and 256 MiB from rcanvas; the upstream connect times out after 10 s.
"""

import atexit
import os
import re
import shutil
import tempfile

PREFIX = "rcanvas"
MAX_HTTP_BODY = 16 << 20
MAX_WS_FROM_BROWSER = 1 << 20
MAX_WS_FROM_RCANVAS = 256 << 20
CONNECT_TIMEOUT_S = 10
# Request headers passed on to rcanvas (besides its cookie); response headers passed back (besides Set-Cookie).
_REQUEST_HEADERS = ("Accept", "Accept-Language", "Cache-Control", "If-None-Match", "If-Modified-Since", "User-Agent")
_RESPONSE_HEADERS = ("Content-Type", "Cache-Control", "ETag", "Last-Modified", "X-Content-Type-Options",
                     "Referrer-Policy")

_ports_dir = None


def _jupyter_server_extension_points():   # jupyter_server
    return [{"module": "rcanvas.jupyter"}]


def _jupyter_server_extension_paths():    # notebook 6 (jupyter serverextension enable --py rcanvas.jupyter)
    return [{"module": "rcanvas.jupyter"}]


def load_jupyter_server_extension(app):
    """Adds the proxy's handler to the notebook server app (notebook 6 NotebookApp or jupyter_server ServerApp)
    and tells the kernels it will start where it is (environment variables they inherit)."""
    global _ports_dir
    base_url = app.web_app.settings.get("base_url", "/")
    if _ports_dir is None:
        given = os.environ.get("RCANVAS_JUPYTER_PORTS")
        if given:
            _check_ports_dir(given)
            _ports_dir = given
        else:
            _ports_dir = tempfile.mkdtemp(prefix="rcanvas-jupyter-")   # 0700: only this user's kernels write here
            atexit.register(shutil.rmtree, _ports_dir, True)
    os.environ["RCANVAS_JUPYTER_PORTS"] = _ports_dir
    prefix = base_url.rstrip("/") + "/" + PREFIX
    if os.environ.get("RCANVAS_JUPYTER_PROXY", "").strip() != "0":   # 0: the user wants the direct port
        os.environ["RCANVAS_JUPYTER_PROXY"] = prefix
    handler = _handler_class(type(app).__module__.split(".")[0])
    app.web_app.add_handlers(".*$", [(re.escape(prefix) + r"/(\d{1,5})(/.*)?", handler,
                                      {"prefix": prefix, "ports_dir": _ports_dir})])
    app.log.info("rcanvas.jupyter: serving the kernels' rcanvas servers under %s/<port>/", prefix)


_load_jupyter_server_extension = load_jupyter_server_extension


def _check_ports_dir(path):
    # A folder given in RCANVAS_JUPYTER_PORTS: whoever can write there chooses the ports proxied.
    try:
        st = os.stat(path)
    except OSError as e:
        raise RuntimeError(f"rcanvas.jupyter: RCANVAS_JUPYTER_PORTS={path}: {e.strerror}") from None
    import stat
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise RuntimeError(f"rcanvas.jupyter: RCANVAS_JUPYTER_PORTS={path} must be a folder of this user that "
                           "no one else may write to (chmod 700)")


# Local addresses (as /proc/net/tcp{,6} write them) a connection to 127.0.0.1 may reach: 127.0.0.1, 0.0.0.0, and
# in tcp6 :: and ::ffff:127.0.0.1 (a dual-stack listener).
_LOOPBACK_ADDRS = {"0100007F", "00000000", "00000000000000000000000000000000", "0000000000000000FFFF00000100007F"}


def _listener_uids(port):
    """The uids owning the sockets that listen on port where a connection to 127.0.0.1 lands, from
    /proc/net/tcp{,6}: a set (empty when nothing listens there), or None when /proc cannot tell (not Linux)."""
    uids, seen = set(), False
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for ln in lines:
            fields = ln.split()
            if len(fields) <= 7 or fields[3] != "0A":   # 0A: LISTEN
                continue
            addr, _, hexport = fields[1].rpartition(":")
            if int(hexport, 16) == port and addr.upper() in _LOOPBACK_ADDRS:
                uids.add(int(fields[7]))
    return uids if seen else None


def port_refusal(port, ports_dir):
    """(HTTP status, why) when port may not be proxied, None when it may: a kernel of this server registered it
    (a file named by the port in ports_dir holding its pid), that process is alive, and the sockets listening on
    the port are this user's. 404: not a kernel's port; 502: a kernel's whose server is gone."""
    if not 1 <= port <= 65535:
        return 404, f"port {port} is not a port number"
    try:
        with open(os.path.join(ports_dir, str(port))) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 404, f"no rcanvas server of this notebook server's kernels is registered on port {port}"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 502, f"the kernel that registered port {port} (pid {pid}) has exited"
    except PermissionError:
        return 404, f"port {port} was registered by a process of another user"
    uids = _listener_uids(port)
    if uids is not None and not uids:
        return 502, f"nothing listens on port {port}"
    if uids is not None and uids != {os.getuid()}:
        return 404, f"port {port} is another user's"
    return None


def _only_rcanvas_cookie(header, port):
    # Of the browser's Cookie header, rcanvas' own cookie of that port only (never the notebook's login).
    name = f"rcanvas_token_{port}"
    keep = [c.strip() for c in (header or "").split(";") if c.strip().split("=", 1)[0] == name]
    return "; ".join(keep)


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


_clients = {}


def _client():
    # One HTTP client per IOLoop, its answers bounded by MAX_HTTP_BODY (tornado refuses a longer one: 599).
    from tornado import httpclient
    from tornado.ioloop import IOLoop

    loop = IOLoop.current()
    c = _clients.get(id(loop))
    if c is None:
        c = _clients[id(loop)] = httpclient.AsyncHTTPClient(force_instance=True, max_body_size=MAX_HTTP_BODY,
                                                            max_buffer_size=MAX_HTTP_BODY)
    return c


def _handler_class(flavour):
    from tornado import httpclient, web, websocket
    from tornado.ioloop import IOLoop

    Base, WebSocketMixin = _bases(flavour)

    class RcanvasProxyHandler(WebSocketMixin, websocket.WebSocketHandler, Base):
        """GET <prefix>/<port>/<path>: the page and files of rcanvas on 127.0.0.1:<port>, or, with an Upgrade,
        its WebSocket, relayed message by message."""

        def initialize(self, prefix, ports_dir):
            self.prefix = prefix
            self.ports_dir = ports_dir
            self.upstream = None

        @property
        def max_message_size(self):
            return MAX_WS_FROM_BROWSER

        @web.authenticated
        async def get(self, port, path):
            port = int(port)
            refusal = port_refusal(port, self.ports_dir)
            if refusal:
                code, why = refusal
                self.log.info("rcanvas.jupyter: %s", why)
                raise web.HTTPError(code, why, reason="Bad Gateway" if code == 502 else "Not Found")
            # rcanvas takes the path with its base path kept ("<prefix>/<port>/c/NAME"), its Host check wants
            # its own address
            target = f"127.0.0.1:{port}{self.prefix}/{port}{path or '/'}"
            if self.request.query:
                target += "?" + self.request.query
            if self.request.headers.get("Upgrade", "").lower() == "websocket":
                await self._websocket(port, target)
            else:
                await self._http(port, target)

        # ---- HTTP

        async def _http(self, port, target):
            headers = {k: self.request.headers[k] for k in _REQUEST_HEADERS if k in self.request.headers}
            cookie = _only_rcanvas_cookie(self.request.headers.get("Cookie"), port)
            if cookie:
                headers["Cookie"] = cookie
            req = httpclient.HTTPRequest("http://" + target, headers=headers, follow_redirects=False,
                                         connect_timeout=CONNECT_TIMEOUT_S, request_timeout=60,
                                         decompress_response=False)
            try:
                resp = await _client().fetch(req, raise_error=False)
            except (OSError, httpclient.HTTPClientError) as e:
                why = f"port {port}: {e}"
                if isinstance(e, httpclient.HTTPClientError) and "closed" in str(e).lower():
                    why += f" (an answer over the proxy's limit of {MAX_HTTP_BODY} bytes is cut so)"
                raise web.HTTPError(502, why, reason="Bad Gateway") from None
            if resp.code == 599:  # tornado: no answer (connection refused, timeout), or over MAX_HTTP_BODY
                raise web.HTTPError(502, f"port {port}: {resp.error}", reason="Bad Gateway")
            self.set_status(resp.code, resp.reason)
            self.clear_header("Content-Type")
            for k in _RESPONSE_HEADERS:
                if k in resp.headers:
                    self.set_header(k, resp.headers[k])
            csp = resp.headers.get("Content-Security-Policy")
            # rcanvas' own policy, and only the notebook may frame it (as the notebook's own pages)
            self.set_header("Content-Security-Policy", (csp + "; " if csp else "") + "frame-ancestors 'self'")
            loc = resp.headers.get("Location")
            if loc and loc.startswith("/") and not loc.startswith("//"):
                self.set_header("Location", loc)
            name = f"rcanvas_token_{port}="
            for c in resp.headers.get_list("Set-Cookie"):
                if c.startswith(name):
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
            cookie = _only_rcanvas_cookie(self.request.headers.get("Cookie"), port)
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
                raise web.HTTPError(code, f"port {port}: {e}") from None
            except OSError as e:
                raise web.HTTPError(502, f"port {port}: {e}", reason="Bad Gateway") from None
            await websocket.WebSocketHandler.get(self)
            if self.get_status() != 101 and self.upstream is not None:
                self.upstream.close()
                self.upstream = None

        def select_subprotocol(self, subprotocols):
            return self.upstream.selected_subprotocol if self.upstream is not None else None

        def open(self, *args, **kwargs):
            super().open(*args, **kwargs)   # the notebook's pings
            IOLoop.current().spawn_callback(self._pump)

        async def _pump(self):
            # rcanvas -> browser, one message at a time: the next is read once the last one is written
            up = self.upstream
            while True:
                msg = await up.read_message()
                if msg is None:
                    break
                try:
                    await self.write_message(msg, binary=isinstance(msg, bytes))
                except websocket.WebSocketClosedError:
                    break
            code, reason = up.close_code, up.close_reason
            if self.ws_connection is not None:
                self.close(code if code and code not in (1005, 1006) else 1001, reason or "rcanvas server gone")

        def on_message(self, message):
            # browser -> rcanvas
            if self.upstream is not None:
                try:
                    self.upstream.write_message(message, binary=isinstance(message, bytes))
                except websocket.WebSocketClosedError:
                    self.close(1001, "rcanvas server gone")

        def on_close(self):
            up, self.upstream = self.upstream, None
            if up is not None:
                code = self.close_code
                up.close(code if code and code not in (1005, 1006) else 1000, self.close_reason or "")

    return RcanvasProxyHandler
