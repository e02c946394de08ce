#!/usr/bin/env bash
# check_exports.sh: the shared library's symbols are the stable tier, all
# of it and nothing else (tbexport/common.h: the experimental tier is for
# static linking only), and the tbexport program, which links the static
# library, calls only the public API.
#
# Both tiers are read from the headers, not from a list kept by hand: the
# preprocessor expands each TBE_API to its tier's visibility attribute
# ("default": stable, "hidden": experimental, as the headers switch it),
# and the name before the first '(' after it is the function declared.
# Fails when
#   - a stable function is not exported by libtbexport.so (missing);
#   - an experimental function is exported (leaked);
#   - the .so exports anything no header declares (a tbe__ helper given
#     default visibility, a stray global);
#   - an object of the program refers to a tbe__ symbol (the static
#     library would link a private call that the .so would refuse).
# usage: check_exports.sh CC SOURCE_DIR LIBTBEXPORT_SO CLI_OBJECT_DIR
set -euo pipefail
cc=$1 src=$(cd "$2" && pwd) so=$3 cliobj=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check_exports: FAIL: $*" >&2; exit 1; }

for h in "$src"/include/tbexport.h "$src"/include/tbexport/*.h; do
  printf '#include "%s"\n' "$h"
done >"$work/all.c"
"$cc" -E -P -DTBE_EXPERIMENTAL -I"$src/include" "$work/all.c" | tr '\n' ' ' >"$work/all.i"
tier() { # default|hidden: the functions declared with that visibility
  grep -o "visibility(\"$1\"))) [^(;{}]*(" "$work/all.i" |
    sed -E 's/ *\($//; s/.*[^A-Za-z0-9_]//' | sort -u
}
tier default >"$work/stable"
tier hidden >"$work/experimental"
[ -s "$work/stable" ] || fail "no stable function found in the headers"
[ -s "$work/experimental" ] || fail "no experimental function found in the headers"
both=$(comm -12 "$work/stable" "$work/experimental")
[ -z "$both" ] || fail "declared in both tiers: $both"

nm -D --defined-only "$so" | awk 'NF == 3 && $3 !~ /^_/ {print $3}' | sort -u >"$work/exported"
missing=$(comm -23 "$work/stable" "$work/exported")
leaked=$(comm -12 "$work/experimental" "$work/exported")
stray=$(comm -23 "$work/exported" "$work/stable" | comm -23 - "$work/experimental")
[ -z "$missing" ] || fail "stable functions not exported by $(basename "$so"): $(echo $missing)"
[ -z "$leaked" ] || fail "experimental functions exported by $(basename "$so"): $(echo $leaked)"
[ -z "$stray" ] || fail "exported by $(basename "$so") but declared in no public header: $(echo $stray)"

mapfile -t objs < <(find "$cliobj" -name '*.o' | sort)
[ "${#objs[@]}" -ge 5 ] || fail "only ${#objs[@]} objects of the program in $cliobj"
private=$(nm -u "${objs[@]}" | awk '$2 ~ /^tbe__/ {print $2}' | sort -u)
[ -z "$private" ] || fail "the program calls private functions: $(echo $private)"

echo "check_exports: $(wc -l <"$work/exported") symbols exported = the stable tier" \
  "($(wc -l <"$work/stable") functions); $(wc -l <"$work/experimental") experimental hidden;" \
  "${#objs[@]} program objects on the public API"
