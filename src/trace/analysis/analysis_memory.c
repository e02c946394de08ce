/* analysis_memory.c: the memory figures of an analysis (tbexport/analysis.h,
 * tbe_device_stats.mem_*, tbe_step_stats.mem_*), rows of figures.h.
 *
 * The curve is the trace's (tbe_trace_finish, model/memory.c): the
 * TBE_EV_MEMORY events with their totals, less those named "[cuda
 * memory]" (the other source of a process that has an allocator curve).
 * A GPU's curve is the sum of its processes' curves: after each event (in
 * time order; ties by position in the event array) the GPU holds the sum
 * of each process's last totals.  From it:
 *   - peaks: the highest allocated and reserved values, and the reserved
 *     value at the first point where allocated reaches its peak;
 *   - per step (the steps' windows as the analysis made them): the
 *     highest value inside the window, the value held at its start
 *     included; the step's figure is that of the GPU where it is highest;
 *   - growth: the allocated value at each step's end (the last point
 *     before it), and the least-squares slope of those values over the
 *     steps in start order (x = 0, 1, 2, ...), in bytes per step, rounded;
 *   - never freed: the bytes of the allocations (with an address) made
 *     from the first step's start to the last step's end whose address no
 *     later free of the GPU's curve gives back.
 * Host memory (device -1) has no GPU row.  Sampled memory (counter
 * tracks of a GPU, model/vocab.h): the sampled peak is the largest of
 * NVML's samples of the program's processes (of the GPU's, where only
 * those were sampled); a GPU without a curve from events whose program
 * sampled JAX's allocator gets its curve from those samples (allocated:
 * bytes in use; reserved: bytes reserved where sampled, else in use; the
 * peak allocated no lower than JAX's own peak), with peaks, steps and
 * growth as above and never freed unknown (samples have no addresses).
 * A GPU without a curve keeps every figure unknown (-1, growth
 * INT64_MIN), never 0.  Cost: one pass
 * over the events, one sort of the memory events, a binary search per
 * step and GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"
#include "trace/model/vocab.h"

/* ---- the curve ---- */

typedef struct point {
  int64_t t;     /* the event's start */
  int64_t pid;   /* its process */
  int64_t alloc; /* the process's totals after it */
  int64_t res;
  int64_t bytes;
  uint64_t addr;
  uint32_t dev; /* index in an->devices */
  uint32_t ev;  /* index in the trace's events (ties) */
} point;

static int cmp_point(const void *x, const void *y) {
  const point *a = x, *b = y;
  if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return (a->ev > b->ev) - (a->ev < b->ev);
}

static int cmp_dev(const void *k, const void *d) {
  int32_t a = *(const int32_t *)k, b = ((const tbe_device_stats *)d)->device;
  return (a > b) - (a < b);
}

/* The curve's points of every GPU, sorted by (GPU, time); *n of them. */
static point *collect(const tbe_analysis *an, const tbe_allocator *a, size_t *n, int *rc) {
  const tbe_trace *t = an->trace;
  tbe_str other = tbe_trace_find_str(t, "[cuda memory]", 13);
  *n = 0;
  point *p = tbe__alloc(a, (t->nmemory ? t->nmemory : 1) * sizeof *p);
  if (!p) {
    *rc = TBE_ENOMEM;
    return NULL;
  }
  size_t k = 0;
  for (size_t i = 0; i < t->nevents && k < t->nmemory; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_MEMORY || (other != TBE_NONE && e->name == other)) continue;
    const tbe_memory *m = tbe_trace_memory(t, e);
    if (!m || m->device < 0 || m->total_allocated < 0) continue;
    const tbe_device_stats *d =
        bsearch(&m->device, an->devices, an->ndevices, sizeof *an->devices, cmp_dev);
    if (!d) continue;
    p[k++] = (point){e->start_ns,
                     e->track < t->ntracks ? t->tracks[e->track].pid : 0,
                     m->total_allocated,
                     m->total_reserved >= 0 ? m->total_reserved : m->total_allocated,
                     m->bytes,
                     m->addr,
                     (uint32_t)(d - an->devices),
                     (uint32_t)i};
  }
  qsort(p, k, sizeof *p, cmp_point);
  *n = k;
  return p;
}

/* Turns the points of one GPU, p[0..n) in time order, from per-process
 * totals into the GPU's (the sum of each process's last).  0 or
 * TBE_ENOMEM. */
