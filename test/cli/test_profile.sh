#!/usr/bin/env bash
# test_profile.sh: `tbexport [OPTIONS] -- CMD` without a GPU: a program that
# never initializes CUDA gives a run with a note (not an error); the
# command's arguments, environment and exit status pass through; signals sent
# to tbexport reach the command; a missing command is status 127; bad options
# (--capture-range, --steps, ...) are status 2; with a stand-in libcupti, a
# run's steps (tbe_profiler_step, --steps) and a capture range that bounds
# everything, as `tbexport summary` reads them.  A problem of ours never
# stops the program: a run name taken (the profile goes to NAME_2), no
# injection library, a spool folder that cannot be made, a build without
# CUDA (the program runs without the profiler, after one line).
# usage: test_profile.sh TBEXPORT DATA_DIR
set -u
tb=$1
# Runs of programs that never use CUDA (no GPU here) are written only with
# --empty-run; the default (nothing written, one line) is checked below.
tbp=("$tb" --empty-run)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

# Missing command: 127 and a clear message, in every build.
"${tbp[@]}" --logdir ld -- ./no/such/program 2>err.txt
rc=$?
[ $rc -eq 127 ] || fail "missing command: status $rc, want 127"
grep -q "no/such/program: command not found" err.txt || fail "missing command: message: $(cat err.txt)"
"$tb" -- no_such_command_tbexport_xyz 2>/dev/null
[ $? -eq 127 ] || fail "missing command on PATH: want 127"
[ ! -e ld ] || fail "missing command: the log dir was created"
"${tbp[@]}" --logdir ldE -- / 2>err.txt
rc=$?
if ! grep -q "collector was not built" err.txt; then
  [ $rc -eq 126 ] || fail "a directory as the command: status $rc, want 126"
  [ ! -e ldE ] || fail "a command that cannot be executed: the log dir was left behind"
fi

