#!/bin/bash
# test_limits.sh: hostile and unlucky inputs through the commands that read
# traces (import, summary, diff, inspect), as a user meets them:
#   - a FIFO (no writer, and a writer that stalls), a character device: one
#     line, exit 2, at once (each command runs under `timeout`: a hang
#     fails the test instead of stopping it);
#   - standard input as "-": the same report as the file (detection loses
#     nothing), gzip too, import writes the run; an endless stream refused
#     at --max-input, whose default for a stream is half the memory the
#     process may use (RLIMIT_AS lowers it here), nothing written lost;
#   - a gzip bomb of one 1 GB string: refused with the limit and the flag;
#     the limit flags raise and lower what is accepted; bad flag values;
#   - bad input that used to exit 0 (package.json, "ts": {}) and what used
#     to be refused (a UTF-8 BOM, an XSpace whose first plane is 91 bytes);
#   - 80,000 distinct device ids: read, and counted.
# usage: test_limits.sh TBEXPORT TEST_DATA_DIR
set -u
B=$1
D=$(cd "$2" && pwd)
tmp=$(mktemp -d)
writer=
trap '[ -n "$writer" ] && kill "$writer" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_err RC PATTERN CMD...: exit RC within 20 s, one stderr line
# matching PATTERN, nothing on stdout.
expect_err() {
  local want=$1 pat=$2; shift 2
  timeout 20 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  [ $rc -ne 124 ] || { fail "$* hung"; return; }
  [ $rc -eq "$want" ] || fail "$* exited $rc, want $want"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "$* printed $(wc -l <"$tmp/err") stderr lines"; cat "$tmp/err"; }
  grep -q -- "$pat" "$tmp/err" || fail "$* stderr '$(cat "$tmp/err")' lacks '$pat'"
  [ ! -s "$tmp/out" ] || fail "$* wrote to stdout"
}

# expect_ok CMD...: exit 0 within 60 s; stdout in $tmp/out.
expect_ok() {
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 0 ] || fail "$* exited $rc: $(head -c 300 "$tmp/err")"
}

small=$D/cli/small.trace.json

# ---- special files ----
mkfifo "$tmp/fifo.trace.json"
expect_err 2 "not a regular file" "$B" summary "$tmp/fifo.trace.json"
expect_err 2 "not a regular file" "$B" import "$tmp/fifo.trace.json" --logdir "$tmp/log" --quiet
expect_err 2 "is a FIFO, not an event file or a directory" "$B" inspect "$tmp/fifo.trace.json"
expect_err 2 "not a regular file" "$B" diff "$small" "$tmp/fifo.trace.json" --no-events
# a writer that sends half a trace and stalls
(printf '[{"ph":"X",' ; sleep 60) >"$tmp/fifo.trace.json" &
writer=$!
sleep 0.2
expect_err 2 "not a regular file" "$B" summary "$tmp/fifo.trace.json"
expect_err 2 "not a regular file" "$B" import "$tmp/fifo.trace.json" --logdir "$tmp/log" --quiet
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
writer=
expect_err 2 "not a regular file" "$B" summary /dev/zero
[ -r /dev/urandom ] && expect_err 2 "not a regular file" "$B" summary /dev/urandom
expect_err 2 "is a directory" "$B" import "$tmp" --logdir "$tmp/log" --quiet

# ---- standard input ----
"$B" summary --quiet "$small" | tail -n +2 >"$tmp/file.out"
timeout 20 "$B" summary --quiet - <"$small" >"$tmp/pipe.out" 2>"$tmp/err" || fail "summary - exited $?: $(cat "$tmp/err")"
head -1 "$tmp/pipe.out" | grep -q '^Trace -' || fail "summary - title: $(head -1 "$tmp/pipe.out")"
tail -n +2 "$tmp/pipe.out" | diff -u "$tmp/file.out" - || fail "summary - differs from the file's"
gzip -c "$small" | timeout 20 "$B" summary --quiet - | tail -n +2 >"$tmp/gz.out"
diff -u "$tmp/file.out" "$tmp/gz.out" >/dev/null || fail "summary - of gzip differs from the file's"
cat "$small" | timeout 20 "$B" import - --logdir "$tmp/log" --run piped --host h --quiet >/dev/null 2>"$tmp/err" ||
  fail "import - exited $?: $(cat "$tmp/err")"