static int sum_processes(point *p, size_t n, const tbe_allocator *a) {
  int one = 1;
  for (size_t i = 1; i < n && one; i++) one = p[i].pid == p[0].pid;
  if (one) return 0;
  tbe__map slot; /* pid -> its entry in last[] */
  tbe__map_init(&slot, a, TBE__SEED_PROCESS);
  int64_t *last = tbe__calloc(a, 2 * n, sizeof *last); /* per process: allocated, reserved */
  int64_t sa = 0, sr = 0;
  size_t np = 0;
  int rc = last ? 0 : TBE_ENOMEM;
  for (size_t i = 0; i < n && !rc; i++) {
    int added;
    uint32_t *v = tbe__map_put(&slot, (uint64_t)p[i].pid, &added);
    if (!v) {
      rc = tbe__map_error(&slot);
      break;
    }
    if (added) *v = (uint32_t)np++;
    int64_t *l = &last[2 * (size_t)*v];
    sa = tbe__sat_add(sa, tbe__sat_sub(p[i].alloc, l[0]));
    sr = tbe__sat_add(sr, tbe__sat_sub(p[i].res, l[1]));
    l[0] = p[i].alloc;
    l[1] = p[i].res;
    p[i].alloc = sa;
    p[i].res = sr;
  }
  tbe__free(a, last);
  tbe__map_deinit(&slot);
  return rc;
}

/* ---- figures of one GPU ---- */

/* The first point of p[0..n) at or after `when`. */
static size_t first_at(const point *p, size_t n, int64_t when) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p[mid].t < when)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void peaks(tbe_device_stats *d, tbe__mem_trend *tr, const point *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p[i].alloc > d->mem_peak_allocated) {
      d->mem_peak_allocated = p[i].alloc;
      tr->reserved_at_peak = p[i].res;
    }
    if (p[i].res > d->mem_peak_reserved) d->mem_peak_reserved = p[i].res;
  }
}

/* The steps' peaks (each step's the largest GPU's) and the growth over the
 * steps' ends; order[] the steps in start order. */
static void steps_of(tbe_analysis *an, tbe_device_stats *d, tbe__mem_trend *tr, const point *p,
                     size_t n, const size_t *order) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int64_t first = 0, prev = 0;
  uint64_t k = 0;
  for (size_t s = 0; s < an->nsteps; s++) {
    tbe_step_stats *st = &an->steps[order[s]];
    int64_t lo = st->start_ns, hi = tbe__sat_add(st->start_ns, st->dur_ns);
    size_t i = first_at(p, n, lo), j = first_at(p, n, hi > lo ? hi : lo);
    int64_t pa = i ? p[i - 1].alloc : -1, pr = i ? p[i - 1].res : -1;
    for (size_t x = i; x < j; x++) {
      if (p[x].alloc > pa) pa = p[x].alloc;
      if (p[x].res > pr) pr = p[x].res;
    }
    if (pa > st->mem_peak_allocated) st->mem_peak_allocated = pa;
    if (pr > st->mem_peak_reserved) st->mem_peak_reserved = pr;
    if (j == 0) continue; /* nothing allocated before its end: no value */
    int64_t y = p[j - 1].alloc;
    if (k == 0)
      first = y;
    else if (y > prev)
      tr->grow_steps++;
    prev = y;
    double xd = (double)k, yd = (double)tbe__sat_sub(y, first); /* shifted: exact sums */
    sx += xd, sy += yd, sxx += xd * xd, sxy += xd * yd;
    k++;
  }
  tr->steps = k;
  tr->step_growth = k ? tbe__sat_sub(prev, first) : 0;
  double den = (double)k * sxx - sx * sx;
  if (k < 2 || !(den > 0)) return;
  double slope = ((double)k * sxy - sx * sy) / den;
  if (!(slope > -9.2e18)) slope = -9.2e18; /* a hostile curve: saturated, never INT64_MIN */
  if (!(slope < 9.2e18)) slope = 9.2e18;
  d->mem_growth_per_step = llround(slope);
}

