/* nvml.c: device memory in use per GPU from NVML (nvml.h).
 *
 * Everything here runs on the collector's background thread (start, each
 * sample, stop), so the state is plain statics without a lock.  The
 * process table NVML fills is a fixed array of this state: sampling
 * allocates nothing.
 *
 * Invariants: a GPU's mode is decided at its first sample and kept (one
 * track per GPU, named for the figure it holds); a per-process series
 * starts at the first sample that lists our pid and then has a value at
 * every sample (0 when we are gone); the library is closed only after
 * nvmlShutdown. */
#include "collect/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/nvml_abi.h"
#include "events/spool.h"

#define TBE__NVML_MAX_GPUS 64u
#define TBE__NVML_MAX_PROCS 256u /* processes read per GPU and sample */

enum { MODE_UNDECIDED = 0, MODE_PROC = 1, MODE_DEVICE = 2, MODE_OFF = 3 };

typedef struct gpu {
  tbe__nvml_device h;
  uint8_t uuid[16];
  int mode;
  int ours_seen;   /* our pid was listed once: a value at every sample since */
  int others_seen; /* NVML listed other processes here */
} gpu;

static struct {
  void *lib;
  int on;
  uint32_t pid;
  unsigned ngpus;
  gpu gpus[TBE__NVML_MAX_GPUS];
  tbe__nvml_process_info procs[TBE__NVML_MAX_PROCS];
  tbe__nvml_init_fn init;
  tbe__nvml_shutdown_fn shutdown;
  tbe__nvml_count_fn count;
  tbe__nvml_handle_fn handle;
  tbe__nvml_uuid_fn uuid;
  tbe__nvml_procs_fn running;
  tbe__nvml_meminfo_fn meminfo;
  tbe__nvml_error_fn error;
} N;

/* ---- start / stop ---- */

