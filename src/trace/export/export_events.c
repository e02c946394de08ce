/* export_events.c: the run summary as TensorBoard events, and the diff of
 * two runs written next to them.
 *
 * The "events" output of tbe_export_run (exporter.h) analyses the trace
 * (analysis.c) and writes one event file into <logdir>/<run>/ through the
 * public writer API (tbexport/writer.h):
 *   summary/…        wall time, GPU busy %, time in kernels, copies,
 *                    memsets, synchronization, idle, kernel count, launch
 *                    latency, host busy %  (step 0)
 *   gpu<N>/…         the same per GPU when there are several
 *   summary/class/<class>_ms  GPU time per kernel class (tbe_kernel_class)
 *   summary/step_time_median_ms, step_time_p90_ms, steps
 *   steps/…          per step (x axis = step number): step time, GPU busy
 *                    %, kernel time and count, memcpy, memset and sync
 *                    time, launch latency, steps/class/<class>_ms for every
 *                    class the run has, steps/kernels/<tag> for the top 10
 *                    kernels: runs overlay as curves
 *   kernels/<name>   total time of the top kernels in ms (step 0)
 *   ops/<name>/cuda_ms  a trace whose GPU work is attributed to operators
 *                    (tbexport/analysis.h, tbe_name_stats): the CUDA total
 *                    of the top 10 operators by it, per step (x axis = step
 *                    number), else one point at step 0; the name's tag as
 *                    a kernel's (kernel_tag)
 *   gpu_metrics/<metric>  a trace with PM metrics (tbexport/analysis.h,
 *                    tbe_metric_mean): per step (x axis = step number)
 *                    the step's time-weighted mean over all GPUs; a trace
 *                    without steps, one point at step 0 with the window's
 *                    mean.  The tag is the metric's name (kernel_tag)
 *   profiler/…       dropped records, overhead, ended early
 *   summary/top_kernels, summary/advice   Markdown text
 *   summary/top_operators  the operator table by CUDA total, with the
 *                    kernels each launched (Markdown; only with operators'
 *                    GPU work)
 *   custom_scalars__config__  the comparison layout (compare_layout; with
 *                    PM metrics a "GPU metrics" category, one chart each;
 *                    with operator series an "operators" category)
 * and the "hparams" output writes the run's HParams session into the
 * sub-run <run>/hparams/<host>/ (hparams_write): the run, host, GPU, source,
 * event kinds, step definition, command and the user's labels as
 * hyper-parameters, its headline figures (and with PM metrics their
 * window means, hparams/gpu_metrics/<metric>) as the only scalars there,
 * so that they alone are the session's metrics.  A trace without
 * hardware metrics writes no byte that depends on them.
 * Tags depend only on what was measured, never on the run name, so two
 * runs overlay in the Scalars dashboard.
 *
 * Kernel tags (kernels/<tag>, diff/<base>/kernels/<tag>; kernel_tag) are a
 * function of the kernel's full (demangled) name alone, never of which
 * other kernels the run holds, so the same kernel has the same tag in every
 * run and before/after runs overlay:
 *   - a name that is already a tag (only [A-Za-z0-9_.:-], at most
 *     TAG_WIDTH bytes: "sm90_xmma_gemm_…", "triton_poi_fused_add_0") is
 *     its own tag;
 *   - any other is its short form (tbe_name_shorten: no return type, no
 *     parameters, no namespaces), characters outside that set made '_',
 *     cut to TAG_WIDTH - 9 bytes, then "." and 8 hex digits of the full
 *     name's hash (FNV-1a, 64 bits, low 32): "vectorized_elementwise_
 *     kernel_4_FillFunctor_float_array_char_1ul.1f392d55".  The short form
 *     keeps the tag readable; the hash keeps apart what it elided
 *     (parameters, namespaces, '*' against '&', the cut tail), so two of
 *     the many elementwise_kernel<…> instantiations never share a tag.
 * Two names with the same tag within one run (two hashes equal, about one
 * chance in 10^8 for the top 20 kernels) still get distinct tags: the
 * later one by total time gets "_2", "_3", ….
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
 * earlier comparison against the same base.  Either file is complete under
 * its final name or absent (a crash leaves a hidden temporary file that
 * the next write into the folder removes). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "events/writer_internal.h"
#include "tbexport/export.h"
#include "tbexport/writer.h"
#include "trace/export/export_run.h"
#include "trace/exporter.h"
#include "trace/report/report.h"

#define TOP_KERNELS 20
#define TOP_STEP_KERNELS 10
#define TOP_OPS 10        /* operators with a series (ops/<tag>/cuda_ms) */
#define TOP_OPS_TEXT 20   /* rows of summary/top_operators */
#define TAG_WIDTH 100

