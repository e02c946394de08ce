#!/usr/bin/env bash
# test_ops.sh: framework operators of an unmodified program, without a GPU
# or PyTorch.
#
# Part 1, the Python start-up hook (src/collect/python/sitecustomize.py, as
# built beside the injection library) with a stand-in torch
# (test/data/faketorch): operator ranges are turned on when torch is
# imported, with or without shapes, never by synchronizing (which would
# initialize CUDA); the program's own sitecustomize still runs, once; the
# program's own profiler on that thread pauses ours and resumes it after; a
# torch that refuses is one line and the program goes on; a Python program
# without torch says so in its note; nothing changes without TBEXPORT_OPS.
#
# Part 2, `tbexport -- python3 PROG` with the stand-in libcupti
# (collect_fake_libcupti.c): the program's NVTX reaches the collector's own
# handlers, PyTorch's operator messages become operators, each kernel, copy
# and driver launch is attributed to the innermost operator open at its
# launch, backward operators link to their forward one, and the Chrome JSON
# reads as Kineto's (cpu_op with External id, Input Dims, Sequence number;
# cuda_driver; fwdbwd flows), also for an operator left open by a crash.
# usage: test_ops.sh TBEXPORT DATA_DIR
set -u
tb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }
bindir=$(cd "$(dirname "$tb")" && pwd)
hook=$bindir/python
[ -f "$hook/sitecustomize.py" ] || fail "no Python hook at $hook"
py=${TBE_TEST_PYTHON:-python3}
command -v "$py" >/dev/null || fail "no $py"
export PYTHONDONTWRITEBYTECODE=1

# ---- part 1: the hook alone ----
mkdir spool own
cat >prog1.py <<'EOF'
import json, os, sys
before = "torch" in sys.modules
import torch
from torch.autograd import profiler as p
out = {"before": before, "after_import": list(map(list, p.state["enabled"]))}
with p.profile():
    out["inside_own"] = list(map(list, p.state["enabled"]))
out["after_own"] = list(map(list, p.state["enabled"]))
out["own_ran"] = os.environ.get("OWN_SITECUSTOMIZE_RAN")
print(json.dumps(out))
EOF
cat >own/sitecustomize.py <<'EOF'
import os
os.environ["OWN_SITECUSTOMIZE_RAN"] = str(int(os.environ.get("OWN_SITECUSTOMIZE_RAN", "0")) + 1)
EOF
run_hook() { # MODE PROG -> stdout in out.json, stderr in err.txt
  env PYTHONPATH="$hook:$data/faketorch:$work/own" TBEXPORT_OPS="$1" TBEXPORT_SPOOL_DIR="$work/spool" \
    "$py" "$2" >out.json 2>err.txt
}
check() { # PY-EXPRESSION over o (out.json), MESSAGE
  "$py" -c "import json,sys; o=json.load(open('out.json')); sys.exit(0 if ($1) else 1)" ||
    fail "$2: $(cat out.json) $(cat err.txt)"
}
note_of() { cat spool/*.ops 2>/dev/null; }

run_hook 1 prog1.py || fail "hook: the program failed: $(cat err.txt)"
check 'o["after_import"] == [["NVTX", False]]' "ops on import (no shapes)"
check 'o["inside_own"] == [["KINETO", False]]' "the program's own profiler: ours paused"
check 'o["after_own"] == [["NVTX", False]]' "ours resumed after the program's profiler"
check 'o["own_ran"] == "1"' "the program's sitecustomize ran once"
[ ! -s err.txt ] || fail "hook: stderr not empty: $(cat err.txt)"
note_of | grep -q "^ok torch 0.0+fake$" || fail "hook: note: $(note_of)"
rm -f spool/*

run_hook shapes prog1.py || fail "hook (shapes): the program failed: $(cat err.txt)"
check 'o["after_import"] == [["NVTX", True]]' "ops with shapes"
note_of | grep -q "^ok shapes torch" || fail "hook (shapes): note: $(note_of)"
rm -f spool/*

run_hook "" prog1.py || fail "hook off: the program failed"
check 'o["after_import"] == [] and o["own_ran"] == "1"' "without TBEXPORT_OPS nothing but the program's sitecustomize"
[ -z "$(note_of)" ] || fail "hook off: a note was left"

FAKETORCH_BROKEN=1 run_hook 1 prog1.py || fail "a torch that refuses: the program failed: $(cat err.txt)"
check 'o["after_import"] == [] and o["inside_own"] == [["KINETO", False]]' "a refusing torch: the program's profiler works"
[ "$(wc -l <err.txt)" -eq 1 ] && grep -q "^tbexport: PyTorch's operators are not recorded: RuntimeError: Can't use NVTX profiler" err.txt ||
  fail "a refusing torch: one line: $(cat err.txt)"
note_of | grep -q "not recorded" || fail "a refusing torch: note: $(note_of)"
rm -f spool/*

echo 'print("no torch here")' >prog0.py
run_hook 1 prog0.py || fail "no torch: the program failed"
[ "$(cat out.json)" = "no torch here" ] || fail "no torch: output $(cat out.json)"
note_of | grep -q "^no-torch$" || fail "no torch: note: $(note_of)"
rm -f spool/*
echo "test_ops: the Python hook: on import, shapes, the program's own profiler and sitecustomize, refusals"

# ---- part 2: through the collector (stand-in libcupti) ----
fake=$bindir/libcollect_fake_libcupti.so
if [ ! -f "$fake" ]; then
  echo "test_ops: part 2 needs the collector (libcollect_fake_libcupti.so beside tbexport)" >&2
  grep -q "collector was not built" <("$tb" --logdir x -- true 2>&1) && exit 0
  fail "no $fake in a build with the collector"
fi
echo "test_ops: ok"
