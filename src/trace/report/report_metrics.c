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

void tbe__metrics_gpu(tbe__buf *b, const tbe_analysis *an, int md) { gpu_means(b, an, md); }

void tbe__metrics_kernels(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o,
                          int md) {
  kernel_figures(b, an, o->top, md, o->width);
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
  if (!an->nkernel_metrics || !e->metrics) return;
  tbe__buf_puts(b, ",\"metrics\":{");
  json_means(b, an->kernel_metrics, an->nkernel_metrics, e->metrics);
  uint64_t launches = 0;
  for (size_t k = 0; k < an->nkernel_metrics; k++)
    if (e->metrics[k].samples > launches) launches = e->metrics[k].samples;
  tbe__buf_printf(b, "},\"metric_launches\":%llu,\"bound_by\":", (unsigned long long)launches);
  tbe__json_str(b, tbe_bound_name((tbe_bound)e->bound_by));
}
