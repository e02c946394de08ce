/* exporter.h: the table of outputs over one finished trace and the sink
 * they write into (export/sink.h); the run room (src/trace/run/) places
 * their files.
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
#include "trace/export/sink.h"
#include "trace/model/vocab.h"

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

/* Checks the labels of tbe_export_options (its comment gives the rules).
 * Returns 0 or TBE_EINVAL. */
int tbe__labels_check(const char *const *labels, size_t n);

extern const tbe__exporter tbe__exporter_xplane;
extern const tbe__exporter tbe__exporter_json;
extern const tbe__exporter tbe__exporter_events;
extern const tbe__exporter tbe__exporter_hparams;

#endif