/* The bytes allocated inside the steps that no later free gives back. */
static int unfreed(tbe_analysis *an, tbe_device_stats *d, const point *p, size_t n,
                   const size_t *order, const tbe_allocator *a) {
  if (!an->nsteps) return 0;
  const tbe_step_stats *s0 = &an->steps[order[0]], *s1 = &an->steps[order[an->nsteps - 1]];
  int64_t lo = s0->start_ns, hi = tbe__sat_add(s1->start_ns, s1->dur_ns);
  tbe__map live; /* address -> its allocation's point */
  tbe__map_init(&live, a, TBE__SEED_PROCESS);
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    if (!p[i].addr) continue;
    if (p[i].bytes < 0) {
      tbe__map_del(&live, p[i].addr);
    } else if (p[i].bytes > 0 && p[i].t >= lo && p[i].t < hi) {
      if (tbe__map_set(&live, p[i].addr, (uint32_t)i)) rc = tbe__map_error(&live);
    }
  }
  int64_t sum = 0;
  size_t it = 0;
  uint64_t key;
  uint32_t v;
  while (!rc && tbe__map_next(&live, &it, &key, &v))
    sum = tbe__sat_add(sum, p[v].bytes); /* order-free */
  tbe__map_deinit(&live);
  d->mem_unfreed = sum;
  return rc;
}

/* ---- the pass ---- */

static void unknown(tbe_device_stats *d) {
  d->mem_peak_allocated = d->mem_peak_reserved = d->mem_unfreed = d->mem_sampled_peak = -1;
  d->mem_growth_per_step = INT64_MIN;
}

/* `all`: the largest GPU's figure of each. */
static void largest(tbe_device_stats *all, const tbe_device_stats *d) {
  if (d->mem_peak_allocated > all->mem_peak_allocated)
    all->mem_peak_allocated = d->mem_peak_allocated;
  if (d->mem_peak_reserved > all->mem_peak_reserved) all->mem_peak_reserved = d->mem_peak_reserved;
  if (d->mem_growth_per_step > all->mem_growth_per_step)
    all->mem_growth_per_step = d->mem_growth_per_step;
  if (d->mem_unfreed > all->mem_unfreed) all->mem_unfreed = d->mem_unfreed;
  if (d->mem_sampled_peak > all->mem_sampled_peak) all->mem_sampled_peak = d->mem_sampled_peak;
}

/* ---- sampled memory ---- */

/* The value of a counter event, in bytes (0 for a value out of range). */
static int64_t counter_bytes(const tbe_trace *t, const tbe_event *e) {
  const tbe_counter *c = tbe_trace_counter(t, e);
  double v = c ? c->value : 0;
  return v >= 0 && v < 9.2e18 ? llround(v) : 0;
}

/* What one pass over the tracks finds of a GPU's sampled memory. */
typedef struct sampled_dev {
  int64_t nvml_proc, nvml_dev, jax_peak; /* largest samples, -1 none */
  int64_t jax_use, jax_res;              /* their first tracks, -1 none */
} sampled_dev;

/* The largest sample of track tr, or -1. */
static int64_t track_max(const tbe_trace *t, const tbe_track *tr) {
  int64_t m = -1;
  for (uint32_t k = 0; k < tr->count && tr->first + k < t->nevents; k++) {
    int64_t v = counter_bytes(t, &t->events[tr->first + k]);
    if (v > m) m = v;
  }
  return m;
}

/* Fills sd[i] for every device i of the analysis: one pass over the
 * tracks, a binary search per memory counter track. */
static void scan_sampled(const tbe_analysis *an, sampled_dev *sd) {
  const tbe_trace *t = an->trace;
  for (size_t i = 0; i < an->ndevices; i++) sd[i] = (sampled_dev){-1, -1, -1, -1, -1};
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (!tbe_track_is_metric(tr) || !tr->count) continue;
    tbe__mem_ctr kind = tbe__memory_counter_of(tbe_trace_str(t, tr->name));
    if (kind == TBE__MCTR_NONE) continue;
    const tbe_device_stats *d =
        bsearch(&tr->device, an->devices, an->ndevices, sizeof *an->devices, cmp_dev);
    if (!d) continue;
    sampled_dev *x = &sd[d - an->devices];
    int64_t m;
    switch (kind) {
      case TBE__MCTR_NVML_PROC:
        if ((m = track_max(t, tr)) > x->nvml_proc) x->nvml_proc = m;
        break;
      case TBE__MCTR_NVML_DEVICE:
        if ((m = track_max(t, tr)) > x->nvml_dev) x->nvml_dev = m;
        break;
      case TBE__MCTR_JAX_PEAK:
        if ((m = track_max(t, tr)) > x->jax_peak) x->jax_peak = m;
        break;
      case TBE__MCTR_JAX_IN_USE:
        if (x->jax_use < 0) x->jax_use = (int64_t)i;
        break;
      case TBE__MCTR_JAX_RESERVED:
        if (x->jax_res < 0) x->jax_res = (int64_t)i;
        break;
      default: break;
    }
  }
}

