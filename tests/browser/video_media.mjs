// SPDX-License-Identifier: MIT
// video_media.mjs — the video the client tests replay: a deterministic test scene, its BT.601 limited-range I420
// (what the server's encoders are fed: libyuv's ABGRToI420 matrix), and streams encoded from it by Chromium's own
// WebCodecs VideoEncoder (there is no H.264/VP8/VP9/AV1 encoder in node). Used by video.test.mjs and
// bench_video_client.mjs.
import assert from 'node:assert/strict';

export const CODEC_STRINGS = { h264: 'avc1.42E028', vp8: 'vp8', vp9: 'vp09.00.10.08', av1: 'av01.0.04M.08' };

/** The test scene, frame i, as RGBA: smooth gradients, two flat colour patches, grey detail (luma only), and a
 *  square that moves 8 px per frame. Colour edges on even pixels, so 4:2:0 chroma loses nothing at them.
 *  Self-contained: it also runs in the browser (toString). */
export function sceneRGBA(W, H, i) {
  const px = new Uint8ClampedArray(W * H * 4);
  const patches = [[16, 16, 64, 48, [200, 60, 40]], [96, 16, 64, 48, [40, 180, 220]], [176, 16, 64, 48, [128, 128, 128]]];
  const sq = 16 + ((8 * i) % (W - 64));
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      let r = 40 + (x * 160) / W, g = 40 + (y * 160) / H, b = 120 + 60 * Math.sin((x + y) / 40);
      for (const [px0, py0, pw, ph, c] of patches) {
        if (x >= px0 && x < px0 + pw && y >= py0 && y < py0 + ph) [r, g, b] = c;
      }
      if (y >= 96 && y < 160 && x >= 16 && x < 304) {            // grey stripes and a ramp: luma detail
        const v = ((x >> 2) + (y >> 2)) & 1 ? 200 : 60;
        r = g = b = y < 128 ? v : 16 + ((x - 16) * 220) / 288;
      }
      if (x >= sq && x < sq + 32 && y >= 176 && y < 208) { r = 240; g = 230; b = 60; }
      const o = (y * W + x) * 4;
      px[o] = r; px[o + 1] = g; px[o + 2] = b; px[o + 3] = 255;
    }
  }
  return px;
}

/** RGBA -> I420, BT.601 limited range (what libyuv's ABGRToI420 does for the server's encoders), 2×2 chroma mean. */
export function rgbaToI420(px, W, H) {
  const out = new Uint8Array((W * H * 3) / 2);
  const U = W * H, V = U + U / 4;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const o = (y * W + x) * 4;
      out[y * W + x] = Math.round(16 + (65.481 * px[o] + 128.553 * px[o + 1] + 24.966 * px[o + 2]) / 255);
    }
  }
  for (let y = 0; y < H / 2; y++) {
    for (let x = 0; x < W / 2; x++) {
      let r = 0, g = 0, b = 0;
      for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
        const o = ((2 * y + dy) * W + 2 * x + dx) * 4;
        r += px[o] / 4; g += px[o + 1] / 4; b += px[o + 2] / 4;
      }
      out[U + y * (W / 2) + x] = Math.round(128 + (-37.797 * r - 74.203 * g + 112 * b) / 255);
      out[V + y * (W / 2) + x] = Math.round(128 + (112 * r - 93.786 * g - 18.214 * b) / 255);
    }
  }
  return out;
}

/**
 * Encodes frames 0..count-1 of scene(W, H, i) with Chromium's VideoEncoder (keyframes at keyAt) in a page of the
 * stand-in server (its /blank page: no client, no CSP), from BT.601 limited-range I420 like the server's encoders. Returns {codecString (what the encoder reports), chunks: [{key, data: Buffer}],
 * png(i), jpeg(i)} — png/jpeg: image files of frame i of the source, for refinements and image frames.
 */
export async function encodeInBrowser(browser, server, codec, { W, H, scene = sceneRGBA, count = 16, keyAt = [0], bitrate = 6e6,
  framerate = 30, images = [] } = {}) {
  const page = await browser.newPage();
  try {
    await page.goto(`http://127.0.0.1:${server.port}/blank`);
    const r = await page.evaluate(async ({ codecString, W, H, count, keyAt, bitrate, framerate, images, sceneSrc, i420Src }) => {
      const scene = new Function(`return ${sceneSrc}`)();
      const toI420 = new Function(`return ${i420Src}`)();
      const b64 = (u8) => { let s = ''; for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000)); return btoa(s); };
      const chunks = [];
      let reported = null;
      let failure = null;
      const enc = new VideoEncoder({
        output: (c, meta) => {
          const b = new Uint8Array(c.byteLength);
          c.copyTo(b);
          chunks.push({ key: c.type === 'key', data: b64(b) });
          if (meta?.decoderConfig) reported = meta.decoderConfig.codec;
        },
        error: (e) => { failure = String(e); },
      });
      enc.configure({ codec: codecString, width: W, height: H, bitrate, framerate, latencyMode: 'realtime',
                      avc: { format: 'annexb' } });
      const colorSpace = { primaries: 'smpte170m', transfer: 'smpte170m', matrix: 'smpte170m', fullRange: false };
      for (let i = 0; i < count; i++) {
        const frame = new VideoFrame(toI420(scene(W, H, i), W, H), { format: 'I420', codedWidth: W, codedHeight: H,
                                                                      timestamp: i * 33333, colorSpace });
        enc.encode(frame, { keyFrame: keyAt.includes(i) });
        frame.close();
      }
      await enc.flush();
      enc.close();
      if (failure) throw new Error(failure);
      const files = {};
      for (const [i, type] of images) {
        const c = new OffscreenCanvas(W, H);
        c.getContext('2d').putImageData(new ImageData(scene(W, H, i), W, H), 0, 0);
        const blob = await c.convertToBlob({ type: `image/${type}`, quality: 0.95 });
        files[`${type}${i}`] = b64(new Uint8Array(await blob.arrayBuffer()));
      }
      return { chunks, reported, files };
    }, { codecString: CODEC_STRINGS[codec], W, H, count, keyAt, bitrate, framerate, images,
         sceneSrc: scene.toString(), i420Src: rgbaToI420.toString() });
    assert.equal(r.chunks.length, count, `${codec}: one chunk per frame`);
    for (const [i, c] of r.chunks.entries()) assert.equal(c.key, keyAt.includes(i), `${codec} chunk ${i} keyframe`);
    const file = (name) => Buffer.from(r.files[name], 'base64');
    return {
      codec, codecString: r.reported || CODEC_STRINGS[codec],
      chunks: r.chunks.map((c) => ({ key: c.key, data: Buffer.from(c.data, 'base64') })),
      png: (i) => file(`png${i}`), jpeg: (i) => file(`jpeg${i}`), webp: (i) => file(`webp${i}`),
    };
  } finally { await page.close(); }
}

