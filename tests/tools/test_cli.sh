#!/bin/sh
# SPDX-License-Identifier: MIT
# test_cli — every command-line program names the bad argument and the rule it broke: a usage error is exactly
# two lines on stderr ("PROG: ARG: RULE", then "try 'PROG --help'"), exit status 2, nothing on stdout; --help
# prints the usage on stdout and exits 0. For rcanvas-demo a bad argument fails before anything listens (run with
# --verbose, the library would log "listening on"; the demo would print its URL), a taken port reads "address
# already in use", and a file that is not a PNG is named as such. For rcanvas-encode: OUT's extension must fit the
# codec, a PNG line claims no JPEG quality, a non-image input says so. Needs no corpus: inputs are made here.
#   test_cli.sh DEMO ENCODE BENCH_ENCODE BENCH_VK BENCH_JPEG_GPU BENCH_FANOUT
set -u
demo="$1"; enc="$2"; bench_encode="$3"; bench_vk="$4"; bench_jpeg_gpu="$5" # "-" "-": a build without Vulkan
bench_fanout="$6"
t=$(mktemp -d)
pass=0; fail=0; bg=""
trap '[ -n "$bg" ] && kill "$bg" 2>/dev/null; rm -rf "$t"' EXIT
ok() { if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $*" >&2; fi; }

# run CMD...: status in $st, stdout in $t/out, stderr in $t/err. The timeout turns a bad argument that was
# accepted (the demo would serve forever) into a failure instead of a hang.
run() { timeout 20 "$@" > "$t/out" 2> "$t/err"; st=$?; }
show() { echo "  status $st; stdout: $(head -c 300 "$t/out"); stderr: $(head -c 600 "$t/err")" >&2; }

# usage_error "EXPECTED FIRST LINE" PROG_NAME CMD...: exit 2, stderr is the expected line and the hint, stdout empty.
usage_error() {
  want="$1"; prog="$2"; shift 2
  run "$@"
  good=1
  [ "$st" -eq 2 ] || good=0
  [ "$(sed -n 1p "$t/err")" = "$want" ] || good=0
  [ "$(sed -n 2p "$t/err")" = "try '$prog --help'" ] || good=0
  [ "$(wc -l < "$t/err")" -eq 2 ] || good=0
  [ ! -s "$t/out" ] || good=0
  if [ $good -eq 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $* (want: $want)" >&2; show; fi
}

# help_ok PROG CMD...: --help exits 0 with the usage on stdout and nothing on stderr.
help_ok() {
  prog="$1"; shift
  run "$@" --help
  if [ "$st" -eq 0 ] && head -n 1 "$t/out" | grep -q "^usage: $prog " && [ ! -s "$t/err" ]; then pass=$((pass+1))
  else fail=$((fail+1)); echo "FAILED: $* --help" >&2; show; fi
}

# ---- rcanvas-demo -----------------------------------------------------------------------------------------
D="rcanvas-demo"
help_ok $D "$demo"
# dd "EXPECTED LINE" ARGS...: a usage error of the demo, run with --verbose so that a server that started would
# show (its "listening on" log line, the URL on stdout)
dd() { want="$1"; shift; usage_error "$want" $D "$demo" --verbose --scene test "$@"; }
dd "$D: --bogus: unknown option" --bogus
dd "$D: stray: unexpected argument (the demo takes options only)" stray
# --codec takes the library's codec and encoder names, which --help lists (h264-gpu only in a build with Vulkan)
codecs=$("$demo" --help | sed -n 's/^codecs (--codec): //p' | sed 's/ /, /g')
case "$codecs" in "auto, jpeg, png, h264, vp8, vp9, av1, webp"*) pass=$((pass+1)) ;;
  *) fail=$((fail+1)); echo "FAILED: --help lists the codecs: got '$codecs'" >&2 ;; esac
