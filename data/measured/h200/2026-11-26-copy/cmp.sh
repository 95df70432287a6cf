#!/usr/bin/env bash
# The single-GPU transport with --copy memcpy vs --copy kernel (branch wt-copy), 8 ranks.
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.devcarry:$(dirname "$(find /opt /usr -name 'libnccl.so.2*' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}"
g=.devcarry/copy/stragglesim-gpu
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/gpu.txt"
for mode in memcpy kernel; do
  for a in ring rhd stragglar direct_rs_ag; do
    for b in 1048576 16777216 67108864 67108868 234881024 268435456 268435460; do
      $g run --transport single-gpu --copy $mode --ranks 8 --algo $a -b $b -n 10 -w 3 -c 1 --csv "$out/$mode-$a-$b.csv" > /dev/null 2>&1 || echo "fail $mode $a $b"
    done
  done
done
cat "$out/gpu.txt"
python3 - "$out" <<'PY'
import csv, statistics, sys, os
out = sys.argv[1]
for a in ("ring", "rhd", "stragglar", "direct_rs_ag"):
    for b in (1048576, 16777216, 67108864, 67108868, 234881024, 268435456, 268435460):
        t = {}
        for m in ("memcpy", "kernel"):
            r = list(csv.DictReader(open(f"{out}/{m}-{a}-{b}.csv")))
            t[m] = (statistics.median(float(x["time_s"]) for x in r), sum(int(x["wrong"] or 0) for x in r))
        print(f"{a:13s} {b:10d} memcpy {t['memcpy'][0]*1e3:8.4f} ms  kernel {t['kernel'][0]*1e3:8.4f} ms  kernel/memcpy {t['kernel'][0]/t['memcpy'][0]:.3f}  wrong {t['memcpy'][1]}+{t['kernel'][1]}")
PY
