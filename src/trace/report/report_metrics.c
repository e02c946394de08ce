/* report_metrics.c: the hardware metrics in the summary (tbexport/analysis.h,
 * tbe_metric_mean, tbe_bound): the per-GPU PM means (a row per metric, a
 * column per GPU), the kernels' range-profiler figures with their "bound
 * by" verdict, as a table, Markdown, CSV and JSON.
 *
 * Invariant: every function here writes nothing for an analysis without
 * metrics (ngpu_metrics and nkernel_metrics 0), so a report of a trace
 * without them is byte for byte what it was before metrics existed. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "tbexport/error.h"
#include "trace/report/report.h"

/* A value in the metric's unit, from its name's suffix. */
const char *tbe__metric_fmt(char *buf, size_t n, const char *name, double v) {
  size_t l = strlen(name);
#define ENDS(s) (l >= sizeof(s) - 1 && strcmp(name + l - (sizeof(s) - 1), s) == 0)
  if (ENDS("_pct")) snprintf(buf, n, "%.1f%%", v);
  else if (ENDS("_bytes_per_s")) snprintf(buf, n, "%.2f GB/s", v / 1e9);
  else if (ENDS("_hz")) snprintf(buf, n, "%.0f MHz", v / 1e6);
  else if (ENDS("_ns")) snprintf(buf, n, "%.2f us", v / 1e3);
  else snprintf(buf, n, "%.4g", v);
#undef ENDS
  return buf;
}

/* ---- table and Markdown ---- */

/* The kernel figures' table: a column per metric KCOL wide under a short
 * heading (ours for the range profiler's set, else the name cut), so that
 * the kernel names keep room at the default width. */
#define KCOL 9
static const char *kernel_head(const char *metric) {
  static const char *const heads[][2] = {
      {"sm_throughput_pct", "SM %"},   {"mem_throughput_pct", "mem %"},
      {"achieved_occupancy_pct", "occup %"}, {"tensor_pipe_pct", "tensor %"},
      {"l2_hit_pct", "L2 hit %"},      {"dram_throughput_pct", "DRAM %"},
      {"duration_ns", "avg"}};
  for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
    if (strcmp(metric, heads[i][0]) == 0) return heads[i][1];
  return metric;
}

static void gpu_means(tbe__buf *b, const tbe_analysis *an, int md) {
  if (!an->ngpu_metrics) return;
  size_t ncol = an->ndevices + (an->ndevices > 1);
  char v[48];
  if (md) {
    tbe__buf_puts(b, "\n## GPU metrics (means over the window)\n\n| metric |");
    for (size_t c = 0; c < ncol; c++)
      if (c < an->ndevices) tbe__buf_printf(b, " GPU %d |", (int)an->devices[c].device);
      else tbe__buf_puts(b, " all GPUs |");
    tbe__buf_puts(b, "\n|---|");
    for (size_t c = 0; c < ncol; c++) tbe__buf_puts(b, "---:|");
    tbe__buf_putc(b, '\n');
  } else {
    tbe__buf_puts(b, "\nGPU metrics (means over the window)\n");
    tbe__cell(b, "metric", 22, 0);
    for (size_t c = 0; c < ncol; c++) {
      if (c < an->ndevices) snprintf(v, sizeof v, "GPU %d", (int)an->devices[c].device);
      else snprintf(v, sizeof v, "all GPUs");
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v, 12, 1);
    }
    tbe__buf_putc(b, '\n');
    tbe__rule(b, 22 + (int)ncol * 14);
  }
  for (size_t k = 0; k < an->ngpu_metrics; k++) {
    const char *name = an->gpu_metrics[k];
    if (md) tbe__buf_printf(b, "| %s |", name);
    else tbe__cell(b, name, 22, 0);
    for (size_t c = 0; c < ncol; c++) {
      const tbe_device_stats *d = c < an->ndevices ? &an->devices[c] : &an->all;
      const tbe_metric_mean *m = d->metrics ? &d->metrics[k] : NULL;
      if (m && m->samples) tbe__metric_fmt(v, sizeof v, name, m->mean);
      else snprintf(v, sizeof v, "-");
      if (md) {
        tbe__buf_printf(b, " %s |", v);
      } else {
        tbe__buf_puts(b, "  ");
        tbe__cell(b, v, 12, 1);
      }
    }
    tbe__buf_putc(b, '\n');
  }
}

