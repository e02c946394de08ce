/* spool.c: the spool importer: spool -> trace model (see spool.h).
 *
 * Two phases.  Scanning (tbe__spool_scan with spool_scan.c's callback)
 * copies every item into typed arrays, mapping spool string ids to trace
 * strings as they are defined.
 * Building then: checks timestamps (start = 0 or end < start is counted in
 * dropped_out_of_range and left out), pairs NVTX START/END markers by id
 * (CUPTI gives both the same id; unclosed ranges end at the end of the
 * capture, ends without a start are counted), attaches MARKER_DATA (color,
 * category, payload), marks ranges that do not nest on their thread as
 * asynchronous, computes the kept windows (the collection windows cut to
 * the capture range's: see "Windows" below) and leaves out what falls
 * outside, places synchronization records on the GPU stream they waited
 * for, turns the program's step marks into steps, turns the hardware
 * metrics into counter tracks and kernel figures (spool_metrics.c), and adds
 * everything to the trace, whose tbe_trace_finish links API calls to the
 * GPU work they launched; --steps then replaces the steps.  Nothing read
 * from a spool is trusted: ids, lengths and counts are checked, unknown
 * items skipped, and every lookup by an id from the spool is a map (or
 * the dense string array that only items read can grow): the conversion
 * is linear in the spool's size and its memory a multiple of it
 * (spool_int.h, "Bounded by the input"), all of it on the import's
 * allocator (tbe__convert_opts.allocator).
 *
 * Invariant: with any window, no event starts outside the kept windows
 * (GPU work: the call that launched it), CUPTI overhead is counted only
 * inside them, and the trace's start and stop are their span plus the GPU
 * work launched in them. */
#include "import/spool.h"
#include "import/spool_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/map.h"
#include "common/vec.h"
#include "events/spool.h"
#include "import/importer.h"
#include "trace/exporter.h"
#include "trace/model/ops.h"
#include "tbexport/error.h"

/* ---- u32 -> u32 map: the toolbox's keyed hash (common/map.h), so ids
 * chosen to collide cost what random ones do; key UINT32_MAX is "none"
 * and never stored ---- */

typedef tbe__map u32map;

static void map_init(u32map *m, const tbe_allocator *a) { tbe__map_init(m, a, TBE__SEED_PROCESS); }

/* Stores k -> v; an existing key keeps its value unless `replace`. */
static int map_put(u32map *m, uint32_t k, uint32_t v, int replace) {
  if (k == UINT32_MAX) return 0;
  int added = 0;
  uint32_t *slot = tbe__map_put(m, k, &added);
  if (!slot) return TBE_ENOMEM;
  if (added || replace) *slot = v;
  return 0;
}

static int map_get(const u32map *m, uint32_t k, uint32_t *v) {
  if (k == UINT32_MAX) return 0;
  const uint32_t *p = tbe__map_get(m, k);
  if (!p) return 0;
  *v = *p;
  return 1;
}

static void map_free(u32map *m) { tbe__map_deinit(m); }

/* ---- names ---- */

static const char *mem_kind(unsigned k) {
  static const char *const n[] = {"Unknown", "Pageable", "Pinned",      "Device",
                                  "Array",   "Managed",  "Device Static", "Managed Static"};
  return k < 8 ? n[k] : "Unknown";
}

static const char *copy_kind(unsigned k) {
  static const char *const n[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                  "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < 11 ? n[k] : "Unknown";
}

static const char *sync_name(unsigned k) {
  switch (k) {
    case 1: return "Event Sync";
    case 2: return "Stream Wait Event";
    case 3: return "Stream Sync";
    case 4: return "Context Sync";
    default: return "Sync";
  }
}

static const char *overhead_name(unsigned k) {
  switch (k) {
    case 1: return "Driver compiler";
    case 1u << 16: return "CUPTI buffer flush";
    case 2u << 16: return "CUPTI instrumentation";
    case 3u << 16: return "CUPTI resource";
    case 4u << 16: return "Runtime triggered module loading";
    case 5u << 16: return "Lazy function loading";
    case 6u << 16: return "Command buffer full";
    case 7u << 16: return "Activity buffer request";
    case 8u << 16: return "UVM activity init";
    default: return "CUPTI overhead";
  }
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "a fatal signal";
  }
}

/* ---- building ---- */

typedef struct window {
  int64_t a, b;
} window;

typedef struct range {
  int64_t start, end;
  uint32_t track;
  uint32_t start_marker, data; /* indexes; data UINT32_MAX if none */
  uint8_t flags, is_mark;
} range;

static int cmp_range(const void *x, const void *y) {
  const range *a = x, *b = y;
  if (a->track != b->track) return a->track < b->track ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1; /* longer first */
  return 0;
}

typedef struct ival {
  int64_t a, b;
} ival;

static int cmp_ival(const void *x, const void *y) {
  const ival *a = x, *b = y;
  return a->a < b->a ? -1 : a->a > b->a;
}

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
  const tbe__convert_opts *o;
  tbe__convert_info *info;
  u32map corr;     /* correlation id -> api index (runtime preferred) */
  u32map replay;   /* correlation id -> replays index (the range profiler's launches) */
  u32map ctxdev;   /* context id -> device */
  u32map kdur;     /* (kernel name id, device) -> kmvals index of its duration */
  int have_kdur;   /* kdur is filled */
  tbe__vec coll;   /* window: collection windows (sorted, disjoint) */
  int coll_bounded; /* the spool has window items */
  tbe__vec win;     /* window: kept windows, coll (if bounded) cut to the capture */
  int windowed;     /* a capture range applies */
  int bounded;      /* win applies (coll_bounded || windowed) */
  tbe__vec gpu;     /* ival: GPU busy intervals */
  int64_t end_ns;  /* end of the capture */
} build;

