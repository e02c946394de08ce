// cuda_nvtx.cu: a small CUDA program to profile with `tbexport -- ./cuda_nvtx`.
//
// Steps wrapped in NVTX ranges (push/pop, nested, one with color and
// payload), many small kernels, a host-to-device copy from pageable memory
// and one from pinned memory, a memset, a device-to-host copy, a stream
// sync, a start/end range, a range in its own domain with a registered
// string, and a mark.  It prints exactly what it did so a profile can be
// checked against it:
//   cuda_nvtx: kernels=N memcpy=3 memset=1 nvtx_ranges=R nvtx_marks=1 ...
//
// usage: cuda_nvtx [--kernels N] [--steps S] [--step-sleep-ms MS]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      fprintf(stderr, "cuda_nvtx: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

__global__ void add_one(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long kernels = 2000;
  int steps = 4, sleep_ms = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
      kernels = atol(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--step-sleep-ms") && i + 1 < argc)
      sleep_ms = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: cuda_nvtx [--kernels N] [--steps S] [--step-sleep-ms MS]\n");
      return 2;
    }
  }
  if (steps < 1) steps = 1;
  if (kernels < steps) kernels = steps;
  const int n = 128;
  const size_t bytes = n * sizeof(float);
  long ranges = 0, marks = 0, copies = 0, memsets = 0, launched = 0;

  float *dev = NULL, *pinned = NULL;
  float *pageable = (float *)calloc(n, sizeof(float));
  CHECK(cudaMalloc(&dev, bytes));
  CHECK(cudaMallocHost(&pinned, bytes));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  // Initial data: pageable copy, memset, pinned copy.
  nvtxRangeId_t copy_range = nvtxRangeStartA("upload");
  ranges++;
  CHECK(cudaMemcpy(dev, pageable, bytes, cudaMemcpyHostToDevice));
  copies++;
  CHECK(cudaMemsetAsync(dev, 0, bytes, stream));
  memsets++;
  CHECK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, stream));
  copies++;
  CHECK(cudaStreamSynchronize(stream));
  nvtxRangeEnd(copy_range);

  double t0 = now_s();
  for (int s = 0; s < steps; s++) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xff76b900u;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = (uint64_t)s;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    char name[32];
    snprintf(name, sizeof name, "step %d", s);
    a.message.ascii = name;
    nvtxRangePushEx(&a);
    ranges++;
    nvtxRangePushA("kernels");
    ranges++;
    long todo = kernels / steps + (s < kernels % steps ? 1 : 0);
    for (long k = 0; k < todo; k++) add_one<<<1, n, 0, stream>>>(dev, n);
    launched += todo;
    CHECK(cudaGetLastError());
    nvtxRangePop();
    CHECK(cudaStreamSynchronize(stream));
    nvtxRangePop();
    if (sleep_ms > 0) usleep((useconds_t)sleep_ms * 1000);
  }
  double loop = now_s() - t0;

  // Download and check, in a domain with a registered string.
  nvtxDomainHandle_t dom = nvtxDomainCreateA("tbexport_sample");
  nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "download");
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = reg;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xff0000ffu;
  nvtxDomainRangePushEx(dom, &a);
  ranges++;
  CHECK(cudaMemcpy(pageable, dev, bytes, cudaMemcpyDeviceToHost));
  copies++;
  nvtxDomainRangePop(dom);
  nvtxMarkA("done");
  marks++;
  CHECK(cudaDeviceSynchronize());

  int ok = 1;
  for (int i = 0; i < n; i++)
    if (pageable[i] != (float)launched) ok = 0;
  printf("cuda_nvtx: kernels=%ld memcpy=%ld memset=%ld nvtx_ranges=%ld nvtx_marks=%ld "
         "loop_s=%.6f result=%s\n",
         launched, copies, memsets, ranges, marks, loop, ok ? "ok" : "WRONG");
  cudaFreeHost(pinned);
  cudaFree(dev);
  cudaStreamDestroy(stream);
  free(pageable);
  nvtxDomainDestroy(dom);
  return ok ? 0 : 1;
}
