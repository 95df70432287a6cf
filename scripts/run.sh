#!/usr/bin/env bash
# Sets up, builds, and runs the main job: `stragglesim simulate` on the default configuration.
# Arguments, if any, replace the default command line, e.g.
#   scripts/run.sh simulate configs/simulate/dgx_h100_straggler.yaml --json
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
STRAGGLESIM_BUILD_DIR=${STRAGGLESIM_BUILD_DIR:-$root/build} "$root/scripts/build.sh" >&2
build=${STRAGGLESIM_BUILD_DIR:-$root/build}
cd "$root"
if [[ $# -eq 0 ]]; then
  set -- simulate configs/simulate/default.yaml
fi
exec "$build/experiments/stragglesim" "$@"
