#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (CTest + GoogleTest). GPU tests carry the
# label `gpu` and skip themselves when no device is present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" "$@"
build=${STRAGGLESIM_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "${STRAGGLESIM_JOBS:-$(nproc)}"
