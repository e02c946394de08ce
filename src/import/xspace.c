/* xspace.c: the XSpace (.xplane.pb) importer behind tbe_import_file.
 *
 * Reads the protobuf written by JAX, TensorFlow, XLA and our own exporter
 * (schema: proto/profiler/xplane.proto) into the trace model.
 *
 * How: the whole input is read into memory (a regular file at its size;
 * through gzip or standard input with its top-level framing followed as
 * it comes, so a stream of anything else stops at its first bad header and
 * no field may claim more than max_input_bytes); the top-level XSpace fields are
 * walked by hand (so every plane's byte offset is known and a corrupt length
 * is reported, never allocated), then each plane is decoded on its own with
 * protobuf-c and released before the next, so the peak is the file plus one
 * decoded plane.  When protobuf-c refuses a plane, a schema-aware wire walk
 * finds the first malformed field and the error names its byte offset.
 *
 * Mapping (reference: profile-plugin-xspace-chrome-trace.md §2-§3):
 *   - times: event start = line.timestamp_ns + offset_ps/1000; line times
 *     below 1e17 ns are relative to the session and get the `Task
 *     Environment` plane's profile_start_time added (a warning says so when
 *     there is none);
 *   - `/host:CPU`, `/host:CUPTI`, `/host:NVTX-CUPTI`, `/host:python-tracer`:
 *     one host process (pid = the plane's process_id stat, else a synthetic
 *     pid), lines are TBE_TRACK_THREAD tracks (tid = line id), so the capture
 *     planes of a raw XSpace merge into the host threads.  Events carrying a
 *     correlation_id are CUDA API calls: names starting "cuda" are runtime
 *     calls, the rest (cu*, and XLA's launch events named after the kernel,
 *     which come from driver callbacks) driver calls.  NVTX-CUPTI events are
 *     NVTX ranges/marks, python-tracer events Python functions, other host
 *     events CPU operators (instants when they have no duration);
 *   - `/device:GPU:<n>`: device n (plane stats fill tbe_device), lines are
 *     TBE_TRACK_STREAM tracks (stream = line id); kernel_details, memcpy_details
 *     and Memset_details make kernels, copies and memsets, other ranges GPU
 *     annotations;
 *   - what our exporter (src/trace/export_xplane.c) writes beyond XLA's
 *     conventions is read back: "<thread>/NVTX" lines (NVTX of that thread,
 *     "NVTX:<domain>:<message>" names split), nvtx_* / sync_* / cuda_event /
 *     external_id / memory (addr, num_bytes, device_ordinal, total_*) /
 *     counter ("value") stats, and the "Step markers" line (steps only);
 *   - any other plane with lines (TPU, custom, unknown): TBE_TRACK_OTHER
 *     tracks of a synthetic process named after the plane, generic events;
 *   - stats not consumed above become event args (ref_value resolved to the
 *     referenced name; bytes values are skipped); event-metadata stats come
 *     first, then the event's own;
 *   - steps: host events with a step_num stat; failing that, the span of
 *     each group_id;
 *   - XSpace.warnings/errors become trace warnings, hostnames[0] the host;
 *   - our own files (Task Environment stat tbexport_source) give back the
 *     source, the collection counters (tbexport_* stats), the kinds of host
 *     events (tbexport_kind, tbexport_cat), asynchronous ranges (_a), NVTX
 *     lines by thread id, and their warnings without the generic status
 *     lines the exporter put first.
 *
 * Times outside the model's range (common/checked.h) are refused naming the
 * field (line timestamp_ns, offset_ps, duration_ps, profile_start_time) and
 * the plane's byte; max_events is counted per event.  Lookups keyed by the
 * file's values are sorted or hashed: NVTX lines find their thread's line
 * by a binary search over the plane's names, tbexport_track_pids is sorted.
 *
 * Errors: TBE_ECORRUPT with "<path>: byte N: ..." naming the offending
 * field; nothing is kept from a plane that did not decode. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked.h"
#include "import/importers.h"
#include "profiler/xplane.pb-c.h"
#include "tbexport/error.h"
#include "trace/exporter.h"

typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;
typedef Tensorflow__Profiler__XEvent XEvent;
typedef Tensorflow__Profiler__XStat XStat;
typedef Tensorflow__Profiler__XEventMetadata XEventMetadata;
typedef Tensorflow__Profiler__XStatMetadata XStatMetadata;

/* Line timestamps below this are relative to the session (1e17 ns is 1973). */
#define XS_EPOCH_MIN_NS 100000000000000000LL
/* Synthetic pids: far above any OS pid. */
#define XS_SYNTH_PID ((int64_t)1 << 40)
/* Our exporter's line of step markers (steps no host event carries). */
#define XS_STEP_LINE ((int64_t)3 << 32)

/* ---- wire walking ---- */

