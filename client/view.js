// SPDX-License-Identifier: MIT
// view.js: RCanvasView, one live rcanvas canvas in a page. Any page may hold several, of one server or of several:
//
//   import { RCanvasView } from '/client/view.js';
//   const v = new RCanvasView(document.getElementById('box'), { canvas: 'left', token: 'T' });
//   // or { url: 'http://127.0.0.1:8080/c/left?token=T' } (the URL the server prints); …later: v.destroy();
//
// Each view owns its elements (inside the container: a <div class="rcanvas-view"> holding the <canvas>, the key
// target, the badge, the stats overlay and the banner), its listeners, observers, timers and its WebSocket;
// destroy() removes all of them. Give the container a size: the view fills it, and its CSS size × devicePixelRatio
// is what the app renders (resize events).
//
// Data path: before the first connect the view asks which codecs the browser decodes (decoder.js videoSupport():
// WebCodecs video in a secure context, images always) and lists them in the upgrade URL (`codecs=`, protocol 2).
// The server's tiles arrive on the view's WebSocket -> each is decoded as it arrives (decoder.js: createImageBitmap
// for images; one WebCodecs VideoDecoder per video stream, packets in order) -> a frame is drawn whole once all its
// tiles are decoded (no tearing; a video frame as soon as the decoder outputs it), with one drawImage per tile into
// the 2D canvas, then acked (the server's flow control waits for acks). Input goes back as renderview events (input.js; the focus and wheel rules are written there). The view
// tells the server whether it can be seen (IntersectionObserver and the page's visibilityState): a view scrolled
// out of sight or in a hidden tab gets no frames. Connection states (connection.js) show as a badge, a banner and
// a dimmed picture; root[data-state] carries the state.
//
// window.rcanvas is the first live view of the page: the handle that tests and tools use.
import { Connection } from './connection.js';
import { DecoderSet, openVideoFrames, videoSupport } from './decoder.js';
import { EventQueue, Input } from './input.js';
import {
  ackMessage, drawsPixelated, parseLink, endpointsFrom, FLAG_REFINEMENT, keyframeMessage, nowSeconds, parseFrameHeader,
  tilePayload, visibilityMessage, withCodecs,
} from './protocol.js';
import { Badge, Stats, StatsOverlay } from './stats.js';

const RESIZE_MIN_MS = 33;              // at most one resize event this often (about 30 a second; sendResize)
const BAR_COLOR = '#111';              // the letterbox bars: the view's background (rcanvas.css)
// Frames that arrive together (a burst after a stalled hop: a busy notebook kernel, Wi-Fi aggregation) are drawn
// one per rendering update: a frame drawn over another before the page painted is never seen, so the motion would
// stutter at half the frames received. The wait is the next update's (about a display refresh), at most
// PACE_MAX_MS (a page whose updates stall), and none in a hidden page. A frame with a newer one already queued
// behind it does not wait: frames that come faster than the display are drawn at once, as before, so that no queue
// builds up behind the paints (the newest picture, the one a click waits for, would be late by a refresh per frame
// queued).
const PACE_MAX_MS = 34;

/**
 * Where a picture of aspect frameW : frameH goes in a cw × ch canvas: its aspect kept, centred (integer
 * pixels).
 * A fit within one pixel of the whole canvas on both axes (rounding of sizes × devicePixelRatio) fills it.
 */
export function letterbox(frameW, frameH, cw, ch) {
  if (!(frameW > 0 && frameH > 0 && cw > 0 && ch > 0)) return { x: 0, y: 0, w: cw, h: ch };
  const k = Math.min(cw / frameW, ch / frameH);
  const w = Math.round(frameW * k), h = Math.round(frameH * k);
  if (Math.abs(w - cw) <= 1 && Math.abs(h - ch) <= 1) return { x: 0, y: 0, w: cw, h: ch };
  return { x: Math.floor((cw - w) / 2), y: Math.floor((ch - h) / 2), w, h };
}

const STYLESHEET = new URL('./rcanvas.css', import.meta.url).href;
const live = [];                       // the views of this page, oldest first

/** The stylesheet every view needs, linked once per document (a page may have linked it itself). */
function ensureStylesheet(doc) {
  for (const l of doc.querySelectorAll('link[rel="stylesheet"]')) if (l.href === STYLESHEET) return;
  const link = doc.createElement('link');
  link.rel = 'stylesheet';
  link.href = STYLESHEET;
  doc.head.appendChild(link);
}

const BANNER_TITLES = {
  disconnected: (ever) => (ever ? 'Connection lost' : 'Cannot connect'),
  gone: () => 'Server gone — re-run the cell',
  'token-rejected': () => 'Token rejected',
  'token-missing': () => 'Token missing',
  'session-ended': () => 'Server restarted',
};

