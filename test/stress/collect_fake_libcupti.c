/* collect_fake_libcupti.c: a stand-in for libcupti, for stress_collect_crash
 * and test/cli/test_profile.sh.
 *
 * `tbexport -- CMD` with TBEXPORT_CUPTI_LIB pointing here makes the
 * injection library (libtbexport_inject.so) load this instead of CUPTI.  It
 * exports the CUPTI functions the collector looks up (cupti_load.c), backed
 * by the per-thread buffer model of test/unit/fake_cupti.h, and functions of
 * its own with which a program makes its "GPU activity": real CUPTI record
 * structs on the calling thread, timestamps of CLOCK_REALTIME, the clock of
 * cuptiGetTimestamp too.  fake_cupti_launch(corr) emits a cudaLaunchKernel
 * API record and its kernel at the current time, as CUPTI would for a
 * launch; fake_cupti_api, _kernel, _range (NVTX push/pop), _overhead and
 * _memory (an allocation or release) emit one record each at the times given (test_profile.sh's Python
 * program places them).  Names are copied and kept, as CUPTI's stay valid
 * until decoded.  No GPU needed. */
#include "collect/cupti_abi.h" /* <cupti.h>, or our declarations of it */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cupti.h"

#define API __attribute__((visibility("default")))

__attribute__((constructor)) static void fake_init(void) { tf_reset(); }

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Whether CUPTI_ACTIVITY_KIND_MEMORY2 is on: fake_cupti_memory records
 * nothing otherwise, as CUPTI (the other kinds are recorded regardless). */
static int memory_on;

API CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) __atomic_store_n(&memory_on, 1, __ATOMIC_RELAXED);
  return CUPTI_SUCCESS;
}

API CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) __atomic_store_n(&memory_on, 0, __ATOMIC_RELAXED);
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

API const char *fake_cupti_driver_name(uint32_t cbid);

API CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                              const char **name) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    *name = "cudaLaunchKernel_v7000";
    return CUPTI_SUCCESS;
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && fake_cupti_driver_name(cbid)) {
    *name = fake_cupti_driver_name(cbid);
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

/* ---- records at given times (test_profile.sh) ---- */

API uint64_t fake_cupti_now(void) { return now_ns(); }

static const char *keep_name(const char *s) { return s ? strdup(s) : NULL; }

/* A cudaLaunchKernel call [start, end] on the calling thread. */
API int fake_cupti_api(uint32_t corr, uint64_t start, uint64_t end) {
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = start;
  a.end = end;
  a.processId = (uint32_t)getpid();
  a.threadId = (uint32_t)gettid();
  a.correlationId = corr;
  return tf_emit(&a, sizeof a);
}

/* A kernel [start, end] on device 0, stream 7. */
API int fake_cupti_kernel(uint32_t corr, uint64_t start, uint64_t end, const char *name) {
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
  return tf_emit(&k, sizeof k);
}

/* A kernel like fake_cupti_kernel with its launch configuration: GRID
 * blocks of BLOCK threads, REGS registers a thread, SMEM bytes of static
 * shared memory (test_clients_ops.sh). */
API int fake_cupti_kernel_cfg(uint32_t corr, uint64_t start, uint64_t end, const char *name,
                              uint32_t grid, uint32_t block, uint32_t regs, uint32_t smem) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = grid;
  k.gridY = k.gridZ = 1;
  k.blockX = block;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = (uint16_t)regs;
  k.staticSharedMemory = (int32_t)smem;
  k.correlationId = corr;
  k.name = keep_name(name);
  return tf_emit(&k, sizeof k);
}

/* A kernel like fake_cupti_kernel_cfg on GPU DEVICE (its context
 * DEVICE + 1), stream STREAM: NCCL runs its kernels on a stream of its own
 * (test_clients_dist.sh: a rank per GPU, compute on stream 7 and the
 * collectives on another). */
API int fake_cupti_kernel_on(uint32_t corr, uint64_t start, uint64_t end, const char *name,
                             uint32_t device, uint32_t stream, uint32_t grid, uint32_t block) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = device;
  k.contextId = device + 1;
  k.streamId = stream;
  k.gridX = grid;
  k.gridY = k.gridZ = 1;
  k.blockX = block;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 32;
  k.correlationId = corr;
  k.name = keep_name(name);
  return tf_emit(&k, sizeof k);
}

/* Device ID's record, as CUPTI gives it at the start: an H200's limits
 * (132 SMs, compute capability 9.0). */
API int fake_cupti_device(uint32_t id) {
  CUpti_ActivityDevice5 d;
  memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = id;
  d.name = "NVIDIA H200";
  d.globalMemorySize = 150109880320ull;
  d.globalMemoryBandwidth = 4800000000ull; /* KiB/s */
  d.numThreadsPerWarp = 32;
  d.coreClockRate = 1980000;
  d.numMultiprocessors = 132;
  d.maxWarpsPerMultiprocessor = 64;
  d.maxBlocksPerMultiprocessor = 32;
  d.maxSharedMemoryPerMultiprocessor = 233472;
  d.maxRegistersPerMultiprocessor = 65536;
  d.maxRegistersPerBlock = 65536;
  d.maxSharedMemoryPerBlock = 49152;
  d.maxThreadsPerBlock = 1024;
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  /* the UUID the fake NVML (collect_fake_nvml.c) gives its device ID */
  d.uuid.bytes[0] = (char)0xfa;
  d.uuid.bytes[1] = 0x6e;
  d.uuid.bytes[15] = (char)id;
  return tf_emit(&d, sizeof d);
}

