/* report_diff.c: rendering a comparison of two analyses (tbe_report_diff)
 * as a terminal table, CSV, JSON or Markdown, in parts that the comparison
 * of two runs (report_run.c) reuses for its totals: the overall figures
 * with the step-time verdict, then the per-name tables, then, when a side
 * has hardware metrics, their comparison (report_metrics.c).
 *
 * The verdict words come from one place (tbe_noise_name, tbe__noise_key,
 * tbe__noise_mark) so every format says the same thing; the rule behind
 * them is stated at tbe_noise (tbexport/analysis.h).  When both sides have
 * steps the terminal table shows each name's median time per step in place
 * of its average per call (the figure the verdict is about); the other
 * formats carry both. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/text.h"
#include "tbexport/error.h"
#include "trace/report/report.h"

#define SHORT_MAX 4096

void tbe__ratio_str(char *buf, size_t size, int64_t base, int64_t now) {
  if (base <= 0 && now <= 0) snprintf(buf, size, "-");
  else if (base <= 0) snprintf(buf, size, "new");
  else if (now <= 0) snprintf(buf, size, "gone");
  else {
    /* Two decimals, fewer as the ratio grows, so it keeps to its column. */
    double r = (double)now / (double)base;
    snprintf(buf, size, r < 100 ? "%.2fx" : r < 1000 ? "%.1fx" : "%.0fx", r);
  }
}

void tbe__delta_str(char *buf, int64_t d) {
  if (d > 0) {
    buf[0] = '+';
    tbe__fmt_dur(buf + 1, 31, d);
  } else {
    tbe__fmt_dur(buf, 32, d);
  }
}

#define ratio_str tbe__ratio_str
#define delta_str tbe__delta_str

const char *tbe__noise_key(uint32_t v) {
  switch (v) {
    case TBE_NOISE_TOO_FEW: return "too_few";
    case TBE_NOISE_WITHIN: return "within";
    case TBE_NOISE_BEYOND: return "beyond";
    default: return "";
  }
}

/* One character for the terminal tables (legend printed above them). */
const char *tbe__noise_mark(uint32_t v) {
  return v == TBE_NOISE_WITHIN ? "~" : v == TBE_NOISE_BEYOND ? "!" : "";
}

static void p_str(char *buf, size_t size, double p) {
  if (p < 0.001) snprintf(buf, size, "p < 0.001");
  else snprintf(buf, size, "p = %.3f", p);
}

void tbe__noise_sentence(tbe__buf *b, const tbe_step_compare *c, const char *what,
                         const tbe_report_options *o) {
  int md = o->format == TBE_REPORT_MARKDOWN;
  char x[32], y[32], p[32], line[512];
  const tbe_step_dist *d0 = &c->dist[0], *d1 = &c->dist[1];
  switch (c->verdict) {
    case TBE_NOISE_TOO_FEW:
      snprintf(line, sizeof line,
               "%s: %zu and %zu steps are too few to judge whether the change exceeds the steps' "
               "own noise (%d per side needed).",
               what, d0->n, d1->n, TBE_NOISE_MIN_STEPS);
      break;
    case TBE_NOISE_WITHIN:
    case TBE_NOISE_BEYOND:
      p_str(p, sizeof p, c->p_value);
      snprintf(line, sizeof line,
               "%s: median %s -> %s (%+.1f%%), %s the steps' own noise (Mann-Whitney %s over "
               "%zu and %zu steps).",
               what, tbe__dur(x, d0->median_ns), tbe__dur(y, d1->median_ns),
               d0->median_ns > 0 ? 100.0 * (double)(d1->median_ns - d0->median_ns) /
                                       (double)d0->median_ns
                                 : 0.0,
               c->verdict == TBE_NOISE_WITHIN ? "within" : "beyond", p, d0->n, d1->n);
      break;
    default: return;
  }
  if (md) {
    tbe__buf_puts(b, "\n");
    tbe__md_escape(b, line);
    tbe__buf_putc(b, '\n');
  } else {
    tbe__wrap(b, line, o->width);
  }
}

static void diff_overall_rows(const tbe_diff *d, int r, const char **label, int64_t v[2],
                              int *have) {
  *have = 1;
  switch (r) {
    case 0: *label = "wall time"; v[0] = d->wall_ns[0]; v[1] = d->wall_ns[1]; break;
    case 1: *label = "GPU busy"; v[0] = d->busy_ns[0]; v[1] = d->busy_ns[1]; break;
    case 2: *label = "kernel time"; v[0] = d->kernel_ns[0]; v[1] = d->kernel_ns[1]; break;
    case 3:
      *label = "step (median)";
      v[0] = d->step_median_ns[0];
      v[1] = d->step_median_ns[1];
      *have = d->nsteps[0] && d->nsteps[1];
      break;
    default: *have = 0;
  }
}

/* Row k of the kernel-class rows: the class's GPU time on each side
 * (tbe_device_stats.class_ns of all GPUs); *have is 0 when neither side
 * has work of the class. */
static void diff_class_row(const tbe_diff *d, uint32_t k, const char **label, int64_t v[2],
                           int *have) {
  static const char *const labels[TBE_KCLASS__COUNT] = {
      "  gemm", "  conv", "  attention", "  elementwise", "  reduction",
      "  norm", "  softmax", "  copy", "  comm", "  other"};
  *label = labels[k];
  *have = 0;
  for (int s = 0; s < 2; s++) {
    const tbe_analysis *an = d->side[s];
    v[s] = an ? an->all.class_ns[k] : 0;
    if (an && an->all.class_count[k]) *have = 1;
  }
}

/* ---- figures compared from the table ----
 * The listed device rows (report.h: tbe__fig_listed) with a diff rule,
 * compared on the two sides' all-GPU totals after the fixed rows, in every
 * format: the value on each side, the change and the ratio. */

