// SPDX-License-Identifier: MIT
// janus.mjs — Janus as the SFU of an rcanvas canvas, for the tests and `make bench-sfu`: writes a Janus
// configuration from the templates in deploy/janus/ into a temp dir (free ports, loopback only), starts Debian's
// janus on it, waits until its HTTP API answers (GET /janus/info) and stops it again (SIGTERM, then SIGKILL).
//
//   const j = await startJanus();          // {url: 'http://127.0.0.1:P/janus', videoPort, rtcpPort, mountpoint, stop()}
//   ... rcanvas-demo --rtp-out 127.0.0.1:${j.videoPort} ...
//   await j.stop();
//
// Only the streaming plugin and the HTTP transport are loaded: the config's plugin and transport folders are
// folders of symlinks to those two of Debian's (/usr/lib/<arch>/janus/...), the event handler and logger folders
// empty ones.
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { killOnExit, root, sleep, stopProcess } from './lib.mjs';

export const JANUS_BIN = process.env.JANUS || '/usr/bin/janus';
export const JANUS_JS = '/usr/share/javascript/janus-gateway/janus.js';          // libjs-janus-gateway
export const ADAPTER_JS = '/usr/share/javascript/webrtc-adapter/adapter.js';     // libjs-webrtc-adapter
export const TEMPLATES = path.join(root, 'deploy', 'janus');

// Chromium's flags for WebRTC with a Janus on the same host (headless): its host candidates as IP addresses, not
// the mDNS names (<uuid>.local) it hands out by default (WebRtcHideLocalIpsWithMdns), which Janus ignores
// (ignore_mdns in janus.jcfg: resolving them would need a multicast DNS lookup); without the flag ICE still
// connects, but only through the peer-reflexive candidate Janus learns from the browser's first check.
// --allow-loopback-in-peer-connection is not needed: Janus's ICE (libnice) never gathers loopback addresses, so a
// browser's 127.0.0.1 candidate would have no partner; both sides use the host's interface address (the packets
// stay in this host's kernel all the same). Muted video plays without a gesture: no autoplay flag either.
export const WEBRTC_LOCAL_ARGS = ['--disable-features=WebRtcHideLocalIpsWithMdns'];

/** The interface Janus's ICE uses here: the first with an IPv4 address other than loopback ({name, address}),
 *  or null (then Janus has no candidate to offer: libnice skips loopback). */
export function iceInterface() {
  for (const [name, addrs] of Object.entries(os.networkInterfaces()))
    for (const a of addrs || []) if (a.family === 'IPv4' && !a.internal) return { name, address: a.address };
  return null;
}

/** Where Debian keeps Janus's plugins: /usr/lib/<multiarch>/janus, or null when janus is not installed. */
export function janusLibDir() {
  if (!fs.existsSync(JANUS_BIN)) return null;
  for (const base of ['/usr/lib', '/usr/lib64']) {
    let entries = [];
    try { entries = fs.readdirSync(base); } catch { continue; }
    for (const e of ['', ...entries]) {
      const d = path.join(base, e, 'janus');
      if (fs.existsSync(path.join(d, 'plugins', 'libjanus_streaming.so')) &&
          fs.existsSync(path.join(d, 'transports', 'libjanus_http.so'))) return d;
    }
  }
  return null;
}

/** Why the Janus tests cannot run here (a sentence), or null when they can. */
export function janusMissing() {
  if (!fs.existsSync(JANUS_BIN)) return `janus is not installed (${JANUS_BIN}; Debian: apt-get install janus)`;
  if (!janusLibDir()) return 'janus has no streaming plugin or HTTP transport (/usr/lib/*/janus)';
  if (!fs.existsSync(JANUS_JS)) return `janus.js is not installed (${JANUS_JS}; apt-get install libjs-janus-gateway)`;
  if (!fs.existsSync(ADAPTER_JS)) return `adapter.js is not installed (${ADAPTER_JS}; apt-get install libjs-webrtc-adapter)`;
  if (!iceInterface()) return 'this host has no network interface with an IPv4 address besides loopback, and Janus\'s ICE (libnice) gathers no loopback candidates';
  return null;
}

/** A free TCP port on 127.0.0.1, to hand to a program that cannot bind port 0 and say which port it got (nginx,
 *  Janus): it is free now, and may be taken before that program binds it, so its start is retried on new ports
 *  when the address was in use (addressInUse). */
export function freeTcpPort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

