/* export_xplane_int.h: the parts of the XSpace output and what they
 * share (export_xplane.c holds the output's essay and invariants).
 *
 *   export_xplane.c        the stream writer, the per-plane name tables,
 *                          lines, planes, the Task Environment, the entry
 *   export_xplane_event.c  one XEvent: metadata, stats, detail strings,
 *                          the hot per-event encoder
 *
 * The writer streams hand-written protobuf through one buffer (xw); an
 * event is encoded into the scratch area of the exporter state (xctx)
 * with the small encoders below, inline because they run several times
 * per event. */
#ifndef TBE_TRACE_EXPORT_XPLANE_INT_H
#define TBE_TRACE_EXPORT_XPLANE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/intern.h"
#include "common/map.h"
#include "common/pbwire.h"
#include "tbexport/error.h"
#include "tbexport/trace.h"
#include "trace/export/export_xplane_ntab.h"
#include "trace/export/export_xplane_wire.h"
#include "trace/exporter.h"

#define XW_CAP (1u << 20)
#define PS_MAX_NS (INT64_MAX / 1000)

/* ---- output: export_xplane_wire.h ---- */

/* Field tags (all our field numbers are < 16: one byte). */
#define TAG(f, wt) ((uint8_t)(((f) << 3) | (wt)))
#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2

/* ---- per-plane name tables: export_xplane_ntab.h ---- */

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
  S_TF_OP,
  S_SRC_TF_OP,
  S_MEMALLOC_DETAILS,
  S_MEMFREE_DETAILS,
  S_MEM_SOURCE,
  S_MEM_KIND,
  S_MEM_DEVTYPE,
  S__COUNT
};

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

/* The names of the fixed stats (export_xplane_event.c). */
extern const char *const tbe__xstat_names[S__COUNT];

typedef struct xctx {
  const tbe_trace *t;
  xw w;
  ntab ev;   /* event metadata */
  ntab st;   /* stat metadata */
  uint32_t fixed[S__COUNT];
  dcache_ent *dc;
  uint64_t seed; /* the toolbox's hash key (common/map.h), read once */
  uint32_t gen;
  uint8_t *scratch;
  size_t scap;
  step_mark *marks;
  size_t nmarks;
  synth_step *synth;
  size_t nsynth, synth_at; /* synth_at: the next one to write (tracks in order) */
  /* Framework operators as xprof reads host ops (tf_op): the name of the
   * CPU operator of each external id, for the GPU work it launched (an
   * array indexed by id when the ids are dense, as the model's and
   * Kineto's are, else a map: the GPU work of a stream looks its ids up in
   * time order, so the array is read nearly in sequence where a hash table
   * missed the cache on each), the tf_op value of each operator name (by
   * string id, tagged with the plane's gen), and the string "tf_op"
   * (TBE_NONE when no event has such an arg). */
  tbe_str *ext_name; /* [id] -> operator name + 1, 0 none (ext_n entries) */
  size_t ext_n;
  tbe__map ext_map;   /* id -> operator name, when the ids are sparse */
  uint64_t *tf_cache; /* [string id] -> gen << 32 | stat metadata id */
  int tf_ops;         /* operators get a tf_op (not in XLA's own traces) */
  tbe_str k_tf_op;
  uint64_t clamped; /* durations/offsets beyond what int64 picoseconds hold */
  uint64_t done;
  void (*progress)(void *, uint64_t, uint64_t);
  void *progress_ctx;
} xctx;

static inline uint32_t fixed_stat(xctx *c, int which) {
  if (!c->fixed[which])
    c->fixed[which] = tbe__ntab_get(&c->st, tbe__xstat_names[which], strlen(tbe__xstat_names[which]));
  return c->fixed[which];
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
  n += tbe__pb_put_varint(body + n, mid);
  body[n++] = TAG(3, WT_VARINT);
  n += tbe__pb_put_varint(body + n, v);
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
  n += tbe__pb_put_varint(body + n, mid);
  body[n++] = TAG(4, WT_VARINT);
  n += tbe__pb_put_varint(body + n, (uint64_t)v);
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
  n += tbe__pb_put_varint(body + n, mid);
  body[n++] = TAG(7, WT_VARINT);
  n += tbe__pb_put_varint(body + n, ref);
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
  n += tbe__pb_put_varint(body + n, mid);
  body[n++] = TAG(2, WT_I64);
  memcpy(body + n, &v, 8); /* little-endian hosts only, as protobuf-c */
  n += 8;
  *p++ = TAG(4, WT_LEN);
  *p++ = (uint8_t)n;
  memcpy(p, body, n);
  e->p = p + n;
}

/* ---- one event (export_xplane_event.c) ---- */

/* The ref of a tbexport_kind value (the kind's name in stat metadata). */
uint32_t tbe__xp_kind_ref(xctx *c, uint8_t kind);

/* Writes event `idx` (an XEvent field of the open line whose timestamp is
 * line_start_ns) through c->w; counts progress. */
void tbe__xp_write_event(xctx *c, uint32_t idx, int64_t line_start_ns);

#endif
