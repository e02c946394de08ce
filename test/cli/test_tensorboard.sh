#!/bin/bash
# test_tensorboard.sh: two before/after pairs in a real TensorBoard 2.21,
# checked through its HTTP data API (scripts/check_tb_compare.py says
# what): a pair of runs collected by tbexport on an H200 (a GPT-style
# training loop in fp32 and bf16, test/data/collected/) and a pair of
# PyTorch profiler traces (test/data/kineto/), each imported with labels
# and compared with `tbexport diff` (the Kineto pair's operator series,
# text and layout too); and a run with GPU metrics (the
# collector's spool with PM samples and range-profiler figures,
# test/data/metrics/metrics.spool, written by test_hwmetrics).
#
# Needs the TensorBoard of ../shared/tools/tensorboard/ (a sibling of the
# repository, or TBE_TB_TOOLS): when that folder is absent the test says so
# and is skipped (exit 77); anything else that goes wrong fails it.
# usage: test_tensorboard.sh TBEXPORT TEST_DATA_DIR
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
D=$(cd "$2" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${TBE_TB_TOOLS:-$root/../shared/tools/tensorboard}
if [ ! -x "$tools/serve" ]; then
  echo "SKIP: no TensorBoard at $tools (set TBE_TB_TOOLS to ../shared/tools/tensorboard)"
  exit 77
fi
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
trap 'pkill -f -- "--port $port" 2>/dev/null; rm -rf "$tmp"' EXIT
L=$tmp/log
die() { echo "FAIL: $*"; exit 1; }

imp() { # RUN FILE LABEL...
  local run=$1 file=$2; shift 2
  local labels=()
  for l in "$@"; do labels+=(--label "$l"); done
  "$B" import --quiet --logdir "$L" --run "$run" "${labels[@]}" "$file" >/dev/null 2>"$tmp/err" ||
    die "import $run: $(cat "$tmp/err")"
}
imp gpt_fp32 "$D/collected/gpt_fp32.xplane.pb" precision=fp32 model=gpt
imp gpt_bf16 "$D/collected/gpt_bf16.xplane.pb" precision=bf16 model=gpt
imp cnn_fp32 "$D/kineto/h200_cnn_fp32.pt.trace.json" precision=fp32 model=cnn
imp cnn_bf16 "$D/kineto/h200_cnn_bf16.pt.trace.json" precision=bf16 model=cnn
imp pm "$D/metrics/metrics.spool"
for p in gpt cnn; do
  "$B" diff --quiet --logdir "$L" ${p}_fp32 ${p}_bf16 >/dev/null 2>"$tmp/err" ||
    die "diff $p: $(cat "$tmp/err")"
done

url=$("$tools/serve" "$L" "$port" 600) || die "TensorBoard did not start: $(tail -3 "/tmp/tb-$port.log")"
# The profiler plugin loads runs in the background: wait until it lists all four.
for _ in $(seq 1 120); do
  n=$(curl -s "${url}data/plugin/pytorch_profiler/runs" | python3 -c \
    'import json,sys; d=json.load(sys.stdin); print(0 if d.get("loading") else len(d["runs"]))' 2>/dev/null)
  [ "${n:-0}" -ge 4 ] && break
  sleep 1
done
python3 "$root/scripts/check_tb_compare.py" --url "$url" --logdir "$L" --tbexport "$B" \
  --pair gpt_fp32:gpt_bf16 --pair cnn_fp32:cnn_bf16 \
  --label gpt_fp32:precision=fp32 --label gpt_bf16:precision=bf16 \
  --label cnn_fp32:model=cnn --label cnn_bf16:precision=bf16 --metrics pm
