#!/usr/bin/env bash
# test_ops.sh: framework operators of an unmodified program, without a GPU
# or PyTorch.
#
# Part 1, the Python start-up hook (src/collect/python/sitecustomize.py, as
# built beside the injection library) with a stand-in torch
# (test/data/faketorch): operator ranges are turned on when torch is
# imported, with or without shapes, never by synchronizing (which would
# initialize CUDA); the program's own sitecustomize still runs, once; the
# program's own profiler on that thread pauses ours and resumes it after; a
# torch that refuses is one line and the program goes on; a Python program
# without torch says so in its note; nothing changes without TBEXPORT_OPS.
#
# Part 2, `tbexport -- python3 PROG` with the stand-in libcupti
# (collect_fake_libcupti.c): the program's NVTX reaches the collector's own
# handlers, PyTorch's operator messages become operators, each kernel, copy
# and driver launch is attributed to the innermost operator open at its
# launch, backward operators link to their forward one, and the Chrome JSON
# reads as Kineto's (cpu_op with External id, Input Dims, Sequence number;
# cuda_driver; fwdbwd flows), also for an operator left open by a crash.
# usage: test_ops.sh TBEXPORT DATA_DIR
set -u
tb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
bindir=$(cd "$(dirname "$tb")" && pwd)
hook=$bindir/python
[ -f "$hook/sitecustomize.py" ] || fail "no Python hook at $hook"
py=${TBE_TEST_PYTHON:-python3}
command -v "$py" >/dev/null || fail "no $py"
export PYTHONDONTWRITEBYTECODE=1

# ---- part 1: the hook alone ----
mkdir spool own
cat >prog1.py <<'EOF'
import json, os, sys
before = "torch" in sys.modules
import torch
from torch.autograd import profiler as p
out = {"before": before, "after_import": list(map(list, p.state["enabled"]))}
with p.profile():
    out["inside_own"] = list(map(list, p.state["enabled"]))