/* Row f of the comparison: 0 when it is not one, or a side is missing. */
static int fig_compared(const tbe_diff *d, const tbe__figure *f) {
  return tbe__fig_listed(f) && f->diff != TBE__FD_NONE && d->side[0] && d->side[1];
}

/* The change and the ratio of row f as cells ("-" where unknown). */
static void fig_change(const tbe_diff *d, const tbe__figure *f, char *delta, char *ratio) {
  double a = tbe__fig_real(f, &d->side[0]->all, 0), n = tbe__fig_real(f, &d->side[1]->all, 0);
  if (isnan(a) || isnan(n)) {
    strcpy(delta, "-");
    strcpy(ratio, "-");
  } else if (f->unit == TBE__FU_PCT) {
    snprintf(delta, 32, "%+.1f", n - a);
    if (a > 0)
      snprintf(ratio, 32, "%.2fx", n / a);
    else
      strcpy(ratio, "-");
  } else {
    int64_t x = tbe__fig_i64(f, &d->side[0]->all, 0), y = tbe__fig_i64(f, &d->side[1]->all, 0);
    if (f->unit == TBE__FU_NS || f->unit == TBE__FU_NS_OPT)
      delta_str(delta, y - x);
    else if (tbe__fig_is_mem(f))
      tbe__fmt_bytes(delta, 32, tbe__sat_sub(y, x), 1);
    else
      snprintf(delta, 32, "%+lld", (long long)(y - x));
    if (f->unit == TBE__FU_BYTES_DELTA)
      strcpy(ratio, "-"); /* a signed change: compared as a difference */
    else
      ratio_str(ratio, 32, x, y);
  }
}

/* The compared rows as lines of the terminal table (md 0) or Markdown. */
static void fig_rows_text(tbe__buf *b, const tbe_diff *d, int md) {
  char x[64], y[64], z[32], w[32];
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (!fig_compared(d, f)) continue;
    if (!tbe__fig_known(f, &d->side[0]->all, 1, 0) && !tbe__fig_known(f, &d->side[1]->all, 1, 0))
      continue; /* unknown on both sides (no memory events): no row */
    tbe__fig_cell(x, sizeof x, f, &d->side[0]->all);
    tbe__fig_cell(y, sizeof y, f, &d->side[1]->all);
    fig_change(d, f, z, w);
    if (md) {
      tbe__buf_printf(b, "| %s | %s | %s | %s | %s | |\n", f->label, x, y, z, w);
      continue;
    }
    tbe__text_fit(x + 32, 32, f->label, 16);
    tbe__cell(b, x + 32, 16, 0);
    tbe__cell(b, x, 12, 1);
    tbe__cell(b, y, 12, 1);
    tbe__cell(b, z, 12, 1);
    tbe__cell(b, w, 8, 1);
    tbe__buf_putc(b, '\n');
  }
}

/* Whether the name tables show per-step medians instead of per-call
 * averages: both sides have steps. */
static int per_step_cols(const tbe_diff *d) { return d->nsteps[0] && d->nsteps[1]; }

static int any_tested(const tbe_diff *d) {
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    for (size_t i = 0; i < d->nentries[g]; i++)
      if (d->entries[g][i].steps.p_value >= 0 || d->entries[g][i].cuda_steps.p_value >= 0)
        return 1;
  return 0;
}

/* The overall figures of a diff in each format (wall, GPU busy, kernel
 * and median step time, each side, delta, ratio, the step test). */
void tbe__rep_overall_csv(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  (void)o;
  tbe__buf_puts(b, "section,metric,base_ns,new_ns,delta_ns,ratio,noise,p_value\n");
  for (int r = 0; r < 6; r++) {
    const char *label;
    int64_t v[2];
    int have;
    if (r < 4) {
      diff_overall_rows(d, r, &label, v, &have);
    } else {
      label = r == 4 ? "step (q1)" : "step (q3)";
      v[0] = r == 4 ? d->steps.dist[0].q1_ns : d->steps.dist[0].q3_ns;
      v[1] = r == 4 ? d->steps.dist[1].q1_ns : d->steps.dist[1].q3_ns;
      have = d->nsteps[0] && d->nsteps[1];
    }
    if (!have) continue;
    tbe__buf_printf(b, "overall,%s,%lld,%lld,%lld,%.6f,%s,", label, (long long)v[0],
                    (long long)v[1], (long long)(v[1] - v[0]),
                    v[0] > 0 ? (double)v[1] / (double)v[0] : 0.0,
                    r == 3 ? tbe__noise_key(d->steps.verdict) : "");
    if (r == 3 && d->steps.p_value >= 0) tbe__buf_printf(b, "%.6f", d->steps.p_value);
    tbe__buf_putc(b, '\n');
  }
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (!fig_compared(d, f)) continue;
    const void *s0 = &d->side[0]->all, *s1 = &d->side[1]->all;
    double a = tbe__fig_real(f, s0, 0), n = tbe__fig_real(f, s1, 0);
    if (isnan(a) && isnan(n)) continue; /* unknown on both sides (no memory events): no row */
    tbe__buf_printf(b, "overall,%s,", f->key);
    tbe__fig_csv(b, f, s0);
    tbe__buf_putc(b, ',');
    tbe__fig_csv(b, f, s1);
    tbe__buf_putc(b, ','); /* the change and the ratio as numbers (empty: unknown) */
    if (!isnan(a) && !isnan(n) && f->unit == TBE__FU_PCT)
      tbe__buf_printf(b, "%.3f", n - a);
    else if (!isnan(a) && !isnan(n))
      tbe__buf_printf(b, "%lld",
                      (long long)tbe__sat_sub(tbe__fig_i64(f, s1, 0), tbe__fig_i64(f, s0, 0)));
    if (f->unit == TBE__FU_BYTES_DELTA || isnan(a) || isnan(n)) /* a signed change: no ratio */
      tbe__buf_puts(b, ",,,\n");
    else
      tbe__buf_printf(b, ",%.6f,,\n", !isnan(n) && a > 0 ? n / a : 0.0);
  }
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_class_row(d, k, &label, v, &have);
    if (!have) continue;
    tbe__buf_printf(b, "class,%s,%lld,%lld,%lld,%.6f,,\n", tbe_kernel_class_name(k),
                    (long long)v[0], (long long)v[1], (long long)(v[1] - v[0]),
                    v[0] > 0 ? (double)v[1] / (double)v[0] : 0.0);
  }
}

