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
        with open(self.out("single_gpu.yaml")) as f:
            self.assertIn("unaligned_factor: 1.11983", f.read())

    def test_bandwidth_alone_without_a_probe(self):
        r = port(os.path.join(TOPO, "h200_single_gpu.yaml"), "--ceilings", CEIL, "--name", "x",
                 "-o", self.out("x.yaml"))
        self.assertEqual(r.returncode, 0, r.stderr)
        text = open(self.out("x.yaml")).read()
        self.assertIn("memory_bandwidth: 2971.4GB/s", text)
        self.assertIn("unaligned_factor: 1.25668", text)

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
