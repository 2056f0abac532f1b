// SPDX-License-Identifier: MIT
// protocol.js: the rcanvas wire protocol (versions 1 and 2) as the browser sees it (docs/protocol.md), without DOM
// or sockets: the 56-byte little-endian tile header, the JSON messages a client sends (ack, visibility, keyframe,
// renderview events), the URLs of a canvas (WebSocket with the codecs it decodes, probe), and the small pure helpers
// the other modules share.

export const PROTOCOL_VERSION = 2;                     // what this client speaks; it reads version 1 servers too
export const HEADER_VERSIONS = [1, 2];                 // frame header versions it accepts
export const SUBPROTOCOL = 'rcanvas.v1';
export const HEADER_BYTES = 56;
export const FRAME_MAGIC = 0x46434352;                 // bytes "RCCF" read as a little-endian u32
export const CODEC_JPEG = 1;
export const CODEC_PNG = 2;
export const CODEC_H264 = 3;
export const CODEC_VP8 = 4;
export const CODEC_VP9 = 5;
export const CODEC_AV1 = 6;
export const CODEC_WEBP = 7;
export const FLAG_LOSSLESS = 1;
export const FLAG_LAST = 2;
export const FLAG_REFINEMENT = 4;
export const FLAG_KEYFRAME = 8;
export const FLAG_SCALED = 16;       // shrunk by the server's rate adaptation: upscaled smoothly

/** Header codec id -> [name, MIME type of an image codec (null for video)]. */
export const CODECS = {
  [CODEC_JPEG]: ['jpeg', 'image/jpeg'], [CODEC_PNG]: ['png', 'image/png'], [CODEC_WEBP]: ['webp', 'image/webp'],
  [CODEC_H264]: ['h264', null], [CODEC_VP8]: ['vp8', null], [CODEC_VP9]: ['vp9', null], [CODEC_AV1]: ['av1', null],
};
export const VIDEO_CODECS = ['h264', 'vp9', 'vp8', 'av1'];
export const IMAGE_CODECS = ['jpeg', 'png', 'webp'];       // createImageBitmap decodes them in any browser context
/** The order of `codecs=` in the upgrade URL: what this client would rather get first. */
export const CODEC_PREFERENCE = [...VIDEO_CODECS, ...IMAGE_CODECS];
/** WebCodecs codec strings asked of VideoDecoder.isConfigSupported() before connecting, per video codec, lowest
 *  first: H.264 constrained baseline at levels 4.0 (1080p), 4.2, 5.1 (4K); VP9 profile 0 level 1, 8 bit; VP8; AV1
 *  main profile level 3.0, 8 bit. A codec is offered when its first string is supported. */
export const VIDEO_PROBE_STRINGS = {
  h264: ['avc1.42E028', 'avc1.42E02A', 'avc1.42E033'],
  vp9: ['vp09.00.10.08'],
  vp8: ['vp8'],
  av1: ['av01.0.04M.08'],
};
/** What the rcanvas encoders are fed and signal (docs/protocol.md, hello `color`): BT.601, limited range. */
export const DEFAULT_VIDEO_COLOR = { primaries: 'smpte170m', transfer: 'smpte170m', matrix: 'smpte170m', full_range: false };
export const MAX_COORD = 1e6;                 // |x|, |y|, |dx|, |dy| limit of the protocol
export const MAX_STRING_BYTES = 31;           // key and data limit
export const MAX_TOUCHES = 10;                // list/object entry limit
export const DEFAULT_MAX_MESSAGE_BYTES = 4096;

