#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The wgpu measurements on the GPU machine (tools/gpu_bench_wgpu.sh runs this there; docs/benchmarks.md has the
figures). Each part is guarded: a failure is logged and the next part runs; results are written to OUT/wgpu.json
after every row.

  jpeg-wgpu   python/rcanvas/jpeg_wgpu.py on wgpu's default device: per frame, the wall clock of encode() (the
              submit, the two map_async read-backs, the JFIF file in host memory), the process's CPU time
              (time.process_time) and the bytes read back; median of RUNS after WARM encodes; the file decoded
              again (torchvision, CPU) for its PSNR against the frame, so a wrong encode on this driver shows.
  pipelined   3 sibling encoders in flight (submit, then result of the oldest), frames/s.
  nvjpeg      torchvision.io.encode_jpeg on a CUDA uint8 CHW tensor (nvJPEG, 4:4:4: torchvision's only
              chroma), median wall clock with the file on the GPU (synchronize) and with it copied to the host.
  present     pygfx's cube (bench/wgpu_cube_app.py) on rendercanvas' http backend ("http"), and through rcanvas:
              rendercanvas' bitmap context ("bitmap"), rcanvas' ring ("newest", "behind"), JPEG on the app's device
              ("jpeg-wgpu"), PRESENT_MODES; one raw WebSocket viewer (tests/python/wsraw.py, in this process) that
              acks every frame as the browser does: frames/s received (a frame: the message flagged "last tile",
              refinements left out), the app process's CPU ms per frame (utime+stime), then PRESENT_CLICKS clicks
              (pointer_down: the app toggles its background) each timed to the first picture whose top-left corner
              has the new colour (click to picture; the JPEG decoded at 1/8 scale by simplejpeg). The GPU machine
              has no browser (Chromium is 348 MB, past what a run carries): make bench-pygfx is the same with
              Chromium as the viewer.

    python3 bench/gpu_wgpu_bench.py OUT FRAMES_DIR [parts, default: jpeg-wgpu,pipelined,nvjpeg,present]
