/* model.c: the trace model of include/tbexport/trace.h.
 *
 * Storage: every array in tbe_trace grows by doubling through the trace's
 * allocator (no malloc per event).  Strings are the trace's interner
 * (common/intern.h): ids in order of first appearance, copies in an arena
 * of fixed blocks, so a pointer returned by tbe_trace_str stays valid for
 * the life of the trace.  Tracks are found by (type, pid, tid, device)
 * through a tbe__index over t->tracks (common/map.h), so a track costs
 * one keyed hash and one comparison however many there are; processes and
 * devices through tbe__maps by pid and id (ids come from the input: a file
 * may name 80,000 of them).
 * Times are kept in the range of common/checked.h: tbe_trace_add_event and
 * _add_step saturate what lies outside and flag the event TBE_EVF_CLAMPED.
 *
 * Finishing: events are ordered by (track, start, longer first) with an
 * index sort and an in-place cycle permutation (no second copy of the event
 * array); links between host API calls and GPU work are resolved through a
 * tbe__map from correlation id to the first API call that carries it;
 * steps are derived from "ProfilerStep#N"-style events when none were
 * given; kernel names are demangled once per
 * distinct name, the mangled text kept as a "mangled name" arg
 * (demangle_kernels); NCCL kernels' launches get their nccl:<op>
 * annotations, the trace its backend or its note of no GPU communication
 * (comm.h), the few events added merged into the order in place
 * (merge_tail) and the links made again; a kernel's blocks and warps per SM and estimated
 * occupancy are computed from its GPU's limits where the source gave none
 * (fill_occupancy, occupancy.h).
 *
 * After finishing, tbe_trace_steps_from_range may replace the steps by the
 * occurrences of a range the user names (one thread's outermost ones); it
 * touches only the steps array, so the trace stays finished. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/intern.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "trace/model/comm.h"
#include "trace/model/model_int.h"
#include "trace/model/occupancy.h"
#include "trace/model/ops.h"

typedef struct tbe__trace_priv {
  tbe_allocator a;
  int err;
  int finished;
  tbe__intern strs; /* the strings: tbe_str is the interner's id */
  tbe__index tracks; /* t->tracks by (type, pid, tid, device) */
  /* devices by id, processes by pid -> index (the ids are the input's:
   * 80,000 distinct ones cost a linear scan each before; the map's keyed
   * hash keeps chosen ids from colliding) */
  tbe__map devmap, pidmap;
  /* the warnings' string ids (each once: tbe_trace_warn), and the kernel
   * figures by (name, device) -> index (the last of a pair): an importer
   * adds one per input item, so a scan each was quadratic */
  tbe__map warnmap, kmmap;
  size_t devmap_n, pidmap_n, warnmap_n, kmmap_n; /* entries of the arrays the maps cover */
  /* capacities of the public arrays */
  size_t cap_events, cap_kernels, cap_memcpys, cap_memsets, cap_syncs, cap_nvtx, cap_counters,
      cap_memory, cap_args, cap_tracks, cap_processes, cap_devices, cap_steps, cap_flows,
      cap_warnings, cap_kernel_metrics, cap_metric_values;
} tbe__trace_priv;

static int fail(tbe_trace *t, int err) {
  if (!t->priv->err) t->priv->err = err;
  return err;
}

int tbe_trace_create(tbe_trace **out, const tbe_allocator *a) {
  if (!out) return TBE_EINVAL;
  *out = NULL;
  tbe_allocator al;
  tbe__allocator_init(&al, a);
  tbe_trace *t = tbe__calloc(&al, 1, sizeof *t);
  if (!t) return TBE_ENOMEM;
  tbe__trace_priv *p = tbe__calloc(&al, 1, sizeof *p);
  if (!p) {
    tbe__free(&al, t);
    return TBE_ENOMEM;
  }
  p->a = al;
  tbe__intern_init(&p->strs, &p->a, TBE__SEED_PROCESS);
  tbe__index_init(&p->tracks, &p->a, TBE__SEED_PROCESS);
  tbe__map_init(&p->devmap, &p->a, TBE__SEED_PROCESS);
  tbe__map_init(&p->pidmap, &p->a, TBE__SEED_PROCESS);
  tbe__map_init(&p->warnmap, &p->a, TBE__SEED_PROCESS);
  tbe__map_init(&p->kmmap, &p->a, TBE__SEED_PROCESS);
  t->priv = p;
  t->rank = -1;
  /* id 0 is the empty string */
  tbe_str zero;
  if (tbe_trace_intern(t, "", 0, &zero) != 0) {
    tbe_trace_free(t);
    return TBE_ENOMEM;
  }
  *out = t;
  return 0;
}

void tbe_trace_free(tbe_trace *t) {
  if (!t) return;
  tbe__trace_priv *p = t->priv;
  tbe_allocator a = p->a;
  tbe__free(&a, t->events);
  tbe__free(&a, t->kernels);
  tbe__free(&a, t->memcpys);
  tbe__free(&a, t->memsets);
  tbe__free(&a, t->syncs);
  tbe__free(&a, t->nvtx);
  tbe__free(&a, t->counters);
  tbe__free(&a, t->memory);
  tbe__free(&a, t->args);
  tbe__free(&a, t->tracks);
  tbe__free(&a, t->processes);
  tbe__free(&a, t->devices);
  tbe__free(&a, t->steps);
  tbe__free(&a, t->flows);
  tbe__free(&a, t->warnings);
  tbe__free(&a, t->kernel_metrics);
  tbe__free(&a, t->metric_values);
  tbe__intern_deinit(&p->strs);
  tbe__index_deinit(&p->tracks);
  tbe__map_deinit(&p->devmap);
  tbe__map_deinit(&p->pidmap);
  tbe__map_deinit(&p->warnmap);
  tbe__map_deinit(&p->kmmap);
  tbe__free(&a, p);
  tbe__free(&a, t);
}

int tbe__trace_finished(const tbe_trace *t) { return t && t->priv->finished; }

const tbe_allocator *tbe__trace_allocator(const tbe_trace *t) { return &t->priv->a; }

int tbe_trace_error(const tbe_trace *t) { return t ? t->priv->err : TBE_EINVAL; }

tbe_str tbe_trace_find_str(const tbe_trace *t, const char *s, size_t len) {
  uint32_t id = tbe__intern_find(&t->priv->strs, s, len);
  return id == TBE__NOIDX ? TBE_NONE : id;
}

