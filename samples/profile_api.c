/* profile_api.c: collecting GPU activity in-process with tbe_profiler_start /
 * tbe_profiler_stop, from plain C.
 *
 * Built with CUDA (TBE_SAMPLE_WITH_CUDA=1, as src/collect/CMakeLists.txt
 * does when the toolkit is found), it does the same kind of work as
 * samples/cuda_nvtx.cu between start and stop: NVTX ranges around S steps,
 * K small kernels per step launched through the CUDA driver API from an
 * embedded PTX kernel (add_one, JIT-compiled by the driver), a host-to-device
 * copy from pageable memory and one from pinned memory, a memset, stream
 * syncs, and a device-to-host copy to check the result.  Each step begins
 * with tbe_profiler_step(), so the run's steps are the loop's iterations
 * (the last one, with the download, until tbe_profiler_stop).  It then
 * prints what it did and what the profiler counted, and exits 1 when they
 * differ:
 *   profile_api: did kernels=N memcpy=3 memset=1 nvtx_ranges=R nvtx_marks=1 steps=S result=ok
 *   profile_api: profiler kernels=N memcpy=3 memset=1 nvtx_ranges=R nvtx_marks=1 steps=S ...
 *
 * NVTX reaches CUPTI only through NVTX_INJECTION64_PATH, read at the first
 * NVTX call; tbe_profiler_start sets it to the libcupti it loaded, so the
 * sample makes no NVTX call before starting the profiler.
 *
 * Run under `tbexport -- profile_api ...`, tbe_profiler_start returns
 * TBE_EBUSY (the process is already being collected); the sample then does
 * the same work under that collector, its tbe_profiler_step calls reaching
 * it (a failed call is an error), and tbexport writes the run, with S
 * steps, after it exits.
 *
 * Built without CUDA, the tbe_profiler_* API still exists and returns
 * TBE_ENOCUPTI; the sample says so and exits 0.
 *
 * usage: profile_api [LOGDIR] [--steps S] [--kernels K]   (K per step) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbexport.h"
#include "tbexport/profiler.h"

#if TBE_SAMPLE_WITH_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

/* add_one(float *x, int n): x[i] += 1 for i < n.  PTX ISA 8.0 for sm_80,
 * which the driver JIT-compiles for the GPU it runs on (sm_80 and newer). */
static const char add_one_ptx[] =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry add_one(\n"
    "  .param .u64 add_one_x,\n"
    "  .param .u32 add_one_n\n"
    ")\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .b64 %rd<5>;\n"
    "\n"
    "  ld.param.u64 %rd1, [add_one_x];\n"
    "  ld.param.u32 %r2, [add_one_n];\n"
    "  mov.u32 %r3, %ctaid.x;\n"
    "  mov.u32 %r4, %ntid.x;\n"
    "  mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r1, %r3, %r4, %r5;\n"
    "  setp.ge.s32 %p1, %r1, %r2;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mul.wide.s32 %rd3, %r1, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.f32 %f1, [%rd4];\n"
    "  add.f32 %f2, %f1, 0f3F800000;\n"
    "  st.global.f32 [%rd4], %f2;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

static int rt_ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  fprintf(stderr, "profile_api: %s failed: %s\n", what, cudaGetErrorString(e));
  return 0;
}

static int drv_ok(CUresult e, const char *what) {
  if (e == CUDA_SUCCESS) return 1;
  const char *s = NULL;
  if (cuGetErrorString(e, &s) != CUDA_SUCCESS || !s) s = "unknown error";
  fprintf(stderr, "profile_api: %s failed: %s (%d)\n", what, s, (int)e);
  return 0;
}

#define RT(call) rt_ok((call), #call)
#define DRV(call) drv_ok((call), #call)

typedef struct work {
  long kernels, copies, memsets, ranges, marks, steps;
  int result_ok;
} work;

