/* spool_records.c: the record passes of spool -> trace (spool_build.h):
 * one per kind of record the scan holds, each adding what lies in the
 * kept windows to the trace and counting what it leaves out (spool.c's
 * essay says what is kept and why).  GPU work is kept by the call that
 * launched it; a kernel the range profiler replayed, which CUPTI gives
 * without times, is placed at the end of its launch with the profiler's
 * mean duration for its name.  Nothing here reads the session's options
 * or fills its report: the passes count into b->tally (passed down). */
#include "import/spool_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/model/ops.h"

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

static int cmp_range(const void *x, const void *y) {
  const range *a = x, *b = y;
  if (a->track != b->track) return a->track < b->track ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1; /* longer first */
  return 0;
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

static int bad_span(build *b, int64_t start, int64_t end) {
  if (start <= 0 || end < start) {
    b->t->dropped_out_of_range++;
    b->tally.r->dropped_out_of_range++;
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
  b->tally.bad_devices++;
  return 1;
}

static int stream_track(build *b, int64_t pid, uint32_t stream, uint32_t device, uint32_t *tr) {
  return tbe_trace_track(b->t, TBE_TRACK_STREAM, pid, stream == UINT32_MAX ? -1 : (int64_t)stream,
                         (int32_t)device, tr);
}

static uint16_t ctx16(uint32_t c) { return c > UINT16_MAX ? UINT16_MAX : (uint16_t)c; }

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


/* NVTX: markers paired into ranges (a START with its END; a mark alone),
 * their data attached; ranges that do not nest on their thread are
 * asynchronous. */
int tbe__spool_nvtx_ranges(build *b, tbe__vec *rs) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  sp_tally *info = &b->tally;
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
      info->r->dropped_out_of_range++;
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
        info->r->dropped_out_of_range++;
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
int tbe__spool_nvtx_events(build *b, const tbe__vec *rs) {
  scan *s = b->s;
  sp_tally *info = &b->tally;
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
      info->r->nvtx_marks++;
    else
      info->r->nvtx_ranges++;
  }
  return rc;
}

/* Framework operators (TBE__SP_OP, the collector's reading of PyTorch's
 * operator ranges): a begin paired with the end of the same id, one still
 * running when the capture ended closed where an unclosed NVTX range is
 * (and counted), an end without its begin left out; those that start in a
 * kept window become operators (trace/model/ops.h). */
int tbe__spool_operators(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  sp_tally *info = &b->tally;
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
      info->r->dropped_out_of_range++;
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
      info->r->dropped_out_of_range++;
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
int tbe__spool_api_calls(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  sp_tally *info = &b->tally;
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
    info->r->api_calls++;
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
int tbe__spool_kernels(build *b) {
  scan *s = b->s;
  sp_tally *info = &b->tally;
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
    info->r->kernels++;
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
int tbe__spool_copies(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  sp_tally *info = &b->tally;
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
    info->r->copies++;
  }
  return rc;
}

/* GPU work: memsets. */
int tbe__spool_memsets(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  sp_tally *info = &b->tally;
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
    info->r->memsets++;
  }
  return rc;
}

/* Synchronization: on the GPU stream it waited for (a context sync, which
 * has none, on the device's stream -1), as Kineto and Nsight Systems place
 * it; the API call that waited links to it by correlation id. */
int tbe__spool_syncs(build *b) {
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
int tbe__spool_overheads(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  sp_tally *info = &b->tally;
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
    info->r->overhead_ns += (uint64_t)(oe - os);
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

/* Whether CUPTI's memory kind is host memory (pageable, pinned): such an
 * allocation belongs to the host (device -1), whichever GPU's context
 * made it. */
static int host_memory(uint32_t kind) { return kind == TBE_MEM_PAGEABLE || kind == TBE_MEM_PINNED; }

/* The track of a host allocation: the thread of the call that made it
 * (its correlation id's API record), else the process's own track. */
static int host_memory_track(build *b, int64_t pid, uint32_t corr, uint32_t *tr) {
  uint32_t ai;
  if (corr && map_get(&b->corr, corr, &ai)) {
    const tbe__sp_api *a = &((const tbe__sp_api *)b->s->apis.data)[ai];
    return tbe_trace_track(b->t, TBE_TRACK_THREAD, a->pid, a->tid, -1, tr);
  }
  return tbe_trace_track(b->t, TBE_TRACK_OTHER, pid, -1, -1, tr);
}

/* Device memory: on the thread of the call that allocated or freed it
 * (the API record of its correlation), as Kineto places `[memory]`, so
 * that the operator open there owns it (the PyTorch plugin's Memory
 * table); else on its GPU's stream track. */
static int device_memory_track(build *b, int64_t pid, const tbe__sp_memory *m, uint32_t *tr) {
  uint32_t ai;
  if (m->corr && map_get(&b->corr, m->corr, &ai)) {
    const tbe__sp_api *a = &((const tbe__sp_api *)b->s->apis.data)[ai];
    return tbe_trace_track(b->t, TBE_TRACK_THREAD, a->pid, a->tid, -1, tr);
  }
  return stream_track(b, pid, m->stream, m->device, tr);
}

/* Memory allocations and frees: device, managed and pool memory of its
 * GPU on the calling thread (else the GPU's stream track), host memory
 * (pageable, pinned) on the host. */
int tbe__spool_memory(build *b) {
  scan *s = b->s;
  tbe_trace *t = b->t;
  sp_tally *info = &b->tally;
  int64_t pid = spool_pid(b->s);
  int rc = 0;
  const tbe__sp_memory *mv = s->memory.data;
  for (size_t i = 0; i < s->memory.n && !rc; i++) {
    const tbe__sp_memory *m = &mv[i];
    if (m->ts <= 0) {
      t->dropped_out_of_range++;
      info->r->dropped_out_of_range++;
      continue;
    }
    seen(s, m->ts);
    if (!keep(b, m->ts)) continue;
    uint32_t tr;
    int host = host_memory(m->mem_kind);
    if (host)
      rc = host_memory_track(b, pid, m->corr, &tr);
    else if (not_ordinal(b, m->device))
      continue;
    else
      rc = device_memory_track(b, pid, m, &tr);
    if (rc) break;
    tbe_memory d;
    memset(&d, 0, sizeof d);
    d.addr = m->addr;
    d.bytes = m->op == 2 ? -(int64_t)m->bytes : (int64_t)m->bytes;
    d.total_allocated = d.total_reserved = -1;
    d.device = host ? -1 : (int32_t)m->device;
    d.device_type = host ? 0 : 1; /* Kineto's: 0 CPU, 1 CUDA */
    d.source = TBE_MEMSRC_CUDA;
    d.mem_kind = (uint8_t)(m->mem_kind <= TBE_MEM_MANAGED_STATIC ? m->mem_kind : TBE_MEM_UNKNOWN);
    rc = add(b, TBE_EV_MEMORY, m->ts, 0, m->corr, tbe_trace_str_id(t, "[memory]"), tr, 0, &d);
  }
  return rc;
}

/* Devices and thread names. */
int tbe__spool_devices_threads(build *b) {
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
