#!/usr/bin/env python3
"""check_ranks.py: a profiled distributed job's log dir, as its users and
their clients read it (scripts/gpu_verify part "ranks").

The job ran one rank per process under a launcher (`torchrun ... tbexport
-- python3 prog.py`, or `tbexport -- torchrun ... prog.py`).  Checks, each
printed PASS or FAIL, exit status 1 on any failure:
  - the log dir holds one run (the ranks did not split);
  - that run holds, for every rank N of --ranks, one host entry
    <host>.rank<N> (.xplane.pb, .trace.json.gz, the <run>/<entry>.pt link),
    and no rank twice;
  - each Chrome JSON's distributedInfo gives its rank and the world size;
  - `tbexport summary --format json RUN` has one host per rank, ordered by
    rank, each with at least --steps steps; the table has a row per rank, in rank order;
  - with --hta, Holistic Trace Analysis (scripts/check_hta.py) sees exactly
    those ranks and the iterations;
  - with --tensorboard, TensorBoard's own reader (EventMultiplexer over the
    log dir) lists the run and a run per rank, RUN/rank<N>.<host>, in rank
    order; each rank's steps/step_time_ms is that rank's own step times from
    the summary (the warm-up step left out as the events do); the job's
    job/step_time_slowest_ms and steps/step_time_ms are the slowest rank's
    per step, job/step_time_fastest_ms the fastest's; every scalar tag
    carries a description.

usage: check_ranks.py --tbexport T --ranks 0,1 [--steps N] [--hta PATH [--hta-python PY]]
                      [--tensorboard] LOGDIR
"""
import argparse
import glob
import gzip
import json
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
    return cond


