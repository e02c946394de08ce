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
K=$(cd "$2" && pwd)/kineto
J=$(cd "$2" && pwd)/jax
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

# The CSV's per-name deltas add up to the difference of the kernel totals
# (delta_ns is the 19th field from the end, $(NF-18): names may hold commas).
awk -F, '/^overall,kernel time,/ { want = $5 }
         /^kernels,/ { sum += $(NF-18) }
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

# The noise verdict in words: eight steps a side; the step time and the
# gemm kernel 20% slower (beyond noise), the copy the same (within).
gen() { # gen FILE SCALE_PERCENT
  {
    echo '{"traceEvents": ['
    ts=1000
    for i in 1 2 3 4 5 6 7 8; do
      d=$(( (100 + (i * 37) % 7) * $2 / 100 ))
      k=$(( (40 + (i * 13) % 5) * $2 / 100 ))
      echo "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#$i\", \"pid\": 1, \"tid\": 1, \"ts\": $ts, \"dur\": $d},"
      echo "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": $((ts + 1)), \"dur\": $k, \"args\": {\"device\": 0, \"stream\": 7}},"
      echo "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"pid\": 0, \"tid\": 8, \"ts\": $((ts + 2)), \"dur\": $((10 + (i * 5) % 3)), \"args\": {\"device\": 0, \"stream\": 8}},"
      ts=$((ts + d))
    done
    echo '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1000, "dur": 2}]}'
  } >"$1"
}
gen "$tmp/n0.json" 100
gen "$tmp/n1.json" 120
"$B" diff --width 1000 "$tmp/n0.json" "$tmp/n1.json" >"$tmp/out" 2>"$tmp/err" || fail "noise diff: $(cat "$tmp/err")"
grep -q "^step (median) .*  beyond noise$" "$tmp/out" || fail "step verdict: $(grep step "$tmp/out")"
grep -q "^Step time: median [0-9.]*us -> [0-9.]*us (+1[0-9].[0-9]%), beyond the steps' own noise (Mann-Whitney p < 0.001 over 8 and 8 steps).$" "$tmp/out" || fail "step sentence: $(grep 'Step time' "$tmp/out")"
grep -q "^gemm .* !$" "$tmp/out" || fail "gemm not marked beyond noise"
grep -q "^Memcpy HtoD" "$tmp/out" && fail "a copy is not a kernel"
"$B" diff --format csv "$tmp/n0.json" "$tmp/n1.json" | grep -q '^kernels,gemm,matched,.*,beyond,0\.' || fail "csv verdict"
"$B" diff --format markdown "$tmp/n0.json" "$tmp/n1.json" | grep -q '^| gemm | .* | beyond noise |$' || fail "markdown verdict"
"$B" diff --format json "$tmp/n0.json" "$tmp/n0.json" | grep -q '"steps":{"base":{"n":8,.*"noise":"within","p_value":1}' || fail "json verdict of a trace against itself"
"$B" diff --width 1000 "$tmp/n0.json" "$tmp/n0.json" | grep -q "^Step time: median .* (+0.0%), within the steps' own noise (Mann-Whitney p = 1.000 over 8 and 8 steps).$" || fail "within noise sentence"
"$B" diff small.trace.json small2.trace.json | grep -q "^Step time: 2 and 2 steps are too few to judge" || fail "too few steps sentence"

