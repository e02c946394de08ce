#!/usr/bin/env python3
"""memory_check.py: memory over time of unmodified programs on the GPU
machine, against the programs' own figures (issue 30).  Run by
`scripts/gpu_verify memory`; PASS/FAIL lines, exit 1 on any FAIL.

Parts (--parts, default all):
  peak      mem_loops.py peak (an MLP trained 20 steps, steps as NVTX
            ranges "train_step") under `tbexport --steps nvtx:train_step`:
            `tbexport summary --format json`'s peak allocated per step and
            overall equal the program's torch.cuda.max_memory_allocated()
            (reset at each step's start) within 1%; the Chrome JSON's last
            [memory] Total Allocated equals the program's
            memory_allocated() at the end; no warning that the curve's peak
            differs from torch's.
  leak      mem_loops.py leak (the same loop keeping one 64 MiB tensor a
            step): the advice names the leak (kind 14) at 64 MiB per step
            within 1% over 20 steps; growth per step and never-freed bytes
            agree.
  cuda      mem_sizes.cu, compiled here with nvcc: every allocation and free
            it printed, in order, is a memory event of the Chrome JSON with
            those bytes (host-pinned on the host), and GPU 0's Total
            Allocated is their running sum exactly.
  jax       mem_loops.py jax: the Chrome JSON has JAX's device memory as a
            counter track of GPU 0 that grows by about 64 MiB a step (the
            loop keeps its results) and whose largest sample is at most the
            program's peak_bytes_in_use and at least 90% of it.
  overhead  interleaved rounds (--rounds, default 6) of mem_loops.py peak
            with 200 steps: plain, `tbexport --trace cuda,nvtx` (no memory)
            and `tbexport` (the default, memory on); the program's own loop
            time, median per mode; goal: memory on / off <= 1.02.
  collect   the peak and leak runs' log dirs as OUT/memory_fixtures.tgz, for
            the client tests of this repository (the PyTorch plugin's
            Memory view, HTA) on a machine that has them; and
            EventAccumulator reads steps/peak_allocated_bytes of both.

usage: memory_check.py --bin DIR --out DIR [--parts peak,leak,cuda,jax,overhead,collect]
"""
import argparse
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
LOOPS = os.path.join(HERE, "mem_loops.py")
MIB = 1 << 20
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


def chrome(logdir, run_name):
    docs = []
    for p in sorted(glob.glob(os.path.join(logdir, "plugins/profile", run_name, "*.trace.json.gz"))):
        with gzip.open(p, "rt") as f:
            docs.append(json.load(f))
    return docs


def summary(tb, logdir, run_name):
    p = run([tb, "summary", "--logdir", logdir, run_name, "--format", "json"])
    return json.loads(p.stdout) if p.returncode == 0 else None


def profile(a, tb, name, prog_args, extra=()):
    logdir = os.path.join(a.out, "logdir")
    res = os.path.join(a.out, name + ".json")
    p = run([tb, "--logdir", logdir, "--run", name, "--steps", "nvtx:train_step", *extra, "--",
             sys.executable, LOOPS, *prog_args, res], timeout=600)
    print("\n".join("  " + l for l in p.stderr.splitlines() if "warning" in l.lower() or "memory" in l.lower()))
    if not check(p.returncode == 0 and os.path.exists(res), "%s: tbexport ran the program" % name):
        return logdir, None, p
    with open(res) as f:
        return logdir, json.load(f), p


def near(a, b, rel):
    return b and abs(a - b) <= rel * abs(b)