/** Parses and validates the 56-byte little-endian tile header. Throws an Error saying what is wrong. */
export function parseFrameHeader(buffer) {
  const bytes = ArrayBuffer.isView(buffer) ? buffer : buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : null;
  if (!bytes) throw new TypeError('binary message is not an ArrayBuffer');
  if (bytes.byteLength < HEADER_BYTES) throw new Error(`message too short for a header (${bytes.byteLength} bytes)`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u32 = (o) => v.getUint32(o, true);
  const h = {
    magic: u32(0), version: v.getUint8(4), codec: v.getUint8(5), flags: v.getUint16(6, true), seq: u32(8),
    tile_index: v.getUint16(12, true), tile_count: v.getUint16(14, true),
    timestamp_us: Number(v.getBigInt64(16, true)),
    frame_width: u32(24), frame_height: u32(28), x: u32(32), y: u32(36), w: u32(40), h: u32(44),
    rtt_us: u32(48), payload_bytes: u32(52),
  };
  if (h.magic !== FRAME_MAGIC) throw new Error(`bad magic 0x${h.magic.toString(16)}`);
  if (!HEADER_VERSIONS.includes(h.version)) throw new Error(`unsupported version ${h.version}`);
  if (!CODECS[h.codec]) throw new Error(`unknown codec ${h.codec}`);
  if (h.payload_bytes !== bytes.byteLength - HEADER_BYTES) {
    throw new Error(`payload_bytes ${h.payload_bytes} != message length ${bytes.byteLength} - ${HEADER_BYTES}`);
  }
  if (h.payload_bytes === 0) throw new Error('empty payload');
  if (h.tile_count === 0 || h.tile_index >= h.tile_count) throw new Error(`bad tile ${h.tile_index}/${h.tile_count}`);
  if (!h.frame_width || !h.frame_height || !h.w || !h.h ||
      h.x + h.w > h.frame_width || h.y + h.h > h.frame_height) {
    throw new Error(`tile ${h.x},${h.y} ${h.w}x${h.h} outside frame ${h.frame_width}x${h.frame_height}`);
  }
  h.codec_name = CODECS[h.codec][0];
  h.mime = CODECS[h.codec][1];
  h.lossless = (h.flags & FLAG_LOSSLESS) !== 0;
  h.last = (h.flags & FLAG_LAST) !== 0;
  h.refinement = (h.flags & FLAG_REFINEMENT) !== 0;
  h.video = h.mime === null;
  h.keyframe = !h.video || (h.flags & FLAG_KEYFRAME) !== 0;   // an image tile is always decodable alone
  h.scaled = (h.flags & FLAG_SCALED) !== 0;
  return h;
}

/**
 * Whether a frame of frameWidth × frameHeight is drawn into a canvas of canvasWidth × canvasHeight (device pixels)
 * nearest-neighbour (true) or smoothed (false): rendercanvas' rule for set_bitmap ("all builtin backends use
 * nearest-neighbor interpolation when the bitmap is smaller than the physical size, so that applications can
 * provide N times smaller bitmaps to produce a pixelated visualization"; its GPU path samples with
 * mag_filter nearest, min_filter linear). So: nearest when the frame is enlarged (or drawn 1:1) on both axes,
 * smoothed when it is shrunk on either — and smoothed for a frame the server shrank itself (header flag 16,
 * `scaled`: rate adaptation sent 1/2 or 1/4 of the app's picture, an approximation of a full-size one).
 */
export function drawsPixelated(frameWidth, frameHeight, canvasWidth, canvasHeight, scaled) {
  return !scaled && canvasWidth >= frameWidth && canvasHeight >= frameHeight;
}

/** The tile's encoded bytes (a complete image file, or one video packet), a view into the message without a copy. */
export function tilePayload(buffer, header) {
  const bytes = ArrayBuffer.isView(buffer) ? buffer : new Uint8Array(buffer);
  return new Uint8Array(bytes.buffer, bytes.byteOffset + HEADER_BYTES, header.payload_bytes);
}

// ---- client → server messages ---------------------------------------------------------------------------

/** Sent after a frame (all its tiles) has been drawn, refinements included, in arrival order. */
/** The ack of frame seq, drawn holdMs after its last byte arrived (decode and draw): the server takes that time off
 *  the round trip it measures the link by. decodeMs (optional): the time this client spent on the frame, from its
 *  first byte or the end of the frame before it, whichever came later, to drawn: what its decoder costs a frame,
 *  which the server weighs against the frame rate (docs/protocol.md, "decode_ms"). */
const ms01 = (ms) => Math.min(60000, Math.round(ms * 10) / 10);
export const ackMessage = (seq, holdMs, decodeMs) => {
  const m = { type: 'ack', seq };
  if (holdMs > 0) m.hold_ms = ms01(holdMs);
  if (decodeMs > 0) m.decode_ms = ms01(decodeMs);
  return m;
};

/** The server's view of this viewer's link and its encoder's settings (hello.link, role.link, {"type":"link"}), as
 *  plain numbers: rate/target kbit/s, rtt ms, quality (0 = not a quality codec), scale (1, 2, 4), fps cap (0 =
 *  none), bitrate kbit/s (video; 0 = not video), fill fps (video: the rate its frames are sized for when the
 *  encoder keeps less than the app's; 0 = the app's), screen (video: 1 while its encoder codes the frames as screen
 *  content, text and thin lines). Unknown or missing fields are null. */
export function parseLink(o) {
  if (!o || typeof o !== 'object') return null;
  const num = (k) => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? o[k] : null);
  return { rateKbps: num('rate_kbps'), targetKbps: num('target_kbps'), rttMs: num('rtt_ms'), minRttMs: num('min_rtt_ms'),
           window: num('window'), rung: num('rung'), quality: num('quality'), scale: num('scale'),
           fpsCap: num('fps_cap'), bitrateKbps: num('bitrate_kbps'), fillFps: num('fill_fps'),
           screen: num('screen'),
           limit: typeof o.limit === 'string' ? o.limit : null };
}

