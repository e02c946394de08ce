/* analysis.c: statistics over a finished trace (tbexport/analysis.h).
 *
 * Everything is computed from the events as tbe_trace_finish leaves them:
 * sorted by (track, start, longer first), so each track is one sorted run.
 *
 *  - One pass over the tracks: per-device sums (kernels, copies by
 *    direction, memsets, sync records), launch latencies of correlated
 *    pairs, per-name tables (kernels, CPU operators, host ranges) keyed by
 *    the interned name id through a dense slot array (string ids are small
 *    consecutive integers, so no hashing is needed), self time by a stack of
 *    open entries per thread, and the host busy time (union per thread).
 *  - One k-way merge of the GPU stream tracks (a binary heap over track
 *    cursors) yields GPU work in global start order, from which the busy
 *    time (interval union) per device and over all devices follows; the
 *    all-device union is kept as segments to measure each step's window.
 *  - Medians by quickselect; per-step per-name times in a second pass only
 *    when the trace has steps.
 *
 * The operators' GPU figures (self CUDA, CUDA total, what each launched,
 * the table by input shapes) are analysis_ops.c's, after the main pass and
 * before the name tables are finished; per_step_names hands it each
 * operator's step.  The advice lines are drawn from the finished figures
 * in analysis_advice.c; two analyses are compared in analysis_diff.c.
 *
 * Scratch memory is allocated once per analysis, in proportion to the
 * events of a kind, never per event.  The analysis borrows the trace.
 *
 * Arithmetic on times saturates (common/checked.h): the trace's fields are
 * public and a sum of millions of durations may pass int64, so every sum,
 * end (start + dur) and difference here goes through tbe__sat_* and a
 * hostile trace gives saturated figures, never wrapped ones.  Lookups are
 * by index or hash: nothing here walks one table per entry of another
 * (devices by sorted ordinal, step names flagged up front). */
#include "tbexport/analysis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/intern.h"
#include "common/map.h"
#include "common/vec.h"
#include "tbexport/error.h"
#include "trace/analysis/analysis_int.h"
#include "trace/analysis/stats.h"

/* Caps per-step per-name storage (entries of int64). */
#define STEP_CELLS_MAX TBE__STEP_CELLS_MAX

/* Flags per interned string, computed on first use. */
#define NF_DONE 0x1
#define NF_SYNC 0x2   /* an API call that synchronizes */
#define NF_STEP 0x4   /* a step marker (ProfilerStep#N or a step's name) */
#define NF_CUT 0x8    /* a range name with a per-call suffix (range_label_len) */
#define NF_CUT_DONE 0x10
#define NF_STEPNAME 0x20 /* the name of a step of the trace (set up front) */

typedef struct open_entry {
  int64_t end;
  uint32_t slot;
} open_entry;

typedef tbe__analysis_priv priv; /* analysis_int.h; made and freed by analysis_life.c */

typedef struct scratch {
  const tbe_allocator *a;
  uint32_t *slot[TBE_GROUP__COUNT];  /* name id -> index in groups[g] */
  tbe__vec groups[TBE_GROUP__COUNT]; /* an->groups[g] (data handed over: not freed here) */
  uint8_t *nflags;
  int32_t *track_dev;      /* track -> device index, -1 for host tracks */
  size_t *step_order;      /* step indexes sorted by start */
  tbe__vec stack;           /* open_entry: the open entries of one walk */
  /* Correlated launches (nlat of them): per launch, API start to GPU
   * start (lat), the API call's duration (ovh) and its end to the GPU
   * start, 0 at least (qdl). */
  int64_t *lat, *ovh, *qdl;
  uint32_t *lat_dev;
  uint32_t *lat_step; /* per launch, its step + 1, 0 for none (steps only) */
  size_t nlat;
  int64_t *seg;            /* all-device busy union: start, end pairs */
  size_t nseg;
  tbe__vec label_of;       /* uint32_t per range entry: its label's id + 1 in priv.labels, 0 = none */
  tbe__vec label_entry;    /* uint32_t per label id: its range entry */
  int64_t win_lo, win_hi;  /* the profiled window */
  int32_t *kstep;          /* step of each GPU kernel, in event order (steps only) */
  size_t nk;
  tbe__ops *ops;           /* analysis_ops.c's */
} scratch;

static int is_busy_kind(uint8_t k) {
  return k == TBE_EV_KERNEL || k == TBE_EV_MEMCPY || k == TBE_EV_MEMSET;
}

static uint8_t name_flags(scratch *s, const tbe_trace *t, tbe_str id) {
  uint8_t f = s->nflags[id];
  if (f & NF_DONE) return f;
  f = (uint8_t)((f & (NF_CUT | NF_CUT_DONE | NF_STEPNAME)) | NF_DONE);
  const char *n = tbe_trace_str(t, id);
  if (strstr(n, "Synchronize")) f |= NF_SYNC;
  if (strncmp(n, "ProfilerStep#", 13) == 0 || (f & NF_STEPNAME)) f |= NF_STEP;
  s->nflags[id] = f;
  return f;
}