/* The kernels (in the table's order, the first `top`) that have figures. */
static void kernel_figures(tbe__buf *b, const tbe_analysis *an, size_t top, int md, int width) {
  if (!an->nkernel_metrics) return;
  size_t n = an->ngroups[TBE_GROUP_KERNEL];
  if (top == 0 || top > n) top = n;
  size_t shown = 0;
  for (size_t i = 0; i < top; i++) shown += an->groups[TBE_GROUP_KERNEL][i].metrics != NULL;
  if (!shown) return;
  int fixed = 9 + (int)an->nkernel_metrics * (KCOL + 2);
  int nw = width - fixed;
  if (nw < TBE__NAME_MIN) nw = TBE__NAME_MIN;
  char v[48], name[TBE__SHORT_MAX];
  if (md) {
    tbe__buf_puts(b, "\n## Kernel metrics (range profiler)\n\n| kernel | bound by |");
    for (size_t k = 0; k < an->nkernel_metrics; k++) tbe__buf_printf(b, " %s |", an->kernel_metrics[k]);
    tbe__buf_puts(b, "\n|---|---|");
    for (size_t k = 0; k < an->nkernel_metrics; k++) tbe__buf_puts(b, "---:|");
    tbe__buf_putc(b, '\n');
  } else {
    tbe__buf_printf(b, "\nKernel metrics (range profiler; %zu of the kernels above)\n", shown);
    tbe__cell(b, "name", nw, 0);
    tbe__buf_puts(b, "  ");
    tbe__cell(b, "bound by", 8, 0);
    for (size_t k = 0; k < an->nkernel_metrics; k++) {
      tbe__buf_puts(b, "  ");
      tbe__cell(b, kernel_head(an->kernel_metrics[k]), KCOL, 1);
    }
    tbe__buf_putc(b, '\n');
    tbe__rule(b, nw + fixed + 1);
  }
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[TBE_GROUP_KERNEL][i];
    if (!e->metrics) continue;
    const char *bound = tbe_bound_name((tbe_bound)e->bound_by);
    if (md) {
      tbe_name_shorten(e->label, 80, name, sizeof name);
      tbe__buf_puts(b, "| ");
      tbe__md_escape(b, name);
      tbe__buf_printf(b, " | %s |", *bound ? bound : "-");
    } else {
      tbe__name_cell(e->label, nw, 0, name, sizeof name);
      tbe__cell(b, name, nw, 0);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, *bound ? bound : "-", 8, 0);
    }
    for (size_t k = 0; k < an->nkernel_metrics; k++) {
      const tbe_metric_mean *m = &e->metrics[k];
      if (!m->samples) snprintf(v, sizeof v, "-");
      else if (!md && strcmp(an->kernel_metrics[k], "duration_ns") == 0)
        tbe__dur(v, (int64_t)m->mean);
      else tbe__metric_fmt(v, sizeof v, an->kernel_metrics[k], m->mean);
      if (md) {
        tbe__buf_printf(b, " %s |", v);
      } else {
        tbe__buf_puts(b, "  ");
        tbe__cell(b, v, KCOL, 1);
      }
    }
    tbe__buf_putc(b, '\n');
  }
}

/* The PM metrics while each kernel ran: the percentages only (SM active,
 * occupancy, tensor, DRAM: what says where a kernel stands; throughput in
 * bytes and clocks are for the GPU table), for the kernels of the table's
 * first `top` that have them, with the intervals per launch behind each
 * row (under 2: launches shorter than the sampling interval, whose means
 * other work shares). */
static const char *pm_head(const char *metric) {
  static const char *const heads[][2] = {
      {"sm_active_pct", "SM act %"},     {"occupancy_pct", "occup %"},
      {"tensor_active_pct", "tensor %"}, {"dram_read_pct", "DRAM rd %"},
      {"dram_write_pct", "DRAM wr %"}};
  for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
    if (strcmp(metric, heads[i][0]) == 0) return heads[i][1];
  return metric;
}

static int is_pct(const char *name) {
  size_t l = strlen(name);
  return l > 4 && strcmp(name + l - 4, "_pct") == 0;
}

