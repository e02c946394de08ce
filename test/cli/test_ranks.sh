#!/usr/bin/env bash
# test_ranks.sh: ranks from the launcher, end to end without a GPU.
#
# `tbexport` run once per rank under a launcher (here: the variables
# torchrun sets, RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID) names the run after
# the job (torch-<id>) and its host entry after the rank (<host>.rank<N>),
# so two ranks started at once land in one run, each with its own files,
# distributedInfo in the Chrome JSON, and `tbexport summary` reads the run
# rank by rank.  Around a launcher (`tbexport -- LAUNCHER`), each worker's
# spool carries its rank.  A rank already written is refused, a rank
# without a job id says how to join one run, and a malformed RANK is
# reported, not taken.  test/stress/collect_fake_libcupti.c stands in for
# libcupti; the program loads the injection library as the driver would.
# usage: test_ranks.sh TBEXPORT DATA_DIR
set -u
tb=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
# No launcher of the test's own environment may leak in.
unset RANK WORLD_SIZE LOCAL_RANK TORCHELASTIC_RUN_ID OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
  OMPI_COMM_WORLD_LOCAL_RANK PMIX_RANK PMIX_NAMESPACE OMPI_MCA_ess_base_jobid PMI_RANK PMI_SIZE \
  MPI_LOCALRANKID MV2_COMM_WORLD_RANK MV2_COMM_WORLD_SIZE MV2_COMM_WORLD_LOCAL_RANK SLURM_PROCID \
  SLURM_NTASKS SLURM_LOCALID SLURM_JOB_ID SLURM_STEP_ID

"$tb" --logdir probe -- /bin/true 2>err.txt
if grep -q "collector was not built" err.txt; then
  echo "test_ranks: built without CUDA: nothing to check"
  exit 0
fi
# ---- naming without the collector (any build): the program never uses CUDA ----
# a Slurm step names the run slurm-<job>.<step>; --run wins over it
SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_JOB_ID=4242 SLURM_STEP_ID=7 "$tb" --logdir ldS --host n --quiet -- /bin/true ||
  fail "slurm"
[ -e ldS/plugins/profile/slurm-4242.7/n.rank0.xplane.pb ] || fail "slurm run name: $(find ldS | sort)"
gzip -dc ldS/plugins/profile/slurm-4242.7/n.rank0.trace.json.gz |
  grep -q '"distributedInfo": {"rank": 0, "world_size": 1}' || fail "slurm: the no-CUDA run lacks the rank"
SLURM_PROCID=0 SLURM_JOB_ID=4242 "$tb" --logdir ldS --run mine --host n --quiet -- /bin/true || fail "--run"
[ -e ldS/plugins/profile/mine/n.rank0.xplane.pb ] || fail "--run with a rank: $(find ldS | sort)"

# a rank without a job id (MPICH's Hydra): today's name, and a note saying how to join
PMI_RANK=1 PMI_SIZE=2 "$tb" --logdir ldP --host n -- /bin/true 2>err.txt || fail "pmi: $(cat err.txt)"
grep -q "note: rank 1 (PMI) has no job id to name the run: .* pass the same --run NAME to every rank" err.txt ||
  fail "pmi: no note: $(cat err.txt)"
[ "$(find ldP -name 'n.rank1.xplane.pb' | wc -l)" -eq 1 ] || fail "pmi: $(find ldP | sort)"

# a malformed RANK is reported and not taken
RANK=first "$tb" --logdir ldM --run m --host n -- /bin/true 2>err.txt || fail "bad RANK: $(cat err.txt)"
grep -q "note: RANK='first' is not a decimal number: ignored" err.txt || fail "bad RANK: no note: $(cat err.txt)"
[ -e ldM/plugins/profile/m/n.xplane.pb ] || fail "bad RANK: $(find ldM | sort)"
gzip -dc ldM/plugins/profile/m/n.trace.json.gz | grep -q distributedInfo && fail "bad RANK: distributedInfo written"