/* Index of the step whose window holds `ts`, or -1. */
static long step_of(const tbe_trace *t, const scratch *s, int64_t ts) {
  size_t lo = 0, hi = t->nsteps;
  while (lo < hi) { /* first step (by start) starting after ts */
    size_t mid = (lo + hi) / 2;
    if (t->steps[s->step_order[mid]].start_ns <= ts) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return -1;
  size_t i = s->step_order[lo - 1];
  return ts < t->steps[i].end_ns ? (long)i : -1;
}

/* Finds or adds the entry of `name` in table `g`; returns its index or -1
 * on allocation failure. */
static long group_slot(tbe_analysis *an, scratch *s, tbe_group_kind g, tbe_str name) {
  uint32_t v = s->slot[g][name];
  if (v != UINT32_MAX) return v;
  size_t n = an->ngroups[g];
  tbe_name_stats *e = TBE__VEC_PUSH(&s->groups[g], tbe_name_stats);
  if (!e) return -1;
  an->groups[g] = s->groups[g].data; /* owned by the analysis from here */
  e->name = name;
  e->min_ns = INT64_MAX;
  if (g == TBE_GROUP_KERNEL) e->kclass = tbe_kernel_class_of(tbe_trace_str(an->trace, name));
  an->ngroups[g] = n + 1;
  s->slot[g][name] = (uint32_t)n;
  return (long)n;
}

/* Length of the part of a range name that names the operation: PyTorch's
 * NVTX ranges append per-call details (", seq = 4, op_id = 12, sizes =
 * [[2]]"), which would make every call a name of its own. */
static size_t range_label_len(const char *n) {
  static const char *const keys[] = {", seq = ", ", op_id = ", ", sizes = "};
  size_t cut = strlen(n);
  for (size_t i = 0; i < 3; i++) {
    const char *p = strstr(n, keys[i]);
    if (p && (size_t)(p - n) < cut && p != n) cut = (size_t)(p - n);
  }
  return cut;
}

/* The range table's entry for `name`, grouping names by their label:
 * names with a per-call suffix share the entry of their label (interned
 * in the analysis, whose entries point at it); others are their own. */
static long range_slot(tbe_analysis *an, scratch *s, tbe_str name) {
  uint32_t v = s->slot[TBE_GROUP_RANGE][name];
  if (v != UINT32_MAX) return v;
  const tbe_trace *t = an->trace;
  const char *n = tbe_trace_str(t, name);
  size_t len = range_label_len(n);
  if (n[len] == '\0') return group_slot(an, s, TBE_GROUP_RANGE, name);
  priv *p = an->priv_;
  uint32_t id;
  int added;
  if (tbe__intern_add(&p->labels, n, len, &id, &added)) return -1;
  if (!added) {
    uint32_t idx = TBE__VEC_AT(&s->label_entry, uint32_t, id);
    s->slot[TBE_GROUP_RANGE][name] = idx;
    return idx;
  }
  long idx = group_slot(an, s, TBE_GROUP_RANGE, name);
  uint32_t *le = TBE__VEC_PUSH(&s->label_entry, uint32_t); /* at `id` */
  if (idx < 0 || !le || tbe__vec_resize(&s->label_of, (size_t)idx + 1)) return -1;
  *le = (uint32_t)idx;
  TBE__VEC_AT(&s->label_of, uint32_t, idx) = id + 1;
  return idx;
}

static void account(tbe_name_stats *e, int64_t dur) {
  e->calls++;
  e->total_ns = tbe__sat_add(e->total_ns, dur);
  e->self_ns = tbe__sat_add(e->self_ns, dur);
  if (dur < e->min_ns) e->min_ns = dur;
  if (dur > e->max_ns) e->max_ns = dur;
}

/* Closes the open entries of s->stack that end by `start`. */
static void stack_close(scratch *s, int64_t start) {
  while (s->stack.n > 0 && TBE__VEC_AT(&s->stack, open_entry, s->stack.n - 1).end <= start)
    s->stack.n--;
}

/* Self time: subtracts from the innermost open entry of the same table
 * (s->stack) the part of `e` it encloses, then opens `e`.  Returns 0 or
 * TBE_ENOMEM. */
static int nest(tbe_analysis *an, scratch *s, tbe_group_kind g, uint32_t slot, int64_t start,
                int64_t end) {
  stack_close(s, start);
  if (s->stack.n > 0) {
    const open_entry *top = &TBE__VEC_AT(&s->stack, open_entry, s->stack.n - 1);
    int64_t ov = tbe__sat_sub(end < top->end ? end : top->end, start);
    if (ov > 0) an->groups[g][top->slot].self_ns = tbe__sat_sub(an->groups[g][top->slot].self_ns, ov);
  }
  open_entry *o = TBE__VEC_PUSH(&s->stack, open_entry);
  if (!o) return TBE_ENOMEM;
  o->end = end;
  o->slot = slot;
  return 0;
}

/* ---- the k-way merge of GPU tracks ---- */

typedef struct cursor {
  int64_t start;
  uint32_t pos, end;
} cursor;

static void heap_down(cursor *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && h[l].start < h[m].start) m = l;
    if (r < n && h[r].start < h[m].start) m = r;
    if (m == i) return;
    cursor tmp = h[i];
    h[i] = h[m];
    h[m] = tmp;
    i = m;
  }
}

/* Moves `c` to the next busy event of its track; returns 0 at the end. */
static int cursor_seek(const tbe_trace *t, cursor *c) {
  while (c->pos < c->end && !is_busy_kind(t->events[c->pos].kind)) c->pos++;
  if (c->pos >= c->end) return 0;
  c->start = t->events[c->pos].start_ns;
  return 1;
}

static int busy_union(tbe_analysis *an, scratch *s, size_t ngpu_events) {
  const tbe_trace *t = an->trace;
  size_t ncur = 0;
  cursor *h = tbe__calloc(s->a, t->ntracks ? t->ntracks : 1, sizeof *h);
  int64_t *cur_end = tbe__calloc(s->a, an->ndevices ? an->ndevices : 1, sizeof *cur_end);
  s->seg = tbe__alloc(s->a, (ngpu_events ? ngpu_events : 1) * 2 * sizeof(int64_t));
  if (!h || !cur_end || !s->seg) {
    tbe__free(s->a, h);
    tbe__free(s->a, cur_end);
    return TBE_ENOMEM;
  }
  for (size_t d = 0; d < an->ndevices; d++) cur_end[d] = INT64_MIN;
  for (size_t i = 0; i < t->ntracks; i++) {
    if (s->track_dev[i] < 0) continue;
    cursor c = {0, t->tracks[i].first, t->tracks[i].first + t->tracks[i].count};
    if (cursor_seek(t, &c)) h[ncur++] = c;
  }
  for (size_t i = ncur; i-- > 0;) heap_down(h, ncur, i);
  int64_t all_end = INT64_MIN;
  size_t nseg = 0;
  while (ncur > 0) {
    const tbe_event *e = &t->events[h[0].pos];
    int32_t d = s->track_dev[e->track];
    int64_t st = e->start_ns, en = tbe__end_ns(e->start_ns, e->dur_ns);
    /* Per device. */
    tbe_device_stats *ds = &an->devices[d];
    if (st >= cur_end[d]) {
      ds->busy_ns = tbe__sat_add(ds->busy_ns, tbe__sat_sub(en, st));
      cur_end[d] = en;
    } else if (en > cur_end[d]) {
      ds->busy_ns = tbe__sat_add(ds->busy_ns, tbe__sat_sub(en, cur_end[d]));
      cur_end[d] = en;
    }
    /* All devices, kept as segments. */
    if (nseg == 0 || st > all_end) {
      s->seg[2 * nseg] = st;
      s->seg[2 * nseg + 1] = en;
      nseg++;
      all_end = en;
    } else if (en > all_end) {
      s->seg[2 * nseg - 1] = en;
      all_end = en;
    }
    h[0].pos++;
    if (!cursor_seek(t, &h[0])) h[0] = h[--ncur];
    heap_down(h, ncur, 0);
  }
  s->nseg = nseg;
  for (size_t i = 0; i < nseg; i++)
    an->all.busy_ns = tbe__sat_add(an->all.busy_ns, tbe__sat_sub(s->seg[2 * i + 1], s->seg[2 * i]));
  tbe__free(s->a, h);
  tbe__free(s->a, cur_end);
  return 0;
}

/* Time the all-device union covers inside [lo, hi). */
static int64_t busy_in(const scratch *s, int64_t lo, int64_t hi) {
  size_t a = 0, b = s->nseg;
  while (a < b) { /* first segment ending after lo */
    size_t m = (a + b) / 2;
    if (s->seg[2 * m + 1] <= lo) a = m + 1;
    else b = m;
  }
  int64_t sum = 0;
  for (size_t i = a; i < s->nseg && s->seg[2 * i] < hi; i++) {
    int64_t x = s->seg[2 * i] > lo ? s->seg[2 * i] : lo;
    int64_t y = s->seg[2 * i + 1] < hi ? s->seg[2 * i + 1] : hi;
    if (y > x) sum = tbe__sat_add(sum, tbe__sat_sub(y, x));
  }
  return sum;
}

