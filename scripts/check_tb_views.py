#!/usr/bin/env python3
"""check_tb_views.py: what a real TensorBoard shows of a log dir tbexport
wrote, checked through its HTTP data API (never the files), against
`tbexport summary --format json`.

usage: check_tb_views.py --url URL --logdir DIR --tbexport BIN
                         [--pair BASE:NEW ...] [--warmup RUN ...]
                         [--want-multi N] [--want-nosteps-metrics N]

URL serves DIR (../shared/tools/tensorboard/serve).  Every run of DIR (a
folder with plugins/profile/RUN/) is checked:

  run list       /data/runs is exactly one entry per run (a run of one
                 host without a rank) or per run and host (a multi-host
                 run: RUN for the job and RUN/<folder> per host, the
                 folder rank<R>.<host> zero-padded to the world size so
                 that string order is rank order), no duplicates, no
                 hparams sub-runs;
  every rank     in a multi-host run the hosts are listed in rank order
                 (/data/runs: by the first record's wall time, then name;
                 ours are all at 0) and each host's steps/step_time_ms is its
                 own step times (the summary's, a warm-up first step left
                 out), the hosts' curves differ where their steps do, and
                 the job's steps/step_time_ms and job/step_time_{slowest,
                 median,fastest}_ms and job/slowest_rank are the hosts'
                 per step;
  descriptions   every scalar tag of every run has a description
                 (scalars/tags and Time Series' tagDescriptions);
  GPU metrics    a run with PM metrics and no steps: each metric's
                 gpu_metrics/<m> is a time series (more than one point, at
                 whole-millisecond buckets, wall times increasing) and
                 summary/gpu_metrics/<m> is the summary's window mean;
  HParams        the experiment lists the key metrics first, each with a
                 display name, the hyper-parameters run, host and labels;
                 each TensorBoard run is one session (no other), whose
                 median step time is its summary's;
  kernel metrics a run whose kernels have range-profiler figures holds
                 them as text (summary/kernel_metrics, with "bound by");
  custom scalars every chart of a tbexport category draws one tag;
  diff           for each --pair BASE:NEW, NEW holds diff/BASE/report and
                 BASE diff/NEW/report, the same text;
  warm-up        for each --warmup RUN (a run whose hosts' first step took
                 more than twice the median of the others) the per-step
                 series start at the second step and summary/warmup_step_ms
                 holds the first.
--want-multi N, --want-nosteps-metrics N and --want-kernel-metrics N fail
the check when the log
dir holds fewer such runs (so a check that found nothing to check fails).

Prints a PASS/FAIL line per check; exits 1 if any failed, 2 on bad usage.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request

RESULTS = []
WARMUP_FACTOR = 2.0
KEY_METRICS = ["summary/step_time_median_ms", "summary/step_time_p90_ms", "summary/gpu_busy_pct",
               "summary/kernel_time_ms"]


def report(name, ok, detail=""):
    RESULTS.append(bool(ok))
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail and not ok else ""),
          flush=True)


def get(url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=120) as r:
        raw = r.read()
        if r.headers.get("Content-Encoding") == "gzip":
            import gzip
            raw = gzip.decompress(raw)
        return json.loads(raw)


def q(**kw):
    return urllib.parse.urlencode(kw)


def close(a, b, rel=1e-5, absolute=1e-6):
    return abs(a - b) <= max(absolute, rel * max(abs(a), abs(b)))


def summary(args, run):
    out = subprocess.run([args.tbexport, "summary", "--format", "json", "--top", "0",
                          "--logdir", args.logdir, run], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("summary of %s failed: %s" % (run, out.stderr.strip()))
    return json.loads(out.stdout)


def hosts_of(s):
    """The host summaries of a run's JSON (one: the summary itself)."""
    return s["hosts"] if "hosts" in s else [s]


def first_steps(h):
    seen, steps = set(), []
    for st in sorted(h["steps"], key=lambda x: x["step"]):
        if st["step"] not in seen:
            seen.add(st["step"])
            steps.append(st)
    return steps


