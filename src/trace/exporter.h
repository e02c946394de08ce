/* exporter.h: the table of outputs over one finished trace.
 *
 * Each output (Chrome JSON, XSpace, run summary events) is a small table:
 * a name, its TBE_OUT_* bit and a function that writes it for one run.
 * tbe_export_run walks the table; no output ever reads another's file. */
#ifndef TBE_TRACE_EXPORTER_H
#define TBE_TRACE_EXPORTER_H

#include <stdint.h>

#include "tbexport/export.h"
#include "tbexport/trace.h"

typedef struct tbe__export_ctx {
  const tbe_trace *trace;
  const char *logdir;
  const char *run;    /* validated */
  const char *host;   /* validated */
  int force;
  int durable;
  const tbe_allocator *a;
  void (*on_file)(void *ctx, const char *path);
  void *on_file_ctx;
  /* Progress in events written by this output (may be NULL). */
  void (*progress)(void *ctx, uint64_t done, uint64_t total);
  void *progress_ctx;
} tbe__export_ctx;

typedef struct tbe__exporter {
  const char *name;   /* "xplane", "json", "events" */
  unsigned bit;       /* TBE_OUT_* */
  /* Writes this output for ctx->run/ctx->host; calls ctx->on_file for each
   * file written.  Returns 0 or a negative code; on failure leaves no file
   * under a final name. */
  int (*write)(const tbe__export_ctx *ctx);
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

extern const tbe__exporter tbe__exporter_xplane;
extern const tbe__exporter tbe__exporter_json;
extern const tbe__exporter tbe__exporter_events;

#endif
