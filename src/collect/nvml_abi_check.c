/* nvml_abi_check.c: proves nvml_abi.h says what NVIDIA's <nvml.h> says.
 *
 * Compiled (an object linked into nothing) wherever CMake finds nvml.h;
 * it does not compile when a result code, a struct's size or a field's
 * offset differs, or when a function's type does not match NVIDIA's
 * prototype once our opaque device handle stands for nvmlDevice_t. */
#include <stddef.h>

#include <nvml.h>

#include "collect/nvml_abi.h"

#define SAME(ours, theirs) _Static_assert((long long)(ours) == (long long)(theirs), #ours);

SAME(TBE__NVML_SUCCESS, NVML_SUCCESS)
SAME(TBE__NVML_ERROR_UNINITIALIZED, NVML_ERROR_UNINITIALIZED)
SAME(TBE__NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NOT_SUPPORTED)
SAME(TBE__NVML_ERROR_NO_PERMISSION, NVML_ERROR_NO_PERMISSION)
SAME(TBE__NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INSUFFICIENT_SIZE)
SAME(TBE__NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_DRIVER_NOT_LOADED)
SAME(TBE__NVML_VALUE_NOT_AVAILABLE, NVML_VALUE_NOT_AVAILABLE)
SAME(TBE__NVML_UUID_BUFFER, NVML_DEVICE_UUID_V2_BUFFER_SIZE)
SAME(sizeof(tbe__nvml_return), sizeof(nvmlReturn_t))
SAME(sizeof(tbe__nvml_device), sizeof(nvmlDevice_t))

#define FIELD(ours, theirs, f)                 \
  SAME(offsetof(ours, f), offsetof(theirs, f)) \
  SAME(sizeof(((ours *)0)->f), sizeof(((theirs *)0)->f))
SAME(sizeof(tbe__nvml_process_info), sizeof(nvmlProcessInfo_t))
FIELD(tbe__nvml_process_info, nvmlProcessInfo_t, pid)
FIELD(tbe__nvml_process_info, nvmlProcessInfo_t, usedGpuMemory)
FIELD(tbe__nvml_process_info, nvmlProcessInfo_t, gpuInstanceId)
FIELD(tbe__nvml_process_info, nvmlProcessInfo_t, computeInstanceId)
SAME(sizeof(tbe__nvml_memory), sizeof(nvmlMemory_t))
FIELD(tbe__nvml_memory, nvmlMemory_t, total)
FIELD(tbe__nvml_memory, nvmlMemory_t, free)
FIELD(tbe__nvml_memory, nvmlMemory_t, used)

/* The prototypes: NVIDIA's functions, assigned to our pointer types with
 * nvmlDevice_t in place of our handle (the compiler refuses any other
 * difference: a return type, a parameter's type or count). */
typedef nvmlReturn_t (*their_handle_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*their_uuid_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*their_procs_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
typedef nvmlReturn_t (*their_meminfo_fn)(nvmlDevice_t, nvmlMemory_t *);
_Static_assert(__builtin_types_compatible_p(tbe__nvml_return, nvmlReturn_t) ||
                   sizeof(tbe__nvml_return) == sizeof(nvmlReturn_t),
               "nvmlReturn_t");
static their_handle_fn const check_handle = nvmlDeviceGetHandleByIndex_v2;
static their_uuid_fn const check_uuid = nvmlDeviceGetUUID;
static their_procs_fn const check_procs = nvmlDeviceGetComputeRunningProcesses_v3;
static their_meminfo_fn const check_meminfo = nvmlDeviceGetMemoryInfo;
static nvmlReturn_t (*const check_init)(void) = nvmlInit_v2;
static nvmlReturn_t (*const check_shutdown)(void) = nvmlShutdown;
static nvmlReturn_t (*const check_count)(unsigned int *) = nvmlDeviceGetCount_v2;
static const char *(*const check_error)(nvmlReturn_t) = nvmlErrorString;

/* Referenced, so that -Wunused does not stop the check. */
const void *tbe__nvml_abi_checked[] = {(const void *)check_handle, (const void *)check_uuid,
                                       (const void *)check_procs,  (const void *)check_meminfo,
                                       (const void *)check_init,   (const void *)check_shutdown,
                                       (const void *)check_count,  (const void *)check_error};
