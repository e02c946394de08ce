/* rangeprof.c: per-kernel figures from CUPTI's range profiler (hwmetrics.h).
 *
 * The figures are ncu's metrics under ncu's names, so that `ncu --metrics`
 * measures the same thing (the GPU check compares them kernel by kernel).
 *
 * How a launch is measured.  Auto ranges with kernel replay: CUPTI makes
 * one range per kernel and replays the kernel inside the launch call until
 * every pass of the metric set is collected, so the kernel is serialized
 * and its figures are its own.  Only the first N launches of each kernel
 * name (per device) are measured; the others run untouched.  A measured
 * launch is bracketed on the launching thread, in CUPTI's driver callback:
 * at the launch's entry the counter data image is initialized, the
 * configuration set and the profiler started (a range pushed, named after
 * the kernel); at its exit the range is popped, the profiler stopped, the
 * data decoded and the one range evaluated into the kernel's sums.
 * Ranges are numbered, not named, in auto-range mode; measuring one launch
 * per start/stop is what ties a range to its kernel.  A start/stop that
 * caught more than one range (another thread launched into the same
 * context meanwhile) is dropped rather than guessed.
 *
 * The context's lock is held from entry to exit of a measured launch:
 * launches of other threads that are to be measured wait, the others do
 * not.  R.mu guards the tables (contexts, kernel names); the background
 * thread writes a kernel's figures (the means over its launches) once its
 * N launches are measured, and at stop (or a fatal signal) the rest.
 *
 * With a capture range (rpcapture.c), only launches made while it is
 * open are measured.  Each measured launch call is timed (a
 * TBE__SP_REPLAYED item) so that the importer can place the kernel when
 * CUPTI's record of a replayed kernel has no span and its launch no API
 * record (cuBLAS launches through the driver API, not traced by default).
 *
 * Failures (no permission, another profiler, an unsupported GPU) fail the
 * context once: a status and a line (pmsampling.c), and its launches then
 * run as without metrics. */
#include "collect/hwmetrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tbexport/profiler.h"

#define TBE__RP_MAXCTX 64
#define TBE__RP_RANGES 4u  /* ranges an image holds: one launch per start, and spares */

typedef struct rpmetric {
  const char *name, *source;
  unsigned unit;
} rpmetric;

/* TBE_KMETRICS_DEFAULT, in this order; BRIEF is the entries marked. */
static const rpmetric rp_defs[] = {
    {"sm_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", TBE__MU_PCT},
    {"mem_throughput_pct", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
     TBE__MU_PCT},
    {"duration_ns", "gpu__time_duration.sum", TBE__MU_COUNT},
    {"achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", TBE__MU_PCT},
    {"tensor_pipe_pct", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
     TBE__MU_PCT},
    {"l2_hit_pct", "lts__t_sector_hit_rate.pct", TBE__MU_PCT},
    {"dram_throughput_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed", TBE__MU_PCT},
};
#define NRP (sizeof rp_defs / sizeof rp_defs[0])
#define NRP_BRIEF 3u

typedef struct rpctx {
  CUcontext ctx;
  uint32_t device;
  int state;          /* 0 not set up, 1 ready, 2 failed, 3 released at exit */
  pthread_mutex_t mu; /* held from entry to exit of a measured launch */
  CUpti_RangeProfiler_Object *obj;
  tbe__ph_object *host;
  uint8_t *avail;     /* the counter availability image: the host object reads it */
  uint8_t *config, *data;
  size_t config_size, data_size;
} rpctx;

typedef struct rpkernel {
  char *name;
  uint32_t device;
  unsigned measured, pending, written;
  uint64_t dropped;
  double sum[NRP];
  unsigned nsum[NRP];
} rpkernel;

