/* collector_decode.c: each record of a completed CUPTI activity buffer
 * becomes one spool item (spool.h) in the batch that the collector's
 * background thread writes as one frame (collector_decode.h).
 *
 * The per-record path is decode_record's switch over the kinds; each kind's
 * fields are copied by its put_ function (static, one caller each, so the
 * compiler inlines them).  Timestamps are CUPTI's unsigned ns, saturated to
 * the spool's signed ones; names are interned into spool ids. */
#include "collect/collector_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

static int64_t ts64(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

#define ITEM(type, var) tbe__spool_item(dc->batch, type, &(var), sizeof(var))

/* ---- noisy API calls ---- */

static const char *const noisy_runtime[] = {
    "cudaGetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetDeviceCount",
    "cudaDeviceGetAttribute", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo",
    "cudaPointerGetAttributes", NULL};
static const char *const noisy_driver[] = {
    "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGet", "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxGetState", "cuKernelGetAttribute", "cuGetProcAddress",
    "cuGetErrorString", NULL};

int tbe__api_is_noisy(int driver, const char *name, size_t len) {
  const char *const *l = driver ? noisy_driver : noisy_runtime;
  for (; *l; l++)
    if (strlen(*l) == len && memcmp(*l, name, len) == 0) return 1;
  return 0;
}

/* ---- string interning ---- */

static uint32_t intern(tbe__decoder *dc, const char *s) {
  return s ? tbe__decoder_str_n(dc, s, strlen(s)) : 0;
}

uint32_t tbe__decoder_str(tbe__decoder *dc, const char *s) { return intern(dc, s); }

uint32_t tbe__decoder_str_n(tbe__decoder *dc, const char *s, size_t len) {
  strtab *t = &dc->strs;
  if (!t->ready) {
    tbe__allocator_init(&t->a, NULL);
    tbe__intern_init(&t->in, &t->a, TBE__SEED_PROCESS);
    t->ready = 1;
  }
  uint32_t id;
  int added;
  if (tbe__intern_add(&t->in, s, len, &id, &added)) return 0;
  if (added) tbe__spool_str(dc->batch, id + 1, s, len);
  return id + 1;
}

static void strtab_free(strtab *t) {
  if (t->ready) tbe__intern_deinit(&t->in);
  t->ready = 0;
}

/* ---- record names ---- */

/* Name of a runtime/driver call: cached spool id, UINT32_MAX if filtered. */
static uint32_t api_name(tbe__decoder *dc, int driver, uint32_t cbid) {
  uint32_t *slot = cbid < 1024 ? &dc->api_names[driver][cbid] : NULL;
  if (slot && *slot) return *slot;
  const char *name = NULL;
  char tmp[160];
  if (dc->get_callback_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
                              cbid, &name) != CUPTI_SUCCESS ||
      !name) {
    snprintf(tmp, sizeof tmp, "%s_cbid_%u", driver ? "cuDriver" : "cudaRuntime", cbid);
  } else {
    /* Drop the version suffix: cudaLaunchKernel_v7000 -> cudaLaunchKernel. */
    size_t n = strlen(name);
    const char *v = strstr(name, "_v");
    while (v) {
      const char *d = v + 2;
      while (*d >= '0' && *d <= '9') d++;
      if (*d == '\0' && d > v + 2) {
        n = (size_t)(v - name);
        break;
      }
      v = strstr(v + 2, "_v");
    }
    if (n >= sizeof tmp) n = sizeof tmp - 1;
    memcpy(tmp, name, n);
    tmp[n] = '\0';
  }
  uint32_t id;
  if (!dc->keep_noisy && tbe__api_is_noisy(driver, tmp, strlen(tmp)))
    id = UINT32_MAX;
  else
    id = intern(dc, tmp);
  if (slot && id) *slot = id;
  return id;
}

/* ---- records -> spool items ---- */

/* A kernel (plain or concurrent). */
static void put_kernel(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
  tbe__sp_kernel o;
  memset(&o, 0, sizeof o);
  o.start = ts64(k->start);
  o.end = ts64(k->end);
  o.corr = k->correlationId;
  o.device = k->deviceId;
  o.context = k->contextId;
  o.stream = k->streamId;
  o.name = intern(dc, k->name);
  o.grid[0] = k->gridX, o.grid[1] = k->gridY, o.grid[2] = k->gridZ;
  o.block[0] = k->blockX, o.block[1] = k->blockY, o.block[2] = k->blockZ;
  o.static_shared = k->staticSharedMemory;
  o.dynamic_shared = k->dynamicSharedMemory;
  o.registers = k->registersPerThread;
  o.graph_id = k->graphId;
  o.launch_type = k->launchType;
  ITEM(TBE__SP_KERNEL, o);
}

/* A copy within one device or between host and device. */
static void put_memcpy(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
  tbe__sp_memcpy o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.bytes = m->bytes;
  o.corr = m->correlationId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  o.src_device = o.dst_device = -1;
  o.copy_kind = m->copyKind;
  o.src_kind = m->srcKind;
  o.dst_kind = m->dstKind;
  o.flags = m->flags;
  o.graph_id = m->graphId;
  ITEM(TBE__SP_MEMCPY, o);
}

