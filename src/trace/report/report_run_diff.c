/* report_run_diff.c: the comparison of two runs of several hosts
 * (tbe_report_run_diff's renderers) as a terminal table, CSV, JSON or
 * Markdown: the totals compared as two traces are (report_diff.c's
 * parts), a row per host pair (matched by rank, else by host name) with
 * its own step-time verdict, the change of each pair's median step time,
 * then the merged name tables.  Beyond TBE__RUN_ROWS_ALL pairs the table
 * and Markdown forms keep the TBE__RUN_ROWS_CHANGED pairs whose step time
 * changed most (report_run.c states the compact rule); CSV and JSON hold
 * every pair.
 *
 * Position: a renderer of src/trace/report, called by report_api.c's
 * format table; calls down only (report_diff.c's parts, report.c's
 * helpers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/text.h"
#include "tbexport/error.h"
#include "trace/report/report.h"

/* A cell of at most w columns (common/text.h). */
static void fit(char *buf, size_t size, const char *s, int w) {
  tbe__text_fit(buf, size, s, w > 0 ? (size_t)w : 0);
}

/* ---- diff of two runs ---- */

static const char *pair_label(const tbe_run_diff *d, const tbe_host_diff *p, char *buf,
                              size_t size) {
  const char *a = p->host[0] >= 0 ? tbe__host_label(&d->side[0]->hosts[p->host[0]]) : NULL;
  const char *c = p->host[1] >= 0 ? tbe__host_label(&d->side[1]->hosts[p->host[1]]) : NULL;
  if (a && c && strcmp(a, c) != 0) snprintf(buf, size, "%s -> %s", a, c);
  else snprintf(buf, size, "%s", a ? a : c);
  return buf;
}

static const char *pair_mark(const tbe_host_diff *p) {
  if (p->host[1] < 0) return "-";
  if (p->host[0] < 0) return "+";
  return tbe__noise_mark(p->steps.verdict);
}

static const char *pair_status(const tbe_host_diff *p) {
  return p->host[1] < 0 ? "removed" : p->host[0] < 0 ? "added" : "matched";
}

/* The rows of a table of pairs: every pair in pair order up to TBE__RUN_ROWS_ALL;
 * beyond, the TBE__RUN_ROWS_CHANGED that changed most (d->order) and -k for the k
 * left out.  Returns the count (0 after an allocation failure, in b). */
static size_t pick_pairs(tbe__buf *b, const tbe_run_diff *d, long **out) {
  size_t n = d->nhosts, k = 0;
  long *v = tbe__alloc(b->a, (n + 1) * sizeof *v);
  *out = v;
  if (!v) {
    b->err = TBE_ENOMEM;
    return 0;
  }
  if (n <= TBE__RUN_ROWS_ALL || !d->order) {
    for (size_t i = 0; i < n; i++) v[k++] = (long)i;
    return k;
  }
  for (size_t i = 0; i < TBE__RUN_ROWS_CHANGED; i++) v[k++] = d->order[i];
  v[k++] = -(long)(n - TBE__RUN_ROWS_CHANGED);
  return k;
}

static int per_rank_diff(const tbe_run_diff *d) {
  return d->by_rank && (d->side[0]->nhosts > 1 || d->side[1]->nhosts > 1);
}

static int32_t pair_rank(const tbe_run_diff *d, const tbe_host_diff *p) {
  int s = p->host[0] >= 0 ? 0 : 1;
  return d->side[s]->hosts[p->host[s]].an->rank;
}

/* The distribution of the per-pair change of the median step time. */
static void change_line(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  const tbe_run_spread *c = &d->change_dist;
  if (!c->n) return;
  int md = o->format == TBE_REPORT_MARKDOWN;
  char x[4][32], line[320];
  tbe__delta_str(x[0], c->min_ns);
  tbe__delta_str(x[1], c->p50_ns);
  tbe__delta_str(x[2], c->p90_ns);
  tbe__delta_str(x[3], c->max_ns);
  snprintf(line, sizeof line,
           "Change of the median step time over the %zu %s that have steps on both sides: "
           "min %s, p50 %s, p90 %s, max %s.",
           c->n, d->by_rank ? "ranks" : "hosts", x[0], x[1], x[2], x[3]);
  if (md) tbe__buf_printf(b, "\n%s\n", line);
  else tbe__wrap(b, line, o->width);
}

