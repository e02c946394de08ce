/* chrome_json.c: the Chrome-trace / PyTorch-Kineto JSON importer.
 *
 * A streaming parse: the input (plain or gzip, opened by import.c via
 * input.h) is fed to yajl in chunks and the callbacks build each event from its keys into a small
 * reusable scratch (name, cat, ph, ts, dur, pid, tid, id, bp, s and the
 * args as key/value spans over one byte buffer).  At the event's closing
 * brace the scratch becomes one model event (or a metadata record, a flow
 * end, a pushed B...) and is cleared.  Nothing else grows with the input
 * apart from the model itself and a few small tables (threads with open B
 * events, pending flow ends, M metadata, string pids).
 *
 * Layouts: the object form {"traceEvents": [...], ...} and the bare array
 * form [...], whose closing ']' may be missing (also after a trailing
 * comma), as a killed writer leaves it.  Top-level keys read: traceEvents,
 * deviceProperties, distributedInfo, baseTimeNanoseconds, traceName, and
 * our exporter's tbexportTrace, tbexportCollection, tbexportWarnings and
 * tbexportSteps (see apply_tbe_meta); the others are skipped.  Times are microseconds in decimal text; they are
 * converted to integer nanoseconds from the text itself (never through a
 * double): "1234.567" is exactly 1234567 ns.  With baseTimeNanoseconds
 * the ts values are relative to it, otherwise they are taken as they are
 * (epoch microseconds in older Kineto traces; a relative clock in JAX's).
 *
 * Mapping (Kineto's cat → tbe_event_kind; GPU kinds go on TBE_TRACK_STREAM
 * tracks, device = args.device or the pid's GPU, stream = args.stream or
 * tid; host kinds on TBE_TRACK_THREAD (pid, tid), or TBE_TRACK_OTHER when
 * the pid or tid is negative or a string):
 *   kernel, gpu_memcpy, gpu_memset, gpu_user_annotation, cuda_sync (GPU;
 *   a sync on args.stream, so that Kineto's "stream N (sync)" rows and a
 *   context sync's row fold back onto their stream);
 *   cuda_runtime, cuda_driver, cpu_op, user_annotation, python_function,
 *   overhead, nvtx (ours: ranges, and i events as marks; args domain,
 *   color, category, payload) (host); "[memory]" instants → TBE_EV_MEMORY
 *   (on the stream of the row when the pid is a GPU's); other i/I/R →
 *   TBE_EV_INSTANT; any other X or B/E pair → TBE_EV_GENERIC with its cat;
 *   C → one TBE_EV_COUNTER per numeric series (event name = series,
 *   track per pid + counter name).  Events of other producers on a pid
 *   whose metadata names it a GPU ("/device:GPU:N", labels "GPU N") go on
 *   stream tracks; XLA's kernel_details / memcpy_details / Memset_details
 *   make them kernels, copies and memsets, and host events with an XLA
 *   correlation_id become driver API calls.
 * Args consumed into typed fields (all others stay generic args, so an
 * export and a re-import give the same model): "External id",
 * "correlation" (all mapped kinds); device, stream, context (GPU kinds);
 * kernel: queued (when 0), registers per thread, shared memory (as
 * static_shared), blocks per SM, warps per SM, grid, block, est. achieved
 * occupancy %; memcpy: bytes, fromDevice/toDevice, memory bandwidth (GB/s)
 * (derived, dropped); memset: bytes, memory bandwidth (GB/s); cuda_sync:
 * cuda_sync_kind, wait_on_cuda_event_id; [memory]: Addr, Bytes, Total
 * Allocated, Total Reserved, Device Id, Device Type.  Nested arg values are
 * kept as TBE_ARG_JSON, re-serialized compactly; true/false/null as JSON
 * too; strings are interned with invalid UTF-8 and NUL replaced by U+FFFD.
 *
 * Flows: ac2g (launch → GPU) arrows are implied by correlation ids; they are
 * counted and checked against the correlation ids of API calls and GPU work
 * (a warning names any that do not match) but not stored.  Other s/f pairs
 * (fwdbwd, ...) are paired by (cat, id) into tbe_flow.  M metadata:
 * process_name → tbe_process.name (not for GPU pids), thread_name → the
 * track's name; process_labels only identify GPU pids; sort indexes are
 * dropped (the model has no place for them).  Unsupported phases (async
 * b/e/n, objects, samples, ...) are counted and named in a warning.
 *
 * Threads: for inputs of a few MB and more (or when forced) the parse is
 * parallel (see "pipeline" below): a driver thread reads the input and
 * runs a boundary scanner that finds the top-level elements of traceEvents
 * (or of the bare array) exactly (strings, escapes and nesting tracked,
 * 16 bytes at a time with SSE2); everything outside that array goes
 * through the main yajl handle as before, the array's elements are cut
 * into chunks of about 128 KB of whole events and parsed by N workers
 * (N = tbe_import_options.threads, else half the online CPUs, at least 2 and at
 * most 16), each with a
 * yajl handle of its own, into records (raw text, nothing interned).  The
 * calling thread applies all records strictly in file order with the same
 * code the one-thread path uses, so the model is identical to the byte
 * (same events, same string ids; tested).  A chunk that does not parse as
 * a clean run of events (malformed, empty elements, a cut input) is
 * replayed serially through the main handle from its first byte on, so
 * errors, truncations and trailing commas behave exactly as in one thread.
 * A ring of N+4 slots bounds the memory in flight.
 *
 * Hostile input (limits of tbe_import_options, resolved by import.c): the
 * main handle is fed through a token guard ("token guard" below) that
 * hands yajl whole tokens only (yajl re-lexes a token cut by a read from
 * its first byte: quadratic) and refuses strings, keys and nesting past
 * max_token_bytes / max_depth before yajl reads them; numbers and the size
 * of the event being parsed (max_event_bytes) are checked at every token by
 * the callbacks; max_events counts the events applied.  A worker that
 * meets a limit gives its chunk back and the serial replay refuses it at
 * the exact byte, so the limits behave as in one thread.  Times are
 * checked against the model's range (common/checked.h): ts and dur as
 * parsed, ts + baseTimeNanoseconds and the end of a complete event when
 * applied (the base may come last: finish_import checks those events).
 * A UTF-8 BOM is skipped; an object without traceEvents is no trace; a
 * typed field (ts, dur, ph, pid, ...) holding an object or array is an
 * error naming it.
 *
 * Errors: yajl's and our own ("ts is not a number") become one line with
 * the byte offset, line and column through tbe__import_fail and
 * TBE_EPARSE (TBE_ETOOBIG for a limit, naming its flag).  Line and column
 * are computed only on error, by re-reading the input up to the offset
 * (not for standard input), so the parse itself never counts newlines. */
#include <pthread.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_parse.h>
#include <yajl/yajl_tree.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/checked.h"
#include "common/map.h"
#include "common/text.h"
#include "import/importers.h"
#include "import/input.h"
#include "tbexport/error.h"
#include "trace/exporter.h"

#define CJ_MAX_ROLE 8
/* Slots of the intern front cache (a power of two; 16 bytes each). */
#define CJ_ICACHE 32768
/* Records flow from the parser to the model in batches of about this many
 * bytes (direct records; chunks make batches of their own). */
#define CJ_BATCH (512u * 1024u)

typedef struct span {
  uint32_t off, len;
} span;

enum { V_NUM = 1, V_STR = 2, V_JSON = 3 };

/* An arg of the event being parsed.  The fields after `type` are filled by
 * the parser side at the event's end (prepass: on the parse workers when
 * threaded), so that the model side, which runs on one thread, neither
 * hashes the strings it interns nor parses numbers. */
enum { NUM_NONE, NUM_INT, NUM_DBL, NUM_BAD };
typedef struct sarg {
  span key;
  span val;
  uint8_t type;
  uint8_t kplain, vplain; /* key / value text all ASCII without NUL */
  uint8_t num;            /* V_NUM: NUM_INT (nv.i or, is_u, nv.u), NUM_DBL (nv.d), NUM_BAD */
  uint8_t is_u;
  uint64_t kh;            /* hash_check of the key */
  union {
    int64_t i;
    uint64_t u;
    double d;
    uint64_t vh;          /* not a parsed number: hash_check of the value text */
  } nv;
} sarg;

/* Event fields seen. */
enum {
  F_NAME = 1 << 0, F_CAT = 1 << 1, F_PH = 1 << 2, F_TS = 1 << 3, F_DUR = 1 << 4,
  F_PID = 1 << 5, F_TID = 1 << 6, F_ID = 1 << 7, F_BP = 1 << 8, F_S = 1 << 9
};

/* An id given as a number or a string. */
typedef struct xid {
  int64_t num;
  span str;
  uint8_t is_str;
} xid;

typedef struct scratch {
  uint32_t have;
  span name, cat, ph, bp, s;
  uint64_t hname, hcat;  /* prepass: hash_check of name and cat */
  uint8_t pname, pcat;   /* prepass: name / cat all ASCII without NUL */
  xid pid, tid, id;
  int64_t ts, dur; /* ns, relative to the base */
  uint64_t start_off; /* byte offset of the event's '{' */
  tbe__buf text;      /* all strings of this event */
  sarg *args;
  size_t nargs, cap_args;
} scratch;

/* Roles of the containers the parser walks into. */
enum { R_NONE, R_TOP, R_EVENTS, R_EVENT, R_ARGS, R_DEVPROPS, R_DEVICE, R_DIST };
/* Top-level keys.  K_TBE_* are our exporter's (export_json.c): their values
 * are captured as JSON text and read at the end (finish_import). */
enum { K_OTHER, K_EVENTS, K_DEVPROPS, K_DIST, K_BASE, K_NAME, K_TBE_TRACE, K_TBE_COLLECTION,
       K_TBE_WARNINGS, K_TBE_STEPS };
#define K_TBE_FIRST K_TBE_TRACE
#define K_TBE_N 4
/* Event keys. */
enum { E_OTHER, E_NAME, E_CAT, E_PH, E_TS, E_DUR, E_PID, E_TID, E_ID, E_BP, E_S, E_ARGS };

typedef struct pidmap {
  int64_t pid;
  int32_t device;
} pidmap;

typedef struct meta {
  int64_t pid, tid;
  tbe_str value;
  uint8_t kind; /* 0 process_name, 1 thread_name, 3 process_labels "CPU" */
} meta;

typedef struct strpid {
  tbe_str s;
  int64_t id;
} strpid;

/* A B event waiting for its E. */
typedef struct pending_b {
  tbe_event ev;
  union {
    tbe_kernel k;
    tbe_memcpy mc;
    tbe_memset ms;
    tbe_sync sy;
    tbe_memory mem;
    tbe_nvtx nv;
  } d;
  int has_detail;
  tbe_arg *args;
  size_t nargs, cap;
} pending_b;

typedef struct bstack {
  pending_b *v;
  size_t n, cap;
} bstack;

/* One end of a (non-ac2g) flow waiting for the other. */
typedef struct flow_end {
  uint64_t id;
  tbe_str cat;
  uint8_t used; /* 0 empty, 1 live, 2 deleted */
  uint8_t is_start;
  uint8_t bp_e;
  uint32_t track;
  int64_t ts;
  tbe_str name;
} flow_end;

typedef struct cj {
  tbe_trace *t;
  const char *path;
  tbe__input *in;               /* the driver's source (NULL in workers) */
  const tbe_import_options *o;  /* limits resolved (importers.h) */
  int truncated; /* the gzip stream ended early (array form accepted) */
  tbe_import_error *err;
  const tbe_allocator *a;
  yajl_handle h;
  uint64_t chunk_start;

  /* structure */
  int form; /* 0 none yet, 1 object, 2 array */
  int depth;
  uint8_t role[CJ_MAX_ROLE + 1];
  int top_key, ev_key, dev_key, dist_key;
  uint64_t skip;  /* > 0: inside a skipped container, its depth */
  int done_events;
  int kineto;      /* Kineto's layout or categories were seen */
  uint32_t source0; /* t->source before this import */

  /* capture of nested arg values */
  int cap;            /* capture depth, 0 = none */
  int cap_top;        /* capturing the value of top-level key K_TBE_*, else 0 */
  tbe__buf tbe_meta[K_TBE_N]; /* the model side's copies of those values */
  tbe__buf capbuf;
  uint8_t *capst;     /* per level: bit0 array, bit1 need comma */
  size_t cap_capst;
  span cap_key;

  scratch e;   /* the event being applied (a view into a record) */
  scratch pe;  /* the event being parsed (owned by the producer) */
  span arg_key;

  /* session */
  int64_t base;
  int base_known;
  size_t ev_first, ev_mark, flow_first, flow_mark;
  int64_t max_end; /* latest relative end seen, for B events left open */

  /* device properties being read */
  tbe_device dev;
  int dev_have_id;
  int64_t dist_rank, dist_world;
  int dist_have_rank, dist_have_world, dist_have_backend;
  tbe__buf devname, distname;

  /* the record stream from the parser (producer) to the model (consumer) */
  tbe__buf batch;      /* one-thread mode: records waiting to be applied */
  tbe__buf *out;       /* worker: where its records go */
  int worker;          /* this cj is a chunk worker's parser state */
  int dummy;           /* the next event closing is a placeholder: drop it */
  int threaded;
  int producer_done;
  volatile int stop;   /* the consumer failed: the producer should stop */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t prog_done, prog_total; /* progress, updated under mu */

  /* the slot ring (threaded mode; see "pipeline" below) */
  struct cj *parent;           /* a worker's importer */
  size_t inflight;             /* chunks PENDING or WORKING */
  struct slot *slots;
  size_t nslots;
  uint64_t head, tail, wnext; /* consumer's next, driver's next, workers' next */
  struct slot *direct;        /* the driver's open record slot, or NULL */
  int nworkers;
  struct cj **wcs;
  pthread_t *wth;
  int quit;
  int fail_pending;
  uint64_t fail_seq;
  size_t chunk_target;

  /* the driver's boundary scanner */
  int par;        /* 1: farm traceEvents out to the workers */
  int sc_mode;    /* 0 top level, 1 inside the events array, 2 serial */
  int sc_depth, sc_in_str, sc_esc, sc_tok, sc_te, sc_kcap, sc_klen, sc_kbad;
  char sc_key[12];
  int r_depth, r_in_str, r_esc;
  tbe__buf fill;      /* '[' + bytes of the chunk being cut */
  uint64_t fill_off;  /* file offset of fill's first byte */
  int fill_first;     /* fill begins right after the array's '[' */
  int fill_open;      /* a fill segment follows the last dispatched chunk */
  uint64_t region_seq0; /* first chunk seq of this region */
  int tail_ok;        /* a bare array's trailing ",]" seen: only space may follow */
  uint64_t tail_bracket;

  /* the consumer's first error (the producer's is rc/err_off/emsg) */
  int crc;
  uint64_t cerr_off;

  /* tables (gmap, smap: gpus by pid and strpids by string id -> index;
   * pids and names are the input's to choose: common/map.h's keyed hash) */
  pidmap *gpus;
  size_t ngpus, cap_gpus;
  tbe__map gmap, smap;
  meta *metas;
  size_t nmetas, cap_metas;
  strpid *strpids;
  size_t nstrpids, cap_strpids;
  bstack *stacks; /* indexed by track */
  size_t nstacks;
  flow_end *flows;
  size_t cap_flows, nflows_live, nflows_used;
  uint64_t *ac2g_s, *ac2g_f;
  size_t n_ac2g_s, n_ac2g_f, cap_ac2g_s, cap_ac2g_f;

  /* reusable per-event buffers */
  tbe_arg *targs;
  size_t cap_targs;
  tbe__buf tmp;

  /* intern front cache (id 0 marks an empty slot: "" is never cached) */
  struct icache {
    uint64_t h;
    uint32_t len;
    tbe_str id;
  } *icache;

  /* track cache */
  struct {
    int64_t pid, tid;
    int32_t device;
    uint32_t type, track;
    int valid;
  } tc[64];
  uint32_t last_dev_track_dev;
  int have_last_dev;

  /* counts for warnings */
  uint64_t n_noph, n_unmatched_e, n_open_b, n_unpaired_flows, n_flow_steps, n_unsupported;
  char unsupported_ph[16];
  uint64_t n_ac2g_bad;
  uint64_t n_args_cut;

  /* error */
  int rc;
  uint64_t err_off;
  char emsg[256];
  char cmsg[256];     /* the consumer's message ("" = its code's text) */

  /* the token guard of the main handle (see "token guard" below) */
  int g_in_str, g_esc, g_bare;
  uint32_t g_depth;
  uint64_t g_str_start;   /* file offset of the open string's quote */
  tbe__buf carry;         /* a token cut by the end of a piece, whole so far */
  uint64_t carry_off;     /* its file offset */
  int saw_events;         /* a traceEvents array was entered */
  int in_event;           /* between a trace event's '{' and its '}' */
  int ev_tick;            /* tokens until the event's size is checked again */
  const uint8_t *wbuf;    /* a worker: the chunk text being parsed */
  uint64_t base_off;      /* offset of baseTimeNanoseconds (consumer) */
  uint64_t nevents_read;  /* trace events applied (consumer) */

  /* o->on_profile: phase times (ns) handed to the caller at the end */
  int prof;
  uint64_t p_apply, p_wait, p_parse, p_drv_wait, p_finish, p_chunks;
  uint64_t p_apply_cpu, p_parse_cpu, p_drv_cpu; /* thread CPU time */
} cj;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* small helpers */

static int cj_fail_at(cj *c, uint64_t off, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cj_fail_at(cj *c, uint64_t off, int code, const char *fmt, ...) {
  if (c->rc) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->emsg, sizeof c->emsg, fmt, ap);
  va_end(ap);
  c->rc = code;
  c->err_off = off;
  return 0; /* the callback's return value: stop the parse */
}

static uint64_t cj_pos(cj *c) { return c->chunk_start + yajl_get_bytes_consumed(c->h); }

/* A limit passed at `off`: the producer's error, like cj_fail_at. */
static int cj_limit(cj *c, uint64_t off, tbe__limit which, const char *what) {
  if (c->rc) return 0;
  char msg[256];
  tbe__import_limit_msg(msg, sizeof msg, which, c->o, what);
  return cj_fail_at(c, off, TBE_ETOOBIG, "%s", msg);
}

static int cj_nomem(cj *c) { return cj_fail_at(c, cj_pos(c), TBE_ENOMEM, "out of memory"); }

/* The consumer's failure (model side); `off` is the event's offset or
 * UINT64_MAX.  Returns 0 like cj_fail_at. */
static int cfail(cj *c, uint64_t off, int code) {
  if (!c->crc) {
    c->crc = code;
    c->cerr_off = off;
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
    if (c->threaded) { /* wake a driver waiting for a slot */
      pthread_mutex_lock(&c->mu);
      pthread_cond_broadcast(&c->cv);
      pthread_mutex_unlock(&c->mu);
    }
  }
  return 0;
}

/* cfail with a message of its own (kept when it is the first failure). */
static int cfail_msg(cj *c, uint64_t off, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int cfail_msg(cj *c, uint64_t off, int code, const char *fmt, ...) {
  if (c->crc) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->cmsg, sizeof c->cmsg, fmt, ap);
  va_end(ap);
  return cfail(c, off, code);
}

static int stopped(cj *c) { return __atomic_load_n(&c->stop, __ATOMIC_RELAXED); }

static inline const char *sp(const scratch *e, span s) { return (const char *)e->text.data + s.off; }

static inline int span_is(const scratch *e, span s, const char *lit, size_t n) {
  return s.len == n && memcmp(sp(e, s), lit, n) == 0;
}
#define SPAN_IS(e, s, lit) span_is((e), (s), lit, sizeof(lit) - 1)

static span put_text(cj *c, const void *p, size_t n) {
  tbe__buf *b = &c->pe.text;
  span s = {(uint32_t)b->len, (uint32_t)n};
  if (b->cap - b->len >= n) { /* the common case: no call into buf.c */
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
  } else {
    tbe__buf_append(b, p, n);
  }
  return s;
}

/* Interns `n` bytes, replacing NUL and invalid UTF-8 sequences by U+FFFD so
 * every output can carry the text. */
/* A front cache for tbe_trace_intern: trace strings repeat endlessly (the
 * same kernel names, arg keys and shapes), so a direct-mapped table keyed
 * by a word-at-a-time hash answers most lookups with one memcmp instead of
 * the model's byte-wise hash.  Misses go to the model and refill the slot. */
static inline uint64_t load64(const char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

/* Hashes `n` bytes and reports whether they are all ASCII without NUL (the
 * fast path needs no UTF-8 repair). */
static uint64_t hash_check(const char *s, size_t n, int *plain) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n, bad = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = load64(s + i);
    bad |= (w & highs) | ((w - ones) & ~w & highs);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  if (i < n) {
    uint64_t w = 0;
    memcpy(&w, s + i, n - i);
    uint64_t mask = ~0ull >> (8 * (8 - (n - i)));
    bad |= (w & highs) | ((w - ones) & ~w & highs & mask);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  *plain = bad == 0;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 32);
}

static int intern_cached(cj *c, const char *s, size_t n, uint64_t h, tbe_str *out) {
  struct icache *e = &c->icache[h & (CJ_ICACHE - 1)];
  if (e->h == h && e->len == n && e->id) {
    const char *have = tbe_trace_str(c->t, e->id);
    if (memcmp(have, s, n) == 0) {
      *out = e->id;
      return 0;
    }
  }
  int rc = tbe_trace_intern(c->t, s, n, out);
  if (rc) return rc;
  e->h = h;
  e->len = (uint32_t)n;
  e->id = *out;
  return 0;
}

