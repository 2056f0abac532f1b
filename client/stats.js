// SPDX-License-Identifier: MIT
// stats.js: what a view measures (frames shown, fps, bytes, Mbit/s, round trips, where the client's time goes per
// frame, decode errors…) and its overlay: F2 or ?stats=1 shows it, and a "F2: stats" hint in the view's badge after
// the first connect.
import { encoderLabel, FLAG_REFINEMENT } from './protocol.js';

const LATENCIES_KEPT = 10000;
const BYTES_WINDOW = 30;               // frames averaged for kB/frame
const HINT_MS = 4000;                  // how long "F2: stats" stays after the first connect
const RENDER_MS = 250;
const STAGES_KEPT = 120;               // frames whose stage times make the medians
const RATE_KEPT = 1024;                // messages remembered for Mbit/s (over the last second)

/** A fixed ring of the last n numbers (no allocation per value); p(q) is a quantile of them. */
class Ring {
  constructor(n) { this.v = new Float64Array(n); this.count = 0; }
  push(x) { this.v[this.count++ % this.v.length] = x; }
  p(q) {
    const n = Math.min(this.count, this.v.length);
    if (!n) return null;
    const s = this.v.slice(0, n).sort();
    return s[Math.min(n - 1, Math.floor(q * n))];
  }
}

/**
 * Where the client's time goes, per frame drawn, from the arrival of its first message (performance.now() in
 * onmessage): decode (arrival → the last tile decoded, i.e. the VideoFrame output or createImageBitmap done), draw
 * (decoded → drawn: the wait in the present chain plus the drawImage calls; drawCall alone is the drawImage time),
 * present (drawn → after the next rendering update: requestAnimationFrame, then a task after it, so the canvas has
 * been handed to the compositor; measured for one frame at a time), and total (arrival → drawn).
 */
export class StageTimes {
  constructor() {
    this.decode = new Ring(STAGES_KEPT);
    this.draw = new Ring(STAGES_KEPT);
    this.drawCall = new Ring(STAGES_KEPT);
    this.present = new Ring(STAGES_KEPT);
    this.total = new Ring(STAGES_KEPT);
  }

  frame(arrived, decoded, drawStart, drawn) {
    this.decode.push(decoded - arrived);
    this.draw.push(drawn - decoded);
    this.drawCall.push(drawn - drawStart);
    this.total.push(drawn - arrived);
  }

  snapshot() {
    const r = (x) => (x === null ? null : Math.round(x * 100) / 100);
    return {
      decodeMs: r(this.decode.p(0.5)), drawMs: r(this.draw.p(0.5)), drawCallMs: r(this.drawCall.p(0.5)),
      presentMs: r(this.present.p(0.5)), clientMs: r(this.total.p(0.5)),
      decodeMsP95: r(this.decode.p(0.95)), clientMsP95: r(this.total.p(0.95)),
    };
  }
}

/** The figures of one view. The view calls frameDrawn() and counts the rest itself. */
export class Stats {
  constructor() {
    this.counters = {
      framesShown: 0, bytesReceived: 0, codec: '', refined: false, frameWidth: 0, frameHeight: 0, tiles: 0,
      lastSeq: null, latencyMs: null, encoder: '', refinements: 0, decodeErrors: 0, droppedMessages: 0,
      reconnects: 0,
    };
    this.drawTimes = [];               // performance.now() of frames drawn in the last second
    this.frameBytes = [];              // bytes of the last BYTES_WINDOW frames
    this.lat = new Float64Array(LATENCIES_KEPT);
    this.latCount = 0;
    this.stages = new StageTimes();
    this.rateT = new Float64Array(RATE_KEPT);   // arrival time and size of the last RATE_KEPT messages
    this.rateB = new Float64Array(RATE_KEPT);
    this.rateN = 0;
  }

