// SPDX-License-Identifier: MIT
// input.js: the person's input on one view, as renderview events (rendercanvas / jupyter_rfb; docs/protocol.md):
// pointer, wheel, double click, keys, char, with pointer_move and wheel coalesced per animation frame.
//
// Focus and wheel rule (public bug reports of embedded canvases):
//  - A view never takes the keyboard focus by itself: a view that appears while the person types in a text
//    field leaves the focus there. It takes it on a click (pointerdown) in the view, or by Tab. Only the served
//    full-window page asks for `autofocus`, which like HTML autofocus takes the focus only if nothing else has it
//    (in an iframe: only if the frame has the focus, so an embedded page does not take it from its host page).
//  - The wheel goes to the app only while the view has the focus (it was clicked) or holds a pressed pointer;
//    otherwise the wheel is left to the browser, so a page scrolls past a view it is not working with.
//  - Keys go to the app only while the view has the focus.
//  - A held key's auto-repeat (KeyboardEvent.repeat) sends no key_down (one per press, as rendercanvas' backends);
//    the characters it types are still sent as `char` events.
//  - macOS delivers no keyup for a key released while Cmd (Meta) is down: when Meta goes up, every key pressed
//    while Meta was down and still held gets its key_up (before Meta's own). A key_up is sent only for a key whose
//    key_down was sent, so a late real keyup is not sent twice.
//  - Text committed by an input method (CJK and others: compositionend), or inserted without a key (on-screen
//    keyboards, dictation, emoji pickers: beforeinput insertText), is sent as `char` events, split into pieces
//    of at most 31 bytes. The keys that drive a composition (isComposing, "Process", keyCode 229) are not sent.
// The keyboard focus sits on a transparent <textarea> over the canvas (input methods need an editable target);
// it moves to the last pointer-down position so a candidate window opens where the person works.
import {
  buttonsList, clampCoord, mapButton, MAX_TOUCHES, modifiersList, nowSeconds, splitUtf8, truncateUtf8,
} from './protocol.js';

const sameList = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

/** Keys whose browser meaning must survive (reload, devtools, zoom, full screen): sent, but not prevented. */
export function isBrowserShortcut(ev) {
  if (ev.key === 'F5' || ev.key === 'F11' || ev.key === 'F12') return true;
  const k = (ev.key || '').toLowerCase();
  const cmd = ev.ctrlKey || ev.metaKey;
  if (cmd && (k === 'r' || k === '+' || k === '-' || k === '=' || k === '0')) return true;
  if (cmd && (ev.shiftKey || ev.altKey) && (k === 'i' || k === 'j' || k === 'c')) return true;
  return false;
}

/** A key event that belongs to an input method's composition (its text comes with compositionend). */
const composingKey = (ev) => ev.isComposing || ev.key === 'Process' || ev.keyCode === 229;

/**
 * Sends events in order: pointer_move and wheel wait for the next animation frame (at most one of each, merged
 * while buttons and modifiers stay the same); any other event sends them first so that the order is kept.
 * transmit(obj) sends one message; connected() says whether events are wanted now.
 */
export class EventQueue {
  constructor(transmit, connected) {
    this.transmit = transmit;
    this.connected = connected;
    this.clear();
  }

  clear() {
    if (this.rafId) cancelAnimationFrame(this.rafId);
    this.rafId = 0;
    this.order = [];
    this.move = null;
    this.wheel = null;
  }

  flush() {
    const list = this.order;
    this.clear();
    if (this.connected()) for (const ev of list) this.transmit(ev);
  }

  send(ev) {
    this.flush();
    if (this.connected()) this.transmit(ev);
  }

  queue(ev) {
    this.order.push(ev);
    if (!this.rafId) this.rafId = requestAnimationFrame(() => { this.rafId = 0; this.flush(); });
  }

  queueMove(ev) {
    if (!this.connected()) return;
    const p = this.move;
    if (p && sameList(p.buttons, ev.buttons) && sameList(p.modifiers, ev.modifiers)) {
      Object.assign(p, ev);                      // newest position, same state
      return;
    }
    if (p) this.flush();
    this.move = ev;
    this.queue(ev);
  }

  queueWheel(ev) {
    if (!this.connected()) return;
    const p = this.wheel;
    if (p && sameList(p.buttons, ev.buttons) && sameList(p.modifiers, ev.modifiers)) {
      p.dx = clampCoord(p.dx + ev.dx);
      p.dy = clampCoord(p.dy + ev.dy);
      p.x = ev.x; p.y = ev.y; p.time_stamp = ev.time_stamp;
      return;
    }
    if (p) this.flush();
    this.wheel = ev;
    this.queue(ev);
  }
}

