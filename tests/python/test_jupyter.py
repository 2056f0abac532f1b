# SPDX-License-Identifier: MIT
"""rcanvas.jupyter, the notebook server extension that proxies the kernels' rcanvas servers through the notebook
server's port, against Debian 12's Notebook 6.4 and jupyter_server 1.23 (both when installed; each skips, saying
why, when not). An rcanvas server of this process registers its port as a kernel's does; through the proxy: the
page (rcanvas' token cookie scoped to the prefix, rcanvas' CSP plus frame-ancestors 'self'), a pixel-exact PNG
frame over the proxied WebSocket and an event back, the close code passed on. Refused: no notebook login, a
cross-site Origin, a wrong rcanvas token (rcanvas' own 403), a port no kernel registered (another local web
server is not served), a registered port whose process is gone; the browser's cookies other than rcanvas' own,
and its Host, never reach the upstream; an answer over the size limit is a 502."""

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import rcanvas
from wsraw import RawWS, decode_png, parse_frame

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
TOKEN = "nbtoken0123456789abcdef0123456789"

FLAVOURS = {
    "notebook": ("notebook", "import notebook.notebookapp", "NotebookApp", "nbserver_extensions",
                 "jupyter_notebook_config.json"),
    "jupyter_server": ("jupyter_server", "import jupyter_server.serverapp", "ServerApp", "jpserver_extensions",
                       "jupyter_server_config.json"),
}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def fetch(url, headers=None):
    """(status, headers, body) of a GET, redirects not followed, errors as answers."""
    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.fixture(scope="module", params=sorted(FLAVOURS))