int tbe_trace_intern(tbe_trace *t, const char *s, size_t len, tbe_str *out) {
  if (!t || (!s && len) || !out) return TBE_EINVAL;
  uint32_t id;
  int rc = tbe__intern_add(&t->priv->strs, s, len, &id, NULL);
  if (rc) return fail(t, rc);
  *out = id;
  return 0;
}

tbe_str tbe_trace_str_id(tbe_trace *t, const char *s) {
  tbe_str id = 0;
  if (!s) return 0;
  if (tbe_trace_intern(t, s, strlen(s), &id) != 0) return 0;
  return id;
}

const char *tbe_trace_str(const tbe_trace *t, tbe_str s) {
  if (!t || s >= tbe__intern_count(&t->priv->strs)) return "";
  return tbe__intern_str(&t->priv->strs, s);
}

size_t tbe_trace_strlen(const tbe_trace *t, tbe_str s) {
  if (!t || s >= tbe__intern_count(&t->priv->strs)) return 0;
  return tbe__intern_len(&t->priv->strs, s);
}

size_t tbe_trace_nstrings(const tbe_trace *t) { return t ? tbe__intern_count(&t->priv->strs) : 0; }

/* Grows public array `arr` (with count `n` and capacity `cap`) by one. */
#define GROW1(t, arr, n, cap)                                                        \
  do {                                                                               \
    void *_pp = (t)->arr;                                                            \
    if (tbe__grow(&(t)->priv->a, &_pp, &(t)->priv->cap, (t)->n + 1, sizeof *(t)->arr)) \
      return fail((t), TBE_ENOMEM);                                                  \
    (t)->arr = _pp;                                                                  \
  } while (0)

/* The track's key, packed without padding, and its hash. */
typedef struct track_key {
  int64_t pid, tid;
  int32_t device;
  uint32_t type;
} track_key;

static uint64_t track_hash(const tbe__index *x, uint32_t type, int64_t pid, int64_t tid,
                           int32_t device) {
  track_key k = {pid, tid, device, type};
  return tbe__hash_bytes(&k, sizeof k, x->seed);
}

int tbe_trace_track(tbe_trace *t, tbe_track_type type, int64_t pid, int64_t tid, int32_t device,
                    uint32_t *out) {
  if (!t || !out) return TBE_EINVAL;
  tbe__trace_priv *p = t->priv;
  uint64_t h = track_hash(&p->tracks, (uint32_t)type, pid, tid, device);
  tbe__iprobe probe;
  for (uint32_t i = tbe__index_first(&p->tracks, h, &probe); i != TBE__NOIDX;
       i = tbe__index_next(&p->tracks, &probe)) {
    const tbe_track *tr = &t->tracks[i];
    if (tr->type == (uint32_t)type && tr->pid == pid && tr->tid == tid && tr->device == device) {
      *out = i;
      return 0;
    }
  }
  if (t->ntracks >= UINT32_MAX - 1) return fail(t, TBE_ETOOBIG);
  GROW1(t, tracks, ntracks, cap_tracks);
  int rc = tbe__index_add(&p->tracks, h, (uint32_t)t->ntracks);
  if (rc) return fail(t, rc);
  tbe_track *tr = &t->tracks[t->ntracks];
  memset(tr, 0, sizeof *tr);
  tr->type = (uint32_t)type;
  tr->pid = pid;
  tr->tid = tid;
  tr->device = device;
  *out = (uint32_t)t->ntracks++;
  p->finished = 0;
  return 0;
}

/* ---- devices, processes, warnings, kernel figures: maps over the public
 * arrays ----
 *
 * Users may append to t->devices / t->processes / t->warnings /
 * t->kernel_metrics themselves (the arrays are public); a map that covers
 * another count of entries than the array holds is rebuilt before use, so
 * a lookup sees every entry appended. */

enum { ARR_PROCESSES, ARR_DEVICES, ARR_WARNINGS, ARR_KERNEL_METRICS };

/* The key of a kernel figures' entry. */
static uint64_t km_key(tbe_str name, int32_t device) {
  return (uint64_t)name << 32 | (uint32_t)device;
}

/* The key of entry i of array `arr` (ARR_*). */
static uint64_t id_key(const tbe_trace *t, int arr, size_t i) {
  switch (arr) {
    case ARR_DEVICES: return (uint64_t)(uint32_t)t->devices[i].id;
    case ARR_PROCESSES: return (uint64_t)t->processes[i].pid;
    case ARR_WARNINGS: return t->warnings[i];
    default: return km_key(t->kernel_metrics[i].name, t->kernel_metrics[i].device);
  }
}

/* Brings map `m` (covering *covered entries) up to the array's n entries:
 * rebuilt, the entry of a key a scan would find winning (the first; the
 * last for kernel figures), when the array changed size behind the
 * model's back.  0 or an error. */
static int id_map_sync(tbe_trace *t, int arr, tbe__map *m, size_t *covered, size_t n) {
  if (*covered == n) return 0;
  tbe__map_clear(m);
  for (size_t i = 0; i < n; i++) {
    int added;
    uint32_t *v = tbe__map_put(m, id_key(t, arr, i), &added);
    if (!v) return tbe__map_error(m);
    if (added || arr == ARR_KERNEL_METRICS) *v = (uint32_t)i;
  }
  *covered = n;
  return 0;
}

int tbe_trace_process(tbe_trace *t, int64_t pid, uint32_t *out) {
  if (!t || !out) return TBE_EINVAL;
  tbe__trace_priv *p = t->priv;
  int rc = id_map_sync(t, ARR_PROCESSES, &p->pidmap, &p->pidmap_n, t->nprocesses);
  if (rc) return fail(t, rc);
  const uint32_t *v = tbe__map_get(&p->pidmap, (uint64_t)pid);
  if (v) {
    *out = *v;
    return 0;
  }
  GROW1(t, processes, nprocesses, cap_processes);
  if ((rc = tbe__map_set(&p->pidmap, (uint64_t)pid, (uint32_t)t->nprocesses))) return fail(t, rc);
  memset(&t->processes[t->nprocesses], 0, sizeof t->processes[0]);
  t->processes[t->nprocesses].pid = pid;
  p->pidmap_n = t->nprocesses + 1;
  *out = (uint32_t)t->nprocesses++;
  return 0;
}