/* snprintf that truncates silently (tags are bounded by construction). */
static void fmt(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t size, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, size, f, ap);
  va_end(ap);
}

/* ---- kernel tags ---- */

/* FNV-1a over the name's bytes: the same on every machine and in every
 * release, as tags must be. */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ULL;
  }
  return h;
}

/* 1 if `name` can be a tag component as it is. */
static int is_tag(const char *name) {
  size_t n = 0;
  for (; name[n]; n++) {
    char c = name[n];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == ':' || c == '-'))
      return 0;
  }
  return n > 0 && n <= TAG_WIDTH;
}

/* The tag component of a kernel (the file essay gives the scheme). */
static void kernel_tag(const char *name, char *out, size_t size) {
  if (is_tag(name)) {
    snprintf(out, size, "%s", name);
    return;
  }
  char comp[TAG_WIDTH + 1];
  size_t n = tbe__tag_component(name, TAG_WIDTH - 9, comp, sizeof comp);
  while (n > 1 && comp[n - 1] == '_') comp[--n] = '\0';
  fmt(out, size, "%s.%08x", comp, (unsigned)(fnv1a(name) & 0xffffffffu));
}

/* Stores the tag of kernel `name` in used[n], distinct from used[0..n). */
static void unique_kernel_tag(const char *name, char (*used)[TAG_WIDTH + 8], size_t n) {
  char tag[TAG_WIDTH + 1];
  kernel_tag(name, tag, sizeof tag);
  snprintf(used[n], sizeof used[n], "%s", tag);
  for (int k = 2;; k++) {
    int clash = 0;
    for (size_t j = 0; j < n && !clash; j++) clash = strcmp(used[j], used[n]) == 0;
    if (!clash) return;
    fmt(used[n], sizeof used[n], "%s_%d", tag, k);
  }
}

static double ms(int64_t ns) { return (double)ns / 1e6; }

static double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

typedef struct ew {
  tbe_writer *w;
  double wall;
  int rc;
} ew;

static void scalar(ew *e, const char *tag, double v, int64_t step) {
  if (e->rc) return;
  e->rc = tbe_writer_add_scalar(e->w, tag, v, step, e->wall);
}

static void text(ew *e, const char *tag, const char *md) {
  if (e->rc) return;
  e->rc = tbe_writer_add_text(e->w, tag, md, 0, e->wall);
}

static int64_t copy_ns(const tbe_device_stats *d) {
  int64_t s = 0;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) s += d->memcpy_ns[k];
  return s;
}

static void device_scalars(ew *e, const char *prefix, const tbe_analysis *an,
                           const tbe_device_stats *d) {
  char tag[96];
#define S(name, v)                                          \
  do {                                                      \
    fmt(tag, sizeof tag, "%s/%s", prefix, name);       \
    scalar(e, tag, (v), 0);                                 \
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
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    if (!d->class_count[k]) continue;
    fmt(tag, sizeof tag, "%s/class/%s_ms", prefix, tbe_kernel_class_name(k));
    scalar(e, tag, ms(d->class_ns[k]), 0);
  }
#undef S
  (void)an;
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
    kernel_tag(an->gpu_metrics[k], comp, sizeof comp);
    fmt(t[k], sizeof t[k], "gpu_metrics/%s", comp);
  }
  return t;
}

/* The window's means (a trace without steps: one point at step 0). */
static void metric_points(ew *e, const tbe_analysis *an, const metric_tag_t *tags,
                          const tbe_metric_mean *m, int64_t step) {
  if (!m) return;
  for (size_t k = 0; k < an->ngpu_metrics; k++)
    if (m[k].samples) scalar(e, tags[k], m[k].mean, step);
}

/* The "GPU metrics" category: one chart per PM metric (their units
 * differ), the runs as its lines.  A tag is [A-Za-z0-9_.:-] only, so '.'
 * is the one character to escape in its regular expression. */
