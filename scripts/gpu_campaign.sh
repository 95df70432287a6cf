#!/usr/bin/env bash
# The GPU measurement campaign: on a machine with an NVIDIA GPU, one command checks the binaries,
# lists the devices, runs the `gpu`-labelled tests, measures the device's copy bandwidth and runs
# the whole matrix (every algorithm x sizes x delays x transports x launch modes, a delay sweep,
# rank counts, element types, the misalignment probe, the launch and cache probes when built), writing
# everything into one folder with a summary table.
#
#   scripts/gpu_campaign.sh [-o DIR] [--bin DIR] [--tests FILE] [--budget SECONDS] [--quick]
#
#   -o DIR       output folder (default: gpu-campaign-<UTC date and time>); created, must not
#                exist or be empty: nothing is overwritten
#   --bin DIR    folder holding stragglesim-gpu (default: build/gpu_backend) and, optionally, the
#                simulator's stragglesim for the summary's bytes-moved column; binaries built on
#                another machine and carried work: libcudart.so.* beside them is picked up, and
#                NCCL is looked for in the usual places (a Python package's nvidia/nccl/lib too)
#                when the loader does not find it
#   --tests FILE the gpu test binary (default: build/tests/gpu_backend_cuda_tests when present)
#   --no-tests   run no tests
#   --budget S   wall-clock budget in seconds (default 470): parts that would start after it are
#                skipped and listed as skipped in the summary
#   --quick      a few sizes only: a check that everything runs, in about a minute
#   --only REGEX run only the runs whose name (e.g. direct-graph-d0-ring) matches REGEX
#
# Written into DIR: devices.txt, nvidia-smi.txt, gtest.log + gtest.xml, ceilings.txt (the copy
# and add bandwidth, bytes read + written, when python3 with PyTorch is there), one NAME.csv
# (result rows) and NAME.txt (the table) per run, tl-NAME.csv timelines of the main matrix,
# launch.txt (the launch probe's table, when $bin/launch_probe exists), cache.txt (the cache
# probe's, when $bin/cache_probe exists),
# campaign.log (every command with its exit status and time) and summary.txt. Exit status: 0
# when every run and test passed with every checked element exact, 1 otherwise (the rest of the
# campaign still runs), 2 on a usage error.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