/** Asks the server for a keyframe: sent after the video decoder was reset (an error, or a stream that did not start
 *  with a keyframe); packets until the keyframe are dropped (and acked). */
export const keyframeMessage = () => ({ type: 'keyframe' });

/** Whether the view can be seen (on screen, page not hidden); the server sends no frames to a hidden viewer. */
export const visibilityMessage = (visible) => ({ type: 'visibility', visible: !!visible });

/** The JSON text of a message, or null if it would exceed maxBytes of UTF-8 (the server would close on it). */
export function encodeMessage(obj, maxBytes = DEFAULT_MAX_MESSAGE_BYTES) {
  const text = JSON.stringify(obj);
  if (text.length * 3 > maxBytes && new TextEncoder().encode(text).length > maxBytes) return null;
  return text;
}

// ---- renderview event fields ----------------------------------------------------------------------------

export const clampCoord = (v) => Math.max(-MAX_COORD, Math.min(MAX_COORD, Number(v) || 0));
export const nowSeconds = () => Date.now() / 1000;

/** DOM MouseEvent.button -> renderview button (1 left, 2 right, 3 middle, 4 back, 5 forward; 0 none). */
export function mapButton(domButton) {
  return [1, 3, 2, 4, 5][domButton] ?? 0;
}

/** DOM MouseEvent.buttons bit mask -> renderview list (bit b -> b + 1). */
export function buttonsList(bits) {
  const out = [];
  for (let b = 0; b < 5; b++) if (bits & (1 << b)) out.push(b + 1);
  return out;
}

/** Modifier keys held during a DOM event, as renderview names. */
export function modifiersList(ev) {
  const out = [];
  if (ev.shiftKey) out.push('Shift');
  if (ev.ctrlKey) out.push('Control');
  if (ev.altKey) out.push('Alt');
  if (ev.metaKey) out.push('Meta');
  return out;
}

const utf8Length = (cp) => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

/** Cuts s to at most maxBytes of UTF-8 without splitting a code point. */
export function truncateUtf8(s, maxBytes = MAX_STRING_BYTES) {
  let out = '';
  let n = 0;
  for (const ch of String(s)) {
    const len = utf8Length(ch.codePointAt(0));
    if (n + len > maxBytes) break;
    out += ch;
    n += len;
  }
  return out;
}

/** Splits s into pieces of at most maxBytes of UTF-8 each, never inside a code point (for `char` events of
 *  text longer than the protocol's 31-byte limit, such as a sentence committed by an input method). */
