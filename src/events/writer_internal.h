/* writer_internal.h: seams of the event writer for tests and in-tree users. */
#ifndef TBE_EVENTS_WRITER_INTERNAL_H
#define TBE_EVENTS_WRITER_INTERNAL_H

#include <protobuf-c/protobuf-c.h>

#include "tbexport/writer.h"

/* Replaces the writer's file descriptor by `fd` (the old one is closed; the
 * writer owns `fd` afterwards).  Tests point it at /dev/full to provoke
 * ENOSPC.  Returns 0 or TBE_EINVAL. */
int tbe__writer_replace_fd(tbe_writer *w, int fd);

/* A writer on `fd`, a new empty file someone else placed (export_run.c
 * stages the run summary's file): the writer owns `fd` (closed by
 * tbe_writer_finish, or here on failure), `path` is only what
 * tbe_writer_path reports.  Writes the file_version record at once, at
 * wall time `version_wall` (seconds; negative: now).  TensorBoard lists
 * runs by the wall time of their first record, then by name.  Returns 0
 * or a negative code. */
int tbe__writer_open_fd(tbe_writer **out, int fd, const char *path, const tbe_writer_options *opts,
                        double version_wall);

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
