/* finish.c: tbe_trace_finish, the passes that turn what the sources added
 * into the model every output reads, and what reads the finished model
 * (tbe_trace_steps_from_range, tbe_trace_top_ranges).
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
 * (fill_occupancy, occupancy.h); the memory events make one curve per
 * process and device, their totals filled (tbe__trace_memory_curve,
 * memory.c), and the curve's totals become counter tracks per GPU
 * (memory_counters.h).
 *
 * Layering: this file is the top of the model.  It calls the passes of
 * ops.c and comm.c, and they, like this file, reach the trace's storage
 * only through model.c (the public tbe_trace_* calls and model_int.h);
 * nothing below calls back up here, so the passes see a trace, not the
 * order they run in.
 *
 * After finishing, tbe_trace_steps_from_range may replace the steps by the
 * occurrences of a range the user names (one thread's outermost ones); it
 * touches only the steps array, so the trace stays finished. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "trace/model/comm.h"
#include "trace/model/memory_counters.h"
#include "trace/model/model_int.h"
#include "trace/model/occupancy.h"
#include "trace/model/ops.h"

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
  const tbe_allocator *a = tbe__trace_allocator(t);
  uint32_t *idx = tbe__alloc(a, 2 * k * sizeof *idx);
  tbe_event *tail = tbe__alloc(a, k * sizeof *tail);
  if (!idx || !tail) {
    tbe__free(a, idx);
    tbe__free(a, tail);
    return tbe__trace_fail(t, TBE_ENOMEM);
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
    const tbe_allocator *a = tbe__trace_allocator(t);
    uint32_t *idx = tbe__alloc(a, n * sizeof *idx);
    uint32_t *tmp = tbe__alloc(a, n * sizeof *tmp);
    if (!idx || !tmp) {
      tbe__free(a, idx);
      tbe__free(a, tmp);
      return tbe__trace_fail(t, TBE_ENOMEM);
    }
    /* Bucket by track first (counting sort), then sort each bucket. */
    uint32_t *cnt = tbe__calloc(a, t->ntracks + 1, sizeof *cnt);
    if (!cnt) {
      tbe__free(a, idx);
      tbe__free(a, tmp);
      return tbe__trace_fail(t, TBE_ENOMEM);
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
  tbe__map_init(&calls, tbe__trace_allocator(t), TBE__SEED_PROCESS);
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
  return rc ? tbe__trace_fail(t, rc) : 0;
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
    tbe__map_init(&seen, tbe__trace_allocator(t), TBE__SEED_PROCESS);
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
        rc = tbe__trace_fail(t, tbe__map_error(&seen));
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
    b = tbe__alloc(tbe__trace_allocator(t), (size_t)n + 1);
    if (!b) {
      *rc = tbe__trace_fail(t, TBE_ENOMEM);
      return TBE_NONE;
    }
    tbe_demangle(s, b, (size_t)n + 1);
  }
  tbe_str id = TBE_NONE;
  *rc = tbe_trace_intern(t, b, (size_t)n, &id);
  if (b != stackbuf) tbe__free(tbe__trace_allocator(t), b);
  return *rc ? TBE_NONE : id;
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
  const tbe_allocator *al = tbe__trace_allocator(t);
  size_t nstr = tbe_trace_nstrings(t), i;
  /* Every name tbe_demangle demangles starts with '_' (or with c++filt's
   * '.' or '$' before it): most traces stop here. */
  for (i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind == TBE_EV_KERNEL && e->name < nstr && maybe_mangled(tbe_trace_str(t, e->name)))
      break;
  }
  if (i == t->nevents) return 0;
  kname *map = tbe__calloc(al, nstr, sizeof *map);
  if (!map) return tbe__trace_fail(t, TBE_ENOMEM);
  tbe_str key = TBE_NONE;
  int rc = 0;
  for (; i < t->nevents && !rc; i++) {
    tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL || e->name >= nstr || !maybe_mangled(tbe_trace_str(t, e->name)))
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
        if ((k->arg = tbe__trace_args_room(t, 1)) == TBE_NONE) {
          rc = tbe__trace_fail(t, TBE_ENOMEM);
          break;
        }
        t->args[k->arg] = a;
      }
      e->args = k->arg;
    } else {
      uint32_t first = tbe__trace_args_room(t, (size_t)e->nargs + 1);
      if (first == TBE_NONE) {
        rc = tbe__trace_fail(t, TBE_ENOMEM);
        break;
      }
      memcpy(t->args + first, t->args + e->args, e->nargs * sizeof *t->args);
      t->args[first + e->nargs] = a;
      e->args = first;
    }
    e->nargs++;
    e->name = k->dem;
  }
  tbe__free(al, map);
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
      tbe__trace_kernel_metrics_renamed(t);
    }
  }
  return rc;
}