static struct {
  pthread_mutex_t mu;
  const tbe__cupti_metrics_api *api;
  CUptiResult (*timestamp)(uint64_t *ts);
  const char *names[NRP];
  size_t n;
  unsigned launches;
  rpctx ctx[TBE__RP_MAXCTX];
  unsigned nctx;
  rpkernel *k;
  size_t nk, capk;
  uint64_t measured_total[TBE__RP_MAXCTX]; /* per device, for the status */
  tbe__sp_replayed *rep; /* measured launch calls, timed, not yet written */
  size_t nrep, caprep;
  int closed;         /* released at exit: no launch measured any more */
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The launch this thread is measuring. */
static __thread rpctx *tl_ctx;
static __thread size_t tl_k;
static __thread int64_t tl_t0;

static int64_t now_ns(void) {
  uint64_t t = 0;
  if (!R.timestamp || R.timestamp(&t) != CUPTI_SUCCESS) return 0;
  return (int64_t)t;
}

int tbe__rp_start(const tbe__cupti_metrics_api *api, CUptiResult (*timestamp)(uint64_t *ts),
                  unsigned set, unsigned launches) {
  R.api = api;
  R.timestamp = timestamp;
  R.n = set == TBE_KMETRICS_BRIEF ? NRP_BRIEF : NRP;
  for (size_t i = 0; i < R.n; i++) R.names[i] = rp_defs[i].source;
  R.launches = launches ? launches : 3;
  R.nctx = 0;
  R.nk = 0;
  __atomic_store_n(&R.closed, 0, __ATOMIC_RELEASE);
  memset(R.measured_total, 0, sizeof R.measured_total);
  if (!api->rp_enable || !api->rp_set_config || !api->rp_start || !api->rp_stop ||
      !api->rp_decode || !api->rp_data_size || !api->rp_data_init || !api->rp_data_info ||
      !api->chip_name || !api->host.initialize || !api->host.add_metrics ||
      !api->host.config_image_size || !api->host.config_image || !api->host.evaluate ||
      !api->host.deinitialize) {
    tbe__hwm_fail(TBE__MKIND_RANGE_PROFILER, UINT32_MAX, TBE__MS_UNSUPPORTED,
                  "this CUPTI has no range profiler API", CUPTI_SUCCESS);
    return -1;
  }
  return 0;
}

/* ---- tables (R.mu held) ---- */

static rpctx *ctx_get_locked(CUcontext c, uint32_t device) {
  for (unsigned i = 0; i < R.nctx; i++)
    if (R.ctx[i].ctx == c) return &R.ctx[i];
  if (R.nctx == TBE__RP_MAXCTX) return NULL;
  rpctx *x = &R.ctx[R.nctx++];
  memset(x, 0, sizeof *x);
  x->ctx = c;
  x->device = device;
  pthread_mutex_init(&x->mu, NULL);
  return x;
}

/* The kernel's index, added if new; SIZE_MAX without memory. */
static size_t kernel_get_locked(const char *name, uint32_t device) {
  for (size_t i = 0; i < R.nk; i++)
    if (R.k[i].device == device && strcmp(R.k[i].name, name) == 0) return i;
  if (R.nk == R.capk) {
    size_t cap = R.capk ? 2 * R.capk : 64;
    rpkernel *k = realloc(R.k, cap * sizeof *k);
    if (!k) return SIZE_MAX;
    R.k = k;
    R.capk = cap;
  }
  rpkernel *k = &R.k[R.nk];
  memset(k, 0, sizeof *k);
  if (!(k->name = strdup(name))) return SIZE_MAX;
  k->device = device;
  return R.nk++;
}

/* ---- a context's profiler (its lock held) ---- */

/* With at_exit, the profiler object is not disabled (CUPTI's exit
 * teardown takes it, see pmsampling.c's exit hook) and the images it was
 * given stay with it. */
static void ctx_release_ex(rpctx *x, int at_exit) {
  const tbe__cupti_metrics_api *m = R.api;
  if (at_exit) {
    tbe__hwm_keep(x->config);
    tbe__hwm_keep(x->data);
    x->obj = NULL;
    x->config = x->data = NULL;
  }
  if (x->obj && m->rp_disable) {
    CUpti_RangeProfiler_Disable_Params q = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, NULL,
                                            x->obj};
    m->rp_disable(&q);
  }
  x->obj = NULL;
  if (x->host) {
    tbe__ph_deinit q = {TBE__PSIZE(tbe__ph_deinit, pHostObject), NULL, x->host};
    m->host.deinitialize(&q);
  }
  x->host = NULL;
  free(x->avail);
  free(x->config);
  free(x->data);
  x->avail = x->config = x->data = NULL;
}

