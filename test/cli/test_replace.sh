#!/usr/bin/env bash
# CLI tests of replacing a run (`tbexport import --force`, `diff`): all or
# nothing, nothing lost, nothing left behind.
# - A disk that fills during `import --force` (a small tmpfs, 0 to 160 KiB
#   left): exit 1 with one line, and the run is byte-identical to what it was,
#   no hidden file left; with room, the new run.  Mounting needs root (or
#   CAP_SYS_ADMIN): where it is not permitted this part is skipped, and says so.
# - `import --force` killed (SIGKILL) at random moments: every file under a
#   final name is complete (the old run's or the new one's; event files hold
#   their records whole), and the next import leaves no temporary file.
# - 40 `import --force` of one run leave one summary events file; a repeated
#   `diff` one comparison file; another host's summary is kept.
# - Concurrent `import --force` of two different traces into one run: the
#   XSpace and the Chrome JSON always come from the same trace.
# - The same file named twice (or by two paths) is refused with one line.
# usage: test_replace.sh TBEXPORT_BINARY TEST_DATA_DIR
set -u
bin=$1 data=$2
work=$(mktemp -d)
mnt=$work/mnt
trap 'umount "$mnt" 2>/dev/null; rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

A=$data/kineto/h200_cnn_fp32.pt.trace.json
B=$data/kineto/h200_cnn_bf16.pt.trace.json
imp() { "$bin" import "$@" --run r --host h --quiet; }
# reference runs of A and B
imp "$A" --logdir "$work/refA" >/dev/null || fail "reference A"
imp "$B" --logdir "$work/refB" >/dev/null || fail "reference B"
prof=plugins/profile/r
cmp -s "$work/refA/$prof/h.xplane.pb" "$work/refB/$prof/h.xplane.pb" && fail "A and B give the same XSpace"

# hidden LOG: temporary and lock files below LOG
hidden() { find "$1" \( -name '.tbexport-tmp-*' -o -name '.tbexport.lock' \) | wc -l; }
# from LOG FILE: which reference FILE (plugins/profile/r/...) is, A or B (or "?")
from() {
  if cmp -s "$1/$prof/$2" "$work/refA/$prof/$2"; then echo A
  elif cmp -s "$1/$prof/$2" "$work/refB/$prof/$2"; then echo B
  else echo "?"; fi
}
# summary_ok FILE: a complete run summary (whole records, the summary tags)
summary_ok() {
  local out
  out=$("$bin" inspect "$1" 2>&1) || return 1
  ! grep -q "ends inside a record" <<<"$out" && grep -q "summary/wall_time_ms" <<<"$out"
}

# 1. a full disk during the replacement
mkdir -p "$mnt"
if mount -t tmpfs -o size=1m tmpfs "$mnt" 2>"$work/mount.err"; then
  log=$mnt/log
  imp "$A" --logdir "$log" >/dev/null || fail "disk full: first import"
  cp -a "$log" "$work/saved"
  nfail=0
  for kib in 0 4 16 36 48 100 160; do
    rm -f "$mnt/filler"
    avail=$(df --output=avail -B1 "$mnt" | tail -1)
    fill=$((avail - kib * 1024))
    [ $fill -gt 0 ] && head -c $fill /dev/zero >"$mnt/filler" 2>/dev/null
    imp "$B" --logdir "$log" --force >"$work/out" 2>"$work/err"
    rc=$?
    if [ $rc -eq 0 ]; then
      [ "$(from "$log" h.xplane.pb)$(from "$log" h.trace.json.gz)" = BB ] || fail "disk full ($kib KiB): exit 0 but not the new run"
      break
    fi
    nfail=$((nfail + 1))
    [ $rc -eq 1 ] || fail "disk full ($kib KiB): exit $rc"
    [ "$(wc -l <"$work/err")" -eq 1 ] || fail "disk full ($kib KiB): stderr $(cat "$work/err")"
    grep -qi "no space left on device" "$work/err" || fail "disk full ($kib KiB): message $(cat "$work/err")"
    diff -r "$work/saved" "$log" >"$work/diff" || fail "disk full ($kib KiB): the run changed: $(cat "$work/diff")"
  done
  [ $nfail -ge 5 ] || fail "disk full: only $nfail imports met a full disk"
  rm -f "$mnt/filler"
  imp "$B" --logdir "$log" --force >/dev/null || fail "disk full: import with room"
  [ "$(from "$log" h.xplane.pb)$(from "$log" h.trace.json.gz)" = BB ] || fail "disk full: not the new run after"
  [ "$(ls "$log/r" | wc -l)" -eq 3 ] || fail "disk full: $(ls "$log/r")" # summary, link, session
  [ "$(hidden "$log")" -eq 0 ] || fail "disk full: hidden files left"
  umount "$mnt"
  ok "a full disk during import --force ($nfail failed imports) leaves the run byte-identical"
