#!/usr/bin/env bash
# test_latest_run.sh: `tbexport summary` without RUN reads the run written
# last (by the time its profile files were written), not the greatest
# name; a run re-written later becomes the latest; `diff` names both sides
# (one argument is a usage error, exit 2, one line).
# usage: test_latest_run.sh TBEXPORT_BINARY TEST_DATA_DIR
set -euo pipefail
bin=$1 data=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ld=$work/ld
imp() { "$bin" import "$data/cli/small.trace.json" --logdir "$ld" --run "$1" --host h --quiet --force >/dev/null; }
first_line() { "$bin" summary --logdir "$ld" --quiet 2>"$work/err" | head -1; }

imp zzz
imp aaa
# the names sort the other way round from the times they were written
touch -d '2 hours ago' "$ld"/plugins/profile/zzz/*
[ "$(first_line)" = "Trace aaa" ] || fail "summary default after writing zzz then aaa: '$(first_line)'"
imp zzz
[ "$(first_line)" = "Trace zzz" ] || fail "summary default after re-writing zzz: '$(first_line)'"
touch -d '1 hour ago' "$ld"/plugins/profile/zzz/*
imp mmm
[ "$(first_line)" = "Trace mmm" ] || fail "summary default after writing mmm: '$(first_line)'"

set +e
"$bin" diff --logdir "$ld" aaa >"$work/out" 2>"$work/err"
st=$?
set -e
[ $st -eq 2 ] || fail "diff with one run: exit $st"
[ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "expected BASE and NEW" "$work/err" ||
  fail "diff with one run: $(cat "$work/err")"
"$bin" diff --logdir "$ld" --quiet --no-events aaa mmm >"$work/out" || fail "diff aaa mmm"
grep -q "aaa" "$work/out" && grep -q "mmm" "$work/out" || fail "diff output names neither side"
echo "test_latest_run: ok"