static int intern_text(cj *c, const char *s, size_t n, tbe_str *out) {
  if (n == 0) {
    *out = 0;
    return 0;
  }
  int plain;
  uint64_t h = hash_check(s, n, &plain);
  if (plain && n < UINT32_MAX) return intern_cached(c, s, n, h, out);
  size_t i = 0;
  while (i < n && (unsigned char)s[i] - 1u < 0x7fu) i++;
  tbe__buf *b = &c->tmp;
  tbe__buf_clear(b);
  tbe__buf_append(b, s, i);
  static const char rep[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
  while (i < n) {
    unsigned char ch = (unsigned char)s[i];
    if (ch && ch < 0x80) {
      tbe__buf_putc(b, (char)ch);
      i++;
      continue;
    }
    size_t need = 0;
    uint32_t cp = 0, min = 0;
    if (ch >= 0xC2 && ch <= 0xDF) need = 1, cp = ch & 0x1F, min = 0x80;
    else if (ch >= 0xE0 && ch <= 0xEF) need = 2, cp = ch & 0x0F, min = 0x800;
    else if (ch >= 0xF0 && ch <= 0xF4) need = 3, cp = ch & 0x07, min = 0x10000;
    int ok = need > 0 && i + need < n;
    if (ok) {
      for (size_t k = 1; k <= need; k++) {
        unsigned char cc = (unsigned char)s[i + k];
        if ((cc & 0xC0) != 0x80) {
          ok = 0;
          break;
        }
        cp = (cp << 6) | (cc & 0x3F);
      }
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = 0;
    if (ok) {
      tbe__buf_append(b, s + i, need + 1);
      i += need + 1;
    } else {
      tbe__buf_append(b, rep, 3);
      i++;
    }
  }
  if (tbe__buf_error(b)) return TBE_ENOMEM;
  return intern_cached(c, (const char *)b->data, b->len, hash_check((const char *)b->data, b->len, &plain), out);
}

/* intern_text with the hash and the plain flag computed beforehand (by
 * hash_check, in prepass): the same result, without touching the text
 * twice on the model's thread. */
static inline int intern_pre(cj *c, const char *s, size_t n, uint64_t h, int plain, tbe_str *out) {
  if (n == 0) {
    *out = 0;
    return 0;
  }
  if (plain && n < UINT32_MAX) return intern_cached(c, s, n, h, out);
  return intern_text(c, s, n, out);
}

/* Parses a JSON number of microseconds into integer nanoseconds, exactly:
 * the decimal digits are scaled by powers of ten in integer arithmetic and
 * rounded half away from zero at the nanosecond.  Returns 0 or -1 (not a
 * number, or out of the int64 range). */
static int us_to_ns(const char *s, size_t n, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (i < n && s[i] == '-') neg = 1, i++;
  unsigned __int128 m = 0;
  int sig = 0, exp10 = 0, digits = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') {
    if (sig < 38) {
      m = m * 10 + (unsigned)(s[i] - '0');
      if (m) sig++;
    } else {
      exp10++;
    }
    digits++, i++;
  }
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (sig < 38) {
        m = m * 10 + (unsigned)(s[i] - '0');
        if (m) sig++;
        exp10--;
      }
      digits++, i++;
    }
  }
  if (!digits) return -1;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    int eneg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i] == '-', i++;
    long e = 0;
    size_t ed = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (e < 100000) e = e * 10 + (s[i] - '0');
      i++, ed++;
    }
    if (!ed) return -1;
    exp10 += (int)(eneg ? -e : e);
  }
  if (i != n) return -1;
  exp10 += 3; /* µs -> ns */
  const unsigned __int128 lim = neg ? (unsigned __int128)INT64_MAX + 1 : (unsigned __int128)INT64_MAX;
  if (m == 0) {
    *out = 0;
    return 0;
  }
  if (exp10 >= 0) {
    for (int k = 0; k < exp10; k++) {
      if (m > lim / 10) return -1;
      m *= 10;
    }
  } else {
    int k = -exp10;
    if (k > 38) {
      m = 0;
    } else {
      unsigned __int128 p = 1;
      for (int j = 0; j < k; j++) p *= 10;
      unsigned __int128 q = m / p, r = m % p;
      if (r * 2 >= p) q++;
      m = q;
    }
  }
  if (m > lim) return -1;
  *out = neg ? (int64_t)(0 - (uint64_t)m) : (int64_t)m;
  return 0;
}

/* Parses an integer (optionally signed).  Returns 0, or -1 when the text is
 * not an integer in range.  *is_u is set when it only fits a uint64. */
static int parse_int(const char *s, size_t n, int64_t *out, uint64_t *uout, int *is_u) {
  size_t i = 0;
  int neg = 0;
  if (i < n && s[i] == '-') neg = 1, i++;
  if (i == n) return -1;
  uint64_t v = 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (is_u) *is_u = 0;
  if (neg) {
    if (v > (uint64_t)INT64_MAX + 1) return -1;
    *out = (int64_t)(0 - v);
    if (uout) *uout = (uint64_t)*out;
    return 0;
  }
  if (v > INT64_MAX) {
    if (!is_u) return -1;
    *is_u = 1;
    if (uout) *uout = v;
    *out = 0;
    return 0;
  }
  *out = (int64_t)v;
  if (uout) *uout = v;
  return 0;
}

static int parse_double(const char *s, size_t n, double *out) {
  char tmp[64];
  if (n == 0 || n >= sizeof tmp) return -1;
  memcpy(tmp, s, n);
  tmp[n] = 0;
  char *end;
  *out = strtod(tmp, &end);
  return *end ? -1 : 0;
}

/* An integer from an arg: numbers, and numeric strings (XLA writes its
 * stats as strings). */
static int arg_int(const scratch *e, const sarg *a, int64_t *v) {
  if (a->type == V_NUM && a->num != NUM_NONE) { /* parsed by prepass */
    if (a->num == NUM_INT) {
      *v = a->is_u ? (int64_t)a->nv.u : a->nv.i;
      return 1;
    }
    if (a->num == NUM_DBL && a->nv.d > -9.2e18 && a->nv.d < 9.2e18) {
      *v = (int64_t)a->nv.d;
      return 1;
    }
    return 0;
  }
  if (a->type != V_NUM && a->type != V_STR) return 0;
  uint64_t u;
  int is_u;
  if (parse_int(sp(e, a->val), a->val.len, v, &u, &is_u) == 0) {
    if (is_u) *v = (int64_t)u;
    return 1;
  }
  double d;
  if (parse_double(sp(e, a->val), a->val.len, &d) == 0 && d > -9.2e18 && d < 9.2e18) {
    *v = (int64_t)d;
    return 1;
  }
  return 0;
}

static int arg_double(const scratch *e, const sarg *a, double *v) {
  if (a->type != V_NUM && a->type != V_STR) return 0;
  return parse_double(sp(e, a->val), a->val.len, v) == 0;
}

/* The first up-to-3 unsigned integers of a JSON array text "[x, y, z]" or
 * of "x,y,z". */
static void parse_dim3(const char *s, size_t n, uint32_t out[3]) {
  int k = 0;
  size_t i = 0;
  while (i < n && k < 3) {
    while (i < n && (s[i] < '0' || s[i] > '9')) i++;
    if (i == n) break;
    uint64_t v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (v < UINT32_MAX) v = v * 10 + (uint64_t)(s[i] - '0');
      i++;
    }
    out[k++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  }
}

/* ---------------------------------------------------------------------- */
/* ids, tracks, GPU pids */


static int id_value(cj *c, const xid *x, int64_t *out) {
  if (!x->is_str) {
    *out = x->num;
    return 0;
  }
  const char *s = sp(&c->e, x->str);
  int64_t v;
  if (parse_int(s, x->str.len, &v, NULL, NULL) == 0) {
    *out = v;
    return 0;
  }
  /* A string pid/tid gets a small negative id of its own (-2, -3, ...)
   * and keeps the string as the process or track name. */
  tbe_str id;
  int rc = intern_text(c, s, x->str.len, &id);
  if (rc) return rc;
  const uint32_t *k = tbe__map_get(&c->smap, id);
  if (k) {
    *out = c->strpids[*k].id;
    return 0;
  }
  void *p = c->strpids;
  if (tbe__grow(c->a, &p, &c->cap_strpids, c->nstrpids + 1, sizeof *c->strpids)) return TBE_ENOMEM;
  c->strpids = p;
  c->strpids[c->nstrpids].s = id;
  c->strpids[c->nstrpids].id = -2 - (int64_t)c->nstrpids;
  *out = c->strpids[c->nstrpids].id;
  return tbe__map_set(&c->smap, id, (uint32_t)c->nstrpids++);
}

/* A string pid's name: ids are -2 - index (id_value). */
static tbe_str strpid_name(const cj *c, int64_t id) {
  if (id > -2 || (uint64_t)(-2 - id) >= c->nstrpids) return TBE_NONE;
  return c->strpids[-2 - id].s;
}

static int gpu_of_pid(const cj *c, int64_t pid, int32_t *dev) {
  const uint32_t *k = tbe__map_get(&c->gmap, (uint64_t)pid);
  if (!k) return 0;
  *dev = c->gpus[*k].device;
  return 1;
}

static int add_gpu_pid(cj *c, int64_t pid, int32_t device) {
  int32_t d;
  if (gpu_of_pid(c, pid, &d)) return 0;
  void *p = c->gpus;
  if (tbe__grow(c->a, &p, &c->cap_gpus, c->ngpus + 1, sizeof *c->gpus)) return TBE_ENOMEM;
  c->gpus = p;
  c->gpus[c->ngpus].pid = pid;
  c->gpus[c->ngpus].device = device;
  return tbe__map_set(&c->gmap, (uint64_t)pid, (uint32_t)c->ngpus++);
}

static int get_track(cj *c, uint32_t type, int64_t pid, int64_t tid, int32_t device,
                     uint32_t *out) {
  uint64_t hsh = (uint64_t)pid * 0x9E3779B97F4A7C15ull ^ (uint64_t)tid * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)(uint32_t)device * 31 ^ type;
  size_t slot = (size_t)(hsh >> 58);
  if (c->tc[slot].valid && c->tc[slot].pid == pid && c->tc[slot].tid == tid &&
      c->tc[slot].device == device && c->tc[slot].type == type) {
    *out = c->tc[slot].track;
    return 0;
  }
  int rc = tbe_trace_track(c->t, (tbe_track_type)type, pid, tid, device, out);
  if (rc) return rc;
  c->tc[slot].pid = pid;
  c->tc[slot].tid = tid;
  c->tc[slot].device = device;
  c->tc[slot].type = type;
  c->tc[slot].track = *out;
  c->tc[slot].valid = 1;
  return 0;
}

/* The host track of the scratch event. */
static int host_track(cj *c, uint32_t *out) {
  int64_t pid = 0, tid = 0;
  int rc = id_value(c, &c->e.pid, &pid);
  if (!rc) rc = id_value(c, &c->e.tid, &tid);
  if (rc) return rc;
  uint32_t type = (c->e.pid.is_str || c->e.tid.is_str || pid < 0 || tid < 0) ? TBE_TRACK_OTHER
                                                                            : TBE_TRACK_THREAD;
  rc = get_track(c, type, pid, tid, -1, out);
  if (rc) return rc;
  if (c->e.tid.is_str && tid < 0 && c->t->tracks[*out].name == 0) {
    tbe_str nm = strpid_name(c, tid);
    if (nm != TBE_NONE) c->t->tracks[*out].name = nm;
  }
  return 0;
}

static int ensure_device(cj *c, int32_t device) {
  if (c->have_last_dev && c->last_dev_track_dev == (uint32_t)device) return 0;
  uint32_t idx;
  int rc = tbe_trace_device(c->t, device, &idx);
  if (rc) return rc;
  c->have_last_dev = 1;
  c->last_dev_track_dev = (uint32_t)device;
  return 0;
}

/* Older Kineto wrote GPU rows as "tid": "stream 7" (and names them so). */
static int stream_num(const scratch *e, const xid *x, int64_t *v) {
  if (!x->is_str || x->str.len < 8) return 0;
  const char *s = sp(e, x->str);
  if (memcmp(s, "stream ", 7) != 0) return 0;
  size_t n = 7;
  while (n < x->str.len && s[n] >= '0' && s[n] <= '9') n++;
  return n > 7 && parse_int(s + 7, n - 7, v, NULL, NULL) == 0;
}

/* The stream track of a GPU event: device from args.device (given by the
 * caller as `dev`, < 0 if absent) or the pid, stream from args.stream or
 * the tid. */
static int stream_track(cj *c, int64_t dev, int have_dev, int64_t stream, int have_stream,
                        uint32_t *out) {
  int64_t pid = 0, tid = 0;
  int rc = id_value(c, &c->e.pid, &pid);
  if (!rc && !have_stream && stream_num(&c->e, &c->e.tid, &stream)) have_stream = 1;
  if (!rc && !have_stream) rc = id_value(c, &c->e.tid, &tid);
  if (rc) return rc;
  int32_t device;
  if (have_dev) {
    device = (int32_t)dev;
    if (!c->e.pid.is_str && pid >= 0 && (rc = add_gpu_pid(c, pid, device))) return rc;
  } else if (!gpu_of_pid(c, pid, &device)) {
    device = pid >= 0 && pid < INT32_MAX ? (int32_t)pid : 0;
    if (!c->e.pid.is_str && pid >= 0 && (rc = add_gpu_pid(c, pid, device))) return rc;
  }
  if ((rc = ensure_device(c, device))) return rc;
  return get_track(c, TBE_TRACK_STREAM, -1, have_stream ? stream : tid, device, out);
}

/* ---------------------------------------------------------------------- */
/* building events */

typedef struct build {
  tbe_event ev;
  union {
    tbe_kernel k;
    tbe_memcpy mc;
    tbe_memset ms;
    tbe_sync sy;
    tbe_memory mem;
    tbe_nvtx nv;
  } d;
  int has_detail;
  size_t ntargs;
} build;

static int push_targ(cj *c, build *b, const tbe_arg *a) {
  if (b->ntargs >= UINT16_MAX) {
    c->n_args_cut++;
    return 0;
  }
  void *p = c->targs;
  if (tbe__grow(c->a, &p, &c->cap_targs, b->ntargs + 1, sizeof *c->targs)) return TBE_ENOMEM;
  c->targs = p;
  c->targs[b->ntargs++] = *a;
  return 0;
}

/* Adds scratch arg `a` as a generic model arg. */
static int generic_arg(cj *c, build *b, const sarg *a) {
  const scratch *e = &c->e;
  tbe_arg ta;
  memset(&ta, 0, sizeof ta);
  int rc = intern_pre(c, sp(e, a->key), a->key.len, a->kh, a->kplain, &ta.key);
  if (rc) return rc;
  const char *v = sp(e, a->val);
  if (a->type == V_NUM && a->num != NUM_NONE) { /* parsed by prepass */
    if (a->num == NUM_INT) {
      ta.type = a->is_u ? TBE_ARG_UINT : TBE_ARG_INT;
      if (a->is_u) ta.v.u = a->nv.u;
      else ta.v.i = a->nv.i;
    } else if (a->num == NUM_DBL) {
      ta.type = TBE_ARG_DOUBLE;
      ta.v.d = a->nv.d;
    } else {
      ta.type = TBE_ARG_JSON;
      if ((rc = intern_pre(c, v, a->val.len, a->nv.vh, a->vplain, &ta.v.s))) return rc;
    }
  } else if (a->type == V_NUM) {
    int64_t i;
    uint64_t u;
    int is_u;
    if (parse_int(v, a->val.len, &i, &u, &is_u) == 0) {
      if (is_u) {
        ta.type = TBE_ARG_UINT;
        ta.v.u = u;
      } else {
        ta.type = TBE_ARG_INT;
        ta.v.i = i;
      }
    } else {
      double d;
      if (parse_double(v, a->val.len, &d) == 0) {
        ta.type = TBE_ARG_DOUBLE;
        ta.v.d = d;
      } else {
        /* Too long for a double's text or beyond integer ranges: keep the
         * number verbatim. */
        ta.type = TBE_ARG_JSON;
        if ((rc = intern_text(c, v, a->val.len, &ta.v.s))) return rc;
      }
    }
  } else {
    ta.type = a->type == V_STR ? TBE_ARG_STR : TBE_ARG_JSON;
    if ((rc = intern_pre(c, v, a->val.len, a->nv.vh, a->vplain, &ta.v.s))) return rc;
  }
  return push_targ(c, b, &ta);
}

#define KEY_IS(a, lit) span_is(&c->e, (a)->key, lit, sizeof(lit) - 1)

/* Memory kind words as Kineto and XLA write them. */
static uint8_t mem_kind_word(const char *s, size_t n) {
  static const struct {
    const char *w;
    uint8_t k;
  } words[] = {{"Pageable", TBE_MEM_PAGEABLE}, {"pageable", TBE_MEM_PAGEABLE},
               {"Pinned", TBE_MEM_PINNED},     {"pinned", TBE_MEM_PINNED},
               {"Device", TBE_MEM_DEVICE},     {"device", TBE_MEM_DEVICE},
               {"Array", TBE_MEM_ARRAY},       {"array", TBE_MEM_ARRAY},
               {"Managed", TBE_MEM_MANAGED},   {"managed", TBE_MEM_MANAGED},
               {"Device Static", TBE_MEM_DEVICE_STATIC},
               {"Managed Static", TBE_MEM_MANAGED_STATIC}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strlen(words[i].w) == n && memcmp(words[i].w, s, n) == 0) return words[i].k;
  return TBE_MEM_UNKNOWN;
}

static uint8_t copy_kind_word(const char *s, size_t n) {
  static const struct {
    const char *w;
    uint8_t k;
  } words[] = {{"HtoD", TBE_COPY_HTOD}, {"DtoH", TBE_COPY_DTOH}, {"HtoA", TBE_COPY_HTOA},
               {"AtoH", TBE_COPY_ATOH}, {"AtoA", TBE_COPY_ATOA}, {"AtoD", TBE_COPY_ATOD},
               {"DtoA", TBE_COPY_DTOA}, {"DtoD", TBE_COPY_DTOD}, {"HtoH", TBE_COPY_HTOH},
               {"PtoP", TBE_COPY_PTOP}, {"H2D", TBE_COPY_HTOD},  {"D2H", TBE_COPY_DTOH},
               {"D2D", TBE_COPY_DTOD},  {"H2H", TBE_COPY_HTOH},  {"P2P", TBE_COPY_PTOP}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strlen(words[i].w) == n && memcmp(words[i].w, s, n) == 0) return words[i].k;
  return TBE_COPY_UNKNOWN;
}

/* "Memcpy HtoD (Pageable -> Device)", "MemcpyH2D", "Memset (Device)". */
static void parse_copy_name(const char *s, size_t n, uint8_t *copy, uint8_t *src, uint8_t *dst) {
  size_t i = 0;
  if (n >= 6 && (memcmp(s, "Memcpy", 6) == 0 || memcmp(s, "Memset", 6) == 0)) i = 6;
  while (i < n && s[i] == ' ') i++;
  size_t w = i;
  while (w < n && s[w] != ' ' && s[w] != '(') w++;
  if (copy && w > i) *copy = copy_kind_word(s + i, w - i);
  const char *lp = memchr(s, '(', n);
  if (!lp) return;
  const char *end = s + n;
  const char *rp = memchr(lp, ')', (size_t)(end - lp));
  if (!rp) return;
  const char *a0 = lp + 1;
  const char *arrow = NULL;
  for (const char *q = a0; q + 1 < rp; q++)
    if (q[0] == '-' && q[1] == '>') {
      arrow = q;
      break;
    }
  if (arrow) {
    const char *a1 = arrow;
    while (a1 > a0 && a1[-1] == ' ') a1--;
    const char *b0 = arrow + 2;
    while (b0 < rp && *b0 == ' ') b0++;
    if (src) *src = mem_kind_word(a0, (size_t)(a1 - a0));
    if (dst) *dst = mem_kind_word(b0, (size_t)(rp - b0));
  } else if (src) {
    *src = mem_kind_word(a0, (size_t)(rp - a0));
  }
}

/* XLA's "key:value key:value" detail strings. */
static int detail_field(const char *s, size_t n, const char *key, const char **v, size_t *vn) {
  size_t kl = strlen(key);
  size_t i = 0;
  while (i < n) {
    while (i < n && s[i] == ' ') i++;
    size_t j = i;
    while (j < n && s[j] != ' ') j++;
    if (j - i > kl && memcmp(s + i, key, kl) == 0 && s[i + kl] == ':') {
      *v = s + i + kl + 1;
      *vn = j - i - kl - 1;
      return 1;
    }
    i = j;
  }
  return 0;
}

static int64_t detail_int(const char *s, size_t n, const char *key, int64_t dflt) {
  const char *v;
  size_t vn;
  int64_t x;
  if (detail_field(s, n, key, &v, &vn) && parse_int(v, vn, &x, NULL, NULL) == 0) return x;
  return dflt;
}

enum { CK_NONE, CK_KERNEL, CK_MEMCPY, CK_MEMSET, CK_ANNOT, CK_SYNC, CK_RUNTIME, CK_DRIVER,
       CK_CPU_OP, CK_USER, CK_PYTHON, CK_OVERHEAD, CK_NVTX };

