// SPDX-License-Identifier: MIT
// The front end of rcanvas.widget.CanvasWidget (an anywidget): one RCanvasView (client/view.js, bundled below by
// bundle_widget.py) per displayed output. Two ways to the kernel's rcanvas server:
//   direct  the view's own WebSocket to the server (ws://127.0.0.1:PORT/c/NAME/ws?token=T, or a path on the
//           notebook's origin behind rcanvas.jupyter), when a probe gets the server's hello within PROBE_MS;
//   comm    the same protocol over the widget's comm: each WebSocket message is a buffer (or a text) of a custom
//           message, and the kernel (widget.py) relays it to the server as a viewer of its own.
// The client's modules run unchanged: in this bundle `WebSocket` and `fetch` are the ones below, which hand
// URLs on the host *.comm.rcanvas.invalid to the comm and every other URL to the browser's own.
const NativeWebSocket = globalThis.WebSocket;
const nativeFetch = (...a) => globalThis.fetch(...a);
const COMM_HOST = 'comm.rcanvas.invalid';
const PROBE_MS = 1500;                 // a reachable server answers its hello in milliseconds; a blocked port never
const OPEN_MS = 4000;                  // the kernel answers an open at once when it runs; else it is gone or busy
const comms = new Map();               // "w<n>" -> CommLink of a displayed widget
const CSS_URL = '@@CSS_URL@@';         // client/rcanvas.css (bundle_widget.py puts it here as a data: URL)
let nextComm = 0;

/** One widget view's comm: carries any number of CommSockets (one at a time in practice), told apart by sid. */
class CommLink {
  constructor(model) {
    this.model = model;
    this.key = `w${++nextComm}${Math.random().toString(36).slice(2, 8)}`;
    this.sockets = new Map();
    this.status = 0;                   // the HTTP status of the kernel's last refused upgrade; 0: no answer
    this.onMsg = (msg, buffers) => this.receive(msg, buffers || []);
    model.on('msg:custom', this.onMsg);
    comms.set(this.key, this);
  }

  receive(msg, buffers) {
    if (!msg || typeof msg !== 'object') return;
    const s = this.sockets.get(msg.sid);
    if (!s) return;                    // another view's socket (every view of a model gets every message)
    if (msg.op === 'open') s.opened(msg.protocol || '');
    else if (msg.op === 'm') s.deliver(msg.k || '', msg.t || [], buffers);
    else if (msg.op === 'close') { this.status = msg.status || 0; s.closedBy(msg.code || 1006, msg.reason || ''); }
  }

  send(content, buffers) { this.model.send(content, undefined, buffers); }

  destroy() {
    for (const s of this.sockets.values()) s.close(1000, 'view closed');
    this.model.off('msg:custom', this.onMsg);
    comms.delete(this.key);
  }
}

/** A WebSocket look-alike (what connection.js uses of one) whose messages go through the widget's comm. */
class CommSocket {
  constructor(link, url) {
    this.link = link;
    this.url = url.href;
    this.sid = `${link.key}.${Math.random().toString(36).slice(2, 10)}`;
    this.readyState = 0;
    this.binaryType = 'arraybuffer';
    this.protocol = '';
    this.onopen = this.onmessage = this.onclose = this.onerror = null;
    link.sockets.set(this.sid, this);
    link.send({ op: 'open', sid: this.sid, path: url.pathname + url.search });
    this.openTimer = setTimeout(() => { if (this.readyState === 0) this.closedBy(1006, ''); }, OPEN_MS);
  }

  opened(protocol) {
    if (this.readyState !== 0) return;
    clearTimeout(this.openTimer);
    this.readyState = 1;
    this.protocol = protocol;
    this.onopen?.({});
  }

  deliver(kinds, texts, buffers) {
    let t = 0, b = 0;
    for (const k of kinds) {
      if (this.readyState !== 1) return;
      if (k === 't') this.onmessage?.({ data: texts[t++] });
      else {
        const v = buffers[b++];
        // anywidget hands DataViews (ipywidgets' buffers); the view wants the ArrayBuffer of the message only
        const data = v instanceof ArrayBuffer ? v : v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
        this.onmessage?.({ data });
      }
    }
  }

  send(data) {
    if (this.readyState !== 1) return;
    if (typeof data === 'string') this.link.send({ op: 'm', sid: this.sid, t: data });
    else this.link.send({ op: 'm', sid: this.sid }, [data]);
  }

  close(code = 1000, reason = '') {
    if (this.readyState >= 2) return;
    this.link.send({ op: 'close', sid: this.sid, code, reason });
    this.closedBy(code, reason);
  }

  closedBy(code, reason) {
    if (this.readyState === 3) return;
    clearTimeout(this.openTimer);
    this.readyState = 3;
    this.link.sockets.delete(this.sid);
    setTimeout(() => this.onclose?.({ code, reason, wasClean: code !== 1006 }), 0);
  }
}

