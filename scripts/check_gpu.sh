#!/usr/bin/env bash
# scripts/check_gpu.sh: end-to-end check of the CUPTI collector on a GPU
# machine.  Run from anywhere; logs go to $OUT (if set) or build/gpu-out.
#
#   1. builds the tree with CMake (CUDA at $CUDA_HOME, default /usr/local/cuda)
#   2. runs samples/cuda_nvtx under `tbexport --` and checks that the run holds
#      exactly the kernels, copies, memsets, NVTX ranges and marks the program
#      reports having made
#   3. runs an ordinary PyTorch training script under `tbexport --`
#   4. opens both runs with jax.profiler.ProfileData (XSpace), Python's json
#      (Chrome trace) and TensorBoard's EventAccumulator (summary events)
#   5. kills a profiled program with SIGKILL halfway and checks that the run
#      still converts and says the capture ended early
#   6. runs samples/profile_api (in-process tbe_profiler_start/stop around its
#      own driver-API kernels, copies, memset and NVTX ranges) and checks that
#      the profiler's result and the Chrome trace of its run hold exactly
#      the counts the program reports
#
# Environment: TBE_BUILD_DIR (default build/gpu), TBE_SKIP_BUILD=1 to reuse a
# build, CUDA_HOME.  Exit status 0 when every check passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/build/gpu-out}
mkdir -p "$out"
log=$out/check_gpu.log
: >"$log"
bd=${TBE_BUILD_DIR:-$root/build/gpu}
cuda=${CUDA_HOME:-/usr/local/cuda}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
say() { echo "$*" | tee -a "$log"; }
ok() { say "PASS: $*"; }
bad() { say "FAIL: $*"; failures=$((failures + 1)); }
t_start=$(date +%s)

# ---- 1. build ----
if [ -n "${TBE_SKIP_BUILD:-}" ] && [ -x "$bd/tbexport" ]; then
  say "== reusing the build in $bd"
else
  say "== building in $bd (CUDA at $cuda)"
  missing=""
  for pc in libprotobuf-c yajl sqlite3 zlib; do pkg-config --exists "$pc" 2>/dev/null || missing="$missing $pc"; done
  command -v protoc-c >/dev/null || missing="$missing protoc-c"
  [ -f /usr/include/libiberty/demangle.h ] || [ -f "${TBE_LIBIBERTY_ROOT:-/nonexistent}/include/libiberty/demangle.h" ] ||
    missing="$missing libiberty(or TBE_LIBIBERTY_ROOT)"
  if [ -n "$missing" ]; then
    say "missing build dependencies:$missing"
    say "(Debian/Ubuntu: apt-get install libprotobuf-c-dev protobuf-c-compiler libyajl-dev libsqlite3-dev zlib1g-dev libiberty-dev pkg-config)"
    exit 1
  fi
  if ! { cmake -S "$root" -B "$bd" -DCMAKE_BUILD_TYPE=Release -DTBE_BUILD_TESTS=OFF \
      -DCUDAToolkit_ROOT="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" &&
    cmake --build "$bd" -j"$(nproc)"; } >"$out/build.log" 2>&1; then
    tail -30 "$out/build.log" | tee -a "$log"
    say "FAIL: build (see build.log)"
    exit 1
  fi
fi
tb=$bd/tbexport
for f in "$tb" "$bd/libtbexport_inject.so" "$bd/cuda_nvtx"; do
  [ -e "$f" ] || { say "FAIL: $f was not built (CUDA/CUPTI not found?)"; exit 1; }
done
nvidia-smi -L 2>&1 | tee -a "$log"
python3 - <<'PY' 2>&1 | tee -a "$log"
import importlib
for m in ("torch", "jax", "tensorboard"):
    try:
        print(m, importlib.import_module(m).__version__)
    except Exception as e:
        print(m, "not available:", e)
PY

ld=$work/log_dir

# ---- 2. samples/cuda_nvtx under tbexport ----
say "== cuda_nvtx under tbexport"
"$tb" --logdir "$ld" --run cuda_nvtx --host gpu -- "$bd/cuda_nvtx" --kernels 5000 --steps 5 \
  >"$work/cuda_nvtx.stdout" 2>"$work/cuda_nvtx.stderr"
