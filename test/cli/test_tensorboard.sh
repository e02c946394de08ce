#!/bin/bash
# test_tensorboard.sh: what a real TensorBoard 2.21 shows of our runs,
# checked through its HTTP data API, never the files.
#
# The runs, in one log dir served once:
#   - two before/after pairs, each imported with labels and compared with
#     `tbexport diff`: a GPT-style training loop collected by tbexport on
#     an H200 in fp32 and bf16 (test/data/collected/) and PyTorch profiler
#     traces of a CNN (test/data/kineto/);
#   - GPU metrics: the collector's spool with PM samples and range-profiler
#     figures (test/data/metrics/metrics.spool, with steps) and a trace of a
#     GPU's PM counters over 2 s without steps (made here, as Chrome JSON);
#   - multi-host runs: the two H200 CNN traces as ranks 0 and 1 of one job
#     (distributedInfo added), and a two-rank torchrun job profiled with
#     `tbexport -- python` under torchrun's variables through a stand-in
#     libcupti (test/stress/collect_fake_libcupti.c), whose first step is
#     a slow warm-up (left out when the build has no collector, or under
#     TSan, where python cannot load it);
#   - a job of 12 ranks written by test/bench/gen_run.c (ranks 10 and 11
#     list after rank 9 only when the folders are zero-padded);
#   - log dirs of runs collected on the GPU machine, colon-separated (third
#     argument after the generator ctest passes, or TBE_TB_COLLECTED; by
#     default the H200 log dirs of test/data/collected/: the operators'
#     GPT pair, the two-rank DDP job, PM metrics without steps): every
#     plugins/profile/RUN/HOST.xplane.pb in them is imported as h200_RUN
#     and HOST (so the events are this tbexport's), and RUN_fp32/RUN_bf16
#     pairs are compared.
# scripts/check_tb_compare.py checks the pairs against `tbexport summary`
# (scalars, layout, text, HParams, GPU metrics, operators, the PyTorch
# Profiler plugin); scripts/check_tb_views.py what every run looks like:
# the run list, each rank's own curve, the job's series, descriptions,
# GPU metrics without steps, the HParams experiment and sessions, the
# custom scalars, the diff in both runs, the warm-up step.
#
# Needs the TensorBoard of ../shared/tools/tensorboard/ (a sibling of the
# repository, or TBE_TB_TOOLS): when that folder is absent the test says so
# and is skipped (exit 77); anything else that goes wrong fails it.
# usage: test_tensorboard.sh TBEXPORT TEST_DATA_DIR [GEN_RUN [COLLECTED_LOGDIR]]
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
D=$(cd "$2" && pwd)
collected=${4:-${TBE_TB_COLLECTED:-$D/collected/ops_pair:$D/collected/ranks:$D/collected/metrics}}
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${TBE_TB_TOOLS:-$root/../shared/tools/tensorboard}
if [ ! -x "$tools/serve" ]; then
  echo "SKIP: no TensorBoard at $tools (set TBE_TB_TOOLS to ../shared/tools/tensorboard)"
  exit 77
fi
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The server runs in a process group of its own (serve: setsid): end that
# group, found by the port it listens on.
stop_tb() {
  local pid pgid
  pid=$(ss -ltnpH "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
  [ -n "$pid" ] && pgid=$(ps -o pgid= -p "$pid" | tr -d ' ') && [ -n "$pgid" ] && kill -- "-$pgid" 2>/dev/null
  return 0
}
trap 'stop_tb; rm -rf "$tmp"' EXIT
L=$tmp/log
die() { echo "FAIL: $*"; exit 1; }
unset RANK WORLD_SIZE LOCAL_RANK TORCHELASTIC_RUN_ID TORCHELASTIC_RESTART_COUNT SLURM_PROCID \
  SLURM_JOB_ID SLURM_STEP_ID OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK MV2_COMM_WORLD_RANK

imp() { # RUN FILE [--host H] [--no-pt-link] LABEL...
  local run=$1 file=$2; shift 2
  local args=()
  while [ $# -gt 0 ]; do
    case $1 in
      --host) args+=(--host "$2"); shift 2 ;;
      --no-pt-link) args+=("$1"); shift ;;
      *) args+=(--label "$1"); shift ;;
    esac
  done
  "$B" import --quiet --logdir "$L" --run "$run" "${args[@]}" "$file" >/dev/null 2>"$tmp/err" ||
    die "import $run: $(cat "$tmp/err")"
}
imp gpt_fp32 "$D/collected/gpt_fp32.xplane.pb" precision=fp32 model=gpt
imp gpt_bf16 "$D/collected/gpt_bf16.xplane.pb" precision=bf16 model=gpt
imp cnn_fp32 "$D/kineto/h200_cnn_fp32.pt.trace.json" precision=fp32 model=cnn
imp cnn_bf16 "$D/kineto/h200_cnn_bf16.pt.trace.json" precision=bf16 model=cnn
# The runs below are for TensorBoard's own dashboards: no PyTorch link, so
# that the profiler plugin (checked on the pairs) does not load them too.
imp pm "$D/metrics/metrics.spool" --no-pt-link

# PM counters of one GPU every ms for 2 s without steps, and the H200 CNN
# traces as ranks 0 and 1 of one job (scripts/tb_demo_traces.py).
python3 "$root/scripts/tb_demo_traces.py" "$tmp" "$D" || die "making the demo traces"
imp pm_nosteps "$tmp/pm_nosteps.json" --no-pt-link
for r in 0 1; do imp ddp "$tmp/rank$r.json" --host "node.rank$r" --no-pt-link; done

