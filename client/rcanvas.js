// rcanvas.js: the browser client of rcanvas (wire protocol: docs/protocol.md).
//
// Data path: the C app draws into an rcanvas canvas -> the server encodes each frame as JPEG/PNG tiles and sends
// them over a WebSocket -> this module decodes every tile as it arrives (createImageBitmap), draws each frame
// whole onto the full-window <canvas> once all its tiles are decoded, then acks it (the server's flow control
// waits for acks). The other way, it sends pointer, wheel, key, char, resize and close events in the renderview
// format. It reconnects by itself and exposes window.rcanvas (state, stats, latencies) for tests and tools.
// Connection states (body[data-state], window.rcanvas.state): connecting, connected, disconnected (retrying with
// backoff, picture dimmed, a banner), token-missing / token-rejected (the server answers 401 / 403: no retrying
// until the person asks). A browser WebSocket cannot see the HTTP status of a refused upgrade, so after an attempt
// that never opened the client asks the page URL of the same canvas with the same token (docs/protocol.md).
// A plain ES module without dependencies; the pure helpers are exported for unit tests, and the client starts
// only when a document exists.

export const PROTOCOL_VERSION = 1;
export const SUBPROTOCOL = 'rcanvas.v1';
export const HEADER_BYTES = 56;
export const FRAME_MAGIC = 0x46434352;                 // bytes "RCCF" read as a little-endian u32
export const CODEC_JPEG = 1;
export const CODEC_PNG = 2;
export const FLAG_LOSSLESS = 1;
export const FLAG_LAST = 2;
export const FLAG_REFINEMENT = 4;

const CODECS = { [CODEC_JPEG]: ['jpeg', 'image/jpeg'], [CODEC_PNG]: ['png', 'image/png'] };
const MAX_COORD = 1e6;                 // |x|, |y|, |dx|, |dy| limit of the protocol
const MAX_STRING_BYTES = 31;           // key and data limit
const MAX_TOUCHES = 10;                // list/object entry limit
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;
const POLICY_DELAY_MS = 10000;         // after a close for policy (1008) or auth (4001/4003) reasons
const HELLO_TIMEOUT_MS = 10000;
const PROBE_TIMEOUT_MS = 5000;         // the HTTP probe after a refused WebSocket
const HINT_MS = 4000;                  // how long "F2: stats" stays after the first connect
const LATENCIES_KEPT = 10000;
const BYTES_WINDOW = 30;               // frames averaged for kB/frame

// ---------------------------------------------------------------------------------------------------------
// Pure helpers (exported for tests)

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
  if (h.version !== PROTOCOL_VERSION) throw new Error(`unsupported version ${h.version}`);
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
  return h;
}

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

/** Cuts s to at most maxBytes of UTF-8 without splitting a code point. */
export function truncateUtf8(s, maxBytes = MAX_STRING_BYTES) {
  let out = '';
  let n = 0;
  for (const ch of String(s)) {
    const cp = ch.codePointAt(0);
    const len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (n + len > maxBytes) break;
    out += ch;
    n += len;
  }
  return out;
}

/** Canvas name from the page's data-canvas attribute, else from a /c/NAME path; "" is the default canvas. */
export function canvasNameFrom(attr, pathname = '') {
  const valid = (s) => typeof s === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(s);
  if (attr === '' || valid(attr)) return attr;
  const m = /^\/c\/([^/]+)\/?$/.exec(pathname);
  return m && valid(m[1]) ? m[1] : '';
}

/** WebSocket URL of a canvas: ws(s)://host/ws?token=T or ws(s)://host/c/NAME/ws?token=T. */
export function socketUrl(loc, canvasName) {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  const path = canvasName ? `/c/${canvasName}/ws` : '/ws';
  const token = new URLSearchParams(loc.search).get('token');
  return `${scheme}//${loc.host}${path}${token !== null ? '?token=' + encodeURIComponent(token) : ''}`;
}

/** URL of the page of the same canvas with the same token: asked after a WebSocket attempt that never opened, its
 *  status (401 no token, 403 wrong token, 404 no such canvas, 200) says why the upgrade was refused. */
export function probeUrl(loc, canvasName) {
  const path = canvasName ? `/c/${canvasName}` : '/';
  const token = new URLSearchParams(loc.search).get('token');
  return `${loc.protocol}//${loc.host}${path}${token !== null ? '?token=' + encodeURIComponent(token) : ''}`;
}

