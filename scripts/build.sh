#!/usr/bin/env bash
# Configures and builds stragglesim into build/ (Release): everything, or only the targets named
# with --target (scripts/run.sh builds just `stragglesim`). Other arguments go to cmake, e.g.
#   scripts/build.sh -DSTRAGGLESIM_GPU=OFF
#   scripts/build.sh --target stragglesim
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
targets=()
cmake_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --target)
      [[ $# -ge 2 ]] || { echo "build.sh: --target needs a target name" >&2; exit 1; }
      targets+=(--target "$2")
      shift 2
      ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
"$root/scripts/setup.sh"
build=${STRAGGLESIM_BUILD_DIR:-$root/build}
jobs=${STRAGGLESIM_JOBS:-$(nproc)}
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
grep -E "stragglesim:" "$build/configure.log" >&2 || true
cmake --build "$build" -j "$jobs" "${targets[@]}"
