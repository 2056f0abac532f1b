// SPDX-License-Identifier: MIT
// sfu.js: the script of client/sfu.html, a view-only viewer of an rcanvas canvas relayed by Janus.
//
// Data path: rcanvas' RTP output (H.264, RFC 6184) → Janus's streaming plugin (an RTP mountpoint) → WebRTC (DTLS-SRTP)
// → this page's RTCPeerConnection → the browser's own decoder → a <video>. Signalling is Janus's, through Debian's
// janus.js (libjs-janus-gateway, MIT; the page loads it and adapter.js as classic scripts, window.Janus): a session,
// a handle on janus.plugin.streaming, {request: "watch", id: MOUNTPOINT} → Janus's offer (sendonly video) → our
// answer (recvonly) → {request: "start"}. No input goes back: an SFU audience is view-only by design.
//
// The stats overlay is the normal client's (stats.js StatsOverlay and formatStats: F2 or ?stats=1), fed from the
// <video>'s presented frames (requestVideoFrameCallback) and the peer connection's getStats() (inbound-rtp video,
// the selected candidate pair's round trip). window.rcanvas is the handle that tests and tools use, as on the
// served page: connected, state, stats(), showStats(on), video.
//
// URL parameters: janus  the Janus API URL (default: /janus on this page's origin, the web front's proxy)
//                 mountpoint  the streaming plugin's mountpoint id (default 1)
//                 stats=1  open the overlay;  turn, turnuser, turnpass  a TURN server for viewers behind NAT
//                 (docs/scaling.md); without it no ICE server at all (janus.js's default is a public STUN server)
import { Badge, formatStats, StatsOverlay } from './stats.js';

const STATS_MS = 250;                  // getStats() this often (the overlay renders at the same rate)
const RETRY_MS = 2000;                 // a lost Janus session is tried again after this
const PRESENT_KEPT = 240;              // presented-frame times remembered for fps

/** The page's options from its URL: {janus, mountpoint, stats, iceServers}; throws a TypeError naming a bad one. */
export function sfuOptions(href) {
  const u = new URL(href);
  const q = u.searchParams;
  const janus = new URL(q.get('janus') || '/janus', u).href;
  if (!/^(https?|wss?):$/.test(new URL(janus).protocol)) throw new TypeError(`janus=${q.get('janus')}: not an http(s) or ws(s) URL`);
  const mp = q.get('mountpoint') ?? '1';
  if (!/^[0-9]{1,15}$/.test(mp)) throw new TypeError(`mountpoint=${mp}: not a mountpoint id (a number)`);
  const iceServers = [];
  const turn = q.get('turn');
  if (turn) {
    if (!/^turns?:/.test(turn)) throw new TypeError(`turn=${turn}: not a turn: or turns: URL`);
    iceServers.push({ urls: turn, username: q.get('turnuser') || undefined, credential: q.get('turnpass') || undefined });
  }
  return { janus, mountpoint: Number(mp), stats: q.get('stats') === '1', iceServers };
}

export class SfuView {
  /** container: the element the view fills; opts: sfuOptions(); Janus: janus.js's constructor (window.Janus). */
  constructor(container, opts, Janus) {
    this.opts = opts;
    this.Janus = Janus;
    this.doc = container.ownerDocument;
    this.win = this.doc.defaultView;
    this.state = 'connecting';
    this.session = null;
    this.handle = null;
    this.retryTimer = null;
    this.presented = [];               // performance.now() of the last PRESENT_KEPT frames presented
    this.framesShown = 0;
    this.iceConnectedAt = null;        // performance.now() of the first ICE connected (of this connection)
    this.firstFrameAt = null;          //   and of the first frame presented after it
    this.connects = 0;
    this.rtc = {};                     // the last getStats() figures
    this.prevRtc = null;
    this.errors = [];
    this.buildDom(container);
    this.overlay = new StatsOverlay({ pre: this.statsEl, badge: this.badge, root: this.root,
                                      snapshot: () => this.stats(), window: this.win });
    if (opts.stats) this.overlay.show(true);
    this.statsTimer = setInterval(() => this.pollStats(), STATS_MS);
    this.watchFrames();
    this.setState('connecting');
    this.start();
  }

  buildDom(container) {
    const el = (tag, cls, parent) => {
      const e = this.doc.createElement(tag);
      if (cls) e.className = cls;
      parent.appendChild(e);
      return e;
    };
    this.root = el('div', 'rcanvas-view rcanvas-fullpage', container);
    const v = this.video = el('video', 'rcanvas-canvas', this.root);
    v.muted = true;                    // no audio here, and muted video may autoplay
    v.autoplay = true;
    v.playsInline = true;
    v.disablePictureInPicture = true;
    v.style.objectFit = 'contain';     // letterboxed, its aspect kept (CSSOM: allowed by the CSP, unlike style="")
    v.setAttribute('aria-label', 'rcanvas canvas (view only, through the SFU)');
    this.badge = new Badge(el('div', 'rcanvas-badge', this.root));
    const vo = el('div', 'rcanvas-viewonly', this.root);
    vo.textContent = 'view only';
    vo.title = 'Relayed by Janus (WebRTC): this page shows the canvas; its mouse and keys do not reach the app.';
    vo.style.right = 'auto';           // top left: the stats overlay has the top right corner
    vo.style.left = '8px';
    this.statsEl = el('pre', 'rcanvas-stats', this.root);
    this.statsEl.setAttribute('aria-hidden', 'true');
    this.statsEl.hidden = true;
  }

