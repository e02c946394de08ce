/* report_run.c: rendering a run of several hosts (tbe_report_run) and the
 * comparison of two runs (tbe_report_run_diff) as a terminal table, CSV,
 * JSON or Markdown.
 *
 * A run of one host is rendered exactly as tbe_report_summary renders that
 * host, and a comparison of two one-host runs exactly as tbe_report_diff,
 * so that a single process reads as it always did.  Otherwise:
 *  - summary: a row per host (pid, rank, GPUs, wall, GPU busy %, kernel
 *    time, steps, median step time), the slowest and fastest host and the
 *    spread, the GPU overview with a column per host (up to
 *    HOST_COLS_MAX, then the total alone) and one for all hosts, the name
 *    tables merged over hosts, the steps common to all hosts, the step
 *    hint, and the hosts' advice and warnings, each line once with the hosts it
 *    concerns;
 *  - diff (report_run_diff.c): the totals compared as two traces are
 *    (report_diff.c's parts), a row per host pair with its own step-time
 *    verdict, then the merged name tables.
 * The JSON forms hold every figure of the other forms: a run's object is
 * {"label", "hosts_count", ..., "total": <summary object>, "hosts":
 * [<summary object + "index">...]}, each summary object the one
 * tbe_report_summary prints for one trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/intern.h"
#include "common/text.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"
#include "trace/report/report.h"

#define NAME_MIN 12
/* Hosts shown as columns of the GPU overview; beyond, the total alone. */
#define HOST_COLS_MAX 8
/* The compact rule of per-host (per-rank) tables, in the table and
 * Markdown forms (CSV and JSON always hold every host):
 *  - up to ROWS_ALL hosts: every one, in run order (by rank when ranks are
 *    known);
 *  - beyond: the ROWS_EDGE slowest and the ROWS_EDGE fastest by the run's
 *    figure and the outliers between them (at most ROWS_OUTLIERS), from
 *    slowest to fastest, a line counting the hosts left out in each gap,
 *    then the distribution of the figure and of the communication time
 *    over all hosts (min / p50 / p90 / max) and every outlier's rank or
 *    name (at most LIST_MAX, then how many more);
 *  - a diff beyond ROWS_ALL pairs: the ROWS_CHANGED pairs whose median step
 *    time changed most (tbe_run_diff.order), the distribution of that
 *    change, and how many pairs are left out.
 * So a report of 1,024 ranks stays about 30 lines whatever the run. */
#define ROWS_ALL TBE__RUN_ROWS_ALL
#define ROWS_EDGE 5
#define ROWS_OUTLIERS 10
#define ROWS_CHANGED TBE__RUN_ROWS_CHANGED /* report_run_diff.c */
#define LIST_MAX 16

static const char *figure_words(uint32_t f) {
  return f == TBE_RUN_BY_STEP_MEDIAN ? "median step time" : f == TBE_RUN_BY_WALL ? "wall time" : "";
}

static const char *figure_key(uint32_t f) {
  return f == TBE_RUN_BY_STEP_MEDIAN ? "step_median" : f == TBE_RUN_BY_WALL ? "wall" : "none";
}

static const char *role(const tbe_run_analysis *r, size_t i) {
  if ((long)i == r->slowest) return "slowest";
  if ((long)i == r->fastest) return "fastest";
  if (r->hosts[i].outlier) return "outlier";
  return "";
}

static void put_text(tbe__buf *b, const char *s, int md);

/* A per-rank report: every host has a distinct known rank and there are
 * several (one host renders as a single trace). */
static int per_rank(const tbe_run_analysis *r) { return r->by_rank && r->nhosts > 1; }

/* The rows of a table of hosts by the compact rule above: host indexes,
 * and -k for k hosts left out there.  Returns the count (0 after an
 * allocation failure, recorded in b). */
static size_t pick_rows(tbe__buf *b, const tbe_run_analysis *r, long **out) {
  size_t n = r->nhosts, k = 0;
  long *v = tbe__alloc(b->a, (n + 1) * sizeof *v);
  *out = v;
  if (!v) {
    b->err = TBE_ENOMEM;
    return 0;
  }
  if (n <= ROWS_ALL || !r->order) {
    for (size_t i = 0; i < n; i++) v[k++] = (long)i;
    return k;
  }
  size_t outl = 0;
  long gap = 0;
  for (size_t p = 0; p < n; p++) {
    long h = r->order[p];
    int edge = p < ROWS_EDGE || p >= n - ROWS_EDGE;
    int take = edge || (r->hosts[h].outlier && outl < ROWS_OUTLIERS);
    if (!take) {
      gap++;
      continue;
    }
    if (!edge) outl++;
    if (gap) v[k++] = -gap;
    gap = 0;
    v[k++] = h;
  }
  if (gap) v[k++] = -gap;
  return k;
}

/* "rank 17" (a space where tbe__wrap does not break, in the table) or
 * the host's label (terminal or Markdown form). */
static void put_who(tbe__buf *b, const tbe_run_analysis *r, long i, int md) {
  if (r->by_rank) tbe__buf_printf(b, md ? "rank %d" : "rank\x01%d", (int)r->hosts[i].an->rank);
  else
    put_text(b, tbe__host_label(&r->hosts[i]), md);
}

/* A host label as a table cell: its terminal form cut to `w` columns
 * ("..." at the end; w 0: whole). */
static void cut(char *buf, size_t size, const char *s, int w) {
  tbe__text_fit(buf, size, s, w > 0 ? (size_t)w : 0);
}

/* Appends a host label (or any text from an input) in the form of the
 * report: Markdown, else the terminal form. */
static void put_text(tbe__buf *b, const char *s, int md) {
  if (md) tbe__md_escape(b, s);
  else tbe__term(b, s);
}

/* "slowest a, fastest b by median step time: spread 1.000ms (5.0% of the
 * fastest)", wrapped at the width (table) or as a Markdown paragraph. */