/* The figures of one pair of a ranks diff into v[1..6]: the median step
 * time on each side (1, 2), its change and the change in % (3, 4; `pct`:
 * with a % sign), the comm time on each side (5, 6); "-" where absent. */
static void pair_cells(const tbe_host_diff *p, char v[8][40], int pct) {
  for (int s = 0; s < 2; s++) {
    if (p->steps.dist[s].n) tbe__fmt_dur(v[1 + s], 40, p->steps.dist[s].median_ns);
    else snprintf(v[1 + s], 40, "-");
    if (p->host[s] >= 0) tbe__fmt_dur(v[5 + s], 40, p->comm_ns[s]);
    else snprintf(v[5 + s], 40, "-");
  }
  if (p->has_change) {
    tbe__delta_str(v[3], p->step_change_ns);
    snprintf(v[4], 40, pct ? "%+.1f%%" : "%+.1f", p->step_change_pct);
  } else {
    snprintf(v[3], 40, "-");
    snprintf(v[4], 40, "-");
  }
}

/* rank, host, median step time on each side, its change (and %), comm
 * time on each side, the verdict mark. */
static void ranks_diff_table(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  static const char *hd[8] = {"rank", "step b", "step n", "change", "%", "comm b", "comm n", ""};
  static const int cw[8] = {6, 9, 9, 10, 7, 9, 9, 1};
  int fixed = cw[0] + 1;
  for (int c = 1; c < 8; c++) fixed += cw[c] + 1;
  int nw = o->width - fixed - 1;
  if (nw < TBE__NAME_MIN) nw = TBE__NAME_MIN;
  char name[1024], shown[1024], v[8][40];
  if (o->wide)
    for (size_t i = 0; i < d->nhosts; i++) {
      pair_label(d, &d->hosts[i], name, sizeof name);
      int l = (int)tbe__text_fit(shown, sizeof shown, name, 0);
      if (l > nw) nw = l;
    }
  long *rows;
  size_t nrows = pick_pairs(b, d, &rows);
  char line[256];
  snprintf(line, sizeof line, "Ranks: %zu matched by rank, %zu only in base (-), %zu only in new (+)%s",
           d->matched, d->only[0], d->only[1],
           d->nhosts > TBE__RUN_ROWS_ALL ? "; the ones whose step time changed most" : "");
  tbe__buf_putc(b, '\n');
  tbe__wrap(b, line, o->width);
  tbe__cell(b, hd[0], cw[0], 1);
  tbe__buf_putc(b, ' ');
  tbe__cell(b, "host", nw, 0);
  for (int c = 1; c < 7; c++) {
    tbe__buf_putc(b, ' ');
    tbe__cell(b, hd[c], cw[c], 1);
  }
  tbe__buf_putc(b, '\n');
  tbe__rule(b, nw + fixed - cw[7] - 1);
  int tested = 0;
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k] < 0) {
      tbe__buf_printf(b, "  ... %ld more pairs (every one: --format csv or json)\n", -rows[k]);
      continue;
    }
    const tbe_host_diff *p = &d->hosts[rows[k]];
    tested |= p->steps.p_value >= 0;
    snprintf(v[0], 40, "%d", (int)pair_rank(d, p));
    pair_cells(p, v, 1);
    snprintf(v[7], 40, "%s", pair_mark(p));
    tbe__cell(b, v[0], cw[0], 1);
    tbe__buf_putc(b, ' ');
    pair_label(d, p, name, sizeof name);
    fit(shown, sizeof shown, name, o->wide ? 0 : nw);
    tbe__cell(b, shown, nw, 0);
    for (int c = 1; c < 8; c++) {
      tbe__buf_putc(b, ' ');
      if (c == 7) tbe__buf_puts(b, v[c]);
      else tbe__cell(b, v[c], cw[c], 1);
    }
    while (b->len && b->data[b->len - 1] == ' ') b->len--;
    tbe__buf_putc(b, '\n');
  }
  tbe__free(b->a, rows);
  tbe__wrap(b, tested ? "step: the rank's median step time; comm: its communication kernels' "
                        "time; ~ marks a change of the step time within its steps' own noise, ! "
                        "one beyond."
                      : "step: the rank's median step time; comm: its communication kernels' time.",
            o->width);
  change_line(b, d, o);
}

