#!/bin/bash
# test_persist.sh: summary and diff read the persisted analysis
# (<host>.analysis.pb, written by the export) and print the same bytes as
# from the traces.
#
#   - every real file of test/data (Kineto, JAX XSpace and Chrome JSON,
#     Nsight Systems, the collector's XSpace, the CLI samples) imported as a
#     run, and a run of three hosts: summary in every format (default and
#     --top 0 --wide) through the analysis and with --from-traces, the same
#     bytes and nothing on stderr; diff of runs, likewise;
#   - the analysis is what is read: a trace overwritten with zeros of the
#     same size and mtime still summarizes through it (and --from-traces
#     fails on it);
#   - a stale analysis (trace touched; trace of another size), one of
#     another version, a truncated one and a bit-flipped one: exactly one
#     stderr line naming the file and why, and the report of the trace;
#   - the cache of raw files (TBEXPORT_CACHE_DIR): a miss stores, a hit
#     gives the same bytes without reading the file, a changed file is a
#     miss, --no-cache neither reads nor writes, small files are not cached.
# usage: test_persist.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
D=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
L=$tmp/log
export TBEXPORT_CACHE_DIR=$tmp/cache

# same CMD...: CMD and CMD --from-traces print the same bytes, exit 0, no stderr.
same() {
  "$@" >"$tmp/a" 2>"$tmp/ea"
  local ra=$?
  "$@" --from-traces >"$tmp/b" 2>"$tmp/eb"
  local rb=$?
  [ $ra -eq 0 ] && [ $rb -eq 0 ] || { fail "$* exited $ra/$rb: $(cat "$tmp/ea" "$tmp/eb")"; return; }
  [ ! -s "$tmp/ea" ] || fail "$* printed on stderr: $(cat "$tmp/ea")"
  [ -s "$tmp/a" ] || fail "$* printed nothing"
  cmp -s "$tmp/a" "$tmp/b" || { fail "$* differs from --from-traces:"; diff "$tmp/b" "$tmp/a" | head -5; }
}

# every_format CMD...: `same` in every format, with default rows and with all.
every_format() {
  for f in table csv json markdown; do
    same "$@" --format "$f"
    same "$@" --format "$f" --top 0 --wide
  done
}

FILES="kineto/h200_cnn_fp32.pt.trace.json kineto/h200_cnn_bf16.pt.trace.json
kineto/h200_add_loop.trace.json jax/h200_matmul.xplane.pb jax/h200_matmul.trace.json.gz
nsys/h100_2gpu_1s.sqlite nsys/saxpy_mpi_cuda_perlmutter.sqlite collected/gpt_bf16.xplane.pb
collected/gpt_fp32.xplane.pb cli/small.trace.json cli/small2.trace.json"
runs=""
for f in $FILES; do
  r=$(echo "$f" | tr '/.' '__')
  "$B" import "$D/$f" --logdir "$L" --run "$r" --host h >/dev/null 2>"$tmp/err" || fail "import $f: $(cat "$tmp/err")"
  [ -f "$L/plugins/profile/$r/h.analysis.pb" ] || fail "$f: no h.analysis.pb"
  every_format "$B" summary --logdir "$L" "$r"
  runs="$runs $r"
done
# A run of three hosts, and one of two.
for h in a b c; do
  case $h in a) f=kineto/h200_cnn_fp32.pt.trace.json ;; b) f=kineto/h200_cnn_bf16.pt.trace.json ;;
    c) f=nsys/h100_2gpu_1s.sqlite ;; esac
  "$B" import "$D/$f" --logdir "$L" --run three --host "$h" >/dev/null 2>&1 || fail "import three/$h"
done
for h in a b; do
  "$B" import "$D/kineto/h200_cnn_bf16.pt.trace.json" --logdir "$L" --run two --host "$h" >/dev/null 2>&1 ||
    fail "import two/$h"
done
every_format "$B" summary --logdir "$L" three
every_format "$B" diff --no-events --logdir "$L" three two
every_format "$B" diff --no-events --logdir "$L" two three
set -- $runs
prev=$1
for r in $runs; do
  same "$B" diff --no-events --logdir "$L" "$prev" "$r" --format json --top 0
  same "$B" diff --no-events --logdir "$L" "$prev" "$r"
  prev=$r
done

