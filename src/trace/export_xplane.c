/* export_xplane.c: the XSpace output (<host>.xplane.pb) read by the
 * TensorBoard profile plugin (xprof) and jax.profiler.ProfileData.
 *
 * Layout, following what XLA's own GPU tracer writes after its post-processing
 * (see the profile-plugin reference, sections 2-3):
 * - one merged "/host:CPU" plane: a line per host thread (id = OS tid), NVTX
 *   events on a companion line "<thread>/NVTX" (id 1<<32 + tid; 4<<32 +
 *   track index for tracks that are no thread), other tracks on lines with
 *   ids from 2<<32, and a "Step markers" line for steps of no known thread;
 *   API calls carry correlation_id and device_id as uint64; a step is
 *   marked by the host event that defines it (step_num, int64, and _r = 1)
 *   or, when that is an NVTX range or there is none, by a marker event of
 *   its own on its thread's line (xprof groups what a root encloses on its
 *   line); host events whose kind XLA's conventions would not give back
 *   carry tbexport_kind (and tbexport_cat, a source category), asynchronous
 *   ranges _a = 1;
 * - one "/device:GPU:<n>" plane per device (XPlane.id = n) with the device
 *   capability stats, a line per stream named "Stream #<id>(<kinds>)", and
 *   kernels/memcpys/memsets carrying kernel_details/memcpy_details/
 *   Memset_details (interned through ref_value) and correlation_id (uint64);
 * - a "Task Environment" plane with profile_start_time/profile_stop_time
 *   (uint64 epoch ns), and ours, which xprof does not read: tbexport_source
 *   and the collection counters (tbexport_dropped_records, ..._ended_early);
 *   XSpace.hostnames; XSpace.warnings for everything the model dropped,
 *   clamped or cut short (the generic status lines, then the trace's own
 *   warnings).  src/import/xspace.c reads all of it back.
 * Line timestamp_ns is relative to the session start (readers compute
 * ns*1000 + offset_ps in int64, which overflows for epoch values); event
 * offsets are picoseconds from the line start.
 *
 * Encoding is hand-written protobuf wire format streamed through a 1 MiB
 * buffer: no per-event allocation.  XEvents get exact lengths (each is
 * encoded into a scratch area first); the enclosing XLine and XPlane
 * messages get a 5-byte padded varint length that is patched once the line
 * or plane is complete (in the buffer, or with pwrite once flushed).  A
 * padded varint is valid protobuf: every parser reads varints of up to 10
 * bytes, and 5 bytes hold any length below 2^35 (messages are < 2 GiB).
 * Metadata ids are assigned from 1 per plane; names are interned per plane
 * (common/intern.h, cleared for each plane: id = interner id + 1) so each
 * distinct event name and stat name appears once.  proto3 strings must be
 * valid UTF-8 (C++ and Python protobuf refuse the file otherwise), so
 * trace text that is not gets each maximal invalid subpart replaced by
 * U+FFFD (common/utf8.h, tbe__utf8_repair) before it is interned or
 * written.
 *
 * Position: an output of src/trace (exporter table entry "xplane"); reads
 * only the model. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/checked.h"
#include "common/fsutil.h"
#include "common/intern.h"
#include "common/utf8.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/exporter.h"

#define XW_CAP (1u << 20)
#define PS_MAX_NS (INT64_MAX / 1000)

/* ---- output ---- */

typedef struct xw {
  uint8_t *buf;
  size_t len, cap;
  int fd;
  int err;
  uint64_t flushed; /* bytes already written to fd */
  tbe__buf fix;     /* a string field's text with its invalid UTF-8 replaced */
  const tbe_allocator *a;
} xw;

static void xw_flush(xw *w) {
  if (!w->err && w->len) {
    int rc = tbe__write_all(w->fd, w->buf, w->len);
    if (rc) w->err = rc;
  }
  w->flushed += w->len;
  w->len = 0;
}

static inline uint8_t *xw_room(xw *w, size_t n) {
  if (w->cap - w->len < n) {
    xw_flush(w);
    if (w->cap < n) {
      size_t ncap = w->cap;
      while (ncap < n) ncap *= 2;
      uint8_t *nb = tbe__realloc(w->a, w->buf, w->cap, ncap);
      if (!nb) {
        if (!w->err) w->err = TBE_ENOMEM;
        return NULL;
      }
      w->buf = nb;
      w->cap = ncap;
    }
  }
  return w->buf + w->len;
}

static inline size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

static inline size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* Field tags (all our field numbers are < 16: one byte). */
#define TAG(f, wt) ((uint8_t)(((f) << 3) | (wt)))
#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2

static void xw_bytes(xw *w, const void *p, size_t n) {
  uint8_t *d = xw_room(w, n);
  if (!d || !n) return; /* (NULL, 0) is an empty name: memcpy must not see NULL */
  memcpy(d, p, n);
  w->len += n;
}

static void xw_varint_field(xw *w, unsigned f, uint64_t v) {
  uint8_t *d = xw_room(w, 11);
  if (!d) return;
  d[0] = TAG(f, WT_VARINT);
  w->len += 1 + put_varint(d + 1, v);
}

static void xw_len_field(xw *w, unsigned f, const void *p, size_t n) {
  uint8_t *d = xw_room(w, 11);
  if (!d) return;
  d[0] = TAG(f, WT_LEN);
  w->len += 1 + put_varint(d + 1, n);
  xw_bytes(w, p, n);
}

/* A string field: like xw_len_field, with invalid UTF-8 replaced. */
static void xw_str_field(xw *w, unsigned f, const char *s, size_t n) {
  if (tbe__utf8_valid(s, n)) {
    xw_len_field(w, f, s, n);
    return;
  }
  tbe__buf_clear(&w->fix);
  tbe__utf8_repair(&w->fix, s, n, 0);
  if (tbe__buf_error(&w->fix)) {
    if (!w->err) w->err = tbe__buf_error(&w->fix);
    return;
  }
  xw_len_field(w, f, w->fix.data, w->fix.len);
}

/* Opens a length-delimited field whose length is patched later; returns the
 * absolute offset of the 5-byte length. */
static uint64_t xw_open(xw *w, unsigned f) {
  uint8_t *d = xw_room(w, 6);
  if (!d) return 0;
  d[0] = TAG(f, WT_LEN);
  memset(d + 1, 0, 5);
  uint64_t at = w->flushed + w->len + 1;
  w->len += 6;
  return at;
}

static void xw_close(xw *w, uint64_t at) {
  if (w->err) return;
  uint64_t n = w->flushed + w->len - (at + 5);
  if (n >= (1ull << 31)) {
    w->err = TBE_ETOOBIG; /* protobuf messages are limited to 2 GiB */
    return;
  }
  uint8_t p[5];
  for (int i = 0; i < 4; i++) {
    p[i] = (uint8_t)((n & 0x7F) | 0x80);
    n >>= 7;
  }
  p[4] = (uint8_t)n;
  if (at >= w->flushed) {
    memcpy(w->buf + (at - w->flushed), p, 5);
  } else if (at + 5 <= w->flushed) {
    w->err = tbe__pwrite_all(w->fd, p, 5, at);
  } else {
    size_t k = (size_t)(w->flushed - at);
    w->err = tbe__pwrite_all(w->fd, p, k, at);
    memcpy(w->buf, p + k, 5 - k);
  }
}

