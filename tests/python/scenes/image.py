# SPDX-License-Identifier: MIT
"""An image (rcanvas' own test scene: pygfx's image examples download theirs): a seeded 512x512 microscopy-like
field (bright blobs on a noisy background) shown with the viridis colormap, an orthographic camera fitted to it and
pygfx's PanZoomController (drag pans, the wheel zooms)."""

import numpy as np
from rendercanvas.auto import RenderCanvas, loop

import pygfx as gfx

canvas = RenderCanvas()
renderer = gfx.WgpuRenderer(canvas)
scene = gfx.Scene()

rng = np.random.default_rng(11)
yy, xx = np.mgrid[0:512, 0:512].astype(np.float32)
field = rng.normal(0.15, 0.04, (512, 512)).astype(np.float32)
for cx, cy, r, a in zip(rng.uniform(20, 492, 60), rng.uniform(20, 492, 60), rng.uniform(4, 18, 60),
                        rng.uniform(0.3, 0.8, 60)):
    field += a * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
image = gfx.Image(gfx.Geometry(grid=gfx.Texture(np.clip(field, 0, 1), dim=2)),
                  gfx.ImageBasicMaterial(clim=(0, 1), map=gfx.cm.viridis))
scene.add(image)
camera = gfx.OrthographicCamera(512, 512)
camera.show_object(scene, match_aspect=True)
controller = gfx.PanZoomController(camera, register_events=renderer)

if __name__ == "__main__":
    canvas.request_draw(lambda: renderer.render(scene, camera))
    loop.run()
