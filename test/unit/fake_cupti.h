/* fake_cupti.h: what the collector's fakes of CUPTI share (test_collect.c,
 * test/stress/stress_collect_threads.c).
 *
 * Records: a fake fills the collector's buffers with real CUPTI record
 * structs laid end to end; tf_next_record walks them the way
 * cuptiActivityGetNextRecord does, by the size of each record's kind.
 *
 * Buffers, kept the way CUPTI keeps them with
 * CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER (its default): each
 * application thread that emits a record (tf_emit) has a buffer of its own,
 * requested from the collector on its first record and whenever the current
 * one is full.  A full buffer is completed at once (the GPU is done with
 * it) or, with tf.hold_full, kept until a flush (the GPU still runs).  A
 * flush (tf_flush, the fakes' cuptiActivityFlushAll) completes every
 * thread's kept buffers and its partly filled current one, like CUPTI for
 * buffers whose records are all complete (the fakes' records always are),
 * taking each thread's lock as CUPTI does.  A declined request drops the
 * record and counts it (read and reset by tf_get_num_dropped).
 *
 * The fake checks each buffer it is given: 8-byte aligned, maxNumRecords
 * 0, all zeroes (the collector promises ZEROED_OUT_ACTIVITY_BUFFER);
 * tf.bad counts violations.  tf.held / tf.held_peak are the bytes of the
 * buffers CUPTI holds (given by the collector and not completed yet).
 *
 * Include after <cupti.h> (the collector's headers bring it in); one
 * translation unit per program. */
#ifndef TBE_TEST_FAKE_CUPTI_H
#define TBE_TEST_FAKE_CUPTI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The size of the struct the fakes write for kind K; 0 for kinds they never
 * write. */
static inline size_t tf_record_size(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    default: return 0;
  }
}

/* get_next_record of the fakes: *rec NULL starts at the beginning of BUF;
 * returns CUPTI_ERROR_MAX_LIMIT_REACHED after the last of VALID bytes and
 * CUPTI_ERROR_INVALID_KIND on a kind the fakes never write. */
static inline CUptiResult tf_next_record(uint8_t *buf, size_t valid, CUpti_Activity **rec) {
  size_t pos = 0;
  if (*rec) {
    size_t sz = tf_record_size((*rec)->kind);
    if (!sz) return CUPTI_ERROR_INVALID_KIND;
    pos = (size_t)((uint8_t *)*rec - buf) + sz;
  }
  if (pos >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)(buf + pos);
  return CUPTI_SUCCESS;
}

/* ---- per-thread buffers ---- */

#define TF_MAX_THREADS 128
#define TF_KEPT 64 /* full buffers one thread keeps until a flush */

typedef struct tf_thread {
  pthread_mutex_t mu; /* CUPTI's lock on the thread's buffers */
  uint8_t *cur;
  size_t cur_size, cur_used;
  uint8_t *kept[TF_KEPT];
  size_t kept_size[TF_KEPT], kept_used[TF_KEPT];
  int nkept;
} tf_thread;

static struct {
  CUpti_BuffersCallbackRequestFunc req;
  CUpti_BuffersCallbackCompleteFunc done;
  tf_thread th[TF_MAX_THREADS];
  atomic_int nthreads;     /* threads that emitted since the reset */
  atomic_uint gen;         /* bumped by tf_reset */
  int hold_full;           /* keep full buffers until a flush */
  atomic_size_t dropped;   /* since the last get_num_dropped */
  atomic_size_t dropped_total;
  atomic_size_t held, held_peak;
  atomic_size_t requests, smallest; /* buffers received; the smallest size */
  atomic_int bad;          /* buffers not aligned, not zeroed, maxNumRecords != 0 */
} tf;

static __thread unsigned tf_my_gen;
static __thread tf_thread *tf_me;

/* Forgets every thread and buffer (no thread may be emitting). */
static inline void tf_reset(void) {
  static int inited;
  for (int i = 0; i < TF_MAX_THREADS; i++) {
    if (inited) pthread_mutex_destroy(&tf.th[i].mu);
    memset(&tf.th[i], 0, sizeof tf.th[i]);
    pthread_mutex_init(&tf.th[i].mu, NULL);
  }
  inited = 1;
  tf.req = NULL;
  tf.done = NULL;
  tf.hold_full = 0;
  atomic_store(&tf.nthreads, 0);
  atomic_fetch_add(&tf.gen, 1);
  atomic_store(&tf.dropped, 0);
  atomic_store(&tf.dropped_total, 0);
  atomic_store(&tf.held, 0);
  atomic_store(&tf.held_peak, 0);
  atomic_store(&tf.requests, 0);
  atomic_store(&tf.smallest, (size_t)-1);
  atomic_store(&tf.bad, 0);
}

