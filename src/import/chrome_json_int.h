/* chrome_json_int.h: the parts of the Chrome/Kineto JSON importer.
 *
 * One importer in nine files, cut where its own sections were; they share
 * the parser state (`cj`) and the record layout below, nothing else.  The
 * essay of the whole (layouts, mapping, threads, limits, errors) is at the
 * top of chrome_json.c.  Data flows down this list:
 *   chrome_json.c           the driver: tbe__import_chrome_json, set-up,
 *                           the first error, line and column
 *   chrome_json_guard.c     the token guard and the main yajl handle's feed
 *   chrome_json_parse.c     yajl callbacks: the event being parsed (`pe`),
 *                           nested values captured as compact JSON
 *   chrome_json_records.c   records, parser -> model: encoding (emit_*),
 *                           the parser's share of the work (prepass) and
 *                           the model side's loop over them (apply_batch)
 *   chrome_json_pipeline.c  threads: the boundary scanner, the driver
 *                           thread, chunks and records as items of an
 *                           ordered pool (common/pool.h), the consumer
 *   chrome_json_kineto.c    Kineto's mapping: one record to model events,
 *                           tracks, B/E pairs, flows, metadata, counters
 *   chrome_json_flows.c     the queues of flow ends waiting for a partner
 *   chrome_json_finish.c    the end of the input: the base time, open B
 *                           events, our exporter's keys, names, ac2g checks
 *   chrome_json_text.c      text and numbers: interning with UTF-8 repair,
 *                           exact microseconds, integers; error helpers
 * The parser side (guard, parse, records' encoding, pipeline) touches only
 * the producer's fields; the model side (kineto, finish, apply_batch) only
 * the consumer's: the threads never share a field outside the pool's
 * hand-overs.  Hot helpers of both sides are inline below. */
#ifndef TBE_IMPORT_CHROME_JSON_INT_H
#define TBE_IMPORT_CHROME_JSON_INT_H

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
#include "common/intern.h"
#include "common/map.h"
#include "common/text.h"
#include "common/utf8.h"
#include "common/vec.h"
#include "import/importer.h"
#include "import/input.h"
#include "tbexport/error.h"
#include "trace/model/vocab.h"

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
  uint8_t gone;           /* parser side: a later arg has the same key (dropped) */
  uint64_t kh;            /* hash_check of the key (taken with the key) */
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
  /* Duplicate keys (see "duplicate keys" in chrome_json_parse.c): the
   * fields seen (1 << E_*), how many keys repeated one before, and the
   * first of them: its offset (0: none), E_* or -1 for an args key (then
   * dup_key, in text). */
  uint32_t seen, ndup;
  int32_t dup_field;
  span dup_key;
  uint64_t dup_off;
  uint64_t kfilter[4]; /* a bit per args key seen (8 bits of its hash): most keys meet no earlier one */
} scratch;

/* Roles of the containers the parser walks into. */
enum { R_NONE, R_TOP, R_EVENTS, R_EVENT, R_ARGS, R_DEVPROPS, R_DEVICE, R_DIST };
/* Top-level keys.  K_TBE_* are our exporter's (export_json.c): their values
 * are captured as JSON text and read at the end (tbe__cj_finish_import). */
enum { K_OTHER, K_EVENTS, K_DEVPROPS, K_DIST, K_BASE, K_NAME, K_TBE_TRACE, K_TBE_COLLECTION,
       K_TBE_WARNINGS, K_TBE_STEPS, K_TBE_KMETRICS };
#define K_TBE_FIRST K_TBE_TRACE
#define K_TBE_N 5
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

/* One end of a (non-ac2g) flow waiting for the other: a node of the
 * queue of its (id, cat) pair and side (chrome_json_kineto.c, flows). */
typedef struct flow_end {
  uint64_t id;
  tbe_str cat;
  uint8_t is_start;
  uint8_t bp_e;
  uint32_t track;
  int64_t ts;
  tbe_str name;
  uint32_t next; /* the next node of its queue (or of the free list) + 1; 0: none */
} flow_end;

/* A queue of waiting flow ends, oldest first: node indexes + 1, 0 empty. */
typedef struct flow_queue {
  uint32_t head, tail;
} flow_queue;

