/* writer_internal.h: seams of the event writer for tests and in-tree users. */
#ifndef TBE_EVENTS_WRITER_INTERNAL_H
#define TBE_EVENTS_WRITER_INTERNAL_H

#include <protobuf-c/protobuf-c.h>

#include "tbexport/writer.h"

/* Replaces the writer's file descriptor by `fd` (the old one is closed; the
 * writer owns `fd` afterwards).  Tests point it at /dev/full to provoke
 * ENOSPC.  Returns 0 or TBE_EINVAL (also for a writer on a caller's
 * output, which has no descriptor). */
int tbe__writer_replace_fd(tbe_writer *w, int fd);

/* ---- a writer on the caller's output ----
 * A writer need not own a file: tbe__writer_open_out gives it an output of
 * the caller's (the exporter's sink, src/trace/export/export_events.c:
 * every output of a run writes into a sink, which stages, commits or
 * discards the file as a whole).  The writer keeps its promises there:
 * `write` gets whole records only, the buffer of one flush in one call (as
 * the own file gets one write(2)), under the writer's mutex, never in a
 * fork child; its negative return becomes the writer's sticky error (the
 * records of that flush dropped; what the output does with bytes it got
 * before failing is its business).  `sync` (NULL: nothing to do) is called
 * where the own file is fsynced (a durable flush).  The writer never
 * closes the output; tbe_writer_finish flushes into it, and the output
 * must outlive the writer. */
typedef struct tbe__writer_out {
  int (*write)(void *ctx, const void *p, size_t n);
  int (*sync)(void *ctx);
  void *ctx;
} tbe__writer_out;

/* A writer on `out` (copied; out->write non-NULL): `path` is only what
 * tbe_writer_path reports.  Writes the file_version record at once, at
 * wall time `version_wall` (seconds; negative: now).  TensorBoard lists
 * runs by the wall time of their first record, then by name.  Such a
 * writer has no run directory: tbe_writer_add_hparams (a sub-run beside
 * the file) returns TBE_ESTATE; tbe__writer_hparams_session writes into
 * the writer itself.  Returns 0 or a negative code (nothing kept). */
int tbe__writer_open_out(tbe_writer **w, const tbe__writer_out *out, const char *path,
                         const tbe_writer_options *opts, double version_wall);

/* tbe_writer_set_custom_scalars_layout at wall time `wall` (seconds), for
 * outputs whose records must not depend on when they were written. */
int tbe__writer_layout_at(tbe_writer *w, const tbe_category *cats, size_t ncats, double wall);

/* An HParams experiment record: the columns of TensorBoard's HParams
 * dashboard.  TensorBoard builds its table from the experiment record of
 * a run when any run has one (it reads one, whichever it meets first),
 * else from every session's hyper-parameters and every scalar tag of the
 * session runs; display names and the metrics' order exist only in an
 * experiment.  A column: an hparam (name, type, `differs`: sorted first
 * by TensorBoard) or a metric (name = its scalar tag in the session's
 * run), each with an optional display name and description. */
typedef struct tbe__hp_column {
  const char *name;
  const char *display_name; /* NULL or "": none */
  const char *description;  /* NULL or "": none */
  tbe_hparam_type type;     /* hparams */
  int differs;              /* hparams */
} tbe__hp_column;

typedef struct tbe__hp_experiment {
  const tbe__hp_column *hparams;
  size_t nhparams;
  const tbe__hp_column *metrics;
  size_t nmetrics;
} tbe__hp_experiment;

/* A session of TensorBoard's HParams dashboard written into `w` itself
 * (not a sub-run): the experiment `exp` (NULL: none), session start (the
 * hyper-parameters; `start` seconds when > 0) and end (SUCCESS) records,
 * then each metric as a scalar at `step`, all at `wall_time`.  Without an
 * experiment TensorBoard builds one from every session's hyper-parameters
 * and the scalars of the session runs.  Returns 0 or a negative code. */
int tbe__writer_hparams_session(tbe_writer *w, const tbe_hparam *hparams, size_t nhparams,
                                const tbe_metric *metrics, size_t nmetrics,
                                const tbe__hp_experiment *exp, double start, int64_t step,
                                double wall_time);

/* Packs `msg` (an Event) and appends it as one record. */
int tbe__writer_write_message(tbe_writer *w, const ProtobufCMessage *msg);

/* Adapter from a tbe_allocator to protobuf-c's allocator.  protobuf-c
 * returns NULL both for bad input and for a failed allocation; `oom` is set
 * on the latter so callers do not report ENOMEM as corruption. */
typedef struct tbe__pbctx {
  const tbe_allocator *a;
  int oom;
} tbe__pbctx;
void tbe__pb_allocator(ProtobufCAllocator *out, tbe__pbctx *ctx);

#endif