static void extremes(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o) {
  if (r->slowest < 0) return;
  int md = o->format == TBE_REPORT_MARKDOWN;
  char x[32];
  tbe__buf t;
  tbe__buf_init(&t, b->a);
  tbe__buf_puts(&t, md ? (r->by_rank ? "Slowest " : "Slowest host ") : "slowest ");
  if (r->by_rank) {
    for (int k = 0; k < 2; k++) {
      const tbe_run_host *h = &r->hosts[k ? r->fastest : r->slowest];
      tbe__buf_printf(&t, "%srank %d (", k ? ", fastest " : "", (int)h->an->rank);
      put_text(&t, tbe__host_label(h), md);
      tbe__buf_putc(&t, ')');
    }
  } else {
    put_text(&t, tbe__host_label(&r->hosts[r->slowest]), md);
    tbe__buf_puts(&t, ", fastest ");
    put_text(&t, tbe__host_label(&r->hosts[r->fastest]), md);
  }
  tbe__buf_printf(&t, " by %s: spread %s (%.1f%% of the fastest)%s", figure_words(r->figure),
                  tbe__dur(x, r->spread_ns), tbe__pct(r->spread_ns, r->fastest_ns), md ? "." : "");
  tbe__buf_putc(&t, '\0');
  if (tbe__buf_error(&t)) {
    b->err = t.err;
  } else if (md) {
    tbe__buf_putc(b, '\n');
    tbe__buf_puts(b, (const char *)t.data);
    tbe__buf_putc(b, '\n');
  } else {
    tbe__wrap(b, (const char *)t.data, o->width);
  }
  tbe__buf_deinit(&t);
}

/* The lines under a compact table (and under any per-rank table): the
 * distribution of the figure and of the communication time over all
 * hosts, and the outliers. */
static void across(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o) {
  if (r->figure_dist.n == 0) return;
  int md = o->format == TBE_REPORT_MARKDOWN;
  const char *unit = r->by_rank ? "ranks" : "hosts";
  char x[4][32];
  tbe__buf t;
  tbe__buf_init(&t, b->a);
  const tbe_run_spread *sp[2] = {&r->figure_dist, &r->comm_dist};
  for (int k = 0; k < 2; k++) {
    tbe__buf_printf(&t, "%s%s over %zu %s: min %s, p50 %s, p90 %s, max %s%s",
                    md ? "- " : "", k ? "Comm time"
                                      : r->figure == TBE_RUN_BY_STEP_MEDIAN ? "Median step time"
                                                                            : "Wall time",
                    sp[k]->n, unit, tbe__dur(x[0], sp[k]->min_ns), tbe__dur(x[1], sp[k]->p50_ns),
                    tbe__dur(x[2], sp[k]->p90_ns), tbe__dur(x[3], sp[k]->max_ns), md ? "\n" : "");
    tbe__buf_putc(&t, '\0');
    if (!tbe__buf_error(&t)) {
      if (k == 0) tbe__buf_putc(b, '\n');
      if (md) tbe__buf_puts(b, (const char *)t.data);
      else tbe__wrap(b, (const char *)t.data, o->width);
    }
    t.len = 0;
  }
  if (r->nhosts >= TBE_RUN_OUTLIER_MIN_HOSTS) {
    tbe__buf_printf(&t, "%sOutliers (%s beyond %.0f scaled MADs and %.0f%% of the median): ",
                    md ? "- " : "", figure_words(r->figure), TBE_RUN_OUTLIER_MADS,
                    TBE_RUN_OUTLIER_MIN_PCT);
    if (!r->noutliers) tbe__buf_puts(&t, "none");
    size_t shown = 0;
    for (size_t p = 0; p < r->nhosts && r->order; p++) {
      long h = r->order[p];
      if (!r->hosts[h].outlier) continue;
      if (shown == LIST_MAX) {
        tbe__buf_printf(&t, " and %zu more", r->noutliers - shown);
        break;
      }
      if (shown++) tbe__buf_puts(&t, ", ");
      put_who(&t, r, h, md);
      char v[32];
      int64_t f = r->figure == TBE_RUN_BY_STEP_MEDIAN ? r->hosts[h].an->step_dist.median_ns
                                                      : r->hosts[h].an->wall_ns;
      tbe__buf_printf(&t, "\x01(%s)", tbe__dur(v, f));
    }
    tbe__buf_puts(&t, md ? ".\n" : ".");
    tbe__buf_putc(&t, '\0');
    if (!tbe__buf_error(&t)) {
      if (md) {
        for (char *c = (char *)t.data; *c; c++)
          if (*c == '\x01') *c = ' ';
        tbe__buf_puts(b, (const char *)t.data);
      } else {
        tbe__wrap(b, (const char *)t.data, o->width);
      }
    }
  }
  if (tbe__buf_error(&t)) b->err = t.err;
  tbe__buf_deinit(&t);
}

/* "... 1014 more ranks ..." for a gap of -g rows. */
static void gap_line(tbe__buf *b, const tbe_run_analysis *r, long g) {
  tbe__buf_printf(b, "  ... %ld more %s (every one: --format csv or json)\n", -g,
                  r->by_rank ? (g == -1 ? "rank" : "ranks") : (g == -1 ? "host" : "hosts"));
}

/* ---- summary: the per-rank table ---- */

/* rank, host, median step time, GPU busy %, kernel time, comm time, role:
 * the figures that tell ranks apart, in as few columns as fit 80. */