void tbe__rep_overall_json(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  (void)o;
  tbe__buf_puts(b, "\"overall\":{");
  static const char *keys[4] = {"wall_ns", "busy_ns", "kernel_ns", "step_median_ns"};
  for (int r = 0; r < 4; r++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_overall_rows(d, r, &label, v, &have);
    tbe__buf_printf(b, "%s\"%s\":[%lld,%lld]", r ? "," : "", keys[r], (long long)v[0],
                    (long long)v[1]);
  }
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) {
    const tbe__figure *f = &tbe__figures[i];
    if (!fig_compared(d, f)) continue;
    tbe__buf_printf(b, ",\"%s\":[", f->key);
    tbe__fig_json(b, f, &d->side[0]->all);
    tbe__buf_putc(b, ',');
    tbe__fig_json(b, f, &d->side[1]->all);
    tbe__buf_putc(b, ']');
  }
  tbe__buf_puts(b, ",\"classes\":{");
  int first = 1;
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_class_row(d, k, &label, v, &have);
    if (!have) continue;
    tbe__buf_printf(b, "%s\"%s\":[%lld,%lld]", first ? "" : ",", tbe_kernel_class_name(k),
                    (long long)v[0], (long long)v[1]);
    first = 0;
  }
  tbe__buf_putc(b, '}');
  tbe__buf_printf(b, ",\"nsteps\":[%zu,%zu],\"steps\":", d->nsteps[0], d->nsteps[1]);
  tbe__json_step_compare(b, &d->steps);
  tbe__buf_putc(b, '}');
}

void tbe__rep_overall_md(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  char x[32], y[32], z[32], w[32], q[4][32];
  tbe__buf_puts(b, "| | base | new | delta | ratio | noise |\n|---|---:|---:|---:|---:|---|\n");
  for (int r = 0; r < 4; r++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_overall_rows(d, r, &label, v, &have);
    if (!have) continue;
    delta_str(z, v[1] - v[0]);
    ratio_str(w, sizeof w, v[0], v[1]);
    tbe__buf_printf(b, "| %s | %s | %s | %s | %s | %s |\n", label, tbe__dur(x, v[0]), tbe__dur(y, v[1]),
                    z, w, r == 3 ? tbe_noise_name((tbe_noise)d->steps.verdict) : "");
  }
  fig_rows_text(b, d, 1);
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_class_row(d, k, &label, v, &have);
    if (!have) continue;
    delta_str(z, v[1] - v[0]);
    ratio_str(w, sizeof w, v[0], v[1]);
    tbe__buf_printf(b, "| %s (class) | %s | %s | %s | %s | |\n", label + 2, tbe__dur(x, v[0]),
                    tbe__dur(y, v[1]), z, w);
  }
  if (d->nsteps[0] && d->nsteps[1])
    tbe__buf_printf(b, "\nSteps: %zu (base), %zu (new); quartiles %s–%s (base), %s–%s (new).\n",
                    d->nsteps[0], d->nsteps[1], tbe__dur(q[0], d->steps.dist[0].q1_ns),
                    tbe__dur(q[1], d->steps.dist[0].q3_ns), tbe__dur(q[2], d->steps.dist[1].q1_ns),
                    tbe__dur(q[3], d->steps.dist[1].q3_ns));
  tbe__noise_sentence(b, &d->steps, "Step time", o);
  if (any_tested(d))
    tbe__buf_puts(b, "\nPer name, the time per step is compared the same way (a 5% false "
                     "discovery rate over the names of each table).\n");
}