else
  echo "SKIP: disk-full replacement not run: cannot mount a tmpfs here ($(head -1 "$work/mount.err")); needs root or CAP_SYS_ADMIN"
fi

# 2. SIGKILL during import --force, at random moments
log=$work/log2
imp "$A" --logdir "$log" >/dev/null || fail "kill: first import"
t0=$(date +%s%N)
imp "$B" --logdir "$work/timing" >/dev/null
span=$((($(date +%s%N) - t0) / 1000 + 2000)) # microseconds, with the start-up
seed=${TBE_STRESS_SEED:-$$}
RANDOM=$seed
killed=0 old=0 new=0 mixed=0
for round in $(seq 1 30); do
  # (the binary itself, not the shell function: the kill must reach it)
  "$bin" import "$B" --logdir "$log" --run r --host h --quiet --force >/dev/null 2>&1 &
  pid=$!
  delay=$((RANDOM * 32768 + RANDOM))
  delay=$((delay % span))
  sleep "$(printf '0.%06d' "$delay")"
  kill -KILL $pid 2>/dev/null && killed=$((killed + 1))
  wait $pid 2>/dev/null
  for f in h.xplane.pb h.trace.json.gz; do
    [ "$(from "$log" $f)" != "?" ] || fail "kill round $round (seed $seed): $f is neither run's"
  done
  case "$(from "$log" h.xplane.pb)$(from "$log" h.trace.json.gz)" in
    AA) old=$((old + 1)) ;;
    BB) new=$((new + 1)) ;;
    *) mixed=$((mixed + 1)) ;; # killed inside the commit (a few renames long)
  esac
  n=0
  for s in "$log"/r/events.out.tfevents.*.h.tbexport-summary; do
    n=$((n + 1))
    summary_ok "$s" || fail "kill round $round (seed $seed): incomplete $s"
  done
  [ $n -ge 1 ] || fail "kill round $round: no summary"
  imp "$A" --logdir "$log" --force >/dev/null || fail "kill round $round: the next import"
  [ "$(hidden "$log")" -eq 0 ] || fail "kill round $round: hidden files left: $(find "$log" -name '.tbexport*')"
  [ "$(ls "$log/r" | wc -l)" -eq 3 ] || fail "kill round $round: $(ls "$log/r")"
  [ "$(ls "$log"/r/*.h.tbexport-hparams | wc -l)" -eq 1 ] || fail "kill round $round: $(ls "$log/r")"
done
ok "SIGKILL during import --force: $killed kills in 30 rounds (seed $seed; then the old run $old times, the new one $new, a mix $mixed), no partial file under a final name"

