#!/usr/bin/env bash
# CLI tests of `tbexport import`: outputs and their layout, the Chrome JSON
# read back by Python's json module (counts per category equal the source's,
# every flow has both ends), XSpace accepted by protoc --decode_raw, exit
# codes and one-line errors, nothing written on bad input or refused names,
# no overwrite without --force, nothing on stderr when it is not a terminal.
# usage: test_import.sh TBEXPORT_BINARY TEST_DATA_DIR
set -u
bin=$1 data=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

fp32=$data/kineto/h200_cnn_fp32.pt.trace.json
bf16=$data/kineto/h200_cnn_bf16.pt.trace.json
log=$work/log_dir

# 1. a golden trace becomes a run: three outputs, the JSON's link for
# PyTorch's TensorBoard plugin and the HParams session, one line each
out=$("$bin" import "$fp32" --logdir "$log" --run fp32 --host h200 2>"$work/err")
rc=$?
[ $rc -eq 0 ] || fail "import fp32 exit $rc: $(cat "$work/err")"
[ -s "$work/err" ] && fail "stderr not empty when not a terminal: $(cat "$work/err")"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 5 ] || fail "expected 5 lines, got: $out"
printf '%s\n' "$out" | grep -qx "$log/plugins/profile/fp32/h200.xplane.pb" || fail "xplane line: $out"
printf '%s\n' "$out" | grep -qx "$log/plugins/profile/fp32/h200.trace.json.gz" || fail "json line: $out"
printf '%s\n' "$out" | grep -q "^$log/fp32/events.out.tfevents\." || fail "events line: $out"
printf '%s\n' "$out" | grep -qx "$log/fp32/h200.pt.trace.json.gz" || fail "link line: $out"
printf '%s\n' "$out" | grep -q "^$log/fp32/events.out.tfevents\..*\.h200\.tbexport-hparams$" ||
  fail "hparams line: $out"
[ "$(stat -c %i "$log/fp32/h200.pt.trace.json.gz")" = "$(stat -c %i "$log/plugins/profile/fp32/h200.trace.json.gz")" ] ||
  fail "the link is not the JSON itself"
while read -r f; do [ -s "$f" ] || fail "missing $f"; done <<<"$out"
ok "import writes three outputs, the JSON's link and the HParams session"

# 2. the JSON, read by Python's json module: counts per category equal the
#    source's, every X event has a cat, every flow has both ends
python3 - "$fp32" "$log/plugins/profile/fp32/h200.trace.json.gz" <<'PY' || fail "JSON checks"
import collections, gzip, json, sys
src = json.load(open(sys.argv[1]))
out = json.load(gzip.open(sys.argv[2], "rt", encoding="utf-8"))
for k in ("schemaVersion", "deviceProperties", "displayTimeUnit",
          "baseTimeNanoseconds", "traceEvents", "traceName"):
    assert k in out, k
# as PyTorch: distributedInfo only for a distributed run (this one is not)
assert ("distributedInfo" in out) == ("distributedInfo" in src), "distributedInfo"
def cats(d):
    return collections.Counter(e.get("cat") for e in d["traceEvents"] if e.get("ph") == "X")
cs, co = cats(src), cats(out)
for c in ("kernel", "cpu_op", "cuda_runtime", "cuda_driver", "gpu_memset", "gpu_user_annotation", "user_annotation"):
    assert cs[c] == co[c], (c, cs[c], co[c])
assert all("cat" in e for e in out["traceEvents"] if e.get("ph") == "X")
mem = lambda d: sum(1 for e in d["traceEvents"] if e.get("name") == "[memory]")
assert mem(src) == mem(out), (mem(src), mem(out))
ends = collections.defaultdict(set)
for e in out["traceEvents"]:
    if e.get("ph") in ("s", "f"):
        ends[(e["cat"], e["id"])].add(e["ph"])
assert ends and all(v == {"s", "f"} for v in ends.values()), [k for k, v in ends.items() if v != {"s", "f"}][:5]
ac2g = sum(1 for k in ends if k[0] == "ac2g")
fwdbwd = sum(1 for k in ends if k[0] == "fwdbwd")
assert fwdbwd == 30, fwdbwd
assert ac2g > 100, ac2g
# kernel timestamps and durations exactly as in the source (same base)
def kern(d):
    b = d["baseTimeNanoseconds"]
    return sorted((e["name"], round(e["ts"] * 1000) + b, round(e["dur"] * 1000))
                  for e in d["traceEvents"] if e.get("cat") == "kernel")