static void ctx_release(rpctx *x) { ctx_release_ex(x, 0); }

static int ctx_fail(rpctx *x, const char *what, CUptiResult r, unsigned status) {
  tbe__hwm_fail(TBE__MKIND_RANGE_PROFILER, x->device, status, what, r);
  ctx_release(x);
  x->state = 2;
  return -1;
}

static int ctx_setup(rpctx *x) {
  const tbe__cupti_metrics_api *m = R.api;
  CUptiResult r;
  if (m->profiler_init) {
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    if ((r = m->profiler_init(&ip)) != CUPTI_SUCCESS)
      return ctx_fail(x, "cuptiProfilerInitialize", r, tbe__hwm_status_of(r));
  }
  CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE, NULL,
                                        x->device, NULL};
  if ((r = m->chip_name(&cn)) != CUPTI_SUCCESS || !cn.pChipName)
    return ctx_fail(x, "cuptiDeviceGetChipName", r, tbe__hwm_status_of(r));
  if (m->rp_availability) {
    CUpti_Profiler_GetCounterAvailability_Params av;
    memset(&av, 0, sizeof av);
    av.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    av.ctx = x->ctx;
    r = m->rp_availability(&av);
    if (r == CUPTI_SUCCESS && av.counterAvailabilityImageSize &&
        (x->avail = malloc(av.counterAvailabilityImageSize))) {
      av.pCounterAvailabilityImage = x->avail;
      r = m->rp_availability(&av);
    }
    if (r != CUPTI_SUCCESS)
      return ctx_fail(x, "cuptiProfilerGetCounterAvailability", r, tbe__hwm_status_of(r));
  }
  /* The host object keeps a pointer to the availability image (its
   * AddMetrics read it: freed here before, that was the H200's SIGSEGV in
   * libnvperf_host); x->avail goes with the host object. */
  tbe__ph_init in = {TBE__PSIZE(tbe__ph_init, pHostObject), NULL, TBE__PH_RANGE_PROFILER,
                     cn.pChipName, x->avail, NULL};
  r = m->host.initialize(&in);
  if (r != CUPTI_SUCCESS)
    return ctx_fail(x, "cuptiProfilerHostInitialize", r, tbe__hwm_status_of(r));
  x->host = in.pHostObject;
  tbe__ph_add add = {TBE__PSIZE(tbe__ph_add, numMetrics), NULL, x->host, R.names, R.n};
  if ((r = m->host.add_metrics(&add)) != CUPTI_SUCCESS)
    return ctx_fail(x, "cuptiProfilerHostConfigAddMetrics", r,
                    r == CUPTI_ERROR_INVALID_METRIC_NAME ? TBE__MS_UNSUPPORTED : tbe__hwm_status_of(r));
  tbe__ph_image_size sz = {TBE__PSIZE(tbe__ph_image_size, configImageSize), NULL, x->host, 0};
  if ((r = m->host.config_image_size(&sz)) != CUPTI_SUCCESS)
    return ctx_fail(x, "cuptiProfilerHostGetConfigImageSize", r, TBE__MS_FAILED);
  x->config_size = sz.configImageSize;
  if (!(x->config = malloc(x->config_size ? x->config_size : 1)))
    return ctx_fail(x, "allocating the config image", CUPTI_ERROR_OUT_OF_MEMORY, TBE__MS_FAILED);
  tbe__ph_image im = {TBE__PSIZE(tbe__ph_image, pConfigImage), NULL, x->host, x->config_size,
                      x->config};
  if ((r = m->host.config_image(&im)) != CUPTI_SUCCESS)
    return ctx_fail(x, "cuptiProfilerHostGetConfigImage", r, TBE__MS_FAILED);
  CUpti_RangeProfiler_Enable_Params en = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, NULL,
                                          x->ctx, NULL};
  if ((r = m->rp_enable(&en)) != CUPTI_SUCCESS)
    return ctx_fail(x, "cuptiRangeProfilerEnable", r,
                    r == CUPTI_ERROR_INVALID_OPERATION ? TBE__MS_BUSY : tbe__hwm_status_of(r));
  x->obj = en.pRangeProfilerObject;
  CUpti_RangeProfiler_GetCounterDataSize_Params ds;
  memset(&ds, 0, sizeof ds);
  ds.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
  ds.pRangeProfilerObject = x->obj;
  ds.pMetricNames = R.names;
  ds.numMetrics = R.n;
  ds.maxNumOfRanges = TBE__RP_RANGES;
  ds.maxNumRangeTreeNodes = TBE__RP_RANGES;
  if ((r = m->rp_data_size(&ds)) != CUPTI_SUCCESS)
    return ctx_fail(x, "cuptiRangeProfilerGetCounterDataSize", r, tbe__hwm_status_of(r));
  x->data_size = ds.counterDataSize;
  if (!(x->data = malloc(x->data_size ? x->data_size : 1)))
    return ctx_fail(x, "allocating the counter data", CUPTI_ERROR_OUT_OF_MEMORY, TBE__MS_FAILED);
  x->state = 1;
  tbe__hwm_exit_hook();
  return 0;
}