/* ---- devices ---- */

static int cmp_i32(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a > b) - (a < b);
}

static int event_device(const tbe_track *tr) {
  if (tr->device >= 0) return tr->device;
  return -1;
}

/* Finds the GPUs: devices of stream tracks, of tracks holding GPU work, of
 * metric counter tracks, of memory events and the trace's device table; fills an->devices (by ordinal) and
 * s->track_dev.  Returns the number of events on GPU tracks, or -1. */
static long find_devices(tbe_analysis *an, scratch *s) {
  const tbe_trace *t = an->trace;
  size_t cap = t->ntracks + t->ndevices + t->nmemory + 1, n = 0;
  int32_t *ord = tbe__alloc(s->a, cap * sizeof *ord);
  s->track_dev = tbe__alloc(s->a, (t->ntracks ? t->ntracks : 1) * sizeof(int32_t));
  if (!ord || !s->track_dev) {
    tbe__free(s->a, ord);
    return -1;
  }
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    int gpu = tr->type == TBE_TRACK_STREAM;
    for (uint32_t j = 0; !gpu && j < tr->count; j++)
      if (tbe_event_kind_is_gpu((tbe_event_kind)t->events[tr->first + j].kind)) gpu = 1;
    s->track_dev[i] = gpu ? (event_device(tr) >= 0 ? event_device(tr) : 0) : INT32_MIN;
    if (gpu) ord[n++] = s->track_dev[i];
    else if (tbe_track_is_metric(tr) && tr->count) ord[n++] = tr->device; /* a GPU's counters */
  }
  for (size_t i = 0; i < t->ndevices; i++) ord[n++] = t->devices[i].id;
  for (size_t i = 0; i < t->nmemory; i++) /* a GPU's memory curve */
    if (t->memory[i].device >= 0) ord[n++] = t->memory[i].device;
  qsort(ord, n, sizeof *ord, cmp_i32);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || ord[u - 1] != ord[i]) ord[u++] = ord[i];
  an->devices = tbe__calloc(s->a, u ? u : 1, sizeof *an->devices);
  if (!an->devices) {
    tbe__free(s->a, ord);
    return -1;
  }
  an->ndevices = u;
  for (size_t i = 0; i < u; i++) {
    an->devices[i].device = ord[i];
    an->devices[i].launch_median_ns = -1;
    an->devices[i].launch_overhead_median_ns = -1;
    an->devices[i].queue_delay_median_ns = -1;
  }
  /* Names: each device of the table finds its ordinal by binary search
   * (the last entry of an ordinal wins, as before). */
  for (size_t j = 0; j < t->ndevices; j++) {
    int32_t *p = bsearch(&t->devices[j].id, ord, u, sizeof *ord, cmp_i32);
    if (p) an->devices[p - ord].name = t->devices[j].name;
  }
  long gpu_events = 0;
  for (size_t i = 0; i < t->ntracks; i++) {
    if (s->track_dev[i] == INT32_MIN) {
      s->track_dev[i] = -1;
      continue;
    }
    int32_t *p = bsearch(&s->track_dev[i], ord, u, sizeof *ord, cmp_i32);
    s->track_dev[i] = (int32_t)(p - ord);
    gpu_events += t->tracks[i].count;
  }
  tbe__free(s->a, ord);
  return gpu_events;
}

/* ---- the main pass ---- */

/* The step GPU work `e` belongs to: the step of the call that launched it,
 * else of its own start; -1 for none. */
static long launch_step(const tbe_trace *t, const scratch *s, const tbe_event *e) {
  int64_t when = e->start_ns;
  if (e->link != TBE_NONE && e->link < t->nevents) when = t->events[e->link].start_ns;
  return step_of(t, s, when);
}

/* Step `si` ends no earlier than the GPU work it launched (gpu_end_ns
 * holds the latest end until device_steps turns it into the window). */
static void step_gpu_end(tbe_analysis *an, long si, const tbe_event *e) {
  int64_t end = tbe__end_ns(e->start_ns, e->dur_ns);
  if (end > an->steps[si].gpu_end_ns) an->steps[si].gpu_end_ns = end;
}

/* The steps' windows as they run on the device, the way PyTorch's
 * TensorBoard plugin measures them: in start order, a step starts at its
 * host start or where the previous step ended, whichever is later, and
 * ends at its host end or at the end of the last GPU work it launched,
 * whichever is later.  In a GPU-bound loop, where the host runs steps
 * ahead of the GPU, the host ranges alone say how fast the host queued
 * work, not how long a step took; these windows tile the timeline and sum
 * to about the wall time either way. */
static void device_steps(tbe_analysis *an, const scratch *s) {
  int64_t prev_end = INT64_MIN;
  for (size_t k = 0; k < an->nsteps; k++) {
    tbe_step_stats *st = &an->steps[s->step_order[k]];
    int64_t host_end = tbe__sat_add(st->start_ns, st->host_ns);
    int64_t start = st->start_ns > prev_end ? st->start_ns : prev_end;
    int64_t end = st->gpu_end_ns > host_end ? st->gpu_end_ns : host_end;
    if (end < start) end = start;
    st->start_ns = start;
    st->dur_ns = tbe__sat_sub(end, start);
    st->gpu_end_ns = 0;
    prev_end = end;
  }
}

/* Adds `dur` to class `k` of a device and, when si >= 0, of step si. */
static void class_add(tbe_analysis *an, tbe_device_stats *ds, long si, uint32_t k, int64_t dur) {
  ds->class_ns[k] = tbe__sat_add(ds->class_ns[k], dur);
  ds->class_count[k]++;
  if (si >= 0) an->steps[si].class_ns[k] = tbe__sat_add(an->steps[si].class_ns[k], dur);
}

