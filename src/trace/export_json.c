/* export_json.c: the Chrome-trace JSON output, in Kineto's layout.
 *
 * Writes one finished trace as the object form PyTorch's profiler writes:
 * schemaVersion, deviceProperties, distributedInfo, displayTimeUnit,
 * baseTimeNanoseconds, traceEvents, traceName.  Host threads are rows
 * (pid, tid); GPU work goes on pid = device, tid = stream; every X event has
 * a `cat`; kernel, memcpy, memset and API-call args carry Kineto's names;
 * each resolved correlation link becomes an "ac2g" flow pair (an "s" on the
 * launching API call, an "f" with "bp":"e" on the GPU op, id = correlation),
 * and the model's other flows (fwdbwd, ...) follow.  Generic args are
 * re-emitted after the typed ones (skipping keys already written) so that
 * importing the output gives back the same model.  What Kineto's layout has
 * no place for goes under our own top-level keys, read back by
 * src/import/chrome_json.c: tbexportTrace (source, host, window),
 * tbexportCollection, tbexportWarnings, tbexportSteps.  Syncs sit where
 * Kineto puts them (pid = device, tid = stream; a stream sync on the row
 * "stream N (sync)", tid + 1000000); a step that no ProfilerStep#N event
 * carries gets one (a user_annotation on its thread), as HTA and
 * torch-tb-profiler find steps by that name.
 *
 * Invariants:
 * - Times are printed from integer nanoseconds as exact microseconds with
 *   three decimals, relative to baseTimeNanoseconds, never through a float
 *   format (a double cannot hold epoch microseconds to the nanosecond).
 * - Every string is valid JSON: control characters become \u00XX, quotes and
 *   backslashes are escaped, invalid UTF-8 becomes U+FFFD.  Each interned
 *   string is escaped once and cached by id, so a kernel name seen a million
 *   times is scanned once.
 * - The document is produced in parts: the head (top-level fields and the
 *   metadata events) and the tail (model flows, traceName) on the calling
 *   thread, the events in chunks of 2048 formatted by worker threads (the
 *   online CPUs, at most 32) into a ring of buffers that the calling thread
 *   writes (or, gzip, that the workers deflate) strictly in order.  The
 *   bytes do not depend on the number of threads (tested); nothing is
 *   allocated per event.  The file it writes into is staged by
 *   export_run.c (a run) or an atomic file (tbe__afile_*, a single file):
 *   it appears complete under its final name or not at all.
 *
 * Position: an output of src/trace (exporter table entry "json"); reads only
 * the model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/checked.h"
#include "common/fsutil.h"
#include "common/pool.h"
#include "common/utf8.h"
#include "tbexport/error.h"
#include "tbexport/export.h"
#include "trace/export_json.h"
#include "trace/exporter.h"

/* Kineto floors its base time to this many seconds (~a quarter year), so
 * ranks on different hosts share one base (output_json.h). */
#define KINETO_BASE_PERIOD_S 7889238LL

#define GZ_LEVEL 1  /* measured (bench_export): level 1 is ~2.5x faster than 6 for ~25% more bytes */

/* Every part of the document (the head, each chunk of events, the tail)
 * is formatted into a growable buffer with a sticky error (common/buf.h),
 * in memory, and handed to the sink afterwards. */
typedef tbe__buf jw;

/* Makes room for n more bytes; returns the write pointer, or NULL after an
 * allocation failure (sticky in w->err; callers then skip their write).
 * tbe__buf_reserve with its fast path inline: the event formatters call
 * it several times per event. */
static inline char *jw_room(jw *w, size_t n) {
  if (w->data && w->cap - w->len >= n) return (char *)w->data + w->len;
  return (char *)tbe__buf_reserve(w, n);
}

static void jw_mem(jw *w, const void *p, size_t n) {
  char *d = jw_room(w, n);
  if (!d) return;
  memcpy(d, p, n);
  w->len += n;
}

/* ---- the sink: the parts in document order, plain or gzip ----
 *
 * gzip output is compressed in parallel like pigz's independent mode: each
 * part (the head, every chunk of events, the tail) is deflated as a fresh
 * raw deflate stream ending with a sync flush (the tail with the final
 * block), so the concatenation is one valid deflate stream with no
 * back-reference across parts.  The parts' CRC-32s are combined in order
 * (crc32_combine), and one gzip header and trailer wrap the whole: a
 * single-member .gz every reader accepts.  The parts depend only on the
 * chunk size, never on the number of threads, so the compressed bytes are
 * the same whatever the thread count.  Independent parts cost ~1% in size. */
typedef struct gzpart {
  unsigned char *out;
  size_t out_len, out_cap;
  uLong crc;
  int rc;
} gzpart;

typedef struct jsink {
  int fd;
  int gzip;
  int err;
  uLong crc;
  uint64_t total; /* uncompressed bytes */
  const tbe_allocator *a;
} jsink;

static void sink_write(jsink *k, const void *p, size_t n) {
  if (k->err || !n) return;
  int rc = tbe__write_all(k->fd, p, n);
  if (rc) k->err = rc;
}

/* Deflates `len` bytes of `in` into z (grown as needed); `last` ends the
 * deflate stream.  Thread-safe: touches only z. */
static void gz_compress(const tbe_allocator *a, const char *in, size_t len, int last, gzpart *z) {
  z->rc = 0;
  z->out_len = 0;
  z->crc = crc32(0L, (const Bytef *)in, (uInt)len);
  /* room for incompressible input: stored blocks plus the flush marker */
  size_t need = len + len / 1000 + 64 + 5 * (len / 16000 + 1);
  if (z->out_cap < need) {
    unsigned char *o = tbe__realloc(a, z->out, z->out_cap, need);
    if (!o) {
      z->rc = TBE_ENOMEM;
      return;
    }
    z->out = o;
    z->out_cap = need;
  }
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    z->rc = TBE_ENOMEM;
    return;
  }
  zs.next_in = (Bytef *)(uintptr_t)in;
  zs.avail_in = (uInt)len;
  zs.next_out = z->out;
  zs.avail_out = (uInt)z->out_cap;
  int zr = deflate(&zs, last ? Z_FINISH : Z_SYNC_FLUSH);
  if ((last ? zr != Z_STREAM_END : zr != Z_OK) || zs.avail_in != 0) z->rc = TBE_EIO;
  z->out_len = z->out_cap - zs.avail_out;
  deflateEnd(&zs);
}

