#!/usr/bin/env python3
"""compiled.py: a small model under torch.compile (Triton kernels from
Inductor) and scaled_dot_product_attention (FlashAttention), for the GPU
checks of kernel classes (scripts/check_collected.py, part "compiled").

Nothing in it knows about tbexport.  It marks each iteration with an NVTX
range "step" and prints one JSON line {"steps": N, "loop_s": ...}.
"""
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d=512, heads=8):
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


def main():
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block()).cuda().half()
    step = torch.compile(model)
    x = torch.randn(8, 256, 512, device="cuda", dtype=torch.half)
    for _ in range(3):  # compile and warm up
        step(x).float().pow(2).mean().backward()
    torch.cuda.synchronize()
    t0 = time.time()
    n = 10
    for i in range(n):
        torch.cuda.nvtx.range_push("step")
        step(x).float().pow(2).mean().backward()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(json.dumps({"steps": n, "loop_s": time.time() - t0}))


if __name__ == "__main__":
    main()
