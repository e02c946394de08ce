/* cupti_abi_check.c: proves cupti_abi.h says what NVIDIA's headers say.
 *
 * Compiled (an object of its own, linked into nothing; the library's
 * build depends on it) in every configuration that has the CUDA toolkit's
 * headers; it does not compile
 * when any fact in cupti_abi.h differs from <cupti.h>:
 *   - every enum value in the lists, and each enum's size;
 *   - the profiler's NAME_STRUCT_SIZE values;
 *   - every record and union: size and alignment, and each field's
 *     offset, size and type (NVIDIA's type, through _Generic on a pointer
 *     to the field), walking the same lists that declare them;
 *   - the fields of the aggregates NVIDIA declares inline, one by one;
 *   - the typedefs and the functions' prototypes, which cupti_abi.h
 *     declares again under NVIDIA's names in this mode (a second
 *     declaration of another type is an error).
 * A record we add to the lists is checked without a word here. */
#include <stddef.h>

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <generated_nvtx_meta.h>

#define TBE_CUPTI_ABI_CHECK 1
#include "collect/cupti_abi.h"

/* ---- enums ---- */

#define CHECK_VALUE(name, value) _Static_assert((long long)(name) == (long long)(value), #name);
#define CHECK_ENUM(T)                  \
  TBE_CUPTI_ENUM_##T(CHECK_VALUE)      \
  _Static_assert(sizeof(T) == sizeof(int), #T " size");
TBE_CUPTI_ENUMS(CHECK_ENUM)

/* ---- records ---- */

#define FIELD_OF(T, name) (((T *)0)->name)
#define CHECK_AT(S, name)                                                              \
  _Static_assert(offsetof(S, name) == offsetof(tbe__abi_##S, name), #S "." #name " offset"); \
  _Static_assert(sizeof FIELD_OF(S, name) == sizeof FIELD_OF(tbe__abi_##S, name),            \
                 #S "." #name " size");
#define CHECK_FIELD(S, type, name, array)                                    \
  CHECK_AT(S, name)                                                          \
  _Static_assert(_Generic(&FIELD_OF(S, name), type(*) array: 1, default: 0), \
                 #S "." #name " type");
#define CHECK_INLINE(S, type, name, array) CHECK_AT(S, name)
#define CHECK_STRUCT(T, kind, attr)                                    \
  TBE_CUPTI_STRUCT_##T(CHECK_FIELD, CHECK_INLINE, T)                   \
  _Static_assert(sizeof(T) == sizeof(tbe__abi_##T), #T " size");       \
  _Static_assert(_Alignof(T) == _Alignof(tbe__abi_##T), #T " alignment");
TBE_CUPTI_STRUCTS(CHECK_STRUCT)

/* ---- the profiler's NAME_STRUCT_SIZE ---- */

#define CHECK_SIZE(T, last) \
  _Static_assert(TBE_CUPTI_PSIZE(tbe__abi_##T, last) == T##_STRUCT_SIZE, #T "_STRUCT_SIZE");
TBE_CUPTI_STRUCT_SIZES(CHECK_SIZE)

/* ---- the aggregates NVIDIA declares inline ---- */

#define CHECK_INNER(T, outer, ours, name)                                                     \
  _Static_assert(offsetof(T, outer.name) - offsetof(T, outer) == offsetof(ours, name),        \
                 #T "." #outer "." #name " offset");                                          \
  _Static_assert(sizeof FIELD_OF(T, outer.name) == sizeof FIELD_OF(ours, name),              \
                 #T "." #outer "." #name " size");
#define CHECK_WHOLE(T, outer, ours)                                               \
  _Static_assert(sizeof FIELD_OF(T, outer) == sizeof(ours), #T "." #outer " size"); \
  _Static_assert(_Alignof(__typeof__(FIELD_OF(T, outer))) == _Alignof(ours),    \
                 #T "." #outer " alignment");

CHECK_WHOLE(CUpti_ActivityKernel10, cacheConfig, tbe__cupti_cache_config)
CHECK_INNER(CUpti_ActivityKernel10, cacheConfig, tbe__cupti_cache_config, both)
CHECK_INNER(CUpti_ActivityKernel10, cacheConfig, tbe__cupti_cache_config, config)

CHECK_WHOLE(CUpti_ActivityObjectKindId, pt, tbe__cupti_object_pt)
CHECK_INNER(CUpti_ActivityObjectKindId, pt, tbe__cupti_object_pt, processId)
CHECK_INNER(CUpti_ActivityObjectKindId, pt, tbe__cupti_object_pt, threadId)
CHECK_WHOLE(CUpti_ActivityObjectKindId, dcs, tbe__cupti_object_dcs)
CHECK_INNER(CUpti_ActivityObjectKindId, dcs, tbe__cupti_object_dcs, deviceId)
CHECK_INNER(CUpti_ActivityObjectKindId, dcs, tbe__cupti_object_dcs, contextId)
CHECK_INNER(CUpti_ActivityObjectKindId, dcs, tbe__cupti_object_dcs, streamId)

CHECK_WHOLE(CUpti_ActivityMemory4, memoryPoolConfig, tbe__cupti_memory_pool_config)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig, tbe__cupti_memory_pool_config, memoryPoolType)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig, tbe__cupti_memory_pool_config, pad2)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig, tbe__cupti_memory_pool_config, address)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig, tbe__cupti_memory_pool_config,
            releaseThreshold)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig, tbe__cupti_memory_pool_config, pool)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig, tbe__cupti_memory_pool_config, utilizedSize)
CHECK_WHOLE(CUpti_ActivityMemory4, memoryPoolConfig.pool, tbe__cupti_pool_size)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig.pool, tbe__cupti_pool_size, size)
CHECK_INNER(CUpti_ActivityMemory4, memoryPoolConfig.pool, tbe__cupti_pool_size, processId)

CHECK_WHOLE(CUpti_ResourceData, resourceHandle, tbe__cupti_resource_handle)
CHECK_INNER(CUpti_ResourceData, resourceHandle, tbe__cupti_resource_handle, stream)

_Static_assert(NVTX_MESSAGE_TYPE_ASCII == 1, "NVTX_MESSAGE_TYPE_ASCII");
CHECK_WHOLE(nvtxEventAttributes_v2, payload, tbe__nvtx_payload)
CHECK_WHOLE(nvtxEventAttributes_v2, message, tbe__nvtx_message)
CHECK_INNER(nvtxEventAttributes_v2, message, tbe__nvtx_message, ascii)
CHECK_WHOLE(nvtxDomainRangePushEx_params, core, tbe__abi_nvtxRangePushEx_params)
CHECK_INNER(nvtxDomainRangePushEx_params, core, tbe__abi_nvtxRangePushEx_params, eventAttrib)
CHECK_WHOLE(nvtxDomainRangeStartEx_params, core, tbe__abi_nvtxRangeStartEx_params)
CHECK_INNER(nvtxDomainRangeStartEx_params, core, tbe__abi_nvtxRangeStartEx_params, eventAttrib)
CHECK_WHOLE(nvtxDomainRangeEnd_params, core, tbe__abi_nvtxRangeEnd_params)
CHECK_INNER(nvtxDomainRangeEnd_params, core, tbe__abi_nvtxRangeEnd_params, id)
