/* collect_fake_nvml.c: a stand-in for libnvidia-ml.so.1, for
 * test/cli/test_memory_collect.sh and test_collect.
 *
 * The collector loads it in place of NVML when TBEXPORT_NVML_LIB names it
 * (collect/nvml.c); the program under test loads the same file (one copy
 * in the process) and says how much device memory it uses with
 * fake_nvml_set(gpu, bytes), as the driver would see after its
 * cudaMalloc calls.  It exports the NVML functions nvml.c looks up, with
 * the ABI of collect/nvml_abi.h.
 *
 * GPUs: $FAKE_NVML_GPUS of them (default 2), UUIDs
 * GPU-fa6e0000-0000-0000-0000-0000000000NN for GPU NN, the UUID
 * collect_fake_libcupti.c's fake_cupti_device(NN) gives.  Each lists pid 1
 * (another program, 1 GiB) and, once fake_nvml_set named it, the calling
 * process with its bytes; the GPU's used memory is their sum.
 * $FAKE_NVML_MODE: "noproc" refuses the per-process list
 * (NVML_ERROR_NOT_SUPPORTED), "noinit" refuses nvmlInit
 * (NVML_ERROR_NO_PERMISSION).  fake_nvml_samples() counts the process
 * lists and memory figures read (the collector's samples, one per GPU). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/nvml_abi.h"

#define API __attribute__((visibility("default")))
#define MAXG 8
#define OTHER_BYTES (1ull << 30)

static atomic_llong used[MAXG] = {-1, -1, -1, -1, -1, -1, -1, -1}; /* -1: not listed */
static atomic_int inits, samples;

static const char *mode(void) {
  const char *m = getenv("FAKE_NVML_MODE");
  return m ? m : "";
}

static unsigned ngpus(void) {
  const char *n = getenv("FAKE_NVML_GPUS");
  unsigned v = n ? (unsigned)atoi(n) : 2;
  return v > MAXG ? MAXG : v;
}

/* Device handles are the pointers 1, 2, ... (never dereferenced). */
static int index_of(tbe__nvml_device d) {
  long i = (long)(intptr_t)d - 1;
  return i >= 0 && i < (long)ngpus() ? (int)i : -1;
}

API void fake_nvml_set(unsigned gpu, long long bytes) {
  if (gpu < MAXG) atomic_store(&used[gpu], bytes);
}
API int fake_nvml_samples(void) { return atomic_load(&samples); }
API int fake_nvml_inits(void) { return atomic_load(&inits); }

API tbe__nvml_return nvmlInit_v2(void) {
  if (strcmp(mode(), "noinit") == 0) return TBE__NVML_ERROR_NO_PERMISSION;
  atomic_fetch_add(&inits, 1);
  return TBE__NVML_SUCCESS;
}

API tbe__nvml_return nvmlShutdown(void) {
  atomic_fetch_sub(&inits, 1);
  return TBE__NVML_SUCCESS;
}

API const char *nvmlErrorString(tbe__nvml_return r) {
  return r == TBE__NVML_ERROR_NO_PERMISSION   ? "Insufficient Permissions"
         : r == TBE__NVML_ERROR_NOT_SUPPORTED ? "Not Supported"
                                              : "Unknown Error";
}

API tbe__nvml_return nvmlDeviceGetCount_v2(unsigned int *count) {
  *count = ngpus();
  return TBE__NVML_SUCCESS;
}

API tbe__nvml_return nvmlDeviceGetHandleByIndex_v2(unsigned int i, tbe__nvml_device *d) {
  if (i >= ngpus()) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *d = (tbe__nvml_device)(intptr_t)(i + 1);
  return TBE__NVML_SUCCESS;
}

API tbe__nvml_return nvmlDeviceGetUUID(tbe__nvml_device d, char *uuid, unsigned int length) {
  int i = index_of(d);
  if (i < 0) return 2;
  snprintf(uuid, length, "GPU-fa6e0000-0000-0000-0000-0000000000%02x", (unsigned)i);
  return TBE__NVML_SUCCESS;
}

API tbe__nvml_return nvmlDeviceGetComputeRunningProcesses_v3(tbe__nvml_device d,
                                                             unsigned int *count,
                                                             tbe__nvml_process_info *infos) {
  int i = index_of(d);
  if (i < 0) return 2;
  if (strcmp(mode(), "noproc") == 0) return TBE__NVML_ERROR_NOT_SUPPORTED;
  atomic_fetch_add(&samples, 1);
  long long mine = atomic_load(&used[i]);
  unsigned n = mine >= 0 ? 2 : 1;
  if (*count < n) {
    *count = n;
    return TBE__NVML_ERROR_INSUFFICIENT_SIZE;
  }
  memset(infos, 0, n * sizeof *infos);
  infos[0].pid = 1;
  infos[0].usedGpuMemory = OTHER_BYTES;
  infos[0].gpuInstanceId = infos[0].computeInstanceId = 0xFFFFFFFFu;
  if (mine >= 0) {
    infos[1].pid = (unsigned)getpid();
    infos[1].usedGpuMemory = (unsigned long long)mine;
    infos[1].gpuInstanceId = infos[1].computeInstanceId = 0xFFFFFFFFu;
  }
  *count = n;
  return TBE__NVML_SUCCESS;
}

API tbe__nvml_return nvmlDeviceGetMemoryInfo(tbe__nvml_device d, tbe__nvml_memory *m) {
  int i = index_of(d);
  if (i < 0) return 2;
  atomic_fetch_add(&samples, 1);
  long long mine = atomic_load(&used[i]);
  m->total = 141ull << 30;
  m->used = OTHER_BYTES + (mine > 0 ? (unsigned long long)mine : 0);
  m->free = m->total - m->used;
  return TBE__NVML_SUCCESS;
}
