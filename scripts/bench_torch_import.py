#!/usr/bin/env python3
"""PyTorch's Chrome-trace exporter against tbexport's importer, in one run.

Runs on the GPU machine (needs torch with CUDA).  Profiles a loop of small
kernels with torch.profiler (default 50,000 launches of x.add_(1.0) on a
1024-float tensor), times prof.export_chrome_trace() to a file, times
Python's json.load of that file, then runs `bench_import FILE` (our importer
in a child process: events/s, MB/s, peak RSS, and its own json.load ratio)
on the same file.  Prints one line per measurement and the ratios.

usage: bench_torch_import.py --bench PATH/TO/bench_import [--iters N] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path to the bench_import binary")
    ap.add_argument("--iters", type=int, default=50000)
    ap.add_argument("--out", default=None, help="directory for the trace (default: a temp dir)")
    a = ap.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        sys.exit("bench_torch_import: CUDA is not available")
    x = torch.zeros(1024, device="cuda")
    for _ in range(100):  # warm up outside the profile
        x.add_(1.0)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(a.iters):
            x.add_(1.0)
        torch.cuda.synchronize()

    out = a.out or tempfile.mkdtemp(prefix="tbe-torch-")
    path = os.path.join(out, "torch_%dk.pt.trace.json" % (a.iters // 1000))
    t0 = time.perf_counter()
    prof.export_chrome_trace(path)
    t_export = time.perf_counter() - t0
    size = os.path.getsize(path)

    t0 = time.perf_counter()
    with open(path, "rb") as f:
        d = json.load(f)
    t_load = time.perf_counter() - t0
    events = len(d["traceEvents"]) if isinstance(d, dict) else len(d)
    kernels = sum(1 for e in (d["traceEvents"] if isinstance(d, dict) else d) if e.get("cat") == "kernel")
    del d

    print("torch %s, %d launches: %d JSON events (%d kernels), %.1f MB" %
          (torch.__version__, a.iters, events, kernels, size / 1e6))
    print("pytorch export_chrome_trace: %.3f s = %.0f events/s, %.1f MB/s" %
          (t_export, events / t_export, size / 1e6 / t_export))
    print("python json.load:            %.3f s = %.0f events/s" % (t_load, events / t_load))
    sys.stdout.flush()
    r = subprocess.run([a.bench, path], capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    # The bench's rows: "<file> <mode>", model events, MB, seconds, ...; mode
    # "1thr" is the one-thread importer, "N=<k>" the parallel one with k parse
    # workers (the largest k is what `tbexport import` uses on this machine).
    best = None
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0] == os.path.basename(path) and \
                (parts[1] == "1thr" or parts[1].startswith("N=")):
            t_ours = float(parts[4])
            print("tbexport import (%s): %.3f s = %.0f JSON events/s; %.1fx PyTorch's export "
                  "time, %.1fx faster than this json.load" % (parts[1], t_ours, events / t_ours,
                                                             t_export / t_ours, t_load / t_ours))
            if parts[1] != "1thr":
                best = (parts[1], t_ours)
    if best:
        print("goal (issue 3): import >= 5x json.load; default parallel import (%s): %.1fx -> %s" %
              (best[0], t_load / best[1], "MET" if t_load / best[1] >= 5 else "NOT MET"))
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
