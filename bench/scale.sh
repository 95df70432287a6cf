#!/usr/bin/env bash
# Scale cases of issue 11 through the real CLI: one process per case under /usr/bin/time -v,
# printing wall and CPU seconds, transfers per second (per wall second) and peak RSS, against
# the targets (on a 2-core machine; CPU time is the figure to trust on a shared one).
#
#   bench/scale.sh                         # uses build/experiments/stragglesim
#   bench/scale.sh path/to/stragglesim     # or another binary
#   SCALE_CASES="ring16384 schedule" bench/scale.sh   # a subset (names below)
# The verify_* cases need 1.9 GB of free space under $TMPDIR for their input.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/experiments/stragglesim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# name | target seconds | target peak RSS MiB | command (arguments of stragglesim)
cases=(
  "ring4096|2|256|simulate $root/bench/configs/ring_switch_4096.yaml --json"
  "ring16384|5|256|simulate $root/bench/configs/ring_switch_16384.yaml --json"
  "ring65536|120|1024|simulate $root/bench/configs/ring_switch_65536.yaml --json"
  "stragglar4096_switch|2|512|simulate $root/bench/configs/stragglar_switch_4096.yaml --json"
  "stragglar4096_ring|6|512|simulate $root/bench/configs/stragglar_ring_4096.yaml --json"
  "schedule|5|1024|schedule stragglar --ranks 4096"
  # verify FILE streamed, FILE written first by `schedule ALGO --ranks 4096 --format json`
  # (1.9 GB each, not timed); no target in the issue: the bounds are what streaming should keep
  "verify_stragglar4096|120|1024|verify $tmp/stragglar4096.json"
  "verify_ring4096|120|1024|verify $tmp/ring4096.json"
)
printf '%-22s %9s %9s %14s %9s  %s\n' case wall_s cpu_s transfers/s rss_MiB targets
for c in "${cases[@]}"; do
  IFS='|' read -r name t_max rss_max args <<<"$c"
  if [[ -n ${SCALE_CASES:-} && " $SCALE_CASES " != *" $name "* ]]; then continue; fi
  if [[ $name == verify_* ]]; then
    algo=${name#verify_}
    "$bin" schedule "${algo%4096}" --ranks 4096 --format json -o "$tmp/$algo.json"
  fi
  # shellcheck disable=SC2086
  /usr/bin/time -v -o "$tmp/time" "$bin" $args >"$tmp/out" 2>"$tmp/err" || {
    printf '%-22s failed: %s\n' "$name" "$(tail -1 "$tmp/err")"
    continue
  }
  if [[ $name == verify_* ]]; then rm -f "$tmp/${name#verify_}.json"; fi
  python3 - "$name" "$t_max" "$rss_max" "$tmp/out" "$tmp/time" <<'PY'
import json, re, sys
name, t_max, rss_max, out, tfile = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
text = open(tfile).read()
def field(label):
    return re.search(re.escape(label) + r": ([\d:.]+)", text).group(1)
rss = int(field("Maximum resident set size (kbytes)")) / 1024
cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
wall = 0.0
for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
    wall = wall * 60 + float(part)
if name == "schedule":  # text output: one line per round, ' | ' between transfers
    transfers = sum(line.count(" | ") + 1 for line in open(out) if line.startswith("R"))
elif name.startswith("verify_"):  # the summary's "transfers: N"
    transfers = int(re.search(r"^transfers: (\d+)$", open(out).read(), re.M).group(1))
else:
    transfers = json.load(open(out))["schedule"]["transfers"]
ok = cpu <= t_max and rss <= rss_max
print(f"{name:<22} {wall:9.2f} {cpu:9.2f} {transfers / wall / 1e6:12.1f} M {rss:9.0f}  "
      f"<= {t_max:g} s, <= {rss_max:g} MiB: {'ok' if ok else 'MISSED'}")
PY
done
