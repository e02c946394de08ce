#!/usr/bin/env python3
"""check_profile.py: checks runs written by `tbexport import` with the real
clients (run on the GPU machine: python3 with jax, tensorboard).

For every run NAME=SOURCE (SOURCE is the trace the run was imported from):
  1. xplane: jax.profiler.ProfileData.from_file(<host>.xplane.pb) loads; prints
     plane names, line names, kernel counts and per-kernel total durations,
     and compares them with the same figures computed independently from
     SOURCE (Python's json for Kineto/Chrome JSON, ProfileData for an XSpace,
     sqlite3 for an Nsight Systems export): equal counts, equal totals.
     Every kernel event carries kernel_details and an integer correlation_id.
  2. json: Python's json.load reads <host>.trace.json.gz; event counts per
     category equal the source's (Kineto sources), kernel counts equal.
  3. events: TensorBoard's EventAccumulator reads <logdir>/<run>; prints the
     scalars; summary/kernel_count and summary/kernel_time_ms equal the
     source's; for the fp32/bf16 pair, the scalars differ the way the traces
     do (same sign of the difference, same ratio within 1%).
Prints PASS/FAIL per check and exits 1 if any check failed.

usage:
  check_profile.py [--logdir DIR] [--tbexport BIN] [RUN=SOURCE ...]
With --tbexport, each SOURCE is first imported as RUN (--force).  With no
RUN=SOURCE, the runs are fp32 and bf16 from the golden CNN traces of this
repository (samples/traces/ or test/data/kineto/).
"""
import argparse
import collections
import glob
import gzip
import json
import os
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = []


