#!/bin/bash
# test_clients_ops.sh: the operator level of before/after pairs as the two
# clients PyTorch users read it with: the PyTorch Profiler TensorBoard
# plugin (torch-tb-profiler 0.4.3, frozen) through its HTTP data API
# (scripts/check_ops_plugin.py: runs, Overview with CPU Exec and the
# occupancy figures, Operator view, Kernel view's operator column, Diff
# against `tbexport diff`) and Holistic Trace Analysis through its Python
# API (scripts/check_hta.py --pair: TraceAnalysis keeps every GPU op of the
# iterations it analyses, its kernel time against `tbexport summary` with
# the residual stated, TraceDiff pairs the GEMMs).
#
# The pairs:
#   - a pair collected here by `tbexport --record-shapes --steps
#     nvtx:train_step -- python3 PROG` through the stand-in libcupti and
#     the stand-in torch (test/data/faketorch; test_ops.sh shows the
#     program's parts): four steps of linear/addmm, relu, sum (launched
#     through the driver API) and the backward mm, on an H200's limits;
#     the "after" side's forward GEMM twice as slow and its relu kernel
#     renamed.  Without the collector (a build without it) this pair is
#     left out, and said;
#   - the torch.profiler pair test/data/kineto/h200_cnn_{fp32,bf16}
#     imported with `tbexport import`;
#   - collected pairs committed as log directories (the layout `tbexport
#     -- ...` writes): test/data/collected/ops_pair with runs gpt_fp32 and
#     gpt_bf16 when it is there, and any given as TBE_OPS_PAIRS="LOGDIR:BASE:NEW
#     ..." (each run's plugins/profile/RUN/*.trace.json.gz is imported
#     afresh, so that what is checked is what this build writes).
#
# Needs ../shared/tools/tensorboard and ../shared/tools/hta (siblings of the
# repository, or TBE_TB_TOOLS / TBE_HTA_TOOLS): when either is absent the
# test says so and is skipped (exit 77); anything else that goes wrong
# fails it.
# usage: test_clients_ops.sh TBEXPORT DATA_DIR
set -u
. "$(dirname "$0")/clients_lib.sh"
clients_init "$1" "$2"
L=$tmp/log
pairs=()