static int gpu_event(tbe_analysis *an, scratch *s, const tbe_event *e, int32_t d) {
  const tbe_trace *t = an->trace;
  tbe_device_stats *ds = &an->devices[d];
  int64_t dur = e->dur_ns;
  long si = t->nsteps ? launch_step(t, s, e) : -1;
  switch (e->kind) {
    case TBE_EV_KERNEL: {
      ds->kernel_ns = tbe__sat_add(ds->kernel_ns, dur);
      ds->kernel_count++;
      if (dur < TBE_SHORT_KERNEL_NS) ds->short_kernels++;
      long slot = group_slot(an, s, TBE_GROUP_KERNEL, e->name);
      if (slot < 0) return TBE_ENOMEM;
      account(&an->groups[TBE_GROUP_KERNEL][slot], dur);
      class_add(an, ds, si, an->groups[TBE_GROUP_KERNEL][slot].kclass, dur);
      if (t->nsteps) {
        s->kstep[s->nk++] = (int32_t)si; /* reused by per_step_names */
        if (si >= 0) {
          an->steps[si].kernel_ns = tbe__sat_add(an->steps[si].kernel_ns, dur);
          an->steps[si].kernel_count++;
        }
      }
      break;
    }
    case TBE_EV_MEMCPY: {
      const tbe_memcpy *m = tbe_trace_memcpy(t, e);
      unsigned k = m && m->copy_kind < TBE_NCOPY_KINDS ? m->copy_kind : 0;
      ds->memcpy_ns[k] = tbe__sat_add(ds->memcpy_ns[k], dur);
      ds->memcpy_count[k]++;
      if (m) ds->memcpy_bytes[k] = tbe__sat_addu(ds->memcpy_bytes[k], m->bytes);
      if (m && (m->src_kind == TBE_MEM_PAGEABLE || m->dst_kind == TBE_MEM_PAGEABLE)) {
        ds->pageable_ns = tbe__sat_add(ds->pageable_ns, dur);
        ds->pageable_count++;
      }
      class_add(an, ds, si, TBE_KCLASS_COPY, dur);
      if (si >= 0) an->steps[si].memcpy_ns = tbe__sat_add(an->steps[si].memcpy_ns, dur);
      break;
    }
    case TBE_EV_MEMSET:
      ds->memset_ns = tbe__sat_add(ds->memset_ns, dur);
      ds->memset_count++;
      class_add(an, ds, si, TBE_KCLASS_COPY, dur);
      if (si >= 0) an->steps[si].memset_ns = tbe__sat_add(an->steps[si].memset_ns, dur);
      break;
    case TBE_EV_SYNC:
      ds->sync_ns = tbe__sat_add(ds->sync_ns, dur);
      ds->sync_count++;
      an->sync_calls++;
      an->sync_call_ns = tbe__sat_add(an->sync_call_ns, dur);
      if (si >= 0) an->steps[si].sync_ns = tbe__sat_add(an->steps[si].sync_ns, dur);
      return 0;
    default: return 0;
  }
  if (si >= 0) step_gpu_end(an, si, e);
  if (e->link != TBE_NONE && e->link < t->nevents) {
    const tbe_event *api = &t->events[e->link];
    /* Correlation ids are per process: a link across processes, or one
     * that would start the GPU work before its API call, is not a launch
     * latency. */
    int64_t gpid = t->tracks[e->track].pid, apid = t->tracks[api->track].pid;
    int same = gpid < 0 || apid < 0 || gpid == apid;
    if ((api->kind == TBE_EV_RUNTIME || api->kind == TBE_EV_DRIVER) && same &&
        e->start_ns >= api->start_ns) {
      int64_t api_end = tbe__end_ns(api->start_ns, api->dur_ns);
      s->lat[s->nlat] = tbe__sat_sub(e->start_ns, api->start_ns);
      s->ovh[s->nlat] = api->dur_ns > 0 ? api->dur_ns : 0;
      s->qdl[s->nlat] = e->start_ns > api_end ? tbe__sat_sub(e->start_ns, api_end) : 0;
      s->lat_dev[s->nlat] = (uint32_t)d;
      if (s->lat_step) s->lat_step[s->nlat] = (uint32_t)(si + 1);
      s->nlat++;
    }
  }
  return 0;
}

static int host_track(tbe_analysis *an, scratch *s, const tbe_track *tr) {
  const tbe_trace *t = an->trace;
  /* The two tables nest independently; their stacks share one buffer by
   * being walked in two sub-passes. */
  tbe__vec_clear(&s->stack);
  int64_t busy = 0, cur_end = INT64_MIN;
  for (uint32_t j = 0; j < tr->count; j++) {
    const tbe_event *e = &t->events[tr->first + j];
    int64_t st = e->start_ns, en = tbe__end_ns(e->start_ns, e->dur_ns);
    /* Busy: CPU ops and API calls, but not the calls that wait for the GPU
     * (a GEMM loop that syncs each step is not kept busy by its host). */
    int feeds = 0;
    switch (e->kind) {
      case TBE_EV_CPU_OP: {
        feeds = 1;
        long slot = group_slot(an, s, TBE_GROUP_CPU_OP, e->name);
        if (slot < 0) return TBE_ENOMEM;
        account(&an->groups[TBE_GROUP_CPU_OP][slot], e->dur_ns);
        if (nest(an, s, TBE_GROUP_CPU_OP, (uint32_t)slot, st, en) != 0)
          return TBE_ENOMEM;
        break;
      }
      case TBE_EV_RUNTIME:
      case TBE_EV_DRIVER:
        an->api_calls++;
        if (name_flags(s, t, e->name) & NF_SYNC) {
          an->sync_calls++;
          an->sync_call_ns = tbe__sat_add(an->sync_call_ns, e->dur_ns);
        } else {
          feeds = 1;
        }
        break;
      case TBE_EV_SYNC:
        an->sync_calls++;
        an->sync_call_ns = tbe__sat_add(an->sync_call_ns, e->dur_ns);
        an->all.sync_ns = tbe__sat_add(an->all.sync_ns, e->dur_ns);
        an->all.sync_count++;
        break;
      case TBE_EV_OVERHEAD: an->overhead_ns = tbe__sat_add(an->overhead_ns, e->dur_ns); break;
      default: break;
    }
    if (feeds) {
      if (st < s->win_lo) st = s->win_lo; /* only the profiled window counts */
      if (en > s->win_hi) en = s->win_hi;
      if (en <= st) continue;
      if (st >= cur_end) {
        busy = tbe__sat_add(busy, tbe__sat_sub(en, st));
        cur_end = en;
      } else if (en > cur_end) {
        busy = tbe__sat_add(busy, tbe__sat_sub(en, cur_end));
        cur_end = en;
      }
    }
  }
  if (busy > an->host_busy_ns) {
    an->host_busy_ns = busy;
    an->pid = tr->pid;
  }
  /* Ranges: a second walk over the same track with its own stack. */
  tbe__vec_clear(&s->stack);
  for (uint32_t j = 0; j < tr->count; j++) {
    const tbe_event *e = &t->events[tr->first + j];
    if (e->kind != TBE_EV_NVTX_RANGE && e->kind != TBE_EV_USER_ANNOTATION) continue;
    if (name_flags(s, t, e->name) & NF_STEP) continue;
    long slot = range_slot(an, s, e->name);
    if (slot < 0) return TBE_ENOMEM;
    account(&an->groups[TBE_GROUP_RANGE][slot], e->dur_ns);
    if (e->flags & TBE_EVF_ASYNC) continue;
    if (nest(an, s, TBE_GROUP_RANGE, (uint32_t)slot, e->start_ns,
             tbe__end_ns(e->start_ns, e->dur_ns)) != 0)
      return TBE_ENOMEM;
  }
  return 0;
}