# The analysis is what is read: the trace's bytes replaced, its size and mtime kept.
P=$L/plugins/profile/kineto_h200_add_loop_trace_json
"$B" summary --logdir "$L" kineto_h200_add_loop_trace_json >"$tmp/want" 2>/dev/null
cp -p "$P/h.trace.json.gz" "$tmp/keep"
head -c "$(stat -c %s "$tmp/keep")" /dev/zero >"$P/h.trace.json.gz"
touch -r "$tmp/keep" "$P/h.trace.json.gz"
"$B" summary --logdir "$L" kineto_h200_add_loop_trace_json >"$tmp/got" 2>"$tmp/err" || fail "summary of zeroed trace"
cmp -s "$tmp/want" "$tmp/got" || fail "summary through the analysis differs"
"$B" summary --logdir "$L" --from-traces kineto_h200_add_loop_trace_json >/dev/null 2>&1 &&
  fail "--from-traces read the zeroed trace"
cp -p "$tmp/keep" "$P/h.trace.json.gz"

# fallback PATTERN RUN: one stderr line matching PATTERN, the traces' report.
fallback() {
  local pat=$1 run=$2
  "$B" summary --logdir "$L" "$run" --format json --top 0 >"$tmp/a" 2>"$tmp/ea"
  local rc=$?
  "$B" summary --logdir "$L" "$run" --format json --top 0 --from-traces >"$tmp/b" 2>/dev/null
  [ $rc -eq 0 ] || fail "fallback ($pat) exited $rc"
  [ "$(wc -l <"$tmp/ea")" -eq 1 ] || { fail "fallback ($pat): $(wc -l <"$tmp/ea") stderr lines"; cat "$tmp/ea"; }
  grep -q -- "$pat" "$tmp/ea" || fail "fallback stderr '$(cat "$tmp/ea")' lacks '$pat'"
  cmp -s "$tmp/a" "$tmp/b" || fail "fallback ($pat): not the traces' report"
}
# A run copied with tar (times kept in whole seconds) keeps its analysis:
# no fallback line.  A trace touched after the copy is stale again.
R=kineto_h200_cnn_fp32_pt_trace_json
mkdir -p "$tmp/copy" && (cd "$L" && tar cf - --format=ustar .) | (cd "$tmp/copy" && tar xf -)
CP=$tmp/copy/plugins/profile/$R
[ "$(stat -c %y "$CP/h.trace.json.gz" | sed 's/.*\.\([0-9]*\) .*/\1/' | tr -d 0)" = "" ] ||
  fail "tar kept sub-second times: the copy checks nothing"
"$B" summary --logdir "$tmp/copy" "$R" --format json --top 0 >"$tmp/a" 2>"$tmp/ea" || fail "summary of the copy"
[ ! -s "$tmp/ea" ] || fail "a copied run fell back to its traces: $(cat "$tmp/ea")"
"$B" summary --logdir "$tmp/copy" "$R" --format json --top 0 --from-traces >"$tmp/b" 2>/dev/null
cmp -s "$tmp/a" "$tmp/b" || fail "the copied run's analysis is not the traces' report"
touch -d "+5 seconds" "$CP/h.trace.json.gz"
"$B" summary --logdir "$tmp/copy" "$R" >/dev/null 2>"$tmp/ea"
grep -q "is older than its trace" "$tmp/ea" || fail "a trace newer than the copied analysis was not stale"
P=$L/plugins/profile/$R
cp -p "$P/h.analysis.pb" "$tmp/good"
touch "$P/h.trace.json.gz"
fallback "$P/h.analysis.pb is older than its trace h.trace.json.gz; reading the trace" "$R"
gzip -dc "$P/h.trace.json.gz" | gzip -9 >"$tmp/re" && cp -p "$P/h.trace.json.gz" "$tmp/keep" &&
  cat "$tmp/re" >"$P/h.trace.json.gz" && touch -r "$tmp/keep" "$P/h.trace.json.gz"