void tbe__rep_overall_table(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  char x[32], y[32], z[32], w[32], q[4][32];
  tbe__cell(b, "", 16, 0);
  tbe__cell(b, "base", 12, 1);
  tbe__cell(b, "new", 12, 1);
  tbe__cell(b, "delta", 12, 1);
  tbe__cell(b, "ratio", 8, 1);
  tbe__buf_putc(b, '\n');
  for (int r = 0; r < 4; r++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_overall_rows(d, r, &label, v, &have);
    if (!have) continue;
    tbe__cell(b, label, 16, 0);
    tbe__cell(b, tbe__dur(x, v[0]), 12, 1);
    tbe__cell(b, tbe__dur(y, v[1]), 12, 1);
    delta_str(z, v[1] - v[0]);
    tbe__cell(b, z, 12, 1);
    ratio_str(w, sizeof w, v[0], v[1]);
    tbe__cell(b, w, 8, 1);
    if (r == 3 && d->steps.verdict != TBE_NOISE_NONE)
      tbe__buf_printf(b, "  %s", tbe_noise_name((tbe_noise)d->steps.verdict));
    tbe__buf_putc(b, '\n');
  }
  fig_rows_text(b, d, 0);
  int titled = 0;
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    const char *label;
    int64_t v[2];
    int have;
    diff_class_row(d, k, &label, v, &have);
    if (!have) continue;
    if (!titled++) tbe__buf_puts(b, "by class:\n");
    tbe__cell(b, label, 16, 0);
    tbe__cell(b, tbe__dur(x, v[0]), 12, 1);
    tbe__cell(b, tbe__dur(y, v[1]), 12, 1);
    delta_str(z, v[1] - v[0]);
    tbe__cell(b, z, 12, 1);
    ratio_str(w, sizeof w, v[0], v[1]);
    tbe__cell(b, w, 8, 1);
    tbe__buf_putc(b, '\n');
  }
  if (d->nsteps[0] && d->nsteps[1])
    tbe__buf_printf(b, "steps: %zu (base), %zu (new); quartiles %s..%s (base), %s..%s (new)\n",
                    d->nsteps[0], d->nsteps[1], tbe__dur(q[0], d->steps.dist[0].q1_ns),
                    tbe__dur(q[1], d->steps.dist[0].q3_ns), tbe__dur(q[2], d->steps.dist[1].q1_ns),
                    tbe__dur(q[3], d->steps.dist[1].q3_ns));
  else if (d->nsteps[0] || d->nsteps[1])
    tbe__buf_printf(b, "steps: %zu (base), %zu (new)\n", d->nsteps[0], d->nsteps[1]);
  tbe__noise_sentence(b, &d->steps, "Step time", o);
  if (per_step_cols(d))
    tbe__wrap(b, any_tested(d) ? "In the tables below, step b/n is a name's median time per "
                                 "step; ~ marks a change of it within the steps' own noise, ! "
                                 "one beyond (the same test, at a 5% false discovery rate over "
                                 "the names of each table)."
                               : "In the tables below, step b/n is a name's median time per step.",
              o->width);
  if (d->op_cuda)
    tbe__wrap(b, "The operator tables compare CUDA totals (each operator's GPU work and its "
                 "children's); CSV and JSON also hold their CPU totals.",
              o->width);
}

/* The parts of a diff that a run diff shows too, per format: its own
 * small table (report_api.c's format table is above this file). */
typedef struct diff_parts {
  void (*overall)(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);
  void (*names)(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);
} diff_parts;

