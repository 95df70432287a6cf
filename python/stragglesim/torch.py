"""Any stragglesim schedule as a PyTorch DDP communication hook (docs/python.md).

    import stragglesim.torch as sst
    model = torch.nn.parallel.DistributedDataParallel(net)
    model.register_comm_hook(None, sst.allreduce_hook(algorithm="stragglar", straggler="previous"))

The hook runs the schedule the registry makes (ring, rhd, dbtree, stragglar, stragglar_hier,
direct, ...) with ``torch.distributed`` point-to-point operations on the flattened gradient
bucket: the plan of ``stragglesim.lower`` for the bucket's size and dtype (cached per size,
dtype and straggler), one ``batch_isend_irecv`` group per round in which the rank takes part,
then the round's receives applied in order (``+=`` for a reduce, a copy for a copy), which is the
schedule IR's round semantics. The bucket is padded to the plan's layout (any size works, one
element included) and the sum is divided by the world size, as DDP's default hook does.

Straggler-aware schedules (StragglAR) are built for one late rank:

* ``straggler=R`` (an int): always rank R (``"fixed"``).
* ``straggler="previous"``: each rank records when its first bucket of a step became ready,
  as the time since its last exchange ended; those times travel inside that bucket's own exchange
  (``world_size`` extra elements of the padded buffer, each rank writing only its own, so the sum
  delivers all of them; no extra collective), and the rank that was last becomes the straggler of
  the next step. The first step runs for the schedule's default straggler. Ranks that are not
  waiting for the straggler run the rounds that do not involve it while it still computes: a
  point-to-point operation waits only for its peer.
* ``straggler=None``: the schedule's default.

``arrival_log=PATH``: rank 0 writes ``rank,step,seconds`` rows (each rank's time from the end of
the previous step's last exchange to its first bucket being ready), the step log that
``stragglesim fit-delays`` reads (experiments/config/delay_files.hpp). The file must not exist.

Errors (an unknown algorithm or option, an in-network algorithm, a world size the schedule
cannot serve, a straggler outside the world, a backend without point-to-point operations) raise ``stragglesim.InputError``
when the hook is made, on every rank alike, before anything is sent. ``allreduce_`` on tensors
that are not dense, contiguous and of one floating dtype raises on every rank: a flag travels
with the exchange, so a bad input on one rank never leaves the others waiting.

Works on any backend with point-to-point operations: gloo and NCCL (CUDA tensors). gloo's
``send``/``recv`` hand the tensor's data pointer to its TCP transport as it is, with no copy to
the host (ProcessGroupGloo.cpp, unlike its all-reduce, which stages CUDA tensors), so on gloo a
CUDA bucket is staged here: copied to the host once, reduced there, copied back.

A world of one rank (a single-GPU or single-process job) needs no transfer: the hook checks its
arguments as for any world size (the options against the smallest world the algorithm serves)
and returns the bucket as it is, divided by 1, on its device.
"""

from __future__ import annotations

import bisect
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.distributed as dist

from . import InputError, InternalError, lower as _lower, schedule as _schedule, supports_ranks

__all__ = ["ScheduleAllReduce", "allreduce_hook"]

# Backends known to have send/recv; any other is probed once when the hook is made.
_P2P_BACKENDS = ("gloo", "nccl", "mpi")
# A message travels in up to PIECES pieces of at least PIECE_BYTES, each applied when it has
# arrived (ScheduleAllReduce): the adds overlap the transfers.
PIECES = 4
PIECE_BYTES = 256 << 10
_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
}


