#!/usr/bin/env bash
# test_inspect.sh: `tbexport inspect` on the golden TensorBoard runs, on a
# corrupt and a truncated copy, and its usage errors.
# usage: test_inspect.sh TBEXPORT_BINARY TEST_DATA_DIR
set -euo pipefail
bin=$1 data=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# help
"$bin" inspect --help >"$work/help" || fail "--help exit status"
grep "usage: tbexport inspect" >/dev/null "$work/help" || fail "--help text"

# the golden log directory: every run and tag
"$bin" inspect "$data/tensorboard/run1" >"$work/out" || fail "inspect run1 exit status"
grep "4 runs, 115 events" >/dev/null "$work/out" || fail "run/event count: $(head -1 "$work/out")"
for t in loss/train lr weights img pr notes/text_summary custom_scalars__config__ \
         _hparams_/experiment hparam/acc multi; do
  grep -Eq "^    $t +count" "$work/out" || fail "tag $t missing"
done
grep -Eq "^    loss/train +count 50 +steps 0\.\.49 +wall 2023-11-14T22:13:20\.000Z \.\. 2023-11-14T22:14:09\.000Z" \
  "$work/out" || fail "loss/train line"
grep "^run multi_b" >/dev/null "$work/out" || fail "run multi_b"

# --dump: one JSON object per event
so="$data/tensorboard/scalars_only/events.out.tfevents.1796205392.vm.580.4.golden"
"$bin" inspect --dump "$so" >"$work/dump" || fail "--dump exit status"
[ "$(wc -l <"$work/dump")" -eq 6 ] || fail "--dump line count"
python3 - "$work/dump" <<'PY' || fail "--dump JSON content"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["kind"] == "file_version" and lines[0]["file_version"] == "brain.Event:2"
for s, e in enumerate(lines[1:]):
    assert e["step"] == s and e["wall_time"] == 1700000000 + s, e
    v = e["values"][0]
    assert v["tag"] == "x" and v["type"] == "simple_value" and v["value"] == 0.5 * s, v
assert [e["offset"] for e in lines] == [0, 88, 125, 164, 203, 242]
PY

# a corrupt record: exit 2 and the byte offset of the record
cp "$so" "$work/events.out.tfevents.bad"
printf '\x55' | dd of="$work/events.out.tfevents.bad" bs=1 seek=200 conv=notrunc status=none
set +e
"$bin" inspect "$work/events.out.tfevents.bad" >/dev/null 2>"$work/err"
st=$?
set -e
[ $st -eq 2 ] || fail "corrupt file exit status $st"
grep "corrupt record at byte offset 164" >/dev/null "$work/err" || fail "corrupt message: $(cat "$work/err")"

# a truncated tail: a warning with the offset, exit 0
head -c 230 "$so" >"$work/events.out.tfevents.cut"
"$bin" inspect "$work/events.out.tfevents.cut" >"$work/out" 2>"$work/err" || fail "truncated exit status"
grep "warning: .*byte offset 203" >/dev/null "$work/err" || fail "truncated warning: $(cat "$work/err")"
grep "4 events" >/dev/null "$work/out" || fail "truncated: events before the cut"

