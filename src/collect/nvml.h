/* nvml.h: the device memory this process uses on each GPU, sampled from
 * NVML (the driver's management library) on the collector's background
 * thread, at TBE__NVML_PERIOD_S, into counter items of the spool
 * (TBE__SP_COUNTER).
 *
 * Never on the program's threads: no work per launch, no lock, no
 * allocation there.  libnvidia-ml.so.1 (or $TBEXPORT_NVML_LIB, for tests)
 * is dlopen'ed by tbe__nvml_start; where it is missing or refuses (no
 * driver, no permission) start says why in one line, which the collector
 * notes in the spool, and the program runs as before.
 *
 * What a sample is, per GPU NVML lists:
 *   - "device memory used (NVML)": this process's used GPU memory, from
 *     nvmlDeviceGetComputeRunningProcesses matched on our pid.  Written
 *     from the first sample that lists us on that GPU, and 0 once we are
 *     gone from it, so that the curve comes down.
 *   - "device memory used, all processes (NVML)": the GPU's used memory
 *     (nvmlDeviceGetMemoryInfo), where the per-process figure is not
 *     available (the call refused, too many processes, or the driver
 *     cannot say the bytes): the name says which figure a track holds.
 * Each sample names its GPU by UUID (NVML numbers every GPU of the
 * machine, CUDA only those the process sees); conversion places it on
 * the CUDA ordinal of that UUID (TBE__SP_DEVICE_UUID).
 *
 * One sampler per process; start, sample and stop from one thread at a
 * time (the collector's). */
#ifndef TBE_COLLECT_NVML_H
#define TBE_COLLECT_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define TBE__NVML_PERIOD_S 0.1 /* 10 Hz: a few ioctls per GPU, on our thread */
#define TBE__NVML_ENV_LIB "TBEXPORT_NVML_LIB"

#define TBE__NVML_NAME_PROC "device memory used (NVML)"
#define TBE__NVML_NAME_DEVICE "device memory used, all processes (NVML)"

/* Where samples go: items appended to `batch`, names interned by `str`
 * (the decoder's string ids). */
typedef struct tbe__nvml_out {
  tbe__buf *batch;
  uint32_t (*str)(void *ctx, const char *s);
  void *ctx;
} tbe__nvml_out;

/* Loads NVML and finds the GPUs; `pid` is the process whose memory is
 * read.  Returns 0, or -1 with a one-line reason in why[0..whylen). */
int tbe__nvml_start(uint32_t pid, char *why, size_t whylen);
/* Samples every GPU at `ts` (CUPTI's clock) into o->batch.  Does nothing
 * when not started. */
void tbe__nvml_sample(const tbe__nvml_out *o, int64_t ts);
/* Ends sampling (NVML shut down, the library closed).  When NVML listed
 * processes on a GPU but never ours, writes a one-line note into
 * note[0..len) (else note[0] = 0): the per-process figure was not found
 * (a pid namespace of its own, as in a container). */
void tbe__nvml_stop(char *note, size_t len);

#endif
