/* report_summary.c: the summary of one analysis in the four formats
 * (the rows of the format table, report.c): a terminal table, Markdown,
 * CSV and JSON, and the parts the run report reuses (the GPU overview,
 * the name tables, the step hint, one analysis as a JSON object).
 *
 * Position: a renderer of src/trace; reads one finished analysis, writes
 * into the caller's buffer (report.h: every helper shared by the reports).
 * Each format is one function over the same parts, so the four say the
 * same thing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/text.h"
#include "tbexport/error.h"
#include "common/checked.h"
#include "trace/report/report.h"

/* ---- summary: table ---- */


static void device_label(const tbe_analysis *an, const tbe_device_stats *d, char *buf,
                         size_t size) {
  if (d->device < 0) snprintf(buf, size, "all GPUs");
  else snprintf(buf, size, "GPU %d", (int)d->device);
  (void)an;
}

#define DCOL 20

void tbe__overview(tbe__buf *b, const tbe__ocol *cols, size_t ncols, const tbe_device_stats *ref,
                   int width) {
  if (ncols == 0) {
    tbe__buf_puts(b, "No GPU activity in this trace.\n");
    return;
  }
  if (ncols > 64) ncols = 64;
  const int lw = 16;
  size_t per = (size_t)((width - lw) / (DCOL + 2));
  if (per < 1) per = 1;
  char v[64], x[32], y[32];
  for (size_t c0 = 0; c0 < ncols; c0 += per) {
    size_t c1 = c0 + per < ncols ? c0 + per : ncols;
    tbe__cell(b, "", lw, 0);
    for (size_t c = c0; c < c1; c++) {
      tbe__text_fit(v, sizeof v, cols[c].label, DCOL);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v, DCOL, 1);
    }
    tbe__buf_putc(b, '\n');
    /* Rows. */
    static const int order[17] = {15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 14};
    for (int ri = 0; ri < 17; ri++) {
      int r = order[ri];
      const char *label = NULL;
      int any = 0;
      char vals[64][64];
      for (size_t c = c0; c < c1; c++) {
        const tbe_device_stats *d = cols[c].d;
        vals[c - c0][0] = '\0';
        switch (r) {
          case 15:
            label = "name";
            if (cols[c].name && cols[c].name[0]) {
              tbe__text_fit(vals[c - c0], 64, cols[c].name, DCOL);
              any = 1;
            }
            break;
          case 0: label = "wall time"; snprintf(vals[c - c0], 64, "%s", tbe__dur(x, d->wall_ns)); any = 1; break;
          case 1:
            label = "GPU busy";
            snprintf(vals[c - c0], 64, "%s %5.1f%%", tbe__dur(x, d->busy_ns), tbe__pct(d->busy_ns, d->wall_ns));
            any = 1;
            break;
          case 2:
            label = "kernels";
            snprintf(vals[c - c0], 64, "%s %5.1f%%", tbe__dur(x, d->kernel_ns), tbe__pct(d->kernel_ns, d->wall_ns));
            any = 1;
            break;
          case 3:
            label = "kernel count";
            snprintf(vals[c - c0], 64, "%llu", (unsigned long long)d->kernel_count);
            any = 1;
            break;
          case 4: case 5: case 6: case 7: case 8: {
            static const int kinds[5] = {TBE_COPY_HTOD, TBE_COPY_DTOH, TBE_COPY_DTOD, TBE_COPY_HTOH,
                                         TBE_COPY_PTOP};
            static const char *labels[5] = {"memcpy HtoD", "memcpy DtoH", "memcpy DtoD",
                                            "memcpy HtoH", "memcpy PtoP"};
            int k = kinds[r - 4];
            label = labels[r - 4];
            if (ref->memcpy_count[k]) {
              snprintf(vals[c - c0], 64, "%s (%llu)", tbe__dur(x, d->memcpy_ns[k]),
                       (unsigned long long)d->memcpy_count[k]);
              any = 1;
            }
            break;
          }
          case 9: {
            label = "memcpy other";
            int64_t ns = 0;
            uint64_t cnt = 0, acnt = 0;
            for (int k = 0; k < TBE_NCOPY_KINDS; k++) {
              if (k == TBE_COPY_HTOD || k == TBE_COPY_DTOH || k == TBE_COPY_DTOD ||
                  k == TBE_COPY_HTOH || k == TBE_COPY_PTOP)
                continue;
              ns += d->memcpy_ns[k];
              cnt += d->memcpy_count[k];
              acnt += ref->memcpy_count[k];
            }
            if (acnt) {
              snprintf(vals[c - c0], 64, "%s (%llu)", tbe__dur(x, ns), (unsigned long long)cnt);
              any = 1;
            }
            break;
          }
          case 10:
            label = "memset";
            if (ref->memset_count) {
              snprintf(vals[c - c0], 64, "%s (%llu)", tbe__dur(x, d->memset_ns),
                       (unsigned long long)d->memset_count);
              any = 1;
            }
            break;
          case 11:
            label = "sync";
            if (ref->sync_count) {
              snprintf(vals[c - c0], 64, "%s (%llu)", tbe__dur(x, d->sync_ns),
                       (unsigned long long)d->sync_count);
              any = 1;
            }
            break;
          case 12:
            label = "idle";
            snprintf(vals[c - c0], 64, "%s %5.1f%%", tbe__dur(x, d->idle_ns), tbe__pct(d->idle_ns, d->wall_ns));
            any = 1;
            break;
          case 13:
          case 16: {
            /* the two launch medians (the legend under the table names
             * them); "-" where unknown (no launches, a run's total) */
            int64_t med = r == 13 ? d->launch_overhead_median_ns : d->queue_delay_median_ns;
            label = r == 13 ? "launch overhead" : "queue delay";
            if (ref->launch_samples) {
              snprintf(vals[c - c0], 64, "%s", med >= 0 ? tbe__dur(x, med) : "-");
              any = 1;
            }
            break;
          }
          case 14:
            label = "short kernels";
            if (ref->kernel_count) {
              snprintf(vals[c - c0], 64, "%llu (<%dus)", (unsigned long long)d->short_kernels,
                       TBE_SHORT_KERNEL_NS / 1000);
              any = 1;
            }
            break;
          default: break;
        }
        (void)y;
      }
      if (!label || !any) continue;
      tbe__cell(b, label, lw, 0);
      for (size_t c = c0; c < c1; c++) {
        tbe__buf_puts(b, "  ");
        tbe__cell(b, vals[c - c0], DCOL, 1);
      }
      tbe__buf_putc(b, '\n');
    }
    for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) { /* from the table */
      const tbe__figure *f = &tbe__figures[i];
      if (!tbe__fig_listed(f)) continue;
      int known = 0; /* a row unknown in every column is left out */
      for (size_t c = c0; c < c1 && !known; c++) known = tbe__fig_known(f, cols[c].d, 1, 0);
      if (!known) continue;
      tbe__text_fit(v, sizeof v, f->label, lw);
      tbe__cell(b, v, lw, 0);
      for (size_t c = c0; c < c1; c++) {
        tbe__fig_cell(x, sizeof x, f, cols[c].d);
        tbe__buf_puts(b, "  ");
        tbe__cell(b, x, DCOL, 1);
      }
      tbe__buf_putc(b, '\n');
    }
  }
  if (ref->launch_samples) {
    /* a column with launches but no medians: a run's total */
    int merged = 0;
    for (size_t c = 0; c < ncols; c++)
      merged |= cols[c].d->launch_samples && cols[c].d->launch_overhead_median_ns < 0;
    tbe__wrap(b,
              merged ? "(launch overhead: the median duration of the API call that launched GPU "
                       "work; queue delay: the median time from the call's return to the work's "
                       "start on the GPU; -: medians of several hosts do not add up, each host's "
                       "is in its column)"
                     : "(launch overhead: the median duration of the API call that launched GPU "
                       "work; queue delay: the median time from the call's return to the work's "
                       "start on the GPU)",
              width);
  }
}

