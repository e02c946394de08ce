/* cupti_floor.c: libcupti_floor.so, the overhead floor of the benchmark.
 *
 * A bare CUPTI Activity reader loaded like the collector (through
 * CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH) into an unmodified program.
 * It enables the same activity kinds as libtbexport_inject.so (default
 * cuda,nvtx; TBEXPORT_FLOOR_TRACE=cuda,nvtx,memory,driver picks others),
 * filters the same noisy API calls, hands CUPTI recycled 4 MiB buffers and
 * only counts the records, on CUPTI's thread.  At exit it forces a flush
 * and prints the counts on stderr.  Whatever the collector costs beyond
 * this is its own overhead (scripts/bench_overhead.sh compares them).
 * Built only with CUDA; exports only the injection entry points. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#define API __attribute__((visibility("default")))
#define BUF_SIZE (4u << 20)
#define POOL_MAX 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *pool[POOL_MAX];
static int npool;
static unsigned long long records, kernels, copies, memsets, apis, markers, other, dropped;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *maxrec) {
  *maxrec = 0;
  pthread_mutex_lock(&mu);
  uint8_t *b = npool ? pool[--npool] : NULL;
  pthread_mutex_unlock(&mu);
  if (!b) b = aligned_alloc(8, BUF_SIZE);
  *buf = b;
  *size = b ? BUF_SIZE : 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                               size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *r = NULL;
  unsigned long long n = 0, k = 0, c = 0, m = 0, a = 0, mk = 0, o = 0;
  while (valid && cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    n++;
    switch (r->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: k++; break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
      case CUPTI_ACTIVITY_KIND_MEMCPY2: c++; break;
      case CUPTI_ACTIVITY_KIND_MEMSET: m++; break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: a++; break;
      case CUPTI_ACTIVITY_KIND_MARKER: mk++; break;
      case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        CUpti_ActivityOverhead3 *ov = (CUpti_ActivityOverhead3 *)r;
        free(ov->overheadData);
        o++;
        break;
      }
      default: o++; break;
    }
  }
  size_t d = 0;
  cuptiActivityGetNumDroppedRecords(NULL, 0, &d);
  pthread_mutex_lock(&mu);
  records += n, kernels += k, copies += c, memsets += m, apis += a, markers += mk, other += o;
  dropped += d;
  if (npool < POOL_MAX)
    pool[npool++] = buf;
  else
    free(buf);
  pthread_mutex_unlock(&mu);
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  fprintf(stderr,
          "cupti_floor: records %llu (kernels %llu, copies %llu, memsets %llu, api %llu, "
          "markers %llu, other %llu), dropped %llu\n",
          records, kernels, copies, memsets, apis, markers, other, dropped);
}

static void start(void) {
  const char *tr = getenv("TBEXPORT_FLOOR_TRACE");
  if (!tr) tr = "cuda,nvtx";
  int cuda = strstr(tr, "cuda") != NULL, nvtx = strstr(tr, "nvtx") != NULL;
  int memory = strstr(tr, "memory") != NULL, driver = strstr(tr, "driver") != NULL;
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) {
    fprintf(stderr, "cupti_floor: cuptiActivityRegisterCallbacks failed\n");
    return;
  }
  if (cuda || nvtx) cuptiActivityEnableAndDump(CUPTI_ACTIVITY_KIND_DEVICE);
  if (cuda) {
    cuptiActivityEnableAndDump(CUPTI_ACTIVITY_KIND_CONTEXT);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_OVERHEAD);
  }
  if (driver) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  if (memory) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (nvtx) {
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER_DATA);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_NAME);
  }
  if (cuda) {
    /* The same noisy calls the collector leaves out. */
    static const CUpti_CallbackId rt[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v2_v11030,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030,
        CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000};
    for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) cuptiActivityEnableRuntimeApi(rt[i], 0);
  }
  atexit(at_exit);
}

API int InitializeInjection(void) {
  pthread_once(&once, start);
  return 1;
}

API int InitializeInjectionNvtx2(const void *(*get)(uint32_t)) {
  pthread_once(&once, start);
  void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libcupti.so", RTLD_NOW | RTLD_NOLOAD);
  int (*f)(const void *(*)(uint32_t)) = NULL;
  void *p = h ? dlsym(h, "InitializeInjectionNvtx2") : NULL;
  memcpy(&f, &p, sizeof p);
  return f ? f(get) : 0;
}
