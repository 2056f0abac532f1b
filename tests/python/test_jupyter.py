# SPDX-License-Identifier: MIT
"""rcanvas.jupyter, the notebook server extension that proxies the kernels' rcanvas servers through the notebook
server's port, against Debian 12's Notebook 6.4 and jupyter_server (1.23 from Debian, 2.x when
RCANVAS_TEST_JUPYTER_PYTHON names a Python that has it; each skips, saying why, when not installed). An rcanvas
server of this process registers its port as a kernel's does; through the proxy: the page (rcanvas' CSP plus
frame-ancestors 'self', rcanvas' 303 and its rcanvas_s cookie passed back unchanged), a pixel-exact PNG frame over
the proxied WebSocket and an event back, the close code passed on.

Refused: no notebook login, a cross-site Origin, a wrong rcanvas token (rcanvas' own 403), a port no kernel
registered (another local web server is not served), a registered port whose process is gone, a zombie (a
killed kernel not yet reaped) or does not hold the port's listening socket itself (whatever took the port is not
served); a ports folder that is a symlink, writable or readable by others, another user's, or under a folder
others can write to; a registration file that is a symlink. The browser's cookies other than rcanvas_s, the
notebook's token and _xsrf in the query, its Authorization and its Host never reach the upstream; no token
reaches the notebook server's log; an answer over the size limit is a 502.

Per viewer: a flooding viewer yields to the others and is held to what the sockets buffer (its upstream not
reading); a stalled upstream delays only its own pages; a viewer that answers no ping is dropped after the idle
timeout (short ones for the test) and its rcanvas connection closed, one that answers stays.

Every test is bounded: an alarm per test (when pytest-timeout is not there) and a timeout on every wait."""

import base64
import hashlib
import http.server
import json
import os
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
import pytest

import rcanvas
from rcanvas import _kernel, jupyter
from wsraw import RawWS, decode_png, parse_frame

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
# the Python that runs the notebook server (a venv with jupyter_server 2.x, say); the tests themselves run on PY
SERVER_PY = os.environ.get("RCANVAS_TEST_JUPYTER_PYTHON") or PY
TOKEN = "nbtoken0123456789abcdef0123456789"
TEST_LIMIT_S = 150

FLAVOURS = {
    "notebook": ("notebook", "import notebook.notebookapp", "NotebookApp", "nbserver_extensions",
                 "jupyter_notebook_config.json"),
    "jupyter_server": ("jupyter_server", "import jupyter_server.serverapp", "ServerApp", "jpserver_extensions",
                       "jupyter_server_config.json"),
}


