# SPDX-License-Identifier: MIT
# jpeg-wgpu (python/rcanvas/jpeg_wgpu.py): the WGSL port of rcanvas' GPU JPEG encoder, on whatever wgpu adapter
# is there (Mesa's lavapipe in CI). Its files must decode with libjpeg-turbo (simplejpeg or Pillow), and match
# jpeg-gpu, the Vulkan encoder (build/rcanvas-encode --codec jpeg-gpu, on lavapipe too: RCANVAS_GPU_CODEC_DEVICE=
# any), within 0.1 dB PSNR and 2 % size at the same quality and subsampling, on frames of the corpus
# (RCANVAS_FRAMES_DIR, default ../shared/frames) cropped to 640×480 and an odd 333×211, or on generated frames
# (thin coloured lines, text-like strokes, a noisy field) where the corpus is absent. The same port of the same
# float arithmetic gives the same bytes on lavapipe; that is printed, not required (another driver may contract
# a multiply-add differently). libjpeg-turbo's figures at the same settings are printed beside them (pytest -s).
import base64
import glob
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed")
wgpu = pytest.importorskip("wgpu", reason="wgpu (wgpu-py) is not installed: pip install wgpu")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
from rcanvas.jpeg_wgpu import JpegWgpuEncoder, jfif_header  # noqa: E402

try:
    import simplejpeg
except ImportError:
    simplejpeg = None
try:
    from PIL import Image
except ImportError:
    Image = None

FRAMES_DIR = os.environ.get("RCANVAS_FRAMES_DIR", os.path.join(ROOT, "..", "shared", "frames"))
BUILD_DIR = os.environ.get("RCANVAS_BUILD_DIR", os.path.join(ROOT, "build"))
ENCODE_TOOL = os.path.join(BUILD_DIR, "rcanvas-encode")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(autouse=True)
def _time_limit(request):
    """Without pytest-timeout, a per-test limit of our own (SIGALRM), so that no test can hang the suite."""
    if request.config.pluginmanager.hasplugin("timeout") or not hasattr(signal, "SIGALRM"):
        yield
        return
    marker = request.node.get_closest_marker("timeout")
    limit = int(marker.args[0]) if marker and marker.args else 240

    def expired(signum, frame):
        raise TimeoutError("test_jpeg_wgpu: over %d s" % limit)

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(limit)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ---- helpers ----

def decode(jpeg):
    """RGB uint8 array decoded by libjpeg-turbo (simplejpeg, else Pillow)."""
    if simplejpeg is not None:
        return simplejpeg.decode_jpeg(jpeg, colorspace="RGB")
    if Image is not None:
        import io
        return np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))
    pytest.skip("neither simplejpeg nor Pillow is installed (a libjpeg-turbo decoder)")


def turbo_encode(rgb, quality, ss):
    """libjpeg-turbo's file at the same quality and subsampling (standard tables, no optimize), or None."""
    if simplejpeg is not None:
        return simplejpeg.encode_jpeg(np.ascontiguousarray(rgb), quality=quality, colorspace="RGB",
                                      colorsubsampling="420" if ss == "420" else "444")
    if Image is not None:
        import io
        b = io.BytesIO()
        Image.fromarray(rgb).save(b, "JPEG", quality=quality, subsampling=2 if ss == "420" else 0)
        return b.getvalue()
    return None


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def markers(jpeg):
    """The marker segments before the scan: [(marker, payload)], up to SOS (T.81 B.1.1.4)."""
    out, i = [], 2
    assert jpeg[:2] == b"\xff\xd8"
    while i < len(jpeg):
        assert jpeg[i] == 0xFF
        m = jpeg[i + 1]
        n = struct.unpack(">H", jpeg[i + 2:i + 4])[0]
        out.append((m, jpeg[i + 4:i + 2 + n]))
        i += 2 + n
        if m == 0xDA:
            break
    return out, i


