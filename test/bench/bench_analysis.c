/* bench_analysis.c: summary and diff time on a 5M-event model built in
 * memory (issue goal: under 1 s each after import).
 *
 * The model imitates a training loop: one host thread issuing CPU
 * operators and cudaLaunchKernel calls, kernels (200 names) on four
 * streams of two GPUs, correlated to their launches, one step per 100k
 * launches.  Baseline, measured in the same run: one plain pass summing
 * the durations of all events (the memory-bandwidth floor of any
 * analysis).  Printed: time, events/s and the ratio to the baseline for
 * tbe_trace_finish (for reference), tbe_analysis_create, the summary
 * report, and the diff (analysis of a second trace + tbe_diff_create +
 * report).
 *
 * The rows say what each figure holds: "summary" is one analysis plus the
 * table report (what `tbexport summary` computes after the import); "diff"
 * is the analysis of the second trace, the comparison and the report,
 * given the first trace's analysis; "diff, both analyses" computes both.
 * Exits 2 on bad arguments and 1 when it measured nothing (no events, no
 * kernels) or a call failed; the goal is judged on 5M events or more only.
 *
 * usage: bench_analysis [EVENTS]   (default 5000000, at least 1000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbexport.h"
#include "tbexport/analysis.h"

/* A decimal count >= min into *out; 0 if `s` is anything else. */
static int parse_count(const char *s, size_t min, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || *s == '-' || v < min) return 0;
  *out = (size_t)v;
  return 1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int build(tbe_trace **out, size_t nevents, int64_t scale_pct) {
  tbe_trace *t;
  int rc = tbe_trace_create(&t, NULL);
  if (rc) return rc;
  uint32_t host, streams[4];
  tbe_trace_track(t, TBE_TRACK_THREAD, 100, 100, -1, &host);
  for (int s = 0; s < 4; s++) tbe_trace_track(t, TBE_TRACK_STREAM, 100, 7 + s, s / 2, &streams[s]);
  tbe_str knames[200], launch = tbe_trace_str_id(t, "cudaLaunchKernel");
  tbe_str opname = tbe_trace_str_id(t, "aten::linear");
  char buf[128];
  for (int i = 0; i < 200; i++) {
    snprintf(buf, sizeof buf, "void gemm_kernel_%d<float, 128, 64>(float const*, float*, int)", i);
    knames[i] = tbe_trace_str_id(t, buf);
  }
  tbe_kernel k;
  memset(&k, 0, sizeof k);
  k.occupancy_pct = -1;
  int64_t ts = 1700000000000000000LL, step_start = ts, stepn = 0;
  size_t n = 0, launches = 0;
  uint64_t corr = 1;
  while (n + 3 <= nevents) {
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.link = TBE_NONE;
    if (launches % 10 == 0) {
      e.start_ns = ts;
      e.dur_ns = 9000;
      e.name = opname;
      e.track = host;
      e.kind = TBE_EV_CPU_OP;
      if ((rc = tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL))) break;
      n++;
    }
    e.start_ns = ts + 100;
    e.dur_ns = 600;
    e.name = launch;
    e.track = host;
    e.kind = TBE_EV_RUNTIME;
    e.correlation = corr;
    if ((rc = tbe_trace_add_event(t, &e, NULL, NULL, 0, NULL))) break;
    int s = (int)(launches % 4);
    e.start_ns = ts + 3000 + s * 200;
    e.dur_ns = (int64_t)(1000 + (launches * 7919) % 4000) * scale_pct / 100;
    e.name = knames[(launches * 31) % 200];
    e.track = streams[s];
    e.kind = TBE_EV_KERNEL;
    if ((rc = tbe_trace_add_event(t, &e, &k, NULL, 0, NULL))) break;
    n += 2;
    corr++;
    launches++;
    ts += 900;
    if (launches % 100000 == 0) {
      tbe_trace_add_step(t, stepn++, step_start, ts, 0);
      step_start = ts;
    }
  }
  if (!rc) rc = tbe_trace_error(t);
  if (rc) {
    tbe_trace_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

static void row(const char *what, double s, size_t nev, double base) {
  printf("%-40s %10.3f %14.0f %10.1fx\n", what, s * 1e3, (double)nev / s, s / base);
}

int main(int argc, char **argv) {
  size_t nev = 5000000;
  if (argc > 2 || (argc == 2 && !parse_count(argv[1], 1000, &nev))) {
    fprintf(stderr, "usage: bench_analysis [EVENTS >= 1000]\n");
    return 2;
  }
  tbe_trace *a = NULL, *b = NULL;
  double t0 = now();
  if (build(&a, nev, 100) || build(&b, nev, 90)) {
    fprintf(stderr, "bench_analysis: building the models failed\n");
    return 1;
  }
  double t_build = now() - t0;
  t0 = now();
  if (tbe_trace_finish(a) || tbe_trace_finish(b)) return 1;
  double t_finish = (now() - t0) / 2;
  size_t n = a->nevents;
  if (n == 0 || b->nevents == 0) {
    fprintf(stderr, "bench_analysis: the models hold no events: nothing to measure\n");
    return 1;
  }

  /* Baseline: one pass over the events. */
  double best_base = 1e9;
  int64_t sink = 0;
  for (int r = 0; r < 3; r++) {
    t0 = now();
    for (size_t i = 0; i < n; i++) sink += a->events[i].dur_ns + a->events[i].name;
    double el = now() - t0;
    if (el < best_base) best_base = el;
  }

  tbe_analysis *an = NULL, *bn = NULL;
  double best_an = 1e9, best_rep = 1e9, best_diff = 1e9;
  for (int r = 0; r < 3; r++) {
    t0 = now();
    if (tbe_analysis_create(&an, a, NULL)) return 1;
    double el = now() - t0;
    if (el < best_an) best_an = el;
    t0 = now();
    tbe_report_options o;
    tbe_report_options_init(&o);
    char *s;
    size_t len;
    if (tbe_report_summary(an, &o, &s, &len)) return 1;
    tbe_report_free(s, len, NULL);
    el = now() - t0;
    if (el < best_rep) best_rep = el;
    /* Diff: the second side's analysis, the match and the report. */
    t0 = now();
    tbe_diff *d = NULL;
    if (tbe_analysis_create(&bn, b, NULL) || tbe_diff_create(&d, an, bn, NULL)) return 1;
    if (tbe_report_diff(d, &o, &s, &len)) return 1;
    tbe_report_free(s, len, NULL);
    el = now() - t0;
    if (el < best_diff) best_diff = el;
    if (r == 2 && (an->all.kernel_count == 0 || bn->all.kernel_count == 0)) {
      fprintf(stderr, "bench_analysis: the analyses found no kernels: nothing measured\n");
      return 1;
    }
    if (r == 2) {
      printf("kernels %llu, GPU busy %.1f%%, steps %zu, diff kernel ratio %.3f\n",
             (unsigned long long)an->all.kernel_count,
             100.0 * (double)an->all.busy_ns / (double)an->wall_ns, an->nsteps,
             (double)bn->all.kernel_ns / (double)an->all.kernel_ns);
    }
    tbe_diff_free(d);
    tbe_analysis_free(bn);
    tbe_analysis_free(an);
  }
  printf("model: %zu events per trace (build %.2f s for two, not timed below)\n", n, t_build);
  printf("%-40s %10s %14s %11s\n", "operation", "ms", "events/s", "vs baseline");
  row("baseline: one pass over events", best_base, n, best_base);
  row("tbe_trace_finish (reference)", t_finish, n, best_base);
  row("analysis alone (tbe_analysis_create)", best_an, n, best_base);
  row("summary: analysis + table report", best_an + best_rep, n, best_base);
  row("diff: NEW's analysis + diff + report", best_diff, n, best_base);
  row("diff, both analyses + diff + report", best_an + best_diff, 2 * n, best_base);
  if (n >= 5000000)
    printf("goal: summary and diff (NEW's analysis) under 1000 ms each on %zu events: %s\n", n,
           best_an + best_rep < 1.0 && best_an + best_diff < 1.0 ? "met" : "NOT met");
  else
    printf("goal (under 1000 ms each on 5M events): not judged on %zu events\n", n);
  if (sink == 42) printf(" ");
  tbe_trace_free(a);
  tbe_trace_free(b);
  return 0;
}