@pytest.fixture(autouse=True)
def _time_limit(request):
    """Each test ends within TEST_LIMIT_S: pytest-timeout's when installed, else SIGALRM raising in the test."""
    if request.config.pluginmanager.hasplugin("timeout"):
        yield
        return

    def over(*_):
        raise TimeoutError(f"over the test's time limit of {TEST_LIMIT_S} s")

    old = signal.signal(signal.SIGALRM, over)
    signal.alarm(TEST_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def fetch(url, headers=None, timeout=30):
    """(status, headers, body) of a GET, redirects not followed, errors as answers."""
    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def browse(url, cookie):
    """A GET as a browser makes it: redirects followed (at most 3, relative Locations resolved), the cookies set
    on the way kept. (status, headers, body, cookies set, the last URL)."""
    set_cookies = []
    for _ in range(4):
        jar = "; ".join([cookie] + [c.split(";", 1)[0] for c in set_cookies])
        status, headers, body = fetch(url, {"Cookie": jar})
        set_cookies += headers.get_all("Set-Cookie") or []
        if status not in (301, 302, 303, 307, 308):
            return status, headers, body, set_cookies, url
        url = urllib.parse.urljoin(url, headers["Location"])
    raise AssertionError(f"redirected more than 3 times, to {url}")


def _register(ports_dir, port, pid):
    path = os.path.join(ports_dir, str(port))
    with open(path, "w") as f:
        f.write(f"{pid}\n")
    return path


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class _NbServer:
    """A notebook server (flavour: notebook or jupyter_server) with rcanvas.jupyter on, on 127.0.0.1 with the
    token TOKEN, its ports folder in d, env_extra in its environment; stop() ends it."""

    def __init__(self, flavour, d, env_extra=None):
        module, probe, app, trait, config = FLAVOURS[flavour]
        r = subprocess.run([SERVER_PY, "-c", probe], capture_output=True, text=True, timeout=60)
        if r.returncode:
            pytest.skip(f"{module} is not installed for {SERVER_PY} ({r.stderr.strip().splitlines()[-1]}): "
                        "apt-get install python3-notebook python3-jupyter-server (make test-python does)")
        ports_dir = d / "ports"
        ports_dir.mkdir(mode=0o700)
        os.chmod(ports_dir, 0o700)
        for sub in ("runtime", "config", "data"):
            (d / sub).mkdir()
        (d / "config" / config).write_text(json.dumps({app: {trait: {"rcanvas.jupyter": True}}}))
        self.port = _free_port()
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), RCANVAS_JUPYTER_PORTS=str(ports_dir),
                   JUPYTER_RUNTIME_DIR=str(d / "runtime"), JUPYTER_CONFIG_DIR=str(d / "config"),
                   JUPYTER_DATA_DIR=str(d / "data"), **(env_extra or {}))
        env.pop("RCANVAS_JUPYTER_PROXY", None)
        args = [SERVER_PY, "-m", module, "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
                "--port-retries=0", f"--{app}.token={TOKEN}",
                f"--{app}.root_dir={d}" if module == "jupyter_server" else f"--notebook-dir={d}"]
        if os.getuid() == 0:
            args.append("--allow-root")
        self.log = d / "server.log"
        self._logf = open(self.log, "w+")
        self.proc = subprocess.Popen(args, env=env, cwd=d, stdout=self._logf, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        self.ports_dir = str(ports_dir)
        self.flavour = flavour
        self.cookie = None
        try:
            t0 = time.time()
            while time.time() - t0 < 60:
                assert self.proc.poll() is None, f"{module} exited: {self.log.read_text()}"
                try:
                    status, headers, _ = fetch(f"{self.base}/api/status?token={TOKEN}", timeout=5)
                    if status == 200:
                        self.cookie = "; ".join(c.split(";", 1)[0] for c in headers.get_all("Set-Cookie") or [])
                        break
                except OSError:
                    pass
                time.sleep(0.2)
            assert self.cookie and "username-" in self.cookie, f"no login cookie: {self.log.read_text()}"
            assert "rcanvas.jupyter: serving" in self.log.read_text(), self.log.read_text()
        except BaseException:
            self.stop()
            raise

    def __getitem__(self, k):   # the dict the tests were written against
        return getattr(self, k)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._logf.close()


@pytest.fixture(scope="module", params=sorted(FLAVOURS))
def nbserver(request, tmp_path_factory):
    s = _NbServer(request.param, tmp_path_factory.mktemp(request.param))
    yield s
    s.stop()


@pytest.fixture
def upstream(nbserver):
    """An rcanvas server as a kernel's rcanvas.get_server() makes it under the proxy: base path /rcanvas/PORT,
    its port registered in the extension's folder."""
    port = _free_port()
    s = rcanvas.Server(port=port, base_path=f"/rcanvas/{port}")
    reg = _register(nbserver["ports_dir"], port, os.getpid())
    try:
        yield s
    finally:
        s.close()
        _unlink(reg)


def test_the_page_through_the_proxy(nbserver, upstream):
    """The page with ?token= through the proxy, as a browser follows it (rcanvas' 303 into s/<R>/ with its
    cookie): rcanvas' page with rcanvas' CSP plus frame-ancestors 'self'; its script by the page's relative
    URL; a closed canvas is rcanvas' own 404."""
    p = upstream.port
    c = upstream.canvas("nb")
    url = f"{nbserver['base']}/rcanvas/{p}/c/nb?token={upstream.token}"
    status, headers, body, got, last = browse(url, nbserver["cookie"])
    assert status == 200, body[:300]
    assert b"<canvas" in body and b'src="../client/rcanvas.js"' in body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'self'" in csp, csp
    # its script, by the page's relative URL, with the cookies the browser got on the way
    jar = "; ".join([nbserver["cookie"]] + [c.split(";", 1)[0] for c in got])
    status, headers, body, _, _ = browse(urllib.parse.urljoin(last, "../client/rcanvas.js"), jar)
    assert status == 200 and b"import" in body and "javascript" in headers["Content-Type"]
    c.close()
    status, _, _, _, _ = browse(url, nbserver["cookie"])
    assert status == 404, "a closed canvas: rcanvas' own 404 passed on"


def test_rcanvas_session_cookie_through_the_proxy(nbserver, upstream):
    """rcanvas' ?token= answer: 303 with a relative Location into s/<R>/ and the cookie rcanvas_s with
    Path=/rcanvas/PORT/s/<R>/, both passed back unchanged; that cookie alone (no ?token=) then authenticates the
    page under s/<R>/, and is all of the browser's cookies that reaches rcanvas."""
    p = upstream.port
    upstream.canvas("nb")
    status, headers, body = fetch(f"{nbserver['base']}/rcanvas/{p}/c/nb?token={upstream.token}",
                                  {"Cookie": nbserver["cookie"]})
    if status == 200:
        pytest.skip("this build's librcanvas.so answers ?token= with its page, not rcanvas' 303 and rcanvas_s "
                    "cookie (the C server's cookie change is not in it yet)")
    assert status == 303, (status, body[:300])
    loc = headers["Location"]
    assert "://" not in loc and not loc.startswith("/") and "s/" in loc, loc     # relative, as rcanvas gave it
    secret = loc.split("s/", 1)[1].split("/")[0]
    cookies = headers.get_all("Set-Cookie") or []
    ours = [x for x in cookies if x.startswith("rcanvas_s=")]
    assert len(ours) == 1 and f"Path=/rcanvas/{p}/s/{secret}/" in ours[0] and "HttpOnly" in ours[0], cookies
    assert all(x.startswith("rcanvas_s=") for x in cookies), cookies
    target = urllib.parse.urljoin(f"{nbserver['base']}/rcanvas/{p}/c/nb", loc)
    status, _, body = fetch(target, {"Cookie": nbserver["cookie"] + "; " + ours[0].split(";", 1)[0]})
    assert status == 200, body[:300]
    status, _, _ = fetch(target, {"Cookie": nbserver["cookie"]})
    assert status in (401, 403), "without rcanvas' cookie: refused by rcanvas"


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
    """A local web server: answers with what it received (path, headers) as JSON; .../big over the proxy's size
    limit; .../missing a 404; .../redirect rcanvas' answer to ?token= (303 into s/<R>/, its cookie and
    another)."""

    def do_GET(self):
        status, extra = 200, []
        if self.path.endswith("/big"):
            body = b"x" * (17 << 20)
        else:
            body = json.dumps({"path": self.path, "headers": dict(self.headers)}).encode()
        if "/missing" in self.path:
            status = 404
        if "/redirect" in self.path:
            status = 303
            port = self.server.server_address[1]
            extra = [("Location", "s/Rsecret0123/c/nb"),
                     ("Set-Cookie", f"rcanvas_s=sess0123; Path=/rcanvas/{port}/s/Rsecret0123/; HttpOnly; "
                                    "SameSite=Strict"),
                     ("Set-Cookie", "rcanvas_s_other=1; Path=/")]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Set-Cookie", "other=1; Path=/")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def _serve_echo(port=0):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Echo)
    srv.daemon_threads = True
    srv.handle_error = lambda *a: None     # a client gone mid-answer (the 17 MiB one): not a test failure
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.fixture
def echo():
    srv = _serve_echo()
    try:
        yield srv.server_address[1]
    finally:
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
        # registered by a live process of this user that listens there itself: served
        _register(nbserver["ports_dir"], echo, os.getpid())
        status, headers, body = fetch(f"{base}/rcanvas/{echo}/x?token=abc",
                                      {"Cookie": cookie + "; rcanvas_s=T0; zzz=1",
                                       "Authorization": "token " + TOKEN})
        assert status == 200, body[:300]
        seen = json.loads(body)
        h = {k.lower(): v for k, v in seen["headers"].items()}
        assert seen["path"] == f"/rcanvas/{echo}/x?token=abc"       # the prefix kept: rcanvas' base path
        assert h["host"] == f"127.0.0.1:{echo}"                      # the upstream's own Host, not the notebook's
        assert h.get("cookie") == "rcanvas_s=T0"                     # rcanvas' cookie only: no notebook login
        assert "authorization" not in h
        assert not any("other=1" in x for x in headers.get_all("Set-Cookie") or []), "the upstream's other cookies"
        # over the size limit
        status, _, body = fetch(f"{base}/rcanvas/{echo}/big", {"Cookie": cookie})
        assert status == 502 and len(body) < (1 << 20)
    finally:
        _unlink(reg)


def test_cookies_redirects_and_the_notebook_token(nbserver, echo):
    """Passed on: only the browser's rcanvas_s cookie (not the notebook's login cookie, its _xsrf, nor the
    old per-port rcanvas cookie), the query less the notebook's token and _xsrf (rcanvas' own token= stays).
    Passed back unchanged: a 303 with its relative Location and the rcanvas_s Set-Cookie, no other cookie. A
    login to the notebook by ?token= on a proxied URL works, and the token does not reach the upstream."""
    base, cookie = nbserver["base"], nbserver["cookie"]
    reg = _register(nbserver["ports_dir"], echo, os.getpid())
    try:
        jar = cookie + f"; _xsrf=2|abc|def|1; rcanvas_token_{echo}=old; rcanvas_s=sess0123; rcanvas_s_x=1"
        status, _, body = fetch(f"{base}/rcanvas/{echo}/x?a=1&token=rc0123&_xsrf=xs0123&b=%20", {"Cookie": jar})
        assert status == 200, body[:300]
        seen = json.loads(body)
        h = {k.lower(): v for k, v in seen["headers"].items()}
        assert h.get("cookie") == "rcanvas_s=sess0123"
        assert seen["path"] == f"/rcanvas/{echo}/x?a=1&token=rc0123&b=%20"
        # the notebook's token in the query: the login (no cookie) is the notebook's; rcanvas does not see it
        status, _, body = fetch(f"{base}/rcanvas/{echo}/x?token={TOKEN}&c=3")
        assert status == 200, body[:300]
        seen = json.loads(body)
        assert seen["path"] == f"/rcanvas/{echo}/x?c=3" and TOKEN not in json.dumps(seen)
        # rcanvas' answer to ?token=: 303, relative Location and its cookie passed back as they are
        status, headers, _ = fetch(f"{base}/rcanvas/{echo}/redirect?token=rc0123", {"Cookie": cookie})
        assert status == 303
        assert headers["Location"] == "s/Rsecret0123/c/nb"
        assert headers.get_all("Set-Cookie") == [f"rcanvas_s=sess0123; Path=/rcanvas/{echo}/s/Rsecret0123/; "
                                                 "HttpOnly; SameSite=Strict"]
    finally:
        _unlink(reg)


def test_cookie_and_query_filters():
    """The filters themselves: rcanvas_s only (exact name, each one), the notebook's token and _xsrf dropped
    from the query (compared with the notebook's token: another token= stays), Locations that stay on this
    origin passed, others not; redact() hides every token, _xsrf and the s/<R>/ segment."""
    assert jupyter._only_rcanvas_cookie("username-x=1; rcanvas_s=A; _xsrf=2; rcanvas_s2=3; rcanvas_token_80=4") \
        == "rcanvas_s=A"
    assert jupyter._only_rcanvas_cookie(None) == ""
    assert jupyter._upstream_query("token=NB&x=1&_xsrf=3&token=RC&%5Fxsrf=4", "NB") == "x=1&token=RC"
    assert jupyter._upstream_query("token=NB", "") == "token=NB", "no notebook token: nothing to tell apart"
    assert [jupyter._safe_location(x) for x in ("s/R/c/nb", "/rcanvas/1/c/x", "//evil", "/\\evil", "http://h/",
                                                "\\\\evil", "")] == [True, True, False, False, False, False, False]
    r = jupyter.redact("/rcanvas/8000/s/Rsecret/c/nb?token=T1&a=1&_xsrf=X&view_token=V")
    assert "T1" not in r and "Rsecret" not in r and "X" not in r.split("a=1")[1] and "V" not in r.split("a=1")[1]
    assert r == "/rcanvas/8000/s/[redacted]/c/nb?token=[redacted]&a=1&_xsrf=[redacted]&view_token=[redacted]"
    # a widget's WebSocket through the proxy carries the session key: as secret as a token while its server lives
    assert jupyter.redact("/rcanvas/8000/s/R1/c/nb/ws?session=S1&codecs=png") == \
        "/rcanvas/8000/s/[redacted]/c/nb/ws?session=[redacted]&codecs=png"


def _wait_log(nbserver, offset, pred, timeout=20):
    t0 = time.time()
    while True:
        text = nbserver["log"].read_text(errors="replace")[offset:]
        if pred(text) or time.time() - t0 > timeout:
            return text
        time.sleep(0.1)


def _hidden(text):
    # ours, and jupyter_server 2's own scrubbing of token= (which then replaces ours)
    return text.count("[redacted]") + text.count("[secret]")


def test_no_token_in_the_log(nbserver, upstream, echo):
    """The notebook server's log lines of proxied requests (302 to the login, rcanvas' 403, 404 of a port no
    kernel registered, 502 of a kernel gone, 404 with a Referer) hold no rcanvas token, no notebook token, no
    _xsrf: the handler's lines show [redacted]."""
    p, base, cookie = upstream.port, nbserver["base"], nbserver["cookie"]
    upstream.canvas("nb")
    offset = len(nbserver["log"].read_text(errors="replace"))
    secrets = [upstream.token, TOKEN, "wrong0123456789abcdefghij", "xsrf0123456789", "rcsecret0123456789"]
    reg = None
    try:
        assert fetch(f"{base}/rcanvas/{p}/c/nb?token={upstream.token}")[0] in (302, 403)
        assert fetch(f"{base}/rcanvas/{p}/c/nb?token=wrong0123456789abcdefghij", {"Cookie": cookie})[0] == 403
        assert fetch(f"{base}/rcanvas/{echo}/x?token={upstream.token}", {"Cookie": cookie})[0] == 404
        dead = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout
        reg = os.path.join(nbserver["ports_dir"], str(echo))
        with open(reg, "w") as f:
            f.write(dead)
        assert fetch(f"{base}/rcanvas/{echo}/x?token=rcsecret0123456789", {"Cookie": cookie})[0] == 502
        _register(nbserver["ports_dir"], echo, os.getpid())
        status, _, body = fetch(f"{base}/rcanvas/{echo}/missing?token={TOKEN}&_xsrf=xsrf0123456789",
                                {"Referer": f"{base}/rcanvas/{p}/c/nb?token={upstream.token}"})
        assert status == 404
        text = _wait_log(nbserver, offset, lambda t: _hidden(t) >= 5 and "/missing" in t)
    finally:
        if reg:
            _unlink(reg)
    assert _hidden(text) >= 5, text
    for code in ("302", "403", "404", "502"):
        assert any(code in ln and "/rcanvas/" in ln for ln in text.splitlines()), (code, text)
    for s in secrets:
        assert s not in text, f"{s} in the log:\n{text}"


# ---- whose port: the registering process, alive, holding the listening socket itself ------------------------

CHILD_LISTENS = ("import socket, sys\n"
                 "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                 "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
                 "print(s.getsockname()[1], flush=True)\n"
                 "sys.stdin.readline()\n")


def _listening_child(port=0):
    proc = subprocess.Popen([PY, "-c", CHILD_LISTENS, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    ready = select.select([proc.stdout], [], [], 20)[0]
    assert ready, "the child did not listen"
    return proc, int(proc.stdout.readline())


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _end(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the socket check reads Linux's /proc")
def test_a_zombie_kernels_port_taken_by_another_process_is_refused(nbserver):
    """A kernel that registered its port and exited (a zombie: not yet reaped, so kill(pid, 0) still answers)
    while another process of the same user listens on that port: refused (502), that server never served."""
    base, cookie = nbserver["base"], nbserver["cookie"]
    child, port = _listening_child()
    reg = _register(nbserver["ports_dir"], port, child.pid)
    srv = None
    try:
        assert jupyter.port_refusal(port, nbserver["ports_dir"]) is None, "alive and listening: served"
        child.stdin.write("\n")
        child.stdin.flush()
        t0 = time.time()
        while _state(child.pid) != "Z":
            assert time.time() - t0 < 20, f"no zombie: {_state(child.pid)!r}"
            time.sleep(0.05)
        os.kill(child.pid, 0)            # what the proxy asked before: a zombie answers it
        srv = _serve_echo(port)          # another process (this one) takes the port
        code, why = jupyter.port_refusal(port, nbserver["ports_dir"])
        assert code == 502 and "has exited" in why, why
        status, _, body = fetch(f"{base}/rcanvas/{port}/x", {"Cookie": cookie})
        assert status == 502 and b"headers" not in body, (status, body[:200])
    finally:
        _unlink(reg)
        _end(child)
        if srv:
            srv.shutdown()
            srv.server_close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the socket check reads Linux's /proc")
def test_a_port_held_by_another_process_than_its_registrant_is_refused(nbserver):
    """The registering process alive, but the socket listening on the port is another process's: refused
    (404); the same port registered by the process that listens: served; nothing listening there: 502."""
    child, port = _listening_child()
    d = nbserver["ports_dir"]
    try:
        _register(d, port, os.getpid())
        code, why = jupyter.port_refusal(port, str(d))
        assert code == 404 and "another process" in why, why
        status, _, _ = fetch(f"{nbserver['base']}/rcanvas/{port}/x", {"Cookie": nbserver["cookie"]})
        assert status == 404
        _register(d, port, child.pid)
        assert jupyter.port_refusal(port, str(d)) is None
        # nothing listening on a registered port: 502
        child.stdin.write("\n")
        child.stdin.flush()
        child.wait(10)
        _register(d, port, os.getpid())
        code, why = jupyter.port_refusal(port, str(d))
        assert code == 502 and "nothing listens" in why, why
    finally:
        _unlink(os.path.join(d, str(port)))
        _end(child)


# ---- the ports folder -----------------------------------------------------------------------------------------

@pytest.fixture
def ports_tmp(tmp_path):
    d = tmp_path / "ports"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    return d


def _other_owner(monkeypatch, path):
    """path owned by another uid: chown when root, else os.fstat/os.stat/os.lstat answer so for it."""
    if os.getuid() == 0:
        os.chown(path, 65534, 65534)
        return
    real = os.fstat(os.open(path, os.O_RDONLY)).st_ino

    def fake(st):
        if st.st_ino != real:
            return st
        fields = list(st)
        fields[stat.ST_UID] = os.getuid() + 1
        return os.stat_result(fields)

    for name in ("fstat", "stat", "lstat"):
        f = getattr(os, name)
        monkeypatch.setattr(os, name, lambda *a, _f=f, **k: fake(_f(*a, **k)))


def test_ports_folder_checks(tmp_path, ports_tmp, monkeypatch):
    """open_ports_dir (used by the extension and by a kernel's register_port) takes a folder of this user, mode
    0700, reached through no folder another user can write to, and refuses, saying why: a symlink to such a
    folder, a folder group- or other-writable or readable, one of another uid, one inside an other-writable
    (not sticky) folder, a missing one."""
    fd = _kernel.open_ports_dir(str(ports_tmp))
    os.close(fd)
    link = tmp_path / "link"
    link.symlink_to(ports_tmp)
    with pytest.raises(_kernel.PortsDirError, match="symlink"):
        _kernel.open_ports_dir(str(link))
    for mode in (0o720, 0o702, 0o750):
        os.chmod(ports_tmp, mode)
        with pytest.raises(_kernel.PortsDirError, match=f"mode {mode:04o}.*chmod 700"):
            _kernel.open_ports_dir(str(ports_tmp))
    os.chmod(ports_tmp, 0o700)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    (open_dir / "ports").mkdir(mode=0o700)
    with pytest.raises(_kernel.PortsDirError, match="writable by others"):
        _kernel.open_ports_dir(str(open_dir / "ports"))
    os.chmod(open_dir, 0o1777)          # sticky, as /tmp: no one else may rename this user's entry there
    os.close(_kernel.open_ports_dir(str(open_dir / "ports")))
    with pytest.raises(_kernel.PortsDirError, match="No such file"):
        _kernel.open_ports_dir(str(tmp_path / "nowhere"))
    with monkeypatch.context() as m:
        _other_owner(m, ports_tmp)
        with pytest.raises(_kernel.PortsDirError, match="not by this user"):
            _kernel.open_ports_dir(str(ports_tmp))


def test_the_extension_refuses_a_symlinked_ports_folder(tmp_path, ports_tmp, monkeypatch):
    """The extension refuses to load with a RCANVAS_JUPYTER_PORTS that is a symlink (another user could swap
    it), before adding any handler or telling the kernels anything."""
    link = tmp_path / "link"
    link.symlink_to(ports_tmp)
    monkeypatch.setattr(jupyter, "_ports", None)
    monkeypatch.setenv("RCANVAS_JUPYTER_PORTS", str(link))
    monkeypatch.delenv("RCANVAS_JUPYTER_PROXY", raising=False)

    class App:
        class web_app:
            settings = {"base_url": "/"}

            @staticmethod
            def add_handlers(*a):
                raise AssertionError("a handler added")

    with pytest.raises(_kernel.PortsDirError, match="symlink"):
        jupyter.load_jupyter_server_extension(App)
    assert "RCANVAS_JUPYTER_PROXY" not in os.environ and jupyter._ports is None


def test_a_swapped_ports_folder_is_not_followed(tmp_path, ports_tmp, echo):
    """The extension reads registrations through the descriptor of the folder it checked: when its path is
    later swapped for a symlink to a folder that registers another local server, that server is not served;
    and a registration file that is a symlink is not followed either."""
    fd = _kernel.open_ports_dir(str(ports_tmp))
    try:
        evil = tmp_path / "evil"
        evil.mkdir(mode=0o700)
        _register(evil, echo, os.getpid())
        assert jupyter.port_refusal(echo, str(evil)) is None, "registered there: it would be served"
        os.rename(ports_tmp, tmp_path / "was")
        os.symlink(evil, ports_tmp)
        code, _ = jupyter.port_refusal(echo, fd)
        assert code == 404
        code, why = jupyter.port_refusal(echo, str(ports_tmp))
        assert code == 404 and "symlink" in why
        # in the folder the extension holds: a symlink to a good registration file
        os.symlink(evil / str(echo), tmp_path / "was" / str(echo))
        code, _ = jupyter.port_refusal(echo, fd)
        assert code == 404
    finally:
        os.close(fd)


@pytest.fixture
def kernel_env(monkeypatch, ports_tmp):
    monkeypatch.setenv("RCANVAS_JUPYTER_PORTS", str(ports_tmp))
    return monkeypatch


def test_register_port_refuses_what_another_user_could_change(tmp_path, ports_tmp, kernel_env):
    """A kernel's register_port writes its pid only into a folder that open_ports_dir accepts: through a
    symlinked folder it writes nothing (PortsDirError, the target folder left empty), likewise into a group-
    writable one or another user's; a registration file that is a symlink is replaced, never written through;
    unregister_port removes only this process's registration."""
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    kernel_env.setenv("RCANVAS_JUPYTER_PORTS", str(link))
    with pytest.raises(_kernel.PortsDirError, match="symlink"):
        _kernel.register_port(20001)
    assert os.listdir(target) == []
    kernel_env.setenv("RCANVAS_JUPYTER_PORTS", str(ports_tmp))
    os.chmod(ports_tmp, 0o770)
    with pytest.raises(_kernel.PortsDirError, match="mode 0770"):
        _kernel.register_port(20001)
    assert os.listdir(ports_tmp) == []
    os.chmod(ports_tmp, 0o700)
    with kernel_env.context() as m:
        _other_owner(m, ports_tmp)
        with pytest.raises(_kernel.PortsDirError, match="not by this user"):
            _kernel.register_port(20001)
    if os.getuid() == 0:
        os.chown(ports_tmp, 0, 0)
    assert os.listdir(ports_tmp) == []
    # a registration file that is a symlink (to a file of this user's elsewhere)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (ports_tmp / "20002").symlink_to(victim)
    path = _kernel.register_port(20002)
    assert victim.read_text() == "keep\n"
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert open(path).read().split() == [str(os.getpid())]
    # a stale registration of another pid: replaced; unregistering leaves another process's registration
    _register(ports_tmp, 20003, 1)
    path = _kernel.register_port(20003)
    assert open(path).read().split() == [str(os.getpid())]
    _kernel.unregister_port(path)
    assert not os.path.exists(path)
    _register(ports_tmp, 20003, 1)
    _kernel.unregister_port(path)
    assert os.path.exists(path), "another process's registration stays"


# ---- WebSocket ------------------------------------------------------------------------------------------------

def _ws(nbserver, path, origin=True, cookie=True, timeout=10):
    headers = {}
    if cookie:
        headers["Cookie"] = nbserver["cookie"]
    if origin is True:
        headers["Origin"] = nbserver["base"]
    elif origin:
        headers["Origin"] = origin
    return RawWS("127.0.0.1", nbserver["port"], path, headers=headers, timeout=timeout)


def test_websocket_frames_and_events_through_the_proxy(nbserver, upstream):
    p = upstream.port
    c = upstream.canvas("nb", codec="png", refine_ms=0, width=64, height=48)
    c.set_option("rate_adapt", 0)
    path = f"/rcanvas/{p}/c/nb/ws?token={upstream.token}"
    # straight to rcanvas with the notebook's Origin: rcanvas' Origin check refuses it (the proxy's upstream
    # request carries rcanvas' own origin instead, the notebook having checked the browser's); an rcanvas.v1
    # client with the right token is told why: accepted and closed at once
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


class FakeUpstream:
    """A WebSocket server in a thread of this process (so its port is registered with this pid, as a kernel's):
    /rcanvas/PORT/sink reads and counts every message, /rcanvas/PORT/tick sends "tick N" every 20 ms,
    /rcanvas/PORT/quiet sends nothing; opens and closes counted."""

    def __init__(self):
        import asyncio

        from tornado import httpserver, netutil, web, websocket
        from tornado.ioloop import IOLoop, PeriodicCallback

        owner = self
        self.handlers = set()
        self.opened = self.closed = self.received = 0
        self.lock = threading.Lock()

        class H(websocket.WebSocketHandler):
            def check_origin(self, origin):
                return True

            def select_subprotocol(self, subprotocols):
                return subprotocols[0] if subprotocols else None

            def open(self, kind):
                self.cb, self.n = None, 0
                owner.handlers.add(self)
                with owner.lock:
                    owner.opened += 1
                if kind == "tick":
                    self.cb = PeriodicCallback(self.tick, 20)
                    self.cb.start()

            def tick(self):
                self.n += 1
                try:
                    self.write_message(f"tick {self.n}")
                except websocket.WebSocketClosedError:
                    self.cb.stop()

            def on_message(self, message):
                with owner.lock:
                    owner.received += 1

            def on_close(self):
                owner.handlers.discard(self)
                if self.cb:
                    self.cb.stop()
                with owner.lock:
                    owner.closed += 1

        ready = threading.Event()

        def run():
            asyncio.set_event_loop(asyncio.new_event_loop())
            self.io = IOLoop.current()
            socks = netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
            self.port = socks[0].getsockname()[1]
            server = httpserver.HTTPServer(web.Application([(r"/rcanvas/\d+/(\w+)", H)]))
            server.add_sockets(socks)
            ready.set()
            self.io.start()
            server.stop()
            self.io.close(all_fds=True)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(20)

    def stop(self):
        import asyncio

        async def close_all():
            for h in list(self.handlers):
                h.close()
            for _ in range(50):             # their close handshakes, or the 5 s tornado gives them cut short
                if not self.handlers:
                    break
                await asyncio.sleep(0.02)
            self.io.stop()

        self.io.add_callback(close_all)
        self.thread.join(20)


def _ws_frame(payload, opcode):
    """A masked client frame with a zero mask key (the payload goes as it is, RFC 6455 allows any key)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + b"\0\0\0\0" + payload


def test_a_flooding_viewer_does_not_hold_up_another(nbserver):
    """One proxied viewer floods pointer_moves (as fast as its socket takes them, its upstream reading them all)
    while a second proxied viewer receives its upstream's ticks: the second's 30 ticks all arrive while the
    flood is still going (a count of messages, not a rate), and the flood's messages reach the upstream."""
    up, other = FakeUpstream(), FakeUpstream()    # two kernels' servers (loops of their own)
    regs = [_register(nbserver["ports_dir"], u.port, os.getpid()) for u in (up, other)]
    flooder = viewer = None
    done, stop = threading.Event(), threading.Event()
    sent = [0]
    try:
        flooder = _ws(nbserver, f"/rcanvas/{up.port}/sink")
        viewer = _ws(nbserver, f"/rcanvas/{other.port}/tick", timeout=60)
        move = json.dumps({"event_type": "pointer_move", "x": 10.5, "y": 20.25, "buttons": [], "modifiers": [],
                           "ntouches": 0, "touches": {}, "time_stamp": 1.0}).encode()
        chunk = _ws_frame(move, 1) * 2000
        cap = 96 << 20

        def flood():
            try:
                while not stop.is_set() and sent[0] < cap:
                    flooder.sock.sendall(chunk)
                    sent[0] += len(chunk)
            except OSError:
                pass
            finally:
                done.set()

        assert viewer.recv().startswith("tick")
        t = threading.Thread(target=flood, daemon=True)
        t.start()
        t0 = time.time()
        while up.received < 2000 and not done.is_set():
            assert time.time() - t0 < 60, f"{up.received} messages of the flood reached its upstream"
            time.sleep(0.01)
        ticks, during = 0, 0
        while ticks < 30:
            msg = viewer.recv()
            assert msg.startswith("tick"), msg
            ticks += 1
            during += not done.is_set()
        flooding_still = not done.is_set()
        stop.set()
        t.join(30)
        assert not t.is_alive()
        assert flooding_still and during == 30, \
            f"{during} of 30 ticks while the flood went on ({sent[0] >> 20} MiB sent, {up.received} received)"
        assert up.received >= 2000, "the flood reached the upstream"
    finally:
        stop.set()
        for w in (flooder, viewer):
            if w:
                w.close()
        for u in (up, other):
            u.stop()
        for r in regs:
            _unlink(r)


class StalledUpstream:
    """A local server that accepts and never answers (http=True: an HTTP request is read by no one), or, with
    http=False, completes a WebSocket handshake and then reads nothing (its receive buffer small). Its
    connections are kept until stop()."""

    def __init__(self, websocket=False):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.websocket = websocket
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            if self.websocket:
                c.settimeout(10)
                buf = b""
                while b"\r\n\r\n" not in buf:
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
                key = next(ln.split(b":", 1)[1].strip() for ln in buf.split(b"\r\n")
                           if ln.lower().startswith(b"sec-websocket-key:"))
                accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
                c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          b"Sec-WebSocket-Accept: " + accept + b"\r\nSec-WebSocket-Protocol: rcanvas.v1\r\n\r\n")

    def stop(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        for c in self.conns:
            c.close()
        self.thread.join(10)


def test_a_flooding_viewer_is_held_to_a_bounded_queue(nbserver):
    """A viewer floods its proxied WebSocket while its upstream reads nothing: the proxy stops reading the
    viewer (the next message is read once the last one is written upstream), so the flooder's socket blocks
    after at most the sockets' buffers and a message, far below what it tries to send (96 MiB)."""
    up = StalledUpstream(websocket=True)
    reg = _register(nbserver["ports_dir"], up.port, os.getpid())
    ws = None
    try:
        ws = _ws(nbserver, f"/rcanvas/{up.port}/ws")
        ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        ws.sock.setblocking(False)
        frame = _ws_frame(b"\x01" * 65536, 2)
        sent, cap, pending = 0, 96 << 20, b""
        blocked = False
        while sent < cap:
            if not pending:
                pending = frame
            try:
                n = ws.sock.send(pending)
            except BlockingIOError:
                n = 0
            sent += n
            pending = pending[n:]
            if n == 0 and not select.select([], [ws.sock], [], 3)[1]:
                blocked = True       # 3 s without room: the proxy reads no more of this viewer
                break
        assert blocked and sent < (48 << 20), f"{sent >> 20} MiB taken from a viewer whose upstream reads nothing"
    finally:
        if ws:
            ws.close()
        up.stop()
        _unlink(reg)


def test_a_stalled_upstream_delays_only_its_own_pages(nbserver, echo):
    """A registered port whose server accepts and never answers, with 12 requests hanging on it (more than a
    shared client's 10 slots): another registered port's pages are still served (200 from it, not a 502 of a
    queue timeout); the hanging requests end when the stalled server goes."""
    base, cookie = nbserver["base"], nbserver["cookie"]
    stalled = StalledUpstream()
    regs = [_register(nbserver["ports_dir"], stalled.port, os.getpid()),
            _register(nbserver["ports_dir"], echo, os.getpid())]
    results, threads = [], []
    try:
        for i in range(12):
            t = threading.Thread(target=lambda i=i: results.append(
                fetch(f"{base}/rcanvas/{stalled.port}/x{i}", {"Cookie": cookie}, timeout=90)[0]), daemon=True)
            t.start()
            threads.append(t)
        t0 = time.time()
        while len(stalled.conns) < 10:
            assert time.time() - t0 < 30, f"{len(stalled.conns)} connections to the stalled server"
            time.sleep(0.05)
        status, _, body = fetch(f"{base}/rcanvas/{echo}/page", {"Cookie": cookie}, timeout=60)
        assert status == 200 and json.loads(body)["path"] == f"/rcanvas/{echo}/page", (status, body[:300])
        t0 = time.time()
        while len(stalled.conns) < 12:
            assert time.time() - t0 < 30, f"{len(stalled.conns)} of 12 requests reached the stalled server"
            time.sleep(0.05)
    finally:
        stalled.stop()
        for t in threads:
            t.join(60)
        for r in regs:
            _unlink(r)
    assert not any(t.is_alive() for t in threads)
    assert sorted(results) == [502] * 12, results


@pytest.fixture(scope="module", params=sorted(FLAVOURS))
def nbserver_quick_pings(request, tmp_path_factory):
    """A notebook server whose proxy pings every 0.5 s and drops a viewer silent for 2.5 s (rcanvas' 5 s and
    20 s, shortened so that the test runs in seconds)."""
    s = _NbServer(request.param, tmp_path_factory.mktemp(request.param + "-pings"),
                  {"RCANVAS_JUPYTER_PING_INTERVAL": "0.5", "RCANVAS_JUPYTER_IDLE_TIMEOUT": "2.5"})
    yield s
    s.stop()


def test_a_viewer_that_answers_no_ping_is_dropped(nbserver_quick_pings):
    """A proxied viewer that never reads (so never answers a ping) is closed after the idle timeout and its
    upstream connection closed (the rcanvas slot freed); a viewer that reads (answering the pings) stays
    connected for more than two idle timeouts, its messages still flowing."""
    nb = nbserver_quick_pings
    up = FakeUpstream()
    reg = _register(nb.ports_dir, up.port, os.getpid())
    silent = alive = None
    try:
        silent = _ws(nb, f"/rcanvas/{up.port}/quiet")
        alive = _ws(nb, f"/rcanvas/{up.port}/tick", timeout=5)
        t0 = time.time()
        while up.opened < 2:
            assert time.time() - t0 < 20, "the upstream connections were not made"
            time.sleep(0.05)
        # the reader: ticks for over 2 idle timeouts (each recv answers the pings read before it)
        n = 0
        t1 = time.time()
        while time.time() - t1 < 6:
            assert alive.recv().startswith("tick")
            n += 1
        assert n > 10
        # by then the silent one's upstream is closed, and only its
        t0 = time.time()
        while up.closed < 1:
            assert time.time() - t0 < 20, "the silent viewer's upstream was not closed"
            time.sleep(0.05)
        assert up.closed == 1 and up.opened == 2
        # the silent viewer finds its connection closed: pings, maybe a close frame, then the end
        silent.sock.settimeout(10)
        pings = 0
        with pytest.raises((ConnectionError, OSError)):
            while True:
                b0, b1 = silent._read(2)
                silent._read(b1 & 127)
                if b0 & 15 == 9:
                    pings += 1
                elif b0 & 15 == 8:
                    raise ConnectionError("close frame")
        assert pings >= 2, "it was pinged"
        assert alive.recv().startswith("tick"), "the reader is still served"
    finally:
        for w in (silent, alive):
            if w:
                w.close()
        up.stop()
        _unlink(reg)