rc=$?
cat "$work/cuda_nvtx.stdout" "$work/cuda_nvtx.stderr" | tee -a "$log"
[ $rc -eq 0 ] && ok "cuda_nvtx under tbexport exited 0" || bad "cuda_nvtx under tbexport: status $rc"
counts=$(grep -o 'kernels=[0-9]* memcpy=[0-9]* memset=[0-9]* nvtx_ranges=[0-9]* nvtx_marks=[0-9]*' "$work/cuda_nvtx.stdout")
grep -q "result=ok" "$work/cuda_nvtx.stdout" && ok "cuda_nvtx computed the right result" || bad "cuda_nvtx result"

# ---- 3. a PyTorch training script under tbexport ----
say "== PyTorch training under tbexport"
cat >"$work/train.py" <<'PY'
# An ordinary small training script: no profiling code in it.
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(4096, 256, device="cuda")
y = torch.randint(0, 10, (4096,), device="cuda")
for step in range(30):
    with torch.cuda.nvtx.range("train_step"):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
torch.cuda.synchronize()
print("train: final loss %.4f" % loss.item())
PY
"$tb" --logdir "$ld" --run torch_train --host gpu -- python3 "$work/train.py" \
  >"$work/torch_train.stdout" 2>"$work/torch_train.stderr"
rc=$?
cat "$work/torch_train.stdout" "$work/torch_train.stderr" | tee -a "$log"
[ $rc -eq 0 ] && ok "PyTorch training under tbexport exited 0" || bad "PyTorch training under tbexport: status $rc"

# ---- 5. SIGKILL halfway ----
say "== SIGKILL halfway"
"$tb" --logdir "$ld" --run killed --host gpu -- "$bd/cuda_nvtx" --kernels 40000 --steps 40 \
  --step-sleep-ms 100 >"$work/killed.stdout" 2>"$work/killed.stderr" &
tpid=$!
child=""
for _ in $(seq 1 100); do
  for st in /proc/[0-9]*/stat; do
    read -r cpid _ _ ppid _ <"$st" 2>/dev/null || continue
    [ "$ppid" = "$tpid" ] && child=$cpid && break
  done
  [ -n "$child" ] && break
  sleep 0.05
done
sleep 2.5
[ -n "$child" ] && kill -KILL "$child"
wait "$tpid"
rc=$?
cat "$work/killed.stderr" | tee -a "$log"
[ $rc -eq 137 ] && ok "killed program: tbexport returned 137" || bad "killed program: status $rc, want 137"

# ---- 4. open the runs (and check 2, 3, 5) ----
say "== opening the runs with jax.profiler.ProfileData, json and EventAccumulator"
python3 - "$ld" "$counts" <<'PY' 2>&1 | tee -a "$log"
import glob, gzip, json, os, sys
ld, counts = sys.argv[1], sys.argv[2]
want = dict(kv.split("=") for kv in counts.split())
fails = 0
def check(cond, what):
    global fails
    print(("PASS: " if cond else "FAIL: ") + what)
    fails += 0 if cond else 1

def chrome(run):
    p = glob.glob(os.path.join(ld, "plugins/profile", run, "*.trace.json.gz"))
    check(len(p) == 1, "%s: one Chrome trace (%s)" % (run, p))
    with gzip.open(p[0], "rt") as f:
        return json.load(f)

def cats(doc):
    c = {}
    for e in doc["traceEvents"]:
        if e.get("ph") in ("X", "i", "I"):
            c.setdefault(e.get("cat"), []).append(e)
    return c

