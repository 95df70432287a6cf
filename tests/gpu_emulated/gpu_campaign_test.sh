#!/usr/bin/env bash
# scripts/gpu_campaign.sh on the CPU stand-in: one run of the matrix end to end (binaries found
# through --bin, the run's CSV and table, the summary), its refusals (a non-empty output folder,
# an unknown flag), and that a run with wrong elements fails the campaign.
#   gpu_campaign_test.sh ROOT EMULATED_STRAGGLESIM_GPU [STRAGGLESIM]
set -uo pipefail
root=$1 emulated=$2 sim=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir "$tmp/bin"
ln -s "$emulated" "$tmp/bin/stragglesim-gpu"
[[ -n $sim ]] && ln -s "$sim" "$tmp/bin/stragglesim"

# One run end to end.
rc=0
"$root/scripts/gpu_campaign.sh" --quick --no-tests --bin "$tmp/bin" -o "$tmp/out" \
  --only '^single-gpu-graph-d0-ring$' >"$tmp/log" 2>&1 || rc=$?
[[ $rc == 0 ]] || { cat "$tmp/log"; fail "the campaign exited $rc"; }
[[ -s $tmp/out/single-gpu-graph-d0-ring.csv ]] || fail "no result CSV"
[[ -s $tmp/out/tl-single-gpu-graph-d0-ring.csv ]] || fail "no timeline"
grep -q 'Emulated GPU' "$tmp/out/devices.txt" || fail "devices.txt does not list the devices"
rows=$(grep -c '^single-gpu-graph-d0-ring ' "$tmp/out/summary.txt")
[[ $rows == 3 ]] || { cat "$tmp/out/summary.txt"; fail "summary has $rows ring rows, expected 3 sizes"; }
awk '$1 == "single-gpu-graph-d0-ring" && $6 != 0 { bad = 1 } END { exit bad }' "$tmp/out/summary.txt" ||
  fail "summary reports wrong elements"
if [[ -n $sim ]]; then
  # 16 MiB ring over 8 ranks: 56 reduced and 56 copied chunks of 2 MiB at 5 and 4 bytes per byte.
  grep -qE '^single-gpu-graph-d0-ring +16777216 .* 1\.057 ' "$tmp/out/summary.txt" ||
    { cat "$tmp/out/summary.txt"; fail "bytes moved of ring at 16 MiB is not 1.057 GB"; }
fi

# The misalignment probe: StragglAR at the aligned and the unaligned size, per transport.
"$root/scripts/gpu_campaign.sh" --quick --no-tests --bin "$tmp/bin" -o "$tmp/probe" \
  --only '^single-gpu-unaligned-' >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "the probe failed"; }
for b in 29360128 33554432; do
  grep -q "^measured,stragglar,8,$b," "$tmp/probe/single-gpu-unaligned-stragglar-$b.csv" ||
    fail "no probe run of stragglar at $b bytes"
done

# A non-empty output folder is refused and left as it was; so is an unknown flag.
before=$(ls -l "$tmp/out" | md5sum)
"$root/scripts/gpu_campaign.sh" --quick --bin "$tmp/bin" -o "$tmp/out" >"$tmp/log" 2>&1
[[ $? == 2 ]] || fail "a non-empty output folder was not refused with exit 2"
grep -q 'exists and is not empty' "$tmp/log" || fail "no message for the non-empty folder"
[[ $(ls -l "$tmp/out" | md5sum) == "$before" ]] || fail "the refused run changed the folder"
"$root/scripts/gpu_campaign.sh" --frobnicate >"$tmp/log" 2>&1
[[ $? == 2 ]] || fail "an unknown flag was not a usage error"
# --help is no error: the help on stdout, exit 0, nothing on stderr.
"$root/scripts/gpu_campaign.sh" --help >"$tmp/log" 2>"$tmp/err"
[[ $? == 0 ]] || fail "--help did not exit 0"
grep -q -- '--budget' "$tmp/log" || fail "--help printed no help on stdout"
[[ ! -s $tmp/err ]] || fail "--help wrote to stderr"

# A run that reports wrong elements fails the campaign (exit 1), which still finishes.
# (A new file, not the symbolic link written through: that would overwrite the real binary.)
rm "$tmp/bin/stragglesim-gpu"
cat >"$tmp/bin/stragglesim-gpu" <<'EOF'
#!/usr/bin/env bash
case $1 in
  devices) echo "GPU 0: fake"; exit 0 ;;
esac
csv=""
while [[ $# -gt 0 ]]; do [[ $1 == --csv ]] && csv=$2; shift; done
printf 'source,algorithm,ranks,bytes,dtype,delay_s,straggler,iteration,time_s,after_last_arrival_s,algbw_GBps,busbw_GBps,wrong,device\n' >"$csv"
printf 'measured,ring,8,65536,float32,0,,0,1e-4,1e-4,1,1,3,fake\n' >>"$csv"
exit 0
EOF
chmod +x "$tmp/bin/stragglesim-gpu"
"$root/scripts/gpu_campaign.sh" --quick --no-tests --bin "$tmp/bin" -o "$tmp/bad" --only '^single-gpu-graph-d0-ring$' \
  >"$tmp/log" 2>&1
[[ $? == 1 ]] || { cat "$tmp/log"; fail "wrong elements did not fail the campaign"; }
grep -q 'wrong=3' "$tmp/log" || fail "the log does not show the wrong elements"
echo "gpu_campaign_test: ok"
