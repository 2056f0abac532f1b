// SPDX-License-Identifier: MIT
// names.test.mjs — the browser client's copies of include/rcanvas.h's name tables, checked against the header
// (no browser): the wire's codec ids and names in client/protocol.js (RCANVAS_CODECS), and every event_type the
// client sends (client/*.js) a name of RCANVAS_EVENTS. A codec or event added to the header and not to the client,
// or renamed on one side, fails here rather than in a viewer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import * as P from '../../client/protocol.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const header = readFileSync(path.join(ROOT, 'include', 'rcanvas.h'), 'utf8');

/** The rows X(NAME, value, "name"[, wire]) of the X-macro list `macro` in rcanvas.h: [{id, value, name, wire}]. */
function table(macro) {
  const start = header.indexOf(`#define ${macro}(X)`);
  assert.ok(start >= 0, `${macro} is in include/rcanvas.h`);
  let end = start;
  while (end < header.length && (header[end] !== '\n' || header[end - 1] === '\\')) end++; // its continued lines
  const rows = [...header.slice(start, end).matchAll(/X\((\w+),\s*(-?\d+),\s*"([^"]*)"(?:,\s*(\d))?\)/g)];
  return rows.map((m) => ({ id: m[1], value: Number(m[2]), name: m[3], wire: m[4] === '1' }));
}

test('the table reader sees every row of the header lists', () => {
  const codecs = table('RCANVAS_CODECS');
  assert.ok(codecs.length >= 8, `${codecs.length} codecs`);
  assert.deepEqual(codecs.slice(0, 2), [{ id: 'AUTO', value: 0, name: 'auto', wire: false },
    { id: 'JPEG', value: 1, name: 'jpeg', wire: true }]);
  assert.equal(table('RCANVAS_EVENTS').length, 12);
  assert.equal(table('RCANVAS_OPTIONS').length, 13);
});

test("protocol.js's wire codecs are the header's ids and names", () => {
  const wire = table('RCANVAS_CODECS').filter((c) => c.wire);
  const byValue = new Map(wire.map((c) => [c.value, c]));
  const ids = Object.keys(P.CODECS).map(Number);
  assert.deepEqual(ids.sort((a, b) => a - b), wire.map((c) => c.value).sort((a, b) => a - b), 'the same wire ids');
  for (const id of ids) {
    const c = byValue.get(id);
    assert.ok(c, `wire id ${id} is in RCANVAS_CODECS`);
    assert.equal(P.CODECS[id][0], c.name, `wire id ${id}`);
    assert.equal(P[`CODEC_${c.id}`], id, `CODEC_${c.id}`);
  }
  // every name the client offers or prefers decodes to a wire id it knows
  const names = new Set(ids.map((id) => P.CODECS[id][0]));
  for (const n of [...P.VIDEO_CODECS, ...P.IMAGE_CODECS, ...P.CODEC_PREFERENCE]) assert.ok(names.has(n), n);
});

test('every event_type the client sends is a name of RCANVAS_EVENTS', () => {
  const events = new Set(table('RCANVAS_EVENTS').map((e) => e.name));
  const sent = new Set();
  const dir = path.join(ROOT, 'client');
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
    const src = readFileSync(path.join(dir, f), 'utf8');
    for (const m of src.matchAll(/event_type:\s*'([a-z_]+)'|pointerEvent\('([a-z_]+)'|\? '(pointer_[a-z]+)'/g))
      sent.add(m[1] || m[2] || m[3]);
  }
  assert.ok(sent.size >= 10, [...sent].join(' ')); // the reader still finds them
  for (const e of sent) assert.ok(events.has(e), `the client sends ${e}`);
});
