#!/usr/bin/env python3
"""check_tb_compare.py: what a real TensorBoard shows of runs tbexport wrote,
checked through its HTTP data API against tbexport's own summary.

usage: check_tb_compare.py --url URL --logdir DIR --tbexport BIN
                           --pair BASE:NEW [--pair BASE:NEW ...]
                           [--label RUN:KEY=VALUE ...] [--metrics RUN ...]
                           [--no-profiler-plugin]

URL serves DIR (../shared/tools/tensorboard/serve).  For every run of every
pair, `BIN summary --format json --top 0 --logdir DIR RUN` is the reference:

  scalars         steps/step_time_ms has one point per step, equal to the
                  summary's step times (a warm-up first step, more than
                  twice the median of the others, left out); every kernel class of the run has
                  its steps/class/<class>_ms curve and summary/class/<class>_ms
                  equal to the summary's class time;
  custom scalars  the layout has the "tbexport: compare steps" category
                  with its step-time chart;
  text            NEW holds the diff report against BASE (diff/BASE/...);
  hparams         both runs are sessions of one experiment (the run
                  itself), with the host, GPU and step definition as
                  hyper-parameters, the given labels, and the median step
                  time, GPU busy % and kernel time as metrics equal to the
                  summary's, each with a display name;
  GPU metrics     for each --metrics RUN (a trace with PM metrics): every
                  metric of the summary's all.gpu_metrics is a scalar tag
                  gpu_metrics/<metric> with one point per step that has the
                  metric, equal to the step's mean (no steps: one point,
                  the run's mean); the layout has the "tbexport: GPU
                  metrics" category with a chart per metric;
                  summary/gpu_metrics/<metric> is the run's mean, and the
                  HParams experiment's SM-active and tensor-active columns
                  hold it for the run's session;
  operators       a run whose summary says which operator launched its GPU
                  work (op_gpu_count > 0): each of the top 10 operators by
                  CUDA total whose name is a tag as it is has ops/<name>/cuda_ms
                  with one point per step equal to the summary's cuda_step_ns;
                  the text summary/top_operators is there, and the layout has
                  a "tbexport: operators…" category; a run without: no ops/
                  tag;
  pytorch_profiler  (the frozen torch-tb-profiler plugin) finds each run,
                  its overview has one row per step, its kernel table the
                  summary's kernels with their call counts, its trace
                  answers, and the diff of the pair answers.

Prints a PASS/FAIL line per check; exits 1 if any failed, 2 on bad usage.
"""
import argparse
import json
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

RESULTS = []


def report(name, ok, detail=""):
    RESULTS.append(bool(ok))
    line = "%s %s" % ("PASS" if ok else "FAIL", name)
    if detail:
        line += ": " + detail
    print(line, flush=True)


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


def first_steps(s):
    """The summary's steps, one per step number (the first), by number."""
    seen, steps = set(), []
    for st in sorted(s["steps"], key=lambda x: x["step"]):
        if st["step"] not in seen:
            seen.add(st["step"])
            steps.append(st)
    return steps


