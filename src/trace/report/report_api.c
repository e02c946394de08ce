/* report_api.c: the four reports' entry points (tbe_report_summary,
 * tbe_report_diff, tbe_report_run, tbe_report_run_diff) and the format
 * table they dispatch on: a row per output format, a renderer per report
 * in each row.
 *
 * Position: the top of src/trace/report.  Each entry point checks the
 * options, prepares the analyses and calls its format's renderer in
 * report_summary.c, report_diff.c or report_run.c; those call down
 * (report_metrics.c, report_ops.c, report.c's helpers) and never back up
 * here, so the folder has no circle.  A renderer that needs another
 * report's part in its own format (a run diff's overall comparison) calls
 * that part's own dispatch (report_diff.c: tbe__diff_overall), not this
 * table. */
#include <stddef.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "tbexport/error.h"
#include "trace/report/report.h"

/* ---- the format table ---- */

#define ROW(fmt) \
  {#fmt, tbe__rep_summary_##fmt, tbe__rep_diff_##fmt, tbe__rep_run_##fmt, tbe__rep_run_diff_##fmt}
static const tbe__report_format FORMATS[] = {
    [TBE_REPORT_TABLE] = ROW(table),
    [TBE_REPORT_CSV] = ROW(csv),
    [TBE_REPORT_JSON] = ROW(json),
    [TBE_REPORT_MARKDOWN] = ROW(md),
};
#undef ROW

const tbe__report_format *tbe__report_format_of(int f) {
  return (unsigned)f < sizeof FORMATS / sizeof FORMATS[0] ? &FORMATS[f] : &FORMATS[0];
}

/* ---- entry points ---- */

int tbe_report_summary(tbe_analysis *an, const tbe_report_options *o, char **out, size_t *len) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!an) return TBE_EINVAL;
  tbe_report_options oo;
  if (tbe__report_options(o, &oo)) return TBE_EINVAL;
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    tbe_analysis_sort(an, (tbe_group_kind)g, (tbe_sort_key)oo.sort);
  tbe_allocator al;
  tbe__allocator_init(&al, oo.allocator);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  tbe__report_format_of(oo.format)->summary(&b, an, &oo);
  return tbe__report_finish(&b, out, len);
}

int tbe_report_diff(const tbe_diff *d, const tbe_report_options *o, char **out, size_t *len) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!d) return TBE_EINVAL;
  tbe_report_options oo;
  if (tbe__report_options(o, &oo)) return TBE_EINVAL;
  tbe_allocator al;
  tbe__allocator_init(&al, oo.allocator);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  tbe__report_format_of(oo.format)->diff(&b, d, &oo);
  return tbe__report_finish(&b, out, len);
}

int tbe_report_run(tbe_run_analysis *r, const tbe_report_options *o, char **out, size_t *len) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!r || !r->nhosts) return TBE_EINVAL;
  tbe_report_options oo;
  if (tbe__report_options(o, &oo)) return TBE_EINVAL;
  if (r->nhosts == 1) return tbe_report_summary(r->hosts[0].an, &oo, out, len);
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    tbe_analysis_sort(r->total, (tbe_group_kind)g, (tbe_sort_key)oo.sort);
    for (size_t i = 0; i < r->nhosts; i++)
      tbe_analysis_sort(r->hosts[i].an, (tbe_group_kind)g, (tbe_sort_key)oo.sort);
  }
  tbe_allocator al;
  tbe__allocator_init(&al, oo.allocator);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  tbe__report_format_of(oo.format)->run(&b, r, &oo);
  return tbe__report_finish(&b, out, len);
}

int tbe_report_run_diff(const tbe_run_diff *d, const tbe_report_options *o, char **out,
                        size_t *len) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!d) return TBE_EINVAL;
  tbe_report_options oo;
  if (tbe__report_options(o, &oo)) return TBE_EINVAL;
  if (d->side[0]->nhosts == 1 && d->side[1]->nhosts == 1)
    return tbe_report_diff(d->total, &oo, out, len);
  tbe_allocator al;
  tbe__allocator_init(&al, oo.allocator);
  tbe__buf b;
  tbe__buf_init(&b, &al);
  tbe__report_format_of(oo.format)->run_diff(&b, d, &oo);
  return tbe__report_finish(&b, out, len);
}