/* Writes one part: its text (plain), or its compressed form `z` (gzip;
 * compressed here when `z` is NULL). */
static void sink_part(jsink *k, const char *text, size_t len, const gzpart *z, int last) {
  if (k->err) return;
  if (!k->gzip) {
    k->total += len;
    sink_write(k, text, len);
    return;
  }
  gzpart own = {0};
  if (!z) {
    gz_compress(k->a, text, len, last, &own);
    z = &own;
  }
  if (z->rc) {
    k->err = z->rc;
  } else {
    k->crc = crc32_combine(k->crc, z->crc, (z_off_t)len);
    k->total += len;
    sink_write(k, z->out, z->out_len);
  }
  tbe__free(k->a, own.out);
}

static void sink_start(jsink *k) {
  if (!k->gzip) return;
  k->crc = crc32(0L, Z_NULL, 0);
  /* gzip header: magic, deflate, no flags, no mtime, no extra flags, OS unix */
  static const unsigned char hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  sink_write(k, hdr, sizeof hdr);
}

/* The gzip trailer: CRC-32 and size mod 2^32, little-endian. */
static void sink_end(jsink *k) {
  if (!k->gzip) return;
  unsigned char tr[8];
  uint32_t crc = (uint32_t)k->crc, isize = (uint32_t)k->total;
  for (int i = 0; i < 4; i++) {
    tr[i] = (unsigned char)(crc >> (8 * i));
    tr[4 + i] = (unsigned char)(isize >> (8 * i));
  }
  sink_write(k, tr, 8);
}

/* String literals only: sizeof of anything else is a pointer's size. */
#define JW_LIT(w, s) jw_mem((w), "" s, sizeof(s) - 1)

static void jw_cstr(jw *w, const char *s) { jw_mem(w, s, strlen(s)); }

/* ---- numbers ---- */

static const char DIGITS2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Writes the decimal form of v at p; returns the number of bytes (<= 20). */
static inline size_t put_u64(char *p, uint64_t v) {
  char tmp[24];
  char *e = tmp + sizeof tmp, *s = e;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    s -= 2;
    memcpy(s, DIGITS2 + 2 * r, 2);
  }
  if (v >= 10) {
    s -= 2;
    memcpy(s, DIGITS2 + 2 * v, 2);
  } else {
    *--s = (char)('0' + v);
  }
  size_t n = (size_t)(e - s);
  memcpy(p, s, n);
  return n;
}

static inline size_t put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p = '-';
    return 1 + put_u64(p + 1, (uint64_t)0 - (uint64_t)v);
  }
  return put_u64(p, (uint64_t)v);
}

/* Nanoseconds as microseconds with exactly three decimals ("12.345"). */
static inline size_t put_us(char *p, int64_t ns) {
  size_t n = 0;
  uint64_t u;
  if (ns < 0) {
    p[n++] = '-';
    u = (uint64_t)0 - (uint64_t)ns;
  } else {
    u = (uint64_t)ns;
  }
  n += put_u64(p + n, u / 1000);
  unsigned r = (unsigned)(u % 1000);
  p[n] = '.';
  p[n + 1] = (char)('0' + r / 100);
  memcpy(p + n + 2, DIGITS2 + 2 * (r % 100), 2);
  return n + 4;
}

static void jw_u64(jw *w, uint64_t v) {
  char *d = jw_room(w, 24);
  if (d) w->len += put_u64(d, v);
}
static void jw_i64(jw *w, int64_t v) {
  char *d = jw_room(w, 24);
  if (d) w->len += put_i64(d, v);
}

/* Shortest "%.Ng" form that reads back as the same double (N = 15..17);
 * integral values keep a ".0" so they re-import as doubles.  Non-finite
 * values are not JSON: they become null. */
static size_t fmt_double(char *out, double v) {
  if (!isfinite(v)) {
    memcpy(out, "null", 4);
    return 4;
  }
  if (v == floor(v) && fabs(v) < 1e15) {
    size_t n = put_i64(out, (int64_t)v);
    if (v == 0 && signbit(v)) {
      memcpy(out, "-0.0", 4);
      return 4;
    }
    memcpy(out + n, ".0", 2);
    return n + 2;
  }
  int n = 0;
  for (int prec = 15; prec <= 17; prec++) {
    n = snprintf(out, 32, "%.*g", prec, v);
    if (strtod(out, NULL) == v) break;
  }
  return (size_t)n;
}

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

/* A small direct-mapped cache of formatted floats: kernels repeat the same
 * few occupancy/blocks-per-SM values, and snprintf+strtof per kernel would
 * dominate the export time. */
typedef struct fcache_ent {
  uint32_t bits;
  uint8_t valid, len;
  char text[22];
} fcache_ent;

#define FCACHE_SIZE 1024 /* two-way: pairs of entries, most recent first */

typedef struct jctx {
  const tbe_trace *t;
  jw w;
  int64_t base;
  /* Escaped strings: esc[id] = 0 unknown, 1 = the text needs no escaping,
   * else 2 + offset of [u32 len][bytes] in escbuf. */
  uint64_t *esc;
  size_t nesc;
  tbe__buf escbuf;
  fcache_ent fcache[FCACHE_SIZE];
  int first_event;
  /* Interned ids of the arg keys written from typed fields (TBE_NONE when
   * the trace does not contain the key), to skip them among generic args. */
  tbe_str k_ext, k_corr, k_device, k_context, k_stream, k_queued, k_regs, k_shmem, k_dynshmem,
      k_bps, k_wps, k_grid, k_block, k_occ, k_bytes, k_bw, k_from, k_to, k_domain, k_color,
      k_category, k_payload, k_value, k_treserved, k_tallocated, k_bytes2, k_devid, k_devtype,
      k_addr, k_synckind, k_event, k_waitev;
  /* Steps without an event named ProfilerStep#N: a marker event each,
   * written before event `pos` (jsynth, sorted by pos, then like events). */
  struct jsynth *synth;
  size_t nsynth;
  void (*progress)(void *, uint64_t, uint64_t);
  void *progress_ctx;
} jctx;