/* Index of the window of `v` (sorted, disjoint) holding ts, or -1. */
static long window_at(const tbe__vec *v, int64_t ts) {
  const window *w = v->data;
  size_t lo = 0, n = v->n, hi = n;
  while (lo < hi) { /* first window ending at or after ts */
    size_t mid = lo + (hi - lo) / 2;
    if (w[mid].b < ts) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && w[lo].a <= ts ? (long)lo : -1;
}

static int in_window(const build *b, int64_t ts) {
  return !b->bounded || window_at(&b->win, ts) >= 0;
}

/* Whether a record starting at ts is kept; counts it as left out, by the
 * capture range or by the collection window, when it is not. */
static int keep(build *b, int64_t ts) {
  if (in_window(b, ts)) return 1;
  if (b->windowed && (!b->coll_bounded || window_at(&b->coll, ts) >= 0))
    b->info->outside_capture++;
  else
    b->info->outside_window++;
  return 0;
}

/* The end of the kept window holding ts (INT64_MAX while open or when
 * nothing bounds the capture). */
static int64_t window_end(const build *b, int64_t ts) {
  if (!b->bounded) return INT64_MAX;
  long w = window_at(&b->win, ts);
  return w >= 0 ? TBE__VEC_AT(&b->win, window, w).b : INT64_MAX;
}

/* GPU work counts as inside when the call that launched it is (when that
 * call was recorded with a good time; else by its own start). */
static int gpu_keep(build *b, int64_t start, uint32_t corr) {
  uint32_t ai;
  if (corr && map_get(&b->corr, corr, &ai)) {
    int64_t start_api = TBE__VEC_AT(&b->s->apis, tbe__sp_api, ai).start;
    if (start_api > 0) return keep(b, start_api);
  }
  return keep(b, start);
}

static int cmp_window(const void *x, const void *y) {
  const window *a = x, *b = y;
  return a->a < b->a ? -1 : a->a > b->a;
}

/* Sorts the windows of `w` and merges overlapping ones in place. */
static void windows_normalize(tbe__vec *w) {
  window *v = w->data;
  if (w->n < 2) return;
  qsort(v, w->n, sizeof *v, cmp_window);
  size_t k = 0;
  for (size_t i = 1; i < w->n; i++) {
    if (v[i].a <= v[k].b) {
      if (v[i].b > v[k].b) v[k].b = v[i].b;
    } else {
      v[++k] = v[i];
    }
  }
  w->n = k + 1;
}

/* Appends the window [a, b] to `w`.  0 or TBE_ENOMEM. */
static int window_push(tbe__vec *w, int64_t a, int64_t b) {
  window *x = TBE__VEC_PUSH(w, window);
  if (!x) return tbe__vec_error(w);
  x->a = a;
  x->b = b;
  return 0;
}

/* Collection windows from the spool's on/off items, in the order written. */
static int collection_windows(build *b) {
  scan *s = b->s;
  int rc = 0;
  int64_t open = -1;
  b->coll_bounded = s->windows.n > 0;
  const tbe__sp_window *ws = s->windows.data;
  for (size_t i = 0; i < s->windows.n && !rc; i++) {
    const tbe__sp_window *w = &ws[i];
    if (w->ts <= 0) continue;
    if (w->on && open < 0) {
      open = w->ts;
    } else if (!w->on && open >= 0) {
      rc = window_push(&b->coll, open, w->ts < open ? open : w->ts);
      open = -1;
    }
  }
  if (!rc && open >= 0) rc = window_push(&b->coll, open, INT64_MAX);
  if (!rc) windows_normalize(&b->coll);
  return rc;
}

/* The kept windows: the capture windows (b->win on entry) cut to the
 * collection windows. */
static int kept_windows(build *b) {
  b->bounded = b->coll_bounded || b->windowed;
  if (!b->windowed) {
    tbe__vec_clear(&b->win);
    return tbe__vec_append(&b->win, b->coll.data, b->coll.n);
  }
  windows_normalize(&b->win);
  if (!b->coll_bounded) return 0;
  tbe__vec cut;
  tbe__vec_init(&cut, b->s->a, sizeof(window));
  const window *wv = b->win.data, *cv = b->coll.data;
  size_t i = 0, j = 0;
  int rc = 0;
  while (i < b->win.n && j < b->coll.n && !rc) {
    const window *x = &wv[i], *y = &cv[j];
    int64_t a = x->a > y->a ? x->a : y->a, e = x->b < y->b ? x->b : y->b;
    if (a <= e) rc = window_push(&cut, a, e);
    if (x->b < y->b) i++;
    else j++;
  }
  tbe__vec_deinit(&b->win);
  b->win = cut;
  return rc;
}

static int bad_span(build *b, int64_t start, int64_t end) {
  if (start <= 0 || end < start) {
    b->t->dropped_out_of_range++;
    b->info->r.dropped_out_of_range++;
    return 1;
  }
  return 0;
}

static int add(build *b, tbe_event_kind kind, int64_t start, int64_t dur, uint64_t corr,
               tbe_str name, uint32_t track, uint8_t flags, const void *detail) {
  tbe_event e;
  memset(&e, 0, sizeof e);
  e.start_ns = start;
  e.dur_ns = dur;
  e.correlation = corr;
  e.name = name;
  e.track = track;
  e.detail = TBE_NONE;
  e.link = TBE_NONE;
  e.kind = (uint8_t)kind;
  e.flags = flags;
  return tbe_trace_add_event(b->t, &e, detail, NULL, 0, NULL);
}

/* A device id beyond the ordinals (int32) names no GPU: the record is left
 * out and counted, never narrowed into another GPU's. */
static int not_ordinal(build *b, uint32_t device) {
  if (device <= INT32_MAX) return 0;
  b->info->bad_devices++;
  return 1;
}

static int stream_track(build *b, int64_t pid, uint32_t stream, uint32_t device, uint32_t *tr) {
  return tbe_trace_track(b->t, TBE_TRACK_STREAM, pid, stream == UINT32_MAX ? -1 : (int64_t)stream,
                         (int32_t)device, tr);
}

static uint16_t ctx16(uint32_t c) { return c > UINT16_MAX ? UINT16_MAX : (uint16_t)c; }

/* Capture windows from NVTX ranges or cudaProfilerStart/Stop calls. */
static int compute_windows(build *b, const tbe__vec *ranges) {
  scan *s = b->s;
  const range *rs = ranges->data;
  const tbe__sp_marker *mk = s->markers.data;
  int rc = 0;
  if (b->o && b->o->capture == TBE_CAPTURE_NVTX && b->o->capture_name) {
    b->windowed = 1;
    for (size_t i = 0; i < ranges->n && !rc; i++) {
      if (rs[i].is_mark) continue;
      const tbe__sp_marker *m = &mk[rs[i].start_marker];
      const char *nm = tbe_trace_str(b->t, S(s, m->name));
      if (strcmp(nm, b->o->capture_name) != 0) continue;
      if (b->o->capture_domain && strcmp(tbe_trace_str(b->t, S(s, m->domain)),
                                         b->o->capture_domain) != 0)
        continue;
      rc = window_push(&b->win, rs[i].start, rs[i].end);
    }
  } else if (b->o && b->o->capture == TBE_CAPTURE_PROFILER_API) {
    b->windowed = 1;
    /* API records are per thread; order the start/stop calls by time. */
    tbe__vec ev; /* ival: (time, 1 start / 0 stop) */
    tbe__vec_init(&ev, s->a, sizeof(ival));
    const tbe__sp_api *api = s->apis.data;
    for (size_t i = 0; i < s->apis.n && !rc; i++) {
      const char *nm = tbe_trace_str(b->t, S(s, api[i].name));
      int st = !strcmp(nm, "cudaProfilerStart") || !strcmp(nm, "cuProfilerStart");
      int sp = !strcmp(nm, "cudaProfilerStop") || !strcmp(nm, "cuProfilerStop");
      if (!st && !sp) continue;
      ival *x = TBE__VEC_PUSH(&ev, ival);
      if (!x) {
        rc = tbe__vec_error(&ev);
        break;
      }
      x->a = st ? api[i].end : api[i].start;
      x->b = st;
    }
    ival *e = ev.data;
    if (!rc && ev.n) qsort(e, ev.n, sizeof *e, cmp_ival);
    int64_t open = -1;
    for (size_t i = 0; i < ev.n && !rc; i++) {
      if (e[i].b && open < 0) {
        open = e[i].a;
      } else if (!e[i].b && open >= 0) {
        rc = window_push(&b->win, open, e[i].a);
        open = -1;
      }
    }
    if (!rc && open >= 0) rc = window_push(&b->win, open, INT64_MAX);
    tbe__vec_deinit(&ev);
  }
  return rc;
}

/* Notes that the GPU was busy over [a, e].  0 or TBE_ENOMEM. */
static int gpu_busy(build *b, int64_t a, int64_t e) {
  ival *x = TBE__VEC_PUSH(&b->gpu, ival);
  if (!x) return tbe__vec_error(&b->gpu);
  x->a = a;
  x->b = e;
  return 0;
}

/* Admits one GPU activity record: a bad span is skipped (and counted by
 * bad_span), one outside the capture window is counted and skipped, else its
 * stream track is found.  Returns 1 with *tr set, 0 to skip, or an error. */
static int gpu_admit(build *b, int64_t start, int64_t end, uint32_t corr, int64_t pid,
                     uint32_t stream, uint32_t device, uint32_t *tr) {
  if (bad_span(b, start, end)) return 0;
  seen(b->s, end);
  if (not_ordinal(b, device)) return 0;
  if (!gpu_keep(b, start, corr)) return 0;
  int rc = stream_track(b, pid, stream, device, tr);
  return rc ? rc : 1;
}

static int cmp_step_item(const void *x, const void *y) {
  const tbe__sp_step *a = x, *b = y;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return a->tid < b->tid ? -1 : a->tid > b->tid; /* (a stable order for equal times) */
}

/* Steps the program marked (tbe_profiler_step): numbered by time order over
 * the whole spool, so that a step keeps its number when the windows leave
 * out the ones before it; each lasts until the next mark, the last until
 * the end of the capture, and each is cut to the end of its window. */
static int marked_steps(build *b) {
  scan *s = b->s;
  b->info->steps_marked = s->steps.n;
  if (s->steps.n == 0) return 0;
  tbe__sp_step *sv = s->steps.data;
  qsort(sv, s->steps.n, sizeof *sv, cmp_step_item);
  int64_t num = 0;
  for (size_t i = 0; i < s->steps.n; i++) {
    const tbe__sp_step *st = &sv[i];
    if (st->ts <= 0) continue;
    int64_t n = num++;
    if (!in_window(b, st->ts)) continue;
    int64_t end = i + 1 < s->steps.n ? sv[i + 1].ts : b->end_ns;
    int64_t we = window_end(b, st->ts);
    if (end > we) end = we;
    if (end < st->ts) end = st->ts;
    uint32_t tr;
    int rc = tbe_trace_track(b->t, TBE_TRACK_THREAD, st->pid, st->tid, -1, &tr);
    char name[48];
    snprintf(name, sizeof name, "ProfilerStep#%lld", (long long)n);
    if (!rc) rc = tbe_trace_add_step(b->t, n, st->ts, end, tbe_trace_str_id(b->t, name));
    if (rc) return rc;
    b->t->steps[b->t->nsteps - 1].track = tr;
  }
  return 0;
}

/* ---- building the trace ---- */

/* The pid of the spool's process (0 when the spool has no info item). */
static int64_t spool_pid(const scan *s) { return s->have_info ? (int64_t)s->info.pid : 0; }

/* The process and its host; where the session starts (*start_out) and
 * ends (b->end_ns): the latest timestamp anywhere closes unended ranges
 * (and the window of a spool that ended early). */
static int process_and_end(build *b, int64_t *start_out) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  uint32_t pi;
  if ((rc = tbe_trace_process(t, pid, &pi))) return rc;
  const char *host = b->o && b->o->host ? b->o->host : (s->host[0] ? s->host : NULL);
  if (host) t->host = tbe_trace_str_id(t, host);
  t->processes[pi].host = t->host;
  t->processes[pi].name = tbe_trace_str_id(t, s->cmd);
  t->source = TBE_SRC_CUPTI;
  t->rank = s->have_rank ? s->rank.rank : -1;
  t->world_size = s->have_rank ? s->rank.world_size : 0;
  if (!s->have_rank && b->o && b->o->has_rank && b->o->rank >= 0) {
    t->rank = b->o->rank;
    t->world_size = b->o->world_size > b->o->rank ? b->o->world_size : 0;
  }
  int64_t start = s->info.start_ns;
  const tbe__sp_window *ws = s->windows.data;
  for (size_t i = 0; i < s->windows.n; i++)
    if (ws[i].on) {
      if (ws[i].ts > 0) start = ws[i].ts;
      break;
    }
#define LAST(vec, T)                                             \
  for (size_t i_ = 0; i_ < (vec).n; i_++) {                      \
    const T *x_ = &TBE__VEC_AT(&(vec), T, i_);                   \
    if (x_->start > 0 && x_->end >= x_->start) seen(s, x_->end); \
  }
  LAST(s->kernels, tbe__sp_kernel);
  LAST(s->memcpys, tbe__sp_memcpy);
  LAST(s->memsets, tbe__sp_memset);
  LAST(s->apis, tbe__sp_api);
  LAST(s->syncs, tbe__sp_sync);
  LAST(s->overheads, tbe__sp_overhead);
#undef LAST
  for (size_t i = 0; i < s->markers.n; i++) seen(s, TBE__VEC_AT(&s->markers, tbe__sp_marker, i).ts);
  for (size_t i = 0; i < s->memory.n; i++) seen(s, TBE__VEC_AT(&s->memory, tbe__sp_memory, i).ts);
  b->end_ns = s->have_end ? s->end.end_ns : s->last_ts;
  if (b->end_ns < s->last_ts) b->end_ns = s->last_ts;
  /* Collection switched off before the process ended (--duration): the
   * trace ends there, or with the last activity completed after it, not at
   * the exit, so that GPU busy % and the timeline cover what was collected.
   * (The first "off" after the last "on"; stopping writes one too.) */
  int64_t closed = 0;
  for (size_t i = 0; i < s->windows.n; i++) {
    if (ws[i].on)
      closed = 0;
    else if (!closed && ws[i].ts > 0)
      closed = ws[i].ts;
  }
  if (closed > 0 && closed < b->end_ns) b->end_ns = closed > s->last_ts ? closed : s->last_ts;
  if (b->end_ns < start) b->end_ns = start;
  *start_out = start;
  return 0;
}

