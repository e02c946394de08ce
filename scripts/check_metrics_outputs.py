#!/usr/bin/env python3
"""check_metrics_outputs.py: the GPU metrics of a run, as the real clients
read them.

usage: check_metrics_outputs.py LOGDIR RUN [--tbexport BIN] [--skip jax,tb]
                                [--kernel-metrics] [--no-pm]

RUN is a run tbexport wrote with GPU metrics (`tbexport --gpu-metrics --
CMD`, or an import of such a trace).  The reference is tbexport's own
summary, of the run and of each of its files alone (so that one broken file
does not hide what the others hold); each part loads what a client loads
and checks what it needs:

  json   every plugins/profile/RUN/*.trace.json.gz through gzip + json.load
         (what Perfetto, chrome://tracing and HTA parse): for each GPU of
         the summary with PM means, a "C" counter event series per metric in
         the GPU's pid (the pid whose process_name, or in Kineto's layout
         process_labels, is "GPU <n>"), every
         args.value a finite number, timestamps strictly increasing per
         (pid, name) track, as Perfetto's counter tracks need; with kernel
         figures, tbexportKernelMetrics lists them;
  tb     TensorBoard's EventAccumulator over LOGDIR/RUN (a multi-host run:
         each host's folder in it): a scalar tag gpu_metrics/<metric> per
         metric of the summary, with one value per step of
         steps/step_time_ms (a run without steps: a time series, more than
         one value at increasing steps, the milliseconds since the start);
  jax    jax.profiler.ProfileData.from_file over each
         plugins/profile/RUN/*.xplane.pb (what xprof and JAX read): each GPU
         plane of the summary's GPUs with metrics has lines named
         "_counters_" whose events are named by the metrics;
  summary  `tbexport summary --format json --logdir LOGDIR RUN`: every GPU
         has gpu_metrics; kernel rows with metrics have bound_by and
         metric_launches; with --kernel-metrics (or when the trace JSON
         holds kernel figures) at least one kernel row has them.

--no-pm: the run was collected without PM sampling (`--kernel-metrics`
alone: the two cannot run at once on one GPU); the PM checks are left out,
loudly, and the kernel figures are required.  A part whose client cannot be
imported FAILS: on the GPU machine the clients must be there.  --skip jax,tb leaves those parts out (on a machine
without them) and says so loudly.  Prints what each client read and one
FAIL line per failure; exits 1 if any failed, 2 on bad usage.
"""
import argparse
import glob
import gzip
import json
import math
import os
import re
import subprocess
import sys

FAILS = []


def fail(part, msg):
    FAILS.append((part, msg))
    print("FAIL %s: %s" % (part, msg), flush=True)


def ok(part, msg):
    print("ok   %s: %s" % (part, msg), flush=True)


def say(part, msg):
    print("     %s: %s" % (part, msg), flush=True)


def summary_of(args):
    cmd = [args.tbexport, "summary", "--format", "json", "--top", "0", "--logdir", args.logdir,
           args.run]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fail("summary", "%s: exit %d: %s" % (" ".join(cmd), out.returncode,
                                             out.stderr.strip().splitlines()[-1:]))
        return None
    try:
        return json.loads(out.stdout)
    except ValueError as e:
        fail("summary", "not JSON: %s" % e)
        return None


def file_summary(args, path):
    """tbexport's summary of one file, or None (the run's may come from
    another of its files: the XSpace keeps the reference when a JSON is
    broken, and the other way round)."""
    out = subprocess.run([args.tbexport, "summary", "--format", "json", "--top", "0", path],
                         capture_output=True, text=True)
    try:
        return json.loads(out.stdout) if out.returncode == 0 else None
    except ValueError:
        return None


def reference(args, s):
    """{device: {metric names}} that the outputs must hold: the run
    summary's GPUs with metrics and those of each of its XSpace and JSON
    files read alone."""
    out = {}
    sums = [s] + [file_summary(args, f) for f in sorted(glob.glob(os.path.join(
        args.logdir, "plugins", "profile", args.run, "*.xplane.pb")) + glob.glob(os.path.join(
            args.logdir, "plugins", "profile", args.run, "*.trace.json.gz")))]
    for x in sums:
        for dev, m in gpus_with_metrics(x).items():
            out.setdefault(dev, {}).update(m)
    return out


