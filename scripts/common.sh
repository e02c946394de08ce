# scripts/common.sh: shared by scripts/demo, scripts/test and scripts/bench.
# Installs missing Debian packages (as root; otherwise prints the command and
# stops) and configures + builds a CMake tree.

TBE_PACKAGES="build-essential cmake pkg-config libprotobuf-c-dev protobuf-c-compiler protobuf-compiler zlib1g-dev libcmocka-dev libsqlite3-dev libyajl-dev libiberty-dev python3"
# The sanitizer run-times of Debian 12's gcc-12 (ASan, UBSan, TSan), which
# scripts/test's sanitizer passes need.
TBE_SANITIZER_PACKAGES="libasan8 libubsan1 libtsan2"

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

# tbe_build DIR [cmake args...]: configures and builds every target.
# With TBE_BUILD_TARGETS set (space-separated), builds only those.
tbe_build() {
  local dir=$1
  shift
  local targets=()
  local t
  for t in ${TBE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  cmake -S "$TBE_ROOT" -B "$dir" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; return 1; }
  cmake --build "$dir" -j"$(nproc)" "${targets[@]}" 2>&1 | grep -E "warning:|error:" >&2 || true
  cmake --build "$dir" -j"$(nproc)" "${targets[@]}" >/dev/null
}