export function splitUtf8(s, maxBytes = MAX_STRING_BYTES) {
  const out = [];
  let cur = '';
  let n = 0;
  for (const ch of String(s)) {
    const len = utf8Length(ch.codePointAt(0));
    if (n + len > maxBytes && cur) { out.push(cur); cur = ''; n = 0; }
    cur += ch;
    n += len;
  }
  if (cur) out.push(cur);
  return out;
}

// ---- URLs of a canvas -----------------------------------------------------------------------------------

const NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;
export const validCanvasName = (s) => s === '' || (typeof s === 'string' && NAME_RE.test(s));

/** Canvas name from the page's data-canvas attribute, else from a /c/NAME path; "" is the default canvas. */
export function canvasNameFrom(attr, pathname = '') {
  if (attr === '' || (typeof attr === 'string' && NAME_RE.test(attr))) return attr;
  const m = /^\/c\/([^/]+)\/?$/.exec(pathname);
  return m && NAME_RE.test(m[1]) ? m[1] : '';
}

/** The server's root as an absolute URL ending in "/": `root` resolved against loc (the served page gives it as a
 *  relative path, "./" or "../", so that a page behind a proxy's prefix finds its server); default "/". */
function rootUrl(loc, root = '/') {
  const u = new URL(root || '/', loc.href);
  if (!u.pathname.endsWith('/')) u.pathname += '/';
  return u;
}

/** `?token=T`, or `?session=S` when sessionKey is given (the token is then never sent), or "". */
function credentialQuery(token, sessionKey) {
  if (sessionKey) return `?session=${encodeURIComponent(sessionKey)}`;
  return token != null ? `?token=${encodeURIComponent(token)}` : '';
}

/** WebSocket URL of a canvas: ws(s)://host/ROOT/ws?token=T or ws(s)://host/ROOT/c/NAME/ws?token=T (ROOT: see
 *  rootUrl). Without a token the socket authenticates by the session cookie (the served page's ROOT is then its
 *  session path, …/s/R/, the only path the cookie is sent to), or with sessionKey by ?session=S under that path
 *  (a served page that a frame of another site loaded: no cookie reaches it there). */
export function socketUrl(loc, canvasName, token = new URLSearchParams(loc.search).get('token'), root = '/',
                          sessionKey = '') {
  const base = rootUrl(loc, root);
  const scheme = base.protocol === 'https:' ? 'wss:' : 'ws:';
  const path = base.pathname + (canvasName ? `c/${canvasName}/ws` : 'ws');
  return `${scheme}//${base.host}${path}${credentialQuery(token, sessionKey)}`;
}

/** The upgrade URL with the codecs this client decodes, in its order of preference (protocol 2 negotiation):
 *  …/ws?token=T&codecs=h264,vp9,vp8,jpeg,png,webp. Known names only, at most 16; a version 1 server ignores it. */
export function withCodecs(url, codecs) {
  const list = (codecs || []).filter((c) => CODEC_PREFERENCE.includes(c)).slice(0, 16);
  const base = url.replace(/([?&])codecs=[^&]*(&|$)/, (m, a, b) => (b ? a : '')).replace(/[?&]$/, '');
  if (!list.length) return base;
  return `${base}${base.includes('?') ? '&' : '?'}codecs=${list.join(',')}`;
}

/** URL of the page of the same canvas with the same token (or session: see socketUrl): asked after a WebSocket
 *  attempt that never opened, its status (401 no token, 403 wrong token, 404 no such canvas, 200) says why the
 *  upgrade was refused. */
export function probeUrl(loc, canvasName, token = new URLSearchParams(loc.search).get('token'), root = '/',
                         sessionKey = '') {
  const base = rootUrl(loc, root);
  const path = base.pathname + (canvasName ? `c/${canvasName}` : '');
  return `${base.protocol}//${base.host}${path}${credentialQuery(token, sessionKey)}`;
}

