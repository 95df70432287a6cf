"""The ranks of test_torch.py's one process group (8 processes on gloo, CPU).

Every check runs inside one spawned group, so the suite pays for starting torch once: world
sizes 2..7 are subgroups of the 8 ranks (dist.new_group), 8 is the whole world. Each rank
writes what it measured to OUT/rank<r>.json; test_torch.py asserts on those files.
"""

import json
import os
import time
import traceback

import torch
import torch.distributed as dist

import stragglesim
import stragglesim.torch as sst

# Bucket sizes in elements: 1 element (fewer than any schedule's chunks), an odd size that no
# chunk count divides, and 1 MiB of float32 (2 MiB of float64) plus 3 elements.
SIZES = (1, 4099, 6720, 262147)  # 6720 = 2^6*3*5*7: no padding for most schedules (in place)
LARGE = (1 << 20) + 1  # 4 MiB of float32: every algorithm at the full world only


def registry_algorithms(world):
    """(name, options) of every point-to-point algorithm that serves `world` ranks with its
    default options (in-network ones reduce in a switch: no p2p plan)."""
    out = []
    for a in stragglesim.algorithms():
        if a["in_network"] or not stragglesim.supports_ranks(a["name"], world):
            continue
        out.append(a["name"])
    return out


def data(n, dtype, rank, salt):
    g = torch.Generator().manual_seed(1000 * salt + 17 * rank + n)
    return torch.randint(-2000, 2000, (n,), generator=g).to(dtype)


def bitwise_sums(rank, groups, report):
    """The hook's sum equals dist.all_reduce's, bit for bit, per algorithm, world size, size
    and dtype; the straggler-aware ones also for a fixed straggler and for 'previous'."""
    checked, failures = 0, []
    for world in range(2, 9):
        group = groups[world]
        if rank >= world:
            continue
        for name in registry_algorithms(world):
            variants = [dict()]
            if stragglesim.schedule(name, world)["straggler"] is not None:
                # 'previous' moves the straggler between exchanges (every relabelling)
                variants = [dict(), dict(straggler="previous")]
            for v in variants:
                # messages of 256 KiB and more (the largest sizes) in 2 pieces (unequal cuts
                # for odd counts), each applied as it arrives: the pieces change no bit
                runner = sst.ScheduleAllReduce(name, process_group=group, pieces=2,
                                               piece_bytes=128 << 10, **v)
                sizes = SIZES + ((LARGE,) if world == 8 and not v else ())
                for n in sizes:
                    for dtype in (torch.float32, torch.float64):
                        if n >= SIZES[-1] and dtype == torch.float64 and world != 8:
                            continue  # 2 MiB of float64: at the full world only
                        if n == LARGE and dtype == torch.float64:
                            continue
                        x = data(n, dtype, rank, world)
                        ref = x.clone()
                        dist.all_reduce(ref, group=group)
                        first = v.get("straggler") == "previous"
                        if first:  # the predicted straggler moves: plans for every relabelling
                            runner.predicted = (n + x.element_size()) % world  # same on every rank
                        # float32: the hook's path (no flag; in place when nothing pads);
                        # float64: allreduce_'s, with the error flag in the buffer
                        runner._exchange(x, first, None, flag=dtype == torch.float64)
                        checked += 1
                        if not torch.equal(x, ref):
                            bad = (x != ref).nonzero()[:3].flatten().tolist()
                            failures.append(f"{name} {v} world {world} n {n} {dtype}: "
                                            f"differs at {bad}")
    report["bitwise_checked"] = checked
    report["bitwise_failures"] = failures


class NoPointToPoint(dist.ProcessGroup):
    """A backend without send/recv (ProcessGroup's own send raises "does not support send")."""

    def getBackendName(self):
        return "nop2p"


def bad_input(rank, groups, report):
    """Every bad input raises on every rank, with one message, and nothing hangs."""
    world = dist.get_world_size()
    caught = {}

    def expect(label, fn):
        try:
            fn()
            caught[label] = None
        except stragglesim.InputError as e:
            caught[label] = str(e)

    expect("unknown_algorithm", lambda: sst.allreduce_hook("nosuch"))
    expect("unknown_option", lambda: sst.allreduce_hook("ring", bogus=3))
    if rank < 2:  # StragglAR needs 3 ranks or more
        expect("world_size", lambda: sst.allreduce_hook("stragglar", process_group=groups[2]))
    expect("straggler_range", lambda: sst.allreduce_hook("stragglar", straggler=world))
    expect("straggler_not_aware", lambda: sst.allreduce_hook("ring", straggler=1))
    expect("bad_pieces", lambda: sst.allreduce_hook("ring", pieces=0))
    # a backend without point-to-point operations: refused on every rank (a probe), no hang
    dist.Backend.register_backend("nop2p", lambda store, r, size, timeout: NoPointToPoint(r, size))
    no_p2p = dist.new_group(list(range(world)), backend="nop2p")
    expect("backend_without_p2p", lambda: sst.allreduce_hook("ring", process_group=no_p2p))
    runner = sst.ScheduleAllReduce("ring")
    # Only rank 1's input is bad: every rank must raise, none may hang.
    bad = torch.arange(12, dtype=torch.float32).reshape(3, 4).t() if rank == 1 else torch.zeros(12)
    expect("non_contiguous_on_one_rank", lambda: runner.allreduce_(bad))
    mixed = [torch.zeros(3), torch.zeros(3, dtype=torch.float64)]
    expect("mixed_dtypes", lambda: runner.allreduce_(mixed if rank == 2 else [torch.zeros(3)] * 2))
    # After the errors, the runner still works.
    x = torch.full((5,), float(rank))
    runner.allreduce_(x)
    report["after_errors_ok"] = bool(torch.equal(x, torch.full((5,), float(sum(range(world))))))
    report["errors"] = caught


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 3)

    def forward(self, x):
        return self.c(torch.tanh(self.b(torch.relu(self.a(x)))))


