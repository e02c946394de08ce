#!/usr/bin/env python3
"""train_loop.py: an ordinary GPT-style PyTorch training loop, for the GPU
checks of collected runs (scripts/check_collected.sh).

Nothing in it knows about tbexport.  Like most training loops it marks each
iteration with an NVTX range ("train_step"), and the measured iterations,
after a warm-up, with an outer NVTX range ("measure") that a capture range
can select.  It prints one JSON line:

  {"loop_s": ..., "steps": N, "dtype": ..., "kernels": {name: calls}?}

loop_s is the measured iterations' wall time, synchronized at both ends.
With --torch-profiler OUT the measured iterations run under torch.profiler
instead (CPU and CUDA activities, record_shapes): its key_averages() kernel
rows (name, calls, device time) go to OUT/key_averages.json, its operator
rows grouped by input shape (key_averages(group_by_input_shape=True): name,
shapes, calls, CPU and device times) to OUT/ops_by_shape.json, and its
trace to OUT/torch.pt.trace.json, the references the collected run is
checked against.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, ctx):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20, help="measured iterations")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--torch-profiler", metavar="OUT")
    a = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    vocab = 8192
    model = GPT(vocab, a.dim, a.layers, 8, a.ctx).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    data = torch.randint(0, vocab, (a.batch, a.ctx + 1), device=dev)
    x, y = data[:, :-1], data[:, 1:]
    amp = a.dtype == "bf16"

    def step():
        torch.cuda.nvtx.range_push("train_step")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()

    prof = None
    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True)
        prof.__enter__()
    torch.cuda.nvtx.range_push("measure")
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    torch.cuda.nvtx.range_pop()
    if prof is not None:
        prof.__exit__(None, None, None)  # before loss.item(): the window holds the steps alone
    out = {"loop_s": t1 - t0, "steps": a.steps, "dtype": a.dtype, "loss": float(loss.item())}
    if prof is not None:
        os.makedirs(a.torch_profiler, exist_ok=True)
        prof.export_chrome_trace(os.path.join(a.torch_profiler, "torch.pt.trace.json"))
        cuda = torch.autograd.DeviceType.CUDA
        rows = {}
        for e in prof.key_averages():
            if getattr(e, "device_type", None) != cuda:
                continue
            rows[e.key] = {"calls": int(e.count), "device_us": float(e.self_device_time_total)}
        with open(os.path.join(a.torch_profiler, "key_averages.json"), "w") as f:
            json.dump(rows, f, indent=1)
        ops = []
        for e in prof.key_averages(group_by_input_shape=True):
            if getattr(e, "device_type", None) == cuda:
                continue
            ops.append({"name": e.key, "shapes": e.input_shapes, "calls": int(e.count),
                        "cpu_us": float(e.cpu_time_total), "self_cpu_us": float(e.self_cpu_time_total),
                        "device_us": float(e.device_time_total),
                        "self_device_us": float(e.self_device_time_total)})
        with open(os.path.join(a.torch_profiler, "ops_by_shape.json"), "w") as f:
            json.dump(ops, f, indent=1)
        out["kernel_rows"] = len(rows)
    assert math.isfinite(out["loss"])
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