#define PARTS(fmt) \
  { tbe__rep_overall_##fmt, tbe__rep_names_##fmt }
static const diff_parts PARTS_OF[] = {
    [TBE_REPORT_TABLE] = PARTS(table),
    [TBE_REPORT_CSV] = PARTS(csv),
    [TBE_REPORT_JSON] = PARTS(json),
    [TBE_REPORT_MARKDOWN] = PARTS(md),
};
#undef PARTS

static const diff_parts *diff_part(int f) {
  return (unsigned)f < sizeof PARTS_OF / sizeof PARTS_OF[0] ? &PARTS_OF[f] : &PARTS_OF[0];
}

void tbe__diff_overall(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  diff_part(o->format)->overall(b, d, o);
}

/* The tables a diff shows: kernels, the operators (by shape when asked
 * and both sides have the table), ranges. */
static size_t diff_groups(const tbe_diff *d, const tbe_report_options *o, tbe_group_kind out[3]) {
  tbe__report_groups(d->side[0], o, out);
  if (o->group_by == TBE_GROUP_BY_SHAPE && d->side[0]->ngroups[TBE_GROUP_CPU_OP_SHAPE] &&
      d->side[1]->ngroups[TBE_GROUP_CPU_OP_SHAPE])
    out[1] = TBE_GROUP_CPU_OP_SHAPE;
  else
    out[1] = TBE_GROUP_CPU_OP;
  return 3;
}

/* The operator table by name when shapes were asked for: a side has none. */
static const char *shape_note(const tbe_report_options *o, tbe_group_kind g) {
  return g == TBE_GROUP_CPU_OP && o->group_by == TBE_GROUP_BY_SHAPE
             ? " (no input shapes recorded on both sides)"
             : "";
}

/* Whether table g of `d` compares CUDA totals (the operator tables of a
 * diff with GPU work attributed to operators). */
static int cuda_table(const tbe_diff *d, tbe_group_kind g) {
  return d->op_cuda && (g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE);
}

/* The figure a row of table g is about: CUDA total or total. */
static void row_figures(const tbe_diff *d, tbe_group_kind g, const tbe_diff_entry *e,
                        int64_t v[2], int64_t *delta, const tbe_step_compare **c) {
  int cu = cuda_table(d, g);
  v[0] = cu ? e->cuda_ns[0] : e->total_ns[0];
  v[1] = cu ? e->cuda_ns[1] : e->total_ns[1];
  *delta = cu ? e->cuda_delta_ns : e->delta_ns;
  *c = cu ? &e->cuda_steps : &e->steps;
}

/* The CSV and JSON status of an entry. */
static const char *entry_status(const tbe_diff_entry *e) {
  if (e->replaced_by) return "replaced";
  return e->present == 3 ? "matched" : e->present == 2 ? "added" : "removed";
}

/* "N matched, R replaced, A added..." counts: the matched exclude the
 * replaced. */
static size_t matched_of(const tbe_diff *d, tbe_group_kind g) {
  return d->nentries[g] - d->added[g] - d->removed[g] - d->replaced[g];
}

/* ", R replaced" when the table has any ("" otherwise, so a comparison
 * without replaced kernels reads as it always did). */
static const char *replaced_words(const tbe_diff *d, tbe_group_kind g, char *buf, size_t size) {
  if (!d->replaced[g]) return "";
  snprintf(buf, size, ", %zu replaced by another name", d->replaced[g]);
  return buf;
}

/* One character for the terminal tables (legend printed above them). */
static const char *entry_mark1c(const tbe_diff_entry *e, const tbe_step_compare *c) {
  if (e->present == 1) return "-";
  if (e->present == 2) return "+";
  return tbe__noise_mark(c->verdict);
}

/* The Markdown word; "too few steps" is said once, in the step-time
 * sentence, not on every row. */
static const char *entry_markc(const tbe_diff_entry *e, const tbe_step_compare *c) {
  if (e->present == 1) return "removed";
  if (e->present == 2) return "added";
  if (c->verdict == TBE_NOISE_TOO_FEW) return "";
  return tbe_noise_name((tbe_noise)c->verdict);
}

void tbe__rep_names_table(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  int ps = per_step_cols(d);
  /* Per-name tables: name, calls b/n, total b, total n, avg (or median
   * per step) b, n, delta, ratio, mark; the operator tables of a diff
   * with GPU work attributed compare CUDA totals in the same columns. */
  static const int cw[8] = {9, 9, 9, 9, 9, 10, 6, 1};
  int fixed = 0;
  for (int c = 0; c < 8; c++) fixed += cw[c] + 1;
  tbe_group_kind gs[3];
  size_t ngs = diff_groups(d, o, gs);
  for (size_t gi = 0; gi < ngs; gi++) {
    tbe_group_kind g = gs[gi];
    size_t n = d->nentries[g];
    if (!n) continue;
    int cu = cuda_table(d, g);
    size_t top = o->top && o->top < n ? o->top : n;
    int nw = tbe__name_width(o->width); /* as every report's (report.h) */
    char name[SHORT_MAX], v[8][40];
    if (o->wide)
      for (size_t i = 0; i < top; i++) {
        tbe__name_cell(d->entries[g][i].name, nw, 1, name, sizeof name);
        int l = (int)tbe__text_width(name, strlen(name));
        if (l > nw) nw = l;
      }
    char rw[64];
    tbe__buf_printf(b,
                    "\n%s%s%s: %zu matched%s, %zu added (+), %zu removed (-); %zu shown, by "
                    "|delta|\n",
                    tbe__group_title(g), cu ? " (CUDA total)" : "", shape_note(o, g),
                    matched_of(d, g), replaced_words(d, g, rw, sizeof rw), d->added[g],
                    d->removed[g], top);
    tbe__cell(b, "name", nw, 0);
    const char *hd[8] = {"calls b/n", cu ? "CUDA b" : "total b", cu ? "CUDA n" : "total n",
                         ps ? "step b" : "avg b", ps ? "step n" : "avg n", "delta", "ratio", ""};
    for (int c = 0; c < 8; c++) {
      tbe__buf_putc(b, ' ');
      tbe__cell(b, hd[c], cw[c], c < 7);
    }
    while (b->len && b->data[b->len - 1] == ' ') b->len--;
    tbe__buf_putc(b, '\n');
    tbe__rule(b, nw + fixed);
    const char **names = tbe__alloc(b->a, top * sizeof *names);
    char *cells = tbe__alloc(b->a, top * (size_t)SHORT_MAX);
    if (!names || !cells) {
      tbe__free(b->a, names);
      tbe__free(b->a, cells);
      b->err = TBE_ENOMEM;
      return;
    }
    for (size_t i = 0; i < top; i++) names[i] = d->entries[g][i].name;
    if (tbe__name_cells(names, top, nw, o->wide, cells, SHORT_MAX, b->a)) b->err = TBE_ENOMEM;
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      int64_t fig[2], delta;
      const tbe_step_compare *sc;
      row_figures(d, g, e, fig, &delta, &sc);
      snprintf(name, sizeof name, "%s", cells + i * SHORT_MAX);
      tbe__cell(b, name, nw, 0);
      snprintf(v[0], 40, "%llu/%llu", (unsigned long long)e->calls[0],
               (unsigned long long)e->calls[1]);
      tbe__fmt_dur(v[1], 40, fig[0]);
      tbe__fmt_dur(v[2], 40, fig[1]);
      for (int s = 0; s < 2; s++) {
        if (!ps)
          tbe__fmt_dur(v[3 + s], 40, e->calls[s] ? fig[s] / (int64_t)e->calls[s] : 0);
        else if (sc->dist[s].n)
          tbe__fmt_dur(v[3 + s], 40, sc->dist[s].median_ns);
        else
          snprintf(v[3 + s], 40, "-");
      }
      delta_str(v[5], delta);
      ratio_str(v[6], 40, fig[0], fig[1]);
      snprintf(v[7], 40, "%s", entry_mark1c(e, sc));
      for (int c = 0; c < 8; c++) {
        tbe__buf_putc(b, ' ');
        if (c == 7) tbe__buf_puts(b, v[c]);
        else tbe__cell(b, v[c], cw[c], 1);
      }
      /* No trailing spaces. */
      while (b->len && b->data[b->len - 1] == ' ') b->len--;
      tbe__buf_putc(b, '\n');
      if (e->shapes) {
        char sh[SHORT_MAX];
        tbe__text_fit(sh, sizeof sh, e->shapes[0] ? e->shapes : "(no shapes)",
                      o->wide ? 0 : (size_t)(nw + fixed - 4));
        tbe__buf_printf(b, "    %s\n", sh);
      }
      if (e->replaced_by) {
        /* the new name under the base name: the row's n columns are its */
        tbe__buf_puts(b, "    replaced by ");
        tbe__name_cell(e->replaced_by, nw + fixed - 16, o->wide, name, sizeof name);
        tbe__buf_puts(b, name);
        tbe__buf_putc(b, '\n');
      }
    }
    tbe__free(b->a, names);
    tbe__free(b->a, cells);
  }
}