/* ---- per-plane name tables (event and stat metadata) ---- */

typedef struct ntab {
  tbe__intern in;  /* the plane's names: metadata id = interner id + 1 */
  uint32_t *cache; /* per trace string id: metadata id, 0 = not yet */
  size_t ncache;
  tbe__buf fix;    /* a name with its invalid UTF-8 replaced */
  int err;         /* sticky */
} ntab;

static void ntab_init(ntab *t, const tbe_allocator *a) {
  memset(t, 0, sizeof *t);
  tbe__intern_init(&t->in, a, TBE__SEED_PROCESS);
  tbe__buf_init(&t->fix, a);
}

static void ntab_free(ntab *t) {
  tbe__intern_deinit(&t->in);
  tbe__buf_deinit(&t->fix);
  tbe__free(t->in.a, t->cache);
}

static void ntab_reset(ntab *t) {
  tbe__intern_clear(&t->in);
  if (t->cache) memset(t->cache, 0, t->ncache * sizeof *t->cache);
}

/* Returns the id (>= 1) of `name`, adding it; 0 after an allocation
 * failure (sticky in t->err). */
static uint32_t ntab_get(ntab *t, const char *s, size_t n) {
  if (t->err) return 0;
  if (!tbe__utf8_valid(s, n)) {
    tbe__buf_clear(&t->fix);
    tbe__utf8_repair(&t->fix, s, n, 0);
    if ((t->err = tbe__buf_error(&t->fix)) != 0) return 0;
    s = (const char *)t->fix.data;
    n = t->fix.len;
  }
  uint32_t id;
  if ((t->err = tbe__intern_add(&t->in, s, n, &id, NULL)) != 0) return 0;
  return id + 1;
}

/* The number of names of the plane (their ids are 1..count). */
static inline size_t ntab_count(const ntab *t) { return tbe__intern_count(&t->in); }

/* The id of an interned trace string, through the per-string cache. */
static inline uint32_t ntab_str(ntab *t, const tbe_trace *tr, tbe_str s) {
  if (s < t->ncache && t->cache[s]) return t->cache[s];
  uint32_t id = ntab_get(t, tbe_trace_str(tr, s), tbe_trace_strlen(tr, s));
  if (s < t->ncache) t->cache[s] = id;
  return id;
}

/* ---- the exporter state ---- */

/* Stats whose metadata ids are looked up once per plane. */
enum {
  S_CORRELATION,
  S_DEVICE_ID,
  S_EXTERNAL_ID,
  S_KERNEL_DETAILS,
  S_MEMCPY_DETAILS,
  S_MEMSET_DETAILS,
  S_OCCUPANCY,
  S_CONTEXT,
  S_STEP_NUM,
  S_R,
  S_VALUE,
  S_ADDR,
  S_NUM_BYTES,
  S_TOTAL_ALLOCATED,
  S_TOTAL_RESERVED,
  S_DEVICE_ORDINAL,
  S_SYNC_KIND,
  S_SYNC_STREAM,
  S_CUDA_EVENT,
  S_NVTX_DOMAIN,
  S_NVTX_COLOR,
  S_NVTX_CATEGORY,
  S_NVTX_PAYLOAD,
  S_TBE_KIND,
  S_TBE_CAT,
  S_ASYNC,
  S__COUNT
};
static const char *const STAT_NAMES[S__COUNT] = {
    "correlation_id", "device_id",      "external_id",     "kernel_details", "memcpy_details",
    "Memset_details", "theoretical_occupancy_pct", "context_id", "step_num", "_r",
    "value",          "addr",           "num_bytes",       "total_allocated", "total_reserved",
    "device_ordinal", "sync_kind",      "sync_stream",     "cuda_event",     "nvtx_domain",
    "nvtx_color",     "nvtx_category",  "nvtx_payload",    "tbexport_kind",  "tbexport_cat",
    "_a"};

/* Direct-mapped cache from packed detail fields to a stat metadata id, so a
 * kernel configuration seen many times is formatted and hashed once per
 * plane. */
#define DC_SIZE 4096
typedef struct dcache_ent {
  uint64_t key[6];
  uint32_t id;
  uint32_t gen;
} dcache_ent;

typedef struct step_mark {
  uint32_t event;
  uint32_t step;
} step_mark;

/* A step no host event carries, written as a marker event of its own on the
 * host line of the step's track (sorted by track, then like events). */
typedef struct synth_step {
  uint32_t track;
  uint32_t step;
} synth_step;

typedef struct xctx {
  const tbe_trace *t;
  xw w;
  ntab ev;   /* event metadata */
  ntab st;   /* stat metadata */
  uint32_t fixed[S__COUNT];
  dcache_ent *dc;
  uint32_t gen;
  uint8_t *scratch;
  size_t scap;
  step_mark *marks;
  size_t nmarks;
  synth_step *synth;
  size_t nsynth, synth_at; /* synth_at: the next one to write (tracks in order) */
  uint64_t clamped; /* durations/offsets beyond what int64 picoseconds hold */
  uint64_t done;
  void (*progress)(void *, uint64_t, uint64_t);
  void *progress_ctx;
} xctx;

static inline uint32_t fixed_stat(xctx *c, int which) {
  if (!c->fixed[which]) c->fixed[which] = ntab_get(&c->st, STAT_NAMES[which], strlen(STAT_NAMES[which]));
  return c->fixed[which];
}

static void plane_reset(xctx *c) {
  ntab_reset(&c->ev);
  ntab_reset(&c->st);
  memset(c->fixed, 0, sizeof c->fixed);
  c->gen++;
}

/* ---- XEvent body encoding (into scratch) ---- */

typedef struct enc {
  uint8_t *p; /* write position */
} enc;

static inline void enc_stat_u64(enc *e, uint32_t mid, uint64_t v) {
  uint8_t *p = e->p;
  uint8_t body[24];
  size_t n = 0;
  body[n++] = TAG(1, WT_VARINT);
  n += put_varint(body + n, mid);
  body[n++] = TAG(3, WT_VARINT);
  n += put_varint(body + n, v);
  *p++ = TAG(4, WT_LEN);
  *p++ = (uint8_t)n;
  memcpy(p, body, n);
  e->p = p + n;
}

static inline void enc_stat_i64(enc *e, uint32_t mid, int64_t v) {
  uint8_t *p = e->p;
  uint8_t body[24];
  size_t n = 0;
  body[n++] = TAG(1, WT_VARINT);
  n += put_varint(body + n, mid);
  body[n++] = TAG(4, WT_VARINT);
  n += put_varint(body + n, (uint64_t)v);
  *p++ = TAG(4, WT_LEN);
  *p++ = (uint8_t)n;
  memcpy(p, body, n);
  e->p = p + n;
}