static int rd_varint(const uint8_t *b, size_t n, size_t *pos, uint64_t *v) {
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (*pos >= n) return -1;
    uint8_t c = b[(*pos)++];
    r |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

/* Reads one field header and skips/locates its payload.  On success sets
 * field, wire type, and for wire type 2 the payload [*data, *data+*len).
 * Returns 0, or -1 with *bad at the offending byte. */
static int next_field(const uint8_t *b, size_t n, size_t *pos, uint32_t *field, uint32_t *wt,
                      size_t *data, size_t *len, size_t *bad) {
  size_t start = *pos;
  uint64_t tag, v;
  if (rd_varint(b, n, pos, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
    *bad = start;
    return -1;
  }
  *field = (uint32_t)(tag >> 3);
  *wt = (uint32_t)(tag & 7);
  *data = *pos;
  *len = 0;
  switch (*wt) {
    case 0:
      if (rd_varint(b, n, pos, &v)) break;
      return 0;
    case 1:
      if (n - *pos < 8) break;
      *pos += 8;
      return 0;
    case 2:
      if (rd_varint(b, n, pos, &v) || v > n - *pos) break;
      *data = *pos;
      *len = (size_t)v;
      *pos += (size_t)v;
      return 0;
    case 5:
      if (n - *pos < 4) break;
      *pos += 4;
      return 0;
    default: break;
  }
  *bad = start;
  return -1;
}

/* Message types of the schema, for the validating walk. */
enum { M_NONE = -1, M_PLANE, M_LINE, M_EVENT, M_STAT, M_EMD_ENTRY, M_SMD_ENTRY, M_EMD, M_SMD };

/* The message type of field `f` of message type `m`, M_NONE for scalars. */
static int child_type(int m, uint32_t f) {
  switch (m) {
    case M_PLANE:
      return f == 3 ? M_LINE : f == 4 ? M_EMD_ENTRY : f == 5 ? M_SMD_ENTRY : f == 6 ? M_STAT : M_NONE;
    case M_LINE: return f == 4 ? M_EVENT : M_NONE;
    case M_EVENT: return f == 4 ? M_STAT : M_NONE;
    case M_EMD_ENTRY: return f == 2 ? M_EMD : M_NONE;
    case M_SMD_ENTRY: return f == 2 ? M_SMD : M_NONE;
    case M_EMD: return f == 5 ? M_STAT : M_NONE;
    default: return M_NONE;
  }
}

/* Walks a message of type `m` at b[0..n) (at file offset `base`) and its
 * sub-messages.  Returns the file offset of the first malformed field, or
 * UINT64_MAX when the wire structure is sound. */
static uint64_t find_bad(const uint8_t *b, size_t n, uint64_t base, int m, int depth) {
  size_t pos = 0;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len, bad;
    size_t fstart = pos;
    if (next_field(b, n, &pos, &f, &wt, &data, &len, &bad)) return base + bad;
    int c = child_type(m, f);
    if (c != M_NONE) {
      if (wt != 2) return base + fstart;
      if (depth < 8) {
        uint64_t r = find_bad(b + data, len, base + data, c, depth + 1);
        if (r != UINT64_MAX) return r;
      }
    }
  }
  return UINT64_MAX;
}

/* ---- small int64 -> uint32 hash map ---- */

typedef struct idmap {
  int64_t *keys;
  uint32_t *vals;  /* TBE_NONE = empty */
  size_t cap;
} idmap;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static int idmap_init(idmap *m, size_t n) {
  m->cap = 16;
  while (m->cap < n * 2) m->cap *= 2;
  m->keys = malloc(m->cap * sizeof *m->keys);
  m->vals = malloc(m->cap * sizeof *m->vals);
  if (!m->keys || !m->vals) return TBE_ENOMEM;
  memset(m->vals, 0xff, m->cap * sizeof *m->vals);
  return 0;
}

static void idmap_free(idmap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* Inserts unless present (the first entry for a key wins). */
static void idmap_put(idmap *m, int64_t k, uint32_t v) {
  size_t i = (size_t)mix((uint64_t)k) & (m->cap - 1);
  while (m->vals[i] != TBE_NONE) {
    if (m->keys[i] == k) return;
    i = (i + 1) & (m->cap - 1);
  }
  m->keys[i] = k;
  m->vals[i] = v;
}

static uint32_t idmap_get(const idmap *m, int64_t k) {
  if (!m->cap) return TBE_NONE;
  size_t i = (size_t)mix((uint64_t)k) & (m->cap - 1);
  while (m->vals[i] != TBE_NONE) {
    if (m->keys[i] == k) return m->vals[i];
    i = (i + 1) & (m->cap - 1);
  }
  return TBE_NONE;
}

/* ---- stat names we act on ---- */

enum {
  S_OTHER = 0,
  S_CORRELATION,
  S_KERNEL_DETAILS,
  S_MEMCPY_DETAILS,
  S_MEMSET_DETAILS,
  S_CONTEXT,
  S_OCCUPANCY,
  S_STEP_NUM,
  S_GROUP_ID,
  S_STEP_NAME,
  S_ROOT,
  S_DEVICE_ID,
  S_EXTERNAL_ID,
  S_SYNC_KIND,
  S_SYNC_STREAM,
  S_CUDA_EVENT,
  S_NVTX_DOMAIN,
  S_NVTX_COLOR,
  S_NVTX_CATEGORY,
  S_NVTX_PAYLOAD,
  S_VALUE,
  S_ADDR,
  S_NUM_BYTES,
  S_TOTAL_ALLOC,
  S_TOTAL_RES,
  S_DEV_ORD,
  S_TBE_KIND,
  S_TBE_CAT,
  S_ASYNC
};

static int classify_stat(const char *s) {
  static const struct {
    const char *name;
    int kind;
  } tab[] = {{"correlation_id", S_CORRELATION},
             {"kernel_details", S_KERNEL_DETAILS},
             {"memcpy_details", S_MEMCPY_DETAILS},
             {"Memset_details", S_MEMSET_DETAILS},
             {"context_id", S_CONTEXT},
             {"theoretical_occupancy_pct", S_OCCUPANCY},
             {"step_num", S_STEP_NUM},
             {"group_id", S_GROUP_ID},
             {"step_name", S_STEP_NAME},
             {"_r", S_ROOT},
             {"device_id", S_DEVICE_ID},
             /* Written by our exporter for model fields XLA has no stat for. */
             {"external_id", S_EXTERNAL_ID},
             {"sync_kind", S_SYNC_KIND},
             {"sync_stream", S_SYNC_STREAM},
             {"cuda_event", S_CUDA_EVENT},
             {"nvtx_domain", S_NVTX_DOMAIN},
             {"nvtx_color", S_NVTX_COLOR},
             {"nvtx_category", S_NVTX_CATEGORY},
             {"nvtx_payload", S_NVTX_PAYLOAD},
             {"value", S_VALUE},
             {"addr", S_ADDR},
             {"num_bytes", S_NUM_BYTES},
             {"total_allocated", S_TOTAL_ALLOC},
             {"total_reserved", S_TOTAL_RES},
             {"device_ordinal", S_DEV_ORD},
             {"tbexport_kind", S_TBE_KIND},
             {"tbexport_cat", S_TBE_CAT},
             {"_a", S_ASYNC}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(s, tab[i].name) == 0) return tab[i].kind;
  return S_OTHER;
}

/* ---- importer state ---- */

typedef enum { P_HOST, P_HOST_NVTX, P_HOST_PYTHON, P_GPU, P_TASKENV, P_OTHER } plane_class;

typedef struct smd_cache {
  const XStatMetadata *md;
  int kind;        /* S_* */
  tbe_str key;     /* interned name, TBE_NONE until first used */
} smd_cache;

typedef struct emd_cache {
  const XEventMetadata *md;
  tbe_str name;       /* TBE_NONE until first used */
  tbe_str long_name;  /* full name when display_name differs, else 0 */
} emd_cache;

typedef struct step_cand {
  int64_t num;
  int64_t start, end;
  tbe_str name;
  uint32_t track; /* the host track of the event that marks it, or TBE_NONE */
} step_cand;

typedef struct xs_state {
  tbe_trace *t;
  const char *path;
  tbe_import_error *err;
  int64_t start_ns;    /* profile_start_time, 0 if unknown */
  int64_t stop_ns;
  int warned_relative;
  int64_t host_pid;    /* process_id of the host planes, or XS_SYNTH_PID */
  int have_host_pid;
  /* Per plane. */
  smd_cache *smd;
  size_t nsmd;
  idmap smap;
  emd_cache *emd;
  size_t nemd;
  idmap emap;
  /* Scratch for args. */
  tbe_arg *args;
  uint8_t *akind; /* S_* of each arg */
  size_t nargs, cap_args, cap_akind;
  /* Steps. */
  step_cand *steps;
  size_t nsteps, cap_steps;
  step_cand *groups;  /* by group_id (num = group id) */
  size_t ngroups, cap_groups;
  idmap gmap;
  uint64_t unknown_md;
  int ours;            /* written by our exporter (Task Environment: tbexport_source) */
  int64_t (*track_pids)[3]; /* dev (-1: host thread), id, pid: tbexport_track_pids */
  size_t ntrack_pids, cap_track_pids;
  int track_pids_sorted;
  /* Limits and where we are, for messages. */
  const tbe_import_options *o;
  size_t ev_first;     /* t->nevents before this import */
  size_t plane_off;    /* byte offset of the plane being imported */
  size_t plane_idx;
  uint32_t *lorder;    /* the plane's named lines sorted by (name, index) */
  size_t nlorder;
} xs_state;

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 16;
  while (nc < need) nc *= 2;
  void *q = realloc(*p, nc * elem);
  if (!q) return TBE_ENOMEM;
  *p = q;
  *cap = nc;
  return 0;
}

static tbe_str intern(xs_state *s, const char *str) {
  tbe_str id = 0;
  if (str && *str) tbe_trace_intern(s->t, str, strlen(str), &id);
  return id;
}

static const smd_cache *stat_md(xs_state *s, int64_t id) {
  uint32_t i = idmap_get(&s->smap, id);
  return i == TBE_NONE ? NULL : &s->smd[i];
}

static tbe_str smd_key(xs_state *s, smd_cache *c) {
  if (c->key == TBE_NONE) c->key = intern(s, c->md->name);
  return c->key;
}

/* The string value of a str or ref stat, or NULL. */
static const char *stat_str(xs_state *s, const XStat *st) {
  if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE) return st->str_value;
  if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE) {
    const smd_cache *c = stat_md(s, (int64_t)st->ref_value);
    return c ? c->md->name : NULL;
  }
  return NULL;
}

static int stat_int(const XStat *st, int64_t *v) {
  switch (st->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE: *v = st->int64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE: *v = (int64_t)st->uint64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE: *v = (int64_t)st->double_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE: {
      char *end;
      errno = 0;
      long long x = strtoll(st->str_value, &end, 10);
      if (end == st->str_value || *end || errno) return 0;
      *v = x;
      return 1;
    }
    default: return 0;
  }
}

static int stat_double(const XStat *st, double *v) {
  switch (st->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE: *v = (double)st->int64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE: *v = (double)st->uint64_value; return 1;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE: *v = st->double_value; return 1;
    default: return 0;
  }
}

/* Appends a ready arg (kind S_OTHER); returns 0 or TBE_ENOMEM. */
static int push_raw_arg(xs_state *s, const tbe_arg *a) {
  if (s->nargs >= UINT16_MAX) return 0;
  if (grow((void **)&s->args, &s->cap_args, s->nargs + 1, sizeof *s->args) ||
      grow((void **)&s->akind, &s->cap_akind, s->nargs + 1, 1))
    return TBE_ENOMEM;
  s->akind[s->nargs] = S_OTHER;
  s->args[s->nargs++] = *a;
  return 0;
}

static int push_str_arg(xs_state *s, const char *key, const char *val) {
  tbe_arg a = {.key = intern(s, key), .type = TBE_ARG_STR, .v.s = intern(s, val)};
  return push_raw_arg(s, &a);
}

/* Appends `st` (a stat of kind S_*) as an arg; returns 0 or TBE_ENOMEM. */
static int push_arg(xs_state *s, smd_cache *c, const XStat *st, int kind) {
  tbe_arg a;
  memset(&a, 0, sizeof a);
  switch (st->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE:
      a.type = TBE_ARG_DOUBLE;
      a.v.d = st->double_value;
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE:
      a.type = TBE_ARG_UINT;
      a.v.u = st->uint64_value;
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE:
      a.type = TBE_ARG_INT;
      a.v.i = st->int64_value;
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE:
      a.type = TBE_ARG_STR;
      a.v.s = intern(s, st->str_value);
      break;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE: {
      /* The referenced name, interned once per plane. */
      uint32_t ri = idmap_get(&s->smap, (int64_t)st->ref_value);
      if (ri == TBE_NONE) return 0;
      a.type = TBE_ARG_STR;
      a.v.s = smd_key(s, &s->smd[ri]);
      break;
    }
    default: return 0; /* bytes (serialized protos) and unset values are not kept */
  }
  if (s->nargs >= UINT16_MAX) return 0;
  a.key = c ? smd_key(s, c) : intern(s, "stat");
  /* A later stat with the same key (the event's own) replaces the
   * metadata's. */
  for (size_t i = 0; i < s->nargs; i++)
    if (s->args[i].key == a.key) {
      s->args[i] = a;
      s->akind[i] = (uint8_t)kind;
      return 0;
    }
  int rc = push_raw_arg(s, &a);
  if (!rc && s->nargs) s->akind[s->nargs - 1] = (uint8_t)kind;
  return rc;
}

