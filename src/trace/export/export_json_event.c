/* export_json_event.c: one event of the Chrome JSON output, and the step
 * markers (export_json_int.h).
 *
 * An event is one object on its row (track_row: Kineto's pid and tid),
 * with Kineto's cat, name and args: the typed ones from its details
 * (kernel, copy, memset, sync, NVTX, counter, memory) under Kineto's keys,
 * then, on a kernel the range profiler measured, its figures (the arg
 * "range profiler", from jctx.kfig), then its generic args, skipping the
 * keys the typed ones wrote (c->k_*), so that importing the output gives
 * back the same model.  A resolved
 * correlation link adds a flow end ("ac2g": "s" on the API call, "f" with
 * "bp":"e" on the GPU op).  The duration events that make up most traces
 * take a hot path (write_hot): one reservation, then plain pointer
 * writes; it produces exactly what the general path would.
 *
 * Nothing here allocates: the caller's buffer grows, and every string
 * comes escaped from the cache (tbe__jw_esc_all ran first), so workers
 * format events of one trace on several threads at once, each with its
 * own copy of the context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/analysis.h"
#include "tbexport/error.h"
#include "trace/export/export_json_esc.h"
#include "trace/export/export_json_int.h"
#include "trace/export/step_keys.h"

/* ---- floats ---- */

/* Same for a float: the shortest of %.6g..%.9g that reads back as the same
 * float; integral values print as integers (Kineto prints them that way). */
static size_t fmt_float(char *out, float v) {
  if (!isfinite(v)) {
    memcpy(out, "null", 4);
    return 4;
  }
  if (v == floorf(v) && fabsf(v) < 1e9f) return put_i64(out, (int64_t)v);
  int n = 0;
  for (int prec = 6; prec <= 9; prec++) {
    n = snprintf(out, 22, "%.*g", prec, (double)v); /* at most 15 chars */
    if (strtof(out, NULL) == v) break;
  }
  return (size_t)n;
}


/* The formatted text of a float, through the two-way cache. */
static const fcache_ent *float_text(jctx *c, float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  uint64_t h = tbe__hash_u64(bits, c->seed);
  fcache_ent *e = &c->fcache[(size_t)(h >> (64 - FCACHE_BITS)) & ~(size_t)1];
  if (e[0].valid && e[0].bits == bits) return &e[0];
  if (e[1].valid && e[1].bits == bits) return &e[1];
  e[1] = e[0];
  e[0].len = (uint8_t)fmt_float(e[0].text, v);
  e[0].bits = bits;
  e[0].valid = 1;
  return &e[0];
}

static inline char *p_float(jctx *c, char *p, float v) {
  const fcache_ent *e = float_text(c, v);
  memcpy(p, e->text, e->len);
  return p + e->len;
}

/* ---- pointer writers ---- */

static inline char *p_dim3(char *p, const uint32_t v[3]) {
  *p++ = '[';
  p = p_u64(p, v[0]);
  *p++ = ',';
  p = p_u64(p, v[1]);
  *p++ = ',';
  p = p_u64(p, v[2]);
  *p++ = ']';
  return p;
}

/* ---- events ---- */

static const char *default_cat(uint8_t kind) {
  switch (kind) {
    case TBE_EV_KERNEL: return "kernel";
    case TBE_EV_MEMCPY: return "gpu_memcpy";
    case TBE_EV_MEMSET: return "gpu_memset";
    case TBE_EV_RUNTIME: return "cuda_runtime";
    case TBE_EV_DRIVER: return "cuda_driver";
    case TBE_EV_SYNC: return "cuda_sync";
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK: return "nvtx";
    case TBE_EV_CPU_OP: return "cpu_op";
    case TBE_EV_USER_ANNOTATION: return "user_annotation";
    case TBE_EV_GPU_ANNOTATION: return "gpu_user_annotation";
    case TBE_EV_PYTHON: return "python_function";
    case TBE_EV_OVERHEAD: return "overhead";
    case TBE_EV_COUNTER: return "counter";
    case TBE_EV_MEMORY:
    case TBE_EV_INSTANT: return "cpu_instant_event";
    default: return "generic";
  }
}

