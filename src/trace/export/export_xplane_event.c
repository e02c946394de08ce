/* export_xplane_event.c: one XEvent of the XSpace output
 * (export_xplane_int.h).
 *
 * An event is encoded into the exporter's scratch area, so its length is
 * exact, then copied into the stream: its metadata id (the name, interned
 * per plane), offset and duration in picoseconds from its line's start,
 * and its stats: correlation and device ids of API calls, the detail
 * strings of kernels, copies and memsets (formatted once per distinct
 * configuration through a direct-mapped cache, interned as stat metadata
 * and referenced), the typed fields of syncs, NVTX ranges, counters and
 * memory records, step marks, and our tbexport_kind / tbexport_cat / _a
 * where XLA's conventions would not give the event back; a framework
 * operator and the GPU work it launched carry the operator as xprof reads
 * host ops (tf_op, see op_tf_op).
 *
 * Nothing here allocates per event: the scratch area grows to the largest
 * event once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/checked.h"
#include "common/map.h"
#include "tbexport/error.h"
#include "trace/export/export_xplane_int.h"

const char *const tbe__xstat_names[S__COUNT] = {
    "correlation_id", "device_id",      "external_id",     "kernel_details", "memcpy_details",
    "Memset_details", "theoretical_occupancy_pct", "context_id", "step_num", "_r",
    "value",          "addr",           "num_bytes",       "total_allocated", "total_reserved",
    "device_ordinal", "sync_kind",      "sync_stream",     "cuda_event",     "nvtx_domain",
    "nvtx_color",     "nvtx_category",  "nvtx_payload",    "tbexport_kind",  "tbexport_cat",
    "_a",             "tf_op",          "tbexport_src_tf_op", "memalloc_details", "MemFree_details",
    "tbexport_mem_source", "tbexport_mem_kind", "tbexport_device_type"};

/* ---- details, metadata and kinds ---- */

static uint32_t detail_id(xctx *c, const uint64_t key[6], const char *fmt_buf, size_t fmt_len);

static const char *mem_kind(uint8_t k) { return tbe_mem_kind_name((tbe_mem_kind)k); }

static uint32_t dcache_lookup(xctx *c, const uint64_t key[6], dcache_ent **slot) {
  uint64_t h = tbe__hash_bytes(key, 6 * sizeof *key, c->seed);
  dcache_ent *d = &c->dc[(h >> 40) & (DC_SIZE - 1)];
  *slot = d;
  if (d->gen == c->gen && memcmp(d->key, key, sizeof d->key) == 0) return d->id;
  return 0;
}

static uint32_t detail_id(xctx *c, const uint64_t key[6], const char *s, size_t n) {
  dcache_ent *d;
  uint32_t id = dcache_lookup(c, key, &d);
  if (id) return id;
  id = tbe__ntab_get(&c->st, s, n);
  memcpy(d->key, key, sizeof d->key);
  d->id = id;
  d->gen = c->gen;
  return id;
}

static uint32_t kernel_details(xctx *c, const tbe_kernel *k) {
  uint32_t occ;
  memcpy(&occ, &k->occupancy_pct, 4);
  uint64_t key[6] = {1ull << 56 | k->registers, (uint64_t)k->static_shared << 32 | k->dynamic_shared,
                     (uint64_t)k->grid[0] << 32 | k->grid[1],
                     (uint64_t)k->grid[2] << 32 | k->block[0],
                     (uint64_t)k->block[1] << 32 | k->block[2], occ};
  dcache_ent *d;
  uint32_t id = dcache_lookup(c, key, &d);
  if (id) return id;
  char buf[256];
  int n = snprintf(buf, sizeof buf,
                   "regs:%u static_shared:%u dynamic_shared:%u grid:%u,%u,%u block:%u,%u,%u",
                   k->registers, k->static_shared, k->dynamic_shared, k->grid[0], k->grid[1],
                   k->grid[2], k->block[0], k->block[1], k->block[2]);
  if (k->occupancy_pct >= 0)
    n += snprintf(buf + n, sizeof buf - (size_t)n, " occ_pct:%g", (double)k->occupancy_pct);
  return detail_id(c, key, buf, (size_t)n);
}

