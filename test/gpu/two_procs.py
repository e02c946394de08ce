#!/usr/bin/env python3
"""two_procs.py: a two-process torch.multiprocessing program (spawn), for
the GPU checks of collected runs (scripts/check_collected.sh).  Nothing in
it knows about tbexport.

Process r (0 or 1) runs 300 * (r + 1) in-place adds on its own CUDA tensor
inside an NVTX range "work", so the two processes launch different numbers
of kernels.  The parent prints one JSON line {"adds": [300, 600]} after
both children exited 0.
"""
import json
import sys

import torch
import torch.multiprocessing as mp


def work(rank, n):
    x = torch.zeros(1024, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("work")
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    assert float(x[0].item()) == float(n), (rank, float(x[0].item()))


def main():
    adds = [300, 600]
    ctx = mp.get_context("spawn")
    ps = [ctx.Process(target=work, args=(r, adds[r])) for r in range(2)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    if any(p.exitcode != 0 for p in ps):
        sys.exit("two_procs: a child failed: %s" % [p.exitcode for p in ps])
    print(json.dumps({"adds": adds}), flush=True)


if __name__ == "__main__":
    main()