/* Kineto's figures of each kernel whose source did not give them, from
 * its GPU's limits (occupancy.h): blocks and warps per SM and the
 * estimated achieved occupancy, so that every output and the analysis
 * read the same ones. */
static int fill_occupancy(tbe_trace *t) {
  if (!t->ndevices || !t->nkernels) return 0;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->kind != TBE_EV_KERNEL || e->detail >= t->nkernels) continue;
    const tbe_track *tr = &t->tracks[e->track];
    if (tr->type != TBE_TRACK_STREAM) continue;
    uint32_t d;
    int rc = tbe__trace_device_find(t, tr->device, &d);
    if (rc) return rc;
    if (d != TBE_NONE) tbe__occ_fill(&t->devices[d], &t->kernels[e->detail], TBE__OCC_LAUNCHED);
  }
  return 0;
}

/* The nccl:<op> operators around NCCL launches, the backend and the note
 * of a run without GPU communication (comm.h); operators added: the order
 * and the links again. */
static int comm_ops(tbe_trace *t) {
  size_t added = 0;
  int rc = tbe__trace_comm(t, &added);
  if (rc) return tbe__trace_fail(t, rc);
  if (added && !(rc = sort_events(t))) rc = link_events(t);
  return rc;
}

/* The memory curve's counter tracks per GPU (memory_counters.h); counters
 * added: the order and the links again. */
static int memory_counters(tbe_trace *t) {
  size_t added = 0;
  int rc = tbe__trace_memory_counters(t, &added);
  if (rc) return tbe__trace_fail(t, rc);
  if (added && !(rc = sort_events(t))) rc = link_events(t);
  return rc;
}

int tbe_trace_finish(tbe_trace *t) {
  if (!t) return TBE_EINVAL;
  int rc = tbe_trace_error(t);
  if (rc) return rc;
  if (tbe__trace_finished(t)) return 0;
  rc = sort_events(t);
  if (!rc) rc = link_events(t);
  if (!rc && (rc = tbe__trace_link_ops(t))) tbe__trace_fail(t, rc);
  if (!rc) rc = derive_steps(t);
  if (!rc) rc = demangle_kernels(t);
  if (!rc) rc = comm_ops(t);
  if (!rc) rc = demangle_kernel_metrics(t);
  if (!rc) rc = fill_occupancy(t);
  if (!rc) rc = tbe__trace_memory_curve(t);
  if (!rc) rc = memory_counters(t); /* (reads the totals the curve filled) */
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
  tbe__trace_set_finished(t);
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
  const tbe_allocator *a = tbe__trace_allocator(t);
  int64_t *nums = tbe__alloc(a, best_n * 2 * sizeof *nums);
  if (!nums) return TBE_ENOMEM;
  if (tbe__trace_steps_room(t, best_n)) {
    tbe__free(a, nums);
    return TBE_ENOMEM;
  }
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
  tbe__free(a, nums);
  return (int)n;
}

int tbe_trace_top_ranges(const tbe_trace *t, tbe_name_count *out, size_t n) {
  if (!t || (!out && n)) return TBE_EINVAL;
  if (!tbe__trace_finished(t)) return TBE_ESTATE;
  const tbe_allocator *a = tbe__trace_allocator(t);
  size_t nstr = tbe_trace_nstrings(t);
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
