/* export_hparams.h: a host's (or a job's) HParams session
 * (export_hparams.c), written by export_events.c's hparams output and its
 * job writer. */
#ifndef TBE_TRACE_EXPORT_HPARAMS_H
#define TBE_TRACE_EXPORT_HPARAMS_H

#include <stddef.h>

#include "tbexport/analysis.h"
#include "tbexport/trace.h"
#include "tbexport/writer.h"

/* What one session says. */
typedef struct tbe__hp_session {
  const char *run, *host, *gpu, *source, *kinds, *steps, *command; /* NULL: left out */
  const char *const *labels;
  size_t nlabels;
  double start, wall;
} tbe__hp_session;

/* The hyper-parameters' texts: the GPUs of `an` (its first n devices),
 * the step definition of `t`, the event kinds of `an`. */
void tbe__hp_gpu_text(const tbe_analysis *an, size_t n, char *buf, size_t size);
void tbe__hp_steps_text(const tbe_trace *t, char *buf, size_t size);
void tbe__hp_kinds_text(const tbe_analysis *an, char *buf, size_t size);
/* Writes session `si` (the experiment, the hyper-parameters, start and
 * end) into `w`.  Returns 0 or a negative code. */
int tbe__hp_session_write(tbe_writer *w, const tbe__hp_session *si, const tbe_allocator *a);

#endif