static const char *mem_kind_title(uint8_t k) {
  static const char *const names[] = {"Unknown", "Pageable", "Pinned", "Device",
                                      "Array",   "Managed",  "Device Static", "Managed Static"};
  return k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

/* The row of event `e` on track `tr`: the track's, except for a stream sync
 * on a stream, which goes on that stream's "(sync)" row as Kineto puts it. */
static void event_row(const jctx *c, const tbe_event *e, const tbe_track *tr, int64_t *pid,
                      int64_t *tid) {
  track_row(tr, pid, tid);
  if (e->kind == TBE_EV_SYNC && tr->type == TBE_TRACK_STREAM && tr->tid >= 0) {
    const tbe_sync *s = tbe_trace_sync(c->t, e);
    if (s && s->sync_kind == TBE_SYNC_STREAM) *tid = tr->tid + KINETO_SYNC_TID_OFFSET;
  }
}

/* Starts an event object: {"ph":"<ph>","cat":...,"name":...,"pid":..,"tid":..,"ts":..
 * (no closing brace). */
static void ev_head(jctx *c, const char *ph, const tbe_event *e, const tbe_track *tr) {
  jw *w = &c->w;
  if (c->first_event) {
    c->first_event = 0;
    JW_LIT(w, "\n  {\"ph\":\"");
  } else {
    JW_LIT(w, ",\n  {\"ph\":\"");
  }
  jw_mem(w, ph, strlen(ph));
  JW_LIT(w, "\",\"cat\":");
  if (e->cat) {
    tbe__jw_str(c, e->cat);
  } else {
    /* the default names are plain ASCII: no escaping pass */
    const char *dc = default_cat(e->kind);
    size_t dl = strlen(dc);
    char *d = jw_room(w, dl + 2);
    if (d) {
      d[0] = '"';
      memcpy(d + 1, dc, dl);
      d[dl + 1] = '"';
      w->len += dl + 2;
    }
  }
  JW_LIT(w, ",\"name\":");
  {
    tbe__jw_str(c, e->name);
  }
  int64_t pid, tid;
  event_row(c, e, tr, &pid, &tid);
  char *d = jw_room(w, 96);
  if (!d) return;
  size_t n = 0;
  memcpy(d + n, ",\"pid\":", 7);
  n += 7;
  n += put_i64(d + n, pid);
  memcpy(d + n, ",\"tid\":", 7);
  n += 7;
  n += put_i64(d + n, tid);
  memcpy(d + n, ",\"ts\":", 6);
  n += 6;
  n += put_us(d + n, tbe__sat_sub(e->start_ns, c->base));
  w->len += n;
}

static void ev_dur(jctx *c, int64_t dur) {
  char *d = jw_room(&c->w, 40);
  if (!d) return;
  memcpy(d, ",\"dur\":", 7);
  c->w.len += 7 + put_us(d + 7, dur < 0 ? 0 : dur);
}

/* Arg writers: each writes `,"key":value` or `"key":value` after `{`. */
typedef struct argw {
  jctx *c;
  int n;
} argw;

static void arg_key(argw *a, const char *key, size_t klen) {
  jw *w = &a->c->w;
  char *d = jw_room(w, klen + 8);
  if (!d) return;
  size_t n = 0;
  if (a->n++) d[n++] = ',';
  d[n++] = '"';
  memcpy(d + n, key, klen);
  n += klen;
  d[n++] = '"';
  d[n++] = ':';
  w->len += n;
}

#define ARG_KEY(a, lit) arg_key((a), (lit), sizeof(lit) - 1)

static void arg_i64(argw *a, const char *key, size_t klen, int64_t v) {
  arg_key(a, key, klen);
  jw_i64(&a->c->w, v);
}
static void arg_u64(argw *a, const char *key, size_t klen, uint64_t v) {
  arg_key(a, key, klen);
  jw_u64(&a->c->w, v);
}
#define ARG_I64(a, lit, v) arg_i64((a), (lit), sizeof(lit) - 1, (v))
#define ARG_U64(a, lit, v) arg_u64((a), (lit), sizeof(lit) - 1, (v))

static int is_reserved_key(const jctx *c, tbe_str k, uint8_t kind) {
  if (k == c->k_ext || k == c->k_corr) return 1;
  switch (kind) {
    case TBE_EV_KERNEL:
      return k == c->k_device || k == c->k_context || k == c->k_stream || k == c->k_queued ||
             k == c->k_regs || k == c->k_shmem || k == c->k_dynshmem || k == c->k_bps ||
             k == c->k_wps || k == c->k_grid || k == c->k_block || k == c->k_occ;
    case TBE_EV_MEMCPY:
    case TBE_EV_MEMSET:
      return k == c->k_device || k == c->k_context || k == c->k_stream || k == c->k_bytes ||
             k == c->k_bw || k == c->k_from || k == c->k_to;
    case TBE_EV_GPU_ANNOTATION: return k == c->k_device || k == c->k_stream;
    case TBE_EV_SYNC:
      return k == c->k_stream || k == c->k_synckind || k == c->k_event || k == c->k_waitev ||
             k == c->k_device;
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK:
      return k == c->k_domain || k == c->k_color || k == c->k_category || k == c->k_payload;
    case TBE_EV_COUNTER: return k == c->k_value;
    case TBE_EV_MEMORY:
      return k == c->k_treserved || k == c->k_tallocated || k == c->k_bytes2 || k == c->k_devid ||
             k == c->k_devtype || k == c->k_addr || k == c->k_memsrc || k == c->k_memkind;
    default: return 0;
  }
}

static void generic_args(argw *a, const tbe_event *e) {
  jctx *c = a->c;
  const tbe_trace *t = c->t;
  for (uint32_t i = 0; i < e->nargs; i++) {
    const tbe_arg *g = &t->args[e->args + i];
    if (is_reserved_key(c, g->key, e->kind)) continue;
    if (a->n++) JW_LIT(&c->w, ",");
    tbe__jw_str(c, g->key);
    JW_LIT(&c->w, ":");
    switch (g->type) {
      case TBE_ARG_INT: jw_i64(&c->w, g->v.i); break;
      case TBE_ARG_UINT: jw_u64(&c->w, g->v.u); break;
      case TBE_ARG_DOUBLE: jw_double(&c->w, g->v.d); break;
      case TBE_ARG_JSON: {
        /* Kept verbatim by the importer, which parsed it as JSON; an empty
         * value would break the document, so it becomes null. */
        size_t n = tbe_trace_strlen(t, g->v.s);
        if (n) jw_mem(&c->w, tbe_trace_str(t, g->v.s), n);
        else JW_LIT(&c->w, "null");
        break;
      }
      case TBE_ARG_STR:
      default: tbe__jw_str(c, g->v.s); break;
    }
  }
}

/* ---- the range profiler's figures ---- */

/* The heading the summary gives a metric (report_metrics.c), else NULL:
 * the metric's own name. */
static const char *figure_label(const char *metric) {
  static const char *const labels[][2] = {{"sm_throughput_pct", "SM %"},
                                          {"tensor_pipe_pct", "tensor %"},
                                          {"mem_throughput_pct", "mem %"},
                                          {"dram_throughput_pct", "DRAM %"},
                                          {"achieved_occupancy_pct", "occup %"},
                                          {"l2_hit_pct", "L2 hit %"},
                                          {"duration_ns", "avg ns"}};
  for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
    if (strcmp(metric, labels[i][0]) == 0) return labels[i][1];
  return NULL;
}

/* A figure with at most two decimals, no trailing zeros: what a viewer's
 * args panel should show (tbexportKernelMetrics keeps the exact value). */
static void jw_figure(jw *w, double v) {
  char b[48];
  int n = snprintf(b, sizeof b, "%.2f", v);
  if (n <= 0 || (size_t)n >= sizeof b) {
    jw_double(w, v);
    return;
  }
  while (n > 0 && b[n - 1] == '0') n--;
  if (n > 0 && b[n - 1] == '.') n--;
  if (n == 2 && b[0] == '-' && b[1] == '0') b[0] = '0', n = 1; /* -0.001 -> 0 */
  jw_mem(w, b, (size_t)n);
}

/* The arg "range profiler" of a kernel its figures describe: {"launches":
 * the launches measured, each figure under the summary's heading, "bound
 * by": the verdict}: the means of the kernel's name on its GPU, the same
 * on every launch of it. */
static void kernel_figures(argw *a, const tbe_event *e, const tbe_track *tr) {
  jctx *c = a->c;
  const tbe_trace *t = c->t;
  if (tr->type != TBE_TRACK_STREAM) return;
  const uint32_t *k = tbe__map_get(c->kfig, tbe__jw_kfig_key(e->name, tr->device));
  if (!k) return;
  const tbe_kernel_metrics *km = &t->kernel_metrics[*k];
  jw *w = &c->w;
  ARG_KEY(a, "range profiler");
  JW_LIT(w, "{\"launches\":");
  jw_u64(w, km->launches);
  for (uint32_t j = 0; j < km->count; j++) {
    const tbe_metric_value *v = &t->metric_values[km->first + j];
    const char *label = figure_label(tbe_trace_str(t, v->metric));
    JW_LIT(w, ",");
    if (label)
      jw_qcstr(w, label);
    else
      tbe__jw_str(c, v->metric);
    JW_LIT(w, ":");
    jw_figure(w, v->value);
  }
  if (c->kfig_bound[*k]) {
    JW_LIT(w, ",\"bound by\":");
    jw_qcstr(w, tbe_bound_name((tbe_bound)c->kfig_bound[*k]));
  }
  JW_LIT(w, "}");
}

/* A flow end; `cat` non-NULL means the launch flows ("ac2g"), else the
 * model flow's own cat and name. */
void tbe__jw_flow_end(jctx *c, const char *ph, uint64_t id, const char *cat, tbe_str cat_id,
                     tbe_str name_id, int64_t pid, int64_t tid, int64_t ts, int enclosing) {
  jw *w = &c->w;
  char *d = jw_room(w, 160);
  if (!d) return;
  char *p = PL(d, ",\n  {\"ph\":\"");
  *p++ = ph[0];
  p = PL(p, "\",\"id\":");
  p = p_u64(p, id);
  p = PL(p, ",\"pid\":");
  p = p_i64(p, pid);
  p = PL(p, ",\"tid\":");
  p = p_i64(p, tid);
  p = PL(p, ",\"ts\":");
  p = p_us(p, tbe__sat_sub(ts, c->base));
  if (cat) {
    p = PL(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"");
    if (enclosing) p = PL(p, ",\"bp\":\"e\"");
    *p++ = '}';
    w->len += (size_t)(p - d);
    return;
  }
  w->len += (size_t)(p - d);
  JW_LIT(w, ",\"cat\":");
  tbe__jw_str(c, cat_id);
  JW_LIT(w, ",\"name\":");
  tbe__jw_str(c, name_id);
  if (enclosing) JW_LIT(w, ",\"bp\":\"e\"");
  JW_LIT(w, "}");
}

/* Bandwidth in GB/s (= bytes per ns) with three decimals, from integers
 * where it fits; dur_ns > 0. */
static char *p_bandwidth(char *p, uint64_t bytes, int64_t dur_ns) {
  double gbps = (double)bytes / (double)dur_ns;
  if (gbps < 1e15) {
    uint64_t milli = (uint64_t)(gbps * 1000.0 + 0.5);
    p = p_u64(p, milli / 1000);
    unsigned r = (unsigned)(milli % 1000);
    *p++ = '.';
    *p++ = (char)('0' + r / 100);
    memcpy(p, tbe__jw_digits2 + 2 * (r % 100), 2);
    return p + 2;
  }
  return p + tbe__jw_fmt_double(p, gbps);
}

/* ---- the hot path ----
 *
 * The duration events that make up most traces (kernels, copies, memsets,
 * API calls, CPU ops, annotations) take this path: the name and the
 * category come from the cache, then one reservation (1 KB plus the two
 * strings: the most the fixed fields and a kernel's args can take) and
 * plain pointer writes.  It produces exactly what the general path would.
 * The helpers are static inline so that the compiler lays the path out as
 * one function. */

/* `,"key":` (the comma from the second arg on); `lit` a string literal. */
static inline char *hot_key(char *p, int *n, const char *k, size_t kl) {
  if ((*n)++) *p++ = ',';
  memcpy(p, k, kl);
  return p + kl;
}
#define KEY(lit) (p = hot_key(p, n, "\"" lit "\":", sizeof("\"" lit "\":") - 1))

/* The escaped name of a hot event: copies and memsets get Kineto's names,
 * which carry the direction and the memory kinds (ASCII), unless theirs is
 * that name already: another producer's name (XLA's "MemcpyH2D") would not
 * read back as the same copy.  `nb` holds a made name.  0 or an error. */
static inline int hot_name(jctx *c, const tbe_event *e, char nb[96], const char **nm, size_t *nl) {
  const tbe_trace *t = c->t;
  if ((e->kind == TBE_EV_MEMCPY && tbe_trace_memcpy(t, e)) ||
      (e->kind == TBE_EV_MEMSET && tbe_trace_memset(t, e)) ||
      (e->name == 0 && (e->kind == TBE_EV_MEMCPY || e->kind == TBE_EV_MEMSET))) {
    int n;
    if (e->kind == TBE_EV_MEMCPY) {
      const tbe_memcpy *m = tbe_trace_memcpy(t, e);
      n = snprintf(nb, 96, "Memcpy %s (%s -> %s)",
                   tbe_copy_kind_name((tbe_copy_kind)(m ? m->copy_kind : 0)),
                   mem_kind_title(m ? m->src_kind : 0), mem_kind_title(m ? m->dst_kind : 0));
    } else {
      const tbe_memset *m = tbe_trace_memset(t, e);
      n = snprintf(nb, 96, "Memset (%s)", mem_kind_title(m ? m->mem_kind : 0));
    }
    *nm = nb;
    *nl = (size_t)n;
    if (e->name && e->name < c->nesc && tbe_trace_strlen(t, e->name) == *nl &&
        memcmp(tbe_trace_str(t, e->name), nb, *nl) == 0)
      return esc_get(c, e->name, nm, nl);
    return 0;
  }
  if (e->name < c->nesc) return esc_get(c, e->name, nm, nl);
  *nm = "";
  *nl = 0;
  return 0;
}

/* Kineto's args of a kernel, after "External id". */
static inline char *kernel_args(jctx *c, char *p, int *n, const tbe_event *e,
                                const tbe_track *tr) {
  const tbe_kernel *k = tbe_trace_kernel(c->t, e);
  if (k && k->queued_ns >= 0) {
    KEY("queued");
    p = p_i64(p, k->queued_ns);
  }
  KEY("device");
  p = p_i64(p, tr->type == TBE_TRACK_STREAM ? tr->device : -1);
  if (k) {
    KEY("context");
    p = p_u64(p, k->context);
  }
  KEY("stream");
  p = p_i64(p, tr->tid);
  KEY("correlation");
  p = p_u64(p, e->correlation);
  if (!k) return p;
  KEY("registers per thread");
  p = p_u64(p, k->registers);
  KEY("shared memory");
  p = p_u64(p, (uint64_t)k->static_shared + k->dynamic_shared);
  if (k->dynamic_shared) {
    KEY("dynamic shared memory");
    p = p_u64(p, k->dynamic_shared);
  }
  if (k->blocks_per_sm >= 0) {
    KEY("blocks per SM");
    p = p_float(c, p, k->blocks_per_sm);
  }
  if (k->warps_per_sm >= 0) {
    KEY("warps per SM");
    p = p_float(c, p, k->warps_per_sm);
  }
  KEY("grid");
  p = p_dim3(p, k->grid);
  KEY("block");
  p = p_dim3(p, k->block);
  if (k->occupancy_pct >= 0) {
    KEY("est. achieved occupancy %");
    p = p_float(c, p, k->occupancy_pct);
  }
  return p;
}

/* Kineto's args of a copy or a memset, after "External id". */
static inline char *copy_args(jctx *c, char *p, int *n, const tbe_event *e, const tbe_track *tr) {
  const tbe_memcpy *m = tbe_trace_memcpy(c->t, e);
  const tbe_memset *ms = tbe_trace_memset(c->t, e);
  KEY("device");
  p = p_i64(p, tr->type == TBE_TRACK_STREAM ? tr->device : -1);
  if (m || ms) {
    KEY("context");
    p = p_u64(p, m ? m->context : ms->context);
  }
  KEY("stream");
  p = p_i64(p, tr->tid);
  KEY("correlation");
  p = p_u64(p, e->correlation);
  if (!m && !ms) return p;
  uint64_t bytes = m ? m->bytes : ms->bytes;
  KEY("bytes");
  p = p_u64(p, bytes);
  if (e->dur_ns > 0) {
    KEY("memory bandwidth (GB/s)");
    p = p_bandwidth(p, bytes, e->dur_ns);
  }
  if (m && m->copy_kind == TBE_COPY_PTOP) {
    KEY("fromDevice");
    p = p_i64(p, m->src_device);
    KEY("toDevice");
    p = p_i64(p, m->dst_device);
  }
  return p;
}

/* The typed args of a hot event; *n counts the args written. */
static inline char *hot_args(jctx *c, char *p, int *n, const tbe_event *e, const tbe_track *tr) {
  if (e->external_id) {
    KEY("External id");
    p = p_u64(p, e->external_id);
  }
  switch (e->kind) {
    case TBE_EV_KERNEL: return kernel_args(c, p, n, e, tr);
    case TBE_EV_MEMCPY:
    case TBE_EV_MEMSET: return copy_args(c, p, n, e, tr);
    case TBE_EV_GPU_ANNOTATION:
      /* No device/stream args, as Kineto writes it: the row (pid = device,
       * tid = stream) says where it is, and HTA counts every event with a
       * "stream" arg as GPU work (its compute time doubled with them). */
      return p;
    case TBE_EV_RUNTIME:
    case TBE_EV_DRIVER:
      if (e->correlation) {
        KEY("correlation");
        p = p_u64(p, e->correlation);
      }
      return p;
    default: return p;
  }
}
#undef KEY

static void write_hot(jctx *c, const tbe_event *e, const tbe_track *tr) {
  jw *w = &c->w;
  const char *nm, *ct;
  size_t nl, cl;
  char nb[96];
  if (hot_name(c, e, nb, &nm, &nl)) return;
  if (e->cat && e->cat < c->nesc) {
    if (esc_get(c, e->cat, &ct, &cl)) return;
  } else {
    ct = default_cat(e->kind);
    cl = strlen(ct);
  }
  char *d = jw_room(w, 1024 + nl + cl);
  if (!d) return;
  char *p = d;
  if (c->first_event) {
    c->first_event = 0;
    p = PL(p, "\n  {\"ph\":\"X\",\"cat\":");
  } else {
    p = PL(p, ",\n  {\"ph\":\"X\",\"cat\":");
  }
  p = p_qstr(p, ct, cl);
  p = PL(p, ",\"name\":");
  p = p_qstr(p, nm, nl);
  int64_t pid, tid;
  track_row(tr, &pid, &tid);
  p = PL(p, ",\"pid\":");
  p = p_i64(p, pid);
  p = PL(p, ",\"tid\":");
  p = p_i64(p, tid);
  p = PL(p, ",\"ts\":");
  p = p_us(p, tbe__sat_sub(e->start_ns, c->base));
  p = PL(p, ",\"dur\":");
  p = p_us(p, e->dur_ns < 0 ? 0 : e->dur_ns);
  size_t args_off = w->len + (size_t)(p - d);
  p = PL(p, ",\"args\":{");
  int n = 0;
  p = hot_args(c, p, &n, e, tr);
  w->len += (size_t)(p - d);
  argw a = {c, n};
  if (c->kfig && e->kind == TBE_EV_KERNEL) kernel_figures(&a, e, tr);
  if (e->nargs) generic_args(&a, e);
  if (a.n == 0 && w->len == args_off + 9) {
    w->len = args_off; /* no args: drop "args":{ again (nothing flushed since) */
    JW_LIT(w, "}");
  } else {
    JW_LIT(w, "}}");
  }
}

/* ---- steps ----
 *
 * HTA and torch-tb-profiler find steps by events named ProfilerStep#<n>
 * (hta/common/trace.py add_iteration: a host event belongs to the step
 * whose span holds its start).  A step that no host event of that name
 * carries (steps from NVTX ranges, from an XSpace, given by the caller)
 * gets one: a user_annotation X event with the step's span on the thread
 * of the range that defined it, written where the event would sort on that
 * row, so that a re-imported trace, which holds it as an event, writes the
 * same bytes.  When the steps are not what such events give back by
 * themselves (their names, their threads, steps without a carrier), the
 * document also lists them under "tbexportSteps", which our importer
 * reads instead of deriving steps from the events. */

static int is_step_kind(uint8_t k) {
  return k == TBE_EV_CPU_OP || k == TBE_EV_USER_ANNOTATION || k == TBE_EV_NVTX_RANGE ||
         k == TBE_EV_GENERIC;
}

static int host_track_of(const tbe_trace *t, uint32_t k) {
  return k < t->ntracks && t->tracks[k].type != TBE_TRACK_STREAM;
}

/* Index of the first event of track `k` that a marker of `st` goes before
 * (events sort by start, longer first; the marker first among equals). */
static uint32_t marker_pos(const tbe_trace *t, uint32_t k, const tbe_step *st) {
  const tbe_track *tr = &t->tracks[k];
  uint32_t lo = tr->first, hi = tr->first + tr->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const tbe_event *e = &t->events[mid];
    int before = st->start_ns < e->start_ns ||
                 (st->start_ns == e->start_ns && tbe__sat_sub(st->end_ns, st->start_ns) >= e->dur_ns);
    if (before) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Whether a host event named `name` with the span of `st` is on track `k`. */
static int carried_on(const tbe_trace *t, uint32_t k, const tbe_step *st, tbe_str name) {
  const tbe_track *tr = &t->tracks[k];
  if (tr->type == TBE_TRACK_STREAM || !tr->count) return 0;
  uint32_t lo = tr->first, hi = tr->first + tr->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->events[mid].start_ns < st->start_ns) lo = mid + 1;
    else hi = mid;
  }
  for (uint32_t i = lo; i < tr->first + tr->count && t->events[i].start_ns == st->start_ns; i++) {
    const tbe_event *e = &t->events[i];
    if (e->name == name && tbe__end_ns(e->start_ns, e->dur_ns) == st->end_ns && is_step_kind(e->kind)) return 1;
  }
  return 0;
}

