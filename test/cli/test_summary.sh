#!/bin/bash
# test_summary.sh: `tbexport summary` on small hand-written Chrome traces
# (test/data/cli/): exact output in every format, sorting and --top, run
# lookup in a log_dir (named and latest), and every error path: non-zero
# exit, exactly one line on stderr, nothing on stdout.
# usage: test_summary.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
D=$2/cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_out EXPECTED_FILE CMD...: exit 0, stdout equal to the file.
expect_out() {
  local exp=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 0 ] || { fail "$* exited $rc: $(cat "$tmp/err")"; return; }
  diff -u "$exp" "$tmp/out" >"$tmp/diff" || { fail "$* output differs:"; cat "$tmp/diff"; }
}

# expect_err RC PATTERN CMD...: exit RC, one stderr line matching PATTERN, empty stdout.
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
  expect_out "small.summary.$f.expected" "$B" summary --format "$f" small.trace.json
done
expect_out small.summary.table.expected "$B" summary small.trace.json
expect_out small2.summary.top1.expected "$B" summary --top 1 --sort calls --wide small2.trace.json

# JSON is valid and its figures are the ones the table shows.
if command -v python3 >/dev/null; then
  "$B" summary --format json --top 0 small.trace.json >"$tmp/j" || fail "json run"
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["wall_ns"] == 220000, d["wall_ns"]
assert d["all"]["busy_ns"] == 110000
k = d["kernels"][0]
assert k["name"] == "void gemm<float>(float*, int)" and k["calls"] == 2 and k["total_ns"] == 100000
assert [s["kernel_ns"] for s in d["steps"]] == [40000, 60000]
' "$tmp/j" || fail "json figures"
fi

# Runs in a log_dir: by name, and the latest (greatest name) by default.
mkdir -p "$tmp/log/plugins/profile/2026_01_01_00_00_00" "$tmp/log/plugins/profile/2026_01_02_00_00_00"
mkdir -p "$tmp/log/plugins/profile/notrace"
cp small2.trace.json "$tmp/log/plugins/profile/2026_01_01_00_00_00/hostA.pt.trace.json"
cp small.trace.json "$tmp/log/plugins/profile/2026_01_02_00_00_00/hostA.pt.trace.json"
gzip -c small2.trace.json >"$tmp/log/plugins/profile/2026_01_01_00_00_00/hostB.trace.json.gz"
"$B" summary --logdir "$tmp/log" 2026_01_02_00_00_00 >"$tmp/run" 2>"$tmp/err" || fail "summary of a run"
[ "$(head -1 "$tmp/run")" = "Trace 2026_01_02_00_00_00" ] || fail "run label: $(head -1 "$tmp/run")"
diff <(tail -n +2 "$tmp/run") <(tail -n +2 small.summary.table.expected) >/dev/null || fail "run output differs from the file's"
"$B" summary --logdir "$tmp/log" >"$tmp/latest" 2>"$tmp/err" || fail "summary of the latest run"
cmp -s "$tmp/latest" "$tmp/run" || fail "the latest run is not 2026_01_02_00_00_00"
# The gzip Chrome trace is preferred; it holds small2.
"$B" summary --logdir "$tmp/log" 2026_01_01_00_00_00 >"$tmp/gz" 2>"$tmp/err" || fail "gz run"
grep -q "wall 170.000us" "$tmp/gz" || fail "gz run content"

# Two hosts in one run: the first by name is used, and a note says so.
mkdir -p "$tmp/log/plugins/profile/multi"
cp small.trace.json "$tmp/log/plugins/profile/multi/a.trace.json"
cp small2.trace.json "$tmp/log/plugins/profile/multi/b.trace.json"
"$B" summary --logdir "$tmp/log" multi >"$tmp/out" 2>"$tmp/err" || fail "multi-host run"
grep -q "wall 220.000us" "$tmp/out" || fail "multi-host run used the wrong file"
grep -q "note: run 'multi' holds traces of 2 hosts; using a.trace.json" "$tmp/err" || fail "multi-host note: $(cat "$tmp/err")"
"$B" summary --quiet --logdir "$tmp/log" multi >/dev/null 2>"$tmp/err" || fail "multi-host --quiet"
[ ! -s "$tmp/err" ] || fail "--quiet still printed: $(cat "$tmp/err")"

# Empty trace: a report, not an error.
"$B" summary empty.trace.json >"$tmp/out" 2>&1 || fail "empty trace"
grep -q "No GPU activity" "$tmp/out" || fail "empty trace text"

# Errors.
expect_err 2 "no such file" "$B" summary does-not-exist.json
expect_err 2 "not a valid run name" "$B" summary ../escape
expect_err 2 "byte 80 (line 2, column 63)" "$B" summary bad.trace.json
expect_err 2 "not a Chrome trace JSON" "$B" summary small.summary.csv.expected
expect_err 2 "no trace file" "$B" summary --logdir "$tmp/log" notrace
expect_err 2 "no runs" "$B" summary --logdir "$tmp/nolog"
expect_err 2 "--format" "$B" summary --format xml small.trace.json
expect_err 2 "--sort" "$B" summary --sort name small.trace.json
expect_err 2 "--top" "$B" summary --top -3 small.trace.json
expect_err 2 "--width" "$B" summary --width 5 small.trace.json
expect_err 2 "needs a value" "$B" summary small.trace.json --format
expect_err 2 "unknown option" "$B" summary --bogus small.trace.json
expect_err 2 "got 2 arguments" "$B" summary small.trace.json small2.trace.json

"$B" summary --help >"$tmp/out" 2>&1 || fail "--help"
grep -q "usage: tbexport summary" "$tmp/out" || fail "--help text"

[ $fails -eq 0 ] && echo "test_summary: all passed"
exit $((fails > 0))
