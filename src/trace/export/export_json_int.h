/* export_json_int.h: the parts of the Chrome JSON output and what they
 * share (export_json.c holds the output's essay and invariants).
 *
 *   export_json.c        the document: top-level keys, metadata events,
 *                        the tail, the entry points
 *   export_json_write.c  the writer core: numbers, the sink (plain, or
 *                        gzip in independent parts)
 *   export_json_esc.c    the escape cache of the trace's strings
 *                        (export_json_esc.h)
 *   export_json_event.c  one event (the hot path and the general one, args,
 *                        launch flows) and the step markers
 *   export_json_pipe.c   the events in chunks on the ordered worker pool
 *
 * Everything here is formatted into a tbe__buf (common/buf.h) with a
 * sticky error, checked once per part.  The small writers are inline: the
 * event formatters call them several times per event, and a call across
 * files would not be inlined. */
#ifndef TBE_TRACE_EXPORT_JSON_INT_H
#define TBE_TRACE_EXPORT_JSON_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "common/buf.h"
#include "common/map.h"
#include "common/utf8.h"
#include "tbexport/trace.h"
#include "trace/export/export_json_num.h"
#include "trace/exporter.h"

/* Kineto shows a sync's stream on the row "stream <id> (sync)", this far
 * from the stream's own row (output_json.h kSyncStreamTidOffset), so that it
 * does not overlap the stream's work. */
#define KINETO_SYNC_TID_OFFSET 1000000

/* ---- the text buffer ---- */

typedef tbe__buf jw;

/* Makes room for n more bytes; returns the write pointer, or NULL after an
 * allocation failure (sticky in w->err; callers then skip their write).
 * tbe__buf_reserve with its fast path inline. */
static inline char *jw_room(jw *w, size_t n) {
  if (w->data && w->cap - w->len >= n) return (char *)w->data + w->len;
  return (char *)tbe__buf_reserve(w, n);
}

static inline void jw_mem(jw *w, const void *p, size_t n) {
  char *d = jw_room(w, n);
  if (!d) return;
  memcpy(d, p, n);
  w->len += n;
}

/* String literals only: sizeof of anything else is a pointer's size. */
#define JW_LIT(w, s) jw_mem((w), "" s, sizeof(s) - 1)

static inline void jw_cstr(jw *w, const char *s) { jw_mem(w, s, strlen(s)); }

/* Writes "<escaped s>" (with quotes) for text not in the string table:
 * JSON strings as data (common/utf8.h). */
static inline void jw_qstr(jw *w, const char *s, size_t n) { tbe__json_quote(w, s, n, 0); }
static inline void jw_qcstr(jw *w, const char *s) { jw_qstr(w, s, strlen(s)); }

/* ---- numbers (export_json_num.h) ---- */

static inline void jw_u64(jw *w, uint64_t v) {
  char *d = jw_room(w, 24);
  if (d) w->len += put_u64(d, v);
}
static inline void jw_i64(jw *w, int64_t v) {
  char *d = jw_room(w, 24);
  if (d) w->len += put_i64(d, v);
}

static inline void jw_double(jw *w, double v) {
  char *d = jw_room(w, 40);
  if (d) w->len += tbe__jw_fmt_double(d, v);
}

/* ---- pointer writers for the hot path: the caller reserved the room ---- */

#define PL(p, lit) (memcpy((p), "" lit, sizeof(lit) - 1), (p) + sizeof(lit) - 1)

static inline char *p_u64(char *p, uint64_t v) { return p + put_u64(p, v); }
static inline char *p_i64(char *p, int64_t v) { return p + put_i64(p, v); }
static inline char *p_us(char *p, int64_t ns) { return p + put_us(p, ns); }
static inline char *p_qstr(char *p, const char *s, size_t n) {
  *p++ = '"';
  memcpy(p, s, n);
  p += n;
  *p++ = '"';
  return p;
}

/* ---- the formatter's context ---- */

/* A small direct-mapped cache of formatted floats: kernels repeat the same
 * few occupancy/blocks-per-SM values, and snprintf+strtof per kernel would
 * dominate the export time. */
typedef struct fcache_ent {
  uint32_t bits;
  uint8_t valid, len;
  char text[22];
} fcache_ent;

#define FCACHE_BITS 10 /* two-way: pairs of entries, most recent first */
#define FCACHE_SIZE (1u << FCACHE_BITS)

/* A step no ProfilerStep#N event carries: its marker event is written
 * before event `pos` (nevents: after the last), on the row of `track`. */
typedef struct jsynth {
  uint32_t pos;
  uint32_t step;
  uint32_t track;
} jsynth;

/* What formatting reads and writes.  The document's copy holds the head
 * and the tail; each worker of the event pipeline formats with a copy of
 * its own (its `w` a chunk's buffer, its fcache its own), and all share
 * what the copies point to, read-only while the workers run. */