# usage errors
expect2() {
  set +e
  "$bin" inspect "$@" >/dev/null 2>"$work/err"
  local s=$?
  set -e
  [ $s -eq 2 ] || fail "inspect $* exit status $s"
  [ "$(wc -l <"$work/err")" -ge 1 ] || fail "inspect $*: no message"
}
expect2
expect2 --bogus "$so"
expect2 "$work/does-not-exist"
mkdir "$work/empty"
expect2 "$work/empty"
expect2 "$so" extra
# ---- a tree with symbolic links: each directory read once ----
# `latest -> .` (listed every run 32 times before), two directories linked
# to each other (an exponential walk before), a link to a run outside the
# tree (followed once), a FIFO named like an event file (listed, never
# opened: opening it would block).  `timeout` turns a hang into a failure.
L=$work/links
cp -r "$data/tensorboard/run1" "$L"
ln -s . "$L/latest"
mkdir -p "$L/a" "$L/b" "$work/outside/ext"
ln -s ../b "$L/a/to_b"
ln -s ../a "$L/b/to_a"
cp "$so" "$work/outside/ext/"
ln -s "$work/outside" "$L/out"
ln -s "$work/outside" "$L/out_again"
mkfifo "$L/a/events.out.tfevents.fifo"
set +e
timeout 20 "$bin" inspect "$L" >"$work/out" 2>"$work/err"
st=$?
set -e
[ $st -eq 0 ] || fail "inspect of a tree with links: exit $st: $(cat "$work/err")"
head -1 "$work/out" | grep ": 5 runs, 121 events$" >/dev/null || fail "links: $(head -1 "$work/out") (want 5 runs, 121 events)"
[ "$(grep -c '^run ' "$work/out")" -eq 5 ] || fail "links: $(grep -c '^run ' "$work/out") runs listed"
grep "^run out/ext " >/dev/null "$work/out" || fail "links: the run outside is not listed as out/ext"
! grep "^run latest" >/dev/null "$work/out" || fail "links: runs listed again through latest"
for l in latest a/to_b b/to_a out_again; do
  grep -F "skipped $L/$l: a symbolic link to a directory already read: not followed" >/dev/null "$work/out" ||
    fail "links: $l not listed as skipped"
done
grep -F "skipped $L/a/events.out.tfevents.fifo: a FIFO, not a regular file: not opened" >/dev/null "$work/out" ||
  fail "links: the FIFO is not listed"
# a FIFO given as PATH: one line, exit 2, no hang
set +e
timeout 20 "$bin" inspect "$L/a/events.out.tfevents.fifo" >/dev/null 2>"$work/err"
st=$?
set -e
[ $st -eq 2 ] || fail "inspect FIFO: exit $st"
[ "$(wc -l <"$work/err")" -eq 1 ] && grep "is a FIFO, not an event file or a directory" >/dev/null "$work/err" ||
  fail "inspect FIFO: $(cat "$work/err")"

# ---- files that are not event files: what they are, in one line, exit 2 ----
printf 'TBESPL01 not a whole spool' >"$work/1234.spool"
not_events() { # FILE WHAT HINT
  set +e
  "$bin" inspect "$1" >"$work/out" 2>"$work/err"
  local st=$?
  set -e
  [ $st -eq 2 ] || fail "inspect $1: exit $st"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "inspect $1: $(wc -l <"$work/err") lines"
  grep -F "$1 is $2, not a TensorBoard event file; use \`$3 $1" >/dev/null "$work/err" ||
    fail "inspect $1: $(cat "$work/err")"
  [ ! -s "$work/out" ] || fail "inspect $1 wrote to stdout"
}
not_events "$data/jax/h200_matmul.xplane.pb" "an XSpace file" "tbexport summary"
not_events "$data/jax/h200_matmul.trace.json.gz" "a gzip-compressed Chrome trace JSON file" "tbexport summary"
not_events "$data/cli/small.trace.json" "a Chrome trace JSON file" "tbexport summary"
not_events "$data/nsys/saxpy_mpi_cuda_perlmutter.sqlite" "an SQLite database (as Nsight Systems exports)" "tbexport summary"
not_events "$work/1234.spool" "a tbexport spool (a profile not converted yet)" "tbexport import"

# What `import` writes, every file of it: the event files are read, the
# profile files are named with the command that reads them, and a run's
# profile folder (no event files in it) names its profile.
"$bin" import "$data/cli/small.trace.json" --logdir "$work/ld" --run r1 --host h --quiet >/dev/null ||
  fail "import for the outputs"
while IFS= read -r f; do
  case "$f" in
    *tfevents*) "$bin" inspect "$f" >"$work/out" 2>"$work/err" || fail "inspect $f: $(cat "$work/err")" ;;
    *.xplane.pb) not_events "$f" "an XSpace file" "tbexport summary" ;;
    *.trace.json.gz) not_events "$f" "a gzip-compressed Chrome trace JSON file" "tbexport summary" ;;
    *.analysis.pb)
      set +e
      "$bin" inspect "$f" >"$work/out" 2>"$work/err"
      st=$?
      set -e
      [ $st -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
        grep -F "$f is a tbexport analysis file (the figures of a run's host that summary and diff read instead of its traces), not a TensorBoard event file; use \`tbexport summary --logdir $work/ld r1\`" >/dev/null "$work/err" ||
        fail "inspect $f: exit $st, $(cat "$work/err")" ;;
    *) fail "import wrote $f, which this test does not know" ;;
  esac