int tbe_trace_device(tbe_trace *t, int32_t id, uint32_t *out) {
  if (!t || !out) return TBE_EINVAL;
  tbe__trace_priv *p = t->priv;
  int rc = id_map_sync(t, ARR_DEVICES, &p->devmap, &p->devmap_n, t->ndevices);
  if (rc) return fail(t, rc);
  const uint32_t *v = tbe__map_get(&p->devmap, (uint64_t)(uint32_t)id);
  if (v) {
    *out = *v;
    return 0;
  }
  GROW1(t, devices, ndevices, cap_devices);
  if ((rc = tbe__map_set(&p->devmap, (uint64_t)(uint32_t)id, (uint32_t)t->ndevices)))
    return fail(t, rc);
  memset(&t->devices[t->ndevices], 0, sizeof t->devices[0]);
  t->devices[t->ndevices].id = id;
  p->devmap_n = t->ndevices + 1;
  *out = (uint32_t)t->ndevices++;
  return 0;
}

#define ADD_DETAIL(t, arr, n, cap, type, src, idx) \
  do {                                              \
    GROW1(t, arr, n, cap);                          \
    (t)->arr[(t)->n] = *(const type *)(src);        \
    (idx) = (uint32_t)(t)->n++;                     \
  } while (0)

int tbe_trace_add_event(tbe_trace *t, const tbe_event *ev, const void *detail,
                        const tbe_arg *args, size_t nargs, uint32_t *index) {
  if (!t || !ev) return TBE_EINVAL;
  if (t->priv->err) return t->priv->err;
  if (ev->kind >= TBE_EV__COUNT || ev->track >= t->ntracks || nargs > UINT16_MAX)
    return TBE_EINVAL;
  if (t->nevents >= UINT32_MAX - 1) return fail(t, TBE_ETOOBIG);
  uint32_t d = TBE_NONE;
  if (detail) {
    switch (ev->kind) {
      case TBE_EV_KERNEL: ADD_DETAIL(t, kernels, nkernels, cap_kernels, tbe_kernel, detail, d); break;
      case TBE_EV_MEMCPY: ADD_DETAIL(t, memcpys, nmemcpys, cap_memcpys, tbe_memcpy, detail, d); break;
      case TBE_EV_MEMSET: ADD_DETAIL(t, memsets, nmemsets, cap_memsets, tbe_memset, detail, d); break;
      case TBE_EV_SYNC: ADD_DETAIL(t, syncs, nsyncs, cap_syncs, tbe_sync, detail, d); break;
      case TBE_EV_NVTX_RANGE:
      case TBE_EV_NVTX_MARK: ADD_DETAIL(t, nvtx, nnvtx, cap_nvtx, tbe_nvtx, detail, d); break;
      case TBE_EV_COUNTER: ADD_DETAIL(t, counters, ncounters, cap_counters, tbe_counter, detail, d); break;
      case TBE_EV_MEMORY: ADD_DETAIL(t, memory, nmemory, cap_memory, tbe_memory, detail, d); break;
      default: return TBE_EINVAL;
    }
  }
  uint32_t first = (uint32_t)t->nargs;
  if (nargs) {
    void *pp = t->args;
    if (tbe__grow(&t->priv->a, &pp, &t->priv->cap_args, t->nargs + nargs, sizeof *t->args))
      return fail(t, TBE_ENOMEM);
    t->args = pp;
    memcpy(t->args + t->nargs, args, nargs * sizeof *args);
    t->nargs += nargs;
  }
  GROW1(t, events, nevents, cap_events);
  tbe_event *e = &t->events[t->nevents];
  *e = *ev;
  e->detail = d;
  e->args = first;
  e->nargs = (uint16_t)nargs;
  e->link = TBE_NONE;
  e->reserved = 0;
  if (e->dur_ns < 0) {
    e->dur_ns = 0;
    e->flags |= TBE_EVF_CLAMPED;
  }
  /* The time range (common/checked.h): the model saturates, the importers
   * refused such times before; after this start + dur never overflows. */
  if (!tbe__time_ok(e->start_ns)) {
    e->start_ns = tbe__time_clamp(e->start_ns);
    e->flags |= TBE_EVF_CLAMPED;
  }
  if (e->dur_ns > TBE__TIME_MAX - e->start_ns) {
    e->dur_ns = TBE__TIME_MAX - e->start_ns;
    e->flags |= TBE_EVF_CLAMPED;
  }
  if (index) *index = (uint32_t)t->nevents;
  t->nevents++;
  t->priv->finished = 0;
  return 0;
}

int tbe_trace_add_step(tbe_trace *t, int64_t num, int64_t start_ns, int64_t end_ns, tbe_str name) {
  if (!t) return TBE_EINVAL;
  GROW1(t, steps, nsteps, cap_steps);
  tbe_step *s = &t->steps[t->nsteps++];
  s->num = num;
  s->start_ns = tbe__time_clamp(start_ns); /* the model saturates (common/checked.h) */
  end_ns = tbe__time_clamp(end_ns);
  s->end_ns = end_ns < s->start_ns ? s->start_ns : end_ns;
  s->name = name;
  s->track = TBE_NONE;
  return 0;
}

int tbe_trace_add_flow(tbe_trace *t, const tbe_flow *flow) {
  if (!t || !flow || flow->src_track >= t->ntracks || flow->dst_track >= t->ntracks)
    return TBE_EINVAL;
  GROW1(t, flows, nflows, cap_flows);
  t->flows[t->nflows++] = *flow;
  return 0;
}

int tbe_trace_warn(tbe_trace *t, const char *fmt, ...) {
  if (!t || !fmt) return TBE_EINVAL;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  tbe_str id;
  int rc = tbe_trace_intern(t, buf, strlen(buf), &id);
  if (rc) return rc;
  tbe__trace_priv *p = t->priv;
  if ((rc = id_map_sync(t, ARR_WARNINGS, &p->warnmap, &p->warnmap_n, t->nwarnings)))
    return fail(t, rc);
  if (tbe__map_get(&p->warnmap, id)) return 0; /* said already */
  GROW1(t, warnings, nwarnings, cap_warnings);
  if ((rc = tbe__map_set(&p->warnmap, id, (uint32_t)t->nwarnings))) return fail(t, rc);
  t->warnings[t->nwarnings++] = id;
  p->warnmap_n = t->nwarnings;
  return 0;
}