static inline void enc_stat_ref(enc *e, uint32_t mid, uint32_t ref) {
  uint8_t *p = e->p;
  uint8_t body[24];
  size_t n = 0;
  body[n++] = TAG(1, WT_VARINT);
  n += put_varint(body + n, mid);
  body[n++] = TAG(7, WT_VARINT);
  n += put_varint(body + n, ref);
  *p++ = TAG(4, WT_LEN);
  *p++ = (uint8_t)n;
  memcpy(p, body, n);
  e->p = p + n;
}

static inline void enc_stat_double(enc *e, uint32_t mid, double v) {
  uint8_t *p = e->p;
  uint8_t body[24];
  size_t n = 0;
  body[n++] = TAG(1, WT_VARINT);
  n += put_varint(body + n, mid);
  body[n++] = TAG(2, WT_I64);
  memcpy(body + n, &v, 8); /* little-endian hosts only, as protobuf-c */
  n += 8;
  *p++ = TAG(4, WT_LEN);
  *p++ = (uint8_t)n;
  memcpy(p, body, n);
  e->p = p + n;
}

static uint32_t detail_id(xctx *c, const uint64_t key[6], const char *fmt_buf, size_t fmt_len);

static const char *mem_kind(uint8_t k) { return tbe_mem_kind_name((tbe_mem_kind)k); }

static uint32_t dcache_lookup(xctx *c, const uint64_t key[6], dcache_ent **slot) {
  uint64_t h = 0;
  for (int i = 0; i < 6; i++) h = (h ^ key[i]) * 0x9E3779B97F4A7C15ULL;
  dcache_ent *d = &c->dc[(h >> 40) & (DC_SIZE - 1)];
  *slot = d;
  if (d->gen == c->gen && memcmp(d->key, key, sizeof d->key) == 0) return d->id;
  return 0;
}

static uint32_t detail_id(xctx *c, const uint64_t key[6], const char *s, size_t n) {
  dcache_ent *d;
  uint32_t id = dcache_lookup(c, key, &d);
  if (id) return id;
  id = ntab_get(&c->st, s, n);
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

static uint32_t kind_ref(xctx *c, uint8_t kind) {
  const char *n = tbe_event_kind_name((tbe_event_kind)kind);
  return ntab_get(&c->st, n, strlen(n));
}

/* Event metadata id for an event's display name. */
static uint32_t event_meta(xctx *c, const tbe_event *e) {
  const tbe_trace *t = c->t;
  if (e->kind == TBE_EV_MEMCPY) {
    char nb[32];
    const char *n = memcpy_xla_name(tbe_trace_memcpy(t, e), nb, sizeof nb);
    return ntab_get(&c->ev, n, strlen(n));
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
      uint32_t id = ntab_get(&c->ev, b, dl + ml + 6);
      if (b != stackbuf) tbe__free(c->w.a, b);
      return id;
    }
  }
  return ntab_str(&c->ev, t, e->name);
}

/* Encodes the XEvent for model event `idx` (placed at `line_start_ns`) and
 * appends it as field 4 of the current line. */
