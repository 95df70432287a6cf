#!/usr/bin/env bash
# Sets up, builds, and runs the main job: `stragglesim run --force`, the default experiment
# (configs/experiments/default.yaml -> results/default/: results.csv, results.json, plots and a
# summary table). Arguments, if any, replace the default command line, e.g.
#   scripts/run.sh run configs/experiments/paper_scaling.yaml
#   scripts/run.sh simulate configs/simulate/dgx_h100_straggler.yaml --json
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Only the CLI and the packages it needs: the tests and fuzz replays are scripts/test.sh's job.
STRAGGLESIM_BUILD_DIR=${STRAGGLESIM_BUILD_DIR:-$root/build} "$root/scripts/build.sh" --for-run --target stragglesim >&2
build=${STRAGGLESIM_BUILD_DIR:-$root/build}
cd "$root"
if [[ $# -eq 0 ]]; then
  # The default job's own folder: a rerun replaces results/default/, and only once it succeeded
  # (`run` alone refuses a folder holding an earlier run).
  set -- run --force
fi
exec "$build/experiments/stragglesim" "$@"
