#!/usr/bin/env bash
# CLI tests of path safety in every command that writes: hostile --run/--host
# names are refused with one line and create nothing; a hostile host name
# inside a trace (XSpace hostnames) only ever becomes a safe file name under
# the logdir; symlinks planted at an output name are never written through
# (refused, or with --force replaced by the file); symlinks planted in place
# of the directories tbexport creates (plugins/profile/<run>, <run>) are
# refused even with --force.  Then the matrix: a symlink (to a directory
# outside, to a file outside) at every component below the logdir that
# `import`, `diff` and `tbexport -- CMD` create or write through (plugins,
# profile, the run's two folders, the lock file, each output name, the
# summary and diff event names): refused with one line naming it, or for an
# output name with --force replaced itself; `tbexport -- CMD` whose host
# entry is taken by a link writes the next free run instead (one warning).  (The spool folder's name is not
# predictable; test_paths.c plants a link at the folder it makes.)  Every
# case checks that nothing outside the logdir changed.
# usage: test_paths.sh TBEXPORT_BINARY TEST_DATA_DIR
set -u
bin=$1 data=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

trace=$data/cli/small.trace.json
outside=$work/outside
mkdir -p "$outside"
printf KEEP >"$outside/target"
check_outside() {
  [ "$(cat "$outside/target")" = KEEP ] || fail "$1: outside target changed"
  [ "$(find "$outside" -mindepth 1 | wc -l)" -eq 1 ] || fail "$1: new files outside: $(find "$outside" -mindepth 1)"
}

# 1. hostile --run and --host: exit 2, one line naming the name, nothing created
for name in "../escape" "a/b" ".hidden" ".." "" "$(printf 'x\ty')"; do
  log=$work/log1
  "$bin" import "$trace" --logdir "$log" --run "$name" --host h >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc -eq 2 ] || fail "run '$name': exit $rc"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "run '$name': stderr $(cat "$work/err")"
  "$bin" import "$trace" --logdir "$log" --run r --host "$name" >"$work/out" 2>"$work/err"
  rc=$?
  [ $rc -eq 2 ] || fail "host '$name': exit $rc"
  grep -q "host name" "$work/err" || fail "host '$name': stderr $(cat "$work/err")"
  [ -z "$(find "$log" -type f 2>/dev/null)" ] || fail "'$name': files written"
done
check_outside "hostile names"
ok "hostile --run/--host refused, nothing written"

# 2. a hostile host name inside an XSpace: safe file names under the logdir
#    XSpace { planes { id: 1 name: "/host:CPU" } hostnames: H }
xspace() {
  python3 - "$1" "$2" <<'PY'
import sys
def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80]); v >>= 7
    return out + bytes([v])
def field(n, b):
    return varint(n << 3 | 2) + varint(len(b)) + b
