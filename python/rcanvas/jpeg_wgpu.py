# SPDX-License-Identifier: MIT
"""jpeg-wgpu: rcanvas' GPU JPEG encoder (src/codec/gpu/jpeg_*.comp, "jpeg-gpu") ported to WGSL, so that it runs
on the wgpu device an app already renders with (pygfx, fastplotlib: ``wgpu.utils.get_default_device()``).
wgpu-native exposes no Vulkan handles, so the Vulkan encoder cannot read a wgpu texture; this one does, and only
the finished entropy-coded data crosses to the host.

    from rcanvas.jpeg_wgpu import JpegWgpuEncoder
    enc = JpegWgpuEncoder(device)                      # pipelines are compiled once here
    jpeg = enc.encode(texture, quality=80, subsampling="420")      # bytes of a complete JFIF file
    jpeg = await enc.encode_async(texture, quality=80)             # same, awaiting the two buffer maps
    pending = enc.submit(texture, quality=80); ...; jpeg = pending.result()   # overlap with the app's work

The stages mirror jpeg-gpu's block-parallel path (baseline sequential DCT, ITU-T T.81 Annex F), each a compute
shader below:
  1. dct    RGBA → YCbCr (JFIF, BT.601 full range), 4:2:0 or 4:4:4, 8×8 forward DCT (AAN factorization, as
            libjpeg's jfdctflt.c), quantization with the Annex K tables scaled as libjpeg's jpeg_quality_scaling,
            coefficients in zigzag order (T.81 Figure A.6) and a 64-bit mask of the nonzero ones per block.
            It reads the texture with textureLoad (usage TEXTURE_BINDING); a texture without it but with
            COPY_SRC is copied into a buffer first. Edge MCUs replicate the last column/row, as libjpeg pads.
  2. blk    Huffman coding (T.81 F.1.2, Annex K tables K.3–K.6) of every 8×8 block in parallel into a slot of
            its own (at most 1728 bits), and its bit count.
  3. scan   exclusive prefix sums (reduce-then-scan, levels of 1024, no inter-workgroup waiting) of the bit
            counts: every block's bit offset in the scan's stream.
  4. place  the unstuffed stream gathered bit-aligned word by word, each restart interval padded with 1-bits
            (T.81 F.1.2.3), and per word the number of 0xFF bytes (each gets a stuffed 0x00, T.81 F.1.2.3 / B.1.1.5)
            and of interval ends (each gets an RSTn marker, T.81 B.2.1); those counts are prefix-summed too.
  5. pack   the compacted, stuffed entropy-coded data with RSTn markers, one 32-bit word per invocation.
Restart intervals are off by default, as in jpeg-gpu (the smallest file); ``restart_interval=N`` MCUs turns them
on (DRI in the header). The host builds the headers (SOI, APP0, DQT, SOF0, DHT, DRI, SOS) and EOI.

Bytes read back per frame: 8 (the data's length, and the chroma measure's count, mapped first) + the data's length
rounded up to 4. Never the
worst-case buffer. Two small waits per frame (the length, then the data); ``submit`` lets the caller overlap them
with its own work, and ``sibling()`` gives a second encoder sharing the pipelines so several frames can be in
flight.

GPU memory at w×h (nb = 8×8 blocks: w·h/64·1.5 for 4:2:0, ·3 for 4:4:4): ≈ nb × 860 bytes (coefficients 256,
block slots 256, the unstuffed stream and its counts ≤ 2×216, output 256), e.g. ≈ 38 MB at 1920×1080 4:2:0. The
device's max_storage_buffer_binding_size (128 MiB by default) bounds the frame: 4K 4:4:4 fits.
"""

import array
import struct
import time

__all__ = ["JpegWgpuEncoder", "JpegWgpuError", "quant_table", "jfif_header"]


class JpegWgpuError(RuntimeError):
    """The GPU could not encode this frame (e.g. a stream past its buffers): encode it on the CPU."""


# ---- tables (ITU-T T.81 Annex K) ----

# K.1 and K.2, natural (row-major) order
_STD_Q = (
    (16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
     14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
     49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99),
    (17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99,
     47, 66, 99, 99, 99, 99, 99, 99) + (99,) * 32,
)
# K.3–K.6 as BITS (codes of each length 1..16) and HUFFVAL
_DC_BITS = ((0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0), (0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0))
_DC_VALS = tuple(range(12))
_AC_BITS = ((0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D), (0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77))
_AC_VALS = (
    bytes.fromhex(
        "01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a161718191a25262728292a"
        "3435363738393a434445464748494a535455565758595a636465666768696a737475767778797a838485868788898a929394"
        "95969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8"
        "e9eaf1f2f3f4f5f6f7f8f9fa"),
    bytes.fromhex(
        "000102031104052131061241510761711322328108144291a1b1c109233352f0156272d10a162434e125f11718191a262728"
        "292a35363738393a434445464748494a535455565758595a636465666768696a737475767778797a82838485868788898a92"
        "939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4e5e6e7"
        "e8e9eaf2f3f4f5f6f7f8f9fa"),
)
# natural index of zigzag position i (T.81 Figure A.6)
_NATURAL = (0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,
            7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
            39, 46, 53, 60, 61, 54, 47, 55, 62, 63)