export class RCanvasView {
  /**
   * container: the element the view fills. options:
   *   url           page or WebSocket URL of the canvas (http://host:port/c/NAME?token=T); or else
   *   canvas, token canvas name ("" = the default canvas) and token on this page's server (token default: ?token=)
   *   autofocus     take the keyboard focus at start if nothing else has it (the served full-window page;
   *                 in a frame, only if the frame has the focus)
   *   stats         show the stats overlay from the start
   *   documentTitle follow the canvas title in document.title
   *   fullPage      fill the window (the served page)
   *   ids           prefix of element ids (the served page: "rcanvas" -> #rcanvas-canvas, #rcanvas-banner, …)
   *   canvasElement a <canvas> of the page to use (it moves into the view) instead of a new one
   *   session       the served page opened by its session cookie (no token in its URL): a 401 says the server
   *                 process that made the session is gone ("Server restarted"), not that a token is missing
   *   sessionKey    the served page in a frame of another site (no cookie there): its session's S, sent as
   *                 ?session= under its root (s/R/) instead of any token
   */
  constructor(container, options = {}) {
    if (!container || !container.ownerDocument) throw new TypeError('RCanvasView: container must be an element');
    this.options = options;
    this.doc = container.ownerDocument;
    this.win = this.doc.defaultView;
    const ep = endpointsFrom(options, this.win.location);
    this.canvasName = ep.canvasName;
    this.url = ep.socket;
    this.destroyed = false;
    this.cleanups = [];                // run by destroy(), last first

    this.buildDom(container);
    this.viewer = { id: null, active: false, title: this.doc.title, encoder: '', codec: '', codecString: '',
                    color: null, protocol: null };
    this.support = null;               // what the browser decodes (videoSupport()), known before the first connect
    this.stats_ = new Stats();
    this.decoders = new DecoderSet((codec) => ({
      codecString: codec === this.viewer.codec ? this.viewer.codecString : '',
      color: this.viewer.color,
      onKeyframeNeeded: () => this.conn.send(keyframeMessage()),
    }));
    this.presentProbe = this.makePresentProbe();
    this.pacer = this.makePacer();
    this.presentQueued = 0;              // frames handed to present() and not acked yet
    this.assembling = null;            // the frame whose tiles are arriving
    this.presentChain = Promise.resolve();
    this.presentDone = 0;                // performance.now() when the last frame was drawn (its ack's decode_ms)
    // Test hook: a decoder this many ms slower per megapixel of a frame (a saturated viewer, simulated: the wait is
    // part of the frame's decode time as a slow decoder's would be, and shrinks with the frame as decoding does)
    this.testDecodeMsPerMpx = 0;
    this.cssWidth = 0;
    this.cssHeight = 0;
    this.lastResizeKey = '';
    this.lastResizeAt = -Infinity;     // performance.now() of the last resize sent
    this.resizeTimer = null;           // the trailing resize of a storm (sendResize)
    this.scratch = null;               // keeps the picture across a backing-store resize
    this.lastDraw = null;              // how the last frame was drawn (stats().lastDraw)
    this.picture = null;               // its rectangle in the backing store (stats().picture)
    this.intersecting = true;          // until the IntersectionObserver says otherwise
    this.sentVisible = true;           // what the server believes (a new viewer is visible)

    this.conn = new Connection({
      socketUrl: ep.socket, probeUrl: ep.probe, session: !!options.session,
      handlers: {
        state: (s, info) => this.onState(s, info),
        countdown: (text) => { this.bannerText.textContent = text; },
        hello: (msg, info) => this.onHello(msg, info),
        message: (msg) => this.onMessage(msg),
        binary: (socket, buf) => this.onBinary(socket, buf),
        closed: () => { this.assembling = null; this.queue.clear(); },
        socket: () => {},
      },
    });
    this.queue = new EventQueue((ev) => this.conn.send(ev), () => this.conn.connected);
    this.shown = null;                 // where the last frame is in the view: {x, y, w, h}, fractions of it
    this.input = new Input({ canvas: this.canvas, keyTarget: this.keys, queue: this.queue,
                             toCanvas: (x, y) => this.toCanvas(x, y),
                             onActivity: () => this.overlay.dismissHint() });
    this.cleanups.push(() => this.input.destroy());
    this.overlay = new StatsOverlay({ pre: this.statsEl, badge: this.badge, root: this.root,
                                      snapshot: () => this.stats(), window: this.win });
    this.cleanups.push(() => this.overlay.destroy());
    this.listen(this.retryButton, 'click', () => this.retry());

    this.watchSize();
    this.watchVisibility();
    this.watchPage();

    live.push(this);
    if (!this.win.rcanvas) this.win.rcanvas = this;

    if (options.stats) this.overlay.show(true);
    if (options.autofocus) {
      // like HTML autofocus: not if something in the page has the focus, and in a frame (the served page in an
      // iframe) only if the frame has it: focus() in a frame would take it from the embedding page's text field
      const a = this.doc.activeElement;
      const free = !a || a === this.doc.body || a === this.doc.documentElement;
      if (free && (this.win.top === this.win || this.doc.hasFocus())) this.input.focus();
    }
    this.onState('connecting', {});
    // the codecs this browser decodes go into the upgrade URL: asked once per page, before the first connect
    videoSupport(this.win).then((support) => {
      if (this.destroyed) return;
      this.support = support;
      this.url = this.conn.socketUrl = withCodecs(ep.socket, support.codecs);
      if (!this.conn.ws && !this.conn.stopped) this.conn.connect();
    });
  }