class IntNet(torch.nn.Module):
    """Linear layers with integer weights: integer inputs give integer gradients, which any
    summation order adds exactly."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 64, bias=False)
        self.b = torch.nn.Linear(64, 48, bias=False)
        self.c = torch.nn.Linear(48, 3, bias=False)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randint(-2, 3, p.shape))

    def forward(self, x):
        return self.c(self.b(self.a(x)))


def ddp_pair(group, hook, seed=3, net=Net, device=None):
    from torch.nn.parallel import DistributedDataParallel as DDP

    # DDP's first bucket holds up to 1 MiB, which would take all of these small models; the
    # documented knob makes every bucket bucket_cap_mb.
    dist._DEFAULT_FIRST_BUCKET_BYTES = 4096
    ids = [device.index] if device is not None else None

    def make():
        m = net().double()
        return m if device is None else m.to(device)

    torch.manual_seed(seed)
    a = DDP(make(), device_ids=ids, process_group=group, bucket_cap_mb=0.01)  # several buckets
    torch.manual_seed(seed)
    b = DDP(make(), device_ids=ids, process_group=group, bucket_cap_mb=0.01)
    b.register_comm_hook(None, hook)
    return a, b


def ddp_gradients(rank, groups, report):
    """Inside DDP the gradients equal those of DDP's default, with several buckets per step:
    integer-valued ones bitwise where the world size is a power of two (DDP divides each rank's
    gradient before the sum, the hook the sum: the same where the division is exact), real-valued
    ones within rounding (the sum's order differs)."""
    out = {}
    for world, algorithm, kw, integer in ((4, "stragglar", dict(straggler="previous"), True),
                                          (4, "ring", {}, False), (3, "dbtree", {}, True),
                                          (5, "stragglar", dict(straggler=2), False),
                                          (8, "rhd", {}, True), (8, "stragglar_hier", {}, False)):
        if rank >= world:
            continue
        group = groups[world]
        hook = sst.allreduce_hook(algorithm, process_group=group, **kw)
        a, b = ddp_pair(group, hook, net=IntNet if integer else Net)
        worst = 0.0
        for step in range(3):
            torch.manual_seed(100 + step * 10 + rank)
            x = (torch.randint(-3, 4, (16, 32)) if integer else torch.randn(16, 32)).double()
            for m in (a, b):
                m.zero_grad()
                m(x).square().sum().backward()
            for pa, pb in zip(a.parameters(), b.parameters()):
                d = (pa.grad - pb.grad).abs().max().item()
                scale = pa.grad.abs().max().item() or 1.0
                worst = max(worst, d / scale)
        out[f"{algorithm}{kw.get('straggler', '')}@{world}"] = {
            "max_rel_diff": worst, "steps": hook.allreduce.step, "integer": integer,
            "buckets": hook.allreduce.buckets}
    report["ddp"] = out


def previous_predicts_sleeper(rank, groups, report, tmp):
    """A rank that sleeps before its backward is the predicted straggler from step 2 on, and the
    arrival log is a step log `stragglesim fit-delays` reads."""
    world, sleeper = 4, 2
    if rank >= world:
        return
    group = groups[world]
    log = os.path.join(tmp, "arrivals.csv")
    hook = sst.allreduce_hook("stragglar", straggler="previous", process_group=group,
                              arrival_log=log)
    _, b = ddp_pair(group, hook)
    predicted = []
    for step in range(4):
        predicted.append(hook.allreduce.predicted)
        x = torch.randn(8, 32, dtype=torch.float64)
        b.zero_grad()
        loss = b(x).square().sum()
        if rank == sleeper:
            time.sleep(0.15)
        loss.backward()
    hook.allreduce.close()
    report["predicted_by_step"] = predicted
    report["arrival_log"] = log


def training_losses(rank, groups, report):
    """A small model trained 50 steps with the hook and with DDP's default: the same losses."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    world = 3
    if rank >= world:
        return
    group = groups[world]
    dist._DEFAULT_FIRST_BUCKET_BYTES = 4096  # several buckets per step
    losses = {}
    for label, hook in (("default", None),
                        ("stragglar", sst.allreduce_hook("stragglar", straggler="previous",
                                                         process_group=group))):
        torch.manual_seed(7)
        model = DDP(Net(), process_group=group, bucket_cap_mb=0.01)
        if hook is not None:
            model.register_comm_hook(None, hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(11 + rank)
        w = torch.randn(32, 3, generator=torch.Generator().manual_seed(5))
        seq = []
        for _ in range(50):
            x = torch.randn(32, 32, generator=g)
            y = x @ w
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            seq.append(loss.item())
        losses[label] = seq
    report["losses"] = losses


def main(rank, world, port, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    report = {"rank": rank}
    try:
        groups = {w: dist.new_group(list(range(w))) for w in range(2, world)}
        groups[world] = None
        for phase in (bitwise_sums, bad_input, ddp_gradients, training_losses):
            t = time.perf_counter()
            phase(rank, groups, report)
            report[f"seconds_{phase.__name__}"] = time.perf_counter() - t
            dist.barrier()
        previous_predicts_sleeper(rank, groups, report, out)
        dist.barrier()
    except Exception:  # recorded for the test's message; the others may then time out
        report["exception"] = traceback.format_exc()
        raise
    finally:
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(report, f)
    dist.destroy_process_group()


def gpu_main(rank, world, port, out):
    """test_torch.py's GPU checks (one GPU, every rank on cuda:0): CUDA tensors through the hook
    on gloo (staged through the host) against gloo's own all_reduce, bitwise, DDP's gradients
    on the GPU with the hook against the default's, then on rank 0 alone a one-rank NCCL group:
    the hook returns the bucket divided by 1, on the GPU, with no transfer."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    report = {"rank": rank, "failures": []}
    try:
        checked = 0
        for name in ("ring", "stragglar", "dbtree", "direct"):
            runner = sst.ScheduleAllReduce(name)
            for n in (1, 4099, 262147):
                for dtype in (torch.float32, torch.float64):
                    x = data(n, dtype, rank, 1).to(dev)
                    ref = x.clone()
                    dist.all_reduce(ref)  # gloo's all-reduce stages CUDA tensors itself
                    y = x.clone()
                    runner.bucket(x, True, True)  # the hook's path: sum, then / world
                    runner.allreduce_(y)  # allreduce_'s: the error flag in the buffer
                    checked += 1
                    if x.device != dev or y.device != dev:
                        report["failures"].append(f"{name} n {n}: result left the GPU")
                    if not torch.equal(y, ref) or not torch.equal(x, ref / world):
                        report["failures"].append(f"{name} n {n} {dtype}: differs from all_reduce")
        report["gloo_cuda_checked"] = checked
        hook = sst.allreduce_hook("stragglar", straggler="previous")
        a, b = ddp_pair(None, hook, net=IntNet, device=dev)
        worst = 0.0
        for step in range(2):
            torch.manual_seed(100 + step * 10 + rank)
            x = torch.randint(-3, 4, (16, 32)).double().to(dev)
            for m in (a, b):
                m.zero_grad()
                m(x).square().sum().backward()
            for pa, pb in zip(a.parameters(), b.parameters()):
                worst = max(worst, (pa.grad - pb.grad).abs().max().item() /
                            (pa.grad.abs().max().item() or 1.0))
        report["ddp_cuda_max_rel_diff"] = worst
        report["ddp_cuda_buckets"] = hook.allreduce.buckets
        dist.barrier()
        nccl = dist.new_group([0], backend="nccl")  # every rank calls it; rank 0 is its member
        if rank == 0:
            calls = []
            real = dist.batch_isend_irecv
            dist.batch_isend_irecv = lambda ops: calls.append(ops) or real(ops)
            try:
                one = sst.allreduce_hook("stragglar", straggler="previous", process_group=nccl)
                runner = one.allreduce
                x = data(4099, torch.float32, 0, 2).to(dev)
                want = x.clone()
                got = runner.bucket(x, True, True)
                report["nccl_one_rank"] = {
                    "backend": runner.backend, "world": runner.world,
                    "same": bool(torch.equal(got, want)), "device": str(got.device),
                    "in_place": got.data_ptr() == x.data_ptr(), "transfers": len(calls),
                    "predicted": runner.predicted}
                try:
                    runner.allreduce_(torch.zeros(3))  # a CPU tensor on NCCL
                    report["nccl_cpu_tensor"] = None
                except stragglesim.InputError as e:
                    report["nccl_cpu_tensor"] = str(e)
            finally:
                dist.batch_isend_irecv = real
        dist.barrier()
    except Exception:
        report["exception"] = traceback.format_exc()
        raise
    finally:
        with open(os.path.join(out, f"gpu{rank}.json"), "w") as f:
            json.dump(report, f)
    dist.destroy_process_group()