def _f32(x):
    """x rounded to float32. A float32 product or quotient computed in double and rounded once to float32 is the
    correctly rounded float32 result (53 >= 2·24 + 2: double rounding is innocuous), so this reproduces C's float
    arithmetic without numpy."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


# AAN scale factors: cos(k·π/16)·√2 for k > 0 (libjpeg jfdctflt.c / jcdctmgr.c), as jpeg-gpu's k_aan (float32)
_AAN = [_f32(v) for v in (1.0, 1.387039845, 1.306562965, 1.175875602, 1.0, 0.785694958, 0.541196100, 0.275899379)]


def quant_table(quality, t):
    """Quantization table (natural order) for component class t (0 luma, 1 chroma) at quality 1–100: the Annex K
    table scaled as libjpeg's jpeg_quality_scaling + jpeg_add_quant_table with force_baseline (1..255)."""
    q = min(max(int(quality), 1), 100)
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return [min(max((v * scale + 50) // 100, 1), 255) for v in _STD_Q[t]]


def _huff_codes(bits, vals):
    """{symbol: (code, length)}: canonical codes assigned in order of length (T.81 Annex C, C.1–C.2)."""
    out, code, k = {}, 0, 0
    for length in range(1, 17):
        for _ in range(bits[length - 1]):
            out[vals[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return out


def _code_table():
    """The coder's table: dc[2][12] then ac[2][256] as u32 code | length << 24 (length 0: no such symbol)."""
    tab = array.array("I", [0] * (24 + 512))
    for t in range(2):
        for s, (c, n) in _huff_codes(_DC_BITS[t], _DC_VALS).items():
            tab[t * 12 + s] = c | (n << 24)
        for s, (c, n) in _huff_codes(_AC_BITS[t], _AC_VALS[t]).items():
            tab[24 + t * 256 + s] = c | (n << 24)
    return tab


def _divisors(quality):
    """[2][64] natural order: 1 / (q · aan[u] · aan[v] · 8), computed in float32 in jpeg-gpu's order so that both
    encoders divide by the same numbers (the AAN DCT's output is scaled by aan[u]·aan[v]·8)."""
    d = array.array("f", [0.0] * 128)
    for t in range(2):
        q = quant_table(quality, t)
        for k in range(64):
            v = _f32(_f32(_f32(float(q[k]) * _AAN[k // 8]) * _AAN[k % 8]) * 8.0)
            d[t * 64 + k] = 1.0 / v   # stored as float32: rounded once
    return d


def jfif_header(width, height, quality, subsampling="420", restart_interval=0):
    """SOI, APP0 (JFIF 1.01, aspect 1:1), DQT ×2, SOF0 (baseline, 3 components: Y 2×2 or 1×1, Cb, Cr 1×1), DHT ×4
    (Annex K), DRI when restart_interval > 0, SOS (T.81 Annex B; JFIF 1.02 for APP0)."""
    h = bytearray(b"\xff\xd8")
    h += b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    for t in range(2):  # B.2.4.1: 8-bit precision, table t, values in zigzag order
        q = quant_table(quality, t)
        h += b"\xff\xdb\x00\x43" + bytes([t]) + bytes(q[_NATURAL[i]] for i in range(64))
    y_hv = 0x22 if _ss420(subsampling) else 0x11  # B.2.2: sampling factors H<<4|V, quant table selector
    h += b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3)
    h += bytes([1, y_hv, 0, 2, 0x11, 1, 3, 0x11, 1])
    for t in range(2):  # B.2.4.2: class (0 DC, 1 AC) << 4 | table
        for ac in range(2):
            bits = _AC_BITS[t] if ac else _DC_BITS[t]
            vals = bytes(_AC_VALS[t] if ac else _DC_VALS)
            h += b"\xff\xc4" + struct.pack(">HB", 3 + 16 + len(vals), (ac << 4) | t) + bytes(bits) + vals
    if restart_interval:  # B.2.4.4
        h += b"\xff\xdd\x00\x04" + struct.pack(">H", restart_interval)
    # B.2.3: 3 components (Y: tables 0/0, Cb and Cr: 1/1), Ss 0, Se 63, Ah/Al 0
    h += b"\xff\xda\x00\x0c\x03\x01\x00\x02\x11\x03\x11\x00\x3f\x00"
    return bytes(h)


def _ss420(subsampling):
    s = str(subsampling).replace(":", "")
    if s in ("420", "2"):
        return True
    if s in ("444", "0"):
        return False
    raise ValueError("subsampling must be '420' or '444', not %r" % (subsampling,))


# ---- WGSL ----

_ZZ_OF = ", ".join("%du" % _NATURAL.index(k) for k in range(64))  # zigzag position of natural index k

# Stage 1 (jpeg_dct.comp). {INPUT} becomes the texture or buffer input.
_WGSL_DCT = """
struct P { width: u32, height: u32, pitch_px: u32, mcus_x: u32, mcus_y: u32, subsamp420: u32, flags: u32,
           total_blocks: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> coef: array<i32>;          // [block][64], zigzag order
@group(0) @binding(2) var<storage, read> divs: array<f32>;                // [2][64] natural: 1/(q·s_u·s_v·8)
@group(0) @binding(3) var<storage, read_write> nzmask: array<vec2<u32>>;  // per block: bit z = coef z ≠ 0
{INPUT}

// One workgroup = 6 blocks (one 4:2:0 MCU, or two 4:4:4 MCUs) in file order: every texel is fetched and
// colour-converted once into samples, then invocation (block, row) does the row's 1-D DCT, then the column's.
var<workgroup> samples: array<array<array<f32, 9>, 8>, 6>;
var<workgroup> rows: array<array<array<f32, 9>, 8>, 6>;
var<workgroup> nz: array<array<vec2<u32>, 8>, 6>;
var<private> zz_of: array<u32, 64> = array<u32, 64>({ZZ});

fn aan(d: array<f32, 8>) -> array<f32, 8> {   // AAN 1-D forward DCT (libjpeg jfdctflt.c), outputs scaled
    var o: array<f32, 8>;
    let tmp0 = d[0] + d[7]; let tmp7 = d[0] - d[7]; let tmp1 = d[1] + d[6]; let tmp6 = d[1] - d[6];
    let tmp2 = d[2] + d[5]; let tmp5 = d[2] - d[5]; let tmp3 = d[3] + d[4]; let tmp4 = d[3] - d[4];
    let tmp10 = tmp0 + tmp3; let tmp13 = tmp0 - tmp3; let tmp11 = tmp1 + tmp2; let tmp12 = tmp1 - tmp2;
    o[0] = tmp10 + tmp11;
    o[4] = tmp10 - tmp11;
    let z1 = (tmp12 + tmp13) * 0.707106781;
    o[2] = tmp13 + z1;
    o[6] = tmp13 - z1;
    let t10 = tmp4 + tmp5;
    let t11 = tmp5 + tmp6;
    let t12 = tmp6 + tmp7;
    let z5 = (t10 - t12) * 0.382683433;
    let z2 = 0.541196100 * t10 + z5;
    let z4 = 1.306562965 * t12 + z5;
    let z3 = t11 * 0.707106781;
    let z11 = tmp7 + z3; let z13 = tmp7 - z3;
    o[5] = z13 + z2;
    o[3] = z13 - z2;
    o[1] = z11 + z4;
    o[7] = z11 - z4;
    return o;
}

fn to_ycc(c: vec3<f32>) -> vec3<f32> {   // JFIF 1.02 (BT.601 full range), Y level-shifted by -128 (T.81 A.3.1)
    return vec3<f32>(0.299 * c.r + 0.587 * c.g + 0.114 * c.b - 128.0,
                     -0.168735892 * c.r - 0.331264108 * c.g + 0.5 * c.b,
                     0.5 * c.r - 0.418687589 * c.g - 0.081312411 * c.b);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let g = wid.y * nwg.x + wid.x;
    if (g * 6u >= p.total_blocks) { return; }   // a spare group of a 2-D dispatch (uniform in the workgroup)
    if (p.subsamp420 != 0u) {   // invocation t: the 2×2 quad (qx, qy) of the 16×16 MCU
        let mx = g % p.mcus_x; let my = g / p.mcus_x; let qx = t & 7u; let qy = t >> 3u;
        let x = i32(mx * 16u + 2u * qx); let y = i32(my * 16u + 2u * qy);
        let a = rgb_at(x, y); let b = rgb_at(x + 1, y); let c = rgb_at(x, y + 1); let d = rgb_at(x + 1, y + 1);
        let bi = (qy >> 2u) * 2u + (qx >> 2u); let r = (2u * qy) & 7u; let k = (2u * qx) & 7u;
        samples[bi][r][k] = to_ycc(a).x;
        samples[bi][r][k + 1u] = to_ycc(b).x;
        samples[bi][r + 1u][k] = to_ycc(c).x;
        samples[bi][r + 1u][k + 1u] = to_ycc(d).x;
        // chroma of the averaged RGB (the conversion is linear: the average of the converted values, up to
        // rounding), the 2×2 box filter that 4:2:0 (H=V=2 for Y, 1 for Cb/Cr, T.81 A.1.1) samples with
        let m = to_ycc(0.25 * (a + b + c + d));
        samples[4][qy][qx] = m.y;
        samples[5][qy][qx] = m.z;
    } else {   // invocations 32h..32h+31: MCU 2g+h, two texels each
        let h = t >> 5u; let u = t & 31u; let m = min(2u * g + h, p.mcus_x * p.mcus_y - 1u);
        let mx = m % p.mcus_x; let my = m / p.mcus_x; let r = u >> 2u; let k = (u & 3u) * 2u;
        for (var j = 0u; j < 2u; j++) {
            let v = to_ycc(rgb_at(i32(mx * 8u + k + j), i32(my * 8u + r)));
            samples[3u * h][r][k + j] = v.x;
            samples[3u * h + 1u][r][k + j] = v.y;
            samples[3u * h + 2u][r][k + j] = v.z;
        }
    }
    workgroupBarrier();
    let lb = t >> 3u; let r = t & 7u;
    var d: array<f32, 8>;
    if (t < 48u) {   // row r of block lb
        for (var i = 0u; i < 8u; i++) { d[i] = samples[lb][r][i]; }
        d = aan(d);
        for (var i = 0u; i < 8u; i++) { rows[lb][r][i] = d[i]; }
    }
    workgroupBarrier();
    let block = g * 6u + lb;
    let live = t < 48u && block < p.total_blocks;
    if (live) {   // column r of block lb, quantized (T.81 A.3.4) into zigzag order
        for (var i = 0u; i < 8u; i++) { d[i] = rows[lb][i][r]; }
        d = aan(d);
        var comp = lb % 3u;
        if (p.subsamp420 != 0u) { comp = select(lb - 3u, 0u, lb < 4u); }
        let tq = select(1u, 0u, comp == 0u);
        var m = vec2<u32>(0u);
        for (var v = 0u; v < 8u; v++) {
            let k = v * 8u + r; let z = zz_of[k];
            let q = d[v] * divs[tq * 64u + k];
            let c = i32(floor(q + 0.5));   // round half up, as libjpeg's (int)(x + 16384.5) - 16384
            coef[block * 64u + z] = c;
            if (c != 0) { if (z < 32u) { m.x |= 1u << z; } else { m.y |= 1u << (z - 32u); } }
        }
        nz[lb][r] = m;
    }
    workgroupBarrier();
    if (live && r == 0u) {
        var m = nz[lb][0];
        for (var i = 1u; i < 8u; i++) { m |= nz[lb][i]; }
        nzmask[block] = m;
    }
}
"""

_WGSL_DCT_TEXTURE = """
@group(0) @binding(4) var img: texture_2d<f32>;
fn rgb_at(x0: i32, y0: i32) -> vec3<f32> {
    let x = clamp(x0, 0, i32(p.width) - 1);   // edge replication, as libjpeg pads partial MCUs
    let y = clamp(y0, 0, i32(p.height) - 1);
    var c = textureLoad(img, vec2<i32>(x, y), 0).rgb;   // the view orders the channels (bgra too)
    if ((p.flags & 2u) != 0u) {   // an -srgb format decodes to linear on load: encode back (IEC 61966-2-1)
        c = select(12.92 * c, 1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - 0.055, c > vec3<f32>(0.0031308));
    }
    return floor(c * 255.0 + 0.5);   // the stored 8-bit values exactly
}
"""

_WGSL_DCT_BUFFER = """
@group(0) @binding(4) var<storage, read> px: array<u32>;   // the texture copied: 4 bytes a texel, pitch_px a row
fn rgb_at(x0: i32, y0: i32) -> vec3<f32> {
    let x = clamp(x0, 0, i32(p.width) - 1);   // edge replication, as libjpeg pads partial MCUs
    let y = clamp(y0, 0, i32(p.height) - 1);
    let v = px[u32(y) * p.pitch_px + u32(x)];
    let c = vec3<f32>(f32(v & 255u), f32((v >> 8u) & 255u), f32((v >> 16u) & 255u));
    if ((p.flags & 1u) != 0u) { return c.bgr; }
    return c;
}
"""

# The chroma measure of rcanvas' CPU JPEG encoder (src/codec/jpeg.c, chroma_needs_444) for its AUTO subsampling:
# over the 2×2 blocks of a checkerboard (half of them), a block "loses colour" under 4:2:0 when some pixel's Cb or Cr
# lies more than 24 (of 255) from the block's mean; the integer arithmetic is the C code's (×256, truncating
# division). Counts such blocks into lossy[0]; the host compares with a thousandth of the blocks looked at. Run
# beside the encode of a frame, it says which chroma the next frame should have (the count comes back with the
# data's length, in the same 8-byte read).
_WGSL_CHROMA = """
struct P { width: u32, height: u32, pitch_px: u32, mcus_x: u32, mcus_y: u32, subsamp420: u32, flags: u32,
           total_blocks: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(5) var<storage, read_write> lossy: array<atomic<u32>>;
{INPUT}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let by = gid.y;
    let bx = 2u * gid.x + (by & 1u);
    if (2u * by + 1u >= p.height || 2u * bx + 1u >= p.width) { return; }
    let x = i32(2u * bx); let y = i32(2u * by);
    var c = array<vec3<f32>, 4>(rgb_at(x, y), rgb_at(x + 1, y), rgb_at(x, y + 1), rgb_at(x + 1, y + 1));
    var rg: array<i32, 4>; var bg: array<i32, 4>;
    var lo_rg = 255; var hi_rg = -255; var lo_bg = 255; var hi_bg = -255;
    for (var i = 0; i < 4; i++) {
        rg[i] = i32(c[i].r) - i32(c[i].g); bg[i] = i32(c[i].b) - i32(c[i].g);
        lo_rg = min(lo_rg, rg[i]); hi_rg = max(hi_rg, rg[i]); lo_bg = min(lo_bg, bg[i]); hi_bg = max(hi_bg, bg[i]);
    }
    if (hi_rg - lo_rg <= 32 && hi_bg - lo_bg <= 32) { return; }
    var cb: array<i32, 4>; var cr: array<i32, 4>; var mb = 0; var mr = 0;
    for (var i = 0; i < 4; i++) {
        cb[i] = 128 * bg[i] - 43 * rg[i]; cr[i] = 128 * rg[i] - 21 * bg[i]; mb += cb[i]; mr += cr[i];
    }
    mb = mb / 4; mr = mr / 4;
    var dev = 0;
    for (var i = 0; i < 4; i++) { dev = max(dev, max(abs(cb[i] - mb), abs(cr[i] - mr))); }
    if (dev > 24 * 256) { atomicAdd(&lossy[0], 1u); }
}
"""

# Stage 2 (jpeg_blk.comp): one block per invocation.
_WGSL_BLK = """
struct P { n_blocks: u32, blocks_per_mcu: u32, mcus_per_interval: u32, boff: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> coef: array<i32>;
@group(0) @binding(2) var<storage, read> tab: array<u32>;         // dc[2][12], ac[2][256]: code | len << 24
@group(0) @binding(3) var<storage, read_write> slot: array<u32>;  // 64 words a block, MSB first
@group(0) @binding(4) var<storage, read_write> sc: array<u32>;    // bit counts at p.boff
@group(0) @binding(5) var<storage, read> nzmask: array<vec2<u32>>;

var<private> cw: u32;    // the word being filled
var<private> fb: u32;    // its filled bits
var<private> wi: u32;    // words written
var<private> base: u32;  // the block's slot

fn put_bits(code0: u32, n: u32) {   // n ≤ 16
    if (n == 0u) { return; }
    let code = code0 & ((1u << n) - 1u);
    if (fb + n < 32u) { cw |= code << (32u - fb - n); fb += n; return; }
    let n1 = 32u - fb; let n2 = n - n1;   // n1 ≥ 1 bits fill the word, n2 go to the next
    cw |= code >> n2;
    slot[base + wi] = cw; wi++;
    cw = select(code << (32u - n2), 0u, n2 == 0u);
    fb = n2;
}

fn put_code(c: u32) { put_bits(c & 0xFFFFu, c >> 24u); }

fn bitlen(v: u32) -> u32 { return 32u - countLeadingZeros(v); }   // SSSS of T.81 F.1.2.1.1 / F.1.2.2.1

fn put_value(v: i32, s: u32) {   // the additional bits: v, or v - 1 for negative v, low s bits (F.1.2.1.1)
    put_bits(bitcast<u32>(select(v, v - 1, v < 0)), s);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let b = gid.y * nwg.x * 64u + gid.x;
    if (b == 0u) { sc[p.boff + p.n_blocks] = 0u; }   // the scan's extra element: the total after it
    if (b >= p.n_blocks) { return; }
    let bpm = p.blocks_per_mcu; let m = b / bpm; let bi = b % bpm;
    var comp = bi;
    if (bpm == 6u) { comp = select(bi - 3u, 0u, bi < 4u); }
    let t = select(1u, 0u, comp == 0u);
    var start = 0u;
    if (p.mcus_per_interval != 0u) { start = (m / p.mcus_per_interval) * p.mcus_per_interval; }
    // DC prediction (F.1.2.1.1): the previous block of the component in scan order, 0 at an interval's start
    var pred = 0;
    if (bpm == 6u && bi >= 1u && bi <= 3u) {
        pred = coef[(b - 1u) * 64u];
    } else if (m > start) {
        pred = coef[(b - select(bpm, 3u, bpm == 6u && bi == 0u)) * 64u];
    }
    cw = 0u; fb = 0u; wi = 0u; base = b * 64u;
    let cb = b * 64u;
    let diff = coef[cb] - pred;
    let s = bitlen(u32(abs(diff)));
    put_code(tab[t * 12u + s]);
    put_value(diff, s);
    // AC (F.1.2.2): the nonzero coefficients only, from the DCT pass's mask; runs of 16 zeros as ZRL (0xF0)
    let mk = nzmask[b];
    var last = 0u;
    for (var h = 0u; h < 2u; h++) {
        var mm = select(mk.y, mk.x & ~1u, h == 0u);
        while (mm != 0u) {
            let k = firstTrailingBit(mm) + 32u * h;
            mm &= mm - 1u;
            let v = coef[cb + k];
            var run = k - last - 1u;
            while (run > 15u) { put_code(tab[24u + t * 256u + 0xF0u]); run -= 16u; }
            let sz = bitlen(u32(abs(v)));
            put_code(tab[24u + t * 256u + ((run << 4u) | sz)]);
            put_value(v, sz);
            last = k;
        }
    }
    if (last < 63u) { put_code(tab[24u + t * 256u]); }   // EOB
    if (fb > 0u) { slot[base + wi] = cw; }
    sc[p.boff + b] = wi * 32u + fb;
}
"""

# Prefix sums (jpeg_bscan.comp, its shared-memory form): one level of an exclusive scan over sc[].
#   mode 0 (local): group g scans in[g·1024 ..] (256 invocations × 4 values) into out[] and its total to aux[g];
#   mode 1 (add):   out[g·1024 + i] += aux[g] (aux scanned by the level above).
# n is a parameter, or (dyn ≥ 1) read from sc[misc] and divided by 1024^(dyn−1), rounded up: the stuffing
# counts' scan, whose length only the GPU knows (dispatched indirectly).
_WGSL_SCAN = """
struct P { mode: u32, in_base: u32, out_base: u32, aux_base: u32, n: u32, dyn_: u32, misc: u32, mask: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> sc: array<u32>;
var<workgroup> part: array<u32, 256>;
var<workgroup> wn: u32;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let g = wid.y * nwg.x + wid.x;
    if (t == 0u) {
        var n0 = p.n;
        if (p.dyn_ != 0u) {
            n0 = sc[p.misc];
            for (var l = 1u; l < p.dyn_; l++) { n0 = (n0 + 1023u) >> 10u; }
        }
        wn = n0;
    }
    let n = workgroupUniformLoad(&wn);   // uniform for the barriers below
    if (g > 0u && g * 1024u >= n) { return; }   // a spare group of a 2-D or indirect dispatch
    let i0 = g * 1024u + t * 4u;
    if (p.mode == 1u) {
        let a = sc[p.aux_base + g];
        for (var j = 0u; j < 4u; j++) { if (i0 + j < n) { sc[p.out_base + i0 + j] += a; } }
        return;
    }
    var v: array<u32, 4>;
    var s = 0u;
    for (var j = 0u; j < 4u; j++) {
        v[j] = 0u;
        if (i0 + j < n) { v[j] = sc[p.in_base + i0 + j] & p.mask; }
        s += v[j];
    }
    part[t] = s;
    workgroupBarrier();
    for (var d = 1u; d < 256u; d <<= 1u) {   // Hillis–Steele inclusive scan of the 256 partial sums
        var x = 0u;
        if (t >= d) { x = part[t - d]; }
        workgroupBarrier();
        part[t] += x;
        workgroupBarrier();
    }
    let incl = part[t];
    var o = incl - s;
    for (var j = 0u; j < 4u; j++) {
        if (i0 + j < n) { sc[p.out_base + i0 + j] = o; }
        o += v[j];
    }
    if (t == 255u) { sc[p.aux_base + g] = incl; }
}
"""

# Between coder and packer (jpeg_place.comp), by mode:
#   0 (an invocation per restart interval, + 1): after the bit counts were scanned (boff[b]: block b's bit
#     offset, boff[nb] the total), each interval's byte size (its bits padded to a byte) into ioff[i], 0 into
#     ioff[n_iv]; a scan makes them byte offsets in the unstuffed stream U.
#   1 (one invocation): (without intervals, instead of mode 0 and its scan: ioff[0] = 0, ioff[1] = the bytes) the
#     size of U into misc+1 (bytes), misc+2 (words), misc+0 (words + 1: the stuffing scan's length), and the
#     indirect dispatch sizes of mode 2 and of the stuffing scan's first two levels.
#   2 (an invocation per word of U, + 1): gathers the word's 4 bytes bit-aligned from the block slots, pads each
#     interval's last byte with 1-bits (T.81 F.1.2.3), and writes c = the count of 0xFF bytes (each gets a 0x00)
#     + 2 × interval ends (each gets an RSTn marker), | (0xFF byte mask | interval-end mask << 4) << 8.
#   3 (one invocation): after c was scanned (coff): the data's size into ctl[0] and misc+3, and the packer's
#     indirect dispatch size.
# U holds at most cap_words words; a larger stream makes mode 1 flag misc+4 and mode 3 write size 0 (the host
# then raises JpegWgpuError). ctl: [0] size, [1..3] pack, [4..6] mode 2, [8..10] and [12..14] the scan's levels.
_WGSL_PLACE = """
struct P { mode: u32, n_blocks: u32, n_iv: u32, blocks_per_iv: u32, boff: u32, ioff: u32, misc: u32,
           cbase: u32, coff: u32, cap_words: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> uw: array<u32>;
@group(0) @binding(2) var<storage, read_write> ctl: array<u32>;
@group(0) @binding(3) var<storage, read> slot: array<u32>;
@group(0) @binding(4) var<storage, read_write> sc: array<u32>;

fn dispatch_at(at: u32, groups0: u32) {   // 2-D past 32768 groups
    let groups = max(groups0, 1u);
    ctl[at] = min(groups, 32768u);
    ctl[at + 1u] = (groups + 32767u) / 32768u;
    ctl[at + 2u] = 1u;
}

fn bits_from(b: u32, o: u32, take: u32) -> u32 {   // `take` (1..8) bits of block b's slot from bit o, MSB first
    let wd = o >> 5u; let sh = o & 31u;
    var v = slot[b * 64u + wd] << sh;
    if (sh + take > 32u) { v |= slot[b * 64u + wd + 1u] >> (32u - sh); }
    return v >> (32u - take);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = (wid.y * nwg.x + wid.x) * 256u + lid;
    if (p.mode == 0u) {
        if (id > p.n_iv) { return; }
        if (id == p.n_iv) { sc[p.ioff + id] = 0u; return; }
        let b0 = id * p.blocks_per_iv; let b1 = min(b0 + p.blocks_per_iv, p.n_blocks);
        sc[p.ioff + id] = (sc[p.boff + b1] - sc[p.boff + b0] + 7u) >> 3u;
        return;
    }
    if (p.mode == 1u) {
        if (id != 0u) { return; }
        if (p.n_iv == 1u) {   // no restart intervals: one interval, all bits
            sc[p.ioff] = 0u;
            sc[p.ioff + 1u] = (sc[p.boff + p.n_blocks] + 7u) >> 3u;
        }
        var ubytes = sc[p.ioff + p.n_iv]; var uwords = (ubytes + 3u) >> 2u;
        sc[p.misc + 4u] = select(0u, 1u, uwords > p.cap_words);
        if (uwords > p.cap_words) { ubytes = 0u; uwords = 0u; }
        sc[p.misc] = uwords + 1u;
        sc[p.misc + 1u] = ubytes;
        sc[p.misc + 2u] = uwords;
        dispatch_at(4u, (uwords + 1u + 255u) / 256u);
        let g0 = (uwords + 1u + 1023u) / 1024u;
        dispatch_at(8u, g0);
        dispatch_at(12u, (g0 + 1023u) / 1024u);
        return;
    }
    if (p.mode == 3u) {
        if (id != 0u) { return; }
        let uwords = sc[p.misc + 2u];
        var total = sc[p.misc + 1u] + sc[p.coff + uwords];
        if (sc[p.misc + 4u] != 0u) { total = 0u; }
        sc[p.misc + 3u] = total;
        ctl[0] = total;
        dispatch_at(1u, ((total + 3u) / 4u + 255u) / 256u);
        return;
    }
    // mode 2: one word of U
    let uwords = sc[p.misc + 2u]; let ubytes = sc[p.misc + 1u];
    if (id > uwords) { return; }
    if (id == uwords) { sc[p.cbase + id] = 0u; return; }
    let k0 = id * 4u;
    var lo = 0u; var hi = p.n_iv - 1u;   // the interval of byte k0: the last with ioff <= k0
    while (lo < hi) {
        let mid = (lo + hi + 1u) >> 1u;
        if (sc[p.ioff + mid] <= k0) { lo = mid; } else { hi = mid - 1u; }
    }
    var iv = lo; var b = 0xFFFFFFFFu; var word = 0u; var ffm = 0u; var endm = 0u;
    for (var j = 0u; j < 4u; j++) {
        let k = k0 + j;
        if (k >= ubytes) { break; }
        while (iv + 1u < p.n_iv && k >= sc[p.ioff + iv + 1u]) { iv++; b = 0xFFFFFFFFu; }
        let fbk = iv * p.blocks_per_iv; let lbk = min(fbk + p.blocks_per_iv, p.n_blocks);
        let bend = sc[p.boff + lbk];
        var g = sc[p.boff + fbk] + 8u * (k - sc[p.ioff + iv]);   // this byte's first bit in the bit stream
        if (b == 0xFFFFFFFFu) {   // the block holding bit g: the last in [fbk, lbk) with boff <= g
            var l = fbk; var h = lbk - 1u;
            while (l < h) {
                let mid = (l + h + 1u) >> 1u;
                if (sc[p.boff + mid] <= g) { l = mid; } else { h = mid - 1u; }
            }
            b = l;
        }
        var byte = 0u; var need = 8u;
        while (need > 0u) {
            if (g >= bend) { byte = (byte << need) | ((1u << need) - 1u); break; }   // pad with 1-bits
            while (sc[p.boff + b + 1u] <= g) { b++; }
            let bs = sc[p.boff + b]; let take = min(need, sc[p.boff + b + 1u] - g);
            byte = (byte << take) | bits_from(b, g - bs, take);
            g += take;
            need -= take;
        }
        word |= byte << (8u * j);
        if (byte == 255u) { ffm |= 1u << j; }
        if (iv + 1u < p.n_iv && k + 1u == sc[p.ioff + iv + 1u]) { endm |= 1u << j; }
    }
    uw[id] = word;
    sc[p.cbase + id] = (countOneBits(ffm) + 2u * countOneBits(endm)) | ((ffm | (endm << 4u)) << 8u);
}
"""

# Last stage (jpeg_bpack.comp without the header and EOI, which the host adds): the entropy-coded data, one
# 32-bit word per invocation: the bytes of U with a 0x00 after each 0xFF (T.81 F.1.2.3) and FF D0+n%8 after
# interval n but the last (T.81 B.2.1, F.1.2.3). An output byte finds its word of U by binary search over the
# word starts 4w + coff[w], once per output word.
_WGSL_PACK = """
struct P { n_iv: u32, ioff: u32, misc: u32, coff: u32, cbase: u32, out_words: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> uw: array<u32>;
@group(0) @binding(2) var<storage, read_write> outw: array<u32>;
@group(0) @binding(3) var<storage, read> sc: array<u32>;

fn word_start(lo: u32) -> u32 { return 4u * lo + sc[p.coff + lo]; }

fn expanded(lo: u32, r0: u32) -> u32 {   // byte r0 of U word lo as written (stuffing and markers included)
    var r = r0;
    let m = sc[p.cbase + lo] >> 8u; let word = uw[lo];
    for (var j = 0u; j < 4u; j++) {
        if (r == 0u) { return (word >> (8u * j)) & 255u; }
        r--;
        if ((m & (1u << j)) != 0u) { if (r == 0u) { return 0u; } r--; }
        if ((m & (16u << j)) != 0u) {
            if (r == 0u) { return 0xFFu; }
            let k = 4u * lo + j; var l = 0u; var h = p.n_iv - 1u;   // the interval ending at byte k
            while (l < h) {
                let mid = (l + h + 1u) >> 1u;
                if (sc[p.ioff + mid] <= k) { l = mid; } else { h = mid - 1u; }
            }
            if (r == 1u) { return 0xD0u + (l & 7u); }
            r -= 2u;
        }
    }
    return 0u;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.y * nwg.x + wid.x) * 256u + lid;
    let total = sc[p.misc + 3u]; let uwords = sc[p.misc + 2u];
    let pos = w * 4u;
    if (pos >= total || w >= p.out_words) { return; }
    var v = 0u; var lo = 0xFFFFFFFFu; var r = 0u;
    for (var i = 0u; i < 4u; i++) {
        let at = pos + i;
        if (at >= total) { break; }
        if (lo == 0xFFFFFFFFu) {   // once per output word: the last U word starting at or before this byte
            var l = 0u; var h = uwords - 1u;
            while (l < h) {
                let mid = (l + h + 1u) >> 1u;
                if (word_start(mid) <= at) { l = mid; } else { h = mid - 1u; }
            }
            lo = l;
            r = at - word_start(lo);
        }
        let b = expanded(lo, r);
        r++;   // the next byte: further in this word, or the first of the next
        if (r == 4u + sc[p.coff + lo + 1u] - sc[p.coff + lo]) { lo++; r = 0u; }
        v |= b << (8u * i);
    }
    outw[w] = v;
}
"""


def _groups2d(groups):
    """Workgroup counts as x·y, x at most 32768 (maxComputeWorkgroupsPerDimension is 65535 by default)."""
    groups = max(int(groups), 1)
    return min(groups, 32768), (groups + 32767) // 32768, 1


class _Pipelines:
    """The compiled shaders of one device; shared by an encoder and its siblings."""

    def __init__(self, device):
        self.device = device

        def make(src, label):
            module = device.create_shader_module(label=label, code=src)
            return device.create_compute_pipeline(label=label, layout="auto",
                                                  compute={"module": module, "entry_point": "main"})

        dct = _WGSL_DCT.replace("{ZZ}", _ZZ_OF)
        self.dct_tex = make(dct.replace("{INPUT}", _WGSL_DCT_TEXTURE), "jpeg_wgpu dct (texture)")
        self.dct_buf = make(dct.replace("{INPUT}", _WGSL_DCT_BUFFER), "jpeg_wgpu dct (buffer)")
        self.chroma_tex = make(_WGSL_CHROMA.replace("{INPUT}", _WGSL_DCT_TEXTURE), "jpeg_wgpu chroma (texture)")
        self.chroma_buf = make(_WGSL_CHROMA.replace("{INPUT}", _WGSL_DCT_BUFFER), "jpeg_wgpu chroma (buffer)")
        self.blk = make(_WGSL_BLK, "jpeg_wgpu blk")
        self.scan = make(_WGSL_SCAN, "jpeg_wgpu scan")
        self.place = make(_WGSL_PLACE, "jpeg_wgpu place")
        self.pack = make(_WGSL_PACK, "jpeg_wgpu pack")


_FORMATS = {  # texture format -> (bgra bytes, srgb)
    "rgba8unorm": (False, False), "rgba8unorm-srgb": (False, True),
    "bgra8unorm": (True, False), "bgra8unorm-srgb": (True, True),
}


class PendingJpeg:
    """An encode submitted to the GPU (JpegWgpuEncoder.submit); result() waits for it and returns the file."""

    def __init__(self, enc, token):
        self._enc, self._token, self._jpeg = enc, token, None

    def result(self):
        if self._jpeg is None:
            self._jpeg = self._enc._finish(self._token)
        return self._jpeg

    async def result_async(self):
        if self._jpeg is None:
            self._jpeg = await self._enc._finish_async(self._token)
        return self._jpeg

    def then(self, callback, errback=None):
        """Calls callback(jpeg) once the file is in host memory, without blocking: from wgpu's promise callbacks
        (wherever wgpu-py runs those: the event loop's thread, or inside a later sync_wait). errback(exception),
        if given, gets a failure (a JpegWgpuError for a stream past its buffers); else it is raised there."""
        self._enc._finish_then(self._token, callback, errback)


class JpegWgpuEncoder:
    """Baseline JPEG encoder (JFIF, ITU-T T.81) in WGSL compute shaders on a wgpu device.

    device: a wgpu.GPUDevice (default: wgpu.utils.get_default_device()).
    restart_interval: MCUs per restart interval (T.81 B.2.4.4), 0 (the default, as jpeg-gpu's): none.
    One encode in flight per encoder (RuntimeError otherwise); sibling() gives another sharing the pipelines.
    After each encode, ``last`` holds: width, height, quality, subsampling, bytes (the file), data_bytes (the
    entropy-coded data), read_back (bytes mapped from the GPU), direct (the texture was read by the DCT pass, not
    copied first), ms (submit to the file in host memory).
    """

    def __init__(self, device=None, *, restart_interval=0, _pipelines=None):
        import wgpu  # noqa: F401 — fail here, not in a shader call, when wgpu is missing
        self._wgpu = wgpu
        if device is None:
            import wgpu.utils
            device = wgpu.utils.get_default_device()
        if not 0 <= int(restart_interval) <= 65535:
            raise ValueError("restart_interval must be 0..65535 MCUs")
        self.device = device
        self.restart_interval = int(restart_interval)
        self._pipes = _pipelines or _Pipelines(device)
        self._geom = None       # (w, h, ss420) of the prepared buffers
        self._bufs = {}
        self._caps = {}
        self._quality = None
        self._busy = False
        self._measured = False
        self._ops = []
        self.last = {}
        lim = device.limits
        self._range = int(lim.get("max-storage-buffer-binding-size", lim.get("max_storage_buffer_binding_size",
                                                                             134217728)))
        U = wgpu.BufferUsage
        self._div = device.create_buffer(size=512, usage=U.STORAGE | U.COPY_DST)
        tab = _code_table()
        self._tab = device.create_buffer(size=len(tab) * tab.itemsize, usage=U.STORAGE | U.COPY_DST)
        device.queue.write_buffer(self._tab, 0, tab.tobytes())
        self._len_map = device.create_buffer(size=16, usage=U.MAP_READ | U.COPY_DST)
        self._data_map = None

    def sibling(self):
        """A second encoder on the same device sharing the compiled pipelines (its own buffers), so that several
        frames can be in flight at once."""
        return JpegWgpuEncoder(self.device, restart_interval=self.restart_interval, _pipelines=self._pipes)

    # ---- buffers and the recorded passes ----

    def _buffer(self, name, size, usage):
        """Buffer `name` of at least `size` bytes (grown by ×1.25 margin when too small; never shrinks)."""
        size = max(16, (int(size) + 15) // 16 * 16)
        if self._caps.get(name, 0) < size:
            old = self._bufs.get(name)
            if old is not None:
                old.destroy()
            if name != "px":
                size = min(max(size, int(self._caps.get(name, 0) * 1.25) // 16 * 16), max(size, self._range))
            self._bufs[name] = self.device.create_buffer(label="jpeg_wgpu " + name, size=size, usage=usage)
            self._caps[name] = size
        return self._bufs[name]

    def _prepare(self, w, h, ss420):
        """Buffers, parameter blocks and bind groups for w×h (the layout of jpeg_gpu.c's prepare_blocks)."""
        U = self._wgpu.BufferUsage
        dev = self.device
        bw = 16 if ss420 else 8
        mcus_x, mcus_y = (w + bw - 1) // bw, (h + bw - 1) // bw
        bpm = 6 if ss420 else 3
        total_mcus = mcus_x * mcus_y
        nb = total_mcus * bpm
        mpi = self.restart_interval
        n_iv = (total_mcus + mpi - 1) // mpi if mpi else 1
        rng = self._range
        # U, the unstuffed stream: at most 1728 bits a block (54 words) + a padding byte an interval; it and its
        # per-word counts and their scan take that much where the binding range allows, else as much as fits
        # (real content needs <= 10 words a block at q90); a stream past it is caught on the GPU.
        maxw = nb * 54 + n_iv + 1
        fixed = nb + n_iv + 16 + 8
        room = rng // 4 - fixed if rng // 4 > fixed else 0
        if maxw * 2 + maxw // 512 + 16 > room:
            maxw = (room - 16) * 512 // 1025 if room > 64 else 0
        maxw = min(maxw, rng // 4)
        if maxw < nb * 4 + n_iv + 1:
            raise JpegWgpuError("frame %dx%d too large for this device's storage buffers" % (w, h))
        maxn = maxw + 1
        a1 = (maxn + 1023) // 1024 + 1
        a2 = (a1 + 1023) // 1024 + 1
        o = 0
        boff = o; o += nb + 1
        ioff = o; o += n_iv + 1
        misc = o; o += 8
        cbase = o; o += maxw + 1
        coff = o; o += maxw + 1
        aux1 = o; o += a1
        aux2 = o; o += a2
        aux3 = o; o += 2
        out_bytes = nb * 256 + n_iv * 2 + 4  # 256 bytes a block + markers: a file past it is caught (size 0)
        if o * 4 > rng or nb * 256 > rng or out_bytes > rng or a2 > 1025:
            raise JpegWgpuError("frame %dx%d too large for this device's storage buffers" % (w, h))
        S = U.STORAGE
        coef = self._buffer("coef", nb * 256, S)
        mask = self._buffer("mask", nb * 8, S)
        slot = self._buffer("slot", nb * 256, S)
        sc = self._buffer("sc", o * 4, S)
        ubuf = self._buffer("u", maxw * 4, S)
        out = self._buffer("out", out_bytes, S | U.COPY_SRC)
        ctl = self._buffer("ctl", 64, S | U.INDIRECT | U.COPY_SRC)
        self._out_words = self._caps["out"] // 4

        # parameter blocks: one 256-byte slot each (minUniformBufferOffsetAlignment), one bind group each
        params, ops = [], []

        def param(*vals):
            params.append(struct.pack("<%dI" % len(vals), *vals))
            return len(params) - 1

        def bufs(*bs):
            return [(i + 1, b) for i, b in enumerate(bs)]

        self._dct_param = param(w, h, 0, mcus_x, mcus_y, 1 if ss420 else 0, 0, nb)
        self._dct_groups = _groups2d((nb + 5) // 6)
        ops.append(("blk", param(nb, bpm, mpi, boff), bufs(coef, self._tab, slot, sc, mask), _groups2d((nb + 63) // 64)))

        def scan_pass(mode, i, out_, aux, n, dyn, groups):
            ops.append(("scan", param(mode, i, out_, aux, n, dyn, misc, 0xFF if dyn == 1 else 0xFFFFFFFF),
                        bufs(sc), groups))

        def scan_static(i, out_, n):   # exclusive scan of n values known here: only the levels needed
            g0 = (n + 1023) // 1024
            g1 = (g0 + 1023) // 1024
            scan_pass(0, i, out_, aux1, n, 0, _groups2d(g0))
            if g0 == 1:
                return
            scan_pass(0, aux1, aux1, aux2, g0, 0, _groups2d(g1))
            if g1 > 1:
                scan_pass(0, aux2, aux2, aux3, g1, 0, _groups2d(1))
                scan_pass(1, 0, aux1, aux2, g0, 0, _groups2d(g1))
            scan_pass(1, 0, out_, aux1, n, 0, _groups2d(g0))

        # A dispatch reads its indirect arguments from ctl, so it must not also bind ctl as storage (one usage
        # scope per dispatch): mode 2, which never touches ctl, binds a stand-in there.
        dummy = self._buffer("dummy", 64, S)

        def place_pass(mode, groups):
            ops.append(("place", param(mode, nb, n_iv, mpi * bpm if mpi else nb, boff, ioff, misc, cbase, coff,
                                       maxw - 1), bufs(ubuf, dummy if mode == 2 else ctl, slot, sc), groups))

        scan_static(boff, boff, nb + 1)  # sc[boff + nb] is 0 before: the total after
        if n_iv > 1:
            place_pass(0, _groups2d((n_iv + 1 + 255) // 256))
            scan_static(ioff, ioff, n_iv + 1)
        place_pass(1, _groups2d(1))
        place_pass(2, 16)  # indirect: ctl byte 16
        # the stuffing counts, whose number the GPU wrote to sc[misc]: all three levels, indirect
        scan_pass(0, cbase, coff, aux1, 0, 1, 32)
        scan_pass(0, aux1, aux1, aux2, 0, 2, 48)
        scan_pass(0, aux2, aux2, aux3, 0, 3, _groups2d(1))
        scan_pass(1, 0, aux1, aux2, 0, 2, 48)
        scan_pass(1, 0, coff, aux1, 0, 1, 32)
        place_pass(3, _groups2d(1))
        ops.append(("pack", param(n_iv, ioff, misc, coff, cbase, self._out_words), bufs(ubuf, out, sc), 4))

        pbuf = dev.create_buffer(label="jpeg_wgpu params", size=256 * len(params), usage=U.UNIFORM | U.COPY_DST)
        blob = bytearray(256 * len(params))
        for i, pb in enumerate(params):
            blob[256 * i:256 * i + len(pb)] = pb
        dev.queue.write_buffer(pbuf, 0, bytes(blob))
        self._pbuf = pbuf
        self._ops = []
        for name, pi, entries, groups in ops:
            pipe = getattr(self._pipes, name)
            bg = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": pbuf, "offset": 256 * pi, "size": 256}}] + [
                {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}} for i, b in entries])
            self._ops.append((pipe, bg, groups))
        self._geom = (w, h, ss420)
        self._nb, self._mcus = nb, (mcus_x, mcus_y)

    def _record(self, texture, quality, subsampling, size, measure_chroma=False):
        wgpu = self._wgpu
        if self._busy:
            raise RuntimeError("an encode is in flight on this encoder (use sibling() for another)")
        if not 1 <= int(quality) <= 100:
            raise ValueError("quality must be 1..100")
        quality = int(quality)
        ss420 = _ss420(subsampling)
        fmt = str(texture.format)
        if fmt not in _FORMATS:
            raise ValueError("texture format %s: rgba8unorm(-srgb) or bgra8unorm(-srgb) only" % fmt)
        bgra, srgb = _FORMATS[fmt]
        if int(getattr(texture, "sample_count", 1)) != 1 or str(getattr(texture, "dimension", "2d")) != "2d":
            raise ValueError("a 2-D single-sample texture only (resolve a multisampled one first)")
        tw, th = int(texture.size[0]), int(texture.size[1])
        w, h = (tw, th) if size is None else (int(size[0]), int(size[1]))
        if not (1 <= w <= min(tw, 65535) and 1 <= h <= min(th, 65535)):
            raise ValueError("size %dx%d outside the texture (%dx%d) or JPEG's 65535" % (w, h, tw, th))
        usage = int(texture.usage)
        direct = bool(usage & wgpu.TextureUsage.TEXTURE_BINDING)
        if not direct and not usage & wgpu.TextureUsage.COPY_SRC:
            raise ValueError("the texture needs usage TEXTURE_BINDING or COPY_SRC")
        if self._geom != (w, h, ss420):
            self._prepare(w, h, ss420)
        if self._quality != quality:
            self.device.queue.write_buffer(self._div, 0, _divisors(quality).tobytes())
            self._quality = quality
        dev = self.device
        U = wgpu.BufferUsage
        pipe = self._pipes.dct_tex if direct else self._pipes.dct_buf
        pitch = 0
        enc = dev.create_command_encoder(label="jpeg_wgpu")
        if direct:
            src = texture.create_view()
            flags = 2 if srgb else 0
        else:  # copy rows at the 256-byte pitch copy_texture_to_buffer asks for; bytes as stored (no sRGB decode)
            bpr = (w * 4 + 255) // 256 * 256
            pitch = bpr // 4
            px = self._buffer("px", bpr * h, U.STORAGE | U.COPY_DST)
            enc.copy_texture_to_buffer({"texture": texture, "mip_level": 0, "origin": (0, 0, 0)},
                                       {"buffer": px, "offset": 0, "bytes_per_row": bpr, "rows_per_image": h},
                                       (w, h, 1))
            src = px
            flags = 1 if bgra else 0
        mcus_x, mcus_y = self._mcus
        dct_p = struct.pack("<8I", w, h, pitch, mcus_x, mcus_y, 1 if ss420 else 0, flags, self._nb)
        dev.queue.write_buffer(self._pbuf, 256 * self._dct_param, dct_p)
        res4 = src if direct else {"buffer": src, "offset": 0, "size": src.size}
        dct_bg = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": self._pbuf, "offset": 256 * self._dct_param, "size": 256}},
            {"binding": 1, "resource": {"buffer": self._bufs["coef"], "offset": 0, "size": self._bufs["coef"].size}},
            {"binding": 2, "resource": {"buffer": self._div, "offset": 0, "size": 512}},
            {"binding": 3, "resource": {"buffer": self._bufs["mask"], "offset": 0, "size": self._bufs["mask"].size}},
            {"binding": 4, "resource": res4}])
        ctl = self._bufs["ctl"]
        if measure_chroma:  # the lossy-block count of this frame (_WGSL_CHROMA), zeroed first
            cbuf = self._buffer("chroma", 16, U.STORAGE | U.COPY_SRC | U.COPY_DST)
            enc.clear_buffer(cbuf, 0, 16)
            cpipe = self._pipes.chroma_tex if direct else self._pipes.chroma_buf
            chroma_bg = dev.create_bind_group(layout=cpipe.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": self._pbuf, "offset": 256 * self._dct_param, "size": 256}},
                {"binding": 4, "resource": res4},
                {"binding": 5, "resource": {"buffer": cbuf, "offset": 0, "size": 16}}])
        cp = enc.begin_compute_pass(label="jpeg_wgpu")
        if measure_chroma:
            cp.set_pipeline(cpipe)
            cp.set_bind_group(0, chroma_bg)
            cp.dispatch_workgroups(((w + 3) // 4 + 63) // 64, h // 2 or 1, 1)
        cp.set_pipeline(pipe)
        cp.set_bind_group(0, dct_bg)
        cp.dispatch_workgroups(*self._dct_groups)
        for p, bg, groups in self._ops:
            cp.set_pipeline(p)
            cp.set_bind_group(0, bg)
            if isinstance(groups, int):
                cp.dispatch_workgroups_indirect(ctl, groups)
            else:
                cp.dispatch_workgroups(*groups)
        cp.end()
        enc.copy_buffer_to_buffer(ctl, 0, self._len_map, 0, 4)
        if measure_chroma:
            enc.copy_buffer_to_buffer(cbuf, 0, self._len_map, 4, 4)
        t0 = time.perf_counter()
        dev.queue.submit([enc.finish()])
        self._busy = True
        self._measured = measure_chroma
        self.last = {"width": w, "height": h, "quality": quality, "subsampling": "420" if ss420 else "444",
                     "direct": direct}
        if measure_chroma:  # a thousandth of the blocks looked at (at least one), as chroma_needs_444
            blocks = (w // 2) * (h // 2) // 2
            self.last["chroma_need"] = max(1, blocks // 1000)
        return (w, h, quality, ss420, t0)

    # ---- readback: the length first, then that many bytes ----

    def _data_copy(self, n):
        """Records and submits the copy of the n data bytes (rounded up to 4) into the mapped-read buffer."""
        U = self._wgpu.BufferUsage
        m = (n + 3) // 4 * 4
        if self._data_map is None or self._data_map.size < m:
            if self._data_map is not None:
                self._data_map.destroy()
            self._data_map = self.device.create_buffer(label="jpeg_wgpu readback",
                                                       size=max(4096, m + m // 4) // 4 * 4,
                                                       usage=U.MAP_READ | U.COPY_DST)
        enc = self.device.create_command_encoder()
        enc.copy_buffer_to_buffer(self._bufs["out"], 0, self._data_map, 0, m)
        self.device.queue.submit([enc.finish()])
        return m

    def _length(self):
        n, lossy = struct.unpack("<II", self._len_map.read_mapped(0, 8))
        self._len_map.unmap()
        if self._measured:
            self.last["chroma_lossy"] = lossy
            self.last["needs_444"] = lossy >= self.last["chroma_need"]
        if n == 0:
            self._busy = False
            raise JpegWgpuError("the entropy-coded data outgrew its GPU buffer: encode this frame on the CPU")
        return n

    def _wrap(self, token, n, m):
        data = self._data_map.read_mapped(0, m)
        self._data_map.unmap()
        w, h, quality, ss420, t0 = token
        head = jfif_header(w, h, quality, "420" if ss420 else "444", self.restart_interval)
        jpeg = b"".join((head, bytes(data[:n]), b"\xff\xd9"))
        self.last.update(bytes=len(jpeg), data_bytes=n, read_back=8 + m, ms=(time.perf_counter() - t0) * 1e3)
        self._busy = False
        return jpeg

    def _finish(self, token):
        READ = self._wgpu.MapMode.READ
        try:
            _map(self._len_map, READ, 0, 8)
            n = self._length()
            m = self._data_copy(n)
            _map(self._data_map, READ, 0, m)
        except BaseException:
            self._busy = False
            raise
        return self._wrap(token, n, m)

    async def _finish_async(self, token):
        READ = self._wgpu.MapMode.READ
        try:
            await self._len_map.map_async(READ, 0, 8)
            n = self._length()
            m = self._data_copy(n)
            await self._data_map.map_async(READ, 0, m)
        except BaseException:
            self._busy = False
            raise
        return self._wrap(token, n, m)

    def _finish_then(self, token, callback, errback):
        READ = self._wgpu.MapMode.READ

        def fail(e):
            self._busy = False
            if errback is None:
                raise e
            errback(e)

        def on_data(_r, n, m):
            try:
                jpeg = self._wrap(token, n, m)
            except Exception as e:  # noqa: BLE001 — handed to the caller
                return fail(e)
            callback(jpeg)

        def on_length(_r):
            try:
                n = self._length()
                m = self._data_copy(n)
                p = self._data_map.map_async(READ, 0, m)
            except Exception as e:  # noqa: BLE001
                return fail(e)
            p.then(lambda r: on_data(r, n, m))
            if hasattr(p, "catch"):
                p.catch(fail)

        try:
            p = self._len_map.map_async(READ, 0, 8)
        except Exception as e:  # noqa: BLE001
            return fail(e)
        p.then(on_length)
        if hasattr(p, "catch"):
            p.catch(fail)

    # ---- API ----

    def submit(self, texture, quality=80, subsampling="420", *, size=None, measure_chroma=False):
        """Records and submits the encode of `texture` (its top-left size=(w, h), default all of it); returns a
        PendingJpeg whose result() / await result_async() gives the JFIF file. Reads the texture as it is when
        the GPU runs the submission (after the app's earlier submissions to the queue). measure_chroma: also
        count the 2×2 blocks that 4:2:0 would rob of colour (rcanvas' AUTO rule, _WGSL_CHROMA); once the file is
        in host memory, last["needs_444"] says whether 4:4:4 is what AUTO would choose for this frame (the next
        frame can be coded so: the measure costs no wait)."""
        return PendingJpeg(self, self._record(texture, quality, subsampling, size, measure_chroma))

    def encode(self, texture, quality=80, subsampling="420", *, size=None):
        """The JFIF file (bytes) of `texture` (rgba8unorm / bgra8unorm, -srgb or not: the stored bytes are
        encoded) at quality 1–100 with 4:2:0 or 4:4:4 chroma ("420" / "444")."""
        return self.submit(texture, quality, subsampling, size=size).result()

    async def encode_async(self, texture, quality=80, subsampling="420", *, size=None):
        """encode(), awaiting the buffer maps instead of blocking (wgpu-py's map_async)."""
        return await self.submit(texture, quality, subsampling, size=size).result_async()

    def encode_array(self, rgba, quality=80, subsampling="420"):
        """Convenience for tests and tools: uploads an (h, w, 4) or (h, w, 3) uint8 array into a texture of
        its own and encodes it (numpy is needed here only)."""
        import numpy as np
        wgpu = self._wgpu
        a = np.ascontiguousarray(rgba, dtype=np.uint8)
        if a.ndim != 3 or a.shape[2] not in (3, 4):
            raise ValueError("expected an (h, w, 3|4) uint8 array")
        if a.shape[2] == 3:
            a = np.concatenate([a, np.full(a.shape[:2] + (1,), 255, np.uint8)], axis=2)
        h, w = a.shape[:2]
        key = (w, h)
        if getattr(self, "_upload_key", None) != key:
            self._upload = self.device.create_texture(
                size=(w, h, 1), format="rgba8unorm",
                usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
            self._upload_key = key
        self.device.queue.write_texture({"texture": self._upload, "mip_level": 0, "origin": (0, 0, 0)}, a,
                                        {"offset": 0, "bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1))
        return self.encode(self._upload, quality, subsampling)


def _map(buf, mode, offset, size):
    """Blocking map across wgpu-py versions (map_sync since 0.16's rename; map before)."""
    f = getattr(buf, "map_sync", None)
    if f is not None:
        return f(mode, offset, size)
    return buf.map(mode, offset, size)


# ---- command line: python3 -m rcanvas.jpeg_wgpu, to compare with rcanvas-encode --codec jpeg-gpu ----

def _read_image(path):
    """(w, h, RGBA bytes) of a binary PPM (P6, maxval 255), or of any image Pillow reads."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"P6":
        fields, i = [], 2
        while len(fields) < 3:   # width, height, maxval, with whitespace and # comments between
            while data[i:i + 1].isspace():
                i += 1
            if data[i:i + 1] == b"#":
                i = data.index(b"\n", i)
                continue
            j = i
            while not data[j:j + 1].isspace():
                j += 1
            fields.append(int(data[i:j]))
            i = j
        w, h, maxval = fields
        if maxval != 255:
            raise ValueError("%s: 8-bit PPM only" % path)
        rgb = data[i + 1:i + 1 + w * h * 3]
    else:
        from PIL import Image
        im = Image.open(path).convert("RGB")
        (w, h), rgb = im.size, im.tobytes()
    rgba = bytearray(b"\xff" * (w * h * 4))
    for c in range(3):
        rgba[c::4] = rgb[c::3]
    return w, h, bytes(rgba)


def _main(argv=None):
    import argparse
    import statistics
    ap = argparse.ArgumentParser(prog="python3 -m rcanvas.jpeg_wgpu",
                                 description="Encodes an image (PPM, or PNG with Pillow) with jpeg-wgpu on wgpu's "
                                             "default device; prints the median time of the encodes and the size.")
    ap.add_argument("--quality", type=int, default=80)
    ap.add_argument("--subsampling", default="420", choices=["420", "444"])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--restart", type=int, default=0, help="MCUs per restart interval (0: none)")
    ap.add_argument("input")
    ap.add_argument("output")
    a = ap.parse_args(argv)
    import wgpu
    import wgpu.utils
    w, h, rgba = _read_image(a.input)
    t0 = time.perf_counter()
    dev = wgpu.utils.get_default_device()
    enc = JpegWgpuEncoder(dev, restart_interval=a.restart)
    t1 = time.perf_counter()
    tex = dev.create_texture(size=(w, h, 1), format="rgba8unorm",
                             usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
    dev.queue.write_texture({"texture": tex, "mip_level": 0, "origin": (0, 0, 0)}, rgba,
                            {"offset": 0, "bytes_per_row": w * 4, "rows_per_image": h}, (w, h, 1))
    jpeg = enc.encode(tex, a.quality, a.subsampling)   # the first: drivers may compile pipelines lazily
    t2 = time.perf_counter()
    ms = []
    for _ in range(max(a.repeat, 1)):
        t = time.perf_counter()
        jpeg = enc.encode(tex, a.quality, a.subsampling)
        ms.append((time.perf_counter() - t) * 1e3)
    with open(a.output, "wb") as f:
        f.write(jpeg)
    info = dev.adapter.info if hasattr(dev, "adapter") else {}
    print("%s %dx%d jpeg-wgpu q%d %s: %.2f ms (min %.2f; device+pipelines %.0f ms, first encode %.0f ms), %d bytes "
          "(%.3f bits/pixel), %d bytes read back [%s]" % (
              a.input, w, h, a.quality, "4:2:0" if a.subsampling == "420" else "4:4:4", statistics.median(ms),
              min(ms), (t1 - t0) * 1e3, (t2 - t1) * 1e3, len(jpeg), 8.0 * len(jpeg) / (w * h),
              enc.last["read_back"], info.get("device", "?")))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
