/* report.h: rendering helpers shared by the summary and diff reports
 * (report.c, report_diff.c), the reports of runs of several hosts
 * (report_run.c) and the run-summary events exporter (export_events.c).
 *
 * The "part" functions below write one piece of a report in the format of
 * o->format, so that a run's report is the single-trace report's parts
 * around its own host sections, and both say the same thing the same way. */
#ifndef TBE_TRACE_REPORT_H
#define TBE_TRACE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "tbexport/analysis.h"
#include "trace/analysis/figures.h"

/* Formats a duration with a unit chosen by size: "850ns", "12.345us",
 * "1.234ms", "2.500s" (3 decimals, integer arithmetic only, so the output
 * is the same on every machine).  Returns the length. */
size_t tbe__fmt_dur(char *buf, size_t size, int64_t ns);
/* tbe__fmt_dur into a buffer of 32 bytes, returned. */
static inline const char *tbe__dur(char *buf, int64_t ns) {
  tbe__fmt_dur(buf, 32, ns);
  return buf;
}
static inline double tbe__pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}
/* "+1.000us" / "-2.000ms" (32 bytes) and "0.65x" / "new" / "gone" / "-". */
void tbe__delta_str(char *buf, int64_t d);
void tbe__ratio_str(char *buf, size_t size, int64_t base, int64_t now);

/* Text from an input (names, hosts, labels, warnings) goes out only
 * through these, in the form of common/text.h for each output:
 * the terminal form (tables), the Markdown form (also one table cell), a
 * JSON string literal (quotes included), a CSV field. */
void tbe__term(tbe__buf *b, const char *s);
void tbe__md_escape(tbe__buf *b, const char *s);
void tbe__json_str(tbe__buf *b, const char *s);
void tbe__csv_str(tbe__buf *b, const char *s);
/* Appends `s`, safe text (terminal form or our own words), padded with
 * spaces to `w` terminal columns, right-aligned when `right`. */
void tbe__cell(tbe__buf *b, const char *s, int w, int right);
/* A name as a table cell: its terminal form shortened to `w` columns
 * (tbe_name_shorten), or whole when `wide`; "(unnamed)" when empty. */
void tbe__name_cell(const char *name, int w, int wide, char *buf, size_t size);
/* The name cells of the `n` rows of one table (cells[i] gets row i's, at
 * most `size` bytes each) as tbe__name_cell makes them, except that rows
 * whose shortened names would read the same show, after the common start,
 * the part where their names differ ("sm80_xmma_g...tn_n_tilesize128x64x8_"
 * and "sm80_xmma_g...nn_n_tilesize32x32x8_s"), so that no two rows of a
 * table look alike.  Returns 0 or TBE_ENOMEM (then the plain cells). */
int tbe__name_cells(const char *const *names, size_t n, int w, int wide, char *cells,
                    size_t size, const tbe_allocator *a);
/* The head of a per-name table of `an` (group g): its title line, the
 * column names (name, then hd[0..6) in widths cw, right-aligned) and the
 * rule under them, and the name cells of its first `top` rows as
 * tbe__name_cells makes them, `TBE__SHORT_MAX` bytes each (free with
 * tbe__free(b->a, ...)); NULL, with b->err set, when memory fails. */
char *tbe__names_head(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                      const tbe_report_options *o, size_t top, int nw, const char *const *hd,
                      const int *cw, int fixed);
/* A figure that may be unknown (-1: a median without samples, a run's
 * merged median): the number, or JSON's null / an empty CSV field. */
void tbe__json_ns(tbe__buf *b, int64_t ns);
void tbe__csv_ns(tbe__buf *b, int64_t ns);
/* The launch medians: JSON "<launch_median_ns value>,"launch_overhead_
 * median_ns":...,"queue_delay_median_ns":..." (after the first key) and
 * three CSV fields. */
void tbe__json_launch(tbe__buf *b, int64_t all, int64_t overhead, int64_t queue);
void tbe__csv_launch(tbe__buf *b, int64_t all, int64_t overhead, int64_t queue);
/* Appends `w` dashes and a newline. */
void tbe__rule(tbe__buf *b, int w);
/* Appends `text` (safe text) wrapped at `width` columns, then a newline;
 * a \x01 in `text` is a space where no line may break. */
