# SPDX-License-Identifier: MIT
"""Notebooks that behave: a canvas made again under its name replaces the old one (closed, its viewer
told 1001 "canvas closed", the name served once, a viewer reconnecting finds the new one); close() from another
thread ends a wait() there; rcanvas.get_server()'s environment errors; where the URL goes: stdout outside a
kernel, an IPython display (a link) in a kernel, never a warning on stderr. In a real ipykernel (jupyter_client,
when installed): the cell's outputs, a cell run again (by its code, by the front end's cell id) leaving one
canvas, and the port and tokens the same after a kernel restart."""

import json
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

import rcanvas
from conftest import RENDERCANVAS, ROOT
from wsraw import RawWS

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
HAVE_RC = os.path.isdir(os.path.join(RENDERCANVAS, "rendercanvas"))
LIBRARY = os.environ.get("RCANVAS_LIBRARY", os.path.join(ROOT, "build", "librcanvas.so"))


def hello(server, name):
    ws = RawWS("127.0.0.1", server.port, f"/c/{name}/ws?token={server.token}")
    msg = json.loads(ws.recv())
    assert msg["type"] == "hello"
    return ws, msg


def test_same_name_replaces_the_old_canvas():
    with rcanvas.Server() as s:
        old = s.canvas("plot", title="first")
        ws, h = hello(s, "plot")
        assert h["title"] == "first"
        with pytest.raises(rcanvas.RcanvasError) as e:
            s.canvas("plot")
        assert e.value.name == "RCANVAS_EEXIST" and "replace=True" in str(e.value)
        new = s.canvas("plot", title="second", replace=True)
        assert old.closed and not new.closed
        with pytest.raises(rcanvas.RcanvasError) as e:
            old.request_draw()
        assert e.value.name == "RCANVAS_ECLOSED"
        # the old canvas's viewer is closed with a reason; reconnecting, it finds the new one at the same URL
        with pytest.raises(ConnectionError, match=r"close 03e9 b'canvas closed'"):
            while True:
                ws.recv()
        ws.close()
        ws, h = hello(s, "plot")
        assert h["title"] == "second"
        ws.close()
        assert list(s._by_name.keys()) == ["plot"]
        assert s._by_name["plot"] is new


def test_close_from_another_thread_ends_its_wait():
    with rcanvas.Server() as s:
        c = s.canvas("w")
        got = queue.Queue()

        def waiter():
            try:
                got.put(("returned", c.wait()))   # no timeout: only the close ends it
            except rcanvas.RcanvasError as e:
                got.put(("raised", e.name))

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.3)                            # let it block inside rcanvas_wait (nothing is due)
        assert got.empty()
        c.close()                                  # waits for the waiter to leave rcanvas, then frees
        assert got.get(timeout=5) == ("raised", "RCANVAS_ECLOSED")
        t.join(5)
        assert not t.is_alive()
        # and a server closed under a waiting thread
        c = s.canvas("w2")
        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.3)
    assert got.get(timeout=5) == ("raised", "RCANVAS_ECLOSED")
    t.join(5)
    assert not t.is_alive()


@pytest.fixture
def fresh_shared(monkeypatch):
    monkeypatch.setattr(rcanvas, "_shared", None)
    for k in ("RCANVAS_PORT", "RCANVAS_TOKEN", "RCANVAS_BASE_PATH", "RCANVAS_JUPYTER_PROXY", "RCANVAS_JUPYTER_PORTS"):
        monkeypatch.delenv(k, raising=False)
    yield monkeypatch
    if rcanvas._shared is not None:
        rcanvas._shared.close()


def test_get_server_environment(fresh_shared, tmp_path):
    fresh_shared.setenv("RCANVAS_PORT", "80a")
    with pytest.raises(ValueError, match="RCANVAS_PORT must be a port number 0-65535, not '80a'"):
        rcanvas.get_server()
    with rcanvas.Server() as taken:
        fresh_shared.setenv("RCANVAS_PORT", str(taken.port))
        with pytest.raises(rcanvas.RcanvasError, match=f"RCANVAS_PORT={taken.port} on 127.0.0.1 is taken"):
            rcanvas.get_server()
    # the proxy's prefix: the base path names the port; the port is registered for the extension
    fresh_shared.delenv("RCANVAS_PORT")
    ports = tmp_path / "ports"
    ports.mkdir(mode=0o700)
    fresh_shared.setenv("RCANVAS_JUPYTER_PROXY", "/user/me/rcanvas")
    fresh_shared.setenv("RCANVAS_JUPYTER_PORTS", str(ports))
    s = rcanvas.get_server()
    assert s is rcanvas.get_server()
    assert s.base_path == f"/user/me/rcanvas/{s.port}"
    assert (ports / str(s.port)).read_text().split() == [str(os.getpid())]
    c = s.canvas("x")
    assert c.display_url == f"/user/me/rcanvas/{s.port}/c/x?token={s.token}"
    assert f'src="/user/me/rcanvas/{s.port}/c/x?token=' in c._repr_html_()
    port = s.port
    s.close()
    assert not (ports / str(port)).exists(), "unregistered when the server closes"
    fresh_shared.setenv("RCANVAS_JUPYTER_PROXY", "rcanvas")
    with pytest.raises(ValueError, match="RCANVAS_JUPYTER_PROXY must be 0, 1 or a path"):
        rcanvas.get_server()


