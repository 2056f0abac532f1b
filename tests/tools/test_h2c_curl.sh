#!/bin/sh
# SPDX-License-Identifier: MIT
# test_h2c_curl — the HTTP/2 door as curl and openssl s_client try it (test_h2c.c does it by hand):
#   - `curl --http2 http://…/metrics?token=T` on a plain server sends "Upgrade: h2c": 400 "HTTP/1.1 only", never
#     101, never the metrics;
#   - the same in the clear on a --tls self-signed server: 400 "this server speaks https", never the metrics;
#   - `curl --http2 https://…` on it negotiates HTTP/1.1 by ALPN and gets the metrics (the right path still works);
#   - `openssl s_client -alpn h2` gets no ALPN protocol.
#   test_h2c_curl.sh DEMO
set -u
demo="$1"
command -v curl >/dev/null && command -v openssl >/dev/null || { echo "test_h2c_curl: SKIPPED: needs curl and openssl"; exit 77; }
t=$(mktemp -d)
pass=0; fail=0; bg=""
trap '[ -n "$bg" ] && kill "$bg" 2>/dev/null; rm -rf "$t"' EXIT
ok() { if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $*" >&2; fi; }
tok=h2c-curl-token-0123456789ab

# start ARGS...: the demo on a free port; its port in $port
start() {
  [ -n "$bg" ] && kill "$bg" 2>/dev/null && wait "$bg" 2>/dev/null
  # the last demo's output goes first: the new one truncates the file only once its process runs, and reading the
  # old port meanwhile sent the TLS checks to the server just stopped
  : > "$t/demo.out"
  XDG_STATE_HOME="$t/state" "$demo" --port 0 --token "$tok" "$@" >> "$t/demo.out" 2>&1 &
  bg=$!
  port=""
  for i in $(seq 1 300); do   # up to 30 s: a loaded machine starts it slowly
    port=$(sed -n 's#.*://127\.0\.0\.1:\([0-9]*\)/.*#\1#p' "$t/demo.out" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "demo did not start: $(cat "$t/demo.out")" >&2; exit 1; }
}

start
curl -s --http2 -D "$t/h" -o "$t/b" "http://127.0.0.1:$port/metrics?token=$tok"
ok grep -q '^HTTP/1\.[01] 400' "$t/h"
ok grep -q 'HTTP/1.1 only' "$t/b"
ok sh -c "! grep -q ' 101 ' '$t/h'"
ok sh -c "! grep -q rcanvas_ '$t/b'"
# without --http2 the same request is served
curl -s -o "$t/b" "http://127.0.0.1:$port/metrics?token=$tok"
ok grep -q '^rcanvas_' "$t/b"

start --tls self-signed
curl -s --http2 -D "$t/h" -o "$t/b" "http://127.0.0.1:$port/metrics?token=$tok"
ok grep -q '^HTTP/1\.[01] 400' "$t/h"
ok grep -q 'speaks https' "$t/b"
ok sh -c "! grep -q rcanvas_ '$t/b'"
curl -sk --http2 -D "$t/h" -o "$t/b" "https://127.0.0.1:$port/metrics?token=$tok"
ok grep -q '^HTTP/1\.1 200' "$t/h"
ok grep -q '^rcanvas_' "$t/b"
echo Q | timeout 10 openssl s_client -connect "127.0.0.1:$port" -alpn h2 > "$t/s" 2>&1
ok grep -q 'No ALPN negotiated' "$t/s"
ok sh -c "! grep -q 'ALPN protocol: h2' '$t/s'"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
