#!/usr/bin/env bash
# test_inspect.sh: `tbexport inspect` on the golden TensorBoard runs, on a
# corrupt and a truncated copy, and its usage errors.
# usage: test_inspect.sh TBEXPORT_BINARY TEST_DATA_DIR
set -euo pipefail
bin=$1 data=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# help
"$bin" inspect --help >"$work/help" || fail "--help exit status"
grep -q "usage: tbexport inspect" "$work/help" || fail "--help text"

# the golden log directory: every run and tag
"$bin" inspect "$data/tensorboard/run1" >"$work/out" || fail "inspect run1 exit status"
grep -q "4 runs, 115 events" "$work/out" || fail "run/event count: $(head -1 "$work/out")"
for t in loss/train lr weights img pr notes/text_summary custom_scalars__config__ \
         _hparams_/experiment hparam/acc multi; do
  grep -Eq "^    $t +count" "$work/out" || fail "tag $t missing"
done
grep -Eq "^    loss/train +count 50 +steps 0\.\.49 +wall 2023-11-14T22:13:20\.000Z \.\. 2023-11-14T22:14:09\.000Z" \
  "$work/out" || fail "loss/train line"
grep -q "^run multi_b" "$work/out" || fail "run multi_b"

# --dump: one JSON object per event
so="$data/tensorboard/scalars_only/events.out.tfevents.1796205392.vm.580.4.golden"
"$bin" inspect --dump "$so" >"$work/dump" || fail "--dump exit status"
[ "$(wc -l <"$work/dump")" -eq 6 ] || fail "--dump line count"
python3 - "$work/dump" <<'PY' || fail "--dump JSON content"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["kind"] == "file_version" and lines[0]["file_version"] == "brain.Event:2"
for s, e in enumerate(lines[1:]):
    assert e["step"] == s and e["wall_time"] == 1700000000 + s, e
    v = e["values"][0]
    assert v["tag"] == "x" and v["type"] == "simple_value" and v["value"] == 0.5 * s, v
assert [e["offset"] for e in lines] == [0, 88, 125, 164, 203, 242]
PY

# a corrupt record: exit 2 and the byte offset of the record
cp "$so" "$work/events.out.tfevents.bad"
printf '\x55' | dd of="$work/events.out.tfevents.bad" bs=1 seek=200 conv=notrunc status=none
set +e
"$bin" inspect "$work/events.out.tfevents.bad" >/dev/null 2>"$work/err"
st=$?
set -e
[ $st -eq 2 ] || fail "corrupt file exit status $st"
grep -q "corrupt record at byte offset 164" "$work/err" || fail "corrupt message: $(cat "$work/err")"

# a truncated tail: a warning with the offset, exit 0
head -c 230 "$so" >"$work/events.out.tfevents.cut"
"$bin" inspect "$work/events.out.tfevents.cut" >"$work/out" 2>"$work/err" || fail "truncated exit status"
grep -q "warning: .*byte offset 203" "$work/err" || fail "truncated warning: $(cat "$work/err")"
grep -q "4 events" "$work/out" || fail "truncated: events before the cut"

# usage errors
expect2() {
  set +e
  "$bin" inspect "$@" >/dev/null 2>"$work/err"
  local s=$?
  set -e
  [ $s -eq 2 ] || fail "inspect $* exit status $s"
  [ "$(wc -l <"$work/err")" -ge 1 ] || fail "inspect $*: no message"
}
expect2
expect2 --bogus "$so"
expect2 "$work/does-not-exist"
mkdir "$work/empty"
expect2 "$work/empty"
expect2 "$so" extra
echo "test_inspect: OK"