/* ---- finishing ---- */

/* An operator or annotation encloses a call of the same span (comm.h's
 * nccl:<op> has exactly its call's): it sorts first. */
static int is_api(uint8_t k) { return k == TBE_EV_RUNTIME || k == TBE_EV_DRIVER; }

static int cmp_order(const tbe_event *a, const tbe_event *b) {
  if (a->track != b->track) return a->track < b->track ? -1 : 1;
  if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
  if (a->dur_ns != b->dur_ns) return a->dur_ns > b->dur_ns ? -1 : 1; /* enclosing first */
  int ca = is_api(a->kind), cb = is_api(b->kind);
  if (ca != cb && (a->kind == TBE_EV_CPU_OP || a->kind == TBE_EV_USER_ANNOTATION ||
                   b->kind == TBE_EV_CPU_OP || b->kind == TBE_EV_USER_ANNOTATION))
    return ca - cb;
  return 0;
}

/* Sorts the index range [lo, hi) of `idx` by event order: insertion sort
 * for nearly sorted runs (the common case), merge sort otherwise. */
static void merge_sort(uint32_t *idx, uint32_t *tmp, size_t n, const tbe_event *ev) {
  if (n < 24) {
    for (size_t i = 1; i < n; i++) {
      uint32_t x = idx[i];
      size_t j = i;
      while (j > 0 && cmp_order(&ev[idx[j - 1]], &ev[x]) > 0) {
        idx[j] = idx[j - 1];
        j--;
      }
      idx[j] = x;
    }
    return;
  }
  size_t h = n / 2;
  merge_sort(idx, tmp, h, ev);
  merge_sort(idx + h, tmp, n - h, ev);
  if (cmp_order(&ev[idx[h - 1]], &ev[idx[h]]) <= 0) return; /* already in order */
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp_order(&ev[idx[j]], &ev[idx[i]]) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, n * sizeof *idx);
}

/* A sorted prefix [0, p) and a short tail (what tbe__trace_comm leaves: a
 * few operators appended to a finished order): the tail sorted on its own
 * (stable, by index), then merged in from the back, in place, the tail
 * held in a buffer: n - p small, every other event moved once and in
 * order, where the general sort below moves each through a permutation.
 * Equal events keep their order (the prefix's before the tail's), as the
 * general sort does.  0 or TBE_ENOMEM. */
static int merge_tail(tbe_trace *t, size_t p) {
  size_t n = t->nevents, k = n - p;
  tbe_allocator *a = &t->priv->a;
  uint32_t *idx = tbe__alloc(a, 2 * k * sizeof *idx);
  tbe_event *tail = tbe__alloc(a, k * sizeof *tail);
  if (!idx || !tail) {
    tbe__free(a, idx);
    tbe__free(a, tail);
    return fail(t, TBE_ENOMEM);
  }
  for (size_t i = 0; i < k; i++) idx[i] = (uint32_t)(p + i);
  merge_sort(idx, idx + k, k, t->events);
  for (size_t i = 0; i < k; i++) tail[i] = t->events[idx[i]];
  size_t dst = n, i = p, j = k;
  while (j > 0) {
    if (i > 0 && cmp_order(&t->events[i - 1], &tail[j - 1]) > 0)
      t->events[--dst] = t->events[--i];
    else
      t->events[--dst] = tail[--j];
  }
  tbe__free(a, idx);
  tbe__free(a, tail);
  return 0;
}

static int sort_events(tbe_trace *t) {
  size_t n = t->nevents;
  for (size_t k = 0; k < t->ntracks; k++) t->tracks[k].first = t->tracks[k].count = 0;
  if (n == 0) return 0;
  size_t p = 1; /* the sorted prefix */
  while (p < n && cmp_order(&t->events[p - 1], &t->events[p]) <= 0) p++;
  int sorted = p == n;
  if (!sorted && n - p <= n / 16) {
    int rc = merge_tail(t, p);
    if (rc) return rc;
    sorted = 1;
  }
  if (!sorted) {
    tbe_allocator *a = &t->priv->a;
    uint32_t *idx = tbe__alloc(a, n * sizeof *idx);
    uint32_t *tmp = tbe__alloc(a, n * sizeof *tmp);
    if (!idx || !tmp) {
      tbe__free(a, idx);
      tbe__free(a, tmp);
      return fail(t, TBE_ENOMEM);
    }
    /* Bucket by track first (counting sort), then sort each bucket. */
    uint32_t *cnt = tbe__calloc(a, t->ntracks + 1, sizeof *cnt);
    if (!cnt) {
      tbe__free(a, idx);
      tbe__free(a, tmp);
      return fail(t, TBE_ENOMEM);
    }
    for (size_t i = 0; i < n; i++) cnt[t->events[i].track + 1]++;
    for (size_t k = 0; k < t->ntracks; k++) cnt[k + 1] += cnt[k];
    for (size_t i = 0; i < n; i++) idx[cnt[t->events[i].track]++] = (uint32_t)i;
    size_t lo = 0;
    for (size_t k = 0; k < t->ntracks; k++) {
      size_t hi = cnt[k];
      merge_sort(idx + lo, tmp, hi - lo, t->events);
      lo = hi;
    }
    tbe__free(a, cnt);
    /* Apply the permutation in place: position i receives event idx[i].
     * Follow each cycle once; idx entries are marked done by setting them
     * to their own position. */
    for (size_t i = 0; i < n; i++) {
      if (idx[i] == i) continue;
      tbe_event saved = t->events[i];
      size_t j = i;
      for (;;) {
        size_t from = idx[j];
        idx[j] = (uint32_t)j;
        if (from == i) {
          t->events[j] = saved;
          break;
        }
        t->events[j] = t->events[from];
        j = from;
      }
    }
    tbe__free(a, idx);
    tbe__free(a, tmp);
  }
  for (size_t i = 0; i < n; i++) {
    tbe_track *tr = &t->tracks[t->events[i].track];
    if (tr->count == 0) tr->first = (uint32_t)i;
    tr->count++;
  }
  return 0;
}

