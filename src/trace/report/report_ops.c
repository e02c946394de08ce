/* report_ops.c: the operator table of the reports (tbe_name_stats'
 * operator figures: self CPU, CPU total, self CUDA, CUDA total, kernels,
 * the input shapes, what each operator launched), in the parts the
 * summary, the run report and the TensorBoard text share.
 *
 * Position: a renderer of src/trace/report beside report_summary.c, which
 * calls these for the operator tables of an analysis whose GPU work is
 * attributed to operators (tbe_analysis.op_gpu_count); an analysis without
 * it renders its operator table as before, byte for byte.
 *
 * Which operator table a report shows is one choice (tbe__report_groups):
 * by name, or by name and input shapes with TBE_GROUP_BY_SHAPE when the
 * analysis has that table.  The terminal table fits the width as the other
 * tables do (the name column takes what the six figures leave); a by-shape
 * row puts its shapes on the line below it, cut to the width unless
 * --wide.  "Kernels per operator" follows the table: for its first
 * OPS_LISTED operators that launched anything, their first KERNELS_LISTED
 * activities by GPU time and the rest in one line; the JSON holds every
 * operator's list. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/text.h"
#include "tbexport/error.h"
#include "trace/report/report.h"

#define OPS_LISTED 5     /* operators in "kernels per operator" (table, Markdown) */
#define KERNELS_LISTED 3 /* activities listed under each */

/* ---- which table, and its order in words ---- */

static int is_op(tbe_group_kind g) { return g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE; }

int tbe__by_shape(const tbe_analysis *an, const tbe_report_options *o) {
  return o->group_by == TBE_GROUP_BY_SHAPE && an->ngroups[TBE_GROUP_CPU_OP_SHAPE] > 0;
}

size_t tbe__report_groups(const tbe_analysis *an, const tbe_report_options *o,
                          tbe_group_kind out[3]) {
  out[0] = TBE_GROUP_KERNEL;
  out[1] = tbe__by_shape(an, o) ? TBE_GROUP_CPU_OP_SHAPE : TBE_GROUP_CPU_OP;
  out[2] = TBE_GROUP_RANGE;
  return 3;
}

const char *tbe__shape_note(const tbe_analysis *an, tbe_group_kind g, const tbe_report_options *o) {
  return g == TBE_GROUP_CPU_OP && o->group_by == TBE_GROUP_BY_SHAPE && !tbe__by_shape(an, o)
             ? "; no input shapes recorded"
             : "";
}

const char *tbe__sort_word(const tbe_analysis *an, tbe_group_kind g, int sort) {
  int cuda = is_op(g) && an->op_gpu_count;
  switch (tbe_analysis_sort_key(an, g, (tbe_sort_key)sort)) {
    case TBE_SORT_AVG: return "average";
    case TBE_SORT_CALLS: return "calls";
    case TBE_SORT_MAX: return "max";
    case TBE_SORT_CUDA_TOTAL: return "CUDA total";
    case TBE_SORT_SELF_CUDA: return "self CUDA";
    case TBE_SORT_SELF: return is_op(g) ? "self CPU" : "self";
    default: return cuda ? "CPU total" : "total";
  }
}

/* The shapes of a by-shape entry as the table shows them. */
static const char *shapes_text(const tbe_name_stats *e) {
  return e->shapes && e->shapes[0] ? e->shapes : "(no shapes)";
}

/* ---- the terminal table ---- */

/* One line: an operator with what it launched itself, fitted to `width`
 * (the name, and its shapes, take what the figures leave). */
static void launched_head(tbe__buf *b, const tbe_name_stats *e, int shapes, int width) {
  char cell[TBE__SHORT_MAX], x[32], tail[96];
  snprintf(tail, sizeof tail, ": %llu launch%s, self CUDA %s", (unsigned long long)e->kernels,
           e->kernels == 1 ? "" : "es", tbe__dur(x, e->self_cuda_ns));
  int avail = width - (int)strlen(tail), nw = shapes ? avail / 2 : avail;
  if (nw < TBE__NAME_MIN) nw = TBE__NAME_MIN;
  tbe__name_cell(e->label, nw, 0, cell, sizeof cell);
  tbe__buf_puts(b, cell);
  if (shapes) {
    int sw = avail - (int)tbe__text_width(cell, strlen(cell)) - 1;
    char sh[TBE__SHORT_MAX];
    tbe__text_fit(sh, sizeof sh, shapes_text(e), (size_t)(sw > 12 ? sw : 12));
    tbe__buf_printf(b, " %s", sh);
  }
  tbe__buf_printf(b, "%s\n", tail);
}

