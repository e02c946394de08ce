#!/usr/bin/env bash
# test_op_table.sh: the operator table of `summary` and `diff` (issue 27)
# against figures computed here, independently, from the traces' own JSON.
#
#   - the Kineto pair (test/data/kineto: operators with shapes, External
#     ids, kernels): for every operator, calls, self CUDA (the GPU work
#     whose External id is the operator's), CUDA total (its own and every
#     operator nested in it on its thread, each call summed, as
#     key_averages), the activities it launched and the list of what it
#     launched (names, calls; the first five by time, the rest summed) equal
#     what check.py computes from the JSON; the same by name and input
#     shapes with --group-by shape (shapes as json.dumps writes them); the
#     CPU figures are those of before;
#   - the Nsight Systems H100 export (operators without shapes): the same,
#     computed from the Chrome JSON tbexport writes of it; --group-by shape
#     falls back to names;
#   - sort keys: cuda, self-cuda, self-cpu, calls, total, avg, max order the
#     operator table by their figure; the default is CUDA total for the
#     operators and total for the kernels; a wrong key is one line;
#   - every format: JSON through json, CSV through csv (every row as long
#     as its section's header, the operators' figures equal the JSON's),
#     Markdown's operator table, the terminal table within its width;
#   - diff of the pair: each operator's CUDA totals are the two summaries'
#     figures, the delta their difference, the table sorted by |delta|;
#     --group-by shape pairs (name, shapes);
#   - a run collected through the stand-in libcupti and torch (the program
#     of test_ops.sh): the figures worked out by hand from the program
#     (each kernel 8 us), by shape too; the TensorBoard series
#     ops/<name>/cuda_ms read back (tbexport inspect --dump) equal the
#     summary's CUDA totals, and summary/top_operators is there.
# usage: test_op_table.sh TBEXPORT DATA_DIR
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
D=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
py=${TBE_TEST_PYTHON:-python3}
command -v "$py" >/dev/null || { echo "FAIL: no $py"; exit 1; }
export TBEXPORT_CACHE_DIR=$work/cache

cat >check.py <<'EOF'
"""check.py TRACE_JSON SUMMARY_JSON [shape]: the operator table of the
summary (every row, --top 0) against the trace's own events."""
import collections, gzip, json, sys

def load(p):
    return json.load(gzip.open(p, "rt") if p.endswith(".gz") else open(p))

def ns(us):
    return round(float(us) * 1000)

def expected(events, by_shape):
    ext = {}  # External id -> the operator event's index, or None for an annotation
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            x = e.get("args", {}).get("External id")
            if x and x not in ext:
                ext[x] = id(e) if e.get("cat") == "cpu_op" else None
    own = collections.defaultdict(int)      # id(op event) -> its own GPU time
    count = collections.defaultdict(int)
    names = collections.defaultdict(lambda: collections.Counter())
    times = collections.defaultdict(lambda: collections.Counter())
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        o = ext.get(e.get("args", {}).get("External id"))
        if o is None:
            continue
        d = ns(e.get("dur", 0))
        own[o] += d
        count[o] += 1
        if e["cat"] == "kernel":
            n = e["name"]
        elif e["cat"] == "gpu_memset":
            n = "Memset"
        else:  # "Memcpy HtoD (Pinned -> Device)" -> "Memcpy HtoD"
            n = " ".join(e["name"].split()[:2])
        names[o][n] += 1
        times[o][n] += d
    def key(e):
        if not by_shape:
            return e["name"]
        dims = e.get("args", {}).get("Input Dims")
        return (e["name"], json.dumps(dims) if dims is not None else "")
    rows = {}
    def row(k):
        return rows.setdefault(k, {"calls": 0, "self": 0, "total": 0, "kernels": 0, "cpu": 0,
                                   "names": collections.Counter(), "times": collections.Counter()})
    by_thread = collections.defaultdict(list)
    for e in ops:
        by_thread[(e["pid"], e["tid"])].append(e)
    for lst in by_thread.values():
        lst.sort(key=lambda e: (ns(e["ts"]), -ns(e.get("dur", 0))))
        stack = []  # [end, call total, key]
        def close():
            end, tot, k = stack.pop()
            row(k)["total"] += tot
            if stack:
                stack[-1][1] += tot
        for e in lst:
            st = ns(e["ts"])
            while stack and stack[-1][0] <= st:
                close()
            k = key(e)
            r = row(k)
            r["calls"] += 1
            r["cpu"] += ns(e.get("dur", 0))
            r["self"] += own[id(e)]
            r["kernels"] += count[id(e)]
            r["names"].update(names[id(e)])
            r["times"].update(times[id(e)])
            stack.append([st + ns(e.get("dur", 0)), own[id(e)], k])
        while stack:
            close()
    return rows

