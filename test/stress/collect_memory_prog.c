/* collect_memory_prog.c: the program test/cli/test_memory_collect.sh
 * profiles: CUDA memory of known sizes through the stand-in libcupti and
 * NVML, without a GPU.
 *
 * Loads the injection library ($CUDA_INJECTION64_PATH) and starts it as
 * the CUDA driver would; makes CUPTI's memory records through
 * collect_fake_libcupti.c ($TBEXPORT_CUPTI_LIB): device memory on two
 * GPUs, pinned host memory, managed memory, an async pool's allocation,
 * frees of some; then a planted leak, one 64 MiB allocation per step over
 * 20 steps marked with libtbexport's tbe_profiler_step
 * ($TBE_TEST_LIBTBEXPORT), never freed; and says the device memory it
 * holds to collect_fake_nvml.c ($TBEXPORT_NVML_LIB; with $TEST_NVML_WAIT
 * set it waits for the collector to sample each figure twice).  Every
 * record it made is written to the file named by argv[1], one JSON array
 * [op, kind, addr, bytes, device, pool] a line, for the test's check.
 *
 * A C program, not a Python one, so that it carries the build's sanitizer
 * runtime itself (python3 cannot host ThreadSanitizer's). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MiB (1ull << 20)

static void die(const char *what) {
  fprintf(stderr, "collect_memory_prog: %s\n", what);
  exit(2);
}

static void *open_lib(const char *env) {
  const char *p = getenv(env);
  void *h = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) die(env);
  return h;
}

static void *sym(void *h, const char *name) {
  void *f = dlsym(h, name);
  if (!f) die(name);
  return f;
}

static uint64_t (*now)(void);
static int (*api)(uint32_t, uint64_t, uint64_t); /* the allocating call's runtime record */
static int (*memory)(uint32_t, uint32_t, uint64_t, uint64_t, uint32_t, uint64_t, uint32_t,
                     uint32_t, uint32_t);
static void (*nvml_set)(unsigned, long long);
static int (*nvml_samples)(void);
static FILE *out;
static uint32_t corr = 1000;

static void sleep_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(long)(ms / 1000) * 1000) * 1e6)};
  nanosleep(&ts, NULL);
}

/* until the clock has passed t (records are never in the future) */
static void wait_past(uint64_t t) {
  while (now() <= t) sleep_ms(0.2);
}

static void mem(uint32_t op, uint32_t kind, uint64_t addr, uint64_t bytes, uint32_t dev,
                uint32_t stream, uint32_t pool) {
  uint64_t t = now();
  /* the call that made it, on this thread, for all but GPU 1's (which
   * stay on their stream: the importer's fallback) */
  if (dev != 1 && !api(corr + 1, t, t + 1)) die("an API record");
  if (!memory(op, kind, addr, bytes, dev, t, stream, ++corr, pool)) die("a memory record");
  fprintf(out, "[%u, %u, %llu, %llu, %u, %u]\n", op, kind, (unsigned long long)addr,
          (unsigned long long)bytes, dev, pool);
  wait_past(t + 1);
}

/* What the driver sees this process hold on GPU 0. */
static void nvml_to(unsigned long long bytes) {
  nvml_set(0, (long long)bytes);
  if (!getenv("TEST_NVML_WAIT")) return;
  int n = nvml_samples();
  for (int i = 0; i < 1000 && nvml_samples() < n + 4; i++) sleep_ms(5); /* 2 of each GPU */
}

int main(int argc, char **argv) {
  if (argc != 2 || !(out = fopen(argv[1], "w"))) die("usage: collect_memory_prog OUT");
  void *inj = open_lib("CUDA_INJECTION64_PATH");
  int (*init)(void) = (int (*)(void))sym(inj, "InitializeInjection");
  init(); /* as the CUDA driver does at cuInit */
  void *fake = open_lib("TBEXPORT_CUPTI_LIB");
  void *nvml = open_lib("TBEXPORT_NVML_LIB"); /* the collector's copy */
  void *tbe = open_lib("TBE_TEST_LIBTBEXPORT");
  *(void **)&now = sym(fake, "fake_cupti_now");
  *(void **)&memory = sym(fake, "fake_cupti_memory");
  *(void **)&api = sym(fake, "fake_cupti_api");
  *(void **)&nvml_set = sym(nvml, "fake_nvml_set");
  *(void **)&nvml_samples = sym(nvml, "fake_nvml_samples");
  int (*device)(uint32_t) = (int (*)(uint32_t))sym(fake, "fake_cupti_device");
  int (*step)(void) = (int (*)(void))sym(tbe, "tbe_profiler_step");
  device(0);
  device(1);
  nvml_to(300 * MiB); /* the context */
  /* known sizes: device memory on both GPUs, pinned host, managed, an async pool's */
  mem(1, 3, 0x7f0000000000ull, 1 * MiB + 123, 0, 7, 0);
  mem(1, 3, 0x7f1000000000ull, 256 * MiB, 1, 7, 0);
  mem(1, 2, 0x555500000000ull, 4 * MiB, 0, 0, 0);
  mem(1, 5, 0x7f2000000000ull, 2 * MiB, 0, 7, 0);
  mem(1, 3, 0x7f3000000400ull, 8 * MiB, 0, 7, 1);
  mem(2, 3, 0x7f0000000000ull, 1 * MiB + 123, 0, 7, 0);
  mem(2, 3, 0x7f3000000400ull, 8 * MiB, 0, 7, 1);
  mem(2, 2, 0x555500000000ull, 4 * MiB, 0, 0, 0);
  nvml_to(400 * MiB);
  /* the planted leak: one 64 MiB allocation per step, never freed */
  for (uint64_t i = 0; i < 20; i++) {
    if (step() != 0) die("tbe_profiler_step failed");
    mem(1, 3, 0x7e0000000000ull + i * 64 * MiB, 64 * MiB, 0, 7, 0);
    wait_past(now() + 2000000);
  }
  nvml_to(400 * MiB + 20 * 64 * MiB);
  if (fclose(out) != 0) die("cannot write the records' list");
  return 0;
}