/* ---- detail strings ---- */

static tbe_mem_kind mem_kind_of(const char *s, size_t n) {
  static const char *const names[] = {"unknown", "pageable", "pinned", "device",
                                      "array", "managed", "device_static", "managed_static"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) return (tbe_mem_kind)i;
  return TBE_MEM_UNKNOWN;
}

/* Calls fn(ctx, key, klen, val, vlen) for each "key:value" token separated
 * by spaces or newlines. */
typedef void (*kv_fn)(void *ctx, const char *k, size_t kl, const char *v, size_t vl);
static void each_kv(const char *s, kv_fn fn, void *ctx) {
  while (*s) {
    while (*s == ' ' || *s == '\n' || *s == '\t') s++;
    const char *tok = s;
    while (*s && *s != ' ' && *s != '\n' && *s != '\t') s++;
    const char *colon = memchr(tok, ':', (size_t)(s - tok));
    if (colon) fn(ctx, tok, (size_t)(colon - tok), colon + 1, (size_t)(s - colon - 1));
  }
}

static int key_is(const char *k, size_t kl, const char *want) {
  return strlen(want) == kl && memcmp(k, want, kl) == 0;
}

static uint64_t parse_u64(const char *v, size_t vl) {
  uint64_t r = 0;
  for (size_t i = 0; i < vl && v[i] >= '0' && v[i] <= '9'; i++) r = r * 10 + (uint64_t)(v[i] - '0');
  return r;
}

static void parse_dims(const char *v, size_t vl, uint32_t d[3]) {
  d[0] = d[1] = d[2] = 1;
  size_t i = 0;
  for (int k = 0; k < 3 && i < vl; k++) {
    size_t j = i;
    while (j < vl && v[j] != ',') j++;
    if (j > i) d[k] = (uint32_t)parse_u64(v + i, j - i);
    i = j + 1;
  }
}

static void kernel_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  tbe_kernel *kd = ctx;
  if (key_is(k, kl, "regs")) kd->registers = (uint16_t)parse_u64(v, vl);
  else if (key_is(k, kl, "static_shared")) kd->static_shared = (uint32_t)parse_u64(v, vl);
  else if (key_is(k, kl, "dynamic_shared")) kd->dynamic_shared = (uint32_t)parse_u64(v, vl);
  else if (key_is(k, kl, "grid")) parse_dims(v, vl, kd->grid);
  else if (key_is(k, kl, "block")) parse_dims(v, vl, kd->block);
  else if (key_is(k, kl, "occ_pct")) {
    char buf[32];
    size_t n = vl < sizeof buf - 1 ? vl : sizeof buf - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
    kd->occupancy_pct = strtof(buf, NULL);
  }
}

typedef struct copy_parse {
  tbe_memcpy *m;
  int have_dest;
} copy_parse;

static void memcpy_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  copy_parse *cp = ctx;
  if (key_is(k, kl, "kind_src")) cp->m->src_kind = (uint8_t)mem_kind_of(v, vl);
  else if (key_is(k, kl, "kind_dst")) cp->m->dst_kind = (uint8_t)mem_kind_of(v, vl);
  else if (key_is(k, kl, "size") || key_is(k, kl, "num_bytes")) cp->m->bytes = parse_u64(v, vl);
  else if (key_is(k, kl, "dest") && vl) {
    cp->m->dst_device = (int32_t)parse_u64(v, vl);
    cp->have_dest = 1;
  } else if (key_is(k, kl, "async")) cp->m->async = parse_u64(v, vl) != 0;
}

static void memset_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl) {
  tbe_memset *m = ctx;
  if (key_is(k, kl, "kind")) m->mem_kind = (uint8_t)mem_kind_of(v, vl);
  else if (key_is(k, kl, "num_bytes") || key_is(k, kl, "size")) m->bytes = parse_u64(v, vl);
  else if (key_is(k, kl, "async")) m->async = parse_u64(v, vl) != 0;
}

static int is_host_kind(uint8_t k) {
  return k == TBE_MEM_PAGEABLE || k == TBE_MEM_PINNED || k == TBE_MEM_MANAGED ||
         k == TBE_MEM_MANAGED_STATIC;
}