static void ranks_diff_md(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  char name[1024], v[8][40];
  long *rows;
  size_t nrows = pick_pairs(b, d, &rows);
  tbe__buf_printf(b, "\n## Ranks: %zu matched by rank, %zu only in base, %zu only in new%s\n\n"
                     "| rank | host | step median base | step median new | change | change %% | "
                     "comm base | comm new | noise |\n"
                     "|---:|---|---:|---:|---:|---:|---:|---:|---|\n",
                  d->matched, d->only[0], d->only[1],
                  d->nhosts > TBE__RUN_ROWS_ALL ? "; the ranks whose step time changed most" : "");
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k] < 0) {
      tbe__buf_printf(b, "| … | %ld more pairs | | | | | | | |\n", -rows[k]);
      continue;
    }
    const tbe_host_diff *p = &d->hosts[rows[k]];
    pair_cells(p, v, 0);
    tbe__buf_printf(b, "| %d | ", (int)pair_rank(d, p));
    tbe__md_escape(b, pair_label(d, p, name, sizeof name));
    tbe__buf_printf(b, " | %s | %s | %s | %s | %s | %s | %s |\n", v[1], v[2], v[3], v[4], v[5],
                    v[6],
                    p->host[0] < 0 ? "added" : p->host[1] < 0 ? "removed"
                                     : tbe_noise_name((tbe_noise)p->steps.verdict));
  }
  tbe__free(b->a, rows);
  change_line(b, d, o);
}

static void hosts_diff_table(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  static const char *hd[9] = {"wall b", "wall n", "busy b", "busy n", "kernel b",
                              "kernel n", "step b", "step n", ""};
  static const int cw[9] = {9, 9, 6, 6, 9, 9, 9, 9, 1};
  int fixed = 0;
  for (int c = 0; c < 9; c++) fixed += cw[c] + 1;
  int nw = o->width - fixed - 1;
  if (nw < TBE__NAME_MIN) nw = TBE__NAME_MIN;
  char name[1024], shown[1024], v[9][40];
  if (o->wide)
    for (size_t i = 0; i < d->nhosts; i++) {
      pair_label(d, &d->hosts[i], name, sizeof name);
      int l = (int)tbe__text_fit(shown, sizeof shown, name, 0);
      if (l > nw) nw = l;
    }
  tbe__buf_printf(b, "\nHosts: %zu matched by %s, %zu only in base (-), %zu only in new (+)\n",
                  d->matched, d->by_rank ? "rank" : "host name", d->only[0], d->only[1]);
  tbe__cell(b, "host", nw, 0);
  for (int c = 0; c < 9; c++) {
    tbe__buf_putc(b, ' ');
    tbe__cell(b, hd[c], cw[c], c < 8);
  }
  while (b->len && b->data[b->len - 1] == ' ') b->len--;
  tbe__buf_putc(b, '\n');
  tbe__rule(b, nw + fixed);
  int tested = 0;
  long *rows;
  size_t nrows = pick_pairs(b, d, &rows);
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k] < 0) {
      tbe__buf_printf(b, "  ... %ld more pairs (every one: --format csv or json)\n", -rows[k]);
      continue;
    }
    const tbe_host_diff *p = &d->hosts[rows[k]];
    tested |= p->steps.p_value >= 0;
    pair_label(d, p, name, sizeof name);
    fit(shown, sizeof shown, name, o->wide ? 0 : nw);
    tbe__cell(b, shown, nw, 0);
    for (int s = 0; s < 2; s++) {
      const tbe_analysis *an = p->host[s] >= 0 ? d->side[s]->hosts[p->host[s]].an : NULL;
      if (!an) {
        snprintf(v[0 + s], 40, "-");
        snprintf(v[2 + s], 40, "-");
        snprintf(v[4 + s], 40, "-");
        snprintf(v[6 + s], 40, "-");
        continue;
      }
      tbe__fmt_dur(v[0 + s], 40, p->wall_ns[s]);
      snprintf(v[2 + s], 40, "%.1f%%", tbe__pct(p->busy_ns[s], p->wall_ns[s]));
      tbe__fmt_dur(v[4 + s], 40, p->kernel_ns[s]);
      if (p->steps.dist[s].n) tbe__fmt_dur(v[6 + s], 40, p->steps.dist[s].median_ns);
      else snprintf(v[6 + s], 40, "-");
    }
    snprintf(v[8], 40, "%s", pair_mark(p));
    for (int c = 0; c < 9; c++) {
      tbe__buf_putc(b, ' ');
      if (c == 8) tbe__buf_puts(b, v[c]);
      else tbe__cell(b, v[c], cw[c], 1);
    }
    while (b->len && b->data[b->len - 1] == ' ') b->len--;
    tbe__buf_putc(b, '\n');
  }
  tbe__free(b->a, rows);
  tbe__wrap(b, tested ? "busy: GPU busy %; step: the host's median step time; ~ marks a change "
                        "of it within its steps' own noise, ! one beyond (the same test as the "
                        "step time above)."
                      : "busy: GPU busy %; step: the host's median step time.",
            o->width);
  if (d->nhosts > TBE__RUN_ROWS_ALL) change_line(b, d, o);
}