/* A copy between two devices (peer to peer). */
static void put_memcpy_p2p(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)r;
  tbe__sp_memcpy o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.bytes = m->bytes;
  o.corr = m->correlationId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  o.src_device = (int32_t)m->srcDeviceId;
  o.dst_device = (int32_t)m->dstDeviceId;
  o.copy_kind = m->copyKind;
  o.src_kind = m->srcKind;
  o.dst_kind = m->dstKind;
  o.flags = m->flags;
  o.graph_id = m->graphId;
  ITEM(TBE__SP_MEMCPY, o);
}

/* A memset. */
static void put_memset(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
  tbe__sp_memset o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.bytes = m->bytes;
  o.corr = m->correlationId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  o.value = m->value;
  o.mem_kind = m->memoryKind;
  o.flags = m->flags;
  ITEM(TBE__SP_MEMSET, o);
}

/* A runtime or driver API call; noisy ones (tbe__api_is_noisy) are left out. */
static void put_api_call(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
  int driver = r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
  uint32_t name = api_name(dc, driver, a->cbid);
  if (name == UINT32_MAX) return; /* filtered noisy call */
  tbe__sp_api o;
  memset(&o, 0, sizeof o);
  o.start = ts64(a->start);
  o.end = ts64(a->end);
  o.corr = a->correlationId;
  o.pid = a->processId;
  o.tid = a->threadId;
  o.cbid = a->cbid;
  o.ret = a->returnValue;
  o.name = name;
  o.domain = driver ? TBE__API_DRIVER : TBE__API_RUNTIME;
  ITEM(TBE__SP_API, o);
}

/* A synchronization (stream, event, context). */
static void put_sync(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)r;
  tbe__sp_sync o;
  memset(&o, 0, sizeof o);
  o.start = ts64(s->start);
  o.end = ts64(s->end);
  o.corr = s->correlationId;
  o.context = s->contextId;
  o.stream = s->streamId;
  o.type = (uint32_t)s->type;
  o.event = s->cudaEventId;
  o.ret = s->returnValue;
  ITEM(TBE__SP_SYNC, o);
}

/* An NVTX mark, or one end of an NVTX range. */
static void put_marker(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)r;
  tbe__sp_marker o;
  memset(&o, 0, sizeof o);
  o.ts = ts64(m->timestamp);
  o.id = m->id;
  o.flags = (uint32_t)m->flags;
  o.obj_kind = (uint32_t)m->objectKind;
  if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    o.obj[0] = m->objectId.pt.processId;
    o.obj[1] = m->objectId.pt.threadId;
  } else {
    o.obj[0] = m->objectId.dcs.deviceId;
    o.obj[1] = m->objectId.dcs.contextId;
    o.obj[2] = m->objectId.dcs.streamId;
  }
  o.name = intern(dc, m->name);
  o.domain = intern(dc, m->domain);
  ITEM(TBE__SP_MARKER, o);
}

/* The color, category and payload of an NVTX marker. */
static void put_marker_data(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityMarkerData2 *m = (const CUpti_ActivityMarkerData2 *)r;
  tbe__sp_marker_data o;
  memset(&o, 0, sizeof o);
  memcpy(&o.payload, &m->payload, sizeof o.payload);
  o.id = m->id;
  o.flags = (uint32_t)m->flags;
  o.payload_kind = (uint32_t)m->payloadKind;
  o.color = m->color;
  o.category = m->category;
  o.domain_id = m->cuptiDomainId;
  ITEM(TBE__SP_MARKER_DATA, o);
}

/* CUPTI's own overhead. */
static void put_overhead(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityOverhead3 *m = (const CUpti_ActivityOverhead3 *)r;
  tbe__sp_overhead o;
  memset(&o, 0, sizeof o);
  o.start = ts64(m->start);
  o.end = ts64(m->end);
  o.kind = (uint32_t)m->overheadKind;
  o.obj_kind = (uint32_t)m->objectKind;
  if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    o.obj[0] = m->objectId.pt.processId;
    o.obj[1] = m->objectId.pt.threadId;
  } else {
    o.obj[0] = m->objectId.dcs.deviceId;
    o.obj[1] = m->objectId.dcs.contextId;
    o.obj[2] = m->objectId.dcs.streamId;
  }
  o.corr = m->correlationId;
  /* The client owns overheadData (header: "must be freed by client"). */
  if (m->overheadData) free(m->overheadData);
  ITEM(TBE__SP_OVERHEAD, o);
}

