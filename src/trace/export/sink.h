/* sink.h: where an output's bytes go (sink.c holds the file backend).
 * Outputs (trace/exporter.h) write into a sink and never learn where it
 * leads; the run room (src/trace/run/) and export_run.c point sinks at
 * the files they stage. */
#ifndef TBE_TRACE_EXPORT_SINK_H
#define TBE_TRACE_EXPORT_SINK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "tbexport/error.h"

/* ---- the sink ----
 * Where an output's bytes go, behind one backend table (a file that the
 * run room staged or export_run.c opened, today the only backend), with
 * one sticky error: after the first failure writes are no-ops, and the
 * output checks once, at its end (tbe__sink_error).  An output appends;
 * XSpace also patches the lengths of messages it has closed (bytes already
 * written, never beyond `written`). */
typedef struct tbe__sink tbe__sink;
typedef struct tbe__sink_ops {
  int (*write)(tbe__sink *s, const void *p, size_t n);
  int (*patch)(tbe__sink *s, uint64_t at, const void *p, size_t n);
} tbe__sink_ops;
struct tbe__sink {
  const tbe__sink_ops *ops;
  int fd;           /* the file backend's descriptor (not the output's business) */
  uint64_t written; /* bytes appended */
  int err;          /* sticky: the first failure */
};

/* A sink over `fd`, a new empty file the caller owns (export_run.c and
 * run_stage.c; the JSON output's test seam tbe__json_write_fd). */
void tbe__sink_file(tbe__sink *s, int fd);

static inline void tbe__sink_write(tbe__sink *s, const void *p, size_t n) {
  if (s->err || !n) return;
  int rc = s->ops->write(s, p, n);
  if (rc) s->err = rc;
  else s->written += n;
}

static inline void tbe__sink_patch(tbe__sink *s, uint64_t at, const void *p, size_t n) {
  if (s->err) return;
  if (at > s->written || n > s->written - at) s->err = TBE_EINVAL;
  else if (!s->ops->patch) s->err = -ENOTSUP;
  else s->err = s->ops->patch(s, at, p, n);
}

static inline int tbe__sink_error(const tbe__sink *s) { return s->err; }

#endif
