#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang, ASan and UBSan into build-fuzz/ and runs
# each for SECONDS (default 600) on a copy of its seed corpus (docs/testing.md "Fuzzing").
#   scripts/fuzz.sh [SECONDS] [HARNESS...]    harnesses: fuzz/NAME_fuzz.cpp (simulate_config,
#                                             experiment_config, topology, schedule_json,
#                                             schedule_bin, calibration_csv, simgrid_platform,
#                                             step_log, training_config, calibration_sim,
#                                             timeline, profiler_trace; default all)
# Environment: STRAGGLESIM_FUZZ_BUILD_DIR (default build-fuzz), STRAGGLESIM_FUZZ_JOBS (harnesses
# run at once, default 1), CXX (default clang++). Findings (crash-*, timeout-*, oom-*) and each
# run's log land in build-fuzz/runs/<harness>/; replay one with
# build-fuzz/fuzz/fuzz_<harness> build-fuzz/runs/<harness>/crash-...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
[[ $# -gt 0 ]] && shift
# Every harness in fuzz/ (fuzz/NAME_fuzz.cpp), so that a new one cannot be left out here.
all=()
for f in "$root"/fuzz/*_fuzz.cpp; do
  f=${f##*/}
  all+=("${f%_fuzz.cpp}")
done
harnesses=("$@")
[[ ${#harnesses[@]} -eq 0 ]] && harnesses=("${all[@]}")
for h in "${harnesses[@]}"; do
  [[ " ${all[*]} " == *" $h "* ]] || { echo "fuzz.sh: unknown harness '$h' (valid: ${all[*]})" >&2; exit 2; }
done
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "fuzz.sh: SECONDS must be a positive integer, got '$seconds'" >&2; exit 2; }

cxx=${CXX:-clang++}
build=${STRAGGLESIM_FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${STRAGGLESIM_FUZZ_JOBS:-1}
"$root/scripts/setup.sh" --fuzz

# Every library gets coverage instrumentation and the sanitizers; the harnesses link libFuzzer.
# -fno-sanitize=function: clang 14 cannot emit UBSan's function-type prologue for C++20
# coroutines under coverage instrumentation ("Cannot represent a difference across sections").
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSTRAGGLESIM_GPU=OFF -DSTRAGGLESIM_BUILD_TESTS=OFF -DSTRAGGLESIM_BUILD_FUZZ_REPLAY=OFF \
  -DSTRAGGLESIM_BUILD_FUZZERS=ON "${launcher[@]}" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz_$h"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1
run_one() {
  local h=$1 dir=$build/runs/$1
  rm -rf "$dir" && mkdir -p "$dir/corpus"
  cp "$root/fuzz/corpus/$h/"* "$dir/corpus/"
  # -timeout: one input running over 10 s is a finding (the CLI's loaders answer at once);
  # -rss_limit_mb: over 2 GB is a finding (the harness refuses beyond a 256 MiB budget).
  (cd "$dir" && "$build/fuzz/fuzz_$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     -max_len=16384 -print_final_stats=1 -artifact_prefix="$dir/" corpus >"$dir/log" 2>&1) || true
  local execs findings
  execs=$(grep -E "^stat::number_of_executed_units" "$dir/log" | awk '{print $2}')
  findings=$(ls "$dir" | grep -cE '^(crash|timeout|oom|leak|slow-unit)-' || true)
  local span="in ${seconds}s"
  [[ $findings -eq 0 ]] || span="before it stopped at the finding"
  echo "fuzz $h: ${execs:-?} executions $span, $findings findings, corpus $(ls "$dir/corpus" | wc -l) inputs (log: $dir/log)"
  [[ $findings -eq 0 ]] || grep -E "ERROR|SUMMARY|terminate|what\(\)" "$dir/log" | head -5 | sed 's/^/  /'
}
running=0
for h in "${harnesses[@]}"; do
  run_one "$h" &
  running=$((running + 1))
  if [[ $running -ge $jobs ]]; then wait -n; running=$((running - 1)); fi
done
wait