/**
 * Where a view connects, from its options: `url` (a page URL as the server prints it, http(s)://host/c/NAME?token=T,
 * or its ws(s):// WebSocket URL, either under a proxy's prefix too: http://host/viz/c/NAME), or `canvas` (name,
 * "" = default) and `token` on this page's server, whose root is `root` relative to this page (the served page
 * passes its data-root, "./" or "../"; default "/"); the token defaults to this page's ?token=. `sessionKey` (the
 * served page's data-session-key, with a root under s/R/): connect with ?session= instead, and never with a token,
 * not even the one in this page's URL. Returns {canvasName, socket, probe} or throws.
 */
export function endpointsFrom({ url, canvas, token, root, sessionKey } = {}, loc) {
  let base = loc;
  let name = canvas ?? '';
  let tok = token ?? new URLSearchParams(loc.search).get('token');
  if (url) {
    const u = new URL(url, loc.href);
    if (u.protocol === 'ws:' || u.protocol === 'wss:') u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
    const path = u.pathname.replace(/\/ws$/, '/');        // "/ws" -> "/", "/c/NAME/ws" -> "/c/NAME/"
    const m = /^(.*)\/c\/([^/]+)\/?$/.exec(path);        // a prefix (proxy), then /c/NAME
    const d = /^(.*\/)(index\.html)?$/.exec(path);         // a prefix ending in "/": the default canvas
    if (!m && !d) throw new Error(`rcanvas: not a canvas URL: ${url}`);
    name = m ? m[2] : '';
    root = m ? `${m[1]}/` : d[1];
    base = u;
    if (token == null) tok = u.searchParams.get('token');
  }
  if (!validCanvasName(name)) throw new Error(`rcanvas: bad canvas name ${JSON.stringify(name)}`);
  const key = sessionKey || '';
  if (key) tok = null;
  return { canvasName: name, socket: socketUrl(base, name, tok, root, key), probe: probeUrl(base, name, tok, root, key) };
}

/** What a probe status means: the state to enter and whether to keep retrying. 0 = no answer (server down).
 *  session: the view connects by the session of the served page (its cookie or ?session= under s/R/, no token in any URL),
 *  which lives as long as the server process that made it; a 401 then means that process is gone (a restart):
 *  only the link with its token opens the page again (docs/security.md). */
export function refusalFrom(status, session = false) {
  if (status === 401 && session) return { state: 'session-ended', retry: false };
  if (status === 401) return { state: 'token-missing', retry: false };
  if (status === 403) return { state: 'token-rejected', retry: false };
  if (status === 404) return { state: 'disconnected', retry: true, why: 'the server has no such canvas' };
  if (status === 0) return { state: 'disconnected', retry: true, why: 'the server does not answer' };
  // a proxy in between (rcanvas.jupyter, nginx) answers for a server that is not there
  if (status === 502 || status === 504) return { state: 'disconnected', retry: true, why: 'the server does not answer (the proxy says so)' };
  return { state: 'disconnected', retry: true, why: 'the server refused the connection' };
}

/** The stats overlay's name of the encoder of a frame: header codec, refinement flag, server's encoder name. */
export function encoderLabel(codec, refinement, encoder) {
  if (!codec) return '–';
  if (refinement) return `${codec} (lossless refinement)`;
  if (codec === 'jpeg' && encoder === 'jpeg-gpu') return 'jpeg (gpu)';
  if (codec === 'h264' && encoder === 'h264-gpu') return 'h264 (gpu, webcodecs)';
  if (VIDEO_CODECS.includes(codec)) return `${codec} (webcodecs)`;
  return codec;
}

/** WebCodecs VideoColorSpaceInit of a hello's `color` ({primaries, transfer, matrix, full_range}); the rcanvas
 *  default (BT.601 limited) when the hello has none. */
export function videoColorSpace(color) {
  const c = color && typeof color === 'object' ? color : DEFAULT_VIDEO_COLOR;
  const d = DEFAULT_VIDEO_COLOR;
  return {
    primaries: typeof c.primaries === 'string' ? c.primaries : d.primaries,
    transfer: typeof c.transfer === 'string' ? c.transfer : d.transfer,
    matrix: typeof c.matrix === 'string' ? c.matrix : d.matrix,
    fullRange: typeof c.full_range === 'boolean' ? c.full_range : d.full_range,
  };
}
