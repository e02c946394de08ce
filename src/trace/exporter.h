/* exporter.h: the table of outputs over one finished trace, the sink
 * they write into, and the run layout that places them.
 *
 * Each output (Chrome JSON, XSpace, run summary events) is a small table
 * entry: a name, its TBE_OUT_* bit and a function that writes its bytes
 * into a sink.  Exporters produce bytes; export_run.c alone decides where
 * they go: it stages one file per output below the log dir (common/fsutil.h,
 * tbe__stage) and commits them together, or, for the single-file calls
 * (tbe_export_chrome_json, tbe_export_xplane), writes one file atomically;
 * it checks conflicts, refuses an unfinished trace (TBE_ESTATE) and adds up
 * progress.  No output opens, names or renames a file, and none ever reads
 * another's. */
#ifndef TBE_TRACE_EXPORTER_H
#define TBE_TRACE_EXPORTER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "tbexport/error.h"
#include "tbexport/export.h"
#include "tbexport/trace.h"

/* ---- the sink ----
 * Where an output's bytes go, behind one backend table (the file that
 * export_run.c staged or opened, today the only backend), with one sticky
 * error: after the first failure writes are no-ops, and the output checks
 * once, at its end (tbe__sink_error).  An output appends; XSpace also
 * patches the lengths of messages it has closed (bytes already written,
 * never beyond `written`). */
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

/* A sink over `fd`, a new empty file the caller owns (export_run.c; the
 * JSON output's test seam tbe__json_write_fd). */
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

/* ---- the table ---- */

typedef struct tbe__export_ctx {
  const tbe_trace *trace; /* finished (export_run.c checks) */
  const char *host;   /* validated; recorded inside the outputs (may be NULL) */
  const char *name;   /* the file's name, recorded where a format names itself */
  int plain;          /* JSON: not gzipped (tbe_export_chrome_json's choice) */
  const tbe_allocator *a;
  /* Progress in events written by this output (may be NULL). */
  void (*progress)(void *ctx, uint64_t done, uint64_t total);
  void *progress_ctx;
  /* The run's HParams session (tbe_export_options: run, command, labels). */
  const char *run;
  const char *command;
  const char *const *labels;
  size_t nlabels;
  /* The trace's analysis, made by the first output that needs it and
   * shared by the others (export_run.c frees it; NULL: none shares). */
  struct tbe_analysis **analysis;
  unsigned threads;   /* tbe_export_options.threads (0: the default) */
} tbe__export_ctx;

typedef struct tbe__exporter {
  const char *name;   /* "xplane", "json", "events" */
  unsigned bit;       /* TBE_OUT_* */
  /* Writes this output of ctx->trace into `out`.  Returns 0 or a negative
   * code (the sink's error included). */
  int (*write)(const tbe__export_ctx *ctx, tbe__sink *out);
} tbe__exporter;

/* The generic status lines an output states before the trace's own
 * warnings: records dropped, records with bad timestamps, (WITH_OVERHEAD:
 * CUPTI's overhead of a collected trace,) the capture ended early.  A
 * status that one of the trace's warnings already states in more detail is
 * left out, so that no list repeats itself.  Calls EMIT for each line. */
void tbe__status_lines(const tbe_trace *t, int with_overhead,
                       void (*emit)(void *ctx, const char *line, size_t len), void *ctx);

/* The name of a tbe_source as the outputs record it ("cupti", "kineto",
 * "chrome", "xspace", "nsys", "unknown"), and back (TBE_SRC_UNKNOWN for
 * a name it does not know). */
const char *tbe__source_name(uint32_t source);
uint32_t tbe__source_of(const char *name, size_t len);

/* The number of leading entries of `lines` (n strings, the warnings list
 * of one of our files) that are generic status lines: the largest k (at
 * most 4) such that tbe__status_lines of `t`'s counters and the trace
 * warnings lines[k..n) is exactly lines[0..k).  `t` gives the counters and
 * the source; its own warnings are not used. */
size_t tbe__status_prefix(const tbe_trace *t, int with_overhead, const tbe_str *lines, size_t n);

/* Checks the labels of tbe_export_options (its comment gives the rules).
 * Returns 0 or TBE_EINVAL. */
int tbe__labels_check(const char *const *labels, size_t n);

/* The allocator `t` was created with (model/model_int.h's, declared here
 * too for the importers' scratch memory: other rooms read this header). */
const tbe_allocator *tbe__trace_allocator(const tbe_trace *t);

extern const tbe__exporter tbe__exporter_xplane;
extern const tbe__exporter tbe__exporter_json;
extern const tbe__exporter tbe__exporter_events;
extern const tbe__exporter tbe__exporter_hparams;

#endif
