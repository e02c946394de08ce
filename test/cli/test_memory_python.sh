#!/usr/bin/env bash
# test_memory_python.sh: PyTorch's caching allocator over time, for an
# unmodified program, without a GPU or PyTorch.
#
# Part 1, the Python start-up hook (src/collect/python/sitecustomize.py) with
# the stand-in torch (test/data/faketorch, whose torch.cuda.memory simulates
# the caching allocator, its history and its snapshot in torch 2.x's
# shapes): importing torch initializes nothing; a program that never uses
# CUDA leaves no <pid>.pymem; one that does leaves a whole file whose end
# state is the allocator's; the program's own reset_peak_memory_stats is
# noted and its own _snapshot still works; a torch without
# _record_memory_history is one line on stderr, the program runs on and
# keeps its exit status; nothing happens without TBEXPORT_MEM.
#
# Part 2, `tbexport --trace cuda,nvtx,memory -- python3 PROG` with the
# stand-in libcupti: a loop that keeps one 64 MiB tensor a step (a leak)
# and frees its other tensors gives, in the Chrome JSON, one [memory] event
# per allocation and free with the block's bytes, Total Allocated and Total
# Reserved equal to the allocator's own after each, the peak equal to the
# stand-in's max_memory_allocated exactly, each step's events between that
# step's kernels (the clock pair maps torch's times onto the trace); with
# a history too small for the run (max_entries) the events kept still carry
# the right totals and a warning says where the curve starts.  With the
# stand-in jax (test/data/fakejax): the hook waits for the program to
# create JAX's backends (never creating them), samples memory_stats() and
# the Chrome JSON has the counter "JAX bytes in use".  A spool kept and
# converted later by `tbexport import` reads its .pymem too.
# usage: test_memory_python.sh TBEXPORT DATA_DIR
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

# The program: STEPS steps, each keeping one 64 MiB tensor and freeing an
# 8 MiB, a 1000-byte and a 300 KiB one; with OWN=1 it also resets torch's
# peaks and takes its own snapshot; it writes what the allocator did
# (truth.json) and exits with EXIT (default 0).
cat >prog.py <<'EOF'
import json, os, sys
import torch
out = {"init_at_import": torch.cuda.is_initialized()}
steps = int(os.environ.get("STEPS", "6"))
fake = None
if os.environ.get("TBEXPORT_CUPTI_LIB"):
    import ctypes, time
    fake = ctypes.CDLL(os.environ["TBEXPORT_CUPTI_LIB"])
    fake.fake_cupti_now.restype = ctypes.c_uint64
kept = []
for step in range(steps):
    kept.append(torch.cuda.tensor(64 << 20))
    tmp = [torch.cuda.tensor(8 << 20), torch.cuda.tensor(1000), torch.cuda.tensor(300 << 10)]
    del tmp
    if fake:  # a kernel 50 us after each step's memory: its time bounds the step's events
        t = fake.fake_cupti_now()
        fake.fake_cupti_api(1000 + step, ctypes.c_uint64(t), ctypes.c_uint64(t + 1000))
        fake.fake_cupti_kernel(1000 + step, ctypes.c_uint64(t + 50000), ctypes.c_uint64(t + 51000),
                               b"step_kernel_%d" % step)
        while fake.fake_cupti_now() <= t + 100000:  # the next step's memory 50 us after
            time.sleep(0.0001)
if os.environ.get("OWN") == "1":
    torch.cuda.reset_peak_memory_stats()
    snap = torch.cuda.memory._snapshot()
    out["own_snapshot_entries"] = len(snap["device_traces"][0])
out["max_allocated"] = torch.cuda.max_memory_allocated()
out["allocated"] = torch.cuda.memory_allocated()
out["reserved"] = torch.cuda.memory_reserved()
out["truth"] = torch.cuda.memory.truth
json.dump(out, open("truth.json", "w"))
print("done")
sys.exit(int(os.environ.get("EXIT", "0")))
EOF
echo 'import torch; print("no cuda used")' >nocuda.py

