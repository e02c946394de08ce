#!/bin/bash
# test_rank_reports.sh: `tbexport summary` and `diff` of runs of 256 ranks written
# by the synthetic run generator (test/bench/gen_run.c): the compact
# per-rank table (the slowest and fastest ranks, the gap, the
# distributions, the slow rank as the one outlier), every rank in CSV and
# JSON, and a diff rank by rank whose first row is a rank that changed
# most.  Content only, never speed.
# usage: test_rank_reports.sh TBEXPORT TEST_DATA_DIR GEN_RUN
set -u
B=$1
G=${3:?usage: test_rank_reports.sh TBEXPORT TEST_DATA_DIR GEN_RUN}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
L=$tmp/log

# Two runs of 256 ranks: the slow rank is 85 (256 / 3) in one, 200 in the other.
"$G" --logdir "$L" --run a --ranks 256 --events-per-rank 2000 --outputs json >"$tmp/gen" 2>&1 ||
  { fail "gen_run a: $(cat "$tmp/gen")"; exit 1; }
grep -q "slow rank 85 (+30%)" "$tmp/gen" || fail "gen_run said: $(cat "$tmp/gen")"
"$G" --logdir "$L" --run b --ranks 256 --events-per-rank 2000 --outputs json --seed 7 --slow-rank 200 \
  >"$tmp/gen" 2>&1 || { fail "gen_run b: $(cat "$tmp/gen")"; exit 1; }
[ "$(ls "$L/plugins/profile/a" | grep -c '^node[0-9]*\.rank[0-9]*\.trace\.json\.gz$')" -eq 256 ] || fail "256 rank files"
# Bad arguments: exit 2 and a usage line.
"$G" --logdir "$L" --run c --ranks 4 --slow-rank 4 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "slow-rank" "$tmp/err" || fail "gen_run with a slow rank out of the run"

# The table: compact.
"$B" summary --logdir "$L" a >"$tmp/out" 2>"$tmp/err" || fail "summary a: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "summary printed on stderr: $(cat "$tmp/err")"
grep -q "^256 processes on 32 hosts, wall .*, 256 GPUs, 256000 kernels" "$tmp/out" || fail "header: $(sed -n 2p "$tmp/out")"
grep -q "^Ranks (256; the 5 slowest, the 5 fastest and the outliers, slowest first, by median step" "$tmp/out" || fail "ranks heading"
rows=$(grep -c "^ *[0-9]* node[0-9]*\.rank[0-9]* " "$tmp/out")
[ "$rows" -eq 10 ] || fail "$rows rank rows, want 10"
grep -q "^ *85 node10\.rank85 .*  slowest$" "$tmp/out" || fail "slow rank 85 is not the slowest row: $(grep rank85 "$tmp/out")"
[ "$(grep -m1 "^ *[0-9]* node[0-9]*\.rank" "$tmp/out" | awk '{print $1}')" = 85 ] || fail "slowest first"
grep -q "^  \.\.\. 246 more ranks (every one: --format csv or json)$" "$tmp/out" || fail "gap line"
grep -q "^slowest rank 85 (node10\.rank85), fastest rank [0-9]* (node[0-9]*\.rank[0-9]*) by median step time: spread" "$tmp/out" || fail "extremes"
grep -q "^Median step time over 256 ranks: min .*, p50 .*, p90 .*, max " "$tmp/out" || fail "step distribution"
grep -q "^Comm time over 256 ranks: min .*, p50 .*, p90 .*, max " "$tmp/out" || fail "comm distribution"
grep -q "of the median): rank 85 ([0-9.]*ms)\.$" "$tmp/out" || fail "outliers: $(grep -A1 Outliers "$tmp/out")"
# (the table of the collectives' nccl:* operators tbe_trace_finish adds,
# src/trace/model/comm.h, is 12 of them)
[ "$(wc -l <"$tmp/out")" -lt 95 ] || fail "the summary of 256 ranks has $(wc -l <"$tmp/out") lines"