static void kernel_pm(tbe__buf *b, const tbe_analysis *an, size_t top, int md, int width) {
  if (!an->ngpu_metrics) return;
  size_t n = an->ngroups[TBE_GROUP_KERNEL];
  if (top == 0 || top > n) top = n;
  size_t shown = 0, ncol = 0;
  for (size_t i = 0; i < top; i++) shown += an->groups[TBE_GROUP_KERNEL][i].pm_metrics != NULL;
  for (size_t k = 0; k < an->ngpu_metrics; k++) ncol += is_pct(an->gpu_metrics[k]);
  if (!shown || !ncol) return;
  int fixed = (int)(ncol + 1) * (KCOL + 2);
  int nw = width - fixed;
  if (nw < TBE__NAME_MIN) nw = TBE__NAME_MIN;
  char v[48], name[TBE__SHORT_MAX];
  if (md) {
    tbe__buf_puts(b, "\n## GPU metrics while each kernel ran (PM sampling)\n\n| kernel |");
    for (size_t k = 0; k < an->ngpu_metrics; k++)
      if (is_pct(an->gpu_metrics[k])) tbe__buf_printf(b, " %s |", an->gpu_metrics[k]);
    tbe__buf_puts(b, " samples per launch |\n|---|");
    for (size_t k = 0; k <= ncol; k++) tbe__buf_puts(b, "---:|");
    tbe__buf_putc(b, '\n');
  } else {
    tbe__buf_printf(b, "\nGPU metrics while each kernel ran (PM sampling; %zu of the kernels above)\n",
                    shown);
    tbe__cell(b, "name", nw, 0);
    for (size_t k = 0; k < an->ngpu_metrics; k++) {
      if (!is_pct(an->gpu_metrics[k])) continue;
      tbe__buf_puts(b, "  ");
      tbe__cell(b, pm_head(an->gpu_metrics[k]), KCOL, 1);
    }
    tbe__buf_puts(b, "  ");
    tbe__cell(b, "per call", KCOL, 1);
    tbe__buf_putc(b, '\n');
    tbe__rule(b, nw + fixed);
  }
  int coarse = 0;
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[TBE_GROUP_KERNEL][i];
    if (!e->pm_metrics) continue;
    uint64_t samples = 0;
    for (size_t k = 0; k < an->ngpu_metrics; k++)
      if (e->pm_metrics[k].samples > samples) samples = e->pm_metrics[k].samples;
    double per = e->calls ? (double)samples / (double)e->calls : 0;
    coarse |= per < 2;
    if (md) {
      tbe_name_shorten(e->label, 80, name, sizeof name);
      tbe__buf_puts(b, "| ");
      tbe__md_escape(b, name);
      tbe__buf_puts(b, " |");
    } else {
      tbe__name_cell(e->label, nw, 0, name, sizeof name);
      tbe__cell(b, name, nw, 0);
    }
    for (size_t k = 0; k < an->ngpu_metrics; k++) {
      if (!is_pct(an->gpu_metrics[k])) continue;
      const tbe_metric_mean *m = &e->pm_metrics[k];
      if (m->samples) tbe__metric_fmt(v, sizeof v, an->gpu_metrics[k], m->mean);
      else snprintf(v, sizeof v, "-");
      if (md) {
        tbe__buf_printf(b, " %s |", v);
      } else {
        tbe__buf_puts(b, "  ");
        tbe__cell(b, v, KCOL, 1);
      }
    }
    snprintf(v, sizeof v, "%.1f", per);
    if (md) {
      tbe__buf_printf(b, " %s |\n", v);
    } else {
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v, KCOL, 1);
      tbe__buf_putc(b, '\n');
    }
  }
  if (coarse)
    tbe__buf_puts(b, md ? "\nA row under 2 samples per launch ran shorter than the sampling "
                          "interval: its means include the work around it.\n"
                        : "(under 2 samples per call: the kernel ran shorter than the sampling "
                          "interval, its means include the work around it)\n");
}

void tbe__metrics_gpu(tbe__buf *b, const tbe_analysis *an, int md) { gpu_means(b, an, md); }

void tbe__metrics_kernels(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o,
                          int md) {
  kernel_figures(b, an, o->top, md, o->width);
  kernel_pm(b, an, o->top, md, o->width);
}

/* ---- CSV ---- */

