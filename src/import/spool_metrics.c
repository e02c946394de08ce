/* spool_metrics.c: the hardware-metric items of a spool (spool.h, items
 * 25-28) into the trace model (trace.h, "hardware metrics"), after the
 * scan (spool_scan.c) flattened and checked them.
 *
 * - PM samples: per device and metric (by the definition's short name; a
 *   value of an id never defined is counted, not kept), in time order,
 *   duplicates of one timestamp keeping the last.  A sample is the value
 *   over the interval that ends at its timestamp; the model's counter
 *   event holds a value from its start on, so each sample is placed at the
 *   start of its interval (the previous sample's timestamp; the first
 *   one's interval taken as long as the second's, or as 0 for a lone
 *   sample), and the series ends with an event at the last timestamp
 *   repeating the last value.  Samples outside the kept windows are left
 *   out like any record.  Samples missing in gaps of the series (steps
 *   over twice the median, inside the windows) beyond the overflow and
 *   stale counts are said in one warning per device.
 * - Kernel figures: one tbe_kernel_metrics per item (name, device), values
 *   by metric name; the last item of a name and device counts.
 * - Raw PM samples (TBEXPORT_PM_EVAL=deferred) are evaluated into sample
 *   items by the conversion (collect/pmeval.c) before this import; left
 *   raw (no TBE__SP_PM_EVALUATED: a build without the collector read the
 *   spool), they are counted in one warning.
 * - Status: one warning line per kind and device saying which collection
 *   failed and why (no permission, another profiler, unsupported, other),
 *   and how many samples an overflow lost; the activity trace is
 *   unaffected.  Malformed items, NaN or infinite values and unknown ids
 *   are each counted in one warning.
 *
 * Invariant: every counter event added is finite and on a metric track
 * (tbe_trace_metric_track) of the device the item named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "import/spool_int.h"
#include "tbexport/error.h"

/* The short name of metric id `id` (its last definition's), 0 when never
 * defined. */
static tbe_str metric_name(const scan *s, uint32_t id) {
  long d = sp_mdef(s, id);
  return d < 0 ? 0 : S(s, TBE__VEC_AT(&s->mdefs, tbe__sp_metric_def, d).name);
}

static int cmp_sample(const void *x, const void *y) {
  const sp_msample *a = x, *b = y;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  if (a->metric != b->metric) return a->metric < b->metric ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return 0;
}

static int add_counter(tbe_trace *t, uint32_t track, tbe_str name, int64_t ts, double v) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = ts;
  e.name = name;
  e.track = track;
  e.detail = TBE_NONE;
  e.link = TBE_NONE;
  e.kind = TBE_EV_COUNTER;
  tbe_counter c = {v};
  return tbe_trace_add_event(t, &e, &c, NULL, 0, NULL);
}

/* One series: samples [a, b) of one device and metric, sorted, each a
 * distinct timestamp. */
