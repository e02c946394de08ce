#!/usr/bin/env bash
# test_readme.sh: the README's snippets work as printed.
#   - Every fenced block tagged ```c is a whole program: it is compiled
#     (-Wall -Wextra -Werror) against include/ and the build's library, run
#     in an empty folder, and what it wrote must read back: `tbexport
#     inspect` of that folder succeeds and lists, with a count, every tag
#     the program passes to a tbe_writer_add_* call as a string literal.
#   - Every fenced block tagged ```sh whose first line is
#     "# run by test_readme" runs under bash -e with the build's tbexport
#     first on PATH, in a folder holding a copy of samples/traces/; a
#     failing command fails the test.
# Blocks without the marker (root, a GPU, a launcher, the network, an
# installed tbexport) are not run; the README says which ones run in an
# HTML comment.  A README with no C block or no marked block fails: the
# test would check nothing.
# usage: test_readme.sh TBEXPORT_BINARY TEST_DATA_DIR [GEN_RUN]
#   (the library is the one next to TBEXPORT_BINARY, in the build folder;
#   the C compiler is $CC, else cc, with $TBE_README_CFLAGS: the
#   sanitizer flags of a sanitizer build, whose library needs them)
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
builddir=$(dirname "$bin")
src=$(cd "$(dirname "$0")/../.." && pwd)
readme=${TBE_README:-$src/README.md}
cc=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$readme" ] || fail "$readme missing"
ls "$builddir"/libtbexport.so* >/dev/null 2>&1 || fail "no libtbexport.so next to $bin"

# Split the README into its fenced blocks: block.N.LANG holds block N's
# lines (N counts every fenced block, so a failure names the block; LANG
# is the word after the opening fence, "none" without one).
awk -v dir="$work" '
  /^```/ {
    if (!inblock) { inblock = 1; n++; lang = substr($0, 4); sub(/[ \t].*/, "", lang);
                    if (lang == "") lang = "none"; out = dir "/block." n "." lang; printf "" > out;
                    start[n] = NR; next }
    inblock = 0; close(out); next
  }
  inblock { print > out }
' "$readme"

line_of() {  # the README line where block N starts
  awk -v want="$1" '/^```/ { if (!inb) { inb = 1; n++; if (n == want) { print NR; exit } } else inb = 0 }' "$readme"
}

nc=0 nsh=0
for f in "$work"/block.*.c; do
  [ -e "$f" ] || continue
  n=$(basename "$f" | cut -d. -f2)
  at="README.md:$(line_of "$n") (C block $n)"
  d=$work/c$n
  mkdir "$d"
  cp "$f" "$d/app.c"
  # shellcheck disable=SC2086
  "$cc" -std=c11 -Wall -Wextra -Werror ${TBE_README_CFLAGS:-} -o "$d/app" "$d/app.c" -I"$src/include" \
    -L"$builddir" -ltbexport -Wl,-rpath,"$builddir" >"$d/cc.log" 2>&1 ||
    { cat "$d/cc.log" >&2; fail "$at does not compile as a whole program"; }
  mkdir "$d/run"
  (cd "$d/run" && "$d/app") >"$d/out" 2>&1 || { cat "$d/out" >&2; fail "$at: the program exits non-zero"; }
  find "$d/run" -name 'events.out.tfevents.*' | grep . >/dev/null || fail "$at wrote no event file"
  "$bin" inspect "$d/run" >"$d/inspect" 2>&1 || { cat "$d/inspect" >&2; fail "$at: tbexport inspect of what it wrote"; }
  tags=$(grep -oE 'tbe_writer_add_[a-z_]+\([a-z_]+, *"[^"]+"' "$f" | sed -E 's/.*"([^"]+)"$/\1/' | sort -u)
  [ -n "$tags" ] || fail "$at calls no tbe_writer_add_* with a tag literal: nothing to read back"
  for t in $tags; do
    # (text summaries are stored as TAG/text_summary, as TensorBoard's own writers do)
    grep -Eq "^ +$t(/text_summary)? +count [1-9]" "$d/inspect" || { cat "$d/inspect" >&2; fail "$at: tag $t not read back"; }
  done
  nc=$((nc + 1))
done

for f in "$work"/block.*.sh; do
  [ -e "$f" ] || continue
  first=
  IFS= read -r first <"$f" || true
  case $first in "# run by test_readme"*) ;; *) continue ;; esac
  n=$(basename "$f" | cut -d. -f2)
  at="README.md:$(line_of "$n") (sh block $n)"
  d=$work/sh$n
  mkdir "$d"
  cp "$src"/samples/traces/*.json "$d/"
  (cd "$d" && PATH="$builddir:$PATH" bash -e -o pipefail "$f") >"$d/out" 2>&1 ||
    { tail -20 "$d/out" >&2; fail "$at: a command failed"; }
  nsh=$((nsh + 1))
done

[ "$nc" -gt 0 ] || fail "README.md has no \`\`\`c block"
[ "$nsh" -gt 0 ] || fail "README.md has no \`\`\`sh block marked '# run by test_readme'"
echo "ok: $nc C program(s) built, run and read back; $nsh marked sh block(s) run"