  setState(s, detail = '') {
    this.state = s;
    this.root.dataset.state = s;
    this.doc.body.dataset.state = s;
    if (s === 'connected') this.badge.set('');
    else this.badge.set(s === 'connecting' ? 'connecting…' : `${s}${detail ? `: ${detail}` : ''}`);
  }

  get connected() { return this.state === 'connected'; }

  // ---- Janus signalling (janus.js) ---------------------------------------------------------------------------

  start() {
    const J = this.Janus;
    this.session = new J({
      server: this.opts.janus,
      iceServers: this.opts.iceServers,      // [] unless ?turn=: no STUN server (janus.js defaults to a public one)
      success: () => this.attach(),
      error: (err) => this.lost(`Janus: ${err}`),
      destroyed: () => this.lost('Janus session ended'),
    });
  }

  attach() {
    this.session.attach({
      plugin: 'janus.plugin.streaming',
      opaqueId: `rcanvas-sfu-${Math.random().toString(36).slice(2, 10)}`,
      success: (h) => {
        this.handle = h;
        h.send({ message: { request: 'watch', id: this.opts.mountpoint } });
      },
      error: (err) => this.lost(`attach: ${err}`),
      onmessage: (msg, jsep) => this.onMessage(msg, jsep),
      onremotetrack: (track, mid, on) => {
        if (track.kind !== 'video') return;
        if (on) {
          this.video.srcObject = new MediaStream([track]);
          this.video.play().catch((e) => { if (e.name !== 'AbortError') this.errors.push(`play: ${e.message}`); });
        } else if (this.video.srcObject && this.video.srcObject.getTracks().includes(track)) {
          this.video.srcObject = null;
        }
      },
      iceState: (s) => {
        if ((s === 'connected' || s === 'completed') && this.iceConnectedAt === null) this.iceConnectedAt = performance.now();
        if (s === 'failed' || s === 'disconnected') this.setState(s === 'failed' ? 'disconnected' : 'connecting', `ICE ${s}`);
      },
      webrtcState: (up, reason) => {
        if (up) { this.connects++; this.setState('connected'); this.overlay.showHint(); }
        else this.lost(`WebRTC down${reason ? ` (${reason})` : ''}`);
      },
      oncleanup: () => { this.video.srcObject = null; },
    });
  }

  onMessage(msg, jsep) {
    const r = msg && msg.result;
    if (msg && msg.error) {            // e.g. "No such mountpoint/stream 7" (error_code 455)
      this.errors.push(msg.error);
      this.setState('disconnected', msg.error);
      return;
    }
    if (r && r.status === 'stopped') this.lost('stream stopped');
    if (!jsep) return;
    this.handle.createAnswer({
      jsep,
      tracks: [],                      // receive what Janus offers (sendonly video), send nothing
      success: (answer) => this.handle.send({ message: { request: 'start' }, jsep: answer }),
      error: (err) => this.lost(`WebRTC answer: ${err && err.message ? err.message : err}`),
    });
  }

  /** The connection is gone: the state says why, and a new session is tried after RETRY_MS. */
  lost(why) {
    if (this.destroyed || this.retryTimer) return;
    this.errors.push(why);
    this.setState('disconnected', why);
    this.iceConnectedAt = null;
    this.firstFrameAt = null;
    const old = this.session;
    this.session = null;
    this.handle = null;
    try { if (old) old.destroy({ cleanupHandles: true, notifyDestroyed: false }); } catch { /* already gone */ }
    this.retryTimer = setTimeout(() => { this.retryTimer = null; this.setState('connecting'); this.start(); }, RETRY_MS);
  }

  // ---- figures ---------------------------------------------------------------------------------------------

  watchFrames() {
    const v = this.video;
    if (typeof v.requestVideoFrameCallback !== 'function') return;   // then framesShown stays from getStats()
    const onFrame = (now) => {
      const t = performance.now();
      this.framesShown++;
      this.presented.push(t);
      if (this.presented.length > PRESENT_KEPT) this.presented.shift();
      if (this.firstFrameAt === null && this.iceConnectedAt !== null) this.firstFrameAt = t;
      if (!this.destroyed) v.requestVideoFrameCallback(onFrame);
    };
    v.requestVideoFrameCallback(onFrame);
  }