void tbe__wrap(tbe__buf *b, const char *text, int width);
/* The full name as shown with --wide (raw: escape it for output). */
void tbe__full_name(const char *name, char *buf, size_t size);
/* "Kernels", "CPU operators", "Ranges". */
const char *tbe__group_title(tbe_group_kind g);

/* Appends the Markdown table of the top `top` kernels (0 = all) of `an`
 * as currently sorted. */
void tbe__md_kernels(tbe__buf *b, const tbe_analysis *an, size_t top, int wide);

/* Makes a TensorBoard tag component from a kernel name: shortened to
 * `width`, characters other than [A-Za-z0-9_.:-] replaced by '_', runs of
 * '_' collapsed, never empty.  Returns the length. */
size_t tbe__tag_component(const char *name, size_t width, char *buf, size_t size);

/* ---- figures printed from the table (trace/analysis/figures.h) ----
 * The single-entry DEVICE rows from TBE__FIG_LISTED on: every format
 * prints them by looping over the table (tbe__overview, the Markdown and
 * CSV device tables, the JSON devices, the events exporter's device
 * scalars), after the figures each prints in its own place. */

/* 1 when row f is one of them. */
int tbe__fig_listed(const tbe__figure *f);
/* 1 when row f is a single-entry STEP row from TBE__FIG_LISTED on: a
 * column of the steps' tables in every format (after their own columns)
 * and a per-step TensorBoard series. */
int tbe__fig_step_listed(const tbe__figure *f);
/* 1 when row f has a known value in one of the n objects at obj, obj +
 * stride, ...: the terminal and Markdown tables leave out a row or column
 * unknown everywhere (CSV and JSON keep it, empty or null). */
int tbe__fig_known(const tbe__figure *f, const void *obj, size_t n, size_t stride);
/* Its value in `obj` as a table cell ("1.234ms", "12", "12.5%", "1.25 GiB",
 * "+64 MiB", "-" when unknown), as a JSON value (null when unknown) and as a CSV field (empty
 * when unknown). */
void tbe__fig_cell(char *buf, size_t size, const tbe__figure *f, const void *obj);
void tbe__fig_json(tbe__buf *b, const tbe__figure *f, const void *obj);
void tbe__fig_csv(tbe__buf *b, const tbe__figure *f, const void *obj);

/* ---- the format table ----
 * A row per output format, indexed by TBE_REPORT_* (table, CSV, JSON,
 * Markdown), a renderer per report in each row.  tbe_report_summary,
 * tbe_report_diff, tbe_report_run and tbe_report_run_diff check the
 * options, prepare the analyses and call their format's entry: a format
 * is one row, and no report switches on the format. */
typedef struct tbe__report_format {
  const char *name;
  void (*summary)(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o);
  void (*diff)(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);
  void (*run)(tbe__buf *b, tbe_run_analysis *r, const tbe_report_options *o);
  void (*run_diff)(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o);
} tbe__report_format;

/* The row of format `f` (checked by tbe__report_options; report_api.c,
 * the folder's top: only the entry points there dispatch on it). */
const tbe__report_format *tbe__report_format_of(int f);

/* The rows' renderers: report_summary.c, report_diff.c, report_run.c. */
#define TBE__REP_FORMAT(fmt)                                                                  \
  void tbe__rep_summary_##fmt(tbe__buf *b, tbe_analysis *an, const tbe_report_options *o);   \
  void tbe__rep_diff_##fmt(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);     \
  void tbe__rep_overall_##fmt(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);  \
  void tbe__rep_names_##fmt(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);    \
  void tbe__rep_run_##fmt(tbe__buf *b, tbe_run_analysis *r, const tbe_report_options *o);    \
  void tbe__rep_run_diff_##fmt(tbe__buf *b, const tbe_run_diff *d, const tbe_report_options *o);
TBE__REP_FORMAT(table)
TBE__REP_FORMAT(csv)
TBE__REP_FORMAT(json)
TBE__REP_FORMAT(md)
#undef TBE__REP_FORMAT

/* Limits of a name cell: the narrowest name column, and the longest
 * shortened name (bytes, with its NUL). */
#define TBE__NAME_MIN 12
/* The name column of the per-name tables of every report (summary's
 * kernels, operators and ranges, diff's), at table width `width`: one
 * rule, so that a name is shortened alike wherever it is shown.  It is the
 * room the widest of those tables (diff's: 71 columns of figures) leaves,
 * at least TBE__NAME_MIN; the narrower tables keep the rest as margin. */
