// SPDX-License-Identifier: MIT
// paint.test.mjs — paint-over: an H.264 pan over a dense 1080p plot (rcanvas-test-pan) stops; what a
// raw viewer behind a shaped link (shaper.mjs) received is decoded by openh264's own decoder
// (rcanvas-test-h264-psnr) and scored against the last frame (Y PSNR), packet by packet, with the time each packet's
// last byte came; the lossless refinement (flag 4) is timed too. Times are from the moment the viewer received the
// last motion packet (the link has drained by then: the paint-over is what follows). Bounds are generous for a
// loaded 2-core machine; the figures of a run are printed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import WebSocket from 'ws';
import { cleanup, startDemo, until, sleep, buildDir } from './lib.mjs';
import { encoderSample, encoderWindow, showEncoder } from './encoder.mjs';
import { startShaper } from './shaper.mjs';
import { parseFrameHeader, HEADER_BYTES } from '../../client/protocol.js';

let tmp;
before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-paint-')); });
after(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }); });

// A raw H.264 viewer that keeps every video packet (payload after the header) with its arrival time and seq, acks
// each frame when its last tile is in, and times the refinements.
function recorder(port, token) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${token}&codecs=h264`,
                           { headers: { Origin: `http://127.0.0.1:${port}` } });
  const v = { video: [], refines: [], keyframes: 0, ws, link: null };
  ws.on('message', (data, isBinary) => {
    if (!isBinary) {
      const m = JSON.parse(data.toString());
      if (m.type === 'link') v.link = m;
      else if (m.link) v.link = m.link;
      return;
    }
    const u8 = new Uint8Array(data);
    const h = parseFrameHeader(u8);
    const t = performance.now();
    if (h.flags & 4) v.refines.push({ t, seq: h.seq, last: h.last, bytes: data.length });
    else if (h.video) {
      v.video.push({ t, seq: h.seq, bytes: Buffer.from(u8.subarray(HEADER_BYTES)) });
      if (h.flags & 8) v.keyframes++;
    }
    if (h.last) ws.send(JSON.stringify({ type: 'ack', seq: h.seq }));
  });
  v.opened = new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  return v;
}

async function stopAndScore(t, rateMbps) {
  const defer = cleanup(t);
  const dump = path.join(tmp, `stop-${rateMbps}.rgba`);
  const app = await startDemo(['--dump', dump, '--start-ms', '1500', '--steps', '45'],
                              { program: path.join(buildDir, 'rcanvas-test-pan') });
  defer(() => app.stop());
  const link = await startShaper({ target: app.port, rateMbps, delayMs: 20 });
  defer(() => link.close());
  const v = recorder(link.port, app.token);
  defer(() => v.ws.close());
  await v.opened;
  const e0 = await encoderSample(app);   // the pan's encodes: how fast this machine encodes it now
  await until(() => app.lines.some((l) => l.startsWith('pan stop')), 20000, 'the pan to stop');
  const enc = encoderWindow(e0, await encoderSample(app));
  const stopSeq = Number(app.lines.find((l) => l.startsWith('pan stop')).match(/seq=(\d+)/)[1]);
  const linkAtStop = v.link ? v.link.target_kbps : 0; // what the paint rule weighs (canvas_refine.c)
  await until(() => v.refines.some((r) => r.seq === stopSeq && r.last), 15000, 'the lossless refinement');
  await sleep(300);
  const stream = path.join(tmp, `stream-${rateMbps}.bin`);
  fs.writeFileSync(stream, Buffer.concat(v.video.flatMap((p) => {
    const n = Buffer.alloc(4); n.writeUInt32LE(p.bytes.length); return [n, p.bytes];
  })));
  const psnr = execFileSync(path.join(buildDir, 'rcanvas-test-h264-psnr'), [dump, stream]).toString()
    .trim().split('\n').map((l) => Number(l.split(' ')[1]));
  const first = v.video.findIndex((p) => p.seq === stopSeq);      // the last motion frame
  assert.ok(first >= 0, 'the viewer got the last motion frame');
  const t0 = v.video[first].t;
  const after = v.video.slice(first).map((p, i) => ({ ms: p.t - t0, kB: p.bytes.length / 1e3, db: psnr[first + i] }));
  const sharpAt = after.findIndex((p) => p.db >= 38);
  const sharp = after[sharpAt];
  const refine = v.refines.find((r) => r.seq === stopSeq && r.last);
  // what the link itself takes: the bytes that crossed it after the last motion frame, up to the sharp paint frame
  // and up to the end of the lossless refinement (its tiles, and the paint frames before them), at its rate
  const linkMs = (bytes) => bytes * 8 / (rateMbps * 1e3);
  const kBTo = (n) => after.slice(1, n + 1).reduce((sum, p) => sum + p.kB, 0);
  const refineKB = v.refines.filter((r) => r.seq === stopSeq).reduce((sum, r) => sum + r.bytes / 1e3, 0);
  const res = { stopDb: after[0].db, best: Math.max(...after.map((p) => p.db)), sharpMs: sharp ? sharp.ms : Infinity,
                losslessMs: refine.t - t0, paints: after.length - 1, linkKbps: linkAtStop, enc,
                sharpPaints: sharp ? sharpAt : 0, sharpLinkMs: sharp ? linkMs(kBTo(sharpAt) * 1e3) : 0,
                losslessLinkMs: linkMs((kBTo(after.length - 1) + refineKB) * 1e3) };
  console.log(`# ${rateMbps} Mbit/s: last motion frame ${res.stopDb} dB; then ` +
              after.slice(1).map((p) => `${p.ms.toFixed(0)} ms ${p.kB.toFixed(1)} kB ${p.db} dB`).join(', ') +
              `; sharp (>= 38 dB) at ${res.sharpMs.toFixed(0)} ms (${res.sharpLinkMs.toFixed(0)} ms of it on the link), ` +
              `lossless (${refineKB.toFixed(0)} kB) at ${res.losslessMs.toFixed(0)} ms (${res.losslessLinkMs.toFixed(0)} ms ` +
              `on the link); link target ${res.linkKbps} kbit/s when the pan stopped; the pan's ${showEncoder(enc)}`);
  return res;
}

