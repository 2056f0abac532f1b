# SPDX-License-Identifier: MIT
"""An app that holds the GIL in one long C call (as numpy or a renderer's C code can), for test_hardening.py.

Prints {"port", "token"} once serving, then waits for a line on stdin, prints "holding" and calls usleep(argv[1]
µs) through ctypes.PyDLL, which keeps the GIL for the whole call; then waits for a second line (the client is
done), lets its log thread pass on what rcanvas logged meanwhile and prints {"t_hold", "t_release", "logs": [[time, level, message], …]} (time.monotonic,
CLOCK_MONOTONIC, the same clock as the client's)."""

import ctypes
import json
import logging
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import rcanvas  # noqa: E402

HOLD_US = int(sys.argv[1])
logs = []


class Keep(logging.Handler):
    def emit(self, record):
        logs.append([time.monotonic(), record.levelname, record.getMessage()])


logging.getLogger("rcanvas").addHandler(Keep())
logging.getLogger("rcanvas").setLevel(logging.DEBUG)
server = rcanvas.Server(port=0, log_level="info")
canvas = server.canvas(codec="png", refine_ms=0)
frame = np.zeros((48, 64, 4), np.uint8)
frame[..., 0], frame[..., 3] = 200, 255
canvas.present(frame)
print(json.dumps({"port": server.port, "token": server.token}), flush=True)
sys.stdin.readline()
libc = ctypes.PyDLL(None)   # PyDLL: the GIL stays held during its calls
usleep, write = libc.usleep, libc.write
usleep.argtypes = [ctypes.c_uint]
write.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
# "holding" goes out by write(2) inside the hold, not by print(): print's write releases the GIL, and a loaded machine
# that preempted this thread there let rcanvas' log thread deliver the wrong token's line before the hold began (a
# Debian 12 chroot beside another test suite). No thread switch between the two calls but by this thread's own
# blocking: the switch interval is made longer than the hold meanwhile.
sys.stdout.flush()
sys.setswitchinterval(1000.0)
t_hold = time.monotonic()   # before the client can know: whatever it sends comes after this
write(1, b"holding\n", 8)
usleep(HOLD_US)
t_release = time.monotonic()
sys.setswitchinterval(0.005)
sys.stdin.readline()               # the client is done with its requests
deadline = time.monotonic() + 10
while time.monotonic() < deadline and not any("wrong token" in m for _, _, m in logs):
    time.sleep(0.05)
server.close()
print(json.dumps({"t_hold": t_hold, "t_release": t_release, "logs": logs}), flush=True)