def _pieces(items, pieces: int, least: int):
    """(peer, ..., begin, end) messages cut into up to ``pieces`` equal pieces of at least
    ``least`` elements, from the message's count alone: its sender and receiver cut it alike."""
    out = []
    for *head, b, e in items:
        k = max(1, min(pieces, (e - b) // least))
        out += [(*head, b + (e - b) * i // k, b + (e - b) * (i + 1) // k) for i in range(k)]
    return out


def _overlap(b1: int, e1: int, b2: int, e2: int) -> bool:
    return b1 < e2 and b2 < e1


class _Step:
    """One round of one rank's plan, in elements, ready to run:

    * ``sends``: (peer, begin, end) of the data buffer;
    * ``recvs``: (peer, into_data, begin, end): into scratch, or (``into_data``) straight into
      the data buffer for a copy that nothing else of the round touches (it reads the whole
      message, no send of the round reads its destination, no other apply writes there): the
      copy out of scratch is saved (an all-gather's rounds are all such copies);
    * both cut into pieces (_pieces);
    * ``applies``: (reduce?, data begin, scratch begin, count, waits), cut at the receive
      pieces' bounds, in the plan's order; ``waits``: the indexes (sends, then receives) of the
      operations to wait for first: the receive piece it reads and any send of the round that
      reads what it writes (a round's sends read the buffer as it was before the round)."""

    __slots__ = ("sends", "recvs", "applies")

    def __init__(self, step: Dict[str, Any], size: int, pieces: int, least: int):
        sends = [(p, o // size, o // size + c) for p, o, c in step["sends"]]
        recvs = [(p, o // size, o // size + c) for p, o, c in step["recvs"]]
        applies = [(op == "reduce", o // size, so // size, c) for op, o, so, c in step["applies"]]
        direct = {}  # receive -> the apply it replaces
        for i, (_, b, e) in enumerate(recvs):
            readers = [k for k, (_, _, s, c) in enumerate(applies) if _overlap(s, s + c, b, e)]
            if len(readers) != 1:
                continue
            k = readers[0]
            reduce, d, s, c = applies[k]
            if reduce or s != b or c != e - b:
                continue
            if any(_overlap(d, d + c, sb, se) for _, sb, se in sends):
                continue
            if any(j != k and _overlap(d, d + c, dd, dd + cc)
                   for j, (_, dd, _, cc) in enumerate(applies)):
                continue
            direct[i] = k
        self.sends = _pieces(sends, pieces, least)
        self.recvs = _pieces([(p, True, applies[direct[i]][1], applies[direct[i]][1] + e - b)
                              if i in direct else (p, False, b, e)
                              for i, (p, b, e) in enumerate(recvs)], pieces, least)
        replaced = set(direct.values())
        bounds = sorted((b, e, len(self.sends) + i)
                        for i, (_, into_data, b, e) in enumerate(self.recvs) if not into_data)
        starts = [b for b, _, _ in bounds]
        self.applies = []
        for k, (reduce, d, s, c) in enumerate(applies):
            if k in replaced:
                continue
            end = s + c
            while s < end:
                j = bisect.bisect_right(starts, s) - 1
                rb, re, index = bounds[j] if j >= 0 else (0, 0, -1)
                if not rb <= s < re:
                    raise InternalError(f"stragglesim.torch: an apply reads scratch element {s}, "
                                        f"which no receive of its round writes")
                n = min(end, re) - s
                waits = [index] + [i for i, (_, sb, se) in enumerate(self.sends)
                                   if _overlap(d, d + n, sb, se)]
                self.applies.append((reduce, d, s, n, tuple(waits)))
                d, s = d + n, s + n


class _Plan:
    def __init__(self, plan: Dict[str, Any], rank: int, pieces: int, piece_bytes: int):
        layout = plan["layout"]
        size = layout["dtype_size"]
        self.padded = layout["padded_count"]
        self.scratch = plan["rank_plans"][rank]["scratch_bytes"] // size
        self.steps = [_Step(s, size, pieces, max(1, piece_bytes // size))
                      for s in plan["rank_plans"][rank]["steps"]]


class ScheduleAllReduce:
    """A schedule run as an AllReduce (sum) over ``process_group`` with point-to-point operations.

    ``algorithm`` and ``options`` as for ``stragglesim.schedule``; ``straggler``: None, a rank,
    ``"fixed"`` (with ``options["straggler"]``) or ``"previous"``. Every rank must make it with
    the same arguments. Raises InputError (on every rank) for what the schedule cannot serve.
    ``pieces``, ``piece_bytes``: a message is sent in up to ``pieces`` pieces of at least
    ``piece_bytes``, each applied as soon as it has arrived, while the next ones travel (the same
    on every rank; it changes no result, only the overlap).
    """

    def __init__(self, algorithm: str = "ring", straggler: Union[None, int, str] = None,
                 process_group: Optional[dist.ProcessGroup] = None,
                 arrival_log: Optional[Union[str, "os.PathLike[str]"]] = None,
                 pieces: int = PIECES, piece_bytes: int = PIECE_BYTES, **options: Any):
        for key, value in (("pieces", pieces), ("piece_bytes", piece_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"stragglesim.torch: {key} must be a positive integer, got "
                                 f"{value!r}")
        self.pieces, self.piece_bytes = pieces, piece_bytes
        if not dist.is_available() or not dist.is_initialized():
            raise InputError("stragglesim.torch: torch.distributed is not initialized "
                             "(call dist.init_process_group first)")
        self.group = process_group
        self.world = dist.get_world_size(process_group)
        self.rank = dist.get_rank(process_group)
        backend = str(dist.get_backend(process_group)).lower()
        self.backend = backend
        self.peers = self._global_ranks()  # group rank -> global rank, for P2POp
        if backend not in _P2P_BACKENDS and self.world > 1:
            self._probe_point_to_point()
        self.algorithm = algorithm
        self.options = dict(options)
        if "straggler" in self.options:
            if straggler not in (None, "fixed"):
                raise InputError("stragglesim.torch: give the straggler once: straggler=R, or "
                                 "straggler='fixed' with the option straggler=R")
            straggler = self.options.pop("straggler")
        elif straggler == "fixed":
            raise InputError("stragglesim.torch: straggler='fixed' needs the rank: straggler=R")
        self.mode = "previous" if straggler == "previous" else ("fixed" if straggler is not None
                                                                 else "default")
        if self.mode == "fixed":
            if isinstance(straggler, bool) or not isinstance(straggler, int):
                raise InputError(f"stragglesim.torch: straggler must be a rank, 'fixed' or "
                                 f"'previous', got {straggler!r}")
            if not 0 <= straggler < self.world:
                raise InputError(f"stragglesim.torch: straggler {straggler} is outside the world "
                                 f"(ranks 0..{self.world - 1})")
        self.fixed = straggler if self.mode == "fixed" else None
        # gloo's send/recv read and write the tensor's memory from the host (see above)
        self.host_staging = backend == "gloo"
        # The schedule's header, checked now on every rank: algorithm, options, world size.
        # One rank: the identity; the options are checked on the smallest world it serves.
        self.schedule_ranks = self.world if self.world > 1 else _smallest_world(algorithm)
        info = next((a for a in _core_algorithms() if a["name"] == algorithm), None)
        if info is not None and info["in_network"]:
            names = ", ".join(a["name"] for a in _core_algorithms() if not a["in_network"])
            raise InputError(f"stragglesim.torch: {algorithm} reduces in the network's switches "
                             f"(in-network), which point-to-point operations cannot do; the "
                             f"hook runs: {names}")
        if not supports_ranks(algorithm, self.schedule_ranks):
            rule = info["supported_ranks"] if info else "?"
            raise InputError(f"stragglesim.torch: {algorithm} does not run on {self.world} "
                             f"rank{'s' if self.world != 1 else ''} (world size; it supports "
                             f"{rule})")
        header = self._header(self.fixed if self.world > 1 else None)
        self.aware = header["straggler"] is not None
        if self.mode == "previous" and not self.aware:
            raise InputError(f"stragglesim.torch: straggler='previous' needs a straggler-aware "
                             f"algorithm; {algorithm} is not one")
        self.chunks = header["chunks"]
        self.default_straggler = header["straggler"] if self.world > 1 else None
        self._headers: Dict[Optional[int], Dict[str, Any]] = {self.fixed: header}
        self._plans: Dict[Tuple[int, torch.dtype, Optional[int]], _Plan] = {}
        self._scratch: Dict[Tuple[torch.dtype, torch.device], torch.Tensor] = {}
        # 'previous' and the log: each rank's time to its first bucket of a step.
        self.timed = self.mode == "previous" or arrival_log is not None
        self.predicted: Optional[int] = self.fixed if self.mode == "fixed" else None
        self.step = 0  # steps done (buckets with is_last())
        self.buckets = 0  # buckets reduced by the hook
        self.last_arrivals: Optional[List[float]] = None
        self._since = time.perf_counter()
        self._log = None
        if arrival_log is not None and self.rank == 0:
            try:
                self._log = open(arrival_log, "x", encoding="ascii")  # never over a file
            except OSError as e:
                raise InputError(f"stragglesim.torch: arrival_log {os.fspath(arrival_log)}: "
                                 f"{e.strerror}") from None
            self._log.write("rank,step,seconds\n")
            self._log.flush()

    def _probe_point_to_point(self) -> None:
        """One element to the next rank, one from the previous, in one batch: a backend
        without send/recv refuses it as it is posted, on every rank alike (before any rank
        waits), so every rank raises and none hangs."""
        world, rank = self.world, self.rank
        out, into = torch.zeros(1), torch.zeros(1)
        try:
            reqs = dist.batch_isend_irecv([
                dist.P2POp(dist.isend, out, self.peers[(rank + 1) % world], self.group),
                dist.P2POp(dist.irecv, into, self.peers[(rank - 1) % world], self.group)])
            for r in reqs:
                r.wait()
        except (RuntimeError, NotImplementedError, ValueError) as e:
            raise InputError(f"stragglesim.torch: backend '{self.backend}' has no usable "
                             f"point-to-point operations (send/recv), which the hook needs "
                             f"(gloo, nccl and mpi have them): {e}") from None

    def _header(self, straggler: Optional[int]) -> Dict[str, Any]:
        opts = dict(self.options)
        if straggler is not None:
            opts["straggler"] = straggler
        # A schedule for the world: its header (chunks, straggler); small (rounds of n ranks).
        s = _schedule(self.algorithm, self.schedule_ranks, **opts)
        s.pop("rounds", None)
        return s

    def straggler_for_step(self) -> Optional[int]:
        """The rank the next exchange's schedule is built for (None: the schedule's default)."""
        return self.predicted

    def _plan(self, count: int, dtype: torch.dtype, straggler: Optional[int]) -> _Plan:
        key = (count, dtype, straggler)
        plan = self._plans.get(key)
        if plan is None:
            opts = dict(self.options)
            if straggler is not None:
                opts["straggler"] = straggler
            size = torch.tensor([], dtype=dtype).element_size()
            total = max(count, self.chunks)
            raw = _lower(self.algorithm, self.world, total * size, _DTYPES[dtype], size, **opts)
            plan = _Plan(raw, self.rank, self.pieces, self.piece_bytes)
            self._plans[key] = plan
        return plan

    def _global_ranks(self) -> List[int]:
        if self.group is None:
            return list(range(self.world))
        c10d = dist.distributed_c10d
        get = getattr(c10d, "get_global_rank", None) or c10d._get_global_rank
        return [get(self.group, r) for r in range(self.world)]

    def _run(self, buf: torch.Tensor, plan: _Plan) -> None:
        key = (buf.dtype, buf.device)
        scratch = self._scratch.get(key)
        if scratch is None or scratch.numel() < plan.scratch:
            scratch = torch.empty(max(plan.scratch, 1), dtype=buf.dtype, device=buf.device)
            self._scratch[key] = scratch
        peers, group = self.peers, self.group
        isend, irecv, P2POp = dist.isend, dist.irecv, dist.P2POp
        for step in plan.steps:
            ops = [P2POp(isend, buf[b:e], peers[p], group) for p, b, e in step.sends]
            ops += [P2POp(irecv, (buf if into_data else scratch)[b:e], peers[p], group)
                    for p, into_data, b, e in step.recvs]
            if not ops:
                continue
            reqs = dist.batch_isend_irecv(ops)
            # Each piece is applied as soon as it has arrived, while the next ones travel: the
            # adds overlap the transfers (the applies keep the plan's order).
            waiting = [True] * len(reqs)
            for reduce, d, s, c, waits in step.applies:
                for i in waits:
                    if waiting[i]:
                        reqs[i].wait()
                        waiting[i] = False
                if reduce:
                    buf[d:d + c].add_(scratch[s:s + c])
                else:
                    buf[d:d + c].copy_(scratch[s:s + c])
            for i, req in enumerate(reqs):
                if waiting[i]:
                    req.wait()

    def _exchange(self, flat: torch.Tensor, first: bool, bad: Optional[str],
                  flag: bool = True) -> Optional[List[float]]:
        """Sums ``flat`` (1-D, contiguous) over the group in place. ``first``: the step's first
        bucket (carries the arrival times). ``flag``: an error flag travels with the exchange;
        ``bad``: this rank's input is unusable (message): it takes part with zeros and the flag
        set, and every rank raises. Without flag or times, a buffer that needs no padding is
        exchanged in place."""
        n = flat.numel()
        world = self.world
        timed = first and self.timed
        if world == 1:  # the sum over one rank: the bucket itself, no transfer
            if bad is not None:
                raise InputError(f"stragglesim.torch: {bad}")
            seconds = time.perf_counter() - self._since
            self._since = time.perf_counter()
            return [seconds] if timed else None
        extra = (1 if flag else 0) + (world if timed else 0)  # the flag, then the times
        # gloo's point-to-point operations need host memory: a CUDA bucket is reduced in a
        # host copy (one copy each way per bucket)
        staged = self.host_staging and flat.device.type != "cpu"
        straggler = self.predicted if self.aware else None
        plan = self._plan(n + extra, flat.dtype, straggler)
        if extra == 0 and plan.padded == n and bad is None and not staged:
            self._run(flat, plan)
            self._since = time.perf_counter()
            return None
        buf = torch.zeros(plan.padded, dtype=flat.dtype,
                          device=torch.device("cpu") if staged else flat.device)
        if bad is None:
            buf[:n].copy_(flat)
        elif flag:
            buf[n] = 1
        at = n + (1 if flag else 0)
        if timed:
            buf[at + self.rank] = time.perf_counter() - self._since
        self._run(buf, plan)
        flags = int(buf[n].item()) if flag else 0
        if flags:
            raise InputError(f"stragglesim.torch: {bad}" if bad is not None else
                             f"stragglesim.torch: {flags} rank(s) gave an unusable tensor "
                             f"(not dense and contiguous, mixed dtypes, or a dtype other than "
                             f"{', '.join(str(d) for d in _DTYPES)}); nothing was reduced")
        flat.copy_(buf[:n])
        self._since = time.perf_counter()
        if timed:
            return [float(x) for x in buf[at:at + world].tolist()]
        return None

    def allreduce_(self, tensors: Union[torch.Tensor, Sequence[torch.Tensor]]) -> None:
        """Sums ``tensors`` (one tensor or a list, same dtype) over the group, in place. Bad
        input (mixed dtypes, a non-contiguous or sparse tensor, an integer dtype) raises
        InputError on every rank; the sizes must agree across ranks (as for dist.all_reduce)."""
        ts = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        bad = _check(ts, self.backend)
        if bad is None:
            flat = ts[0].view(-1) if len(ts) == 1 else torch.cat([t.view(-1) for t in ts])
        else:
            # Take part with zeros of the same element count and a dtype all ranks can agree
            # on only if the sizes agree; sizes are the caller's contract.
            numel = sum(t.numel() if isinstance(t, torch.Tensor) else 0 for t in ts)
            first = ts[0] if ts and isinstance(ts[0], torch.Tensor) else None
            dtype = first.dtype if first is not None and first.dtype in _DTYPES else torch.float32
            # on the device the backend reduces (NCCL: this rank's GPU), so that the zeros travel
            device = torch.device("cpu")
            if self.backend == "nccl":
                device = torch.device("cuda", torch.cuda.current_device())
            flat = torch.zeros(numel, dtype=dtype, device=device)
        self._exchange(flat, False, bad)
        if len(ts) > 1:
            offset = 0
            for t in ts:
                t.view(-1).copy_(flat[offset:offset + t.numel()])
                offset += t.numel()

    def bucket(self, tensor: torch.Tensor, first: bool, last: bool) -> torch.Tensor:
        """The hook's work on one bucket: sum in place, divide by the world size."""
        # DDP's buckets are dense, contiguous and of one dtype by construction (the same on
        # every rank): no error flag travels with them.
        bad = _check([tensor], self.backend)
        if bad is not None:
            raise InputError(f"stragglesim.torch: the bucket is {bad}")
        arrivals = self._exchange(tensor.view(-1), first, None, flag=False)
        if arrivals is not None:
            self.last_arrivals = arrivals
            if self._log is not None and self.step > 0:
                for r, seconds in enumerate(arrivals):
                    self._log.write(f"{r},{self.step},{seconds:.9g}\n")
                self._log.flush()
            if self.mode == "previous":
                self.predicted = max(range(self.world), key=lambda r: (arrivals[r], -r))
        tensor.div_(self.world)
        self.buckets += 1
        if last:
            self.step += 1
        return tensor

    def close(self) -> None:
        """Closes the arrival log (rank 0, ``arrival_log=``); the hook goes on without it."""
        if self._log is not None:
            self._log.close()
            self._log = None


def _smallest_world(algorithm: str) -> int:
    """The smallest world size (2, 3, ...) the algorithm serves (InputError: unknown name)."""
    for n in range(2, 65):
        if supports_ranks(algorithm, n):
            return n
    return 2


def _core_algorithms():
    from . import algorithms

    return algorithms()


def _check(ts: Sequence[torch.Tensor], backend: str = "gloo") -> Optional[str]:
    if not ts:
        return "no tensor given"
    for t in ts:
        if not isinstance(t, torch.Tensor):
            return f"expected tensors, got {type(t).__name__}"
        if t.layout != torch.strided:
            return f"a {t.layout} tensor: only dense tensors are reduced"
        if not t.is_contiguous():
            return f"a non-contiguous tensor (shape {tuple(t.shape)}, strides {t.stride()})"
        if t.dtype not in _DTYPES:
            return f"dtype {t.dtype} is not reduced (one of {', '.join(str(d) for d in _DTYPES)})"
    dtypes = sorted({str(t.dtype) for t in ts})
    if len(dtypes) > 1:
        return f"mixed dtypes ({', '.join(dtypes)}): a bucket holds one dtype"
    devices = sorted({str(t.device) for t in ts})
    if len(devices) > 1:
        return f"tensors on several devices ({', '.join(devices)})"
    if backend == "nccl" and ts[0].device.type != "cuda":
        return f"a tensor on {ts[0].device}: the nccl backend reduces CUDA tensors"
    return None


def allreduce_hook(algorithm: str = "ring", straggler: Union[None, int, str] = None,
                   process_group: Optional[dist.ProcessGroup] = None,
                   arrival_log: Optional[Union[str, "os.PathLike[str]"]] = None,
                   **options: Any) -> Callable[[Any, "dist.GradBucket"], "torch.futures.Future"]:
    """A DDP communication hook running ``algorithm``'s schedule (see the module docstring).

    ``model.register_comm_hook(None, allreduce_hook("stragglar", straggler="previous"))``: the
    hook keeps its own state (DDP's state argument may be None); it is a
    :class:`ScheduleAllReduce`, reachable as ``hook.allreduce`` (``hook.allreduce.predicted``:
    the straggler of the next step; ``last_arrivals``: the last step's per-rank times).
    """
    runner = ScheduleAllReduce(algorithm, straggler, process_group, arrival_log, **options)

    # No annotations: DDP compares them with dist.GradBucket and Future[Tensor] as objects.
    def hook(state, bucket):
        tensor = runner.bucket(bucket.buffer(), bucket.index() == 0, bucket.is_last())
        fut: torch.futures.Future = torch.futures.Future()
        fut.set_result(tensor)
        return fut

    hook.allreduce = runner  # type: ignore[attr-defined]
    hook.__name__ = f"stragglesim_{algorithm}_hook"
    return hook