# CSV and JSON: all 256 ranks; the figures agree with the table.
"$B" summary --format csv --logdir "$L" a >"$tmp/a.csv" || fail "csv"
[ "$(grep -c '^host,node[0-9]*\.rank' "$tmp/a.csv")" -eq 256 ] || fail "csv host rows"
slow_csv=$(awk -F, '$1 == "host" && $NF == "slowest" { print $4 }' "$tmp/a.csv")
[ "$slow_csv" = 85 ] || fail "csv slowest rank: $slow_csv"
if command -v python3 >/dev/null; then
  "$B" summary --format json --logdir "$L" a >"$tmp/a.json" || fail "json"
  python3 - "$tmp/a.json" "$tmp/a.csv" <<'PY' || fail "json figures"
import json, sys
run = json.load(open(sys.argv[1]))
assert run["hosts_count"] == 256 and len(run["hosts"]) == 256 and run["by_rank"]
assert [h["rank"] for h in run["hosts"]] == list(range(256))
med = sorted(h["step_stats"]["median_ns"] for h in run["hosts"])
assert run["slowest"]["rank"] == 85 and run["slowest"]["value_ns"] == med[-1]
assert run["fastest"]["value_ns"] == med[0]
assert run["spread_ns"] == med[-1] - med[0]
d = run["figure_dist"]
assert (d["n"], d["min_ns"], d["p50_ns"], d["p90_ns"], d["max_ns"]) == (256, med[0], med[127], med[230], med[-1]), d
assert [o["rank"] for o in run["outliers"]] == [85]
comm = [h["comm_ns"] for h in run["hosts"]]
assert all(c > 0 for c in comm) and run["comm_dist"]["max_ns"] == max(comm)
PY
fi

# Markdown as the table: the same rows.
"$B" summary --format markdown --logdir "$L" a >"$tmp/a.md" || fail "markdown"
[ "$(grep -c '^| [0-9]* | node[0-9]*\.rank' "$tmp/a.md")" -eq 10 ] || fail "markdown rows"
grep -q "^| 85 | node10\.rank85 | .* | slowest |$" "$tmp/a.md" || fail "markdown slow row"

# The diff rank by rank: ranks 85 and 200 changed most.
"$B" diff --no-events --logdir "$L" a b >"$tmp/d" 2>"$tmp/err" || fail "diff: $(cat "$tmp/err")"
grep -q "^Ranks: 256 matched by rank, 0 only in base (-), 0 only in new (+); the ones whose step" "$tmp/d" || fail "diff heading: $(grep '^Ranks' "$tmp/d")"
first=$(grep -A2 "^  rank host" "$tmp/d" | tail -1 | awk '{print $1}')
second=$(grep -A3 "^  rank host" "$tmp/d" | tail -1 | awk '{print $1}')
[ "$first $second" = "85 200" ] || [ "$first $second" = "200 85" ] || fail "ranks changed most: $first $second"
grep -q "^ *85 node10\.rank85 .* -[0-9.]*us *-[0-9.]*% .*!$" "$tmp/d" || fail "rank 85 faster: $(grep rank85 "$tmp/d")"
grep -q "^ *200 node25\.rank200 .* +[0-9.]*us *+[0-9.]*% .*!$" "$tmp/d" || fail "rank 200 slower: $(grep rank200 "$tmp/d")"
grep -q "^  \.\.\. 246 more pairs" "$tmp/d" || fail "diff gap line"
"$B" diff --no-events --format csv --logdir "$L" a b >"$tmp/d.csv" || fail "diff csv"
[ "$(grep -c '^host,node[0-9]*\.rank' "$tmp/d.csv")" -eq 256 ] || fail "diff csv rows"

[ $fails -eq 0 ] && echo "test_rank_reports: all passed"
exit $((fails > 0))
