#!/bin/sh
# test_rcanvas_encode — the rcanvas-encode tool on a corpus frame: JPEG and PNG outputs are real files of the
# printed size (JPEG SOI/EOI markers, PNG signature), a PPM input works, and bad arguments fail with status 2.
set -u
enc="$1"; frames="$2"; out=$(mktemp -d)
pass=0; fail=0
ok() { if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $*" >&2; fi; }
in="$frames/text-1920x1080.png"

line=$("$enc" --codec jpeg --quality 80 --subsampling 444 "$in" "$out/a.jpg"); ok [ $? -eq 0 ]
bytes=$(echo "$line" | sed -n 's/.* \([0-9][0-9]*\) bytes.*/\1/p')
ok [ "$bytes" = "$(stat -c %s "$out/a.jpg")" ]
ok [ "$(head -c 2 "$out/a.jpg" | od -An -tx1 | tr -d ' ')" = "ffd8" ]
ok [ "$(tail -c 2 "$out/a.jpg" | od -An -tx1 | tr -d ' ')" = "ffd9" ]
echo "$line" | grep -q "1920x1080 jpeg q80 4:4:4"; ok [ $? -eq 0 ]

line=$("$enc" --codec png "$in" "$out/a.png"); ok [ $? -eq 0 ]
ok [ "$(head -c 8 "$out/a.png" | od -An -tx1 | tr -d ' ')" = "89504e470d0a1a0a" ]
echo "$line" | grep -q "1920x1080 png lossless:"; ok [ $? -eq 0 ]

printf 'P6\n# comment\n3 2\n255\n' > "$out/x.ppm"; printf '\377\000\000\000\377\000\000\000\377\377\377\377\000\000\000\200\200\200' >> "$out/x.ppm"
"$enc" --codec png "$out/x.ppm" "$out/x.png" > /dev/null; ok [ $? -eq 0 ]
"$enc" --codec gif "$in" "$out/b" 2> /dev/null; ok [ $? -eq 2 ]
"$enc" --quality 0 "$in" "$out/b" 2> /dev/null; ok [ $? -eq 2 ]
"$enc" "$out/missing.png" "$out/b" 2> /dev/null; ok [ $? -eq 1 ]
rm -rf "$out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