/* Correlation ids -> API calls; contexts -> devices. */
static int correlation_maps(build *b) {
  scan *s = b->s;
  int rc = 0;
  const tbe__sp_api *api = s->apis.data;
  const tbe__sp_replayed *rp = s->replays.data;
  const tbe__sp_context *cx = s->contexts.data;
  const tbe__sp_kernel *kv = s->kernels.data;
  if (s->apis.n > UINT32_MAX || s->replays.n > UINT32_MAX) return TBE_ETOOBIG;
  for (size_t i = 0; i < s->apis.n && !rc; i++) {
    uint32_t prev;
    if (map_get(&b->corr, api[i].corr, &prev) && api[prev].domain == TBE__API_RUNTIME) continue;
    rc = map_put(&b->corr, api[i].corr, (uint32_t)i, 1);
  }
  for (size_t i = 0; i < s->replays.n && !rc; i++)
    rc = map_put(&b->replay, rp[i].corr, (uint32_t)i, 1);
  for (size_t i = 0; i < s->contexts.n && !rc; i++)
    rc = map_put(&b->ctxdev, cx[i].context, cx[i].device, 1);
  for (size_t i = 0; i < s->kernels.n && !rc; i++)
    rc = map_put(&b->ctxdev, kv[i].context, kv[i].device, 0);
  return rc;
}

/* NVTX: markers paired into ranges (a START with its END; a mark alone),
 * their data attached; ranges that do not nest on their thread are
 * asynchronous. */