static void ranks_table(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o) {
  static const char *hd[7] = {"rank", "step median", "GPU busy", "kernel time", "comm time",
                              "", ""};
  static const int cw[7] = {6, 11, 8, 11, 11, 7, 0};
  int fixed = cw[0] + 1;
  for (int c = 1; c < 5; c++) fixed += cw[c] + 1;
  fixed += cw[5] + 2;
  int nw = o->width - fixed - 1;
  if (nw < NAME_MIN) nw = NAME_MIN;
  char name[512], v[6][40];
  if (o->wide)
    for (size_t i = 0; i < r->nhosts; i++) {
      int l = (int)tbe__text_fit(name, sizeof name, tbe__host_label(&r->hosts[i]), 0);
      if (l > nw) nw = l;
    }
  long *rows;
  size_t nrows = pick_rows(b, r, &rows);
  int compact = r->nhosts > ROWS_ALL;
  int32_t world = r->hosts[0].an->world_size;
  char line[256];
  int l = snprintf(line, sizeof line, "Ranks (%zu", r->nhosts);
  if (world > 0 && (size_t)world != r->nhosts)
    l += snprintf(line + l, sizeof line - (size_t)l, " of world size %d", (int)world);
  if (compact)
    snprintf(line + l, sizeof line - (size_t)l,
             "; the %d slowest, the %d fastest and the outliers, slowest first, by %s)", ROWS_EDGE,
             ROWS_EDGE, figure_words(r->figure));
  else if (r->slowest >= 0)
    snprintf(line + l, sizeof line - (size_t)l, "; slowest and fastest by %s)",
             figure_words(r->figure));
  else
    snprintf(line + l, sizeof line - (size_t)l, ")");
  tbe__buf_putc(b, '\n');
  tbe__wrap(b, line, o->width);
  int wall = r->figure == TBE_RUN_BY_WALL; /* no steps everywhere: the wall time tells ranks apart */
  tbe__cell(b, hd[0], cw[0], 1);
  tbe__buf_putc(b, ' ');
  tbe__cell(b, "host", nw, 0);
  for (int c = 1; c < 5; c++) {
    tbe__buf_putc(b, ' ');
    tbe__cell(b, c == 1 && wall ? "wall" : hd[c], cw[c], 1);
  }
  tbe__buf_putc(b, '\n');
  int head = cw[0] + 1 + nw;
  for (int c = 1; c < 5; c++) head += 1 + cw[c];
  tbe__rule(b, head);
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k] < 0) {
      gap_line(b, r, rows[k]);
      continue;
    }
    size_t i = (size_t)rows[k];
    const tbe_analysis *an = r->hosts[i].an;
    snprintf(v[0], 40, "%d", (int)an->rank);
    if (wall) tbe__fmt_dur(v[1], 40, an->wall_ns);
    else if (an->step_dist.n) tbe__fmt_dur(v[1], 40, an->step_dist.median_ns);
    else snprintf(v[1], 40, "-");
    snprintf(v[2], 40, "%.1f%%", tbe__pct(an->all.busy_ns, an->wall_ns));
    tbe__fmt_dur(v[3], 40, an->all.kernel_ns);
    tbe__fmt_dur(v[4], 40, an->all.class_ns[TBE_KCLASS_COMM]);
    snprintf(v[5], 40, "%s", role(r, i));
    tbe__cell(b, v[0], cw[0], 1);
    tbe__buf_putc(b, ' ');
    cut(name, sizeof name, tbe__host_label(&r->hosts[i]), o->wide ? 0 : nw);
    tbe__cell(b, name, nw, 0);
    for (int c = 1; c < 6; c++) {
      tbe__buf_puts(b, c == 5 ? "  " : " ");
      tbe__cell(b, v[c], cw[c], c < 5);
    }
    while (b->len && b->data[b->len - 1] == ' ') b->len--;
    tbe__buf_putc(b, '\n');
  }
  tbe__free(b->a, rows);
  extremes(b, r, o);
  across(b, r, o);
}

static void ranks_md(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o) {
  long *rows;
  size_t nrows = pick_rows(b, r, &rows);
  char v[6][40];
  int wall = r->figure == TBE_RUN_BY_WALL;
  tbe__buf_printf(b, "\n## Ranks (%zu%s)\n\n| rank | host | %s | GPU busy %% | kernel time "
                     "| comm time | |\n|---:|---|---:|---:|---:|---:|---|\n",
                  r->nhosts, r->nhosts > ROWS_ALL ? "; the slowest, the fastest and the outliers"
                                                  : "",
                  wall ? "wall" : "step median");
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k] < 0) {
      tbe__buf_printf(b, "| … | %ld more ranks | | | | | |\n", -rows[k]);
      continue;
    }
    size_t i = (size_t)rows[k];
    const tbe_analysis *an = r->hosts[i].an;
    if (wall) tbe__fmt_dur(v[1], 40, an->wall_ns);
    else if (an->step_dist.n) tbe__fmt_dur(v[1], 40, an->step_dist.median_ns);
    else snprintf(v[1], 40, "-");
    tbe__fmt_dur(v[3], 40, an->all.kernel_ns);
    tbe__fmt_dur(v[4], 40, an->all.class_ns[TBE_KCLASS_COMM]);
    tbe__buf_printf(b, "| %d | ", (int)an->rank);
    tbe__md_escape(b, tbe__host_label(&r->hosts[i]));
    tbe__buf_printf(b, " | %s | %.1f | %s | %s | %s |\n", v[1],
                    tbe__pct(an->all.busy_ns, an->wall_ns), v[3], v[4], role(r, i));
  }
  tbe__free(b->a, rows);
  extremes(b, r, o);
  across(b, r, o);
}

/* ---- summary: table ---- */