/* The per-GPU overview of one trace: a column per GPU, and all GPUs
 * together when there are several. */
static void overview_table(tbe__buf *b, const tbe_analysis *an, int width) {
  tbe__ocol cols[65];
  char labels[65][32];
  size_t ncols = 0;
  for (size_t i = 0; i < an->ndevices && ncols < 64; i++, ncols++) {
    const tbe_device_stats *d = &an->devices[i];
    device_label(an, d, labels[ncols], sizeof labels[ncols]);
    cols[ncols].d = d;
    cols[ncols].label = labels[ncols];
    cols[ncols].name = d->name && an->trace ? tbe_trace_str(an->trace, d->name) : NULL;
  }
  if (an->ndevices > 1) {
    device_label(an, &an->all, labels[ncols], sizeof labels[ncols]);
    cols[ncols].d = &an->all;
    cols[ncols].label = labels[ncols];
    cols[ncols++].name = NULL;
  }
  tbe__overview(b, cols, ncols, &an->all, width);
}

/* The classes of `d` with any work, by time (descending, then class
 * order); returns how many (<= TBE_KCLASS__COUNT) are in order[]. */
size_t tbe__class_order(const tbe_device_stats *d, uint32_t *order) {
  size_t n = 0;
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    if (!d->class_count[k]) continue;
    size_t i = n++;
    while (i > 0 && d->class_ns[order[i - 1]] < d->class_ns[k]) {
      order[i] = order[i - 1];
      i--;
    }
    order[i] = k;
  }
  return n;
}

/* Work of all GPUs by kernel class: time, share of the classified work,
 * count (memcpy and memset records count as "copy"). */
static void class_table(tbe__buf *b, const tbe_device_stats *d, int md) {
  uint32_t order[TBE_KCLASS__COUNT];
  size_t n = tbe__class_order(d, order);
  if (!n) return;
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) total = tbe__sat_add(total, d->class_ns[order[i]]);
  char x[32];
  if (md) {
    tbe__buf_puts(b, "\n## Kernel classes\n\n| class | time | % of GPU work | count |\n"
                     "|---|---:|---:|---:|\n");
  } else {
    tbe__buf_printf(b, "\nKernel classes (%zu; memcpy and memset count as copy)\n", n);
    tbe__buf_printf(b, "%-12s  %10s  %7s  %10s\n", "class", "time", "%", "count");
    tbe__rule(b, 12 + 10 + 7 + 10 + 6);
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t k = order[i];
    tbe__fmt_dur(x, sizeof x, d->class_ns[k]);
    if (md)
      tbe__buf_printf(b, "| %s | %s | %.1f | %llu |\n", tbe_kernel_class_name(k), x,
                      tbe__pct(d->class_ns[k], total), (unsigned long long)d->class_count[k]);
    else
      tbe__buf_printf(b, "%-12s  %10s  %6.1f%%  %10llu\n", tbe_kernel_class_name(k), x,
                      tbe__pct(d->class_ns[k], total), (unsigned long long)d->class_count[k]);
  }
}

static void host_lines(tbe__buf *b, const tbe_analysis *an, int width) {
  char x[32], y[32];
  tbe__buf_printf(b, "host: busiest thread %s (%.1f%%), %llu CUDA API calls, %llu syncs (%s)\n",
                  tbe__dur(x, an->host_busy_ns), tbe__pct(an->host_busy_ns, an->wall_ns),
                  (unsigned long long)an->api_calls, (unsigned long long)an->sync_calls,
                  tbe__dur(y, an->sync_call_ns));
  tbe__profiler_line(b, an, "the capture ended early", width);
}

void tbe__profiler_line(tbe__buf *b, const tbe_analysis *an, const char *early, int width) {
  if (!an->overhead_ns && !an->dropped_records && !an->ended_early) return;
  char x[32], line[320];
  /* Named for what each counts: records outside a capture range are left
   * out on purpose (the trace's warnings say how many), not lost. */
  uint64_t zero = an->out_of_range_records, full = an->dropped_records - zero;
  snprintf(line, sizeof line,
           "profiler: overhead %s; records lost: %llu for lack of buffer space, %llu with zero or "
           "inverted timestamps%s%s",
           tbe__dur(x, an->overhead_ns), (unsigned long long)full, (unsigned long long)zero,
           an->ended_early ? "; " : "", an->ended_early ? early : "");
  tbe__wrap(b, line, width);
}

