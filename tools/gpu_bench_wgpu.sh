#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu_bench_wgpu.sh prep|run — jpeg-wgpu, nvJPEG, jpeg-gpu and pygfx through rcanvas' wgpu context on the GPU
# machine in one `run` (docs/benchmarks.md, ../shared/GPU.md).
#   prep (here): build/gpukit/ (ignored) gets the wheels for the GPU machine's Python 3.12 (wgpu, cffi, pygfx and
#        what it needs; numpy is the machine's own), librcanvas.so, rcanvas-encode and the frames; .gl/ the Debian
#        packages they load and the Vulkan loader (../shared/gpu/pack-runtime.sh). Needs make build done.
#   run [STEPS] (there, carry [".gl", "build/gpukit"]): unpacks, then the STEPS (default "wgpu jpeg-gpu present"):
#        bench/gpu_wgpu_bench.py's jpeg-wgpu, nvjpeg and pipelined parts, rcanvas-encode --codec jpeg-gpu, then the
#        present part (pygfx through rcanvas' wgpu context); "render" (not by default): bench/pygfx_render_only.py
#        at 1080p and 4K. Writes $OUT/log.txt, $OUT/wgpu.json,
#        $OUT/present.json, $OUT/jpeg_gpu.txt as it goes.
set -u
cd "$(dirname "$0")/.."
KIT=build/gpukit
FRAMES="heatmap-1920x1080 lines-1920x1080 render-1920x1080 heatmap-3840x2160 lines-3840x2160"
case "${1:-}" in
prep)
  set -e
  mkdir -p $KIT/whl $KIT/frames .gl
  grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo '/.gl/' >> .git/info/exclude
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 -d $KIT/whl wgpu==0.32.0 cffi==2.1.1 pycparser==3.12 pygfx==0.17.0 \
    pylinalg==0.6.8 freetype-py==2.5.1 uharfbuzz==0.57.0 Jinja2==3.1.6 MarkupSafe==3.0.4 rendercanvas==2.7.2 \
    hsluv==5.0.5 simplejpeg==1.9.0 uvicorn==0.55.0 h11==0.16.0 click==8.5.1 websockets==17.4
  for f in $FRAMES; do cp ../shared/frames/$f.png $KIT/frames/; done
  cp build/librcanvas.so.0.1.0 $KIT/librcanvas.so
  cp build/rcanvas-encode $KIT/rcanvas-encode
  strip $KIT/librcanvas.so $KIT/rcanvas-encode
  cp ../shared/gpu/*.sh .gl/
  bash .gl/pack-runtime.sh .gl build/rcanvas-encode build/librcanvas.so
  du -sh $KIT .gl
  ;;
run)
  shift
  STEPS=${*:-wgpu jpeg-gpu present}
  OUT=${OUT:-/tmp/out}
  mkdir -p "$OUT"
  main() {
    date -u; python3 --version; command -v python3; uname -r; nvidia-smi -L
    python3 -c 'import numpy, torch, torchvision; print("numpy", numpy.__version__, "torch", torch.__version__, "torchvision", torchvision.__version__)'
    # the Vulkan loader into / (pack-runtime's packages); the rest into /tmp/deps, for rcanvas' binaries alone
    envline=$(bash .gl/unpack-runtime.sh .gl)
    echo "$envline"
    APP_LD_LIBRARY_PATH=$(echo "$envline" | sed -n 's/^export LD_LIBRARY_PATH=\([^$]*\).*/\1/p' | sed 's/:$//')
    export APP_LD_LIBRARY_PATH
    eval "$(echo "$envline" | grep VK_DRIVER_FILES || true)"
    ldconfig -p | grep -c libvulkan
    # the wheels, unzipped (no pip needed there)
    python3 - <<'PY'
import glob, zipfile
for w in glob.glob("build/gpukit/whl/*.whl"):
    zipfile.ZipFile(w).extractall("/tmp/site")
PY
    export PYTHONPATH=/tmp/site XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
    export RCANVAS_LIBRARY=$PWD/$KIT/librcanvas.so
    python3 -c 'import wgpu, wgpu.utils; d = wgpu.utils.get_default_device(); print("wgpu adapter:", d.adapter.info)'
    case " $STEPS " in *" wgpu "*)
    echo "== part 1-2: jpeg-wgpu, pipelined, nvjpeg"
    timeout 240 python3 bench/gpu_wgpu_bench.py "$OUT" $KIT/frames jpeg-wgpu,nvjpeg,pipelined
    ;; esac
    case " $STEPS " in *" jpeg-gpu "*)
    echo "== part 3: jpeg-gpu (rcanvas-encode)"
    for f in $FRAMES; do for q in 75 80; do for ss in 420 444; do
      LD_LIBRARY_PATH=$APP_LD_LIBRARY_PATH timeout 30 $KIT/rcanvas-encode --codec jpeg-gpu --quality $q \
        --subsampling $ss --repeat 60 $KIT/frames/$f.png /tmp/o.jpg 2>&1 | tee -a "$OUT/jpeg_gpu.txt"
    done; done; done
    ;; esac
    case " $STEPS " in *" render "*)
    echo "== render alone (bench/pygfx_render_only.py: the GPU's bound, pygfx's own CPU a frame)"
    for size in 1920x1080 3840x2160; do SIZE=$size timeout 60 python3 bench/pygfx_render_only.py 4 2>/dev/null; done
    ;; esac
    case " $STEPS " in *" present "*)
    echo "== part 4: present"
    RESULT_JSON=present.json timeout 480 python3 bench/gpu_wgpu_bench.py "$OUT" $KIT/frames present
    ;; esac
    date -u
  }
  main 2>&1 | tee "$OUT/log.txt"
  ;;
*) echo "usage: $0 prep|run" >&2; exit 2 ;;
esac
