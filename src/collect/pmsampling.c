/* pmsampling.c: PM sampling of the GPU's counters into the spool, and the
 * plumbing both kinds of hardware metrics share (hwmetrics.h): the CUPTI
 * callback subscription, metric ids, failure statuses.
 *
 * Metrics.  Each short name (the spool's and the reports' vocabulary) is
 * read from the first of its CUPTI metrics that the profiler host API
 * accepts for the device's chip (cuptiProfilerHostGetMetricProperties;
 * checked with the host API alone: GH100, GA100 and AD102 accept the
 * first of each list but NVLink on AD102); names no candidate of which
 * the chip knows are left out, and the device samples the rest.  PM
 * sampling needs the whole set in one pass: where the chip cannot, the
 * set is built greedily in the table's order, dropping what does not fit.
 * The metric behind each name is written into its TBE__SP_METRIC_DEF.
 *
 * Enabling.  A device is enabled where it first shows: in CUPTI's
 * context-created callback, on the thread creating the context (and at
 * start for a context already current), before that thread's first
 * kernel, so the timeline covers the program's GPU work from its start.
 * (The H200 showed why: enabled from the next tick instead, sampling
 * began a few hundred ms late, after the set-up calls below, and a short
 * program's first half had no samples.)  The background thread's tick
 * enables what a callback could not (a device marked wanted only); both
 * hold H.enable_mu, and a device's state moves from PM_NONE once.
 *
 * Sampling.  CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL at 1e9/hz ns
 * (Ampere GA10x and later; else the device reports "unsupported"), the
 * hardware buffer in KEEP_LATEST mode (KEEP_OLDEST where refused).  The
 * background thread drains it every TBE__PM_TICK_S, or sooner so that a
 * drain finds about TBE__PM_TICK_SAMPLES samples (at 10 kHz every 20 ms),
 * against a counter data image of TBE__PM_SAMPLES and a hardware buffer of
 * TBE__PM_HWBUF bytes.  (On the H200 at 10 kHz, with images of 4,096
 * samples, a sixth to a quarter of the samples were lost without an
 * overflow said: stale-stamped (decodes that filled an image and went on
 * into the next) or missing, in gaps of up to 0.8 s; draining every 20 ms
 * instead of 50 ms helped in one run of 4 s and not in runs of 9 s;
 * images of 16,384 samples left no stale sample, 8,341 samples a second
 * over 9 s, the rest missing in two gaps of 0.75 s, which the importer
 * reports (spool_metrics.c).  At 1 kHz none were lost.)  When CUPTI says the hardware buffer
 * overflowed, the samples lost are estimated from the gap in time before
 * the next sample decoded (at least one) and counted into the status.
 *
 * Evaluation (TBEXPORT_PM_EVAL; TBE__PM_EVAL_DEFAULT_IS in hwmetrics.h).
 * Live: each decoded sample is evaluated here
 * (cuptiProfilerHostEvaluateToGpuValues, the sample's index as the range)
 * and appended to a TBE__SP_METRIC_SAMPLES item; an item holds what fits
 * its 16-bit body.  Deferred (the default): evaluating costs the
 * program's process CPU time per sample (10,000 a second at 10 kHz, on a
 * thread beside a launch-bound program's), so the tick only decodes,
 * reads each sample's times (the stale and overflow accounting is the
 * same) and copies the image raw into TBE__SP_PM_* items (spool.h): the
 * configuration once per device (chip, CUPTI names, the counter
 * availability image), then per image the bytes of its samples and the
 * samples to keep; the conversion evaluates them (pmeval.c) into the
 * same items live mode writes.  "The bytes of its samples": CUPTI's
 * sizes for one and two samples give a head and a per-sample stride; an
 * image cut after head + stride * n bytes and zero-filled is checked,
 * once per device, to read as the whole one (counts, first and last
 * sample's times and values) before any image is cut, else images are
 * copied whole (CUPTI does not document the layout).  A device's raw
 * bytes are bounded (TBE__PM_RAW_MAX): past it, the rest is evaluated
 * live, with one line.  Either way the items go into the collector's
 * batch, which the background thread writes as one frame per tick: a
 * crash loses at most the last tick of samples (the collector's crash
 * path runs a tick too).
 *
 * Invariants: a device's state is read and written atomically; set-up
 * (PM_NONE to PM_RUNNING or PM_FAILED) happens under H.enable_mu on
 * whichever thread enables it, and from PM_RUNNING on the device and its
 * item bodies belong to the decoding thread. */
#include "collect/hwmetrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbexport/error.h"
#include "tbexport/profiler.h"

#ifndef TBE__PM_TICK_S
#define TBE__PM_TICK_S 0.05          /* drain period while sampling */
#endif
#define TBE__PM_TICK_SAMPLES 200.0   /* samples a drain should find at most */
#define TBE__PM_IDLE_S 0.5           /* tick period otherwise */
#ifndef TBE__PM_SAMPLES
#define TBE__PM_SAMPLES 16384u       /* samples a counter data image holds */
#endif
#define TBE__PM_HWBUF ((size_t)128 << 20) /* CUPTI's hardware buffer per device */
#define TBE__PM_STATUS_S 1.0         /* a running status item this often */
#define TBE__MAXDEV 64
#define TBE__ITEM_MAX 65535u         /* an item's body: u16 length */
#define TBE__PM_RAW_MAX ((uint64_t)1 << 30) /* raw image bytes per device, deferred */
#define TBE__PM_BATCH_MAX ((size_t)16 << 20) /* a drain's raw images stop there */

/* ---- the metric table ---- */

typedef struct pmdef {
  const char *name;
  unsigned unit;
  const char *src[2]; /* candidates, first accepted wins */
} pmdef;