/** What a probe status means: the state to enter and whether to keep retrying. 0 = no answer (server down). */
export function refusalFrom(status) {
  if (status === 401) return { state: 'token-missing', retry: false };
  if (status === 403) return { state: 'token-rejected', retry: false };
  if (status === 404) return { state: 'disconnected', retry: true, why: 'the server has no such canvas' };
  if (status === 0) return { state: 'disconnected', retry: true, why: 'the server does not answer' };
  return { state: 'disconnected', retry: true, why: 'the server refused the connection' };
}

/** The stats overlay's name of the encoder of a frame: header codec, refinement flag, server's encoder name. */
export function encoderLabel(codec, refinement, encoder) {
  if (!codec) return '–';
  if (refinement) return `${codec} (lossless refinement)`;
  if (codec === 'jpeg' && encoder === 'jpeg-gpu') return 'jpeg (gpu)';
  return codec;
}

/** Keys whose browser meaning must survive (reload, devtools, zoom, full screen): sent, but not prevented. */
export function isBrowserShortcut(ev) {
  if (ev.key === 'F5' || ev.key === 'F11' || ev.key === 'F12') return true;
  const k = (ev.key || '').toLowerCase();
  const cmd = ev.ctrlKey || ev.metaKey;
  if (cmd && (k === 'r' || k === '+' || k === '-' || k === '=' || k === '0')) return true;
  if (cmd && (ev.shiftKey || ev.altKey) && (k === 'i' || k === 'j' || k === 'c')) return true;
  return false;
}

const clampCoord = (v) => Math.max(-MAX_COORD, Math.min(MAX_COORD, Number(v) || 0));
const nowSeconds = () => Date.now() / 1000;
const sameList = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

// ---------------------------------------------------------------------------------------------------------
// The client

/** The banner of the disconnected and token states, for pages whose HTML lacks it (same markup as index.html). */
function makeBanner(doc) {
  const b = doc.body.appendChild(doc.createElement('div'));
  b.id = 'rcanvas-banner';
  b.className = 'rcanvas-banner';
  b.hidden = true;
  for (const [tag, cls] of [['p', 'title'], ['p', 'text'], ['p', 'detail'], ['button', 'retry']]) {
    const e = b.appendChild(doc.createElement(tag));
    e.className = `rcanvas-banner-${cls}`;
  }
  b.querySelector('.rcanvas-banner-title').setAttribute('role', 'alert');
  b.querySelector('button').type = 'button';
  return b;
}