dd "$D: --codec gif: must be one of: $codecs" --codec gif
dd "$D: --scene foo: must be one of: mandelbrot, test" --scene foo
dd "$D: --subsampling 411: must be one of: 420, 444, auto" --subsampling 411
dd "$D: --port abc: must be an integer from 0 to 65535" --port abc
dd "$D: --port abc: must be an integer from 0 to 65535" --port=abc
dd "$D: --port abc: must be an integer from 0 to 65535" --po abc
dd "$D: --to: unknown option" --to x
dd "$D: --gpu=1: unknown option" --gpu=1
dd "$D: --port 12x: must be an integer from 0 to 65535" --port 12x
dd "$D: --port '': must be an integer from 0 to 65535" --port ""
dd "$D: --port ' 80': must be an integer from 0 to 65535" --port " 80"
dd "$D: --port -1: must be an integer from 0 to 65535" --port -1
dd "$D: --port 65536: must be an integer from 0 to 65535" --port 65536
dd "$D: --port 99999999999999999999: must be an integer from 0 to 65535" --port 99999999999999999999
dd "$D: --quality 0: must be an integer from 1 to 100" --quality 0
dd "$D: --quality 101: must be an integer from 1 to 100" --quality 101
dd "$D: --fps -3: must be a number from 0 to 1000" --fps -3
dd "$D: --fps nan: must be a number from 0 to 1000" --fps nan
dd "$D: --fps 1e999: must be a number from 0 to 1000" --fps 1e999
# the RTP output's flags
dd "$D: --rtp-out 127.0.0.1:0: the port must be an integer from 1 to 65534 (RTCP goes to PORT+1)" --rtp-out 127.0.0.1:0
dd "$D: --rtp-out 127.0.0.1: must be HOST:PORT, e.g. 127.0.0.1:5004 or [::1]:5004" --rtp-out 127.0.0.1
dd "$D: --rtp-out ::1:5004: an IPv6 address goes in brackets: [ADDR]:PORT" --rtp-out ::1:5004
dd "$D: --rtp-pt 95: must be an integer from 96 to 127" --rtp-out 127.0.0.1:5004 --rtp-pt 95
dd "$D: --rtp-mtu 63: must be an integer from 64 to 65000" --rtp-out 127.0.0.1:5004 --rtp-mtu 63
dd "$D: --rtp-kbps 99: must be an integer from 100 to 200000" --rtp-out 127.0.0.1:5004 --rtp-kbps 99
dd "$D: --rtp-codec av1: must be one of: h264, vp8" --rtp-codec av1
dd "$D: --rtp-codec, --rtp-kbps, --rtp-mtu, --rtp-pt and --rtp-keyframe-ms need --rtp-out HOST:PORT" --rtp-kbps 500
dd "$D: --threads 257: must be an integer from 0 to 256" --threads 257
dd "$D: --max-viewers 0: must be an integer from 1 to 100000" --max-viewers 0
dd "$D: --max-viewers 16x: must be an integer from 1 to 100000" --max-viewers 16x
dd "$D: --max-viewers: needs a value (an integer from 1 to 100000)" --max-viewers
dd "$D: --refine-ms 2.5: must be an integer from 0 to 3600000" --refine-ms 2.5
dd "$D: --port: needs a value (an integer from 0 to 65535)" --port
dd "$D: --quality: needs a value (an integer from 1 to 100)" --quality --port 0
dd "$D: --host: needs a value (an address such as 127.0.0.1)" --host
dd "$D: --frames: needs a value (a directory of PNG files)" --frames
dd "$D: --codec: needs a value (one of: $codecs)" --codec
dd "$D: --gpu: cannot be combined with --scene test" --gpu
# the token rule, stated; the token itself (a secret) never shown
dd "$D: --token: 5 characters: must be 22 to 128 characters of A-Z a-z 0-9 _ -" --token short
dd "$D: --token: character 4 is not allowed: must be 22 to 128 characters of A-Z a-z 0-9 _ -" --token 'abc!defghijklmnopqrstuvw'
long=$(printf '%0129d' 0)
dd "$D: --token: 129 characters: must be 22 to 128 characters of A-Z a-z 0-9 _ -" --token "$long"
# --token-file: the file named with what is wrong, the token itself never shown
printf 'short\n' > "$t/short.token"; chmod 600 "$t/short.token"
printf 'abcdefghijklmnopqrstuvwxyz0123\n' > "$t/open.token"; chmod 644 "$t/open.token"
dd "$D: --token-file $t/short.token: 5 characters: must be 22 to 128 characters of A-Z a-z 0-9 _ -" --token-file "$t/short.token"
dd "$D: --view-token-file $t/open.token: is readable by others (chmod o-r)" --view-token-file "$t/open.token"
dd "$D: --token-file $t/none.token: cannot be read: No such file or directory" --token-file "$t/none.token"
dd "$D: --token-file: needs a value (a file holding the token)" --token-file
# ... a NUL inside: refused, not the token cut short before it (the part before is a valid token)
printf 'abcdefghijklmnopqrstuvwxyz0123\000tail\n' > "$t/nul.token"; chmod 600 "$t/nul.token"
dd "$D: --token-file $t/nul.token: holds a NUL byte (character 31): must be 22 to 128 characters of A-Z a-z 0-9 _ -" --token-file "$t/nul.token"
# ... a file another user could write (and so pick the token), a FIFO (it must not hang the start), a directory
printf 'abcdefghijklmnopqrstuvwxyz0123\n' > "$t/gw.token"; chmod 620 "$t/gw.token"
dd "$D: --token-file $t/gw.token: is writable by group or others (chmod go-w)" --token-file "$t/gw.token"
mkfifo "$t/fifo.token"
dd "$D: --token-file $t/fifo.token: is not a regular file" --token-file "$t/fifo.token"
mkdir "$t/dir.token"; chmod 700 "$t/dir.token"
dd "$D: --token-file $t/dir.token: is not a regular file" --token-file "$t/dir.token"
# TLS: a certificate needs its key and the other way round; self-signed is the one --tls mode
dd "$D: --tls-cert: needs a value (a PEM file)" --tls-cert
dd "$D: --tls-key: needs a value (a PEM file)" --tls-key --port 0
dd "$D: --tls-cert: needs --tls-key (its private key)" --tls-cert "$t/c.pem"
dd "$D: --tls-key: needs --tls-cert (its certificate)" --tls-key "$t/k.pem"
dd "$D: --tls plain: must be one of: self-signed" --tls plain
dd "$D: --tls: needs a value (one of: self-signed)" --tls
dd "$D: --tls self-signed: cannot be combined with --tls-cert or --tls-key" --tls self-signed --tls-cert a --tls-key b
dd "$D: --tls-dir: needs --tls self-signed" --tls-dir "$t/tls"
dd "$D: --tls-dir: needs a value (a directory)" --tls self-signed --tls-dir
# a file that cannot be used is named with the reason, nothing listens (exit 1, no URL)
echo "not a certificate" > "$t/junk.pem"
run "$demo" --port 0 --scene test --tls-cert "$t/junk.pem" --tls-key "$t/missing.key"
ok [ "$st" -eq 1 ]
ok grep -qx "\[rcanvas error\] tls_cert $t/junk.pem: not a PEM certificate (BEGIN CERTIFICATE)" "$t/err"
ok grep -qx "$D: cannot start TLS with --tls-cert $t/junk.pem --tls-key $t/missing.key: TLS certificate or key cannot be used" "$t/err"
ok [ ! -s "$t/out" ]