/* Copy direction from the XLA event name, else from the memory kinds. */
static uint8_t copy_kind_of(const char *name, const tbe_memcpy *m, int ours) {
  static const struct {
    const char *n;
    tbe_copy_kind k;
  } tab[] = {{"MemcpyH2D", TBE_COPY_HTOD}, {"MemcpyD2H", TBE_COPY_DTOH}, {"MemcpyD2D", TBE_COPY_DTOD},
             {"MemcpyP2P", TBE_COPY_PTOP}, {"MemcpyHToD", TBE_COPY_HTOD}, {"MemcpyDToH", TBE_COPY_DTOH},
             {"MemcpyDToD", TBE_COPY_DTOD}, {"MemcpyPToP", TBE_COPY_PTOP}, {"MemcpyH2H", TBE_COPY_HTOH},
             {"MemcpyHToH", TBE_COPY_HTOH}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strncmp(name, tab[i].n, strlen(tab[i].n)) == 0) return (uint8_t)tab[i].k;
  /* Ours for what "MemcpyOther" and the kinds would not say
   * (export_xplane.c memcpy_xla_name): "MemcpyUnknown", "MemcpyHtoA", ... */
  for (int k = TBE_COPY_UNKNOWN; k <= TBE_COPY_PTOP && ours; k++) {
    const char *kn = tbe_copy_kind_name((tbe_copy_kind)k);
    if (strncmp(name, "Memcpy", 6) == 0 && strcmp(name + 6, kn) == 0) return (uint8_t)k;
  }
  int sh = is_host_kind(m->src_kind), dh = is_host_kind(m->dst_kind);
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

/* "$$<n>" or "<n>" -> n. */
static uint16_t parse_context(const char *s) {
  while (*s == '$') s++;
  return (uint16_t)strtoul(s, NULL, 10);
}

/* ---- planes ---- */

static plane_class classify_plane(const char *name, int32_t *gpu) {
  if (strcmp(name, "/host:CPU") == 0 || strcmp(name, "/host:CUPTI") == 0) return P_HOST;
  if (strcmp(name, "/host:NVTX-CUPTI") == 0) return P_HOST_NVTX;
  if (strcmp(name, "/host:python-tracer") == 0) return P_HOST_PYTHON;
  if (strcmp(name, "Task Environment") == 0) return P_TASKENV;
  static const char gp[] = "/device:GPU:";
  if (strncmp(name, gp, sizeof gp - 1) == 0) {
    char *end;
    long v = strtol(name + sizeof gp - 1, &end, 10);
    if (end != name + sizeof gp - 1 && *end == 0 && v >= 0 && v < INT32_MAX) {
      *gpu = (int32_t)v;
      return P_GPU;
    }
  }
  return P_OTHER;
}

static int load_metadata(xs_state *s, const XPlane *p) {
  s->nsmd = p->n_stat_metadata;
  s->nemd = p->n_event_metadata;
  s->smd = calloc(s->nsmd ? s->nsmd : 1, sizeof *s->smd);
  s->emd = calloc(s->nemd ? s->nemd : 1, sizeof *s->emd);
  if (!s->smd || !s->emd) return TBE_ENOMEM;
  if (idmap_init(&s->smap, s->nsmd) || idmap_init(&s->emap, s->nemd)) return TBE_ENOMEM;
  static const XStatMetadata empty_smd = TENSORFLOW__PROFILER__XSTAT_METADATA__INIT;
  static const XEventMetadata empty_emd = TENSORFLOW__PROFILER__XEVENT_METADATA__INIT;
  for (size_t i = 0; i < s->nsmd; i++) {
    const Tensorflow__Profiler__XPlane__StatMetadataEntry *e = p->stat_metadata[i];
    const XStatMetadata *md = e->value ? e->value : &empty_smd;
    s->smd[i].md = md;
    s->smd[i].kind = classify_stat(md->name);
    s->smd[i].key = TBE_NONE;
    idmap_put(&s->smap, e->key, (uint32_t)i);
  }
  for (size_t i = 0; i < s->nemd; i++) {
    const Tensorflow__Profiler__XPlane__EventMetadataEntry *e = p->event_metadata[i];
    s->emd[i].md = e->value ? e->value : &empty_emd;
    s->emd[i].name = TBE_NONE;
    idmap_put(&s->emap, e->key, (uint32_t)i);
  }
  return 0;
}

static void free_metadata(xs_state *s) {
  free(s->smd);
  free(s->emd);
  s->smd = NULL;
  s->emd = NULL;
  idmap_free(&s->smap);
  idmap_free(&s->emap);
}

static void plane_device_info(xs_state *s, const XPlane *p, int32_t dev) {
  uint32_t di;
  if (tbe_trace_device(s->t, dev, &di)) return;
  tbe_device *d = &s->t->devices[di];
  for (size_t i = 0; i < p->n_stats; i++) {
    const XStat *st = p->stats[i];
    const smd_cache *c = stat_md(s, st->metadata_id);
    if (!c) continue;
    const char *n = c->md->name;
    int64_t v = 0;
    int have = stat_int(st, &v);
    if (strcmp(n, "gpu_device_name") == 0) {
      const char *str = stat_str(s, st);
      if (str) d->name = intern(s, str);
    } else if (!have) {
      continue;
    } else if (strcmp(n, "clock_rate") == 0) {
      d->clock_khz = (int32_t)v;
    } else if (strcmp(n, "core_count") == 0) {
      d->sm_count = (int32_t)v;
    } else if (strcmp(n, "memory_bandwidth") == 0) {
      d->memory_bandwidth = v;
    } else if (strcmp(n, "memory_size") == 0) {
      d->memory_bytes = v;
    } else if (strcmp(n, "compute_cap_major") == 0) {
      d->cc_major = (int32_t)v;
    } else if (strcmp(n, "compute_cap_minor") == 0) {
      d->cc_minor = (int32_t)v;
    }
  }
}

/* Our exporter's "tbexport_track_pids": the tracks whose process is not
 * their plane's process_id (an nsys export of several processes), as
 * space-separated "TID:PID" (host threads) and "DEV/STREAM:PID" (GPU
 * streams). */
static int parse_track_pids(xs_state *s, const char *p) {
  while (*p) {
    char *end;
    errno = 0;
    long long a = strtoll(p, &end, 10), dev = -1;
    if (end == p || errno) return 0; /* not ours after all: ignore the rest */
    if (*end == '/') {
      dev = a;
      p = end + 1;
      a = strtoll(p, &end, 10);
      if (end == p || errno || dev < 0 || dev > INT32_MAX) return 0;
    }
    if (*end != ':') return 0;
    p = end + 1;
    long long pid = strtoll(p, &end, 10);
    if (end == p || (*end && *end != ' ') || errno || pid < 0) return 0;
    p = *end ? end + 1 : end;
    if (s->ntrack_pids == s->cap_track_pids) {
      size_t nc = s->cap_track_pids ? 2 * s->cap_track_pids : 16;
      int64_t(*x)[3] = realloc(s->track_pids, nc * sizeof *x);
      if (!x) return TBE_ENOMEM;
      s->track_pids = x;
      s->cap_track_pids = nc;
    }
    s->track_pids_sorted = 0;
    s->track_pids[s->ntrack_pids][0] = dev;
    s->track_pids[s->ntrack_pids][1] = a;
    s->track_pids[s->ntrack_pids++][2] = pid;
  }
  return 0;
}

static int cmp_track_pid(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  for (int k = 0; k < 2; k++)
    if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

/* The process of host thread `id` (dev -1) or GPU stream `id` of `dev`:
 * from tbexport_track_pids, else `pid`.  The table is sorted once
 * (stably: the first entry of a key wins, as it did in file order) and
 * searched, so lines times entries is never walked. */
static int64_t track_pid(xs_state *s, int64_t dev, int64_t id, int64_t pid) {
  if (!s->ntrack_pids) return pid;
  if (!s->track_pids_sorted) {
    /* Stable (a bottom-up merge sort): of entries with one key, the first
     * in file order still wins. */
    size_t n = s->ntrack_pids;
    int64_t(*tmp)[3] = malloc(n * sizeof *tmp);
    if (tmp) {
      for (size_t w = 1; w < n; w *= 2) { /* bottom-up merge sort: stable */
        for (size_t lo = 0; lo < n; lo += 2 * w) {
          size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
          size_t i = lo, j = mid, k = lo;
          while (i < mid && j < hi)
            memcpy(tmp[k++], cmp_track_pid(s->track_pids[j], s->track_pids[i]) < 0 ? s->track_pids[j++]
                                                                                  : s->track_pids[i++],
                   sizeof *tmp);
          while (i < mid) memcpy(tmp[k++], s->track_pids[i++], sizeof *tmp);
          while (j < hi) memcpy(tmp[k++], s->track_pids[j++], sizeof *tmp);
        }
        memcpy(s->track_pids, tmp, n * sizeof *tmp);
      }
      free(tmp);
      s->track_pids_sorted = 1;
    } else {
      for (size_t i = 0; i < s->ntrack_pids; i++) /* no memory: the slow way */
        if (s->track_pids[i][0] == dev && s->track_pids[i][1] == id) return s->track_pids[i][2];
      return pid;
    }
  }
  int64_t key[3] = {dev, id, 0};
  size_t lo = 0, hi = s->ntrack_pids;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_track_pid(s->track_pids[mid], key) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < s->ntrack_pids && cmp_track_pid(s->track_pids[lo], key) == 0) return s->track_pids[lo][2];
  return pid;
}

/* The plane's process_id stat, or `fallback`. */
static int64_t plane_pid(xs_state *s, const XPlane *p, int64_t fallback) {
  for (size_t i = 0; i < p->n_stats; i++) {
    const smd_cache *c = stat_md(s, p->stats[i]->metadata_id);
    int64_t v;
    if (c && strcmp(c->md->name, "process_id") == 0 && stat_int(p->stats[i], &v)) return v;
  }
  return fallback;
}

static int add_step_cand(step_cand **arr, size_t *n, size_t *cap, int64_t num, int64_t start,
                         int64_t end, tbe_str name, uint32_t track) {
  if (grow((void **)arr, cap, *n + 1, sizeof **arr)) return TBE_ENOMEM;
  (*arr)[(*n)++] = (step_cand){num, start, end, name, track};
  return 0;
}

/* Widens the span of step candidate `group` (by group_id) to [start, end). */
static int add_group(xs_state *s, int64_t group, int64_t start, int64_t end) {
  uint32_t gi = idmap_get(&s->gmap, group);
  if (gi != TBE_NONE) {
    step_cand *g = &s->groups[gi];
    if (start < g->start) g->start = start;
    if (end > g->end) g->end = end;
    return 0;
  }
  if ((s->ngroups + 1) * 2 > s->gmap.cap) {
    idmap nm;
    if (idmap_init(&nm, s->ngroups * 2 + 16)) {
      idmap_free(&nm);
      return TBE_ENOMEM;
    }
    for (size_t g = 0; g < s->ngroups; g++) idmap_put(&nm, s->groups[g].num, (uint32_t)g);
    idmap_free(&s->gmap);
    s->gmap = nm;
  }
  int rc = add_step_cand(&s->groups, &s->ngroups, &s->cap_groups, group, start, end, 0, TBE_NONE);
  if (!rc) idmap_put(&s->gmap, group, (uint32_t)(s->ngroups - 1));
  return rc;
}

static const char *line_name(const XLine *o) {
  return o->display_name && *o->display_name ? o->display_name : o->name;
}

static const XPlane *sort_plane; /* qsort has no context argument here */

static int cmp_line(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  int c = strcmp(line_name(sort_plane->lines[a]), line_name(sort_plane->lines[b]));
  return c ? c : (a > b) - (a < b);
}

/* The id of the first line (in file order) named exactly name[0..n), or
 * `dflt`: for "<thread>/NVTX" lines of other producers.  The plane's
 * lines are sorted by name once, so every NVTX line costs a binary search,
 * not a walk over all lines. */
static int64_t line_named(xs_state *s, const XPlane *p, const char *name, size_t n, int64_t dflt) {
  if (!s->lorder) {
    s->lorder = malloc((p->n_lines ? p->n_lines : 1) * sizeof *s->lorder);
    if (!s->lorder) return dflt; /* without memory: the thread stays the line's own */
    s->nlorder = 0;
    for (size_t k = 0; k < p->n_lines; k++)
      if (line_name(p->lines[k])) s->lorder[s->nlorder++] = (uint32_t)k;
    sort_plane = p;
    qsort(s->lorder, s->nlorder, sizeof *s->lorder, cmp_line);
  }
  size_t lo = 0, hi = s->nlorder;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *on = line_name(p->lines[s->lorder[mid]]);
    int c = strncmp(on, name, n);
    if (c == 0 && on[n]) c = 1; /* longer than name */
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < s->nlorder) {
    const char *on = line_name(p->lines[s->lorder[lo]]);
    if (strncmp(on, name, n) == 0 && !on[n]) return p->lines[s->lorder[lo]]->id;
  }
  return dflt;
}

/* A time out of the model's range: refused with the field named and the
 * plane's offset (the decoded message keeps no offsets of its own). */
static int time_fail(xs_state *s, size_t line, size_t event, const char *field) {
  char where[64] = "";
  if (event != SIZE_MAX) snprintf(where, sizeof where, " event %zu", event);
  return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, s->plane_off, 0, 0,
                          "XSpace plane %zu line %zu%s: %s is out of range (more than 146 years "
                          "from 1970)",
                          s->plane_idx, line, where, field);
}

