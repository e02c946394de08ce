/* nvml_abi.h: the part of NVML's ABI (libnvidia-ml.so.1, the NVIDIA
 * driver's management library) that collect/nvml.c uses, written here so
 * that nothing of ours needs <nvml.h> to build.
 *
 * The collector never links NVML: nvml.c dlopens it at run time and looks
 * these functions up by name.  What it needs at compile time is only
 * this: the result codes it tells apart, the two structs it reads and the
 * functions' types.  nvml_abi_check.c, compiled wherever <nvml.h> is
 * found at configure time, asserts every value, size and offset below
 * against NVIDIA's header and declares each function pointer type against
 * NVIDIA's prototype, so the two cannot drift apart.
 *
 * Versions: the _v2 entry points (nvmlInit_v2, nvmlDeviceGetCount_v2,
 * nvmlDeviceGetHandleByIndex_v2) are those of every driver since R319;
 * nvmlDeviceGetComputeRunningProcesses_v3 (R510, 2022) fills the
 * 24-byte nvmlProcessInfo_t below (pid, usedGpuMemory, the MIG
 * instance ids).  LP64 only, like cupti_abi.h. */
#ifndef TBE_COLLECT_NVML_ABI_H
#define TBE_COLLECT_NVML_ABI_H

#include <stdint.h>

/* nvmlReturn_t: an enum of no negative value (unsigned int) */
typedef unsigned int tbe__nvml_return;
enum {
  TBE__NVML_SUCCESS = 0,
  TBE__NVML_ERROR_UNINITIALIZED = 1,
  TBE__NVML_ERROR_NOT_SUPPORTED = 3,
  TBE__NVML_ERROR_NO_PERMISSION = 4,
  TBE__NVML_ERROR_INSUFFICIENT_SIZE = 7,
  TBE__NVML_ERROR_DRIVER_NOT_LOADED = 9
};

/* NVML_VALUE_NOT_AVAILABLE: usedGpuMemory when the driver cannot say
 * (Windows' WDDM mode). */
#define TBE__NVML_VALUE_NOT_AVAILABLE (~0ull)

/* NVML_DEVICE_UUID_V2_BUFFER_SIZE: a UUID's text and its NUL. */
#define TBE__NVML_UUID_BUFFER 96u

typedef struct tbe__nvml_device_st *tbe__nvml_device; /* nvmlDevice_t (opaque) */

/* nvmlProcessInfo_t (nvmlProcessInfo_v2_t). */
typedef struct tbe__nvml_process_info {
  unsigned int pid;
  unsigned long long usedGpuMemory; /* bytes, or TBE__NVML_VALUE_NOT_AVAILABLE */
  unsigned int gpuInstanceId;       /* MIG: 0xFFFFFFFF when not a MIG device */
  unsigned int computeInstanceId;
} tbe__nvml_process_info;

/* nvmlMemory_t (version 1: nvmlDeviceGetMemoryInfo). */
typedef struct tbe__nvml_memory {
  unsigned long long total, free, used; /* bytes */
} tbe__nvml_memory;

typedef tbe__nvml_return (*tbe__nvml_init_fn)(void);                 /* nvmlInit_v2 */
typedef tbe__nvml_return (*tbe__nvml_shutdown_fn)(void);             /* nvmlShutdown */
typedef tbe__nvml_return (*tbe__nvml_count_fn)(unsigned int *count); /* nvmlDeviceGetCount_v2 */
typedef tbe__nvml_return (*tbe__nvml_handle_fn)(unsigned int index,
                                                tbe__nvml_device *device); /* ..ByIndex_v2 */
typedef tbe__nvml_return (*tbe__nvml_uuid_fn)(tbe__nvml_device device, char *uuid,
                                              unsigned int length); /* nvmlDeviceGetUUID */
typedef tbe__nvml_return (*tbe__nvml_procs_fn)(
    tbe__nvml_device device, unsigned int *count,
    tbe__nvml_process_info *infos); /* nvmlDeviceGetComputeRunningProcesses_v3 */
typedef tbe__nvml_return (*tbe__nvml_meminfo_fn)(tbe__nvml_device device,
                                                 tbe__nvml_memory *memory); /* ..GetMemoryInfo */
typedef const char *(*tbe__nvml_error_fn)(tbe__nvml_return r);              /* nvmlErrorString */

#endif
