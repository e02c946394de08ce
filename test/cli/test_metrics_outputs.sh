#!/bin/bash
# test_metrics_outputs.sh: GPU metrics through the CLI, and the checker the
# GPU machine runs (scripts/check_metrics_outputs.py) against runs made
# here from the collector's spools (test/data/metrics/, written by
# test_hwmetrics: PM samples, range-profiler figures, status items):
#  - import of a spool sampled over both steps: the checker passes its json
#    and summary parts (jax and tb skipped, and it says so loudly); with the
#    real TensorBoard of ../shared/tools/tensorboard unpacked, its tb part
#    passes too;
#  - asked for jax where jax cannot be imported, it FAILS (not skips);
#  - a Chrome JSON without the C events, and one whose counter track steps
#    back in time, each FAIL with one line naming the GPU or the track;
#  - with TensorBoard, a run whose last step has no samples FAILS tb;
#  - `tbexport diff` of two runs with metrics compares them (the GPU means,
#    the kernel's verdict that changed) in the table and in JSON;
#  - the run summary of two hosts shows the run's means.
# usage: test_metrics_outputs.sh TBEXPORT TEST_DATA_DIR
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
D=$(cd "$2" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
C="$root/scripts/check_metrics_outputs.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
L=$tmp/log
die() { echo "FAIL: $*"; exit 1; }
py=/usr/bin/python3
[ -x $py ] || py=python3

imp() { # RUN FILE HOST
  "$B" import --quiet --logdir "$L" --run "$1" --host "$3" "$2" >/dev/null 2>"$tmp/err" ||
    die "import $1: $(cat "$tmp/err")"
}
imp full "$D/metrics/metrics_full.spool" h
imp short "$D/metrics/metrics.spool" h
imp idle "$D/metrics/metrics_idle.spool" h
imp two "$D/metrics/metrics.spool" a
imp two "$D/metrics/metrics_idle.spool" b

# The checker, json and summary, jax and tb skipped loudly.
$py "$C" "$L" full --tbexport "$B" --skip jax,tb >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ $rc = 0 ] || die "checker on a good run: exit $rc"
grep -q '^!!!! SKIPPED jax' "$tmp/out" || die "no loud SKIPPED jax line"
grep -q '^!!!! SKIPPED tb' "$tmp/out" || die "no loud SKIPPED tb line"
grep -q '^ok   json: GPU 0: C events for all 4 metrics' "$tmp/out" || die "json part did not pass"
grep -q '^ok   summary: gpu_metrics on all 1 GPUs' "$tmp/out" || die "summary part did not pass"
grep -q '^ok   summary: 3 of 3 kernel rows have metrics' "$tmp/out" || die "kernel rows not read"

# jax asked for where it cannot be imported: FAIL, not skip.
if ! $py -c 'import jax.profiler' 2>/dev/null; then
  $py "$C" "$L" full --tbexport "$B" --skip tb >"$tmp/out" 2>&1
  rc=$?
  [ $rc = 1 ] || die "checker without jax: exit $rc, want 1"
  grep -q '^FAIL jax: cannot import jax.profiler.ProfileData' "$tmp/out" || die "no FAIL jax line"
fi

# Broken Chrome JSON: no C events; a track that steps back.
break_json() { # RUN HOW
  local f
  f=$(ls "$L/plugins/profile/$1/"*.trace.json.gz)
  $py - "$f" "$2" <<'PY'
import gzip, json, sys
f, how = sys.argv[1], sys.argv[2]
d = json.load(gzip.open(f, "rt"))
ev = d["traceEvents"]
if how == "drop":
    d["traceEvents"] = [e for e in ev if e.get("ph") != "C"]
else:
    c = [e for e in ev if e.get("ph") == "C" and e["name"] == "sm_active_pct"]
    c[2]["ts"] = c[0]["ts"]
with gzip.open(f, "wt") as o:
    json.dump(d, o)
PY
}
cp -r "$L" "$tmp/l2"
L2=$tmp/l2
L=$L2 break_json full drop
$py "$C" "$L2" full --tbexport "$B" --skip jax,tb >"$tmp/out" 2>&1
rc=$?
[ $rc = 1 ] || die "checker on JSON without C events: exit $rc, want 1"
grep -q '^FAIL json: GPU 0: no C events for' "$tmp/out" || { cat "$tmp/out"; die "no FAIL json line"; }
rm -rf "$L2" && cp -r "$L" "$L2"
L=$L2 break_json full back
$py "$C" "$L2" full --tbexport "$B" --skip jax,tb >"$tmp/out" 2>&1
rc=$?
[ $rc = 1 ] || die "checker on a track stepping back: exit $rc, want 1"
grep -q '^FAIL json: .*track pid 0 sm_active_pct: 1 timestamps not after' "$tmp/out" ||
  { cat "$tmp/out"; die "no FAIL line for the track"; }