/* Steps of no known thread: their carriers are found in one pass over the
 * host tracks (step_keys.h). */
static void mark_carried(void *ctx, uint32_t step, uint32_t event) {
  (void)event;
  ((uint8_t *)ctx)[step] = 1;
}

static int cmp_jsynth(const void *a, const void *b, void *ctx) {
  const tbe_trace *t = ctx;
  const jsynth *x = a, *y = b;
  if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
  if (x->track != y->track) return x->track < y->track ? -1 : 1;
  const tbe_step *p = &t->steps[x->step], *q = &t->steps[y->step];
  if (p->start_ns != q->start_ns) return p->start_ns < q->start_ns ? -1 : 1;
  int64_t dp = tbe__sat_sub(p->end_ns, p->start_ns), dq = tbe__sat_sub(q->end_ns, q->start_ns);
  if (dp != dq) return dp > dq ? -1 : 1;
  return x->step < y->step ? -1 : x->step > y->step;
}

/* Plans the step markers (c->synth); returns 1 when the document must list
 * the steps ("tbexportSteps"), 0 when their events say it all, or a
 * negative code. */
int tbe__jw_plan_steps(jctx *c) {
  const tbe_trace *t = c->t;
  if (!t->nsteps) return 0;
  c->synth = tbe__calloc(c->w.a, t->nsteps, sizeof *c->synth);
  if (!c->synth) return TBE_ENOMEM;
  uint32_t fallback = TBE_NONE; /* a thread for steps of no known thread */
  for (uint32_t k = 0; k < t->ntracks && fallback == TBE_NONE; k++)
    if (t->tracks[k].type == TBE_TRACK_THREAD && t->tracks[k].count) fallback = k;
  /* Each step's ProfilerStep#N name and whether an event carries it. */
  tbe_str *pnames = tbe__calloc(c->w.a, t->nsteps, sizeof *pnames);
  uint8_t *carried = tbe__calloc(c->w.a, t->nsteps, 1);
  tbe__step_key *keys = tbe__calloc(c->w.a, t->nsteps, sizeof *keys);
  if (!pnames || !carried || !keys) {
    tbe__free(c->w.a, pnames);
    tbe__free(c->w.a, carried);
    tbe__free(c->w.a, keys);
    return TBE_ENOMEM;
  }
  size_t nk = 0;
  for (size_t s = 0; s < t->nsteps; s++) {
    const tbe_step *st = &t->steps[s];
    char nb[48];
    int n = snprintf(nb, sizeof nb, "ProfilerStep#%lld", (long long)st->num);
    tbe_str pname = pnames[s] = tbe_trace_find_str(t, nb, (size_t)n);
    if (pname == TBE_NONE) continue;
    if (host_track_of(t, st->track)) carried[s] = (uint8_t)carried_on(t, st->track, st, pname);
    else
      keys[nk++] = (tbe__step_key){st->start_ns, st->end_ns, pname, (uint32_t)s};
  }
  if (nk) tbe__step_keys_match(t, keys, nk, is_step_kind, mark_carried, carried);
  int list = 0;
  for (size_t s = 0; s < t->nsteps; s++) {
    const tbe_step *st = &t->steps[s];
    tbe_str pname = pnames[s];
    int own = host_track_of(t, st->track), carried_s = carried[s];
    if (!carried_s || st->name != pname) list = 1;
    uint32_t k = own ? st->track : fallback;
    if (carried_s || k == TBE_NONE) continue;
    c->synth[c->nsynth].pos = marker_pos(t, k, st);
    c->synth[c->nsynth].step = (uint32_t)s;
    c->synth[c->nsynth].track = k;
    c->nsynth++;
  }
  tbe__free(c->w.a, pnames);
  tbe__free(c->w.a, carried);
  tbe__free(c->w.a, keys);
  if (c->nsynth > 1) qsort_r(c->synth, c->nsynth, sizeof *c->synth, cmp_jsynth, (void *)t);
  return list;
}

