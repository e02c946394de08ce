/* tbexport/writer.h: writing TensorBoard event files from C.
 *
 * A tbe_writer owns one file events.out.tfevents.<secs>.<host>.<pid>.<n>
 * in a run directory.  Every add_* call appends one Event record (TFRecord
 * framing, masked CRC32C).  Records are buffered and reach the file at the
 * latest `flush_interval_s` after they were added (checked on each call; no
 * background thread, so a writer nobody calls keeps its buffer until the
 * next call, tbe_writer_flush or tbe_writer_close).  The buffer only ever
 * holds whole records and is handed to the kernel in one write(); with
 * flush_interval_s 0 each record gets its own single write().  A crash
 * therefore leaves at most one torn record at the end of the file, which
 * readers report as truncated.
 *
 * Thread safety: one writer may be shared by any number of threads; records
 * are never interleaved and each thread's records keep their order.
 *
 * fork(): a writer belongs to the process that opened it.  Its buffered
 * records are that process's, written once, by it: a child of fork()
 * inherits a copy of the writer but never writes, flushes or truncates the
 * file (nor takes the writer's mutex, which another thread of the parent
 * may have held at the fork).  In the child every call on an inherited
 * writer returns TBE_ESTATE and writes nothing, so a child's records never
 * land in the parent's file or between its steps; tbe_writer_finish and
 * tbe_writer_close release the child's copy (its descriptor, its memory)
 * and return TBE_ESTATE if the child tried to write, else 0.  A child that
 * wants events opens a writer of its own (its file name carries its pid).
 *
 * Tags: non-NULL, non-empty, valid UTF-8 (else TBE_EINVAL / TBE_EUTF8).
 * All pointer arguments are only read during the call; nothing is kept.
 *
 * Time: every add_* takes `wall_time` in seconds since the epoch; pass
 * TBE_WALL_NOW (any negative value) for the current time.  NaN and
 * infinite wall times are rejected (TensorBoard's fast loader drops a file
 * with a NaN wall time).  Steps are any int64 (negative and out-of-order
 * steps are written as given; note TensorBoard's fast loader keeps only
 * increasing steps per tag).
 *
 * Errors: functions return 0 or a negative TBE_E* code (tbe_strerror); a
 * NULL writer gives TBE_EINVAL.  Bad arguments write nothing.  The first
 * I/O error (e.g. -ENOSPC) is sticky: the buffered records are dropped and
 * every later call returns that error.  TBE_ENOMEM fails only the call that
 * met it.  After tbe_writer_finish calls return TBE_ECLOSED. */
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
  size_t size; /* sizeof the struct: set by tbe_writer_options_init (common.h) */
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
TBE_API void tbe_writer_options_init_sized(tbe_writer_options *opts, size_t size);
#define tbe_writer_options_init(opts) \
  tbe_writer_options_init_sized((opts), sizeof(tbe_writer_options))

/* Opens a new event file in `run_dir` (created with parents, mode 0755;
 * the file is 0644, both less the umask).  Never appends to or replaces an
 * existing file (O_EXCL); the name is unique even for many writers opened by
 * one process in the same second (a process-wide atomic counter).  Writes
 * the file_version record ("brain.Event:2", source_metadata.writer
 * "tbexport") to the file at once; with `durable` the file and the
 * directory are fsynced.  `opts` may be NULL (defaults).
 * Returns 0 and the writer in *out (free it with tbe_writer_close), or
 * TBE_EINVAL (NULL/empty run_dir, negative interval), TBE_ENAME (bad host
 * or suffix: '/', control characters, invalid UTF-8), TBE_ENOMEM, -errno. */
TBE_API int tbe_writer_open(tbe_writer **out, const char *run_dir, const tbe_writer_options *opts);

/* Returns the path of the file being written (owned by the writer, valid
 * until tbe_writer_close), or NULL for a NULL writer. */
TBE_API const char *tbe_writer_path(const tbe_writer *w);

/* Scalar `value`, stored as a float simple_value (which both TensorBoard
 * loaders show in the Scalars dashboard); NaN and infinities are kept.
 * The record is byte-identical to TensorBoard's own Python writer's. */
TBE_API int tbe_writer_add_scalar(tbe_writer *w, const char *tag, double value, int64_t step,
                                  double wall_time);

/* tbe_writer_add_scalar with what TensorBoard shows about the tag: a
 * `description` (Markdown: what the figure is and its unit), shown beside
 * the chart and in the tag's tooltip, and a `display_name` (the chart's
 * title in place of the tag), either NULL or "" for none (both: exactly
 * tbe_writer_add_scalar).  The record carries summary metadata naming the
 * scalars plugin with DATA_CLASS_SCALAR: TensorBoard's fast loader drops
 * the description of a plain simple_value and keeps it only then.
 * TensorBoard keeps the metadata of the first record of a tag in a run,
 * so give it with a tag's first point and write the others with
 * tbe_writer_add_scalar (a few bytes each).  Text must be valid UTF-8. */
TBE_API int tbe_writer_add_scalar_described(tbe_writer *w, const char *tag, double value,
                                            int64_t step, double wall_time,
                                            const char *display_name, const char *description);