void tbe__metrics_csv(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o) {
  if (an->ngpu_metrics) {
    tbe__buf_puts(b, "\nsection,device,metric,mean,samples\n");
    for (size_t d = 0; d <= an->ndevices; d++) {
      const tbe_device_stats *ds = d < an->ndevices ? &an->devices[d] : &an->all;
      for (size_t k = 0; ds->metrics && k < an->ngpu_metrics; k++) {
        if (!ds->metrics[k].samples) continue;
        if (ds->device < 0) tbe__buf_puts(b, "gpu_metric,all,");
        else tbe__buf_printf(b, "gpu_metric,%d,", (int)ds->device);
        tbe__buf_printf(b, "%s,%.6g,%llu\n", an->gpu_metrics[k], ds->metrics[k].mean,
                        (unsigned long long)ds->metrics[k].samples);
      }
    }
  }
  size_t nkern = an->ngroups[TBE_GROUP_KERNEL], ktop = o->top && o->top < nkern ? o->top : nkern;
  int any_pm = 0;
  for (size_t i = 0; i < ktop; i++) any_pm |= an->groups[TBE_GROUP_KERNEL][i].pm_metrics != NULL;
  if (an->ngpu_metrics && any_pm) {
    tbe__buf_puts(b, "\nsection,name,metric,mean,samples,calls\n");
    for (size_t i = 0; i < ktop; i++) {
      const tbe_name_stats *e = &an->groups[TBE_GROUP_KERNEL][i];
      for (size_t k = 0; e->pm_metrics && k < an->ngpu_metrics; k++) {
        if (!e->pm_metrics[k].samples) continue;
        tbe__buf_puts(b, "kernel_gpu_metric,");
        tbe__csv_str(b, e->label);
        tbe__buf_printf(b, ",%s,%.6g,%llu,%llu\n", an->gpu_metrics[k], e->pm_metrics[k].mean,
                        (unsigned long long)e->pm_metrics[k].samples,
                        (unsigned long long)e->calls);
      }
    }
  }
  if (an->nkernel_metrics) {
    size_t n = an->ngroups[TBE_GROUP_KERNEL], top = o->top && o->top < n ? o->top : n;
    tbe__buf_puts(b, "\nsection,name,bound_by,metric,mean,launches\n");
    for (size_t i = 0; i < top; i++) {
      const tbe_name_stats *e = &an->groups[TBE_GROUP_KERNEL][i];
      for (size_t k = 0; e->metrics && k < an->nkernel_metrics; k++) {
        if (!e->metrics[k].samples) continue;
        tbe__buf_puts(b, "kernel_metric,");
        tbe__csv_str(b, e->label);
        tbe__buf_printf(b, ",%s,%s,%.6g,%llu\n", tbe_bound_name((tbe_bound)e->bound_by),
                        an->kernel_metrics[k], e->metrics[k].mean,
                        (unsigned long long)e->metrics[k].samples);
      }
    }
  }
}

/* ---- JSON ---- */

static void json_means(tbe__buf *b, const char *const *names, size_t n,
                       const tbe_metric_mean *m) {
  int first = 1;
  for (size_t k = 0; k < n; k++) {
    if (!m[k].samples) continue;
    tbe__buf_puts(b, first ? "" : ",");
    tbe__json_str(b, names[k]);
    tbe__buf_printf(b, ":%.6g", m[k].mean);
    first = 0;
  }
}

void tbe__metrics_json_gpu(tbe__buf *b, const tbe_analysis *an, const tbe_metric_mean *m) {
  if (!an->ngpu_metrics || !m) return;
  tbe__buf_puts(b, ",\"gpu_metrics\":{");
  json_means(b, an->gpu_metrics, an->ngpu_metrics, m);
  tbe__buf_putc(b, '}');
}

void tbe__metrics_json_kernel(tbe__buf *b, const tbe_analysis *an, const tbe_name_stats *e) {
  if (an->ngpu_metrics && e->pm_metrics) {
    uint64_t samples = 0;
    for (size_t k = 0; k < an->ngpu_metrics; k++)
      if (e->pm_metrics[k].samples > samples) samples = e->pm_metrics[k].samples;
    tbe__buf_puts(b, ",\"gpu_metrics\":{");
    json_means(b, an->gpu_metrics, an->ngpu_metrics, e->pm_metrics);
    tbe__buf_printf(b, "},\"gpu_metric_samples\":%llu", (unsigned long long)samples);
  }
  if (!an->nkernel_metrics || !e->metrics) return;
  tbe__buf_puts(b, ",\"metrics\":{");
  json_means(b, an->kernel_metrics, an->nkernel_metrics, e->metrics);
  uint64_t launches = 0;
  for (size_t k = 0; k < an->nkernel_metrics; k++)
    if (e->metrics[k].samples > launches) launches = e->metrics[k].samples;
  tbe__buf_printf(b, "},\"metric_launches\":%llu,\"bound_by\":", (unsigned long long)launches);
  tbe__json_str(b, tbe_bound_name((tbe_bound)e->bound_by));
}

/* ---- diff ---- */

/* A comparison shows the metrics when either side has them: per GPU (and
 * for all GPUs when a side has several) the PM means of base and new, by
 * device ordinal and metric name; then the kernels on both sides (in the
 * diff's order, the first o->top) that have figures on both: the bound-by
 * verdict and each figure, base and new.  A value one side lacks is "-"
 * (JSON null).  Delta = new - base, in the metric's unit. */

/* The mean of metric `name` in `m` (names of `an`), or 0 when absent. */
static int mean_of(const char *const *names, size_t n, const tbe_metric_mean *m, const char *name,
                   double *v) {
  if (!m) return 0;
  for (size_t k = 0; k < n; k++)
    if (strcmp(names[k], name) == 0 && m[k].samples) {
      *v = m[k].mean;
      return 1;
    }
  return 0;
}

static const tbe_device_stats *device_of(const tbe_analysis *an, int32_t dev) {
  if (!an) return NULL;
  if (dev < 0) return &an->all;
  for (size_t i = 0; i < an->ndevices; i++)
    if (an->devices[i].device == dev) return &an->devices[i];
  return NULL;
}