/* A device and its properties. */
static void put_device(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityDevice5 *d = (const CUpti_ActivityDevice5 *)r;
  tbe__sp_device o;
  memset(&o, 0, sizeof o);
  o.memory_bytes = ts64(d->globalMemorySize);
  o.bandwidth_kbps = ts64(d->globalMemoryBandwidth);
  o.id = d->id;
  o.name = intern(dc, d->name);
  o.sm_count = d->numMultiprocessors;
  o.clock_khz = d->coreClockRate;
  o.cc_major = d->computeCapabilityMajor;
  o.cc_minor = d->computeCapabilityMinor;
  o.max_threads_per_block = d->maxThreadsPerBlock;
  o.max_warps_per_sm = d->maxWarpsPerMultiprocessor;
  o.regs_per_block = d->maxRegistersPerBlock;
  o.regs_per_sm = d->maxRegistersPerMultiprocessor;
  o.warp_size = d->numThreadsPerWarp;
  o.shared_per_block = d->maxSharedMemoryPerBlock;
  o.shared_per_sm = d->maxSharedMemoryPerMultiprocessor;
  ITEM(TBE__SP_DEVICE, o);
  /* its UUID: conversion places NVML's samples (named by UUID) on it */
  tbe__sp_device_uuid u;
  memset(&u, 0, sizeof u);
  u.device = d->id;
  memcpy(u.uuid, d->uuid.bytes, sizeof u.uuid);
  ITEM(TBE__SP_DEVICE_UUID, u);
}

/* A context (its device). */
static void put_context(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityContext3 *c = (const CUpti_ActivityContext3 *)r;
  tbe__sp_context o = {c->contextId, c->deviceId};
  ITEM(TBE__SP_CONTEXT, o);
}

/* A memory allocation or release of any kind (device, pinned or pageable
 * host, managed, from a stream-ordered pool). */
static void put_memory(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)r;
  tbe__sp_memory o;
  memset(&o, 0, sizeof o);
  o.ts = ts64(m->timestamp);
  o.addr = m->address;
  o.bytes = m->bytes;
  o.op = (uint32_t)m->memoryOperationType;
  o.mem_kind = (uint32_t)m->memoryKind;
  o.corr = m->correlationId;
  o.pid = m->processId;
  o.device = m->deviceId;
  o.context = m->contextId;
  o.stream = m->streamId;
  o.is_async = m->isAsync ? 1 : 0;
  /* CUPTI fills the pool's configuration for pool allocations only */
  uint32_t pt = (uint32_t)m->memoryPoolConfig.memoryPoolType;
  o.pool_type = (uint8_t)(pt <= 255 ? pt : 0);
  ITEM(TBE__SP_MEMORY, o);
}

/* The name of a host thread (other objects are left out). */
static void put_thread_name(tbe__decoder *dc, const CUpti_Activity *r) {
  const CUpti_ActivityName *n = (const CUpti_ActivityName *)r;
  if (n->objectKind != CUPTI_ACTIVITY_OBJECT_THREAD) return;
  tbe__sp_thread_name o = {n->objectId.pt.processId, n->objectId.pt.threadId,
                           intern(dc, n->name)};
  ITEM(TBE__SP_THREAD_NAME, o);
}

/* One record into the batch: the switch over the kinds is the whole
 * per-record path; each kind's fields are copied by its put_ function above
 * (static, one caller each, so the compiler inlines them). */
static void decode_record(tbe__decoder *dc, const CUpti_Activity *r) {
  dc->stats->records++;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: put_kernel(dc, r); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: put_memcpy(dc, r); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: put_memcpy_p2p(dc, r); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: put_memset(dc, r); break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: put_api_call(dc, r); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: put_sync(dc, r); break;
    case CUPTI_ACTIVITY_KIND_MARKER: put_marker(dc, r); break;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: put_marker_data(dc, r); break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: put_overhead(dc, r); break;
    case CUPTI_ACTIVITY_KIND_DEVICE: put_device(dc, r); break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: put_context(dc, r); break;
    case CUPTI_ACTIVITY_KIND_MEMORY2: put_memory(dc, r); break;
    case CUPTI_ACTIVITY_KIND_NAME: put_thread_name(dc, r); break;
    default:
      dc->stats->unknown_records++;
      break;
  }
}

/* ---- buffers ---- */

int tbe__decoder_buffer(tbe__decoder *dc, uint8_t *buf, size_t valid, uint64_t *records) {
  uint64_t before = dc->stats->records;
  CUpti_Activity *rec = NULL;
  CUptiResult bad = CUPTI_SUCCESS;
  while (valid) {
    CUptiResult r = dc->get_next_record(buf, valid, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break; /* the end */
    if (r != CUPTI_SUCCESS) {
      /* (INVALID_KIND: a record this CUPTI cannot size) the walk ends here;
       * what follows in the buffer is lost: the caller says so. */
      bad = r;
      break;
    }
    decode_record(dc, rec);
  }
  dc->stats->buffers++;
  if (records) *records = dc->stats->records - before;
  return (int)bad;
}

void tbe__decoder_redefine(tbe__decoder *dc) {
  const strtab *t = &dc->strs;
  for (size_t i = 0; t->ready && i < t->in.n; i++)
    tbe__spool_str(dc->batch, (uint32_t)i + 1, tbe__intern_str(&t->in, (uint32_t)i),
                   tbe__intern_len(&t->in, (uint32_t)i));
}

void tbe__decoder_reset(tbe__decoder *dc) {
  strtab_free(&dc->strs);
  memset(dc->api_names, 0, sizeof dc->api_names);
}