static int metric_category(const tbe_analysis *an, const metric_tag_t *tags,
                           const tbe_allocator *a, tbe_chart **charts, char **pool) {
  size_t nm = an->ngpu_metrics, w = 2 * sizeof(metric_tag_t) + 4;
  *charts = tbe__calloc(a, nm, sizeof **charts);
  *pool = tbe__alloc(a, nm * (w + sizeof(char *)));
  if (!*charts || !*pool) return TBE_ENOMEM;
  const char **ptrs = (const char **)(void *)*pool;
  char *re = *pool + nm * sizeof(char *);
  for (size_t k = 0; k < nm; k++, re += w) {
    size_t at = 0;
    re[at++] = '^';
    for (const char *c = tags[k]; *c && at + 3 < w; c++) {
      if (*c == '.') re[at++] = '\\';
      re[at++] = *c;
    }
    re[at++] = '$';
    re[at] = 0;
    ptrs[k] = re;
    (*charts)[k].title = an->gpu_metrics[k];
    (*charts)[k].tags = &ptrs[k];
    (*charts)[k].ntags = 1;
  }
  return 0;
}

/* The custom-scalars layout every run writes (TensorBoard merges the
 * runs' layouts by category title): the per-step series as multi-line
 * charts, one line per run, so the Custom Scalars dashboard opens on the
 * comparison.  Tags are regular expressions.  `mcharts` (nm of them, may
 * be 0) is the GPU metrics category; `ops`: the operators' category (a
 * run with operator series). */
static void compare_layout(ew *e, const tbe_chart *mcharts, size_t nm, int ops) {
  static const char *const step_time[] = {"^steps/step_time_ms$"};
  static const char *const busy[] = {"^steps/gpu_busy_pct$"};
  static const char *const classes[] = {"^steps/class/"};
  static const char *const copies[] = {"^steps/(memcpy|memset|sync)_time_ms$"};
  static const char *const launch[] = {"^steps/launch_latency_us$"};
  static const char *const kernels[] = {"^steps/kernels/"};
  static const char *const totals[] = {"^summary/class/"};
  static const char *const overall[] = {"^summary/(step_time_median_ms|step_time_p90_ms|gpu_busy_pct)$"};
  static const tbe_chart steps[] = {
      {"step time (ms)", 0, step_time, 1},
      {"GPU busy per step (%)", 0, busy, 1},
      {"time per kernel class per step (ms)", 0, classes, 1},
      {"copies, memsets and syncs per step (ms)", 0, copies, 1},
      {"launch latency per step (us)", 0, launch, 1},
      {"top kernels per step (ms)", 0, kernels, 1},
  };
  static const tbe_chart runs[] = {
      {"time per kernel class (ms)", 0, totals, 1},
      {"step time and GPU busy", 0, overall, 1},
  };
  static const char *const op_cuda[] = {"^ops/.*/cuda_ms$"};
  static const tbe_chart opc[] = {{"CUDA total of the top operators (ms)", 0, op_cuda, 1}};
  tbe_category cats[4] = {
      {"tbexport: compare steps", steps, sizeof steps / sizeof steps[0], 0},
      {"tbexport: compare runs", runs, sizeof runs / sizeof runs[0], 0},
  };
  size_t nc = 2;
  if (nm) cats[nc++] = (tbe_category){"tbexport: GPU metrics", mcharts, nm, 0};
  if (ops) cats[nc++] = (tbe_category){"tbexport: operators", opc, 1, 0};
  if (e->rc) return;
  e->rc = tbe__writer_layout_at(e->w, cats, nc, e->wall);
}