typedef struct jctx {
  const tbe_trace *t;
  jw w;
  int64_t base;
  /* Escaped strings: esc[id] = 0 unknown, 1 = the text needs no escaping,
   * else 2 + offset of [u32 len][bytes] in escbuf.  Filled for every
   * string before the events are formatted (tbe__jw_esc_all). */
  uint64_t *esc;
  size_t nesc;
  tbe__buf escbuf;
  fcache_ent fcache[FCACHE_SIZE];
  uint64_t seed; /* the toolbox's hash key (common/map.h), for the fcache */
  int first_event;
  /* Interned ids of the arg keys written from typed fields (TBE_NONE when
   * the trace does not contain the key), to skip them among generic args. */
  tbe_str k_ext, k_corr, k_device, k_context, k_stream, k_queued, k_regs, k_shmem, k_dynshmem,
      k_bps, k_wps, k_grid, k_block, k_occ, k_bytes, k_bw, k_from, k_to, k_domain, k_color,
      k_category, k_payload, k_value, k_treserved, k_tallocated, k_bytes2, k_devid, k_devtype,
      k_addr, k_memsrc, k_memkind, k_synckind, k_event, k_waitev;
  /* The range profiler's figures (tbe_kernel_metrics) of the kernels
   * they describe, written on each as the arg "range profiler": entries
   * by tbe__jw_kfig_key(name, device), and each entry's verdict
   * (tbe_bound, from the trace's analysis).  NULL without any. */
  const tbe__map *kfig;
  const uint8_t *kfig_bound;
  /* Steps without an event named ProfilerStep#N: a marker event each,
   * sorted by pos, then like events (tbe__jw_plan_steps). */
  jsynth *synth;
  size_t nsynth;
  void (*progress)(void *, uint64_t, uint64_t);
  void *progress_ctx;
} jctx;

/* ---- the sink (export_json_write.c) ----
 *
 * The parts of the document in order, written plain, or deflated each as
 * an independent raw deflate stream (see export_json_write.c) inside one
 * gzip member. */

typedef struct gzpart {
  unsigned char *out;
  size_t out_len, out_cap;
  uLong crc;
  int rc;
} gzpart;

typedef struct jsink {
  tbe__sink *out; /* where the bytes go (exporter.h) */
  int gzip;
  int err;
  uLong crc;
  uint64_t total; /* uncompressed bytes */
  const tbe_allocator *a;
} jsink;

/* Deflates `len` bytes of `in` into z (grown as needed); `last` ends the
 * deflate stream.  Thread-safe: touches only z. */
void tbe__jw_gz_compress(const tbe_allocator *a, const char *in, size_t len, int last,
                         gzpart *z);
void tbe__jw_sink_start(jsink *k);
/* Writes one part: its text (plain), or its compressed form `z` (gzip;
 * compressed here when `z` is NULL). */
void tbe__jw_sink_part(jsink *k, const char *text, size_t len, const gzpart *z, int last);
void tbe__jw_sink_end(jsink *k);

/* ---- events (export_json_event.c) ---- */

/* Row of a track: pid and tid as Kineto shows them (GPU: pid = device,
 * tid = stream; a GPU's metric counters: pid = device, tid 0; a negative stream, as of a context sync, as its absolute
 * value, like Kineto's sanitizeTid). */
static inline void track_row(const tbe_track *tr, int64_t *pid, int64_t *tid) {
  if (tbe_track_is_metric(tr)) { /* a GPU's counters: process-wide, in the GPU's pid */
    *pid = tr->device;
    *tid = 0;
  } else if (tr->type == TBE_TRACK_STREAM) {
    *pid = tr->device;
    *tid = tr->tid >= 0 ? tr->tid : tr->tid == INT64_MIN ? 0 : -tr->tid;
  } else {
    *pid = tr->pid;
    *tid = tr->tid;
  }
}

/* Sets c->k_*: the interned ids of the keys the typed args write. */
void tbe__jw_keys(jctx *c);
/* Writes event `idx` (and its launch flow end), with its separator. */
void tbe__jw_event(jctx *c, uint32_t idx);
/* A flow end; `cat` non-NULL means the launch flows ("ac2g"), else the
 * model flow's own cat and name. */
void tbe__jw_flow_end(jctx *c, const char *ph, uint64_t id, const char *cat, tbe_str cat_id,
                      tbe_str name_id, int64_t pid, int64_t tid, int64_t ts, int enclosing);

/* Plans the step markers (c->synth); returns 1 when the document must list
 * the steps ("tbexportSteps"), 0 when their events say it all, or a
 * negative code. */
int tbe__jw_plan_steps(jctx *c);
/* Writes the marker of c->synth[i]. */
void tbe__jw_step_marker(jctx *c, size_t i);
/* The first marker to write at or after event `pos`. */
size_t tbe__jw_synth_from(const jctx *c, uint32_t pos);
/* "tbexportSteps": every step, exactly. */
void tbe__jw_steps_key(jctx *c);

/* ---- the events in parallel (export_json_pipe.c) ---- */

/* Writes the events [0, nevents) through the sink with `threads`
 * formatting threads (0: the default; 1: all on the calling thread).
 * Returns 0 or an error. */
int tbe__jw_events(jctx *c, jsink *sink, int threads);

/* The key of kernel figures of `name` on GPU `device` (jctx.kfig). */
static inline uint64_t tbe__jw_kfig_key(tbe_str name, int32_t device) {
  return (uint64_t)name << 32 | (uint32_t)device;
}

#endif
