#!/bin/bash
# test_clients_dist.sh: two-rank runs as the clients PyTorch users read a
# distributed run with: the PyTorch Profiler TensorBoard plugin's
# Distributed view (torch-tb-profiler 0.4.3, frozen: its HTTP data API) and
# Holistic Trace Analysis's comm/compute overlap and straggler analysis
# (its Python API), through scripts/check_dist_clients.py, which works out
# what each should show from our files under that client's rules and from
# `tbexport summary`.
#
# The runs:
#   - torch-nccl and torch-gloo, collected here: `tbexport` per rank under
#     torchrun's variables (RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID), each
#     rank's program making its GPU activity through the stand-in libcupti
#     (test/stress/collect_fake_libcupti.c) on its own GPU: four steps
#     (NVTX ranges, --steps nvtx:train_step) of a GEMM on stream 7, then,
#     in torch-nccl, an all-reduce and an all-gather (NCCL 2.18's kernel
#     names, which HTA's straggler analysis matches) on stream 23 while an
#     elementwise kernel runs on stream 7.  The ranks meet at a start time
#     (files in a shared folder) and place their records from it, so the
#     two timelines line up whatever the scheduling: rank 1 computes 5 ms
#     where rank 0 computes 2, and both all-reduces end together, as a
#     collective waits for its last rank: rank 1 is the straggler and rank
#     0 waits 3 ms a step.  torch-gloo is the same program without NCCL
#     kernels: its collectives run on the CPU.  Without the collector (a
#     build without it, or TSan, whose runtime python3 cannot load) these
#     two are left out, and said;
#   - ddp: the two-rank gloo job collected on the H200
#     (test/data/collected/ranks), imported afresh: its gloo:all_reduce
#     records make the backend "gloo" and the plugin's Distributed view
#     (of the CPU's collectives); it says it has no GPU communication;
#   - kineto-nccl, imported (any build): the same timeline written as
#     Kineto-layout JSON, one file per rank with distributedInfo (rank,
#     world size, no backend), c10d::allreduce_ and c10d::allgather_
#     operators around the launches and NCCL 2.19's kernel names
#     (ncclDevKernel_*), as a trace of a profiler that records c10d's
#     operators but not ProcessGroupNCCL's nccl:* ones.  HTA's straggler
#     analysis finds no communication kernel by these names (it matches
#     "ncclKernel" only), so it is not asked here.
# Also checked here: each rank's `tbexport` says once that a gloo run has
# no GPU communication (and an NCCL run says nothing of it), and the run's
# summary says it once per rank.
#
# Needs ../shared/tools/tensorboard and ../shared/tools/hta (siblings of the
# repository, or TBE_TB_TOOLS / TBE_HTA_TOOLS): when either is absent the
# test says so and is skipped (exit 77); anything else that goes wrong
# fails it.
# usage: test_clients_dist.sh TBEXPORT DATA_DIR
set -u
. "$(dirname "$0")/clients_lib.sh"
clients_init "$1" "$2"
unset RANK WORLD_SIZE LOCAL_RANK TORCHELASTIC_RUN_ID OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK \
  PMI_SIZE SLURM_PROCID SLURM_NTASKS SLURM_JOB_ID SLURM_STEP_ID PMIX_RANK MV2_COMM_WORLD_RANK
L=$tmp/log
nccl=() gloo=()
note="no NCCL kernel in this rank's trace (one of 2 ranks): its communication is on the CPU (gloo) or absent"