/* Writes the marker of c->synth[i], as write_hot writes a user annotation
 * without args. */
void tbe__jw_step_marker(jctx *c, size_t i) {
  const tbe_trace *t = c->t;
  const tbe_step *st = &t->steps[c->synth[i].step];
  int64_t pid, tid;
  track_row(&t->tracks[c->synth[i].track], &pid, &tid);
  char *d = jw_room(&c->w, 256);
  if (!d) return;
  char *p = d;
  if (c->first_event) {
    c->first_event = 0;
    p = PL(p, "\n  {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#");
  } else {
    p = PL(p, ",\n  {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#");
  }
  p = p_i64(p, st->num);
  p = PL(p, "\",\"pid\":");
  p = p_i64(p, pid);
  p = PL(p, ",\"tid\":");
  p = p_i64(p, tid);
  p = PL(p, ",\"ts\":");
  p = p_us(p, tbe__sat_sub(st->start_ns, c->base));
  p = PL(p, ",\"dur\":");
  p = p_us(p, tbe__sat_sub(st->end_ns, st->start_ns));
  *p++ = '}';
  c->w.len += (size_t)(p - d);
}

/* The first marker to write at or after event `pos`. */
size_t tbe__jw_synth_from(const jctx *c, uint32_t pos) {
  size_t lo = 0, hi = c->nsynth;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->synth[mid].pos < pos) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* "tbexportSteps": every step, exactly. */
