#!/usr/bin/env python3
"""check_hta.py: our Chrome traces read by Holistic Trace Analysis (HTA),
the client PyTorch points users to for multi-rank and per-iteration
analysis.

HTA is not packaged; point --hta at a checkout of
facebookresearch/HolisticTraceAnalysis (its own dependencies: Debian's
python3-pandas, -plotly, -networkx, -pydot, -psutil).  For each DIR (a
folder of *.trace.json[.gz], e.g. log_dir/plugins/profile/<run>) it loads
the traces with TraceAnalysis and prints the ranks, the iterations, the
temporal breakdown and the per-iteration kernel time, failing when HTA
logs "ProfilerStep not found" or finds no iteration while --steps says
there are steps.  With --same A B the temporal breakdowns of two folders
(e.g. PyTorch's original trace and our re-export of it) must be equal.

usage: check_hta.py --hta PATH [--steps N] [--ranks 0,1] DIR... [--same A B]

The operator level of a before/after pair (--logdir DIR --tbexport BIN
--pair BASE:NEW ...; runs whose Chrome JSON is DIR/plugins/profile/RUN/):

  kernels    HTA's TraceAnalysis keeps every GPU op of the iterations it
             analyses: its kernel breakdown (every name, memory kernels
             included) is, to the microsecond, what our Chrome JSON gives
             under HTA's own rules, worked out here from the file: the GPU
             ops whose correlation matches a CPU event (cuda_runtime,
             cuda_driver) that starts before the last ProfilerStep, each
             from its start rounded up to its end rounded down in whole
             microseconds; and its iterations are the summary's steps but
             the last;
  residual   its kernel time against `BIN summary`'s kernel time of the
             steps but the last: the difference is exactly HTA's rounding
             of each kernel plus the kernels launched outside those steps
             (both worked out from the file and printed);
  TraceDiff  for each pair, TraceDiff.compare_traces of the two first
             iterations pairs the GEMM operators (aten::mm, addmm, bmm,
             baddbmm, matmul, linear: the same name on both sides, their
             counts ours) and lists every GEMM kernel of the summary
             (class gemm) with our counts and rounded times, a kernel of
             one name on both sides paired in one row.
"""
import argparse
import glob
import gzip
import io
import json
import logging
import math
import os
import re
import subprocess
import sys

fails = 0


