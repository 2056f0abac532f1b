// SPDX-License-Identifier: MIT
// connection.js: the WebSocket of one view and its states (docs/protocol.md, "Connection states"):
// connecting → connected (after hello) → disconnected (retrying with backoff from 250 ms to 5 s) → connected …,
// → gone (GONE_AFTER attempts in a row failed, about 25 s: the server, or its canvas, has gone, e.g. a notebook
// kernel restarted; retrying every 30 s, then every 60 s, until it is back), or token-missing / token-rejected
// (the server answers 401 / 403: no retrying until the person asks), or session-ended (a view of the served page,
// which goes by a session of one server process: 401 after that process is gone, e.g. restarted).
// A browser WebSocket cannot see the HTTP status of a refused upgrade, so after an attempt that never opened the
// connection asks the page URL of the same canvas with the same token (the probe) and reads only its status.
// It knows nothing of the DOM: the view shows what it reports through its handlers.
import { DEFAULT_MAX_MESSAGE_BYTES, encodeMessage, HEADER_VERSIONS, refusalFrom, SUBPROTOCOL } from './protocol.js';

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;
const POLICY_DELAY_MS = 10000;         // after a close for policy (1008) or auth (4001/4003) reasons
const GONE_AFTER = 8;                  // failed attempts in a row (≈ 0.25+0.5+1+2+4+5+5+5 s) before "gone"
const GONE_DELAY_MS = 30000;           // then the wait before each attempt, doubling up to GONE_MAX_MS
const GONE_MAX_MS = 60000;
const HELLO_TIMEOUT_MS = 10000;
const PROBE_TIMEOUT_MS = 5000;         // the HTTP probe after a refused WebSocket
const CONNECT_TIMEOUT_MS = 10000;      // an upgrade that neither opens nor fails (a black-holed link) is given up
// A server that announces `heartbeat_ms` in its hello sends something (a frame, a notice or a
// {"type":"ping"}) at least that often; nothing for STALL_BEATS of them (and at least STALL_MIN_MS) is a
// silently dead link (a proxy that stopped forwarding, a NAT that forgot us): the view says "Connection stalled"
// and reconnects through the usual path. Browsers hide WebSocket pings from pages, hence the JSON one.
const STALL_BEATS = 3;
const STALL_MIN_MS = 5000;

// Refusals the server tells by a close code right after accepting (a browser cannot read the HTTP status
// of a refused upgrade): the banner's title and detail.
const REFUSALS = {
  4403: { title: 'Connection refused: origin not allowed',
          detail: "The server does not accept WebSockets from this page's origin (a proxy in front of it that " +
                  'changes the Host, or a page of another site): start it with --allow-origin naming this origin.' },
  4503: { title: 'Connection refused: too many viewers',
          detail: 'The server already has as many viewers as it allows (--max-viewers); this page keeps trying.' },
};

/**
 * handlers: state(next, {text, detail, everConnected}) on every state change; countdown(text) while waiting for
 * the next attempt; hello(msg, {reconnected}); message(msg) for the other JSON messages; binary(socket, buffer);
 * closed() when an open socket has gone (the view forgets half-received frames); socket(ws) on each new socket.
 */
export class Connection {
  constructor({ socketUrl, probeUrl, handlers, session = false }) {
    this.socketUrl = socketUrl;
    this.probeUrl = probeUrl;
    this.session = session;      // by the served page's session cookie: a 401 means its server process is gone
    this.h = handlers;
    this.ws = null;
    this.state = 'connecting';
    this.attempt = 0;            // counts connect() calls: late answers of an older attempt are ignored
    this.connected = false;      // between hello and close
    this.everConnected = false;
    this.failures = 0;           // consecutive failed attempts, for the backoff (and "gone" after GONE_AFTER)
    this.retryTimer = null;
    this.helloTimer = null;
    this.connectTimer = null;
    this.stallTimer = null;
    this.lastHeard = 0;          // performance.now() of the last message of the connected socket
    this.stallMs = 0;            // from the hello's heartbeat_ms; 0 = the server sends no heartbeat
    this.stalls = 0;             // stalled connections noticed (stats)
    this.stopped = false;        // page hidden (pagehide) or view destroyed: no reconnecting
    this.maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;
  }

  setState(next, info = {}) {
    this.state = next;
    this.h.state(next, { ...info, everConnected: this.everConnected });
  }