typedef struct cj {
  tbe_trace *t;
  const char *path;
  tbe__input *in;               /* the driver's source (NULL in workers) */
  const tbe_import_options *o;  /* limits resolved (importer.h) */
  int truncated; /* the gzip stream ended early (array form accepted) */
  tbe_import_error *err;
  const tbe_allocator *a;
  yajl_handle h;
  yajl_alloc_funcs yfuncs; /* yajl's memory through `a` (tbe__cj_yajl_alloc) */
  int ynomem;              /* the allocator refused yajl a block: TBE_ENOMEM */
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
  /* Where the parser side's records go, set by the pipeline (the file
   * above records.c, which never calls up): the buffer to append to (NULL
   * when stopped), and the hand-over of a full batch (1 to go on, 0 to
   * stop the parse). */
  tbe__buf *(*rec_out)(struct cj *c);
  int (*rec_flush)(struct cj *c);
  int worker;          /* this cj is a chunk worker's parser state */
  int dummy;           /* the next event closing is a placeholder: drop it */
  int threaded;
  volatile int stop;   /* the consumer failed: the producer should stop */
  uint64_t prog_done, prog_total; /* progress (the producer's) */

  /* the pool (threaded mode; see "pipeline" in chrome_json_pipeline.c) */
  struct tbe__pool *pool;
  struct cj *parent;           /* a worker's importer */
  uint64_t tail;               /* the driver's next item */
  struct slot *direct;         /* the driver's open record slot, or NULL */
  uint64_t direct_seq;         /* its item */
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
  tbe__intern flow_keys;  /* (id, cat) pairs, 12 bytes each, to dense ids */
  tbe__vec flow_q;        /* flow_queue, two per pair: [2 * pair + is_start] */
  tbe__vec flow_nodes;    /* flow_end */
  uint32_t flow_free;     /* free list of flow_nodes (index + 1) */
  size_t nflows_live;
  tbe__vec ac2g_s, ac2g_f; /* uint64_t: the ids of ac2g flow starts and ends */

  /* duplicate keys, parser side: the key of the arg being parsed (hashed
   * with it), an index of the event's args once it has many, the fields
   * seen in the deviceProperties entry and distributedInfo being read, and
   * the first duplicate of those (the main handle's) */
  uint64_t arg_kh;
  uint8_t arg_kplain;
  tbe__index argix;
  uint32_t dev_seen, dist_seen;
  uint64_t pdup_n, pdup_off;
  char pdup_name[80];
  /* duplicate keys, model side: how many in all, the first in the file */
  uint64_t dup_n, dup_off;
  char dup_name[80];

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
  const uint8_t *wbuf;    /* the text yajl is parsing (a worker's chunk, the main handle's piece) */
  uint64_t base_off;      /* offset of baseTimeNanoseconds (consumer) */
  uint64_t nevents_read;  /* trace events applied (consumer) */

  /* o->on_profile: phase times (ns) handed to the caller at the end */
  int prof;
  uint64_t p_apply, p_wait, p_parse, p_drv_wait, p_finish, p_chunks;
  uint64_t p_apply_cpu, p_parse_cpu, p_drv_cpu; /* thread CPU time */
} cj;

/* Kinds of records (chrome_json_records.c). */
enum { REC_EVENT = 1, REC_BASE, REC_TRACENAME, REC_DEVICE, REC_BACKEND, REC_TBE };

/* ---- chrome_json_finish.c ---- */
int tbe__cj_finish_import(cj *c);

/* ---- chrome_json_flows.c ---- */
/* The queue of (id, cat) on `side` (1: starts); NULL without memory. */
flow_queue *tbe__cj_flow_queue_of(cj *c, uint64_t id, tbe_str cat, int side);
/* Appends a copy of `f` to queue `q`.  0 or TBE_ENOMEM. */
int tbe__cj_flow_wait(cj *c, flow_queue *q, const flow_end *f);
/* Takes the oldest end of queue `q` (not empty) into *f. */
void tbe__cj_flow_take(cj *c, flow_queue *q, flow_end *f);

/* ---- chrome_json_guard.c ---- */
int tbe__cj_feed_main(cj *c, const uint8_t *d, size_t n, uint64_t off);
int tbe__cj_feed_main_end(cj *c);

/* ---- chrome_json_kineto.c ---- */
int tbe__cj_emit_pending(cj *c, pending_b *pb, int64_t end, const tbe_arg *extra, size_t nextra);
int tbe__cj_finish_event(cj *c);
int tbe__cj_get_track(cj *c, uint32_t type, int64_t pid, int64_t tid, int32_t device,
                     uint32_t *out);
int tbe__cj_gpu_of_pid(const cj *c, int64_t pid, int32_t *dev);

/* ---- chrome_json_pipeline.c ---- */
void tbe__cj_produce(cj *c);
int tbe__cj_run_threaded(cj *c, int nw, const tbe_import_options *o);
int tbe__cj_workers_wanted(const tbe_import_options *o);