def test_get_server_refuses_a_ports_folder_another_user_could_change(fresh_shared, tmp_path):
    """Under the proxy, get_server() registers its port only in a ports folder of this user, mode 0700, no
    symlink: through a symlinked one (another user could swap it) it raises PortsDirError saying so, and writes
    nothing where the symlink points; the same for a group-writable folder."""
    import gc

    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "ports"
    link.symlink_to(target)
    fresh_shared.setenv("RCANVAS_JUPYTER_PROXY", "/rcanvas")
    fresh_shared.setenv("RCANVAS_JUPYTER_PORTS", str(link))
    with pytest.raises(RuntimeError, match=f"RCANVAS_JUPYTER_PORTS={link} refused: .*symlink"):   # PortsDirError
        rcanvas.get_server()
    assert os.listdir(target) == []
    os.chmod(target, 0o770)
    fresh_shared.setenv("RCANVAS_JUPYTER_PORTS", str(target))
    with pytest.raises(RuntimeError, match="mode 0770.*chmod 700"):
        rcanvas.get_server()
    assert os.listdir(target) == []
    gc.collect()   # the servers made before the refusal: closed once unreachable


def test_a_kernels_port_and_tokens(fresh_shared):
    import socket

    from rcanvas import _kernel
    ident = ("kernel-0c9e-test.json", b"secret key of the kernel")
    fresh_shared.setattr(_kernel, "kernel_identity", lambda: ident)
    first = _kernel.kernel_port(ident[0])
    assert 20000 <= first < 30000 and first == _kernel.kernel_port(ident[0]), "stable"
    token, view = _kernel.kernel_tokens(*ident)
    assert len(token) == 43 and token != view and _kernel.kernel_tokens(ident[0], b"another key")[0] != token
    with socket.socket() as busy:                 # the first port taken: the next one, quietly
        try:
            busy.bind(("127.0.0.1", first))
        except OSError:
            pytest.skip(f"port {first} is in use here already")
        busy.listen()
        s = rcanvas.get_server()
        assert s.port == _kernel.kernel_port(ident[0], 1)
        assert s.token == token and s.view_token == view
        s.close()


def _python(code, extra_path=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), *extra_path]),
               RCANVAS_LIBRARY=LIBRARY)
    for k in ("RCANVAS_PORT", "RCANVAS_JUPYTER_PROXY"):
        env.pop(k, None)
    return subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_outside_a_kernel_the_url_goes_to_stdout():
    r = _python("from rcanvas import _kernel; _kernel.announce('x', 'http://127.0.0.1:1/c/x?token=T')")
    assert r.returncode == 0 and r.stdout == "rcanvas: open http://127.0.0.1:1/c/x?token=T\n" and r.stderr == ""


@pytest.mark.skipif(not HAVE_RC, reason=f"rendercanvas is not at {RENDERCANVAS} (../shared/third_party)")
def test_a_rendercanvas_prints_its_url_on_stdout_not_a_warning():
    r = _python("from rcanvas.rendercanvas import RenderCanvas\n"
                "c = RenderCanvas(size=(100, 80), name='p')\n"
                "c.close()\n", [RENDERCANVAS])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("rcanvas: open http://127.0.0.1:") and "/c/p?token=" in r.stdout, r.stdout
    assert "rcanvas" not in r.stderr and "WARNING" not in r.stderr, r.stderr


# ---- a real kernel -------------------------------------------------------------------------------------------

def _kernel_available():
    r = subprocess.run([PY, "-c", "import jupyter_client, ipykernel"], capture_output=True, text=True)
    return r.returncode == 0


needs_kernel = pytest.mark.skipif(not _kernel_available(),
                                  reason=f"no ipykernel/jupyter_client for {PY}: apt-get install python3-ipykernel "
                                         "(make test-python installs it)")

