#!/bin/bash
# test_memory_report.sh: the memory figures as the user reads them, end to
# end, against real files: torch.profiler traces taken with
# profile_memory=True (test/data/kineto/h200_cnn_{fp32,bf16}.pt.trace.json)
# imported into a log dir, then `summary` of the run read back from our own
# outputs: the peak allocated and reserved of GPU 0 equal the highest
# "Total Allocated" / "Total Reserved" of its [memory] events in the file,
# and each step's peaks those inside its ProfilerStep window (the value
# held at its start included), all computed here with python3's json
# module; the TensorBoard events hold the per-step series and the run
# totals; `diff` of the pair shows the peak rows.  Then a synthetic Kineto
# trace with a planted leak (64 MiB kept per step over 20 ProfilerStep#N
# steps, a transient 32 MiB freed each step) whose advice names the leak
# with its bytes per step and its steps; the peaks as a --fail-if gate of
# diff (fires on the leak, passes under its threshold, cannot judge a side
# without memory, refuses a time unit).
# usage: test_memory_report.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
D=$(cd "$2" && pwd)
K=$D/kineto
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null || { echo "FAIL: python3 is needed"; exit 1; }

# ---- the golden traces, imported and read back ----
for p in fp32 bf16; do
  f="$K/h200_cnn_$p.pt.trace.json"
  "$B" import "$f" --logdir "$tmp/log" --run "$p" --host h --quiet >"$tmp/out" 2>"$tmp/err" ||
    { fail "import $p: $(cat "$tmp/err")"; continue; }
  "$B" summary --format json --logdir "$tmp/log" "$p" >"$tmp/$p.json" 2>"$tmp/err" ||
    { fail "summary $p: $(cat "$tmp/err")"; continue; }
  "$B" summary --logdir "$tmp/log" "$p" >"$tmp/$p.table" 2>"$tmp/err" || fail "summary table $p"
  python3 - "$f" "$tmp/$p.json" "$tmp/$p.table" <<'PY' || fail "$p: the summary's memory figures"
import json, sys
trace = json.load(open(sys.argv[1]))
summ = json.load(open(sys.argv[2]))
table = open(sys.argv[3]).read()
mem = [e for e in trace["traceEvents"] if e.get("name") == "[memory]"
       and e["args"].get("Device Type") == 1 and e["args"].get("Device Id") == 0]
assert mem, "the trace has GPU memory events"
mem.sort(key=lambda e: e["ts"])
alloc = max(e["args"]["Total Allocated"] for e in mem)
res = max(e["args"]["Total Reserved"] for e in mem)
d0 = [d for d in summ["devices"] if d["device"] == 0][0]
assert d0["peak_allocated_bytes"] == alloc, (d0["peak_allocated_bytes"], alloc)
assert d0["peak_reserved_bytes"] == res, (d0["peak_reserved_bytes"], res)
assert summ["all"]["peak_allocated_bytes"] == alloc
# each ProfilerStep window [ts, ts + dur): the value held at its start and
# every value inside
steps = {int(e["name"].split("#")[1]): e for e in trace["traceEvents"]
         if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")}
assert len(steps) == len(summ["steps"]) == 3, (len(steps), len(summ["steps"]))
for s in summ["steps"]:
    w = steps[s["step"]]
    lo, hi = w["ts"], w["ts"] + w["dur"]
    before = [e for e in mem if e["ts"] < lo]
    inside = [e for e in mem if lo <= e["ts"] < hi]
    for key, arg in (("peak_allocated_bytes", "Total Allocated"), ("peak_reserved_bytes", "Total Reserved")):
        vals = ([before[-1]["args"][arg]] if before else []) + [e["args"][arg] for e in inside]
        assert s[key] == max(vals), (s["step"], key, s[key], max(vals))
mib = alloc / 2**20
assert "peak allocated" in table
cell = ("%.2f" % mib).rstrip("0").rstrip(".") + " MiB"
assert cell in table, (cell, "not in the table")
PY
  # TensorBoard: the run totals and the per-step series (one point a step)
  "$B" inspect "$tmp/log/$p" >"$tmp/$p.tags" 2>&1 || fail "inspect $p"
  for tag in summary/peak_allocated_bytes summary/peak_reserved_bytes \
             summary/memory_growth_bytes_per_step; do
    grep -q "^ *$tag  *count 1 " "$tmp/$p.tags" || fail "$p: no scalar $tag"
  done
  for tag in steps/peak_allocated_bytes steps/peak_reserved_bytes; do
    grep -q "^ *$tag  *count 3 " "$tmp/$p.tags" || fail "$p: no per-step series $tag"
  done
done

# diff of the pair: the peak rows with both values
"$B" diff "$K/h200_cnn_fp32.pt.trace.json" "$K/h200_cnn_bf16.pt.trace.json" >"$tmp/diff" 2>"$tmp/err" ||
  fail "diff: $(cat "$tmp/err")"
grep -q "^peak allocated  *173.79 MiB  *121.68 MiB" "$tmp/diff" || { fail "diff: no peak allocated row"; cat "$tmp/diff"; }
grep -q "^peak reserved  *284 MiB  *284 MiB" "$tmp/diff" || fail "diff: no peak reserved row"
"$B" diff --format json "$K/h200_cnn_fp32.pt.trace.json" "$K/h200_cnn_bf16.pt.trace.json" \
  >"$tmp/diff.json" 2>"$tmp/err" || fail "diff json"
python3 - "$tmp/diff.json" "$tmp/fp32.json" "$tmp/bf16.json" <<'PY' || fail "diff json: peak rows"
import json, sys
d = json.load(open(sys.argv[1]))
a, b = (json.load(open(p))["all"] for p in sys.argv[2:])
for k in ("peak_allocated_bytes", "peak_reserved_bytes"):
    assert d["overall"][k] == [a[k], b[k]], (k, d["overall"][k])
PY

# A trace without memory events: no memory row in the table.
"$B" summary "$K/h200_add_loop.trace.json" >"$tmp/add" 2>&1 || fail "summary add_loop"
grep -q "peak allocated" "$tmp/add" && fail "a trace without memory events shows a memory row"

# ---- a planted leak: 64 MiB kept per step over 20 steps ----
# gen OUT KEPT_MIB: the loop, keeping KEPT_MIB a step (0: none)
gen() {
  python3 - "$1" "$2" <<'PY'
import json, sys
MIB = 1 << 20
kept = int(sys.argv[2])
ev, alloc, ts = [], 100 * MIB, 1000.0
def mem(t, addr, b):
    global alloc
    alloc += b
    ev.append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": t,
               "args": {"Total Reserved": 2048 * MIB, "Total Allocated": alloc, "Bytes": b,
                        "Device Id": 0, "Device Type": 1, "Addr": addr}})