static void name_table(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                       const tbe_report_options *o) {
  size_t n = an->ngroups[g];
  if (n == 0) return;
  if (g != TBE_GROUP_KERNEL && g != TBE_GROUP_RANGE && an->op_gpu_count) {
    tbe__ops_table(b, an, g, o);
    return;
  }
  size_t top = o->top && o->top < n ? o->top : n;
  int kern = g == TBE_GROUP_KERNEL;
  /* Columns: name, calls 7, total 10, self 10 (host tables), self% 6,
   * avg 10, min 10 (kernels), max 10. */
  static const int cw[6] = {7, 10, 10, 6, 10, 10};
  int fixed = 7 + 10 + 10 + 6 + 10 + 10 + 2 * 6;
  int nw = tbe__name_width(o->width); /* as every report's (report.h) */
  char name[TBE__SHORT_MAX], x[32];
  if (o->wide) {
    for (size_t i = 0; i < top; i++) {
      tbe__name_cell(an->groups[g][i].label, nw, 1, name, sizeof name);
      size_t l = tbe__text_width(name, strlen(name));
      if ((int)l > nw) nw = (int)l;
    }
  }
  const char *hd[6] = {"calls", "total", kern ? "avg" : "self", "self%", kern ? "min" : "avg",
                       "max"};
  char *cells = tbe__names_head(b, an, g, o, top, nw, hd, cw, fixed);
  if (!cells) return;
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    snprintf(name, sizeof name, "%s", cells + i * TBE__SHORT_MAX);
    tbe__cell(b, name, nw, 0);
    int64_t avg = e->calls ? e->total_ns / (int64_t)e->calls : 0;
    char v[6][32];
    snprintf(v[0], 32, "%llu", (unsigned long long)e->calls);
    tbe__fmt_dur(v[1], 32, e->total_ns);
    tbe__fmt_dur(v[2], 32, kern ? avg : e->self_ns);
    snprintf(v[3], 32, "%.1f", tbe__pct(e->self_ns, an->group_total_ns[g]));
    tbe__fmt_dur(v[4], 32, kern ? e->min_ns : avg);
    tbe__fmt_dur(v[5], 32, e->max_ns);
    for (int c = 0; c < 6; c++) {
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v[c], cw[c], 1);
    }
    tbe__buf_putc(b, '\n');
    if (e->shapes) {
      char sh[TBE__SHORT_MAX];
      tbe__text_fit(sh, sizeof sh, e->shapes[0] ? e->shapes : "(no shapes)",
                    o->wide ? 0 : (size_t)(nw + fixed - 4));
      tbe__buf_printf(b, "    %s\n", sh);
    }
  }
  tbe__free(b->a, cells);
  (void)x;
}

/* A listed step row as a column of the terminal and Markdown steps
 * tables: known in some step. */
static int step_col(const tbe_analysis *an, const tbe__figure *f) {
  return tbe__fig_step_listed(f) && tbe__fig_known(f, an->steps, an->nsteps, sizeof *an->steps);
}

#define STEP_FIG_W 14

static void steps_table(tbe__buf *b, const tbe_analysis *an) {
  if (!an->nsteps) return;
  tbe__buf_printf(b, "\nSteps (%zu)\n", an->nsteps);
  /* time: the step on the device (tbe_step_stats); host: its host range */
  static const char *hd[6] = {"step", "time", "host", "GPU busy", "kernel time", "kernels"};
  static const int cw[6] = {10, 12, 12, 9, 12, 8};
  for (int c = 0; c < 6; c++) {
    if (c) tbe__buf_puts(b, "  ");
    tbe__cell(b, hd[c], cw[c], c != 0);
  }
  tbe__buf_putc(b, '\n');
  tbe__rule(b, 10 + 12 + 12 + 9 + 12 + 8 + 10);
  for (size_t i = 0; i < an->nsteps; i++) {
    const tbe_step_stats *s = &an->steps[i];
    char v[6][32];
    snprintf(v[0], 32, "%lld", (long long)s->num);
    tbe__fmt_dur(v[1], 32, s->dur_ns);
    tbe__fmt_dur(v[2], 32, s->host_ns);
    snprintf(v[3], 32, "%.1f%%", tbe__pct(s->gpu_busy_ns, s->dur_ns));
    tbe__fmt_dur(v[4], 32, s->kernel_ns);
    snprintf(v[5], 32, "%llu", (unsigned long long)s->kernel_count);
    for (int c = 0; c < 6; c++) {
      if (c) tbe__buf_puts(b, "  ");
      tbe__cell(b, v[c], cw[c], c != 0);
    }
    tbe__buf_putc(b, '\n');
  }
  /* The step rows of the table (memory), known in some step: a table of
   * their own, so that each fits the narrowest width. */
  size_t ncol = 0, w = 10;
  for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++)
    if (step_col(an, &tbe__figures[f])) ncol++, w += STEP_FIG_W + 2;
  if (!ncol) return;
  char x[STEP_FIG_W + 1], v[32];
  tbe__buf_puts(b, "\nMemory per step (of the GPU where it is highest)\n");
  tbe__cell(b, "step", 10, 0);
  for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) {
    if (!step_col(an, &tbe__figures[f])) continue;
    tbe__text_fit(x, sizeof x, tbe__figures[f].label, STEP_FIG_W);
    tbe__buf_puts(b, "  ");
    tbe__cell(b, x, STEP_FIG_W, 1);
  }
  tbe__buf_putc(b, '\n');
  tbe__rule(b, (int)w);
  for (size_t i = 0; i < an->nsteps; i++) {
    const tbe_step_stats *s = &an->steps[i];
    snprintf(v, sizeof v, "%lld", (long long)s->num);
    tbe__cell(b, v, 10, 0);
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) {
      if (!step_col(an, &tbe__figures[f])) continue;
      tbe__fig_cell(v, sizeof v, &tbe__figures[f], s);
      tbe__buf_puts(b, "  ");
      tbe__cell(b, v, STEP_FIG_W, 1);
    }
    tbe__buf_putc(b, '\n');
  }
}

static void advice_lines(tbe__buf *b, const tbe_analysis *an, int md) {
  if (!an->nadvice) return;
  tbe__buf_puts(b, md ? "\n## Advice\n\n" : "\nAdvice\n");
  for (size_t i = 0; i < an->nadvice; i++) {
    tbe__buf_puts(b, "- ");
    if (md) tbe__md_escape(b, an->advice[i].text);
    else tbe__term(b, an->advice[i].text);
    tbe__buf_putc(b, '\n');
  }
}

/* ---- the step hint ---- */

/* The flag that makes the hinted range the step: "--steps nvtx:NAME",
 * shell-quoted when needed. */
void tbe__step_hint_flag(tbe__buf *b, const tbe_analysis *an) {
  tbe__buf_puts(b, "--steps ");
  tbe__buf t;
  tbe__buf_init(&t, b->a);
  tbe__buf_puts(&t, "nvtx:");
  tbe__buf_puts(&t, an->step_hint);
  tbe__buf_putc(&t, '\0');
  if (tbe__buf_error(&t)) b->err = t.err;
  else tbe__shell_word(b, (const char *)t.data);
  tbe__buf_deinit(&t);
}

/* The sentence naming the range that looks like the iteration, in the
 * table (wrapped at the width) or Markdown form; nothing without a hint.
 * `where` says whose figures they are (NULL: this trace's). */