static int nvtx_ranges(build *b, tbe__vec *rs) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  tbe__convert_info *info = b->info;
  const tbe__sp_marker *mk = s->markers.data;
  const tbe__sp_marker_data *md = s->mdata.data;
  int rc = 0;
  if (s->markers.n > UINT32_MAX - 1 || s->mdata.n > UINT32_MAX - 1) return TBE_ETOOBIG;
  u32map starts, datas;
  map_init(&starts, s->a);
  map_init(&datas, s->a);
  for (size_t i = 0; i < s->mdata.n && !rc; i++) rc = map_put(&datas, md[i].id, (uint32_t)i, 0);
  for (size_t i = 0; i < s->markers.n && !rc; i++) {
    const tbe__sp_marker *m = &mk[i];
    if (m->flags & TBE__MK_START) rc = map_put(&starts, m->id, (uint32_t)i, 0);
  }
  /* ends: index of the END marker per START, UINT32_MAX = none */
  tbe__vec ends;
  tbe__vec_init(&ends, s->a, sizeof(uint32_t));
  if (!rc && (rc = tbe__vec_resize(&ends, s->markers.n)) == 0 && s->markers.n)
    memset(ends.data, 0xff, s->markers.n * sizeof(uint32_t));
  uint32_t *endof = ends.data;
  for (size_t i = 0; i < s->markers.n && !rc; i++) {
    const tbe__sp_marker *m = &mk[i];
    if (!(m->flags & TBE__MK_END)) continue;
    uint32_t si;
    if (map_get(&starts, m->id, &si) && endof[si] == UINT32_MAX)
      endof[si] = (uint32_t)i;
    else
      info->nvtx_orphan_ends++;
  }
  for (size_t i = 0; i < s->markers.n && !rc; i++) {
    const tbe__sp_marker *m = &mk[i];
    int mark = (m->flags & TBE__MK_INSTANT) != 0;
    if (!mark && !(m->flags & TBE__MK_START)) continue;
    if (m->ts <= 0) {
      t->dropped_out_of_range++;
      info->r.dropped_out_of_range++;
      continue;
    }
    range r;
    memset(&r, 0, sizeof r);
    r.start = m->ts;
    r.start_marker = (uint32_t)i;
    r.is_mark = (uint8_t)mark;
    r.data = UINT32_MAX;
    map_get(&datas, m->id, &r.data);
    if ((rc = tbe_trace_track(t, TBE_TRACK_THREAD, m->obj[0], m->obj[1], -1, &r.track))) break;
    seen(s, m->ts);
    if (mark) {
      r.end = m->ts;
    } else if (endof[i] != UINT32_MAX) {
      const tbe__sp_marker *e = &mk[endof[i]];
      if (e->ts < m->ts) {
        t->dropped_out_of_range++;
        info->r.dropped_out_of_range++;
        continue;
      }
      r.end = e->ts;
      if (e->obj[0] != m->obj[0] || e->obj[1] != m->obj[1]) r.flags |= TBE_EVF_ASYNC;
    } else {
      /* closed at the end of the capture, or of its collection window */
      long w = b->coll_bounded ? window_at(&b->coll, m->ts) : -1;
      int64_t we = w >= 0 ? TBE__VEC_AT(&b->coll, window, w).b : INT64_MAX;
      r.end = w >= 0 && we < b->end_ns ? we : b->end_ns;
      if (r.end < m->ts) r.end = m->ts;
      info->nvtx_unclosed++;
    }
    range *x = TBE__VEC_PUSH(rs, range);
    if (!x) {
      rc = tbe__vec_error(rs);
      break;
    }
    *x = r;
  }
  tbe__vec_deinit(&ends);
  map_free(&starts);
  /* Ranges that do not nest on their thread are asynchronous: a stack of
   * the open ranges' ends per track. */
  if (!rc && rs->n) {
    range *rv = rs->data;
    qsort(rv, rs->n, sizeof *rv, cmp_range);
    tbe__vec open;
    tbe__vec_init(&open, s->a, sizeof(int64_t));
    rc = tbe__vec_resize(&open, rs->n);
    int64_t *stack = open.data;
    size_t sp = 0;
    uint32_t cur = UINT32_MAX;
    for (size_t i = 0; i < rs->n && !rc; i++) {
      range *r = &rv[i];
      if (r->is_mark || (r->flags & TBE_EVF_ASYNC)) continue;
      if (r->track != cur) {
        cur = r->track;
        sp = 0;
      }
      while (sp > 0 && stack[sp - 1] <= r->start) sp--;
      if (sp > 0 && r->end > stack[sp - 1]) {
        r->flags |= TBE_EVF_ASYNC;
        continue;
      }
      stack[sp++] = r->end;
    }
    tbe__vec_deinit(&open);
  }
  map_free(&datas);
  return rc;
}

/* NVTX events: the ranges and marks that start in a kept window. */
static int nvtx_events(build *b, const tbe__vec *rs) {
  scan *s = b->s;
  tbe__convert_info *info = b->info;
  const range *rv = rs->data;
  int rc = 0;
  for (size_t i = 0; i < rs->n && !rc; i++) {
    const range *r = &rv[i];
    const tbe__sp_marker *m = &TBE__VEC_AT(&s->markers, tbe__sp_marker, r->start_marker);
    if (!keep(b, r->start)) continue;
    tbe_nvtx nv;
    memset(&nv, 0, sizeof nv);
    nv.domain = S(s, m->domain);
    if (r->data != UINT32_MAX) {
      const tbe__sp_marker_data *d = &TBE__VEC_AT(&s->mdata, tbe__sp_marker_data, r->data);
      if (d->flags & TBE__MK_COLOR_ARGB) nv.color = d->color;
      nv.category = d->category;
      switch (d->payload_kind) {
        case 0: nv.payload_type = TBE_PAYLOAD_DOUBLE; memcpy(&nv.payload.d, &d->payload, 8); break;
        case 1: nv.payload_type = TBE_PAYLOAD_UINT64; nv.payload.u = d->payload; break;
        case 4: nv.payload_type = TBE_PAYLOAD_INT64; memcpy(&nv.payload.i, &d->payload, 8); break;
        default: break;
      }
    }
    rc = add(b, r->is_mark ? TBE_EV_NVTX_MARK : TBE_EV_NVTX_RANGE, r->start, r->end - r->start, 0,
             S(s, m->name), r->track, r->flags, &nv);
    if (r->is_mark)
      info->r.nvtx_marks++;
    else
      info->r.nvtx_ranges++;
  }
  return rc;
}

/* Framework operators (TBE__SP_OP, the collector's reading of PyTorch's
 * operator ranges): a begin paired with the end of the same id, one still
 * running when the capture ended closed where an unclosed NVTX range is
 * (and counted), an end without its begin left out; those that start in a
 * kept window become operators (trace/model/ops.h). */
static int operators(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  tbe__convert_info *info = b->info;
  const tbe__sp_op *ov = s->ops.data;
  if (s->ops.n > UINT32_MAX - 1) return TBE_ETOOBIG;
  tbe__map ends; /* id -> index of its end */
  tbe__map_init(&ends, s->a, TBE__SEED_PROCESS);
  int rc = 0;
  for (size_t i = 0; i < s->ops.n && !rc; i++) {
    if (!(ov[i].flags & TBE__OPF_END)) continue;
    int added;
    uint32_t *v = tbe__map_put(&ends, ov[i].id, &added);
    if (!v) rc = tbe__map_error(&ends);
    else if (added) *v = (uint32_t)i;
  }
  for (size_t i = 0; i < s->ops.n && !rc; i++) {
    const tbe__sp_op *o = &ov[i];
    if (!(o->flags & TBE__OPF_BEGIN)) continue;
    if (o->ts <= 0) {
      t->dropped_out_of_range++;
      info->r.dropped_out_of_range++;
      continue;
    }
    seen(s, o->ts);
    const uint32_t *e = tbe__map_get(&ends, o->id);
    int64_t end;
    if (e && ov[*e].ts >= o->ts) {
      end = ov[*e].ts;
      seen(s, end);
    } else if (e) {
      t->dropped_out_of_range++;
      info->r.dropped_out_of_range++;
      continue;
    } else {
      long w = b->coll_bounded ? window_at(&b->coll, o->ts) : -1;
      int64_t we = w >= 0 ? TBE__VEC_AT(&b->coll, window, w).b : INT64_MAX;
      end = w >= 0 && we < b->end_ns ? we : b->end_ns;
      if (end < o->ts) end = o->ts;
      info->ops_unclosed++;
    }
    if (!keep(b, o->ts)) continue;
    uint32_t tr;
    if ((rc = tbe_trace_track(t, TBE_TRACK_THREAD, o->pid, o->tid, -1, &tr))) break;
    tbe_str name = S(s, o->name), shapes = o->shapes ? S(s, o->shapes) : 0;
    rc = tbe__trace_add_torch_op(t, tr, o->ts, end - o->ts, tbe_trace_str(t, name),
                                 tbe_trace_strlen(t, name),
                                 o->shapes ? tbe_trace_str(t, shapes) : NULL,
                                 o->shapes ? tbe_trace_strlen(t, shapes) : 0, o->seq, 0, NULL);
    info->ops++;
  }
  tbe__map_deinit(&ends);
  return rc;
}