trace, summary = load(sys.argv[1]), json.load(open(sys.argv[2]))
by_shape = len(sys.argv) > 3
want = expected(trace["traceEvents"], by_shape)
got = summary["cpu_ops"]
bad = []
if summary["cpu_ops_by"] != ("shape" if by_shape else "name"):
    bad.append("cpu_ops_by %r" % summary["cpu_ops_by"])
seen = set()
for r in got:
    k = (r["name"], r["shapes"]) if by_shape else r["name"]
    if k in seen:
        bad.append("%r twice" % (k,))
    seen.add(k)
    w = want.get(k)
    if w is None:
        bad.append("%r: not in the trace" % (k,))
        continue
    tol = w["kernels"] + 1  # microseconds with 3 decimals: 1 ns each
    for f, v in (("calls", w["calls"]), ("kernels", w["kernels"])):
        if r[f] != v:
            bad.append("%r %s %r, want %r" % (k, f, r[f], v))
    for f, v in (("self_cuda_ns", w["self"]), ("cuda_total_ns", w["total"])):
        if abs(r[f] - v) > tol * (4 if f == "cuda_total_ns" else 1):
            bad.append("%r %s %r, want %r" % (k, f, r[f], v))
    if abs(r["total_ns"] - w["cpu"]) > r["calls"] + 1:
        bad.append("%r total_ns %r, want %r" % (k, r["total_ns"], w["cpu"]))
    # the launched list: the first five by time (ties by name), the rest summed
    order = sorted(w["times"].items(), key=lambda x: (-x[1], x[0]))
    top = [n for n, _ in order[:5]]
    listed = [l["name"] for l in r["launched"]]
    times_ok = all(abs(l["total_ns"] - w["times"][l["name"]]) <= l["calls"] + 1 for l in r["launched"])
    if sorted(listed) != sorted(top) or [l["calls"] for l in r["launched"]] != [w["names"][n] for n in listed] \
            or not times_ok:
        bad.append("%r launched %r, want %r" % (k, [(l["name"][:30], l["calls"]) for l in r["launched"]],
                                                 [(n[:30], w["names"][n]) for n in top]))
    other = sum(w["names"][n] for n, _ in order[5:])
    if r["launched_other"]["calls"] != other:
        bad.append("%r launched_other %r, want %d" % (k, r["launched_other"], other))
missing = set(want) - seen
if missing:
    bad.append("rows missing: %r" % sorted(missing, key=str)[:5])
if summary["op_gpu_count"] != sum(w["kernels"] for w in want.values()):
    bad.append("op_gpu_count %r" % summary["op_gpu_count"])
for b in bad[:20]:
    print("  " + b)
print("  %d rows checked" % len(got))
sys.exit(1 if bad else 0)
EOF

K=$D/kineto
for f in h200_cnn_fp32 h200_cnn_bf16; do
  "$B" summary --no-cache --format json --top 0 "$K/$f.pt.trace.json" >"$f.json" 2>err || fail "summary $f: $(cat err)"
  "$py" check.py "$K/$f.pt.trace.json" "$f.json" || fail "$f: the operator table against the trace (above)"
  "$B" summary --no-cache --format json --top 0 --group-by shape "$K/$f.pt.trace.json" >"$f.shape.json" 2>err ||
    fail "summary --group-by shape $f: $(cat err)"
  "$py" check.py "$K/$f.pt.trace.json" "$f.shape.json" shape || fail "$f: by shape against the trace (above)"
done

# The H100 export: computed from the Chrome JSON tbexport writes of it.
"$B" import --quiet --logdir l --run h100 --host h --format json "$D/nsys/h100_2gpu_1s.sqlite" >/dev/null 2>err ||
  fail "import h100: $(cat err)"
"$B" summary --no-cache --format json --top 0 "$D/nsys/h100_2gpu_1s.sqlite" >h100.json 2>err || fail "summary h100: $(cat err)"
"$py" check.py l/plugins/profile/h100/h.trace.json.gz h100.json || fail "h100: the operator table against its JSON"
"$B" summary --no-cache --format json --top 0 --group-by shape "$D/nsys/h100_2gpu_1s.sqlite" >h100s.json 2>err ||
  fail "summary --group-by shape h100: $(cat err)"
