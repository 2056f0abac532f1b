#!/bin/sh
# SPDX-License-Identifier: MIT
# fd_flood.sh — out of file descriptors: rcanvas-demo under `ulimit -n 64` (ULIMIT=N to change), a client (another process)
# opening connections to it as fast as it can for 10 s and holding them open (each one accepted is a descriptor
# until the 10 s HTTP timeout), then the lines the server logged and its CPU % over those 10 s (utime + stime
# from /proc/PID/stat). RATE=N: N connections per second instead of as fast as it can.
# Usage: [ULIMIT=64] [RATE=0] bench/fd_flood.sh [path/to/rcanvas-demo] [port]
DEMO=${1:-build/rcanvas-demo}
PORT=${2:-18977}
LOG=$(mktemp)
(ulimit -n ${ULIMIT:-64}; exec "$DEMO" --port "$PORT" --scene test --fps 10 >"$LOG" 2>&1) &
PID=$!
sleep 1
ticks() { awk '{print $14 + $15}' /proc/$PID/stat; }
T0=$(ticks); L0=$(wc -l <"$LOG")
python3 - "$PORT" "${RATE:-0}" <<'PY'
import socket, sys, time
port = int(sys.argv[1]); rate = float(sys.argv[2]); held = []; end = time.time() + 10
while time.time() < end:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=0.5); s.setblocking(False); held.append(s)
    except OSError:
        time.sleep(0.001)
    if rate > 0: time.sleep(1 / rate)
    if len(held) > 900:
        for s in held[:300]: s.close()
        del held[:300]
print("client: connections held at the end", len(held))
PY
T1=$(ticks); L1=$(wc -l <"$LOG")
HZ=$(getconf CLK_TCK)
kill "$PID"; wait "$PID" 2>/dev/null
echo "lines logged in 10 s: $((L1 - L0)) ($(grep -c 'errno 24' "$LOG") with 'errno 24'); CPU: $(( (T1 - T0) * 100 / HZ / 10 )) % of a core"
grep -v '^rcanvas-demo: open' "$LOG" | sort | uniq -c | sort -rn | head -5
rm -f "$LOG"