/* The formatted text of a float, through the two-way cache. */
static const fcache_ent *float_text(jctx *c, float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  uint32_t h = (bits ^ (bits >> 15)) * 0x9E3779B1u;
  fcache_ent *e = &c->fcache[(h >> 22) & ~1u];
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

static void jw_double(jw *w, double v) {
  char *d = jw_room(w, 40);
  if (d) w->len += fmt_double(d, v);
}

/* ---- strings ---- */

/* Writes "<escaped s>" (with quotes) for text not in the string table:
 * JSON strings as data (common/utf8.h). */
static void jw_qstr(jw *w, const char *s, size_t n) { tbe__json_quote(w, s, n, 0); }

static void jw_qcstr(jw *w, const char *s) { jw_qstr(w, s, strlen(s)); }

/* The JSON text of an interned string (escaped, without quotes) through
 * the escape cache.  Returns 0, or TBE_ENOMEM / TBE_ETOOBIG (sticky in the
 * writer). */
static int esc_get(jctx *c, tbe_str id, const char **out, size_t *out_len) {
  const char *s = tbe_trace_str(c->t, id);
  size_t n = tbe_trace_strlen(c->t, id);
  uint64_t e = c->esc[id];
  if (e == 0) {
    if (tbe__json_plain(s, n)) {
      e = 1;
    } else {
      tbe__buf *eb = &c->escbuf;
      uint8_t *d = n <= (UINT32_MAX - 4) / 6 ? tbe__buf_reserve(eb, 4 + TBE__JSON_ROOM(n)) : NULL;
      if (!d) {
        if (!c->w.err) c->w.err = eb->err ? eb->err : TBE_ETOOBIG;
        return c->w.err;
      }
      uint32_t l = (uint32_t)tbe__json_escape((char *)d + 4, s, n, 0);
      memcpy(d, &l, 4);
      e = 2 + eb->len;
      eb->len += 4 + l;
    }
    c->esc[id] = e;
  }
  if (e == 1) {
    *out = s;
    *out_len = n;
  } else {
    uint32_t l;
    memcpy(&l, c->escbuf.data + (e - 2), 4);
    *out = (const char *)c->escbuf.data + (e - 2) + 4;
    *out_len = l;
  }
  return 0;
}

/* Writes an interned string, quoted, through the escape cache. */
static void jw_str(jctx *c, tbe_str id) {
  jw *w = &c->w;
  const char *s;
  size_t n;
  if (id >= c->nesc) {
    jw_qstr(w, tbe_trace_str(c->t, id), tbe_trace_strlen(c->t, id));
    return;
  }
  if (esc_get(c, id, &s, &n)) return;
  char *d = jw_room(w, n + 2);
  if (!d) return;
  d[0] = '"';
  memcpy(d + 1, s, n);
  d[n + 1] = '"';
  w->len += n + 2;
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

/* Kineto shows a sync's stream on the row "stream <id> (sync)", this far
 * from the stream's own row (output_json.h kSyncStreamTidOffset), so that it
 * does not overlap the stream's work. */
#define KINETO_SYNC_TID_OFFSET 1000000

/* Row of a track: pid and tid as Kineto shows them (GPU: pid = device,
 * tid = stream; a negative stream, as of a context sync, as its absolute
 * value, like Kineto's sanitizeTid). */
static void track_row(const tbe_track *tr, int64_t *pid, int64_t *tid) {
  if (tr->type == TBE_TRACK_STREAM) {
    *pid = tr->device;
    *tid = tr->tid >= 0 ? tr->tid : tr->tid == INT64_MIN ? 0 : -tr->tid;
  } else {
    *pid = tr->pid;
    *tid = tr->tid;
  }
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
    jw_str(c, e->cat);
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
    jw_str(c, e->name);
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
      return k == c->k_treserved || k == c->k_tallocated || k == c->k_bytes2 ||
             k == c->k_devid || k == c->k_devtype || k == c->k_addr;
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
    jw_str(c, g->key);
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
      default: jw_str(c, g->v.s); break;
    }
  }
}

/* A flow end; `cat` non-NULL means the launch flows ("ac2g"), else the
 * model flow's own cat and name. */
static void flow_end(jctx *c, const char *ph, uint64_t id, const char *cat, tbe_str cat_id,
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
  jw_str(c, cat_id);
  JW_LIT(w, ",\"name\":");
  jw_str(c, name_id);
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
    memcpy(p, DIGITS2 + 2 * (r % 100), 2);
    return p + 2;
  }
  return p + fmt_double(p, gbps);
}

/* The hot path for the duration events that make up most traces (kernels,
 * copies, memsets, API calls, CPU ops, annotations): one reservation, then
 * plain pointer writes.  Produces exactly what the general path would. */