/* Histogram of `n` (> 0) raw values with TensorBoard's default buckets
 * (those of torch's add_histogram(bins="tensorflow"): edges 1e-12 * 1.1^k
 * up to 1e20, mirrored, plus 0; only the span of non-empty buckets is
 * stored; values beyond +-1e20 land in end buckets reaching +-DBL_MAX).
 * NaN or infinite values give TBE_EINVAL; `values` NULL or n == 0 too. */
TBE_API int tbe_writer_add_histogram(tbe_writer *w, const char *tag, const double *values,
                                     size_t n, int64_t step, double wall_time);

/* Histogram from caller-made buckets: bucket i counts values in
 * (limits[i-1], limits[i]] (bucket 0 from -infinity).  `bucket_limits`
 * must strictly increase, counts be >= 0, nothing NaN, nbuckets > 0
 * (else TBE_EINVAL).  Written unchanged. */
TBE_API int tbe_writer_add_histogram_raw(tbe_writer *w, const char *tag, double min, double max,
                                         double num, double sum, double sum_squares,
                                         const double *bucket_limits, const double *bucket_counts,
                                         size_t nbuckets, int64_t step, double wall_time);

/* Markdown text (valid UTF-8, may be empty), stored like torch's add_text:
 * tag "<tag>/text_summary", a DT_STRING tensor of shape [1], text plugin
 * metadata. */
TBE_API int tbe_writer_add_text(tbe_writer *w, const char *tag, const char *markdown, int64_t step,
                                double wall_time);
/* tbe_writer_add_text with the tag's `description` (Markdown; NULL or ""
 * for none) in the record's summary metadata. */
TBE_API int tbe_writer_add_text_described(tbe_writer *w, const char *tag, const char *markdown,
                                          int64_t step, double wall_time, const char *description);

/* An 8-bit image of `channels` 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA)
 * in row-major order (top row first, channels interleaved); `size` must be
 * width*height*channels bytes (else TBE_EINVAL).  Encoded to PNG (zlib) and
 * stored as Summary.Image with the images plugin metadata. */
TBE_API int tbe_writer_add_image(tbe_writer *w, const char *tag, const uint8_t *pixels,
                                 size_t size, int width, int height, int channels, int64_t step,
                                 double wall_time);

typedef enum tbe_hparam_type {
  TBE_HPARAM_NUMBER = 0,
  TBE_HPARAM_STRING = 1,
  TBE_HPARAM_BOOL = 2
} tbe_hparam_type;

/* One hyper-parameter: `name` and the member that `type` selects. */
typedef struct tbe_hparam {
  const char *name;
  tbe_hparam_type type;
  double number;
  const char *string;
  int boolean;
} tbe_hparam;

/* A metric the hyper-parameters gave: written as the scalar `tag`. */
typedef struct tbe_metric {
  const char *tag;
  double value;
} tbe_metric;

/* Hyper-parameters and the metrics they gave, like torch's add_hparams:
 * opens a second writer (same options) on the sub-run "<run_dir>/<subrun>"
 * and writes there the hparams plugin's experiment (hparam infos with their
 * types, metric infos), session start (the values) and session end
 * (SUCCESS) records, then each metric as a scalar; the sub-run file is
 * closed before returning.  `subrun` NULL: the current time in seconds
 * ("1764690000.123456"); otherwise a plain name (no '/', no leading dot;
 * else TBE_ENAME; a symlink in its place: -ELOOP, never written
 * through).  Needs at least one hparam or metric.  Names and tags
 * follow the tag rules; string values must be valid UTF-8.  Each hparam
 * name and each metric tag may appear once: a name given twice is
 * TBE_EINVAL, and nothing is written (no sub-run is made). */
TBE_API int tbe_writer_add_hparams(tbe_writer *w, const tbe_hparam *hparams, size_t nhparams,
                                   const tbe_metric *metrics, size_t nmetrics, const char *subrun,
                                   int64_t step, double wall_time);

/* A precision/recall curve from `n` (> 0) labels (nonzero = positive) and
 * predictions in [0, 1] (else TBE_EINVAL), over `num_thresholds`
 * thresholds i/(num_thresholds-1) (0 means 127; 2..2^20).  Stored like
 * TensorBoard's pr_curve summary: a [6, num_thresholds] DT_FLOAT tensor of
 * TP, FP, TN, FN, precision, recall with pr_curves plugin metadata. */
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

/* Writes the custom-scalars layout (tag "custom_scalars__config__", a
 * serialized Layout in a DT_STRING tensor) at step 0 with the current time,
 * like torch's add_custom_scalars.  Titles must be valid UTF-8; every chart
 * needs at least one tag.  TBE_EINVAL for a NULL or empty list. */
TBE_API int tbe_writer_set_custom_scalars_layout(tbe_writer *w, const tbe_category *categories,
                                                 size_t ncategories);

/* Appends one caller-serialized Event message (`size` bytes) as a record,
 * unchanged.  It is parsed first: bytes that are not an Event give
 * TBE_EPARSE and write nothing. */
TBE_API int tbe_writer_write_event(tbe_writer *w, const void *event, size_t size);

/* Writes buffered records now; with `durable` (or the durable option)
 * also fsyncs the file.  Returns 0 or the (sticky) error. */
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