void tbe__rep_names_md(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe_group_kind gs[3];
  size_t ngs = diff_groups(d, o, gs);
  for (size_t gi = 0; gi < ngs; gi++) {
    tbe_group_kind g = gs[gi];
    size_t n = d->nentries[g];
    if (!n) continue;
    int cu = cuda_table(d, g), sh = g == TBE_GROUP_CPU_OP_SHAPE;
    size_t top = o->top && o->top < n ? o->top : n;
    char rw[64];
    tbe__buf_printf(b, "\n## %s%s: %zu matched%s, %zu added, %zu removed\n\n", tbe__group_title(g),
                    shape_note(o, g), matched_of(d, g), replaced_words(d, g, rw, sizeof rw),
                    d->added[g], d->removed[g]);
    if (cu)
      tbe__buf_printf(b,
                      "| name |%s calls base | calls new | CPU total base | CPU total new | CUDA "
                      "total base | CUDA total new | CUDA step median base | CUDA step median new "
                      "| CUDA delta | CUDA ratio | |\n"
                      "|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
                      sh ? " input shapes |" : "", sh ? "---|" : "");
    else
      tbe__buf_printf(b, "| name |%s calls base | calls new | total base | total new | avg base | "
                         "avg new | step median base | step median new | delta | ratio | |\n"
                         "|---|%s---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
                      sh ? " input shapes |" : "", sh ? "---|" : "");
    char name[SHORT_MAX], v[8][40];
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      int64_t fig[2], delta;
      const tbe_step_compare *sc;
      row_figures(d, g, e, fig, &delta, &sc);
      if (o->wide) tbe__full_name(e->name, name, sizeof name);
      else tbe_name_shorten(e->name, 80, name, sizeof name);
      tbe__fmt_dur(v[0], 40, e->total_ns[0]);
      tbe__fmt_dur(v[1], 40, e->total_ns[1]);
      if (cu) {
        tbe__fmt_dur(v[2], 40, fig[0]);
        tbe__fmt_dur(v[3], 40, fig[1]);
      } else {
        tbe__fmt_dur(v[2], 40, e->calls[0] ? e->total_ns[0] / (int64_t)e->calls[0] : 0);
        tbe__fmt_dur(v[3], 40, e->calls[1] ? e->total_ns[1] / (int64_t)e->calls[1] : 0);
      }
      for (int s = 0; s < 2; s++) {
        if (sc->dist[s].n) tbe__fmt_dur(v[6 + s], 40, sc->dist[s].median_ns);
        else snprintf(v[6 + s], 40, "-");
      }
      delta_str(v[4], delta);
      ratio_str(v[5], 40, fig[0], fig[1]);
      tbe__buf_puts(b, "| ");
      tbe__md_escape(b, name);
      if (e->replaced_by) {
        if (o->wide)
          tbe__full_name(e->replaced_by, name, sizeof name);
        else
          tbe_name_shorten(e->replaced_by, 80, name, sizeof name);
        tbe__buf_puts(b, ", replaced by ");
        tbe__md_escape(b, name);
      }
      if (sh) {
        tbe__buf_puts(b, " | ");
        tbe__md_escape(b, e->shapes ? e->shapes : "");
      }
      tbe__buf_printf(b, " | %llu | %llu | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                      (unsigned long long)e->calls[0], (unsigned long long)e->calls[1], v[0], v[1],
                      v[2], v[3], v[6], v[7], v[4], v[5], entry_markc(e, sc));
    }
  }
}

void tbe__rep_names_csv(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe__buf_puts(b,
                "\nsection,name,status,calls_base,calls_new,total_base_ns,total_new_ns,"
                "avg_base_ns,avg_new_ns,delta_ns,ratio,step_median_base_ns,"
                "step_q1_base_ns,step_q3_base_ns,step_median_new_ns,step_q1_new_ns,"
                "step_q3_new_ns,noise,p_value,shapes,cuda_total_base_ns,cuda_total_new_ns,"
                "cuda_delta_ns,cuda_step_median_base_ns,cuda_step_median_new_ns,cuda_noise,"
                "cuda_p_value,replaced_by\n");
  tbe_group_kind gs[3];
  size_t ngs = diff_groups(d, o, gs);
  for (size_t gi = 0; gi < ngs; gi++) {
    tbe_group_kind g = gs[gi];
    int op = g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE;
    size_t n = d->nentries[g], top = o->top && o->top < n ? o->top : n;
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      const tbe_step_dist *s0 = &e->steps.dist[0], *s1 = &e->steps.dist[1];
      tbe__buf_printf(b, "%s,", tbe_group_name(g));
      tbe__csv_str(b, e->name);
      tbe__buf_printf(b, ",%s,%llu,%llu,%lld,%lld,%lld,%lld,%lld,%.6f,", entry_status(e),
                      (unsigned long long)e->calls[0], (unsigned long long)e->calls[1],
                      (long long)e->total_ns[0], (long long)e->total_ns[1],
                      (long long)(e->calls[0] ? e->total_ns[0] / (int64_t)e->calls[0] : 0),
                      (long long)(e->calls[1] ? e->total_ns[1] / (int64_t)e->calls[1] : 0),
                      (long long)e->delta_ns, e->ratio);
      const tbe_step_dist *sd[2] = {s0, s1};
      for (int s = 0; s < 2; s++) {
        if (sd[s]->n)
          tbe__buf_printf(b, "%lld,%lld,%lld,", (long long)sd[s]->median_ns,
                          (long long)sd[s]->q1_ns, (long long)sd[s]->q3_ns);
        else
          tbe__buf_puts(b, ",,,");
      }
      tbe__buf_printf(b, "%s,", tbe__noise_key(e->steps.verdict));
      if (e->steps.p_value >= 0) tbe__buf_printf(b, "%.6f", e->steps.p_value);
      tbe__buf_putc(b, ',');
      if (e->shapes) tbe__csv_str(b, e->shapes);
      if (!op) {
        tbe__buf_puts(b, ",,,,,,,,");
        if (e->replaced_by) tbe__csv_str(b, e->replaced_by);
        tbe__buf_putc(b, '\n');
        continue;
      }
      const tbe_step_compare *c = &e->cuda_steps;
      tbe__buf_printf(b, ",%lld,%lld,%lld,", (long long)e->cuda_ns[0], (long long)e->cuda_ns[1],
                      (long long)e->cuda_delta_ns);
      for (int s = 0; s < 2; s++) {
        if (c->dist[s].n) tbe__buf_printf(b, "%lld", (long long)c->dist[s].median_ns);
        tbe__buf_putc(b, ',');
      }
      tbe__buf_printf(b, "%s,", tbe__noise_key(c->verdict));
      if (c->p_value >= 0) tbe__buf_printf(b, "%.6f", c->p_value);
      tbe__buf_puts(b, ",\n"); /* replaced_by: kernels only */
    }
  }
}

