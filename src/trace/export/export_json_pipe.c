/* export_json_pipe.c: the events of the Chrome JSON output, formatted in
 * parallel and written in order (export_json_int.h).
 *
 * Position: between the document (export_json.c), which writes the head
 * and the tail, and the event formatters (export_json_event.c); it owns
 * the threads of the output and nothing else. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/pool.h"
#include "tbexport/error.h"
#include "trace/export/export_json_pipe.h"
#include "trace/export/export_json_int.h"

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
 * tbe_export_options.threads, else the online CPUs, at most
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
  size_t m = tbe__jw_synth_from(wc, lo);
  for (uint32_t i = lo; i < hi && !wc->w.err; i++) {
    while (m < wc->nsynth && wc->synth[m].pos == i) tbe__jw_step_marker(wc, m++);
    tbe__jw_event(wc, i);
  }
  sl->w = wc->w;
  if (sl->w.err) return sl->w.err;
  if (p->gzip) tbe__jw_gz_compress(sl->w.a, (const char *)sl->w.data, sl->w.len, 0, &sl->z);
  return p->gzip ? sl->z.rc : 0;
}

int tbe__jw_events(jctx *c, jsink *sink, int nth) {
  const tbe_trace *t = c->t;
  if (t->nevents == 0) return 0;
  if (nth <= 0) nth = threads_wanted();
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
    tbe__jw_sink_part(sink, (const char *)sl->w.data, sl->w.len, sink->gzip ? &sl->z : NULL, 0);
    tbe__pool_release(pool);
    if ((rc = sink->err) != 0) break;
    uint64_t lo = done;
    done = (seq + 1) * p.chunk_ev < t->nevents ? (seq + 1) * p.chunk_ev : t->nevents;
    if (c->progress && (lo >> 16) != (done >> 16)) c->progress(c->progress_ctx, done, t->nevents);
  }
  tbe__pool_destroy(pool);
  return rc;
}