def hosts_of(s):
    """The per-host summaries (a run of several hosts nests them)."""
    if s is None:
        return []
    return s["hosts"] if "hosts" in s and "total" in s else [s]


def gpus_with_metrics(s):
    """{device ordinal: {metric: mean}} over the hosts (ordinals of several
    hosts merge: the checks below ask for names, not values)."""
    out = {}
    for h in hosts_of(s):
        for d in h.get("devices", []):
            if d.get("gpu_metrics"):
                out.setdefault(d["device"], {}).update(d["gpu_metrics"])
    return out


# ---- summary ----

def check_summary(args, s, kernel_figures_in_json):
    """The summary JSON's GPU means (unless --no-pm) and kernel rows."""
    if s is None:
        return
    hosts = hosts_of(s)
    ndev = nwith = 0
    for h in hosts:
        for d in h.get("devices", []):
            ndev += 1
            gm = d.get("gpu_metrics")
            if gm:
                nwith += 1
                bad = [k for k, v in gm.items() if not isinstance(v, (int, float))]
                if bad:
                    fail("summary", "%s GPU %s: gpu_metrics not numbers: %s" %
                         (h.get("label"), d["device"], bad))
                say("summary", "%s GPU %s: %d metrics, e.g. %s" % (
                    h.get("label") or h.get("host"), d["device"], len(gm),
                    ", ".join("%s=%.4g" % kv for kv in list(gm.items())[:3])))
            elif not args.no_pm:
                fail("summary", "%s GPU %s has no gpu_metrics" % (h.get("label"), d["device"]))
    if ndev == 0:
        fail("summary", "no GPU in the summary")
    elif nwith == ndev:
        ok("summary", "gpu_metrics on all %d GPUs of %d host(s)" % (ndev, len(hosts)))
    rows = [k for h in hosts for k in h.get("kernels", [])]
    with_m = [k for k in rows if k.get("metrics")]
    for k in with_m:
        if not k.get("bound_by") and k.get("bound_by") != "":
            fail("summary", "kernel %s has metrics but no bound_by" % k["name"][:60])
        if "metric_launches" not in k:
            fail("summary", "kernel %s has metrics but no metric_launches" % k["name"][:60])
    want = args.kernel_metrics or args.no_pm or kernel_figures_in_json
    if with_m:
        verdicts = {}
        for k in with_m:
            verdicts[k.get("bound_by") or "-"] = verdicts.get(k.get("bound_by") or "-", 0) + 1
        ok("summary", "%d of %d kernel rows have metrics; bound by %s; e.g. %s: %s" % (
            len(with_m), len(rows), verdicts, with_m[0]["name"][:50],
            ", ".join("%s=%.4g" % kv for kv in list(with_m[0]["metrics"].items())[:3])))
    elif want:
        fail("summary", "kernel metrics were collected (%s) but no kernel row has metrics" %
             ("--kernel-metrics" if args.kernel_metrics else "tbexportKernelMetrics in the JSON"))
    else:
        say("summary", "no kernel figures (range profiler not run)")


# ---- Chrome JSON ----

