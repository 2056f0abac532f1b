// SPDX-License-Identifier: MIT
// paint.test.mjs — issue 17.4, paint-over: an H.264 pan over a dense 1080p plot (rcanvas-test-pan) stops; what a
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
import { startDemo, until, sleep, buildDir } from './lib.mjs';
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
    if (h.flags & 4) v.refines.push({ t, seq: h.seq, last: h.last });
    else if (h.video) {
      v.video.push({ t, seq: h.seq, bytes: Buffer.from(u8.subarray(HEADER_BYTES)) });
      if (h.flags & 8) v.keyframes++;
    }
    if (h.last) ws.send(JSON.stringify({ type: 'ack', seq: h.seq }));
  });
  v.opened = new Promise((resolve, reject) => { ws.on('open', resolve); ws.on('error', reject); });
  return v;
}

async function stopAndScore(rateMbps) {
  const dump = path.join(tmp, `stop-${rateMbps}.rgba`);
  const app = await startDemo(['--dump', dump, '--start-ms', '1500', '--steps', '45'],
                              { program: path.join(buildDir, 'rcanvas-test-pan') });
  const link = await startShaper({ target: app.port, rateMbps, delayMs: 20 });
  const v = recorder(link.port, app.token);
  try {
    await v.opened;
    await until(() => app.lines.some((l) => l.startsWith('pan stop')), 20000, 'the pan to stop');
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
    const sharp = after.find((p) => p.db >= 38);
    const refine = v.refines.find((r) => r.seq === stopSeq && r.last);
    const res = { stopDb: after[0].db, best: Math.max(...after.map((p) => p.db)), sharpMs: sharp ? sharp.ms : Infinity,
                  losslessMs: refine.t - t0, paints: after.length - 1, linkKbps: linkAtStop };
    console.log(`# ${rateMbps} Mbit/s: last motion frame ${res.stopDb} dB; then ` +
                after.slice(1).map((p) => `${p.ms.toFixed(0)} ms ${p.kB.toFixed(1)} kB ${p.db} dB`).join(', ') +
                `; sharp (>= 38 dB) at ${res.sharpMs.toFixed(0)} ms, lossless at ${res.losslessMs.toFixed(0)} ms; link target ` +
                `${res.linkKbps} kbit/s when the pan stopped`);
    return res;
  } finally {
    v.ws.close();
    await link.close();
    await app.stop();
  }
}

test('H.264 pan 1080p stops through 20 Mbit/s: sharp (>= 38 dB Y PSNR) within 500 ms, lossless within 1500 ms', async () => {
  const r = await stopAndScore(20);
  assert.ok(r.stopDb < 38, `the motion itself is lossy at this rate (${r.stopDb} dB): nothing to show otherwise`);
  // The paint-over comes where a 2 bit/px frame crosses the link's target within 300 ms (13.8 Mbit/s at 1080p). A
  // machine too loaded to push the pan through the shaper measures less: then the rule is that none comes, and
  // the refinement still does (the cause is asserted, not the machine's speed).
  if (r.linkKbps > 0 && r.linkKbps < 13800) {
    console.log(`# the link measured ${r.linkKbps} kbit/s (a loaded machine): the no-paint rule is what holds`);
    assert.equal(r.paints, 0, 'no paint frame on a link measured too slow for one');
    assert.ok(r.losslessMs <= 3000, `lossless after ${r.losslessMs.toFixed(0)} ms > 3000`);
    return;
  }
  assert.ok(r.paints >= 1, 'a paint-over came');
  assert.ok(r.sharpMs <= 500, `sharp after ${r.sharpMs.toFixed(0)} ms > 500 (best ${r.best} dB)`);
  assert.ok(r.losslessMs <= 1500, `lossless after ${r.losslessMs.toFixed(0)} ms > 1500`);
});

// On 4 Mbit/s a paint frame of this plot (~470 kB) would hold the link for 1 s (canvas_refine.c, RC_PAINT_MAX_US):
// none is sent, and the lossless refinement, which comes sooner without it, is what sharpens the picture.
test('H.264 pan 1080p stops through 4 Mbit/s: no paint-over that would hold the link; lossless within 3000 ms', async () => {
  const r = await stopAndScore(4);
  assert.ok(r.stopDb < 38, `the motion itself is lossy at this rate (${r.stopDb} dB): nothing to show otherwise`);
  assert.equal(r.paints, 0, 'no paint frame on a link it would hold for a second');
  assert.ok(r.losslessMs <= 3000, `lossless after ${r.losslessMs.toFixed(0)} ms > 3000`);
});
