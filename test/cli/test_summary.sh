#!/bin/bash
# test_summary.sh: `tbexport summary` on small hand-written Chrome traces
# (test/data/cli/): exact output in every format, sorting and --top, run
# lookup in a log_dir (named, and the latest by mtime), a run of two host
# files (totals against the hosts' own summaries), the step hint, and every
# error path: non-zero exit, exactly one line on stderr, nothing on stdout.
# usage: test_summary.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
D=$2/cli
K=$(cd "$2" && pwd)/kineto
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
# Kernel classes: the gemm kernel and the HtoD copy; per step the copy,
# the launch latency median and the class times.
assert k["class"] == "gemm"
assert d["all"]["classes"] == {"gemm": {"ns": 100000, "count": 2}, "copy": {"ns": 10000, "count": 1}}
assert [s["memcpy_ns"] for s in d["steps"]] == [10000, 0]
assert [s["classes"]["gemm"] for s in d["steps"]] == [40000, 60000]
assert [s["classes"]["copy"] for s in d["steps"]] == [10000, 0]
assert all(s["launch_median_ns"] > 0 for s in d["steps"])
' "$tmp/j" || fail "json figures"
fi

# Runs in a log_dir: by name, and by default the one written last (the
# newest file's mtime), not the greatest name.
mkdir -p "$tmp/log/plugins/profile/2026_01_01_00_00_00" "$tmp/log/plugins/profile/2026_01_02_00_00_00"
mkdir -p "$tmp/log/plugins/profile/notrace"
cp small2.trace.json "$tmp/log/plugins/profile/2026_01_01_00_00_00/hostA.pt.trace.json"
cp small.trace.json "$tmp/log/plugins/profile/2026_01_02_00_00_00/hostA.pt.trace.json"
gzip -c small2.trace.json >"$tmp/log/plugins/profile/2026_01_01_00_00_00/hostA.trace.json.gz"
touch -d '2026-01-01 00:00:00' "$tmp"/log/plugins/profile/2026_01_01_00_00_00/*
touch -d '2026-01-02 00:00:00' "$tmp"/log/plugins/profile/2026_01_02_00_00_00/*
touch "$tmp/log/plugins/profile/notrace/notes.txt"  # newest, but not a trace
"$B" summary --logdir "$tmp/log" 2026_01_02_00_00_00 >"$tmp/run" 2>"$tmp/err" || fail "summary of a run"
[ "$(head -1 "$tmp/run")" = "Trace 2026_01_02_00_00_00" ] || fail "run label: $(head -1 "$tmp/run")"
diff <(tail -n +2 "$tmp/run") <(tail -n +2 small.summary.table.expected) >/dev/null || fail "run output differs from the file's"
"$B" summary --logdir "$tmp/log" >"$tmp/latest" 2>"$tmp/err" || fail "summary of the latest run"
cmp -s "$tmp/latest" "$tmp/run" || fail "the latest run is not 2026_01_02_00_00_00"
# The gzip Chrome trace is preferred to the plain one of the same host; it holds small2.
"$B" summary --logdir "$tmp/log" 2026_01_01_00_00_00 >"$tmp/gz" 2>"$tmp/err" || fail "gz run"
grep -q "wall 170.000us" "$tmp/gz" || fail "gz run content"
[ ! -s "$tmp/err" ] || fail "one host with two files printed: $(cat "$tmp/err")"
# Rewriting the run with the smaller name makes it the latest.
touch "$tmp/log/plugins/profile/2026_01_01_00_00_00/hostA.pt.trace.json"
"$B" summary --logdir "$tmp/log" >"$tmp/latest" 2>"$tmp/err" || fail "summary of the latest run (2)"
[ "$(head -1 "$tmp/latest")" = "Trace 2026_01_01_00_00_00" ] || fail "latest by mtime: $(head -1 "$tmp/latest")"

# Two hosts in one run: both are read, in total and host by host.
mkdir -p "$tmp/log/plugins/profile/multi"
cp small.trace.json "$tmp/log/plugins/profile/multi/a.trace.json"
cp small2.trace.json "$tmp/log/plugins/profile/multi/b.trace.json"
"$B" summary --logdir "$tmp/log" multi >"$tmp/out" 2>"$tmp/err" || fail "multi-host run"
[ ! -s "$tmp/err" ] || fail "multi-host run printed: $(cat "$tmp/err")"
grep -q "^2 hosts, wall .*, 2 GPUs, 5 kernels, 2 steps common to all hosts" "$tmp/out" || fail "multi-host header: $(head -2 "$tmp/out")"
grep -q "^a  .*  slowest$" "$tmp/out" || fail "multi-host row a"
grep -q "^b  .*  fastest$" "$tmp/out" || { fail "multi-host row b"; cat "$tmp/out"; }

# A run of two host files written by `tbexport import --host`: the totals
# are the sums of the two hosts' own summaries, names are merged, and
# both hosts have a row in every format.
"$B" import "$K/h200_cnn_fp32.pt.trace.json" --logdir "$tmp/log" --run two --host a >/dev/null 2>"$tmp/err" || fail "import a: $(cat "$tmp/err")"
"$B" import "$K/h200_cnn_bf16.pt.trace.json" --logdir "$tmp/log" --run two --host b >/dev/null 2>"$tmp/err" || fail "import b: $(cat "$tmp/err")"
P=$tmp/log/plugins/profile/two
"$B" summary --format csv --logdir "$tmp/log" two >"$tmp/two.csv" 2>"$tmp/err" || fail "two-host csv: $(cat "$tmp/err")"
for h in a b; do
  "$B" summary --format csv "$P/$h.trace.json.gz" >"$tmp/$h.csv" || fail "summary of host $h"
  grep -q "^host,$h,.*,[0-9]*,[0-9]*,[0-9]*,.*,\(slowest\|fastest\)$" "$tmp/two.csv" || fail "no row for host $h"
done
# Columns: kernel_ns and kernel_count are fields 5 and 6 of "device,all,..."
# in a single summary, fields 10 and 11 of "host,..." and "total,..." rows.
sum_dev() { awk -F, -v f="$2" '$1 == "device" && $2 == "all" { print $f }' "$1"; }
want_ns=$(( $(sum_dev "$tmp/a.csv" 5) + $(sum_dev "$tmp/b.csv" 5) ))
want_n=$(( $(sum_dev "$tmp/a.csv" 6) + $(sum_dev "$tmp/b.csv" 6) ))
got_ns=$(awk -F, '$1 == "total" { print $10 }' "$tmp/two.csv")
got_n=$(awk -F, '$1 == "total" { print $11 }' "$tmp/two.csv")
[ "$want_n" -eq 276 ] || fail "kernel counts of the two hosts: $want_n"
[ "$got_ns" = "$want_ns" ] || fail "total kernel time $got_ns, want $want_ns"
[ "$got_n" = "$want_n" ] || fail "total kernels $got_n, want $want_n"
# Medians do not add: the run's total says null for its launch medians
# (never -1 as a figure), each host its own; the samples add.
if command -v python3 >/dev/null; then
  "$B" summary --format json --logdir "$tmp/log" two >"$tmp/two.json" 2>"$tmp/err" || fail "two-host json"
  python3 - "$tmp/two.json" <<'PY' || fail "two-host launch medians"
import json, sys
d = json.load(open(sys.argv[1]))
keys = ("launch_median_ns", "launch_overhead_median_ns", "queue_delay_median_ns")
tot = d["total"]
for k in keys:
    assert tot["all"][k] is None, (k, tot["all"][k])
    assert all(s[k] is None for s in tot["steps"]), k
hosts = d["hosts"]
assert all(h["all"][k] > 0 for h in hosts for k in keys), [h["all"] for h in hosts]
assert tot["all"]["launch_samples"] == sum(h["all"]["launch_samples"] for h in hosts)
def no_minus_one(v, path):
    if isinstance(v, dict):
        for k, x in v.items():
            if "launch" in k or "queue" in k:
                assert x != -1, path + "." + k
            no_minus_one(x, path + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            no_minus_one(x, "%s[%d]" % (path, i))
no_minus_one(d, "")
PY
fi
"$B" summary --logdir "$tmp/log" two >"$tmp/two.txt" 2>"$tmp/err" || fail "two-host table"
grep -q "^queue delay  .*  -$" "$tmp/two.txt" || fail "two-host table: the total's queue delay is not '-': $(grep 'queue delay' "$tmp/two.txt")"
"$B" summary --logdir "$tmp/log" two >"$tmp/two.txt" 2>"$tmp/err" || fail "two-host table"
grep -q "^Run two$" "$tmp/two.txt" || fail "two-host title"
grep -q "^slowest b, fastest a by median step time: spread " "$tmp/two.txt" || fail "slowest/fastest: $(grep slowest "$tmp/two.txt")"
grep -q "^Steps (3 common to all hosts" "$tmp/two.txt" || fail "common steps"
"$B" summary --format markdown --logdir "$tmp/log" two | grep -q "^| b | [0-9]* | - | 1 | .* | slowest |$" || fail "markdown row of b"
if command -v python3 >/dev/null; then
  "$B" summary --format json --top 0 --logdir "$tmp/log" two >"$tmp/two.json" || fail "two-host json"
  "$B" summary --format json --top 0 "$P/a.trace.json.gz" >"$tmp/a.json" || fail "a json"
  "$B" summary --format json --top 0 "$P/b.trace.json.gz" >"$tmp/b.json" || fail "b json"
  python3 - "$tmp/two.json" "$tmp/a.json" "$tmp/b.json" <<'PY' || fail "two-host json figures"
import json, sys
run, a, b = (json.load(open(p)) for p in sys.argv[1:])
t = run["total"]
assert run["hosts_count"] == 2 and [h["label"] for h in run["hosts"]] == ["a", "b"]
for k in ("kernel_ns", "kernel_count", "busy_ns", "memset_ns"):
    assert t["all"][k] == a["all"][k] + b["all"][k], k
for g in ("kernels", "cpu_ops", "ranges"):
    merged = {e["name"]: e for e in t[g]}
    names = {e["name"] for e in a[g]} | {e["name"] for e in b[g]}
    assert set(merged) == names, g
    for n, e in merged.items():
        sides = [x for s in (a, b) for x in s[g] if x["name"] == n]
        assert e["calls"] == sum(x["calls"] for x in sides), n
        assert e["total_ns"] == sum(x["total_ns"] for x in sides), n
        assert e["min_ns"] == min(x["min_ns"] for x in sides), n
        assert e["max_ns"] == max(x["max_ns"] for x in sides), n
# the host objects are the hosts' own summaries
for h, s in zip(run["hosts"], (a, b)):
    assert h["all"] == s["all"] and h["steps"] == s["steps"] and h["kernels"] == s["kernels"]
assert run["slowest"]["host"] == "b" and run["fastest"]["host"] == "a"
assert run["figure"] == "step_median"
assert run["spread_ns"] == b["step_stats"]["median_ns"] - a["step_stats"]["median_ns"]
assert [s["dur_ns"] for s in t["steps"]] == [max(x["dur_ns"], y["dur_ns"]) for x, y in zip(a["steps"], b["steps"])]
PY
fi

# Without steps, the summary names the range that looks like the iteration.
{
  echo '{"traceEvents": ['
  for i in 0 1 2 3 4; do
    ts=$((1000 + i * 100))
    echo "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"train step\", \"pid\": 1, \"tid\": 1, \"ts\": $ts, \"dur\": 90},"
    echo "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"forward\", \"pid\": 1, \"tid\": 1, \"ts\": $((ts + 5)), \"dur\": 40},"
  done
  echo '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1001, "dur": 2}]}'
} >"$tmp/nosteps.json"
"$B" summary --width 1000 "$tmp/nosteps.json" >"$tmp/out" 2>"$tmp/err" || fail "summary without steps"
grep -q "No steps in this trace. The user annotation \"train step\" looks like the iteration (5 times at the top of one host thread, 91.8% of the wall time): for per-step figures, profile or import again with --steps 'nvtx:train step'." "$tmp/out" || { fail "step hint"; cat "$tmp/out"; }
"$B" summary --format json "$tmp/nosteps.json" | grep -q '"step_hint":{"name":"train step","kind":"user_annotation","count":5,' || fail "step hint in json"

# Empty trace: a report, not an error.
"$B" summary empty.trace.json >"$tmp/out" 2>&1 || fail "empty trace"
grep -q "No GPU activity" "$tmp/out" || fail "empty trace text"

# Errors.
expect_err 2 "no such file" "$B" summary does-not-exist.json
expect_err 2 "^tbexport summary: ../escape: no such file$" "$B" summary ../escape
# Inputs that are no trace: one line naming what it is and what to type.
hint=$tmp/hint
mkdir -p "$hint"
"$B" import small.trace.json --logdir "$hint/L" --run r1 --quiet >/dev/null || fail "hint: import"
"$B" import small2.trace.json --logdir "$hint/L" --run r2 --quiet >/dev/null || fail "hint: import"
mkdir -p "$hint/L/events_only" "$hint/traces" "$hint/empty"
cp small.trace.json small2.trace.json "$hint/traces/"
expect_err 2 "$hint/L is a log dir: name one of its runs (r1, r2), e.g. tbexport summary --logdir $hint/L RUN" \
  "$B" summary "$hint/L"
expect_err 2 "$hint/L/r1 is the TensorBoard folder of run 'r1': tbexport summary --logdir $hint/L r1" \
  "$B" summary "$hint/L/r1"
expect_err 2 "$hint/L/plugins/profile/r2 is the profile folder of run 'r2': tbexport diff --logdir $hint/L r2" \
  "$B" diff small.trace.json "$hint/L/plugins/profile/r2"
expect_err 2 "$hint/traces is a folder of 2 trace files: give one, e.g. $hint/traces/small" \
  "$B" summary "$hint/traces"
expect_err 2 "$hint/empty is a folder, not a trace file" "$B" summary "$hint/empty"
expect_err 2 "run 'events_only' of $hint/L holds TensorBoard event files only, no trace (tbexport inspect $hint/L/events_only lists them); runs with a trace: r1, r2" \
  "$B" summary --logdir "$hint/L" events_only
expect_err 2 "no such file, and no run 'r3' in $hint/L (its runs: r1, r2)" "$B" summary --logdir "$hint/L" r3
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