  /** The views of this page that are not destroyed, oldest first. */
  static get instances() { return live.slice(); }

  // ---- public ---------------------------------------------------------------------------------------------

  get element() { return this.root; }
  get socket() { return this.conn.ws; }
  get connected() { return this.conn.connected; }
  get state() { return this.conn.state; }
  /** Whether the view can be seen (on screen and the page not hidden), as last told to the server. */
  get visible() { return this.intersecting && this.doc.visibilityState !== 'hidden'; }

  retry() { this.conn.retryNow(); }
  focus() { this.input.focus(); }
  showStats(on) { this.overlay.show(on); }
  latencies() { return this.stats_.latencies(); }

  stats() {
    const v = this.viewer;
    return this.stats_.snapshot({
      connected: this.conn.connected, state: this.conn.state, viewerId: v.id, active: v.active, viewOnly: !!v.viewOnly, title: v.title,
      url: this.url.replace(/token=[^&]*/, 'token=…'), canvas: this.canvasName, visible: this.visible,
      canvasWidth: this.canvas.width, canvasHeight: this.canvas.height,
      logicalWidth: v.width || 0, logicalHeight: v.height || 0,   // the canvas's logical size (the active viewer's)
      protocol: this.viewer.protocol, codecString: this.viewer.codecString || null,
      codecsOffered: this.support ? this.support.codecs : null, videoOff: this.support ? this.support.why : null,
      videoStrings: this.support ? this.support.strings : null,
      openVideoFrames: openVideoFrames(), ...this.decoders.videoCounters(), link: v.link || null,
      stalls: this.conn.stalls,            // connections given up as silently dead (no heartbeat)
      lastDraw: this.lastDraw || null,     // the last frame's size, `scaled` flag and whether it was drawn pixelated
      picture: this.picture || null,       // where the picture is in the backing store, letterboxed or not
    });
  }

  /** Closes the connection (after a `close` event to the app) and removes every element and listener. */
  destroy() {
    if (this.destroyed) return;
    this.queue.send({ event_type: 'close', time_stamp: nowSeconds() });
    this.destroyed = true;
    this.conn.destroy('view closed');
    for (const fn of this.cleanups.reverse()) {
      try { fn(); } catch (err) { console.error('rcanvas: cleanup failed', err); }
    }
    this.cleanups = [];
    this.decoders.close();
    this.root.remove();
    const i = live.indexOf(this);
    if (i >= 0) live.splice(i, 1);
    if (this.win.rcanvas === this) {
      if (live.length) this.win.rcanvas = live[0];
      else delete this.win.rcanvas;
    }
  }

  // ---- DOM ------------------------------------------------------------------------------------------------

  listen(target, type, fn, opts) {
    target.addEventListener(type, fn, opts);
    this.cleanups.push(() => target.removeEventListener(type, fn, opts));
  }

  buildDom(container) {
    const doc = this.doc;
    const el = (tag, cls, parent) => {
      const e = doc.createElement(tag);
      if (cls) e.className = cls;
      if (parent) parent.appendChild(e);
      return e;
    };
    ensureStylesheet(doc);
    const root = this.root = el('div', 'rcanvas-view');
    if (this.options.fullPage) root.classList.add('rcanvas-fullpage');
    root.dataset.canvas = this.canvasName;
    // a page may bring its own <canvas> (the served page has one in its markup): it moves into the view
    this.canvas = this.options.canvasElement || doc.createElement('canvas');
    this.canvas.classList.add('rcanvas-canvas');
    root.appendChild(this.canvas);
    this.canvas.setAttribute('role', 'img');
    // The keyboard focus: input methods need an editable element (input.js). Transparent, over the canvas.
    const keys = this.keys = el('textarea', 'rcanvas-keys', root);
    for (const [k, v] of [['autocomplete', 'off'], ['autocorrect', 'off'], ['autocapitalize', 'off'],
      ['spellcheck', 'false'], ['rows', '1'], ['aria-label', 'rcanvas canvas (keyboard input)'],
      ['inputmode', 'none']]) keys.setAttribute(k, v);   // no on-screen keyboard on every touch (as with a canvas)
    const badge = el('div', 'rcanvas-badge', root);
    badge.setAttribute('role', 'status');
    badge.setAttribute('aria-live', 'polite');
    this.badge = new Badge(badge);
    // a view-only viewer's input goes nowhere (the server drops it): said in a corner for as long as it lasts
    this.viewOnlyEl = el('div', 'rcanvas-viewonly', root);
    this.viewOnlyEl.textContent = 'view only';
    this.viewOnlyEl.title = 'This link shows the canvas; its mouse and keys do not reach the app (that needs the interactive link).';
    this.viewOnlyEl.hidden = true;
    this.statsEl = el('pre', 'rcanvas-stats', root);
    this.statsEl.setAttribute('aria-hidden', 'true');
    this.statsEl.hidden = true;
    const banner = this.banner = el('div', 'rcanvas-banner', root);
    banner.hidden = true;
    this.bannerTitle = el('p', 'rcanvas-banner-title', banner);
    this.bannerTitle.setAttribute('role', 'alert');
    this.bannerText = el('p', 'rcanvas-banner-text', banner);
    this.bannerDetail = el('p', 'rcanvas-banner-detail', banner);
    this.retryButton = el('button', 'rcanvas-banner-retry', banner);
    this.retryButton.type = 'button';
    const p = this.options.ids;
    if (p) {
      this.canvas.id = `${p}-canvas`;
      badge.id = `${p}-status`;
      this.statsEl.id = `${p}-stats`;
      banner.id = `${p}-banner`;
      keys.id = `${p}-keys`;
    }
    this.ctx = this.canvas.getContext('2d', { alpha: false, desynchronized: true });
    container.appendChild(root);
  }