# A two-rank torchrun job through the stand-in libcupti.
warm=()
multi=1
fake="$(dirname "$B")/libcollect_fake_libcupti.so"
inj=$("$B" --logdir "$tmp/probe" --run probe --quiet -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null)
py=(python3)
asan=$(ldd "$inj" 2>/dev/null | awk '/libasan/ {print $3}')
[ -n "$asan" ] && py=(env LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" python3)
if [ -f "$fake" ] && [ -f "$inj" ] && ! ldd "$inj" 2>/dev/null | grep -q libtsan; then
  cat >"$tmp/rank.py" <<'PY'
import ctypes, os, sys, time
inj = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
inj.InitializeInjection()  # as the CUDA driver does at cuInit
fake = ctypes.CDLL(os.environ["TBEXPORT_CUPTI_LIB"])
fake.fake_cupti_now.restype = ctypes.c_uint64
MS = 1000000
rank = int(os.environ["RANK"])
def at(base, ms): return ctypes.c_uint64(base + int(ms * MS))
t = fake.fake_cupti_now() + MS
# a warm-up step, then rank r takes r ms more per step
step_ms = [30.0] + [4.0 + rank + 0.25 * (k % 3) for k in range(1, 8)]
at_ms, corr = 0.0, 1
for k, d in enumerate(step_ms):
    fake.fake_cupti_range(k + 1, at(t, at_ms), at(t, at_ms + d), b"ProfilerStep#%d" % k, None)
    for j in range(2):
        s = at_ms + 0.1 + j * d / 2
        if not fake.fake_cupti_api(corr, at(t, s), at(t, s + 0.02)): sys.exit("no api record")
        if not fake.fake_cupti_kernel(corr, at(t, s + 0.05), at(t, s + d / 2 - 0.1), b"gemm_rank_kernel"):
            sys.exit("no kernel record")
        corr += 1
    at_ms += d
while fake.fake_cupti_now() <= t + int((at_ms + 1) * MS): time.sleep(0.0005)
PY
  for r in 0 1; do
    (cd "$tmp" && RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r TORCHELASTIC_RUN_ID=gloo TBEXPORT_CUPTI_LIB=$fake \
      "$B" --logdir "$L" --host node --quiet --no-pt-link -- "${py[@]}" rank.py 2>"$tmp/rank$r.err") &
    eval "p$r=\$!"
  done
  wait "$p0" || die "rank 0: $(cat "$tmp/rank0.err")"
  wait "$p1" || die "rank 1: $(cat "$tmp/rank1.err")"
  warm=(--warmup torch-gloo)
  multi=2
else
  echo "note: no collector or a TSan build: the torchrun job through the stand-in libcupti is not checked"
fi

# A job of 12 ranks (test/bench/gen_run.c, ctest's third argument): rank10
# and rank11 must list after rank09, not after rank1.
gen=${3:-}
if [ -n "$gen" ] && [ -x "$gen" ]; then
  "$gen" --logdir "$L" --run wide --ranks 12 --events-per-rank 200 --steps 6 --outputs xplane,events \
    >/dev/null 2>"$tmp/err" || die "gen_run: $(cat "$tmp/err")"
  multi=$((multi + 1))
fi

pairs=(--pair gpt_fp32:gpt_bf16 --pair cnn_fp32:cnn_bf16)
IFS=: read -ra cdirs <<<"$collected"
for c in "${cdirs[@]}"; do
  [ -d "$c/plugins/profile" ] || die "$c: no plugins/profile/ (a log dir of collected runs)"
  n=0
  for f in "$c"/plugins/profile/*/*.xplane.pb; do
    [ -e "$f" ] || continue
    r=h200_$(basename "$(dirname "$f")")
    imp "$r" "$f" --host "$(basename "$f" .xplane.pb)" --no-pt-link
    n=$((n + 1))
    case $(basename "$f") in *.rank1.*) multi=$((multi + 1)) ;; esac
  done
  [ "$n" -gt 0 ] || die "$c: no plugins/profile/*/*.xplane.pb"
  for f in "$c"/plugins/profile/*_fp32; do
    r=$(basename "$f" _fp32)
    [ -d "$c/plugins/profile/${r}_bf16" ] && pairs+=(--pair "h200_${r}_fp32:h200_${r}_bf16")
  done
done
for p in "${pairs[@]}"; do
  [ "$p" = --pair ] && continue
  "$B" diff --quiet --logdir "$L" "${p%%:*}" "${p#*:}" >/dev/null 2>"$tmp/err" || die "diff $p: $(cat "$tmp/err")"
done

url=$("$tools/serve" "$L" "$port" 600) || die "TensorBoard did not start: $(tail -3 "/tmp/tb-$port.log")"
# The profiler plugin loads runs in the background: wait until it lists
# the four runs of the pairs it is checked on.
for _ in $(seq 1 120); do
  n=$(curl -s "${url}data/plugin/pytorch_profiler/runs" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len({"gpt_fp32", "gpt_bf16", "cnn_fp32", "cnn_bf16"} & set(d["runs"])))' 2>/dev/null)
  [ "${n:-0}" -ge 4 ] && break
  sleep 1
done
rc=0
echo "TensorBoard up after $SECONDS s"
python3 "$root/scripts/check_tb_compare.py" --url "$url" --logdir "$L" --tbexport "$B" \
  --pair gpt_fp32:gpt_bf16 --pair cnn_fp32:cnn_bf16 \
  --label gpt_fp32:precision=fp32 --label gpt_bf16:precision=bf16 \
  --label cnn_fp32:model=cnn --label cnn_bf16:precision=bf16 --metrics pm || rc=1
python3 "$root/scripts/check_tb_views.py" --url "$url" --logdir "$L" --tbexport "$B" \
  "${pairs[@]}" "${warm[@]}" --want-multi "$multi" --want-nosteps-metrics 1 --want-kernel-metrics 1 || rc=1
echo "checked after $SECONDS s"
exit $rc