void tbe__step_hint_text(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o,
                         const char *where, const char *whole) {
  if (!an->step_hint) return;
  int md = o->format == TBE_REPORT_MARKDOWN;
  tbe__buf t, flag;
  tbe__buf_init(&t, b->a);
  tbe__buf_init(&flag, b->a);
  tbe__step_hint_flag(&flag, an);
  /* Markdown: the flag is a code span, fenced by one backtick more than
   * the longest run of them in it (a range name may hold backticks). */
  size_t run = 0, longest = 0;
  for (size_t i = 0; i < flag.len; i++) {
    run = flag.data[i] == '`' ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  tbe__buf_printf(&t, "%sNo steps %s. The %s \"", md ? "**Steps:** " : "",
                  whole ? whole : "in this trace",
                  an->step_hint_kind == TBE_EV_USER_ANNOTATION ? "user annotation" : "NVTX range");
  if (md) tbe__md_escape(&t, an->step_hint);
  else tbe__term(&t, an->step_hint);
  tbe__buf_printf(&t, "\" looks like the iteration (%s%s%llu times at the top of one host thread, "
                      "%.1f%% of the wall time): for per-step figures, profile or import again "
                      "with ",
                  where ? where : "", where ? ": " : "", (unsigned long long)an->step_hint_count,
                  tbe__pct(an->step_hint_ns, an->wall_ns));
  for (size_t i = 0; md && i <= longest; i++) tbe__buf_putc(&t, '`');
  if (md && longest) tbe__buf_putc(&t, ' ');
  size_t at = t.len;
  tbe__buf_append(&t, flag.data, flag.len);
  if (!md) /* keep the flag on one line */
    for (size_t i = at; i < t.len; i++)
      if (t.data[i] == ' ') t.data[i] = '\x01';
  if (md && longest) tbe__buf_putc(&t, ' ');
  for (size_t i = 0; md && i <= longest; i++) tbe__buf_putc(&t, '`');
  tbe__buf_puts(&t, md ? ".\n" : ".");
  tbe__buf_putc(&t, '\0');
  if (tbe__buf_error(&flag)) t.err = flag.err;
  if (tbe__buf_error(&t)) {
    b->err = t.err;
  } else {
    tbe__buf_putc(b, '\n');
    if (md) tbe__buf_puts(b, (const char *)t.data);
    else tbe__wrap(b, (const char *)t.data, o->width);
  }
  tbe__buf_deinit(&flag);
  tbe__buf_deinit(&t);
}

/* The hint as CSV (its own section) or as the value of a JSON member. */
void tbe__step_hint_csv(tbe__buf *b, const tbe_analysis *an, const char *host, int header) {
  if (!an->step_hint) return;
  if (header)
    tbe__buf_printf(b, "\nsection,%sname,kind,count,total_ns,wall_pct,flag\n", host ? "host," : "");
  tbe__buf_puts(b, "step_hint,");
  if (host) {
    tbe__csv_str(b, host);
    tbe__buf_putc(b, ',');
  }
  tbe__csv_str(b, an->step_hint);
  tbe__buf_printf(b, ",%s,%llu,%lld,%.2f,",
                  an->step_hint_kind == TBE_EV_USER_ANNOTATION ? "user_annotation" : "nvtx",
                  (unsigned long long)an->step_hint_count, (long long)an->step_hint_ns,
                  tbe__pct(an->step_hint_ns, an->wall_ns));
  tbe__buf t;
  tbe__buf_init(&t, b->a);
  tbe__step_hint_flag(&t, an);
  tbe__buf_putc(&t, '\0');
  if (tbe__buf_error(&t)) b->err = t.err;
  else tbe__csv_str(b, (const char *)t.data);
  tbe__buf_deinit(&t);
  tbe__buf_putc(b, '\n');
}

void tbe__step_hint_json(tbe__buf *b, const tbe_analysis *an) {
  if (!an->step_hint) {
    tbe__buf_puts(b, "null");
    return;
  }
  tbe__buf_puts(b, "{\"name\":");
  tbe__json_str(b, an->step_hint);
  tbe__buf_printf(b, ",\"kind\":\"%s\",\"count\":%llu,\"total_ns\":%lld,\"flag\":",
                  an->step_hint_kind == TBE_EV_USER_ANNOTATION ? "user_annotation" : "nvtx",
                  (unsigned long long)an->step_hint_count, (long long)an->step_hint_ns);
  tbe__buf t;
  tbe__buf_init(&t, b->a);
  tbe__step_hint_flag(&t, an);
  tbe__buf_putc(&t, '\0');
  if (tbe__buf_error(&t)) b->err = t.err;
  else tbe__json_str(b, (const char *)t.data);
  tbe__buf_deinit(&t);
  tbe__buf_putc(b, '}');
}

void tbe__json_dist(tbe__buf *b, const tbe_step_dist *d) {
  tbe__buf_printf(b,
                  "{\"n\":%zu,\"median_ns\":%lld,\"q1_ns\":%lld,\"q3_ns\":%lld,\"min_ns\":%lld,"
                  "\"max_ns\":%lld}",
                  d->n, (long long)d->median_ns, (long long)d->q1_ns, (long long)d->q3_ns,
                  (long long)d->min_ns, (long long)d->max_ns);
}

/* ---- summary: table (continued) ---- */

static void summary_header(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o) {
  const tbe_trace *t = an->trace;
  char x[32];
  if (o->label[0]) {
    tbe__buf_puts(b, "Trace ");
    tbe__term(b, o->label[0]);
    tbe__buf_putc(b, '\n');
  }
  tbe__buf_printf(b, "wall %s, %zu GPU%s, %llu kernels, %zu steps", tbe__dur(x, an->wall_ns),
                  an->ndevices, an->ndevices == 1 ? "" : "s",
                  (unsigned long long)an->all.kernel_count, an->nsteps);
  if (t->host) {
    tbe__buf_puts(b, ", host ");
    tbe__term(b, tbe_trace_str(t, t->host));
  }
  tbe__buf_putc(b, '\n');
  for (size_t i = 0; i < t->nwarnings; i++) {
    tbe__buf_puts(b, "warning: ");
    tbe__term(b, tbe_trace_str(t, t->warnings[i]));
    tbe__buf_putc(b, '\n');
  }
}

void tbe__rep_summary_table(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  summary_header(b, an, o);
  tbe__buf_putc(b, '\n');
  overview_table(b, an, o->width);
  host_lines(b, an, o->width);
  tbe__ops_line(b, an, o->width);
  tbe__metrics_gpu(b, an, 0);
  class_table(b, &an->all, 0);
  tbe_group_kind gs[3];
  size_t ng = tbe__report_groups(an, o, gs);
  for (size_t i = 0; i < ng; i++) name_table(b, an, gs[i], o);
  tbe__metrics_kernels(b, an, o, 0);
  steps_table(b, an);
  tbe__step_hint_text(b, an, o, NULL, NULL);
  advice_lines(b, an, 0);
}

/* ---- summary: markdown ---- */

void tbe__md_kernels(tbe__buf *b, const tbe_analysis *an, size_t top, int wide) {
  size_t n = an->ngroups[TBE_GROUP_KERNEL];
  if (top == 0 || top > n) top = n;
  char name[TBE__SHORT_MAX], v[6][32];
  tbe__buf_puts(b, "| kernel | calls | total | self % | avg | min | max |\n"
                   "|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[TBE_GROUP_KERNEL][i];
    const char *full = e->label;
    if (wide) tbe__full_name(full, name, sizeof name);
    else tbe_name_shorten(full, 80, name, sizeof name);
    int64_t avg = e->calls ? e->total_ns / (int64_t)e->calls : 0;
    tbe__fmt_dur(v[1], 32, e->total_ns);
    tbe__fmt_dur(v[2], 32, avg);
    tbe__fmt_dur(v[3], 32, e->min_ns);
    tbe__fmt_dur(v[4], 32, e->max_ns);
    tbe__buf_puts(b, "| ");
    tbe__md_escape(b, name);
    tbe__buf_printf(b, " | %llu | %s | %.1f | %s | %s | %s |\n", (unsigned long long)e->calls,
                    v[1], tbe__pct(e->self_ns, an->group_total_ns[TBE_GROUP_KERNEL]), v[2], v[3], v[4]);
  }
}

static void md_group(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                     const tbe_report_options *o) {
  size_t n = an->ngroups[g];
  if (!n) return;
  size_t top = o->top && o->top < n ? o->top : n;
  tbe__buf_printf(b, "\n## %s (%zu of %zu%s)\n\n", tbe__group_title(g), top, n,
                  tbe__shape_note(an, g, o));
  if (g == TBE_GROUP_KERNEL) {
    tbe__md_kernels(b, an, top, o->wide);
    return;
  }
  if (g != TBE_GROUP_RANGE && an->op_gpu_count) {
    tbe__ops_md(b, an, g, top, o->wide);
    return;
  }
  char name[TBE__SHORT_MAX], v[5][32];
  int shapes = g == TBE_GROUP_CPU_OP_SHAPE;
  tbe__buf_printf(b, "| name |%s calls | total | self | self %% | avg | max |\n"
                     "|---|%s---:|---:|---:|---:|---:|---:|\n",
                  shapes ? " input shapes |" : "", shapes ? "---|" : "");
  for (size_t i = 0; i < top; i++) {
    const tbe_name_stats *e = &an->groups[g][i];
    const char *full = e->label;
    if (o->wide) tbe__full_name(full, name, sizeof name);
    else tbe_name_shorten(full, 80, name, sizeof name);
    int64_t avg = e->calls ? e->total_ns / (int64_t)e->calls : 0;
    tbe__fmt_dur(v[0], 32, e->total_ns);
    tbe__fmt_dur(v[1], 32, e->self_ns);
    tbe__fmt_dur(v[2], 32, avg);
    tbe__fmt_dur(v[3], 32, e->max_ns);
    tbe__buf_puts(b, "| ");
    tbe__md_escape(b, name);
    if (shapes) {
      tbe__buf_puts(b, " | ");
      tbe__md_escape(b, e->shapes ? e->shapes : "");
    }
    tbe__buf_printf(b, " | %llu | %s | %s | %.1f | %s | %s |\n", (unsigned long long)e->calls,
                    v[0], v[1], tbe__pct(e->self_ns, an->group_total_ns[g]), v[2], v[3]);
  }
}

/* A listed row as a column of the Markdown device table: known for some
 * GPU or for all of them together. */
static int md_listed(const tbe_analysis *an, const tbe__figure *f) {
  return tbe__fig_listed(f) && (tbe__fig_known(f, an->devices, an->ndevices, sizeof *an->devices) ||
                                tbe__fig_known(f, &an->all, 1, 0));
}

void tbe__rep_summary_md(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  char x[32], y[32];
  tbe__buf_puts(b, "# Summary");
  if (o->label[0]) {
    tbe__buf_puts(b, ": ");
    tbe__md_escape(b, o->label[0]);
  }
  tbe__buf_printf(b, "\n\nWall time %s, %llu kernels, %zu steps.\n\n", tbe__dur(x, an->wall_ns),
                  (unsigned long long)an->all.kernel_count, an->nsteps);
  tbe__buf_puts(b,
                "| device | busy | busy % | kernels | kernel count | memcpy | memset | sync | "
                "idle | launch overhead | queue delay |");
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++)
    if (md_listed(an, &tbe__figures[i])) tbe__buf_printf(b, " %s |", tbe__figures[i].label);
  tbe__buf_puts(b, "\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++)
    if (md_listed(an, &tbe__figures[i])) tbe__buf_puts(b, "---:|");
  tbe__buf_putc(b, '\n');
  for (size_t i = 0; i <= an->ndevices; i++) {
    const tbe_device_stats *d = i < an->ndevices ? &an->devices[i] : &an->all;
    if (i == an->ndevices && an->ndevices == 1) break;
    int64_t cp = 0;
    for (int k = 0; k < TBE_NCOPY_KINDS; k++) cp += d->memcpy_ns[k];
    char v[6][32];
    tbe__fmt_dur(v[0], 32, d->busy_ns);
    tbe__fmt_dur(v[1], 32, d->kernel_ns);
    tbe__fmt_dur(v[2], 32, cp);
    tbe__fmt_dur(v[3], 32, d->memset_ns);
    tbe__fmt_dur(v[4], 32, d->sync_ns);
    tbe__fmt_dur(v[5], 32, d->idle_ns);
    char lab[32], z[32];
    device_label(an, d, lab, sizeof lab);
    tbe__buf_printf(
        b, "| %s | %s | %.1f | %s | %llu | %s | %s | %s | %s | %s | %s |", lab, v[0],
        tbe__pct(d->busy_ns, d->wall_ns), v[1], (unsigned long long)d->kernel_count, v[2], v[3],
        v[4], v[5],
        d->launch_overhead_median_ns >= 0 ? tbe__dur(y, d->launch_overhead_median_ns) : "-",
        d->queue_delay_median_ns >= 0 ? tbe__dur(z, d->queue_delay_median_ns) : "-");
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) {
      if (!md_listed(an, &tbe__figures[f])) continue;
      tbe__fig_cell(z, sizeof z, &tbe__figures[f], d);
      tbe__buf_printf(b, " %s |", z);
    }
    tbe__buf_putc(b, '\n');
  }
  if (an->all.launch_samples)
    tbe__buf_puts(b,
                  "\nLaunch overhead: the median duration of the API call that launched GPU "
                  "work; queue delay: the median time from the call's return to the work's "
                  "start on the GPU.\n");
  tbe__metrics_gpu(b, an, 1);
  class_table(b, &an->all, 1);
  tbe_group_kind gs[3];
  size_t ng = tbe__report_groups(an, o, gs);
  for (size_t i = 0; i < ng; i++) md_group(b, an, gs[i], o);
  tbe__metrics_kernels(b, an, o, 1);
  if (an->nsteps) {
    tbe__buf_puts(b, "\n## Steps\n\n| step | time | host | GPU busy % | kernel time | kernels |");
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++)
      if (step_col(an, &tbe__figures[f])) tbe__buf_printf(b, " %s |", tbe__figures[f].label);
    tbe__buf_puts(b, "\n|---:|---:|---:|---:|---:|---:|");
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++)
      if (step_col(an, &tbe__figures[f])) tbe__buf_puts(b, "---:|");
    tbe__buf_putc(b, '\n');
    for (size_t i = 0; i < an->nsteps; i++) {
      const tbe_step_stats *s = &an->steps[i];
      char h[32];
      tbe__fmt_dur(h, sizeof h, s->host_ns);
      tbe__buf_printf(b, "| %lld | %s | %s | %.1f | %s | %llu |", (long long)s->num,
                      tbe__dur(x, s->dur_ns), h, tbe__pct(s->gpu_busy_ns, s->dur_ns),
                      tbe__dur(y, s->kernel_ns), (unsigned long long)s->kernel_count);
      for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) {
        if (!step_col(an, &tbe__figures[f])) continue;
        tbe__fig_cell(h, sizeof h, &tbe__figures[f], s);
        tbe__buf_printf(b, " %s |", h);
      }
      tbe__buf_putc(b, '\n');
    }
  }
  tbe__step_hint_text(b, an, o, NULL, NULL);
  advice_lines(b, an, 1);
}