def series_steps(s):
    """first_steps without a warm-up first step (export_events.c, warmup():
    more than twice the median, nearest rank, of the others; 3 steps or
    more): the points of the per-step series."""
    steps = first_steps(s)
    if len(steps) >= 3:
        rest = sorted(st["dur_ns"] for st in steps[1:])
        med = rest[(len(rest) + 1) // 2 - 1]
        if med > 0 and steps[0]["dur_ns"] > 2.0 * med:
            return steps[1:]
    return steps


def check_scalars(args, run, s, tags):
    base = args.url + "/data/plugin/scalars/scalars?"
    mine = tags.get(run, {})
    steps = series_steps(s)
    if steps:
        pts = get(base + q(run=run, tag="steps/step_time_ms")) if "steps/step_time_ms" in mine else []
        want = [(st["step"], st["dur_ns"] / 1e6) for st in steps]
        got = [(p[1], p[2]) for p in pts]
        ok = len(got) == len(want) and all(g[0] == w[0] and close(g[1], w[1]) for g, w in zip(got, want))
        report("%s: steps/step_time_ms is the summary's %d step times" % (run, len(want)), ok,
               "" if ok else "got %s, want %s" % (got[:4], want[:4]))
    classes = s["all"].get("classes", {})
    for c, v in sorted(classes.items()):
        t = "summary/class/%s_ms" % c
        pts = get(base + q(run=run, tag=t)) if t in mine else []
        ok = len(pts) == 1 and close(pts[0][2], v["ns"] / 1e6)
        report("%s: %s = %.3f ms" % (run, t, v["ns"] / 1e6), ok, "" if ok else "got %s" % pts)
        if steps:
            t = "steps/class/%s_ms" % c
            pts = get(base + q(run=run, tag=t)) if t in mine else []
            want = [st["classes"][c] / 1e6 for st in steps]
            ok = len(pts) == len(want) and all(close(p[2], w) for p, w in zip(pts, want))
            report("%s: %s has one point per step" % (run, t), ok,
                   "" if ok else "got %d points" % len(pts))
    report("%s: classes in the summary" % run, len(classes) > 0, "none" if not classes else "")


def check_layout(args):
    lay = get(args.url + "/data/plugin/custom_scalars/layout")
    cats = {c.get("title"): c for c in lay.get("category", [])}
    c = cats.get("tbexport: compare steps")
    charts = [ch.get("title") for ch in (c or {}).get("chart", [])]
    report("custom scalars: 'tbexport: compare steps' with 'step time (ms)'",
           c is not None and "step time (ms)" in charts, "categories %s" % list(cats))


def check_ops(args, run, s, tags):
    mine = tags.get(run, {})
    ops_tags = [t for t in mine if t.startswith("ops/")]
    if not s.get("op_gpu_count"):
        report("%s: no operator series without operators' GPU work" % run, not ops_tags, str(ops_tags[:3]))
        return
    base = args.url + "/data/plugin/scalars/scalars?"
    top = sorted((r for r in s["cpu_ops"] if r["cuda_total_ns"] > 0),
                 key=lambda r: (-r["cuda_total_ns"], -r["total_ns"], r["name"]))[:10]
    steps = series_steps(s)
    checked = 0
    for r in top:
        if not all(c.isalnum() or c in "_.:-" for c in r["name"]):
            continue  # short name + hash: the exporter's scheme, checked in test_op_table
        t = "ops/%s/cuda_ms" % r["name"]
        pts = get(base + q(run=run, tag=t)) if t in mine else []
        if steps:
            want = [(st["step"], r["cuda_step_ns"][s["steps"].index(st)] / 1e6) for st in steps]
        else:
            want = [(0, r["cuda_total_ns"] / 1e6)]
        got = [(p[1], p[2]) for p in pts]
        ok = len(got) == len(want) and all(g[0] == w[0] and close(g[1], w[1]) for g, w in zip(got, want))
        report("%s: %s is the summary's CUDA total per step" % (run, t), ok,
               "" if ok else "got %s, want %s" % (got[:4], want[:4]))
        checked += 1
    report("%s: operator series checked" % run, checked > 0, "%d of %d" % (checked, len(top)))
    texts = get(args.url + "/data/plugin/text/tags").get(run, [])
    tag = "summary/top_operators/text_summary"
    ok = tag in texts
    if ok:
        pts = get(args.url + "/data/plugin/text/text?" + q(run=run, tag=tag))
        names = [r["name"] for r in top if r["name"].startswith("aten::")]
        ok = bool(pts) and "CUDA total" in pts[-1]["text"] and names and names[0] in pts[-1]["text"]
    report("%s: text summary/top_operators names the top operator" % run, ok, str(texts))
    lay = get(args.url + "/data/plugin/custom_scalars/layout")
    cats = [c.get("title") for c in lay.get("category", [])]
    report("custom scalars: 'tbexport: operators…'",
           any(c.startswith("tbexport: operators") for c in cats), str(cats))


def check_text(args, base, new):
    tags = get(args.url + "/data/plugin/text/tags")
    mine = [t for t in tags.get(new, []) if t.startswith("diff/%s/" % base)]
    ok = bool(mine)
    if ok:
        t = [x for x in mine if x.endswith("report")] or mine
        pts = get(args.url + "/data/plugin/text/text?" + q(run=new, tag=t[0]))
        ok = bool(pts) and "class" in pts[-1]["text"]
    report("text: %s holds the diff against %s with the kernel classes" % (new, base), ok,
           "tags %s" % tags.get(new, []))


def check_hparams(args, runs, sums, labels):
    exp = get(args.url + "/data/plugin/hparams/experiment", {"experimentName": ""})
    names = {h["name"] for h in exp.get("hparamInfos", [])}
    metrics = {m["name"]["tag"] for m in exp.get("metricInfos", [])}
    # Each label is a hyper-parameter of its session and part of the
    # "labels" column; a column of its own only when the experiment
    # TensorBoard read (one session's, at random) has the key.
    need = {"host", "gpu", "steps", "source", "labels"}
    report("hparams: hyper-parameters %s" % sorted(need), need <= names, "got %s" % sorted(names))
    need_m = {"summary/step_time_median_ms", "summary/step_time_p90_ms", "summary/gpu_busy_pct",
              "summary/kernel_time_ms"}
    report("hparams: metrics %s" % sorted(need_m), need_m <= metrics, "got %s" % sorted(metrics))
    shown = {m["name"]["tag"]: m.get("displayName", "") for m in exp.get("metricInfos", [])}
    report("hparams: metrics with display names", all(shown.get(t) for t in need_m),
           str({t: shown.get(t) for t in need_m}))
    groups = get(args.url + "/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS",
                                                  "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": [], "startIndex": 0, "sliceSize": 1000})
    sessions = {}
    for g in groups.get("sessionGroups", []):
        for ses in g.get("sessions", []):
            sessions[ses["name"]] = (g.get("hparams", {}), ses.get("metricValues", []))
    for run in runs:
        key = run
        ok = key in sessions
        detail = "sessions %s" % sorted(sessions)
        if ok:
            hp, mv = sessions[key]
            vals = {m["name"]["tag"]: m["value"] for m in mv}
            s = sums[run]
            steps = sorted(st["dur_ns"] for st in first_steps(s))
            if steps:
                med = steps[(len(steps) + 1) // 2 - 1] / 1e6
                ok = close(vals.get("summary/step_time_median_ms", -1), med, rel=1e-4)
                detail = "median %s, want %.4f" % (vals.get("summary/step_time_median_ms"), med)
            busy = s["all"]["busy_pct"]
            ok = ok and close(vals.get("summary/gpu_busy_pct", -1), busy, rel=1e-4, absolute=1e-3)
            kern = s["all"]["kernel_ns"] / 1e6
            ok = ok and close(vals.get("summary/kernel_time_ms", -1), kern, rel=1e-4)
            for (r, k, v) in labels:
                if r == run:
                    ok = ok and hp.get(k) == v and ("%s=%s" % (k, v)) in hp.get("labels", "")
        report("hparams: session %s with the summary's figures" % key, ok, detail)


def check_metrics(args, run, s, tags):
    base = args.url + "/data/plugin/scalars/scalars?"
    mine = tags.get(run, {})
    means = s["all"].get("gpu_metrics", {})
    report("%s: the summary has GPU metrics" % run, bool(means), "all: %s" % sorted(s["all"]))
    steps = series_steps(s)
    for m, v in sorted(means.items()):
        t = "gpu_metrics/" + m
        pts = get(base + q(run=run, tag=t)) if t in mine else []
        if steps:
            want = [(st["step"], st["gpu_metrics"][m]) for st in steps
                    if m in st.get("gpu_metrics", {})]
        else:
            want = [(0, v)]
        got = [(p[1], p[2]) for p in pts]
        ok = bool(want) and len(got) == len(want) and all(
            g[0] == w[0] and close(g[1], w[1], rel=1e-5, absolute=1e-4) for g, w in zip(got, want))
        report("%s: %s has the summary's %d step means" % (run, t, len(want)), ok,
               "got %s, want %s" % (got[:4], want[:4]))
    lay = get(args.url + "/data/plugin/custom_scalars/layout")
    cats = {c.get("title"): c for c in lay.get("category", [])}
    charts = {ch.get("title") for ch in cats.get("tbexport: GPU metrics", {}).get("chart", [])}
    report("custom scalars: 'tbexport: GPU metrics' with a chart per metric of %s" % run,
           set(means) <= charts and bool(means), "charts %s" % sorted(charts))
    for m, v in sorted(means.items()):
        t = "summary/gpu_metrics/" + m
        pts = get(base + q(run=run, tag=t)) if t in mine else []
        report("%s: %s is the run's mean %.4f" % (run, t, v),
               len(pts) == 1 and close(pts[0][2], v, rel=1e-5, absolute=1e-4), str(pts))
    exp = get(args.url + "/data/plugin/hparams/experiment", {"experimentName": ""})
    metrics = {mi["name"]["tag"] for mi in exp.get("metricInfos", [])}
    key = {"summary/gpu_metrics/sm_active_pct", "summary/gpu_metrics/tensor_active_pct"}
    need = {"summary/gpu_metrics/" + m for m in means} & key
    report("hparams: metrics %s" % sorted(need), bool(need) and need <= metrics,
           "got %s" % sorted(x for x in metrics if "gpu_metrics" in x))
    groups = get(args.url + "/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS",
                                                  "STATUS_FAILURE", "STATUS_RUNNING"],
        "colParams": [], "startIndex": 0, "sliceSize": 1000})
    vals = None
    for g in groups.get("sessionGroups", []):
        for ses in g.get("sessions", []):
            if ses["name"] == run:
                vals = {mv["name"]["tag"]: mv["value"] for mv in ses.get("metricValues", [])}
    ok = vals is not None and all(
        close(vals.get("summary/gpu_metrics/" + m, float("nan")), v, rel=1e-5, absolute=1e-4)
        for m, v in means.items() if "summary/gpu_metrics/" + m in key)
    report("hparams: session %s holds the run's GPU metric means" % run, ok,
           "got %s" % ({k: v for k, v in (vals or {}).items() if "gpu_metrics" in k}))