cmp -s h100.json h100s.json || fail "h100 (no shapes): --group-by shape is not the table by name"
echo "test_op_table: figures of the Kineto pair and the H100 export against their JSON"

# Sort keys.
cat >order.py <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
key = {"cuda": "cuda_total_ns", "self-cuda": "self_cuda_ns", "self-cpu": "self_ns", "calls": "calls",
       "total": "total_ns", "avg": "avg_ns", "max": "max_ns", "default": "cuda_total_ns"}[sys.argv[2]]
ops = s["cpu_ops"]
v = [r[key] for r in ops]
ok = len(v) > 10 and all(a >= b for a, b in zip(v, v[1:])) and len(set(v)) > 3
k = [r["total_ns"] for r in s["kernels"]]
ok = ok and all(a >= b for a, b in zip(k, k[1:]))  # kernels: by total whatever the key
sys.exit(0 if ok else 1)
EOF
f=$K/h200_cnn_bf16.pt.trace.json
for k in cuda self-cuda self-cpu calls total avg max default; do
  opt=(--sort "$k"); [ $k = default ] && opt=()
  [ $k = calls ] || [ $k = avg ] || [ $k = max ] || [ $k = self-cpu ] && kern=0 || kern=1
  "$B" summary --no-cache --format json --top 0 "${opt[@]}" "$f" >o.json 2>err || fail "--sort $k: $(cat err)"
  if [ $kern = 1 ]; then "$py" order.py o.json $k || fail "--sort $k: not in order"
  else "$py" -c 'import json,sys; s=json.load(open("o.json")); k=sys.argv[1]; v=[r[k] for r in s["cpu_ops"]]
sys.exit(0 if all(a >= b for a, b in zip(v, v[1:])) else 1)' \
      "$(case $k in calls) echo calls ;; avg) echo avg_ns ;; max) echo max_ns ;; *) echo self_ns ;; esac)" ||
      fail "--sort $k: not in order"; fi
done
"$B" summary --no-cache "$f" | grep -q "^CPU operators (10 of 64, by CUDA total)$" || fail "the table's title: default order"
"$B" summary --no-cache --sort total "$f" | grep -q "^CPU operators (10 of 64, by CPU total)$" || fail "the title by CPU total"
"$B" summary --no-cache --sort cuda "$f" | grep -q "^Kernels (10 of 27, by total)$" || fail "kernels by total under --sort cuda"
"$B" summary --no-cache --sort gpu "$f" >out 2>err
rc=$?
[ $rc -eq 2 ] && [ ! -s out ] && [ "$(wc -l <err)" -eq 1 ] &&
  grep -q "not total, avg, calls, max, cuda, self-cuda or self-cpu" err || fail "--sort gpu: $rc $(cat err)"
"$B" summary --no-cache --group-by kernel "$f" >out 2>err
[ $? -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "not name or shape" err || fail "--group-by kernel: $(cat err)"
echo "test_op_table: sort keys"

# Every format.
cat >formats.py <<'EOF'
import csv, io, json, sys
j = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2], newline="")))
bad, header = [], None
for r in rows:
    if not r:
        header = None
        continue
    if header is None:
        header = r
        continue
    if len(r) != len(header):
        bad.append("CSV row of %d fields under a header of %d: %r" % (len(r), len(header), r[:3]))
    if r[0] in ("cpu_ops", "cpu_ops_by_shape"):
        d = dict(zip(header, r))
        m = [o for o in j["cpu_ops"] if o["name"] == d["name"] and o.get("shapes", "") == d["shapes"]]
        if len(m) != 1 or int(d["cuda_total_ns"]) != m[0]["cuda_total_ns"] or \
                int(d["self_cuda_ns"]) != m[0]["self_cuda_ns"] or int(d["kernels"]) != m[0]["kernels"]:
            bad.append("CSV row %r disagrees with the JSON" % r[:2])
launched = [r for r in rows if r and r[0] in ("launched", "launched_other")]
if not launched:
    bad.append("no launched section")
md = open(sys.argv[3]).read()
if "| name | input shapes | calls | self CPU | CPU total | self CUDA | CUDA total | kernels |" not in md or \
        "### Kernels per operator" not in md:
    bad.append("Markdown: no operator table by shape")
w = int(sys.argv[5])
for line in open(sys.argv[4]).read().splitlines():
    if len(line) > w and not line.startswith("- "):
        bad.append("table line of %d columns: %s" % (len(line), line[:60]))
