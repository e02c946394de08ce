#!/bin/bash
# test_clients_memory.sh: the memory of our outputs as the clients read it:
# the PyTorch Profiler TensorBoard plugin's Memory view (torch-tb-profiler
# 0.4.3, frozen) through its data API (scripts/check_memory_plugin.py:
# memory, memory_curve, memory_events against our file and `tbexport
# summary`), and Holistic Trace Analysis, which has no memory analysis of
# allocations (its "memory" is the bandwidth of copies and memsets:
# get_memory_bw_summary), reading the same files without loss.
#
# The runs, each written by `tbexport import` (the layout the profile
# command writes):
#   - cnn: a torch.profiler trace with profile_memory=True
#     (test/data/kineto/h200_cnn_bf16), the caching allocator's events
#     with their totals;
#   - cnn_json, cnn_xspace: that run's own Chrome JSON and XSpace read
#     back: the same curve, counters not doubled;
#   - driver: a synthetic trace whose memory events are the CUDA driver's
#     as the collector writes them (on the GPU's stream row, no totals):
#     1 MiB and 3 MiB on GPU 0, 1 MiB freed, 4 KiB of pinned host memory,
#     3 MiB freed; known peaks GPU0 4 MiB, CPU (pinned) 4 KiB;
#   - both: the allocator's events with totals (peak 6 MiB) and the
#     driver's segment under them (16 MiB): the plugin reads one curve,
#     the allocator's (the driver's is "[cuda memory]"); both_json,
#     both_xspace: that run read back, the same;
#   - collected (a build with the collector): a C program's allocations
#     collected by `tbexport --` through the stand-in libcupti and NVML.
#
# Needs ../shared/tools/tensorboard and ../shared/tools/hta (siblings of the
# repository, or TBE_TB_TOOLS / TBE_HTA_TOOLS): when either is absent the
# test says so and is skipped (exit 77); anything else that goes wrong
# fails it.
# usage: test_clients_memory.sh TBEXPORT DATA_DIR
set -u
. "$(dirname "$0")/clients_lib.sh"
clients_init "$1" "$2"
L=$tmp/log

imp() { # RUN FILE
  "$B" import --quiet --logdir "$L" --run "$1" "$2" >/dev/null 2>"$tmp/err" || die "import $1: $(cat "$tmp/err")"
}

# ---- the runs ----
imp cnn "$D/kineto/h200_cnn_bf16.pt.trace.json"
imp cnn_json "$(ls "$L"/plugins/profile/cnn/*.trace.json.gz)"
imp cnn_xspace "$(ls "$L"/plugins/profile/cnn/*.xplane.pb)"
python3 - "$tmp" <<'EOF' || die "synthetic traces"
import json, sys
base = 1700000000000000.0  # us

def trace(mem):
    ev = [{"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python"}}]
    for s in range(3):  # three steps: an operator, its launch, its kernel
        t0 = s * 1000
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s, "pid": 100,
                   "tid": 100, "ts": base + t0, "dur": 900, "args": {"External id": 10 + s}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 100, "tid": 100,
                   "ts": base + t0 + 10, "dur": 200, "args": {"External id": 100 + s}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
                   "ts": base + t0 + 20, "dur": 20, "args": {"correlation": 1 + s, "External id": 100 + s}})
        ev.append({"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": base + t0 + 50,
                   "dur": 50, "args": {"correlation": 1 + s, "External id": 100 + s, "device": 0,
                                       "stream": 7}})
    for ts, pid, tid, args in mem:
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid,
                   "tid": tid, "ts": base + ts, "args": args})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200",
                                                      "totalGlobalMem": 150000000000}],
            "traceEvents": ev, "traceName": "synthetic"}

MiB = 1 << 20
def drv(ts, b, addr, kind="Device"):  # the CUDA driver's, on the stream's row
    return (ts, 0, 7, {"Bytes": b, "Device Id": 0, "Device Type": 1, "Addr": addr, "Source": "CUDA",
                       "Memory Kind": kind})
driver = [drv(30, MiB, 0x10000), drv(1030, 3 * MiB, 0x20000), drv(1500, -MiB, 0x10000),
          drv(1600, 4096, 0x30000, "Pinned"), drv(2030, -3 * MiB, 0x20000)]
json.dump(trace(driver), open(sys.argv[1] + "/driver.json", "w"))
alloc, live = [], 0
for i, (ts, b, addr) in enumerate([(40, 2 * MiB, 0x10000), (60, 4 * MiB, 0x10000 + 2 * MiB),
                                   (240, -2 * MiB, 0x10000), (1040, 2 * MiB, 0x10000),
                                   (1240, -4 * MiB, 0x10000 + 2 * MiB), (2040, -2 * MiB, 0x10000)]):
    live += b
    alloc.append((ts, 100, 100, {"Total Reserved": 16 * MiB, "Total Allocated": live, "Bytes": b,
                                 "Device Id": 0, "Device Type": 1, "Addr": addr}))
