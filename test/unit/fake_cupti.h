/* fake_cupti.h: what the collector's fakes of CUPTI share (test_collect.c,
 * test/stress/stress_collect_threads.c).
 *
 * A fake fills the collector's buffers with real CUPTI record structs laid
 * end to end; tf_next_record walks them the way cuptiActivityGetNextRecord
 * does, by the size of each record's kind.  Include after <cupti.h> (the
 * collector's headers bring it in). */
#ifndef TBE_TEST_FAKE_CUPTI_H
#define TBE_TEST_FAKE_CUPTI_H

#include <stddef.h>
#include <stdint.h>

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

#endif
