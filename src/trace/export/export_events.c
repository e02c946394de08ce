/* export_events.c: the run summary as TensorBoard events, its HParams
 * session, a multi-host job's own series, and the diff of two runs
 * written next to them.
 *
 * The "events" output of tbe_export_run (exporter.h) analyses the trace
 * (analysis.c) and writes one event file into the host's run folder
 * (export_run.c places it: <logdir>/<run>/ for a run of one host,
 * <logdir>/<run>/<host folder>/ for each host of a multi-host run) through
 * the public writer API (tbexport/writer.h):
 *   summary/…        wall time, GPU busy %, time in kernels, copies,
 *                    memsets, synchronization, idle, kernel count, launch
 *                    latency, host busy %  (step 0)
 *   gpu<N>/…         the same per GPU when there are several
 *   summary/class/<class>_ms  GPU time per kernel class (tbe_kernel_class)
 *   summary/step_time_median_ms, step_time_p90_ms, steps
 *   summary/warmup_step_ms  the first step, when the per-step series
 *                    leave it out as warm-up (warmup(): it took more than
 *                    WARMUP_FACTOR times the median of the others)
 *   steps/…          per step (x axis = step number): step time, GPU busy
 *                    %, kernel time and count, memcpy, memset and sync
 *                    time, launch latency, steps/class/<class>_ms for every
 *                    class the run has, steps/kernels/<tag> for the top 10
 *                    kernels, steps/<key> for every step row of the figure
 *                    table (figures.h; the memory peaks
 *                    steps/peak_allocated_bytes, steps/peak_reserved_bytes)
 *                    where known: runs overlay as curves
 *   kernels/<name>   total time of the top kernels in ms (step 0)
 *   ops/<name>/cuda_ms  a trace whose GPU work is attributed to operators
 *                    (tbexport/analysis.h, tbe_name_stats): the CUDA total
 *                    of the top 10 operators by it, per step (x axis = step
 *                    number), else one point at step 0; the name's tag as
 *                    a kernel's (kernel_tag)
 *   gpu_metrics/<metric>  a trace with PM metrics (tbexport/analysis.h,
 *                    tbe_metric_mean): per step (x axis = step number)
 *                    the step's time-weighted mean over all GPUs; a trace
 *                    without steps, a time series: the mean of each time
 *                    bucket (metric_buckets: x = milliseconds since the
 *                    window's start, wall time = the bucket's start).  The
 *                    tag is the metric's name (kernel_tag)
 *   summary/gpu_metrics/<metric>  the window's mean (step 0)
 *   profiler/…       dropped records, overhead, ended early
 *   summary/top_kernels, summary/advice   Markdown text
 *   summary/top_operators  the operator table by CUDA total, with the
 *                    kernels each launched (Markdown; only with operators'
 *                    GPU work)
 *   summary/kernel_metrics  the range profiler's figures per kernel and
 *                    the PM means while each kernel ran (Markdown; only
 *                    with them)
 *   custom_scalars__config__  the comparison layout (layout_*): one chart
 *                    per tag, so that each line of a chart is a run
 * Every tag carries a description (tbe__ev_describe(): what the figure is and its
 * unit, a function of the tag alone, so that all runs describe a tag
 * alike) on its first record (tbe_writer_add_scalar_described), which is
 * where TensorBoard reads it.
 *
 * The "hparams" output writes the host's HParams session into a file of
 * its own in the same folder (hparams_write; what a session holds:
 * export_hparams.c).  The job (tbe__job_write, for a multi-host run, into
 * the run's own folder) adds the series of the job as a whole (job_steps:
 * per step, the slowest, median and fastest host and which was slowest),
 * the run report's ranks table as text, and a session of its own.
 * A trace without hardware metrics writes no byte that depends on them.
 * Tags depend only on what was measured, never on the run name, so two
 * runs overlay in the Scalars dashboard.
 *
 * Kernel tags (kernels/<tag>, diff/<base>/kernels/<tag>) and every tag's
 * description: export_events_tags.c.
 *
 * Wall times are the trace's own end time (seconds), so re-exporting a
 * trace gives the same records.  Scalars per tag are written with strictly
 * increasing steps (TensorBoard's loader drops earlier points at an equal
 * or later step).
 *
 * Files: the summary is written into the file export_run.c staged for it
 * (events.out.tfevents.<ts>.<host>.tbexport-summary, exporter.h); the diff
 * writers place theirs the same way, in <logdir>/<new run>/ under the run
 * lock, as events.out.tfevents.<ts>.<base>.tbexport-diff, replacing the
 * earlier comparison against the same base, and, when the base is a run
 * of the same log dir, the report again in <logdir>/<base run>/ (tags
 * diff/<new>/…).  Either file is complete under its final name or absent
 * (a crash leaves a hidden temporary file that the next write into the
 * folder removes). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/intern.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "events/writer_internal.h"
#include "tbexport/export.h"
#include "tbexport/writer.h"
#include "trace/export/export_events.h"
#include "trace/run/run_layout.h"
#include "trace/run/run_scan.h"
#include "trace/run/run_stage.h"
#include "trace/export/export_events_tags.h"
#include "trace/export/export_hparams.h"
#include "trace/exporter.h"
#include "trace/report/report.h"

#define TOP_KERNELS 20
#define TOP_STEP_KERNELS 10
#define TOP_OPS 10        /* operators with a series (ops/<tag>/cuda_ms) */
#define TOP_OPS_TEXT 20   /* rows of summary/top_operators */
#define TAG_WIDTH TBE__EV_TAG_WIDTH
/* The first step is warm-up (CUDA context, autotuning, allocator growth)
 * when it took more than this many times the median of the other steps:
 * the per-step series then start at the second step, so that one run's
 * first second does not flatten every curve drawn with it. */
#define WARMUP_FACTOR 2.0
/* At most this many time buckets for a trace's GPU metrics without
 * steps; a bucket is a whole number of milliseconds (1, 2, 5 x 10^k). */
#define METRIC_BUCKETS 200

static double ms(int64_t ns) { return (double)ns / 1e6; }

static double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* ---- the writer of one file ---- */

typedef struct ew {
  tbe_writer *w;
  double wall;
  int rc;
  tbe__intern seen; /* the tags written: a tag's first record carries its description */
} ew;

static void ew_init(ew *e, tbe_writer *w, double wall, const tbe_allocator *a) {
  e->w = w;
  e->wall = wall;
  e->rc = 0;
  tbe__intern_init(&e->seen, a, TBE__SEED_PROCESS);
}

static void ew_deinit(ew *e) { tbe__intern_deinit(&e->seen); }

/* A point of `tag` at `wall` (the first of the tag with its description;
 * `name`: what a kernel's or operator's tag stands for). */
static void scalar_at(ew *e, const char *tag, double v, int64_t step, double wall,
                      const char *name) {
  if (e->rc) return;
  uint32_t id;
  int added = 0;
  int rc = tbe__intern_add(&e->seen, tag, strlen(tag), &id, &added);
  if (rc < 0) {
    e->rc = rc;
    return;
  }
  if (!added) {
    e->rc = tbe_writer_add_scalar(e->w, tag, v, step, wall);
    return;
  }
  tbe__buf d;
  tbe__buf_init(&d, e->seen.a);
  tbe__ev_describe(&d, tag, name);
  if (tbe__buf_error(&d))
    e->rc = TBE_ENOMEM;
  else
    e->rc = tbe_writer_add_scalar_described(e->w, tag, v, step, wall, NULL, (char *)d.data);
  tbe__buf_deinit(&d);
}

