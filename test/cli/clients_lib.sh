# clients_lib.sh: what the client tests (test_clients_ops.sh,
# test_clients_dist.sh, test_clients_memory.sh) share, sourced after
# `set -u`:
#   clients_init TBEXPORT DATA_DIR  sets B (the tbexport binary, absolute),
#       D (the data folder), root (the repository), tb_tools and hta_tools
#       (../shared/tools/tensorboard and hta, or TBE_TB_TOOLS /
#       TBE_HTA_TOOLS: when either is absent the test says so and is
#       skipped, exit 77), tmp (a folder removed at exit, with the
#       TensorBoard the test started);
#   clients_serve LOGDIR NRUNS  serves LOGDIR with the real TensorBoard and
#       the PyTorch Profiler plugin; sets url, and waits (at most 120 s)
#       until the plugin lists NRUNS runs;
#   die MESSAGE  fails the test.

die() {
  echo "FAIL: $*"
  exit 1
}

clients_cleanup() {
  # (never our own session: that would end the test's caller too)
  [ -n "${sid:-}" ] && [ "$sid" != "$(ps -o sid= -p $$ | tr -d ' ')" ] && kill -- "-$sid" 2>/dev/null
  rm -rf "$tmp"
}

clients_init() {
  B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  D=$(cd "$2" && pwd)
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  tb_tools=${TBE_TB_TOOLS:-$root/../shared/tools/tensorboard}
  hta_tools=${TBE_HTA_TOOLS:-$root/../shared/tools/hta}
  local t
  for t in "$tb_tools/serve" "$hta_tools/setup"; do
    if [ ! -x "$t" ]; then
      echo "SKIP: no $t (set TBE_TB_TOOLS / TBE_HTA_TOOLS to ../shared/tools/tensorboard and ../shared/tools/hta)"
      exit 77
    fi
  done
  tmp=$(mktemp -d)
  sid=""
  trap clients_cleanup EXIT
}

clients_serve() {
  local port n
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  url=$("$tb_tools/serve" "$1" "$port" 600) || die "TensorBoard did not start: $(tail -3 "/tmp/tb-$port.log")"
  # serve starts it with setsid: its session, to end it by id (found by
  # pgrep, which never lists itself: a `ps | awk` whose own command line
  # holds the pattern could name the awk's session, ours, once pids wrap)
  local pid
  pid=$(pgrep -f -- "tensorboard.main .*--port $port( |\$)" | head -1)
  sid=""
  [ -n "$pid" ] && sid=$(ps -o sid= -p "$pid" | tr -d ' ')
  for _ in $(seq 1 120); do
    n=$(curl -s --compressed "${url}data/plugin/pytorch_profiler/runs" | python3 -c \
      'import json,sys; d=json.load(sys.stdin); print(0 if d.get("loading") else len(d["runs"]))' 2>/dev/null)
    [ "${n:-0}" -ge "$2" ] && break
    sleep 1
  done
}
