#!/bin/sh
# SPDX-License-Identifier: MIT
# test_include_rule — the dependency rule of src/ (docs/architecture.md): a file may include headers of its own
# folder and of folders below it in the data path, never of a folder above it or beside it.
#   rank 0 core/   (buffers, worker pool, clock, logging)
#   rank 1 codec/  (encoders, packets)
#   rank 2 stream/ (the hub: canvases, sessions, flow control)
#   rank 3 source/ and transport/ (frames in, frames out: both use the stream, neither knows the other)
#   rank 4 src/*.c (the runtime that wires them together)
# Public headers (include/) and generated files (no folder) are free to include. Prints each violation and
# "N passed, M failed".
set -u
src="${1:-$(dirname "$0")/../../src}"
rank() {
    case "$1" in
    core) echo 0 ;; codec) echo 1 ;; stream) echo 2 ;; source | transport) echo 3 ;; .) echo 4 ;; *) echo -1 ;;
    esac
}
pass=0; fail=0
for f in $(cd "$src" && find . -name '*.c' -o -name '*.h' | sed 's|^\./||' | sort); do
    dir=$(dirname "$f" | cut -d/ -f1)
    r=$(rank "$dir")
    if [ "$r" -lt 0 ]; then echo "FAILED: $f: folder '$dir' has no rank in the rule" >&2; fail=$((fail+1)); continue; fi
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$src/$f"); do
        case "$inc" in */*) ;; *) continue ;; esac
        idir=${inc%%/*}
        ir=$(rank "$idir")
        if [ "$ir" -lt 0 ]; then echo "FAILED: $f includes $inc: unknown folder" >&2; fail=$((fail+1))
        elif [ "$ir" -gt "$r" ] || { [ "$ir" -eq "$r" ] && [ "$idir" != "$dir" ]; }; then
            echo "FAILED: $f ($dir, rank $r) includes $inc ($idir, rank $ir)" >&2; fail=$((fail+1))
        else pass=$((pass+1)); fi
    done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
