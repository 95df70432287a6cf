#!/usr/bin/env bash
# Configures and builds stragglesim into build/ (Release): everything, or only the targets named
# with --target (scripts/run.sh builds just `stragglesim`). Other arguments go to cmake, e.g.
#   scripts/build.sh -DSTRAGGLESIM_GPU=OFF
#   scripts/build.sh --target stragglesim
# --for-run (scripts/run.sh): install only the packages the CLI needs (setup.sh --run) and leave
# the test suite out of the configuration while GoogleTest is missing; without it the suite is
# always configured (a later scripts/test.sh turns it back on in the same build folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
targets=()
cmake_args=()
for_run=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --for-run) for_run=1; shift ;;
    --target)
      [[ $# -ge 2 ]] || { echo "build.sh: --target needs a target name" >&2; exit 1; }
      targets+=(--target "$2")
      shift 2
      ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
if [[ $for_run -eq 1 ]]; then
  "$root/scripts/setup.sh" --run
  tests=ON
  dpkg-query -W -f='${Status}' libgtest-dev 2>/dev/null | grep -q "install ok installed" || tests=OFF
else
  "$root/scripts/setup.sh"
  tests=ON
fi
build=${STRAGGLESIM_BUILD_DIR:-$root/build}
jobs=${STRAGGLESIM_JOBS:-$(nproc)}
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRAGGLESIM_BUILD_TESTS=$tests "${cmake_args[@]}" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
grep -E "stragglesim:" "$build/configure.log" >&2 || true
cmake --build "$build" -j "$jobs" "${targets[@]}"