static void scalar(ew *e, const char *tag, double v, int64_t step) {
  scalar_at(e, tag, v, step, e->wall, NULL);
}

static void text(ew *e, const char *tag, const char *md, const char *description) {
  if (e->rc) return;
  e->rc = tbe_writer_add_text_described(e->w, tag, md, 0, e->wall, description);
}

static int64_t copy_ns(const tbe_device_stats *d) {
  int64_t s = 0;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) s += d->memcpy_ns[k];
  return s;
}

static void device_scalars(ew *e, const char *prefix, const tbe_device_stats *d) {
  char tag[96];
#define S(name, v)                               \
  do {                                           \
    tbe__ev_fmt(tag, sizeof tag, "%s/%s", prefix, name); \
    scalar(e, tag, (v), 0);                      \
  } while (0)
  S("gpu_busy_pct", pct(d->busy_ns, d->wall_ns));
  S("kernel_time_ms", ms(d->kernel_ns));
  S("memcpy_time_ms", ms(copy_ns(d)));
  S("memcpy_htod_ms", ms(d->memcpy_ns[TBE_COPY_HTOD]));
  S("memcpy_dtoh_ms", ms(d->memcpy_ns[TBE_COPY_DTOH]));
  S("memcpy_dtod_ms", ms(d->memcpy_ns[TBE_COPY_DTOD]));
  S("memset_time_ms", ms(d->memset_ns));
  S("sync_time_ms", ms(d->sync_ns));
  S("idle_time_ms", ms(d->idle_ns));
  S("kernel_count", (double)d->kernel_count);
  if (d->launch_median_ns >= 0) S("launch_latency_us", (double)d->launch_median_ns / 1e3);
  if (d->launch_overhead_median_ns >= 0)
    S("launch_overhead_us", (double)d->launch_overhead_median_ns / 1e3);
  if (d->queue_delay_median_ns >= 0) S("queue_delay_us", (double)d->queue_delay_median_ns / 1e3);
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) { /* from the table */
    const tbe__figure *f = &tbe__figures[i];
    if (!tbe__fig_listed(f)) continue; /* (a row of another struct) */
    double v = tbe__fig_real(f, d, 0);
    if (isnan(v)) continue;
    char leaf[128]; /* durations in ms, as the scalars above */
    int dur = tbe__ev_row_tag(f, leaf, sizeof leaf);
    tbe__ev_fmt(tag, sizeof tag, "%s/%s", prefix, leaf);
    scalar(e, tag, dur ? v / 1e6 : v, 0);
  }
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    if (!d->class_count[k]) continue;
    tbe__ev_fmt(tag, sizeof tag, "%s/class/%s_ms", prefix, tbe_kernel_class_name(k));
    scalar(e, tag, ms(d->class_ns[k]), 0);
  }
#undef S
}

/* ---- the custom-scalars layout ----
 * Every run writes its own layout; TensorBoard merges the runs' layouts
 * by category title, dropping charts that are already there.  Each chart
 * here draws one tag (an anchored regular expression), so that each of
 * its lines is one run, and one unit; a run lists only the charts of the
 * tags it writes.  A tag is [A-Za-z0-9_.:/-] only, so '.' is the one
 * character to escape.
 *
 * Every layout holds every category of CATEGORIES, in that order, empty
 * where the run has no chart in it: TensorBoard 2.21's merge keeps the
 * charts of later runs only in categories the first run (by name) has;
 * a category first met in a later run keeps that run's charts alone (its
 * bookkeeping points at the run's own copy, not the merged one), so a
 * third run's GPU metrics or kernels would be dropped from the view. */
static const char *const CATEGORIES[] = {
    "tbexport: compare steps",
    "tbexport: time per kernel class (ms per step)",
    "tbexport: top kernels (ms per step)",
    "tbexport: GPU metrics",
    "tbexport: operators (CUDA total, ms per step)",
    "tbexport: multi-host jobs (per step)",
};
#define NCATEGORIES (sizeof CATEGORIES / sizeof CATEGORIES[0])
#define LAYOUT_CHARTS 96
#define LAYOUT_CATS 8
#define LAYOUT_TEXT 384

typedef struct layout {
  tbe_chart charts[LAYOUT_CHARTS];
  const char *re[LAYOUT_CHARTS];
  size_t n;
  tbe_category cats[LAYOUT_CATS];
  size_t ncats;
  char *pool; /* LAYOUT_CHARTS * 2 texts of LAYOUT_TEXT bytes */
} layout;

static int layout_init(layout *l, const tbe_allocator *a) {
  memset(l, 0, sizeof *l);
  l->pool = tbe__alloc(a, (size_t)LAYOUT_CHARTS * 2 * LAYOUT_TEXT);
  return l->pool ? 0 : TBE_ENOMEM;
}

static void layout_free(layout *l, const tbe_allocator *a) { tbe__free(a, l->pool); }

/* Starts a category (its charts are the ones added until the next). */
static void layout_category(layout *l, const char *title) {
  if (l->ncats && !l->cats[l->ncats - 1].ncharts) l->ncats--; /* an empty one goes */
  if (l->ncats == LAYOUT_CATS) return;
  l->cats[l->ncats].title = title;
  l->cats[l->ncats].charts = &l->charts[l->n];
  l->cats[l->ncats].ncharts = 0;
  l->ncats++;
}

/* A chart of the one tag `tag`, titled `title` (cut to fit). */
static void layout_chart(layout *l, const char *title, const char *tag) {
  if (!l->ncats || l->n == LAYOUT_CHARTS) return;
  char *t = l->pool + l->n * 2 * LAYOUT_TEXT, *re = t + LAYOUT_TEXT;
  snprintf(t, LAYOUT_TEXT, "%s", title);
  size_t at = 0;
  re[at++] = '^';
  for (const char *c = tag; *c && at + 3 < LAYOUT_TEXT; c++) {
    if (*c == '.') re[at++] = '\\';
    re[at++] = *c;
  }
  re[at++] = '$';
  re[at] = 0;
  l->re[l->n] = re;
  l->charts[l->n] = (tbe_chart){t, 0, &l->re[l->n], 1};
  l->n++;
  l->cats[l->ncats - 1].ncharts++;
}

/* Writes the layout: CATEGORIES in their order, each with the run's
 * charts in it (none when it has none); nothing when the run has no
 * chart at all. */
static void layout_write(ew *e, layout *l) {
  if (l->ncats && !l->cats[l->ncats - 1].ncharts) l->ncats--;
  if (e->rc || !l->ncats) return;
  tbe_category all[NCATEGORIES + LAYOUT_CATS];
  size_t n = NCATEGORIES;
  for (size_t k = 0; k < NCATEGORIES; k++) all[k] = (tbe_category){CATEGORIES[k], NULL, 0, 0};
  for (size_t i = 0; i < l->ncats; i++) {
    size_t k = 0;
    while (k < NCATEGORIES && strcmp(l->cats[i].title, CATEGORIES[k]) != 0) k++;
    all[k < NCATEGORIES ? k : n++] = l->cats[i]; /* (one not listed: after them) */
  }
  e->rc = tbe__writer_layout_at(e->w, all, n, e->wall);
}

/* A chart title for a kernel or operator: its short name. */
static void short_title(char *buf, size_t size, const char *name, const char *unit) {
  char s[96];
  tbe_name_shorten(name, 64, s, sizeof s);
  snprintf(buf, size, "%s (%s)", s, unit);
}

