# SPDX-License-Identifier: MIT
"""A million-point scatter (rcanvas' own test scene: pygfx's examples have none of this size): two seeded Gaussian
clusters of 500,000 points each, one colour per cluster, 2 px points, an orthographic camera with pygfx's
PanZoomController (drag pans, the wheel zooms). Written as a rendercanvas program: `python -m rcanvas.rendercanvas
scatter_million.py` shows it in a browser."""

import numpy as np
from rendercanvas.auto import RenderCanvas, loop

import pygfx as gfx

canvas = RenderCanvas()
renderer = gfx.WgpuRenderer(canvas)
scene = gfx.Scene()

rng = np.random.default_rng(7)
n = 1_000_000
pos = np.zeros((n, 3), np.float32)
pos[: n // 2, :2] = rng.normal((-1.0, 0.0), (0.5, 0.3), (n // 2, 2))
pos[n // 2:, :2] = rng.normal((1.0, 0.5), (0.3, 0.6), (n - n // 2, 2))
colors = np.empty((n, 4), np.float32)
colors[: n // 2] = (1.0, 0.55, 0.1, 1.0)
colors[n // 2:] = (0.2, 0.6, 1.0, 1.0)
points = gfx.Points(gfx.Geometry(positions=pos, colors=colors), gfx.PointsMaterial(size=2, color_mode="vertex"))
scene.add(gfx.Background.from_color("#101018"), points)
camera = gfx.OrthographicCamera(6, 4)
controller = gfx.PanZoomController(camera, register_events=renderer)

if __name__ == "__main__":
    canvas.request_draw(lambda: renderer.render(scene, camera))
    loop.run()
