#!/usr/bin/env python3
"""ddp_ranks.py: a data-parallel torch.distributed training loop of two (or
more) ranks, for the GPU check of ranks from the launcher (scripts/gpu_verify
part "ranks").  Nothing in it knows about tbexport.

Run under torchrun (RANK, WORLD_SIZE, LOCAL_RANK and MASTER_ADDR/PORT come
from it).  Every rank uses the one GPU 0 with the gloo backend: NCCL refuses
two ranks on one device.  Each iteration, inside an NVTX range "train_step"
as test/gpu/train_loop.py marks them, runs forward and backward of a small
MLP on the rank's own batch, averages the gradients with one all_reduce of
their flattened copy, and steps the optimizer; so every rank's steps hold
its own kernels and the copies of the all_reduce.  Rank 1 does a little
more work per step than rank 0, so the ranks differ.  Each rank prints one
JSON line {"rank": r, "world_size": n, "steps": N, "loss": x}.
"""
import argparse
import json
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)  # the same initial weights on every rank
    model = nn.Sequential(nn.Linear(a.dim, 4 * a.dim), nn.GELU(), nn.Linear(4 * a.dim, a.dim)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = torch.Generator(device=dev)
    g.manual_seed(1 + rank)  # each rank its own data
    batch = a.batch * (rank + 1)
    x = torch.randn(batch, a.dim, device=dev, generator=g)
    y = torch.randn(batch, a.dim, device=dev, generator=g)
    params = [p for p in model.parameters()]

    loss = None
    for _ in range(a.steps):
        torch.cuda.nvtx.range_push("train_step")
        loss = F.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat)  # gloo: through host memory
        flat /= world
        off = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[off:off + n].view_as(p))
            off += n
        opt.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    dist.barrier()
    out = {"rank": rank, "world_size": world, "steps": a.steps, "loss": float(loss.item())}
    assert math.isfinite(out["loss"])
    print(json.dumps(out), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
