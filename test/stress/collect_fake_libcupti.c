/* collect_fake_libcupti.c: a stand-in for libcupti, for stress_collect_crash.
 *
 * `tbexport -- CMD` with TBEXPORT_CUPTI_LIB pointing here makes the
 * injection library (libtbexport_inject.so) load this instead of CUPTI.  It
 * exports the CUPTI functions the collector looks up (cupti_load.c), backed
 * by the per-thread buffer model of test/unit/fake_cupti.h, and one of its
 * own, fake_cupti_launch(corr), which a program calls to emit a
 * cudaLaunchKernel API record and its kernel (timestamps from the clock),
 * as CUPTI would for a launch.  No GPU needed. */
#include <cupti.h>
#include <time.h>

#include "fake_cupti.h"

#define API __attribute__((visibility("default")))

__attribute__((constructor)) static void fake_init(void) { tf_reset(); }

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

API CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  (void)kind;
  return CUPTI_SUCCESS;
}

API CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  (void)kind;
  return CUPTI_SUCCESS;
}

API CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                        CUpti_BuffersCallbackCompleteFunc done) {
  return tf_register(req, done);
}

API CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                    CUpti_Activity **record) {
  return tf_next_record(buffer, valid, record);
}

API CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
                                                           size_t *dropped) {
  return tf_get_num_dropped(context, stream, dropped);
}

API CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) { return tf_flush(flag); }

API CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size,
                                                   void *value) {
  (void)attr;
  (void)size;
  (void)value;
  return CUPTI_SUCCESS;
}

API CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                              const char **name) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    *name = "cudaLaunchKernel_v7000";
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

API CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version) {
  *version = 130001;
  return CUPTI_SUCCESS;
}

API CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp) {
  *timestamp = now_ns();
  return CUPTI_SUCCESS;
}

/* A launch on the calling thread: its API record and its kernel. */
API int fake_cupti_launch(uint32_t corr) {
  uint64_t ts = now_ns();
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = ts;
  a.end = ts + 2000;
  a.processId = 1;
  a.threadId = 1;
  a.correlationId = corr;
  int ok = tf_emit(&a, sizeof a);
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = ts + 3000;
  k.end = ts + 8000;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = 256, k.blockY = k.blockZ = 1;
  k.correlationId = corr;
  k.name = "fake_kernel";
  return ok & tf_emit(&k, sizeof k);
}
