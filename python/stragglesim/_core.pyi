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

def algorithms() -> List[Dict[str, Any]]: ...
def supports_ranks(algorithm: str, ranks: int) -> bool: ...
def schedule(algorithm: str, ranks: int, items: List[str], straggler: int, max_memory: str,
             max_time: str) -> Dict[str, Any]: ...
def lower(algorithm: str, ranks: int, bytes: str, dtype: str, align: int, items: List[str],
          straggler: int, max_memory: str, max_time: str) -> Dict[str, Any]: ...
def simulate(source: str, is_text: bool, name: str, iterations: int, seed: int, per_rank: bool,
             threads: int, max_memory: str, max_time: str
             ) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]: ...
def run(source: str, is_text: bool, name: str, output: str, iterations: int, seed: int,
        jobs: int, threads: int, force: bool, max_memory: str, max_time: str
        ) -> Tuple[str, List[str], List[str]]: ...
def advise(flags: List[str]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """`stragglesim advise` with `flags` (["advise", "--topology", T, ...], parsed by the CLI's
    parser): the table's columns, fastest first, and the header's fields."""
def train(source: str, is_text: bool, name: str, flags: List[str], per_step: bool
          ) -> Tuple[str, Optional[Dict[str, Any]], List[str], List[str]]:
    """`stragglesim train CONFIG --json` with `flags`: the JSON text, the steps CSV's columns
    (per_step) or None, the notes and the warnings."""