# ---- a pair collected here ----
fake=$(dirname "$B")/libcollect_fake_libcupti.so
if [ -f "$fake" ]; then
  # python3 loads the injection library; in an ASan build (gcc: the runtime
  # is a shared library) only once the runtime is preloaded, and python's
  # own leaks are not ours to report (as test_ranks.sh)
  inj=$("$B" --logdir "$tmp/probe" --run probe --quiet -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null)
  [ -f "$inj" ] || die "no injection library: '$inj'"
  py=(python3)
  asan=$(ldd "$inj" 2>/dev/null | awk '/libasan/ {print $3}')
  [ -z "$asan" ] || py=(env LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" python3)
fi
if [ -f "$fake" ] && ldd "$inj" 2>/dev/null | grep -q libtsan; then
  echo "note: a TSan build: python3 cannot load the injection library; the pair collected here is left out"
elif [ -f "$fake" ]; then
  cat >"$tmp/prog.py" <<'EOF'
import ctypes, os, time
import torch
inj = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
inj.InitializeInjection()  # as the CUDA driver does at cuInit
fake = ctypes.CDLL(os.environ["TBEXPORT_CUPTI_LIB"])
assert fake.fake_nvtx_init() == 1, "NVTX: the injection library refused"
fake.fake_cupti_now.restype = ctypes.c_uint64
U = ctypes.c_uint64
after = os.environ["VARIANT"] == "after"
corr = [100]
def wait_past(t):
    while fake.fake_cupti_now() <= t:
        time.sleep(0.00005)
def launch(kernel, dur_us, grid, block, regs, smem, driver=False):
    corr[0] += 1
    t = fake.fake_cupti_now()
    if driver:
        fake.fake_cupti_driver_api(307, corr[0], U(t), U(t + 3000))  # cuLaunchKernel
    else:
        fake.fake_cupti_api(corr[0], U(t), U(t + 3000))
    end = t + 4000 + int(dur_us * 1000)
    fake.fake_cupti_kernel_cfg(corr[0], U(t + 4000), U(end), kernel.encode(), grid, block, regs, smem)
    wait_past(end)
fake.fake_cupti_device(0)
def step():
    torch.op("aten::linear", [[64, 512], [512, 512], [512]], seq=True,
             body=lambda: torch.op("aten::addmm", [[512], [64, 512], [512, 512]],
                                   body=lambda: launch("ampere_sgemm_128x64_tn", 80 if after else 40,
                                                       264, 256, 64, 16384)))
    torch.op("aten::relu", [[64, 512]], seq=True,
             body=lambda: launch("elementwise_relu_v2" if after else "elementwise_relu", 8, 1024, 128, 16, 0))
    torch.op("aten::sum", [[64, 512]], seq=True,
             body=lambda: launch("reduce_kernel", 12, 64, 512, 32, 2064, driver=True))
    torch.op("autograd::engine::evaluate_function: AddmmBackward0",
             body=lambda: torch.op("AddmmBackward0", [[64, 512]], seq=0,
                                   body=lambda: torch.op("aten::mm", [[64, 512], [512, 512]],
                                                         body=lambda: launch("ampere_sgemm_64x64_nn", 30,
                                                                             132, 128, 128, 32768))))
for i in range(4):
    torch.op("train_step", body=step)
EOF
  for v in before after; do
    env TBEXPORT_CUPTI_LIB="$fake" FAKE_NVTX="$fake" PYTHONPATH="$D/faketorch" VARIANT=$v PYTHONDONTWRITEBYTECODE=1 \
      "$B" --logdir "$L" --run collected_$v --record-shapes --steps nvtx:train_step -- "${py[@]}" "$tmp/prog.py" \
      >"$tmp/out" 2>"$tmp/err" || die "collect $v: $(cat "$tmp/err")"
  done
  pairs+=(collected_before:collected_after)
else
  grep -q "collector was not built" <("$B" --logdir "$tmp/x" -- true 2>&1) ||
    die "no $fake in a build with the collector"
  echo "note: no collector in this build: the pair collected here is left out"
fi

# ---- imported pairs ----
imp() { # RUN FILE
  "$B" import --quiet --logdir "$L" --run "$1" "$2" >/dev/null 2>"$tmp/err" || die "import $1: $(cat "$tmp/err")"
}
imp cnn_fp32 "$D/kineto/h200_cnn_fp32.pt.trace.json"
imp cnn_bf16 "$D/kineto/h200_cnn_bf16.pt.trace.json"
pairs+=(cnn_fp32:cnn_bf16)
given=${TBE_OPS_PAIRS:-}
[ -d "$D/collected/ops_pair" ] && given="$D/collected/ops_pair:gpt_fp32:gpt_bf16 $given"
for p in $given; do
  dir=${p%%:*} rest=${p#*:}
  base=${rest%%:*} new=${rest#*:}
  for r in "$base" "$new"; do
    f=$(find "$dir/plugins/profile/$r" -name '*.trace.json.gz' 2>/dev/null | head -1)
    [ -n "$f" ] || die "$p: no plugins/profile/$r/*.trace.json.gz"
    imp "$r" "$f"
  done
  pairs+=("$base:$new")
done
runs=$(printf '%s\n' "${pairs[@]}" | tr ':' '\n' | wc -l)

# ---- the plugin ----
clients_serve "$L" "$runs"
args=()
for p in "${pairs[@]}"; do args+=(--pair "$p"); done
rc=0
python3 "$root/scripts/check_ops_plugin.py" --url "$url" --logdir "$L" --tbexport "$B" "${args[@]}" || rc=1

# ---- HTA ----
eval "$("$hta_tools/setup")" || die "HTA's setup failed"
"$TBE_HTA_PYTHON" "$root/scripts/check_hta.py" --logdir "$L" --tbexport "$B" "${args[@]}" 2>"$tmp/hta.err" || {
  tail -20 "$tmp/hta.err"
  rc=1
}
[ $rc -eq 0 ] && echo "test_clients_ops: ok (${pairs[*]})"
exit $rc
