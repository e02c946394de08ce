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
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
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

/* ---- hardware metrics (hwmetrics.h; with collector.h included first) ----
 *
 * A fake of the callback subscription, PM sampling, the range profiler
 * and the profiler host API, filled into tbe__cupti_api.m by tfm_fill.
 * Contexts are the pointers (CUcontext)(device + 1).  PM samples are made
 * by the test (tfm_pm_produce) and moved into the counter data image by
 * the collector's decode calls, TFM_PM_CAP at most per image (so a drain
 * fills an image and starts it again); tfm.pm_overflow_next makes the next
 * decode report a hardware-buffer overflow.  The value of metric j of a PM
 * sample is (j + 1) * 1.5 (plus its end's last three digits / 8 with
 * tfm.pm_vary); of a range-profiled launch, (j + 1) * 100 plus
 * the launch's sequence number (1, 2, ...), so means are checkable.  The
 * host API accepts every metric name but those containing "nvl" (a chip
 * without NVLink).  Result codes to refuse with: tfm.subscribe_rc,
 * tfm.pm_enable_rc, tfm.rp_enable_rc. */

#ifdef TBE_COLLECT_COLLECTOR_H
#define TFM_PM_CAP 256
#define TFM_PENDING 65536

/* A PM counter data image: this header, then `cap` samples of (start,
 * end) u64 each, one sample after the other (so its first n samples are
 * its first 16 + 16 n bytes, what the deferred mode copies), or with
 * tfm.pm_soa all starts then all ends (a layout whose prefix does not
 * hold the samples: the collector must see that and copy it whole). */
typedef struct tfm_pm_image {
  uint32_t magic, n, cap, soa;
} tfm_pm_image;
static inline uint64_t *tfm_pm_at(const tfm_pm_image *im, uint32_t i, int end) {
  uint64_t *v = (uint64_t *)(uintptr_t)(im + 1);
  return im->soa ? v + (end ? im->cap : 0) + i : v + 2 * (size_t)i + (end ? 1 : 0);
}

typedef struct tfm_rp_image {
  uint32_t magic, nranges;
  uint32_t seq;
} tfm_rp_image;

static struct {
  pthread_mutex_t mu;
  CUpti_CallbackFunc cb;
  void *ud;
  int subscribed, cb_resource, cb_launch;
  int cb_profiler, cb_nvtx; /* the capture range's callbacks enabled */
  uint32_t corr;            /* the last launch's correlation id */
  uint64_t nvtx_id;         /* the last start/end range id */
  CUptiResult subscribe_rc, pm_enable_rc, rp_enable_rc;
  int pm_enabled, pm_started, pm_stopped;
  uint64_t pm_interval;
  uint64_t pend_start[TFM_PENDING], pend_end[TFM_PENDING];
  size_t npend, pend_head;
  int pm_overflow_next;
  int pm_vary;       /* PM values vary with the sample's end (see tfm_host_eval) */
  int pm_soa;        /* images laid out as all starts, then all ends */
  int pm_eval_bad;   /* evaluating a PM image fails (a damaged image) */
  int rp_enabled, rp_started;
  uint32_t rp_seq, rp_ranges;
  int host_objects;  /* alive: initialized and not deinitialized */
  int avail_bad;     /* a host object was used after its availability image was freed */
  int pm_disable_calls, pm_calls_after_disable;
} tfm = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* A host object remembers its counter availability image, as CUPTI's does
 * (it reads it while it lives): each use checks the image still holds the
 * bytes the availability call wrote.  glibc's free() writes its list
 * pointers into the first 16 bytes of a small freed block, so an image
 * freed before the host object is seen (and ASan reports the read). */
#define TFM_AVAIL_SIZE 64
typedef struct tfm_host {
  const uint8_t *avail;
} tfm_host;
static inline int tfm_avail_ok(const tbe__ph_object *o) {
  const tfm_host *h = (const tfm_host *)o;
  if (!h) return 0;
  if (!h->avail) return 1;
  for (size_t i = 0; i < TFM_AVAIL_SIZE; i++)
    if (h->avail[i] != (uint8_t)(0xa0 + i % 7)) {
      tfm.avail_bad = 1;
      return 0;
    }
  return 1;
}
static inline void tfm_avail_fill(uint8_t *img, size_t *size) {
  if (img && *size >= TFM_AVAIL_SIZE)
    for (size_t i = 0; i < TFM_AVAIL_SIZE; i++) img[i] = (uint8_t)(0xa0 + i % 7);
  *size = TFM_AVAIL_SIZE;
}
#define TFM_PM_OBJ ((CUpti_PmSampling_Object *)&tfm.pm_enabled)
#define TFM_RP_OBJ ((CUpti_RangeProfiler_Object *)&tfm.rp_enabled)