/* Runtime and driver API calls. */
static int api_calls(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  tbe__convert_info *info = b->info;
  int rc = 0;
  const tbe__sp_api *api = s->apis.data;
  for (size_t i = 0; i < s->apis.n && !rc; i++) {
    const tbe__sp_api *a = &api[i];
    seen(s, a->end);
    if (bad_span(b, a->start, a->end)) continue;
    if (!keep(b, a->start)) continue;
    uint32_t tr;
    if ((rc = tbe_trace_track(t, TBE_TRACK_THREAD, a->pid, a->tid, -1, &tr))) break;
    rc = add(b, a->domain == TBE__API_DRIVER ? TBE_EV_DRIVER : TBE_EV_RUNTIME, a->start,
             a->end - a->start, a->corr, S(s, a->name), tr, 0, NULL);
    info->r.api_calls++;
  }
  return rc;
}

/* The key of a kernel name (a spool string id) on a device. */
static uint64_t name_dev(uint32_t name, uint32_t device) { return (uint64_t)name << 32 | device; }

/* The range profiler's durations: (name, device) -> its first figure of
 * the metric named "duration_ns" (its last definition's name) that is a
 * plausible duration, made once, when the first replayed kernel asks. */
static int replay_durations(build *b) {
  const scan *s = b->s;
  b->have_kdur = 1;
  tbe_str dname = tbe_trace_find_str(b->t, "duration_ns", 11);
  if (dname == TBE_NONE || !s->kmvals.n) return 0;
  if (s->kmvals.n > UINT32_MAX) return TBE_ETOOBIG;
  const sp_kmval *kv = s->kmvals.data;
  const tbe__sp_metric_def *defs = s->mdefs.data;
  int rc = 0;
  for (size_t i = 0; i < s->kmvals.n && !rc; i++) {
    const sp_kmval *x = &kv[i];
    if (!(x->v >= 1 && x->v < 1e12)) continue;
    long d = sp_mdef(s, x->metric);
    if (d >= 0 && S(s, defs[d].name) == dname)
      rc = map_put(&b->kdur, name_dev(x->name, x->device), (uint32_t)i, 0);
  }
  return rc;
}

/* The range profiler's mean duration (ns) of kernel `name` (a spool
 * string id) on `device`, 0 when it measured none, or an error. */
static int64_t replay_duration(build *b, uint32_t name, uint32_t device) {
  int rc = b->have_kdur ? 0 : replay_durations(b);
  if (rc) return rc;
  uint32_t i;
  if (!map_get(&b->kdur, name_dev(name, device), &i)) return 0;
  return (int64_t)TBE__VEC_AT(&b->s->kmvals, sp_kmval, i).v;
}

/* A kernel the range profiler replayed comes from CUPTI without times
 * (start = end = 0 on the H200; any span that is not one is taken the same
 * way when the profiler measured the kernel's name).  It ran inside its
 * launch call (kernel replay is synchronous), so it is placed at the end
 * of that call with the profiler's mean duration for its name.  The call
 * is its API record, else the collector's own timing of the launch
 * (TBE__SP_REPLAYED: cuBLAS launches through the driver API, which is
 * not traced by default; on the H200 the bf16 GEMM's measured launches
 * had no other).  Returns 1 and the span, 0, or an error. */
static int replayed_span(build *b, const tbe__sp_kernel *k, int64_t *start, int64_t *end) {
  uint32_t i;
  int64_t cs, ce;
  const tbe__sp_replayed *rp = b->s->replays.data;
  if ((k->start > 0 && k->end >= k->start) || !k->corr) return 0;
  if (map_get(&b->corr, k->corr, &i)) {
    cs = TBE__VEC_AT(&b->s->apis, tbe__sp_api, i).start;
    ce = TBE__VEC_AT(&b->s->apis, tbe__sp_api, i).end;
  } else if (map_get(&b->replay, k->corr, &i) && rp[i].device == k->device) {
    cs = rp[i].start;
    ce = rp[i].end;
  } else {
    return 0;
  }
  int64_t dur = replay_duration(b, k->name, k->device);
  if (dur < 0) return (int)dur;
  if (dur == 0 || cs <= 0 || ce < cs) return 0;
  *end = ce;
  *start = ce - dur > cs ? ce - dur : cs;
  return 1;
}

/* GPU work: kernels. */
static int kernels(build *b) {
  scan *s = b->s;
  tbe__convert_info *info = b->info;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  uint64_t replayed = 0;
  const tbe__sp_kernel *kv = s->kernels.data;
  for (size_t i = 0; i < s->kernels.n && !rc; i++) {
    const tbe__sp_kernel *k = &kv[i];
    int64_t kstart = k->start, kend = k->end;
    int got = replayed_span(b, k, &kstart, &kend);
    if (got < 0) {
      rc = got;
      break;
    }
    replayed += (uint64_t)got;
    uint32_t tr;
    int admit = gpu_admit(b, kstart, kend, k->corr, pid, k->stream, k->device, &tr);
    if (admit < 0) {
      rc = admit;
      break;
    }
    if (!admit) continue;
    tbe_kernel d;
    memset(&d, 0, sizeof d);
    for (int j = 0; j < 3; j++) {
      d.grid[j] = (uint32_t)k->grid[j];
      d.block[j] = (uint32_t)k->block[j];
    }
    d.static_shared = (uint32_t)k->static_shared;
    d.dynamic_shared = (uint32_t)k->dynamic_shared;
    d.registers = k->registers;
    d.context = ctx16(k->context);
    d.queued_ns = -1;
    d.occupancy_pct = d.blocks_per_sm = d.warps_per_sm = -1.0f;
    rc = add(b, TBE_EV_KERNEL, kstart, kend - kstart, k->corr, S(s, k->name), tr,
             k->graph_id ? TBE_EVF_GRAPH : 0, &d);
    if (!rc) rc = gpu_busy(b, kstart, kend);
    info->r.kernels++;
  }
  if (!rc && replayed)
    rc = tbe_trace_warn(b->t,
                        "%llu kernel launches replayed by the range profiler came without GPU "
                        "times: each is placed at the end of its launch call with the profiler's "
                        "mean duration for its name",
                        (unsigned long long)replayed);
  return rc;
}

