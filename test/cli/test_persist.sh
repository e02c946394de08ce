#!/bin/bash
# test_persist.sh: summary and diff read the persisted analysis
# (<host>.analysis.pb, written by the export) and print the same bytes as
# from the traces.
#
#   - every real file of test/data (Kineto, JAX XSpace and Chrome JSON,
#     Nsight Systems, the collector's XSpace, the CLI samples) imported as a
#     run, and a run of three hosts: summary in every format (default and
#     --top 0 --wide; the operators by shape and self CUDA for the Kineto
#     pair and the three hosts) through the analysis and with --from-traces,
#     the same bytes and nothing on stderr; diff of runs, likewise;
#   - the analysis is what is read: a trace whose middle is zeroed (size,
#     head and tail kept: the key's documented blind spot) still
#     summarizes through it (and --from-traces fails on it);
#   - copies keep their analyses (tar, cp -r: new mtimes, the same report
#     bytes, nothing on stderr), and so does touching a trace;
#   - a stale analysis (trace of another size; of the same size with a byte
#     of its head or tail changed), one of another analysis version (older
#     code's figures), one with forged times (INT64_MAX, INT64_MIN, a
#     window past the model's range, negative), one of another format, a
#     truncated one and a bit-flipped one, a FIFO, a symlink and a sparse
#     4 GiB file at its name: exactly one stderr line naming the file and
#     why, and the report of the trace; diff of a forged side likewise,
#     writing its events without overflow;
#   - import --force --format xplane leaves none of the host's older
#     outputs (Chrome JSON, PyTorch link, summary and HParams events), and
#     summary reads the new trace; a host's set mixed by hand names the odd
#     trace;
#   - the cache of raw files (TBEXPORT_CACHE_DIR): a miss stores, a hit
#     gives the same bytes without importing the file, a change of size or
#     of the head or tail is a miss, an entry of another analysis version
#     is replaced, a FIFO at an entry does not hang, --no-cache neither
#     reads nor writes, small files are not cached.
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
# The operator table by input shape and by the GPU keys (the Kineto pair
# records shapes), of one host and of a run's merge; their diff.
k32=kineto_h200_cnn_fp32_pt_trace_json k16=kineto_h200_cnn_bf16_pt_trace_json
for r in $k32 $k16 three; do
  for f in table csv json markdown; do
    same "$B" summary --logdir "$L" "$r" --format "$f" --group-by shape --sort self-cuda --top 0
  done
done
for f in table json; do
  same "$B" diff --no-events --logdir "$L" $k32 $k16 --format "$f" --group-by shape --top 0
done
every_format "$B" diff --no-events --logdir "$L" three two
every_format "$B" diff --no-events --logdir "$L" two three
set -- $runs
prev=$1
for r in $runs; do
  same "$B" diff --no-events --logdir "$L" "$prev" "$r" --format json --top 0
  same "$B" diff --no-events --logdir "$L" "$prev" "$r"
  prev=$r
done

# forge FILE OP VALUE...: rewrites a persisted analysis with a correct
# checksum: "version N" sets AnalysisFile.analysis_version, "start N" and
# "wall N" Analysis.start_ns and wall_ns (what a hostile file can say).
cat >"$tmp/forge.py" <<'PY'
import sys
T = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    T.append(c)
def crc32c(b):
    c = 0xffffffff
    for x in b:
        c = T[(c ^ x) & 0xff] ^ (c >> 8)
    return c ^ 0xffffffff
def varint(b, i):
    v = s = 0
    while True:
        x = b[i]; i += 1
        v |= (x & 0x7f) << s; s += 7
        if not x & 0x80:
            return v, i