/* Entry of a launch to measure: a fresh image, the config, start, push. */
static CUptiResult measure_begin(rpctx *x, const char *name, const char **what) {
  const tbe__cupti_metrics_api *m = R.api;
  CUptiResult r;
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL, x->obj,
      x->data_size, x->data};
  *what = "cuptiRangeProfilerCounterDataImageInitialize";
  if ((r = m->rp_data_init(&di)) != CUPTI_SUCCESS) return r;
  CUpti_RangeProfiler_SetConfig_Params sc;
  memset(&sc, 0, sizeof sc);
  sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  sc.pRangeProfilerObject = x->obj;
  sc.configSize = x->config_size;
  sc.pConfig = x->config;
  sc.counterDataImageSize = x->data_size;
  sc.pCounterDataImage = x->data;
  sc.range = CUPTI_AutoRange;
  sc.replayMode = CUPTI_KernelReplay;
  sc.maxRangesPerPass = TBE__RP_RANGES;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  *what = "cuptiRangeProfilerSetConfig";
  if ((r = m->rp_set_config(&sc)) != CUPTI_SUCCESS) return r;
  CUpti_RangeProfiler_Start_Params st = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, NULL, x->obj};
  *what = "cuptiRangeProfilerStart";
  if ((r = m->rp_start(&st)) != CUPTI_SUCCESS) return r;
  if (m->rp_push) {
    CUpti_RangeProfiler_PushRange_Params pr = {CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE,
                                               NULL, x->obj, name};
    m->rp_push(&pr); /* (auto ranges need none: a refusal changes nothing) */
  }
  return CUPTI_SUCCESS;
}

/* Exit of a measured launch: pop, stop, decode, evaluate the one range
 * into v.  Returns the ranges caught (1 when v holds the figures), or -1
 * with *what and *r set. */
static int measure_end(rpctx *x, double *v, const char **what, CUptiResult *r) {
  const tbe__cupti_metrics_api *m = R.api;
  if (m->rp_pop) {
    CUpti_RangeProfiler_PopRange_Params pp = {CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE, NULL,
                                              x->obj};
    m->rp_pop(&pp);
  }
  CUpti_RangeProfiler_Stop_Params sp;
  memset(&sp, 0, sizeof sp);
  sp.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
  sp.pRangeProfilerObject = x->obj;
  *what = "cuptiRangeProfilerStop";
  if ((*r = m->rp_stop(&sp)) != CUPTI_SUCCESS) return -1;
  CUpti_RangeProfiler_DecodeData_Params dd;
  memset(&dd, 0, sizeof dd);
  dd.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
  dd.pRangeProfilerObject = x->obj;
  *what = "cuptiRangeProfilerDecodeData";
  if ((*r = m->rp_decode(&dd)) != CUPTI_SUCCESS) return -1;
  CUpti_RangeProfiler_GetCounterDataInfo_Params ci;
  memset(&ci, 0, sizeof ci);
  ci.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
  ci.pCounterDataImage = x->data;
  ci.counterDataImageSize = x->data_size;
  *what = "cuptiRangeProfilerGetCounterDataInfo";
  if ((*r = m->rp_data_info(&ci)) != CUPTI_SUCCESS) return -1;
  if (ci.numTotalRanges != 1) return (int)(ci.numTotalRanges > 1000 ? 1000 : ci.numTotalRanges);
  tbe__ph_eval ev = {TBE__PSIZE(tbe__ph_eval, pMetricValues), NULL, x->host, x->data,
                     x->data_size, 0, R.names, R.n, v};
  *what = "cuptiProfilerHostEvaluateToGpuValues";
  if ((*r = m->host.evaluate(&ev)) != CUPTI_SUCCESS) return -1;
  return 1;
}

