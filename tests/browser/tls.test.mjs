// SPDX-License-Identifier: MIT
// tls.test.mjs — TLS end to end. rcanvas-demo --tls self-signed makes a certificate in a temporary
// --tls-dir (key 0600), prints its SHA-256 fingerprint before an https URL, and that fingerprint is the one the
// port serves (read here with node:tls); a second start reuses it. Headless Chromium opens the page under a name
// that is not localhost (rcanvas.test, mapped to 127.0.0.1 with --host-resolver-rules), over https, so the page is
// a secure context: WebCodecs is there, `--codec auto` puts the viewer on H.264, frames are shown, and the test
// scene's refinement is exact. --ignore-certificate-errors is used in this test only (the certificate is
// self-signed). With --tls-cert/--tls-key the same files serve the page (200) and plain http on the port gets 400.
// The demo accepts Host rcanvas.test by `--allow-host rcanvas.test` (a loopback bind takes only localhost names
// otherwise: the DNS-rebinding check).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { cleanup, canvasPixel, launchBrowser, startDemo, until } from './lib.mjs';

const tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-tls-'));
// a throw here runs no after hook: the dir goes with it
const browser = await launchBrowser(['--ignore-certificate-errors', '--host-resolver-rules=MAP rcanvas.test 127.0.0.1'])
  .catch((err) => { fs.rmSync(tlsDir, { recursive: true, force: true }); throw err; });
test.after(async () => { await browser.close(); fs.rmSync(tlsDir, { recursive: true, force: true }); });

/** The SHA-256 fingerprint of the certificate served on 127.0.0.1:port ("AB:CD:…"). */
function servedFingerprint(port) {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.once('error', reject);
  });
}

/** GET url (http or https, certificate not verified) with headers: {status, body, headers}. */
function get(url, headers = {}) {
  const mod = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    mod.get(url, { rejectUnauthorized: false, headers }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }));
    }).once('error', reject);
  });
}

const printedFingerprint = (demo) => {
  const line = demo.lines.find((l) => l.includes('certificate SHA-256 fingerprint'));
  return line && line.split('fingerprint ')[1];
};

test('--tls self-signed: the printed fingerprint is the served one, and the certificate is kept', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--tls', 'self-signed', '--tls-dir', tlsDir]);
  defer(() => demo.stop());
  let fp;
  try {
    assert.match(demo.url, /^https:\/\/127\.0\.0\.1:\d+\/\?token=/);
    fp = printedFingerprint(demo);
    assert.match(fp || '', /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    assert.equal(await servedFingerprint(demo.port), fp);
    assert.ok(demo.lines.some((l) => l.includes(`made a self-signed certificate ${tlsDir}/cert.pem`)));
    assert.equal(fs.statSync(path.join(tlsDir, 'key.pem')).mode & 0o777, 0o600);
  } finally { await demo.stop(); }
  const again = await startDemo(['--scene', 'test', '--tls', 'self-signed', '--tls-dir', tlsDir]);
  try {
    assert.ok(again.lines.some((l) => l.includes('using the self-signed certificate')));
    assert.equal(printedFingerprint(again), fp);
    assert.equal(await servedFingerprint(again.port), fp);
  } finally { await again.stop(); }
});

test('https on a non-localhost name: a secure context, WebCodecs, H.264 frames with --codec auto', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo(['--scene', 'test', '--codec', 'auto', '--refine-ms', '500',
    '--tls', 'self-signed', '--tls-dir', tlsDir, '--allow-host', 'rcanvas.test']);
  defer(() => demo.stop());
  const page = await browser.newPage({ viewport: { width: 400, height: 300 } });
  try {
    const url = demo.url.replace('127.0.0.1', 'rcanvas.test') + '&stats=1';
    assert.ok(url.startsWith('https://rcanvas.test:'));
    await page.goto(url);
    assert.equal(await page.evaluate(() => location.protocol), 'https:');
    assert.equal(await page.evaluate(() => window.isSecureContext), true);
    assert.equal(await page.evaluate(() => typeof VideoDecoder), 'function');
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected over wss');
    const stats = () => page.evaluate(() => window.rcanvas.stats());
    await until(async () => (await stats()).framesShown >= 1, 10000, 'a frame');
    const s = await stats();
    assert.equal(s.codec, 'h264', `the viewer decodes video here (codec ${s.codec}, videoOff ${s.videoOff})`);
    assert.ok(s.codecsOffered.includes('h264'), `offered ${s.codecsOffered}`);
    assert.ok(!s.videoOff, `videoOff: ${s.videoOff}`);
    // the still scene is refined losslessly: the red quadrant is exact
    await until(async () => (await stats()).refinements >= 1, 10000, 'the lossless refinement');
    assert.deepEqual(await canvasPixel(page, 20, 20), [255, 0, 0, 255]);
    console.log(`# https://rcanvas.test: ${s.framesShown} frame(s) as ${s.codec}, then refined`);
  } finally { await page.close(); await demo.stop(); }
});

test('--tls-cert/--tls-key serve the page over https; plain http on that port gets 400', async () => {
  const demo = await startDemo(['--scene', 'test', '--tls-cert', path.join(tlsDir, 'cert.pem'),
    '--tls-key', path.join(tlsDir, 'key.pem')]);
  try {
    // the page's token is traded for the session (303), whose cookie is Secure over TLS; the page comes by it
    const moved = await get(demo.url);
    assert.equal(moved.status, 303);
    assert.match(moved.headers['set-cookie'][0], /^rcanvas_s=[0-9a-f]{32}; Path=\/s\/[0-9a-f]{32}\/; HttpOnly; SameSite=Lax; Secure$/);
    const ok = await get(new URL(moved.headers.location, demo.url).href,
                         { Cookie: moved.headers['set-cookie'][0].split(';')[0] });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /<canvas|rcanvas/);
    const plain = await get(demo.url.replace('https:', 'http:'));
    assert.equal(plain.status, 400);
    assert.match(plain.body, /this server speaks https/);
    assert.ok(!plain.body.includes('rcanvas.js'), 'the page is not served over plain http');
  } finally { await demo.stop(); }
});