static const pmdef pm_defs[] = {
    {"sm_active_pct", TBE__MU_PCT, {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed"}},
    {"occupancy_pct", TBE__MU_PCT, {"sm__warps_active.avg.pct_of_peak_sustained_elapsed"}},
    {"tensor_active_pct",
     TBE__MU_PCT,
     {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"}},
    {"dram_read_pct", TBE__MU_PCT, {"dram__bytes_read.sum.pct_of_peak_sustained_elapsed"}},
    {"dram_write_pct", TBE__MU_PCT, {"dram__bytes_write.sum.pct_of_peak_sustained_elapsed"}},
    /* rx: data into the GPU (its reads over PCIe: host-to-device copies);
     * tx: data out of it (its writes) */
    {"pcie_rx_bytes_per_s", TBE__MU_BYTES_PER_S, {"pcie__read_bytes.sum.per_second"}},
    {"pcie_tx_bytes_per_s", TBE__MU_BYTES_PER_S, {"pcie__write_bytes.sum.per_second"}},
    {"nvlink_rx_bytes_per_s", TBE__MU_BYTES_PER_S, {"nvlrx__bytes.sum.per_second"}},
    {"nvlink_tx_bytes_per_s", TBE__MU_BYTES_PER_S, {"nvltx__bytes.sum.per_second"}},
    {"sm_clock_hz", TBE__MU_HZ, {"gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second"}},
    {"dram_clock_hz", TBE__MU_HZ, {"dram__cycles_elapsed.avg.per_second"}},
};
#define NPM (sizeof pm_defs / sizeof pm_defs[0])

/* ---- state ---- */

enum { PM_NONE = 0, PM_RUNNING, PM_FAILED, PM_DONE };

typedef struct pmdev {
  int state;
  CUpti_PmSampling_Object *obj;
  tbe__ph_object *host;
  uint8_t *avail;           /* the counter availability image: the host
                             * objects made with it read it all their life */
  uint8_t *config, *data;
  size_t config_size, data_size;
  const char *names[NPM];   /* the CUPTI metrics sampled */
  unsigned which[NPM];      /* pm_defs index of each */
  size_t n;
  uint64_t samples, overflow, stale, status_samples;
  int overflow_pending;     /* the next sample's gap tells how many were lost */
  int64_t last_end;
  double last_status;
  uint8_t *item;            /* the item being filled (deferred: scratch) */
  size_t item_len;
  uint32_t item_n;
  /* deferred evaluation (TBEXPORT_PM_EVAL=deferred) */
  int deferred;             /* images go to the spool raw */
  int config_written;       /* its TBE__SP_PM_CONFIG is in the spool */
  unsigned config_gen;      /* tbe__hwm_redefinitions() when it was written */
  int prefix;               /* copy head + stride * samples: 1 yes, 0 whole image, -1 unchecked */
  size_t head, stride;      /* the image's size for no sample and per sample */
  size_t avail_size;
  char chip[64];
  uint32_t seq;             /* images written */
  uint64_t raw_bytes;
  tbe__sp_pm_time *times;   /* the samples kept of the image being written */
} pmdev;

static struct {
  const tbe__cupti_metrics_api *api;
  tbe__hwm_config cfg;
  int active;
  CUpti_SubscriberHandle sub;
  int subscribed;
  int prof_ready;           /* cuptiProfilerInitialize: 0 not yet, 1 done, -1 failed */
  pthread_mutex_t enable_mu; /* held while a device is set up (enable_now) */
  atomic_uchar wanted[TBE__MAXDEV];
  atomic_uchar stop_req[TBE__MAXDEV]; /* a context of the device is going away */
  pmdev dev[TBE__MAXDEV];
  double now;               /* seconds of ticking, for the status period */
  double tick_s;            /* drain period while sampling */
  int exiting;              /* the process is exiting: no new device, no CUPTI call at stop */
  int deferred;             /* TBE__PM_EVAL_DEFERRED in force */
  int last_drain;           /* pm_finish's drain: everything, whatever the batch holds */
} H = {.enable_mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- the callback ---- */

static void want_device(uint32_t d) {
  if (d < TBE__MAXDEV && !atomic_load_explicit(&H.wanted[d], memory_order_relaxed))
    atomic_store(&H.wanted[d], 1);
}

static int pm_enable_device(uint32_t d);

/* Sets up sampling on device d now, on this thread, unless it was set up
 * (or failed) before or the process is exiting. */
static void enable_now(uint32_t d) {
  if (d >= TBE__MAXDEV || !H.cfg.pm_hz) return;
  want_device(d);
  if (__atomic_load_n(&H.dev[d].state, __ATOMIC_ACQUIRE) != PM_NONE) return;
  pthread_mutex_lock(&H.enable_mu);
  if (__atomic_load_n(&H.dev[d].state, __ATOMIC_ACQUIRE) == PM_NONE &&
      !__atomic_load_n(&H.exiting, __ATOMIC_ACQUIRE))
    pm_enable_device(d);
  pthread_mutex_unlock(&H.enable_mu);
}

static uint32_t device_of(CUcontext ctx) {
  uint32_t d = UINT32_MAX;
  if (!H.api->get_device_id || H.api->get_device_id(ctx, &d) != CUPTI_SUCCESS) return UINT32_MAX;
  return d;
}

/* A context of device d is about to be destroyed (at the program's exit,
 * often before the collector's own stop): sampling there is stopped and
 * drained by the background thread now, while CUPTI's device state is
 * whole, and this thread waits for it (2 s at most).  The spool keeps
 * the samples; a later context on the device is not sampled again. */
static void pm_stop_before_destroy(uint32_t d) {
  if (d >= TBE__MAXDEV || __atomic_load_n(&H.dev[d].state, __ATOMIC_ACQUIRE) != PM_RUNNING) return;
  atomic_store(&H.stop_req[d], 1);
  struct timespec nap = {0, 1000000};
  for (int i = 0; i < 2000 && __atomic_load_n(&H.dev[d].state, __ATOMIC_ACQUIRE) == PM_RUNNING; i++)
    nanosleep(&nap, NULL);
}

/* ---- the exit hook ---- */

/* At the process's exit the collector stops from its own exit handler,
 * registered when the library was loaded.  CUPTI and its profiler library
 * register theirs later (static objects made when profiling first runs),
 * and exit() runs handlers last-registered first: by the collector's stop,
 * the profiler's state is gone, and disabling PM sampling there freed it a
 * second time (the H200's "double free or corruption" at exit).  So this
 * hook, registered after CUPTI's first profiler calls (sampling started,
 * first samples decoded, a context set up for the range profiler), runs
 * before CUPTI's handlers: it has the background thread stop and drain
 * every sampled device and releases the host objects, while CUPTI is
 * whole.  Neither kind is disabled at exit: disabling finalizes CUPTI's
 * profiler state (the XLA profiler's notes say so of PM sampling), the
 * activity buffers are flushed after this hook, and CUPTI's own teardown
 * takes the objects.  The collector's stop then calls nothing of CUPTI's
 * for metrics. */
void tbe__hwm_at_exit(void) {
  if (!H.active || __atomic_exchange_n(&H.exiting, 1, __ATOMIC_ACQ_REL)) return;
  if (H.cfg.kernel_set) tbe__rp_release();
  if (H.cfg.pm_hz)
    for (uint32_t d = 0; d < TBE__MAXDEV; d++) pm_stop_before_destroy(d);
}


static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)ud;
  if (!H.active || !data) return;
  if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    const CUpti_ResourceData *rd = data;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
      if (H.cfg.pm_hz) enable_now(device_of(rd->context));
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
      if (H.cfg.kernel_set) tbe__rp_context_destroyed(rd->context);
      if (H.cfg.pm_hz) pm_stop_before_destroy(device_of(rd->context));
    }
  } else if (dom == CUPTI_CB_DOMAIN_NVTX || tbe__rpc_is_profiler_call(dom, cbid)) {
    if (H.cfg.kernel_set) tbe__rpc_callback(dom, cbid, data);
  } else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && H.cfg.kernel_set) {
    const CUpti_CallbackData *cb = data;
    uint32_t d = device_of(cb->context);
    if (H.cfg.pm_hz && cb->callbackSite == CUPTI_API_ENTER) want_device(d);
    tbe__rp_launch(cb, d);
  }
}