out="gpu-campaign-$(date -u +%Y%m%dT%H%M%SZ)"
bin="$root/build/gpu_backend"
tests=""
budget=470
quick=0
only=""
no_tests=0
# The help text: this file's header comment. --help prints it to stdout and exits 0; a usage
# error prints it to stderr and exits 2.
help_text() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
usage() { help_text >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    -o) [[ $# -ge 2 ]] || usage; out=$2; shift 2 ;;
    --bin) [[ $# -ge 2 ]] || usage; bin=$2; shift 2 ;;
    --tests) [[ $# -ge 2 ]] || usage; tests=$2; shift 2 ;;
    --budget) [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || usage; budget=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-tests) no_tests=1; shift ;;
    --only) [[ $# -ge 2 ]] || usage; only=$2; shift 2 ;;
    -h|--help) help_text; exit 0 ;;
    *) echo "gpu_campaign.sh: unknown argument '$1'" >&2; usage ;;
  esac
done

gpu="$bin/stragglesim-gpu"
[[ -x $gpu ]] || { echo "gpu_campaign.sh: no executable $gpu (build with scripts/build.sh, or give --bin)" >&2; exit 2; }
if [[ $no_tests == 0 && -z $tests && -x $root/build/tests/gpu_backend_cuda_tests ]]; then tests=$root/build/tests/gpu_backend_cuda_tests; fi
if [[ -e $out && -n "$(ls -A "$out" 2>/dev/null)" ]]; then
  echo "gpu_campaign.sh: $out exists and is not empty; give a new folder with -o" >&2; exit 2
fi
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
log="$out/campaign.log"
t0=$SECONDS
status=0
note() { printf '[%4ds] %s\n' $((SECONDS - t0)) "$*" | tee -a "$log"; }
over_budget() { (( SECONDS - t0 >= budget )); }

# The CUDA runtime carried beside the binary, and NCCL wherever it is installed.
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ldd "$gpu" 2>/dev/null | grep -q 'libnccl.*not found'; then
  nccl=$(find /usr/local /opt /usr -name 'libnccl.so.2*' 2>/dev/null | head -1)
  if [[ -n $nccl ]]; then
    export LD_LIBRARY_PATH="$(dirname "$nccl"):$LD_LIBRARY_PATH"
    note "nccl: $nccl"
  fi
fi
if ldd "$gpu" 2>/dev/null | grep -q 'not found'; then
  note "missing libraries: $(ldd "$gpu" | grep 'not found' | tr -s ' \t' ' ')"
  exit 1
fi
note "bin: $gpu"

"$gpu" devices >"$out/devices.txt" 2>&1 || { note "stragglesim-gpu devices failed: $(cat "$out/devices.txt")"; exit 1; }
note "devices: $(tr '\n' ' ' <"$out/devices.txt")"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
# Transports this binary has; direct first (the default where it applies).
transports=()
"$gpu" run --help 2>&1 | grep -q 'direct' && transports+=(direct)
transports+=(single-gpu)
note "transports: ${transports[*]}"

# The gpu-labelled tests.
if [[ $no_tests == 1 ]]; then
  note "gpu tests: not run (--no-tests)"
elif [[ -n $tests ]]; then
  if "$tests" --gtest_output="xml:$out/gtest.xml" >"$out/gtest.log" 2>&1; then
    note "gpu tests: passed ($(grep -c '^\[       OK' "$out/gtest.log") ok, $(grep -c '^\[  SKIPPED' "$out/gtest.log") skipped)"
  else
    status=1
    note "gpu tests: FAILED: $(grep '^\[  FAILED  \]' "$out/gtest.log" | sort -u | tr '\n' ' ')"
  fi
else
  note "gpu tests: no test binary (give --tests)"
fi

# The device's copy and add bandwidth, counted as bytes read + written: the ceiling every
# transport's bytes are measured against.
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  python3 - >"$out/ceilings.txt" 2>&1 <<'EOF'
import torch
torch.cuda.init()
for mib in (1, 4, 16, 64, 256, 1024):
    n = mib * (1 << 20) // 4
    a = torch.rand(n, device="cuda"); b = torch.rand(n, device="cuda"); c = torch.empty_like(a)
    def med(f):
        ts = []
        for i in range(23):
            s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
            s.record(); f(); e.record(); torch.cuda.synchronize()
            if i >= 3: ts.append(s.elapsed_time(e) * 1e-3)
        ts.sort(); return ts[len(ts) // 2]
    cp = med(lambda: c.copy_(a)); ad = med(lambda: torch.add(a, b, out=c))
    bytes_ = n * 4
    print(f"bytes={bytes_} copy_s={cp:.4e} copy_GBps_rw={2 * bytes_ / cp / 1e9:.1f} "
          f"add_s={ad:.4e} add_GBps_rw={3 * bytes_ / ad / 1e9:.1f}")
EOF
  note "ceilings: $(tail -1 "$out/ceilings.txt")"
else
  note "ceilings: skipped (no python3 with PyTorch and a GPU)"
fi

# One run: NAME and the arguments after `run`. A failed run or a wrong element marks the
# campaign failed; the rest goes on.
skipped=()
run() {
  local name=$1; shift
  if [[ -n $only && ! $name =~ $only ]]; then return; fi
  if over_budget; then skipped+=("$name"); return; fi
  local s=$SECONDS rc=0
  "$gpu" run --timeout 20s --csv "$out/$name.csv" "$@" >"$out/$name.txt" 2>&1 || rc=$?
  local wrong
  wrong=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "wrong") c = i; next }
                   c && $c != "" { w += $c } END { print w + 0 }' "$out/$name.csv" 2>/dev/null || echo "?")
  [[ $rc -eq 0 && $wrong == 0 ]] || status=1
  note "$name rc=$rc wrong=$wrong $((SECONDS - s))s"
  [[ $rc -eq 0 ]] || tail -3 "$out/$name.txt" | sed 's/^/    /' | tee -a "$log"
}

algos=(ring rhd direct tree dbtree straggler_tree stragglar halving_doubling direct_rs_ag hierarchical
       stragglar_hier)
opts_for() { case $1 in hierarchical|stragglar_hier) echo "-O gpus_per_node=4" ;; esac; }
if (( quick )); then
  sizes=(-b 64K -e 16M -f 16); iters=(-n 5 -w 2 -c 5); sweep_delays=(0 2ms); rank_counts=(4 16)
else
  sizes=(-b 64K -e 1G -f 4); iters=(-n 20 -w 5 -c 20); sweep_delays=(0 250us 500us 1ms 2ms 4ms 8ms)
  rank_counts=(4 16 32 64)
fi

# 1. The main matrix: 8 ranks, every algorithm, 64 KiB to 1 GiB, no delay and 5 ms on the last
#    rank, graph launch, per transport, with timelines.
for tr in "${transports[@]}"; do
  for d in 0 5ms; do
    for a in "${algos[@]}"; do
      n="$tr-graph-d$d-$a"
      # shellcheck disable=SC2046
      run "$n" --transport "$tr" --ranks 8 --algo "$a" $(opts_for "$a") "${sizes[@]}" "${iters[@]}" \
        --delay "$d" --launch graph --timeline "$out/tl-$n.csv"
    done
  done
