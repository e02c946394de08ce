/* tbexport/writer.h: writing TensorBoard event files from C.
 *
 * A tbe_writer owns one file events.out.tfevents.<secs>.<host>.<pid>.<n>
 * in a run directory.  Every add_* call appends one Event record (TFRecord
 * framing, masked CRC32C).  Records are buffered and reach the file at the
 * latest `flush_interval_s` after they were added (checked on each call; no
 * background thread), on tbe_writer_flush and on tbe_writer_close.  Each
 * record is handed to the kernel with a single write(), so a crash leaves at
 * most one torn record at the end of the file.
 *
 * Thread safety: one writer may be shared by any number of threads; records
 * are never interleaved and each thread's records keep their order.
 *
 * Time: every add_* takes `wall_time` in seconds since the epoch; pass
 * TBE_WALL_NOW (any negative value) for the current time.  NaN and
 * infinite wall times are rejected (TensorBoard's fast loader drops a file
 * with a NaN wall time).
 *
 * Errors: functions return 0 or a negative TBE_E* code (tbe_strerror).  The
 * first I/O error is sticky: every later call returns it too. */
#ifndef TBEXPORT_WRITER_H
#define TBEXPORT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "tbexport/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TBE_WALL_NOW (-1.0)

typedef struct tbe_writer tbe_writer;

typedef struct tbe_writer_options {
  /* Appended to the file name (e.g. ".v2"); NULL for none. */
  const char *filename_suffix;
  /* Host name used in the file name; NULL for this machine's. */
  const char *host;
  /* Longest time buffered data may wait before it is written (seconds);
   * default 1.0.  0 writes every record at once. */
  double flush_interval_s;
  /* Bytes buffered before a write is forced; default 256 KiB. */
  size_t buffer_size;
  /* Nonzero: every flush also fsyncs (and the directory after creating
   * the file). */
  int durable;
  /* Allocator for the writer and everything it owns; NULL for malloc. */
  const tbe_allocator *allocator;
} tbe_writer_options;

/* Fills `opts` with the defaults described above. */
TBE_API void tbe_writer_options_init(tbe_writer_options *opts);

/* Opens a new event file in `run_dir` (created with parents, mode 0755;
 * the file is 0644).  Never appends to or replaces an existing file; the
 * name is unique even for many writers opened by one process in the same
 * second.  Writes the file_version record ("brain.Event:2", with
 * source_metadata naming tbexport) at once.  `opts` may be NULL.
 * On success stores the writer in *out and returns 0. */
TBE_API int tbe_writer_open(tbe_writer **out, const char *run_dir, const tbe_writer_options *opts);

/* Returns the path of the file being written (owned by the writer). */
TBE_API const char *tbe_writer_path(const tbe_writer *w);

/* Scalar `value` (stored as a float simple_value, which both TensorBoard
 * loaders show in the Scalars dashboard). */
TBE_API int tbe_writer_add_scalar(tbe_writer *w, const char *tag, double value, int64_t step,
                                  double wall_time);

/* Histogram of `n` (> 0) raw values with TensorBoard's default buckets.
 * NaN values are rejected. */
TBE_API int tbe_writer_add_histogram(tbe_writer *w, const char *tag, const double *values,
                                     size_t n, int64_t step, double wall_time);

/* Histogram from caller-made buckets: bucket i counts values in
 * (limits[i-1], limits[i]].  `limits` must increase. */
TBE_API int tbe_writer_add_histogram_raw(tbe_writer *w, const char *tag, double min, double max,
                                         double num, double sum, double sum_squares,
                                         const double *bucket_limits, const double *bucket_counts,
                                         size_t nbuckets, int64_t step, double wall_time);

/* Markdown text, stored under "<tag>/text_summary" for the Text plugin. */
TBE_API int tbe_writer_add_text(tbe_writer *w, const char *tag, const char *markdown, int64_t step,
                                double wall_time);

/* An 8-bit image of `channels` 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA)
 * in row-major order, `size` == width*height*channels bytes; encoded to
 * PNG. */
TBE_API int tbe_writer_add_image(tbe_writer *w, const char *tag, const uint8_t *pixels,
                                 size_t size, int width, int height, int channels, int64_t step,
                                 double wall_time);

typedef enum tbe_hparam_type {
  TBE_HPARAM_NUMBER = 0,
  TBE_HPARAM_STRING = 1,
  TBE_HPARAM_BOOL = 2
} tbe_hparam_type;

typedef struct tbe_hparam {
  const char *name;
  tbe_hparam_type type;
  double number;
  const char *string;
  int boolean;
} tbe_hparam;

typedef struct tbe_metric {
  const char *tag;
  double value;
} tbe_metric;

/* Hyper-parameters and the metrics they gave, like torch's add_hparams:
 * writes the experiment, session start and session end records and the
 * metric values as scalars into a new file in the sub-run
 * "<run_dir>/<subrun>" (`subrun` NULL: the current time in seconds). */
TBE_API int tbe_writer_add_hparams(tbe_writer *w, const tbe_hparam *hparams, size_t nhparams,
                                   const tbe_metric *metrics, size_t nmetrics, const char *subrun,
                                   int64_t step, double wall_time);

/* A precision/recall curve from `n` labels (nonzero = positive) and
 * predictions in [0, 1], over `num_thresholds` thresholds (0 = 127). */
TBE_API int tbe_writer_add_pr_curve(tbe_writer *w, const char *tag, const uint8_t *labels,
                                    const float *predictions, size_t n, unsigned num_thresholds,
                                    int64_t step, double wall_time);

/* Custom-scalars layout: categories of charts.  A multiline chart lists tag
 * regular expressions; a margin chart lists (value, lower, upper) tag
 * triples, so its ntags is a multiple of 3. */
typedef struct tbe_chart {
  const char *title;
  int margin;
  const char *const *tags;
  size_t ntags;
} tbe_chart;

typedef struct tbe_category {
  const char *title;
  const tbe_chart *charts;
  size_t ncharts;
  int closed;
} tbe_category;

TBE_API int tbe_writer_set_custom_scalars_layout(tbe_writer *w, const tbe_category *categories,
                                                 size_t ncategories);

/* Appends one caller-serialized Event message as a record, unchanged. */
TBE_API int tbe_writer_write_event(tbe_writer *w, const void *event, size_t size);

/* Writes buffered records; with `durable` also fsyncs the file. */
TBE_API int tbe_writer_flush(tbe_writer *w, int durable);

/* Flushes and closes the file but keeps the object: every later call on
 * `w` (from any thread) returns TBE_ECLOSED instead of touching freed
 * memory.  Returns the first error the writer met, or 0.  Calling it again
 * returns the sticky error (or 0).  Free with tbe_writer_close. */
TBE_API int tbe_writer_finish(tbe_writer *w);

/* Flushes, closes and frees the writer (NULL is a no-op).  Returns the
 * first error the writer met, or 0.  No other thread may use `w` during or
 * after this call (use tbe_writer_finish first to stop them cleanly). */
TBE_API int tbe_writer_close(tbe_writer *w);

#ifdef __cplusplus
}
#endif

#endif