static int cat_class(const scratch *e) {
  if (!(e->have & F_CAT)) return CK_NONE;
  span s = e->cat;
  switch (s.len) {
    case 4:
      if (SPAN_IS(e, s, "nvtx")) return CK_NVTX; /* our exporter's NVTX ranges and marks */
      break;
    case 6:
      if (SPAN_IS(e, s, "kernel")) return CK_KERNEL;
      if (SPAN_IS(e, s, "cpu_op")) return CK_CPU_OP;
      break;
    case 8:
      if (SPAN_IS(e, s, "overhead")) return CK_OVERHEAD;
      break;
    case 9:
      if (SPAN_IS(e, s, "cuda_sync")) return CK_SYNC;
      break;
    case 10:
      if (SPAN_IS(e, s, "gpu_memcpy")) return CK_MEMCPY;
      if (SPAN_IS(e, s, "gpu_memset")) return CK_MEMSET;
      break;
    case 11:
      if (SPAN_IS(e, s, "cuda_driver")) return CK_DRIVER;
      break;
    case 12:
      if (SPAN_IS(e, s, "cuda_runtime")) return CK_RUNTIME;
      break;
    case 15:
      if (SPAN_IS(e, s, "user_annotation")) return CK_USER;
      if (SPAN_IS(e, s, "python_function")) return CK_PYTHON;
      break;
    case 19:
      if (SPAN_IS(e, s, "gpu_user_annotation")) return CK_ANNOT;
      break;
  }
  return CK_NONE;
}

static const sarg *find_arg(const cj *c, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = 0; i < c->e.nargs; i++)
    if (span_is(&c->e, c->e.args[i].key, key, kl)) return &c->e.args[i];
  return NULL;
}

/* Builds the model event of a duration (X/B) or instant scratch event:
 * kind, track, details, args.  `instant` selects the instant mapping. */
static int build_event(cj *c, build *b, int instant) {
  scratch *e = &c->e;
  memset(b, 0, sizeof *b);
  b->ev.detail = TBE_NONE;
  b->ev.link = TBE_NONE;
  b->ev.start_ns = e->ts;
  b->ev.dur_ns = instant ? 0 : e->dur;
  int rc;
  int ck = cat_class(e);
  if (ck != CK_NONE) c->kineto = 1;
  int kind;
  int gpu = 0;
  int xla = 0;   /* classified from XLA-style stats */
  if (instant) {
    kind = (e->have & F_NAME) && SPAN_IS(e, e->name, "[memory]") ? TBE_EV_MEMORY
           : ck == CK_NVTX                                      ? TBE_EV_NVTX_MARK
                                                                : TBE_EV_INSTANT;
    if (ck != CK_NVTX) ck = CK_NONE;
  } else {
    switch (ck) {
      case CK_KERNEL: kind = TBE_EV_KERNEL, gpu = 1; break;
      case CK_MEMCPY: kind = TBE_EV_MEMCPY, gpu = 1; break;
      case CK_MEMSET: kind = TBE_EV_MEMSET, gpu = 1; break;
      case CK_ANNOT: kind = TBE_EV_GPU_ANNOTATION, gpu = 1; break;
      case CK_SYNC: kind = TBE_EV_SYNC, gpu = 1; break;
      case CK_RUNTIME: kind = TBE_EV_RUNTIME; break;
      case CK_DRIVER: kind = TBE_EV_DRIVER; break;
      case CK_CPU_OP: kind = TBE_EV_CPU_OP; break;
      case CK_USER: kind = TBE_EV_USER_ANNOTATION; break;
      case CK_PYTHON: kind = TBE_EV_PYTHON; break;
      case CK_OVERHEAD: kind = TBE_EV_OVERHEAD; break;
      case CK_NVTX: kind = TBE_EV_NVTX_RANGE; break;
      default: {
        kind = TBE_EV_GENERIC;
        int64_t pid = 0;
        int32_t dev;
        if ((rc = id_value(c, &e->pid, &pid))) return rc;
        if (!e->pid.is_str && gpu_of_pid(c, pid, &dev)) {
          gpu = 1;
          if (find_arg(c, "kernel_details")) kind = TBE_EV_KERNEL, xla = 1;
          else if (find_arg(c, "memcpy_details")) kind = TBE_EV_MEMCPY, xla = 1;
          else if (find_arg(c, "Memset_details")) kind = TBE_EV_MEMSET, xla = 1;
        } else if (find_arg(c, "correlation_id") && find_arg(c, "device_id")) {
          kind = TBE_EV_DRIVER, xla = 1;
        }
      }
    }
  }
  b->ev.kind = (uint8_t)kind;
  /* cat: 0 when it is the kind's own Kineto category, else as given. */
  if ((e->have & F_CAT) && ck == CK_NONE && e->cat.len) {
    if ((rc = intern_pre(c, sp(e, e->cat), e->cat.len, e->hcat, e->pcat, &b->ev.cat))) return rc;
  }
  if (e->have & F_NAME) {
    if ((rc = intern_pre(c, sp(e, e->name), e->name.len, e->hname, e->pname, &b->ev.name))) return rc;
  }

  /* details defaults */
  switch (kind) {
    case TBE_EV_KERNEL:
      b->d.k.queued_ns = -1;
      b->d.k.occupancy_pct = -1;
      b->d.k.blocks_per_sm = -1;
      b->d.k.warps_per_sm = -1;
      b->has_detail = 1;
      break;
    case TBE_EV_MEMCPY:
      b->d.mc.src_device = b->d.mc.dst_device = -1;
      if (e->have & F_NAME)
        parse_copy_name(sp(e, e->name), e->name.len, &b->d.mc.copy_kind, &b->d.mc.src_kind,
                        &b->d.mc.dst_kind);
      b->has_detail = 1;
      break;
    case TBE_EV_MEMSET:
      if (e->have & F_NAME) parse_copy_name(sp(e, e->name), e->name.len, NULL, &b->d.ms.mem_kind, NULL);
      b->has_detail = 1;
      break;
    case TBE_EV_SYNC:
      b->d.sy.stream = -1;
      b->has_detail = 1;
      break;
    case TBE_EV_MEMORY:
      b->d.mem.total_allocated = -1;
      b->d.mem.total_reserved = -1;
      b->d.mem.device = -1;
      b->has_detail = 1;
      break;
    case TBE_EV_NVTX_RANGE:
    case TBE_EV_NVTX_MARK: b->has_detail = 1; break;
  }

  int64_t dev = 0, stream = 0;
  int have_dev = 0, have_stream = 0;
  int mapped = kind != TBE_EV_GENERIC && kind != TBE_EV_INSTANT;
  for (size_t i = 0; i < e->nargs; i++) {
    const sarg *a = &e->args[i];
    int64_t v;
    double d;
    int used = 0;
    if (mapped && !xla) {
      if (KEY_IS(a, "External id") && arg_int(e, a, &v)) b->ev.external_id = (uint64_t)v, used = 1;
      else if (KEY_IS(a, "correlation") && arg_int(e, a, &v)) b->ev.correlation = (uint64_t)v, used = 1;
    }
    if (xla && KEY_IS(a, "correlation_id") && arg_int(e, a, &v)) b->ev.correlation = (uint64_t)v, used = 1;
    if (!used && gpu && !xla) {
      if (KEY_IS(a, "device") && arg_int(e, a, &v)) dev = v, have_dev = 1, used = 1;
      else if (KEY_IS(a, "stream") && arg_int(e, a, &v)) stream = v, have_stream = 1, used = 1;
    }
    if (!used) {
      switch (kind) {
        case TBE_EV_KERNEL:
          if (xla) {
            if (KEY_IS(a, "kernel_details") && a->type == V_STR) {
              const char *s = sp(e, a->val), *f;
              size_t n = a->val.len, fn;
              b->d.k.registers = (uint16_t)detail_int(s, n, "regs", 0);
              b->d.k.static_shared = (uint32_t)detail_int(s, n, "static_shared", 0);
              b->d.k.dynamic_shared = (uint32_t)detail_int(s, n, "dynamic_shared", 0);
              if (detail_field(s, n, "grid", &f, &fn)) parse_dim3(f, fn, b->d.k.grid);
              if (detail_field(s, n, "block", &f, &fn)) parse_dim3(f, fn, b->d.k.block);
              int64_t occ = detail_int(s, n, "occ_pct", -1);
              if (occ >= 0) b->d.k.occupancy_pct = (float)occ;
              used = 1;
            }
          } else if (KEY_IS(a, "queued") && arg_int(e, a, &v) && v == 0) {
            used = 1;
          } else if (KEY_IS(a, "context") && arg_int(e, a, &v)) {
            b->d.k.context = (uint16_t)v, used = 1;
          } else if (KEY_IS(a, "registers per thread") && arg_int(e, a, &v)) {
            b->d.k.registers = (uint16_t)v, used = 1;
          } else if (KEY_IS(a, "shared memory") && arg_int(e, a, &v)) {
            b->d.k.static_shared = (uint32_t)v, used = 1; /* static + dynamic: see below */
          } else if (KEY_IS(a, "dynamic shared memory") && arg_int(e, a, &v)) {
            b->d.k.dynamic_shared = (uint32_t)v, used = 1;
          } else if (KEY_IS(a, "blocks per SM") && arg_double(e, a, &d)) {
            b->d.k.blocks_per_sm = (float)d, used = 1;
          } else if (KEY_IS(a, "warps per SM") && arg_double(e, a, &d)) {
            b->d.k.warps_per_sm = (float)d, used = 1;
          } else if (KEY_IS(a, "est. achieved occupancy %") && arg_double(e, a, &d)) {
            b->d.k.occupancy_pct = (float)d, used = 1;
          } else if (KEY_IS(a, "grid") && a->type == V_JSON) {
            parse_dim3(sp(e, a->val), a->val.len, b->d.k.grid), used = 1;
          } else if (KEY_IS(a, "block") && a->type == V_JSON) {
            parse_dim3(sp(e, a->val), a->val.len, b->d.k.block), used = 1;
          } else if (KEY_IS(a, "graph id") || KEY_IS(a, "graph node id")) {
            b->ev.flags |= TBE_EVF_GRAPH;
          }
          break;
        case TBE_EV_MEMCPY:
          if (xla) {
            if (KEY_IS(a, "memcpy_details") && a->type == V_STR) {
              const char *s = sp(e, a->val), *f;
              size_t n = a->val.len, fn;
              b->d.mc.bytes = (uint64_t)detail_int(s, n, "size", 0);
              if (detail_field(s, n, "kind_src", &f, &fn)) b->d.mc.src_kind = mem_kind_word(f, fn);
              if (detail_field(s, n, "kind_dst", &f, &fn)) b->d.mc.dst_kind = mem_kind_word(f, fn);
              b->d.mc.dst_device = (int32_t)detail_int(s, n, "dest", -1);
              b->d.mc.async = (uint8_t)(detail_int(s, n, "async", 0) != 0);
              used = 1;
            }
          } else if (KEY_IS(a, "bytes") && arg_int(e, a, &v)) {
            b->d.mc.bytes = (uint64_t)v, used = 1;
          } else if (KEY_IS(a, "context") && arg_int(e, a, &v)) {
            b->d.mc.context = (uint16_t)v, used = 1;
          } else if (KEY_IS(a, "fromDevice") && arg_int(e, a, &v)) {
            b->d.mc.src_device = (int32_t)v, used = 1;
          } else if (KEY_IS(a, "toDevice") && arg_int(e, a, &v)) {
            b->d.mc.dst_device = (int32_t)v, used = 1;
          } else if (KEY_IS(a, "memory bandwidth (GB/s)")) {
            used = 1; /* derived from bytes and duration */
          }
          break;
        case TBE_EV_MEMSET:
          if (xla) {
            if (KEY_IS(a, "Memset_details") && a->type == V_STR) {
              const char *s = sp(e, a->val), *f;
              size_t n = a->val.len, fn;
              b->d.ms.bytes = (uint64_t)detail_int(s, n, "num_bytes", 0);
              if (detail_field(s, n, "kind", &f, &fn)) b->d.ms.mem_kind = mem_kind_word(f, fn);
              b->d.ms.async = (uint8_t)(detail_int(s, n, "async", 0) != 0);
              used = 1;
            }
          } else if (KEY_IS(a, "bytes") && arg_int(e, a, &v)) {
            b->d.ms.bytes = (uint64_t)v, used = 1;
          } else if (KEY_IS(a, "context") && arg_int(e, a, &v)) {
            b->d.ms.context = (uint16_t)v, used = 1;
          } else if (KEY_IS(a, "memory bandwidth (GB/s)")) {
            used = 1;
          }
          break;
        case TBE_EV_SYNC:
          if (KEY_IS(a, "cuda_sync_kind")) {
            used = 1;
          } else if (KEY_IS(a, "wait_on_cuda_event_id") && arg_int(e, a, &v)) {
            b->d.sy.cuda_event = (uint64_t)v, used = 1;
          }
          break;
        case TBE_EV_MEMORY:
          if (KEY_IS(a, "Addr") && arg_int(e, a, &v)) b->d.mem.addr = (uint64_t)v, used = 1;
          else if (KEY_IS(a, "Bytes") && arg_int(e, a, &v)) b->d.mem.bytes = v, used = 1;
          else if (KEY_IS(a, "Total Allocated") && arg_int(e, a, &v)) b->d.mem.total_allocated = v, used = 1;
          else if (KEY_IS(a, "Total Reserved") && arg_int(e, a, &v)) b->d.mem.total_reserved = v, used = 1;
          else if (KEY_IS(a, "Device Id") && arg_int(e, a, &v)) b->d.mem.device = (int32_t)v, used = 1;
          else if (KEY_IS(a, "Device Type") && arg_int(e, a, &v)) b->d.mem.device_type = (int32_t)v, used = 1;
          break;
        case TBE_EV_NVTX_RANGE:
        case TBE_EV_NVTX_MARK:
          if (KEY_IS(a, "domain") && a->type == V_STR) {
            if ((rc = intern_text(c, sp(e, a->val), a->val.len, &b->d.nv.domain))) return rc;
            used = 1;
          } else if (KEY_IS(a, "color") && arg_int(e, a, &v)) {
            b->d.nv.color = (uint32_t)v, used = 1;
          } else if (KEY_IS(a, "category") && arg_int(e, a, &v)) {
            b->d.nv.category = (uint32_t)v, used = 1;
          } else if (KEY_IS(a, "payload") && a->type == V_NUM && a->num == NUM_INT) {
            b->d.nv.payload_type = a->is_u ? TBE_PAYLOAD_UINT64 : TBE_PAYLOAD_INT64;
            if (a->is_u) b->d.nv.payload.u = a->nv.u;
            else b->d.nv.payload.i = a->nv.i;
            used = 1;
          } else if (KEY_IS(a, "payload") && a->type == V_NUM && a->num == NUM_DBL) {
            b->d.nv.payload_type = TBE_PAYLOAD_DOUBLE, b->d.nv.payload.d = a->nv.d, used = 1;
          }
          break;
        case TBE_EV_DRIVER:
          if (xla && KEY_IS(a, "device_id") && arg_int(e, a, &v)) {
            /* The launching host call's device: implied by the link. */
            used = 1;
          }
          break;
      }
    }
    if (xla && !used && KEY_IS(a, "context_id")) used = 1; /* XSpace-internal reference */
    if (!used && (rc = generic_arg(c, b, a))) return rc;
  }

  if (kind == TBE_EV_KERNEL && b->d.k.dynamic_shared <= b->d.k.static_shared)
    b->d.k.static_shared -= b->d.k.dynamic_shared; /* "shared memory" holds both */
  if (kind == TBE_EV_SYNC) {
    if (have_stream) b->d.sy.stream = stream;
    else if (!e->tid.is_str) b->d.sy.stream = e->tid.num;
    if (e->have & F_NAME) {
      const char *s = sp(e, e->name);
      size_t n = e->name.len;
      if (n == 10 && !memcmp(s, "Event Sync", 10)) b->d.sy.sync_kind = TBE_SYNC_EVENT;
      else if (n == 17 && !memcmp(s, "Stream Wait Event", 17)) b->d.sy.sync_kind = TBE_SYNC_STREAM_WAIT;
      else if (n == 11 && !memcmp(s, "Stream Sync", 11)) b->d.sy.sync_kind = TBE_SYNC_STREAM;
      else if (n == 12 && !memcmp(s, "Context Sync", 12)) b->d.sy.sync_kind = TBE_SYNC_CONTEXT;
    }
  }
  if (!gpu && kind == TBE_EV_MEMORY && !e->pid.is_str) {
    /* Our exporter writes the allocator events the collector saw on a
     * stream on that stream's row. */
    int64_t pid = 0;
    int32_t gd;
    if ((rc = id_value(c, &e->pid, &pid))) return rc;
    gpu = gpu_of_pid(c, pid, &gd);
  }
  if (gpu) rc = stream_track(c, dev, have_dev, stream, have_stream, &b->ev.track);
  else rc = host_track(c, &b->ev.track);
  return rc;
}

static int emit(cj *c, build *b, size_t ntargs) {
  b->ev.start_ns += c->base;
  int rc = tbe_trace_add_event(c->t, &b->ev, b->has_detail ? &b->d : NULL, c->targs, ntargs, NULL);
  return rc;
}

static void note_end(cj *c, int64_t end) {
  if (end > c->max_end) c->max_end = end;
}

/* ---- B/E ---- */

static bstack *stack_of(cj *c, uint32_t track) {
  if (track >= c->nstacks) {
    size_t n = c->nstacks;
    void *p = c->stacks;
    if (tbe__grow(c->a, &p, &n, (size_t)track + 1, sizeof *c->stacks)) return NULL;
    c->stacks = p;
    memset(c->stacks + c->nstacks, 0, (n - c->nstacks) * sizeof *c->stacks);
    c->nstacks = n;
  }
  return &c->stacks[track];
}

static int push_b(cj *c, build *b) {
  bstack *st = stack_of(c, b->ev.track);
  if (!st) return TBE_ENOMEM;
  if (st->n == st->cap) {
    size_t old = st->cap;
    void *p = st->v;
    if (tbe__grow(c->a, &p, &st->cap, st->n + 1, sizeof *st->v)) return TBE_ENOMEM;
    st->v = p;
    memset(st->v + old, 0, (st->cap - old) * sizeof *st->v);
  }
  pending_b *pb = &st->v[st->n];
  pb->ev = b->ev;
  memcpy(&pb->d, &b->d, sizeof pb->d);
  pb->has_detail = b->has_detail;
  if (b->ntargs > pb->cap) {
    void *p = pb->args;
    if (tbe__grow(c->a, &p, &pb->cap, b->ntargs, sizeof *pb->args)) return TBE_ENOMEM;
    pb->args = p;
  }
  if (b->ntargs) memcpy(pb->args, c->targs, b->ntargs * sizeof *pb->args);
  pb->nargs = b->ntargs;
  st->n++;
  return 0;
}

static int emit_pending(cj *c, pending_b *pb, int64_t end, const tbe_arg *extra, size_t nextra) {
  tbe_event ev = pb->ev;
  ev.dur_ns = end - ev.start_ns;
  ev.start_ns += c->base;
  int rc;
  if (nextra) {
    if (pb->nargs + nextra > pb->cap) {
      void *p = pb->args;
      if (tbe__grow(c->a, &p, &pb->cap, pb->nargs + nextra, sizeof *pb->args)) return TBE_ENOMEM;
      pb->args = p;
    }
    size_t room = UINT16_MAX - pb->nargs;
    if (nextra > room) nextra = room;
    memcpy(pb->args + pb->nargs, extra, nextra * sizeof *extra);
  }
  rc = tbe_trace_add_event(c->t, &ev, pb->has_detail ? &pb->d : NULL, pb->args, pb->nargs + nextra, NULL);
  return rc;
}

static int on_end_event(cj *c) {
  uint32_t track;
  int rc = host_track(c, &track);
  if (rc) return rc;
  /* B events of GPU kinds were put on stream tracks: look there too. */
  bstack *st = track < c->nstacks ? &c->stacks[track] : NULL;
  if (!st || st->n == 0) {
    build b;
    int gpu_found = 0;
    if (cat_class(&c->e) != CK_NONE || c->ngpus) {
      if ((rc = build_event(c, &b, 0))) return rc;
      if (b.ev.track < c->nstacks && c->stacks[b.ev.track].n) {
        st = &c->stacks[b.ev.track];
        gpu_found = 1;
      }
    }
    if (!gpu_found) {
      c->n_unmatched_e++;
      return 0;
    }
  }
  pending_b *pb = &st->v[--st->n];
  /* Args on the E event are merged into the B's. */
  build eb;
  memset(&eb, 0, sizeof eb);
  for (size_t i = 0; i < c->e.nargs; i++)
    if ((rc = generic_arg(c, &eb, &c->e.args[i]))) return rc;
  note_end(c, c->e.ts);
  return emit_pending(c, pb, c->e.ts, c->targs, eb.ntargs);
}

/* ---- flows ---- */