assert kern(src) == kern(out)
print("json ok: %d events, %d ac2g, %d fwdbwd flows" % (len(out["traceEvents"]), ac2g, fwdbwd))
PY
ok "JSON read back by python json"

# 3. XSpace accepted by protoc
if command -v protoc >/dev/null 2>&1; then
  protoc --decode_raw <"$log/plugins/profile/fp32/h200.xplane.pb" >"$work/raw" || fail "protoc --decode_raw"
  grep -q '"/device:GPU:0"' "$work/raw" || fail "no GPU plane in decode_raw"
  ok "protoc --decode_raw"
else
  echo "skip: protoc not installed"
fi

# 4. existing files: exit 1 and a clear message, then --force replaces
"$bin" import "$fp32" --logdir "$log" --run fp32 --host h200 >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 1 ] || fail "existing: exit $rc"
grep -q "already exists (use --force" "$work/err" || fail "existing: message $(cat "$work/err")"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "existing: more than one line"
[ -s "$work/out" ] && fail "existing: printed files"
"$bin" import "$fp32" --logdir "$log" --run fp32 --host h200 --force --quiet >/dev/null 2>&1 || fail "--force"
ok "no overwrite without --force"

# 5. bad input: the importer's one line, exit 2, nothing written
head -c 5000 "$fp32" | sed 's/"ph"/"ph" "/' >"$work/bad.json"
"$bin" import "$work/bad.json" --logdir "$log" --run bad >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 2 ] || fail "bad input: exit $rc"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "bad input: not one line: $(cat "$work/err")"
grep -q "bad.json" "$work/err" || fail "bad input: message does not name the file"
[ -e "$log/plugins/profile/bad" ] || [ -e "$log/bad" ] && fail "bad input: something written"
printf 'not a trace' >"$work/unknown.bin"
"$bin" import "$work/unknown.bin" --logdir "$log" --run bad2 >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown format: exit"
"$bin" import "$work/missing.json" --logdir "$log" --run bad3 >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing file: exit"
[ -e "$log/plugins/profile/bad2" ] || [ -e "$log/plugins/profile/bad3" ] && fail "written after error"
ok "bad input exits 2, writes nothing"

# 6. refused run and host names
long=$(printf 'a%.0s' $(seq 1 201))
for name in "a/b" ".." "." ".hidden" "$(printf 'x\ty')" "$long"; do
  "$bin" import "$fp32" --logdir "$log" --run "$name" >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc -eq 2 ] || fail "run name '$name': exit $rc"
  grep -q "refused" "$work/err" || fail "run name '$name': message"
done
"$bin" import "$fp32" --logdir "$log" --run ok --host "x/y" >/dev/null 2>&1
[ $? -eq 2 ] || fail "host name x/y accepted"
[ -e "$log/plugins/profile/ok" ] && fail "refused host: run dir created"
ls "$log/plugins/profile" | grep -qv '^fp32$' && fail "refused names created directories: $(ls "$log/plugins/profile")"
ok "refused names exit 2"

