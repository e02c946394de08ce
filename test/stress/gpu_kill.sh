#!/usr/bin/env bash
# test/stress/gpu_kill.sh BUILD_DIR [KILLS] [SEED]: SIGKILL a profiled CUDA
# program at random moments (issue 6, "SIGKILL"; run on the GPU machine).
#
# BUILD_DIR holds tbexport, libtbexport_inject.so and cuda_nvtx (a build
# with CUDA, e.g. the one scripts/check_gpu.sh makes in build/gpu).  For
# each of KILLS rounds (default 50) it runs
#     tbexport --logdir D --run kN --host gpu -- cuda_nvtx --kernels .. --steps .. --step-sleep-ms ..
# and, after a random delay (seeded: the seed is printed; pass it as SEED to
# replay), sends SIGKILL:
#   - 4 rounds in 5: to the profiled program.  tbexport must exit 137 and
#     write the run kN: its Chrome trace parses (gzip + json) and says the
#     capture ended early (or, killed before CUDA started, notes that no CUDA
#     activity was recorded); `tbexport inspect` reads its events with exit
#     0; `tbexport summary` opens its XSpace; no spool directory is left.
#   - 1 round in 5: to tbexport itself (the program is then killed too, so
#     it does not run on).  Whatever files appeared under final names must
#     be complete (same checks); half-written data may only be in hidden
#     temporary files (counted).
# Prints one line per round and the totals; exit 0 when every check passed.
# Takes about 2 minutes on an H200 machine.  Needs python3.
set -uo pipefail
bd=${1:?usage: gpu_kill.sh BUILD_DIR [KILLS] [SEED]}
bd=$(cd "$bd" && pwd)
kills=${2:-50}
seed=${3:-$(( $(date +%s) % 32768 ))}
tb=$bd/tbexport
# TBE_GPU_KILL_PROG: a stand-in for cuda_nvtx (dry run of this script on a
# machine without a GPU: every run then notes that no CUDA activity was seen).
prog=${TBE_GPU_KILL_PROG:-$bd/cuda_nvtx}
for f in "$tb" "$bd/libtbexport_inject.so" "$prog"; do
  [ -e "$f" ] || { echo "FAIL: $f not found (build with CUDA first)"; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ld=$work/log_dir
mkdir -p "$ld"
RANDOM=$seed
echo "gpu_kill: $kills rounds, seed $seed (gpu_kill.sh $1 $kills $seed replays the schedule)"
fails=0
n_prog=0 n_tb=0 n_early=0 n_nocuda=0 n_tmp=0 kernels_total=0
t_start=$(date +%s)

fail() { echo "FAIL: round $1: $2"; fails=$((fails + 1)); }

# check_files ROUND RUN MODE: checks every final file of run RUN; MODE
# "program" also requires the run to be there and to say how it ended.
# Prints the kernel count (or "nocuda") on success.
check_files() {
  python3 - "$ld" "$2" "$3" <<'PY'
import glob, gzip, json, os, sys
ld, run, mode = sys.argv[1], sys.argv[2], sys.argv[3]
files = glob.glob(os.path.join(ld, "plugins/profile", run, "*")) + glob.glob(os.path.join(ld, run, "*"))
final = [f for f in files if not os.path.basename(f).startswith(".")]
tmp = [f for f in files if os.path.basename(f).startswith(".")]
traces = [f for f in final if f.endswith(".trace.json.gz")]
result = "none"
for f in traces:
    with gzip.open(f, "rt") as fh:
        doc = json.load(fh)            # raises on a torn file
    kern = sum(1 for e in doc.get("traceEvents", []) if e.get("cat") == "kernel")
    warn = json.dumps(doc.get("tbexportWarnings", []))
    if "ended early" in warn:
        result = "early %d" % kern
    elif "no CUDA activity" in warn:
        result = "nocuda"
    else:
        result = "clean %d" % kern
if mode == "program" and not traces:
    print("no Chrome trace written"); sys.exit(1)
if mode == "program" and result.startswith("clean"):
    print("the run does not say it ended early (%s)" % warn[:200]); sys.exit(1)
print(result, "tmp=%d" % len(tmp))
PY
}

for ((i = 0; i < kills; i++)); do
  if ((i % 5 == 4)); then target=tbexport; else target=program; fi
  # Delays: 0-2000 ms after tbexport started (CUDA init, collection and,
  # for a short program, tbexport's own conversion).
  delay_ms=$(( (RANDOM * 32768 + RANDOM) % 2001 ))
  if [ $target = program ]; then
    args=(--kernels 40000 --steps 40 --step-sleep-ms 80)
  else
    args=(--kernels 4000 --steps 4 --step-sleep-ms 10)
  fi
  "$tb" --logdir "$ld" --run "k$i" --host gpu -- "$prog" "${args[@]}" \
    >"$work/k$i.out" 2>"$work/k$i.err" &
  tpid=$!
  t0=$(date +%s%N)
  child=""
  sleep "$(printf '0.%03d' $((delay_ms % 1000)))"
  [ "$delay_ms" -ge 1000 ] && sleep $((delay_ms / 1000))
  for st in /proc/[0-9]*/stat; do
    read -r cpid _ _ ppid _ <"$st" 2>/dev/null || continue
    [ "$ppid" = "$tpid" ] && child=$cpid && break
  done
  if [ $target = program ]; then
    if [ -z "$child" ]; then
      # Not started yet (or already gone): wait for it briefly, then kill.
      for _ in $(seq 1 100); do
        for st in /proc/[0-9]*/stat; do
          read -r cpid _ _ ppid _ <"$st" 2>/dev/null || continue
          [ "$ppid" = "$tpid" ] && child=$cpid && break
        done
        [ -n "$child" ] && break
        kill -0 "$tpid" 2>/dev/null || break
        sleep 0.01
      done
    fi
    [ -n "$child" ] && kill -KILL "$child" 2>/dev/null
    wait "$tpid"
    rc=$?
    n_prog=$((n_prog + 1))
    if [ -z "$child" ]; then
      fail $i "the program was never seen (tbexport status $rc)"; cat "$work/k$i.err"; continue
    fi
    # 137: killed; 0: it had finished before the kill landed (rare).
    if [ $rc -ne 137 ] && [ $rc -ne 0 ]; then
      fail $i "tbexport exited $rc, want 137"; tail -5 "$work/k$i.err"
    fi
    res=$(check_files $i "k$i" program 2>&1) || { fail $i "$res"; continue; }
  else
    kill -KILL "$tpid" 2>/dev/null
    wait "$tpid" 2>/dev/null
    [ -n "$child" ] && kill -KILL "$child" 2>/dev/null
    n_tb=$((n_tb + 1))
    sleep 0.05
    res=$(check_files $i "k$i" tbexport 2>&1) || { fail $i "$res"; continue; }
  fi
  case "$res" in
    early*) n_early=$((n_early + 1)); k=${res#early }; k=${k%% *}; kernels_total=$((kernels_total + k)) ;;
    nocuda*) n_nocuda=$((n_nocuda + 1)) ;;
  esac
  tmpc=${res##*tmp=}
  n_tmp=$((n_tmp + tmpc))
  # The events and the XSpace of a written run must open.
  if [ -d "$ld/k$i" ]; then
    "$tb" inspect "$ld/k$i" >/dev/null 2>"$work/k$i.inspect" || { fail $i "tbexport inspect failed"; cat "$work/k$i.inspect"; }
  fi
  for x in "$ld"/plugins/profile/"k$i"/[!.]*.xplane.pb; do
    [ -e "$x" ] || continue
    "$tb" summary --quiet "$x" >/dev/null 2>"$work/k$i.summary" || { fail $i "tbexport summary $x failed"; cat "$work/k$i.summary"; }
  done
  if [ $target = program ] && ls -d "$ld"/.tbexport-spool-* >/dev/null 2>&1; then
    fail $i "a spool directory was left behind: $(ls -d "$ld"/.tbexport-spool-*)"
  fi
  rm -rf "$ld"/.tbexport-spool-*  # those of killed tbexports
  echo "round $i: SIGKILL to $target after ${delay_ms} ms: $res"
done
echo "gpu_kill: $kills rounds in $(( $(date +%s) - t_start )) s, seed $seed"
echo "  program killed: $n_prog (runs that say the capture ended early: $n_early, kernels in them: $kernels_total; killed before CUDA started: $n_nocuda)"
echo "  tbexport killed: $n_tb; hidden temporary files left: $n_tmp (never a torn final file)"
echo "  failures: $fails"
[ $fails -eq 0 ]