static const CUpti_CallbackId launch_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};

/* ---- start ---- */

int tbe__hwm_start(const tbe__cupti_metrics_api *api,
                   CUptiResult (*result_string)(CUptiResult r, const char **s),
                   CUptiResult (*timestamp)(uint64_t *ts), const tbe__hwm_config *cfg) {
  memset(H.dev, 0, sizeof H.dev);
  for (size_t i = 0; i < TBE__MAXDEV; i++) {
    atomic_store(&H.wanted[i], 0);
    atomic_store(&H.stop_req[i], 0);
  }
  H.api = api;
  tbe__hwm_reset(result_string);
  H.cfg = *cfg;
  H.now = 0;
  H.tick_s = TBE__PM_TICK_S;
  if (cfg->pm_hz && TBE__PM_TICK_SAMPLES / cfg->pm_hz < H.tick_s)
    H.tick_s = TBE__PM_TICK_SAMPLES / cfg->pm_hz;
  if (H.tick_s < 0.001) H.tick_s = 0.001;
  H.subscribed = 0;
  H.prof_ready = 0;
  H.exiting = 0;
  unsigned ev = cfg->pm_eval;
  const char *env = getenv("TBEXPORT_PM_EVAL");
  if (ev == TBE__PM_EVAL_DEFAULT && env && strcmp(env, "live") == 0) ev = TBE__PM_EVAL_LIVE;
  if (ev == TBE__PM_EVAL_DEFAULT && env && strcmp(env, "deferred") == 0) ev = TBE__PM_EVAL_DEFERRED;
  if (ev == TBE__PM_EVAL_DEFAULT) ev = TBE__PM_EVAL_DEFAULT_IS;
  H.deferred = ev == TBE__PM_EVAL_DEFERRED;
  tbe__hwm_exit_hook_set(tbe__hwm_at_exit);
  if (!cfg->pm_hz && !cfg->kernel_set) {
    H.active = 0;
    return 0;
  }
  H.active = 1;
  const tbe__cupti_metrics_api *m = H.api;
  unsigned kinds[2], nk = 0;
  if (cfg->pm_hz) kinds[nk++] = TBE__MKIND_PM_SAMPLING;
  if (cfg->kernel_set) kinds[nk++] = TBE__MKIND_RANGE_PROFILER;
  CUptiResult r = CUPTI_ERROR_NOT_SUPPORTED;
  if (m->subscribe && m->enable_callback) r = m->subscribe(&H.sub, on_callback, NULL);
  if (r == CUPTI_SUCCESS) {
    H.subscribed = 1;
    r = m->enable_callback(1, H.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    if (r == CUPTI_SUCCESS)
      m->enable_callback(1, H.sub, CUPTI_CB_DOMAIN_RESOURCE,
                         CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (r == CUPTI_SUCCESS && cfg->kernel_set) {
      for (size_t i = 0; i < sizeof launch_cbids / sizeof launch_cbids[0] && r == CUPTI_SUCCESS; i++)
        r = m->enable_callback(1, H.sub, CUPTI_CB_DOMAIN_DRIVER_API, launch_cbids[i]);
    }
  }
  if (r != CUPTI_SUCCESS) {
    /* Without callbacks no context is seen: every kind fails alike. */
    unsigned st = m->subscribe ? tbe__hwm_status_of(r) : TBE__MS_UNSUPPORTED;
    for (unsigned i = 0; i < nk; i++)
      tbe__hwm_fail(kinds[i], UINT32_MAX, st, "cuptiSubscribe (CUPTI's callbacks)", r);
    if (H.subscribed) m->unsubscribe(H.sub);
    H.subscribed = 0;
    H.cfg.pm_hz = H.cfg.kernel_set = 0;
    return 1;
  }
  if (cfg->kernel_set && tbe__rp_start(m, timestamp, cfg->kernel_set, cfg->kernel_launches) != 0)
    H.cfg.kernel_set = 0;
  if (H.cfg.kernel_set &&
      (r = tbe__rpc_start(m, H.sub, cfg->capture, cfg->capture_name, cfg->capture_domain)) !=
          CUPTI_SUCCESS) {
    tbe__hwm_fail(TBE__MKIND_RANGE_PROFILER, UINT32_MAX, tbe__hwm_status_of(r),
                  "cuptiEnableCallback (the capture range's calls)", r);
    H.cfg.kernel_set = 0;
  }
  /* A context current on this thread already (the in-process API after
   * the program's CUDA start): its device is sampled too. */
  if (cfg->pm_hz) {
    uint32_t d = device_of(NULL);
    if (d != UINT32_MAX) enable_now(d);
  }
  return 1;
}

/* ---- PM sampling on one device (decoding thread) ---- */

static void host_free(pmdev *p) {
  if (p->host && H.api->host.deinitialize) {
    tbe__ph_deinit q = {TBE__PSIZE(tbe__ph_deinit, pHostObject), NULL, p->host};
    H.api->host.deinitialize(&q);
  }
  p->host = NULL;
  free(p->config);
  p->config = NULL;
  p->config_size = 0;
}

/* A host object for `chip` with `names` added and its config image.
 * Returns CUPTI_SUCCESS with *passes set, or the failing call's result. */
static CUptiResult build_config(pmdev *p, const char *chip, const uint8_t *avail,
                                const char **names, size_t n, size_t *passes) {
  const tbe__cupti_host_api *h = &H.api->host;
  host_free(p);
  tbe__ph_init in = {TBE__PSIZE(tbe__ph_init, pHostObject), NULL, TBE__PH_PM_SAMPLING, chip,
                     avail, NULL};
  CUptiResult r = h->initialize(&in);
  if (r != CUPTI_SUCCESS) return r;
  p->host = in.pHostObject;
  tbe__ph_add add = {TBE__PSIZE(tbe__ph_add, numMetrics), NULL, p->host, names, n};
  if ((r = h->add_metrics(&add)) != CUPTI_SUCCESS) return r;
  tbe__ph_image_size sz = {TBE__PSIZE(tbe__ph_image_size, configImageSize), NULL, p->host, 0};
  if ((r = h->config_image_size(&sz)) != CUPTI_SUCCESS) return r;
  if (!(p->config = malloc(sz.configImageSize ? sz.configImageSize : 1))) return CUPTI_ERROR_OUT_OF_MEMORY;
  p->config_size = sz.configImageSize;
  tbe__ph_image im = {TBE__PSIZE(tbe__ph_image, pConfigImage), NULL, p->host, p->config_size,
                      p->config};
  if ((r = h->config_image(&im)) != CUPTI_SUCCESS) return r;
  tbe__ph_passes ps = {TBE__PSIZE(tbe__ph_passes, numOfPasses), NULL, p->config_size, p->config, 0};
  if ((r = h->num_passes(&ps)) != CUPTI_SUCCESS) return r;
  *passes = ps.numOfPasses;
  return CUPTI_SUCCESS;
}

/* Chooses the metrics of the chip and builds their one-pass config. */
static CUptiResult choose_metrics(pmdev *p, const char *chip, const uint8_t *avail) {
  const tbe__cupti_host_api *h = &H.api->host;
  tbe__ph_init in = {TBE__PSIZE(tbe__ph_init, pHostObject), NULL, TBE__PH_PM_SAMPLING, chip,
                     avail, NULL};
  CUptiResult r = h->initialize(&in);
  if (r != CUPTI_SUCCESS) return r;
  const char *cand[NPM];
  unsigned cw[NPM];
  size_t nc = 0;
  for (unsigned i = 0; i < NPM; i++)
    for (unsigned j = 0; j < 2 && pm_defs[i].src[j]; j++) {
      tbe__ph_props q;
      memset(&q, 0, sizeof q);
      q.structSize = TBE__PSIZE(tbe__ph_props, metricType);
      q.pHostObject = in.pHostObject;
      q.pMetricName = pm_defs[i].src[j];
      if (h->metric_properties(&q) == CUPTI_SUCCESS) {
        cand[nc] = pm_defs[i].src[j];
        cw[nc++] = i;
        break;
      }
    }
  tbe__ph_deinit dq = {TBE__PSIZE(tbe__ph_deinit, pHostObject), NULL, in.pHostObject};
  h->deinitialize(&dq);
  if (nc == 0) return CUPTI_ERROR_INVALID_METRIC_NAME;
  size_t passes = 0;
  r = build_config(p, chip, avail, cand, nc, &passes);
  if (r == CUPTI_SUCCESS && passes == 1) {
    memcpy(p->names, cand, nc * sizeof *cand);
    memcpy(p->which, cw, nc * sizeof *cw);
    p->n = nc;
    return r;
  }
  /* Greedily, in the table's order: what fits one pass with the rest. */
  p->n = 0;
  for (size_t i = 0; i < nc; i++) {
    p->names[p->n] = cand[i];
    if (build_config(p, chip, avail, p->names, p->n + 1, &passes) == CUPTI_SUCCESS && passes == 1)
      p->which[p->n++] = cw[i];
  }
  if (p->n == 0) return r != CUPTI_SUCCESS ? r : CUPTI_ERROR_NOT_SUPPORTED;
  return build_config(p, chip, avail, p->names, p->n, &passes);
}

/* Releases the device's CUPTI objects, then our images, each once (the
 * pointers are cleared): sampling disabled (stopped before, by
 * pm_finish), the host object deinitialized, then the memory either
 * was given. */
static void pm_release(pmdev *p) {
  if (p->obj && H.api->pm_disable) {
    CUpti_PmSampling_Disable_Params q = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE, NULL, p->obj};
    H.api->pm_disable(&q);
  }
  p->obj = NULL;
  host_free(p);
  free(p->avail);
  free(p->data);
  free(p->item);
  free(p->times);
  p->avail = p->data = p->item = NULL;
  p->times = NULL;
}

static int pm_fail(pmdev *p, uint32_t d, const char *what, CUptiResult r, unsigned status) {
  tbe__hwm_fail(TBE__MKIND_PM_SAMPLING, d, status, what, r);
  pm_release(p);
  __atomic_store_n(&p->state, PM_FAILED, __ATOMIC_RELEASE);
  return -1;
}

/* The deferred mode's set-up (before the image is initialized): the
 * image's layout from CUPTI's sizes for one and two samples, the list of
 * samples kept.  A device whose TBE__SP_PM_CONFIG would not fit an item
 * is evaluated live. */
static void deferred_setup(pmdev *p, const CUpti_PmSampling_GetCounterDataSize_Params *ds) {
  size_t names = 0;
  for (size_t i = 0; i < p->n; i++) names += strlen(p->names[i]) + 1;
  if (sizeof(tbe__sp_pm_config) + 4 * p->n + strlen(p->chip) + names + p->avail_size >
          TBE__ITEM_MAX ||
      p->data_size > TBE__SP_PM_IMAGE_MAX)
    return;
  CUpti_PmSampling_GetCounterDataSize_Params q = *ds;
  size_t s1 = 0, s2 = 0;
  q.maxSamples = 1;
  if (H.api->pm_data_size(&q) == CUPTI_SUCCESS) s1 = q.counterDataSize;
  q.maxSamples = 2;
  if (s1 && H.api->pm_data_size(&q) == CUPTI_SUCCESS) s2 = q.counterDataSize;
  if (s2 > s1 && s1 >= s2 - s1) {
    p->stride = s2 - s1;
    p->head = s1 - p->stride;
  }
  p->prefix = p->stride ? -1 : 0;
  p->times = malloc(TBE__PM_SAMPLES * sizeof *p->times);
  p->deferred = 1;
}

static int pm_enable_device(uint32_t d) {
  const tbe__cupti_metrics_api *m = H.api;
  pmdev *p = &H.dev[d];
  memset(p, 0, sizeof *p);
  if (!m->pm_enable || !m->pm_set_config || !m->pm_decode || !m->pm_data_size || !m->pm_data_init ||
      !m->pm_data_info || !m->pm_sample_info || !m->pm_start || !m->pm_stop || !m->chip_name ||
      !m->host.initialize || !m->host.evaluate || !m->host.add_metrics ||
      !m->host.metric_properties || !m->host.config_image || !m->host.config_image_size ||
      !m->host.num_passes || !m->host.deinitialize)
    return pm_fail(p, d, "this CUPTI has no PM sampling API", CUPTI_SUCCESS, TBE__MS_UNSUPPORTED);
  CUptiResult r;
  if (H.prof_ready == 0 && m->profiler_init) {
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    r = m->profiler_init(&ip);
    H.prof_ready = r == CUPTI_SUCCESS ? 1 : -1;
    if (r != CUPTI_SUCCESS)
      return pm_fail(p, d, "cuptiProfilerInitialize", r, tbe__hwm_status_of(r));
  }
  CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE, NULL, d, NULL};
  if ((r = m->chip_name(&cn)) != CUPTI_SUCCESS || !cn.pChipName)
    return pm_fail(p, d, "cuptiDeviceGetChipName", r, tbe__hwm_status_of(r));
  if (m->pm_availability) {
    CUpti_PmSampling_GetCounterAvailability_Params av;
    memset(&av, 0, sizeof av);
    av.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
    av.deviceIndex = d;
    r = m->pm_availability(&av);
    if (r == CUPTI_SUCCESS && av.counterAvailabilityImageSize &&
        (p->avail = malloc(av.counterAvailabilityImageSize))) {
      p->avail_size = av.counterAvailabilityImageSize;
      av.pCounterAvailabilityImage = p->avail;
      r = m->pm_availability(&av);
    }
    if (r != CUPTI_SUCCESS)
      return pm_fail(p, d, "cuptiPmSamplingGetCounterAvailability", r, tbe__hwm_status_of(r));
  }
  /* (p->avail stays until the host object made with it is gone) */
  snprintf(p->chip, sizeof p->chip, "%s", cn.pChipName);
  r = choose_metrics(p, cn.pChipName, p->avail);
  if (r != CUPTI_SUCCESS) {
    char what[128];
    snprintf(what, sizeof what, "no metric set for chip %s", cn.pChipName);
    return pm_fail(p, d, what, r, r == CUPTI_ERROR_INVALID_METRIC_NAME ? TBE__MS_UNSUPPORTED
                                                                     : tbe__hwm_status_of(r));
  }
  CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE, NULL, d, NULL};
  if ((r = m->pm_enable(&en)) != CUPTI_SUCCESS)
    return pm_fail(p, d, "cuptiPmSamplingEnable", r,
                   r == CUPTI_ERROR_INVALID_OPERATION ? TBE__MS_BUSY : tbe__hwm_status_of(r));
  p->obj = en.pPmSamplingObject;
  CUpti_PmSampling_SetConfig_Params sc;
  memset(&sc, 0, sizeof sc);
  sc.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
  sc.pPmSamplingObject = p->obj;
  sc.configSize = p->config_size;
  sc.pConfig = p->config;
  sc.hardwareBufferSize = TBE__PM_HWBUF;
  sc.samplingInterval = 1000000000ull / H.cfg.pm_hz;
  sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;
  if ((r = m->pm_set_config(&sc)) != CUPTI_SUCCESS) {
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    r = m->pm_set_config(&sc);
  }
  if (r != CUPTI_SUCCESS)
    return pm_fail(p, d, "cuptiPmSamplingSetConfig", r, tbe__hwm_status_of(r));
  CUpti_PmSampling_GetCounterDataSize_Params ds;
  memset(&ds, 0, sizeof ds);
  ds.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
  ds.pPmSamplingObject = p->obj;
  ds.pMetricNames = p->names;
  ds.numMetrics = p->n;
  ds.maxSamples = TBE__PM_SAMPLES;
  if ((r = m->pm_data_size(&ds)) != CUPTI_SUCCESS)
    return pm_fail(p, d, "cuptiPmSamplingGetCounterDataSize", r, tbe__hwm_status_of(r));
  p->data_size = ds.counterDataSize;
  p->data = malloc(p->data_size ? p->data_size : 1);
  p->item = malloc(TBE__ITEM_MAX);
  if (H.deferred) deferred_setup(p, &ds);
  if (!p->data || !p->item || (p->deferred && !p->times))
    return pm_fail(p, d, "allocating the counter data", CUPTI_ERROR_OUT_OF_MEMORY, TBE__MS_FAILED);
  CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
      CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL, p->obj, p->data_size,
      p->data};
  if ((r = m->pm_data_init(&di)) != CUPTI_SUCCESS)
    return pm_fail(p, d, "cuptiPmSamplingCounterDataImageInitialize", r, tbe__hwm_status_of(r));
  CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE, NULL, p->obj};
  if ((r = m->pm_start(&st)) != CUPTI_SUCCESS)
    return pm_fail(p, d, "cuptiPmSamplingStart", r,
                   r == CUPTI_ERROR_INVALID_OPERATION ? TBE__MS_BUSY : tbe__hwm_status_of(r));
  p->last_status = -1;
  __atomic_store_n(&p->state, PM_RUNNING, __ATOMIC_RELEASE);
  tbe__hwm_exit_hook();
  return 0;
}

