#!/usr/bin/env python3
"""check_summary.py: `tbexport summary` against torch.profiler's own figures.

For the GPU machine (torch with CUDA).  Profiles a few training steps of a
small CNN with torch.profiler, saves

  key_averages.txt    prof.key_averages().table(sort_by="device_time_total")
  trace.json          prof.export_chrome_trace(...)
  summary.txt         tbexport summary trace.json          (the terminal table)
  summary.json        tbexport summary --format json --top 0 trace.json

into --out, then checks that every kernel tbexport reports has the same call
count and, within 1%, the same total device time as key_averages' row for
that kernel, and that no kernel is missing on either side (which rows are
kernels is read from the trace: events with cat "kernel").  Prints both
tables, a side-by-side comparison and PASS or FAIL; exits 1 on failure.

usage: check_summary.py [--out DIR] [--steps N] PATH/TO/tbexport
"""
import argparse
import json
import os
import subprocess
import sys


def profile(out_dir, steps):
    import torch
    import torch.nn as nn
    from torch.profiler import ProfilerActivity, profile as tprofile

    if not torch.cuda.is_available():
        sys.exit("check_summary: CUDA is not available")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 16 * 16, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(32, 3, 64, 64, device=dev)
    y = torch.randint(0, 10, (32,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3):  # warm-up: cuDNN autotuning, allocator
        step()
    torch.cuda.synchronize()
    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    trace = os.path.join(out_dir, "trace.json")
    prof.export_chrome_trace(trace)
    ka = prof.key_averages()
    table = ka.table(sort_by="device_time_total", row_limit=-1)
    with open(os.path.join(out_dir, "key_averages.txt"), "w") as f:
        f.write(table)
    kernels = {}
    cuda_type = torch.autograd.DeviceType.CUDA
    for e in ka:
        if getattr(e, "device_type", None) != cuda_type:
            continue
        total = getattr(e, "self_device_time_total", None)
        if total is None:
            total = getattr(e, "self_cuda_time_total")
        kernels[e.key] = (int(e.count), float(total))  # us
    return trace, table, kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tbexport", help="path of the tbexport program")
    ap.add_argument("--out", default="check_summary_out", help="output directory")
    ap.add_argument("--steps", type=int, default=5, help="profiled training steps")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    trace, table, torch_rows = profile(a.out, a.steps)

    summ = subprocess.run([a.tbexport, "summary", trace], capture_output=True, text=True)
    js = subprocess.run([a.tbexport, "summary", "--format", "json", "--top", "0", trace],
                        capture_output=True, text=True)
    for r in (summ, js):
        if r.returncode != 0:
            print(r.stderr, end="")
            print("FAIL: tbexport summary exited %d" % r.returncode)
            return 1
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(summ.stdout)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        f.write(js.stdout)
    ours = {k["name"]: (k["calls"], k["total_ns"] / 1000.0) for k in json.loads(js.stdout)["kernels"]}

    print("== torch.profiler key_averages().table(sort_by=\"device_time_total\") ==")
    print(table)
    print("== tbexport summary ==")
    print(summ.stdout)

    # key_averages' device rows also hold copies, memsets and user
    # annotations projected onto the GPU (record_function ranges,
    # "gpu_user_annotation" in the trace); tbexport lists those elsewhere.
    # Which rows are kernels is read from the trace file itself.
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    kernel_names = {e["name"] for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"}
    others = sorted(n for n in torch_rows if n not in kernel_names)
    if others:
        print("device rows of key_averages that are not kernels (not compared): " + ", ".join(others))
    torch_rows = {n: v for n, v in torch_rows.items() if n in kernel_names}

    problems = []
    rows = []
    for name in sorted(set(ours) | set(torch_rows) | kernel_names,
                       key=lambda n: -max(ours.get(n, (0, 0))[1], torch_rows.get(n, (0, 0))[1])):
        t = torch_rows.get(name)
        o = ours.get(name)
        if t is None:
            problems.append("only in tbexport: %s" % name)
        elif o is None:
            problems.append("only in key_averages: %s" % name)
        else:
            if t[0] != o[0]:
                problems.append("calls differ (torch %d, tbexport %d): %s" % (t[0], o[0], name))
            rel = abs(o[1] - t[1]) / t[1] if t[1] > 0 else (0.0 if o[1] == 0 else 1.0)
            if rel > 0.01:
                problems.append("total differs by %.2f%% (torch %.3f us, tbexport %.3f us): %s"
                                % (100 * rel, t[1], o[1], name))
        rows.append((name, t, o))

    print("== per-kernel comparison (device time, us) ==")
    print("%-60s %7s %7s %12s %12s %7s" % ("kernel", "calls_t", "calls_o", "torch_us", "tbexport_us", "diff%"))
    for name, t, o in rows:
        short = name if len(name) <= 60 else name[:57] + "..."
        tc, tt = t if t else (0, 0.0)
        oc, ot = o if o else (0, 0.0)
        d = 100.0 * (ot - tt) / tt if tt else float("nan")
        print("%-60s %7d %7d %12.3f %12.3f %7.2f" % (short, tc, oc, tt, ot, d))
    print("kernels: %d in the trace, %d in key_averages, %d in tbexport" %
          (len(kernel_names), len(torch_rows), len(ours)))
    if not ours:
        problems.append("tbexport reported no kernels")
    if problems:
        for p in problems:
            print("  " + p)
        print("FAIL")
        return 1
    print("PASS: per-kernel call counts equal and totals within 1%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