done < <(find "$work/ld" -type f ! -name '.*')
[ -f "$work/ld/plugins/profile/r1/h.xplane.pb" ] || fail "import wrote no XSpace"
for d in "$work/ld/plugins/profile/r1" "$work/ld/plugins"; do
  set +e
  "$bin" inspect "$d" >"$work/out" 2>"$work/err"
  st=$?
  set -e
  [ $st -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] || fail "inspect $d: exit $st, $(cat "$work/err")"
  grep -Eq "^tbexport inspect: $d: no TensorBoard event files \(names containing \"tfevents\"\) found; $work/ld/plugins/profile/r1/h\.(xplane\.pb is an XSpace file|trace\.json\.gz is a gzip-compressed Chrome trace JSON file|analysis\.pb is a tbexport analysis file [^:]*): use \`tbexport summary " \
    "$work/err" || fail "inspect $d: $(cat "$work/err")"
done

# ---- hostile run names and tags: inert output, the columns in line ----
H=$work/hostile
mkdir -p "$H/"$'run\e[2J\nfake'
python3 - "$H/"$'run\e[2J\nfake'"/events.out.tfevents.1.h" <<'PY' || fail "writing the hostile event file"
import struct, sys
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF
def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
def field(n, wire, payload):
    key = bytes([(n << 3) | wire])
    if wire == 2:
        l, v = len(payload), b""
        while True:
            v += bytes([(l & 0x7F) | (0x80 if l > 0x7F else 0)])
            l >>= 7
            if not l:
                break
        return key + v + payload
    return key + payload
def record(data):
    h = struct.pack("<Q", len(data))
    return h + struct.pack("<I", masked(crc32c(h))) + data + struct.pack("<I", masked(crc32c(data)))
tags = ["loss\x1b[2J\x1b]8;;http://x\x07", "acc\r\nrun ok  (1 file, 9 events)", "\u202eevil",
        "wide\u4e2d\u6587", "bad\xff".encode("latin-1").decode("latin-1")]
out = b""
for step, tag in enumerate(tags):
    t = tag.encode("utf-8") if not tag.startswith("bad") else b"bad\xff"
    value = field(1, 2, t) + field(2, 5, struct.pack("<f", 1.5))
    ev = field(1, 1, struct.pack("<d", 1.7e9 + step)) + field(2, 0, bytes([step])) + field(5, 2, field(1, 2, value))
    out += record(ev)
open(sys.argv[1], "wb").write(out)
PY
"$bin" inspect "$H" >"$work/out" 2>"$work/err" || fail "inspect of hostile tags: $(cat "$work/err")"
python3 - "$work/out" <<'PY' || fail "hostile tags: output not inert or out of line"
import re, sys
s = open(sys.argv[1], "rb").read().decode("utf-8")
for i, c in enumerate(s):
    o = ord(c)
    assert not ((o < 0x20 and c != "\n") or 0x7f <= o <= 0x9f or 0x202a <= o <= 0x202e), \
        f"raw U+{o:04X} at {i}: {s[max(0, i - 20):i + 10]!r}"
runs = [l for l in s.split("\n") if l.startswith("run ")]
assert runs == ["run run\\x1b[2J\\nfake  (1 file, 5 events)"], runs
rows = [l for l in s.split("\n") if l.startswith("    ")]
assert len(rows) == 5, rows
wide = lambda t: sum(2 if "\u4e00" <= c <= "\u9fff" else 1 for c in t)
for r in rows:  # tags padded to 32 columns (measured after escaping)
    k = r.index(" count ")
    assert wide(r[:k]) == 4 + max(32, wide(r[4:k].rstrip())), (wide(r[:k]), r)
assert any("loss\\x1b[2J\\x1b]8;;http://x\\x07" in r for r in rows)
assert any("acc\\r\\nrun ok" in r for r in rows)
assert any("\\u202eevil" in r for r in rows)
assert any("bad\\xff" in r for r in rows)
PY

echo "test_inspect: OK"