def part_peak(a, tb):
    logdir, prog, p = profile(a, tb, "mem_peak", ["peak"])
    if not prog:
        return
    s = summary(tb, logdir, "mem_peak")
    if not check(s is not None, "mem_peak: summary"):
        return
    ours = [st.get("peak_allocated_bytes") for st in s["steps"]]
    theirs = prog["step_peaks"]
    print("  per step (ours / torch's, MiB): " + ", ".join(
        "%s/%.1f" % ("-" if o is None else "%.1f" % (o / MIB), t / MIB) for o, t in zip(ours, theirs)))
    check(len(ours) == len(theirs), "mem_peak: %d steps, the program ran %d" % (len(ours), len(theirs)))
    bad = [i for i, (o, t) in enumerate(zip(ours, theirs)) if o is None or not near(o, t, 0.01)]
    check(not bad, "mem_peak: each step's peak allocated within 1%% of max_memory_allocated (off: %s)" % bad)
    peak = s["all"].get("peak_allocated_bytes")
    check(peak is not None and near(peak, prog["peak"], 0.01),
          "mem_peak: overall peak %s vs torch's %d" % (peak, prog["peak"]))
    mem = [e for d in chrome(logdir, "mem_peak") for e in d["traceEvents"]
           if e.get("name") == "[memory]" and e.get("args", {}).get("Device Id", -1) >= 0]
    mem.sort(key=lambda e: float(e["ts"]))
    last = mem[-1]["args"].get("Total Allocated") if mem else None
    check(last == prog["allocated_end"],
          "mem_peak: last Total Allocated %s = memory_allocated() at the end %d" % (last, prog["allocated_end"]))
    check("differs" not in p.stderr, "mem_peak: no warning that our peak differs from torch's")


def part_leak(a, tb):
    logdir, prog, p = profile(a, tb, "mem_leak", ["leak"])
    if not prog:
        return
    s = summary(tb, logdir, "mem_leak")
    if not check(s is not None, "mem_leak: summary"):
        return
    adv = [x for x in s.get("advice", []) if x.get("kind") == 14]
    for x in s.get("advice", []):
        print("  advice: " + x.get("text", ""))
    check(len(adv) == 1, "mem_leak: the advice names a leak")
    if adv:
        check(near(adv[0]["figure"], 64 * MIB, 0.01), "mem_leak: %.2f MiB per step" % (adv[0]["figure"] / MIB))
        check("64 MiB per step" in adv[0]["text"] and "20 steps" in adv[0]["text"], "mem_leak: the text says so")
    g = s["all"].get("memory_growth_bytes_per_step")
    check(g is not None and near(g, 64 * MIB, 0.01), "mem_leak: growth per step %s" % g)
    u = s["all"].get("unfreed_bytes")
    check(u is not None and u >= 20 * 64 * MIB, "mem_leak: never freed %s >= 20 x 64 MiB" % u)


def part_cuda(a, tb):
    exe = os.path.join(a.out, "mem_sizes")
    nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    p = run([nvcc, "-O2", "-o", exe, os.path.join(HERE, "mem_sizes.cu")])
    if not check(p.returncode == 0, "mem_sizes: built"):
        return
    logdir = os.path.join(a.out, "logdir")
    p = run([tb, "--logdir", logdir, "--run", "mem_sizes", "--", exe])
    if not check(p.returncode == 0, "mem_sizes: profiled"):
        return
    want = json.loads(p.stdout.strip().splitlines()[-1])["events"]
    ev = [e for d in chrome(logdir, "mem_sizes") for e in d["traceEvents"]
          if e.get("name") in ("[memory]", "[cuda memory]") and e.get("ph") in ("i", "I")]
    ev.sort(key=lambda e: float(e["ts"]))
    got = [(e["args"]["Bytes"], e["args"]["Device Id"]) for e in ev]
    exp = [(op * n, -1 if kind == "pinned" else 0) for op, n, kind in want]
    print("  ours:  %s\n  theirs: %s" % (got, exp))
    check(got == exp, "mem_sizes: every allocation and free, in order, bytes and device")
    run_sum, bad = 0, 0
    for e in ev:
        if e["args"]["Device Id"] != 0:
            continue
        run_sum += e["args"]["Bytes"]
        bad += e["args"].get("Total Allocated") != run_sum
    check(bad == 0, "mem_sizes: GPU 0's Total Allocated is the running sum (%d off)" % bad)