done
# 2. Eager launch, no delay (the host's issue cost), on the first transport.
for a in "${algos[@]}"; do
  # shellcheck disable=SC2046
  run "${transports[0]}-eager-d0-$a" --transport "${transports[0]}" --ranks 8 --algo "$a" \
    $(opts_for "$a") "${sizes[@]}" -n 10 -w 3 -c 1 --launch eager
done
# 3. The delay sweep at 256 MiB: where StragglAR overtakes Ring, per transport.
for tr in "${transports[@]}"; do
  for d in "${sweep_delays[@]}"; do
    for a in ring rhd stragglar direct; do
      run "$tr-sweep-d$d-$a" --transport "$tr" --ranks 8 --algo "$a" -b 256M -n 20 -w 3 -c 1 --delay "$d"
    done
  done
done
# 4. Rank counts on the one device, 1 MiB to 256 MiB, without and with a 2 ms straggler.
for tr in "${transports[@]}"; do
  for r in "${rank_counts[@]}"; do
    for d in 0 2ms; do
      for a in ring rhd stragglar direct; do
        run "$tr-ranks$r-d$d-$a" --transport "$tr" --ranks "$r" --algo "$a" -b 1M -e 256M -f 4 \
          -n 10 -w 3 -c 1 --delay "$d"
      done
    done
  done
done
# 5. Element types.
for t in half bf16 float64; do
  for a in ring stragglar dbtree; do
    run "${transports[0]}-dtype-$t-$a" --transport "${transports[0]}" --ranks 8 --algo "$a" -d "$t" \
      -b 1M -e 64M -f 8 -n 5 -w 1 -c 5
  done
done

# 6. The misalignment probe (scripts/port_topology.py carries a calibrated model to another GPU
#    with it): StragglAR at 224 MiB (chunks of 32 MiB, 16-byte aligned) and at 256 MiB (chunks of
#    S/7, not aligned), 8 ranks, per transport; --quick: 28 MiB and 32 MiB.
if (( quick )); then probe_sizes=(29360128 33554432); probe_iters=(-n 3 -w 1 -c 1)
else probe_sizes=(234881024 268435456); probe_iters=(-n 10 -w 3 -c 1); fi
for tr in "${transports[@]}"; do
  for b in "${probe_sizes[@]}"; do
    run "$tr-unaligned-stragglar-$b" --transport "$tr" --ranks 8 --algo stragglar -b "$b" \
      "${probe_iters[@]}"
  done
done

# A probe of scripts/probes/ built beside stragglesim-gpu: NAME, its table's file in $out.
probe() {
  local name=$1 table=$2
  if [[ ! -x $bin/$name ]]; then
    note "$name: skipped (no $bin/$name: cmake --build build --target $name)"
  elif over_budget; then
    skipped+=("$name")
  else
    local s=$SECONDS rc=0
    timeout 120 "$bin/$name" >"$out/$table" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || status=1
    note "$name rc=$rc $((SECONDS - s))s"
  fi
}

# 7. The launch probe (scripts/probes/launch_probe.cu): what one operation costs to start on
#    this GPU, 4 to 64 streams, 4 KiB each, which the 8-rank runs cannot pin down
#    (docs/calibration.md, "Rank counts the fit never saw").
probe launch_probe launch.txt

# 8. The cache probe (scripts/probes/cache_probe.cu; not with --quick): whether an add reads the
#    scratch a copy has just written from the L2 cache, 1 to 8 streams of 1 MiB to 64 MiB
#    (docs/calibration.md, "Tried and not kept": the L2 lead the 8-rank runs cannot settle).
(( quick )) || probe cache_probe cache.txt

# The summary: per run name and size, the median time after the last arrival, the arrival
# spread, and the bandwidth of the bytes moved against the measured copy bandwidth.
if command -v python3 >/dev/null; then
  sim=()
  for s in "$bin/stragglesim" "$root/build/experiments/stragglesim"; do
    if [[ -x $s ]]; then sim=(--stragglesim "$s"); break; fi
  done
  python3 "$root/scripts/gpu_campaign_summary.py" "$out" "${sim[@]}" >"$out/summary.txt" 2>&1 || status=1
fi
if (( ${#skipped[@]} )); then
  echo "skipped (over the ${budget} s budget): ${skipped[*]}" | tee -a "$out/summary.txt" "$log"
  status=1
fi
note "done: status $status, $out/summary.txt"
exit $status