void tbe__json_step_compare(tbe__buf *b, const tbe_step_compare *c) {
  tbe__buf_puts(b, "{\"base\":");
  tbe__json_dist(b, &c->dist[0]);
  tbe__buf_puts(b, ",\"new\":");
  tbe__json_dist(b, &c->dist[1]);
  tbe__buf_printf(b, ",\"noise\":\"%s\"", tbe__noise_key(c->verdict));
  if (c->p_value >= 0) tbe__buf_printf(b, ",\"p_value\":%.6g", c->p_value);
  tbe__buf_putc(b, '}');
}

void tbe__rep_names_json(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe_group_kind gs[3];
  size_t ngs = diff_groups(d, o, gs);
  tbe__buf_printf(b, ",\"cpu_ops_by\":\"%s\",\"op_cuda\":%s",
                  gs[1] == TBE_GROUP_CPU_OP_SHAPE ? "shape" : "name",
                  d->op_cuda ? "true" : "false");
  for (size_t gi = 0; gi < ngs; gi++) {
    tbe_group_kind g = gs[gi];
    int op = g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE;
    size_t n = d->nentries[g], top = o->top && o->top < n ? o->top : n;
    /* the operator table is "cpu_ops" whichever way it is grouped */
    tbe__buf_printf(b, ",\"%s\":{\"added\":%zu,\"removed\":%zu,\"replaced\":%zu,\"entries\":[",
                    tbe_group_name(op ? TBE_GROUP_CPU_OP : g), d->added[g], d->removed[g],
                    d->replaced[g]);
    for (size_t i = 0; i < top; i++) {
      const tbe_diff_entry *e = &d->entries[g][i];
      tbe__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
      tbe__json_str(b, e->name);
      if (e->replaced_by) {
        tbe__buf_puts(b, ",\"replaced_by\":");
        tbe__json_str(b, e->replaced_by);
      }
      tbe__buf_printf(b,
                      ",\"status\":\"%s\",\"calls\":[%llu,%llu],\"total_ns\":[%lld,%lld],"
                      "\"delta_ns\":%lld,\"ratio\":%.6f",
                      entry_status(e), (unsigned long long)e->calls[0],
                      (unsigned long long)e->calls[1], (long long)e->total_ns[0],
                      (long long)e->total_ns[1], (long long)e->delta_ns, e->ratio);
      if (e->steps.dist[0].n || e->steps.dist[1].n) {
        tbe__buf_puts(b, ",\"steps\":");
        tbe__json_step_compare(b, &e->steps);
      }
      if (op) {
        if (e->shapes) {
          tbe__buf_puts(b, ",\"shapes\":");
          tbe__json_str(b, e->shapes);
        }
        tbe__buf_printf(b, ",\"cuda_total_ns\":[%lld,%lld],\"cuda_delta_ns\":%lld",
                        (long long)e->cuda_ns[0], (long long)e->cuda_ns[1],
                        (long long)e->cuda_delta_ns);
        if (e->cuda_steps.dist[0].n || e->cuda_steps.dist[1].n) {
          tbe__buf_puts(b, ",\"cuda_steps\":");
          tbe__json_step_compare(b, &e->cuda_steps);
        }
      }
      tbe__buf_putc(b, '}');
    }
    tbe__buf_puts(b, "]}");
  }
}

void tbe__diff_names(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  diff_part(o->format)->names(b, d, o);
}

/* ---- the lead: what a reader needs before the tables ---- */

/* The kernels of base (side 0) or new (1), and those on both sides
 * (matched, or a replaced pair). */
static void kernel_sides(const tbe_diff *d, size_t *nb, size_t *nn, size_t *both) {
  *nb = *nn = *both = 0;
  const tbe_diff_entry *e = d->entries[TBE_GROUP_KERNEL];
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++) {
    if (e[i].present & 1) (*nb)++;
    if (e[i].present & 2) (*nn)++;
    if (e[i].present == 3) (*both)++;
  }
}

/* The i-th entry of the kernel table by |delta| (ties: the table's order)
 * among those not yet `used`; NULL when none is left. */
static const tbe_diff_entry *kth_largest(const tbe_diff *d, unsigned char *used) {
  const tbe_diff_entry *e = d->entries[TBE_GROUP_KERNEL], *best = NULL;
  size_t bi = 0;
  for (size_t i = 0; i < d->nentries[TBE_GROUP_KERNEL]; i++) {
    if (used[i] || !e[i].delta_ns) continue;
    int64_t a = e[i].delta_ns < 0 ? -e[i].delta_ns : e[i].delta_ns;
    int64_t c = best ? (best->delta_ns < 0 ? -best->delta_ns : best->delta_ns) : -1;
    if (a > c) best = &e[i], bi = i;
  }
  if (best) used[bi] = 1;
  return best;
}