  // The CSS cursor over the canvas, as the app asked (rcanvas_canvas_set_cursor); others are ignored.
  setCursor(cursor) {
    if (typeof cursor === 'string' && /^[a-z-]{1,31}$/.test(cursor)) this.canvas.style.cursor = cursor;
  }

  setTitle(title) {
    if (this.options.documentTitle) this.doc.title = title;
    this.canvas.setAttribute('aria-label', title);
  }

  /** Enters a connection state: root[data-state] (the CSS dims the picture), the banner, the badge. */
  onState(next, { text = '', detail = '', everConnected = false, title = '' }) {
    this.root.dataset.state = next;
    this.root.dispatchEvent(new CustomEvent('rcanvas-state', { detail: { state: next, view: this }, bubbles: true }));
    if (next === 'connecting' || next === 'connected') {
      this.banner.hidden = true;
      if (next === 'connecting') this.badge.set('connecting…');
      else { this.badge.set(''); this.overlay.showHint(); }
      return;
    }
    this.badge.set('');
    this.bannerTitle.textContent = title || BANNER_TITLES[next](everConnected);
    if (next === 'token-rejected') {
      text = 'Open the URL the server printed.';
      detail = 'The server refuses this page\'s token; it may have restarted with a new one.';
    } else if (next === 'token-missing') {
      text = 'Open the URL the server printed.';
      detail = 'This page\'s address has no ?token=….';
    } else if (next === 'session-ended') {
      // the served page's session (its secret path and cookie) was good for the server process that made it only
      text = 'Open the link with its token again.';
      detail = 'This page was opened by a session of the server process that served it, which has ended; a page ' +
               'does not reconnect by itself to a new process. Open the URL the server printed (with ?token=).';
    } else if (next === 'gone') {
      // many attempts in a row failed: the program (a notebook kernel) stopped or closed this canvas
      detail = `${detail ? detail + '. ' : ''}Run the notebook cell (or the program) that made this canvas again;` +
               ' this page keeps trying, less often.';
    }
    this.bannerText.textContent = text;
    this.bannerDetail.textContent = detail;
    this.bannerDetail.hidden = !detail;
    this.retryButton.textContent = next === 'disconnected' || next === 'gone' ? 'Retry now' : 'Retry';
    this.banner.hidden = false;
  }

  // ---- messages -------------------------------------------------------------------------------------------

  onHello(msg, { reconnected }) {
    if (reconnected) this.stats_.counters.reconnects++;
    this.viewer = {
      id: msg.viewer_id ?? null, active: !!msg.active, viewOnly: msg.view_only === true,
      title: String(msg.title ?? this.doc.title),
      width: msg.width, height: msg.height, pixelRatio: msg.pixel_ratio, canvas: msg.canvas,
      codecs: msg.codecs, codec: typeof msg.codec === 'string' ? msg.codec : '', maxInFlight: msg.max_in_flight,
      encoder: typeof msg.encoder === 'string' ? msg.encoder : '',
      link: parseLink(msg.link),
      protocol: msg.protocol ?? null,
      codecString: typeof msg.codec_string === 'string' ? msg.codec_string : '',   // protocol 2, video codecs
      color: msg.color && typeof msg.color === 'object' ? msg.color : null,
    };
    this.viewOnlyEl.hidden = !this.viewer.viewOnly;
    this.root.classList.toggle('rcanvas-view-only', this.viewer.viewOnly);
    this.decoders.reset();                      // a new stream
    this.setTitle(this.viewer.title);
    this.sendResize(true);
    this.sentVisible = true;                    // a new viewer starts visible on the server
    this.sendVisibility();
  }