static void hosts_diff_md(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  char name[1024], v[8][40];
  long *rows;
  size_t nrows = pick_pairs(b, d, &rows);
  tbe__buf_printf(b, "\n## Hosts: %zu matched by %s, %zu only in base, %zu only in new\n\n"
                     "| host | wall base | wall new | GPU busy %% base | GPU busy %% new | kernel "
                     "base | kernel new | step median base | step median new | noise |\n"
                     "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
                  d->matched, d->by_rank ? "rank" : "host name", d->only[0], d->only[1]);
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k] < 0) {
      tbe__buf_printf(b, "| … %ld more pairs | | | | | | | | | |\n", -rows[k]);
      continue;
    }
    const tbe_host_diff *p = &d->hosts[rows[k]];
    for (int s = 0; s < 2; s++) {
      int have = p->host[s] >= 0;
      if (have) tbe__fmt_dur(v[0 + s], 40, p->wall_ns[s]);
      else snprintf(v[0 + s], 40, "-");
      if (have) snprintf(v[2 + s], 40, "%.1f", tbe__pct(p->busy_ns[s], p->wall_ns[s]));
      else snprintf(v[2 + s], 40, "-");
      if (have) tbe__fmt_dur(v[4 + s], 40, p->kernel_ns[s]);
      else snprintf(v[4 + s], 40, "-");
      if (p->steps.dist[s].n) tbe__fmt_dur(v[6 + s], 40, p->steps.dist[s].median_ns);
      else snprintf(v[6 + s], 40, "-");
    }
    tbe__buf_puts(b, "| ");
    tbe__md_escape(b, pair_label(d, p, name, sizeof name));
    tbe__buf_printf(b, " | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v[0], v[1], v[2], v[3],
                    v[4], v[5], v[6], v[7],
                    p->host[0] < 0 ? "added" : p->host[1] < 0 ? "removed"
                                     : tbe_noise_name((tbe_noise)p->steps.verdict));
  }
  tbe__free(b->a, rows);
  if (d->nhosts > TBE__RUN_ROWS_ALL) change_line(b, d, o);
}