static void write_event(xctx *c, uint32_t idx, int64_t line_start_ns) {
  const tbe_trace *t = c->t;
  const tbe_event *e = &t->events[idx];
  const tbe_track *tr = &t->tracks[e->track];
  size_t need = 256 + (size_t)e->nargs * 32;
  if (need > c->scap) {
    size_t nc = c->scap;
    while (nc < need) nc *= 2;
    uint8_t *ns = tbe__realloc(c->w.a, c->scratch, c->scap, nc);
    if (!ns) {
      c->w.err = TBE_ENOMEM;
      return;
    }
    c->scratch = ns;
    c->scap = nc;
  }
  enc en = {c->scratch};
  uint8_t *p = en.p;
  uint32_t mid = event_meta(c, e);
  *p++ = TAG(1, WT_VARINT);
  p += put_varint(p, mid);
  /* Times saturate here (common/checked.h): an offset beyond what int64
   * picoseconds hold is written as the largest and counted. */
  int64_t off = tbe__sat_sub(e->start_ns, line_start_ns);
  if (off > PS_MAX_NS || off < -PS_MAX_NS) {
    off = off > 0 ? PS_MAX_NS : -PS_MAX_NS;
    c->clamped++;
  }
  if (off) {
    *p++ = TAG(2, WT_VARINT);
    p += put_varint(p, (uint64_t)(off * 1000));
  }
  int64_t dur = e->dur_ns < 0 ? 0 : e->dur_ns;
  if (dur > PS_MAX_NS) {
    dur = PS_MAX_NS;
    c->clamped++;
  }
  if (dur) {
    *p++ = TAG(3, WT_VARINT);
    p += put_varint(p, (uint64_t)(dur * 1000));
  }
  en.p = p;

  switch (e->kind) {
    case TBE_EV_KERNEL: {
      const tbe_kernel *k = tbe_trace_kernel(t, e);
      if (e->correlation) enc_stat_u64(&en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (k) {
        enc_stat_ref(&en, fixed_stat(c, S_KERNEL_DETAILS), kernel_details(c, k));
        if (k->occupancy_pct >= 0)
          enc_stat_double(&en, fixed_stat(c, S_OCCUPANCY), (double)k->occupancy_pct);
        if (k->context) enc_stat_ref(&en, fixed_stat(c, S_CONTEXT), context_ref(c, k->context));
      }
      break;
    }
    case TBE_EV_MEMCPY: {
      const tbe_memcpy *m = tbe_trace_memcpy(t, e);
      if (e->correlation) enc_stat_u64(&en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (m) {
        enc_stat_ref(&en, fixed_stat(c, S_MEMCPY_DETAILS), memcpy_details(c, m, tr->device));
        if (m->context) enc_stat_ref(&en, fixed_stat(c, S_CONTEXT), context_ref(c, m->context));
      }
      break;
    }
    case TBE_EV_MEMSET: {
      const tbe_memset *m = tbe_trace_memset(t, e);
      if (e->correlation) enc_stat_u64(&en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (m) {
        enc_stat_ref(&en, fixed_stat(c, S_MEMSET_DETAILS), memset_details(c, m));
        if (m->context) enc_stat_ref(&en, fixed_stat(c, S_CONTEXT), context_ref(c, m->context));
      }
      break;
    }
    case TBE_EV_RUNTIME:
    case TBE_EV_DRIVER:
      if (e->correlation) enc_stat_u64(&en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (e->link != TBE_NONE && e->link < t->nevents) {
        const tbe_track *gt = &t->tracks[t->events[e->link].track];
        if (gt->type == TBE_TRACK_STREAM && gt->device >= 0)
          enc_stat_u64(&en, fixed_stat(c, S_DEVICE_ID), (uint64_t)gt->device);
      }
      break;
    case TBE_EV_SYNC: {
      const tbe_sync *s = tbe_trace_sync(t, e);
      if (e->correlation) enc_stat_u64(&en, fixed_stat(c, S_CORRELATION), e->correlation);
      if (s) {
        const char *kn = tbe_sync_kind_name((tbe_sync_kind)s->sync_kind);
        enc_stat_ref(&en, fixed_stat(c, S_SYNC_KIND), ntab_get(&c->st, kn, strlen(kn)));
        if (s->stream >= 0) enc_stat_i64(&en, fixed_stat(c, S_SYNC_STREAM), s->stream);
        if (s->cuda_event) enc_stat_u64(&en, fixed_stat(c, S_CUDA_EVENT), s->cuda_event);
      }
      break;
    }
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK: {
      const tbe_nvtx *nv = tbe_trace_nvtx(t, e);
      if (nv) {
        if (nv->domain)
          enc_stat_ref(&en, fixed_stat(c, S_NVTX_DOMAIN), ntab_str(&c->st, t, nv->domain));
        if (nv->color) enc_stat_u64(&en, fixed_stat(c, S_NVTX_COLOR), nv->color);
        if (nv->category) enc_stat_u64(&en, fixed_stat(c, S_NVTX_CATEGORY), nv->category);
        if (nv->payload_type == 1) enc_stat_i64(&en, fixed_stat(c, S_NVTX_PAYLOAD), nv->payload.i);
        else if (nv->payload_type == 2)
          enc_stat_u64(&en, fixed_stat(c, S_NVTX_PAYLOAD), nv->payload.u);
        else if (nv->payload_type == 3)
          enc_stat_double(&en, fixed_stat(c, S_NVTX_PAYLOAD), nv->payload.d);
      }
      break;
    }
    case TBE_EV_COUNTER: {
      const tbe_counter *k = tbe_trace_counter(t, e);
      enc_stat_double(&en, fixed_stat(c, S_VALUE), k ? k->value : 0.0);
      break;
    }
    case TBE_EV_MEMORY: {
      const tbe_memory *m = tbe_trace_memory(t, e);
      if (m) {
        enc_stat_u64(&en, fixed_stat(c, S_ADDR), m->addr);
        enc_stat_i64(&en, fixed_stat(c, S_NUM_BYTES), m->bytes);
        if (m->total_allocated >= 0)
          enc_stat_i64(&en, fixed_stat(c, S_TOTAL_ALLOCATED), m->total_allocated);
        if (m->total_reserved >= 0)
          enc_stat_i64(&en, fixed_stat(c, S_TOTAL_RESERVED), m->total_reserved);
        enc_stat_i64(&en, fixed_stat(c, S_DEVICE_ORDINAL), m->device);
      }
      break;
    }
    default: break;
  }
  if (e->external_id) enc_stat_u64(&en, fixed_stat(c, S_EXTERNAL_ID), e->external_id);
  if (c->nmarks) {
    int m = find_mark(c, idx);
    if (m >= 0) {
      enc_stat_i64(&en, fixed_stat(c, S_STEP_NUM), t->steps[c->marks[m].step].num);
      enc_stat_i64(&en, fixed_stat(c, S_R), 1);
    }
  }
  /* XLA's is_async: xprof's grouping does not nest what it marks. */
  if (e->flags & TBE_EVF_ASYNC) enc_stat_i64(&en, fixed_stat(c, S_ASYNC), 1);
  if (tr->type != TBE_TRACK_STREAM) {
    if (e->kind != host_kind_default(t, e))
      enc_stat_ref(&en, fixed_stat(c, S_TBE_KIND), kind_ref(c, e->kind));
    if (e->cat) enc_stat_ref(&en, fixed_stat(c, S_TBE_CAT), ntab_str(&c->st, t, e->cat));
  }
  for (uint32_t i = 0; i < e->nargs; i++) {
    const tbe_arg *g = &t->args[e->args + i];
    uint32_t k = ntab_str(&c->st, t, g->key);
    switch (g->type) {
      case TBE_ARG_INT: enc_stat_i64(&en, k, g->v.i); break;
      case TBE_ARG_UINT: enc_stat_u64(&en, k, g->v.u); break;
      case TBE_ARG_DOUBLE: enc_stat_double(&en, k, g->v.d); break;
      default: enc_stat_ref(&en, k, ntab_str(&c->st, t, g->v.s)); break;
    }
  }
  size_t n = (size_t)(en.p - c->scratch);
  uint8_t *d = xw_room(&c->w, n + 11);
  if (!d) return;
  d[0] = TAG(4, WT_LEN);
  size_t h = 1 + put_varint(d + 1, n);
  memcpy(d + h, c->scratch, n);
  c->w.len += h + n;
  c->done++;
  if (c->progress && (c->done & 0xFFFF) == 0) c->progress(c->progress_ctx, c->done, t->nevents);
}

/* ---- lines and planes ---- */

typedef int (*ev_filter)(uint8_t kind);
static int is_nvtx(uint8_t k) { return k == TBE_EV_NVTX_RANGE || k == TBE_EV_NVTX_MARK; }
static int not_nvtx(uint8_t k) { return !is_nvtx(k); }
static int any_kind(uint8_t k) {
  (void)k;
  return 1;
}

/* The event name of step `s`'s marker: the step's name, else
 * "ProfilerStep#<num>" (into `buf`). */
static const char *step_marker_name(const tbe_trace *t, const tbe_step *st, char *buf, size_t size,
                                    size_t *len) {
  if (st->name) {
    *len = tbe_trace_strlen(t, st->name);
    return tbe_trace_str(t, st->name);
  }
  int n = snprintf(buf, size, "ProfilerStep#%lld", (long long)st->num);
  *len = (size_t)n;
  return buf;
}

/* Appends the marker event of step `s` to the current line: the step's
 * span, step_num and _r = 1 (a root for xprof's grouping), and the kind a
 * user annotation, so that it reads back as one and marks the step. */
static void write_step_marker(xctx *c, uint32_t s, int64_t line_start_ns) {
  const tbe_step *st = &c->t->steps[s];
  char nb[48];
  size_t nl;
  const char *nm = step_marker_name(c->t, st, nb, sizeof nb, &nl);
  uint32_t mid = ntab_get(&c->ev, nm, nl);
  uint8_t body[96];
  enc en = {body};
  uint8_t *p = body;
  *p++ = TAG(1, WT_VARINT);
  p += put_varint(p, mid);
  int64_t off = tbe__sat_sub(st->start_ns, line_start_ns), dur = tbe__sat_sub(st->end_ns, st->start_ns);
  if (off > PS_MAX_NS) off = PS_MAX_NS;
  if (dur > PS_MAX_NS) dur = PS_MAX_NS;
  if (off > 0) {
    *p++ = TAG(2, WT_VARINT);
    p += put_varint(p, (uint64_t)off * 1000);
  }
  if (dur > 0) {
    *p++ = TAG(3, WT_VARINT);
    p += put_varint(p, (uint64_t)dur * 1000);
  }
  en.p = p;
  enc_stat_i64(&en, fixed_stat(c, S_STEP_NUM), st->num);
  enc_stat_i64(&en, fixed_stat(c, S_R), 1);
  enc_stat_ref(&en, fixed_stat(c, S_TBE_KIND), kind_ref(c, TBE_EV_USER_ANNOTATION));
  size_t n = (size_t)(en.p - body);
  uint8_t *d = xw_room(&c->w, n + 11);
  if (!d) return;
  d[0] = TAG(4, WT_LEN);
  size_t h = 1 + put_varint(d + 1, n);
  memcpy(d + h, body, n);
  c->w.len += h + n;
}

/* Whether the marker of step `s` goes before event `e` on a line: events
 * are ordered by start, longer first, and a marker goes before an event of
 * the same span (it encloses what the step holds). */
static int marker_first(const tbe_step *st, const tbe_event *e) {
  if (st->start_ns != e->start_ns) return st->start_ns < e->start_ns;
  return tbe__sat_sub(st->end_ns, st->start_ns) >= e->dur_ns;
}

/* Writes one XLine holding the events of `track` that pass `keep` and,
 * when `synth` is set, the markers of the steps [*synth_lo, synth_hi) of
 * c->synth.  Writes nothing when there are none. */
static void write_line(xctx *c, const tbe_track *tr, ev_filter keep, int64_t line_id,
                       const char *name, size_t name_len, size_t synth_lo, size_t synth_hi) {
  const tbe_trace *t = c->t;
  uint32_t first = UINT32_MAX;
  int64_t start = INT64_MAX, end = INT64_MIN;
  for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
    const tbe_event *e = &t->events[i];
    if (!keep(e->kind)) continue;
    if (first == UINT32_MAX) {
      first = i;
      start = e->start_ns;
    }
    int64_t en = tbe__end_ns(e->start_ns, e->dur_ns > 0 ? e->dur_ns : 0);
    if (en > end) end = en;
  }
  for (size_t k = synth_lo; k < synth_hi; k++) {
    const tbe_step *st = &t->steps[c->synth[k].step];
    if (st->start_ns < start) start = st->start_ns;
    if (st->end_ns > end) end = st->end_ns;
  }
  if (first == UINT32_MAX && synth_lo == synth_hi) return;
  uint64_t at = xw_open(&c->w, 3);
  xw_varint_field(&c->w, 1, (uint64_t)line_id);
  xw_str_field(&c->w, 2, name, name_len);
  int64_t rel = tbe__sat_sub(start, t->start_ns);
  if (rel) xw_varint_field(&c->w, 3, (uint64_t)rel);
  int64_t span = tbe__sat_sub(end, start);
  if (span > PS_MAX_NS) span = PS_MAX_NS;
  if (span > 0) xw_varint_field(&c->w, 9, (uint64_t)(span * 1000));
  size_t k = synth_lo;
  if (first != UINT32_MAX)
    for (uint32_t i = first; i < tr->first + tr->count && !c->w.err; i++) {
      if (!keep(t->events[i].kind)) continue;
      while (k < synth_hi && marker_first(&t->steps[c->synth[k].step], &t->events[i]))
        write_step_marker(c, c->synth[k++].step, start);
      write_event(c, i, start);
    }
  while (k < synth_hi && !c->w.err) write_step_marker(c, c->synth[k++].step, start);
  xw_close(&c->w, at);
}

/* Writes the event_metadata and stat_metadata maps of the current plane. */
static void write_metadata(xctx *c) {
  xw *w = &c->w;
  for (int which = 0; which < 2; which++) {
    ntab *nt = which ? &c->st : &c->ev;
    unsigned field = which ? 5 : 4;
    for (size_t id = 1; id <= ntab_count(nt) && !w->err; id++) {
      size_t nl = tbe__intern_len(&nt->in, (uint32_t)id - 1);
      /* value message: id (1), name (2) */
      size_t vlen = 1 + varint_len(id) + 1 + varint_len(nl) + nl;
      /* entry message: key (1), value (2) */
      size_t elen = 1 + varint_len(id) + 1 + varint_len(vlen) + vlen;
      uint8_t *d = xw_room(w, 40);
      if (!d) return;
      size_t n = 0;
      d[n++] = TAG(field, WT_LEN);
      n += put_varint(d + n, elen);
      d[n++] = TAG(1, WT_VARINT);
      n += put_varint(d + n, id);
      d[n++] = TAG(2, WT_LEN);
      n += put_varint(d + n, vlen);
      d[n++] = TAG(1, WT_VARINT);
      n += put_varint(d + n, id);
      d[n++] = TAG(2, WT_LEN);
      n += put_varint(d + n, nl);
      w->len += n;
      xw_bytes(w, tbe__intern_str(&nt->in, (uint32_t)id - 1), nl);
    }
  }
}

/* A plane-level XStat (field 6 of XPlane). */
static void plane_stat(xctx *c, const char *name, int type, uint64_t u, const char *s) {
  uint32_t mid = ntab_get(&c->st, name, strlen(name));
  uint8_t body[32];
  size_t n = 0;
  body[n++] = TAG(1, WT_VARINT);
  n += put_varint(body + n, mid);
  if (type == 's') {
    size_t sl = strlen(s);
    uint8_t *d = xw_room(&c->w, 32);
    if (!d) return;
    size_t h = 0;
    d[h++] = TAG(6, WT_LEN);
    h += put_varint(d + h, n + 1 + varint_len(sl) + sl);
    memcpy(d + h, body, n);
    h += n;
    d[h++] = TAG(5, WT_LEN);
    h += put_varint(d + h, sl);
    c->w.len += h;
    xw_bytes(&c->w, s, sl);
    return;
  }
  body[n++] = type == 'u' ? TAG(3, WT_VARINT) : TAG(4, WT_VARINT);
  n += put_varint(body + n, u);
  uint8_t *d = xw_room(&c->w, 40);
  if (!d) return;
  d[0] = TAG(6, WT_LEN);
  size_t h = 1 + put_varint(d + 1, n);
  memcpy(d + h, body, n);
  c->w.len += h + n;
}

static int cmp_mark(const void *a, const void *b) {
  const step_mark *x = a, *y = b;
  return x->event < y->event ? -1 : x->event > y->event;
}

static int cmp_synth(const void *a, const void *b, void *ctx) {
  const tbe_trace *t = ctx;
  const synth_step *x = a, *y = b;
  if (x->track != y->track) return x->track < y->track ? -1 : 1;
  const tbe_step *p = &t->steps[x->step], *q = &t->steps[y->step];
  if (p->start_ns != q->start_ns) return p->start_ns < q->start_ns ? -1 : 1;
  int64_t dp = tbe__sat_sub(p->end_ns, p->start_ns), dq = tbe__sat_sub(q->end_ns, q->start_ns);
  if (dp != dq) return dp > dq ? -1 : 1;
  return x->step < y->step ? -1 : x->step > y->step;
}

/* The host event on track `k` that carries step `st` (named `name`, same
 * span, on the thread's own line: not NVTX, not GPU work), or UINT32_MAX. */
static uint32_t step_carrier(const tbe_trace *t, size_t k, const tbe_step *st, tbe_str name) {
  const tbe_track *tr = &t->tracks[k];
  if (tr->type == TBE_TRACK_STREAM || !tr->count) return UINT32_MAX;
  /* first event starting at or after the step start */
  uint32_t lo = tr->first, hi = tr->first + tr->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->events[mid].start_ns < st->start_ns) lo = mid + 1;
    else hi = mid;
  }
  for (uint32_t i = lo; i < tr->first + tr->count && t->events[i].start_ns == st->start_ns; i++) {
    const tbe_event *e = &t->events[i];
    if (e->name == name && tbe__end_ns(e->start_ns, e->dur_ns) == st->end_ns &&
        !tbe_event_kind_is_gpu((tbe_event_kind)e->kind) && e->kind != TBE_EV_NVTX_RANGE &&
        e->kind != TBE_EV_NVTX_MARK)
      return i;
  }
  return UINT32_MAX;
}

/* Finds, for each step, the host event that carries it: one on the step's
 * own thread line named like the step's marker, with the step's span; it
 * gets step_num/_r.  A step without one gets a marker event of its own on
 * its track's line (c->synth), or, when its track is unknown, on the "Step
 * markers" line (unmarked[s]).  xprof groups what a root event encloses on
 * its line, so a marker belongs on the thread's line, not on its NVTX
 * line.  Returns the number of steps for the "Step markers" line. */
static size_t mark_steps(xctx *c, uint8_t *unmarked) {
  const tbe_trace *t = c->t;
  size_t left = 0;
  for (size_t s = 0; s < t->nsteps; s++) {
    const tbe_step *st = &t->steps[s];
    char nb[48];
    size_t nl;
    const char *nm = step_marker_name(t, st, nb, sizeof nb, &nl);
    tbe_str name = st->name ? st->name : tbe_trace_find_str(t, nm, nl);
    uint32_t ev = UINT32_MAX;
    int own = st->track < t->ntracks && t->tracks[st->track].type != TBE_TRACK_STREAM;
    if (name != TBE_NONE) {
      if (own) ev = step_carrier(t, st->track, st, name);
      for (size_t k = 0; k < t->ntracks && ev == UINT32_MAX && !own; k++)
        ev = step_carrier(t, k, st, name);
    }
    unmarked[s] = 0;
    if (ev != UINT32_MAX) {
      c->marks[c->nmarks].event = ev;
      c->marks[c->nmarks].step = (uint32_t)s;
      c->nmarks++;
    } else if (own) {
      c->synth[c->nsynth].track = st->track;
      c->synth[c->nsynth].step = (uint32_t)s;
      c->nsynth++;
    } else {
      unmarked[s] = 1;
      left++;
    }
  }
  if (c->nmarks > 1) qsort(c->marks, c->nmarks, sizeof *c->marks, cmp_mark);
  if (c->nsynth > 1) qsort_r(c->synth, c->nsynth, sizeof *c->synth, cmp_synth, (void *)t);
  return left;
}

static void write_step_line(xctx *c, const uint8_t *unmarked) {
  const tbe_trace *t = c->t;
  int64_t start = INT64_MAX, end = INT64_MIN;
  for (size_t s = 0; s < t->nsteps; s++) {
    if (!unmarked[s]) continue;
    if (t->steps[s].start_ns < start) start = t->steps[s].start_ns;
    if (t->steps[s].end_ns > end) end = t->steps[s].end_ns;
  }
  uint64_t at = xw_open(&c->w, 3);
  xw_varint_field(&c->w, 1, 3ull << 32);
  xw_len_field(&c->w, 2, "Step markers", 12);
  if (start != t->start_ns) xw_varint_field(&c->w, 3, (uint64_t)tbe__sat_sub(start, t->start_ns));
  for (size_t s = 0; s < t->nsteps && !c->w.err; s++) {
    if (!unmarked[s]) continue;
    const tbe_step *st = &t->steps[s];
    uint32_t mid;
    if (st->name) {
      mid = ntab_str(&c->ev, t, st->name);
    } else {
      char nb[48];
      int n = snprintf(nb, sizeof nb, "Step %lld", (long long)st->num);
      mid = ntab_get(&c->ev, nb, (size_t)n);
    }
    uint8_t body[96];
    enc en = {body};
    uint8_t *p = body;
    *p++ = TAG(1, WT_VARINT);
    p += put_varint(p, mid);
    int64_t off = tbe__sat_sub(st->start_ns, start), dur = tbe__sat_sub(st->end_ns, st->start_ns);
    if (off > PS_MAX_NS) off = PS_MAX_NS;
    if (dur > PS_MAX_NS) dur = PS_MAX_NS;
    if (off > 0) {
      *p++ = TAG(2, WT_VARINT);
      p += put_varint(p, (uint64_t)off * 1000);
    }
    if (dur > 0) {
      *p++ = TAG(3, WT_VARINT);
      p += put_varint(p, (uint64_t)dur * 1000);
    }
    en.p = p;
    enc_stat_i64(&en, fixed_stat(c, S_STEP_NUM), st->num);
    enc_stat_i64(&en, fixed_stat(c, S_R), 1);
    size_t n = (size_t)(en.p - body);
    uint8_t *d = xw_room(&c->w, n + 11);
    if (!d) return;
    d[0] = TAG(4, WT_LEN);
    size_t h = 1 + put_varint(d + 1, n);
    memcpy(d + h, body, n);
    c->w.len += h + n;
  }
  xw_close(&c->w, at);
}

static int xerr(xctx *c) {
  if (c->w.err) return c->w.err;
  if (c->ev.err) return c->ev.err;
  return c->st.err;
}

/* The pid of the first host thread: the host plane's process_id. */
static int64_t host_pid(const tbe_trace *t) {
  for (size_t k = 0; k < t->ntracks; k++)
    if (t->tracks[k].type == TBE_TRACK_THREAD && t->tracks[k].pid >= 0) return t->tracks[k].pid;
  return -1;
}

/* The pid of the first stream of `dev` with events: its plane's
 * process_id (the importer falls back to the host plane's). */
static int64_t device_pid(const tbe_trace *t, int32_t dev) {
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->type == TBE_TRACK_STREAM && tr->device == dev && tr->count && tr->pid >= 0)
      return tr->pid;
  }
  return host_pid(t);
}

