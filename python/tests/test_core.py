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
    assert time.monotonic() - start < 10  # uninterrupted: about 20 s
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


def advise_table(stdout):
    """The CLI's advise table: (label, speedup text, fastest text) per row, and the "use" line's
    label."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("rank algorithm"))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        f = line.split()
        rows.append((" ".join(f[1:-5]), f[-2], f[-1]))
    use = next(line for line in lines if line.startswith("use "))
    return rows, use[len("use "):use.index(":")]


def test_advise_equals_cli(tmp_path):
    args = dict(size="64MiB", delay_dist="2ms", iterations=20, jobs=1,
                algorithms=["ring", "stragglar", "rhd"], policy=["previous", "oracle"])
    df = ss.advise("dgx_h100", **args)
    r = cli("advise", "--topology", "dgx_h100", "--size", "64MiB", "--delay-dist", "2ms", "-n", "20",
            "-j", "1", "--algorithms", "ring,stragglar,rhd", "--policy", "previous,oracle", "-q")
    assert r.returncode == 0, r.stderr
    rows, use = advise_table(r.stdout)
    assert list(df["algorithm"]) == [label for label, _, _ in rows]
    assert list(df["rank"]) == list(range(1, len(rows) + 1))
    assert [f"{x:.3f}x" for x in df["speedup"]] == [s for _, s, _ in rows]
    assert [f"{100 * x:.1f}%" for x in df["fastest"]] == [w for _, _, w in rows]
    assert df.attrs["recommended"] == use == "stragglar (previous)"
    assert list(df["policy"]) == ["previous", "oracle", "", ""]
    assert df.attrs["baseline"] == "ring" and df.attrs["iterations"] == 20
    assert np.all(np.diff(df["mean_s"]) >= 0) and abs(sum(df["fastest"]) - 1) < 1e-9
    # the trace of the recommendation, as --trace writes it
    trace = tmp_path / "t.json"
    t = ss.advise("dgx_h100", "1MiB", algorithms="ring", iterations=2, trace=trace)
    assert json.loads(trace.read_text()) and t.attrs["trace_completion_s"] > 0


@pytest.mark.parametrize("kwargs,args", [
    (dict(ranks=1), ["--ranks", "1"]),
    (dict(algorithms="ring,nosuch"), ["--algorithms", "ring,nosuch"]),
    (dict(policy="previous,bogus"), ["--policy", "previous,bogus"]),
    (dict(delays="DELAYS"), ["--delays", "DELAYS"]),
])
def test_advise_errors_carry_the_cli_message(tmp_path, kwargs, args):
    delays = tmp_path / "delays.yaml"  # a misspelt key on line 2: the message names it
    delays.write_text("persistent:\n  - {rank: 3, delay: 2ms, persistance: 1}\n")
    kwargs = {k: (str(delays) if v == "DELAYS" else v) for k, v in kwargs.items()}
    args = [str(delays) if a == "DELAYS" else a for a in args]
    with pytest.raises((ss.InputError, ss.UsageError)) as e:
        ss.advise("dgx_h100", "64MiB", **kwargs)
    assert str(e.value) == cli_error("advise", "--topology", "dgx_h100", "--size", "64MiB", *args)
    if "DELAYS" in kwargs.values() or "delays" in kwargs:
        assert "delays.yaml:2:" in str(e.value) and "persistance" in str(e.value)


TRAIN_JOB = os.path.join(ROOT, "configs", "train", "gpt2_medium_64gpu.yaml")


def test_train_equals_cli_json_and_csvs(tmp_path):
    df = ss.train(TRAIN_JOB, steps=6, seed=3, per_step=True)
    steps_csv, ranks_csv = tmp_path / "steps.csv", tmp_path / "ranks.csv"
    r = cli("train", TRAIN_JOB, "-n", "6", "--seed", "3", "--json", "--steps-csv", str(steps_csv),
            "--ranks-csv", str(ranks_csv))
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert len(df["algorithm"]) == len(j["runs"]) > 1
    for key, value in j["runs"][0].items():
        if not isinstance(value, list):
            assert list(df[key]) == [run[key] for run in j["runs"]], key
    for key in ("config", "forward_s", "backward_s", "gradient_bytes", "buckets", "references"):
        assert df.attrs[key] == j[key], key
    for name, table in (("ranks", ranks_csv), ("steps", steps_csv)):
        want = ss._read_csv(str(table))
        got = df.attrs[name]
        assert list(got.keys()) == list(want.keys()), name
        for key in want:  # our values as the CSV's cells, read back alike
            ours = ss._parse_column([str(x) for x in got[key]])
            if want[key].dtype == object:
                assert list(ours) == list(want[key]), (name, key)
            else:
                assert np.array_equal(ours.astype(float), want[key].astype(float),
                                      equal_nan=True), (name, key)


def test_train_dict_and_its_errors():
    import yaml

    with open(TRAIN_JOB) as f:
        job = yaml.safe_load(f)
    assert list(ss.train(job, steps=2)["mean_step_s"]) == \
        list(ss.train(TRAIN_JOB, steps=2)["mean_step_s"])
    job["steps_per_day"] = 1
    with pytest.raises(ss.InputError, match=r"^<dict>:\d+:\d+: steps_per_day"):
        ss.train(job)
    with pytest.raises(ss.UsageError) as e:
        ss.train(TRAIN_JOB, persistence=2)
    assert str(e.value) == cli_error("train", TRAIN_JOB, "--persistence", "2")


def test_keyboard_interrupt_stops_advise_and_train():
    # advise stops after the run in flight (about 3.5 s each on an idle core; all 17 take a
    # minute), so the bound below holds on a loaded CI machine and still fails if it ran on
    for call in (lambda: ss.advise("dgx_h100", "1MiB", iterations=600_000, jobs=1),
                 lambda: ss.train(TRAIN_JOB, steps=1_000_000, max_time="100h")):
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            call()
        assert time.monotonic() - start < 30


def test_stubs_match_the_module():
    """_core.pyi names every function of the extension module with its real parameters, in
    order, and each has a docstring; the package's functions in __all__ have docstrings."""
    import ast
    import re

    from stragglesim import _core

    stub = ast.parse(open(os.path.join(os.path.dirname(ss.__file__), "_core.pyi")).read())
    stubbed = {f.name: [a.arg for a in f.args.args] for f in stub.body
               if isinstance(f, ast.FunctionDef)}
    real = {}
    for name in dir(_core):
        f = getattr(_core, name)
        if callable(f) and not isinstance(f, type):
            # pybind11's docstring starts with the signature: name(a: T, b: T) -> R
            sig = f.__doc__.splitlines()[0]
            real[name] = re.findall(r"(\w+): ", sig[sig.index("(") + 1:sig.rindex(") ->")])
            assert f.__doc__.split("\n", 2)[-1].strip(), f"_core.{name} has no docstring"
    assert stubbed == real
    for f in stub.body:
        if isinstance(f, ast.FunctionDef):
            assert ast.get_docstring(f), f"_core.pyi: {f.name} has no docstring"
    for name in ss.__all__:
        assert getattr(ss, name).__doc__, name


