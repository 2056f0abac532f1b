// SPDX-License-Identifier: MIT
// decoder.js: turns the encoded payload of a tile into something a 2D canvas can draw, and finds out which codecs
// this browser decodes (the `codecs=` list of the upgrade URL, protocol 2).
//
// The interface, per codec name of the frame header ("jpeg", "png", "webp", "h264", "vp8", "vp9", "av1"):
//
//   const d = createDecoder('jpeg', options);  // options: {codecString, color, onKeyframeNeeded} (video, from hello)
//   const drawable = await d.decode(tile);  // tile: {codec, mime, seq, keyframe, x, y, w, h, data: Uint8Array}
//   ctx.drawImage(drawable.image, ...);     // drawable: {image: CanvasImageSource, width, height, decodedAt, close()}
//   drawable.close();                       // frees the decoded pixels (ImageBitmap / VideoFrame close())
//   d.reset();                              // the stream starts over (reconnect): forget decoder state
//   d.close();                              // the view goes away
//
// decode() may be called for the next tiles before earlier ones resolve; the view draws a frame only when all its
// tiles have resolved, in arrival order. A decode that fails rejects; the view counts it and acks the frame anyway.
// A decode that resolves to null has nothing to draw (a video packet dropped while waiting for a keyframe): the
// view acks it undrawn.
//
// Images (JPEG, PNG, WebP) decode each tile on its own with createImageBitmap (stateless: complete files).
// Video (H.264, VP8, VP9, AV1) goes through one WebCodecs VideoDecoder per view and codec, in order: each packet is
// one frame, and its VideoFrame is handed to the view as soon as the decoder outputs it (no lookahead).
import { DEFAULT_VIDEO_COLOR, IMAGE_CODECS, VIDEO_CODECS, VIDEO_PROBE_STRINGS, videoColorSpace } from './protocol.js';

/** Stateless still-image decoder: each tile is a complete JPEG, PNG or WebP file, decoded by createImageBitmap. */
class ImageBitmapDecoder {
  constructor(codec) {
    this.codec = codec;
    this.closed = false;
  }

  async decode(tile) {
    if (this.closed) throw new Error('decoder closed');
    const bitmap = await createImageBitmap(new Blob([tile.data], { type: tile.mime }));
    return { image: bitmap, width: bitmap.width, height: bitmap.height, decodedAt: performance.now(),
             close: () => bitmap.close() };
  }

  reset() {}                                     // nothing carries over from one tile to the next

  close() { this.closed = true; }
}

// ---- video ----------------------------------------------------------------------------------------------

/** The codec string a video codec is configured with when the hello names none (a packet of a codec the hello
 *  did not announce): the lowest probe string; the decoder reads the real profile and level in band. */
const FALLBACK_CODEC_STRINGS = Object.fromEntries(VIDEO_CODECS.map((c) => [c, VIDEO_PROBE_STRINGS[c][0]]));
const STALL_MS = 1500;                  // a packet the decoder keeps this long without output counts as an error
const KEYFRAME_REQUEST_MS = 1000;       // at most one {"type":"keyframe"} per this while waiting for one

let openFrames = 0;                     // VideoFrames output and not yet closed, in this page (debug stat)
/** VideoFrames of this page that are output and not yet closed: 0 at rest (each holds decoder/GPU memory). */
export const openVideoFrames = () => openFrames;

/**
 * One WebCodecs VideoDecoder, fed the packets of one stream in order. Configured from the hello's `codec_string`
 * and `color` (VideoDecoderConfig.colorSpace: Chromium takes it for streams that carry no colour description —
 * VP8 never does, and its default would be BT.709 — while an H.264 VUI or AV1 sequence header says the same), with
 * optimizeForLatency so that each packet gives its frame at once. A decoder error, a stalled output or a first
 * packet that is not a keyframe: the decoder is reset, the view sends {"type":"keyframe"} (onKeyframeNeeded), and
 * packets resolve to null (dropped, acked undrawn) until a keyframe comes.
 */
class WebCodecsDecoder {
  constructor(codec, options = {}) {
    this.codec = codec;
    this.closed = false;
    this.decoder = null;
    this.pending = [];                  // {ts, resolve} of packets given to the decoder, in decode order
    this.nextTs = 0;                    // chunk timestamps: a counter, to match outputs with packets
    this.needKeyframe = true;
    this.lastRequest = -Infinity;
    this.stallTimer = null;
    this.counters = { keyframeRequests: 0, droppedPackets: 0, decoderErrors: 0, decoderResets: 0 };
    this.setOptions(options);
  }

