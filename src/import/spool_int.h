/* spool_int.h: the first phase of spool -> trace (spool.c's essay):
 * every item of a spool copied into typed arrays, spool string ids mapped
 * to trace strings as they are defined.  Private to the spool importer.
 *
 *   scan s = {.t = trace};
 *   tbe__spool_scan(data, n, tbe__convert_on_item, &s, &tail);
 *   ... build the trace from s (spool.c) ...
 *   tbe__convert_scan_free(&s);
 *
 * Nothing read is trusted: an item shorter than its struct is skipped, an
 * unknown one too; a string id never defined maps to "". */
#ifndef TBE_IMPORT_SPOOL_INT_H
#define TBE_IMPORT_SPOOL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events/spool.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"

/* ---- growable arrays ---- */

#define VEC(T) \
  struct {     \
    T *v;      \
    size_t n, cap; \
  }

static inline int vpush(void **v, size_t *n, size_t *cap, size_t elem, const void *x) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    void *nv = realloc(*v, nc * elem);
    if (!nv) return TBE_ENOMEM;
    *v = nv;
    *cap = nc;
  }
  memcpy((char *)*v + *n * elem, x, elem);
  (*n)++;
  return 0;
}
#define PUSH(vec, x) vpush((void **)&(vec).v, &(vec).n, &(vec).cap, sizeof *(vec).v, (x))

/* ---- what a scan holds ---- */

/* Hardware metrics (spool.h, items 25-28), checked and flattened as they
 * are scanned: one entry per value. */
typedef struct sp_msample {
  int64_t ts;        /* end of the sample's interval */
  double v;
  uint32_t device, metric; /* metric: the spool's metric id */
} sp_msample;

typedef struct sp_kmval {
  double v;
  uint32_t item;     /* which TBE__SP_KERNEL_METRICS item (0, 1, ...) */
  uint32_t name, device, launches, metric; /* name: spool string id */
} sp_kmval;

typedef struct sp_mstatus {
  tbe__sp_metric_status st;
  tbe_str reason;    /* the one-line reason, 0 if none */
} sp_mstatus;

/* Metric ids are dense from 1; a larger one is refused. */
#define SP_METRIC_ID_MAX 4096u

/* What was wrong with the metric items, each counted and said once. */
typedef struct sp_mbad {
  uint64_t short_items;  /* counts that do not fit the item's length */
  uint64_t bad_values;   /* NaN or infinite values left out */
  uint64_t unknown_ids;  /* values of a metric id never defined */
  uint64_t bad_ts;       /* samples with a zero or negative timestamp */
} sp_mbad;

typedef struct scan {
  tbe_trace *t;
  tbe__sp_info info;
  int have_info, have_end, have_signal;
  tbe__sp_end end;
  tbe__sp_signal signal; /* the first fatal signal, if any */
  tbe__sp_stats stats;
  tbe__sp_rank rank;     /* the launcher's rank, when have_rank */
  int have_rank;
  char job[129];         /* its job id, cut */
  char host[256];
  char cmd[4096];
  VEC(tbe_str) strs; /* spool id -> trace string */
  VEC(tbe__sp_kernel) kernels;
  VEC(tbe__sp_memcpy) memcpys;
  VEC(tbe__sp_memset) memsets;
  VEC(tbe__sp_api) apis;
  VEC(tbe__sp_replayed) replays; /* launches the range profiler replayed */
  VEC(tbe__sp_sync) syncs;
  VEC(tbe__sp_marker) markers;
  VEC(tbe__sp_marker_data) mdata;
  VEC(tbe__sp_overhead) overheads;
  VEC(tbe__sp_device) devices;
  VEC(tbe__sp_context) contexts;
  VEC(tbe__sp_memory) memory;
  VEC(tbe__sp_thread_name) tnames;
  VEC(tbe__sp_window) windows;
  VEC(tbe__sp_step) steps;
  VEC(tbe_str) notes;
  VEC(tbe__sp_metric_def) mdefs;
  VEC(sp_msample) msamples;
  VEC(sp_kmval) kmvals;
  VEC(sp_mstatus) mstatus;
  uint32_t nkm_items;
  sp_mbad mbad;
  int64_t last_ts; /* latest timestamp seen anywhere */
} scan;

/* Notes the latest timestamp seen anywhere. */
static inline void seen(scan *s, int64_t ts) {
  if (ts > s->last_ts) s->last_ts = ts;
}

/* Maps a spool string id to a trace string; unknown ids give "". */
static inline tbe_str S(const scan *s, uint32_t id) { return id < s->strs.n ? s->strs.v[id] : 0; }

/* The spool item callback of tbe__spool_scan: appends the item to its
 * array of the scan `ctx`.  Returns 0 or TBE_ENOMEM. */
int tbe__convert_on_item(void *ctx, unsigned type, const uint8_t *body, size_t len);

/* Whether a note of the spool repeats what a metric status item says
 * (spool_metrics.c): then only the status's warning line is written. */
int tbe__spool_note_is_status(const scan *s, tbe_str note);
/* The metric items into the trace (spool_metrics.c): counter tracks of
 * process `pid`, kernel figures, status warnings.  `keep` says whether a
 * sample's time lies in the kept windows.  Returns 0 or an error. */
int tbe__spool_metrics(scan *s, tbe_trace *t, int64_t pid, int (*keep)(void *, int64_t),
                       void *kctx);

/* Frees the arrays (not the trace). */
void tbe__convert_scan_free(scan *s);

#endif