# The kernel runs in a child process driven over jupyter_client; the driver runs under /usr/bin/python3 (where
# Debian's jupyter_client is) and prints what the kernel sent, as JSON.
DRIVER = r'''
import json, os, sys
from jupyter_client import KernelManager
km = KernelManager(kernel_name="python3")
km.start_kernel(env=dict(os.environ))
kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=60)

def run(code, cell_id=None):
    msg = kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                             "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
                         metadata={"cellId": cell_id} if cell_id else {})
    kc.shell_channel.send(msg)
    out = []
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "status" and c["execution_state"] == "idle":
            return out
        if t in ("stream", "display_data", "execute_result", "error"):
            out.append({"type": t, "name": c.get("name"), "text": c.get("text"), "data": c.get("data"),
                        "ename": c.get("ename"), "evalue": c.get("evalue")})

results = {}
for step in json.loads(sys.argv[1]):
    if step == "restart":
        km.restart_kernel(now=False); kc.wait_for_ready(timeout=60)
        continue
    key, code, cell = step
    results[key] = run(code, cell)
kc.stop_channels(); km.shutdown_kernel(now=True)
print(json.dumps(results))
'''

INFO = ("import rcanvas; s = rcanvas.get_server()\n"
        "print('INFO', json.dumps({'names': sorted(s._by_name.keys()), 'port': s.port, 'token': s.token}))")


def _drive(steps, extra_path=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), *extra_path]),
               RCANVAS_LIBRARY=LIBRARY, JUPYTER_RUNTIME_DIR=os.environ.get("TMPDIR", "/tmp"))
    for k in ("RCANVAS_PORT", "RCANVAS_TOKEN", "RCANVAS_JUPYTER_PROXY", "RCANVAS_JUPYTER_PORTS"):
        env.pop(k, None)
    r = subprocess.run([PY, "-c", DRIVER, json.dumps(steps)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _info(outs):
    text = "".join(o["text"] or "" for o in outs if o["type"] == "stream" and o["name"] == "stdout")
    line = next(ln for ln in text.splitlines() if ln.startswith("INFO "))
    return json.loads(line[5:])


def _stderr(outs):
    return [o for o in outs if (o["type"] == "stream" and o["name"] == "stderr") or o["type"] == "error"]


@needs_kernel
def test_in_a_kernel_binding_canvases_rerun_and_restart():
    cell = ("import json, rcanvas\n"
            "c = rcanvas.get_server().canvas('plot', width=300, height=100, replace=True)\n"
            "c")
    r = _drive([("a", cell, None), ("b", cell, None), ("info1", "import json\n" + INFO, None), "restart",
                ("info2", "import json\n" + INFO, None)])
    for k in ("a", "b"):
        assert _stderr(r[k]) == [], r[k]
        res = [o for o in r[k] if o["type"] == "execute_result"]
        assert len(res) == 1 and "<iframe" in res[0]["data"]["text/html"] and 'width="300"' in res[0]["data"]["text/html"]
    i1, i2 = _info(r["info1"]), _info(r["info2"])
    assert i1["names"] == ["plot"], "the cell run again left one canvas"
    assert 20000 <= i1["port"] < 30000, "a kernel's port"
    assert i2["port"] == i1["port"] and i2["token"] == i1["token"], "the same port and token after a restart"
    assert i2["names"] == []


@needs_kernel
@pytest.mark.skipif(not HAVE_RC, reason=f"rendercanvas is not at {RENDERCANVAS} (../shared/third_party)")
def test_in_a_kernel_a_rendercanvas_shows_a_link_and_a_rerun_replaces_it():
    cell = ("import numpy as np\n"
            "from rcanvas.rendercanvas import RenderCanvas\n"
            "canvas = RenderCanvas(size=(320, 200))\n"
            "canvas")
    edited = cell.replace("(320, 200)", "(300, 180)")
    r = _drive([("a", cell, None), ("a2", cell, None), ("info1", "import json\n" + INFO, None),
                ("c1", cell, "front-end-cell-7"), ("c2", edited, "front-end-cell-7"),
                ("info2", "import json\n" + INFO, None)], [RENDERCANVAS])
    for k in ("a", "a2", "c1", "c2"):
        outs = r[k]
        assert _stderr(outs) == [], outs                      # no warning box in the notebook
        links = [o for o in outs if o["type"] == "display_data"]
        assert len(links) == 1, outs
        html = links[0]["data"]["text/html"]
        assert "open in a new tab" in html and 'target="_blank"' in html
        assert links[0]["data"]["text/plain"].startswith("rcanvas: open http://127.0.0.1:")
        res = [o for o in outs if o["type"] == "execute_result"]
        assert len(res) == 1 and "<iframe" in res[0]["data"]["text/html"]
    names1 = _info(r["info1"])["names"]
    assert len(names1) == 1 and names1[0].startswith("cell-"), "the same code run again: one canvas"
    names2 = _info(r["info2"])["names"]
    assert len(names2) == 2 and names1[0] in names2, "the cell id's canvas beside the first"
    assert 'width="300"' in [o for o in r["c2"] if o["type"] == "execute_result"][0]["data"]["text/html"]