/* ---- the launch callback ---- */

void tbe__rp_launch(const CUpti_CallbackData *cb, uint32_t device) {
  if (!R.api) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    const char *name = cb->symbolName;
    if (!name || !*name || tl_ctx || device == UINT32_MAX ||
        __atomic_load_n(&R.closed, __ATOMIC_ACQUIRE) || !tbe__rpc_inside())
      return;
    pthread_mutex_lock(&R.mu);
    rpctx *x = ctx_get_locked(cb->context, device);
    size_t k = x && x->state != 2 ? kernel_get_locked(name, device) : SIZE_MAX;
    int go = k != SIZE_MAX && R.k[k].measured + R.k[k].pending < R.launches;
    if (go) R.k[k].pending++;
    pthread_mutex_unlock(&R.mu);
    if (!go) return;
    pthread_mutex_lock(&x->mu);
    const char *what = NULL;
    CUptiResult r = CUPTI_SUCCESS;
    int closed = __atomic_load_n(&R.closed, __ATOMIC_ACQUIRE); /* (released meanwhile) */
    if (!closed && x->state == 0) ctx_setup(x);
    if (!closed && x->state == 1 && (r = measure_begin(x, name, &what)) != CUPTI_SUCCESS)
      ctx_fail(x, what, r, tbe__hwm_status_of(r));
    if (closed || x->state != 1) {
      pthread_mutex_unlock(&x->mu);
      pthread_mutex_lock(&R.mu);
      R.k[k].pending--;
      pthread_mutex_unlock(&R.mu);
      return;
    }
    tl_ctx = x; /* the lock stays held until the exit */
    tl_k = k;
    tl_t0 = now_ns();
    return;
  }
  rpctx *x = tl_ctx;
  if (!x || x->ctx != cb->context) return;
  tl_ctx = NULL;
  tbe__sp_replayed rp = {cb->correlationId, device, tl_t0, now_ns()};
  double v[NRP];
  const char *what = NULL;
  CUptiResult r = CUPTI_SUCCESS;
  int got = measure_end(x, v, &what, &r);
  if (got < 0) ctx_fail(x, what, r, tbe__hwm_status_of(r));
  pthread_mutex_unlock(&x->mu);
  pthread_mutex_lock(&R.mu);
  rpkernel *k = &R.k[tl_k];
  k->pending--;
  if (got == 1) {
    k->measured++;
    for (size_t i = 0; i < R.n; i++)
      if (v[i] == v[i]) { /* (NaN: not measured) */
        k->sum[i] += v[i];
        k->nsum[i]++;
      }
    if (device < TBE__RP_MAXCTX) R.measured_total[device]++;
  } else if (got > 1 || got == 0) {
    k->dropped++;
  }
  if (rp.start > 0 && rp.end >= rp.start) {
    if (R.nrep == R.caprep) {
      size_t cap = R.caprep ? 2 * R.caprep : 64;
      tbe__sp_replayed *n = realloc(R.rep, cap * sizeof *n);
      if (n) {
        R.rep = n;
        R.caprep = cap;
      }
    }
    if (R.nrep < R.caprep) R.rep[R.nrep++] = rp;
  }
  pthread_mutex_unlock(&R.mu);
}