#define TBE__NAME_TABLE_FIXED 71
static inline int tbe__name_width(int width) {
  return width - TBE__NAME_TABLE_FIXED < TBE__NAME_MIN ? TBE__NAME_MIN
                                                       : width - TBE__NAME_TABLE_FIXED;
}
#define TBE__SHORT_MAX 4096

/* Appends `s` quoted for a POSIX shell when it needs it (the step hint's
 * flag): single quotes, or bash's $'...' when it holds what the terminal
 * form escapes. */
void tbe__shell_word(tbe__buf *b, const char *s);

/* ---- runs (report_run.c, report_run_diff.c) ---- */

/* The compact rule of per-host tables (report_run.c states it): every
 * host up to TBE__RUN_ROWS_ALL; a diff beyond keeps the
 * TBE__RUN_ROWS_CHANGED pairs whose step time changed most. */
#define TBE__RUN_ROWS_ALL 32
#define TBE__RUN_ROWS_CHANGED 10
/* A host's label, "(unnamed)" when it has none. */
static inline const char *tbe__host_label(const tbe_run_host *h) {
  return h->label && h->label[0] ? h->label : "(unnamed)";
}

/* ---- parts of the summary ---- */

/* One column of the GPU overview: its figures, header and device name
 * (NULL: no name row for it). */
typedef struct tbe__ocol {
  const tbe_device_stats *d;
  const char *label;
  const char *name;
} tbe__ocol;
/* The overview table: a row per figure, a column per entry of `cols` (at
 * most 64), wrapped to `width`; optional rows (copy directions, memset,
 * sync, launch overhead and queue delay with their legend, short kernels)
 * appear when `ref` has any. */
void tbe__overview(tbe__buf *b, const tbe__ocol *cols, size_t ncols, const tbe_device_stats *ref,
                   int width);
/* "profiler: overhead ...; records lost: N for lack of buffer space, M
 * with zero or inverted timestamps[; <early>]" wrapped at `width`, when
 * `an` has any of them (`early`: the words for ended_early). */
void tbe__profiler_line(tbe__buf *b, const tbe_analysis *an, const char *early, int width);
/* The name tables of `an` as currently sorted (table, Markdown or CSV
 * rows with their header; not JSON). */
void tbe__summary_names(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o);
/* One analysis as a JSON object (no newline); label may be NULL. */
void tbe__summary_json(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o,
                       const char *label);
void tbe__json_dist(tbe__buf *b, const tbe_step_dist *d);
/* The step hint of `an` (nothing without one): the sentence (table,
 * wrapped; Markdown), where `whole` replaces "in this trace" and `where`
 * prefixes the figures; the CSV section (with a host column when `host`);
 * the JSON value (an object or null); the flag itself.  The CSV section
 * header is written when `header`. */
void tbe__step_hint_text(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o,
                         const char *where, const char *whole);
void tbe__step_hint_csv(tbe__buf *b, const tbe_analysis *an, const char *host, int header);
void tbe__step_hint_json(tbe__buf *b, const tbe_analysis *an);
/* The kernel classes of `d` with any work, by time descending, into
 * order[TBE_KCLASS__COUNT]; returns their number. */
size_t tbe__class_order(const tbe_device_stats *d, uint32_t *order);
void tbe__step_hint_flag(tbe__buf *b, const tbe_analysis *an);

/* ---- parts of the diff ---- */

/* "", "too_few", "within", "beyond" (CSV and JSON), and the one-character
 * marks of the terminal tables ("~" within, "!" beyond, else ""). */
const char *tbe__noise_key(uint32_t v);
const char *tbe__noise_mark(uint32_t v);
/* The sentence on one verdict ("Step time: median 1.2ms -> 1.0ms (-16.7%),
 * within the steps' own noise (Mann-Whitney p = 0.310 over 8 and 8
 * steps)."), nothing for TBE_NOISE_NONE; table (wrapped) or Markdown. */
void tbe__noise_sentence(tbe__buf *b, const tbe_step_compare *c, const char *what,
                         const tbe_report_options *o);
void tbe__json_step_compare(tbe__buf *b, const tbe_step_compare *c);
/* The overall comparison (wall, GPU busy, kernel and step time with the
 * verdict): the table and its sentences; Markdown; the CSV section with
 * its header; the JSON member "overall":{...}. */