/* A CUDA allocation (OP 1) or release (OP 2) at TS, as CUPTI's MEMORY2
 * record gives it: BYTES at ADDR of memory kind KIND
 * (CUpti_ActivityMemoryKind: 1 pageable, 2 pinned, 3 device, 5 managed)
 * on DEVICE (its context DEVICE + 1), STREAM, by the call CORR; POOL_TYPE
 * non-zero for a stream-ordered pool's (cudaMallocAsync: 1 local). */
API int fake_cupti_memory(uint32_t op, uint32_t kind, uint64_t addr, uint64_t bytes,
                          uint32_t device, uint64_t ts, uint32_t stream, uint32_t corr,
                          uint32_t pool_type) {
  if (!__atomic_load_n(&memory_on, __ATOMIC_RELAXED)) return 1; /* not recorded, as CUPTI */
  CUpti_ActivityMemory4 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
  m.memoryKind = (CUpti_ActivityMemoryKind)kind;
  m.correlationId = corr;
  m.address = addr;
  m.bytes = bytes;
  m.timestamp = ts;
  m.processId = (uint32_t)getpid();
  m.deviceId = device;
  m.contextId = device + 1;
  m.streamId = stream;
  m.isAsync = pool_type != 0;
  m.memoryPoolConfig.memoryPoolType = (CUpti_ActivityMemoryPoolType)pool_type;
  if (pool_type) m.memoryPoolConfig.address = addr & ~(uint64_t)0xffffff;
  return tf_emit(&m, sizeof m);
}

/* An NVTX push/pop range [start, end] on the calling thread (ID unique per
 * range; DOMAIN may be NULL). */
API int fake_cupti_range(uint32_t id, uint64_t start, uint64_t end, const char *name,
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
  int ok = tf_emit(&m, sizeof m);
  m.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  m.timestamp = end;
  m.name = m.domain = NULL;
  return tf_emit(&m, sizeof m) && ok;
}

/* CUPTI's own overhead ("Activity buffer request") on the calling thread. */
API int fake_cupti_overhead(uint64_t start, uint64_t end) {
  CUpti_ActivityOverhead3 o;
  memset(&o, 0, sizeof o);
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
  o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  o.objectId.pt.processId = (uint32_t)getpid();
  o.objectId.pt.threadId = (uint32_t)gettid();
  o.start = start;
  o.end = end;
  return tf_emit(&o, sizeof o);
}

/* ---- driver API calls: the launch subset (collector.c) ---- */

/* Driver calls CUPTI records, by id: all until the collector switches one
 * off (cuptiActivityEnableDriverApi), as CUPTI does. */
static unsigned char driver_off[1024];

API CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  if (cbid >= sizeof driver_off) return CUPTI_ERROR_INVALID_PARAMETER;
  driver_off[cbid] = !enable;
  return CUPTI_SUCCESS;
}

/* The driver calls this fake names (CUPTI's ids): one launch, one that is
 * not; every other id has no name. */
#define FAKE_CBID_cuCtxSynchronize 17
API const char *fake_cupti_driver_name(uint32_t cbid) {
  if (cbid == FAKE_CBID_cuCtxSynchronize) return "cuCtxSynchronize";
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) return "cuLaunchKernel";
  return NULL;
}

/* A driver call [start, end] on the calling thread, recorded only while
 * its id is on. */
API int fake_cupti_driver_api(uint32_t cbid, uint32_t corr, uint64_t start, uint64_t end) {
  if (cbid < sizeof driver_off && driver_off[cbid]) return 1;
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = (uint32_t)getpid();
  a.threadId = (uint32_t)gettid();
  a.correlationId = corr;
  return tf_emit(&a, sizeof a);
}

/* ---- a program's NVTX (the collector's own handlers, nvtxhook.c) ----
 *
 * The copy of NVTX's header-only code a program carries: its slots and the
 * export table it hands the tool.  fake_nvtx_init loads the library named
 * by NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2, as
 * NVTX's loader does at the first call; fake_nvtx_push/_pop/_mark then call
 * whatever the tool put in the slots (nothing: a no-op). */
#include <dlfcn.h>
#include <wchar.h>

typedef void (*nv_fn)(void);
static nv_fn nv_core[16], nv_core2[16];
static nv_fn *nv_core_tab[16], *nv_core2_tab[16];

static int nv_module(int module, nv_fn ***out, unsigned *size) {
  if (module == 1) *out = nv_core_tab, *size = 16;
  else if (module == 5) *out = nv_core2_tab, *size = 16;
  else return 0;
  return 1;
}
static const struct {
  size_t size;
  int (*get)(int, nv_fn ***, unsigned *);
} nv_callbacks = {sizeof nv_callbacks, nv_module};
static const void *nv_export(uint32_t id) { return id == 1 ? (const void *)&nv_callbacks : NULL; }

API int fake_nvtx_init(void) {
  for (int i = 1; i < 16; i++) nv_core_tab[i] = &nv_core[i], nv_core2_tab[i] = &nv_core2[i];
  const char *lib = getenv("NVTX_INJECTION64_PATH");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  int (*init)(const void *(*)(uint32_t)) = NULL;
  if (h) *(void **)&init = dlsym(h, "InitializeInjectionNvtx2");
  return init ? init(nv_export) : 0;
}

API int fake_nvtx_push(const char *msg) {
  return nv_core[9] ? ((int (*)(const char *))nv_core[9])(msg) : -1; /* RangePushA */
}
API int fake_nvtx_pop(void) { return nv_core[11] ? ((int (*)(void))nv_core[11])() : -1; }
API void fake_nvtx_mark(const char *msg) {
  if (nv_core[2]) ((void (*)(const char *))nv_core[2])(msg); /* MarkA */
}
