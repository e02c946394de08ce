#!/usr/bin/env bash
# test_ranks.sh: ranks from the launcher, end to end without a GPU.
#
# `tbexport` run once per rank under a launcher (here: the variables
# torchrun sets, RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID) names the run after
# the job (torch-<id>) and its host entry after the rank (<host>.rank<N>),
# so two ranks started at once land in one run, each with its own files,
# distributedInfo in the Chrome JSON, and `tbexport summary` reads the run
# rank by rank.  Around a launcher (`tbexport -- LAUNCHER`), each worker's
# spool carries its rank.  A rank without a job id says how to join one
# run, and a malformed RANK is reported, not taken.
#
# A job run again keeps its id: a Slurm requeue (SLURM_RESTART_COUNT) and
# a torchrun restart (TORCHELASTIC_RESTART_COUNT) run every rank's program
# (each writes a file) into a run of the attempt's own
# (<job>.requeue<K>, <job>.restart<J>); the same job id seen again without
# a count (a step run again by hand) moves to <job>_2; a name the user
# gave that is taken runs the program and keeps its profile aside, to
# convert with the command tbexport prints.  Each time every attempt's
# runs read back with `tbexport summary`, and nothing earlier changed by a
# byte.  test/stress/collect_fake_libcupti.c stands in for libcupti; the
# program loads the injection library as the driver would (under ASan,
# with the sanitizer's runtime preloaded into python3).
# usage: test_ranks.sh TBEXPORT DATA_DIR
set -u
tb=$1
# Profiling runs of programs that never use CUDA write their (empty) run only
# with --empty-run: the naming rules are checked on those runs.
tbp=("$tb" --empty-run)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
# No launcher of the test's own environment may leak in.
unset RANK WORLD_SIZE LOCAL_RANK TORCHELASTIC_RUN_ID OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
  OMPI_COMM_WORLD_LOCAL_RANK PMIX_RANK PMIX_NAMESPACE OMPI_MCA_ess_base_jobid PMI_RANK PMI_SIZE \
  MPI_LOCALRANKID MV2_COMM_WORLD_RANK MV2_COMM_WORLD_SIZE MV2_COMM_WORLD_LOCAL_RANK SLURM_PROCID \
  SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID SLURM_STEP_ID SLURM_RESTART_COUNT TORCHELASTIC_RESTART_COUNT

"${tbp[@]}" --logdir probe -- /bin/true 2>err.txt
if grep -q "collector was not built" err.txt; then
  echo "test_ranks: built without CUDA: nothing to check"
  exit 0
fi
# ---- naming without the collector (any build): the program never uses CUDA ----
# a Slurm step names the run slurm-<job>.<step>; --run wins over it
SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_JOB_ID=4242 SLURM_STEP_ID=7 "${tbp[@]}" --logdir ldS --host n --quiet -- /bin/true ||
  fail "slurm"
[ -e ldS/plugins/profile/slurm-4242.7/n.rank0.xplane.pb ] || fail "slurm run name: $(find ldS | sort)"
gzip -dc ldS/plugins/profile/slurm-4242.7/n.rank0.trace.json.gz |
  grep -q '"distributedInfo": {"rank": 0, "world_size": 1}' || fail "slurm: the no-CUDA run lacks the rank"
SLURM_PROCID=0 SLURM_JOB_ID=4242 "${tbp[@]}" --logdir ldS --run mine --host n --quiet -- /bin/true || fail "--run"
[ -e ldS/plugins/profile/mine/n.rank0.xplane.pb ] || fail "--run with a rank: $(find ldS | sort)"

# a rank without a job id (MPICH's Hydra): today's name, and a note saying how to join
PMI_RANK=1 PMI_SIZE=2 "${tbp[@]}" --logdir ldP --host n -- /bin/true 2>err.txt || fail "pmi: $(cat err.txt)"
grep -q "note: rank 1 (PMI) has no job id to name the run: .* pass the same --run NAME to every rank" err.txt ||
  fail "pmi: no note: $(cat err.txt)"
