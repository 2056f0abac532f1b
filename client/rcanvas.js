// SPDX-License-Identifier: MIT
// rcanvas.js: the script of the served page (client/index.html, at / and /c/NAME): one full-window RCanvasView of
// the canvas named in body[data-canvas], with the token of the page's URL; `?stats=1` opens the stats overlay.
// body[data-state] mirrors the view's connection state, and window.rcanvas is the view (view.js sets it for the
// first view of any page), as tests and tools expect.
//
// The client is a set of ES modules under /client/ (no build step, no dependencies):
//   protocol.js    wire format (versions 1 and 2): tile header, client messages, URLs, renderview field helpers
//   connection.js  the WebSocket of a view: states, backoff, the token probe
//   decoder.js     tile decoders per codec (createImageBitmap for images, WebCodecs VideoDecoder for video) and
//                  the codecs this browser decodes (negotiation)
//   input.js       pointer, wheel, keys, text → renderview events; the focus and wheel rules
//   stats.js       figures, the F2 overlay and its hint
//   view.js        RCanvasView: one canvas in a page, as many per page as wanted
//   element.js     <rcanvas-view> custom element around RCanvasView
// This module re-exports them, so `import { RCanvasView, parseFrameHeader } from '/client/rcanvas.js'` works; it
// starts a view only on the served page (a body with data-canvas).
import { canvasNameFrom } from './protocol.js';
import { RCanvasView } from './view.js';

export * from './protocol.js';
export { isBrowserShortcut, EventQueue, Input } from './input.js';
export { createDecoder, registerDecoder, videoSupport, openVideoFrames } from './decoder.js';
export { Stats, formatStats } from './stats.js';
export { RCanvasView };

// The server answers the page's ?token= with a 303 to the same page under s/R/ (a secret path of its process) and
// a session cookie valid only there (docs/security.md): the address bar has no token, and the page's script,
// WebSocket and probe go by URLs relative to it, so under s/R/ with the cookie. body[data-session] = "1" says the
// page goes by a session. A page in a frame of another site gets no cookie (a third-party one): it is served
// directly, its data-root ending in s/R/ and its session's S in data-session-key, and its WebSocket and probe carry
// ?session=S there, never the token of its own URL (which a listener that took the port over would catch).
function startPage(doc) {
  const body = doc.body;
  body.addEventListener('rcanvas-state', (ev) => { body.dataset.state = ev.detail.state; });
  return new RCanvasView(body, {
    canvas: canvasNameFrom(body.dataset.canvas, doc.defaultView.location.pathname),
    root: body.dataset.root || './',   // relative to this page: its script and WebSocket work under a proxy's prefix
    session: body.dataset.session === '1',
    sessionKey: body.dataset.sessionKey || '',
    fullPage: true,
    autofocus: true,           // the page is the view: keys work at once, unless something else has the focus
    documentTitle: true,
    ids: 'rcanvas',
    canvasElement: doc.getElementById('rcanvas-canvas'),
    stats: new URLSearchParams(doc.defaultView.location.search).get('stats') === '1',
  });
}

if (typeof document !== 'undefined' && document.body && document.body.dataset.canvas !== undefined) startPage(document);