def generated_frame(w, h, seed=1):
    """A plot-like frame: white, a grid, thin coloured polylines, rows of 1-px text-like strokes, a noisy field."""
    rng = np.random.default_rng(seed)
    img = np.full((h, w, 3), 255, np.uint8)
    img[::max(h // 8, 2), :] = (200, 200, 200)
    img[:, ::max(w // 10, 2)] = (200, 200, 200)
    xs = np.arange(w)
    for k, col in enumerate([(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)]):
        ys = (h / 2 + h / 3 * np.sin(xs / (17.0 + 9 * k) + k) + rng.normal(0, 2, w)).astype(int).clip(0, h - 1)
        img[ys, xs] = col
        img[(ys + 1).clip(0, h - 1), xs] = col
    for ty in range(4, h // 4, 9):   # "text": 5×7 glyph cells of random strokes
        for tx in range(4, w - 6, 6):
            cell = rng.random((7, 5)) < 0.35
            img[ty:ty + 7, tx:tx + 5][cell] = (20, 20, 20)
    hh = h // 4
    field = (rng.random((hh, w // 3)) * 255).astype(np.uint8)
    img[h - hh:, :w // 3, 0] = field
    img[h - hh:, :w // 3, 1] = 255 - field
    img[h - hh:, :w // 3, 2] = field // 2
    return img


def corpus():
    """(name, RGB array) of the corpus' 1920×1080 frames, or generated frames where it is absent."""
    files = sorted(glob.glob(os.path.join(FRAMES_DIR, "*-1920x1080.png"))) if Image is not None else []
    if not files:
        return [("generated-a", generated_frame(1280, 720, 1)), ("generated-b", generated_frame(1280, 720, 2))]
    return [(os.path.basename(f)[:-4], np.asarray(Image.open(f).convert("RGB"))) for f in files]


_CORPUS = corpus()
SIZES = [(640, 480), (333, 211)]


def crop(rgb, w, h):
    """A w×h crop of a frame where it has the most detail (of a 4×4 grid of places; the middle of the text frame is
    blank), so that every crop exercises the coder."""
    H, W = rgb.shape[:2]
    best = None
    for y in np.linspace(0, H - h, 4).astype(int):
        for x in np.linspace(0, W - w, 4).astype(int):
            c = rgb[y:y + h, x:x + w]
            score = float(np.abs(np.diff(c[::4, ::4].astype(np.int16), axis=1)).mean())
            if best is None or score > best[0]:
                best = (score, y, x)
    _, y, x = best
    return np.ascontiguousarray(rgb[y:y + h, x:x + w])


def write_ppm(path, rgb):
    h, w = rgb.shape[:2]
    with open(path, "wb") as f:
        f.write(b"P6 %d %d 255\n" % (w, h))
        f.write(rgb.tobytes())


def jpeg_gpu(rgb, quality, ss, tmp, restart=None):
    """jpeg-gpu's file (the Vulkan encoder through rcanvas-encode), or None where the tool is missing."""
    if not os.access(ENCODE_TOOL, os.X_OK):
        return None
    src, dst = os.path.join(tmp, "in.ppm"), os.path.join(tmp, "out.jpg")
    write_ppm(src, rgb)
    env = dict(os.environ, RCANVAS_GPU_CODEC_DEVICE="any")   # lavapipe is a CPU device: allow it here
    env.pop("RCANVAS_GPU_JPEG_PATH", None)
    if restart:
        env["RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL"] = str(restart)
    else:
        env.pop("RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL", None)
    r = subprocess.run([ENCODE_TOOL, "--codec", "jpeg-gpu", "--quality", str(quality), "--subsampling", ss, src,
                        dst], env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.skip("rcanvas-encode --codec jpeg-gpu failed (no Vulkan device?): %s" % r.stderr.strip())
    with open(dst, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def device():
    try:
        import wgpu.utils
        return wgpu.utils.get_default_device()
    except Exception as e:  # no adapter at all (no Vulkan/GL/Metal driver)
        pytest.skip("no wgpu adapter: %s" % e)


@pytest.fixture(scope="module")
def enc(device):
    return JpegWgpuEncoder(device)


def texture_of(device, rgb, fmt="rgba8unorm", usage=None):
    h, w = rgb.shape[:2]
    rgba = np.concatenate([rgb, np.full((h, w, 1), 255, np.uint8)], axis=2)
    if fmt.startswith("bgra"):
        rgba = rgba[..., [2, 1, 0, 3]]
    usage = wgpu.TextureUsage.TEXTURE_BINDING if usage is None else usage
    t = device.create_texture(size=(w, h, 1), format=fmt, usage=usage | wgpu.TextureUsage.COPY_DST)
    device.queue.write_texture({"texture": t, "mip_level": 0, "origin": (0, 0, 0)}, np.ascontiguousarray(rgba),
                               {"offset": 0, "bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1))
    return t


# ---- tests ----

@pytest.mark.timeout(120)
@pytest.mark.parametrize("ss", ["420", "444"])
@pytest.mark.parametrize("w,h", [(1, 1), (17, 9), (16, 16), (333, 211)])
def test_decodes_with_libjpeg_turbo(enc, w, h, ss):
    rgb = generated_frame(max(w, 32), max(h, 32), 3)[:h, :w].copy()
    jpeg = enc.encode_array(rgb, 85, ss)
    segs, _ = markers(jpeg)
    sof = [p for m, p in segs if m == 0xC0][0]
    assert struct.unpack(">BHHB", sof[:6]) == (8, h, w, 3)
    assert sof[7] == (0x22 if ss == "420" else 0x11)
    assert jpeg.endswith(b"\xff\xd9")
    out = decode(jpeg)
    assert out.shape == (h, w, 3)
    turbo = turbo_encode(rgb, 85, ss)
    if turbo is not None:   # the same tables: close to libjpeg-turbo's quality (1-px detail and noise are hard)
        assert psnr(out, rgb) > psnr(decode(turbo), rgb) - 1.0
    assert jpeg[:len(jfif_header(w, h, 85, ss))] == jfif_header(w, h, 85, ss)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("ss", ["420", "444"])
@pytest.mark.parametrize("w,h", SIZES)
def test_matches_jpeg_gpu_and_libjpeg_turbo(enc, w, h, ss):
    """Per frame: PSNR and size of jpeg-wgpu, jpeg-gpu and libjpeg-turbo at q80; jpeg-wgpu within 0.1 dB and 2 %
    of jpeg-gpu. libjpeg-turbo (islow DCT, its own chroma downsampling) is only held to a loose bound."""
    q = 80
    tmp = tempfile.mkdtemp(prefix="jpeg_wgpu_")
    rows, have_gpu = [], False
    try:
        for name, frame in _CORPUS:
            rgb = crop(frame, w, h)
            mine = enc.encode_array(rgb, q, ss)
            p_mine = psnr(decode(mine), rgb)
            ref = jpeg_gpu(rgb, q, ss, tmp)
            turbo = turbo_encode(rgb, q, ss)
            row = {"frame": name, "size": "%dx%d" % (w, h), "ss": ss, "wgpu_bytes": len(mine),
                   "wgpu_psnr": round(p_mine, 3), "ms": round(enc.last["ms"], 1)}
            if ref is not None:
                have_gpu = True
                p_ref = psnr(decode(ref), rgb)
                row.update(gpu_bytes=len(ref), gpu_psnr=round(p_ref, 3), identical=mine == ref)
                assert abs(p_mine - p_ref) <= 0.1, row
                assert abs(len(mine) - len(ref)) <= 0.02 * len(ref), row
            if turbo is not None:
                p_t = psnr(decode(turbo), rgb)
                row.update(turbo_bytes=len(turbo), turbo_psnr=round(p_t, 3))
                # the same tables; the float AAN DCT and chroma of the averaged RGB cost little
                assert p_mine > p_t - 1.0 and len(mine) < 1.25 * len(turbo), row
            rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    for r in rows:
        print("jpeg-wgpu %(frame)s %(size)s %(ss)s: %(wgpu_bytes)d B %(wgpu_psnr).2f dB %(ms).1f ms" % r,
              "| jpeg-gpu %d B %.2f dB%s" % (r["gpu_bytes"], r["gpu_psnr"], " (same bytes)" if r["identical"] else "")
              if "gpu_bytes" in r else "| jpeg-gpu: -",
              "| libjpeg-turbo %d B %.2f dB" % (r["turbo_bytes"], r["turbo_psnr"]) if "turbo_bytes" in r else "")
    if not have_gpu:
        pytest.skip("compared with libjpeg-turbo only: %s is missing (build rcanvas)" % ENCODE_TOOL)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fmt", ["rgba8unorm", "bgra8unorm", "rgba8unorm-srgb", "bgra8unorm-srgb"])
def test_texture_formats_and_copy_path(device, enc, fmt):
    """The stored bytes are encoded whatever the format: read by the DCT pass (TEXTURE_BINDING, an -srgb view
    re-encoded after textureLoad's decode) or copied first (COPY_SRC only): the same file as from rgba8unorm."""
    rgb = crop(_CORPUS[0][1], 333, 211)
    want = enc.encode_array(rgb, 90, "444")
    direct = enc.encode(texture_of(device, rgb, fmt), 90, "444")
    assert enc.last["direct"]
    copied = enc.encode(texture_of(device, rgb, fmt, wgpu.TextureUsage.COPY_SRC), 90, "444")
    assert not enc.last["direct"]
    assert direct == want
    assert copied == want


@pytest.mark.timeout(120)
def test_region_of_a_larger_texture(device, enc):
    rgb = crop(_CORPUS[0][1], 200, 120)
    t = texture_of(device, rgb)
    assert enc.encode(t, 75, "420", size=(123, 77)) == enc.encode_array(rgb[:77, :123].copy(), 75, "420")
    with pytest.raises(ValueError):
        enc.encode(t, 75, "420", size=(201, 10))
    with pytest.raises(ValueError):
        enc.encode(t, 0, "420")
    with pytest.raises(ValueError):
        enc.encode(t, 75, "422")


@pytest.mark.timeout(120)
def test_reads_back_only_the_data(enc):
    """8 bytes (the length and the chroma measure's count, mapped first), then the data rounded up to 4: not the
    worst-case buffer."""
    rgb = crop(_CORPUS[0][1], 640, 480)
    jpeg = enc.encode_array(rgb, 80, "420")
    n = enc.last["data_bytes"]
    assert enc.last["read_back"] == 8 + (n + 3) // 4 * 4
    assert len(jpeg) == len(jfif_header(640, 480, 80, "420")) + n + 2
    assert enc.last["read_back"] < 640 * 480 * 1.5 // 64 * 256 / 4   # the data buffer is 256 bytes a block


def auto_choice(rgb, tmp):
    """What rcanvas' CPU encoder's AUTO subsampling chooses for the whole frame ("420" or "444"): rcanvas-encode
    --subsampling auto says it; None where the tool is missing."""
    if not os.access(ENCODE_TOOL, os.X_OK):
        return None
    src, dst = os.path.join(tmp, "auto.ppm"), os.path.join(tmp, "auto.jpg")
    write_ppm(src, rgb)
    r = subprocess.run([ENCODE_TOOL, "--codec", "jpeg", "--subsampling", "auto", src, dst], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return "444" if " auto 4:4:4" in r.stdout else "420"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fmt", ["rgba8unorm", "bgra8unorm-srgb"])
def test_chroma_measure_chooses_as_the_cpu_encoders_auto(device, enc, fmt, tmp_path):
    """measure_chroma: the WGSL port of the CPU encoder's AUTO rule (chroma_needs_444) counts the same blocks, so
    jpeg-wgpu codes a frame's successor with the chroma rcanvas' own encoder would choose: 4:4:4 for thin coloured
    lines and coloured text, 4:2:0 for photographic or smooth content. Checked on each corpus frame (or generated
    ones), at 640×480 and an odd size, against rcanvas-encode --subsampling auto; at least one of each choice."""
    seen = set()
    frames = [(n, crop(rgb, w, h)) for n, rgb in _CORPUS for (w, h) in SIZES]
    y, x = np.mgrid[0:240, 0:320]
    smooth = np.stack([x * 255 // 319, y * 255 // 239, (x + y) * 255 // 558], -1).astype(np.uint8)
    lines = np.full((240, 320, 3), 255, np.uint8)
    lines[100, :], lines[:, 50] = (220, 30, 40), (30, 60, 220)
    frames += [("smooth", smooth), ("one-px lines", lines)]
    for name, rgb in frames:
        want = auto_choice(rgb, str(tmp_path))
        if want is None:
            pytest.skip("no build/rcanvas-encode (make build)")
        tex = texture_of(device, rgb, fmt)
        enc.submit(tex, 80, "420", measure_chroma=True).result()
        got = "444" if enc.last["needs_444"] else "420"
        print(f"{name} {rgb.shape[1]}x{rgb.shape[0]} {fmt}: {enc.last['chroma_lossy']} lossy blocks of a need of "
              f"{enc.last['chroma_need']}: {got}; the CPU encoder's AUTO: {want}")
        assert got == want, (name, enc.last)
        seen.add(got)
    assert seen == {"420", "444"}, seen


@pytest.mark.timeout(180)
@pytest.mark.parametrize("ss", ["420", "444"])
def test_restart_intervals(enc, device, ss):
    """restart_interval=N: a DRI segment, RST0..7 markers in turn (T.81 B.2.1), one between intervals; the same
    as jpeg-gpu's with RCANVAS_GPU_JPEG_MCUS_PER_INTERVAL=N."""
    rgb = crop(_CORPUS[-1][1], 333, 211)
    r_enc = JpegWgpuEncoder(device, restart_interval=5)
    jpeg = r_enc.encode_array(rgb, 90, ss)
    segs, start = markers(jpeg)
    assert [p for m, p in segs if m == 0xDD] == [b"\x00\x05"]
    mcu = 16 if ss == "420" else 8
    mcus = ((333 + mcu - 1) // mcu) * ((211 + mcu - 1) // mcu)
    data = jpeg[start:-2]
    rst = [data[i + 1] for i in range(len(data) - 1) if data[i] == 0xFF and 0xD0 <= data[i + 1] <= 0xD7]
    assert rst == [0xD0 + i % 8 for i in range((mcus + 4) // 5 - 1)]
    assert psnr(decode(jpeg), rgb) > 25
    tmp = tempfile.mkdtemp(prefix="jpeg_wgpu_")
    try:
        ref = jpeg_gpu(rgb, 90, ss, tmp, restart=5)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if ref is None:
        pytest.skip("%s is missing: not compared with jpeg-gpu" % ENCODE_TOOL)
    assert abs(psnr(decode(jpeg), rgb) - psnr(decode(ref), rgb)) <= 0.1
    assert abs(len(jpeg) - len(ref)) <= 0.02 * len(ref)


@pytest.mark.timeout(180)
def test_quality_extremes_and_stuffing(enc):
    """q1 and q100 decode; noise at q100 gives many 0xFF bytes, each followed by a stuffed 0x00 (T.81 F.1.2.3)."""
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    for q in (1, 100):
        jpeg = enc.encode_array(noise, q, "444")
        out = decode(jpeg)
        if q == 100:
            assert psnr(out, noise) > 40
            _, start = markers(jpeg)
            data = jpeg[start:-2]
            ff = [i for i in range(len(data)) if data[i] == 0xFF]
            assert ff and all(data[i + 1] == 0 for i in ff)


@pytest.mark.timeout(180)
def test_async_submit_and_siblings(enc, device):
    import asyncio
    rgb = crop(_CORPUS[0][1], 320, 200)
    want = enc.encode_array(rgb, 80, "420")
    t = texture_of(device, rgb)
    assert asyncio.run(enc.encode_async(t, 80, "420")) == want
    sib = enc.sibling()
    p1 = enc.submit(t, 80, "420")
    with pytest.raises(RuntimeError):
        enc.submit(t, 80, "420")   # one encode in flight per encoder
    p2 = sib.submit(t, 80, "444")
    assert p1.result() == want
    assert decode(p2.result()).shape == (200, 320, 3)


CHROMIUM_SCRIPT = r"""
import { launchBrowser } from %s;
const files = JSON.parse(process.argv[1]);
const browser = await launchBrowser();
try {
  const page = await browser.newPage();
  const out = [];
  for (const f of files) {
    out.push(await page.evaluate(async (b64) => {
      const img = new Image();
      img.src = 'data:image/jpeg;base64,' + b64;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.naturalWidth; c.height = img.naturalHeight;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      return { w: img.naturalWidth, h: img.naturalHeight,
               rgba: Array.from(g.getImageData(0, 0, c.width, c.height).data) };
    }, f));
  }
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
"""


@pytest.mark.timeout(120)
def test_decodes_in_chromium(enc):
    """Optional: Chromium (Debian's, through playwright-core as the browser tests launch it) decodes the files."""
    lib = os.path.join(ROOT, "tests", "browser", "lib.mjs")
    node = shutil.which("node")
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not node or not os.path.exists(chromium) or \
            not os.path.isdir(os.path.join(ROOT, "tests", "browser", "node_modules", "playwright-core")):
        pytest.skip("node, Chromium or tests/browser/node_modules (playwright-core) missing")
    frames = [crop(_CORPUS[0][1], 333, 211), crop(_CORPUS[-1][1], 64, 48)]
    files = [enc.encode_array(frames[0], 80, "420"), enc.encode_array(frames[1], 90, "444")]
    script = CHROMIUM_SCRIPT % json.dumps("file://" + lib)
    r = subprocess.run([node, "--input-type=module", "-e", script,
                        json.dumps([base64.b64encode(f).decode() for f in files])],
                       capture_output=True, text=True, timeout=100, cwd=os.path.join(ROOT, "tests", "browser"))
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for rgb, jpeg, g in zip(frames, files, got):
        h, w = rgb.shape[:2]
        assert (g["w"], g["h"]) == (w, h)
        px = np.array(g["rgba"], np.uint8).reshape(h, w, 4)[..., :3]
        # Chromium's upsampling of 4:2:0 chroma may differ from simplejpeg's: the PSNR, not the bytes
        assert psnr(px, rgb) > psnr(decode(jpeg), rgb) - 1.0