# Without CUDA at build time: an explanation, and the command runs.
"${tbp[@]}" --logdir ld -- /bin/true 2>err.txt
rc=$?
if grep -q "collector was not built" err.txt; then
  [ $rc -eq 0 ] || fail "no-CUDA build: status $rc, want the command's 0"
  [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "; running /bin/true without the profiler$" err.txt ||
    fail "no-CUDA build: message: $(cat err.txt)"
  "${tbp[@]}" --logdir ld -- sh -c 'touch ran_nocuda; exit 5' 2>/dev/null
  rc=$?
  [ $rc -eq 5 ] && [ -e ran_nocuda ] || fail "no-CUDA build: the command did not run (status $rc)"
  echo "test_profile: built without CUDA: explanation, the command run, 127 checked"
  exit 0
fi

# /bin/true: a run with a note, status 0, no spool left behind.
[ $rc -eq 0 ] || fail "/bin/true: status $rc: $(cat err.txt)"
grep -q "no CUDA activity was recorded" err.txt || fail "/bin/true: no note on stderr"
grep -q "GPU busy" err.txt || fail "/bin/true: no summary"
n=$(find ld -name '*.xplane.pb' | wc -l)
[ "$n" -eq 1 ] || fail "/bin/true: $n xplane files"
j=$(find ld -path '*/plugins/profile/*' -name '*.trace.json.gz')
[ -n "$j" ] || fail "/bin/true: no trace.json.gz"
gzip -dc "$j" | grep -q "no CUDA activity was recorded" || fail "/bin/true: the JSON lacks the note"
ls ld/*/events.out.tfevents.* >/dev/null 2>&1 || fail "/bin/true: no events file"
[ -z "$(find ld -name '.tbexport-spool*')" ] || fail "/bin/true: spool directory left behind"
grep -q "wrote ld/plugins/profile/" err.txt || fail "/bin/true: paths written not listed"

# The default: a session in which nothing recorded CUDA activity writes no
# run (no run folder, no profile folder, no spool) and says why in one line
# (here: no NVIDIA driver, or the program never initialized CUDA where there
# is one), then the program's status.
"$tb" --logdir ldN -- sh -c 'touch ran_empty; exit 4' 2>err.txt
rc=$?
[ $rc -eq 4 ] && [ -e ran_empty ] || fail "no CUDA activity: status $rc, or the program did not run"
[ -z "$(find ldN -mindepth 1 2>/dev/null)" ] || fail "no CUDA activity: written: $(find ldN)"
grep -c "no CUDA activity was recorded" err.txt | grep -qx 1 || fail "no CUDA activity: $(cat err.txt)"
grep "no CUDA activity was recorded" err.txt | grep -q "no run written" ||
  fail "no CUDA activity: does not say no run was written: $(cat err.txt)"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  grep -q "this machine has no NVIDIA driver (libcuda.so.1 cannot be loaded).*tbexport summary FILE" err.txt ||
    fail "no driver: the line does not say so: $(cat err.txt)"
fi
[ "$(wc -l <err.txt)" -eq 2 ] || fail "no CUDA activity: want the reason and the status, got: $(cat err.txt)"

# Run name and host; an existing run is not replaced without --force, nor
# is the program refused for it: its profile is the next free name.
"${tbp[@]}" --logdir ld2 --run base --host gpu0 -- true 2>/dev/null || fail "--run/--host"
[ -f ld2/plugins/profile/base/gpu0.xplane.pb ] || fail "--run/--host: $(find ld2)"
sum0=$(cat ld2/plugins/profile/base/gpu0.* | md5sum)
"${tbp[@]}" --logdir ld2 --run base --host gpu0 -- touch ran.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] || fail "existing run: status $rc: $(cat err.txt)"
[ -e ran.txt ] || fail "existing run: the program was not started"
grep -q "^tbexport profile: warning: run 'base' already has outputs for host gpu0 (ld2/plugins/profile/base/gpu0\..*): this profile is run 'base_2' (--force replaces them)$" err.txt ||
  fail "existing run: message: $(cat err.txt)"
[ "$(cat ld2/plugins/profile/base/gpu0.* | md5sum)" = "$sum0" ] || fail "existing run: its files changed"
[ -f ld2/plugins/profile/base_2/gpu0.xplane.pb ] || fail "existing run: no base_2: $(find ld2)"
# A problem of ours before the start: one line, and the program runs
# without the profiler, with its own status.
TBEXPORT_INJECT_LIB=/nonexistent/libtbexport_inject.so "${tbp[@]}" --logdir ld2 --run bare -- \
  sh -c 'echo "[$CUDA_INJECTION64_PATH]" >bare.txt; exit 4' 2>err.txt
rc=$?
[ $rc -eq 4 ] && [ "$(cat bare.txt)" = "[]" ] || fail "no injection library: status $rc, '$(cat bare.txt)'"
[ "$(wc -l <err.txt)" -eq 1 ] &&
  grep -q "^tbexport profile: warning: libtbexport_inject.so not found .*; running sh without the profiler$" err.txt ||
  fail "no injection library: message: $(cat err.txt)"
: >afile
"${tbp[@]}" --logdir afile/ld --run bare -- touch ran_nodir.txt 2>err.txt
rc=$?
[ $rc -eq 0 ] && [ -e ran_nodir.txt ] || fail "no spool folder: status $rc: $(cat err.txt)"
[ "$(wc -l <err.txt)" -eq 1 ] && grep -q "afile.*; running touch without the profiler$" err.txt ||
  fail "no spool folder: message: $(cat err.txt)"
"${tbp[@]}" --logdir ld2 --run base --host gpu1 --quiet -- true || fail "another host in an existing run"
[ -f ld2/plugins/profile/base/gpu1.xplane.pb ] || fail "--host gpu1 beside gpu0: $(find ld2)"
"${tbp[@]}" --logdir ld2 --run base --host gpu0 --force --quiet -- true 2>err.txt || fail "--force"
[ ! -s err.txt ] || fail "--quiet printed: $(cat err.txt)"
"$tb" profile --empty-run --logdir ld3 --run p -- true 2>/dev/null || fail "'profile' subcommand form"
[ -f ld3/plugins/profile/p/*.xplane.pb ] || fail "'profile' form wrote nothing"

# Without --run, sessions started in the same second get distinct runs.
"${tbp[@]}" --logdir ld7 --quiet -- true && "${tbp[@]}" --logdir ld7 --quiet -- true || fail "default run names"
n=$(ls ld7/plugins/profile | wc -l)
[ "$n" -eq 2 ] || fail "two sessions without --run: $n runs: $(ls ld7/plugins/profile)"

# Arguments, environment and exit status pass through.
out=$("${tbp[@]}" --logdir ld4 --quiet -- sh -c 'printf "%s|" "$@"; echo "$FOO"' argv0 "a b" c 2>/dev/null)
[ "$out" = "a b|c|bar" ] || [ "$out" = "a b|c|" ] || fail "arguments: '$out'"
out=$(FOO=bar "${tbp[@]}" --logdir ld4 --quiet --force -- sh -c 'echo "$FOO"' 2>/dev/null)
[ "$out" = "bar" ] || fail "environment: '$out'"
env_out=$("${tbp[@]}" --logdir ld4 --quiet --force --trace cuda,nvtx --buffer-mb 8 --delay 0.5 -- \
  sh -c 'echo "$CUDA_INJECTION64_PATH;$NVTX_INJECTION64_PATH;$TBEXPORT_OPTIONS"' 2>/dev/null)
case "$env_out" in
  /*libtbexport_inject.so\;/*libtbexport_inject.so\;*trace=3*buffer_mb=8*) ;;
  *) fail "injection environment: '$env_out'" ;;
esac
case "$env_out" in *delay=0.5*) ;; *) fail "delay not passed: '$env_out'" ;; esac
case "$env_out" in *flush_ms=1000*) ;; *) fail "default flush period not passed: '$env_out'" ;; esac
env_out=$("${tbp[@]}" --logdir ld4 --quiet --force --flush-period 250 -- sh -c 'echo "$TBEXPORT_OPTIONS"' 2>/dev/null)
case "$env_out" in *flush_ms=250\;*) ;; *) fail "--flush-period 250 not passed: '$env_out'" ;; esac
"${tbp[@]}" --logdir ld4 --flush-period 0 -- true 2>err.txt
[ $? -eq 2 ] || fail "--flush-period 0: want status 2"
grep -q -- "--flush-period: expected milliseconds" err.txt || fail "--flush-period 0: message: $(cat err.txt)"
env_out=$("${tbp[@]}" --logdir ld4 --quiet --force --trace cuda -- sh -c 'echo "[$NVTX_INJECTION64_PATH]"' 2>/dev/null)
[ "$env_out" = "[]" ] || fail "--trace cuda still injects NVTX: '$env_out'"
printf 'echo "no #! line: $1"\n' >nosb && chmod +x nosb
out=$("${tbp[@]}" --logdir ld4 --quiet --force -- ./nosb x 2>/dev/null)
[ "$out" = "no #! line: x" ] || fail "script without #! line: '$out' (a shell runs it with /bin/sh)"
"${tbp[@]}" --logdir ld4 --quiet --force -- sh -c 'exit 7' 2>/dev/null
[ $? -eq 7 ] || fail "exit status not passed through"
"${tbp[@]}" --logdir ld4 --quiet --force -- sh -c 'kill -KILL $$' 2>/dev/null
[ $? -eq 137 ] || fail "death by signal: want 137"

# A signal sent to tbexport reaches the command.
"${tbp[@]}" --logdir ld5 --quiet -- sleep 30 2>/dev/null &
tpid=$!
sleep 0.5
kill -TERM $tpid
wait $tpid
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM forwarding: status $rc, want 143"
[ -n "$(find ld5 -name '*.xplane.pb')" ] || fail "SIGTERM: run not written"

# A process that cannot collect (here: libcupti not loadable) says why, and
# the run says it instead of "the program never initialized CUDA".  The
# injection is triggered by hand (python3 ctypes), as no driver will call
# it here; skipped in sanitizer builds (their runtime must load first).
inj=$("${tbp[@]}" --logdir ld9 --run probe --quiet -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null)
if command -v python3 >/dev/null && [ -f "$inj" ] && ! ldd "$inj" 2>/dev/null | grep -q 'lib[at]san'; then
  # (a forked child that reaches the injection starts its own session: two notes)
  TBEXPORT_CUPTI_LIB=/nonexistent/libcupti.so "${tbp[@]}" --logdir ld9 --run nocupti -- python3 -c '
import ctypes, os
lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
lib.InitializeInjection()
pid = os.fork()
if pid == 0:
    lib.InitializeInjection()
    os._exit(0)
os.waitpid(pid, 0)' 2>err.txt
  rc=$?
  [ $rc -eq 0 ] || fail "no libcupti: status $rc: $(cat err.txt)"
  grep -q "the collector could not start (pid [0-9]*: cannot load TBEXPORT_CUPTI_LIB=/nonexistent" err.txt ||
    fail "no libcupti: the cause was not reported: $(cat err.txt)"
  [ "$(grep -o 'pid [0-9]*: cannot load' err.txt | sort -u | wc -l)" -eq 2 ] ||
    fail "no libcupti: the forked child did not try on its own: $(cat err.txt)"
  gzip -dc ld9/plugins/profile/nocupti/*.trace.json.gz | grep -q "collector could not start" ||
    fail "no libcupti: the run does not say why"
  [ -z "$(find ld9 -name '.tbexport-spool*')" ] || fail "no libcupti: spool folder left behind"
fi

# A profiled run end to end without a GPU: test/stress/collect_fake_libcupti.c
# stands in for libcupti (TBEXPORT_CUPTI_LIB), and the program, a Python script,
# loads the injection library as the driver would, makes its "GPU activity"
# through the fake, marks its steps with libtbexport's tbe_profiler_step
# (which reaches the injected collector), and waits until the clock has
# passed each record's time before going on.  Modes: "loop" (4 steps, each
# with a 1 ms "train_step" range 1 ms after its mark, holding a launch and
# a 0.5 ms kernel) and "capture" (the loop, then a 5 ms range "profile"
# with a 1 ms kernel, a 1 ms kernel launched at its end that runs 0.8 ms
# past it, CUPTI overhead before, inside, across its end and after).  Each
# run is read as the user reads it, `tbexport summary --logdir DIR RUN`
# (its Chrome JSON), and, for the steps, from its XSpace too.
fake="$(dirname "$tb")/libcollect_fake_libcupti.so"
libtbe="$(dirname "$tb")/libtbexport.so"
[ -f "$fake" ] || fail "fake libcupti not built next to tbexport: $fake"
if command -v python3 >/dev/null && [ -f "$inj" ] && ! ldd "$inj" 2>/dev/null | grep -q 'lib[at]san'; then
  cat >drv.py <<'PY'
import ctypes, os, sys, time
inj = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
inj.InitializeInjection()  # as the CUDA driver does at cuInit
fake = ctypes.CDLL(os.environ["TBEXPORT_CUPTI_LIB"])
tbe = ctypes.CDLL(os.environ["TBE_TEST_LIBTBEXPORT"])
fake.fake_cupti_now.restype = ctypes.c_uint64
MS = 1000000
def at(base, ms): return ctypes.c_uint64(base + int(ms * MS))
def wait_past(t):  # until the clock has passed t (records are never in the future)
    while fake.fake_cupti_now() <= t: time.sleep(0.0005)
def record(ok, what):
    if not ok: sys.exit("the fake did not record " + what)
mode = sys.argv[1]
b = fake.fake_cupti_now() + MS
record(fake.fake_cupti_overhead(at(b, 0), at(b, 5)), "overhead")
record(fake.fake_cupti_range(100, at(b, 0), at(b, 5), b"setup", None), "setup")
wait_past(b + 6 * MS)
for i in range(4):
    rc = tbe.tbe_profiler_step()
    if rc != 0: sys.exit("tbe_profiler_step: %d" % rc)
    t = fake.fake_cupti_now() + MS  # this step's records, 1 ms after its mark
    record(fake.fake_cupti_range(i + 1, at(t, 0), at(t, 1), b"train_step", None), "train_step")
    record(fake.fake_cupti_api(i + 1, at(t, 0.1), at(t, 0.2)), "launch")
    record(fake.fake_cupti_kernel(i + 1, at(t, 0.3), at(t, 0.8), b"sgd"), "kernel")
    wait_past(t + 2 * MS)
if mode == "capture":
    b = fake.fake_cupti_now() + MS
    fake.fake_cupti_overhead(at(b, -0.5), at(b, -0.3))  # before
    record(fake.fake_cupti_range(50, at(b, 0), at(b, 5), b"profile", b"loop"), "profile")
    fake.fake_cupti_api(10, at(b, 1), at(b, 1.1))
    fake.fake_cupti_kernel(10, at(b, 1.5), at(b, 2.5), b"inside")
    fake.fake_cupti_overhead(at(b, 2), at(b, 2.2))      # inside: 0.2 ms
    fake.fake_cupti_api(11, at(b, 4.5), at(b, 4.6))
    fake.fake_cupti_kernel(11, at(b, 4.8), at(b, 5.8), b"late")  # launched inside, ends after
    fake.fake_cupti_overhead(at(b, 4.9), at(b, 5.3))    # across the end: 0.1 ms inside
    fake.fake_cupti_overhead(at(b, 10), at(b, 15))      # after
    wait_past(b + 16 * MS)
PY
  export TBEXPORT_CUPTI_LIB="$fake" TBE_TEST_LIBTBEXPORT="$libtbe"
  steps_of() { # the Steps table of run $1 as "num=time/kernels ..."
    "$tb" summary --logdir ldF "$1" 2>&1 |
      sed -n '/^Steps (/,/^$/p' | awk 'NR>3 && NF {printf "%s=%s/%s ", $1, $2, $6}'
  }
  xsteps_of() { # the same from its XSpace
    "$tb" summary ldF/plugins/profile/"$1"/*.xplane.pb 2>&1 |
      sed -n '/^Steps (/,/^$/p' | awk 'NR>3 && NF {printf "%s=%s/%s ", $1, $2, $6}'
  }
  "${tbp[@]}" --logdir ldF --run marked -- python3 drv.py loop 2>err.txt
  rc=$?
  [ $rc -eq 0 ] || fail "fake CUPTI: status $rc: $(cat err.txt)"
  grep -q "kernels 4, copies 0, memsets 0, API calls 4, NVTX ranges 5, marks 0, steps 4$" err.txt ||
    fail "fake CUPTI: the run's counts: $(cat err.txt)"
  case "$(steps_of marked)" in
    0=*/1\ 1=*/1\ 2=*/1\ 3=*/1\ ) ;;
    *) fail "tbe_profiler_step under tbexport -- CMD: steps: '$(steps_of marked)'" ;;
  esac
  [ "$(xsteps_of marked)" = "$(steps_of marked)" ] || fail "marked steps: XSpace: '$(xsteps_of marked)'"
  "${tbp[@]}" --logdir ldF --run ranged --steps nvtx:train_step -- python3 drv.py loop 2>err.txt ||
    fail "--steps nvtx:train_step: $(cat err.txt)"
  [ "$(steps_of ranged)" = "0=1.000ms/1 1=1.000ms/1 2=1.000ms/1 3=1.000ms/1 " ] ||
    fail "--steps nvtx:train_step wins over the marks: '$(steps_of ranged)'"
  [ "$(xsteps_of ranged)" = "$(steps_of ranged)" ] || fail "--steps: XSpace: '$(xsteps_of ranged)'"
  "${tbp[@]}" --logdir ldF --run kept --steps nvtx:step@loop -- python3 drv.py loop 2>err.txt ||
    fail "--steps without a match: $(cat err.txt)"
  [ "$(grep -c -- '--steps' err.txt)" -eq 1 ] &&
    grep -q "^tbexport: pid [0-9]*: --steps nvtx:step@loop: no NVTX range or user annotation has that name in that domain; the most frequent top-level ranges are 'train_step' (4), 'setup' (1); the 4 steps found otherwise are kept$" err.txt ||
    fail "--steps without a match: message: $(cat err.txt)"
  "$tb" summary --logdir ldF kept 2>&1 | grep -q "^warning: .*--steps nvtx:step@loop: no NVTX range" ||
    fail "--steps without a match: the run does not say it"
  # The capture range bounds everything: wall 5.8 ms (the range and the
  # kernel launched in it), 2 kernels, busy 2 of 5.8 ms, overhead 0.3 ms
  # (the rest left out), nothing of the loop.
  "${tbp[@]}" --logdir ldF --run cap --capture-range nvtx:profile@loop -- python3 drv.py capture 2>err.txt ||
    fail "--capture-range: $(cat err.txt)"
  "$tb" summary --logdir ldF cap >sum.txt 2>&1
  grep -q "^wall 5.800ms, 1 GPU, 2 kernels" sum.txt || fail "--capture-range: wall: $(head -3 sum.txt)"
  grep -q "^GPU busy  *2.000ms  34.5%" sum.txt || fail "--capture-range: GPU busy: $(cat sum.txt)"
  grep -q "^profiler: overhead 300.000us" sum.txt || fail "--capture-range: overhead: $(cat sum.txt)"
  grep -q "GPU busy 34.5%; kernels 2, copies 0, memsets 0, API calls 2, NVTX ranges 1," err.txt ||
    fail "--capture-range: the run's counts: $(cat err.txt)"
  grep -q "CUPTI overhead 0.300 ms" err.txt || fail "--capture-range: overhead said: $(cat err.txt)"
  grep -q "Activity buffer request" sum.txt && fail "--capture-range: overhead shown as the program's: $(cat sum.txt)"
  unset TBEXPORT_CUPTI_LIB TBE_TEST_LIBTBEXPORT
