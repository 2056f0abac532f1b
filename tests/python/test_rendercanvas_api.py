"""rendercanvas' own backend check (its tests/test_backends.py) applied to rcanvas.rendercanvas: every _rc_*
method of BaseRenderCanvas and BaseLoop is implemented by our canvas and loop classes, and no others; plus the
module's names, and a canvas made and closed in-process. Needs ../shared/third_party/rendercanvas."""

import importlib
import os
import sys

import pytest

from conftest import RENDERCANVAS, ROOT

if not os.path.isdir(os.path.join(RENDERCANVAS, "rendercanvas")):
    pytest.skip(f"rendercanvas is not at {RENDERCANVAS} (../shared/third_party): skipping the rendercanvas "
                "backend tests", allow_module_level=True)

sys.path.insert(0, RENDERCANVAS)
sys.path.insert(0, os.path.join(RENDERCANVAS, "tests"))

BACKEND = os.path.join(ROOT, "python", "rcanvas", "rendercanvas.py")


def module():
    tb = importlib.import_module("test_backends")   # rendercanvas' test, unmodified
    m = tb.Module.__new__(tb.Module)               # its AST reader, pointed at our file
    m.name = "rcanvas.rendercanvas"
    m.filename = BACKEND
    with open(BACKEND, "rb") as f:
        m.source = f.read().decode()
    m.names = m.get_namespace()
    return tb, m


def test_rc_methods_of_canvas_and_loop():
    tb, m = module()
    assert len(tb.canvas_rc_methods) >= 10 and len(tb.loop_rc_methods) >= 3
    canvas_class = m.get_canvas_class()
    m.check_canvas(canvas_class)
    assert canvas_class.name == "RcanvasRenderCanvas"
    loop_class = m.get_loop_class()
    m.check_loop(loop_class)
    assert loop_class.name == "RcanvasLoop"


def test_module_names_and_a_canvas():
    import numpy as np
    import rcanvas.rendercanvas as backend

    for name in backend.__all__:
        assert hasattr(backend, name), name
    assert backend.RenderCanvas is backend.RcanvasRenderCanvas
    c = backend.RenderCanvas(size=(320, 200), title="api test", name="apitest")
    try:
        assert c.url.startswith("http://127.0.0.1:") and "/c/apitest?token=" in c.url
        assert c.get_logical_size() == (320.0, 200.0)
        c.set_cursor("crosshair")
        ctx = c.get_bitmap_context()
        ctx.set_bitmap(np.zeros((20, 30, 4), np.uint8))
        assert "iframe" in c._repr_html_() and 'width="320"' in c._repr_html_()
    finally:
        c.close()
    assert c.get_closed() and c._canvas.closed


def test_runner_prints_the_url_and_exits_when_the_script_does(tmp_path):
    import subprocess

    script = tmp_path / "app.py"
    script.write_text(
        "import sys\n"
        "from rendercanvas.auto import RenderCanvas, loop\n"
        "c = RenderCanvas(title='runner test')\n"
        "print('backend', type(c).__module__, type(c).__name__)\n"
        "loop.call_later(0.3, c.close)\n"
        "loop.run()\n"
        "print('argv', sys.argv[1:])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), RENDERCANVAS]))
    r = subprocess.run([sys.executable, "-m", "rcanvas.rendercanvas", str(script), "--flag"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("rcanvas: open http://127.0.0.1:") and "?token=" in lines[0], r.stdout
    assert "backend rcanvas.rendercanvas RcanvasRenderCanvas" in lines
    assert lines[-1] == "argv ['--flag']"
