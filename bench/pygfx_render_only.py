# SPDX-License-Identifier: MIT
"""The bound the GPU's own rendering puts on bench/wgpu_cube_app.py's scene: pygfx's cube rendered into a texture
of its own at SIZE, one pixel read back (so that each frame is waited for), nothing else;
prints "render WxH fps F ms M cpu-ms C render-cpu-ms R": frames/s, wall ms a frame, the process's CPU ms a frame
(the wait in map_sync included) and the CPU ms of pygfx's render call alone (time.thread_time around animate and
renderer.render: what the app's own Python thread spends on a frame, whatever the frame is shown with).
python3 bench/pygfx_render_only.py [seconds]"""

import os
import runpy
import sys
import time

import pygfx as gfx
import wgpu
import wgpu.utils

W, H = map(int, os.environ.get("SIZE", "1920x1080").split("x"))
ex = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python",
                                 "pygfx_examples", "cube.py"), run_name="cube_example")
device = wgpu.utils.get_default_device()
buf = device.create_buffer(size=256, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
target = gfx.Texture(dim=2, size=(W, H, 1), format="rgba8unorm-srgb", usage=wgpu.TextureUsage.COPY_SRC)
renderer = gfx.WgpuRenderer(target)
camera = gfx.PerspectiveCamera(70, 16 / 9)
camera.show_object(ex["cube"])
scene = gfx.Scene()
scene.add(ex["cube"], gfx.AmbientLight(), gfx.DirectionalLight())


render_cpu = [0.0]


def frame():
    c = time.thread_time()
    ex["animate"]()
    renderer.render(scene, camera)
    render_cpu[0] += time.thread_time() - c
    tex = gfx.renderers.wgpu.engine.update.ensure_wgpu_object(target)  # the GPUTexture pygfx rendered into
    enc = device.create_command_encoder()
    enc.copy_texture_to_buffer({"texture": tex, "origin": (W // 2, H // 2, 0)},
                               {"buffer": buf, "offset": 0, "bytes_per_row": 256, "rows_per_image": 1}, (1, 1, 1))
    device.queue.submit([enc.finish()])
    buf.map_sync(wgpu.MapMode.READ, 0, 256)
    buf.unmap()


secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4
for _ in range(5):
    frame()
render_cpu[0] = 0.0
n, t0, c0 = 0, time.perf_counter(), time.process_time()
while time.perf_counter() - t0 < secs:
    frame()
    n += 1
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
print(f"render {W}x{H} fps {n / dt:.1f} ms {dt * 1e3 / n:.2f} cpu-ms {cpu * 1e3 / n:.2f} "
      f"render-cpu-ms {render_cpu[0] * 1e3 / n:.2f}", flush=True)