  /** New stream parameters (a hello): codec string and colour; a change reconfigures at the next keyframe. */
  setOptions({ codecString, color, onKeyframeNeeded } = {}) {
    const cs = typeof codecString === 'string' && codecString ? codecString : FALLBACK_CODEC_STRINGS[this.codec];
    const colorSpace = videoColorSpace(color || DEFAULT_VIDEO_COLOR);
    const changed = !this.config || this.config.codec !== cs ||
      JSON.stringify(this.config.colorSpace) !== JSON.stringify(colorSpace);
    this.config = { codec: cs, colorSpace, optimizeForLatency: true, hardwareAcceleration: 'no-preference' };
    if (onKeyframeNeeded) this.onKeyframeNeeded = onKeyframeNeeded;
    if (changed && this.decoder) this.restart();
  }

  decode(tile) {
    if (this.closed) return Promise.reject(new Error('decoder closed'));
    if (this.needKeyframe && !tile.keyframe) {
      this.counters.droppedPackets++;
      this.requestKeyframe(this.decoder ? 'after a decoder reset' : 'the stream did not start with a keyframe');
      return Promise.resolve(null);
    }
    let dec;
    try {
      dec = this.ready();                // throws without WebCodecs, or for a config the browser rejects
    } catch (err) {
      this.fail(err);
      return Promise.reject(err);
    }
    if (tile.keyframe) this.needKeyframe = false;
    const ts = this.nextTs++;
    const p = new Promise((resolve) => this.pending.push({ ts, resolve }));
    try {
      dec.decode(new EncodedVideoChunk({ type: tile.keyframe ? 'key' : 'delta', timestamp: ts, data: tile.data }));
    } catch (err) {
      this.fail(err);
      return Promise.reject(err);
    }
    this.armStallTimer();
    return p;
  }

  /** The configured decoder, made (or configured again after reset()) when needed. */
  ready() {
    let dec = this.decoder;
    if (!dec || dec.state === 'closed') {
      dec = this.decoder = new VideoDecoder({
        output: (frame) => this.onOutput(dec, frame),
        error: (err) => { if (dec === this.decoder) this.fail(err); },
      });
    }
    if (dec.state === 'unconfigured') dec.configure(this.config);
    return dec;
  }

  onOutput(dec, frame) {
    openFrames++;
    let closed = false;
    const close = () => { if (!closed) { closed = true; openFrames--; frame.close(); } };
    if (dec !== this.decoder || this.closed) { close(); return; }
    // outputs come in decode order: packets before this one gave no frame (the decoder skipped them)
    while (this.pending.length && this.pending[0].ts < frame.timestamp) this.pending.shift().resolve(null);
    const e = this.pending[0];
    if (!e || e.ts !== frame.timestamp) { close(); return; }
    this.pending.shift();
    this.armStallTimer(true);
    e.resolve({ image: frame, width: frame.displayWidth, height: frame.displayHeight, decodedAt: performance.now(),
                close });
  }

  /** An error (or no output for STALL_MS): reset, drop until a keyframe, ask for one. */
  fail(err) {
    this.counters.decoderErrors++;
    console.error(`rcanvas: ${this.codec} decoder error; waiting for a keyframe:`, err?.message || err);
    this.restart();
    this.requestKeyframe('decoder error');
  }

  /** Forgets the stream: pending packets resolve to null, the decoder is unconfigured, a keyframe must come. */
  restart() {
    clearTimeout(this.stallTimer);
    this.stallTimer = null;
    for (const e of this.pending.splice(0)) e.resolve(null);
    const dec = this.decoder;
    if (dec && dec.state !== 'closed') {
      try { dec.reset(); } catch { this.decoder = null; }
    }
    this.needKeyframe = true;
    this.counters.decoderResets++;
  }

  requestKeyframe(why) {
    const now = performance.now();
    if (now - this.lastRequest < KEYFRAME_REQUEST_MS) return;
    this.lastRequest = now;
    this.counters.keyframeRequests++;
    console.warn(`rcanvas: ${this.codec}: asking for a keyframe (${why})`);
    if (this.onKeyframeNeeded) this.onKeyframeNeeded();
  }

  armStallTimer(restart = false) {
    if (restart) { clearTimeout(this.stallTimer); this.stallTimer = null; }
    if (this.stallTimer || !this.pending.length) return;
    const head = this.pending[0];
    this.stallTimer = setTimeout(() => {
      this.stallTimer = null;
      if (this.pending[0] === head) this.fail(new Error(`no frame for ${STALL_MS} ms`));
      else this.armStallTimer();
    }, STALL_MS);
  }

