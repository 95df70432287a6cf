"""stragglesim: AllReduce schedules, their lowering and the simulator, from Python.

The functions here call the same C++ as the ``stragglesim`` command line (the extension module
``stragglesim._core``), with the same checks: a bad input raises :class:`InputError` (a
``ValueError``) whose message is what the CLI prints after ``stragglesim: error:``.

    >>> import stragglesim as ss
    >>> s = ss.schedule("ring", 4)                 # rounds of (src, dst, chunk_begin, chunk_end, op)
    >>> s["rounds"][0]["transfers"][0]
    (0, 1, 0, 1, 'reduce')
    >>> plan = ss.lower("stragglar", 8, "1MiB", straggler=7)   # per-rank send/receive plan
    >>> df = ss.simulate({"topology": "h200", "ranks": 8, ...})  # columns of the JSON output

Configs (``simulate``, ``run``, ``train``) are a YAML path or a dict in the same config language
(docs/user_guide.md); a dict is written out as YAML text and read by the same loader, so its
errors name the key path (as ``<dict>:LINE:COLUMN: key.path: ...``). Results come as columns
with the names of the CLI's CSV and JSON outputs: a pandas DataFrame when pandas is installed,
else a :class:`Columns` dict of NumPy arrays. See docs/python.md.

``stragglesim.torch`` holds the DDP communication hook that runs any of these schedules with
``torch.distributed`` point-to-point operations.
"""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
import warnings
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np

from . import _core
from ._core import InputError, InternalError, ResourceError, UsageError

__version__ = _core.__version__
__all__ = [
    "Columns",
    "InputError",
    "InternalError",
    "ResourceError",
    "UsageError",
    "advise",
    "algorithms",
    "lower",
    "run",
    "schedule",
    "simulate",
    "supports_ranks",
    "train",
]

Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]


class Columns(dict):
    """Columns of a result (name -> NumPy array), used when pandas is not installed.

    ``attrs`` holds the run's summary (as ``DataFrame.attrs`` does with pandas).
    """

    def __init__(self, columns: Mapping[str, Any], attrs: Optional[Dict[str, Any]] = None):
        super().__init__(columns)
        self.attrs: Dict[str, Any] = dict(attrs or {})

    def __repr__(self) -> str:
        rows = len(next(iter(self.values()))) if self else 0
        return f"Columns({rows} rows: {', '.join(self.keys())})"


def _frame(columns: Mapping[str, Any], attrs: Dict[str, Any]):
    cols = {k: (v if isinstance(v, np.ndarray) else np.asarray(v)) for k, v in columns.items()}
    try:
        import pandas as pd  # optional
    except ImportError:
        return Columns(cols, attrs)
    df = pd.DataFrame(cols)
    df.attrs.update(attrs)
    return df


def _options(options: Mapping[str, Any]):
    """keyword options -> (the CLI's --option items, --straggler or -1)."""
    straggler = -1
    items: List[str] = []
    for key, value in options.items():
        if key == "straggler":
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InputError(f"--straggler: must be an integer rank, got {value!r}")
            if value < 0:
                raise InputError(f"--straggler: must be >= 0, got {value}")
            straggler = int(value)
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        items.append(f"{key}={value}")
    return items, straggler


# The CLI's --ranks range for `schedule` and `lower` (experiments/cli/schedule.cpp, lower.cpp;
# test_core.py compares the messages).
_MAX_RANKS = 1 << 20


def _ranks(ranks: Any) -> int:
    """``ranks`` as the CLI's --ranks takes it: an integer from 1 to 2^20 (UsageError)."""
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)):
        raise InputError(f"--ranks: expected an integer, got {ranks!r}")
    if not 1 <= ranks <= _MAX_RANKS:
        raise UsageError(f"--ranks: Value {ranks} not in range 1 to {_MAX_RANKS}")
    return int(ranks)


def _budget(value: Optional[str]) -> str:
    return "" if value is None else str(value)