static int link_events(tbe_trace *t) {
  size_t n = t->nevents;
  size_t napi = 0;
  for (size_t i = 0; i < n; i++) {
    t->events[i].link = TBE_NONE;
    if (is_api(t->events[i].kind) && t->events[i].correlation) napi++;
  }
  if (napi == 0) return 0;
  /* correlation id -> the first API call (in event order) that carries it */
  tbe__map calls;
  tbe__map_init(&calls, &t->priv->a, TBE__SEED_PROCESS);
  int rc = tbe__map_reserve(&calls, napi);
  for (size_t i = 0; i < n && !rc; i++) {
    const tbe_event *e = &t->events[i];
    if (!is_api(e->kind) || !e->correlation) continue;
    int added;
    uint32_t *v = tbe__map_put(&calls, e->correlation, &added);
    if (!v) rc = tbe__map_error(&calls);
    else if (added) *v = (uint32_t)i; /* the first API call with this id wins */
  }
  for (size_t i = 0; i < n && !rc; i++) {
    tbe_event *e = &t->events[i];
    if (!e->correlation || is_api(e->kind) || !tbe_event_kind_is_gpu(e->kind)) continue;
    const uint32_t *v = tbe__map_get(&calls, e->correlation);
    if (!v) continue;
    tbe_event *api = &t->events[*v];
    e->link = *v;
    /* An API call links to the first GPU activity it launched. */
    if (api->link == TBE_NONE || t->events[api->link].start_ns > e->start_ns)
      api->link = (uint32_t)i;
  }
  tbe__map_deinit(&calls);
  return rc ? fail(t, rc) : 0;
}

/* Parses step names: "ProfilerStep#12", "step 12", "Step#12", "train_step_12",
 * "TraceContext 12".  Returns 1 and the number on a match. */
static int parse_step_name(const char *s, int64_t *num) {
  static const char *const prefixes[] = {"ProfilerStep#", "ProfilerStep ", "Step#", "step#", "Step ",
                                         "step ", "step_", "train_step_", "train_step ",
                                         "TraceContext "};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    size_t pl = strlen(prefixes[i]);
    if (strncmp(s, prefixes[i], pl) != 0) continue;
    const char *d = s + pl;
    if (*d < '0' || *d > '9') return 0;
    int64_t v = 0;
    while (*d >= '0' && *d <= '9') {
      if (v > (INT64_MAX - 9) / 10) return 0;
      v = v * 10 + (*d++ - '0');
    }
    if (*d) return 0;
    *num = v;
    return 1;
  }
  return 0;
}

static int cmp_step(const void *a, const void *b) {
  const tbe_step *x = a, *y = b;
  if (x->num != y->num) return x->num < y->num ? -1 : 1;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int derive_steps(tbe_trace *t) {
  if (t->nsteps == 0) {
    /* Host-side step markers only: CPU ops, user annotations, NVTX ranges
     * and generic events.  GPU projections of the same range are skipped so
     * a step is counted once: the first event of a number wins, found in a
     * hash set of the numbers taken (a file may hold 80,000 of them). */
    tbe__map seen;
    tbe__map_init(&seen, &t->priv->a, TBE__SEED_PROCESS);
    int rc = 0;
    for (size_t i = 0; i < t->nevents && !rc; i++) {
      const tbe_event *e = &t->events[i];
      if (e->kind != TBE_EV_CPU_OP && e->kind != TBE_EV_USER_ANNOTATION &&
          e->kind != TBE_EV_NVTX_RANGE && e->kind != TBE_EV_GENERIC)
        continue;
      int64_t num;
      if (!parse_step_name(tbe_trace_str(t, e->name), &num)) continue;
      int added;
      if (!tbe__map_put(&seen, (uint64_t)num, &added)) {
        rc = fail(t, tbe__map_error(&seen));
        break;
      }
      if (!added) continue; /* a duplicate */
      rc = tbe_trace_add_step(t, num, e->start_ns, tbe__end_ns(e->start_ns, e->dur_ns), e->name);
      if (!rc) t->steps[t->nsteps - 1].track = e->track;
    }
    tbe__map_deinit(&seen);
    if (rc) return rc;
  }
  if (t->nsteps > 1) qsort(t->steps, t->nsteps, sizeof *t->steps, cmp_step);
  return 0;
}

/* ---- kernel names ---- */

/* What a kernel name becomes, per string id, during one pass. */
typedef struct kname {
  tbe_str dem;  /* 0: not looked at yet; TBE_NONE: stays as it is; else the demangled name */
  uint32_t arg; /* the shared "mangled name" arg in t->args, TBE_NONE until made */
} kname;

static int maybe_mangled(const char *s) { return s[0] == '_' || s[0] == '.' || s[0] == '$'; }

static int has_arg(const tbe_trace *t, const tbe_event *e, tbe_str key) {
  for (uint32_t i = 0; i < e->nargs; i++)
    if (t->args[e->args + i].key == key) return 1;
  return 0;
}

/* The interned demangled form of `name`, TBE_NONE when libiberty does not
 * demangle it. */
static tbe_str demangled_id(tbe_trace *t, tbe_str name, int *rc) {
  const char *s = tbe_trace_str(t, name);
  char stackbuf[4096];
  int n = tbe_demangle(s, stackbuf, sizeof stackbuf);
  if (n < 0) return TBE_NONE;
  char *b = stackbuf;
  if ((size_t)n >= sizeof stackbuf) {
    b = tbe__alloc(&t->priv->a, (size_t)n + 1);
    if (!b) {
      *rc = fail(t, TBE_ENOMEM);
      return TBE_NONE;
    }
    tbe_demangle(s, b, (size_t)n + 1);
  }
  tbe_str id = TBE_NONE;
  *rc = tbe_trace_intern(t, b, (size_t)n, &id);
  if (b != stackbuf) tbe__free(&t->priv->a, b);
  return *rc ? TBE_NONE : id;
}

/* Appends `n` args; returns the index of the first, or TBE_NONE. */
static uint32_t args_room(tbe_trace *t, size_t n) {
  void *pp = t->args;
  if (t->nargs + n >= UINT32_MAX ||
      tbe__grow(&t->priv->a, &pp, &t->priv->cap_args, t->nargs + n, sizeof *t->args))
    return TBE_NONE;
  t->args = pp;
  uint32_t first = (uint32_t)t->nargs;
  t->nargs += n;
  return first;
}

/* Kernel names as people read them, whatever the source: every kernel
 * whose name libiberty demangles (what c++filt prints; tbe_demangle) is
 * renamed to the demangled form and keeps the mangled text in a string arg
 * "mangled name".  Each distinct name is demangled once (a map by string
 * id), so the cost is the number of distinct names, not of events.  Events
 * without other args share one arg entry per name (args are read-only
 * ranges); an event with args gets a copy of them plus the new one at the
 * end of t->args.  An event that already carries "mangled name" is left
 * alone, so the pass is idempotent, also on a trace read back from our own
 * outputs; a name libiberty does not demangle stays as it is. */
static int demangle_kernels(tbe_trace *t) {
  const tbe__trace_priv *p = t->priv;
  size_t nstr = tbe__intern_count(&p->strs), i;
  /* Every name tbe_demangle demangles starts with '_' (or with c++filt's
   * '.' or '$' before it): most traces stop here. */
  for (i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind == TBE_EV_KERNEL && e->name < nstr &&
        maybe_mangled(tbe__intern_str(&p->strs, e->name)))
      break;
  }
  if (i == t->nevents) return 0;
  kname *map = tbe__calloc(&p->a, nstr, sizeof *map);
  if (!map) return fail(t, TBE_ENOMEM);
  tbe_str key = TBE_NONE;
  int rc = 0;
  for (; i < t->nevents && !rc; i++) {
    tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL || e->name >= nstr ||
        !maybe_mangled(tbe__intern_str(&p->strs, e->name)))
      continue;
    kname *k = &map[e->name];
    if (k->dem == 0) {
      k->dem = demangled_id(t, e->name, &rc);
      k->arg = TBE_NONE;
      if (rc) break;
    }
    if (k->dem == TBE_NONE) continue;
    if (key == TBE_NONE && (rc = tbe_trace_intern(t, "mangled name", 12, &key))) break;
    if (has_arg(t, e, key) || e->nargs == UINT16_MAX) continue;
    tbe_arg a = {.key = key, .type = TBE_ARG_STR, .v.s = e->name};
    if (e->nargs == 0) {
      if (k->arg == TBE_NONE) {
        if ((k->arg = args_room(t, 1)) == TBE_NONE) {
          rc = fail(t, TBE_ENOMEM);
          break;
        }
        t->args[k->arg] = a;
      }
      e->args = k->arg;
    } else {
      uint32_t first = args_room(t, (size_t)e->nargs + 1);
      if (first == TBE_NONE) {
        rc = fail(t, TBE_ENOMEM);
        break;
      }
      memcpy(t->args + first, t->args + e->args, e->nargs * sizeof *t->args);
      t->args[first + e->nargs] = a;
      e->args = first;
    }
    e->nargs++;
    e->name = k->dem;
  }
  tbe__free(&p->a, map);
  return rc;
}