static int cmp_step_num(const void *x, const void *y) {
  const tbe_step_stats *a = *(const tbe_step_stats *const *)x;
  const tbe_step_stats *b = *(const tbe_step_stats *const *)y;
  return (a->num > b->num) - (a->num < b->num);
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* The median and the 90th percentile of the step times (nearest rank),
 * in q[0] and q[1]; an->nsteps > 0.  The summary scalars and the HParams
 * metrics both read them.  Returns 0 or TBE_ENOMEM. */
static int step_median_p90(const tbe_analysis *an, const tbe_allocator *a, int64_t q[2]) {
  size_t n = an->nsteps;
  int64_t *v = tbe__alloc(a, n * sizeof *v);
  if (!v) return TBE_ENOMEM;
  for (size_t i = 0; i < n; i++) v[i] = an->steps[i].dur_ns;
  qsort(v, n, sizeof *v, cmp_i64);
  static const double at[2] = {0.5, 0.9};
  for (int k = 0; k < 2; k++) {
    size_t r = (size_t)(at[k] * (double)n + 0.999999);
    if (r < 1) r = 1;
    if (r > n) r = n;
    q[k] = v[r - 1];
  }
  tbe__free(a, v);
  return 0;
}

/* The per-step series: one point per step number (the first step of a
 * number when several share it), so runs overlay as curves. */
static int step_series(ew *e, const tbe_analysis *an, char (*ktag)[TAG_WIDTH + 8], size_t nk,
                       const metric_tag_t *mtags, const tbe_allocator *a) {
  const tbe_step_stats **order = tbe__alloc(a, an->nsteps * sizeof *order);
  size_t *index = tbe__alloc(a, an->nsteps * sizeof *index);
  if (!order || !index) {
    tbe__free(a, order);
    tbe__free(a, index);
    return TBE_ENOMEM;
  }
  for (size_t i = 0; i < an->nsteps; i++) order[i] = &an->steps[i];
  qsort(order, an->nsteps, sizeof *order, cmp_step_num);
  for (size_t i = 0; i < an->nsteps; i++) index[i] = (size_t)(order[i] - an->steps);
  char tag[160];
  for (size_t i = 0; i < an->nsteps && !e->rc; i++) {
    const tbe_step_stats *s = order[i];
    if (i && s->num == order[i - 1]->num) continue;
    scalar(e, "steps/step_time_ms", ms(s->dur_ns), s->num);
    scalar(e, "steps/gpu_busy_pct", pct(s->gpu_busy_ns, s->dur_ns), s->num);
    scalar(e, "steps/kernel_time_ms", ms(s->kernel_ns), s->num);
    scalar(e, "steps/kernel_count", (double)s->kernel_count, s->num);
    scalar(e, "steps/memcpy_time_ms", ms(s->memcpy_ns), s->num);
    scalar(e, "steps/memset_time_ms", ms(s->memset_ns), s->num);
    scalar(e, "steps/sync_time_ms", ms(s->sync_ns), s->num);
    if (s->launch_median_ns >= 0)
      scalar(e, "steps/launch_latency_us", (double)s->launch_median_ns / 1e3, s->num);
    /* Every class the run has, so a class absent from one step reads 0
     * there instead of a gap. */
    for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
      if (!an->all.class_count[k]) continue;
      fmt(tag, sizeof tag, "steps/class/%s_ms", tbe_kernel_class_name(k));
      scalar(e, tag, ms(s->class_ns[k]), s->num);
    }
    for (size_t j = 0; j < nk; j++) {
      const tbe_name_stats *kn = &an->groups[TBE_GROUP_KERNEL][j];
      if (!kn->step_ns) continue;
      fmt(tag, sizeof tag, "steps/kernels/%s", ktag[j]);
      scalar(e, tag, ms(kn->step_ns[index[i]]), s->num);
    }
    if (mtags) metric_points(e, an, mtags, s->metrics, s->num);
  }
  /* The distribution, as single points. */
  int64_t q[2];
  if (!e->rc && step_median_p90(an, a, q)) e->rc = TBE_ENOMEM;
  if (!e->rc) {
    scalar(e, "summary/step_time_median_ms", ms(q[0]), 0);
    scalar(e, "summary/step_time_p90_ms", ms(q[1]), 0);
  }
  scalar(e, "summary/steps", (double)an->nsteps, 0);
  tbe__free(a, order);
  tbe__free(a, index);
  return e->rc;
}

/* The operators' series (a trace whose GPU work is attributed to
 * operators): for the TOP_OPS operators by CUDA total that have any,
 * ops/<tag>/cuda_ms (the kernel-tag scheme on the operator's name) per
 * step number, their CUDA total in each step (the first step of a
 * number), or without per-step figures one point at step 0 with the
 * total.  Returns how many operators have a series (0 without), or -1
 * after a failure (e->rc). */