for b in bad[:10]:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
for w in 100 80; do
  for fmt in json csv markdown table; do
    "$B" summary --no-cache --group-by shape --top 0 --width $w --format $fmt "$f" >"f.$fmt" 2>err || fail "--format $fmt: $(cat err)"
  done
  "$py" formats.py f.json f.csv f.markdown f.table $w || fail "formats at width $w (above)"
done
grep -q "^Kernels per operator: its own launches by GPU time" f.table || fail "no kernels per operator in the table"
echo "test_op_table: every format"

# Diff of the pair.
"$B" diff --no-cache --format json --top 0 "$K/h200_cnn_fp32.pt.trace.json" "$f" >d.json 2>err || fail "diff: $(cat err)"
"$B" diff --no-cache --format json --top 0 --group-by shape "$K/h200_cnn_fp32.pt.trace.json" "$f" >ds.json 2>err ||
  fail "diff --group-by shape: $(cat err)"
"$B" diff --no-cache --format csv --top 0 "$K/h200_cnn_fp32.pt.trace.json" "$f" >d.csv 2>err || fail "diff csv: $(cat err)"
"$py" - <<'EOF' || fail "diff of the pair (above)"
import csv, json, sys
d, ds = json.load(open("d.json")), json.load(open("ds.json"))
a, b = json.load(open("h200_cnn_fp32.json")), json.load(open("h200_cnn_bf16.json"))
sa, sb = json.load(open("h200_cnn_fp32.shape.json")), json.load(open("h200_cnn_bf16.shape.json"))
bad = []
def check(diff, base, new, shape):
    key = (lambda r: (r["name"], r["shapes"])) if shape else (lambda r: r["name"])
    A, B = {key(r): r for r in base["cpu_ops"]}, {key(r): r for r in new["cpu_ops"]}
    ent = diff["cpu_ops"]["entries"]
    if len(ent) != len(set(A) | set(B)):
        bad.append("%d entries, %d names" % (len(ent), len(set(A) | set(B))))
    prev = None
    for e in ent:
        k = key(e)
        want = [A[k]["cuda_total_ns"] if k in A else 0, B[k]["cuda_total_ns"] if k in B else 0]
        if e["cuda_total_ns"] != want or e["cuda_delta_ns"] != want[1] - want[0]:
            bad.append("%r: %r %r, want %r" % (k, e["cuda_total_ns"], e["cuda_delta_ns"], want))
        if e["status"] != {(1, 1): "matched", (1, 0): "removed", (0, 1): "added"}[(k in A, k in B)]:
            bad.append("%r status %s" % (k, e["status"]))
        if prev is not None and abs(e["cuda_delta_ns"]) > prev:
            bad.append("not by |CUDA delta| at %r" % (k,))
        prev = abs(e["cuda_delta_ns"])
check(d, a, b, False)
check(ds, sa, sb, True)
if not d["op_cuda"] or d["cpu_ops_by"] != "name" or ds["cpu_ops_by"] != "shape":
    bad.append("op_cuda %r, cpu_ops_by %r %r" % (d["op_cuda"], d["cpu_ops_by"], ds["cpu_ops_by"]))
copy = [e for e in d["cpu_ops"]["entries"] if e["name"] == "aten::copy_"]
if not copy or copy[0]["status"] != "added":
    bad.append("aten::copy_ (autocast's casts) not added in bf16")
rows = [r for r in csv.reader(open("d.csv", newline=""))]
hdr = None
for r in rows:
    if not r:
        hdr = None
    elif hdr is None:
        hdr = r
    elif len(r) != len(hdr):
        bad.append("diff CSV row of %d fields, header %d" % (len(r), len(hdr)))
for x in bad[:10]:
    print("  " + x)
sys.exit(1 if bad else 0)
EOF
"$B" diff --no-cache "$K/h200_cnn_fp32.pt.trace.json" "$f" | grep -q "^CPU operators (CUDA total): 60 matched, 4 added (+), 0 removed (-)" ||
  fail "diff table: the operators by CUDA total"
echo "test_op_table: diff of the pair"

# A run collected through the stand-in libcupti and torch.
fake=$(dirname "$B")/libcollect_fake_libcupti.so
if [ ! -f "$fake" ]; then
  grep -q "collector was not built" <("$B" --logdir x -- true 2>&1) ||
    fail "no $fake in a build with the collector"
  echo "test_op_table: no collector in this build: the collected run is left out"
  [ $fails -eq 0 ] && echo "test_op_table: ok"
  exit $((fails > 0))