static void write_host_plane(xctx *c, const uint8_t *unmarked, size_t nunmarked) {
  const tbe_trace *t = c->t;
  plane_reset(c);
  uint64_t at = xw_open(&c->w, 1);
  xw_len_field(&c->w, 2, "/host:CPU", 9);
  char name[600];
  for (size_t k = 0; k < t->ntracks && !xerr(c); k++) {
    const tbe_track *tr = &t->tracks[k];
    int has_synth = c->synth_at < c->nsynth && c->synth[c->synth_at].track == k;
    if (tr->type == TBE_TRACK_STREAM || (!tr->count && !has_synth)) continue;
    const char *tn = tbe_trace_str(t, tr->name);
    size_t tl = tbe_trace_strlen(t, tr->name);
    int n;
    if (tl && tl < 500) n = snprintf(name, sizeof name, "%s", tn);
    else if (tr->type == TBE_TRACK_THREAD) n = snprintf(name, sizeof name, "Host Threads/%lld", (long long)tr->tid);
    else n = snprintf(name, sizeof name, "Track %lld/%lld", (long long)tr->pid, (long long)tr->tid);
    int64_t id = tr->type == TBE_TRACK_THREAD ? tr->tid : (int64_t)((2ull << 32) + k);
    size_t lo = c->synth_at;
    while (c->synth_at < c->nsynth && c->synth[c->synth_at].track == k) c->synth_at++;
    write_line(c, tr, not_nvtx, id, name, (size_t)n, lo, c->synth_at);
    n += snprintf(name + n, sizeof name - (size_t)n, "/NVTX");
    /* The NVTX line names its thread by id: 1<<32 + tid (thread names
     * repeat), 4<<32 + track index for other tracks. */
    int64_t nid = tr->type == TBE_TRACK_THREAD && tr->tid >= 0 && tr->tid <= UINT32_MAX
                      ? (int64_t)((1ull << 32) + (uint64_t)tr->tid)
                      : (int64_t)((4ull << 32) + k);
    write_line(c, tr, is_nvtx, nid, name, (size_t)n, 0, 0);
  }
  if (nunmarked && !xerr(c)) write_step_line(c, unmarked);
  /* The process of the host threads, which our importer gives the
   * plane's lines back (threads of other processes: task_env_plane). */
  int64_t pid = host_pid(t);
  if (pid >= 0) plane_stat(c, "process_id", 'i', (uint64_t)pid, NULL);
  write_metadata(c);
  xw_close(&c->w, at);
}