# Two runs of two hosts each (imported with --host): totals compared as
# two traces are, and host by host, matched by host name.
imp() { "$B" import "$K/$1" --logdir "$tmp/log" --run "$2" --host "$3" >/dev/null 2>"$tmp/err" || fail "import $1 as $2/$3: $(cat "$tmp/err")"; }
imp h200_cnn_fp32.pt.trace.json two a
imp h200_cnn_bf16.pt.trace.json two b
imp h200_cnn_bf16.pt.trace.json swap a
imp h200_cnn_fp32.pt.trace.json swap b
imp h200_cnn_fp32.pt.trace.json one a
"$B" diff --no-events --logdir "$tmp/log" two swap >"$tmp/out" 2>"$tmp/err" || fail "diff of two-host runs: $(cat "$tmp/err")"
[ "$(head -1 "$tmp/out")" = "Comparing two (base, 2 hosts) with swap (new, 2 hosts); totals over all hosts" ] || fail "run diff title: $(head -1 "$tmp/out")"
grep -q "^kernel time .* 0ns   1.00x$" "$tmp/out" || fail "equal totals: $(grep 'kernel time' "$tmp/out")"
grep -q "^Hosts: 2 matched by host name, 0 only in base (-), 0 only in new (+)$" "$tmp/out" || fail "host matching"
# a was fp32 and is bf16: its wall, kernel time and median step are b's of the base run
ra=$(grep '^a  ' "$tmp/out"); rb=$(grep '^b  ' "$tmp/out")
set -- $ra; a_wall_b=$2 a_wall_n=$3; set -- $rb; b_wall_b=$2 b_wall_n=$3
[ -n "$a_wall_b" ] && [ "$a_wall_b" = "$b_wall_n" ] && [ "$a_wall_n" = "$b_wall_b" ] || fail "host rows: $ra / $rb"
"$B" diff --no-events --format csv --logdir "$tmp/log" two swap | awk -F, '/^kernels,/ && $(NF-18) != 0 { bad = 1 } END { exit bad }' || fail "names moved between equal totals"
"$B" diff --no-events --format json --logdir "$tmp/log" two one >"$tmp/j" || fail "2 hosts against 1"
grep -q '"hosts_count":\[2,1\],.*"hosts_matched_by":"host","hosts_matched":1,"hosts_only":\[1,0\]' "$tmp/j" || fail "2 against 1: $(head -c 300 "$tmp/j")"
"$B" diff --logdir "$tmp/log" two swap >/dev/null 2>"$tmp/err" || fail "run diff with events"
ev=$(ls "$tmp"/log/swap/events.out.tfevents.* 2>/dev/null | tail -1)
grep -aq "diff/two/report" "$ev" && grep -aq "Hosts: 2 matched by host name" "$ev" || fail "run diff events: $ev"

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

# --fail-if: the comparison as a gate.  gate WANT_RC PATTERN ARGS...: the
# exit status, stdout the report without --fail-if (the conditions write
# only to stderr), and one stderr line per condition, the last matching
# PATTERN.
gate() {
  local want=$1 pat=$2; shift 2
  local plain=() a n=0
  for a in "$@"; do
    if [ "$a" = --fail-if ]; then n=$((n + 1)); else plain+=("$a"); fi
  done
  "$B" diff --no-events "$@" >"$tmp/gout" 2>"$tmp/gerr"
  local rc=$?
  [ $rc -eq "$want" ] || fail "diff $* exited $rc, want $want: $(cat "$tmp/gerr")"
  # each --fail-if takes the next word
  [ "$(wc -l <"$tmp/gerr")" -eq "$n" ] || { fail "diff $*: $(wc -l <"$tmp/gerr") stderr lines, want $n"; cat "$tmp/gerr"; }
  tail -1 "$tmp/gerr" | grep -q -- "$pat" || fail "diff $*: '$(tail -1 "$tmp/gerr")' lacks '$pat'"
}
# Steps of controlled durations (us): gen_steps FILE D1 D2 ...; a gemm
# kernel takes half of each step.
gen_steps() {
  local f=$1 ts=1000 i=0 d; shift
  {
    echo '{"traceEvents": ['
    for d in "$@"; do
      i=$((i + 1))
      echo "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#$i\", \"pid\": 1, \"tid\": 1, \"ts\": $ts, \"dur\": $d},"
      echo "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": $((ts + 1)), \"dur\": $((d / 2)), \"args\": {\"device\": 0, \"stream\": 7}},"
      ts=$((ts + d))
    done
    echo '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1000, "dur": 2}]}'
  } >"$f"
}
# Changed beyond noise (every step 20% slower): fires, exit 3.
gate 3 "^tbexport diff: --fail-if step_median > +5%: step time (median) [0-9.]*us -> [0-9.]*us (+1[0-9].[0-9]%), > +5.0% and beyond the steps' own noise (Mann-Whitney p < 0.001 over 8 and 8 steps): FAILS$" \
  "$tmp/n0.json" "$tmp/n1.json" --fail-if 'step_median > +5%'