/* The range profiler's kernel names, as the kernels' (demangle_kernels):
 * so that the per-kernel figures meet the kernel rows by name. */
static int demangle_kernel_metrics(tbe_trace *t) {
  int rc = 0;
  for (size_t i = 0; i < t->nkernel_metrics && !rc; i++) {
    tbe_kernel_metrics *k = &t->kernel_metrics[i];
    if (!maybe_mangled(tbe_trace_str(t, k->name))) continue;
    tbe_str d = demangled_id(t, k->name, &rc);
    if (!rc && d != TBE_NONE && d != k->name) {
      k->name = d;
      t->priv->kmmap_n = SIZE_MAX; /* renamed: the map is rebuilt at its next use */
    }
  }
  return rc;
}

/* Kineto's figures of each kernel whose source did not give them, from
 * its GPU's limits (occupancy.h): blocks and warps per SM and the
 * estimated achieved occupancy, so that every output and the analysis
 * read the same ones. */
static int fill_occupancy(tbe_trace *t) {
  tbe__trace_priv *p = t->priv;
  if (!t->ndevices || !t->nkernels) return 0;
  int rc = id_map_sync(t, ARR_DEVICES, &p->devmap, &p->devmap_n, t->ndevices);
  if (rc) return fail(t, rc);
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL || e->detail >= t->nkernels) continue;
    const tbe_track *tr = &t->tracks[e->track];
    if (tr->type != TBE_TRACK_STREAM) continue;
    const uint32_t *d = tbe__map_get(&p->devmap, (uint64_t)(uint32_t)tr->device);
    if (d) tbe__occ_fill(&t->devices[*d], &t->kernels[e->detail], TBE__OCC_LAUNCHED);
  }
  return 0;
}

/* The nccl:<op> operators around NCCL launches, the backend and the note
 * of a run without GPU communication (comm.h); operators added: the order
 * and the links again. */
static int comm_ops(tbe_trace *t) {
  size_t added = 0;
  int rc = tbe__trace_comm(t, &added);
  if (rc) return fail(t, rc);
  if (added && !(rc = sort_events(t))) rc = link_events(t);
  return rc;
}

int tbe_trace_finish(tbe_trace *t) {
  if (!t) return TBE_EINVAL;
  if (t->priv->err) return t->priv->err;
  if (t->priv->finished) return 0;
  int rc = sort_events(t);
  if (!rc) rc = link_events(t);
  if (!rc && (rc = tbe__trace_link_ops(t))) fail(t, rc);
  if (!rc) rc = derive_steps(t);
  if (!rc) rc = demangle_kernels(t);
  if (!rc) rc = comm_ops(t);
  if (!rc) rc = demangle_kernel_metrics(t);
  if (!rc) rc = fill_occupancy(t);
  if (rc) return rc;
  if (t->nevents && (t->start_ns == 0 || t->stop_ns == 0)) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < t->nevents; i++) {
      const tbe_event *e = &t->events[i];
      int64_t end = tbe__end_ns(e->start_ns, e->dur_ns); /* events are public: saturate */
      if (e->start_ns < lo) lo = e->start_ns;
      if (end > hi) hi = end;
    }
    if (t->start_ns == 0) t->start_ns = lo;
    if (t->stop_ns == 0) t->stop_ns = hi;
  }
  t->priv->finished = 1;
  return 0;
}

/* ---- steps from a named range ---- */

