#!/usr/bin/env python3
"""ops_check.py: the operator layer of unmodified programs on the GPU
machine, against PyTorch's own profiler (issue 27).  Run by
`scripts/gpu_verify ops`; PASS/FAIL lines, exit 1 on any FAIL.

Parts (--parts, default all):
  compare   train_loop.py (GPT-style, fp32: forward, backward, AdamW),
            collected with `tbexport --record-shapes --capture-range
            nvtx:measure --steps nvtx:train_step` and run under
            torch.profiler(record_shapes=True) over the same measured
            iterations: for every aten operator (name and input shapes, a
            tensor list's shapes flattened as PyTorch's NVTX ranges give
            them) the call counts equal key_averages(group_by_input_shape=
            True)'s; each operator's CUDA total (its kernels, copies and
            memsets and its children's) within 5% of torch's for operators
            with at least 0.5% of the GPU time; each kernel attributed to
            the same innermost operator as torch's for >= 99% of kernels
            (kernels of one name matched in launch order); `tbexport
            summary`'s operator table agrees with what the Chrome JSON says.
  launches  every kernel, copy and memset of a collected run has its
            launching CPU call (a cuda_runtime or cuda_driver event of the
            same correlation id): the GPT loop in bf16 (cuBLASLt's nvjet
            GEMMs, SDPA's attention), a JAX loop (XLA launches through the
            driver API), a Triton kernel.
  overhead  interleaved rounds of two fp32 GPT loops: plain, under tbexport
            (operators, the default), with --record-shapes, with --no-ops;
            the program's own loop time, median per mode, ratios to plain.
            Goals (operators <= 1.03x, with shapes <= 1.10x) judged on the
            training loop whose GPU work outlasts its host's; the small loop,
            whose host is about as busy as its GPU, is reported.
  collect   runs kept for the repository's client tests, as OUT/fixtures.tgz:
            a small before/after pair (fp32, bf16 autocast; shapes on), a
            two-rank job (ddp_ranks.py under torchrun, gloo, one tbexport
            per rank: its own host entry each, operators on), and a run with
            PM sampling and no steps (metrics_loops.py, 1 kHz).

usage: ops_check.py --bin DIR --out DIR [--parts compare,launches,overhead,collect]
"""
import argparse
import collections
import glob
import gzip
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
fails = 0


