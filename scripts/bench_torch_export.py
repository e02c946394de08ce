#!/usr/bin/env python3
"""bench_torch_export.py: PyTorch's Chrome-trace export and `tbexport import`
side by side, on the GPU machine (torch with CUDA).

Profiles a loop of small kernels (`x.add_(1)` on a 1024-float CUDA tensor)
with torch.profiler (CPU + CUDA activities), times export_chrome_trace to a
file, then times `tbexport import` of that file (all outputs, and the Chrome
JSON output alone), and prints both and the ratios.

usage: bench_torch_export.py TBEXPORT_BIN [--iters 50000] [--dir DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tbexport", help="path to the tbexport binary")
    ap.add_argument("--iters", type=int, default=50000)
    ap.add_argument("--dir", help="work directory (default: a temporary one, removed)")
    a = ap.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        print("CUDA is not available", file=sys.stderr)
        return 2
    work = a.dir or tempfile.mkdtemp(prefix="bench_torch_export.")
    os.makedirs(work, exist_ok=True)
    x = torch.zeros(1024, device="cuda")
    for _ in range(100):  # warm up CUDA and the caching allocator
        x.add_(1)
    torch.cuda.synchronize()

    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(a.iters):
            x.add_(1)
        torch.cuda.synchronize()
    t_prof = time.perf_counter() - t0

    trace = os.path.join(work, "torch_trace.json")
    t0 = time.perf_counter()
    prof.export_chrome_trace(trace)
    t_torch = time.perf_counter() - t0
    size = os.path.getsize(trace)
    with open(trace) as f:
        nev = len(json.load(f)["traceEvents"])

    def tbexport(fmt, run):
        logdir = os.path.join(work, "log_dir")
        cmd = [a.tbexport, "import", trace, "--logdir", logdir, "--run", run, "--force", "--quiet"]
        if fmt:
            cmd += ["--format", fmt]
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            print("tbexport failed: %s" % p.stderr.strip(), file=sys.stderr)
            sys.exit(1)
        return dt, p.stdout.split()

    t_json, files_json = tbexport("json", "torch_json")
    t_all, files_all = tbexport(None, "torch_all")

    print("profiled %d iterations of x.add_(1) in %.2f s" % (a.iters, t_prof))
    print("PyTorch export_chrome_trace: %d events, %.1f MB in %.3f s = %.0f events/s"
          % (nev, size / 1e6, t_torch, nev / t_torch))
    print("tbexport import (read the JSON, write .trace.json.gz): %.3f s = %.0f events/s   x%.1f vs PyTorch"
          % (t_json, nev / t_json, t_torch / t_json))
    print("tbexport import (read the JSON, write xplane + json.gz + events): %.3f s = %.0f events/s   x%.1f vs PyTorch"
          % (t_all, nev / t_all, t_torch / t_all))
    for f in files_all:
        print("  %s  %.1f MB" % (f, os.path.getsize(f) / 1e6))
    if not a.dir:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