/* Everything between start and stop.  Returns 0 or -1 (a line on stderr). */
static int do_work(CUfunction fn, CUstream st, float *dev, float *pageable, float *pinned, int n,
                   int steps, long per_step, work *w) {
  size_t bytes = (size_t)n * sizeof(float);
  int rc = 0;

  nvtxRangeId_t up = nvtxRangeStartA("upload");
  w->ranges++;
  for (int i = 0; i < n; i++) pageable[i] = 0.0f, pinned[i] = 0.0f;
  if (!RT(cudaMemcpy(dev, pageable, bytes, cudaMemcpyHostToDevice))) rc = -1;
  else w->copies++;
  if (!rc && !RT(cudaMemsetAsync(dev, 0, bytes, st))) rc = -1;
  else if (!rc) w->memsets++;
  if (!rc && !RT(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, st))) rc = -1;
  else if (!rc) w->copies++;
  if (!rc && !RT(cudaStreamSynchronize(st))) rc = -1;
  nvtxRangeEnd(up);
  if (rc) return rc;

  for (int s = 0; s < steps; s++) {
    /* Step s begins here (and step s-1 ends): cheap, any thread may call it. */
    int src = tbe_profiler_step();
    if (src != 0) {
      fprintf(stderr, "profile_api: tbe_profiler_step: %s\n", tbe_strerror(src));
      return -1;
    }
    w->steps++;
    char name[32];
    snprintf(name, sizeof name, "step %d", s);
    nvtxRangePushA(name);
    w->ranges++;
    nvtxRangePushA("kernels");
    w->ranges++;
    CUdeviceptr x = (CUdeviceptr)(uintptr_t)dev;
    void *args[2] = {&x, &n};
    for (long k = 0; k < per_step; k++) {
      if (!DRV(cuLaunchKernel(fn, 1, 1, 1, (unsigned)n, 1, 1, 0, st, args, NULL))) {
        rc = -1;
        break;
      }
      w->kernels++;
    }
    nvtxRangePop();
    if (!rc && !RT(cudaStreamSynchronize(st))) rc = -1;
    nvtxRangePop();
    if (rc) return rc;
  }

  nvtxRangePushA("download");
  w->ranges++;
  if (!RT(cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, st))) rc = -1;
  else w->copies++;
  if (!rc && !RT(cudaStreamSynchronize(st))) rc = -1;
  nvtxRangePop();
  nvtxMarkA("done");
  w->marks++;
  if (rc) return rc;
  w->result_ok = 1;
  for (int i = 0; i < n; i++)
    if (pinned[i] != (float)w->kernels) w->result_ok = 0;
  return 0;
}

#endif /* TBE_SAMPLE_WITH_CUDA */

static int usage(void) {
  fprintf(stderr, "usage: profile_api [LOGDIR] [--steps S] [--kernels K]\n");
  return 2;
}

/* What the profiler has to say (CUPTI refusing a call, a spool that could
 * not be written), one line each. */
static void print_message(void *ctx, tbe_message_level level, const char *line) {
  (void)ctx;
  fprintf(stderr, "profile_api: %s%s\n", level == TBE_MSG_ERROR ? "error: " : "", line);
}

int main(int argc, char **argv) {
  const char *logdir = "log_dir";
  long steps = 4, per_step = 500;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = strtol(argv[++i], &end, 10);
      if (*end || steps < 1 || steps > 100000) return usage();
    } else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) {
      per_step = strtol(argv[++i], &end, 10);
      if (*end || per_step < 1 || per_step > 10000000) return usage();
    } else if (argv[i][0] != '-') {
      logdir = argv[i];
    } else {
      return usage();
    }
  }

  if (steps * per_step > (1L << 24)) return usage(); /* the float check stays exact */

  tbe_profiler_options o;
  tbe_profiler_options_init(&o);
  o.logdir = logdir;
  o.run = "profile_api";
  o.force = 1;
  o.on_message = print_message; /* the library never prints: its messages come here */

#if !TBE_SAMPLE_WITH_CUDA
  (void)steps;
  (void)per_step;
  int rc = tbe_profiler_start(&o);
  if (rc == TBE_ENOCUPTI) {
    printf("profile_api: built without CUDA; tbe_profiler_start: %s (nothing to collect)\n",
           tbe_strerror(rc));
    return 0;
  }
  if (rc) {
    fprintf(stderr, "profile_api: tbe_profiler_start: %s\n", tbe_strerror(rc));
    return 1;
  }
  /* A collector without CUDA work of this program's own: stop at once. */
  tbe_profiler_result r;
  rc = tbe_profiler_stop(&r);
  if (rc) {
    fprintf(stderr, "profile_api: tbe_profiler_stop: %s\n", tbe_strerror(rc));
    return 1;
  }
  printf("profile_api: built without CUDA work; profiler kernels=%llu\n",
         (unsigned long long)r.kernels);
  return 0;