def algorithms() -> List[Dict[str, Any]]:
    """The registry's algorithms: name, description, supported_ranks, straggler_aware,
    in_network and options ((name, description, default) tuples), as ``stragglesim algorithms``."""
    return _core.algorithms()


def supports_ranks(algorithm: str, ranks: int) -> bool:
    """Whether ``algorithm`` makes a schedule for ``ranks`` ranks (InputError: unknown name)."""
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)):
        raise InputError(f"--ranks: expected an integer, got {ranks!r}")
    if not 1 <= ranks <= _MAX_RANKS:
        _core.supports_ranks(algorithm, 2)  # an unknown name still raises
        return False
    return _core.supports_ranks(algorithm, int(ranks))


def schedule(algorithm: str, ranks: int, *, max_memory: Optional[str] = None,
             max_time: Optional[str] = None, **options: Any) -> Dict[str, Any]:
    """The schedule ``stragglesim schedule ALGORITHM --ranks RANKS`` writes, as data, verified.

    ``options`` are the generator's options (``--option key=value``; ``straggler=R`` is
    ``--straggler R``). Returns a dict: algorithm, collective, ranks, chunks, straggler (or
    None), late, options, transfers (count), verified (always True: a schedule that fails
    verification raises InternalError), summary (the verifier's text) and rounds, a list of
    ``{"phase": str, "transfers": [(src, dst, chunk_begin, chunk_end, "reduce"|"copy"), ...]}``
    (chunk ranges are half-open; in-network schedules also have ``switch_reduces``:
    ``(members, receivers, chunk_begin, chunk_end)``).
    """
    items, straggler = _options(options)
    return _core.schedule(algorithm, _ranks(ranks), items, straggler, _budget(max_memory),
                          _budget(max_time))


def lower(algorithm: str, ranks: int, bytes: Union[int, str], dtype: str = "float32",
          align: int = 128, *, max_memory: Optional[str] = None,
          max_time: Optional[str] = None, **options: Any) -> Dict[str, Any]:
    """The per-rank point-to-point plan of ``stragglesim lower`` (lowering/plan.hpp), as data.

    ``bytes``: per-rank buffer size (an int, or text such as ``"64MiB"``). Returns a dict:
    algorithm, collective, ranks, rounds, straggler, layout (dtype, dtype_size, chunks, align,
    bytes, count, chunk_count, padded_count, padded_bytes) and rank_plans: per rank
    ``{"steps": [...], "scratch_bytes": int}``, each step ``{"round", "sends": [(peer, offset,
    count)], "recvs": [(peer, scratch_offset, count)], "applies": [("reduce"|"copy", offset,
    scratch_offset, count)], "scratch_bytes"}``: offsets in bytes, counts in elements. A step's
    sends read the buffer as it was before the step; receives land in scratch and are applied
    after all of the step's transfers, in order.
    """
    items, straggler = _options(options)
    if isinstance(bytes, bool) or not isinstance(bytes, (int, np.integer, str)):
        raise InputError(f"--bytes: expected a size (an integer or text like 64MiB), got {bytes!r}")
    return _core.lower(algorithm, _ranks(ranks), str(bytes), dtype, int(align), items, straggler,
                       _budget(max_memory), _budget(max_time))


def _config_source(config: Config):
    """(source, is_text, name): a path as is, a mapping as YAML text named <dict>."""
    if isinstance(config, Mapping):
        import yaml  # python3-yaml

        return yaml.safe_dump(dict(config), sort_keys=False), True, "<dict>"
    if isinstance(config, (str, os.PathLike)):
        return os.fspath(config), False, ""
    raise TypeError(f"config must be a YAML path or a dict, got {type(config).__name__}")