static void hosts_table(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o) {
  static const char *hd[9] = {"pid", "rank", "GPUs", "wall", "GPU busy", "kernel time", "steps",
                              "step median", ""};
  static const int cw[9] = {7, 4, 4, 10, 8, 11, 5, 11, 7};
  int fixed = 0;
  for (int c = 0; c < 8; c++) fixed += cw[c] + 1;
  /* The slowest/fastest column when the width leaves room for it (the
   * line under the table names them anyway). */
  int ncol = o->width - fixed - cw[8] - 2 >= NAME_MIN ? 9 : 8;
  if (ncol == 9) fixed += cw[8] + 2;
  int nw = o->width - fixed;
  if (nw < NAME_MIN) nw = NAME_MIN;
  char name[512], v[9][40];
  if (o->wide)
    for (size_t i = 0; i < r->nhosts; i++) {
      int l = (int)tbe__text_fit(name, sizeof name, tbe__host_label(&r->hosts[i]), 0);
      if (l > nw) nw = l;
    }
  tbe__buf_printf(b, "\nHosts (%zu, by %s", r->nhosts, r->by_rank ? "rank" : "host name");
  if (r->slowest >= 0) tbe__buf_printf(b, "; slowest and fastest by %s", figure_words(r->figure));
  tbe__buf_puts(b, ")\n");
  tbe__cell(b, "host", nw, 0);
  for (int c = 0; c < ncol; c++) {
    tbe__buf_putc(b, ' ');
    tbe__cell(b, hd[c], cw[c], c < 8);
  }
  while (b->len && b->data[b->len - 1] == ' ') b->len--;
  tbe__buf_putc(b, '\n');
  tbe__rule(b, nw + fixed - (ncol == 9 ? cw[8] + 2 : 0));
  long *rows;
  size_t nrows = pick_rows(b, r, &rows);
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k] < 0) {
      gap_line(b, r, rows[k]);
      continue;
    }
    size_t i = (size_t)rows[k];
    const tbe_analysis *an = r->hosts[i].an;
    cut(name, sizeof name, tbe__host_label(&r->hosts[i]), o->wide ? 0 : nw);
    tbe__cell(b, name, nw, 0);
    if (an->pid >= 0) snprintf(v[0], 40, "%lld", (long long)an->pid);
    else snprintf(v[0], 40, "-");
    if (an->rank >= 0) snprintf(v[1], 40, "%d", (int)an->rank);
    else snprintf(v[1], 40, "-");
    snprintf(v[2], 40, "%zu", an->ndevices);
    tbe__fmt_dur(v[3], 40, an->wall_ns);
    snprintf(v[4], 40, "%.1f%%", tbe__pct(an->all.busy_ns, an->wall_ns));
    tbe__fmt_dur(v[5], 40, an->all.kernel_ns);
    snprintf(v[6], 40, "%zu", an->nsteps);
    if (an->step_dist.n) tbe__fmt_dur(v[7], 40, an->step_dist.median_ns);
    else snprintf(v[7], 40, "-");
    snprintf(v[8], 40, "%s", role(r, i));
    for (int c = 0; c < ncol; c++) {
      tbe__buf_puts(b, c == 8 ? "  " : " ");
      tbe__cell(b, v[c], cw[c], c < 8);
    }
    while (b->len && b->data[b->len - 1] == ' ') b->len--;
    tbe__buf_putc(b, '\n');
  }
  tbe__free(b->a, rows);
  extremes(b, r, o);
  if (r->nhosts > ROWS_ALL) across(b, r, o);
}

static void run_overview(tbe__buf *b, const tbe_run_analysis *r, int width) {
  tbe__ocol cols[HOST_COLS_MAX + 1];
  size_t n = 0;
  if (r->nhosts <= HOST_COLS_MAX && !per_rank(r)) /* per rank: the ranks' table says it */
    for (size_t i = 0; i < r->nhosts; i++, n++) {
      cols[n].d = &r->hosts[i].an->all;
      cols[n].label = tbe__host_label(&r->hosts[i]);
      cols[n].name = NULL;
    }
  cols[n].d = &r->total->all;
  cols[n].label = "all hosts";
  cols[n++].name = NULL;
  tbe__buf_puts(b, "\nGPUs of each host together (all hosts: sums, wall time included)\n");
  tbe__overview(b, cols, n, &r->total->all, width);
}

static void totals_line(tbe__buf *b, const tbe_analysis *t, int width) {
  char x[32], y[32];
  tbe__buf_printf(b, "hosts: busiest thread %s, %llu CUDA API calls, %llu syncs (%s)\n",
                  tbe__dur(x, t->host_busy_ns), (unsigned long long)t->api_calls,
                  (unsigned long long)t->sync_calls, tbe__dur(y, t->sync_call_ns));
  tbe__profiler_line(b, t, "a capture ended early", width);
}

static void run_steps(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o) {
  const tbe_analysis *t = r->total;
  int md = o->format == TBE_REPORT_MARKDOWN;
  size_t with = 0;
  for (size_t i = 0; i < r->nhosts; i++) with += r->hosts[i].an->nsteps > 0;
  if (!t->nsteps) {
    if (!with) return;
    char line[256];
    snprintf(line, sizeof line,
             "%s%zu of %zu hosts have steps, but no step number is common to all; each host's "
             "median is in its row.",
             md ? "**Steps:** " : "Steps: ", with, r->nhosts);
    tbe__buf_putc(b, '\n');
    if (md) tbe__buf_printf(b, "%s\n", line);
    else tbe__wrap(b, line, o->width);
    return;
  }
  char v[6][32];
  if (md) {
    tbe__buf_printf(b, "\n## Steps (%zu common to all hosts)\n\n| step | slowest host | fastest host "
                       "| GPU busy (sum) | kernel time (sum) | kernels |\n"
                       "|---:|---:|---:|---:|---:|---:|\n",
                    t->nsteps);
  } else {
    char head[160];
    snprintf(head, sizeof head,
             "Steps (%zu common to all hosts; time of the slowest and the fastest host, sums over "
             "hosts)",
             t->nsteps);
    tbe__buf_putc(b, '\n');
    tbe__wrap(b, head, o->width);
    static const char *hd[6] = {"step", "slowest", "fastest", "GPU busy", "kernel time",
                                "kernels"};
    static const int cw[6] = {10, 12, 12, 12, 12, 8};
    for (int c = 0; c < 6; c++) {
      if (c) tbe__buf_puts(b, "  ");
      tbe__cell(b, hd[c], cw[c], c != 0);
    }
    tbe__buf_putc(b, '\n');
    tbe__rule(b, 10 + 12 * 4 + 8 + 10);
  }
  for (size_t i = 0; i < t->nsteps; i++) {
    const tbe_step_stats *s = &t->steps[i];
    snprintf(v[0], 32, "%lld", (long long)s->num);
    tbe__fmt_dur(v[1], 32, s->dur_ns);
    tbe__fmt_dur(v[2], 32, r->step_fastest_ns[i]);
    tbe__fmt_dur(v[3], 32, s->gpu_busy_ns);
    tbe__fmt_dur(v[4], 32, s->kernel_ns);
    snprintf(v[5], 32, "%llu", (unsigned long long)s->kernel_count);
    if (md) {
      tbe__buf_printf(b, "| %s | %s | %s | %s | %s | %s |\n", v[0], v[1], v[2], v[3], v[4], v[5]);
      continue;
    }
    static const int cw[6] = {10, 12, 12, 12, 12, 8};
    for (int c = 0; c < 6; c++) {
      if (c) tbe__buf_puts(b, "  ");
      tbe__cell(b, v[c], cw[c], c != 0);
    }
    tbe__buf_putc(b, '\n');
  }
}