def check(cond, what):
    global fails
    print(("PASS: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        fails += 1


def load(d):
    from hta.trace_analysis import TraceAnalysis
    log = io.StringIO()
    h = logging.StreamHandler(log)
    logging.getLogger().addHandler(h)
    try:
        a = TraceAnalysis(trace_dir=d)
    finally:
        logging.getLogger().removeHandler(h)
    return a, log.getvalue()


# ---- the operator level of a pair ----

GEMM_OPS = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear)$")


def chrome_json(logdir, run):
    files = glob.glob(os.path.join(logdir, "plugins", "profile", run, "*.trace.json.gz"))
    if len(files) != 1:
        raise SystemExit("%s: want one Chrome JSON, found %s" % (run, files))
    with gzip.open(files[0], "rt") as f:
        return os.path.dirname(files[0]), json.load(f)


class HtaView:
    """What HTA's rules make of our Chrome JSON, worked out from the file:
    its duration events (ph X, with cat and dur; not cat Trace or
    python_function), each from ceil(ts) to floor(ts + dur) in float
    microseconds as pandas computes them; GPU ops are those with a stream
    >= 0 and a correlation >= 0, the rest CPU events; a GPU op is kept when
    a CPU event with its correlation starts before the last ProfilerStep;
    an event's iteration is the ProfilerStep whose [ts, ts + dur) holds its
    start (the last such), a GPU op's that of its CPU event."""

    def __init__(self, doc):
        rows = []
        for e in doc["traceEvents"]:
            if e.get("ph") != "X" or "dur" not in e or "cat" not in e or e["cat"] in ("Trace", "python_function"):
                continue
            a = e.get("args", {})
            ts, end = math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])
            rows.append({"name": e["name"], "cat": e["cat"], "ts": ts, "dur": end - ts,
                         "true_ns": round(e["dur"] * 1000), "start_ns": round(e["ts"] * 1000),
                         "stream": a.get("stream", -1), "corr": a.get("correlation", -1)})
        base = doc.get("baseTimeNanoseconds", 0)
        for r in rows:
            r["start_ns"] += base
        self.steps = sorted((r for r in rows if r["name"].startswith("ProfilerStep")), key=lambda r: r["ts"])
        for r in self.steps:
            r["iter"] = int(re.match(r"ProfilerStep\s*#\s*(\d+)", r["name"]).group(1))
        self.gpu_all = [r for r in rows if r["stream"] >= 0 and r["corr"] >= 0]
        self.cpu = [r for r in rows if not (r["stream"] >= 0 and r["corr"] >= 0)]
        last = max(r["ts"] for r in self.steps) if self.steps else None
        launch = {}
        for r in self.cpu:
            if r["corr"] >= 0 and (last is None or len(self.steps) < 2 or r["ts"] < last):
                launch.setdefault(r["corr"], []).append(r)
        self.dup = [c for c, v in launch.items() if len(v) > 1]
        self.kept = [g for g in self.gpu_all if g["corr"] in launch]
        for g in self.kept:
            g["launch"] = launch[g["corr"]][0]
        for r in self.cpu:
            r["iter"] = self.iteration(r["ts"])

    def iteration(self, ts):
        it = -1
        for s in self.steps:
            if s["ts"] <= ts < s["ts"] + s["dur"]:
                it = s["iter"]
        return it