static int hexval(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into 16 bytes (CUDA's CUuuid
 * of the same GPU); anything else (a MIG instance's "MIG-...") leaves
 * zeroes: a UUID no CUDA device has. */
static void parse_uuid(const char *s, uint8_t out[16]) {
  memset(out, 0, 16);
  if (strncmp(s, "GPU-", 4) != 0) return;
  uint8_t v[16];
  unsigned n = 0;
  for (const char *p = s + 4; *p && n < 16; p++) {
    if (*p == '-') continue;
    int h = hexval(p[0]), l = p[1] ? hexval(p[1]) : -1;
    if (h < 0 || l < 0) return;
    v[n++] = (uint8_t)(h << 4 | l);
    p++;
  }
  if (n == 16) memcpy(out, v, 16);
}

static const char *errstr(tbe__nvml_return r) {
  const char *s = N.error ? N.error(r) : NULL;
  return s ? s : "NVML error";
}

static int fail(char *why, size_t whylen, const char *what, const char *detail) {
  snprintf(why, whylen, "device memory in use is not sampled: %s%s%s", what, detail ? ": " : "",
           detail ? detail : "");
  if (N.lib) {
    if (N.on && N.shutdown) N.shutdown();
    dlclose(N.lib);
  }
  memset(&N, 0, sizeof N);
  return -1;
}

#define SYM(field, name) *(void **)&N.field = dlsym(N.lib, name)

int tbe__nvml_start(uint32_t pid, char *why, size_t whylen) {
  if (whylen) why[0] = '\0';
  memset(&N, 0, sizeof N);
  const char *path = getenv(TBE__NVML_ENV_LIB);
  if (!path || !*path) path = "libnvidia-ml.so.1";
  N.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!N.lib) return fail(why, whylen, "cannot load NVML", dlerror());
  SYM(init, "nvmlInit_v2");
  SYM(shutdown, "nvmlShutdown");
  SYM(count, "nvmlDeviceGetCount_v2");
  SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
  SYM(uuid, "nvmlDeviceGetUUID");
  SYM(running, "nvmlDeviceGetComputeRunningProcesses_v3");
  SYM(meminfo, "nvmlDeviceGetMemoryInfo");
  SYM(error, "nvmlErrorString");
  if (!N.init || !N.shutdown || !N.count || !N.handle || !N.uuid || !N.meminfo)
    return fail(why, whylen, "NVML lacks a function it needs", path);
  tbe__nvml_return r = N.init();
  if (r != TBE__NVML_SUCCESS) return fail(why, whylen, "nvmlInit failed", errstr(r));
  N.on = 1;
  unsigned n = 0;
  r = N.count(&n);
  if (r != TBE__NVML_SUCCESS) return fail(why, whylen, "nvmlDeviceGetCount failed", errstr(r));
  if (n > TBE__NVML_MAX_GPUS) n = TBE__NVML_MAX_GPUS;
  for (unsigned i = 0; i < n; i++) {
    gpu *g = &N.gpus[N.ngpus];
    memset(g, 0, sizeof *g);
    if (N.handle(i, &g->h) != TBE__NVML_SUCCESS) continue; /* (one we may not see) */
    char text[TBE__NVML_UUID_BUFFER];
    text[0] = '\0';
    if (N.uuid(g->h, text, sizeof text) != TBE__NVML_SUCCESS) continue;
    text[sizeof text - 1] = '\0';
    parse_uuid(text, g->uuid);
    N.ngpus++;
  }
  if (!N.ngpus) return fail(why, whylen, "NVML lists no GPU", NULL);
  N.pid = pid;
  return 0;
}

void tbe__nvml_stop(char *note, size_t len) {
  if (len) note[0] = '\0';
  if (!N.lib) return;
  int ours = 0, others = 0, device = 0;
  for (unsigned i = 0; i < N.ngpus; i++) {
    ours |= N.gpus[i].ours_seen;
    others |= N.gpus[i].others_seen;
    device |= N.gpus[i].mode == MODE_DEVICE;
  }
  if (!ours && others && !device && len)
    snprintf(note, len,
             "NVML listed processes on the GPUs but never this one (pid %u), so its device "
             "memory in use was not recorded (a pid namespace of its own, as in a container?)",
             (unsigned)N.pid);
  if (N.on) N.shutdown();
  dlclose(N.lib);
  memset(&N, 0, sizeof N);
}

/* ---- sampling ---- */

static void put(const tbe__nvml_out *o, const gpu *g, int64_t ts, const char *name, double v) {
  tbe__sp_counter c;
  memset(&c, 0, sizeof c);
  c.ts = ts;
  c.value = v;
  c.name = o->str(o->ctx, name);
  c.device = UINT32_MAX; /* by UUID (nvml.h) */
  memcpy(c.uuid, g->uuid, sizeof c.uuid);
  tbe__spool_item(o->batch, TBE__SP_COUNTER, &c, sizeof c);
}

/* This process's bytes on `g`: 1 with *bytes set, 0 when not listed, -1
 * when NVML cannot say (the caller reads the whole GPU instead). */
static int our_bytes(gpu *g, unsigned long long *bytes) {
  if (!N.running) return -1;
  unsigned n = TBE__NVML_MAX_PROCS;
  tbe__nvml_return r = N.running(g->h, &n, N.procs);
  if (r != TBE__NVML_SUCCESS) return -1; /* refused, unsupported, over 256 processes */
  if (n > TBE__NVML_MAX_PROCS) n = TBE__NVML_MAX_PROCS;
  for (unsigned i = 0; i < n; i++) {
    if (N.procs[i].pid != N.pid) {
      g->others_seen = 1;
      continue;
    }
    if (N.procs[i].usedGpuMemory == TBE__NVML_VALUE_NOT_AVAILABLE) return -1;
    *bytes = N.procs[i].usedGpuMemory;
    return 1;
  }
  return 0;
}

void tbe__nvml_sample(const tbe__nvml_out *o, int64_t ts) {
  if (!N.lib) return;
  for (unsigned i = 0; i < N.ngpus; i++) {
    gpu *g = &N.gpus[i];
    if (g->mode == MODE_OFF) continue;
    unsigned long long b = 0;
    if (g->mode != MODE_DEVICE) {
      int k = our_bytes(g, &b);
      if (k >= 0) {
        g->mode = MODE_PROC;
        if (k == 1) g->ours_seen = 1;
        if (g->ours_seen) put(o, g, ts, TBE__NVML_NAME_PROC, k == 1 ? (double)b : 0.0);
        continue;
      }
      if (g->mode == MODE_PROC) continue; /* a passing refusal: no sample this time */
      g->mode = MODE_DEVICE;
    }
    tbe__nvml_memory m;
    if (N.meminfo(g->h, &m) != TBE__NVML_SUCCESS) {
      g->mode = MODE_OFF; /* neither figure: this GPU is left alone */
      continue;
    }
    put(o, g, ts, TBE__NVML_NAME_DEVICE, (double)m.used);
  }
}
