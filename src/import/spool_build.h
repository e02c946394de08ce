/* spool_build.h: the second phase of spool -> trace (spool.c's essay):
 * the build's state, the kept windows' test, and the record passes of
 * spool_records.c.  Private to the spool importer.
 *
 * spool.c runs the build (build_trace): the session's span and the
 * windows first, then the passes of spool_records.c, one per kind of
 * record, then the metrics (spool_metrics.c), steps and span.  A pass
 * reads the scan, adds to the trace and counts into b->tally; it never
 * calls back into spool.c, and spool.c alone sees the session's options
 * and report (spool.h), so the files form no circle
 * (scripts/check_cycles).  Every pass returns 0 or an error (TBE_ENOMEM,
 * TBE_ETOOBIG, the trace's); a record that is bad or outside the kept
 * windows is counted and left out, never an error. */
#ifndef TBE_IMPORT_SPOOL_BUILD_H
#define TBE_IMPORT_SPOOL_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "common/map.h"
#include "common/vec.h"
#include "import/spool_int.h"
#include "tbexport/error.h"
#include "tbexport/profiler.h"
#include "tbexport/trace.h"

struct tbe__convert_opts;
struct tbe__convert_info;

/* ---- u32 -> u32 map: the toolbox's keyed hash (common/map.h), so ids
 * chosen to collide cost what random ones do; key UINT32_MAX is "none"
 * and never stored ---- */

typedef tbe__map u32map;

static inline void map_init(u32map *m, const tbe_allocator *a) {
  tbe__map_init(m, a, TBE__SEED_PROCESS);
}

/* Stores k -> v; an existing key keeps its value unless `replace`. */
static inline int map_put(u32map *m, uint32_t k, uint32_t v, int replace) {
  if (k == UINT32_MAX) return 0;
  int added = 0;
  uint32_t *slot = tbe__map_put(m, k, &added);
  if (!slot) return TBE_ENOMEM;
  if (added || replace) *slot = v;
  return 0;
}

static inline int map_get(const u32map *m, uint32_t k, uint32_t *v) {
  if (k == UINT32_MAX) return 0;
  const uint32_t *p = tbe__map_get(m, k);
  if (!p) return 0;
  *v = *p;
  return 1;
}

static inline void map_free(u32map *m) { tbe__map_deinit(m); }

/* ---- the build ---- */

typedef struct window {
  int64_t a, b;
} window;

typedef struct range {
  int64_t start, end;
  uint32_t track;
  uint32_t start_marker, data; /* indexes; data UINT32_MAX if none */
  uint8_t flags, is_mark;
} range;

typedef struct ival {
  int64_t a, b;
} ival;

/* What the passes count, passed down so that they need nothing of the
 * session's header (spool.h): spool.c copies it into tbe__convert_info
 * when the build is done.  `r` is the conversion's result (its record
 * counts). */
typedef struct sp_tally {
  uint64_t outside_capture, outside_window; /* records left out by each */
  uint64_t bad_devices;
  uint64_t nvtx_unclosed, nvtx_orphan_ends;
  uint64_t ops, ops_unclosed;
  tbe_profiler_result *r;
} sp_tally;

/* Windows: what is kept.  The collection windows come from the spool's
 * TBE__SP_WINDOW items (collection switched on and off: start/stop,
 * --delay, --duration); a spool without any (older writers, tests) is one
 * unbounded window.  The capture windows come from the capture range (NVTX
 * ranges named NAME, or cudaProfilerStart..Stop).  What is kept is their
 * intersection, as sorted, disjoint, inclusive intervals ([a, b], b =
 * INT64_MAX while still open), and every kind of record is tested against
 * it: API calls, NVTX ranges and marks, syncs and memory by their start,
 * GPU work by the start of the call that launched it, CUPTI's overhead by
 * its overlap (cut to the window), steps by their start. */
typedef struct build {
  scan *s;
  tbe_trace *t;
  const struct tbe__convert_opts *o; /* spool.c's alone */
  struct tbe__convert_info *info;    /* spool.c's alone: the passes below count into tally */
  sp_tally tally;
  u32map corr;      /* correlation id -> api index (runtime preferred) */
  u32map replay;    /* correlation id -> replays index (the range profiler's launches) */
  u32map ctxdev;    /* context id -> device */
  u32map kdur;      /* (kernel name id, device) -> kmvals index of its duration */
  int have_kdur;    /* kdur is filled */
  tbe__vec coll;    /* window: collection windows (sorted, disjoint) */
  int coll_bounded; /* the spool has window items */
  tbe__vec win;     /* window: kept windows, coll (if bounded) cut to the capture */
  int windowed;     /* a capture range applies */
  int bounded;      /* win applies (coll_bounded || windowed) */
  tbe__vec gpu;     /* ival: GPU busy intervals */
  int64_t end_ns;   /* end of the capture */
} build;

/* Index of the window of `v` (sorted, disjoint) holding ts, or -1. */
static inline long window_at(const tbe__vec *v, int64_t ts) {
  const window *w = v->data;
  size_t lo = 0, n = v->n, hi = n;
  while (lo < hi) { /* first window ending at or after ts */
    size_t mid = lo + (hi - lo) / 2;
    if (w[mid].b < ts)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && w[lo].a <= ts ? (long)lo : -1;
}

static inline int in_window(const build *b, int64_t ts) {
  return !b->bounded || window_at(&b->win, ts) >= 0;
}

/* Whether a record starting at ts is kept; counts it as left out, by the
 * capture range or by the collection window, when it is not. */
static inline int keep(build *b, int64_t ts) {
  if (in_window(b, ts)) return 1;
  if (b->windowed && (!b->coll_bounded || window_at(&b->coll, ts) >= 0))
    b->tally.outside_capture++;
  else
    b->tally.outside_window++;
  return 0;
}

/* The pid of the spool's process (0 when the spool has no info item). */
static inline int64_t spool_pid(const scan *s) { return s->have_info ? (int64_t)s->info.pid : 0; }

/* ---- the record passes (spool_records.c) ---- */

/* NVTX markers paired into ranges (range, into `rs`), their data
 * attached, those that do not nest on their thread marked asynchronous. */
int tbe__spool_nvtx_ranges(build *b, tbe__vec *rs);
/* The ranges and marks of `rs` that start in a kept window, as events. */
int tbe__spool_nvtx_events(build *b, const tbe__vec *rs);
/* Framework operators (TBE__SP_OP begin/end pairs). */
int tbe__spool_operators(build *b);
/* Runtime and driver API calls. */
int tbe__spool_api_calls(build *b);
/* GPU work: kernels (the range profiler's replayed ones placed in their
 * launch), copies, memsets; each noted in b->gpu. */
int tbe__spool_kernels(build *b);
int tbe__spool_copies(build *b);
int tbe__spool_memsets(build *b);
/* Synchronization, on the stream it waited for. */
int tbe__spool_syncs(build *b);
/* CUPTI overhead, cut to the kept windows. */
int tbe__spool_overheads(build *b);
/* Memory allocations and frees. */
int tbe__spool_memory(build *b);
/* Devices and thread names. */
int tbe__spool_devices_threads(build *b);

/* ---- sampled counters (spool_counters.c) ---- */

/* The collector's sampled values (NVML's device memory in use), placed
 * on their GPU's CUDA ordinal (by UUID when the item names none), as
 * counter tracks of the spool's process. */
int tbe__spool_counters(build *b);

#endif