  onMessage(msg) {
    switch (msg.type) {
      case 'title':
        this.viewer.title = String(msg.title ?? '');
        this.setTitle(this.viewer.title);
        break;
      case 'cursor':                             // the app's cursor (a CSS keyword, [a-z-])
        this.setCursor(msg.cursor);
        break;
      case 'encoder':                            // the codec changed, or a GPU encoder came or went
        this.viewer.encoder = typeof msg.encoder === 'string' ? msg.encoder : '';
        if (typeof msg.codec === 'string') {     // a new video stream comes with its own parameters
          this.viewer.codec = msg.codec;
          this.viewer.codecString = typeof msg.codec_string === 'string' ? msg.codec_string : '';
          if (msg.color && typeof msg.color === 'object') this.viewer.color = msg.color;
          this.decoders.reset();
        }
        break;
      case 'size':                               // the canvas's logical size changed (the active viewer's)
        if (msg.width > 0 && msg.height > 0) {
          this.viewer.width = msg.width;
          this.viewer.height = msg.height;
          this.viewer.pixelRatio = msg.pixel_ratio;
        }
        break;
      case 'link':                               // the server's estimate of our link, and what it encodes for it
        this.viewer.link = parseLink(msg);
        break;
      case 'role':
        this.viewer.active = !!msg.active;
        if (msg.link) this.viewer.link = parseLink(msg.link);
        if (this.viewer.active) this.sendResize(true);   // our size now drives the canvas
        break;
      default:
        break;                                   // unknown types: forward compatibility
    }
  }

  // ---- frames ---------------------------------------------------------------------------------------------

  onBinary(socket, buf) {
    const arrived = performance.now();
    const stats = this.stats_.counters;
    let h;
    try { h = parseFrameHeader(buf); } catch (err) {
      stats.droppedMessages++;
      console.warn('rcanvas: dropping binary message:', err.message);
      return;
    }
    this.stats_.received(buf.byteLength, arrived);
    stats.latencyMs = h.rtt_us > 0 ? h.rtt_us / 1000 : null;
    if (this.assembling && (h.seq !== this.assembling.seq || h.tile_index === 0)) {
      // a frame without its last tile (one was dropped): ack it undrawn so flow control does not stall
      console.warn(`rcanvas: frame ${this.assembling.seq} ended without its last tile`);
      this.assembling.incomplete = true;
      this.present(this.assembling);
      this.assembling = null;
    }
    if (!this.assembling) {
      this.assembling = { socket, seq: h.seq, flags: h.flags, codec: h.codec_name, frameWidth: h.frame_width,
                          frameHeight: h.frame_height, scaled: h.scaled, tileCount: h.tile_count, rttUs: 0, bytes: 0,
                          tiles: [], arrived };
    }
    const f = this.assembling;
    let drawable;
    try {
      drawable = this.decoders.get(h.codec_name).decode({
        codec: h.codec_name, mime: h.mime, seq: h.seq, index: h.tile_index, refinement: (h.flags & FLAG_REFINEMENT) !== 0,
        keyframe: h.keyframe, x: h.x, y: h.y, w: h.w, h: h.h, data: tilePayload(buf, h),
      });
    } catch (err) {
      drawable = Promise.reject(err);
    }
    drawable = drawable.catch((err) => {
      stats.decodeErrors++;
      console.error(`rcanvas: cannot decode tile ${h.tile_index} of frame ${h.seq} (${h.codec_name}):`, err);
      return null;
    });
    f.tiles.push({ drawable, x: h.x, y: h.y, w: h.w, h: h.h });
    f.bytes += buf.byteLength;
    f.rttUs = h.rtt_us;
    f.lastArrived = arrived;
    if (h.last) {
      if (f.tiles.length !== f.tileCount) console.warn(`rcanvas: frame ${f.seq}: ${f.tiles.length}/${f.tileCount} tiles`);
      this.assembling = null;
      this.present(f);
    }
  }