fi
export TBEXPORT_CUPTI_LIB=$fake FAKE_NVTX=$fake PYTHONPATH=$D/faketorch PYTHONDONTWRITEBYTECODE=1
# test_ops.sh's program: nested operators, one without kernels, a kernel
# outside any operator, a driver launch, a backward pass; kernels of 8 us.
sed -n "/^cat >prog2.py <<'EOF'$/,/^EOF$/p" "$here/test_ops.sh" | sed '1d;$d' >prog2.py
[ -s prog2.py ] || { fail "test_ops.sh's program not found"; exit 1; }
# Under ASan the injection library needs the ASan runtime loaded first in
# python3 (leak checks off there: python's own allocations are not ours),
# as test_ops.sh does.
pyc=("$py")
asan=$(ldd "$(dirname "$B")/libtbexport_inject.so" 2>/dev/null | awk '/libasan/ {print $3}')
[ -z "$asan" ] || pyc=(env LD_PRELOAD="$asan" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$py")
"$B" --logdir lc --run ops --record-shapes -- "${pyc[@]}" prog2.py >out 2>err || fail "profile: $(cat err)"
"$B" summary --logdir lc ops --format json --top 0 >c.json 2>err || fail "summary of the run: $(cat err)"
"$B" summary --logdir lc ops --format json --top 0 --group-by shape >cs.json 2>err || fail "by shape: $(cat err)"
"$py" - <<'EOF' || fail "the collected run's operators (above)"
import json, sys
s, ss = json.load(open("c.json")), json.load(open("cs.json"))
K = 8000
want = {"aten::linear": (0, K, 0), "aten::addmm": (K, K, 1), "aten::view": (0, 0, 0),
        "aten::scaled_dot_product_attention": (K, K, 1), "aten::mm": (K, K, 1), "AddmmBackward0": (0, K, 0),
        "autograd::engine::evaluate_function: AddmmBackward0": (0, K, 0)}
got = {r["name"]: (r["self_cuda_ns"], r["cuda_total_ns"], r["kernels"]) for r in s["cpu_ops"]}
bad = ["%s: %r, want %r" % (n, got.get(n), w) for n, w in want.items() if got.get(n) != w]
if s["op_gpu_count"] != 3 or s["op_gpu_ns"] != 3 * K:  # outside_kernel is no operator's
    bad.append("op_gpu %r %r" % (s["op_gpu_count"], s["op_gpu_ns"]))
add = [r for r in s["cpu_ops"] if r["name"] == "aten::addmm"][0]
if [(l["name"], l["calls"], l["total_ns"]) for l in add["launched"]] != [("gemm_fwd", 1, K)]:
    bad.append("aten::addmm launched %r" % add["launched"])
if [r["name"] for r in s["cpu_ops"][:1]] == ["aten::view"]:
    bad.append("not by CUDA total")
lin = [r for r in ss["cpu_ops"] if r["name"] == "aten::linear"]
if len(lin) != 1 or lin[0]["shapes"] != "[[4, 8], [16, 8], [16]]" or lin[0]["cuda_total_ns"] != K:
    bad.append("by shape: aten::linear %r" % lin)
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
# TensorBoard: the series and the text, read back.
ev=$(find lc/ops -name 'events.out.tfevents.*.tbexport-summary' | head -1)
[ -n "$ev" ] || fail "no summary events"
"$B" inspect --dump "$ev" >dump.jsonl 2>err || fail "inspect: $(cat err)"
"$py" - <<'EOF' || fail "the operators in TensorBoard (above)"
import json, sys
s = json.load(open("c.json"))
vals, texts = {}, set()
for line in open("dump.jsonl"):
    e = json.loads(line)
    for v in e.get("values", []):
        if v["tag"].startswith("ops/"):
            vals.setdefault(v["tag"], []).append((e["step"], v["value"]))
        texts.add(v["tag"])
want = {"ops/%s/cuda_ms" % r["name"]: r["cuda_total_ns"] / 1e6 for r in s["cpu_ops"]
        if r["cuda_total_ns"] > 0 and "evaluate_function" not in r["name"]}
bad = []
for tag, v in want.items():
    got = vals.get(tag)
    if not got or len(got) != 1 or got[0][0] != 0 or abs(got[0][1] - v) > 1e-6:
        bad.append("%s: %r, want %r at step 0" % (tag, got, v))
if not any(t.startswith("summary/top_operators") for t in texts):
    bad.append("no summary/top_operators")
if len(vals) != 6:  # the six operators with GPU work
    bad.append("%d series: %r" % (len(vals), sorted(vals)))
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
EOF
echo "test_op_table: a collected run, its figures and its TensorBoard series"
[ $fails -eq 0 ] && echo "test_op_table: ok"
exit $((fails > 0))