static uint64_t flow_hash(uint64_t id, tbe_str cat) {
  uint64_t x = id ^ ((uint64_t)cat << 32) ^ 0x9E3779B97F4A7C15ull;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static int flows_rehash(cj *c, size_t ncap) {
  flow_end *nf = tbe__calloc(c->a, ncap, sizeof *nf);
  if (!nf) return TBE_ENOMEM;
  for (size_t i = 0; i < c->cap_flows; i++) {
    if (c->flows[i].used != 1) continue;
    size_t s = (size_t)flow_hash(c->flows[i].id, c->flows[i].cat) & (ncap - 1);
    while (nf[s].used) s = (s + 1) & (ncap - 1);
    nf[s] = c->flows[i];
  }
  tbe__free(c->a, c->flows);
  c->flows = nf;
  c->cap_flows = ncap;
  c->nflows_used = c->nflows_live;
  return 0;
}

static int push_u64(cj *c, uint64_t **v, size_t *n, size_t *cap, uint64_t x) {
  void *p = *v;
  if (tbe__grow(c->a, &p, cap, *n + 1, sizeof **v)) return TBE_ENOMEM;
  *v = p;
  (*v)[(*n)++] = x;
  return 0;
}

static int on_flow(cj *c, char ph) {
  scratch *e = &c->e;
  if (ph == 't') {
    c->n_flow_steps++;
    return 0;
  }
  /* The flow id: a number, or a string ("0x1f", or any text). */
  uint64_t id = 0;
  int rc;
  if (e->have & F_ID) {
    if (!e->id.is_str) {
      id = (uint64_t)e->id.num;
    } else {
      const char *s = sp(e, e->id.str);
      size_t n = e->id.str.len;
      int64_t v;
      if (parse_int(s, n, &v, &id, NULL) == 0) {
        id = (uint64_t)v;
      } else if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        char tmp[32];
        if (n < sizeof tmp) {
          memcpy(tmp, s, n);
          tmp[n] = 0;
          id = strtoull(tmp, NULL, 16);
        }
      } else {
        tbe_str sid;
        if ((rc = intern_text(c, s, n, &sid))) return rc;
        id = (1ull << 63) | sid;
      }
    }
  }
  if ((e->have & F_CAT) && SPAN_IS(e, e->cat, "ac2g")) {
    if (ph == 's') return push_u64(c, &c->ac2g_s, &c->n_ac2g_s, &c->cap_ac2g_s, id);
    return push_u64(c, &c->ac2g_f, &c->n_ac2g_f, &c->cap_ac2g_f, id);
  }
  tbe_str cat = 0, name = 0;
  if ((e->have & F_CAT) && (rc = intern_pre(c, sp(e, e->cat), e->cat.len, e->hcat, e->pcat, &cat))) return rc;
  if ((e->have & F_NAME) && (rc = intern_pre(c, sp(e, e->name), e->name.len, e->hname, e->pname, &name))) return rc;
  uint32_t track;
  int64_t pid = 0;
  int32_t dev;
  if ((rc = id_value(c, &e->pid, &pid))) return rc;
  if (!e->pid.is_str && gpu_of_pid(c, pid, &dev)) rc = stream_track(c, 0, 0, 0, 0, &track);
  else rc = host_track(c, &track);
  if (rc) return rc;
  int is_start = ph == 's';
  if (c->cap_flows) {
    size_t s = (size_t)flow_hash(id, cat) & (c->cap_flows - 1);
    while (c->flows[s].used) {
      flow_end *f = &c->flows[s];
      if (f->used == 1 && f->id == id && f->cat == cat && f->is_start != is_start) {
        tbe_flow fl;
        memset(&fl, 0, sizeof fl);
        fl.id = id;
        fl.cat = cat;
        fl.name = f->is_start ? f->name : name;
        if (!fl.name) fl.name = f->is_start ? name : f->name;
        fl.src_track = is_start ? track : f->track;
        fl.src_ns = (is_start ? e->ts : f->ts) + c->base;
        fl.dst_track = is_start ? f->track : track;
        fl.dst_ns = (is_start ? f->ts : e->ts) + c->base;
        fl.dst_enclosing = is_start ? f->bp_e : (e->have & F_BP) && SPAN_IS(e, e->bp, "e");
        f->used = 2;
        c->nflows_live--;
        return tbe_trace_add_flow(c->t, &fl);
      }
      s = (s + 1) & (c->cap_flows - 1);
    }
  }
  if ((c->nflows_used + 1) * 2 > c->cap_flows) {
    size_t ncap = c->cap_flows ? c->cap_flows : 64;
    while ((c->nflows_live + 1) * 2 > ncap / 2 && ncap < ((size_t)1 << 40)) ncap *= 2;
    if ((rc = flows_rehash(c, ncap))) return rc;
  }
  size_t s = (size_t)flow_hash(id, cat) & (c->cap_flows - 1);
  while (c->flows[s].used == 1) s = (s + 1) & (c->cap_flows - 1);
  if (c->flows[s].used == 0) c->nflows_used++;
  flow_end *f = &c->flows[s];
  f->used = 1;
  f->id = id;
  f->cat = cat;
  f->is_start = (uint8_t)is_start;
  f->bp_e = !is_start && (e->have & F_BP) && SPAN_IS(e, e->bp, "e");
  f->track = track;
  f->ts = e->ts;
  f->name = name;
  c->nflows_live++;
  return 0;
}

/* ---- M metadata ---- */

static int on_meta(cj *c) {
  scratch *e = &c->e;
  if (!(e->have & F_NAME)) return 0;
  const sarg *a = NULL;
  int kind = -1;
  if (SPAN_IS(e, e->name, "process_name")) kind = 0, a = find_arg(c, "name");
  else if (SPAN_IS(e, e->name, "thread_name")) kind = 1, a = find_arg(c, "name");
  else if (SPAN_IS(e, e->name, "process_labels")) kind = 2, a = find_arg(c, "labels");
  if (kind < 0 || !a || a->type != V_STR) return 0;
  int64_t pid = 0, tid = 0;
  int rc = id_value(c, &e->pid, &pid);
  int32_t gdev;
  if (!rc && (e->have & F_TID) && !(gpu_of_pid(c, pid, &gdev) && stream_num(e, &e->tid, &tid)))
    rc = id_value(c, &e->tid, &tid);
  if (rc) return rc;
  const char *s = sp(e, a->val);
  size_t n = a->val.len;
  /* GPU pids: Kineto labels them "GPU <n>", XLA names them "/device:GPU:<n>". */
  int64_t gnum;
  if (kind == 2 && n > 4 && !memcmp(s, "GPU ", 4) && parse_int(s + 4, n - 4, &gnum, NULL, NULL) == 0)
    return add_gpu_pid(c, pid, (int32_t)gnum);
  if (kind == 0 && n > 12 && !memcmp(s, "/device:GPU:", 12) &&
      parse_int(s + 12, n - 12, &gnum, NULL, NULL) == 0) {
    if ((rc = add_gpu_pid(c, pid, (int32_t)gnum))) return rc;
  }
  /* A pid labelled "CPU" is a host process (Kineto labels its own so; ours
   * labels every process of the trace, named or not). */
  if (kind == 2 && !(n == 3 && !memcmp(s, "CPU", 3))) return 0;
  if (kind == 2) kind = 3;
  void *p = c->metas;
  if (tbe__grow(c->a, &p, &c->cap_metas, c->nmetas + 1, sizeof *c->metas)) return TBE_ENOMEM;
  c->metas = p;
  meta *m = &c->metas[c->nmetas];
  m->pid = pid;
  m->tid = tid;
  m->kind = (uint8_t)kind;
  if ((rc = intern_text(c, s, n, &m->value))) return rc;
  c->nmetas++;
  return 0;
}

/* ---- C counters ---- */

static int on_counter(cj *c) {
  scratch *e = &c->e;
  int64_t pid = 0;
  int rc = id_value(c, &e->pid, &pid);
  if (rc) return rc;
  /* The counter's name, plus its id when it has one (the spec keys counter
   * series by name and id). */
  tbe__buf *nb = &c->tmp;
  tbe__buf_clear(nb);
  if (e->have & F_NAME) tbe__buf_append(nb, sp(e, e->name), e->name.len);
  if (e->have & F_ID) {
    tbe__buf_putc(nb, '[');
    if (e->id.is_str) tbe__buf_append(nb, sp(e, e->id.str), e->id.str.len);
    else tbe__buf_put_i64(nb, e->id.num);
    tbe__buf_putc(nb, ']');
  }
  if (tbe__buf_error(nb)) return TBE_ENOMEM;
  tbe_str cname;
  if ((rc = intern_text(c, (const char *)nb->data, nb->len, &cname))) return rc;
  /* One track per pid and counter name; its tid is the name's string id
   * made negative so it never meets a real thread id. */
  uint32_t track;
  if ((rc = get_track(c, TBE_TRACK_OTHER, pid, -(int64_t)cname - ((int64_t)1 << 32), -1, &track)))
    return rc;
  if (c->t->tracks[track].name == 0) c->t->tracks[track].name = cname;
  tbe_str cat = 0;
  if ((e->have & F_CAT) && e->cat.len && (rc = intern_text(c, sp(e, e->cat), e->cat.len, &cat)))
    return rc;
  for (size_t i = 0; i < e->nargs; i++) {
    const sarg *a = &e->args[i];
    double v;
    if (a->type != V_NUM || parse_double(sp(e, a->val), a->val.len, &v)) {
      int64_t iv;
      if (a->type == V_NUM && parse_int(sp(e, a->val), a->val.len, &iv, NULL, NULL) == 0) v = (double)iv;
      else continue;
    }
    tbe_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = TBE_EV_COUNTER;
    ev.start_ns = e->ts + c->base;
    ev.track = track;
    ev.cat = cat;
    ev.detail = ev.link = TBE_NONE;
    if ((rc = intern_text(c, sp(e, a->key), a->key.len, &ev.name))) return rc;
    tbe_counter cv = {v};
    if ((rc = tbe_trace_add_event(c->t, &ev, &cv, NULL, 0, NULL))) return rc;
  }
  return 0;
}

/* Checks that the event's times, with the base known so far, lie in the
 * model's range (common/checked.h: importers refuse): ts and, for a
 * complete event, its end.  ts and dur are each in range (the parser
 * checked), so the sums below cannot overflow.  Returns 1 or 0 (failed). */
static int times_ok(cj *c, char ph) {
  const scratch *e = &c->e;
  if (!(e->have & F_TS)) return 1;
  int64_t start = e->ts + c->base;
  if (!tbe__time_ok(start))
    return cfail_msg(c, e->start_off, TBE_EPARSE,
                     "event field ts%s is out of range (more than 146 years from 1970)",
                     c->base ? " + baseTimeNanoseconds" : "");
  if (ph == 'X' && e->dur > 0 && !tbe__span_ok(start, e->dur))
    return cfail_msg(c, e->start_off, TBE_EPARSE,
                     "event field dur ends the event out of range (more than 146 years from 1970)");
  return 1;
}

/* The scratch event is complete: turn it into model data. */
static int finish_event(cj *c) {
  scratch *e = &c->e;
  if (++c->nevents_read > c->o->max_events) {
    char msg[256];
    tbe__import_limit_msg(msg, sizeof msg, TBE__LIM_EVENTS, c->o, "more trace events than the limit");
    return cfail_msg(c, e->start_off, TBE_ETOOBIG, "%s", msg);
  }
  if (!(e->have & F_PH) || e->ph.len == 0) {
    c->n_noph++;
    return 1;
  }
  char ph = sp(e, e->ph)[0];
  if (ph != 'M' && !times_ok(c, ph)) return 1;
  int rc = 0;
  build b;
  switch (ph) {
    case 'X':
      if ((rc = build_event(c, &b, 0))) break;
      note_end(c, e->ts + (e->dur > 0 ? e->dur : 0));
      rc = emit(c, &b, b.ntargs);
      break;
    case 'B':
      if ((rc = build_event(c, &b, 0))) break;
      note_end(c, e->ts);
      rc = push_b(c, &b);
      break;
    case 'E':
      rc = on_end_event(c);
      break;
    case 'i':
    case 'I':
    case 'R':
      if ((rc = build_event(c, &b, 1))) break;
      note_end(c, e->ts);
      rc = emit(c, &b, b.ntargs);
      break;
    case 'n':
      if ((rc = build_event(c, &b, 1))) break;
      b.ev.flags |= TBE_EVF_ASYNC;
      note_end(c, e->ts);
      rc = emit(c, &b, b.ntargs);
      break;
    case 'C':
      note_end(c, e->ts);
      rc = on_counter(c);
      break;
    case 's':
    case 't':
    case 'f':
      rc = on_flow(c, ph);
      break;
    case 'M':
      rc = on_meta(c);
      break;
    default:
      c->n_unsupported++;
      if (!strchr(c->unsupported_ph, ph) && strlen(c->unsupported_ph) < sizeof c->unsupported_ph - 1) {
        size_t l = strlen(c->unsupported_ph);
        c->unsupported_ph[l] = (ph >= 0x20 && ph < 0x7f) ? ph : '?';
        c->unsupported_ph[l + 1] = 0;
      }
      break;
  }
  if (rc) return cfail(c, e->start_off, rc);
  return 1;
}

/* ---------------------------------------------------------------------- */
/* records: parser -> model */

enum { REC_EVENT = 1, REC_BASE, REC_TRACENAME, REC_DEVICE, REC_BACKEND, REC_TBE };

typedef struct rec {
  uint32_t kind;
  uint32_t size;    /* the whole record, a multiple of 8 */
  uint32_t fixed;   /* bytes of the fixed part after this header */
  uint32_t textlen; /* bytes of text after the fixed part */
} rec;

/* An event's fields; followed by sarg[nargs] and the text. */
typedef struct rec_ev {
  uint32_t have, nargs;
  span name, cat, ph, bp, s;
  uint64_t hname, hcat;
  uint8_t pname, pcat;
  xid pid, tid, id;
  int64_t ts, dur;
  uint64_t start_off;
} rec_ev;

static void apply_batch(cj *c, tbe__buf *b);
static int flush_batch(cj *c);
static tbe__buf *out_buf(cj *c);

/* Appends a record of a fixed part (`p1`, `n1` then `p2`, `n2`) and a text. */
static int emit_parts(cj *c, uint32_t kind, const void *p1, size_t n1, const void *p2, size_t n2,
                      const void *text, size_t tn) {
  size_t fixed = n1 + n2;
  size_t size = (sizeof(rec) + fixed + tn + 7) & ~(size_t)7;
  if (size > UINT32_MAX) return cj_fail_at(c, cj_pos(c), TBE_ETOOBIG, "trace event too large");
  tbe__buf *b = out_buf(c);
  if (!b) return 0; /* stopped */
  uint8_t *d = tbe__buf_reserve(b, size);
  if (!d) return cj_nomem(c);
  rec r = {kind, (uint32_t)size, (uint32_t)fixed, (uint32_t)tn};
  memcpy(d, &r, sizeof r);
  if (n1) memcpy(d + sizeof r, p1, n1);
  if (n2) memcpy(d + sizeof r + n1, p2, n2);
  if (tn) memcpy(d + sizeof r + fixed, text, tn);
  memset(d + sizeof r + fixed + tn, 0, size - sizeof r - fixed - tn);
  b->len += size;
  if (!c->worker && b->len >= CJ_BATCH) return flush_batch(c);
  return 1;
}

static int emit_record(cj *c, uint32_t kind, const void *fixed, size_t fn, const void *text,
                       size_t tn) {
  return emit_parts(c, kind, fixed, fn, NULL, 0, text, tn);
}

/* The parser side's share of the model work: string hashes and numbers
 * (see sarg). */
static void prepass(scratch *e) {
  int plain;
  e->hname = e->hcat = 0;
  e->pname = e->pcat = 0;
  if (e->have & F_NAME) e->hname = hash_check(sp(e, e->name), e->name.len, &plain), e->pname = (uint8_t)plain;
  if (e->have & F_CAT) e->hcat = hash_check(sp(e, e->cat), e->cat.len, &plain), e->pcat = (uint8_t)plain;
  for (size_t i = 0; i < e->nargs; i++) {
    sarg *a = &e->args[i];
    a->kh = hash_check(sp(e, a->key), a->key.len, &plain);
    a->kplain = (uint8_t)plain;
    a->num = NUM_NONE;
    a->is_u = 0;
    a->nv.u = 0;
    a->vplain = 0;
    const char *v = sp(e, a->val);
    if (a->type == V_NUM) {
      int is_u = 0;
      int64_t iv;
      uint64_t uv;
      double d;
      if (parse_int(v, a->val.len, &iv, &uv, &is_u) == 0) {
        a->num = NUM_INT;
        a->is_u = (uint8_t)is_u;
        if (is_u) a->nv.u = uv;
        else a->nv.i = iv;
        continue;
      }
      if (parse_double(v, a->val.len, &d) == 0) {
        a->num = NUM_DBL;
        a->nv.d = d;
        continue;
      }
      a->num = NUM_BAD;
    }
    a->nv.vh = hash_check(v, a->val.len, &plain);
    a->vplain = (uint8_t)plain;
  }
}

static int emit_event_record(cj *c) {
  scratch *e = &c->pe;
  if (tbe__buf_error(&e->text)) return cj_nomem(c);
  prepass(e);
  rec_ev v;
  memset(&v, 0, sizeof v);
  v.have = e->have;
  v.nargs = (uint32_t)e->nargs;
  v.name = e->name, v.cat = e->cat, v.ph = e->ph, v.bp = e->bp, v.s = e->s;
  v.hname = e->hname, v.hcat = e->hcat, v.pname = e->pname, v.pcat = e->pcat;
  v.pid = e->pid, v.tid = e->tid, v.id = e->id;
  v.ts = e->ts, v.dur = e->dur;
  v.start_off = e->start_off;
  return emit_parts(c, REC_EVENT, &v, sizeof v, e->args, e->nargs * sizeof *e->args, e->text.data,
                    e->text.len);
}

static int emit_device_record(cj *c) {
  if (!c->dev_have_id) return 1;
  if (tbe__buf_error(&c->devname)) return cj_nomem(c);
  return emit_record(c, REC_DEVICE, &c->dev, sizeof c->dev, c->devname.data, c->devname.len);
}

static int emit_dist_record(cj *c) {
  if (!c->dist_have_backend) return 1;
  if (tbe__buf_error(&c->distname)) return cj_nomem(c);
  return emit_record(c, REC_BACKEND, NULL, 0, c->distname.data, c->distname.len);
}

/* ---------------------------------------------------------------------- */
/* pipeline (threaded mode)
 *
 * Three kinds of threads share a ring of `nslots` slots, each holding a
 * buffer of records in file order (slot seq % nslots; head = the
 * consumer's next, tail = the driver's next):
 *  - the driver (produce) reads the input, runs the boundary scanner and
 *    feeds everything outside the traceEvents array to the main yajl
 *    handle, whose records go into a "direct" slot; the array's contents
 *    are cut at top-level commas into chunks of about chunk_target bytes,
 *    each put into a slot of its own for the workers;
 *  - N workers parse chunks ('[' + chunk + ']') with yajl handles of their
 *    own into the same records (raw text, nothing interned);
 *  - the calling thread (consume) applies the slots strictly in seq order.
 * A chunk a worker cannot parse (or anything unusual: empty elements, a
 * missing ']') is not reported from the worker: the driver replays the
 * bytes from that chunk on through the main yajl handle, serially, and
 * goes on serially, so errors, truncations and tails behave exactly as in
 * the one-thread parse.  The ring bounds memory: at most nslots chunks
 * and their records exist at once. */

enum { S_FREE, S_FILL, S_PENDING, S_WORKING, S_READY, S_FAILED, S_DISCARD };

typedef struct slot {
  int state;
  int chunk;          /* a chunk for the workers (else direct records) */
  int first;          /* the chunk begins right after the array's '[' */
  uint64_t off;       /* file offset of the chunk's first byte */
  tbe__buf in, out;   /* '[' chunk ']'; records */
  uint64_t prog_done, prog_total;
} slot;

#define SLOT(c, seq) (&(c)->slots[(seq) % (c)->nslots])

/* Takes the next slot (waiting for the consumer to free one).  NULL when
 * the consumer failed, or (`failable`) when a chunk failed meanwhile. */
static slot *alloc_slot(cj *c, int failable) {
  pthread_mutex_lock(&c->mu);
  uint64_t t0 = c->prof ? mono_ns() : 0;
  while (c->tail - c->head >= c->nslots && !stopped(c) && !(failable && c->fail_pending))
    pthread_cond_wait(&c->cv, &c->mu);
  if (c->prof) c->p_drv_wait += mono_ns() - t0;
  slot *s = NULL;
  if (!stopped(c) && !(failable && c->fail_pending)) {
    s = SLOT(c, c->tail);
    s->state = S_FILL;
    s->chunk = 0;
    c->tail++;
  }
  pthread_mutex_unlock(&c->mu);
  if (s) tbe__buf_clear(&s->out);
  return s;
}

static void close_direct(cj *c) {
  slot *s = c->direct;
  if (!s) return;
  pthread_mutex_lock(&c->mu);
  s->prog_done = c->prog_done;
  s->prog_total = c->prog_total;
  s->state = S_READY;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  c->direct = NULL;
}

/* Where records go: the worker's slot, the one-thread batch, or the
 * driver's direct slot (opened on demand).  NULL when stopped. */
static tbe__buf *out_buf(cj *c) {
  if (c->worker) return c->out;
  if (!c->threaded) return &c->batch;
  if (!c->direct) {
    c->direct = alloc_slot(c, 0);
    if (!c->direct) return NULL;
  }
  return &c->direct->out;
}

/* Applies the batch (one thread) or hands the direct slot over. */
static int flush_batch(cj *c) {
  if (!c->threaded) {
    uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
    apply_batch(c, &c->batch);
    if (c->prof) c->p_apply += mono_ns() - t0, c->p_apply_cpu += thread_cpu_ns() - u0;
    tbe__buf_clear(&c->batch);
    if (c->o->progress && !c->crc) c->o->progress(c->o->progress_ctx, c->prog_done, c->prog_total);
    return c->crc ? 0 : 1;
  }
  close_direct(c);
  return __atomic_load_n(&c->stop, __ATOMIC_RELAXED) ? 0 : 1;
}

/* ---------------------------------------------------------------------- */
/* capture of nested arg values as compact JSON */

static void cap_escape(tbe__buf *b, const unsigned char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  tbe__buf_putc(b, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = s[i];
    if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
    tbe__buf_append(b, s + run, i - run);
    run = i + 1;
    switch (ch) {
      case '"': tbe__buf_append(b, "\\\"", 2); break;
      case '\\': tbe__buf_append(b, "\\\\", 2); break;
      case '\n': tbe__buf_append(b, "\\n", 2); break;
      case '\t': tbe__buf_append(b, "\\t", 2); break;
      case '\r': tbe__buf_append(b, "\\r", 2); break;
      case '\b': tbe__buf_append(b, "\\b", 2); break;
      case '\f': tbe__buf_append(b, "\\f", 2); break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
        tbe__buf_append(b, u, 6);
      }
    }
  }
  tbe__buf_append(b, s + run, n - run);
  tbe__buf_putc(b, '"');
}