/* ---- steps ---- */

static int cmp_step_num(const void *x, const void *y) {
  const tbe_step_stats *a = *(const tbe_step_stats *const *)x;
  const tbe_step_stats *b = *(const tbe_step_stats *const *)y;
  return (a->num > b->num) - (a->num < b->num);
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* The value of nearest rank p (0 < p <= 1) of v[0..n) sorted, n > 0. */
static int64_t nearest_rank(const int64_t *v, size_t n, double p) {
  size_t r = (size_t)(p * (double)n + 0.999999);
  if (r < 1) r = 1;
  if (r > n) r = n;
  return v[r - 1];
}

/* The median and the 90th percentile of the step times (nearest rank),
 * in q[0] and q[1]; an->nsteps > 0.  The summary scalars read them.
 * Returns 0 or TBE_ENOMEM. */
static int step_median_p90(const tbe_analysis *an, const tbe_allocator *a, int64_t q[2]) {
  size_t n = an->nsteps;
  int64_t *v = tbe__alloc(a, n * sizeof *v);
  if (!v) return TBE_ENOMEM;
  for (size_t i = 0; i < n; i++) v[i] = an->steps[i].dur_ns;
  qsort(v, n, sizeof *v, cmp_i64);
  q[0] = nearest_rank(v, n, 0.5);
  q[1] = nearest_rank(v, n, 0.9);
  tbe__free(a, v);
  return 0;
}

/* An analysis's steps one per step number (the first of a number), in
 * number order: the points of the per-step series. */
typedef struct step_order {
  const tbe_step_stats **s; /* n of them */
  size_t *index;            /* each one's index in an->steps */
  size_t n;
  size_t from; /* the first one the series show: 1 after a warm-up step */
} step_order;

/* Whether the first of d[0..n) (step times in number order) is warm-up:
 * at least 3 steps and the first took more than WARMUP_FACTOR times the
 * median (nearest rank) of the others. */
static int warmup(const int64_t *d, size_t n, const tbe_allocator *a, int *rc) {
  if (n < 3) return 0;
  int64_t *v = tbe__alloc(a, (n - 1) * sizeof *v);
  if (!v) {
    *rc = TBE_ENOMEM;
    return 0;
  }
  memcpy(v, d + 1, (n - 1) * sizeof *v);
  qsort(v, n - 1, sizeof *v, cmp_i64);
  int64_t med = nearest_rank(v, n - 1, 0.5);
  tbe__free(a, v);
  return med > 0 && (double)d[0] > WARMUP_FACTOR * (double)med;
}

static int step_order_make(step_order *o, const tbe_analysis *an, const tbe_allocator *a) {
  memset(o, 0, sizeof *o);
  if (!an->nsteps) return 0;
  o->s = tbe__alloc(a, an->nsteps * sizeof *o->s);
  o->index = tbe__alloc(a, an->nsteps * sizeof *o->index);
  int64_t *d = tbe__alloc(a, an->nsteps * sizeof *d);
  int rc = 0;
  if (!o->s || !o->index || !d) {
    rc = TBE_ENOMEM;
  } else {
    const tbe_step_stats **all = o->s;
    for (size_t i = 0; i < an->nsteps; i++) all[i] = &an->steps[i];
    qsort(all, an->nsteps, sizeof *all, cmp_step_num);
    for (size_t i = 0; i < an->nsteps; i++) {
      if (o->n && all[i]->num == o->s[o->n - 1]->num) continue;
      o->s[o->n] = all[i];
      o->index[o->n] = (size_t)(all[i] - an->steps);
      d[o->n] = all[i]->dur_ns;
      o->n++;
    }
    o->from = (size_t)warmup(d, o->n, a, &rc);
  }
  tbe__free(a, d);
  return rc;
}

static void step_order_free(step_order *o, const tbe_allocator *a) {
  tbe__free(a, o->s);
  tbe__free(a, o->index);
}

/* ---- GPU metrics ---- */

/* The tags of an analysis' PM metrics ("gpu_metrics/<kernel_tag of the
 * name>"), nm = an->ngpu_metrics of them, in one block freed with
 * tbe__free; NULL (and TBE_ENOMEM in *rc) when it cannot be had. */
typedef char metric_tag_t[TAG_WIDTH + 24];
static metric_tag_t *metric_tags(const tbe_analysis *an, const tbe_allocator *a, int *rc) {
  metric_tag_t *t = tbe__calloc(a, an->ngpu_metrics ? an->ngpu_metrics : 1, sizeof *t);
  if (!t) {
    *rc = TBE_ENOMEM;
    return NULL;
  }
  for (size_t k = 0; k < an->ngpu_metrics; k++) {
    char comp[TAG_WIDTH + 1];
    tbe__ev_kernel_tag(an->gpu_metrics[k], comp, sizeof comp);
    tbe__ev_fmt(t[k], sizeof t[k], "gpu_metrics/%s", comp);
  }
  return t;
}

/* Means `m` (ngpu_metrics of them) as points at `step`. */
static void metric_points(ew *e, const tbe_analysis *an, const metric_tag_t *tags,
                          const tbe_metric_mean *m, int64_t step) {
  if (!m) return;
  for (size_t k = 0; k < an->ngpu_metrics; k++)
    if (m[k].samples) scalar(e, tags[k], m[k].mean, step);
}

/* The window's means as summary/gpu_metrics/<metric> (step 0). */
static void metric_summary(ew *e, const tbe_analysis *an, const metric_tag_t *tags) {
  const tbe_metric_mean *m = an->all.metrics;
  char tag[sizeof(metric_tag_t) + 16];
  for (size_t k = 0; m && k < an->ngpu_metrics; k++) {
    if (!m[k].samples) continue;
    tbe__ev_fmt(tag, sizeof tag, "summary/%s", tags[k]);
    scalar(e, tag, m[k].mean, 0);
  }
}

/* The bucket width for a window of `wall` ns: the smallest of 1, 2, 5 x
 * 10^k ms that makes at most METRIC_BUCKETS buckets. */
static int64_t bucket_width(int64_t wall) {
  int64_t w = 1000000; /* 1 ms */
  for (int k = 0; k < 40 && wall / w >= METRIC_BUCKETS; k++) {
    int64_t next = (k % 3 == 1) ? w / 2 * 5 : w * 2; /* 1, 2, 5, 10, 20, 50, ... */
    if (next <= w) break;
    w = next;
  }
  return w;
}

/* A trace without steps: each PM metric as a time series, the
 * time-weighted mean over all GPUs of each bucket of bucket_width() ms of
 * the window (the intervals of the samples as the analysis weighs them:
 * a sample holds until the next one), at step = the bucket's start in ms
 * since the window's start and wall time = that start.  A bucket no
 * interval reaches has no point.  Linear in the samples and buckets. */
static int metric_buckets(ew *e, const tbe_analysis *an, const metric_tag_t *tags,
                          const tbe_allocator *a) {
  const tbe_trace *t = an->trace;
  size_t nm = an->ngpu_metrics;
  if (!t || !nm || an->wall_ns <= 0) return 0;
  int64_t lo = an->start_ns, width = bucket_width(an->wall_ns);
  int64_t hi = tbe__sat_add(lo, an->wall_ns);
  size_t nb = (size_t)((an->wall_ns + width - 1) / width);
  double *vw = tbe__calloc(a, nm * nb, sizeof *vw), *w = tbe__calloc(a, nm * nb, sizeof *w);
  if (!vw || !w) {
    tbe__free(a, vw);
    tbe__free(a, w);
    return TBE_ENOMEM;
  }
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (!tbe_track_is_metric(tr) || tr->count < 2) continue;
    const char *name = tbe_trace_str(t, tr->name);
    size_t k = 0;
    while (k < nm && (!name || strcmp(an->gpu_metrics[k], name) != 0)) k++;
    if (k == nm) continue;
    for (uint32_t j = 0; j + 1 < tr->count; j++) {
      const tbe_event *ev = &t->events[tr->first + j];
      const tbe_counter *c = tbe_trace_counter(t, ev);
      int64_t s = ev->start_ns, end = t->events[tr->first + j + 1].start_ns;
      if (!c || !isfinite(c->value)) continue;
      if (s < lo) s = lo;
      if (end > hi) end = hi;
      while (s < end) {
        size_t bk = (size_t)((s - lo) / width);
        int64_t bend = lo + (int64_t)(bk + 1) * width;
        int64_t piece = (end < bend ? end : bend) - s;
        vw[k * nb + bk] += c->value * (double)piece;
        w[k * nb + bk] += (double)piece;
        s += piece;
      }
    }
  }
  for (size_t k = 0; k < nm && !e->rc; k++)
    for (size_t bk = 0; bk < nb && !e->rc; bk++) {
      if (w[k * nb + bk] <= 0) continue;
      int64_t off = (int64_t)bk * width;
      double wall = (double)(lo + off) / 1e9;
      scalar_at(e, tags[k], vw[k * nb + bk] / w[k * nb + bk], off / 1000000,
                wall > 0 ? wall : e->wall, NULL);
    }
  tbe__free(a, vw);
  tbe__free(a, w);
  return e->rc;
}