void tbe__jw_steps_key(jctx *c) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  JW_LIT(w, "  \"tbexportSteps\": [");
  for (size_t s = 0; s < t->nsteps; s++) {
    const tbe_step *st = &t->steps[s];
    jw_cstr(w, s ? ", {\"num\": " : "{\"num\": ");
    jw_i64(w, st->num);
    JW_LIT(w, ", \"startNs\": ");
    jw_i64(w, st->start_ns);
    JW_LIT(w, ", \"endNs\": ");
    jw_i64(w, st->end_ns);
    if (st->name) {
      JW_LIT(w, ", \"name\": ");
      tbe__jw_str(c, st->name);
    }
    if (host_track_of(t, st->track)) {
      int64_t pid, tid;
      track_row(&t->tracks[st->track], &pid, &tid);
      JW_LIT(w, ", \"pid\": ");
      jw_i64(w, pid);
      JW_LIT(w, ", \"tid\": ");
      jw_i64(w, tid);
    }
    JW_LIT(w, "}");
  }
  JW_LIT(w, "],\n");
}

static int is_api_kind(uint8_t k) { return k == TBE_EV_RUNTIME || k == TBE_EV_DRIVER; }

void tbe__jw_event(jctx *c, uint32_t idx) {
  const tbe_trace *t = c->t;
  const tbe_event *e = &t->events[idx];
  const tbe_track *tr = &t->tracks[e->track];
  jw *w = &c->w;
  switch (e->kind) {
    case TBE_EV_KERNEL:
    case TBE_EV_MEMCPY:
    case TBE_EV_MEMSET:
    case TBE_EV_RUNTIME:
    case TBE_EV_DRIVER:
    case TBE_EV_CPU_OP:
    case TBE_EV_USER_ANNOTATION:
    case TBE_EV_GPU_ANNOTATION:
    case TBE_EV_PYTHON:
      write_hot(c, e, tr);
      goto flows;
    default: break;
  }
  int instant = e->kind == TBE_EV_NVTX_MARK || e->kind == TBE_EV_MEMORY ||
                e->kind == TBE_EV_INSTANT;
  if (e->kind == TBE_EV_COUNTER) ev_head(c, "C", e, tr);
  else if (instant) ev_head(c, "i", e, tr);
  else ev_head(c, "X", e, tr);
  if (instant) JW_LIT(w, ",\"s\":\"t\"");
  else if (e->kind != TBE_EV_COUNTER) ev_dur(c, e->dur_ns);

  argw a = {c, 0};
  size_t args_at = w->len; /* to drop an empty "args":{} again */
  JW_LIT(w, ",\"args\":{");
  if (e->external_id && e->kind != TBE_EV_COUNTER) ARG_U64(&a, "External id", e->external_id);
  switch (e->kind) {
    case TBE_EV_SYNC: {
      /* Kineto's args (CuptiActivity.h CudaSyncActivity), in its order. */
      const tbe_sync *s = tbe_trace_sync(t, e);
      if (s) {
        ARG_KEY(&a, "cuda_sync_kind");
        jw_qcstr(w, tbe_sync_kind_name((tbe_sync_kind)s->sync_kind));
        if (s->cuda_event) ARG_U64(&a, "wait_on_cuda_event_id", s->cuda_event);
        ARG_I64(&a, "stream", s->stream);
      }
      if (e->correlation) ARG_U64(&a, "correlation", e->correlation);
      if (tr->type == TBE_TRACK_STREAM) ARG_I64(&a, "device", tr->device);
      break;
    }
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK: {
      const tbe_nvtx *n = tbe_trace_nvtx(t, e);
      if (n) {
        if (n->domain) {
          ARG_KEY(&a, "domain");
          tbe__jw_str(c, n->domain);
        }
        if (n->color) ARG_U64(&a, "color", n->color);
        if (n->category) ARG_U64(&a, "category", n->category);
        if (n->payload_type == TBE_PAYLOAD_INT64) ARG_I64(&a, "payload", n->payload.i);
        else if (n->payload_type == TBE_PAYLOAD_UINT64) ARG_U64(&a, "payload", n->payload.u);
        else if (n->payload_type == TBE_PAYLOAD_DOUBLE) {
          ARG_KEY(&a, "payload");
          jw_double(w, n->payload.d);
        }
      }
      break;
    }
    case TBE_EV_COUNTER: {
      const tbe_counter *k = tbe_trace_counter(t, e);
      ARG_KEY(&a, "value");
      jw_double(w, k ? k->value : 0.0);
      break;
    }
    case TBE_EV_MEMORY: {
      const tbe_memory *m = tbe_trace_memory(t, e);
      if (m) {
        if (m->total_reserved >= 0) ARG_I64(&a, "Total Reserved", m->total_reserved);
        if (m->total_allocated >= 0) ARG_I64(&a, "Total Allocated", m->total_allocated);
        ARG_I64(&a, "Bytes", m->bytes);
        ARG_I64(&a, "Device Id", m->device);
        ARG_I64(&a, "Device Type", m->device_type);
        ARG_U64(&a, "Addr", m->addr);
        /* Ours, after Kineto's (its clients read the keys they know):
         * who reported it and the memory's kind, read back by the
         * importer. */
        ARG_KEY(&a, "Source");
        jw_qcstr(w, m->source == TBE_MEMSRC_CUDA        ? "CUDA"
                    : m->source == TBE_MEMSRC_ALLOCATOR ? "allocator"
                                                        : "unknown");
        if (m->mem_kind) {
          ARG_KEY(&a, "Memory Kind");
          jw_qcstr(w, mem_kind_title(m->mem_kind));
        }
      }
      break;
    }
    default: break;
  }
  if (e->nargs) generic_args(&a, e);
  if (a.n == 0 && w->len == args_at + 9) {
    w->len = args_at; /* nothing was written and nothing flushed since */
    JW_LIT(w, "}");
  } else {
    JW_LIT(w, "}}");
  }

flows:
  /* Launch flows: "s" on the API call that launched GPU work, "f" (binding
   * to the enclosing slice) on every GPU op that links back to an API call.
   * Both ends exist for every link the model resolved. */
  if (e->link != TBE_NONE && e->link < t->nevents) {
    const tbe_event *o = &t->events[e->link];
    uint64_t id = e->correlation ? e->correlation : o->correlation;
    int64_t pid, tid;
    track_row(tr, &pid, &tid);
    if (is_api_kind(e->kind) && tbe_event_kind_is_gpu((tbe_event_kind)o->kind))
      tbe__jw_flow_end(c, "s", id, "ac2g", 0, 0, pid, tid, e->start_ns, 0);
    else if (tbe_event_kind_is_gpu((tbe_event_kind)e->kind) && is_api_kind(o->kind) &&
             o->link != TBE_NONE)
      tbe__jw_flow_end(c, "f", id, "ac2g", 0, 0, pid, tid, e->start_ns, 1);
  }
}