def check_json(args, want):
    files = sorted(glob.glob(os.path.join(args.logdir, "plugins", "profile", args.run,
                                          "*.trace.json.gz")))
    if not files:
        fail("json", "no plugins/profile/%s/*.trace.json.gz" % args.run)
        return False
    any_kernel_figures = False
    seen_gpu = {}
    for f in files:
        try:
            with gzip.open(f, "rt") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as e:
            fail("json", "%s: %s" % (f, e))
            continue
        events = doc.get("traceEvents", [])
        gpu_pid = {}
        for e in events:
            # A GPU's process: named "GPU <n>", or, in Kineto's layout (what
            # a collected run writes), named after the program and labelled
            # "GPU <n>" (process_labels), as Perfetto shows it.
            if e.get("ph") == "M" and e.get("name") in ("process_name", "process_labels"):
                a = e.get("args", {})
                m = re.fullmatch(r"GPU (\d+)", str(a.get("name", a.get("labels", ""))))
                if m:
                    gpu_pid[e["pid"]] = int(m.group(1))
        tracks = {}
        nonnum = 0
        for e in events:
            if e.get("ph") != "C":
                continue
            v = e.get("args", {}).get("value")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                nonnum += 1
            tracks.setdefault((e.get("pid"), e.get("name")), []).append(e.get("ts"))
        if nonnum:
            fail("json", "%s: %d counter events whose args.value is not a finite number" %
                 (os.path.basename(f), nonnum))
        for (pid, name), ts in sorted(tracks.items(), key=lambda x: str(x[0])):
            back = sum(1 for a, b in zip(ts, ts[1:]) if not (isinstance(a, (int, float)) and
                                                              isinstance(b, (int, float)) and b > a))
            if back:
                fail("json", "%s: track pid %s %s: %d timestamps not after the one before" %
                     (os.path.basename(f), pid, name, back))
            if pid in gpu_pid:
                seen_gpu.setdefault(gpu_pid[pid], {})[name] = seen_gpu.get(
                    gpu_pid[pid], {}).get(name, 0) + len(ts)
        km = doc.get("tbexportKernelMetrics") or []
        any_kernel_figures |= bool(km)
        say("json", "%s: %d events, %d counter tracks, GPU pids %s, %d kernel figure entries" % (
            os.path.basename(f), len(events), len(tracks), sorted(gpu_pid.values()), len(km)))
    for dev, metrics in sorted(want.items()):
        got = seen_gpu.get(dev, {})
        missing = sorted(m for m in metrics if m not in got)
        if missing:
            fail("json", "GPU %d: no C events for %s" % (dev, missing))
        else:
            ok("json", "GPU %d: C events for all %d metrics (%s)" % (
                dev, len(metrics), ", ".join("%s x%d" % (m, got[m]) for m in list(metrics)[:3])))
    if not want and not args.no_pm:
        fail("json", "the summary names no GPU with metrics to look for")
    if args.no_pm and not any_kernel_figures:
        fail("json", "no kernel figures in tbexportKernelMetrics (--no-pm: the range profiler's run)")
    return any_kernel_figures


# ---- TensorBoard ----

