#!/usr/bin/env bash
# Rebuilds the seed corpora fuzz/corpus/<harness>/ from the shipped files (docs/testing.md "Fuzzing"):
# configs, schedules written by `stragglesim schedule`, tests/data/calibration. Configs that
# name a topology file get a second copy with the topology inlined, since a harness reads text
# with no folder to resolve paths against.
#   fuzz/make_corpus.sh [STRAGGLESIM]          default build/experiments/stragglesim
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/experiments/stragglesim}
corpus=$root/fuzz/corpus
# Regression inputs (issue15_*, and crash inputs once fixed) are kept; the rest is rebuilt.
find "$corpus" -type f ! -name 'issue*' -delete 2>/dev/null || true
mkdir -p "$corpus"/{simulate_config,experiment_config,topology,schedule_json,schedule_bin,calibration_csv,simgrid_platform,step_log,training_config,calibration_sim,timeline,profiler_trace}

# A config with `topology: {file: ../topologies/X.yaml}` -> the same with X's keys inline.
inline_topology() {
  python3 - "$1" <<'PY'
import re, sys, pathlib
p = pathlib.Path(sys.argv[1])
out = []
for line in p.read_text().splitlines():
    m = re.match(r"topology: \{file: (\S+)\}$", line)
    if m:
        topo = (p.parent / m.group(1)).read_text().splitlines()
        out.append("topology:")
        out += ["  " + t for t in topo if t.strip() and not t.lstrip().startswith("#")]
    else:
        out.append(line)
print("\n".join(out))
PY
}

for f in "$root"/configs/simulate/*.yaml; do
  cp "$f" "$corpus/simulate_config/"
  grep -q "topology: {file:" "$f" && inline_topology "$f" >"$corpus/simulate_config/inline_$(basename "$f")"
done
for f in "$root"/configs/experiments/*.yaml; do
  cp "$f" "$corpus/experiment_config/"
  grep -q "topology: {file:" "$f" && inline_topology "$f" >"$corpus/experiment_config/inline_$(basename "$f")"
done
cp "$root"/configs/topologies/*.yaml "$corpus/topology/"
for kind in "switch, ranks: 4" "ring, ranks: 5" "fully_connected, ranks: 3" "torus2d, x: 2, y: 3" \
            "fat_tree, k: 4, tiers: 2"; do
  name=$(echo "$kind" | cut -d, -f1)
  printf 'kind: %s\nbandwidth: 100GB/s\nlatency: 2us\n' "$kind" | sed 's/, /\n/g' >"$corpus/topology/$name.yaml"
done

for spec in "ring 4" "ring 5" "rhd 6" "dbtree 6" "direct 4" "stragglar 5" "halving_doubling 4" "tree 4" "direct_rs_ag 4"; do
  set -- $spec
  "$bin" schedule "$1" --ranks "$2" --format json >"$corpus/schedule_json/$1_$2.json" 2>/dev/null ||
    rm -f "$corpus/schedule_json/$1_$2.json"
  "$bin" schedule "$1" --ranks "$2" --format bin -o "$corpus/schedule_bin/$1_$2.bin" 2>/dev/null ||
    rm -f "$corpus/schedule_bin/$1_$2.bin"
done

cp "$root"/tests/data/calibration/*.csv "$root"/tests/data/calibration/*.txt "$corpus/calibration_csv/"
cp "$root"/configs/topologies/simgrid/*.xml "$corpus/simgrid_platform/"
# Step logs, training jobs (no topology files to resolve) and result CSVs of measured runs.
cp "$root"/tests/data/step_logs/*.csv "$corpus/step_log/"
cp "$root"/configs/train/*.yaml "$corpus/training_config/"
cp "$root"/tests/data/calibration/ring4_measured.csv "$corpus/calibration_sim/"
# Timelines: the first iteration of each shipped run (a whole file is past the 16 KiB -max_len),
# with the options it ran with in an options column (the hierarchical one: gpus_per_node=4).
for f in "$root"/tests/data/calibration/h200_tl_*.csv; do
  opt=$([[ $f == *hierarchical* ]] && echo "gpus_per_node=4" || true)
  awk -F, -v opt="$opt" 'NR == 1 { print $0 ",options"; next } NR == 2 { b = $3 }
                         $4 == 0 && $3 == b { print $0 "," opt }' "$f" >"$corpus/timeline/$(basename "$f")"
done
# Profiler traces: two ranks' traces of a few steps, separated by a line "---" (the harness's form).
for n in 2 3; do
  for ((r = 0; r < n; ++r)); do
    [[ $r -gt 0 ]] && echo "---"
    printf '{"distributedInfo": {"rank": %d, "world_size": %d}, "traceEvents": [' "$r" "$n"
    for s in 0 1 2 3 4; do
      [[ $s -gt 0 ]] && printf ', '
      printf '{"ph": "X", "name": "ProfilerStep#%d", "ts": %d, "dur": %d}' "$s" $((s * 5000)) $((4000 + 37 * r * s % 900))
    done
    printf ']}\n'
  done >"$corpus/profiler_trace/ranks$n.json"
done
du -sh "$corpus"
