/* cupti_abi.h: the part of CUPTI's and the CUDA driver's ABI the collector
 * uses, so that the collector, its tests and the injection library build
 * on a machine without the CUDA toolkit.
 *
 * The collector never links libcupti: cupti_load.c finds it at run time
 * and fills the function table of collector.h, and the tests hand that
 * table a fake (test/unit/fake_cupti.h).  What it needs at compile time is
 * only the ABI: the enum values, the callback ids, the layout of the
 * activity records of the versions it decodes and of the profiler's
 * parameter structs, the function types.  This
 * header is those facts, written here, and nothing more; a name not in it
 * is a name the collector does not use.
 *
 * Where the toolkit's headers were found at configure time
 * (TBE_HAVE_CUPTI_HEADERS), including this header includes <cupti.h>,
 * the profiler's C headers (PM sampling, the range profiler, the target
 * API: hardware metrics, hwmetrics.h) and the NVTX calls' parameters
 * (generated_nvtx_meta.h: the capture range), and none of what follows is seen.
 * Without them, it declares the same names with the same values and
 * layouts.  They cannot drift apart: cupti_abi_check.c, compiled in every
 * configuration that has the toolkit's headers, includes both (this one
 * with TBE_CUPTI_ABI_CHECK, which renames our records tbe__abi_NAME) and
 * asserts, from the same lists that declare them here, every enum value,
 * every record's size and alignment, every field's offset, size and type,
 * and every NAME_STRUCT_SIZE of the profiler's calls; the typedefs and
 * prototypes are declared again under NVIDIA's own names, which the
 * compiler accepts only when the types are the same.  (The profiler host
 * API's structs are C++-only in CUDA 13; cupti_host.h keeps its own.)
 *
 * Layout rules that carry over: activity records are packed with 8-byte
 * alignment (PACKED_ALIGNMENT in cupti_common.h), the profiler's
 * parameter structs are plain; enums are int-sized (most through a
 * FORCE_INT member); LP64 only (the pads NVIDIA adds under
 * CUPTILP64 are written out; other targets are refused below).
 *
 * Adding a name: add it to a list below, build with the toolkit (the check
 * compiles only if the value or layout is NVIDIA's), and the configuration
 * without it builds against the same facts. */
#ifndef TBE_COLLECT_CUPTI_ABI_H
#define TBE_COLLECT_CUPTI_ABI_H

#if defined(TBE_HAVE_CUPTI_HEADERS) && !defined(TBE_CUPTI_ABI_CHECK)
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <generated_nvtx_meta.h>
#else

#include <stddef.h>
#include <stdint.h>

#if !defined(__LP64__) || !defined(__GNUC__)
#error "cupti_abi.h describes CUPTI's ABI for LP64 with GCC or Clang: use the CUDA toolkit's headers"
#endif

#ifndef CUPTIAPI
#define CUPTIAPI
#endif

/* NVIDIA's PACKED_ALIGNMENT for GCC. */
#define TBE_CUPTI_RECORD __attribute__((__packed__)) __attribute__((aligned(8)))

/* ---- enumerations: E(name, value) ---- */