/* ---- framework operators as xprof reads host ops ----
 *
 * xprof counts a host event as a framework op, and attributes a kernel to
 * one (Framework Op Stats, Kernel Stats' "Op Name"), by its tf_op stat,
 * "<name>:<type>", parsed by ParseTfOpFullname (xla tf_op_utils.cc): split
 * at the first ':', the type must be a TensorFlow type ([A-Z_][A-Za-z0-9_]*,
 * with a TensorFlow name) or a JAX one ([a-z_][a-z0-9_]*), else the event is
 * no op.  A PyTorch operator's name has "::" in it, so ours is written as
 * name = the operator's name with each "::" a '/' (a name scope to xprof)
 * and any other ':' dropped, type = its last "::" part lowercased, every
 * character outside [a-z0-9_] a '_', '_' first when it would start with a
 * digit (a JAX type): "aten::addmm" -> "aten/addmm:addmm",
 * "AddmmBackward0" -> "AddmmBackward0:addmmbackward0".  Written on each
 * CPU operator and on the GPU work whose external id names one, after the
 * event's other stats, unless the event has a tf_op of its own (an arg from
 * an XSpace of XLA's); such an event carries tbexport_src_tf_op = 1 (before
 * its args), so that our importer keeps its tf_op and drops ours.  Not in
 * a trace read from an XSpace of XLA's (plan_operators). */

/* Writes the tf_op text of operator name s[0, n) at out (room for 2n + 4
 * bytes); returns its length. */
static size_t tf_op_text(const char *s, size_t n, char *out) {
  size_t k = 0, last = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == ':' && i + 1 < n && s[i + 1] == ':') {
      out[k++] = '/';
      i++;
      last = i + 1;
    } else if (s[i] != ':') {
      out[k++] = s[i];
    }
  }
  out[k++] = ':';
  size_t t0 = k;
  for (size_t i = last; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 'A' && ch <= 'Z') ch = (unsigned char)(ch - 'A' + 'a');
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) ch = '_';
    if (k == t0 && ch >= '0' && ch <= '9') out[k++] = '_';
    out[k++] = (char)ch;
  }
  if (k == t0) {
    memcpy(out + k, "op", 2);
    k += 2;
  }
  return k;
}

/* The stat metadata id of the tf_op value of operator name `name`, cached
 * per plane; 0 after an allocation failure (sticky). */
static uint32_t tf_op_ref(xctx *c, tbe_str name) {
  uint64_t *slot = name < c->st.ncache ? &c->tf_cache[name] : NULL;
  if (slot && *slot >> 32 == c->gen && (uint32_t)*slot) return (uint32_t)*slot;
  size_t n = tbe_trace_strlen(c->t, name);
  char stackbuf[512];
  char *b = 2 * n + 4 <= sizeof stackbuf ? stackbuf : tbe__alloc(c->w.a, 2 * n + 4);
  if (!b) {
    c->st.err = TBE_ENOMEM;
    return 0;
  }
  size_t k = tf_op_text(tbe_trace_str(c->t, name), n, b);
  uint32_t id = tbe__ntab_get(&c->st, b, k);
  if (b != stackbuf) tbe__free(c->w.a, b);
  if (slot && id) *slot = (uint64_t)c->gen << 32 | id;
  return id;
}

/* Whether event `e` has a tf_op arg of its own. */
static int has_tf_op_arg(const xctx *c, const tbe_event *e) {
  if (c->k_tf_op == TBE_NONE) return 0;
  for (uint32_t i = 0; i < e->nargs; i++)
    if (c->t->args[e->args + i].key == c->k_tf_op) return 1;
  return 0;
}

/* The name of the operator whose tf_op event `e` carries: its own for a
 * CPU operator, that of the CPU operator its external id names for GPU
 * work; TBE_NONE for none. */