static int import_plane(xs_state *s, const XPlane *p, size_t pidx) {
  int32_t gpu = -1;
  free(s->lorder);
  s->lorder = NULL;
  plane_class pc = classify_plane(p->name, &gpu);
  int rc = load_metadata(s, p);
  if (rc) return rc;
  tbe_trace *t = s->t;
  int is_host = pc == P_HOST || pc == P_HOST_NVTX || pc == P_HOST_PYTHON;
  int64_t pid;
  uint32_t pi;
  tbe_str plane_cat = 0;
  if (is_host) {
    pid = s->host_pid; /* all host planes are one process */
    if ((rc = tbe_trace_process(t, pid, &pi))) return rc;
    if (!t->processes[pi].name) t->processes[pi].name = intern(s, "/host:CPU");
  } else if (pc == P_GPU) {
    pid = plane_pid(s, p, s->have_host_pid ? s->host_pid : -1);
    plane_device_info(s, p, gpu);
    if (pid >= 0 && p->n_lines) {
      if ((rc = tbe_trace_process(t, pid, &pi))) return rc;
    }
  } else {
    if (!p->n_lines) return 0;  /* metadata-only planes carry no events */
    pid = XS_SYNTH_PID + 1 + (int64_t)pidx;
    if ((rc = tbe_trace_process(t, pid, &pi))) return rc;
    t->processes[pi].name = intern(s, p->name);
    plane_cat = t->processes[pi].name;
  }
  if (pc == P_TASKENV && !p->n_lines) return 0;

  for (size_t li = 0; li < p->n_lines; li++) {
    const XLine *ln = p->lines[li];
    const char *lname = ln->display_name && *ln->display_name ? ln->display_name : ln->name;
    if (!lname) lname = "";
    /* Our exporter's line of steps no host event carries: steps only. */
    int step_line = is_host && ln->id == XS_STEP_LINE && strcmp(lname, "Step markers") == 0;
    /* "<thread>/NVTX" lines (XLA, our exporter) hold NVTX of that thread. */
    int nvtx_line = 0;
    int64_t tid = ln->id;
    size_t ll = strlen(lname);
    if (is_host && ll > 5 && strcmp(lname + ll - 5, "/NVTX") == 0) {
      nvtx_line = 1;
      /* Ours name the thread by the line id (export_xplane.c). */
      if (s->ours && ln->id >= (int64_t)1 << 32 && ln->id < (int64_t)2 << 32)
        tid = ln->id - ((int64_t)1 << 32);
      else if (s->ours && ln->id >= (int64_t)4 << 32 && ln->id < (int64_t)5 << 32)
        tid = ((int64_t)2 << 32) + (ln->id - ((int64_t)4 << 32));
      if (!s->ours) tid = line_named(s, p, lname, ll - 5, tid);
    }
    uint32_t track = 0;
    if (step_line)
      rc = 0;
    else if (is_host) {
      int64_t tpid = track_pid(s, -1, tid, pid);
      uint32_t tpi;
      if (tpid != pid && (rc = tbe_trace_process(t, tpid, &tpi))) return rc;
      rc = tbe_trace_track(t, TBE_TRACK_THREAD, tpid, tid, -1, &track);
    } else if (pc == P_GPU) {
      int64_t spid = track_pid(s, gpu, ln->id, pid);
      uint32_t spi;
      if (spid != pid && (rc = tbe_trace_process(t, spid, &spi))) return rc;
      rc = tbe_trace_track(t, TBE_TRACK_STREAM, spid, ln->id, gpu, &track);
    }
    else
      rc = tbe_trace_track(t, TBE_TRACK_OTHER, pid, ln->id, -1, &track);
    if (rc) return rc;
    if (!step_line && *lname && !nvtx_line && !t->tracks[track].name)
      t->tracks[track].name = intern(s, lname);
    int is_counter_line = strcmp(lname, "_counters_") == 0;

    /* Times outside the model's range are refused, naming the field
     * (common/checked.h); in range, every sum below fits int64. */
    int64_t base = ln->timestamp_ns;
    if (!tbe__time_ok(base))
      return time_fail(s, li, SIZE_MAX, "line timestamp_ns");
    if (base < XS_EPOCH_MIN_NS) {
      if (s->start_ns) {
        base += s->start_ns;
        if (!tbe__time_ok(base)) return time_fail(s, li, SIZE_MAX, "line timestamp_ns + profile_start_time");
      } else if (!s->warned_relative) {
        s->warned_relative = 1;
        tbe_trace_warn(t, "XSpace line times are relative to the session and the file has no "
                          "profile_start_time: times are not wall-clock");
      }
    }

    for (size_t ei = 0; ei < ln->n_events; ei++) {
      const XEvent *xe = ln->events[ei];
      tbe_event ev;
      memset(&ev, 0, sizeof ev);
      ev.track = track;
      uint32_t mi = idmap_get(&s->emap, xe->metadata_id);
      emd_cache *em = mi == TBE_NONE ? NULL : &s->emd[mi];
      if (em) {
        if (em->name == TBE_NONE) {
          const XEventMetadata *md = em->md;
          int has_disp = md->display_name && *md->display_name;
          em->name = intern(s, has_disp ? md->display_name : md->name);
          em->long_name =
              has_disp && strcmp(md->display_name, md->name) != 0 ? intern(s, md->name) : 0;
        }
        ev.name = em->name;
      } else {
        s->unknown_md++;
      }
      const char *name = tbe_trace_str(t, ev.name);
      int64_t num_occ = -1;
      if (xe->data_case == TENSORFLOW__PROFILER__XEVENT__DATA_NUM_OCCURRENCES) {
        ev.start_ns = base;
        num_occ = xe->num_occurrences;
      } else {
        ev.start_ns = base + tbe__ps_floor_ns(xe->offset_ps);
        if (!tbe__time_ok(ev.start_ns)) return time_fail(s, li, ei, "offset_ps");
      }
      ev.dur_ns = xe->duration_ps >= 0 ? tbe__ps_to_ns(xe->duration_ps) : -1;
      if (ev.dur_ns > 0 && !tbe__span_ok(ev.start_ns, ev.dur_ns))
        return time_fail(s, li, ei, "duration_ps");
      if (t->nevents - s->ev_first >= s->o->max_events) {
        char what[96];
        snprintf(what, sizeof what, "more events than the limit (XSpace plane %zu, line %zu)",
                 s->plane_idx, li);
        return tbe__import_limit(s->err, s->path, s->plane_off, TBE__LIM_EVENTS, s->o, what);
      }

      /* Stats: metadata's first, then the event's. */
      s->nargs = 0;
      const char *kdet = NULL, *cdet = NULL, *mdet = NULL, *ctx = NULL, *step_name = NULL;
      const char *sync_kind = NULL, *nvtx_dom = NULL;
      int tbe_kind = -1; /* our exporter's tbexport_kind */
      tbe_str tbe_cat = 0;
      int have_occ = 0, have_step = 0, have_group = 0, have_corr = 0, have_value = 0;
      int have_nvtx = 0, have_addr = 0, have_nbytes = 0, have_devord = 0;
      double occ = -1, value = 0;
      int64_t step_num = 0, group = 0, iv;
      tbe_nvtx nv;
      tbe_memory mem;
      tbe_sync sy;
      memset(&nv, 0, sizeof nv);
      memset(&mem, 0, sizeof mem);
      memset(&sy, 0, sizeof sy);
      mem.total_allocated = mem.total_reserved = -1;
      mem.device = -1;
      sy.stream = -1;
      size_t nmd = em ? em->md->n_stats : 0;
      for (size_t k = 0; k < nmd + xe->n_stats; k++) {
        const XStat *st = k < nmd ? em->md->stats[k] : xe->stats[k - nmd];
        uint32_t ci = idmap_get(&s->smap, st->metadata_id);
        smd_cache *c = ci == TBE_NONE ? NULL : &s->smd[ci];
        int kind = c ? c->kind : S_OTHER;
        switch (kind) {
          case S_CORRELATION:
            if (stat_int(st, &iv)) {
              ev.correlation = (uint64_t)iv;
              have_corr = 1;
              continue;
            }
            break;
          case S_EXTERNAL_ID:
            if (stat_int(st, &iv)) {
              ev.external_id = (uint64_t)iv;
              continue;
            }
            break;
          case S_KERNEL_DETAILS:
            if ((kdet = stat_str(s, st))) continue;
            break;
          case S_MEMCPY_DETAILS:
            if ((cdet = stat_str(s, st))) continue;
            break;
          case S_MEMSET_DETAILS:
            if ((mdet = stat_str(s, st))) continue;
            break;
          case S_CONTEXT: ctx = stat_str(s, st); break;
          case S_OCCUPANCY: have_occ = stat_double(st, &occ); break;
          case S_STEP_NUM: have_step = stat_int(st, &step_num); break;
          case S_GROUP_ID: have_group = stat_int(st, &group); break;
          case S_STEP_NAME: step_name = stat_str(s, st); break;
          case S_SYNC_KIND: sync_kind = stat_str(s, st); break;
          case S_SYNC_STREAM:
            if (stat_int(st, &iv)) sy.stream = iv;
            break;
          case S_CUDA_EVENT:
            if (stat_int(st, &iv)) sy.cuda_event = (uint64_t)iv;
            break;
          case S_NVTX_DOMAIN:
            nvtx_dom = stat_str(s, st);
            have_nvtx = 1;
            break;
          case S_NVTX_COLOR:
            if (stat_int(st, &iv)) nv.color = (uint32_t)iv;
            have_nvtx = 1;
            break;
          case S_NVTX_CATEGORY:
            if (stat_int(st, &iv)) nv.category = (uint32_t)iv;
            have_nvtx = 1;
            break;
          case S_NVTX_PAYLOAD:
            have_nvtx = 1;
            if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE) {
              nv.payload_type = TBE_PAYLOAD_INT64;
              nv.payload.i = st->int64_value;
            } else if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE) {
              nv.payload_type = TBE_PAYLOAD_UINT64;
              nv.payload.u = st->uint64_value;
            } else if (st->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_DOUBLE_VALUE) {
              nv.payload_type = TBE_PAYLOAD_DOUBLE;
              nv.payload.d = st->double_value;
            }
            break;
          case S_VALUE: have_value = stat_double(st, &value); break;
          case S_TBE_KIND: {
            const char *kn = stat_str(s, st);
            for (int q = 0; kn && q < TBE_EV__COUNT; q++)
              if (strcmp(kn, tbe_event_kind_name((tbe_event_kind)q)) == 0) tbe_kind = q;
            continue;
          }
          case S_ASYNC:
            if (stat_int(st, &iv) && iv) {
              ev.flags |= TBE_EVF_ASYNC;
              continue;
            }
            break;
          case S_TBE_CAT: {
            const char *cn = stat_str(s, st);
            if (cn) tbe_cat = intern(s, cn);
            continue;
          }
          case S_ADDR:
            if ((have_addr = stat_int(st, &iv))) mem.addr = (uint64_t)iv;
            break;
          case S_NUM_BYTES:
            if ((have_nbytes = stat_int(st, &iv))) mem.bytes = iv;
            break;
          case S_TOTAL_ALLOC:
            if (stat_int(st, &iv)) mem.total_allocated = iv;
            break;
          case S_TOTAL_RES:
            if (stat_int(st, &iv)) mem.total_reserved = iv;
            break;
          case S_DEV_ORD:
            if ((have_devord = stat_int(st, &iv))) mem.device = (int32_t)iv;
            break;
          default:
            if (is_counter_line && !have_value) have_value = stat_double(st, &value);
            break;
        }
        if ((rc = push_arg(s, c, st, kind))) return rc;
      }

      if (step_line) {
        if (have_step &&
            (rc = add_step_cand(&s->steps, &s->nsteps, &s->cap_steps, step_num, ev.start_ns,
                                ev.start_ns + (ev.dur_ns > 0 ? ev.dur_ns : 0),
                                step_name ? intern(s, step_name) : ev.name, TBE_NONE)))
          return rc;
        continue;
      }

      /* What the event is, and which stats that consumes. */
      const void *detail = NULL;
      uint32_t consumed = 0; /* bits (1 << S_*) */
      tbe_kernel kd;
      tbe_memcpy md;
      tbe_memset ms;
      tbe_counter cv;
      const char *leftover[3] = {kdet, cdet, mdet};
      if (pc == P_GPU) {
        uint16_t context = ctx ? parse_context(ctx) : 0;
        int memcpy_name = strncmp(name, "Memcpy", 6) == 0, memset_name = strncmp(name, "Memset", 6) == 0;
        if (sync_kind) {
          for (int k = 0; k <= TBE_SYNC_CONTEXT; k++)
            if (strcmp(sync_kind, tbe_sync_kind_name((tbe_sync_kind)k)) == 0) sy.sync_kind = (uint8_t)k;
          ev.kind = TBE_EV_SYNC;
          detail = &sy;
          consumed = 1u << S_SYNC_KIND | 1u << S_SYNC_STREAM | 1u << S_CUDA_EVENT;
        } else if (kdet || (have_corr && !cdet && !mdet && !memcpy_name && !memset_name)) {
          memset(&kd, 0, sizeof kd);
          kd.grid[0] = kd.grid[1] = kd.grid[2] = 1;
          kd.block[0] = kd.block[1] = kd.block[2] = 1;
          kd.occupancy_pct = -1;
          kd.blocks_per_sm = -1;
          kd.warps_per_sm = -1;
          kd.queued_ns = -1;
          kd.context = context;
          if (kdet) each_kv(kdet, kernel_kv, &kd);
          if (kd.occupancy_pct < 0 && have_occ) kd.occupancy_pct = (float)occ;
          ev.kind = TBE_EV_KERNEL;
          detail = &kd;
          leftover[0] = NULL;
          consumed = 1u << S_OCCUPANCY | 1u << S_CONTEXT;
        } else if (cdet || memcpy_name) {
          memset(&md, 0, sizeof md);
          md.src_device = gpu;
          md.dst_device = gpu;
          md.context = context;
          copy_parse cp = {&md, 0};
          if (cdet) each_kv(cdet, memcpy_kv, &cp);
          md.copy_kind = copy_kind_of(name, &md, s->ours);
          ev.kind = TBE_EV_MEMCPY;
          detail = &md;
          leftover[1] = NULL;
          consumed = 1u << S_CONTEXT;
        } else if (mdet || memset_name) {
          memset(&ms, 0, sizeof ms);
          ms.context = context;
          if (mdet) each_kv(mdet, memset_kv, &ms);
          ev.kind = TBE_EV_MEMSET;
          detail = &ms;
          leftover[2] = NULL;
          consumed = 1u << S_CONTEXT;
        }
      } else if (is_host) {
        if (have_corr) {
          ev.kind = strncmp(name, "cuda", 4) == 0 ? TBE_EV_RUNTIME : TBE_EV_DRIVER;
          consumed = 1u << S_DEVICE_ID;
        } else if (pc == P_HOST_NVTX || nvtx_line || have_nvtx) {
          ev.kind = ev.dur_ns ? TBE_EV_NVTX_RANGE : TBE_EV_NVTX_MARK;
          /* "NVTX:<domain>:<message>" (XLA, our exporter): name = message. */
          if (strncmp(name, "NVTX:", 5) == 0) {
            const char *dom = name + 5, *colon = strchr(dom, ':');
            if (colon) {
              if (colon > dom && (rc = tbe_trace_intern(t, dom, (size_t)(colon - dom), &nv.domain)))
                return rc;
              if ((rc = tbe_trace_intern(t, colon + 1, strlen(colon + 1), &ev.name))) return rc;
            }
          }
          if (nvtx_dom && *nvtx_dom) nv.domain = intern(s, nvtx_dom);
          detail = &nv;
          consumed = 1u << S_NVTX_DOMAIN | 1u << S_NVTX_COLOR | 1u << S_NVTX_CATEGORY |
                     1u << S_NVTX_PAYLOAD;
        } else if (have_addr && have_nbytes && have_devord && ev.dur_ns == 0) {
          ev.kind = TBE_EV_MEMORY;
          detail = &mem;
          consumed = 1u << S_ADDR | 1u << S_NUM_BYTES | 1u << S_TOTAL_ALLOC | 1u << S_TOTAL_RES |
                     1u << S_DEV_ORD;
        } else if (pc == P_HOST_PYTHON) {
          ev.kind = TBE_EV_PYTHON;
        } else {
          ev.kind = ev.dur_ns ? TBE_EV_CPU_OP : TBE_EV_INSTANT;
        }
        if (have_step) {
          consumed |= 1u << S_STEP_NUM | 1u << S_ROOT;
          if ((rc = add_step_cand(&s->steps, &s->nsteps, &s->cap_steps, step_num, ev.start_ns,
                                  ev.start_ns + (ev.dur_ns > 0 ? ev.dur_ns : 0),
                                  step_name ? intern(s, step_name) : ev.name, track)))
            return rc;
        } else if (have_group) {
          if ((rc = add_group(s, group, ev.start_ns, ev.start_ns + (ev.dur_ns > 0 ? ev.dur_ns : 0))))
            return rc;
        }
      } else {
        ev.cat = plane_cat;
      }
      if (!ev.kind && !detail) {
        /* Not yet classified (kind 0 is KERNEL, set only with a detail). */
        if ((is_counter_line || ev.dur_ns == 0) && have_value) {
          cv.value = value;
          ev.kind = TBE_EV_COUNTER;
          detail = &cv;
          consumed |= 1u << S_VALUE;
        } else if (pc == P_GPU && ev.dur_ns) {
          /* A range on a stream that is no GPU activity: an annotation
           * projected onto the stream (our exporter writes those). */
          ev.kind = TBE_EV_GPU_ANNOTATION;
        } else {
          ev.kind = ev.dur_ns ? TBE_EV_GENERIC : TBE_EV_INSTANT;
        }
      }
      /* Our exporter's word on a host event's kind wins over the
       * conventions (export_xplane.c writes it where they would be wrong). */
      if (is_host && tbe_kind >= 0 && tbe_kind != ev.kind && !tbe_event_kind_is_gpu(tbe_kind)) {
        ev.kind = (uint8_t)tbe_kind;
        switch (tbe_kind) {
          case TBE_EV_NVTX_RANGE:
          case TBE_EV_NVTX_MARK:
            if (!detail) detail = &nv;
            consumed |= 1u << S_NVTX_DOMAIN | 1u << S_NVTX_COLOR | 1u << S_NVTX_CATEGORY |
                        1u << S_NVTX_PAYLOAD;
            break;
          case TBE_EV_MEMORY:
            detail = &mem;
            consumed |= 1u << S_ADDR | 1u << S_NUM_BYTES | 1u << S_TOTAL_ALLOC |
                        1u << S_TOTAL_RES | 1u << S_DEV_ORD;
            break;
          case TBE_EV_SYNC:
            if (sync_kind)
              for (int q = 0; q <= TBE_SYNC_CONTEXT; q++)
                if (strcmp(sync_kind, tbe_sync_kind_name((tbe_sync_kind)q)) == 0)
                  sy.sync_kind = (uint8_t)q;
            detail = &sy;
            consumed |= 1u << S_SYNC_KIND | 1u << S_SYNC_STREAM | 1u << S_CUDA_EVENT;
            break;
          case TBE_EV_COUNTER:
            cv.value = have_value ? value : 0;
            detail = &cv;
            consumed |= 1u << S_VALUE;
            break;
          default: detail = NULL; break;
        }
      }
      if (is_host && tbe_cat) ev.cat = tbe_cat;
      /* Drop consumed stats from the args; keep details of a kind we did not
       * make visible as args. */
      size_t w = 0;
      for (size_t k = 0; k < s->nargs; k++)
        if (!(consumed & (1u << s->akind[k]))) {
          s->args[w] = s->args[k];
          s->akind[w++] = s->akind[k];
        }
      s->nargs = w;
      static const char *const det_keys[3] = {"kernel_details", "memcpy_details", "Memset_details"};
      for (int k = 0; k < 3; k++)
        if (leftover[k] && (rc = push_str_arg(s, det_keys[k], leftover[k]))) return rc;
      if (em && em->long_name) {
        tbe_arg a = {.key = intern(s, "long_name"), .type = TBE_ARG_STR, .v.s = em->long_name};
        if ((rc = push_raw_arg(s, &a))) return rc;
      }
      if (num_occ >= 0) {
        tbe_arg a = {.key = intern(s, "num_occurrences"), .type = TBE_ARG_INT, .v.i = num_occ};
        if ((rc = push_raw_arg(s, &a))) return rc;
      }
      if (ev.kind == TBE_EV_COUNTER || ev.kind == TBE_EV_INSTANT || ev.kind == TBE_EV_NVTX_MARK ||
          ev.kind == TBE_EV_MEMORY)
        ev.dur_ns = ev.dur_ns < 0 ? 0 : ev.dur_ns;
      rc = tbe_trace_add_event(t, &ev, detail, s->args, s->nargs, NULL);
      if (rc) return rc;
    }
  }
  return tbe_trace_error(t);
}

