#!/usr/bin/env python3
"""The figures of docs/calibration.md "Predicting another GPU", from the committed data.

    python3 scripts/h100_prediction.py [--stragglesim build/experiments/stragglesim]

The shared-device model calibrated on the H200 (configs/topologies/h200_single_gpu.yaml,
h200_direct.yaml) carried to the H100 by two measured numbers (configs/topologies/h100_*.yaml,
written by scripts/port_topology.py: the copy bandwidth and the misalignment probe), and with
memory_bandwidth alone changed, predicts the runs of the same campaign on an NVIDIA H100
(data/measured/h100/2026-11-26). Each prediction is `stragglesim calibrate` with every parameter
fixed (`--fix`, read from the topology file): nothing is fitted, the report is the error of the
given values; delayed rows are reported apart (`--holdout 'delay_s>0'`). For reference, the
same files predict the H200's own runs of the same binary (data/measured/h200/2026-11-26-direct).
Exits 1 when a command fails.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H100 = os.path.join(ROOT, "data", "measured", "h100", "2026-11-26")
H200 = os.path.join(ROOT, "data", "measured", "h200", "2026-11-26-direct")
KEYS = ["memory_bandwidth", "copy_latency", "apply_latency", "launch_time", "copy_factor",
        "reduce_factor", "apply_copy_factor", "unaligned_factor", "operation_bandwidth"]


def fixed(topology, override=None):
    """--fix flags for the shared_device parameters written in a topology file (override: key ->
    value replacing the file's)."""
    out = []
    with open(os.path.join(ROOT, "configs", "topologies", topology)) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in KEYS:
                value = (override or {}).get(key, value.strip())
                out += ["--fix", "%s=%s" % (key, value)]
    return out


def h100_copy_bandwidth():
    with open(os.path.join(H100, "ceilings.txt")) as f:
        for line in f:
            if line.startswith("bytes=1073741824 "):
                return line.split("copy_GBps_rw=")[1].split()[0] + "GB/s"
    sys.exit("no 1 GiB copy in ceilings.txt")


def predict(binary, folder, prefixes, topology, title, override=None):
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if f.endswith(".csv") and f.startswith(tuple(prefixes)))
    cmd = [binary, "calibrate"] + files + ["--topology-kind", "shared_device",
                                           "--holdout", "delay_s>0",
                                           "--algorithm-option", "hierarchical:gpus_per_node=4",
                                           "--algorithm-option", "stragglar_hier:gpus_per_node=4"
                                           ] + fixed(topology, override)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("\n### %s\n" % title)
    print("`stragglesim calibrate %s/{%s}*.csv --topology-kind shared_device --holdout "
          "'delay_s>0' --fix ...` (the values of configs/topologies/%s%s)\n"
          % (os.path.relpath(folder, ROOT), ",".join(prefixes), topology,
             ", memory_bandwidth " + override["memory_bandwidth"] if override else ""))
    print("```")
    keep = False
    for line in r.stdout.splitlines():
        keep = keep or line.startswith("|relative error|")
        if keep or line.startswith("fit:"):
            print(line)
    print("```")
    if r.returncode != 0:
        sys.stderr.write(r.stdout)
        sys.exit(1)


def crossover(binary, transport, topology, override=None):
    """StragglAR's crossover delay over Ring at 256 MiB on the H100 sweep, measured and
    simulated: Ring / StragglAR (median time after the last arrival per sweep file) interpolated
    linearly between the files' median delays (as tests/experiments/h100_prediction_test.cpp)."""
    files = sorted(os.path.join(H100, f) for f in os.listdir(H100)
                   if f.startswith(transport + "-sweep-") and f.endswith(".csv"))
    with tempfile.TemporaryDirectory() as tmp:
        rows_csv = os.path.join(tmp, "rows.csv")
        subprocess.run([binary, "calibrate"] + files + [
            "--topology-kind", "shared_device", "--holdout", "delay_s>0",
            "--rows-output", rows_csv] + fixed(topology, override),
            check=True, stdout=subprocess.DEVNULL)
        with open(rows_csv, newline="") as f:
            rows = list(csv.DictReader(f))
    delay, meas, sim = defaultdict(list), defaultdict(list), defaultdict(list)
    for r in rows:
        nominal = r["file"].rsplit("-", 1)[0]
        delay[nominal].append(float(r["delay_s"]))
        meas[(nominal, r["algorithm"])].append(float(r["measured_s"]))
        sim[(nominal, r["algorithm"])].append(float(r["simulated_s"]))
    pts = sorted((statistics.median(d),
                  statistics.median(meas[(n, "ring")]) / statistics.median(meas[(n, "stragglar")]),
                  statistics.median(sim[(n, "ring")]) / statistics.median(sim[(n, "stragglar")]))
                 for n, d in delay.items())

    def cross(k):
        for p0, p1 in zip(pts, pts[1:]):
            if p0[k] < 1 <= p1[k]:
                return p0[0] + (1 - p0[k]) * (p1[0] - p0[0]) / (p1[k] - p0[k])
        return None
    text = lambda d: "%.2f ms" % (d * 1e3) if d is not None else "none"
    return text(cross(1)), text(cross(2))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stragglesim", default=os.path.join(ROOT, "build", "experiments", "stragglesim"))
    a = p.parse_args()
    for tr, topo in (("single-gpu", "single_gpu"), ("direct", "direct")):
        eight = ["%s-graph-d0-" % tr, "%s-graph-d5ms-" % tr, "%s-sweep-" % tr]
        predict(a.stragglesim, H100, eight, "h100_%s.yaml" % topo,
                "H100, --transport %s, 8 ranks (no delay: 'fitted' columns; delayed: 'held')" % tr)
        predict(a.stragglesim, H100, ["%s-ranks" % tr], "h100_%s.yaml" % topo,
                "H100, --transport %s, 4, 16, 32 and 64 ranks" % tr)
        bw = {"memory_bandwidth": h100_copy_bandwidth()}
        predict(a.stragglesim, H100, eight, "h200_%s.yaml" % topo,
                "H100, --transport %s, 8 ranks, the H200 file with memory_bandwidth alone changed"
                % tr, bw)
        predict(a.stragglesim, H100, ["%s-ranks" % tr], "h200_%s.yaml" % topo,
                "H100, --transport %s, 4 to 64 ranks, memory_bandwidth alone changed" % tr, bw)
        m, s2 = crossover(a.stragglesim, tr, "h100_%s.yaml" % topo)
        _, s1 = crossover(a.stragglesim, tr, "h200_%s.yaml" % topo, bw)
        print("\nStragglAR's crossover over Ring at 256 MiB on the H100, --transport %s: measured "
              "%s, predicted %s (memory_bandwidth alone: %s)" % (tr, m, s2, s1))
        predict(a.stragglesim, H200, eight, "h200_%s.yaml" % topo,
                "Reference: H200, the same binary, --transport %s, 8 ranks" % tr)


if __name__ == "__main__":
    main()
