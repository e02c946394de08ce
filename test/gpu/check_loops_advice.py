"""Each loop of metrics_loops.py profiled on its own through the CLI, as a
user would, and the summary's advice checked for the loop's bound (the
GPU machine: scripts/gpu_verify advice).

For every loop two runs: `tbexport --gpu-metrics` (PM sampling) and
`tbexport --kernel-metrics` (the range profiler; the two cannot share a
GPU's counters).  `tbexport summary --format json` of each must carry
the advice kinds (tbexport/analysis.h, tbe_advice_kind) that name the
loop's bound:

  gemm_bf16    compute-bound (9) in both runs
  gemm_fp32    tensor pipes idle (7) in both runs; compute-bound (9) with
               the range profiler (PM has no FMA-pipe figure)
  elementwise  memory-bound (8) in both runs
  tiny         launch-bound (0) or short kernels (1) in both runs

and none of the other bounds' kinds (a GEMM loop called memory-bound, an
elementwise loop called compute-bound).  The PM run's timeline must begin
before the loop's first kernel: the first counter event of the Chrome
JSON no later than the first kernel (sampling is set up when the context
is created).  The text summary's kernel tables and advice are printed.

Exits 1 on any failure.

usage: python3 check_loops_advice.py --bin TBE_BIN --out DIR
"""
import argparse
import glob
import gzip
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOOPS = os.path.join(HERE, "metrics_loops.py")
NAMES = {0: "launch-bound", 1: "short kernels", 4: "sync", 6: "SMs underfilled", 7: "tensor pipes idle",
         8: "memory-bound", 9: "compute-bound"}
# loop -> run -> (kinds of which at least one must be there, for each group; kinds that must not)
WANT = {
    "gemm_bf16": {"pm": ([{9}], {8, 7}), "km": ([{9}], {8, 7})},
    "gemm_fp32": {"pm": ([{7}], {8}), "km": ([{7}, {9}], {8})},
    "elementwise": {"pm": ([{8}], {9, 7}), "km": ([{8}], {9, 7})},
    "tiny": {"pm": ([{0, 1}], {8, 9}), "km": ([{0, 1}], {8, 9})},
}


def sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return p.returncode, p.stdout + p.stderr


def first_ts(trace):
    """(first counter ts, first kernel ts) in a Chrome JSON trace, us."""
    with gzip.open(trace, "rt") as f:
        doc = json.load(f)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    c = [e["ts"] for e in ev if e.get("ph") == "C"]
    k = [e["ts"] for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return (min(c) if c else None), (min(k) if k else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", default="1")
    args = ap.parse_args()
    tb = os.path.join(args.bin, "tbexport")
    logdir = os.path.join(args.out, "loops_logdir")
    fails = []
    rows = []
    for loop, runs in WANT.items():
        for run, (need, never) in runs.items():
            name = f"{run}_{loop}"
            flag = "--gpu-metrics" if run == "pm" else "--kernel-metrics"
            rc, out = sh([tb, "--logdir", logdir, "--run", name, "--force", flag, "--",
                          sys.executable, LOOPS, "--loops", loop, "--seconds", args.seconds],
                         timeout=240)
            if rc:
                fails.append(f"{name}: tbexport exited {rc}: {out[-400:]}")
                continue
            rc, text = sh([tb, "summary", "--logdir", logdir, "--top", "4", name])
            rc2, js = sh([tb, "summary", "--logdir", logdir, "--format", "json", name])
            if rc or rc2:
                fails.append(f"{name}: summary exited {rc}/{rc2}")
                continue
            print(f"===== {name}")
            keep = False
            for line in text.splitlines():
                if line.startswith(("Kernels (", "Kernel metrics", "GPU metrics while", "Advice",
                                    "warning")):
                    keep = True
                elif not line.strip():
                    keep = False
                if keep:
                    print("  " + line[:150])
            doc = json.loads(js[js.index("{"):])
            kinds = {a["kind"] for a in doc.get("advice", [])}
            ok = all(kinds & g for g in need) and not (kinds & never)
            said = ", ".join(NAMES.get(k, str(k)) for k in sorted(kinds)) or "none"
            rows.append((loop, run, said, ok))
            if not ok:
                fails.append(f"{name}: advice {said}; wanted "
                             + " and ".join("/".join(NAMES[k] for k in sorted(g)) for g in need)
                             + ", none of " + "/".join(NAMES[k] for k in sorted(never)))
            if run == "pm":
                traces = glob.glob(os.path.join(logdir, "plugins", "profile", name, "*.trace.json.gz"))
                if not traces:
                    fails.append(f"{name}: no trace")
                    continue
                c, k = first_ts(traces[0])
                print(f"  first counter sample {c} us, first kernel {k} us")
                if c is None or k is None or c > k:
                    fails.append(f"{name}: the PM timeline begins at {c} us, after the first kernel at {k} us")
    print(f"\n{'loop':12} {'run':4} {'advice kinds':50} ok")
    for loop, run, said, ok in rows:
        print(f"{loop:12} {run:4} {said:50} {'yes' if ok else 'NO'}")
    for f in fails:
        print("FAIL:", f)
    print("loops advice check:", "FAILED" if fails else "passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