#define TBE_CUPTI_ENUM_CUptiResult(E)                           \
  E(CUPTI_SUCCESS, 0)                                           \
  E(CUPTI_ERROR_INVALID_PARAMETER, 1)                           \
  E(CUPTI_ERROR_INVALID_CONTEXT, 3)                             \
  E(CUPTI_ERROR_INVALID_OPERATION, 7)                           \
  E(CUPTI_ERROR_OUT_OF_MEMORY, 8)                               \
  E(CUPTI_ERROR_API_NOT_IMPLEMENTED, 11)                        \
  E(CUPTI_ERROR_MAX_LIMIT_REACHED, 12)                          \
  E(CUPTI_ERROR_NOT_COMPATIBLE, 14)                             \
  E(CUPTI_ERROR_INVALID_METRIC_NAME, 17)                        \
  E(CUPTI_ERROR_INVALID_KIND, 21)                               \
  E(CUPTI_ERROR_HARDWARE_BUSY, 26)                              \
  E(CUPTI_ERROR_NOT_SUPPORTED, 27)                              \
  E(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, 33)           \
  E(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, 35)                    \
  E(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, 36)               \
  E(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, 38)              \
  E(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, 39)         \
  E(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES, 40) \
  E(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED, 41)       \
  E(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED, 42)                   \
  E(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, 43)                   \
  E(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED, 44)                   \
  E(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED, 45)                   \
  E(CUPTI_ERROR_INVALID_CHIP_NAME, 46)                          \
  E(CUPTI_ERROR_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivityKind(E)   \
  E(CUPTI_ACTIVITY_KIND_MEMCPY, 1)             \
  E(CUPTI_ACTIVITY_KIND_MEMSET, 2)             \
  E(CUPTI_ACTIVITY_KIND_KERNEL, 3)             \
  E(CUPTI_ACTIVITY_KIND_DRIVER, 4)             \
  E(CUPTI_ACTIVITY_KIND_RUNTIME, 5)            \
  E(CUPTI_ACTIVITY_KIND_DEVICE, 8)             \
  E(CUPTI_ACTIVITY_KIND_CONTEXT, 9)            \
  E(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 10) \
  E(CUPTI_ACTIVITY_KIND_NAME, 11)              \
  E(CUPTI_ACTIVITY_KIND_MARKER, 12)            \
  E(CUPTI_ACTIVITY_KIND_MARKER_DATA, 13)       \
  E(CUPTI_ACTIVITY_KIND_OVERHEAD, 17)          \
  E(CUPTI_ACTIVITY_KIND_MEMCPY2, 22)           \
  E(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 38)   \
  E(CUPTI_ACTIVITY_KIND_PCIE, 46)              \
  E(CUPTI_ACTIVITY_KIND_MEMORY2, 49)           \
  E(CUPTI_ACTIVITY_KIND_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivityAttribute(E)      \
  E(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 5) \
  E(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 9) \
  E(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_FORCE_INT, 0x7fffffff)

/* One enum of flags for several record kinds: values repeat. */
#define TBE_CUPTI_ENUM_CUpti_ActivityFlag(E)     \
  E(CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC, 1)         \
  E(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 1) \
  E(CUPTI_ACTIVITY_FLAG_MARKER_START, 2)         \
  E(CUPTI_ACTIVITY_FLAG_MARKER_END, 4)           \
  E(CUPTI_ACTIVITY_FLAG_MARKER_COLOR_NONE, 1)    \
  E(CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB, 2)    \
  E(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, 1)         \
  E(CUPTI_ACTIVITY_FLAG_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivityObjectKind(E) \
  E(CUPTI_ACTIVITY_OBJECT_PROCESS, 1)              \
  E(CUPTI_ACTIVITY_OBJECT_THREAD, 2)               \
  E(CUPTI_ACTIVITY_OBJECT_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivityThreadIdType(E) \
  E(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM, 1)         \
  E(CUPTI_ACTIVITY_THREAD_ID_TYPE_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_CallbackDomain(E) \
  E(CUPTI_CB_DOMAIN_DRIVER_API, 1)             \
  E(CUPTI_CB_DOMAIN_RUNTIME_API, 2)            \
  E(CUPTI_CB_DOMAIN_RESOURCE, 3)               \
  E(CUPTI_CB_DOMAIN_NVTX, 5)                   \
  E(CUPTI_CB_DOMAIN_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivityMemcpyKind(E) \
  E(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1)            \
  E(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, 10)           \
  E(CUPTI_ACTIVITY_MEMCPY_KIND_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivityMemoryKind(E) \
  E(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 1)        \
  E(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 3)          \
  E(CUPTI_ACTIVITY_MEMORY_KIND_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivityOverheadKind(E)          \
  E(CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, 0x10000)      \
  E(CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST, 0x70000) \
  E(CUPTI_ACTIVITY_OVERHEAD_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_ActivitySynchronizationType(E)    \
  E(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3) \
  E(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_MetricValueKind(E) \
  E(CUPTI_METRIC_VALUE_KIND_DOUBLE, 0)          \
  E(CUPTI_METRIC_VALUE_KIND_UINT64, 1)          \
  E(CUPTI_METRIC_VALUE_KIND_FORCE_INT, 0x7fffffff)

/* Types of record fields the collector only carries. */
#define TBE_CUPTI_ENUM_CUpti_ActivityPartitionedGlobalCacheConfig(E) \
  E(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_FORCE_INT, 0x7fffffff)
#define TBE_CUPTI_ENUM_CUpti_FuncShmemLimitConfig(E) E(CUPTI_FUNC_SHMEM_LIMIT_FORCE_INT, 0x7fffffff)
#define TBE_CUPTI_ENUM_CUpti_ChannelType(E) E(CUPTI_CHANNEL_TYPE_FORCE_INT, 0x7fffffff)
#define TBE_CUPTI_ENUM_CUpti_ContextCigMode(E) E(CUPTI_CONTEXT_CIG_MODE_FORCE_INT, 0x7fffffff)
#define TBE_CUPTI_ENUM_CUpti_ActivityMemoryOperationType(E) \
  E(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_FORCE_INT, 0x7fffffff)
#define TBE_CUPTI_ENUM_CUpti_ActivityMemoryPoolType(E) \
  E(CUPTI_ACTIVITY_MEMORY_POOL_TYPE_FORCE_INT, 0x7fffffff)
#define TBE_CUPTI_ENUM_CUpti_MetricValueUtilizationLevel(E) \
  E(CUPTI_METRIC_VALUE_UTILIZATION_FORCE_INT, 0x7fffffff)

/* Callback ids: the calls collector.c leaves out as noisy or the tests
 * name. */
#define TBE_CUPTI_ENUM_CUpti_runtime_api_trace_cbid(E)                \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020, 3)             \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, 10)              \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020, 11)           \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 17)                 \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 31)                    \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 131)        \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000, 151)     \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 171)            \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 172)             \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000, 200)       \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 211)             \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000, 317)       \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010, 324)    \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030, 409) \
  E(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030, 461)    \
  E(CUPTI_RUNTIME_TRACE_CBID_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_driver_api_trace_cbid(E)            \
  E(CUPTI_DRIVER_TRACE_CBID_cuDeviceGet, 3)                      \
  E(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, 9)             \
  E(CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, 16)                  \
  E(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 304)                \
  E(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 307)                 \
  E(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, 308)                \
  E(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, 309)                 \
  E(CUPTI_DRIVER_TRACE_CBID_cuGetErrorString, 372)               \
  E(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState, 392)     \
  E(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, 442)            \
  E(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, 477)      \
  E(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, 478) \
  E(CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress, 626)               \
  E(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 652)               \
  E(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, 653)          \
  E(CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2, 677)            \
  E(CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, 686)           \
  E(CUPTI_DRIVER_TRACE_CBID_FORCE_INT, 0x7fffffff)

/* Hardware metrics (hwmetrics.h): the callbacks they subscribe to, PM
 * sampling and the range profiler. */
#define TBE_CUPTI_ENUM_CUpti_ApiCallbackSite(E) \
  E(CUPTI_API_ENTER, 0)                         \
  E(CUPTI_API_EXIT, 1)                          \
  E(CUPTI_API_CBSITE_FORCE_INT, 0x7fffffff)

/* The NVTX calls a capture range is read from (rpcapture.c); CUPTI calls
 * back once per call, after it (CUpti_NvtxData, the parameters below). */
#define TBE_CUPTI_ENUM_CUpti_nvtx_api_trace_cbid(E) \
  E(CUPTI_CBID_NVTX_nvtxRangeStartA, 4)             \
  E(CUPTI_CBID_NVTX_nvtxRangeStartEx, 6)            \
  E(CUPTI_CBID_NVTX_nvtxRangeEnd, 7)                \
  E(CUPTI_CBID_NVTX_nvtxRangePushA, 8)              \
  E(CUPTI_CBID_NVTX_nvtxRangePushEx, 10)            \
  E(CUPTI_CBID_NVTX_nvtxRangePop, 11)               \
  E(CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, 31)     \
  E(CUPTI_CBID_NVTX_nvtxDomainRangeEnd, 32)         \
  E(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, 33)      \
  E(CUPTI_CBID_NVTX_nvtxDomainRangePop, 34)         \
  E(CUPTI_CBID_NVTX_nvtxDomainCreateA, 41)          \
  E(CUPTI_CBID_NVTX_FORCE_INT, 0x7fffffff)

#define TBE_CUPTI_ENUM_CUpti_CallbackIdResource(E)   \
  E(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, 1)          \
  E(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, 2) \
  E(CUPTI_CBID_RESOURCE_FORCE_INT, 0x7fffffff)

/* These four have no FORCE_INT member; small values make them int-sized. */
#define TBE_CUPTI_ENUM_CUpti_PmSampling_DecodeStopReason(E)    \
  E(CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL, 1) \
  E(CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS, 2)

#define TBE_CUPTI_ENUM_CUpti_PmSampling_TriggerMode(E) \
  E(CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, 1)

#define TBE_CUPTI_ENUM_CUpti_PmSampling_HardwareBuffer_AppendMode(E) \
  E(CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST, 0)    \
  E(CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST, 1)

#define TBE_CUPTI_ENUM_CUpti_ProfilerRange(E) E(CUPTI_AutoRange, 1)

#define TBE_CUPTI_ENUM_CUpti_ProfilerReplayMode(E) E(CUPTI_KernelReplay, 2)

/* Every enumeration above, X(type). */
#define TBE_CUPTI_ENUMS(X)                      \
  X(CUptiResult)                                \
  X(CUpti_ActivityKind)                         \
  X(CUpti_ActivityAttribute)                    \
  X(CUpti_ActivityFlag)                         \
  X(CUpti_ActivityObjectKind)                   \
  X(CUpti_ActivityThreadIdType)                 \
  X(CUpti_CallbackDomain)                       \
  X(CUpti_ActivityMemcpyKind)                   \
  X(CUpti_ActivityMemoryKind)                   \
  X(CUpti_ActivityOverheadKind)                 \
  X(CUpti_ActivitySynchronizationType)          \
  X(CUpti_MetricValueKind)                      \
  X(CUpti_ActivityPartitionedGlobalCacheConfig) \
  X(CUpti_FuncShmemLimitConfig)                 \
  X(CUpti_ChannelType)                          \
  X(CUpti_ContextCigMode)                       \
  X(CUpti_ActivityMemoryOperationType)          \
  X(CUpti_ActivityMemoryPoolType)               \
  X(CUpti_MetricValueUtilizationLevel)          \
  X(CUpti_runtime_api_trace_cbid)               \
  X(CUpti_driver_api_trace_cbid)                \
  X(CUpti_nvtx_api_trace_cbid)                  \
  X(CUpti_ApiCallbackSite)                      \
  X(CUpti_CallbackIdResource)                   \
  X(CUpti_PmSampling_DecodeStopReason)          \
  X(CUpti_PmSampling_TriggerMode)               \
  X(CUpti_PmSampling_HardwareBuffer_AppendMode) \
  X(CUpti_ProfilerRange)                        \
  X(CUpti_ProfilerReplayMode)

#ifndef TBE_CUPTI_ABI_CHECK
#define TBE_CUPTI_ENUMERATOR(name, value) name = (value),
#define TBE_CUPTI_DECLARE_ENUM(T)                              \
  typedef enum { TBE_CUPTI_ENUM_##T(TBE_CUPTI_ENUMERATOR) } T; \
  _Static_assert(sizeof(T) == sizeof(int), #T " is int-sized");
TBE_CUPTI_ENUMS(TBE_CUPTI_DECLARE_ENUM)
#undef TBE_CUPTI_DECLARE_ENUM
#undef TBE_CUPTI_ENUMERATOR
#endif

/* ---- plain types, function types and functions ----
 * Declared under NVIDIA's names in both modes: in the check, a second
 * declaration of a different type does not compile. */

typedef uint32_t CUpti_CallbackId;
typedef struct CUctx_st *CUcontext;
typedef void (CUPTIAPI *CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size,
                                                          size_t *maxNumRecords);
typedef void (CUPTIAPI *CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId,
                                                           uint8_t *buffer, size_t size,
                                                           size_t validSize);
typedef struct CUstream_st *CUstream;
typedef struct CUpti_Subscriber_st *CUpti_SubscriberHandle;
typedef void (CUPTIAPI *CUpti_CallbackFunc)(void *userdata, CUpti_CallbackDomain domain,
                                            CUpti_CallbackId cbid, const void *cbdata);
typedef struct CUpti_PmSampling_Object CUpti_PmSampling_Object;
typedef struct CUpti_RangeProfiler_Object CUpti_RangeProfiler_Object;

/* ---- records: F(S, type, name, array) per field, in order ----
 * A(...) marks a field whose type NVIDIA declares inline, without a name
 * (ours is named below); the check compares its offset and size, and
 * cupti_abi_check.c the inner fields one by one. */

/* The inline aggregates, named. */
typedef union {
  uint8_t both;
  struct {
    uint8_t requested : 4;
    uint8_t executed : 4;
  } config;
} tbe__cupti_cache_config;
typedef struct {
  uint32_t processId;
  uint32_t threadId;
} tbe__cupti_object_pt;
typedef struct {
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
} tbe__cupti_object_dcs;
typedef union {
  uint64_t size;
  uint64_t processId;
} tbe__cupti_pool_size;

#define TBE_CUPTI_STRUCT_CUuuid(F, A, S) F(S, char, bytes, [16])

#define TBE_CUPTI_STRUCT_CUpti_ActivityObjectKindId(F, A, S) \
  A(S, tbe__cupti_object_pt, pt, )                           \
  A(S, tbe__cupti_object_dcs, dcs, )

#define TBE_CUPTI_STRUCT_CUpti_MetricValue(F, A, S)                      \
  F(S, double, metricValueDouble, )                                      \
  F(S, uint64_t, metricValueUint64, )                                    \
  F(S, int64_t, metricValueInt64, )                                      \
  F(S, double, metricValuePercent, )                                     \
  F(S, uint64_t, metricValueThroughput, )                                \
  F(S, CUpti_MetricValueUtilizationLevel, metricValueUtilizationLevel, ) \
  F(S, uint64_t, metricValueNvtxExtendedPayload, )

#define TBE_CUPTI_STRUCT_CUpti_Activity(F, A, S) F(S, CUpti_ActivityKind, kind, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityKernel10(F, A, S)                              \
  F(S, CUpti_ActivityKind, kind, )                                                    \
  A(S, tbe__cupti_cache_config, cacheConfig, )                                        \
  F(S, uint8_t, sharedMemoryConfig, )                                                 \
  F(S, uint16_t, registersPerThread, )                                                \
  F(S, CUpti_ActivityPartitionedGlobalCacheConfig, partitionedGlobalCacheRequested, ) \
  F(S, CUpti_ActivityPartitionedGlobalCacheConfig, partitionedGlobalCacheExecuted, )  \
  F(S, uint64_t, start, )                                                             \
  F(S, uint64_t, end, )                                                               \
  F(S, uint64_t, completed, )                                                         \
  F(S, uint32_t, deviceId, )                                                          \
  F(S, uint32_t, contextId, )                                                         \
  F(S, uint32_t, streamId, )                                                          \
  F(S, int32_t, gridX, )                                                              \
  F(S, int32_t, gridY, )                                                              \
  F(S, int32_t, gridZ, )                                                              \
  F(S, int32_t, blockX, )                                                             \
  F(S, int32_t, blockY, )                                                             \
  F(S, int32_t, blockZ, )                                                             \
  F(S, int32_t, staticSharedMemory, )                                                 \
  F(S, int32_t, dynamicSharedMemory, )                                                \
  F(S, uint32_t, localMemoryPerThread, )                                              \
  F(S, uint32_t, localMemoryTotal, )                                                  \
  F(S, uint32_t, correlationId, )                                                     \
  F(S, int64_t, gridId, )                                                             \
  F(S, const char *, name, )                                                          \
  F(S, void *, reserved0, )                                                           \
  F(S, uint64_t, queued, )                                                            \
  F(S, uint64_t, submitted, )                                                         \
  F(S, uint8_t, launchType, )                                                         \
  F(S, uint8_t, isSharedMemoryCarveoutRequested, )                                    \
  F(S, uint8_t, sharedMemoryCarveoutRequested, )                                      \
  F(S, uint8_t, padding, )                                                            \
  F(S, uint32_t, sharedMemoryExecuted, )                                              \
  F(S, uint64_t, graphNodeId, )                                                       \
  F(S, CUpti_FuncShmemLimitConfig, shmemLimitConfig, )                                \
  F(S, uint32_t, graphId, )                                                           \
  F(S, struct CUaccessPolicyWindow_st *, pAccessPolicyWindow, )                       \
  F(S, uint32_t, channelID, )                                                         \
  F(S, CUpti_ChannelType, channelType, )                                              \
  F(S, uint32_t, clusterX, )                                                          \
  F(S, uint32_t, clusterY, )                                                          \
  F(S, uint32_t, clusterZ, )                                                          \
  F(S, uint32_t, clusterSchedulingPolicy, )                                           \
  F(S, uint64_t, localMemoryTotal_v2, )                                               \
  F(S, uint32_t, maxPotentialClusterSize, )                                           \
  F(S, uint32_t, maxActiveClusters, )                                                 \
  F(S, uint8_t, isDeviceLaunched, )                                                   \
  F(S, uint8_t, padding3, [7])

#define TBE_CUPTI_STRUCT_CUpti_ActivityMemcpy6(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                      \
  F(S, uint8_t, copyKind, )                             \
  F(S, uint8_t, srcKind, )                              \
  F(S, uint8_t, dstKind, )                              \
  F(S, uint8_t, flags, )                                \
  F(S, uint64_t, bytes, )                               \
  F(S, uint64_t, start, )                               \
  F(S, uint64_t, end, )                                 \
  F(S, uint32_t, deviceId, )                            \
  F(S, uint32_t, contextId, )                           \
  F(S, uint32_t, streamId, )                            \
  F(S, uint32_t, correlationId, )                       \
  F(S, uint32_t, runtimeCorrelationId, )                \
  F(S, uint32_t, pad, )                                 \
  F(S, void *, reserved0, )                             \
  F(S, uint64_t, graphNodeId, )                         \
  F(S, uint32_t, graphId, )                             \
  F(S, uint32_t, channelID, )                           \
  F(S, CUpti_ChannelType, channelType, )                \
  F(S, uint8_t, isDeviceLaunched, )                     \
  F(S, uint8_t, pad2, [3])                              \
  F(S, uint64_t, copyCount, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityMemcpyPtoP4(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                          \
  F(S, uint8_t, copyKind, )                                 \
  F(S, uint8_t, srcKind, )                                  \
  F(S, uint8_t, dstKind, )                                  \
  F(S, uint8_t, flags, )                                    \
  F(S, uint64_t, bytes, )                                   \
  F(S, uint64_t, start, )                                   \
  F(S, uint64_t, end, )                                     \
  F(S, uint32_t, deviceId, )                                \
  F(S, uint32_t, contextId, )                               \
  F(S, uint32_t, streamId, )                                \
  F(S, uint32_t, srcDeviceId, )                             \
  F(S, uint32_t, srcContextId, )                            \
  F(S, uint32_t, dstDeviceId, )                             \
  F(S, uint32_t, dstContextId, )                            \
  F(S, uint32_t, correlationId, )                           \
  F(S, void *, reserved0, )                                 \
  F(S, uint64_t, graphNodeId, )                             \
  F(S, uint32_t, graphId, )                                 \
  F(S, uint32_t, channelID, )                               \
  F(S, CUpti_ChannelType, channelType, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityMemset4(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                      \
  F(S, uint32_t, value, )                               \
  F(S, uint64_t, bytes, )                               \
  F(S, uint64_t, start, )                               \
  F(S, uint64_t, end, )                                 \
  F(S, uint32_t, deviceId, )                            \
  F(S, uint32_t, contextId, )                           \
  F(S, uint32_t, streamId, )                            \
  F(S, uint32_t, correlationId, )                       \
  F(S, uint16_t, flags, )                               \
  F(S, uint16_t, memoryKind, )                          \
  F(S, uint32_t, pad, )                                 \
  F(S, void *, reserved0, )                             \
  F(S, uint64_t, graphNodeId, )                         \
  F(S, uint32_t, graphId, )                             \
  F(S, uint32_t, channelID, )                           \
  F(S, CUpti_ChannelType, channelType, )                \
  F(S, uint8_t, isDeviceLaunched, )                     \
  F(S, uint8_t, pad2, [3])

#define TBE_CUPTI_STRUCT_CUpti_ActivityAPI(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                  \
  F(S, CUpti_CallbackId, cbid, )                    \
  F(S, uint64_t, start, )                           \
  F(S, uint64_t, end, )                             \
  F(S, uint32_t, processId, )                       \
  F(S, uint32_t, threadId, )                        \
  F(S, uint32_t, correlationId, )                   \
  F(S, uint32_t, returnValue, )

#define TBE_CUPTI_STRUCT_CUpti_ActivitySynchronization2(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                               \
  F(S, CUpti_ActivitySynchronizationType, type, )                \
  F(S, uint64_t, start, )                                        \
  F(S, uint64_t, end, )                                          \
  F(S, uint32_t, correlationId, )                                \
  F(S, uint32_t, contextId, )                                    \
  F(S, uint32_t, streamId, )                                     \
  F(S, uint32_t, cudaEventId, )                                  \
  F(S, uint64_t, cudaEventSyncId, )                              \
  F(S, uint32_t, returnValue, )                                  \
  F(S, uint32_t, pad, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityMarker2(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                      \
  F(S, CUpti_ActivityFlag, flags, )                     \
  F(S, uint64_t, timestamp, )                           \
  F(S, uint32_t, id, )                                  \
  F(S, CUpti_ActivityObjectKind, objectKind, )          \
  F(S, CUpti_ActivityObjectKindId, objectId, )          \
  F(S, uint32_t, pad, )                                 \
  F(S, const char *, name, )                            \
  F(S, const char *, domain, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityMarkerData2(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                          \
  F(S, CUpti_ActivityFlag, flags, )                         \
  F(S, uint32_t, id, )                                      \
  F(S, CUpti_MetricValueKind, payloadKind, )                \
  F(S, CUpti_MetricValue, payload, )                        \
  F(S, uint32_t, color, )                                   \
  F(S, uint32_t, category, )                                \
  F(S, uint32_t, cuptiDomainId, )                           \
  F(S, uint32_t, padding, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityOverhead3(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                        \
  F(S, CUpti_ActivityOverheadKind, overheadKind, )        \
  F(S, CUpti_ActivityObjectKind, objectKind, )            \
  F(S, CUpti_ActivityObjectKindId, objectId, )            \
  F(S, uint64_t, start, )                                 \
  F(S, uint64_t, end, )                                   \
  F(S, uint32_t, correlationId, )                         \
  F(S, uint32_t, reserved0, )                             \
  F(S, void *, overheadData, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityDevice5(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                      \
  F(S, CUpti_ActivityFlag, flags, )                     \
  F(S, uint64_t, globalMemoryBandwidth, )               \
  F(S, uint64_t, globalMemorySize, )                    \
  F(S, uint32_t, constantMemorySize, )                  \
  F(S, uint32_t, l2CacheSize, )                         \
  F(S, uint32_t, numThreadsPerWarp, )                   \
  F(S, uint32_t, coreClockRate, )                       \
  F(S, uint32_t, numMemcpyEngines, )                    \
  F(S, uint32_t, numMultiprocessors, )                  \
  F(S, uint32_t, maxIPC, )                              \
  F(S, uint32_t, maxWarpsPerMultiprocessor, )           \
  F(S, uint32_t, maxBlocksPerMultiprocessor, )          \
  F(S, uint32_t, maxSharedMemoryPerMultiprocessor, )    \
  F(S, uint32_t, maxRegistersPerMultiprocessor, )       \
  F(S, uint32_t, maxRegistersPerBlock, )                \
  F(S, uint32_t, maxSharedMemoryPerBlock, )             \
  F(S, uint32_t, maxThreadsPerBlock, )                  \
  F(S, uint32_t, maxBlockDimX, )                        \
  F(S, uint32_t, maxBlockDimY, )                        \
  F(S, uint32_t, maxBlockDimZ, )                        \
  F(S, uint32_t, maxGridDimX, )                         \
  F(S, uint32_t, maxGridDimY, )                         \
  F(S, uint32_t, maxGridDimZ, )                         \
  F(S, uint32_t, computeCapabilityMajor, )              \
  F(S, uint32_t, computeCapabilityMinor, )              \
  F(S, uint32_t, id, )                                  \
  F(S, uint32_t, eccEnabled, )                          \
  F(S, CUuuid, uuid, )                                  \
  F(S, const char *, name, )                            \
  F(S, uint8_t, isCudaVisible, )                        \
  F(S, uint8_t, isMigEnabled, )                         \
  F(S, uint8_t, reserved, [6])                          \
  F(S, uint32_t, gpuInstanceId, )                       \
  F(S, uint32_t, computeInstanceId, )                   \
  F(S, CUuuid, migUuid, )                               \
  F(S, uint32_t, isNumaNode, )                          \
  F(S, uint32_t, numaId, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityContext3(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                       \
  F(S, uint32_t, contextId, )                            \
  F(S, uint32_t, deviceId, )                             \
  F(S, uint16_t, computeApiKind, )                       \
  F(S, uint16_t, nullStreamId, )                         \
  F(S, uint32_t, parentContextId, )                      \
  F(S, uint8_t, isGreenContext, )                        \
  F(S, uint8_t, padding, )                               \
  F(S, uint16_t, numMultiprocessors, )                   \
  F(S, CUpti_ContextCigMode, cigMode, )                  \
  F(S, uint32_t, padding2, )

#define TBE_CUPTI_STRUCT_CUpti_ActivityName(F, A, S) \
  F(S, CUpti_ActivityKind, kind, )                   \
  F(S, CUpti_ActivityObjectKind, objectKind, )       \
  F(S, CUpti_ActivityObjectKindId, objectId, )       \
  F(S, uint32_t, pad, )                              \
  F(S, const char *, name, )

/* memoryPoolConfig's type: inline in NVIDIA's record, packed like it. */
typedef struct TBE_CUPTI_RECORD {
  CUpti_ActivityMemoryPoolType memoryPoolType;
  uint32_t pad2;
  uint64_t address;
  uint64_t releaseThreshold;
  tbe__cupti_pool_size pool;
  uint64_t utilizedSize;
} tbe__cupti_memory_pool_config;

#define TBE_CUPTI_STRUCT_CUpti_ActivityMemory4(F, A, S)          \
  F(S, CUpti_ActivityKind, kind, )                               \
  F(S, CUpti_ActivityMemoryOperationType, memoryOperationType, ) \
  F(S, CUpti_ActivityMemoryKind, memoryKind, )                   \
  F(S, uint32_t, correlationId, )                                \
  F(S, uint64_t, address, )                                      \
  F(S, uint64_t, bytes, )                                        \
  F(S, uint64_t, timestamp, )                                    \
  F(S, uint64_t, PC, )                                           \
  F(S, uint32_t, processId, )                                    \
  F(S, uint32_t, deviceId, )                                     \
  F(S, uint32_t, contextId, )                                    \
  F(S, uint32_t, streamId, )                                     \
  F(S, const char *, name, )                                     \
  F(S, uint32_t, isAsync, )                                      \
  F(S, uint32_t, pad1, )                                         \
  A(S, tbe__cupti_memory_pool_config, memoryPoolConfig, )        \
  F(S, const char *, source, )

/* The callbacks' data (CUPTI_CB_DOMAIN_DRIVER_API and _RESOURCE). */
typedef union {
  CUstream stream;
} tbe__cupti_resource_handle;

#define TBE_CUPTI_STRUCT_CUpti_CallbackData(F, A, S) \
  F(S, CUpti_ApiCallbackSite, callbackSite, )        \
  F(S, const char *, functionName, )                 \
  F(S, const void *, functionParams, )               \
  F(S, void *, functionReturnValue, )                \
  F(S, const char *, symbolName, )                   \
  F(S, CUcontext, context, )                         \
  F(S, uint32_t, contextUid, )                       \
  F(S, uint64_t *, correlationData, )                \
  F(S, uint32_t, correlationId, )

#define TBE_CUPTI_STRUCT_CUpti_NvtxData(F, A, S) \
  F(S, const char *, functionName, )           \
  F(S, const void *, functionParams, )         \
  F(S, const void *, functionReturnValue, )

/* NVTX's types (nvtx3/nvToolsExt.h) and the parameters of the calls
 * above (generated_nvtx_meta.h); a message is read when ASCII. */
#ifndef TBE_CUPTI_ABI_CHECK
typedef uint64_t nvtxRangeId_t;
struct nvtxDomainRegistration_st;
typedef struct nvtxDomainRegistration_st nvtxDomainRegistration;
typedef nvtxDomainRegistration *nvtxDomainHandle_t;
#define NVTX_MESSAGE_TYPE_ASCII 1
#endif
typedef union {
  uint64_t ullValue;
  double dValue;
} tbe__nvtx_payload;
typedef union {
  const char *ascii;
  const void *other;
} tbe__nvtx_message;

#define TBE_CUPTI_STRUCT_nvtxEventAttributes_v2(F, A, S) \
  F(S, uint16_t, version, )                              \
  F(S, uint16_t, size, )                                 \
  F(S, uint32_t, category, )                             \
  F(S, int32_t, colorType, )                             \
  F(S, uint32_t, color, )                                \
  F(S, int32_t, payloadType, )                           \
  F(S, int32_t, reserved0, )                             \
  A(S, tbe__nvtx_payload, payload, )                     \
  F(S, int32_t, messageType, )                           \
  A(S, tbe__nvtx_message, message, )

#define TBE_CUPTI_STRUCT_nvtxRangePushA_params(F, A, S) F(S, const char *, message, )
#define TBE_CUPTI_STRUCT_nvtxRangeStartA_params(F, A, S) F(S, const char *, message, )
#define TBE_CUPTI_STRUCT_nvtxRangePushEx_params(F, A, S) \
  F(S, const nvtxEventAttributes_v2 *, eventAttrib, )
#define TBE_CUPTI_STRUCT_nvtxRangeStartEx_params(F, A, S) \
  F(S, const nvtxEventAttributes_v2 *, eventAttrib, )
#define TBE_CUPTI_STRUCT_nvtxRangeEnd_params(F, A, S) F(S, nvtxRangeId_t, id, )
#define TBE_CUPTI_STRUCT_nvtxDomainCreateA_params(F, A, S) F(S, const char *, name, )
#define TBE_CUPTI_STRUCT_nvtxDomainRangePop_params(F, A, S) F(S, nvtxDomainHandle_t, domain, )
#define TBE_CUPTI_STRUCT_nvtxDomainRangePushEx_params(F, A, S) \
  F(S, nvtxDomainHandle_t, domain, )                           \
  A(S, TBE_CUPTI_OURS(nvtxRangePushEx_params), core, )
#define TBE_CUPTI_STRUCT_nvtxDomainRangeStartEx_params(F, A, S) \
  F(S, nvtxDomainHandle_t, domain, )                            \
  A(S, TBE_CUPTI_OURS(nvtxRangeStartEx_params), core, )
#define TBE_CUPTI_STRUCT_nvtxDomainRangeEnd_params(F, A, S) \
  F(S, nvtxDomainHandle_t, domain, )                        \
  A(S, TBE_CUPTI_OURS(nvtxRangeEnd_params), core, )

#define TBE_CUPTI_STRUCT_CUpti_ResourceData(F, A, S) \
  F(S, CUcontext, context, )                         \
  A(S, tbe__cupti_resource_handle, resourceHandle, ) \
  F(S, void *, resourceDescriptor, )

/* The profiler's parameter structs (cupti_profiler_target.h,
 * cupti_pmsampling.h, cupti_range_profiler.h): plain C layout; each
 * call's structSize is NAME_STRUCT_SIZE, the end of its last member
 * (TBE_CUPTI_STRUCT_SIZES below). */
#define TBE_CUPTI_STRUCT_CUpti_Device_GetChipName_Params(F, A, S) \
  F(S, size_t, structSize, )                                      \
  F(S, void *, pPriv, )                                           \
  F(S, size_t, deviceIndex, )                                     \
  F(S, const char *, pChipName, )

#define TBE_CUPTI_STRUCT_CUpti_Profiler_Initialize_Params(F, A, S) \
  F(S, size_t, structSize, )                                       \
  F(S, void *, pPriv, )

#define TBE_CUPTI_STRUCT_CUpti_Profiler_GetCounterAvailability_Params(F, A, S) \
  F(S, size_t, structSize, )                                                   \
  F(S, void *, pPriv, )                                                        \
  F(S, CUcontext, ctx, )                                                       \
  F(S, size_t, counterAvailabilityImageSize, )                                 \
  F(S, uint8_t *, pCounterAvailabilityImage, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_CounterDataImage_Initialize_Params(F, A, S) \
  F(S, size_t, structSize, )                                                          \
  F(S, void *, pPriv, )                                                               \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )                                \
  F(S, size_t, counterDataSize, )                                                     \
  F(S, uint8_t *, pCounterData, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_CounterData_GetSampleInfo_Params(F, A, S) \
  F(S, size_t, structSize, )                                                        \
  F(S, void *, pPriv, )                                                             \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )                              \
  F(S, const uint8_t *, pCounterDataImage, )                                        \
  F(S, size_t, counterDataImageSize, )                                              \
  F(S, size_t, sampleIndex, )                                                       \
  F(S, uint64_t, startTimestamp, )                                                  \
  F(S, uint64_t, endTimestamp, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_DecodeData_Params(F, A, S) \
  F(S, size_t, structSize, )                                         \
  F(S, void *, pPriv, )                                              \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )               \
  F(S, uint8_t *, pCounterDataImage, )                               \
  F(S, size_t, counterDataImageSize, )                               \
  F(S, CUpti_PmSampling_DecodeStopReason, decodeStopReason, )        \
  F(S, uint8_t, overflow, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_Disable_Params(F, A, S) \
  F(S, size_t, structSize, )                                      \
  F(S, void *, pPriv, )                                           \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_Enable_Params(F, A, S) \
  F(S, size_t, structSize, )                                     \
  F(S, void *, pPriv, )                                          \
  F(S, size_t, deviceIndex, )                                    \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_GetCounterAvailability_Params(F, A, S) \
  F(S, size_t, structSize, )                                                     \
  F(S, void *, pPriv, )                                                          \
  F(S, size_t, deviceIndex, )                                                    \
  F(S, size_t, counterAvailabilityImageSize, )                                   \
  F(S, uint8_t *, pCounterAvailabilityImage, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_GetCounterDataInfo_Params(F, A, S) \
  F(S, size_t, structSize, )                                                 \
  F(S, void *, pPriv, )                                                      \
  F(S, const uint8_t *, pCounterDataImage, )                                 \
  F(S, size_t, counterDataImageSize, )                                       \
  F(S, size_t, numTotalSamples, )                                            \
  F(S, size_t, numPopulatedSamples, )                                        \
  F(S, size_t, numCompletedSamples, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_GetCounterDataSize_Params(F, A, S) \
  F(S, size_t, structSize, )                                                 \
  F(S, void *, pPriv, )                                                      \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )                       \
  F(S, const char **, pMetricNames, )                                        \
  F(S, size_t, numMetrics, )                                                 \
  F(S, uint32_t, maxSamples, )                                               \
  F(S, size_t, counterDataSize, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_SetConfig_Params(F, A, S) \
  F(S, size_t, structSize, )                                        \
  F(S, void *, pPriv, )                                             \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )              \
  F(S, size_t, configSize, )                                        \
  F(S, const uint8_t *, pConfig, )                                  \
  F(S, size_t, hardwareBufferSize, )                                \
  F(S, uint64_t, samplingInterval, )                                \
  F(S, CUpti_PmSampling_TriggerMode, triggerMode, )                 \
  F(S, CUpti_PmSampling_HardwareBuffer_AppendMode, hwBufferAppendMode, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_Start_Params(F, A, S) \
  F(S, size_t, structSize, )                                    \
  F(S, void *, pPriv, )                                         \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )

#define TBE_CUPTI_STRUCT_CUpti_PmSampling_Stop_Params(F, A, S) \
  F(S, size_t, structSize, )                                   \
  F(S, void *, pPriv, )                                        \
  F(S, CUpti_PmSampling_Object *, pPmSamplingObject, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_CounterDataImage_Initialize_Params(F, A, S) \
  F(S, size_t, structSize, )                                                             \
  F(S, void *, pPriv, )                                                                  \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )                             \
  F(S, size_t, counterDataSize, )                                                        \
  F(S, uint8_t *, pCounterData, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_DecodeData_Params(F, A, S) \
  F(S, size_t, structSize, )                                            \
  F(S, void *, pPriv, )                                                 \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )            \
  F(S, size_t, numOfRangeDropped, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_Disable_Params(F, A, S) \
  F(S, size_t, structSize, )                                         \
  F(S, void *, pPriv, )                                              \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_Enable_Params(F, A, S) \
  F(S, size_t, structSize, )                                        \
  F(S, void *, pPriv, )                                             \
  F(S, CUcontext, ctx, )                                            \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_GetCounterDataInfo_Params(F, A, S) \
  F(S, size_t, structSize, )                                                    \
  F(S, void *, pPriv, )                                                         \
  F(S, const uint8_t *, pCounterDataImage, )                                    \
  F(S, size_t, counterDataImageSize, )                                          \
  F(S, size_t, numTotalRanges, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_GetCounterDataSize_Params(F, A, S) \
  F(S, size_t, structSize, )                                                    \
  F(S, void *, pPriv, )                                                         \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )                    \
  F(S, const char **, pMetricNames, )                                           \
  F(S, size_t, numMetrics, )                                                    \
  F(S, size_t, maxNumOfRanges, )                                                \
  F(S, uint32_t, maxNumRangeTreeNodes, )                                        \
  F(S, size_t, counterDataSize, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_PopRange_Params(F, A, S) \
  F(S, size_t, structSize, )                                          \
  F(S, void *, pPriv, )                                               \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_PushRange_Params(F, A, S) \
  F(S, size_t, structSize, )                                           \
  F(S, void *, pPriv, )                                                \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )           \
  F(S, const char *, pRangeName, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_SetConfig_Params(F, A, S) \
  F(S, size_t, structSize, )                                           \
  F(S, void *, pPriv, )                                                \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )           \
  F(S, size_t, configSize, )                                           \
  F(S, const uint8_t *, pConfig, )                                     \
  F(S, size_t, counterDataImageSize, )                                 \
  F(S, uint8_t *, pCounterDataImage, )                                 \
  F(S, CUpti_ProfilerRange, range, )                                   \
  F(S, CUpti_ProfilerReplayMode, replayMode, )                         \
  F(S, size_t, maxRangesPerPass, )                                     \
  F(S, uint16_t, numNestingLevels, )                                   \
  F(S, uint16_t, minNestingLevel, )                                    \
  F(S, size_t, passIndex, )                                            \
  F(S, uint16_t, targetNestingLevel, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_Start_Params(F, A, S) \
  F(S, size_t, structSize, )                                       \
  F(S, void *, pPriv, )                                            \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )

#define TBE_CUPTI_STRUCT_CUpti_RangeProfiler_Stop_Params(F, A, S) \
  F(S, size_t, structSize, )                                      \
  F(S, void *, pPriv, )                                           \
  F(S, CUpti_RangeProfiler_Object *, pRangeProfilerObject, )      \
  F(S, size_t, passIndex, )                                       \
  F(S, size_t, targetNestingLevel, )                              \
  F(S, uint8_t, isAllPassSubmitted, )

/* Every record and union above, in declaration order: X(type, struct or
 * union, attributes). */
#define TBE_CUPTI_STRUCTS(X)                                          \
  X(CUuuid, struct, )                                                 \
  X(CUpti_ActivityObjectKindId, union, )                              \
  X(CUpti_MetricValue, union, )                                       \
  X(CUpti_Activity, struct, TBE_CUPTI_RECORD)                         \
  X(CUpti_ActivityKernel10, struct, TBE_CUPTI_RECORD)                 \
  X(CUpti_ActivityMemcpy6, struct, TBE_CUPTI_RECORD)                  \
  X(CUpti_ActivityMemcpyPtoP4, struct, TBE_CUPTI_RECORD)              \
  X(CUpti_ActivityMemset4, struct, TBE_CUPTI_RECORD)                  \
  X(CUpti_ActivityAPI, struct, TBE_CUPTI_RECORD)                      \
  X(CUpti_ActivitySynchronization2, struct, TBE_CUPTI_RECORD)         \
  X(CUpti_ActivityMarker2, struct, TBE_CUPTI_RECORD)                  \
  X(CUpti_ActivityMarkerData2, struct, TBE_CUPTI_RECORD)              \
  X(CUpti_ActivityOverhead3, struct, TBE_CUPTI_RECORD)                \
  X(CUpti_ActivityDevice5, struct, TBE_CUPTI_RECORD)                  \
  X(CUpti_ActivityContext3, struct, TBE_CUPTI_RECORD)                 \
  X(CUpti_ActivityName, struct, TBE_CUPTI_RECORD)                     \
  X(CUpti_ActivityMemory4, struct, TBE_CUPTI_RECORD)                  \
  X(CUpti_CallbackData, struct, )                                     \
  X(CUpti_NvtxData, struct, )                                         \
  X(nvtxEventAttributes_v2, struct, )                                 \
  X(nvtxRangePushA_params, struct, )                                  \
  X(nvtxRangeStartA_params, struct, )                                 \
  X(nvtxRangePushEx_params, struct, )                                 \
  X(nvtxRangeStartEx_params, struct, )                                \
  X(nvtxRangeEnd_params, struct, )                                    \
  X(nvtxDomainCreateA_params, struct, )                               \
  X(nvtxDomainRangePop_params, struct, )                              \
  X(nvtxDomainRangePushEx_params, struct, )                           \
  X(nvtxDomainRangeStartEx_params, struct, )                          \
  X(nvtxDomainRangeEnd_params, struct, )                              \
  X(CUpti_ResourceData, struct, )                                     \
  X(CUpti_Device_GetChipName_Params, struct, )                        \
  X(CUpti_Profiler_Initialize_Params, struct, )                       \
  X(CUpti_Profiler_GetCounterAvailability_Params, struct, )           \
  X(CUpti_PmSampling_CounterDataImage_Initialize_Params, struct, )    \
  X(CUpti_PmSampling_CounterData_GetSampleInfo_Params, struct, )      \
  X(CUpti_PmSampling_DecodeData_Params, struct, )                     \
  X(CUpti_PmSampling_Disable_Params, struct, )                        \
  X(CUpti_PmSampling_Enable_Params, struct, )                         \
  X(CUpti_PmSampling_GetCounterAvailability_Params, struct, )         \
  X(CUpti_PmSampling_GetCounterDataInfo_Params, struct, )             \
  X(CUpti_PmSampling_GetCounterDataSize_Params, struct, )             \
  X(CUpti_PmSampling_SetConfig_Params, struct, )                      \
  X(CUpti_PmSampling_Start_Params, struct, )                          \
  X(CUpti_PmSampling_Stop_Params, struct, )                           \
  X(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, struct, ) \
  X(CUpti_RangeProfiler_DecodeData_Params, struct, )                  \
  X(CUpti_RangeProfiler_Disable_Params, struct, )                     \
  X(CUpti_RangeProfiler_Enable_Params, struct, )                      \
  X(CUpti_RangeProfiler_GetCounterDataInfo_Params, struct, )          \
  X(CUpti_RangeProfiler_GetCounterDataSize_Params, struct, )          \
  X(CUpti_RangeProfiler_PopRange_Params, struct, )                    \
  X(CUpti_RangeProfiler_PushRange_Params, struct, )                   \
  X(CUpti_RangeProfiler_SetConfig_Params, struct, )                   \
  X(CUpti_RangeProfiler_Start_Params, struct, )                       \
  X(CUpti_RangeProfiler_Stop_Params, struct, )

/* Ours under NVIDIA's names, or, in the check, under tbe__abi_NAME (with
 * NVIDIA's types for the fields, so the check compares field types too). */
#ifdef TBE_CUPTI_ABI_CHECK
#define TBE_CUPTI_OURS(T) tbe__abi_##T
#else
#define TBE_CUPTI_OURS(T) T
#endif
#define TBE_CUPTI_FIELD(S, type, name, array) type name array;
#define TBE_CUPTI_DECLARE_STRUCT(T, kind, attr) \
  typedef kind attr { TBE_CUPTI_STRUCT_##T(TBE_CUPTI_FIELD, TBE_CUPTI_FIELD, T) } TBE_CUPTI_OURS(T);
TBE_CUPTI_STRUCTS(TBE_CUPTI_DECLARE_STRUCT)
#undef TBE_CUPTI_DECLARE_STRUCT

/* NAME_STRUCT_SIZE, X(type, its last member): NVIDIA's are macros of
 * CUPTI_PROFILER_STRUCT_SIZE, ours enum constants of the same value. */
#define TBE_CUPTI_PSIZE(T, last) (offsetof(T, last) + sizeof(((T *)0)->last))
#define TBE_CUPTI_STRUCT_SIZES(X)                                              \
  X(CUpti_Device_GetChipName_Params, pChipName)                                \
  X(CUpti_Profiler_Initialize_Params, pPriv)                                   \
  X(CUpti_Profiler_GetCounterAvailability_Params, pCounterAvailabilityImage)   \
  X(CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData)         \
  X(CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp)           \
  X(CUpti_PmSampling_DecodeData_Params, overflow)                              \
  X(CUpti_PmSampling_Disable_Params, pPmSamplingObject)                        \
  X(CUpti_PmSampling_Enable_Params, pPmSamplingObject)                         \
  X(CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage) \
  X(CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples)           \
  X(CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize)               \
  X(CUpti_PmSampling_SetConfig_Params, hwBufferAppendMode)                     \
  X(CUpti_PmSampling_Start_Params, pPmSamplingObject)                          \
  X(CUpti_PmSampling_Stop_Params, pPmSamplingObject)                           \
  X(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, pCounterData)      \
  X(CUpti_RangeProfiler_DecodeData_Params, numOfRangeDropped)                  \
  X(CUpti_RangeProfiler_Disable_Params, pRangeProfilerObject)                  \
  X(CUpti_RangeProfiler_Enable_Params, pRangeProfilerObject)                   \
  X(CUpti_RangeProfiler_GetCounterDataInfo_Params, numTotalRanges)             \
  X(CUpti_RangeProfiler_GetCounterDataSize_Params, counterDataSize)            \
  X(CUpti_RangeProfiler_PopRange_Params, pRangeProfilerObject)                 \
  X(CUpti_RangeProfiler_PushRange_Params, pRangeName)                          \
  X(CUpti_RangeProfiler_SetConfig_Params, targetNestingLevel)                  \
  X(CUpti_RangeProfiler_Start_Params, pRangeProfilerObject)                    \
  X(CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted)
#ifndef TBE_CUPTI_ABI_CHECK
#define CUPTI_PROFILER_STRUCT_SIZE(type_, lastfield_) TBE_CUPTI_PSIZE(type_, lastfield_)
#define TBE_CUPTI_DECLARE_SIZE(T, last) enum { T##_STRUCT_SIZE = TBE_CUPTI_PSIZE(T, last) };
TBE_CUPTI_STRUCT_SIZES(TBE_CUPTI_DECLARE_SIZE)
#undef TBE_CUPTI_DECLARE_SIZE
#endif

/* ---- functions: what cupti_load.c looks up ---- */

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed);
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                CUpti_Activity **record);
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                       size_t *dropped);
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag);
CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size,
                                               void *value);
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable);
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable);
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                          const char **name);
CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version);
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str);
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type);
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp);
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                    void *userdata);
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber);
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *deviceId);
CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *pParams);
CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *pParams);
CUptiResult CUPTIAPI
cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params *pParams);
CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterAvailability(CUpti_PmSampling_GetCounterAvailability_Params *pParams);
CUptiResult CUPTIAPI cuptiPmSamplingEnable(CUpti_PmSampling_Enable_Params *pParams);
CUptiResult CUPTIAPI cuptiPmSamplingDisable(CUpti_PmSampling_Disable_Params *pParams);
CUptiResult CUPTIAPI cuptiPmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params *pParams);
CUptiResult CUPTIAPI cuptiPmSamplingStart(CUpti_PmSampling_Start_Params *pParams);
CUptiResult CUPTIAPI cuptiPmSamplingStop(CUpti_PmSampling_Stop_Params *pParams);
CUptiResult CUPTIAPI cuptiPmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params *pParams);
CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params *pParams);
CUptiResult CUPTIAPI cuptiPmSamplingCounterDataImageInitialize(
    CUpti_PmSampling_CounterDataImage_Initialize_Params *pParams);
CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params *pParams);
CUptiResult CUPTIAPI
cuptiPmSamplingCounterDataGetSampleInfo(CUpti_PmSampling_CounterData_GetSampleInfo_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *pParams);
CUptiResult CUPTIAPI
cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params *pParams);
CUptiResult CUPTIAPI cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params *pParams);
CUptiResult CUPTIAPI
cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params *pParams);

#endif /* our declarations */
#endif