/* Before a value inside the capture: a comma between array elements. */
static void cap_sep(cj *c) {
  uint8_t *st = &c->capst[c->cap];
  if (*st & 1) {
    if (*st & 2) tbe__buf_putc(&c->capbuf, ',');
    *st |= 2;
  }
}

/* Starts capturing a value: an empty buffer and the outer level's state. */
static int cap_begin(cj *c) {
  tbe__buf_clear(&c->capbuf);
  if (c->cap_capst < 2) {
    void *p = c->capst;
    if (tbe__grow(c->a, &p, &c->cap_capst, 2, 1)) return cj_nomem(c);
    c->capst = p;
  }
  c->capst[0] = 0;
  return 1;
}

static int cap_open(cj *c, int is_map) {
  cap_sep(c);
  /* One state byte per level; the nesting itself is bounded by max_depth
   * (the guard, or on_open in a worker). */
  if ((size_t)c->cap + 2 > c->cap_capst) {
    void *p = c->capst;
    if (tbe__grow(c->a, &p, &c->cap_capst, (size_t)c->cap + 2, 1)) return cj_nomem(c);
    c->capst = p;
  }
  tbe__buf_putc(&c->capbuf, is_map ? '{' : '[');
  c->cap++;
  c->capst[c->cap] = is_map ? 0 : 1;
  return 1;
}

static int add_scratch_arg(cj *c, span key, uint8_t type, const void *val, size_t n);

static int cap_close(cj *c, int is_map) {
  tbe__buf_putc(&c->capbuf, is_map ? '}' : ']');
  c->cap--;
  if (c->cap == 0) {
    if (tbe__buf_error(&c->capbuf)) return cj_nomem(c);
    if (c->cap_top) {
      uint32_t key = (uint32_t)c->cap_top;
      c->cap_top = 0;
      return emit_record(c, REC_TBE, &key, sizeof key, c->capbuf.data, c->capbuf.len);
    }
    return add_scratch_arg(c, c->cap_key, V_JSON, c->capbuf.data, c->capbuf.len);
  }
  return 1;
}

/* ---------------------------------------------------------------------- */
/* yajl callbacks */

static int add_scratch_arg(cj *c, span key, uint8_t type, const void *val, size_t n) {
  scratch *e = &c->pe;
  if (e->nargs == e->cap_args) {
    void *p = e->args;
    if (tbe__grow(c->a, &p, &e->cap_args, e->nargs + 1, sizeof *e->args)) return cj_nomem(c);
    e->args = p;
  }
  sarg *a = &e->args[e->nargs++];
  a->key = key;
  a->type = type;
  a->val = put_text(c, val, n);
  return 1;
}

static int set_xid(cj *c, xid *x, int is_num, const char *s, size_t n) {
  if (is_num) {
    int64_t v;
    double d;
    x->is_str = 0;
    if (parse_int(s, n, &v, NULL, NULL) == 0) x->num = v;
    else if (parse_double(s, n, &d) == 0 && d > -9.2e18 && d < 9.2e18) x->num = (int64_t)d;
    else x->num = 0;
  } else {
    x->is_str = 1;
    x->str = put_text(c, s, n);
  }
  return 1;
}

/* ---- limits seen from the callbacks ----
 *
 * The main handle's guard (feed_main) measures strings and keys in the
 * file's text and refuses nesting before yajl reads it; what remains for
 * the callbacks: numbers (their text is the token), the size of the event
 * being parsed (checked at every token, so the scratch never holds more
 * than about one event of max_event_bytes), and in workers, strings whose
 * decoded length leaves their raw length in doubt. */

static const char *ev_key_name(int k) {
  static const char *const names[] = {"", "name", "cat", "ph", "ts", "dur", "pid", "tid", "id",
                                      "bp", "s", "args"};
  return k >= 0 && k <= E_ARGS ? names[k] : "";
}

static const char *ev_key_type(int k) {
  switch (k) {
    case E_TS:
    case E_DUR: return "a number";
    case E_PID:
    case E_TID:
    case E_ID: return "a number or a string";
    case E_ARGS: return "an object";
    default: return "a string";
  }
}

/* The size of the event being parsed, from its '{' to the token just
 * read: checked at every token of more than 4 KiB, every 32nd token and
 * at the event's end (ev_size_end), so the scratch never holds more than
 * max_event_bytes plus 31 small tokens (and the parse makes few calls into
 * yajl for it). */
static int ev_size_check(cj *c) {
  c->ev_tick = 32;
  if (cj_pos(c) - c->pe.start_off <= c->o->max_event_bytes) return 1;
  return cj_limit(c, c->pe.start_off, TBE__LIM_EVENT, "a trace event larger than the limit");
}

static inline int ev_size_ok(cj *c, size_t n) {
  if (!c->in_event || (n <= 4096 && --c->ev_tick > 0)) return 1;
  return ev_size_check(c);
}

/* A worker's string or key of decoded length `n`, just lexed: its length
 * in the chunk's text, quotes included (escapes make it up to 6n + 2). */
static uint64_t worker_raw_len(const cj *c, size_t n) {
  size_t end = yajl_get_bytes_consumed(c->h); /* just past the closing quote */
  if ((uint64_t)n * 6 + 2 <= c->o->max_token_bytes || end < 2) return n + 2;
  for (size_t i = end - 1; i-- > 0;) {
    if (c->wbuf[i] != '"') continue;
    size_t k = i;
    while (k > 0 && c->wbuf[k - 1] == '\\') k--;
    if ((i - k) % 2 == 0) return end - i;
  }
  return end;
}

static int token_ok(cj *c, int type, size_t n) {
  uint64_t raw = type == V_NUM ? n : type == V_STR && c->worker ? worker_raw_len(c, n) : 0;
  if (raw <= c->o->max_token_bytes) return 1;
  return cj_limit(c, cj_pos(c) - raw, TBE__LIM_TOKEN,
                  type == V_NUM ? "a JSON number longer than the limit"
                                : "a JSON string longer than the limit");
}

/* A scalar value (number text, string, or true/false/null as JSON text). */
static int on_scalar(cj *c, int type, const char *s, size_t n) {
  if (!token_ok(c, type, n) || !ev_size_ok(c, n)) return 0;
  if (c->skip) return 1;
  if (c->cap) {
    cap_sep(c);
    if (type == V_STR) cap_escape(&c->capbuf, (const unsigned char *)s, n);
    else tbe__buf_append(&c->capbuf, s, n);
    return 1;
  }
  switch (c->depth ? c->role[c->depth] : R_NONE) {
    case R_NONE:
      return cj_fail_at(c, cj_pos(c), TBE_EPARSE, "the top-level value is not an object or array");
    case R_TOP:
      if (c->top_key == K_BASE) {
        int64_t v[2];
        if (type != V_NUM || parse_int(s, n, &v[0], NULL, NULL) != 0)
          return cj_fail_at(c, cj_pos(c), TBE_EPARSE, "baseTimeNanoseconds is not an integer");
        if (!tbe__time_ok(v[0]))
          return cj_fail_at(c, cj_pos(c) - n, TBE_EPARSE,
                            "baseTimeNanoseconds is out of range (more than 146 years from 1970)");
        v[1] = (int64_t)(cj_pos(c) - n); /* its offset, for messages */
        return emit_record(c, REC_BASE, v, sizeof v, NULL, 0);
      } else if (c->top_key == K_NAME && type == V_STR) {
        return emit_record(c, REC_TRACENAME, NULL, 0, s, n);
      } else if (c->top_key == K_EVENTS) {
        return cj_fail_at(c, cj_pos(c), TBE_EPARSE, "traceEvents is not an array");
      }
      return 1;
    case R_EVENTS:
      return cj_fail_at(c, cj_pos(c), TBE_EPARSE, "a trace event is not an object");
    case R_EVENT: {
      scratch *e = &c->pe;
      switch (c->ev_key) {
        case E_NAME:
          e->name = put_text(c, s, n);
          e->have |= F_NAME;
          break;
        case E_CAT:
          e->cat = put_text(c, s, n);
          e->have |= F_CAT;
          break;
        case E_PH:
          if (type != V_STR)
            return cj_fail_at(c, e->start_off, TBE_EPARSE, "event field ph is not a string");
          e->ph = put_text(c, s, n);
          e->have |= F_PH;
          break;
        case E_TS:
        case E_DUR: {
          int64_t v;
          if (type == V_JSON && n == 4 && !memcmp(s, "null", 4)) break;
          if (type != V_NUM)
            return cj_fail_at(c, e->start_off, TBE_EPARSE, "event field %s is not a number",
                              c->ev_key == E_TS ? "ts" : "dur");
          /* Refused, not saturated (common/checked.h): a time beyond
           * +-146 years of 1970 is no clock's. */
          if (us_to_ns(s, n, &v) || !tbe__time_ok(v))
            return cj_fail_at(c, e->start_off, TBE_EPARSE,
                              "event field %s is out of range (more than 146 years from 1970): %.*s",
                              c->ev_key == E_TS ? "ts" : "dur", (int)(n > 40 ? 40 : n), s);
          if (c->ev_key == E_TS) e->ts = v, e->have |= F_TS;
          else e->dur = v, e->have |= F_DUR;
          break;
        }
        case E_PID:
          set_xid(c, &e->pid, type == V_NUM, s, n);
          e->have |= F_PID;
          break;
        case E_TID:
          set_xid(c, &e->tid, type == V_NUM, s, n);
          e->have |= F_TID;
          break;
        case E_ID:
          set_xid(c, &e->id, type == V_NUM, s, n);
          e->have |= F_ID;
          break;
        case E_BP:
          e->bp = put_text(c, s, n);
          e->have |= F_BP;
          break;
        case E_S:
          e->s = put_text(c, s, n);
          e->have |= F_S;
          break;
        default:
          break;
      }
      return 1;
    }
    case R_ARGS:
      return add_scratch_arg(c, c->arg_key, (uint8_t)type, s, n);
    case R_DEVICE: {
      tbe_device *d = &c->dev;
      if (c->dev_key == 1 && type == V_STR) {
        tbe__buf_clear(&c->devname);
        tbe__buf_append(&c->devname, s, n);
        return 1;
      }
      int64_t v;
      if (type != V_NUM || parse_int(s, n, &v, NULL, NULL) != 0) return 1;
      switch (c->dev_key) {
        case 2: d->id = (int32_t)v, c->dev_have_id = 1; break;
        case 3: d->memory_bytes = v; break;
        case 4: d->cc_major = (int32_t)v; break;
        case 5: d->cc_minor = (int32_t)v; break;
        case 6: d->max_threads_per_block = (int32_t)v; break;
        case 7: d->max_threads_per_sm = (int32_t)v; break;
        case 8: d->regs_per_block = (int32_t)v; break;
        case 9: d->regs_per_sm = (int32_t)v; break;
        case 10: d->warp_size = (int32_t)v; break;
        case 11: d->shared_per_block = v; break;
        case 12: d->shared_per_sm = v; break;
        case 13: d->sm_count = (int32_t)v; break;
        case 14: d->shared_per_block_optin = v; break;
        case 15: d->clock_khz = (int32_t)v; break;
        case 16: d->memory_bandwidth = v; break;
      }
      return 1;
    }
    case R_DIST: {
      int64_t v;
      if (c->dist_key == 1 && type == V_STR) {
        tbe__buf_clear(&c->distname);
        tbe__buf_append(&c->distname, s, n);
        c->dist_have_backend = 1;
      } else if ((c->dist_key == 2 || c->dist_key == 3) && type == V_NUM &&
                 parse_int(s, n, &v, NULL, NULL) == 0) {
        if (c->dist_key == 2) c->dist_rank = v, c->dist_have_rank = 1;
        else c->dist_world = v, c->dist_have_world = 1;
      }
      return 1;
    }
    default:
      return 1;
  }
}

static int cb_null(void *ctx) { return on_scalar(ctx, V_JSON, "null", 4); }
static int cb_bool(void *ctx, int v) {
  return v ? on_scalar(ctx, V_JSON, "true", 4) : on_scalar(ctx, V_JSON, "false", 5);
}
static int cb_number(void *ctx, const char *s, size_t n) { return on_scalar(ctx, V_NUM, s, n); }
static int cb_string(void *ctx, const unsigned char *s, size_t n) {
  return on_scalar(ctx, V_STR, (const char *)s, n);
}

static void push_role(cj *c, uint8_t r) {
  c->depth++;
  c->role[c->depth] = r;
}

static void scratch_reset(scratch *e) {
  e->have = 0;
  e->nargs = 0;
  e->ts = e->dur = 0;
  e->pid.is_str = e->tid.is_str = e->id.is_str = 0;
  e->pid.num = e->tid.num = e->id.num = 0;
  tbe__buf_clear(&e->text);
}

static int on_open(cj *c, int is_map) {
  if (!ev_size_ok(c, 0)) return 0;
  /* The main handle's guard refuses nesting past max_depth before yajl
   * sees it; a worker gives its chunk back (one level early: its '[' stands
   * for an array that is at depth 2 in the object form) and the serial
   * replay refuses it at the exact byte. */
  if (c->worker && (uint64_t)c->depth + c->skip + (uint64_t)c->cap + 2 > c->o->max_depth)
    return cj_fail_at(c, cj_pos(c) - 1, TBE_ETOOBIG, "nested too deep");
  if (c->skip) {
    c->skip++;
    return 1;
  }
  if (c->cap) return cap_open(c, is_map);
  switch (c->depth ? c->role[c->depth] : R_NONE) {
    case R_NONE:
      if (is_map) {
        c->form = 1;
        push_role(c, R_TOP);
      } else {
        c->form = 2;
        c->saw_events = 1;
        push_role(c, R_EVENTS);
      }
      return 1;
    case R_TOP:
      if (c->top_key == K_EVENTS) {
        if (is_map) return cj_fail_at(c, cj_pos(c) - 1, TBE_EPARSE, "traceEvents is not an array");
        c->saw_events = 1;
        push_role(c, R_EVENTS);
      } else if (c->top_key == K_DEVPROPS && !is_map) {
        push_role(c, R_DEVPROPS);
      } else if (c->top_key == K_DIST && is_map) {
        c->dist_have_backend = 0;
        push_role(c, R_DIST);
      } else if (c->top_key >= K_TBE_FIRST) {
        c->cap_top = c->top_key;
        if (!cap_begin(c)) return 0;
        return cap_open(c, is_map);
      } else {
        c->skip = 1;
      }
      return 1;
    case R_EVENTS:
      if (!is_map) return cj_fail_at(c, cj_pos(c) - 1, TBE_EPARSE, "a trace event is not an object");
      scratch_reset(&c->pe);
      c->pe.start_off = cj_pos(c) - 1;
      c->in_event = 1;
      push_role(c, R_EVENT);
      return 1;
    case R_EVENT:
      if (c->ev_key == E_ARGS && is_map) push_role(c, R_ARGS);
      else if (c->ev_key != E_OTHER && c->ev_key != E_ARGS)
        return cj_fail_at(c, c->pe.start_off, TBE_EPARSE, "event field %s is %s, not %s",
                          ev_key_name(c->ev_key), is_map ? "an object" : "an array",
                          ev_key_type(c->ev_key));
      else c->skip = 1;
      return 1;
    case R_ARGS:
      c->cap_key = c->arg_key;
      if (!cap_begin(c)) return 0;
      return cap_open(c, is_map);
    case R_DEVPROPS:
      if (is_map) {
        memset(&c->dev, 0, sizeof c->dev);
        c->dev_have_id = 0;
        tbe__buf_clear(&c->devname);
        push_role(c, R_DEVICE);
      } else {
        c->skip = 1;
      }
      return 1;
    default:
      c->skip = 1;
      return 1;
  }
}

static int cb_start_map(void *ctx) { return on_open(ctx, 1); }
static int cb_start_array(void *ctx) { return on_open(ctx, 0); }

/* Consumer side: a deviceProperties entry into the model. */
static int apply_device(cj *c, const tbe_device *s, const char *name, size_t nlen) {
  uint32_t idx;
  int rc = tbe_trace_device(c->t, s->id, &idx);
  if (rc) return rc;
  tbe_device *d = &c->t->devices[idx];
  if (nlen && (rc = intern_text(c, name, nlen, &d->name))) return rc;
#define TAKE(f) \
  if (s->f) d->f = s->f
  TAKE(sm_count);
  TAKE(clock_khz);
  TAKE(memory_bytes);
  TAKE(memory_bandwidth);
  TAKE(cc_major);
  TAKE(cc_minor);
  TAKE(max_threads_per_block);
  TAKE(max_threads_per_sm);
  TAKE(regs_per_block);
  TAKE(regs_per_sm);
  TAKE(warp_size);
  TAKE(shared_per_block);
  TAKE(shared_per_sm);
  TAKE(shared_per_block_optin);
#undef TAKE
  return 0;
}

static int on_close(cj *c, int is_map) {
  if (c->in_event) { /* the event's own '}' always checks its size */
    int end = !c->skip && !c->cap && c->role[c->depth] == R_EVENT;
    if (end ? !ev_size_check(c) : !ev_size_ok(c, 0)) return 0;
  }
  if (c->skip) {
    c->skip--;
    return 1;
  }
  if (c->cap) return cap_close(c, is_map);
  uint8_t r = c->depth ? c->role[c->depth] : R_NONE;
  c->depth--;
  switch (r) {
    case R_EVENT:
      c->in_event = 0;
      if (c->dummy) { /* the placeholder before a replay (see par_fallback) */
        c->dummy = 0;
        return 1;
      }
      return emit_event_record(c);
    case R_DEVICE: return emit_device_record(c);
    case R_DIST: return emit_dist_record(c);
    case R_EVENTS: c->done_events = 1; return 1;
    default: return 1;
  }
}

static int cb_end_map(void *ctx) { return on_close(ctx, 1); }
static int cb_end_array(void *ctx) { return on_close(ctx, 0); }

static int key_is(const unsigned char *k, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(k, lit, n) == 0;
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t n) {
  cj *c = ctx;
  if (c->worker && !token_ok(c, V_STR, n)) return 0;
  if (!ev_size_ok(c, n)) return 0;
  if (c->skip) return 1;
  if (c->cap) {
    uint8_t *st = &c->capst[c->cap];
    if (*st & 2) tbe__buf_putc(&c->capbuf, ',');
    *st |= 2;
    cap_escape(&c->capbuf, k, n);
    tbe__buf_putc(&c->capbuf, ':');
    return 1;
  }
  switch (c->role[c->depth]) {
    case R_EVENT: {
      int key = E_OTHER;
      switch (n) {
        case 1:
          if (k[0] == 's') key = E_S;
          break;
        case 2:
          if (k[0] == 'p' && k[1] == 'h') key = E_PH;
          else if (k[0] == 't' && k[1] == 's') key = E_TS;
          else if (k[0] == 'i' && k[1] == 'd') key = E_ID;
          else if (k[0] == 'b' && k[1] == 'p') key = E_BP;
          break;
        case 3:
          if (!memcmp(k, "cat", 3)) key = E_CAT;
          else if (!memcmp(k, "dur", 3)) key = E_DUR;
          else if (!memcmp(k, "pid", 3)) key = E_PID;
          else if (!memcmp(k, "tid", 3)) key = E_TID;
          break;
        case 4:
          if (!memcmp(k, "name", 4)) key = E_NAME;
          else if (!memcmp(k, "args", 4)) key = E_ARGS;
          break;
      }
      c->ev_key = key;
      return 1;
    }
    case R_ARGS:
      c->arg_key = put_text(c, k, n);
      return 1;
    case R_TOP:
      c->top_key = key_is(k, n, "traceEvents")           ? K_EVENTS
                   : key_is(k, n, "deviceProperties")    ? K_DEVPROPS
                   : key_is(k, n, "distributedInfo")     ? K_DIST
                   : key_is(k, n, "baseTimeNanoseconds") ? K_BASE
                   : key_is(k, n, "traceName")           ? K_NAME
                   : key_is(k, n, "tbexportTrace")       ? K_TBE_TRACE
                   : key_is(k, n, "tbexportCollection")  ? K_TBE_COLLECTION
                   : key_is(k, n, "tbexportWarnings")    ? K_TBE_WARNINGS
                   : key_is(k, n, "tbexportSteps")       ? K_TBE_STEPS
                                                         : K_OTHER;
      return 1;
    case R_DEVICE: {
      static const char *const keys[] = {
          "",  "name", "id", "totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock",
          "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor", "warpSize",
          "sharedMemPerBlock", "sharedMemPerMultiprocessor", "numSms", "sharedMemPerBlockOptin",
          "clockRate", "memoryBandwidth"};
      c->dev_key = 0;
      for (int i = 1; i < (int)(sizeof keys / sizeof keys[0]); i++)
        if (key_is(k, n, keys[i])) c->dev_key = i;
      return 1;
    }
    case R_DIST:
      c->dist_key = key_is(k, n, "backend")      ? 1
                    : key_is(k, n, "rank")       ? 2
                    : key_is(k, n, "world_size") ? 3
                                                 : 0;
      return 1;
    default:
      return 1;
  }
}

static const yajl_callbacks callbacks = {cb_null,      cb_bool,   NULL,        NULL,
                                         cb_number,    cb_string, cb_start_map, cb_map_key,
                                         cb_end_map,   cb_start_array, cb_end_array};