# The real TensorBoard's EventAccumulator, when it is unpacked here.
home=${TBE_TB_HOME:-$HOME/.cache/tbexport-tensorboard}
tools=${TBE_TB_TOOLS:-$root/../shared/tools/tensorboard}
[ -d "$home/tb/tensorboard" ] || { [ -x "$tools/setup" ] && "$tools/setup" >/dev/null 2>&1; }
if [ -d "$home/tb/tensorboard" ] && PYTHONPATH=$home/shim:$home/tb $py -c \
    'from tensorboard.backend.event_processing.event_accumulator import EventAccumulator' 2>/dev/null; then
  PYTHONPATH=$home/shim:$home/tb $py "$C" "$L" full --tbexport "$B" --skip jax >"$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  [ $rc = 0 ] || die "checker with TensorBoard: exit $rc"
  grep -q '^ok   tb: 4 gpu_metrics series with one value per step (2 steps)' "$tmp/out" ||
    die "tb part did not pass"
  PYTHONPATH=$home/shim:$home/tb $py "$C" "$L" short --tbexport "$B" --skip jax >"$tmp/out" 2>&1
  rc=$?
  [ $rc = 1 ] || die "checker on a run whose step 1 has no samples: exit $rc, want 1"
  grep -q '^FAIL tb: gpu_metrics/sm_active_pct: 1 values at steps \[0\], want one per step \[0, 1\]' \
    "$tmp/out" || { cat "$tmp/out"; die "no FAIL tb line"; }
else
  echo "note: no TensorBoard unpacked at $home: the tb part was not exercised here"
fi

# diff compares the metrics.
"$B" diff --logdir "$L" short idle >"$tmp/diff" 2>"$tmp/err" || die "diff: $(cat "$tmp/err")"
grep -q '^GPU metrics (means over the window)' "$tmp/diff" || die "diff: no GPU metrics table"
grep -Eq '^0 +sm_active_pct +27\.5% +57\.5% +\+30\.0%' "$tmp/diff" || die "diff: sm_active row"
grep -Eq '^tiny_kernel +bound by +latency +launch +changed' "$tmp/diff" || die "diff: tiny_kernel verdict"
"$B" diff --format json --logdir "$L" short idle >"$tmp/diff.json" 2>"$tmp/err" ||
  die "diff json: $(cat "$tmp/err")"
$py - "$tmp/diff.json" <<'PY' || die "diff JSON"
import json, sys
d = json.load(open(sys.argv[1]))
g = {(x["device"], x["metric"]): (x["base"], x["new"]) for x in d["gpu_metrics"]}
assert g[(0, "sm_active_pct")] == (27.5, 57.5), g
k = {x["name"]: x for x in d["kernel_metrics"]}
assert k["tiny_kernel"]["bound_by"] == ["latency", "launch"], k["tiny_kernel"]
PY

# A spool whose PM samples were left raw (TBEXPORT_PM_EVAL=deferred;
# test_collect_hwmetrics writes it, with HW_SPOOL=test/data/metrics),
# imported where no libcupti loads: one warning line saying why, the
# activity kept, exit 0; imported again, the same line and nothing more.
cp "$D/metrics/metrics_deferred.spool" "$tmp/deferred.spool"
for round in 1 2; do
  TBEXPORT_CUPTI_LIB=/nonexistent/libcupti.so "$B" import --logdir "$L" --run deferred$round \
    --host h "$tmp/deferred.spool" >"$tmp/out" 2>"$tmp/err" ||
    die "import deferred: $(cat "$tmp/err")"
  [ "$(grep -c 'GPU metrics' "$tmp/err")" = 1 ] ||
    { cat "$tmp/err"; die "deferred: want one line"; }
  grep -q 'GPU metrics (PM sampling) not collected on GPU 0: collection failed: '\
'evaluating the samples at conversion: cannot load TBEXPORT_CUPTI_LIB=/nonexistent/libcupti.so' \
    "$tmp/err" || { cat "$tmp/err"; die "deferred: no line saying why"; }
  "$B" summary --logdir "$L" deferred$round >"$tmp/sum" 2>/dev/null || die "summary deferred"
  grep -q 'k_kept' "$tmp/sum" || { cat "$tmp/sum"; die "deferred: the kernel is not in the run"; }
done

# The run of two hosts.
"$B" summary --logdir "$L" two >"$tmp/run" 2>/dev/null || die "summary of two hosts"
grep -Eq '^sm_active_pct +42\.5% +27\.5% +a +57\.5% +b' "$tmp/run" || { cat "$tmp/run"; die "run means"; }
echo "PASS"