/* The "GPU metrics" category: one chart per PM metric (their units
 * differ), titled with the metric's name, the runs as its lines. */
static void layout_metrics(layout *l, const tbe_analysis *an, const metric_tag_t *tags) {
  layout_category(l, "tbexport: GPU metrics");
  for (size_t k = 0; k < an->ngpu_metrics; k++) layout_chart(l, an->gpu_metrics[k], tags[k]);
}

/* ---- the host's series ---- */

/* The per-step series: one point per step number (the first step of a
 * number when several share it), a warm-up first step left out (its time
 * as summary/warmup_step_ms), so runs overlay as curves. */
static void step_series(ew *e, const tbe_analysis *an, const step_order *so,
                        char (*ktag)[TAG_WIDTH + 8], size_t nk, const metric_tag_t *mtags) {
  char tag[160];
  for (size_t i = so->from; i < so->n && !e->rc; i++) {
    const tbe_step_stats *s = so->s[i];
    scalar(e, "steps/step_time_ms", ms(s->dur_ns), s->num);
    scalar(e, "steps/gpu_busy_pct", pct(s->gpu_busy_ns, s->dur_ns), s->num);
    scalar(e, "steps/kernel_time_ms", ms(s->kernel_ns), s->num);
    scalar(e, "steps/kernel_count", (double)s->kernel_count, s->num);
    scalar(e, "steps/memcpy_time_ms", ms(s->memcpy_ns), s->num);
    scalar(e, "steps/memset_time_ms", ms(s->memset_ns), s->num);
    scalar(e, "steps/sync_time_ms", ms(s->sync_ns), s->num);
    if (s->launch_median_ns >= 0)
      scalar(e, "steps/launch_latency_us", (double)s->launch_median_ns / 1e3, s->num);
    if (s->launch_overhead_median_ns >= 0)
      scalar(e, "steps/launch_overhead_us", (double)s->launch_overhead_median_ns / 1e3, s->num);
    if (s->queue_delay_median_ns >= 0)
      scalar(e, "steps/queue_delay_us", (double)s->queue_delay_median_ns / 1e3, s->num);
    /* Every class the run has, so a class absent from one step reads 0
     * there instead of a gap. */
    for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
      if (!an->all.class_count[k]) continue;
      tbe__ev_fmt(tag, sizeof tag, "steps/class/%s_ms", tbe_kernel_class_name(k));
      scalar(e, tag, ms(s->class_ns[k]), s->num);
    }
    for (size_t j = 0; j < nk; j++) {
      const tbe_name_stats *kn = &an->groups[TBE_GROUP_KERNEL][j];
      if (!kn->step_ns) continue;
      tbe__ev_fmt(tag, sizeof tag, "steps/kernels/%s", ktag[j]);
      scalar_at(e, tag, ms(kn->step_ns[so->index[i]]), s->num, e->wall, kn->label);
    }
    if (mtags) metric_points(e, an, mtags, s->metrics, s->num);
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) { /* from the table */
      const tbe__figure *fr = &tbe__figures[f];
      if (!tbe__fig_step_listed(fr)) continue; /* (a row of another struct) */
      double v = tbe__fig_real(fr, s, 0);
      if (isnan(v)) continue; /* unknown: no point */
      char leaf[128];
      int dur = tbe__ev_row_tag(fr, leaf, sizeof leaf);
      tbe__ev_fmt(tag, sizeof tag, "steps/%s", leaf);
      scalar(e, tag, dur ? v / 1e6 : v, s->num);
    }
  }
  if (so->from) scalar(e, "summary/warmup_step_ms", ms(so->s[0]->dur_ns), 0);
}

/* The distribution of the step times, as single points. */
static void step_summary(ew *e, const tbe_analysis *an, const tbe_allocator *a) {
  int64_t q[2] = {0, 0};
  if (!e->rc && step_median_p90(an, a, q)) e->rc = TBE_ENOMEM;
  scalar(e, "summary/step_time_median_ms", ms(q[0]), 0);
  scalar(e, "summary/step_time_p90_ms", ms(q[1]), 0);
  scalar(e, "summary/steps", (double)an->nsteps, 0);
}

/* The charts of the per-step series. */
static void layout_steps(layout *l, const tbe_analysis *an, int launch) {
  layout_category(l, "tbexport: compare steps");
  layout_chart(l, "step time (ms)", "steps/step_time_ms");
  layout_chart(l, "GPU busy per step (%)", "steps/gpu_busy_pct");
  layout_chart(l, "kernel time per step (ms)", "steps/kernel_time_ms");
  layout_chart(l, "kernels per step", "steps/kernel_count");
  layout_chart(l, "copies per step (ms)", "steps/memcpy_time_ms");
  layout_chart(l, "memsets per step (ms)", "steps/memset_time_ms");
  layout_chart(l, "synchronization per step (ms)", "steps/sync_time_ms");
  if (launch & 1) layout_chart(l, "launch latency per step (µs)", "steps/launch_latency_us");
  if (launch & 2) layout_chart(l, "launch overhead per step (µs)", "steps/launch_overhead_us");
  if (launch & 4) layout_chart(l, "queue delay per step (µs)", "steps/queue_delay_us");
  char title[64], tag[64];
  for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) { /* the rows' series */
    const tbe__figure *fr = &tbe__figures[f];
    if (!tbe__fig_step_listed(fr) || !tbe__fig_known(fr, an->steps, an->nsteps, sizeof *an->steps))
      continue;
    char leaf[48];
    int dur = tbe__ev_row_tag(fr, leaf, sizeof leaf);
    tbe__ev_fmt(title, sizeof title, "%s per step (%s)", fr->label,
                dur                   ? "ms"
                : tbe__fig_is_mem(fr) ? "bytes"
                                      : "count");
    tbe__ev_fmt(tag, sizeof tag, "steps/%s", leaf);
    layout_chart(l, title, tag);
  }
  layout_category(l, "tbexport: time per kernel class (ms per step)");
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    if (!an->all.class_count[k]) continue;
    tbe__ev_fmt(title, sizeof title, "%s kernels (ms per step)", tbe_kernel_class_name(k));
    tbe__ev_fmt(tag, sizeof tag, "steps/class/%s_ms", tbe_kernel_class_name(k));
    layout_chart(l, title, tag);
  }
}

