// SPDX-License-Identifier: MIT
// encoder.mjs — the server's own account of its encoder, from GET /metrics, for the tests whose frame rate on a
// loaded machine is bounded by the CPU rather than by what they test (a link, the steering): how many frames the
// canvas encoded in a window and how much of that window its encoder spent encoding. A frame rate below a test's
// floor is then either the encoder's (it was busy the whole window and the viewer got what it made) or the test's
// cause, and the test asserts which.
//
//   const e0 = await encoderSample(demo);   ...window...   const e = encoderWindow(e0, await encoderSample(demo));
//   e.encoded (frames), e.fps, e.presentedFps (the app's), e.msPerFrame (wall time of one encode), e.busy (encode
//   time / window time)
import http from 'node:http';

/** The canvas's counters now: {t (ms, performance clock), encoded, presented, encodes, encodeMs}. */
export function encoderSample(demo, canvas = '') {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: demo.port, path: '/metrics',
                           headers: { Authorization: `Bearer ${demo.token}` } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`/metrics: ${res.statusCode} ${body.slice(0, 200)}`));
        const value = (name) => {
          const m = body.match(new RegExp(`^${name}\\{canvas="${canvas}"\\} (\\S+)$`, 'm'));
          if (!m) throw new Error(`/metrics has no ${name} for canvas "${canvas}"`);
          return Number(m[1]);
        };
        try {
          resolve({ t: performance.now(), encoded: value('rcanvas_canvas_frames_encoded_total'),
                    presented: value('rcanvas_canvas_frames_presented_total'),
                    encodes: value('rcanvas_canvas_encode_ms_count'), encodeMs: value('rcanvas_canvas_encode_ms_sum') });
        } catch (err) { reject(err); }
      });
    });
    req.on('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error('/metrics did not answer in 10 s')));
  });
}

/** Between two samples: frames encoded, their rate, the mean wall time of one encode and the encoder's busy
 *  fraction (its encode time over the window; above 1 where encodes overlap). */
export function encoderWindow(a, b) {
  const ms = b.t - a.t, encodes = b.encodes - a.encodes, encodeMs = b.encodeMs - a.encodeMs;
  return { ms, encoded: b.encoded - a.encoded, fps: (b.encoded - a.encoded) / (ms / 1000),
           presentedFps: (b.presented - a.presented) / (ms / 1000), msPerFrame: encodes ? encodeMs / encodes : 0,
           busy: encodeMs / ms };
}

export const showEncoder = (e) =>
  `encoder: ${e.encoded} frames (${e.fps.toFixed(1)}/s), ${e.msPerFrame.toFixed(1)} ms each, busy ${(100 * e.busy).toFixed(0)} %; ` +
  `the app presented ${e.presentedFps.toFixed(1)}/s`;
