/* stress_collect_threads.c: the CUPTI collector under concurrent load
 * (issue 6, "Load and concurrency"), against a fake CUPTI, no GPU needed;
 * run in the ThreadSanitizer build too.
 *
 * The real collector (collect/collector.c) is started with the fake CUPTI
 * of test/unit/fake_cupti.h, whose per-thread buffers are filled by P
 * application threads at once (default 4; $TBE_STRESS_THREADS): each
 * thread emits R kernel records (default 100,000; $TBE_STRESS_RECORDS),
 * each with its cudaLaunchKernel API record, requests buffers from the
 * collector and completes full ones itself (buffer_requested /
 * buffer_completed called concurrently from several threads).  The
 * collector's background thread decodes and writes the spool meanwhile and
 * flushes every millisecond; the fake's flush completes the threads'
 * partly filled buffers (taking each thread's lock, like CUPTI), so
 * completions also come from the background thread.  Buffers are small
 * (64 KiB, 8 MiB held at most) so the free stack cycles constantly and
 * requests are sometimes declined: the fake then drops the record and
 * counts it, like CUPTI.  After the threads end, the collector is stopped
 * and the spool converted; checks: every kernel and API record not dropped
 * is in the trace exactly once (correlation ids), the collector's dropped
 * count equals the fake's, the buffers' memory never exceeded the cap (the
 * fake's count of the bytes it held, and the collector's), every buffer
 * came zeroed, and the capture ended cleanly.  Built wherever the
 * collector is, with or without the CUDA toolkit (collect/cupti_abi.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collector.h"
#include "import/spool.h"
#include "fake_cupti.h"
#include "stress_util.h"
#include "tbexport.h"
#include "tbexport/error.h"
#include "tbexport/profiler.h"

#define T0 1700000000000000000ull

static struct {
  uint64_t dropped_kernels[TF_MAX_THREADS], dropped_apis[TF_MAX_THREADS];
  int np;
  atomic_int stopping;   /* the clock jumps past the records (f_ts) */
} F;

static CUptiResult f_enable(CUpti_ActivityKind k) {
  (void)k;
  return CUPTI_SUCCESS;
}
static CUptiResult f_attr(CUpti_ActivityAttribute a, size_t *size, void *v) {
  (void)a;
  (void)size;
  (void)v;
  return CUPTI_SUCCESS;
}
static CUptiResult f_cbname(CUpti_CallbackDomain d, uint32_t cbid, const char **name) {
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    *name = "cudaLaunchKernel_v7000";
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}
static CUptiResult f_version(uint32_t *v) {
  *v = 130001;
  return CUPTI_SUCCESS;
}

/* CUPTI's clock: T0 until the producers are done, then past every record
 * they emitted, so that the collection window the collector records
 * brackets them, as with the real clock. */
static CUptiResult f_ts(uint64_t *ts) {
  *ts = T0 + (atomic_load(&F.stopping) ? 1000000000000ull : 0);
  return CUPTI_SUCCESS;
}

static const tbe__cupti_api fake_api = {
    .activity_enable = f_enable,
    .activity_disable = f_enable,
    .register_callbacks = tf_register,
    .get_next_record = tf_next_record,
    .get_num_dropped = tf_get_num_dropped,
    .flush_all = tf_flush,
    .set_attribute = f_attr,
    .get_callback_name = f_cbname,
    .get_version = f_version,
    .get_timestamp = f_ts,
};

static long R;
static const char *const knames[4] = {"stress_gemm", "stress_relu", "stress_softmax",
                                      "stress_reduce"};

/* Correlation ids: producer in the top byte, sequence below. */
static uint32_t corr_of(int p, long i) { return ((uint32_t)p << 24) | (uint32_t)(i + 1); }

static void *producer_main(void *arg) {
  int id = (int)(intptr_t)arg;
  for (long i = 0; i < R; i++) {
    uint64_t ts = T0 + ((uint64_t)i * (uint64_t)F.np + (uint64_t)id) * 1000u;
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = ts;
    a.end = ts + 300;
    a.processId = 4242;
    a.threadId = 5000 + (uint32_t)id;
    a.correlationId = corr_of(id, i);
    if (!tf_emit(&a, sizeof a)) F.dropped_apis[id]++;
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = ts + 500;
    k.end = ts + 900;
    k.deviceId = 0;
    k.contextId = 1;
    k.streamId = 7 + (uint32_t)id;
    k.gridX = k.gridY = k.gridZ = 1;
    k.blockX = 128, k.blockY = k.blockZ = 1;
    k.registersPerThread = 32;
    k.correlationId = corr_of(id, i);
    k.name = knames[i % 4];
    if (!tf_emit(&k, sizeof k)) F.dropped_kernels[id]++;
  }
  return NULL;
}

