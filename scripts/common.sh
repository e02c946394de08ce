# scripts/common.sh: shared by scripts/demo, scripts/test, scripts/bench and
# scripts/fuzz.  Checks that the tree is ours to write, installs missing
# Debian packages (as root; otherwise prints the command and stops) and
# configures + builds a CMake tree.

# (file: CPack's DEB generator needs it: scripts/package, test install_deb.)
TBE_PACKAGES="build-essential cmake pkg-config file libprotobuf-c-dev protobuf-c-compiler protobuf-compiler zlib1g-dev libcmocka-dev libsqlite3-dev libyajl-dev libiberty-dev python3"
# The sanitizer run-times of Debian 12's gcc-12 (ASan, UBSan, TSan), which
# scripts/test's sanitizer passes need.
TBE_SANITIZER_PACKAGES="libasan8 libubsan1 libtsan2"

# tbe_user UID: the user's name, or the number when it has none.
tbe_user() { id -nu "$1" 2>/dev/null || echo "uid $1"; }

# tbe_check_owner [PATH...]: refuses (exit 1, saying what to do) when the
# tree, or one of the PATHs that already exists (a build tree, a log dir),
# belongs to another user: files root leaves in a user's tree (an earlier
# `sudo scripts/demo`) make every later run as that user fail with
# "Permission denied", and a run as root in a user's tree leaves such
# files.  TBE_ALLOW_OTHER_OWNER=1 skips the check (a CI container whose
# checkout belongs to another uid).
tbe_check_owner() {
  [ "${TBE_ALLOW_OTHER_OWNER:-0}" = 1 ] && return 0
  local me owner p script
  me=$(id -u)
  script=scripts/$(basename "$0")
  owner=$(stat -c %u "$TBE_ROOT")
  if [ "$owner" != "$me" ]; then
    echo "$script: the tree $TBE_ROOT belongs to $(tbe_user "$owner"), not to $(tbe_user "$me");" >&2
    if [ "$me" = 0 ]; then
      echo "  run it as $(tbe_user "$owner") (it prints the apt-get command to run with sudo" \
        "when packages are missing), so that no file of root is left in the tree" >&2
    else
      echo "  run it as $(tbe_user "$owner"), or clone the repository again as $(tbe_user "$me")" >&2
    fi
    echo "  (TBE_ALLOW_OTHER_OWNER=1 runs it anyway)" >&2
    exit 1
  fi
  for p in "$@"; do
    [ -e "$p" ] || continue
    owner=$(find "$p" ! -user "$me" -print -quit 2>/dev/null)
    [ -z "$owner" ] && [ -w "$p" ] && continue
    [ -n "$owner" ] || owner=$p
    echo "$script: $owner belongs to $(tbe_user "$(stat -c %u "$owner")"), not to" \
      "$(tbe_user "$me") (left by an earlier run as root?);" >&2
    echo "  remove it (sudo rm -rf $p) and run $script again as $(tbe_user "$me")" >&2
    exit 1
  done
}

# tbe_install_deps [EXTRA_PACKAGES...]
tbe_install_deps() {
  local missing=()
  for p in $TBE_PACKAGES "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages; run as root:  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null
}

# tbe_build DIR [cmake args...]: configures and builds every target; the
# configure output goes to DIR.configure.log (written afresh: a failure
# never shows an older run's log).  With TBE_BUILD_TARGETS set
# (space-separated), builds only those.
tbe_build() {
  local dir=$1
  shift
  local targets=()
  local t
  for t in ${TBE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  if ! rm -f "$dir.configure.log" || ! : >"$dir.configure.log"; then
    echo "cannot write $dir.configure.log" >&2
    return 1
  fi
  cmake -S "$TBE_ROOT" -B "$dir" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; return 1; }
  cmake --build "$dir" -j"$(nproc)" "${targets[@]}" 2>&1 | grep -E "warning:|error:" >&2 || true
  cmake --build "$dir" -j"$(nproc)" "${targets[@]}" >/dev/null
}

# tbe_collector_status BUILD_DIR: one line on whether that tree built the
# CUPTI collector, from its CMake cache ("built" or why not).  It is built
# unless TBE_WITH_CUDA=OFF, with or without the CUDA toolkit.
tbe_collector_status() {
  local cache=$1/CMakeCache.txt
  if grep -q '^TBE_HAVE_CUPTI_RESULT:INTERNAL=ON' "$cache" 2>/dev/null; then
    echo built
  elif grep -q '^TBE_WITH_CUDA:BOOL=OFF' "$cache" 2>/dev/null; then
    echo "not built (TBE_WITH_CUDA=OFF)"
  else
    echo "not built (no CMake cache in $1)"
  fi
}

# tbe_cupti_headers BUILD_DIR: the CUPTI declarations that tree's collector
# was compiled against.
tbe_cupti_headers() {
  if grep -q '^TBE_HAVE_CUPTI_HEADERS_RESULT:INTERNAL=ON' "$1/CMakeCache.txt" 2>/dev/null; then
    echo "the CUDA toolkit's CUPTI headers (src/collect/cupti_abi.h checked against them)"
  else
    echo "src/collect/cupti_abi.h (no CUDA toolkit found, or TBE_USE_CUDA_TOOLKIT=OFF; its check against NVIDIA's headers, cupti_abi_fails_when_planted, needs them)"
  fi
}