def simulate(config: Config, *, iterations: Optional[int] = None, seed: Optional[int] = None,
             per_rank: bool = False, threads: int = 1, max_memory: Optional[str] = None,
             max_time: Optional[str] = None):
    """``stragglesim simulate CONFIG --json``: one configuration over many iterations.

    Returns one row per iteration with the JSON output's names: iteration, completion_s,
    after_last_arrival_s, algbw_GBps, busbw_GBps, last_rank, predicted_straggler, chosen; the
    summary (mean_completion_s, mean_after_last_arrival_s, algbw_GBps, busbw_GBps,
    prediction_accuracy, fallback_fraction, algorithm, ranks, rounds, transfers, seed, ...) is
    in ``.attrs``, with ``arrival_s`` and ``finish_s`` (iterations x ranks arrays) when
    ``per_rank``. ``iterations``, ``seed``, ``threads``, ``max_memory``, ``max_time``: the CLI's
    ``-n``, ``--seed``, ``--threads`` (threads of one simulation's alpha-beta pass; results are
    identical for any count), ... checked by its parser (UsageError out of range; None: as
    configured). Runs without the GIL; Ctrl-C (KeyboardInterrupt) stops it between iterations.
    """
    source, is_text, name = _config_source(config)
    flags = _flags([("--iterations", iterations), ("--seed", seed), ("--threads", threads)])
    cols, attrs = _core.simulate(source, is_text, name, flags, bool(per_rank),
                                 _budget(max_memory), _budget(max_time))
    if attrs.get("shared_link"):
        warnings.warn(attrs["shared_link"], RuntimeWarning, stacklevel=2)
    return _frame(cols, attrs)


def _parse_column(cells: List[str]) -> np.ndarray:
    """int64 (uint64 for seeds beyond it), else float64 (empty cells: NaN), else strings."""
    try:
        ints = [int(c) for c in cells]
        try:
            return np.array(ints, dtype=np.int64)
        except OverflowError:
            return np.array(ints, dtype=np.uint64)
    except (ValueError, OverflowError):
        pass
    try:
        return np.array([float(c) if c != "" else np.nan for c in cells], dtype=np.float64)
    except ValueError:
        return np.array(cells, dtype=object)


def _read_csv(path: str):
    """results.csv as columns: a column of numbers as int64 or float64 (empty cells: NaN),
    anything else as strings."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    cols: Dict[str, Any] = {}
    for j, name in enumerate(header):
        cells = [r[j] if j < len(r) else "" for r in rows]
        cols[name] = _parse_column(cells)
    return cols


def run(experiment: Config, *, output: Optional[Union[str, "os.PathLike[str]"]] = None,
        iterations: Optional[int] = None, seed: Optional[int] = None, jobs: int = 1,
        threads: int = 1, force: bool = False, max_memory: Optional[str] = None,
        max_time: Optional[str] = None):
    """``stragglesim run EXPERIMENT -o OUTPUT --no-plots``: every (point, algorithm) of an
    experiment; returns results.csv's rows as columns (the same names).

    ``output``: the folder for results.csv, results.json and journal.jsonl (kept); None: a
    temporary folder, removed once the CSV is read. ``jobs`` runs at a time (0: every core);
    ``iterations``, ``seed``, ``jobs``, ``threads``: the CLI's ``-n``, ``--seed``, ``-j``,
    ``--threads``, checked by its parser (UsageError out of range; None: as configured).
    Ctrl-C stops after the runs in flight (KeyboardInterrupt; the journal stays, as in the CLI).
    """
    flags = _flags([("--iterations", iterations), ("--seed", seed),
                    ("--jobs", None if isinstance(jobs, int) and not isinstance(jobs, bool)
                     and jobs == 0 else jobs), ("--threads", threads)])
    source, is_text, name = _config_source(experiment)
    temporary = None
    if output is None:
        temporary = tempfile.mkdtemp(prefix="stragglesim-run-")
        folder = temporary
    else:
        folder = os.fspath(output)
    try:
        try:
            written, files, _ = _core.run(source, is_text, name, folder, flags, bool(force),
                                          _budget(max_memory), _budget(max_time))
        except KeyboardInterrupt as e:
            if temporary is None:
                raise
            raise KeyboardInterrupt(f"{e} (a temporary folder, now removed: give output= to "
                                    f"keep the runs done)") from None
        csv_path = next((f for f in files if f.endswith("results.csv")),
                        os.path.join(written, "results.csv"))
        cols = _read_csv(csv_path)
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    attrs: Dict[str, Any] = {"experiment": name or source}
    if temporary is None:
        attrs["output"] = written
        attrs["files"] = list(files)
    return _frame(cols, attrs)


def _flag_value(flag: str, value: Any) -> str:
    """A keyword's value as the CLI's flag text: a list joined by commas, a bool refused."""
    if isinstance(value, bool):
        raise InputError(f"{flag}: expected a value, got {value!r}")
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _flags(pairs: List[Any]) -> List[str]:
    """[(flag, value or None)] -> the CLI's argument list (None: the flag is left out)."""
    out: List[str] = []
    for flag, value in pairs:
        if value is not None:
            out += [flag, _flag_value(flag, value)]
    return out