out["after_own"] = list(map(list, p.state["enabled"]))
out["own_ran"] = os.environ.get("OWN_SITECUSTOMIZE_RAN")
print(json.dumps(out))
EOF
cat >own/sitecustomize.py <<'EOF'
import os
os.environ["OWN_SITECUSTOMIZE_RAN"] = str(int(os.environ.get("OWN_SITECUSTOMIZE_RAN", "0")) + 1)
EOF
run_hook() { # MODE PROG -> stdout in out.json, stderr in err.txt
  env PYTHONPATH="$hook:$data/faketorch:$work/own" TBEXPORT_OPS="$1" TBEXPORT_SPOOL_DIR="$work/spool" \
    "$py" "$2" >out.json 2>err.txt
}
check() { # PY-EXPRESSION over o (out.json), MESSAGE
  "$py" -c "import json,sys; o=json.load(open('out.json')); sys.exit(0 if ($1) else 1)" ||
    fail "$2: $(cat out.json) $(cat err.txt)"
}
note_of() { cat spool/*.ops 2>/dev/null; }

run_hook 1 prog1.py || fail "hook: the program failed: $(cat err.txt)"
check 'o["after_import"] == [["NVTX", False]]' "ops on import (no shapes)"
check 'o["inside_own"] == [["KINETO", False]]' "the program's own profiler: ours paused"
check 'o["after_own"] == [["NVTX", False]]' "ours resumed after the program's profiler"
check 'o["own_ran"] == "1"' "the program's sitecustomize ran once"
[ ! -s err.txt ] || fail "hook: stderr not empty: $(cat err.txt)"
note_of | grep -q "^ok torch 0.0+fake$" || fail "hook: note: $(note_of)"
rm -f spool/*

run_hook shapes prog1.py || fail "hook (shapes): the program failed: $(cat err.txt)"
check 'o["after_import"] == [["NVTX", True]]' "ops with shapes"
note_of | grep -q "^ok shapes torch" || fail "hook (shapes): note: $(note_of)"
rm -f spool/*

run_hook "" prog1.py || fail "hook off: the program failed"
check 'o["after_import"] == [] and o["own_ran"] == "1"' "without TBEXPORT_OPS nothing but the program's sitecustomize"
[ -z "$(note_of)" ] || fail "hook off: a note was left"

FAKETORCH_BROKEN=1 run_hook 1 prog1.py || fail "a torch that refuses: the program failed: $(cat err.txt)"
check 'o["after_import"] == [] and o["inside_own"] == [["KINETO", False]]' "a refusing torch: the program's profiler works"
[ "$(wc -l <err.txt)" -eq 1 ] && grep -q "^tbexport: PyTorch's operators are not recorded: RuntimeError: Can't use NVTX profiler" err.txt ||
  fail "a refusing torch: one line: $(cat err.txt)"
note_of | grep -q "not recorded" || fail "a refusing torch: note: $(note_of)"
rm -f spool/*

echo 'print("no torch here")' >prog0.py
run_hook 1 prog0.py || fail "no torch: the program failed"
[ "$(cat out.json)" = "no torch here" ] || fail "no torch: output $(cat out.json)"
note_of | grep -q "^no-torch$" || fail "no torch: note: $(note_of)"
rm -f spool/*
echo "test_ops: the Python hook: on import, shapes, the program's own profiler and sitecustomize, refusals"

# ---- part 2: through the collector (stand-in libcupti) ----
fake=$bindir/libcollect_fake_libcupti.so
if [ ! -f "$fake" ]; then
  echo "test_ops: part 2 needs the collector (libcollect_fake_libcupti.so beside tbexport)" >&2
  grep -q "collector was not built" <("$tb" --logdir x -- true 2>&1) && exit 0
  fail "no $fake in a build with the collector"
fi
export TBEXPORT_CUPTI_LIB=$fake FAKE_NVTX=$fake
export PYTHONPATH=$data/faketorch
# Under ASan the injection library needs the ASan runtime loaded first in
# python3 (leak checks off there: python's own allocations are not ours).
pyc=("$py")
asan=$(ldd "$bindir/libtbexport_inject.so" 2>/dev/null | awk '/libasan/ {print $3}')
[ -z "$asan" ] || pyc=(env LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$py")
# The program: operators nested and not, one without kernels, a kernel
# outside any operator, a backward operator of the first forward one, a
# launch through the driver API inside an operator, a driver call that is
# not a launch (left out: the launch subset), and with CRASH=1 an abort
# inside an operator.
cat >prog2.py <<'EOF'
import ctypes, os, time
import torch
inj = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
inj.InitializeInjection()  # as the CUDA driver does at cuInit
fake = ctypes.CDLL(os.environ["TBEXPORT_CUPTI_LIB"])
assert fake.fake_nvtx_init() == 1, "NVTX: the injection library refused"
fake.fake_cupti_now.restype = ctypes.c_uint64
U = ctypes.c_uint64
corr = [100]
def wait_past(t):
    while fake.fake_cupti_now() <= t:
        time.sleep(0.0001)
def launch(kernel, driver=False):
    corr[0] += 1
    t = fake.fake_cupti_now()
    if driver:
        fake.fake_cupti_driver_api(307, corr[0], U(t), U(t + 1000))
    else:
        fake.fake_cupti_api(corr[0], U(t), U(t + 1000))
    fake.fake_cupti_kernel(corr[0], U(t + 2000), U(t + 10000), kernel.encode())
    wait_past(t + 1500)
t = fake.fake_cupti_now()
fake.fake_cupti_driver_api(17, 99, U(t), U(t + 500))  # cuCtxSynchronize: not recorded
wait_past(t + 600)
torch.op("aten::linear", [[4, 8], [16, 8], [16]], seq=True,
         body=lambda: torch.op("aten::addmm", [[16], [4, 8], [8, 16]], body=lambda: launch("gemm_fwd")))
torch.op("aten::view", [[4, 16], []])
launch("outside_kernel")
torch.op("aten::scaled_dot_product_attention", [[1, 2, 4, 8]] * 3, seq=True,
         body=lambda: launch("attn_kernel", driver=True))
torch.op("autograd::engine::evaluate_function: AddmmBackward0",
         body=lambda: torch.op("AddmmBackward0", [[4, 16]], seq=0,
                               body=lambda: torch.op("aten::mm", [[4, 16], [16, 8]], body=lambda: launch("gemm_bwd"))))
if os.environ.get("CRASH"):
    def die():
        launch("last_kernel")
        os.abort()
    torch.op("aten::crashing_op", [[2]], body=die)
EOF
cat >check2.py <<'EOF'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
shapes, crashed = sys.argv[2] == "1", sys.argv[3] == "1"
ev = d["traceEvents"]
bad = []
def one(cat, name):
    m = [e for e in ev if e.get("cat") == cat and e.get("name") == name and e.get("ph") == "X"]
    if len(m) != 1:
        bad.append("%d %s events named %s" % (len(m), cat, name))
        return {"args": {}}
    return m[0]
ops = {n: one("cpu_op", n) for n in ["aten::linear", "aten::addmm", "aten::view", "aten::mm", "AddmmBackward0",
       "autograd::engine::evaluate_function: AddmmBackward0", "aten::scaled_dot_product_attention"]}
for n, e in ops.items():
    if not e["args"].get("External id"):
        bad.append("%s has no External id" % n)
    if shapes and n.startswith("aten::") and "Input Dims" not in e["args"]:
        bad.append("%s has no Input Dims" % n)
if shapes and ops["aten::linear"]["args"].get("Input Dims") != [[4, 8], [16, 8], [16]]:
    bad.append("aten::linear Input Dims %r" % ops["aten::linear"]["args"].get("Input Dims"))
if not shapes and any("Input Dims" in e["args"] for e in ops.values()):
    bad.append("Input Dims without --record-shapes")
if ops["aten::linear"]["args"].get("Sequence number") != 0 or ops["AddmmBackward0"]["args"].get("Sequence number") != 0:
    bad.append("sequence numbers: linear %r, backward %r" % (ops["aten::linear"]["args"].get("Sequence number"),
               ops["AddmmBackward0"]["args"].get("Sequence number")))
if any(e.get("cat") == "nvtx" and ("aten::" in e.get("name", "") or "op_id" in e.get("name", "")) for e in ev):
    bad.append("operator ranges left as NVTX ranges")
def ext(e): return e["args"].get("External id")
kern = {n: one("kernel", n) for n in ["gemm_fwd", "gemm_bwd", "attn_kernel", "outside_kernel"]}
for k, o in [("gemm_fwd", "aten::addmm"), ("gemm_bwd", "aten::mm"), ("attn_kernel", "aten::scaled_dot_product_attention")]:
    if ext(kern[k]) != ext(ops[o]):
        bad.append("%s is attributed to %r, not to %s (%r)" % (k, ext(kern[k]), o, ext(ops[o])))
if ext(kern["outside_kernel"]):
    bad.append("outside_kernel is attributed to %r" % ext(kern["outside_kernel"]))
drv = [e for e in ev if e.get("cat") == "cuda_driver" and e.get("ph") == "X"]
if [e["name"] for e in drv] != ["cuLaunchKernel"] or ext(drv[0]) != ext(ops["aten::scaled_dot_product_attention"]):
    bad.append("driver calls: %r" % [(e["name"], ext(e)) for e in drv])
rt = [e for e in ev if e.get("cat") == "cuda_runtime" and ext(e) == ext(ops["aten::addmm"])]
if len(rt) != 1:
    bad.append("%d runtime calls attributed to aten::addmm" % len(rt))
flows = [e for e in ev if e.get("cat") == "fwdbwd"]
s = [e for e in flows if e["ph"] == "s"]
f = [e for e in flows if e["ph"] == "f"]
L, B = ops["aten::linear"], ops["AddmmBackward0"]
if len(s) != 1 or len(f) != 1 or s[0]["ts"] != L.get("ts") or f[0]["ts"] != B.get("ts") or s[0]["id"] != f[0]["id"] \
        or f[0].get("bp") != "e":
    bad.append("fwdbwd flows: %r (linear at %r, backward at %r)" % (flows, L.get("ts"), B.get("ts")))
if crashed:
    c = one("cpu_op", "aten::crashing_op")
    if ext(one("kernel", "last_kernel")) != ext(c):
        bad.append("the crash's last kernel is not attributed to the operator open then")
    w = " ".join(d.get("tbexportWarnings", []))
    if "operators were still running when the capture ended" not in w:
        bad.append("no warning of the operator left open: %s" % w)
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
# check_run LOGDIR RUN SHAPES(0|1) CRASHED(0|1): the run's Chrome JSON as Kineto's readers see it
check_run() {
  local j
  j=$(find "$1/plugins/profile/$2" -name '*.trace.json.gz' | head -1)
  [ -n "$j" ] || fail "$2: no Chrome JSON"
  "$py" check2.py "$j" "$3" "$4" || fail "$2: the operators as Kineto's readers see them (above)"
}
"$tb" --logdir l1 --run plain -- "${pyc[@]}" prog2.py >out.txt 2>err.txt || fail "profile: status $?: $(cat err.txt)"
check_run l1 plain 0 0
"$tb" --logdir l1 --run shapes --record-shapes -- "${pyc[@]}" prog2.py >out.txt 2>err.txt ||
  fail "profile --record-shapes: $(cat err.txt)"
check_run l1 shapes 1 0
CRASH=1 "$tb" --logdir l1 --run crash --record-shapes -- "${pyc[@]}" prog2.py >out.txt 2>err.txt
rc=$?
[ $rc -eq 134 ] || fail "crash: status $rc, want 134 (SIGABRT): $(cat err.txt)"
check_run l1 crash 1 1
"$tb" --logdir l1 --run noops --no-ops -- "${pyc[@]}" prog2.py >out.txt 2>err.txt || fail "--no-ops: $(cat err.txt)"
j=$(find l1/plugins/profile/noops -name '*.trace.json.gz')
gzip -dc "$j" | grep -q '"cat":"cpu_op"' && fail "--no-ops: operators were recorded"
echo "test_ops: through the collector: operators, shapes, attribution, driver launches, fwdbwd, a crash, --no-ops"
echo "test_ops: ok"
