#!/usr/bin/env bash
# Configures and builds stragglesim into build/ (Release). Extra arguments go to cmake, e.g.
#   scripts/build.sh -DSTRAGGLESIM_GPU=OFF
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
build=${STRAGGLESIM_BUILD_DIR:-$root/build}
jobs=${STRAGGLESIM_JOBS:-$(nproc)}
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
grep -E "stragglesim:" "$build/configure.log" >&2 || true
cmake --build "$build" -j "$jobs"