/* ---- summary: CSV ---- */

static void names_csv(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o) {
  tbe__buf_puts(b, "\nsection,name,calls,total_ns,self_ns,self_pct,avg_ns,min_ns,max_ns,class,"
                   "self_cuda_ns,cuda_total_ns,kernels,shapes\n");
  tbe_group_kind gs[3];
  size_t ng = tbe__report_groups(an, o, gs);
  for (size_t gi = 0; gi < ng; gi++) {
    tbe_group_kind g = gs[gi];
    size_t n = an->ngroups[g], top = o->top && o->top < n ? o->top : n;
    for (size_t i = 0; i < top; i++) {
      const tbe_name_stats *e = &an->groups[g][i];
      tbe__buf_printf(b, "%s,", tbe_group_name((tbe_group_kind)g));
      tbe__csv_str(b, e->label);
      tbe__buf_printf(b, ",%llu,%lld,%lld,%.2f,%lld,%lld,%lld,%s", (unsigned long long)e->calls,
                      (long long)e->total_ns, (long long)e->self_ns,
                      tbe__pct(e->self_ns, an->group_total_ns[g]),
                      (long long)(e->calls ? e->total_ns / (int64_t)e->calls : 0),
                      (long long)e->min_ns, (long long)e->max_ns,
                      g == TBE_GROUP_KERNEL ? tbe_kernel_class_name(e->kclass) : "");
      if (g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE) tbe__ops_csv_fields(b, e);
      else tbe__buf_puts(b, ",,,,");
      tbe__buf_putc(b, '\n');
    }
  }
  tbe__ops_csv_launched(b, an, gs[1], o->top);
}

