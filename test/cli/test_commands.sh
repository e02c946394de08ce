#!/usr/bin/env bash
# test_commands.sh: the program's top level as a newcomer meets it: `help`
# and `help COMMAND` answer like --help; a mistyped command names the one
# meant (exit 2, nothing on stdout); an unknown word lists the commands.
# usage: test_commands.sh TBEXPORT_BINARY [TEST_DATA_DIR]
set -uo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

"$bin" help >"$work/help" 2>&1 || fail "tbexport help: exit $?"
"$bin" --help >"$work/dashhelp" 2>&1
cmp -s "$work/help" "$work/dashhelp" || fail "tbexport help differs from tbexport --help"
for c in profile inspect import summary diff; do
  "$bin" help "$c" >"$work/h1" 2>&1 || fail "tbexport help $c: exit $?"
  "$bin" "$c" --help >"$work/h2" 2>&1
  cmp -s "$work/h1" "$work/h2" || fail "tbexport help $c differs from tbexport $c --help"
done

# typo -> the command meant
for pair in sumary:summary summmary:summary dif:diff idff:diff imprt:import improt:import \
            inspcet:inspect porfile:profile sum:summary; do
  typo=${pair%%:*} want=${pair##*:}
  "$bin" "$typo" >"$work/out" 2>"$work/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "tbexport $typo: exit $rc, want 2"
  [ -s "$work/out" ] && fail "tbexport $typo printed on stdout"
  grep -F "did you mean 'tbexport $want'?" "$work/err" >/dev/null ||
    fail "tbexport $typo: $(cat "$work/err")"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "tbexport $typo: more than one line"
done

# unrelated words: no guess, the list of commands
for w in frobnicate xyz; do
  "$bin" "$w" >/dev/null 2>"$work/err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "tbexport $w: exit $rc, want 2"
  grep -F "did you mean" "$work/err" >/dev/null && fail "tbexport $w guessed: $(cat "$work/err")"
  grep -F "(commands: profile, inspect, import, summary, diff; try --help)" "$work/err" >/dev/null ||
    fail "tbexport $w: $(cat "$work/err")"
done
"$bin" help nope >/dev/null 2>"$work/err" && fail "tbexport help nope: exit 0"
grep -F "unknown command 'nope'" "$work/err" >/dev/null || fail "tbexport help nope: $(cat "$work/err")"

[ "$fails" -eq 0 ] && echo "test_commands: all passed"
exit $((fails > 0))