  // Frames are drawn and acked strictly in arrival order; their tiles decode in parallel meanwhile. A frame none of
  // whose tiles gave a picture (decode errors, video packets dropped until a keyframe) is acked undrawn.
  present(f) {
    this.presentQueued++;
    this.presentChain = this.presentChain.then(async () => {
      const drawables = await Promise.all(f.tiles.map((t) => t.drawable));
      if (this.testDecodeMsPerMpx > 0 && !f.incomplete) {
        await new Promise((resolve) => this.win.setTimeout(resolve, this.testDecodeMsPerMpx * f.frameWidth * f.frameHeight / 1e6));
      }
      const draws = !f.incomplete && drawables.some((d) => d);
      let paced = 0;                           // ms waited for the page to paint the frame before (not decoding)
      // (a hidden page paints nothing, and its timers may wait a second: no pacing there)
      const painting = draws && this.presentQueued === 1 && this.doc.visibilityState !== 'hidden' ? this.pacer.wait() : null;
      if (painting) {
        const t = performance.now();
        await painting;
        paced = performance.now() - t;
      }
      try {
        if (draws && !this.destroyed) {
          this.drawFrame(f, drawables);
          this.pacer.drawn();
        }
      } catch (err) {
        console.error('rcanvas: drawing frame', f.seq, 'failed:', err);
      } finally {
        for (const d of drawables) if (d) d.close();
        // decode_ms: the frames decode and draw one after the other, so a frame's own time starts when its first
        // byte came or when the frame before it was drawn, whichever is later; when the decoder keeps up it is the
        // frame's decode and draw, when it falls behind the spacing of drawn frames (its throughput)
        const done = performance.now();
        const cost = done - Math.max(f.arrived, this.presentDone) - paced;
        this.presentDone = done;
        this.conn.send(ackMessage(f.seq, done - f.lastArrived, cost), f.socket); // skipped if it closed
      }
    }).catch((err) => console.error('rcanvas: presenting frame', f.seq, 'failed:', err))
      .then(() => { this.presentQueued--; });
  }

  drawFrame(f, drawables) {
    const drawStart = performance.now();
    const ctx = this.ctx;
    const cw = this.canvas.width, ch = this.canvas.height;
    // The picture is the canvas's logical area (hello / {"type":"size"}: the active viewer's size); a view
    // of another aspect (a passive viewer of another size) shows it letterboxed: its aspect kept, centred, bars of
    // the background colour. The active viewer's view has that size, so its frames fill it (stretched as the app's
    // bitmap is, whatever its size: rendercanvas' contract). Before a size is known, the frame's aspect counts.
    const [aw, ah] = this.pictureSize(f.frameWidth, f.frameHeight);
    const r = letterbox(aw, ah, cw, ch);
    this.shown = { x: r.x / cw, y: r.y / ch, w: r.w / cw, h: r.h / ch };   // fractions of the view (input mapping)
    if (r.w !== cw || r.h !== ch) {
      ctx.fillStyle = BAR_COLOR;
      if (r.y > 0) { ctx.fillRect(0, 0, cw, r.y); ctx.fillRect(0, r.y + r.h, cw, ch - r.y - r.h); }
      if (r.x > 0) { ctx.fillRect(0, 0, r.x, ch); ctx.fillRect(r.x + r.w, 0, cw - r.x - r.w, ch); }
    }
    const sx = r.w / f.frameWidth, sy = r.h / f.frameHeight;
    // enlarged nearest-neighbour (the app's own small bitmap: pixel art stays sharp, as rendercanvas draws it),
    // shrunk or server-shrunk (rate adaptation) smoothed: protocol.js drawsPixelated
    const pixelated = drawsPixelated(f.frameWidth, f.frameHeight, r.w, r.h, f.scaled);
    this.lastDraw = { frameWidth: f.frameWidth, frameHeight: f.frameHeight, scaled: !!f.scaled, pixelated };
    this.picture = { x: r.x, y: r.y, width: r.w, height: r.h, letterboxed: r.w !== cw || r.h !== ch };
    f.tiles.forEach((t, i) => {
      const d = drawables[i];
      if (!d) return;
      // A video frame may be coded larger than the tile (H.264 codes even sizes, padding the last column/row):
      // draw only the tile's w × h from its top-left.
      const sw = d.width > t.w ? t.w : d.width, sh = d.height > t.h ? t.h : d.height;
      if (sx === 1 && sy === 1 && r.x === 0 && r.y === 0 && sw === t.w && sh === t.h) {
        ctx.imageSmoothingEnabled = false;
        if (d.width === t.w && d.height === t.h) ctx.drawImage(d.image, t.x, t.y);
        else ctx.drawImage(d.image, 0, 0, sw, sh, t.x, t.y, sw, sh);
      } else {                                   // stretch; rounded edges keep stripes seamless
        const x0 = r.x + Math.round(t.x * sx), x1 = r.x + Math.round((t.x + t.w) * sx);
        const y0 = r.y + Math.round(t.y * sy), y1 = r.y + Math.round((t.y + t.h) * sy);
        ctx.imageSmoothingEnabled = !pixelated;
        ctx.drawImage(d.image, 0, 0, sw, sh, x0, y0, x1 - x0, y1 - y0);
      }
    });
    const drawn = performance.now();
    let decoded = f.arrived;
    for (const d of drawables) if (d && d.decodedAt > decoded) decoded = d.decodedAt;
    this.stats_.stages.frame(f.arrived, decoded, drawStart, drawn);
    this.presentProbe(drawn);
    this.stats_.frameDrawn(f, this.viewer.encoder);
  }