  fps() {
    const cutoff = performance.now() - 1000;
    let n = 0;
    for (let i = this.presented.length - 1; i >= 0 && this.presented[i] >= cutoff; i--) n++;
    return n;
  }

  async pollStats() {
    const pc = this.handle && this.handle.webrtcStuff && this.handle.webrtcStuff.pc;
    if (!pc) return;
    let report;
    try { report = await pc.getStats(); } catch { return; }
    let inbound = null, pair = null;
    report.forEach((s) => {
      if (s.type === 'inbound-rtp' && s.kind === 'video') inbound = s;
      if (s.type === 'candidate-pair' && (s.nominated || s.selected) && s.state === 'succeeded') pair = s;
    });
    if (!inbound) return;
    const now = performance.now();
    const prev = this.prevRtc;
    const d = (k) => (prev ? (inbound[k] || 0) - (prev.s[k] || 0) : 0);
    const dt = prev ? (now - prev.t) / 1000 : 0;
    const frames = d('framesDecoded');
    this.rtc = {
      bytesReceived: inbound.bytesReceived || 0,
      mbps: dt > 0 ? (d('bytesReceived') * 8) / 1e6 / dt : 0,
      kBPerFrame: frames > 0 ? d('bytesReceived') / frames / 1000 : this.rtc.kBPerFrame || 0,
      decodeMs: frames > 0 ? (d('totalDecodeTime') * 1000) / frames : this.rtc.decodeMs ?? null,
      jitterBufferMs: d('jitterBufferEmittedCount') > 0
        ? (d('jitterBufferDelay') * 1000) / d('jitterBufferEmittedCount') : this.rtc.jitterBufferMs ?? null,
      framesReceived: inbound.framesReceived || 0, framesDecoded: inbound.framesDecoded || 0,
      framesDropped: inbound.framesDropped || 0, keyFramesDecoded: inbound.keyFramesDecoded || 0,
      packetsReceived: inbound.packetsReceived || 0, packetsLost: inbound.packetsLost || 0,
      nackCount: inbound.nackCount || 0, pliCount: inbound.pliCount || 0, firCount: inbound.firCount || 0,
      decoderImplementation: inbound.decoderImplementation || null, rtcFps: inbound.framesPerSecond ?? null,
      latencyMs: pair && pair.currentRoundTripTime !== undefined ? pair.currentRoundTripTime * 1000 : null,
    };
    this.prevRtc = { s: inbound, t: now };
  }

  /** The figures of this viewer: the fields formatStats prints (as the normal client's stats()) and WebRTC's. */
  stats() {
    const r = this.rtc;
    const h = this.handle;
    return {
      connected: this.connected, state: this.state, viewOnly: true, active: false,
      viewerId: h && h.getId ? h.getId() : null, sfu: 'janus', mountpoint: this.opts.mountpoint,
      framesShown: this.framesShown, fps: this.fps(), frameWidth: this.video.videoWidth,
      frameHeight: this.video.videoHeight, codec: 'h264', encoder: 'H.264 WebRTC (Janus)', tilesPerFrame: 1,
      kBPerFrame: r.kBPerFrame || 0, mbps: Math.round((r.mbps || 0) * 1000) / 1000, latencyMs: r.latencyMs ?? null,
      decodeMs: r.decodeMs ?? null, drawMs: null, presentMs: null, ...r,   // the browser draws the <video> itself
      iceConnectedAt: this.iceConnectedAt, firstFrameAt: this.firstFrameAt, connects: this.connects,
      errors: this.errors.slice(-10),
    };
  }

  showStats(on) { this.overlay.show(on); }

  destroy() {
    this.destroyed = true;
    clearInterval(this.statsTimer);
    clearTimeout(this.retryTimer);
    this.overlay.destroy();
    if (this.session) this.session.destroy({ cleanupHandles: true });
    this.root.remove();
  }
}

function startPage(doc) {
  const win = doc.defaultView;
  let opts;
  try { opts = sfuOptions(win.location.href); } catch (err) {
    doc.body.textContent = `rcanvas SFU viewer: ${err.message}`;
    return null;
  }
  const J = win.Janus;
  if (!J) {
    doc.body.textContent = 'rcanvas SFU viewer: janus.js did not load (/vendor/janus.js: Debian\'s libjs-janus-gateway, served by the web front)';
    return null;
  }
  let view = null;
  J.init({
    debug: false,
    dependencies: J.useDefaultDependencies(),       // adapter.js's window.adapter and the browser's fetch
    callback: () => {
      if (!J.isWebrtcSupported()) { doc.body.textContent = 'rcanvas SFU viewer: this browser has no WebRTC'; return; }
      view = new SfuView(doc.body, opts, J);
      win.rcanvas = view;
    },
  });
  return view;
}

// only on the page itself (body[data-sfu]): importing this module elsewhere (a test, another page) starts nothing
if (typeof document !== 'undefined' && document.body && document.body.dataset.sfu !== undefined) startPage(document);