/* Step markers chosen by the user (--steps nvtx:NAME) rather than found by
 * name pattern (derive_steps): a training loop's "train_step" NVTX ranges
 * carry no number.  Works on the finished model, whose per-track order
 * (start, longer first) puts an enclosing range before what it encloses, so
 * one pass per track with the end of the current outermost occurrence tells
 * outermost occurrences from nested ones. */

/* Host ranges: NVTX ranges and user annotations, not on a GPU stream. */
static int is_host_range(const tbe_trace *t, const tbe_event *e) {
  return (e->kind == TBE_EV_NVTX_RANGE || e->kind == TBE_EV_USER_ANNOTATION) &&
         t->tracks[e->track].type != TBE_TRACK_STREAM;
}

static int range_matches(const tbe_trace *t, const tbe_event *e, tbe_str name, tbe_str domain) {
  if (e->name != name || !is_host_range(t, e)) return 0;
  if (domain == TBE_NONE) return 1;
  const tbe_nvtx *nv = tbe_trace_nvtx(t, e);
  return nv && nv->domain == domain;
}

/* The step number an occurrence's NVTX payload gives, if it is an integer
 * that fits. */
static int payload_num(const tbe_trace *t, const tbe_event *e, int64_t *num) {
  const tbe_nvtx *nv = tbe_trace_nvtx(t, e);
  if (!nv) return 0;
  if (nv->payload_type == TBE_PAYLOAD_INT64) {
    *num = nv->payload.i;
    return 1;
  }
  if (nv->payload_type == TBE_PAYLOAD_UINT64 && nv->payload.u <= (uint64_t)INT64_MAX) {
    *num = (int64_t)nv->payload.u;
    return 1;
  }
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int tbe_trace_steps_from_range(tbe_trace *t, const char *name, const char *domain) {
  if (!t || !name || !*name) return TBE_EINVAL;
  int rc = tbe_trace_finish(t);
  if (rc) return rc;
  tbe_str nid = tbe_trace_find_str(t, name, strlen(name));
  tbe_str did = domain ? tbe_trace_find_str(t, domain, strlen(domain)) : TBE_NONE;
  if (nid == TBE_NONE || (domain && did == TBE_NONE)) return 0;

  /* The thread with the most outermost occurrences. */
  size_t best = SIZE_MAX, best_n = 0;
  int64_t best_first = 0;
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->type == TBE_TRACK_STREAM) continue;
    size_t n = 0;
    int64_t open_end = INT64_MIN, first = 0;
    for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
      const tbe_event *e = &t->events[i];
      if (!range_matches(t, e, nid, did) || e->start_ns < open_end) continue;
      if (n++ == 0) first = e->start_ns;
      open_end = e->start_ns + e->dur_ns;
    }
    if (n > best_n || (n && n == best_n && first < best_first)) {
      best = k;
      best_n = n;
      best_first = first;
    }
  }
  if (best_n == 0) return 0;
  if (best_n > INT32_MAX) return TBE_ETOOBIG;

  /* Numbers: the payloads when every occurrence has a distinct one. */
  tbe__trace_priv *p = t->priv;
  int64_t *nums = tbe__alloc(&p->a, best_n * 2 * sizeof *nums);
  if (!nums) return TBE_ENOMEM;
  void *steps = t->steps;
  if (tbe__grow(&p->a, &steps, &p->cap_steps, best_n, sizeof *t->steps)) {
    tbe__free(&p->a, nums);
    return TBE_ENOMEM;
  }
  t->steps = steps;
  const tbe_track *tr = &t->tracks[best];
  size_t n = 0;
  int by_payload = 1;
  int64_t open_end = INT64_MIN;
  for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
    const tbe_event *e = &t->events[i];
    if (!range_matches(t, e, nid, did) || e->start_ns < open_end) continue;
    open_end = e->start_ns + e->dur_ns;
    if (by_payload && !payload_num(t, e, &nums[n])) by_payload = 0;
    n++;
  }
  if (by_payload) {
    memcpy(nums + n, nums, n * sizeof *nums);
    qsort(nums + n, n, sizeof *nums, cmp_i64);
    for (size_t k = 1; k < n && by_payload; k++)
      if (nums[n + k] == nums[n + k - 1]) by_payload = 0;
  }
  /* Nothing can fail from here: the steps are replaced whole. */
  n = 0;
  open_end = INT64_MIN;
  for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
    const tbe_event *e = &t->events[i];
    if (!range_matches(t, e, nid, did) || e->start_ns < open_end) continue;
    open_end = e->start_ns + e->dur_ns;
    tbe_step *st = &t->steps[n];
    st->num = by_payload ? nums[n] : (int64_t)n;
    st->start_ns = e->start_ns;
    st->end_ns = e->start_ns + e->dur_ns;
    st->name = e->name;
    st->track = (uint32_t)best;
    n++;
  }
  t->nsteps = n;
  tbe__free(&p->a, nums);
  return (int)n;
}

int tbe_trace_top_ranges(const tbe_trace *t, tbe_name_count *out, size_t n) {
  if (!t || (!out && n)) return TBE_EINVAL;
  if (!t->priv->finished) return TBE_ESTATE;
  const tbe_allocator *a = &t->priv->a;
  size_t nstr = tbe__intern_count(&t->priv->strs);
  uint64_t *cnt = tbe__calloc(a, nstr ? nstr : 1, sizeof *cnt);
  if (!cnt) return TBE_ENOMEM;
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->type == TBE_TRACK_STREAM) continue;
    int64_t open_end = INT64_MIN;
    for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
      const tbe_event *e = &t->events[i];
      if (!is_host_range(t, e) || e->start_ns < open_end) continue;
      open_end = e->start_ns + e->dur_ns;
      if (e->name < nstr) cnt[e->name]++;
    }
  }
  /* n is small (a hint of a few names): n passes. */
  size_t got = 0;
  for (; got < n && got < INT32_MAX; got++) {
    size_t pick = SIZE_MAX;
    for (size_t id = 0; id < nstr; id++)
      if (cnt[id] && (pick == SIZE_MAX || cnt[id] > cnt[pick])) pick = id;
    if (pick == SIZE_MAX) break;
    out[got].name = (tbe_str)pick;
    out[got].count = cnt[pick];
    cnt[pick] = 0;
  }
  tbe__free(a, cnt);
  return (int)got;
}

/* ---- names and detail accessors ---- */