# keep-alive: --ping-ms 0 alone turns the idle timeout off too and the demo starts (it printed
# "cannot start the server on 127.0.0.1:0: invalid argument"); a conflict given on the command line is named
dd "$D: --idle-timeout-ms 20000: needs pings (--ping-ms 0 turns them off; use --idle-timeout-ms 0)" --ping-ms 0 --idle-timeout-ms 20000
dd "$D: --idle-timeout-ms 3000: must be more than --ping-ms (5000)" --idle-timeout-ms 3000
dd "$D: --idle-timeout-ms 4000: must be more than --ping-ms (4000)" --ping-ms 4000 --idle-timeout-ms 4000
dd "$D: --ping-ms 30000: must be less than --idle-timeout-ms (20000, the default), or give both" --ping-ms 30000
for keep in "--ping-ms 0" "--ping-ms 0 --idle-timeout-ms 0" "--ping-ms 30000 --idle-timeout-ms 60000"; do
  # shellcheck disable=SC2086
  : > "$t/keep.out"   # not the last run's URL: the new process truncates the file only once it runs
  "$demo" --port 0 --scene test $keep >> "$t/keep.out" 2> "$t/keep.err" &
  bg=$!
  for _ in $(seq 300); do grep -q "open http://" "$t/keep.out" && break; sleep 0.1; done   # 30 s: a loaded machine
  if grep -q "open http://127\.0\.0\.1:" "$t/keep.out"; then ok true; else ok false; echo "  $keep: $(cat "$t/keep.err")" >&2; fi
  kill "$bg"; wait "$bg"; bg=""
