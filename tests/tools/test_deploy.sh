#!/bin/sh
# SPDX-License-Identifier: MIT
# test_deploy — deploy/systemd/rcanvas@.service passes `systemd-analyze verify` (its directives, the instance
# specifiers, the ExecStart line), as an instance with ExecStart pointed at the built rcanvas-demo, and that demo
# takes the flags the unit gives it. The proxy configurations of deploy/ are run by tests/browser/nginx.test.mjs.
# Skips (77) without systemd-analyze.
#   test_deploy.sh SOURCE_DIR DEMO
set -u
src="$1"; demo="$2"
command -v systemd-analyze >/dev/null 2>&1 || { echo "SKIP: systemd-analyze is not installed"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
sed "s#/usr/local/bin/rcanvas-demo#$demo#" "$src/deploy/systemd/rcanvas@.service" > "$t/rcanvas@.service"
grep -q "ExecStart=$demo " "$t/rcanvas@.service" || { echo "FAILED: no ExecStart=/usr/local/bin/rcanvas-demo in the unit"; exit 1; }
out=$(cd "$t" && systemd-analyze verify "$t/rcanvas@host-a.service" 2>&1)
if [ -n "$out" ]; then echo "FAILED: systemd-analyze verify rcanvas@host-a.service:"; echo "$out"; exit 1; fi
# and with the two lines of a fixed token (LoadCredential, --token-file) uncommented
mkdir "$t/cred"
sed -e 's/^#LoadCredential=/LoadCredential=/' -e 's/^#Environment="RCANVAS_TOKEN_ARGS=/Environment="RCANVAS_TOKEN_ARGS=/' \
  "$t/rcanvas@.service" > "$t/cred/rcanvas@.service"
[ "$(grep -c '^LoadCredential=token:/etc/rcanvas/%i.token$\|^Environment="RCANVAS_TOKEN_ARGS=--token-file %d/token"$' \
  "$t/cred/rcanvas@.service")" -eq 2 ] || { echo "FAILED: the unit's two token lines are not as expected"; exit 1; }
out=$(cd "$t/cred" && systemd-analyze verify "$t/cred/rcanvas@host-a.service" 2>&1)
if [ -n "$out" ]; then echo "FAILED: systemd-analyze verify, with a token file:"; echo "$out"; exit 1; fi
# the demo accepts the unit's flags (the .env values of the unit's comment, and a token file as docs/deploy.md
# shows): it starts, prints its URL with the file's token, stops
printf 'abcdefghijklmnopqrstuvwxyz0123\n' > "$t/host-a.token"; chmod 600 "$t/host-a.token"
timeout 10 "$demo" --host 127.0.0.1 --port 0 --base-path /host-a --allow-host example.org \
  --allow-origin https://example.org --scene test --token-file "$t/host-a.token" > "$t/out" 2> "$t/err" &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q "open http://127.0.0.1:[0-9]*/host-a/?token=abcdefghijklmnopqrstuvwxyz0123 " "$t/out"; do sleep 0.1; i=$((i+1)); done
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
grep -q "open http://127.0.0.1:[0-9]*/host-a/?token=abcdefghijklmnopqrstuvwxyz0123 " "$t/out" || { echo "FAILED: the demo did not start with the unit's flags:"; cat "$t/err"; exit 1; }
echo "PASS: rcanvas@.service verifies, and rcanvas-demo takes its flags"