/* GPU d's curve from JAX's samples (see the top), when it has them. */
static int jax_curve(tbe_analysis *an, tbe_device_stats *d, const sampled_dev *x,
                     tbe__mem_trend *tr, const size_t *order, const tbe_allocator *a) {
  const tbe_trace *t = an->trace;
  if (x->jax_use < 0) return 0;
  const tbe_track *u = &t->tracks[x->jax_use], *r = x->jax_res >= 0 ? &t->tracks[x->jax_res] : NULL;
  point *p = tbe__alloc(a, u->count * sizeof *p);
  if (!p) return TBE_ENOMEM;
  size_t n = 0;
  uint32_t ri = 0;
  int64_t rv = -1;
  for (uint32_t k = 0; k < u->count && u->first + k < t->nevents; k++) {
    const tbe_event *e = &t->events[u->first + k];
    while (r && ri < r->count && r->first + ri < t->nevents &&
           t->events[r->first + ri].start_ns <= e->start_ns)
      rv = counter_bytes(t, &t->events[r->first + ri++]);
    int64_t v = counter_bytes(t, e);
    p[n++] = (point){e->start_ns, u->pid, v, rv > v ? rv : v, 0, 0, (uint32_t)(d - an->devices),
                     u->first + k};
  }
  peaks(d, tr, p, n);
  steps_of(an, d, tr, p, n, order);
  if (x->jax_peak > d->mem_peak_allocated) d->mem_peak_allocated = x->jax_peak;
  tbe__free(a, p);
  return 0;
}

/* Every GPU's sampled peak, and JAX's curves of GPUs without one from
 * events (has_curve[i]: device i has one). */
static int sampled(tbe_analysis *an, const unsigned char *has_curve, tbe__mem_trend *tr,
                   const size_t *order, const tbe_allocator *a) {
  sampled_dev *sd = tbe__alloc(a, an->ndevices * sizeof *sd);
  if (!sd) return TBE_ENOMEM;
  scan_sampled(an, sd);
  int rc = 0;
  for (size_t i = 0; i < an->ndevices && !rc; i++) {
    tbe_device_stats *d = &an->devices[i];
    d->mem_sampled_peak = sd[i].nvml_proc >= 0 ? sd[i].nvml_proc : sd[i].nvml_dev;
    if (!has_curve[i]) rc = jax_curve(an, d, &sd[i], &tr[i], order, a);
    largest(&an->all, d);
  }
  tbe__free(a, sd);
  return rc;
}

int tbe__analysis_memory(tbe_analysis *an, const size_t *order) {
  for (size_t i = 0; i < an->ndevices; i++) unknown(&an->devices[i]);
  unknown(&an->all);
  for (size_t s = 0; s < an->nsteps; s++)
    an->steps[s].mem_peak_allocated = an->steps[s].mem_peak_reserved = -1;
  const tbe_trace *t = an->trace;
  if (!t || !an->ndevices) return 0;
  const tbe_allocator *a = &an->alloc_;
  tbe__analysis_priv *pv = an->priv_;
  tbe__mem_trend *tr = pv->mem_trend = tbe__calloc(a, an->ndevices, sizeof *tr);
  unsigned char *has_curve = tbe__calloc(a, an->ndevices, 1);
  if (!tr || !has_curve) {
    tbe__free(a, has_curve);
    return TBE_ENOMEM;
  }
  size_t n = 0;
  int rc = 0;
  point *p = t->nmemory ? collect(an, a, &n, &rc) : NULL;
  for (size_t i = 0; i < n && !rc;) {
    size_t j = i;
    while (j < n && p[j].dev == p[i].dev) j++;
    tbe_device_stats *d = &an->devices[p[i].dev];
    has_curve[p[i].dev] = 1;
    /* never freed reads each point's own bytes and address: first */
    if (!(rc = unfreed(an, d, p + i, j - i, order, a)) && !(rc = sum_processes(p + i, j - i, a))) {
      peaks(d, &tr[p[i].dev], p + i, j - i);
      steps_of(an, d, &tr[p[i].dev], p + i, j - i, order);
      largest(&an->all, d);
    }
    i = j;
  }
  tbe__free(a, p);
  if (!rc) rc = sampled(an, has_curve, tr, order, a);
  tbe__free(a, has_curve);
  return rc;
}