/* The operators' series (a trace whose GPU work is attributed to
 * operators): for the TOP_OPS operators by CUDA total that have any,
 * ops/<tag>/cuda_ms (the kernel-tag scheme on the operator's name) per
 * step number, their CUDA total in each step (the first step of a
 * number, warm-up left out as for the step series), or without per-step
 * figures one point at step 0 with the total; a chart each.  Returns 0
 * or e->rc. */
static int op_series(ew *e, tbe_analysis *an, const step_order *so, layout *l) {
  if (!an->op_gpu_count || e->rc) return e->rc;
  tbe_analysis_sort(an, TBE_GROUP_CPU_OP, TBE_SORT_CUDA_TOTAL);
  size_t n = 0;
  while (n < an->ngroups[TBE_GROUP_CPU_OP] && n < TOP_OPS &&
         an->groups[TBE_GROUP_CPU_OP][n].cuda_total_ns > 0)
    n++;
  if (n) layout_category(l, "tbexport: operators (CUDA total, ms per step)");
  char used[TOP_OPS][TAG_WIDTH + 8], tag[160], title[128];
  for (size_t i = 0; i < n && !e->rc; i++) {
    const tbe_name_stats *op = &an->groups[TBE_GROUP_CPU_OP][i];
    tbe__ev_unique_kernel_tag(op->label, used, i);
    tbe__ev_fmt(tag, sizeof tag, "ops/%s/cuda_ms", used[i]);
    short_title(title, sizeof title, op->label, "ms");
    layout_chart(l, title, tag);
    if (!op->cuda_step_ns || !so->n) {
      scalar_at(e, tag, ms(op->cuda_total_ns), 0, e->wall, op->label);
      continue;
    }
    for (size_t k = so->from; k < so->n; k++)
      scalar_at(e, tag, ms(op->cuda_step_ns[so->index[k]]), so->s[k]->num, e->wall, op->label);
  }
  return e->rc;
}

/* summary/top_operators: the operator table by CUDA total (Markdown). */
static void op_text(ew *e, tbe_analysis *an, const tbe_allocator *a) {
  if (!an->op_gpu_count || e->rc) return;
  tbe_analysis_sort(an, TBE_GROUP_CPU_OP, TBE_SORT_CUDA_TOTAL);
  size_t n = an->ngroups[TBE_GROUP_CPU_OP];
  tbe__buf b;
  tbe__buf_init(&b, a);
  tbe__buf_printf(&b, "Top operators by CUDA total (%zu of %zu); they launched %llu GPU activities "
                      "(%.3f ms) themselves.\n\n",
                  n < TOP_OPS_TEXT ? n : TOP_OPS_TEXT, n, (unsigned long long)an->op_gpu_count,
                  ms(an->op_gpu_ns));
  tbe__ops_md(&b, an, TBE_GROUP_CPU_OP, TOP_OPS_TEXT, 0);
  tbe__buf_putc(&b, '\0');
  if (tbe__buf_error(&b)) e->rc = TBE_ENOMEM;
  else
    text(e, "summary/top_operators", (const char *)b.data,
         tbe__ev_text_description("summary/top_operators"));
  tbe__buf_deinit(&b);
}

/* summary/kernel_metrics: the kernels' range-profiler figures and PM
 * means (Markdown, the summary's tables), when the trace has them. */
static void kernel_metrics_text(ew *e, const tbe_analysis *an, const tbe_allocator *a) {
  if ((!an->nkernel_metrics && !an->ngpu_metrics) || e->rc) return;
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.top = TOP_KERNELS;
  tbe__buf b;
  tbe__buf_init(&b, a);
  tbe__metrics_kernels(&b, an, &o, 1);
  if (b.len) {
    tbe__buf_putc(&b, '\0');
    if (tbe__buf_error(&b))
      e->rc = TBE_ENOMEM;
    else
      text(e, "summary/kernel_metrics", (const char *)b.data,
           tbe__ev_text_description("summary/kernel_metrics"));
  }
  tbe__buf_deinit(&b);
}

static int write_summary(ew *e, tbe_analysis *an, const tbe_allocator *a) {
  char tag[160];
  scalar(e, "summary/wall_time_ms", ms(an->wall_ns), 0);
  device_scalars(e, "summary", &an->all);
  scalar(e, "summary/host_busy_pct", pct(an->host_busy_ns, an->wall_ns), 0);
  scalar(e, "summary/sync_calls", (double)an->sync_calls, 0);
  if (an->ndevices > 1) {
    for (size_t i = 0; i < an->ndevices; i++) {
      char prefix[32];
      snprintf(prefix, sizeof prefix, "gpu%d", (int)an->devices[i].device);
      device_scalars(e, prefix, &an->devices[i]);
    }
  }
  scalar(e, "profiler/dropped_records", (double)an->dropped_records, 0);
  scalar(e, "profiler/out_of_range_records", (double)an->out_of_range_records, 0);
  scalar(e, "profiler/overhead_ms", ms(an->overhead_ns), 0);
  scalar(e, "profiler/ended_early", an->ended_early ? 1.0 : 0.0, 0);

  /* Top kernels by total time, with unique tags. */
  tbe_analysis_sort(an, TBE_GROUP_KERNEL, TBE_SORT_TOTAL);
  size_t nk = an->ngroups[TBE_GROUP_KERNEL];
  if (nk > TOP_KERNELS) nk = TOP_KERNELS;
  char used[TOP_KERNELS][TAG_WIDTH + 8];
  for (size_t i = 0; i < nk && !e->rc; i++) {
    const tbe_name_stats *k = &an->groups[TBE_GROUP_KERNEL][i];
    tbe__ev_unique_kernel_tag(k->label, used, i);
    tbe__ev_fmt(tag, sizeof tag, "kernels/%s", used[i]);
    scalar_at(e, tag, ms(k->total_ns), 0, e->wall, k->label);
  }

  layout l;
  step_order so;
  metric_tag_t *mtags = NULL;
  if (!e->rc) e->rc = layout_init(&l, a);
  if (e->rc) return e->rc;
  e->rc = step_order_make(&so, an, a);
  if (an->ngpu_metrics && !e->rc) mtags = metric_tags(an, a, &e->rc);
  if (so.n && !e->rc) {
    int launch = 0; /* the launch series written: 1 latency, 2 overhead, 4 queue delay */
    for (size_t i = so.from; i < so.n; i++)
      launch |= (so.s[i]->launch_median_ns >= 0) | (so.s[i]->launch_overhead_median_ns >= 0) << 1 |
                (so.s[i]->queue_delay_median_ns >= 0) << 2;
    layout_steps(&l, an, launch);
    size_t nks = nk < TOP_STEP_KERNELS ? nk : TOP_STEP_KERNELS;
    step_series(e, an, &so, used, nks, mtags);
    step_summary(e, an, a);
    layout_category(&l, "tbexport: top kernels (ms per step)");
    for (size_t j = 0; j < nks; j++) {
      const tbe_name_stats *kn = &an->groups[TBE_GROUP_KERNEL][j];
      char title[128];
      if (!kn->step_ns) continue;
      tbe__ev_fmt(tag, sizeof tag, "steps/kernels/%s", used[j]);
      short_title(title, sizeof title, kn->label, "ms");
      layout_chart(&l, title, tag);
    }
  } else if (mtags && !e->rc) {
    e->rc = metric_buckets(e, an, mtags, a);
  }
  if (mtags && !e->rc) {
    metric_summary(e, an, mtags);
    layout_metrics(&l, an, mtags);
  }
  if (!e->rc) op_series(e, an, &so, &l);
  layout_write(e, &l);
  layout_free(&l, a);
  step_order_free(&so, a);
  tbe__free(a, mtags);
  if (e->rc) return e->rc;

  if (an->ngroups[TBE_GROUP_KERNEL] && !e->rc) {
    tbe__buf b;
    tbe__buf_init(&b, a);
    tbe__buf_printf(&b, "Top kernels by total time (%zu of %zu); GPU busy %.1f%% of %.3f ms.\n\n",
                    nk, an->ngroups[TBE_GROUP_KERNEL], pct(an->all.busy_ns, an->wall_ns),
                    ms(an->wall_ns));
    tbe__md_kernels(&b, an, TOP_KERNELS, 0);
    tbe__buf_putc(&b, '\0');
    if (tbe__buf_error(&b)) e->rc = TBE_ENOMEM;
    else
      text(e, "summary/top_kernels", (const char *)b.data,
           tbe__ev_text_description("summary/top_kernels"));
    tbe__buf_deinit(&b);
  }
  op_text(e, an, a);
  kernel_metrics_text(e, an, a);
  if (an->nadvice && !e->rc) {
    tbe__buf b;
    tbe__buf_init(&b, a);
    for (size_t i = 0; i < an->nadvice; i++) {
      tbe__buf_puts(&b, "- ");
      tbe__md_escape(&b, an->advice[i].text);
      tbe__buf_putc(&b, '\n');
    }
    tbe__buf_putc(&b, '\0');
    if (tbe__buf_error(&b)) e->rc = TBE_ENOMEM;
    else
      text(e, "summary/advice", (const char *)b.data, tbe__ev_text_description("summary/advice"));
    tbe__buf_deinit(&b);
  }
  return e->rc;
}

