"""The range profiler with a capture range, on the GPU machine, as a user
runs it (scripts/gpu_verify capture).

A torch program (this file with --child) warms up outside the range, then
runs a few steps inside it, then runs more after it:

  outside before: bf16 GEMMs and adds (the same kernels as inside), and
                  cumsum, which runs only there
  inside:         bf16 GEMMs and adds, and a sort, which runs only there
  outside after:  GEMMs and adds again, and flip, only there

once with the range given by torch.cuda.profiler.start()/stop()
(`--capture-range cudaProfilerApi`), once by NVTX ranges named "step"
(`--capture-range nvtx:step`), both with `--kernel-metrics
--kernel-metrics-launches 2`.  `tbexport summary --format json` must show:
kernels of the range only (no cumsum, no flip), figures (metric_launches
1..2) for the GEMM, the add and the sort, the warning that records outside
the range were cut, and no other warning that something was left out.  The figures of the GEMM must be those of a bf16 GEMM (tensor
pipe above 50%).  Exits 1 on any failure.

usage: python3 check_capture.py --bin TBE_BIN --out DIR
"""
import argparse
import json
import os
import subprocess
import sys


def child(mode):
    import torch
    dev = "cuda"
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    x = torch.randn(1 << 24, device=dev)
    v = torch.randn(1 << 20, device=dev)

    def work():
        c = a @ b
        y = x + 1.0
        return c, y

    for _ in range(5):  # warm-up: outside
        work()
        torch.cumsum(v, 0)
    torch.cuda.synchronize()
    if mode == "profiler":
        torch.cuda.profiler.start()
    for _ in range(4):
        if mode == "nvtx":
            torch.cuda.nvtx.range_push("step")
        work()
        torch.sort(v)
        torch.cuda.synchronize()
        if mode == "nvtx":
            torch.cuda.nvtx.range_pop()
    if mode == "profiler":
        torch.cuda.profiler.stop()
    for _ in range(5):  # after: outside
        work()
        torch.flip(v, [0])
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--out")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    tb = os.path.join(args.bin, "tbexport")
    logdir = os.path.join(args.out, "capture_logdir")
    fails = []
    for mode, rng in (("profiler", "cudaProfilerApi"), ("nvtx", "nvtx:step")):
        run = f"capture_{mode}"
        p = subprocess.run([tb, "--logdir", logdir, "--run", run, "--force", "--kernel-metrics",
                            "--kernel-metrics-launches", "2", "--capture-range", rng, "--",
                            sys.executable, os.path.abspath(__file__), "--child", mode],
                           capture_output=True, text=True, timeout=300)
        print(f"===== {run}: tbexport exit {p.returncode}")
        print("\n".join("  " + l for l in (p.stdout + p.stderr).splitlines()[-12:]))
        if p.returncode:
            fails.append(f"{run}: tbexport exited {p.returncode}")
            continue
        t = subprocess.run([tb, "summary", "--logdir", logdir, "--top", "8", run],
                           capture_output=True, text=True)
        keep = False
        for line in t.stdout.splitlines():
            if line.startswith(("Kernels (", "Kernel metrics", "warning", "Steps")):
                keep = True
            elif not line.strip():
                keep = False
            if keep:
                print("  " + line[:160])
        j = subprocess.run([tb, "summary", "--logdir", logdir, "--format", "json", run],
                           capture_output=True, text=True)
        if j.returncode:
            fails.append(f"{run}: summary exited {j.returncode}")
            continue
        doc = json.loads(j.stdout[j.stdout.index("{"):])
        ks = doc.get("kernels", [])
        names = {k["name"] for k in ks}
        for k in ks:
            if "metric_launches" in k:
                print(f"  measured: {k['name'][:70]}: launches {k['metric_launches']}, "
                      f"{json.dumps(k.get('metrics', {}))[:160]}")

        def find(word):
            return [k for k in ks if word in k["name"].lower()]

        for word in ("cumsum", "flip"):
            if find(word):
                fails.append(f"{run}: a kernel from outside the range is in the run: "
                             + find(word)[0]["name"][:80])
        gemm_calls = sum(k["calls"] for k in find("nvjet"))
        print(f"  GEMM kernel calls in the run: {gemm_calls} (4 steps inside, 14 in all)")
        if gemm_calls not in (4, 8):
            fails.append(f"{run}: {gemm_calls} GEMM kernel calls, not the 4 steps' inside the range")
        for word, what in (("nvjet", "the bf16 GEMM"), ("sort", "the sort"),
                           ("elementwise", "the add")):
            got = [k for k in find(word) if "metric_launches" in k]
            if not got:
                fails.append(f"{run}: no figures for {what} (kernels: {sorted(names)[:12]})")
                continue
            for k in got:
                if not 1 <= k["metric_launches"] <= 2:
                    fails.append(f"{run}: {k['name'][:60]} measured over {k['metric_launches']} launches")
            if word == "nvjet":
                tp = max(k.get("metrics", {}).get("tensor_pipe_pct", 0) for k in got)
                if tp < 50:
                    fails.append(f"{run}: the bf16 GEMM's tensor pipe is {tp}%")
        # The warm-up and the launches after the range are cut (that warning
        # must be there); anything else left out (a replayed kernel without
        # a span, say) is a failure.
        warns = [w if isinstance(w, str) else json.dumps(w) for w in doc.get("warnings", [])]
        if not any("outside the capture range were left out" in w for w in warns):
            fails.append(f"{run}: no records outside the capture range were cut")
        for text in warns:
            if "left out" in text and "outside the capture range" not in text:
                fails.append(f"{run}: {text[:200]}")
    for f in fails:
        print("FAIL:", f)
    print("capture check:", "FAILED" if fails else "passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
