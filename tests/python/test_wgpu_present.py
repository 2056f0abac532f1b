# SPDX-License-Identifier: MIT
"""rcanvas.rendercanvas' wgpu context (rcanvas._wgpu) with a real wgpu device (Mesa's lavapipe here): a pygfx
program's frames reach a viewer exact (PNG), in order, the last one too, in each present mode; the pixels go to
rcanvas by the mapped buffer's address with wgpu's padded pitch (no copy in Python); RCANVAS_WGPU_PRESENT=bitmap
gives rendercanvas' own fallback. Needs wgpu and pygfx: `make venv` (build/venv), which `make test-python` runs
this file with; elsewhere it skips, saying why."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))


def _why_no_wgpu():
    try:
        import wgpu  # noqa: F401
        import pygfx  # noqa: F401
        import rendercanvas  # noqa: F401
    except ImportError as e:
        return (f"{e.name} is not installed for {sys.executable}: the wgpu tests run in build/venv "
                f"(make venv; make test-python runs them there)")
    try:
        import wgpu.utils

        wgpu.utils.get_default_device()
    except Exception as e:  # no Vulkan driver (mesa-vulkan-drivers), no adapter
        return f"no wgpu adapter: {e}"
    return None


WHY = _why_no_wgpu()
needs_wgpu = pytest.mark.skipif(WHY is not None, reason=WHY or "")


@needs_wgpu
def test_the_adapter_is_lavapipe_or_a_gpu():
    import wgpu.utils

    info = wgpu.utils.get_default_device().adapter.info
    assert info["backend_type"] == "Vulkan", info
    print(info["device"], info["description"])


def run_frames(mode, frames=24):
    env = dict(os.environ, RCANVAS_WGPU_PRESENT=mode, FRAMES=str(frames),
               PYTHONPATH=os.path.join(ROOT, "python"),  # PyPI's rendercanvas of this venv, not ../shared's
               RCANVAS_LIBRARY=os.environ.get("RCANVAS_LIBRARY", os.path.join(ROOT, "build", "librcanvas.so")))
    r = subprocess.run([sys.executable, os.path.join(HERE, "wgpu_frames.py")], env=env, capture_output=True,
                       text=True, timeout=150)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_wgpu
@pytest.mark.parametrize("mode", ["newest", "behind", "auto"])
def test_frames_reach_the_viewer_exact_and_in_order(mode):
    out = run_frames(mode)
    assert out["errors"] == [], out["errors"]
    assert out["context"] == "RcanvasWgpuContext"
    ks = [s["k"] for s in out["seen"]]
    st = out["stats"]
    # in order, exact, and the last one too: after it nothing draws again, so a one-behind frame must go out when
    # it is mapped. Not every frame need be seen: rcanvas replaces a frame that has not started encoding by a newer
    # one (one behind presents as the readbacks finish, not as the draws are granted), and newest first drops a
    # frame still being read back (counted in "dropped").
    assert ks == sorted(set(ks)) and ks[-1] == out["frames_drawn"], ks
    assert len(ks) >= out["frames_drawn"] * 2 // 3, ks
    assert st["presented"] + st["dropped"] == out["frames_drawn"], st
    assert all(s["err"] <= 1 for s in out["seen"]), out["seen"]
    assert all((s["w"], s["h"]) == (100, 60) for s in out["seen"])
    # rcanvas got the mapped rows with wgpu's pitch: 100 px × 4 = 400 bytes, padded to 512; no copy in Python
    assert out["pitches"] == [[100, 60, 512, "rgba"]], out["pitches"]
    assert st["presented"] == out["frames_drawn"] and st["python_bytes_copied"] == 0, st
    assert st["cpu_bytes_copied"] == 100 * 60 * 4 * st["presented"], st
    # read from the GPU: each frame's mapped rows, pitch included
    assert st["gpu_bytes_read"] == 512 * 60 * st["presented"], st
    if mode == "newest":
        assert st["behind"] == 0 and st["newest"] == out["frames_drawn"], st
    elif mode == "behind":
        assert st["newest"] == 0 and st["behind"] == out["frames_drawn"], st
    else:  # each frame one or the other, with its reason counted
        assert st["newest"] + st["behind"] == out["frames_drawn"], st
        assert st["behind"] == st["behind_held"] + st["behind_gpu"], st


@needs_wgpu
def test_bitmap_mode_is_rendercanvas_fallback():
    out = run_frames("bitmap", frames=6)
    assert out["errors"] == [], out["errors"]
    assert out["context"] == "WgpuContextToBitmap"
    assert [s["k"] for s in out["seen"]] == list(range(1, 7))
    assert out["pitches"] == []  # numpy arrays through present(), not present_address()


def test_present_address_checks_its_arguments():
    import numpy as np
    import rcanvas

    with rcanvas.Server() as s:
        c = s.canvas("addr")
        a = np.zeros((4, 64, 4), np.uint8)
        for args, what in [((0, 8, 4, 32), "non-zero address"), ((a.ctypes.data, 0, 4, 32), "non-empty"),
                           ((a.ctypes.data, 8, 4, 31), "pitch"), ((a.ctypes.data, 8, 4, 32, "xyz"), "format")]:
            with pytest.raises(ValueError, match=what):
                c.present_address(*args)
        with pytest.raises(rcanvas.RcanvasError):
            c.present_address(a.ctypes.data, 10**6, 4, 4 * 10**6)  # over max_frame_dim
        c.present_address(a.ctypes.data, 60, 4, 256)  # rows 256 bytes apart, 240 used
        c.close()


def run_jpeg(env_extra, frames=12):
    env = dict(os.environ, FRAMES=str(frames), PYTHONPATH=os.path.join(ROOT, "python"),
               RCANVAS_LIBRARY=os.environ.get("RCANVAS_LIBRARY", os.path.join(ROOT, "build", "librcanvas.so")))
    env.pop("RCANVAS_GPU_CODEC_DEVICE", None)
    env.update(env_extra)
    r = subprocess.run([sys.executable, os.path.join(HERE, "wgpu_jpeg_frames.py")], env=env, capture_output=True,
                       text=True, timeout=150)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_wgpu
@pytest.mark.parametrize("mode", ["newest", "behind", "auto"])
def test_jpeg_wgpu_frames_leave_the_gpu_as_jpeg_and_the_pixels_only_when_asked(mode):
    # codec "jpeg-wgpu" on lavapipe (RCANVAS_GPU_CODEC_DEVICE=any, as h264-gpu): every frame is JPEG-encoded on the
    # app's wgpu device and only the file's bytes are read back; rcanvas sends them as they are (the viewer is told
    # "jpeg-wgpu"); once the picture is still, rcanvas asks for the pixels once and refines it losslessly.
    out = run_jpeg({"RCANVAS_GPU_CODEC_DEVICE": "any", "RCANVAS_WGPU_PRESENT": mode})
    assert out["errors"] == [], out["errors"]
    st, seen = out["stats"], out["seen"]
    n = out["frames_drawn"]
    if mode != "auto":
        assert st[f"jpeg_{mode}"] == n, st
    print(json.dumps(st))
    assert "jpeg-wgpu" in out["told"], out["told"]
    assert st["jpeg"] == n and st["jpeg_not_used"] == 0, st
    ks = [s["k"] for s in seen]
    assert ks == sorted(set(ks)) and ks[-1] == n and len(ks) >= n * 2 // 3, ks
    assert all(s["codec"] == 1 and (s["w"], s["h"]) == (320, 240) and s["err"] <= 4 for s in seen), seen
    # GPU → host: the JPEGs' bytes (length word + data, rounded to 4) and one whole frame, for the refinement
    raw = 320 * 4 * 240  # the rows are 1280 bytes: no padding
    assert st["pixels_asked"] == 1, st
    per_frame = (st["gpu_bytes_read"] - raw) / st["jpeg"]
    print(f"# jpeg-wgpu: {per_frame:.0f} bytes read back a frame, {100 * per_frame / raw:.1f} % of the raw frame")
    assert per_frame <= 0.1 * raw, per_frame
    assert per_frame <= max(s["bytes"] for s in seen) + 8, (per_frame, seen)
    # chroma as rcanvas' AUTO chooses, measured on the GPU with each frame for the next: the thin red line needs
    # 4:4:4 (the first frame, measured before any, is 4:2:0; one behind, up to three are in flight before a verdict)
    sss = [s["ss"] for s in seen]
    assert sss[-1] == "444" and sss.count("444") >= len(sss) // 2, sss
    assert st["jpeg_444"] + st["jpeg_420"] == n and st["jpeg_444"] >= n // 2, st
    r = out["refined"]
    assert r and r["seq"] > 0 and (r["w"], r["h"]) == (320, 240), r
    assert r["centre"] == list(colour_of(n)), (r, colour_of(n))  # the pixels themselves: exact


@needs_wgpu
@pytest.mark.parametrize("mode", ["newest", "behind"])
def test_jpeg_wgpu_frame_rcanvas_cannot_take_goes_as_pixels(mode):
    # a JPEG rcanvas cannot send as it is (RCANVAS_ENOTUSED: made so for the 3rd here) costs nothing but its
    # readback: newest first the same frame goes as pixels at once (one behind, where a newer frame is already in
    # the texture, that one goes instead), and the next frames go as pixels too (JPEG_RETRY_FRAMES) before the GPU
    # encoder is tried again; the viewer sees the frames in order to the last, told "jpeg" (rcanvas' encoder) then
    out = run_jpeg({"RCANVAS_GPU_CODEC_DEVICE": "any", "REFUSE": "3", "RCANVAS_WGPU_PRESENT": mode})
    assert out["errors"] == [], out["errors"]
    st, seen = out["stats"], out["seen"]
    assert st["jpeg_not_used"] == 1 and st["jpeg"] >= 2, st
    ks = [s["k"] for s in seen]
    assert ks == sorted(set(ks)) and ks[-1] == out["frames_drawn"], ks
    if mode == "newest":
        assert st["jpeg"] == 2 and 3 in ks, (st, ks)
        assert st["presented"] + st["dropped"] == out["frames_drawn"], st
    assert all(s["err"] <= 4 for s in seen), seen
    assert out["told"][-1] == "jpeg" and "jpeg-wgpu" in out["told"], out["told"]


def colour_of(k):
    return (k * 19) % 256, (255 - k * 13) % 256, 90  # as wgpu_jpeg_frames.py


@needs_wgpu
def test_jpeg_wgpu_on_a_cpu_device_stays_on_the_cpu_unless_asked():
    # lavapipe is a CPU: rcanvas' own JPEG encoder is faster there, so jpeg-wgpu runs only with
    # RCANVAS_GPU_CODEC_DEVICE=any; the frames still come, encoded by rcanvas ("jpeg")
    out = run_jpeg({}, frames=6)
    assert out["errors"] == [], out["errors"]
    st = out["stats"]
    assert st["jpeg"] == 0 and "CPU" in st["jpeg_why_not"], st
    assert "jpeg-wgpu" not in out["told"] and "jpeg" in out["told"], out["told"]
    assert [s["k"] for s in out["seen"]][-1] == out["frames_drawn"]


@needs_wgpu
def test_auto_goes_newest_first_after_a_viewers_input(monkeypatch):
    # auto's rule says one behind here (the readback half the frame time: the GPU is the bottleneck), until a
    # viewer's input reaches the canvas: then newest first for INPUT_NEWEST_S (someone waits for the picture to
    # answer), then the rule again. A resize is not input.
    from rcanvas import _wgpu
    from rcanvas.rendercanvas import RenderCanvas

    monkeypatch.setenv("RCANVAS_WGPU_PRESENT", "auto")
    canvas = RenderCanvas(size=(64, 48), name="input", update_mode="ondemand")
    try:
        ctx = canvas.get_context("wgpu")
        assert isinstance(ctx, _wgpu.RcanvasWgpuContext), type(ctx)
        ctx._frame_s, ctx._readback_s = 0.010, 0.005
        assert ctx._choose(False) is True and ctx.stats["behind_gpu"] == 1, ctx.stats
        canvas._on_event({"event_type": "resize", "width": 64, "height": 48, "pixel_ratio": 1.0})
        assert ctx._choose(False) is True and ctx.stats["newest_input"] == 0, ctx.stats
        canvas._on_event({"event_type": "pointer_down", "x": 5.0, "y": 5.0, "button": 1, "buttons": (1,),
                          "modifiers": (), "ntouches": 0, "touches": {}, "time_stamp": 0.0})
        assert [ctx._choose(False) for _ in range(3)] == [False] * 3, ctx.stats
        assert ctx.stats["newest_input"] == 3 and ctx.stats["behind_gpu"] == 2, ctx.stats
        ctx._t_input -= _wgpu.INPUT_NEWEST_S  # as if that much time had passed
        assert ctx._choose(False) is True and ctx.stats["behind_gpu"] == 3, ctx.stats
        canvas._on_event({"event_type": "key_down", "key": "a", "modifiers": (), "time_stamp": 0.0})
        assert ctx._choose(False) is False and ctx.stats["newest_input"] == 4, ctx.stats
    finally:
        canvas.close()
