#!/usr/bin/env bash
# Installs the built tree into a scratch prefix and checks the installed
# package as its users meet it:
#   - samples/ built against it through find_package(tbexport) runs without
#     LD_LIBRARY_PATH (CMake puts the library's folder on the program's run
#     path), and ldd finds libtbexport in the prefix, not in the build tree;
#   - the same built through pkg-config runs without LD_LIBRARY_PATH too
#     (the installed .pc, written for this prefix, carries a run path for
#     a prefix outside the linker's folders) and loads the prefix's library;
#   - samples/summarize (the experimental tier, static linking only) builds
#     through tbexport::tbexport_static and pkg-config's tbexport-static,
#     runs and loads no libtbexport.so; linked to the shared library it
#     does not link (the .so does not export that tier);
#   - the installed tbexport program (static) runs without LD_LIBRARY_PATH,
#     loads no libtbexport.so, imports a trace, and profiles a program
#     with the installed injection library when the collector was built.
# usage: install_check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_check: FAIL: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The library a program loads, as ldd resolves it.
loads() { env -u LD_LIBRARY_PATH ldd "$1" | awk '/libtbexport\.so/ {print $3}'; }

# The 0.x rule (include/tbexport/version.h): the soname carries 0.MINOR,
# and the package satisfies only a request for that 0.MINOR.
vh="$src/include/tbexport/version.h"
major=$(awk '/define TBE_VERSION_MAJOR/ {print $3}' "$vh")
minor=$(awk '/define TBE_VERSION_MINOR/ {print $3}' "$vh")
lib=$(ls "$work"/prefix/lib*/libtbexport.so | head -1)
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$major" = 0 ]; then want="libtbexport.so.0.$minor"; else want="libtbexport.so.$major"; fi
[ "$soname" = "$want" ] || fail "soname is '$soname', not '$want'"
mkdir -p "$work/ver"
for req in "$major.$minor" "$major.$((minor + 1))"; do
  printf 'cmake_minimum_required(VERSION 3.25)\nproject(v C)\nfind_package(tbexport %s QUIET)\n%s\n' \
    "$req" 'message(STATUS "found=${tbexport_FOUND}")' > "$work/ver/CMakeLists.txt"
  found=$(cmake -S "$work/ver" -B "$work/ver/b$req" -DCMAKE_PREFIX_PATH="$work/prefix" 2>/dev/null |
    sed -n 's/.*found=//p')
  case "$req:$found" in
    "$major.$minor:1") ;;
    "$major.$((minor + 1)):0") [ "$major" = 0 ] || fail "0.x rule applied after 1.0" ;;
    "$major.$((minor + 1)):1") [ "$major" != 0 ] || fail "find_package($req) accepted $major.$minor" ;;
    *) fail "find_package(tbexport $req): found='$found'" ;;
  esac
done

# samples/CMakeLists.txt, as a user's project: write_events with
# tbexport::tbexport, summarize with tbexport::tbexport_static.
mkdir -p "$work/proj"
cmake -S "$src/samples" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/proj/build" >/dev/null
case "$(loads "$work/proj/build/write_events")" in
  "$work/prefix/"*) ;;
  *) fail "find_package build loads '$(loads "$work/proj/build/write_events")', not the prefix's" ;;
esac
(cd "$work" && env -u LD_LIBRARY_PATH "$work/proj/build/write_events" >/dev/null) ||
  fail "find_package build does not run without LD_LIBRARY_PATH"
ls "$work"/log_dir/demo/events.out.tfevents.* >/dev/null || fail "write_events wrote nothing"
trace=$src/test/data/cli/small.trace.json
[ -z "$(loads "$work/proj/build/summarize")" ] ||
  fail "summarize (tbexport::tbexport_static) loads $(loads "$work/proj/build/summarize")"
env -u LD_LIBRARY_PATH "$work/proj/build/summarize" "$trace" >"$work/sum_cmake.txt" ||
  fail "summarize (tbexport::tbexport_static) does not run"
grep -q "events on" "$work/sum_cmake.txt" || fail "summarize (CMake) printed: $(head -3 "$work/sum_cmake.txt")"

# pkg-config route
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig"
# shellcheck disable=SC2046
cc -o "$work/we_pc" "$src/samples/write_events.c" $(pkg-config --cflags --libs tbexport)
pcfile=$(ls "$work"/prefix/lib*/pkgconfig/tbexport.pc)
# Our headers need no other package's: the flags are our include folder alone
# (yajl's -I/usr/include/yajl reached every program once).
cflags=$(pkg-config --cflags tbexport)
cflags=${cflags%"${cflags##*[! ]}"} # (pkg-config ends it with a space)
[ "$cflags" = "-I$work/prefix/include" ] ||
  fail "pkg-config --cflags tbexport: '$cflags', want -I$work/prefix/include"
