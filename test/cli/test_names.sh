#!/bin/bash
# test_names.sh: what a person reads of kernel names, end to end.  A Chrome
# trace with CUPTI's mangled kernel names (as our older files and other
# tools write them) goes through `tbexport summary` and `tbexport import`:
# the names shown are c++filt's (the c++filt binary is the oracle; the
# test fails without it), the Chrome JSON written keeps each mangled name
# as the "mangled name" arg, TensorBoard gets the documented tags, and
# reading the outputs back changes nothing.
# usage: test_names.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

command -v c++filt >/dev/null || { echo "FAIL: c++filt (binutils), the oracle, is missing"; exit 1; }

M1=_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb
M2=_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_
D1=$(echo "$M1" | c++filt)
D2=$(echo "$M2" | c++filt)
[ "$D1" != "$M1" ] && [ "$D2" != "$M2" ] || fail "c++filt did not demangle the test names"

cat >"$tmp/old.trace.json" <<EOF
{
  "schemaVersion": 1,
  "traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1000.000, "dur": 5.000, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1010.000, "dur": 5.000, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "$M1", "pid": 0, "tid": 7, "ts": 1020.000, "dur": 40.000, "args": {"correlation": 1, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "$M2", "pid": 0, "tid": 7, "ts": 1070.000, "dur": 30.000, "args": {"correlation": 2, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "$M1", "pid": 0, "tid": 7, "ts": 1110.000, "dur": 20.000, "args": {"device": 0, "stream": 7}}
  ]
}
EOF

# summary: c++filt's names, whole with --wide; never the mangled ones.
"$B" summary --wide --format csv "$tmp/old.trace.json" >"$tmp/sum.csv" 2>"$tmp/err" ||
  fail "summary exited $?: $(cat "$tmp/err")"
grep -qF "\"$D1\"" "$tmp/sum.csv" || grep -qF "$D1," "$tmp/sum.csv" || fail "summary lacks '$D1'"
grep -qF "$D2" "$tmp/sum.csv" || fail "summary lacks '$D2'"
grep -q "_ZN2at" "$tmp/sum.csv" && fail "summary shows a mangled name"
# (the name column is the width less diff's 71 columns of figures, the same
# in every report: 39 columns at --width 110 hold the short name whole)
"$B" summary --width 110 "$tmp/old.trace.json" >"$tmp/sum.txt" 2>"$tmp/err" || fail "summary (table) exited $?"
grep -q "^vectorized_gather_kernel<16, long>  " "$tmp/sum.txt" || {
  fail "table lacks the short name"
  cat "$tmp/sum.txt"
}

# import: the Chrome JSON written names kernels as c++filt does and keeps
# the mangled text; the events carry the documented tags.
"$B" import "$tmp/old.trace.json" --logdir "$tmp/log" --run r --host h >/dev/null 2>"$tmp/err" ||
  fail "import exited $?: $(cat "$tmp/err")"
gz=$tmp/log/plugins/profile/r/h.trace.json.gz
[ -f "$gz" ] || fail "no $gz"
python3 - "$gz" "$M1" "$D1" "$M2" "$D2" >"$tmp/py" 2>&1 <<'PY' || { fail "Chrome JSON check"; cat "$tmp/py"; }
import gzip, json, sys
path, m1, d1, m2, d2 = sys.argv[1:]
ev = [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("cat") == "kernel"]
got = sorted((e["name"], e["args"].get("mangled name")) for e in ev)
want = sorted([(d1, m1), (d1, m1), (d2, m2)])
assert got == want, (got, want)
PY
"$B" inspect "$tmp/log/r" >"$tmp/tags" 2>&1 || fail "inspect exited $?"
grep -q "kernels/vectorized_gather_kernel_16_long.6db173f3 " "$tmp/tags" || {
  fail "no kernels/vectorized_gather_kernel_16_long.6db173f3 tag"
  grep "kernels/" "$tmp/tags"
}
grep -q "kernels/vectorized_elementwise_kernel_4_FillFunctor_float_array_char_1ul.1f392d55 " "$tmp/tags" ||
  fail "no elementwise tag"

# Reading our outputs back changes nothing: same names, one arg each.
for f in "$gz" "$tmp/log/plugins/profile/r/h.xplane.pb"; do
  "$B" summary --wide --format csv "$f" >"$tmp/again.csv" 2>"$tmp/err" || fail "summary $f exited $?"
  grep -qF "$D1" "$tmp/again.csv" || fail "$f: lacks '$D1'"
  grep -q "_ZN2at" "$tmp/again.csv" && fail "$f: shows a mangled name"
done
"$B" import "$gz" --logdir "$tmp/log2" --run r --host h --format json >/dev/null 2>"$tmp/err" ||
  fail "re-import exited $?: $(cat "$tmp/err")"
python3 - "$tmp/log2/plugins/profile/r/h.trace.json.gz" "$M1" "$D1" >"$tmp/py" 2>&1 <<'PY' || { fail "re-import check"; cat "$tmp/py"; }
import gzip, json, sys
path, m1, d1 = sys.argv[1:]
ev = [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("cat") == "kernel"]
assert sum(1 for e in ev if e["name"] == d1 and e["args"].get("mangled name") == m1) == 2, ev
PY

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "test_names: all passed"