/* ---- the keys of typed args ---- */

static tbe_str key_id(const tbe_trace *t, const char *s) { return tbe_trace_find_str(t, s, strlen(s)); }

void tbe__jw_keys(jctx *c) {
  const tbe_trace *t = c->t;
  c->k_ext = key_id(t, "External id");
  c->k_corr = key_id(t, "correlation");
  c->k_device = key_id(t, "device");
  c->k_context = key_id(t, "context");
  c->k_stream = key_id(t, "stream");
  c->k_queued = key_id(t, "queued");
  c->k_regs = key_id(t, "registers per thread");
  c->k_shmem = key_id(t, "shared memory");
  c->k_dynshmem = key_id(t, "dynamic shared memory");
  c->k_bps = key_id(t, "blocks per SM");
  c->k_wps = key_id(t, "warps per SM");
  c->k_grid = key_id(t, "grid");
  c->k_block = key_id(t, "block");
  c->k_occ = key_id(t, "est. achieved occupancy %");
  c->k_bytes = key_id(t, "bytes");
  c->k_bw = key_id(t, "memory bandwidth (GB/s)");
  c->k_from = key_id(t, "fromDevice");
  c->k_to = key_id(t, "toDevice");
  c->k_domain = key_id(t, "domain");
  c->k_color = key_id(t, "color");
  c->k_category = key_id(t, "category");
  c->k_payload = key_id(t, "payload");
  c->k_value = key_id(t, "value");
  c->k_treserved = key_id(t, "Total Reserved");
  c->k_tallocated = key_id(t, "Total Allocated");
  c->k_bytes2 = key_id(t, "Bytes");
  c->k_devid = key_id(t, "Device Id");
  c->k_devtype = key_id(t, "Device Type");
  c->k_addr = key_id(t, "Addr");
  c->k_memsrc = key_id(t, "Source");
  c->k_memkind = key_id(t, "Memory Kind");
  c->k_synckind = key_id(t, "cuda_sync_kind");
  c->k_event = key_id(t, "cuda_event");
  c->k_waitev = key_id(t, "wait_on_cuda_event_id");
}
