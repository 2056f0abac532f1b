// SPDX-License-Identifier: MIT
// nginx.test.mjs — rcanvas behind a reverse proxy that terminates TLS, in front of two rcanvas servers:
// Debian's nginx running deploy/nginx/rcanvas.conf, and HAProxy running deploy/haproxy/rcanvas.cfg, the very files
// docs/deploy.md shows. Each template is read from deploy/ and only its ports, names, paths and timeouts are
// replaced (fill(): every replacement must match, so the test fails when a template drifts from what it expects).
// Two rcanvas-demo processes stand for two hosts: A (--base-path /host-a, the still test scene) and B (--base-path
// /host-b, a player of one solid orange frame). Headless Chromium opens both through the proxy over https, on the
// name rcanvas.test (--host-resolver-rules; the certificate is made here with openssl, SAN rcanvas.test and
// 127.0.0.1), so the Host and Origin the servers see are the browser's, allowed by --allow-host/--allow-origin.
// Asserted: each path shows its own server's decoded pixels, a click reaches only the server whose page it was
// on, each WebSocket is logged by the proxy with status 101 and the right upstream, wrong tokens and a foreign Host
// are refused through the proxy, no token reaches the proxy's log, and a still scene stays connected (no
// reconnect) over an idle period longer than a deliberately short proxy timeout (6 s; rcanvas pings every 2 s),
// while the same still scene behind a 1 s timeout with only the 2 s heartbeat (--ping-ms 0) is cut and reconnects:
// the check that would catch a timeout too short.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { canvasPixel, launchBrowser, openPage, root, sleep, startDemo, stopProcess, until } from './lib.mjs';

const NGINX = '/usr/sbin/nginx';
const HAPROXY = '/usr/sbin/haproxy';
const haveNginx = fs.existsSync(NGINX);
const haveHaproxy = fs.existsSync(HAPROXY);
const NAME = 'rcanvas.test';                     // the public name, mapped to 127.0.0.1 in Chromium and in get()
const ORANGE = [255, 128, 0, 255];                // host B's frame
const MARKER = [255, 0, 255, 255];                // the frame player's click marker (examples/demo/frames.h)
const IDLE_MS = 10000;                            // longer than the short proxy timeout below
const SHORT_TIMEOUT = '6s';                       // the proxies' idle limit in this test (60s in the templates)

/** Reads deploy/FILE and applies the [from, to] replacements, each of which must occur in it. */
function fill(file, pairs) {
  let text = fs.readFileSync(path.join(root, 'deploy', file), 'utf8');
  for (const [from, to] of pairs) {
    assert.ok(text.includes(from), `deploy/${file} no longer contains "${from}": update the template or this test`);
    text = text.split(from).join(to);
  }
  return text;
}

/** n free ports, all different: each is held until all are taken (one at a time, a port closed may come back at
 *  once: a proxy's https and plain ports once did, and nginx refused the plain server on its ssl port). */
async function freePorts(n) {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = net.createServer();
      servers.push(s);
      await new Promise((resolve, reject) => { s.once('error', reject); s.listen(0, '127.0.0.1', resolve); });
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(() => resolve()))));
  }
}

function portOpen(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/** A solid-colour RGBA PNG (w × h), written with node:zlib (PNG: RFC 2083). */
function solidPng(w, h, rgba) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => { let c = 0xffffffff; for (const b of buf) c = crcTable[(c ^ b) & 255] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
  const chunk = (type, data) => {
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const c = Buffer.alloc(4); c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 6;   // 8 bits, RGBA
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 4).fill(Buffer.from(rgba))]);
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** GET https://NAME:port/p (or http with {plain}), the certificate not verified, Host NAME:port unless given:
 *  {status, headers, body}. With {upgrade}, a WebSocket handshake: status 101 when it was switched. */
function get(port, p, { host = `${NAME}:${port}`, upgrade = false, origin, plain = false } = {}) {
  const headers = { Host: host };
  if (origin) headers.Origin = origin;
  if (upgrade) Object.assign(headers, { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
    'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64'), 'Sec-WebSocket-Protocol': 'rcanvas.v1' });
  const mod = plain ? http : https;
  return new Promise((resolve, reject) => {
    const req = mod.request({ host: '127.0.0.1', port, path: p, headers, servername: plain ? undefined : NAME,
      rejectUnauthorized: false, agent: false });
    req.once('upgrade', (res, socket) => { socket.destroy(); resolve({ status: res.statusCode, headers: res.headers, body: '' }); });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.once('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error(`GET ${p}: no answer in 10 s`)));
    req.end();
  });
}

