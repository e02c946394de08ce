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
 * Files.  This one runs the build (the session's span, the windows, the
 * order of the passes, steps, the trace's span), writes the report and
 * the warnings, and is the importer; the build's state and the record
 * passes are spool_build.h and spool_records.c, the metrics
 * spool_metrics.c.  They are handed what they need (the scan, the trace,
 * the window test, a tally to count into) and never call back here.
 *
 * Invariant: with any window, no event starts outside the kept windows
 * (GPU work: the call that launched it), CUPTI overhead is counted only
 * inside them, and the trace's start and stop are their span plus the GPU
 * work launched in them. */
#include "import/spool.h"
#include "import/spool_int.h"
#include "import/spool_build.h"

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
#include "common/fsutil.h"
#include "common/map.h"
#include "common/vec.h"
#include "events/spool.h"
#include "import/importer.h"
#include "import/spool_pymem.h"
#include "trace/model/vocab.h"
#include "trace/model/ops.h"
#include "tbexport/error.h"

/* ---- names ---- */

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

static int cmp_ival(const void *x, const void *y) {
  const ival *a = x, *b = y;
  return a->a < b->a ? -1 : a->a > b->a;
}


/* The end of the kept window holding ts (INT64_MAX while open or when
 * nothing bounds the capture). */
static int64_t window_end(const build *b, int64_t ts) {
  if (!b->bounded) return INT64_MAX;
  long w = window_at(&b->win, ts);
  return w >= 0 ? TBE__VEC_AT(&b->win, window, w).b : INT64_MAX;
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
  if (!rc) rc = tbe__spool_nvtx_ranges(b, &rs);
  if (!rc) rc = compute_windows(b, &rs);
  if (!rc) rc = kept_windows(b);
  if (!rc) rc = tbe__spool_nvtx_events(b, &rs);
  tbe__vec_deinit(&rs);
  if (!rc) rc = tbe__spool_operators(b);
  if (!rc) rc = tbe__spool_api_calls(b);
  if (!rc) rc = tbe__spool_kernels(b);
  if (!rc) rc = tbe__spool_copies(b);
  if (!rc) rc = tbe__spool_memsets(b);
  if (!rc) rc = tbe__spool_syncs(b);
  if (!rc) rc = tbe__spool_overheads(b);
  if (!rc) rc = tbe__spool_memory(b);
  if (!rc) rc = tbe__spool_counters(b);
  if (!rc) rc = tbe__spool_devices_threads(b);
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

/* The warnings of a conversion that worked: the collector's notes (those
 * a metric status repeats aside), how the capture ended, and every count
 * of records dropped or left out. */
static void conversion_warnings(tbe_trace *t, const scan *s, const build *b,
                                const tbe__convert_info *info, const tbe__spool_tail *tail,
                                const char *label, const tbe__convert_opts *o) {
  const tbe_str *notes = s->notes.data;
  for (size_t i = 0; i < s->notes.n; i++)
    if (!tbe__spool_note_is_status(s, notes[i]))
      tbe_trace_warn(t, "%s", tbe_trace_str(t, notes[i]));
  if (info->ended_early) {
    if (s->have_signal && !tail->bytes)
      tbe_trace_warn(t,
                     "the program died of signal %d (%s): the collector flushed at the signal, "
                     "so every record completed before it is here; GPU work still running "
                     "then is missing",
                     (int)s->signal.sig, signal_name(s->signal.sig));
    else if (tail->bytes)
      tbe_trace_warn(t,
                     "the capture ended early (the program was killed or crashed): %s: %zu "
                     "bytes at offset %zu are incomplete (%s); activity after that is missing",
                     label, tail->bytes, tail->good_bytes, tail->why ? tail->why : "incomplete");
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
                   (unsigned long long)s->stats.cupti_dropped,
                   (unsigned long long)s->stats.spool_dropped);
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
  if (s->have_nvtx && s->nvtx.dropped)
    tbe_trace_warn(t,
                   "%llu NVTX calls (ranges, operators) were not recorded: the collector's "
                   "NVTX buffers were full or a thread slot was missing",
                   (unsigned long long)s->nvtx.dropped);
  if (s->have_nvtx && s->nvtx.truncated)
    tbe_trace_warn(t, "%llu NVTX messages longer than %d bytes were cut there",
                   (unsigned long long)s->nvtx.truncated, TBE__NVTX_MSG_MAX);
  if (b->windowed) {
    if (b->win.n == 0)
      tbe_trace_warn(t, "the capture range (%s) never opened: nothing was kept",
                     o->capture == TBE_CAPTURE_NVTX ? "nvtx" : "cudaProfilerApi");
    if (info->outside_capture)
      tbe_trace_warn(t, "%llu records outside the capture range were left out",
                     (unsigned long long)info->outside_capture);
  }
  if (s->stats.unknown_records)
    tbe_trace_warn(t, "%llu CUPTI records of kinds this collector does not decode were skipped",
                   (unsigned long long)s->stats.unknown_records);
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
  b.tally.r = &info->r;
  rc = build_trace(&b);
  info->outside_capture = b.tally.outside_capture;
  info->outside_window = b.tally.outside_window;
  info->bad_devices = b.tally.bad_devices;
  info->nvtx_unclosed = b.tally.nvtx_unclosed;
  info->nvtx_orphan_ends = b.tally.nvtx_orphan_ends;
  info->ops = b.tally.ops;
  info->ops_unclosed = b.tally.ops_unclosed;
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
    conversion_warnings(t, &s, &b, info, &tail, label, o);
    if (o && o->pymem_dir && info->pid > 0)
      rc = tbe__pymem_file_to_trace(o->pymem_dir, info->pid, t, a);
    if (!rc) rc = tbe_trace_finish(t);
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
  /* The Python hook's <pid>.pymem beside the spool (a spool kept by the
   * session, converted later) is read as the session would have. */
  char *dir = NULL;
  const char *name = NULL;
  if (strcmp(path, "-") != 0 && tbe__path_split(in->a, path, &dir, &name) == 0) co.pymem_dir = dir;
  tbe__convert_info info;
  const char *base = strrchr(path, '/');
  rc = tbe__spool_to_trace(data, n, base ? base + 1 : path, &co, t, &info);
  if (dir) tbe__free(in->a, dir);
  tbe__free(in->a, data);
  if (rc == TBE_EFORMAT || rc == TBE_ECORRUPT)
    return tbe__import_fail(err, rc, path, info.tail_offset, 0, 0, "%s",
                            info.tail_why ? info.tail_why : "not a spool file");
  return rc;
}

const tbe__importer tbe__importer_spool = {TBE_FORMAT_SPOOL, "spool", spool_sniff, import_spool,
                                           0, NULL};