"$B" diff --no-events "$tmp/n0.json" "$tmp/n1.json" | cmp -s - "$tmp/gout" || fail "--fail-if changed the report"
gate 0 ": passes$" "$tmp/n0.json" "$tmp/n1.json" --fail-if 'step_median > +50%'
gate 3 "FAILS$" "$tmp/n0.json" "$tmp/n1.json" --fail-if 'step_median > +50%' --fail-if 'kernel:gemm>+2us'
gate 0 "kernel gemm (1 in base, 1 in new), .*: passes$" "$tmp/n0.json" "$tmp/n1.json" --fail-if 'kernel:gemm < -1%'
# Did not change (a trace against itself): passes, exit 0.
gate 0 "(+0.0%), not > +5.0%: passes$" "$tmp/n0.json" "$tmp/n0.json" --fail-if 'step_median > +5%'
# Changed within noise: half the steps of a bimodal loop move, the median
# jumps (+49%) but the samples overlap: a line says so, exit 0.
gen_steps "$tmp/w0.json" 100 101 102 103 300 301 302 303
gen_steps "$tmp/w1.json" 100 101 102 300 301 302 303 304
gate 0 "(+49.[0-9]%), > +5.0% but within the steps' own noise (Mann-Whitney p = 0.[0-9]* over 8 and 8 steps): passes$" \
  "$tmp/w0.json" "$tmp/w1.json" --fail-if 'step_median > +5%'
gate 0 "within the steps' own noise" "$tmp/w0.json" "$tmp/w1.json" --fail-if 'class:gemm > +10%'
# Too few steps to judge a change past the threshold: exit 4.
gate 4 "but 2 and 2 steps are too few to tell it from the steps' own noise (4 per side needed): cannot judge$" \
  small.trace.json small2.trace.json --fail-if 'step_median < -5%'
# the real fp32 -> bf16 pair of the H200 (collected with our own collector):
# the step time within noise, the GEMM time dropped beyond it, and the
# fp32 GEMMs (sm80_xmma...) followed into their bf16 replacements (nvjet...)
C=${K%/kineto}/collected
gate 0 "step time (median) 12.156ms -> 13.073ms (+7.5%), > +5.0% but within the steps' own noise (Mann-Whitney p = 1.000 over 20 and 20 steps): passes$" \
  "$C/gpt_fp32.xplane.pb" "$C/gpt_bf16.xplane.pb" --fail-if 'step_median > +5%'
gate 3 "gemm time per step (median) 8.820ms -> 749.587us (-91.5%), < -50.0% and beyond" \
  "$C/gpt_fp32.xplane.pb" "$C/gpt_bf16.xplane.pb" --fail-if 'class:gemm < -50%'
gate 3 "kernels sm80_xmma\* (5 in base, 4 in new), time per step (median) .* beyond .*: FAILS$" \
  "$C/gpt_fp32.xplane.pb" "$C/gpt_bf16.xplane.pb" --fail-if 'kernel:sm80_xmma* < -50%'
# the report and its JSON stay whole on stdout
"$B" diff --no-events --format json "$tmp/n0.json" "$tmp/n1.json" --fail-if 'step_median > +5%' 2>/dev/null \
  | python3 -c 'import json, sys; json.load(sys.stdin)' || fail "--fail-if spoiled the JSON"
