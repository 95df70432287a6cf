"""Tests of experiments/train_plot.py on a small job (4 ranks, a few steps): every file is
written, the CSVs hold what `train` reports, an existing folder and bad arguments are refused
with nothing written, and a failed `train` leaves no folder behind. Run by ctest (train_plot_py)
with the stragglesim binary as argument; skipped (exit 77) without matplotlib."""
import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("no matplotlib: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "experiments", "train_plot.py")
BINARY = sys.argv.pop(1) if len(sys.argv) > 1 else "stragglesim"

JOB = """topology: {kind: switch, ranks: 4, bandwidth: 100GB/s, latency: 3us}
algorithms: [ring, stragglar]
modes: [synchronous, {mode: exclude_late, late: 1, every: 4}]
prediction: {policy: previous}
delays: {base: {distribution: exponential, mean: 100us}, persistent: [{rank: 2, delay: 3ms}]}
workload:
  model: {params: 10000000, forward: 5ms, backward: 10ms}
  bucket_cap: 8MiB
steps: 12
cluster_gpus: 100
"""


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, "--stragglesim", BINARY] + list(args),
                          capture_output=True, text=True, check=False)


class TrainPlot(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.job = os.path.join(self.tmp.name, "job.yaml")
        with open(self.job, "w") as f:
            f.write(JOB)

    def tearDown(self):
        self.tmp.cleanup()

    def test_writes_every_file(self):
        out = os.path.join(self.tmp.name, "plots")
        r = run("--persistence", "0,0.5,1", "--format", "png,svg", self.job, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("train.json", "steps.csv", "ranks.csv", "lost_vs_persistence.csv", "step_time_cdf.png",
                     "step_time_cdf.svg", "idle_per_rank.png", "idle_per_rank.svg",
                     "lost_gpu_hours_vs_persistence.png", "lost_gpu_hours_vs_persistence.svg"):
            path = os.path.join(out, name)
            self.assertTrue(os.path.isfile(path), name)
            self.assertGreater(os.path.getsize(path), 1000 if name.endswith(("png", "svg")) else 10, name)
        with open(os.path.join(out, "train.json")) as f:
            self.assertEqual(len(json.load(f)["runs"]), 4)
        with open(os.path.join(out, "lost_vs_persistence.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 3 * 4)
        self.assertEqual(sorted({r["persistence"] for r in rows}), ["0.0", "0.5", "1.0"])
        # Persistence 1 is the job as configured: its synchronous Ring row is train.json's.
        with open(os.path.join(out, "train.json")) as f:
            ring = json.load(f)["runs"][0]
        row = [r for r in rows if r["persistence"] == "1.0" and r["algorithm"] == "ring"
               and r["mode"] == "synchronous"][0]
        self.assertAlmostEqual(float(row["lost_gpu_hours_per_day"]), ring["lost_gpu_hours_per_day"], places=9)
        # Against the common reference too: the reference's step, the fraction and its GPU-hours.
        for key in ("reference_mean_step_s", "lost_vs_reference", "lost_vs_reference_gpu_hours_per_day"):
            self.assertAlmostEqual(float(row[key]), ring[key], places=9, msg=key)
        self.assertIn("lost_gpu_hours_vs_persistence.png", r.stdout)

    def test_lost_against_the_reference_or_the_own_step(self):
        # The default plots the common-reference figure (--lost reference); --lost own the
        # figure against each run's own no-delay step: another plot.
        png = {}
        for name, flags in (("default", []), ("reference", ["--lost", "reference"]), ("own", ["--lost", "own"])):
            out = os.path.join(self.tmp.name, name)
            r = run("--persistence", "1", "--steps", "4", *flags, self.job, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(out, "lost_gpu_hours_vs_persistence.png"), "rb") as f:
                png[name] = f.read()
        self.assertEqual(png["default"], png["reference"])
        self.assertNotEqual(png["default"], png["own"])
        fresh = os.path.join(self.tmp.name, "fresh")
        r = run("--lost", "both", self.job, fresh)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--lost", r.stderr)
        self.assertFalse(os.path.exists(fresh))

    def test_progress_lines(self):
        out = os.path.join(self.tmp.name, "plots")
        r = run("--persistence", "0.5,1", self.job, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [line for line in r.stderr.splitlines() if "done in" in line]
        self.assertEqual(len(lines), 3, r.stderr)
        self.assertIn("run 1/3, the job as configured: done in ", lines[0])
        self.assertIn("run 3/3, persistence 1: done in ", lines[2])

    def test_finds_a_python_with_matplotlib(self):
        # -S: no site-packages, so this interpreter lacks matplotlib; the script runs itself
        # again with STRAGGLESIM_PYTHON, which has it.
        out = os.path.join(self.tmp.name, "plots")
        env = dict(os.environ, STRAGGLESIM_PYTHON=sys.executable)
        env.pop("STRAGGLESIM_TRAIN_PLOT_RERUN", None)
        r = subprocess.run([sys.executable, "-S", SCRIPT, "--stragglesim", BINARY, "--persistence", "none",
                            self.job, out], capture_output=True, text=True, check=False, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("lacks matplotlib; running with " + sys.executable, r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(out, "step_time_cdf.png")))
        # Already re-run once (or no interpreter has it): exit 2, nothing written.
        env["STRAGGLESIM_TRAIN_PLOT_RERUN"] = "1"
        fresh = os.path.join(self.tmp.name, "fresh")
        r = subprocess.run([sys.executable, "-S", SCRIPT, self.job, fresh], capture_output=True, text=True,
                           check=False, env=env)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no python3 with matplotlib", r.stderr)
        self.assertFalse(os.path.exists(fresh))

    def test_refuses_an_existing_folder_and_bad_arguments(self):
        out = os.path.join(self.tmp.name, "exists")
        os.mkdir(out)
        r = run("--persistence", "none", self.job, out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("exists", r.stderr)
        self.assertEqual(os.listdir(out), [])
        fresh = os.path.join(self.tmp.name, "fresh")
        for bad in (["--persistence", "0,2"], ["--persistence", "nan"], ["--format", "gif"]):
            r = run(*bad, self.job, fresh)
            self.assertEqual(r.returncode, 1, bad)
            self.assertFalse(os.path.exists(fresh), bad)

    def test_failed_train_leaves_nothing(self):
        with open(self.job, "w") as f:
            f.write(JOB.replace(", persistent: [{rank: 2, delay: 3ms}]", ""))
        out = os.path.join(self.tmp.name, "plots")
        r = run(self.job, out)  # the persistence sweep needs a persistent straggler
        self.assertEqual(r.returncode, 1)
        self.assertIn("--persistence none", r.stderr)
        self.assertFalse(os.path.exists(out))
        r = run("--persistence", "none", self.job, out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(out, "step_time_cdf.png")))
        self.assertFalse(os.path.exists(os.path.join(out, "lost_vs_persistence.csv")))


if __name__ == "__main__":
    unittest.main()
