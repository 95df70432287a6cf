#!/usr/bin/env python3
"""scripts/port_topology.py: the shipped H100 files are what it writes from the committed data;
it refuses an existing output (nothing overwritten, no stray file) and bad input with one
message and exit 1."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "port_topology.py")
PROBE = os.path.join(ROOT, "data", "measured", "unaligned", "2026-11-26")
CEIL = os.path.join(ROOT, "data", "measured", "h100", "2026-11-26", "ceilings.txt")
TOPO = os.path.join(ROOT, "configs", "topologies")


def port(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def body(path):
    """The keys and values (comments dropped)."""
    with open(path) as f:
        return [line for line in f if not line.startswith("#")]


def value(path, key):
    """A top-level key's value as the file writes it."""
    for line in body(path):
        k, _, v = line.partition(":")
        if k == key:
            return v.strip()
    raise KeyError("%s: no %s" % (path, key))


def probe_ratio(gpu):
    """StragglAR's time per byte at 256 MiB over 224 MiB, single-gpu (the misalignment probe)."""
    import csv
    import statistics

    def median(nbytes):
        path = os.path.join(PROBE, gpu, "single-gpu-stragglar-%d.csv" % nbytes)
        with open(path, newline="") as f:
            return statistics.median(float(r["time_s"]) for r in csv.DictReader(f))
    return (median(268435456) / 256) / (median(234881024) / 224)


class PortTopology(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def out(self, name):
        return os.path.join(self.dir.name, name)

    def test_the_shipped_h100_files_are_its_output(self):
        for t, transport in (("single_gpu", "single-gpu"), ("direct", "direct")):
            r = port(os.path.join(TOPO, "h200_%s.yaml" % t), "--transport", transport,
                     "--ceilings", CEIL, "--ref-probe", os.path.join(PROBE, "h200"),
                     "--probe", os.path.join(PROBE, "h100"), "--name", "h100_" + t,
                     "-o", self.out(t + ".yaml"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(body(self.out(t + ".yaml")),
                             body(os.path.join(TOPO, "h100_%s.yaml" % t)))
        # u = 1 + (u_ref - 1)(r - 1)/(r_ref - 1), from the reference file and the probe's data
        u_ref = float(value(os.path.join(TOPO, "h200_single_gpu.yaml"), "unaligned_factor"))
        u = 1 + (u_ref - 1) * (probe_ratio("h100") - 1) / (probe_ratio("h200") - 1)
        self.assertAlmostEqual(float(value(self.out("single_gpu.yaml"), "unaligned_factor")), u,
                               places=5)
        self.assertLess(u, u_ref)  # the H100 pays less for misaligned chunks than the H200

    def test_bandwidth_alone_without_a_probe(self):
        r = port(os.path.join(TOPO, "h200_single_gpu.yaml"), "--ceilings", CEIL, "--name", "x",
                 "-o", self.out("x.yaml"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(value(self.out("x.yaml"), "memory_bandwidth"), "2971.4GB/s")
        ref = os.path.join(TOPO, "h200_single_gpu.yaml")
        for key in ("unaligned_factor", "copy_latency", "apply_latency", "launch_time"):
            self.assertEqual(value(self.out("x.yaml"), key), value(ref, key), key)

    def test_refuses_an_existing_output_and_leaves_it(self):
        path = self.out("taken.yaml")
        with open(path, "w") as f:
            f.write("mine\n")
        r = port(os.path.join(TOPO, "h200_single_gpu.yaml"), "--ceilings", CEIL, "--name", "x",
                 "-o", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("exists", r.stderr)
        self.assertEqual(open(path).read(), "mine\n")
        self.assertEqual(os.listdir(self.dir.name), ["taken.yaml"])

    def test_bad_input_one_message(self):
        bad = self.out("ceil.txt")
        with open(bad, "w") as f:
            f.write("bytes=1048576 copy_GBps_rw=90\n")
        cases = [
            ([os.path.join(TOPO, "h200_single_gpu.yaml"), "--ceilings", bad], "1073741824"),
            ([os.path.join(TOPO, "h200_single_gpu.yaml"), "--ceilings", CEIL, "--probe",
              os.path.join(PROBE, "h100")], "go together"),
            ([os.path.join(TOPO, "h200_single_gpu.yaml"), "--ceilings", CEIL, "--ref-probe",
              self.dir.name, "--probe", os.path.join(PROBE, "h100")], "misalignment probe"),
            ([os.path.join(ROOT, "configs", "topologies", "dgx_h100.yaml"), "--ceilings", CEIL],
             "shared_device"),
        ]
        for args, text in cases:
            r = port(*(args + ["--name", "x", "-o", self.out("y.yaml")]))
            self.assertEqual(r.returncode, 1, args)
            self.assertIn(text, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertFalse(os.path.exists(self.out("y.yaml")))


if __name__ == "__main__":
    unittest.main()
