#!/usr/bin/env python3
"""check_memory_plugin.py: the memory of our Chrome JSON as the PyTorch
Profiler TensorBoard plugin (torch-tb-profiler 0.4.3, frozen) shows it in
its Memory view, through its HTTP data API (memory, memory_curve,
memory_events), against our own file and `tbexport summary`.

usage: check_memory_plugin.py --url URL --logdir DIR --tbexport BIN
                              --run RUN[:PEAKS] [--run ...]

URL serves DIR (../shared/tools/tensorboard/serve), where each run RUN has
its <host>.trace.json.gz under plugins/profile/RUN/.  PEAKS, when given, is
what the run must show whatever our file says: DEV=BYTES[,DEV=BYTES...]
(DEV as the plugin names devices: GPU0, CPU), the known peaks of a
synthetic input.  For each run, with the file's "[memory]" instants (the
curve; "[cuda memory]" ones are the other source's, which the plugin must
not read) and `BIN summary --format json` as the references:

  layout     every "[memory]" event is Kineto's: ph i, s t, cat
             cpu_instant_event, args Total Reserved, Total Allocated (when
             known), Bytes, Device Id, Device Type, Addr in Kineto's order,
             then our Source; every device with totals has the counter
             tracks "memory allocated" and "memory reserved" (ph C on the
             GPU's pid), whose values are the totals at each change, and
             no other;
  views      the plugin lists the Memory view;
  curve      memory_curve (bytes) has the devices with totals, each one's
             peak the largest Total Allocated of the file, the summary's
             peak_allocated_bytes and PEAKS; its rows' largest Allocated
             and Reserved are the file's largest totals;
  events     memory_events (bytes) lists every allocation of the file once
             (matched to its free by address, as the plugin pairs them) and
             every free it could not match, per device, with the file's
             sizes;
  stats      memory (the operator table) answers, each device's
             allocation count at most the file's.

Prints PASS/FAIL per check; exits 1 if any failed, 2 on bad usage.
"""
import argparse
import collections
import glob
import gzip
import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request

RESULTS = []
KINETO_ORDER = ["Total Reserved", "Total Allocated", "Bytes", "Device Id", "Device Type", "Addr"]


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


def device_name(a):
    """The plugin's name of an event's device (MemoryRecord.device_name)."""
    t = a.get("Device Type")
    return "CPU" if t == 0 else "GPU%s" % a.get("Device Id") if t == 1 else None


