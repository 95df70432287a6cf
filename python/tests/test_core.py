"""stragglesim's functions against the CLI they wrap (same results, same error messages) and
against an independent execution of the schedules and plans in NumPy."""

import json
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import stragglesim as ss

ROOT = os.environ.get("STRAGGLESIM_SOURCE_DIR",
                      os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("STRAGGLESIM_CLI")
SIM_CONFIG = os.path.join(ROOT, "configs", "simulate", "default.yaml")


def cli(*args):
    if not CLI:
        pytest.skip("STRAGGLESIM_CLI not set (ctest sets it to the stragglesim binary)")
    return subprocess.run([CLI, *args], capture_output=True, text=True)


def cli_error(*args):
    r = cli(*args)
    assert r.returncode != 0
    prefix = "stragglesim: error: "
    line = r.stderr.splitlines()[0]
    assert line.startswith(prefix), r.stderr
    return line[len(prefix):]


def p2p_algorithms(n):
    return [a["name"] for a in ss.algorithms()
            if not a["in_network"] and ss.supports_ranks(a["name"], n)]


def run_schedule(s):
    """Each rank's chunks as sets of contributors, by the IR's round semantics."""
    n, c = s["ranks"], s["chunks"]
    held = [[{r} for _ in range(c)] for r in range(n)]
    for rnd in s["rounds"]:
        start = [[set(x) for x in row] for row in held]
        for src, dst, b, e, op in rnd["transfers"]:
            for k in range(b, e):
                if op == "reduce":
                    assert not (held[dst][k] & start[src][k]), "a contribution counted twice"
                    held[dst][k] = held[dst][k] | start[src][k]
                else:
                    held[dst][k] = set(start[src][k])
    return held


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_every_schedule_reduces_everything(n):
    for name in p2p_algorithms(n):
        s = ss.schedule(name, n)
        assert s["verified"] and s["ranks"] == n and s["algorithm"] == name
        assert s["transfers"] == sum(len(r["transfers"]) for r in s["rounds"])
        held = run_schedule(s)
        full = set(range(n))
        assert all(chunk == full for row in held for chunk in row), name


def test_ring_shape_and_straggler():
    s = ss.schedule("ring", 4)
    assert len(s["rounds"]) == 6 and s["chunks"] == 4
    assert s["rounds"][0]["transfers"][0][4] == "reduce"
    assert s["rounds"][-1]["transfers"][0][4] == "copy"
    assert ss.schedule("stragglar", 8, straggler=3)["straggler"] == 3
    assert ss.schedule("stragglar", 8)["straggler"] == 7


def execute_plan(plan, inputs):
    """Runs a lowered plan on NumPy buffers, all ranks in lock step (the executors' semantics)."""
    lay = plan["layout"]
    size = lay["dtype_size"]
    bufs = []
    for x in inputs:
        b = np.zeros(lay["padded_count"], dtype=x.dtype)
        b[:len(x)] = x
        bufs.append(b)
    by_round = {}
    for r, rp in enumerate(plan["rank_plans"]):
        for st in rp["steps"]:
            by_round.setdefault(st["round"], []).append((r, st))
    for rnd in sorted(by_round):
        start = [b.copy() for b in bufs]
        scratch = {}
        for r, st in by_round[rnd]:
            scratch[r] = np.zeros(max(st["scratch_bytes"] // size, 1), dtype=bufs[r].dtype)
        sent = {}
        for r, st in by_round[rnd]:
            for peer, off, cnt in st["sends"]:
                sent.setdefault((r, peer), []).append(start[r][off // size:off // size + cnt])
        for r, st in by_round[rnd]:
            for peer, off, cnt in st["recvs"]:
                msg = sent[(peer, r)].pop(0)
                assert len(msg) == cnt
                scratch[r][off // size:off // size + cnt] = msg
        for r, st in by_round[rnd]:
            for op, off, soff, cnt in st["applies"]:
                d, s = off // size, soff // size
                if op == "reduce":
                    bufs[r][d:d + cnt] += scratch[r][s:s + cnt]
                else:
                    bufs[r][d:d + cnt] = scratch[r][s:s + cnt]
    return [b[:len(inputs[0])] for b in bufs]


@pytest.mark.parametrize("n", [3, 4, 7])
def test_lowered_plans_sum(n):
    rng = np.random.default_rng(n)
    for name in p2p_algorithms(n):
        for count in (1, 37, 1000):
            inputs = [rng.integers(-100, 100, count).astype(np.float64) for _ in range(n)]
            chunks = ss.schedule(name, n)["chunks"]
            plan = ss.lower(name, n, max(count, chunks) * 8, "float64", 8)
            padded = [np.concatenate([x, np.zeros(max(count, chunks) - count)]) for x in inputs]
            out = execute_plan(plan, padded)
            want = np.sum(inputs, axis=0)
            for r in range(n):
                assert np.array_equal(out[r][:count], want), (name, count, r)


def test_lower_matches_cli():
    plan = ss.lower("ring", 4, "1KiB")
    r = cli("lower", "ring", "--ranks", "4", "--bytes", "1KiB", "--format", "json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert plan["layout"]["padded_bytes"] == 1024
    ours = [[(p, o, c) for p, o, c in st["sends"]] for st in plan["rank_plans"][1]["steps"]]
    # the CLI's JSON holds the same plan: compare rank 1's sends, whatever the key names
    text = json.dumps(j)
    assert len(ours) == 6 and str(ours[0][0][1]) in text


@pytest.mark.parametrize("call,args", [
    (lambda: ss.schedule("nosuch", 4), ["schedule", "nosuch", "--ranks", "4"]),
    (lambda: ss.schedule("stragglar", 2), ["schedule", "stragglar", "--ranks", "2"]),
    (lambda: ss.schedule("ring", 4, straggler=1), ["schedule", "ring", "--ranks", "4",
                                                   "--straggler", "1"]),
    (lambda: ss.schedule("stragglar", 8, straggler=9), ["schedule", "stragglar", "--ranks", "8",
                                                        "--straggler", "9"]),
    (lambda: ss.schedule("ring", 4, bogus=1), ["schedule", "ring", "--ranks", "4", "--option",
                                               "bogus=1"]),
    (lambda: ss.lower("ring", 4, "12B", "float64"), ["lower", "ring", "--ranks", "4", "--bytes",
                                                      "12B", "--dtype", "float64"]),
    (lambda: ss.lower("ring", 4, "1KiB", "complex"), ["lower", "ring", "--ranks", "4",
                                                       "--bytes", "1KiB", "--dtype", "complex"]),
    (lambda: ss.simulate("/nonexistent.yaml"), ["simulate", "/nonexistent.yaml"]),
])
def test_errors_carry_the_cli_message(call, args):
    with pytest.raises(ss.InputError) as e:
        call()
    assert str(e.value) == cli_error(*args)
    assert isinstance(e.value, ValueError)


def test_simulate_equals_cli_json():
    df = ss.simulate(SIM_CONFIG, iterations=30, seed=4)
    r = cli("simulate", SIM_CONFIG, "--json", "-n", "30", "--seed", "4")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert len(df["iteration"]) == 30
    for key in ("completion_s", "after_last_arrival_s", "algbw_GBps", "busbw_GBps", "last_rank",
                "predicted_straggler"):
        assert list(df[key]) == [it[key] for it in j["iterations"]], key
    assert df.attrs["mean_completion_s"] == j["mean_completion_s"]


def test_simulate_dict_and_its_errors():
    topology = os.path.join(ROOT, "configs", "topologies", "dgx_h100.yaml")
    config = {"topology": {"file": topology}, "network": {"model": "alphabeta"},
              "collective": {"algorithm": "stragglar", "size": "64MiB"},
              "delays": {"persistent": [{"rank": 7, "delay": {"distribution": "constant",
                                                              "value": "2ms"}}]},
              "prediction": {"policy": "previous"}, "iterations": 5}
    df = ss.simulate(config, per_rank=True)
    assert list(df["last_rank"]) == [7] * 5
    assert list(df["predicted_straggler"])[1:] == [7] * 4
    assert df.attrs["arrival_s"].shape == (5, 8)
    config["collective"]["algorithm"] = "nosuch"
    with pytest.raises(ss.InputError, match=r"<dict>:\d+:\d+: collective.algorithm"):
        ss.simulate(config)
    config["collective"]["algorithm"] = "ring"
    config["colective"] = 1
    with pytest.raises(ss.InputError, match="colective"):
        ss.simulate(config)


def test_run_equals_cli_csv(tmp_path):
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        "name: t\n"
        f"topology: {{file: {os.path.join(ROOT, 'configs', 'topologies', 'dgx_h100.yaml')}}}\n"
        "network: {model: alphabeta}\nalgorithms: [stragglar, ring]\nbaseline: ring\n"
        "stragglers: {count: 1}\niterations: 2\nseed: 1\n"
        "sweep:\n  size: [1MiB, 64MiB]\n  delay: [0, 1ms]\n")
    df = ss.run(str(exp))
    out = tmp_path / "cli"
    r = cli("run", str(exp), "-o", str(out), "--no-plots", "-q", "-j", "1")
    assert r.returncode == 0, r.stderr
    lines = (out / "results.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert list(df.keys()) == header
    assert len(df[header[0]]) == len(lines) - 1 == 16  # 8 runs x 2 iterations
    kept = ss.run(str(exp), output=tmp_path / "kept")
    assert (tmp_path / "kept" / "results.csv").read_text() == (out / "results.csv").read_text()
    assert list(kept["algorithm"]) == list(df["algorithm"])


def test_keyboard_interrupt_stops_a_simulation():
    config = {"topology": {"file": os.path.join(ROOT, "configs", "topologies", "dgx_h100.yaml")},
              "network": {"model": "alphabeta"},
              "collective": {"algorithm": "ring", "size": "1MiB"},
              "iterations": 5_000_000}
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        ss.simulate(config, max_time="10h")
    assert time.monotonic() - start < 5
    # the next call runs normally
    assert len(ss.simulate(config, iterations=3)["iteration"]) == 3


def test_docs_notebook_example_runs():
    """docs/python.md's delay sweep, as written there (under 20 lines), with a non-interactive
    matplotlib backend: StragglAR wins once the straggler is late enough."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        text = f.read()
    start = text.index("### A delay sweep in a notebook")
    block = text[text.index("```python\n", start) + len("```python\n"):]
    block = block[:block.index("```")]
    assert len(block.strip().splitlines()) < 20
    scope = {}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(compile(block, "docs/python.md", "exec"), scope)
    finally:
        os.chdir(cwd)
    speedup = scope["speedup"]
    assert speedup[0] < 1.0 < speedup[-1]
