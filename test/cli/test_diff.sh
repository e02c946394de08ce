#!/bin/bash
# test_diff.sh: `tbexport diff` on small hand-written Chrome traces
# (test/data/cli/): exact output in every format, the comparison written
# into TensorBoard when NEW is a run of a log_dir (and not with
# --no-events or when NEW is a file), and every error path: non-zero exit,
# exactly one line on stderr, nothing on stdout.
# usage: test_diff.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
D=$2/cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

expect_out() {
  local exp=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 0 ] || { fail "$* exited $rc: $(cat "$tmp/err")"; return; }
  diff -u "$exp" "$tmp/out" >"$tmp/diff" || { fail "$* output differs:"; cat "$tmp/diff"; }
  [ ! -s "$tmp/err" ] || fail "$* wrote to stderr: $(cat "$tmp/err")"
}

expect_err() {
  local want=$1 pat=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq "$want" ] || fail "$* exited $rc, want $want"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "$* printed $(wc -l <"$tmp/err") stderr lines"; cat "$tmp/err"; }
  grep -q -- "$pat" "$tmp/err" || fail "$* stderr '$(cat "$tmp/err")' lacks '$pat'"
  [ ! -s "$tmp/out" ] || fail "$* wrote to stdout"
}

cd "$D" || exit 1
for f in table csv json markdown; do
  expect_out "diff.$f.expected" "$B" diff --format "$f" small.trace.json small2.trace.json
done

# The CSV's per-name deltas add up to the difference of the kernel totals.
awk -F, '/^overall,kernel time,/ { want = $5 }
         /^kernels,/ { sum += $(NF-2) }
         END { if (sum != want) { print "sum " sum " != " want; exit 1 } }' diff.csv.expected \
  || fail "kernel deltas do not add up"

# Runs in a log_dir: the comparison lands in <logdir>/<NEW>/.
mkdir -p "$tmp/log/plugins/profile/fp32" "$tmp/log/plugins/profile/bf16"
cp small.trace.json "$tmp/log/plugins/profile/fp32/h.pt.trace.json"
cp small2.trace.json "$tmp/log/plugins/profile/bf16/h.pt.trace.json"
"$B" diff --logdir "$tmp/log" fp32 bf16 >"$tmp/out" 2>"$tmp/err" || fail "diff of runs: $(cat "$tmp/err")"
[ "$(head -1 "$tmp/out")" = "Comparing fp32 (base) with bf16 (new)" ] || fail "labels: $(head -1 "$tmp/out")"
diff <(tail -n +2 "$tmp/out") <(tail -n +2 diff.table.expected) >/dev/null || fail "run diff differs from the files' diff"
ev=$(ls "$tmp"/log/bf16/events.out.tfevents.* 2>/dev/null | head -1)
[ -n "$ev" ] || fail "no event file in log/bf16"
grep -q "^wrote .*/bf16/events.out.tfevents" "$tmp/err" || fail "no 'wrote' line: $(cat "$tmp/err")"
for tag in diff/fp32/wall_time_ratio diff/fp32/kernel_time_ratio diff/fp32/step_time_ratio \
           diff/fp32/kernels/gemm_float diff/fp32/report; do
  [ -n "$ev" ] && { grep -aq "$tag" "$ev" || fail "tag $tag missing from $ev"; }
done
if command -v python3 >/dev/null && [ -n "$ev" ]; then
  # Decode the TFRecords and check the kernel ratio: 65 us / 100 us.
  python3 - "$ev" <<'PY' || fail "event file content"
import struct, sys
data = open(sys.argv[1], "rb").read()
off, found = 0, {}
while off < len(data):
    (n,) = struct.unpack_from("<Q", data, off)
    rec = data[off + 12: off + 12 + n]
    off += 16 + n
    # Summary.Value: tag (field 1) then simple_value (field 2, fixed32 float).
    i = rec.find(b"diff/fp32/kernels/")
    if i > 0:
        ln = rec[i - 1]
        tag = rec[i:i + ln].decode()
        j = i + ln
        if rec[j] == 0x15:
            found[tag] = struct.unpack_from("<f", rec, j + 1)[0]
assert len(found) == 1, found
(v,) = found.values()
assert abs(v - 0.65) < 1e-6, v
PY
fi
n_before=$(ls "$tmp"/log/bf16 | wc -l)
"$B" diff --no-events --logdir "$tmp/log" fp32 bf16 >/dev/null 2>"$tmp/err" || fail "--no-events"
[ "$(ls "$tmp"/log/bf16 | wc -l)" -eq "$n_before" ] || fail "--no-events wrote a file"
[ ! -s "$tmp/err" ] || fail "--no-events printed: $(cat "$tmp/err")"

# Errors.
expect_err 2 "expected BASE and NEW, got 1 argument" "$B" diff small.trace.json
expect_err 2 "expected BASE and NEW, got 3 arguments" "$B" diff small.trace.json small2.trace.json x
expect_err 2 "no run 'nope'" "$B" diff --logdir "$tmp/log" fp32 nope
expect_err 2 "byte 80" "$B" diff bad.trace.json small.trace.json
expect_err 2 "byte 80" "$B" diff small.trace.json bad.trace.json
expect_err 2 "--top" "$B" diff --top x small.trace.json small2.trace.json
expect_err 2 "--format" "$B" diff --format html small.trace.json small2.trace.json
expect_err 2 "unknown option" "$B" diff --sortt small.trace.json small2.trace.json
chmod 0555 "$tmp/log/bf16"
if [ "$(id -u)" != 0 ]; then
  expect_err 1 "log/bf16" "$B" diff --logdir "$tmp/log" fp32 bf16
fi
chmod 0755 "$tmp/log/bf16"

"$B" diff --help >"$tmp/out" 2>&1 || fail "--help"
grep -q "usage: tbexport diff" "$tmp/out" || fail "--help text"

[ $fails -eq 0 ] && echo "test_diff: all passed"
exit $((fails > 0))