void tbe__summary_names(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o) {
  tbe_group_kind gs[3];
  size_t ng = tbe__report_groups(an, o, gs);
  for (size_t i = 0; i < ng && o->format == TBE_REPORT_TABLE; i++) name_table(b, an, gs[i], o);
  for (size_t i = 0; i < ng && o->format == TBE_REPORT_MARKDOWN; i++) md_group(b, an, gs[i], o);
  if (o->format == TBE_REPORT_CSV) names_csv(b, an, o);
  if (o->format == TBE_REPORT_CSV) tbe__metrics_csv(b, an, o);
}

void tbe__rep_summary_csv(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  tbe__buf_puts(b,
                "section,device,wall_ns,busy_ns,kernel_ns,kernel_count,memcpy_htod_ns,"
                "memcpy_dtoh_ns,memcpy_dtod_ns,memcpy_other_ns,memset_ns,sync_ns,idle_ns,"
                "launch_median_ns,launch_overhead_median_ns,queue_delay_median_ns");
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++)
    if (tbe__fig_listed(&tbe__figures[i])) tbe__buf_printf(b, ",%s", tbe__figures[i].key);
  tbe__buf_putc(b, '\n');
  for (size_t i = 0; i <= an->ndevices; i++) {
    const tbe_device_stats *d = i < an->ndevices ? &an->devices[i] : &an->all;
    int64_t other = 0;
    for (int k = 0; k < TBE_NCOPY_KINDS; k++)
      if (k != TBE_COPY_HTOD && k != TBE_COPY_DTOH && k != TBE_COPY_DTOD) other += d->memcpy_ns[k];
    char dev[16];
    if (d->device < 0) snprintf(dev, sizeof dev, "all");
    else snprintf(dev, sizeof dev, "%d", (int)d->device);
    tbe__buf_printf(b, "device,%s,%lld,%lld,%lld,%llu,%lld,%lld,%lld,%lld,%lld,%lld,%lld,", dev,
                    (long long)d->wall_ns, (long long)d->busy_ns, (long long)d->kernel_ns,
                    (unsigned long long)d->kernel_count, (long long)d->memcpy_ns[TBE_COPY_HTOD],
                    (long long)d->memcpy_ns[TBE_COPY_DTOH], (long long)d->memcpy_ns[TBE_COPY_DTOD],
                    (long long)other, (long long)d->memset_ns, (long long)d->sync_ns,
                    (long long)d->idle_ns);
    tbe__csv_launch(b, d->launch_median_ns, d->launch_overhead_median_ns, d->queue_delay_median_ns);
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) {
      if (!tbe__fig_listed(&tbe__figures[f])) continue;
      tbe__buf_putc(b, ',');
      tbe__fig_csv(b, &tbe__figures[f], d);
    }
    tbe__buf_putc(b, '\n');
  }
  uint32_t order[TBE_KCLASS__COUNT];
  size_t ncls = tbe__class_order(&an->all, order);
  if (ncls) {
    tbe__buf_puts(b, "\nsection,class,ns,count\n");
    for (size_t i = 0; i < ncls; i++)
      tbe__buf_printf(b, "class,%s,%lld,%llu\n", tbe_kernel_class_name(order[i]),
                      (long long)an->all.class_ns[order[i]],
                      (unsigned long long)an->all.class_count[order[i]]);
  }
  tbe__summary_names(b, an, o);
  if (an->nsteps) {
    tbe__buf_puts(b, "\nsection,step,start_ns,dur_ns,host_ns,gpu_busy_ns,kernel_ns,kernel_count,"
                     "memcpy_ns,memset_ns,sync_ns,launch_median_ns");
    for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++)
      tbe__buf_printf(b, ",%s_ns", tbe_kernel_class_name(k));
    tbe__buf_puts(b, ",launch_overhead_median_ns,queue_delay_median_ns");
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++)
      if (tbe__fig_step_listed(&tbe__figures[f])) tbe__buf_printf(b, ",%s", tbe__figures[f].key);
    tbe__buf_putc(b, '\n');
    for (size_t i = 0; i < an->nsteps; i++) {
      const tbe_step_stats *s = &an->steps[i];
      tbe__buf_printf(b, "step,%lld,%lld,%lld,%lld,%lld,%lld,%llu,%lld,%lld,%lld,",
                      (long long)s->num, (long long)s->start_ns, (long long)s->dur_ns,
                      (long long)s->host_ns, (long long)s->gpu_busy_ns, (long long)s->kernel_ns,
                      (unsigned long long)s->kernel_count, (long long)s->memcpy_ns,
                      (long long)s->memset_ns, (long long)s->sync_ns);
      tbe__csv_ns(b, s->launch_median_ns);
      for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++)
        tbe__buf_printf(b, ",%lld", (long long)s->class_ns[k]);
      tbe__buf_putc(b, ',');
      tbe__csv_ns(b, s->launch_overhead_median_ns);
      tbe__buf_putc(b, ',');
      tbe__csv_ns(b, s->queue_delay_median_ns);
      for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) {
        if (!tbe__fig_step_listed(&tbe__figures[f])) continue;
        tbe__buf_putc(b, ',');
        tbe__fig_csv(b, &tbe__figures[f], s);
      }
      tbe__buf_putc(b, '\n');
    }
  }
  tbe__step_hint_csv(b, an, NULL, 1);
  if (an->nadvice) {
    tbe__buf_puts(b, "\nsection,kind,figure,text\n");
    for (size_t i = 0; i < an->nadvice; i++) {
      tbe__buf_printf(b, "advice,%u,%.3f,", an->advice[i].kind, an->advice[i].figure);
      tbe__csv_str(b, an->advice[i].text);
      tbe__buf_putc(b, '\n');
    }
  }
}

