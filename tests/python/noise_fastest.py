# SPDX-License-Identifier: MIT
"""bench-rendercanvas's uncapped case (our own script, not one of rendercanvas' examples): noise.py's picture — a
grey-level noise bitmap at a quarter of the logical size — drawn with update_mode="fastest", so that the backend,
not rendercanvas' default max_fps of 30, sets the frame rate. Runs on whichever backend rendercanvas.auto gives."""

import numpy as np
from rendercanvas.auto import RenderCanvas, loop

canvas = RenderCanvas(update_mode="fastest")
context = canvas.get_bitmap_context()
rng = np.random.default_rng()


@canvas.request_draw
def animate():
    w, h = canvas.get_logical_size()
    context.set_bitmap(rng.integers(0, 256, (int(h) // 4, int(w) // 4), dtype=np.uint8))


loop.run()