int main(void) {
  F.np = (int)st_env_long("TBE_STRESS_THREADS", 4);
  R = st_env_long("TBE_STRESS_RECORDS", 100000);
  if (F.np > TF_MAX_THREADS) F.np = TF_MAX_THREADS;
  if (R > 0xffffff - 1) R = 0xffffff - 1;
  printf("stress_collect_threads: %d application threads x %ld kernels (+ their API records)\n",
         F.np, R);
  tf_reset();
  char *dir = st_mkdtemp("tbe-collect-threads");
  char spool[4200];
  snprintf(spool, sizeof spool, "%s/4242.spool", dir);
  tbe__collect_config c;
  memset(&c, 0, sizeof c);
  c.trace = TBE_TRACE_CUDA;
  c.buffer_size = 64 * 1024;
  c.buffer_cap = 128 * c.buffer_size;
  c.flush_ms = 1;
  c.spool_path = spool;
  int rc = tbe__collector_start(&fake_api, &c);
  if (rc) {
    printf("FAIL: collector start: %s\n", tbe_strerror(rc));
    return 1;
  }
  double t0 = st_now();
  pthread_t th[TF_MAX_THREADS];
  for (int i = 0; i < F.np; i++) pthread_create(&th[i], NULL, producer_main, (void *)(intptr_t)i);
  for (int i = 0; i < F.np; i++) pthread_join(th[i], NULL);
  tbe__sp_stats st;
  atomic_store(&F.stopping, 1);
  rc = tbe__collector_stop(&st);
  double dt = st_now() - t0;
  if (rc) st_fail("collector stop: %s", tbe_strerror(rc));
  uint64_t dk = 0, da = 0;
  for (int i = 0; i < F.np; i++) dk += F.dropped_kernels[i], da += F.dropped_apis[i];

  tbe_trace *t;
  if (tbe_trace_create(&t, NULL) != 0) return 2;
  tbe__convert_info info;
  memset(&info, 0, sizeof info);
  rc = tbe__spool_file_to_trace(spool, NULL, t, &info);
  uint64_t nk = 0, na = 0, dup = 0, bad = 0;
  if (rc) {
    st_fail("conversion: %s", tbe_strerror(rc));
  } else {
    /* one bit per (producer, sequence, kind) */
    size_t nbits = (size_t)F.np * (size_t)R * 2;
    uint8_t *seen = calloc(nbits / 8 + 1, 1);
    for (size_t i = 0; i < t->nevents; i++) {
      const tbe_event *e = &t->events[i];
      if (e->kind != TBE_EV_KERNEL && e->kind != TBE_EV_RUNTIME) continue;
      uint64_t p = e->correlation >> 24, s = (e->correlation & 0xffffff) - 1;
      if (p >= (uint64_t)F.np || s >= (uint64_t)R) {
        bad++;
        continue;
      }
      size_t bit = ((size_t)p * (size_t)R + (size_t)s) * 2 + (e->kind == TBE_EV_KERNEL);
      if (seen[bit / 8] & (1u << (bit % 8))) dup++;
      seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
      if (e->kind == TBE_EV_KERNEL) nk++;
      else na++;
    }
    free(seen);
    uint64_t want = (uint64_t)F.np * (uint64_t)R;
    if (nk + dk != want || na + da != want)
      st_fail("kernels %llu + dropped %llu, API calls %llu + dropped %llu; want %llu each",
              (unsigned long long)nk, (unsigned long long)dk, (unsigned long long)na,
              (unsigned long long)da, (unsigned long long)want);
    if (dup || bad) st_fail("%llu duplicated and %llu unknown records", (unsigned long long)dup,
                            (unsigned long long)bad);
    if (st.cupti_dropped != dk + da || t->dropped_records != dk + da)
      st_fail("the collector counted %llu dropped records (trace: %llu); the fake dropped %llu",
              (unsigned long long)st.cupti_dropped, (unsigned long long)t->dropped_records,
              (unsigned long long)(dk + da));
    if (info.ended_early) st_fail("the capture says it ended early");
    if (atomic_load(&tf.held_peak) > c.buffer_cap || st.buffer_bytes > c.buffer_cap)
      st_fail("buffers held %zu bytes (the collector counted %llu); the cap is %zu",
              (size_t)atomic_load(&tf.held_peak), (unsigned long long)st.buffer_bytes,
              c.buffer_cap);
    if (atomic_load(&tf.bad))
      st_fail("%d buffers came misaligned or not zeroed", atomic_load(&tf.bad));
  }
  tbe_trace_free(t);
  printf("records: %llu kernels + %llu API calls in the trace, %llu dropped at the buffer cap "
         "(%llu buffers completed, %llu requests declined) in %.2f s\n",
         (unsigned long long)nk, (unsigned long long)na, (unsigned long long)(dk + da),
         (unsigned long long)st.buffers, (unsigned long long)st.buffers_declined, dt);
  printf("lost (neither in the trace nor counted as dropped): %lld; failures: %lu\n",
         (long long)((uint64_t)F.np * (uint64_t)R * 2) - (long long)(nk + na + dk + da),
         st_failures);
  st_rmtree(dir);
  free(dir);
  return st_failures ? 1 : 0;
}
