/* spool_int.h: the first phase of spool -> trace (spool.c's essay):
 * every item of a spool copied into typed arrays, spool string ids mapped
 * to trace strings as they are defined.  Private to the spool importer.
 *
 *   scan s;
 *   tbe__convert_scan_init(&s, trace, allocator);
 *   tbe__spool_scan(data, n, tbe__convert_on_item, &s, &tail);
 *   ... build the trace from s (spool.c) ...
 *   tbe__convert_scan_free(&s);
 *
 * Nothing read is trusted: an item shorter than its struct is skipped, an
 * unknown one too; a string id never defined maps to "".
 *
 * Bounded by the input, whatever it says.  Every array and map of a scan
 * (and of the build that follows) is on the import's allocator and grows
 * by at most one element per item read (or per value of a metric item,
 * which its length holds), so memory is a multiple of the spool's size.
 * Ids from the input are keys, never indexes or counts: a string id goes
 * to a dense array only while the ids come as the collector writes them
 * (1, 2, ...: the array never holds more entries than string items were
 * read), any other id to a map; metric ids, (kind, device) pairs of the
 * status items, correlation ids and contexts are keys of tbe__map
 * (common/map.h: keyed, so ids chosen to collide cost what random ones
 * do).  No lookup scans an array whose length is a count from the input:
 * the import is linear in the spool's size (test_hostile_input). */
#ifndef TBE_IMPORT_SPOOL_INT_H
#define TBE_IMPORT_SPOOL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/map.h"
#include "common/vec.h"
#include "events/spool.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"

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

/* The most metrics one PM sample item may carry (a larger count is a
 * malformed item). */
#define SP_METRIC_ID_MAX 4096u

/* What was wrong with the metric items, each counted and said once. */
typedef struct sp_mbad {
  uint64_t short_items;  /* counts that do not fit the item's length */
  uint64_t bad_values;   /* NaN or infinite values left out */
  uint64_t unknown_ids;  /* values of a metric id never defined */
  uint64_t bad_ts;       /* samples with a zero or negative timestamp */
  uint64_t pm_raw;       /* PM samples left raw (TBE__SP_PM_TIMES entries) */
  int pm_evaluated;      /* a TBE__SP_PM_EVALUATED: the conversion evaluated them */
} sp_mbad;

/* The scan's arrays (tbe__vec, elements of the type named), one item each
 * in the order read. */
#define SP_ARRAYS(X)                                                      \
  X(strs, tbe_str) /* spool id -> trace string, ids 0..n-1 */             \
  X(kernels, tbe__sp_kernel)                                              \
  X(memcpys, tbe__sp_memcpy)                                              \
  X(memsets, tbe__sp_memset)                                              \
  X(apis, tbe__sp_api)                                                    \
  X(replays, tbe__sp_replayed) /* launches the range profiler replayed */ \
  X(syncs, tbe__sp_sync)                                                  \
  X(markers, tbe__sp_marker)                                              \
  X(mdata, tbe__sp_marker_data)                                           \
  X(overheads, tbe__sp_overhead)                                          \
  X(devices, tbe__sp_device)                                              \
  X(contexts, tbe__sp_context)                                            \
  X(memory, tbe__sp_memory)                                               \
  X(tnames, tbe__sp_thread_name)                                          \
  X(windows, tbe__sp_window)                                              \
  X(steps, tbe__sp_step)                                                  \
  X(notes, tbe_str)                                                       \
  X(mdefs, tbe__sp_metric_def)                                            \
  X(msamples, sp_msample)                                                 \
  X(kmvals, sp_kmval)                                                     \
  X(mstatus, sp_mstatus)                                                  \
  X(ops, tbe__sp_op) /* operators (begin and end items) */                \
  X(counters, tbe__sp_counter) /* sampled values (NVML) */                 \
  X(dev_uuids, tbe__sp_device_uuid) /* each CUDA ordinal's GPU UUID */

typedef struct scan {
  tbe_trace *t;
  const tbe_allocator *a; /* the import's: every array and map below */
  tbe__sp_info info;
  int have_info, have_end, have_signal;
  tbe__sp_end end;
  tbe__sp_signal signal; /* the first fatal signal, if any */
  tbe__sp_stats stats;
  tbe__sp_nvtx_stats nvtx;  /* the collector's own NVTX handlers (the last item) */
  int have_nvtx;
  tbe__sp_rank rank;     /* the launcher's rank, when have_rank */
  int have_rank;
  char job[129];         /* its job id, cut */
  char host[256];
  char cmd[4096];
#define SP_FIELD(name, T) tbe__vec name;
  SP_ARRAYS(SP_FIELD)
#undef SP_FIELD
  tbe__map strmap;       /* spool id -> trace string, the ids strs does not hold */
  tbe__map mdef_of;      /* metric id -> index in mdefs of its last definition */
  tbe__map mstatus_last; /* SP_STATUS_KEY -> index in mstatus of its last status */
  uint32_t nkm_items;
  sp_mbad mbad;
  int64_t last_ts; /* latest timestamp seen anywhere */
} scan;

/* The key of a status item's (kind, device): the last one of a key counts. */
#define SP_STATUS_KEY(kind, device) ((uint64_t)(kind) << 32 | (uint32_t)(device))

/* Notes the latest timestamp seen anywhere. */
static inline void seen(scan *s, int64_t ts) {
  if (ts > s->last_ts) s->last_ts = ts;
}

/* Maps a spool string id to a trace string; unknown ids give "". */
static inline tbe_str S(const scan *s, uint32_t id) {
  if (id < s->strs.n) return ((const tbe_str *)s->strs.data)[id];
  const uint32_t *v = tbe__map_get(&s->strmap, id);
  return v ? *v : 0;
}

/* The index in s->mdefs of metric id `id`'s last definition, or -1. */
static inline long sp_mdef(const scan *s, uint32_t id) {
  const uint32_t *v = tbe__map_get(&s->mdef_of, id);
  return v ? (long)*v : -1;
}

/* An empty scan of trace `t`, allocating through `a` (which must outlive
 * it).  Allocates nothing yet. */
void tbe__convert_scan_init(scan *s, tbe_trace *t, const tbe_allocator *a);

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

/* Frees the arrays and maps (not the trace). */
void tbe__convert_scan_free(scan *s);

#endif