inj=$("$tb" --logdir probe --run probe --quiet -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null)
fake="$(dirname "$tb")/libcollect_fake_libcupti.so"
[ -f "$fake" ] || fail "fake libcupti not built next to tbexport: $fake"
[ -f "$inj" ] || fail "no injection library: '$inj'"
command -v python3 >/dev/null || fail "python3 is needed"
if ldd "$inj" 2>/dev/null | grep -q 'lib[at]san'; then
  echo "test_ranks: sanitizer build: python3 cannot load the injection library; the collected runs are not checked"
  exit 0
fi
export TBEXPORT_CUPTI_LIB="$fake"

# A rank's program: one launch and its kernel, named after the rank.
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
if not fake.fake_cupti_api(1, at(t, 0), at(t, 0.1)): sys.exit("no api record")
if not fake.fake_cupti_kernel(1, at(t, 0.2), at(t, 1.2), name): sys.exit("no kernel record")
while fake.fake_cupti_now() <= t + 2 * MS: time.sleep(0.0005)
PY

# ---- tbexport under the launcher: one tbexport per rank, started at once ----
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r TORCHELASTIC_RUN_ID=abc \
    "$tb" --logdir ld --host node -- python3 rank.py 2>"err$r.txt" &
  eval "p$r=\$!"
done
wait "$p0" || fail "rank 0: status $?: $(cat err0.txt)"
wait "$p1" || fail "rank 1: status $?: $(cat err1.txt)"
run=ld/plugins/profile/torch-abc
for r in 0 1; do
  for f in "$run/node.rank$r.xplane.pb" "$run/node.rank$r.trace.json.gz" \
    "ld/torch-abc/node.rank$r.pt.trace.json.gz" "ld/torch-abc/hparams/node.rank$r"; do
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

# the same rank again: refused before the program runs (its own entry only)
RANK=1 WORLD_SIZE=2 TORCHELASTIC_RUN_ID=abc "$tb" --logdir ld --host node -- touch ran.txt 2>err.txt
[ $? -eq 1 ] || fail "rank 1 again: not refused: $(cat err.txt)"
[ ! -e ran.txt ] || fail "rank 1 again: the program ran"
grep -q "run 'torch-abc' already has outputs for host node.rank1" err.txt || fail "rank 1 again: $(cat err.txt)"
# ... and a third rank still joins
RANK=2 WORLD_SIZE=3 TORCHELASTIC_RUN_ID=abc "$tb" --logdir ld --host node --quiet -- python3 rank.py ||
  fail "rank 2 did not join"
[ -e "$run/node.rank2.xplane.pb" ] || fail "rank 2: $(ls "$run")"

# ---- tbexport around the launcher: each worker's spool carries its rank ----
cat >launch.sh <<'SH'
#!/bin/sh
# a launcher: two workers with torchrun's variables, and its own process
RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 TORCHELASTIC_RUN_ID=w python3 rank.py &
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 TORCHELASTIC_RUN_ID=w python3 rank.py &
wait
SH
chmod +x launch.sh
"$tb" --logdir ldW --run wrapped --host node -- ./launch.sh 2>err.txt || fail "wrapped: $(cat err.txt)"
grep -q "2 processes with CUDA" err.txt || fail "wrapped: $(cat err.txt)"
for r in 0 1; do
  [ -e "ldW/plugins/profile/wrapped/node.rank$r.xplane.pb" ] || fail "wrapped: $(find ldW | sort)"
  gzip -dc "ldW/plugins/profile/wrapped/node.rank$r.trace.json.gz" | grep -q "\"rank\": $r," ||
    fail "wrapped: rank $r: distributedInfo"
done
[ -z "$(find ldW -name '*_pid*')" ] || fail "wrapped: pid names for ranked processes: $(find ldW | sort)"
echo "test_ranks: ok"