/* The hint sentence for the run: the range most hosts share, with the
 * figures of the first host that has it (its share is of its own wall
 * time). */
static void run_hint(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o) {
  const tbe_analysis *t = r->total;
  if (!t->step_hint) return;
  size_t first = 0;
  while (first < r->nhosts && !(r->hosts[first].an->step_hint &&
                                strcmp(r->hosts[first].an->step_hint, t->step_hint) == 0))
    first++;
  if (first == r->nhosts) return;
  tbe__buf where;
  tbe__buf_init(&where, b->a);
  tbe__buf_printf(&where, "on %zu of %zu hosts; ", r->hint_hosts, r->nhosts);
  put_text(&where, tbe__host_label(&r->hosts[first]), o->format == TBE_REPORT_MARKDOWN);
  tbe__buf_putc(&where, '\0');
  if (tbe__buf_error(&where))
    b->err = where.err;
  else
    tbe__step_hint_text(b, r->hosts[first].an, o, (const char *)where.data, "common to all hosts");
  tbe__buf_deinit(&where);
}

/* Advice of all hosts, each distinct line once, with the hosts it
 * concerns (the first, and how many more). */
static void run_advice(tbe__buf *b, const tbe_run_analysis *r, int md) {
  int any = 0;
  for (size_t i = 0; i < r->nhosts; i++) {
    const tbe_analysis *an = r->hosts[i].an;
    for (size_t k = 0; k < an->nadvice; k++) {
      const tbe_advice *ad = &an->advice[k];
      int seen = 0;
      for (size_t j = 0; j < i && !seen; j++)
        for (size_t q = 0; q < r->hosts[j].an->nadvice && !seen; q++)
          seen = r->hosts[j].an->advice[q].kind == ad->kind;
      if (seen) continue;
      size_t more = 0;
      for (size_t j = i + 1; j < r->nhosts; j++)
        for (size_t q = 0; q < r->hosts[j].an->nadvice; q++)
          if (r->hosts[j].an->advice[q].kind == ad->kind) {
            more++;
            break;
          }
      if (!any) tbe__buf_puts(b, md ? "\n## Advice\n\n" : "\nAdvice\n");
      any = 1;
      tbe__buf_puts(b, "- ");
      put_text(b, tbe__host_label(&r->hosts[i]), md);
      if (more) tbe__buf_printf(b, " (and %zu more host%s)", more, more == 1 ? "" : "s");
      tbe__buf_puts(b, ": ");
      put_text(b, ad->text, md);
      tbe__buf_putc(b, '\n');
    }
  }
}

/* Warnings of all hosts, each distinct line once, with the first host
 * that has it and how many more do (the ranks of a job mostly say the
 * same: a note per rank would bury the one that differs).  Linear in the
 * warnings: the lines are interned. */
static void warnings(tbe__buf *b, const tbe_run_analysis *r, int md) {
  tbe__intern in;
  tbe__intern_init(&in, b->a, TBE__SEED_PROCESS);
  /* per line: the hosts that have it; the last of them + 1, then whether
   * it is printed */
  size_t *hosts = NULL, *last = NULL, caph = 0, capl = 0;
  int rc = 0;
  for (size_t i = 0; i < r->nhosts && !rc; i++) {
    const tbe_trace *t = r->hosts[i].an->trace;
    for (size_t k = 0; t && k < t->nwarnings && !rc; k++) {
      const char *w = tbe_trace_str(t, t->warnings[k]);
      uint32_t id;
      int added;
      if ((rc = tbe__intern_add(&in, w, strlen(w), &id, &added))) break;
      if (added) {
        if ((rc = tbe__grow(b->a, (void **)&hosts, &caph, (size_t)id + 1, sizeof *hosts)) ||
            (rc = tbe__grow(b->a, (void **)&last, &capl, (size_t)id + 1, sizeof *last)))
          break;
        hosts[id] = last[id] = 0;
      }
      if (last[id] != i + 1) hosts[id]++, last[id] = i + 1;
    }
  }
  if (rc) {
    b->err = rc;
  } else {
    for (size_t id = 0; id < tbe__intern_count(&in); id++) last[id] = 0;
    for (size_t i = 0; i < r->nhosts; i++) {
      const tbe_trace *t = r->hosts[i].an->trace;
      for (size_t k = 0; t && k < t->nwarnings; k++) {
        const char *w = tbe_trace_str(t, t->warnings[k]);
        uint32_t id = tbe__intern_find(&in, w, strlen(w));
        if (id == TBE__NOIDX || last[id]) continue;
        last[id] = 1;
        tbe__buf_puts(b, md ? "\nwarning: " : "warning: ");
        put_text(b, tbe__host_label(&r->hosts[i]), md);
        if (hosts[id] > 1)
          tbe__buf_printf(b, " (and %zu more host%s)", hosts[id] - 1, hosts[id] == 2 ? "" : "s");
        tbe__buf_puts(b, ": ");
        put_text(b, w, md);
        tbe__buf_putc(b, '\n');
      }
    }
  }
  tbe__free(b->a, hosts);
  tbe__free(b->a, last);
  tbe__intern_deinit(&in);
}

/* A GPU of the run: the machine of its host file (the label without the
 * ".rank<N>" and "_pid<N>" tbexport appends for the processes of one
 * machine) and the device ordinal.  Processes of one machine share its
 * GPUs: two processes (or ranks) on GPU 0 are one GPU. */
typedef struct gpu_id {
  const char *machine;
  size_t len;
  int32_t device;
} gpu_id;

static int cmp_gpu_id(const void *x, const void *y) {
  const gpu_id *a = x, *b = y;
  int c = strncmp(a->machine, b->machine, a->len < b->len ? a->len : b->len);
  if (!c && a->len != b->len) c = a->len < b->len ? -1 : 1;
  return c ? c : (a->device > b->device) - (a->device < b->device);
}