static long op_series(ew *e, tbe_analysis *an, const tbe_allocator *a) {
  if (!an->op_gpu_count || e->rc) return 0;
  tbe_analysis_sort(an, TBE_GROUP_CPU_OP, TBE_SORT_CUDA_TOTAL);
  size_t n = 0;
  while (n < an->ngroups[TBE_GROUP_CPU_OP] && n < TOP_OPS &&
         an->groups[TBE_GROUP_CPU_OP][n].cuda_total_ns > 0)
    n++;
  const tbe_step_stats **order = NULL;
  if (an->nsteps && !(order = tbe__alloc(a, an->nsteps * sizeof *order))) {
    e->rc = TBE_ENOMEM;
    return -1;
  }
  for (size_t i = 0; i < an->nsteps; i++) order[i] = &an->steps[i];
  if (order) qsort(order, an->nsteps, sizeof *order, cmp_step_num);
  char used[TOP_OPS][TAG_WIDTH + 8], tag[160];
  for (size_t i = 0; i < n && !e->rc; i++) {
    const tbe_name_stats *op = &an->groups[TBE_GROUP_CPU_OP][i];
    unique_kernel_tag(op->label, used, i);
    fmt(tag, sizeof tag, "ops/%s/cuda_ms", used[i]);
    if (!op->cuda_step_ns || !order) {
      scalar(e, tag, ms(op->cuda_total_ns), 0);
      continue;
    }
    for (size_t k = 0; k < an->nsteps; k++) {
      if (k && order[k]->num == order[k - 1]->num) continue;
      scalar(e, tag, ms(op->cuda_step_ns[order[k] - an->steps]), order[k]->num);
    }
  }
  tbe__free(a, order);
  return e->rc ? -1 : (long)n;
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
  else text(e, "summary/top_operators", (const char *)b.data);
  tbe__buf_deinit(&b);
}

static int write_summary(ew *e, tbe_analysis *an, const tbe_allocator *a) {
  char tag[160];
  scalar(e, "summary/wall_time_ms", ms(an->wall_ns), 0);
  device_scalars(e, "summary", an, &an->all);
  scalar(e, "summary/host_busy_pct", pct(an->host_busy_ns, an->wall_ns), 0);
  scalar(e, "summary/sync_calls", (double)an->sync_calls, 0);
  if (an->ndevices > 1) {
    for (size_t i = 0; i < an->ndevices; i++) {
      char prefix[32];
      snprintf(prefix, sizeof prefix, "gpu%d", (int)an->devices[i].device);
      device_scalars(e, prefix, an, &an->devices[i]);
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
    unique_kernel_tag(k->label, used, i);
    fmt(tag, sizeof tag, "kernels/%s", used[i]);
    scalar(e, tag, ms(k->total_ns), 0);
  }

  metric_tag_t *mtags = NULL;
  tbe_chart *mcharts = NULL;
  char *mpool = NULL;
  if (an->ngpu_metrics && !e->rc) {
    mtags = metric_tags(an, a, &e->rc);
    if (mtags && !e->rc) e->rc = metric_category(an, mtags, a, &mcharts, &mpool);
  }
  if (an->nsteps && !e->rc) {
    size_t nks = nk < TOP_STEP_KERNELS ? nk : TOP_STEP_KERNELS;
    if (step_series(e, an, used, nks, mtags, a) && !e->rc) e->rc = TBE_ENOMEM;
  } else if (mtags && !e->rc) {
    metric_points(e, an, mtags, an->all.metrics, 0);
  }
  long nops = op_series(e, an, a);
  if (!e->rc) compare_layout(e, mcharts, mcharts ? an->ngpu_metrics : 0, nops > 0);
  tbe__free(a, mtags);
  tbe__free(a, mcharts);
  tbe__free(a, mpool);
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
    else text(e, "summary/top_kernels", (const char *)b.data);
    tbe__buf_deinit(&b);
  }
  op_text(e, an, a);
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
    else text(e, "summary/advice", (const char *)b.data);
    tbe__buf_deinit(&b);
  }
  return e->rc;
}

static double trace_wall(const tbe_analysis *an) {
  int64_t end = an->start_ns + an->wall_ns;
  return end > 0 ? (double)end / 1e9 : TBE_WALL_NOW;
}

/* A writer on the file behind `out` (the event writer frames its records
 * on a descriptor of its own: exporter.h, tbe__sink_dup_fd). */
static int writer_on(tbe_writer **w, tbe__sink *out, const char *path, const tbe_allocator *a) {
  int dup = tbe__sink_dup_fd(out);
  if (dup < 0) return dup;
  tbe_writer_options wo;
  tbe_writer_options_init(&wo);
  wo.allocator = a;
  return tbe__writer_open_fd(w, dup, path, &wo);
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
  ew e = {w, trace_wall(an), 0};
  rc = write_summary(&e, an, &al);
  if (own) tbe_analysis_free(an);
  int crc = tbe_writer_close(w);
  return rc ? rc : crc;
}

