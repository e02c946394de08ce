#!/usr/bin/env bash
# test_textsafe.sh: what tbexport prints from hostile inputs stays inert
# text (issue 12, class 10).
#
# data/cli/hostile.trace.json holds kernel, operator and range names, a
# device name, a host and warnings with ESC [2J, an OSC 8 hyperlink, an OSC
# title, CR and LF, a tab, a one-byte C1 CSI, bidi overrides, zero-width
# characters, invalid UTF-8, Markdown and HTML syntax.  Run through
# `summary` (every format, --wide too), `diff`, runs whose host files have
# such names, and the Markdown that `import` and `diff` write into
# TensorBoard, no output may hold a raw control byte (other than the
# newlines ending lines), DEL, a C1 control, a bidi or invisible character,
# or invalid UTF-8; table rows stay in line with their headers, Markdown
# rows keep their cell count, CSV records their field count, and JSON
# gives the names back exactly.  Every error about a file whose name holds
# a newline or an escape is one line on stderr.
# usage: test_textsafe.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
D=$(cd "$2" && pwd)
H=$D/cli/hostile.trace.json
S=$D/cli/small.trace.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# check KIND FILE WHAT: KIND is inert (any output), table, markdown, csv,
# json-summary, json-diff; every kind checks inert first.
check() {
  python3 - "$@" <<'PY' || fail "$3 ($1)"
import csv, io, json, re, sys
kind, path, what = sys.argv[1:4]
raw = open(path, "rb").read()
try:
    s = raw.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit(f"invalid UTF-8: {e}")
INVISIBLE = {0xad, 0x61c, 0x115f, 0x1160, 0x180e, 0x2028, 0x2029, 0x3164, 0xfeff, 0xffa0}
def bad(c):
    o = ord(c)
    return ((o < 0x20 and c != "\n") or 0x7f <= o <= 0x9f or o in INVISIBLE or 0x200b <= o <= 0x200f
            or 0x202a <= o <= 0x202e or 0x2060 <= o <= 0x206f or 0xfff9 <= o <= 0xfffb
            or 0xe0000 <= o <= 0xe007f)
for i, c in enumerate(s):
    if bad(c):
        sys.exit(f"raw U+{ord(c):04X} at {i}: {s[max(0, i - 30):i + 10]!r}")
lines = s.split("\n")
if kind == "table":
    # each table: a header naming the columns, a rule, rows up to a blank
    # line; every row ends a field where the header's first numeric column
    # ends ("calls" or "calls b/n"), so the name cells took their widths
    rows = 0
    for i, h in enumerate(lines):
        m = re.match(r"^(name|host)\b.*?\b(calls b/n|calls|pid|wall b)\b", h)
        if not m or i + 1 >= len(lines) or not lines[i + 1].startswith("---"):
            continue
        end = m.end(2)
        for r in lines[i + 2:]:
            if not r or r.startswith(("slowest ", "busy: ")):
                break  # a blank line, or the sentence right after a hosts table
            if not (r[end - 1:end].strip() and r[end:end + 1] in ("", " ")):
                sys.exit(f"row out of line with column end {end}: {r!r}")
            rows += 1
    if rows < 3:
        sys.exit(f"only {rows} table rows checked")
elif kind == "markdown":
    want, rows = None, 0
    for l in lines:
        if not l.startswith("|"):
            want = None
            continue
        n = len(re.findall(r"(?<!\\)(?:\\\\)*\|", l))
        if want is None:
            want = n
        elif n != want:
            sys.exit(f"{n} cells, header {want}: {l!r}")
        rows += 1
    if "<" in s:
        sys.exit("raw < in Markdown")
    if rows < 3:
        sys.exit("no Markdown table")
elif kind == "csv":
    for sec in s.strip("\n").split("\n\n"):
        recs = list(csv.reader(io.StringIO(sec)))
        for r in recs:
            if len(r) != len(recs[0]):
                sys.exit(f"{len(r)} fields, header {len(recs[0])}: {r}")
elif kind.startswith("json"):
    d = json.loads(s)
    names = {e["name"] for g in ("kernels", "cpu_ops", "ranges")
             for e in (d[g] if kind == "json-summary" else d[g]["entries"])}
    for want in ("evil\x1b[2J\x1b[31mkernel", "ok\r\nall good | done", "aten::\u202eevil\u202c_op",
                 "csi\u009b2Jop\ufffd\ufffd"):
        if want not in names:
            sys.exit(f"name {want!r} not given back: {sorted(names)!r}")
    if kind == "json-summary" and d["host"] != "host\nwarning: all good":
        sys.exit(f"host {d['host']!r}")
PY
}

# ---- summary, every format ----
for f in table csv markdown json; do
  for wide in "" --wide; do
    "$B" summary --format "$f" $wide --top 0 "$H" >"$tmp/out" 2>"$tmp/err" || fail "summary --format $f $wide exit"
    [ ! -s "$tmp/err" ] || fail "summary --format $f printed: $(cat "$tmp/err")"
    k=$f
    [ "$f" = json ] && k=json-summary
    check "$k" "$tmp/out" "summary --format $f $wide"
  done
done
"$B" summary "$H" >"$tmp/out"
grep -qF 'evil\x1b[2J\x1b[31mkernel' "$tmp/out" || fail "escaped kernel name not shown"
grep -qF 'host host\nwarning: all good' "$tmp/out" || fail "escaped host not shown"
grep -qF 'warning: first\rline' "$tmp/out" || fail "escaped warning not shown"
grep -qF 'GPU\x1b]0;pwned\x07' "$tmp/out" || fail "escaped device name not shown"
grep -qF 'aten::\u202eevil\u202c_op' "$tmp/out" || fail "bidi override not shown as an escape"
[ "$(grep -c '^warning: ' "$tmp/out")" -eq 2 ] || fail "warnings: $(grep -c '^warning: ' "$tmp/out") lines, want 2 (a LF in a name faked one)"

