"""stragglesim.torch on gloo (CPU): one spawned group of 8 processes runs every check
(torch_workers.py); the tests below read what each rank recorded."""

import json
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup.sh)")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

import torch.multiprocessing as mp  # noqa: E402

import torch_workers  # noqa: E402

WORLD = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("torch"))
    ctx = mp.start_processes(torch_workers.main, args=(WORLD, free_port(), out), nprocs=WORLD,
                             join=False, start_method="spawn")
    try:
        while not ctx.join(timeout=300):
            pass
    except mp.ProcessExitedException as e:  # a rank died or timed out: show what it recorded
        pytest.fail(f"a rank failed: {e}\n" + "".join(
            json.load(open(os.path.join(out, f))).get("exception", "")
            for f in sorted(os.listdir(out)) if f.endswith(".json")))
    except Exception as e:
        pytest.fail(f"a rank failed: {e}")
    r = {}
    for rank in range(WORLD):
        with open(os.path.join(out, f"rank{rank}.json")) as f:
            r[rank] = json.load(f)
    r["out"] = out
    return r


def test_sum_equals_all_reduce_bitwise(reports):
    for rank in range(WORLD):
        assert reports[rank]["bitwise_failures"] == [], reports[rank]["bitwise_failures"][:5]
    # rank 0 is in every world size 2..8: every algorithm x size x dtype ran
    assert reports[0]["bitwise_checked"] > 500


def test_bad_input_raises_on_every_rank(reports):
    errors = [reports[r]["errors"] for r in range(WORLD)]
    for label in ("unknown_algorithm", "unknown_option", "straggler_range", "straggler_not_aware",
                  "bad_pieces", "backend_without_p2p", "non_contiguous_on_one_rank",
                  "mixed_dtypes"):
        messages = {e[label] for e in errors}
        assert None not in messages, f"{label}: some rank did not raise"
        if label not in ("non_contiguous_on_one_rank", "mixed_dtypes"):
            assert len(messages) == 1, f"{label}: ranks disagree: {messages}"
    assert "nosuch" in errors[0]["unknown_algorithm"]
    assert "bogus" in errors[0]["unknown_option"]
    assert "outside the world" in errors[0]["straggler_range"]
    assert "pieces must be a positive integer" in errors[0]["bad_pieces"]
    assert "backend 'nop2p' has no usable point-to-point" in errors[0]["backend_without_p2p"]
    assert "non-contiguous" in errors[1]["non_contiguous_on_one_rank"]
    assert "1 rank(s)" in errors[0]["non_contiguous_on_one_rank"]
    assert "mixed dtypes" in errors[2]["mixed_dtypes"]
    assert errors[0]["world_size"] and errors[0]["world_size"] == errors[1]["world_size"]
    assert "2 ranks" in errors[0]["world_size"]
    assert all(reports[r]["after_errors_ok"] for r in range(WORLD))


def test_ddp_gradients_equal_default_hook(reports):
    for rank in range(WORLD):
        for key, v in reports[rank]["ddp"].items():
            world = int(key.split("@")[1])
            assert v["steps"] == 3, key
            # DDP's first step has one bucket, the others (after its rebuild) two or more
            assert v["buckets"] >= 1 + 2 * 2, f"{key}: {v['buckets']} buckets in 3 steps"
            if v["integer"] and world & (world - 1) == 0:
                assert v["max_rel_diff"] == 0.0, f"{key}: not bitwise ({v['max_rel_diff']})"
            else:
                assert v["max_rel_diff"] < 1e-12, f"{key}: {v['max_rel_diff']}"


def test_previous_predicts_the_sleeping_rank(reports):
    predicted = reports[0]["predicted_by_step"]
    assert predicted[0] is None  # the first step runs for the schedule's default
    assert predicted[1:] == [2, 2, 2], predicted  # the sleeper, from the second step on
    for rank in range(4):
        assert reports[rank]["predicted_by_step"] == predicted  # every rank agrees