/* ---- summary: JSON ---- */

static void json_device(tbe__buf *b, const tbe_analysis *an, const tbe_device_stats *d) {
  static const char *copy[TBE_NCOPY_KINDS] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                              "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  tbe__buf_printf(b, "{\"device\":%d,\"name\":", (int)d->device);
  tbe__json_str(b, an->trace && d->name ? tbe_trace_str(an->trace, d->name) : "");
  tbe__buf_printf(b,
                  ",\"wall_ns\":%lld,\"busy_ns\":%lld,\"busy_pct\":%.3f,\"idle_ns\":%lld,"
                  "\"kernel_ns\":%lld,\"kernel_count\":%llu,\"short_kernels\":%llu,"
                  "\"memset_ns\":%lld,\"memset_count\":%llu,\"sync_ns\":%lld,\"sync_count\":%llu,"
                  "\"pageable_ns\":%lld,\"pageable_count\":%llu,\"launch_median_ns\":",
                  (long long)d->wall_ns, (long long)d->busy_ns, tbe__pct(d->busy_ns, d->wall_ns),
                  (long long)d->idle_ns, (long long)d->kernel_ns,
                  (unsigned long long)d->kernel_count, (unsigned long long)d->short_kernels,
                  (long long)d->memset_ns, (unsigned long long)d->memset_count,
                  (long long)d->sync_ns, (unsigned long long)d->sync_count,
                  (long long)d->pageable_ns, (unsigned long long)d->pageable_count);
  tbe__json_launch(b, d->launch_median_ns, d->launch_overhead_median_ns, d->queue_delay_median_ns);
  tbe__buf_printf(b, ",\"launch_samples\":%llu", (unsigned long long)d->launch_samples);
  for (size_t i = TBE__FIG_LISTED; i < TBE__FIG__COUNT; i++) {
    if (!tbe__fig_listed(&tbe__figures[i])) continue;
    tbe__buf_printf(b, ",\"%s\":", tbe__figures[i].key);
    tbe__fig_json(b, &tbe__figures[i], d);
  }
  tbe__buf_puts(b, ",\"memcpy\":{");
  int first = 1;
  for (int k = 0; k < TBE_NCOPY_KINDS; k++) {
    if (!d->memcpy_count[k]) continue;
    tbe__buf_printf(b, "%s\"%s\":{\"ns\":%lld,\"count\":%llu,\"bytes\":%llu}", first ? "" : ",",
                    copy[k], (long long)d->memcpy_ns[k], (unsigned long long)d->memcpy_count[k],
                    (unsigned long long)d->memcpy_bytes[k]);
    first = 0;
  }
  tbe__buf_puts(b, "},\"classes\":{");
  first = 1;
  for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++) {
    if (!d->class_count[k]) continue;
    tbe__buf_printf(b, "%s\"%s\":{\"ns\":%lld,\"count\":%llu}", first ? "" : ",",
                    tbe_kernel_class_name(k), (long long)d->class_ns[k],
                    (unsigned long long)d->class_count[k]);
    first = 0;
  }
  tbe__buf_putc(b, '}');
  tbe__metrics_json_gpu(b, an, d->metrics);
  tbe__buf_putc(b, '}');
}