static const char *const STREAM_KINDS[] = {"Compute",   "MemcpyH2D", "MemcpyD2H", "MemcpyD2D",
                                           "MemcpyP2P", "MemcpyOther", "Memset"};

static void write_device_plane(xctx *c, int32_t dev) {
  const tbe_trace *t = c->t;
  plane_reset(c);
  uint64_t at = xw_open(&c->w, 1);
  if (dev) xw_varint_field(&c->w, 1, (uint64_t)(int64_t)dev);
  char name[512];
  int n = snprintf(name, sizeof name, "/device:GPU:%d", (int)dev);
  xw_len_field(&c->w, 2, name, (size_t)n);
  for (size_t k = 0; k < t->ntracks && !xerr(c); k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->type != TBE_TRACK_STREAM || tr->device != dev || !tr->count) continue;
    unsigned kinds = 0;
    for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
      const tbe_event *e = &t->events[i];
      if (e->kind == TBE_EV_KERNEL) kinds |= 1u << 0;
      else if (e->kind == TBE_EV_MEMSET) kinds |= 1u << 6;
      else if (e->kind == TBE_EV_MEMCPY) {
        const tbe_memcpy *m = tbe_trace_memcpy(t, e);
        switch (m ? m->copy_kind : 0) {
          case TBE_COPY_HTOD: kinds |= 1u << 1; break;
          case TBE_COPY_DTOH: kinds |= 1u << 2; break;
          case TBE_COPY_DTOD: kinds |= 1u << 3; break;
          case TBE_COPY_PTOP: kinds |= 1u << 4; break;
          default: kinds |= 1u << 5; break;
        }
      }
    }
    n = snprintf(name, sizeof name, "Stream #%lld", (long long)tr->tid);
    if (kinds) {
      name[n++] = '(';
      int firstk = 1;
      for (int b = 0; b < 7; b++) {
        if (!(kinds & (1u << b))) continue;
        n += snprintf(name + n, sizeof name - (size_t)n, "%s%s", firstk ? "" : ",", STREAM_KINDS[b]);
        firstk = 0;
      }
      name[n++] = ')';
      name[n] = 0;
    }
    write_line(c, tr, any_kind, tr->tid, name, (size_t)n, 0, 0);
  }
  const tbe_device *d = NULL;
  for (size_t i = 0; i < t->ndevices; i++)
    if (t->devices[i].id == dev) d = &t->devices[i];
  plane_stat(c, "device_vendor", 's', 0, "Nvidia");
  if (d) {
    if (d->name) plane_stat(c, "gpu_device_name", 's', 0, tbe_trace_str(t, d->name));
    if (d->clock_khz) plane_stat(c, "clock_rate", 'i', (uint64_t)(int64_t)d->clock_khz, NULL);
    if (d->sm_count) plane_stat(c, "core_count", 'i', (uint64_t)(int64_t)d->sm_count, NULL);
    if (d->memory_bandwidth) plane_stat(c, "memory_bandwidth", 'u', (uint64_t)d->memory_bandwidth, NULL);
    if (d->memory_bytes) plane_stat(c, "memory_size", 'u', (uint64_t)d->memory_bytes, NULL);
    if (d->cc_major || d->cc_minor) {
      plane_stat(c, "compute_cap_major", 'i', (uint64_t)(int64_t)d->cc_major, NULL);
      plane_stat(c, "compute_cap_minor", 'i', (uint64_t)(int64_t)d->cc_minor, NULL);
    }
  }
  int64_t pid = device_pid(t, dev);
  if (pid >= 0) plane_stat(c, "process_id", 'i', (uint64_t)pid, NULL);
  /* After the plane stats, which add stat metadata of their own. */
  write_metadata(c);
  xw_close(&c->w, at);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