def lower_median(v):
    v = sorted(v)
    return v[(len(v) + 1) // 2 - 1]


def warmup(durs):
    """Whether the first of the step times (in number order) is warm-up."""
    if len(durs) < 3:
        return False
    med = lower_median(durs[1:])
    return med > 0 and durs[0] > WARMUP_FACTOR * med


def series_steps(h):
    steps = first_steps(h)
    if warmup([st["dur_ns"] for st in steps]):
        return steps[1:]
    return steps


def folder(host, rank, world):
    """The host's TensorBoard folder in a multi-host run (export_run.c, host_folder)."""
    if rank is None or rank < 0:
        return host + "_" if host == "hparams" else host
    width = len(str(max(world - 1, rank)))
    base, rest = host, ""
    for m in re.finditer(r"\.rank(\d{1,10})(?=$|_)", host):
        if int(m.group(1)) == rank:
            base, rest = host[:m.start()], host[m.end():]
    name = "rank%0*d%s%s" % (width, rank, "." + base if base else "", rest)
    return name if len(name.encode()) <= 200 else host


def is_multi(s):
    return "hosts" in s or s.get("rank", -1) >= 0


def runs_of(logdir):
    prof = os.path.join(logdir, "plugins", "profile")
    return sorted(r for r in os.listdir(prof) if not r.startswith(".")) if os.path.isdir(prof) else []


def scalars(args, run, tag):
    return get(args.url + "/data/plugin/scalars/scalars?" + q(run=run, tag=tag))


def check_runs(args, sums, served):
    want = set()
    for run, s in sums.items():
        if is_multi(s):
            want.add(run)
            for h in hosts_of(s):
                want.add(run + "/" + folder(h["label"], h.get("rank", -1), h.get("world_size", 0)))
        else:
            want.add(run)
    got = [r for r in served]
    report("run list: one entry per run and host, %d runs" % len(want),
           set(got) == want and len(got) == len(set(got)),
           "extra %s, missing %s, duplicates %d" % (sorted(set(got) - want), sorted(want - set(got)),
                                                   len(got) - len(set(got))))
    report("run list: no hparams sub-runs", not [r for r in got if "/hparams/" in r or r.endswith("/hparams")],
           str([r for r in got if "hparams" in r]))


def check_multi(args, run, s, tags, served):
    hosts = hosts_of(s)
    ranked = all(h.get("rank", -1) >= 0 for h in hosts)
    folders = {h["label"]: run + "/" + folder(h["label"], h.get("rank", -1), h.get("world_size", 0))
               for h in hosts}
    if ranked and len(hosts) > 1:
        by_rank = [folders[h["label"]] for h in sorted(hosts, key=lambda h: h["rank"])]
        report("%s: hosts sort in rank order in TensorBoard's string order" % run,
               sorted(by_rank) == by_rank, str(by_rank))
        listed = [r for r in served if r in set(by_rank)]
        report("%s: TensorBoard's run list has the ranks in rank order" % run, listed == by_rank,
               "listed %s" % listed)
    curves = {}
    for h in hosts:
        r = folders[h["label"]]
        want = [(st["step"], st["dur_ns"] / 1e6) for st in series_steps(h)]
        pts = scalars(args, r, "steps/step_time_ms") if "steps/step_time_ms" in tags.get(r, {}) else []
        got = [(p[1], p[2]) for p in pts]
        ok = len(got) == len(want) and all(g[0] == w[0] and close(g[1], w[1]) for g, w in zip(got, want))
        report("%s: steps/step_time_ms is %s's own %d step times" % (r, h["label"], len(want)),
               ok and len(want) > 0, "got %s, want %s" % (got[:4], want[:4]))
        curves[h["label"]] = tuple(v for _, v in want)
    if len(hosts) > 1:
        distinct = len(set(curves.values())) > 1
        report("%s: the hosts' curves are their own (not one host's shown for all)" % run, distinct,
               str({k: v[:3] for k, v in curves.items()}))
    # the job: per step number every host has
    per = {}
    for i, h in enumerate(hosts):
        for st in first_steps(h):
            per.setdefault(st["step"], []).append((st["dur_ns"], h.get("rank", -1) if ranked else h.get("index", i)))
    nums = sorted(n for n, v in per.items() if len(v) == len(hosts))
    slow = [max(per[n])[0] for n in nums]
    skip = 1 if warmup(slow) else 0
    nums = nums[skip:]
    for tag, f in (("steps/step_time_ms", lambda v: max(v)[0]),
                   ("job/step_time_slowest_ms", lambda v: max(v)[0]),
                   ("job/step_time_median_ms", lambda v: lower_median([d for d, _ in v])),
                   ("job/step_time_fastest_ms", lambda v: min(v)[0]),
                   ("job/slowest_rank", None)):
        pts = scalars(args, run, tag) if tag in tags.get(run, {}) else []
        if f is None:
            # the slowest host's rank, the lowest of those tied (DDP's
            # synchronized steps often end together)
            want = [(n, float(min(k for d, k in per[n] if d == max(per[n])[0]))) for n in nums]
        else:
            want = [(n, f(per[n]) / 1e6) for n in nums]
        got = [(p[1], p[2]) for p in pts]
        ok = len(got) == len(want) and all(g[0] == w[0] and close(g[1], w[1]) for g, w in zip(got, want))
        report("%s: the job's %s per step (%d steps)" % (run, tag, len(want)), ok and len(want) > 0,
               "got %s, want %s" % (got[:4], want[:4]))


def check_descriptions(args, tags):
    missing = [(r, t) for r, tt in tags.items() for t, info in tt.items() if not info.get("description")]
    n = sum(len(tt) for tt in tags.values())
    report("descriptions: every one of %d scalar tags has one" % n, n > 0 and not missing, str(missing[:5]))
    ts = get(args.url + "/data/plugin/timeseries/tags").get("scalars", {})
    alltags = {t for tt in ts.get("runTagInfo", {}).values() for t in tt}
    nodesc = sorted(t for t in alltags if not ts.get("tagDescriptions", {}).get(t))
    report("descriptions: Time Series describes every one of %d tags" % len(alltags),
           alltags and not nodesc, str(nodesc[:5]))
    conflicting = sorted(t for t, d in ts.get("tagDescriptions", {}).items() if "Multiple" in d)
    report("descriptions: each tag described alike in every run", not conflicting, str(conflicting[:5]))


def check_nosteps_metrics(args, run, s, tags):
    h = hosts_of(s)[0]
    means = h["all"].get("gpu_metrics", {})
    mine = tags.get(run, {})
    for m, v in sorted(means.items()):
        t = "gpu_metrics/" + m
        pts = scalars(args, run, t) if t in mine else []
        steps = [p[1] for p in pts]
        walls = [p[0] for p in pts]
        width = min((b - a for a, b in zip(steps, steps[1:])), default=0)
        ok = (len(pts) > 1 and width > 0 and all((x - steps[0]) % width == 0 for x in steps) and
              len(pts) <= 200 and all(b > a for a, b in zip(walls, walls[1:])))
        report("%s: %s is a time series without steps (%d buckets of %s ms)" % (run, t, len(pts), width),
               ok, "steps %s" % steps[:6])
        pts = scalars(args, run, "summary/" + t) if "summary/" + t in mine else []
        report("%s: summary/%s is the window's mean %.4f" % (run, t, v),
               len(pts) == 1 and close(pts[0][2], v, rel=1e-5, absolute=1e-4), str(pts))


def check_kernel_metrics(args, run, s):
    """A run whose kernels have range-profiler figures shows them as text."""
    h = hosts_of(s)[0]
    measured = [k for k in h.get("kernels", []) if k.get("metrics")]
    if not measured:
        return 0
    tags = get(args.url + "/data/plugin/text/tags").get(run, [])
    t = "summary/kernel_metrics/text_summary"
    pts = get(args.url + "/data/plugin/text/text?" + q(run=run, tag=t)) if t in tags else []
    text = pts[-1]["text"] if pts else ""
    ok = "bound by" in text
    report("%s: the range profiler's figures of %d kernels as text (%s)" % (run, len(measured), t),
           ok, str(tags))
    return 1


def check_hparams(args, sums, served):
    exp = get(args.url + "/data/plugin/hparams/experiment", {"experimentName": ""})
    metrics = [(m["name"]["tag"], m.get("displayName", "")) for m in exp.get("metricInfos", [])]
    tags = [t for t, _ in metrics]
    report("hparams: the key metrics first %s" % KEY_METRICS, tags[:len(KEY_METRICS)] == KEY_METRICS,
           str(tags[:6]))
    report("hparams: every metric has a display name (%d)" % len(metrics),
           metrics and all(d and d != t for t, d in metrics), str([m for m in metrics if not m[1]][:3]))
    report("hparams: at most 18 metric columns", 0 < len(metrics) <= 18, str(len(metrics)))
    mem = ["summary/peak_allocated_bytes", "summary/peak_reserved_bytes",
           "summary/memory_growth_bytes_per_step"]
    report("hparams: the run's memory peaks and growth are metrics", set(mem) <= set(tags),
           str([t for t in tags if "bytes" in t]))
    at = tags.index("summary/launch_latency_us") if "summary/launch_latency_us" in tags else -1
    report("hparams: launch latency, then its parts launch overhead and queue delay",
           at >= 0 and tags[at + 1:at + 3] == ["summary/launch_overhead_us", "summary/queue_delay_us"],
           str(tags[at:at + 3]))
    names = {h["name"] for h in exp.get("hparamInfos", [])}
    report("hparams: hyper-parameters run, host, labels", {"run", "host", "labels"} <= names, str(sorted(names)))
    groups = get(args.url + "/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS",
                                                  "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": [], "startIndex": 0, "sliceSize": 100000})
    sessions = {}
    for g in groups.get("sessionGroups", []):
        for ses in g.get("sessions", []):
            sessions[ses["name"]] = {m["name"]["tag"]: m["value"] for m in ses.get("metricValues", [])}
    report("hparams: one session per TensorBoard run (%d)" % len(served),
           set(sessions) == set(served), "sessions %s, runs %s" % (sorted(sessions)[:6], sorted(served)[:6]))
    bad, launch = [], 0
    for run, s in sums.items():
        for h in hosts_of(s):
            name = run + "/" + folder(h["label"], h.get("rank", -1), h.get("world_size", 0)) if is_multi(s) else run
            if name in sessions:
                for key, tag in (("launch_overhead_median_ns", "summary/launch_overhead_us"),
                                 ("queue_delay_median_ns", "summary/queue_delay_us")):
                    want = h["all"].get(key)
                    got = sessions[name].get(tag)
                    if want is not None:
                        launch += 1
                    if (want is None) != (got is None) or (want is not None and not close(got, want / 1e3)):
                        bad.append((name, tag, got, want))
            durs = [st["dur_ns"] for st in h["steps"]]
            if not durs or name not in sessions:
                continue
            med = sorted(durs)[(len(durs) + 1) // 2 - 1] / 1e6
            if not close(sessions[name].get("summary/step_time_median_ms", -1), med, rel=1e-4):
                bad.append((name, sessions[name].get("summary/step_time_median_ms"), med))
    report("hparams: each session's median step time, launch overhead and queue delay are its "
           "summary's (%d launch figures)" % launch, not bad and launch > 0, str(bad[:3]))


def check_memory(args, run, s):
    """A run with a memory curve: TensorBoard serves its peaks (summary/) and its per-step peaks
    (steps/, one point a step of the series, the warm-up left out) as the summary has them."""
    bad, n = [], 0
    for key in ("peak_allocated_bytes", "peak_reserved_bytes"):
        got = scalars(args, run, "summary/" + key)
        want = s["all"][key]
        if not got or not close(got[-1][2], want, rel=1e-6):
            bad.append(("summary/" + key, got[-1][2] if got else None, want))
        pts = {int(p[1]): p[2] for p in scalars(args, run, "steps/" + key)}
        for st in series_steps(s):
            n += 1
            if st[key] is None or not close(pts.get(st["step"], -1), st[key], rel=1e-6):
                bad.append(("steps/" + key, st["step"], pts.get(st["step"]), st[key]))
    report("%s: the memory peaks and the per-step peaks as its summary has them (%d points)" %
           (run, n), not bad and n > 0, str(bad[:3]))
    return 1


def check_layout(args):
    lay = get(args.url + "/data/plugin/custom_scalars/layout")
    bad, n = [], 0
    for c in lay.get("category", []):
        if not c.get("title", "").startswith("tbexport:"):
            continue
        for ch in c.get("chart", []):
            n += 1
            tags = ch.get("multiline", {}).get("tag", [])
            if len(tags) != 1 or not tags[0].startswith("^") or not tags[0].endswith("$"):
                bad.append((c["title"], ch.get("title"), tags))
    report("custom scalars: every one of %d charts draws one tag" % n, n > 0 and not bad, str(bad[:3]))


def check_diff(args, base, new):
    tags = get(args.url + "/data/plugin/text/tags")
    texts = []
    for run, other in ((new, base), (base, new)):
        t = "diff/%s/report/text_summary" % other
        ok = t in tags.get(run, [])
        pts = get(args.url + "/data/plugin/text/text?" + q(run=run, tag=t)) if ok else []
        texts.append(pts[-1]["text"] if pts else None)
        report("diff: %s holds the comparison with %s (%s)" % (run, other, t), ok and pts,
               str(tags.get(run, [])))
    report("diff: the same report in %s and %s" % (base, new), texts[0] and texts[0] == texts[1])


def check_warmup(args, run, s, tags):
    for h in hosts_of(s):
        r = run + "/" + folder(h["label"], h.get("rank", -1), h.get("world_size", 0)) if is_multi(s) else run
        steps = first_steps(h)
        durs = [st["dur_ns"] for st in steps]
        ok = warmup(durs)
        pts = scalars(args, r, "steps/step_time_ms") if "steps/step_time_ms" in tags.get(r, {}) else []
        w = scalars(args, r, "summary/warmup_step_ms") if "summary/warmup_step_ms" in tags.get(r, {}) else []
        ok = ok and pts and pts[0][1] == steps[1]["step"] and len(w) == 1 and close(w[0][2], durs[0] / 1e6)
        report("%s: a warm-up first step (%.1f ms) is left out of the series, in summary/warmup_step_ms" %
               (r, durs[0] / 1e6 if durs else 0), ok, "first point %s, warmup %s" % (pts[:1], w))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--tbexport", required=True)
    ap.add_argument("--pair", action="append", default=[])
    ap.add_argument("--warmup", action="append", default=[])
    ap.add_argument("--want-multi", type=int, default=0)
    ap.add_argument("--want-nosteps-metrics", type=int, default=0)
    ap.add_argument("--want-kernel-metrics", type=int, default=0)
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    runs = runs_of(args.logdir)
    sums = {r: summary(args, r) for r in runs}
    served = get(args.url + "/data/runs")
    tags = get(args.url + "/data/plugin/scalars/tags")
    check_runs(args, sums, served)
    multi = [r for r in runs if is_multi(sums[r])]
    for r in multi:
        check_multi(args, r, sums[r], tags, served)
    report("multi-host runs checked: %d (want at least %d)" % (len(multi), args.want_multi),
           len(multi) >= args.want_multi)
    check_descriptions(args, tags)
    nosteps = [r for r in runs if not is_multi(sums[r]) and sums[r]["all"].get("gpu_metrics")
               and not sums[r]["steps"]]
    for r in nosteps:
        check_nosteps_metrics(args, r, sums[r], tags)
    report("runs with GPU metrics and no steps checked: %d (want at least %d)" %
           (len(nosteps), args.want_nosteps_metrics), len(nosteps) >= args.want_nosteps_metrics)
    km = sum(check_kernel_metrics(args, r, sums[r]) for r in runs if not is_multi(sums[r]))
    report("runs with kernel metrics checked: %d (want at least %d)" % (km, args.want_kernel_metrics),
           km >= args.want_kernel_metrics)
    mem = sum(check_memory(args, r, sums[r]) for r in runs
              if not is_multi(sums[r]) and sums[r]["all"].get("peak_allocated_bytes") is not None
              and sums[r]["steps"])
    report("runs with a memory curve checked: %d (want at least 1)" % mem, mem >= 1)
    check_hparams(args, sums, served)
    check_layout(args)
    for p in args.pair:
        b, n = p.split(":", 1)
        check_diff(args, b, n)
    for r in args.warmup:
        check_warmup(args, r, sums[r], tags)
    failed = RESULTS.count(False)
    print("%d checks, %d failed" % (len(RESULTS), failed))
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