def enc(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        x = v & 0x7f; v >>= 7
        if v:
            out.append(x | 0x80)
        else:
            out.append(x)
            return bytes(out)
def fields(b):
    i, out = 0, []
    while i < len(b):
        tag, i = varint(b, i)
        num, wt = tag >> 3, tag & 7
        s = i
        if wt == 0: _, i = varint(b, i)
        elif wt == 1: i += 8
        elif wt == 5: i += 4
        elif wt == 2:
            n, i = varint(b, i); s = i; i += n
        out.append([num, wt, b[s:i]])
    return out
def pack(fs):
    out = bytearray()
    for num, wt, v in fs:
        out += enc(num << 3 | wt)
        if wt == 2: out += enc(len(v))
        out += v
    return bytes(out)
def put(fs, num, value):
    for f in fs:
        if f[0] == num:
            f[2] = enc(value); return
    fs.append([num, 0, enc(value)]); fs.sort(key=lambda f: f[0])
path, args = sys.argv[1], sys.argv[2:]
top = [f for f in fields(open(path, 'rb').read()) if f[0] != 5]
for op, val in zip(args[::2], args[1::2]):
    if op == 'version':
        put(top, 6, int(val))
    else:
        for f in top:
            if f[0] == 4:
                inner = fields(f[2]); put(inner, {'start': 1, 'wall': 2}[op], int(val)); f[2] = pack(inner)
body = pack(top)
open(path, 'wb').write(body + bytes([5 << 3 | 5]) + crc32c(body).to_bytes(4, 'little'))
PY
forge() { python3 "$tmp/forge.py" "$@" || fail "forge $*"; }

# The analysis is what is read: the middle of a trace over twice the key's
# span replaced by zeros, its size, head and tail kept (the key's blind
# spot), still summarizes through the analysis (and --from-traces fails on
# it).
R=jax_h200_matmul_xplane_pb
P=$L/plugins/profile/$R
"$B" summary --logdir "$L" $R >"$tmp/want" 2>/dev/null
cp -p "$P/h.trace.json.gz" "$tmp/keep"
n=$(stat -c %s "$P/h.trace.json.gz")
[ "$n" -gt 200000 ] || fail "$P/h.trace.json.gz is too small to keep head and tail apart ($n)"
dd if=/dev/zero of="$P/h.trace.json.gz" bs=4096 seek=16 count=$(((n - 131072) / 4096)) conv=notrunc 2>/dev/null
"$B" summary --logdir "$L" $R >"$tmp/got" 2>"$tmp/err" || fail "summary of the zeroed trace"
cmp -s "$tmp/want" "$tmp/got" || fail "summary through the analysis differs"
[ ! -s "$tmp/err" ] || fail "summary of the zeroed trace printed: $(cat "$tmp/err")"
"$B" summary --logdir "$L" --from-traces $R >/dev/null 2>&1 &&
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
# current LOGDIR RUN: the analysis is used (no stderr) and gives the traces' report.
current() {
  "$B" summary --logdir "$1" "$2" --format json --top 0 >"$tmp/a" 2>"$tmp/ea" || fail "summary of $1 $2"
  [ ! -s "$tmp/ea" ] || fail "$1 $2 fell back to its traces: $(cat "$tmp/ea")"
  "$B" summary --logdir "$1" "$2" --format json --top 0 --from-traces >"$tmp/b" 2>/dev/null
  cmp -s "$tmp/a" "$tmp/b" || fail "$1 $2: the analysis is not the traces' report"
}
# Copies keep their analyses: tar (times in whole seconds) and cp -r (new
# times); the key is the traces' bytes, not their mtimes.  Touching a trace
# changes nothing either.
R=kineto_h200_cnn_fp32_pt_trace_json
mkdir -p "$tmp/copy" && (cd "$L" && tar cf - --format=ustar .) | (cd "$tmp/copy" && tar xf -)
current "$tmp/copy" "$R"
sleep 0.05
cp -r "$L" "$tmp/cpr"
[ "$(stat -c %Y.%y "$tmp/cpr/plugins/profile/$R/h.trace.json.gz")" != "$(stat -c %Y.%y "$L/plugins/profile/$R/h.trace.json.gz")" ] ||
  fail "cp -r kept the trace's mtime: the copy checks nothing"
current "$tmp/cpr" "$R"
"$B" summary --logdir "$L" "$R" --format json --top 0 >"$tmp/orig" 2>/dev/null
"$B" summary --logdir "$tmp/cpr" "$R" --format json --top 0 >"$tmp/copied" 2>/dev/null
cmp -s "$tmp/orig" "$tmp/copied" || fail "the cp -r copy's report differs"
touch -d "+5 seconds" "$tmp/cpr/plugins/profile/$R/h.trace.json.gz"
current "$tmp/cpr" "$R"
P=$L/plugins/profile/$R
cp -p "$P/h.analysis.pb" "$tmp/good"
# A changed trace: another size (recompressed), or the same size with one
# byte of its head or of its tail changed (mtime kept: it decides nothing).
gzip -dc "$P/h.trace.json.gz" | gzip -9 >"$tmp/re" && cp -p "$P/h.trace.json.gz" "$tmp/keep" &&
  cat "$tmp/re" >"$P/h.trace.json.gz" && touch -r "$tmp/keep" "$P/h.trace.json.gz"
[ "$(stat -c %s "$P/h.trace.json.gz")" != "$(stat -c %s "$tmp/keep")" ] || fail "recompressed trace kept its size"
fallback "$P/h.analysis.pb is stale: its trace h.trace.json.gz changed since it was written; reading the trace" "$R"
n=$(stat -c %s "$tmp/keep")
for at in 200 $((n - 20)); do
  cp -p "$tmp/keep" "$P/h.trace.json.gz"
  b=$(od -An -tu1 -j $at -N1 "$P/h.trace.json.gz" | tr -d ' ')
  printf "\\x$(printf %02x $((b ^ 1)))" | dd of="$P/h.trace.json.gz" bs=1 seek=$at conv=notrunc 2>/dev/null
  touch -r "$tmp/keep" "$P/h.trace.json.gz"
  [ "$(stat -c %s "$P/h.trace.json.gz")" = "$n" ] || fail "the byte flip changed the size"
  "$B" summary --logdir "$L" "$R" >/dev/null 2>"$tmp/ea"
  grep -q "h.analysis.pb is stale: its trace h.trace.json.gz changed" "$tmp/ea" ||
    fail "a same-size change at byte $at was not seen: $(cat "$tmp/ea")"
done
cp -p "$tmp/keep" "$P/h.trace.json.gz"
current "$L" "$R"
# Another analysis version (figures of other code): not used, whatever it says.
forge "$P/h.analysis.pb" version 0 wall 1
fallback "$P/h.analysis.pb is from another analysis version (0, this tbexport computes [0-9]*); reading the trace" "$R"
cp -p "$tmp/good" "$P/h.analysis.pb"
forge "$P/h.analysis.pb" version 4000000000
fallback "is from another analysis version (4000000000, this" "$R"
cp -p "$tmp/good" "$P/h.analysis.pb"
# The forge itself is faithful: the same version and figures load.
forge "$P/h.analysis.pb" version "$(od -An -tu1 -j $(($(stat -c %s "$tmp/good") - 6)) -N1 "$tmp/good" | tr -d ' ')"
cmp -s "$P/h.analysis.pb" "$tmp/good" || fail "forge does not rewrite a file as it was"
# Forged times: refused naming the field, as an import refuses them; the
# summary and diff (which writes its events from the analyses) read the
# traces instead, with no overflow anywhere (the sanitized build).
forge "$P/h.analysis.pb" start 9223372036854775807
fallback "$P/h.analysis.pb is corrupt: field Analysis.start_ns: 9223372036854775807 ns is outside the model's time range" "$R"
"$B" diff --logdir "$L" two "$R" >"$tmp/a" 2>"$tmp/ea" || fail "diff with a forged side: $(cat "$tmp/ea")"
"$B" diff --logdir "$L" --no-events two "$R" --from-traces >"$tmp/b" 2>/dev/null
[ "$(grep -vc '^wrote ' "$tmp/ea")" -eq 1 ] && grep -q "field Analysis.start_ns" "$tmp/ea" ||
  fail "diff with a forged side: $(cat "$tmp/ea")"
cmp -s "$tmp/a" "$tmp/b" || fail "diff with a forged side: not the traces' report"
cp -p "$tmp/good" "$P/h.analysis.pb"
forge "$P/h.analysis.pb" start -9223372036854775808
fallback "field Analysis.start_ns: -9223372036854775808 ns is outside" "$R"
cp -p "$tmp/good" "$P/h.analysis.pb"
forge "$P/h.analysis.pb" wall 4611686018427387903
fallback "field Analysis.wall_ns: 4611686018427387903 ns from [0-9]* ns ends outside" "$R"
cp -p "$tmp/good" "$P/h.analysis.pb"
forge "$P/h.analysis.pb" wall -1
fallback "field Analysis.wall_ns: -1 ns is negative" "$R"
cp -p "$tmp/good" "$P/h.analysis.pb"
same "$B" summary --logdir "$L" "$R"
# Not a file to read: a FIFO (the summary does not wait for a writer), a
# symlink (to a good analysis: not followed), a sparse 4 GiB file (refused
# at its size, not read).
rm "$P/h.analysis.pb"
mkfifo "$P/h.analysis.pb"
timeout 60 "$B" summary --logdir "$L" "$R" >/dev/null 2>&1
[ $? -ne 124 ] || fail "summary hung on a FIFO at the analysis"
fallback "$P/h.analysis.pb is not a regular file: not read; reading the trace" "$R"
rm "$P/h.analysis.pb"
ln -s "$tmp/good" "$P/h.analysis.pb"
fallback "$P/h.analysis.pb is a symbolic link: not followed; reading the trace" "$R"
rm "$P/h.analysis.pb"
truncate -s 4G "$P/h.analysis.pb"
fallback "$P/h.analysis.pb is 4294967296 bytes, more than an analysis file holds (at most 67108864): not read" "$R"
rm "$P/h.analysis.pb"
cp -p "$tmp/good" "$P/h.analysis.pb"
# Another format, damaged files.
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

# --force with one format replaces all of the host's outputs: none of the
# old trace's is left (its Chrome JSON, which summary prefers, its PyTorch
# link, summary and HParams events), and summary and diff read the new trace.
R=force_one
"$B" import "$D/kineto/h200_cnn_fp32.pt.trace.json" --logdir "$L" --run $R --host h >/dev/null 2>&1 || fail "import $R"
"$B" import "$D/kineto/h200_cnn_bf16.pt.trace.json" --logdir "$L" --run $R --host g >/dev/null 2>&1 || fail "import $R/g"
"$B" import "$D/kineto/h200_add_loop.trace.json" --logdir "$L" --run $R --host h --force --format xplane \
  >/dev/null 2>"$tmp/err" || fail "import --force --format xplane: $(cat "$tmp/err")"
P=$L/plugins/profile/$R
left=$(cd "$L" && ls plugins/profile/$R/h.* $R/h.* $R/*.h.tbexport-* $R/h/* $R/hparams/h/* 2>/dev/null | tr '\n' ' ')
[ "$left" = "plugins/profile/$R/h.analysis.pb plugins/profile/$R/h.xplane.pb " ] ||
  fail "--force --format xplane left: $left"
[ -e "$P/g.trace.json.gz" ] && [ -e "$L/$R/g.pt.trace.json.gz" ] || fail "--force removed another host's files"
"$B" summary --logdir "$L" $R --format json --top 0 >"$tmp/a" 2>"$tmp/ea" || fail "summary after --force"
[ ! -s "$tmp/ea" ] || fail "summary after --force: $(cat "$tmp/ea")"
# the new trace's 200 kernels (h200_add_loop), not the old one's 111
grep -q '"kernel_count":200,' "$tmp/a" && ! grep -q '"kernel_count":111,' "$tmp/a" ||
  fail "summary after --force does not read the new trace"
every_format "$B" summary --logdir "$L" $R
every_format "$B" diff --no-events --logdir "$L" $R two
# A host's set mixed by hand (an older trace put back beside the new one):
# the line names the odd trace, not the analysis.
cp "$L/plugins/profile/three/a.trace.json.gz" "$P/h.trace.json.gz"
"$B" summary --logdir "$L" $R >/dev/null 2>"$tmp/ea"
grep -q "h.trace.json.gz is not a trace of the export that wrote $P/h.analysis.pb (h.xplane.pb); reading the trace" "$tmp/ea" ||
  fail "mixed host: $(cat "$tmp/ea")"

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
# A hit does not import the file: its middle zeroed (head, tail and size
# kept: the key's blind spot), every format is still the cached report.
cp -p "$F" "$tmp/keep"
n=$(stat -c %s "$F")
dd if=/dev/zero of="$F" bs=4096 seek=16 count=$(((n - 131072) / 4096)) conv=notrunc 2>/dev/null
for f in table csv json markdown; do
  "$B" summary --format $f "$F" >"$tmp/got" 2>"$tmp/err" || fail "summary (hit, $f): $(cat "$tmp/err")"
  cmp -s "$tmp/want.$f" "$tmp/got" || fail "summary (hit, $f) differs"
  [ ! -s "$tmp/err" ] || fail "summary (hit) printed: $(cat "$tmp/err")"
done
"$B" summary --no-cache "$F" >/dev/null 2>&1 && fail "--no-cache read the cache"
# The same size and mtime with its head or its tail changed: a miss, the
# file is read (and now fails to import).
for at in 0 $((n - 3)); do
  cp -p "$tmp/keep" "$F"
  printf '@@' | dd of="$F" bs=1 seek=$at conv=notrunc 2>/dev/null
  touch -r "$tmp/keep" "$F"
  "$B" summary "$F" >/dev/null 2>&1 && fail "a same-size change at byte $at was a cache hit"
done
cp -p "$tmp/keep" "$F"
"$B" summary "$F" >/dev/null 2>&1 || fail "summary (store again)"
# An entry of another analysis version (what older code computed): not
# used, replaced by the file's own.
E=$(ls "$tmp/cache"/*.analysis.pb)
forge "$E" version 0 wall 1
"$B" summary --format json "$F" >"$tmp/got" 2>"$tmp/err" || fail "summary (old entry)"
cmp -s "$tmp/want.json" "$tmp/got" || fail "an entry of another analysis version was used"
"$B" summary --format json "$F" >"$tmp/got" 2>/dev/null
cmp -s "$tmp/want.json" "$tmp/got" || fail "the replaced entry differs"
# Changed (another file, another size): a miss, the new content is read.
cp "$D/kineto/h200_add_loop.trace.json" "$F"
"$B" summary --no-cache "$F" >"$tmp/want" 2>/dev/null
"$B" summary "$F" >"$tmp/got" 2>"$tmp/err" || fail "summary after change"
cmp -s "$tmp/want" "$tmp/got" || fail "summary after change shows the old file"
[ "$(ls "$tmp/cache" | wc -l)" -eq 1 ] || fail "the changed file's entry was not replaced: $(ls "$tmp/cache")"
# A FIFO in the cache at the entry's name: no hang, the file is read.
E=$(ls "$tmp/cache"/*.analysis.pb)
rm "$E" && mkfifo "$E"
timeout 60 "$B" summary "$F" >"$tmp/got" 2>/dev/null || fail "summary with a FIFO in the cache"
cmp -s "$tmp/want" "$tmp/got" || fail "summary with a FIFO in the cache differs"
# Bounded: entries beyond the limit go, oldest first.
for i in 1 2 3; do cp "$D/kineto/h200_add_loop.trace.json" "$tmp/raw$i.trace.json"; done
for i in 1 2 3; do TBEXPORT_CACHE_MAX_ENTRIES=2 "$B" summary "$tmp/raw$i.trace.json" >/dev/null 2>&1; done
[ "$(ls "$tmp/cache" | wc -l)" -eq 2 ] || fail "cache not bounded to 2 entries: $(ls "$tmp/cache" | wc -l)"
# diff of two raw files through the cache.
"$B" diff --no-cache "$tmp/raw1.trace.json" "$F" >"$tmp/want" 2>/dev/null
"$B" diff "$tmp/raw1.trace.json" "$F" >"$tmp/got" 2>/dev/null
cmp -s "$tmp/want" "$tmp/got" || fail "diff through the cache differs"

# A run's trace below the log dir is read under the same rule as its
# analysis: a symbolic link there (or a FIFO) is refused in one line, never
# followed, and the summary fails.
L2=$tmp/symrun
"$B" import "$D/kineto/h200_add_loop.trace.json" --logdir "$L2" --run r >/dev/null 2>&1 || fail "symrun import"
J=$(ls "$L2"/plugins/profile/r/*.trace.json.gz)
mv "$J" "$tmp/elsewhere.json.gz" && ln -s "$tmp/elsewhere.json.gz" "$J"
rm -f "$L2"/plugins/profile/r/*.analysis.pb "$L2"/plugins/profile/r/*.xplane.pb
"$B" summary --logdir "$L2" r >"$tmp/got" 2>"$tmp/err" && fail "summary read a trace through a symlink"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "a symbolic link: not followed below" "$tmp/err" ||
  fail "symlinked trace: message: $(cat "$tmp/err")"
rm "$J" && mkfifo "$J"
timeout 60 "$B" summary --logdir "$L2" r >"$tmp/got" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "FIFO trace: status $rc (124: it hung)"

[ $fails -eq 0 ] && echo "test_persist: all passed"
exit $((fails > 0))