fi

# A signal sent to tbexport's whole process group (timeout, kill -PGID)
# reaches the program once: outside a terminal's foreground the program has
# a group of its own and tbexport forwards to it.
if command -v setsid >/dev/null && command -v python3 >/dev/null; then
  setsid "${tbp[@]}" --logdir ld8 --quiet -- python3 -c '
import os, signal, sys, time
n = 0
def h(s, f):
    global n
    n += 1
signal.signal(signal.SIGTERM, h)
open("ready", "w").close()
t = time.time()
while not os.path.exists("stop") and time.time() - t < 20:
    time.sleep(0.02)
open("count", "w").write(str(n))
' 2>/dev/null &
  tpid=$!
  for _ in $(seq 100); do [ -e ready ] && break; sleep 0.05; done
  [ -e ready ] || fail "group signal: the program did not start"
  kill -TERM -- "-$tpid" || fail "group signal: kill -PGID failed"
  sleep 0.5
  touch stop
  wait $tpid
  rc=$?
  [ $rc -eq 0 ] || fail "group signal: status $rc"
  [ "$(cat count 2>/dev/null)" = 1 ] || fail "group signal: the program got SIGTERM $(cat count 2>/dev/null) times, want 1"
fi

# Bad usage: status 2.
"${tbp[@]}" --logdir ld6 -- 2>/dev/null
[ $? -eq 2 ] || fail "no command after --: want 2"
"${tbp[@]}" --logdir ld6 --capture-range bogus -- true 2>/dev/null
[ $? -eq 2 ] || fail "bad --capture-range: want 2"
"${tbp[@]}" --logdir ld6 --delay -1 -- true 2>/dev/null
[ $? -eq 2 ] || fail "bad --delay: want 2"
"${tbp[@]}" --logdir ld6 --run ../x -- true 2>/dev/null
[ $? -eq 2 ] || fail "bad --run: want 2"
"${tbp[@]}" --logdir -- true 2>err.txt
[ $? -eq 2 ] || fail "--logdir without a value: want 2"
grep -q "logdir needs a value" err.txt || fail "--logdir without a value: message: $(cat err.txt)"
[ ! -e -- ] || fail "--logdir --: a directory named '--' was made"
"${tbp[@]}" --logdir ld6 --capture-range nvtx:step@train --quiet -- true 2>/dev/null || fail "nvtx capture range"
"${tbp[@]}" --logdir ld6 --capture-range nvtx:step --trace cuda -- true 2>err.txt
[ $? -eq 2 ] || fail "nvtx capture range without nvtx in --trace: want 2"
grep -q "needs nvtx in --trace" err.txt || fail "capture range without nvtx: message: $(cat err.txt)"
# --steps: checked like --capture-range (status 2, one line), needs nvtx.
for arg in cudaProfilerApi nvtx: nvtx:x@ step; do
  "${tbp[@]}" --logdir ld6 --steps "$arg" -- touch ran_steps.txt 2>err.txt
  [ $? -eq 2 ] || fail "bad --steps '$arg': want 2"
  [ "$(wc -l <err.txt)" -eq 1 ] && grep -q "expected nvtx:NAME\[@DOMAIN\], got '$arg'" err.txt ||
    fail "bad --steps '$arg': message: $(cat err.txt)"
done
[ ! -e ran_steps.txt ] || fail "bad --steps: the program was started"
"${tbp[@]}" --logdir ld6 --steps nvtx:train_step --trace cuda -- true 2>err.txt
[ $? -eq 2 ] || fail "--steps without nvtx in --trace: want 2"
grep -q "steps nvtx:... needs nvtx in --trace" err.txt || fail "--steps without nvtx: message: $(cat err.txt)"
"${tbp[@]}" --logdir ld6 --steps nvtx:train_step@loop --quiet -- true 2>/dev/null || fail "--steps nvtx:NAME@DOMAIN"
"${tbp[@]}" --logdir ld6 --force --steps nvtx:train_step -- true 2>err.txt || fail "--steps nvtx:NAME"
grep -q "marks 0, steps 0$" err.txt || fail "--steps: the summary does not count steps: $(cat err.txt)"
"$tb" -- --help >/dev/null 2>&1
"$tb" profile --help | grep -q "capture-range" || fail "profile --help"
"$tb" profile --help | grep -q -- "--steps nvtx:NAME\[@DOMAIN\]" || fail "profile --help lacks --steps"
echo "test_profile: all checks passed"
