#!/usr/bin/env python3
"""check_dist_clients.py: the distributed view of our Chrome JSON, as the
two clients PyTorch users read a multi-rank run with: the PyTorch Profiler
TensorBoard plugin (torch-tb-profiler 0.4.3, frozen) through its HTTP data
API, and Holistic Trace Analysis (HTA) through its Python API.

usage: check_dist_clients.py plugin --url URL --logdir DIR --tbexport BIN
                             --nccl RUN [--nccl RUN ...] [--gloo RUN ...]
       check_dist_clients.py hta --logdir DIR --tbexport BIN
                             --nccl RUN[:STRAGGLER] [...] [--gloo RUN ...]

DIR holds runs as tbexport writes them: each rank's Chrome JSON at
plugins/profile/RUN/<host>.trace.json.gz, the plugin's link at
RUN/<host>.pt.trace.json.gz.  An --nccl run is a pair of ranks whose GPUs
communicate through NCCL kernels; a --gloo run a pair whose do not.  What
each client shows is checked against figures worked out here from our
files under that client's own rules (read from its source), and against
`BIN summary --format json`:

  ours       each rank's distributedInfo has its rank, the world size 2
             and, for --nccl, "backend": "nccl", spelled so that HTA's
             rank pattern (`"rank": N`) finds it; every NCCL kernel's
             External id names an nccl:<op> operator whose span is its
             launching call's; a --gloo rank says in one warning line that
             its communication is on the CPU (or absent), an --nccl rank
             says nothing of the kind;
  plugin     the run has the Distributed view (a --gloo run has none);
             gpuinfo names each rank's GPU from its deviceProperties;
             commops lists per rank each nccl:<op> with its calls, total
             latency and data transfer time (the plugin's rule: a
             collective's ranges are its operator's and its kernels', the
             transfer time of each range is the shortest across ranks),
             and the kernels of those rows add up to the summary's comm
             time of the rank; waittime gives per step the transfer and
             synchronizing time of that rule, with some rank waiting in
             every step; overlap gives per step the computation,
             communication, their overlap and the rest (the plugin's role
             ranges: kernels of no collective; collective kernels and
             operators); a --gloo run has no Distributed view, unless
             PyTorch recorded its gloo:* collectives (a real gloo job): then
             the view is theirs, on the CPU, with their calls per rank;
  hta        TraceAnalysis finds ranks 0 and 1; get_comm_comp_overlap is a
             number for each rank, equal to HTA's rule worked out here
             (kernels from their start rounded up to their end rounded
             down, in whole microseconds; communication by HTA's name
             pattern; merged overlap over merged communication); with
             RUN:STRAGGLER, the all-reduce kernels of that rank start later
             than the others' in every step and get_potential_stragglers
             (one candidate) names it; a --gloo run has no communication
             kernel (HTA's overlap is NaN there: nothing to analyse, which
             our warning says).

Prints PASS/FAIL per check; exits 1 if any failed, 2 on bad usage.
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
import urllib.parse
import urllib.request

RESULTS = []
NCCL_OPS = {"nccl:broadcast", "nccl:reduce", "nccl:all_reduce", "nccl:all_gather", "nccl:reduce_scatter"}
GLOO_OPS = {"gloo:broadcast", "gloo:reduce", "gloo:all_reduce", "gloo:all_gather", "gloo:reduce_scatter"}
NOTE = "no NCCL kernel in this rank's trace"


def report(name, ok, detail=""):
    RESULTS.append(bool(ok))
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""), flush=True)


def close(a, b, tol=0.01):
    return abs(a - b) <= tol


# ---- ranges ----

def merge(rs):
    out = []
    for s, e in sorted(rs):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def inter(a, b):
    a, b, out = merge(a), merge(b), []
    i = j = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def total(rs):
    return sum(e - s for s, e in merge(rs))


# ---- our files ----

class Rank:
    """One rank's Chrome JSON."""

    def __init__(self, path):
        with gzip.open(path, "rt") as f:
            self.text = f.read()
        self.doc = json.loads(self.text)
        self.path = path
        self.host = os.path.basename(path).split(".trace.json")[0]
        self.dist = self.doc.get("distributedInfo", {})
        ev = [e for e in self.doc["traceEvents"] if e.get("ph") == "X"]
        self.kernels = [e for e in ev if e.get("cat") == "kernel"]
        self.calls = {e["args"]["correlation"]: e for e in ev
                      if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
        self.comm_ops = [e for e in ev if e.get("cat") in ("cpu_op", "user_annotation")
                         and e["name"] in NCCL_OPS]
        self.by_ext = {e["args"]["External id"]: e for e in self.comm_ops if "External id" in e.get("args", {})}
        self.gloo_ops = [e for e in ev if e.get("cat") in ("cpu_op", "user_annotation") and e["name"] in GLOO_OPS]
        self.steps = sorted(((e["ts"], e["ts"] + e["dur"], e["name"].split("#")[1]) for e in ev
                             if e["name"].startswith("ProfilerStep#")))
        self.warnings = self.doc.get("tbexportWarnings", [])

    def comm_kernels(self, op=None):
        out = []
        for k in self.kernels:
            o = self.by_ext.get(k.get("args", {}).get("External id"))
            if o is not None and (op is None or o is op):
                out.append(k)
        return out

    def nccl_kernels(self):
        return [k for k in self.kernels if re.match(r"^(void )?nccl", k["name"])]


def ranks_of(logdir, run):
    files = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", run, "*.trace.json.gz")))
    return [Rank(f) for f in files]


def run_summary(args, run):
    out = subprocess.run([args.tbexport, "summary", "--format", "json", "--top", "0", "--logdir",
                          args.logdir, run], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("tbexport summary %s failed: %s" % (run, out.stderr.strip()))
    return json.loads(out.stdout)


def check_ours(args, run, nccl):
    ranks = ranks_of(args.logdir, run)
    report("%s: two ranks" % run, len(ranks) == 2, ", ".join(r.host for r in ranks))
    summ = run_summary(args, run)
    by_host = {h["host"]: h for h in summ["hosts"]}
    for r in ranks:
        d = r.dist
        backend = "nccl" if nccl else "gloo" if r.gloo_ops else None  # what the trace tells
        want = {"rank", "world_size"} | ({"backend"} if backend else set())
        report("%s/%s: distributedInfo" % (run, r.host),
               set(d) == want and d["world_size"] == 2 and d.get("backend") == backend
               and re.search(r'"rank":\s+%d\b' % d["rank"], r.text) is not None, json.dumps(d))
        notes = [w for w in r.warnings if NOTE in w]
        hw = [w for w in by_host.get(r.host, {}).get("warnings", []) if NOTE in w]
        if nccl:
            report("%s/%s: no note" % (run, r.host), not notes and not hw, "; ".join(notes + hw))
            kernels = r.nccl_kernels()
            bad = []
            for k in kernels:
                o = r.by_ext.get(k["args"].get("External id"))
                c = r.calls.get(k["args"].get("correlation"))
                if o is None or c is None or c["args"].get("External id") != o["args"]["External id"] \
                        or (c["pid"], c["tid"]) != (o["pid"], o["tid"]) \
                        or not (o["ts"] <= c["ts"] and c["ts"] + c["dur"] <= o["ts"] + o["dur"]):
                    bad.append(k["name"][:40])
            report("%s/%s: every NCCL kernel names the nccl:<op> around its launch" % (run, r.host),
                   kernels and not bad, "%d kernels, %d not: %s" % (len(kernels), len(bad), bad[:3]))
        else:
            report("%s/%s: one line says the communication is on the CPU" % (run, r.host),
                   len(notes) == 1 and "on the CPU" in notes[0] and len(hw) == 1 and not r.nccl_kernels(),
                   notes[0] if notes else "no note")
    return ranks, summ


# ---- the plugin ----

def get(url):
    with urllib.request.urlopen(url, timeout=300) as r:
        raw = r.read()
        if r.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        return json.loads(raw)


def comm_nodes(r):
    """The plugin's communication nodes of rank r (communication.py): per
    nccl operator in time order, its ranges (the operator's, its
    kernels'), its step."""
    nodes = []
    for o in sorted(r.comm_ops, key=lambda o: (o["ts"], -(o["ts"] + o["dur"]))):
        rs = [(o["ts"], o["ts"] + o["dur"])] + [(k["ts"], k["ts"] + k["dur"]) for k in r.comm_kernels(o)]
        rs.sort(key=lambda x: (x[0], -x[1]))
        step = next((n for s, e, n in r.steps if o["ts"] >= s and o["ts"] + o["dur"] <= e), None)
        nodes.append({"name": o["name"], "ranges": rs, "step": step, "real": []})
    return nodes


def plugin_expect(ranks):
    """waittime, commops and overlap as the plugin computes them from our
    files (communication.py, loader.py, overall_parser.py)."""
    nodes = [comm_nodes(r) for r in ranks]
    for i in range(len(nodes[0])):
        for j in range(len(nodes[0][i]["ranges"])):
            shortest = min(n[i]["ranges"][j][1] - n[i]["ranges"][j][0] for n in nodes)
            for n in nodes:
                end = n[i]["ranges"][j][1]
                n[i]["real"].append((end - shortest, end))
    wait, ops, overlap = {}, {}, {}
    for r, ns in zip(ranks, nodes):
        per_step, per_op = {}, {}
        for n in ns:
            st = per_step.setdefault(n["step"], [[], []])
            st[0] += n["ranges"]
            st[1] += n["real"]
            op = per_op.setdefault(n["name"], [0, [], []])
            op[0] += 1
            op[1] += n["ranges"]
            op[2] += n["real"]
        wait[r.host] = {s: (total(v[1]), total(v[0]) - total(v[1])) for s, v in per_step.items()}
        ops[r.host] = {name: (v[0], total(v[1]), total(v[2])) for name, v in per_op.items()}
        comm_ext = set(r.by_ext)
        kern = [(k["ts"], k["ts"] + k["dur"]) for k in r.kernels
                if k.get("args", {}).get("External id") not in comm_ext]
        comm = [(k["ts"], k["ts"] + k["dur"]) for k in r.comm_kernels()] + \
               [(o["ts"], o["ts"] + o["dur"]) for o in r.comm_ops]
        both = inter(kern, comm)
        overlap[r.host] = {}
        for s, e, name in r.steps:
            comp, com, ovl = total(inter([(s, e)], kern)), total(inter([(s, e)], comm)), total(inter([(s, e)], both))
            overlap[r.host][name] = (comp - ovl, ovl, com - ovl, (e - s) + ovl - comp - com)
    return wait, ops, overlap


def check_plugin(args):
    base = args.url.rstrip("/") + "/data/plugin/pytorch_profiler/"
    runs = get(base + "runs")["runs"]
    for run in args.nccl + args.gloo:
        report("plugin lists %s" % run, run in runs, str(runs))
    for run in args.gloo:
        ranks, _ = check_ours(args, run, False)
        views = get(base + "views?" + urllib.parse.urlencode({"run": run}))
        if not any(r.gloo_ops for r in ranks):
            report("%s: no Distributed view (no communication recorded)" % run, "Distributed" not in views,
                   str(views))
            continue
        # PyTorch's gloo:* records: the plugin's view of the CPU's collectives
        report("%s: Distributed view of the gloo:* records" % run, "Distributed" in views, str(views))
        if "Distributed" not in views:
            continue
        got = get(base + "distributed/commops?" + urllib.parse.urlencode({"run": run, "span": "default"}))["data"]
        for r in ranks:
            want = {}
            for o in r.gloo_ops:
                if any(s <= o["ts"] and o["ts"] + o["dur"] <= e for s, e, _ in r.steps):
                    want[o["name"]] = want.get(o["name"], 0) + 1
            rows = {row[0]: row[1] for row in got.get(r.host, {}).get("rows", [])}
            report("%s/%s: commops are the gloo:* records in the steps" % (run, r.host), rows == want,
                   "plugin %s, ours %s" % (rows, want))
    for run in args.nccl:
        ranks, summ = check_ours(args, run, True)
        q = urllib.parse.urlencode({"run": run, "span": "default"})
        views = get(base + "views?" + urllib.parse.urlencode({"run": run}))
        report("%s: Distributed view" % run, "Distributed" in views, str(views))
        if "Distributed" not in views:
            continue
        info = get(base + "distributed/gpuinfo?" + q)["data"]
        for r in ranks:
            dev = r.dist["rank"]
            props = next((p for p in r.doc["deviceProperties"] if p["id"] == dev), {})
            got = [g for node in info.values() for proc in node.values() for k, g in proc.items() if k == "GPU%d" % dev]
            ok = any(g.get("Name") == props.get("name") and
                     g.get("Compute Capability") == "%s.%s" % (props.get("computeMajor"), props.get("computeMinor"))
                     for g in got)
            report("%s/%s: gpuinfo GPU%d from deviceProperties" % (run, r.host, dev), ok, json.dumps(got))
        wait, ops, overlap = plugin_expect(ranks)
        got_ops = get(base + "distributed/commops?" + q)["data"]
        by_host = {h["host"]: h for h in summ["hosts"]}
        for r in ranks:
            rows = {row[0]: row for row in got_ops.get(r.host, {}).get("rows", [])}
            want = ops[r.host]
            ok = set(rows) == set(want) and all(
                rows[n][1] == want[n][0] and close(rows[n][4], want[n][1]) and close(rows[n][6], want[n][2])
                for n in want)
            report("%s/%s: commops calls, latency, transfer" % (run, r.host), ok,
                   "plugin %s, ours %s" % ({n: (v[1], v[4], v[6]) for n, v in rows.items()}, want))
            kern_us = sum(k["dur"] for k in r.comm_kernels())
            report("%s/%s: the collectives' kernels are the summary's comm time" % (run, r.host),
                   close(kern_us * 1000, by_host[r.host]["comm_ns"], 1.0),
                   "%.3f us, summary %d ns" % (kern_us, by_host[r.host]["comm_ns"]))
        got_wait = get(base + "distributed/waittime?" + q)["data"]
        ok, waits = True, True
        for r in ranks:
            for step, (transfer, sync) in wait[r.host].items():
                g = got_wait.get(step, {}).get(r.host)
                ok = ok and g is not None and close(g[0], transfer) and close(g[1], sync)
        for step in wait[ranks[0].host]:
            waits = waits and max(wait[r.host][step][1] for r in ranks) > 0
        report("%s: waittime per step and rank" % run, ok,
               "plugin %s, ours %s" % ({k: v for k, v in got_wait.items() if k != "all"}, wait))
        report("%s: a rank waits for the other in every step" % run, waits, str(wait))
        got_ovl = get(base + "distributed/overlap?" + q)["data"]
        ok = True
        for r in ranks:
            for step, v in overlap[r.host].items():
                g = got_ovl.get(step, {}).get(r.host)
                ok = ok and g is not None and all(close(a, b) for a, b in zip(g, v))
        report("%s: overlap per step and rank" % run, ok,
               "plugin %s, ours %s" % ({k: v for k, v in got_ovl.items() if k != "all"}, overlap))


# ---- HTA ----

HTA_COMM = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
HTA_MEM = re.compile(r"^(Memcpy|Memset|dma)")


def hta_overlap(r):
    """HTA's comp/comm overlap percentage from our file
    (communication_analysis.py), its rounding (trace_parser.py)."""
    comm, comp = [], []
    for k in r.kernels:
        if k.get("args", {}).get("correlation") not in r.calls:
            continue
        s, e = math.ceil(k["ts"]), math.floor(k["ts"] + k["dur"])
        if HTA_COMM.match(k["name"]):
            comm.append((s, e))
        elif not HTA_MEM.match(k["name"]):
            comp.append((s, e))
    c = total(comm)
    return round(100 * total(inter(comp, comm)) / c, 2) if c else float("nan")


def check_hta(args):
    import logging
    logging.getLogger().setLevel(logging.ERROR)
    from hta.trace_analysis import TraceAnalysis
    for spec in args.nccl:
        run, _, straggler = spec.partition(":")
        ranks, _ = check_ours(args, run, True)
        a = TraceAnalysis(trace_dir=os.path.join(args.logdir, "plugins", "profile", run))
        got = sorted(a.t.get_all_traces().keys())
        report("%s: HTA finds ranks 0 and 1" % run, got == [0, 1], str(got))
        ov = a.get_comm_comp_overlap(visualize=False)
        got = {int(row["rank"]): float(row["comp_comm_overlap_pctg"]) for _, row in ov.iterrows()}
        want = {r.dist["rank"]: hta_overlap(r) for r in ranks}
        report("%s: HTA comm/compute overlap is a number" % run,
               got and all(not math.isnan(v) for v in got.values()), str(got))
        report("%s: HTA overlap is ours under its rules" % run,
               set(got) == set(want) and all(close(got[k], want[k]) for k in want), "HTA %s, ours %s" % (got, want))
        if not straggler:
            continue
        s = int(straggler)
        late = True
        by_rank = {r.dist["rank"]: r for r in ranks}
        for step_s, step_e, _ in by_rank[s].steps:
            def start(rk):
                ks = [k["ts"] for k in rk.comm_kernels() if "AllReduce" in k["name"]
                      and step_s <= k["ts"] < step_e]
                return max(ks) if ks else None
            mine = start(by_rank[s])
            others = [start(r) for k, r in by_rank.items() if k != s]
            late = late and mine is not None and all(o is not None and mine > o for o in others)
        report("%s: rank %d's all-reduce starts last in every step" % (run, s), late)
        got = a.get_potential_stragglers(num_candidates=1)
        report("%s: HTA's straggler analysis names rank %d" % (run, s), list(got) == [s], str(got))
    for run in args.gloo:
        ranks, _ = check_ours(args, run, False)
        a = TraceAnalysis(trace_dir=os.path.join(args.logdir, "plugins", "profile", run))
        ov = a.get_comm_comp_overlap(visualize=False)
        vals = [float(v) for v in ov["comp_comm_overlap_pctg"]]
        report("%s: no GPU communication for HTA (overlap NaN), as our note says" % run,
               len(vals) == 2 and all(math.isnan(v) for v in vals) and
               all(math.isnan(hta_overlap(r)) for r in ranks), str(vals))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["plugin", "hta"])
    p.add_argument("--url")
    p.add_argument("--logdir", required=True)
    p.add_argument("--tbexport", required=True)
    p.add_argument("--nccl", action="append", default=[])
    p.add_argument("--gloo", action="append", default=[])
    args = p.parse_args()
    if not args.nccl or (args.mode == "plugin" and not args.url):
        p.print_usage()
        return 2
    if args.mode == "plugin":
        args.nccl = [n.split(":")[0] for n in args.nccl]
        check_plugin(args)
    else:
        check_hta(args)
    failed = RESULTS.count(False)
    print("%s: %d checks, %d failed" % (args.mode, len(RESULTS), failed))
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(main())