/* The first rows of the table that launched anything, up to OPS_LISTED:
 * their first activities by time, the rest summed. */
static void launched_table(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g, size_t top,
                           const tbe_report_options *o) {
  size_t listed = 0;
  for (size_t i = 0; i < top && listed < OPS_LISTED; i++) listed += an->groups[g][i].kernels > 0;
  if (!listed) return;
  char title[128];
  snprintf(title, sizeof title,
           "Kernels per operator: its own launches by GPU time, for the first %zu operator%s above "
           "that launched any",
           listed, listed == 1 ? "" : "s");
  tbe__buf_putc(b, '\n');
  tbe__wrap(b, title, o->width);
  int nw = o->width - 2 - 2 - 7 - 2 - 10;
  if (nw < TBE__NAME_MIN) nw = TBE__NAME_MIN;
  char cell[TBE__SHORT_MAX], v[2][32];
  for (size_t i = 0, done = 0; i < top && done < listed; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    if (!e->kernels) continue;
    done++;
    launched_head(b, e, g == TBE_GROUP_CPU_OP_SHAPE, o->width);
    uint64_t rest = e->kernels;
    int64_t rest_ns = e->self_cuda_ns;
    for (size_t k = 0; k < e->nlaunched && k < KERNELS_LISTED; k++) {
      const tbe_op_kernel *l = &e->launched[k];
      tbe__name_cell(l->name, nw, o->wide, cell, sizeof cell);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, cell, nw, 0);
      snprintf(v[0], 32, "%llu", (unsigned long long)l->calls);
      tbe__fmt_dur(v[1], 32, l->total_ns);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v[0], 7, 1);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v[1], 10, 1);
      tbe__buf_putc(b, '\n');
      rest -= l->calls < rest ? l->calls : rest;
      rest_ns = rest_ns > l->total_ns ? rest_ns - l->total_ns : 0;
    }
    if (rest)
      tbe__buf_printf(b, "  and %llu more launch%s, %s\n", (unsigned long long)rest,
                      rest == 1 ? "" : "es", tbe__dur(v[1], rest_ns));
  }
}

void tbe__ops_table(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                    const tbe_report_options *o) {
  size_t n = an->ngroups[g];
  if (n == 0) return;
  size_t top = o->top && o->top < n ? o->top : n;
  int shapes = g == TBE_GROUP_CPU_OP_SHAPE;
  /* Columns: name, calls 7, self CPU 10, CPU total 10, self CUDA 10, CUDA
   * total 10, kernels 7. */
  static const int cw[6] = {7, 10, 10, 10, 10, 7};
  int fixed = 7 + 10 + 10 + 10 + 10 + 7 + 2 * 6;
  int nw = tbe__name_width(o->width); /* as every report's (report.h) */
  char name[TBE__SHORT_MAX];
  if (o->wide) {
    for (size_t i = 0; i < top; i++) {
      tbe__name_cell(an->groups[g][i].label, nw, 1, name, sizeof name);
      size_t l = tbe__text_width(name, strlen(name));
      if ((int)l > nw) nw = (int)l;
    }
  }
  static const char *const hd[6] = {"calls",     "self CPU",   "CPU total",
                                    "self CUDA", "CUDA total", "kernels"};
  char *cells = tbe__names_head(b, an, g, o, top, nw, hd, cw, fixed);
  if (!cells) return;
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    snprintf(name, sizeof name, "%s", cells + i * TBE__SHORT_MAX);
    tbe__cell(b, name, nw, 0);
    char v[6][32];
    snprintf(v[0], 32, "%llu", (unsigned long long)e->calls);
    tbe__fmt_dur(v[1], 32, e->self_ns);
    tbe__fmt_dur(v[2], 32, e->total_ns);
    tbe__fmt_dur(v[3], 32, e->self_cuda_ns);
    tbe__fmt_dur(v[4], 32, e->cuda_total_ns);
    snprintf(v[5], 32, "%llu", (unsigned long long)e->kernels);
    for (int c = 0; c < 6; c++) {
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v[c], cw[c], 1);
    }
    tbe__buf_putc(b, '\n');
    if (shapes) {
      char sh[TBE__SHORT_MAX];
      tbe__text_fit(sh, sizeof sh, shapes_text(e), o->wide ? 0 : (size_t)(nw + fixed - 4));
      tbe__buf_printf(b, "    %s\n", sh);
    }
  }
  tbe__free(b->a, cells);
  launched_table(b, an, g, top, o);
}