def load(path):
    """The file's memory events (args as ordered pairs) and counters."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f, object_pairs_hook=lambda p: p)
    mem, other, counters = [], 0, collections.defaultdict(list)
    for e in dict(doc)["traceEvents"]:
        e = dict(e)
        if e.get("name") == "[memory]":
            mem.append((e, e.get("args", [])))
        elif e.get("name") == "[cuda memory]":
            other += 1
        elif e.get("ph") == "C" and e.get("name") in ("memory allocated", "memory reserved"):
            counters[(e["pid"], e["name"])].append((float(e["ts"]), dict(e["args"])["value"]))
    return mem, other, counters


def summary_peaks(args, run):
    out = subprocess.run([args.tbexport, "summary", "--format", "json", "--top", "0", "--logdir",
                          args.logdir, run], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("tbexport summary %s failed: %s" % (run, out.stderr.strip()))
    return {"GPU%d" % d["device"]: d.get("peak_allocated_bytes") for d in json.loads(out.stdout)["devices"]}


def check_layout(run, mem, counters):
    bad = []
    for e, a in mem:
        keys = [k for k, _ in a]
        ours = [k for k in keys if k in KINETO_ORDER]
        want = [k for k in KINETO_ORDER if k in keys]
        if (e.get("ph"), e.get("s"), e.get("cat")) != ("i", "t", "cpu_instant_event") or ours != want \
                or not set(KINETO_ORDER[2:]) <= set(keys) or "Source" not in keys \
                or keys.index("Source") < keys.index("Addr"):
            bad.append((e.get("ts"), keys))
    report("%s layout: %d [memory] events as Kineto writes them" % (run, len(mem)), mem and not bad,
           "%s" % bad[:2])
    # counter tracks: per GPU with totals, the totals at each change
    for name, key in (("memory allocated", "Total Allocated"), ("memory reserved", "Total Reserved")):
        want = collections.defaultdict(list)
        for e, a in sorted(mem, key=lambda x: float(x[0]["ts"])):
            a = dict(a)
            if a.get("Device Type") != 1 or a.get("Device Id", -1) < 0 or key not in a:
                continue
            w = want[a["Device Id"]]
            if w and w[-1][0] == float(e["ts"]):
                w.pop()  # several at one time: the last counts
            if not w or w[-1][1] != a[key]:
                w.append((float(e["ts"]), a[key]))
        got = {pid: v for (pid, n), v in counters.items() if n == name}
        ok = set(got) == set(want) and all(
            [x[1] for x in got[d]] == [x[1] for x in want[d]] for d in want)
        report("%s counters: %r per GPU follow %s" % (run, name, key), ok,
               "devices %s vs %s" % (sorted(got), sorted(want)))


def file_facts(mem):
    peaks, resv, count = {}, {}, collections.Counter()
    for e, a in mem:
        a = dict(a)
        dev = device_name(a)
        count[dev] += 1
        if "Total Allocated" in a:
            peaks[dev] = max(peaks.get(dev, 0), a["Total Allocated"])
        if "Total Reserved" in a:
            resv[dev] = max(resv.get(dev, 0), a["Total Reserved"])
    return peaks, resv, count


def plugin_pairs(mem):
    """Rows of memory_events per device, as the plugin pairs records: in
    time order, an allocation waits for a free at its address."""
    recs = sorted(((float(e["ts"]), dict(a)) for e, a in mem), key=lambda r: r[0])
    alloc, free, rows = {}, {}, collections.defaultdict(list)
    for ts, a in recs:
        if "Addr" not in a:
            continue
        if a.get("Bytes", 0) > 0:
            alloc[a["Addr"]] = a
        elif a["Addr"] in alloc:
            rows[device_name(alloc[a["Addr"]])].append(-a["Bytes"])
            del alloc[a["Addr"]]
        else:
            free[a["Addr"]] = a
    for a in alloc.values():
        rows[device_name(a)].append(a["Bytes"])
    for a in free.values():
        rows[device_name(a)].append(-a["Bytes"])
    return rows


def check_run(args, run, want_peaks):
    files = glob.glob(os.path.join(args.logdir, "plugins", "profile", run, "*.trace.json.gz"))
    if len(files) != 1:
        report("%s: one Chrome JSON" % run, False, "%s" % files)
        return
    mem, other, counters = load(files[0])
    check_layout(run, mem, counters)
    peaks, resv, count = file_facts(mem)
    base = args.url + "/data/plugin/pytorch_profiler/"
    views = get(base + "views?" + q(run=run))
    report("%s views: Memory listed" % run, "Memory" in views, "%s" % views)
    w = get(base + "workers?" + q(run=run, view="Memory"))[0]
    span = (get(base + "spans?" + q(run=run, worker=w)) or [""])[0]
    sel = dict(run=run, worker=w, span=span)

    cur = get(base + "memory_curve?" + q(memory_metric="B", time_metric="us", **sel))
    md = cur["metadata"]
    got = {d: float(v.split(": ")[1].rstrip("B")) for d, v in md["peaks"].items()}
    report("%s curve: devices %s" % (run, sorted(peaks)), sorted(md["devices"]) == sorted(peaks),
           "plugin %s" % md["devices"])
    sp = summary_peaks(args, run)
    for dev, p in sorted(peaks.items()):
        ok = abs(got.get(dev, -1) - p) < 0.5 and (not dev.startswith("GPU") or sp.get(dev) == p)
        if want_peaks is not None:
            ok = ok and want_peaks.get(dev) == p
        rows = cur["rows"].get(dev, [])
        ok = ok and rows and max(r[1] for r in rows) == p and max(r[2] for r in rows) == resv[dev]
        report("%s curve: %s peak %d bytes (plugin, file, summary%s)" %
               (run, dev, p, ", known" if want_peaks is not None else ""), ok,
               "plugin %s, summary %s, known %s" % (got.get(dev), sp.get(dev),
                                                    None if want_peaks is None else want_peaks.get(dev)))
    if want_peaks is not None:
        report("%s curve: the known devices %s" % (run, sorted(want_peaks)), sorted(peaks) == sorted(want_peaks))

    ev = get(base + "memory_events?" + q(memory_metric="B", time_metric="us", **sel))
    want = plugin_pairs(mem)
    for dev in sorted(set(want) | set(ev["rows"])):
        g = sorted(r[1] for r in ev["rows"].get(dev, []))
        report("%s events: %s lists %d allocations/frees (%d events)" % (run, dev, len(want[dev]), count[dev]),
               g == sorted(float(x) for x in want[dev]), "plugin %d rows" % len(g))

    st = get(base + "memory?" + q(memory_metric="B", **sel))
    col = [c["name"] for c in st["columns"]].index("Self Allocation Count")
    allocs = collections.Counter(device_name(dict(a)) for e, a in mem if dict(a).get("Bytes", 0) > 0)
    ok = all(sum(r[col] for r in rows) <= allocs[dev] for dev, rows in st["rows"].items())
    report("%s stats: the operator table answers (%s)" % (run, ", ".join(
        "%s %d allocations" % (d, sum(r[col] for r in rows)) for d, rows in sorted(st["rows"].items()))), ok)
    return other


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--tbexport", required=True)
    ap.add_argument("--run", action="append", required=True)
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    found = get(args.url + "/data/plugin/pytorch_profiler/runs").get("runs", [])
    for spec in args.run:
        run, _, peaks = spec.partition(":")
        want = None
        if peaks:
            want = {d: int(v) for d, v in (p.split("=") for p in peaks.split(","))}
        report("runs: the plugin lists %s" % run, run in found, "runs %s" % found)
        if run in found:
            check_run(args, run, want)
    failed = RESULTS.count(False)
    print("%d checks, %d failed" % (len(RESULTS), failed))
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