static const tbe_name_stats *kernel_of(const tbe_analysis *an, const char *label) {
  if (!an) return NULL;
  for (size_t i = 0; i < an->ngroups[TBE_GROUP_KERNEL]; i++)
    if (strcmp(an->groups[TBE_GROUP_KERNEL][i].label, label) == 0)
      return &an->groups[TBE_GROUP_KERNEL][i];
  return NULL;
}

/* The devices of the comparison: each side's ordinals once, ascending,
 * then -1 (all GPUs) when a side has several or none (the merged analysis
 * of a run of several hosts).  Returns the count (at most
 * `cap`). */
static size_t diff_devices(const tbe_diff *d, int32_t *out, size_t cap) {
  size_t n = 0;
  int several = 0;
  for (int s = 0; s < 2; s++) {
    const tbe_analysis *an = d->side[s];
    if (!an || !an->ngpu_metrics) continue;
    several |= an->ndevices != 1; /* a run's merged analysis has none */
    for (size_t i = 0; i < an->ndevices && n < cap; i++) {
      size_t j = 0;
      while (j < n && out[j] != an->devices[i].device) j++;
      if (j < n) continue;
      /* insert in order */
      j = n++;
      while (j && out[j - 1] > an->devices[i].device) out[j] = out[j - 1], j--;
      out[j] = an->devices[i].device;
    }
  }
  if (several && n < cap) out[n++] = -1;
  return n;
}

/* The metric names of the comparison: base's, then new's not in base. */
static size_t diff_names(const char *const *a, size_t na, const char *const *b, size_t nb,
                         const char **out) {
  size_t n = 0;
  for (size_t i = 0; i < na; i++) out[n++] = a[i];
  for (size_t i = 0; i < nb; i++) {
    size_t j = 0;
    while (j < na && strcmp(a[j], b[i]) != 0) j++;
    if (j == na) out[n++] = b[i];
  }
  return n;
}

static void value_cell(char *buf, size_t n, const char *name, int have, double v) {
  if (have) tbe__metric_fmt(buf, n, name, v);
  else snprintf(buf, n, "-");
}

static void delta_cell(char *buf, size_t n, const char *name, int h0, double v0, int h1,
                       double v1) {
  if (!h0 || !h1) {
    snprintf(buf, n, "-");
    return;
  }
  double dv = v1 - v0;
  buf[0] = dv >= 0 ? '+' : '-';
  tbe__metric_fmt(buf + 1, n - 1, name, dv >= 0 ? dv : -dv);
}

static void json_num(tbe__buf *b, int have, double v) {
  if (have) tbe__buf_printf(b, "%.6g", v);
  else tbe__buf_puts(b, "null");
}

/* The comparison in o->format; `names` has room for both sides' names,
 * `devs` for both sides' devices and one more. */