def advise(topology: Union[str, "os.PathLike[str]"], size: Optional[Union[str, int]] = None, *,
           ranks: Optional[int] = None, workload: Optional[Union[str, "os.PathLike[str]"]] = None,
           delay_dist: Optional[str] = None, delays: Optional[Union[str, "os.PathLike[str]"]] = None,
           straggler_rank: Optional[int] = None, persistence: Optional[float] = None,
           probability: Optional[float] = None, base_dist: Optional[str] = None,
           policy: Union[str, List[str], None] = None, fallback: Union[str, List[str], None] = None,
           network: Optional[str] = None, gamma: Optional[str] = None,
           protocol: Optional[str] = None, algorithms: Union[str, List[str], None] = None,
           iterations: Optional[int] = None, seed: Optional[int] = None,
           jobs: Optional[int] = None, threads: Optional[int] = None,
           trace: Optional[Union[str, "os.PathLike[str]"]] = None,
           trace_iteration: Optional[int] = None, trace_links: Optional[int] = None,
           trace_ranks: Optional[str] = None, trace_rounds: Optional[str] = None,
           trace_window: Optional[str] = None, trace_max_size: Optional[str] = None,
           max_memory: Optional[str] = None, max_time: Optional[str] = None,
           progress: bool = False):
    """``stragglesim advise``: which AllReduce algorithm to use, every candidate simulated on
    the same random arrivals and ranked by mean completion.

    Each keyword is the CLI's flag of that name (``delay_dist`` is ``--delay-dist``, ``size``
    ``--size``, ...; see ``stragglesim advise --help``), parsed and checked by the CLI's own
    parser, so a bad value raises the CLI's message (UsageError for a flag out of its range,
    InputError naming the flag, or the file, line and key of a ``delays``/``workload`` file).
    Lists (``algorithms``, ``policy``, ``fallback``) may be given as Python lists. ``None``
    leaves a flag at the CLI's default (200 iterations, seed 1, policy previous, every core).

    Returns the table's rows, fastest first: rank, algorithm (the table's label, with its
    policy when several are ranked), policy, mean_s, p90_s, after_last_arrival_s ("after last
    arr."), speedup (the "vs BASELINE" column, mean baseline / mean), fastest (share of
    iterations it was the fastest, 0..1), straggler_aware, prediction_accuracy,
    fallback_fraction. ``.attrs``: baseline, recommended, topology, ranks, size_bytes,
    workload, network, protocol, delays, policies, iterations, seed, left_out, notes, warnings
    (also issued as RuntimeWarning) and, with ``trace``, trace and trace_completion_s.

    Runs without the GIL; Ctrl-C (KeyboardInterrupt) stops after the runs in flight.
    ``progress=True``: the CLI's progress lines on stderr (after 5 s).
    """
    flags = ["advise"] + _flags([
        ("--topology", topology), ("--size", size), ("--ranks", ranks), ("--workload", workload),
        ("--delay-dist", delay_dist), ("--delays", delays), ("--straggler-rank", straggler_rank),
        ("--persistence", persistence), ("--probability", probability),
        ("--base-dist", base_dist), ("--policy", policy), ("--fallback", fallback),
        ("--network", network), ("--gamma", gamma), ("--protocol", protocol),
        ("--algorithms", algorithms), ("--iterations", iterations), ("--seed", seed),
        ("--jobs", jobs), ("--threads", threads), ("--trace", trace),
        ("--trace-iteration", trace_iteration), ("--trace-links", trace_links),
        ("--trace-ranks", trace_ranks), ("--trace-rounds", trace_rounds),
        ("--trace-window", trace_window), ("--trace-max-size", trace_max_size),
        ("--max-memory", max_memory), ("--max-time", max_time)])
    if not progress:
        flags.append("--quiet")
    cols, attrs = _core.advise(flags)
    for w in attrs["warnings"]:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return _frame(cols, attrs)