void tbe__summary_json(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o,
                       const char *label) {
  const tbe_trace *t = an->trace;
  tbe__buf_puts(b, "{\"label\":");
  tbe__json_str(b, label ? label : "");
  tbe__buf_puts(b, ",\"host\":");
  tbe__json_str(b, an->host ? an->host : "");
  tbe__buf_printf(b, ",\"pid\":%lld,\"rank\":%d,\"world_size\":%d", (long long)an->pid,
                  (int)an->rank, (int)an->world_size);
  tbe__buf_printf(b,
                  ",\"start_ns\":%lld,\"wall_ns\":%lld,\"host_busy_ns\":%lld,\"api_calls\":%llu,"
                  "\"sync_calls\":%llu,\"sync_call_ns\":%lld,\"overhead_ns\":%lld,"
                  "\"dropped_records\":%llu,\"out_of_range_records\":%llu,\"ended_early\":%s,"
                  "\"devices\":[",
                  (long long)an->start_ns, (long long)an->wall_ns, (long long)an->host_busy_ns,
                  (unsigned long long)an->api_calls, (unsigned long long)an->sync_calls,
                  (long long)an->sync_call_ns, (long long)an->overhead_ns,
                  (unsigned long long)an->dropped_records,
                  (unsigned long long)an->out_of_range_records, an->ended_early ? "true" : "false");
  for (size_t i = 0; i < an->ndevices; i++) {
    if (i) tbe__buf_putc(b, ',');
    json_device(b, an, &an->devices[i]);
  }
  tbe__buf_puts(b, "],\"all\":");
  json_device(b, an, &an->all);
  char name[TBE__SHORT_MAX];
  tbe_group_kind gs[3];
  size_t ng = tbe__report_groups(an, o, gs);
  tbe__buf_printf(b, ",\"op_gpu_count\":%llu,\"op_gpu_ns\":%lld,\"cpu_ops_by\":\"%s\"",
                  (unsigned long long)an->op_gpu_count, (long long)an->op_gpu_ns,
                  gs[1] == TBE_GROUP_CPU_OP_SHAPE ? "shape" : "name");
  for (size_t gi = 0; gi < ng; gi++) {
    tbe_group_kind g = gs[gi];
    size_t n = an->ngroups[g], top = o->top && o->top < n ? o->top : n;
    /* the operator table is "cpu_ops" whichever way it is grouped */
    tbe__buf_printf(b, ",\"%s\":[",
                    tbe_group_name(g == TBE_GROUP_CPU_OP_SHAPE ? TBE_GROUP_CPU_OP : g));
    for (size_t i = 0; i < top; i++) {
      const tbe_name_stats *e = &an->groups[g][i];
      const char *full = e->label;
      tbe_name_shorten(full, 0, name, sizeof name);
      tbe__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
      tbe__json_str(b, full);
      tbe__buf_puts(b, ",\"short_name\":");
      tbe__json_str(b, name);
      tbe__buf_printf(b,
                      ",\"calls\":%llu,\"total_ns\":%lld,\"self_ns\":%lld,\"self_pct\":%.3f,"
                      "\"avg_ns\":%lld,\"min_ns\":%lld,\"max_ns\":%lld",
                      (unsigned long long)e->calls, (long long)e->total_ns, (long long)e->self_ns,
                      tbe__pct(e->self_ns, an->group_total_ns[g]),
                      (long long)(e->calls ? e->total_ns / (int64_t)e->calls : 0),
                      (long long)e->min_ns, (long long)e->max_ns);
      if (g == TBE_GROUP_KERNEL) {
        tbe__buf_printf(b, ",\"class\":\"%s\"", tbe_kernel_class_name(e->kclass));
        tbe__metrics_json_kernel(b, an, e);
      }
      if (g == TBE_GROUP_CPU_OP || g == TBE_GROUP_CPU_OP_SHAPE) tbe__ops_json_fields(b, an, e);
      if (e->step_ns) {
        tbe__buf_puts(b, ",\"step_ns\":[");
        for (size_t s = 0; s < an->nsteps; s++)
          tbe__buf_printf(b, "%s%lld", s ? "," : "", (long long)e->step_ns[s]);
        tbe__buf_putc(b, ']');
      }
      tbe__buf_putc(b, '}');
    }
    tbe__buf_putc(b, ']');
  }
  tbe__buf_puts(b, ",\"steps\":[");
  for (size_t i = 0; i < an->nsteps; i++) {
    const tbe_step_stats *s = &an->steps[i];
    tbe__buf_printf(b,
                    "%s{\"step\":%lld,\"start_ns\":%lld,\"dur_ns\":%lld,\"host_ns\":%lld,"
                    "\"gpu_busy_ns\":%lld,\"kernel_ns\":%lld,\"kernel_count\":%llu,"
                    "\"memcpy_ns\":%lld,\"memset_ns\":%lld,\"sync_ns\":%lld,"
                    "\"launch_median_ns\":",
                    i ? "," : "", (long long)s->num, (long long)s->start_ns, (long long)s->dur_ns,
                    (long long)s->host_ns, (long long)s->gpu_busy_ns, (long long)s->kernel_ns,
                    (unsigned long long)s->kernel_count, (long long)s->memcpy_ns,
                    (long long)s->memset_ns, (long long)s->sync_ns);
    tbe__json_launch(b, s->launch_median_ns, s->launch_overhead_median_ns,
                     s->queue_delay_median_ns);
    tbe__buf_puts(b, ",\"classes\":{");
    for (uint32_t k = 0; k < TBE_KCLASS__COUNT; k++)
      tbe__buf_printf(b, "%s\"%s\":%lld", k ? "," : "", tbe_kernel_class_name(k),
                      (long long)s->class_ns[k]);
    tbe__buf_putc(b, '}');
    tbe__metrics_json_gpu(b, an, s->metrics);
    for (size_t f = TBE__FIG_LISTED; f < TBE__FIG__COUNT; f++) {
      if (!tbe__fig_step_listed(&tbe__figures[f])) continue;
      tbe__buf_printf(b, ",\"%s\":", tbe__figures[f].key);
      tbe__fig_json(b, &tbe__figures[f], s);
    }
    tbe__buf_putc(b, '}');
  }
  tbe__buf_puts(b, "],\"step_stats\":");
  tbe__json_dist(b, &an->step_dist);
  tbe__buf_puts(b, ",\"step_hint\":");
  tbe__step_hint_json(b, an);
  tbe__buf_puts(b, ",\"advice\":[");
  for (size_t i = 0; i < an->nadvice; i++) {
    tbe__buf_printf(b, "%s{\"kind\":%u,\"figure\":%.6g,\"text\":", i ? "," : "",
                    an->advice[i].kind, an->advice[i].figure);
    tbe__json_str(b, an->advice[i].text);
    tbe__buf_putc(b, '}');
  }
  tbe__buf_puts(b, "],\"warnings\":[");
  for (size_t i = 0; t && i < t->nwarnings; i++) {
    if (i) tbe__buf_putc(b, ',');
    tbe__json_str(b, tbe_trace_str(t, t->warnings[i]));
  }
  tbe__buf_puts(b, "]}");
}

void tbe__rep_summary_json(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o) {
  tbe__summary_json(b, an, o, o->label[0]);
  tbe__buf_putc(b, '\n');
}
