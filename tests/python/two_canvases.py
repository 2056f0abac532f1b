# SPDX-License-Identifier: MIT
"""Two rendercanvas canvases in one program (examples.test.mjs): a red one and a blue one, each with its title.
Run through the runner, so `rendercanvas.auto` is rcanvas.rendercanvas: one page each, "/" and "/c/canvas2"."""

import numpy as np
from rendercanvas.auto import RenderCanvas, loop

for color, title in (((255, 0, 0, 255), "red canvas"), ((0, 0, 255, 255), "blue canvas")):
    canvas = RenderCanvas(title=title, size=(200, 100))
    ctx = canvas.get_bitmap_context()

    def draw(ctx=ctx, color=color):
        img = np.zeros((50, 80, 4), np.uint8)
        img[:] = color
        ctx.set_bitmap(img)

    canvas.request_draw(draw)

loop.run()
