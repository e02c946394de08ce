#!/usr/bin/env python3
"""check_collected.py: what a user reads after `tbexport -- CMD` on real,
unmodified programs, checked against the programs' own figures and the
frameworks' own profilers.  For the GPU machine (python3 with torch, jax
and tensorboard); run by `scripts/gpu_verify collected`.

Programs (test/gpu/, none of them knows about tbexport):
  gpt_fp32, gpt_bf16  train_loop.py: GPT-style training, NVTX "train_step"
                      per iteration, "measure" around the measured ones;
                      profiled with --steps nvtx:train_step and
                      --capture-range nvtx:measure; the fp32 loop also runs
                      under torch.profiler (the reference)
  jax                 jax_loop.py: a jit loop (many runtime threads); also
                      run under jax.profiler (the reference)
  two_procs           two_procs.py: two spawned processes, 300 and 600 adds
  crash_segv          crash.py: 600 adds, synchronize, SIGSEGV
  crash_abrt          crash.py --signal abrt
  killed              crash.py --kill-test, SIGKILLed after ~3 s

Checks (PASS/FAIL lines; exit 1 on any FAIL):
  - every kernel name and call count of gpt_fp32 equals torch.profiler's
    key_averages() for the same loop, names demangled as Kineto prints them
  - summary wall within 5% of the program's own loop time; steps equal to
    the measured iterations; ProfilerStep#N in the Chrome trace; step
    markers in the XSpace (jax.profiler.ProfileData); steps/* series in
    the events (EventAccumulator)
  - 0 dropped records for the JAX loop, and its kernels match jax.profiler's
  - the two-process run's summary counts both processes
  - the crashed runs hold every kernel completed before the crash
  - the SIGKILLed run holds every kernel completed one flush period (and a
    margin) before the kill; what it lost is printed
  - every XSpace opens in jax.profiler.ProfileData, every events file in
    EventAccumulator, every Chrome trace in json.load

usage: check_collected.py --tbexport PATH --logdir DIR [--flush-s 1.0]
"""
import argparse
import glob
import gzip
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.join(os.path.dirname(HERE), "test", "gpu")
fails = 0


