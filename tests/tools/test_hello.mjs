// SPDX-License-Identifier: MIT
// test_hello — the rcanvas-hello example does what README.md says: it prints a URL with a 32-hex-digit token on
// a free port; the page answers with the token (a 303 into the session path, then 200 by its cookie; 401 without,
// 403 with a wrong one); a WebSocket viewer that
// acks gets a stream of *different* frames (animated, not one still frame) at its physical size once it reports
// 200x100 CSS px at pixel ratio 2; the pointer, key and resize events it sends are printed; SIGINT and SIGTERM
// each end the program with status 0 within 3 s. Plain Node (no packages): node test_hello.mjs PATH/rcanvas-hello
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';

const exe = process.argv[2];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const within = (promise, ms) => Promise.race([promise, new Promise((r) => setTimeout(r, ms, 'timeout').unref())]);

function start() {
  const child = spawn(exe, ['0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  child.out = '';
  child.stdout.on('data', (d) => { child.out += d; });
  child.exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  process.on('exit', () => child.kill('SIGKILL')); // a failed assertion must not leave it running
  return child;
}

async function until(what, pred, ms) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) {
    const v = pred();
    if (v) return v;
  }
  assert.fail(`timed out after ${ms} ms waiting for ${what}`);
}

function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body,
                                    location: res.headers.location, cookie: res.headers['set-cookie'] }));
    }).on('error', reject);
  });
}

// A minimal WebSocket client (RFC 6455): handshake, unmasked server frames in, masked text frames out.
function websocket(port, path) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const key = randomBytes(16).toString('base64');
    const ws = { messages: [], send(text) {
      const data = Buffer.from(text), mask = randomBytes(4);
      assert.ok(data.length < 126);
      const frame = Buffer.concat([Buffer.from([0x81, 0x80 | data.length]), mask, data.map((b, i) => b ^ mask[i % 4])]);
      sock.write(frame);
    }, close() { sock.destroy(); } };
    let buf = Buffer.alloc(0), open = false, parts = [], opcode = 0;
    sock.on('error', reject);
    sock.on('connect', () => sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n` +
      `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (!open) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString();
        const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
        if (!/^HTTP\/1\.1 101/.test(head) || !head.includes(accept)) return reject(new Error(`handshake: ${head}`));
        buf = buf.subarray(end + 4);
        open = true;
        resolve(ws);
      }
      for (;;) {
        if (buf.length < 2) return;
        let len = buf[1] & 0x7f, off = 2;
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
        if (buf.length < off + len) return;
        const fin = buf[0] & 0x80, op = buf[0] & 0x0f, payload = buf.subarray(off, off + len);
        buf = buf.subarray(off + len);
        if (op === 1 || op === 2) opcode = op, parts = [];
        if (op <= 2) parts.push(payload);
        if (op <= 2 && fin) ws.messages.push(opcode === 1 ? Buffer.concat(parts).toString() : Buffer.concat(parts));
      }
    });
  });
}

// 1. URL, page, token checks.
let app = start();
const m = await until('the URL', () => app.out.match(/open (http:\/\/127\.0\.0\.1:(\d+)\/\?token=([0-9a-f]{32}))\n/), 5000);
const [, url, portText, token] = m, port = Number(portText);
assert.ok(port > 0 && port < 65536);
// as a browser: the printed URL answers 303 into the server's session path (relative), with the session cookie
// scoped to it; there, by the cookie, the page
const redirect = await get(url);
assert.equal(redirect.status, 303);
assert.match(redirect.location, /^s\/[0-9a-f]{32}\/$/);
const cookie = (redirect.cookie || [])[0] || '';
assert.match(cookie, /^rcanvas_s=[0-9a-f]{32}; Path=\/s\/[0-9a-f]{32}\/; HttpOnly; SameSite=Lax$/);
const page = await get(new URL(redirect.location, url).href, { Cookie: cookie.split(';')[0] });
assert.equal(page.status, 200);
assert.match(page.type, /^text\/html/);
assert.ok(page.body.includes('<title>rcanvas hello</title>'), 'page title');
assert.equal(page.body.split('rcanvas hello').length, 2, 'the title is filled in once: the template comment names no placeholder');
assert.equal((await get(`http://127.0.0.1:${port}/`)).status, 401);
assert.equal((await get(`http://127.0.0.1:${port}/?token=${'0'.repeat(32)}`)).status, 403);

// 2. A viewer: hello, then its size, then acked frames that keep changing (continuous update mode).
const ws = await websocket(port, `/ws?token=${token}`);
await until('hello', () => ws.messages.length >= 1, 3000);
assert.equal(JSON.parse(ws.messages[0]).type, 'hello');
ws.send(JSON.stringify({ event_type: 'resize', width: 200, height: 100, pixel_ratio: 2, time_stamp: 0 }));
const frames = new Map(); // seq → {w, h, payload} of frames at 400x200, every tile joined
let seen = 0;
await until('10 different 400x200 frames', () => {
  for (; seen < ws.messages.length; seen++) {
    const msg = ws.messages[seen];
    if (typeof msg === 'string') continue;
    assert.equal(msg.readUInt32LE(0), 0x46434352, 'frame magic');
    const seq = msg.readUInt32LE(8), flags = msg.readUInt16LE(6), w = msg.readUInt32LE(24), h = msg.readUInt32LE(28);
    if (w === 400 && h === 200) {
      const f = frames.get(seq) || { payload: Buffer.alloc(0) };
      f.payload = Buffer.concat([f.payload, msg.subarray(56)]);
      frames.set(seq, f);
    }
    if (flags & 2) ws.send(JSON.stringify({ type: 'ack', seq }));
  }
  return frames.size >= 10;
}, 5000);
const distinct = new Set([...frames.values()].map((f) => createHash('sha1').update(f.payload).digest('hex')));
assert.equal(distinct.size, frames.size, 'every frame differs from the others');

// 3. Events the viewer sends are printed.
ws.send(JSON.stringify({ event_type: 'pointer_down', x: 12, y: 34, button: 1, buttons: [1], modifiers: [],
                         ntouches: 0, touches: {}, time_stamp: 0 }));
ws.send(JSON.stringify({ event_type: 'key_down', key: 'q', modifiers: [], time_stamp: 0 }));
await until('printed events', () => app.out.includes('event key_down key=q\n'), 3000);
assert.match(app.out, /event resize 200x100 pixel_ratio=2\n/);
assert.match(app.out, /event pointer_down x=12 y=34 button=1\n/);

// 4. Ctrl-C with a viewer connected: status 0 within 3 s.
let t = Date.now();
app.kill('SIGINT');
let res = await within(app.exited, 3000);
assert.deepEqual(res, { code: 0, signal: null }, 'SIGINT: clean exit');
console.log(`SIGINT → exit 0 in ${Date.now() - t} ms`);
assert.match(app.out, /hello: stopping\n$/);
ws.close();

// 5. SIGTERM with no viewer: status 0 within 3 s.
app = start();
await until('the URL', () => /open http/.test(app.out), 5000);
t = Date.now();
app.kill('SIGTERM');
res = await within(app.exited, 3000);
assert.deepEqual(res, { code: 0, signal: null }, 'SIGTERM: clean exit');
console.log(`SIGTERM → exit 0 in ${Date.now() - t} ms`);
console.log(`ok: ${frames.size} frames at 400x200, ${distinct.size} distinct`);