static void write_hot(jctx *c, const tbe_event *e, const tbe_track *tr) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  const char *nm, *ct;
  size_t nl, cl;
  char nb[96];
  if ((e->kind == TBE_EV_MEMCPY && tbe_trace_memcpy(t, e)) ||
      (e->kind == TBE_EV_MEMSET && tbe_trace_memset(t, e)) || (e->name == 0 &&
      (e->kind == TBE_EV_MEMCPY || e->kind == TBE_EV_MEMSET))) {
    /* Copies and memsets get Kineto's names, which carry the direction and
     * the memory kinds (ASCII), unless theirs is that name already: another
     * producer's name (XLA's "MemcpyH2D") would not read back as the same
     * copy. */
    int n;
    if (e->kind == TBE_EV_MEMCPY) {
      const tbe_memcpy *m = tbe_trace_memcpy(t, e);
      n = snprintf(nb, sizeof nb, "Memcpy %s (%s -> %s)",
                   tbe_copy_kind_name((tbe_copy_kind)(m ? m->copy_kind : 0)),
                   mem_kind_title(m ? m->src_kind : 0), mem_kind_title(m ? m->dst_kind : 0));
    } else {
      const tbe_memset *m = tbe_trace_memset(t, e);
      n = snprintf(nb, sizeof nb, "Memset (%s)", mem_kind_title(m ? m->mem_kind : 0));
    }
    nm = nb;
    nl = (size_t)n;
    if (e->name && e->name < c->nesc && tbe_trace_strlen(t, e->name) == nl &&
        memcmp(tbe_trace_str(t, e->name), nb, nl) == 0 && esc_get(c, e->name, &nm, &nl))
      return;
  } else if (e->name < c->nesc) {
    if (esc_get(c, e->name, &nm, &nl)) return;
  } else {
    nm = "";
    nl = 0;
  }
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
#define KEY(lit)          \
  do {                    \
    if (n++) *p++ = ',';  \
    p = PL(p, "\"" lit "\":"); \
  } while (0)
  if (e->external_id) {
    KEY("External id");
    p = p_u64(p, e->external_id);
  }
  int64_t device = tr->type == TBE_TRACK_STREAM ? tr->device : -1;
  switch (e->kind) {
    case TBE_EV_KERNEL: {
      const tbe_kernel *k = tbe_trace_kernel(t, e);
      if (k && k->queued_ns >= 0) {
        KEY("queued");
        p = p_i64(p, k->queued_ns);
      }
      KEY("device");
      p = p_i64(p, device);
      if (k) {
        KEY("context");
        p = p_u64(p, k->context);
      }
      KEY("stream");
      p = p_i64(p, tr->tid);
      KEY("correlation");
      p = p_u64(p, e->correlation);
      if (k) {
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
      }
      break;
    }
    case TBE_EV_MEMCPY:
    case TBE_EV_MEMSET: {
      const tbe_memcpy *m = tbe_trace_memcpy(t, e);
      const tbe_memset *ms = tbe_trace_memset(t, e);
      KEY("device");
      p = p_i64(p, device);
      if (m || ms) {
        KEY("context");
        p = p_u64(p, m ? m->context : ms->context);
      }
      KEY("stream");
      p = p_i64(p, tr->tid);
      KEY("correlation");
      p = p_u64(p, e->correlation);
      if (m || ms) {
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
      }
      break;
    }
    case TBE_EV_GPU_ANNOTATION:
      /* No device/stream args, as Kineto writes it: the row (pid = device,
       * tid = stream) says where it is, and HTA counts every event with a
       * "stream" arg as GPU work (its compute time doubled with them). */
      break;
    case TBE_EV_RUNTIME:
    case TBE_EV_DRIVER:
      if (e->correlation) {
        KEY("correlation");
        p = p_u64(p, e->correlation);
      }
      break;
    default: break;
  }
#undef KEY
  w->len += (size_t)(p - d);
  argw a = {c, n};
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
struct jsynth {
  uint32_t pos;   /* written before event `pos` (nevents: after the last) */
  uint32_t step;
  uint32_t track;
};

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

static int cmp_jsynth(const void *a, const void *b, void *ctx) {
  const tbe_trace *t = ctx;
  const struct jsynth *x = a, *y = b;
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
static int plan_steps(jctx *c) {
  const tbe_trace *t = c->t;
  if (!t->nsteps) return 0;
  c->synth = tbe__calloc(c->w.a, t->nsteps, sizeof *c->synth);
  if (!c->synth) return TBE_ENOMEM;
  uint32_t fallback = TBE_NONE; /* a thread for steps of no known thread */
  for (uint32_t k = 0; k < t->ntracks && fallback == TBE_NONE; k++)
    if (t->tracks[k].type == TBE_TRACK_THREAD && t->tracks[k].count) fallback = k;
  int list = 0;
  for (size_t s = 0; s < t->nsteps; s++) {
    const tbe_step *st = &t->steps[s];
    char nb[48];
    int n = snprintf(nb, sizeof nb, "ProfilerStep#%lld", (long long)st->num);
    tbe_str pname = tbe_trace_find_str(t, nb, (size_t)n);
    int own = host_track_of(t, st->track), carried = 0;
    if (pname != TBE_NONE) {
      if (own) carried = carried_on(t, st->track, st, pname);
      for (uint32_t k = 0; k < t->ntracks && !carried && !own; k++) carried = carried_on(t, k, st, pname);
    }
    if (!carried || st->name != pname) list = 1;
    uint32_t k = own ? st->track : fallback;
    if (carried || k == TBE_NONE) continue;
    c->synth[c->nsynth].pos = marker_pos(t, k, st);
    c->synth[c->nsynth].step = (uint32_t)s;
    c->synth[c->nsynth].track = k;
    c->nsynth++;
  }
  if (c->nsynth > 1) qsort_r(c->synth, c->nsynth, sizeof *c->synth, cmp_jsynth, (void *)t);
  return list;
}

/* Writes the marker of c->synth[i], as write_hot writes a user annotation
 * without args. */
static void write_step_marker(jctx *c, size_t i) {
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
static size_t synth_from(const jctx *c, uint32_t pos) {
  size_t lo = 0, hi = c->nsynth;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (c->synth[mid].pos < pos) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* "tbexportSteps": every step, exactly. */
static void write_steps_key(jctx *c) {
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
      jw_str(c, st->name);
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

static void write_event(jctx *c, uint32_t idx) {
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
          jw_str(c, n->domain);
        }
        if (n->color) ARG_U64(&a, "color", n->color);
        if (n->category) ARG_U64(&a, "category", n->category);
        if (n->payload_type == 1) ARG_I64(&a, "payload", n->payload.i);
        else if (n->payload_type == 2) ARG_U64(&a, "payload", n->payload.u);
        else if (n->payload_type == 3) {
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
      flow_end(c, "s", id, "ac2g", 0, 0, pid, tid, e->start_ns, 0);
    else if (tbe_event_kind_is_gpu((tbe_event_kind)e->kind) && is_api_kind(o->kind) &&
             o->link != TBE_NONE)
      flow_end(c, "f", id, "ac2g", 0, 0, pid, tid, e->start_ns, 1);
  }
}

/* ---- the document ---- */

static void write_device_props(jctx *c) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  JW_LIT(w, "  \"deviceProperties\": [");
  for (size_t i = 0; i < t->ndevices; i++) {
    const tbe_device *d = &t->devices[i];
    jw_cstr(w, i ? ",\n    {" : "\n    {");
    JW_LIT(w, "\"id\":");
    jw_i64(w, d->id);
    JW_LIT(w, ", \"name\":");
    jw_str(c, d->name);
#define DPROP(key, v)                \
  if (v) {                           \
    JW_LIT(w, ", \"" key "\":");     \
    jw_i64(w, (int64_t)(v));         \
  }
    DPROP("totalGlobalMem", d->memory_bytes);
    DPROP("computeMajor", d->cc_major);
    DPROP("computeMinor", d->cc_minor);
    DPROP("maxThreadsPerBlock", d->max_threads_per_block);
    DPROP("maxThreadsPerMultiprocessor", d->max_threads_per_sm);
    DPROP("regsPerBlock", d->regs_per_block);
    DPROP("regsPerMultiprocessor", d->regs_per_sm);
    DPROP("warpSize", d->warp_size);
    DPROP("sharedMemPerBlock", d->shared_per_block);
    DPROP("sharedMemPerMultiprocessor", d->shared_per_sm);
    DPROP("numSms", d->sm_count);
    DPROP("sharedMemPerBlockOptin", d->shared_per_block_optin);
    /* Not Kineto fields, but cudaDeviceProp names: kept for the XSpace
     * device plane of a re-imported trace. */
    DPROP("clockRate", d->clock_khz);
    DPROP("memoryBandwidth", d->memory_bandwidth);
#undef DPROP
    JW_LIT(w, "}");
  }
  jw_cstr(w, t->ndevices ? "\n  ],\n" : "],\n");
}

static void meta_event(jctx *c, const char *what, int64_t pid, int64_t tid, const char *argkey,
                       const char *sval, size_t slen, int64_t ival) {
  jw *w = &c->w;
  jw_cstr(w, c->first_event ? "\n  {\"name\":\"" : ",\n  {\"name\":\"");
  c->first_event = 0;
  jw_mem(w, what, strlen(what));
  JW_LIT(w, "\",\"ph\":\"M\",\"ts\":");
  char *d = jw_room(w, 32);
  if (d) w->len += put_us(d, tbe__sat_sub(c->t->start_ns, c->base));
  JW_LIT(w, ",\"pid\":");
  jw_i64(w, pid);
  JW_LIT(w, ",\"tid\":");
  jw_i64(w, tid);
  JW_LIT(w, ",\"args\":{\"");
  jw_mem(w, argkey, strlen(argkey));
  JW_LIT(w, "\":");
  if (sval) jw_qstr(w, sval, slen);
  else jw_i64(w, ival);
  JW_LIT(w, "}}");
}

/* Whether stream track `tr` holds a stream sync (which has a row of its own). */
static int has_stream_sync(const tbe_trace *t, const tbe_track *tr) {
  for (uint32_t i = tr->first; i < tr->first + tr->count; i++) {
    const tbe_sync *s = tbe_trace_sync(t, &t->events[i]);
    if (s && s->sync_kind == TBE_SYNC_STREAM) return 1;
  }
  return 0;
}

static int has_pid(const int64_t *v, size_t n, int64_t pid) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == pid) return 1;
  return 0;
}