static tbe_str tf_op_of(const xctx *c, const tbe_event *e) {
  if (!c->tf_ops) return TBE_NONE;
  if (e->kind == TBE_EV_CPU_OP) return e->name;
  if (!e->external_id || !tbe_event_kind_is_gpu((tbe_event_kind)e->kind)) return TBE_NONE;
  if (c->ext_name) return e->external_id < c->ext_n ? c->ext_name[e->external_id] - 1 : TBE_NONE;
  const uint32_t *v = tbe__map_get(&c->ext_map, e->external_id);
  return v ? *v : TBE_NONE;
}

static uint32_t memcpy_details(xctx *c, const tbe_memcpy *m, int32_t track_device) {
  int32_t dest = m->dst_device >= 0 ? m->dst_device : track_device;
  uint64_t key[6] = {2ull << 56 | (uint64_t)m->src_kind << 16 | (uint64_t)m->dst_kind << 8 | m->async,
                     m->bytes, (uint64_t)(uint32_t)dest, 0, 0, 0};
  dcache_ent *d;
  uint32_t id = dcache_lookup(c, key, &d);
  if (id) return id;
  char buf[200];
  int n = snprintf(buf, sizeof buf, "kind_src:%s kind_dst:%s size:%llu dest:%d async:%d",
                   mem_kind(m->src_kind), mem_kind(m->dst_kind), (unsigned long long)m->bytes,
                   (int)dest, m->async ? 1 : 0);
  return detail_id(c, key, buf, (size_t)n);
}

static uint32_t memset_details(xctx *c, const tbe_memset *m) {
  uint64_t key[6] = {3ull << 56 | (uint64_t)m->mem_kind << 8 | m->async, m->bytes, 0, 0, 0, 0};
  dcache_ent *d;
  uint32_t id = dcache_lookup(c, key, &d);
  if (id) return id;
  char buf[160];
  int n = snprintf(buf, sizeof buf, "kind:%s num_bytes:%llu async:%d", mem_kind(m->mem_kind),
                   (unsigned long long)m->bytes, m->async ? 1 : 0);
  return detail_id(c, key, buf, (size_t)n);
}

/* XLA's detail of a CUDA allocation or free: "kind:<k> num_bytes:<n>"
 * (n the size, positive for a free too; the stat's name says which). */
static uint32_t memalloc_details(xctx *c, const tbe_memory *m) {
  uint64_t n = m->bytes < 0 ? (uint64_t)0 - (uint64_t)m->bytes : (uint64_t)m->bytes;
  uint64_t key[6] = {5ull << 56 | (uint64_t)m->mem_kind, n, 0, 0, 0, 0};
  dcache_ent *d;
  uint32_t id = dcache_lookup(c, key, &d);
  if (id) return id;
  char buf[96];
  int len = snprintf(buf, sizeof buf, "kind:%s num_bytes:%llu", mem_kind(m->mem_kind),
                     (unsigned long long)n);
  return detail_id(c, key, buf, (size_t)len);
}

static uint32_t context_ref(xctx *c, unsigned ctx) {
  uint64_t key[6] = {4ull << 56 | ctx, 0, 0, 0, 0, 0};
  dcache_ent *d;
  uint32_t id = dcache_lookup(c, key, &d);
  if (id) return id;
  char buf[32];
  int n = snprintf(buf, sizeof buf, "$$%u", ctx);
  return detail_id(c, key, buf, (size_t)n);
}

static int host_mem(uint8_t k) {
  return k == TBE_MEM_PAGEABLE || k == TBE_MEM_PINNED || k == TBE_MEM_MANAGED ||
         k == TBE_MEM_MANAGED_STATIC;
}

/* The direction a reader infers for "MemcpyOther" from the memory kinds
 * (src/import/xspace.c copy_kind_of does this for XLA's files). */
static uint8_t inferred_kind(const tbe_memcpy *m) {
  int sh = host_mem(m->src_kind), dh = host_mem(m->dst_kind);
  int sd = m->src_kind == TBE_MEM_DEVICE || m->src_kind == TBE_MEM_DEVICE_STATIC;
  int dd = m->dst_kind == TBE_MEM_DEVICE || m->dst_kind == TBE_MEM_DEVICE_STATIC;
  if (sh && dd) return TBE_COPY_HTOD;
  if (sd && dh) return TBE_COPY_DTOH;
  if (sd && dd) return TBE_COPY_DTOD;
  if (sh && dh) return TBE_COPY_HTOH;
  if (m->src_kind == TBE_MEM_ARRAY && dd) return TBE_COPY_ATOD;
  if (sd && m->dst_kind == TBE_MEM_ARRAY) return TBE_COPY_DTOA;
  return TBE_COPY_UNKNOWN;
}