/* ---- chrome_json_records.c ---- */
void tbe__cj_apply_batch(cj *c, tbe__buf *b);
int tbe__cj_emit_device_record(cj *c);
int tbe__cj_emit_dist_record(cj *c);
int tbe__cj_emit_event_record(cj *c);
int tbe__cj_emit_record(cj *c, uint32_t kind, const void *fixed, size_t fn, const void *text,
                       size_t tn);

/* ---- chrome_json_parse.c ---- */
/* A yajl handle on the callbacks whose memory comes from c->a (NULL, or
 * c->ynomem set, when there was none). */
yajl_handle tbe__cj_yajl_alloc(cj *c);

/* ---- chrome_json_text.c ---- */
/* Counts a duplicate key on the model side (a record's, or the main
 * handle's at the end): keeps the first in the file. */
void tbe__cj_note_dup(cj *c, uint64_t n, uint64_t off, const char *prefix, const char *name,
                      size_t len);
/* The names of the event fields (E_*). */
const char *tbe__cj_ev_key_name(int k);
int tbe__cj_arg_double(const scratch *e, const sarg *a, double *v);
int tbe__cj_arg_int(const scratch *e, const sarg *a, int64_t *v);
/* Arg `a` as a whole number: 1 with *v, 0 when no number, -1 when a
 * number no ordinal can be. */
int tbe__cj_arg_whole(const scratch *e, const sarg *a, int64_t *v);
int tbe__cj_cfail(cj *c, uint64_t off, int code);
int tbe__cj_cfail_msg(cj *c, uint64_t off, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int tbe__cj_fail_at(cj *c, uint64_t off, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int tbe__cj_limit(cj *c, uint64_t off, tbe__limit which, const char *what);
int tbe__cj_nomem(cj *c);
uint64_t tbe__cj_pos(cj *c);
int tbe__cj_intern_text(cj *c, const char *s, size_t n, tbe_str *out);
void tbe__cj_parse_dim3(const char *s, size_t n, uint32_t out[3]);
int tbe__cj_parse_double(const char *s, size_t n, double *out);
/* The number parsers: inline, as every timestamp and id of every event
 * goes through them (out of line after the split they cost 3% of an
 * import). */
/* Parses an integer (optionally signed).  Returns 0, or -1 when the text is
 * not an integer in range.  *is_u is set when it only fits a uint64. */
static inline int tbe__cj_parse_int(const char *s, size_t n, int64_t *out, uint64_t *uout,
                                    int *is_u) {
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

/* Parses a JSON number of microseconds into integer nanoseconds, exactly:
 * the decimal digits are scaled by powers of ten in integer arithmetic and
 * rounded half away from zero at the nanosecond.  Returns 0 or -1 (not a
 * number, or out of the int64 range). */
static inline int tbe__cj_us_to_ns(const char *s, size_t n, int64_t *out) {
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
/* Sets c->yfuncs: yajl's memory from c->a (for other handles of c's). */
void tbe__cj_yajl_funcs(cj *c);

/* ---- chrome_json.c's handle, shared with the workers ---- */
extern const yajl_callbacks tbe__cj_callbacks;
/* Test knobs (test_import_chrome.c): threads -1 by size, 0 never, 1
 * always; workers (0: by the CPUs); chunk and piece sizes (0: default). */
extern int tbe__chrome_json_threads;
extern int tbe__chrome_json_workers;
extern size_t tbe__chrome_json_chunk;
extern size_t tbe__chrome_json_piece;

/* ---- inline helpers of the hot paths ---- */

static inline uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int tbe__cj_only_space(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n') return 0;
  return 1;
}

static inline int stopped(cj *c) { return __atomic_load_n(&c->stop, __ATOMIC_RELAXED); }

static inline const char *sp(const scratch *e, span s) { return (const char *)e->text.data + s.off; }

static inline int span_is(const scratch *e, span s, const char *lit, size_t n) {
  return s.len == n && memcmp(sp(e, s), lit, n) == 0;
}

#define SPAN_IS(e, s, lit) span_is((e), (s), lit, sizeof(lit) - 1)

static inline span put_text(cj *c, const void *p, size_t n) {
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

/* The word-at-a-time hash of the intern front cache (chrome_json_text.h),
 * taken on the parser side (prepass). */
static inline uint64_t load64(const char *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}

/* Hashes `n` bytes and reports whether they are all ASCII without NUL (the
 * fast path needs no UTF-8 repair). */
static inline uint64_t hash_check(const char *s, size_t n, int *plain) {
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

#endif
