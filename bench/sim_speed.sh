#!/usr/bin/env bash
# Simulator speed acceptance cases: one process per case under /usr/bin/time -v, printing the
# simulation time (Google Benchmark, one iteration), transfers per second, the whole process's
# wall and CPU time (schedule generation and setup included) and its peak RSS.
#
#   bench/sim_speed.sh                 # configures and builds build-bench/ (Release, benchmarks on)
#   bench/sim_speed.sh build-sim       # or an existing build dir configured with benchmarks on
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
case $build in /*) ;; *) build=$root/$build ;; esac
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRAGGLESIM_GPU=OFF \
  -DSTRAGGLESIM_BUILD_BENCHMARKS=ON >/dev/null
ninja -C "$build" sim_bench flow_bench >/dev/null
bench=$build/bench/sim_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# case | target: simulation seconds | target: peak RSS MiB (0 = none)
cases=(
  "BM_AlphabetaRing/4096|2|1024"
  "BM_AlphabetaRingStream/4096|2|1024"
  "BM_AlphabetaRingStream/16384|60|0"
  "BM_Flow/direct/1024|5|0"
)
# flow_bench (flow model on a ring topology, threaded dataflow pass); targets from issue 11.
flow_cases=(
  "BM_FlowRingTopology/rhd/1024|1.2|0"
  "BM_FlowRingTopology/ring/4096|3|0"
  "BM_AlphabetaThreads/rhd/16384/1/real_time|60|0"
  "BM_AlphabetaThreads/rhd/16384/2/real_time|60|0"
  "BM_AlphabetaThreads/ring/4096/1/real_time|60|0"
  "BM_AlphabetaThreads/ring/4096/2/real_time|60|0"
)
printf '%-42s %12s %14s %12s %12s %10s  %s\n' case sim_s transfers/s process_s cpu_s rss_MiB targets
measure() {
  local bench=$1 c=$2
  IFS='|' read -r name t_max rss_max <<<"$c"
  /usr/bin/time -v -o "$tmp/time" "$bench" --benchmark_filter="^${name}\$" --benchmark_min_time=0 \
    --benchmark_format=json >"$tmp/out.json" 2>/dev/null
  python3 - "$name" "$t_max" "$rss_max" "$tmp/out.json" "$tmp/time" <<'EOF'
import json, re, sys
name, t_max, rss_max, out, tfile = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
b = json.load(open(out))["benchmarks"][0]
scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
sim_s = b["real_time"] * scale
rate = b["transfers"] / sim_s
text = open(tfile).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text).group(1)
secs = 0.0
for part in wall.split(":"):
    secs = secs * 60 + float(part)
target = f"sim <= {t_max:g} s" + (f", rss <= {rss_max:g} MiB" if rss_max else "")
ok = sim_s <= t_max and (not rss_max or rss <= rss_max)
cpu = float(re.search(r"User time \(seconds\): ([\d.]+)", text).group(1)) + \
      float(re.search(r"System time \(seconds\): ([\d.]+)", text).group(1))
print(f"{name:<42} {sim_s:12.3f} {rate/1e6:12.1f} M {secs:12.2f} {cpu:12.2f} {rss:10.0f}  {target}: {'ok' if ok else 'MISSED'}")
EOF
}
for c in "${cases[@]}"; do measure "$bench" "$c"; done
for c in "${flow_cases[@]}"; do measure "$build/bench/flow_bench" "$c"; done