# ---- part 1: the hook alone ----
mkdir spool
run_hook() { # PROG [ENV...]: stdout out.txt, stderr err.txt, status in $rc
  local prog=$1
  shift
  env PYTHONPATH="$hook:$data/faketorch" TBEXPORT_MEM=1 TBEXPORT_SPOOL_DIR="$work/spool" "$@" \
    "$py" "$prog" >out.txt 2>err.txt
  rc=$?
}
jq_py() { "$py" -c "import json,sys; o=json.load(open('truth.json')); sys.exit(0 if ($1) else 1)"; }

run_hook nocuda.py
[ $rc -eq 0 ] && [ "$(cat out.txt)" = "no cuda used" ] || fail "no CUDA: the program: $rc $(cat err.txt)"
[ -z "$(ls spool)" ] || fail "no CUDA: files left: $(ls spool)"
[ ! -s err.txt ] || fail "no CUDA: stderr: $(cat err.txt)"

run_hook prog.py STEPS=3
[ $rc -eq 0 ] || fail "hook: the program failed: $(cat err.txt)"
[ ! -s err.txt ] || fail "hook: stderr: $(cat err.txt)"
jq_py 'o["init_at_import"] is False' || fail "importing torch initialized CUDA"
f=$(ls spool/*.pymem 2>/dev/null)
[ -n "$f" ] && [ "$(ls spool | wc -l)" -eq 1 ] || fail "hook: want one .pymem, have: $(ls -a spool)"
[ "$(head -1 "$f")" = "tbexport-pymem 1" ] && [ "$(tail -1 "$f")" = "end" ] || fail "hook: not a whole file"
dev=$(grep '^device 0 ' "$f")
want=$("$py" -c "import json; o=json.load(open('truth.json')); print('device 0 %d %d %d' % (o['allocated'], o['reserved'], o['max_allocated']))")
[ "${dev% * *}" = "$want" ] || fail "hook: end state '$dev', want '$want ...'"
grep -q '^peak-reset 0$' "$f" || fail "hook: peak-reset"
[ "$(grep -c '^e alloc ' "$f")" -eq 12 ] || fail "hook: $(grep -c '^e alloc ' "$f") alloc entries, want 12"
rm -f spool/*

run_hook prog.py STEPS=2 OWN=1
[ $rc -eq 0 ] || fail "OWN: the program failed: $(cat err.txt)"
jq_py 'o["own_snapshot_entries"] > 0' || fail "the program's own snapshot has no history"
grep -q '^peak-reset 1$' spool/*.pymem || fail "the program's reset_peak_memory_stats was not noted"
rm -f spool/*

run_hook prog.py STEPS=2 EXIT=3 FAKETORCH_NO_HISTORY=1
[ $rc -eq 3 ] || fail "a torch without history: status $rc, want the program's 3: $(cat err.txt)"
[ "$(cat out.txt)" = "done" ] || fail "a torch without history: the program did not run on"
[ "$(wc -l <err.txt)" -eq 1 ] &&
  grep -q "^tbexport: PyTorch's allocator memory is not recorded: AttributeError: .*_record_memory_history" err.txt ||
  fail "a torch without history: want one line: $(cat err.txt)"
[ -z "$(ls spool)" ] || fail "a torch without history: files left: $(ls spool)"

env PYTHONPATH="$hook:$data/faketorch" TBEXPORT_SPOOL_DIR="$work/spool" STEPS=1 "$py" prog.py >out.txt 2>err.txt ||
  fail "hook off: the program failed"
[ -z "$(ls spool)" ] || fail "without TBEXPORT_MEM: files left: $(ls spool)"
# JAX: nothing until the program creates the backends, then samples.
cat >jaxprog.py <<'EOF'
import time
import jax
from jax._src import xla_bridge
time.sleep(0.3)
assert not xla_bridge._backends, "the hook created JAX's backends"
for step in range(3):
    jax.use(0, 64 << 20)
    time.sleep(0.2)
jax.use(0, -(32 << 20))
print("jax done")
EOF
env PYTHONPATH="$hook:$data/fakejax" TBEXPORT_MEM=1 TBEXPORT_SPOOL_DIR="$work/spool" "$py" jaxprog.py >out.txt 2>err.txt ||
  fail "jax: the program failed: $(cat err.txt)"
[ "$(cat out.txt)" = "jax done" ] && [ ! -s err.txt ] || fail "jax: $(cat out.txt) $(cat err.txt)"
f=$(ls spool/*.pymem 2>/dev/null)
[ -n "$f" ] || fail "jax: no .pymem"
grep '^jax ' "$f" | "$py" -c "
import sys
rows = [list(map(int, l.split()[1:])) for l in sys.stdin]
assert len(rows) >= 2, rows  # at 10 Hz over 0.6 s, and at exit
assert all(r[0] == 0 and r[5] == 80 << 30 and r[4] == -1 for r in rows), rows
use = [r[2] for r in rows]
assert set(use) <= {64 << 20, 128 << 20, 192 << 20, 160 << 20}, use
assert use[-1] == 160 << 20 and max(r[3] for r in rows) == 192 << 20, use
" || fail "jax: the samples: $(grep '^jax ' "$f")"
rm -f spool/*
echo "test_memory_python: the hook: no CUDA, the file, the program's own calls, a refusing torch, off, JAX"

# ---- part 2: through the collector (stand-in libcupti) ----
fake=$bindir/libcollect_fake_libcupti.so
if [ ! -f "$fake" ]; then
  echo "test_memory_python: part 2 needs the collector (libcollect_fake_libcupti.so beside tbexport)" >&2
  grep -q "collector was not built" <("$tb" --logdir x -- true 2>&1) && exit 0
  fail "no $fake in a build with the collector"
fi
export TBEXPORT_CUPTI_LIB=$fake
export PYTHONPATH=$data/faketorch
pyc=("$py")
asan=$(ldd "$bindir/libtbexport_inject.so" 2>/dev/null | awk '/libasan/ {print $3}')
[ -z "$asan" ] || pyc=(env LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$py")

cat >check.py <<'EOF'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
o = json.load(open("truth.json"))
tail = sys.argv[2] == "tail"  # the history kept only its last events: the events are the tail
ev = d["traceEvents"]
bad = []
mem = sorted([e for e in ev if e.get("name") == "[memory]"], key=lambda e: e["ts"])
truth = o["truth"]
if tail:
    if not 0 < len(mem) < len(truth):
        bad.append("%d [memory] events of %d allocations and frees" % (len(mem), len(truth)))
    truth = truth[-len(mem):]
if len(mem) != len(truth):
    bad.append("%d [memory] events, want %d" % (len(mem), len(truth)))
for i, (e, t) in enumerate(zip(mem, truth)):
    a = e.get("args", {})
    got = (a.get("Device Id"), a.get("Bytes"), a.get("Total Allocated"), a.get("Total Reserved"))
    if got != tuple(t) or a.get("Device Type") != 1 or not a.get("Addr"):
        bad.append("event %d: (device, bytes, allocated, reserved) %r, want %r" % (i, got, tuple(t)))
        break
if not tail:
    peak = max(e["args"].get("Total Allocated", -1) for e in mem) if mem else -1
    if peak != o["max_allocated"]:
        bad.append("peak %d, want max_memory_allocated %d" % (peak, o["max_allocated"]))
    leak = [e["args"]["Bytes"] for e in mem if e["args"]["Bytes"] == 64 << 20]
    if len(leak) != 6:
        bad.append("%d allocations of 64 MiB, want 6" % len(leak))
    kern = sorted([e for e in ev if e.get("cat") == "kernel" and e["name"].startswith("step_kernel_")],
                  key=lambda e: e["ts"])
    if len(kern) != 6:
        bad.append("%d step kernels" % len(kern))
    else:  # 7 events a step (4 allocations, 3 frees), each before its step's kernel
        per = len(mem) // 6
        for s in range(6):
            lo = kern[s - 1]["ts"] if s else 0
            for e in mem[s * per:(s + 1) * per]:
                if not lo < e["ts"] < kern[s]["ts"]:
                    bad.append("step %d: a [memory] event at %r outside (%r, %r)" % (s, e["ts"], lo, kern[s]["ts"]))
                    break
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
json_of() { find "$1" -name '*.trace.json.gz' | head -1; }

STEPS=6 "$tb" --logdir l1 --run leak --trace cuda,nvtx,memory -- "${pyc[@]}" prog.py >out.txt 2>err.txt ||
  fail "profile: status $?: $(cat err.txt)"
j=$(json_of l1/plugins/profile/leak)
[ -n "$j" ] || fail "leak: no Chrome JSON: $(cat err.txt)"
"$py" check.py "$j" all || fail "leak: the [memory] events (above); stderr: $(cat err.txt)"
grep -q "allocator" err.txt && fail "leak: a warning about the allocator: $(cat err.txt)"
echo "test_memory_python: through the collector: events, bytes, totals, peak, times"

# A history of 20 entries: the curve is its last events, totals still right.
STEPS=6 TBEXPORT_MEM_ENTRIES=20 "$tb" --logdir l1 --run short --trace cuda,nvtx,memory -- "${pyc[@]}" prog.py \
  >out.txt 2>err.txt || fail "short history: status $?: $(cat err.txt)"
j=$(json_of l1/plugins/profile/short)
"$py" check.py "$j" tail || fail "short history: the [memory] events (above)"
grep -q "PyTorch's allocator history kept its last 20 events" err.txt || fail "short history: no warning: $(cat err.txt)"
echo "test_memory_python: a history shorter than the run"

# A spool kept (the collector run by hand, as a session that could not
# convert leaves it): `tbexport import` reads the .pymem beside it.
mkdir kept
STEPS=6 CUDA_INJECTION64_PATH=$bindir/libtbexport_inject.so TBEXPORT_SPOOL_DIR=$work/kept TBEXPORT_MEM=1 \
  PYTHONPATH="$hook:$data/faketorch" "${pyc[@]}" prog.py >out.txt 2>err.txt || fail "kept: the program: $(cat err.txt)"
ls kept/*.pymem >/dev/null 2>&1 || fail "kept: no .pymem: $(ls kept)"
grep -q '^clock [0-9]* [0-9]*$' kept/*.pymem || fail "kept: no clock pair (tbexport_now_ns)"
"$tb" import kept/*.spool --logdir l1 --run imported >out.txt 2>err.txt || fail "import: $(cat err.txt)"
"$py" check.py "$(json_of l1/plugins/profile/imported)" all || fail "import: the [memory] events (above)"
[ -f kept/*.pymem ] || fail "import removed the .pymem"

PYTHONPATH=$data/fakejax "$tb" --logdir l1 --run jax --trace cuda,nvtx,memory -- "${pyc[@]}" jaxprog.py >out.txt 2>err.txt ||
  fail "jax: status $?: $(cat err.txt)"
j=$(json_of l1/plugins/profile/jax)
[ -n "$j" ] || fail "jax: no Chrome JSON: $(cat err.txt)"
"$py" -c "
import gzip, json, sys
ev = json.load(gzip.open(sys.argv[1]))['traceEvents']
c = [e for e in ev if e.get('ph') == 'C' and e.get('name') == 'JAX bytes in use']
v = [list(e['args'].values())[0] for e in sorted(c, key=lambda e: e['ts'])]
assert len(v) >= 2 and v[-1] == 160 << 20 and set(v) <= {64 << 20, 128 << 20, 192 << 20, 160 << 20}, v
" "$j" || fail "jax: the counter in the Chrome JSON: $(cat err.txt)"
echo "test_memory_python: JAX's device memory as counters"
echo "test_memory_python: ok"