void tbe__diff_overall(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);
/* The per-name tables; JSON: members ,"kernels":{...},... */
void tbe__diff_names(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);

/* ---- entry points ---- */

/* Copies `o` (NULL: the defaults) into `oo` with a default width; returns
 * TBE_EINVAL for an unknown format or sort key. */
int tbe__report_options(const tbe_report_options *o, tbe_report_options *oo);
/* Terminates `b` and hands it over as *out / *len, or frees it and
 * returns TBE_ENOMEM after an allocation failure. */
int tbe__report_finish(tbe__buf *b, char **out, size_t *len);

/* ---- the operator table (report_ops.c) ---- */

/* 1 when the operator table is shown by name and input shapes: o asks for
 * it and `an` has the table. */
int tbe__by_shape(const tbe_analysis *an, const tbe_report_options *o);
/* The name tables a report of `an` shows, in order (kernels, the operators
 * by name or by shape, ranges); returns their number. */
size_t tbe__report_groups(const tbe_analysis *an, const tbe_report_options *o,
                          tbe_group_kind out[3]);
/* "; no input shapes recorded" for the operator table by name when o asks
 * for it by shape and `an` has no shapes, else "" (said in its title). */
const char *tbe__shape_note(const tbe_analysis *an, tbe_group_kind g, const tbe_report_options *o);
/* The order of table g under sort key `sort`, in words ("total", "CUDA
 * total", "self CPU", ...). */
const char *tbe__sort_word(const tbe_analysis *an, tbe_group_kind g, int sort);
/* An operator table with its GPU figures (an->op_gpu_count > 0): the
 * terminal table with "kernels per operator" after it; Markdown (the top
 * `top` rows, 0 = all, and the list). */
void tbe__ops_table(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g,
                    const tbe_report_options *o);
void tbe__ops_md(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g, size_t top, int wide);
/* "operators: N names launched M of K GPU activities ..." wrapped at
 * `width` (nothing when none did). */
void tbe__ops_line(tbe__buf *b, const tbe_analysis *an, int width);
/* An operator entry's CSV fields after the shared ones (",self_cuda_ns,
 * cuda_total_ns,kernels,shapes") and the CSV section of what the first
 * `top` entries launched (nothing without GPU work attributed). */
void tbe__ops_csv_fields(tbe__buf *b, const tbe_name_stats *e);
void tbe__ops_csv_launched(tbe__buf *b, const tbe_analysis *an, tbe_group_kind g, size_t top);
/* An operator entry's JSON members (shapes, self_cuda_ns, cuda_total_ns,
 * kernels, launched, launched_other, cuda_step_ns). */
void tbe__ops_json_fields(tbe__buf *b, const tbe_analysis *an, const tbe_name_stats *e);

/* ---- hardware metrics (report_metrics.c): nothing without them ---- */

/* `v` in the unit its name's suffix says (_pct, _bytes_per_s, _hz, _ns). */
const char *tbe__metric_fmt(char *buf, size_t n, const char *name, double v);
/* Per-GPU PM means: a table (md 0) or Markdown. */
void tbe__metrics_gpu(tbe__buf *b, const tbe_analysis *an, int md);
/* The kernels' figures and bound-by verdicts, the first o->top kernels. */
void tbe__metrics_kernels(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o,
                          int md);
/* CSV sections gpu_metric and kernel_metric. */
void tbe__metrics_csv(tbe__buf *b, const tbe_analysis *an, const tbe_report_options *o);
/* JSON members: ,"gpu_metrics":{...} of `m`; a kernel entry's
 * ,"metrics":{...},"metric_launches":N,"bound_by":"...". */
void tbe__metrics_json_gpu(tbe__buf *b, const tbe_analysis *an, const tbe_metric_mean *m);
void tbe__metrics_json_kernel(tbe__buf *b, const tbe_analysis *an, const tbe_name_stats *e);
/* A comparison's metrics in o->format (after the name tables; JSON: the
 * members ,"gpu_metrics":[...],"kernel_metrics":[...]); nothing when
 * neither side has metrics. */
void tbe__metrics_diff(tbe__buf *b, const tbe_diff *d, const tbe_report_options *o);
/* A run's metrics (table, md 0, or Markdown): the merged PM means with the
 * lowest and highest host, the merged kernel figures. */
void tbe__metrics_run(tbe__buf *b, const tbe_run_analysis *r, const tbe_report_options *o,
                      int md);

#endif
