// SPDX-License-Identifier: MIT
// video_server.mjs — a stand-in rcanvas server in node for the client's protocol-2 tests (video.test.mjs), while the
// C server side of video is written in parallel. It serves what the real server serves to a browser: the page
// (client/index.html filled in like the server does, same CSP), the client modules straight from client/, the token
// probe, and the WebSocket (subprotocol rcanvas.v1) at /ws and /c/NAME/ws. What goes over the socket is up to the
// test: each accepted connection is handed to `onConnection(conn)`, which sends hello and frames with the helpers
// below and reads what the client sent (conn.messages: parsed JSON, oldest first).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { WebSocketServer } from 'ws';
import { root } from './lib.mjs';

const clientDir = path.join(root, 'client');
const TYPES = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html; charset=utf-8' };
// the real server's page policy (src/transport/http.c): a client change that needs more (a blob: worker, an
// inline script) fails here as it would there
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'";

export const MAGIC = 0x46434352;
export const CODEC_IDS = { jpeg: 1, png: 2, h264: 3, vp8: 4, vp9: 5, av1: 6, webp: 7 };
export const FLAGS = { lossless: 1, last: 2, refinement: 4, keyframe: 8 };

/** One binary message: the 56-byte little-endian header of docs/protocol.md (version 2 by default), then payload. */
export function frameMessage({ version = 2, codec, flags = 0, seq, frameWidth, frameHeight, x = 0, y = 0,
  w = frameWidth, h = frameHeight, tileIndex = 0, tileCount = 1, timestampUs = 0, rttUs = 0 }, payload) {
  const buf = Buffer.alloc(56 + payload.length);
  buf.writeUInt32LE(MAGIC, 0);
  buf.writeUInt8(version, 4);
  buf.writeUInt8(typeof codec === 'string' ? CODEC_IDS[codec] : codec, 5);
  buf.writeUInt16LE(flags, 6);
  buf.writeUInt32LE(seq, 8);
  buf.writeUInt16LE(tileIndex, 12);
  buf.writeUInt16LE(tileCount, 14);
  buf.writeBigInt64LE(BigInt(timestampUs), 16);
  for (const [o, v] of [[24, frameWidth], [28, frameHeight], [32, x], [36, y], [40, w], [44, h], [48, rttUs],
    [52, payload.length]]) buf.writeUInt32LE(v, o);
  Buffer.from(payload.buffer, payload.byteOffset, payload.length).copy(buf, 56);
  return buf;
}

/** The hello of protocol 2 for a codec (codec_string and color only for video codecs). */
export function helloMessage({ protocol = 2, width, height, codec, codecString, color, extra = {} }) {
  const m = {
    type: 'hello', protocol, canvas: '', title: 'video test', width, height, pixel_ratio: 1,
    codecs: ['h264', 'vp9', 'vp8', 'jpeg', 'png'], codec, encoder: codec, viewer_id: 1, active: true,
    max_in_flight: 2, max_message_bytes: 4096,
  };
  if (codecString) m.codec_string = codecString;
  if (color) m.color = color;
  return { ...m, ...extra };
}

export const BT601_LIMITED = { primaries: 'smpte170m', transfer: 'smpte170m', matrix: 'smpte170m', full_range: false };

/**
 * Starts the server on 127.0.0.1 (port 0: any free one). server.onConnection(conn) (settable at any time; the
 * option gives the first one) is called for each WebSocket:
 * conn = {ws, url (URL), codecs (the list in ?codecs=, or null), messages, send(obj|buffer), waitFor(pred, ms)}.
 * Returns {port, token, url (the page), connections, close()}.
 */
export async function startVideoServer({ token = 'T', onConnection = () => {} } = {}) {
  const connections = [];
  const self = { onConnection };
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const send = (status, type, body, csp = CSP) => {
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff',
        ...(csp ? { 'Content-Security-Policy': csp } : {}) });
      res.end(body);
    };
    if (u.pathname.startsWith('/client/')) {
      const name = u.pathname.slice('/client/'.length);
      const file = path.join(clientDir, name);
      if (!/^[A-Za-z0-9_.-]+$/.test(name) || !fs.existsSync(file)) return send(404, 'text/plain', 'not found');
      return send(200, TYPES[path.extname(name)] || 'application/octet-stream', fs.readFileSync(file));
    }
    const m = /^\/(?:c\/([A-Za-z0-9_-]{1,64})\/?)?$/.exec(u.pathname);
    if (m) {
      const t = u.searchParams.get('token');
      if (t == null) return send(401, 'text/plain', 'token required');
      if (t !== token) return send(403, 'text/plain', 'wrong token');
      const page = fs.readFileSync(path.join(clientDir, 'index.html'), 'utf8')
        .replace('{{TITLE}}', 'video test').replace('{{CANVAS}}', m[1] || '')
        // as http.c: the way back to the root for the page's relative URLs (rc_auth_root_prefix), no token cookie
        .replaceAll('{{ROOT}}', '../'.repeat((u.pathname.slice(1).match(/\//g) || []).length) || './')
        // no session here: the page goes by the ?token= of its own URL, as a page served by a Bearer token does
        .replace('{{SESSION_DIR}}', '').replace('{{SESSION_KEY}}', '').replace('{{SESSION}}', '');
      return send(200, TYPES['.html'], page);
    }
    // a page of the same origin without the client and without the CSP: the tests encode their video there
    if (u.pathname === '/blank') return send(200, TYPES['.html'], '<!doctype html><title>blank</title>', null);
    if (u.pathname === '/favicon.ico') return send(204, 'text/plain', '');
    send(404, 'text/plain', 'not found');
  });
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protos) => (protos.has('rcanvas.v1') ? 'rcanvas.v1' : false) });
  server.on('upgrade', (req, socket, head) => {
    const u = new URL(req.url, 'http://x');
    if (!/^\/(c\/[A-Za-z0-9_-]{1,64}\/)?ws$/.test(u.pathname) || u.searchParams.get('token') !== token) {
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const codecs = u.searchParams.get('codecs');
      const conn = {
        ws, url: u, codecs: codecs === null ? null : codecs.split(','), messages: [], closed: false,
        send(x) { if (ws.readyState === ws.OPEN) ws.send(Buffer.isBuffer(x) ? x : JSON.stringify(x)); },
        async waitFor(pred, ms = 10000, what = 'a message') {
          const t0 = Date.now();
          for (;;) {
            const hit = conn.messages.find(pred);
            if (hit) return hit;
            if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(conn.messages.slice(-8))}`);
            await new Promise((r) => setTimeout(r, 20));
          }
        },
      };
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        try { conn.messages.push(JSON.parse(data.toString())); } catch { conn.messages.push({ bad: data.toString() }); }
      });
      ws.on('close', () => { conn.closed = true; });
      connections.push(conn);
      self.onConnection(conn);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  return Object.assign(self, {
    port, token, connections, url: `http://127.0.0.1:${port}/?token=${token}`,
    close: () => new Promise((r) => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.close(() => r());
      server.closeAllConnections?.();
    }),
  });
}
