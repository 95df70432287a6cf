"""Type stubs of stragglesim._core, the extension module (python/core.cpp). Use the functions of
the `stragglesim` package, which wrap these with keyword arguments and pandas/NumPy results."""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

__version__: str

class InputError(ValueError):
    """Bad input: the message `stragglesim` prints after 'stragglesim: error: ' (exit 1)."""

class UsageError(ValueError):
    """A misused option (the CLI's exit 2)."""

class ResourceError(RuntimeError):
    """Refused for memory or time (--max-memory, --max-time), or a failed write (exit 3)."""

class InternalError(RuntimeError):
    """A broken invariant of stragglesim (a bug; exit 4)."""

def algorithms() -> List[Dict[str, Any]]:
    """The registry's algorithms (as `stragglesim algorithms`)."""
def supports_ranks(algorithm: str, ranks: int) -> bool:
    """Whether the algorithm makes a schedule for this rank count."""
def schedule(algorithm: str, ranks: int, items: List[str], straggler: int, max_memory: str,
             max_time: str) -> Dict[str, Any]:
    """`stragglesim schedule` (option items key=value, straggler -1: none): the verified
    schedule as a dict."""
def lower(algorithm: str, ranks: int, bytes: str, dtype: str, align: int, items: List[str],
          straggler: int, max_memory: str, max_time: str) -> Dict[str, Any]:
    """`stragglesim lower` (bytes as text, option items, straggler -1: none): the per-rank plan
    as a dict."""
def simulate(source: str, is_text: bool, name: str, flags: List[str], per_rank: bool,
             max_memory: str, max_time: str
             ) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
    """`stragglesim simulate CONFIG --json` with `flags` (-n, --seed, --threads, checked by the
    CLI's rules): the iterations' columns and the summary."""
def run(source: str, is_text: bool, name: str, output: str, flags: List[str], force: bool,
        max_memory: str, max_time: str) -> Tuple[str, List[str], List[str]]:
    """`stragglesim run EXPERIMENT -o OUTPUT --no-plots -q` with `flags` (-n, --seed, -j,
    --threads, checked by the CLI's rules): the folder written, its files, the CSV's columns."""
def advise(flags: List[str]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """`stragglesim advise` with `flags` (the CLI's argument list, parsed by its parser): the
    table's columns, fastest first, and the header's fields."""
def train(source: str, is_text: bool, name: str, flags: List[str], per_step: bool
          ) -> Tuple[str, Optional[Dict[str, Any]], List[str], List[str]]:
    """`stragglesim train CONFIG --json` with `flags`: the JSON text, the steps CSV's columns
    (per_step) or None, the notes and the warnings."""