/** Spawns a proxy in the foreground; {proc, out(), stop()}. */
function startProxy(cmd, args, what) {
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  return {
    proc, what, out: () => out,
    stop: () => stopProcess(proc),
  };
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-nginx-'));
const cleanup = [];
let env = null;   // what the tests share, made once below when nginx is there

async function setUp() {
  // the test certificate: self-signed, CN and SAN 127.0.0.1, SAN rcanvas.test; HAProxy takes one combined PEM
  const cert = path.join(tmp, 'cert.pem'), key = path.join(tmp, 'key.pem'), combined = path.join(tmp, 'combined.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', `subjectAltName=IP:127.0.0.1,DNS:${NAME}`,
    '-keyout', key, '-out', cert], { stdio: 'pipe' });
  fs.writeFileSync(combined, fs.readFileSync(cert, 'utf8') + fs.readFileSync(key, 'utf8'), { mode: 0o600 });
  const framesDir = path.join(tmp, 'frames');
  fs.mkdirSync(framesDir);
  fs.writeFileSync(path.join(framesDir, 'orange.png'), solidPng(640, 480, ORANGE));

  const free = await freePorts(6);
  const ports = Object.fromEntries(['nginx', 'nginxHttp', 'short', 'shortHttp', 'haproxy', 'haproxyHttp'].map((k, i) => [k, free[i]]));
  // each server allows the public name and the origins the browser sends through each proxy
  const allow = ['--allow-host', NAME, '--ping-ms', '2000',
    ...[ports.nginx, ports.short, ports.haproxy].flatMap((p) => ['--allow-origin', `https://${NAME}:${p}`])];
  const tokenA = crypto.randomBytes(16).toString('hex'), tokenB = crypto.randomBytes(16).toString('hex');
  const a = await startDemo(['--scene', 'test', '--base-path', '/host-a', '--print-events', ...allow], { token: tokenA });
  cleanup.push(() => a.stop());
  const b = await startDemo(['--frames', framesDir, '--fps', '4', '--codec', 'png', '--refine-ms', '0',
    '--base-path', '/host-b', '--print-events', ...allow], { token: tokenB });
  cleanup.push(() => b.stop());
  // the negative control: a still scene with no WebSocket pings (only the 2 s heartbeat) behind a 1 s timeout
  const c = await startDemo(['--scene', 'test', '--base-path', '/host-a', ...allow, '--ping-ms', '0'], { token: tokenA });
  cleanup.push(() => c.stop());

  const nginxConf = (name, https, plainPort, portA, timeout) => {
    const dir = path.join(tmp, name);
    fs.mkdirSync(dir);
    const site = fill('nginx/rcanvas.conf', [
      ['example.org', NAME],
      ['listen 443 ssl;', `listen 127.0.0.1:${https} ssl;`],
      ['listen 80;', `listen 127.0.0.1:${plainPort};`],
      ['127.0.0.1:8081', `127.0.0.1:${portA}`],
      ['127.0.0.1:8082', `127.0.0.1:${b.port}`],
      [`/etc/letsencrypt/live/${NAME}/fullchain.pem`, cert],     // after example.org → NAME
      [`/etc/letsencrypt/live/${NAME}/privkey.pem`, key],
      ['/var/log/nginx/rcanvas.access.log', path.join(dir, 'access.log')],
      ['proxy_read_timeout 60s;', `proxy_read_timeout ${timeout};`],
      ['proxy_send_timeout 60s;', `proxy_send_timeout ${timeout};`],
    ]);
    fs.writeFileSync(path.join(dir, 'rcanvas.conf'), site);
    // what Debian's /etc/nginx/nginx.conf gives around conf.d/*.conf, with every path in the temp dir
    fs.writeFileSync(path.join(dir, 'nginx.conf'), [
      `pid ${dir}/nginx.pid;`, `error_log ${dir}/error.log;`, 'worker_processes 1;',
      'events { worker_connections 256; }',
      'http {', `  access_log ${dir}/other.log;`,
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
      `  include ${dir}/rcanvas.conf;`, '}', ''].join('\n'));
    return dir;
  };
  const startNginx = async (dir, port) => {
    const n = startProxy(NGINX, ['-p', dir, '-e', `${dir}/error.log`, '-c', `${dir}/nginx.conf`, '-g', 'daemon off;'], 'nginx');
    cleanup.push(() => n.stop());
    await until(async () => (n.proc.exitCode === null ? portOpen(port) : Promise.reject(new Error(`nginx exited: ${n.out()}`))),
      10000, 'nginx listening');
    return n;
  };
  const nginxDir = nginxConf('nginx', ports.nginx, ports.nginxHttp, a.port, SHORT_TIMEOUT);
  const shortDir = nginxConf('short', ports.short, ports.shortHttp, c.port, '1s');
  await startNginx(nginxDir, ports.nginx);
  await startNginx(shortDir, ports.short);

  let haproxy = null;
  if (haveHaproxy) {
    const cfg = path.join(tmp, 'haproxy.cfg');
    fs.writeFileSync(cfg, 'global\n    log stdout format raw local0\n\n' + fill('haproxy/rcanvas.cfg', [
      ['bind :443 ssl crt /etc/haproxy/certs/example.org.pem', `bind 127.0.0.1:${ports.haproxy} ssl crt ${combined}`],
      ['bind :80', `bind 127.0.0.1:${ports.haproxyHttp}`],
      ['127.0.0.1:8081', `127.0.0.1:${a.port}`],
      ['127.0.0.1:8082', `127.0.0.1:${b.port}`],
      ['timeout tunnel 60s', `timeout tunnel ${SHORT_TIMEOUT}`],
    ]));
    haproxy = startProxy(HAPROXY, ['-db', '-f', cfg], 'haproxy');
    cleanup.push(() => haproxy.stop());
    await until(async () => (haproxy.proc.exitCode === null ? portOpen(ports.haproxy)
      : Promise.reject(new Error(`haproxy exited: ${haproxy.out()}`))), 10000, 'haproxy listening');
  }
  const browser = await launchBrowser(['--ignore-certificate-errors', `--host-resolver-rules=MAP ${NAME} 127.0.0.1`]);
  cleanup.push(() => browser.close());
  return { a, b, c, tokenA, tokenB, ports, browser, haproxy, accessLog: path.join(nginxDir, 'access.log'),
    shortLog: path.join(shortDir, 'access.log') };
}

