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
"""
import argparse
import io
import logging
import os
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hta", required=True)
    ap.add_argument("--steps", type=int, default=0, help="iterations each trace must show")
    ap.add_argument("--ranks", default="", help="ranks HTA must see, e.g. 0,1")
    ap.add_argument("--same", nargs=2, metavar=("A", "B"))
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    sys.path.insert(0, a.hta)
    import pandas as pd
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
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
