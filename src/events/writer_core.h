/* writer_core.h: what the event writer's encoders share with its core.
 *
 * The writer is three files of one concern each: writer.c, the core (the
 * object, its file or caller's output, the buffer, flushing, fork and the
 * sticky error: everything that holds the mutex), writer_summary.c (the
 * Summary values of include/tbexport/writer.h: described scalars,
 * histograms, text, images, PR curves, the custom-scalars layout) and
 * writer_hparams.c (the HParams plugin's experiment and session records,
 * and the sub-run torch's add_hparams writes them into).  The encoders
 * build an Event's bytes and hand them to the core; they never see the
 * writer's fields, its lock or its output.  Calls go one way, encoders to
 * core, never back.
 *
 * The argument rules of writer.h, as inline checks (the hot scalar path
 * uses them too): tags non-NULL, non-empty, valid UTF-8; texts non-NULL,
 * valid UTF-8; wall times finite, negative meaning now. */
#ifndef TBE_EVENTS_WRITER_CORE_H
#define TBE_EVENTS_WRITER_CORE_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/utf8.h"
#include "events/writer_internal.h"
#include "tbexport/error.h"
#include "tensorboard/summary.pb-c.h"

static inline double tbe__writer_wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Resolves the caller's wall time: negative -> now; NaN/inf rejected. */
static inline int tbe__writer_resolve_wall(double *wt) {
  if (isnan(*wt) || isinf(*wt)) return TBE_EINVAL;
  if (*wt < 0) *wt = tbe__writer_wall_now();
  return 0;
}

/* A tag by writer.h's rules; its length in *len. */
static inline int tbe__writer_check_tag(const char *tag, size_t *len) {
  if (!tag) return TBE_EINVAL;
  size_t n = strlen(tag);
  if (n == 0) return TBE_EINVAL;
  if (!tbe__utf8_valid(tag, n)) return TBE_EUTF8;
  *len = n;
  return 0;
}

static inline int tbe__writer_check_text(const char *s) {
  if (!s) return TBE_EINVAL;
  return tbe__utf8_valid(s, strlen(s)) ? 0 : TBE_EUTF8;
}

/* The writer's allocator (its scratch memory and everything it owns). */
const tbe_allocator *tbe__writer_allocator(const tbe_writer *w);

/* Appends Event{wall_time, step, summary{value `v`}} as one record (the
 * arguments checked by the caller).  Returns 0 or a negative code. */
int tbe__writer_write_value(tbe_writer *w, Tensorboard__Summary__Value *v, int64_t step,
                            double wall_time);

/* Opens a second writer with `w`'s options (host, suffix, durability,
 * allocator, flush interval) in the sub-run <run_dir>/<subrun> of `w`'s
 * run directory, made as needed and never through a symlink.  `subrun`
 * is a checked plain name.  Returns 0 and *sub (the caller closes it), the
 * writer's sticky error or TBE_ECLOSED, TBE_ESTATE for a writer on a
 * caller's output (no run directory), or a negative code. */
int tbe__writer_open_subrun(tbe_writer *w, const char *subrun, tbe_writer **sub);

#endif