  /** A binary message of `bytes` arrived at time t (performance.now()). */
  received(bytes, t) {
    this.counters.bytesReceived += bytes;
    const i = this.rateN++ % RATE_KEPT;
    this.rateT[i] = t;
    this.rateB[i] = bytes;
  }

  /** Mbit/s received over the last second. */
  mbps() {
    const cutoff = performance.now() - 1000;
    let bytes = 0;
    for (let k = 1; k <= Math.min(this.rateN, RATE_KEPT); k++) {
      const i = (this.rateN - k) % RATE_KEPT;
      if (this.rateT[i] < cutoff) break;
      bytes += this.rateB[i];
    }
    return (bytes * 8) / 1e6;
  }

  /** A frame was drawn: f = {seq, flags, codec, frameWidth, frameHeight, tiles, bytes, rttUs}. */
  frameDrawn(f, serverEncoder) {
    const s = this.counters;
    const refined = (f.flags & FLAG_REFINEMENT) !== 0;
    s.framesShown++;
    s.lastSeq = f.seq;
    s.codec = f.codec;
    s.encoder = encoderLabel(f.codec, refined, serverEncoder);
    s.refined = refined;
    if (refined) s.refinements++;
    s.frameWidth = f.frameWidth;
    s.frameHeight = f.frameHeight;
    s.tiles = f.tiles.length;
    this.drawTimes.push(performance.now());
    this.frameBytes.push(f.bytes);
    if (this.frameBytes.length > BYTES_WINDOW) this.frameBytes.shift();
    if (f.rttUs > 0) this.lat[this.latCount++ % LATENCIES_KEPT] = f.rttUs / 1000;
  }

  fps() {
    const cutoff = performance.now() - 1000;
    while (this.drawTimes.length && this.drawTimes[0] < cutoff) this.drawTimes.shift();
    return this.drawTimes.length;
  }

  /** The counters plus fps and kB/frame; `extra` (connection and view fields) is merged in. */
  snapshot(extra = {}) {
    const fb = this.frameBytes;
    const kB = fb.length ? fb.reduce((a, b) => a + b, 0) / fb.length / 1000 : 0;
    return { ...this.counters, fps: this.fps(), kBPerFrame: kB, tilesPerFrame: this.counters.tiles,
             mbps: Math.round(this.mbps() * 1000) / 1000, ...this.stages.snapshot(), ...extra };
  }

  /** The round trips (ms) of the frames drawn, oldest first (the last LATENCIES_KEPT). */
  latencies() {
    const n = Math.min(this.latCount, LATENCIES_KEPT);
    const out = new Array(n);
    const first = this.latCount - n;
    for (let i = 0; i < n; i++) out[i] = this.lat[(first + i) % LATENCIES_KEPT];
    return out;
  }
}

/** One line on the link as the server sees it: "link 3.4 Mbit/s (aim 2.9) rtt 95 ms  q 45  ½ size  ≤15 fps". */
export function formatLink(l) {
  const mbit = (k) => (k === null ? '–' : (k / 1000).toFixed(k >= 10000 ? 0 : 1));
  const aim = l.targetKbps !== null && l.targetKbps >= 2000000 ? '∞' : mbit(l.targetKbps);
  let out = `link ${mbit(l.rateKbps)} Mbit/s (aim ${aim})  rtt ${l.rttMs ?? '–'} ms`;
  if (l.quality) out += `  q ${l.quality}`;
  if (l.bitrateKbps) out += `  ${mbit(l.bitrateKbps)} Mbit/s video`;
  if (l.scale > 1) out += `  1/${l.scale} size`;
  if (l.fpsCap) out += `  ≤${Math.round(l.fpsCap)} fps`;
  return out;
}