static void diff_render(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o,
                        const char **names, int32_t *devs, size_t ndevs) {
  const tbe_analysis *s0 = d->side[0], *s1 = d->side[1];
  int fmt = o->format, md = fmt == TBE_REPORT_MARKDOWN;
  char v0[48], v1[48], dv[48], dn[16];
  /* PM means */
  size_t nm = diff_names(s0 ? s0->gpu_metrics : NULL, s0 ? s0->ngpu_metrics : 0,
                         s1 ? s1->gpu_metrics : NULL, s1 ? s1->ngpu_metrics : 0, names);
  size_t nd = nm ? diff_devices(d, devs, ndevs) : 0;
  if (nm && nd) {
    if (fmt == TBE_REPORT_JSON) tbe__buf_puts(b, ",\"gpu_metrics\":[");
    else if (fmt == TBE_REPORT_CSV) tbe__buf_puts(b, "\nsection,device,metric,base,new,delta\n");
    else if (md)
      tbe__buf_puts(b, "\n## GPU metrics (means over the window)\n\n"
                       "| GPU | metric | base | new | delta |\n|---|---|---:|---:|---:|\n");
    else {
      tbe__buf_puts(b, "\nGPU metrics (means over the window)\n");
      tbe__cell(b, "GPU", 8, 0);
      tbe__cell(b, "metric", 24, 0);
      tbe__cell(b, "base", 12, 1);
      tbe__cell(b, "new", 12, 1);
      tbe__cell(b, "delta", 12, 1);
      tbe__buf_putc(b, '\n');
      tbe__rule(b, 68);
    }
    int first = 1;
    for (size_t i = 0; i < nd; i++) {
      const tbe_device_stats *ds[2] = {device_of(s0, devs[i]), device_of(s1, devs[i])};
      if (devs[i] < 0) snprintf(dn, sizeof dn, "all");
      else snprintf(dn, sizeof dn, "%d", (int)devs[i]);
      for (size_t k = 0; k < nm; k++) {
        double x[2] = {0, 0};
        int h[2];
        h[0] = ds[0] && s0 && mean_of(s0->gpu_metrics, s0->ngpu_metrics, ds[0]->metrics, names[k], &x[0]);
        h[1] = ds[1] && s1 && mean_of(s1->gpu_metrics, s1->ngpu_metrics, ds[1]->metrics, names[k], &x[1]);
        if (!h[0] && !h[1]) continue;
        if (fmt == TBE_REPORT_JSON) {
          tbe__buf_printf(b, "%s{\"device\":", first ? "" : ",");
          if (devs[i] < 0) tbe__buf_puts(b, "\"all\"");
          else tbe__buf_printf(b, "%d", (int)devs[i]);
          tbe__buf_puts(b, ",\"metric\":");
          tbe__json_str(b, names[k]);
          tbe__buf_puts(b, ",\"base\":");
          json_num(b, h[0], x[0]);
          tbe__buf_puts(b, ",\"new\":");
          json_num(b, h[1], x[1]);
          tbe__buf_putc(b, '}');
          first = 0;
          continue;
        }
        if (fmt == TBE_REPORT_CSV) {
          tbe__buf_printf(b, "gpu_metric,%s,", dn);
          tbe__csv_str(b, names[k]);
          tbe__buf_putc(b, ',');
          if (h[0]) tbe__buf_printf(b, "%.6g", x[0]);
          tbe__buf_putc(b, ',');
          if (h[1]) tbe__buf_printf(b, "%.6g", x[1]);
          tbe__buf_putc(b, ',');
          if (h[0] && h[1]) tbe__buf_printf(b, "%.6g", x[1] - x[0]);
          tbe__buf_putc(b, '\n');
          continue;
        }
        value_cell(v0, sizeof v0, names[k], h[0], x[0]);
        value_cell(v1, sizeof v1, names[k], h[1], x[1]);
        delta_cell(dv, sizeof dv, names[k], h[0], x[0], h[1], x[1]);
        if (md) {
          tbe__buf_printf(b, "| %s | ", devs[i] < 0 ? "all" : dn);
          tbe__md_escape(b, names[k]);
          tbe__buf_printf(b, " | %s | %s | %s |\n", v0, v1, dv);
        } else {
          tbe__cell(b, devs[i] < 0 ? "all" : dn, 8, 0);
          tbe__cell(b, names[k], 24, 0);
          tbe__cell(b, v0, 12, 1);
          tbe__cell(b, v1, 12, 1);
          tbe__cell(b, dv, 12, 1);
          tbe__buf_putc(b, '\n');
        }
      }
    }
    if (fmt == TBE_REPORT_JSON) tbe__buf_putc(b, ']');
  }
  /* kernels on both sides with figures on both */
  size_t nk = diff_names(s0 ? s0->kernel_metrics : NULL, s0 ? s0->nkernel_metrics : 0,
                         s1 ? s1->kernel_metrics : NULL, s1 ? s1->nkernel_metrics : 0, names);
  if (!nk) return;
  size_t n = d->nentries[TBE_GROUP_KERNEL];
  if (o->top && o->top < n) n = o->top;
  if (fmt == TBE_REPORT_JSON) tbe__buf_puts(b, ",\"kernel_metrics\":[");
  else if (fmt == TBE_REPORT_CSV) tbe__buf_puts(b, "\nsection,name,metric,base,new,delta\n");
  else if (md)
    tbe__buf_puts(b, "\n## Kernel metrics (range profiler, kernels on both sides)\n\n"
                     "| kernel | metric | base | new | delta |\n|---|---|---:|---:|---:|\n");
  else
    tbe__buf_puts(b, "\nKernel metrics (range profiler, kernels on both sides)\n");
  int first = 1, any = 0;
  char name[TBE__SHORT_MAX];
  int nw = o->width - 2 - 24 - 36;
  if (nw < TBE__NAME_MIN) nw = TBE__NAME_MIN;
  for (size_t i = 0; i < n; i++) {
    const tbe_diff_entry *en = &d->entries[TBE_GROUP_KERNEL][i];
    if (en->present != 3) continue;
    const tbe_name_stats *e[2] = {kernel_of(s0, en->name), kernel_of(s1, en->name)};
    if (!e[0] || !e[1] || !e[0]->metrics || !e[1]->metrics) continue;
    const char *bw[2] = {tbe_bound_name((tbe_bound)e[0]->bound_by),
                         tbe_bound_name((tbe_bound)e[1]->bound_by)};
    if (fmt == TBE_REPORT_JSON) {
      tbe__buf_printf(b, "%s{\"name\":", first ? "" : ",");
      tbe__json_str(b, en->name);
      tbe__buf_puts(b, ",\"bound_by\":[");
      tbe__json_str(b, bw[0]);
      tbe__buf_putc(b, ',');
      tbe__json_str(b, bw[1]);
      tbe__buf_puts(b, "],\"metrics\":{");
    } else if (fmt == TBE_REPORT_CSV) {
      tbe__buf_puts(b, "kernel_metric,");
      tbe__csv_str(b, en->name);
      tbe__buf_printf(b, ",bound_by,%s,%s,%s\n", bw[0], bw[1],
                      strcmp(bw[0], bw[1]) ? "changed" : "");
    } else if (md) {
      tbe_name_shorten(en->name, 80, name, sizeof name);
      tbe__buf_puts(b, "| ");
      tbe__md_escape(b, name);
      tbe__buf_printf(b, " | bound by | %s | %s | %s |\n", *bw[0] ? bw[0] : "-",
                      *bw[1] ? bw[1] : "-", strcmp(bw[0], bw[1]) ? "changed" : "");
    } else {
      if (!any) {
        tbe__cell(b, "name", nw, 0);
        tbe__buf_puts(b, "  ");
        tbe__cell(b, "metric", 24, 0);
        tbe__cell(b, "base", 12, 1);
        tbe__cell(b, "new", 12, 1);
        tbe__cell(b, "delta", 12, 1);
        tbe__buf_putc(b, '\n');
        tbe__rule(b, nw + 2 + 24 + 36);
      }
      tbe__name_cell(en->name, nw, o->wide, name, sizeof name);
      tbe__cell(b, name, nw, 0);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, "bound by", 24, 0);
      tbe__cell(b, *bw[0] ? bw[0] : "-", 12, 1);
      tbe__cell(b, *bw[1] ? bw[1] : "-", 12, 1);
      tbe__cell(b, strcmp(bw[0], bw[1]) ? "changed" : "", 12, 1);
      tbe__buf_putc(b, '\n');
    }
    any = 1;
    int mfirst = 1;
    for (size_t k = 0; k < nk; k++) {
      double x[2] = {0, 0};
      int h[2] = {mean_of(s0->kernel_metrics, s0->nkernel_metrics, e[0]->metrics, names[k], &x[0]),
                  mean_of(s1->kernel_metrics, s1->nkernel_metrics, e[1]->metrics, names[k], &x[1])};
      if (!h[0] && !h[1]) continue;
      if (fmt == TBE_REPORT_JSON) {
        tbe__buf_puts(b, mfirst ? "" : ",");
        tbe__json_str(b, names[k]);
        tbe__buf_putc(b, ':');
        tbe__buf_putc(b, '[');
        json_num(b, h[0], x[0]);
        tbe__buf_putc(b, ',');
        json_num(b, h[1], x[1]);
        tbe__buf_putc(b, ']');
        mfirst = 0;
        continue;
      }
      if (fmt == TBE_REPORT_CSV) {
        tbe__buf_puts(b, "kernel_metric,");
        tbe__csv_str(b, en->name);
        tbe__buf_putc(b, ',');
        tbe__csv_str(b, names[k]);
        tbe__buf_putc(b, ',');
        if (h[0]) tbe__buf_printf(b, "%.6g", x[0]);
        tbe__buf_putc(b, ',');
        if (h[1]) tbe__buf_printf(b, "%.6g", x[1]);
        tbe__buf_putc(b, ',');
        if (h[0] && h[1]) tbe__buf_printf(b, "%.6g", x[1] - x[0]);
        tbe__buf_putc(b, '\n');
        continue;
      }
      value_cell(v0, sizeof v0, names[k], h[0], x[0]);
      value_cell(v1, sizeof v1, names[k], h[1], x[1]);
      delta_cell(dv, sizeof dv, names[k], h[0], x[0], h[1], x[1]);
      if (md) {
        tbe__buf_puts(b, "| | ");
        tbe__md_escape(b, names[k]);
        tbe__buf_printf(b, " | %s | %s | %s |\n", v0, v1, dv);
      } else {
        tbe__cell(b, "", nw, 0);
        tbe__buf_puts(b, "  ");
        tbe__cell(b, names[k], 24, 0);
        tbe__cell(b, v0, 12, 1);
        tbe__cell(b, v1, 12, 1);
        tbe__cell(b, dv, 12, 1);
        tbe__buf_putc(b, '\n');
      }
    }
    if (fmt == TBE_REPORT_JSON) tbe__buf_puts(b, "}}");
    first = 0;
  }
  if (fmt == TBE_REPORT_JSON) tbe__buf_putc(b, ']');
  else if (!any && !md && fmt != TBE_REPORT_CSV) tbe__buf_puts(b, "(no kernel measured on both sides)\n");
  else if (!any && md) tbe__buf_puts(b, "| (no kernel measured on both sides) | | | | |\n");
}

