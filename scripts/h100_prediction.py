#!/usr/bin/env python3
"""The figures of docs/calibration.md "Predicting another GPU", from the committed data.

    python3 scripts/h100_prediction.py [--stragglesim build/experiments/stragglesim]

The shared-device model calibrated on the H200 (configs/topologies/h200_single_gpu.yaml,
h200_direct.yaml) with only memory_bandwidth changed to the H100's measured copy bandwidth
(configs/topologies/h100_*.yaml) predicts the runs of the same campaign on an NVIDIA H100
(data/measured/h100/2026-11-26). Each prediction is `stragglesim calibrate` with every parameter
fixed (`--fix`, read from the topology file): nothing is fitted, the report is the error of the
given values; delayed rows are reported apart (`--holdout 'delay_s>0'`). For reference, the
same files predict the H200's own runs of the same binary (data/measured/h200/2026-11-26-direct).
Exits 1 when a command fails.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H100 = os.path.join(ROOT, "data", "measured", "h100", "2026-11-26")
H200 = os.path.join(ROOT, "data", "measured", "h200", "2026-11-26-direct")
KEYS = ["memory_bandwidth", "copy_latency", "apply_latency", "launch_time", "copy_factor",
        "reduce_factor", "apply_copy_factor", "unaligned_factor", "operation_bandwidth"]


def fixed(topology):
    """--fix flags for the shared_device parameters written in a topology file."""
    out = []
    with open(os.path.join(ROOT, "configs", "topologies", topology)) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in KEYS:
                out += ["--fix", "%s=%s" % (key, value.strip())]
    return out


def predict(binary, folder, prefixes, topology, title):
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if f.endswith(".csv") and f.startswith(tuple(prefixes)))
    cmd = [binary, "calibrate"] + files + ["--topology-kind", "shared_device",
                                           "--holdout", "delay_s>0",
                                           "--algorithm-option", "hierarchical:gpus_per_node=4",
                                           "--algorithm-option", "stragglar_hier:gpus_per_node=4"
                                           ] + fixed(topology)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("\n### %s\n" % title)
    print("`stragglesim calibrate %s/{%s}*.csv --topology-kind shared_device --holdout "
          "'delay_s>0' --fix ...` (the values of configs/topologies/%s)\n"
          % (os.path.relpath(folder, ROOT), ",".join(prefixes), topology))
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
        predict(a.stragglesim, H200, eight, "h200_%s.yaml" % topo,
                "Reference: H200, the same binary, --transport %s, 8 ranks" % tr)


if __name__ == "__main__":
    main()