plane = b"\x08\x01" + field(2, b"/host:CPU")
open(sys.argv[1], "wb").write(field(1, plane) + field(4, sys.argv[2].encode()))
PY
}
for host in "../../../escape" "/etc/passwd" ".dot" "a/../../b"; do
  log=$work/log2
  rm -rf "$log"
  xspace "$work/in.xplane.pb" "$host"
  out=$("$bin" import "$work/in.xplane.pb" --logdir "$log" --run r 2>"$work/err")
  rc=$?
  [ $rc -eq 0 ] || fail "trace host '$host': exit $rc: $(cat "$work/err")"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 5 ] || fail "trace host '$host': $out"
  while read -r f; do
    case "$f" in
      "$log"/plugins/profile/r/*|"$log"/r/*) ;;
      *) fail "trace host '$host': file $f" ;;
    esac
    rest=${f#"$log"/}
    case "/$rest/" in */../*|*/./*) fail "trace host '$host': dot component in $f" ;; esac
    [ -f "$f" ] || fail "trace host '$host': missing $f"
  done <<<"$out"
  [ "$(find "$log" -type f | wc -l)" -eq 6 ] || fail "trace host '$host': $(find "$log" -type f)" # the link counts once more; + the analysis
  [ "$(find "$work" -maxdepth 1 -type f | wc -l)" -eq 3 ] || fail "trace host '$host': stray files in $work"
done
check_outside "trace host"
ok "hostile host names inside a trace stay file names under the logdir"

# 3. a symlink at an output name: refused; with --force replaced, not followed
log=$work/log3
mkdir -p "$log/plugins/profile/r"
ln -s "$outside/target" "$log/plugins/profile/r/h.xplane.pb"
ln -s "$outside/new" "$log/plugins/profile/r/h.trace.json.gz"
"$bin" import "$trace" --logdir "$log" --run r --host h >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 1 ] || fail "symlink at output name: exit $rc"
[ -L "$log/plugins/profile/r/h.xplane.pb" ] || fail "symlink at output name: link replaced without --force"
check_outside "symlink without --force"
"$bin" import "$trace" --logdir "$log" --run r --host h --force >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 0 ] || fail "symlink at output name --force: exit $rc: $(cat "$work/err")"
for f in h.xplane.pb h.trace.json.gz; do
  p=$log/plugins/profile/r/$f
  [ -f "$p" ] && [ ! -L "$p" ] || fail "--force: $f is not a plain file"
done
check_outside "symlink with --force"
ok "symlinks at output names are never written through"

# 4. symlinked directories below the logdir: refused even with --force
for d in plugins/profile/r r plugins; do
  log=$work/log4
  rm -rf "$log"
  mkdir -p "$log/$(dirname "$d")"
  ln -s "$outside" "$log/$d"
  for force in "" --force; do
    "$bin" import "$trace" --logdir "$log" --run r --host h $force >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc -ne 0 ] || fail "symlinked $d $force: exit 0"
    [ "$(wc -l <"$work/err")" -eq 1 ] || fail "symlinked $d $force: stderr $(cat "$work/err")"
    grep -q "symbolic link" "$work/err" || fail "symlinked $d $force: message $(cat "$work/err")"
    check_outside "symlinked $d $force"
  done
done
ok "symlinked run directories are refused"

# 5. the matrix
trace2=$data/cli/small2.trace.json
now=$(date +%s)
cases=0
# comp TARGET_RUN: the components, one per line: "kind rel" (kind dir|out)
comps() {
  local r=$1 k
  printf 'dir plugins\ndir plugins/profile\ndir plugins/profile/%s\ndir %s\ndir .tbexport.lock\n' "$r" "$r"
  printf 'out plugins/profile/%s/h.xplane.pb\nout plugins/profile/%s/h.trace.json.gz\n' "$r" "$r"
  for k in 0 1 2 3; do
    printf 'out %s/events.out.tfevents.%010d.h.tbexport-summary\n' "$r" $((now + k))
    printf 'out %s/events.out.tfevents.%010d.base.tbexport-diff\n' "$r" $((now + k))
  done
}
for cmd in import import-force diff profile profile-force; do
  case $cmd in diff) target=r2 ;; *) target=r ;; esac
  while read -r kind rel; do
    for dest in "$outside" "$outside/target"; do
      log=$work/log5
      rm -rf "$log"
      # two runs to compare: base, and r2 (profile files only)
      "$bin" import "$trace" --logdir "$log" --run base --host h >/dev/null 2>&1 || fail "setup base"
      "$bin" import "$trace2" --logdir "$log" --run r2 --host h --format xplane,json >/dev/null 2>&1 || fail "setup r2"
      case $cmd in
        diff) case $rel in r2|r2/*events*diff|.tbexport.lock) ;; *) continue ;; esac ;;
        *) case $rel in r2*|*diff) continue ;; esac ;;
      esac
      rm -rf "${log:?}/$rel"
      mkdir -p "$log/$(dirname "$rel")"
      ln -s "$dest" "$log/$rel"
      case $cmd in
        import) "$bin" import "$trace" --logdir "$log" --run r --host h >"$work/out" 2>"$work/err" ;;
        import-force) "$bin" import "$trace" --logdir "$log" --run r --host h --force >"$work/out" 2>"$work/err" ;;
        diff) "$bin" diff --logdir "$log" base r2 >"$work/out" 2>"$work/err" ;;
        profile) "$bin" --empty-run --logdir "$log" --run r --host h --quiet -- true >"$work/out" 2>"$work/err" ;;
        profile-force) "$bin" --empty-run --logdir "$log" --run r --host h --quiet --force -- true >"$work/out" 2>"$work/err" ;;
      esac
      rc=$?
      what="$cmd, link at $rel -> $dest"
      cases=$((cases + 1))
      if [ "$kind" = out ] && [ "$cmd" = profile ] && [ "${rel#plugins/profile/}" != "$rel" ]; then
        # the program is never refused for a name: the host entry taken
        # (here by the link), the profile goes to the next free run, the
        # link untouched
        [ $rc -eq 0 ] || fail "$what: exit $rc: $(cat "$work/err")"
        [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "already has outputs for host h .*: this profile is run 'r_2'" "$work/err" ||
          fail "$what: message $(cat "$work/err")"
        [ -L "$log/$rel" ] && [ -f "$log/plugins/profile/r_2/h.xplane.pb" ] || fail "$what: $(find "$log" | sort)"
      elif [ "$kind" = dir ] || { [ "$cmd" != import-force ] && [ "$cmd" != profile-force ] && [ "$cmd" != diff ]; }; then
        # refused: exit 1, one line, naming the component
        [ $rc -eq 1 ] || fail "$what: exit $rc"
        [ "$(wc -l <"$work/err")" -eq 1 ] || fail "$what: stderr is not one line: $(cat "$work/err")"
        if [ "$kind" = dir ]; then
          grep -qF "$log/$rel is a symbolic link" "$work/err" || fail "$what: message $(cat "$work/err")"
        else
          grep -qE "already (exists|has outputs)" "$work/err" || fail "$what: message $(cat "$work/err")"
        fi
        [ -L "$log/$rel" ] || fail "$what: the link was removed"
      else
        # an output name with --force (diff always replaces): the link itself replaced
        [ $rc -eq 0 ] || fail "$what: exit $rc: $(cat "$work/err")"
        case $rel in
          *events*) [ -z "$(find "$log/$target" -type l)" ] || fail "$what: links left: $(find "$log/$target" -type l)" ;;
          *) [ -f "$log/$rel" ] && [ ! -L "$log/$rel" ] || fail "$what: not replaced by a file" ;;
        esac
      fi
      check_outside "$what"
    done
  done < <(comps "$target")
done
ok "symlink matrix: $cases cases (import, import --force, diff, tbexport --empty-run -- true, with --force), nothing written outside"

[ $fails -eq 0 ] || { echo "$fails failure(s)" >&2; exit 1; }
echo "all path tests passed"
