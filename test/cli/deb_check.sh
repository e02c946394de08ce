#!/usr/bin/env bash
# deb_check.sh: the Debian packages and a /usr multiarch install, as
# scripts/package makes them: configures a tree of its own with
# CMAKE_INSTALL_PREFIX=/usr (Debian's multiarch libdir, with the compiler
# and CUDA setting of BUILD_DIR), builds the library and the program, and
#   - installs it with DESTDIR: tbexport.pc says prefix=/usr,
#     libdir=/usr/lib/<multiarch>, includedir=/usr/include, no run path;
#     pkg-config with PKG_CONFIG_SYSROOT_DIR points into the staging tree;
#   - runs cpack -G DEB: tbexport_V_ARCH.deb holds the program, the shared
#     library, the man page, the bash completion and (with the collector)
#     the injection library, and depends on the run-time libraries;
#     tbexport-dev holds the headers, .so link, static library, .pc and
#     CMake files and depends on tbexport (= V) and the -dev packages its
#     .pc names; the .pc inside is the /usr one;
#   - unpacks both: the unpacked tbexport runs (--version, import),
#     samples/write_events builds through the unpacked tbexport.pc and
#     runs, and samples/summarize (experimental tier) through
#     tbexport-static.pc, statically.
# Installing the packages into a fresh root: scripts/check_fresh_root.
# usage: deb_check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "deb_check: FAIL: $*" >&2; exit 1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
ma=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
[ -n "$ma" ] || fail "no multiarch triplet"
cupti=$(cache TBE_HAVE_CUPTI_RESULT)

b=$work/b
CC=$(cache CMAKE_C_COMPILER) cmake -S "$src" -B "$b" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release \
  -DTBE_BUILD_TESTS=OFF -DTBE_BUILD_BENCH=OFF -DTBE_BUILD_SAMPLES=OFF \
  -DTBE_WITH_CUDA="$(cache TBE_WITH_CUDA)" -DTBE_USE_CUDA_TOOLKIT="$(cache TBE_USE_CUDA_TOOLKIT)" \
  >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; fail "configure"; }
cmake --build "$b" -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; fail "build"; }

# ---- DESTDIR install into /usr ----
DESTDIR=$work/stage cmake --install "$b" >"$work/install.log" || fail "DESTDIR install"
pc=$work/stage/usr/lib/$ma/pkgconfig/tbexport.pc
[ -f "$pc" ] || fail "no usr/lib/$ma/pkgconfig/tbexport.pc in the DESTDIR install"
grep -x "prefix=/usr" >/dev/null "$pc" && grep -x "libdir=/usr/lib/$ma" >/dev/null "$pc" && grep -x "includedir=/usr/include" >/dev/null "$pc" ||
  fail "tbexport.pc of a /usr install: $(head -3 "$pc" | tr '\n' ' ')"
grep -q rpath "$pc" && fail "tbexport.pc of a /usr install has a run path"
[ -f "$work/stage/usr/lib/$ma/libtbexport.so" ] && [ -f "$work/stage/usr/bin/tbexport" ] &&
  [ -f "$work/stage/usr/share/man/man1/tbexport.1" ] &&
  [ -f "$work/stage/usr/share/bash-completion/completions/tbexport" ] &&
  [ -f "$work/stage/usr/lib/$ma/cmake/tbexport/tbexportConfig.cmake" ] ||
  fail "the DESTDIR install lacks files: $(cd "$work/stage" && find . -type f | head -40)"
grep -q "Running: ldconfig" "$work/install.log" && fail "ldconfig ran for a DESTDIR install"
flags=$(PKG_CONFIG_PATH="$work/stage/usr/lib/$ma/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$work/stage" \
  pkg-config --cflags --libs tbexport) || fail "pkg-config on the staged .pc"
case "$flags" in
  *"-I$work/stage/usr/include"*"-L$work/stage/usr/lib/$ma"*) ;;
  *) fail "pkg-config with the staging sysroot: $flags" ;;