const tbe__exporter tbe__exporter_events = {"events", TBE_OUT_EVENTS, events_write};

/* ---- the HParams session ---- */

/* The hyper-parameter names tbexport sets itself (labels may not take
 * them). */
static const char *const BUILTIN_HPARAMS[] = {"run", "host", "gpu", "source", "kinds", "steps",
                                              "command"};

int tbe__labels_check(const char *const *labels, size_t n) {
  if (n && !labels) return TBE_EINVAL;
  for (size_t i = 0; i < n; i++) {
    const char *l = labels[i], *eq = l ? strchr(l, '=') : NULL;
    if (!eq || eq == l || (size_t)(eq - l) > 100) return TBE_EINVAL;
    size_t kl = (size_t)(eq - l);
    for (size_t j = 0; j < kl; j++) {
      char c = l[j];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '.' || c == '-'))
        return TBE_EINVAL;
    }
    for (size_t b = 0; b < sizeof BUILTIN_HPARAMS / sizeof *BUILTIN_HPARAMS; b++)
      if (strlen(BUILTIN_HPARAMS[b]) == kl && memcmp(BUILTIN_HPARAMS[b], l, kl) == 0)
        return TBE_EINVAL;
    for (size_t j = 0; j < i; j++)
      if (strncmp(labels[j], l, kl + 1) == 0) return TBE_EINVAL; /* "key=" twice */
  }
  return 0;
}

/* Whether `v` reads whole as a finite number (then in *x). */
static int as_number(const char *v, double *x) {
  if (!*v) return 0;
  char *end;
  double d = strtod(v, &end);
  if (*end || d != d || d > 1.7e308 || d < -1.7e308) return 0;
  *x = d;
  return 1;
}

/* "NVIDIA H200", or "2 x NVIDIA H200", or "" without GPUs. */
static void gpu_text(const tbe_analysis *an, char *buf, size_t size) {
  buf[0] = 0;
  if (!an->ndevices) return;
  const char *n = an->devices[0].name ? tbe_trace_str(an->trace, an->devices[0].name) : "GPU";
  if (an->ndevices == 1) snprintf(buf, size, "%s", n);
  else snprintf(buf, size, "%zu x %s", an->ndevices, n);
}

/* The step definition: the steps' name without its number
 * ("ProfilerStep#", "train_step"), or "none". */
static void steps_text(const tbe_trace *t, char *buf, size_t size) {
  if (!t->nsteps) {
    snprintf(buf, size, "none");
    return;
  }
  const char *n = t->steps[0].name ? tbe_trace_str(t, t->steps[0].name) : "";
  size_t l = strlen(n);
  while (l && n[l - 1] >= '0' && n[l - 1] <= '9') l--;
  if (!l) {
    snprintf(buf, size, "unnamed");
    return;
  }
  snprintf(buf, size, "%.*s", (int)(l < size - 1 ? l : size - 1), n);
}

/* The kinds of events the trace holds, as a comma list. */
static void kinds_text(const tbe_analysis *an, char *buf, size_t size) {
  const tbe_device_stats *d = &an->all;
  uint64_t copies = 0;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) copies += d->memcpy_count[k];
  struct {
    const char *name;
    int has;
  } k[] = {{"kernel", d->kernel_count > 0},
           {"memcpy", copies > 0},
           {"memset", d->memset_count > 0},
           {"sync", d->sync_count > 0},
           {"api", an->api_calls > 0},
           {"cpu_op", an->ngroups[TBE_GROUP_CPU_OP] > 0},
           {"range", an->ngroups[TBE_GROUP_RANGE] > 0}};
  size_t at = 0;
  buf[0] = 0;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (k[i].has && at < size)
      at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? "," : "", k[i].name);
}

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
  gpu_text(an, gpu, sizeof gpu);
  steps_text(t, steps, sizeof steps);
  kinds_text(an, kinds, sizeof kinds);
  size_t nh = 0, cap = 8 + ctx->nlabels;
  tbe_hparam *hp = tbe__calloc(&al, cap, sizeof *hp);
  char *keys = tbe__alloc(&al, ctx->nlabels * 104 + 1);
  if (!hp || !keys) {
    tbe__free(&al, hp);
    tbe__free(&al, keys);
    if (own) tbe_analysis_free(an);
    return TBE_ENOMEM;
  }