/* ---- driver ---- */

/* The process_id stat of a plane, read from its stat_metadata (5) and
 * stats (6) fields without decoding the lines.  Returns 1 and *pid. */
static int scan_process_id(const uint8_t *b, size_t n, int64_t *pid) {
  int64_t md_id = 0;
  int have_md = 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t pos = 0;
    while (pos < n) {
      uint32_t f, wt;
      size_t data, len, bad;
      if (next_field(b, n, &pos, &f, &wt, &data, &len, &bad)) return 0;
      if (wt != 2) continue;
      if (pass == 0 && f == 5) {
        Tensorflow__Profiler__XPlane__StatMetadataEntry *e =
            (Tensorflow__Profiler__XPlane__StatMetadataEntry *)protobuf_c_message_unpack(
                &tensorflow__profiler__xplane__stat_metadata_entry__descriptor, NULL, len, b + data);
        if (!e) return 0;
        if (e->value && strcmp(e->value->name, "process_id") == 0) {
          md_id = e->key;
          have_md = 1;
        }
        protobuf_c_message_free_unpacked(&e->base, NULL);
      } else if (pass == 1 && f == 6 && have_md) {
        XStat *st = tensorflow__profiler__xstat__unpack(NULL, len, b + data);
        if (!st) return 0;
        int64_t v;
        int ok = st->metadata_id == md_id && stat_int(st, &v);
        tensorflow__profiler__xstat__free_unpacked(st, NULL);
        if (ok) {
          *pid = v;
          return 1;
        }
      }
    }
    if (!have_md) return 0;
  }
  return 0;
}

