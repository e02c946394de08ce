#!/usr/bin/env bash
# Installs the built tree into a scratch prefix and builds samples/ against
# the *installed* package, once through find_package(tbexport) and once
# through pkg-config, to prove the exported package works.
# usage: install_check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
mkdir -p "$work/proj"
cat > "$work/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(uses_tbexport C)
find_package(tbexport REQUIRED)
add_executable(write_events "$src/samples/write_events.c")
target_link_libraries(write_events PRIVATE tbexport::tbexport)
CM
cmake -S "$work/proj" -B "$work/proj/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/proj/build" >/dev/null
(cd "$work" && LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib64:${LD_LIBRARY_PATH:-}" \
   "$work/proj/build/write_events" >/dev/null)
ls "$work"/log_dir/demo/events.out.tfevents.* >/dev/null
# pkg-config route
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig" \
  cc -o "$work/we_pc" "$src/samples/write_events.c" \
  $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib64/pkgconfig" pkg-config --cflags --libs tbexport)
echo "install_check: find_package and pkg-config builds of samples/write_events OK"