/* One sentence naming the largest contributions to the change of kernel
 * time (the three kernels of largest |delta|, a replaced one with what
 * replaced it), after a warning when few kernels of either side match (a
 * comparison of two different programs: under a fifth of the side with
 * fewer kernels, both sides with 5 or more).  Wrapped at `width`, or
 * Markdown. */
/* 1 when under a fifth of the kernels of the side with fewer match (both
 * sides with 5 or more): a comparison of two different programs. */
static int few_match(const tbe_diff *d, size_t *nb, size_t *nn, size_t *both) {
  kernel_sides(d, nb, nn, both);
  size_t fewer = *nb < *nn ? *nb : *nn;
  return *nb >= 5 && *nn >= 5 && *both * 5 < fewer;
}

static void diff_lead(tbe__buf *out, const tbe_diff *d, int md, int width) {
  tbe__buf t, *b = &t;
  tbe__buf_init(&t, out->a);
  size_t nb, nn, both;
  if (few_match(d, &nb, &nn, &both)) {
    tbe__buf_printf(b,
                    "%sWarning: only %zu of the %zu kernels of the base and of the %zu of the new "
                    "side match by name or replace one another: these look like traces of "
                    "different programs, and the tables below compare names found on one side "
                    "only.",
                    md ? "> " : "", both, nb, nn);
    tbe__buf_putc(b, '\0');
    if (md) tbe__buf_printf(out, "%s\n\n", (const char *)t.data);
    else tbe__wrap(out, (const char *)t.data, width);
    t.len = 0;
  }
  size_t n = d->nentries[TBE_GROUP_KERNEL];
  if (!n || d->kernel_ns[0] == d->kernel_ns[1]) {
    tbe__buf_deinit(&t);
    return;
  }
  unsigned char *used = calloc(n, 1);
  if (!used) {
    out->err = TBE_ENOMEM;
    tbe__buf_deinit(&t);
    return;
  }
  char t0[32], t1[32], dl[32], nm[96], rb[96];
  tbe__fmt_dur(t0, sizeof t0, d->kernel_ns[0]);
  tbe__fmt_dur(t1, sizeof t1, d->kernel_ns[1]);
  tbe__buf_printf(b, "Kernel time %s -> %s", t0, t1);
  if (d->kernel_ns[0] > 0)
    tbe__buf_printf(b, " (%+.1f%%)",
                    100.0 * (double)(d->kernel_ns[1] - d->kernel_ns[0]) / (double)d->kernel_ns[0]);
  int k = 0;
  for (const tbe_diff_entry *e; k < 3 && (e = kth_largest(d, used)) != NULL; k++) {
    tbe__buf_puts(b, k == 0 ? "; the largest changes: " : ", ");
    tbe_name_shorten(e->name, 52, nm, sizeof nm);
    md ? tbe__md_escape(b, nm) : tbe__term(b, nm);
    tbe__delta_str(dl, e->delta_ns);
    tbe__buf_printf(b, " %s", dl);
    if (e->replaced_by) {
      tbe_name_shorten(e->replaced_by, 52, rb, sizeof rb);
      tbe__buf_puts(b, " (replaced by ");
      md ? tbe__md_escape(b, rb) : tbe__term(b, rb);
      tbe__buf_putc(b, ')');
    } else if (e->present != 3) {
      tbe__buf_puts(b, e->present == 1 ? " (removed)" : " (added)");
    }
  }
  tbe__buf_putc(b, '.');
  tbe__buf_putc(b, '\0');
  if (t.err) out->err = t.err;
  else if (md) tbe__buf_printf(out, "%s\n\n", (const char *)t.data);
  else {
    tbe__wrap(out, (const char *)t.data, width);
    tbe__buf_putc(out, '\n');
  }
  free(used);
  tbe__buf_deinit(&t);
}

void tbe__rep_diff_table(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  const char *lb = o->label[0] ? o->label[0] : "base";
  const char *ln = o->label[1] ? o->label[1] : "new";
  tbe__buf_puts(b, "Comparing ");
  tbe__term(b, lb);
  tbe__buf_puts(b, " (base) with ");
  tbe__term(b, ln);
  tbe__buf_puts(b, " (new)\n\n");
  diff_lead(b, d, 0, o->width);
  tbe__diff_overall(b, d, o);
  tbe__diff_names(b, d, o);
  tbe__metrics_diff(b, d, o);
}

void tbe__rep_diff_md(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe__buf_puts(b, "# Diff: ");
  tbe__md_escape(b, o->label[0] ? o->label[0] : "base");
  tbe__buf_puts(b, " → ");
  tbe__md_escape(b, o->label[1] ? o->label[1] : "new");
  tbe__buf_puts(b, "\n\n");
  diff_lead(b, d, 1, o->width);
  tbe__diff_overall(b, d, o);
  tbe__diff_names(b, d, o);
  tbe__metrics_diff(b, d, o);
}

void tbe__rep_diff_csv(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe__diff_overall(b, d, o);
  tbe__diff_names(b, d, o);
  tbe__metrics_diff(b, d, o);
}

void tbe__rep_diff_json(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o) {
  tbe__buf_puts(b, "{\"base\":");
  tbe__json_str(b, o->label[0] ? o->label[0] : "base");
  tbe__buf_puts(b, ",\"new\":");
  tbe__json_str(b, o->label[1] ? o->label[1] : "new");
  tbe__buf_putc(b, ',');
  size_t nb, nn, both;
  if (few_match(d, &nb, &nn, &both)) /* as the table's warning says it */
    tbe__buf_printf(b, "\"few_kernels_match\":{\"base\":%zu,\"new\":%zu,\"on_both_sides\":%zu},",
                    nb, nn, both);
  tbe__diff_overall(b, d, o);
  tbe__diff_names(b, d, o);
  tbe__metrics_diff(b, d, o);
  tbe__buf_puts(b, "}\n");
}
