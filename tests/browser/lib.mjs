// SPDX-License-Identifier: MIT
// lib.mjs — shared helpers of the browser tests and the end-to-end benchmark: start rcanvas-demo on a free port,
// launch Debian's headless Chromium through playwright-core, wait for conditions.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { chromium } from 'playwright-core';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, '..', '..');
export const buildDir = process.env.RCANVAS_BUILD_DIR || path.join(root, 'build');
export const demoPath = path.join(buildDir, 'rcanvas-demo');
export const testTwoPath = path.join(buildDir, 'rcanvas-test-two');   // two named canvases (two_canvases.c)
export const framesDir = process.env.RCANVAS_FRAMES_DIR || path.resolve(root, '..', 'shared', 'frames');

export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-sync',
  '--disable-background-networking', '--disable-component-update',
  '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows',
];

/** Launches headless Chromium with CHROMIUM_ARGS and extraArgs (e.g. tls.test.mjs: --ignore-certificate-errors,
 *  --host-resolver-rules, in that test only). */
export async function launchBrowser(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [...CHROMIUM_ARGS, ...extraArgs],
  });
}

/**
 * Pins the two sides of a bench to different CPUs, as on two machines: `spec` is "SERVER/BROWSER" (CPU lists as
 * taskset takes them, e.g. "0/1"). This process's threads go to SERVER now (the servers it starts later inherit
 * it); Chromium, launched later by launchBrowser, goes to BROWSER through a wrapper script that CHROMIUM names.
 * Throws with taskset's message when it cannot. Returns { server, browser }.
 */
export function pinProcesses(spec) {
  const [server, viewer] = String(spec).split('/');
  if (!server || !viewer) throw new Error(`pin: SERVER/BROWSER CPU lists, e.g. 0/1 (got ${spec})`);
  const r = spawnSync('taskset', ['-a', '-pc', server, String(process.pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pin: taskset: ${(r.stderr || r.error || '').toString().trim()}`);
  const wrapper = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rcanvas-pin-')), 'chromium');
  fs.writeFileSync(wrapper, `#!/bin/sh\nexec taskset -c ${viewer} ${process.env.CHROMIUM || '/usr/bin/chromium'} "$@"\n`, { mode: 0o755 });
  process.env.CHROMIUM = wrapper;
  return { server, browser: viewer };
}

/**
 * Ends a child process: `signal` (default SIGTERM), then SIGKILL if it is still there after killAfterMs. Resolves
 * once it has exited (at once when it already has). Safe to call twice.
 */
export function stopProcess(proc, { signal = 'SIGTERM', killAfterMs = 5000 } = {}) {
  return new Promise((res) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return res();
    const t = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
    proc.once('exit', () => { clearTimeout(t); res(); });
    proc.kill(signal);
  });
}

/**
 * Kills proc (SIGKILL) when this node process exits, should nothing have stopped it by then: a child that a setup
 * left behind (a throw at a file's top level runs no after hook) outlives node otherwise. Returns proc.
 */
const children = new Set();
process.once('exit', () => { for (const p of children) p.kill('SIGKILL'); });
export function killOnExit(proc) {
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  return proc;
}

export function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

/**
 * The cleanups of test t: `const defer = cleanup(t);` then `defer(() => demo.stop())` right after each thing the
 * test starts, before the next call that can throw. They run when the test ends — passed, failed, or past its
 * timeout, where node runs t.after hooks but a finally behind a stuck await never runs — last registered first,
 * every one even when another threw (the first error is thrown once all ran). defer(fn) returns nothing.
 */
export function cleanup(t) {
  const stack = [];
  t.after(async () => {
    let first = null;
    while (stack.length) {
      try { await stack.pop()(); } catch (e) { first ??= e; }
    }
    if (first) throw first;
  });
  return (fn) => { stack.push(fn); };
}

/** Polls fn() until it returns a truthy value or timeoutMs passes; returns the value or throws. */
export async function until(fn, timeoutMs = 10000, what = 'condition') {
  const t0 = Date.now();
  let last;
  while (Date.now() - t0 < timeoutMs) {
    last = await fn();
    if (last) return last;
    await sleep(50);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
}

/**
 * Starts rcanvas-demo (or `program`, which takes --port and --token too) with args; resolves once it printed its
 * URL (`env`: variables added to its environment). Returns {proc, url, port, token, lines, stop()}. `lines` collects stdout lines (events printed with
 * --print-events).
 */
export function startDemo(args = [], { port = 0, token = undefined, program = demoPath, env = undefined } = {}) {
  // The demo's default codec is auto (video where the browser decodes it); the tests written against its JPEG
  // frames (pixels, tiles, byte counts) say nothing of the codec, so rcanvas-demo gets --codec jpeg unless the test
  // names one; '--codec-default' (dropped here) keeps the demo's own default (video_e2e.test.mjs checks it).
  const defaulted = program === demoPath && !args.includes('--codec') && !args.includes('--codec-default');
  const full = ['--port', String(port), ...(token ? ['--token', token] : []), ...(defaulted ? ['--codec', 'jpeg'] : []),
                ...args.filter((a) => a !== '--codec-default')];
  const proc = killOnExit(spawn(program, full, { stdio: ['ignore', 'pipe', 'pipe'],
                                                env: env ? { ...process.env, ...env } : process.env }));
  const lines = [];
  let stderr = '';
  let buf = '';
  return new Promise((resolve, reject) => {
    // one that never printed its URL is killed: no test holds it to stop it
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`demo did not start: ${stderr}`)); }, 10000);
    proc.stderr.on('data', (d) => { stderr += d; });
    proc.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        const m = line.match(/open (https?:\/\/[^\s]+)/);   // https with --tls-cert or --tls self-signed
        if (m) {
          clearTimeout(timer);
          const url = new URL(m[1]);
          resolve({
            proc, lines, url: m[1], port: Number(url.port), token: url.searchParams.get('token'),
            stderr: () => stderr,
            // SIGINT (its clean shutdown), SIGKILL if it is still there 10 s later: a hung demo cannot hang the test
            stop: () => new Promise((res) => {
              if (proc.exitCode !== null || proc.signalCode !== null) return res(proc.exitCode);
              const kill = setTimeout(() => proc.kill('SIGKILL'), 10000);
              proc.once('exit', (code) => { clearTimeout(kill); res(code); });
              proc.kill('SIGINT');
            }),
          });
        }
      }
    });
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`demo exited (${code}): ${stderr}`)); });
  });
}