  /** The pacer of draws: drawn() after a frame is drawn; wait() is then a promise that resolves once the page has
   *  gone through a rendering update since (requestAnimationFrame, then a task queued from it runs after the
   *  update) or PACE_MAX_MS have passed, and null when nothing is pending. */
  makePacer() {
    const win = this.win;
    const channel = new win.MessageChannel();
    let pending = null, release = null, timer = 0, gen = 0;
    const done = (g) => {
      if (g !== gen || !release) return;           // a late update of a round already released by its timer
      win.clearTimeout(timer);
      const r = release;
      pending = release = null;
      r();
    };
    channel.port1.onmessage = (ev) => done(ev.data);
    this.cleanups.push(() => { channel.port1.close(); done(gen); });
    return {
      wait: () => pending,
      drawn: () => {
        if (pending || this.destroyed) return;
        const g = ++gen;
        pending = new Promise((r) => { release = r; });
        win.requestAnimationFrame(() => channel.port2.postMessage(g));
        timer = win.setTimeout(() => done(g), PACE_MAX_MS);
      },
    };
  }

  /** presentProbe(drawnAt): when the frame just drawn has gone through the next rendering update
   *  (requestAnimationFrame, then a task queued from it runs after the update), the time since drawnAt is a
   *  present time; one measurement at a time, nothing allocated per frame. */
  makePresentProbe() {
    const win = this.win;
    const channel = new win.MessageChannel();
    let busy = false;
    let drawnAt = 0;
    channel.port1.onmessage = () => {
      busy = false;
      this.stats_.stages.present.push(performance.now() - drawnAt);
    };
    const afterFrame = () => channel.port2.postMessage(0);
    this.cleanups.push(() => channel.port1.close());
    return (t) => {
      if (busy || this.destroyed) return;
      busy = true;
      drawnAt = t;
      win.requestAnimationFrame(afterFrame);
    };
  }

  /** The size whose aspect the picture keeps: the canvas's logical size, or else the frame's. */
  pictureSize(frameW, frameH) {
    const lw = this.viewer.width, lh = this.viewer.height;
    return lw > 0 && lh > 0 ? [lw, lh] : [frameW, frameH];
  }

  /**
   * A point of the view (CSS px from its top-left) in the canvas's logical px, which is what the app
   * draws in. The identity while the view has the canvas's size and its picture fills it (the active viewer, and a
   * passive one of the same size); otherwise scaled by canvas size / shown size from the letterboxed picture's
   * corner. A point in a bar is clamped to the picture's edge (not dropped: a drag that leaves the picture goes on
   * along its edge, and its pointer_up always arrives).
   */
  toCanvas(x, y) {
    const lw = this.viewer.width, lh = this.viewer.height;
    const vw = this.cssWidth, vh = this.cssHeight;
    const s = this.shown;
    if (!(lw > 0 && lh > 0 && vw > 0 && vh > 0)) return [x, y];
    const full = !s || (s.x === 0 && s.y === 0 && s.w === 1 && s.h === 1);
    if (full && Math.abs(vw - lw) < 0.5 && Math.abs(vh - lh) < 0.5) return [x, y];
    const px = s ? s.x * vw : 0, py = s ? s.y * vh : 0, pw = s ? s.w * vw : vw, ph = s ? s.h * vh : vh;
    const cx = Math.min(lw, Math.max(0, (x - px) * lw / pw));
    const cy = Math.min(lh, Math.max(0, (y - py) * lh / ph));
    return [Math.round(cx * 100) / 100, Math.round(cy * 100) / 100];
  }

  // ---- size -----------------------------------------------------------------------------------------------

  /**
   * Tells the server the view's size (a resize event). A window-drag storm is coalesced to the newest
   * size, at most one every RESIZE_MIN_MS; the last size always goes out (trailing edge). force: at once (after
   * hello, on becoming active), even if unchanged.
   */
  sendResize(force) {
    if (!force) {
      const wait = this.lastResizeAt + RESIZE_MIN_MS - performance.now();
      if (wait > 0) {
        if (!this.resizeTimer) this.resizeTimer = setTimeout(() => { this.resizeTimer = null; this.sendResize(false); }, wait);
        return;
      }
    }
    clearTimeout(this.resizeTimer);
    this.resizeTimer = null;
    if (!this.conn.connected || !(this.cssWidth > 0) || !(this.cssHeight > 0)) return;
    const dpr = this.win.devicePixelRatio;
    const pr = Math.min(16, dpr > 0 ? dpr : 1);
    const width = Math.min(32768, this.cssWidth), height = Math.min(32768, this.cssHeight);
    const key = `${width}x${height}@${pr}`;
    if (!force && key === this.lastResizeKey) return;
    this.lastResizeKey = key;
    this.lastResizeAt = performance.now();
    this.queue.send({ event_type: 'resize', width, height, pixel_ratio: pr, time_stamp: nowSeconds() });
  }