/**
 * The input of one view: listens on its canvas (pointer, wheel) and its key target (keys, text). onActivity() is
 * called on the first key or click (the view ends its stats hint). destroy() removes every listener.
 */
export class Input {
  constructor({ canvas, keyTarget, queue, onActivity = () => {}, toCanvas = (x, y) => [x, y] }) {
    this.canvas = canvas;
    this.toCanvas = toCanvas;      // view CSS px -> the canvas's logical px (letterbox, other sizes)
    this.keyTarget = keyTarget;
    this.queue = queue;
    this.onActivity = onActivity;
    this.touches = new Map();      // pointerId -> {x, y, pressure} of touch pointers that are down
    this.down = new Map();         // pointerId -> renderview button, of pointers that are down
    this.held = new Map();         // KeyboardEvent.code -> {key, underMeta} of keys whose key_down was sent
    this.composing = false;
    this.listeners = [];
    this.bind();
  }

  /** Whether the view has the keyboard focus (its key target is the document's focused element). */
  focused() {
    return this.keyTarget.ownerDocument.activeElement === this.keyTarget;
  }

  focus() { this.keyTarget.focus({ preventScroll: true }); }

  on(target, type, fn, opts) {
    target.addEventListener(type, fn, opts);
    this.listeners.push([target, type, fn, opts]);
  }

  destroy() {
    for (const [t, type, fn, opts] of this.listeners) t.removeEventListener(type, fn, opts);
    this.listeners = [];
    this.queue.clear();
  }

  pointerEvent(type, ev, button = mapButton(ev.button)) {
    const t = {};
    let n = 0;
    for (const [id, p] of this.touches) { if (n === MAX_TOUCHES) break; t[id] = p; n++; }
    const [x, y] = this.toCanvas(ev.offsetX, ev.offsetY);
    return { event_type: type, x: clampCoord(x), y: clampCoord(y), button,
             buttons: buttonsList(ev.buttons), modifiers: modifiersList(ev), ntouches: n, touches: t,
             time_stamp: nowSeconds() };
  }

  trackTouch(ev) {
    if (ev.pointerType === 'touch') {
      const [x, y] = this.toCanvas(ev.offsetX, ev.offsetY);
      this.touches.set(ev.pointerId, { x: clampCoord(x), y: clampCoord(y), pressure: ev.pressure });
    }
  }

  sendKeyUp(key, modifiers) {
    this.queue.send({ event_type: 'key_up', key, modifiers, time_stamp: nowSeconds() });
  }

  /** Text from an input method or an insertion without keys: `char` events of at most 31 bytes each. */
  sendText(text) {
    if (!text) return;
    this.onActivity();
    for (const data of splitUtf8(text)) this.queue.send({ event_type: 'char', data, modifiers: [], time_stamp: nowSeconds() });
  }

  /** Releases (key_up) the keys still held; all of them, or only those pressed while Meta was down. */
  releaseHeld(onlyUnderMeta, modifiers = []) {
    for (const [code, k] of this.held) {
      if (onlyUnderMeta && !k.underMeta) continue;
      this.held.delete(code);
      this.sendKeyUp(k.key, modifiers);
    }
  }