/* ---- samples into items (decoding thread) ---- */

static size_t sample_size(const pmdev *p) { return 8 + 8 * p->n; }

static void item_flush(tbe__hwm_out *o, pmdev *p, uint32_t d) {
  if (!p->item_n) return;
  tbe__sp_metric_samples h = {d, (uint32_t)p->n, p->item_n, 0};
  memcpy(p->item, &h, sizeof h);
  tbe__spool_item(o->batch, TBE__SP_METRIC_SAMPLES, p->item, p->item_len);
  p->item_n = 0;
  p->item_len = 0;
}

static void item_add(tbe__hwm_out *o, pmdev *p, uint32_t d, int64_t ts, const double *v) {
  if (p->item_n && p->item_len + sample_size(p) > TBE__ITEM_MAX) item_flush(o, p, d);
  if (!p->item_n) {
    /* The ids, (re)defined in this batch if need be. */
    p->item_len = sizeof(tbe__sp_metric_samples);
    for (size_t i = 0; i < p->n; i++) {
      uint32_t id = tbe__hwm_metric_id(o, pm_defs[p->which[i]].name, p->names[i],
                                       pm_defs[p->which[i]].unit);
      memcpy(p->item + p->item_len, &id, 4);
      p->item_len += 4;
    }
  }
  memcpy(p->item + p->item_len, &ts, 8);
  memcpy(p->item + p->item_len + 8, v, 8 * p->n);
  p->item_len += sample_size(p);
  p->item_n++;
}