static int per_step_names(tbe_analysis *an, scratch *s) {
  const tbe_trace *t = an->trace;
  size_t ns = an->nsteps, cells = 0;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) cells += an->ngroups[g];
  if (ns == 0 || cells == 0 || cells > STEP_CELLS_MAX / ns) return 0;
  priv *p = an->priv_;
  p->step_pool = tbe__calloc(s->a, cells * ns, sizeof(int64_t));
  if (!p->step_pool) return TBE_ENOMEM;
  int64_t *q = p->step_pool;
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    for (size_t i = 0; i < an->ngroups[g]; i++, q += ns) an->groups[g][i].step_ns = q;
  if (tbe__ops_step_cells(s->ops, ns)) return TBE_ENOMEM;
  size_t nk = 0;
  for (size_t k = 0; k < t->nevents; k++) {
    const tbe_event *e = &t->events[k];
    int g;
    int64_t when = e->start_ns;
    if (e->kind == TBE_EV_KERNEL) {
      if (s->track_dev[e->track] < 0) continue;
      /* Kernels are met in the order gpu_event met them (event order). */
      long si = nk < s->nk ? s->kstep[nk++] : -1;
      uint32_t slot = s->slot[TBE_GROUP_KERNEL][e->name];
      if (si >= 0 && slot != UINT32_MAX) {
        int64_t *cell = &an->groups[TBE_GROUP_KERNEL][slot].step_ns[si];
        *cell = tbe__sat_add(*cell, e->dur_ns);
      }
      continue;
    } else if (e->kind == TBE_EV_CPU_OP) {
      if (s->track_dev[e->track] >= 0) continue;
      tbe__ops_step(s->ops, k, step_of(t, s, when), e->dur_ns);
      g = TBE_GROUP_CPU_OP;
    } else if (e->kind == TBE_EV_NVTX_RANGE || e->kind == TBE_EV_USER_ANNOTATION) {
      if (s->track_dev[e->track] >= 0) continue;
      if (name_flags(s, t, e->name) & NF_STEP) continue;
      g = TBE_GROUP_RANGE;
    } else {
      continue;
    }
    long si = step_of(t, s, when);
    uint32_t slot = s->slot[g][e->name];
    if (si >= 0 && slot != UINT32_MAX) {
      int64_t *cell = &an->groups[g][slot].step_ns[si];
      *cell = tbe__sat_add(*cell, e->dur_ns);
    }
  }
  return 0;
}

/* ---- the step hint ---- */

/* Whether a range name carries a per-call suffix (PyTorch's per-operator
 * NVTX ranges), cached in the name's flags. */
static int name_is_cut(scratch *s, const tbe_trace *t, tbe_str id) {
  uint8_t f = s->nflags[id];
  if (!(f & NF_CUT_DONE)) {
    const char *n = tbe_trace_str(t, id);
    f |= NF_CUT_DONE;
    if (n[range_label_len(n)] != '\0') f |= NF_CUT;
    s->nflags[id] = f;
  }
  return (f & NF_CUT) != 0;
}

/* Without steps: the range that looks like the iteration (the rule is at
 * tbe_analysis.step_hint).  One walk per host thread with a stack of the
 * open (nesting) ranges; per-name counts live in arrays indexed by string
 * id and are reset after each thread through the list of the names it
 * touched, so the whole search is linear in the range events. */
static int step_hint(tbe_analysis *an, scratch *s) {
  const tbe_trace *t = an->trace;
  if (t->nsteps || an->wall_ns <= 0) return 0;
  size_t nstr = tbe_trace_nstrings(t);
  uint32_t *cnt = tbe__calloc(s->a, nstr ? nstr : 1, sizeof *cnt);
  int64_t *tot = tbe__calloc(s->a, nstr ? nstr : 1, sizeof *tot);
  uint8_t *kind = tbe__calloc(s->a, nstr ? nstr : 1, 1);
  tbe__vec touched; /* tbe_str: the names one thread counted */
  tbe__vec_init(&touched, s->a, sizeof(tbe_str));
  int rc = cnt && tot && kind ? 0 : TBE_ENOMEM;
  tbe_str best = 0;
  for (size_t i = 0; !rc && i < t->ntracks; i++) {
    if (s->track_dev[i] >= 0) continue;
    const tbe_track *tr = &t->tracks[i];
    tbe__vec_clear(&s->stack);
    tbe__vec_clear(&touched);
    for (uint32_t j = 0; !rc && j < tr->count; j++) {
      const tbe_event *e = &t->events[tr->first + j];
      if (e->kind != TBE_EV_NVTX_RANGE && e->kind != TBE_EV_USER_ANNOTATION) continue;
      int64_t st = e->start_ns;
      stack_close(s, st);
      int top = s->stack.n == 0;
      if (!(e->flags & TBE_EVF_ASYNC)) {
        open_entry *o = TBE__VEC_PUSH(&s->stack, open_entry);
        if (!o) {
          rc = TBE_ENOMEM;
          break;
        }
        o->end = tbe__end_ns(st, e->dur_ns);
      }
      if (!top || e->name == 0 || name_is_cut(s, t, e->name)) continue;
      if (cnt[e->name] == 0) {
        tbe_str *tn = TBE__VEC_PUSH(&touched, tbe_str);
        if (!tn) {
          rc = TBE_ENOMEM;
          break;
        }
        *tn = e->name;
        kind[e->name] = e->kind;
      }
      cnt[e->name]++;
      tot[e->name] = tbe__sat_add(tot[e->name], e->dur_ns);
    }
    for (size_t k = 0; k < touched.n; k++) {
      tbe_str id = TBE__VEC_AT(&touched, tbe_str, k);
      int enough = cnt[id] >= 2 && (double)tot[id] * 100.0 >= (double)an->wall_ns *
                                                                   TBE_STEP_HINT_MIN_PCT;
      int better = !best || cnt[id] > an->step_hint_count ||
                   (cnt[id] == an->step_hint_count &&
                    (tot[id] > an->step_hint_ns ||
                     (tot[id] == an->step_hint_ns &&
                      strcmp(tbe_trace_str(t, id), tbe_trace_str(t, best)) < 0)));
      if (enough && better) {
        best = id;
        an->step_hint_count = cnt[id];
        an->step_hint_ns = tot[id];
        an->step_hint_kind = kind[id];
      }
      cnt[id] = 0;
      tot[id] = 0;
    }
  }
  if (!rc && best) an->step_hint = tbe_trace_str(t, best);
  tbe__free(s->a, cnt);
  tbe__free(s->a, tot);
  tbe__free(s->a, kind);
  tbe__vec_deinit(&touched);
  return rc;
}

/* ---- the launch sequence ---- */

/* One kernel launch: when it was launched (the launching call's start,
 * else its own), its start on the GPU, its event (the last tie-break) and
 * its entry of the kernel table. */
typedef struct launch_at {
  int64_t when, start;
  size_t ev;
  uint32_t slot;
} launch_at;

