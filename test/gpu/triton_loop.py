#!/usr/bin/env python3
"""triton_loop.py: a Triton kernel launched in a loop, for the GPU check
that every GPU activity of a collected run has its launching CPU call
(test/gpu/ops_check.py).  Triton launches through the CUDA driver API
(cuLaunchKernel), as CUTLASS, cuBLASLt and XLA do.  Nothing in it knows
about tbexport.  Prints one JSON line {"loop_s": ..., "launches": N}.
"""
import argparse
import json
import time

import torch
import triton
import triton.language as tl


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--n", type=int, default=1 << 20)
    a = ap.parse_args()
    x = torch.randn(a.n, device="cuda")
    y = torch.randn(a.n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(a.n, 1024),)
    scale_add[grid](x, y, out, a.n, 2.0, BLOCK=1024)  # compile outside the timing
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        scale_add[grid](x, y, out, a.n, 2.0, BLOCK=1024)
    torch.cuda.synchronize()
    print(json.dumps({"loop_s": time.perf_counter() - t0, "launches": a.iters + 1}), flush=True)


if __name__ == "__main__":
    main()