def nbserver(request, tmp_path_factory):
    module, probe, app, trait, config = FLAVOURS[request.param]
    r = subprocess.run([PY, "-c", probe], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"{module} is not installed for {PY} ({r.stderr.strip().splitlines()[-1]}): apt-get install "
                    f"python3-notebook python3-jupyter-server (make test-python does)")
    d = tmp_path_factory.mktemp(request.param)
    ports_dir = d / "ports"
    ports_dir.mkdir(mode=0o700)
    for sub in ("runtime", "config", "data"):
        (d / sub).mkdir()
    (d / "config" / config).write_text(json.dumps({app: {trait: {"rcanvas.jupyter": True}}}))
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), RCANVAS_JUPYTER_PORTS=str(ports_dir),
               JUPYTER_RUNTIME_DIR=str(d / "runtime"), JUPYTER_CONFIG_DIR=str(d / "config"),
               JUPYTER_DATA_DIR=str(d / "data"))
    env.pop("RCANVAS_JUPYTER_PROXY", None)
    args = [PY, "-m", module, "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
            f"--{app}.token={TOKEN}", f"--{app}.root_dir={d}" if module == "jupyter_server" else f"--notebook-dir={d}"]
    if os.getuid() == 0:
        args.append("--allow-root")
    log = open(d / "server.log", "w+")
    proc = subprocess.Popen(args, env=env, cwd=d, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    t0 = time.time()
    cookie = None
    while time.time() - t0 < 60:
        assert proc.poll() is None, f"{module} exited: {(d / 'server.log').read_text()}"
        try:
            status, headers, _ = fetch(f"{base}/api/status?token={TOKEN}")
            if status == 200:
                cookie = "; ".join(c.split(";", 1)[0] for c in headers.get_all("Set-Cookie") or [])
                break
        except OSError:
            pass
        time.sleep(0.2)
    assert cookie and "username-" in cookie, f"no login cookie: {(d / 'server.log').read_text()}"
    yield {"base": base, "port": port, "cookie": cookie, "ports_dir": str(ports_dir), "log": d / "server.log",
           "flavour": request.param}
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def upstream(nbserver):
    """An rcanvas server as a kernel's rcanvas.get_server() makes it under the proxy: base path /rcanvas/PORT,
    its port registered in the extension's folder."""
    port = _free_port()
    s = rcanvas.Server(port=port, base_path=f"/rcanvas/{port}")
    reg = os.path.join(nbserver["ports_dir"], str(port))
    with open(reg, "w") as f:
        f.write(f"{os.getpid()}\n")
    yield s
    s.close()
    os.unlink(reg)


def test_the_page_through_the_proxy(nbserver, upstream):
    p = upstream.port
    c = upstream.canvas("nb")
    url = f"{nbserver['base']}/rcanvas/{p}/c/nb?token={upstream.token}"
    status, headers, body = fetch(url, {"Cookie": nbserver["cookie"]})
    assert status == 200, body[:300]
    assert b"<canvas" in body or b"rcanvas" in body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'self'" in csp, csp
    cookies = headers.get_all("Set-Cookie") or []
    ours = [x for x in cookies if x.startswith(f"rcanvas_token_{p}=")]
    assert len(ours) == 1 and f"Path=/rcanvas/{p}" in ours[0] and "HttpOnly" in ours[0], cookies
    # its script, by the page's relative URL
    status, headers, body = fetch(f"{nbserver['base']}/rcanvas/{p}/client/rcanvas.js?token={upstream.token}",
                                  {"Cookie": nbserver["cookie"]})
    assert status == 200 and b"import" in body and "javascript" in headers["Content-Type"]
    # rcanvas' cookie alone (no ?token=) authenticates the probe, as in the browser after the first page
    status, _, _ = fetch(f"{nbserver['base']}/rcanvas/{p}/c/nb", {"Cookie": nbserver["cookie"] + "; " +
                                                                  ours[0].split(";", 1)[0]})
    assert status == 200
    c.close()
    status, _, _ = fetch(url, {"Cookie": nbserver["cookie"]})
    assert status == 404, "a closed canvas: rcanvas' own 404 passed on"


def test_refusals(nbserver, upstream):
    p, base = upstream.port, nbserver["base"]
    upstream.canvas("nb")
    url = f"{base}/rcanvas/{p}/c/nb?token={upstream.token}"
    # no notebook login: the notebook's own answer (a redirect to its login page, or 403), nothing of rcanvas
    status, headers, body = fetch(url)
    assert status in (302, 403), status
    assert b"rcanvas.js" not in body
    if status == 302:
        assert "/login" in headers["Location"]
    # rcanvas' own token check stays
    status, _, _ = fetch(f"{base}/rcanvas/{p}/c/nb?token=wrong0123456789abcdefghij", {"Cookie": nbserver["cookie"]})
    assert status == 403
    status, _, _ = fetch(f"{base}/rcanvas/{p}/c/nb", {"Cookie": nbserver["cookie"]})
    assert status == 401


class _Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.endswith("/big"):
            body = b"x" * (17 << 20)
        else:
            body = json.dumps({"path": self.path, "headers": dict(self.headers)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Set-Cookie", "other=1; Path=/")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def echo():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_only_registered_ports_of_live_processes(nbserver, echo):
    base, cookie = nbserver["base"], nbserver["cookie"]
    # another local web server, not registered: not served on the notebook's origin
    status, _, body = fetch(f"{base}/rcanvas/{echo}/x", {"Cookie": cookie})
    assert status == 404 and b"headers" not in body
    reg = os.path.join(nbserver["ports_dir"], str(echo))
    # registered by a process that has exited
    dead = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout
    with open(reg, "w") as f:
        f.write(dead)
    try:
        status, _, body = fetch(f"{base}/rcanvas/{echo}/x", {"Cookie": cookie})
        assert status == 502 and b"headers" not in body
        # registered by a live process of this user, listening: served
        with open(reg, "w") as f:
            f.write(f"{os.getpid()}\n")
        status, headers, body = fetch(f"{base}/rcanvas/{echo}/x?token=abc",
                                      {"Cookie": cookie + f"; rcanvas_token_{echo}=T0; zzz=1",
                                       "Authorization": "token " + TOKEN})
        assert status == 200, body[:300]
        seen = json.loads(body)
        h = {k.lower(): v for k, v in seen["headers"].items()}
        assert seen["path"] == f"/rcanvas/{echo}/x?token=abc"       # the prefix kept: rcanvas' base path
        assert h["host"] == f"127.0.0.1:{echo}"                      # the upstream's own Host, not the notebook's
        assert h.get("cookie") == f"rcanvas_token_{echo}=T0"         # rcanvas' cookie only: no notebook login
        assert "authorization" not in h
        assert "other=1" not in (headers.get_all("Set-Cookie") or [""])[0], "the upstream's other cookies dropped"
        # over the size limit
        status, _, body = fetch(f"{base}/rcanvas/{echo}/big", {"Cookie": cookie})
        assert status == 502 and len(body) < (1 << 20)
    finally:
        os.unlink(reg)


def _ws(nbserver, path, origin=True, cookie=True):
    headers = {}
    if cookie:
        headers["Cookie"] = nbserver["cookie"]
    if origin is True:
        headers["Origin"] = nbserver["base"]
    elif origin:
        headers["Origin"] = origin
    return RawWS("127.0.0.1", nbserver["port"], path, headers=headers)


def test_websocket_frames_and_events_through_the_proxy(nbserver, upstream):
    p = upstream.port
    c = upstream.canvas("nb", codec="png", refine_ms=0, width=64, height=48)
    c.set_option("rate_adapt", 0)
    path = f"/rcanvas/{p}/c/nb/ws?token={upstream.token}"
    # straight to rcanvas with the notebook's Origin: rcanvas' Origin check refuses it (the proxy's upstream
    # request carries rcanvas' own origin instead, the notebook having checked the browser's)
    # (an rcanvas.v1 client with the right token is told why: accepted and closed at once with 4403, issue 19)
    refused = RawWS("127.0.0.1", p, path, headers={"Origin": nbserver["base"]})
    with pytest.raises(ConnectionError, match=r"close 1133 b'origin not allowed'"):
        refused.recv()
    refused.sock.close()
    ws = _ws(nbserver, path)
    try:
        hello = json.loads(ws.recv())
        assert hello["type"] == "hello" and hello["canvas"] == "nb"
        rng = np.random.default_rng(7)
        a = rng.integers(0, 256, (48, 64, 4), dtype=np.uint8)
        c.request_draw()
        t0 = time.time()
        while not c.wait(1) & rcanvas.WAKE_DRAW:
            assert time.time() - t0 < 20, "no draw due"
        c.present(a)
        pic = np.zeros((48, 64, 3), np.uint8)
        while True:
            msg = ws.recv()
            if isinstance(msg, str):
                continue
            h, payload = parse_frame(msg)
            tile = decode_png(payload)
            pic[h["y"]:h["y"] + h["h"], h["x"]:h["x"] + h["w"]] = tile[..., :3]
            if h["flags"] & 2:
                ws.send_json({"type": "ack", "seq": h["seq"]})
                break
        assert np.array_equal(pic, a[..., :3]), "pixel-exact through the proxy"
        ws.send_json({"event_type": "pointer_down", "x": 12.5, "y": 7.0, "button": 1, "buttons": [1],
                      "modifiers": [], "ntouches": 0, "touches": {}, "time_stamp": 1.0})
        ev = None
        t0 = time.time()
        while ev is None and time.time() - t0 < 10:
            if c.wait(0.5) & rcanvas.WAKE_EVENTS:
                ev = next((e for e in c.poll_events() if e["event_type"] == "pointer_down"), None)
        assert ev and ev["x"] == 12.5 and ev["y"] == 7.0 and ev["button"] == 1, ev
        # the canvas closes: its close code and reason reach the browser through the proxy
        c.close()
        with pytest.raises(ConnectionError, match=r"close 03e9 b'canvas closed'"):
            while True:
                ws.recv()
    finally:
        ws.close()


def test_websocket_refusals(nbserver, upstream):
    p = upstream.port
    upstream.canvas("nb")
    path = f"/rcanvas/{p}/c/nb/ws?token={upstream.token}"
    with pytest.raises(ConnectionError, match="upgrade refused"):
        _ws(nbserver, path, origin="http://evil.example")          # another site's page with the user's cookie
    with pytest.raises(ConnectionError, match="upgrade refused"):
        _ws(nbserver, path, cookie=False)                          # no notebook login
    with pytest.raises(ConnectionError, match="upgrade refused.*403"):
        _ws(nbserver, f"/rcanvas/{p}/c/nb/ws?token=wrong0123456789abcdefghij")   # rcanvas' token check
    with pytest.raises(ConnectionError, match="upgrade refused.*404"):
        _ws(nbserver, f"/rcanvas/{p}/c/other/ws?token={upstream.token}")          # no such canvas