static void task_env_plane(xctx *c) {
  plane_reset(c);
  uint64_t at = xw_open(&c->w, 1);
  xw_len_field(&c->w, 2, "Task Environment", 16);
  plane_stat(c, "profile_start_time", 'u', (uint64_t)c->t->start_ns, NULL);
  plane_stat(c, "profile_stop_time", 'u', (uint64_t)c->t->stop_ns, NULL);
  /* Ours, for our importer (xprof reads only the two above from this
   * plane): where the trace came from, and what collecting it lost and
   * cost.  Their presence also says the warnings start with the generic
   * status lines (tbe__status_lines), which the importer leaves out. */
  const tbe_trace *t = c->t;
  plane_stat(c, "tbexport_source", 's', 0, tbe__source_name(t->source));
  /* Tracks of other processes than their plane's process_id (an nsys
   * export of several processes): "TID:PID" for host threads,
   * "DEV/STREAM:PID" for GPU streams, space-separated. */
  int64_t hp = host_pid(t);
  tbe__buf pids;
  tbe__buf_init(&pids, c->w.a);
  for (size_t k = 0; k < t->ntracks; k++) {
    const tbe_track *tr = &t->tracks[k];
    if (tr->pid < 0) continue;
    if (tr->type == TBE_TRACK_THREAD && tr->pid != hp)
      tbe__buf_printf(&pids, "%s%lld:%lld", pids.len ? " " : "", (long long)tr->tid,
                      (long long)tr->pid);
    else if (tr->type == TBE_TRACK_STREAM && tr->count && tr->pid != device_pid(t, tr->device))
      tbe__buf_printf(&pids, "%s%d/%lld:%lld", pids.len ? " " : "", (int)tr->device,
                      (long long)tr->tid, (long long)tr->pid);
  }
  if (pids.err) c->w.err = pids.err;
  else if (pids.len) {
    tbe__buf_putc(&pids, 0);
    if (!pids.err) plane_stat(c, "tbexport_track_pids", 's', 0, (const char *)pids.data);
  }
  tbe__buf_deinit(&pids);
  if (t->dropped_records) plane_stat(c, "tbexport_dropped_records", 'u', t->dropped_records, NULL);
  if (t->dropped_out_of_range)
    plane_stat(c, "tbexport_out_of_range_records", 'u', t->dropped_out_of_range, NULL);
  if (t->overhead_ns) plane_stat(c, "tbexport_cupti_overhead_ns", 'u', t->overhead_ns, NULL);
  if (t->ended_early) plane_stat(c, "tbexport_ended_early", 'i', 1, NULL);
  write_metadata(c);
  xw_close(&c->w, at);
}