static double trace_wall(const tbe_analysis *an) {
  int64_t end = tbe__sat_add(an->start_ns, an->wall_ns);
  return end > 0 ? (double)end / 1e9 : TBE_WALL_NOW;
}

/* A writer whose records go into `out`, like every other output's bytes
 * (the writer frames and buffers; each flush of whole records is one sink
 * write, and the sink's sticky error is the writer's).  Its first
 * record, the file_version, is at wall time 0 in every file we write:
 * TensorBoard's run list (Scalars, Custom Scalars, /data/runs) orders runs
 * by the wall time of their first record, then by name, so ours are in
 * name order, as Time Series lists them: a job before its hosts, ranks in
 * rank order (export_run.c names their folders for it), and a re-export
 * the same bytes. */
#define FILE_VERSION_WALL 0.0
static int sink_put(void *sink, const void *p, size_t n) {
  tbe__sink_write(sink, p, n);
  return tbe__sink_error(sink);
}

static int writer_on(tbe_writer **w, tbe__sink *out, const char *path, const tbe_allocator *a) {
  const tbe__writer_out to = {sink_put, NULL, out};
  tbe_writer_options wo;
  tbe_writer_options_init(&wo);
  wo.allocator = a;
  return tbe__writer_open_out(w, &to, path, &wo, FILE_VERSION_WALL);
}

/* The trace's analysis: the one ctx shares, made on first use, or a new
 * one (*own set: the caller frees it). */
static int analysis_of(const tbe__export_ctx *ctx, const tbe_allocator *al, tbe_analysis **an,
                       int *own) {
  *own = 0;
  if (ctx->analysis && *ctx->analysis) {
    *an = *ctx->analysis;
    return 0;
  }
  int rc = tbe_analysis_create(an, ctx->trace, ctx->analysis ? ctx->a : al);
  if (rc) return rc;
  if (ctx->analysis) *ctx->analysis = *an;
  else *own = 1;
  return 0;
}

static int events_write(const tbe__export_ctx *ctx, tbe__sink *out) {
  tbe_allocator al;
  tbe__allocator_init(&al, ctx->a);
  tbe_analysis *an = NULL;
  int own;
  int rc = analysis_of(ctx, &al, &an, &own);
  if (rc) return rc;
  tbe_writer *w = NULL;
  rc = writer_on(&w, out, "summary", &al);
  if (rc) {
    if (own) tbe_analysis_free(an);
    return rc;
  }
  ew e;
  ew_init(&e, w, trace_wall(an), &al);
  rc = write_summary(&e, an, &al);
  ew_deinit(&e);
  if (own) tbe_analysis_free(an);
  int crc = tbe_writer_close(w);
  return rc ? rc : crc;
}

const tbe__exporter tbe__exporter_events = {"events", TBE_OUT_EVENTS, events_write};

/* ---- the HParams session (export_hparams.c makes it) ---- */

static int hparams_write(const tbe__export_ctx *ctx, tbe__sink *out) {
  int rc = tbe__labels_check(ctx->labels, ctx->nlabels);
  if (rc) return rc;
  tbe_allocator al;
  tbe__allocator_init(&al, ctx->a);
  tbe_analysis *an = NULL;
  int own;
  if ((rc = analysis_of(ctx, &al, &an, &own))) return rc;
  const tbe_trace *t = ctx->trace;
  char gpu[160], steps[128], kinds[96];
  tbe__hp_gpu_text(an, an->ndevices, gpu, sizeof gpu);
  tbe__hp_steps_text(t, steps, sizeof steps);
  tbe__hp_kinds_text(an, kinds, sizeof kinds);
  tbe__hp_session si = {ctx->run ? ctx->run : "",
                        ctx->host ? ctx->host : "",
                        gpu,
                        tbe__source_name(t->source),
                        kinds,
                        steps,
                        ctx->command,
                        ctx->labels,
                        ctx->nlabels,
                        an->start_ns > 0 ? (double)an->start_ns / 1e9 : 0,
                        trace_wall(an)};
  tbe_writer *w = NULL;
  rc = writer_on(&w, out, TBE__HPARAMS_MARK, &al);
  if (!rc) {
    rc = tbe__hp_session_write(w, &si, &al);
    int crc = tbe_writer_close(w);
    if (!rc) rc = crc;
  }
  if (own) tbe_analysis_free(an);
  return rc;
}

const tbe__exporter tbe__exporter_hparams = {"hparams", TBE_OUT_EVENTS, hparams_write};

/* ---- a multi-host job ---- */

static int cmp_host_step(const void *x, const void *y) { return cmp_i64(x, y); }

/* The job's per-step series: for each step number every host has (the
 * merged steps of r->total, in number order), the slowest, median and
 * fastest host's step time, the spread and the slowest host (its rank,
 * else its index in run order), a warm-up first step left out as for a
 * host.  Hosts' steps are looked up by number (each host's one per number,
 * sorted): O(hosts x steps x log steps). */