#define HS(n, v) (hp[nh].name = (n), hp[nh].type = TBE_HPARAM_STRING, hp[nh++].string = (v))
  HS("run", ctx->run ? ctx->run : "");
  HS("host", ctx->host ? ctx->host : "");
  HS("gpu", gpu);
  HS("source", tbe__source_name(t->source));
  HS("kinds", kinds);
  HS("steps", steps);
  if (ctx->command) HS("command", ctx->command);
#undef HS
  for (size_t i = 0; i < ctx->nlabels; i++) {
    const char *l = ctx->labels[i], *eq = strchr(l, '=');
    char *k = keys + i * 104;
    snprintf(k, 104, "%.*s", (int)(eq - l), l);
    hp[nh].name = k;
    if (as_number(eq + 1, &hp[nh].number)) {
      hp[nh].type = TBE_HPARAM_NUMBER;
    } else {
      hp[nh].type = TBE_HPARAM_STRING;
      hp[nh].string = eq + 1;
    }
    nh++;
  }
  /* The metrics: the same names in every run, zeros included, so the
   * table's columns line up; under hparams/, one section of the Scalars
   * dashboard apart from the run's own tags. */
  size_t ngm = an->ngpu_metrics;
  tbe_metric *m = tbe__calloc(&al, 16 + TBE_KCLASS__COUNT + ngm, sizeof *m);
  char (*mtags)[40] = tbe__calloc(&al, TBE_KCLASS__COUNT, sizeof *mtags);
  metric_tag_t *gtags = ngm ? tbe__calloc(&al, ngm, sizeof *gtags) : NULL;
  if (!m || !mtags || (ngm && !gtags)) {
    tbe__free(&al, m);
    tbe__free(&al, mtags);
    tbe__free(&al, gtags);
    tbe__free(&al, hp);
    tbe__free(&al, keys);
    if (own) tbe_analysis_free(an);
    return TBE_ENOMEM;
  }
  size_t nm = 0;
  const tbe_device_stats *d = &an->all;
#define M(t_, v_) (m[nm].tag = (t_), m[nm++].value = (v_))
  int64_t q[2];
  if (an->nsteps && !(rc = step_median_p90(an, &al, q))) {
    M("hparams/step_median_ms", ms(q[0]));
    M("hparams/step_p90_ms", ms(q[1]));
  }
  M("hparams/wall_ms", ms(an->wall_ns));
  M("hparams/gpu_busy_pct", pct(d->busy_ns, d->wall_ns));
  M("hparams/kernel_ms", ms(d->kernel_ns));
  M("hparams/memcpy_ms", ms(copy_ns(d)));
  M("hparams/memset_ms", ms(d->memset_ns));
  M("hparams/sync_ms", ms(d->sync_ns));
  M("hparams/kernel_count", (double)d->kernel_count);
  if (d->launch_median_ns >= 0) M("hparams/launch_latency_us", (double)d->launch_median_ns / 1e3);
  M("hparams/dropped_records", (double)an->dropped_records);
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    fmt(mtags[k], sizeof mtags[k], "hparams/time_in/%s_ms", tbe_kernel_class_name(k));
    M(mtags[k], ms(d->class_ns[k]));
  }
  /* PM metrics: the window's mean over all GPUs, only those measured */
  for (size_t k = 0; k < ngm && d->metrics; k++) {
    if (!d->metrics[k].samples) continue;
    char comp[TAG_WIDTH + 1];
    kernel_tag(an->gpu_metrics[k], comp, sizeof comp);
    fmt(gtags[k], sizeof gtags[k], "hparams/gpu_metrics/%s", comp);
    M(gtags[k], d->metrics[k].mean);
  }
#undef M
  tbe_writer *w = NULL;
  if (!rc) rc = writer_on(&w, out, TBE__HPARAMS_RUN, &al);
  if (!rc) {
    double wall = trace_wall(an);
    double start = an->start_ns > 0 ? (double)an->start_ns / 1e9 : 0;
    rc = tbe__writer_hparams_session(w, hp, nh, m, nm, start, 0, wall);
    int crc = tbe_writer_close(w);
    if (!rc) rc = crc;
  }
  tbe__free(&al, hp);
  tbe__free(&al, keys);
  tbe__free(&al, m);
  tbe__free(&al, mtags);
  tbe__free(&al, gtags);
  if (own) tbe_analysis_free(an);
  return rc;
}