function udpFree(port) {
  return new Promise((resolve) => {
    const s = dgram.createSocket('udp4');
    s.once('error', () => { s.close(); resolve(false); });
    s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** An even UDP port P with P and P + 1 free on 127.0.0.1 (RTP and its RTCP, RFC 3550 11), from 20000-59998. */
export async function freeUdpPair() {
  for (let tries = 0; tries < 200; tries++) {
    const p = 20000 + 2 * Math.floor(Math.random() * 20000);
    if (await udpFree(p) && await udpFree(p + 1)) return p;
  }
  throw new Error('no free UDP port pair found');
}

/** deploy/janus/NAME.in with its @KEYS@ replaced from vars; a key left unreplaced is an error. */
export function fillTemplate(name, vars) {
  const text = fs.readFileSync(path.join(TEMPLATES, name + '.in'), 'utf8')
    .replace(/@([A-Z0-9_]+)@/g, (m, k) => (k in vars ? String(vars[k]) : m));
  const left = text.match(/@[A-Z0-9_]+@/);
  if (left) throw new Error(`${name}.in: ${left[0]} has no value`);
  return text;
}

/**
 * Writes the configuration into a new temp dir and returns {dir, vars}. opts: httpPort, videoPort (RTP; its RTCP
 * is videoPort + 1), videoPt (96), fmtp (H.264 constrained baseline, packetization-mode 1), mountpoint (1),
 * debugLevel (3: warnings and errors), rtpRange (Janus's own ICE/RTP ports).
 */
export function writeJanusConfig(opts) {
  const lib = janusLibDir();
  if (!lib) throw new Error(janusMissing() || 'janus not found');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-janus-'));
  const sub = (n) => { const d = path.join(dir, n); fs.mkdirSync(d); return d; };
  const plugins = sub('plugins'), transports = sub('transports'), empty = sub('empty');
  fs.symlinkSync(path.join(lib, 'plugins', 'libjanus_streaming.so'), path.join(plugins, 'libjanus_streaming.so'));
  fs.symlinkSync(path.join(lib, 'transports', 'libjanus_http.so'), path.join(transports, 'libjanus_http.so'));
  const vars = {
    CFG_DIR: dir, PLUGINS_DIR: plugins, TRANSPORTS_DIR: transports, EMPTY_DIR: empty,
    DEBUG_LEVEL: opts.debugLevel ?? 3, RTP_PORT_RANGE: opts.rtpRange || '40000-59999', NACK_MS: 200,
    ICE_ENFORCE: opts.iceEnforce || iceInterface().name,
    HTTP_IP: '127.0.0.1', HTTP_PORT: opts.httpPort,
    MOUNTPOINT_ID: opts.mountpoint ?? 1, RTP_IFACE: '127.0.0.1', VIDEO_PORT: opts.videoPort,
    VIDEO_RTCP_PORT: opts.videoPort + 1, VIDEO_PT: opts.videoPt ?? 96,
    VIDEO_FMTP: opts.fmtp || 'profile-level-id=42e01f;packetization-mode=1',
    SECRET: opts.secret || Math.random().toString(36).slice(2),
  };
  for (const n of ['janus.jcfg', 'janus.transport.http.jcfg', 'janus.plugin.streaming.jcfg'])
    fs.writeFileSync(path.join(dir, n), fillTemplate(n, vars));
  return { dir, vars };
}

/** Whether a program's log says it could not bind its address (another one got the port first). */
export const addressInUse = (log) => /address already in use|EADDRINUSE|could not bind|bind\(\) .*failed/i.test(log);

/**
 * Starts janus on a fresh configuration (writeJanusConfig's opts; ports picked here when not given) and resolves
 * once GET /janus/info answers with the streaming plugin in it. Returns {proc, pid, url, videoPort, rtcpPort,
 * mountpoint, dir, log(), stop()}. stop() ends janus and removes the temp dir; it is safe to call twice. Ports
 * picked here that were taken before janus bound them: tried again on others, three times in all.
 */
export async function startJanus(opts = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startJanusOnce(opts);
    } catch (err) {
      if (attempt >= 3 || (opts.httpPort && opts.videoPort) || !addressInUse(err.message)) throw err;
    }
  }
}

async function startJanusOnce(opts) {
  const httpPort = opts.httpPort || await freeTcpPort();
  const videoPort = opts.videoPort || await freeUdpPair();
  const { dir, vars } = writeJanusConfig({ ...opts, httpPort, videoPort });
  const proc = killOnExit(spawn(JANUS_BIN, ['-F', dir, '-C', path.join(dir, 'janus.jcfg'), '--disable-colors'],
                               { stdio: ['ignore', 'pipe', 'pipe'] }));
  let log = '';
  proc.stdout.on('data', (d) => { log += d; if (log.length > 1e6) log = log.slice(-5e5); });
  proc.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${httpPort}/janus`;
  const stop = stopper(proc, dir);
  const t0 = Date.now();
  try {
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`janus exited (${proc.exitCode}):\n${log.slice(-3000)}`);
      // its mountpoint's RTP port taken: no mountpoint, though janus answers (the log says why)
      if (addressInUse(log)) throw new Error(`janus could not bind a port:\n${log.slice(-3000)}`);
      if (Date.now() - t0 > 20000) throw new Error(`janus did not answer ${url}/info in 20 s:\n${log.slice(-3000)}`);
      try {
        const r = await fetch(`${url}/info`);
        if (r.ok) {
          const info = await r.json();
          if (info.plugins && info.plugins['janus.plugin.streaming']) break;
          throw new Error(`janus runs without the streaming plugin: ${JSON.stringify(Object.keys(info.plugins || {}))}`);
        }
      } catch (err) {
        if (/without the streaming/.test(err.message)) throw err;
      }
      await sleep(100);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { proc, pid: proc.pid, url, httpPort, videoPort, rtcpPort: videoPort + 1, mountpoint: vars.MOUNTPOINT_ID,
           secret: vars.SECRET, dir, startMs: Date.now() - t0, log: () => log, stop };
}

/** A stop() for proc and its temp dir: SIGTERM (SIGKILL after 5 s), then the dir removed; safe to call twice. */
function stopper(proc, dir) {
  let stopping = null;
  return () => stopping || (stopping = stopProcess(proc).then(() => fs.rmSync(dir, { recursive: true, force: true })));
}

/** utime + stime of process pid, in seconds (/proc/PID/stat fields 14 and 15, in clock ticks: CLK_TCK 100). */
export function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');   // fields after "(comm)": field 3 is f[0]
  return (Number(f[11]) + Number(f[12])) / 100;
}

export const NGINX_BIN = process.env.NGINX || '/usr/sbin/nginx';

/**
 * The web front of the SFU viewers (deploy/janus/nginx.conf.in): nginx on 127.0.0.1 (a free port) serving
 * client/ (sfu.html and the modules), Debian's janus.js and adapter.js at /vendor/, and /janus proxied to
 * janusHttp ("127.0.0.1:PORT"). Returns {proc, port, origin, url(mountpoint, extra), stop()}.
 */
export async function startWebFront(janusHttp) {
  if (!fs.existsSync(NGINX_BIN)) throw new Error(`nginx is not installed (${NGINX_BIN}; apt-get install nginx)`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startWebFrontOnce(janusHttp, await freeTcpPort());   // nginx takes no port 0: see freeTcpPort
    } catch (err) {
      if (attempt >= 3 || !addressInUse(err.message)) throw err;
    }
  }
}

async function startWebFrontOnce(janusHttp, port) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-nginx-'));
  fs.chmodSync(dir, 0o755);                       // nginx's worker (user nobody when started as root) reads it
  fs.mkdirSync(path.join(dir, 'tmp'));
  fs.chmodSync(path.join(dir, 'tmp'), 0o777);
  // a copy of client/ in that dir: the worker cannot reach the checkout itself where a folder above it is private
  // (CI clones into a mktemp -d folder, 0700: every file was 403, "open() ... failed (13: Permission denied)")
  const clientDir = path.join(dir, 'client');
  fs.cpSync(path.join(root, 'client'), clientDir, { recursive: true });
  for (const f of fs.readdirSync(clientDir, { recursive: true })) {
    const p = path.join(clientDir, f);
    fs.chmodSync(p, fs.statSync(p).isDirectory() ? 0o755 : 0o644);
  }
  fs.chmodSync(clientDir, 0o755);
  const conf = fillTemplate('nginx.conf', {
    DIR: dir, LISTEN: `127.0.0.1:${port}`, CLIENT_DIR: clientDir, JANUS_JS, ADAPTER_JS,
    JANUS_HTTP: janusHttp,
  });
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const proc = killOnExit(spawn(NGINX_BIN, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')],
                               { stdio: ['ignore', 'pipe', 'pipe'] }));
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const stop = stopper(proc, dir);                 // nginx: SIGTERM is its fast shutdown
  const origin = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  for (;;) {
    const errLog = () => { try { return fs.readFileSync(path.join(dir, 'error.log'), 'utf8'); } catch { return ''; } };
    if (proc.exitCode !== null) { const e = `nginx exited (${proc.exitCode}): ${log}${errLog()}`; await stop(); throw new Error(e); }
    if (Date.now() - t0 > 10000) { const e = `nginx did not answer on ${origin}: ${log}${errLog()}`; await stop(); throw new Error(e); }
    try { if ((await fetch(`${origin}/client/sfu.html`)).ok) break; } catch { /* not yet */ }
    await sleep(50);
  }
  return { proc, pid: proc.pid, port, origin, log: () => log, stop,
           url: (mountpoint = 1, extra = '') => `${origin}/client/sfu.html?mountpoint=${mountpoint}${extra}` };
}