static int add_series(tbe_trace *t, int64_t pid, const sp_msample *v, size_t n, tbe_str name) {
  uint32_t tr;
  if (v[0].device > INT32_MAX) return 0; /* no GPU ordinal: no track of any GPU */
  int rc = tbe_trace_metric_track(t, pid, (int32_t)v[0].device, name, &tr);
  for (size_t i = 0; i < n && !rc; i++) {
    int64_t start = i ? v[i - 1].ts : n > 1 ? v[0].ts - (v[1].ts - v[0].ts) : v[0].ts;
    if (start <= 0) start = v[i].ts;
    rc = add_counter(t, tr, name, start, v[i].v);
  }
  if (!rc && n > 1) rc = add_counter(t, tr, name, v[n - 1].ts, v[n - 1].v);
  return rc;
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

/* Samples missing from one series (a device's first metric: its metrics
 * share their stamps): steps longer than twice the median step whose
 * midpoint lies in a kept window (a capture range's own gaps miss
 * nothing).  One warning per device unless the overflow and stale counts
 * of its status, said in their own lines, account for them. */
static int pm_gaps(const scan *s, tbe_trace *t, const sp_msample *v, size_t n,
                   int (*keep)(void *, int64_t), void *kctx) {
  if (n < 3) return 0;
  int64_t *st = tbe__alloc(s->a, (n - 1) * sizeof *st);
  if (!st) return TBE_ENOMEM;
  for (size_t i = 1; i < n; i++) st[i - 1] = v[i].ts - v[i - 1].ts;
  qsort(st, n - 1, sizeof *st, cmp_i64);
  int64_t med = st[(n - 1) / 2];
  tbe__free(s->a, st);
  if (med <= 0) return 0;
  uint64_t gaps = 0, missing = 0;
  int64_t total = 0, longest = 0;
  for (size_t i = 1; i < n; i++) {
    int64_t d = v[i].ts - v[i - 1].ts;
    if (d <= 2 * med || !keep(kctx, v[i - 1].ts + d / 2)) continue;
    gaps++;
    total += d - med;
    missing += (uint64_t)(d / med) - 1;
    if (d > longest) longest = d;
  }
  uint64_t said = 0;
  const uint32_t *last = /* the last status counts */
      tbe__map_get(&s->mstatus_last, SP_STATUS_KEY(TBE__MKIND_PM_SAMPLING, v[0].device));
  if (last) {
    const sp_mstatus *m = &TBE__VEC_AT(&s->mstatus, sp_mstatus, *last);
    said = m->st.overflow + m->st.stale;
  }
  if (!gaps || missing <= said) return 0;
  int64_t span = v[n - 1].ts - v[0].ts;
  tbe_trace_warn(t,
                 "PM sampling on GPU %u has no samples in %llu gap%s, %.3f s in all (%.1f%% of the "
                 "%.3f s sampled; the longest %.1f ms), beyond any overflow said: each gap counts "
                 "in the means at the value of the sample after it",
                 v[0].device, (unsigned long long)gaps, gaps == 1 ? "" : "s", (double)total / 1e9,
                 span > 0 ? 100.0 * (double)total / (double)span : 0.0, (double)span / 1e9,
                 (double)longest / 1e6);
  return 0;
}

static int pm_samples(scan *s, tbe_trace *t, int64_t pid, int (*keep)(void *, int64_t),
                      void *kctx, uint64_t *unknown) {
  sp_msample *v = s->msamples.data;
  size_t n = 0;
  /* keep what lies in the windows and has a defined, per-device metric */
  for (size_t i = 0; i < s->msamples.n; i++) {
    if (!keep(kctx, v[i].ts)) continue;
    if (v[i].device > INT32_MAX || !metric_name(s, v[i].metric)) {
      (*unknown)++;
      continue;
    }
    v[n++] = v[i];
  }
  if (n > 1) qsort(v, n, sizeof *v, cmp_sample);
  /* duplicates of one timestamp keep the last (qsort is not stable: the
   * value kept is one of them; the collector writes none) */
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (w && v[w - 1].device == v[i].device && v[w - 1].metric == v[i].metric &&
        v[w - 1].ts == v[i].ts)
      v[w - 1] = v[i];
    else
      v[w++] = v[i];
  }
  int rc = 0;
  for (size_t a = 0; a < w && !rc;) {
    size_t b = a + 1;
    while (b < w && v[b].device == v[a].device && v[b].metric == v[a].metric) b++;
    rc = add_series(t, pid, v + a, b - a, metric_name(s, v[a].metric));
    if (!rc && (a == 0 || v[a - 1].device != v[a].device)) rc = pm_gaps(s, t, v + a, b - a, keep, kctx);
    a = b;
  }
  s->msamples.n = 0;
  return rc;
}

static int kernel_figures(scan *s, tbe_trace *t, uint64_t *unknown) {
  const sp_kmval *v = s->kmvals.data;
  tbe_metric_value buf[64];
  int rc = 0;
  for (size_t a = 0; a < s->kmvals.n && !rc;) {
    size_t b = a + 1;
    while (b < s->kmvals.n && v[b].item == v[a].item) b++;
    size_t k = 0;
    for (size_t i = a; i < b && k < sizeof buf / sizeof *buf; i++) {
      tbe_str m = metric_name(s, v[i].metric);
      if (!m) {
        (*unknown)++;
        continue;
      }
      buf[k].metric = m;
      buf[k].reserved = 0;
      buf[k].value = v[i].v;
      k++;
    }
    tbe_str name = S(s, v[a].name);
    if (k && name && v[a].device <= INT32_MAX)
      rc = tbe_trace_add_kernel_metrics(t, name, (int32_t)v[a].device, v[a].launches, buf, k);
    a = b;
  }
  return rc;
}

static const char *kind_word(uint32_t kind) {
  return kind == TBE__MKIND_RANGE_PROFILER ? "per-kernel GPU metrics (range profiler)"
                                           : "GPU metrics (PM sampling)";
}

static const char *status_why(uint32_t st) {
  switch (st) {
    case TBE__MS_NO_PERMISSION:
      return "no permission to read the GPU's counters (the driver's "
             "NVreg_RestrictProfilingToAdminUsers=1: run as root or set it to 0)";
    case TBE__MS_BUSY:
      return "another profiler holds the counters (Nsight, DCGM, a second session, or the "
             "range profiler of --kernel-metrics: the two cannot run at once on one GPU)";
    case TBE__MS_UNSUPPORTED: return "not supported by this GPU or CUPTI";
    default: return "collection failed";
  }
}