test.after(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
  fs.rmSync(tmp, { recursive: true, force: true });
});

const skipNginx = haveNginx ? false : `nginx is not installed (${NGINX}): apt-get install nginx (make deps installs it)`;
if (haveNginx) {
  try { env = await setUp(); } catch (err) {   // stop what did start: test.after does not run when this throws
    for (const f of cleanup.reverse()) await f().catch(() => {});
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

const pageUrl = (port, base, token) => `https://${NAME}:${port}${base}/?token=${token}&stats=1`;
const stats = (page) => page.evaluate(() => window.rcanvas.stats());
const events = (demo) => demo.lines.filter((l) => l.startsWith('event pointer_down')).length;
const readLog = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '');
/** A WebSocket's request line under base in a log: the page's own go under its session's secret path s/R/. */
const wsReq = (base, q = '"') => new RegExp(`${q}GET ${base}(/s/[0-9a-f]{32})?/ws HTTP/1\\.1${q} 101 `);

/** Opens host A's and host B's pages through the proxy on port; checks each shows its own server's pixels and
 *  that a click reaches only its own server. Leaves the pages closed. */
async function bothHosts(port, what) {
  const { a, b, tokenA, tokenB, browser } = env;
  const { page: pa } = await openPage(env.browser, pageUrl(port, '/host-a', tokenA));
  const { page: pb } = await openPage(browser, pageUrl(port, '/host-b', tokenB), { width: 640, height: 480 });
  try {
    for (const p of [pa, pb]) {
      assert.equal(await p.evaluate(() => location.protocol), 'https:');
      assert.equal(await p.evaluate(() => window.isSecureContext), true);
      assert.ok(!(await p.evaluate(() => location.search)).includes('token'), 'the token was traded for the session');
      assert.match(await p.evaluate(() => location.pathname), /^\/host-[ab]\/s\/[0-9a-f]{32}\/$/);
    }
    // A: the test scene, refined losslessly: its top-left quadrant is exactly red
    await until(async () => (await stats(pa)).refinements >= 1, 15000, `${what}: host A refined`);
    assert.deepEqual(await canvasPixel(pa, 20, 20), [255, 0, 0, 255]);
    assert.deepEqual(await canvasPixel(pa, 380, 20), [0, 255, 0, 255]);
    // B: the orange frame (PNG, exact), nothing of A's
    await until(async () => String(await canvasPixel(pb, 20, 20)) === String(ORANGE), 15000, `${what}: host B orange`);
    assert.deepEqual(await canvasPixel(pb, 600, 440), ORANGE);

    // a click on A's page reaches A only
    const a0 = events(a), b0 = events(b);
    await pa.mouse.click(100, 100);
    await until(() => events(a) > a0, 10000, `${what}: the click in A's server`);
    assert.equal(events(b), b0, 'the click on A did not reach B');
    // a click on B's page reaches B only, and shows: the player toggles its marker on B's frames. B's server
    // outlives this test (nginx's and HAProxy's share it), so the marker may be on already: the click turns it off.
    const had = String(await canvasPixel(pb, 192, 192)) === String(MARKER);
    await pb.mouse.click(500, 400);
    await until(() => events(b) > b0, 10000, `${what}: the click in B's server`);
    const want = had ? ORANGE : MARKER;
    await until(async () => String(await canvasPixel(pb, 192, 192)) === String(want), 10000,
      `${what}: B's marker ${had ? 'gone' : 'shown'}`);
    assert.deepEqual(await canvasPixel(pb, 20, 20), ORANGE, 'outside the marker B stays orange');
    assert.equal(events(a), a0 + 1, 'the click on B did not reach A');
    const sa = await stats(pa), sb = await stats(pb);
    console.log(`# ${what}: host A ${sa.framesShown} frame(s) ${sa.codec}, host B ${sb.framesShown} frame(s) ${sb.codec}`);
  } finally { await pa.close(); await pb.close(); }
}

test('nginx: /host-a/ and /host-b/ reach their own server over https and wss; each WebSocket logged 101', { skip: skipNginx }, async () => {
  await bothHosts(env.ports.nginx, 'nginx');
  // nginx logs a WebSocket when it ends: 101, the path without its query, and the upstream it went to
  const wsLine = (base, port) => readLog(env.accessLog).split('\n').find((l) =>
    wsReq(base).test(l) && l.endsWith(`upstream=127.0.0.1:${port}`));
  await until(() => wsLine('/host-a', env.a.port) && wsLine('/host-b', env.b.port), 10000, 'the 101 lines in access.log');
  const log = readLog(env.accessLog);
  assert.ok(!log.includes(env.tokenA) && !log.includes(env.tokenB), 'no token in nginx access log');
  // the page with its token: rcanvas' 303 to the session's path, then the page there
  assert.match(log, new RegExp(`"GET /host-a/ HTTP/1.1" 303 \\d+ [\\d.]+ upstream=127\\.0\\.0\\.1:${env.a.port}`));
  assert.match(log, new RegExp(`"GET /host-a/s/[0-9a-f]{32}/ HTTP/1.1" 200 \\d+ [\\d.]+ upstream=127\\.0\\.0\\.1:${env.a.port}`));
  console.log(`# nginx access.log: ${wsLine('/host-a', env.a.port)}`);
});

test('nginx: wrong tokens, a foreign Host and unknown paths are refused through nginx; http redirects to https', { skip: skipNginx }, async () => {
  const { ports, tokenA, tokenB } = env;
  const p = ports.nginx, origin = `https://${NAME}:${p}`;
  const ok = await get(p, `/host-a/?token=${tokenA}`);
  assert.equal(ok.status, 303);
  // the session cookie: Path is its server's base path and secret path, and Secure, since nginx says the browser
  // came over https (X-Forwarded-Proto): without it the browser would send it in clear text to http://NAME/host-a/s/…
  const R = /^s\/([0-9a-f]{32})\/$/.exec(ok.headers.location)[1];
  assert.match(ok.headers['set-cookie'][0],
    new RegExp(`^rcanvas_s=[0-9a-f]{32}; Path=/host-a/s/${R}/; HttpOnly; SameSite=Lax; Secure$`));
  // the page there, through nginx, by the cookie
  const cookie = ok.headers['set-cookie'][0].split(';')[0];
  const there = await new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: p, path: `/host-a/s/${R}/`, servername: NAME,
      rejectUnauthorized: false, agent: false, headers: { Host: `${NAME}:${p}`, Cookie: cookie } });
    req.once('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.once('error', reject);
    req.end();
  });
  assert.equal(there, 200);
  const direct = await get(env.a.port, `/host-a/?token=${tokenA}`, { plain: true, host: `127.0.0.1:${env.a.port}` });
  assert.ok(!direct.headers['set-cookie'][0].includes('Secure'), 'over plain http, straight to rcanvas: no Secure');
  const wrong = await get(p, '/host-a/?token=0123456789abcdef0123456789abcdef');
  assert.equal(wrong.status, 403);
  assert.match(wrong.body, /wrong token/);                     // rcanvas' answer, passed on by nginx
  assert.equal((await get(p, `/host-b/?token=${tokenA}`)).status, 403, "A's token is no good on B");
  assert.equal((await get(p, '/host-a/')).status, 401);
  // the WebSocket: the right token is switched (101) through nginx, a wrong one or another server's refused
  assert.equal((await get(p, `/host-a/ws?token=${tokenA}`, { upgrade: true, origin })).status, 101);
  assert.equal((await get(p, `/host-b/ws?token=${tokenB}`, { upgrade: true, origin })).status, 101);
  assert.equal((await get(p, `/host-a/ws?token=${tokenB}`, { upgrade: true, origin })).status, 403);
  assert.equal((await get(p, '/host-b/ws?token=0123456789abcdef0123456789abcdef', { upgrade: true, origin })).status, 403);
  // a page of another site: its Origin is refused (rcanvas closes an rcanvas.v1 client that has the token: 4403,
  // after a 101; without the subprotocol it is a plain 403)
  const foreign = await new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: p, path: `/host-a/ws?token=${tokenA}`, servername: NAME,
      rejectUnauthorized: false, agent: false, headers: { Host: `${NAME}:${p}`, Origin: 'https://evil.example',
        Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64') } });
    req.once('upgrade', (res, s) => { s.destroy(); resolve(res.statusCode); });
    req.once('response', (res) => { res.resume(); resolve(res.statusCode); });
    req.once('error', reject);
    req.end();
  });
  assert.equal(foreign, 403, 'a foreign Origin is refused through nginx');
  // DNS rebinding: nginx passes the browser's Host, so rcanvas' Host check still refuses a foreign name
  assert.equal((await get(p, `/host-a/?token=${tokenA}`, { host: 'evil.example' })).status, 403);
  assert.equal((await get(p, '/elsewhere/')).status, 404);
  // /host-a without the slash: nginx's 301 to /host-a/, the query kept
  const dir = await get(p, `/host-a?token=${tokenA}`);
  assert.equal(dir.status, 301);
  assert.equal(dir.headers.location, `https://${NAME}:${p}/host-a/?token=${tokenA}`);
  const plain = await get(ports.nginxHttp, '/host-a/', { plain: true, host: NAME });
  assert.equal(plain.status, 301);
  assert.equal(plain.headers.location, `https://${NAME}/host-a/`);
  // a token sent to the plain port is redirected, not kept in a log; the redirect names the configured host, not
  // the client's Host header (no open redirect when this server is the port's default)
  const plainTok = await get(ports.nginxHttp, `/host-a/?token=${tokenA}`, { plain: true, host: 'evil.example' });
  assert.equal(plainTok.status, 301);
  assert.equal(plainTok.headers.location, `https://${NAME}/host-a/?token=${tokenA}`);
  for (const log of ['access.log', 'other.log', 'error.log'])
    assert.ok(!readLog(path.join(tmp, 'nginx', log)).includes(tokenA), `nginx's ${log} holds the token`);
});