# ---- collected pairs ----
fake=$(dirname "$B")/libcollect_fake_libcupti.so
collect=0
if [ -f "$fake" ]; then
  inj=$("$B" --logdir "$tmp/probe" --run probe --quiet -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null)
  [ -f "$inj" ] || die "no injection library: '$inj'"
  py=(python3)
  asan=$(ldd "$inj" 2>/dev/null | awk '/libasan/ {print $3}')
  [ -z "$asan" ] || py=(env LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" python3)
  if ldd "$inj" 2>/dev/null | grep -q libtsan; then
    echo "note: a TSan build: python3 cannot load the injection library; the pairs collected here are left out"
  else
    collect=1
  fi
else
  grep -q "collector was not built" <("$B" --logdir "$tmp/x" -- true 2>&1) ||
    die "no $fake in a build with the collector"
  echo "note: no collector in this build: the pairs collected here are left out"
fi
if [ $collect = 1 ]; then
  cat >"$tmp/rank.py" <<'EOF'
import ctypes, os, sys, time
inj = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
inj.InitializeInjection()  # as the CUDA driver does at cuInit
fake = ctypes.CDLL(os.environ["TBEXPORT_CUPTI_LIB"])
fake.fake_cupti_now.restype = ctypes.c_uint64
U = ctypes.c_uint64
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
nccl = os.environ["COMM"] == "nccl"
meet = os.environ["MEET"]
US, MS = 1000, 1000000
for d in range(world):  # CUPTI reports every GPU of the machine
    fake.fake_cupti_device(d)
# Meet the other ranks: each writes its clock once its collector runs;
# all start from the latest, so the timelines line up.
mine = os.path.join(meet, "ready.%d" % rank)
open(mine + ".tmp", "w").write("%d\n" % fake.fake_cupti_now())
os.rename(mine + ".tmp", mine)
names = [os.path.join(meet, "ready.%d" % r) for r in range(world)]
deadline = time.time() + 120
while not all(os.path.exists(n) for n in names):
    if time.time() > deadline:
        sys.exit("rank %d: the other ranks never started" % rank)
    time.sleep(0.01)
t0 = max(int(open(n).read()) for n in names) + 20 * MS
P, C = 10 * MS, (2 if rank == 0 else 5) * MS
corr = [0]
def launch(at, kernel, start, end, stream, grid, block):
    corr[0] += 1
    if not fake.fake_cupti_api(corr[0], U(at), U(at + 10 * US)):
        sys.exit("no api record")
    if not fake.fake_cupti_kernel_on(corr[0], U(start), U(end), kernel.encode(), rank, stream, grid, block):
        sys.exit("no kernel record")
AR = "ncclKernel_AllReduce_RING_LL_Sum_bfloat16(ncclDevComm*, unsigned long, ncclWork*)"
AG = "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
for i in range(4):
    b = t0 + i * P
    fake.fake_cupti_range(i + 1, U(b), U(b + 9500 * US), b"train_step", None)
    launch(b + 50 * US, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", b + 100 * US,
           b + 100 * US + C, 7, 132, 384)
    if nccl:  # waits for the slower rank: ends at 8 ms on both
        launch(b + 70 * US, AR, b + 110 * US + C, b + 8 * MS, 23, 24, 640)
    launch(b + 90 * US, "elementwise_kernel", b + 150 * US + C, b + 1150 * US + C, 7, 1024, 128)
    if nccl:
        launch(b + 110 * US, AG, b + 8010 * US, b + 8200 * US, 23, 24, 640)
while fake.fake_cupti_now() <= t0 + 4 * P + MS:
    time.sleep(0.001)
EOF
  for comm in nccl gloo; do
    mkdir -p "$tmp/meet_$comm"
    for r in 0 1; do
      env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r TORCHELASTIC_RUN_ID=$comm COMM=$comm MEET="$tmp/meet_$comm" \
        TBEXPORT_CUPTI_LIB="$fake" "$B" --logdir "$L" --host node --steps nvtx:train_step -- \
        "${py[@]}" "$tmp/rank.py" >"$tmp/out.$comm.$r" 2>"$tmp/err.$comm.$r" &
      eval "p$r=\$!"
    done
    wait "$p0" || die "$comm rank 0: status $?: $(cat "$tmp/err.$comm.0")"
    wait "$p1" || die "$comm rank 1: status $?: $(cat "$tmp/err.$comm.1")"
    for r in 0 1; do
      n=$(grep -c "no NCCL kernel" "$tmp/err.$comm.$r")
      if [ $comm = gloo ]; then
        [ "$n" = 1 ] && grep -q "$note" "$tmp/err.$comm.$r" ||
          die "gloo rank $r: the profile command does not say it once: $(cat "$tmp/err.$comm.$r")"
      else
        [ "$n" = 0 ] || die "nccl rank $r: a note about no NCCL kernel: $(cat "$tmp/err.$comm.$r")"
      fi
    done
  done
  "$B" summary --logdir "$L" torch-gloo >"$tmp/sum.txt" 2>&1 || die "summary: $(cat "$tmp/sum.txt")"
  # the ranks' one note, once, with the first rank and how many more
  [ "$(grep -c "$note" "$tmp/sum.txt")" = 1 ] &&
    grep -q "^warning: node.rank0 (and 1 more host): $note" "$tmp/sum.txt" ||
    die "the run summary does not say the ranks' note once: $(head -8 "$tmp/sum.txt")"
  "$B" summary --logdir "$L" torch-nccl >"$tmp/sum.txt" 2>&1 || die "summary: $(cat "$tmp/sum.txt")"
  grep -q "no NCCL kernel" "$tmp/sum.txt" && die "the NCCL run says it has no NCCL kernel"
  nccl+=(torch-nccl:1)
  gloo+=(torch-gloo)
fi

# ---- an imported pair: Kineto layout, c10d operators, NCCL 2.19 names ----
python3 - "$tmp" <<'EOF' || die "the Kineto pair was not written"
import json, os, sys
out = sys.argv[1]
US = 1.0  # Kineto's unit
for rank in (0, 1):
    ev, corr, ext = [], [0], [100]
    pid, tid, C = 1000 + rank, 1000 + rank, 2000 if rank == 0 else 5000
    def x(cat, name, ts, dur, pid, tid, args):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                   "args": args})
    def launch(at, kernel, start, end, stream, op=None):
        corr[0] += 1
        a = {"correlation": corr[0]}
        if op:
            ext[0] += 1
            x("cpu_op", op, at - 5, 20, pid, tid, {"External id": ext[0]})
            a["External id"] = ext[0]
        x("cuda_runtime", "cudaLaunchKernel", at, 10, pid, tid, dict(a, cbid=211))
        ka = dict(a, device=rank, stream=stream, grid=[24, 1, 1], block=[640, 1, 1])
        x("kernel", kernel, start, end - start, rank, stream, ka)
    for i in range(4):
        b = 1000 + i * 10000
        ext[0] += 1
        x("user_annotation", "ProfilerStep#%d" % i, b, 9500, pid, tid, {"External id": ext[0]})
        launch(b + 50, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", b + 100, b + 100 + C, 7)
        launch(b + 70, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               b + 110 + C, b + 8000, 23, "c10d::allreduce_")
        launch(b + 90, "elementwise_kernel", b + 150 + C, b + 1150 + C, 7)
        launch(b + 130, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               b + 8010, b + 8200, 23, "c10d::allgather_")
    dev = [{"id": d, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "computeMajor": 9,
            "computeMinor": 0, "numSms": 132} for d in (0, 1)]
    doc = {"schemaVersion": 1, "deviceProperties": dev,
           "distributedInfo": {"rank": rank, "world_size": 2},
           "traceEvents": ev, "baseTimeNanoseconds": 1780000000000000000}
    with open(os.path.join(out, "rank%d.pt.trace.json" % rank), "w") as f:
        json.dump(doc, f)
EOF
for r in 0 1; do
  "$B" import --quiet --logdir "$L" --run kineto-nccl --host "node.rank$r" "$tmp/rank$r.pt.trace.json" \
    >/dev/null 2>"$tmp/err" || die "import rank $r: $(cat "$tmp/err")"
done
nccl+=(kineto-nccl)

# ---- a real gloo job: test/data/collected/ranks (two ranks under torchrun
# on the H200, PyTorch's gloo:all_reduce records), imported afresh ----
ddp=$D/collected/ranks/plugins/profile/ddp
if [ -d "$ddp" ]; then
  for r in 0 1; do
    "$B" import --quiet --logdir "$L" --run ddp --host "vm.rank$r" "$ddp/vm.rank$r.trace.json.gz" \
      >/dev/null 2>"$tmp/err" || die "import ddp rank $r: $(cat "$tmp/err")"
  done
  gloo+=(ddp)
fi

# ---- the plugin ----
runs=$(( ${#nccl[@]} + ${#gloo[@]} ))
clients_serve "$L" "$runs"
args=()
for r in "${nccl[@]}"; do args+=(--nccl "$r"); done
for r in "${gloo[@]}"; do args+=(--gloo "$r"); done
rc=0
python3 "$root/scripts/check_dist_clients.py" plugin --url "$url" --logdir "$L" --tbexport "$B" "${args[@]}" || rc=1

# ---- HTA ----
eval "$("$hta_tools/setup")" || die "HTA's setup failed"
"$TBE_HTA_PYTHON" "$root/scripts/check_dist_clients.py" hta --logdir "$L" --tbexport "$B" "${args[@]}" \
  2>"$tmp/hta.err" || {
  tail -20 "$tmp/hta.err"
  rc=1
}
[ $rc -eq 0 ] && echo "test_clients_dist: ok (${nccl[*]} ${gloo[*]})"
exit $rc