/* process_name/labels/sort_index and thread_name/sort_index, as Kineto
 * writes them: host processes labelled "CPU", GPUs "GPU <n>" sorted after
 * every host pid, streams "stream <id> ", threads "thread <tid> (<name>)". */
static int write_metadata(jctx *c) {
  const tbe_trace *t = c->t;
  char tmp[600];
  size_t cap = t->nprocesses + t->ntracks + t->ndevices + 1;
  int64_t *hosts = tbe__calloc(c->w.a, cap, sizeof *hosts);
  int64_t *gpus = tbe__calloc(c->w.a, cap, sizeof *gpus);
  if (!hosts || !gpus) {
    tbe__free(c->w.a, hosts);
    tbe__free(c->w.a, gpus);
    return TBE_ENOMEM;
  }
  size_t nh = 0, ng = 0;
  for (size_t i = 0; i < t->nprocesses; i++)
    if (!has_pid(hosts, nh, t->processes[i].pid)) hosts[nh++] = t->processes[i].pid;
  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    if (tr->type == TBE_TRACK_THREAD && !has_pid(hosts, nh, tr->pid)) hosts[nh++] = tr->pid;
    if (tr->type == TBE_TRACK_STREAM && !has_pid(gpus, ng, tr->device)) gpus[ng++] = tr->device;
  }
  for (size_t i = 0; i < t->ndevices; i++)
    if (!has_pid(gpus, ng, t->devices[i].id)) gpus[ng++] = t->devices[i].id;

  const char *main_name = NULL;
  for (size_t i = 0; i < nh; i++) {
    const char *pname = NULL;
    for (size_t k = 0; k < t->nprocesses; k++)
      if (t->processes[k].pid == hosts[i] && t->processes[k].name)
        pname = tbe_trace_str(t, t->processes[k].name);
    if (pname) {
      meta_event(c, "process_name", hosts[i], 0, "name", pname, strlen(pname), 0);
      if (!main_name) main_name = pname;
    }
    meta_event(c, "process_labels", hosts[i], 0, "labels", "CPU", 3, 0);
    meta_event(c, "process_sort_index", hosts[i], 0, "sort_index", NULL, 0, hosts[i]);
  }
  for (size_t i = 0; i < ng; i++) {
    const char *pname = main_name;
    int n = snprintf(tmp, sizeof tmp, "GPU %lld", (long long)gpus[i]);
    meta_event(c, "process_name", gpus[i], 0, "name", pname ? pname : tmp,
               pname ? strlen(pname) : (size_t)n, 0);
    meta_event(c, "process_labels", gpus[i], 0, "labels", tmp, (size_t)n, 0);
    meta_event(c, "process_sort_index", gpus[i], 0, "sort_index", NULL, 0, 5000000 + gpus[i]);
  }
  tbe__free(c->w.a, hosts);
  tbe__free(c->w.a, gpus);

  for (size_t i = 0; i < t->ntracks; i++) {
    const tbe_track *tr = &t->tracks[i];
    int64_t pid, tid;
    track_row(tr, &pid, &tid);
    const char *name = tbe_trace_str(t, tr->name);
    size_t nl = tbe_trace_strlen(t, tr->name);
    const char *label = name;
    size_t ll = nl;
    int n = 0;
    if (tr->type == TBE_TRACK_STREAM && tr->tid < 0) continue; /* unnamed, as in Kineto */
    if (tr->type == TBE_TRACK_STREAM) {
      if (!nl) {
        n = snprintf(tmp, sizeof tmp, "stream %lld ", (long long)tr->tid);
        label = tmp;
        ll = (size_t)n;
      }
    } else if (tr->type == TBE_TRACK_THREAD) {
      if (!nl) {
        n = snprintf(tmp, sizeof tmp, "thread %lld", (long long)tr->tid);
        label = tmp;
        ll = (size_t)n;
      } else if (strncmp(name, "thread ", 7) != 0 && nl < 500) {
        n = snprintf(tmp, sizeof tmp, "thread %lld (%s)", (long long)tr->tid, name);
        label = tmp;
        ll = (size_t)n;
      }
    }
    if (ll) meta_event(c, "thread_name", pid, tid, "name", label, ll, 0);
    if (tr->type != TBE_TRACK_OTHER) meta_event(c, "thread_sort_index", pid, tid, "sort_index", NULL, 0, tid);
    if (tr->type == TBE_TRACK_STREAM && has_stream_sync(t, tr)) {
      n = snprintf(tmp, sizeof tmp, "stream %lld (sync)", (long long)tr->tid);
      meta_event(c, "thread_name", pid, tid + KINETO_SYNC_TID_OFFSET, "name", tmp, (size_t)n, 0);
      meta_event(c, "thread_sort_index", pid, tid + KINETO_SYNC_TID_OFFSET, "sort_index", NULL, 0,
                 tid);
    }
  }
  return 0;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static tbe_str key_id(const tbe_trace *t, const char *s) { return tbe_trace_find_str(t, s, strlen(s)); }