#else
  const int n = 128;
  const size_t bytes = (size_t)n * sizeof(float);
  int status = 1;
  float *dev = NULL, *pinned = NULL;
  float *pageable = calloc((size_t)n, sizeof(float));
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUstream st = NULL;
  CUcontext ctx = NULL;
  work w;
  memset(&w, 0, sizeof w);
  tbe_profiler_result r;
  memset(&r, 0, sizeof r);

  if (!pageable) {
    fprintf(stderr, "profile_api: out of memory\n");
    return 1;
  }
  /* The runtime creates and binds the primary context; the driver API
   * calls below use it. */
  if (!RT(cudaSetDevice(0)) || !RT(cudaFree(NULL))) goto out;
  if (!DRV(cuCtxGetCurrent(&ctx))) goto out;
  if (!ctx) {
    fprintf(stderr, "profile_api: no current CUDA context after cudaFree(NULL)\n");
    goto out;
  }
  {
    char log[4096];
    log[0] = 0;
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof log};
    if (!DRV(cuModuleLoadDataEx(&mod, add_one_ptx, 2, opt, val))) {
      if (log[0]) fprintf(stderr, "profile_api: PTX JIT log: %s\n", log);
      goto out;
    }
  }
  if (!DRV(cuModuleGetFunction(&fn, mod, "add_one"))) goto out;
  if (!RT(cudaMalloc((void **)&dev, bytes))) goto out;
  if (!RT(cudaMallocHost((void **)&pinned, bytes))) goto out;
  if (!RT(cudaStreamCreate(&st))) goto out;

  /* From here to stop only the work itself runs: the run holds exactly
   * what do_work counts.  A failure mid-work still stops the session (its
   * run is written) and then exits 1. */
  int rc = tbe_profiler_start(&o);
  if (rc == TBE_EBUSY) {
    /* Under `tbexport -- CMD`: its collector has this process already. */
    int wrc = do_work(fn, st, dev, pageable, pinned, n, (int)steps, per_step, &w);
    if (wrc == 0 && !RT(cudaDeviceSynchronize())) wrc = -1;
    if (wrc) goto out;
    printf("profile_api: under tbexport -- CMD: did kernels=%ld memcpy=%ld memset=%ld "
           "nvtx_ranges=%ld nvtx_marks=%ld steps=%ld result=%s\n",
           w.kernels, w.copies, w.memsets, w.ranges, w.marks, w.steps,
           w.result_ok ? "ok" : "WRONG");
    status = w.result_ok ? 0 : 1;
    goto out;
  }
  if (rc) {
    fprintf(stderr, "profile_api: tbe_profiler_start: %s\n", tbe_strerror(rc));
    goto out;
  }
  int wrc = do_work(fn, st, dev, pageable, pinned, n, (int)steps, per_step, &w);
  if (wrc == 0 && !RT(cudaDeviceSynchronize())) wrc = -1;
  rc = tbe_profiler_stop(&r);
  if (rc) {
    fprintf(stderr, "profile_api: tbe_profiler_stop: %s\n", tbe_strerror(rc));
    goto out;
  }
  if (wrc) goto out;

  printf("profile_api: did kernels=%ld memcpy=%ld memset=%ld nvtx_ranges=%ld nvtx_marks=%ld "
         "steps=%ld result=%s\n",
         w.kernels, w.copies, w.memsets, w.ranges, w.marks, w.steps,
         w.result_ok ? "ok" : "WRONG");
  printf("profile_api: profiler kernels=%llu memcpy=%llu memset=%llu nvtx_ranges=%llu "
         "nvtx_marks=%llu steps=%llu dropped=%llu gpu_busy=%.1f%%\n",
         (unsigned long long)r.kernels, (unsigned long long)r.copies,
         (unsigned long long)r.memsets, (unsigned long long)r.nvtx_ranges,
         (unsigned long long)r.nvtx_marks, (unsigned long long)r.steps,
         (unsigned long long)r.dropped_records, r.gpu_busy_pct);
  int same = r.kernels == (uint64_t)w.kernels && r.copies == (uint64_t)w.copies &&
             r.memsets == (uint64_t)w.memsets && r.nvtx_ranges == (uint64_t)w.ranges &&
             r.nvtx_marks == (uint64_t)w.marks && r.steps == (uint64_t)w.steps;
  if (!same) fprintf(stderr, "profile_api: the profiler's counts differ from the work done\n");
  if (!w.result_ok) fprintf(stderr, "profile_api: wrong result on the device\n");
  status = same && w.result_ok ? 0 : 1;

out:
  if (st) RT(cudaStreamDestroy(st));
  if (pinned) RT(cudaFreeHost(pinned));
  if (dev) RT(cudaFree(dev));
  if (mod) DRV(cuModuleUnload(mod));
  free(pageable);
  return status;
#endif
}