/* The line on what the operators launched (nothing without it). */
void tbe__ops_line(tbe__buf *b, const tbe_analysis *an, int width) {
  if (!an->op_gpu_count) return;
  const tbe_device_stats *d = &an->all;
  uint64_t all = d->kernel_count + d->memset_count;
  int64_t ns = d->kernel_ns + d->memset_ns;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) {
    all += d->memcpy_count[k];
    ns += d->memcpy_ns[k];
  }
  char x[32], line[256];
  snprintf(line, sizeof line,
           "operators: %zu names launched %llu of %llu GPU activities (%.1f%% of their time, %s)",
           an->ngroups[TBE_GROUP_CPU_OP], (unsigned long long)an->op_gpu_count,
           (unsigned long long)all, tbe__pct(an->op_gpu_ns, ns), tbe__dur(x, an->op_gpu_ns));
  tbe__wrap(b, line, width);
}

/* ---- Markdown ---- */

void tbe__ops_md(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g, size_t top, int wide) {
  size_t n = an->ngroups[g];
  if (top == 0 || top > n) top = n;
  int shapes = g == TBE_GROUP_CPU_OP_SHAPE;
  char name[TBE__SHORT_MAX], v[5][32];
  tbe__buf_printf(b,
                  "| name |%s calls | self CPU | CPU total | self CUDA | CUDA total | kernels |\n"
                  "|---|%s---:|---:|---:|---:|---:|---:|\n",
                  shapes ? " input shapes |" : "", shapes ? "---|" : "");
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    if (wide)
      tbe__full_name(e->label, name, sizeof name);
    else
      tbe_name_shorten(e->label, 80, name, sizeof name);
    tbe__fmt_dur(v[0], 32, e->self_ns);
    tbe__fmt_dur(v[1], 32, e->total_ns);
    tbe__fmt_dur(v[2], 32, e->self_cuda_ns);
    tbe__fmt_dur(v[3], 32, e->cuda_total_ns);
    tbe__buf_puts(b, "| ");
    tbe__md_escape(b, name);
    if (shapes) {
      tbe__buf_puts(b, " | ");
      tbe__md_escape(b, e->shapes ? e->shapes : "");
    }
    tbe__buf_printf(b, " | %llu | %s | %s | %s | %s | %llu |\n", (unsigned long long)e->calls, v[0],
                    v[1], v[2], v[3], (unsigned long long)e->kernels);
  }
  size_t listed = 0;
  for (size_t i = 0; i < top && listed < OPS_LISTED; i++) listed += an->groups[g][i].kernels > 0;
  if (!listed) return;
  tbe__buf_puts(b, "\n### Kernels per operator\n\n");
  for (size_t i = 0, done = 0; i < top && done < listed; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    if (!e->kernels) continue;
    done++;
    tbe_name_shorten(e->label, 80, name, sizeof name);
    tbe__buf_puts(b, "- **");
    tbe__md_escape(b, name);
    tbe__buf_puts(b, "**");
    if (shapes) {
      tbe__buf_putc(b, ' ');
      tbe__md_escape(b, shapes_text(e));
    }
    tbe__buf_printf(b, ": %llu launch%s, self CUDA %s\n", (unsigned long long)e->kernels,
                    e->kernels == 1 ? "" : "es", tbe__dur(v[0], e->self_cuda_ns));
    uint64_t rest = e->kernels;
    int64_t rest_ns = e->self_cuda_ns;
    for (size_t k = 0; k < e->nlaunched && k < KERNELS_LISTED; k++) {
      const tbe_op_kernel *l = &e->launched[k];
      if (wide)
        tbe__full_name(l->name, name, sizeof name);
      else
        tbe_name_shorten(l->name, 80, name, sizeof name);
      tbe__buf_puts(b, "  - ");
      tbe__md_escape(b, name[0] ? name : "(unnamed)");
      tbe__buf_printf(b, ": %llu launch%s, %s\n", (unsigned long long)l->calls,
                      l->calls == 1 ? "" : "es", tbe__dur(v[1], l->total_ns));
      rest -= l->calls < rest ? l->calls : rest;
      rest_ns = rest_ns > l->total_ns ? rest_ns - l->total_ns : 0;
    }
    if (rest)
      tbe__buf_printf(b, "  - and %llu more launch%s, %s\n", (unsigned long long)rest,
                      rest == 1 ? "" : "es", tbe__dur(v[1], rest_ns));
  }
}