static void hosts_diff_csv(tbe__buf *b, const tbe_run_diff *d) {
  tbe__buf_puts(b, "\nsection,host_base,host_new,status,wall_base_ns,wall_new_ns,busy_base_ns,"
                   "busy_new_ns,kernel_base_ns,kernel_new_ns,nsteps_base,nsteps_new,"
                   "step_median_base_ns,step_median_new_ns,step_q1_base_ns,step_q3_base_ns,"
                   "step_q1_new_ns,step_q3_new_ns,noise,p_value,comm_base_ns,comm_new_ns,"
                   "step_change_ns,step_change_pct,rank_base,rank_new\n");
  for (size_t i = 0; i < d->nhosts; i++) {
    const tbe_host_diff *p = &d->hosts[i];
    tbe__buf_puts(b, "host,");
    for (int s = 0; s < 2; s++) {
      if (p->host[s] >= 0) tbe__csv_str(b, tbe__host_label(&d->side[s]->hosts[p->host[s]]));
      tbe__buf_putc(b, ',');
    }
    const tbe_step_dist *s0 = &p->steps.dist[0], *s1 = &p->steps.dist[1];
    tbe__buf_printf(b, "%s,%lld,%lld,%lld,%lld,%lld,%lld,%zu,%zu,%lld,%lld,%lld,%lld,%lld,%lld,%s,",
                    pair_status(p), (long long)p->wall_ns[0], (long long)p->wall_ns[1],
                    (long long)p->busy_ns[0], (long long)p->busy_ns[1], (long long)p->kernel_ns[0],
                    (long long)p->kernel_ns[1], s0->n, s1->n, (long long)s0->median_ns,
                    (long long)s1->median_ns, (long long)s0->q1_ns, (long long)s0->q3_ns,
                    (long long)s1->q1_ns, (long long)s1->q3_ns, tbe__noise_key(p->steps.verdict));
    if (p->steps.p_value >= 0) tbe__buf_printf(b, "%.6f", p->steps.p_value);
    tbe__buf_printf(b, ",%lld,%lld,", (long long)p->comm_ns[0], (long long)p->comm_ns[1]);
    if (p->has_change)
      tbe__buf_printf(b, "%lld,%.3f", (long long)p->step_change_ns, p->step_change_pct);
    else
      tbe__buf_putc(b, ',');
    for (int s = 0; s < 2; s++)
      tbe__buf_printf(b, ",%d", p->host[s] >= 0 ? (int)d->side[s]->hosts[p->host[s]].an->rank : -1);
    tbe__buf_putc(b, '\n');
  }
  const tbe_run_spread *c = &d->change_dist;
  tbe__buf_printf(b, "\nsection,pairs,min_ns,p50_ns,p90_ns,max_ns\nstep_change,%zu,%lld,%lld,%lld,%lld\n",
                  c->n, (long long)c->min_ns, (long long)c->p50_ns, (long long)c->p90_ns,
                  (long long)c->max_ns);
}

static void hosts_diff_json(tbe__buf *b, const tbe_run_diff *d) {
  tbe__buf_printf(b, ",\"hosts_matched_by\":\"%s\",\"hosts_matched\":%zu,\"hosts_only\":[%zu,%zu],"
                     "\"hosts\":[",
                  d->by_rank ? "rank" : "host", d->matched, d->only[0], d->only[1]);
  for (size_t i = 0; i < d->nhosts; i++) {
    const tbe_host_diff *p = &d->hosts[i];
    tbe__buf_puts(b, i ? ",{\"host\":[" : "{\"host\":[");
    for (int s = 0; s < 2; s++) {
      if (s) tbe__buf_putc(b, ',');
      if (p->host[s] >= 0) tbe__json_str(b, tbe__host_label(&d->side[s]->hosts[p->host[s]]));
      else tbe__buf_puts(b, "null");
    }
    tbe__buf_printf(b,
                    "],\"index\":[%ld,%ld],\"status\":\"%s\",\"wall_ns\":[%lld,%lld],"
                    "\"busy_ns\":[%lld,%lld],\"kernel_ns\":[%lld,%lld],\"steps\":",
                    p->host[0], p->host[1], pair_status(p), (long long)p->wall_ns[0],
                    (long long)p->wall_ns[1], (long long)p->busy_ns[0], (long long)p->busy_ns[1],
                    (long long)p->kernel_ns[0], (long long)p->kernel_ns[1]);
    tbe__json_step_compare(b, &p->steps);
    tbe__buf_printf(b, ",\"comm_ns\":[%lld,%lld],\"rank\":[", (long long)p->comm_ns[0],
                    (long long)p->comm_ns[1]);
    for (int s = 0; s < 2; s++)
      tbe__buf_printf(b, "%s%d", s ? "," : "",
                      p->host[s] >= 0 ? (int)d->side[s]->hosts[p->host[s]].an->rank : -1);
    if (p->has_change)
      tbe__buf_printf(b, "],\"step_change_ns\":%lld,\"step_change_pct\":%.3f}",
                      (long long)p->step_change_ns, p->step_change_pct);
    else
      tbe__buf_puts(b, "],\"step_change_ns\":null,\"step_change_pct\":null}");
  }
  const tbe_run_spread *c = &d->change_dist;
  tbe__buf_printf(b, "],\"step_change\":{\"n\":%zu,\"min_ns\":%lld,\"p50_ns\":%lld,\"p90_ns\":%lld,"
                     "\"max_ns\":%lld}",
                  c->n, (long long)c->min_ns, (long long)c->p50_ns, (long long)c->p90_ns,
                  (long long)c->max_ns);
}