/* The model side: applies the records of one batch in order. */
static void apply_batch(cj *c, tbe__buf *b) {
  size_t off = 0;
  while (off + sizeof(rec) <= b->len && !c->crc) {
    rec r;
    memcpy(&r, b->data + off, sizeof r);
    const uint8_t *fixed = b->data + off + sizeof r;
    const char *text = (const char *)fixed + r.fixed;
    int rc = 0;
    switch (r.kind) {
      case REC_EVENT: {
        const rec_ev *v = (const rec_ev *)(const void *)fixed;
        scratch *e = &c->e;
        e->have = v->have;
        e->name = v->name, e->cat = v->cat, e->ph = v->ph, e->bp = v->bp, e->s = v->s;
        e->hname = v->hname, e->hcat = v->hcat, e->pname = v->pname, e->pcat = v->pcat;
        e->pid = v->pid, e->tid = v->tid, e->id = v->id;
        e->ts = v->ts, e->dur = v->dur;
        e->start_off = v->start_off;
        e->nargs = v->nargs;
        e->args = (sarg *)(uintptr_t)(fixed + sizeof *v);
        e->text.data = (uint8_t *)(uintptr_t)text;
        e->text.len = r.textlen;
        finish_event(c);
        break;
      }
      case REC_BASE: {
        int64_t v, boff;
        memcpy(&v, fixed, sizeof v);
        memcpy(&boff, fixed + sizeof v, sizeof boff);
        c->base = v;
        c->base_off = (uint64_t)boff;
        c->base_known = 1;
        c->ev_mark = c->t->nevents;
        c->flow_mark = c->t->nflows;
        c->t->base_time_ns = v;
        c->kineto = 1;
        break;
      }
      case REC_TRACENAME: rc = intern_text(c, text, r.textlen, &c->t->trace_name); break;
      case REC_BACKEND: rc = intern_text(c, text, r.textlen, &c->t->dist_backend); break;
      case REC_TBE: {
        uint32_t key;
        memcpy(&key, fixed, sizeof key);
        if (key >= K_TBE_FIRST && key < K_TBE_FIRST + K_TBE_N) {
          tbe__buf *m = &c->tbe_meta[key - K_TBE_FIRST];
          tbe__buf_clear(m);
          tbe__buf_append(m, text, r.textlen);
          tbe__buf_putc(m, '\0');
          if (tbe__buf_error(m)) rc = TBE_ENOMEM;
        }
        break;
      }
      case REC_DEVICE: {
        tbe_device d;
        memcpy(&d, fixed, sizeof d);
        rc = apply_device(c, &d, text, r.textlen);
        break;
      }
    }
    if (rc) cfail(c, UINT64_MAX, rc);
    off += r.size;
  }
}

/* ---------------------------------------------------------------------- */
/* end of input */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) unless it is in order already (correlation ids mostly
 * are); returns 1 when it was. */
static int sort_u64(uint64_t *v, size_t n) {
  size_t i = 1;
  while (i < n && v[i - 1] <= v[i]) i++;
  if (i >= n) return 1;
  qsort(v, n, sizeof *v, cmp_u64);
  return 0;
}

/* How many of q[0..nq) are in none of the sorted sets a, b (b may be
 * NULL): a merge walk when q is in order, else binary searches. */
static uint64_t count_missing(const uint64_t *q, size_t nq, int q_sorted, const uint64_t *a,
                              size_t na, const uint64_t *b, size_t nb);

static int in_sorted(const uint64_t *v, size_t n, uint64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo] == x;
}

/* Checks that every ac2g flow end names a correlation id of the right side:
 * starts an API call's, ends a GPU activity's. */
static int check_ac2g(cj *c) {
  if (!c->n_ac2g_s && !c->n_ac2g_f) return 0;
  tbe_trace *t = c->t;
  size_t napi = 0, ngpu = 0;
  for (size_t i = c->ev_first; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (!e->correlation) continue;
    if (e->kind == TBE_EV_RUNTIME || e->kind == TBE_EV_DRIVER) napi++;
    else if (tbe_event_kind_is_gpu((tbe_event_kind)e->kind)) ngpu++;
  }
  uint64_t *api = tbe__alloc(c->a, (napi + 1) * sizeof *api);
  uint64_t *gpu = tbe__alloc(c->a, (ngpu + 1) * sizeof *gpu);
  if (!api || !gpu) {
    tbe__free(c->a, api);
    tbe__free(c->a, gpu);
    return TBE_ENOMEM;
  }
  napi = ngpu = 0;
  for (size_t i = c->ev_first; i < t->nevents; i++) {
    const tbe_event *e = &t->events[i];
    if (!e->correlation) continue;
    if (e->kind == TBE_EV_RUNTIME || e->kind == TBE_EV_DRIVER) api[napi++] = e->correlation;
    else if (tbe_event_kind_is_gpu((tbe_event_kind)e->kind)) gpu[ngpu++] = e->correlation;
  }
  sort_u64(api, napi);
  sort_u64(gpu, ngpu);
  /* The flow ends' ids come in file order: usually increasing. */
  int s_sorted = 1, f_sorted = 1;
  for (size_t i = 1; i < c->n_ac2g_s && s_sorted; i++) s_sorted = c->ac2g_s[i - 1] <= c->ac2g_s[i];
  for (size_t i = 1; i < c->n_ac2g_f && f_sorted; i++) f_sorted = c->ac2g_f[i - 1] <= c->ac2g_f[i];
  uint64_t bad_s = count_missing(c->ac2g_s, c->n_ac2g_s, s_sorted, api, napi, NULL, 0);
  /* Kineto also writes lone 'f' ends on API calls that launched nothing
   * (cudaGetErrorString, ...): those name an API call's id. */
  uint64_t bad_f = count_missing(c->ac2g_f, c->n_ac2g_f, f_sorted, gpu, ngpu, api, napi);
  tbe__free(c->a, api);
  tbe__free(c->a, gpu);
  c->n_ac2g_bad = bad_s + bad_f;
  if (bad_s)
    tbe_trace_warn(t, "%s: %llu of %zu ac2g flow starts name no CUDA API call's correlation id",
                   c->path, (unsigned long long)bad_s, c->n_ac2g_s);
  if (bad_f)
    tbe_trace_warn(t, "%s: %llu of %zu ac2g flow ends name no correlation id of the trace",
                   c->path, (unsigned long long)bad_f, c->n_ac2g_f);
  return 0;
}

static uint64_t count_missing(const uint64_t *q, size_t nq, int q_sorted, const uint64_t *a,
                              size_t na, const uint64_t *b, size_t nb) {
  uint64_t bad = 0;
  if (!q_sorted) {
    for (size_t i = 0; i < nq; i++) bad += !in_sorted(a, na, q[i]) && !(b && in_sorted(b, nb, q[i]));
    return bad;
  }
  size_t ia = 0, ib = 0;
  for (size_t i = 0; i < nq; i++) {
    uint64_t x = q[i];
    while (ia < na && a[ia] < x) ia++;
    while (b && ib < nb && b[ib] < x) ib++;
    int found = (ia < na && a[ia] == x) || (b && ib < nb && b[ib] == x);
    bad += !found;
  }
  return bad;
}

/* ---- our exporter's top-level keys ----
 *
 * What a Kineto document has no place for, export_json.c writes under
 * tbexportTrace (source, host, profiled window), tbexportCollection (what
 * the collection lost and cost), tbexportWarnings (the generic status
 * lines of tbe__status_lines, then the trace's own warnings) and
 * tbexportSteps (the steps, when the ProfilerStep#N events do not give
 * them back).  They are read back into the same fields, so that a trace
 * written and read again is the trace that was written.  A value of
 * another shape is ignored (the keys are ours; nobody else writes them). */

static yajl_val meta_tree(cj *c, int key) {
  tbe__buf *m = &c->tbe_meta[key - K_TBE_FIRST];
  if (!m->len) return NULL;
  char err[64];
  return yajl_tree_parse((const char *)m->data, err, sizeof err);
}

static int meta_int(yajl_val obj, const char *key, int64_t *out) {
  const char *path[] = {key, NULL};
  yajl_val v = yajl_tree_get(obj, path, yajl_t_number);
  if (!v || !YAJL_IS_INTEGER(v)) return 0;
  *out = YAJL_GET_INTEGER(v);
  return 1;
}

static const char *meta_str(yajl_val obj, const char *key) {
  const char *path[] = {key, NULL};
  yajl_val v = yajl_tree_get(obj, path, yajl_t_string);
  return v ? YAJL_GET_STRING(v) : NULL;
}

static int apply_tbe_meta(cj *c) {
  tbe_trace *t = c->t;
  int rc = 0;
  int64_t v, v2;
  yajl_val o = meta_tree(c, K_TBE_TRACE);
  if (YAJL_IS_OBJECT(o)) {
    const char *src = meta_str(o, "source"), *host = meta_str(o, "host");
    if (src) t->source = tbe__source_of(src, strlen(src));
    if (host && *host) rc = intern_text(c, host, strlen(host), &t->host);
    if (meta_int(o, "startNs", &v) && meta_int(o, "stopNs", &v2)) {
      t->start_ns = v;
      t->stop_ns = v2;
    }
  }
  yajl_tree_free(o);
  o = meta_tree(c, K_TBE_COLLECTION);
  if (!rc && YAJL_IS_OBJECT(o)) {
    if (meta_int(o, "droppedRecords", &v)) t->dropped_records = (uint64_t)v;
    if (meta_int(o, "outOfRangeRecords", &v)) t->dropped_out_of_range = (uint64_t)v;
    if (meta_int(o, "cuptiOverheadNs", &v)) t->overhead_ns = (uint64_t)v;
    const char *path[] = {"endedEarly", NULL};
    if (YAJL_IS_TRUE(yajl_tree_get(o, path, yajl_t_true))) t->ended_early = 1;
  }
  yajl_tree_free(o);
  o = meta_tree(c, K_TBE_WARNINGS);
  if (!rc && YAJL_IS_ARRAY(o) && o->u.array.len) {
    size_t n = 0, len = o->u.array.len;
    tbe_str *lines = tbe__calloc(c->a, len, sizeof *lines);
    if (!lines) rc = TBE_ENOMEM;
    for (size_t i = 0; i < len && !rc; i++) {
      const char *w = YAJL_GET_STRING(o->u.array.values[i]);
      if (w) rc = intern_text(c, w, strlen(w), &lines[n++]);
    }
    size_t k = rc ? n : tbe__status_prefix(t, 0, lines, n);
    for (; k < n && !rc; k++) rc = tbe_trace_warn(t, "%s", tbe_trace_str(t, lines[k]));
    tbe__free(c->a, lines);
  }
  yajl_tree_free(o);
  o = meta_tree(c, K_TBE_STEPS);
  if (!rc && YAJL_IS_ARRAY(o)) {
    for (size_t i = 0; i < o->u.array.len && !rc; i++) {
      yajl_val st = o->u.array.values[i];
      int64_t num, start, end, pid, tid;
      if (!meta_int(st, "num", &num) || !meta_int(st, "startNs", &start) ||
          !meta_int(st, "endNs", &end))
        continue;
      const char *name = meta_str(st, "name");
      tbe_str nm = 0;
      if (name && (rc = intern_text(c, name, strlen(name), &nm))) break;
      uint32_t track = TBE_NONE;
      if (meta_int(st, "pid", &pid) && meta_int(st, "tid", &tid) &&
          (rc = get_track(c, pid < 0 || tid < 0 ? TBE_TRACK_OTHER : TBE_TRACK_THREAD, pid, tid,
                          -1, &track)))
        break;
      if (!(rc = tbe_trace_add_step(t, num, start, end, nm))) t->steps[t->nsteps - 1].track = track;
    }
  }
  yajl_tree_free(o);
  return rc;
}

/* Track keys for thread_name metadata: GPU rows by (device, stream), host
 * rows by (pid, tid); tracks sorted by key, found by binary search, so
 * N names over M tracks cost (N + M) log M, not N * M. */
typedef struct tkey {
  int64_t a, b;
  uint32_t gpu, track;
} tkey;

static int cmp_tkey(const void *x, const void *y) {
  const tkey *p = x, *q = y;
  if (p->gpu != q->gpu) return p->gpu < q->gpu ? -1 : 1;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->track < q->track ? -1 : p->track > q->track;
}

static int apply_meta_names(cj *c) {
  tbe_trace *t = c->t;
  tkey *keys = NULL;
  int rc = 0;
  for (size_t i = 0; i < c->nmetas && !rc; i++) {
    const meta *m = &c->metas[i];
    int32_t dev;
    int is_gpu = gpu_of_pid(c, m->pid, &dev);
    if (m->kind == 0 || m->kind == 3) {
      if (is_gpu) continue;
      uint32_t p;
      if ((rc = tbe_trace_process(t, m->pid, &p))) break;
      if (m->kind == 0) t->processes[p].name = m->value;
      continue;
    }
    if (!keys) {
      keys = tbe__alloc(c->a, (t->ntracks ? t->ntracks : 1) * sizeof *keys);
      if (!keys) return TBE_ENOMEM;
      for (size_t k = 0; k < t->ntracks; k++) {
        const tbe_track *tr = &t->tracks[k];
        int g = tr->type == TBE_TRACK_STREAM;
        keys[k] = (tkey){g ? tr->device : tr->pid, tr->tid, (uint32_t)g, (uint32_t)k};
      }
      qsort(keys, t->ntracks, sizeof *keys, cmp_tkey);
    }
    tkey want = {is_gpu ? dev : m->pid, m->tid, (uint32_t)is_gpu, 0};
    size_t lo = 0, hi = t->ntracks;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (cmp_tkey(&keys[mid], &want) < 0) lo = mid + 1;
      else hi = mid;
    }
    for (; lo < t->ntracks && keys[lo].gpu == want.gpu && keys[lo].a == want.a && keys[lo].b == want.b;
         lo++)
      t->tracks[keys[lo].track].name = m->value;
  }
  tbe__free(c->a, keys);
  return rc;
}

static int finish_import(cj *c) {
  tbe_trace *t = c->t;
  int rc;
  /* Events read before baseTimeNanoseconds appeared get the base now.
   * Both are in the time range, so the sums fit; the results must be in it
   * too (refused otherwise, as times_ok does for the events after it). */
  if (c->base) {
    int bad = 0;
    for (size_t i = c->ev_first; i < c->ev_mark && i < t->nevents && !bad; i++) {
      tbe_event *ev = &t->events[i];
      ev->start_ns += c->base;
      bad = !tbe__span_ok(ev->start_ns, ev->dur_ns);
    }
    for (size_t i = c->flow_first; i < c->flow_mark && i < t->nflows && !bad; i++) {
      t->flows[i].src_ns += c->base;
      t->flows[i].dst_ns += c->base;
      bad = !tbe__time_ok(t->flows[i].src_ns) || !tbe__time_ok(t->flows[i].dst_ns);
    }
    if (bad) {
      cj_fail_at(c, c->base_off, TBE_EPARSE,
                 "baseTimeNanoseconds puts events out of range (more than 146 years from 1970)");
      return TBE_EPARSE;
    }
  }
  /* B events never closed end where the trace ends. */
  for (size_t s = 0; s < c->nstacks; s++) {
    bstack *st = &c->stacks[s];
    while (st->n) {
      pending_b *pb = &st->v[--st->n];
      int64_t end = c->max_end > pb->ev.start_ns ? c->max_end : pb->ev.start_ns;
      if ((rc = emit_pending(c, pb, end, NULL, 0))) return rc;
      c->n_open_b++;
    }
  }
  if (!c->source0) t->source = c->kineto ? TBE_SRC_KINETO : TBE_SRC_CHROME;
  if ((rc = apply_tbe_meta(c))) return rc;
  if (c->dist_have_rank) t->rank = (int32_t)c->dist_rank;
  if (c->dist_have_world) t->world_size = (int32_t)c->dist_world;
  /* Names from M metadata. */
  if ((rc = apply_meta_names(c))) return rc;
  /* String pids are their own process names unless metadata named them
   * (ids are -2 - index: one pass marks the ones tracks use). */
  if (c->nstrpids) {
    uint8_t *used = tbe__calloc(c->a, c->nstrpids, 1);
    if (!used) return TBE_ENOMEM;
    for (size_t k = 0; k < t->ntracks; k++) {
      int64_t pid = t->tracks[k].pid;
      if (pid <= -2 && (uint64_t)(-2 - pid) < c->nstrpids) used[-2 - pid] = 1;
    }
    for (size_t i = 0; i < c->nstrpids && !rc; i++) {
      uint32_t p;
      if (!used[i] || (rc = tbe_trace_process(t, c->strpids[i].id, &p))) continue;
      if (!t->processes[p].name) t->processes[p].name = c->strpids[i].s;
    }
    tbe__free(c->a, used);
    if (rc) return rc;
  }
  if ((rc = check_ac2g(c))) return rc;
  /* Unpaired flow ends. */
  for (size_t i = 0; i < c->cap_flows; i++) c->n_unpaired_flows += c->flows[i].used == 1;
  if (c->n_unpaired_flows)
    tbe_trace_warn(t, "%s: %llu flow ends (s/f) without their other end were dropped", c->path,
                   (unsigned long long)c->n_unpaired_flows);
  if (c->n_unmatched_e)
    tbe_trace_warn(t, "%s: %llu E events without a matching B were dropped", c->path,
                   (unsigned long long)c->n_unmatched_e);
  if (c->n_open_b)
    tbe_trace_warn(t, "%s: %llu B events without an E were closed at the end of the trace", c->path,
                   (unsigned long long)c->n_open_b);
  if (c->n_unsupported)
    tbe_trace_warn(t, "%s: %llu events of unsupported phases (%s) were skipped", c->path,
                   (unsigned long long)c->n_unsupported, c->unsupported_ph);
  if (c->n_args_cut)
    tbe_trace_warn(t, "%s: %llu args beyond 65535 on one event were dropped", c->path,
                   (unsigned long long)c->n_args_cut);
  return tbe_trace_error(t);
}

/* ---------------------------------------------------------------------- */
/* driver */

/* Line and column (1-based, column in bytes) of byte `off`, by re-reading
 * the input: the parse itself never counts newlines. */
static void line_col(const char *path, uint64_t off, uint64_t *line, uint64_t *col) {
  *line = 0;
  *col = 0;
  tbe__input in;
  if (tbe__input_open(&in, path, NULL)) return;
  uint64_t ln = 1, last_nl_end = 0, pos = 0;
  for (;;) {
    const uint8_t *d;
    size_t n;
    if (tbe__input_next(&in, &d, &n) && n == 0) break;
    if (n == 0) break;
    size_t lim = off - pos < n ? (size_t)(off - pos) : n;
    const uint8_t *p = d, *end = d + lim;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
      ln++;
      p++;
      last_nl_end = pos + (uint64_t)(p - d);
    }
    pos += n;
    if (pos >= off) break;
  }
  tbe__input_close(&in);
  *line = ln;
  *col = off - last_nl_end + 1;
}

static int only_space(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n') return 0;
  return 1;
}

static void free_slots(cj *c) {
  if (c->slots)
    for (size_t i = 0; i < c->nslots; i++) {
      tbe__buf_deinit(&c->slots[i].in);
      tbe__buf_deinit(&c->slots[i].out);
    }
  tbe__free(c->a, c->slots);
  c->slots = NULL;
}

/* A worker's parser state (never the model's). */
static void worker_free(const tbe_allocator *a, cj *w) {
  if (!w) return;
  if (w->h) yajl_free(w->h);
  tbe__buf_deinit(&w->pe.text);
  tbe__buf_deinit(&w->capbuf);
  tbe__buf_deinit(&w->tmp);
  tbe__free(a, w->capst);
  tbe__free(a, w->pe.args);
  tbe__free(a, w);
}

static cj *worker_new(cj *c) {
  cj *w = tbe__calloc(c->a, 1, sizeof *w);
  if (!w) return NULL;
  w->a = c->a;
  w->o = c->o;
  w->parent = c;
  w->worker = 1;
  tbe__buf_init(&w->pe.text, c->a);
  tbe__buf_init(&w->capbuf, c->a);
  tbe__buf_init(&w->tmp, c->a);
  return w;
}

static void cj_free(cj *c) {
  if (c->h) yajl_free(c->h);
  tbe__buf_deinit(&c->pe.text);
  tbe__buf_deinit(&c->capbuf);
  for (int i = 0; i < K_TBE_N; i++) tbe__buf_deinit(&c->tbe_meta[i]);
  tbe__buf_deinit(&c->tmp);
  tbe__buf_deinit(&c->devname);
  tbe__buf_deinit(&c->distname);
  tbe__buf_deinit(&c->batch);
  tbe__buf_deinit(&c->fill);
  free_slots(c);
  tbe__free(c->a, c->capst);
  tbe__free(c->a, c->icache);
  tbe__free(c->a, c->pe.args);
  tbe__free(c->a, c->gpus);
  tbe__free(c->a, c->metas);
  tbe__free(c->a, c->strpids);
  tbe__map_deinit(&c->gmap);
  tbe__map_deinit(&c->smap);
  for (size_t i = 0; i < c->nstacks; i++) {
    for (size_t k = 0; k < c->stacks[i].cap; k++) tbe__free(c->a, c->stacks[i].v[k].args);
    tbe__free(c->a, c->stacks[i].v);
  }
  tbe__free(c->a, c->stacks);
  tbe__free(c->a, c->flows);
  tbe__free(c->a, c->ac2g_s);
  tbe__free(c->a, c->ac2g_f);
  tbe__free(c->a, c->targs);
  tbe__buf_deinit(&c->carry);
  const tbe_allocator *a = c->a;
  tbe__free(a, c);
}

/* Feeds bytes at file offset `off` to the main yajl handle.  Returns 0, or
 * -1 when the parse is over (c->rc says why).  Only through feed_main,
 * which hands it whole tokens. */