function start() {
  const doc = document;
  const canvas = doc.getElementById('rcanvas-canvas') || doc.body.appendChild(doc.createElement('canvas'));
  const badge = doc.getElementById('rcanvas-status') || doc.body.appendChild(doc.createElement('div'));
  const statsEl = doc.getElementById('rcanvas-stats') || doc.body.appendChild(doc.createElement('pre'));
  const banner = doc.getElementById('rcanvas-banner') || makeBanner(doc);
  const bannerTitle = banner.querySelector('.rcanvas-banner-title');
  const bannerText = banner.querySelector('.rcanvas-banner-text');
  const bannerDetail = banner.querySelector('.rcanvas-banner-detail');
  const retryButton = banner.querySelector('.rcanvas-banner-retry');
  canvas.tabIndex = 0;
  const ctx = canvas.getContext('2d', { alpha: false, desynchronized: true });
  const encoder = new TextEncoder();
  const canvasName = canvasNameFrom(doc.body.dataset.canvas, location.pathname);
  const url = socketUrl(location, canvasName);
  const probe = probeUrl(location, canvasName);

  // connection state
  let ws = null;
  let state = 'connecting';       // connecting, connected, disconnected, token-missing, token-rejected
  let attempt = 0;                // counts connect() calls: late answers of an older attempt are ignored
  let hintShown = false;
  let connected = false;          // between hello and close
  let everConnected = false;
  let failures = 0;               // consecutive failed attempts, for the backoff
  let retryTimer = null;
  let helloTimer = null;
  let unloading = false;
  let viewer = { id: null, active: false, title: doc.title, maxMessageBytes: 4096, width: 0, height: 0 };

  // frame state
  let assembling = null;          // the frame whose tiles are arriving
  let presentChain = Promise.resolve();
  const stats = {
    framesShown: 0, bytesReceived: 0, codec: '', refined: false, frameWidth: 0, frameHeight: 0, tiles: 0,
    lastSeq: null, latencyMs: null, encoder: '', refinements: 0, decodeErrors: 0, droppedMessages: 0, reconnects: 0,
  };
  const drawTimes = [];           // performance.now() of frames drawn in the last second
  const frameBytes = [];          // bytes of the last BYTES_WINDOW frames
  const latencies = new Float64Array(LATENCIES_KEPT);
  let latencyCount = 0;

  // size state
  let cssWidth = 0, cssHeight = 0, lastResizeKey = '';
  let scratch = null;             // keeps the picture across a backing-store resize

  // ---- sending ------------------------------------------------------------------------------------------

  function sendJson(obj, socket = ws) {
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    const text = JSON.stringify(obj);
    if (text.length * 3 > viewer.maxMessageBytes && encoder.encode(text).length > viewer.maxMessageBytes) {
      console.warn('rcanvas: not sending an over-long message', obj.event_type || obj.type);
      return false;
    }
    socket.send(text);
    return true;
  }

  // pointer_move and wheel wait for the next animation frame (at most one of each); any other event sends
  // them first so that the order of events is kept.
  let pendingMove = null, pendingWheel = null, pendingOrder = [], rafId = 0;

  function flushPending() {
    if (rafId) { cancelAnimationFrame(rafId); rafId = 0; }
    const list = pendingOrder;
    pendingOrder = []; pendingMove = null; pendingWheel = null;
    if (connected) for (const ev of list) sendJson(ev);
  }

  function sendEvent(ev) {
    flushPending();
    if (connected) sendJson(ev);
  }

  function queuePending(ev) {
    pendingOrder.push(ev);
    if (!rafId) rafId = requestAnimationFrame(() => { rafId = 0; flushPending(); });
  }

  function queueMove(ev) {
    if (!connected) return;
    if (pendingMove && sameList(pendingMove.buttons, ev.buttons) && sameList(pendingMove.modifiers, ev.modifiers)) {
      Object.assign(pendingMove, ev);            // newest position, same state
      return;
    }
    if (pendingMove) flushPending();
    pendingMove = ev;
    queuePending(ev);
  }

  function queueWheel(ev) {
    if (!connected) return;
    const p = pendingWheel;
    if (p && sameList(p.buttons, ev.buttons) && sameList(p.modifiers, ev.modifiers)) {
      p.dx = clampCoord(p.dx + ev.dx);
      p.dy = clampCoord(p.dy + ev.dy);
      p.x = ev.x; p.y = ev.y; p.time_stamp = ev.time_stamp;
      return;
    }
    if (p) flushPending();
    pendingWheel = ev;
    queuePending(ev);
  }

  function sendResize(force) {
    if (!connected || !(cssWidth > 0) || !(cssHeight > 0)) return;
    const pr = Math.min(16, window.devicePixelRatio > 0 ? window.devicePixelRatio : 1);
    const width = Math.min(32768, cssWidth), height = Math.min(32768, cssHeight);
    const key = `${width}x${height}@${pr}`;
    if (!force && key === lastResizeKey) return;
    lastResizeKey = key;
    sendEvent({ event_type: 'resize', width, height, pixel_ratio: pr, time_stamp: nowSeconds() });
  }

  // ---- connection ---------------------------------------------------------------------------------------

  function setBadge(text, hint = false) {
    clearTimeout(hintTimer);
    badge.textContent = text;
    badge.hidden = !text;
    badge.classList.toggle('rcanvas-hint', hint);
    badge.classList.remove('rcanvas-fade');
  }

  // "F2: stats", once, after the first connect: it fades away and never covers the picture for long.
  let hintTimer = null;
  function showStatsHint() {
    if (hintShown || !statsEl.hidden) return;
    hintShown = true;
    setBadge('F2: stats', true);
    hintTimer = setTimeout(() => {
      badge.classList.add('rcanvas-fade');
      hintTimer = setTimeout(() => setBadge(''), 1000);
    }, HINT_MS);
  }

  // The first key or click on the canvas ends the hint at once: the person is at work, and a fading badge would
  // change the picture under them (screenshots of a still scene included).
  function dismissHint() {
    if (badge.classList.contains('rcanvas-hint')) setBadge('');
  }
  canvas.addEventListener('keydown', dismissHint);
  canvas.addEventListener('pointerdown', dismissHint);

  /** Enters a connection state: body[data-state] (the CSS dims the picture), the banner, the badge. */
  function setState(next, { text = '', detail = '' } = {}) {
    state = next;
    doc.body.dataset.state = next;
    const titles = {
      disconnected: everConnected ? 'Connection lost' : 'Cannot connect',
      'token-rejected': 'Token rejected',
      'token-missing': 'Token missing',
    };
    if (next === 'connecting' || next === 'connected') {
      banner.hidden = true;
      if (next === 'connecting') setBadge('connecting…');
      else { setBadge(''); showStatsHint(); }
      return;
    }
    setBadge('');
    bannerTitle.textContent = titles[next];
    if (next === 'token-rejected') {
      text = 'Open the URL the server printed.';
      detail = 'The server refuses this page\'s token; it may have restarted with a new one.';
    } else if (next === 'token-missing') {
      text = 'Open the URL the server printed.';
      detail = 'This page\'s address has no ?token=….';
    }
    bannerText.textContent = text;
    bannerDetail.textContent = detail;
    bannerDetail.hidden = !detail;
    retryButton.textContent = next === 'disconnected' ? 'Retry now' : 'Retry';
    banner.hidden = false;
  }

  function retryNow() {
    const old = ws;
    if (old && old.readyState === WebSocket.CONNECTING) { ws = null; old.close(); }   // start over, not twice
    failures = 0;
    connect();
  }
  retryButton.addEventListener('click', retryNow);

  function connect() {
    clearTimeout(retryTimer);
    retryTimer = null;
    const mine = ++attempt;
    if (state === 'disconnected') bannerText.textContent = 'Reconnecting…';
    else if (state !== 'connecting') setState(everConnected ? 'disconnected' : 'connecting', { text: 'Reconnecting…' });
    let socket;
    try {
      socket = new WebSocket(url, SUBPROTOCOL);
    } catch (err) {
      console.error('rcanvas: cannot open WebSocket', url, err);
      scheduleReconnect(null, 'cannot open a WebSocket');
      return;
    }
    let opened = false;
    socket.binaryType = 'arraybuffer';
    ws = api.socket = socket;
    socket.onopen = () => {
      opened = true;
      helloTimer = setTimeout(() => { if (socket === ws && !connected) socket.close(4000, 'no hello'); }, HELLO_TIMEOUT_MS);
    };
    socket.onmessage = (ev) => {
      if (socket !== ws) return;
      if (typeof ev.data === 'string') onText(ev.data);
      else onBinary(socket, ev.data);
    };
    socket.onclose = (ev) => { if (socket === ws) onClose(ev, opened, mine); };
  }

  function onClose(ev, opened, mine) {
    clearTimeout(helloTimer);
    connected = false;
    assembling = null;                           // the server forgets unacked frames of a closed socket
    pendingOrder = []; pendingMove = null; pendingWheel = null;
    if (unloading) return;
    if (opened) { scheduleReconnect(ev); return; }
    // Refused or unreachable: the WebSocket API hides the HTTP status, so ask the page URL with the same token.
    probeRefusal().then((status) => {
      if (mine !== attempt || unloading) return;     // a retry or a page hide came first
      const r = refusalFrom(status);
      if (!r.retry) {
        console.warn(`rcanvas: the server refuses this page's token (HTTP ${status}); not retrying`);
        setState(r.state);
        return;
      }
      scheduleReconnect(ev, r.why);
    });
  }

  /** HTTP status of the canvas's page with our token; 0 when the server does not answer. */
  async function probeRefusal() {
    try {
      const resp = await fetch(probe, { cache: 'no-store', credentials: 'same-origin',
                                        signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      resp.body?.cancel().catch(() => {});        // only the status matters
      return resp.status;
    } catch {
      return 0;
    }
  }

  function scheduleReconnect(ev, why = '') {
    let delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** failures);
    failures++;
    if (ev) {
      if ([1008, 4001, 4003].includes(ev.code)) delay = Math.max(delay, POLICY_DELAY_MS);
      if (ev.reason) why = `closed by the server: ${ev.reason} (${ev.code})`;
      else if (!why && ev.code !== 1005 && ev.code !== 1006) why = `closed (${ev.code})`;
    }
    const due = performance.now() + delay;
    setState('disconnected', { detail: why });
    const tick = () => {
      const left = due - performance.now();
      if (left <= 0) { connect(); return; }
      bannerText.textContent = `Retrying in ${Math.ceil(left / 1000)} s…`;
      retryTimer = setTimeout(tick, Math.min(left, 250));
    };
    tick();
  }

  function onText(text) {
    let msg;
    try { msg = JSON.parse(text); } catch { console.warn('rcanvas: ignoring a non-JSON text message'); return; }
    if (!msg || typeof msg !== 'object') return;
    switch (msg.type) {
      case 'hello':
        clearTimeout(helloTimer);
        if (msg.protocol !== PROTOCOL_VERSION) console.warn('rcanvas: server speaks protocol', msg.protocol);
        if (everConnected && !connected) stats.reconnects++;
        everConnected = true;
        connected = true;
        failures = 0;
        viewer = {
          id: msg.viewer_id ?? null, active: !!msg.active, title: String(msg.title ?? doc.title),
          maxMessageBytes: msg.max_message_bytes > 0 ? msg.max_message_bytes : 4096,
          width: msg.width, height: msg.height, pixelRatio: msg.pixel_ratio, canvas: msg.canvas,
          codecs: msg.codecs, codec: msg.codec, maxInFlight: msg.max_in_flight,
          encoder: typeof msg.encoder === 'string' ? msg.encoder : '',
        };
        setTitle(viewer.title);
        setState('connected');
        sendResize(true);
        break;
      case 'title':
        viewer.title = String(msg.title ?? '');
        setTitle(viewer.title);
        break;
      case 'encoder':                            // the codec changed, or a GPU encoder came or went
        viewer.encoder = typeof msg.encoder === 'string' ? msg.encoder : '';
        break;
      case 'role':
        viewer.active = !!msg.active;
        if (viewer.active) sendResize(true);   // our size now drives the canvas
        break;
      default:
        break;                                   // unknown types: forward compatibility
    }
  }

  function setTitle(title) {
    doc.title = title;
    canvas.setAttribute('aria-label', title);
  }

  // ---- frames -------------------------------------------------------------------------------------------

  function onBinary(socket, buf) {
    let h;
    try { h = parseFrameHeader(buf); } catch (err) {
      stats.droppedMessages++;
      console.warn('rcanvas: dropping binary message:', err.message);
      return;
    }
    stats.bytesReceived += buf.byteLength;
    stats.latencyMs = h.rtt_us > 0 ? h.rtt_us / 1000 : null;
    if (assembling && (h.seq !== assembling.seq || h.tile_index === 0)) {
      // a frame without its last tile (one was dropped): ack it undrawn so flow control does not stall
      console.warn(`rcanvas: frame ${assembling.seq} ended without its last tile`);
      assembling.incomplete = true;
      present(assembling);
      assembling = null;
    }
    if (!assembling) {
      assembling = { socket, seq: h.seq, flags: h.flags, codec: h.codec_name, frameWidth: h.frame_width,
                     frameHeight: h.frame_height, tileCount: h.tile_count, rttUs: 0, bytes: 0, tiles: [] };
    }
    const f = assembling;
    const blob = new Blob([new Uint8Array(buf, HEADER_BYTES, h.payload_bytes)], { type: h.mime });
    const bitmap = createImageBitmap(blob).catch((err) => {
      stats.decodeErrors++;
      console.error(`rcanvas: cannot decode tile ${h.tile_index} of frame ${h.seq} (${h.codec_name}):`, err);
      return null;
    });
    f.tiles.push({ bitmap, x: h.x, y: h.y, w: h.w, h: h.h });
    f.bytes += buf.byteLength;
    f.rttUs = h.rtt_us;
    if (h.last) {
      if (f.tiles.length !== f.tileCount) console.warn(`rcanvas: frame ${f.seq}: ${f.tiles.length}/${f.tileCount} tiles`);
      assembling = null;
      present(f);
    }
  }

  // Frames are drawn and acked strictly in arrival order; their tiles decode in parallel meanwhile.
  function present(f) {
    presentChain = presentChain.then(async () => {
      const bitmaps = await Promise.all(f.tiles.map((t) => t.bitmap));
      try {
        if (!f.incomplete) drawFrame(f, bitmaps);
      } catch (err) {
        console.error('rcanvas: drawing frame', f.seq, 'failed:', err);
      } finally {
        for (const b of bitmaps) if (b) b.close();
        sendJson({ type: 'ack', seq: f.seq }, f.socket);     // skipped if that socket has closed
      }
    }).catch((err) => console.error('rcanvas: presenting frame', f.seq, 'failed:', err));
  }

  function drawFrame(f, bitmaps) {
    const cw = canvas.width, ch = canvas.height;
    const sx = cw / f.frameWidth, sy = ch / f.frameHeight;
    f.tiles.forEach((t, i) => {
      const b = bitmaps[i];
      if (!b) return;
      if (sx === 1 && sy === 1 && b.width === t.w && b.height === t.h) {
        ctx.imageSmoothingEnabled = false;
        ctx.drawImage(b, t.x, t.y);
      } else {                                   // stretch; rounded edges keep stripes seamless
        const x0 = Math.round(t.x * sx), x1 = Math.round((t.x + t.w) * sx);
        const y0 = Math.round(t.y * sy), y1 = Math.round((t.y + t.h) * sy);
        ctx.imageSmoothingEnabled = true;
        ctx.drawImage(b, x0, y0, x1 - x0, y1 - y0);
      }
    });
    const refined = (f.flags & FLAG_REFINEMENT) !== 0;
    stats.framesShown++;
    stats.lastSeq = f.seq;
    stats.codec = f.codec;
    stats.encoder = encoderLabel(f.codec, refined, viewer.encoder);
    stats.refined = refined;
    if (refined) stats.refinements++;
    stats.frameWidth = f.frameWidth;
    stats.frameHeight = f.frameHeight;
    stats.tiles = f.tiles.length;
    drawTimes.push(performance.now());
    frameBytes.push(f.bytes);
    if (frameBytes.length > BYTES_WINDOW) frameBytes.shift();
    if (f.rttUs > 0) latencies[latencyCount++ % LATENCIES_KEPT] = f.rttUs / 1000;
  }

  // ---- size ---------------------------------------------------------------------------------------------

  function setBackingStore(w, h) {
    w = Math.max(1, Math.round(w)); h = Math.max(1, Math.round(h));
    if (canvas.width === w && canvas.height === h) return;
    // resizing clears the canvas: keep showing the last picture, stretched, until a new frame comes
    let keep = null;
    if (stats.framesShown > 0) {
      scratch = scratch || doc.createElement('canvas');
      scratch.width = canvas.width; scratch.height = canvas.height;
      scratch.getContext('2d').drawImage(canvas, 0, 0);
      keep = scratch;
    }
    canvas.width = w;
    canvas.height = h;
    if (keep) {
      ctx.imageSmoothingEnabled = true;
      ctx.drawImage(keep, 0, 0, w, h);
    }
  }

  let deviceBoxKnown = false;
  const observer = new ResizeObserver((entries) => {
    const e = entries[entries.length - 1];
    const box = e.contentBoxSize && e.contentBoxSize[0];
    cssWidth = box ? box.inlineSize : e.contentRect.width;
    cssHeight = box ? box.blockSize : e.contentRect.height;
    // device-pixel-content-box gives exact device pixels; trust it only when it agrees with CSS size x DPR
    // (Chromium's DPR emulation, as used by test tools, leaves it at 1x)
    const dev = e.devicePixelContentBoxSize && e.devicePixelContentBoxSize[0];
    const dpr = window.devicePixelRatio || 1;
    deviceBoxKnown = !!dev && Math.abs(dev.inlineSize - cssWidth * dpr) <= 1 && Math.abs(dev.blockSize - cssHeight * dpr) <= 1;
    if (deviceBoxKnown) setBackingStore(dev.inlineSize, dev.blockSize);
    else setBackingStore(cssWidth * dpr, cssHeight * dpr);
    sendResize(false);
  });
  try { observer.observe(canvas, { box: 'device-pixel-content-box' }); } catch { observer.observe(canvas); }

  function watchPixelRatio() {
    const mq = window.matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
    mq.addEventListener('change', () => {
      watchPixelRatio();
      if (!deviceBoxKnown) setBackingStore(cssWidth * (window.devicePixelRatio || 1), cssHeight * (window.devicePixelRatio || 1));
      sendResize(false);
    }, { once: true });
  }
  watchPixelRatio();

  // ---- input events -------------------------------------------------------------------------------------

  const touches = new Map();      // pointerId -> {x, y, pressure} of touch pointers that are down
  const down = new Map();         // pointerId -> renderview button, of pointers that are down
  const heldKeys = new Map();     // KeyboardEvent.code -> key sent in its key_down

  function pointerEvent(type, ev, button = mapButton(ev.button)) {
    const t = {};
    let n = 0;
    for (const [id, p] of touches) { if (n === MAX_TOUCHES) break; t[id] = p; n++; }
    return { event_type: type, x: clampCoord(ev.offsetX), y: clampCoord(ev.offsetY), button,
             buttons: buttonsList(ev.buttons), modifiers: modifiersList(ev), ntouches: n, touches: t,
             time_stamp: nowSeconds() };
  }

  function trackTouch(ev) {
    if (ev.pointerType === 'touch') {
      touches.set(ev.pointerId, { x: clampCoord(ev.offsetX), y: clampCoord(ev.offsetY), pressure: ev.pressure });
    }
  }

  canvas.addEventListener('pointerdown', (ev) => {
    ev.preventDefault();                         // no text selection, drag or autoscroll; we focus ourselves
    canvas.focus({ preventScroll: true });
    try { canvas.setPointerCapture(ev.pointerId); } catch { /* pointer already gone */ }
    trackTouch(ev);
    const button = mapButton(ev.button);
    down.set(ev.pointerId, button);
    sendEvent(pointerEvent('pointer_down', ev, button));
  });

  function release(ev) {                         // pointerup, pointercancel, lostpointercapture: one pointer_up
    touches.delete(ev.pointerId);
    if (!down.has(ev.pointerId)) return;
    const button = ev.button >= 0 ? mapButton(ev.button) : down.get(ev.pointerId);
    down.delete(ev.pointerId);
    sendEvent(pointerEvent('pointer_up', ev, button));
  }
  canvas.addEventListener('pointerup', release);
  canvas.addEventListener('pointercancel', release);
  canvas.addEventListener('lostpointercapture', release);

  canvas.addEventListener('pointermove', (ev) => {
    trackTouch(ev);
    const button = mapButton(ev.button);
    if (button && down.has(ev.pointerId)) {
      // another button pressed or released while one is held (a "chord"): no pointerdown/up for it
      sendEvent(pointerEvent((ev.buttons & (1 << (button - 1))) ? 'pointer_down' : 'pointer_up', ev, button));
      return;
    }
    // as in the renderview spec: a move during a drag carries the button that started the drag
    queueMove(pointerEvent('pointer_move', ev, down.get(ev.pointerId) || 0));
  });
  canvas.addEventListener('pointerenter', (ev) => sendEvent(pointerEvent('pointer_enter', ev, 0)));
  canvas.addEventListener('pointerleave', (ev) => sendEvent(pointerEvent('pointer_leave', ev, 0)));

  canvas.addEventListener('dblclick', (ev) => {
    ev.preventDefault();
    sendEvent({ event_type: 'double_click', x: clampCoord(ev.offsetX), y: clampCoord(ev.offsetY),
                button: mapButton(ev.button), buttons: buttonsList(ev.buttons), modifiers: modifiersList(ev),
                time_stamp: nowSeconds() });
  });

  canvas.addEventListener('wheel', (ev) => {
    ev.preventDefault();                         // no page scroll or ctrl+wheel zoom
    const k = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? (canvas.clientHeight || window.innerHeight) : 1;
    queueWheel({ event_type: 'wheel', x: clampCoord(ev.offsetX), y: clampCoord(ev.offsetY),
                 dx: clampCoord(ev.deltaX * k), dy: clampCoord(ev.deltaY * k), buttons: buttonsList(ev.buttons),
                 modifiers: modifiersList(ev), time_stamp: nowSeconds() });
  }, { passive: false });

  canvas.addEventListener('contextmenu', (ev) => ev.preventDefault());

  canvas.addEventListener('keydown', (ev) => {
    if (!ev.key || ev.key === 'F2' || ev.isComposing || ev.key === 'Process') return;
    const modifiers = modifiersList(ev);
    const key = truncateUtf8(ev.key);
    heldKeys.set(ev.code, key);
    sendEvent({ event_type: 'key_down', key, modifiers, time_stamp: nowSeconds() });
    const altGr = ev.getModifierState && ev.getModifierState('AltGraph');
    if ([...ev.key].length === 1 && !ev.metaKey && (!ev.ctrlKey || altGr)) {
      sendEvent({ event_type: 'char', data: key, modifiers, time_stamp: nowSeconds() });
    }
    if (!isBrowserShortcut(ev)) ev.preventDefault();
  });

  canvas.addEventListener('keyup', (ev) => {
    if (!ev.key || ev.key === 'F2' || ev.isComposing || ev.key === 'Process') return;
    const key = truncateUtf8(ev.key);
    heldKeys.delete(ev.code);
    sendEvent({ event_type: 'key_up', key, modifiers: modifiersList(ev), time_stamp: nowSeconds() });
    if (!isBrowserShortcut(ev)) ev.preventDefault();
  });

  canvas.addEventListener('blur', () => {        // keys released elsewhere would otherwise stay "down"
    for (const key of heldKeys.values()) sendEvent({ event_type: 'key_up', key, modifiers: [], time_stamp: nowSeconds() });
    heldKeys.clear();
  });

  // ---- page lifecycle -----------------------------------------------------------------------------------

  function onUnload() {
    if (unloading) return;
    unloading = true;
    clearTimeout(retryTimer);
    sendEvent({ event_type: 'close', time_stamp: nowSeconds() });
  }
  window.addEventListener('beforeunload', onUnload);
  window.addEventListener('pagehide', () => {
    onUnload();
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000, 'page closed');   // also lets bfcache keep us
  });
  window.addEventListener('pageshow', (ev) => {
    if (ev.persisted) { unloading = false; connected = false; failures = 0; connect(); }
  });
  window.addEventListener('online', () => { if (retryTimer) connect(); });

  // ---- stats overlay ------------------------------------------------------------------------------------

  let statsTimer = null;

  function fps() {
    const cutoff = performance.now() - 1000;
    while (drawTimes.length && drawTimes[0] < cutoff) drawTimes.shift();
    return drawTimes.length;
  }

  function currentStats() {
    const kB = frameBytes.length ? frameBytes.reduce((a, b) => a + b, 0) / frameBytes.length / 1000 : 0;
    return { ...stats, fps: fps(), kBPerFrame: kB, tilesPerFrame: stats.tiles, connected, state,
             viewerId: viewer.id, active: viewer.active, title: viewer.title, url: url.replace(/token=[^&]*/, 'token=…'),
             canvasWidth: canvas.width, canvasHeight: canvas.height };
  }

  function renderStats() {
    const s = currentStats();
    const rtt = s.latencyMs === null ? '–' : s.latencyMs.toFixed(1);
    const codec = s.encoder || '–';
    statsEl.textContent =
      `${String(s.fps).padStart(3)} fps   rtt ${rtt} ms\n` +
      `${s.kBPerFrame.toFixed(1)} kB/frame   ${codec}\n` +
      `${s.frameWidth}×${s.frameHeight}   ${s.tilesPerFrame} tile${s.tilesPerFrame === 1 ? '' : 's'}\n` +
      `viewer ${s.viewerId ?? '–'} ${s.connected ? (s.active ? 'active' : 'passive') : 'offline'}`;
  }

  function showStats(on) {
    statsEl.hidden = !on;
    if (on) dismissHint();                       // the hint has done its job
    clearInterval(statsTimer);
    statsTimer = null;
    if (on) { renderStats(); statsTimer = setInterval(renderStats, 250); }
  }

  window.addEventListener('keydown', (ev) => {   // F2 toggles the overlay locally, whatever has focus
    if (ev.key !== 'F2') return;
    ev.preventDefault();
    if (!ev.repeat) showStats(statsEl.hidden);
  }, true);

  // ---- public object and start --------------------------------------------------------------------------

  const api = {
    socket: null,
    get connected() { return connected; },
    get state() { return state; },
    retry: retryNow,
    stats: currentStats,
    latencies() {
      const n = Math.min(latencyCount, LATENCIES_KEPT);
      const out = new Array(n);
      const first = latencyCount - n;
      for (let i = 0; i < n; i++) out[i] = latencies[(first + i) % LATENCIES_KEPT];
      return out;
    },
    showStats,
  };
  window.rcanvas = api;

  if (new URLSearchParams(location.search).get('stats') === '1') showStats(true);
  canvas.focus({ preventScroll: true });
  setState('connecting');
  connect();
}

if (typeof document !== 'undefined') start();
