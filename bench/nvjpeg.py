#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nvJPEG beside bench-jpeg-gpu, on the GPU machine (docs/benchmarks.md): the same frames through
torchvision.io.encode_jpeg on a CUDA uint8 CHW tensor (nvJPEG; torchvision's default chroma is 4:4:4), 20 warm-up
runs then N timed ones, medians of wall-clock time: the encode with the file on the GPU (torch.cuda.synchronize),
and the encode plus the bytes copied to host memory (.cpu()), the figure to compare with bench-jpeg-gpu's "whole
path". The frames: DIR's PNG files, then the generated smooth 3840x2160 frame (tests/testframes.c tf_smooth_new,
the same formula in float64).

    python3 bench/nvjpeg.py [--runs N] DIR
"""
import glob
import os
import statistics
import sys
import time

import torch
import torchvision
from torchvision.io import ImageReadMode, encode_jpeg, read_image


def smooth(w, h):
    """tf_smooth_new(w, h) of tests/testframes.c, as a 3 x h x w uint8 tensor."""
    fy, fx = torch.meshgrid(torch.arange(h, dtype=torch.float64) / h, torch.arange(w, dtype=torch.float64) / w,
                            indexing="ij")
    r, g, b = 40 + 150 * fx + 30 * fy, 60 + 90 * fy, 180 - 100 * fx * fy
    d1 = torch.hypot(fx - 0.3, (fy - 0.4) * h / w)
    s1 = 1 / (1 + torch.exp((d1 - 0.12) * 400))
    r, g, b = r + s1 * (230 - r), g + s1 * (120 - g), b + s1 * (40 - b)
    s2 = 1 / (1 + torch.exp(((fx - 0.7).abs() - 0.1) * 600)) / (1 + torch.exp(((fy - 0.6).abs() - 0.15) * 600))
    r, g, b = r + s2 * (50 - r), g + s2 * (200 - g), b + s2 * (120 - b)
    s3 = 1 / (1 + torch.exp(((fy - 0.2 - 0.3 * fx).abs() - 0.01) * 800))
    r, g, b = r + s3 * (255 - r), g + s3 * (255 - g), b + s3 * (255 - b)
    return torch.stack([r, g, b]).add(0.5).floor().clamp(0, 255).to(torch.uint8)


def main():
    args = sys.argv[1:]
    runs = 200
    if len(args) >= 2 and args[0] == "--runs":
        runs = int(args[1])
        args = args[2:]
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.exit(__doc__)
    frames = [(os.path.basename(p), read_image(p, ImageReadMode.RGB))
              for p in sorted(glob.glob(os.path.join(args[0], "*.png")))]
    frames.append(("smooth-3840x2160 (generated)", smooth(3840, 2160)))
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"{runs} runs after 20 of warm-up, medians")
    print("| frame | q | nvJPEG, file on the GPU ms | nvJPEG + bytes in host memory ms | bytes |")
    print("|---|---|---|---|---|")
    for name, img in frames:
        dev = img.cuda()
        for q in (75, 90):
            for _ in range(20):
                encode_jpeg(dev, quality=q).cpu()
            on_gpu, to_host = [], []
            for _ in range(runs):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                out = encode_jpeg(dev, quality=q)
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                out.cpu()
                t2 = time.perf_counter()
                on_gpu.append((t1 - t0) * 1e3)
                to_host.append((t2 - t0) * 1e3)
            print(f"| {name} | {q} | {statistics.median(on_gpu):.3f} | {statistics.median(to_host):.3f} | "
                  f"{out.numel()} |", flush=True)


if __name__ == "__main__":
    main()