def check(cond, what):
    global fails
    print(("PASS: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        fails += 1
    return cond


def run(cmd, timeout=300, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    print("$ %s\n  status %d in %.1f s" % (" ".join(cmd), p.returncode, time.time() - t0))
    for line in (p.stderr or "").splitlines()[-25:]:
        print("  | " + line)
    return p


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return None


def chrome_docs(logdir, run):
    docs = []
    for p in sorted(glob.glob(os.path.join(logdir, "plugins/profile", run, "*.trace.json.gz"))):
        with gzip.open(p, "rt") as f:
            docs.append((p, json.load(f)))
    return docs


def kernels_of(docs):
    out = {}
    for _, d in docs:
        for e in d["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") == "kernel":
                out[e["name"]] = out.get(e["name"], 0) + 1
    return out


def summary(tb, logdir, name, *extra):
    p = run([tb, "summary", "--logdir", logdir, "--format", "json", "--top", "0", *extra, name])
    if not check(p.returncode == 0, "%s: tbexport summary exits 0" % name):
        return None
    return json.loads(p.stdout)


def show_summary(tb, logdir, name):
    p = run([tb, "summary", "--logdir", logdir, "--top", "8", name])
    print(p.stdout)


def compare_kernels(logdir, work, dt):
    """The same loop under torch.profiler: every kernel name and call count
    of the collected run must equal key_averages()'s."""
    name = "gpt_" + dt
    ref_dir = os.path.join(work, "torch_" + dt)
    p = run([sys.executable, os.path.join(GPU, "train_loop.py"), "--dtype", dt, "--steps", "20",
             "--torch-profiler", ref_dir])
    check(p.returncode == 0, "%s under torch.profiler exits 0" % name)
    print("  program under torch.profiler:", last_json(p.stdout))
    # key_averages' CUDA rows also hold copies, memsets and GPU annotations:
    # its kernels are the names PyTorch's own trace files as cat "kernel"
    with open(os.path.join(ref_dir, "torch.pt.trace.json")) as f:
        knames = {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"}
    with open(os.path.join(ref_dir, "key_averages.json")) as f:
        ref = {k: v["calls"] for k, v in json.load(f).items() if k in knames}
    docs = chrome_docs(logdir, name)
    got = kernels_of(docs)
    missing = sorted(set(ref) - set(got))
    extra = sorted(set(got) - set(ref))
    diffc = sorted(k for k in set(ref) & set(got) if ref[k] != got[k])
    print("  kernels: %d names in key_averages, %d in tbexport" % (len(ref), len(got)))
    for k in missing[:5]:
        print("  only in key_averages: %s (%d)" % (k, ref[k]))
    for k in extra[:5]:
        print("  only in tbexport:     %s (%d)" % (k, got[k]))
    for k in diffc[:5]:
        print("  calls differ: %s: key_averages %d, tbexport %d" % (k, ref[k], got[k]))
    check(ref and not missing and not extra and not diffc,
          "%s: every kernel name and call count equals key_averages() (%d names, %d kernels)"
          % (name, len(ref), sum(ref.values())))
    check(not any(n.startswith("_Z") for n in got), "%s: no mangled kernel names in the Chrome trace" % name)


def gpt(tb, logdir, work, flush):
    res = {}
    for dt in ("fp32", "bf16"):
        name = "gpt_" + dt
        p = run([tb, "--logdir", logdir, "--run", name, "--steps", "nvtx:train_step",
                 "--capture-range", "nvtx:measure", "--label", "precision=" + dt, "--", sys.executable,
                 os.path.join(GPU, "train_loop.py"), "--dtype", dt, "--steps", "20"])
        check(p.returncode == 0, "%s: profiled program exits 0" % name)
        res[dt] = last_json(p.stdout)
        print("  program:", res[dt])
    for dt in ("fp32", "bf16"):
        compare_kernels(logdir, work, dt)
    docs = chrome_docs(logdir, "gpt_fp32")
    steps = sum(1 for _, d in docs for e in d["traceEvents"]
                if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    check(steps == 20, "gpt_fp32: 20 ProfilerStep#N annotations in the Chrome trace (%d)" % steps)
    for dt in ("fp32", "bf16"):
        s = summary(tb, logdir, "gpt_" + dt)
        if not s:
            continue
        show_summary(tb, logdir, "gpt_" + dt)
        loop = res[dt]["loop_s"] * 1e9 if res[dt] else 0
        wall = s.get("wall_ns", 0)
        check(loop > 0 and abs(wall - loop) <= 0.05 * loop,
              "gpt_%s: summary wall %.1f ms within 5%% of the loop's own %.1f ms" % (dt, wall / 1e6, loop / 1e6))
        ns = len(s.get("steps", []))
        check(ns == 20, "gpt_%s: summary has 20 steps (%d)" % (dt, ns))
        check(s.get("dropped_records", -1) == 0, "gpt_%s: 0 dropped records" % dt)
        names = [k["name"] for k in s.get("kernels", [])]
        check(names and not any(n.startswith("_Z") for n in names), "gpt_%s: summary kernel names demangled" % dt)
        classes_add_up(s, "gpt_" + dt)
    p = run([tb, "diff", "--logdir", logdir, "--top", "8", "gpt_fp32", "gpt_bf16"])
    print(p.stdout)
    check(p.returncode == 0 and "step" in p.stdout.lower(), "diff gpt_fp32 gpt_bf16 compares the steps")


def classes_add_up(s, what):
    """The kernel classes of a summary hold all GPU work: their sum is the
    kernel, memcpy and memset time; GEMM is the GPT loop's biggest class."""
    a = s["all"]
    cls = a.get("classes", {})
    total = sum(c["ns"] for c in cls.values())
    work = a["kernel_ns"] + sum(m["ns"] for m in a.get("memcpy", {}).values()) + a["memset_ns"]
    print("  %s classes: %s" % (what, {k: round(v["ns"] / 1e6, 3) for k, v in cls.items()}))
    check(total == work, "%s: kernel classes add up to the GPU work (%d = %d ns)" % (what, total, work))
    check(sum(c["count"] for c in cls.values()) >= a["kernel_count"], "%s: every kernel has a class" % what)


def compiled(tb, logdir, work):
    """torch.compile (Triton) and SDPA kernels get their classes."""
    p = run([tb, "--logdir", logdir, "--run", "compiled", "--steps", "nvtx:step", "--",
             sys.executable, os.path.join(GPU, "compiled.py")], timeout=400)
    check(p.returncode == 0, "compiled: profiled program exits 0")
    s = summary(tb, logdir, "compiled")
    if not s:
        return
    show_summary(tb, logdir, "compiled")
    # Inductor compiles in worker processes: a run of several processes,
    # whose JSON holds each host's summary and the totals.
    s = s.get("total", s)
    ks = s.get("kernels", [])
    with open(os.path.join(work, "compiled_kernels.tsv"), "w") as f:
        for k in ks:
            f.write("%s\t%s\n" % (k["class"], k["name"]))
    triton = [k for k in ks if k["name"].startswith("triton_")]
    print("  %d kernels, %d from Triton; classes %s" % (len(ks), len(triton),
          sorted({(k["name"].split("_")[1], k["class"]) for k in triton})))
    check(len(triton) > 0, "compiled: Triton kernels collected (%d)" % len(triton))
    # A pointwise kernel that only moves data (cat, transpose) is a copy.
    bad = [k["name"] for k in triton
           if (k["name"].startswith(("triton_poi_",)) and k["class"] not in ("elementwise", "copy"))
           or (k["name"].startswith(("triton_red_", "triton_per_")) and
               k["class"] not in ("reduction", "norm", "softmax"))]
    check(not bad, "compiled: Triton pointwise kernels are elementwise or copy, reductions reduction/norm/softmax %s" % bad[:3])
    att = [k for k in ks if k["class"] == "attention"]
    check(len(att) > 0, "compiled: SDPA's kernels are attention (%s)" % [k["name"][:60] for k in att[:2]])
    classes_add_up(s, "compiled")


def jax_part(tb, logdir, work):
    p = run([tb, "--logdir", logdir, "--run", "jax", "--", sys.executable,
             os.path.join(GPU, "jax_loop.py"), "--iters", "3000"], timeout=400)
    check(p.returncode == 0, "jax: profiled program exits 0")
    prog = last_json(p.stdout)
    print("  program:", prog)
    p = run([sys.executable, os.path.join(GPU, "jax_loop.py"), "--iters", "3000",
             "--jax-profiler", os.path.join(work, "jaxprof")], timeout=400)
    ref = last_json(p.stdout) or {}
    print("  under jax.profiler:", ref)
    s = summary(tb, logdir, "jax")
    if s:
        show_summary(tb, logdir, "jax")
        check(s.get("dropped_records", -1) == 0, "jax: 0 dropped records (%s)" % s.get("dropped_records"))
        k = s.get("all", {}).get("kernel_count", 0)
        r = ref.get("gpu_kernels", 0)
        # the run covers the whole program: the loop's kernels plus start-up
        # work (autotuning, initialization), which jax.profiler did not see
        check(r > 0 and r <= k <= r * 1.05,
              "jax: kernels %d: the %d jax.profiler saw in the loop, plus %d of start-up work"
              % (k, r, k - r))


def two_procs(tb, logdir):
    p = run([tb, "--logdir", logdir, "--run", "two_procs", "--", sys.executable,
             os.path.join(GPU, "two_procs.py")])
    check(p.returncode == 0, "two_procs: profiled program exits 0")
    docs = chrome_docs(logdir, "two_procs")
    per = []
    for path, d in docs:
        n = sum(1 for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"
                and "add" in e["name"].lower())
        per.append(n)
    print("  add kernels per process file:", per)
    check(sorted(x for x in per if x) == [300, 600], "two_procs: one file per process with 300 and 600 adds")
    s = summary(tb, logdir, "two_procs")
    if s:
        show_summary(tb, logdir, "two_procs")
        tot = s.get("total", s)  # a run of several host files: totals and a row per host
        adds = sum(k["calls"] for k in tot.get("kernels", []) if "add" in k["name"].lower())
        check(adds == 900, "two_procs: summary counts both processes (%d add kernels)" % adds)
        check(s.get("hosts_count") == 2 and len(s.get("hosts", [])) == 2,
              "two_procs: a row per process (%s)" % s.get("hosts_count"))


def crash(tb, logdir, sig, status):
    name = "crash_" + sig
    p = run([tb, "--logdir", logdir, "--run", name, "--", sys.executable,
             os.path.join(GPU, "crash.py"), "--signal", sig, "--adds", "600"])
    check(p.returncode == status, "%s: tbexport returns the program's status %d (%d)" % (name, status, p.returncode))
    docs = chrome_docs(logdir, name)
    adds = sum(1 for _, d in docs for e in d["traceEvents"]
               if e.get("ph") == "X" and e.get("cat") == "kernel" and "add" in e["name"].lower())
    warn = json.dumps([d.get("tbexportWarnings", []) for _, d in docs])
    print("  %s: add kernels %d of 600; warnings %s" % (name, adds, warn[:300]))
    check(adds == 600, "%s: every kernel completed before the crash is in the run (%d of 600)" % (name, adds))


def child_of(pid):
    for st in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(st) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            return int(st.split("/")[2])
    return None


def killed(tb, logdir, flush_s):
    cmd = [tb, "--logdir", logdir, "--run", "killed", "--", sys.executable,
           os.path.join(GPU, "crash.py"), "--kill-test"]
    print("$ " + " ".join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    t_kill = None
    t0 = time.time()
    child = None
    while time.time() - t0 < 60:
        line = p.stdout.readline()
        if not line:
            break
        rec = json.loads(line)
        rec["seen"] = time.time()
        lines.append(rec)
        if child is None:
            child = child_of(p.pid)
        if rec["seen"] - lines[0]["seen"] > 3 and child:
            t_kill = time.time()
            os.kill(child, signal.SIGKILL)
            break
    rest, err = p.communicate(timeout=120)
    print("  status %d; stderr tail:\n  | %s" % (p.returncode, "\n  | ".join(err.splitlines()[-6:])))
    check(p.returncode == 128 + 9, "killed: tbexport returns 137")
    docs = chrome_docs(logdir, "killed")
    got = sum(1 for _, d in docs for e in d["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == "kernel" and "add" in e["name"].lower())
    done = lines[-1]["adds"] if lines else 0
    # completed at least flush_s + 0.3 s before the kill: must all be there
    safe = max([r["adds"] for r in lines if t_kill and r["unix"] <= t_kill - flush_s - 0.3] or [0])
    print("  killed: %d add kernels completed before the kill, %d of them a flush period earlier; "
          "the run holds %d (lost %d, %.0f%% of the last %.1f s)"
          % (done, safe, got, done - got, 100.0 * (done - got) / max(done, 1), flush_s))
    check(got >= safe and got <= done, "killed: the run holds all but the last flush period (%d >= %d)" % (got, safe))


def readers(logdir):
    try:
        from jax.profiler import ProfileData
    except ImportError as e:
        check(False, "jax.profiler.ProfileData: %s" % e)
        ProfileData = None
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    gpu_of = {}
    for p in sorted(glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb"))):
        run = p.split(os.sep)[-2]
        if ProfileData is None:
            break
        pd = ProfileData.from_file(p)
        gpu = 0
        steps = 0
        for plane in pd.planes:
            for line in plane.lines:
                for ev in line.events:
                    if plane.name.startswith("/device:GPU"):
                        gpu += 1
                    elif any(n == "step_num" for n, _ in ev.stats):
                        steps += 1
        print("  %s: XSpace %s: %d GPU events, %d step markers" % (run, os.path.basename(p), gpu, steps))
        gpu_of[run] = gpu_of.get(run, 0) + gpu
        if run.startswith("gpt_"):
            check(steps == 20, "%s: 20 step markers in the XSpace (%d)" % (run, steps))
    for run, gpu in sorted(gpu_of.items()):  # a process of a run may have no GPU work
        check(gpu > 0, "%s: its XSpaces open in ProfileData, with %d GPU events" % (run, gpu))
    for d in sorted(glob.glob(os.path.join(logdir, "*"))):
        if not os.path.isdir(d) or os.path.basename(d) == "plugins":
            continue
        run = os.path.basename(d)
        ea = EventAccumulator(d, size_guidance={"scalars": 0, "tensors": 0})
        ea.Reload()
        tags = ea.Tags()
        sc = tags.get("scalars", [])
        print("  %s: %d scalar tags, e.g. %s" % (run, len(sc), sc[:6]))
        check(len(sc) > 0, "%s: EventAccumulator reads the events" % run)
        if run.startswith("gpt_"):
            st = [t for t in sc if t.startswith("steps/")]
            pts = len(ea.Scalars(st[0])) if st else 0
            check(st and pts == 20, "%s: per-step series (%s: %d points)" % (run, st[:1], pts))
            check(not any("_Z" in t for t in sc), "%s: no mangled names in the tags" % run)
            cl = [t for t in sc if t.startswith("steps/class/")]
            pts = [len(ea.Scalars(t)) for t in cl]
            check(cl and all(n == 20 for n in pts), "%s: per-step class series %s" % (run, cl))
            check("custom_scalars__config__" in tags.get("tensors", []), "%s: the comparison layout" % run)
        # The HParams session of each host, beside its summary (the run's
        # folder, or a multi-host run's folder per host and its own for
        # the job), with the experiment whose metrics are the summary's
        # tags.  (The server's accumulator: the legacy one skips values
        # that carry only plugin metadata, as the hparams records do.)
        for h in [d] + sorted(x for x in glob.glob(os.path.join(d, "*")) if os.path.isdir(x)):
            if not glob.glob(os.path.join(h, "*.tbexport-hparams")) and \
                    not glob.glob(os.path.join(h, "*.tbexport-job")):
                continue
            hea = pea.EventAccumulator(h, size_guidance={"tensors": 0})
            hea.Reload()
            hp = hea.PluginTagToContent("hparams")
            metrics = hea.PluginTagToContent("scalars")
            ok = ("_hparams_/session_start_info" in hp and "_hparams_/experiment" in hp and
                  "summary/gpu_busy_pct" in metrics)
            check(ok, "%s: HParams session %s (%s, %d scalar tags)" % (
                run, os.path.relpath(h, d), sorted(hp), len(metrics)))
        for link in glob.glob(os.path.join(d, "*.pt.trace.json.gz")):
            host = os.path.basename(link)[:-len(".pt.trace.json.gz")]
            js = os.path.join(logdir, "plugins/profile", run, host + ".trace.json.gz")
            check(os.path.exists(js) and os.path.samefile(link, js),
                  "%s: %s is the run's Chrome JSON (hard link)" % (run, os.path.basename(link)))
    for p in sorted(glob.glob(os.path.join(logdir, "plugins/profile/*/*.trace.json.gz"))):
        with gzip.open(p, "rt") as f:
            json.load(f)
    check(True, "every Chrome trace loads with json.load")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tbexport", required=True)
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--work", default="/tmp/check_collected")
    ap.add_argument("--flush-s", type=float, default=1.0)
    ap.add_argument("parts", nargs="*", default=["gpt", "jax", "two", "crash", "kill", "compiled",
                                                 "readers"])
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    t0 = time.time()
    for part in a.parts:
        print("== " + part, flush=True)
        try:
            if part == "gpt":
                gpt(a.tbexport, a.logdir, a.work, a.flush_s)
            elif part == "jax":
                jax_part(a.tbexport, a.logdir, a.work)
            elif part == "two":
                two_procs(a.tbexport, a.logdir)
            elif part == "crash":
                crash(a.tbexport, a.logdir, "segv", 128 + 11)
                crash(a.tbexport, a.logdir, "abrt", 128 + 6)
            elif part == "kill":
                killed(a.tbexport, a.logdir, a.flush_s)
            elif part == "compiled":
                compiled(a.tbexport, a.logdir, a.work)
            elif part == "readers":
                readers(a.logdir)
        except Exception as e:  # a broken part is a failure, and the others still run
            check(False, "%s: %s: %s" % (part, type(e).__name__, e))
    print("== check_collected: %d failure(s) in %.0f s" % (fails, time.time() - t0))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