grep -qx "prefix=$work/prefix" "$pcfile" || fail "tbexport.pc: $(head -1 "$pcfile"), not prefix=$work/prefix"
case "$(loads "$work/we_pc")" in
  "$work/prefix/"*) ;;
  *) fail "pkg-config build loads '$(loads "$work/we_pc")', not the prefix's" ;;
esac
rm -rf "$work/log_dir"
(cd "$work" && env -u LD_LIBRARY_PATH "$work/we_pc" >/dev/null) ||
  fail "pkg-config build does not run without LD_LIBRARY_PATH"
ls "$work"/log_dir/demo/events.out.tfevents.* >/dev/null || fail "pkg-config build wrote nothing"
# The experimental tier: tbexport-static links it; the shared library
# does not export it, so linking it there fails.
# shellcheck disable=SC2046
cc -o "$work/sum_pc" "$src/samples/summarize.c" $(pkg-config --cflags --libs tbexport-static) ||
  fail "summarize does not build with pkg-config tbexport-static"
[ -z "$(loads "$work/sum_pc")" ] || fail "summarize (tbexport-static) loads $(loads "$work/sum_pc")"
env -u LD_LIBRARY_PATH "$work/sum_pc" "$trace" >"$work/sum_pc.txt" ||
  fail "summarize (tbexport-static) does not run"
cmp -s "$work/sum_pc.txt" "$work/sum_cmake.txt" || fail "summarize: pkg-config and CMake builds differ"
# shellcheck disable=SC2046
if cc -o "$work/sum_so" "$src/samples/summarize.c" $(pkg-config --cflags --libs tbexport) \
  2>"$work/sum_so.err"; then
  fail "summarize (experimental tier) links against the shared library"
fi
grep -q "tbe_analysis_create" "$work/sum_so.err" ||
  fail "linking summarize to the .so failed otherwise: $(head -3 "$work/sum_so.err")"

# The tiers (tbexport.h): the stable one compiles alone, and a layout of
# the experimental one is refused without TBE_EXPERIMENTAL.
cat > "$work/tier.c" <<'C'
#include <tbexport.h>
int main(void) {
  tbe_trace *t;
  if (tbe_trace_create(&t, NULL)) return 1;
#ifdef TBE_EXPERIMENTAL
  int n = (int)t->nevents;
#else
  int n = 0;
#endif
  tbe_trace_free(t);
  return n;
}
C
cflags=$(pkg-config --cflags tbexport)
# shellcheck disable=SC2086
cc -fsyntax-only $cflags "$work/tier.c" || fail "the stable tier does not compile alone"
# shellcheck disable=SC2086
cc -fsyntax-only -DTBE_EXPERIMENTAL $cflags "$work/tier.c" || fail "the experimental tier does not compile"
echo '#include <tbexport/analysis.h>' > "$work/exp.c"
# shellcheck disable=SC2086
if cc -fsyntax-only $cflags "$work/exp.c" 2>/dev/null; then
  fail "tbexport/analysis.h compiles without TBE_EXPERIMENTAL"
fi
printf '#include <tbexport.h>\nsize_t f(tbe_trace *t) { return t->nevents; }\n' > "$work/exp2.c"
# shellcheck disable=SC2086
if cc -fsyntax-only $cflags "$work/exp2.c" 2>/dev/null; then
  fail "the trace's layout is visible without TBE_EXPERIMENTAL"
fi

# The installed program: linked to the static library (it uses the
# experimental tier).
tb="$work/prefix/bin/tbexport"
[ -z "$(loads "$tb")" ] || fail "the installed tbexport loads '$(loads "$tb")'"
env -u LD_LIBRARY_PATH "$tb" --version >/dev/null || fail "installed tbexport --version"
env -u LD_LIBRARY_PATH "$tb" import "$src/test/data/cli/small.trace.json" --logdir "$work/ld" \
  --run inst --host h --quiet >/dev/null || fail "installed tbexport import"
[ -f "$work/ld/plugins/profile/inst/h.xplane.pb" ] || fail "installed import wrote no XSpace"
prof=ran
env -u LD_LIBRARY_PATH "$tb" --empty-run --logdir "$work/ld" --run prof --host h --quiet -- true \
  2>"$work/err" || prof=failed
if grep -q "collector was not built" "$work/err"; then
  prof="not built"
elif [ "$prof" = failed ] || [ ! -f "$work/ld/plugins/profile/prof/h.xplane.pb" ]; then
  fail "installed tbexport -- true: $(cat "$work/err")"
fi
[ -f "$work/prefix/share/man/man1/tbexport.1" ] || fail "no man page installed"
[ -f "$work/prefix/share/bash-completion/completions/tbexport" ] || fail "no bash completion installed"
echo "install_check: find_package and pkg-config builds of samples/write_events (shared) and" \
  "samples/summarize (static), the installed tbexport (import; profile: $prof) OK"