  /** A new stream (reconnect, hello): the server starts it with a keyframe, so no request. */
  reset() {
    if (this.decoder) this.restart();
    this.lastRequest = -Infinity;
  }

  close() {
    this.closed = true;
    clearTimeout(this.stallTimer);
    for (const e of this.pending.splice(0)) e.resolve(null);
    if (this.decoder && this.decoder.state !== 'closed') this.decoder.close();
    this.decoder = null;
  }
}

const factories = new Map([
  ...IMAGE_CODECS.map((c) => [c, (codec) => new ImageBitmapDecoder(codec)]),
  ...VIDEO_CODECS.map((c) => [c, (codec, options) => new WebCodecsDecoder(codec, options)]),
]);

/** Adds (or replaces) the decoder of a codec name: factory(codecName, options) -> {decode, reset, close}. */
export function registerDecoder(codecName, factory) {
  factories.set(codecName, factory);
}

/** A new decoder for codecName; throws for a codec nobody registered. */
export function createDecoder(codecName, options = {}) {
  const f = factories.get(codecName);
  if (!f) throw new Error(`rcanvas: no decoder for codec ${codecName}`);
  return f(codecName, options);
}

/** The decoders of one view: one per codec name, made when its first tile comes. options() gives the stream's
 *  parameters for video decoders (from hello): {codecString, color, onKeyframeNeeded}. */
export class DecoderSet {
  constructor(options = () => ({})) {
    this.decoders = new Map();
    this.options = options;
  }

  get(codecName) {
    let d = this.decoders.get(codecName);
    if (!d) { d = createDecoder(codecName, this.options(codecName)); this.decoders.set(codecName, d); }
    return d;
  }

  /** A new stream (hello): decoders forget their state and take the new stream parameters. */
  reset() {
    for (const [name, d] of this.decoders) {
      d.reset();
      if (d.setOptions) d.setOptions(this.options(name));
    }
  }

  /** The counters of the video decoders, summed (keyframe requests, dropped packets, errors, resets). */
  videoCounters() {
    const out = { keyframeRequests: 0, droppedPackets: 0, decoderErrors: 0, decoderResets: 0 };
    for (const d of this.decoders.values()) {
      if (d.counters) for (const k of Object.keys(out)) out[k] += d.counters[k];
    }
    return out;
  }

  close() {
    for (const d of this.decoders.values()) d.close();
    this.decoders.clear();
  }
}

// ---- what this browser decodes (negotiation) --------------------------------------------------------------

const PROBE_TIMEOUT_MS = 2000;
let support = null;

/**
 * Which codecs this page can decode, asked once per page before the first WebSocket opens (the answer is kept):
 * resolves {codecs: the `codecs=` list in preference order, video: the video codecs, strings: {codec: the
 * supported probe strings}, why: '' or why there is no video (the overlay and console say it)}. WebCodecs exists
 * only in a secure context (https, or http on localhost / 127.0.0.1); images always work.
 */
export function videoSupport(win = globalThis) {
  if (!support) {
    support = probeVideo(win).then((s) => {
      if (s.why) console.warn(`rcanvas: video off: ${s.why}`);
      return s;
    });
  }
  return support;
}

async function probeVideo(win) {
  const off = (why) => ({ codecs: IMAGE_CODECS.slice(), video: [], strings: {}, why });
  if (win.isSecureContext === false) return off('this page is not a secure context (https or localhost)');
  const VD = win.VideoDecoder;
  if (typeof VD !== 'function' || typeof VD.isConfigSupported !== 'function') {
    return off('this browser has no WebCodecs VideoDecoder');
  }
  const ask = (codec) => Promise.race([
    VD.isConfigSupported({ codec, optimizeForLatency: true, hardwareAcceleration: 'no-preference' })
      .then((r) => !!(r && r.supported), () => false),
    new Promise((resolve) => setTimeout(() => resolve(false), PROBE_TIMEOUT_MS)),
  ]);
  const strings = {};
  await Promise.all(VIDEO_CODECS.map(async (name) => {
    const list = VIDEO_PROBE_STRINGS[name];
    const ok = await Promise.all(list.map(ask));
    if (ok[0]) strings[name] = list.filter((_, i) => ok[i]);
  }));
  const video = VIDEO_CODECS.filter((c) => strings[c]);
  return { codecs: [...video, ...IMAGE_CODECS], video, strings,
           why: video.length ? '' : `the browser decodes none of ${VIDEO_CODECS.join(', ')}` };
}
