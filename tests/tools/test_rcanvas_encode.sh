#!/bin/sh
# SPDX-License-Identifier: MIT
# test_rcanvas_encode — the rcanvas-encode tool on a 1920x1080 text frame: JPEG and PNG outputs are real files of
# the printed size (JPEG SOI/EOI markers, PNG signature), a PPM input works, and bad arguments fail with status 2.
# The frame is generated (rcanvas-testframes, deterministic); when the shared corpus is there its
# text-1920x1080.png is run as well.
#   test_rcanvas_encode.sh RCANVAS_ENCODE RCANVAS_TESTFRAMES [CORPUS_DIR]
set -u
enc="$1"; gen="$2"; frames="${3:-}"; out=$(mktemp -d)
pass=0; fail=0
ok() { if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $*" >&2; fi; }

check_input() {
  in="$1"; echo "input $in"
  line=$("$enc" --codec jpeg --quality 80 --subsampling 444 "$in" "$out/a.jpg"); ok [ $? -eq 0 ]
  bytes=$(echo "$line" | sed -n 's/.* \([0-9][0-9]*\) bytes.*/\1/p')
  ok [ "$bytes" = "$(stat -c %s "$out/a.jpg")" ]
  ok [ "$(head -c 2 "$out/a.jpg" | od -An -tx1 | tr -d ' ')" = "ffd8" ]
  ok [ "$(tail -c 2 "$out/a.jpg" | od -An -tx1 | tr -d ' ')" = "ffd9" ]
  echo "$line" | grep -q "1920x1080 jpeg q80 4:4:4"; ok [ $? -eq 0 ]

  line=$("$enc" --codec png "$in" "$out/a.png"); ok [ $? -eq 0 ]
  ok [ "$(head -c 8 "$out/a.png" | od -An -tx1 | tr -d ' ')" = "89504e470d0a1a0a" ]
  echo "$line" | grep -q "1920x1080 png lossless:"; ok [ $? -eq 0 ]
}

"$gen" "$out" text-1920x1080 > /dev/null; ok [ $? -eq 0 ]
check_input "$out/text-1920x1080.png"
if [ -n "$frames" ] && [ -f "$frames/text-1920x1080.png" ]; then
  echo "frame corpus $frames: also running on its text-1920x1080.png"
  check_input "$frames/text-1920x1080.png"
else
  echo "no frame corpus at ${frames:-(none given)}: generated frame only"
fi

in="$out/text-1920x1080.png"
printf 'P6\n# comment\n3 2\n255\n' > "$out/x.ppm"; printf '\377\000\000\000\377\000\000\000\377\377\377\377\000\000\000\200\200\200' >> "$out/x.ppm"
"$enc" --codec png "$out/x.ppm" "$out/x.png" > /dev/null; ok [ $? -eq 0 ]
"$enc" --codec gif "$in" "$out/b" 2> /dev/null; ok [ $? -eq 2 ]
"$enc" --quality 0 "$in" "$out/b" 2> /dev/null; ok [ $? -eq 2 ]
"$enc" "$out/missing.png" "$out/b" 2> /dev/null; ok [ $? -eq 1 ]

# rcanvas-testframes itself: bad arguments fail with status 2, and the same frame comes out byte for byte again
"$gen" "$out" bogus-3x3 2> /dev/null; ok [ $? -eq 2 ]
"$gen" "$out" text-0x5 2> /dev/null; ok [ $? -eq 2 ]
mkdir "$out/again" && "$gen" "$out/again" text-1920x1080 > /dev/null; ok cmp -s "$out/text-1920x1080.png" "$out/again/text-1920x1080.png"
rm -rf "$out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