def check(name, ok, detail=""):
    RESULTS.append(bool(ok))
    print("%s  %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""))
    return ok


def default_runs():
    runs = []
    for name in ("fp32", "bf16"):
        for d in ("samples/traces", "test/data/kineto"):
            p = os.path.join(ROOT, d, "h200_cnn_%s.pt.trace.json" % name)
            if os.path.exists(p):
                runs.append((name, p))
                break
    return runs


# ---------- independent figures from the source trace ----------

def sniff(path):
    with open(path, "rb") as f:
        head = f.read(16)
    if head[:2] == b"\x1f\x8b":
        return "json"
    if head.startswith(b"SQLite format 3"):
        return "nsys"
    if head.lstrip()[:1] in (b"{", b"["):
        return "json"
    return "xspace"


def load_json(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        d = json.load(f)
    return d if isinstance(d, dict) else {"traceEvents": d}


def json_kernels(d):
    """{name: [count, total_ns]} of the Kineto kernel events."""
    k = collections.defaultdict(lambda: [0, 0])
    for e in d["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            k[e["name"]][0] += 1
            k[e["name"]][1] += int(round(float(e.get("dur", 0)) * 1000))
    return dict(k)


def json_categories(d):
    c = collections.Counter()
    for e in d["traceEvents"]:
        if e.get("ph") == "X":
            c[e.get("cat")] += 1
        elif e.get("ph") == "i" and e.get("name") == "[memory]":
            c["[memory]"] += 1
    return c


def stat_dict(ev):
    out = {}
    for s in ev.stats:
        try:
            k, v = s
        except (TypeError, ValueError):
            k, v = getattr(s, "name", None), getattr(s, "value", None)
        out[k] = v
    return out


def xspace_kernels(path):
    """{name: [count, total_ns]} of events with kernel_details on GPU planes,
    with ProfileData; also the plane/line listing and the stat checks."""
    from jax.profiler import ProfileData
    pd = ProfileData.from_file(path)
    k = collections.defaultdict(lambda: [0, 0.0])
    listing, missing_corr, bad_corr = [], 0, 0
    for plane in pd.planes:
        lines = list(plane.lines)
        listing.append((plane.name, [(l.name, len(list(l.events))) for l in lines]))
        if not plane.name.startswith("/device:GPU:"):
            continue
        for line in lines:
            for ev in line.events:
                st = stat_dict(ev)
                if "kernel_details" not in st:
                    continue
                k[ev.name][0] += 1
                k[ev.name][1] += float(ev.duration_ns)
                if "correlation_id" not in st:
                    missing_corr += 1
                elif not isinstance(st["correlation_id"], int) or st["correlation_id"] <= 0:
                    bad_corr += 1
    return dict(k), listing, missing_corr, bad_corr


def nsys_kernels(path):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    cols = [r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    name_col = "demangledName" if "demangledName" in cols else "shortName"
    k = {}
    for name, n, tot in db.execute(
            "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.%s GROUP BY s.value" % name_col):
        k[name] = [n, tot]
    return k


def source_kernels(src):
    kind = sniff(src)
    if kind == "json":
        return kind, json_kernels(load_json(src))
    if kind == "nsys":
        return kind, nsys_kernels(src)
    return kind, xspace_kernels(src)[0]


def compare_kernels(label, ours, theirs, by_name=True):
    n_ours = sum(v[0] for v in ours.values())
    n_src = sum(v[0] for v in theirs.values())
    t_ours = sum(v[1] for v in ours.values())
    t_src = sum(v[1] for v in theirs.values())
    check("%s kernel count" % label, n_ours == n_src, "%d (source %d)" % (n_ours, n_src))
    check("%s kernel time total" % label, abs(t_ours - t_src) <= max(1.0, 1e-9 * t_src),
          "%.0f ns (source %.0f ns)" % (t_ours, t_src))
    if by_name:
        diff = [n for n in set(ours) | set(theirs)
                if n not in ours or n not in theirs or ours[n][0] != theirs[n][0]
                or abs(ours[n][1] - theirs[n][1]) > max(1.0, 1e-9 * theirs[n][1])]
        check("%s per-kernel counts and durations" % label, not diff,
              "%d kernel names equal" % len(theirs) if not diff else "differ: %s" % diff[:3])


# ---------- the three checks ----------

def check_xplane(run, logdir, src, src_kind, src_k):
    files = glob.glob(os.path.join(logdir, "plugins", "profile", run, "*.xplane.pb"))
    if not check("[%s] xplane file" % run, len(files) == 1, ", ".join(files) or "none"):
        return
    try:
        ours, listing, missing_corr, bad_corr = xspace_kernels(files[0])
    except Exception as e:  # noqa: BLE001 - any failure to load is the finding
        check("[%s] ProfileData.from_file" % run, False, repr(e))
        return
    check("[%s] ProfileData.from_file" % run, True, files[0])
    for pname, lines in listing:
        print("    plane %-24s %d lines" % (pname, len(lines)))
        for lname, n in lines[:12]:
            print("      line %-50s %7d events" % (lname[:50], n))
        if len(lines) > 12:
            print("      ... %d more lines" % (len(lines) - 12))
    top = sorted(ours.items(), key=lambda kv: -kv[1][1])[:10]
    print("    top kernels (count, total us):")
    for name, (n, tot) in top:
        print("      %6d %12.3f  %s" % (n, tot / 1000.0, name[:90]))
    check("[%s] GPU planes present" % run, any(p.startswith("/device:GPU:") for p, _ in listing))
    check("[%s] /host:CPU plane present" % run, any(p == "/host:CPU" for p, _ in listing))
    check("[%s] kernels carry kernel_details and integer correlation_id" % run,
          ours and missing_corr == 0 and bad_corr == 0,
          "%d without, %d not a positive int" % (missing_corr, bad_corr))
    compare_kernels("[%s] xplane vs source" % run, ours, src_k, by_name=src_kind != "nsys")


def check_json(run, logdir, src, src_kind, src_k):
    files = glob.glob(os.path.join(logdir, "plugins", "profile", run, "*.trace.json.gz"))
    if not check("[%s] trace.json.gz file" % run, len(files) == 1, ", ".join(files) or "none"):
        return
    try:
        with gzip.open(files[0], "rt", encoding="utf-8") as f:
            out = json.load(f)
    except Exception as e:  # noqa: BLE001
        check("[%s] json.load" % run, False, repr(e))
        return
    check("[%s] json.load" % run, True, "%d events" % len(out.get("traceEvents", [])))
    co = json_categories(out)
    print("    categories: %s" % dict(sorted(co.items(), key=lambda kv: str(kv[0]))))
    if src_kind == "json":
        cs = json_categories(load_json(src))
        wanted = [c for c in cs if c in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
                                           "cpu_op", "user_annotation", "gpu_user_annotation",
                                           "python_function", "cuda_sync", "[memory]")]
        bad = {c: (co.get(c, 0), cs[c]) for c in wanted if co.get(c, 0) != cs[c]}
        check("[%s] counts per category equal the source's" % run, not bad,
              "%d categories" % len(wanted) if not bad else "ours/source: %s" % bad)
    compare_kernels("[%s] json vs source" % run, json_kernels(out), src_k, by_name=src_kind != "nsys")
    ends = collections.defaultdict(set)
    for e in out["traceEvents"]:
        if e.get("ph") in ("s", "f"):
            ends[(e.get("cat"), e.get("id"))].add(e["ph"])
    check("[%s] every flow has both ends" % run, all(v == {"s", "f"} for v in ends.values()),
          "%d flows" % len(ends))


def scalars_of(path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(path, size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    tags = ea.Tags()
    out = {}
    for t in tags.get("scalars", []):
        out[t] = [(s.step, s.value) for s in ea.Scalars(t)]
    if tags.get("tensors"):
        from tensorboard.util import tensor_util
        for t in tags["tensors"]:
            vals = []
            for ev in ea.Tensors(t):
                arr = tensor_util.make_ndarray(ev.tensor_proto)
                if arr.dtype.kind in "fiu" and arr.size == 1:
                    vals.append((ev.step, float(arr.reshape(()))))
            if vals:
                out[t] = vals
    return out


def check_events(run, logdir, src_k):
    path = os.path.join(logdir, run)
    try:
        sc = scalars_of(path)
    except Exception as e:  # noqa: BLE001
        check("[%s] EventAccumulator" % run, False, repr(e))
        return None
    if not check("[%s] EventAccumulator reads scalars" % run, bool(sc), "%d tags in %s" % (len(sc), path)):
        return None
    for tag in sorted(sc):
        vals = sc[tag]
        shown = ", ".join("%d:%.6g" % sv for sv in vals[:6]) + (" ..." if len(vals) > 6 else "")
        print("    %-44s %s" % (tag[:44], shown))
    n_src = sum(v[0] for v in src_k.values())
    ms_src = sum(v[1] for v in src_k.values()) / 1e6
    kc = sc.get("summary/kernel_count", [(0, None)])[-1][1]
    km = sc.get("summary/kernel_time_ms", [(0, None)])[-1][1]
    check("[%s] summary/kernel_count equals the source" % run, kc is not None and round(kc) == n_src,
          "%s (source %d)" % (kc, n_src))
    check("[%s] summary/kernel_time_ms equals the source" % run,
          km is not None and abs(km - ms_src) <= 1e-4 * max(ms_src, 1e-9) + 1e-6,
          "%s (source %.6f)" % (km, ms_src))
    return {"kernel_count": kc, "kernel_time_ms": km, "src_count": n_src, "src_ms": ms_src}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logdir", default="log_dir")
    ap.add_argument("--tbexport", help="tbexport binary: import each SOURCE as RUN first")
    ap.add_argument("runs", nargs="*", metavar="RUN=SOURCE")
    a = ap.parse_args()
    runs = [tuple(r.split("=", 1)) for r in a.runs] if a.runs else default_runs()
    if not runs:
        print("no runs given and the golden CNN traces were not found", file=sys.stderr)
        return 2
    if a.tbexport:
        for run, src in runs:
            cmd = [a.tbexport, "import", src, "--logdir", a.logdir, "--run", run, "--force", "--quiet"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            check("[%s] tbexport import %s" % (run, os.path.basename(src)), p.returncode == 0,
                  (p.stdout + p.stderr).strip().replace("\n", "; "))
    summary = {}
    for run, src in runs:
        print("\n== run %s (source %s)" % (run, src))
        src_kind, src_k = source_kernels(src)
        print("    source: %s, %d kernels, %d names, %.3f ms" % (
            src_kind, sum(v[0] for v in src_k.values()), len(src_k), sum(v[1] for v in src_k.values()) / 1e6))
        check_xplane(run, a.logdir, src, src_kind, src_k)
        check_json(run, a.logdir, src, src_kind, src_k)
        summary[run] = check_events(run, a.logdir, src_k)
    if summary.get("fp32") and summary.get("bf16"):
        f, b = summary["fp32"], summary["bf16"]
        print("\n== fp32 vs bf16")
        for key, src_key in (("kernel_time_ms", "src_ms"), ("kernel_count", "src_count")):
            ours = (b[key] / f[key]) if f[key] else float("nan")
            src = (b[src_key] / f[src_key]) if f[src_key] else float("nan")
            print("    %-16s fp32 %-12.6g bf16 %-12.6g ratio %.4f (source ratio %.4f)" % (key, f[key], b[key], ours, src))
            check("fp32/bf16 %s differ as the traces do" % key,
                  abs(ours - src) <= 0.01 * abs(src) and (ours > 1) == (src > 1),
                  "ratio %.4f vs source %.4f" % (ours, src))
    npass, nfail = sum(RESULTS), len(RESULTS) - sum(RESULTS)
    print("\n%d checks: %d PASS, %d FAIL" % (len(RESULTS), npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
