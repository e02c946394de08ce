/* memory_counters.c: the memory curve as counter tracks per GPU, so that
 * Perfetto and chrome://tracing (Chrome "C" events in the GPU's pid) and
 * xprof's trace viewer (XSpace counter lines) draw it under each GPU.
 *
 * The curve is the "[memory]" events (model/memory.c leaves that name on
 * the curve's source and renames the other source's events "[cuda
 * memory]") with their running totals.  Per (process, GPU), two counter
 * tracks made by tbe_trace_metric_track, as the hardware-metric timelines
 * are: "memory allocated" and "memory reserved", values in bytes, one
 * TBE_EV_COUNTER at each change of the total (a counter's value holds
 * until the next event of its track, as a Chrome "C" event's does).
 *
 * Invariants:
 * - Events without the total (-1), on the host (device -1) or of another
 *   name add nothing; every value added is a total >= 0 the curve had.
 * - Events of one time count as the last of them (the totals after it),
 *   so a track never has two events at one time.
 * - Idempotent: a GPU that already has a counter track of the name (a
 *   trace read back from our Chrome JSON or XSpace) gets none added, so
 *   reading our outputs back gives the same tracks, not twice as many.
 * - New events go on new tracks, appended in (track, time) order: the
 *   caller's sort finds them already in place. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/map.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "trace/model/memory_counters.h"
#include "trace/model/model_int.h"

/* ---- the points of the curve ---- */

typedef struct point {
  int64_t pid;
  int64_t ts;
  int64_t allocated; /* -1 unknown */
  int64_t reserved;  /* -1 unknown */
  int32_t device;
  uint32_t idx; /* the event's index: events of one time keep their order */
} point;

static int cmp_point(const void *x, const void *y) {
  const point *a = x, *b = y;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->device != b->device) return a->device < b->device ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The curve's events with a total, on a GPU, as points. */
static int collect(const tbe_trace *t, tbe_str name, tbe__vec *pts) {
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_MEMORY || e->name != name) continue;
    const tbe_memory *m = tbe_trace_memory(t, e);
    if (!m || m->device < 0 || (m->total_allocated < 0 && m->total_reserved < 0)) continue;
    point *p = TBE__VEC_PUSH(pts, point);
    if (!p) break;
    p->pid = e->track < t->ntracks ? t->tracks[e->track].pid : -1;
    p->ts = e->start_ns;
    p->allocated = m->total_allocated;
    p->reserved = m->total_reserved;
    p->device = m->device;
    p->idx = (uint32_t)i;
  }
  return tbe__vec_error(pts);
}

/* ---- the tracks ---- */

/* The key of (GPU, counter k) in the set of existing tracks. */
static uint64_t track_key(int32_t device, int k) {
  return (uint64_t)(uint32_t)device << 1 | (uint64_t)(k & 1);
}

/* The set of (GPU, counter k) that have a counter track named names[k]
 * (any process): one pass over the tracks, whatever their number. */
static int existing_tracks(const tbe_trace *t, const tbe_str names[2], tbe__map *have) {
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (!tbe_track_is_metric(tr)) continue;
    for (int k = 0; k < 2; k++)
      if (tr->name == names[k] && tbe__map_set(have, track_key(tr->device, k), 1))
        return tbe__map_error(have);
  }
  return 0;
}

static int64_t total_of(const point *p, int reserved) {
  return reserved ? p->reserved : p->allocated;
}

/* One track: points [0, n) of one process and GPU, in time order. */
static int add_series(tbe_trace *t, const point *v, size_t n, tbe_str name, int reserved,
                      size_t *added) {
  uint32_t track = TBE_NONE;
  int64_t last = -1;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    int64_t val = total_of(&v[i], reserved);
    if (val < 0) continue;
    /* the last event of this time, with a total, counts */
    size_t j = i;
    while (j + 1 < n && v[j + 1].ts == v[i].ts) {
      j++;
      if (total_of(&v[j], reserved) >= 0) val = total_of(&v[j], reserved);
    }
    i = j;
    if (val == last) continue;
    if (track == TBE_NONE && (rc = tbe_trace_metric_track(t, v[0].pid, v[0].device, name, &track)))
      break;
    tbe_event e;
    memset(&e, 0, sizeof e);
    e.start_ns = v[i].ts;
    e.name = name;
    e.track = track;
    e.detail = TBE_NONE;
    e.link = TBE_NONE;
    e.kind = TBE_EV_COUNTER;
    tbe_counter c = {(double)val};
    if (!(rc = tbe_trace_add_event(t, &e, &c, NULL, 0, NULL))) (*added)++;
    last = val;
  }
  return rc;
}

int tbe__track_is_memory_counter(const tbe_trace *t, const tbe_track *tr) {
  if (!tbe_track_is_metric(tr)) return 0;
  return tbe__memory_counter_of(tbe_trace_str(t, tr->name)) != TBE__MCTR_NONE;
}

/* ---- the pass ---- */

int tbe__trace_memory_counters(tbe_trace *t, size_t *added) {
  *added = 0;
  tbe_str mem = tbe_trace_find_str(t, "[memory]", 8);
  if (mem == TBE_NONE || !t->nmemory) return 0;
  tbe__vec pts;
  tbe__vec_init(&pts, tbe__trace_allocator(t), sizeof(point));
  int rc = collect(t, mem, &pts);
  size_t n = tbe__vec_len(&pts);
  tbe_str names[2] = {0, 0};
  if (!rc && n) {
    names[0] = tbe_trace_str_id(t, TBE__MEM_COUNTER_ALLOCATED);
    names[1] = tbe_trace_str_id(t, TBE__MEM_COUNTER_RESERVED);
    if (!names[0] || !names[1]) rc = TBE_ENOMEM;
  }
  tbe__map have; /* (GPU, counter) already there: read back from our files */
  tbe__map_init(&have, tbe__trace_allocator(t), TBE__SEED_PROCESS);
  if (!rc && n) rc = existing_tracks(t, names, &have);
  if (!rc && n) {
    point *v = pts.data;
    qsort(v, n, sizeof *v, cmp_point);
    for (size_t a = 0, b; a < n && !rc; a = b) {
      for (b = a + 1; b < n && v[b].pid == v[a].pid && v[b].device == v[a].device;) b++;
      for (int k = 0; k < 2 && !rc; k++)
        if (!tbe__map_get(&have, track_key(v[a].device, k)))
          rc = add_series(t, v + a, b - a, names[k], k, added);
    }
  }
  tbe__map_deinit(&have);
  tbe__vec_deinit(&pts);
  return rc;
}