/* GPU work: copies. */
static int copies(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  tbe__convert_info *info = b->info;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  const tbe__sp_memcpy *mv = s->memcpys.data;
  for (size_t i = 0; i < s->memcpys.n && !rc; i++) {
    const tbe__sp_memcpy *m = &mv[i];
    uint32_t tr;
    int admit = gpu_admit(b, m->start, m->end, m->corr, pid, m->stream, m->device, &tr);
    if (admit < 0) {
      rc = admit;
      break;
    }
    if (!admit) continue;
    tbe_memcpy d;
    memset(&d, 0, sizeof d);
    d.bytes = m->bytes;
    d.copy_kind = m->copy_kind;
    d.src_kind = m->src_kind;
    d.dst_kind = m->dst_kind;
    d.async = (m->flags & 1) != 0;
    d.src_device = m->src_device;
    d.dst_device = m->dst_device;
    d.context = ctx16(m->context);
    char nm[96];
    snprintf(nm, sizeof nm, "Memcpy %s (%s -> %s)", copy_kind(m->copy_kind),
             mem_kind(m->src_kind), mem_kind(m->dst_kind));
    rc = add(b, TBE_EV_MEMCPY, m->start, m->end - m->start, m->corr, tbe_trace_str_id(t, nm), tr,
             m->graph_id ? TBE_EVF_GRAPH : 0, &d);
    if (!rc) rc = gpu_busy(b, m->start, m->end);
    info->r.copies++;
  }
  return rc;
}

/* GPU work: memsets. */
static int memsets(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  tbe__convert_info *info = b->info;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  const tbe__sp_memset *mv = s->memsets.data;
  for (size_t i = 0; i < s->memsets.n && !rc; i++) {
    const tbe__sp_memset *m = &mv[i];
    uint32_t tr;
    int admit = gpu_admit(b, m->start, m->end, m->corr, pid, m->stream, m->device, &tr);
    if (admit < 0) {
      rc = admit;
      break;
    }
    if (!admit) continue;
    tbe_memset d;
    memset(&d, 0, sizeof d);
    d.bytes = m->bytes;
    d.value = m->value;
    d.mem_kind = (uint8_t)m->mem_kind;
    d.async = (m->flags & 1) != 0;
    d.context = ctx16(m->context);
    char nm[64];
    snprintf(nm, sizeof nm, "Memset (%s)", mem_kind(m->mem_kind));
    rc = add(b, TBE_EV_MEMSET, m->start, m->end - m->start, m->corr, tbe_trace_str_id(t, nm), tr,
             0, &d);
    if (!rc) rc = gpu_busy(b, m->start, m->end);
    info->r.memsets++;
  }
  return rc;
}

/* Synchronization: on the GPU stream it waited for (a context sync, which
 * has none, on the device's stream -1), as Kineto and Nsight Systems place
 * it; the API call that waited links to it by correlation id. */
static int syncs(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  const tbe__sp_sync *yv = s->syncs.data;
  for (size_t i = 0; i < s->syncs.n && !rc; i++) {
    const tbe__sp_sync *y = &yv[i];
    if (bad_span(b, y->start, y->end)) continue;
    seen(s, y->end);
    if (!keep(b, y->start)) continue;
    uint32_t tr, dev = 0;
    map_get(&b->ctxdev, y->context, &dev);
    if (not_ordinal(b, dev)) continue;
    if ((rc = stream_track(b, pid, y->stream, dev, &tr))) break;
    tbe_sync d;
    memset(&d, 0, sizeof d);
    d.sync_kind = (uint8_t)(y->type <= 4 ? y->type : 0);
    d.stream = y->stream == UINT32_MAX ? -1 : (int64_t)y->stream;
    d.cuda_event = y->event == UINT32_MAX ? 0 : y->event;
    rc = add(b, TBE_EV_SYNC, y->start, y->end - y->start, y->corr,
             tbe_trace_str_id(t, sync_name(y->type)), tr, 0, &d);
  }
  return rc;
}

/* CUPTI overhead: the profiler's cost, counted where it overlaps a kept
 * window and cut to it. */
static int overheads(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  tbe__convert_info *info = b->info;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  const tbe__sp_overhead *ov = s->overheads.data;
  const window *wv = b->win.data;
  for (size_t i = 0; i < s->overheads.n && !rc; i++) {
    const tbe__sp_overhead *o = &ov[i];
    if (bad_span(b, o->start, o->end)) continue;
    seen(s, o->end);
    int64_t os = o->start, oe = o->end;
    if (b->bounded) {
      size_t lo = 0, hi = b->win.n;
      while (lo < hi) { /* the first window ending at or after the start */
        size_t mid = lo + (hi - lo) / 2;
        if (wv[mid].b < os) lo = mid + 1;
        else hi = mid;
      }
      if (lo == b->win.n || wv[lo].a > oe) {
        keep(b, os); /* (counts it) */
        continue;
      }
      if (os < wv[lo].a) os = wv[lo].a;
      if (oe > wv[lo].b) oe = wv[lo].b;
    }
    t->overhead_ns += (uint64_t)(oe - os);
    info->r.overhead_ns += (uint64_t)(oe - os);
    uint32_t tr;
    if (o->obj_kind == TBE__OBJ_THREAD)
      rc = tbe_trace_track(t, TBE_TRACK_THREAD, o->obj[0], o->obj[1], -1, &tr);
    else
      rc = tbe_trace_track(t, TBE_TRACK_OTHER, pid, -1, -1, &tr);
    if (rc) break;
    rc = add(b, TBE_EV_OVERHEAD, os, oe - os, o->corr,
             tbe_trace_str_id(t, overhead_name(o->kind)), tr, 0, NULL);
  }
  return rc;
}

/* Memory allocations and frees. */
static int memory_events(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  tbe__convert_info *info = b->info;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  const tbe__sp_memory *mv = s->memory.data;
  for (size_t i = 0; i < s->memory.n && !rc; i++) {
    const tbe__sp_memory *m = &mv[i];
    if (m->ts <= 0) {
      t->dropped_out_of_range++;
      info->r.dropped_out_of_range++;
      continue;
    }
    seen(s, m->ts);
    if (!keep(b, m->ts)) continue;
    uint32_t tr;
    if (not_ordinal(b, m->device)) continue;
    if ((rc = stream_track(b, pid, m->stream, m->device, &tr))) break;
    tbe_memory d;
    memset(&d, 0, sizeof d);
    d.addr = m->addr;
    d.bytes = m->op == 2 ? -(int64_t)m->bytes : (int64_t)m->bytes;
    d.total_allocated = d.total_reserved = -1;
    d.device = (int32_t)m->device;
    d.device_type = 1;
    rc = add(b, TBE_EV_MEMORY, m->ts, 0, m->corr, tbe_trace_str_id(t, "[memory]"), tr, 0, &d);
  }
  return rc;
}

/* Devices and thread names. */
static int devices_and_threads(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  int rc = 0;
  const tbe__sp_device *dv = s->devices.data;
  const tbe__sp_thread_name *tn = s->tnames.data;
  for (size_t i = 0; i < s->devices.n && !rc; i++) {
    const tbe__sp_device *d = &dv[i];
    uint32_t di;
    if (not_ordinal(b, d->id)) continue;
    if ((rc = tbe_trace_device(t, (int32_t)d->id, &di))) break;
    tbe_device *x = &t->devices[di];
    x->name = S(s, d->name);
    x->sm_count = (int32_t)d->sm_count;
    x->clock_khz = (int32_t)d->clock_khz;
    x->memory_bytes = d->memory_bytes;
    /* a value no device has (negative, or bytes/s beyond int64) is unknown */
    x->memory_bandwidth = d->bandwidth_kbps > 0 && d->bandwidth_kbps <= INT64_MAX / 1000
                              ? d->bandwidth_kbps * 1000
                              : 0;
    x->cc_major = (int32_t)d->cc_major;
    x->cc_minor = (int32_t)d->cc_minor;
    x->max_threads_per_block = (int32_t)d->max_threads_per_block;
    x->max_threads_per_sm = (int32_t)(d->max_warps_per_sm * d->warp_size);
    x->regs_per_block = (int32_t)d->regs_per_block;
    x->regs_per_sm = (int32_t)d->regs_per_sm;
    x->warp_size = (int32_t)d->warp_size;
    x->shared_per_block = d->shared_per_block;
    x->shared_per_sm = d->shared_per_sm;
  }
  for (size_t i = 0; i < s->tnames.n && !rc; i++) {
    uint32_t tr;
    if ((rc = tbe_trace_track(t, TBE_TRACK_THREAD, tn[i].pid, tn[i].tid, -1, &tr))) break;
    t->tracks[tr].name = S(s, tn[i].name);
  }
  return rc;
}