  bind() {
    const { canvas, keyTarget, queue } = this;

    this.on(canvas, 'pointerdown', (ev) => {
      ev.preventDefault();                       // no text selection, drag or autoscroll; we focus ourselves
      this.onActivity();
      keyTarget.style.left = `${Math.max(0, ev.offsetX)}px`;   // an input method's window opens here
      keyTarget.style.top = `${Math.max(0, ev.offsetY)}px`;
      this.focus();
      try { canvas.setPointerCapture(ev.pointerId); } catch { /* pointer already gone */ }
      this.trackTouch(ev);
      const button = mapButton(ev.button);
      this.down.set(ev.pointerId, button);
      queue.send(this.pointerEvent('pointer_down', ev, button));
    });

    const release = (ev) => {                    // pointerup, pointercancel, lostpointercapture: one pointer_up
      this.touches.delete(ev.pointerId);
      if (!this.down.has(ev.pointerId)) return;
      const button = ev.button >= 0 ? mapButton(ev.button) : this.down.get(ev.pointerId);
      this.down.delete(ev.pointerId);
      queue.send(this.pointerEvent('pointer_up', ev, button));
    };
    this.on(canvas, 'pointerup', release);
    this.on(canvas, 'pointercancel', release);
    this.on(canvas, 'lostpointercapture', release);

    this.on(canvas, 'pointermove', (ev) => {
      this.trackTouch(ev);
      const button = mapButton(ev.button);
      if (button && this.down.has(ev.pointerId)) {
        // another button pressed or released while one is held (a "chord"): no pointerdown/up for it
        queue.send(this.pointerEvent((ev.buttons & (1 << (button - 1))) ? 'pointer_down' : 'pointer_up', ev, button));
        return;
      }
      // as in the renderview spec: a move during a drag carries the button that started the drag
      queue.queueMove(this.pointerEvent('pointer_move', ev, this.down.get(ev.pointerId) || 0));
    });
    this.on(canvas, 'pointerenter', (ev) => queue.send(this.pointerEvent('pointer_enter', ev, 0)));
    this.on(canvas, 'pointerleave', (ev) => queue.send(this.pointerEvent('pointer_leave', ev, 0)));

    this.on(canvas, 'dblclick', (ev) => {
      ev.preventDefault();
      const [x, y] = this.toCanvas(ev.offsetX, ev.offsetY);
      queue.send({ event_type: 'double_click', x: clampCoord(x), y: clampCoord(y),
                   button: mapButton(ev.button), buttons: buttonsList(ev.buttons), modifiers: modifiersList(ev),
                   time_stamp: nowSeconds() });
    });

    this.on(canvas, 'wheel', (ev) => {
      if (!this.focused() && this.down.size === 0) return;   // not ours: the page scrolls (see the rule above)
      ev.preventDefault();                       // no page scroll or ctrl+wheel zoom
      const k = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? (canvas.clientHeight || window.innerHeight) : 1;
      const [x, y] = this.toCanvas(ev.offsetX, ev.offsetY);
      queue.queueWheel({ event_type: 'wheel', x: clampCoord(x), y: clampCoord(y),
                         dx: clampCoord(ev.deltaX * k), dy: clampCoord(ev.deltaY * k),
                         buttons: buttonsList(ev.buttons), modifiers: modifiersList(ev), time_stamp: nowSeconds() });
    }, { passive: false });

    this.on(canvas, 'contextmenu', (ev) => ev.preventDefault());

    this.on(keyTarget, 'keydown', (ev) => {
      if (ev.key === 'F2' || !ev.key) return;
      this.onActivity();
      if (composingKey(ev)) return;              // the input method's text comes with compositionend
      const modifiers = modifiersList(ev);
      const key = truncateUtf8(ev.key);
      // auto-repeat (a held key): no key_down, as rendercanvas' Qt and GLFW backends (isAutoRepeat / GLFW_REPEAT)
      // and the renderview spec do; the text it types still comes as `char`, as there. Not if its key_down was not
      // sent (the key went down before the view had the focus): then this is its first key_down.
      const repeat = ev.repeat && this.held.has(ev.code || key);
      if (!repeat) {
        this.held.set(ev.code || key, { key, underMeta: ev.metaKey && ev.key !== 'Meta' });
        queue.send({ event_type: 'key_down', key, modifiers, time_stamp: nowSeconds() });
      }
      const altGr = ev.getModifierState && ev.getModifierState('AltGraph');
      if ([...ev.key].length === 1 && !ev.metaKey && (!ev.ctrlKey || altGr)) {
        queue.send({ event_type: 'char', data: key, modifiers, time_stamp: nowSeconds() });
      }
      if (!isBrowserShortcut(ev)) ev.preventDefault();   // also keeps the text out of the key target
    });

    this.on(keyTarget, 'keyup', (ev) => {
      if (ev.key === 'F2' || !ev.key || composingKey(ev)) return;
      if (!isBrowserShortcut(ev)) ev.preventDefault();
      const key = truncateUtf8(ev.key);
      const code = ev.code || key;
      const k = this.held.get(code);
      if (!k) return;                            // no key_down was sent for it, or it was released already
      this.held.delete(code);
      const modifiers = modifiersList(ev);
      if (ev.key === 'Meta') this.releaseHeld(true, modifiers);   // macOS sends no keyup for these
      this.sendKeyUp(k.key, modifiers);
    });

    this.on(keyTarget, 'blur', () => this.releaseHeld(false));   // keys released elsewhere would stay "down"

    // text without keys: input methods and insertions (see the rule above)
    this.on(keyTarget, 'compositionstart', () => { this.composing = true; });
    this.on(keyTarget, 'compositionend', (ev) => {
      this.composing = false;
      this.sendText(ev.data);
      keyTarget.value = '';
    });
    this.on(keyTarget, 'beforeinput', (ev) => {
      if (this.composing || ev.isComposing || ev.inputType === 'insertCompositionText') return;
      ev.preventDefault();                       // nothing is edited here
      if (ev.inputType === 'insertText') this.sendText(ev.data);
    });
    this.on(keyTarget, 'input', () => { if (!this.composing) keyTarget.value = ''; });
  }
}