static gpu_id machine_of(const tbe_run_host *h, int32_t device) {
  return (gpu_id){h->label, tbe__host_machine_len(h->label), device};
}

/* Distinct GPUs (*ngpu) and machines (*nmach) of the run; both fall back
 * to plain sums when memory is short. */
static void count_gpus(const tbe_run_analysis *r, size_t *ngpu, size_t *nmach) {
  size_t n = 0;
  for (size_t i = 0; i < r->nhosts; i++) n += r->hosts[i].an->ndevices;
  *ngpu = n;
  *nmach = r->nhosts;
  gpu_id *v = tbe__alloc(&r->alloc_, (n + r->nhosts) * sizeof *v);
  if (!v) return;
  size_t k = 0;
  for (size_t i = 0; i < r->nhosts; i++)
    for (size_t j = 0; j < r->hosts[i].an->ndevices; j++)
      v[k++] = machine_of(&r->hosts[i], r->hosts[i].an->devices[j].device);
  qsort(v, n, sizeof *v, cmp_gpu_id);
  *ngpu = 0;
  for (size_t i = 0; i < n; i++) *ngpu += i == 0 || cmp_gpu_id(&v[i - 1], &v[i]) != 0;
  gpu_id *m = v + n;
  for (size_t i = 0; i < r->nhosts; i++) m[i] = machine_of(&r->hosts[i], 0);
  qsort(m, r->nhosts, sizeof *m, cmp_gpu_id);
  *nmach = 0;
  for (size_t i = 0; i < r->nhosts; i++) *nmach += i == 0 || cmp_gpu_id(&m[i - 1], &m[i]) != 0;
  tbe__free(&r->alloc_, v);
}

static size_t gpus(const tbe_run_analysis *r) {
  size_t ngpu, nmach;
  count_gpus(r, &ngpu, &nmach);
  return ngpu;
}

/* "2 hosts", or "2 processes on 1 host" when several files come from one
 * machine. */
static void who(char *out, size_t size, const tbe_run_analysis *r, size_t nmach) {
  if (nmach == r->nhosts)
    snprintf(out, size, "%zu hosts", r->nhosts);
  else
    snprintf(out, size, "%zu processes on %zu host%s", r->nhosts, nmach, nmach == 1 ? "" : "s");
}

void tbe__rep_run_table(tbe__buf *b, tbe_run_analysis *r, const tbe_report_options *o) {
  const tbe_analysis *t = r->total;
  char x[32];
  char line[256], w[64];
  size_t ngpu, nmach;
  count_gpus(r, &ngpu, &nmach);
  who(w, sizeof w, r, nmach);
  if (o->label[0]) {
    tbe__buf_puts(b, "Run ");
    tbe__term(b, o->label[0]);
    tbe__buf_putc(b, '\n');
  }
  snprintf(line, sizeof line,
           "%s, wall %s (first start to last end), %zu GPU%s, %llu kernels, %zu steps "
           "common to all hosts",
           w, tbe__dur(x, t->wall_ns), ngpu, ngpu == 1 ? "" : "s",
           (unsigned long long)t->all.kernel_count, t->nsteps);
  tbe__wrap(b, line, o->width);
  warnings(b, r, 0);
  if (per_rank(r)) ranks_table(b, r, o);
  else hosts_table(b, r, o);
  run_overview(b, r, o->width);
  totals_line(b, t, o->width);
  tbe__summary_names(b, t, o);
  tbe__metrics_run(b, r, o, 0);
  run_steps(b, r, o);
  run_hint(b, r, o);
  run_advice(b, r, 0);
}

/* ---- summary: Markdown ---- */

void tbe__rep_run_md(tbe__buf *b, tbe_run_analysis *r, const tbe_report_options *o) {
  const tbe_analysis *t = r->total;
  char x[32], v[8][40];
  tbe__buf_puts(b, "# Summary");
  if (o->label[0]) {
    tbe__buf_puts(b, ": ");
    tbe__md_escape(b, o->label[0]);
  }
  size_t ngpu, nmach;
  char w[64];
  count_gpus(r, &ngpu, &nmach);
  who(w, sizeof w, r, nmach);
  tbe__buf_printf(b, "\n\n%s, wall %s (first start to last end), %zu GPU%s, %llu kernels, "
                     "%zu steps common to all hosts.\n",
                  w, tbe__dur(x, t->wall_ns), ngpu, ngpu == 1 ? "" : "s",
                  (unsigned long long)t->all.kernel_count, t->nsteps);
  warnings(b, r, 1);
  if (per_rank(r)) {
    ranks_md(b, r, o);
    tbe__summary_names(b, t, o);
    tbe__metrics_run(b, r, o, 1);
    run_steps(b, r, o);
    run_hint(b, r, o);
    run_advice(b, r, 1);
    return;
  }
  tbe__buf_printf(b, "\n## Hosts (by %s)\n\n| host | pid | rank | GPUs | wall | GPU busy %% | "
                     "kernel time | memcpy | steps | step median | |\n"
                     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
                  r->by_rank ? "rank" : "host name");
  long *rows;
  size_t nrows = pick_rows(b, r, &rows);
  for (size_t q = 0; q < nrows; q++) {
    if (rows[q] < 0) {
      tbe__buf_printf(b, "| … %ld more hosts | | | | | | | | | | |\n", -rows[q]);
      continue;
    }
    size_t i = (size_t)rows[q];
    const tbe_analysis *an = r->hosts[i].an;
    int64_t cp = 0;
    for (int k = 0; k < TBE_NCOPY_KINDS; k++) cp += an->all.memcpy_ns[k];
    snprintf(v[0], 40, "%lld", (long long)an->pid);
    snprintf(v[1], 40, "%d", (int)an->rank);
    tbe__fmt_dur(v[2], 40, an->wall_ns);
    tbe__fmt_dur(v[3], 40, an->all.kernel_ns);
    tbe__fmt_dur(v[4], 40, cp);
    if (an->step_dist.n) tbe__fmt_dur(v[5], 40, an->step_dist.median_ns);
    else snprintf(v[5], 40, "-");
    tbe__buf_puts(b, "| ");
    tbe__md_escape(b, tbe__host_label(&r->hosts[i]));
    tbe__buf_printf(b, " | %s | %s | %zu | %s | %.1f | %s | %s | %zu | %s | %s |\n",
                    an->pid >= 0 ? v[0] : "-", an->rank >= 0 ? v[1] : "-", an->ndevices, v[2],
                    tbe__pct(an->all.busy_ns, an->wall_ns), v[3], v[4], an->nsteps, v[5],
                    role(r, i));
  }
  tbe__buf_printf(b, "| all hosts | | | %zu | %s | %.1f | ", gpus(r), tbe__dur(x, t->wall_ns),
                  tbe__pct(t->all.busy_ns, t->all.wall_ns));
  int64_t cp = 0;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) cp += t->all.memcpy_ns[k];
  tbe__fmt_dur(v[3], 40, t->all.kernel_ns);
  tbe__fmt_dur(v[4], 40, cp);
  if (t->step_dist.n) tbe__fmt_dur(v[5], 40, t->step_dist.median_ns);
  else snprintf(v[5], 40, "-");
  tbe__buf_printf(b, "%s | %s | %zu | %s | |\n", v[3], v[4], t->nsteps, v[5]);
  tbe__free(b->a, rows);
  extremes(b, r, o);
  if (r->nhosts > ROWS_ALL) across(b, r, o);
  tbe__summary_names(b, t, o);
  tbe__metrics_run(b, r, o, 1);
  run_steps(b, r, o);
  run_hint(b, r, o);
  run_advice(b, r, 1);
}

