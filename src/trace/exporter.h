/* exporter.h: the table of outputs over one finished trace, and the run
 * layout that places them.
 *
 * Each output (Chrome JSON, XSpace, run summary events) is a small table
 * entry: a name, its TBE_OUT_* bit and a function that writes its bytes
 * into a file it is handed.  Exporters write bytes; export_run.c alone
 * decides where files go: it stages one file per output below the log dir
 * (common/fsutil.h, tbe__stage) and commits them together.  No output ever
 * reads another's file. */
#ifndef TBE_TRACE_EXPORTER_H
#define TBE_TRACE_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "common/fsutil.h"
#include "tbexport/export.h"
#include "tbexport/trace.h"

typedef struct tbe__export_ctx {
  const tbe_trace *trace;
  const char *host;   /* validated; recorded inside the outputs */
  const tbe_allocator *a;
  /* Progress in events written by this output (may be NULL). */
  void (*progress)(void *ctx, uint64_t done, uint64_t total);
  void *progress_ctx;
} tbe__export_ctx;

typedef struct tbe__exporter {
  const char *name;   /* "xplane", "json", "events" */
  unsigned bit;       /* TBE_OUT_* */
  /* Writes this output of ctx->trace into `fd`, a new empty file (left
   * open; the caller commits or removes it).  Returns 0 or a negative
   * code. */
  int (*write)(const tbe__export_ctx *ctx, int fd);
} tbe__exporter;

/* ---- the run layout (export_run.c) ----
 * Our event files are recognised by name, so that a replacement finds
 * the files it replaces:
 *   events.out.tfevents.<ts>.<who><mark>
 * <ts> the export time, 10 digits; <who> a valid name (tbe_name_check);
 * <mark> TBE__SUMMARY_MARK (the run summary of host <who>, in <run>/) or
 * TBE__DIFF_MARK (the comparison against base run <who>, in the new run's
 * folder).  TensorBoard reads every file whose name holds "tfevents"; the
 * fixed width of <ts> and the fixed mark make <who> unambiguous, and the
 * longest name is 248 bytes. */
#define TBE__SUMMARY_MARK ".tbexport-summary"
#define TBE__DIFF_MARK ".tbexport-diff"

/* Writes the name of our event file for `who` and `mark` at time `ts`.
 * Returns 0 or TBE_EINVAL (does not fit). */
int tbe__events_name(char *buf, size_t size, long long ts, const char *who, const char *mark);

/* Whether `name` is our event file for `who` and `mark` (any time). */
int tbe__events_name_is(const char *name, const char *who, const char *mark);

/* The run lock: waits until no other writer of run `run` in `logdir`
 * holds it (tbe__lock_take on logdir/.tbexport.lock).  Every writer into
 * a run's folders (tbe_export_run, the diff writers) holds it from before
 * it looks at the folders to after its commit, so writers of one run take
 * turns: the last to commit wins, with all its files.  Waiting, not
 * refusing: writers of different hosts into one run (the ranks of one
 * job) are all meant to succeed, and a writer holds the lock only for its
 * export, never while a profiled program runs.  Returns 0 (release with
 * tbe__lock_release) or a negative code (`where` names the path). */
int tbe__run_lock(tbe__lock *l, const char *logdir, const char *run, char *where, size_t wsize);

/* Stages, in the stage's base/<run>/, a new event file for `who` and
 * `mark` (name in `name`, `size` bytes; descriptor in *fd) that replaces,
 * at commit, every earlier one of the same `who` and `mark`.  With
 * `force` 0 an earlier one is a conflict instead: TBE_EEXIST, s->where
 * names it.  Call with the run lock held.  Returns 0 or a negative code. */
int tbe__stage_events(tbe__stage *s, const char *run, const char *who, const char *mark,
                      int force, int *fd, char *name, size_t size);

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