# cuda_nvtx: exact counts
doc = chrome("cuda_nvtx")
c = cats(doc)
nk = len(c.get("kernel", []))
nm = len(c.get("gpu_memcpy", []))
ns = len(c.get("gpu_memset", []))
nvtx = c.get("nvtx", [])
nr = sum(1 for e in nvtx if e["ph"] == "X")
nmk = sum(1 for e in nvtx if e["ph"] != "X")
check(nk == int(want["kernels"]), "cuda_nvtx: kernels %d == %s" % (nk, want["kernels"]))
check(nm == int(want["memcpy"]), "cuda_nvtx: copies %d == %s" % (nm, want["memcpy"]))
check(ns == int(want["memset"]), "cuda_nvtx: memsets %d == %s" % (ns, want["memset"]))
check(nr == int(want["nvtx_ranges"]), "cuda_nvtx: NVTX ranges %d == %s" % (nr, want["nvtx_ranges"]))
check(nmk == int(want["nvtx_marks"]), "cuda_nvtx: NVTX marks %d == %s" % (nmk, want["nvtx_marks"]))
names = sorted({e["name"] for e in nvtx})
print("  NVTX names:", names)
check("download" in names and "step 0" in names and "kernels" in names, "cuda_nvtx: NVTX names incl. registered string")
kn = {e["name"] for e in c.get("kernel", [])}
check(any("add_one" in n for n in kn), "cuda_nvtx: kernel name add_one (%s)" % sorted(kn)[:3])
mc = sorted(e["name"] for e in c.get("gpu_memcpy", []))
print("  copies:", mc)
check(any("Pageable" in n for n in mc) and any("Pinned" in n for n in mc), "cuda_nvtx: pageable and pinned copies")
rt = c.get("cuda_runtime", [])
check(not any(e["name"] == "cudaGetDevice" for e in rt), "cuda_nvtx: cudaGetDevice filtered")
check(sum(1 for e in rt if e["name"] == "cudaLaunchKernel") == int(want["kernels"]), "cuda_nvtx: one cudaLaunchKernel per kernel")
check(doc.get("deviceProperties") and "H" in json.dumps(doc["deviceProperties"]), "cuda_nvtx: device properties")
check("ended early" not in json.dumps(doc.get("tbexportWarnings", [])), "cuda_nvtx: not marked as ended early")

# torch training
doc = chrome("torch_train")
c = cats(doc)
print("  torch_train categories:", {k: len(v) for k, v in c.items()})
check(len(c.get("kernel", [])) > 100, "torch_train: kernels recorded")
check(sum(1 for e in c.get("nvtx", []) if e["name"] == "train_step") == 30, "torch_train: 30 train_step NVTX ranges")
check(len(c.get("cuda_runtime", [])) > 100, "torch_train: runtime calls recorded")

# killed
doc = chrome("killed")
c = cats(doc)
nk = len(c.get("kernel", []))
warn = json.dumps(doc.get("tbexportWarnings", []))
print("  killed: kernels %d of 40000; warnings %s" % (nk, warn[:300]))
check(0 < nk < 40000, "killed: some kernels converted")
check("ended early" in warn, "killed: the run says the capture ended early")

# XSpace through JAX
try:
    from jax.profiler import ProfileData
    for run in ("cuda_nvtx", "torch_train", "killed"):
        p = glob.glob(os.path.join(ld, "plugins/profile", run, "*.xplane.pb"))[0]
        pd = ProfileData.from_file(p)
        planes = {pl.name: sum(1 for line in pl.lines for _ in line.events) for pl in pd.planes}
        print("  %s planes:" % run, planes)
        gpu = [n for n in planes if n.startswith("/device:GPU")]
        check(gpu and sum(planes[n] for n in gpu) > 0, "%s: XSpace opens in jax.profiler.ProfileData with GPU events" % run)
except ImportError as e:
    check(False, "jax.profiler.ProfileData: %s" % e)

# Summary events through TensorBoard
try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    for run in ("cuda_nvtx", "torch_train", "killed"):
        ea = EventAccumulator(os.path.join(ld, run))
        ea.Reload()
        tags = ea.Tags()
        n = sum(len(v) for k, v in tags.items() if isinstance(v, list))
        print("  %s tags:" % run, {k: v for k, v in tags.items() if v})
        check(n > 0, "%s: EventAccumulator reads the summary events" % run)
except ImportError as e:
    check(False, "EventAccumulator: %s" % e)
sys.exit(1 if fails else 0)
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || failures=$((failures + 1))

