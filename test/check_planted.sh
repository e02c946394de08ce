#!/usr/bin/env bash
# The structure checks can fail: on a copy of the tree, each planted defect
# makes its checker exit 1 and name it, and the unplanted copy passes.
#   - check_cycles: cli/progress.h and cli/cli.h include each other;
#   - check_layers cli-headers: the CLI includes a private header;
#   - check_layers no-print: a library file writes to stderr;
#   - check_layers import-no-collect: an importer includes a collector header;
#   - check_layers import-no-export: an importer includes an exporter header.
# usage: check_planted.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check_planted: FAIL: $*" >&2; exit 1; }
fresh() { rm -rf "$work/t"; mkdir -p "$work/t"; cp -r "$src/src" "$src/include" "$work/t/"; }
# expect CHECKER-OUTPUT-PATTERN CMD...: CMD exits 1 and prints the pattern
expect() {
  local pat=$1 out rc=0
  shift
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" = 1 ] || fail "$* exited $rc on a planted defect: $out"
  grep -q -- "$pat" <<<"$out" || fail "$* did not name the defect ($pat): $out"
}

fresh
"$src/scripts/check_cycles" --rooms cli,common "$build" "$work/t" >/dev/null ||
  fail "check_cycles fails on the unplanted copy"
"$src/scripts/check_layers" cli-headers "$work/t" >/dev/null ||
  fail "check_layers cli-headers fails on the unplanted copy"
"$src/scripts/check_layers" import-no-collect "$work/t" >/dev/null ||
  fail "check_layers import-no-collect fails on the unplanted copy"
"$src/scripts/check_layers" import-no-export "$work/t" >/dev/null ||
  fail "check_layers import-no-export fails on the unplanted copy"

sed -i 's|#include "tbexport.h"|#include "cli/progress.h"\n#include "tbexport.h"|' "$work/t/src/cli/cli.h"
sed -i '0,/#include <stdint.h>/s||#include <stdint.h>\n#include "cli/cli.h"|' "$work/t/src/cli/progress.h"
grep -q 'cli/cli.h' "$work/t/src/cli/progress.h" || fail "could not plant the include cycle"
expect 'cycle: cli/cli <-> cli/progress' "$src/scripts/check_cycles" --rooms cli,common "$build" "$work/t"

fresh
sed -i 's|#include "cli/cli.h"|#include "cli/cli.h"\n#include "common/buf.h"|' "$work/t/src/cli/cmd_diff.c"
expect 'src/cli/cmd_diff.c:.*common/buf.h' "$src/scripts/check_layers" cli-headers "$work/t"

fresh
printf '\nvoid tbe__planted(void) { fputs("x", stderr); }\n' >> "$work/t/src/common/buf.c"
expect 'src/common/buf.c:.*prints (stderr)' "$src/scripts/check_layers" no-print "$work/t"
fresh
sed -i '0,/#include "import\/importer.h"/s||#include "import/importer.h"\n#include "collect/options.h"|' \
  "$work/t/src/import/spool.c"
grep -q 'collect/options.h' "$work/t/src/import/spool.c" || fail "could not plant the collector include"
expect 'src/import/spool.c:.*collect/options.h' "$src/scripts/check_layers" import-no-collect "$work/t"
fresh
sed -i '0,/#include "import\/importer.h"/s||#include "import/importer.h"\n#include "trace/exporter.h"|' \
  "$work/t/src/import/import.c"
grep -q 'trace/exporter.h' "$work/t/src/import/import.c" || fail "could not plant the exporter include"
expect 'src/import/import.c:.*trace/exporter.h' "$src/scripts/check_layers" import-no-export "$work/t"
echo "check_planted: a planted include cycle, private include in the CLI, print in the library, collector header and exporter header in an importer each fail their check"