static int launch_before(const launch_at *a, const launch_at *b) {
  if (a->when != b->when) return a->when < b->when;
  if (a->start != b->start) return a->start < b->start;
  return a->ev < b->ev;
}

static int cmp_launch(const void *x, const void *y) {
  const launch_at *a = x, *b = y;
  return launch_before(a, b) ? -1 : launch_before(b, a) ? 1 : 0;
}

/* A max-heap of launches (the latest at the root), to keep the first
 * TBE_LAUNCH_SEQ_MAX of any number in one pass. */
static void seq_heap_down(launch_at *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && launch_before(&h[m], &h[l])) m = l;
    if (r < n && launch_before(&h[m], &h[r])) m = r;
    if (m == i) return;
    launch_at tmp = h[i];
    h[i] = h[m];
    h[m] = tmp;
    i = m;
  }
}

static void seq_heap_push(launch_at *h, size_t *n, size_t cap, const launch_at *x) {
  if (*n == cap) {
    if (!launch_before(x, &h[0])) return;
    h[0] = *x;
    seq_heap_down(h, *n, 0);
    return;
  }
  size_t i = (*n)++;
  h[i] = *x;
  while (i > 0 && launch_before(&h[(i - 1) / 2], &h[i])) {
    launch_at tmp = h[i];
    h[i] = h[(i - 1) / 2];
    h[(i - 1) / 2] = tmp;
    i = (i - 1) / 2;
  }
}

typedef struct dur_idx {
  int64_t dur;
  size_t idx;
} dur_idx;

static int cmp_dur_idx(const void *x, const void *y) {
  const dur_idx *a = x, *b = y;
  if (a->dur != b->dur) return a->dur < b->dur ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* The representative step: of the steps that launched kernels, the one of
 * median duration (the lower middle, then the earliest); -1 for none. */
static long sequence_step(tbe_analysis *an, scratch *s) {
  dur_idx *v = tbe__alloc(s->a, (an->nsteps ? an->nsteps : 1) * sizeof *v);
  if (!v) return -2;
  size_t n = 0;
  for (size_t i = 0; i < an->nsteps; i++)
    if (an->steps[i].kernel_count) v[n++] = (dur_idx){an->steps[i].dur_ns, i};
  qsort(v, n, sizeof *v, cmp_dur_idx);
  long rep = n ? (long)v[(n - 1) / 2].idx : -1;
  tbe__free(s->a, v);
  return rep;
}

/* tbe_analysis.launch_seq: the kernels of the representative step (else
 * of the window) in launch order, the first TBE_LAUNCH_SEQ_MAX of them.
 * The GPU tracks are walked in the main pass's order, so the kernels'
 * steps are s->kstep's. */
static int launch_sequence(tbe_analysis *an, scratch *s) {
  const tbe_trace *t = an->trace;
  if (!an->all.kernel_count) return 0;
  long rep = an->nsteps ? sequence_step(an, s) : -1;
  if (rep < -1) return TBE_ENOMEM;
  launch_at *h = tbe__alloc(s->a, TBE_LAUNCH_SEQ_MAX * sizeof *h);
  if (!h) return TBE_ENOMEM;
  size_t n = 0, nk = 0;
  for (size_t i = 0; i < t->ntracks; i++) {
    if (s->track_dev[i] < 0) continue;
    const tbe_track *tr = &t->tracks[i];
    for (uint32_t j = 0; j < tr->count; j++) {
      const tbe_event *e = &t->events[tr->first + j];
      if (e->kind != TBE_EV_KERNEL) continue;
      long si = t->nsteps && nk < s->nk ? s->kstep[nk] : -1;
      nk++;
      uint32_t slot = s->slot[TBE_GROUP_KERNEL][e->name];
      if (slot == UINT32_MAX || (rep >= 0 && si != rep)) continue;
      launch_at x = {e->start_ns, e->start_ns, tr->first + j, slot};
      if (e->link != TBE_NONE && e->link < t->nevents) x.when = t->events[e->link].start_ns;
      seq_heap_push(h, &n, TBE_LAUNCH_SEQ_MAX, &x);
    }
  }
  qsort(h, n, sizeof *h, cmp_launch);
  an->launch_seq = n ? tbe__alloc(s->a, n * sizeof *an->launch_seq) : NULL;
  int rc = n && !an->launch_seq ? TBE_ENOMEM : 0;
  for (size_t i = 0; i < n && !rc; i++)
    an->launch_seq[i] = an->groups[TBE_GROUP_KERNEL][h[i].slot].label;
  if (!rc) an->nlaunch_seq = n;
  tbe__free(s->a, h);
  return rc;
}

/* The distribution of the step durations. */
static int step_distribution(tbe_analysis *an, scratch *s) {
  int64_t *v = tbe__alloc(s->a, (an->nsteps ? an->nsteps : 1) * sizeof *v);
  if (!v) return TBE_ENOMEM;
  for (size_t i = 0; i < an->nsteps; i++) v[i] = an->steps[i].dur_ns;
  tbe__dist_sort(v, an->nsteps, &an->step_dist);
  tbe__free(s->a, v);
  return 0;
}

static void scratch_init(scratch *s, const tbe_allocator *a) {
  memset(s, 0, sizeof *s);
  s->a = a;
  for (int g = 0; g < TBE_GROUP__COUNT; g++) tbe__vec_init(&s->groups[g], a, sizeof(tbe_name_stats));
  tbe__vec_init(&s->stack, a, sizeof(open_entry));
  tbe__vec_init(&s->label_of, a, sizeof(uint32_t));
  tbe__vec_init(&s->label_entry, a, sizeof(uint32_t));
}

/* Frees the scratch memory (not s->groups: their arrays are the analysis's). */
static void scratch_free(scratch *s) {
  for (int g = 0; g < TBE_GROUP__COUNT; g++) tbe__free(s->a, s->slot[g]);
  tbe__free(s->a, s->nflags);
  tbe__free(s->a, s->track_dev);
  tbe__free(s->a, s->step_order);
  tbe__vec_deinit(&s->stack);
  tbe__free(s->a, s->lat);
  tbe__free(s->a, s->ovh);
  tbe__free(s->a, s->qdl);
  tbe__free(s->a, s->lat_dev);
  tbe__free(s->a, s->lat_step);
  tbe__free(s->a, s->seg);
  tbe__vec_deinit(&s->label_of);
  tbe__vec_deinit(&s->label_entry);
  tbe__free(s->a, s->kstep);
  tbe__ops_free(s->ops);
}

static int cmp_step_start(const void *x, const void *y, void *ctx) {
  const tbe_trace *t = ctx;
  int64_t a = t->steps[*(const size_t *)x].start_ns, b = t->steps[*(const size_t *)y].start_ns;
  return (a > b) - (a < b);
}

/* ---- the analysis, step by step ---- */

/* The dense slot arrays of the name tables and the per-string flags. */
static int name_slots(scratch *s, size_t nstr) {
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    s->slot[g] = tbe__alloc(s->a, (nstr ? nstr : 1) * sizeof(uint32_t));
    if (!s->slot[g]) return TBE_ENOMEM;
    memset(s->slot[g], 0xff, (nstr ? nstr : 1) * sizeof(uint32_t));
  }
  s->nflags = tbe__calloc(s->a, nstr ? nstr : 1, 1);
  if (!s->nflags) return TBE_ENOMEM;
  return 0;
}