def check_profiler(args, runs, sums, pairs):
    base = args.url + "/data/plugin/pytorch_profiler/"
    found = get(base + "runs").get("runs", [])
    for run in runs:
        ok = run in found
        report("pytorch_profiler: finds %s" % run, ok, "runs %s" % found)
        if not ok:
            continue
        workers = get(base + "workers?" + q(run=run, view="Overview"))
        w = workers[0]
        spans = get(base + "spans?" + q(run=run, worker=w))
        span = spans[0] if spans else ""
        ov = get(base + "overview?" + q(run=run, worker=w, span=span))
        nsteps = len(first_steps(sums[run]))
        rows = ov.get("steps", {}).get("rows", [])
        total = ov["performance"][0]["value"]
        report("pytorch_profiler: %s overview has %d steps, a positive average" % (run, nsteps),
               len(rows) == nsteps and total > 0, "rows %d, average %s us" % (len(rows), total))
        kt = get(base + "kernel/table?" + q(run=run, worker=w, span=span, group_by="Kernel"))
        theirs = {r[0]: r[2] for r in kt["data"]["rows"]}
        ours = {k["name"]: k["calls"] for k in sums[run]["kernels"]}
        # The plugin counts the kernels inside its steps; with steps every
        # kernel launched in one is there.
        diffs = [(n, c, theirs.get(n)) for n, c in ours.items() if theirs.get(n) not in (None, c)]
        missing = [n for n in theirs if n not in ours]
        report("pytorch_profiler: %s kernel table names and calls are the summary's" % run,
               not missing and len(theirs) > 0 and len(diffs) <= len(ours) // 10,
               "%d kernels, %d unknown names, %d call counts differ %s" %
               (len(theirs), len(missing), len(diffs), (missing + diffs)[:2]))
        try:
            get(base + "trace?" + q(run=run, worker=w, span=span))
            report("pytorch_profiler: %s trace answers" % run, True)
        except urllib.error.HTTPError as e:
            report("pytorch_profiler: %s trace answers" % run, False, str(e))
    for b, n in pairs:
        wb = get(base + "workers?" + q(run=b, view="Overview"))[0]
        wn = get(base + "workers?" + q(run=n, view="Overview"))[0]
        sb = (get(base + "spans?" + q(run=b, worker=wb)) or [""])[0]
        sn = (get(base + "spans?" + q(run=n, worker=wn)) or [""])[0]
        try:
            d = get(base + "diffnode?" + q(run=b, worker=wb, span=sb, exp_run=n, exp_worker=wn,
                                           exp_span=sn, path="0"))
            ok = "left" in d and "right" in d
            report("pytorch_profiler: diff %s -> %s answers" % (b, n), ok,
                   "left %s, right %s" % (d.get("left", {}).get("name"), d.get("right", {}).get("name")))
        except urllib.error.HTTPError as e:
            report("pytorch_profiler: diff %s -> %s answers" % (b, n), False, str(e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--tbexport", required=True)
    ap.add_argument("--pair", action="append", required=True)
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--metrics", action="append", default=[])
    ap.add_argument("--no-profiler-plugin", action="store_true")
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    pairs = [tuple(p.split(":", 1)) for p in args.pair]
    labels = []
    for lab in args.label:
        run, kv = lab.split(":", 1)
        k, v = kv.split("=", 1)
        labels.append((run, k, v))
    runs = [r for p in pairs for r in p]
    sums = {r: summary(args, r) for r in runs}
    tags = get(args.url + "/data/plugin/scalars/tags")
    for r in runs:
        check_scalars(args, r, sums[r], tags)
        check_ops(args, r, sums[r], tags)
    check_layout(args)
    for b, n in pairs:
        check_text(args, b, n)
    check_hparams(args, runs, sums, labels)
    for r in args.metrics:
        check_metrics(args, r, summary(args, r), tags)
    if not args.no_profiler_plugin:
        check_profiler(args, runs, sums, pairs)
    failed = RESULTS.count(False)
    print("%d checks, %d failed" % (len(RESULTS), failed))
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