json.dump(trace([drv(30, 16 * MiB, 0x10000)] + alloc), open(sys.argv[1] + "/both.json", "w"))
EOF
imp driver "$tmp/driver.json"
imp both "$tmp/both.json"
imp both_json "$(ls "$L"/plugins/profile/both/*.trace.json.gz)"
imp both_xspace "$(ls "$L"/plugins/profile/both/*.xplane.pb)"
runs=(cnn cnn_json cnn_xspace driver:GPU0=4194304,CPU=4096 both:GPU0=6291456 both_json:GPU0=6291456
      both_xspace:GPU0=6291456)
# a run collected here by `tbexport -- PROG` through the stand-in libcupti
# and NVML (test/stress/collect_memory_prog.c: device memory on two GPUs,
# pinned host memory, managed and pool allocations, a 64 MiB-per-step
# leak over 20 steps), when this build has the collector
bindir=$(dirname "$B")
if [ -f "$bindir/libcollect_fake_libcupti.so" ] && [ -x "$bindir/collect_memory_prog" ]; then
  TBEXPORT_CUPTI_LIB=$bindir/libcollect_fake_libcupti.so TBEXPORT_NVML_LIB=$bindir/libcollect_fake_nvml.so \
    TBE_TEST_LIBTBEXPORT=$bindir/libtbexport.so \
    "$B" --logdir "$L" --run collected -- "$bindir/collect_memory_prog" "$tmp/emitted.txt" \
    >/dev/null 2>"$tmp/err" || die "collect: $(cat "$tmp/err")"
  runs+=(collected)
else
  echo "note: no collector in this build: the collected run is left out"
fi

# ---- the plugin ----
clients_serve "$L" "${#runs[@]}"
args=()
for r in "${runs[@]}"; do args+=(--run "$r"); done
rc=0
python3 "$root/scripts/check_memory_plugin.py" --url "$url" --logdir "$L" --tbexport "$B" "${args[@]}" || rc=1

# ---- HTA: no analysis of allocations (its "memory" analyses are the
# bandwidth of copies and memsets); it reads our file with its memory
# events and counters exactly as without them ----
eval "$("$hta_tools/setup")" || die "HTA's setup failed"
cnn_json=$(ls "$L"/plugins/profile/cnn/*.trace.json.gz)
"$TBE_HTA_PYTHON" - "$tmp" "$cnn_json" 2>"$tmp/hta.err" <<'EOF' || { tail -20 "$tmp/hta.err"; rc=1; }
import gzip, json, os, sys
import hta.trace_analysis as ta
names = [n for n in dir(ta.TraceAnalysis) if "memory" in n.lower()]
print("HTA's memory analyses: %s (copy and memset bandwidth, not allocations)" % names)
assert names and all("_bw_" in n for n in names), "HTA has a memory analysis of another kind: %s" % names
doc = json.load(gzip.open(sys.argv[2], "rt"))
mem = [e for e in doc["traceEvents"] if e.get("name") in ("[memory]", "[cuda memory]") or
       (e.get("ph") == "C" and e.get("name", "").startswith("memory "))]
assert mem, "no memory events in %s" % sys.argv[2]
got = {}
for what, evs in (("with", doc["traceEvents"]), ("without", [e for e in doc["traceEvents"] if e not in mem])):
    d = os.path.join(sys.argv[1], "hta_" + what)
    os.makedirs(d)
    with gzip.open(os.path.join(d, "t.trace.json.gz"), "wt") as f:
        json.dump(dict(doc, traceEvents=evs), f)
    a = ta.TraceAnalysis(trace_dir=d)
    k = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=10 ** 9, duration_ratio=1.0,
                                   include_memory_kernels=True)[1]
    bw = a.get_memory_bw_summary()
    assert len(k) > 0 and len(bw) > 0, "HTA: no kernels or no memory bandwidth (%s)" % what
    got[what] = (k.sort_values(list(k.columns)).to_csv(index=False), bw.to_csv())
print("HTA: %d memory events and counters; the kernel breakdown and memory bandwidth are the same "
      "without them" % len(mem))
assert got["with"] == got["without"], "HTA reads our file differently with its memory events"
EOF
[ $rc -eq 0 ] && echo "test_clients_memory: ok (${runs[*]})"
exit $rc