static int yajl_feed(cj *c, const uint8_t *d, size_t n, uint64_t off) {
  if (!n) return 0;
  if (c->tail_ok) {
    if (only_space(d, n)) return 0;
    c->rc = TBE_EPARSE;
    c->err_off = c->tail_bracket;
    snprintf(c->emsg, sizeof c->emsg, "malformed JSON: text after the closing bracket");
    return -1;
  }
  c->chunk_start = off;
  yajl_status st = yajl_parse(c->h, d, n);
  if (st == yajl_status_ok) return 0;
  if (c->rc || __atomic_load_n(&c->stop, __ATOMIC_RELAXED)) return -1; /* described already */
  size_t used = yajl_get_bytes_consumed(c->h);
  /* "[..., ]": a trailing comma before the closing bracket of a bare
   * array; accept it when only whitespace follows (checked from here on,
   * so the message does not depend on where the input's pieces end). */
  if (c->form == 2 && c->depth == 1 && !c->skip && !c->cap && used > 0 && used <= n &&
      d[used - 1] == ']') {
    c->tail_ok = 1;
    c->tail_bracket = off + used - 1;
    return yajl_feed(c, d + used, n - used, off + used);
  }
  unsigned char *msg = yajl_get_error(c->h, 0, d, n);
  char text[200];
  snprintf(text, sizeof text, "%s", msg ? (const char *)msg : "malformed JSON");
  if (msg) yajl_free_error(c->h, msg);
  size_t l = strlen(text);
  while (l && (text[l - 1] == '\n' || text[l - 1] == ' ' || text[l - 1] == '.')) text[--l] = 0;
  /* yajl stops just past a bad token; point at its first byte where that
   * is one character (a structural token or an invalid char). */
  uint64_t eoff = off + used;
  if (used > 0 && used <= n) {
    unsigned char b = d[used - 1];
    if (strchr("{}[],:", b) || strstr(text, "invalid char in json text")) eoff--;
  }
  c->rc = TBE_EPARSE;
  c->err_off = eoff;
  snprintf(c->emsg, sizeof c->emsg, "malformed JSON: %s", text);
  return -1;
}


/* ---- token guard ----
 *
 * yajl keeps a token that a piece of input cuts in a buffer of its own
 * and, with every later piece, lexes that buffer again from its first
 * byte: one string, key or number spanning k pieces costs k^2/2 pieces of
 * lexing (a 256 MiB string in 256 KiB reads: 70-90 s; 2 MB of gzip holding
 * a 1 GB one: over 10 minutes).  So yajl is only ever given whole tokens:
 * the guard scans what goes to the main handle (strings with their
 * escapes, nesting, and the run of number/literal bytes at a piece's end),
 * feeds everything up to the last token boundary, and keeps the cut token
 * in `carry`, each byte appended once, until it ends; then the whole token
 * goes to yajl in one call.  Linear whatever the input.
 *
 * The same scan enforces max_token_bytes on strings and keys (measured in
 * the file's text, quotes included) and on a carried number, and
 * max_depth, before yajl reads the bytes: a bomb is refused with at most
 * one token's worth of memory.  Bytes before a refused byte are fed
 * first, so an earlier syntax error is still the one reported. */

/* Number and literal bytes (a token ends at anything else). */
static const uint8_t bare_byte[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1, ['a'] = 1,
    ['l'] = 1, ['s'] = 1, ['r'] = 1, ['u'] = 1, ['t'] = 1, ['f'] = 1, ['n'] = 1};

enum { GV_NONE, GV_TOKEN, GV_DEPTH };

/* One byte of the guard's scan at d[i]; returns 1 when it stops there. */
static inline int guard_byte(cj *c, const uint8_t *d, size_t i, uint64_t off, int *viol) {
  uint8_t ch = d[i];
  if (c->g_in_str) {
    if (c->g_esc) c->g_esc = 0;
    else if (ch == '\\') c->g_esc = 1;
    else if (ch == '"') {
      c->g_in_str = 0;
      if (off + i - c->g_str_start + 1 > c->o->max_token_bytes) {
        *viol = GV_TOKEN;
        return 1;
      }
    }
    return 0;
  }
  if (ch == '"') {
    c->g_in_str = 1;
    c->g_str_start = off + i;
  } else if (ch == '{' || ch == '[') {
    if (++c->g_depth > c->o->max_depth) {
      *viol = GV_DEPTH;
      return 1;
    }
  } else if ((ch == '}' || ch == ']') && c->g_depth) {
    c->g_depth--;
  }
  return 0;
}

#ifdef __SSE2__
/* The quotes, backslashes, opening and closing brackets of p[0..64), one
 * bit per byte. */
static inline void masks64(const uint8_t *p, uint64_t *q, uint64_t *bs, uint64_t *op,
                           uint64_t *cl) {
  const __m128i vq = _mm_set1_epi8('"'), vb = _mm_set1_epi8('\\'), vo1 = _mm_set1_epi8('{');
  const __m128i vo2 = _mm_set1_epi8('['), vc1 = _mm_set1_epi8('}'), vc2 = _mm_set1_epi8(']');
  *q = *bs = *op = *cl = 0;
  for (int k = 0; k < 4; k++) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
    unsigned sh = 16u * (unsigned)k;
    *q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vq)) << sh;
    *bs |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, vb)) << sh;
    *op |= (uint64_t)(unsigned)_mm_movemask_epi8(
               _mm_or_si128(_mm_cmpeq_epi8(x, vo1), _mm_cmpeq_epi8(x, vo2)))
           << sh;
    *cl |= (uint64_t)(unsigned)_mm_movemask_epi8(
               _mm_or_si128(_mm_cmpeq_epi8(x, vc1), _mm_cmpeq_epi8(x, vc2)))
           << sh;
  }
}
#endif

/* Bit i of the result is the xor of bits 0..i of x: 1 from an opening
 * quote up to (not including) its closing quote. */
static inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

/* The bytes escaped by a backslash: those right after an odd-length run
 * of backslashes.  *carry says the first byte is escaped (the previous
 * block ended in an odd run) and receives the same for the next block.
 * Runs are told odd from even by where they start: adding each run's
 * odd-position start to the run carries past its end exactly when the
 * run, counted from an odd start, has odd length. */
static inline uint64_t escaped_bytes(uint64_t bs, uint64_t *carry) {
  const uint64_t even = 0x5555555555555555ull;
  bs &= ~*carry;                       /* a backslash escaped itself is none */
  uint64_t follows = (bs << 1) | *carry;
  uint64_t odd_starts = bs & ~even & ~follows;
  uint64_t sum;
  *carry = __builtin_add_overflow(odd_starts, bs, &sum);
  return (even ^ (sum << 1)) & follows;
}

/* Scans d[0..n) at file offset `off` (no token carried in).  Returns n, or
 * the index of the byte at which a limit stops the parse (*viol).
 *
 * 64 bytes at a time (the common case: valid JSON, limits far away): the
 * escaped bytes, then the quotes that count and, by a prefix xor, which
 * bytes lie inside strings; brackets outside strings move the depth by
 * their counts.  A block where that could differ from the bytewise rule of
 * guard_byte (a backslash outside a string, the depth possibly reaching
 * the limit, more closing brackets than open ones, a string closing past
 * the token limit, a token limit under 64 bytes) is redone byte by byte
 * from the state it started with.  (A bracket closing below depth 0 inside
 * a block is invalid JSON that yajl refuses at that byte, before anything
 * the count could decide.) */
static size_t guard_scan(cj *c, const uint8_t *d, size_t n, uint64_t off, int *viol) {
  size_t i = 0;
#ifdef __SSE2__
  const uint64_t maxt = c->o->max_token_bytes;
  const uint32_t maxd = c->o->max_depth;
  for (; maxt >= 64 && i + 64 <= n; i += 64) {
    uint64_t q, bs, open, close;
    masks64(d + i, &q, &bs, &open, &close);
    uint64_t carry = (uint64_t)c->g_esc;
    uint64_t quotes = q & ~escaped_bytes(bs, &carry);
    uint64_t instr = prefix_xor(quotes) ^ (c->g_in_str ? ~0ull : 0);
    open &= ~instr;
    close &= ~instr;
    unsigned opens = (unsigned)__builtin_popcountll(open), closes = (unsigned)__builtin_popcountll(close);
    int slow = (bs & ~instr) != 0 || (uint64_t)c->g_depth + opens > maxd ||
               closes > (uint64_t)c->g_depth + opens;
    if (!slow && c->g_in_str && quotes) /* the string carried in closes here */
      slow = off + i + (unsigned)__builtin_ctzll(quotes) - c->g_str_start + 1 > maxt;
    if (slow) {
      for (size_t k = i; k < i + 64; k++)
        if (guard_byte(c, d, k, off, viol)) return k;
      continue;
    }
    c->g_depth = c->g_depth + opens - closes;
    c->g_in_str = (int)(instr >> 63);
    c->g_esc = c->g_in_str ? (int)carry : 0;
    if (c->g_in_str && quotes) c->g_str_start = off + i + 63 - (unsigned)__builtin_clzll(quotes);
  }
#endif
  for (; i < n; i++)
    if (guard_byte(c, d, i, off, viol)) return i;
  return n;
}

/* Carried token: scans d[0..n) for its end.  Returns the index just past
 * it, or n when it goes on. */
static size_t guard_continue(cj *c, const uint8_t *d, size_t n) {
  size_t i = 0;
  if (!c->g_in_str) {
    /* Eight digits at a time (a long number is digits), then bytewise. */
    const uint64_t hi = 0xF0F0F0F0F0F0F0F0ull, zeros = 0x3030303030303030ull;
    while (i + 8 <= n) {
      uint64_t w = load64((const char *)d + i);
      if ((w & hi) != zeros || ((w + 0x0606060606060606ull) & hi) != zeros) break;
      i += 8;
    }
    while (i < n && bare_byte[d[i]]) i++;
    if (i < n) c->g_bare = 0;
    return i;
  }
  /* The next quote and backslash at or after i, found once each and
   * searched again only when passed (NULL: none up to n). */
  const uint8_t *qp = NULL, *bp = NULL;
  int qk = 0, bk = 0;
  for (; i < n; i++) {
    uint8_t ch = d[i];
    if (c->g_esc) {
      c->g_esc = 0;
    } else if (ch == '\\') {
      c->g_esc = 1;
    } else if (ch == '"') {
      c->g_in_str = 0;
      return i + 1;
    } else {
      /* The body of a long string: jump to the next quote or backslash. */
      if (!qk || (qp && qp < d + i)) qp = memchr(d + i, '"', n - i), qk = 1;
      if (!bk || (bp && bp < d + i)) bp = memchr(d + i, '\\', n - i), bk = 1;
      const uint8_t *nx = !qp ? bp : !bp ? qp : qp < bp ? qp : bp;
      if (!nx) return n;
      i = (size_t)(nx - d) - 1;
    }
  }
  return n;
}

static int guard_token_fail(cj *c, uint64_t at, int str) {
  cj_limit(c, at, TBE__LIM_TOKEN,
           str ? "a JSON string or key longer than the limit" : "a JSON number longer than the limit");
  return -1;
}

/* Feeds bytes at file offset `off` to the main yajl handle through the
 * guard.  Returns 0, or -1 when the parse is over (c->rc says why). */
static int feed_main(cj *c, const uint8_t *d, size_t n, uint64_t off) {
  if (c->tail_ok) return yajl_feed(c, d, n, off); /* only blanks may follow */
  while (n) {
    if (c->carry.len) {
      int str = c->g_in_str;
      size_t p = guard_continue(c, d, n);
      if (c->carry.len + p > c->o->max_token_bytes) return guard_token_fail(c, c->carry_off, str);
      tbe__buf_append(&c->carry, d, p);
      if (tbe__buf_error(&c->carry)) {
        cj_fail_at(c, c->carry_off, TBE_ENOMEM, "out of memory");
        return -1;
      }
      if (p == n) return 0;
      /* The closing quote of a string may be too far, now that it came. */
      int r = yajl_feed(c, c->carry.data, c->carry.len, c->carry_off);
      tbe__buf_clear(&c->carry);
      if (r) return r;
      d += p, n -= p, off += p;
      continue;
    }
    int viol = GV_NONE;
    size_t stop = guard_scan(c, d, n, off, &viol);
    if (viol != GV_NONE) {
      /* Feed what precedes the refused token or bracket: an error there
       * comes first in the file. */
      size_t upto = viol == GV_TOKEN ? (size_t)(c->g_str_start - off) : stop;
      if (yajl_feed(c, d, upto, off)) return -1;
      if (viol == GV_TOKEN) return guard_token_fail(c, c->g_str_start, 1);
      cj_limit(c, off + stop, TBE__LIM_DEPTH, "JSON nested deeper than the limit");
      return -1;
    }
    /* Hold back the token the piece cuts: an open string, or a run of
     * number/literal bytes at its very end. */
    size_t hold = n;
    if (c->g_in_str) {
      if (off + n - c->g_str_start > c->o->max_token_bytes) {
        if (yajl_feed(c, d, (size_t)(c->g_str_start - off), off)) return -1;
        return guard_token_fail(c, c->g_str_start, 1);
      }
      hold = (size_t)(c->g_str_start - off);
    } else {
      while (hold > 0 && bare_byte[d[hold - 1]]) hold--;
      if (hold < n) c->g_bare = 1;
    }
    if (yajl_feed(c, d, hold, off)) return -1;
    if (hold < n) {
      if (n - hold > c->o->max_token_bytes) return guard_token_fail(c, off + hold, c->g_in_str);
      c->carry_off = off + hold;
      tbe__buf_append(&c->carry, d + hold, n - hold);
      if (tbe__buf_error(&c->carry)) {
        cj_fail_at(c, c->carry_off, TBE_ENOMEM, "out of memory");
        return -1;
      }
    }
    return 0;
  }
  return 0;
}

/* The end of the input: a token still carried goes to yajl as it is (a
 * number at the very end is whole; a string cut by the end is yajl's to
 * report).  Returns 0 or -1 as feed_main. */
static int feed_main_end(cj *c) {
  if (!c->carry.len) return 0;
  int r = yajl_feed(c, c->carry.data, c->carry.len, c->carry_off);
  tbe__buf_clear(&c->carry);
  return r;
}

/* ---- the driver's side of the pipeline ---- */

/* Waits until no chunk is queued or being parsed. */
static void settle(cj *c) {
  pthread_mutex_lock(&c->mu);
  while (c->inflight && !stopped(c)) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
}

/* Hands the fill (the bytes since the last cut) to the workers as one
 * chunk.  Returns 0, or -1 when no slot came (stop, or a chunk failed). */
static int dispatch(cj *c) {
  close_direct(c);
  tbe__buf_putc(&c->fill, ']');
  if (tbe__buf_error(&c->fill)) return -1;
  slot *s = alloc_slot(c, 1);
  if (!s) {
    c->fill.len--;
    return -1;
  }
  pthread_mutex_lock(&c->mu);
  tbe__buf tmp = s->in;
  s->in = c->fill;
  c->fill = tmp;
  s->chunk = 1;
  s->off = c->fill_off;
  s->first = c->fill_first;
  s->prog_done = c->prog_done;
  s->prog_total = c->prog_total;
  s->state = S_PENDING;
  c->inflight++;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  tbe__buf_clear(&c->fill);
  tbe__buf_putc(&c->fill, '[');
  return 0;
}

/* Gives up the parallel parse from the first failed chunk (or, with none,
 * from the fill): the bytes from there to the scan position go through the
 * main yajl handle, and everything after too.  Returns 0 or -1 as
 * feed_main. */
static int par_fallback(cj *c) {
  pthread_mutex_lock(&c->mu);
  uint64_t k = c->fail_pending ? c->fail_seq : c->tail;
  for (uint64_t q = k; q < c->tail; q++)
    if (SLOT(c, q)->state == S_PENDING) {
      SLOT(c, q)->state = S_DISCARD;
      c->inflight--;
    }
  while (c->inflight) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  c->sc_mode = 2;
  uint64_t off0 = k < c->tail ? SLOT(c, k)->off : c->fill_off;
  int first0 = k < c->tail ? SLOT(c, k)->first : c->fill_first;
  tbe__buf rp;
  tbe__buf_init(&rp, c->a);
  for (uint64_t q = k; q < c->tail; q++) {
    const slot *s = SLOT(c, q);
    if (q > k) tbe__buf_putc(&rp, ',');
    tbe__buf_append(&rp, s->in.data + 1, s->in.len - 2);
  }
  int fill_err = tbe__buf_error(&c->fill);
  if (c->fill_open && c->fill.len) {
    if (k < c->tail) tbe__buf_putc(&rp, ',');
    tbe__buf_append(&rp, c->fill.data + 1, c->fill.len - 1);
  }
  c->fill_open = 0;
  pthread_mutex_lock(&c->mu);
  for (uint64_t q = k; q < c->tail; q++) SLOT(c, q)->state = S_DISCARD;
  c->fail_pending = 0;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  int r = 0;
  if (tbe__buf_error(&rp) || fill_err) {
    c->rc = TBE_ENOMEM;
    c->err_off = off0;
    snprintf(c->emsg, sizeof c->emsg, "out of memory");
    r = -1;
  } else {
    /* After a comma the main handle must expect a value: a placeholder
     * event (dropped by on_close) and the real comma put it there. */
    if (!first0) {
      c->dummy = 1;
      r = feed_main(c, (const uint8_t *)"{}", 2, off0 - 1);
      if (!r) r = feed_main(c, (const uint8_t *)",", 1, off0 - 1);
    }
    if (!r) r = feed_main(c, rp.data, rp.len, off0);
  }
  tbe__buf_deinit(&rp);
  return r;
}

enum { T_NONE, T_OPEN, T_CLOSE, T_COMMA, T_COLON, T_KEY, T_VAL };

/* One byte of the events array's contents; returns 1 at a top-level ','
 * (*hit 1), ']' (*hit 2) or unbalanced '}' (*hit 3). */
static inline int region_byte(unsigned char ch, int *in_str, int *esc, int *dep, int *hit) {
  if (*in_str) {
    if (*esc) *esc = 0;
    else if (ch == '\\') *esc = 1;
    else if (ch == '"') *in_str = 0;
    return 0;
  }
  if (ch == '"') {
    *in_str = 1;
  } else if (ch == '{' || ch == '[') {
    (*dep)++;
  } else if (ch == '}' || ch == ']') {
    if (*dep == 0) {
      *hit = ch == ']' ? 2 : 3;
      return 1;
    }
    (*dep)--;
  } else if (ch == ',' && *dep == 0) {
    *hit = 1;
    return 1;
  }
  return 0;
}

/* Scans d[i..n) for the next top-level ',' / ']' of the events array and
 * returns its position (n when none; the state carries over).  Exact for
 * any valid JSON: strings (with escapes) are skipped whole.  With SSE2,
 * 16 bytes at a time: a bit mask of quotes, backslashes and structural
 * characters, visited bit by bit (only backslashes and quotes inside a
 * string, only quotes and structure outside). */
static size_t region_scan(const uint8_t *d, size_t i, size_t n, int *in_str, int *esc, int *dep,
                          int *hit) {
#ifdef __SSE2__
  const __m128i vq = _mm_set1_epi8('"'), vb = _mm_set1_epi8('\\'), vc = _mm_set1_epi8(',');
  const __m128i vo1 = _mm_set1_epi8('{'), vo2 = _mm_set1_epi8('['), vc1 = _mm_set1_epi8('}');
  const __m128i vc2 = _mm_set1_epi8(']');
  int s = *in_str, e = *esc, dp = *dep;
  while (i + 16 <= n) {
    if (e) { /* the byte after a backslash */
      e = 0;
      i++;
      continue;
    }
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(d + i));
    unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vq));
    unsigned bs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vb));
    __m128i st = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vc), _mm_cmpeq_epi8(v, vo1)),
                              _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vo2), _mm_cmpeq_epi8(v, vc1)),
                                           _mm_cmpeq_epi8(v, vc2)));
    unsigned sm = (unsigned)_mm_movemask_epi8(st);
    unsigned pos = 0;
    for (;;) {
      unsigned m = (s ? (q | bs) : (q | sm)) & (0xFFFFu << pos) & 0xFFFFu;
      if (!m) break;
      unsigned b = (unsigned)__builtin_ctz(m);
      unsigned char ch = d[i + b];
      pos = b + 1;
      if (s) {
        if (ch == '\\') {
          if (b == 15) e = 1;
          else pos = b + 2;
        } else {
          s = 0;
        }
      } else if (ch == '"') {
        s = 1;
      } else if (ch == '{' || ch == '[') {
        dp++;
      } else if (ch == '}' || ch == ']') {
        if (dp == 0) {
          *hit = ch == ']' ? 2 : 3;
          *in_str = s, *esc = e, *dep = dp;
          return i + b;
        }
        dp--;
      } else if (dp == 0) { /* ',' */
        *hit = 1;
        *in_str = s, *esc = e, *dep = dp;
        return i + b;
      }
      if (pos >= 16) break;
    }
    i += 16;
  }
  *in_str = s, *esc = e, *dep = dp;
#endif
  for (; i < n; i++)
    if (region_byte(d[i], in_str, esc, dep, hit)) return i;
  return n;
}

/* Scans one piece of input at file offset `off`: the top level goes to
 * the main yajl handle, the events array's elements to the workers.
 * Returns 0, or -1 when the parse is over. */