@pytest.mark.parametrize("call,args", [
    (lambda: ss.simulate(SIM_CONFIG, iterations=0), ["simulate", SIM_CONFIG, "-n", "0"]),
    (lambda: ss.simulate(SIM_CONFIG, iterations=-3), ["simulate", SIM_CONFIG, "-n", "-3"]),
    (lambda: ss.simulate(SIM_CONFIG, seed=-2), ["simulate", SIM_CONFIG, "--seed", "-2"]),
    (lambda: ss.simulate(SIM_CONFIG, threads=0), ["simulate", SIM_CONFIG, "--threads", "0"]),
    (lambda: ss.run(SIM_CONFIG, jobs=-1), ["run", SIM_CONFIG, "-j", "-1"]),
    (lambda: ss.run(SIM_CONFIG, iterations=0), ["run", SIM_CONFIG, "-n", "0"]),
    (lambda: ss.run(SIM_CONFIG, jobs=2, threads=2), ["run", SIM_CONFIG, "-j", "2",
                                                     "--threads", "2"]),
    (lambda: ss.schedule("ring", 0), ["schedule", "ring", "--ranks", "0"]),
    (lambda: ss.lower("ring", 2**40, "1KiB"), ["lower", "ring", "--ranks", str(2**40),
                                               "--bytes", "1KiB"]),
])
def test_numbers_out_of_range_raise_the_cli_message(call, args):
    """A count, seed or rank count out of the CLI's range raises its message; none falls back
    to the configured value."""
    with pytest.raises(ss.UsageError) as e:
        call()
    assert str(e.value) == cli_error(*args)


def test_supports_ranks_and_gil():
    assert ss.supports_ranks("ring", 2) and not ss.supports_ranks("stragglar", 2)
    assert not ss.supports_ranks("ring", 0) and not ss.supports_ranks("ring", 2**40)
    with pytest.raises(ss.InputError, match="nosuch"):
        ss.supports_ranks("nosuch", 0)
    # another Python thread runs while a simulation does (the GIL is released)
    config = {"topology": {"file": os.path.join(ROOT, "configs", "topologies", "dgx_h100.yaml")},
              "network": {"model": "alphabeta"},
              "collective": {"algorithm": "ring", "size": "1MiB"}, "iterations": 150_000}
    ticks, done = [], threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    t = threading.Thread(target=count)
    start = time.monotonic()
    t.start()
    try:
        ss.simulate(config)
    finally:
        done.set()
        t.join()
    took = time.monotonic() - start
    during = [x for x in ticks if x < start + took - 0.05]
    # Held, the GIL lets through the few ticks before the call takes it (3 in 0.69 s); released,
    # about one per 10 ms. A tenth of that leaves room for a loaded machine.
    assert took > 0.3 and len(during) >= 0.1 * took / 0.01, (took, len(during))


def test_keyboard_interrupt_stops_a_run(tmp_path):
    """Ctrl-C stops `run` after the run in flight; without output= the message says the
    journal's folder was temporary and is gone (it is)."""
    exp = {"name": "t", "topology": {"file": os.path.join(ROOT, "configs", "topologies",
                                                          "dgx_h100.yaml")},
           "network": {"model": "alphabeta"}, "algorithms": ["stragglar", "ring", "rhd"],
           "baseline": "ring", "iterations": 20_000, "seed": 1,
           "sweep": {"size": ["1MiB", "2MiB", "4MiB"]}}
    for output in (None, tmp_path / "kept"):
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt) as e:
            ss.run(exp, output=output, jobs=1)
        folder = str(e.value).split(", each in ")[1].split("/journal.jsonl")[0]
        if output is None:
            assert "temporary folder, now removed" in str(e.value)
            assert not os.path.exists(folder)
        else:
            assert os.path.exists(os.path.join(folder, "journal.jsonl"))


def test_results_are_a_dataframe_or_columns():
    """A pandas DataFrame (with .attrs) when pandas is installed, else Columns of NumPy arrays."""
    df = ss.simulate(SIM_CONFIG, iterations=3, seed=1)
    try:
        import pandas as pd
    except ImportError:
        assert type(df) is ss.Columns
        assert all(isinstance(v, np.ndarray) and len(v) == 3 for v in df.values())
    else:
        assert isinstance(df, pd.DataFrame) and len(df) == 3
    assert list(df["iteration"]) == [0, 1, 2] and df.attrs["iterations"] == 3
