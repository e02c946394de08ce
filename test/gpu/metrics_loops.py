"""Four marked loops for the hardware-metrics check (scripts/gpu_verify metrics).

Each loop is one NVTX range named after it, so the PM-sampling timeline can be
averaged over it, and runs kernels of one kind, so the range profiler's
per-kernel figures can be set against `ncu --metrics` of the same kernels:

  gemm_bf16    8192^3 bf16 matmuls (tensor cores)
  gemm_fp32    4096^3 fp32 matmuls, TF32 off (FMA pipes, no tensor cores)
  elementwise  c = a + b over 256 Mi floats (DRAM bound)
  tiny         1-element multiplies (launch bound; not adds, so that the
               elementwise loop's kernel name is its own and the first
               launches of a name are the same launches on every side)

usage: python3 metrics_loops.py [--seconds S] [--min-iters N] [--loops a,b,...]
(--min-iters: at least N iterations per loop however long they take: under
ncu's replay one iteration may outlast --seconds)
"""
import argparse
import time

import torch

LOOPS = ("gemm_bf16", "gemm_fp32", "elementwise", "tiny")


def run(name, seconds, min_iters):
    dev = torch.device("cuda")
    if name == "gemm_bf16":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        step = lambda: torch.matmul(a, b)
    elif name == "gemm_fp32":
        torch.backends.cuda.matmul.allow_tf32 = False
        a = torch.randn(4096, 4096, device=dev)
        b = torch.randn(4096, 4096, device=dev)
        step = lambda: torch.matmul(a, b)
    elif name == "elementwise":
        a = torch.randn(256 << 20, device=dev)
        b = torch.randn(256 << 20, device=dev)
        c = torch.empty_like(a)
        step = lambda: torch.add(a, b, out=c)
    else:
        a = torch.ones(1, device=dev)
        b = torch.ones(1, device=dev)
        c = torch.empty_like(a)
        step = lambda: torch.mul(a, b, out=c)
    step()  # warm-up outside the range (library loading, autotuning)
    torch.cuda.synchronize()
    n = 0
    torch.cuda.nvtx.range_push(name)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < min_iters:
        for _ in range(50 if name == "tiny" else 1):
            step()
            n += 1
        if name != "tiny":
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    print(f"{name}: {n} iterations in {time.perf_counter() - t0:.2f} s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--min-iters", type=int, default=0)
    ap.add_argument("--loops", default=",".join(LOOPS))
    args = ap.parse_args()
    torch.cuda.init()
    for name in args.loops.split(","):
        run(name, args.seconds, args.min_iters)


if __name__ == "__main__":
    main()