/* XLA's names for the four directions it tells apart, and "MemcpyOther"
 * for the rest when the memory kinds say the direction; else ours
 * ("Memcpy" and tbe_copy_kind_name: "MemcpyUnknown", "MemcpyHtoA", ...), so
 * that the direction reads back. */
static const char *memcpy_xla_name(const tbe_memcpy *m, char *buf, size_t size) {
  uint8_t kind = m ? m->copy_kind : TBE_COPY_UNKNOWN;
  switch (kind) {
    case TBE_COPY_HTOD: return "MemcpyH2D";
    case TBE_COPY_DTOH: return "MemcpyD2H";
    case TBE_COPY_DTOD: return "MemcpyD2D";
    case TBE_COPY_PTOP: return "MemcpyP2P";
    default: break;
  }
  if (m && inferred_kind(m) == kind) return "MemcpyOther";
  snprintf(buf, size, "Memcpy%s", tbe_copy_kind_name((tbe_copy_kind)kind));
  return buf;
}

static int find_mark(const xctx *c, uint32_t ev) {
  size_t lo = 0, hi = c->nmarks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->marks[mid].event < ev) lo = mid + 1;
    else hi = mid;
  }
  return lo < c->nmarks && c->marks[lo].event == ev ? (int)lo : -1;
}

/* The kind our importer (src/import/xspace.c) gives a host event from what
 * XLA's conventions say about it: a correlation_id makes an API call
 * (runtime when the name starts with "cuda"), the NVTX line NVTX, memory
 * stats an allocator event, anything else a CPU operator, or an instant
 * when it has no duration.  Events of another kind carry a tbexport_kind
 * stat that says theirs. */
static uint8_t host_kind_default(const tbe_trace *t, const tbe_event *e) {
  if (e->correlation)
    return strncmp(tbe_trace_str(t, e->name), "cuda", 4) == 0 ? TBE_EV_RUNTIME : TBE_EV_DRIVER;
  if (e->kind == TBE_EV_NVTX_RANGE || e->kind == TBE_EV_NVTX_MARK)
    return e->dur_ns ? TBE_EV_NVTX_RANGE : TBE_EV_NVTX_MARK;
  if (e->kind == TBE_EV_MEMORY && tbe_trace_memory(t, e) && !e->dur_ns) return TBE_EV_MEMORY;
  return e->dur_ns ? TBE_EV_CPU_OP : TBE_EV_INSTANT;
}

uint32_t tbe__xp_kind_ref(xctx *c, uint8_t kind) {
  const char *n = tbe_event_kind_name((tbe_event_kind)kind);
  return tbe__ntab_get(&c->st, n, strlen(n));
}

/* Event metadata id for an event's display name. */
static uint32_t event_meta(xctx *c, const tbe_event *e) {
  const tbe_trace *t = c->t;
  if (e->kind == TBE_EV_MEMCPY) {
    char nb[32];
    const char *n = memcpy_xla_name(tbe_trace_memcpy(t, e), nb, sizeof nb);
    return tbe__ntab_get(&c->ev, n, strlen(n));
  }
  if (e->kind == TBE_EV_NVTX_RANGE || e->kind == TBE_EV_NVTX_MARK) {
    const tbe_nvtx *nv = tbe_trace_nvtx(t, e);
    if (nv && nv->domain) {
      size_t dl = tbe_trace_strlen(t, nv->domain), ml = tbe_trace_strlen(t, e->name);
      char stackbuf[512];
      char *b = dl + ml + 6 <= sizeof stackbuf ? stackbuf : tbe__alloc(c->w.a, dl + ml + 6);
      if (!b) {
        c->ev.err = TBE_ENOMEM;
        return 0;
      }
      memcpy(b, "NVTX:", 5);
      memcpy(b + 5, tbe_trace_str(t, nv->domain), dl);
      b[5 + dl] = ':';
      memcpy(b + 6 + dl, tbe_trace_str(t, e->name), ml);
      uint32_t id = tbe__ntab_get(&c->ev, b, dl + ml + 6);
      if (b != stackbuf) tbe__free(c->w.a, b);
      return id;
    }
  }
  return ntab_str(&c->ev, t, e->name);
}