def part_jax(a, tb):
    logdir = os.path.join(a.out, "logdir")
    res = os.path.join(a.out, "mem_jax.json")
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    p = run([tb, "--logdir", logdir, "--run", "mem_jax", "--", sys.executable, LOOPS, "jax", res], env=env)
    if not check(p.returncode == 0 and os.path.exists(res), "mem_jax: profiled"):
        return
    prog = json.load(open(res))
    cs = [e for d in chrome(logdir, "mem_jax") for e in d["traceEvents"]
          if e.get("ph") == "C" and "jax" in e.get("name", "").lower() and "in use" in e.get("name", "").lower()
          and "peak" not in e.get("name", "").lower()]
    vals = [v for e in sorted(cs, key=lambda e: float(e["ts"])) for v in e.get("args", {}).values()
            if isinstance(v, (int, float))]
    print("  JAX in-use samples: %d, first %s, last %s, program's peak %s" % (
        len(vals), vals[:1], vals[-1:], prog["peak"]))
    if not check(len(vals) >= 5, "mem_jax: a device memory curve (%d samples)" % len(vals)):
        return
    check(max(vals) <= prog["peak"] and max(vals) >= 0.9 * prog["peak"],
          "mem_jax: its largest sample within 90-100% of peak_bytes_in_use")
    check(vals[-1] - vals[0] >= 10 * 64 * MIB, "mem_jax: it grows with the kept results (%.0f MiB)" %
          ((vals[-1] - vals[0]) / MIB))


def part_overhead(a, tb):
    modes = {"plain": [], "nomem": [tb, "--logdir", os.path.join(a.out, "ovh"), "--run", "nomem",
                                    "--trace", "cuda,nvtx", "--"],
             "mem": [tb, "--logdir", os.path.join(a.out, "ovh"), "--run", "mem", "--"]}
    times = {m: [] for m in modes}
    env = dict(os.environ, MEM_LOOPS_STEPS="200")
    for r in range(a.rounds):
        for m, pre in modes.items():
            res = os.path.join(a.out, "ovh_%s.json" % m)
            p = run(pre + [sys.executable, LOOPS, "peak", res], env=env, timeout=600)
            if p.returncode == 0:
                times[m].append(json.load(open(res))["loop_s"])
    for m, t in times.items():
        print("  %-6s %s" % (m, " ".join("%.3f" % x for x in t)))
    if not all(len(t) == a.rounds for t in times.values()):
        check(False, "overhead: every round ran")
        return
    med = {m: statistics.median(t) for m, t in times.items()}
    pairs = [x / y for x, y in zip(times["mem"], times["nomem"])]
    print("| mode | median loop s | / plain |\n|---|---|---|")
    for m in modes:
        print("| %s | %.3f | %.3fx |" % (m, med[m], med[m] / med["plain"]))
    print("memory on / off, paired median: %.3fx over %d rounds" % (statistics.median(pairs), len(pairs)))
    check(statistics.median(pairs) <= 1.02, "overhead: memory collection within 1.02x")


def part_collect(a, tb):
    logdir = os.path.join(a.out, "logdir")
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        for r in ("mem_peak", "mem_leak"):
            acc = EventAccumulator(os.path.join(logdir, r), size_guidance={"scalars": 0})
            acc.Reload()
            tags = acc.Tags().get("scalars", [])
            s = [t for t in tags if t.endswith("peak_allocated_bytes") and "step" in t]
            n = len(acc.Scalars(s[0])) if s else 0
            check(n == 20, "%s: EventAccumulator reads %s with %d points" % (r, s[:1], n))
    except ImportError as e:
        check(False, "EventAccumulator: %s" % e)
    out = os.path.join(a.out, "memory_fixtures.tgz")
    with tarfile.open(out, "w:gz") as t:
        for r in ("mem_peak", "mem_leak", "mem_sizes"):
            for sub in (r, os.path.join("plugins", "profile", r)):
                path = os.path.join(logdir, sub)
                if os.path.isdir(path):
                    t.add(path, arcname=os.path.join("memory", sub))
    print("  wrote %s (%d bytes)" % (out, os.path.getsize(out)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="peak,leak,cuda,jax,overhead,collect")
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    tb = os.path.join(a.bin, "tbexport")
    os.makedirs(a.out, exist_ok=True)
    parts = {"peak": part_peak, "leak": part_leak, "cuda": part_cuda, "jax": part_jax,
             "overhead": part_overhead, "collect": part_collect}
    for part in a.parts.split(","):
        print("==== memory: %s" % part, flush=True)
        parts[part](a, tb)
    print("memory check: %s" % ("passed" if not fails else "%d FAILED" % fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
