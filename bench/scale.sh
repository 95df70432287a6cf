#!/usr/bin/env bash
# Scale cases through the real CLI, one process per case under /usr/bin/time, against a fixed
# machine reference (bench/scale_reference.cpp, compiled here with -O2 and run before and after
# the cases): a figure given as a ratio to the reference holds across machines, where seconds
# do not. Prints per case: CPU seconds (user + system, the figure to trust on a shared
# machine), wall seconds, peak RSS, CPU / reference CPU, CPU ns per transfer, and the target.
# Not a test: nothing fails when a target is missed (the last column says so).
#
#   bench/scale.sh                          # uses build/experiments/stragglesim
#   bench/scale.sh --skip-65536             # without ring 65536 (about a minute of CPU)
#   bench/scale.sh path/to/stragglesim      # another binary
#   SCALE_CASES="ring16384 ring16384_threads2" bench/scale.sh   # a subset (names below)
# Environment: CXX (compiler of the reference, default c++). The verify_* cases (not run by
# default) need 1.9 GB of free space under $TMPDIR for their input.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
skip65536=0
bin=$root/build/experiments/stragglesim
for arg in "$@"; do
  case $arg in
    --skip-65536) skip65536=1 ;;
    -h | --help)
      sed -n '2,14p' "$0"
      exit 0
      ;;
    -*)
      echo "scale.sh: unknown option $arg (see --help)" >&2
      exit 1
      ;;
    *) bin=$arg ;;
  esac
done
if [[ ! -x $bin ]]; then
  echo "scale.sh: $bin is not an executable (build the stragglesim target first)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CXX:-c++}" -O2 -std=c++20 "$root/bench/scale_reference.cpp" -o "$tmp/reference"

cfg=$root/bench/configs
# name | default (1: run unless SCALE_CASES names others) | target CPU s | command (stragglesim
# arguments). Targets: issue 27 (the ring, StragglAR and rhd cases), issue 11 (the others).
cases=(
  "ring16384|1|4|simulate $cfg/ring_switch_16384.yaml --json --threads 1"
  "ring65536|1|60|simulate $cfg/ring_switch_65536.yaml --json --threads 1"
  "stragglar4096|1|1.2|simulate $cfg/stragglar_switch_4096.yaml --json --threads 1"
  "rhd1024_flow|1|0.35|simulate $cfg/rhd_flow_ring_1024.yaml --json"
  "ring1024_flow|0|-|simulate $cfg/ring_flow_ring_1024.yaml --json"
  "ring16384_default|1|-|simulate $cfg/ring_switch_16384.yaml --json"
  "ring16384_threads2|0|-|simulate $cfg/ring_switch_16384.yaml --json --threads 2"
  "ring4096|0|2|simulate $cfg/ring_switch_4096.yaml --json --threads 1"
  "ring4096_threads2|0|-|simulate $cfg/ring_switch_4096.yaml --json --threads 2"
  "stragglar4096_threads2|0|-|simulate $cfg/stragglar_switch_4096.yaml --json --threads 2"
  "stragglar4096_ring|0|6|simulate $cfg/stragglar_ring_4096.yaml --json --threads 1"
  # issue 39 item 8: nccl_ring (8 channels) within 3x ring's CPU at 1024 ranks (128 x 8 H100)
  "ring1024_ib400|0|-|simulate $cfg/ring_ib400_1024_alphabeta.yaml --json --threads 1"
  "nccl_ring1024_ib400|0|-|simulate $cfg/nccl_ring_ib400_1024_alphabeta.yaml --json --threads 1"
  "ring1024_ib400_flow|0|-|simulate $cfg/ring_ib400_1024_flow.yaml --json"
  "nccl_ring1024_ib400_flow|0|-|simulate $cfg/nccl_ring_ib400_1024_flow.yaml --json"
  # NCCL's NVLS on 128 GPUs, pipelined steps (the default) against per round: the pipelined pass's
  # pending writes (128 multicasts per rank and round) once cost n^3 per round (1.4 s, now 0.37 s)
  "nvls128_pipelined|0|-|simulate $cfg/nccl_nvls_switch_128.yaml --json --threads 1"
  "nvls128_per_round|0|-|simulate $cfg/nccl_nvls_switch_128_per_round.yaml --json --threads 1"
  "schedule|0|5|schedule stragglar --ranks 4096"
  # verify FILE, FILE written first by `schedule ALGO --ranks 4096 --format json` (not timed)
  "verify_stragglar4096|0|-|verify $tmp/stragglar4096.json"
  "verify_ring4096|0|-|verify $tmp/ring4096.json"
)

# CPU seconds, wall seconds and peak RSS (MiB) of one command, from GNU time's output.
measure() {
  /usr/bin/time -f '%U %S %e %M' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err"
}
times() {
  awk '{ printf "%.2f %.2f %.0f\n", $1 + $2, $3, $4 / 1024 }' "$tmp/time"
}
reference() {
  measure "$tmp/reference" || {
    echo "scale.sh: the reference failed" >&2
    exit 1
  }
  times
}

read -r ref1 ref1_wall _ < <(reference)
printf '%-20s %8s %8s %8s %8s %10s  %s\n' case cpu_s wall_s rss_MiB x_ref ns/transfer target
for c in "${cases[@]}"; do
  IFS='|' read -r name default target args <<<"$c"
  if [[ -n ${SCALE_CASES:-} ]]; then
    [[ " $SCALE_CASES " == *" $name "* ]] || continue
  elif [[ $default != 1 || ($name == ring65536 && $skip65536 == 1) ]]; then
    continue
  fi
  if [[ $name == verify_* ]]; then
    algo=${name#verify_}
    "$bin" schedule "${algo%4096}" --ranks 4096 --format json -o "$tmp/$algo.json"
  fi
  # shellcheck disable=SC2086
  if ! measure "$bin" $args; then
    printf '%-20s failed: %s\n' "$name" "$(tail -1 "$tmp/err")"
    continue
  fi
  if [[ $name == verify_* ]]; then rm -f "$tmp/${name#verify_}.json"; fi
  transfers=$(python3 - "$name" "$tmp/out" <<'PY'
import json, re, sys
name, out = sys.argv[1], sys.argv[2]
if name == "schedule":  # text output: one line per round, ' | ' between transfers
    print(sum(line.count(" | ") + 1 for line in open(out) if line.startswith("R")))
elif name.startswith("verify_"):  # the summary's "transfers: N"
    print(re.search(r"^transfers: (\d+)$", open(out).read(), re.M).group(1))
else:
    print(json.load(open(out))["schedule"]["transfers"])
PY
)
  # The ratio is to the reference run before the cases (the one after is printed below).
  read -r cpu wall rss < <(times)
  awk -v n="$name" -v cpu="$cpu" -v wall="$wall" -v rss="$rss" -v ref="$ref1" \
    -v tr="$transfers" -v tg="$target" 'BEGIN {
      verdict = tg == "-" ? "-" : (cpu <= tg ? "<= " tg " s: ok" : "<= " tg " s: MISSED")
      printf "%-20s %8.2f %8.2f %8d %8.2f %10.2f  %s\n", n, cpu, wall, rss, cpu / ref,
        cpu * 1e9 / tr, verdict }'
done
read -r ref2 ref2_wall _ < <(reference)
printf '%-20s %8.2f %8.2f (before the cases: %.2f s CPU, %.2f s wall; the ratios use that one)\n' \
  reference "$ref2" "$ref2_wall" "$ref1" "$ref1_wall"