  setBackingStore(w, h) {
    const canvas = this.canvas;
    w = Math.max(1, Math.round(w)); h = Math.max(1, Math.round(h));
    if (canvas.width === w && canvas.height === h) return;
    // resizing clears the canvas: keep showing the last picture, stretched, until a new frame comes
    let keep = null;
    if (this.stats_.counters.framesShown > 0) {
      const s = this.scratch = this.scratch || this.doc.createElement('canvas');
      s.width = canvas.width; s.height = canvas.height;
      s.getContext('2d').drawImage(canvas, 0, 0);
      keep = s;
    }
    canvas.width = w;
    canvas.height = h;
    if (keep) {
      // the last frame's picture, letterboxed again for the new size, until the next frame comes
      const d = this.lastDraw, p = this.picture;
      const r = d && p ? letterbox(...this.pictureSize(d.frameWidth, d.frameHeight), w, h) : { x: 0, y: 0, w, h };
      this.ctx.fillStyle = BAR_COLOR;
      this.ctx.fillRect(0, 0, w, h);
      this.ctx.imageSmoothingEnabled = true;
      if (d && p) this.ctx.drawImage(keep, p.x, p.y, p.width, p.height, r.x, r.y, r.w, r.h);
      else this.ctx.drawImage(keep, 0, 0, w, h);
      if (d && p) {
        this.picture = { x: r.x, y: r.y, width: r.w, height: r.h, letterboxed: r.w !== w || r.h !== h };
        this.shown = { x: r.x / w, y: r.y / h, w: r.w / w, h: r.h / h };
      }
    }
  }

  watchSize() {
    const win = this.win;
    let deviceBoxKnown = false;
    const observer = new win.ResizeObserver((entries) => {
      const e = entries[entries.length - 1];
      const box = e.contentBoxSize && e.contentBoxSize[0];
      this.cssWidth = box ? box.inlineSize : e.contentRect.width;
      this.cssHeight = box ? box.blockSize : e.contentRect.height;
      // device-pixel-content-box gives exact device pixels; trust it only when it agrees with CSS size x DPR
      // (Chromium's DPR emulation, as used by test tools, leaves it at 1x)
      const dev = e.devicePixelContentBoxSize && e.devicePixelContentBoxSize[0];
      const dpr = win.devicePixelRatio || 1;
      deviceBoxKnown = !!dev && Math.abs(dev.inlineSize - this.cssWidth * dpr) <= 1 &&
        Math.abs(dev.blockSize - this.cssHeight * dpr) <= 1;
      if (deviceBoxKnown) this.setBackingStore(dev.inlineSize, dev.blockSize);
      else this.setBackingStore(this.cssWidth * dpr, this.cssHeight * dpr);
      this.sendResize(false);
    });
    try { observer.observe(this.canvas, { box: 'device-pixel-content-box' }); } catch { observer.observe(this.canvas); }
    this.cleanups.push(() => observer.disconnect());
    this.cleanups.push(() => clearTimeout(this.resizeTimer));

    // devicePixelRatio changes (browser zoom, another screen): a media query of the current ratio stops matching
    let mq = null;
    const onRatio = () => {
      watchRatio();
      const dpr = win.devicePixelRatio || 1;
      if (!deviceBoxKnown) this.setBackingStore(this.cssWidth * dpr, this.cssHeight * dpr);
      this.sendResize(false);
    };
    const watchRatio = () => {
      mq = win.matchMedia(`(resolution: ${win.devicePixelRatio || 1}dppx)`);
      mq.addEventListener('change', onRatio, { once: true });
    };
    watchRatio();
    this.cleanups.push(() => mq.removeEventListener('change', onRatio));
  }

  // ---- visibility -----------------------------------------------------------------------------------------

  watchVisibility() {
    const io = new this.win.IntersectionObserver((entries) => {
      this.intersecting = entries[entries.length - 1].isIntersecting;
      this.sendVisibility();
    });
    io.observe(this.root);
    this.cleanups.push(() => io.disconnect());
    this.listen(this.doc, 'visibilitychange', () => this.sendVisibility());
  }

  /** Tells the server when the view's visibility changed ({"type":"visibility"}: docs/protocol.md). */
  sendVisibility() {
    const v = this.visible;
    if (!this.conn.connected || v === this.sentVisible) return;
    this.queue.flush();                          // events before it keep their order
    if (this.conn.send(visibilityMessage(v))) this.sentVisible = v;
  }

  // ---- page lifecycle -------------------------------------------------------------------------------------

  watchPage() {
    const win = this.win;
    let unloading = false;
    const onUnload = () => {
      if (unloading) return;
      unloading = true;
      this.conn.stopRetrying();
      this.queue.send({ event_type: 'close', time_stamp: nowSeconds() });
    };
    this.listen(win, 'beforeunload', onUnload);
    this.listen(win, 'pagehide', () => {
      onUnload();
      this.conn.stop(1000, 'page closed');        // also lets bfcache keep us
    });
    this.listen(win, 'pageshow', (ev) => {
      if (ev.persisted) { unloading = false; this.conn.resume(); }
    });
    this.listen(win, 'online', () => this.conn.online());
  }
}