/* ---- CSV and JSON ---- */

void tbe__ops_csv_fields(tbe__buf *b, const tbe_name_stats *e) {
  tbe__buf_printf(b, ",%lld,%lld,%llu,", (long long)e->self_cuda_ns, (long long)e->cuda_total_ns,
                  (unsigned long long)e->kernels);
  if (e->shapes) tbe__csv_str(b, e->shapes);
}

void tbe__ops_csv_launched(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g, size_t top) {
  if (!an->op_gpu_count) return;
  size_t n = an->ngroups[g];
  if (top == 0 || top > n) top = n;
  tbe__buf_puts(b, "\nsection,operator,shapes,kernel,calls,total_ns\n");
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    for (size_t k = 0; k <= e->nlaunched; k++) {
      if (k == e->nlaunched && !e->launched_other_calls) break;
      tbe__buf_puts(b, k < e->nlaunched ? "launched," : "launched_other,");
      tbe__csv_str(b, e->label);
      tbe__buf_putc(b, ',');
      if (e->shapes) tbe__csv_str(b, e->shapes);
      tbe__buf_putc(b, ',');
      if (k < e->nlaunched) tbe__csv_str(b, e->launched[k].name);
      tbe__buf_printf(
          b, ",%llu,%lld\n",
          (unsigned long long)(k < e->nlaunched ? e->launched[k].calls : e->launched_other_calls),
          (long long)(k < e->nlaunched ? e->launched[k].total_ns : e->launched_other_ns));
    }
  }
}

void tbe__ops_json_fields(tbe__buf *b, const tbe_analysis *an, const tbe_name_stats *e) {
  if (e->shapes) {
    tbe__buf_puts(b, ",\"shapes\":");
    tbe__json_str(b, e->shapes);
  }
  tbe__buf_printf(
      b, ",\"self_cuda_ns\":%lld,\"cuda_total_ns\":%lld,\"kernels\":%llu,\"launched\":[",
      (long long)e->self_cuda_ns, (long long)e->cuda_total_ns, (unsigned long long)e->kernels);
  for (size_t k = 0; k < e->nlaunched; k++) {
    tbe__buf_puts(b, k ? ",{\"name\":" : "{\"name\":");
    tbe__json_str(b, e->launched[k].name);
    tbe__buf_printf(b, ",\"calls\":%llu,\"total_ns\":%lld}",
                    (unsigned long long)e->launched[k].calls, (long long)e->launched[k].total_ns);
  }
  tbe__buf_printf(b, "],\"launched_other\":{\"calls\":%llu,\"total_ns\":%lld}",
                  (unsigned long long)e->launched_other_calls, (long long)e->launched_other_ns);
  if (e->cuda_step_ns) {
    tbe__buf_puts(b, ",\"cuda_step_ns\":[");
    for (size_t s = 0; s < an->nsteps; s++)
      tbe__buf_printf(b, "%s%lld", s ? "," : "", (long long)e->cuda_step_ns[s]);
    tbe__buf_putc(b, ']');
  }
}

/* (report.h; here beside tbe__shape_note, which it calls: report.c, the
 * bottom of the room, calls nothing above it) */
char *tbe__names_head(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                      const tbe_report_options *o, size_t top, int nw, const char *const *hd,
                      const int *cw, int fixed) {
  tbe__buf_printf(b, "\n%s (%zu of %zu, by %s%s)\n", tbe__group_title(g), top, an->ngroups[g],
                  tbe__sort_word(an, g, o->sort), tbe__shape_note(an, g, o));
  tbe__cell(b, "name", nw, 0);
  for (int c = 0; c < 6; c++) {
    tbe__buf_puts(b, "  ");
    tbe__cell(b, hd[c], cw[c], 1);
  }
  tbe__buf_putc(b, '\n');
  tbe__rule(b, nw + fixed);
  const char **labels = tbe__alloc(b->a, (top ? top : 1) * sizeof *labels);
  char *cells = tbe__alloc(b->a, (top ? top : 1) * (size_t)TBE__SHORT_MAX);
  if (!labels || !cells) {
    tbe__free(b->a, labels);
    tbe__free(b->a, cells);
    b->err = TBE_ENOMEM;
    return NULL;
  }
  for (size_t i = 0; i < top; i++) labels[i] = an->groups[g][i].label;
  if (tbe__name_cells(labels, top, nw, o->wide, cells, TBE__SHORT_MAX, b->a)) b->err = TBE_ENOMEM;
  tbe__free(b->a, labels);
  return cells;
}