function commLinkOf(url) {
  const u = new URL(url);
  if (!u.hostname.endsWith(`.${COMM_HOST}`)) return null;
  return comms.get(u.hostname.slice(0, -COMM_HOST.length - 1)) || null;
}

// The bundle's WebSocket: the browser's, or a CommSocket for a comm URL. (A class so that WebSocket.OPEN works.)
class WebSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;

  constructor(url, protocols) {
    const u = new URL(url);
    if (!u.hostname.endsWith(`.${COMM_HOST}`)) return new NativeWebSocket(url, protocols);
    const link = commLinkOf(url);
    if (!link) throw new Error('rcanvas: this widget view is gone');
    return new CommSocket(link, u);
  }
}

// The view's probe after a refused upgrade asks the page's HTTP status; through the comm the kernel said it.
function fetch(url, opts) {
  const s = String(url);
  if (!/^[a-z]+:\/\/[^/]*comm\.rcanvas\.invalid/i.test(s)) return nativeFetch(url, opts);
  const link = commLinkOf(s);
  return Promise.resolve({ status: link ? link.status : 0, body: null });
}

// @@CLIENT@@
const { RCanvasView } = __m_view;
const { formatStats } = __m_stats;

/** Whether the browser gets the server's hello at url (a page URL with its token) within PROBE_MS. */
function probeDirect(url) {
  return new Promise((resolve) => {
    let ws;
    const done = (ok) => {
      clearTimeout(timer);
      if (ws) { ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null; try { ws.close(1000, 'probe'); } catch { /* closed */ } }
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), PROBE_MS);
    try {
      const u = new URL(url, location.href);
      u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
      u.pathname = u.pathname.replace(/\/?$/, '/ws');
      ws = new NativeWebSocket(u.href, __m_protocol.SUBPROTOCOL);
    } catch { done(false); return; }
    ws.onmessage = (ev) => {
      let m = null;
      try { m = typeof ev.data === 'string' ? JSON.parse(ev.data) : null; } catch { /* not JSON */ }
      done(!!m && m.type === 'hello');
    };
    ws.onclose = () => done(false);
    ws.onerror = () => done(false);
  });
}

// Keys typed into the canvas are the app's: none may reach JupyterLab's shortcuts (Lumino listens on the document
// in the bubbling phase, the notebook on its node: a key that stops here reaches neither; F2 is the overlay's,
// which listens on the window in the capture phase, before this).
const KEY_EVENTS = ['keydown', 'keyup', 'keypress'];

async function render({ model, el }) {
  const w = model.get('width'), h = model.get('height');
  const box = document.createElement('div');
  box.className = 'rcanvas-widget';
  box.dataset.lmSuppressShortcuts = 'true';
  // its own size (the canvas's logical size) and its own dark backdrop, whatever the notebook's theme
  box.style.cssText = `position:relative;width:${w}px;height:${h}px;max-width:100%;background:#111;color:#eee;` +
                      'color-scheme:dark;overflow:hidden';
  el.appendChild(box);
  // a front end that renders widgets in a shadow root (marimo) does not apply the document's stylesheets there,
  // where the view links its own: the shadow root gets it too
  const rootNode = el.getRootNode();
  if (typeof ShadowRoot !== 'undefined' && rootNode instanceof ShadowRoot &&
      ![...rootNode.querySelectorAll('link[rel="stylesheet"]')].some((l) => l.href === CSS_URL)) {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = CSS_URL;
    rootNode.appendChild(link);
  }
  const stop = (ev) => ev.stopPropagation();
  for (const t of KEY_EVENTS) box.addEventListener(t, stop);

  // the page URL by the server process's session (…/s/R/c/NAME?session=S): the view goes by ?session= under s/R/
  // and is told so (a refusal after a restart then reads "Server restarted")
  const url = model.get('url');
  const sessionKey = url ? new URL(url, location.href).searchParams.get('session') || '' : '';
  const want = model.get('way');
  let way = 'comm';
  if (want !== 'comm' && url && await probeDirect(url)) way = 'direct';
  else if (want === 'direct') way = 'direct';               // forced: its banner tells why it cannot connect
  box.dataset.way = way;
  let link = null;
  let viewUrl = url;
  if (way === 'comm') {
    link = new CommLink(model);
    const u = new URL(url, location.href);
    viewUrl = `http://${link.key}.${COMM_HOST}${u.pathname.replace(/^.*(\/c\/[^/]+\/?)$/, '$1')}${u.search}`;
  }
  const view = new RCanvasView(box, { url: viewUrl, stats: model.get('stats'), sessionKey, session: !!sessionKey });
  view.way = way;
  view.overlay.render = () => { view.overlay.pre.textContent = `${formatStats(view.stats())}\nway: ${way}`; };
  box.rcanvas = view;                                         // for tests and tools: the view of this output

  // An output scrolled out of view costs nothing: the view's IntersectionObserver tells the server (visibility),
  // which then sends it no frames, whichever the way.
  return () => {
    view.destroy();
    if (link) link.destroy();
  };
}

export default { render };