static int job_steps(ew *e, tbe_run_analysis *r, const tbe_allocator *a) {
  const tbe_analysis *tot = r->total;
  size_t nh = r->nhosts;
  step_order so;
  int rc = step_order_make(&so, tot, a);
  step_order *hs = tbe__calloc(a, nh ? nh : 1, sizeof *hs);
  int64_t *d = tbe__alloc(a, (nh ? nh : 1) * sizeof *d);
  int64_t(*rows)[5] = tbe__alloc(a, (so.n ? so.n : 1) * sizeof *rows);
  int64_t *slow = tbe__alloc(a, (so.n ? so.n : 1) * sizeof *slow);
  if (!rc && (!hs || !d || !rows || !slow)) rc = TBE_ENOMEM;
  for (size_t h = 0; h < nh && !rc; h++) rc = step_order_make(&hs[h], r->hosts[h].an, a);
  size_t nrows = 0;
  for (size_t k = 0; k < so.n && !rc; k++) {
    int64_t num = so.s[k]->num;
    size_t got = 0;
    long slowest = -1;
    int64_t worst = INT64_MIN;
    for (size_t h = 0; h < nh; h++) {
      size_t lo = 0, hi = hs[h].n;
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hs[h].s[mid]->num < num)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo == hs[h].n || hs[h].s[lo]->num != num) continue;
      int64_t v = hs[h].s[lo]->dur_ns;
      d[got++] = v;
      if (v > worst) worst = v, slowest = (long)h;
    }
    if (!got) continue;
    qsort(d, got, sizeof *d, cmp_host_step);
    const tbe_analysis *sa = r->hosts[slowest].an;
    rows[nrows][0] = num;
    rows[nrows][1] = d[got - 1];
    rows[nrows][2] = d[(got - 1) / 2];
    rows[nrows][3] = d[0];
    rows[nrows][4] = r->by_rank && sa->rank >= 0 ? sa->rank : (int64_t)r->hosts[slowest].index;
    slow[nrows] = d[got - 1];
    nrows++;
  }
  size_t from = rc ? 0 : (size_t)warmup(slow, nrows, a, &rc);
  for (size_t k = from; k < nrows && !rc && !e->rc; k++) {
    int64_t num = rows[k][0];
    scalar(e, "steps/step_time_ms", ms(rows[k][1]), num);
    scalar(e, "job/step_time_slowest_ms", ms(rows[k][1]), num);
    scalar(e, "job/step_time_median_ms", ms(rows[k][2]), num);
    scalar(e, "job/step_time_fastest_ms", ms(rows[k][3]), num);
    scalar(e, "job/step_spread_pct",
           rows[k][3] > 0 ? 100.0 * (double)(rows[k][1] - rows[k][3]) / (double)rows[k][3] : 0,
           num);
    scalar(e, "job/slowest_rank", (double)rows[k][4], num);
  }
  if (from && !rc) scalar(e, "summary/warmup_step_ms", ms(rows[0][1]), 0);
  for (size_t h = 0; hs && h < nh; h++) step_order_free(&hs[h], a);
  step_order_free(&so, a);
  tbe__free(a, hs);
  tbe__free(a, d);
  tbe__free(a, rows);
  tbe__free(a, slow);
  if (rc && !e->rc) e->rc = rc;
  return e->rc ? e->rc : (int)(nrows > from);
}

int tbe__job_write(tbe__sink *out, const char *name, tbe_run_analysis *r, const tbe__job_ctx *j) {
  if (!out || !r || !j || !r->nhosts) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, j->a);
  tbe_analysis *tot = r->total;
  tbe_writer *w = NULL;
  int rc = writer_on(&w, out, name, &al);
  if (rc) return rc;
  ew e;
  ew_init(&e, w, trace_wall(tot), &al);
  /* The job in total (run_analysis.c: sums over the hosts, its steps the
   * slowest host's). */
  scalar(&e, "summary/wall_time_ms", ms(tot->wall_ns), 0);
  device_scalars(&e, "summary", &tot->all);
  scalar(&e, "summary/hosts", (double)r->nhosts, 0);
  scalar(&e, "profiler/dropped_records", (double)tot->dropped_records, 0);
  layout l;
  if (!e.rc) e.rc = layout_init(&l, &al);
  if (e.rc) {
    ew_deinit(&e);
    tbe_writer_close(w);
    return e.rc;
  }
  int has_steps = tot->nsteps ? job_steps(&e, r, &al) : 0;
  if (tot->nsteps) step_summary(&e, tot, &al);
  if (has_steps > 0) {
    layout_category(&l, "tbexport: compare steps");
    layout_chart(&l, "step time (ms)", "steps/step_time_ms");
    layout_category(&l, "tbexport: multi-host jobs (per step)");
    layout_chart(&l, "slowest host's step time (ms)", "job/step_time_slowest_ms");
    layout_chart(&l, "median host's step time (ms)", "job/step_time_median_ms");
    layout_chart(&l, "fastest host's step time (ms)", "job/step_time_fastest_ms");
    layout_chart(&l, "spread: slowest vs fastest host (%)", "job/step_spread_pct");
    layout_chart(&l, "slowest rank", "job/slowest_rank");
  }
  metric_tag_t *mtags = NULL;
  if (tot->ngpu_metrics && !e.rc && (mtags = metric_tags(tot, &al, &e.rc)) != NULL)
    metric_summary(&e, tot, mtags);
  tbe__free(&al, mtags);
  layout_write(&e, &l);
  layout_free(&l, &al);
  /* The ranks' table, as `tbexport summary RUN` prints it. */
  if (!e.rc) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = TBE_REPORT_MARKDOWN;
    o.top = 10;
    o.allocator = &al;
    char *md = NULL;
    size_t len = 0;
    e.rc = tbe_report_run(r, &o, &md, &len);
    if (!e.rc) {
      tbe__buf b;
      tbe__buf_init(&b, &al);
      if (j->nleft) {
        tbe__buf_printf(&b,
                        "Not in the job's figures (%zu host%s without a current analysis: "
                        "export them again):",
                        j->nleft, j->nleft == 1 ? "" : "s");
        for (size_t i = 0; i < j->nleft; i++) {
          tbe__buf_puts(&b, i ? ", " : " ");
          tbe__md_escape(&b, j->left[i]);
        }
        tbe__buf_puts(&b, ".\n\n");
      }
      tbe__buf_append(&b, md, len);
      tbe__buf_putc(&b, '\0');
      if (tbe__buf_error(&b))
        e.rc = TBE_ENOMEM;
      else
        text(&e, "job/ranks", (const char *)b.data, tbe__ev_text_description("job/ranks"));
      tbe__buf_deinit(&b);
      tbe_report_free(md, len, &al);
    }
  }
  /* The job's session. */
  if (!e.rc) {
    size_t ndev = 0;
    for (size_t h = 0; h < r->nhosts; h++) ndev += r->hosts[h].an->ndevices;
    char host[64], gpu[160], kinds[96];
    snprintf(
        host, sizeof host, "job of %zu %s", r->nhosts,
        r->by_rank ? (r->nhosts == 1 ? "rank" : "ranks") : (r->nhosts == 1 ? "host" : "hosts"));
    tbe__hp_gpu_text(r->hosts[0].an, ndev, gpu, sizeof gpu);
    tbe__hp_kinds_text(tot, kinds, sizeof kinds);
    tbe__hp_session si = {j->run,     host,
                          gpu,        NULL,
                          kinds,      NULL,
                          j->command, j->labels,
                          j->nlabels, tot->start_ns > 0 ? (double)tot->start_ns / 1e9 : 0,
                          e.wall};
    e.rc = tbe__hp_session_write(w, &si, &al);
  }
  rc = e.rc;
  ew_deinit(&e);
  int crc = tbe_writer_close(w);
  return rc ? rc : crc;
}

