/* export_events.h: what the events output (export_events.c) offers the
 * run's writer besides its table entries (exporter.h): the job's file of
 * a multi-host run.
 *
 * A run of several hosts (or of a host with a rank) gives each host a
 * TensorBoard run of its own, <run>/<host folder>/ (run/run_layout.h,
 * tbe__run_host_folder: ranks sort in rank order), and the run's own
 * folder <run>/ the job's series, written after each host's export from
 * the persisted analyses of all the run's hosts (export_run.c, job_stage)
 * by tbe__job_write into events.out.tfevents.<ts>.<run>.tbexport-job. */
#ifndef TBE_TRACE_EXPORT_EVENTS_H
#define TBE_TRACE_EXPORT_EVENTS_H

#include <stddef.h>

#include "tbexport/common.h"
#include "trace/export/sink.h"

/* What the job's file says besides the figures: its HParams session's
 * run, command and labels (the exporting host's), and the hosts of the
 * run left out of the figures (no current analysis). */
typedef struct tbe__job_ctx {
  const char *run;
  const char *command;
  const char *const *labels;
  size_t nlabels;
  const char *const *left;
  size_t nleft;
  const tbe_allocator *a;
} tbe__job_ctx;

struct tbe_run_analysis;
/* Writes the job's events of run analysis `r` (one or more hosts) into
 * `out` (the file `name`).  Returns 0 or a negative code. */
int tbe__job_write(tbe__sink *out, const char *name, struct tbe_run_analysis *r,
                   const tbe__job_ctx *j);

#endif