const tbe__exporter tbe__exporter_hparams = {"hparams", TBE_OUT_EVENTS, hparams_write};

/* What a diff's events file holds: the ratios, the kernels' ratios and
 * the Markdown report (the run comparison's when `run` is not NULL). */
typedef struct diff_job {
  const tbe_diff *d;
  const tbe_run_diff *run;
  const char *base_label, *new_label;
  size_t top;
  const tbe_allocator *a;
} diff_job;

/* tbe__export_diff_file's WRITE: the events into the staged file. */
static int diff_body(void *ctx, tbe__sink *out, const char *name) {
  const diff_job *j = ctx;
  const tbe_diff *d = j->d;
  const char *base_label = j->base_label, *new_label = j->new_label;
  size_t top = j->top;
  tbe_allocator al = *j->a;
  tbe_writer *w = NULL;
  int rc = writer_on(&w, out, name, &al);
  if (rc) return rc;
  ew e = {w, trace_wall(d->side[1]), 0};
  char tag[320];
#define RATIO(name, b, n)                                                    \
  do {                                                                       \
    if ((b) > 0) {                                                           \
      fmt(tag, sizeof tag, "diff/%s/%s", base_label, name);             \
      scalar(&e, tag, (double)(n) / (double)(b), 0);                         \
    }                                                                        \
  } while (0)
  RATIO("wall_time_ratio", d->wall_ns[0], d->wall_ns[1]);
  RATIO("gpu_busy_ratio", d->busy_ns[0], d->busy_ns[1]);
  RATIO("kernel_time_ratio", d->kernel_ns[0], d->kernel_ns[1]);
  if (d->nsteps[0] && d->nsteps[1]) RATIO("step_time_ratio", d->step_median_ns[0], d->step_median_ns[1]);
#undef RATIO
  size_t n = d->nentries[TBE_GROUP_KERNEL];
  if (top && top < n) n = top;
  char used[64][TAG_WIDTH + 8];
  size_t nused = 0;
  for (size_t i = 0; i < n && !e.rc; i++) {
    const tbe_diff_entry *en = &d->entries[TBE_GROUP_KERNEL][i];
    if (en->present != 3 || en->total_ns[0] <= 0 || nused >= 64) continue;
    unique_kernel_tag(en->name, used, nused);
    fmt(tag, sizeof tag, "diff/%s/kernels/%s", base_label, used[nused]);
    nused++;
    scalar(&e, tag, en->ratio, 0);
  }
  if (!e.rc) {
    tbe_report_options o;
    tbe_report_options_init(&o);
    o.format = TBE_REPORT_MARKDOWN;
    o.top = top;
    o.label[0] = base_label;
    o.label[1] = new_label;
    o.allocator = &al;
    char *md = NULL;
    size_t len = 0;
    e.rc = j->run ? tbe_report_run_diff(j->run, &o, &md, &len) : tbe_report_diff(d, &o, &md, &len);
    if (!e.rc) {
      fmt(tag, sizeof tag, "diff/%s/report", base_label);
      text(&e, tag, md);
      tbe_report_free(md, len, &al);
    }
  }
  rc = e.rc;
  int crc = tbe_writer_close(w);
  return rc ? rc : crc;
}

/* The body of tbe_diff_write_events; `run` (may be NULL) makes the
 * Markdown report the run comparison's.  export_run.c places the file. */
static int diff_events(const tbe_diff *d, const tbe_run_diff *run, const char *run_dir,
                       const char *base_label, const char *new_label, size_t top,
                       const char *host, char *path, size_t size) {
  if (path && size) path[0] = 0;
  if (!d || !run_dir || !base_label) return TBE_EINVAL;
  if (tbe_name_check(base_label, NULL) != 0) return TBE_ENAME;
  if (host && tbe_name_check(host, NULL) != 0) return TBE_ENAME;
  tbe_allocator al;
  tbe__allocator_init(&al, &d->alloc_);
  diff_job j = {d, run, base_label, new_label, top, &al};
  return tbe__export_diff_file(&al, run_dir, base_label, diff_body, &j, path, size);
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
