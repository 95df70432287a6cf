#!/usr/bin/env bash
# Unaligned-access probe: PyTorch copy/add with both pointers aligned vs offset by 4 bytes
# (no 16-byte vectors), and stragglesim-gpu ring at 256 MiB vs 256 MiB + 4 bytes.
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/.devcarry:$(dirname "$(find /opt /usr -name 'libnccl.so.2*' 2>/dev/null | head -1)"):${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/gpu.txt"
python3 - > "$out/torch_unaligned.txt" 2>&1 <<'PY'
import torch
def med(f):
    ts = []
    for i in range(23):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize()
        if i >= 3: ts.append(s.elapsed_time(e) * 1e-3)
    ts.sort(); return ts[len(ts) // 2]
for mib in (16, 64, 256, 1024):
    n = mib * (1 << 20) // 4
    a = torch.rand(n + 8, device="cuda"); b = torch.rand(n + 8, device="cuda"); c = torch.empty_like(a)
    B = n * 4
    for name, o_src, o_dst in (("aligned", 0, 0), ("both+4B", 1, 1), ("src+4B", 1, 0)):
        cp = med(lambda: c[o_dst:o_dst + n].copy_(a[o_src:o_src + n]))
        ad = med(lambda: torch.add(a[o_src:o_src + n], b[o_dst:o_dst + n], out=c[o_dst:o_dst + n]))
        print(f"bytes={B} {name} copy_GBps_rw={2*B/cp/1e9:.1f} add_GBps_rw={3*B/ad/1e9:.1f}")
PY
g=.devcarry/stragglesim-gpu
for tr in single-gpu direct; do
  for a in ring rhd stragglar direct_rs_ag; do
    for b in 234881024 268435456 268435460 67108864 67108868; do
      $g run --transport $tr --ranks 8 --algo $a -b $b -n 10 -w 3 -c 1 --csv "$out/$tr-$a-$b.csv" > /dev/null 2>&1 || echo "fail $tr $a $b"
    done
  done
done
cat "$out/gpu.txt" "$out/torch_unaligned.txt"
for f in "$out"/*.csv; do python3 -c "
import csv,sys,statistics
r=list(csv.DictReader(open('$f')))
print('$(basename $f)', '%.4f ms'%(1e3*statistics.median(float(x['time_s']) for x in r)), 'wrong', sum(int(x['wrong'] or 0) for x in r))"; done
