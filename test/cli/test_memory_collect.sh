#!/usr/bin/env bash
# test_memory_collect.sh: CUDA memory of an unmodified program, collected by
# default, without a GPU.
#
# `tbexport -- collect_memory_prog` (test/stress/collect_memory_prog.c)
# with the stand-in libcupti
# (test/stress/collect_fake_libcupti.c, TBEXPORT_CUPTI_LIB) and the stand-in
# NVML (test/stress/collect_fake_nvml.c, TBEXPORT_NVML_LIB): the program
# makes CUPTI's memory records (MEMORY2) of known allocations and frees
# (device memory on two GPUs, pinned host memory, managed memory, an async
# pool's), then a planted leak (one 64 MiB allocation per step over 20
# steps marked with tbe_profiler_step, never freed), and tells the fake
# NVML the device memory it holds.  The run's Chrome JSON must hold:
#   - a Kineto "[memory]" instant per record, with the Bytes (negative for
#     a free), Addr and Device Id emitted; pinned host memory on the host
#     (Device Id -1, Device Type 0), never on a GPU;
#   - the leak as 20 allocations of 64 MiB, one in each step, none freed;
#   - the running totals (Total Allocated, from the memory model) of GPU 0
#     as the sums of what was emitted, and Total Reserved equal to them;
#   - NVML's samples as counter tracks "device memory used (NVML)" of
#     GPU 0 whose values are those the program set, in order; where NVML
#     refuses the per-process list, "device memory used, all processes
#     (NVML)"; where it refuses to start, a warning and the run otherwise
#     the same;
#   - with --trace cuda,nvtx, no memory event and no NVML track.
# usage: test_memory_collect.sh TBEXPORT DATA_DIR
set -u
tb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
bindir=$(dirname "$tb")
fake=$bindir/libcollect_fake_libcupti.so
nvml=$bindir/libcollect_fake_nvml.so
libtbe=$bindir/libtbexport.so
if [ ! -f "$fake" ]; then
  grep -q "collector was not built" <("$tb" --logdir x -- true 2>&1) && {
    echo "test_memory_collect: no collector in this build"
    exit 0
  }
  fail "no $fake in a build with the collector"
fi
[ -f "$nvml" ] || fail "no $nvml beside tbexport"
[ -f "$libtbe" ] || fail "no $libtbe beside tbexport"
prog=$bindir/collect_memory_prog
[ -x "$prog" ] || fail "no $prog beside tbexport"
py=${TBE_TEST_PYTHON:-python3}
command -v "$py" >/dev/null || fail "no $py"
export TBEXPORT_CUPTI_LIB=$fake TBEXPORT_NVML_LIB=$nvml TBE_TEST_LIBTBEXPORT=$libtbe

cat >check.py <<'EOF'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
emitted = [json.loads(l) for l in open(sys.argv[2])]
mode = sys.argv[3]  # proc | device | noinit | off
ev = d["traceEvents"]
bad = []
mem = [e for e in ev if e.get("name") == "[memory]"]
if mode == "off":
    if mem:
        bad.append("--trace cuda,nvtx: %d [memory] events" % len(mem))
    if any("NVML" in e.get("name", "") for e in ev):
        bad.append("--trace cuda,nvtx: an NVML counter")
    for b in bad: print("  " + b)
    sys.exit(1 if bad else 0)
mem.sort(key=lambda e: float(e["ts"]))
if len(mem) != len(emitted):
    bad.append("%d [memory] events, %d records emitted" % (len(mem), len(emitted)))
for e, (op, kind, addr, nbytes, dev, pool) in zip(mem, emitted):
    a = e.get("args", {})
    want = {"Bytes": nbytes if op == 1 else -nbytes, "Addr": addr,
            "Device Id": -1 if kind in (1, 2) else dev, "Device Type": 0 if kind in (1, 2) else 1}
    got = {k: a.get(k) for k in want}
    if got != want:
        bad.append("record %r: %r" % ([op, kind, hex(addr), nbytes, dev], got))
    # on the allocating call's thread (the process's pid) when its API
    # record is there (all but GPU 1's), else on the GPU's row (pid = GPU)
    on_thread = isinstance(e.get("pid"), int) and e["pid"] > 64
    if on_thread != (dev != 1):
        bad.append("record %r on pid %r: want %s" % ([op, kind, hex(addr), nbytes, dev], e.get("pid"),
                                                     "its call's thread" if dev != 1 else "GPU 1's row"))
    if e.get("ph") not in ("i", "I"):
        bad.append("[memory] is not an instant: %r" % e.get("ph"))
# the leak: 20 allocations of 64 MiB on GPU 0, one a step, none freed
steps = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in ev
               if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "Trace") and
               str(e.get("name", "")).startswith("ProfilerStep#"))
leak = [e for e in mem if e["args"].get("Bytes") == 64 << 20]
freed = {e["args"]["Addr"] for e in mem if e["args"].get("Bytes", 0) < 0}
if len(leak) != 20 or any(e["args"]["Addr"] in freed for e in leak):
    bad.append("the leak: %d allocations of 64 MiB, %d of them freed" %
               (len(leak), sum(e["args"]["Addr"] in freed for e in leak)))
if len(steps) != 20:
    bad.append("%d steps (ProfilerStep#), want 20" % len(steps))
else:
    per = [sum(1 for e in leak if s <= float(e["ts"]) < f) for s, f in steps]
    if per != [1] * 20:
        bad.append("leak allocations per step: %r" % per)