void tbe__rp_context_destroyed(CUcontext c) {
  pthread_mutex_lock(&R.mu);
  rpctx *x = NULL;
  for (unsigned i = 0; i < R.nctx; i++)
    if (R.ctx[i].ctx == c) x = &R.ctx[i];
  pthread_mutex_unlock(&R.mu);
  if (!x) return;
  pthread_mutex_lock(&x->mu);
  ctx_release(x);
  x->state = 0; /* a new context at the same address starts over */
  x->ctx = NULL;
  pthread_mutex_unlock(&x->mu);
}

void tbe__rp_release(void) {
  __atomic_store_n(&R.closed, 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&R.mu);
  unsigned n = R.nctx;
  pthread_mutex_unlock(&R.mu);
  for (unsigned i = 0; i < n; i++) {
    rpctx *x = &R.ctx[i];
    pthread_mutex_lock(&x->mu); /* a measured launch in flight ends first */
    ctx_release_ex(x, 1);
    if (x->state == 1) x->state = 3; /* released, its status still written */
    pthread_mutex_unlock(&x->mu);
  }
}

/* ---- items (decoding thread) ---- */

static void put_kernel(tbe__hwm_out *o, rpkernel *k) {
  uint8_t body[sizeof(tbe__sp_kernel_metrics) + NRP * 16];
  tbe__sp_kernel_metrics h = {o->str(o->str_ctx, k->name), k->device, k->measured, 0};
  size_t len = sizeof h;
  for (size_t i = 0; i < R.n; i++) {
    if (!k->nsum[i]) continue;
    uint32_t id = tbe__hwm_metric_id(o, rp_defs[i].name, rp_defs[i].source, rp_defs[i].unit), z = 0;
    double mean = k->sum[i] / k->nsum[i];
    memcpy(body + len, &id, 4);
    memcpy(body + len + 4, &z, 4);
    memcpy(body + len + 8, &mean, 8);
    len += 16;
    h.nvalues++;
  }
  memcpy(body, &h, sizeof h);
  tbe__spool_item(o->batch, TBE__SP_KERNEL_METRICS, body, len);
  k->written = k->measured;
}

void tbe__rp_emit(tbe__hwm_out *o, int all) {
  pthread_mutex_lock(&R.mu);
  for (size_t i = 0; i < R.nrep; i++)
    tbe__spool_item(o->batch, TBE__SP_REPLAYED, &R.rep[i], sizeof R.rep[i]);
  R.nrep = 0;
  for (size_t i = 0; i < R.nk; i++) {
    rpkernel *k = &R.k[i];
    if (k->measured > k->written && (all || k->measured >= R.launches)) put_kernel(o, k);
  }
  pthread_mutex_unlock(&R.mu);
}

void tbe__rp_stop(tbe__hwm_out *o) {
  tbe__rp_emit(o, 1);
  uint8_t seen[TBE__RP_MAXCTX];
  memset(seen, 0, sizeof seen);
  for (unsigned i = 0; i < R.nctx; i++) {
    rpctx *x = &R.ctx[i];
    pthread_mutex_lock(&x->mu);
    int ok = x->state == 1 || x->state == 3;
    ctx_release(x);
    pthread_mutex_unlock(&x->mu);
    pthread_mutex_destroy(&x->mu);
    if (ok && x->device < TBE__RP_MAXCTX && !seen[x->device]) {
      seen[x->device] = 1;
      tbe__sp_metric_status st;
      memset(&st, 0, sizeof st);
      st.kind = TBE__MKIND_RANGE_PROFILER;
      st.device = x->device;
      st.status = TBE__MS_OK;
      st.samples = R.measured_total[x->device];
      uint64_t dropped = 0;
      for (size_t j = 0; j < R.nk; j++)
        if (R.k[j].device == x->device) dropped += R.k[j].dropped;
      st.overflow = dropped;
      tbe__spool_item(o->batch, TBE__SP_METRIC_STATUS, &st, sizeof st);
    }
  }
  R.nctx = 0;
  for (size_t i = 0; i < R.nk; i++) free(R.k[i].name);
  free(R.k);
  R.k = NULL;
  R.nk = R.capk = 0;
  free(R.rep);
  R.rep = NULL;
  R.nrep = R.caprep = 0;
  R.api = NULL;
}