# 3. --force keeps one summary; diff one comparison
log=$work/log3
imp "$A" --logdir "$log" >/dev/null || fail "one summary: first import"
"$bin" import "$A" --logdir "$log" --run r --host other --quiet >/dev/null || fail "one summary: other host"
for i in $(seq 1 40); do imp "$A" --logdir "$log" --force >/dev/null || fail "re-import $i"; done
# two hosts: a TensorBoard run each (r/h/, r/other/), the job's series in r/
[ "$(ls "$log"/r/h/*.h.tbexport-summary | wc -l)" -eq 1 ] || fail "40 re-imports: $(ls -R "$log/r")"
[ "$(ls "$log"/r/other/*.other.tbexport-summary | wc -l)" -eq 1 ] || fail "40 re-imports: the other host's summary"
[ "$(ls "$log"/r/*.r.tbexport-job | wc -l)" -eq 1 ] || fail "40 re-imports: the job: $(ls "$log/r")"
"$bin" inspect "$log/r" >"$work/out" 2>&1
[ "$(grep -cE "^ +summary/wall_time_ms +count 1 " "$work/out")" -eq 3 ] ||
  fail "inspect after 40 re-imports (one point each in h, other and the job): $(grep -E "^run|wall_time" "$work/out")"
"$bin" import "$B" --logdir "$log" --run r2 --host h --quiet >/dev/null || fail "diff: second run"
for i in 1 2 3 4 5; do "$bin" diff --logdir "$log" --quiet r r2 >/dev/null 2>&1 || fail "diff $i"; done
[ "$(ls "$log"/r2/*.r.tbexport-diff | wc -l)" -eq 1 ] || fail "5 diffs: $(ls "$log/r2")"
[ "$(ls "$log/r2" | wc -l)" -eq 4 ] || fail "5 diffs: $(ls "$log/r2")" # summary, diff, link, session
# the report in the base run too, replaced like the new run's
[ "$(ls "$log"/r/*.r2.tbexport-diff | wc -l)" -eq 1 ] || fail "5 diffs, base run: $(ls "$log/r")"
ok "40 import --force leave one summary per host; 5 diffs one comparison in each run"

# 4. concurrent --force imports of two traces into one run
log=$work/log4
for round in $(seq 1 8); do
  for k in 1 2 3; do imp "$A" --logdir "$log" --force >/dev/null || fail "concurrent A"; done &
  pa=$!
  for k in 1 2 3; do imp "$B" --logdir "$log" --force >/dev/null || fail "concurrent B"; done &
  pb=$!
  wait $pa $pb
  pair="$(from "$log" h.xplane.pb)$(from "$log" h.trace.json.gz)"
  case $pair in AA|BB) ;; *) fail "concurrent round $round: XSpace and JSON from $pair" ;; esac
  [ "$(ls "$log/r" | wc -l)" -eq 3 ] || fail "concurrent round $round: $(ls "$log/r")"
  # the link is always the committed JSON itself, whichever import won
  [ "$(stat -c %i "$log/r/h.pt.trace.json.gz")" = "$(stat -c %i "$log/plugins/profile/r/h.trace.json.gz")" ] ||
    fail "concurrent round $round: the link is not the JSON"
  [ "$(hidden "$log")" -eq 0 ] || fail "concurrent round $round: hidden files left"
done
ok "concurrent import --force: XSpace and JSON always of one trace"

# 5. one file named twice
log=$work/log5
ln -s "$(cd "$(dirname "$A")" && pwd)/$(basename "$A")" "$work/alias.json"
for args in "$A $A" "$A $work/alias.json" "$A $data/kineto/../kineto/h200_cnn_fp32.pt.trace.json"; do
  # shellcheck disable=SC2086
  "$bin" import $args --logdir "$log" --run r >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc -eq 2 ] || fail "named twice ($args): exit $rc"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "named twice: stderr $(cat "$work/err")"
  grep -q "count its events twice" "$work/err" || fail "named twice: message $(cat "$work/err")"
  [ ! -e "$log/r" ] && [ ! -e "$log/plugins" ] || fail "named twice: something written"
done
ok "a file named twice is refused with one line"

[ $fails -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "all replace tests passed"