void tbe__metrics_diff(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  const tbe_analysis *s0 = d->side[0], *s1 = d->side[1];
  size_t ng = (s0 ? s0->ngpu_metrics : 0) + (s1 ? s1->ngpu_metrics : 0);
  size_t nk = (s0 ? s0->nkernel_metrics : 0) + (s1 ? s1->nkernel_metrics : 0);
  if (!ng && !nk) return;
  size_t nn = ng > nk ? ng : nk;
  size_t ndevs = (s0 ? s0->ndevices : 0) + (s1 ? s1->ndevices : 0) + 1;
  const char **names = tbe__alloc(b->a, nn * sizeof *names);
  int32_t *devs = tbe__alloc(b->a, ndevs * sizeof *devs);
  if (!names || !devs) {
    tbe__free(b->a, names);
    tbe__free(b->a, devs);
    b->err = TBE_ENOMEM;
    return;
  }
  diff_render(b, d, o, names, devs, ndevs);
  tbe__free(b->a, names);
  tbe__free(b->a, devs);
}

/* ---- runs of several hosts ---- */

/* The run's PM means (all hosts: the merged analysis, run_analysis.c) with
 * the host that reads lowest and the one that reads highest (a rank whose
 * SMs idle stands out), then the merged kernel figures. */
void tbe__metrics_run(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o,
                      int md) {
  const tbe_analysis *t = r->total;
  if (t->ngpu_metrics && t->all.metrics) {
    char v[3][48], who[2][64];
    if (md)
      tbe__buf_puts(b, "\n## GPU metrics (all hosts; lowest and highest host)\n\n"
                       "| metric | all hosts | lowest | host | highest | host |\n"
                       "|---|---:|---:|---|---:|---|\n");
    else {
      tbe__buf_puts(b, "\nGPU metrics (all hosts: means weighted by GPU time; lowest and "
                       "highest host)\n");
      tbe__cell(b, "metric", 22, 0);
      tbe__cell(b, "all hosts", 12, 1);
      tbe__cell(b, "lowest", 12, 1);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, "host", 16, 0);
      tbe__cell(b, "highest", 12, 1);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, "host", 16, 0);
      tbe__buf_putc(b, '\n');
      tbe__rule(b, 22 + 12 * 3 + 2 * 18);
    }
    for (size_t k = 0; k < t->ngpu_metrics; k++) {
      const char *name = t->gpu_metrics[k];
      if (!t->all.metrics[k].samples) continue;
      double lo = 0, hi = 0;
      long ilo = -1, ihi = -1;
      for (size_t h = 0; h < r->nhosts; h++) {
        const tbe_analysis *an = r->hosts[h].an;
        double x;
        if (!mean_of(an->gpu_metrics, an->ngpu_metrics, an->all.metrics, name, &x)) continue;
        if (ilo < 0 || x < lo) lo = x, ilo = (long)h;
        if (ihi < 0 || x > hi) hi = x, ihi = (long)h;
      }
      tbe__metric_fmt(v[0], sizeof v[0], name, t->all.metrics[k].mean);
      value_cell(v[1], sizeof v[1], name, ilo >= 0, lo);
      value_cell(v[2], sizeof v[2], name, ihi >= 0, hi);
      for (int s = 0; s < 2; s++) {
        long i = s ? ihi : ilo;
        const tbe_run_host *hh = i >= 0 ? &r->hosts[i] : NULL;
        snprintf(who[s], sizeof who[s], "%s", hh ? (*hh->label ? hh->label : "?") : "-");
      }
      if (md) {
        tbe__buf_puts(b, "| ");
        tbe__md_escape(b, name);
        tbe__buf_printf(b, " | %s | %s | ", v[0], v[1]);
        tbe__md_escape(b, who[0]);
        tbe__buf_printf(b, " | %s | ", v[2]);
        tbe__md_escape(b, who[1]);
        tbe__buf_puts(b, " |\n");
      } else {
        char c[2][17];
        tbe__cell(b, name, 22, 0);
        tbe__cell(b, v[0], 12, 1);
        tbe__cell(b, v[1], 12, 1);
        tbe__buf_puts(b, "  ");
        tbe__name_cell(who[0], 16, 0, c[0], sizeof c[0]);
        tbe__cell(b, c[0], 16, 0);
        tbe__cell(b, v[2], 12, 1);
        tbe__buf_puts(b, "  ");
        tbe__name_cell(who[1], 16, 0, c[1], sizeof c[1]);
        tbe__cell(b, c[1], 16, 0);
        tbe__buf_putc(b, '\n');
      }
    }
  }
  kernel_figures(b, t, o->top, md, o->width);
}