typedef struct plane_ref {
  size_t off;   /* of the field header */
  size_t data;  /* of the message */
  size_t len;
} plane_ref;

/* Reads the whole input (XSpace needs it all: planes refer to metadata
 * anywhere in them).  A regular file is read at its size.  Through gzip
 * or a pipe the top-level framing is followed as the bytes come, so a
 * stream of something else stops at its first bad header (pass 1 then
 * names it) and a field claiming more than max_input_bytes is refused
 * before it is read; the input layer stops at the limit in any case. */
static int read_input(tbe__input *in, const tbe_import_options *o, const char *path,
                      tbe_import_error *err, uint8_t **out, size_t *n) {
  size_t cap = !in->stream && !in->gzip && in->file_size ? (size_t)in->file_size + 1 : 1 << 20;
  uint8_t *b = malloc(cap);
  if (!b) return TBE_ENOMEM;
  size_t len = 0, next = 0; /* next: the first field header not yet walked */
  int stop = 0, rc = 0, walk = in->stream || in->gzip;
  while (!stop) {
    if (len == cap) {
      size_t nc = cap * 2;
      uint8_t *q = realloc(b, nc);
      if (!q) {
        rc = TBE_ENOMEM;
        break;
      }
      b = q;
      cap = nc;
    }
    size_t got;
    if ((rc = tbe__input_read(in, b + len, cap - len, &got))) {
      tbe__import_input_fail(err, rc, path, in, o);
      break;
    }
    if (!got) break;
    len += got;
    while (walk && next < len) { /* walk the headers that are here */
      size_t hp = next;
      uint64_t tag, v, span;
      if (rd_varint(b, len, &hp, &tag)) {
        stop = len - next >= 10; /* else cut: more to come */
        break;
      }
      uint64_t wt = tag & 7;
      if ((tag >> 3) == 0 || wt == 3 || wt == 4 || wt > 5) {
        stop = 1; /* not protobuf: pass 1 names the byte */
        break;
      }
      if (wt == 1 || wt == 5) {
        span = hp - next + (wt == 1 ? 8 : 4);
      } else {
        if (rd_varint(b, len, &hp, &v)) {
          stop = len - hp >= 10;
          break;
        }
        if (wt == 2 && (v > o->max_input_bytes || hp + v > o->max_input_bytes)) {
          rc = tbe__import_limit(err, path, next, TBE__LIM_INPUT, o,
                                 "an XSpace field longer than the input limit");
          break;
        }
        span = hp - next + (wt == 2 ? v : 0);
      }
      if (span > len - next) break; /* its payload is still coming */
      next += (size_t)span;
    }
    if (rc) break;
  }
  if (rc) {
    free(b);
    return rc;
  }
  *out = b;
  *n = len;
  return 0;
}

/* Copies the `name` field (2) of the plane message for messages, or "". */
static void plane_name(const uint8_t *b, size_t n, char *out, size_t outsz) {
  size_t pos = 0;
  out[0] = 0;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len, bad;
    if (next_field(b, n, &pos, &f, &wt, &data, &len, &bad)) return;
    if (f == 2 && wt == 2) {
      size_t k = len < outsz - 1 ? len : outsz - 1;
      memcpy(out, b + data, k);
      out[k] = 0;
      return;
    }
  }
}

static int fail_plane(xs_state *s, const uint8_t *buf, const plane_ref *pr, size_t idx) {
  char pname[96];
  plane_name(buf + pr->data, pr->len, pname, sizeof pname);
  uint64_t bad = find_bad(buf + pr->data, pr->len, pr->data, M_PLANE, 0);
  if (bad != UINT64_MAX)
    return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, bad, 0, 0,
                            "malformed protobuf field in XSpace plane %zu (\"%s\", starting at byte "
                            "%zu)",
                            idx, pname, pr->off);
  return tbe__import_fail(s->err, TBE_ECORRUPT, s->path, pr->off, 0, 0,
                          "XSpace plane %zu (\"%s\") does not decode as an XPlane message", idx,
                          pname);
}

/* Whether `w` is one of the lines our exporter adds on clamped times. */
static int is_clamp_line(const char *w) {
  static const char *const tails[] = {
      " events had a negative duration in the source (clamped to 0)",
      " event offsets or durations exceeded the int64 picosecond range (clamped)"};
  const char *p = w;
  while (*p >= '0' && *p <= '9') p++;
  if (p == w) return 0;
  for (size_t i = 0; i < 2; i++)
    if (strcmp(p, tails[i]) == 0) return 1;
  return 0;
}

static char *dup_span(const uint8_t *b, size_t n) {
  char *r = malloc(n + 1);
  if (!r) return NULL;
  memcpy(r, b, n);
  r[n] = 0;
  for (size_t i = 0; i < n; i++)
    if (!r[i]) r[i] = ' ';
  return r;
}