/* ---- comparisons ---- */

/* What a diff's events file holds: the ratios, the kernels' ratios and
 * the Markdown report `md`, under diff/<label>/; `ratios` 0: the report
 * alone (the base run's copy). */
typedef struct diff_job {
  const tbe_diff *d;
  const char *label; /* the other run */
  const char *md;
  int ratios;
  size_t top;
  const tbe_allocator *a;
} diff_job;

/* tbe__export_diff_file's WRITE: the events into the staged file. */
static int diff_body(void *ctx, tbe__sink *out, const char *name) {
  const diff_job *j = ctx;
  const tbe_diff *d = j->d;
  const char *label = j->label;
  size_t top = j->top;
  tbe_allocator al = *j->a;
  tbe_writer *w = NULL;
  int rc = writer_on(&w, out, name, &al);
  if (rc) return rc;
  ew e;
  ew_init(&e, w, trace_wall(d->side[j->ratios ? 1 : 0]), &al);
  char tag[320];
#define RATIO(name, b, n)                              \
  do {                                                 \
    if ((b) > 0) {                                     \
      tbe__ev_fmt(tag, sizeof tag, "diff/%s/%s", label, name); \
      scalar(&e, tag, (double)(n) / (double)(b), 0);   \
    }                                                  \
  } while (0)
  if (j->ratios) {
    RATIO("wall_time_ratio", d->wall_ns[0], d->wall_ns[1]);
    RATIO("gpu_busy_ratio", d->busy_ns[0], d->busy_ns[1]);
    RATIO("kernel_time_ratio", d->kernel_ns[0], d->kernel_ns[1]);
    if (d->nsteps[0] && d->nsteps[1])
      RATIO("step_time_ratio", d->step_median_ns[0], d->step_median_ns[1]);
    for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT && d->side[0] && d->side[1]; i++) {
      const tbe__figure *f = &tbe__figures[i]; /* from the table: "<key>_ratio" */
      if (!tbe__fig_listed(f) || f->diff == TBE__FD_NONE || f->unit == TBE__FU_BYTES_DELTA)
        continue; /* (a signed change has no ratio) */
      double b = tbe__fig_real(f, &d->side[0]->all, 0), v = tbe__fig_real(f, &d->side[1]->all, 0);
      if (!(b > 0) || isnan(v)) continue;
      tbe__ev_fmt(tag, sizeof tag, "diff/%s/%s_ratio", label, f->key);
      scalar(&e, tag, v / b, 0);
    }
  }
#undef RATIO
  size_t n = j->ratios ? d->nentries[TBE_GROUP_KERNEL] : 0;
  if (top && top < n) n = top;
  char used[64][TAG_WIDTH + 8];
  size_t nused = 0;
  for (size_t i = 0; i < n && !e.rc; i++) {
    const tbe_diff_entry *en = &d->entries[TBE_GROUP_KERNEL][i];
    if (en->present != 3 || en->total_ns[0] <= 0 || nused >= 64) continue;
    tbe__ev_unique_kernel_tag(en->name, used, nused);
    tbe__ev_fmt(tag, sizeof tag, "diff/%s/kernels/%s", label, used[nused]);
    nused++;
    scalar_at(&e, tag, en->ratio, 0, e.wall, en->name);
  }
  if (!e.rc) {
    tbe__buf desc;
    tbe__buf_init(&desc, &al);
    tbe__ev_fmt(tag, sizeof tag, "diff/%s/report", label);
    tbe__ev_describe(&desc, tag, NULL);
    if (tbe__buf_error(&desc))
      e.rc = TBE_ENOMEM;
    else
      text(&e, tag, j->md, (const char *)desc.data);
    tbe__buf_deinit(&desc);
  }
  rc = e.rc;
  ew_deinit(&e);
  int crc = tbe_writer_close(w);
  return rc ? rc : crc;
}

/* The body of tbe_diff_write_events; `run` (may be NULL) makes the
 * Markdown report the run comparison's.  export_run.c places the files:
 * the comparison in the new run, and its report in the base run when the
 * base is a run of the same log dir (tbe__run_is, from the base side's
 * hosts). */
static int diff_events(const tbe_diff *d, const tbe_run_diff *run, const char *run_dir,
                       const char *base_label, const char *new_label, size_t top,
                       const char *host, char *path, size_t size) {
  if (path && size) path[0] = 0;
  if (!d || !run_dir || !base_label) return TBE_EINVAL;
  if (tbe_name_check(base_label, NULL) != 0) return TBE_ENAME;
  if (host && tbe_name_check(host, NULL) != 0) return TBE_ENAME;
  tbe_allocator al;
  tbe__allocator_init(&al, &d->alloc_);
  tbe_report_options o;
  tbe_report_options_init(&o);
  o.format = TBE_REPORT_MARKDOWN;
  o.top = top;
  o.label[0] = base_label;
  o.label[1] = new_label;
  o.allocator = &al;
  char *md = NULL;
  size_t len = 0;
  int rc = run ? tbe_report_run_diff(run, &o, &md, &len) : tbe_report_diff(d, &o, &md, &len);
  if (rc) return rc;
  diff_job j = {d, base_label, md, 1, top, &al};
  rc = tbe__export_diff_file(&al, run_dir, base_label, diff_body, &j, path, size);
  /* The report in the base run too, named for the new one. */
  const char *hosts[64], **hv = hosts;
  size_t nh = run ? run->side[0]->nhosts : 1;
  if (!rc && new_label && tbe_name_check(new_label, NULL) == 0 &&
      strcmp(new_label, base_label) != 0 && (nh <= 64 || (hv = tbe__alloc(&al, nh * sizeof *hv)))) {
    for (size_t i = 0; i < nh; i++) {
      const tbe_run_host *h = run ? &run->side[0]->hosts[i] : NULL;
      hv[i] = h ? (h->label ? h->label : h->an->host) : d->side[0]->host;
    }
    char base_dir[4200];
    int is = tbe__run_is(&al, run_dir, base_label, hv, nh, base_dir, sizeof base_dir);
    if (is > 0) {
      diff_job jb = {d, new_label, md, 0, top, &al};
      char bpath[4200];
      rc = tbe__export_diff_file(&al, base_dir, new_label, diff_body, &jb, bpath, sizeof bpath);
      if (rc && path && size) snprintf(path, size, "%s", bpath);
    }
    if (hv != hosts) tbe__free(&al, hv);
  }
  tbe_report_free(md, len, &al);
  return rc;
}

int tbe_diff_write_events(const tbe_diff *d, const char *run_dir, const char *base_label,
                          const char *new_label, size_t top, const char *host, char *path,
                          size_t size) {
  return diff_events(d, NULL, run_dir, base_label, new_label, top, host, path, size);
}

int tbe_run_diff_write_events(const tbe_run_diff *d, const char *run_dir, const char *base_label,
                              const char *new_label, size_t top, const char *host, char *path,
                              size_t size) {
  if (!d) return TBE_EINVAL;
  return diff_events(d->total, d, run_dir, base_label, new_label, top, host, path, size);
}