// The paint-over's and the refinement's times are what the rules wait (RC_PAINT_WAIT_MIN_US after the last new
// frame; the canvas's refine_ms, 300 ms), what the link takes for the bytes that crossed it first (measured here
// per run), and what the encoder takes: that part depends on the machine's load, so it is taken from the pan's own
// encodes in this run (/metrics: ms per encode). The bounds are the (500 and 1500 ms) on a machine that
// encodes the pan as an idle one does, and grow only by the encoder's measured time; a paint frame or refinement
// held back by anything else (a wait, the link, an ack) fails as before.
// the pan's encode on the idle 2-core machine (ms, openh264, 1080p): 52-64 ms were measured at load 5-6 there
const PAN_IDLE_MS = 20;
const loadAllowance = (enc, idleMs) => Math.max(0, enc.msPerFrame / PAN_IDLE_MS - 1) * idleMs;

test('H.264 pan 1080p stops through 20 Mbit/s: sharp (>= 38 dB Y PSNR) within 500 ms, lossless within 1500 ms', async (t) => {
  const r = await stopAndScore(t, 20);
  assert.ok(r.stopDb < 38, `the motion itself is lossy at this rate (${r.stopDb} dB): nothing to show otherwise`);
  // The paint-over comes where a 2 bit/px frame crosses the link's target within 300 ms (13.8 Mbit/s at 1080p). A
  // machine too loaded to push the pan through the shaper measures less: then the rule is that none comes, and
  // the refinement still does (the cause is asserted, not the machine's speed).
  if (r.linkKbps > 0 && r.linkKbps < 13800) {
    console.log(`# the link measured ${r.linkKbps} kbit/s (a loaded machine): the no-paint rule is what holds`);
    assert.equal(r.paints, 0, 'no paint frame on a link measured too slow for one');
    const bound = 3000 + loadAllowance(r.enc, 3000 - r.losslessLinkMs);
    assert.ok(r.losslessMs <= bound, `lossless after ${r.losslessMs.toFixed(0)} ms > ${bound.toFixed(0)} (${showEncoder(r.enc)})`);
    return;
  }
  assert.ok(r.paints >= 1, 'a paint-over came');
  assert.ok(Number.isFinite(r.sharpMs), `no paint frame was sharp (best ${r.best} dB)`);
  assert.ok(r.sharpMs < r.losslessMs, `the paint-over sharpens the picture before the refinement (${r.sharpMs.toFixed(0)} ms, ` +
            `lossless ${r.losslessMs.toFixed(0)} ms)`);
  const sharpBound = 500 + loadAllowance(r.enc, 500 - r.sharpLinkMs);
  assert.ok(r.sharpMs <= sharpBound, `sharp after ${r.sharpMs.toFixed(0)} ms > ${sharpBound.toFixed(0)} ` +
            `(${r.sharpLinkMs.toFixed(0)} ms on the link, best ${r.best} dB, ${showEncoder(r.enc)})`);
  const losslessBound = 1500 + loadAllowance(r.enc, 1500 - r.losslessLinkMs);
  assert.ok(r.losslessMs <= losslessBound, `lossless after ${r.losslessMs.toFixed(0)} ms > ${losslessBound.toFixed(0)} ` +
            `(${r.losslessLinkMs.toFixed(0)} ms on the link, ${showEncoder(r.enc)})`);
});

// On 4 Mbit/s a paint frame of this plot (~470 kB) would hold the link for 1 s (canvas_refine.c, RC_PAINT_MAX_US):
// none is sent, and the lossless refinement, which comes sooner without it, is what sharpens the picture.
test('H.264 pan 1080p stops through 4 Mbit/s: no paint-over that would hold the link; lossless within 3000 ms', async (t) => {
  const r = await stopAndScore(t, 4);
  assert.ok(r.stopDb < 38, `the motion itself is lossy at this rate (${r.stopDb} dB): nothing to show otherwise`);
  assert.equal(r.paints, 0, 'no paint frame on a link it would hold for a second');
  const losslessBound = 3000 + loadAllowance(r.enc, 3000 - r.losslessLinkMs);
  assert.ok(r.losslessMs <= losslessBound, `lossless after ${r.losslessMs.toFixed(0)} ms > ${losslessBound.toFixed(0)} ` +
            `(${r.losslessLinkMs.toFixed(0)} ms on the link, ${showEncoder(r.enc)})`);
});