done
"$demo" --help > "$t/help.out"
ok grep -q -- "--ping-ms MS .*0 also means" "$t/help.out"

# a taken port: a first demo listens on a free port, a second one on the same port is told so in words
"$demo" --port 0 --scene test > "$t/first.out" 2> "$t/first.err" &
bg=$!
port=""
for _ in $(seq 300); do   # 30 s: a loaded machine
  port=$(sed -n 's|.*open http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$t/first.out")
  [ -n "$port" ] && break
  sleep 0.1
done
ok [ -n "$port" ]
if [ -n "$port" ]; then
  run "$demo" --port "$port" --scene test
  ok [ "$st" -eq 1 ]
  ok [ "$(sed -n 1p "$t/err")" = "$D: cannot listen on 127.0.0.1:$port: address already in use" ]
  ok [ "$(sed -n 2p "$t/err")" = "try another --port (PORT= with make demo), or --port 0 for any free port" ]
  ok [ "$(wc -l < "$t/err")" -eq 2 ]
  ok [ ! -s "$t/out" ]
  run "$demo" --verbose --port "$port" --scene test   # the library's own line; lws's bind line stays out of it
  ok [ "$st" -eq 1 ]
  ok grep -q "cannot listen on 127.0.0.1:$port: address already in use" "$t/err"
  if grep -q "ERROR on binding" "$t/err"; then ok false; fi
  # a bad argument with that port fails on the argument, not on the port: nothing was tried
  dd "$D: --quality 0: must be an integer from 1 to 100" --port "$port" --quality 0
fi
kill "$bg"; wait "$bg"; bg=""

# --frames: a file that is not a PNG is named as such (not by libspng's "end of stream"), before listening
mkdir "$t/frames" "$t/empty"
echo "not an image" > "$t/frames/x.png"
run "$demo" --verbose --port 0 --frames "$t/frames"
ok [ "$st" -eq 1 ]
ok [ "$(cat "$t/err")" = "$D: --frames $t/frames: x.png: not a PNG file" ]
ok [ ! -s "$t/out" ]
run "$demo" --port 0 --frames "$t/empty"
ok [ "$st" -eq 1 ]
ok [ "$(cat "$t/err")" = "$D: --frames $t/empty: no .png files" ]

# ---- rcanvas-encode ---------------------------------------------------------------------------------------
E="rcanvas-encode"
help_ok $E "$enc"
printf 'P6\n2 2\n255\n' > "$t/in.ppm"
printf '\377\000\000\000\377\000\000\000\377\377\377\377' >> "$t/in.ppm"
ee() { want="$1"; shift; usage_error "$want" $E "$enc" "$@"; }
ee "$E: --bogus: unknown option" --bogus "$t/in.ppm" "$t/o.jpg"
ee "$E: --codec gif: must be one of: jpeg, jpeg-gpu, png" --codec gif "$t/in.ppm" "$t/o.jpg"
ee "$E: --quality 0: must be an integer from 1 to 100" --quality 0 "$t/in.ppm" "$t/o.jpg"
ee "$E: --quality 85x: must be an integer from 1 to 100" --quality 85x "$t/in.ppm" "$t/o.jpg"
ee "$E: --repeat: needs a value (an integer from 1 to 10000)" "$t/in.ppm" "$t/o.jpg" --repeat
ee "$E: --subsampling 411: must be one of: 420, 444, auto" --subsampling 411 "$t/in.ppm" "$t/o.jpg"
ee "$E: missing OUT: the file to write (.jpg, .jpeg or .png)" "$t/in.ppm"
ee "$E: extra: unexpected argument (takes one IN and one OUT)" "$t/in.ppm" "$t/o.jpg" extra
ee "$E: $t/o.webp: unknown extension: must be .jpg or .jpeg (jpeg, jpeg-gpu), .png (png), or none" "$t/in.ppm" "$t/o.webp"
ee "$E: $t/o.gif: unknown extension: must be .jpg or .jpeg (jpeg, jpeg-gpu), .png (png), or none" --codec png "$t/in.ppm" "$t/o.gif"
ee "$E: $t/o.png: extension does not match --codec jpeg: must be .jpg or .jpeg" --codec jpeg "$t/in.ppm" "$t/o.png"
ok [ ! -e "$t/o.webp" ]
ok [ ! -e "$t/o.png" ]
# the extension picks the codec; a PNG line claims no JPEG quality
run "$enc" "$t/in.ppm" "$t/a.png"
ok [ "$st" -eq 0 ]
ok grep -q "2x2 png lossless:" "$t/out"
if grep -q "png q[0-9]" "$t/out"; then ok false; fi
ok [ "$(head -c 8 "$t/a.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]
run "$enc" --quality 70 "$t/a.png" "$t/a.JPEG"
ok [ "$st" -eq 0 ]
ok grep -q "2x2 jpeg q70 4:2:0:" "$t/out"
# inputs that are not images
echo "hello" > "$t/x.png"
run "$enc" "$t/x.png" "$t/o.jpg"
ok [ "$st" -eq 1 ]
ok [ "$(cat "$t/err")" = "$E: $t/x.png: not a PNG or PPM file" ]
run "$enc" "$t/missing.png" "$t/o.jpg"
ok [ "$st" -eq 1 ]
ok [ "$(cat "$t/err")" = "$E: $t/missing.png: cannot read it (No such file or directory)" ]

# ---- benchmarks (arguments are checked before any file or Vulkan device is touched) ------------------------
help_ok bench-encode "$bench_encode"
[ "$bench_vk" = - ] || help_ok bench-vk "$bench_vk"
[ "$bench_vk" = - ] || help_ok bench-jpeg-gpu "$bench_jpeg_gpu"
usage_error "bench-encode: --runs 0: must be an integer from 1 to 100000" bench-encode "$bench_encode" --runs 0 "$t"
usage_error "bench-encode: --quality high: must be an integer from 1 to 100" bench-encode "$bench_encode" --quality high "$t"
usage_error "bench-encode: --frames: unknown option" bench-encode "$bench_encode" --frames 3 "$t"
[ "$bench_vk" = - ] || usage_error "bench-vk: --depths 1,x: must be 1 to 16 ring depths from 1 to 16, separated by commas" bench-vk "$bench_vk" --depths 1,x "$t"
[ "$bench_vk" = - ] || usage_error "bench-vk: --frames 5: must be an integer from 10 to 1000000" bench-vk "$bench_vk" --frames 5 "$t"
[ "$bench_vk" = - ] || usage_error "bench-vk: --json: needs a value (a file to write)" bench-vk "$bench_vk" "$t" --json
[ "$bench_vk" = - ] || usage_error "bench-jpeg-gpu: --frames 12x: must be an integer from 5 to 1000000" bench-jpeg-gpu "$bench_jpeg_gpu" --frames 12x "$t"
[ "$bench_vk" = - ] || usage_error "bench-jpeg-gpu: two: unexpected argument (DIR is $t already)" bench-jpeg-gpu "$bench_jpeg_gpu" "$t" two

help_ok bench-fanout "$bench_fanout"
bf() { want="$1"; shift; usage_error "$want" bench-fanout "$bench_fanout" "$@"; }
bf "bench-fanout: --viewers 0: must be a comma-separated list of integers from 1 to 4096" --viewers 0
bf "bench-fanout: --viewers 1,x: must be a comma-separated list of integers from 1 to 4096" --viewers 1,x
bf "bench-fanout: --seconds 0: must be a number from 1 to 600" --seconds 0
bf "bench-fanout: --size 640: must be WxH, each 16-8192, e.g. 640x480" --size 640
bf "bench-fanout: --demo $t/none: not an executable program" --demo "$t/none"
bf "bench-fanout: --bogus: unknown option" --bogus

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