def check_tb(args, s):
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError as e:
        fail("tb", "cannot import TensorBoard's EventAccumulator: %s" % e)
        return
    base = os.path.join(args.logdir, args.run)
    # a run of one host is its folder; a multi-host run has one per host
    paths = [base] + sorted(d for d in glob.glob(os.path.join(base, "*"))
                            if os.path.isdir(d) and os.path.basename(d) != "hparams")
    want = set()
    if s is not None:
        tot = s["total"] if "total" in s else s
        want = set((tot.get("all") or {}).get("gpu_metrics", {}))
    seen = set()
    for path in paths:
        acc = EventAccumulator(path, size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        tags = acc.Tags().get("scalars", [])
        mtags = sorted(t for t in tags if t.startswith("gpu_metrics/"))
        if not mtags:
            continue
        seen |= {t[len("gpu_metrics/"):] for t in mtags}
        say("tb", "%s: %d scalar tags, %d gpu_metrics/*" % (path, len(tags), len(mtags)))
        steps = sorted({e.step for e in acc.Scalars("steps/step_time_ms")}) \
            if "steps/step_time_ms" in tags else None
        bad = 0
        for t in mtags:
            got = [p.step for p in acc.Scalars(t)]
            if steps is not None and (sorted(got) != steps or len(set(got)) != len(got)):
                bad += 1
                fail("tb", "%s: %d values at steps %s, want one per step %s" % (
                    t, len(got), got[:6], steps[:6]))
            if steps is None and (len(got) < 2 or any(b <= a for a, b in zip(got, got[1:]))):
                bad += 1
                fail("tb", "%s: %d values at steps %s, want a time series (no steps)" % (
                    t, len(got), got[:6]))
        if not bad:
            p = acc.Scalars(mtags[0])
            ok("tb", "%d gpu_metrics series %s; %s: %s" % (
                len(mtags), "with one value per step (%d steps)" % len(steps) if steps is not None
                else "as time series (%d buckets)" % len(p), mtags[0],
                ", ".join("%d:%.4g" % (x.step, x.value) for x in p[:4])))
    missing = sorted(m for m in want if m not in seen)
    if missing:
        fail("tb", "no scalar series for %s" % missing)
    if not seen:
        fail("tb", "no gpu_metrics/* scalar tags under %s" % base)


# ---- XSpace through JAX ----

def check_jax(args, want):
    try:
        from jax.profiler import ProfileData
    except ImportError as e:
        fail("jax", "cannot import jax.profiler.ProfileData: %s" % e)
        return
    files = sorted(glob.glob(os.path.join(args.logdir, "plugins", "profile", args.run, "*.xplane.pb")))
    if not files:
        fail("jax", "no plugins/profile/%s/*.xplane.pb" % args.run)
        return
    seen = {}
    for f in files:
        try:
            pd = ProfileData.from_file(f)
        except Exception as e:  # the client's own error, whatever its type
            fail("jax", "%s: ProfileData.from_file: %s" % (f, e))
            continue
        nplanes = 0
        for plane in pd.planes:
            nplanes += 1
            m = re.fullmatch(r"/device:GPU:(\d+)", plane.name)
            if not m:
                continue
            dev = int(m.group(1))
            nlines = nev = 0
            first = None
            for line in plane.lines:
                if line.name != "_counters_":
                    continue
                nlines += 1
                for ev in line.events:
                    nev += 1
                    seen.setdefault(dev, {})
                    seen[dev][ev.name] = seen[dev].get(ev.name, 0) + 1
                    if first is None:
                        first = "%s at %.0f ns, stats %s" % (ev.name, ev.start_ns,
                                                             dict(ev.stats))
            say("jax", "%s: %s: %d _counters_ lines, %d events; first: %s" % (
                os.path.basename(f), plane.name, nlines, nev, first))
        say("jax", "%s: %d planes" % (os.path.basename(f), nplanes))
    for dev, metrics in sorted(want.items()):
        got = seen.get(dev, {})
        missing = sorted(m for m in metrics if m not in got)
        if missing:
            fail("jax", "/device:GPU:%d: no _counters_ events named %s" % (dev, missing))
        else:
            ok("jax", "/device:GPU:%d: _counters_ events for all %d metrics (%s)" % (
                dev, len(metrics), ", ".join("%s x%d" % (m, got[m]) for m in list(metrics)[:3])))
    if not want:
        fail("jax", "the summary names no GPU with metrics to look for")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logdir")
    ap.add_argument("run")
    ap.add_argument("--tbexport", default=None, help="the tbexport program (default: on PATH, "
                    "else build/dev/tbexport of this tree)")
    ap.add_argument("--skip", default="", help="comma list of parts to leave out: jax, tb")
    ap.add_argument("--kernel-metrics", action="store_true",
                    help="the run was collected with --kernel-metrics: kernel rows must have them")
    ap.add_argument("--no-pm", action="store_true",
                    help="the run has no PM sampling (--kernel-metrics alone): no PM checks")
    args = ap.parse_args()
    skip = {x for x in args.skip.split(",") if x}
    if skip - {"jax", "tb"}:
        ap.error("--skip takes jax and tb only, not %s" % sorted(skip - {"jax", "tb"}))
    if args.tbexport is None:
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "dev", "tbexport")
        from shutil import which
        args.tbexport = which("tbexport") or here
    if not os.path.isdir(os.path.join(args.logdir, args.run)) and not os.path.isdir(
            os.path.join(args.logdir, "plugins", "profile", args.run)):
        print("check_metrics_outputs: no run %s under %s" % (args.run, args.logdir), file=sys.stderr)
        return 2
    if args.no_pm:
        skip |= {"jax", "tb"}
        print("!!!! --no-pm: the PM checks (C events, gpu_metrics, TensorBoard, XSpace "
              "_counters_) are left out; kernel figures are required !!!!", flush=True)
    for part in sorted(skip):
        print("!!!! SKIPPED %s: asked (--skip, --no-pm); this run does NOT show that %s reads the "
              "metrics !!!!" % (part, {"jax": "jax.profiler", "tb": "TensorBoard"}[part]),
              flush=True)
    s = summary_of(args)
    want = reference(args, s)
    say("reference", "GPUs with metrics: %s" % {d: sorted(m) for d, m in sorted(want.items())})
    kernel_figures = check_json(args, want)
    check_summary(args, s, kernel_figures)
    if "tb" not in skip:
        check_tb(args, s)
    if "jax" not in skip:
        check_jax(args, want)
    parts = ["json", "summary"] + [p for p in ("tb", "jax") if p not in skip]
    print("%d failure(s) in %s%s" % (len(FAILS), ", ".join(parts),
                                      "; SKIPPED: %s" % ", ".join(sorted(skip)) if skip else ""))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