/* ---- raw images into items (deferred mode, decoding thread) ---- */

/* The bytes of the image that hold its first n samples: the part, where
 * the layout is known to allow it, else the whole image. */
static size_t image_part(const pmdev *p, size_t n) {
  if (p->prefix != 1) return p->data_size;
  size_t b = p->head + p->stride * n;
  return b < p->data_size ? b : p->data_size;
}

/* Whether an image cut after its first n samples and zero-filled reads
 * as the whole one: the same counts, sample i's times and values.
 * Checked once per device (its first and last sample), on the first
 * image the cut makes shorter: CUPTI does not document its layout. */
static int prefix_holds(pmdev *p, size_t n, size_t i) {
  uint8_t *z = calloc(1, p->data_size);
  if (!z) return 0;
  size_t part = p->head + p->stride * n;
  memcpy(z, p->data, part < p->data_size ? part : p->data_size);
  const uint8_t *img[2] = {p->data, z};
  size_t done[2] = {0, 0};
  uint64_t t[2][2] = {{0, 0}, {0, 0}};
  double v[2][NPM];
  int ok = 1;
  for (int k = 0; k < 2 && ok; k++) {
    CUpti_PmSampling_GetCounterDataInfo_Params ci;
    memset(&ci, 0, sizeof ci);
    ci.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
    ci.pCounterDataImage = img[k];
    ci.counterDataImageSize = p->data_size;
    CUpti_PmSampling_CounterData_GetSampleInfo_Params si;
    memset(&si, 0, sizeof si);
    si.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
    si.pPmSamplingObject = p->obj;
    si.pCounterDataImage = img[k];
    si.counterDataImageSize = p->data_size;
    si.sampleIndex = i;
    memset(v[k], 0, sizeof v[k]);
    tbe__ph_eval ev = {TBE__PSIZE(tbe__ph_eval, pMetricValues), NULL, p->host, img[k],
                       p->data_size, i, p->names, p->n, v[k]};
    ok = H.api->pm_data_info(&ci) == CUPTI_SUCCESS && H.api->pm_sample_info(&si) == CUPTI_SUCCESS &&
         H.api->host.evaluate(&ev) == CUPTI_SUCCESS;
    done[k] = ci.numCompletedSamples;
    t[k][0] = si.startTimestamp;
    t[k][1] = si.endTimestamp;
  }
  free(z);
  return ok && done[0] == done[1] && memcmp(t[0], t[1], sizeof t[0]) == 0 &&
         memcmp(v[0], v[1], sizeof(double) * p->n) == 0;
}

