# SPDX-License-Identifier: MIT
"""What a pip user's rcanvas does right after `pip install rcanvas-*.whl`, run with the python of that install
(test_wheel.py in a fresh venv here, tools/wheel-chroot-test.sh in a bare Debian with only Python): the package's
own librcanvas.so is the one loaded, every library it needs comes from the wheel or is one a manylinux policy lets
a wheel take from the system (ldd), and a canvas serves a frame to a raw WebSocket viewer (wsraw.py, beside this
file) as PNG and as JPEG, decoded back (PNG exactly). Prints one JSON line; exit status 0 when all of it held."""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import rcanvas  # noqa: E402
from wsraw import RawWS, decode_png, parse_frame  # noqa: E402

# What a manylinux wheel may take from the system (PEP 600's policies: glibc's libraries, libgcc_s, libstdc++, libz)
POLICY = re.compile(r"^(libc|libm|libdl|librt|libpthread|libresolv|libutil|libgcc_s|libstdc\+\+|libz|ld-linux-x86-64)\.so")


def main():
    out = {"errors": []}
    lib = rcanvas.lib()
    path = os.path.realpath(lib._rcanvas_path)
    out["library"] = path
    pkg = os.path.dirname(os.path.realpath(rcanvas.__file__))
    if not path.startswith(pkg + os.sep):
        out["errors"].append(f"librcanvas loaded from {path}, not from the package {pkg}")
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    libs = os.path.join(os.path.dirname(pkg), "rcanvas.libs")
    out["bundled"], out["system"] = [], []
    for line in ldd.splitlines():
        m = re.match(r"\s*(\S+)\s*(?:=>\s*(\S+))?", line)
        if not m or m.group(1).startswith("linux-vdso"):
            continue
        name, where = m.group(1), m.group(2) or m.group(1)
        if "not found" in line:
            out["errors"].append(f"{name}: not found")
        elif os.path.realpath(where).startswith(libs + os.sep):
            out["bundled"].append(name)
        elif POLICY.match(os.path.basename(name)):
            out["system"].append(name)
        else:
            out["errors"].append(f"{name} comes from the system ({where}), not from the wheel")
    s = rcanvas.Server(port=0)
    try:
        rng = np.random.default_rng(5)
        a = rng.integers(0, 256, (90, 130, 4), dtype=np.uint8)
        for codec in ("png", "jpeg"):
            c = s.canvas(name=codec, codec=codec, refine_ms=0, update_mode="manual", width=130, height=90)
            c.set_option("rate_adapt", 0)
            ws = RawWS("127.0.0.1", s.port, f"/c/{codec}/ws?token={s.token}")
            ws.sock.settimeout(20)
            assert json.loads(ws.recv())["type"] == "hello"
            c.present(a)
            while True:
                m = ws.recv()
                if isinstance(m, str):
                    continue
                h, payload = parse_frame(m)
                if h["flags"] & 2:
                    break
            if codec == "png":
                px = decode_png(payload)
                out["png_exact"] = bool(h["codec"] == 2 and np.array_equal(px[..., :3], a[..., :3]))
                if not out["png_exact"]:
                    out["errors"].append("the PNG frame is not the picture presented")
            else:
                out["jpeg_bytes"] = len(payload)
                if h["codec"] != 1 or payload[:2] != b"\xff\xd8" or payload[-2:] != b"\xff\xd9":
                    out["errors"].append("the JPEG frame is not a JPEG")
            ws.close()
    finally:
        s.close()
    print(json.dumps(out))
    return 1 if out["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