def check(cond, what):
    global fails
    print(("PASS: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        fails += 1
    return cond


def run(cmd, timeout=300, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    print("$ %s\n  status %d in %.1f s" % (" ".join(cmd), p.returncode, time.time() - t0), flush=True)
    if p.returncode:
        for line in (p.stderr or "").splitlines()[-20:]:
            print("  | " + line)
    return p


def last_json(text):
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return None


def chrome(logdir, run_name):
    paths = sorted(glob.glob(os.path.join(logdir, "plugins/profile", run_name, "*.trace.json.gz")))
    docs = []
    for p in paths:
        with gzip.open(p, "rt") as f:
            docs.append(json.load(f))
    return docs


def flat_shapes(shapes):
    """Input shapes as one flat tuple of shapes (a tensor list's shapes in
    line), the form of PyTorch's NVTX ranges."""
    out = []
    for s in shapes or []:
        if s and isinstance(s[0], list):
            out.extend(tuple(x) for x in s)
        else:
            out.append(tuple(s))
    return tuple(out)


def op_tree(events):
    """Per cpu_op event: its External id, name, shapes and the GPU time of
    the work attributed to it (self) and to it and its children (total),
    from a Kineto-layout event list."""
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    gpu = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            x = e.get("args", {}).get("External id")
            if x:
                gpu[x] += float(e.get("dur", 0))
    by_tid = collections.defaultdict(list)
    for o in ops:
        by_tid[(o["pid"], o["tid"])].append(o)
    rows = []
    for lst in by_tid.values():
        lst.sort(key=lambda o: (o["ts"], -o.get("dur", 0)))
        stack = []  # [end, row]
        for o in lst:
            end = o["ts"] + o.get("dur", 0)
            while stack and stack[-1][0] <= o["ts"]:
                stack.pop()
            x = o.get("args", {}).get("External id")
            row = {"name": o["name"], "shapes": flat_shapes(o.get("args", {}).get("Input Dims")),
                   "self": gpu.get(x, 0.0), "total": 0.0, "ext": x}
            rows.append(row)
            stack.append([end, row])
            # every open ancestor (and itself) gets this op's own GPU time
            for _, r in stack:
                r["total"] += row["self"]
    return rows


def kernel_ops(events):
    """Each kernel's innermost operator name, in launch order per kernel
    name: {kernel name: [op name or None, ...]}."""
    names = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            x = e.get("args", {}).get("External id")
            if x:
                names[x] = e["name"]
    out = collections.defaultdict(list)
    for e in sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"),
                    key=lambda e: e["ts"]):
        out[e["name"]].append(names.get(e.get("args", {}).get("External id")))
    return out


# ---- parts ----


def part_compare(a, tb, loop):
    ld = os.path.join(a.out, "compare")
    steps, warm = 6, 3
    args = ["--steps", str(steps), "--warmup", str(warm)]
    ref = os.path.join(ld, "torch")
    p = run([sys.executable, loop] + args + ["--torch-profiler", ref], timeout=400)
    if not check(p.returncode == 0, "torch.profiler reference run"):
        return
    p = run([tb, "--logdir", ld, "--run", "gpt_fp32", "--record-shapes", "--capture-range", "nvtx:measure",
             "--steps", "nvtx:train_step", "--", sys.executable, loop] + args, timeout=400)
    if not check(p.returncode == 0, "collected run with operators and shapes"):
        return
    ours = [e for d in chrome(ld, "gpt_fp32") for e in d["traceEvents"]]
    with open(os.path.join(ref, "torch.pt.trace.json")) as f:
        theirs = json.load(f)["traceEvents"]
    with open(os.path.join(ref, "ops_by_shape.json")) as f:
        tref = json.load(f)

    # calls per aten op, and per (aten op, input shapes).  PyTorch's
    # profiler records a tensor-list input (aten::cat, _foreach_*, fused
    # optimizers) as one empty shape; its NVTX ranges list the list's
    # tensors, one shape each: for those operators the shapes cannot agree
    # and the calls are compared by name (the operators named below).
    want_n, got_n = collections.Counter(), collections.Counter()
    want = collections.defaultdict(collections.Counter)
    for r in tref:
        if r["name"].startswith("aten::"):
            want_n[r["name"]] += r["calls"]
            want[r["name"]][flat_shapes(r["shapes"])] += r["calls"]
    ours_rows = op_tree(ours)
    got = collections.defaultdict(collections.Counter)
    for r in ours_rows:
        if r["name"].startswith("aten::"):
            got_n[r["name"]] += 1
            got[r["name"]][r["shapes"]] += 1
    bad_n = sorted(n for n in set(want_n) | set(got_n) if want_n[n] != got_n[n])
    for n in bad_n:
        print("  %-40s torch %5d ours %5d" % (n, want_n[n], got_n[n]))
    check(not bad_n, "calls of every aten operator equal torch's key_averages(): %d operators, %d calls; %d differ"
          % (len(want_n), sum(want_n.values()), len(bad_n)))
    lists, bad_s, keys = [], [], 0
    for n in want:
        if want[n] == got.get(n):
            keys += len(want[n])
            continue
        # a tensor list: every call's shapes longer in ours than any in torch's
        tlen = max(len(k) for k in want[n])
        if want_n[n] == got_n[n] and got.get(n) and min(len(k) for k in got[n]) > tlen:
            lists.append(n)
            continue
        bad_s.append(n)
        for k in set(want[n]) | set(got.get(n, {})):
            if want[n][k] != got.get(n, {}).get(k, 0):
                print("  %-40s %-50s torch %5d ours %5d" % (n, str([list(x) for x in k])[:50], want[n][k],
                                                           got.get(n, {}).get(k, 0)))
    check(not bad_s, "calls by input shape equal torch's key_averages(group_by_input_shape=True) for %d (name, "
          "shapes) keys; operators with tensor-list inputs compared by name (PyTorch's profiler records a list as "
          "[], its NVTX ranges each tensor's shape): %s; differ: %s" % (keys, ", ".join(sorted(lists)) or "none",
                                                                      ", ".join(bad_s) or "none"))

    # CUDA total per op name
    tot_t = collections.defaultdict(float)
    for r in op_tree(theirs):
        tot_t[r["name"]] += r["total"]
    tot_o = collections.defaultdict(float)
    for r in ours_rows:
        tot_o[r["name"]] += r["total"]
    gpu_total = sum(float(e.get("dur", 0)) for e in theirs if e.get("cat") == "kernel")
    bad = []
    compared = 0
    for name, t in sorted(tot_t.items(), key=lambda x: -x[1]):
        if not name.startswith("aten::") or t < 0.005 * gpu_total:
            continue
        compared += 1
        o = tot_o.get(name, 0.0)
        rel = abs(o - t) / t
        print("  %-45s torch %10.1f us  ours %10.1f us  %+5.1f%%" % (name, t, o, 100 * (o - t) / t))
        if rel > 0.05:
            bad.append(name)
    check(compared > 0 and not bad, "CUDA total per aten operator within 5%% of torch's (%d operators with >= 0.5%% of "
          "the GPU time; off: %s)" % (compared, ", ".join(bad) or "none"))

    # kernel attribution
    kt, ko = kernel_ops(theirs), kernel_ops(ours)
    same = total = 0
    for k, lst in kt.items():
        olst = ko.get(k, [])
        for i, name in enumerate(lst):
            total += 1
            if i < len(olst) and olst[i] == name:
                same += 1
    share = same / total if total else 0
    check(total > 0 and share >= 0.99, "kernels attributed to the same innermost operator as torch's: %d of %d "
          "(%.2f%%)" % (same, total, 100 * share))

    # the summary's operator table against the Chrome JSON
    p = run([tb, "summary", "--logdir", ld, "gpt_fp32", "--format", "json"])
    try:
        s = json.loads(p.stdout)
    except ValueError:
        s = None
    table = (s or {}).get("cpu_ops") or []
    check(bool(table), "summary --format json has an operator table (%d rows)" % len(table))
    by = {r.get("name"): r for r in table if isinstance(r, dict)}
    off = []
    for name, o in tot_o.items():
        r = by.get(name)
        if r is None or o < 0.005 * gpu_total:
            continue
        v = r.get("cuda_total_ns")
        if v is None or abs(v / 1000.0 - o) > max(1.0, 0.001 * o):
            off.append("%s (%r ns vs %.1f us)" % (name, v, o))
    check(not off, "summary's CUDA totals equal the Chrome JSON's (off: %s)" % (", ".join(off[:5]) or "none"))
    p = run([tb, "summary", "--logdir", ld, "gpt_fp32", "--top", "12"])
    print(p.stdout)


def missing_launches(docs):
    calls = set()
    for d in docs:
        for e in d["traceEvents"]:
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
                calls.add((e.get("pid"), e["args"]["correlation"]))
    n = miss = 0
    kinds = collections.Counter()
    for d in docs:
        pids = {e.get("pid") for e in d["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver")}
        for e in d["traceEvents"]:
            if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
                continue
            n += 1
            c = e.get("args", {}).get("correlation")
            if not any((p, c) in calls for p in pids):
                miss += 1
                kinds[e["name"][:60]] += 1
    return n, miss, kinds


def part_launches(a, tb, loop):
    ld = os.path.join(a.out, "launches")
    progs = [("gpt_bf16", [sys.executable, loop, "--dtype", "bf16", "--steps", "4", "--warmup", "2"]),
             ("jax", [sys.executable, os.path.join(HERE, "jax_loop.py"), "--iters", "50"]),
             ("triton", [sys.executable, os.path.join(HERE, "triton_loop.py"), "--iters", "50"])]
    for name, cmd in progs:
        p = run([tb, "--logdir", ld, "--run", name, "--"] + cmd, timeout=400)
        if not check(p.returncode == 0, "%s: collected" % name):
            continue
        n, miss, kinds = missing_launches(chrome(ld, name))
        for k, c in kinds.most_common(5):
            print("  no launching call: %5d x %s" % (c, k))
        check(n > 0 and miss == 0, "%s: %d GPU activities, %d without a launching CPU call" % (name, n, miss))


# The loops timed: a GPT training loop whose GPU work outlasts its host's
# (the goal's loop: 6 layers of 1024, batch 16 of 256 tokens), and the
# small one of the other parts, whose host work is about its GPU work, so
# any host cost shows (reported, not judged).
LOOPS = {"gpt_train": ["--steps", "12", "--warmup", "3", "--layers", "6", "--dim", "1024"],
         "gpt_small": ["--steps", "40", "--warmup", "5"]}


def part_overhead(a, tb, loop):
    ld = os.path.join(a.out, "overhead")
    modes = {"plain": [], "ops": [tb, "--logdir", ld, "--quiet", "--"],
             "shapes": [tb, "--logdir", ld, "--quiet", "--record-shapes", "--"],
             "no_ops": [tb, "--logdir", ld, "--quiet", "--no-ops", "--"]}
    for lname, largs in LOOPS.items():
        res = collections.defaultdict(list)
        for r in range(a.rounds):
            for m, pre in modes.items():
                p = run(pre + [sys.executable, loop] + largs, timeout=300)
                j = last_json(p.stdout) if p.returncode == 0 else None
                if j:
                    res[m].append(j["loop_s"])
        base = statistics.median(res["plain"]) if res["plain"] else 0
        print("\n  %s: mode  rounds   median loop s   ratio to plain" % lname)
        for m in modes:
            if res[m]:
                med = statistics.median(res[m])
                print("  %-12s  %6d   %13.4f   %6.3fx   (%s)" % (m, len(res[m]), med, med / base if base else 0,
                                                                ", ".join("%.4f" % x for x in res[m])))
        if not (base and res["ops"] and res["shapes"]):
            check(False, "overhead %s: a mode did not run" % lname)
            continue
        ro = statistics.median(res["ops"]) / base
        rs = statistics.median(res["shapes"]) / base
        if lname == "gpt_train":
            check(ro <= 1.03, "%s: operators cost %.3fx plain (goal <= 1.03x)" % (lname, ro))
            check(rs <= 1.10, "%s: operators with shapes cost %.3fx plain (goal <= 1.10x)" % (lname, rs))
        else:
            print("  %s: operators %.3fx, with shapes %.3fx plain (host-bound: not judged)" % (lname, ro, rs))


def part_collect(a, tb, loop):
    root = os.path.join(a.out, "fixtures")
    ld = os.path.join(root, "ops_pair")
    small = ["--steps", "3", "--warmup", "2", "--layers", "2", "--dim", "256", "--batch", "8", "--ctx", "128"]
    for name, extra in (("gpt_fp32", []), ("gpt_bf16", ["--dtype", "bf16"])):
        p = run([tb, "--logdir", ld, "--run", name, "--record-shapes", "--capture-range", "nvtx:measure",
                 "--steps", "nvtx:train_step", "--", sys.executable, loop] + small + extra, timeout=300)
        check(p.returncode == 0, "collect %s" % name)
    ranks = os.path.join(root, "ranks")
    trun = ["torchrun"] if subprocess.run(["which", "torchrun"], capture_output=True).returncode == 0 \
        else [sys.executable, "-m", "torch.distributed.run"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # (no --run: torchrun takes it for its own --run-path; the job's id names the run)
    p = run(trun + ["--standalone", "--nproc-per-node", "2", "--no-python", tb, "--logdir", ranks,
                    "--steps", "nvtx:train_step", "--", sys.executable, os.path.join(HERE, "ddp_ranks.py"),
                    "--steps", "6", "--dim", "512", "--batch", "64"], timeout=300, env=env)
    check(p.returncode == 0, "collect a two-rank job")
    pm = os.path.join(root, "metrics")
    p = run([tb, "--logdir", pm, "--run", "pm_nosteps", "--gpu-metrics=1000", "--", sys.executable,
             os.path.join(HERE, "metrics_loops.py"), "--seconds", "0.6", "--loops", "gemm_bf16,elementwise"],
            timeout=300)
    check(p.returncode == 0, "collect PM sampling without steps")
    out = os.path.join(a.out, "fixtures.tgz")
    with tarfile.open(out, "w:gz") as t:
        t.add(root, arcname="fixtures")
    check(os.path.getsize(out) < 15 << 20, "fixtures.tgz: %d bytes" % os.path.getsize(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="compare,launches,overhead,collect")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tb = os.path.join(a.bin, "tbexport")
    loop = os.path.join(HERE, "train_loop.py")
    os.makedirs(a.out, exist_ok=True)
    for part in a.parts.split(","):
        print("==== ops: %s" % part, flush=True)
        {"compare": part_compare, "launches": part_launches, "overhead": part_overhead,
         "collect": part_collect}[part](a, tb, loop)
    print("ops check: %s" % ("passed" if not fails else "%d FAILED" % fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