/** Opens url in a new page of browser at viewport and waits until its view is connected; {page, errors} (the page's
 *  uncaught errors, collected). */
export async function openPage(browser, url, viewport = { width: 400, height: 300 }) {
  const page = await browser.newPage({ viewport });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(url);
    await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
  } catch (err) {
    await page.close().catch(() => {});   // the caller never gets it to close
    throw err;
  }
  return { page, errors };
}

/** Reads the canvas's pixels at (x, y) in canvas backing-store pixels: [r, g, b, a]. */
/** The page's whole canvas picture: {w, h, data (RGBA bytes, a Buffer), rect (its box on the page, CSS px)}. The
 *  pixels cross as one base64 string, not as a JSON array of 800 000 numbers: that took so long on a loaded machine
 *  that polls reading pictures kept the page's main thread busy and its frames came late. */
export async function canvasPicture(page) {
  const p = await page.evaluate(() => {
    const c = document.querySelector('canvas');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let bin = '';
    for (let i = 0; i < d.length; i += 0x8000) bin += String.fromCharCode.apply(null, d.subarray(i, i + 0x8000));
    const r = c.getBoundingClientRect();
    return { w: c.width, h: c.height, b64: btoa(bin), rect: { x: r.x, y: r.y, w: r.width, h: r.height } };
  });
  return { w: p.w, h: p.h, data: Buffer.from(p.b64, 'base64'), rect: p.rect };
}

export async function canvasPixel(page, x, y) {
  return page.evaluate(([px, py]) => {
    const c = document.querySelector('canvas');
    const g = c.getContext('2d');
    return Array.from(g.getImageData(px, py, 1, 1).data);
  }, [x, y]);
}

/** The largest per-channel difference between the canvas's pixels at the listed points and the colours wanted
 *  there: patches = [[x, y, [r, g, b]], ...]. */
export async function patchError(page, patches) {
  let worst = 0;
  for (const [x, y, want] of patches) {
    const got = await canvasPixel(page, x, y);
    for (let c = 0; c < 3; c++) worst = Math.max(worst, Math.abs(got[c] - want[c]));
  }
  return worst;
}

/** CPU time of process pid so far, in clock ticks (USER_HZ, 100 a second on Linux): utime + stime of
 *  /proc/PID/stat (the fields after the command name, which may itself hold spaces, hence the split at ") "). */
export function procCpuTicks(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);
}