static inline CUptiResult tf_register(CUpti_BuffersCallbackRequestFunc r,
                                      CUpti_BuffersCallbackCompleteFunc d) {
  tf.req = r;
  tf.done = d;
  return CUPTI_SUCCESS;
}

static inline CUptiResult tf_get_num_dropped(CUcontext c, uint32_t s, size_t *d) {
  (void)c;
  (void)s;
  *d = atomic_exchange(&tf.dropped, 0); /* resets on read, like CUPTI */
  return CUPTI_SUCCESS;
}

/* Hands a buffer back to the collector (its thread's lock held). */
static inline void tf_complete(uint8_t *b, size_t size, size_t used) {
  atomic_fetch_sub(&tf.held, size);
  tf.done(NULL, 0, b, size, used);
}

static inline tf_thread *tf_self(void) {
  unsigned g = atomic_load(&tf.gen);
  if (!tf_me || tf_my_gen != g) {
    int i = atomic_fetch_add(&tf.nthreads, 1);
    if (i >= TF_MAX_THREADS) return NULL;
    tf_me = &tf.th[i];
    tf_my_gen = g;
  }
  return tf_me;
}

/* Puts one record in the calling thread's buffer, like CUPTI on an
 * application thread.  Returns 1, or 0 when it was dropped. */
static inline int tf_emit(const void *rec, size_t size) {
  tf_thread *t = tf_self();
  if (!t) return 0;
  pthread_mutex_lock(&t->mu);
  if (t->cur && t->cur_used + size > t->cur_size) {
    if (tf.hold_full && t->nkept < TF_KEPT) {
      t->kept[t->nkept] = t->cur;
      t->kept_size[t->nkept] = t->cur_size;
      t->kept_used[t->nkept++] = t->cur_used;
    } else {
      tf_complete(t->cur, t->cur_size, t->cur_used);
    }
    t->cur = NULL;
  }
  if (!t->cur) {
    uint8_t *b = NULL;
    size_t sz = 0, maxrec = 99;
    tf.req(&b, &sz, &maxrec);
    if (!b || sz < size) {
      if (b) tf.done(NULL, 0, b, sz, 0);
      pthread_mutex_unlock(&t->mu);
      atomic_fetch_add(&tf.dropped, 1);
      atomic_fetch_add(&tf.dropped_total, 1);
      return 0;
    }
    int bad = maxrec != 0 || ((uintptr_t)b & 7) != 0;
    for (size_t i = 0; i < sz && !bad; i += 64) bad = b[i] != 0;
    if (bad || b[sz - 1] != 0) atomic_fetch_add(&tf.bad, 1);
    size_t h = atomic_fetch_add(&tf.held, sz) + sz, p = atomic_load(&tf.held_peak);
    while (h > p && !atomic_compare_exchange_weak(&tf.held_peak, &p, h)) {
    }
    size_t m = atomic_load(&tf.smallest);
    while (sz < m && !atomic_compare_exchange_weak(&tf.smallest, &m, sz)) {
    }
    atomic_fetch_add(&tf.requests, 1);
    t->cur = b;
    t->cur_size = sz;
    t->cur_used = 0;
  }
  memcpy(t->cur + t->cur_used, rec, size);
  t->cur_used += size;
  pthread_mutex_unlock(&t->mu);
  return 1;
}

/* cuptiActivityFlushAll of the fakes: every thread's kept and current
 * buffers go back, partly filled ones too (forced or not: the fakes'
 * records are always complete). */
static inline CUptiResult tf_flush(uint32_t flag) {
  (void)flag;
  int n = atomic_load(&tf.nthreads);
  if (n > TF_MAX_THREADS) n = TF_MAX_THREADS;
  for (int i = 0; i < n; i++) {
    tf_thread *t = &tf.th[i];
    pthread_mutex_lock(&t->mu);
    for (int k = 0; k < t->nkept; k++) tf_complete(t->kept[k], t->kept_size[k], t->kept_used[k]);
    t->nkept = 0;
    if (t->cur) tf_complete(t->cur, t->cur_size, t->cur_used);
    t->cur = NULL;
    pthread_mutex_unlock(&t->mu);
  }
  return CUPTI_SUCCESS;
}

#endif
