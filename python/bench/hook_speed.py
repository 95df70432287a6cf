#!/usr/bin/env python3
"""The DDP hook's exchange against gloo's own all-reduce (issue 40, item 5): a benchmark, not a
test. Spawns --ranks processes on gloo (CPU), sums a --mib MiB float32 buffer --reps times with
dist.all_reduce and with stragglesim.torch's exchange of --algorithm's schedule, and prints the
median times and their ratio (hook / all_reduce), measured in the same run.

    PYTHONPATH=build/python /usr/bin/python3 python/bench/hook_speed.py --ranks 4 --mib 64 --algorithm ring
"""

import argparse
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, args, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    import stragglesim.torch as sst

    runner = sst.ScheduleAllReduce(args.algorithm)
    n = int(args.mib * (1 << 20)) // 4
    x = torch.ones(n)
    times = {"all_reduce": [], "hook": []}
    for rep in range(args.reps + 1):  # the first of each is a warm-up (plans, buffers)
        for label in ("all_reduce", "hook"):
            dist.barrier()
            t = time.perf_counter()
            if label == "all_reduce":
                dist.all_reduce(x)
            else:
                runner._exchange(x, False, None, flag=False)  # the hook's path
            dt = time.perf_counter() - t
            if rep > 0:
                times[label].append(dt)
            x.fill_(1.0)
    if rank == 0:
        queue.put({k: statistics.median(v) for k, v in times.items()})
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--mib", type=float, default=64)
    p.add_argument("--algorithm", default="ring")
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(worker, args=(args, port, queue), nprocs=args.ranks, start_method="spawn")
    r = queue.get()
    print(f"{args.ranks} ranks, {args.mib:g} MiB float32, {args.reps} reps (median): "
          f"dist.all_reduce {r['all_reduce'] * 1e3:.1f} ms, stragglesim {args.algorithm} hook "
          f"{r['hook'] * 1e3:.1f} ms, ratio {r['hook'] / r['all_reduce']:.2f}")


if __name__ == "__main__":
    main()