/* The analysed window: the trace's, else the span of its events. */
static void window(tbe_analysis *an, scratch *s) {
  const tbe_trace *t = an->trace;
  an->start_ns = t->start_ns;
  an->wall_ns = t->stop_ns > t->start_ns ? tbe__sat_sub(t->stop_ns, t->start_ns) : 0;
  if (an->wall_ns == 0 && t->nevents) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < t->nevents; i++) {
      int64_t end = tbe__end_ns(t->events[i].start_ns, t->events[i].dur_ns);
      if (t->events[i].start_ns < lo) lo = t->events[i].start_ns;
      if (end > hi) hi = end;
    }
    an->start_ns = lo;
    an->wall_ns = tbe__sat_sub(hi, lo);
  }
  s->win_lo = an->start_ns;
  s->win_hi = tbe__sat_add(an->start_ns, an->wall_ns);
}

/* The steps as the trace gives them (their device windows come later),
 * in start order through s->step_order; step names flagged once
 * (name_flags reads the flag). */
static int steps_init(tbe_analysis *an, scratch *s, size_t nstr) {
  const tbe_trace *t = an->trace;
  for (size_t i = 0; i < t->nsteps; i++)
    if (t->steps[i].name && t->steps[i].name < nstr) s->nflags[t->steps[i].name] |= NF_STEPNAME;
  if (t->nsteps) {
    an->steps = tbe__calloc(s->a, t->nsteps, sizeof *an->steps);
    s->step_order = tbe__alloc(s->a, t->nsteps * sizeof(size_t));
    if (!an->steps || !s->step_order) return TBE_ENOMEM;
    an->nsteps = t->nsteps;
    for (size_t i = 0; i < t->nsteps; i++) {
      s->step_order[i] = i;
      an->steps[i].num = t->steps[i].num;
      an->steps[i].start_ns = t->steps[i].start_ns;
      an->steps[i].host_ns = tbe__sat_sub(t->steps[i].end_ns, t->steps[i].start_ns);
      an->steps[i].dur_ns = an->steps[i].host_ns;
      an->steps[i].gpu_end_ns = INT64_MIN;
      an->steps[i].launch_median_ns = -1;
      an->steps[i].launch_overhead_median_ns = -1;
      an->steps[i].queue_delay_median_ns = -1;
    }
    qsort_r(s->step_order, t->nsteps, sizeof(size_t), cmp_step_start, (void *)t);
  }
  return 0;
}

/* The launch medians (tbe_device_stats.launch_median_ns and the two
 * beside it) of the samples grouped by `key` (key[i] in [0, nkeys)): one
 * counting sort of the sample indexes, then a selection per group and
 * figure.  out(ctx, k, fig, median, n) receives each group's medians;
 * k == nkeys is every sample together (when `all`). */
typedef void (*median_out)(tbe_analysis *an, size_t k, int fig, int64_t med, size_t n);

static int grouped_medians(tbe_analysis *an, scratch *s, const uint32_t *key, size_t nkeys, int all,
                           median_out out) {
  if (!s->nlat) return 0;
  size_t *cnt = tbe__calloc(s->a, nkeys + 2, sizeof *cnt);
  size_t *idx = tbe__alloc(s->a, s->nlat * sizeof *idx);
  int64_t *by = tbe__alloc(s->a, s->nlat * sizeof *by);
  if (!cnt || !idx || !by) {
    tbe__free(s->a, cnt);
    tbe__free(s->a, idx);
    tbe__free(s->a, by);
    return TBE_ENOMEM;
  }
  /* Group g's samples end up at idx[cnt[g] .. cnt[g + 1]). */
  for (size_t i = 0; i < s->nlat; i++) cnt[key[i] + 2]++;
  for (size_t k = 0; k < nkeys; k++) cnt[k + 2] += cnt[k + 1];
  for (size_t i = 0; i < s->nlat; i++) idx[cnt[key[i] + 1]++] = i;
  const int64_t *fig[3] = {s->lat, s->ovh, s->qdl};
  for (int f = 0; f < 3; f++) {
    for (size_t k = 0; k < nkeys; k++) {
      size_t lo = cnt[k], hi = cnt[k + 1];
      if (hi == lo) continue;
      for (size_t i = lo; i < hi; i++) by[i - lo] = fig[f][idx[i]];
      out(an, k, f, tbe__median_i64(by, hi - lo), hi - lo);
    }
    if (all) {
      for (size_t i = 0; i < s->nlat; i++) by[i] = fig[f][i];
      out(an, nkeys, f, tbe__median_i64(by, s->nlat), s->nlat);
    }
  }
  tbe__free(s->a, cnt);
  tbe__free(s->a, idx);
  tbe__free(s->a, by);
  return 0;
}

static void device_median(tbe_analysis *an, size_t k, int fig, int64_t med, size_t n) {
  tbe_device_stats *d = k < an->ndevices ? &an->devices[k] : &an->all;
  if (fig == 0)
    d->launch_median_ns = med, d->launch_samples = n;
  else if (fig == 1)
    d->launch_overhead_median_ns = med;
  else
    d->queue_delay_median_ns = med;
}

/* Key k of a step's samples is step k - 1 (0: no step). */
static void step_median(tbe_analysis *an, size_t k, int fig, int64_t med, size_t n) {
  (void)n;
  if (k == 0) return;
  tbe_step_stats *st = &an->steps[k - 1];
  if (fig == 0)
    st->launch_median_ns = med;
  else if (fig == 1)
    st->launch_overhead_median_ns = med;
  else
    st->queue_delay_median_ns = med;
}

/* The launch medians of each device and of all devices. */
static int launch_medians(tbe_analysis *an, scratch *s) {
  return grouped_medians(an, s, s->lat_dev, an->ndevices, 1, device_median);
}

/* The launch medians of each step (its GPU work, by the step of the
 * launching call). */
static int step_launch_medians(tbe_analysis *an, scratch *s) {
  if (!an->nsteps || !s->nlat) return 0;
  return grouped_medians(an, s, s->lat_step, an->nsteps + 1, 0, step_median);
}