  /** Sends obj as JSON on socket (default: the current one) if it is open; false if not sent. */
  send(obj, socket = this.ws) {
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    const text = encodeMessage(obj, this.maxMessageBytes);
    if (text === null) {
      console.warn('rcanvas: not sending an over-long message', obj.event_type || obj.type);
      return false;
    }
    socket.send(text);
    return true;
  }

  connect() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.stopped = false;
    const mine = ++this.attempt;
    if (this.state === 'disconnected' || this.state === 'gone') this.h.countdown('Reconnecting…');
    else if (this.state !== 'connecting') {
      this.setState(this.everConnected ? 'disconnected' : 'connecting', { text: 'Reconnecting…' });
    }
    let socket;
    try {
      socket = new WebSocket(this.socketUrl, SUBPROTOCOL);
    } catch (err) {
      console.error('rcanvas: cannot open WebSocket', this.socketUrl, err);
      this.scheduleReconnect(null, 'cannot open a WebSocket');
      return;
    }
    let opened = false;
    socket.binaryType = 'arraybuffer';
    this.ws = socket;
    this.h.socket(socket);
    clearTimeout(this.connectTimer);
    this.connectTimer = setTimeout(() => {           // neither open nor closed: the link swallows the upgrade
      if (socket !== this.ws || opened) return;
      this.abandon(socket);
      this.onClose({ code: 1006, reason: '' }, false, mine);
    }, CONNECT_TIMEOUT_MS);
    socket.onopen = () => {
      opened = true;
      clearTimeout(this.connectTimer);
      this.helloTimer = setTimeout(() => {
        if (socket === this.ws && !this.connected) socket.close(4000, 'no hello');
      }, HELLO_TIMEOUT_MS);
    };
    socket.onmessage = (ev) => {
      if (socket !== this.ws) return;
      this.lastHeard = performance.now();
      if (typeof ev.data === 'string') this.onText(ev.data);
      else this.h.binary(socket, ev.data);
    };
    socket.onclose = (ev) => { if (socket === this.ws) this.onClose(ev, opened, mine); };
  }

  /** Forgets a socket at once (its close handshake may never finish on a dead link): no more callbacks from it. */
  abandon(socket) {
    socket.onopen = socket.onmessage = socket.onclose = null;
    try { socket.close(4000, 'stalled'); } catch { /* closing already */ }
    if (socket === this.ws) this.ws = null;
  }

  /** Runs while connected to a server with a heartbeat: a stalled link is closed and reconnected. */
  watchStall(socket) {
    clearTimeout(this.stallTimer);
    if (!this.stallMs) return;
    const check = () => {
      if (socket !== this.ws || !this.connected) return;
      const quiet = performance.now() - this.lastHeard;
      if (quiet < this.stallMs) { this.stallTimer = setTimeout(check, Math.min(1000, this.stallMs - quiet + 50)); return; }
      this.stalls++;
      console.warn(`rcanvas: nothing from the server for ${Math.round(quiet / 1000)} s: reconnecting`);
      this.abandon(socket);
      clearTimeout(this.helloTimer);
      this.connected = false;
      this.h.closed();
      this.failures = 0;                           // the first attempt comes soon (250 ms)
      this.scheduleReconnect(null, `nothing came from the server for ${Math.round(quiet / 1000)} s`,
                             { title: 'Connection stalled' });
    };
    this.stallTimer = setTimeout(check, Math.min(1000, this.stallMs));
  }

  retryNow() {
    const old = this.ws;
    if (old && old.readyState === WebSocket.CONNECTING) { this.ws = null; old.close(); }   // start over, not twice
    this.failures = 0;
    this.connect();
  }

  /** The network came back: try at once if an attempt is waiting. */
  online() { if (this.retryTimer) this.connect(); }

  /** The page is about to go (beforeunload): no more attempts; the socket stays open for the last messages. */
  stopRetrying() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  /** The page is being hidden for good or kept in the back/forward cache: close, do not reconnect. */
  stop(code = 1000, reason = 'page closed') {
    this.stopRetrying();
    clearTimeout(this.helloTimer);
    clearTimeout(this.stallTimer);
    clearTimeout(this.connectTimer);
    const ws = this.ws;
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(code, reason);
  }

  /** Back from the back/forward cache. */
  resume() {
    this.connected = false;
    this.failures = 0;
    this.connect();
  }

  /** For good (the view is destroyed): no more callbacks. */
  destroy(reason = 'view closed') {
    this.stop(1000, reason);
    const ws = this.ws;
    if (ws) { ws.onopen = ws.onmessage = ws.onclose = null; }
    this.ws = null;
    this.connected = false;
    ++this.attempt;                                // a probe still under way is ignored
  }

  onClose(ev, opened, mine) {
    clearTimeout(this.helloTimer);
    clearTimeout(this.stallTimer);
    clearTimeout(this.connectTimer);
    this.connected = false;
    this.h.closed();                               // the server forgets unacked frames of a closed socket
    if (this.stopped) return;
    if (opened) { this.scheduleReconnect(ev); return; }
    // Refused or unreachable: the WebSocket API hides the HTTP status, so ask the page URL with the same token.
    this.probeRefusal().then((status) => {
      if (mine !== this.attempt || this.stopped) return;     // a retry or a page hide came first
      const r = refusalFrom(status, this.session);
      if (!r.retry) {
        console.warn(r.state === 'session-ended'
          ? "rcanvas: this page's session ended with the server process that served it; not retrying"
          : `rcanvas: the server refuses this page's token (HTTP ${status}); not retrying`);
        this.setState(r.state);
        return;
      }
      this.scheduleReconnect(ev, r.why);
    });
  }

  /** HTTP status of the canvas's page with our token; 0 when the server does not answer. */
  async probeRefusal() {
    try {
      const resp = await fetch(this.probeUrl, { cache: 'no-store', credentials: 'same-origin',
                                                signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      resp.body?.cancel().catch(() => {});         // only the status matters
      return resp.status;
    } catch {
      return 0;
    }
  }

  scheduleReconnect(ev, why = '', extra = {}) {
    let delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.failures);
    this.failures++;
    // Past GONE_AFTER failures in a row nobody is coming back soon (a stopped program, a restarted notebook
    // kernel, a canvas that was closed): say so and ask far less often, instead of every 5 s for ever.
    const gone = this.failures > GONE_AFTER;
    if (gone) delay = Math.min(GONE_MAX_MS, GONE_DELAY_MS * 2 ** (this.failures - GONE_AFTER - 1));
    if (ev && REFUSALS[ev.code]) {              // the server said why it refused this viewer
      delay = Math.max(delay, POLICY_DELAY_MS);
      extra = { ...REFUSALS[ev.code], ...extra };
      why = extra.detail;
      ev = null;
    }
    if (ev) {
      if ([1008, 4001, 4003].includes(ev.code)) delay = Math.max(delay, POLICY_DELAY_MS);
      if (ev.reason) why = `closed by the server: ${ev.reason} (${ev.code})`;
      else if (!why && ev.code !== 1005 && ev.code !== 1006) why = `closed (${ev.code})`;
    }
    const due = performance.now() + delay;
    this.setState(gone ? 'gone' : 'disconnected', { detail: why, ...extra });
    const tick = () => {
      const left = due - performance.now();
      if (left <= 0) { this.connect(); return; }
      this.h.countdown(`Retrying in ${Math.ceil(left / 1000)} s…`);
      this.retryTimer = setTimeout(tick, Math.min(left, 250));
    };
    tick();
  }

  onText(text) {
    let msg;
    try { msg = JSON.parse(text); } catch { console.warn('rcanvas: ignoring a non-JSON text message'); return; }
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'ping') return;               // the heartbeat: lastHeard is all it is for
    if (msg.type !== 'hello') { this.h.message(msg); return; }
    clearTimeout(this.helloTimer);
    if (!HEADER_VERSIONS.includes(msg.protocol)) console.warn('rcanvas: server speaks protocol', msg.protocol);
    const reconnected = this.everConnected && !this.connected;
    this.everConnected = true;
    this.connected = true;
    this.failures = 0;
    this.maxMessageBytes = msg.max_message_bytes > 0 ? msg.max_message_bytes : DEFAULT_MAX_MESSAGE_BYTES;
    const beat = Number(msg.heartbeat_ms);
    this.stallMs = beat > 0 && beat <= 600000 ? Math.max(STALL_MIN_MS, STALL_BEATS * beat) : 0;
    this.watchStall(this.ws);
    this.setState('connected');
    this.h.hello(msg, { reconnected });
  }
}