/* Fills the escape cache for every interned string, so that the event
 * formatters (on several threads) only ever read it. */
static int esc_all(jctx *c) {
  for (size_t id = 0; id < c->nesc; id++) {
    const char *s;
    size_t n;
    if (esc_get(c, (tbe_str)id, &s, &n)) return TBE_ENOMEM;
  }
  return 0;
}

/* ---- the events, formatted in parallel ----
 *
 * The events are cut into chunks of `chunk_ev` consecutive events, the
 * items of an ordered worker pool (common/pool.h): worker threads format
 * chunks into the slots of its ring (and deflate them, gzip), the calling
 * thread claims and submits them, formats the ones no worker took, and
 * writes them strictly in chunk order.  A chunk's text depends only on
 * the model and on whether it holds the document's first event, so the
 * output is the same byte for byte whatever the number of threads
 * (tested).  The ring bounds the memory in flight to its slots. */

/* Thread knobs (tests, benchmarks): formatting threads (0 = the
 * TBE_EXPORT_THREADS environment variable, else the online CPUs, at most
 * JP_MAX_THREADS; 1 = the calling thread only) and events per chunk (0 =
 * JP_CHUNK_EVENTS). */
int tbe__json_threads = 0;
uint32_t tbe__json_chunk_events = 0;

#define JP_CHUNK_EVENTS 2048u
#define JP_MAX_THREADS 32

/* A slot of the ring: one chunk's text and its deflated form. */
typedef struct jslot {
  jw w;
  gzpart z;
} jslot;

/* What the pool's work function reads: the shared context (read-only
 * while the pool runs; each worker formats with a copy of its own). */
typedef struct jpool {
  const jctx *c;
  uint32_t nchunks, chunk_ev;
  int gzip;
  int first0;       /* chunk 0 holds the document's first event */
} jpool;

static int threads_wanted(void) {
  if (tbe__json_threads > 0) return tbe__json_threads > JP_MAX_THREADS ? JP_MAX_THREADS : tbe__json_threads;
  const char *env = getenv("TBE_EXPORT_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (!*end && v >= 1) return v > JP_MAX_THREADS ? JP_MAX_THREADS : (int)v;
  }
  int n = tbe__pool_cpus();
  return n > JP_MAX_THREADS ? JP_MAX_THREADS : n;
}

/* The pool's worker_init: the worker's formatter state, a copy of the
 * shared context. */
static int chunk_worker_init(void *ctx, void *worker) {
  memcpy(worker, ((const jpool *)ctx)->c, sizeof(jctx));
  return 0;
}

static void chunk_slot_fini(void *ctx, void *slot) {
  jslot *sl = slot;
  tbe__buf_deinit(&sl->w);
  tbe__free(((const jpool *)ctx)->c->w.a, sl->z.out);
}

/* The pool's work: formats chunk `k` into the slot with the worker's
 * formatter state `wc`, and deflates it for gzip output.  0 or the
 * chunk's error. */
static int format_chunk(void *ctx, void *worker, void *slot, uint64_t k) {
  const jpool *p = ctx;
  jctx *wc = worker;
  jslot *sl = slot;
  uint32_t lo = (uint32_t)k * p->chunk_ev;
  uint32_t hi = p->c->t->nevents - lo > p->chunk_ev ? lo + p->chunk_ev : (uint32_t)p->c->t->nevents;
  if (!sl->w.a) tbe__buf_init(&sl->w, p->c->w.a);
  sl->w.len = 0;
  wc->w = sl->w;
  wc->first_event = k == 0 ? p->first0 : 0;
  size_t m = synth_from(wc, lo);
  for (uint32_t i = lo; i < hi && !wc->w.err; i++) {
    while (m < wc->nsynth && wc->synth[m].pos == i) write_step_marker(wc, m++);
    write_event(wc, i);
  }
  sl->w = wc->w;
  if (sl->w.err) return sl->w.err;
  if (p->gzip) gz_compress(sl->w.a, (const char *)sl->w.data, sl->w.len, 0, &sl->z);
  return p->gzip ? sl->z.rc : 0;
}

/* Writes the events [0, nevents) through the sink with `nth` formatting
 * threads (1: all on the calling thread).  Returns 0 or an error. */