/* Encodes the XEvent for model event `idx` (placed at `line_start_ns`) and
 * appends it as field 4 of the current line. */
/* ---- one event ----
 * The parts below run once per event, in this order; the compiler inlines
 * them into tbe__xp_write_event (static, one caller each). */

/* Grows the scratch area to hold event `e`; 0 or TBE_ENOMEM (sticky in
 * c->w.err). */
static int scratch_fit(xctx *c, const tbe_event *e) {
  size_t need = 320 + (size_t)e->nargs * 32;
  if (need > c->scap) {
    void *p = c->scratch;
    if (tbe__grow(c->w.a, &p, &c->scap, need, 1)) return c->w.err = TBE_ENOMEM;
    c->scratch = p;
  }
  return 0;
}

/* The event's metadata id, offset from its line's start and duration, in
 * picoseconds. */
static void enc_times(xctx *c, enc *en, const tbe_event *e, int64_t line_start_ns) {
  uint8_t *p = en->p;
  uint32_t mid = event_meta(c, e);
  *p++ = TAG(1, WT_VARINT);
  p += tbe__pb_put_varint(p, mid);
  /* Times saturate here (common/checked.h): an offset beyond what int64
   * picoseconds hold is written as the largest and counted. */
  int64_t off = tbe__sat_sub(e->start_ns, line_start_ns);
  if (off > PS_MAX_NS || off < -PS_MAX_NS) {
    off = off > 0 ? PS_MAX_NS : -PS_MAX_NS;
    c->clamped++;
  }
  if (off) {
    *p++ = TAG(2, WT_VARINT);
    p += tbe__pb_put_varint(p, (uint64_t)(off * 1000));
  }
  int64_t dur = e->dur_ns < 0 ? 0 : e->dur_ns;
  if (dur > PS_MAX_NS) {
    dur = PS_MAX_NS;
    c->clamped++;
  }
  if (dur) {
    *p++ = TAG(3, WT_VARINT);
    p += tbe__pb_put_varint(p, (uint64_t)(dur * 1000));
  }
  en->p = p;
}