# Errors: one line, exit 2, nothing on stdout.
expect_err 2 "unknown figure 'step' in 'step > 5%'" "$B" diff --fail-if 'step > 5%' small.trace.json small2.trace.json
expect_err 2 "expected a change at the end" "$B" diff --fail-if 'step_median > 5' small.trace.json small2.trace.json
expect_err 2 "unknown kernel class 'gem'" "$B" diff --fail-if 'class:gem > 5%' small.trace.json small2.trace.json
expect_err 2 "--fail-if 'kernel:nope > +5%': no kernel named 'nope' on either side" \
  "$B" diff --fail-if 'step_median > 5%' --fail-if 'kernel:nope > +5%' small.trace.json small2.trace.json
expect_err 2 "no operator named 'aten::nope'" "$B" diff --fail-if 'op:aten::nope > +5%' small.trace.json small2.trace.json
expect_err 2 "option '--fail-if' needs a value" "$B" diff small.trace.json small2.trace.json --fail-if

# Two unrelated traces: a warning first; a before/after pair: none, and the
# sentence names the largest changes.
"$B" diff --no-cache "$K/h200_cnn_fp32.pt.trace.json" "$J/h200_matmul.xplane.pb" >"$tmp/out" 2>&1 ||
  fail "unrelated diff: $(cat "$tmp/out")"
sed -n 3p "$tmp/out" | grep -q "^Warning: only 0 of the 26 kernels of the base and of the 15 of the new side match" ||
  fail "unrelated traces: no warning: $(sed -n 3,4p "$tmp/out")"
"$B" diff --format json --no-cache "$K/h200_cnn_fp32.pt.trace.json" "$J/h200_matmul.xplane.pb" 2>/dev/null |
  grep -q '^{"base":"h200_cnn_fp32.pt.trace.json","new":"h200_matmul.xplane.pb","few_kernels_match":{"base":26,"new":15,"on_both_sides":0},' ||
  fail "unrelated traces: no few_kernels_match in the JSON"
"$B" diff --format json --no-cache "$K/h200_cnn_fp32.pt.trace.json" "$K/h200_cnn_bf16.pt.trace.json" 2>/dev/null |
  grep -q few_kernels_match && fail "a before/after pair: few_kernels_match in the JSON"
"$B" diff --no-cache "$K/h200_cnn_fp32.pt.trace.json" "$K/h200_cnn_bf16.pt.trace.json" >"$tmp/out" 2>&1 ||
  fail "pair diff"
grep -q "^Warning" "$tmp/out" && fail "a before/after pair warned: $(grep Warning "$tmp/out")"
tr '\n' ' ' <"$tmp/out" | grep -q "Kernel time 1.713ms -> 1.281ms (-25.2%); the largest changes: sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf3... -251.550us (replaced by sm80_xmma_wgrad_implicit_gemm_indexed_bf16bf16_bf...)" ||
  fail "pair: lead sentence: $(sed -n 3,6p "$tmp/out")"

# One shortening of names in every report: a kernel's cell in summary's
# table is its cell in diff's, at any --width.
for w in 100 140; do
  for k in reduce_kernel nchwToNhwcKernel; do
    cs=$("$B" summary --no-cache --width $w --top 0 "$K/h200_cnn_bf16.pt.trace.json" 2>/dev/null |
      grep -m1 "^$k" | cut -c1-$((w - 71)))
    cd_=$("$B" diff --no-cache --width $w --top 0 "$K/h200_cnn_bf16.pt.trace.json" \
      "$K/h200_cnn_bf16.pt.trace.json" 2>/dev/null | grep -m1 "^$k" | cut -c1-$((w - 71)))
    [ -n "$cs" ] && [ "$cs" = "$cd_" ] || fail "width $w: $k reads '$cs' in summary, '$cd_' in diff"
  done
done
"$B" diff --help >"$tmp/out" 2>&1 || fail "--help"
grep -q "usage: tbexport diff" "$tmp/out" || fail "--help text"

[ $fails -eq 0 ] && echo "test_diff: all passed"
exit $((fails > 0))