static void put_config(tbe__hwm_out *o, pmdev *p, uint32_t d, const uint32_t *ids) {
  tbe__sp_pm_config c = {d, (uint32_t)p->n, (uint32_t)strlen(p->chip), 0,
                         (uint32_t)p->avail_size, (uint32_t)p->data_size,
                         (uint32_t)(p->prefix == 1 ? p->head : 0),
                         (uint32_t)(p->prefix == 1 ? p->stride : 0)};
  size_t at = sizeof c;
  memcpy(p->item + at, ids, 4 * p->n);
  at += 4 * p->n;
  memcpy(p->item + at, p->chip, c.chip_len);
  at += c.chip_len;
  for (size_t i = 0; i < p->n; i++) {
    size_t l = strlen(p->names[i]) + 1;
    memcpy(p->item + at, p->names[i], l);
    at += l;
    c.names_len += (uint32_t)l;
  }
  if (p->avail_size) memcpy(p->item + at, p->avail, p->avail_size);
  at += p->avail_size;
  memcpy(p->item, &c, sizeof c);
  tbe__spool_item(o->batch, TBE__SP_PM_CONFIG, p->item, at);
  p->config_written = 1;
  p->config_gen = tbe__hwm_redefinitions();
}

/* Writes the image just decoded, raw: its metric ids defined (where live
 * mode defines them: with a device's first samples), the configuration
 * once, the bytes of its first `upto` samples, then the `kept` samples
 * to evaluate. */
