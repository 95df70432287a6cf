#!/usr/bin/env python3
"""StragglAR (or any stragglesim schedule) as the AllReduce of a DDP training job.

    torchrun --standalone --nproc_per_node=4 examples/ddp_stragglar.py \
        --algorithm stragglar --straggler-sleep-ms 50 --straggler-rank 3

Trains a small MLP on random regression data with DistributedDataParallel, its gradients
reduced by stragglesim.torch.allreduce_hook. One rank sleeps before each backward pass (a
straggler); with --straggler previous the hook predicts it from the step before. Prints per
step: the step time, the loss and the straggler the next step's schedule is built for.
Backend: nccl when every process of the node has a GPU of its own (LOCAL_WORLD_SIZE GPUs
visible) and --backend is not given, else gloo on the CPU (docs/python.md); --backend nccl with
fewer GPUs than processes is refused (NCCL cannot put two ranks of one group on one GPU).
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import stragglesim.torch as sst


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algorithm", default="stragglar", help="a registry algorithm (default stragglar)")
    p.add_argument("--straggler", default="previous",
                   help="'previous' (predict from the last step), a rank, or 'none' (the "
                        "schedule's default; needed for algorithms that are not straggler-aware)")
    p.add_argument("--straggler-sleep-ms", type=float, default=0.0,
                   help="how long the straggling rank sleeps before each backward (default 0)")
    p.add_argument("--straggler-rank", type=int, default=-1,
                   help="the rank that sleeps (default: the last)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--width", type=int, default=1024, help="hidden width of the MLP")
    p.add_argument("--bucket-mb", type=float, default=4.0, help="DDP bucket_cap_mb")
    p.add_argument("--backend", choices=("gloo", "nccl"), default=None)
    p.add_argument("--arrival-log", default=None,
                   help="write the per-step arrival log (rank,step,seconds) for "
                        "`stragglesim fit-delays` to this new file")
    p.add_argument("--compare", action="store_true",
                   help="also train with DDP's default hook and print the largest loss difference")
    return p.parse_args()


def build(width, device):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 16)).to(device)


def train(args, rank, world, device, hook):
    model = DDP(build(args.width, device), device_ids=[device.index] if device.type == "cuda" else None,
                bucket_cap_mb=args.bucket_mb)
    if hook is not None:
        model.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(100 + rank)
    target = torch.randn(256, 16, generator=torch.Generator().manual_seed(1)).to(device)
    sleeper = args.straggler_rank if args.straggler_rank >= 0 else world - 1
    losses = []
    for step in range(args.steps):
        start = time.perf_counter()
        x = torch.randn(64, 256, generator=g).to(device)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), x @ target)
        if rank == sleeper and args.straggler_sleep_ms > 0:
            time.sleep(args.straggler_sleep_ms / 1000)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        took = time.perf_counter() - start
        losses.append(loss.item())
        if rank == 0 and hook is not None:
            runner = hook.allreduce
            nxt = runner.predicted if runner.predicted is not None else runner.default_straggler
            print(f"step {step}: {took * 1e3:8.2f} ms  loss {loss.item():.6f}  "
                  f"predicted straggler {nxt}", flush=True)
    return losses


def choose_backend(requested):
    """nccl needs a GPU per process of the node; gloo runs anywhere (on the CPU here)."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested is None:
        return "nccl" if gpus >= local else "gloo"
    if requested == "nccl" and gpus < local:
        sys.exit(f"ddp_stragglar.py: --backend nccl needs a GPU per process: {local} processes "
                 f"on this node, {gpus} GPU(s) visible (use --backend gloo)")
    return requested


def main():
    args = parse_args()
    backend = choose_backend(args.backend)
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank % torch.cuda.device_count())))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    straggler = args.straggler
    straggler = None if straggler == "none" else (int(straggler) if straggler.isdigit() else straggler)
    hook = sst.allreduce_hook(args.algorithm, straggler=straggler, arrival_log=args.arrival_log)
    if rank == 0:
        print(f"{args.algorithm} on {world} ranks ({backend}), straggler {args.straggler}, "
              f"rank {args.straggler_rank if args.straggler_rank >= 0 else world - 1} sleeps "
              f"{args.straggler_sleep_ms} ms per step", flush=True)
    losses = train(args, rank, world, device, hook)
    hook.allreduce.close()
    if args.compare:
        default = train(args, rank, world, device, None)
        if rank == 0:
            diff = max(abs(a - b) for a, b in zip(losses, default))
            print(f"largest loss difference against DDP's default hook: {diff:.3g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