/* The run diff in each format: the totals' overall figures, the hosts
 * side by side, the totals' name tables. */
void tbe__rep_run_diff_table(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  const char *lb = o->label[0] ? o->label[0] : "base";
  const char *ln = o->label[1] ? o->label[1] : "new";
  size_t n0 = d->side[0]->nhosts, n1 = d->side[1]->nhosts;
  tbe__buf_puts(b, "Comparing ");
  tbe__term(b, lb);
  tbe__buf_printf(b, " (base, %zu host%s) with ", n0, n0 == 1 ? "" : "s");
  tbe__term(b, ln);
  tbe__buf_printf(b, " (new, %zu host%s); totals over all hosts\n\n", n1, n1 == 1 ? "" : "s");
  tbe__diff_overall(b, d->total, o);
  if (per_rank_diff(d)) ranks_diff_table(b, d, o);
  else hosts_diff_table(b, d, o);
  tbe__diff_names(b, d->total, o);
  tbe__metrics_diff(b, d->total, o);
}

void tbe__rep_run_diff_csv(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  tbe__diff_overall(b, d->total, o);
  hosts_diff_csv(b, d);
  tbe__diff_names(b, d->total, o);
  tbe__metrics_diff(b, d->total, o);
}

void tbe__rep_run_diff_json(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  const char *lb = o->label[0] ? o->label[0] : "base";
  const char *ln = o->label[1] ? o->label[1] : "new";
  size_t n0 = d->side[0]->nhosts, n1 = d->side[1]->nhosts;
  tbe__buf_puts(b, "{\"base\":");
  tbe__json_str(b, lb);
  tbe__buf_puts(b, ",\"new\":");
  tbe__json_str(b, ln);
  tbe__buf_printf(b, ",\"hosts_count\":[%zu,%zu],", n0, n1);
  tbe__diff_overall(b, d->total, o);
  hosts_diff_json(b, d);
  tbe__diff_names(b, d->total, o);
  tbe__metrics_diff(b, d->total, o);
  tbe__buf_puts(b, "}\n");
}

void tbe__rep_run_diff_md(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o) {
  const char *lb = o->label[0] ? o->label[0] : "base";
  const char *ln = o->label[1] ? o->label[1] : "new";
  size_t n0 = d->side[0]->nhosts, n1 = d->side[1]->nhosts;
  tbe__buf_puts(b, "# Diff: ");
  tbe__md_escape(b, lb);
  tbe__buf_puts(b, " → ");
  tbe__md_escape(b, ln);
  tbe__buf_printf(b, "\n\n%zu hosts (base), %zu hosts (new); totals over all hosts:\n\n", n0, n1);
  tbe__diff_overall(b, d->total, o);
  if (per_rank_diff(d)) ranks_diff_md(b, d, o);
  else hosts_diff_md(b, d, o);
  tbe__diff_names(b, d->total, o);
  tbe__metrics_diff(b, d->total, o);
}