test(`nginx and HAProxy: a still scene stays connected over ${IDLE_MS / 1000} s idle behind a ${SHORT_TIMEOUT} proxy timeout; behind 1 s without pings it is cut`, { skip: skipNginx }, async () => {
  const { a, tokenA, ports, browser } = env;
  const viewers = [['nginx', ports.nginx], ...(env.haproxy ? [['haproxy', ports.haproxy]] : [])];
  const pages = [];
  try {
    for (const [what, port] of viewers) pages.push([what, (await openPage(browser, pageUrl(port, '/host-a', tokenA))).page]);
    const short = (await openPage(browser, pageUrl(ports.short, '/host-a', tokenA))).page;
    pages.push(['nginx 1s', short]);
    for (const [what, pg] of pages) await until(async () => (await stats(pg)).refinements >= 1, 15000, `${what}: refined`);
    const before = await Promise.all(pages.map(([, pg]) => stats(pg)));
    const wsLines = () => readLog(env.accessLog).split('\n').filter((l) => wsReq('/host-a').test(l)).length;
    const open0 = wsLines();
    await sleep(IDLE_MS);
    for (let i = 0; i < viewers.length; i++) {
      const [what, pg] = pages[i];
      const s = await stats(pg);
      assert.equal(await pg.evaluate(() => window.rcanvas.connected), true, `${what}: still connected`);
      assert.equal(s.reconnects, before[i].reconnects, `${what}: no reconnect over the idle period`);
      assert.equal(s.reconnects, 0, `${what}: never reconnected`);
      assert.equal(s.framesShown, before[i].framesShown, `${what}: the scene was still (no frames kept it alive)`);
    }
    assert.equal(wsLines(), open0, 'nginx has not closed the WebSocket (it logs one when it ends)');
    // the control: behind 1 s, with only the heartbeat every 2 s, nginx cuts the idle WebSocket and the page reconnects
    const cut = await stats(short);
    assert.ok(cut.reconnects >= 1, `behind a 1 s timeout the page reconnected (${cut.reconnects})`);
    assert.match(readLog(env.shortLog), wsReq('/host-a'));
    console.log(`# idle ${IDLE_MS} ms: ${viewers.map(([w]) => w).join(', ')} behind ${SHORT_TIMEOUT}: 0 reconnects; ` +
      `nginx behind 1 s with --ping-ms 0: ${cut.reconnects} reconnect(s)`);
  } finally { for (const [, pg] of pages) await pg.close(); }
  // the WebSocket through nginx lasted the whole idle period: its log line's $request_time
  const times = await until(() => {
    const t = readLog(env.accessLog).split('\n').filter((l) => wsReq('/host-a').test(l))
      .map((l) => Number(l.split(' ').at(-2)));
    return t.some((x) => x * 1000 >= IDLE_MS) && t;
  }, 10000, 'the long WebSocket in access.log');
  console.log(`# nginx: WebSocket request times ${times.join(', ')} s (timeout ${SHORT_TIMEOUT})`);
});

