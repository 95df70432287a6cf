#!/usr/bin/env python3
"""The DDP hook's exchange against gloo's own all-reduce (issue 40, item 5): a benchmark, not a
test. Spawns --ranks processes on gloo (CPU), sums a --mib MiB float32 buffer --reps times with
dist.all_reduce and with stragglesim.torch's exchange of --algorithm's schedule (once per
--pieces value, each a runner of its own), interleaved, and prints the median wall times
(the slowest rank's) and CPU times (the ranks' processes, gloo's I/O threads included, summed)
and their ratios (hook / all_reduce), measured in the same run. On a machine shared with other
work the CPU ratio is the steadier one.

    PYTHONPATH=build/python /usr/bin/python3 python/bench/hook_speed.py --ranks 4 --mib 64 --algorithm ring
    # pieces against one piece per message (no overlap of the adds with the transfers):
    PYTHONPATH=build/python /usr/bin/python3 python/bench/hook_speed.py --pieces 4 1
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

    if args.pieces is None:
        runners = {"hook": sst.ScheduleAllReduce(args.algorithm)}
    else:  # a runner per piece count (1: a message in one piece, no overlap)
        runners = {f"hook {k} pieces": sst.ScheduleAllReduce(args.algorithm, pieces=k)
                   for k in args.pieces}
    n = int(args.mib * (1 << 20)) // 4
    x = torch.ones(n)
    labels = ["all_reduce"] + list(runners)
    times = {label: [] for label in labels}
    cpu = {label: [] for label in labels}
    for rep in range(args.reps + 1):  # the first of each is a warm-up (plans, buffers)
        for label in labels:
            dist.barrier()
            c = time.process_time()  # this process's threads (gloo's I/O thread too)
            t = time.perf_counter()
            if label == "all_reduce":
                dist.all_reduce(x)
            else:
                runners[label]._exchange(x, False, None, flag=False)  # the hook's path
            dt = time.perf_counter() - t
            dc = time.process_time() - c
            if rep > 0:
                times[label].append(dt)
                cpu[label].append(dc)
            x.fill_(1.0)
    # every rank's medians: wall (the slowest rank's) and CPU (summed over the ranks)
    queue.put({k: (statistics.median(v), statistics.median(cpu[k])) for k, v in times.items()})
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--mib", type=float, default=64)
    p.add_argument("--algorithm", default="ring")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--pieces", type=int, nargs="+", default=None,
                   help="the hook's most pieces per message, one runner each (default: "
                        "stragglesim.torch.PIECES)")
    args = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(worker, args=(args, port, queue), nprocs=args.ranks, start_method="spawn")
    ranks = [queue.get() for _ in range(args.ranks)]
    wall = {k: max(r[k][0] for r in ranks) for k in ranks[0]}
    cpu = {k: sum(r[k][1] for r in ranks) for k in ranks[0]}
    base, base_cpu = wall.pop("all_reduce"), cpu.pop("all_reduce")
    print(f"{args.ranks} ranks, {args.mib:g} MiB float32, {args.algorithm}, {args.reps} reps "
          f"(medians; wall: the slowest rank's, CPU: all ranks' processes): dist.all_reduce "
          f"{base * 1e3:.1f} ms wall, {base_cpu * 1e3:.0f} ms CPU; " +
          "; ".join(f"{k} {v * 1e3:.1f} ms wall, ratio {v / base:.2f}, {cpu[k] * 1e3:.0f} ms "
                    f"CPU, ratio {cpu[k] / base_cpu:.2f}" for k, v in wall.items()))


if __name__ == "__main__":
    main()
