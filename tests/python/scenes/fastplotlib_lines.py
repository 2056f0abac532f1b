# SPDX-License-Identifier: MIT
"""A fastplotlib plot (rcanvas' own test scene): three sine waves of 1,000 points each as line graphics in one
subplot, with fastplotlib's own camera and controller (the wheel zooms). A rendercanvas program like fastplotlib's
examples: `python -m rcanvas.rendercanvas fastplotlib_lines.py` shows it in a browser."""

import numpy as np

import fastplotlib as fpl

fig = fpl.Figure()
x = np.linspace(0, 4 * np.pi, 1000, dtype=np.float32)
for i, colour in enumerate(("r", "g", "b")):
    fig[0, 0].add_line(np.column_stack([x, np.sin(x + i) + 3 * i]), thickness=3, colors=colour)
fig.show()

if __name__ == "__main__":
    fpl.loop.run()