# running totals (model/memory.c): GPU 0's sums as emitted, reserved =
# allocated for the CUDA driver's curve
if not all("Total Allocated" in e["args"] for e in mem):
    bad.append("[memory] events without Total Allocated")
if any("Total Allocated" in e["args"] for e in mem):
    live = {}
    for e, (op, kind, addr, nbytes, dev, pool) in zip(mem, emitted):
        if kind in (1, 2) or dev != 0:
            continue
        live[addr] = nbytes if op == 1 else 0
        tot = sum(live.values())
        if e["args"].get("Total Reserved") != e["args"].get("Total Allocated"):
            bad.append("Total Reserved %r, Total Allocated %r: the CUDA driver's curve has them equal" %
                       (e["args"].get("Total Reserved"), e["args"].get("Total Allocated")))
            break
        if e["args"].get("Total Allocated") != tot:
            bad.append("Total Allocated %r after %s of %d at %s, want %d" %
                       (e["args"].get("Total Allocated"), "alloc" if op == 1 else "free", nbytes,
                        hex(addr), tot))
            break
# NVML: counter tracks of GPU 0 with the values set, in order
proc, dev = "device memory used (NVML)", "device memory used, all processes (NVML)"
ctr = {}
for e in ev:
    if e.get("ph") == "C" and "NVML" in e.get("name", ""):
        ctr.setdefault((e["name"], e.get("pid")), []).append((float(e["ts"]), e["args"]))
names = {n for n, _ in ctr}
MiB = 1 << 20
if mode == "proc":
    want_vals = [300 * MiB, 400 * MiB, 400 * MiB + 20 * 64 * MiB]
    if names != {proc}:
        bad.append("NVML counters %r, want only %r" % (sorted(names), proc))
elif mode == "device":
    want_vals = [(1 << 30) + v for v in (300 * MiB, 400 * MiB, 400 * MiB + 20 * 64 * MiB)]
    if names != {dev}:
        bad.append("NVML counters %r, want only %r" % (sorted(names), dev))
else:
    want_vals = None
    if names:
        bad.append("NVML refused to start, yet counters %r" % sorted(names))
    w = " ".join(d.get("tbexportWarnings", []))
    if "device memory in use is not sampled: nvmlInit failed: Insufficient Permissions" not in w:
        bad.append("no warning that NVML refused: %r" % w)
if want_vals:
    tracks = [v for (n, pid), v in ctr.items()]
    # GPU 0 is the track whose values change; GPU 1's process was never listed (proc) or holds 1 GiB
    series = None
    for v in tracks:
        vals = [a.get(list(a)[0]) for _, a in sorted(v, key=lambda x: x[0])]
        dedup = [x for i, x in enumerate(vals) if i == 0 or x != vals[i - 1]]
        if mode == "device" and dedup[:1] == [1 << 30]:
            dedup = dedup[1:]  # sampled before the program's context: the other process's only
        if dedup and dedup[-1] == want_vals[-1]:
            series = dedup
    if series != want_vals:
        bad.append("NVML series of GPU 0 %r, want %r (tracks: %r)" %
                   (series, want_vals, {k: len(v) for k, v in ctr.items()}))
    if mode == "proc" and len(tracks) != 1:
        bad.append("%d per-process NVML tracks, want 1 (GPU 1 never listed this process)" % len(tracks))
    if mode == "device" and len(tracks) != 2:
        bad.append("%d all-process NVML tracks, want 2 (both GPUs)" % len(tracks))
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF

# run NAME MODE [tbexport options...]: profile the program, check its Chrome JSON
run() {
  local name=$1 mode=$2 j
  shift 2
  "$tb" --logdir l --run "$name" "$@" -- "$prog" emitted.txt >out.txt 2>err.txt ||
    fail "$name: tbexport status $?: $(cat err.txt)"
  j=$(find "l/plugins/profile/$name" -name '*.trace.json.gz' | head -1)
  [ -n "$j" ] || fail "$name: no Chrome JSON: $(cat err.txt)"
  "$py" check.py "$j" emitted.txt "$mode" || fail "$name: the memory in the Chrome JSON (above)"
  # the summary: GPU 0's peaks from the curve (the program's device
  # allocations: 4 x 64 MiB, then the 20 kept), and NVML's largest sample
  # as the sampled peak (unknown where NVML was off or refused)
  "$tb" summary --logdir l "$name" --format json >sum.json 2>sum.err ||
    fail "$name: summary: $(cat sum.err)"
  "$py" - "$mode" <<'PY' || fail "$name: the summary's memory figures (above)"
import json, sys
mode = sys.argv[1]
MiB = 1 << 20
g0 = [d for d in json.load(open("sum.json"))["devices"] if d["device"] == 0][0]
want = {"proc": 400 * MiB + 20 * 64 * MiB, "device": (1 << 30) + 400 * MiB + 20 * 64 * MiB}.get(mode)
bad = []
if mode != "off" and g0.get("peak_allocated_bytes") is None:
    bad.append("no peak allocated: %r" % g0.get("peak_allocated_bytes"))
if g0.get("sampled_peak_bytes") != want:
    bad.append("sampled peak %r, want %r" % (g0.get("sampled_peak_bytes"), want))
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
}
TEST_NVML_WAIT=1 run proc proc
FAKE_NVML_MODE=noproc TEST_NVML_WAIT=1 run device device
FAKE_NVML_MODE=noinit run noinit noinit
run off off --trace cuda,nvtx
echo "test_memory_collect: ok"