int tbe__import_xspace(tbe_trace *t, tbe__input *in, const char *path,
                       const tbe_import_options *o, tbe_import_error *err) {
  uint8_t *buf = NULL;
  size_t n = 0;
  int rc = read_input(in, o, path, err, &buf, &n);
  if (rc) {
    if (err && !err->message[0]) tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
    return rc;
  }

  xs_state s;
  memset(&s, 0, sizeof s);
  s.t = t;
  s.path = path;
  s.err = err;
  s.o = o;
  s.ev_first = t->nevents;
  plane_ref *planes = NULL, *notes = NULL; /* notes: off = field (2 error, 3 warning) */
  size_t nplanes = 0, cap_planes = 0, nnotes = 0, cap_notes = 0;
  tbe_str *lines = NULL;
  tbe_str host = 0;
  int ours = 0; /* written by our exporter (tbexport_source) */

  /* Pass 1: the top-level fields. */
  size_t pos = 0;
  while (pos < n) {
    uint32_t f, wt;
    size_t data, len, bad, fstart = pos;
    if (next_field(buf, n, &pos, &f, &wt, &data, &len, &bad)) {
      rc = tbe__import_fail(err, TBE_ECORRUPT, path, bad, 0, 0,
                            "malformed XSpace field (bad tag or wire type, or a length past the "
                            "end of the %zu-byte file)",
                            n);
      goto out;
    }
    if (f >= 1 && f <= 4 && wt != 2) {
      rc = tbe__import_fail(err, TBE_ECORRUPT, path, fstart, 0, 0,
                            "XSpace field %u has wire type %u, expected a length-delimited value",
                            f, wt);
      goto out;
    }
    if (f == 1) {
      if (grow((void **)&planes, &cap_planes, nplanes + 1, sizeof *planes)) {
        rc = TBE_ENOMEM;
        goto out;
      }
      planes[nplanes++] = (plane_ref){fstart, data, len};
    } else if (f == 2 || f == 3) {
      /* Kept until the Task Environment plane says whose file this is. */
      if (grow((void **)&notes, &cap_notes, nnotes + 1, sizeof *notes)) {
        rc = TBE_ENOMEM;
        goto out;
      }
      notes[nnotes++] = (plane_ref){f, data, len};
    } else if (f == 4 && !host && len) {
      const uint8_t *nul = memchr(buf + data, 0, len);
      if ((rc = tbe_trace_intern(t, (const char *)buf + data, nul ? (size_t)(nul - buf - data) : len,
                                 &host)))
        goto out;
    }
  }
  if (host) t->host = host;
  t->source = TBE_SRC_XSPACE;

  /* Pass 2: the host process id (from any host plane) and the session
   * start from the Task Environment plane. */
  s.host_pid = XS_SYNTH_PID;
  for (size_t i = 0; i < nplanes && !s.have_host_pid; i++) {
    char pname[64];
    int32_t g;
    plane_name(buf + planes[i].data, planes[i].len, pname, sizeof pname);
    plane_class c = classify_plane(pname, &g);
    if (c == P_HOST || c == P_HOST_NVTX || c == P_HOST_PYTHON)
      s.have_host_pid = scan_process_id(buf + planes[i].data, planes[i].len, &s.host_pid);
  }
  if (!s.have_host_pid) s.host_pid = XS_SYNTH_PID;
  for (size_t i = 0; i < nplanes; i++) {
    char pname[64];
    plane_name(buf + planes[i].data, planes[i].len, pname, sizeof pname);
    if (strcmp(pname, "Task Environment") != 0) continue;
    XPlane *p = tensorflow__profiler__xplane__unpack(NULL, planes[i].len, buf + planes[i].data);
    if (!p) {
      rc = fail_plane(&s, buf, &planes[i], i);
      goto out;
    }
    if ((rc = load_metadata(&s, p)) == 0) {
      for (size_t k = 0; k < p->n_stats; k++) {
        const smd_cache *c = stat_md(&s, p->stats[k]->metadata_id);
        int64_t v;
        if (!c || !stat_int(p->stats[k], &v)) continue;
        if (strcmp(c->md->name, "profile_start_time") == 0) s.start_ns = v;
        else if (strcmp(c->md->name, "profile_stop_time") == 0) s.stop_ns = v;
        else if (strcmp(c->md->name, "tbexport_dropped_records") == 0) t->dropped_records = (uint64_t)v;
        else if (strcmp(c->md->name, "tbexport_out_of_range_records") == 0)
          t->dropped_out_of_range = (uint64_t)v;
        else if (strcmp(c->md->name, "tbexport_cupti_overhead_ns") == 0) t->overhead_ns = (uint64_t)v;
        else if (strcmp(c->md->name, "tbexport_ended_early") == 0) t->ended_early = v != 0;
      }
      for (size_t k = 0; k < p->n_stats; k++) {
        const smd_cache *c = stat_md(&s, p->stats[k]->metadata_id);
        const char *src = c && strcmp(c->md->name, "tbexport_source") == 0 ? stat_str(&s, p->stats[k]) : NULL;
        if (src) {
          t->source = tbe__source_of(src, strlen(src));
          ours = s.ours = 1;
        }
        const char *tp = c && strcmp(c->md->name, "tbexport_track_pids") == 0
                             ? stat_str(&s, p->stats[k])
                             : NULL;
        if (tp && (rc = parse_track_pids(&s, tp))) break;
      }
    }
    free_metadata(&s);
    tensorflow__profiler__xplane__free_unpacked(p, NULL);
    if (rc) goto out;
    break;
  }
  if (!tbe__time_ok(s.start_ns) || !tbe__time_ok(s.stop_ns)) {
    rc = tbe__import_fail(err, TBE_ECORRUPT, path, UINT64_MAX, 0, 0,
                          "Task Environment plane: profile_%s_time is out of range (more than 146 "
                          "years from 1970)",
                          tbe__time_ok(s.start_ns) ? "stop" : "start");
    goto out;
  }
  if (s.start_ns > 0 && !t->start_ns) {
    t->start_ns = s.start_ns;
    if (s.stop_ns > s.start_ns) t->stop_ns = s.stop_ns;
  }

  /* XSpace.errors and warnings.  Ours (export_xplane.c) start with the
   * generic status lines and the lines on clamped times, which the
   * counters above and the events say again: the trace's own warnings are
   * what follows, read back as they were. */
  if (nnotes && !(lines = calloc(nnotes, sizeof *lines))) {
    rc = TBE_ENOMEM;
    goto out;
  }
  size_t nlines = 0;
  for (size_t i = 0; i < nnotes; i++) {
    char *msg = dup_span(buf + notes[i].data, notes[i].len);
    if (!msg) {
      rc = TBE_ENOMEM;
      goto out;
    }
    if (ours && notes[i].off == 3) rc = tbe_trace_intern(t, msg, strlen(msg), &lines[nlines++]);
    else tbe_trace_warn(t, "XSpace %s: %s", notes[i].off == 2 ? "error" : "warning", msg);
    free(msg);
    if (rc) goto out;
  }
  if (nlines) {
    size_t k = tbe__status_prefix(t, 1, lines, nlines);
    while (k < nlines && is_clamp_line(tbe_trace_str(t, lines[k]))) k++;
    for (; k < nlines; k++) tbe_trace_warn(t, "%s", tbe_trace_str(t, lines[k]));
  }

  /* Pass 3: every plane. */
  for (size_t i = 0; i < nplanes; i++) {
    XPlane *p = tensorflow__profiler__xplane__unpack(NULL, planes[i].len, buf + planes[i].data);
    if (!p) {
      rc = fail_plane(&s, buf, &planes[i], i);
      goto out;
    }
    s.plane_off = planes[i].off;
    s.plane_idx = i;
    rc = import_plane(&s, p, i);
    free_metadata(&s);
    tensorflow__profiler__xplane__free_unpacked(p, NULL);
    if (rc) goto out;
    if (o && o->progress) o->progress(o->progress_ctx, planes[i].data + planes[i].len, n);
  }

  /* Steps. */
  if (s.nsteps) {
    for (size_t i = 0; i < s.nsteps && !rc; i++)
      if (!(rc = tbe_trace_add_step(t, s.steps[i].num, s.steps[i].start, s.steps[i].end,
                                    s.steps[i].name)))
        t->steps[t->nsteps - 1].track = s.steps[i].track;
  } else {
    for (size_t i = 0; i < s.ngroups && !rc; i++)
      rc = tbe_trace_add_step(t, s.groups[i].num, s.groups[i].start, s.groups[i].end, 0);
  }
  if (!rc && s.unknown_md)
    tbe_trace_warn(t, "XSpace: %" PRIu64 " events name event metadata the plane does not define",
                   s.unknown_md);
  if (!rc) rc = tbe_trace_error(t);

out:
  if (rc && err && !err->message[0])
    tbe__import_fail(err, rc, path, UINT64_MAX, 0, 0, "%s", tbe_strerror(rc));
  free_metadata(&s);
  free(s.args);
  free(s.akind);
  free(s.steps);
  free(s.groups);
  free(s.track_pids);
  free(s.lorder);
  idmap_free(&s.gmap);
  free(planes);
  free(notes);
  free(lines);
  free(buf);
  return rc;
}
