#!/usr/bin/env python3
"""mem_loops.py: programs of known memory behaviour for memory_check.py,
run unmodified under `tbexport --steps nvtx:train_step -- python3
mem_loops.py MODE OUT.json` on the GPU machine (issue 30).

Modes:
  peak   a small MLP trained 20 steps (forward, backward, SGD); at each
         step's start torch.cuda.reset_peak_memory_stats(), at its end
         torch.cuda.max_memory_allocated(): the program's own per-step
         peaks, and the overall peak (the maximum of those);
  leak   the same loop, keeping one 64 MiB tensor per step in a list (a
         planted leak: 20 x 64 MiB never freed);
  jax    a JAX loop (jit matmuls) of 20 steps, with each device's
         memory_stats() at the end.

Each step is an NVTX range "train_step".  OUT.json gets what the program
saw: per-step peaks (bytes), the overall peak, the loop's wall time.
"""
import json
import os
import sys
import time

MODE, OUT = sys.argv[1], sys.argv[2]
STEPS = int(os.environ.get("MEM_LOOPS_STEPS", "20"))


def torch_loop(leak):
    import torch

    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(512, 2048, device=dev)
    y = torch.randn(512, 1024, device=dev)
    kept = []
    peaks = []
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(STEPS):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.nvtx.range_push("train_step")
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if leak:
            kept.append(torch.empty(64 << 20, dtype=torch.uint8, device=dev))
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        peaks.append(torch.cuda.max_memory_allocated())
    loop_s = time.perf_counter() - t0
    return {"steps": STEPS, "step_peaks": peaks, "peak": max(peaks), "loop_s": loop_s,
            "allocated_end": torch.cuda.memory_allocated(), "reserved_end": torch.cuda.memory_reserved(),
            "leak_bytes_per_step": (64 << 20) if leak else 0}


def jax_loop():
    import ctypes
    import jax
    import jax.numpy as jnp

    nvtx = None
    try:
        import nvtx as nvtx_mod  # optional
        nvtx = nvtx_mod
    except ImportError:
        pass
    f = jax.jit(lambda a, b: jnp.tanh(a @ b))
    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, (4096, 4096))
    b = jax.random.normal(key, (4096, 4096))
    kept = []
    t0 = time.perf_counter()
    for i in range(STEPS):
        if nvtx:
            nvtx.push_range("train_step")
        c = f(a, b)
        kept.append(c)  # grows 64 MiB a step (4096 x 4096 float32)
        c.block_until_ready()
        if nvtx:
            nvtx.pop_range()
    loop_s = time.perf_counter() - t0
    stats = [d.memory_stats() or {} for d in jax.local_devices()]
    return {"steps": STEPS, "loop_s": loop_s, "memory_stats": stats,
            "peak": max((s.get("peak_bytes_in_use", 0) for s in stats), default=0)}


if MODE == "peak":
    r = torch_loop(False)
elif MODE == "leak":
    r = torch_loop(True)
elif MODE == "jax":
    r = jax_loop()
else:
    sys.exit("usage: mem_loops.py peak|leak|jax OUT.json")
with open(OUT, "w") as f:
    json.dump(r, f)
print(json.dumps({k: v for k, v in r.items() if k != "step_peaks"}))