test('HAProxy: /host-a/ and /host-b/ reach their own server; 101 logged per backend; wrong token refused',
  { skip: skipNginx || (haveHaproxy ? false : `haproxy is not installed (${HAPROXY}): apt-get install haproxy`) }, async () => {
    const { haproxy, ports, tokenA, tokenB } = env;
    await bothHosts(ports.haproxy, 'haproxy');
    const p = ports.haproxy, origin = `https://${NAME}:${p}`;
    const ok = await get(p, `/host-b/?token=${tokenB}`);
    assert.equal(ok.status, 303);
    assert.match(ok.headers['set-cookie'][0], /; Path=\/host-b\/s\/[0-9a-f]{32}\/; HttpOnly; SameSite=Lax; Secure$/);
    assert.equal((await get(p, '/host-a/?token=0123456789abcdef0123456789abcdef')).status, 403);
    assert.equal((await get(p, `/host-b/ws?token=${tokenA}`, { upgrade: true, origin })).status, 403);
    assert.equal((await get(p, `/host-b/ws?token=${tokenB}`, { upgrade: true, origin })).status, 101);
    assert.equal((await get(p, `/host-a/?token=${tokenA}`, { host: 'evil.example' })).status, 403);
    assert.equal((await get(p, '/elsewhere/')).status, 404);
    const dir = await get(p, `/host-a?token=${tokenA}`);   // rcanvas' own 301 (HAProxy passes /host-a on)
    assert.equal(dir.status, 301);
    assert.equal(dir.headers.location, `/host-a/?token=${tokenA}`);
    assert.equal((await get(ports.haproxyHttp, '/host-a/', { plain: true, host: NAME })).status, 301);
    const wsLine = (base, backend) => haproxy.out().split('\n').find((l) =>
      wsReq(base, '').test(l) && l.includes(` ${backend}/`));
    await until(() => wsLine('/host-a', 'rcanvas_host_a') && wsLine('/host-b', 'rcanvas_host_b'), 10000, 'the 101 lines in the log');
    assert.ok(!haproxy.out().includes(tokenA) && !haproxy.out().includes(tokenB), 'no token in the HAProxy log');
    console.log(`# haproxy log: ${wsLine('/host-b', 'rcanvas_host_b')}`);
  });