/* The last status of each kind and device counts (in the order of the
 * last ones). */
static void status_lines(const scan *s, tbe_trace *t) {
  const sp_mstatus *ms = s->mstatus.data;
  for (size_t i = 0; i < s->mstatus.n; i++) {
    const sp_mstatus *m = &ms[i];
    const uint32_t *last = tbe__map_get(&s->mstatus_last, SP_STATUS_KEY(m->st.kind, m->st.device));
    if (!last || *last != i) continue;
    char gpu[32];
    if (m->st.device == UINT32_MAX) snprintf(gpu, sizeof gpu, "any GPU");
    else snprintf(gpu, sizeof gpu, "GPU %u", m->st.device);
    const char *r = m->reason ? tbe_trace_str(t, m->reason) : "";
    if (m->st.status != TBE__MS_OK)
      tbe_trace_warn(t, "%s not collected on %s: %s%s%s; the activity trace is complete",
                     kind_word(m->st.kind), gpu, status_why(m->st.status), *r ? ": " : "", r);
    if (m->st.overflow)
      tbe_trace_warn(t,
                     "%s lost %llu samples on %s when the hardware buffer overflowed (%llu "
                     "recorded): the means cover the rest; sample less often",
                     m->st.kind == TBE__MKIND_RANGE_PROFILER ? "the range profiler" : "PM sampling",
                     (unsigned long long)m->st.overflow, gpu,
                     (unsigned long long)m->st.samples);
    if (m->st.status == TBE__MS_OK && m->st.kind == TBE__MKIND_RANGE_PROFILER && m->st.samples)
      tbe_trace_warn(t,
                     "the range profiler replayed %llu launches on %s and stays enabled there: "
                     "the other launches run slower meanwhile (on the H200, loops took 1.7 to 2.6x "
                     "as long), so take timings from a run without --kernel-metrics",
                     (unsigned long long)m->st.samples, gpu);
    if (m->st.stale && m->st.kind == TBE__MKIND_PM_SAMPLING)
      tbe_trace_warn(t,
                     "PM sampling left out %llu samples on %s whose time was not after the "
                     "previous sample's (CUPTI stamps a decode's first samples so after the "
                     "counter image is started again): the means cover the rest",
                     (unsigned long long)m->st.stale, gpu);
  }
}

/* The collector writes each failure of a kind on a device as a status item
 * and a note (src/collect/hwmetrics.c, tbe__hwm_drain_fails: "<kind> off
 * [on device N]: <reason>; the activity trace is still collected"); the
 * status item's line (status_lines) says it, so the note would say it
 * twice. */
int tbe__spool_note_is_status(const scan *s, tbe_str note) {
  static const char *const said[] = {"GPU metrics (PM sampling) off",
                                      "kernel metrics (range profiler) off"};
  if (!s->mstatus.n) return 0;
  const char *n = tbe_trace_str(s->t, note);
  for (size_t i = 0; i < sizeof said / sizeof *said; i++)
    if (strncmp(n, said[i], strlen(said[i])) == 0) return 1;
  return 0;
}

int tbe__spool_metrics(scan *s, tbe_trace *t, int64_t pid, int (*keep)(void *, int64_t),
                       void *kctx) {
  uint64_t unknown = 0;
  int rc = pm_samples(s, t, pid, keep, kctx, &unknown);
  if (!rc) rc = kernel_figures(s, t, &unknown);
  if (rc) return rc;
  status_lines(s, t);
  if (s->mbad.short_items)
    tbe_trace_warn(t, "%llu GPU metric items had counts that do not fit their length and were "
                      "left out", (unsigned long long)s->mbad.short_items);
  if (s->mbad.bad_values)
    tbe_trace_warn(t, "%llu GPU metric values were NaN or infinite and were left out",
                   (unsigned long long)s->mbad.bad_values);
  if (s->mbad.bad_ts)
    tbe_trace_warn(t, "%llu GPU metric samples had a zero or negative timestamp and were left out",
                   (unsigned long long)s->mbad.bad_ts);
  if (unknown)
    tbe_trace_warn(t, "%llu GPU metric values named a metric id never defined (or no device) and "
                      "were left out", (unsigned long long)unknown);
  if (s->mbad.pm_raw && !s->mbad.pm_evaluated)
    tbe_trace_warn(t,
                   "%llu PM samples are raw counter images that were not evaluated (a spool "
                   "collected with TBEXPORT_PM_EVAL=deferred, read by a tbexport without the "
                   "collector): convert it with a tbexport built with CUPTI support",
                   (unsigned long long)s->mbad.pm_raw);
  return tbe_trace_error(t);
}
