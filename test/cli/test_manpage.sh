#!/usr/bin/env bash
# test_manpage.sh: the manual page (docs/tbexport.1) and the bash
# completion (docs/tbexport.bash-completion) against the program: every
# command and every long option that `tbexport --help` and each
# `tbexport <command> --help` print is in the page and completed by the
# completion; the page renders without a warning from man (when man-db is
# installed); the completion completes commands, values and run names.
# usage: test_manpage.sh TBEXPORT_BINARY TEST_DATA_DIR
set -euo pipefail
# (No `grep -q` at the end of a pipe: under pipefail a grep that quits at its
# first match can kill the writer with SIGPIPE and fail the check at random.)
bin=$1
docs=$(cd "$(dirname "$0")/../../docs" && pwd)
page=$docs/tbexport.1
comp=$docs/tbexport.bash-completion
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$page" ] && [ -f "$comp" ] || fail "docs/tbexport.1 or docs/tbexport.bash-completion missing"

# The page's text with roff's escaped hyphens plain.
sed 's/\\-/-/g' "$page" >"$work/page"

# shellcheck disable=SC1090
. "$comp"
# complete WORDS...: what the completion offers for the last word.
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _tbexport
  printf '%s\n' "${COMPREPLY[@]}"
}

checked=0
for cmd in "" profile import summary diff inspect; do
  # shellcheck disable=SC2086
  "$bin" $cmd --help >"$work/help" || fail "tbexport $cmd --help: exit status"
  # the options listed (a line that starts with one) and those of the usage lines ([--opt])
  opts=$( (grep -oE -- '^ +--[a-z][a-z-]*' "$work/help"; grep -oE -- '\[--[a-z][a-z-]*' "$work/help" || true) |
    tr -d ' [' | sort -u)
  [ -n "$opts" ] || fail "no options found in tbexport $cmd --help"
  for o in $opts; do
    grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" "$work/page" || fail "docs/tbexport.1 lacks $o (of tbexport $cmd --help)"
    if [ -n "$cmd" ] || [ "$o" = --help ] || [ "$o" = --version ]; then
      complete_words tbexport $cmd -- >/dev/null 2>&1 || true
      complete_words tbexport $cmd "${o:0:4}" | grep -x -- "$o" >/dev/null ||
        fail "the completion does not offer $o after 'tbexport $cmd'"
    fi
    checked=$((checked + 1))
  done
done
[ "$checked" -ge 40 ] || fail "only $checked options checked"
for c in import summary diff inspect profile; do
  grep -qE "^\.(B|BR) (tbexport )?$c" "$work/page" || fail "docs/tbexport.1 has no entry for $c"
  complete_words tbexport "${c:0:2}" | grep -x "$c" >/dev/null || fail "the completion does not offer $c"
done

# Values and run names.
complete_words tbexport summary --format "" | grep -x markdown >/dev/null || fail "completion of --format"
complete_words tbexport import --format "" | grep -x xplane >/dev/null || fail "completion of import --format"
"$bin" import "$(dirname "$0")/../data/cli/small.trace.json" --logdir "$work/ld" --run base_run \
  --host h --quiet >/dev/null || fail "import"
complete_words tbexport diff --logdir "$work/ld" ba | grep -x base_run >/dev/null || fail "completion of run names"

if command -v man >/dev/null; then
  warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man -l: exit status"
  [ -z "$warn" ] || fail "man warns: $warn"
  MANWIDTH=80 man -l "$page" 2>/dev/null | grep -E "tbexport +- +turn GPU activity" >/dev/null || fail "man -l: no NAME"
fi
echo "test_manpage: $checked options of 6 --help texts in the page and the completion"
