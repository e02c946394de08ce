#!/usr/bin/env bash
# cupti_abi_planted.sh CC SRC_DIR CUPTI_INCLUDE_DIR...: src/collect/cupti_abi_check.c
# must catch a drift between src/collect/cupti_abi.h and NVIDIA's headers.
# It compiles the check against an unchanged copy (must pass), then against
# copies each with one planted defect (must fail, naming what differs): an
# enum value, two fields swapped, a field's type, a pad's size, an inner
# field of an inline aggregate, a profiler call's struct size, a
# prototype.  A defect whose text no longer matches the header fails the
# test too, so the list stays live.
set -uo pipefail
cc=$1 src=$2
shift 2
incs=()
for d in "$@"; do incs+=("-I$d"); done
work=$(mktemp -d "${TMPDIR:-/tmp}/tbeabi.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/collect"
cp "$src/src/collect/cupti_abi_check.c" "$work/"
failures=0

compile() {  # -> compiler's status; its messages in $work/log
  "$cc" -std=gnu11 -fsyntax-only -I"$work" "${incs[@]}" "$work/cupti_abi_check.c" >"$work/log" 2>&1
}

cp "$src/src/collect/cupti_abi.h" "$work/collect/"
if ! compile; then
  echo "FAIL: the unchanged cupti_abi.h does not pass the check:"
  cat "$work/log"
  exit 1
fi
echo "ok: unchanged cupti_abi.h passes"

# plant NAME SED_SCRIPT EXPECTED: the check must fail with EXPECTED in its messages.
plant() {
  local name=$1 script=$2 expect=$3
  sed -e "$script" "$src/src/collect/cupti_abi.h" >"$work/collect/cupti_abi.h"
  if cmp -s "$src/src/collect/cupti_abi.h" "$work/collect/cupti_abi.h"; then
    echo "FAIL: $name: the defect was not planted (the header's text changed?)"
    failures=$((failures + 1))
  elif compile; then
    echo "FAIL: $name: the check compiled a wrong header"
    failures=$((failures + 1))
  elif ! grep -q -- "$expect" "$work/log"; then
    echo "FAIL: $name: the check failed without naming $expect:"
    head -5 "$work/log"
    failures=$((failures + 1))
  else
    echo "ok: $name caught ($expect)"
  fi
}

plant "enum value" 's/E(CUPTI_ACTIVITY_KIND_MEMSET, 2)/E(CUPTI_ACTIVITY_KIND_MEMSET, 3)/' \
  'CUPTI_ACTIVITY_KIND_MEMSET'
plant "fields swapped" \
  's/F(S, uint32_t, srcDeviceId, )/F(S, uint32_t, srcContextId_, )/;s/F(S, uint32_t, srcContextId, )/F(S, uint32_t, srcDeviceId, )/;s/srcContextId_/srcContextId/' \
  'CUpti_ActivityMemcpyPtoP4.srcDeviceId offset'
plant "field type" 's/F(S, int64_t, gridId, )/F(S, uint64_t, gridId, )/' 'CUpti_ActivityKernel10.gridId type'
plant "pad size" 's/F(S, uint8_t, reserved, \[6\])/F(S, uint8_t, reserved, [4])/' \
  'CUpti_ActivityDevice5.reserved size'
plant "inline aggregate" 's/^  uint32_t pad2;$/  uint16_t pad2;/' 'memoryPoolConfig.pad2'
plant "struct size" 's/X(CUpti_PmSampling_DecodeData_Params, overflow)/X(CUpti_PmSampling_DecodeData_Params, decodeStopReason)/' \
  'CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE'
plant "prototype" 's/cuptiGetVersion(uint32_t \*version)/cuptiGetVersion(uint64_t *version)/' \
  'cuptiGetVersion'

[ "$failures" = 0 ] || { echo "$failures planted defect(s) not caught"; exit 1; }
echo "every planted defect caught"