[ -f "$tmp/log/plugins/profile/piped/h.xplane.pb" ] || fail "import - wrote no run"
head -c 100000 /dev/urandom >"$tmp/rnd"
printf '\001' | cat - "$tmp/rnd" >"$tmp/rnd1"
timeout 20 "$B" summary - <"$tmp/rnd1" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "random bytes on stdin: want exit 2"
grep -q "not a Chrome trace JSON" "$tmp/err" || fail "random bytes on stdin: $(cat "$tmp/err")"
# an endless stream stops at --max-input
(printf '{"x":['; yes '1,' | head -c 3000000) | timeout 20 "$B" summary --max-input 1M - >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "endless stream: want exit 2"
grep -q "raise it with --max-input" "$tmp/err" || fail "endless stream: $(cat "$tmp/err")"
# ... and, without --max-input, at half the memory the process may use (here
# lowered by RLIMIT_AS to 400 MB: the limit is 195.3 MiB), in one line, and
# a run already written is left as it was.  The stream is endless for the
# test's purpose: 2 GB, ten times the limit.  A sanitized build cannot start
# under an address-space limit (its shadow memory is terabytes of address
# space): there test_import_chrome's test_endless_stdin covers the default.
if { (ulimit -v 400000 && "$B" --version) >/dev/null 2>&1; } 2>/dev/null; then
  "$B" import "$small" --logdir "$tmp/keep" --run r --host h --quiet >/dev/null 2>&1 || fail "import for keep"
  (cd "$tmp/keep" && find . -type f -exec md5sum {} + | sort) >"$tmp/keep.before"
  for cmd in "summary -" "import - --logdir $tmp/keep --run r --host h --force --quiet"; do
    # shellcheck disable=SC2086
    (printf '{"x":['; yes '1,' | head -c 2000000000) |
      (ulimit -v 400000 && exec timeout 60 "$B" $cmd) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "endless stream at the memory's limit ($cmd): exit $rc, want 2"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "endless stream ($cmd): $(wc -l <"$tmp/err") stderr lines"
    grep -q -- ": byte 204800000: more input than the limit for an input of unknown size: half the memory this process may use (the limit is 195.3 MiB; raise it with --max-input)" "$tmp/err" ||
      fail "endless stream ($cmd): $(cat "$tmp/err")"
  done
  (cd "$tmp/keep" && find . -type f -exec md5sum {} + | sort) | diff -u "$tmp/keep.before" - ||
    fail "a refused endless stream changed the run already written"
else
  echo "test_limits: the binary cannot start under ulimit -v (a sanitized build): the memory default is covered by test_import_chrome"
fi

# ---- limits ----
python3 - "$tmp" <<'EOF'
import gzip, sys
d = sys.argv[1]
one = gzip.compress(b'a' * (1 << 20), 9)
with open(d + '/bomb.json.gz', 'wb') as f:
    f.write(gzip.compress(b'{"traceEvents":[{"ph":"X","name":"'))
    f.write(one * 1024)                       # 1 GB of one string
    f.write(gzip.compress(b'"}]}'))
with open(d + '/twomib.json', 'w') as f:
    f.write('[{"ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"name":"' + 'x' * (2 << 20) + '"}]')
with open(d + '/deep.json', 'w') as f:
    f.write('{"x":' + '[' * 1500 + ']' * 1500 + ',"traceEvents":[]}')
ev = ','.join('{"ph":"X","cat":"kernel","name":"k","ts":%d,"dur":1,"pid":%d,"tid":7,'
              '"args":{"device":%d,"stream":7}}' % (i, i, i) for i in range(80000))
with open(d + '/devices.json', 'w') as f:
    f.write('[' + ev + ']')
EOF
[ "$(stat -c %s "$tmp/bomb.json.gz")" -lt 2000000 ] || fail "the bomb is not small"
expect_err 2 "byte 33: a JSON string or key longer than the limit (the limit is 64 MiB; raise it with --max-token)" \
  "$B" summary "$tmp/bomb.json.gz"