def test_arrival_log_is_read_by_fit_delays(reports):
    log = reports[0]["arrival_log"]
    with open(log) as f:
        lines = f.read().splitlines()
    assert lines[0] == "rank,step,seconds"
    assert len(lines) == 1 + 4 * 3  # steps 1..3, 4 ranks
    cli = os.environ.get("STRAGGLESIM_CLI")
    if not cli:
        pytest.skip("STRAGGLESIM_CLI not set (ctest sets it)")
    r = subprocess.run([cli, "fit-delays", log], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "delays:" in r.stdout


def test_training_losses_equal(reports):
    for rank in range(3):
        losses = reports[rank]["losses"]
        assert len(losses["default"]) == 50
        assert losses["default"][-1] < losses["default"][0]  # it trains
        for a, b in zip(losses["default"], losses["stragglar"]):
            assert a == pytest.approx(b, rel=1e-5, abs=1e-7)


def test_example_runs_under_torchrun(tmp_path):
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ddp_stragglar.py")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # --redirects 1 --tee 1: Debian's torch 1.13 under Python 3.11 cannot parse the default
    # "0" (Std.from_str iterates an IntFlag, which no longer yields its zero member).
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node=3", "--redirects", "1", "--tee", "1", example, "--algorithm", "stragglar", "--steps", "4",
                        "--straggler-sleep-ms", "100", "--straggler-rank", "1"],
                       capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "step 3" in out and "predicted straggler 1" in out, out


def test_one_rank_is_the_identity(tmp_path):
    """A world of one rank (a single-GPU job): the hook checks its arguments as for any world and
    returns the bucket as it is, divided by 1, with no transfer (here on gloo in this process;
    test_gpu_* run it on NCCL)."""
    import stragglesim
    import stragglesim.torch as sst

    dist = torch.distributed
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        for bad, match in ((dict(algorithm="nosuch"), "unknown algorithm 'nosuch'"),
                           (dict(algorithm="ring", bogus=1), "no option 'bogus'"),
                           (dict(algorithm="stragglar", straggler=1), "outside the world"),
                           (dict(algorithm="ring", straggler="previous"), "straggler-aware"),
                           (dict(algorithm="nvls"), "nvls reduces in the network's switches")):
            with pytest.raises(stragglesim.InputError, match=match):
                sst.allreduce_hook(**bad)
        hook = sst.allreduce_hook("stragglar", straggler="previous")
        x = torch.arange(4099, dtype=torch.float32)
        got = hook.allreduce.bucket(x, True, True)
        assert got.data_ptr() == x.data_ptr()
        assert torch.equal(got, torch.arange(4099, dtype=torch.float32))
        assert hook.allreduce.predicted == 0 and len(hook.allreduce.last_arrivals) == 1
        with pytest.raises(stragglesim.InputError, match="non-contiguous"):
            hook.allreduce.allreduce_(torch.zeros(4, 3).t())
    finally:
        dist.destroy_process_group()


cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="no CUDA device (docs/python.md: what runs on a GPU)")
GPU_WORLD = 3  # ranks sharing the one GPU on gloo (StragglAR needs 3)


@pytest.fixture(scope="module")
def gpu_reports(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("gpu"))
    ctx = mp.start_processes(torch_workers.gpu_main, args=(GPU_WORLD, free_port(), out),
                             nprocs=GPU_WORLD, join=False, start_method="spawn")
    try:
        while not ctx.join(timeout=300):
            pass
    except Exception as e:
        pytest.fail(f"a rank failed: {e}\n" + "".join(
            json.load(open(os.path.join(out, f))).get("exception", "")
            for f in sorted(os.listdir(out)) if f.endswith(".json")))
    return [json.load(open(os.path.join(out, f"gpu{r}.json"))) for r in range(GPU_WORLD)]


@cuda
def test_gpu_cuda_tensors_on_gloo(gpu_reports):
    for r in gpu_reports:
        assert r["failures"] == [], r["failures"][:5]
        assert r["gloo_cuda_checked"] == 4 * 3 * 2
        assert r["ddp_cuda_max_rel_diff"] < 1e-12  # 3 ranks: DDP divides before the sum
        assert r["ddp_cuda_buckets"] >= 1 + 2


@cuda
def test_gpu_nccl_one_rank(gpu_reports):
    one = gpu_reports[0]["nccl_one_rank"]
    assert one == {"backend": "nccl", "world": 1, "same": True, "device": "cuda:0",
                   "in_place": True, "transfers": 0, "predicted": 0}, one
    assert "the nccl backend reduces CUDA tensors" in gpu_reports[0]["nccl_cpu_tensor"]
