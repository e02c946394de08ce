/* model.c: the trace model of include/tbexport/trace.h: its storage.
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
 * This file is the bottom of the model: the private state (allocator,
 * sticky error, "finished", interner, maps and capacities) lives here and
 * nowhere else.  Finishing (finish.c) and its passes (ops.c, comm.c) add
 * and read through the public calls and the few of model_int.h; nothing
 * here calls them, and anything added clears "finished". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/intern.h"
#include "common/map.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "trace/model/model_int.h"

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

/* ---- what finishing asks of the storage (model_int.h) ---- */

int tbe__trace_fail(tbe_trace *t, int err) { return fail(t, err); }

void tbe__trace_set_finished(tbe_trace *t) { t->priv->finished = 1; }

uint32_t tbe__trace_args_room(tbe_trace *t, size_t n) {
  void *pp = t->args;
  if (t->nargs + n >= UINT32_MAX ||
      tbe__grow(&t->priv->a, &pp, &t->priv->cap_args, t->nargs + n, sizeof *t->args))
    return TBE_NONE;
  t->args = pp;
  uint32_t first = (uint32_t)t->nargs;
  t->nargs += n;
  return first;
}

int tbe__trace_steps_room(tbe_trace *t, size_t n) {
  void *pp = t->steps;
  if (tbe__grow(&t->priv->a, &pp, &t->priv->cap_steps, n, sizeof *t->steps)) return TBE_ENOMEM;
  t->steps = pp;
  return 0;
}

int tbe__trace_device_find(tbe_trace *t, int32_t id, uint32_t *out) {
  tbe__trace_priv *p = t->priv;
  int rc = id_map_sync(t, ARR_DEVICES, &p->devmap, &p->devmap_n, t->ndevices);
  if (rc) return fail(t, rc);
  const uint32_t *v = tbe__map_get(&p->devmap, (uint64_t)(uint32_t)id);
  *out = v ? *v : TBE_NONE;
  return 0;
}

void tbe__trace_kernel_metrics_renamed(tbe_trace *t) {
  t->priv->kmmap_n = SIZE_MAX; /* the map is rebuilt at its next use */
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