static void put_image(tbe__hwm_out *o, pmdev *p, uint32_t d, size_t upto, size_t kept) {
  uint32_t ids[NPM];
  for (size_t i = 0; i < p->n; i++)
    ids[i] = tbe__hwm_metric_id(o, pm_defs[p->which[i]].name, p->names[i],
                                pm_defs[p->which[i]].unit);
  if (p->prefix == -1 && p->head + p->stride * upto < p->data_size)
    p->prefix = prefix_holds(p, upto, 0) && prefix_holds(p, upto, upto - 1);
  if (!p->config_written || p->config_gen != tbe__hwm_redefinitions()) put_config(o, p, d, ids);
  size_t total = image_part(p, upto);
  const size_t room = TBE__ITEM_MAX - sizeof(tbe__sp_pm_image);
  for (size_t off = 0; off < total; off += room) {
    size_t len = total - off < room ? total - off : room;
    tbe__sp_pm_image h = {d, p->seq, (uint32_t)off, (uint32_t)total};
    memcpy(p->item, &h, sizeof h);
    memcpy(p->item + sizeof h, p->data + off, len);
    tbe__spool_item(o->batch, TBE__SP_PM_IMAGE, p->item, sizeof h + len);
  }
  const size_t per = (TBE__ITEM_MAX - sizeof(tbe__sp_pm_times)) / sizeof(tbe__sp_pm_time);
  for (size_t a = 0; a < kept; a += per) {
    size_t n = kept - a < per ? kept - a : per;
    tbe__sp_pm_times h = {d, p->seq, (uint32_t)n, 0};
    memcpy(p->item, &h, sizeof h);
    memcpy(p->item + sizeof h, p->times + a, n * sizeof *p->times);
    tbe__spool_item(o->batch, TBE__SP_PM_TIMES, p->item, sizeof h + n * sizeof *p->times);
  }
  p->seq++;
  p->raw_bytes += total;
  if (p->raw_bytes >= TBE__PM_RAW_MAX) {
    /* The spool's bound: the rest is evaluated here, as live mode does. */
    p->deferred = 0;
    char line[160];
    snprintf(line, sizeof line,
             "PM sampling on GPU %u: the raw counter images reached %llu MiB; the rest of the "
             "samples are evaluated in the program's process",
             d, (unsigned long long)(TBE__PM_RAW_MAX >> 20));
    if (o->say) o->say(o->say_ctx, line);
  }
}

/* Decodes what the hardware buffer holds and writes every completed
 * sample.  Each decode goes into a freshly initialized image, whose
 * samples are all written before it is initialized again (decoding more
 * into an image that holds samples gave, on the H200, runs of samples
 * stamped with one old time after the image was started again).  A
 * sample whose end is not after the last one's is not written: it counts
 * as stale, apart from the samples an overflow cost.  Returns 0, or -1 when
 * CUPTI failed (the device is stopped). */
static int pm_drain(tbe__hwm_out *o, uint32_t d) {
  const tbe__cupti_metrics_api *m = H.api;
  pmdev *p = &H.dev[d];
  int64_t interval = (int64_t)(1000000000ull / H.cfg.pm_hz);
  uint64_t had = p->samples;
  double v[NPM];
  for (int round = 0; round < 64; round++) {
    CUpti_PmSampling_DecodeData_Params dd;
    memset(&dd, 0, sizeof dd);
    dd.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
    dd.pPmSamplingObject = p->obj;
    dd.pCounterDataImage = p->data;
    dd.counterDataImageSize = p->data_size;
    CUptiResult r = m->pm_decode(&dd);
    if (r == CUPTI_ERROR_OUT_OF_MEMORY || dd.overflow) {
      p->overflow_pending = 1;
    } else if (r != CUPTI_SUCCESS) {
      item_flush(o, p, d);
      tbe__hwm_fail(TBE__MKIND_PM_SAMPLING, d, tbe__hwm_status_of(r), "cuptiPmSamplingDecodeData", r);
      return -1;
    }
    CUpti_PmSampling_GetCounterDataInfo_Params ci;
    memset(&ci, 0, sizeof ci);
    ci.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
    ci.pCounterDataImage = p->data;
    ci.counterDataImageSize = p->data_size;
    if ((r = m->pm_data_info(&ci)) != CUPTI_SUCCESS) {
      item_flush(o, p, d);
      tbe__hwm_fail(TBE__MKIND_PM_SAMPLING, d, TBE__MS_FAILED, "cuptiPmSamplingGetCounterDataInfo", r);
      return -1;
    }
    int raw = p->deferred;
    size_t kept = 0, upto = 0;
    for (size_t i = 0; i < ci.numCompletedSamples; i++) {
      CUpti_PmSampling_CounterData_GetSampleInfo_Params si;
      memset(&si, 0, sizeof si);
      si.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
      si.pPmSamplingObject = p->obj;
      si.pCounterDataImage = p->data;
      si.counterDataImageSize = p->data_size;
      si.sampleIndex = i;
      tbe__ph_eval ev = {TBE__PSIZE(tbe__ph_eval, pMetricValues), NULL, p->host, p->data,
                         p->data_size, i, p->names, p->n, v};
      if (m->pm_sample_info(&si) != CUPTI_SUCCESS ||
          (!raw && m->host.evaluate(&ev) != CUPTI_SUCCESS))
        continue; /* one sample CUPTI cannot read: skipped, not counted (deferred:
                   * one it cannot evaluate is left out at conversion) */
      int64_t start = (int64_t)si.startTimestamp, end = (int64_t)si.endTimestamp;
      if (p->last_end && end <= p->last_end) {
        p->stale++; /* no usable time: counted apart from the overflow */
        continue;
      }
      if (p->overflow_pending) {
        /* The samples the overflow cost: the gap before this one. */
        int64_t gap = p->last_end && start > p->last_end ? start - p->last_end : 0;
        uint64_t lost = interval > 0 ? (uint64_t)(gap / interval) : 0;
        p->overflow += lost ? lost : 1;
        p->overflow_pending = 0;
      }
      p->last_end = end;
      if (raw) {
        if (kept < TBE__PM_SAMPLES) p->times[kept++] = (tbe__sp_pm_time){(uint32_t)i, 0, end};
        upto = i + 1;
      } else {
        item_add(o, p, d, end, v);
      }
      p->samples++;
    }
    if (kept) put_image(o, p, d, upto, kept);
    /* Every sample of the image is written: start it again. */
    CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL, p->obj,
        p->data_size, p->data};
    if ((r = m->pm_data_init(&di)) != CUPTI_SUCCESS) {
      item_flush(o, p, d);
      tbe__hwm_fail(TBE__MKIND_PM_SAMPLING, d, TBE__MS_FAILED,
                    "cuptiPmSamplingCounterDataImageInitialize", r);
      return -1;
    }
    if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
    /* Raw images make big frames: the rest waits in CUPTI's buffer for the
     * next tick rather than make a frame the spool refuses (64 MiB). */
    if (raw && !H.last_drain && o->batch->len > TBE__PM_BATCH_MAX) break;
  }
  item_flush(o, p, d);
  if (!had && p->samples) tbe__hwm_exit_hook(); /* CUPTI has decoded and evaluated now */
  return 0;
}

