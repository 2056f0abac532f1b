// SPDX-License-Identifier: MIT
// proxy.mjs — a reverse proxy for tests, in the spirit of the nginx snippet of docs/security.md ("## Tokens, roles,
// Host and proxies"): it serves the rcanvas server under a prefix (/viz/…, passed on as it is, as nginx's
// `proxy_pass http://127.0.0.1:PORT;` without a URI does), sends its own Host (the backend's address) rather than
// the browser's, passes the rest of the request (Origin, Cookie, Authorization) and WebSocket upgrades through, and
// closes a connection on which nothing moved either way for idleMs (as nginx's proxy_read_timeout and most load
// balancers do).
//
//   const proxy = await startProxy({ prefix: '/viz', idleMs: 10000 });   proxy.target = demo.port;
//   page.goto(`http://127.0.0.1:${proxy.port}/viz/?token=…`);   …   proxy.idleDrops;   await proxy.close();
//
// proxy.paused = true makes it a silently dead link (a proxy or NAT that stops forwarding without
// closing): the bytes of open connections are read and dropped both ways, new requests and upgrades are accepted
// and never answered, nothing is closed. proxy.paused = false forwards again (on connections opened before the
// pause; those opened during it stay dead, as a real black hole leaves them).
import http from 'node:http';
import net from 'node:net';

export function startProxy({ prefix = '/viz', idleMs = 10000, host = '127.0.0.1' } = {}) {
  const state = { target: 0, idleDrops: 0, requests: 0, upgrades: 0, paused: false, dropped: 0 };
  const sockets = new Set();
  const under = (url) => url === prefix || url.startsWith(`${prefix}/`) || url.startsWith(`${prefix}?`);
  const head = (req) => {
    const h = { ...req.headers, host: `127.0.0.1:${state.target}` };   // its own Host, not the browser's
    h['x-forwarded-host'] = req.headers.host || '';
    return h;
  };
  const idle = (sock) => {
    sock.setTimeout(idleMs, () => { state.idleDrops++; sock.destroy(); });
  };

  // a.pipe(b), except that while paused the bytes are dropped (the sockets stay open and keep reading)
  const forward = (from, to) => {
    from.on('data', (d) => {
      if (state.paused) { state.dropped += d.length; return; }
      if (!to.write(d)) { from.pause(); to.once('drain', () => from.resume()); }
    });
  };

  const server = http.createServer((req, res) => {
    if (state.paused) { req.resume(); return; }   // a black hole: accepted, never answered
    if (!under(req.url)) { res.writeHead(404).end('not under the prefix'); return; }
    state.requests++;
    const up = http.request({ host: '127.0.0.1', port: state.target, method: req.method, path: req.url,
                              headers: head(req), agent: false }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => { if (!res.headersSent) res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  server.on('connection', (sock) => { sockets.add(sock); sock.on('close', () => sockets.delete(sock)); idle(sock); });
  server.on('upgrade', (req, sock, rest) => {
    if (state.paused) { sock.on('data', () => {}); sock.on('error', () => {}); return; }   // never answered
    if (!under(req.url)) { sock.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'); return; }
    state.upgrades++;
    const up = net.connect(state.target, '127.0.0.1', () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      const h = head(req);
      for (const [k, v] of Object.entries(h)) for (const one of [].concat(v)) lines.push(`${k}: ${one}`);
      up.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (rest && rest.length) up.write(rest);
      forward(up, sock);
      forward(sock, up);
    });
    sockets.add(up);
    idle(up);
    idle(sock);
    const end = () => { up.destroy(); sock.destroy(); };
    up.on('close', end); sock.on('close', end); up.on('error', end); sock.on('error', end);
  });

  return new Promise((resolve) => {
    server.listen(0, host, () => {
      resolve({
        port: server.address().port,
        get target() { return state.target; },
        set target(p) { state.target = p; },
        get idleDrops() { return state.idleDrops; },
        get upgrades() { return state.upgrades; },
        get paused() { return state.paused; },
        set paused(on) { state.paused = !!on; },
        get dropped() { return state.dropped; },   // bytes dropped while paused
        close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
      });
    });
  });
}