static int write_events(jctx *c, jsink *sink, int nth) {
  const tbe_trace *t = c->t;
  if (t->nevents == 0) return 0;
  jpool p = {c, 0, 0, sink->gzip, c->first_event};
  p.chunk_ev = tbe__json_chunk_events ? tbe__json_chunk_events : JP_CHUNK_EVENTS;
  p.nchunks = (uint32_t)((t->nevents + p.chunk_ev - 1) / p.chunk_ev);
  if ((uint32_t)nth > p.nchunks) nth = (int)p.nchunks;
  if (nth < 1) nth = 1;
  tbe__pool_config cfg = {
      .threads = nth > 1 ? nth : 0, /* the calling thread formats too */
      .slots = nth > 1 ? 2u * (uint32_t)nth : 1u,
      .slot_size = sizeof(jslot),
      .worker_size = sizeof(jctx),
      .work = format_chunk,
      .worker_init = chunk_worker_init,
      .slot_fini = chunk_slot_fini,
      .ctx = &p,
      .allocator = c->w.a,
  };
  tbe__pool *pool;
  int rc = tbe__pool_create(&pool, &cfg);
  if (rc) return rc;
  uint64_t claimed = 0, done = 0;
  for (;;) {
    /* Hand over every chunk the ring has room for, then write the next. */
    uint64_t seq;
    while (claimed < p.nchunks && tbe__pool_try_claim(pool, &seq)) {
      tbe__pool_submit(pool, seq, 1);
      if (++claimed == p.nchunks) tbe__pool_close(pool);
    }
    void *slot;
    int r = tbe__pool_next(pool, &slot, &seq);
    if (r == TBE__POOL_END) break;
    if ((rc = r) != 0) break;
    const jslot *sl = slot;
    sink_part(sink, (const char *)sl->w.data, sl->w.len, sink->gzip ? &sl->z : NULL, 0);
    tbe__pool_release(pool);
    if ((rc = sink->err) != 0) break;
    uint64_t lo = done;
    done = (seq + 1) * p.chunk_ev < t->nevents ? (seq + 1) * p.chunk_ev : t->nevents;
    if (c->progress && (lo >> 16) != (done >> 16)) c->progress(c->progress_ctx, done, t->nevents);
  }
  tbe__pool_destroy(pool);
  return rc;
}

/* "tbexportTrace": what the rest of the document does not say about the
 * trace: that our collector recorded it (its source), the host it was taken
 * on, and its profiled window when that is not the span of its events. */
static void write_trace_key(jctx *c, const char *host) {
  const tbe_trace *t = c->t;
  jw *w = &c->w;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (e->start_ns < lo) lo = e->start_ns;
    if (tbe__end_ns(e->start_ns, e->dur_ns) > hi) hi = tbe__end_ns(e->start_ns, e->dur_ns);
  }
  int window = t->nevents ? (t->start_ns != lo || t->stop_ns != hi) : (t->start_ns || t->stop_ns);
  int n = 0;
  if (t->source == TBE_SRC_CUPTI) {
    JW_LIT(w, "  \"tbexportTrace\": {\"source\": \"cupti\"");
    n++;
  }
  if (host && *host) { /* the run's host, as the XSpace records it */
    jw_cstr(w, n++ ? ", \"host\": " : "  \"tbexportTrace\": {\"host\": ");
    jw_qcstr(w, host);
  } else if (t->host) {
    jw_cstr(w, n++ ? ", \"host\": " : "  \"tbexportTrace\": {\"host\": ");
    jw_str(c, t->host);
  }
  if (window) {
    jw_cstr(w, n++ ? ", \"startNs\": " : "  \"tbexportTrace\": {\"startNs\": ");
    jw_i64(w, t->start_ns);
    JW_LIT(w, ", \"stopNs\": ");
    jw_i64(w, t->stop_ns);
  }
  if (n) JW_LIT(w, "},\n");
}

/* Writes the whole document to `fd`: the head (top-level fields and the
 * metadata events) formatted here, the events by write_events, the tail
 * (model flows, traceName) here again.  `nth` formatting threads (0: the
 * default). */
/* tbe__status_lines' EMIT: one string of the tbexportWarnings array. */
typedef struct warn_list {
  jw *w;
  int first;
} warn_list;

static void warning_item(void *ctx, const char *line, size_t len) {
  warn_list *l = ctx;
  if (!l->first) JW_LIT(l->w, ", ");
  jw_qstr(l->w, line, len);
  l->first = 0;
}