static void pm_put_status(tbe__hwm_out *o, uint32_t d) {
  pmdev *p = &H.dev[d];
  tbe__hwm_put_status(o, TBE__MKIND_PM_SAMPLING, d, TBE__MS_OK, p->samples, p->overflow,
                      p->stale, NULL);
  p->status_samples = p->samples;
  p->last_status = H.now;
}

/* ---- tick and stop ---- */

/* Stops sampling on d: a last drain, the final status, release. */
static void pm_finish(tbe__hwm_out *o, uint32_t d) {
  pmdev *p = &H.dev[d];
  CUpti_PmSampling_Stop_Params sp;
  memset(&sp, 0, sizeof sp);
  sp.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
  sp.pPmSamplingObject = p->obj;
  H.api->pm_stop(&sp);
  H.last_drain = 1;
  pm_drain(o, d);
  H.last_drain = 0;
  pm_put_status(o, d);
  if (!__atomic_load_n(&H.exiting, __ATOMIC_ACQUIRE)) {
    pm_release(p);
  } else {
    /* At exit (the hook): not disabled.  Disabling finalizes CUPTI's
     * profiler state, and the collector flushes the activity buffers
     * after this hook; CUPTI's own exit teardown takes the object.  The
     * host object goes (the host library alone); the config and counter
     * data images CUPTI was given stay with the object. */
    if (p->host) {
      tbe__ph_deinit q = {TBE__PSIZE(tbe__ph_deinit, pHostObject), NULL, p->host};
      H.api->host.deinitialize(&q);
    }
    p->host = NULL;
    free(p->avail);
    free(p->item);
    free(p->times);
    p->avail = p->item = NULL;
    p->times = NULL;
    tbe__hwm_keep(p->config);
    tbe__hwm_keep(p->data);
    p->config = p->data = NULL;
    p->obj = NULL;
  }
  __atomic_store_n(&p->state, PM_DONE, __ATOMIC_RELEASE);
}

double tbe__hwm_tick(tbe__hwm_out *o, int final) {
  if (!H.active) return 3600;
  int sampling = 0;
  if (H.cfg.pm_hz)
    for (uint32_t d = 0; d < TBE__MAXDEV; d++) {
      pmdev *p = &H.dev[d];
      if (atomic_load(&H.wanted[d])) enable_now(d); /* (returns at once once set up) */
      if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) != PM_RUNNING) continue;
      if (atomic_load(&H.stop_req[d])) {
        pm_finish(o, d);
        continue;
      }
      if (pm_drain(o, d) != 0) {
        pm_put_status(o, d);
        pm_release(p);
        __atomic_store_n(&p->state, PM_FAILED, __ATOMIC_RELEASE);
        continue;
      }
      sampling = 1;
      if (final || (p->samples != p->status_samples && H.now - p->last_status >= TBE__PM_STATUS_S))
        pm_put_status(o, d);
    }
  tbe__hwm_drain_fails(o);
  if (H.cfg.kernel_set) tbe__rp_emit(o, final);
  double next = sampling || H.cfg.pm_hz ? H.tick_s : TBE__PM_IDLE_S;
  H.now += next;
  return next;
}

void tbe__hwm_stop(tbe__hwm_out *o) {
  if (!H.active) return;
  const tbe__cupti_metrics_api *m = H.api;
  /* No callback from now on: the range profiler's figures are final. */
  if (H.subscribed) m->unsubscribe(H.sub);
  H.subscribed = 0;
  tbe__rpc_stop();
  int exiting = __atomic_load_n(&H.exiting, __ATOMIC_ACQUIRE);
  for (uint32_t d = 0; d < TBE__MAXDEV; d++) {
    pmdev *p = &H.dev[d];
    if (p->state != PM_RUNNING) continue;
    if (!exiting) {
      pm_finish(o, d);
    } else {
      /* The exit hook's stop did not come through (the background thread
       * was gone or stuck): CUPTI's state may be gone too, so no call into
       * it, and its objects and our images are left to the exit. */
      pm_put_status(o, d);
      __atomic_store_n(&p->state, PM_DONE, __ATOMIC_RELEASE);
    }
  }
  if (H.cfg.kernel_set) tbe__rp_stop(o);
  tbe__hwm_drain_fails(o);
  H.active = 0;
  tbe__hwm_reset(NULL);
}
