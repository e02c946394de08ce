#!/usr/bin/env python3
"""torch_add_loop.py: workloads B, C and D of scripts/bench_overhead.sh.

--mode add (B): a PyTorch loop of N in-place adds (x.add_(1)) on a
1024-float CUDA tensor: launch-bound, one tiny kernel per iteration.
--mode graph (C): the same N adds, captured 20 to a CUDA graph and launched
as N/20 graph replays: one launch call per 20 kernels, the case where the
host's cost per kernel is lowest.
--mode mlp (D): N/50 training steps of a small MLP (3 x Linear(256, 256),
batch 64, SGD): host-bound, Python and the framework's dispatch between
short kernels.
Prints one line:

  torch_add_loop: iters=50000 loop_s=... stop_s=... export_s=... value=...

loop_s is the loop alone (after a warm-up, synchronized at both ends).
With --torch-profiler the loop runs under torch.profiler (CPU and CUDA
activities, started before the loop); stop_s and export_s are the time to
stop it and to export the Chrome trace (to --export PATH), which
bench_overhead.sh compares with tbexport's conversion after exit.  Without
it the script is an ordinary program, to be run plain, under the bare CUPTI
reader, or under `tbexport --`.
"""
import argparse
import os
import sys
import tempfile
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=50000)
    p.add_argument("--mode", choices=("add", "graph", "mlp"), default="add")
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--torch-profiler", action="store_true")
    p.add_argument("--export", default=None, help="Chrome trace path (torch profiler)")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("torch_add_loop: no CUDA device", file=sys.stderr)
        return 2
    x = torch.zeros(1024, dtype=torch.float32, device="cuda")
    for _ in range(a.warmup):
        x.add_(1)
    expect = float(a.warmup + a.iters)
    step, per = (lambda: x.add_(1)), 1
    if a.mode == "graph":
        per = 20
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # (torch's rule: warm up off the capture's stream)
            for _ in range(3):
                x.add_(1)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(per):
                x.add_(1)
        step = g.replay
        expect = float(a.warmup + 3 + (a.iters // per) * per)
    elif a.mode == "mlp":
        per = 50
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                  torch.nn.ReLU(), torch.nn.Linear(256, 256)).cuda()
        opt = torch.optim.SGD(net.parameters(), lr=1e-4)
        inp, tgt = torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda")

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(net(inp), tgt)
            loss.backward()
            opt.step()
            x.add_(1)  # (one count per training step: the check below)

        for _ in range(10):
            step()
        expect = float(a.warmup + 10 + a.iters // per)
    torch.cuda.synchronize()
    prof = None
    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.start()
    t0 = time.perf_counter()
    for _ in range(a.iters // per):
        step()
    torch.cuda.synchronize()
    loop = time.perf_counter() - t0
    stop_s = export_s = 0.0
    if prof is not None:
        t1 = time.perf_counter()
        prof.stop()
        t2 = time.perf_counter()
        path = a.export or os.path.join(tempfile.gettempdir(), "torch_add_loop.%d.json" % os.getpid())
        prof.export_chrome_trace(path)
        t3 = time.perf_counter()
        stop_s, export_s = t2 - t1, t3 - t2
        if not a.export:
            os.unlink(path)
    value = x[0].item()
    print(
        "torch_add_loop: mode=%s iters=%d loop_s=%.6f stop_s=%.6f export_s=%.6f value=%s"
        % (a.mode, a.iters, loop, stop_s, export_s, "ok" if value == expect else "WRONG(%r)" % value)
    )
    return 0 if value == expect else 1


if __name__ == "__main__":
    sys.exit(main())
