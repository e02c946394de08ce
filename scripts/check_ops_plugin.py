#!/usr/bin/env python3
"""check_ops_plugin.py: the operator level of our Chrome JSON, as the
PyTorch Profiler TensorBoard plugin (torch-tb-profiler 0.4.3, frozen) shows
it through its HTTP data API, against tbexport's own summary and diff.

usage: check_ops_plugin.py --url URL --logdir DIR --tbexport BIN
                           --pair BASE:NEW [--pair BASE:NEW ...]

URL serves DIR (../shared/tools/tensorboard/serve), where each run RUN has
its <host>.trace.json.gz under plugins/profile/RUN/ and the plugin's link
under RUN/.  For every run of every pair, with `BIN summary --format json
--top 0` as the reference:

  layout     our Chrome JSON itself, as Kineto writes it: deviceProperties
             with computeMajor, computeMinor and numSms; every kernel with
             blocks per SM, warps per SM and est. achieved occupancy %;
             every cpu_op with an External id, some with Sequence number and
             Input Dims, none with Input type unless the source was a
             PyTorch trace; every runtime/driver call and GPU op with the
             External id of the operator that launched it (the innermost one
             open on its thread) and every GPU op with its launching call's;
             one ProfilerStep#N per step of the summary;
  runs       the plugin lists the run;
  overview   one row per step; CPU Exec > 0; GPU Utilization, Est. SM
             Efficiency and Est. Achieved Occupancy shown, the occupancy equal
             to the duration-weighted mean of our kernels' figures;
  operator   the Operation table has every operator of the summary with its
             calls and host total time (the plugin's rounding: within 1 us),
             each operator's device self time is the time of the kernels our
             External ids attribute to it (runtime launches: the plugin maps
             no cuda_driver call, as for Kineto's own traces), and grouped by
             input shape it has our Input Dims;
  kernel     the kernel table grouped by kernel and operator attributes each
             kernel to the operator our External id names (a driver launch to
             the plugin's CallTreeRoot), with our calls, and has the Mean
             Blocks Per SM and Mean Est. Achieved Occupancy columns;
  diff       for each pair the plugin's diff of the two runs (diffnode, the
             root) is not empty and its per-operator calls and host time
             deltas are `BIN diff --format json`'s (within the plugin's
             float rounding).

Prints PASS/FAIL per check; exits 1 if any failed, 2 on bad usage.
"""
import argparse
import glob
import gzip
import json
import math
import os
import subprocess
import sys
import urllib.parse
import urllib.request

RESULTS = []


def report(name, ok, detail=""):
    RESULTS.append(bool(ok))
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""), flush=True)


def get(url):
    with urllib.request.urlopen(url, timeout=300) as r:
        raw = r.read()
        if r.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        return json.loads(raw)


def q(**kw):
    return urllib.parse.urlencode(kw)


def tbexport(args, *argv):
    out = subprocess.run([args.tbexport] + list(argv), capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("tbexport %s failed: %s" % (" ".join(argv), out.stderr.strip()))
    return json.loads(out.stdout)


def summary(args, run):
    return tbexport(args, "summary", "--format", "json", "--top", "0", "--logdir", args.logdir, run)


class Trace:
    """Our Chrome JSON of one run, indexed the way Kineto's readers link it."""

    def __init__(self, path):
        with gzip.open(path, "rt") as f:
            self.doc = json.load(f)
        ev = [e for e in self.doc["traceEvents"] if e.get("ph") == "X"]
        self.ops = [e for e in ev if e.get("cat") == "cpu_op"]
        self.calls = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
        self.gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        self.kernels = [e for e in self.gpu if e["cat"] == "kernel"]
        self.annotations = [e for e in ev if e.get("cat") == "user_annotation"]
        self.steps = sorted((e for e in ev if e.get("name", "").startswith("ProfilerStep#")),
                            key=lambda e: e["ts"])
        self.by_ext = {}
        for e in ev:
            if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {}):
                self.by_ext.setdefault(e["args"]["External id"], e)
        self.call_of = {}
        for c in self.calls:
            if "correlation" in c.get("args", {}):
                self.call_of.setdefault(c["args"]["correlation"], c)

    def launch(self, g):
        return self.call_of.get(g.get("args", {}).get("correlation"))

    def op_of(self, g):
        """The operator our External id names for GPU op or call `g`."""
        o = self.by_ext.get(g.get("args", {}).get("External id"))
        return o if o is not None and o.get("cat") == "cpu_op" else None