/** The overlay text of a snapshot. */
export function formatStats(s) {
  const rtt = s.latencyMs === null ? '–' : s.latencyMs.toFixed(1);
  const codec = s.encoder || '–';
  const ms = (x) => (x === null || x === undefined ? '–' : x.toFixed(1));
  return `${String(s.fps).padStart(3)} fps   rtt ${rtt} ms   ${(s.mbps ?? 0).toFixed(2)} Mbit/s\n` +
    `${codec}   ${s.kBPerFrame.toFixed(1)} kB/frame\n` +
    `decode ${ms(s.decodeMs)}  draw ${ms(s.drawMs)}  present ${ms(s.presentMs)} ms\n` +
    `${s.frameWidth}×${s.frameHeight}   ${s.tilesPerFrame} tile${s.tilesPerFrame === 1 ? '' : 's'}\n` +
    `viewer ${s.viewerId ?? '–'} ${s.connected ? (s.viewOnly ? 'view only' : s.active ? 'active' : 'passive') : 'offline'}` +
    (s.link ? `\n${formatLink(s.link)}` : '') +
    (s.videoOff ? `\nvideo off: ${s.videoOff}` : '');
}

/**
 * The overlay of one view (a <pre>) and its hint in the view's badge. F2 toggles it when the focus is in the view
 * or nowhere in particular (the page body): a page's own text fields keep their F2.
 */
/**
 * The view's small status line (an element of class rcanvas-badge): a text, shown when not empty; `hint` marks a
 * passing hint ("F2: stats") that StatsOverlay may replace and fade. view.js and sfu.js both use it.
 */
export class Badge {
  constructor(el) { this.el = el; }
  get isHint() { return this.el.classList.contains('rcanvas-hint'); }
  set(text, { hint = false } = {}) {
    this.el.textContent = text;
    this.el.hidden = !text;
    this.el.classList.toggle('rcanvas-hint', hint);
    this.el.classList.remove('rcanvas-fade');
  }
  fade() { this.el.classList.add('rcanvas-fade'); }
}

export class StatsOverlay {
  constructor({ pre, badge, root, snapshot, window: win = window }) {
    this.pre = pre;
    this.badge = badge;
    this.root = root;
    this.snapshot = snapshot;
    this.win = win;
    this.timer = null;
    this.hintShown = false;
    this.hintTimer = null;
    this.onKey = (ev) => {
      if (ev.key !== 'F2') return;
      const doc = this.root.ownerDocument;
      const focus = doc.activeElement;
      if (focus && focus !== doc.body && focus !== doc.documentElement && !this.root.contains(focus)) return;
      ev.preventDefault();
      if (!ev.repeat) this.show(!this.shown);
    };
    win.addEventListener('keydown', this.onKey, true);
  }

  get shown() { return !this.pre.hidden; }

  show(on) {
    this.pre.hidden = !on;
    if (on) this.dismissHint();                   // the hint has done its job
    clearInterval(this.timer);
    this.timer = null;
    if (on) { this.render(); this.timer = setInterval(() => this.render(), RENDER_MS); }
  }

  render() { this.pre.textContent = formatStats(this.snapshot()); }

  /** After the first connect: "F2: stats" in the badge for a few seconds, then it fades away. */
  showHint() {
    if (this.hintShown || this.shown) return;
    this.hintShown = true;
    this.badge.set('F2: stats', { hint: true });
    this.hintTimer = setTimeout(() => {                // (a state badge may have replaced the hint meanwhile)
      if (!this.badge.isHint) return;
      this.badge.fade();
      this.hintTimer = setTimeout(() => { if (this.badge.isHint) this.badge.set(''); }, 1000);
    }, HINT_MS);
  }

  // The first key or click in the view ends the hint at once: the person is at work, and a fading badge would
  // change the picture under them (screenshots of a still scene included).
  dismissHint() {
    if (this.badge.isHint) { clearTimeout(this.hintTimer); this.badge.set(''); }
  }

  destroy() {
    clearInterval(this.timer);
    clearTimeout(this.hintTimer);
    this.win.removeEventListener('keydown', this.onKey, true);
  }
}