[ "$(stat -c %s "$P/h.trace.json.gz")" != "$(stat -c %s "$tmp/keep")" ] || fail "recompressed trace kept its size"
fallback "is older than its trace" "$R"
# A current analysis again (import --force rewrites both), then damage it.
"$B" import "$D/kineto/h200_cnn_fp32.pt.trace.json" --logdir "$L" --run "$R" --host h --force >/dev/null 2>&1
cp -p "$P/h.analysis.pb" "$tmp/good"
same "$B" summary --logdir "$L" "$R"
printf '\x63' | dd of="$P/h.analysis.pb" bs=1 seek=1 conv=notrunc 2>/dev/null
fallback "h.analysis.pb is from another version (format 99, this tbexport reads 1)" "$R"
head -c 300 "$tmp/good" >"$P/h.analysis.pb"
fallback "h.analysis.pb is corrupt at byte [0-9]*: " "$R"
cp "$tmp/good" "$P/h.analysis.pb"
n=$(stat -c %s "$tmp/good")
b=$(od -An -tu1 -j $((n / 2)) -N1 "$tmp/good" | tr -d ' ')
printf "\\x$(printf %02x $((b ^ 4)))" | dd of="$P/h.analysis.pb" bs=1 seek=$((n / 2)) conv=notrunc 2>/dev/null
fallback "h.analysis.pb is corrupt: field AnalysisFile.crc32c: the checksum" "$R"
cp -p "$tmp/good" "$P/h.analysis.pb"
# Diff prints the same one line per damaged side.
head -c 300 "$tmp/good" >"$P/h.analysis.pb"
"$B" diff --no-events --logdir "$L" "$R" two >"$tmp/a" 2>"$tmp/ea" || fail "diff with a damaged side"
"$B" diff --no-events --logdir "$L" "$R" two --from-traces >"$tmp/b" 2>/dev/null
[ "$(wc -l <"$tmp/ea")" -eq 1 ] && grep -q "is corrupt at byte" "$tmp/ea" || fail "diff fallback: $(cat "$tmp/ea")"
cmp -s "$tmp/a" "$tmp/b" || fail "diff fallback: not the traces' report"
cp -p "$tmp/good" "$P/h.analysis.pb"

# The cache of raw files.
F=$tmp/raw.trace.json
cp "$D/kineto/h200_cnn_bf16.pt.trace.json" "$F"
TBEXPORT_CACHE_MIN_BYTES=1000000000 "$B" summary "$F" >/dev/null 2>&1
[ ! -e "$tmp/cache" ] || [ -z "$(ls "$tmp/cache")" ] || fail "a small file was cached"
export TBEXPORT_CACHE_MIN_BYTES=1000
"$B" summary --no-cache "$F" >"$tmp/want" 2>&1 || fail "summary --no-cache"
[ ! -e "$tmp/cache" ] || [ -z "$(ls "$tmp/cache")" ] || fail "--no-cache wrote the cache"
for f in table csv json markdown; do
  "$B" summary --no-cache --format $f "$F" >"$tmp/want.$f" 2>/dev/null
done
"$B" summary "$F" >"$tmp/got" 2>"$tmp/err" || fail "summary (miss)"
[ "$(ls "$tmp/cache" | wc -l)" -eq 1 ] || fail "a miss did not store one entry: $(ls "$tmp/cache")"
cmp -s "$tmp/want" "$tmp/got" || fail "summary (miss) differs"
# A hit does not read the file: same size and mtime, other bytes.
cp -p "$F" "$tmp/keep"
head -c "$(stat -c %s "$F")" /dev/zero >"$F"
touch -r "$tmp/keep" "$F"
for f in table csv json markdown; do
  "$B" summary --format $f "$F" >"$tmp/got" 2>"$tmp/err" || fail "summary (hit, $f): $(cat "$tmp/err")"
  cmp -s "$tmp/want.$f" "$tmp/got" || fail "summary (hit, $f) differs"
  [ ! -s "$tmp/err" ] || fail "summary (hit) printed: $(cat "$tmp/err")"
done
"$B" summary --no-cache "$F" >/dev/null 2>&1 && fail "--no-cache read the cache"
# Changed (mtime): a miss, the new content is read.
cp "$D/kineto/h200_add_loop.trace.json" "$F"
"$B" summary --no-cache "$F" >"$tmp/want" 2>/dev/null
"$B" summary "$F" >"$tmp/got" 2>"$tmp/err" || fail "summary after change"
cmp -s "$tmp/want" "$tmp/got" || fail "summary after change shows the old file"
[ "$(ls "$tmp/cache" | wc -l)" -eq 1 ] || fail "the changed file's entry was not replaced: $(ls "$tmp/cache")"
# Bounded: entries beyond the limit go, oldest first.
for i in 1 2 3; do cp "$D/kineto/h200_add_loop.trace.json" "$tmp/raw$i.trace.json"; done
for i in 1 2 3; do TBEXPORT_CACHE_MAX_ENTRIES=2 "$B" summary "$tmp/raw$i.trace.json" >/dev/null 2>&1; done
[ "$(ls "$tmp/cache" | wc -l)" -eq 2 ] || fail "cache not bounded to 2 entries: $(ls "$tmp/cache" | wc -l)"
# diff of two raw files through the cache.
"$B" diff --no-cache "$tmp/raw1.trace.json" "$F" >"$tmp/want" 2>/dev/null
"$B" diff "$tmp/raw1.trace.json" "$F" >"$tmp/got" 2>/dev/null
cmp -s "$tmp/want" "$tmp/got" || fail "diff through the cache differs"

[ $fails -eq 0 ] && echo "test_persist: all passed"
exit $((fails > 0))