/* Devices: the window, idle time, and the totals over all devices. */
static void device_totals(tbe_analysis *an) {
  tbe_device_stats *all = &an->all;
  all->wall_ns = an->wall_ns;
  for (size_t d = 0; d < an->ndevices; d++) {
    tbe_device_stats *ds = &an->devices[d];
    ds->wall_ns = an->wall_ns;
    ds->idle_ns = ds->wall_ns > ds->busy_ns ? ds->wall_ns - ds->busy_ns : 0;
    all->kernel_ns = tbe__sat_add(all->kernel_ns, ds->kernel_ns);
    all->kernel_count += ds->kernel_count;
    all->short_kernels += ds->short_kernels;
    for (int k = 0; k < TBE_NCOPY_KINDS; k++) {
      all->memcpy_ns[k] = tbe__sat_add(all->memcpy_ns[k], ds->memcpy_ns[k]);
      all->memcpy_count[k] += ds->memcpy_count[k];
      all->memcpy_bytes[k] = tbe__sat_addu(all->memcpy_bytes[k], ds->memcpy_bytes[k]);
    }
    all->pageable_ns = tbe__sat_add(all->pageable_ns, ds->pageable_ns);
    all->pageable_count += ds->pageable_count;
    all->memset_ns = tbe__sat_add(all->memset_ns, ds->memset_ns);
    all->memset_count += ds->memset_count;
    all->sync_ns = tbe__sat_add(all->sync_ns, ds->sync_ns);
    all->sync_count += ds->sync_count;
    for (int k = 0; k < TBE_KCLASS__COUNT; k++) {
      all->class_ns[k] = tbe__sat_add(all->class_ns[k], ds->class_ns[k]);
      all->class_count[k] += ds->class_count[k];
    }
  }
  all->idle_ns = all->wall_ns > all->busy_ns ? all->wall_ns - all->busy_ns : 0;
}

/* The name tables' clean-up (self time, minimum), totals and labels. */
static void name_totals(tbe_analysis *an, scratch *s) {
  const tbe_trace *t = an->trace;
  /* Name tables. */
  for (int g = 0; g < TBE_GROUP__COUNT; g++) {
    an->group_total_ns[g] = 0;
    for (size_t i = 0; i < an->ngroups[g]; i++) {
      tbe_name_stats *e = &an->groups[g][i];
      if (e->self_ns < 0) e->self_ns = 0;
      if (e->min_ns == INT64_MAX) e->min_ns = 0;
      an->group_total_ns[g] = tbe__sat_add(an->group_total_ns[g], e->self_ns);
    }
  }
  priv *pv = an->priv_;
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    for (size_t i = 0; i < an->ngroups[g]; i++) {
      tbe_name_stats *e = &an->groups[g][i];
      uint32_t lab = g == TBE_GROUP_RANGE && i < s->label_of.n
                         ? TBE__VEC_AT(&s->label_of, uint32_t, i) : 0;
      e->label = lab ? tbe__intern_str(&pv->labels, lab - 1) : tbe_trace_str(t, e->name);
    }
}

/* Who the trace is and what its collection lost. */
static void identity(tbe_analysis *an) {
  const tbe_trace *t = an->trace;
  if (t->overhead_ns) an->overhead_ns = (int64_t)t->overhead_ns;
  an->dropped_records = t->dropped_records + t->dropped_out_of_range;
  an->out_of_range_records = t->dropped_out_of_range;
  an->ended_early = t->ended_early;
  an->host = tbe_trace_str(t, t->host);
  an->world_size = t->world_size;
  an->rank = t->rank >= 0 && (t->world_size > 1 || t->rank > 0) ? t->rank : -1;
  if (an->pid < 0 && t->nprocesses) an->pid = t->processes[0].pid;
}

/* The whole analysis, as an outline of the steps above and the passes
 * of the sections before. */
static int run(tbe_analysis *an, scratch *s) {
  const tbe_trace *t = an->trace;
  size_t nstr = tbe_trace_nstrings(t);
  int rc = name_slots(s, nstr);
  if (rc) return rc;
  window(an, s);
  if ((rc = steps_init(an, s, nstr))) return rc;

  long ngpu = find_devices(an, s);
  if (ngpu < 0) return TBE_ENOMEM;
  size_t nl = ngpu ? (size_t)ngpu : 1;
  s->lat = tbe__alloc(s->a, nl * sizeof(int64_t));
  s->ovh = tbe__alloc(s->a, nl * sizeof(int64_t));
  s->qdl = tbe__alloc(s->a, nl * sizeof(int64_t));
  s->lat_dev = tbe__alloc(s->a, nl * sizeof(uint32_t));
  if (!s->lat || !s->ovh || !s->qdl || !s->lat_dev) return TBE_ENOMEM;
  if (t->nsteps) {
    s->kstep = tbe__alloc(s->a, nl * sizeof(int32_t));
    s->lat_step = tbe__alloc(s->a, nl * sizeof(uint32_t));
    if (!s->kstep || !s->lat_step) return TBE_ENOMEM;
  }

  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    int32_t d = s->track_dev[i];
    if (d >= 0) {
      for (uint32_t j = 0; j < tr->count; j++)
        if ((rc = gpu_event(an, s, &t->events[tr->first + j], d))) return rc;
    } else if ((rc = host_track(an, s, tr))) {
      return rc;
    }
  }

  if ((rc = busy_union(an, s, (size_t)ngpu))) return rc;
  if ((rc = launch_medians(an, s))) return rc;
  if ((rc = step_launch_medians(an, s))) return rc;
  device_totals(an);
  if ((rc = tbe__ops_create(&s->ops, an, s->slot[TBE_GROUP_CPU_OP], s->slot[TBE_GROUP_KERNEL],
                            s->track_dev)))
    return rc;

  /* Steps: their windows on the device, and GPU busy inside each. */
  if (an->nsteps) device_steps(an, s);
  for (size_t i = 0; i < an->nsteps; i++)
    an->steps[i].gpu_busy_ns =
        busy_in(s, an->steps[i].start_ns, tbe__sat_add(an->steps[i].start_ns, an->steps[i].dur_ns));

  name_totals(an, s);
  rc = per_step_names(an, s);
  if (!rc) rc = step_hint(an, s);
  if (!rc) rc = step_distribution(an, s);
  if (!rc) rc = launch_sequence(an, s);
  if (!rc) rc = tbe__analysis_metrics(an, s->slot[TBE_GROUP_KERNEL], s->track_dev);
  if (!rc) rc = tbe__analysis_memory(an, s->step_order);
  if (rc) return rc;
  for (int g = 0; g < TBE_GROUP__COUNT; g++)
    tbe_analysis_sort(an, (tbe_group_kind)g, TBE_SORT_TOTAL);
  identity(an);
  return tbe__analysis_advise(an);
}

int tbe_analysis_create(tbe_analysis **out, const tbe_trace *t, const tbe_allocator *a) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  if (!t) return TBE_EINVAL;
  tbe_analysis *an = NULL;
  int rc = tbe__analysis_blank(&an, a);
  if (rc) return rc;
  an->trace = t;
  scratch s;
  scratch_init(&s, &an->alloc_);
  rc = run(an, &s);
  scratch_free(&s);
  if (rc) {
    tbe_analysis_free(an);
    return rc;
  }
  *out = an;
  return 0;
}
