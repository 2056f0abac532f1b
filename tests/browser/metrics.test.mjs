// SPDX-License-Identifier: MIT
// metrics.test.mjs — GET /metrics: refused without the token (401) or with a wrong one (403); with it,
// Prometheus text format 0.0.4 (HELP and TYPE before each family's samples, every sample `name{labels} value`),
// whose values move: frames presented grow while viewers watch, bytes go to each viewer, the roles are labelled
// right (the first page is active, the second passive, and the second becomes active when the first leaves).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { cleanup, launchBrowser, startDemo, until } from './lib.mjs';

const browser = await launchBrowser();
test.after(async () => { await browser.close(); });

function get(port, path) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Parses the exposition text strictly: returns [{name, labels, value}], throwing on any malformed line, a sample
 * before its family's HELP and TYPE, or a family declared twice. */
function parseMetrics(text) {
  const samples = [], help = new Set(), type = new Map();
  const family = (name) => {
    for (const suf of ['_bucket', '_sum', '_count'])
      if (name.endsWith(suf) && type.get(name.slice(0, -suf.length)) === 'histogram') return name.slice(0, -suf.length);
    return name;
  };
  assert.ok(text.endsWith('\n'), 'ends with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    let m;
    if ((m = line.match(/^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) \S.*$/))) {
      assert.ok(!help.has(m[1]), `HELP ${m[1]} twice`);
      help.add(m[1]);
    } else if ((m = line.match(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/))) {
      assert.ok(help.has(m[1]) && !type.has(m[1]), `TYPE ${m[1]} after its HELP, once`);
      type.set(m[1], m[2]);
    } else if ((m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/))) {
      const [, name, labelText, valueText] = m;
      const fam = family(name);
      assert.ok(help.has(fam) && type.has(fam), `sample ${name} after HELP and TYPE of ${fam}`);
      const value = valueText === '+Inf' ? Infinity : Number(valueText);
      assert.ok(!Number.isNaN(value), `value of ${line}`);
      const labels = {};
      if (labelText !== undefined && labelText !== '') {
        const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
        let lm;
        while (re.lastIndex < labelText.length) {
          lm = re.exec(labelText);
          assert.ok(lm, `labels of ${line}`);
          labels[lm[1]] = lm[2];
        }
      }
      samples.push({ name, labels, value });
    } else {
      assert.fail(`malformed line: ${JSON.stringify(line)}`);
    }
  }
  return samples;
}

const pick = (s, name, where = {}) =>
  s.filter((x) => x.name === name && Object.entries(where).every(([k, v]) => x.labels[k] === v));

async function scrape(demo) {
  const r = await get(demo.port, `/metrics?token=${demo.token}`);
  assert.equal(r.status, 200);
  assert.match(r.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  return parseMetrics(r.body);
}

test('/metrics needs the token, is well-formed Prometheus text, and its values move', async (t) => {
  const defer = cleanup(t);
  const demo = await startDemo([]);
  defer(() => demo.stop());
  const pages = [];
  try {
    assert.equal((await get(demo.port, '/metrics')).status, 401);
    assert.equal((await get(demo.port, '/metrics?token=wrong')).status, 403);
    assert.equal((await get(demo.port, `/metrics/?token=${demo.token}`)).status, 404);

    const s0 = await scrape(demo);
    assert.equal(pick(s0, 'rcanvas_canvas_viewers', { canvas: '' })[0].value, 0);
    assert.ok(pick(s0, 'process_resident_memory_bytes')[0].value > 1e6, 'RSS over 1 MB');
    assert.ok(pick(s0, 'process_open_fds')[0].value >= 3, 'open fds');
    assert.equal(pick(s0, 'rcanvas_viewer_bytes_sent_total').length, 0, 'no viewer yet');

    for (let i = 0; i < 2; i++) {
      const page = await browser.newPage({ viewport: { width: 400, height: 300 } });
      await page.goto(demo.url);
      await until(() => page.evaluate(() => window.rcanvas && window.rcanvas.connected), 10000, 'connected');
      await until(() => page.evaluate(() => window.rcanvas.stats().framesShown > 2), 10000, 'frames drawn');
      pages.push(page);
    }
    const presented = (s) => pick(s, 'rcanvas_canvas_frames_presented_total', { canvas: '' })[0].value;
    const s1 = await scrape(demo);
    let s2;
    await until(async () => { s2 = await scrape(demo); return presented(s2) > presented(s1); }, 10000,
                'frames presented grow while viewers watch');
    assert.ok(pick(s2, 'rcanvas_canvas_frames_encoded_total', { canvas: '' })[0].value > 0);
    assert.equal(pick(s2, 'rcanvas_canvas_viewers', { canvas: '' })[0].value, 2);
    const count = pick(s2, 'rcanvas_canvas_encode_ms_count', { canvas: '' })[0].value;
    const inf = pick(s2, 'rcanvas_canvas_encode_ms_bucket', { canvas: '', le: '+Inf' })[0].value;
    assert.ok(count > 0 && inf === count, `histogram: +Inf bucket ${inf} = count ${count}`);
    const buckets = pick(s2, 'rcanvas_canvas_encode_ms_bucket', { canvas: '' }).map((x) => x.value);
    assert.deepEqual([...buckets].sort((a, b) => a - b), buckets, 'buckets are cumulative');
    assert.ok(pick(s2, 'rcanvas_canvas_encode_ms_sum', { canvas: '' })[0].value > 0);

    const bytes = pick(s2, 'rcanvas_viewer_bytes_sent_total');
    assert.equal(bytes.length, 2, 'one row per viewer');
    for (const b of bytes) {
      assert.ok(b.value > 0, `bytes sent to viewer ${b.labels.viewer}`);
      assert.equal(b.labels.codec, 'jpeg');
      assert.ok(pick(s2, 'rcanvas_viewer_frames_sent_total', { viewer: b.labels.viewer })[0].value > 0);
    }
    const active = pick(s2, 'rcanvas_viewer_active');
    const first = active.find((x) => x.value === 1), second = active.find((x) => x.value === 0);
    assert.ok(first && second, 'one active and one passive viewer');
    assert.equal(first.labels.role, 'active');
    assert.equal(second.labels.role, 'passive');
    assert.ok(Number(first.labels.viewer) < Number(second.labels.viewer), 'the first page is the active one');
    assert.ok(pick(s2, 'rcanvas_viewer_link_target_kbps', { viewer: first.labels.viewer })[0].value > 0);

    // The active page leaves: the other viewer's role label becomes active.
    await pages.shift().close();
    await until(async () => {
      const s = await scrape(demo);
      const rows = pick(s, 'rcanvas_viewer_active');
      return rows.length === 1 && rows[0].labels.viewer === second.labels.viewer && rows[0].labels.role === 'active'
        && rows[0].value === 1;
    }, 10000, 'the second viewer becomes active');
  } finally {
    for (const p of pages) await p.close();
    await demo.stop();
  }
});