/* ---- summary: CSV ---- */

static void csv_device(tbe__buf *b, const char *host, const tbe_device_stats *d) {
  int64_t other = 0;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++)
    if (k != TBE_COPY_HTOD && k != TBE_COPY_DTOH && k != TBE_COPY_DTOD) other += d->memcpy_ns[k];
  tbe__buf_puts(b, "device,");
  tbe__csv_str(b, host);
  if (d->device < 0) tbe__buf_puts(b, ",all");
  else tbe__buf_printf(b, ",%d", (int)d->device);
  tbe__buf_printf(b, ",%lld,%lld,%lld,%llu,%lld,%lld,%lld,%lld,%lld,%lld,%lld,",
                  (long long)d->wall_ns, (long long)d->busy_ns, (long long)d->kernel_ns,
                  (unsigned long long)d->kernel_count, (long long)d->memcpy_ns[TBE_COPY_HTOD],
                  (long long)d->memcpy_ns[TBE_COPY_DTOH], (long long)d->memcpy_ns[TBE_COPY_DTOD],
                  (long long)other, (long long)d->memset_ns, (long long)d->sync_ns,
                  (long long)d->idle_ns);
  tbe__csv_launch(b, d->launch_median_ns, d->launch_overhead_median_ns, d->queue_delay_median_ns);
  tbe__buf_putc(b, '\n');
}

static void csv_host_row(tbe__buf *b, const char *section, const char *label, const tbe_analysis *an,
                         size_t ngpus, const char *role_word) {
  tbe__buf_printf(b, "%s,", section);
  tbe__csv_str(b, label);
  tbe__buf_printf(b, ",%lld,%d,%d,%zu,%lld,%lld,%.3f,%lld,%llu,%zu,%lld,%lld,%lld,%lld,%s\n",
                  (long long)an->pid, (int)an->rank, (int)an->world_size, ngpus,
                  (long long)an->wall_ns, (long long)an->all.busy_ns,
                  tbe__pct(an->all.busy_ns, an->all.wall_ns), (long long)an->all.kernel_ns,
                  (unsigned long long)an->all.kernel_count, an->nsteps,
                  (long long)an->step_dist.median_ns, (long long)an->step_dist.q1_ns,
                  (long long)an->step_dist.q3_ns, (long long)an->all.class_ns[TBE_KCLASS_COMM],
                  role_word);
}

static void csv_spread(tbe__buf *b, const char *what, const tbe_run_spread *d) {
  tbe__buf_printf(b, "spread,%s,%zu,%lld,%lld,%lld,%lld\n", what, d->n, (long long)d->min_ns,
                  (long long)d->p50_ns, (long long)d->p90_ns, (long long)d->max_ns);
}