mem(ts, 0x7f0000000000, 0)
for n in range(20):
    t0 = ts + 1000.0 * (n + 1)
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % n, "pid": 1,
               "tid": 1, "ts": t0, "dur": 900.0})
    ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0 + 50,
               "dur": 100.0, "args": {"device": 0, "stream": 7}})
    mem(t0 + 10, 0x7f1000000000, 32 * MIB)
    if kept:
        mem(t0 + 20, 0x7f2000000000 + n * kept * MIB, kept * MIB)
    mem(t0 + 30, 0x7f1000000000, -32 * MIB)
json.dump({"schemaVersion": 1, "traceEvents": ev}, open(sys.argv[1], "w"))
PY
}
gen "$tmp/leak.pt.trace.json" 64
gen "$tmp/noleak.pt.trace.json" 0
"$B" summary "$tmp/leak.pt.trace.json" >"$tmp/leak" 2>"$tmp/err" || fail "summary leak: $(cat "$tmp/err")"
grep -q "GPU 0: allocated grows 64 MiB per step over 20 steps, never freed (1.25 GiB by the end)" \
  "$tmp/leak" || { fail "the leak's advice"; cat "$tmp/leak"; }
grep -q "^growth per step  *+64 MiB" "$tmp/leak" || fail "the growth row"
"$B" summary --format json "$tmp/leak.pt.trace.json" >"$tmp/leak.json" 2>&1 || fail "summary leak json"
python3 - "$tmp/leak.json" <<'PY' || fail "leak figures"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
assert d["memory_growth_bytes_per_step"] == 64 << 20, d
assert d["unfreed_bytes"] == 20 * (64 << 20), d
PY

# ---- the peaks as a CI gate (diff --fail-if) ----
# gate WANT_STATUS WORDS BASE NEW COND: the status and the line on stderr
gate() {
  local want=$1 words=$2 st
  shift 2
  "$B" diff --quiet "$1" "$2" --fail-if "$3" >/dev/null 2>"$tmp/gate"
  st=$?
  [ $st -eq "$want" ] || fail "--fail-if '$3': status $st, want $want: $(cat "$tmp/gate")"
  grep -q -- "$words" "$tmp/gate" || fail "--fail-if '$3': no '$words' in: $(cat "$tmp/gate")"
}
gate 3 "peak allocated per step (median) 132 MiB -> 804 MiB (+509.1%), > +10.0% and beyond" \
  "$tmp/noleak.pt.trace.json" "$tmp/leak.pt.trace.json" "peak_allocated > +10%"
gate 0 "not > +2 GiB: passes" "$tmp/noleak.pt.trace.json" "$tmp/leak.pt.trace.json" \
  "peak_allocated > +2GiB"
gate 0 "peak reserved per step (median) 2 GiB -> 2 GiB (+0 B), not > +1 MiB: passes" \
  "$tmp/noleak.pt.trace.json" "$tmp/leak.pt.trace.json" "peak_reserved > +1MiB"
gate 4 "base has no memory events, so there is no peak to compare: cannot judge" \
  "$D/cli/small.trace.json" "$tmp/leak.pt.trace.json" "peak_allocated > +1%"
gate 2 "a memory peak is an amount" "$tmp/noleak.pt.trace.json" "$tmp/leak.pt.trace.json" \
  "peak_allocated > +1ms"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "test_memory_report: ok"