# ---- diff, both ways, every format ----
for f in table csv markdown json; do
  "$B" diff --format "$f" --top 0 "$S" "$H" >"$tmp/out" 2>"$tmp/err" || fail "diff --format $f exit"
  k=$f
  [ "$f" = json ] && k=json-diff
  check "$k" "$tmp/out" "diff --format $f"
  "$B" diff --format "$f" --wide "$H" "$S" >"$tmp/out" 2>"$tmp/err" || fail "diff --format $f (reversed) exit"
  check inert "$tmp/out" "diff --format $f (reversed)"
done

# ---- runs whose host files have hostile names, and their diff ----
P=$tmp/log/plugins/profile
mkdir -p "$P/r1" "$P/r2"
cp "$H" "$P/r1/"$'a\x1b[2J\e]0;t\a'".trace.json"
cp "$S" "$P/r1/"$'b\nall good'".trace.json"
cp "$S" "$P/r2/"$'b\nall good'".trace.json"
cp "$H" "$P/r2/"$'\u202ec'".trace.json"
for f in table markdown csv json; do
  "$B" summary --logdir "$tmp/log" --format "$f" --quiet r1 >"$tmp/out" 2>"$tmp/err" || fail "run summary $f: $(cat "$tmp/err")"
  k=$f
  [ "$f" = json ] && k=inert
  check "$k" "$tmp/out" "run summary --format $f"
  "$B" diff --logdir "$tmp/log" --format "$f" --no-events --quiet r1 r2 >"$tmp/out" 2>"$tmp/err" || fail "run diff $f: $(cat "$tmp/err")"
  check "$k" "$tmp/out" "run diff --format $f"
done

# ---- what import and diff write into TensorBoard (its text plugin renders Markdown) ----
L=$tmp/tb
"$B" import "$H" --logdir "$L" --run new --host h >"$tmp/out" 2>"$tmp/err" || fail "import: $(cat "$tmp/err")"
"$B" import "$S" --logdir "$L" --run base --host h >/dev/null 2>&1 || fail "import base"
"$B" diff --logdir "$L" --quiet base new >/dev/null 2>"$tmp/err" || fail "diff of runs: $(cat "$tmp/err")"
"$B" inspect --dump "$L/new" >"$tmp/dump" 2>"$tmp/err" || fail "inspect --dump: $(cat "$tmp/err")"
python3 - "$tmp/dump" <<'PY' || fail "Markdown written into TensorBoard"
import json, re, sys
texts = []
for line in open(sys.argv[1], encoding="utf-8"):
    e = json.loads(line)
    for v in e.get("values", []):
        if v.get("plugin") == "text" and v.get("type") == "tensor":
            texts += [x for x in v["values"] if isinstance(x, str)]
assert len(texts) >= 2, f"{len(texts)} text values"
joined = "\n".join(texts)
assert "evil" in joined and "kernel" in joined, "the hostile kernel is not in the text"
for t in texts:
    for i, c in enumerate(t):
        o = ord(c)
        assert not ((o < 0x20 and c != "\n") or 0x7f <= o <= 0x9f or 0x202a <= o <= 0x202e
                    or 0x200b <= o <= 0x200f), f"raw U+{o:04X}: {t[max(0, i - 20):i + 10]!r}"
    assert "<" not in t, "raw < in Markdown"
    want = None
    for l in t.split("\n"):
        if not l.startswith("|"):
            want = None
            continue
        n = len(re.findall(r"(?<!\\)(?:\\\\)*\|", l))
        want = n if want is None else want
        assert n == want, f"{n} cells, header {want}: {l!r}"
PY

# ---- one line per error, whatever the file name holds ----
one_line() { # WHAT CMD...: non-zero exit, exactly one stderr line, no raw ESC
  local what=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -ne 0 ] || fail "$what: exit 0"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "$what: $(wc -l <"$tmp/err") stderr lines"; cat -A "$tmp/err"; }
  check inert "$tmp/err" "$what: stderr"
}
nl=$'\n'
fake="x.json${nl}tbexport summary: all good${nl}"
one_line "summary of a missing file named with newlines" "$B" summary "$tmp/$fake"
cp "$D/cli/bad.trace.json" "$tmp/bad${nl}ok"$'\e[2J'.json
one_line "summary of a bad file named with a newline" "$B" summary "$tmp/bad${nl}ok"$'\e[2J'.json
grep -qF 'bad\nok\x1b[2J.json: byte 80 (line 2, column 63)' "$tmp/err" || fail "the name is not shown escaped: $(cat "$tmp/err")"
one_line "import of a bad file named with a newline" "$B" import "$tmp/bad${nl}ok"$'\e[2J'.json --logdir "$tmp/l2"
one_line "diff with a bad file named with a newline" "$B" diff "$S" "$tmp/bad${nl}ok"$'\e[2J'.json
one_line "inspect of a missing file named with a newline" "$B" inspect "$tmp/$fake"
one_line "an option named with a newline" "$B" summary --format "md${nl}ok" "$S"
one_line "a run named with an escape" "$B" summary --logdir "$tmp/log" $'r\e[2J'

[ $fails -eq 0 ] && echo "test_textsafe: all passed"
exit $((fails > 0))
