#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# debian-chroot.sh — runs rcanvas's `make demo` and `make test` on Debian 12 or 13 as it ships: a debootstrapped
# bookworm or trixie (--variant=minbase) with only make, git and ca-certificates added by hand, so that everything
# else comes from the Makefile (its apt packages, Debian's own Node.js and npm, the npm packages). This is how a user
# with a bare Debian machine starts; CI's machine has more installed (Node.js 20 among others) and cannot show it.
#
# Usage (as root; needs debootstrap, installed here when missing, and network access to a Debian mirror and to the
# npm registry):
#   tools/debian-chroot.sh [--release R] [--dir DIR] [--target T]... [--fresh] [--remove] [--mirror URL] [--ref REF]
#     --release R    bookworm (Debian 12, the default) or trixie (Debian 13).
#     --dir DIR      the chroot (default /var/tmp/rcanvas-RELEASE). Made with debootstrap when it holds no system
#                    yet, else reused as it is (packages installed by an earlier run stay: use --fresh for a bare one).
#     --target T     what to run in it, in order (repeatable; default: demo-smoke test). T is a Makefile target
#                    (test, test-browser, test-c, ...) run as `make T` in the clone, or demo-smoke: `make demo` on a
#                    free port until it prints its URL, then the page is fetched (HTTP 200, the client script named in
#                    it, /client/package.json not served), then the demo is stopped; or wheel-check: the newest
#                    dist/rcanvas-*-manylinux_*.whl of this repository (make wheel here first) installed with pip into
#                    a venv of the chroot's python3 (apt: python3, python3-venv; nothing else) and checked with
#                    tests/python/wheel_check.py. A fresh chroot with only wheel-check is a machine with Python alone.
#     --fresh        delete DIR first and bootstrap anew.
#     --remove       delete DIR at the end (after unmounting).
#     --mirror URL   the Debian mirror (default http://deb.debian.org/debian; security updates from debian-security).
#     --ref REF      the commit to test (default HEAD of the repository this script is in). The clone is made
#                    afresh in DIR/root/rcanvas on each run, with no ../shared beside it; uncommitted changes are
#                    not in it.
# Prints the time each step took (seconds) and the number of Debian packages installed after it. Inside, /proc,
# /sys, /dev/pts and a tmpfs /dev/shm (Chromium needs it) are mounted for the run and unmounted at exit. The
# chroot shares the machine's network: the tests and the demo listen on free ports (port 0), so nothing clashes.
# Example: tools/debian-chroot.sh --release trixie --dir /work/chroot-deb13 --target demo-smoke --target test-browser
set -euo pipefail

DIR=
RELEASE=bookworm
MIRROR=http://deb.debian.org/debian
REPO=$(cd "$(dirname "$0")/.." && pwd)
REF=HEAD
TARGETS=()
FRESH=0
REMOVE=0
usage() { sed -n '3,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --release) RELEASE=${2:?--release needs bookworm or trixie}; shift 2;;
    --dir) DIR=${2:?--dir needs a folder}; shift 2;;
    --target) TARGETS+=("${2:?--target needs a make target or demo-smoke}"); shift 2;;
    --fresh) FRESH=1; shift;;
    --remove) REMOVE=1; shift;;
    --mirror) MIRROR=${2:?--mirror needs a URL}; shift 2;;
    --ref) REF=${2:?--ref needs a commit}; shift 2;;
    -h|--help) usage; exit 0;;
    *) echo "debian-chroot.sh: unknown option '$1' (--help lists them)" >&2; exit 2;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(demo-smoke test)
case "$RELEASE" in bookworm|trixie) ;; *) echo "debian-chroot.sh: --release must be bookworm or trixie, not '$RELEASE'" >&2; exit 2;; esac
DIR=${DIR:-/var/tmp/rcanvas-$RELEASE}
[ "$(id -u)" = 0 ] || { echo "debian-chroot.sh: needs root (debootstrap, chroot and mount)" >&2; exit 1; }
case "$DIR" in /|"") echo "debian-chroot.sh: --dir '$DIR' is not a chroot folder" >&2; exit 2;; esac
DIR=$(realpath -m "$DIR")
COMMIT=$(git -C "$REPO" rev-parse --verify "$REF^{commit}") ||
  { echo "debian-chroot.sh: '$REF' is no commit of $REPO" >&2; exit 2; }