void tbe__rep_run_csv(tbe__buf *b, tbe_run_analysis *r, const tbe_report_options *o) {
  const tbe_analysis *t = r->total;
  tbe__buf_puts(b, "section,host,pid,rank,world_size,gpus,wall_ns,busy_ns,busy_pct,kernel_ns,"
                   "kernel_count,nsteps,step_median_ns,step_q1_ns,step_q3_ns,comm_ns,role\n");
  for (size_t i = 0; i < r->nhosts; i++)
    csv_host_row(b, "host", tbe__host_label(&r->hosts[i]), r->hosts[i].an, r->hosts[i].an->ndevices,
                 role(r, i));
  csv_host_row(b, "total", "", t, gpus(r), "");
  if (r->slowest >= 0) {
    tbe__buf_printf(b, "\nsection,figure,slowest,slowest_ns,fastest,fastest_ns,spread_ns\n"
                       "extremes,%s,",
                    figure_key(r->figure));
    tbe__csv_str(b, tbe__host_label(&r->hosts[r->slowest]));
    tbe__buf_printf(b, ",%lld,", (long long)r->slowest_ns);
    tbe__csv_str(b, tbe__host_label(&r->hosts[r->fastest]));
    tbe__buf_printf(b, ",%lld,%lld\n", (long long)r->fastest_ns, (long long)r->spread_ns);
    tbe__buf_puts(b, "\nsection,figure,hosts,min_ns,p50_ns,p90_ns,max_ns\n");
    csv_spread(b, figure_key(r->figure), &r->figure_dist);
    csv_spread(b, "comm", &r->comm_dist);
  }
  tbe__buf_puts(b,
                "\nsection,host,device,wall_ns,busy_ns,kernel_ns,kernel_count,memcpy_htod_ns,"
                "memcpy_dtoh_ns,memcpy_dtod_ns,memcpy_other_ns,memset_ns,sync_ns,idle_ns,"
                "launch_median_ns,launch_overhead_median_ns,queue_delay_median_ns\n");
  for (size_t i = 0; i < r->nhosts; i++) {
    const tbe_analysis *an = r->hosts[i].an;
    for (size_t d = 0; d < an->ndevices; d++)
      csv_device(b, tbe__host_label(&r->hosts[i]), &an->devices[d]);
    csv_device(b, tbe__host_label(&r->hosts[i]), &an->all);
  }
  csv_device(b, "all hosts", &t->all);
  tbe__summary_names(b, t, o);
  if (t->nsteps) {
    tbe__buf_puts(b, "\nsection,step,start_ns,dur_ns,fastest_ns,gpu_busy_ns,kernel_ns,kernel_count\n");
    for (size_t i = 0; i < t->nsteps; i++) {
      const tbe_step_stats *s = &t->steps[i];
      tbe__buf_printf(b, "step,%lld,%lld,%lld,%lld,%lld,%lld,%llu\n", (long long)s->num,
                      (long long)s->start_ns, (long long)s->dur_ns,
                      (long long)r->step_fastest_ns[i], (long long)s->gpu_busy_ns,
                      (long long)s->kernel_ns, (unsigned long long)s->kernel_count);
    }
  }
  int hint = 0;
  for (size_t i = 0; i < r->nhosts; i++)
    if (r->hosts[i].an->step_hint) {
      tbe__step_hint_csv(b, r->hosts[i].an, tbe__host_label(&r->hosts[i]), !hint);
      hint = 1;
    }
  int adv = 0;
  for (size_t i = 0; i < r->nhosts; i++) {
    const tbe_analysis *an = r->hosts[i].an;
    for (size_t k = 0; k < an->nadvice; k++) {
      if (!adv) tbe__buf_puts(b, "\nsection,host,kind,figure,text\n");
      adv = 1;
      tbe__buf_puts(b, "advice,");
      tbe__csv_str(b, tbe__host_label(&r->hosts[i]));
      tbe__buf_printf(b, ",%u,%.3f,", an->advice[k].kind, an->advice[k].figure);
      tbe__csv_str(b, an->advice[k].text);
      tbe__buf_putc(b, '\n');
    }
  }
}

/* ---- summary: JSON ---- */

static void json_extreme(tbe__buf *b, const tbe_run_analysis *r, long i, int64_t ns) {
  if (i < 0) {
    tbe__buf_puts(b, "null");
    return;
  }
  tbe__buf_puts(b, "{\"host\":");
  tbe__json_str(b, tbe__host_label(&r->hosts[i]));
  tbe__buf_printf(b, ",\"index\":%ld,\"value_ns\":%lld", i, (long long)ns);
  if (r->by_rank) tbe__buf_printf(b, ",\"rank\":%d", (int)r->hosts[i].an->rank);
  tbe__buf_putc(b, '}');
}

static void json_spread(tbe__buf *b, const tbe_run_spread *d) {
  tbe__buf_printf(b, "{\"n\":%zu,\"min_ns\":%lld,\"p50_ns\":%lld,\"p90_ns\":%lld,\"max_ns\":%lld}",
                  d->n, (long long)d->min_ns, (long long)d->p50_ns, (long long)d->p90_ns,
                  (long long)d->max_ns);
}

static int64_t figure_of(const tbe_run_analysis *r, long h) {
  const tbe_analysis *an = r->hosts[h].an;
  return r->figure == TBE_RUN_BY_STEP_MEDIAN ? an->step_dist.median_ns : an->wall_ns;
}

void tbe__rep_run_json(tbe__buf *b, tbe_run_analysis *r, const tbe_report_options *o) {
  tbe__buf_puts(b, "{\"label\":");
  tbe__json_str(b, o->label[0] ? o->label[0] : "");
  tbe__buf_printf(b, ",\"hosts_count\":%zu,\"by_rank\":%s,\"figure\":\"%s\",\"slowest\":",
                  r->nhosts, r->by_rank ? "true" : "false", figure_key(r->figure));
  json_extreme(b, r, r->slowest, r->slowest_ns);
  tbe__buf_puts(b, ",\"fastest\":");
  json_extreme(b, r, r->fastest, r->fastest_ns);
  tbe__buf_puts(b, ",\"figure_dist\":");
  json_spread(b, &r->figure_dist);
  tbe__buf_puts(b, ",\"comm_dist\":");
  json_spread(b, &r->comm_dist);
  tbe__buf_puts(b, ",\"outliers\":[");
  for (size_t p = 0, k = 0; r->order && p < r->nhosts; p++) {
    long h = r->order[p];
    if (!r->hosts[h].outlier) continue;
    if (k++) tbe__buf_putc(b, ',');
    json_extreme(b, r, h, figure_of(r, h));
  }
  tbe__buf_putc(b, ']');
  tbe__buf_printf(b, ",\"spread_ns\":%lld,\"spread_pct\":%.3f,\"hint_hosts\":%zu,"
                     "\"step_fastest_ns\":[",
                  (long long)r->spread_ns, tbe__pct(r->spread_ns, r->fastest_ns), r->hint_hosts);
  for (size_t i = 0; i < r->total->nsteps; i++)
    tbe__buf_printf(b, "%s%lld", i ? "," : "", (long long)r->step_fastest_ns[i]);
  tbe__buf_puts(b, "],\"total\":");
  tbe__summary_json(b, r->total, o, o->label[0]);
  tbe__buf_puts(b, ",\"hosts\":[");
  for (size_t i = 0; i < r->nhosts; i++) {
    if (i) tbe__buf_putc(b, ',');
    tbe__summary_json(b, r->hosts[i].an, o, tbe__host_label(&r->hosts[i]));
    /* The caller's index, inside the object. */
    if (!tbe__buf_error(b)) {
      b->len--;
      tbe__buf_printf(b, ",\"index\":%zu,\"comm_ns\":%lld,\"role\":\"%s\"}", r->hosts[i].index,
                      (long long)r->hosts[i].an->all.class_ns[TBE_KCLASS_COMM], role(r, i));
    }
  }
  tbe__buf_puts(b, "]}\n");
}
