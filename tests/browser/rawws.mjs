// SPDX-License-Identifier: MIT
// rawws.mjs — a raw TCP client for the bounds tests (bounds.test.mjs): plain HTTP requests written byte by byte,
// and a minimal WebSocket client (RFC 6455) that can also misbehave: send unmasked frames, a 1-byte close payload,
// or never read at all. Only what the tests need; frames from the server are parsed whole.
import net from 'node:net';
import crypto from 'node:crypto';

/** Sends `raw` to 127.0.0.1:port; resolves {status, head, ms, closed} when a status line came or the socket closed
 * (timeoutMs: then status 0). `head` is the response's header block. */
export function httpRaw(port, raw, timeoutMs = 5000) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const text = buf.toString('latin1');
      const m = text.match(/^HTTP\/1\.[01] (\d{3})/);
      const end = text.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0, head: end >= 0 ? text.slice(0, end) : text, ms: Date.now() - t0, closed });
      s.destroy();
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.indexOf('\r\n\r\n') >= 0) finish(false);
    });
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
    s.write(raw);
  });
}

/** One WebSocket frame: fin, opcode, payload; masked with a random key unless mask === false. */
export function frame(opcode, payload, { mask = true, fin = true } = {}) {
  const p = Buffer.isBuffer(payload) ? payload : Buffer.from(payload ?? '');
  const len = p.length;
  const ext = len < 126 ? 0 : len < 65536 ? 2 : 8;
  const h = Buffer.alloc(2 + ext + (mask ? 4 : 0));
  h[0] = (fin ? 0x80 : 0) | opcode;
  h[1] = (mask ? 0x80 : 0) | (len < 126 ? len : len < 65536 ? 126 : 127);
  if (ext === 2) h.writeUInt16BE(len, 2);
  if (ext === 8) h.writeBigUInt64BE(BigInt(len), 2);
  if (!mask) return Buffer.concat([h, p]);
  const key = crypto.randomBytes(4);
  key.copy(h, 2 + ext);
  const out = Buffer.from(p);
  for (let i = 0; i < out.length; i++) out[i] ^= key[i & 3];
  return Buffer.concat([h, out]);
}

/**
 * Opens a WebSocket to ws://127.0.0.1:port/path. Resolves {status} (not 101: refused) or a client:
 * {sock, status, messages (parsed frames: {opcode, payload}), closeFrame ({code, reason} once one came),
 * closed (TCP closed), send(buf), text(str), waitFor(pred, ms)}. With read: false the socket is paused right
 * after the handshake and never read again (a stuck viewer).
 */
export function wsOpen(port, path, { read = true, origin } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const key = crypto.randomBytes(16).toString('base64');
    let buf = Buffer.alloc(0);
    let upgraded = false;
    const c = { sock: s, status: 0, messages: [], closeFrame: null, closed: false };
    c.send = (b) => s.write(b);
    c.text = (str) => s.write(frame(1, str));
    c.waitFor = async (pred, ms = 10000) => {
      const t0 = Date.now();
      while (Date.now() - t0 < ms) {
        if (pred(c)) return true;
        await new Promise((r) => setTimeout(r, 20));
      }
      return pred(c);
    };
    const parse = () => {
      for (;;) {
        if (buf.length < 2) return;
        let len = buf[1] & 0x7f, off = 2;
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
        if (buf.length < off + len) return;
        const opcode = buf[0] & 0x0f, payload = buf.subarray(off, off + len);
        buf = buf.subarray(off + len);
        c.messages.push({ opcode, payload });
        if (opcode === 9 && c.answerPings !== false) s.write(frame(10, payload)); // pong, as a browser does
        if (opcode === 8 && !c.closeFrame) {
          c.closeFrame = { code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005,
                           reason: payload.subarray(2).toString() };
          s.write(frame(8, payload.subarray(0, 2))); // the closing handshake's answer, as a browser does
        }
      }
    };
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        c.status = Number((head.match(/^HTTP\/1\.[01] (\d{3})/) || [])[1] || 0);
        buf = buf.subarray(end + 4);
        upgraded = true;
        if (c.status !== 101) { resolve(c); s.destroy(); return; }
        if (!read) s.pause();
        resolve(c);
      }
      parse();
    });
    s.on('close', () => { c.closed = true; if (!upgraded) resolve(c); });
    s.on('error', () => {});
    s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
            (origin ? `Origin: ${origin}\r\n` : '') + '\r\n');
  });
}

/** VmRSS of a process in MiB (Linux /proc). */
export async function rssMiB(pid) {
  const { readFile } = await import('node:fs/promises');
  const st = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(st.match(/VmRSS:\s+(\d+) kB/)[1]) / 1024;
}