/* Bounded, the trace spans the kept windows (and the GPU work launched in
 * them), so that wall time and GPU busy % are over what was kept. */
static int trace_span(build *b, int64_t *start) {
  if (b->bounded && b->win.n) {
    const window *wv = b->win.data;
    const ival *gv = b->gpu.data;
    int64_t ws = wv[0].a, we = INT64_MIN;
    for (size_t i = 0; i < b->win.n; i++) {
      int64_t e = wv[i].b == INT64_MAX ? b->end_ns : wv[i].b;
      if (e > we) we = e;
    }
    for (size_t i = 0; i < b->gpu.n; i++)
      if (gv[i].b > we) we = gv[i].b;
    *start = ws;
    b->end_ns = we >= *start ? we : *start;
  }
  b->t->start_ns = *start > 0 ? *start : 0;
  b->t->stop_ns = b->end_ns;
  return tbe_trace_error(b->t);
}

/* Hardware metrics (spool_metrics.c), kept by the windows like the rest. */
static int keep_metric(void *ctx, int64_t ts) { return in_window(ctx, ts); }

static int metrics(build *b) {
  return tbe__spool_metrics(b->s, b->t, spool_pid(b->s), keep_metric, b);
}

/* The spool's records into the trace, in this order: the session's span
 * and windows first (they decide what is kept), then each kind of record,
 * then the program's own steps and the trace's span. */
static int build_trace(build *b) {
  int64_t start = 0;
  tbe__vec rs; /* range */
  tbe__vec_init(&rs, b->s->a, sizeof(range));
  int rc = process_and_end(b, &start);
  if (!rc) rc = collection_windows(b);
  if (!rc) rc = correlation_maps(b);
  if (!rc) rc = nvtx_ranges(b, &rs);
  if (!rc) rc = compute_windows(b, &rs);
  if (!rc) rc = kept_windows(b);
  if (!rc) rc = nvtx_events(b, &rs);
  tbe__vec_deinit(&rs);
  if (!rc) rc = operators(b);
  if (!rc) rc = api_calls(b);
  if (!rc) rc = kernels(b);
  if (!rc) rc = copies(b);
  if (!rc) rc = memsets(b);
  if (!rc) rc = syncs(b);
  if (!rc) rc = overheads(b);
  if (!rc) rc = memory_events(b);
  if (!rc) rc = devices_and_threads(b);
  if (!rc) rc = metrics(b);
  if (!rc) rc = marked_steps(b);
  return rc ? rc : trace_span(b, &start);
}

static double busy_pct(ival *v, size_t n, int64_t a, int64_t b) {
  if (b <= a || n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_ival);
  int64_t busy = 0, cs = 0, ce = -1;
  for (size_t i = 0; i < n; i++) {
    int64_t s = v[i].a < a ? a : v[i].a, e = v[i].b > b ? b : v[i].b;
    if (e <= s) continue;
    if (ce < 0 || s > ce) {
      if (ce > cs) busy += ce - cs;
      cs = s;
      ce = e;
    } else if (e > ce) {
      ce = e;
    }
  }
  if (ce > cs) busy += ce - cs;
  return 100.0 * (double)busy / (double)(b - a);
}