static int json_write(const tbe_trace *t, int fd, int gzip, int nth, const char *trace_name,
                      const char *host,
                      const tbe_allocator *a, void (*progress)(void *, uint64_t, uint64_t),
                      void *progress_ctx) {
  jctx *c = tbe__calloc(a, 1, sizeof *c);
  if (!c) return TBE_ENOMEM;
  c->t = t;
  tbe__buf_init(&c->w, a);
  tbe__buf_init(&c->escbuf, a);
  c->nesc = tbe_trace_nstrings(t);
  c->esc = tbe__calloc(a, c->nesc ? c->nesc : 1, sizeof *c->esc);
  c->progress = progress;
  c->progress_ctx = progress_ctx;
  jsink sink = {fd, gzip, 0, 0, 0, a};
  int rc = 0;
  if (!c->esc) rc = TBE_ENOMEM;
  if (!rc) rc = esc_all(c);
  if (rc) goto done;

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
  c->k_synckind = key_id(t, "cuda_sync_kind");
  c->k_event = key_id(t, "cuda_event");
  c->k_waitev = key_id(t, "wait_on_cuda_event_id");

  if (t->base_time_ns) {
    c->base = t->base_time_ns;
  } else {
    const int64_t period = KINETO_BASE_PERIOD_S * 1000000000LL;
    c->base = tbe__sat_mul(floor_div(t->start_ns, period), period); /* saturates (common/checked.h) */
  }

  jw *w = &c->w;
  JW_LIT(w, "{\n  \"schemaVersion\": 1,\n");
  write_device_props(c);
  /* As PyTorch: only a distributed run (a known rank) has the key. */
  if (t->rank >= 0) {
    JW_LIT(w, "  \"distributedInfo\": {");
    if (t->dist_backend) {
      JW_LIT(w, "\"backend\": ");
      jw_str(c, t->dist_backend);
      JW_LIT(w, ", ");
    }
    JW_LIT(w, "\"rank\": ");
    jw_i64(w, t->rank);
    JW_LIT(w, ", \"world_size\": ");
    jw_i64(w, t->world_size > 0 ? t->world_size : 1);
    JW_LIT(w, "},\n");
  }
  int list_steps = plan_steps(c);
  if (list_steps < 0) {
    rc = list_steps;
    goto done;
  }
  write_trace_key(c, host);
  if (t->source == TBE_SRC_CUPTI || t->dropped_records || t->dropped_out_of_range ||
      t->overhead_ns || t->ended_early) {
    /* What the collection lost and cost, zeros included. */
    JW_LIT(w, "  \"tbexportCollection\": {\"droppedRecords\": ");
    jw_i64(w, (int64_t)t->dropped_records);
    JW_LIT(w, ", \"outOfRangeRecords\": ");
    jw_i64(w, (int64_t)t->dropped_out_of_range);
    JW_LIT(w, ", \"cuptiOverheadNs\": ");
    jw_i64(w, (int64_t)t->overhead_ns);
    if (t->ended_early)
      JW_LIT(w, ", \"endedEarly\": true},\n");
    else
      JW_LIT(w, ", \"endedEarly\": false},\n");
  }
  if (t->nwarnings || t->dropped_records || t->dropped_out_of_range || t->ended_early) {
    warn_list wl = {w, 1};
    JW_LIT(w, "  \"tbexportWarnings\": [");
    tbe__status_lines(t, 0, warning_item, &wl);
    int first = wl.first;
    for (size_t i = 0; i < t->nwarnings; i++) {
      if (!first) JW_LIT(w, ", ");
      jw_str(c, t->warnings[i]);
      first = 0;
    }
    JW_LIT(w, "],\n");
  }
  if (list_steps) write_steps_key(c);
  JW_LIT(w, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
  jw_i64(w, c->base);
  JW_LIT(w, ",\n  \"traceEvents\": [");
  c->first_event = 1;
  rc = write_metadata(c);
  if (!rc) rc = w->err;
  if (rc) goto done;
  sink_start(&sink);
  sink_part(&sink, (const char *)w->data, w->len, NULL, 0);
  if ((rc = sink.err)) goto done;

  rc = write_events(c, &sink, nth > 0 ? nth : threads_wanted());
  if (rc) goto done;

  /* The tail: step markers after the last event, the model's own flows
   * (each end writes its separator) and the closing fields. */
  w->len = 0;
  for (size_t m = synth_from(c, (uint32_t)t->nevents); m < c->nsynth; m++) write_step_marker(c, m);
  for (size_t i = 0; i < t->nflows && !w->err; i++) {
    const tbe_flow *f = &t->flows[i];
    const char *fc = tbe_trace_str(t, f->cat);
    if (strcmp(fc, "ac2g") == 0) continue; /* re-derived from correlation above */
    int64_t pid, tid;
    track_row(&t->tracks[f->src_track], &pid, &tid);
    flow_end(c, "s", f->id, NULL, f->cat, f->name, pid, tid, f->src_ns, 0);
    track_row(&t->tracks[f->dst_track], &pid, &tid);
    flow_end(c, "f", f->id, NULL, f->cat, f->name, pid, tid, f->dst_ns, f->dst_enclosing);
  }
  JW_LIT(w, "\n  ],\n  \"traceName\": ");
  if (t->trace_name) jw_str(c, t->trace_name);
  else jw_qcstr(w, trace_name ? trace_name : "");
  JW_LIT(w, "\n}\n");
  if ((rc = w->err)) goto done;
  sink_part(&sink, (const char *)w->data, w->len, NULL, 1);
  sink_end(&sink);
  rc = sink.err;
  if (!rc && progress) progress(progress_ctx, t->nevents, t->nevents);

done:
  tbe__buf_deinit(&c->w);
  tbe__free(a, c->synth);
  tbe__free(a, c->esc);
  tbe__buf_deinit(&c->escbuf);
  tbe__free(a, c);
  return rc;
}

int tbe__json_write_fd(const tbe_trace *t, int fd, int gzip, int threads, const char *trace_name) {
  if (!t || fd < 0) return TBE_EINVAL;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  return json_write(t, fd, gzip, threads, trace_name, NULL, &a, NULL, NULL);
}

/* Writes the JSON of `t` to `dir`/`name` atomically. */
static int json_file(const tbe_trace *t, const tbe_allocator *a, const char *dir, const char *name,
                     const char *host, int gzip, int force, int durable,
                     void (*progress)(void *, uint64_t, uint64_t), void *progress_ctx) {
  tbe__afile f;
  int rc = tbe__afile_open(&f, a, dir, name, force);
  if (rc) return rc;
  rc = json_write(t, f.fd, gzip, 0, name, host, a, progress, progress_ctx);
  if (rc) {
    tbe__afile_abort(&f);
    return rc;
  }
  return tbe__afile_commit(&f, durable, force);
}

int tbe_export_chrome_json(const tbe_trace *t, const char *path, int gzip, int force) {
  if (!t || !path || !*path) return TBE_EINVAL;
  tbe_allocator a;
  tbe__allocator_init(&a, NULL);
  char *dir;
  const char *name;
  int rc = tbe__path_split(&a, path, &dir, &name);
  if (rc) return rc;
  rc = json_file(t, &a, dir, name, NULL, gzip, force, 0, NULL, NULL);
  tbe__free(&a, dir);
  return rc;
}

static int json_export(const tbe__export_ctx *x, int fd) {
  tbe_allocator a;
  tbe__allocator_init(&a, x->a);
  /* The trace's name, when it has none of its own: the file's. */
  char name[TBE_NAME_MAX + 32];
  snprintf(name, sizeof name, "%s.trace.json.gz", x->host);
  return json_write(x->trace, fd, 1, 0, name, x->host, &a, x->progress, x->progress_ctx);
}

const tbe__exporter tbe__exporter_json = {"json", TBE_OUT_JSON, json_export};