[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] ||
  echo "note: $REPO has uncommitted changes; the chroot tests commit $COMMIT without them"

T0=$(date +%s)
step_start=$T0
step() { step_start=$(date +%s); echo "== $*"; }
step_done() {
  local now n; now=$(date +%s)
  n=$(chroot "$DIR" dpkg-query -W -f='${Status}\n' 2>/dev/null | grep -c "install ok installed" || true)
  echo "== $1: $((now - step_start)) s (total $((now - T0)) s; $n Debian packages installed)"
}

MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null || true; done
  MOUNTS=()
  if [ "$REMOVE" = 1 ] && [ -d "$DIR" ]; then
    if grep -q " $DIR/" /proc/mounts; then echo "not removing $DIR: something is still mounted in it" >&2
    else rm -rf "$DIR"; echo "removed $DIR"; fi
  fi
}
trap cleanup EXIT
mount_in() { # mount_in TYPE SOURCE PATH [OPTIONS]: mounts unless already mounted there
  local target="$DIR$3"
  mkdir -p "$target"
  if ! grep -q " $target " /proc/mounts; then
    mount -t "$1" ${4:+-o "$4"} "$2" "$target"
    MOUNTS+=("$target")
  fi
}
# Runs a command in the chroot with a clean environment, as a login on a fresh machine would have it.
in_chroot() {
  chroot "$DIR" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM="${TERM:-dumb}" DEBIAN_FRONTEND=noninteractive "$@"
}

# ---- The system: debootstrap minbase, Debian's usual sources, make + git + ca-certificates --------------------
if [ "$FRESH" = 1 ] && [ -d "$DIR" ]; then
  grep -q " $DIR/" /proc/mounts && { echo "debian-chroot.sh: $DIR has mounts in it; unmount them first" >&2; exit 1; }
  rm -rf "$DIR"
fi
if [ ! -f "$DIR/etc/debian_version" ]; then
  command -v debootstrap >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap; }
  step "debootstrap --variant=minbase $RELEASE $DIR"
  debootstrap --variant=minbase "$RELEASE" "$DIR" "$MIRROR"
  step_done debootstrap