expect_err 2 "raise it with --max-token" "$B" import "$tmp/bomb.json.gz" --logdir "$tmp/log" --quiet
expect_err 2 "raise it with --max-token" "$B" diff "$small" "$tmp/bomb.json.gz" --no-events
expect_ok "$B" summary --quiet "$tmp/twomib.json"
expect_err 2 "the limit is 1 MiB; raise it with --max-token" "$B" summary --max-token 1M "$tmp/twomib.json"
expect_err 2 "raise it with --max-event-size" "$B" summary --max-event-size 1MiB "$tmp/twomib.json"
expect_err 2 "byte 1004: JSON nested deeper than the limit (the limit is 1000 levels; raise it with --max-depth)" \
  "$B" summary "$tmp/deep.json"
expect_ok "$B" summary --quiet --max-depth 2000 "$tmp/deep.json"
expect_ok "$B" summary --quiet --max-depth none "$tmp/deep.json"
expect_err 2 "raise it with --max-events" "$B" summary --max-events 2 "$small"
expect_err 2 "--max-token expects a positive size" "$B" summary --max-token 0 "$small"
expect_err 2 "--max-depth expects a positive count" "$B" summary --max-depth 5K "$small"
expect_err 2 "--max-events expects a positive count" "$B" import "$small" --logdir "$tmp/log" --max-events=-1
"$B" summary --help | grep -q -- "--max-token SIZE" || fail "summary --help lacks the limits"
"$B" import --help | grep -q -- "--max-input SIZE" || fail "import --help lacks the limits"
"$B" diff --help | grep -q -- "--max-depth N" || fail "diff --help lacks the limits"

# 80,000 distinct device ids: read (in well under the test's timeout: each
# id was a linear scan before)
expect_ok "$B" summary --quiet "$tmp/devices.json"
grep -q "80000 GPUs, 80000 kernels" "$tmp/out" || fail "80k devices: $(head -3 "$tmp/out")"

# ---- what used to exit 0, and what used to be refused ----
printf '{"name": "left-pad", "version": "1.3.0", "main": "index.js"}' >"$tmp/package.json"
expect_err 2 "a JSON object without a traceEvents array" "$B" summary "$tmp/package.json"
expect_err 2 "a JSON object without a traceEvents array" "$B" import "$tmp/package.json" --logdir "$tmp/log" --quiet
printf '[{"ph":"X","name":"a","ts":{},"dur":1,"pid":1,"tid":1}]' >"$tmp/tsobj.json"
expect_err 2 "byte 1 (line 1, column 2): event field ts is an object, not a number" "$B" summary "$tmp/tsobj.json"
printf '[{"ph":"X","name":"a","ts":9223372036854775,"dur":1,"pid":1,"tid":1}]' >"$tmp/far.json"
expect_err 2 "event field ts is out of range" "$B" summary "$tmp/far.json"
printf '\xef\xbb\xbf' | cat - "$small" >"$tmp/bom.json"
expect_ok "$B" summary --quiet "$tmp/bom.json"
tail -n +2 "$tmp/out" | diff -u "$tmp/file.out" - >/dev/null || fail "a BOM changes the summary"
printf '[{"ph":"X","name":"a","ts":1,"dur":-4,"pid":1,"tid":1}]' >"$tmp/neg.json"
expect_ok "$B" summary --quiet "$tmp/neg.json"
grep -q "warning: .*neg.json: 1 event had a negative duration (kept with duration 0)" "$tmp/out" ||
  fail "negative duration not warned: $(cat "$tmp/out")"
look=$D/../fuzz/corpus/xspace/limits-first-plane-bracket
if [ -f "$look" ]; then
  [ "$(head -c 2 "$look" | od -An -c | tr -d ' ')" = '\n[' ] || fail "look-alike seed changed"
  expect_ok "$B" summary --quiet "$look"
fi

[ $fails -eq 0 ] && echo "test_limits: all passed"
exit $((fails > 0))