static int scan_piece(cj *c, const uint8_t *d, size_t n, uint64_t off) {
  size_t i = 0, seg = 0; /* d[seg..i) not yet fed to the main handle */
  while (i < n) {
    if (c->sc_mode == 2) break;
    if (c->sc_mode == 0) {
      /* The top level, byte by byte (small): find "traceEvents": [ at
       * depth 1 of an object, or the '[' of a bare array. */
      int enter = 0;
      for (; i < n && !enter; i++) {
        unsigned char ch = d[i];
        if (c->sc_in_str) {
          if (c->sc_esc) {
            c->sc_esc = 0;
          } else if (ch == '\\') {
            c->sc_esc = 1;
            c->sc_kbad = 1;
          } else if (ch == '"') {
            c->sc_in_str = 0;
            if (c->sc_kcap) {
              c->sc_kcap = 0;
              c->sc_tok = T_KEY;
              c->sc_te = !c->sc_kbad && c->sc_klen == 11 && !memcmp(c->sc_key, "traceEvents", 11);
            } else {
              c->sc_tok = T_VAL;
            }
          } else if (c->sc_kcap) {
            if (c->sc_klen < 11) c->sc_key[c->sc_klen++] = (char)ch;
            else c->sc_kbad = 1;
          }
          continue;
        }
        switch (ch) {
          case '"':
            c->sc_in_str = 1;
            c->sc_kcap = c->sc_depth == 1 && (c->sc_tok == T_OPEN || c->sc_tok == T_COMMA);
            c->sc_klen = 0;
            c->sc_kbad = 0;
            c->sc_te = 0;
            break;
          case ':':
            if (c->sc_tok != T_KEY) c->sc_te = 0;
            c->sc_tok = T_COLON;
            break;
          case '[':
          case '{':
            if (c->sc_depth == 0) enter = ch == '[' && c->sc_tok == T_NONE;
            else if (c->sc_depth == 1 && ch == '[' && c->sc_te && c->sc_tok == T_COLON) enter = 1;
            c->sc_depth++;
            c->sc_tok = T_OPEN;
            c->sc_te = 0;
            break;
          case ']':
          case '}':
            c->sc_depth--;
            c->sc_tok = T_CLOSE;
            c->sc_te = 0;
            break;
          case ',':
            c->sc_tok = T_COMMA;
            c->sc_te = 0;
            break;
          case ' ': case '\t': case '\r': case '\n':
            break;
          default:
            c->sc_tok = T_VAL;
            c->sc_te = 0;
        }
      }
      if (!enter) break;
      if (feed_main(c, d + seg, i - seg, off + seg)) return -1;
      seg = i;
      /* The main handle decides: only a real events array is farmed out. */
      if (c->depth >= 1 && c->role[c->depth] == R_EVENTS && !c->skip && !c->cap && !c->rc &&
          !c->tail_ok) {
        c->sc_mode = 1;
        c->r_depth = c->r_in_str = c->r_esc = 0;
        tbe__buf_clear(&c->fill);
        tbe__buf_putc(&c->fill, '[');
        c->fill_off = off + i;
        c->fill_first = 1;
        c->fill_open = 1;
        c->region_seq0 = c->tail;
      } else {
        c->sc_mode = 2;
      }
      continue;
    }
    /* Inside the events array: find the next top-level ',' or ']'.  Exact
     * for any valid JSON: strings (with escapes) are skipped whole. */
    size_t start = i;
    int hit = 0;
    int in_str = c->r_in_str, esc = c->r_esc, dep = c->r_depth;
    i = region_scan(d, i, n, &in_str, &esc, &dep, &hit);
    c->r_in_str = in_str, c->r_esc = esc, c->r_depth = dep;
    tbe__buf_append(&c->fill, d + start, i - start);
    if (!hit) {
      /* An element far larger than a chunk (or unbalanced input): stop
       * buffering and go serial. */
      if (c->fill.len > 16 * c->chunk_target + (16u << 20) || tbe__buf_error(&c->fill)) {
        if (par_fallback(c)) return -1;
        seg = i;
      }
      break;
    }
    if (hit == 1) {
      if (c->fill.len - 1 >= c->chunk_target) {
        if (dispatch(c)) {
          if (stopped(c)) return -1;
          if (par_fallback(c)) return -1;
          seg = i;
          continue;
        }
        c->fill_off = off + i + 1;
        c->fill_first = 0;
        c->fill_open = 1;
      } else {
        tbe__buf_putc(&c->fill, ',');
      }
      i++;
      continue;
    }
    /* The array's end (hit 2), or an unbalanced '}' (hit 3: serial). */
    if (hit == 2 && (c->tail != c->region_seq0 || !only_space(c->fill.data + 1, c->fill.len - 1))) {
      if (dispatch(c)) {
        if (stopped(c)) return -1;
        if (par_fallback(c)) return -1;
        seg = i;
        continue;
      }
      c->fill_open = 0;
    }
    settle(c);
    if (stopped(c)) return -1;
    if (c->fail_pending || hit == 3) {
      if (par_fallback(c)) return -1;
      seg = i;
      continue;
    }
    c->fill_open = 0;
    c->sc_mode = 0;
    c->sc_depth--;
    c->sc_tok = T_CLOSE;
    seg = i; /* the ']' goes to the main handle */
    i++;
  }
  if (c->sc_mode != 1 && seg < n) return feed_main(c, d + seg, n - seg, off + seg);
  return 0;
}

/* Scanner test knob: pieces of input are scanned in steps of at most this
 * many bytes (0: whole pieces). */
size_t tbe__chrome_json_piece = 0;

/* The parser side: reads the input and runs yajl (threaded: the driver,
 * with the scanner); the callbacks append records to the current batch.
 * Everything here touches only the producer's state (yajl, input, roles,
 * pe, capture, the scanner), never the model. */
static void produce(cj *c) {
  tbe__input *in = c->in;
  int in_rc = 0;
  int over = 0;
  const uint8_t *d = NULL;
  size_t n = 0;
  for (;;) {
    if (stopped(c)) break;
    in_rc = tbe__input_next(in, &d, &n);
    if (n == 0) break;
    uint64_t start = tbe__input_offset(in) - n;
    if (c->par) {
      size_t step = tbe__chrome_json_piece ? tbe__chrome_json_piece : n;
      for (size_t p = 0; p < n && !over; p += step)
        over = scan_piece(c, d + p, n - p < step ? n - p : step, start + p) != 0;
    } else {
      over = feed_main(c, d, n, start) != 0;
    }
    if (over) break;
    if (c->threaded) pthread_mutex_lock(&c->mu);
    c->prog_done = tbe__input_done(in);
    c->prog_total = tbe__input_size(in);
    if (c->threaded) pthread_mutex_unlock(&c->mu);
    if (in_rc) break;
  }
  /* The input ended (or failed) inside the events array: the bytes since
   * the last good chunk go through the main handle as in one thread. */
  if (c->par && c->sc_mode == 1 && !over && !stopped(c)) {
    settle(c);
    if (!stopped(c)) par_fallback(c);
  }
  if (stopped(c)) {
    /* the consumer failed; its error is the one reported */
  } else if (!c->rc && in_rc && in_rc != TBE_ETRUNCATED) {
    c->rc = in_rc;
    c->err_off = tbe__input_offset(in);
    if (in_rc == TBE_ETOOBIG)
      tbe__import_limit_msg(c->emsg, sizeof c->emsg, TBE__LIM_INPUT, c->o,
                            in->gzip ? "more input than the limit, after decompression"
                                     : "more input than the limit");
    else
      snprintf(c->emsg, sizeof c->emsg, "%s",
               in_rc == TBE_ECORRUPT ? "corrupt gzip data" : tbe_strerror(in_rc));
  } else if (!c->rc && !c->tail_ok && feed_main_end(c) == 0) {
    yajl_status st = yajl_complete_parse(c->h);
    if (st != yajl_status_ok && !c->rc) {
      if (c->form == 2 && c->depth == 1 && !c->skip && !c->cap) {
        /* a bare array ended without its ']' */
      } else {
        c->rc = TBE_EPARSE;
        c->err_off = tbe__input_offset(in);
        snprintf(c->emsg, sizeof c->emsg, "%s",
                 c->form == 0 ? "empty input: no JSON value"
                 : in_rc == TBE_ETRUNCATED
                     ? "unexpected end of input: the gzip stream is truncated"
                 : c->depth >= 2 && (c->role[c->depth] == R_EVENT || c->role[c->depth] == R_ARGS)
                     ? "unexpected end of input inside a trace event"
                     : "unexpected end of input");
      }
    }
  }
  if (!c->rc && in_rc == TBE_ETRUNCATED) c->truncated = 1;
  if (!c->threaded) {
    if (!c->rc && c->batch.len) flush_batch(c);
    return;
  }
  if (!c->rc) close_direct(c);
  pthread_mutex_lock(&c->mu);
  /* After an error or a stop nothing more is parsed; slots left over are
   * dropped in order. */
  for (uint64_t q = c->head; q < c->tail; q++) {
    slot *s = SLOT(c, q);
    if (s->state == S_PENDING) {
      s->state = S_DISCARD;
      c->inflight--;
    }
  }
  while (c->inflight) pthread_cond_wait(&c->cv, &c->mu);
  for (uint64_t q = c->head; q < c->tail; q++) {
    slot *s = SLOT(c, q);
    if (s->state == S_FAILED || s->state == S_FILL) s->state = S_DISCARD;
  }
  c->producer_done = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void *producer_main(void *arg) {
  cj *c = arg;
  produce(c);
  if (c->prof) c->p_drv_cpu = thread_cpu_ns();
  return NULL;
}

/* A worker parses one chunk into its slot's records.  Returns 1 when the
 * chunk is a clean sequence of events. */
static int parse_chunk(cj *w, slot *s) {
  if (only_space(s->in.data + 1, s->in.len - 2)) return 0;
  w->depth = 0;
  w->form = 0;
  w->skip = 0;
  w->cap = 0;
  w->rc = 0;
  w->done_events = 0;
  w->in_event = 0;
  w->wbuf = s->in.data;
  w->out = &s->out;
  tbe__buf_clear(&s->out);
  w->chunk_start = s->off - 1;
  w->h = yajl_alloc(&callbacks, NULL, w);
  if (!w->h) return 0;
  yajl_config(w->h, yajl_dont_validate_strings, 1);
  yajl_status st = yajl_parse(w->h, s->in.data, s->in.len);
  if (st == yajl_status_ok) st = yajl_complete_parse(w->h);
  yajl_free(w->h);
  w->h = NULL;
  return st == yajl_status_ok && !w->rc && w->done_events && !tbe__buf_error(&s->out);
}

static void *worker_main(void *arg) {
  cj *w = arg, *c = w->parent;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    if (c->wnext < c->head) c->wnext = c->head;
    /* Skip what is done; stop at a slot still being filled (a chunk
     * becomes PENDING there). */
    while (c->wnext < c->tail && SLOT(c, c->wnext)->state != S_PENDING &&
           SLOT(c, c->wnext)->state != S_FILL)
      c->wnext++;
    if (c->wnext < c->tail && SLOT(c, c->wnext)->state == S_PENDING) {
      uint64_t seq = c->wnext++;
      slot *s = SLOT(c, seq);
      s->state = S_WORKING;
      pthread_mutex_unlock(&c->mu);
      uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
      int ok = parse_chunk(w, s);
      uint64_t t1 = c->prof ? mono_ns() : 0, u1 = c->prof ? thread_cpu_ns() : 0;
      pthread_mutex_lock(&c->mu);
      if (c->prof) c->p_parse += t1 - t0, c->p_parse_cpu += u1 - u0, c->p_chunks++;
      s->state = ok ? S_READY : S_FAILED;
      c->inflight--;
      if (!ok && (!c->fail_pending || seq < c->fail_seq)) {
        c->fail_pending = 1;
        c->fail_seq = seq;
      }
      pthread_cond_broadcast(&c->cv);
      continue;
    }
    if (c->quit) break;
    pthread_cond_wait(&c->cv, &c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* The model side in threaded mode: applies slots in order until the
 * driver is done. */
static void consume(cj *c, const tbe_import_options *o) {
  pthread_mutex_lock(&c->mu);
  for (;;) {
    if (c->head < c->tail) {
      slot *s = SLOT(c, c->head);
      int st = s->state;
      if (st == S_READY || st == S_DISCARD) {
        pthread_mutex_unlock(&c->mu);
        if (st == S_READY) {
          uint64_t t0 = c->prof ? mono_ns() : 0, u0 = c->prof ? thread_cpu_ns() : 0;
          apply_batch(c, &s->out);
          if (c->prof) c->p_apply += mono_ns() - t0, c->p_apply_cpu += thread_cpu_ns() - u0;
          if (o->progress && !c->crc) o->progress(o->progress_ctx, s->prog_done, s->prog_total);
        }
        tbe__buf_clear(&s->out);
        pthread_mutex_lock(&c->mu);
        s->state = S_FREE;
        c->head++;
        pthread_cond_broadcast(&c->cv);
        continue;
      }
    } else if (c->producer_done) {
      break;
    }
    uint64_t t0 = c->prof ? mono_ns() : 0;
    pthread_cond_wait(&c->cv, &c->mu);
    if (c->prof) c->p_wait += mono_ns() - t0;
  }
  pthread_mutex_unlock(&c->mu);
}

/* Import threads: -1 decides by size, 0 never, 1 always (tests). */
int tbe__chrome_json_threads = -1;
/* Parse workers when threaded: 0 = tbe_import_options.threads or half the online
 * CPUs (2..16); tests set it. */
int tbe__chrome_json_workers = 0;
/* Target chunk size in bytes (0: the default); tests force tiny chunks. */
size_t tbe__chrome_json_chunk = 0;

#define CJ_CHUNK (128u * 1024u)
#define CJ_MAX_WORKERS 16

static int workers_wanted(const tbe_import_options *o) {
  if (tbe__chrome_json_workers > 0) return tbe__chrome_json_workers;
  if (o && o->threads == 1) return 0; /* the calling thread only */
  if (o && o->threads > 1) return o->threads > 64 ? 64 : (int)o->threads;
  /* Half the CPUs: the reading thread and the model builder need cores
   * too, and the builder is the serial limit.  On the 16-core H200 host 8
   * workers imported a 69 MB PyTorch trace in 0.122 s against 0.134 s with
   * 16; on 2 cores, 2 workers beat 1. */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long n = cpus / 2;
  if (n < 2) n = 2;
  return n > CJ_MAX_WORKERS ? CJ_MAX_WORKERS : (int)n;
}

/* Runs the pipeline with `nw` workers.  Returns 0, or -1 when the threads
 * could not be set up before anything was read (the caller then parses on
 * its own thread). */
static int run_threaded(cj *c, int nw, const tbe_import_options *o) {
  if (pthread_mutex_init(&c->mu, NULL) != 0) return -1;
  if (pthread_cond_init(&c->cv, NULL) != 0) {
    pthread_mutex_destroy(&c->mu);
    return -1;
  }
  c->nslots = (size_t)nw + 4;
  c->slots = tbe__calloc(c->a, c->nslots, sizeof *c->slots);
  c->wcs = tbe__calloc(c->a, (size_t)nw, sizeof *c->wcs);
  c->wth = tbe__calloc(c->a, (size_t)nw, sizeof *c->wth);
  int started = 0, ok = c->slots && c->wcs && c->wth;
  if (ok) {
    for (size_t i = 0; i < c->nslots; i++) {
      tbe__buf_init(&c->slots[i].in, c->a);
      tbe__buf_init(&c->slots[i].out, c->a);
    }
    c->chunk_target = tbe__chrome_json_chunk ? tbe__chrome_json_chunk : CJ_CHUNK;
    c->par = 1;
    c->threaded = 1;
  }
  for (int i = 0; ok && i < nw; i++) {
    c->wcs[i] = worker_new(c);
    if (!c->wcs[i] || pthread_create(&c->wth[i], NULL, worker_main, c->wcs[i]) != 0) break;
    started++;
  }
  pthread_t th;
  int driver = 0;
  if (ok && started == nw) driver = pthread_create(&th, NULL, producer_main, c) == 0;
  if (driver) {
    consume(c, o);
    pthread_join(th, NULL);
  }
  pthread_mutex_lock(&c->mu);
  c->quit = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < started; i++) pthread_join(c->wth[i], NULL);
  if (c->wcs)
    for (int i = 0; i < nw; i++) worker_free(c->a, c->wcs[i]);
  tbe__free(c->a, c->wcs);
  tbe__free(c->a, c->wth);
  c->wcs = NULL;
  c->wth = NULL;
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  c->threaded = 0;
  c->par = 0;
  free_slots(c);
  return driver ? 0 : -1;
}

int tbe__import_chrome_json(tbe_trace *t, tbe__input *in, const char *path,
                            const tbe_import_options *o, tbe_import_error *err) {
  uint64_t t_start = mono_ns();
  cj *c = tbe__calloc(in->a, 1, sizeof *c);
  if (!c) return tbe__import_fail(err, TBE_ENOMEM, path, UINT64_MAX, 0, 0, "out of memory");
  c->in = in;
  c->t = t;
  c->path = path;
  c->err = err;
  c->o = o;
  c->a = in->a;
  int rc;
  tbe__buf_init(&c->carry, c->a);
  tbe__map_init(&c->gmap, c->a, TBE__SEED_PROCESS);
  tbe__map_init(&c->smap, c->a, TBE__SEED_PROCESS);
  tbe__buf_init(&c->pe.text, c->a);
  tbe__buf_init(&c->capbuf, c->a);
  for (int i = 0; i < K_TBE_N; i++) tbe__buf_init(&c->tbe_meta[i], c->a);
  tbe__buf_init(&c->tmp, c->a);
  tbe__buf_init(&c->devname, c->a);
  tbe__buf_init(&c->distname, c->a);
  tbe__buf_init(&c->batch, c->a);
  tbe__buf_init(&c->fill, c->a);
  c->icache = tbe__calloc(c->a, CJ_ICACHE, sizeof *c->icache);
  c->h = yajl_alloc(&callbacks, NULL, c);
  c->ev_first = c->ev_mark = t->nevents;
  c->flow_first = c->flow_mark = t->nflows;
  c->source0 = t->source;
  c->prof = o && o->on_profile;
  if (!c->h || !c->icache) {
    cj_free(c);
    return tbe__import_fail(err, TBE_ENOMEM, path, UINT64_MAX, 0, 0, "out of memory");
  }
  /* Strings are checked (and repaired) when interned: yajl's own UTF-8
   * check would reject whole traces for one bad name. */
  yajl_config(c->h, yajl_dont_validate_strings, 1);
  /* A UTF-8 byte order mark (some editors and Windows tools write one) is
   * no JSON: skipped, the offsets still count it. */
  const uint8_t *head;
  size_t hn;
  if (tbe__input_peek(in, 3, &head, &hn) == 0 && hn >= 3 && head[0] == 0xEF && head[1] == 0xBB &&
      head[2] == 0xBF) {
    uint8_t bom[3];
    size_t got;
    (void)tbe__input_read(in, bom, 3, &got);
  }

  /* Threads pay off once parsing and model building each take a while:
   * the driver and the parse workers run on threads of their own and hand
   * records over in file order. */
  int want = tbe__chrome_json_threads;
  int nw = workers_wanted(o);
  if (want < 0) {
    uint64_t sz = tbe__input_size(in);
    want = (in->gzip ? sz >= (1u << 20) : sz >= (8u << 20)) && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
           nw > 0;
  }
  if (nw < 1) nw = 1;
  if (!want || run_threaded(c, nw, o) != 0) produce(c);

  /* The first error in input order: the consumer only ever sees records
   * from before the producer's error. */
  if (c->crc) {
    c->rc = c->crc;
    c->err_off = c->cerr_off;
    snprintf(c->emsg, sizeof c->emsg, "%s", c->cmsg[0] ? c->cmsg : tbe_strerror(c->crc));
  }
  if (!c->rc && c->form == 1 && !c->saw_events) {
    c->rc = TBE_EFORMAT;
    c->err_off = 0;
    snprintf(c->emsg, sizeof c->emsg,
             "a JSON object without a traceEvents array: not a Chrome or Kineto trace");
  }
  if (!c->rc && c->truncated) {
    t->ended_early = 1;
    tbe_trace_warn(t, "%s: the gzip stream is truncated; the events before the cut were kept", path);
  }
  uint64_t t_fin = c->prof ? mono_ns() : 0;
  if (!c->rc) {
    rc = finish_import(c);
    if (rc && !c->rc) {
      c->rc = rc;
      c->err_off = UINT64_MAX;
      snprintf(c->emsg, sizeof c->emsg, "%s", tbe_strerror(rc));
    }
  }
  if (c->prof) {
    uint64_t end = mono_ns();
    c->p_finish = end - t_fin;
    /* Wall times, and the CPU time of the thread(s) in [brackets]: the
     * serial parts (model building, the driver's read and scan, the end)
     * bound the speed whatever the number of workers. */
    char text[1024];
    snprintf(text, sizeof text,
             "chrome_json profile: %s: %.3f s total, %d parse workers%s\n"
             "  model building (serial, calling thread): %.3f s [cpu %.3f s], waiting for "
             "records %.3f s\n"
             "  chunk parsing (workers, summed): %.3f s [cpu %.3f s] over %llu chunks\n"
             "  driver (serial: read, scan, cut): [cpu %.3f s], waiting for free slots %.3f s\n"
             "  end of import (serial: ac2g check, metadata): %.3f s\n",
             path, (double)(end - t_start) / 1e9, want ? nw : 0, want ? "" : " (one thread)",
             (double)c->p_apply / 1e9, (double)c->p_apply_cpu / 1e9, (double)c->p_wait / 1e9,
             (double)c->p_parse / 1e9, (double)c->p_parse_cpu / 1e9,
             (unsigned long long)c->p_chunks, (double)c->p_drv_cpu / 1e9,
             (double)c->p_drv_wait / 1e9, (double)c->p_finish / 1e9);
    /* one call per line, each in line form (the path is anyone's) */
    for (char *line = text, *nl; *line; line = nl + 1) {
      if ((nl = strchr(line, '\n'))) *nl = '\0';
      char shown[2048];
      tbe__text_term_z(shown, sizeof shown, line, 1);
      o->on_profile(o->profile_ctx, TBE_MSG_NOTE, shown);
      if (!nl) break;
    }
  }
  if (o->progress && !c->rc) o->progress(o->progress_ctx, tbe__input_done(in), tbe__input_size(in));
  rc = c->rc;
  if (rc) {
    uint64_t line = 0, col = 0;
    if (rc == TBE_EPARSE && c->err_off != UINT64_MAX && !in->stream)
      line_col(path, c->err_off, &line, &col);
    tbe__import_fail(err, rc, path, c->err_off, line, col, "%s", c->emsg);
  }
  cj_free(c);
  return rc;
}
