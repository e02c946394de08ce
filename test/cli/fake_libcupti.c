/* fake_libcupti.c: a stand-in for libcupti, so that test/cli/test_profile.sh
 * can run `tbexport -- CMD` end to end without a GPU.
 *
 * The test points TBEXPORT_CUPTI_LIB at this library; CMD (a Python script)
 * loads libtbexport_inject.so as the CUDA driver would and calls its
 * InitializeInjection, whose collector then loads this library as libcupti.
 * The script makes the "GPU activity" itself through the fake_cupti_*
 * functions below, which write real CUPTI record structs (from the toolkit's
 * headers) into the collector's buffers, as CUPTI does, when their kind is
 * enabled.  The CUPTI functions the collector calls are implemented as far
 * as it uses them: buffers are requested through its callback, completed
 * when full and on every flush, walked by record size; timestamps are
 * CLOCK_REALTIME nanoseconds, for records and cuptiGetTimestamp alike.
 *
 * Records must be emitted from one thread at a time (the script has one);
 * names are copied and kept, as CUPTI's stay valid until decoded. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "fake_cupti.h"

#define FAKE_API __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc req;
static CUpti_BuffersCallbackCompleteFunc done;
static uint8_t *cur;
static size_t cur_size, cur_used;
static int enabled[64];

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void complete_locked(void) {
  if (!cur) return;
  uint8_t *b = cur;
  size_t used = cur_used;
  cur = NULL;
  done(NULL, 0, b, cur_size, used);
}

/* Appends one record when its kind is on; 1 if kept. */
static int emit(const void *rec, size_t size, CUpti_ActivityKind kind) {
  pthread_mutex_lock(&mu);
  int kept = 0;
  if ((unsigned)kind < 64 && enabled[kind] && req) {
    if (cur && cur_used + size > cur_size) complete_locked();
    if (!cur) {
      size_t maxrec = 0;
      req(&cur, &cur_size, &maxrec);
      cur_used = 0;
    }
    if (cur && cur_size >= size) {
      memcpy(cur + cur_used, rec, size);
      cur_used += size;
      kept = 1;
    }
  }
  pthread_mutex_unlock(&mu);
  return kept;
}

static const char *keep_name(const char *s) { return s ? strdup(s) : NULL; }

/* ---- the CUPTI functions the collector loads ---- */

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  pthread_mutex_lock(&mu);
  if ((unsigned)kind < 64) enabled[kind] = 1;
  pthread_mutex_unlock(&mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  pthread_mutex_lock(&mu);
  if ((unsigned)kind < 64) enabled[kind] = 0;
  pthread_mutex_unlock(&mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                   CUpti_BuffersCallbackCompleteFunc d) {
  req = r;
  done = d;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                               CUpti_Activity **record) {
  return tf_next_record(buffer, valid, record);
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
                                                      size_t *dropped) {
  (void)ctx;
  (void)stream;
  *dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&mu);
  complete_locked();
  pthread_mutex_unlock(&mu);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                         const char **name) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    *name = "cudaLaunchKernel_v7000";
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp) {
  *timestamp = now_ns();
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

/* ---- what the test script calls ---- */

FAKE_API uint64_t fake_cupti_now(void) { return now_ns(); }

/* A cudaLaunchKernel call on the calling thread. */
FAKE_API int fake_cupti_launch(uint32_t corr, uint64_t start, uint64_t end) {
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = start;
  a.end = end;
  a.processId = (uint32_t)getpid();
  a.threadId = (uint32_t)gettid();
  a.correlationId = corr;
  return emit(&a, sizeof a, CUPTI_ACTIVITY_KIND_RUNTIME);
}

/* A kernel on device 0, stream 7. */
FAKE_API int fake_cupti_kernel(uint32_t corr, uint64_t start, uint64_t end, const char *name) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = 128, k.blockY = k.blockZ = 1;
  k.correlationId = corr;
  k.name = keep_name(name);
  return emit(&k, sizeof k, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

/* An NVTX push/pop range [start, end] on the calling thread (ID unique per
 * range; DOMAIN may be NULL). */
FAKE_API int fake_cupti_range(uint32_t id, uint64_t start, uint64_t end, const char *name,
                              const char *domain) {
  CUpti_ActivityMarker2 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  m.timestamp = start;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = (uint32_t)getpid();
  m.objectId.pt.threadId = (uint32_t)gettid();
  m.name = keep_name(name);
  m.domain = keep_name(domain);
  int kept = emit(&m, sizeof m, CUPTI_ACTIVITY_KIND_MARKER);
  m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  m.timestamp = end;
  m.name = m.domain = NULL;
  return emit(&m, sizeof m, CUPTI_ACTIVITY_KIND_MARKER) && kept;
}

/* CUPTI's own overhead ("Activity buffer request") on the calling thread. */
FAKE_API int fake_cupti_overhead(uint64_t start, uint64_t end) {
  CUpti_ActivityOverhead3 o;
  memset(&o, 0, sizeof o);
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.processId = (uint32_t)getpid();
  o.objectId.pt.threadId = (uint32_t)gettid();
  o.start = start;
  o.end = end;
  return emit(&o, sizeof o, CUPTI_ACTIVITY_KIND_OVERHEAD);
}