static inline void tfm_reset(void) {
  pthread_mutex_lock(&tfm.mu);
  tfm.cb = NULL;
  tfm.subscribed = tfm.cb_resource = tfm.cb_launch = 0;
  tfm.cb_profiler = tfm.cb_nvtx = 0;
  tfm.corr = 0;
  tfm.nvtx_id = 0;
  tfm.subscribe_rc = tfm.pm_enable_rc = tfm.rp_enable_rc = CUPTI_SUCCESS;
  tfm.pm_enabled = tfm.pm_started = tfm.pm_stopped = 0;
  tfm.npend = tfm.pend_head = 0;
  tfm.pm_overflow_next = 0;
  tfm.pm_vary = tfm.pm_soa = tfm.pm_eval_bad = 0;
  tfm.rp_enabled = tfm.rp_started = 0;
  tfm.rp_seq = tfm.rp_ranges = 0;
  tfm.host_objects = 0;
  tfm.avail_bad = 0;
  tfm.pm_disable_calls = tfm.pm_calls_after_disable = 0;
  pthread_mutex_unlock(&tfm.mu);
}

static inline CUptiResult tfm_subscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud) {
  if (tfm.subscribe_rc != CUPTI_SUCCESS) return tfm.subscribe_rc;
  tfm.cb = cb;
  tfm.ud = ud;
  tfm.subscribed = 1;
  *s = (CUpti_SubscriberHandle)&tfm.subscribed;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_unsubscribe(CUpti_SubscriberHandle s) {
  (void)s;
  tfm.subscribed = 0;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_enable_callback(uint32_t on, CUpti_SubscriberHandle s,
                                              CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  (void)s;
  if (d == CUPTI_CB_DOMAIN_RESOURCE) tfm.cb_resource = (int)on;
  if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid != CUPTI_DRIVER_TRACE_CBID_cuProfilerStart &&
      cbid != CUPTI_DRIVER_TRACE_CBID_cuProfilerStop)
    tfm.cb_launch = (int)on;
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000)
    tfm.cb_profiler = (int)on;
  if (d == CUPTI_CB_DOMAIN_NVTX) tfm.cb_nvtx = (int)on;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_device_id(CUcontext c, uint32_t *d) {
  if (!c) return CUPTI_ERROR_INVALID_CONTEXT;
  *d = (uint32_t)((uintptr_t)c - 1);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_prof_init(CUpti_Profiler_Initialize_Params *p) {
  (void)p;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_chip(CUpti_Device_GetChipName_Params *p) {
  p->pChipName = "FAKE";
  return CUPTI_SUCCESS;
}

/* PM sampling */
static inline CUptiResult tfm_pm_enable(CUpti_PmSampling_Enable_Params *p) {
  if (tfm.pm_enable_rc != CUPTI_SUCCESS) return tfm.pm_enable_rc;
  tfm.pm_enabled = 1;
  p->pPmSamplingObject = TFM_PM_OBJ;
  return CUPTI_SUCCESS;
}
/* Disabling twice, or any call on the object after it, is what frees
 * CUPTI's state twice: counted for the tests. */
static inline CUptiResult tfm_pm_disable(CUpti_PmSampling_Disable_Params *p) {
  tfm.pm_disable_calls++;
  if (p->pPmSamplingObject != TFM_PM_OBJ || !tfm.pm_enabled) {
    tfm.pm_calls_after_disable++;
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  tfm.pm_enabled = 0;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_avail(CUpti_PmSampling_GetCounterAvailability_Params *p) {
  tfm_avail_fill(p->pCounterAvailabilityImage, &p->counterAvailabilityImageSize);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_avail(CUpti_Profiler_GetCounterAvailability_Params *p) {
  tfm_avail_fill(p->pCounterAvailabilityImage, &p->counterAvailabilityImageSize);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_config(CUpti_PmSampling_SetConfig_Params *p) {
  if (!p->pConfig || !p->configSize || !p->samplingInterval) return CUPTI_ERROR_INVALID_PARAMETER;
  tfm.pm_interval = p->samplingInterval;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_start(CUpti_PmSampling_Start_Params *p) {
  (void)p;
  tfm.pm_started = 1;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_stop(CUpti_PmSampling_Stop_Params *p) {
  (void)p;
  tfm.pm_stopped = 1;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_size(CUpti_PmSampling_GetCounterDataSize_Params *p) {
  uint32_t cap = p->maxSamples < TFM_PM_CAP ? p->maxSamples : TFM_PM_CAP;
  if (!cap) return CUPTI_ERROR_INVALID_PARAMETER;
  p->counterDataSize = sizeof(tfm_pm_image) + 16 * (size_t)cap;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_init(CUpti_PmSampling_CounterDataImage_Initialize_Params *p) {
  size_t n = p->counterDataSize;
  if (n < sizeof(tfm_pm_image) + 16 || (n - sizeof(tfm_pm_image)) % 16 ||
      n > sizeof(tfm_pm_image) + 16 * (size_t)TFM_PM_CAP)
    return CUPTI_ERROR_INVALID_PARAMETER;
  memset(p->pCounterData, 0, n);
  tfm_pm_image *im = (tfm_pm_image *)p->pCounterData;
  im->magic = 0x504d;
  im->cap = (uint32_t)((n - sizeof *im) / 16);
  im->soa = (uint32_t)tfm.pm_soa;
  return CUPTI_SUCCESS;
}
/* The test's samples, [start, start + interval) each, n of them from t. */
static inline void tfm_pm_produce(uint64_t t, size_t n, uint64_t interval) {
  pthread_mutex_lock(&tfm.mu);
  for (size_t i = 0; i < n && tfm.npend < TFM_PENDING; i++, tfm.npend++) {
    tfm.pend_start[tfm.npend] = t + i * interval;
    tfm.pend_end[tfm.npend] = t + (i + 1) * interval;
  }
  pthread_mutex_unlock(&tfm.mu);
}
static inline CUptiResult tfm_pm_decode(CUpti_PmSampling_DecodeData_Params *p) {
  if (!tfm.pm_enabled) {
    tfm.pm_calls_after_disable++;
    return CUPTI_ERROR_INVALID_OPERATION;
  }
  tfm_pm_image *im = (tfm_pm_image *)p->pCounterDataImage;
  if (im->magic != 0x504d || p->counterDataImageSize != sizeof *im + 16 * (size_t)im->cap)
    return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&tfm.mu);
  while (im->n < im->cap && tfm.pend_head < tfm.npend) {
    *tfm_pm_at(im, im->n, 0) = tfm.pend_start[tfm.pend_head];
    *tfm_pm_at(im, im->n++, 1) = tfm.pend_end[tfm.pend_head++];
  }
  p->decodeStopReason = im->n == im->cap ? CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL
                                            : CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS;
  p->overflow = (uint8_t)tfm.pm_overflow_next;
  tfm.pm_overflow_next = 0;
  pthread_mutex_unlock(&tfm.mu);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_info(CUpti_PmSampling_GetCounterDataInfo_Params *p) {
  const tfm_pm_image *im = (const tfm_pm_image *)p->pCounterDataImage;
  p->numTotalSamples = im->cap;
  p->numPopulatedSamples = p->numCompletedSamples = im->n;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_pm_sample(CUpti_PmSampling_CounterData_GetSampleInfo_Params *p) {
  const tfm_pm_image *im = (const tfm_pm_image *)p->pCounterDataImage;
  if (p->sampleIndex >= im->n) return CUPTI_ERROR_INVALID_PARAMETER;
  p->startTimestamp = *tfm_pm_at(im, (uint32_t)p->sampleIndex, 0);
  p->endTimestamp = *tfm_pm_at(im, (uint32_t)p->sampleIndex, 1);
  return CUPTI_SUCCESS;
}

/* Range profiler */
static inline CUptiResult tfm_rp_enable(CUpti_RangeProfiler_Enable_Params *p) {
  if (tfm.rp_enable_rc != CUPTI_SUCCESS) return tfm.rp_enable_rc;
  tfm.rp_enabled = 1;
  p->pRangeProfilerObject = TFM_RP_OBJ;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_disable(CUpti_RangeProfiler_Disable_Params *p) {
  (void)p;
  tfm.rp_enabled = 0;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_config(CUpti_RangeProfiler_SetConfig_Params *p) {
  if (p->range != CUPTI_AutoRange || p->replayMode != CUPTI_KernelReplay || !p->pConfig)
    return CUPTI_ERROR_INVALID_PARAMETER;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_start(CUpti_RangeProfiler_Start_Params *p) {
  (void)p;
  if (tfm.rp_started) return CUPTI_ERROR_INVALID_OPERATION;
  tfm.rp_started = 1;
  tfm.rp_ranges = 0;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_stop(CUpti_RangeProfiler_Stop_Params *p) {
  if (!tfm.rp_started) return CUPTI_ERROR_INVALID_OPERATION;
  tfm.rp_started = 0;
  p->isAllPassSubmitted = 1;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_size(CUpti_RangeProfiler_GetCounterDataSize_Params *p) {
  p->counterDataSize = sizeof(tfm_rp_image);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_init(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p) {
  memset(p->pCounterData, 0, sizeof(tfm_rp_image));
  ((tfm_rp_image *)p->pCounterData)->magic = 0x5250;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_rp_decode(CUpti_RangeProfiler_DecodeData_Params *p) {
  (void)p;
  return CUPTI_SUCCESS;
}
static tfm_rp_image *tfm_rp_current; /* the image SetConfig was last given */
static inline CUptiResult tfm_rp_config_keep(CUpti_RangeProfiler_SetConfig_Params *p) {
  CUptiResult r = tfm_rp_config(p);
  if (r == CUPTI_SUCCESS) tfm_rp_current = (tfm_rp_image *)p->pCounterDataImage;
  return r;
}
static inline CUptiResult tfm_rp_info(CUpti_RangeProfiler_GetCounterDataInfo_Params *p) {
  p->numTotalRanges = ((const tfm_rp_image *)p->pCounterDataImage)->nranges;
  return CUPTI_SUCCESS;
}

/* Host API: values from the images above. */
static inline CUptiResult tfm_host_init(tbe__ph_init *p) {
  if (!p->pChipName || strcmp(p->pChipName, "FAKE") != 0) return CUPTI_ERROR_INVALID_CHIP_NAME;
  tfm_host *h = calloc(1, sizeof *h);
  if (!h) return CUPTI_ERROR_OUT_OF_MEMORY;
  h->avail = p->pCounterAvailabilityImage;
  p->pHostObject = (tbe__ph_object *)h;
  __atomic_add_fetch(&tfm.host_objects, 1, __ATOMIC_SEQ_CST);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_host_deinit(tbe__ph_deinit *p) {
  free(p->pHostObject);
  __atomic_sub_fetch(&tfm.host_objects, 1, __ATOMIC_SEQ_CST);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_host_props(tbe__ph_props *p) {
  if (!tfm_avail_ok(p->pHostObject)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (strstr(p->pMetricName, "nvl")) return CUPTI_ERROR_INVALID_METRIC_NAME;
  p->pDimUnit = "percent";
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_host_add(tbe__ph_add *p) {
  if (!tfm_avail_ok(p->pHostObject)) return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < p->numMetrics; i++)
    if (strstr(p->ppMetricNames[i], "nvl")) return CUPTI_ERROR_INVALID_METRIC_NAME;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_host_image_size(tbe__ph_image_size *p) {
  p->configImageSize = 64;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_host_image(tbe__ph_image *p) {
  if (!tfm_avail_ok(p->pHostObject)) return CUPTI_ERROR_INVALID_PARAMETER;
  memset(p->pConfigImage, 0xc5, p->configImageSize);
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_host_passes(tbe__ph_passes *p) {
  p->numOfPasses = 1;
  return CUPTI_SUCCESS;
}
static inline CUptiResult tfm_host_eval(tbe__ph_eval *p) {
  if (!tfm_avail_ok(p->pHostObject)) return CUPTI_ERROR_INVALID_PARAMETER;
  uint32_t magic;
  memcpy(&magic, p->pCounterDataImage, 4);
  for (size_t j = 0; j < p->numMetrics; j++) {
    if (magic == 0x504d) {
      const tfm_pm_image *im = (const tfm_pm_image *)p->pCounterDataImage;
      if (p->rangeIndex >= im->n || p->counterDataImageSize != sizeof *im + 16 * (size_t)im->cap ||
          tfm.pm_eval_bad)
        return CUPTI_ERROR_INVALID_PARAMETER;
      /* with tfm.pm_vary, also the sample's end (mod 1000, in eighths):
       * a value read from another sample or a damaged image differs */
      uint64_t end = *tfm_pm_at(im, (uint32_t)p->rangeIndex, 1);
      p->pMetricValues[j] = (double)(j + 1) * 1.5 + (tfm.pm_vary ? (double)(end % 1000) / 8 : 0);
    } else if (magic == 0x5250) {
      const tfm_rp_image *im = (const tfm_rp_image *)p->pCounterDataImage;
      if (p->rangeIndex >= im->nranges) return CUPTI_ERROR_INVALID_PARAMETER;
      p->pMetricValues[j] = (double)(j + 1) * 100 + im->seq;
    } else {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
  }
  return CUPTI_SUCCESS;
}

/* The application's side: a context made on device d, a kernel launched in
 * it (the driver callback's entry and exit around the "kernel", which the
 * range profiler records as a range when started). */
static inline void tfm_context_created(uint32_t d) {
  if (!tfm.subscribed || !tfm.cb_resource) return;
  CUpti_ResourceData rd;
  memset(&rd, 0, sizeof rd);
  rd.context = (CUcontext)(uintptr_t)(d + 1);
  tfm.cb(tfm.ud, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
}
static inline void tfm_context_destroyed(uint32_t d) {
  if (!tfm.subscribed || !tfm.cb_resource) return;
  CUpti_ResourceData rd;
  memset(&rd, 0, sizeof rd);
  rd.context = (CUcontext)(uintptr_t)(d + 1);
  tfm.cb(tfm.ud, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &rd);
}
static inline void tfm_launch(uint32_t d, const char *name) {
  CUpti_CallbackData cb;
  memset(&cb, 0, sizeof cb);
  cb.context = (CUcontext)(uintptr_t)(d + 1);
  cb.symbolName = name;
  cb.functionName = "cuLaunchKernel";
  cb.correlationId = ++tfm.corr;
  if (tfm.subscribed && tfm.cb_launch) {
    cb.callbackSite = CUPTI_API_ENTER;
    tfm.cb(tfm.ud, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
  }
  pthread_mutex_lock(&tfm.mu);
  if (tfm.rp_started && tfm_rp_current) {
    tfm_rp_current->nranges++;
    tfm_rp_current->seq = ++tfm.rp_seq;
  }
  pthread_mutex_unlock(&tfm.mu);
  if (tfm.subscribed && tfm.cb_launch) {
    cb.callbackSite = CUPTI_API_EXIT;
    tfm.cb(tfm.ud, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
  }
}

/* cudaProfilerStart (start != 0) or cudaProfilerStop: the runtime
 * callback's entry and exit. */
static inline void tfm_profiler_call(int start) {
  if (!tfm.subscribed || !tfm.cb_profiler) return;
  CUpti_CallbackData cb;
  memset(&cb, 0, sizeof cb);
  cb.functionName = start ? "cudaProfilerStart" : "cudaProfilerStop";
  CUpti_CallbackId id = start ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                              : CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000;
  cb.callbackSite = CUPTI_API_ENTER;
  tfm.cb(tfm.ud, CUPTI_CB_DOMAIN_RUNTIME_API, id, &cb);
  cb.callbackSite = CUPTI_API_EXIT;
  tfm.cb(tfm.ud, CUPTI_CB_DOMAIN_RUNTIME_API, id, &cb);
}

/* NVTX calls as CUPTI reports them (once, after the call).  Domains are
 * the handles (nvtxDomainHandle_t)k, k > 0; NULL is the default domain. */
static inline void tfm_nvtx(CUpti_CallbackId id, const char *fn, const void *params,
                            const void *ret) {
  if (!tfm.subscribed || !tfm.cb_nvtx) return;
  CUpti_NvtxData d = {fn, params, ret};
  tfm.cb(tfm.ud, CUPTI_CB_DOMAIN_NVTX, id, &d);
}
static inline nvtxDomainHandle_t tfm_nvtx_domain(uintptr_t k, const char *name) {
  nvtxDomainCreateA_params p = {name};
  nvtxDomainHandle_t h = (nvtxDomainHandle_t)k;
  tfm_nvtx(CUPTI_CBID_NVTX_nvtxDomainCreateA, "nvtxDomainCreateA", &p, &h);
  return h;
}
static inline void tfm_nvtx_attr(nvtxEventAttributes_v2 *a, const char *msg) {
  memset(a, 0, sizeof *a);
  a->version = 2;
  a->size = (uint16_t)sizeof *a;
  a->messageType = NVTX_MESSAGE_TYPE_ASCII;
  a->message.ascii = msg;
}
/* nvtxRangePushA(msg) with domain NULL, else nvtxDomainRangePushEx. */
static inline void tfm_nvtx_push(nvtxDomainHandle_t dom, const char *msg) {
  int depth = 0;
  if (!dom) {
    nvtxRangePushA_params p = {msg};
    tfm_nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, "nvtxRangePushA", &p, &depth);
    return;
  }
  nvtxEventAttributes_v2 a;
  tfm_nvtx_attr(&a, msg);
  nvtxDomainRangePushEx_params p;
  memset(&p, 0, sizeof p);
  p.domain = dom;
  p.core.eventAttrib = &a;
  tfm_nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &p, &depth);
}
static inline void tfm_nvtx_pop(nvtxDomainHandle_t dom) {
  int depth = 0;
  if (!dom) {
    tfm_nvtx(CUPTI_CBID_NVTX_nvtxRangePop, "nvtxRangePop", NULL, &depth);
    return;
  }
  nvtxDomainRangePop_params p = {dom};
  tfm_nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePop, "nvtxDomainRangePop", &p, &depth);
}
/* nvtxRangeStartEx (ASCII) in the default domain: the range's id. */
static inline uint64_t tfm_nvtx_start(const char *msg) {
  nvtxEventAttributes_v2 a;
  tfm_nvtx_attr(&a, msg);
  nvtxRangeStartEx_params p = {&a};
  uint64_t id = ++tfm.nvtx_id;
  tfm_nvtx(CUPTI_CBID_NVTX_nvtxRangeStartEx, "nvtxRangeStartEx", &p, &id);
  return id;
}
static inline void tfm_nvtx_end(uint64_t id) {
  nvtxRangeEnd_params p = {id};
  tfm_nvtx(CUPTI_CBID_NVTX_nvtxRangeEnd, "nvtxRangeEnd", &p, NULL);
}

static inline void tfm_fill(tbe__cupti_metrics_api *m) {
  memset(m, 0, sizeof *m);
  m->subscribe = tfm_subscribe;
  m->unsubscribe = tfm_unsubscribe;
  m->enable_callback = tfm_enable_callback;
  m->get_device_id = tfm_device_id;
  m->profiler_init = tfm_prof_init;
  m->chip_name = tfm_chip;
  m->pm_availability = tfm_pm_avail;
  m->rp_availability = tfm_rp_avail;
  m->pm_enable = tfm_pm_enable;
  m->pm_disable = tfm_pm_disable;
  m->pm_set_config = tfm_pm_config;
  m->pm_start = tfm_pm_start;
  m->pm_stop = tfm_pm_stop;
  m->pm_decode = tfm_pm_decode;
  m->pm_data_size = tfm_pm_size;
  m->pm_data_init = tfm_pm_init;
  m->pm_data_info = tfm_pm_info;
  m->pm_sample_info = tfm_pm_sample;
  m->rp_enable = tfm_rp_enable;
  m->rp_disable = tfm_rp_disable;
  m->rp_set_config = tfm_rp_config_keep;
  m->rp_start = tfm_rp_start;
  m->rp_stop = tfm_rp_stop;
  m->rp_decode = tfm_rp_decode;
  m->rp_data_size = tfm_rp_size;
  m->rp_data_init = tfm_rp_init;
  m->rp_data_info = tfm_rp_info;
  m->host.initialize = tfm_host_init;
  m->host.deinitialize = tfm_host_deinit;
  m->host.metric_properties = tfm_host_props;
  m->host.add_metrics = tfm_host_add;
  m->host.config_image_size = tfm_host_image_size;
  m->host.config_image = tfm_host_image;
  m->host.num_passes = tfm_host_passes;
  m->host.evaluate = tfm_host_eval;
}

#endif /* TBE_COLLECT_COLLECTOR_H */

#endif