const char *tbe_event_kind_name(tbe_event_kind k) {
  static const char *const names[TBE_EV__COUNT] = {
      "kernel",   "memcpy",     "memset",    "runtime",  "driver",   "sync",
      "nvtx",     "nvtx_mark",  "cpu_op",    "user_annotation", "gpu_user_annotation",
      "python",   "overhead",   "counter",   "memory",   "instant",  "generic"};
  return (unsigned)k < TBE_EV__COUNT ? names[k] : "unknown";
}

const char *tbe_mem_kind_name(tbe_mem_kind k) {
  static const char *const names[] = {"unknown", "pageable",      "pinned",        "device",
                                      "array",   "managed",       "device_static", "managed_static"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

const char *tbe_copy_kind_name(tbe_copy_kind k) {
  static const char *const names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                      "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

const char *tbe_sync_kind_name(tbe_sync_kind k) {
  static const char *const names[] = {"Unknown", "Event Sync", "Stream Wait Event", "Stream Sync",
                                      "Context Sync"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

int tbe_event_kind_is_gpu(tbe_event_kind k) {
  return k == TBE_EV_KERNEL || k == TBE_EV_MEMCPY || k == TBE_EV_MEMSET ||
         k == TBE_EV_GPU_ANNOTATION;
}

#define DETAIL_ACCESSOR(fn, type, arr, n, k1, k2)                          \
  const type *fn(const tbe_trace *t, const tbe_event *e) {                 \
    if (!t || !e || (e->kind != (k1) && e->kind != (k2)) || e->detail >= t->n) \
      return NULL;                                                         \
    return &t->arr[e->detail];                                             \
  }

DETAIL_ACCESSOR(tbe_trace_kernel, tbe_kernel, kernels, nkernels, TBE_EV_KERNEL, TBE_EV_KERNEL)
DETAIL_ACCESSOR(tbe_trace_memcpy, tbe_memcpy, memcpys, nmemcpys, TBE_EV_MEMCPY, TBE_EV_MEMCPY)
DETAIL_ACCESSOR(tbe_trace_memset, tbe_memset, memsets, nmemsets, TBE_EV_MEMSET, TBE_EV_MEMSET)
DETAIL_ACCESSOR(tbe_trace_sync, tbe_sync, syncs, nsyncs, TBE_EV_SYNC, TBE_EV_SYNC)
DETAIL_ACCESSOR(tbe_trace_nvtx, tbe_nvtx, nvtx, nnvtx, TBE_EV_NVTX_RANGE, TBE_EV_NVTX_MARK)
DETAIL_ACCESSOR(tbe_trace_memory, tbe_memory, memory, nmemory, TBE_EV_MEMORY, TBE_EV_MEMORY)
DETAIL_ACCESSOR(tbe_trace_counter, tbe_counter, counters, ncounters, TBE_EV_COUNTER, TBE_EV_COUNTER)

/* ---- hardware metrics ---- */

/* Metric tracks' tids: below any thread id or stream id an input gives
 * (the Chrome importer's counter tids start at -2^32). */
#define METRIC_TID_BASE (-((int64_t)3 << 40))

int tbe_trace_metric_track(tbe_trace *t, int64_t pid, int32_t device, tbe_str metric,
                           uint32_t *out) {
  if (!t || !out || device < 0 || metric == 0) return TBE_EINVAL;
  int rc = tbe_trace_track(t, TBE_TRACK_OTHER, pid, METRIC_TID_BASE - (int64_t)metric, device, out);
  if (!rc && !t->tracks[*out].name) t->tracks[*out].name = metric;
  return rc;
}

int tbe_track_is_metric(const tbe_track *tr) {
  return tr && tr->type == TBE_TRACK_OTHER && tr->device >= 0;
}

int tbe_trace_add_kernel_metrics(tbe_trace *t, tbe_str name, int32_t device, uint64_t launches,
                                 const tbe_metric_value *v, size_t n) {
  if (!t || (n && !v)) return TBE_EINVAL;
  if (t->priv->err) return t->priv->err;
  if (n > UINT32_MAX / 2 || t->nmetric_values + n >= UINT32_MAX) return fail(t, TBE_ETOOBIG);
  tbe__trace_priv *p = t->priv;
  int rc = id_map_sync(t, ARR_KERNEL_METRICS, &p->kmmap, &p->kmmap_n, t->nkernel_metrics);
  if (rc) return fail(t, rc);
  const uint32_t *had = tbe__map_get(&p->kmmap, km_key(name, device));
  size_t at = had ? *had : t->nkernel_metrics;
  if (at == t->nkernel_metrics) {
    if (at >= UINT32_MAX) return fail(t, TBE_ETOOBIG);
    GROW1(t, kernel_metrics, nkernel_metrics, cap_kernel_metrics);
  }
  void *pp = t->metric_values;
  if (tbe__grow(&t->priv->a, &pp, &t->priv->cap_metric_values, t->nmetric_values + n,
                sizeof *t->metric_values))
    return fail(t, TBE_ENOMEM);
  t->metric_values = pp;
  /* a metric given twice keeps the last: copy, dropping earlier duplicates */
  uint32_t first = (uint32_t)t->nmetric_values, count = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = i + 1;
    while (j < n && v[j].metric != v[i].metric) j++;
    if (j < n) continue;
    t->metric_values[first + count] = v[i];
    t->metric_values[first + count].reserved = 0;
    count++;
  }
  t->nmetric_values += count;
  tbe_kernel_metrics *k = &t->kernel_metrics[at];
  k->name = name;
  k->device = device;
  k->launches = launches;
  k->first = first;
  k->count = count;
  if (at == t->nkernel_metrics) {
    if ((rc = tbe__map_set(&p->kmmap, km_key(name, device), (uint32_t)at))) return fail(t, rc);
    t->nkernel_metrics++;
    p->kmmap_n = t->nkernel_metrics;
  }
  t->priv->finished = 0;
  return 0;
}

int tbe_kernel_metrics_get(const tbe_trace *t, const tbe_kernel_metrics *km, const char *metric,
                           double *v) {
  if (!t || !km || !metric) return TBE_EINVAL;
  for (uint32_t i = 0; i < km->count; i++) {
    const tbe_metric_value *x = &t->metric_values[km->first + i];
    if (strcmp(tbe_trace_str(t, x->metric), metric) == 0) {
      if (v) *v = x->value;
      return 0;
    }
  }
  return 1;
}