def warmup(durs):
    """The events' rule: with 3 steps or more, a first step over twice the
    median (nearest rank, the lower of two) of the others is left out."""
    if len(durs) < 3:
        return False
    rest = sorted(durs[1:])
    return durs[0] > 2 * rest[(len(rest) + 1) // 2 - 1]


def check_tensorboard(logdir, run, hosts):
    try:
        from tensorboard.backend.event_processing import plugin_event_multiplexer as pem
    except ImportError as e:
        check(False, "TensorBoard's reader: %s" % e)
        return
    m = pem.EventMultiplexer().AddRunsFromDirectory(logdir)
    m.Reload()
    runs = sorted(m.Runs())
    width = len(str(max(max(h.get("world_size", 0) for h in hosts) - 1, 0)))
    folders = ["%s/rank%0*d.%s" % (run, width, h["rank"], re.sub(r"\.rank\d+$", "", h["label"]))
               for h in hosts]
    check(runs == sorted([run] + folders) and sorted(folders) == folders,
          "TensorBoard: runs %s (want the job %s and a run per rank in rank order %s)"
          % (runs, run, folders))

    from tensorboard.util import tensor_util

    def series(r, tag):  # the plugin multiplexer holds scalars as tensors
        try:
            return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto).item()))
                    for e in m.Tensors(r, tag)]
        except KeyError:
            return []

    per = {}
    for h, f in zip(hosts, folders):
        durs = [st["dur_ns"] for st in h.get("steps", [])]
        nums = [st["step"] for st in h.get("steps", [])]
        skip = 1 if warmup(durs) else 0
        want = list(zip(nums[skip:], [d / 1e6 for d in durs[skip:]]))
        got = series(f, "steps/step_time_ms")
        check(len(want) > 0 and len(got) == len(want)
              and all(g[0] == w[0] and abs(g[1] - w[1]) <= 1e-4 * max(1, w[1]) for g, w in zip(got, want)),
              "TensorBoard: %s steps/step_time_ms is rank %d's own %d step times (got %s, want %s)"
              % (f, h["rank"], len(want), got[:3], want[:3]))
        for n, d in zip(nums, durs):
            per.setdefault(n, []).append(d / 1e6)
    common = sorted(n for n, v in per.items() if len(v) == len(hosts))
    slow = [max(per[n]) for n in common]
    common = common[1:] if warmup([int(x * 1e6) for x in slow]) else common
    for tag, f in (("steps/step_time_ms", max), ("job/step_time_slowest_ms", max),
                   ("job/step_time_fastest_ms", min)):
        got = series(run, tag)
        want = [(n, f(per[n])) for n in common]
        check(len(want) > 0 and len(got) == len(want)
              and all(g[0] == w[0] and abs(g[1] - w[1]) <= 1e-4 * max(1, w[1]) for g, w in zip(got, want)),
              "TensorBoard: the job's %s per step (got %s, want %s)" % (tag, got[:3], want[:3]))
    bare, seen = [], 0
    for r in runs:
        acc = m.GetAccumulator(r)
        for tag in m.Runs()[r].get("tensors", []):
            md = acc.SummaryMetadata(tag)
            if md.plugin_data.plugin_name == "scalars":
                seen += 1
                if not md.summary_description:
                    bare.append((r, tag))
    check(seen > 0 and not bare,
          "TensorBoard: every scalar tag has a description (%d tags; without: %s)" % (seen, bare[:3]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tbexport", required=True)
    ap.add_argument("--ranks", required=True, help="e.g. 0,1")
    ap.add_argument("--steps", type=int, default=0, help="steps each rank must have")
    ap.add_argument("--hta", help="a HolisticTraceAnalysis checkout")
    ap.add_argument("--hta-python", default=sys.executable,
                    help="the python3 with HTA's dependencies (pandas, plotly, ...)")
    ap.add_argument("--tensorboard", action="store_true",
                    help="check the runs through TensorBoard's own reader")
    ap.add_argument("logdir")
    a = ap.parse_args()
    want = [int(x) for x in a.ranks.split(",")]
    prof = os.path.join(a.logdir, "plugins", "profile")
    runs = sorted(os.listdir(prof)) if os.path.isdir(prof) else []
    if not check(len(runs) == 1, "%s: one run (%s)" % (a.logdir, runs)):
        print("== check_ranks: %d failure(s)" % fails)
        sys.exit(1)
    run = runs[0]
    rdir = os.path.join(prof, run)
    print("== run %s: %s" % (run, sorted(os.listdir(rdir))))
    entries = {}
    for f in sorted(os.listdir(rdir)):
        m = re.fullmatch(r"(.+)\.rank(\d+)\.trace\.json\.gz", f)
        if m:
            entries.setdefault(int(m.group(2)), []).append(m.group(1))
    check(sorted(entries) == want, "ranked entries %s (want %s)" % (sorted(entries), want))
    check(all(len(v) == 1 for v in entries.values()), "no rank twice: %s" % entries)
    for r in want:
        host = (entries.get(r) or ["?"])[0]
        stem = "%s.rank%d" % (host, r)
        for path in (os.path.join(rdir, stem + ".xplane.pb"), os.path.join(rdir, stem + ".trace.json.gz"),
                     os.path.join(a.logdir, run, stem + ".pt.trace.json.gz")):
            check(os.path.isfile(path), "rank %d: %s" % (r, path))
        try:
            with gzip.open(os.path.join(rdir, stem + ".trace.json.gz"), "rt") as f:
                di = json.load(f).get("distributedInfo", {})
        except (OSError, ValueError) as e:
            di = {"error": str(e)}
        check(di.get("rank") == r and di.get("world_size") == len(want),
              "rank %d: distributedInfo %s" % (r, di))

    p = subprocess.run([a.tbexport, "summary", "--logdir", a.logdir, "--format", "json", run],
                       capture_output=True, text=True)
    if check(p.returncode == 0, "tbexport summary --format json %s (%s)" % (run, p.stderr.strip()[:300])):
        d = json.loads(p.stdout)
        hosts = d.get("hosts", [])
        check([h.get("rank") for h in hosts] == want,
              "summary: hosts by rank %s" % [(h.get("label"), h.get("rank")) for h in hosts])
        check(d.get("by_rank") is True, "summary: run ordered by rank")
        if a.steps:
            n = [len(h.get("steps", [])) for h in hosts]
            check(all(k >= a.steps for k in n), "summary: steps per rank %s (at least %d)" % (n, a.steps))
        if a.tensorboard:
            check_tensorboard(a.logdir, run, hosts)
    p = subprocess.run([a.tbexport, "summary", "--logdir", a.logdir, run], capture_output=True, text=True)
    print(p.stdout)
    # The per-rank table (report_run.c): "Ranks (N; ...)", then a row per
    # rank, in rank order, each naming its rank's host entry.
    rows = re.findall(r"^ +(\d+) (\S+\.rank(\d+)) ", p.stdout, re.M)
    check(p.returncode == 0 and re.search(r"^Ranks \(%d;" % len(want), p.stdout, re.M) is not None
          and [int(r[0]) for r in rows] == want and all(r[0] == r[2] for r in rows),
          "summary table: a row per rank, in rank order %s" % [r[:2] for r in rows])

    if a.hta:
        cmd = [a.hta_python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_hta.py"),
               "--hta", a.hta, "--ranks", a.ranks]
        if a.steps:
            cmd += ["--steps", str(a.steps)]
        p = subprocess.run(cmd + [rdir], text=True)
        check(p.returncode == 0, "HTA reads the ranks (check_hta.py exit %d)" % p.returncode)
    print("== check_ranks: %d failure(s)" % fails)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