def innermost_open(tr, call):
    """The innermost cpu_op or user_annotation open on the call's thread at
    its start (Kineto's attribution), or None."""
    best = None
    for e in list(tr.ops) + [x for x in tr.by_ext.values() if x.get("cat") == "user_annotation"]:
        if e["pid"] != call["pid"] or e["tid"] != call["tid"]:
            continue
        if e["ts"] <= call["ts"] and call["ts"] < e["ts"] + e["dur"]:
            if best is None or e["ts"] > best["ts"] or (e["ts"] == best["ts"] and e["dur"] < best["dur"]):
                best = e
    return best


def plugin_op_table(tr):
    """{name: [calls, host total us]} as the plugin's Operation table counts
    our operators: per thread a tree by time containment (cpu_ops,
    user_annotations), where an operator whose only child is an operator of
    its own name absorbs it (the plugin's remove_dup_nodes, after
    autograd's profiler); the absorbed one is not counted."""
    nodes = list(tr.ops) + [e for e in tr.annotations]
    by_tid = {}
    for e in nodes:
        by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    out = {}
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        children = {id(e): [] for e in evs}
        roots, stack = [], []
        for e in evs:
            while stack and not (e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"]):
                stack.pop()
            (children[id(stack[-1])] if stack else roots).append(e)
            stack.append(e)
        absorbed = set()

        def walk(n):
            while n["cat"] == "cpu_op" and len(children[id(n)]) == 1:
                c = children[id(n)][0]
                if c["cat"] != "cpu_op" or c["name"] != n["name"]:
                    break
                absorbed.add(id(c))
                children[id(n)] = children[id(c)]
            for c in children[id(n)]:
                walk(c)

        for r in roots:
            walk(r)
        for e in evs:
            if e["cat"] == "cpu_op" and id(e) not in absorbed:
                v = out.setdefault(e["name"], [0, 0.0])
                v[0] += 1
                v[1] += e["dur"]
    return out


def check_layout(run, tr, s):
    dp = tr.doc.get("deviceProperties", [])
    report("%s layout: deviceProperties with computeMajor, computeMinor, numSms" % run,
           bool(dp) and all("computeMajor" in d and "computeMinor" in d and "numSms" in d for d in dp),
           json.dumps(dp)[:200])
    occ_keys = ("blocks per SM", "warps per SM", "est. achieved occupancy %")
    missing = [k["name"] for k in tr.kernels if not all(x in k["args"] for x in occ_keys)]
    report("%s layout: every kernel (%d) has blocks/warps per SM and est. achieved occupancy %%"
           % (run, len(tr.kernels)), bool(tr.kernels) and not missing, "missing on %s" % missing[:3])
    noext = [o["name"] for o in tr.ops if not o.get("args", {}).get("External id")]
    report("%s layout: every cpu_op (%d) has an External id" % (run, len(tr.ops)),
           bool(tr.ops) and not noext, "%s" % noext[:3])
    report("%s layout: cpu_ops carry Sequence number and Input Dims" % run,
           any("Sequence number" in o["args"] for o in tr.ops) and any("Input Dims" in o["args"] for o in tr.ops))
    src = tr.doc.get("tbexportTrace", {}).get("source")
    typed = [o["name"] for o in tr.ops if "Input type" in o["args"]]
    if src == "cupti":
        report("%s layout: no Input type on a collected run (PyTorch's NVTX text has none)" % run,
               not typed, "%s" % typed[:3])
    bad = []
    for c in tr.calls:
        inner = innermost_open(tr, c)
        want = inner["args"].get("External id") if inner else None
        if c["args"].get("External id") != want:
            bad.append((c["name"], c["args"].get("External id"), want))
    report("%s layout: each of %d runtime/driver calls has the External id of the innermost "
           "operator open at its start" % (run, len(tr.calls)), not bad, "%s" % bad[:3])
    bad = []
    for g in tr.gpu:
        c = tr.launch(g)
        if c is not None and c["args"].get("External id") != g["args"].get("External id"):
            bad.append((g["name"], g["args"].get("External id"), c["args"].get("External id")))
    report("%s layout: each GPU op has its launching call's External id" % run, not bad, "%s" % bad[:3])
    nums = sorted(st["step"] for st in s["steps"])
    mine = sorted(int(e["name"].split("#", 1)[1]) for e in tr.steps)
    report("%s layout: ProfilerStep#N for each of the summary's %d steps" % (run, len(nums)),
           mine == nums, "events %s, summary %s" % (mine[:6], nums[:6]))


def weighted_occupancy(tr):
    """The duration-weighted mean of est. achieved occupancy % over the
    kernels inside the steps (the plugin's window: from the first step's
    start to the last step's end or the end of the last GPU work launched
    in a step, whichever is later, as the plugin extends steps), or None."""
    if not tr.steps:
        return None
    lo = tr.steps[0]["ts"]
    hi = max(e["ts"] + e["dur"] for e in tr.steps)
    launched = {c["args"].get("correlation") for c in tr.calls if lo <= c["ts"] <= hi}
    ends = [k["ts"] + k["dur"] for k in tr.gpu if k["args"].get("correlation") in launched]
    hi = max([hi] + ends)
    num = den = 0.0
    for k in tr.kernels:
        a, b = max(k["ts"], lo), min(k["ts"] + k["dur"], hi)
        occ = k["args"].get("est. achieved occupancy %")
        if b > a and occ is not None and occ >= 0:
            num += occ * (b - a)
            den += b - a
    return num / den if den else None


def check_overview(args, run, tr, s, w, span):
    base = args.url + "/data/plugin/pytorch_profiler/"
    ov = get(base + "overview?" + q(run=run, worker=w, span=span))
    rows = ov.get("steps", {}).get("rows", [])
    report("%s overview: one row per step (%d)" % (run, len(s["steps"])), len(rows) == len(s["steps"]),
           "rows %d" % len(rows))
    perf = {c["name"]: c["value"] for c in ov["performance"][0].get("children", [])}
    report("%s overview: CPU Exec > 0" % run, perf.get("CPU Exec", 0) > 0, "%s" % perf)
    gm = {d["title"]: d["value"] for d in ov.get("gpu_metrics", {}).get("data", [])}
    need = ["GPU Utilization", "Est. SM Efficiency", "Est. Achieved Occupancy"]
    report("%s overview: %s" % (run, ", ".join(need)), all(k in gm for k in need), "%s" % gm)
    want = weighted_occupancy(tr)
    got = gm.get("Est. Achieved Occupancy")
    try:
        got = float(str(got).split()[0])
    except (TypeError, ValueError):
        got = None
    report("%s overview: Est. Achieved Occupancy is the time-weighted mean of our kernels' (%s %%)"
           % (run, None if want is None else round(want, 2)),
           want is not None and got is not None and abs(got - want) <= 0.01 + 1e-6 * want,
           "plugin %s" % got)


def check_operators(args, run, tr, s, w, span):
    base = args.url + "/data/plugin/pytorch_profiler/"
    tab = get(base + "operation/table?" + q(run=run, worker=w, span=span, group_by="Operation"))
    rows = {r["name"]: r for r in tab["data"]}
    ours = {o["name"]: o for o in s["cpu_ops"]}
    raw = {}
    for o in tr.ops:
        v = raw.setdefault(o["name"], [0, 0.0])
        v[0] += 1
        v[1] += o["dur"]
    bad = [(n, o["calls"], o["total_ns"], raw.get(n)) for n, o in ours.items()
           if raw.get(n, [0])[0] != o["calls"] or abs(raw[n][1] * 1e3 - o["total_ns"]) > 0.5 * o["calls"] + 1]
    report("%s operator: the summary's %d operators are our JSON's cpu_ops with their calls and time"
           % (run, len(ours)), bool(ours) and not bad and set(raw) == set(ours), "%s" % bad[:3])
    want = plugin_op_table(tr)
    bad = [(n, c, round(t, 3), rows.get(n) and (rows[n]["calls"], rows[n]["host_total_duration"]))
           for n, (c, t) in want.items()
           if n not in rows or rows[n]["calls"] != c or abs(rows[n]["host_total_duration"] - t) > 1]
    extra = [n for n in rows if n not in want]
    merged = sum(raw[n][0] - c for n, (c, _) in want.items())
    report("%s operator: the plugin's %d operators have the summary's calls and host total time, "
           "less %d calls it merges into a same-named parent" % (run, len(rows), merged),
           bool(rows) and not bad and not extra, "%d differ %s; unknown %s" % (len(bad), bad[:3], extra[:3]))
    dev = {}
    for k in tr.gpu:
        c, o = tr.launch(k), tr.op_of(k)
        if c is not None and c["cat"] == "cuda_runtime" and o is not None:
            dev[o["name"]] = dev.get(o["name"], 0.0) + k["dur"]
    bad = [(n, round(dev.get(n, 0.0), 3), r["device_self_duration"]) for n, r in rows.items()
           if abs(r["device_self_duration"] - dev.get(n, 0.0)) > 1]
    report("%s operator: each operator's device self time is its kernels' by our External ids "
           "(%d operators launch)" % (run, len(dev)), bool(dev) and not bad, "%s" % bad[:3])
    shp = get(base + "operation/table?" + q(run=run, worker=w, span=span, group_by="OperationAndInputShape"))
    theirs = {}
    for r in shp["data"]:
        theirs[(r["name"], r.get("input_shape"))] = r["calls"]
    want = {}
    for o in tr.ops:
        if "Input Dims" in o["args"]:
            key = (o["name"], str(o["args"]["Input Dims"]))
            want[key] = want.get(key, 0) + 1
    # an operator merged into its same-named parent is counted once, under
    # the parent's shapes: compare the calls of operators the plugin does
    # not merge, and the shapes of all
    full = {n for n, (c, _) in plugin_op_table(tr).items() if c == sum(1 for o in tr.ops if o["name"] == n)}
    bad = [(k, c, theirs.get(k)) for k, c in want.items()
           if k not in theirs or (k[0] in full and theirs.get(k) != c)]
    report("%s operator: grouped by input shape, our %d (operator, Input Dims) pairs with their calls"
           % (run, len(want)), bool(want) and not bad, "%s" % bad[:3])


def check_kernels(args, run, tr, s, w, span):
    base = args.url + "/data/plugin/pytorch_profiler/"
    kt = get(base + "kernel/table?" + q(run=run, worker=w, span=span, group_by="KernelNameAndOpName"))
    cols = [c["name"] for c in kt["data"]["columns"]]
    report("%s kernel: columns Mean Blocks Per SM and Mean Est. Achieved Occupancy (%%)" % run,
           "Mean Blocks Per SM" in cols and "Mean Est. Achieved Occupancy (%)" in cols, "%s" % cols)
    ci = {c: i for i, c in enumerate(cols)}
    theirs = {}
    for r in kt["data"]["rows"]:
        key = (r[ci["Name"]], r[ci["Operator"]])
        theirs[key] = theirs.get(key, 0) + r[ci["Calls"]]
    want = {}
    for k in tr.kernels:
        c, o = tr.launch(k), tr.op_of(k)
        op = o["name"] if (c is not None and c["cat"] == "cuda_runtime" and o is not None) else "CallTreeRoot"
        want[(k["name"], op)] = want.get((k["name"], op), 0) + 1
    bad = [(k, c, theirs.get(k)) for k, c in want.items() if theirs.get(k) != c]
    extra = [k for k in theirs if k not in want]
    attributed = sum(c for (n, op), c in want.items() if op != "CallTreeRoot")
    report("%s kernel: each kernel attributed to the operator our External id names (%d of %d "
           "calls; driver launches: CallTreeRoot)" % (run, attributed, len(tr.kernels)),
           attributed > 0 and not bad and not extra, "%s; unknown %s" % (bad[:3], extra[:3]))
    names = {k["name"]: k["calls"] for k in s["kernels"]}
    mine = {}
    for (n, _), c in theirs.items():
        mine[n] = mine.get(n, 0) + c
    report("%s kernel: names and calls are the summary's (%d kernels)" % (run, len(names)), mine == names,
           "%s" % sorted(set(mine.items()) ^ set(names.items()))[:4])


def workers_span(args, run):
    base = args.url + "/data/plugin/pytorch_profiler/"
    w = get(base + "workers?" + q(run=run, view="Overview"))[0]
    spans = get(base + "spans?" + q(run=run, worker=w))
    return w, (spans[0] if spans else "")


def check_diff(args, b, n):
    base = args.url + "/data/plugin/pytorch_profiler/"
    wb, sb = workers_span(args, b)
    wn, sn = workers_span(args, n)
    d = get(base + "diffnode?" + q(run=b, worker=wb, span=sb, exp_run=n, exp_worker=wn, exp_span=sn, path="0"))
    left = {a["name"]: a for a in d.get("left", {}).get("aggs", [])}
    right = {a["name"]: a for a in d.get("right", {}).get("aggs", [])}
    report("diff %s -> %s: the plugin's diff is not empty (%d and %d operators)" % (b, n, len(left), len(right)),
           bool(left) and bool(right))
    ours = tbexport(args, "diff", "--format", "json", "--top", "0", "--no-events", "--logdir", args.logdir, b, n)
    bad = []
    checked = partial = 0
    for e in ours["cpu_ops"]["entries"]:
        if e["status"] != "matched":
            continue
        lo, ro = left.get(e["name"]), right.get(e["name"])
        got = [lo["calls"] if lo else 0, ro["calls"] if ro else 0]
        if got[0] > e["calls"][0] or got[1] > e["calls"][1]:
            bad.append((e["name"], "calls", e["calls"], got))
            continue
        if got != e["calls"]:
            # the plugin's diff reads the tree of one thread (its first), under
            # the ProfilerSteps, with same-named operators merged
            partial += 1
            continue
        checked += 1
        delta = ro["host_duration"] - lo["host_duration"]
        # the plugin's times are float microseconds of float timestamps
        # (about 1/1024 us apart at these epochs): a few thousandths a call
        tol = 0.005 * (e["calls"][0] + e["calls"][1]) + 0.01
        if abs(delta - e["delta_ns"] / 1e3) > tol:
            bad.append((e["name"], e["calls"], e["delta_ns"] / 1e3, round(delta, 3)))
    report("diff %s -> %s: per operator, the plugin's calls and host time delta are `tbexport diff`'s "
           "(%d operators it sees whole; %d it sees in part, never more)" % (b, n, checked, partial),
           checked > 0 and not bad, "%s" % bad[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--tbexport", required=True)
    ap.add_argument("--pair", action="append", required=True)
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    pairs = [tuple(p.split(":", 1)) for p in args.pair]
    runs = [r for p in pairs for r in p]
    found = get(args.url + "/data/plugin/pytorch_profiler/runs").get("runs", [])
    for run in runs:
        report("runs: the plugin lists %s" % run, run in found, "runs %s" % found)
        if run not in found:
            continue
        files = glob.glob(os.path.join(args.logdir, "plugins", "profile", run, "*.trace.json.gz"))
        if len(files) != 1:
            report("%s: one Chrome JSON" % run, False, "%s" % files)
            continue
        tr = Trace(files[0])
        s = summary(args, run)
        check_layout(run, tr, s)
        w, span = workers_span(args, run)
        check_overview(args, run, tr, s, w, span)
        check_operators(args, run, tr, s, w, span)
        check_kernels(args, run, tr, s, w, span)
    for b, n in pairs:
        check_diff(args, b, n)
    failed = RESULTS.count(False)
    print("%d checks, %d failed" % (len(RESULTS), failed))
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