Environment: RUNS (60), WARM (8), RESULT_JSON (wgpu.json), PRESENT_SIZES, PRESENT_MODES, PRESENT_WARM (3 s),
PRESENT_SECONDS (8 s), PRESENT_CLICKS (5), APP_LD_LIBRARY_PATH (the app's LD_LIBRARY_PATH alone), RCANVAS_LIBRARY.
"""
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT, FRAMES = sys.argv[1], sys.argv[2]
PARTS = (sys.argv[3] if len(sys.argv) > 3 else "jpeg-wgpu,pipelined,nvjpeg,present").split(",")
RUNS, WARM = int(os.environ.get("RUNS", "60")), int(os.environ.get("WARM", "8"))
CLICKS = int(os.environ.get("PRESENT_CLICKS", "5"))
RESULTS = {"runs": RUNS, "warm": WARM, "python": sys.version}


def save():
    with open(os.path.join(OUT, os.environ.get("RESULT_JSON", "wgpu.json")), "w") as f:
        json.dump(RESULTS, f, indent=1)


def log(*a):
    print(*a, flush=True)


def frames():
    """[(name, w, h, HxWx3 uint8 numpy array)] of FRAMES_DIR's PNG files, decoded by torchvision on the CPU."""
    out = []
    for fn in sorted(os.listdir(FRAMES)):
        if fn.endswith(".png"):
            try:
                from torchvision.io import ImageReadMode, read_image
                a = read_image(os.path.join(FRAMES, fn), ImageReadMode.RGB).permute(1, 2, 0).contiguous().numpy()
            except ImportError:   # here, without torch: Pillow
                import numpy as np
                from PIL import Image
                a = np.asarray(Image.open(os.path.join(FRAMES, fn)).convert("RGB"))
            out.append((fn[:-4], a.shape[1], a.shape[0], a))
        elif fn.endswith(".npy"):
            import numpy as np
            a = np.load(os.path.join(FRAMES, fn))
            out.append((fn[:-4], a.shape[1], a.shape[0], a))
    return out


def psnr(jpeg, rgb):
    import numpy as np
    try:
        import torch
        from torchvision.io import decode_jpeg
    except ImportError:
        return None
    d = decode_jpeg(torch.frombuffer(bytearray(jpeg), dtype=torch.uint8)).permute(1, 2, 0).numpy()
    if d.shape != rgb.shape:
        return -1.0
    mse = float(((d.astype(np.float64) - rgb) ** 2).mean())
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def part_jpeg_wgpu(fr):
    import numpy as np
    import wgpu
    import wgpu.utils
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from rcanvas.jpeg_wgpu import JpegWgpuEncoder
    t0 = time.perf_counter()
    dev = wgpu.utils.get_default_device()
    enc = JpegWgpuEncoder(dev)
    RESULTS["wgpu_adapter"] = {k: str(v) for k, v in dict(dev.adapter.info).items()}
    RESULTS["wgpu_version"] = wgpu.__version__
    RESULTS["jpeg_wgpu_init_ms"] = (time.perf_counter() - t0) * 1e3
    log("wgpu", wgpu.__version__, RESULTS["wgpu_adapter"])
    rows = RESULTS.setdefault("jpeg_wgpu", [])
    for name, w, h, rgb in fr:
        rgba = np.concatenate([rgb, np.full((h, w, 1), 255, np.uint8)], axis=2)
        tex = dev.create_texture(size=(w, h, 1), format="rgba8unorm",
                                 usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
        dev.queue.write_texture({"texture": tex, "mip_level": 0, "origin": (0, 0, 0)}, rgba,
                                {"offset": 0, "bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1))
        for q in (75, 80):
            for ss in ("420", "444"):
                try:
                    t = time.perf_counter()
                    first = enc.encode(tex, q, ss)
                    first_ms = (time.perf_counter() - t) * 1e3
                    for _ in range(WARM):
                        enc.encode(tex, q, ss)
                    wall, cpu, inner = [], [], []
                    for _ in range(RUNS):
                        c0, t0 = time.process_time(), time.perf_counter()
                        jpeg = enc.encode(tex, q, ss)
                        t1, c1 = time.perf_counter(), time.process_time()
                        wall.append((t1 - t0) * 1e3)
                        cpu.append((c1 - c0) * 1e3)
                        inner.append(enc.last["ms"])
                    r = {"frame": name, "w": w, "h": h, "q": q, "ss": ss, "ms_median": statistics.median(wall),
                         "ms_min": min(wall), "ms_p90": sorted(wall)[int(len(wall) * 0.9)],
                         "last_ms_median": statistics.median(inner), "cpu_ms_median": statistics.median(cpu),
                         "cpu_ms_mean": sum(cpu) / len(cpu), "bytes": len(jpeg), "read_back": enc.last["read_back"],
                         "direct": enc.last.get("direct"), "first_ms": first_ms, "same_as_first": jpeg == first,
                         "psnr": psnr(jpeg, rgb)}
                except Exception as e:
                    r = {"frame": name, "w": w, "h": h, "q": q, "ss": ss, "error": repr(e)}
                    traceback.print_exc()
                rows.append(r)
                log("jpeg-wgpu", json.dumps(r))
                save()
        tex.destroy()
    return dev, enc


def part_pipelined(fr, dev, enc):
    import numpy as np
    import wgpu
    rows = RESULTS.setdefault("jpeg_wgpu_pipelined", [])
    encs = [enc, enc.sibling(), enc.sibling()]
    for name, w, h, rgb in fr:
        if not name.startswith("heatmap"):
            continue
        rgba = np.concatenate([rgb, np.full((h, w, 1), 255, np.uint8)], axis=2)
        tex = dev.create_texture(size=(w, h, 1), format="rgba8unorm",
                                 usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
        dev.queue.write_texture({"texture": tex, "mip_level": 0, "origin": (0, 0, 0)}, rgba,
                                {"offset": 0, "bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1))
        for q, ss in ((80, "420"), (80, "444")):
            try:
                for e in encs:
                    e.encode(tex, q, ss)
                n = RUNS * 2
                c0, t0 = time.process_time(), time.perf_counter()
                pend = [e.submit(tex, q, ss) for e in encs]
                submitted, done = len(encs), 0
                while done < n:
                    i = done % len(encs)
                    pend[i].result()
                    done += 1
                    if submitted < n:
                        pend[i] = encs[i].submit(tex, q, ss)
                        submitted += 1
                secs, cpu = time.perf_counter() - t0, time.process_time() - c0
                r = {"frame": name, "w": w, "h": h, "q": q, "ss": ss, "in_flight": len(encs), "frames": n,
                     "fps": n / secs, "ms_per_frame": secs * 1e3 / n, "cpu_ms_per_frame": cpu * 1e3 / n}
            except Exception as e:
                r = {"frame": name, "q": q, "ss": ss, "error": repr(e)}
                traceback.print_exc()
            rows.append(r)
            log("pipelined", json.dumps(r))
            save()
        tex.destroy()


def part_nvjpeg(fr):
    import torch
    import torchvision
    from torchvision.io import encode_jpeg
    RESULTS["cuda_device"] = torch.cuda.get_device_name(0)
    RESULTS["torch"] = torch.__version__
    RESULTS["torchvision"] = torchvision.__version__
    rows = RESULTS.setdefault("nvjpeg", [])
    for name, w, h, rgb in fr:
        dev = torch.from_numpy(rgb).permute(2, 0, 1).contiguous().cuda()
        for q in (75, 80):
            try:
                for _ in range(20):
                    encode_jpeg(dev, quality=q).cpu()
                on_gpu, to_host, cpu = [], [], []
                for _ in range(max(RUNS, 100)):
                    torch.cuda.synchronize()
                    c0, t0 = time.process_time(), time.perf_counter()
                    out = encode_jpeg(dev, quality=q)
                    torch.cuda.synchronize()
                    t1 = time.perf_counter()
                    b = out.cpu()
                    t2, c1 = time.perf_counter(), time.process_time()
                    on_gpu.append((t1 - t0) * 1e3)
                    to_host.append((t2 - t0) * 1e3)
                    cpu.append((c1 - c0) * 1e3)
                r = {"frame": name, "w": w, "h": h, "q": q, "ss": "444", "gpu_ms_median": statistics.median(on_gpu),
                     "host_ms_median": statistics.median(to_host), "cpu_ms_median": statistics.median(cpu),
                     "bytes": int(out.numel()), "psnr": psnr(bytes(b.numpy()), rgb)}
            except Exception as e:
                r = {"frame": name, "q": q, "error": repr(e)}
                traceback.print_exc()
            rows.append(r)
            log("nvjpeg", json.dumps(r))
            save()


def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().split(") ")[1].split()
    return int(f[11]) + int(f[12])


def part_present():
    import threading
    from urllib.parse import parse_qs, urlparse
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from wsraw import RawWS, parse_frame
    rows = RESULTS.setdefault("present", [])
    warm_s, meas_s = float(os.environ.get("PRESENT_WARM", "3")), float(os.environ.get("PRESENT_SECONDS", "8"))
    hz = os.sysconf("SC_CLK_TCK")
    for size in os.environ.get("PRESENT_SIZES", "1920x1080,3840x2160").split(","):
        w, h = map(int, size.split("x"))
        for mode in os.environ.get("PRESENT_MODES", "http,bitmap,newest,behind,jpeg-wgpu").split(","):
            # http: rendercanvas' own http backend; bitmap: rendercanvas' bitmap context into rcanvas; newest,
            # behind: rcanvas' ring; jpeg-wgpu: JPEG on the app's device (rcanvas._wgpu)
            env = dict(os.environ, SIZE=size, PYTHONUNBUFFERED="1")
            if mode == "http":
                env["BACKEND"] = "http"
            elif mode.startswith("jpeg-wgpu"):  # jpeg-wgpu, jpeg-wgpu-newest, jpeg-wgpu-behind
                env.update(CODEC="jpeg-wgpu", RCANVAS_WGPU_PRESENT=mode[len("jpeg-wgpu-"):] or "auto")
            else:
                env.update(RCANVAS_WGPU_PRESENT=mode, CODEC="jpeg")
            env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
            if os.environ.get("APP_LD_LIBRARY_PATH"):   # librcanvas' Debian libraries, for the app alone
                env["LD_LIBRARY_PATH"] = os.environ["APP_LD_LIBRARY_PATH"]
            proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "wgpu_cube_app.py")], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines, errs = [], []
            threading.Thread(target=lambda: [lines.append(x) for x in proc.stdout], daemon=True).start()
            threading.Thread(target=lambda: [errs.append(x) for x in proc.stderr], daemon=True).start()
            r = {"size": size, "mode": mode}
            try:
                end = time.monotonic() + 60
                url = None
                while url is None and time.monotonic() < end and proc.poll() is None:
                    url = next((x.split()[1] for x in list(lines) if x.startswith("url ")), None)
                    time.sleep(0.05)
                if url is None:
                    raise RuntimeError("no url; stderr: " + "".join(errs)[-2000:])
                u = urlparse(url)
                http = mode == "http"
                ws = RawWS("127.0.0.1", u.port, "/ws" if http else
                           f"/c/bench/ws?token={parse_qs(u.query)['token'][0]}")
                ws.sock.settimeout(30)
                meta = None  # http: the framebufferdata message whose buffer comes next
                if http:  # its canvas is 1x1 until a view reports its size (renderview's resize event)
                    ws.send_json({"type": "resize", "width": w, "height": h, "pwidth": w, "pheight": h,
                                  "ratio": 1, "timestamp": time.time()})

                def stats():
                    s = [x for x in list(lines) if x.startswith("stats ")]
                    return json.loads(s[-1][6:]) if s else {}

                n, tiles, nbytes, t_start = 0, 0, 0, time.monotonic()
                phase, c0, s0, t0 = "warm", 0, {}, 0.0

                def take(m):
                    """One message as a viewer takes it (acks, feedback); (a frame ended, a JPEG that holds the
                    picture's top-left corner or None)."""
                    nonlocal meta, n, tiles, nbytes
                    if http:  # renderview's protocol: a JSON message, then its buffer; feedback as its client
                        if isinstance(m, str):
                            meta = json.loads(m)
                            return False, None
                        mt, meta = meta, None
                        if not mt or mt.get("type") != "framebufferdata":
                            return False, None
                        ws.send_json({"type": "_framefeedback", "index": mt["index"],
                                      "timestamp": mt["timestamp"], "localtime": time.time()})
                        r["codec_id"] = mt.get("mimetype")
                        if "png" in mt.get("mimetype", ""):   # the lossless redraw is not a frame
                            return False, None
                        n, tiles, nbytes = n + 1, tiles + 1, nbytes + len(m)
                        r["frame_size"] = size
                        return True, m
                    if isinstance(m, str):
                        return False, None
                    hd, payload = parse_frame(m)
                    if hd["flags"] & 2:   # the frame's last tile: acked as the browser does
                        ws.send_json({"type": "ack", "seq": hd["seq"]})
                    if hd["flags"] & 4:   # refinements are not frames
                        return False, None
                    tiles, nbytes = tiles + 1, nbytes + len(payload)
                    n += bool(hd["flags"] & 2)
                    r["frame_size"] = f"{hd['frame_width']}x{hd['frame_height']}"
                    r["codec_id"] = hd["codec"]
                    corner = payload if hd["x"] == 0 and hd["y"] == 0 and payload[:2] == b"\xff\xd8" else None
                    return bool(hd["flags"] & 2), corner

                while True:
                    now = time.monotonic()
                    if phase == "warm" and now - t_start >= warm_s:
                        phase, n, tiles, nbytes = "measure", 0, 0, 0
                        c0, s0, t0 = cpu_ticks(proc.pid), stats(), now
                    if phase == "measure" and now - t0 >= meas_s:
                        break
                    take(ws.recv())
                secs, c1 = time.monotonic() - t0, cpu_ticks(proc.pid)
                n_meas, tiles_meas, bytes_meas = n, tiles, nbytes
                t_next = time.monotonic() + 1.1   # the app prints its counters once a second
                while time.monotonic() < t_next:
                    take(ws.recv())
                s1 = stats()
                # click to picture: a pointer_down (the app toggles its background between black and green), then
                # the time until a picture arrives whose top-left corner has the new colour (decoded at 1/8 scale)
                import simplejpeg
                click_ms = []
                for k in range(CLICKS):
                    green = k % 2 == 0
                    ev = {"x": w / 2, "y": h / 2, "button": 1, "buttons": [1], "modifiers": []}
                    tc = time.monotonic()
                    if http:
                        ws.send_json({"type": "pointer_down", "timestamp": time.time(), **ev})
                        ws.send_json({"type": "pointer_up", "timestamp": time.time(), **ev, "buttons": []})
                    else:
                        ws.send_json({"event_type": "pointer_down", "ntouches": 0, "touches": {},
                                      "time_stamp": time.time(), **ev})
                        ws.send_json({"event_type": "pointer_up", "ntouches": 0, "touches": {},
                                      "time_stamp": time.time(), **ev, "buttons": []})
                    while time.monotonic() - tc < 5:
                        _, jpg = take(ws.recv())
                        ta = time.monotonic()
                        if jpg is not None:
                            px = simplejpeg.decode_jpeg(jpg, min_factor=8)[0, 0]
                            if (px[1] > 120 and px[0] < 100) == green:
                                click_ms.append((ta - tc) * 1e3)
                                break
                    t_next = time.monotonic() + 0.2
                    while time.monotonic() < t_next:
                        take(ws.recv())
                ws.close()
                d = {k: s1.get(k, 0) - s0.get(k, 0) for k in s1 if isinstance(s1.get(k), (int, float))}
                n, tiles, nbytes = n_meas, tiles_meas, bytes_meas
                r.update(fps=n / secs, cpu_ms_per_frame=(c1 - c0) * 1e3 / hz / max(1, n),
                         cpu_pct=(c1 - c0) * 100 / hz / secs, bytes_per_frame=nbytes / max(1, n),
                         tiles_per_frame=tiles / max(1, n), seconds=secs, click_ms=click_ms,
                         click_ms_median=statistics.median(click_ms) if click_ms else None,
                         context=s1.get("context"), stats_delta=d)
            except Exception as e:
                r["error"] = repr(e)
                r["stderr"] = "".join(errs)[-1500:]
                traceback.print_exc()
            finally:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            rows.append(r)
            log("present", json.dumps(r))
            save()


def main():
    fr = []
    try:
        fr = frames()
        log("frames", [(n, w, h) for n, w, h, _ in fr])
    except Exception:
        traceback.print_exc()
    dev = enc = None
    for part in PARTS:
        t = time.perf_counter()
        try:
            if part == "jpeg-wgpu":
                dev, enc = part_jpeg_wgpu(fr)
            elif part == "pipelined" and enc is not None:
                part_pipelined(fr, dev, enc)
            elif part == "nvjpeg":
                part_nvjpeg(fr)
            elif part == "present":
                part_present()
        except Exception as e:
            RESULTS.setdefault("errors", {})[part] = repr(e)
            traceback.print_exc()
        log(f"== {part}: {time.perf_counter() - t:.1f} s")
        save()


if __name__ == "__main__":
    main()