[ "$(find ldP -name 'n.rank1.xplane.pb' | wc -l)" -eq 1 ] || fail "pmi: $(find ldP | sort)"

# a malformed RANK is reported and not taken
RANK=first "${tbp[@]}" --logdir ldM --run m --host n -- /bin/true 2>err.txt || fail "bad RANK: $(cat err.txt)"
grep -q "note: RANK='first' is not a decimal number: ignored" err.txt || fail "bad RANK: no note: $(cat err.txt)"
[ -e ldM/plugins/profile/m/n.xplane.pb ] || fail "bad RANK: $(find ldM | sort)"
gzip -dc ldM/plugins/profile/m/n.trace.json.gz | grep -q distributedInfo && fail "bad RANK: distributedInfo written"

inj=$("${tbp[@]}" --logdir probe --run probe --quiet -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null)
fake="$(dirname "$tb")/libcollect_fake_libcupti.so"
[ -f "$fake" ] || fail "fake libcupti not built next to tbexport: $fake"
[ -f "$inj" ] || fail "no injection library: '$inj'"
command -v python3 >/dev/null || fail "python3 is needed"
# python3 loads the injection library; in an ASan build (gcc: the runtime is
# a shared library) only once the runtime is preloaded, and python's own
# leaks are not ours to report
py=(python3)
asan=$(ldd "$inj" 2>/dev/null | awk '/libasan/ {print $3}')
if [ -n "$asan" ]; then
  py=(env LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" python3)
elif ldd "$inj" 2>/dev/null | grep -q 'libtsan'; then
  echo "test_ranks: TSan build: python3 cannot load the injection library; the collected runs are not checked"
  exit 0
fi
export TBEXPORT_CUPTI_LIB="$fake"

# A rank's program: one launch and its kernel, named after the rank (or
# argv[2]); with argv[1], it writes that file: the program's own side
# effect, the proof that it ran.
cat >rank.py <<'PY'
import ctypes, os, sys, time
inj = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
inj.InitializeInjection()  # as the CUDA driver does at cuInit
fake = ctypes.CDLL(os.environ["TBEXPORT_CUPTI_LIB"])
fake.fake_cupti_now.restype = ctypes.c_uint64
MS = 1000000
def at(base, ms): return ctypes.c_uint64(base + int(ms * MS))
t = fake.fake_cupti_now() + MS
name = ("kernel_rank%s" % os.environ.get("RANK", "x")).encode()
if len(sys.argv) > 2: name = sys.argv[2].encode()
if not fake.fake_cupti_api(1, at(t, 0), at(t, 0.1)): sys.exit("no api record")
if not fake.fake_cupti_kernel(1, at(t, 0.2), at(t, 1.2), name): sys.exit("no kernel record")
while fake.fake_cupti_now() <= t + 2 * MS: time.sleep(0.0005)
if len(sys.argv) > 1: open(sys.argv[1], "w").write("ran\n")
PY

# ---- tbexport under the launcher: one tbexport per rank, started at once ----
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r TORCHELASTIC_RUN_ID=abc \
    "${tbp[@]}" --logdir ld --host node -- "${py[@]}" rank.py 2>"err$r.txt" &
  eval "p$r=\$!"
done
wait "$p0" || fail "rank 0: status $?: $(cat err0.txt)"
wait "$p1" || fail "rank 1: status $?: $(cat err1.txt)"
run=ld/plugins/profile/torch-abc
for r in 0 1; do
  for f in "$run/node.rank$r.xplane.pb" "$run/node.rank$r.trace.json.gz" \
    "ld/torch-abc/node.rank$r.pt.trace.json.gz" "ld/torch-abc/rank$r.node"; do
    [ -e "$f" ] || fail "rank $r: no $f: $(find ld | sort)"
  done
  gzip -dc "$run/node.rank$r.trace.json.gz" | grep -q "\"distributedInfo\": {\"rank\": $r, \"world_size\": 2}" ||
    fail "rank $r: distributedInfo: $(gzip -dc "$run/node.rank$r.trace.json.gz" | grep -m1 distributed)"
  grep -q "wrote ld/plugins/profile/torch-abc/node.rank$r.xplane.pb" "err$r.txt" ||
    fail "rank $r: paths written: $(cat "err$r.txt")"
done
[ "$(ls ld/plugins/profile)" = "torch-abc" ] || fail "the ranks split: $(ls ld/plugins/profile)"
[ "$(ls "$run" | wc -l)" -eq 6 ] || fail "files of the run (two ranks: trace, XSpace, analysis each): $(ls "$run")"

# summary reads the run rank by rank (one machine, one GPU shared)
"$tb" summary --logdir ld torch-abc >sum.txt 2>sumerr.txt || fail "summary: $(cat sumerr.txt)"
grep -q "^2 processes on 1 host, .* 1 GPU, 2 kernels" sum.txt || fail "summary header: $(head -3 sum.txt)"
grep -q "^Ranks (2; slowest and fastest by " sum.txt || fail "summary: hosts not by rank: $(cat sum.txt)"
grep -q "^ *0 node.rank0  " sum.txt && grep -q "^ *1 node.rank1  " sum.txt ||
  fail "summary rows: $(cat sum.txt)"
"$tb" summary --logdir ld --format json torch-abc >sum.json 2>sumerr.txt || fail "summary json"
python3 - sum.json <<'PY' || fail "summary json ranks: $(head -c 600 sum.json)"
import json, sys
d = json.load(open(sys.argv[1]))
ranks = sorted(h["rank"] for h in d["hosts"])
assert ranks == [0, 1], ranks
PY

# a third rank joins (its own entry is free)
RANK=2 WORLD_SIZE=3 TORCHELASTIC_RUN_ID=abc "${tbp[@]}" --logdir ld --host node --quiet -- "${py[@]}" rank.py ||
  fail "rank 2 did not join"
[ -e "$run/node.rank2.xplane.pb" ] || fail "rank 2: $(ls "$run")"

# ---- tbexport around the launcher: each worker's spool carries its rank ----
cat >launch.sh <<'SH'
#!/bin/sh
# a launcher: two workers with torchrun's variables, and its own process
RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 TORCHELASTIC_RUN_ID=w $PY rank.py &
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 TORCHELASTIC_RUN_ID=w $PY rank.py &
wait
SH
chmod +x launch.sh
PY="${py[*]}" "${tbp[@]}" --logdir ldW --run wrapped --host node -- ./launch.sh 2>err.txt || fail "wrapped: $(cat err.txt)"
grep -q "2 processes with CUDA" err.txt || fail "wrapped: $(cat err.txt)"
for r in 0 1; do
  [ -e "ldW/plugins/profile/wrapped/node.rank$r.xplane.pb" ] || fail "wrapped: $(find ldW | sort)"
  gzip -dc "ldW/plugins/profile/wrapped/node.rank$r.trace.json.gz" | grep -q "\"rank\": $r," ||
    fail "wrapped: rank $r: distributedInfo"
done
[ -z "$(find ldW -name '*_pid*')" ] || fail "wrapped: pid names for ranked processes: $(find ldW | sort)"
# ---- a job run again ----
# two_ranks LOGDIR TAG VAR=VALUE...: ranks 0 and 1 of one job at once, the
# launcher's variables given (@R@: the rank); each program writes ran.TAG.R
# and launches kernel k_TAG_R.  Both must exit 0, and both programs run.
two_ranks() {
  local ld=$1 tag=$2 r p0 p1
  shift 2
  for r in 0 1; do
    env "${@//@R@/$r}" "${tbp[@]}" --logdir "$ld" --host node -- "${py[@]}" rank.py "ran.$tag.$r" "k_${tag}_$r" \
      2>"err.$tag.$r" &
    eval "p$r=\$!"
  done
  wait "$p0" || fail "$tag: rank 0: status $?: $(cat "err.$tag.0")"
  wait "$p1" || fail "$tag: rank 1: status $?: $(cat "err.$tag.1")"
  for r in 0 1; do [ -e "ran.$tag.$r" ] || fail "$tag: rank $r: the program did not run: $(cat "err.$tag.$r")"; done
}
# run_holds LOGDIR RUN TAG: the run has both ranks' files, `tbexport summary`
# reads it as ranks 0 and 1 with their kernels k_TAG_0 and k_TAG_1, and no
# kernel of another attempt
run_holds() {
  local ld=$1 rn=$2 tag=$3 r
  for r in 0 1; do
    [ -e "$ld/plugins/profile/$rn/node.rank$r.xplane.pb" ] && [ -e "$ld/plugins/profile/$rn/node.rank$r.trace.json.gz" ] ||
      fail "$rn: rank $r's files: $(find "$ld" | sort)"
  done
  "$tb" summary --logdir "$ld" "$rn" >"sum.$tag.txt" 2>&1 || fail "summary $rn: $(cat "sum.$tag.txt")"
  grep -q "^2 processes on 1 host, .* 2 kernels" "sum.$tag.txt" && grep -q "^ *0 node.rank0  " "sum.$tag.txt" &&
    grep -q "^ *1 node.rank1  " "sum.$tag.txt" || fail "summary $rn: ranks: $(cat "sum.$tag.txt")"
  grep -q "k_${tag}_0" "sum.$tag.txt" && grep -q "k_${tag}_1" "sum.$tag.txt" ||
    fail "summary $rn: the attempt's kernels: $(cat "sum.$tag.txt")"
  [ "$(grep -o 'k_[a-z0-9]*_[01]' "sum.$tag.txt" | sed 's/_[01]$//' | sort -u)" = "k_$tag" ] ||
    fail "summary $rn: another attempt's kernels: $(cat "sum.$tag.txt")"
}
# the checksums of every file below LOGDIR, to show later that none changed
sums() { (cd "$1" && find . -type f ! -name .tbexport.lock -print0 | sort -z | xargs -0 md5sum); }
unchanged() { (cd "$1" && md5sum -c --quiet) <<<"$2" || fail "$3: an earlier profile changed"; }

# Slurm requeues the job (preemption, a node failure): same job and step id,
# SLURM_RESTART_COUNT counts.  The second attempt runs and is a run of its own.
slurm=(SLURM_PROCID=@R@ SLURM_NTASKS=2 SLURM_LOCALID=@R@ SLURM_JOB_ID=77 SLURM_STEP_ID=0)
two_ranks ldQ q0 "${slurm[@]}"
run_holds ldQ slurm-77.0 q0
before=$(sums ldQ)
two_ranks ldQ q1 "${slurm[@]}" SLURM_RESTART_COUNT=1
grep -q "^tbexport: note: a restarted attempt of the job (Slurm requeued it 1 time): its profile is run 'slurm-77.0.requeue1'$" err.q1.0 ||
  fail "requeue: no note: $(cat err.q1.0)"
run_holds ldQ slurm-77.0.requeue1 q1
run_holds ldQ slurm-77.0 q0
unchanged ldQ "$before" "requeue"
# the step run again by hand (no count): the id seen before moves on
before=$(sums ldQ)
two_ranks ldQ q2 "${slurm[@]}"
grep -q "note: run 'slurm-77.0' already has a profile of host node.rank0 (.*), from an earlier job of the same id: this one is run 'slurm-77.0_2'" err.q2.0 ||
  fail "the same step again: no note: $(cat err.q2.0)"
run_holds ldQ slurm-77.0_2 q2
unchanged ldQ "$before" "the same step again"
[ "$(ls ldQ/plugins/profile | tr '\n' ' ')" = "slurm-77.0 slurm-77.0.requeue1 slurm-77.0_2 " ] ||
  fail "requeue: runs: $(ls ldQ/plugins/profile)"

# torchrun restarts its workers: same run id, TORCHELASTIC_RESTART_COUNT counts
torch=(RANK=@R@ WORLD_SIZE=2 LOCAL_RANK=@R@ TORCHELASTIC_RUN_ID=tr)
two_ranks ldT t0 "${torch[@]}" TORCHELASTIC_RESTART_COUNT=0
before=$(sums ldT)
two_ranks ldT t1 "${torch[@]}" TORCHELASTIC_RESTART_COUNT=1
grep -q "note: a restarted attempt of the job (torchrun restarted its workers 1 time): its profile is run 'torch-tr.restart1'" err.t1.1 ||
  fail "torchrun restart: no note: $(cat err.t1.1)"
run_holds ldT torch-tr t0
run_holds ldT torch-tr.restart1 t1
unchanged ldT "$before" "torchrun restart"

# A name the user gave that is taken: the program runs anyway (the status
# is the program's), the earlier files stay, and this profile is the next
# free name, said in a warning that --quiet keeps; --force replaces.
"${tbp[@]}" --logdir ldU --run mine --host node --quiet -- "${py[@]}" rank.py ran.u0 k_u0 || fail "--run mine"
before=$(sums ldU)
"${tbp[@]}" --logdir ldU --run mine --host node --quiet -- sh -c '"$@"; exit 3' sh "${py[@]}" rank.py ran.u1 k_u1 \
  2>err.u1
rc=$?
[ $rc -eq 3 ] || fail "--run mine again: status $rc, want the program's 3: $(cat err.u1)"
[ -e ran.u1 ] || fail "--run mine again: the program did not run: $(cat err.u1)"
grep -q "^tbexport profile: warning: run 'mine' already has outputs for host node (ldU/plugins/profile/mine/node\..*): this profile is run 'mine_2' (--force replaces them)$" err.u1 ||
  fail "--run mine again: no warning: $(cat err.u1)"
[ "$(wc -l <err.u1)" -eq 1 ] || fail "--run mine again, --quiet: more than the warning: $(cat err.u1)"
unchanged ldU "$before" "--run mine again"
"$tb" summary --logdir ldU mine_2 2>&1 | grep -q k_u1 || fail "mine_2: $("$tb" summary --logdir ldU mine_2 2>&1)"
"$tb" summary --logdir ldU mine >sum.mine 2>&1
grep -q k_u0 sum.mine && ! grep -q k_u1 sum.mine || fail "the first --run mine: $(cat sum.mine)"
"${tbp[@]}" --logdir ldU --run mine --host node --force --quiet -- "${py[@]}" rank.py ran.u3 k_u3 || fail "--force"
"$tb" summary --logdir ldU mine >sum.mine 2>&1
grep -q k_u3 sum.mine && ! grep -q k_u0 sum.mine || fail "--force: $(cat sum.mine)"
before=$(sums ldU)
# ... and a restarted attempt of a job whose ranks were given --run: mine.requeue2
SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_JOB_ID=5 SLURM_RESTART_COUNT=2 "${tbp[@]}" --logdir ldU --run mine --host node --quiet -- \
  "${py[@]}" rank.py ran.u2 k_u2 2>err.u2 || fail "--run mine, requeued: $(cat err.u2)"
[ -e ran.u2 ] && [ -e ldU/plugins/profile/mine.requeue2/node.rank0.xplane.pb ] ||
  fail "--run mine, requeued: $(find ldU | sort)"
unchanged ldU "$before" "--run mine, requeued"
echo "test_ranks: ok"