esac

# ---- the packages ----
(cd "$b" && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack -G DEB"; }
ver=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$b/CMakeCache.txt")
arch=$(dpkg --print-architecture)
rt=$b/tbexport_${ver}_$arch.deb dev=$b/tbexport-dev_${ver}_$arch.deb
[ -f "$rt" ] && [ -f "$dev" ] || fail "cpack made: $(ls "$b"/*.deb 2>/dev/null)"
has() { dpkg-deb -c "$1" | awk '{print $6}' | grep -x "./$2" >/dev/null || fail "$(basename "$1") lacks /$2"; }
has "$rt" usr/bin/tbexport
has "$rt" "usr/lib/$ma/libtbexport.so.$ver"
has "$rt" usr/share/man/man1/tbexport.1
has "$rt" usr/share/bash-completion/completions/tbexport
[ "$cupti" = ON ] && has "$rt" "usr/lib/$ma/tbexport/libtbexport_inject.so"
for f in usr/include/tbexport.h usr/include/tbexport/writer.h "usr/lib/$ma/libtbexport.so" \
  "usr/lib/$ma/libtbexport.a" "usr/lib/$ma/pkgconfig/tbexport.pc" "usr/lib/$ma/pkgconfig/tbexport-static.pc" \
  "usr/lib/$ma/cmake/tbexport/tbexportConfig.cmake"; do
  has "$dev" "$f"
done
dpkg-deb -c "$rt" | grep "usr/include" >/dev/null && fail "the runtime package holds headers"
dpkg-deb -f "$rt" Depends | grep "libprotobuf-c1" >/dev/null || fail "tbexport Depends: $(dpkg-deb -f "$rt" Depends)"
for d in "tbexport (= $ver)" libprotobuf-c-dev libyajl-dev zlib1g-dev libsqlite3-dev; do
  dpkg-deb -f "$dev" Depends | grep -F "$d" >/dev/null || fail "tbexport-dev does not depend on $d"
done

# ---- unpacked: the program runs, the sample builds ----
u=$work/unpacked
dpkg-deb -x "$rt" "$u" && dpkg-deb -x "$dev" "$u"
grep -x "libdir=/usr/lib/$ma" >/dev/null "$u/usr/lib/$ma/pkgconfig/tbexport.pc" || fail "the packaged .pc"
env -u LD_LIBRARY_PATH "$u/usr/bin/tbexport" --version | grep -x "tbexport $ver" >/dev/null || fail "unpacked tbexport --version"
env -u LD_LIBRARY_PATH "$u/usr/bin/tbexport" import "$src/test/data/cli/small.trace.json" --logdir "$work/ld" \
  --run r --host h --quiet >/dev/null || fail "unpacked tbexport import"
flags=$(PKG_CONFIG_PATH="$u/usr/lib/$ma/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$u" pkg-config --cflags --libs tbexport)
# shellcheck disable=SC2086
cc -o "$work/we" "$src/samples/write_events.c" $flags || fail "write_events against the unpacked -dev"
(cd "$work" && LD_LIBRARY_PATH="$u/usr/lib/$ma" ./we >/dev/null) || fail "write_events (unpacked) does not run"
ls "$work"/log_dir/demo/events.out.tfevents.* >/dev/null || fail "write_events wrote nothing"
flags=$(PKG_CONFIG_PATH="$u/usr/lib/$ma/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$u" pkg-config --cflags --libs tbexport-static)
# shellcheck disable=SC2086
cc -o "$work/sum" "$src/samples/summarize.c" $flags || fail "summarize against the unpacked -dev's static library"
env -u LD_LIBRARY_PATH "$work/sum" "$src/test/data/cli/small.trace.json" | grep -q "events on" ||
  fail "summarize (unpacked, static) does not run"
echo "deb_check: /usr multiarch DESTDIR install and $(basename "$rt"), $(basename "$dev") OK"