_RANK_KEYS = ("mean_idle_s", "max_idle_s", "mean_delay_s", "sat_out_fraction")


def train(job: Config, *, steps: Optional[int] = None, seed: Optional[int] = None,
          persistence: Optional[float] = None, probability: Optional[float] = None,
          per_step: bool = False, max_memory: Optional[str] = None,
          max_time: Optional[str] = None):
    """``stragglesim train JOB --json``: what stragglers cost a data-parallel training job.

    ``job``: a training YAML path or a dict in the same language. ``steps``, ``seed``,
    ``persistence``, ``probability``, ``max_memory``, ``max_time``: the CLI's ``--steps``,
    ``--seed``, ... (checked by its parser; None: as configured).

    Returns one row per run (algorithm x mode) with the names of ``--json``'s ``runs``:
    algorithm, options, mode, mean_step_s, p50_step_s, p90_step_s, p99_step_s, max_step_s,
    samples_per_s, baseline_mean_step_s, lost_fraction, lost_gpu_hours_per_day,
    lost_vs_reference, mean_staleness_steps, ... ``.attrs``: the JSON's other fields (config,
    forward_s, backward_s, gradient_bytes, buckets, references, version), ``ranks`` (per run
    and rank, the ``--ranks-csv`` columns: algorithm, options, mode, rank, mean_idle_s,
    max_idle_s, mean_delay_s, sat_out_fraction), with ``per_step`` ``steps`` (the
    ``--steps-csv`` columns: algorithm, options, mode, step, step_time_s, end_s, mean_idle_s,
    max_idle_s, slowest_rank, exposed_comm_s, bucket_runs, average_run, sat_out), and notes and
    warnings (also issued as RuntimeWarning). Runs without the GIL; Ctrl-C
    (KeyboardInterrupt) stops it before its next step.
    """
    import json

    source, is_text, name = _config_source(job)
    flags = _flags([("--steps", steps), ("--seed", seed), ("--persistence", persistence),
                    ("--probability", probability), ("--max-memory", max_memory),
                    ("--max-time", max_time)])
    text, step_cols, notes, warns = _core.train(source, is_text, name, flags, bool(per_step))
    summary = json.loads(text)
    runs = summary.pop("runs")
    first = ("algorithm", "options", "mode")  # the CSVs' first columns, then the JSON's order
    scalar = list(first) + [k for k in (runs[0].keys() if runs else [])
                            if k not in _RANK_KEYS + first]
    cols = {k: np.array([r[k] for r in runs]) for k in scalar}
    ranks: Dict[str, List[Any]] = {k: [] for k in ("algorithm", "options", "mode", "rank")}
    ranks.update({k: [] for k in _RANK_KEYS})
    for r in runs:
        for k, v in enumerate(r["mean_idle_s"]):
            ranks["algorithm"].append(r["algorithm"])
            ranks["options"].append(r["options"])
            ranks["mode"].append(r["mode"])
            ranks["rank"].append(k)
            for key in _RANK_KEYS:
                ranks[key].append(r[key][k])
    attrs: Dict[str, Any] = dict(summary)
    attrs["ranks"] = _frame({k: np.array(v) for k, v in ranks.items()}, {})
    if step_cols is not None:
        attrs["steps"] = _frame(step_cols, {})
    attrs["notes"] = list(notes)
    attrs["warnings"] = list(warns)
    for w in warns:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return _frame(cols, attrs)