def summary_of(tbexport, logdir, run):
    out = subprocess.run([tbexport, "summary", "--format", "json", "--top", "0", "--logdir", logdir, run],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("summary of %s failed: %s" % (run, out.stderr.strip()))
    return json.loads(out.stdout)


def ops_run(a, run):
    from hta.utils.utils import get_kernel_type
    d, doc = chrome_json(a.logdir, run)
    v = HtaView(doc)
    s = summary_of(a.tbexport, a.logdir, run)
    an, _ = load(d)
    steps = sorted(s["steps"], key=lambda x: x["start_ns"])
    want_its = sorted(st["step"] for st in steps[:-1])
    its = an.t.get_iterations()
    check(its == want_its, "%s: HTA's iterations are the summary's steps but the last %s (%s)" % (run, want_its, its))
    check(not v.dup, "%s: no correlation is shared by two launch calls (HTA would count a kernel twice) %s"
          % (run, v.dup[:3]))
    kt, kd = an.get_gpu_kernel_breakdown(visualize=False, num_kernels=10 ** 9, duration_ratio=1.0,
                                         include_memory_kernels=True)
    col = [c for c in kd.columns if str(c).startswith("sum")][0]  # "sum (us)"
    got = {}
    for _, r in kd.iterrows():
        got[r["name"]] = got.get(r["name"], 0) + int(r[col])
    want = {}
    for g in v.kept:
        if get_kernel_type(g["name"]) in ("COMPUTATION", "COMMUNICATION", "MEMORY"):
            want[g["name"]] = want.get(g["name"], 0) + g["dur"]
    diff = sorted((n, want.get(n), got.get(n)) for n in set(want) | set(got) if want.get(n) != got.get(n))
    check(bool(want) and not diff,
          "%s: HTA's kernel breakdown keeps every GPU op launched before the last step: %d names, %d ops, "
          "%d us (its rounding)" % (run, len(want), len(v.kept), sum(want.values())), )
    if diff:
        print("    differ (name, ours, HTA): %s" % diff[:4])
    df = an.t.get_trace(an.t.get_ranks()[0])
    n_gpu = int((df["stream"].ne(-1)).sum())
    check(n_gpu == len(v.kept), "%s: HTA keeps %d GPU ops, we count %d" % (run, n_gpu, len(v.kept)))
    # the residual against the summary: kernels only
    kept_k = [g for g in v.kept if g["cat"] == "kernel"]
    hta_us = sum(got.get(n, 0) for n in {g["name"] for g in kept_k})
    true_ns = sum(g["true_ns"] for g in kept_k)
    floored_ns = true_ns - 1000 * sum(g["dur"] for g in kept_k)
    spans = [(st["start_ns"], st["start_ns"] + st["dur_ns"]) for st in steps[:-1]]
    outside_ns = sum(g["true_ns"] for g in kept_k
                     if not any(lo <= g["launch"]["start_ns"] < hi for lo, hi in spans))
    summ_ns = sum(st["kernel_ns"] for st in steps[:-1])
    ok = hta_us * 1000 == summ_ns + outside_ns - floored_ns
    check(ok, "%s: HTA's kernel time %d us = the summary's %d ns (steps but the last) + %d ns launched "
          "outside them - %d ns of HTA's rounding to whole microseconds (%d kernels, %.2f us each)"
          % (run, hta_us, summ_ns, outside_ns, floored_ns, len(kept_k), floored_ns / 1e3 / max(1, len(kept_k))))
    return v, s, d


def first_iteration_counts(v, gpu):
    """{name: [count, rounded us]} of the first iteration, as TraceDiff
    extracts it (CPU events: stream -1; GPU ops: kept, by their launch)."""
    its = sorted({r["iter"] for r in v.cpu if r["iter"] >= 0})
    if not its:
        return {}
    first = its[0]
    rows = [g for g in v.kept if g["stream"] > 0 and g["launch"]["iter"] == first] if gpu else \
        [r for r in v.cpu if r["stream"] == -1 and r["iter"] == first]
    out = {}
    for r in rows:
        c = out.setdefault(r["name"], [0, 0])
        c[0] += 1
        c[1] += r["dur"]
    return out


def ops_pair(a, b, n, views):
    from hta.trace_diff import DeviceType, TraceDiff
    (vb, sb, db), (vn, sn, dn) = views[b], views[n]
    try:
        cpu = TraceDiff.compare_traces(db, dn, device_type=DeviceType.CPU)
        gpu = TraceDiff.compare_traces(db, dn, device_type=DeviceType.GPU)
    except Exception as e:  # noqa: BLE001 - HTA's own failure is the finding
        check(False, "TraceDiff %s -> %s: %s: %s" % (b, n, type(e).__name__, e))
        return
    cols = list(cpu.columns)
    cc = [c for c in cols if c.endswith("_counts") and not c.startswith("diff")]
    cd = [c for c in cols if c.endswith("_total_duration")]

    def rows_of(df):
        return {name: (int(r[cc[0]]), int(r[cc[1]]), int(r[cd[0]]), int(r[cd[1]])) for name, r in df.iterrows()}

    tc, tg = rows_of(cpu), rows_of(gpu)
    wb, wn = first_iteration_counts(vb, False), first_iteration_counts(vn, False)
    gemm_ops = sorted(x for x in set(wb) | set(wn) if GEMM_OPS.match(x))
    bad = []
    for name in gemm_ops:
        want = (wb.get(name, [0, 0])[0], wn.get(name, [0, 0])[0], wb.get(name, [0, 0])[1], wn.get(name, [0, 0])[1])
        if tc.get(name) != want:
            bad.append((name, want, tc.get(name)))
    both = [x for x in gemm_ops if x in wb and x in wn]
    check(bool(both) and not bad, "TraceDiff %s -> %s: the GEMM operators %s paired, with our counts and rounded "
          "times of the first iterations" % (b, n, both), )
    if bad:
        print("    differ (name, ours, TraceDiff): %s" % bad[:4])
    kb, kn = first_iteration_counts(vb, True), first_iteration_counts(vn, True)
    gemm_k = sorted({k["name"] for k in sb["kernels"] + sn["kernels"] if k.get("class") == "gemm"})
    bad = []
    for name in gemm_k:
        want = (kb.get(name, [0, 0])[0], kn.get(name, [0, 0])[0], kb.get(name, [0, 0])[1], kn.get(name, [0, 0])[1])
        if want == (0, 0, 0, 0):
            continue  # not in the first iterations
        if tg.get(name) != want:
            bad.append((name, want, tg.get(name)))
    paired = [x for x in gemm_k if kb.get(x) and kn.get(x)]
    check(bool(gemm_k) and not bad, "TraceDiff %s -> %s: the %d GEMM kernels with our counts and rounded times "
          "(%d of one name on both sides, each in one row)" % (b, n, len(gemm_k), len(paired)))
    if bad:
        print("    differ (name, ours, TraceDiff): %s" % bad[:4])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hta", default="", help="HTA's source folder (else it must be importable)")
    ap.add_argument("--steps", type=int, default=0, help="iterations each trace must show")
    ap.add_argument("--ranks", default="", help="ranks HTA must see, e.g. 0,1")
    ap.add_argument("--same", nargs=2, metavar=("A", "B"))
    ap.add_argument("--logdir", help="the operator level: the runs' log directory")
    ap.add_argument("--tbexport", help="the operator level: tbexport, for its summary")
    ap.add_argument("--pair", action="append", default=[], help="the operator level: BASE:NEW runs")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    if a.hta:
        sys.path.insert(0, a.hta)
    import pandas as pd
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    if a.pair:
        if not a.logdir or not a.tbexport:
            ap.error("--pair needs --logdir and --tbexport")
        views = {}
        for p in a.pair:
            b, n = p.split(":", 1)
            for r in (b, n):
                if r not in views:
                    views[r] = ops_run(a, r)
            ops_pair(a, b, n, views)
    breakdown = {}
    for d in a.dirs + (list(a.same) if a.same else []):
        if d in breakdown:
            continue
        an, log = load(d)
        ranks = sorted(an.t.get_ranks())
        its = an.t.get_iterations()
        print("== %s: ranks %s, iterations %s" % (d, ranks, its))
        try:
            tb = an.get_temporal_breakdown(visualize=False)
            print(tb.to_string())
            breakdown[d] = tb
        except AssertionError:
            # HTA rounds starts up and ends down to whole microseconds, so a
            # kernel under 1 us gets a negative duration and its breakdown
            # asserts; it does the same on PyTorch's own traces of such loops
            print("  note: HTA's temporal breakdown asserted (sub-microsecond kernels)")
            breakdown[d] = None
        check("ProfilerStep not found" not in log, "%s: HTA finds ProfilerStep markers" % d)
        if a.steps:
            check(len(its) >= a.steps - 2,
                  "%s: HTA sees the iterations (%d; it drops the first and last)" % (d, len(its)))
            try:
                k = an.get_gpu_kernel_breakdown(visualize=False)
                print(k[0].head(8).to_string())
                check(len(k[0]) > 0, "%s: HTA kernel breakdown" % d)
            except Exception as e:  # noqa: BLE001 - HTA's own failure is the finding
                check(False, "%s: HTA kernel breakdown: %s" % (d, e))
        if a.ranks:
            want = [int(x) for x in a.ranks.split(",")]
            check(ranks == want, "%s: HTA sees ranks %s (%s)" % (d, want, ranks))
    if a.same:
        bx, by = (breakdown[d] for d in a.same)
        check(bx is not None and by is not None, "HTA computes both temporal breakdowns")
        if bx is not None and by is not None:
            x, y = (b.drop(columns=["rank"]).round(2) for b in (bx, by))
            check(x.equals(y), "HTA's temporal breakdown of %s equals that of %s" % tuple(a.same))
    print("== check_hta: %d failure(s)" % fails)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