/* The stats of the event's kind (its detail record). */
static void enc_kind_stats(xctx *c, enc *en, const tbe_event *e, const tbe_track *tr) {
  const tbe_trace *t = c->t;
  switch (e->kind) {
    case TBE_EV_KERNEL: {
      const tbe_kernel *k = tbe_trace_kernel(t, e);
      if (e->correlation) enc_stat_u64(en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (k) {
        enc_stat_ref(en, fixed_stat(c, S_KERNEL_DETAILS), kernel_details(c, k));
        if (k->occupancy_pct >= 0)
          enc_stat_double(en, fixed_stat(c, S_OCCUPANCY), (double)k->occupancy_pct);
        if (k->context) enc_stat_ref(en, fixed_stat(c, S_CONTEXT), context_ref(c, k->context));
      }
      break;
    }
    case TBE_EV_MEMCPY: {
      const tbe_memcpy *m = tbe_trace_memcpy(t, e);
      if (e->correlation) enc_stat_u64(en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (m) {
        enc_stat_ref(en, fixed_stat(c, S_MEMCPY_DETAILS), memcpy_details(c, m, tr->device));
        if (m->context) enc_stat_ref(en, fixed_stat(c, S_CONTEXT), context_ref(c, m->context));
      }
      break;
    }
    case TBE_EV_MEMSET: {
      const tbe_memset *m = tbe_trace_memset(t, e);
      if (e->correlation) enc_stat_u64(en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (m) {
        enc_stat_ref(en, fixed_stat(c, S_MEMSET_DETAILS), memset_details(c, m));
        if (m->context) enc_stat_ref(en, fixed_stat(c, S_CONTEXT), context_ref(c, m->context));
      }
      break;
    }
    case TBE_EV_RUNTIME:
    case TBE_EV_DRIVER:
      if (e->correlation) enc_stat_u64(en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (e->link != TBE_NONE && e->link < t->nevents) {
        const tbe_track *gt = &t->tracks[t->events[e->link].track];
        if (gt->type == TBE_TRACK_STREAM && gt->device >= 0)
          enc_stat_u64(en, fixed_stat(c, S_DEVICE_ID), (uint64_t)gt->device);
      }
      break;
    case TBE_EV_SYNC: {
      const tbe_sync *s = tbe_trace_sync(t, e);
      if (e->correlation) enc_stat_u64(en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (s) {
        const char *kn = tbe_sync_kind_name((tbe_sync_kind)s->sync_kind);
        enc_stat_ref(en, fixed_stat(c, S_SYNC_KIND), tbe__ntab_get(&c->st, kn, strlen(kn)));
        if (s->stream >= 0) enc_stat_i64(en, fixed_stat(c, S_SYNC_STREAM), s->stream);
        if (s->cuda_event) enc_stat_u64(en, fixed_stat(c, S_CUDA_EVENT), s->cuda_event);
      }
      break;
    }
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK: {
      const tbe_nvtx *nv = tbe_trace_nvtx(t, e);
      if (nv) {
        if (nv->domain)
          enc_stat_ref(en, fixed_stat(c, S_NVTX_DOMAIN), ntab_str(&c->st, t, nv->domain));
        if (nv->color) enc_stat_u64(en, fixed_stat(c, S_NVTX_COLOR), nv->color);
        if (nv->category) enc_stat_u64(en, fixed_stat(c, S_NVTX_CATEGORY), nv->category);
        if (nv->payload_type == TBE_PAYLOAD_INT64)
          enc_stat_i64(en, fixed_stat(c, S_NVTX_PAYLOAD), nv->payload.i);
        else if (nv->payload_type == TBE_PAYLOAD_UINT64)
          enc_stat_u64(en, fixed_stat(c, S_NVTX_PAYLOAD), nv->payload.u);
        else if (nv->payload_type == TBE_PAYLOAD_DOUBLE)
          enc_stat_double(en, fixed_stat(c, S_NVTX_PAYLOAD), nv->payload.d);
      }
      break;
    }
    case TBE_EV_COUNTER: {
      const tbe_counter *k = tbe_trace_counter(t, e);
      enc_stat_double(en, fixed_stat(c, S_VALUE), k ? k->value : 0.0);
      break;
    }
    case TBE_EV_MEMORY: {
      const tbe_memory *m = tbe_trace_memory(t, e);
      if (m) {
        enc_stat_u64(en, fixed_stat(c, S_ADDR), m->addr);
        enc_stat_i64(en, fixed_stat(c, S_NUM_BYTES), m->bytes);
        if (m->total_allocated >= 0)
          enc_stat_i64(en, fixed_stat(c, S_TOTAL_ALLOCATED), m->total_allocated);
        if (m->total_reserved >= 0)
          enc_stat_i64(en, fixed_stat(c, S_TOTAL_RESERVED), m->total_reserved);
        enc_stat_i64(en, fixed_stat(c, S_DEVICE_ORDINAL), m->device);
        /* Kineto's Device Type where the importer would not infer it
         * (1 for a GPU's, 0 for the host's) */
        if (m->device_type != (m->device >= 0 ? 1 : 0))
          enc_stat_i64(en, fixed_stat(c, S_MEM_DEVTYPE), m->device_type);
        /* who reported it: the CUDA driver's as XLA writes it, else ours */
        if (m->source == TBE_MEMSRC_CUDA) {
          enc_stat_ref(en, fixed_stat(c, m->bytes < 0 ? S_MEMFREE_DETAILS : S_MEMALLOC_DETAILS),
                       memalloc_details(c, m));
        } else {
          if (m->source == TBE_MEMSRC_ALLOCATOR)
            enc_stat_ref(en, fixed_stat(c, S_MEM_SOURCE), tbe__ntab_get(&c->st, "allocator", 9));
          const char *kn = mem_kind(m->mem_kind);
          if (m->mem_kind)
            enc_stat_ref(en, fixed_stat(c, S_MEM_KIND), tbe__ntab_get(&c->st, kn, strlen(kn)));
        }
      }
      break;
    }
    default: break;
  }
}

/* What any event may carry: external id, step mark, async flag, and on
 * host lines our kind and category where XLA's would not give them back. */
static void enc_common_stats(xctx *c, enc *en, const tbe_event *e, const tbe_track *tr,
                             uint32_t idx) {
  const tbe_trace *t = c->t;
  if (e->external_id) enc_stat_u64(en, fixed_stat(c, S_EXTERNAL_ID), e->external_id);
  if (c->nmarks) {
    int m = find_mark(c, idx);
    if (m >= 0) {
      enc_stat_i64(en, fixed_stat(c, S_STEP_NUM), t->steps[c->marks[m].step].num);
      enc_stat_i64(en, fixed_stat(c, S_R), 1);
    }
  }
  /* XLA's is_async: xprof's grouping does not nest what it marks. */
  if (e->flags & TBE_EVF_ASYNC) enc_stat_i64(en, fixed_stat(c, S_ASYNC), 1);
  if (e->nargs && has_tf_op_arg(c, e)) enc_stat_i64(en, fixed_stat(c, S_SRC_TF_OP), 1);
  if (tr->type != TBE_TRACK_STREAM) {
    if (e->kind != host_kind_default(t, e))
      enc_stat_ref(en, fixed_stat(c, S_TBE_KIND), tbe__xp_kind_ref(c, e->kind));
    if (e->cat) enc_stat_ref(en, fixed_stat(c, S_TBE_CAT), ntab_str(&c->st, t, e->cat));
  }
}

/* The event's generic args, each a stat keyed by its name. */
static void enc_args(xctx *c, enc *en, const tbe_event *e) {
  const tbe_trace *t = c->t;
  for (uint32_t i = 0; i < e->nargs; i++) {
    const tbe_arg *g = &t->args[e->args + i];
    uint32_t k = ntab_str(&c->st, t, g->key);
    switch (g->type) {
      case TBE_ARG_INT: enc_stat_i64(en, k, g->v.i); break;
      case TBE_ARG_UINT: enc_stat_u64(en, k, g->v.u); break;
      case TBE_ARG_DOUBLE: enc_stat_double(en, k, g->v.d); break;
      default: enc_stat_ref(en, k, ntab_str(&c->st, t, g->v.s)); break;
    }
  }
}

void tbe__xp_write_event(xctx *c, uint32_t idx, int64_t line_start_ns) {
  const tbe_trace *t = c->t;
  const tbe_event *e = &t->events[idx];
  const tbe_track *tr = &t->tracks[e->track];
  if (scratch_fit(c, e)) return;
  enc en = {c->scratch};
  enc_times(c, &en, e, line_start_ns);
  enc_kind_stats(c, &en, e, tr);
  enc_common_stats(c, &en, e, tr, idx);
  enc_args(c, &en, e);
  tbe_str op = tf_op_of(c, e);
  if (op != TBE_NONE && !(e->nargs && has_tf_op_arg(c, e))) {
    uint32_t ref = tf_op_ref(c, op);
    if (ref) enc_stat_ref(&en, fixed_stat(c, S_TF_OP), ref);
  }
  size_t n = (size_t)(en.p - c->scratch);
  uint8_t *d = xw_room(&c->w, n + 11);
  if (!d) return;
  d[0] = TAG(4, WT_LEN);
  size_t h = 1 + tbe__pb_put_varint(d + 1, n);
  memcpy(d + h, c->scratch, n);
  c->w.len += h + n;
  c->done++;
  if (c->progress && (c->done & 0xFFFF) == 0) c->progress(c->progress_ctx, c->done, t->nevents);
}