int tbe__spool_to_trace(const uint8_t *data, size_t n, const char *label,
                        const tbe__convert_opts *o, tbe_trace *t, tbe__convert_info *info) {
  tbe__convert_info dummy;
  if (!info) info = &dummy;
  memset(info, 0, sizeof *info);
  const tbe_allocator *a = o && o->allocator ? o->allocator : tbe__trace_allocator(t);
  scan s;
  tbe__convert_scan_init(&s, t, a);
  tbe__spool_tail tail;
  int rc = tbe__spool_scan(data, n, tbe__convert_on_item, &s, &tail);
  if (rc) {
    info->tail_offset = tail.good_bytes, info->tail_why = tail.why;
    tbe__convert_scan_free(&s);
    return rc;
  }
  if (!s.have_info && label) {
    /* The first frame was lost: the file name (<pid>.spool) still says
     * which process this was. */
    uint32_t pid = 0;
    const char *q = label;
    while (*q >= '0' && *q <= '9' && pid < 100000000u) pid = pid * 10 + (uint32_t)(*q++ - '0');
    s.info.pid = pid;
    s.have_info = pid != 0;
  }
  build b;
  memset(&b, 0, sizeof b);
  map_init(&b.corr, a);
  map_init(&b.replay, a);
  map_init(&b.ctxdev, a);
  map_init(&b.kdur, a);
  tbe__vec_init(&b.coll, a, sizeof(window));
  tbe__vec_init(&b.win, a, sizeof(window));
  tbe__vec_init(&b.gpu, a, sizeof(ival));
  b.s = &s;
  b.t = t;
  b.o = o;
  b.info = info;
  rc = build_trace(&b);
  info->pid = s.have_info ? s.info.pid : 0;
  info->rank = s.have_rank ? s.rank.rank : -1;
  info->world_size = s.have_rank ? s.rank.world_size : 0;
  info->local_rank = s.have_rank ? s.rank.local_rank : -1;
  info->launcher = s.have_rank ? s.rank.launcher : TBE__LAUNCHER_NONE;
  snprintf(info->job, sizeof info->job, "%s", s.job);
  size_t cl = strlen(s.cmd);
  if (cl >= sizeof info->cmd) cl = sizeof info->cmd - 1;
  memcpy(info->cmd, s.cmd, cl);
  info->cmd[cl] = '\0';
  info->decode_cpu_ns = s.stats.decode_cpu_ns;
  info->buffer_bytes = s.stats.buffer_bytes;
  info->spool_bytes = n;
  if (!rc) {
    t->dropped_records += s.stats.cupti_dropped + s.stats.spool_dropped;
    info->r.dropped_records = s.stats.cupti_dropped + s.stats.spool_dropped;
    info->r.start_ns = t->start_ns;
    info->r.stop_ns = t->stop_ns;
    info->r.gpu_busy_pct = busy_pct(b.gpu.data, b.gpu.n, t->start_ns, t->stop_ns);
    info->ended_early = !s.have_end || tail.bytes > 0;
    info->tail_offset = tail.good_bytes;
    info->tail_bytes = tail.bytes;
    info->tail_why = tail.why;
    t->ended_early = info->ended_early;
    const tbe_str *notes = s.notes.data;
    for (size_t i = 0; i < s.notes.n; i++)
      if (!tbe__spool_note_is_status(&s, notes[i]))
        tbe_trace_warn(t, "%s", tbe_trace_str(t, notes[i]));
    if (info->ended_early) {
      if (s.have_signal && !tail.bytes)
        tbe_trace_warn(t,
                       "the program died of signal %d (%s): the collector flushed at the signal, "
                       "so every record completed before it is here; GPU work still running "
                       "then is missing",
                       (int)s.signal.sig, signal_name(s.signal.sig));
      else if (tail.bytes)
        tbe_trace_warn(t,
                       "the capture ended early (the program was killed or crashed): %s: %zu "
                       "bytes at offset %zu are incomplete (%s); activity after that is missing",
                       label, tail.bytes, tail.good_bytes, tail.why ? tail.why : "incomplete");
      else
        tbe_trace_warn(t,
                       "the capture ended early (the program was killed or crashed before the "
                       "collector's final flush): activity of its last moments is missing");
    }
    if (t->dropped_records)
      tbe_trace_warn(t,
                     "%llu activity records were dropped (%llu by CUPTI for lack of a buffer: "
                     "raise --buffer-mb; %llu writing the spool)",
                     (unsigned long long)t->dropped_records,
                     (unsigned long long)s.stats.cupti_dropped,
                     (unsigned long long)s.stats.spool_dropped);
    if (t->dropped_out_of_range)
      tbe_trace_warn(t, "%llu records had zero or inverted timestamps and were left out",
                     (unsigned long long)t->dropped_out_of_range);
    if (info->nvtx_unclosed)
      tbe_trace_warn(t, "%llu NVTX ranges never ended; they are closed at the end of the capture",
                     (unsigned long long)info->nvtx_unclosed);
    if (info->nvtx_orphan_ends)
      tbe_trace_warn(t, "%llu NVTX range ends had no start in the capture and were left out",
                     (unsigned long long)info->nvtx_orphan_ends);
    if (info->bad_devices)
      tbe_trace_warn(t,
                     "%llu records named a device id beyond the GPU ordinals (0 to 2^31 - 1) "
                     "and were left out",
                     (unsigned long long)info->bad_devices);
    if (info->ops_unclosed)
      tbe_trace_warn(t,
                     "%llu operators were still running when the capture ended; they are closed "
                     "at its end",
                     (unsigned long long)info->ops_unclosed);
    if (s.have_nvtx && s.nvtx.dropped)
      tbe_trace_warn(t,
                     "%llu NVTX calls (ranges, operators) were not recorded: the collector's "
                     "NVTX buffers were full or a thread slot was missing",
                     (unsigned long long)s.nvtx.dropped);
    if (s.have_nvtx && s.nvtx.truncated)
      tbe_trace_warn(t, "%llu NVTX messages longer than %d bytes were cut there",
                     (unsigned long long)s.nvtx.truncated, TBE__NVTX_MSG_MAX);
    if (b.windowed) {
      if (b.win.n == 0)
        tbe_trace_warn(t, "the capture range (%s) never opened: nothing was kept",
                       o->capture == TBE_CAPTURE_NVTX ? "nvtx" : "cudaProfilerApi");
      if (info->outside_capture)
        tbe_trace_warn(t, "%llu records outside the capture range were left out",
                       (unsigned long long)info->outside_capture);
    }
    if (s.stats.unknown_records)
      tbe_trace_warn(t, "%llu CUPTI records of kinds this collector does not decode were skipped",
                     (unsigned long long)s.stats.unknown_records);
    rc = tbe_trace_finish(t);
    /* --steps wins over the program's own marks (which stay when it
     * matches nothing; the warning says so). */
    if (!rc && o && o->steps_name) {
      int got = tbe_trace_steps_apply(t, o->steps_name, o->steps_domain, NULL, 0);
      if (got < 0) rc = got;
    }
    info->r.steps = t->nsteps;
  }
  map_free(&b.corr);
  map_free(&b.replay);
  map_free(&b.ctxdev);
  map_free(&b.kdur);
  tbe__vec_deinit(&b.coll);
  tbe__vec_deinit(&b.win);
  tbe__vec_deinit(&b.gpu);
  tbe__convert_scan_free(&s);
  return rc ? rc : tbe_trace_error(t);
}

int tbe__spool_file_to_trace(const char *path, const tbe__convert_opts *o, tbe_trace *t,
                             tbe__convert_info *info) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  size_t n = (size_t)st.st_size;
  const uint8_t *data = (const uint8_t *)"";
  void *map = NULL;
  if (n > 0) {
    map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = -errno;
      close(fd);
      return e;
    }
    data = map;
  }
  close(fd);
  const char *base = strrchr(path, '/');
  int rc = tbe__spool_to_trace(data, n, base ? base + 1 : path, o, t, info);
  if (map) munmap(map, n);
  return rc;
}

/* ---- the rank alone ---- */

/* tbe__spool_file_rank's scan: the first frames' items up to the first
 * record. */
static int rank_item(void *ctx, unsigned type, const uint8_t *body, size_t len) {
  scan *s = ctx;
  if (type == TBE__SP_RANK) return tbe__convert_on_item(s, type, body, len) ? -1 : 1;
  return type >= TBE__SP_KERNEL && type != TBE__SP_DEVICE && type != TBE__SP_CONTEXT ? 1 : 0;
}

int tbe__spool_file_rank(const char *path, int32_t *rank) {
  *rank = -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return 0;
  struct stat st;
  /* The collector writes the rank with its first items, in the first
   * frame: 64 KiB hold it.  (No import, so no caller's allocator: the
   * library's default one.) */
  tbe_allocator al;
  tbe__allocator_init(&al, NULL);
  size_t cap = 65536, n = 0;
  uint8_t *buf = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? tbe__alloc(&al, cap) : NULL;
  ssize_t got;
  while (buf && n < cap && (got = read(fd, buf + n, cap - n)) > 0) n += (size_t)got;
  close(fd);
  if (!buf) return 0;
  scan s;
  tbe__convert_scan_init(&s, NULL, &al); /* (the rank item allocates nothing) */
  tbe__spool_tail tail;
  tbe__spool_scan(buf, n, rank_item, &s, &tail);
  if (s.have_rank) *rank = s.rank.rank;
  tbe__convert_scan_free(&s);
  tbe__free(&al, buf);
  return s.have_rank;
}

/* ---- the importer ---- */

/* Sure on the 8 bytes of the magic; a cut or bad file after them is the
 * importer's to name. */
static int spool_sniff(const tbe__sniff *s) {
  return s->n >= 8 && memcmp(s->head, TBE__SPOOL_MAGIC, 8) == 0 ? TBE__SNIFF_SURE : TBE__SNIFF_NO;
}

/* tbe_import_file's way in: the whole input in memory (the allocator's),
 * converted with no options, the label the file's base name as the
 * session's; the trace is finished by import.c (finishing is idempotent). */
static int import_spool(tbe_trace *t, tbe__input *in, const char *path,
                        const tbe_import_options *o, tbe_import_error *err) {
  uint8_t *data = NULL;
  size_t n = 0;
  int rc = tbe__input_read_all(in, &data, &n, o->max_input_bytes);
  if (rc) return tbe__import_input_fail(err, rc, path, in, o);
  tbe__convert_opts co;
  memset(&co, 0, sizeof co);
  co.allocator = o->allocator;
  tbe__convert_info info;
  const char *base = strrchr(path, '/');
  rc = tbe__spool_to_trace(data, n, base ? base + 1 : path, &co, t, &info);
  tbe__free(in->a, data);
  if (rc == TBE_EFORMAT || rc == TBE_ECORRUPT)
    return tbe__import_fail(err, rc, path, info.tail_offset, 0, 0, "%s",
                            info.tail_why ? info.tail_why : "not a spool file");
  return rc;
}

const tbe__importer tbe__importer_spool = {TBE_FORMAT_SPOOL, "spool", spool_sniff, import_spool,
                                           0, NULL};
