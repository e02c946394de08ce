#!/usr/bin/env python3
"""crash.py: a PyTorch program that dies of a signal after its GPU work
completed, for the GPU checks of collected runs (scripts/check_collected.sh).

--signal segv (default): launches --adds in-place adds, synchronizes,
prints {"adds": N, "done_unix": t} and dereferences a null pointer
(SIGSEGV).  --signal abrt / term: dies of SIGABRT / SIGTERM instead.

--kill-test: the SIGKILL variant.  Rounds of 1000 adds, each synchronized
and then reported as {"round": i, "adds": N, "unix": t} (flushed), with
--sleep seconds between rounds, until the parent kills the process; the
last line printed at least one flush period before the kill tells how many
kernels had completed by then.
"""
import argparse
import ctypes
import json
import os
import signal
import sys
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--adds", type=int, default=600)
    ap.add_argument("--signal", choices=("segv", "abrt", "term"), default="segv")
    ap.add_argument("--kill-test", action="store_true")
    ap.add_argument("--sleep", type=float, default=0.1)
    a = ap.parse_args()
    x = torch.zeros(1024, device="cuda")
    torch.cuda.synchronize()
    if a.kill_test:
        n = 0
        for i in range(100000):
            for _ in range(1000):
                x.add_(1.0)
            torch.cuda.synchronize()
            n += 1000
            print(json.dumps({"round": i, "adds": n, "unix": time.time()}), flush=True)
            time.sleep(a.sleep)
        return
    for _ in range(a.adds):
        x.add_(1.0)
    torch.cuda.synchronize()
    assert float(x[0].item()) == float(a.adds)
    print(json.dumps({"adds": a.adds, "done_unix": time.time()}), flush=True)
    sys.stdout.flush()
    if a.signal == "segv":
        ctypes.string_at(0)
    elif a.signal == "abrt":
        os.abort()
    else:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)


if __name__ == "__main__":
    main()