# ---- 6. the in-process API ----
# samples/profile_api does its own CUDA work (driver-API kernels from PTX,
# pageable and pinned copies, a memset, NVTX ranges and a mark) between
# tbe_profiler_start and tbe_profiler_stop, prints what it did and what the
# profiler counted, and exits 1 when they differ.  Here the run it wrote is
# opened too: the Chrome trace must hold exactly what it did.
say "== samples/profile_api (in-process)"
if [ -x "$bd/profile_api" ]; then
  (cd "$work" && "$bd/profile_api" "$ld" --steps 5 --kernels 400) \
    >"$work/profile_api.stdout" 2>"$work/profile_api.stderr"
  rc=$?
  cat "$work/profile_api.stdout" "$work/profile_api.stderr" | tee -a "$log"
  [ $rc -eq 0 ] && ok "profile_api exited 0 (its counts match the profiler's)" || bad "profile_api: status $rc"
  did=$(grep -o 'did kernels=[0-9]* memcpy=[0-9]* memset=[0-9]* nvtx_ranges=[0-9]* nvtx_marks=[0-9]*' \
    "$work/profile_api.stdout" | sed 's/^did //')
  prof=$(grep -o 'profiler kernels=[0-9]* memcpy=[0-9]* memset=[0-9]* nvtx_ranges=[0-9]* nvtx_marks=[0-9]*' \
    "$work/profile_api.stdout" | sed 's/^profiler //')
  grep -q "result=ok" "$work/profile_api.stdout" && ok "profile_api computed the right result" || bad "profile_api result"
  if [ -z "$did" ] || [ -z "$prof" ]; then
    bad "profile_api printed no counts"
  else
    [ "$did" = "$prof" ] && ok "profile_api: tbe_profiler_result counts == work done ($did)" \
      || bad "profile_api: tbe_profiler_result ($prof) != work done ($did)"
    python3 - "$ld" "$did" <<'PY' 2>&1 | tee -a "$log"
import glob, gzip, json, os, sys
ld, counts = sys.argv[1], sys.argv[2]
want = {k: int(v) for k, v in (kv.split("=") for kv in counts.split())}
fails = 0
def check(cond, what):
    global fails
    print(("PASS: " if cond else "FAIL: ") + what)
    fails += 0 if cond else 1
p = glob.glob(os.path.join(ld, "plugins/profile/profile_api/*.trace.json.gz"))
check(len(p) == 1, "profile_api: one Chrome trace (%s)" % p)
if not p:
    sys.exit(1)
with gzip.open(p[0], "rt") as f:
    doc = json.load(f)
c = {}
for e in doc["traceEvents"]:
    if e.get("ph") in ("X", "i", "I"):
        c.setdefault(e.get("cat"), []).append(e)
nvtx = c.get("nvtx", [])
got = {
    "kernels": len(c.get("kernel", [])),
    "memcpy": len(c.get("gpu_memcpy", [])),
    "memset": len(c.get("gpu_memset", [])),
    "nvtx_ranges": sum(1 for e in nvtx if e["ph"] == "X"),
    "nvtx_marks": sum(1 for e in nvtx if e["ph"] != "X"),
}
for k in ("kernels", "memcpy", "memset", "nvtx_ranges", "nvtx_marks"):
    check(got[k] == want[k], "profile_api: Chrome trace %s %d == %d" % (k, got[k], want[k]))
kn = {e["name"] for e in c.get("kernel", [])}
check(kn == {"add_one"}, "profile_api: kernel names %s == {'add_one'}" % sorted(kn)[:3])
mc = sorted(e["name"] for e in c.get("gpu_memcpy", []))
print("  copies:", mc)
check(any("Pageable" in n for n in mc) and any("Pinned" in n for n in mc), "profile_api: pageable and pinned copies")
names = {e["name"] for e in nvtx}
check({"upload", "step 0", "kernels", "download", "done"} <= names, "profile_api: NVTX names (%s)" % sorted(names)[:8])
sys.exit(1 if fails else 0)
PY
    [ "${PIPESTATUS[0]}" -eq 0 ] || failures=$((failures + 1))
  fi
else
  say "skipped: $bd/profile_api not there"
fi

(cd "$work" && tar czf "$out/log_dir.tgz" log_dir) 2>/dev/null
say "== check_gpu: $failures failure(s) in $(( $(date +%s) - t_start )) s; runs in $out/log_dir.tgz"
[ $failures -eq 0 ]