# 7. --format, several files, usage errors
out=$("$bin" import "$fp32" "$bf16" --logdir "$log" --run both --format json --host h)
[ "$out" = "$log/plugins/profile/both/h.trace.json.gz
$log/both/h.pt.trace.json.gz" ] || fail "--format json: $out"
[ -e "$log/plugins/profile/both/h.xplane.pb" ] && fail "--format json wrote xplane"
python3 - "$fp32" "$bf16" "$log/plugins/profile/both/h.trace.json.gz" <<'PY' || fail "merged counts"
import gzip, json, sys
n = lambda d: sum(1 for e in d["traceEvents"] if e.get("cat") == "kernel")
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
o = json.load(gzip.open(sys.argv[3]))
assert n(o) == n(a) + n(b), (n(o), n(a), n(b))
PY
"$bin" import "$fp32" --logdir "$log" --format xplane,bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --format accepted"
"$bin" import --logdir "$log" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no file accepted"
"$bin" import "$fp32" >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing --logdir accepted"
"$bin" import --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option accepted"
"$bin" import --help | grep -q "usage: tbexport import" || fail "--help"
ok "formats, merging, usage"

# 8. default run name: local time
out=$("$bin" import "$fp32" --logdir "$work/ld2" --format xplane --host h)
printf '%s\n' "$out" | grep -Eq "/plugins/profile/[0-9]{4}_[0-9]{2}_[0-9]{2}_[0-9]{2}_[0-9]{2}_[0-9]{2}/h\.xplane\.pb$" ||
  fail "default run name: $out"
ok "default run name"

# 9. spool files left by an interrupted `tbexport -- CMD`: converted on
# their own, one host per process (the same pid twice: distinct names),
# kept; a cut spool says the capture ended early; not merged with traces
sp=$data/../fuzz/corpus/spool
out=$("$bin" import "$sp/full.spool" "$sp/noend.spool" --logdir "$work/lds" --run s --host h 2>"$work/err")
rc=$?
[ $rc -eq 0 ] || fail "spool import exit $rc: $(cat "$work/err")"
printf '%s\n' "$out" | grep -qx "$work/lds/plugins/profile/s/h_pid4242.xplane.pb" || fail "spool import: $out"
printf '%s\n' "$out" | grep -qx "$work/lds/plugins/profile/s/h_pid4242_2.trace.json.gz" || fail "spool import: $out"
grep -q "ended early" "$work/err" || fail "spool import: no 'ended early' for noend.spool: $(cat "$work/err")"
[ -f "$sp/full.spool" ] || fail "spool import removed its input"
gzip -dc "$work/lds/plugins/profile/s/h_pid4242.trace.json.gz" | python3 -c '
import json, sys
d = json.load(sys.stdin)
k = [e for e in d["traceEvents"] if e.get("cat") == "kernel"]
sys.exit(0 if len(k) == 1 else 1)' || fail "spool import: the JSON lacks its kernel"
"$bin" import "$sp/full.spool" "$fp32" --logdir "$work/lds" --run t 2>"$work/err"
[ $? -eq 2 ] || fail "spool mixed with a trace: want 2"
grep -q "cannot be merged" "$work/err" || fail "spool mixed: message: $(cat "$work/err")"
[ ! -e "$work/lds/plugins/profile/t" ] || fail "spool mixed: something was written"
cp "$sp/full.spool" "$work/bo.spool"
printf '\001\002\003\004' | dd of="$work/bo.spool" bs=1 seek=12 conv=notrunc 2>/dev/null
"$bin" import "$sp/full.spool" "$work/bo.spool" --logdir "$work/lds" --run u 2>"$work/err"
[ $? -eq 2 ] || fail "a spool of the other byte order: want 2"
[ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "bo.spool: byte 12: other byte order" "$work/err" ||
  fail "a spool of the other byte order: message: $(cat "$work/err")"
[ ! -e "$work/lds/plugins/profile/u" ] || fail "a bad spool among good ones: something was written"
ok "spool files"

# 10. --steps nvtx:NAME: the run's steps are that range's occurrences, and
# `tbexport summary` prints them in its Steps table (from the run's Chrome
# JSON, which summary reads first; and from its XSpace).  Nsight Systems
# export: "saxpy", 5 ranges.
nsys=$data/nsys/saxpy_mpi_cuda_perlmutter.sqlite
"$bin" import "$nsys" --logdir "$work/ldst" --run sx --steps nvtx:saxpy >/dev/null 2>"$work/err"
rc=$?
[ $rc -eq 0 ] || fail "--steps nvtx:saxpy: exit $rc: $(cat "$work/err")"
[ -s "$work/err" ] && fail "--steps nvtx:saxpy: stderr: $(cat "$work/err")"
"$bin" summary --logdir "$work/ldst" sx >"$work/sum" 2>&1 || fail "summary sx: $(cat "$work/sum")"
grep -q "^wall .*, 5 steps" "$work/sum" || fail "--steps saxpy: summary header: $(head -3 "$work/sum")"
sed -n '/^Steps (5)$/,/^$/p' "$work/sum" >"$work/steps"
[ "$(awk 'NR>3 && NF {print $1}' "$work/steps" | tr '\n' ' ')" = "0 1 2 3 4 " ] ||
  fail "--steps saxpy: Steps table: $(cat "$work/steps")"
# host: the ranges' own lengths, from the export: 59.054, 47.452, 41.921, 41.711, 41.110 us
[ "$(awk 'NR>3 && NF {print $3}' "$work/steps" | tr '\n' ' ')" = "59.054us 47.452us 41.921us 41.711us 41.110us " ] ||
  fail "--steps saxpy: step host times: $(cat "$work/steps")"
# time: each step on the device lasts until its kernel (17.7 ms) ended
awk 'NR>3 && NF && ($6 != 1 || $2 !~ /^17\.7[0-9][0-9]ms$/) {bad=1} END {exit bad}' "$work/steps" ||
  fail "--steps saxpy: one kernel per step, each step as long as it: $(cat "$work/steps")"
"$bin" summary "$work/ldst/plugins/profile/sx/nid001608.xplane.pb" | sed -n '/^Steps (5)$/,/^$/p' >"$work/steps_x"
cmp -s "$work/steps" "$work/steps_x" || fail "--steps saxpy: the XSpace's steps differ: $(cat "$work/steps_x")"
# No match: exit 0, one warning line naming NAME and what the trace offers
# (here nothing: its NVTX ranges are all PyTorch's operators), the same
# line in the run; no steps.
torch=$data/nsys/h100_2gpu_1s.sqlite
"$bin" import "$torch" --logdir "$work/ldst" --run nm --steps nvtx:train_step@loop >/dev/null 2>"$work/err"
rc=$?
[ $rc -eq 0 ] || fail "--steps without a match: exit $rc"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "--steps without a match: not one line: $(cat "$work/err")"
grep -q "^tbexport import: warning: --steps nvtx:train_step@loop: no NVTX range or user annotation has that name in that domain; the trace has no NVTX ranges or user annotations; the run has no steps$" "$work/err" ||
  fail "--steps without a match: message: $(cat "$work/err")"
"$bin" summary --logdir "$work/ldst" nm >"$work/sum" 2>&1
grep -q "^wall .*, 0 steps" "$work/sum" || fail "--steps without a match: steps: $(head -2 "$work/sum")"
grep -q "^warning: .*--steps nvtx:train_step@loop: no NVTX range" "$work/sum" ||
  fail "--steps without a match: the run does not say it: $(head -5 "$work/sum")"
# Spools: the steps the program marked (tbe_profiler_step; steps.spool of the
# fuzz corpus: 3 steps, the last until collection stopped), and --steps
# over them (ranges "train_step" with payloads 10, 11, 12).
ssp=$data/../fuzz/corpus/spool/steps.spool
"$bin" import "$ssp" --logdir "$work/ldst" --run marked >/dev/null 2>"$work/err" ||
  fail "steps.spool: $(cat "$work/err")"
"$bin" summary --logdir "$work/ldst" marked >"$work/sum" 2>&1
sed -n '/^Steps (3)$/,/^$/p' "$work/sum" | awk 'NR>3 && NF {printf "%s=%s ", $1, $2}' >"$work/steps"
[ "$(cat "$work/steps")" = "0=200ns 1=200ns 2=300ns " ] || fail "marked steps: $(cat "$work/sum")"
"$bin" import "$ssp" --logdir "$work/ldst" --run ranged --steps nvtx:train_step >/dev/null 2>"$work/err" ||
  fail "steps.spool --steps: $(cat "$work/err")"
"$bin" summary --logdir "$work/ldst" ranged >"$work/sum" 2>&1
sed -n '/^Steps (3)$/,/^$/p' "$work/sum" | awk 'NR>3 && NF {printf "%s=%s ", $1, $2}' >"$work/steps"
[ "$(cat "$work/steps")" = "10=180ns 11=180ns 12=180ns " ] || fail "--steps over marked steps: $(cat "$work/sum")"
"$bin" import "$ssp" --logdir "$work/ldst" --run kept --steps nvtx:nope >/dev/null 2>"$work/err"
[ $? -eq 0 ] || fail "steps.spool --steps nvtx:nope: exit"
grep -q "^tbexport: pid 4343: --steps nvtx:nope: no NVTX range or user annotation has that name; the most frequent top-level ranges are 'train_step' (3); the 3 steps found otherwise are kept$" "$work/err" ||
  fail "steps.spool --steps nvtx:nope: message: $(cat "$work/err")"
# A bad --steps: exit 2, one line, nothing written.
for arg in "cudaProfilerApi" "nvtx:" "nvtx:x@" "train_step"; do
  "$bin" import "$nsys" --logdir "$work/ldst" --run bad --steps "$arg" >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc -eq 2 ] || fail "--steps '$arg': exit $rc"
  [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "expected nvtx:NAME\[@DOMAIN\], got '$arg'" "$work/err" ||
    fail "--steps '$arg': message: $(cat "$work/err")"
done
[ ! -e "$work/ldst/plugins/profile/bad" ] || fail "bad --steps: something was written"
"$bin" import --help | grep -q -- "--steps nvtx:NAME\[@DOMAIN\]" || fail "--help lacks --steps"
ok "--steps"

[ $fails -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "all import CLI tests passed"