fi
# As the Debian installer leaves it: the release, its updates and the security archive.
security=${MIRROR%/debian}/debian-security
cat > "$DIR/etc/apt/sources.list" <<EOF
deb $MIRROR $RELEASE main
deb $MIRROR $RELEASE-updates main
deb $security $RELEASE-security main
EOF
[ -s "$DIR/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$DIR/etc/hosts"
cp -L /etc/resolv.conf "$DIR/etc/resolv.conf" 2>/dev/null || true
mount_in proc proc /proc
mount_in sysfs sys /sys
mount_in devpts devpts /dev/pts newinstance,ptmxmode=0666
mount_in tmpfs shm /dev/shm mode=1777

step "apt-get upgrade; apt-get install make git ca-certificates"
in_chroot apt-get update -q
# debootstrap takes the release as released: the updates and security fixes first, as on an installed machine.
in_chroot apt-get upgrade -y -q >/dev/null
in_chroot apt-get install -y -q --no-install-recommends make git ca-certificates >/dev/null
# This machine's own certificate authorities (a site's TLS proxy, say) as local ones of the chroot, so that apt, git
# and npm inside reach what the machine reaches. Debian's own bundle is the chroot's; only the local additions move.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$DIR/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$DIR/usr/local/share/ca-certificates/"
  in_chroot update-ca-certificates >/dev/null
fi
step_done "make, git, ca-certificates"

# ---- The clone: the repository at COMMIT, alone (no ../shared) ------------------------------------------------
step "git clone $REPO ($COMMIT) into $DIR/root/rcanvas"
rm -rf "$DIR/root/rcanvas"
git clone -q --no-local --no-checkout "$REPO" "$DIR/root/rcanvas"
git -C "$DIR/root/rcanvas" checkout -q --detach "$COMMIT"
step_done clone

# ---- The targets --------------------------------------------------------------------------------------------
demo_smoke() {
  local log="$DIR/root/demo-smoke.log" url="" pid i code page
  rm -f "$log"
  # Its own session, so that the make and the demo under it stop together.
  setsid chroot "$DIR" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive sh -c 'cd /root/rcanvas && exec make demo PORT=0' >"$log" 2>&1 &
  pid=$!
  for ((i = 0; i < 3600; i++)); do   # up to an hour: the packages and the build come first
    url=$(grep -o 'open http://[^ ]*token=[0-9a-f]*' "$log" | head -1 | sed 's/^open //' || true)
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if [ -z "$url" ]; then
    tail -40 "$log"; kill -TERM -- "-$pid" 2>/dev/null || true
    echo "demo-smoke FAILED: make demo printed no URL (log $log)"; return 1
  fi
  local base=${url%%\?*}
  echo "demo URL: $url"
  # -L and a cookie jar: a page request with the token is answered 303 into the server's session path, which the
  # session cookie is scoped to
  local jar="$DIR/root/demo-smoke.cookies"; : > "$jar"
  page=$(curl -sS -L -b "$jar" -c "$jar" --max-time 20 -w '\n%{http_code}' "$url") || page=$'\n000'
  code=${page##*$'\n'}
  local served=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' "${base}client/package.json?${url#*\?}")
  kill -TERM -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  grep -E '^Installing:' "$log" | sed 's/^/demo-smoke: make demo /' || true
  if [ "$code" != 200 ] || ! grep -q 'client/rcanvas.js' <<<"$page"; then
    echo "demo-smoke FAILED: the page answered $code (log $log)"; return 1
  fi
  if [ "$served" = 200 ]; then echo "demo-smoke FAILED: /client/package.json is served"; return 1; fi
  echo "demo-smoke: the page answered 200 and names client/rcanvas.js; /client/package.json answered $served"
}

# wheel-check: the wheel built here (dist/, by make wheel) as a pip user installs it on a machine with Python and
# nothing else: python3 and python3-venv from apt, a venv, `pip install` of the wheel (numpy from PyPI), then
# tests/python/wheel_check.py (its own librcanvas loaded, its libraries from the wheel, frames to a raw viewer).
wheel_check() {
  local whl
  whl=$(ls -t "$REPO"/dist/rcanvas-*-manylinux_*.whl 2>/dev/null | head -1)
  [ -n "$whl" ] || { echo "wheel-check FAILED: no $REPO/dist/rcanvas-*-manylinux_*.whl (make wheel first)"; return 1; }
  in_chroot apt-get install -y -q --no-install-recommends python3 python3-venv >/dev/null || return 1
  rm -rf "$DIR/root/wheel" && mkdir -p "$DIR/root/wheel" && cp "$whl" "$DIR/root/wheel/"
  echo "wheel-check: $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"
  in_chroot sh -c "cd /root/wheel && python3 -m venv v && v/bin/pip install -q --disable-pip-version-check *.whl && \
    v/bin/python /root/rcanvas/tests/python/wheel_check.py"
}

status=0
for t in "${TARGETS[@]}"; do
  step "$t"
  if [ "$t" = demo-smoke ]; then demo_smoke || status=1
  elif [ "$t" = wheel-check ]; then wheel_check || { status=1; echo "wheel-check FAILED"; }
  else in_chroot sh -c "cd /root/rcanvas && make $t" || { status=1; echo "make $t FAILED"; }
  fi
  step_done "$t"
done
echo "== node in the chroot: $(in_chroot sh -c 'node --version 2>/dev/null || echo none')"
echo "== $( [ $status = 0 ] && echo PASSED || echo FAILED ): ${TARGETS[*]} in $DIR, $(( $(date +%s) - T0 )) s in all"
exit $status