/* tbe__status_lines' EMIT: one XSpace.warnings (3) entry. */
static void warning_line(void *ctx, const char *line, size_t len) {
  xw_len_field(ctx, 3, line, len);
}

static int xplane_write(const tbe_trace *t, int fd, const char *host, const tbe_allocator *a,
                        void (*progress)(void *, uint64_t, uint64_t), void *progress_ctx) {
  xctx *c = tbe__calloc(a, 1, sizeof *c);
  if (!c) return TBE_ENOMEM;
  c->t = t;
  c->w.fd = fd;
  c->w.a = a;
  c->w.cap = XW_CAP;
  c->w.buf = tbe__alloc(a, XW_CAP);
  tbe__buf_init(&c->w.fix, a);
  ntab_init(&c->ev, a);
  ntab_init(&c->st, a);
  c->ev.ncache = c->st.ncache = tbe_trace_nstrings(t);
  c->ev.cache = tbe__calloc(a, c->ev.ncache + 1, sizeof(uint32_t));
  c->st.cache = tbe__calloc(a, c->st.ncache + 1, sizeof(uint32_t));
  c->dc = tbe__calloc(a, DC_SIZE, sizeof *c->dc);
  c->scap = 1024;
  c->scratch = tbe__alloc(a, c->scap);
  c->marks = tbe__calloc(a, t->nsteps + 1, sizeof *c->marks);
  c->synth = tbe__calloc(a, t->nsteps + 1, sizeof *c->synth);
  uint8_t *unmarked = tbe__calloc(a, t->nsteps + 1, 1);
  int32_t *devs = tbe__calloc(a, t->ndevices + t->ntracks + 1, sizeof *devs);
  c->progress = progress;
  c->progress_ctx = progress_ctx;
  int rc = 0;
  if (!c->w.buf || !c->ev.cache || !c->st.cache || !c->dc || !c->scratch || !c->marks ||
      !c->synth || !unmarked || !devs) {
    rc = TBE_ENOMEM;
    goto done;
  }

  size_t nunmarked = mark_steps(c, unmarked);
  write_host_plane(c, unmarked, nunmarked);

  size_t nd = 0;
  for (size_t i = 0; i < t->ndevices; i++) devs[nd++] = t->devices[i].id;
  for (size_t i = 0; i < t->ntracks; i++)
    if (t->tracks[i].type == TBE_TRACK_STREAM) devs[nd++] = t->tracks[i].device;
  qsort(devs, nd, sizeof *devs, cmp_i32);
  for (size_t i = 0; i < nd && !xerr(c); i++)
    if (i == 0 || devs[i] != devs[i - 1]) write_device_plane(c, devs[i]);
  if (!xerr(c)) task_env_plane(c);

  /* XSpace.warnings (3) and hostnames (4). */
  uint64_t clamped_src = 0;
  for (size_t i = 0; i < t->nevents; i++) clamped_src += (t->events[i].flags & TBE_EVF_CLAMPED) != 0;
  char msg[200];
  int n;
  tbe__status_lines(t, 1, warning_line, &c->w);
  if (clamped_src) {
    n = snprintf(msg, sizeof msg, "%llu events had a negative duration in the source (clamped to 0)",
                 (unsigned long long)clamped_src);
    xw_len_field(&c->w, 3, msg, (size_t)n);
  }
  if (c->clamped) {
    n = snprintf(msg, sizeof msg,
                 "%llu event offsets or durations exceeded the int64 picosecond range (clamped)",
                 (unsigned long long)c->clamped);
    xw_len_field(&c->w, 3, msg, (size_t)n);
  }
  for (size_t i = 0; i < t->nwarnings; i++)
    xw_str_field(&c->w, 3, tbe_trace_str(t, t->warnings[i]), tbe_trace_strlen(t, t->warnings[i]));
  if (host && *host) xw_str_field(&c->w, 4, host, strlen(host));
  xw_flush(&c->w);
  rc = xerr(c);
  if (!rc && progress) progress(progress_ctx, t->nevents, t->nevents);

done:
  ntab_free(&c->ev);
  ntab_free(&c->st);
  tbe__free(a, c->dc);
  tbe__free(a, c->scratch);
  tbe__free(a, c->marks);
  tbe__free(a, c->synth);
  tbe__free(a, unmarked);
  tbe__free(a, devs);
  tbe__free(a, c->w.buf);
  tbe__buf_deinit(&c->w.fix);
  tbe__free(a, c);
  return rc;
}

static int xplane_file(const tbe_trace *t, const tbe_allocator *a, const char *dir,
                       const char *name, const char *host, int force, int durable,
                       void (*progress)(void *, uint64_t, uint64_t), void *progress_ctx) {
  tbe__afile f;
  int rc = tbe__afile_open(&f, a, dir, name, force);
  if (rc) return rc;
  rc = xplane_write(t, f.fd, host, a, progress, progress_ctx);
  if (rc) {
    tbe__afile_abort(&f);
    return rc;
  }
  return tbe__afile_commit(&f, durable, force);
}

int tbe_export_xplane(const tbe_trace *t, const char *path, int force) {
  if (!t || !path || !*path) return TBE_EINVAL;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  char *dir;
  const char *name;
  int rc = tbe__path_split(&a, path, &dir, &name);
  if (rc) return rc;
  /* The host name recorded inside is the trace's own (text, not a path). */
  rc = xplane_file(t, &a, dir, name, tbe_trace_str(t, t->host), force, 0, NULL, NULL);
  tbe__free(&a, dir);
  return rc;
}

static int xplane_export(const tbe__export_ctx *x, int fd) {
  tbe_allocator a;
  tbe__allocator_init(&a, x->a);
  return xplane_write(x->trace, fd, x->host, &a, x->progress, x->progress_ctx);
}

const tbe__exporter tbe__exporter_xplane = {"xplane", TBE_OUT_XPLANE, xplane_export};
