#!/usr/bin/env python3
"""Carry a calibrated shared_device topology to another GPU from two measured numbers.

    python3 scripts/port_topology.py REF.yaml --ceilings CEILINGS.txt
        [--ref-probe DIR --probe DIR --transport single-gpu|direct] --name NAME -o OUT.yaml

REF.yaml is a file written by `stragglesim calibrate --topology-kind shared_device` on one GPU
(e.g. configs/topologies/h200_single_gpu.yaml). The new GPU's values:

- memory_bandwidth: its device-copy bandwidth, bytes read + written, the 1 GiB line of the
  campaign's ceilings.txt (copy_GBps_rw).
- unaligned_factor (with --ref-probe and --probe): the misalignment slowdown scaled by what the
  probe measures on both GPUs, u = 1 + (u_ref - 1) * (r - 1) / (r_ref - 1), where r is
  StragglAR's time per byte at 256 MiB (chunks of S/7, not 16-byte aligned) over its time per
  byte at 224 MiB (chunks of 32 MiB, aligned), 8 ranks, median of the timed iterations, in
  DIR/TRANSPORT-stragglar-268435456.csv and DIR/TRANSPORT-stragglar-234881024.csv (the probe of
  scripts/gpu_campaign.sh writes them as TRANSPORT-unaligned-stragglar-BYTES.csv; both names are
  read). The slowdown is a property of the GPU's memory system, not of its bandwidth: on the
  H200 r = 1.230, on the H100 1.107 (docs/calibration.md "Predicting another GPU").

Everything else is REF's. OUT must not exist (nothing is overwritten). Exit 1 with one message
on a missing or malformed input.
"""
import argparse
import csv
import os
import re
import statistics
import sys


def fail(msg):
    print("port_topology.py: " + msg, file=sys.stderr)
    sys.exit(1)


def copy_bandwidth(path):
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.startswith("bytes=1073741824 "):
                    m = re.search(r"copy_GBps_rw=([0-9.]+)", line)
                    if not m:
                        fail("%s:%d: no copy_GBps_rw on the 1 GiB line" % (path, n))
                    return float(m.group(1))
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    fail("%s: no line for bytes=1073741824 (the 1 GiB copy)" % path)


def median_time(folder, transport, nbytes):
    for name in ("%s-stragglar-%d.csv" % (transport, nbytes),
                 "%s-unaligned-stragglar-%d.csv" % (transport, nbytes)):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            break
    else:
        fail("%s: no %s-stragglar-%d.csv (the misalignment probe)" % (folder, transport, nbytes))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    times = []
    for n, r in enumerate(rows, 2):
        try:
            times.append(float(r["time_s"]))
        except (KeyError, TypeError, ValueError):
            fail("%s:%d: column time_s: expected a number" % (path, n))
        if int(r.get("bytes") or -1) != nbytes:
            fail("%s:%d: column bytes: expected %d" % (path, n, nbytes))
    if not times:
        fail("%s: no rows" % path)
    return statistics.median(times)


def slowdown(folder, transport):
    """StragglAR's time per byte at 256 MiB over 224 MiB."""
    return (median_time(folder, transport, 268435456) / 256) / (
        median_time(folder, transport, 234881024) / 224)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reference")
    p.add_argument("--ceilings", required=True)
    p.add_argument("--ref-probe")
    p.add_argument("--probe")
    p.add_argument("--transport", default="single-gpu", choices=["single-gpu", "direct"])
    p.add_argument("--name", required=True)
    p.add_argument("--machine", default="", help="the new GPU, for the file's comment")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    if bool(a.ref_probe) != bool(a.probe):
        fail("--ref-probe and --probe go together")
    try:
        with open(a.reference) as f:
            text = f.read()
    except OSError as e:
        fail("%s: %s" % (a.reference, e.strerror))
    if not re.search(r"(?m)^kind: shared_device$", text):
        fail("%s: key kind: expected shared_device" % a.reference)
    m = re.search(r"(?m)^unaligned_factor: ([0-9.]+)$", text)
    if not m:
        fail("%s: no key unaligned_factor" % a.reference)
    u_ref = float(m.group(1))
    bandwidth = copy_bandwidth(a.ceilings)
    u = u_ref
    how = "unaligned_factor kept"
    if a.probe:
        r_ref, r = slowdown(a.ref_probe, a.transport), slowdown(a.probe, a.transport)
        if r_ref - 1 < 0.01:
            fail("%s: the reference GPU's misalignment slowdown (%.4f) is within noise of 1; "
                 "keep its unaligned_factor (leave out --probe)" % (a.ref_probe, r_ref))
        u = max(1.0, 1 + (u_ref - 1) * (r - 1) / (r_ref - 1))
        how = ("unaligned_factor %.6g = 1 + (%.6g - 1) * (%.4f - 1) / (%.4f - 1), the misalignment "
               "probe's StragglAR slowdown here / on the reference" % (u, u_ref, r, r_ref))
    out_lines = []
    for line in text.splitlines():
        if line.startswith("memory_bandwidth:"):
            line = "memory_bandwidth: %gGB/s" % bandwidth
        elif line.startswith("unaligned_factor:"):
            line = "unaligned_factor: %.6g" % u
        elif line.startswith("name:"):
            line = "name: " + a.name
        elif line.startswith("description:"):
            line = 'description: "%s carried to another GPU by scripts/port_topology.py"' % (
                os.path.basename(a.reference))
        out_lines.append(line)
    header = ["# Carried from %s to %s by scripts/port_topology.py:" % (
        os.path.relpath(a.reference), a.machine or "another GPU"),
              "# memory_bandwidth %g GB/s, the 1 GiB device copy of %s;" % (
                  bandwidth, os.path.relpath(a.ceilings)),
              "# " + how + ".",
              "# Everything else, and the provenance below, is the reference fit's."]
    body = "\n".join(header + out_lines) + "\n"
    # Complete or absent: written beside OUT under a fresh name, then linked to OUT (a link
    # never replaces an existing path), the fresh name removed.
    if os.path.lexists(a.output):
        fail("%s exists; give a new file with -o" % a.output)
    folder = os.path.dirname(os.path.abspath(a.output))
    import tempfile
    try:
        fd, tmp = tempfile.mkstemp(prefix=".port_topology.", dir=folder)
    except OSError as e:
        fail("%s: %s" % (folder, e.strerror))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(body)
        os.link(tmp, a.output)
    except FileExistsError:
        fail("%s exists; give a new file with -o" % a.output)
    except OSError as e:
        fail("%s: %s" % (a.output, e.strerror))
    finally:
        os.unlink(tmp)
    print("wrote %s: memory_bandwidth %g GB/s, %s" % (a.output, bandwidth, how))


if __name__ == "__main__":
    main()
